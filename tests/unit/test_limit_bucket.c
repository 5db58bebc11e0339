/*
 * tests/unit/test_limit_bucket.c: per-client limits (proxy/limit/): the
 * token bucket's burst, refill and Retry-After, in-flight counts, scopes
 * and addresses kept apart, bounded memory under a flood of addresses, and
 * two threads sharing one bucket.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/limit/limit.h"
#include "tests/unit/ct_test.h"

static const uint8_t a1[4] = {192, 0, 2, 1}, a2[4] = {192, 0, 2, 2};
static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};

static void test_bucket(void)
{
    struct ct_limit_table *t = ct_limit_table_new(1024);
    struct ct_limit_key k = {1, AF_INET, a1};
    unsigned ra = 0;
    /* rate 2/s, burst 5: five at once, then one every half second */
    for (int i = 0; i < 5; i++)
        CU_ASSERT_TRUE(ct_limit_take(t, &k, 2, 5, 100.0, &ra));
    CU_ASSERT_FALSE(ct_limit_take(t, &k, 2, 5, 100.0, &ra));
    CU_ASSERT_EQUAL(ra, 1);
    CU_ASSERT_FALSE(ct_limit_take(t, &k, 2, 5, 100.2, &ra));
    CU_ASSERT_TRUE(ct_limit_take(t, &k, 2, 5, 100.5, &ra));
    CU_ASSERT_FALSE(ct_limit_take(t, &k, 2, 5, 100.6, &ra));
    /* a slow rate says how long */
    struct ct_limit_key ks = {2, AF_INET, a1};
    CU_ASSERT_TRUE(ct_limit_take(t, &ks, 0.1, 1, 100.0, &ra));
    CU_ASSERT_FALSE(ct_limit_take(t, &ks, 0.1, 1, 101.0, &ra));
    CU_ASSERT_EQUAL(ra, 9);
    /* idle long enough: full burst again, never more */
    for (int i = 0; i < 5; i++)
        CU_ASSERT_TRUE(ct_limit_take(t, &k, 2, 5, 1000.0, &ra));
    CU_ASSERT_FALSE(ct_limit_take(t, &k, 2, 5, 1000.0, &ra));
    /* another address, another scope, an IPv6 address: their own buckets */
    struct ct_limit_key o = {1, AF_INET, a2}, s2 = {3, AF_INET, a1}, k6 = {1, AF_INET6, v6};
    CU_ASSERT_TRUE(ct_limit_take(t, &o, 2, 5, 1000.0, &ra));
    CU_ASSERT_TRUE(ct_limit_take(t, &s2, 2, 5, 1000.0, &ra));
    CU_ASSERT_TRUE(ct_limit_take(t, &k6, 2, 1, 1000.0, &ra));
    CU_ASSERT_FALSE(ct_limit_take(t, &k6, 2, 1, 1000.0, &ra));
    ct_limit_table_free(&t);
}

static void test_inflight(void)
{
    struct ct_limit_table *t = ct_limit_table_new(64);
    struct ct_limit_key k = {1, AF_INET, a1};
    CU_ASSERT_TRUE(ct_limit_enter(t, &k, 2, 1));
    CU_ASSERT_TRUE(ct_limit_enter(t, &k, 2, 1));
    CU_ASSERT_FALSE(ct_limit_enter(t, &k, 2, 1));
    ct_limit_leave(t, &k);
    CU_ASSERT_TRUE(ct_limit_enter(t, &k, 2, 1));
    /* a bucket on the same entry starts full */
    unsigned ra;
    CU_ASSERT_TRUE(ct_limit_take(t, &k, 1, 3, 1, &ra));
    CU_ASSERT_TRUE(ct_limit_take(t, &k, 1, 3, 1, &ra));
    CU_ASSERT_TRUE(ct_limit_take(t, &k, 1, 3, 1, &ra));
    CU_ASSERT_FALSE(ct_limit_take(t, &k, 1, 3, 1, &ra));
    ct_limit_leave(t, &k);
    ct_limit_leave(t, &k);
    ct_limit_leave(t, &k); /* one too many: harmless */
    CU_ASSERT_TRUE(ct_limit_enter(t, &k, 1, 1));
    ct_limit_table_free(&t);
}

/* A million addresses: the table stays at its size, and a client with a
 * request in flight keeps its count through the flood. */
static void test_flood(void)
{
    struct ct_limit_table *t = ct_limit_table_new(4096);
    struct ct_limit_key busy = {1, AF_INET, a1};
    CU_ASSERT_TRUE(ct_limit_enter(t, &busy, 1, 0));
    unsigned ra;
    for (uint32_t i = 0; i < 1000000; i++) {
        uint8_t a[4] = {10, (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i};
        struct ct_limit_key k = {1, AF_INET, a};
        ct_limit_take(t, &k, 1, 1, (double)i / 1000.0, &ra);
    }
    CU_ASSERT(ct_limit_used(t) <= 4096);
    CU_ASSERT_FALSE(ct_limit_enter(t, &busy, 1, 2000)); /* still counted */
    ct_limit_table_free(&t);
}

static struct ct_limit_table *shared;
static int allowed[2];

static void *taker(void *arg)
{
    int id = *(int *)arg;
    struct ct_limit_key k = {7, AF_INET, a1};
    unsigned ra;
    for (int i = 0; i < 10000; i++)
        allowed[id] += ct_limit_take(shared, &k, 0.001, 100, 50.0, &ra);
    return NULL;
}

static void test_threads(void)
{
    shared = ct_limit_table_new(64);
    pthread_t th[2];
    int ids[2] = {0, 1};
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, taker, &ids[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(allowed[0] + allowed[1], 100); /* one bucket, not one per thread */
    ct_limit_table_free(&shared);
}

void ct_test_register(void)
{
    CT_SUITE("per-client limits", {"token bucket: burst, refill, Retry-After", test_bucket},
             {"requests in flight", test_inflight}, {"bounded under a flood", test_flood},
             {"two threads, one bucket", test_threads});
}
