/*
 * cache/cache_key.c: cache keys and their hash.
 *
 * A key is bytes, compared exactly, laid out so that a purge prefix is a
 * prefix of the bytes:
 *
 *     <mclass> NUL <host lower-cased, default port dropped> NUL <target> [NUL 0x01 <header value>]
 *
 * The NULs cannot occur in a valid host or target (http/ rejects them), so
 * no two inputs give the same bytes. The optional header part is "NUL 0x01
 * value" when the request has the header and nothing when it has not, so
 * "absent" and "empty" are different keys.
 *
 * Hash: XXH64 (Yann Collet's xxHash, 64-bit variant), written from the
 * public specification: fast on short keys (8 bytes per step), good
 * avalanche, so the top bits pick the shard and the low bits the bucket.
 * Pure: no locks, no allocation.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cache/cache_int.h"

/* ---- XXH64 ---------------------------------------------------------------- */

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* Unaligned little-endian loads; memcpy compiles to one mov on x86/arm64. */
static inline uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static inline uint64_t xround(uint64_t acc, uint64_t input)
{
    acc += input * P2;
    acc = rotl64(acc, 31);
    return acc * P1;
}

static inline uint64_t xmerge(uint64_t acc, uint64_t val)
{
    acc ^= xround(0, val);
    return acc * P1 + P4;
}

static uint64_t xxh64_long(const unsigned char **pp, const unsigned char *end, uint64_t seed)
{
    const unsigned char *p = *pp;
    uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;

    while (end - p >= 32) {
        v1 = xround(v1, rd64(p));
        v2 = xround(v2, rd64(p + 8));
        v3 = xround(v3, rd64(p + 16));
        v4 = xround(v4, rd64(p + 24));
        p += 32;
    }
    uint64_t h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
    h = xmerge(h, v1);
    h = xmerge(h, v2);
    h = xmerge(h, v3);
    h = xmerge(h, v4);
    *pp = p;
    return h;
}

uint64_t ct_cache_hash64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data, *end = p + len;
    uint64_t h = len >= 32 ? xxh64_long(&p, end, seed) : seed + P5;

    h += (uint64_t)len;
    while (end - p >= 8) {
        h ^= xround(0, rd64(p));
        h = rotl64(h, 27) * P1 + P4;
        p += 8;
    }
    if (end - p >= 4) {
        h ^= (uint64_t)rd32(p) * P1;
        h = rotl64(h, 23) * P2 + P3;
        p += 4;
    }
    while (p < end) {
        h ^= (uint64_t)(*p) * P5;
        h = rotl64(h, 11) * P1;
        p++;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

/* ---- building keys -------------------------------------------------------- */

/* A small bounded writer: every put checks room, so build never overruns. */
struct kbuf {
    char *p;
    size_t len, cap;
    bool overflow;
};

static void put(struct kbuf *b, const char *s, size_t n)
{
    if (b->overflow || n > b->cap - b->len) {
        b->overflow = true;
        return;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void put_c(struct kbuf *b, char c)
{
    put(b, &c, 1);
}

/* Host lower-cased (RFC 3986 §3.2.2: case-insensitive), ":DEFAULT_PORT" dropped
 * (§6.2.3: an empty or default port is equivalent to none). */
/* ":PORT" into OUT (room for ":" and 10 digits); returns its length. By
 * hand: snprintf cost ~100 ns, a third of a whole 1 M-key lookup (bench_cache). */
static size_t fmt_port(char out[12], unsigned port)
{
    char digits[10];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + port % 10);
        port /= 10;
    } while (port && n < sizeof(digits));
    out[0] = ':';
    for (size_t i = 0; i < n; i++)
        out[1 + i] = digits[n - 1 - i];
    return n + 1;
}

/* ASCII lower-case of N bytes, a word at a time: in each byte, bit 5 is
 * set where the byte is 'A'..'Z' and only there (bytes >= 0x80 and all
 * others are kept). Per byte of the low 7 bits h: h + (0x80 - 'A') has its
 * high bit set iff h >= 'A', h + (0x7f - 'Z') iff h > 'Z'; neither sum
 * carries out of its byte. Twice faster than the byte loop on a host name
 * (callgrind, bench_cache), which the proxy does on every request. */
static inline void lower_word(char *dst, const char *src)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t x;
    memcpy(&x, src, 8);
    uint64_t h = x & ~highs;
    uint64_t upper = ((h + ones * (0x80 - 'A')) ^ (h + ones * (0x7f - 'Z'))) & ~x & highs;
    x |= upper >> 2;
    memcpy(dst, &x, 8);
}

static void lower_copy(char *dst, const char *src, size_t n)
{
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            dst[i] = ct_ascii_lower(src[i]);
        return;
    }
    for (size_t i = 0; n - i >= 8; i += 8)
        lower_word(dst + i, src + i);
    if (n % 8)
        lower_word(dst + n - 8, src + n - 8); /* the tail as one overlapping word */
}

static void put_host(struct kbuf *b, struct ct_str host, unsigned default_port)
{
    /* A port can only be there if the host ends in a digit or ':' (a name
     * or an IPv6 literal's ']' cannot): most requests skip the formatting. */
    char last = host.len ? host.p[host.len - 1] : 'x';
    if (default_port && (last == ':' || (last >= '0' && last <= '9'))) {
        char port[12];
        size_t n = fmt_port(port, default_port);
        if (host.len > n && memcmp(host.p + host.len - n, port, n) == 0)
            host.len -= n;
        else if (host.len > 1 && host.p[host.len - 1] == ':')
            host.len--;
    }
    if (b->overflow || host.len > b->cap - b->len) {
        b->overflow = true;
        return;
    }
    lower_copy(b->p + b->len, host.p, host.len);
    b->len += host.len;
}

static int cmp_param(const void *a, const void *b)
{
    const struct ct_str *x = a, *y = b;
    size_t n = CT_MIN(x->len, y->len);
    int c = n ? memcmp(x->p, y->p, n) : 0;
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* Sort '&'-separated parameters bytewise. Empty parameters ("a&&b") are
 * dropped: they carry nothing. More than CT_CACHE_KEY_MAX_SORT: kept as is. */
static void put_query_sorted(struct kbuf *b, struct ct_str q)
{
    struct ct_str params[CT_CACHE_KEY_MAX_SORT];
    size_t n = 0;
    const char *p = q.p, *end = q.p + q.len;

    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        if (stop > p) {
            if (n == CT_ARRAY_LEN(params)) {
                put(b, q.p, q.len);
                return;
            }
            params[n++] = ct_str_make(p, (size_t)(stop - p));
        }
        p = amp ? amp + 1 : end;
    }
    qsort(params, n, sizeof(params[0]), cmp_param);
    for (size_t i = 0; i < n; i++) {
        if (i)
            put_c(b, '&');
        put(b, params[i].p, params[i].len);
    }
}

static void put_target(struct kbuf *b, enum ct_cache_query mode, struct ct_str target)
{
    const char *qm = target.len ? memchr(target.p, '?', target.len) : NULL;
    if (!qm || mode == CT_CACHE_QUERY_KEEP) {
        put(b, target.p, target.len);
        return;
    }
    size_t path_len = (size_t)(qm - target.p);
    put(b, target.p, path_len);
    if (mode == CT_CACHE_QUERY_DROP)
        return;
    struct ct_str q = ct_str_make(qm + 1, target.len - path_len - 1);
    if (q.len == 0)
        return; /* "/a?" and "/a" are the same resource once sorted */
    put_c(b, '?');
    put_query_sorted(b, q);
}

size_t ct_cache_key_size(const struct ct_cache_key_in *in)
{
    return 2 + in->host.len + 1 + in->target.len + 2 + in->header_value.len + 2 +
           in->cookie_value.len;
}

int ct_cache_key_build(const struct ct_cache_key_opts *opts, const struct ct_cache_key_in *in,
                       char *buf, size_t cap, struct ct_cache_key *key)
{
    struct kbuf b = {buf, 0, cap, false};

    put_c(&b, (char)in->mclass);
    put_c(&b, '\0');
    put_host(&b, in->host, in->default_port);
    put_c(&b, '\0');
    put_target(&b, opts->query, in->target);
    if (opts->header_name.len && in->header_value.p) {
        put_c(&b, '\0');
        put_c(&b, '\x01');
        put(&b, in->header_value.p, in->header_value.len);
    }
    if (opts->cookie_name.len && in->cookie_value.p) {
        put_c(&b, '\0');
        put_c(&b, '\x02');
        put(&b, in->cookie_value.p, in->cookie_value.len);
    }
    if (b.overflow)
        return CT_ELIMIT;
    ct_cache_key_from_bytes(ct_str_make(buf, b.len), key);
    return CT_OK;
}

int ct_cache_key_variants_prefix(const struct ct_cache_key *base, char *buf, size_t cap,
                                 struct ct_str *prefix)
{
    if (cap < base->bytes.len + 1)
        return CT_ELIMIT;
    memmove(buf, base->bytes.p, base->bytes.len); /* BUF may hold BASE already */
    /* what ct_cache_key_build puts before a header's or a cookie's value; a
     * target holds no NUL, so nothing but BASE's variants starts so */
    buf[base->bytes.len] = '\0';
    *prefix = ct_str_make(buf, base->bytes.len + 1);
    return CT_OK;
}

int ct_cache_key_prefix(struct ct_str host, unsigned default_port, struct ct_str path_prefix,
                        char *buf, size_t cap, struct ct_str *prefix)
{
    struct kbuf b = {buf, 0, cap, false};

    put_c(&b, (char)CT_CACHE_MCLASS_GET);
    put_c(&b, '\0');
    put_host(&b, host, default_port);
    put_c(&b, '\0');
    put(&b, path_prefix.p, path_prefix.len);
    if (b.overflow)
        return CT_ELIMIT;
    *prefix = ct_str_make(buf, b.len);
    return CT_OK;
}

void ct_cache_key_from_bytes(struct ct_str bytes, struct ct_cache_key *key)
{
    key->bytes = bytes;
    key->hash = ct_cache_hash64(bytes.p, bytes.len, 0);
}

void ct_cache_key_parts(const char *key, size_t len, struct ct_str *host, struct ct_str *target)
{
    /* <mclass> NUL <host> NUL <target> [NUL 0x01 <header value>] [NUL 0x02 <cookie value>] */
    const char *end = key + len, *h = len >= 2 ? key + 2 : end;
    const char *hn = memchr(h, '\0', (size_t)(end - h));
    if (hn == NULL) {
        *host = ct_str_make(h, (size_t)(end - h));
        *target = ct_str_make(end, 0);
        return;
    }
    *host = ct_str_make(h, (size_t)(hn - h));
    const char *t = hn + 1, *tn = memchr(t, '\0', (size_t)(end - t));
    *target = ct_str_make(t, (size_t)((tn ? tn : end) - t));
}
