/*
 * common/mem.h: the process's allocator: which one it is, its own figures
 * (beside the cache's counted bytes, so an operator sees the gap), and giving
 * freed pages back to the kernel.
 *
 * cachet runs on glibc's malloc, with the cache's object memory in slabs
 * (common/slab.h), and the main thread calls ct_mem_maintain() every second,
 * which gives the slabs' empty regions back (madvise, no lock a worker
 * needs) and malloc's free pages with malloc_trim (issue 19 measured that
 * against glibc alone, glibc's tunables and jemalloc, see docs/memory.md:
 * jemalloc returned memory as well but cost ~30 % more instructions per
 * cache hit). The figures (allocated, resident) are malloc's plus the
 * slabs', which are also given apart (glibc's resident is read from the
 * kernel: mallinfo2's is the heaps' extent, trimmed pages included). -DCT_JEMALLOC=ON links jemalloc instead (not
 * with a sanitizer, which brings its own allocator), with the options mem.c
 * sets; the figures then come from mallctl() instead of mallinfo2().
 *
 * Pure C (no libevent); every function may be called from any thread.
 */
#ifndef CT_MEM_H
#define CT_MEM_H

#include <stdbool.h>
#include <stdint.h>

struct ct_mem_stats {
    const char *allocator; /* "glibc", "jemalloc" or "sanitizer" (ASan/TSan
                              builds; their allocator's figures) */
    uint64_t allocated;    /* bytes in live allocations */
    uint64_t resident;     /* bytes of the allocator's pages in RAM. glibc: the
                              process's anonymous resident memory (/proc/self/statm:
                              malloc's heaps, the slabs' touched pages, thread
                              stacks); jemalloc, sanitizer: their own figure plus
                              slab_resident (an upper bound) */
    uint64_t retained;     /* jemalloc: address space kept mapped but given back
                              (not resident); glibc: free bytes inside malloc's
                              heaps, resident or given back by a trim */
    uint64_t rss;          /* the whole process's resident set (/proc/self/statm),
                              mapped cache bodies included; 0 if unreadable */
    /* The slabs' share (common/slab.h; included in allocated and resident) */
    uint64_t slab_used;     /* bytes in live slots */
    uint64_t slab_resident; /* bytes of regions not given back (an upper bound) */
    uint64_t slab_mapped;   /* address space mapped for regions */
    uint64_t slab_regions_released; /* empty regions given back since start */
    uint64_t slab_slots_punched;    /* free slots of regions in use whose pages
                                       were given back since start */
    uint64_t releases;      /* ct_mem_release() calls since start (trims, purges) */
};

/* Fill OUT. The allocator's figures are at most a moment old; no lock is
 * held afterwards. */
void ct_mem_stats(struct ct_mem_stats *out);

/* Give every free page back to the kernel now (jemalloc: purge all arenas;
 * glibc: malloc_trim). For after a large purge; costs a walk of the heap. */
void ct_mem_release(void);

/* When to give pages back: the main thread's periodic call (about once a
 * second) passes the time (seconds of ct_time_mono()) and the cache's counted
 * bytes. First the slabs' regions empty for a whole second go back, for at
 * most CT_MEM_SLAB_BUDGET_MS of the calling thread's CPU (~100-200 regions,
 * 200-400 MiB; any allocator), then, within that budget, the pages of free
 * slots of two pages or more in regions still in use (ct_slab_punch, up to
 * CT_MEM_SLAB_PUNCH_VISITS of them looked at). Then glibc: ct_mem_release() when the cache
 * shrank or grew by an eighth of its CAP since the last release (a purge, an
 * expiry wave, a refill), or the anonymous resident memory rose
 * CT_MEM_TRIM_GROWTH above its lowest since then (connection buffers freed
 * after a burst stay resident in the arenas until a trim), or CT_MEM_TRIM_S
 * after the last one; never when malloc holds less than CT_MEM_TRIM_MIN free
 * bytes. A trim holds each arena's lock while it walks that arena (now a
 * heap without the cache's bodies: ~0.5 ms), so it is done every second
 * only while resident memory keeps rising. jemalloc:
 * nothing more (its decay does it). The caller owns the state, zeroed at
 * start. Returns true if it gave anything back. */
struct ct_mem_trim {
    double last_s;       /* the last release */
    uint64_t high_bytes; /* the cache's most bytes since then */
    uint64_t low_bytes;  /* and its fewest */
    uint64_t low_anon;   /* the anonymous resident bytes' lowest since then (0: unknown) */
};
#define CT_MEM_TRIM_S 5.0 /* was 30 while the heap held the cache's bodies (a trim then
                            took 10-50 ms of CPU; now 0.5 ms median, 9 ms at most) */
#define CT_MEM_TRIM_MIN (1024 * 1024)
/* 2 % of the soak's RSS: at most one trim a second, of ~0.5 ms (docs/memory.md) */
#define CT_MEM_TRIM_GROWTH (2 * 1024 * 1024)
#define CT_MEM_SLAB_BATCH 8        /* slab regions (2 MiB) per ct_slab_release() */
#define CT_MEM_SLAB_BUDGET_MS 40.0 /* of CPU giving slab regions back, per call */
#define CT_MEM_SLAB_PUNCH_VISITS 8192 /* free slots ct_slab_punch() looks at, per call */
bool ct_mem_maintain(struct ct_mem_trim *t, double now, uint64_t cache_bytes, uint64_t cap);

#endif /* CT_MEM_H */
