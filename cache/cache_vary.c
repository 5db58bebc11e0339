/*
 * cache/cache_vary.c: secondary keys for Vary (RFC 9111 §4.1).
 *
 * A stored variant keeps one byte string that names the request fields it
 * varies on and the values they had:
 *
 *     accept-encoding:gzip, br\n
 *     accept-language\n            <- the request had no Accept-Language
 *
 * Names are lower-cased, sorted and unique, so "Vary: Accept-Encoding, Cookie"
 * and "Vary: cookie" + "Vary: accept-encoding" give the same key. Values are
 * the request's lines joined with ", " (§4.1 allows normalising; list fields
 * from the header table are also re-joined element by element). Field values
 * never hold '\n' (the parser refuses CR and LF in them) and names are
 * tokens, so the encoding is unambiguous and self-describing: a lookup reads
 * the names back from the stored key and compares the request's values in
 * place, without allocating (it runs under the store's shard lock).
 *
 * "*" anywhere in Vary (any line, any list position) matches nothing; so does
 * a name that is not a token (no request can carry it, and it most likely
 * means a broken Vary), which we treat the same way: not stored.
 */
#include <stdlib.h>

#include "cache/cache_policy.h"

/* Bytes go either into a growing buffer (building a key) or are compared
 * against an expected string (matching one). */
struct sink {
    char *buf;
    size_t len, cap;
    const char *cmp; /* non-NULL: compare mode */
    size_t cmp_len;
    bool ok;
};

static void put(struct sink *s, const char *p, size_t n)
{
    if (!s->ok || n == 0)
        return;
    if (s->cmp) {
        if (s->len + n > s->cmp_len || memcmp(s->cmp + s->len, p, n) != 0)
            s->ok = false;
        s->len += n;
        return;
    }
    if (s->len + n + 1 > s->cap) {
        s->cap = CT_MAX(s->cap * 2, s->len + n + 1 + 64);
        s->buf = ct_xrealloc(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
}

/* NAME lower-cased; on the lookup path this is a plain compare loop. */
static void put_lower(struct sink *s, struct ct_str name)
{
    if (!s->ok)
        return;
    if (s->cmp) {
        if (s->len + name.len > s->cmp_len)
            s->ok = false;
        for (size_t i = 0; s->ok && i < name.len; i++)
            s->ok = ct_ascii_lower(name.p[i]) == s->cmp[s->len + i];
        s->len += name.len;
        return;
    }
    size_t at = s->len;
    put(s, name.p, name.len);
    for (size_t i = 0; i < name.len; i++)
        s->buf[at + i] = ct_ascii_lower(s->buf[at + i]);
}

/* The request's next line of field NAME after AFTER: by ID when the name
 * is in the header table (an integer compare per field, and none when the
 * message's id set says it has none), else by a case-insensitive name. */
static const struct ct_http_field *next_line(const struct ct_http_msg *req, enum ct_hdr_id id,
                                             struct ct_str name, const struct ct_http_field *after)
{
    return id != CT_HDR_UNKNOWN ? ct_http_msg_find(req, id, after)
                                : ct_http_msg_find_name(req, name, after);
}

/* NAME's id in the header table. Accept-Encoding, which every variant
 * cachet compresses varies on, by one compare of the lower-case name a
 * stored key holds, before the table's hashed look-up. */
static enum ct_hdr_id name_id(struct ct_str name)
{
    if (ct_str_eq(name, ct_hdr_lname(CT_HDR_ACCEPT_ENCODING)))
        return CT_HDR_ACCEPT_ENCODING;
    return ct_hdr_lookup(name);
}

/* ":value" (or nothing) then "\n" for the request's lines of field NAME.
 * Every hit on a variant runs this (under the shard lock) for each Vary
 * name, so the common case is kept short: a named field, one line, one
 * element. */
static void put_values(struct sink *s, struct ct_str name, const struct ct_http_msg *req)
{
    enum ct_hdr_id id = name_id(name);
    const struct ct_http_field *f = next_line(req, id, name, NULL);
    if (f) {
        bool first = true;
        put(s, ":", 1);
        for (; f; f = next_line(req, id, name, f)) {
            struct ct_str rest = ct_str_trim_ows(f->value), e;
            bool list = ct_hdr_flags(f->id) & CT_HDRF_LIST;
            if (list && rest.len == 0)
                continue; /* an empty list line adds no element */
            /* one element, or not a list: the trimmed value as it is (what
             * ct_http_list_next would yield without a comma) */
            if (!list || memchr(rest.p, ',', rest.len) == NULL) {
                if (!first)
                    put(s, ", ", 2);
                put(s, rest.p, rest.len);
                first = false;
                continue;
            }
            while (ct_http_list_next(&rest, &e)) {
                if (!first)
                    put(s, ", ", 2);
                put(s, e.p, e.len);
                first = false;
            }
        }
    }
    put(s, "\n", 1);
}

/* "name:value\n" or "name\n" for the request's lines of field NAME. */
static void put_field(struct sink *s, struct ct_str name, const struct ct_http_msg *req)
{
    put_lower(s, name);
    put_values(s, name, req);
}

bool ct_cache_vary_is_star(const struct ct_http_msg *resp)
{
    for (const struct ct_http_field *f = NULL; (f = ct_http_msg_find(resp, CT_HDR_VARY, f));) {
        struct ct_str rest = f->value, e;
        while (ct_http_list_next(&rest, &e))
            if (ct_str_eq(e, CT_STR("*")) || !ct_http_is_token(e)) /* "*" is a tchar */
                return true;
    }
    return false;
}

static int cmp_name(const void *a, const void *b)
{
    const struct ct_str *x = a, *y = b;
    for (size_t i = 0; i < x->len && i < y->len; i++) {
        char cx = ct_ascii_lower(x->p[i]), cy = ct_ascii_lower(y->p[i]);
        if (cx != cy)
            return (unsigned char)cx < (unsigned char)cy ? -1 : 1;
    }
    return x->len < y->len ? -1 : x->len > y->len;
}

/* The sorted unique names of RESP's Vary lines into *NAMES (allocated). */
static size_t vary_names(const struct ct_http_msg *resp, struct ct_str **names)
{
    size_t n = 0, cap = 0;
    *names = NULL;
    for (const struct ct_http_field *f = NULL; (f = ct_http_msg_find(resp, CT_HDR_VARY, f));) {
        struct ct_str rest = f->value, e;
        while (ct_http_list_next(&rest, &e)) {
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                *names = ct_xrealloc(*names, cap * sizeof(**names));
            }
            (*names)[n++] = e;
        }
    }
    if (n > 1)
        qsort(*names, n, sizeof(**names), cmp_name);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || !ct_str_eq_ci((*names)[u - 1], (*names)[i]))
            (*names)[u++] = (*names)[i];
    return u;
}

int ct_cache_vary_key(const struct ct_http_msg *resp, const struct ct_http_msg *req, char **key,
                      size_t *len)
{
    *key = NULL;
    *len = 0;
    if (ct_cache_vary_is_star(resp))
        return CT_EPROTO;
    struct ct_str *names;
    size_t n = vary_names(resp, &names);
    struct sink s = {.ok = true};
    for (size_t i = 0; i < n; i++)
        put_field(&s, names[i], req);
    free(names);
    *key = s.buf;
    *len = s.len;
    return CT_OK;
}

/* The common line of a key, "name:value": the request has one line of
 * NAME whose trimmed value is one element (not empty, no comma in a list
 * field), which put_values() would write as it is. 1: it is WANT; 0: it is
 * not; -1: not that case, the general comparison decides. */
static int one_value_matches(struct ct_str name, struct ct_str want, const struct ct_http_msg *req)
{
    enum ct_hdr_id id = name_id(name);
    const struct ct_http_field *f = next_line(req, id, name, NULL);
    if (f == NULL || next_line(req, id, name, f) != NULL)
        return -1;
    struct ct_str v = ct_str_trim_ows(f->value);
    if (v.len == 0 || ((ct_hdr_flags(f->id) & CT_HDRF_LIST) && memchr(v.p, ',', v.len)))
        return -1;
    return ct_str_eq(v, want);
}

bool ct_cache_vary_match(struct ct_str key, const struct ct_http_msg *req)
{
    if (key.len == 0)
        return true; /* no Vary; and the key of none is {NULL, 0}: NULL + 0 is UB */
    const char *p = key.p, *end = key.p + key.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return false; /* not a key we made */
        const char *colon = memchr(p, ':', (size_t)(nl - p));
        struct ct_str name = ct_str_make(p, (size_t)((colon ? colon : nl) - p));
        p = nl + 1;
        int one = colon ? one_value_matches(
                              name, ct_str_make(colon + 1, (size_t)(nl - colon - 1)), req)
                        : -1;
        if (one == 0)
            return false;
        if (one == 1)
            continue;
        /* the name is the key's own bytes (lower-cased when it was made):
         * only the request's values need comparing */
        struct sink s = {.cmp = name.p, .cmp_len = (size_t)(p - name.p), .len = name.len,
                         .ok = true};
        put_values(&s, name, req);
        if (!s.ok || s.len != s.cmp_len)
            return false;
    }
    return true;
}

bool ct_cache_vary_match_cb(struct ct_str stored, struct ct_str req_bytes, void *arg)
{
    (void)req_bytes;
    return ct_cache_vary_match(stored, (const struct ct_http_msg *)arg);
}
