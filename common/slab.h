/*
 * common/slab.h: size-classed slabs for the cache's object memory (issue 19).
 *
 * Why not malloc: glibc keeps what the cache frees in its arenas, and the only
 * way to give it back, malloc_trim(), walks a whole arena with that arena's
 * lock held: after a large purge that took 27-237 ms during which a worker's
 * malloc on the arena waited (docs/memory.md). Slabs keep object memory out
 * of malloc's arenas, so it goes back to the kernel exactly (a purge of
 * everything returns all of it) and without holding any lock a worker needs.
 *
 * Memory: regions of CT_SLAB_REGION bytes, aligned to their size, mapped
 * anonymous on demand; each region serves one size class (8 classes per
 * power of two from 128 B, 64 B to CT_SLAB_MAX: a request wastes at most an
 * eighth of its size, and the cache charges the class size, so its cap
 * counts what is really taken). A region whose every slot is free stays resident for one
 * more ct_slab_release() period (a burst of frees and allocations reuses it
 * without page faults), then its pages but the first, which holds the
 * region's header, are MADV_DONTNEEDed. A region left so for
 * CT_SLAB_UNMAP_PERIODS more periods is unmapped, header and all: an unmap
 * takes the address space's lock for writing and stalls every thread's page
 * faults meanwhile, so it is kept for regions the cache has not needed for
 * a minute; until then a released region costs its header page (4 KiB a
 * 2 MiB region: 2 MiB after a purge of a 1 GiB cache, a fifth of the empty
 * process). In a region still in use, free slots of two pages or more give
 * their pages back on their own (ct_slab_punch), so a region half used by
 * large objects does not keep the other half resident.
 *
 * Locking: one mutex per class, held for list and free-list operations only;
 * ct_slab_release() takes a region off its class's lists under the lock and
 * gives its pages back after dropping it. Every function may be called from
 * any thread. The slab is process-wide, as malloc is.
 *
 * ASan builds poison free slots, so a use after ct_slab_free() is reported
 * as it is for malloc.
 */
#ifndef CT_SLAB_H
#define CT_SLAB_H

#include <stddef.h>
#include <stdint.h>

#define CT_SLAB_REGION (2u * 1024 * 1024)
#define CT_SLAB_MAX (128u * 1024) /* the largest class; larger requests are not slab's */

/* The bytes a ct_slab_alloc(N) takes (its class's slot size), or 0 when N is
 * 0 or larger than CT_SLAB_MAX. */
size_t ct_slab_size(size_t n);

/* A slot of at least N bytes (1 <= N <= CT_SLAB_MAX), 16-byte aligned, not
 * zeroed. Panics (ct_panic) if the kernel refuses memory, as ct_xmalloc()
 * does. Owned by the caller until ct_slab_free(). */
void *ct_slab_alloc(size_t n);

/* Give back a slot from ct_slab_alloc(); NULL is ignored. */
void ct_slab_free(void *p);

/* Periods: ct_slab_period() starts the next one (the caller's clock: about
 * once a second). ct_slab_release() gives back to the kernel the pages of
 * regions that have been entirely free since before the current period
 * began (so for at least one whole period), at most MAX_REGIONS of them (a
 * bound on one call's work: each is one madvise of up to 2 MiB, ~0.2 ms of
 * CPU with its pages resident), and returns how many; call it again for
 * more. Any thread; meant for one (the main thread's timer). */
void ct_slab_period(void);
size_t ct_slab_release(size_t max_regions);
/* Give back the pages of free slots of two pages or more that have been
 * free since before the current period began, in regions still in use
 * (half-used regions of large classes; the first page of each slot stays).
 * MAX_VISITS bounds the free slots one call looks at (each one given back
 * is a madvise under its class's lock, which that class's allocations
 * wait for); returns how many slots it gave back. A slot given back is
 * handed out again as any other (its pages fault back in, zeroed). */
size_t ct_slab_punch(size_t max_visits);
/* Periods a released region stays mapped for reuse before
 * ct_slab_release() unmaps it (also counted in its MAX_REGIONS and return). */
#define CT_SLAB_UNMAP_PERIODS 60

struct ct_slab_stats {
    uint64_t used;     /* bytes in live slots (class sizes) */
    uint64_t resident; /* bytes of regions not given back (an upper bound on
                          the slab's share of RSS: regions are touched as
                          they fill) */
    uint64_t mapped;   /* bytes of address space mapped */
    uint64_t released; /* regions given back since start */
    uint64_t unmapped; /* regions unmapped since start */
    uint64_t punched;  /* free slots whose pages were given back since start */
};
void ct_slab_stats(struct ct_slab_stats *out);

#endif /* CT_SLAB_H */
