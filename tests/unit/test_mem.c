/*
 * tests/unit/test_mem.c: common/mem.h. The allocator's figures move with
 * allocations; ct_mem_maintain() gives free pages back when the cache shrank
 * or grew by an eighth of its cap or CT_MEM_TRIM_S passed, and not otherwise; after
 * it, the RSS of a heap whose freed blocks sit below a live one (which glibc
 * does not return by itself) drops, and the resident figure with it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "tests/unit/ct_test.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1 /* the sanitizer's allocator: glibc's figures do not apply */
#else
#define SANITIZED 0
#endif

#define MIB (1024u * 1024u)

/* Touch N bytes at P so that the compiler keeps the allocation and the
 * stores (it may drop both when the block is only freed afterwards). */
static void touch(void *p, size_t n)
{
    memset(p, 1, n);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static void test_figures(void)
{
    struct ct_mem_stats a, b;
    ct_mem_stats(&a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a.allocator);
    CU_ASSERT_TRUE(a.rss > 0);
    char *p = malloc(8 * MIB);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    touch(p, 8 * MIB);
    ct_mem_stats(&b);
    CU_ASSERT_TRUE(b.rss >= a.rss + 7 * MIB);
    if (!SANITIZED) {
        CU_ASSERT_TRUE(b.allocated >= a.allocated + 8 * MIB);
        CU_ASSERT_TRUE(b.resident >= a.resident + 7 * MIB);
    }
    free(p);
}

/* A heap with 48 MiB of freed 4 KiB blocks between live ones (one in 64
 * stays): glibc gives back only a free top of the heap by itself. Returns
 * the live ones, for free_kept(). */
enum { NBLOCKS = 48 * 256, KEEP_EVERY = 64 };
static void **fragment(void)
{
    void **blocks = malloc(NBLOCKS * sizeof(*blocks));
    for (size_t i = 0; i < NBLOCKS; i++) {
        blocks[i] = malloc(4000);
        touch(blocks[i], 4000);
    }
    for (size_t i = 0; i < NBLOCKS; i++)
        if (i % KEEP_EVERY != KEEP_EVERY - 1) {
            free(blocks[i]);
            blocks[i] = NULL;
        }
    return blocks;
}

static void free_kept(void **blocks)
{
    for (size_t i = 0; i < NBLOCKS; i++)
        free(blocks[i]);
    free(blocks);
}

static void test_maintain_triggers(void)
{
    struct ct_mem_stats ms;
    ct_mem_stats(&ms);
    if (SANITIZED || strcmp(ms.allocator, "glibc") != 0)
        return; /* jemalloc: its decay does it; nothing to test here */
    void **kept = fragment();
    ct_mem_stats(&ms);
    /* as if it had just released, with the fragmented heap already its low */
    struct ct_mem_trim t = {.last_s = 1000.0, .low_anon = ms.resident};
    const uint64_t cap = 800 * MIB;

    /* the cache grows by less than an eighth: nothing */
    CU_ASSERT_FALSE(ct_mem_maintain(&t, 1000.0, 0, cap));
    CU_ASSERT_FALSE(ct_mem_maintain(&t, 1001.0, 99 * MIB, cap));
    ct_mem_stats(&ms);
    uint64_t before = ms.rss;

    /* by an eighth (a refill): it releases, and the freed blocks leave the RSS */
    CU_ASSERT_TRUE(ct_mem_maintain(&t, 1002.0, 100 * MIB, cap));
    ct_mem_stats(&ms);
    CU_ASSERT_TRUE(ms.rss + 32 * MIB <= before);
    /* and the resident figure with it: the kernel's count, not the heap's
     * extent (which still spans the trimmed holes below the kept blocks) */
    CU_ASSERT_TRUE(ms.resident <= ms.rss);
    CU_ASSERT_TRUE(ms.resident + 32 * MIB <= before);
    CU_ASSERT_EQUAL(t.last_s, 1002.0);
    CU_ASSERT_EQUAL(t.high_bytes, 100 * MIB);
    CU_ASSERT_EQUAL(t.low_bytes, 100 * MIB);

    /* up and down by less than an eighth from the extremes: nothing */
    CU_ASSERT_FALSE(ct_mem_maintain(&t, 1002.5, 150 * MIB, cap));
    CU_ASSERT_FALSE(ct_mem_maintain(&t, 1003.0, 60 * MIB, cap));
    CU_ASSERT_FALSE(ct_mem_maintain(&t, 1003.5, 159 * MIB, cap));
    /* down by an eighth from the most (a purge) */
    CU_ASSERT_TRUE(ct_mem_maintain(&t, 1004.0, 59 * MIB, cap));
    CU_ASSERT_EQUAL(t.high_bytes, 59 * MIB);

    /* steady cache: not again until CT_MEM_TRIM_S has passed */
    CU_ASSERT_FALSE(ct_mem_maintain(&t, 1004.0 + CT_MEM_TRIM_S - 1, 59 * MIB, cap));
    CU_ASSERT_TRUE(ct_mem_maintain(&t, 1004.0 + CT_MEM_TRIM_S, 59 * MIB, cap));
    free_kept(kept);
}

/* Buffers freed after a burst stay resident in the heap: the rise of the
 * anonymous resident memory over its low releases them at the next tick,
 * before CT_MEM_TRIM_S and with the cache steady. */
static void test_maintain_growth(void)
{
    struct ct_mem_stats ms;
    ct_mem_stats(&ms);
    if (SANITIZED || strcmp(ms.allocator, "glibc") != 0)
        return;
    const uint64_t cap = 800 * MIB;
    struct ct_mem_trim t = {.high_bytes = 100 * MIB, .low_bytes = 100 * MIB};
    /* the first tick learns the low (and may trim what the earlier tests left) */
    ct_mem_maintain(&t, 1000.0, 100 * MIB, cap);
    t.last_s = 1000.0;
    t.high_bytes = t.low_bytes = 100 * MIB;
    CU_ASSERT_TRUE(t.low_anon > 0);
    uint64_t releases = ms.releases;
    CU_ASSERT_FALSE(ct_mem_maintain(&t, 1001.0, 100 * MIB, cap));

    void **kept = fragment(); /* a burst's 48 MiB, freed but resident */
    ct_mem_stats(&ms);
    uint64_t before = ms.rss;
    CU_ASSERT_TRUE(ms.resident >= t.low_anon + 32 * MIB);
    CU_ASSERT_TRUE(ct_mem_maintain(&t, 1002.0, 100 * MIB, cap));
    ct_mem_stats(&ms);
    CU_ASSERT_TRUE(ms.rss + 32 * MIB <= before);
    CU_ASSERT_TRUE(ms.releases > releases);
    CU_ASSERT_EQUAL(t.last_s, 1002.0);
    /* the low is now what is left after the trim: no second one for it */
    CU_ASSERT_TRUE(t.low_anon <= ms.resident + MIB);
    CU_ASSERT_FALSE(ct_mem_maintain(&t, 1003.0, 100 * MIB, cap));
    free_kept(kept);
}

void ct_test_register(void)
{
    CT_SUITE("mem", {"allocator figures move with allocations", test_figures},
             {"maintain: releases on a shrink, a growth or after a while, and RSS drops",
              test_maintain_triggers},
             {"maintain: releases what a burst left resident", test_maintain_growth});
}
