/*
 * tests/fuzz/fuzz_cache_store.h: a small store for the cache fuzz targets
 * (fuzz_cache_ban.c, fuzz_cache_policy.c): objects in, lookups that store
 * nothing, a field getter for bans, and the check that a store emptied by
 * purges and the reclaim gives back every byte it counted.
 *
 * Stored heads are HTTP/1 blocks, "HTTP/1.1 200 OK\r\nName: value\r\n...",
 * which fz_field reads back the way the proxy's getter reads its own.
 */
#ifndef CT_FUZZ_CACHE_STORE_H
#define CT_FUZZ_CACHE_STORE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cache/cache.h"
#include "tests/fuzz/fuzz_check.h"

/* A fixed clock: the seeds' Date fields are near it (Sat, 01 Jun 2024 12:00:00 GMT). */
#define FZ_T0 1717243200.0

struct fz_key {
    char buf[2 * 4096 + 64]; /* a host and a target from a 4 KiB input */
    struct ct_cache_key key;
};

static void fz_key(struct fz_key *k, struct ct_str host, struct ct_str target)
{
    struct ct_cache_key_opts o = {.query = CT_CACHE_QUERY_KEEP};
    struct ct_cache_key_in in = {CT_CACHE_MCLASS_GET, host, 80, target, CT_STR_NULL, CT_STR_NULL};
    FUZZ_CHECK(ct_cache_key_size(&in) <= sizeof(k->buf));
    FUZZ_CHECK(ct_cache_key_build(&o, &in, k->buf, sizeof(k->buf), &k->key) == CT_OK);
}

/* The value of the first line NAME of OBJ's head (ct_cache_field_fn). */
static bool fz_field(const struct ct_obj *obj, struct ct_str name, struct ct_str *value)
{
    struct ct_str h = ct_obj_head(obj);
    const char *end = h.p + h.len, *p = memmem(h.p, h.len, "\r\n", 2);
    for (; p && (p += 2) < end; p = memmem(p, (size_t)(end - p), "\r\n", 2)) {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        if (colon == NULL)
            return false;
        struct ct_str line_name = ct_str_make(p, (size_t)(colon - p));
        p = memmem(colon, (size_t)(end - colon), "\r\n", 2);
        if (p == NULL)
            return false;
        if (ct_str_eq_ci(line_name, name)) {
            *value = ct_str_trim_ows(ct_str_make(colon + 1, (size_t)(p - colon - 1)));
            return true;
        }
    }
    return false;
}

static struct ct_cache *fz_cache_new(size_t max_bytes, unsigned shards, unsigned max_bans,
                                     size_t *empty_bytes)
{
    struct ct_cache_config cfg = {.max_bytes = max_bytes,
                                  .max_object_size = CT_MIN(max_bytes, (size_t)1 << 16),
                                  .shards = shards,
                                  .field = fz_field,
                                  .max_bans = max_bans};
    struct ct_cache *c = ct_cache_new(&cfg);
    FUZZ_CHECK(c != NULL);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    *empty_bytes = st.bytes;
    return c;
}

/* Look KEY up at NOW (VARY and MATCH as in ct_cache_lookup_req); a miss's
 * fetch is abandoned and every reference dropped. With OBJP, a HIT's or a
 * STALE's object is handed over instead (the caller releases it). */
static enum ct_cache_lookup fz_look(struct ct_cache *c, const struct ct_cache_key *key,
                                    struct ct_str vary, ct_cache_vary_match_fn *match, void *arg,
                                    ct_time_t now, struct ct_obj **objp)
{
    struct ct_cache_lookup_req req = {key, vary, match, arg, false, false, false};
    struct ct_cache_lookup_res res;
    enum ct_cache_lookup r = ct_cache_lookup(c, &req, now, &res);
    FUZZ_CHECK(r >= CT_CACHE_MISS && r <= CT_CACHE_PASS);
    FUZZ_CHECK((r == CT_CACHE_HIT || r == CT_CACHE_STALE) == (res.obj != NULL));
    if (res.fetch)
        ct_obj_abandon(res.fetch, now, 0);
    if (objp) {
        *objp = res.obj;
        res.obj = NULL;
    }
    ct_cache_lookup_res_release(&res);
    return r;
}

/* Store META with BODY under KEY at NOW, if the store takes it: true when
 * it is complete (and visible) now. */
static bool fz_store(struct ct_cache *c, const struct ct_cache_key *key,
                     const struct ct_obj_meta *meta, struct ct_str body, ct_time_t now)
{
    struct ct_cache_lookup_req req = {key, meta->vary, NULL, NULL, false, false, false};
    struct ct_cache_lookup_res res;
    ct_cache_lookup(c, &req, now, &res);
    bool done = false;
    if (res.fetch && ct_obj_set_head(res.fetch, meta) == CT_OK) {
        if (ct_obj_append(res.fetch, body.p, body.len) == CT_OK) {
            ct_obj_complete(res.fetch, now);
            done = true;
        } else {
            ct_obj_fail(res.fetch);
        }
    } else if (res.fetch) {
        ct_obj_abandon(res.fetch, now, 0);
    }
    ct_cache_lookup_res_release(&res);
    return done;
}

/* Purge KEYS[0..N) (everything the target stored), reclaim, and check the
 * store is back to EMPTY_BYTES with no object, tag or ban left; free it. */
static void fz_cache_drain(struct ct_cache **cp, struct fz_key *keys, size_t n, size_t empty_bytes)
{
    struct ct_cache *c = *cp;
    for (size_t i = 0; i < n; i++)
        ct_cache_purge(c, &keys[i].key);
    while (ct_cache_reclaim(c, CT_CACHE_RECLAIM_RUN) > 0)
        ;
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    FUZZ_CHECK(st.objects == 0 && st.keys == 0);
    FUZZ_CHECK(st.tags == 0 && st.tag_links == 0 && st.tag_bytes == 0);
    FUZZ_CHECK(st.reclaim_pending == 0);
    FUZZ_CHECK(st.bytes == empty_bytes + st.ban_bytes);
    FUZZ_CHECK(st.bytes <= st.max_bytes);
    ct_cache_free(cp);
}

#endif /* CT_FUZZ_CACHE_STORE_H */
