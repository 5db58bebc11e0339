/*
 * tests/unit/test_cache_evict.c: the eviction policies on synthetic traces
 * (issue 46). One shard, so the trace is the queue's order; objects of one
 * size, so a fetch cost is its cost per byte.
 *   - cost: a slow object hit twice outlives many fast objects hit once,
 *     which SIEVE keeps instead, and still ages out (GreedyDual's rising L);
 *   - cost: a fast popular object is not starved by slow objects;
 *   - both: the bytes stay under the cap and go back to the empty store's
 *     (plus its grown key table) after a purge of everything; an unknown
 *     policy is refused. (A reload keeps the store: cache.eviction, like
 *     cache.size, changes only at a restart, proxy/ops/reload.c warns.)
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/test_cache_helpers.h"

#define CAP (256u << 10)
#define FAST_US 1000u     /* 1 ms fetches */
#define SLOW_US 500000u   /* 500 ms */

static char body[1024];

static struct ct_cache *mk(enum ct_cache_evict evict)
{
    memset(body, 'c', sizeof(body) - 1);
    struct ct_cache_config cfg = {
        .max_bytes = CAP, .max_object_size = 8 << 10, .shards = 1, .evict = evict};
    struct ct_cache *c = ct_cache_new(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

/* Fill NAME as the proxy does: head, body, its fetch cost, complete. */
static void fill_cost(struct ct_cache *c, const char *name, uint32_t fetch_us)
{
    struct tkey k;
    mk_key(&k, "h", name);
    struct ct_cache_lookup_res r;
    CU_ASSERT_EQUAL_FATAL(lookup(c, &k, T0, &r), CT_CACHE_MISS);
    struct fill f = {body, NULL, 600, 0, 0, true};
    set_head(r.fetch, &f, T0);
    CU_ASSERT_EQUAL_FATAL(ct_obj_append(r.fetch, body, strlen(body)), CT_OK);
    ct_obj_set_fetch_us(r.fetch, fetch_us);
    ct_obj_complete(r.fetch, T0);
    ct_cache_lookup_res_release(&r);
}

/* A lookup of NAME: true on a hit (a miss's fetch slot is failed). */
static bool hit(struct ct_cache *c, const char *name)
{
    struct tkey k;
    mk_key(&k, "h", name);
    struct ct_cache_lookup_res r;
    bool h = lookup(c, &k, T0, &r) == CT_CACHE_HIT;
    if (r.fetch)
        ct_obj_fail(r.fetch);
    ct_cache_lookup_res_release(&r);
    return h;
}

/* N objects /TAG/I, each hit HITS times as it is stored. */
static void flood(struct ct_cache *c, const char *tag, int from, int n, uint32_t fetch_us,
                  int hits)
{
    char name[48];
    for (int i = from; i < from + n; i++) {
        snprintf(name, sizeof(name), "/%s/%d", tag, i);
        fill_cost(c, name, fetch_us);
        for (int h = 0; h < hits; h++)
            CU_ASSERT_TRUE(hit(c, name));
        CU_ASSERT_TRUE_FATAL(idle_bytes(c) <= CAP);
    }
}

static size_t objects(struct ct_cache *c)
{
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    return st.objects;
}

/* The trace: the store full of fast objects, one slow object hit twice,
 * then 3 stores' worth of fast objects hit once each (with one-hit objects
 * SIEVE would keep it too: its hand never wraps while each new object is
 * the next victim). Returns whether the slow one is still there; *AGED_OUT:
 * gone after MORE stores' worth more without a hit. */
static bool slow_survives(enum ct_cache_evict evict, int more, bool *aged_out)
{
    struct ct_cache *c = mk(evict);
    flood(c, "warm", 0, 400, FAST_US, 0);
    size_t held = objects(c); /* about 200: the queue's length */
    CU_ASSERT_TRUE(held > 100 && held < 260);
    fill_cost(c, "/slow", SLOW_US);
    CU_ASSERT_TRUE(hit(c, "/slow"));
    CU_ASSERT_TRUE(hit(c, "/slow"));
    flood(c, "two-hit", 0, (int)held * 3, FAST_US, 1);
    bool survived = hit(c, "/slow");
    /* no more hits: it is not kept forever (15 lives, one a pass) */
    flood(c, "later", 0, (int)held * more, FAST_US, 1);
    *aged_out = !hit(c, "/slow");
    ct_cache_free(&c);
    return survived;
}

static void test_slow_outlives_fast(void)
{
    bool aged;
    CU_ASSERT_FALSE(slow_survives(CT_CACHE_EVICT_SIEVE, 1, &aged)); /* recency alone */
    CU_ASSERT_TRUE(aged);
    CU_ASSERT_TRUE(slow_survives(CT_CACHE_EVICT_COST, 20, &aged));
    CU_ASSERT_TRUE(aged);
}

/* A fast object hit between every store of slow one-hit objects: visited at
 * every pass, it is never the victim, however costly the others are; and
 * among fast ones, the same. */
static void test_fast_popular_not_starved(void)
{
    struct ct_cache *c = mk(CT_CACHE_EVICT_COST);
    fill_cost(c, "/hot", FAST_US);
    int hits = 0;
    char name[48];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "/slow/%d", i);
        fill_cost(c, name, i % 2 ? SLOW_US : SLOW_US * 8); /* two slow classes */
        hits += hit(c, "/hot");
    }
    CU_ASSERT_EQUAL(hits, 2000);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    CU_ASSERT_TRUE(st.evictions > 1500); /* the slow ones did go */
    ct_cache_free(&c);
}

/* Bytes: under the cap through eviction (flood() asserts it at each store),
 * and back to the empty store's (plus its grown key table) after a purge of
 * everything, the same after the trace again; an unknown policy refused. */
static void test_accounting(void)
{
    for (int e = CT_CACHE_EVICT_SIEVE; e <= CT_CACHE_EVICT_COST; e++) {
        struct ct_cache *c = mk((enum ct_cache_evict)e);
        size_t empty = idle_bytes(c);
        flood(c, "a", 0, 300, FAST_US, 0);
        flood(c, "b", 0, 300, SLOW_US, 1);
        fill_cost(c, "/kept", SLOW_US);
        CU_ASSERT_TRUE(hit(c, "/kept"));
        struct ct_cache_stats st;
        ct_cache_stats(c, &st);
        CU_ASSERT_TRUE(st.evictions >= 300);
        CU_ASSERT_TRUE(st.bytes > CAP / 2 && st.bytes <= CAP);
        CU_ASSERT_EQUAL(ct_cache_purge_prefix(c, CT_STR_NULL), st.objects);
        ct_cache_reclaim(c, SIZE_MAX); /* what the lurker thread frees of a large purge */
        ct_cache_stats(c, &st);
        CU_ASSERT_EQUAL(st.objects, 0);
        /* what is left is the key table's slot arrays, which grow and never
         * shrink (cache_table.c): a few KiB over the empty store's */
        size_t left = st.bytes;
        CU_ASSERT_TRUE(left >= empty && left <= empty + (16u << 10));
        /* the store works on the same way, and the same trace leaves the
         * same bytes behind: the policy holds none of its own */
        flood(c, "c", 0, 300, FAST_US, 0);
        flood(c, "d", 0, 300, SLOW_US, 1);
        CU_ASSERT_TRUE(idle_bytes(c) <= CAP);
        ct_cache_purge_prefix(c, CT_STR_NULL);
        ct_cache_reclaim(c, SIZE_MAX);
        CU_ASSERT_EQUAL(idle_bytes(c), left);
        ct_cache_free(&c);
    }
    struct ct_cache_config bad = {.max_bytes = CAP, .max_object_size = 8 << 10, .evict = 7};
    CU_ASSERT_PTR_NULL(ct_cache_new(&bad));
}

void ct_test_register(void)
{
    CT_SUITE("cache_evict",
             {"cost: a slow object hit twice outlives fast objects hit once, then ages out",
              test_slow_outlives_fast},
             {"cost: a fast popular object is not starved by slow ones",
              test_fast_popular_not_starved},
             {"bytes under eviction and purge, both policies", test_accounting});
}
