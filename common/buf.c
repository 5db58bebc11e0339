/*
 * common/buf.c: the growable byte buffer and the JSON string escaper (see
 * buf.h). The buffer doubles from 256 bytes, so a rendering of n bytes costs
 * O(log n) reallocations; the escaper reserves the worst case once and then
 * writes without checks.
 */
#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void ct_buf_reserve(struct ct_buf *b, size_t extra)
{
    /* +1: the NUL after the contents is always room we keep. */
    if (CT_LIKELY(b->cap - b->len > extra))
        return;
    CT_ASSERT(extra < SIZE_MAX / 2 - b->len);
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len <= extra)
        cap *= 2;
    b->p = ct_xrealloc(b->p, cap);
    b->cap = cap;
}

void ct_buf_free(struct ct_buf *b)
{
    CT_FREE(&b->p);
    b->len = b->cap = 0;
}

void ct_buf_put(struct ct_buf *b, const void *p, size_t n)
{
    ct_buf_reserve(b, n);
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void ct_buf_put_byte(struct ct_buf *b, char ch)
{
    ct_buf_reserve(b, 1);
    b->p[b->len++] = ch;
    b->p[b->len] = '\0';
}

void ct_buf_put_u64(struct ct_buf *b, uint64_t v)
{
    char tmp[20];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    ct_buf_put(b, tmp + i, sizeof(tmp) - i);
}

void ct_buf_printf(struct ct_buf *b, const char *fmt, ...)
{
    /* One pass when it fits (the buffer grows geometrically, so usually),
     * a second one after growing when it did not. */
    ct_buf_reserve(b, 64);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    CT_ASSERT(n >= 0);
    if ((size_t)n >= b->cap - b->len) {
        ct_buf_reserve(b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

/* ---- JSON ---------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at P (at most N bytes), 0 if invalid:
 * no overlong forms, no surrogates, nothing past U+10FFFF (RFC 3629 §4). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len;
    uint32_t cp;
    if (p[0] < 0xc2)
        return 0; /* continuation byte or overlong 2-byte lead */
    if (p[0] < 0xe0)
        len = 2, cp = p[0] & 0x1f;
    else if (p[0] < 0xf0)
        len = 3, cp = p[0] & 0x0f;
    else if (p[0] < 0xf5)
        len = 4, cp = p[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

void ct_buf_json_escape(struct ct_buf *b, struct ct_str s, enum ct_json_mode mode)
{
    static const char hex[] = "0123456789abcdef";
    CT_ASSERT(s.len < SIZE_MAX / 8);
    ct_buf_reserve(b, s.len * 6); /* worst case: every byte becomes \u00XX */
    const unsigned char *p = (const unsigned char *)s.p;
    char *o = b->p + b->len;
    for (size_t i = 0; i < s.len;) {
        unsigned char ch = p[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') {
            *o++ = (char)ch;
            i++;
            continue;
        }
        size_t k = ch >= 0x80 && mode == CT_JSON_UTF8 ? utf8_len(p + i, s.len - i) : 0;
        if (k) { /* at most 4 bytes in, 4 out: within the reservation */
            memcpy(o, p + i, k);
            o += k;
            i += k;
            continue;
        }
        *o++ = '\\';
        switch (ch) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        default:
            memcpy(o, "u00", 3);
            o[3] = hex[ch >> 4];
            o[4] = hex[ch & 15];
            o += 5;
        }
        i++;
    }
    b->len = (size_t)(o - b->p);
    b->p[b->len] = '\0';
}

void ct_buf_json_str(struct ct_buf *b, struct ct_str s, enum ct_json_mode mode)
{
    ct_buf_put_byte(b, '"');
    ct_buf_json_escape(b, s, mode);
    ct_buf_put_byte(b, '"');
}
