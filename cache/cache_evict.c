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
 *
 * The cost policy (cache.eviction = "cost", issue 46) is SIEVE with
 * GreedyDual weights (Cao & Irani's H = L + cost/size), kept so that a hit
 * still writes nothing shared: no heap, no per-hit key update. When the hand
 * first meets a complete object it classes it by its fetch cost per KiB
 * (ct_obj_fetch_us / size) against the running mean of that density over
 * the objects completed (all shards': a shard may hold a handful):
 * at most the mean 0 lives, up to 4x 1, 16x 3, 64x 7, beyond 15 (log-spaced
 * classes, as CAMP rounds cost/size). A life is one pass of the hand that
 * spares an unvisited object (its H above the rising L); a pass that finds
 * it visited clears the bit and gives the lives back, plus one (a hit puts H
 * back at L + cost/size). So a slow object hit rarely outlives many cheap
 * one-hit objects, and a cheap popular object, visited at every pass, is
 * never evicted, as with SIEVE. Objects of unknown cost (0) are class 0:
 * plain SIEVE. The lives sit in the visited byte beside the hit bit; a hit
 * racing the hand may store back lives the hand just took (a relaxed
 * store of a stale byte), which only gives the object what a hit gives it.
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

#define COST_AVG_WINDOW 256 /* the mean follows about the last this many objects */

static double cost_density(const struct ct_obj *obj)
{
    return obj->fetch_us && obj->size ? (double)obj->fetch_us * 1024.0 / (double)obj->size : 0;
}

void ct_cache_cost_sample(struct ct_cache *cache, const struct ct_obj *obj)
{
    double d = cost_density(obj);
    if (d <= 0)
        return;
    /* a plain mean over the first samples, then a running one: the first
     * object does not set the scale for long */
    unsigned n = atomic_load_explicit(&cache->cost_n, memory_order_relaxed);
    if (n < COST_AVG_WINDOW)
        atomic_store_explicit(&cache->cost_n, ++n, memory_order_relaxed);
    double avg = atomic_load_explicit(&cache->cost_avg, memory_order_relaxed);
    atomic_store_explicit(&cache->cost_avg, avg + (d - avg) / n, memory_order_relaxed);
}

/* Lives for OBJ's class: its fetch cost per KiB against the mean of the
 * objects completed. */
static unsigned cost_lives(const struct ct_cache_shard *sh, const struct ct_obj *obj)
{
    double d = cost_density(obj);
    double avg = atomic_load_explicit(&sh->cache->cost_avg, memory_order_relaxed);
    if (d <= 0 || avg <= 0)
        return 0;
    unsigned lives = 0;
    for (double bound = avg; d > bound && lives < OBJ_V_LIVES_MAX; bound *= 4)
        lives = lives * 2 + 1;
    return lives;
}

static unsigned char with_lives(unsigned lives)
{
    return (unsigned char)(OBJ_V_CLASSED | CT_MIN(lives, OBJ_V_LIVES_MAX) << OBJ_V_LIVES_SHIFT);
}

/* The cost policy at OBJ (evictable, shard lock held): true if it is the
 * victim, else what the pass does to its lives. */
static bool cost_pass(struct ct_cache_shard *sh, struct ct_obj *obj)
{
    unsigned char v = atomic_load_explicit(&obj->visited, memory_order_relaxed);
    if (!(v & OBJ_V_CLASSED))
        v = (unsigned char)(with_lives(cost_lives(sh, obj)) | (v & OBJ_V_HIT));
    unsigned lives = (v >> OBJ_V_LIVES_SHIFT) & OBJ_V_LIVES_MAX;
    if (v & OBJ_V_HIT) {
        /* the class again, from the mean as it is now (it moves with the
         * mix), one more for the hit */
        v = with_lives(cost_lives(sh, obj) + 1);
    } else if (lives > 0) {
        v = with_lives(lives - 1);
    } else {
        return true;
    }
    atomic_store_explicit(&obj->visited, v, memory_order_relaxed);
    return false;
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
    bool cost = sh->cache->cfg.evict == CT_CACHE_EVICT_COST;

    while (obj && steps--) {
        struct ct_obj *next = CT_LIST_PREV(obj, qlink);
        if (next == NULL) /* past the newest: the hand wraps to the oldest */
            next = CT_LIST_LAST(&sh->q);
        if (cost && is_evictable(obj)) {
            if (cost_pass(sh, obj)) {
                sh->hand = CT_LIST_PREV(obj, qlink);
                return obj;
            }
        } else if (is_evictable(obj)) {
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
