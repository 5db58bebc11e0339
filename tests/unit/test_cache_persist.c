/*
 * tests/unit/test_cache_persist.c: snapshots of the store (issue 44,
 * cache/cache_persist.c) through cache/cache.h: a round trip keeps heads,
 * validators, variants, tags, bodies (a memfd one too), soft-purge state and
 * age (which grows by the time on disk); pending bans are applied before
 * writing; expired objects are dropped; a smaller store keeps the newest;
 * every flipped byte and every truncation is refused without a crash, per
 * record where the header holds; foreign headers are refused whole.
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/unit/test_cache_helpers.h"

struct mem {
    unsigned char *p;
    size_t len, cap;
    size_t fail_after; /* 0: never; else CT_EIO once len would pass it */
};

static int mem_write(void *arg, const void *p, size_t n)
{
    struct mem *m = arg;
    if (m->fail_after && m->len + n > m->fail_after)
        return CT_EIO;
    if (m->len + n > m->cap) {
        m->cap = (m->len + n) * 2;
        m->p = realloc(m->p, m->cap);
    }
    memcpy(m->p + m->len, p, n);
    m->len += n;
    return CT_OK;
}

static struct ct_cache_persist_counts save(struct ct_cache *c, ct_time_t now, struct mem *m)
{
    struct ct_cache_persist_counts n;
    CU_ASSERT_EQUAL(ct_cache_persist_save(c, now, "test 1.0", mem_write, m, &n), CT_OK);
    CU_ASSERT_EQUAL(n.file_bytes, m->len);
    return n;
}

static struct ct_cache_persist_report load(struct ct_cache *c, const struct mem *m, ct_time_t now)
{
    struct ct_cache_persist_report rep;
    ct_cache_persist_load(c, m->p, m->len, now, &rep);
    return rep;
}

static void store_full(struct ct_cache *c, const char *target, const char *vary, const char *body,
                       size_t body_len, double ttl, double keep, const char *tag, ct_time_t now)
{
    struct tkey k;
    mk_key(&k, "example.com", target);
    struct ct_cache_lookup_res res;
    CU_ASSERT_EQUAL_FATAL(lookup_v(c, &k, vary, now, &res), CT_CACHE_MISS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res.fetch);
    struct ct_str t = ct_str_c(tag ? tag : "");
    struct ct_obj_meta m = {
        .status = 200,
        .head = CT_STR("HTTP/1.1 200 OK\r\nX-Which: stored\r\n"),
        .etag = CT_STR("\"e1\""),
        .last_modified = CT_STR("Sun, 06 Nov 1994 08:49:37 GMT"),
        .date = CT_STR("Mon, 07 Nov 1994 08:49:37 GMT"),
        .vary = ct_str_c(vary),
        .response_time = now,
        .initial_age = 5,
        .ttl = ttl,
        .keep = keep,
        .body_hint = body_len,
        .tags = tag ? &t : NULL,
        .ntags = tag ? 1 : 0,
    };
    CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(res.fetch, &m), CT_OK);
    CU_ASSERT_EQUAL_FATAL(ct_obj_append(res.fetch, body, body_len), CT_OK);
    ct_obj_set_fetch_us(res.fetch, 1000 + body_len); /* a fetch cost per object */
    ct_obj_complete(res.fetch, now);
    ct_cache_lookup_res_release(&res);
}

static bool body_eq(const struct ct_obj *obj, const char *want, size_t len)
{
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str chunk;
    size_t n = 0;
    while (ct_obj_body_next(obj, &pos, 0, &chunk) == CT_OBJ_BODY_DATA) {
        if (n + chunk.len > len || memcmp(want + n, chunk.p, chunk.len) != 0)
            return false;
        n += chunk.len;
    }
    return n == len;
}

/* Look TARGET (variant VARY) up without storing: the kind, and the object. */
static enum ct_cache_lookup look(struct ct_cache *c, const char *target, const char *vary,
                                 ct_time_t now, struct ct_obj **obj)
{
    struct tkey k;
    mk_key(&k, "example.com", target);
    struct ct_cache_lookup_res res;
    struct ct_cache_lookup_req req = {&k.key, ct_str_c(vary), NULL, NULL, true, false, false};
    enum ct_cache_lookup r = ct_cache_lookup(c, &req, now, &res);
    *obj = res.obj;
    res.obj = NULL;
    ct_cache_lookup_res_release(&res);
    return r;
}

static char *big_body(size_t n)
{
    char *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        b[i] = (char)('a' + (i * 7 + i / 13) % 26);
    return b;
}

/* The snapshot of a small store used by several tests. */
static struct ct_cache *small_store(struct mem *m)
{
    struct ct_cache *c = mk_cache(16 << 20, 1 << 20, 4);
    store_full(c, "/a", "", "alpha", 5, 60, 0, "t1", T0);
    store_full(c, "/v", "gzip", "zipped", 6, 60, 0, NULL, T0);
    store_full(c, "/v", "br", "brotli", 6, 60, 0, NULL, T0);
    store_full(c, "/stale", "", "old", 3, 10, 3600, "t1", T0);
    save(c, T0 + 1, m);
    return c;
}

static void test_round_trip(void)
{
    struct ct_cache *c = mk_cache(16 << 20, 1 << 20, 4);
    size_t big_len = 200 * 1024; /* a memfd body (>= 64 KiB) */
    char *big = big_body(big_len);
    store_full(c, "/a", "", "alpha", 5, 60, 0, "t1", T0);
    store_full(c, "/v", "gzip", "zipped", 6, 60, 0, "t2", T0);
    store_full(c, "/v", "br", "brotli", 6, 60, 0, NULL, T0);
    store_full(c, "/stale", "", "old", 3, 10, 3600, "t1", T0); /* stale at T0 + 5 */
    store_full(c, "/big", "", big, big_len, 60, 0, NULL, T0);
    store_full(c, "/soft", "", "soft", 4, 60, 3600, NULL, T0);
    struct tkey k;
    mk_key(&k, "example.com", "/soft");
    CU_ASSERT_EQUAL(ct_cache_purge_key_mode(c, &k.key, CT_CACHE_PURGE_SOFT, T0 + 1), 1);
    struct mem m = {0};
    struct ct_cache_persist_counts n = save(c, T0 + 2, &m);
    CU_ASSERT_EQUAL(n.objects, 6);
    CU_ASSERT_EQUAL(n.body_bytes, 5 + 6 + 6 + 3 + big_len + 4);
    ct_cache_free(&c);

    /* 28 s on disk */
    struct ct_cache *d = mk_cache(16 << 20, 1 << 20, 8);
    struct ct_cache_persist_report rep = load(d, &m, T0 + 30);
    CU_ASSERT_FALSE(rep.header_refused);
    CU_ASSERT_EQUAL(rep.records, 6);
    CU_ASSERT_EQUAL(rep.fates[CT_CACHE_PERSIST_LOADED], 6);
    CU_ASSERT_EQUAL(rep.refused, 0);
    CU_ASSERT_EQUAL(rep.body_bytes, n.body_bytes);
    CU_ASSERT_STRING_EQUAL(rep.hdr.build, "test 1.0");
    CU_ASSERT_DOUBLE_EQUAL(rep.hdr.written, T0 + 2, 1e-6);
    struct ct_cache_stats st;
    ct_cache_stats(d, &st);
    CU_ASSERT_EQUAL(st.restored, 6);
    CU_ASSERT_EQUAL(st.lookups, 0); /* the load is no client's lookup */

    struct ct_obj *obj;
    CU_ASSERT_EQUAL(look(d, "/a", "", T0 + 30, &obj), CT_CACHE_HIT);
    CU_ASSERT(body_eq(obj, "alpha", 5));
    CU_ASSERT(ct_str_eq(ct_obj_head(obj), CT_STR("HTTP/1.1 200 OK\r\nX-Which: stored\r\n")));
    CU_ASSERT(ct_str_eq(ct_obj_etag(obj), CT_STR("\"e1\"")));
    CU_ASSERT(ct_str_eq(ct_obj_last_modified(obj), CT_STR("Sun, 06 Nov 1994 08:49:37 GMT")));
    CU_ASSERT(ct_str_eq(ct_obj_date(obj), CT_STR("Mon, 07 Nov 1994 08:49:37 GMT")));
    /* initial age 5, 30 s since the response: the time on disk counts */
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_age(obj, T0 + 30), 35, 1e-3);
    /* what its fetch cost came back (origin time saved, cost eviction) */
    CU_ASSERT_EQUAL(ct_obj_fetch_us(obj), 1005);
    ct_obj_release(&obj);
    /* past its ttl (60 s, 5 of them spent before) at T0 + 56, and no keep: gone */
    CU_ASSERT_EQUAL(look(d, "/v", "gzip", T0 + 56, &obj), CT_CACHE_MISS);

    /* fresh ones at a time they are fresh: each variant answers its request */
    struct ct_cache *e = mk_cache(16 << 20, 1 << 20, 8);
    rep = load(e, &m, T0 + 20);
    CU_ASSERT_EQUAL(rep.fates[CT_CACHE_PERSIST_LOADED], 6);
    CU_ASSERT_EQUAL(look(e, "/v", "gzip", T0 + 20, &obj), CT_CACHE_HIT);
    CU_ASSERT(body_eq(obj, "zipped", 6));
    ct_obj_release(&obj);
    CU_ASSERT_EQUAL(look(e, "/v", "br", T0 + 20, &obj), CT_CACHE_HIT);
    CU_ASSERT(body_eq(obj, "brotli", 6));
    ct_obj_release(&obj);
    CU_ASSERT_EQUAL(look(e, "/big", "", T0 + 20, &obj), CT_CACHE_HIT);
    CU_ASSERT(body_eq(obj, big, big_len));
    CU_ASSERT_EQUAL(ct_obj_fetch_us(obj), 1000 + big_len);
    off_t off;
    CU_ASSERT(ct_obj_body_fd(obj, &off) >= 0); /* a memfd again, for sendfile */
    ct_obj_release(&obj);
    /* stale with its validator: kept (keep), answered as stale to revalidate */
    CU_ASSERT_EQUAL(look(e, "/stale", "", T0 + 20, &obj), CT_CACHE_STALE);
    CU_ASSERT(ct_str_eq(ct_obj_etag(obj), CT_STR("\"e1\"")));
    ct_obj_release(&obj);
    /* the soft purge survived: stale although its ttl has not run out */
    CU_ASSERT_EQUAL(look(e, "/soft", "", T0 + 20, &obj), CT_CACHE_STALE);
    ct_obj_release(&obj);
    /* tags came back: a purge by tag finds the restored objects */
    CU_ASSERT_EQUAL(ct_cache_purge_tag(e, CT_STR("t1"), CT_CACHE_PURGE_HARD, T0 + 20), 2);
    CU_ASSERT_EQUAL(look(e, "/a", "", T0 + 20, &obj), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(e, CT_STR("t2"), CT_CACHE_PURGE_HARD, T0 + 20), 1);

    /* loading the same snapshot twice: the second finds every object there */
    struct ct_cache *f = mk_cache(16 << 20, 1 << 20, 8);
    load(f, &m, T0 + 20);
    rep = load(f, &m, T0 + 20);
    CU_ASSERT_EQUAL(rep.fates[CT_CACHE_PERSIST_DUPLICATE], 6);
    CU_ASSERT_EQUAL(rep.fates[CT_CACHE_PERSIST_LOADED], 0);

    ct_cache_free(&d);
    ct_cache_free(&e);
    ct_cache_free(&f);
    free(big);
    free(m.p);
}

static void test_expired_dropped(void)
{
    struct mem m = {0};
    struct ct_cache *c = small_store(&m);
    ct_cache_free(&c);
    /* past /stale's keep (10 + 3600 s, minus initial age 5): only expiry */
    struct ct_cache *d = mk_cache(16 << 20, 1 << 20, 4);
    struct ct_cache_persist_report rep = load(d, &m, T0 + 4000);
    CU_ASSERT_EQUAL(rep.fates[CT_CACHE_PERSIST_EXPIRED], 4);
    CU_ASSERT_EQUAL(rep.fates[CT_CACHE_PERSIST_LOADED], 0);
    ct_cache_free(&d);
    /* between: /stale (kept for revalidation) is the one left */
    d = mk_cache(16 << 20, 1 << 20, 4);
    rep = load(d, &m, T0 + 100);
    CU_ASSERT_EQUAL(rep.fates[CT_CACHE_PERSIST_EXPIRED], 3);
    CU_ASSERT_EQUAL(rep.fates[CT_CACHE_PERSIST_LOADED], 1);
    ct_cache_free(&d);
    free(m.p);
}

static void test_bans_applied(void)
{
    struct ct_cache *c = mk_cache(16 << 20, 1 << 20, 4);
    store_full(c, "/keep", "", "k", 1, 60, 3600, NULL, T0);
    store_full(c, "/gone", "", "g", 1, 60, 3600, NULL, T0);
    store_full(c, "/soft", "", "s", 1, 60, 3600, NULL, T0);
    uint64_t id;
    char err[128];
    const char *hard = "obj.url == \"/gone\"", *soft = "obj.url == \"/soft\"";
    CU_ASSERT_EQUAL(ct_cache_ban_add(c, hard, strlen(hard), false, T0 + 1, &id, err, sizeof(err)),
                    CT_OK);
    CU_ASSERT_EQUAL(ct_cache_ban_add(c, soft, strlen(soft), true, T0 + 1, &id, err, sizeof(err)),
                    CT_OK);
    struct mem m = {0};
    CU_ASSERT_EQUAL(save(c, T0 + 2, &m).objects, 2);
    ct_cache_free(&c);
    struct ct_cache *d = mk_cache(16 << 20, 1 << 20, 4);
    load(d, &m, T0 + 3);
    struct ct_obj *obj;
    CU_ASSERT_EQUAL(look(d, "/keep", "", T0 + 3, &obj), CT_CACHE_HIT);
    ct_obj_release(&obj);
    CU_ASSERT_EQUAL(look(d, "/gone", "", T0 + 3, &obj), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(look(d, "/soft", "", T0 + 3, &obj), CT_CACHE_STALE);
    ct_obj_release(&obj);
    ct_cache_free(&d);
    free(m.p);
}

static void test_smaller_store_keeps_newest(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 1 << 20, 8); /* the file merges the shards */
    char *body = big_body(8000);
    char target[32];
    for (int i = 0; i < 400; i++) { /* ~3.2 MB of bodies, in order */
        snprintf(target, sizeof(target), "/o%d", i);
        store_full(c, target, "", body, 8000, 60, 0, NULL, T0 + i * 0.001);
    }
    struct mem m = {0};
    CU_ASSERT_EQUAL(save(c, T0 + 1, &m).objects, 400);
    ct_cache_free(&c);
    struct ct_cache *d = mk_cache(1 << 20, 1 << 20, 8);
    struct ct_cache_persist_report rep = load(d, &m, T0 + 2);
    CU_ASSERT_EQUAL(rep.fates[CT_CACHE_PERSIST_LOADED], 400); /* each fitted when loaded */
    struct ct_cache_stats st;
    ct_cache_stats(d, &st);
    CU_ASSERT(st.bytes <= st.max_bytes);
    CU_ASSERT(st.evictions >= 250); /* 1 MiB holds ~120 */
    CU_ASSERT(st.objects < 140);
    struct ct_obj *obj;
    CU_ASSERT_EQUAL(look(d, "/o399", "", T0 + 2, &obj), CT_CACHE_HIT); /* the newest stay */
    CU_ASSERT(body_eq(obj, body, 8000));
    ct_obj_release(&obj);
    CU_ASSERT_EQUAL(look(d, "/o0", "", T0 + 2, &obj), CT_CACHE_MISS); /* the oldest went */
    ct_cache_free(&d);
    free(body);
    free(m.p);
}

static void test_header_refused(void)
{
    struct mem m = {0};
    struct ct_cache *c = small_store(&m);
    ct_cache_free(&c);
    struct ct_cache *d = mk_cache(16 << 20, 1 << 20, 4);
    struct ct_cache_persist_report rep;
    /* empty, short */
    ct_cache_persist_load(d, m.p, 0, T0 + 2, &rep);
    CU_ASSERT(rep.header_refused);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep.why, "truncated"));
    ct_cache_persist_load(d, m.p, 63, T0 + 2, &rep);
    CU_ASSERT(rep.header_refused);
    /* not ours */
    ct_cache_persist_load(d, "GIF89a and then some bytes that are clearly no snapshot at all....",
                          66, T0 + 2, &rep);
    CU_ASSERT(rep.header_refused);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep.why, "not a cachet snapshot"));
    /* another version, another key scheme: a valid header of each */
    unsigned char *p = malloc(m.len);
    memcpy(p, m.p, m.len);
    p[8] = 99;
    /* the header checksum recomputed, as a newer writer would */
    uint32_t crc_fix = (uint32_t)crc32(0, p, 60);
    for (int i = 0; i < 4; i++)
        p[60 + i] = (unsigned char)(crc_fix >> (8 * i));
    ct_cache_persist_load(d, p, m.len, T0 + 2, &rep);
    CU_ASSERT(rep.header_refused);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep.why, "format version 99"));
    memcpy(p, m.p, m.len);
    p[12] = 9;
    crc_fix = (uint32_t)crc32(0, p, 60);
    for (int i = 0; i < 4; i++)
        p[60 + i] = (unsigned char)(crc_fix >> (8 * i));
    ct_cache_persist_load(d, p, m.len, T0 + 2, &rep);
    CU_ASSERT(rep.header_refused);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep.why, "key scheme 9"));
    struct ct_cache_stats st;
    ct_cache_stats(d, &st);
    CU_ASSERT_EQUAL(st.objects, 0);
    ct_cache_free(&d);
    free(p);
    free(m.p);
}

/* Flip every byte in turn (each of its bits, one at a time for a few): the
 * header refuses the whole, a record refuses itself, nothing crashes, and
 * what loads is what the intact snapshot holds. */
static void test_every_byte_flipped(void)
{
    struct mem m = {0};
    struct ct_cache *c = small_store(&m);
    ct_cache_free(&c);
    unsigned char *p = malloc(m.len);
    size_t header_refusals = 0, record_refusals = 0;
    for (size_t i = 0; i < m.len; i++) {
        memcpy(p, m.p, m.len);
        p[i] ^= (unsigned char)(1u << (i % 8));
        struct ct_cache *d = mk_cache(16 << 20, 1 << 20, 4);
        struct ct_cache_persist_report rep;
        ct_cache_persist_load(d, p, m.len, T0 + 2, &rep);
        if (i < CT_CACHE_PERSIST_HDR_LEN) {
            CU_ASSERT(rep.header_refused || i >= 56); /* reserved bytes: not read */
            header_refusals += rep.header_refused;
        } else {
            CU_ASSERT_FALSE(rep.header_refused);
            CU_ASSERT(rep.refused >= 1);
            CU_ASSERT(rep.fates[CT_CACHE_PERSIST_LOADED] <= 3);
            record_refusals += rep.refused >= 1;
            CU_ASSERT(rep.why[0] != '\0');
        }
        ct_cache_free(&d);
    }
    CU_ASSERT(header_refusals >= 56);
    CU_ASSERT_EQUAL(record_refusals, m.len - CT_CACHE_PERSIST_HDR_LEN);
    free(p);
    free(m.p);
}

static void test_every_truncation(void)
{
    struct mem m = {0};
    struct ct_cache *c = small_store(&m);
    ct_cache_free(&c);
    uint64_t last_loaded = 0;
    for (size_t len = CT_CACHE_PERSIST_HDR_LEN; len <= m.len; len++) {
        unsigned char *p = malloc(len); /* exactly LEN: ASan sees any read past it */
        memcpy(p, m.p, len);
        struct ct_cache *d = mk_cache(16 << 20, 1 << 20, 4);
        struct ct_cache_persist_report rep;
        ct_cache_persist_load(d, p, len, T0 + 2, &rep);
        CU_ASSERT_FALSE(rep.header_refused);
        uint64_t loaded = rep.fates[CT_CACHE_PERSIST_LOADED];
        CU_ASSERT(loaded >= last_loaded); /* the records before the cut load */
        if (len < m.len && len > CT_CACHE_PERSIST_HDR_LEN && loaded < 4)
            CU_ASSERT(rep.refused == 1 || rep.records == loaded);
        last_loaded = loaded;
        ct_cache_free(&d);
        free(p);
    }
    CU_ASSERT_EQUAL(last_loaded, 4);
    free(m.p);
}

static void test_write_error_stops(void)
{
    struct ct_cache *c = mk_cache(16 << 20, 1 << 20, 4);
    store_full(c, "/a", "", "alpha", 5, 60, 0, NULL, T0);
    store_full(c, "/b", "", "beta", 4, 60, 0, NULL, T0);
    struct mem m = {.fail_after = 100};
    struct ct_cache_persist_counts n;
    CU_ASSERT_EQUAL(ct_cache_persist_save(c, T0, "t", mem_write, &m, &n), CT_EIO);
    CU_ASSERT(n.objects < 2);
    /* the store is as it was: both still hit, and nothing leaked (freed below) */
    struct ct_obj *obj;
    CU_ASSERT_EQUAL(look(c, "/b", "", T0 + 1, &obj), CT_CACHE_HIT);
    ct_obj_release(&obj);
    ct_cache_free(&c);
    free(m.p);
}

void ct_test_register(void)
{
    CT_SUITE("cache_persist", {"round trip: heads, variants, tags, bodies, age", test_round_trip},
             {"expired objects are dropped at load", test_expired_dropped},
             {"pending bans are applied before writing", test_bans_applied},
             {"a smaller store keeps the newest", test_smaller_store_keeps_newest},
             {"foreign, short and corrupt headers refuse the whole", test_header_refused},
             {"every flipped byte is refused", test_every_byte_flipped},
             {"every truncation loads the records before it", test_every_truncation},
             {"a write error stops the save, the store intact", test_write_error_stops});
}
