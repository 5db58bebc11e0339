/*
 * cache/cache_int.h: what the files of cache/ share. Never included from
 * outside cache/ (tests and the proxy use cache/cache.h).
 *
 * Locking, in one place:
 * - shard->mtx guards the shard's table (slots, variant lists),
 *   its SIEVE queue and hand, its sweep and ban lurker cursors, each
 *   object's ban_seq, and the waiter lists of the objects of that shard.
 *   One shard lock at a time, never two.
 * - Order: (ban lurker lock ->) shard lock -> a tag shard lock, or shard lock
 *   -> the ban list rwlock (cache_tags.c, cache_ban.c); a tag lock and the
 *   ban lock are never held together.
 * - obj->refcnt, obj->state, obj->visited, segment lengths and links, and
 *   cache->bytes are atomics; everything else in an object is written by the
 *   fetcher before the release store of the state that publishes it
 *   (STREAMING publishes the head, COMPLETE the body) and immutable after.
 */
#ifndef CT_CACHE_INT_H
#define CT_CACHE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cache/cache.h"
#include "common/slab.h"

#define CT_OBJ_MAGIC 0x0b1ec7edu
#define CT_CACHE_MAGIC 0xcace57e5u

/* What one malloc costs beyond what was asked (glibc chunk header, rounding):
 * counted per allocation so the cap bounds real memory, not just payload. */
#define CT_CACHE_MALLOC_OVERHEAD 16

/* Object memory (the struct with its key, body segments) comes from the
 * slabs (common/slab.h) up to CT_SLAB_MAX bytes, so that a purge gives it
 * back to the kernel without malloc_trim's arena walk (issue 19); larger
 * requests from malloc. The cost counted against the cap is the slot's class
 * size, or the request plus malloc's overhead. Free with the size asked. */
static inline size_t ct_cache_alloc_cost(size_t n)
{
    size_t s = ct_slab_size(n);
    return s ? s : n + CT_CACHE_MALLOC_OVERHEAD;
}

static inline void *ct_cache_alloc(size_t n)
{
    return n <= CT_SLAB_MAX ? ct_slab_alloc(n) : ct_xmalloc(n);
}

static inline void ct_cache_dealloc(void *p, size_t n)
{
    if (n <= CT_SLAB_MAX)
        ct_slab_free(p);
    else
        free(p);
}

/* A Content-Length body of at least this many bytes gets its first segment
 * in a memfd mapping instead of the heap (cache_obj.c, ct_obj_body_fd()). */
#define CT_CACHE_MAPPED_MIN (64 * 1024)

/* Body segments grow by this much when no body_hint was given. */
#define CT_CACHE_SEG_SIZE (16 * 1024)

/* Object flags (written under the shard lock; read under it too). */
#define OBJ_F_LINKED 0x01 /* in the table (its key's variant list) and the SIEVE queue */
#define OBJ_F_HFM 0x02    /* a hit-for-miss marker, not a response */
#define OBJ_F_PURGED 0x04 /* removed while BUSY: never linked again */

struct ct_cache_seg {
    _Atomic(struct ct_cache_seg *) next; /* published with release */
    _Atomic size_t len;                  /* bytes written, published with release */
    size_t cap;
    char data[];
};

struct ct_cache_shard;

/* An object carries its key: the table's slots point at the newest object of
 * each key and the other variants hang off it (vnext), so a lookup hit reads
 * the slot and then one contiguous run of the object (the lookup fields, the
 * hash and the key bytes: two cache lines for a key up to ~45 bytes), with no
 * separate objhead to load in between (that was a third dependent miss per
 * hit when the objhead and object were not neighbours in memory).
 *
 * Field order matters: the cold fields (delivery, queue, bookkeeping) come
 * first and the fields a lookup reads come last, right before the key, so
 * they share lines with it. The magic is therefore not at offset 0: it opens
 * the hot part instead (CT_CHECK_OBJ works on any offset). */
struct ct_obj {
    /* written by the fetcher, published by the state store */
    uint16_t status;   /* fetcher, published by STREAMING */
    uint16_t date_len; /* blob layout, ditto */
    uint32_t head_len, etag_len, lm_len;
    float initial_age; /* corrected_initial_age (1 s precision to 190 days) */
    uint32_t size;     /* counted bytes, given back at free (objects < 4 GiB) */
    /* shared, under shard->mtx */
    CT_LIST_LINK(ct_obj) qlink; /* SIEVE queue: next toward the tail (older) */
    CT_HLIST_HEAD(ct_cache_waiter) waiters;
    /* set once at creation */
    struct ct_cache_shard *shard;
    /* written by the fetcher, published by the state store. The first segment
     * also carries the blob (head, etag, last-modified, date, vary) after its data
     * capacity: one allocation for head and a Content-Length body. */
    struct ct_cache_seg *seg_first, *seg_last;
    struct ct_obj *body_src; /* shared body (304 revalidation), holds a ref */
    ct_time_t response_time; /* RFC 9111 §4.2.3 */
    struct ct_cache_links *links; /* tag index links (cache_tags.c), while linked */
    uint64_t ban_seq; /* the newest ban it was tested against, or the newest there
                         was when its head was set (cache_ban.c); shard lock */

    /* ---- hot: what a lookup reads, in this order, then the key ---- */
    unsigned magic;
    _Atomic unsigned refcnt;
    _Atomic unsigned char state;   /* enum ct_obj_state, forward only */
    _Atomic unsigned char visited; /* SIEVE bit (OBJ_V_HIT), set on hit without the
                                      lock; the cost policy's lives and class mark
                                      (OBJ_V_*), written by the hand under the lock */
    unsigned char flags;           /* OBJ_F_*, shard lock */
    unsigned char body_mapped; /* seg_first lives in a memfd mapping (set before STREAMING);
                                  OBJ_MAPPED_BOUND: reserved for a bound (ct_obj_meta.
                                  body_hint_max) until ct_cache_obj_trim gives back what
                                  the body left of it (fetcher, before COMPLETE) */
    uint32_t vary_len;    /* blob layout, published by STREAMING */
    ct_time_t expires;    /* fresh before; hit-for-miss: valid before. A soft
                             purge lowers it under the shard lock after COMPLETE:
                             lock-free readers use obj_expires() */
    float grace, keep;    /* seconds past expires: serve stale / keep */
    struct ct_obj *vnext; /* next (older) variant of the key (shard lock); once
                             purged, next on the reclaim list (cache_reclaim.c) */
    /* set once at creation */
    uint64_t hash;
    uint32_t key_len;
    /* what its fetch cost the origin (ct_obj_set_fetch_us): fetcher, published
     * by COMPLETE; a hit reads it (origin time saved), here in the padding
     * before the key that the hit's cache lines hold anyway */
    uint32_t fetch_us;
    char key[];
};

/* The visited byte (cache_evict.c). A hit stores it with OBJ_V_HIT set when
 * that bit is clear; everything else is the hand's. */
#define OBJ_V_HIT 0x01
#define OBJ_V_LIVES_SHIFT 1
#define OBJ_V_LIVES_MAX 15 /* bits 1-4: passes the hand still spares it (cost) */
#define OBJ_V_CLASSED 0x80 /* its lives were set from its cost (cost) */

#define OBJ_MAPPED 1
#define OBJ_MAPPED_BOUND 2
#define CT_OBJ_HOT_OFFSET offsetof(struct ct_obj, magic)
_Static_assert(offsetof(struct ct_obj, key) - CT_OBJ_HOT_OFFSET <= 56,
               "a hit's fields and the key must stay together");

struct ct_cache_counters {
#define CT_CACHE_STAT_FIELD(name, text) _Atomic uint64_t name;
    CT_CACHE_STATS_TABLE(CT_CACHE_STAT_FIELD)
#undef CT_CACHE_STAT_FIELD
};

struct ct_cache_shard {
    pthread_mutex_t mtx;
    struct ct_cache *cache;
    uint64_t *slots;      /* tagged pointers to each key's newest object (cache_table.c) */
    size_t nslots;        /* power of two */
    _Atomic size_t nkeys; /* written under mtx, read relaxed by stats */
    /* SIEVE queue: head = newest, tail = oldest; hand walks tail -> head */
    CT_LIST_HEAD(ct_obj) q; /* first = newest */
    struct ct_obj *hand;
    size_t qlen;
    struct ct_obj *sweep;        /* expiry sweep cursor, walks like the hand */
    struct ct_obj *lurk;         /* ban lurker cursor, walks like the hand */
    struct ct_cache_counters st; /* written under mtx, read relaxed anywhere */
} __attribute__((aligned(64)));

struct ct_cache_tag_shard;
struct ct_cache_links;
struct ct_cache_bans;
struct ct_cache_reclaim;

struct ct_cache {
    unsigned magic;
    struct ct_cache_tag_shard *tags; /* the tag index (cache_tags.c) */
    struct ct_cache_config cfg;
    unsigned shard_bits;
    struct ct_cache_shard *shards;
    /* bans active now: read by every lookup (a line written only when a ban
     * is added or dropped), so the hit path pays nothing without bans */
    _Atomic unsigned nbans;
    struct ct_cache_bans *bans; /* cache_ban.c */
    _Atomic size_t bytes;   /* counted bytes in use */
    _Atomic size_t objects; /* objects allocated and not yet freed */
    _Atomic unsigned mapped_fds; /* memfds held by mapped bodies */
    _Atomic unsigned evict_cursor;
    /* cost policy (cache_evict.c): the mean fetch cost per KiB (us) of the
     * objects completed, a running mean. Read-modify-written without a lock by
     * every fetcher at its complete: a lost update only blurs a mean. */
    _Atomic double cost_avg;
    _Atomic unsigned cost_n; /* samples in it, up to COST_AVG_WINDOW */
    _Atomic unsigned sweep_cursor;
    /* purged objects whose tags and memory the lurker frees (cache_reclaim.c) */
    pthread_mutex_t reclaim_mtx;
    struct ct_obj *reclaim;           /* chained by vnext, reclaim_mtx */
    _Atomic size_t reclaim_pending;   /* written under reclaim_mtx */
};

/* Relaxed increment by the only writer (the shard lock holder): a plain
 * load+store, no locked instruction, still race-free for relaxed readers. */
#define CT_STAT_INC(sh, name)                                                                      \
    atomic_store_explicit(&(sh)->st.name,                                                          \
                          atomic_load_explicit(&(sh)->st.name, memory_order_relaxed) + 1,          \
                          memory_order_relaxed)

/* cache_tags.c. Link OBJ (its head being set, not COMPLETE yet) to TAGS
 * (each 1..CT_CACHE_TAG_MAX_LEN bytes, at most CT_CACHE_TAGS_MAX; duplicates
 * dropped) if it is still in the table: CT_OK or CT_ELIMIT (no memory). No
 * lock held. Unlink: shard lock held (ct_cache_unlink_obj). */
void ct_cache_tags_init(struct ct_cache *cache);
void ct_cache_tags_fini(struct ct_cache *cache);
int ct_cache_tags_link(struct ct_obj *obj, const struct ct_str *tags, size_t n);
void ct_cache_tags_unlink(struct ct_obj *obj);
/* The unlink in two steps: take OBJ's links (shard lock held), then unlink
 * and free them (no lock needed: the caller owns them; NULL: nothing). The
 * caller's reference must keep OBJ alive until the drop returns. */
struct ct_cache_links *ct_cache_tags_detach(struct ct_obj *obj);
void ct_cache_tags_drop(struct ct_cache *cache, struct ct_cache_links *ls);
void ct_cache_tags_stats(const struct ct_cache *cache, struct ct_cache_stats *st);

/* cache_ban.c. Test linked OBJ (STREAMING or COMPLETE, not a marker; shard
 * lock held) against the bans newer than obj->ban_seq, counting: a soft match
 * marks it stale; true if a hard one matched, and the caller must remove it
 * (ct_cache_obj_invalidate, HARD). Call only when ct_cache_ban_due(). */
void ct_cache_bans_init(struct ct_cache *cache);
void ct_cache_bans_fini(struct ct_cache *cache);
uint64_t ct_cache_ban_seq(const struct ct_cache *cache); /* the newest ban's id, 0: none yet */
bool ct_cache_ban_test(struct ct_cache_shard *sh, struct ct_obj *obj, ct_time_t now);
void ct_cache_bans_stats(const struct ct_cache *cache, struct ct_cache_stats *st);

/* May a lookup have to test OBJ against bans? (Inline: on every hit.) */
static inline bool ct_cache_ban_due(const struct ct_cache *cache)
{
    return CT_UNLIKELY(atomic_load_explicit(&cache->nbans, memory_order_relaxed) != 0);
}

/* cache_key.c: the host and target parts of key bytes KEY[0..LEN). */
void ct_cache_key_parts(const char *key, size_t len, struct ct_str *host, struct ct_str *target);

/* cache_store.c */
/* Remove linked OBJ (hard) or mark it stale at NOW (soft; a BUSY object,
 * which has no freshness yet, is removed). Shard lock held; counts nothing.
 * Returns true if it was removed. */
bool ct_cache_obj_invalidate(struct ct_cache_shard *sh, struct ct_obj *obj,
                             enum ct_cache_purge mode, ct_time_t now);
/* Purge linked OBJ (shard lock held): hard unlinks it, soft marks it stale
 * at NOW (a BUSY object, which has no freshness yet, is unlinked). An
 * unlinked object's tags and the table's reference go to LATER if given
 * (the lurker frees them), else at once. Returns the number of objects
 * purged (0 or 1). */
size_t ct_cache_purge_obj(struct ct_cache_shard *sh, struct ct_obj *obj, enum ct_cache_purge mode,
                          ct_time_t now, struct ct_cache_reclaim *later);

/* cache_reclaim.c: hard-purged objects out of the table, waiting for the
 * lurker to unlink their tags and drop the table's reference. A purge
 * collects them in a batch of its own (no lock), then pushes it once. A
 * purge of more than CT_CACHE_PURGE_INLINE objects defers the rest: below
 * that, the unlinks cost microseconds and the memory is back at once. */
#define CT_CACHE_PURGE_INLINE 64
struct ct_cache_reclaim {
    struct ct_obj *first, *last;
    size_t n;
};
void ct_cache_reclaim_add(struct ct_cache_reclaim *batch, struct ct_obj *obj); /* unlinked */
void ct_cache_reclaim_push(struct ct_cache *cache, struct ct_cache_reclaim *batch);
size_t ct_cache_reclaim_pending(const struct ct_cache *cache);
int ct_cache_reserve(struct ct_cache *cache, size_t n);
bool ct_cache_try_reserve(struct ct_cache *cache, size_t n); /* never evicts */
void ct_cache_unreserve(struct ct_cache *cache, size_t n);
void ct_cache_unlink_obj(struct ct_cache_shard *sh, struct ct_obj *obj);
void ct_cache_obj_release_busy(struct ct_obj *obj); /* takes the shard lock */

/* cache_table.c (shard lock held). The table maps a key to its newest
 * linked object (the "head"); the other variants follow through vnext. */
typedef size_t ct_cache_key_fn(struct ct_cache_shard *sh, struct ct_obj *head, void *arg);
void ct_cache_table_init(struct ct_cache_shard *sh, size_t nslots);
void ct_cache_table_fini(struct ct_cache_shard *sh);
/* The head of linked OBJ's key. */
struct ct_obj *ct_cache_table_head(struct ct_cache_shard *sh, const struct ct_obj *obj);
size_t ct_cache_table_grow_cost(const struct ct_cache_shard *sh); /* 0: no growth due */
/* Make room for one more key, growing the table if due (paid from *PREPAID,
 * what is used is taken off, or from free memory). False: full. */
bool ct_cache_table_room(struct ct_cache_shard *sh, size_t *prepaid);
void ct_cache_table_insert(struct ct_cache_shard *sh, struct ct_obj *obj); /* new key; room made */
/* Replace the head OLD of a key by NEW (same key), or remove the key if NEW is NULL. */
void ct_cache_table_replace(struct ct_cache_shard *sh, struct ct_obj *old, struct ct_obj *new);
/* Call FN on every key's head; FN removes all of the key's variants or none.
 * Returns the sum of FN's results. */
size_t ct_cache_table_each(struct ct_cache_shard *sh, ct_cache_key_fn *fn, void *arg);

/* cache_evict.c (shard lock held) */
void ct_cache_q_push(struct ct_cache_shard *sh, struct ct_obj *obj);
/* Cost policy: OBJ (its size and fetch cost final) joins the mean. Any thread. */
void ct_cache_cost_sample(struct ct_cache *cache, const struct ct_obj *obj);
void ct_cache_q_remove(struct ct_cache_shard *sh, struct ct_obj *obj);
struct ct_obj *ct_cache_q_victim(struct ct_cache_shard *sh);

/* cache_obj.c */
void ct_cache_obj_put(struct ct_obj *obj);  /* no lock taken: safe under a shard lock */
void ct_cache_obj_free(struct ct_obj *obj); /* refcount reached 0 */
/* ct_cache_obj_base_size(KEY's length) must be reserved. */
struct ct_obj *ct_cache_obj_new(struct ct_cache_shard *sh, uint64_t hash, struct ct_str key,
                                unsigned flags);
void ct_cache_obj_wake_all(struct ct_obj *obj); /* shard lock held */
/* Before COMPLETE, on the fetcher's thread, no lock held: a first segment
 * reserved for a bound (hint_max) gives the pages its body did not reach
 * back to the cap. */
void ct_cache_obj_trim(struct ct_obj *obj);

/* ---- the hit path's small helpers, inline: as calls across files they were
 * a fifth of a hit's instructions (callgrind, bench_cache). ---- */

/* Without the lock: a hint only. A prefetch never faults, so a stale array
 * (freed by a concurrent grow) or a mismatched size costs nothing but the hint. */
static inline void ct_cache_table_prefetch(struct ct_cache_shard *sh, uint64_t hash)
{
    uint64_t *slots = __atomic_load_n(&sh->slots, __ATOMIC_RELAXED);
    size_t n = __atomic_load_n(&sh->nslots, __ATOMIC_RELAXED);
    __builtin_prefetch(&slots[hash & (n - 1)]);
}

/* Ask for OBJ's struct and the start of its key (a purge, a few objects
 * ahead). Any thread, no lock: OBJ must be referenced. */
static inline void ct_cache_obj_prefetch(const struct ct_obj *obj)
{
    for (size_t off = 0; off < sizeof(struct ct_obj) + 64; off += 64)
        __builtin_prefetch((const char *)obj + off, 1);
}

/* Ask for what unlinking OBJ will touch besides its own lines: its queue
 * neighbours, its links array (cache_tags.c) and its first segment (freed
 * with it). Any thread, no lock: OBJ must be referenced, so its fields are
 * memory we may read; they may change meanwhile, written under the shard
 * lock by plain stores (a hint only, and a prefetch of memory freed since
 * never faults). CT_NO_TSAN: those writers are not atomic, so TSan would
 * report the pair as a race whenever a neighbour moves during a purge. */
CT_NO_TSAN static inline void ct_cache_obj_prefetch_unlink(const struct ct_obj *obj, bool links)
{
    __builtin_prefetch(__atomic_load_n(&obj->qlink.prev, __ATOMIC_RELAXED), 1);
    __builtin_prefetch(__atomic_load_n(&obj->qlink.next, __ATOMIC_RELAXED), 1);
    if (!links) /* deferred: only the table and the queue are touched now */
        return;
    const char *ls = (const char *)__atomic_load_n(&obj->links, __ATOMIC_RELAXED);
    for (size_t off = 0; ls && off < 384; off += 64) /* ten links: 328 bytes */
        __builtin_prefetch(ls + off, 1);
    __builtin_prefetch(__atomic_load_n(&obj->seg_first, __ATOMIC_RELAXED), 1);
}

/* The object struct with its key: what a lookup reserves to create one. */
static inline size_t ct_cache_obj_base_size(size_t key_len)
{
    return ct_cache_alloc_cost(sizeof(struct ct_obj) + key_len);
}

static inline bool ct_cache_obj_has_key(const struct ct_obj *obj, const struct ct_cache_key *key)
{
    return obj->hash == key->hash && obj->key_len == key->bytes.len &&
           memcmp(obj->key, key->bytes.p, key->bytes.len) == 0;
}

static inline enum ct_obj_state ct_cache_obj_state(const struct ct_obj *obj)
{
    return (enum ct_obj_state)atomic_load_explicit(&obj->state, memory_order_acquire);
}

/* expires, read without the shard lock (a soft purge may lower it). */
static inline ct_time_t obj_expires(const struct ct_obj *obj)
{
    ct_time_t e;
    __atomic_load(&obj->expires, &e, __ATOMIC_RELAXED);
    return e;
}

static inline bool ct_cache_obj_is_fresh(const struct ct_obj *obj, ct_time_t now)
{
    return now < obj_expires(obj);
}

static inline bool ct_cache_obj_is_expired(const struct ct_obj *obj, ct_time_t now)
{
    ct_time_t e = obj_expires(obj);
    if (obj->flags & OBJ_F_HFM)
        return now >= e;
    return now >= e + (double)obj->grace + (double)obj->keep;
}

static inline struct ct_obj *ct_cache_obj_ref(struct ct_obj *obj)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    unsigned old = atomic_fetch_add_explicit(&obj->refcnt, 1, memory_order_relaxed);
    CT_ASSERT(old > 0);
    return obj;
}

/* A slot: the head object's pointer in the low 48 bits, 16 bits of the hash
 * above (cache_table.c). Here because the lookup's probe is inline. */
#define CT_CACHE_TAG_SHIFT 48

static inline uint64_t ct_cache_slot_tag(uint64_t hash)
{
    return (hash >> 32) & 0xffff; /* not the index bits (low) nor the shard bits (top) */
}

static inline struct ct_obj *ct_cache_slot_obj(uint64_t slot)
{
    return (struct ct_obj *)(uintptr_t)(slot & ((UINT64_C(1) << CT_CACHE_TAG_SHIFT) - 1));
}

/* The head (newest variant) of KEY, or NULL (shard lock held). A slot whose
 * tag differs is skipped without touching its object. */
static inline struct ct_obj *ct_cache_table_find(struct ct_cache_shard *sh,
                                                 const struct ct_cache_key *key)
{
    size_t mask = sh->nslots - 1, i = key->hash & mask;
    uint64_t tag = ct_cache_slot_tag(key->hash);
    for (size_t n = 0; n < sh->nslots; n++, i = (i + 1) & mask) {
        uint64_t s = sh->slots[i];
        if (s == 0)
            return NULL;
        if ((s >> CT_CACHE_TAG_SHIFT) != tag)
            continue;
        struct ct_obj *obj = ct_cache_slot_obj(s);
        if (ct_cache_obj_has_key(obj, key))
            return obj;
    }
    return NULL;
}

#endif /* CT_CACHE_INT_H */
