/*
 * origin/origin_buf.c: the growable output buffer (response heads, JSON
 * bodies) and the deterministic byte pattern every generated body is cut
 * from. A connection keeps its buffers between requests, so after the first
 * few requests nothing here allocates.
 */
#include <stdlib.h>

#include "origin/origin_int.h"

void ct_obuf_reserve(struct ct_obuf *b, size_t extra)
{
    if (CT_LIKELY(b->cap - b->len >= extra))
        return;
    size_t cap = b->cap ? b->cap : 512;
    while (cap - b->len < extra)
        cap *= 2;
    b->p = ct_xrealloc(b->p, cap);
    b->cap = cap;
}

void ct_obuf_free(struct ct_obuf *b)
{
    CT_FREE(&b->p);
    b->len = b->cap = 0;
}

void ct_obuf_put(struct ct_obuf *b, const void *p, size_t n)
{
    ct_obuf_reserve(b, n);
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

void ct_obuf_put_str(struct ct_obuf *b, struct ct_str s)
{
    ct_obuf_put(b, s.p, s.len);
}

void ct_obuf_put_u64(struct ct_obuf *b, uint64_t v)
{
    char tmp[20];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    ct_obuf_put(b, tmp + i, sizeof(tmp) - i);
}

void ct_obuf_put_json(struct ct_obuf *b, struct ct_str s)
{
    static const char hex[] = "0123456789abcdef";
    /* Worst case every byte becomes \u00XX. */
    ct_obuf_reserve(b, s.len * 6 + 2);
    char *o = b->p + b->len;
    *o++ = '"';
    for (size_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = (char)ch;
        } else if (ch == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else if (ch == '\r') {
            *o++ = '\\';
            *o++ = 'r';
        } else if (ch == '\t') {
            *o++ = '\\';
            *o++ = 't';
        } else if (ch < 0x20 || ch >= 0x7f) {
            memcpy(o, "\\u00", 4);
            o[4] = hex[ch >> 4];
            o[5] = hex[ch & 15];
            o += 6;
        } else {
            *o++ = (char)ch;
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
}

/* ---- the pattern ----------------------------------------------------- */

static char pattern[CT_OPATTERN_SPAN + CT_OPATTERN_PERIOD];

void ct_opattern_init(void)
{
    static const char line[] = CT_OPATTERN_LINE;
    _Static_assert(sizeof(line) - 1 == CT_OPATTERN_PERIOD, "pattern period");
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = line[i % CT_OPATTERN_PERIOD];
}

const char *ct_opattern_at(uint64_t off)
{
    return pattern + off % CT_OPATTERN_PERIOD;
}
