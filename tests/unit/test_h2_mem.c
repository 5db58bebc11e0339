/*
 * tests/unit/test_h2_mem.c: the session allocator's trim (proxy/h2/h2_mem.c)
 * gives back exactly the pages whose contents are dead: the frame buffer's,
 * and big blocks' pages of zeros (the stream map's table with no stream);
 * a big block with live bytes keeps them. Big blocks come from a page pool
 * that gives a freed block's pages back and hands the block out again.
 */
#define _DEFAULT_SOURCE /* mincore */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proxy/h2/h2_int.h"
#include "tests/unit/ct_test.h"

/* Pages of P..P+LEN that are resident. */
static size_t resident(const void *p, size_t len)
{
    unsigned char v[16];
    size_t n = len / 4096, k = 0;
    CT_ASSERT(n <= sizeof v);
    CT_ASSERT(mincore((void *)p, len, v) == 0);
    for (size_t i = 0; i < n; i++)
        k += v[i] & 1;
    return k;
}

static void test_trim_dead_pages_only(void)
{
    struct ct_h2_mem m;
    nghttp2_mem nm;
    ct_h2_mem_init(&m, &nm);
    /* as nghttp2_session_new: the frame buffer by realloc(NULL), the map's
     * table by calloc */
    char *fb = nm.realloc(NULL, 16394, nm.mem_user_data);
    char *map = nm.calloc(256, 16, nm.mem_user_data);
    ct_h2_mem_created(&m);
    char *live = nm.malloc(8192, nm.mem_user_data); /* e.g. SETTINGS entries */
    char *small = nm.malloc(100, nm.mem_user_data);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(map);
    CU_ASSERT_PTR_NOT_NULL_FATAL(live);
    CU_ASSERT_EQUAL((uintptr_t)map % 4096, 0);
    memset(fb, 'f', 16394);
    map[100] = 1; /* a stream in the map */
    map[100] = 0; /* and gone */
    memset(live, 'l', 8192);
    live[8191] = 0;
    memset(live, 0, 4096); /* its first page zeros, its second not */
    CU_ASSERT_EQUAL(resident(map, 4096), 1);

    size_t n = ct_h2_mem_trim(&m);
    CU_ASSERT_EQUAL(n, 5 * 4096 + 4096 + 4096); /* the buffer, the map, live's zero page */
    CU_ASSERT_EQUAL(resident(fb, 5 * 4096), 0);
    CU_ASSERT_EQUAL(resident(map, 4096), 0);
    CU_ASSERT_EQUAL(resident(live + 4096, 4096), 1);
    /* a second trim finds nothing resident to give back */
    CU_ASSERT_EQUAL(ct_h2_mem_trim(&m), 0);
    CU_ASSERT_EQUAL(live[4096], 'l'); /* live bytes stay */
    CU_ASSERT_EQUAL(live[8190], 'l');
    CU_ASSERT_EQUAL(map[100], 0);
    /* the blocks still work: written again, they come back */
    fb[0] = 'g';
    CU_ASSERT_EQUAL(fb[0], 'g');
    CU_ASSERT_EQUAL(fb[1], 0);
    nm.free(small, nm.mem_user_data);
    nm.free(live, nm.mem_user_data);
    nm.free(map, nm.mem_user_data);
    nm.free(fb, nm.mem_user_data);
    CU_ASSERT_EQUAL(m.nbig, 0);
}

/* A freed big block's pages go back to the kernel at once, and the block is
 * the next session's: same address, zeros, no new mapping. */
static void test_pool_returns_and_reuses(void)
{
    struct ct_h2_mem m;
    nghttp2_mem nm;
    struct ct_h2_pool_stats st0, st1, st2;
    ct_h2_mem_init(&m, &nm);
    ct_h2_mem_created(&m);
    char *a = nm.calloc(256, 16, nm.mem_user_data); /* the stream map's table */
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL((uintptr_t)a % 4096, 0);
    CU_ASSERT_EQUAL(resident(a, 4096), 0); /* calloc touched nothing */
    a[7] = 'x';
    CU_ASSERT_EQUAL(resident(a, 4096), 1);
    ct_h2_mem_pool_stats(&st0);
    nm.free(a, nm.mem_user_data);
    ct_h2_mem_pool_stats(&st1);
    CU_ASSERT_EQUAL(st1.used, st0.used - 1);
    CU_ASSERT_EQUAL(st1.free, st0.free + 1);
    CU_ASSERT_EQUAL(resident(a, 4096), 0); /* returned */
    char *b = nm.calloc(256, 16, nm.mem_user_data);
    ct_h2_mem_pool_stats(&st2);
    CU_ASSERT_PTR_EQUAL(b, a); /* reused */
    CU_ASSERT_EQUAL(st2.free, st0.free);
    CU_ASSERT_EQUAL(st2.mapped, st0.mapped);
    CU_ASSERT_EQUAL(b[7], 0);
    nm.free(b, nm.mem_user_data);
    CU_ASSERT_EQUAL(m.nbig, 0);
}

void ct_test_register(void)
{
    CT_SUITE("h2_mem", {"the trim gives back dead pages only", test_trim_dead_pages_only},
             {"a freed big block is returned, then reused", test_pool_returns_and_reuses});
}
