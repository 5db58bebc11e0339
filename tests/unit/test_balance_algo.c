/*
 * tests/unit/test_balance_algo.c: backend choice (proxy/balance/): smooth
 * weighted round robin as cachet always did it, least connections, bounded-
 * load rendezvous hashing (a member leaving moves only its keys, one joining
 * ~1/N; one hot key never pushes a member past the bound) and slow start.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/balance/balance.h"
#include "tests/unit/ct_test.h"

static void members(struct ct_balance_member *m, size_t n, const unsigned *w)
{
    memset(m, 0, n * sizeof(*m));
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "backend-%zu", i);
        m[i].weight = w ? w[i] : 1;
        m[i].up = true;
        m[i].name_hash = ct_balance_hash(name, strlen(name));
    }
}

static void test_round_robin(void)
{
    struct ct_balance_opts o = {CT_CONF_BALANCE_RR, 0, 125};
    struct ct_balance_member m[3];
    unsigned w[] = {5, 1, 1};
    members(m, 3, w);
    /* nginx's example: weights 5, 1, 1 give a a b a c a a */
    const char *want = "aabacaa", got[8] = {0};
    char seq[8] = {0};
    for (int i = 0; i < 7; i++)
        seq[i] = (char)('a' + ct_balance_pick(&o, m, 3, 0, 0));
    (void)got;
    CU_ASSERT_STRING_EQUAL(seq, want);
    /* equal weights alternate; a member down is left out */
    members(m, 3, NULL);
    m[1].up = false;
    for (int i = 0; i < 6; i++)
        seq[i] = (char)('a' + ct_balance_pick(&o, m, 3, 0, 0));
    seq[6] = 0;
    CU_ASSERT_STRING_EQUAL(seq, "acacac");
    m[0].up = m[2].up = false;
    CU_ASSERT_EQUAL(ct_balance_pick(&o, m, 3, 0, 0), -1);
}

static void test_least_conn(void)
{
    struct ct_balance_opts o = {CT_CONF_BALANCE_LEAST_CONN, 0, 125};
    struct ct_balance_member m[3];
    unsigned w[] = {1, 1, 2};
    members(m, 3, w);
    m[0].inflight = 3, m[1].inflight = 1, m[2].inflight = 4; /* per weight: 3, 1, 2 */
    CU_ASSERT_EQUAL(ct_balance_pick(&o, m, 3, 0, 0), 1);
    m[1].inflight = 5; /* 3, 5, 2 */
    CU_ASSERT_EQUAL(ct_balance_pick(&o, m, 3, 0, 0), 2);
    /* ties take turns */
    members(m, 3, NULL);
    int seen[3] = {0};
    for (int i = 0; i < 6; i++)
        seen[ct_balance_pick(&o, m, 3, 0, 0)]++;
    CU_ASSERT(seen[0] == 2 && seen[1] == 2 && seen[2] == 2);
    /* filling up as requests stay in flight spreads them evenly */
    members(m, 3, NULL);
    for (int i = 0; i < 30; i++)
        m[ct_balance_pick(&o, m, 3, 0, 0)].inflight++;
    CU_ASSERT(m[0].inflight == 10 && m[1].inflight == 10 && m[2].inflight == 10);
}

#define NKEYS 20000

static void test_hash_moves(void)
{
    struct ct_balance_opts o = {CT_CONF_BALANCE_HASH, 0, 125};
    struct ct_balance_member m[6];
    members(m, 6, NULL);
    static int before[NKEYS], after[NKEYS];
    int count[6] = {0};
    for (int k = 0; k < NKEYS; k++) {
        before[k] = ct_balance_pick(&o, m, 5, (uint64_t)k * 0x9e3779b97f4a7c15ull, 0);
        count[before[k]]++;
    }
    for (int i = 0; i < 5; i++) /* even: each near NKEYS / 5 */
        CU_ASSERT(abs(count[i] - NKEYS / 5) < NKEYS / 50);
    /* the same key, the same member */
    CU_ASSERT_EQUAL(ct_balance_pick(&o, m, 5, 7 * 0x9e3779b97f4a7c15ull, 0), before[7]);
    /* member 2 down: only its keys move */
    m[2].up = false;
    int moved = 0;
    for (int k = 0; k < NKEYS; k++) {
        after[k] = ct_balance_pick(&o, m, 5, (uint64_t)k * 0x9e3779b97f4a7c15ull, 0);
        moved += after[k] != before[k];
        if (before[k] != 2)
            CU_ASSERT_EQUAL(after[k], before[k]);
    }
    CU_ASSERT_EQUAL(moved, count[2]);
    m[2].up = true;
    /* a sixth member: it takes ~1/6 of the keys, all from the others */
    moved = 0;
    for (int k = 0; k < NKEYS; k++) {
        after[k] = ct_balance_pick(&o, m, 6, (uint64_t)k * 0x9e3779b97f4a7c15ull, 0);
        if (after[k] != before[k]) {
            moved++;
            CU_ASSERT_EQUAL(after[k], 5);
        }
    }
    printf("\n  hash: a sixth member took %d of %d keys (1/6 = %d)\n", moved, NKEYS, NKEYS / 6);
    CU_ASSERT(abs(moved - NKEYS / 6) < NKEYS / 50);
    /* weights: weight 3 gets ~3 shares */
    unsigned w[] = {3, 1, 1, 1};
    members(m, 4, w);
    memset(count, 0, sizeof(count));
    for (int k = 0; k < NKEYS; k++)
        count[ct_balance_pick(&o, m, 4, (uint64_t)k * 0x9e3779b97f4a7c15ull, 0)]++;
    CU_ASSERT(abs(count[0] - NKEYS / 2) < NKEYS / 40);
}

/* One hot key with every request kept in flight: its owner takes requests
 * up to the bound, then the next choices do; nobody passes the bound. */
static void test_hash_bounded(void)
{
    struct ct_balance_opts o = {CT_CONF_BALANCE_HASH, 0, 125};
    struct ct_balance_member m[4];
    members(m, 4, NULL);
    uint64_t hot = ct_balance_hash("/hot", 4);
    int owner = ct_balance_pick(&o, m, 4, hot, 0);
    unsigned total = 0, worst = 0;
    for (int i = 0; i < 1000; i++) {
        int b = ct_balance_pick(&o, m, 4, hot, 0);
        m[b].inflight++;
        total++;
        for (int k = 0; k < 4; k++) {
            double cap = ceil(1.25 * (double)total / 4);
            if (m[k].inflight > cap)
                worst++;
        }
    }
    CU_ASSERT_EQUAL(worst, 0);
    CU_ASSERT(m[owner].inflight <= 313); /* ceil(1.25 * 1000 / 4) */
    CU_ASSERT(m[owner].inflight >= 300); /* and it still gets its full share */
    /* light load: the owner keeps the key */
    members(m, 4, NULL);
    m[owner].inflight = 1;
    for (int k = 0; k < 4; k++)
        if (k != owner)
            m[k].inflight = 1;
    CU_ASSERT_EQUAL(ct_balance_pick(&o, m, 4, hot, 0), owner);
}

static void test_slow_start(void)
{
    /* round robin: a member up 25 s into a 100 s ramp gets ~1/4 of a share */
    struct ct_balance_opts o = {CT_CONF_BALANCE_RR, 100, 125};
    struct ct_balance_member m[2];
    members(m, 2, NULL);
    m[1].up_since = 1000;
    int n1 = 0;
    for (int i = 0; i < 500; i++)
        n1 += ct_balance_pick(&o, m, 2, 0, 1025) == 1;
    CU_ASSERT(n1 == 100); /* weights 1000 : 250 */
    n1 = 0;
    for (int i = 0; i < 500; i++)
        n1 += ct_balance_pick(&o, m, 2, 0, 1100) == 1; /* ramp over */
    CU_ASSERT(n1 == 250);
    n1 = 0;
    for (int i = 0; i < 500; i++)
        n1 += ct_balance_pick(&o, m, 2, 0, 1000) == 1; /* just up: almost nothing */
    CU_ASSERT(n1 <= 1);
    /* hash: at 25 % of the ramp it owns ~25 % of its keys; the rest go on to
     * their next choice, and come back as the ramp goes on */
    o.algo = CT_CONF_BALANCE_HASH;
    struct ct_balance_member h[4];
    members(h, 4, NULL);
    int own_full = 0, own_quarter = 0;
    for (int k = 0; k < NKEYS; k++) {
        uint64_t key = (uint64_t)k * 0x9e3779b97f4a7c15ull;
        h[3].up_since = 0;
        bool full = ct_balance_pick(&o, h, 4, key, 1025) == 3;
        h[3].up_since = 1000;
        bool quarter = ct_balance_pick(&o, h, 4, key, 1025) == 3;
        own_full += full;
        own_quarter += quarter;
        if (quarter)
            CU_ASSERT(full); /* ramping keys are a subset: none moves twice */
    }
    CU_ASSERT(abs(own_quarter - own_full / 4) < own_full / 20);
}

void ct_test_register(void)
{
    CT_SUITE("balance", {"smooth weighted round robin (today's)", test_round_robin},
             {"least connections", test_least_conn},
             {"hash: spread, 1/N moves, weights", test_hash_moves},
             {"hash: bounded load under one hot key", test_hash_bounded},
             {"slow start", test_slow_start});
}
