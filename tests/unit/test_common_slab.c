/* tests/unit/test_common_slab.c: the size-classed slabs (common/slab.h):
 * class sizes, slots that do not overlap, reuse without new mappings, pages
 * given back only after a whole period empty and in bounded batches, free
 * slots of regions in use given back, and threads allocating and freeing
 * at once beside both. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/common.h"
#include "common/slab.h"
#include "tests/unit/ct_test.h"

static void test_sizes(void)
{
    CU_ASSERT_EQUAL(ct_slab_size(0), 0);
    CU_ASSERT_EQUAL(ct_slab_size(CT_SLAB_MAX + 1), 0);
    CU_ASSERT_EQUAL(ct_slab_size(CT_SLAB_MAX), CT_SLAB_MAX);
    CU_ASSERT_EQUAL(ct_slab_size(1), 64);
    CU_ASSERT_EQUAL(ct_slab_size(64), 64);
    CU_ASSERT_EQUAL(ct_slab_size(65), 80);
    CU_ASSERT_EQUAL(ct_slab_size(128), 128);
    CU_ASSERT_EQUAL(ct_slab_size(129), 144);
    CU_ASSERT_EQUAL(ct_slab_size(1024), 1024);
    CU_ASSERT_EQUAL(ct_slab_size(1025), 1152);
    size_t prev = 0, classes = 0;
    for (size_t n = 1; n <= CT_SLAB_MAX; n++) {
        size_t s = ct_slab_size(n);
        CU_ASSERT_FATAL(s >= n && s % 16 == 0);
        CU_ASSERT_FATAL(n <= 64 || s * 8 <= n * 9 + 128); /* at most an eighth wasted */
        CU_ASSERT_FATAL(s >= prev);
        if (s != prev)
            classes++;
        prev = s;
    }
    CU_ASSERT_EQUAL(classes, 85);
}

static void test_alloc_free(void)
{
    struct ct_slab_stats a, b;
    ct_slab_stats(&a);
    enum { N = 300 };
    char *p[N];
    size_t len[N];
    for (size_t i = 0; i < N; i++) {
        len[i] = 1 + (i * 2654435761u) % 20000;
        p[i] = ct_slab_alloc(len[i]);
        CU_ASSERT_FATAL(p[i] != NULL && (uintptr_t)p[i] % 16 == 0);
        memset(p[i], (int)(i & 0xff), len[i]);
    }
    ct_slab_stats(&b);
    size_t want = 0;
    for (size_t i = 0; i < N; i++)
        want += ct_slab_size(len[i]);
    CU_ASSERT_EQUAL(b.used - a.used, want);
    for (size_t i = 0; i < N; i++) /* nobody wrote over anybody */
        for (size_t j = 0; j < len[i]; j++)
            if ((unsigned char)p[i][j] != (i & 0xff)) {
                CU_FAIL("slots overlap");
                break;
            }
    for (size_t i = 0; i < N; i++)
        ct_slab_free(p[i]);
    ct_slab_free(NULL);
    ct_slab_stats(&b);
    CU_ASSERT_EQUAL(b.used, a.used);
}

/* A freed slot is reused before anything new is mapped. */
static void test_reuse(void)
{
    void *p = ct_slab_alloc(3000);
    struct ct_slab_stats a, b;
    ct_slab_stats(&a);
    for (int i = 0; i < 10000; i++) {
        ct_slab_free(p);
        p = ct_slab_alloc(3000);
    }
    ct_slab_stats(&b);
    CU_ASSERT_EQUAL(b.mapped, a.mapped);
    ct_slab_free(p);
}

/* Three regions of one class (104 KiB slots, 19 to a region) filled and
 * freed: resident for one more period, then given back, at most MAX a call;
 * reused afterwards (zero pages, writable). */
static void test_release(void)
{
    ct_slab_period();
    ct_slab_period();
    while (ct_slab_release(1000) > 0)
        ; /* whatever earlier tests left empty */
    enum { N = 54 };
    void *p[N];
    for (size_t i = 0; i < N; i++) {
        p[i] = ct_slab_alloc(100 * 1024);
        memset(p[i], 0x5a, 100 * 1024);
    }
    struct ct_slab_stats a, b;
    ct_slab_stats(&a);
    CU_ASSERT_EQUAL(ct_slab_release(1000), 0); /* nothing is empty */
    for (size_t i = 0; i < N; i++)
        ct_slab_free(p[i]);
    CU_ASSERT_EQUAL(ct_slab_release(1000), 0); /* empty only since this period */
    ct_slab_period();
    CU_ASSERT_EQUAL(ct_slab_release(1000), 0); /* ... and the next began since */
    ct_slab_stats(&b);
    CU_ASSERT_EQUAL(b.resident, a.resident);
    ct_slab_period();
    CU_ASSERT_EQUAL(ct_slab_release(1), 1); /* a whole period empty; bounded */
    CU_ASSERT_EQUAL(ct_slab_release(1000), 2);
    CU_ASSERT_EQUAL(ct_slab_release(1000), 0);
    ct_slab_stats(&b);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    CU_ASSERT_EQUAL(a.resident - b.resident, 3 * (CT_SLAB_REGION - pg));
    CU_ASSERT_EQUAL(b.released - a.released, 3);
    CU_ASSERT_EQUAL(b.mapped, a.mapped); /* kept mapped for reuse */

    for (size_t i = 0; i < N; i++)
        p[i] = ct_slab_alloc(100 * 1024);
    ct_slab_stats(&b);
    CU_ASSERT_EQUAL(b.mapped, a.mapped);
    CU_ASSERT_EQUAL(b.resident, a.resident);
    for (size_t i = 0; i < N; i++)
        memset(p[i], 0x33, 100 * 1024);
    for (size_t i = 0; i < N; i++)
        ct_slab_free(p[i]);
}

/* Free slots of a region still in use give their pages back once free
 * for a whole period (the first page of each stays), are counted out of
 * resident, and come back whole when handed out again. */
static __attribute__((unused)) bool resident_page(const void *p)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char v = 0;
    CU_ASSERT_EQUAL(mincore((void *)((uintptr_t)p & ~(uintptr_t)(pg - 1)), pg, &v), 0);
    return v & 1;
}

static void test_punch(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    enum { N = 64, SLOT = 16 * 1024 };
    ct_slab_period();
    ct_slab_period();
    while (ct_slab_punch(SIZE_MAX) > 0)
        ; /* whatever earlier tests left */
    void *p[N];
    for (size_t i = 0; i < N; i++) {
        p[i] = ct_slab_alloc(SLOT);
        memset(p[i], 0x5a, SLOT);
    }
    struct ct_slab_stats a, b;
    ct_slab_stats(&a);
    for (size_t i = 0; i < N; i += 2)
        ct_slab_free(p[i]);
    CU_ASSERT_EQUAL(ct_slab_punch(SIZE_MAX), 0); /* freed in this period */
    ct_slab_period();
    CU_ASSERT_EQUAL(ct_slab_punch(SIZE_MAX), 0); /* ... and the next began since */
    ct_slab_period();
    CU_ASSERT_EQUAL(ct_slab_punch(4), 4); /* bounded */
    CU_ASSERT_EQUAL(ct_slab_punch(SIZE_MAX), N / 2 - 4);
    CU_ASSERT_EQUAL(ct_slab_punch(SIZE_MAX), 0); /* nothing twice */
    ct_slab_stats(&b);
    /* a 16 KiB slot 16-byte aligned holds three whole pages past its first 16 bytes */
    CU_ASSERT_EQUAL(a.resident - b.resident, (N / 2) * 3 * pg);
    CU_ASSERT_EQUAL(b.punched - a.punched, N / 2);
    CU_ASSERT_EQUAL(b.released, a.released); /* the region itself stays */
#if !defined(__SANITIZE_ADDRESS__)
    for (size_t i = 0; i < N; i += 2) {
        CU_ASSERT_FALSE(resident_page((char *)p[i] + SLOT / 2)); /* its inner pages went */
        CU_ASSERT_TRUE(resident_page(p[i]));                    /* its first stays */
    }
    for (size_t i = 1; i < N; i += 2)
        CU_ASSERT_TRUE(resident_page((char *)p[i] + SLOT / 2)); /* live ones untouched */
#endif
    for (size_t i = 1; i < N; i += 2)
        CU_ASSERT_EQUAL(((unsigned char *)p[i])[SLOT - 1], 0x5a);
    for (size_t i = 0; i < N; i += 2) {
        p[i] = ct_slab_alloc(SLOT);
        memset(p[i], 0x33, SLOT);
    }
    ct_slab_stats(&b);
    CU_ASSERT_EQUAL(b.resident, a.resident); /* handed out again: counted again */
    for (size_t i = 0; i < N; i++)
        ct_slab_free(p[i]);
}

/* Released regions are unmapped, header page and all, once they stayed
 * released for CT_SLAB_UNMAP_PERIODS periods, not before: after the other
 * tests freed everything, only the region of a live slot stays mapped. */
static void release_periods(int n)
{
    for (int i = 0; i < n; i++) {
        ct_slab_period();
        while (ct_slab_release(1000) > 0)
            ;
    }
}

static void test_unmap(void)
{
    void *keep = ct_slab_alloc(3000);
    struct ct_slab_stats a, b;
    ct_slab_stats(&a);
    CU_ASSERT_TRUE(a.mapped > CT_SLAB_REGION); /* keep's region and released ones */
    release_periods(CT_SLAB_UNMAP_PERIODS + 4); /* 2 to release, then the wait */
    ct_slab_stats(&b);
    CU_ASSERT_EQUAL(b.mapped, CT_SLAB_REGION); /* keep's region only */
    CU_ASSERT_EQUAL(b.resident, CT_SLAB_REGION); /* counted whole while in use */
    CU_ASSERT_EQUAL(b.unmapped - a.unmapped, (a.mapped - CT_SLAB_REGION) / CT_SLAB_REGION);

    /* a region released now stays mapped for CT_SLAB_UNMAP_PERIODS */
    void *p = ct_slab_alloc(100 * 1024);
    memset(p, 0x44, 100 * 1024);
    ct_slab_free(p);
    release_periods(2); /* released (its header page left) */
    ct_slab_stats(&b);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    CU_ASSERT_EQUAL(b.mapped, 2 * CT_SLAB_REGION);
    CU_ASSERT_EQUAL(b.resident, CT_SLAB_REGION + pg);
    release_periods(CT_SLAB_UNMAP_PERIODS - 1);
    ct_slab_stats(&b);
    CU_ASSERT_EQUAL(b.mapped, 2 * CT_SLAB_REGION);
    release_periods(2);
    ct_slab_stats(&b);
    CU_ASSERT_EQUAL(b.mapped, CT_SLAB_REGION);
    CU_ASSERT_EQUAL(b.resident, CT_SLAB_REGION);
    /* and a fresh mapping serves again */
    p = ct_slab_alloc(100 * 1024);
    memset(p, 0x45, 100 * 1024);
    ct_slab_free(p);
    ct_slab_free(keep);
}

/* Four threads allocate, check and free slots of mixed sizes at once, with
 * releases running beside them. */
struct thr {
    unsigned seed;
    int bad;
};
static _Atomic int threads_done;

static void *hammer(void *arg)
{
    struct thr *t = arg;
    enum { LIVE = 64 };
    unsigned char *p[LIVE] = {0};
    size_t len[LIVE] = {0};
    unsigned char tag[LIVE] = {0};
    for (int i = 0; i < 20000; i++) {
        size_t k = (size_t)rand_r(&t->seed) % LIVE;
        if (p[k]) {
            for (size_t j = 0; j < len[k]; j += 97)
                if (p[k][j] != tag[k])
                    t->bad++;
            ct_slab_free(p[k]);
        }
        len[k] = 1 + (size_t)rand_r(&t->seed) % 40000;
        p[k] = ct_slab_alloc(len[k]);
        tag[k] = (unsigned char)(i + k);
        memset(p[k], tag[k], len[k]);
    }
    for (size_t k = 0; k < LIVE; k++)
        ct_slab_free(p[k]);
    atomic_fetch_add(&threads_done, 1);
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[4];
    struct thr t[4];
    for (unsigned i = 0; i < 4; i++) {
        t[i] = (struct thr){.seed = 7919 * (i + 1)};
        pthread_create(&th[i], NULL, hammer, &t[i]);
    }
    while (atomic_load(&threads_done) < 4) {
        ct_slab_period();
        ct_slab_release(4);
        ct_slab_punch(256); /* a punched live slot would fail the threads' checks */
        usleep(1000);
    }
    for (unsigned i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(t[i].bad, 0);
    }
}

void ct_test_register(void)
{
    CT_SUITE("common slab", {"class sizes", test_sizes},
             {"alloc, free, no overlap, used bytes", test_alloc_free},
             {"reuse before mapping", test_reuse},
             {"release after a period, bounded, then reuse", test_release},
             {"free slots of a region in use give their pages back", test_punch},
             {"threads", test_threads},
             {"released regions unmapped after a while", test_unmap});
}
