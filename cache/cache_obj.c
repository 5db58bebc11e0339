/*
 * cache/cache_obj.c: one object's life: creation, head, body, state changes,
 * waiters, references, free.
 *
 * Memory of an object, counted against the cap when reserved, from the
 * slabs (common/slab.h, cache_int.h: ct_cache_alloc; counted at their class
 * size) or, past CT_SLAB_MAX, malloc (counted with its overhead):
 *   - the struct with its key, reserved by the lookup that
 *     creates it (there is no separate per-key allocation: cache_int.h);
 *   - the first segment, one allocation holding [segment header][body capacity]
 *     [head | etag | last-modified | vary], reserved by ct_obj_set_head: with a
 *     Content-Length (body_hint) the whole response is this one block;
 *   - further segments appended while STREAMING (1 KiB, doubling up to 16 KiB,
 *     or the size of the append if larger), reserved by ct_obj_append.
 * A first segment with a body of CT_CACHE_MAPPED_MIN bytes or more is a
 * memfd mapping instead of a heap block (counted in whole pages), so that a
 * plain-HTTP hit can sendfile(2) the body from the object's own pages: the
 * kernel then hands the socket page references instead of copying 100 KiB
 * into it, which is what nginx's file cache gets from its files. The pages
 * outlive a freed object for as long as the socket still holds them (they
 * are the file's, not malloc's), and nothing writes them after COMPLETE.
 * A body of unknown length with a bound (ct_obj_meta.body_hint_max: one
 * cachet encodes as it fills, at most about its origin's length) gets such
 * a mapping for the bound; the pages the body did not reach were never
 * touched, and go back to the cap when it completes (ct_cache_obj_trim).
 * Segments never move or shrink, so readers hand (pointer, length) out by
 * reference; the bytes go back to the cap at the last ct_obj_release().
 *
 * Publication: the fetcher writes the head fields, then stores state
 * STREAMING with release; it writes body bytes, then stores the segment
 * length (or the next-segment link) with release; COMPLETE is stored after
 * the last length. Readers load the state first (acquire), then lengths: a
 * reader that saw COMPLETE sees final lengths, so it never mistakes a
 * filling body for a finished one.
 *
 * Waiters sit on the object's list under its shard's lock; every state change
 * and every append wakes them all (one-shot), under that lock, so a waiter
 * that checked "nothing new" under the lock cannot miss the next wake-up.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cache/cache_int.h"

/* Per-object overhead budget (issue 5: <= 256 bytes beyond key, head, body):
 * object 160 (key included separately; 8 of it the tag links pointer and 8
 * the ban mark, issue 16) + first segment header 24 + ~8-16 of slot array
 * = ~192-200, plus the rounding of the two allocations up to their slab
 * classes (at most an eighth of each; the malloc overhead it replaced was 2
 * x 16). Keep the structs from creeping. */
_Static_assert(sizeof(struct ct_obj) <= 160, "struct ct_obj grew past its budget");
_Static_assert(sizeof(struct ct_cache_seg) <= 24, "segment header grew");

static size_t alloc_cost(size_t n)
{
    return ct_cache_alloc_cost(n);
}

/* The bytes the first segment's allocation asked for: its body capacity and
 * the blob after it (ct_obj_set_head). */
static size_t first_seg_bytes(const struct ct_obj *obj)
{
    return sizeof(struct ct_cache_seg) + obj->seg_first->cap + obj->head_len + obj->etag_len +
           obj->lm_len + obj->date_len + obj->vary_len;
}

static void seg_unmap(struct ct_cache *cache, struct ct_cache_seg *seg);

/* A new object with one reference, for KEY (bytes copied). Its base size
 * must already be reserved. */
struct ct_obj *ct_cache_obj_new(struct ct_cache_shard *sh, uint64_t hash, struct ct_str key,
                                unsigned flags)
{
    CT_ASSERT(key.len <= UINT32_MAX);
    struct ct_obj *obj = ct_cache_alloc(sizeof(*obj) + key.len);
    memset(obj, 0, sizeof(*obj));
    obj->magic = CT_OBJ_MAGIC;
    obj->hash = hash;
    obj->key_len = (uint32_t)key.len;
    if (key.len)
        memcpy(obj->key, key.p, key.len);
    atomic_init(&obj->refcnt, 1);
    atomic_init(&obj->state, CT_OBJ_BUSY);
    atomic_init(&obj->visited, 0);
    obj->flags = (unsigned char)flags;
    obj->shard = sh;
    obj->size = (uint32_t)ct_cache_obj_base_size(key.len);
    atomic_fetch_add_explicit(&sh->cache->objects, 1, memory_order_relaxed);
    return obj;
}

void ct_cache_obj_free(struct ct_obj *obj)
{
    struct ct_cache *cache = obj->shard->cache;

    CT_ASSERT(!(obj->flags & OBJ_F_LINKED));
    CT_ASSERT(CT_LIST_EMPTY(&obj->waiters));
    struct ct_cache_seg *seg = obj->seg_first;
    while (seg) {
        struct ct_cache_seg *next = atomic_load_explicit(&seg->next, memory_order_relaxed);
        if (seg == obj->seg_first && obj->body_mapped)
            seg_unmap(cache, seg);
        else if (seg == obj->seg_first)
            ct_cache_dealloc(seg, first_seg_bytes(obj));
        else
            ct_cache_dealloc(seg, sizeof(*seg) + seg->cap);
        seg = next;
    }
    if (obj->body_src)
        ct_cache_obj_put(obj->body_src); /* COMPLETE: no lock needed */
    size_t size = obj->size;
    obj->magic = 0;
    ct_cache_dealloc(obj, sizeof(*obj) + obj->key_len);
    ct_cache_unreserve(cache, size);
    atomic_fetch_sub_explicit(&cache->objects, 1, memory_order_relaxed);
}

struct ct_obj *ct_obj_ref(struct ct_obj *obj)
{
    return ct_cache_obj_ref(obj);
}

/* Drop one reference; the last frees. No orphan check: for the table's own
 * reference (unlink, under the shard lock) and for complete objects. */
void ct_cache_obj_put(struct ct_obj *obj)
{
    /* acq_rel: every write by other holders happens before the free. */
    unsigned old = atomic_fetch_sub_explicit(&obj->refcnt, 1, memory_order_acq_rel);
    CT_ASSERT(old > 0);
    if (old == 1)
        ct_cache_obj_free(obj);
}

void ct_obj_release(struct ct_obj **objp)
{
    struct ct_obj *obj = *objp;
    if (!obj)
        return;
    *objp = NULL;
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    if (CT_LIKELY(ct_obj_state(obj) >= CT_OBJ_COMPLETE))
        ct_cache_obj_put(obj); /* the hit path: one atomic, no lock */
    else
        ct_cache_obj_release_busy(obj);
}

void ct_obj_release_cb(const void *data, size_t len, void *arg)
{
    struct ct_obj *obj = arg;
    ct_obj_release(&obj);
}

enum ct_obj_state ct_obj_state(const struct ct_obj *obj)
{
    return ct_cache_obj_state(obj);
}

/* ---- waiters (shard lock) -------------------------------------------------- */

void ct_cache_waiter_init(struct ct_cache_waiter *w, void (*wake)(void *), void *arg)
{
    memset(w, 0, sizeof(*w));
    w->magic = CT_CACHE_WAITER_MAGIC;
    w->wake = wake;
    w->arg = arg;
}

/* Wake OBJ's waiters; with BYTES_ONLY (an append) not those waiting for its end. */
static void wake(struct ct_obj *obj, bool bytes_only)
{
    struct ct_cache_waiter *w, *next;
    CT_LIST_FOREACH_SAFE(w, &obj->waiters, _link, next) {
        CT_CHECK_OBJ(w, CT_CACHE_WAITER_MAGIC);
        if (bytes_only && w->_end_only)
            continue;
        CT_HLIST_REMOVE(&obj->waiters, w, _link);
        w->_obj = NULL;
        w->wake(w->arg);
    }
}

void ct_cache_obj_wake_all(struct ct_obj *obj) { wake(obj, false); }

static uint64_t body_len_of(const struct ct_obj *obj);

bool ct_obj_wait(struct ct_obj *obj, struct ct_cache_waiter *w, enum ct_obj_state state_seen,
                 uint64_t have_bytes)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    CT_CHECK_OBJ(w, CT_CACHE_WAITER_MAGIC);
    struct ct_cache_shard *sh = obj->shard;
    bool registered = false;

    pthread_mutex_lock(&sh->mtx);
    CT_ASSERT(w->_obj == NULL);
    enum ct_obj_state st = ct_obj_state(obj);
    bool end_only = st == CT_OBJ_STREAMING && have_bytes == CT_OBJ_WAIT_END;
    bool news = st != state_seen || st > CT_OBJ_STREAMING ||
                (st == CT_OBJ_STREAMING && !end_only && body_len_of(obj) != have_bytes);
    if (!news) {
        CT_HLIST_INSERT_HEAD(&obj->waiters, w, _link);
        w->_obj = obj;
        w->_shard = sh;
        w->_end_only = end_only;
        registered = true;
    }
    pthread_mutex_unlock(&sh->mtx);
    return registered;
}

void ct_obj_unwait(struct ct_cache_waiter *w)
{
    CT_CHECK_OBJ(w, CT_CACHE_WAITER_MAGIC);
    struct ct_cache_shard *sh = w->_shard;
    if (!sh)
        return; /* never registered */
    pthread_mutex_lock(&sh->mtx);
    struct ct_obj *obj = w->_obj;
    if (obj) {
        CT_HLIST_REMOVE(&obj->waiters, w, _link);
        w->_obj = NULL;
    }
    pthread_mutex_unlock(&sh->mtx);
}

/* ---- the fetcher's side -------------------------------------------------- */

static struct ct_cache_seg *seg_init(void *mem, size_t cap)
{
    struct ct_cache_seg *seg = mem;
    atomic_init(&seg->next, NULL);
    atomic_init(&seg->len, 0);
    seg->cap = cap;
    return seg;
}

static struct ct_cache_seg *seg_alloc(size_t cap, size_t extra)
{
    return seg_init(ct_cache_alloc(sizeof(struct ct_cache_seg) + cap + extra), cap);
}

/* ---- mapped first segments ---------------------------------------------------
 *
 * [struct seg_map][struct ct_cache_seg][body][blob] at offset 0 of a memfd
 * of that many bytes rounded up to pages, mapped shared. */
struct seg_map {
    int fd;
    size_t len; /* of the mapping */
};
#define SEG_MAP_HDR ((sizeof(struct seg_map) + 15) & ~(size_t)15)

static size_t page_round(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

static size_t mapped_len(size_t cap, size_t extra)
{
    return page_round(SEG_MAP_HDR + sizeof(struct ct_cache_seg) + cap + extra);
}

/* Mapped bodies hold a descriptor each: at most a quarter of the process's
 * limit, so that connections never run short because of the cache. */
static bool fd_budget_take(struct ct_cache *cache)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        rl.rlim_cur = 1024;
    unsigned budget = (unsigned)CT_MIN(rl.rlim_cur / 4, (rlim_t)65536);
    unsigned n = atomic_fetch_add_explicit(&cache->mapped_fds, 1, memory_order_relaxed);
    if (n < budget)
        return true;
    atomic_fetch_sub_explicit(&cache->mapped_fds, 1, memory_order_relaxed);
    return false;
}

/* A mapped first segment of LEN bytes (mapped_len()), or NULL (no descriptor
 * to spare, or the kernel refused): the caller takes the heap instead. */
static struct ct_cache_seg *seg_map(struct ct_cache *cache, size_t len, size_t cap)
{
    if (!fd_budget_take(cache))
        return NULL;
    int fd = memfd_create("cachet-body", MFD_CLOEXEC);
    void *mem = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)len) == 0)
        mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        if (fd >= 0)
            close(fd);
        atomic_fetch_sub_explicit(&cache->mapped_fds, 1, memory_order_relaxed);
        return NULL;
    }
    *(struct seg_map *)mem = (struct seg_map){fd, len};
    return seg_init((char *)mem + SEG_MAP_HDR, cap);
}

static void seg_unmap(struct ct_cache *cache, struct ct_cache_seg *seg)
{
    struct seg_map *m = (struct seg_map *)((char *)seg - SEG_MAP_HDR);
    int fd = m->fd;
    munmap(m, m->len);
    close(fd);
    atomic_fetch_sub_explicit(&cache->mapped_fds, 1, memory_order_relaxed);
}

void ct_cache_obj_trim(struct ct_obj *obj)
{
    if (obj->body_mapped != OBJ_MAPPED_BOUND)
        return;
    obj->body_mapped = OBJ_MAPPED;
    struct ct_cache_seg *seg = obj->seg_first;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t used = atomic_load_explicit(&seg->len, memory_order_relaxed);
    uintptr_t a = (uintptr_t)page_round((size_t)(uintptr_t)(seg->data + used));
    uintptr_t b = (uintptr_t)(seg->data + seg->cap) / pg * pg;
    if (b <= a)
        return;
    size_t n = (size_t)(b - a);
    /* Never written, so no page is behind them yet; the hole makes sure
     * (the blob after them stays where readers find it). */
    struct seg_map *m = (struct seg_map *)((char *)seg - SEG_MAP_HDR);
    (void)fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    (off_t)(a - (uintptr_t)m), (off_t)n);
    obj->size -= (uint32_t)n;
    ct_cache_unreserve(obj->shard->cache, n);
}

int ct_obj_body_fd(const struct ct_obj *obj, off_t *off)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    if (ct_obj_state(obj) != CT_OBJ_COMPLETE)
        return -1;
    const struct ct_obj *owner = obj->body_src ? obj->body_src : obj;
    if (!owner->body_mapped)
        return -1;
    const struct ct_cache_seg *seg = owner->seg_first;
    if (atomic_load_explicit(&seg->next, memory_order_acquire) != NULL)
        return -1; /* the body went on past its first segment: not one run of the file */
    const struct seg_map *m = (const struct seg_map *)((const char *)seg - SEG_MAP_HDR);
    *off = (off_t)(SEG_MAP_HDR + sizeof(struct ct_cache_seg));
    return m->fd;
}

static char *blob_of(const struct ct_obj *obj)
{
    return obj->seg_first->data + obj->seg_first->cap;
}

int ct_obj_set_head(struct ct_obj *obj, const struct ct_obj_meta *m)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    CT_ASSERT(ct_obj_state(obj) == CT_OBJ_BUSY);
    struct ct_cache *cache = obj->shard->cache;
    size_t blob = m->head.len + m->etag.len + m->last_modified.len + m->date.len + m->vary.len;
    uint64_t body = m->body_src ? 0 : m->body_hint;
    /* A bound is reserved only as a mapping that fits the object's limit:
     * a heap block could not give back what the body leaves of it. */
    if (m->body_hint_max && (body < CT_CACHE_MAPPED_MIN || body + blob > cache->cfg.max_object_size))
        body = 0;

    if (blob > UINT32_MAX / 2 || m->date.len > UINT16_MAX || body > cache->cfg.max_object_size ||
        blob + body > cache->cfg.max_object_size)
        return CT_ELIMIT;
    bool mapped = body >= CT_CACHE_MAPPED_MIN;
    size_t cost = mapped ? mapped_len((size_t)body, blob)
                         : alloc_cost(sizeof(struct ct_cache_seg) + (size_t)body + blob);
    if (ct_cache_reserve(cache, cost) != CT_OK)
        return CT_ELIMIT;
    struct ct_cache_seg *seg = mapped ? seg_map(cache, cost, (size_t)body) : NULL;
    if (mapped && seg == NULL) { /* the heap after all: count that instead */
        ct_cache_unreserve(cache, cost);
        mapped = false;
        if (m->body_hint_max)
            body = 0;
        cost = alloc_cost(sizeof(struct ct_cache_seg) + (size_t)body + blob);
        if (ct_cache_reserve(cache, cost) != CT_OK)
            return CT_ELIMIT;
    }
    obj->size += (uint32_t)cost;
    obj->body_mapped = !mapped ? 0 : m->body_hint_max ? OBJ_MAPPED_BOUND : OBJ_MAPPED;
    obj->seg_first = obj->seg_last = seg ? seg : seg_alloc((size_t)body, blob);

    char *p = blob_of(obj);
    const struct ct_str parts[] = {m->head, m->etag, m->last_modified, m->date, m->vary};
    for (size_t i = 0; i < CT_ARRAY_LEN(parts); i++) {
        if (parts[i].len)
            memcpy(p, parts[i].p, parts[i].len);
        p += parts[i].len;
    }
    obj->head_len = (uint32_t)m->head.len;
    obj->etag_len = (uint32_t)m->etag.len;
    obj->lm_len = (uint32_t)m->last_modified.len;
    obj->date_len = (uint16_t)m->date.len;
    obj->vary_len = (uint32_t)m->vary.len;
    obj->status = (uint16_t)m->status;
    obj->response_time = m->response_time;
    obj->initial_age = (float)CT_MAX(m->initial_age, 0.0);
    /* fresh while current_age < ttl, i.e. before response_time - initial_age + ttl */
    obj->expires = m->response_time - CT_MAX(m->initial_age, 0.0) + CT_MAX(m->ttl, 0.0);
    obj->grace = (float)CT_MAX(m->grace, 0.0);
    obj->keep = (float)CT_MAX(m->keep, 0.0);
    if (m->body_src) {
        /* Share the body's owner, not the object handed in: after a second
         * 304 that object is itself a head over someone else's body and has
         * no segments of its own. Owners never borrow, so one hop is enough. */
        struct ct_obj *owner = m->body_src->body_src ? m->body_src->body_src : m->body_src;
        CT_ASSERT(ct_obj_state(owner) == CT_OBJ_COMPLETE && owner->body_src == NULL);
        obj->body_src = ct_obj_ref(owner);
        obj->fetch_us = m->body_src->fetch_us; /* the full fetch a hit stands for */
    }

    /* Before STREAMING: a purge by tag must find the object as soon as a
     * reader can. Without memory for its links it is not stored at all (an
     * object that escaped tag purges would be worse): CT_ELIMIT, the caller
     * abandons it, and what was set above is freed with it. */
    if (m->ntags && ct_cache_tags_link(obj, m->tags, m->ntags) != CT_OK)
        return CT_ELIMIT;

    struct ct_cache_shard *sh = obj->shard;
    pthread_mutex_lock(&sh->mtx);
    /* Its response is newer than every ban there is now: none applies to it.
     * Under the lock, so a lurker walk that met it BUSY (and could not test
     * it) started before this read and saw no newer ban (cache_ban.c). */
    obj->ban_seq = ct_cache_ban_seq(cache);
    atomic_store_explicit(&obj->state, CT_OBJ_STREAMING, memory_order_release);
    ct_cache_obj_wake_all(obj);
    pthread_mutex_unlock(&sh->mtx);
    return CT_OK;
}

/* Capacity of the segment after LAST for an append needing NEED more bytes:
 * geometric from 1 KiB to CT_CACHE_SEG_SIZE, so a small chunked body wastes
 * little and a large one takes few segments. */
static size_t next_seg_cap(const struct ct_cache_seg *last, size_t need)
{
    size_t cap = last->cap ? CT_MIN(last->cap * 2, (size_t)CT_CACHE_SEG_SIZE) : 1024;
    return CT_MAX(cap, need);
}

int ct_obj_append(struct ct_obj *obj, const void *data, size_t len)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    CT_ASSERT(ct_obj_state(obj) == CT_OBJ_STREAMING);
    CT_ASSERT(obj->body_src == NULL);
    struct ct_cache *cache = obj->shard->cache;
    struct ct_cache_seg *last = obj->seg_last;
    size_t used = atomic_load_explicit(&last->len, memory_order_relaxed);
    size_t room = last->cap - used, first = CT_MIN(room, len), rest = len - first;
    struct ct_cache_seg *seg = NULL;

    if (len == 0)
        return CT_OK;
    if (rest > cache->cfg.max_object_size)
        return CT_ELIMIT; /* also keeps the sizes below from overflowing */
    if (rest) {
        /* Check and reserve before copying anything: on error nothing changed. */
        size_t cap = next_seg_cap(last, rest);
        size_t cost = alloc_cost(sizeof(*seg) + cap);
        size_t obj_bytes = (size_t)obj->size - ct_cache_obj_base_size(obj->key_len);
        if (obj_bytes + cost > cache->cfg.max_object_size) {
            cap = rest; /* the last segment may be exact when the limit is near */
            cost = alloc_cost(sizeof(*seg) + cap);
            if (obj_bytes + cost > cache->cfg.max_object_size)
                return CT_ELIMIT;
        }
        if (ct_cache_reserve(cache, cost) != CT_OK)
            return CT_ELIMIT;
        obj->size += (uint32_t)cost;
        seg = seg_alloc(cap, 0);
    }
    if (first) {
        memcpy(last->data + used, data, first);
        atomic_store_explicit(&last->len, used + first, memory_order_release);
    }
    if (seg) {
        memcpy(seg->data, (const char *)data + first, rest);
        atomic_store_explicit(&seg->len, rest, memory_order_relaxed);
        atomic_store_explicit(&last->next, seg, memory_order_release);
        obj->seg_last = seg;
    }
    struct ct_cache_shard *sh = obj->shard;
    pthread_mutex_lock(&sh->mtx);
    wake(obj, true);
    pthread_mutex_unlock(&sh->mtx);
    return CT_OK;
}

/* ---- accessors --------------------------------------------------------------- */

unsigned ct_obj_status(const struct ct_obj *obj)
{
    return obj->status;
}

static struct ct_str blob_part(const struct ct_obj *obj, size_t off, size_t len)
{
    if (!obj->seg_first)
        return CT_STR_NULL;
    return ct_str_make(blob_of(obj) + off, len);
}

struct ct_str ct_obj_head(const struct ct_obj *obj)
{
    return blob_part(obj, 0, obj->head_len);
}

struct ct_str ct_obj_etag(const struct ct_obj *obj)
{
    return blob_part(obj, obj->head_len, obj->etag_len);
}

struct ct_str ct_obj_last_modified(const struct ct_obj *obj)
{
    return blob_part(obj, obj->head_len + obj->etag_len, obj->lm_len);
}

struct ct_str ct_obj_date(const struct ct_obj *obj)
{
    return blob_part(obj, (size_t)obj->head_len + obj->etag_len + obj->lm_len, obj->date_len);
}

struct ct_str ct_obj_vary(const struct ct_obj *obj)
{
    size_t off = (size_t)obj->head_len + obj->etag_len + obj->lm_len + obj->date_len;
    return blob_part(obj, off, obj->vary_len);
}

ct_time_t ct_obj_response_time(const struct ct_obj *obj)
{
    return obj->response_time;
}

double ct_obj_age(const struct ct_obj *obj, ct_time_t now)
{
    return (double)obj->initial_age + CT_MAX(now - obj->response_time, 0.0);
}

double ct_obj_ttl_left(const struct ct_obj *obj, ct_time_t now)
{
    return obj_expires(obj) - now;
}

ct_time_t ct_obj_expires(const struct ct_obj *obj)
{
    return obj_expires(obj);
}

bool ct_obj_is_fresh(const struct ct_obj *obj, ct_time_t now)
{
    return ct_cache_obj_is_fresh(obj, now);
}

bool ct_obj_in_grace(const struct ct_obj *obj, ct_time_t now)
{
    ct_time_t e = obj_expires(obj);
    return now >= e && now < e + obj->grace;
}

void ct_obj_set_fetch_us(struct ct_obj *obj, uint64_t fetch_us)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    enum ct_obj_state st = ct_obj_state(obj);
    CT_ASSERT(st == CT_OBJ_BUSY || st == CT_OBJ_STREAMING); /* published by COMPLETE */
    obj->fetch_us = (uint32_t)CT_MIN(fetch_us, (uint64_t)UINT32_MAX);
}

uint32_t ct_obj_fetch_us(const struct ct_obj *obj)
{
    return obj->fetch_us;
}

size_t ct_obj_size(const struct ct_obj *obj)
{
    return obj->size;
}

/* ---- body ------------------------------------------------------------------------ */

static const struct ct_obj *body_owner(const struct ct_obj *obj)
{
    return obj->body_src ? obj->body_src : obj;
}

static uint64_t body_len_of(const struct ct_obj *obj)
{
    uint64_t n = 0;
    if (ct_obj_state(obj) == CT_OBJ_BUSY)
        return 0;
    const struct ct_cache_seg *seg = body_owner(obj)->seg_first;
    while (seg) {
        n += atomic_load_explicit(&seg->len, memory_order_acquire);
        seg = atomic_load_explicit(&seg->next, memory_order_acquire);
    }
    return n;
}

uint64_t ct_obj_body_len(const struct ct_obj *obj)
{
    return body_len_of(obj);
}

enum ct_obj_body ct_obj_body_next(const struct ct_obj *obj, struct ct_obj_body_pos *pos, size_t max,
                                  struct ct_str *chunk)
{
    /* The state first: if it says COMPLETE, the lengths read below are final. */
    enum ct_obj_state st = ct_obj_state(obj);
    if (st == CT_OBJ_BUSY)
        return CT_OBJ_BODY_WAIT;
    if (st == CT_OBJ_FAILED || st == CT_OBJ_ABANDONED)
        return CT_OBJ_BODY_FAILED;
    const struct ct_cache_seg *seg = pos->_seg ? pos->_seg : body_owner(obj)->seg_first;
    while (seg) {
        size_t len = atomic_load_explicit(&seg->len, memory_order_acquire);
        if (pos->_seg_off < len) {
            size_t n = len - pos->_seg_off;
            if (max && n > max)
                n = max;
            *chunk = ct_str_make(seg->data + pos->_seg_off, n);
            pos->_seg = seg;
            pos->_seg_off += n;
            pos->off += n;
            return CT_OBJ_BODY_DATA;
        }
        const struct ct_cache_seg *next = atomic_load_explicit(&seg->next, memory_order_acquire);
        if (!next)
            break;
        seg = next;
        pos->_seg = seg;
        pos->_seg_off = 0;
    }
    return st == CT_OBJ_COMPLETE ? CT_OBJ_BODY_END : CT_OBJ_BODY_WAIT;
}

int ct_obj_body_seek(const struct ct_obj *obj, struct ct_obj_body_pos *pos, uint64_t off)
{
    if (ct_obj_state(obj) == CT_OBJ_BUSY)
        return off == 0 ? CT_OK : CT_ELIMIT;
    const struct ct_cache_seg *seg = body_owner(obj)->seg_first;
    uint64_t skipped = 0;
    while (seg) {
        size_t len = atomic_load_explicit(&seg->len, memory_order_acquire);
        const struct ct_cache_seg *next = atomic_load_explicit(&seg->next, memory_order_acquire);
        /* Stop in this segment if OFF is inside it, or at its end with none after. */
        if (off - skipped < len || (off - skipped == len && !next)) {
            pos->_seg = seg;
            pos->_seg_off = (size_t)(off - skipped);
            pos->off = off;
            return CT_OK;
        }
        skipped += len;
        seg = next;
    }
    return CT_ELIMIT;
}
