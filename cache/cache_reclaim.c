/*
 * cache/cache_reclaim.c: purged objects whose tag unlinks and frees are left
 * to a background thread (issue 16).
 *
 * A purge of a tag shared by 100 k objects spent most of its time on what
 * nobody waits for: each object's other tags (ten tag locks and their
 * neighbours' cache misses) and its free. The purge now only takes each
 * object out of the table (it is never found again: no lookup reaches it) and
 * hands the table's reference to this list; ct_cache_reclaim, on the lurker
 * thread (nice +10, proxy/ops/ops.c), unlinks its tags and drops the
 * reference, which frees it unless a reader still holds one.
 *
 * While an object waits here:
 * - it is not linked (OBJ_F_LINKED clear, OBJ_F_PURGED set): lookups, purges,
 *   bans, the sweep and eviction never see it; a tag purge that meets its
 *   links skips it (it tests OBJ_F_LINKED under the shard lock);
 * - its bytes stay charged to the cache (they are not free yet), and a
 *   reservation that finds the cache full reclaims from here before it evicts
 *   a live object (ct_cache_reserve);
 * - the list's reference keeps it alive while the tag index points at it,
 *   the invariant cache_tags.c's collect relies on;
 * - vnext, unused once an object leaves its key's variant list, chains the
 *   list (under the list's lock): no field added to every object.
 */
#include "cache/cache_int.h"

void ct_cache_reclaim_add(struct ct_cache_reclaim *batch, struct ct_obj *obj)
{
    CT_ASSERT(!(obj->flags & OBJ_F_LINKED) && obj->vnext == NULL);
    obj->vnext = batch->first;
    batch->first = obj;
    if (batch->last == NULL)
        batch->last = obj;
    batch->n++;
}

void ct_cache_reclaim_push(struct ct_cache *cache, struct ct_cache_reclaim *batch)
{
    if (batch->n == 0)
        return;
    pthread_mutex_lock(&cache->reclaim_mtx);
    batch->last->vnext = cache->reclaim;
    cache->reclaim = batch->first;
    atomic_store_explicit(&cache->reclaim_pending,
                          atomic_load_explicit(&cache->reclaim_pending, memory_order_relaxed) +
                              batch->n,
                          memory_order_relaxed);
    pthread_mutex_unlock(&cache->reclaim_mtx);
    *batch = (struct ct_cache_reclaim){0};
}

static struct ct_obj *pop(struct ct_cache *cache)
{
    pthread_mutex_lock(&cache->reclaim_mtx);
    struct ct_obj *obj = cache->reclaim;
    if (obj) {
        cache->reclaim = obj->vnext;
        obj->vnext = NULL;
        atomic_store_explicit(&cache->reclaim_pending,
                              atomic_load_explicit(&cache->reclaim_pending, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    }
    pthread_mutex_unlock(&cache->reclaim_mtx);
    return obj;
}

size_t ct_cache_reclaim(struct ct_cache *cache, size_t budget)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    size_t n = 0;
    struct ct_obj *obj;
    while (n < budget && (obj = pop(cache)) != NULL) {
        /* The links leave the object under its shard lock (ct_obj_tags reads
         * them under it, for a reader that still holds the object); the tag
         * unlinks then need no shard lock, so no worker waits on them. */
        struct ct_cache_shard *sh = obj->shard;
        pthread_mutex_lock(&sh->mtx);
        struct ct_cache_links *ls = ct_cache_tags_detach(obj);
        pthread_mutex_unlock(&sh->mtx);
        ct_cache_tags_drop(sh->cache, ls);
        ct_cache_obj_put(obj); /* the reference the table had */
        n++;
    }
    return n;
}

size_t ct_cache_reclaim_pending(const struct ct_cache *cache)
{
    return atomic_load_explicit(&cache->reclaim_pending, memory_order_relaxed);
}
