/*
 * cache/cache_table.c: a shard's hash table of keys (shard lock held for
 * everything here).
 *
 * Open addressing with linear probing over 8-byte slots. A slot holds the
 * pointer to the key's newest linked object (which carries the key bytes,
 * its hash and the lookup fields together, cache_int.h) with 16 bits of the
 * hash in the top bits (x86-64 and arm64 user pointers fit in 48 bits;
 * asserted), so a probe rejects a non-matching key without touching its
 * object (1 in 65536 does): a hit costs one slot load (usually one cache
 * line for the whole probe sequence) and one object load. Chained buckets
 * cost a pointer chase per chain entry instead, and a separate objhead
 * between slot and object was one more dependent miss (bench_cache).
 *
 * Load factor kept at or below 3/4 by doubling; the slot array is counted
 * against the cap. Growing happens under the shard lock, where evicting is
 * not allowed (it locks other shards), so the lookup that will insert
 * reserves the growth with the rest of its bytes before taking the lock
 * (ct_cache_table_grow_cost). If that fails the table may fill up to 15/16,
 * after which inserts are refused (no fetch object: the caller passes).
 * Removal uses backward-shift deletion, so there are no tombstones.
 */
#include <stdlib.h>

#include "cache/cache_int.h"

#define TAG_SHIFT CT_CACHE_TAG_SHIFT
#define PTR_MASK ((UINT64_C(1) << TAG_SHIFT) - 1)

static uint64_t tag_of(uint64_t hash)
{
    return ct_cache_slot_tag(hash);
}

static struct ct_obj *slot_obj(uint64_t slot)
{
    return ct_cache_slot_obj(slot);
}

static uint64_t make_slot(struct ct_obj *obj)
{
    uint64_t p = (uint64_t)(uintptr_t)obj;
    CT_ASSERT((p & ~PTR_MASK) == 0);
    return p | (tag_of(obj->hash) << TAG_SHIFT);
}

void ct_cache_table_init(struct ct_cache_shard *sh, size_t nslots)
{
    sh->nslots = nslots;
    sh->slots = ct_xcalloc(nslots, sizeof(*sh->slots));
}

/* The index of the slot holding linked OBJ's key (present: asserted). */
static size_t index_of_key(const struct ct_cache_shard *sh, const struct ct_obj *obj)
{
    size_t mask = sh->nslots - 1, i = obj->hash & mask;
    uint64_t tag = tag_of(obj->hash);
    struct ct_cache_key key = {obj->hash, {obj->key, obj->key_len}};
    for (size_t n = 0; n < sh->nslots; n++, i = (i + 1) & mask) {
        uint64_t s = sh->slots[i];
        CT_ASSERT(s != 0);
        /* OBJ itself is the head in most cases: no key compare then */
        if (slot_obj(s) == obj ||
            ((s >> TAG_SHIFT) == tag && ct_cache_obj_has_key(slot_obj(s), &key)))
            return i;
    }
    CT_ASSERT(!"linked object's key not in its table");
    return 0;
}

struct ct_obj *ct_cache_table_head(struct ct_cache_shard *sh, const struct ct_obj *obj)
{
    return slot_obj(sh->slots[index_of_key(sh, obj)]);
}

static void place(uint64_t *slots, size_t nslots, uint64_t s)
{
    size_t mask = nslots - 1, i = slot_obj(s)->hash & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = s;
}

static bool needs_grow(const struct ct_cache_shard *sh)
{
    size_t nkeys = atomic_load_explicit(&sh->nkeys, memory_order_relaxed);
    return (nkeys + 1) * 4 > sh->nslots * 3;
}

size_t ct_cache_table_grow_cost(const struct ct_cache_shard *sh)
{
    return needs_grow(sh) ? sh->nslots * 2 * sizeof(uint64_t) : 0;
}

/* Double the slots, paid from *PREPAID (bytes the caller reserved outside
 * the lock, where it could evict) or else from memory free right now. */
static bool grow(struct ct_cache_shard *sh, size_t *prepaid)
{
    size_t n = sh->nslots * 2, cost = n * sizeof(uint64_t);
    if (n > SIZE_MAX / sizeof(uint64_t) / 2)
        return false;
    if (*prepaid >= cost)
        *prepaid -= cost;
    else if (!ct_cache_try_reserve(sh->cache, cost))
        return false;
    uint64_t *ns = ct_xcalloc(n, sizeof(*ns));
    for (size_t i = 0; i < sh->nslots; i++)
        if (sh->slots[i])
            place(ns, n, sh->slots[i]);
    free(sh->slots);
    ct_cache_unreserve(sh->cache, sh->nslots * sizeof(uint64_t));
    /* atomic stores: ct_cache_table_prefetch() reads these without the lock */
    __atomic_store_n(&sh->slots, ns, __ATOMIC_RELAXED);
    __atomic_store_n(&sh->nslots, n, __ATOMIC_RELAXED);
    return true;
}

bool ct_cache_table_room(struct ct_cache_shard *sh, size_t *prepaid)
{
    size_t nkeys = atomic_load_explicit(&sh->nkeys, memory_order_relaxed);
    return !needs_grow(sh) || grow(sh, prepaid) || (nkeys + 1) * 16 <= sh->nslots * 15;
}

void ct_cache_table_insert(struct ct_cache_shard *sh, struct ct_obj *obj)
{
    size_t nkeys = atomic_load_explicit(&sh->nkeys, memory_order_relaxed);
    CT_ASSERT((nkeys + 1) * 16 <= sh->nslots * 15);
    place(sh->slots, sh->nslots, make_slot(obj));
    atomic_store_explicit(&sh->nkeys, nkeys + 1, memory_order_relaxed);
}

/* Is home slot K outside the cyclic range (I, J]? Then the entry at J may move to I. */
static bool may_move(size_t i, size_t j, size_t k)
{
    return i <= j ? (k <= i || k > j) : (k <= i && k > j);
}

static void remove_at(struct ct_cache_shard *sh, size_t i)
{
    size_t mask = sh->nslots - 1;
    /* backward-shift: pull later entries of the run into the hole */
    for (size_t j = (i + 1) & mask; sh->slots[j]; j = (j + 1) & mask) {
        size_t k = slot_obj(sh->slots[j])->hash & mask;
        if (may_move(i, j, k)) {
            sh->slots[i] = sh->slots[j];
            i = j;
        }
    }
    sh->slots[i] = 0;
    atomic_store_explicit(&sh->nkeys, atomic_load_explicit(&sh->nkeys, memory_order_relaxed) - 1,
                          memory_order_relaxed);
}

void ct_cache_table_replace(struct ct_cache_shard *sh, struct ct_obj *old, struct ct_obj *new)
{
    size_t mask = sh->nslots - 1, i = old->hash & mask;
    /* by identity: OLD is the head, so its own pointer is in the table */
    while (slot_obj(sh->slots[i]) != old)
        i = (i + 1) & mask;
    if (new) {
        CT_ASSERT(new->hash == old->hash);
        sh->slots[i] = make_slot(new);
    } else {
        remove_at(sh, i);
    }
}

size_t ct_cache_table_each(struct ct_cache_shard *sh, ct_cache_key_fn *fn, void *arg)
{
    size_t n = 0;
    for (size_t i = 0; i < sh->nslots; i++) {
        /* FN may remove the key; backward-shift may then move an entry into
         * slot I, so look at I again until it holds what FN left. Entries
         * only move toward lower slots, so none is skipped; one that wraps
         * from the start to the end is merely seen twice. */
        while (sh->slots[i]) {
            struct ct_obj *head = slot_obj(sh->slots[i]);
            n += fn(sh, head, arg);
            if (slot_obj(sh->slots[i]) == head)
                break;
        }
    }
    return n;
}

void ct_cache_table_fini(struct ct_cache_shard *sh)
{
    free(sh->slots);
    sh->slots = NULL;
    sh->nslots = 0;
}
