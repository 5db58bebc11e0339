/*
 * cache/cache_store.c: the table. Shards, keys and their variant lists,
 * lookup-or-insert, the fetcher's end states, purge, expiry, memory.
 *
 *   cache ─┬─ shard[hash >> (64 - bits)] ── mutex
 *          │     ├─ slots[hash & mask ...] ─▶ obj (newest variant, carries the key;
 *          │     │                              open addressing, cache_table.c)
 *          │     │                             └─ vnext: obj ─▶ obj ... (older variants)
 *          │     └─ SIEVE queue of the shard's objects (cache_evict.c)
 *          └─ bytes (atomic): every counted byte, reserved before allocation
 *
 * Every object carries its key; the table points at the head (newest) of
 * each key's variant list, so adding or removing the head rewrites its slot.
 *
 * Locking: one shard mutex at a time, never two; a reservation that must
 * evict is made with no shard lock held (eviction locks shards one by one),
 * so the lookup that needs to create an object drops its lock, reserves, and
 * looks again. References: the table holds one per linked object; unlinking
 * drops it (under the shard lock; a free under the lock takes no lock).
 */
#include <stdlib.h>

#include "cache/cache_int.h"

#define INITIAL_SLOTS 64

static struct ct_cache_shard *shard_of(struct ct_cache *cache, uint64_t hash)
{
    return &cache->shards[cache->shard_bits ? hash >> (64 - cache->shard_bits) : 0];
}

/* ---- memory ---------------------------------------------------------------- */

bool ct_cache_try_reserve(struct ct_cache *cache, size_t n)
{
    size_t cur = atomic_load_explicit(&cache->bytes, memory_order_relaxed);
    do {
        if (n > cache->cfg.max_bytes || cur > cache->cfg.max_bytes - n)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&cache->bytes, &cur, cur + n,
                                                    memory_order_relaxed, memory_order_relaxed));
    return true;
}

void ct_cache_unreserve(struct ct_cache *cache, size_t n)
{
    size_t old = atomic_fetch_sub_explicit(&cache->bytes, n, memory_order_relaxed);
    CT_ASSERT(old >= n);
}

/* Evict one object, taking shards round-robin so pressure spreads like one
 * global queue. Keys land on shards at random, so shard sizes drift: the first
 * round skips shards holding less than half the average, so a small shard is
 * not drained down to its hottest objects while big ones keep cold ones. Later
 * rounds take any shard (a round may only clear visited bits; with the cost
 * policy, take a life from each object: up to OBJ_V_LIVES_MAX + 1 more
 * rounds before the costliest object's lives run out). False if
 * nothing is evictable (everything busy, or the table empty). No lock held on
 * entry; one shard lock at a time. */
static bool evict_one(struct ct_cache *cache)
{
    unsigned nshards = cache->cfg.shards;
    size_t avg = atomic_load_explicit(&cache->objects, memory_order_relaxed) / nshards;
    unsigned rounds = cache->cfg.evict == CT_CACHE_EVICT_COST ? 3 + OBJ_V_LIVES_MAX + 1 : 3;
    for (unsigned round = 0; round < rounds; round++) {
        for (unsigned i = 0; i < nshards; i++) {
            unsigned idx = atomic_fetch_add_explicit(&cache->evict_cursor, 1, memory_order_relaxed);
            struct ct_cache_shard *sh = &cache->shards[idx & (nshards - 1)];
            pthread_mutex_lock(&sh->mtx);
            struct ct_obj *victim = NULL;
            if (round > 0 || sh->qlen * 2 >= avg)
                victim = ct_cache_q_victim(sh);
            if (victim) {
                CT_STAT_INC(sh, evictions);
                ct_cache_unlink_obj(sh, victim);
            }
            pthread_mutex_unlock(&sh->mtx);
            if (victim)
                return true;
        }
    }
    return false;
}

/* Reserve N bytes, evicting as needed. No shard lock may be held. An evicted
 * object still referenced elsewhere frees nothing until its last release, so
 * this may evict several; it stops when the table has nothing evictable. */
int ct_cache_reserve(struct ct_cache *cache, size_t n)
{
    while (!ct_cache_try_reserve(cache, n)) {
        /* purged objects waiting for the lurker go before live ones */
        if (n <= cache->cfg.max_bytes && ct_cache_reclaim(cache, 1) == 1)
            continue;
        if (n > cache->cfg.max_bytes || !evict_one(cache)) {
            atomic_fetch_add_explicit(&cache->shards[0].st.nomem, 1, memory_order_relaxed);
            return CT_ELIMIT;
        }
    }
    return CT_OK;
}

/* ---- the table (shard lock held) ---------------------------------------------- */

/* Link OBJ as the newest variant of its key, whose current head is HEAD
 * (NULL: a new key, for which ct_cache_table_room() said yes). */
static void link_obj(struct ct_cache_shard *sh, struct ct_obj *head, struct ct_obj *obj)
{
    obj->vnext = head;
    if (head)
        ct_cache_table_replace(sh, head, obj);
    else
        ct_cache_table_insert(sh, obj);
    obj->flags |= OBJ_F_LINKED;
    ct_cache_q_push(sh, obj);
}

/* Take OBJ out of the table: its key's variant list (the key goes with its
 * last variant), the queue. The table's reference stays with the caller. */
static void unlink_table(struct ct_cache_shard *sh, struct ct_obj *obj)
{
    CT_ASSERT(obj->flags & OBJ_F_LINKED);
    struct ct_obj *head = ct_cache_table_head(sh, obj);
    if (head == obj) {
        ct_cache_table_replace(sh, obj, obj->vnext); /* NULL: the key goes */
    } else {
        struct ct_obj *prev = head;
        while (prev->vnext != obj)
            prev = prev->vnext;
        prev->vnext = obj->vnext;
    }
    obj->vnext = NULL;
    obj->flags &= (unsigned char)~OBJ_F_LINKED;
    ct_cache_q_remove(sh, obj);
}

/* Take OBJ out of the table and drop the table's reference (which may free
 * it). */
void ct_cache_unlink_obj(struct ct_cache_shard *sh, struct ct_obj *obj)
{
    unlink_table(sh, obj);
    /* before the table's reference goes: the tag index may only point at
     * objects that reference keeps alive (cache_tags.c) */
    ct_cache_tags_unlink(obj);
    ct_cache_obj_put(obj); /* the table's reference; no lock taken */
}

/* ---- lookup ----------------------------------------------------------------------- */

struct scan {
    struct ct_obj *fresh, *stale, *busy, *busy_match, *hfm;
    bool other_variant;  /* a response under the key the request does not select */
    bool reaped_match;   /* a response it selects was expired and reaped here */
};

/* A response stored without Vary bytes answers every request (RFC 9111
 * §4.1: only a Vary header makes the selecting fields matter); checking that
 * first also spares the hit path a cache miss on the blob. */
static bool vary_matches(const struct ct_cache_lookup_req *req, const struct ct_obj *obj)
{
    if (obj->vary_len == 0)
        return true;
    struct ct_str stored = ct_obj_vary(obj);
    if (req->match)
        return req->match(stored, req->vary, req->match_arg);
    return ct_str_eq(stored, req->vary);
}

/* Walk the variants from *HEADP: reap the expired, remember the first fresh
 * match, the first stale match, busy objects and an active hit-for-miss
 * marker. *HEADP follows the head as reaping removes it (NULL: the key went
 * with its last variant). */
static void scan_variants(struct ct_cache_shard *sh, struct ct_obj **headp,
                          const struct ct_cache_lookup_req *req, ct_time_t now, struct scan *sc)
{
    struct ct_obj *obj = *headp, *next;
    for (; obj; obj = next) {
        next = obj->vnext;
        enum ct_obj_state st = ct_cache_obj_state(obj);
        bool hfm = obj->flags & OBJ_F_HFM;
        if ((hfm || st == CT_OBJ_COMPLETE) && ct_cache_obj_is_expired(obj, now)) {
            CT_STAT_INC(sh, expired);
            if (!hfm) { /* for the miss kind (RFC 9211): which one went */
                if (vary_matches(req, obj))
                    sc->reaped_match = true;
                else
                    sc->other_variant = true;
            }
            if (obj == *headp)
                *headp = next;
            ct_cache_unlink_obj(sh, obj);
            continue;
        }
        if (hfm) {
            sc->hfm = sc->hfm ? sc->hfm : obj;
        } else if (st == CT_OBJ_BUSY) {
            sc->busy = sc->busy ? sc->busy : obj;
        } else if (!vary_matches(req, obj)) {
            sc->other_variant = true;
        } else if (st == CT_OBJ_STREAMING) {
            sc->busy_match = sc->busy_match ? sc->busy_match : obj;
        } else if (ct_cache_obj_is_fresh(obj, now) && !req->revalidate) {
            sc->fresh = obj;
            return; /* newest fresh match wins */
        } else if (!sc->stale) {
            sc->stale = obj;
        }
    }
}

/* While bans are active: test the variants from *HEADP against the bans
 * they have not passed (cache_ban.c) and remove the banned ones, as a reap
 * for the miss kind (RFC 9211 fwd=miss). Out of line, before scan_variants,
 * so the hit path pays one load and a branch for bans. */
static __attribute__((noinline, cold)) void ban_variants(struct ct_cache_shard *sh,
                                                          struct ct_obj **headp,
                                                          const struct ct_cache_lookup_req *req,
                                                          ct_time_t now, struct scan *sc)
{
    for (struct ct_obj *obj = *headp, *next; obj; obj = next) {
        next = obj->vnext;
        if ((obj->flags & OBJ_F_HFM) || ct_cache_obj_state(obj) == CT_OBJ_BUSY ||
            !ct_cache_ban_test(sh, obj, now))
            continue;
        if (vary_matches(req, obj))
            sc->reaped_match = true;
        else
            sc->other_variant = true;
        if (obj == *headp)
            *headp = next;
        ct_cache_obj_invalidate(sh, obj, CT_CACHE_PURGE_HARD, now);
    }
}

/* Create the BUSY object for a miss as the new head of KEY (current head
 * HEAD, NULL if the key is new). Its reservation was made by the caller;
 * what is used is taken off *RESERVED (with the table's growth). NULL if the
 * table is full. */
static struct ct_obj *new_fetch(struct ct_cache_shard *sh, struct ct_obj *head,
                                const struct ct_cache_key *key, size_t *reserved)
{
    size_t base = ct_cache_obj_base_size(key->bytes.len);
    CT_ASSERT(*reserved >= base);
    if (!head) {
        *reserved -= base; /* the growth is what stays beyond the object */
        bool room = ct_cache_table_room(sh, reserved);
        *reserved += base;
        if (!room)
            return NULL;
    }
    struct ct_obj *obj = ct_cache_obj_new(sh, key->hash, key->bytes, 0);
    *reserved -= (size_t)obj->size;
    link_obj(sh, head, obj);
    return ct_cache_obj_ref(obj); /* one for the table, one for the fetcher */
}

/* The SIEVE bit: a relaxed load, and a store only when it is not set yet, so
 * hits on a popular object do not keep dirtying its line (no locked
 * instruction either way: the eviction hand clears it under the lock). */
static void mark_visited(struct ct_obj *obj)
{
    unsigned char v = atomic_load_explicit(&obj->visited, memory_order_relaxed);
    if (!(v & OBJ_V_HIT)) /* the cost policy's lives ride along (cache_evict.c) */
        atomic_store_explicit(&obj->visited, v | OBJ_V_HIT, memory_order_relaxed);
}

static enum ct_cache_lookup decide(struct ct_cache_shard *sh, struct scan *sc,
                                   struct ct_cache_lookup_res *res, bool *need_fetch)
{
    *need_fetch = false;
    res->miss = CT_CACHE_MISS_URI; /* a retry may find something else */
    if (sc->fresh) {
        mark_visited(sc->fresh);
        res->obj = ct_cache_obj_ref(sc->fresh);
        return CT_CACHE_HIT;
    }
    if (sc->hfm) {
        return CT_CACHE_PASS;
    }
    struct ct_obj *busy = sc->busy_match ? sc->busy_match : sc->busy;
    if (sc->stale) {
        mark_visited(sc->stale);
        res->obj = ct_cache_obj_ref(sc->stale);
        if (busy)
            res->busy = ct_cache_obj_ref(busy);
        *need_fetch = !busy;
        return CT_CACHE_STALE;
    }
    if (busy) {
        res->busy = ct_cache_obj_ref(busy);
        return CT_CACHE_BUSY;
    }
    *need_fetch = true;
    res->miss = sc->reaped_match    ? CT_CACHE_MISS_OTHER
                : sc->other_variant ? CT_CACHE_MISS_VARY
                                    : CT_CACHE_MISS_URI;
    return CT_CACHE_MISS;
}

/* Counted once per lookup, after any retry (shard lock held). */
static void count_lookup(struct ct_cache_shard *sh, enum ct_cache_lookup kind)
{
    switch (kind) {
    case CT_CACHE_HIT: CT_STAT_INC(sh, hits); break;
    case CT_CACHE_STALE: CT_STAT_INC(sh, stale); break;
    case CT_CACHE_BUSY: CT_STAT_INC(sh, busy); break;
    case CT_CACHE_PASS: CT_STAT_INC(sh, pass); break;
    case CT_CACHE_MISS: CT_STAT_INC(sh, misses); break;
    }
}

enum ct_cache_lookup ct_cache_lookup(struct ct_cache *cache, const struct ct_cache_lookup_req *req,
                                     ct_time_t now, struct ct_cache_lookup_res *res)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    const struct ct_cache_key *key = req->key;
    struct ct_cache_shard *sh = shard_of(cache, key->hash);
    size_t base = ct_cache_obj_base_size(key->bytes.len), reserved = 0;
    enum ct_cache_lookup kind;
    bool need_fetch;

    memset(res, 0, sizeof(*res));
    ct_cache_table_prefetch(sh, key->hash); /* overlap the slot's cache miss with the lock */
    pthread_mutex_lock(&sh->mtx);
    if (!req->uncounted)
        CT_STAT_INC(sh, lookups);
    for (;;) {
        struct ct_obj *head = ct_cache_table_find(sh, key);
        struct scan sc = {0};
        if (head && ct_cache_ban_due(cache))
            ban_variants(sh, &head, req, now, &sc); /* may remove the key */
        if (head)
            scan_variants(sh, &head, req, now, &sc); /* may reap the key */
        kind = decide(sh, &sc, res, &need_fetch);
        if (!need_fetch || req->no_insert)
            break;
        /* object with its key + the table's growth if this insert triggers it */
        size_t need = base + (head ? 0 : ct_cache_table_grow_cost(sh));
        if (reserved >= need || ct_cache_try_reserve(cache, need - reserved)) {
            reserved = CT_MAX(reserved, need);
            res->fetch = new_fetch(sh, head, key, &reserved);
            break;
        }
        /* Reserving may evict, which locks shards: drop ours and look again,
         * since someone may have inserted the key meanwhile. */
        pthread_mutex_unlock(&sh->mtx);
        bool ok = ct_cache_reserve(cache, need - reserved) == CT_OK;
        if (ok)
            ct_cache_lookup_res_release(res); /* may take the lock: not held */
        pthread_mutex_lock(&sh->mtx);
        if (!ok)
            break; /* no fetch object: the caller fetches on its own */
        reserved = need;
    }
    if (!req->uncounted)
        count_lookup(sh, kind);
    pthread_mutex_unlock(&sh->mtx);
    if (reserved)
        ct_cache_unreserve(cache, reserved);
    return kind;
}

void ct_cache_lookup_res_release(struct ct_cache_lookup_res *res)
{
    /* tested here: a hit has only OBJ, and each call was ~7 instructions */
    if (res->obj)
        ct_obj_release(&res->obj);
    if (res->busy)
        ct_obj_release(&res->busy);
    if (res->fetch)
        ct_obj_release(&res->fetch);
}

/* ---- the fetcher's end states ------------------------------------------------------ */

void ct_obj_complete(struct ct_obj *obj, ct_time_t now)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    CT_ASSERT(ct_obj_state(obj) == CT_OBJ_STREAMING);
    struct ct_cache_shard *sh = obj->shard;

    ct_cache_obj_trim(obj); /* the body's length is final: no bound left to hold */
    if (sh->cache->cfg.evict == CT_CACHE_EVICT_COST)
        ct_cache_cost_sample(sh->cache, obj);
    pthread_mutex_lock(&sh->mtx);
    atomic_store_explicit(&obj->state, CT_OBJ_COMPLETE, memory_order_release);
    if (obj->flags & OBJ_F_LINKED) {
        /* Older copies of this variant, and a hit-for-miss marker, are
         * replaced; complete variants past max_variants (oldest last in the
         * list) are evicted. OBJ itself is never the one to go. */
        struct ct_str vary = ct_obj_vary(obj);
        unsigned kept = 0;
        struct ct_obj *o = ct_cache_table_head(sh, obj), *next;
        for (; o; o = next) {
            next = o->vnext;
            if (o == obj || ct_obj_state(o) != CT_OBJ_COMPLETE || (o->flags & OBJ_F_HFM)) {
                if (o->flags & OBJ_F_HFM) {
                    CT_STAT_INC(sh, replaced);
                    ct_cache_unlink_obj(sh, o);
                }
                continue;
            }
            if (ct_str_eq(ct_obj_vary(o), vary)) {
                CT_STAT_INC(sh, replaced);
                ct_cache_unlink_obj(sh, o);
            } else if (++kept >= sh->cache->cfg.max_variants) {
                CT_STAT_INC(sh, evictions);
                ct_cache_unlink_obj(sh, o);
            }
        }
        CT_STAT_INC(sh, inserts);
    }
    ct_cache_obj_wake_all(obj);
    pthread_mutex_unlock(&sh->mtx);
}

/* OBJ ends FAILED (shard lock held). */
static void fail_locked(struct ct_cache_shard *sh, struct ct_obj *obj)
{
    CT_ASSERT(ct_obj_state(obj) <= CT_OBJ_STREAMING);
    atomic_store_explicit(&obj->state, CT_OBJ_FAILED, memory_order_release);
    if (obj->flags & OBJ_F_LINKED)
        ct_cache_unlink_obj(sh, obj); /* the fetcher still holds its reference */
    ct_cache_obj_wake_all(obj);
}

void ct_obj_fail(struct ct_obj *obj)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    struct ct_cache_shard *sh = obj->shard;

    pthread_mutex_lock(&sh->mtx);
    fail_locked(sh, obj);
    CT_STAT_INC(sh, failed);
    pthread_mutex_unlock(&sh->mtx);
}

void ct_cache_lookup_answered(struct ct_cache *cache, const struct ct_cache_key *key,
                              struct ct_obj **fetch)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    struct ct_cache_shard *sh = shard_of(cache, key->hash);
    struct ct_obj *obj = fetch ? *fetch : NULL;
    pthread_mutex_lock(&sh->mtx);
    /* the miss it counted becomes a hit (the counters only grow but here) */
    atomic_store_explicit(&sh->st.misses,
                          atomic_load_explicit(&sh->st.misses, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    CT_STAT_INC(sh, hits);
    if (obj) {
        CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
        CT_ASSERT(obj->shard == sh); /* the key's own slot */
        fail_locked(sh, obj);
    }
    pthread_mutex_unlock(&sh->mtx);
    if (obj)
        ct_obj_release(fetch);
}

/* Release a reference on a BUSY/STREAMING object, under the shard lock, so
 * the table cannot drop its own reference meanwhile. If only the table's is
 * left, the fetcher let go without ending it (a proxy bug, or a path that
 * forgot ct_obj_fail): nobody can complete it any more, and it would make
 * every later lookup of the key wait. Fail it. Lookups take references under
 * this lock too, so the count cannot change under us. */
void ct_cache_obj_release_busy(struct ct_obj *obj)
{
    struct ct_cache_shard *sh = obj->shard;
    pthread_mutex_lock(&sh->mtx);
    unsigned old = atomic_fetch_sub_explicit(&obj->refcnt, 1, memory_order_acq_rel);
    CT_ASSERT(old > 0);
    if (old == 2 && (obj->flags & OBJ_F_LINKED) && !(obj->flags & OBJ_F_HFM) &&
        ct_obj_state(obj) < CT_OBJ_COMPLETE) {
        atomic_store_explicit(&obj->state, CT_OBJ_FAILED, memory_order_release);
        CT_STAT_INC(sh, failed);
        ct_cache_obj_wake_all(obj);
        ct_cache_unlink_obj(sh, obj); /* drops the last reference: frees */
    }
    pthread_mutex_unlock(&sh->mtx);
    if (old == 1)
        ct_cache_obj_free(obj); /* not linked (purged, unused marker): free outside the lock */
}

void ct_obj_abandon(struct ct_obj *obj, ct_time_t now, double hfm_ttl)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    CT_ASSERT(ct_obj_state(obj) <= CT_OBJ_STREAMING);
    struct ct_cache_shard *sh = obj->shard;
    struct ct_obj *marker = NULL;

    if (hfm_ttl > 0 &&
        ct_cache_reserve(sh->cache, ct_cache_obj_base_size(obj->key_len)) == CT_OK) {
        marker = ct_cache_obj_new(sh, obj->hash, ct_str_make(obj->key, obj->key_len), OBJ_F_HFM);
        marker->expires = now + hfm_ttl;
    }
    pthread_mutex_lock(&sh->mtx);
    atomic_store_explicit(&obj->state, CT_OBJ_ABANDONED, memory_order_release);
    if (obj->flags & OBJ_F_LINKED) {
        if (marker) {
            /* One marker per key: an older one is replaced. Link the new one
             * before unlinking OBJ so the key stays in the table. */
            for (struct ct_obj *o = ct_cache_table_head(sh, obj), *next; o; o = next) {
                next = o->vnext;
                if (o->flags & OBJ_F_HFM)
                    ct_cache_unlink_obj(sh, o);
            }
            /* the table takes the marker's only reference */
            link_obj(sh, ct_cache_table_head(sh, obj), marker);
            marker = NULL;
        }
        ct_cache_unlink_obj(sh, obj);
    }
    CT_STAT_INC(sh, abandoned);
    ct_cache_obj_wake_all(obj);
    pthread_mutex_unlock(&sh->mtx);
    ct_obj_release(&marker); /* unused: OBJ was purged meanwhile */
}

/* ---- purge and expiry ------------------------------------------------------------------ */

/* Hard: unlink OBJ, and mark it so that its fetcher's complete cannot make
 * it visible again (a BUSY one); with LATER, its tags and the table's
 * reference go to that batch for the lurker (cache_reclaim.c). */
static bool invalidate(struct ct_cache_shard *sh, struct ct_obj *obj, enum ct_cache_purge mode,
                       ct_time_t now, struct ct_cache_reclaim *later)
{
    enum ct_obj_state st = ct_obj_state(obj);
    if (mode == CT_CACHE_PURGE_SOFT && !(obj->flags & OBJ_F_HFM) &&
        (st == CT_OBJ_STREAMING || st == CT_OBJ_COMPLETE)) {
        /* Stale from now on; lookups read expires under this lock, the
         * proxy without it (obj_expires): one atomic store serves both. */
        if (now < obj->expires)
            __atomic_store(&obj->expires, &now, __ATOMIC_RELAXED);
        return false;
    }
    obj->flags |= OBJ_F_PURGED;
    if (later) {
        unlink_table(sh, obj);
        ct_cache_reclaim_add(later, obj);
        CT_STAT_INC(sh, purge_deferred);
    } else {
        ct_cache_unlink_obj(sh, obj);
    }
    return true;
}

bool ct_cache_obj_invalidate(struct ct_cache_shard *sh, struct ct_obj *obj,
                             enum ct_cache_purge mode, ct_time_t now)
{
    return invalidate(sh, obj, mode, now, NULL);
}

size_t ct_cache_purge_obj(struct ct_cache_shard *sh, struct ct_obj *obj, enum ct_cache_purge mode,
                          ct_time_t now, struct ct_cache_reclaim *later)
{
    if (invalidate(sh, obj, mode, now, later))
        CT_STAT_INC(sh, purged);
    else
        CT_STAT_INC(sh, soft_purged);
    return 1;
}

struct purge_how {
    enum ct_cache_purge mode;
    ct_time_t now;
    struct ct_str prefix;
    struct ct_cache_reclaim *later; /* NULL: free at once */
    size_t seen;                    /* objects hard-purged so far */
};

static size_t purge_key(struct ct_cache_shard *sh, struct ct_obj *head, void *arg)
{
    struct purge_how *how = arg;
    size_t n = 0;
    for (struct ct_obj *obj = head, *next; obj; obj = next) {
        next = obj->vnext;
        /* as a tag purge: past the first few, the lurker frees them */
        bool defer = how && how->later && how->mode == CT_CACHE_PURGE_HARD &&
                     how->seen++ >= CT_CACHE_PURGE_INLINE;
        n += ct_cache_purge_obj(sh, obj, how ? how->mode : CT_CACHE_PURGE_HARD,
                                how ? how->now : 0, defer ? how->later : NULL);
    }
    return n;
}

size_t ct_cache_purge_key_mode(struct ct_cache *cache, const struct ct_cache_key *key,
                               enum ct_cache_purge mode, ct_time_t now)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    struct ct_cache_shard *sh = shard_of(cache, key->hash);
    struct purge_how how = {.mode = mode, .now = now};
    size_t n = 0;

    pthread_mutex_lock(&sh->mtx);
    struct ct_obj *head = ct_cache_table_find(sh, key);
    if (head)
        n = purge_key(sh, head, &how);
    pthread_mutex_unlock(&sh->mtx);
    return n;
}

size_t ct_cache_purge(struct ct_cache *cache, const struct ct_cache_key *key)
{
    return ct_cache_purge_key_mode(cache, key, CT_CACHE_PURGE_HARD, 0);
}

static size_t purge_if_prefix(struct ct_cache_shard *sh, struct ct_obj *head, void *arg)
{
    struct purge_how *how = arg;
    if (head->key_len < how->prefix.len ||
        (how->prefix.len && memcmp(head->key, how->prefix.p, how->prefix.len) != 0))
        return 0;
    return purge_key(sh, head, arg);
}

size_t ct_cache_purge_prefix_mode(struct ct_cache *cache, struct ct_str prefix,
                                  enum ct_cache_purge mode, ct_time_t now)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    struct ct_cache_reclaim later = {0};
    struct purge_how how = {.mode = mode, .now = now, .prefix = prefix, .later = &later};
    size_t n = 0;

    for (unsigned s = 0; s < cache->cfg.shards; s++) {
        struct ct_cache_shard *sh = &cache->shards[s];
        pthread_mutex_lock(&sh->mtx);
        n += ct_cache_table_each(sh, purge_if_prefix, &how);
        pthread_mutex_unlock(&sh->mtx);
        ct_cache_reclaim_push(cache, &later); /* the lurker may start on them */
    }
    return n;
}

size_t ct_cache_purge_prefix(struct ct_cache *cache, struct ct_str prefix)
{
    return ct_cache_purge_prefix_mode(cache, prefix, CT_CACHE_PURGE_HARD, 0);
}

/* Examine up to QUOTA objects of SH from its sweep cursor toward the newest. */
static size_t sweep_shard(struct ct_cache_shard *sh, ct_time_t now, size_t quota, size_t *examined)
{
    size_t n = 0;
    pthread_mutex_lock(&sh->mtx);
    struct ct_obj *obj = sh->sweep ? sh->sweep : CT_LIST_LAST(&sh->q);
    quota = CT_MIN(quota, sh->qlen);
    while (obj && quota--) {
        struct ct_obj *next = CT_LIST_PREV(obj, qlink);
        bool done = (obj->flags & OBJ_F_HFM) || ct_obj_state(obj) == CT_OBJ_COMPLETE;
        (*examined)++;
        if (done && ct_cache_obj_is_expired(obj, now)) {
            CT_STAT_INC(sh, expired);
            ct_cache_unlink_obj(sh, obj);
            n++;
        }
        obj = next;
    }
    sh->sweep = obj; /* NULL: start again from the oldest next time */
    pthread_mutex_unlock(&sh->mtx);
    return n;
}

size_t ct_cache_expire_some(struct ct_cache *cache, ct_time_t now, size_t budget)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    unsigned nshards = cache->cfg.shards;
    size_t quota = CT_MAX(budget / nshards, (size_t)8), examined = 0, n = 0;

    for (unsigned i = 0; i < nshards && examined < budget; i++) {
        unsigned idx = atomic_fetch_add_explicit(&cache->sweep_cursor, 1, memory_order_relaxed);
        n += sweep_shard(&cache->shards[idx & (nshards - 1)], now, CT_MIN(quota, budget - examined),
                         &examined);
    }
    return n;
}

/* ---- the store ------------------------------------------------------------------------- */

bool ct_cache_fits(const struct ct_cache *cache, uint64_t bytes)
{
    return bytes <= cache->cfg.max_object_size;
}

void ct_cache_stats(const struct ct_cache *cache, struct ct_cache_stats *st)
{
    memset(st, 0, sizeof(*st));
    for (unsigned s = 0; s < cache->cfg.shards; s++) {
        const struct ct_cache_shard *sh = &cache->shards[s];
#define CT_CACHE_STAT_SUM(name, text)                                                              \
    st->name += atomic_load_explicit(&sh->st.name, memory_order_relaxed);
        CT_CACHE_STATS_TABLE(CT_CACHE_STAT_SUM)
#undef CT_CACHE_STAT_SUM
        st->keys += atomic_load_explicit(&sh->nkeys, memory_order_relaxed);
    }
    st->bytes = atomic_load_explicit(&cache->bytes, memory_order_relaxed);
    st->max_bytes = cache->cfg.max_bytes;
    st->objects = atomic_load_explicit(&cache->objects, memory_order_relaxed);
    st->reclaim_pending = ct_cache_reclaim_pending(cache);
    ct_cache_tags_stats(cache, st);
    ct_cache_bans_stats(cache, st);
}

struct ct_cache *ct_cache_new(const struct ct_cache_config *cfg)
{
    struct ct_cache_config c = *cfg;
    if (c.shards == 0)
        c.shards = 64;
    if (c.max_variants == 0)
        c.max_variants = 32;
    if (c.max_bans == 0)
        c.max_bans = 1000;
    if (c.shards > 4096 || (c.shards & (c.shards - 1)) || c.max_bytes < 4096 ||
        c.max_object_size == 0 || c.max_object_size > c.max_bytes ||
        c.max_object_size >= UINT32_MAX - (64 << 10) ||
        (c.evict != CT_CACHE_EVICT_SIEVE && c.evict != CT_CACHE_EVICT_COST))
        return NULL;
    size_t table = (size_t)c.shards * INITIAL_SLOTS * sizeof(uint64_t);
    if (table >= c.max_bytes / 2)
        return NULL; /* the empty table alone would eat the cap */

    struct ct_cache *cache = ct_xcalloc(1, sizeof(*cache));
    cache->magic = CT_CACHE_MAGIC;
    cache->cfg = c;
    while ((1u << cache->shard_bits) < c.shards)
        cache->shard_bits++;
    cache->shards = aligned_alloc(64, sizeof(struct ct_cache_shard) * c.shards);
    CT_ASSERT(cache->shards != NULL);
    memset(cache->shards, 0, sizeof(struct ct_cache_shard) * c.shards);
    for (unsigned s = 0; s < c.shards; s++) {
        struct ct_cache_shard *sh = &cache->shards[s];
        CT_ASSERT(pthread_mutex_init(&sh->mtx, NULL) == 0);
        sh->cache = cache;
        ct_cache_table_init(sh, INITIAL_SLOTS);
    }
    atomic_init(&cache->bytes, table);
    CT_ASSERT(pthread_mutex_init(&cache->reclaim_mtx, NULL) == 0);
    ct_cache_tags_init(cache);
    ct_cache_bans_init(cache);
    return cache;
}

void ct_cache_free(struct ct_cache **cachep)
{
    struct ct_cache *cache = *cachep;
    if (!cache)
        return;
    *cachep = NULL;
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    for (unsigned s = 0; s < cache->cfg.shards; s++) {
        struct ct_cache_shard *sh = &cache->shards[s];
        pthread_mutex_lock(&sh->mtx);
        ct_cache_table_each(sh, purge_key, NULL);
        pthread_mutex_unlock(&sh->mtx);
    }
    ct_cache_reclaim(cache, SIZE_MAX); /* purged, the lurker had not got to them */
    pthread_mutex_destroy(&cache->reclaim_mtx);
    /* Every reference handed out must be back: objects would outlive us. */
    CT_ASSERT(atomic_load_explicit(&cache->objects, memory_order_relaxed) == 0);
    ct_cache_tags_fini(cache);
    ct_cache_bans_fini(cache);
    for (unsigned s = 0; s < cache->cfg.shards; s++) {
        ct_cache_table_fini(&cache->shards[s]);
        pthread_mutex_destroy(&cache->shards[s].mtx);
    }
    free(cache->shards);
    cache->magic = 0;
    free(cache);
}
