/*
 * cache/cache_table.c: a shard's hash table of objheads (shard lock held for
 * everything here).
 *
 * Open addressing with linear probing over 8-byte slots. A slot holds the
 * objhead pointer with 16 bits of its hash in the top bits (x86-64 and arm64
 * user pointers fit in 48 bits; asserted), so a probe rejects a non-matching
 * key without touching its objhead: a hit costs one slot load (usually one
 * cache line for the whole probe sequence) and one objhead load. Chained
 * buckets cost a pointer chase per chain entry instead, and the objhead miss
 * was most of a lookup's time on a 1 M-key table (bench_cache).
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

#define TAG_SHIFT 48
#define PTR_MASK ((UINT64_C(1) << TAG_SHIFT) - 1)

static uint64_t tag_of(uint64_t hash)
{
    return (hash >> 32) & 0xffff; /* not the index bits (low) nor the shard bits (top) */
}

static struct ct_cache_oh *slot_oh(uint64_t slot)
{
    return (struct ct_cache_oh *)(uintptr_t)(slot & PTR_MASK);
}

static uint64_t make_slot(struct ct_cache_oh *oh)
{
    uint64_t p = (uint64_t)(uintptr_t)oh;
    CT_ASSERT((p & ~PTR_MASK) == 0);
    return p | (tag_of(oh->hash) << TAG_SHIFT);
}

void ct_cache_table_init(struct ct_cache_shard *sh, size_t nslots)
{
    sh->nslots = nslots;
    sh->slots = ct_xcalloc(nslots, sizeof(*sh->slots));
}

struct ct_cache_oh *ct_cache_oh_find(struct ct_cache_shard *sh, const struct ct_cache_key *key)
{
    size_t mask = sh->nslots - 1, i = key->hash & mask;
    uint64_t tag = tag_of(key->hash);
    for (size_t n = 0; n < sh->nslots; n++, i = (i + 1) & mask) {
        uint64_t s = sh->slots[i];
        if (s == 0)
            return NULL;
        if ((s >> TAG_SHIFT) != tag)
            continue;
        struct ct_cache_oh *oh = slot_oh(s);
        if (oh->hash == key->hash && oh->key_len == key->bytes.len &&
            memcmp(oh->key, key->bytes.p, key->bytes.len) == 0)
            return oh;
    }
    return NULL;
}

static void place(uint64_t *slots, size_t nslots, uint64_t s)
{
    size_t mask = nslots - 1, i = slot_oh(s)->hash & mask;
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

/* A new objhead for KEY (not present); ct_cache_oh_cost() of it must be
 * reserved, and the growth of the table may be in *PREPAID (what is used is
 * taken off). NULL if the table is nearly full and cannot grow. */
struct ct_cache_oh *ct_cache_oh_insert(struct ct_cache_shard *sh, const struct ct_cache_key *key,
                                       size_t *prepaid)
{
    size_t nkeys = atomic_load_explicit(&sh->nkeys, memory_order_relaxed);
    if (needs_grow(sh) && !grow(sh, prepaid) && (nkeys + 1) * 16 > sh->nslots * 15)
        return NULL;
    struct ct_cache_oh *oh = ct_xmalloc(sizeof(*oh) + key->bytes.len);
    oh->hash = key->hash;
    oh->variants = NULL;
    oh->key_len = (uint32_t)key->bytes.len;
    memcpy(oh->key, key->bytes.p, key->bytes.len);
    place(sh->slots, sh->nslots, make_slot(oh));
    atomic_store_explicit(&sh->nkeys, nkeys + 1, memory_order_relaxed);
    return oh;
}

/* Is home slot K outside the cyclic range (I, J]? Then the entry at J may move to I. */
static bool may_move(size_t i, size_t j, size_t k)
{
    return i <= j ? (k <= i || k > j) : (k <= i && k > j);
}

void ct_cache_oh_remove(struct ct_cache_shard *sh, struct ct_cache_oh *oh)
{
    size_t mask = sh->nslots - 1, i = oh->hash & mask;
    while (slot_oh(sh->slots[i]) != oh)
        i = (i + 1) & mask;
    /* backward-shift: pull later entries of the run into the hole */
    for (size_t j = (i + 1) & mask; sh->slots[j]; j = (j + 1) & mask) {
        size_t k = slot_oh(sh->slots[j])->hash & mask;
        if (may_move(i, j, k)) {
            sh->slots[i] = sh->slots[j];
            i = j;
        }
    }
    sh->slots[i] = 0;
    atomic_store_explicit(&sh->nkeys, atomic_load_explicit(&sh->nkeys, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    size_t cost = ct_cache_oh_cost(oh->key_len);
    free(oh);
    ct_cache_unreserve(sh->cache, cost);
}

size_t ct_cache_table_each(struct ct_cache_shard *sh, ct_cache_oh_fn *fn, void *arg)
{
    size_t n = 0;
    for (size_t i = 0; i < sh->nslots; i++) {
        /* FN may remove the objhead; backward-shift may then move an entry
         * into slot I, so look at I again until it holds what FN left. Entries
         * only move toward lower slots, so none is skipped; one that wraps
         * from the start to the end is merely seen twice. */
        while (sh->slots[i]) {
            struct ct_cache_oh *oh = slot_oh(sh->slots[i]);
            n += fn(sh, oh, arg);
            if (slot_oh(sh->slots[i]) == oh)
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
