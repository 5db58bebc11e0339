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
 * Smaller blocks are plain malloc(). Everything in the session goes
 * through these calls, so free() looks up its (few) big blocks first.
 */
#include "proxy/h2/h2_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* x86-64's page. Where pages are bigger, madvise() refuses the unaligned
 * ranges and the trim gives back nothing: correct, only not smaller. */
#define PAGE 4096u

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

/* A big block, remembered if there is room (if not, it is just not trimmed). */
static void *big_alloc(struct ct_h2_mem *m, size_t len, bool framebuf)
{
    if (m->nbig == CT_ARRAY_LEN(m->big))
        return malloc(len);
    size_t cap = (len + PAGE - 1) & ~(size_t)(PAGE - 1);
    void *p = aligned_alloc(PAGE, cap);
    if (p == NULL)
        return NULL;
    m->big[m->nbig].p = p;
    m->big[m->nbig].len = cap;
    m->big[m->nbig].framebuf = framebuf;
    m->nbig++;
    return p;
}

static void forget(struct ct_h2_mem *m, int i)
{
    m->big[i] = m->big[--m->nbig];
}

static void *mem_malloc(size_t len, void *ud)
{
    struct ct_h2_mem *m = mem_of(ud);
    return len >= CT_H2_MEM_BIG ? big_alloc(m, len, false) : malloc(len);
}

static void mem_free(void *p, void *ud)
{
    struct ct_h2_mem *m = mem_of(ud);
    if (p == NULL)
        return;
    int i = m->nbig ? find(m, p) : -1;
    if (i >= 0)
        forget(m, i);
    free(p);
}

static void *mem_calloc(size_t n, size_t len, void *ud)
{
    struct ct_h2_mem *m = mem_of(ud);
    if (len && n > SIZE_MAX / len)
        return NULL;
    if (n * len < CT_H2_MEM_BIG)
        return calloc(n, len);
    void *p = big_alloc(m, n * len, false);
    if (p)
        memset(p, 0, n * len);
    return p;
}

static void *mem_realloc(void *p, size_t len, void *ud)
{
    struct ct_h2_mem *m = mem_of(ud);
    if (p == NULL) { /* nghttp2_buf_reserve() makes the frame buffer this way */
        if (len < CT_H2_MEM_BIG)
            return malloc(len);
        return big_alloc(m, len, m->creating);
    }
    int i = m->nbig ? find(m, p) : -1;
    if (i < 0)
        return realloc(p, len); /* a small block stays small (not trimmed) */
    if (len <= m->big[i].len)
        return p;
    size_t old = m->big[i].len;
    bool framebuf = m->big[i].framebuf;
    forget(m, i);
    void *q = big_alloc(m, len, framebuf);
    if (q == NULL)
        return NULL; /* P stays as it was, only no longer trimmed */
    memcpy(q, p, old);
    free(p);
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
        n += trim_block(m->big[i].p, m->big[i].len, m->big[i].framebuf);
    return n;
}
