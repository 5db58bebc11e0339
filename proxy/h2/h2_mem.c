/*
 * proxy/h2/h2_mem.c: the allocator of one nghttp2 session (nghttp2_mem),
 * so that an idle connection gives its big buffers' pages back.
 *
 * Why: nghttp2 1.52 allocates its outbound frame buffer (aob.framebufs, one
 * 16 KiB chunk, NGHTTP2_FRAMEBUF_CHUNKLEN) when the session is made and
 * keeps it until the session goes: 16 KiB of the ~44 KiB an idle h2
 * connection held (massif, bench/h2/run.sh --idle; docs/h2.md). nginx frees
 * its HTTP/2 buffers when a connection goes idle; nghttp2 cannot be asked
 * to, and the buffer's address must stay (nghttp2 keeps pointers into it).
 * So blocks of CT_H2_MEM_BIG bytes or more are page-aligned and remembered,
 * and ct_h2_mem_trim() returns their whole pages to the kernel
 * (MADV_DONTNEED): the address stays valid and reads zeros, and the pages
 * come back at the next write. That is safe only when their contents are
 * dead: the caller trims a session with no stream and nothing to send
 * (after the last frame was taken nghttp2 resets the frame buffer, and
 * writes a frame header before every frame it builds).
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
static void *big_alloc(struct ct_h2_mem *m, size_t len)
{
    if (m->nbig == CT_ARRAY_LEN(m->big))
        return malloc(len);
    size_t cap = (len + PAGE - 1) & ~(size_t)(PAGE - 1);
    void *p = aligned_alloc(PAGE, cap);
    if (p == NULL)
        return NULL;
    m->big[m->nbig].p = p;
    m->big[m->nbig].len = cap;
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
    return len >= CT_H2_MEM_BIG ? big_alloc(m, len) : malloc(len);
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
    void *p = big_alloc(m, n * len);
    if (p)
        memset(p, 0, n * len);
    return p;
}

static void *mem_realloc(void *p, size_t len, void *ud)
{
    struct ct_h2_mem *m = mem_of(ud);
    if (p == NULL) /* nghttp2_buf_reserve() makes the frame buffer this way */
        return mem_malloc(len, ud);
    int i = m->nbig ? find(m, p) : -1;
    if (i < 0)
        return realloc(p, len); /* a small block stays small (not trimmed) */
    if (len <= m->big[i].len)
        return p;
    size_t old = m->big[i].len;
    forget(m, i);
    void *q = big_alloc(m, len);
    if (q == NULL)
        return NULL; /* P stays as it was, only no longer trimmed */
    memcpy(q, p, old);
    free(p);
    return q;
}

void ct_h2_mem_init(struct ct_h2_mem *m, nghttp2_mem *nm)
{
    *m = (struct ct_h2_mem){0};
    *nm = (nghttp2_mem){m, mem_malloc, mem_free, mem_calloc, mem_realloc};
}

size_t ct_h2_mem_trim(struct ct_h2_mem *m)
{
    size_t n = 0;
    for (unsigned i = 0; i < m->nbig; i++)
        if (madvise(m->big[i].p, m->big[i].len, MADV_DONTNEED) == 0)
            n += m->big[i].len;
    return n;
}
