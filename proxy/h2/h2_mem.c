/*
 * proxy/h2/h2_mem.c: the allocator of one nghttp2 session (nghttp2_mem),
 * so that an idle connection gives its big buffers' pages back.
 *
 * Why: nghttp2 1.52 allocates its outbound frame buffer (aob.framebufs, one
 * 16 KiB chunk, NGHTTP2_FRAMEBUF_CHUNKLEN) and its stream map's table (256
 * buckets of 16 bytes, nghttp2_map_init) when the session is made and
 * keeps both until the session goes: 20 KiB of the ~30 KiB an idle h2
 * connection held (docs/h2.md, "Idle connection memory"). nginx frees its
 * HTTP/2 buffers when a connection goes idle; nghttp2 cannot be asked to,
 * and the addresses must stay (nghttp2 keeps pointers into them). So
 * blocks of CT_H2_MEM_BIG bytes or more are page-aligned and remembered,
 * and ct_h2_mem_trim() returns pages to the kernel (MADV_DONTNEED): the
 * address stays valid and reads zeros, and a page comes back at its next
 * write. A page may go only when reading zeros changes nothing:
 *  - the frame buffer's (the block nghttp2 makes through realloc(NULL)
 *    while the session is created, nghttp2_buf_reserve): its contents are
 *    dead when the caller trims, a session with no stream and nothing to
 *    send (after the last frame was taken nghttp2 resets the buffer, and
 *    writes a frame header before every frame it builds);
 *  - any other block's page that holds only zeros, which is what the stream
 *    map's table is with no stream in it (nghttp2_map_remove zeroes the
 *    bucket). This is checked, not assumed, so a block with live contents
 *    (a half-received SETTINGS frame's entries) is never touched.
 * Pages that are not resident are skipped (mincore), so the count is what
 * the kernel got back.
 *
 * Big blocks come from a page pool (below), not aligned_alloc(): that one
 * leaves the unaligned start of each chunk it carves as a hole in malloc's
 * heap, up to a page per block, and two blocks per connection made 0.3-0.4
 * KiB of RSS per idle connection (bench/h2/run.sh --idle 500).
 *
 * Smaller blocks are plain malloc(). Everything in the session goes
 * through these calls, so free() looks up its (few) big blocks first.
 */
#include "proxy/h2/h2_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* x86-64's page. Where pages are bigger, madvise() refuses the unaligned
 * ranges and the trim gives back nothing: correct, only not smaller. */
#define PAGE 4096u

/* ---- the page pool ---------------------------------------------------------------- */

/* Blocks of whole pages, carved from mapped chunks and kept, by size, for
 * the next session once freed. A freed block's pages go back to the kernel
 * at once (MADV_DONTNEED): a closed connection leaves nothing resident, and
 * the next session's calloc() needs no memset (the pages read zeros). Free
 * blocks are listed outside them, so listing one does not fault a page in.
 * Process-wide behind a mutex, as malloc is: it is taken twice per session
 * made and freed, never per request, and a block may be freed by a thread
 * other than the one that took it. Chunks are never unmapped (address space
 * only, once their blocks are free). */
#define POOL_CHUNK (256u * 1024)
#define POOL_MAX_PAGES 16u /* bigger blocks (rare: a frame buffer past 64 KiB) are aligned_alloc's */

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define GUARD_PAGES 1u /* a poisoned page after each block: an overrun is reported */
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define GUARD_PAGES 0u
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static struct {
    pthread_mutex_t mu;
    char *bump, *end; /* the current chunk's pages not yet handed out */
    void **free[POOL_MAX_PAGES + 1]; /* by size in pages: stacks of free blocks */
    size_t nfree[POOL_MAX_PAGES + 1], cap[POOL_MAX_PAGES + 1];
    struct ct_h2_pool_stats st;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *pool_get(uint32_t pages)
{
    size_t len = (size_t)(pages + GUARD_PAGES) * PAGE;
    void *p = NULL;
    pthread_mutex_lock(&pool.mu);
    if (pool.nfree[pages] > 0) {
        p = pool.free[pages][--pool.nfree[pages]];
        pool.st.free--;
    } else {
        if ((size_t)(pool.end - pool.bump) < len) { /* the old chunk's rest stays unused */
            void *c = mmap(NULL, POOL_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            if (c == MAP_FAILED) {
                pthread_mutex_unlock(&pool.mu);
                return NULL;
            }
            POISON(c, POOL_CHUNK);
            pool.bump = c;
            pool.end = pool.bump + POOL_CHUNK;
            pool.st.mapped += POOL_CHUNK;
        }
        p = pool.bump;
        pool.bump += len;
    }
    pool.st.used++;
    pthread_mutex_unlock(&pool.mu);
    UNPOISON(p, (size_t)pages * PAGE);
    return p;
}

static void pool_put(void *p, uint32_t pages)
{
    if (madvise(p, (size_t)pages * PAGE, MADV_DONTNEED) != 0)
        memset(p, 0, (size_t)pages * PAGE); /* kept resident, but zeros for the next calloc */
    POISON(p, (size_t)pages * PAGE);
    pthread_mutex_lock(&pool.mu);
    if (pool.nfree[pages] == pool.cap[pages]) {
        pool.cap[pages] = pool.cap[pages] ? 2 * pool.cap[pages] : 16;
        pool.free[pages] = ct_xrealloc(pool.free[pages], pool.cap[pages] * sizeof(void *));
    }
    pool.free[pages][pool.nfree[pages]++] = p;
    pool.st.used--;
    pool.st.free++;
    pthread_mutex_unlock(&pool.mu);
}

void ct_h2_mem_pool_stats(struct ct_h2_pool_stats *out)
{
    pthread_mutex_lock(&pool.mu);
    *out = pool.st;
    pthread_mutex_unlock(&pool.mu);
}

/* ---- a session's allocator ------------------------------------------------------ */

static struct ct_h2_mem *mem_of(void *ud)
{
    return ud;
}

static int find(const struct ct_h2_mem *m, const void *p)
{
    for (unsigned i = 0; i < m->nbig; i++)
        if (m->big[i].p == p)
            return (int)i;
    return -1;
}

/* A big block, remembered if there is room (if not, it is just not trimmed);
 * its contents are zeros when it comes from the pool. */
static void *big_alloc(struct ct_h2_mem *m, size_t len, bool framebuf, bool *zeroed)
{
    *zeroed = false;
    size_t pages = (len + PAGE - 1) / PAGE;
    if (m->nbig == CT_ARRAY_LEN(m->big) || pages > UINT32_MAX)
        return malloc(len);
    bool pooled = pages <= POOL_MAX_PAGES;
    void *p = pooled ? pool_get((uint32_t)pages) : aligned_alloc(PAGE, pages * PAGE);
    if (p == NULL)
        return NULL;
    *zeroed = pooled;
    m->big[m->nbig].p = p;
    m->big[m->nbig].pages = (uint32_t)pages;
    m->big[m->nbig].framebuf = framebuf;
    m->big[m->nbig].pooled = pooled;
    m->nbig++;
    return p;
}

/* Big block I goes (its memory too when FREE_IT). */
static void forget(struct ct_h2_mem *m, int i, bool free_it)
{
    if (free_it && m->big[i].pooled)
        pool_put(m->big[i].p, m->big[i].pages);
    else if (free_it)
        free(m->big[i].p);
    m->big[i] = m->big[--m->nbig];
}

static void *mem_malloc(size_t len, void *ud)
{
    struct ct_h2_mem *m = mem_of(ud);
    bool zeroed;
    return len >= CT_H2_MEM_BIG ? big_alloc(m, len, false, &zeroed) : malloc(len);
}

static void mem_free(void *p, void *ud)
{
    struct ct_h2_mem *m = mem_of(ud);
    if (p == NULL)
        return;
    int i = m->nbig ? find(m, p) : -1;
    if (i >= 0)
        forget(m, i, true);
    else
        free(p);
}

static void *mem_calloc(size_t n, size_t len, void *ud)
{
    struct ct_h2_mem *m = mem_of(ud);
    if (len && n > SIZE_MAX / len)
        return NULL;
    if (n * len < CT_H2_MEM_BIG)
        return calloc(n, len);
    bool zeroed;
    void *p = big_alloc(m, n * len, false, &zeroed);
    if (p && !zeroed) /* a pooled block's pages stay untouched until used */
        memset(p, 0, n * len);
    return p;
}

static void *mem_realloc(void *p, size_t len, void *ud)
{
    struct ct_h2_mem *m = mem_of(ud);
    bool zeroed;
    if (p == NULL) { /* nghttp2_buf_reserve() makes the frame buffer this way */
        if (len < CT_H2_MEM_BIG)
            return malloc(len);
        return big_alloc(m, len, m->creating, &zeroed);
    }
    int i = m->nbig ? find(m, p) : -1;
    if (i < 0)
        return realloc(p, len); /* a small block stays small (not trimmed) */
    size_t old = (size_t)m->big[i].pages * PAGE;
    if (len <= old)
        return p;
    void *q = big_alloc(m, len, m->big[i].framebuf, &zeroed);
    if (q == NULL)
        return NULL; /* P stays as it was */
    memcpy(q, p, old);
    forget(m, i, true); /* after big_alloc: on failure P must stay known (pooled) */
    return q;
}

void ct_h2_mem_init(struct ct_h2_mem *m, nghttp2_mem *nm)
{
    *m = (struct ct_h2_mem){.creating = true};
    *nm = (nghttp2_mem){m, mem_malloc, mem_free, mem_calloc, mem_realloc};
}

void ct_h2_mem_created(struct ct_h2_mem *m)
{
    m->creating = false;
}

static bool page_is_zero(const void *page)
{
    const uint64_t *w = page;
    uint64_t any = 0;
    for (size_t i = 0; i < PAGE / sizeof(*w); i++)
        any |= w[i];
    return any == 0;
}

/* Block B's pages that can go (see the top), handed back; bytes of them. */
static size_t trim_block(char *p, size_t len, bool framebuf)
{
    unsigned char res[64];
    size_t npages = CT_MIN(len / PAGE, sizeof(res));
    if (mincore(p, npages * PAGE, res) != 0)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < npages;) {
        size_t j = i; /* a run of resident pages that can go */
        while (j < npages && (res[j] & 1) && (framebuf || page_is_zero(p + j * PAGE)))
            j++;
        if (j > i && madvise(p + i * PAGE, (j - i) * PAGE, MADV_DONTNEED) == 0)
            n += (j - i) * PAGE;
        i = j > i ? j : i + 1;
    }
    return n;
}

size_t ct_h2_mem_trim(struct ct_h2_mem *m)
{
    size_t n = 0;
    for (unsigned i = 0; i < m->nbig; i++)
        n += trim_block(m->big[i].p, (size_t)m->big[i].pages * PAGE, m->big[i].framebuf);
    return n;
}
