/*
 * common/slab.c: size-classed slabs (common/slab.h).
 *
 * A region is CT_SLAB_REGION bytes aligned to its size, so a slot's region
 * is its address with the low bits cleared; the region's header sits at its
 * start (the first page, given back only with the whole region) and its
 * slots follow. Free slots
 * form a list through their first 8 bytes; slots past `bump` were never
 * handed out since the region was last given back (a fresh region is
 * touched only as it fills).
 *
 * A region is in exactly one place, named by `where`:
 *   CUR      the class's region being allocated from (class->cur)
 *   FULL     every slot taken; on no list (a free makes it PARTIAL)
 *   PARTIAL  on class->partial: some slots taken, some free
 *   EMPTY    on class->empty: every slot free, pages still resident, since
 *            epoch `empty_epoch`
 *   OUT      taken off the lists by ct_slab_release(), pages being given back
 *            (or the region being unmapped)
 *   CLEAN    on class->clean: pages given back but the header's, since epoch
 *            `empty_epoch`; reused last, unmapped after CT_SLAB_UNMAP_PERIODS
 *
 * Free slots of two pages or more also give back their own pages while
 * their region is still in use (ct_slab_punch): a cache whose mix moves
 * toward bodies elsewhere (memfd, larger classes) leaves such regions half
 * used, their free slots resident. A free slot's second word is the epoch
 * it was freed in, or PUNCHED once its pages past the first 16 bytes went
 * back (the first page stays: it holds the free list's links).
 * Allocation prefers CUR, then PARTIAL (fills the holes of used regions, so
 * fewer stay half used), then EMPTY (resident), then CLEAN, then a new
 * mapping. All of a class's regions and lists are under the class's mutex.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/common.h"
#include "common/list.h"
#include "common/slab.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Classes: 64, 80, 96, 112, 128, then 8 per power of two (144, 160, ...
 * 240, 256, 288, ...) up to CT_SLAB_MAX: a request wastes at most 1/8 of
 * its size, and slot sizes stay multiples of 16. */
#define NCLASSES (4 + (17 - 7) * 8 + 1) /* 64 B .. 128 KiB (2^17) */
_Static_assert(CT_SLAB_MAX == 1u << 17, "NCLASSES assumes CT_SLAB_MAX is 128 KiB");

enum where { CUR, FULL, PARTIAL, EMPTY, OUT, CLEAN };

struct region {
    CT_LIST_LINK(region) link; /* on the list `where` names; OUT: the release's batch */
    void *free;                 /* free slots, linked through their first word */
    uint64_t empty_epoch;       /* EMPTY: the epoch it became so; CLEAN: the
                                   epoch its pages were given back */
    uint32_t cls;
    uint32_t size; /* slot size */
    uint32_t nslots;
    uint32_t nused;
    uint32_t bump; /* slots [bump, nslots) never handed out */
    uint32_t where;
    uint32_t punched; /* pages of free slots given back (ct_slab_punch) */
    uint32_t dirty;   /* punchable free slots whose pages are still resident */
};
#define HDR 64
_Static_assert(sizeof(struct region) <= HDR, "region header grew");

typedef CT_HLIST_HEAD(region) region_list;

struct cls {
    pthread_mutex_t mtx;
    struct region *cur;
    region_list partial, empty, clean;
};

#define PUNCHED UINT64_MAX /* a free slot's second word: its pages went back */

static struct cls classes[NCLASSES];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static size_t page_size;
static _Atomic uint64_t epoch = 1;
static _Atomic uint64_t st_used, st_resident, st_mapped, st_released, st_unmapped, st_punched;

static void init(void)
{
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < NCLASSES; i++)
        pthread_mutex_init(&classes[i].mtx, NULL);
}

/* Class of N (1 <= N <= CT_SLAB_MAX) and its slot size. */
static unsigned class_of(size_t n, size_t *size)
{
    if (n <= 128) {
        size_t k = n <= 64 ? 0 : (n - 64 + 15) / 16; /* 0..4 */
        *size = 64 + 16 * k;
        return (unsigned)k;
    }
    unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1)); /* 2^b < n <= 2^(b+1) */
    size_t step = (size_t)1 << (b - 3);
    size_t k = (n - ((size_t)1 << b) + step - 1) / step; /* 1..8 */
    *size = ((size_t)1 << b) + k * step;
    return 4 + (b - 7) * 8 + (unsigned)k;
}

/* Slots this big give their pages back while free (ct_slab_punch). */
static bool punchable(size_t size)
{
    return size >= 2 * page_size;
}

/* The pages a free slot at P of SIZE gives back: whole pages past its
 * first 16 bytes (the free list's word and the epoch). */
static size_t punch_span(const char *p, size_t size, char **start)
{
    uintptr_t a = ((uintptr_t)p + 16 + page_size - 1) & ~(uintptr_t)(page_size - 1);
    uintptr_t b = ((uintptr_t)p + size) & ~(uintptr_t)(page_size - 1);
    *start = (char *)a;
    return b > a ? (size_t)(b - a) : 0;
}

size_t ct_slab_size(size_t n)
{
    size_t size;
    if (n == 0 || n > CT_SLAB_MAX)
        return 0;
    class_of(n, &size);
    return size;
}

static struct region *list_pop(region_list *l)
{
    struct region *r = l->first;
    if (r)
        CT_HLIST_REMOVE(l, r, link);
    return r;
}

static struct region *region_map(unsigned cls, size_t size)
{
    /* Twice the size, then the unaligned ends cut off. */
    size_t len = 2 * (size_t)CT_SLAB_REGION;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        ct_panic(__FILE__, __LINE__, "out of memory mapping a %u-byte slab region", CT_SLAB_REGION);
    uintptr_t a = ((uintptr_t)m + CT_SLAB_REGION - 1) & ~(uintptr_t)(CT_SLAB_REGION - 1);
    char *start = (char *)a;
    if (start > m)
        munmap(m, (size_t)(start - m));
    if (start + CT_SLAB_REGION < m + len)
        munmap(start + CT_SLAB_REGION, (size_t)(m + len - (start + CT_SLAB_REGION)));
    struct region *r = (struct region *)start;
    *r = (struct region){.cls = cls, .size = (uint32_t)size,
                         .nslots = (uint32_t)((CT_SLAB_REGION - HDR) / size)};
    POISON(start + HDR, CT_SLAB_REGION - HDR);
    atomic_fetch_add_explicit(&st_mapped, CT_SLAB_REGION, memory_order_relaxed);
    atomic_fetch_add_explicit(&st_resident, CT_SLAB_REGION, memory_order_relaxed);
    return r;
}

/* A region with a free slot for class C, which becomes CUR. Under c->mtx. */
static struct region *region_next(struct cls *c, unsigned cls, size_t size)
{
    struct region *r;
    if ((r = list_pop(&c->partial)) == NULL && (r = list_pop(&c->empty)) == NULL) {
        if ((r = list_pop(&c->clean)) != NULL)
            atomic_fetch_add_explicit(&st_resident, CT_SLAB_REGION - page_size,
                                      memory_order_relaxed);
        else
            r = region_map(cls, size);
    }
    r->where = CUR;
    c->cur = r;
    return r;
}

void *ct_slab_alloc(size_t n)
{
    size_t size;
    CT_ASSERT(n >= 1 && n <= CT_SLAB_MAX);
    pthread_once(&once, init);
    unsigned cls = class_of(n, &size);
    struct cls *c = &classes[cls];

    pthread_mutex_lock(&c->mtx);
    struct region *r = c->cur;
    if (r == NULL || r->nused == r->nslots) {
        if (r)
            r->where = FULL;
        r = region_next(c, cls, size);
    }
    char *p;
    if (r->free) {
        p = r->free;
        UNPOISON(p, size);
        r->free = *(void **)p;
        if (punchable(size) && ((uint64_t *)p)[1] == PUNCHED) {
            char *start;
            size_t len = punch_span(p, size, &start);
            r->punched -= (uint32_t)(len / page_size);
            atomic_fetch_add_explicit(&st_resident, len, memory_order_relaxed);
        } else if (punchable(size)) {
            r->dirty--;
        }
    } else {
        CT_ASSERT(r->bump < r->nslots);
        p = (char *)r + HDR + (size_t)r->bump++ * size;
        UNPOISON(p, size);
    }
    r->nused++;
    pthread_mutex_unlock(&c->mtx);
    atomic_fetch_add_explicit(&st_used, size, memory_order_relaxed);
    return p;
}

void ct_slab_free(void *p)
{
    if (p == NULL)
        return;
    struct region *r = (struct region *)((uintptr_t)p & ~(uintptr_t)(CT_SLAB_REGION - 1));
    CT_ASSERT(r->cls < NCLASSES && (char *)p >= (char *)r + HDR &&
              ((size_t)((char *)p - (char *)r) - HDR) % r->size == 0);
    struct cls *c = &classes[r->cls];
    size_t size = r->size;

    pthread_mutex_lock(&c->mtx);
    CT_ASSERT(r->nused > 0 && r->where != EMPTY && r->where != CLEAN && r->where != OUT);
    *(void **)p = r->free;
    r->free = p;
    if (punchable(size)) {
        ((uint64_t *)p)[1] = atomic_load_explicit(&epoch, memory_order_relaxed);
        r->dirty++;
    }
    POISON(p, size);
    r->nused--;
    if (r->where == FULL) {
        r->where = PARTIAL;
        CT_HLIST_INSERT_HEAD(&c->partial, r, link);
    }
    if (r->nused == 0) {
        if (r->where == PARTIAL)
            CT_HLIST_REMOVE(&c->partial, r, link);
        else if (c->cur == r)
            c->cur = NULL;
        r->where = EMPTY;
        r->empty_epoch = atomic_load_explicit(&epoch, memory_order_relaxed);
        CT_HLIST_INSERT_HEAD(&c->empty, r, link);
    }
    pthread_mutex_unlock(&c->mtx);
    atomic_fetch_sub_explicit(&st_used, size, memory_order_relaxed);
}

/* Regions on list L (of class C) there since before epoch NOW - AGE, at
 * most MAX, taken off it (OUT) and chained through link.next into
 * *OUT_LIST. Under c->mtx. */
static size_t take_old(region_list *l, uint64_t now, uint64_t age, size_t max,
                       struct region **out_list)
{
    size_t n = 0;
    struct region *r = l->first, *next;
    for (; r && n < max; r = next) {
        next = r->link.next;
        if (r->empty_epoch + age >= now)
            continue;
        CT_HLIST_REMOVE(l, r, link);
        r->where = OUT;
        r->link.next = *out_list;
        *out_list = r;
        n++;
    }
    return n;
}

void ct_slab_period(void)
{
    atomic_fetch_add_explicit(&epoch, 1, memory_order_relaxed);
}

size_t ct_slab_release(size_t max_regions)
{
    pthread_once(&once, init);
    uint64_t now = atomic_load_explicit(&epoch, memory_order_relaxed);
    size_t done = 0;
    for (size_t i = 0; i < NCLASSES && done < max_regions; i++) {
        struct cls *c = &classes[i];
        struct region *out = NULL;
        struct region *gone = NULL;
        pthread_mutex_lock(&c->mtx);
        size_t n = take_old(&c->empty, now, 1, max_regions - done, &out);
        size_t ng = take_old(&c->clean, now, CT_SLAB_UNMAP_PERIODS, max_regions - done - n, &gone);
        pthread_mutex_unlock(&c->mtx);
        /* No lock held: nobody else reaches an OUT region. A region clean
         * for CT_SLAB_UNMAP_PERIODS goes altogether: its header page is the
         * last of it resident, and the cache has not needed it for that
         * long (the unmap takes the address space's lock for writing, so
         * it is kept for regions that old, a few a call). */
        while (gone) {
            struct region *r = gone;
            gone = r->link.next;
            UNPOISON(r, CT_SLAB_REGION); /* the next mapping there may not be ours */
            munmap(r, CT_SLAB_REGION);
        }
        if (ng) {
            atomic_fetch_sub_explicit(&st_resident, ng * page_size, memory_order_relaxed);
            atomic_fetch_sub_explicit(&st_mapped, ng * (uint64_t)CT_SLAB_REGION,
                                      memory_order_relaxed);
            atomic_fetch_add_explicit(&st_unmapped, ng, memory_order_relaxed);
            done += ng;
        }
        if (n == 0)
            continue;
        uint64_t punched = 0; /* already given back: not counted twice */
        for (struct region *r = out; r; r = r->link.next) {
            madvise((char *)r + page_size, CT_SLAB_REGION - page_size, MADV_DONTNEED);
            punched += r->punched;
            r->punched = r->dirty = 0;
        }
        pthread_mutex_lock(&c->mtx);
        while (out) {
            struct region *r = out;
            out = r->link.next;
            r->link.next = NULL;
            r->free = NULL;
            r->bump = 0;
            r->where = CLEAN;
            r->empty_epoch = now;
            CT_HLIST_INSERT_HEAD(&c->clean, r, link);
        }
        pthread_mutex_unlock(&c->mtx);
        atomic_fetch_sub_explicit(&st_resident,
                                  n * (CT_SLAB_REGION - page_size) - punched * page_size,
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(&st_released, n, memory_order_relaxed);
        done += n;
    }
    return done;
}

/* Punch R's free slots freed before epoch NOW - 1, VISITS bounding the
 * walk; returns how many. Under the class's mutex: a slot given back must
 * not be handed out meanwhile. */
static size_t punch_region(struct region *r, uint64_t now, size_t *visits)
{
    size_t n = 0;
    for (char *p = r->dirty ? r->free : NULL; p && *visits > 0; (*visits)--) {
        UNPOISON(p, 16);
        uint64_t *w = (uint64_t *)p;
        if (w[1] != PUNCHED && w[1] + 1 < now) {
            char *start;
            size_t len = punch_span(p, r->size, &start);
            if (madvise(start, len, MADV_DONTNEED) == 0) { /* else: again next time */
                r->punched += (uint32_t)(len / page_size);
                atomic_fetch_sub_explicit(&st_resident, len, memory_order_relaxed);
                atomic_fetch_add_explicit(&st_punched, 1, memory_order_relaxed);
                w[1] = PUNCHED;
                r->dirty--;
                n++;
            }
        }
        char *next = *(char **)p;
        POISON(p, 16);
        p = next;
    }
    return n;
}

size_t ct_slab_punch(size_t max_visits)
{
    pthread_once(&once, init);
    uint64_t now = atomic_load_explicit(&epoch, memory_order_relaxed);
    size_t done = 0, visits = max_visits, first;
    /* slot sizes grow with the class: the smaller ones never hold a whole page */
    for (size_t i = class_of(2 * page_size, &first); i < NCLASSES && visits > 0; i++) {
        struct cls *c = &classes[i];
        pthread_mutex_lock(&c->mtx);
        if (c->cur)
            done += punch_region(c->cur, now, &visits);
        for (struct region *r = c->partial.first; r && visits > 0; r = r->link.next)
            done += punch_region(r, now, &visits);
        pthread_mutex_unlock(&c->mtx);
    }
    return done;
}

void ct_slab_stats(struct ct_slab_stats *out)
{
    out->used = atomic_load_explicit(&st_used, memory_order_relaxed);
    out->resident = atomic_load_explicit(&st_resident, memory_order_relaxed);
    out->mapped = atomic_load_explicit(&st_mapped, memory_order_relaxed);
    out->released = atomic_load_explicit(&st_released, memory_order_relaxed);
    out->unmapped = atomic_load_explicit(&st_unmapped, memory_order_relaxed);
    out->punched = atomic_load_explicit(&st_punched, memory_order_relaxed);
}
