/*
 * tests/unit/test_cache_threads.c: the store from several threads at once
 * (bounded loops; run under ASan/UBSan and the CT_TSAN=ON build).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache/cache.h"
#include "tests/unit/ct_test.h"
#include "tests/unit/test_cache_helpers.h"

/* ---- threads ----------------------------------------------------------------- */

#define NTHREADS 4
#define NKEYS 300
#define ITERS 40000

struct worker {
    struct ct_cache *c;
    unsigned seed;
    unsigned long hits, bad;
};

static void key_body(int i, char *buf, size_t cap)
{
    snprintf(buf, cap, "body of key %d, repeated: %d %d %d %d", i, i, i, i, i);
}

static void thread_fetch(struct worker *wk, struct ct_obj *fetch, int i, unsigned r, double now)
{
    char body[128];
    key_body(i, body, sizeof(body));
    if (r % 17 == 0) {
        ct_obj_abandon(fetch, now, 0.01);
        return;
    }
    struct ct_obj_meta m = {.status = 200,
                            .head = CT_STR("HTTP/1.1 200 OK\r\n"),
                            .response_time = now,
                            .ttl = 0.05,
                            .grace = 0.02,
                            .body_hint = (r & 1) ? strlen(body) : 0};
    if (ct_obj_set_head(fetch, &m) != CT_OK) {
        ct_obj_abandon(fetch, now, 0);
        return;
    }
    size_t half = strlen(body) / 2;
    if (ct_obj_append(fetch, body, half) != CT_OK || r % 13 == 0 ||
        ct_obj_append(fetch, body + half, strlen(body) - half) != CT_OK) {
        ct_obj_fail(fetch);
        return;
    }
    ct_obj_set_fetch_us(fetch, 1000 + (unsigned)(i % 7) * 70000); /* the cost policy's input */
    ct_obj_complete(fetch, now);
}

static void thread_read(struct worker *wk, struct ct_obj *obj, int i)
{
    char want[128];
    key_body(i, want, sizeof(want));
    if (!body_is(obj, want))
        wk->bad++;
}

static atomic_int thread_wakes;

static void on_thread_wake(void *arg)
{
    atomic_fetch_add(&thread_wakes, 1);
}

/* Stream what a busy object holds so far (lock-free read against the
 * fetcher's appends), check it is a prefix of the right body, and wait/unwait
 * like a client that times out. */
static void thread_stream(struct worker *wk, struct ct_obj *busy, int i)
{
    char want[128];
    key_body(i, want, sizeof(want));
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str ch;
    enum ct_obj_state st = ct_obj_state(busy);
    enum ct_obj_body r;
    while ((r = ct_obj_body_next(busy, &pos, 7, &ch)) == CT_OBJ_BODY_DATA) {
        if (pos.off > strlen(want) || memcmp(ch.p, want + pos.off - ch.len, ch.len) != 0) {
            wk->bad++;
            return;
        }
    }
    if (r == CT_OBJ_BODY_END && pos.off != strlen(want))
        wk->bad++;
    struct ct_cache_waiter w;
    ct_cache_waiter_init(&w, on_thread_wake, NULL);
    if (ct_obj_wait(busy, &w, st, pos.off))
        ct_obj_unwait(&w);
}

static void *thread_main(void *arg)
{
    struct worker *wk = arg;
    for (int it = 0; it < ITERS; it++) {
        unsigned r = (unsigned)rand_r(&wk->seed);
        int i = (int)(r % NKEYS);
        double now = T0 + it * 0.0005; /* each thread's clock moves on */
        struct tkey k;
        char path[32];
        snprintf(path, sizeof(path), "/k/%d", i);
        struct ct_cache_key_opts o = {.query = CT_CACHE_QUERY_KEEP, .header_name = {NULL, 0}};
        struct ct_cache_key_in in = {
            CT_CACHE_MCLASS_GET, CT_STR("h"), 80, ct_str_c(path), {NULL, 0}, {NULL, 0}};
        if (ct_cache_key_build(&o, &in, k.buf, sizeof(k.buf), &k.key) != CT_OK)
            abort();
        if (r % 997 == 0) {
            ct_cache_purge(wk->c, &k.key);
            continue;
        }
        if (r % 1999 == 0) {
            ct_cache_expire_some(wk->c, now, 64);
            continue;
        }
        struct ct_cache_lookup_res res;
        struct ct_cache_lookup_req req = {&k.key, CT_STR(""), NULL, NULL, false, false, false};
        enum ct_cache_lookup kind = ct_cache_lookup(wk->c, &req, now, &res);
        if (res.obj) {
            thread_read(wk, res.obj, i);
            wk->hits += kind == CT_CACHE_HIT;
        }
        if (res.busy)
            thread_stream(wk, res.busy, i);
        if (res.fetch)
            thread_fetch(wk, res.fetch, i, r >> 8, now);
        ct_cache_lookup_res_release(&res);
    }
    return NULL;
}

static void threads_run(enum ct_cache_evict evict)
{
    const size_t cap = 96 << 10; /* small: eviction runs all the time */
    struct ct_cache_config cfg = {
        .max_bytes = cap, .max_object_size = 4 << 10, .shards = 8, .evict = evict};
    struct ct_cache *c = ct_cache_new(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pthread_t th[NTHREADS];
    struct worker wk[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        wk[t] = (struct worker){c, (unsigned)t * 7919 + 1, 0, 0};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[t], NULL, thread_main, &wk[t]), 0);
    }
    unsigned long hits = 0, bad = 0;
    struct ct_cache_stats st;
    for (int t = 0; t < NTHREADS; t++) {
        ct_cache_stats(c, &st); /* readable while they run */
        CU_ASSERT_TRUE(st.bytes <= cap);
        pthread_join(th[t], NULL);
        hits += wk[t].hits;
        bad += wk[t].bad;
    }
    ct_cache_stats(c, &st);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_TRUE(hits > 0);
    if (getenv("CT_TEST_VERBOSE"))
        fprintf(stderr, "threads: hits %lu busy %lu stale %lu miss %lu pass %lu ev %lu wakes %d\n",
                (unsigned long)st.hits, (unsigned long)st.busy, (unsigned long)st.stale,
                (unsigned long)st.misses, (unsigned long)st.pass, (unsigned long)st.evictions,
                atomic_load(&thread_wakes));
    CU_ASSERT_TRUE(st.evictions > 0);
    CU_ASSERT_TRUE(st.bytes <= cap);
    CU_ASSERT_EQUAL(st.lookups, st.hits + st.misses + st.stale + st.busy + st.pass);
    ct_cache_free(&c); /* asserts every object came back */
}

static void test_threads(void)
{
    threads_run(CT_CACHE_EVICT_SIEVE);
}

/* The same with cache.eviction = cost: the hand's lives beside the hits'
 * bit in one byte, the mean cost written by every completing thread. */
static void test_threads_cost(void)
{
    threads_run(CT_CACHE_EVICT_COST);
}

/* Streaming while fetching across threads: one fetcher appends a body in
 * many pieces; readers that found the object BUSY stream it as it fills,
 * sleeping on a condition variable that the wake callback signals (what an
 * event loop does with an eventfd), and must read the exact body. */
#define STREAM_READERS 3
#define STREAM_PIECES 2000

struct stream_reader {
    struct ct_cache *c;
    struct tkey *k;
    pthread_mutex_t mtx;
    pthread_cond_t cond;
    bool woken;
    size_t got;
    bool ok;
};

static void stream_wake(void *arg)
{
    struct stream_reader *r = arg;
    pthread_mutex_lock(&r->mtx);
    r->woken = true;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->mtx);
}

static char piece_byte(size_t off)
{
    return (char)('A' + (off * 7 + off / 13) % 26);
}

static void *stream_reader_main(void *arg)
{
    struct stream_reader *r = arg;
    struct ct_cache_lookup_res res;
    struct ct_cache_lookup_req req = {&r->k->key, CT_STR(""), NULL, NULL, true, false, false};
    enum ct_cache_lookup kind = ct_cache_lookup(r->c, &req, T0, &res);
    struct ct_obj *obj = kind == CT_CACHE_BUSY ? res.busy : res.obj;
    if (!obj) {
        ct_cache_lookup_res_release(&res);
        return NULL;
    }
    struct ct_cache_waiter w;
    ct_cache_waiter_init(&w, stream_wake, r);
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    r->ok = true;
    for (int rounds = 0; rounds < 1000000; rounds++) {
        enum ct_obj_state st = ct_obj_state(obj);
        struct ct_str ch;
        enum ct_obj_body b;
        while ((b = ct_obj_body_next(obj, &pos, 0, &ch)) == CT_OBJ_BODY_DATA)
            for (size_t i = 0; i < ch.len; i++)
                r->ok = r->ok && ch.p[i] == piece_byte(pos.off - ch.len + i);
        if (b == CT_OBJ_BODY_END || b == CT_OBJ_BODY_FAILED)
            break;
        pthread_mutex_lock(&r->mtx);
        r->woken = false;
        pthread_mutex_unlock(&r->mtx);
        if (!ct_obj_wait(obj, &w, st, pos.off))
            continue; /* something new already */
        pthread_mutex_lock(&r->mtx);
        while (!r->woken)
            pthread_cond_wait(&r->cond, &r->mtx);
        pthread_mutex_unlock(&r->mtx);
    }
    r->got = pos.off;
    ct_obj_unwait(&w);
    ct_cache_lookup_res_release(&res);
    return NULL;
}

static void test_stream_threads(void)
{
    struct ct_cache *c = mk_cache(16 << 20, 4 << 20, 4);
    struct tkey k;
    mk_key(&k, "h", "/stream");
    struct ct_cache_lookup_res f;
    CU_ASSERT_EQUAL_FATAL(lookup(c, &k, T0, &f), CT_CACHE_MISS);

    pthread_t th[STREAM_READERS];
    struct stream_reader rd[STREAM_READERS];
    for (int i = 0; i < STREAM_READERS; i++) {
        rd[i] = (struct stream_reader){.c = c, .k = &k};
        pthread_mutex_init(&rd[i].mtx, NULL);
        pthread_cond_init(&rd[i].cond, NULL);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, stream_reader_main, &rd[i]), 0);
    }
    struct fill fl = {"", NULL, 60, 0, 0, false};
    set_head(f.fetch, &fl, T0);
    char piece[97];
    size_t off = 0;
    for (int p = 0; p < STREAM_PIECES; p++) {
        size_t n = 1 + (size_t)p % sizeof(piece);
        for (size_t i = 0; i < n; i++)
            piece[i] = piece_byte(off + i);
        CU_ASSERT_EQUAL_FATAL(ct_obj_append(f.fetch, piece, n), CT_OK);
        off += n;
    }
    ct_obj_complete(f.fetch, T0);
    for (int i = 0; i < STREAM_READERS; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_TRUE(rd[i].ok);
        CU_ASSERT_EQUAL(rd[i].got, off); /* BUSY or HIT, every reader got all of it */
        pthread_cond_destroy(&rd[i].cond);
        pthread_mutex_destroy(&rd[i].mtx);
    }
    ct_cache_lookup_res_release(&f);
    ct_cache_free(&c);
}

void ct_test_register(void)
{
    CT_SUITE("cache_threads", {"4 threads insert/lookup/release", test_threads},
             {"4 threads, cost eviction", test_threads_cost},
             {"streaming to 3 reader threads while fetching", test_stream_threads});
}
