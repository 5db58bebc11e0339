/*
 * proxy/core/stored.c: the stored head as the request core wrote it
 * (proxy/core/stored.h), and the small pure helpers every part of the core
 * and the protocols share: decimal numbers, one byte range, an encoder at
 * its configured level, the thread's CPU clock. A leaf: it calls nothing
 * else of proxy/core.
 */
#include "proxy/core/stored.h"

#include <string.h>
#include <time.h>

#include "cache/cache.h"
#include "conf/conf.h"
#include "http/coding/coding.h"
#include "http/http.h"
#include "http/http_ae.h"
#include "http/http_hdrindex.h"

bool ct_stored_blk_get(const struct ct_obj *obj, struct ct_stored_blk *blk, struct ct_str *wire)
{
    struct ct_str h = ct_obj_head(obj);
    if (h.len < sizeof(*blk))
        return false;
    memcpy(blk, h.p, sizeof(*blk)); /* the block is not aligned for the struct */
    CT_ASSERT((size_t)blk->wire_len + blk->index_len == h.len - sizeof(*blk));
    *wire = ct_str_make(h.p + sizeof(*blk), blk->wire_len);
    /* A soft purge (cache.h) ended its freshness at ct_obj_expires(): every
     * decision made from the stored freshness sees that. The store computed
     * its expiry from these very fields, so only a purge makes them differ. */
    struct ct_cache_fresh *f = &blk->fresh;
    ct_time_t purged = ct_obj_expires(obj);
    if (CT_UNLIKELY(purged < f->response_time - f->initial_age + (double)f->lifetime))
        f->lifetime = (int64_t)CT_MAX(0.0, purged - f->response_time + f->initial_age); /* floor */
    return true;
}

bool ct_stored_index(const struct ct_stored_blk *blk, struct ct_str wire, struct ct_hdrindex *hx)
{
    /* The index lives right after the block, in the same stored head. */
    return blk->index_len != 0 &&
           ct_hdrindex_open(hx, wire.p + wire.len, blk->index_len, wire) == CT_OK;
}

bool ct_stored_may_outgrow(const struct ct_stored_blk *blk)
{
    return blk->length == UINT64_MAX && !(blk->flags & CT_STORED_BOUNDED);
}

uint32_t ct_stored_flags_of(const struct ct_http_msg *stored, bool weakened)
{
    enum ct_coding c = ct_coding_of_msg(stored);
    _Static_assert(CT_CODING__COUNT <= CT_STORED_CODING_MASK + 1, "codings fit the mask");
    if (c <= CT_CODING_IDENTITY)
        return 0;
    const struct ct_http_field *et = ct_http_msg_find(stored, CT_HDR_ETAG, NULL);
    bool weak = et && et->value.len > 2 && memcmp(et->value.p, "W/", 2) == 0;
    return (uint32_t)c | (weakened && weak ? CT_STORED_WEAKENED : 0);
}

/* Two digits per division (three numbers per hit: Age, ttl, length). */
char *ct_put_i64(char *p, int64_t v)
{
    static const char pairs[201] = "000102030405060708091011121314151617181920212223242526272829"
                                   "303132333435363738394041424344454647484950515253545556575859"
                                   "606162636465666768697071727374757677787980818283848586878889"
                                   "90919293949596979899";
    char tmp[24];
    char *e = tmp + sizeof(tmp), *q = e;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--q = pairs[d + 1];
        *--q = pairs[d];
    }
    if (u >= 10) {
        *--q = pairs[u * 2 + 1];
        *--q = pairs[u * 2];
    } else {
        *--q = (char)('0' + u);
    }
    if (v < 0)
        *p++ = '-';
    memcpy(p, q, (size_t)(e - q));
    return p + (e - q);
}

/* One single-range "bytes=" spec against LEN bytes (RFC 9110 §14.1.2).
 * 0: no usable range (serve 200); 1: [*first, *last]; -1: unsatisfiable. */
int ct_range_parse(struct ct_str v, uint64_t len, uint64_t *first, uint64_t *last)
{
    static const struct ct_str unit = CT_STR("bytes=");
    if (v.len <= unit.len || !ct_str_eq_ci(ct_str_make(v.p, unit.len), unit))
        return 0;
    struct ct_str spec = ct_str_trim_ows(ct_str_make(v.p + unit.len, v.len - unit.len));
    const char *dash = memchr(spec.p, '-', spec.len);
    if (dash == NULL || memchr(spec.p, ',', spec.len))
        return 0; /* malformed, or several ranges: the whole thing (allowed) */
    struct ct_str a = ct_str_make(spec.p, (size_t)(dash - spec.p));
    struct ct_str b = ct_str_make(dash + 1, spec.len - a.len - 1);
    uint64_t x, y;
    if (a.len == 0) { /* suffix: the last N bytes */
        if (ct_str_to_u64(b, UINT64_MAX, &y) != CT_OK)
            return 0;
        if (y == 0 || len == 0)
            return -1;
        *first = len > y ? len - y : 0;
        *last = len - 1;
        return 1;
    }
    if (ct_str_to_u64(a, UINT64_MAX, &x) != CT_OK)
        return 0;
    if (b.len == 0)
        y = UINT64_MAX;
    else if (ct_str_to_u64(b, UINT64_MAX, &y) != CT_OK || y < x)
        return 0;
    if (x >= len)
        return -1;
    *first = x;
    *last = y >= len ? len - 1 : y;
    return 1;
}

struct ct_codec *ct_encoder_new(const struct ct_conf_compression *cz, enum ct_coding c,
                                uint64_t size_hint)
{
    int level = c == CT_CODING_GZIP ? (int)cz->gzip_level
                : c == CT_CODING_BR ? (int)cz->br_level
                                    : (int)cz->zstd_level;
    return ct_codec_new(c, CT_CODEC_ENCODE, level, size_hint);
}

uint64_t ct_thread_cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}
