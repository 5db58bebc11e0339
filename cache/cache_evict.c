/*
 * cache/cache_evict.c: the SIEVE queue of a shard (Zhang et al., "SIEVE is
 * simpler than LRU", NSDI'24).
 *
 * Why SIEVE and not LRU: an LRU hit moves the object to the head of a list,
 * a write to shared list pointers that needs the lock on every hit and
 * bounces cache lines between cores. A SIEVE hit only sets a "visited" bit
 * (one relaxed atomic store, skipped when already set), so the hit path
 * writes nothing shared. Eviction walks a hand from the oldest object toward
 * the newest, clearing visited bits and evicting the first unvisited object;
 * new objects enter at the head, survivors keep their place (no reordering).
 * On skewed (Zipf) web traces it misses less than LRU (the paper; our
 * bench_cache measures it), because one-hit wonders leave quickly while
 * popular objects stay behind the hand.
 *
 * Each shard has its own queue and hand (shard lock held for every function
 * here); memory pressure evicts round-robin across shards (cache_store.c),
 * which approximates one global queue when keys spread evenly over shards.
 * BUSY and STREAMING objects are never victims: waiters depend on them.
 */
#include "cache/cache_int.h"

/* Queue order: the first object is the newest; next points toward the last
 * (older), prev toward the first (newer). The hand moves last -> first
 * (along prev). */
void ct_cache_q_push(struct ct_cache_shard *sh, struct ct_obj *obj)
{
    CT_LIST_INSERT_HEAD(&sh->q, obj, qlink);
    sh->qlen++;
}

void ct_cache_q_remove(struct ct_cache_shard *sh, struct ct_obj *obj)
{
    /* Cursors pointing at OBJ move on to where they were going next. */
    if (sh->hand == obj)
        sh->hand = CT_LIST_PREV(obj, qlink);
    if (sh->sweep == obj)
        sh->sweep = CT_LIST_PREV(obj, qlink);
    if (sh->lurk == obj)
        sh->lurk = CT_LIST_PREV(obj, qlink);
    CT_LIST_REMOVE(&sh->q, obj, qlink);
    CT_ASSERT(sh->qlen > 0);
    sh->qlen--;
}

static bool is_evictable(const struct ct_obj *obj)
{
    if (obj->flags & OBJ_F_HFM)
        return true;
    return atomic_load_explicit(&obj->state, memory_order_acquire) == CT_OBJ_COMPLETE;
}

/* The next victim, or NULL after one full turn of the hand found none (all
 * visited: their bits are now clear, so the next call finds one; or all
 * busy). One turn only, so an object that was hit is never evicted by the
 * same call that cleared its bit: in a nearly empty shard that would evict
 * the hottest object; the caller tries another shard instead. */
struct ct_obj *ct_cache_q_victim(struct ct_cache_shard *sh)
{
    struct ct_obj *obj = sh->hand ? sh->hand : CT_LIST_LAST(&sh->q);
    size_t steps = sh->qlen;

    while (obj && steps--) {
        struct ct_obj *next = CT_LIST_PREV(obj, qlink);
        if (next == NULL) /* past the newest: the hand wraps to the oldest */
            next = CT_LIST_LAST(&sh->q);
        if (is_evictable(obj)) {
            if (!atomic_load_explicit(&obj->visited, memory_order_relaxed)) {
                sh->hand = CT_LIST_PREV(obj, qlink);
                return obj;
            }
            atomic_store_explicit(&obj->visited, 0, memory_order_relaxed);
        }
        obj = next;
    }
    sh->hand = obj;
    return NULL;
}
