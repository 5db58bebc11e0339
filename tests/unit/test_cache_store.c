/*
 * tests/unit/test_cache_store.c: the store through cache/cache.h only, one
 * thread (several threads: test_cache_threads.c). Time is moved, never slept.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cache/cache.h"
#include "tests/unit/ct_test.h"
#include "tests/unit/test_cache_helpers.h"

static void test_config(void)
{
    struct ct_cache_config bad[] = {
        /* shards not a power of two */
        {.max_bytes = 1 << 20, .max_object_size = 1 << 10, .shards = 3},
        /* no object could fit */
        {.max_bytes = 1 << 20, .max_object_size = 0, .shards = 4},
        /* object bigger than the cache */
        {.max_bytes = 1 << 20, .max_object_size = 2 << 20, .shards = 4},
        /* too small */
        {.max_bytes = 1000, .max_object_size = 100, .shards = 1},
        /* the empty table would eat the cap */
        {.max_bytes = 64 << 10, .max_object_size = 1 << 10, .shards = 4096},
        /* objects are counted in 32 bits */
        {.max_bytes = (size_t)8 << 30, .max_object_size = (size_t)5 << 30, .shards = 64},
    };
    for (size_t i = 0; i < CT_ARRAY_LEN(bad); i++)
        CU_ASSERT_PTR_NULL(ct_cache_new(&bad[i]));
    struct ct_cache *c = mk_cache(1 << 20, 1 << 10, 0); /* 0 shards: default */
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_TRUE(st.bytes > 0 && st.bytes < st.max_bytes); /* the table is counted */
    CU_ASSERT_TRUE(ct_cache_fits(c, 1024));
    CU_ASSERT_FALSE(ct_cache_fits(c, 1025));
    ct_cache_free(&c);
    CU_ASSERT_PTR_NULL(c);
}

static void test_insert_hit(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    size_t idle = idle_bytes(c);
    struct tkey k;
    mk_key(&k, "example.com", "/a");
    struct ct_cache_lookup_res res;

    CU_ASSERT_EQUAL(lookup(c, &k, T0, &res), CT_CACHE_MISS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res.fetch);
    CU_ASSERT_PTR_NULL(res.obj);
    CU_ASSERT_EQUAL(ct_obj_state(res.fetch), CT_OBJ_BUSY);
    struct fill f = {"hello world", NULL, 60, 0, 0, true};
    fill_obj(res.fetch, &f, T0);
    CU_ASSERT_EQUAL(ct_obj_state(res.fetch), CT_OBJ_COMPLETE);
    ct_cache_lookup_res_release(&res);
    CU_ASSERT_PTR_NULL(res.fetch);

    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 1, &res), CT_CACHE_HIT);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res.obj);
    CU_ASSERT_PTR_NULL(res.fetch);
    CU_ASSERT_EQUAL(ct_obj_status(res.obj), 200);
    CU_ASSERT_TRUE(
        ct_str_eq(ct_obj_head(res.obj), CT_STR("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n")));
    CU_ASSERT_TRUE(ct_str_eq(ct_obj_etag(res.obj), CT_STR("\"v1\"")));
    CU_ASSERT_TRUE(
        ct_str_eq(ct_obj_last_modified(res.obj), CT_STR("Sun, 06 Nov 1994 08:49:37 GMT")));
    CU_ASSERT_TRUE(ct_str_eq(ct_obj_date(res.obj), CT_STR("Mon, 07 Nov 1994 08:49:37 GMT")));
    CU_ASSERT_TRUE(ct_str_eq(ct_obj_vary(res.obj), CT_STR("")));
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_response_time(res.obj), T0, 1e-9);
    CU_ASSERT_TRUE(body_is(res.obj, "hello world"));
    CU_ASSERT_EQUAL(ct_obj_body_len(res.obj), 11);
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_age(res.obj, T0 + 1), 1.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_ttl_left(res.obj, T0 + 1), 59.0, 1e-9);
    ct_cache_lookup_res_release(&res);

    /* another key is a miss; HEAD-class keys are the same as GET */
    struct tkey k2;
    mk_key(&k2, "example.com", "/b");
    CU_ASSERT_EQUAL(lookup(c, &k2, T0, &res), CT_CACHE_MISS);
    ct_obj_fail(res.fetch);
    ct_cache_lookup_res_release(&res);

    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.lookups, 3);
    CU_ASSERT_EQUAL(st.hits, 1);
    CU_ASSERT_EQUAL(st.misses, 2);
    CU_ASSERT_EQUAL(st.inserts, 1);
    CU_ASSERT_EQUAL(st.failed, 1);
    CU_ASSERT_EQUAL(st.objects, 1);
    CU_ASSERT_EQUAL(st.keys, 1);
    ct_cache_free(&c);
    (void)idle;
}

/* The header block can be given back whole, and the body comes in chunks
 * of at most MAX; seek lands on any offset (Range). */
static void test_body_chunks_and_seek(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 256 << 10, 1);
    struct tkey k;
    mk_key(&k, "h", "/big");
    struct ct_cache_lookup_res res;
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &res), CT_CACHE_MISS);
    struct fill f = {"", NULL, 60, 0, 0, false};
    set_head(res.fetch, &f, T0);
    /* 100 KiB appended in odd pieces, no hint: several segments */
    static char big[100 * 1024];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)('a' + i % 23);
    for (size_t off = 0; off < sizeof(big); off += 777)
        CU_ASSERT_EQUAL(ct_obj_append(res.fetch, big + off, CT_MIN(777, sizeof(big) - off)), CT_OK);
    ct_obj_complete(res.fetch, T0);
    CU_ASSERT_EQUAL(ct_obj_body_len(res.fetch), sizeof(big));

    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str ch;
    size_t n = 0, chunks = 0;
    bool same = true;
    while (ct_obj_body_next(res.fetch, &pos, 4000, &ch) == CT_OBJ_BODY_DATA) {
        CU_ASSERT_TRUE(ch.len <= 4000);
        same = same && memcmp(ch.p, big + n, ch.len) == 0;
        n += ch.len;
        chunks++;
    }
    CU_ASSERT_TRUE(same);
    CU_ASSERT_EQUAL(n, sizeof(big));
    CU_ASSERT_TRUE(chunks > 25);

    struct ct_obj_body_pos p2 = CT_OBJ_BODY_POS_INIT;
    CU_ASSERT_EQUAL(ct_obj_body_seek(res.fetch, &p2, 50000), CT_OK);
    CU_ASSERT_EQUAL(ct_obj_body_next(res.fetch, &p2, 10, &ch), CT_OBJ_BODY_DATA);
    CU_ASSERT_EQUAL(memcmp(ch.p, big + 50000, 10), 0);
    CU_ASSERT_EQUAL(ct_obj_body_seek(res.fetch, &p2, sizeof(big)), CT_OK);
    CU_ASSERT_EQUAL(ct_obj_body_next(res.fetch, &p2, 0, &ch), CT_OBJ_BODY_END);
    CU_ASSERT_EQUAL(ct_obj_body_seek(res.fetch, &p2, sizeof(big) + 1), CT_ELIMIT);
    ct_cache_lookup_res_release(&res);
    ct_cache_free(&c);
}

static bool match_ci(struct ct_str stored, struct ct_str req, void *arg)
{
    (*(int *)arg)++;
    return ct_str_eq_ci(stored, req);
}

static void test_variants(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/v");
    struct fill gz = {"gzip body", "gzip", 60, 0, 0, true};
    struct fill br = {"br body", "br", 60, 0, 0, true};
    store(c, &k, &gz, T0);
    store(c, &k, &br, T0); /* "br" finds no match: a miss, a second variant */

    struct ct_cache_lookup_res res;
    CU_ASSERT_EQUAL(lookup_v(c, &k, "gzip", T0, &res), CT_CACHE_HIT);
    CU_ASSERT_TRUE(body_is(res.obj, "gzip body"));
    CU_ASSERT_TRUE(ct_str_eq(ct_obj_vary(res.obj), CT_STR("gzip")));
    CU_ASSERT_TRUE(ct_str_eq(ct_obj_date(res.obj), CT_STR("Mon, 07 Nov 1994 08:49:37 GMT")));
    ct_cache_lookup_res_release(&res);
    CU_ASSERT_EQUAL(lookup_v(c, &k, "br", T0, &res), CT_CACHE_HIT);
    CU_ASSERT_TRUE(body_is(res.obj, "br body"));
    ct_cache_lookup_res_release(&res);

    /* a caller-supplied matcher decides */
    int calls = 0;
    struct ct_cache_lookup_req req = {&k.key, CT_STR("GZIP"), match_ci, &calls, false, false, false};
    CU_ASSERT_EQUAL(ct_cache_lookup(c, &req, T0, &res), CT_CACHE_HIT);
    CU_ASSERT_TRUE(body_is(res.obj, "gzip body"));
    CU_ASSERT_TRUE(calls >= 1);
    ct_cache_lookup_res_release(&res);

    /* a newer copy of one variant replaces the older, the other stays */
    struct fill gz2 = {"gzip v2", "gzip", 60, 0, 0, true};
    req.vary = CT_STR("gzip");
    req.match = NULL;
    CU_ASSERT_EQUAL(ct_cache_lookup(c, &req, T0 + 100, &res), CT_CACHE_MISS); /* expired */
    fill_obj(res.fetch, &gz2, T0 + 100);
    ct_cache_lookup_res_release(&res);
    CU_ASSERT_EQUAL(lookup_v(c, &k, "gzip", T0 + 101, &res), CT_CACHE_HIT);
    CU_ASSERT_TRUE(body_is(res.obj, "gzip v2"));
    ct_cache_lookup_res_release(&res);

    /* purge removes every variant */
    CU_ASSERT_TRUE(ct_cache_purge(c, &k.key) >= 1);
    CU_ASSERT_EQUAL(lookup_v(c, &k, "br", T0 + 101, &res), CT_CACHE_MISS);
    ct_obj_fail(res.fetch);
    ct_cache_lookup_res_release(&res);
    ct_cache_free(&c);
}

/* A lookup answered from another variant (a derived coding, issue 18):
 * the probe for that variant counts nothing, and the first lookup's miss
 * becomes a hit; its fetch slot goes without a failed fetch, and a waiter
 * on it is woken to look again. */
static void test_answered_from_another_variant(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/d");
    struct fill br = {"br body", "br", 60, 0, 0, true};
    store(c, &k, &br, T0);
    struct ct_cache_stats st0, st;
    ct_cache_stats(c, &st0);

    struct ct_cache_lookup_res res, pr, wr;
    CU_ASSERT_EQUAL(lookup_v(c, &k, "identity", T0, &res), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(res.miss, CT_CACHE_MISS_VARY);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res.fetch);
    CU_ASSERT_EQUAL(lookup_v(c, &k, "identity", T0, &wr), CT_CACHE_BUSY); /* a waiter */
    struct ct_cache_lookup_req probe = {&k.key, CT_STR("br"), NULL, NULL, true, false, true};
    CU_ASSERT_EQUAL(ct_cache_lookup(c, &probe, T0, &pr), CT_CACHE_HIT);
    CU_ASSERT_TRUE(body_is(pr.obj, "br body"));
    ct_cache_lookup_answered(c, &k.key, &res.fetch);
    CU_ASSERT_PTR_NULL(res.fetch);
    CU_ASSERT_EQUAL(ct_obj_state(wr.busy), CT_OBJ_FAILED); /* its waiters look again */
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.lookups - st0.lookups, 2);   /* R's and the waiter's, not the probe */
    CU_ASSERT_EQUAL(st.hits - st0.hits, 1);         /* R's */
    CU_ASSERT_EQUAL(st.misses - st0.misses, 0);
    CU_ASSERT_EQUAL(st.busy - st0.busy, 1);
    CU_ASSERT_EQUAL(st.failed - st0.failed, 0);     /* handed back, not a failed fetch */
    ct_cache_lookup_res_release(&pr);
    ct_cache_lookup_res_release(&wr);
    ct_cache_lookup_res_release(&res);

    /* without a fetch slot (HEAD, no memory): the count only */
    struct ct_cache_lookup_req head = {&k.key, CT_STR("identity"), NULL, NULL, true, false, false};
    CU_ASSERT_EQUAL(ct_cache_lookup(c, &head, T0, &res), CT_CACHE_MISS);
    CU_ASSERT_PTR_NULL(res.fetch);
    ct_cache_lookup_answered(c, &k.key, &res.fetch);
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.hits - st0.hits, 2);
    CU_ASSERT_EQUAL(st.misses - st0.misses, 0);
    ct_cache_lookup_res_release(&res);
    ct_cache_free(&c);
}

struct wake_count {
    int n;
};

static void on_wake(void *arg)
{
    ((struct wake_count *)arg)->n++;
}

static void test_busy_coalescing(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/slow");
    struct ct_cache_lookup_res a, b, b2;
    struct wake_count wc = {0};
    struct ct_cache_waiter w;
    ct_cache_waiter_init(&w, on_wake, &wc);

    CU_ASSERT_EQUAL(lookup(c, &k, T0, &a), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &b), CT_CACHE_BUSY); /* coalesced: no second fetch */
    CU_ASSERT_PTR_NULL(b.fetch);
    CU_ASSERT_PTR_EQUAL(b.busy, a.fetch);
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &b2), CT_CACHE_BUSY);
    ct_cache_lookup_res_release(&b2);

    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w, CT_OBJ_BUSY, 0));
    struct fill f = {"0123456789", NULL, 60, 0, 0, false};
    set_head(a.fetch, &f, T0);
    CU_ASSERT_EQUAL(wc.n, 1); /* head arrived */
    /* nothing new since STREAMING with 0 bytes: registers; state changed: doesn't */
    CU_ASSERT_FALSE(ct_obj_wait(b.busy, &w, CT_OBJ_BUSY, 0));
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w, CT_OBJ_STREAMING, 0));
    CU_ASSERT_EQUAL(ct_obj_append(a.fetch, "01234", 5), CT_OK);
    CU_ASSERT_EQUAL(wc.n, 2);

    /* the waiter streams what is there, then waits for more */
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str ch;
    CU_ASSERT_EQUAL(ct_obj_body_next(b.busy, &pos, 0, &ch), CT_OBJ_BODY_DATA);
    CU_ASSERT_TRUE(ct_str_eq(ch, CT_STR("01234")));
    CU_ASSERT_EQUAL(ct_obj_body_next(b.busy, &pos, 0, &ch), CT_OBJ_BODY_WAIT);
    CU_ASSERT_FALSE(ct_obj_wait(b.busy, &w, CT_OBJ_STREAMING, 4)); /* stale view: read now */
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w, CT_OBJ_STREAMING, pos.off));
    CU_ASSERT_EQUAL(ct_obj_append(a.fetch, "56789", 5), CT_OK);
    CU_ASSERT_EQUAL(wc.n, 3);
    CU_ASSERT_EQUAL(ct_obj_body_next(b.busy, &pos, 0, &ch), CT_OBJ_BODY_DATA);
    CU_ASSERT_TRUE(ct_str_eq(ch, CT_STR("56789")));
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w, CT_OBJ_STREAMING, pos.off));
    ct_obj_complete(a.fetch, T0);
    CU_ASSERT_EQUAL(wc.n, 4);
    CU_ASSERT_EQUAL(ct_obj_body_next(b.busy, &pos, 0, &ch), CT_OBJ_BODY_END);
    CU_ASSERT_FALSE(ct_obj_wait(b.busy, &w, CT_OBJ_COMPLETE, pos.off)); /* terminal */
    ct_cache_lookup_res_release(&a);
    ct_cache_lookup_res_release(&b);

    /* later lookups hit */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 1, &b), CT_CACHE_HIT);
    CU_ASSERT_TRUE(body_is(b.obj, "0123456789"));
    ct_cache_lookup_res_release(&b);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.misses, 1);
    CU_ASSERT_EQUAL(st.busy, 2);
    ct_cache_free(&c);
}

/* A reader that answers only from the end (a waiter on a body of unknown
 * length) is not woken per append, only when the object leaves STREAMING. */
static void test_wait_for_end(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/end");
    struct ct_cache_lookup_res a, b;
    struct wake_count ec = {0}, bc = {0};
    struct ct_cache_waiter we, wb;
    ct_cache_waiter_init(&we, on_wake, &ec);
    ct_cache_waiter_init(&wb, on_wake, &bc);
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &a), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &b), CT_CACHE_BUSY);
    struct fill f = {"", NULL, 60, 0, 0, false};
    set_head(a.fetch, &f, T0);
    CU_ASSERT_FALSE(ct_obj_wait(b.busy, &we, CT_OBJ_BUSY, CT_OBJ_WAIT_END)); /* head: news */
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &we, CT_OBJ_STREAMING, CT_OBJ_WAIT_END));
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &wb, CT_OBJ_STREAMING, 0));
    CU_ASSERT_EQUAL(ct_obj_append(a.fetch, "01234", 5), CT_OK);
    CU_ASSERT_EQUAL(bc.n, 1); /* a streaming reader is woken per append */
    CU_ASSERT_EQUAL(ct_obj_append(a.fetch, "56789", 5), CT_OK);
    CU_ASSERT_EQUAL(ec.n, 0); /* still registered */
    /* bytes there already are no news to it either */
    ct_obj_unwait(&we);
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &we, CT_OBJ_STREAMING, CT_OBJ_WAIT_END));
    ct_obj_complete(a.fetch, T0);
    CU_ASSERT_EQUAL(ec.n, 1);
    CU_ASSERT_FALSE(ct_obj_wait(b.busy, &we, CT_OBJ_STREAMING, CT_OBJ_WAIT_END)); /* terminal */
    ct_cache_lookup_res_release(&a);
    ct_cache_lookup_res_release(&b);
    ct_cache_free(&c);
}

static void test_unwait(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/u");
    struct ct_cache_lookup_res a, b;
    struct wake_count w1c = {0}, w2c = {0}, w3c = {0};
    struct ct_cache_waiter w1, w2, w3;
    ct_cache_waiter_init(&w1, on_wake, &w1c);
    ct_cache_waiter_init(&w2, on_wake, &w2c);
    ct_cache_waiter_init(&w3, on_wake, &w3c);
    ct_obj_unwait(&w3); /* never registered: no-op */

    CU_ASSERT_EQUAL(lookup(c, &k, T0, &a), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &b), CT_CACHE_BUSY);
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w1, CT_OBJ_BUSY, 0));
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w2, CT_OBJ_BUSY, 0));
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w3, CT_OBJ_BUSY, 0));
    ct_obj_unwait(&w2); /* the middle one leaves (timeout) */
    ct_obj_unwait(&w2); /* idempotent */
    ct_obj_fail(a.fetch);
    CU_ASSERT_EQUAL(w1c.n, 1);
    CU_ASSERT_EQUAL(w2c.n, 0);
    CU_ASSERT_EQUAL(w3c.n, 1);
    ct_obj_unwait(&w1); /* after firing: no-op */
    ct_cache_lookup_res_release(&a);
    ct_cache_lookup_res_release(&b);
    ct_cache_free(&c);
}

static void test_failed_never_served(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/dies");
    struct ct_cache_lookup_res a, b;
    struct wake_count wc = {0};
    struct ct_cache_waiter w;
    ct_cache_waiter_init(&w, on_wake, &wc);

    CU_ASSERT_EQUAL(lookup(c, &k, T0, &a), CT_CACHE_MISS);
    struct fill f = {"", NULL, 60, 0, 0, false};
    set_head(a.fetch, &f, T0);
    CU_ASSERT_EQUAL(ct_obj_append(a.fetch, "partial", 7), CT_OK);
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &b), CT_CACHE_BUSY); /* streaming variant matches */
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w, CT_OBJ_STREAMING, 0) == false); /* 7 bytes there */
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w, CT_OBJ_STREAMING, 7));
    ct_obj_fail(a.fetch); /* the origin died mid-body */
    CU_ASSERT_EQUAL(wc.n, 1);
    CU_ASSERT_EQUAL(ct_obj_state(b.busy), CT_OBJ_FAILED);
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str ch;
    CU_ASSERT_EQUAL(ct_obj_body_next(b.busy, &pos, 0, &ch), CT_OBJ_BODY_FAILED);
    ct_cache_lookup_res_release(&b);
    ct_cache_lookup_res_release(&a);

    /* the next request starts a new fetch; nothing stale to serve */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 1, &b), CT_CACHE_MISS);
    CU_ASSERT_PTR_NOT_NULL(b.fetch);
    CU_ASSERT_PTR_NULL(b.obj);
    ct_obj_fail(b.fetch);
    ct_cache_lookup_res_release(&b);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.objects, 0);
    CU_ASSERT_EQUAL(st.keys, 0);
    ct_cache_free(&c);
}

static void test_abandon_hit_for_miss(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/private");
    struct ct_cache_lookup_res a, b;
    struct wake_count wc = {0};
    struct ct_cache_waiter w;
    ct_cache_waiter_init(&w, on_wake, &wc);

    CU_ASSERT_EQUAL(lookup(c, &k, T0, &a), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &b), CT_CACHE_BUSY);
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w, CT_OBJ_BUSY, 0));
    ct_obj_abandon(a.fetch, T0, 30); /* not storable: hit-for-miss for 30 s */
    CU_ASSERT_EQUAL(wc.n, 1);
    CU_ASSERT_EQUAL(ct_obj_state(b.busy), CT_OBJ_ABANDONED); /* waiter: fetch on your own */
    ct_cache_lookup_res_release(&a);
    ct_cache_lookup_res_release(&b);

    for (int i = 0; i < 3; i++) { /* later requests pass without queueing */
        CU_ASSERT_EQUAL(lookup(c, &k, T0 + 29, &b), CT_CACHE_PASS);
        CU_ASSERT_PTR_NULL(b.fetch);
        CU_ASSERT_PTR_NULL(b.busy);
    }
    /* the marker expires: a miss again, and a cacheable answer replaces it */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 31, &a), CT_CACHE_MISS);
    struct fill f = {"now public", NULL, 60, 0, 0, true};
    fill_obj(a.fetch, &f, T0 + 31);
    ct_cache_lookup_res_release(&a);
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 32, &b), CT_CACHE_HIT);
    ct_cache_lookup_res_release(&b);

    /* abandon without a marker: the next lookup is a plain miss */
    struct tkey k2;
    mk_key(&k2, "h", "/once");
    CU_ASSERT_EQUAL(lookup(c, &k2, T0, &a), CT_CACHE_MISS);
    ct_obj_abandon(a.fetch, T0, 0);
    ct_cache_lookup_res_release(&a);
    CU_ASSERT_EQUAL(lookup(c, &k2, T0, &a), CT_CACHE_MISS);
    ct_obj_fail(a.fetch);
    ct_cache_lookup_res_release(&a);

    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.pass, 3);
    CU_ASSERT_EQUAL(st.abandoned, 2);
    ct_cache_free(&c);
}

static void test_fresh_stale_expired(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/t");
    struct ct_cache_lookup_res r1, r2;
    struct fill f = {"v1", NULL, 10, 5, 20, true};
    store(c, &k, &f, T0);

    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 9.9, &r1), CT_CACHE_HIT);
    CU_ASSERT_TRUE(ct_obj_is_fresh(r1.obj, T0 + 9.9));
    ct_cache_lookup_res_release(&r1);

    /* stale within grace: the first caller gets the stale object AND the refresh */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 12, &r1), CT_CACHE_STALE);
    CU_ASSERT_PTR_NOT_NULL(r1.obj);
    CU_ASSERT_PTR_NOT_NULL(r1.fetch);
    CU_ASSERT_PTR_NULL(r1.busy);
    CU_ASSERT_TRUE(ct_obj_in_grace(r1.obj, T0 + 12));
    CU_ASSERT_FALSE(ct_obj_is_fresh(r1.obj, T0 + 12));
    /* the second gets the stale object and the refresh in progress, no new fetch */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 12, &r2), CT_CACHE_STALE);
    CU_ASSERT_PTR_EQUAL(r2.obj, r1.obj);
    CU_ASSERT_PTR_EQUAL(r2.busy, r1.fetch);
    CU_ASSERT_PTR_NULL(r2.fetch);
    ct_cache_lookup_res_release(&r2);
    /* past grace, within keep: still STALE (for revalidation), not in grace */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 20, &r2), CT_CACHE_STALE);
    CU_ASSERT_FALSE(ct_obj_in_grace(r2.obj, T0 + 20));
    ct_cache_lookup_res_release(&r2);
    /* the refresh completes: it replaces the stale copy */
    struct fill f2 = {"v2", NULL, 10, 5, 20, true};
    fill_obj(r1.fetch, &f2, T0 + 12);
    ct_cache_lookup_res_release(&r1);
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 13, &r1), CT_CACHE_HIT);
    CU_ASSERT_TRUE(body_is(r1.obj, "v2"));
    ct_cache_lookup_res_release(&r1);

    /* past ttl + grace + keep: reclaimed on lookup, a plain miss */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 12 + 35, &r1), CT_CACHE_MISS);
    CU_ASSERT_PTR_NULL(r1.obj);
    ct_obj_fail(r1.fetch);
    ct_cache_lookup_res_release(&r1);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.expired, 1);
    CU_ASSERT_EQUAL(st.replaced, 1);
    CU_ASSERT_EQUAL(st.stale, 3);
    CU_ASSERT_EQUAL(st.objects, 0);

    /* an upstream Age counts: initial_age 8 of ttl 10 leaves 2 s of freshness */
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &r1), CT_CACHE_MISS);
    struct ct_obj_meta m = {.status = 200, .response_time = T0, .initial_age = 8, .ttl = 10};
    CU_ASSERT_EQUAL(ct_obj_set_head(r1.fetch, &m), CT_OK);
    ct_obj_complete(r1.fetch, T0);
    ct_cache_lookup_res_release(&r1);
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 1.5, &r1), CT_CACHE_HIT);
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_age(r1.obj, T0 + 1.5), 9.5, 1e-9);
    ct_cache_lookup_res_release(&r1);
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 2.5, &r1), CT_CACHE_MISS); /* no grace, no keep */
    ct_obj_fail(r1.fetch);
    ct_cache_lookup_res_release(&r1);
    ct_cache_free(&c);
}

/* A fetcher that lets go of its BUSY object without ending it must not block
 * the key for ever: once only the table holds it, it is failed. */
static void test_orphaned_fetch(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/orphan");
    struct ct_cache_lookup_res a, b;
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &a), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &b), CT_CACHE_BUSY); /* a waiter holds a reference */
    ct_cache_lookup_res_release(&a);                       /* the fetcher vanishes */
    CU_ASSERT_EQUAL(ct_obj_state(b.busy), CT_OBJ_BUSY);    /* still referenced: kept */
    ct_cache_lookup_res_release(&b);                       /* the waiter times out */
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &a), CT_CACHE_MISS); /* not BUSY for ever */
    CU_ASSERT_PTR_NOT_NULL(a.fetch);
    struct fill f = {"ok", NULL, 60, 0, 0, true};
    set_head(a.fetch, &f, T0);
    ct_cache_lookup_res_release(&a); /* a STREAMING one too */
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &a), CT_CACHE_MISS);
    fill_obj(a.fetch, &f, T0);
    ct_cache_lookup_res_release(&a);
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &a), CT_CACHE_HIT);
    ct_cache_lookup_res_release(&a);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.failed, 2);
    CU_ASSERT_EQUAL(st.objects, 1);
    ct_cache_free(&c);
}

static void test_no_insert(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/oic");
    struct ct_cache_lookup_req req = {&k.key, CT_STR(""), NULL, NULL, true, false, false};
    struct ct_cache_lookup_res r;
    CU_ASSERT_EQUAL(ct_cache_lookup(c, &req, T0, &r), CT_CACHE_MISS);
    CU_ASSERT_PTR_NULL(r.fetch);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.keys, 0);
    CU_ASSERT_EQUAL(st.objects, 0);
    ct_cache_free(&c);
}

/* One key cannot grow without bound (Vary: User-Agent): past max_variants
 * complete variants, the oldest go. */
static void test_max_variants(void)
{
    struct ct_cache_config cfg = {
        .max_bytes = 1 << 20, .max_object_size = 64 << 10, .shards = 4, .max_variants = 3};
    struct ct_cache *c = ct_cache_new(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    struct tkey k;
    mk_key(&k, "h", "/ua");
    const char *ua[] = {"ua1", "ua2", "ua3", "ua4", "ua5"};
    for (size_t i = 0; i < CT_ARRAY_LEN(ua); i++) {
        struct fill f = {ua[i], ua[i], 60, 0, 0, true};
        store(c, &k, &f, T0);
    }
    struct ct_cache_lookup_res r;
    for (size_t i = 0; i < CT_ARRAY_LEN(ua); i++) {
        enum ct_cache_lookup kind = lookup_v(c, &k, ua[i], T0, &r);
        CU_ASSERT_EQUAL(kind, i < 2 ? CT_CACHE_MISS : CT_CACHE_HIT); /* newest 3 kept */
        if (r.fetch)
            ct_obj_fail(r.fetch);
        ct_cache_lookup_res_release(&r);
    }
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.evictions, 2);
    CU_ASSERT_EQUAL(st.objects, 3);
    ct_cache_free(&c);
}

static void test_revalidate_shares_body(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/304");
    struct fill f = {"the body", NULL, 10, 0, 100, true};
    store(c, &k, &f, T0);
    struct ct_cache_lookup_res r;
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 20, &r), CT_CACHE_STALE);
    /* 304: new head, same body by reference */
    struct ct_obj_meta m = {.status = 200,
                            .head = CT_STR("HTTP/1.1 200 OK\r\nX-New: 1\r\n"),
                            .response_time = T0 + 20,
                            .ttl = 10,
                            .keep = 100, /* still there, stale, for the second 304 */
                            .body_src = r.obj};
    CU_ASSERT_EQUAL(ct_obj_set_head(r.fetch, &m), CT_OK);
    ct_obj_complete(r.fetch, T0 + 20);
    ct_cache_lookup_res_release(&r); /* the old object is now held by the new one only */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 21, &r), CT_CACHE_HIT);
    CU_ASSERT_TRUE(ct_str_eq(ct_obj_head(r.obj), CT_STR("HTTP/1.1 200 OK\r\nX-New: 1\r\n")));
    CU_ASSERT_TRUE(body_is(r.obj, "the body"));
    ct_cache_lookup_res_release(&r);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.objects, 2); /* old body kept alive by the new head */

    /* a second 304 on the revalidated object: the body is still the first one's */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 40, &r), CT_CACHE_STALE);
    struct ct_obj_meta m2 = {.status = 200,
                             .head = CT_STR("HTTP/1.1 200 OK\r\nX-New: 2\r\n"),
                             .response_time = T0 + 40,
                             .ttl = 10,
                             .body_src = r.obj};
    CU_ASSERT_EQUAL(ct_obj_set_head(r.fetch, &m2), CT_OK);
    ct_obj_complete(r.fetch, T0 + 40);
    ct_cache_lookup_res_release(&r);
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 41, &r), CT_CACHE_HIT);
    CU_ASSERT_TRUE(ct_str_eq(ct_obj_head(r.obj), CT_STR("HTTP/1.1 200 OK\r\nX-New: 2\r\n")));
    CU_ASSERT_TRUE(body_is(r.obj, "the body"));
    CU_ASSERT_EQUAL(ct_obj_body_len(r.obj), 8);
    ct_cache_lookup_res_release(&r);
    ct_cache_free(&c);
}

/* What a fetch cost (issue 46): set by the fetcher before COMPLETE, read by
 * hits; 0 when never set; a 304 update starts with its body's cost (a hit
 * on it saves the full fetch); capped at UINT32_MAX microseconds. */
static void test_fetch_cost(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k, k0, kbig;
    mk_key(&k, "h", "/slow");
    mk_key(&k0, "h", "/unset");
    mk_key(&kbig, "h", "/huge");
    struct fill f = {"the body", NULL, 10, 0, 100, true};
    struct ct_cache_lookup_res r;
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &r), CT_CACHE_MISS);
    set_head(r.fetch, &f, T0);
    CU_ASSERT_EQUAL(ct_obj_append(r.fetch, f.body, strlen(f.body)), CT_OK);
    ct_obj_set_fetch_us(r.fetch, 1234567);
    ct_obj_complete(r.fetch, T0);
    ct_cache_lookup_res_release(&r);
    CU_ASSERT_EQUAL(lookup(c, &kbig, T0, &r), CT_CACHE_MISS);
    ct_obj_set_fetch_us(r.fetch, (uint64_t)UINT32_MAX + 5); /* before its head: allowed */
    fill_obj(r.fetch, &f, T0);
    ct_cache_lookup_res_release(&r);
    store(c, &k0, &f, T0);

    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 1, &r), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(ct_obj_fetch_us(r.obj), 1234567);
    ct_cache_lookup_res_release(&r);
    CU_ASSERT_EQUAL(lookup(c, &k0, T0 + 1, &r), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(ct_obj_fetch_us(r.obj), 0);
    ct_cache_lookup_res_release(&r);
    CU_ASSERT_EQUAL(lookup(c, &kbig, T0 + 1, &r), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(ct_obj_fetch_us(r.obj), UINT32_MAX);
    ct_cache_lookup_res_release(&r);

    /* a 304 update: the new head starts with the body's cost */
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 20, &r), CT_CACHE_STALE);
    struct ct_obj_meta m = {.status = 200,
                            .head = CT_STR("HTTP/1.1 200 OK\r\nX-New: 1\r\n"),
                            .response_time = T0 + 20,
                            .ttl = 10,
                            .body_src = r.obj};
    CU_ASSERT_EQUAL(ct_obj_set_head(r.fetch, &m), CT_OK);
    ct_obj_complete(r.fetch, T0 + 20);
    ct_cache_lookup_res_release(&r);
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 21, &r), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(ct_obj_fetch_us(r.obj), 1234567);
    ct_cache_lookup_res_release(&r);
    ct_cache_free(&c);
}

static void test_purge_exact_prefix_busy(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 8);
    struct tkey ka, kb, kc, kd;
    mk_key(&ka, "h", "/img/a.png");
    mk_key(&kb, "h", "/img/b.png");
    mk_key(&kc, "h", "/css/c.css");
    mk_key(&kd, "other", "/img/a.png");
    struct fill f = {"x", NULL, 60, 0, 0, true};
    store(c, &ka, &f, T0);
    store(c, &kb, &f, T0);
    store(c, &kc, &f, T0);
    store(c, &kd, &f, T0);

    CU_ASSERT_EQUAL(ct_cache_purge(c, &kc.key), 1);
    CU_ASSERT_EQUAL(ct_cache_purge(c, &kc.key), 0); /* 404 for the proxy */
    char pb[64];
    struct ct_str prefix;
    CU_ASSERT_EQUAL(ct_cache_key_prefix(CT_STR("H"), 80, CT_STR("/img/"), pb, sizeof(pb), &prefix),
                    CT_OK);
    CU_ASSERT_EQUAL(ct_cache_purge_prefix(c, prefix), 2);
    struct ct_cache_lookup_res r;
    CU_ASSERT_EQUAL(lookup(c, &kd, T0, &r), CT_CACHE_HIT); /* other host untouched */
    ct_cache_lookup_res_release(&r);

    /* a purge during the fetch: the fetcher finishes, later clients never see it */
    struct ct_cache_lookup_res a, b;
    struct wake_count wc = {0};
    struct ct_cache_waiter w;
    ct_cache_waiter_init(&w, on_wake, &wc);
    CU_ASSERT_EQUAL(lookup(c, &ka, T0, &a), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(lookup(c, &ka, T0, &b), CT_CACHE_BUSY);
    CU_ASSERT_TRUE(ct_obj_wait(b.busy, &w, CT_OBJ_BUSY, 0));
    CU_ASSERT_EQUAL(ct_cache_purge_prefix(c, prefix), 1);
    struct fill f2 = {"purged content", NULL, 60, 0, 0, true};
    fill_obj(a.fetch, &f2, T0);
    CU_ASSERT_TRUE(wc.n >= 1);                          /* the waiter is not left hanging */
    CU_ASSERT_TRUE(body_is(a.fetch, "purged content")); /* its own client gets it */
    ct_cache_lookup_res_release(&a);
    ct_cache_lookup_res_release(&b);
    CU_ASSERT_EQUAL(lookup(c, &ka, T0 + 1, &r), CT_CACHE_MISS);
    ct_obj_fail(r.fetch);
    ct_cache_lookup_res_release(&r);

    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.purged, 4);
    CU_ASSERT_EQUAL(st.objects, 1);
    ct_cache_free(&c);
}

static void test_eviction_under_cap(void)
{
    const size_t cap = 256 << 10;
    struct ct_cache *c = mk_cache(cap, 8 << 10, 4);
    static char body[1024];
    memset(body, 'e', sizeof(body) - 1);
    struct ct_cache_stats st;
    size_t max_seen = 0;

    for (int i = 0; i < 2000; i++) {
        struct tkey k;
        char path[32];
        snprintf(path, sizeof(path), "/obj/%d", i);
        mk_key(&k, "h", path);
        struct fill f = {body, NULL, 600, 0, 0, true};
        store(c, &k, &f, T0);
        ct_cache_stats(c, &st);
        max_seen = CT_MAX(max_seen, st.bytes);
        CU_ASSERT_TRUE_FATAL(st.bytes <= cap);
    }
    ct_cache_stats(c, &st);
    CU_ASSERT_TRUE(st.evictions > 1500);
    CU_ASSERT_TRUE(max_seen > cap - 4096); /* it did fill up to the cap */
    CU_ASSERT_EQUAL(st.objects, st.keys);

    /* a popular object (hit often) survives a flood of one-hit wonders */
    struct tkey hot;
    mk_key(&hot, "h", "/hot");
    struct fill f = {body, NULL, 600, 0, 0, true};
    store(c, &hot, &f, T0);
    int hot_hits = 0;
    for (int i = 0; i < 1000; i++) {
        struct ct_cache_lookup_res r;
        if (lookup(c, &hot, T0, &r) == CT_CACHE_HIT)
            hot_hits++;
        if (r.fetch)
            ct_obj_fail(r.fetch);
        ct_cache_lookup_res_release(&r);
        struct tkey k;
        char path[32];
        snprintf(path, sizeof(path), "/flood/%d", i);
        mk_key(&k, "h", path);
        store(c, &k, &f, T0);
    }
    CU_ASSERT_EQUAL(hot_hits, 1000);
    ct_cache_free(&c);
}

static void test_reader_survives_eviction_and_purge(void)
{
    const size_t cap = 128 << 10;
    struct ct_cache *c = mk_cache(cap, 8 << 10, 1);
    size_t idle = idle_bytes(c);
    struct tkey k;
    mk_key(&k, "h", "/held");
    struct fill f = {"still here", NULL, 600, 0, 0, true};
    store(c, &k, &f, T0);
    struct ct_cache_lookup_res held, r;
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &held), CT_CACHE_HIT);
    size_t held_size = ct_obj_size(held.obj);

    /* Flood until the held object is evicted from the table. Each flood
     * object is hit once: with one-hit wonders only, SIEVE would keep the
     * (once visited) held object behind its hand for ever, by design. */
    static char body[2048];
    memset(body, 'f', sizeof(body) - 1);
    for (int i = 0; i < 500; i++) {
        struct tkey kf;
        char path[32];
        snprintf(path, sizeof(path), "/f/%d", i);
        mk_key(&kf, "h", path);
        struct fill ff = {body, NULL, 600, 0, 0, true};
        store(c, &kf, &ff, T0);
        CU_ASSERT_EQUAL(lookup(c, &kf, T0, &r), CT_CACHE_HIT);
        ct_cache_lookup_res_release(&r);
    }
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &r), CT_CACHE_MISS); /* gone from the table */
    ct_obj_fail(r.fetch);
    ct_cache_lookup_res_release(&r);
    CU_ASSERT_TRUE(body_is(held.obj, "still here")); /* but readable */
    CU_ASSERT_TRUE(idle_bytes(c) <= cap);

    ct_cache_purge_prefix(c, CT_STR_NULL); /* empty everything */
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.objects, 1); /* only the held one */
    size_t before = st.bytes;
    CU_ASSERT_TRUE(before >= idle + held_size); /* still counted */
    CU_ASSERT_TRUE(body_is(held.obj, "still here"));
    ct_cache_lookup_res_release(&held); /* the last release frees */
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.objects, 0);
    CU_ASSERT_EQUAL(st.bytes, before - held_size); /* and gives its bytes back */
    ct_cache_free(&c);
}

static void test_max_object_size(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 4096, 1);
    struct tkey k;
    mk_key(&k, "h", "/huge");
    struct ct_cache_lookup_res r;
    CU_ASSERT_FALSE(ct_cache_fits(c, 5000));

    CU_ASSERT_EQUAL(lookup(c, &k, T0, &r), CT_CACHE_MISS);
    struct ct_obj_meta m = {
        .status = 200, .head = CT_STR("H"), .response_time = T0, .ttl = 60, .body_hint = 5000};
    CU_ASSERT_EQUAL(ct_obj_set_head(r.fetch, &m), CT_ELIMIT); /* Content-Length too big */
    CU_ASSERT_EQUAL(ct_obj_state(r.fetch), CT_OBJ_BUSY);
    ct_obj_abandon(r.fetch, T0, 0);
    ct_cache_lookup_res_release(&r);

    /* no Content-Length: appends stop at the limit, nothing partial appended */
    CU_ASSERT_EQUAL(lookup(c, &k, T0, &r), CT_CACHE_MISS);
    m.body_hint = 0;
    CU_ASSERT_EQUAL(ct_obj_set_head(r.fetch, &m), CT_OK);
    static char chunk[1000];
    int ok = 0;
    while (ok < 10 && ct_obj_append(r.fetch, chunk, sizeof(chunk)) == CT_OK)
        ok++;
    CU_ASSERT_TRUE(ok >= 2 && ok < 5);
    CU_ASSERT_EQUAL(ct_obj_append(r.fetch, chunk, SIZE_MAX), CT_ELIMIT); /* no overflow */
    CU_ASSERT_EQUAL(ct_obj_body_len(r.fetch), (uint64_t)ok * sizeof(chunk));
    CU_ASSERT_TRUE(ct_obj_size(r.fetch) <= 4096 + 200);
    ct_obj_fail(r.fetch);
    ct_cache_lookup_res_release(&r);
    ct_cache_free(&c);
}

static void test_expire_sweep(void)
{
    struct ct_cache *c = mk_cache(4 << 20, 64 << 10, 16);
    struct fill shortf = {"s", NULL, 10, 0, 0, true};
    struct fill longf = {"l", NULL, 1000, 0, 0, true};
    for (int i = 0; i < 300; i++) {
        struct tkey k;
        char path[32];
        snprintf(path, sizeof(path), "/%d", i);
        mk_key(&k, "h", path);
        store(c, &k, i % 3 ? &shortf : &longf, T0);
    }
    CU_ASSERT_EQUAL(ct_cache_expire_some(c, T0 + 5, 1000), 0); /* nothing expired yet */
    size_t total = 0;
    for (int round = 0; round < 100 && total < 200; round++) {
        size_t n = ct_cache_expire_some(c, T0 + 11, 50);
        CU_ASSERT_TRUE(n <= 50);
        total += n;
    }
    CU_ASSERT_EQUAL(total, 200);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.objects, 100);
    CU_ASSERT_EQUAL(st.expired, 200);
    ct_cache_free(&c);
}

/* Objects carry their key and the table points at each key's newest
 * variant: removing a middle variant or the head keeps the others reachable
 * and the key counted once; the key goes with its last variant. */
static enum ct_cache_lookup peek(struct ct_cache *c, struct tkey *k, const char *vary,
                                 ct_time_t now, const char *want_body)
{
    struct ct_cache_lookup_req req = {&k->key, ct_str_c(vary), NULL, NULL, true, false, false};
    struct ct_cache_lookup_res r;
    enum ct_cache_lookup kind = ct_cache_lookup(c, &req, now, &r);
    if (kind == CT_CACHE_HIT)
        CU_ASSERT_TRUE(body_is(r.obj, want_body));
    ct_cache_lookup_res_release(&r);
    return kind;
}

static void test_variant_heads(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 1);
    struct tkey k;
    mk_key(&k, "h", "/v3");
    struct fill a = {"a", "A", 100, 0, 0, true}; /* oldest, lasts longest */
    struct fill b = {"b", "B", 10, 0, 0, true};  /* middle, goes first */
    struct fill h = {"c", "C", 20, 0, 0, true};  /* newest: the head, goes second */
    store(c, &k, &a, T0);
    store(c, &k, &b, T0);
    store(c, &k, &h, T0);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.keys, 1);
    CU_ASSERT_EQUAL(st.objects, 3);

    CU_ASSERT_EQUAL(peek(c, &k, "B", T0 + 15, NULL), CT_CACHE_MISS); /* middle reaped */
    CU_ASSERT_EQUAL(peek(c, &k, "A", T0 + 15, "a"), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(peek(c, &k, "C", T0 + 15, "c"), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(peek(c, &k, "C", T0 + 25, NULL), CT_CACHE_MISS); /* head reaped */
    CU_ASSERT_EQUAL(peek(c, &k, "A", T0 + 25, "a"), CT_CACHE_HIT);
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.keys, 1);
    CU_ASSERT_EQUAL(st.objects, 1);
    CU_ASSERT_EQUAL(st.expired, 2);

    /* a new variant becomes the head again, then everything goes */
    store(c, &k, &h, T0 + 25);
    CU_ASSERT_EQUAL(peek(c, &k, "C", T0 + 26, "c"), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(peek(c, &k, "A", T0 + 26, "a"), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(peek(c, &k, "A", T0 + 200, NULL), CT_CACHE_MISS);
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.keys, 0);
    CU_ASSERT_EQUAL(st.objects, 0);
    ct_cache_free(&c);
}

/* Two different keys with the same 64-bit hash (same shard, same slot tag):
 * the key bytes, not the hash, decide; removing one leaves the other. */
static void test_same_hash_keys(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k1, k2, k3;
    mk_key(&k1, "h", "/x");
    mk_key(&k2, "h", "/y");
    mk_key(&k3, "h", "/xy"); /* k1 is a prefix of it */
    k2.key.hash = k3.key.hash = k1.key.hash;
    struct fill f1 = {"one", NULL, 60, 0, 0, true};
    struct fill f2 = {"two", NULL, 60, 0, 0, true};
    store(c, &k1, &f1, T0);
    CU_ASSERT_EQUAL(peek(c, &k2, "", T0, NULL), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(peek(c, &k3, "", T0, NULL), CT_CACHE_MISS);
    store(c, &k2, &f2, T0);
    CU_ASSERT_EQUAL(peek(c, &k1, "", T0, "one"), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(peek(c, &k2, "", T0, "two"), CT_CACHE_HIT);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.keys, 2);
    CU_ASSERT_EQUAL(ct_cache_purge(c, &k1.key), 1);
    CU_ASSERT_EQUAL(peek(c, &k1, "", T0, NULL), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(peek(c, &k2, "", T0, "two"), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(ct_cache_purge(c, &k3.key), 0);
    ct_cache_free(&c);
}

/* Open addressing with backward-shift deletion: after many random removals
 * every remaining key is still found and no removed key is. */
static void test_table_churn(void)
{
    enum { N = 3000 };
    struct ct_cache *c = mk_cache(64 << 20, 4096, 1);
    static struct tkey keys[N];
    static bool present[N];
    struct fill f = {"t", NULL, 600, 0, 0, true};
    for (int i = 0; i < N; i++) {
        char path[32];
        snprintf(path, sizeof(path), "/churn/%d", i);
        mk_key(&keys[i], "h", path);
        store(c, &keys[i], &f, T0);
        present[i] = true;
    }
    unsigned seed = 12345;
    for (int round = 0; round < 4; round++) {
        for (int n = 0; n < N / 3; n++) {
            int i = rand_r(&seed) % N;
            CU_ASSERT_EQUAL(ct_cache_purge(c, &keys[i].key), present[i] ? 1u : 0u);
            present[i] = false;
        }
        for (int i = 0; i < N; i++) {
            struct ct_cache_lookup_req req = {&keys[i].key, CT_STR(""), NULL, NULL, true, false, false};
            struct ct_cache_lookup_res r;
            enum ct_cache_lookup kind = ct_cache_lookup(c, &req, T0, &r);
            CU_ASSERT_EQUAL(kind, present[i] ? CT_CACHE_HIT : CT_CACHE_MISS);
            ct_cache_lookup_res_release(&r);
        }
        for (int i = 0; i < N; i += 7) /* put some back */
            if (!present[i]) {
                store(c, &keys[i], &f, T0);
                present[i] = true;
            }
    }
    size_t left = 0;
    for (int i = 0; i < N; i++)
        left += present[i];
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.keys, left);
    CU_ASSERT_EQUAL(ct_cache_purge_prefix(c, CT_STR_NULL), left); /* the scan sees each once */
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.keys, 0);
    ct_cache_free(&c);
}

/* When every stored object is held by a reader, nothing can be freed: the
 * cap holds and a new miss gets no fetch object (the caller passes). */
static void test_cap_is_hard(void)
{
    const size_t cap = 64 << 10;
    struct ct_cache *c = mk_cache(cap, 8 << 10, 1);
    static char body[4000];
    memset(body, 'h', sizeof(body) - 1);
    struct fill f = {body, NULL, 600, 0, 0, true};
    struct ct_cache_lookup_res held[64];
    int nheld = 0;
    for (int i = 0; i < 64; i++) {
        struct tkey k;
        char path[32];
        snprintf(path, sizeof(path), "/held/%d", i);
        mk_key(&k, "h", path);
        struct ct_cache_lookup_res r;
        if (lookup(c, &k, T0, &r) != CT_CACHE_MISS || !r.fetch) {
            ct_cache_lookup_res_release(&r);
            break;
        }
        struct ct_obj_meta m = {.status = 200,
                                .head = CT_STR("H"),
                                .response_time = T0,
                                .ttl = 600,
                                .body_hint = sizeof(body)};
        if (ct_obj_set_head(r.fetch, &m) != CT_OK) {
            ct_obj_abandon(r.fetch, T0, 0);
            ct_cache_lookup_res_release(&r);
            break;
        }
        CU_ASSERT_EQUAL(ct_obj_append(r.fetch, body, sizeof(body)), CT_OK);
        ct_obj_complete(r.fetch, T0);
        held[nheld++] = r; /* keep the fetcher's reference */
        struct ct_cache_stats st;
        ct_cache_stats(c, &st);
        CU_ASSERT_TRUE_FATAL(st.bytes <= cap);
    }
    CU_ASSERT_TRUE(nheld >= 10 && nheld < 17);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_TRUE(st.nomem > 0);
    CU_ASSERT_TRUE(st.bytes <= cap);
    for (int i = 0; i < nheld; i++)
        ct_cache_lookup_res_release(&held[i]);
    ct_cache_free(&c);
    (void)f;
}

/* What a miss found under the key (RFC 9211 fwd=uri-miss / vary-miss / miss),
 * and a lookup that must revalidate a fresh match (request no-cache). */
static void test_miss_kind_and_revalidate(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 4);
    struct tkey k;
    mk_key(&k, "h", "/mk");
    struct ct_cache_lookup_res r1, r2;
    CU_ASSERT_EQUAL(lookup_v(c, &k, "gzip", T0, &r1), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(r1.miss, CT_CACHE_MISS_URI); /* nothing under the key */
    struct fill gz = {"gzip body", "gzip", 10, 0, 0, true};
    fill_obj(r1.fetch, &gz, T0);
    ct_cache_lookup_res_release(&r1);
    /* another variant: the URI is there, the request selects nothing */
    CU_ASSERT_EQUAL(lookup_v(c, &k, "br", T0 + 1, &r1), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(r1.miss, CT_CACHE_MISS_VARY);
    /* a variant being stored (head in) counts too */
    struct fill br = {"br body", "br", 10, 0, 0, true};
    set_head(r1.fetch, &br, T0 + 1);
    CU_ASSERT_EQUAL(lookup_v(c, &k, "zstd", T0 + 1, &r2), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(r2.miss, CT_CACHE_MISS_VARY);
    ct_obj_fail(r2.fetch);
    ct_cache_lookup_res_release(&r2);
    ct_obj_fail(r1.fetch);
    ct_cache_lookup_res_release(&r1);
    /* a hit leaves the field alone */
    CU_ASSERT_EQUAL(lookup_v(c, &k, "gzip", T0 + 1, &r1), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(r1.miss, CT_CACHE_MISS_URI);
    ct_cache_lookup_res_release(&r1);

    /* revalidate: the fresh match comes back STALE with the one fetch; a
     * second such lookup waits on it; a plain lookup still hits */
    struct ct_cache_lookup_req rq = {&k.key, CT_STR("gzip"), NULL, NULL, false, true, false};
    CU_ASSERT_EQUAL(ct_cache_lookup(c, &rq, T0 + 2, &r1), CT_CACHE_STALE);
    CU_ASSERT_PTR_NOT_NULL(r1.obj);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r1.fetch);
    CU_ASSERT_PTR_NULL(r1.busy);
    CU_ASSERT_TRUE(ct_obj_is_fresh(r1.obj, T0 + 2));
    CU_ASSERT_EQUAL(ct_cache_lookup(c, &rq, T0 + 2, &r2), CT_CACHE_STALE);
    CU_ASSERT_PTR_EQUAL(r2.busy, r1.fetch);
    CU_ASSERT_PTR_NULL(r2.fetch);
    ct_cache_lookup_res_release(&r2);
    CU_ASSERT_EQUAL(lookup_v(c, &k, "gzip", T0 + 2, &r2), CT_CACHE_HIT);
    CU_ASSERT_PTR_EQUAL(r2.obj, r1.obj);
    ct_cache_lookup_res_release(&r2);
    /* the 200 that answers it replaces the stored variant */
    struct fill gz2 = {"gzip v2", "gzip", 10, 0, 0, true};
    fill_obj(r1.fetch, &gz2, T0 + 2);
    ct_cache_lookup_res_release(&r1);
    CU_ASSERT_EQUAL(lookup_v(c, &k, "gzip", T0 + 3, &r1), CT_CACHE_HIT);
    CU_ASSERT_TRUE(body_is(r1.obj, "gzip v2"));
    ct_cache_lookup_res_release(&r1);

    /* expired past ttl + grace + keep and reaped by this lookup: "miss", the
     * request selected a response that could not be used */
    CU_ASSERT_EQUAL(lookup_v(c, &k, "gzip", T0 + 100, &r1), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(r1.miss, CT_CACHE_MISS_OTHER);
    ct_obj_fail(r1.fetch);
    ct_cache_lookup_res_release(&r1);
    /* once reaped, nothing is left to say: uri-miss */
    CU_ASSERT_EQUAL(lookup_v(c, &k, "gzip", T0 + 100, &r1), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(r1.miss, CT_CACHE_MISS_URI);
    ct_obj_fail(r1.fetch);
    ct_cache_lookup_res_release(&r1);
    ct_cache_free(&c);
}

/* The whole body of OBJ equals WANT[0..N) (any size). */
static bool body_equals(const struct ct_obj *obj, const char *want, size_t n)
{
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str chunk;
    size_t at = 0;
    enum ct_obj_body r;
    while ((r = ct_obj_body_next(obj, &pos, 0, &chunk)) == CT_OBJ_BODY_DATA) {
        if (at + chunk.len > n || memcmp(want + at, chunk.p, chunk.len) != 0)
            return false;
        at += chunk.len;
    }
    return r == CT_OBJ_BODY_END && at == n;
}

/* The file behind a mapped body holds exactly the body at the given offset. */
static bool fd_holds(int fd, off_t off, const char *want, size_t n)
{
    char *buf = malloc(n);
    bool ok = buf && pread(fd, buf, n, off) == (ssize_t)n && memcmp(buf, want, n) == 0;
    free(buf);
    return ok;
}

/* Store a complete object with a Content-Length body BODY[0..N) under TARGET;
 * returns it (one reference) for inspection. */
static struct ct_obj *store_big(struct ct_cache *c, const char *target, const char *body, size_t n,
                                bool hint)
{
    struct tkey k;
    mk_key(&k, "h", target);
    struct ct_cache_lookup_res r;
    CU_ASSERT_EQUAL_FATAL(lookup(c, &k, T0, &r), CT_CACHE_MISS);
    struct ct_obj_meta m = {.status = 200,
                            .head = CT_STR("HTTP/1.1 200 OK\r\n"),
                            .response_time = T0,
                            .ttl = 60,
                            .keep = 100,
                            .body_hint = hint ? n : 0};
    CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(r.fetch, &m), CT_OK);
    off_t off;
    CU_ASSERT_EQUAL(ct_obj_body_fd(r.fetch, &off), -1); /* not while it fills */
    CU_ASSERT_EQUAL_FATAL(ct_obj_append(r.fetch, body, n / 2), CT_OK);
    CU_ASSERT_EQUAL_FATAL(ct_obj_append(r.fetch, body + n / 2, n - n / 2), CT_OK);
    CU_ASSERT_EQUAL(ct_obj_body_fd(r.fetch, &off), -1);
    ct_obj_complete(r.fetch, T0);
    struct ct_obj *obj = ct_obj_ref(r.fetch);
    ct_cache_lookup_res_release(&r);
    return obj;
}

/* Content-Length bodies of CT_CACHE_MAPPED_MIN bytes and more live in a memfd
 * that plain-HTTP hits sendfile() from: the file holds exactly the body,
 * only once the object is complete; a 304's new head shares it; the pages are
 * counted whole and given back, the file closed with the last reference.
 * Small bodies and bodies without a length stay on the heap, and so do bodies
 * past the descriptor budget (a quarter of RLIMIT_NOFILE), served alike. */
static void test_mapped_bodies(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 16 << 20, 4);
    size_t idle = idle_bytes(c);
    size_t n = 100 * 1024 + 7;
    char *body = malloc(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(body);
    for (size_t i = 0; i < n; i++)
        body[i] = (char)('a' + i % 23);

    struct ct_obj *big = store_big(c, "/big", body, n, true);
    off_t off;
    int fd = ct_obj_body_fd(big, &off);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_TRUE(fd_holds(fd, off, body, n));
    CU_ASSERT_TRUE(body_equals(big, body, n));
    size_t used = idle_bytes(c) - idle;
    CU_ASSERT(used >= n && used % 4096 < 1024); /* whole pages, plus the struct and key */

    /* a 304 keeps serving the same file through its new head */
    struct tkey k;
    mk_key(&k, "h", "/big");
    struct ct_cache_lookup_res r;
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 100, &r), CT_CACHE_STALE);
    struct ct_obj_meta m = {.status = 200,
                            .head = CT_STR("HTTP/1.1 200 OK\r\nX-New: 1\r\n"),
                            .response_time = T0 + 100,
                            .ttl = 60,
                            .body_src = r.obj};
    CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(r.fetch, &m), CT_OK);
    ct_obj_complete(r.fetch, T0 + 100);
    off_t off2;
    CU_ASSERT_EQUAL(ct_obj_body_fd(r.fetch, &off2), fd);
    CU_ASSERT_EQUAL(off2, off);
    ct_cache_lookup_res_release(&r);

    /* small, or without a length: the heap */
    struct ct_obj *small = store_big(c, "/small", body, 64 * 1024 - 1, true);
    CU_ASSERT_EQUAL(ct_obj_body_fd(small, &off2), -1);
    CU_ASSERT_TRUE(body_equals(small, body, 64 * 1024 - 1));
    struct ct_obj *nolen = store_big(c, "/nolen", body, n, false);
    CU_ASSERT_EQUAL(ct_obj_body_fd(nolen, &off2), -1);
    CU_ASSERT_TRUE(body_equals(nolen, body, n));
    ct_obj_release(&small);
    ct_obj_release(&nolen);

    /* a bound (an encoded body, at most its origin's length): one run of a
     * file for the body that came, and what it left back to the cap */
    {
        struct tkey kb;
        mk_key(&kb, "h", "/bound");
        struct ct_cache_lookup_res rb;
        CU_ASSERT_EQUAL_FATAL(lookup(c, &kb, T0, &rb), CT_CACHE_MISS);
        size_t before = idle_bytes(c);
        struct ct_obj_meta mb = {.status = 200, .head = CT_STR("HTTP/1.1 200 OK\r\n"),
                                 .response_time = T0, .ttl = 60,
                                 .body_hint = 1 << 20, .body_hint_max = true};
        CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(rb.fetch, &mb), CT_OK);
        CU_ASSERT(idle_bytes(c) - before >= (1 << 20)); /* the bound, while it fills */
        CU_ASSERT_EQUAL_FATAL(ct_obj_append(rb.fetch, body, n), CT_OK);
        ct_obj_complete(rb.fetch, T0);
        size_t kept = idle_bytes(c) - before;
        CU_ASSERT(kept >= n && kept < n + 3 * 4096); /* the body's pages and the blob's */
        off_t offb;
        int fdb = ct_obj_body_fd(rb.fetch, &offb);
        CU_ASSERT_FATAL(fdb >= 0);
        CU_ASSERT_TRUE(fd_holds(fdb, offb, body, n));
        CU_ASSERT_TRUE(body_equals(rb.fetch, body, n));
        ct_cache_lookup_res_release(&rb);
        /* a bound below the mapping size: nothing reserved for it, the heap */
        mk_key(&kb, "h", "/bound-small");
        CU_ASSERT_EQUAL_FATAL(lookup(c, &kb, T0, &rb), CT_CACHE_MISS);
        mb.body_hint = 32 * 1024;
        before = idle_bytes(c);
        CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(rb.fetch, &mb), CT_OK);
        CU_ASSERT(idle_bytes(c) - before < 4096);
        CU_ASSERT_EQUAL_FATAL(ct_obj_append(rb.fetch, body, 1000), CT_OK);
        ct_obj_complete(rb.fetch, T0);
        CU_ASSERT_EQUAL(ct_obj_body_fd(rb.fetch, &offb), -1);
        CU_ASSERT_TRUE(body_equals(rb.fetch, body, 1000));
        ct_cache_lookup_res_release(&rb);
        CU_ASSERT(ct_cache_purge(c, &kb.key) >= 1);
        mk_key(&kb, "h", "/bound");
        CU_ASSERT(ct_cache_purge(c, &kb.key) >= 1); /* its descriptor goes: the budget below */
    }

    /* gone with the last reference: the file is closed, the bytes given back */
    CU_ASSERT(ct_cache_purge(c, &k.key) >= 1);
    CU_ASSERT_NOT_EQUAL(fcntl(fd, F_GETFD), -1); /* still open: we hold a reference */
    ct_obj_release(&big);
    errno = 0;
    CU_ASSERT_EQUAL(fcntl(fd, F_GETFD), -1);
    CU_ASSERT_EQUAL(errno, EBADF);

    /* the descriptor budget: with a soft limit of 64, 16 mapped bodies */
    struct rlimit old, low;
    CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 64;
    CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_NOFILE, &low), 0);
    struct ct_obj *objs[20];
    int mapped = 0;
    for (int i = 0; i < 20; i++) {
        char target[16];
        snprintf(target, sizeof(target), "/b%d", i);
        objs[i] = store_big(c, target, body, n, true);
        mapped += ct_obj_body_fd(objs[i], &off2) >= 0;
        CU_ASSERT_TRUE(body_equals(objs[i], body, n));
    }
    CU_ASSERT_EQUAL(mapped, 16);
    CU_ASSERT_EQUAL(setrlimit(RLIMIT_NOFILE, &old), 0);
    for (int i = 0; i < 20; i++)
        ct_obj_release(&objs[i]);
    ct_cache_free(&c);
    free(body);
}

void ct_test_register(void)
{
    CT_SUITE(
        "cache_store", {"config validation", test_config}, {"insert, lookup, hit", test_insert_hit},
        {"body chunks and seek", test_body_chunks_and_seek}, {"variants (Vary)", test_variants},
        {"busy coalescing and streaming", test_busy_coalescing}, {"unwait", test_unwait},
        {"wait for the end", test_wait_for_end},
        {"failed fetch never served", test_failed_never_served},
        {"abandon and hit-for-miss", test_abandon_hit_for_miss},
        {"fresh, stale, expired", test_fresh_stale_expired}, {"no_insert lookups", test_no_insert},
        {"orphaned fetch is failed", test_orphaned_fetch},
        {"variants per key are capped", test_max_variants},
        {"304 shares the body", test_revalidate_shares_body},
        {"fetch cost: set, read by hits, kept by a 304, capped", test_fetch_cost},
        {"purge exact, prefix, during busy", test_purge_exact_prefix_busy},
        {"eviction under the cap", test_eviction_under_cap},
        {"reader survives eviction and purge", test_reader_survives_eviction_and_purge},
        {"max_object_size", test_max_object_size}, {"incremental expiry sweep", test_expire_sweep},
        {"table churn (open addressing)", test_table_churn},
        {"variant heads: middle and head removed", test_variant_heads},
        {"same hash, different keys", test_same_hash_keys},
        {"cap is hard when all is held", test_cap_is_hard},
        {"miss kind (RFC 9211) and revalidate lookups", test_miss_kind_and_revalidate},
        {"large bodies in a memfd (sendfile)", test_mapped_bodies},
        {"a lookup answered from another variant counts one hit", test_answered_from_another_variant});
}
