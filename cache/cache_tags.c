/*
 * cache/cache_tags.c: the tag index (surrogate keys: Surrogate-Key, Cache-Tag,
 * xkey), so "purge everything tagged product-42" costs O(objects with the tag),
 * exactly matched, never a scan or a regex over keys (the unanchored regex
 * of souin#867, a Go cache, left objects unpurgeable for a year).
 *
 * Shape:
 *
 *     tag shard (hash of the name) ── bucket ── struct tag "product-42"
 *                                                  │ first
 *                                                  ▼
 *     obj A ─links─▶ [ link(A,"product-42") ⇄ link(B,"product-42") ⇄ ... ]
 *
 * - struct tag: one per distinct name, shared by every object carrying it,
 *   freed with its last link.
 * - struct ct_cache_link: one per (object, tag), 32 bytes, in one array per
 *   object (struct ct_cache_links: one allocation per tagged object), so a
 *   link costs 32 bytes plus 1/n of one malloc header.
 * - Everything is charged to the cache's byte budget (reserved before it is
 *   allocated, given back when freed), as the objects are.
 *
 * Lifetime: an object's links are made when its head is set while it is in
 * the table, and removed when it leaves the table (ct_cache_unlink_obj: every
 * eviction, purge, expiry and replacement goes through it). So every object
 * reachable from the index is linked, and the table's reference keeps it
 * alive: a purge may take references under the tag lock without a race with
 * the last release.
 *
 * Locking: each tag shard has its own mutex. Order: an object's shard lock,
 * then a tag shard lock; never two tag locks at once, and a tag lock holder
 * takes no other lock (purge collects references under the tag lock, lets it
 * go, then takes each object's shard lock).
 */
#include <stdlib.h>
#include <string.h>

#include "cache/cache_int.h"

#define TAG_SHARDS 64
#define TAG_SEED 0x7a61c0de5eedull

/* A bucket chain is doubly linked (pprev: the pointer that points at this
 * tag, in the bucket array or in the previous tag) so the last link of a tag
 * frees it without walking its chain: a tag purge frees the objects' other,
 * mostly unique, tags, and that walk was a dependent cache miss or two per
 * tag, 90 % of the unlink (perf, 1 M objects of 9 unique tags each). */
struct tag {
    struct tag *hnext, **pprev;         /* bucket chain */
    CT_HLIST_HEAD(ct_cache_link) links; /* the objects carrying the tag */
    uint32_t hash;                      /* the low half: shard and bucket bits */
    uint32_t nlinks;
    uint16_t len; /* <= CT_CACHE_TAG_MAX_LEN */
    char name[];
};
_Static_assert(CT_CACHE_TAG_MAX_LEN <= UINT16_MAX, "struct tag's len");

struct ct_cache_link {
    struct ct_obj *obj;
    struct tag *tag;
    CT_LIST_LINK(ct_cache_link) link; /* on tag->links */
};
_Static_assert(sizeof(struct ct_cache_link) == 32, "issue 16: at most 48 bytes per link");

struct ct_cache_links {
    uint32_t n;
    struct ct_cache_link l[];
};

struct ct_cache_tag_shard {
    pthread_mutex_t mtx;
    struct tag **buckets;
    size_t nbuckets; /* power of two */
    size_t ntags;
    /* written under mtx only (plain load and store: no locked instruction
     * per tag), read relaxed by stats */
    _Atomic uint64_t links, tags, bytes;
    /* the links arrays of objects whose first tag is here: written under
     * their object's shard lock, so by several threads at once */
    _Atomic uint64_t array_bytes;
} __attribute__((aligned(64)));

static size_t tag_cost(size_t len)
{
    return offsetof(struct tag, name) + len + CT_CACHE_MALLOC_OVERHEAD;
}

static size_t links_cost(size_t n)
{
    return sizeof(struct ct_cache_links) + n * sizeof(struct ct_cache_link) +
           CT_CACHE_MALLOC_OVERHEAD;
}

/* A counter of a tag shard, by its lock holder: the single-writer
 * increment of CT_STAT_INC (a purge unlinks ten tags per object, and three
 * locked adds per tag were most of the unlink once the misses overlap). */
static void stat_add(_Atomic uint64_t *v, int64_t d)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + (uint64_t)d,
                          memory_order_relaxed);
}

void ct_cache_tags_init(struct ct_cache *cache)
{
    cache->tags = aligned_alloc(64, sizeof(struct ct_cache_tag_shard) * TAG_SHARDS);
    CT_ASSERT(cache->tags != NULL);
    memset(cache->tags, 0, sizeof(struct ct_cache_tag_shard) * TAG_SHARDS);
    for (unsigned i = 0; i < TAG_SHARDS; i++) {
        struct ct_cache_tag_shard *ts = &cache->tags[i];
        CT_ASSERT(pthread_mutex_init(&ts->mtx, NULL) == 0);
        ts->nbuckets = 16;
        ts->buckets = ct_xcalloc(ts->nbuckets, sizeof(*ts->buckets));
    }
}

void ct_cache_tags_fini(struct ct_cache *cache)
{
    for (unsigned i = 0; i < TAG_SHARDS; i++) {
        struct ct_cache_tag_shard *ts = &cache->tags[i];
        CT_ASSERT(ts->ntags == 0); /* every object was unlinked first */
        free(ts->buckets);
        pthread_mutex_destroy(&ts->mtx);
    }
    free(cache->tags);
    cache->tags = NULL;
}

static struct ct_cache_tag_shard *tag_shard(struct ct_cache *cache, uint32_t hash)
{
    return &cache->tags[hash & (TAG_SHARDS - 1)];
}

static struct tag **bucket(struct ct_cache_tag_shard *ts, uint32_t hash)
{
    return &ts->buckets[(hash >> 6) & (ts->nbuckets - 1)];
}

static uint32_t tag_hash(struct ct_str name)
{
    return (uint32_t)ct_cache_hash64(name.p, name.len, TAG_SEED);
}

static void chain_insert(struct tag **b, struct tag *t)
{
    t->hnext = *b;
    t->pprev = b;
    if (*b)
        (*b)->pprev = &t->hnext;
    *b = t;
}

static struct tag *find(struct ct_cache_tag_shard *ts, uint32_t hash, struct ct_str name)
{
    for (struct tag *t = *bucket(ts, hash); t; t = t->hnext)
        if (t->hash == hash && t->len == name.len && memcmp(t->name, name.p, name.len) == 0)
            return t;
    return NULL;
}

/* Double the buckets past 2 tags per bucket. The bucket array is bookkeeping
 * like the tag structs, but it is not charged: it is at most 8 bytes per 2
 * tags and growing must not fail under a lock. */
static void maybe_grow(struct ct_cache_tag_shard *ts)
{
    if (ts->ntags <= ts->nbuckets * 2)
        return;
    size_t n = ts->nbuckets * 2;
    struct tag **b = ct_xcalloc(n, sizeof(*b));
    for (size_t i = 0; i < ts->nbuckets; i++)
        for (struct tag *t = ts->buckets[i], *next; t; t = next) {
            next = t->hnext;
            chain_insert(&b[(t->hash >> 6) & (n - 1)], t);
        }
    free(ts->buckets);
    ts->buckets = b;
    ts->nbuckets = n;
}

static void unlink_tag(struct ct_cache_tag_shard *ts, struct tag *t)
{
    *t->pprev = t->hnext;
    if (t->hnext)
        t->hnext->pprev = t->pprev;
    ts->ntags--;
}

/* Drop duplicates (exact bytes) from TAGS[0..N) in place; returns the count
 * left. Quadratic, but N <= CT_CACHE_TAGS_MAX and this runs once per store. */
static size_t dedup(struct ct_str *tags, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (size_t j = 0; j < k && !dup; j++)
            dup = ct_str_eq(tags[j], tags[i]);
        if (!dup)
            tags[k++] = tags[i];
    }
    return k;
}

int ct_cache_tags_link(struct ct_obj *obj, const struct ct_str *tags_in, size_t n)
{
    struct ct_cache *cache = obj->shard->cache;
    if (n == 0)
        return CT_OK;
    CT_ASSERT(n <= CT_CACHE_TAGS_MAX && obj->links == NULL);
    struct ct_str tags[CT_CACHE_TAGS_MAX];
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        CT_ASSERT(tags_in[i].len > 0 && tags_in[i].len <= CT_CACHE_TAG_MAX_LEN);
        tags[i] = tags_in[i];
    }
    n = dedup(tags, n);
    /* Reserve as if every tag were new (reserving may evict, so no lock may
     * be held); what existing tags did not need is given back below. */
    for (size_t i = 0; i < n; i++)
        worst += tag_cost(tags[i].len);
    size_t cost = links_cost(n);
    if (ct_cache_reserve(cache, cost + worst) != CT_OK)
        return CT_ELIMIT;
    struct ct_cache_links *ls = ct_xmalloc(sizeof(*ls) + n * sizeof(ls->l[0]));
    ls->n = (uint32_t)n;

    struct ct_cache_shard *sh = obj->shard;
    pthread_mutex_lock(&sh->mtx);
    if (!(obj->flags & OBJ_F_LINKED)) { /* purged while BUSY: nobody will find it */
        pthread_mutex_unlock(&sh->mtx);
        free(ls);
        ct_cache_unreserve(cache, cost + worst);
        return CT_OK;
    }
    obj->links = ls;
    size_t unused = worst;
    for (size_t i = 0; i < n; i++) {
        uint32_t h = tag_hash(tags[i]);
        struct ct_cache_tag_shard *ts = tag_shard(cache, h);
        struct ct_cache_link *l = &ls->l[i];
        pthread_mutex_lock(&ts->mtx);
        struct tag *t = find(ts, h, tags[i]);
        if (t == NULL) {
            /* no struct assignment: the allocation ends inside the padding
             * that sizeof(struct tag) counts when the name is short */
            t = ct_xmalloc(offsetof(struct tag, name) + tags[i].len);
            t->links.first = NULL;
            t->hash = h;
            t->nlinks = 0;
            t->len = (uint16_t)tags[i].len;
            memcpy(t->name, tags[i].p, tags[i].len);
            chain_insert(bucket(ts, h), t);
            ts->ntags++;
            unused -= tag_cost(t->len);
            stat_add(&ts->tags, 1);
            stat_add(&ts->bytes, (int64_t)tag_cost(t->len));
            maybe_grow(ts);
        }
        *l = (struct ct_cache_link){.obj = obj, .tag = t};
        CT_HLIST_INSERT_HEAD(&t->links, l, link);
        t->nlinks++;
        stat_add(&ts->links, 1);
        pthread_mutex_unlock(&ts->mtx);
    }
    /* the links array is counted in the first tag shard */
    atomic_fetch_add_explicit(&tag_shard(cache, ls->l[0].tag->hash)->array_bytes, cost,
                              memory_order_relaxed);
    pthread_mutex_unlock(&sh->mtx);
    ct_cache_unreserve(cache, unused);
    return CT_OK;
}

/* What unlinking LS touches is spread at random: each link's neighbours
 * sit in other objects' arrays, each tag's chain neighbours in other tags.
 * Ask for all of it at once rather than one miss after another under each
 * tag lock (a locked instruction lets no later load pass it), in two steps:
 * the links' neighbours and the tags, then, once the tags are on their way,
 * each tag's chain neighbours (written only if this is the tag's last link).
 * The object's shard lock is held, so LS and its tags stay; the neighbours
 * are read without their tag lock, for the hint only: relaxed loads, and a
 * prefetch of memory freed meanwhile costs nothing (it never faults). The
 * writers hold the tag lock and store plainly, so TSan is told to look away
 * (CT_NO_TSAN) rather than report each such pair as a race. */
CT_NO_TSAN static void prefetch_links(const struct ct_cache_links *ls)
{
    for (uint32_t i = 0; i < ls->n; i++) {
        const struct ct_cache_link *l = &ls->l[i];
        __builtin_prefetch(__atomic_load_n(&l->link.prev, __ATOMIC_RELAXED), 1);
        __builtin_prefetch(__atomic_load_n(&l->link.next, __ATOMIC_RELAXED), 1);
        __builtin_prefetch(l->tag, 1);
    }
}

CT_NO_TSAN static void prefetch_chains(const struct ct_cache_links *ls)
{
    for (uint32_t i = 0; i < ls->n; i++) {
        struct tag *t = ls->l[i].tag;
        __builtin_prefetch(__atomic_load_n(&t->pprev, __ATOMIC_RELAXED), 1);
        __builtin_prefetch(__atomic_load_n(&t->hnext, __ATOMIC_RELAXED), 1);
    }
}

struct ct_cache_links *ct_cache_tags_detach(struct ct_obj *obj)
{
    struct ct_cache_links *ls = obj->links;
    obj->links = NULL;
    return ls;
}

/* A tag's last link went (its shard lock held): take it out of the index.
 * Returns its counted bytes, for the caller to give back after the lock. */
static size_t tag_gone(struct ct_cache_tag_shard *ts, struct tag *t)
{
    size_t cost = tag_cost(t->len);
    unlink_tag(ts, t);
    stat_add(&ts->tags, -1);
    stat_add(&ts->bytes, -(int64_t)cost);
    free(t);
    return cost;
}

void ct_cache_tags_drop(struct ct_cache *cache, struct ct_cache_links *ls)
{
    if (ls == NULL)
        return;
    prefetch_links(ls);
    prefetch_chains(ls);
    size_t freed = links_cost(ls->n);
    atomic_fetch_sub_explicit(&tag_shard(cache, ls->l[0].tag->hash)->array_bytes, freed,
                              memory_order_relaxed);
    for (uint32_t i = 0; i < ls->n; i++) {
        struct ct_cache_link *l = &ls->l[i];
        struct tag *t = l->tag;
        struct ct_cache_tag_shard *ts = tag_shard(cache, t->hash);
        pthread_mutex_lock(&ts->mtx);
        CT_HLIST_REMOVE(&t->links, l, link);
        stat_add(&ts->links, -1);
        if (--t->nlinks == 0)
            freed += tag_gone(ts, t);
        pthread_mutex_unlock(&ts->mtx);
    }
    free(ls);
    ct_cache_unreserve(cache, freed);
}

void ct_cache_tags_unlink(struct ct_obj *obj)
{
    ct_cache_tags_drop(obj->shard->cache, ct_cache_tags_detach(obj));
}

/* Links a purge collects per hold of the tag's lock. The walk is a cache
 * miss per link (each sits in another object's array): 100 k links held
 * the lock for tens of milliseconds, and every store of an object with a
 * tag in that shard (one in seven, with ten tags each) waited behind it. */
#define COLLECT_SLICE 512

/* Take a reference on every object tagged NAME (the table's reference, or
 * the reclaim list's, keeps each alive while we hold the tag lock). *OUT is
 * allocated; the count. Between slices a marker link (no object) holds our
 * place in the tag's list and counts as one of its links, so the tag stays
 * while the lock is let go; links added meanwhile go to the head, behind the
 * marker, so the walk ends and never finds more than the tag had at first. */
static size_t collect(struct ct_cache *cache, struct ct_str name, struct ct_obj ***out)
{
    uint32_t h = tag_hash(name);
    struct ct_cache_tag_shard *ts = tag_shard(cache, h);
    struct ct_obj **objs = NULL;
    size_t n = 0, cap = 0, freed = 0;
    pthread_mutex_lock(&ts->mtx);
    struct tag *t = find(ts, h, name);
    if (t) {
        cap = t->nlinks;
        objs = ct_xmalloc(cap * sizeof(*objs));
        struct ct_cache_link mark = {.obj = NULL, .tag = t};
        struct ct_cache_link *l = CT_LIST_FIRST(&t->links);
        while (l) {
            for (unsigned k = 0; l && k < COLLECT_SLICE; k++, l = CT_LIST_NEXT(l, link))
                if (l->obj) { /* not another purge's marker */
                    CT_ASSERT(n < cap);
                    objs[n++] = ct_cache_obj_ref(l->obj);
                }
            if (l == NULL)
                break;
            struct ct_cache_link *before = CT_LIST_PREV(l, link); /* macro: a plain variable */
            CT_HLIST_INSERT_AFTER(&t->links, before, &mark, link);
            t->nlinks++;
            pthread_mutex_unlock(&ts->mtx);
            pthread_mutex_lock(&ts->mtx);
            l = CT_LIST_NEXT(&mark, link);
            CT_HLIST_REMOVE(&t->links, &mark, link);
            if (--t->nlinks == 0) { /* every object left it meanwhile */
                freed = tag_gone(ts, t);
                break;
            }
        }
    }
    pthread_mutex_unlock(&ts->mtx);
    if (freed)
        ct_cache_unreserve(cache, freed);
    *out = objs;
    return n;
}

size_t ct_cache_purge_tag(struct ct_cache *cache, struct ct_str tag, enum ct_cache_purge mode,
                          ct_time_t now)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    struct ct_obj **objs;
    struct ct_cache_reclaim later = {0};
    size_t n = collect(cache, tag, &objs), done = 0;
    for (size_t i = 0; i < n; i++) {
        /* Past the first few, hard-purged objects only leave the table here:
         * their tags and memory go on the lurker thread (cache_reclaim.c). */
        bool defer = mode == CT_CACHE_PURGE_HARD && i >= CT_CACHE_PURGE_INLINE;
        /* The objects are in random places: ask for one a few steps ahead,
         * and for what its unlink touches once its struct is in. */
        if (i + 8 < n)
            ct_cache_obj_prefetch(objs[i + 8]);
        if (i + 4 < n)
            ct_cache_obj_prefetch_unlink(objs[i + 4], mode != CT_CACHE_PURGE_HARD ||
                                                           i + 4 < CT_CACHE_PURGE_INLINE);
        struct ct_obj *obj = objs[i];
        struct ct_cache_shard *sh = obj->shard;
        pthread_mutex_lock(&sh->mtx);
        /* another purge, an eviction or a replacement may have been first */
        if (obj->flags & OBJ_F_LINKED)
            done += ct_cache_purge_obj(sh, obj, mode, now, defer ? &later : NULL);
        pthread_mutex_unlock(&sh->mtx);
        ct_obj_release(&objs[i]);
    }
    ct_cache_reclaim_push(cache, &later);
    free(objs);
    return done;
}

size_t ct_cache_tags_split(struct ct_str name, struct ct_str value, struct ct_str *out, size_t *n,
                           size_t max, size_t max_len)
{
    bool spaces = ct_str_eq_ci(name, CT_STR("Surrogate-Key")) || ct_str_eq_ci(name, CT_STR("xkey"));
    const char *p = value.p, *end = p + value.len;
    size_t refused = 0;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || (!spaces && *p == ',')))
            p++;
        const char *q = p;
        while (q < end && (spaces ? *q != ' ' && *q != '\t' : *q != ','))
            q++;
        struct ct_str t = ct_str_trim_ows(ct_str_make(p, (size_t)(q - p)));
        p = q;
        if (t.len == 0)
            continue;
        if (t.len > max_len || *n >= max)
            refused++;
        else
            out[(*n)++] = t;
    }
    return refused;
}

size_t ct_obj_tags(struct ct_obj *obj, struct ct_str *out, size_t max, char *buf, size_t cap)
{
    CT_CHECK_OBJ(obj, CT_OBJ_MAGIC);
    struct ct_cache_shard *sh = obj->shard;
    size_t n = 0, used = 0;
    pthread_mutex_lock(&sh->mtx);
    /* links live while the object is linked, which this lock keeps; a tag's
     * name never changes and outlives every link to it */
    const struct ct_cache_links *ls = obj->links;
    for (uint32_t i = 0; ls && i < ls->n && n < max; i++) {
        const struct tag *t = ls->l[i].tag;
        if (used + t->len > cap)
            continue;
        memcpy(buf + used, t->name, t->len);
        out[n++] = ct_str_make(buf + used, t->len);
        used += t->len;
    }
    pthread_mutex_unlock(&sh->mtx);
    return n;
}

void ct_cache_tags_stats(const struct ct_cache *cache, struct ct_cache_stats *st)
{
    for (unsigned i = 0; i < TAG_SHARDS; i++) {
        const struct ct_cache_tag_shard *ts = &cache->tags[i];
        st->tag_links += atomic_load_explicit(&ts->links, memory_order_relaxed);
        st->tags += atomic_load_explicit(&ts->tags, memory_order_relaxed);
        st->tag_bytes += atomic_load_explicit(&ts->bytes, memory_order_relaxed) +
                         atomic_load_explicit(&ts->array_bytes, memory_order_relaxed);
    }
}
