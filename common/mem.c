/*
 * common/mem.c: allocator figures and release (common/mem.h).
 *
 * The cache's object memory is in slabs (common/slab.h): their empty
 * regions go back first, without any lock a worker needs.
 *
 * glibc: malloc_trim(0) walks every arena and MADV_DONTNEEDs the free pages
 * inside them (not only the top of the heap); it holds each arena's lock
 * while it walks that arena, and a worker's malloc on that arena waits for
 * it. When the heap held the cache's bodies that walk took 10-50 ms of CPU
 * under churn (237 ms after a purge of a 1 GiB cache); with them in slabs
 * it walks connection state only (0.5 ms median, 9 ms at most under
 * bench/churn/churn.sh), so it runs every CT_MEM_TRIM_S (mem.h) or when the
 * cache shrank.
 *
 * With jemalloc (CT_HAVE_JEMALLOC): malloc_conf below is read by jemalloc at
 * its first allocation. Freed pages go back to the kernel one second after
 * they become free (dirty_decay_ms; muzzy_decay_ms 0 skips the lazy
 * MADV_FREE stage, whose pages still count in RSS until the kernel needs
 * them), and a background thread does the purging so no worker pays for it
 * on the request path. Workers get arenas of their own by jemalloc's default
 * (4 arenas per CPU, threads assigned round-robin), so two workers never
 * share one arena's lock.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/mem.h"
#include "common/slab.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CT_SANITIZER_MALLOC 1 /* ASan/TSan replace malloc: ask their allocator */
/* From the runtime's <sanitizer/allocator_interface.h>, which GCC does not
 * install; both runtimes export them. */
size_t __sanitizer_get_current_allocated_bytes(void);
size_t __sanitizer_get_heap_size(void);
size_t __sanitizer_get_free_bytes(void);
#endif

#ifdef CT_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>

const char *malloc_conf = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";

static uint64_t je_stat(const char *name)
{
    size_t v = 0, len = sizeof(v);
    if (mallctl(name, &v, &len, NULL, 0) != 0)
        return 0;
    return v;
}
#else
#include <malloc.h>
#endif

static _Atomic uint64_t releases; /* ct_mem_release() calls */

/* From /proc/self/statm: the resident set and its anonymous part (resident
 * minus "shared", which is the file-backed and shmem pages: the libraries
 * and the memfd cache bodies), in bytes; both 0 if unreadable. */
static void proc_statm(uint64_t *rss, uint64_t *anon)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0, shared = 0;
    *rss = *anon = 0;
    if (f == NULL)
        return;
    int n = fscanf(f, "%llu %llu %llu", &size, &resident, &shared);
    fclose(f);
    if (n != 3)
        return;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    *rss = resident * page;
    *anon = resident > shared ? (resident - shared) * page : 0;
}

void ct_mem_stats(struct ct_mem_stats *out)
{
    uint64_t anon;
    proc_statm(&out->rss, &anon);
    /* The cache's object memory is the slabs' (common/slab.h): part of what
     * the process allocated and holds, beside malloc's. */
    struct ct_slab_stats ss;
    ct_slab_stats(&ss);
    out->slab_used = ss.used;
    out->slab_resident = ss.resident;
    out->slab_mapped = ss.mapped;
    out->slab_regions_released = ss.released;
    out->slab_slots_punched = ss.punched;
    out->releases = atomic_load_explicit(&releases, memory_order_relaxed);
#ifdef CT_HAVE_JEMALLOC
    /* jemalloc's totals are refreshed by writing the epoch. */
    uint64_t epoch = 1;
    mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch));
    out->allocator = "jemalloc";
    out->allocated = je_stat("stats.allocated") + ss.used;
    out->resident = je_stat("stats.resident") + ss.resident;
    out->retained = je_stat("stats.retained");
    (void)anon;
#elif defined(CT_SANITIZER_MALLOC)
    out->allocator = "sanitizer";
    out->allocated = __sanitizer_get_current_allocated_bytes() + ss.used;
    out->resident = __sanitizer_get_heap_size() + ss.resident;
    out->retained = __sanitizer_get_free_bytes();
    (void)anon;
#else
    /* mallinfo2() locks each arena in turn to walk its bins: ~3 thousand
     * instructions a scrape with two workers' arenas after churn
     * (bench/micro/scrapecost.sh), 0.5 % of a /metrics scrape, so it is
     * not cached. Its own "resident" (arena + hblkhd: the heaps' extent)
     * counts the pages malloc_trim gave back inside them (134 MB while
     * RSS was 106 MB), so resident is the process's anonymous resident
     * memory instead: malloc's heaps, the slabs' touched pages and the
     * threads' stacks, as the kernel counts them. */
    struct mallinfo2 mi = mallinfo2();
    out->allocator = "glibc";
    out->allocated = mi.uordblks + mi.hblkhd + ss.used;
    out->resident = anon;
    out->retained = mi.fordblks;
#endif
}

void ct_mem_release(void)
{
    atomic_fetch_add_explicit(&releases, 1, memory_order_relaxed);
#ifdef CT_HAVE_JEMALLOC
    /* "arena.<MALLCTL_ARENAS_ALL>.purge" */
    char name[64];
    snprintf(name, sizeof(name), "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
    mallctl(name, NULL, NULL, NULL, 0);
#else
    malloc_trim(0);
#endif
}

bool ct_mem_maintain(struct ct_mem_trim *t, double now, uint64_t cache_bytes, uint64_t cap)
{
    /* The slabs first: their regions go back without any lock a worker
     * needs, a few at a time until this thread has spent
     * CT_MEM_SLAB_BUDGET_MS of CPU (one region's madvise costs ~0.2-0.5 ms;
     * CPU, not wall time, so that a loaded machine does not slow the giving
     * back down; the main thread also answers the admin listener). */
    bool released = false;
    struct timespec t0, t1;
    ct_slab_period();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    bool within = true;
    while (ct_slab_release(CT_MEM_SLAB_BATCH) > 0) {
        released = true;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        if ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6 >=
            CT_MEM_SLAB_BUDGET_MS) {
            within = false;
            break;
        }
    }
    /* Then the free slots of regions still in use (a cache whose mix moved
     * leaves large classes half used; seventh session), within the rest. */
    if (within && ct_slab_punch(CT_MEM_SLAB_PUNCH_VISITS) > 0)
        released = true;
#ifdef CT_HAVE_JEMALLOC
    (void)t, (void)now, (void)cache_bytes, (void)cap;
    return released;
#else
    if (cache_bytes > t->high_bytes)
        t->high_bytes = cache_bytes;
    if (cache_bytes < t->low_bytes)
        t->low_bytes = cache_bytes;
    /* A shrink freed the cache's malloc'd share (tag links, requests past
     * the slabs); a fast growth (a refill after a purge: a thousand misses
     * at once) leaves their transient buffers freed behind it. */
    bool moved = t->high_bytes - cache_bytes >= cap / 8 || cache_bytes - t->low_bytes >= cap / 8;
    /* What the workers' buffers took in a burst and freed stays resident in
     * their arenas until a trim: in the soak that, not live memory, was the
     * RSS's swing at a full cache (docs/memory.md, seventh session). A rise
     * from live memory costs one trim that finds little, then is the new low. */
    uint64_t rss, anon;
    proc_statm(&rss, &anon);
    if (t->low_anon == 0 || anon < t->low_anon)
        t->low_anon = anon;
    bool grew = anon >= t->low_anon + CT_MEM_TRIM_GROWTH;
    if (!moved && !grew && now - t->last_s < CT_MEM_TRIM_S)
        return released;
    struct mallinfo2 mi = mallinfo2();
    if (mi.fordblks < CT_MEM_TRIM_MIN)
        return released;
    ct_mem_release();
    t->last_s = now;
    t->high_bytes = t->low_bytes = cache_bytes;
    proc_statm(&rss, &t->low_anon);
    return true;
#endif
}
