/*
 * tests/unit/test_cache_tags.c: the tag index (issue 16) and purges by tag,
 * hard and soft, through cache/cache.h: exact matching, every variant,
 * replacement, eviction and expiry dropping links, purge during a fill,
 * accounting exact to the byte, and a thread hammering purges beside lookups.
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "tests/unit/test_cache_helpers.h"

/* Store BODY under HOST/TARGET (variant VARY) with the NTAGS tags given. */
static void store_tagged(struct ct_cache *c, const char *target, const char *vary, double ttl,
                         ct_time_t now, size_t ntags, const char *const *tags)
{
    struct tkey k;
    mk_key(&k, "example.com", target);
    struct ct_cache_lookup_res res;
    CU_ASSERT_EQUAL_FATAL(lookup_v(c, &k, vary ? vary : "", now, &res), CT_CACHE_MISS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res.fetch);
    struct ct_str t[CT_CACHE_TAGS_MAX];
    for (size_t i = 0; i < ntags; i++)
        t[i] = ct_str_c(tags[i]);
    struct ct_obj_meta m = {0};
    m.status = 200;
    m.head = CT_STR("HTTP/1.1 200 OK\r\n");
    m.etag = CT_STR("\"v1\"");
    m.vary = ct_str_c(vary ? vary : "");
    m.response_time = now;
    m.ttl = ttl;
    m.tags = t;
    m.ntags = ntags;
    CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(res.fetch, &m), CT_OK);
    CU_ASSERT_EQUAL_FATAL(ct_obj_append(res.fetch, "body", 4), CT_OK);
    ct_obj_complete(res.fetch, now);
    ct_cache_lookup_res_release(&res);
}

static enum ct_cache_lookup look(struct ct_cache *c, const char *target, const char *vary,
                                 ct_time_t now)
{
    struct tkey k;
    mk_key(&k, "example.com", target);
    struct ct_cache_lookup_res res;
    enum ct_cache_lookup r = lookup_v(c, &k, vary ? vary : "", now, &res);
    if (res.fetch)
        ct_obj_abandon(res.fetch, now, 0); /* a miss here stores nothing */
    ct_cache_lookup_res_release(&res);
    return r;
}

static struct ct_cache_stats stats(struct ct_cache *c)
{
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    return st;
}

static void test_purge_by_tag_exact(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 1 << 20, 4);
    static const char *const ab[] = {"product-42", "list"};
    static const char *const a[] = {"product-42"};
    static const char *const other[] = {"product-4", "product-420", "Product-42"};
    store_tagged(c, "/p/42", NULL, 60, T0, 2, ab);
    store_tagged(c, "/p/42/img", NULL, 60, T0, 1, a);
    store_tagged(c, "/p/4", NULL, 60, T0, 3, other);
    CU_ASSERT_EQUAL(stats(c).tags, 5);
    CU_ASSERT_EQUAL(stats(c).tag_links, 6);
    /* exact bytes only: no prefix, no case folding, no regex */
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("product"), CT_CACHE_PURGE_HARD, T0), 0);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("product-42"), CT_CACHE_PURGE_HARD, T0), 2);
    CU_ASSERT_EQUAL(look(c, "/p/42", NULL, T0 + 1), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(look(c, "/p/42/img", NULL, T0 + 1), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(look(c, "/p/4", NULL, T0 + 1), CT_CACHE_HIT);
    /* the purged objects' links and their now unused tags are gone */
    CU_ASSERT_EQUAL(stats(c).tags, 3);
    CU_ASSERT_EQUAL(stats(c).tag_links, 3);
    CU_ASSERT_EQUAL(stats(c).purged, 2);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("list"), CT_CACHE_PURGE_HARD, T0), 0);
    ct_cache_free(&c);
}

static void test_every_variant(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 1 << 20, 4);
    static const char *const t[] = {"page"};
    store_tagged(c, "/v", "accept-encoding:gzip\n", 60, T0, 1, t);
    store_tagged(c, "/v", "accept-encoding:br\n", 60, T0, 1, t);
    store_tagged(c, "/v", "accept-encoding\n", 60, T0, 1, t);
    CU_ASSERT_EQUAL(stats(c).tag_links, 3);
    CU_ASSERT_EQUAL(stats(c).tags, 1);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("page"), CT_CACHE_PURGE_HARD, T0), 3);
    CU_ASSERT_EQUAL(look(c, "/v", "accept-encoding:gzip\n", T0), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(look(c, "/v", "accept-encoding:br\n", T0), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(stats(c).tags, 0);
    ct_cache_free(&c);
}

/* Links follow the object: a replacement takes the new tags, eviction, expiry
 * and URL purges drop them; duplicates count once. */
static void test_links_follow_objects(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 1 << 20, 4);
    static const char *const old[] = {"old", "both", "both"};
    static const char *const nw[] = {"new", "both"};
    store_tagged(c, "/r", NULL, 60, T0, 3, old);
    CU_ASSERT_EQUAL(stats(c).tag_links, 2); /* "both" once */
    /* expired: the lookup reaps it (and its links), the new one takes over */
    store_tagged(c, "/r", NULL, 60, T0 + 100, 2, nw);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("old"), CT_CACHE_PURGE_HARD, T0 + 101), 0);
    CU_ASSERT_EQUAL(look(c, "/r", NULL, T0 + 101), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(stats(c).tags, 2);
    CU_ASSERT_EQUAL(stats(c).tag_links, 2);
    /* expiry: the sweep reclaims it, and its links */
    static const char *const e[] = {"short"};
    store_tagged(c, "/e", NULL, 1, T0, 1, e);
    CU_ASSERT_EQUAL(ct_cache_expire_some(c, T0 + 10, 1000), 1);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("short"), CT_CACHE_PURGE_HARD, T0 + 10), 0);
    CU_ASSERT_EQUAL(stats(c).tags, 2);
    /* a URL purge drops the links too */
    struct tkey k;
    mk_key(&k, "example.com", "/r");
    CU_ASSERT_EQUAL(ct_cache_purge(c, &k.key), 1);
    CU_ASSERT_EQUAL(stats(c).tags, 0);
    CU_ASSERT_EQUAL(stats(c).tag_links, 0);
    CU_ASSERT_EQUAL(stats(c).tag_bytes, 0);
    ct_cache_free(&c);
}

/* Accounting exact to the byte: the index's bytes are part of `bytes`, and
 * everything comes back once the objects are gone. */
static void test_accounting(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 1 << 20, 4);
    size_t empty = idle_bytes(c);
    store_tagged(c, "/plain", NULL, 60, T0, 0, NULL);
    size_t plain = idle_bytes(c) - empty;
    static const char *const t1[] = {"abc"};
    store_tagged(c, "/one12", NULL, 60, T0, 1, t1);
    size_t one = idle_bytes(c) - empty - plain;
    /* the same object as /plain (a key as long) plus one links
     * array (8-byte header, one 32-byte link, a malloc) and one tag (34 bytes
     * of struct before its name: chain links, link list, hash, count, length;
     * its 3 bytes, a malloc) */
    struct ct_cache_stats st = stats(c);
    CU_ASSERT_EQUAL(st.tag_bytes, (8 + 32 + 16) + (34 + 3 + 16));
    CU_ASSERT_EQUAL(one - plain, st.tag_bytes);
    /* a second object with the same tag adds a links array, no tag struct */
    store_tagged(c, "/two", NULL, 60, T0, 1, t1);
    CU_ASSERT_EQUAL(stats(c).tag_bytes - st.tag_bytes, 8 + 32 + 16);
    /* 100 tags on one object: 32 bytes a link plus one header */
    static char names[100][8];
    const char *many[100];
    for (int i = 0; i < 100; i++) {
        snprintf(names[i], sizeof(names[i]), "t%d", i);
        many[i] = names[i];
    }
    size_t before = stats(c).tag_bytes;
    store_tagged(c, "/many", NULL, 60, T0, 100, many);
    size_t links = stats(c).tag_bytes - before;
    size_t tag_structs = 0;
    for (int i = 0; i < 100; i++)
        tag_structs += 34 + strlen(names[i]) + 16;
    CU_ASSERT_EQUAL(links - tag_structs, 8 + 100 * 32 + 16);
    ct_cache_purge_prefix(c, CT_STR(""));
    CU_ASSERT_EQUAL(idle_bytes(c), empty);
    CU_ASSERT_EQUAL(stats(c).tag_bytes, 0);
    ct_cache_free(&c);
}

/* A soft purge makes objects stale at once, keeps them for revalidation,
 * and one caller gets the refresh while the others wait (coalescing). */
static void test_soft_purge(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 1 << 20, 4);
    struct tkey k;
    mk_key(&k, "example.com", "/s");
    struct ct_cache_lookup_res res;
    CU_ASSERT_EQUAL_FATAL(lookup(c, &k, T0, &res), CT_CACHE_MISS);
    static const struct ct_str tags[] = {CT_STR("s")};
    struct ct_obj_meta m = {.status = 200, .head = CT_STR("HTTP/1.1 200 OK\r\n"),
                            .etag = CT_STR("\"e\""), .response_time = T0, .ttl = 3600,
                            .keep = 3600, .tags = tags, .ntags = 1};
    CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(res.fetch, &m), CT_OK);
    ct_obj_complete(res.fetch, T0);
    struct ct_obj *kept = ct_obj_ref(res.fetch);
    ct_cache_lookup_res_release(&res);
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_expires(kept), T0 + 3600, 1e-9);

    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("s"), CT_CACHE_PURGE_SOFT, T0 + 10), 1);
    CU_ASSERT_EQUAL(stats(c).soft_purged, 1);
    CU_ASSERT_EQUAL(stats(c).purged, 0);
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_expires(kept), T0 + 10, 1e-9);
    CU_ASSERT_FALSE(ct_obj_is_fresh(kept, T0 + 10));
    /* the first lookup gets it stale with the refresh; the next one waits */
    struct ct_cache_lookup_res r1, r2;
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 11, &r1), CT_CACHE_STALE);
    CU_ASSERT_PTR_EQUAL(r1.obj, kept);
    CU_ASSERT_PTR_NOT_NULL(r1.fetch);
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 11, &r2), CT_CACHE_STALE);
    CU_ASSERT_PTR_NULL(r2.fetch);
    CU_ASSERT_PTR_NOT_NULL(r2.busy);
    ct_cache_lookup_res_release(&r2);
    ct_obj_abandon(r1.fetch, T0 + 11, 0);
    ct_cache_lookup_res_release(&r1);
    /* a second soft purge does not make it fresher */
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("s"), CT_CACHE_PURGE_SOFT, T0 + 20), 1);
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_expires(kept), T0 + 10, 1e-9);
    /* soft purge by URL and prefix too */
    CU_ASSERT_EQUAL(ct_cache_purge_key_mode(c, &k.key, CT_CACHE_PURGE_SOFT, T0 + 5), 1);
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_expires(kept), T0 + 5, 1e-9);
    CU_ASSERT_EQUAL(ct_cache_purge_prefix_mode(c, CT_STR(""), CT_CACHE_PURGE_SOFT, T0 + 1), 1);
    CU_ASSERT_DOUBLE_EQUAL(ct_obj_expires(kept), T0 + 1, 1e-9);
    /* without validator or stale window a soft-purged object just expires */
    static const char *const t[] = {"gone"};
    store_tagged(c, "/nokeep", NULL, 3600, T0, 1, t);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("gone"), CT_CACHE_PURGE_SOFT, T0), 1);
    CU_ASSERT_EQUAL(look(c, "/nokeep", NULL, T0 + 1), CT_CACHE_MISS);
    ct_obj_release(&kept);
    ct_cache_free(&c);
}

/* A purge by tag while the object is still being fetched: later lookups do
 * not see it; the fetcher finishes for its own readers. */
static void test_purge_during_fill(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 1 << 20, 4);
    struct tkey k;
    mk_key(&k, "example.com", "/f");
    struct ct_cache_lookup_res res;
    CU_ASSERT_EQUAL_FATAL(lookup(c, &k, T0, &res), CT_CACHE_MISS);
    static const struct ct_str tags[] = {CT_STR("f")};
    struct ct_obj_meta m = {.status = 200, .head = CT_STR("HTTP/1.1 200 OK\r\n"),
                            .response_time = T0, .ttl = 60, .tags = tags, .ntags = 1};
    CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(res.fetch, &m), CT_OK);
    CU_ASSERT_EQUAL(ct_obj_append(res.fetch, "par", 3), CT_OK);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("f"), CT_CACHE_PURGE_HARD, T0), 1);
    CU_ASSERT_EQUAL(ct_obj_append(res.fetch, "tial", 4), CT_OK);
    ct_obj_complete(res.fetch, T0);
    CU_ASSERT(body_is(res.fetch, "partial"));
    ct_cache_lookup_res_release(&res);
    CU_ASSERT_EQUAL(look(c, "/f", NULL, T0), CT_CACHE_MISS);
    /* a BUSY object (no head yet) purged by URL never links its tags */
    CU_ASSERT_EQUAL_FATAL(lookup(c, &k, T0, &res), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(ct_cache_purge(c, &k.key), 1);
    CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(res.fetch, &m), CT_OK);
    CU_ASSERT_EQUAL(stats(c).tag_links, 0);
    ct_obj_complete(res.fetch, T0);
    ct_cache_lookup_res_release(&res);
    CU_ASSERT_EQUAL(stats(c).tags, 0);
    ct_cache_free(&c);
}

/* Eviction under memory pressure drops links with the objects, and the
 * index's bytes are reclaimed within the cap. */
static void test_eviction(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 1);
    char target[32], tag[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(target, sizeof(target), "/e/%d", i);
        snprintf(tag, sizeof(tag), "tag-%d", i % 50);
        const char *t[] = {tag, "all"};
        store_tagged(c, target, NULL, 60, T0, 2, t);
    }
    struct ct_cache_stats st = stats(c);
    CU_ASSERT(st.evictions > 0);
    CU_ASSERT(st.bytes <= st.max_bytes);
    /* one link per tag per live object, no more */
    CU_ASSERT_EQUAL(st.tag_links, 2 * st.keys);
    size_t n = ct_cache_purge_tag(c, CT_STR("all"), CT_CACHE_PURGE_HARD, T0);
    CU_ASSERT_EQUAL(n, st.keys);
    CU_ASSERT_EQUAL(stats(c).keys, 0);
    ct_cache_reclaim(c, SIZE_MAX); /* the lurker's part of a large purge */
    CU_ASSERT_EQUAL(stats(c).tag_links, 0);
    ct_cache_free(&c);
}

/* A large purge takes the objects out of the table at once and leaves their
 * tag unlinks and frees to the lurker (ct_cache_reclaim). Until then no
 * lookup or purge finds them, their bytes stay charged, a reader's reference
 * stays good; the lurker frees them in slices, and everything is given back
 * to the byte. */
static void test_deferred_reclaim(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 1 << 20, 8);
    char target[32], own[32];
    enum { N = 1000 }; /* past CT_CACHE_PURGE_INLINE and two COLLECT_SLICEs */
    /* the table's slots grow and stay: grow them first */
    for (int i = 0; i <= N; i++) {
        snprintf(target, sizeof(target), "/w/%d", i);
        store_tagged(c, target, NULL, 60, T0, 0, NULL);
    }
    CU_ASSERT_EQUAL(ct_cache_purge_prefix(c, CT_STR("")), N + 1);
    ct_cache_reclaim(c, SIZE_MAX);
    size_t empty = idle_bytes(c);
    for (int i = 0; i < N; i++) {
        snprintf(target, sizeof(target), "/d/%d", i);
        snprintf(own, sizeof(own), "own-%d", i);
        const char *t[] = {"big", own};
        store_tagged(c, target, NULL, 60, T0, 2, t);
    }
    store_tagged(c, "/other", NULL, 60, T0, 1, (const char *[]){"other"});
    /* a reader holds one of them across the purge: the oldest, last on the
     * tag's list, so one of the deferred */
    struct tkey k;
    mk_key(&k, "example.com", "/d/0");
    struct ct_cache_lookup_res held;
    CU_ASSERT_EQUAL_FATAL(lookup(c, &k, T0, &held), CT_CACHE_HIT);
    struct ct_cache_stats before = stats(c);

    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("big"), CT_CACHE_PURGE_HARD, T0), N);
    struct ct_cache_stats st = stats(c);
    size_t pending = st.reclaim_pending;
    CU_ASSERT(pending > 0 && pending < N); /* the first few were freed at once */
    CU_ASSERT_EQUAL(st.purged, before.purged + N);
    CU_ASSERT_EQUAL(st.keys, 1);
    CU_ASSERT_EQUAL(st.objects, pending + 1);
    /* still charged: their bytes, their links and their own tags */
    CU_ASSERT(st.bytes > empty + (before.bytes - empty) * pending / (N + 1) / 2);
    CU_ASSERT_EQUAL(st.tag_links, 2 * pending + 1);
    /* never found: not by a lookup, nor by another purge of either tag */
    for (int i = 0; i < N; i += 37) {
        snprintf(target, sizeof(target), "/d/%d", i);
        CU_ASSERT_EQUAL(look(c, target, NULL, T0), CT_CACHE_MISS);
    }
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("big"), CT_CACHE_PURGE_HARD, T0), 0);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("own-1"), CT_CACHE_PURGE_HARD, T0), 0);
    CU_ASSERT_EQUAL(ct_cache_purge_prefix(c, CT_STR("example.com/d/")), 0);
    CU_ASSERT_EQUAL(stats(c).purged, before.purged + N);
    /* the reader's copy is whole, tags and body */
    struct ct_str tags[4];
    char buf[64];
    CU_ASSERT_EQUAL(ct_obj_tags(held.obj, tags, 4, buf, sizeof(buf)), 2);
    CU_ASSERT(body_is(held.obj, "body"));

    /* the lurker: slices of the budget asked, then nothing left */
    CU_ASSERT_EQUAL(ct_cache_reclaim(c, 10), 10);
    CU_ASSERT_EQUAL(stats(c).reclaim_pending, pending - 10);
    CU_ASSERT_EQUAL(ct_cache_reclaim(c, SIZE_MAX), pending - 10);
    CU_ASSERT_EQUAL(ct_cache_reclaim(c, SIZE_MAX), 0);
    st = stats(c);
    CU_ASSERT_EQUAL(st.reclaim_pending, 0);
    CU_ASSERT_EQUAL(st.objects, 2); /* "/other" and the one still held */
    CU_ASSERT_EQUAL(st.tag_links, 1);
    CU_ASSERT_EQUAL(st.tags, 1);
    CU_ASSERT(body_is(held.obj, "body"));
    ct_cache_lookup_res_release(&held);
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("other"), CT_CACHE_PURGE_HARD, T0), 1);
    CU_ASSERT_EQUAL(idle_bytes(c), empty);

    /* a prefix purge defers the same way */
    for (int i = 0; i < N; i++) {
        snprintf(target, sizeof(target), "/p/%d", i);
        store_tagged(c, target, NULL, 60, T0, 1, (const char *[]){"p"});
    }
    CU_ASSERT_EQUAL(ct_cache_purge_prefix(c, CT_STR("")), N);
    CU_ASSERT(stats(c).reclaim_pending > 0);
    CU_ASSERT_EQUAL(stats(c).keys, 0);
    ct_cache_reclaim(c, SIZE_MAX);
    CU_ASSERT_EQUAL(stats(c).objects, 0);
    CU_ASSERT_EQUAL(stats(c).tags, 0);
    CU_ASSERT_EQUAL(idle_bytes(c), empty);

    /* freeing the cache frees what is still waiting (ASan: no leak) */
    for (int i = 0; i < N; i++) {
        snprintf(target, sizeof(target), "/f/%d", i);
        store_tagged(c, target, NULL, 60, T0, 1, (const char *[]){"f"});
    }
    CU_ASSERT_EQUAL(ct_cache_purge_tag(c, CT_STR("f"), CT_CACHE_PURGE_HARD, T0), N);
    CU_ASSERT(stats(c).reclaim_pending > 0);
    ct_cache_free(&c);
}

/* A full cache frees purged objects still waiting for the lurker before it
 * evicts a live one. */
static void test_reclaim_before_evict(void)
{
    struct ct_cache *c = mk_cache(1 << 20, 64 << 10, 1);
    char target[32];
    int live = 0, purged = 0;
    /* fill to the cap: old objects tagged "old", then a few live ones */
    for (; stats(c).evictions == 0; purged++) {
        snprintf(target, sizeof(target), "/old/%d", purged);
        store_tagged(c, target, NULL, 60, T0, 1, (const char *[]){"old"});
    }
    ct_cache_purge_tag(c, CT_STR("old"), CT_CACHE_PURGE_HARD, T0);
    size_t pending = stats(c).reclaim_pending;
    CU_ASSERT(pending > 500); /* about 700 fill the cap */
    for (; live < 200; live++) {
        snprintf(target, sizeof(target), "/live/%d", live);
        store_tagged(c, target, NULL, 60, T0, 1, (const char *[]){"live"});
    }
    /* the cache was full: the room for those came from the waiting ones */
    struct ct_cache_stats st = stats(c);
    uint64_t evictions = st.evictions;
    CU_ASSERT(st.reclaim_pending < pending - 100);
    /* as many again as still wait (less a few: names differ in length) */
    pending = st.reclaim_pending;
    CU_ASSERT(pending > 100);
    for (int i = 0; (size_t)i < pending - 8; i++) {
        snprintf(target, sizeof(target), "/new/%d", i);
        store_tagged(c, target, NULL, 60, T0, 1, (const char *[]){"new"});
    }
    st = stats(c);
    CU_ASSERT(st.reclaim_pending < 32);
    CU_ASSERT_EQUAL(st.evictions, evictions); /* no live object went */
    CU_ASSERT(st.bytes <= st.max_bytes);
    for (int i = 0; i < live; i++) {
        snprintf(target, sizeof(target), "/live/%d", i);
        CU_ASSERT_EQUAL(look(c, target, NULL, T0), CT_CACHE_HIT);
    }
    ct_cache_free(&c);
}

/* Threads: purges by tag beside lookups and stores of the same keys (TSan and
 * ASan check the locking and the references; the counts must add up). */
struct hammer {
    struct ct_cache *c;
    int id;
    int keys;              /* distinct keys the stores use */
    _Atomic bool *stop;    /* the purger's and reclaimer's: go on until set */
    size_t reclaimed;      /* the reclaimer's count */
};

static void *store_loop(void *arg)
{
    struct hammer *h = arg;
    char target[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(target, sizeof(target), "/h/%d", i % h->keys);
        struct tkey k;
        mk_key(&k, "example.com", target);
        struct ct_cache_lookup_res res;
        enum ct_cache_lookup r = lookup(h->c, &k, T0, &res);
        if (r == CT_CACHE_MISS && res.fetch) {
            static const struct ct_str tags[] = {CT_STR("hot"), CT_STR("cold")};
            struct ct_obj_meta m = {.status = 200, .head = CT_STR("HTTP/1.1 200 OK\r\n"),
                                    .response_time = T0, .ttl = 60, .tags = tags, .ntags = 2};
            if (ct_obj_set_head(res.fetch, &m) == CT_OK)
                ct_obj_complete(res.fetch, T0);
            else
                ct_obj_abandon(res.fetch, T0, 0);
        }
        ct_cache_lookup_res_release(&res);
    }
    return NULL;
}

static void *purge_loop(void *arg)
{
    struct hammer *h = arg;
    for (int i = 0; i < 2000 || (h->stop && !atomic_load(h->stop)); i++)
        ct_cache_purge_tag(h->c, i % 2 ? CT_STR("hot") : CT_STR("cold"),
                           i % 3 ? CT_CACHE_PURGE_HARD : CT_CACHE_PURGE_SOFT, T0);
    return NULL;
}

/* The lurker's part: free what large purges leave, while they go on. */
static void *reclaim_loop(void *arg)
{
    struct hammer *h = arg;
    while (!atomic_load(h->stop)) {
        size_t n = ct_cache_reclaim(h->c, CT_CACHE_RECLAIM_RUN);
        h->reclaimed += n;
        if (n == 0)
            sched_yield();
    }
    return NULL;
}

static void test_threads(void)
{
    struct ct_cache *c = mk_cache(64 << 20, 1 << 20, 8);
    pthread_t t[4];
    struct hammer h[4];
    for (int i = 0; i < 4; i++) {
        h[i] = (struct hammer){c, i, 64, NULL, 0};
        CU_ASSERT_EQUAL(pthread_create(&t[i], NULL, i < 2 ? store_loop : purge_loop, &h[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    struct ct_cache_stats st = stats(c);
    CU_ASSERT_EQUAL(st.tag_links, 2 * st.keys);
    ct_cache_purge_prefix(c, CT_STR(""));
    CU_ASSERT_EQUAL(stats(c).tag_links, 0);
    CU_ASSERT_EQUAL(stats(c).tags, 0);
    ct_cache_free(&c);
}

/* The same with purges large enough to be deferred and to be collected in
 * slices (stores replace objects, so links go while a purge's walk pauses),
 * a reclaimer thread freeing meanwhile, and a cache small enough that
 * stores reclaim too. */
static void test_threads_deferred(void)
{
    struct ct_cache *c = mk_cache(2 << 20, 1 << 20, 8);
    _Atomic bool stores_done = false, stop = false;
    pthread_t t[4], r;
    struct hammer h[5];
    /* Every key is in before the threads start, so the purger's first hard
     * purge ("hot", its second) meets far more than the few it frees inline
     * objects however the threads are scheduled. */
    h[0] = (struct hammer){c, 0, 1500, NULL, 0};
    store_loop(&h[0]);
    CU_ASSERT_EQUAL(stats(c).keys, 1500);
    for (int i = 0; i < 4; i++) {
        h[i] = (struct hammer){c, i, 1500, &stores_done, 0};
        CU_ASSERT_EQUAL(pthread_create(&t[i], NULL, i < 3 ? store_loop : purge_loop, &h[i]), 0);
    }
    h[4] = (struct hammer){c, 4, 0, &stop, 0};
    CU_ASSERT_EQUAL(pthread_create(&r, NULL, reclaim_loop, &h[4]), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    atomic_store(&stores_done, true);
    pthread_join(t[3], NULL);
    atomic_store(&stop, true);
    pthread_join(r, NULL);
    struct ct_cache_stats st = stats(c);
    CU_ASSERT(st.purge_deferred > 0); /* the lurker's path was taken */
    CU_ASSERT(st.bytes <= st.max_bytes);
    /* Whether the lurker or a full cache's stores freed them is the
     * scheduler's choice; that no object is freed twice or lost is not. */
    size_t rest = ct_cache_reclaim(c, SIZE_MAX);
    CU_ASSERT(h[4].reclaimed + rest <= st.purge_deferred);
    st = stats(c);
    CU_ASSERT_EQUAL(st.reclaim_pending, 0);
    CU_ASSERT_EQUAL(st.tag_links, 2 * st.keys);
    CU_ASSERT_EQUAL(st.objects, st.keys);
    ct_cache_free(&c);
}

/* One field line's tags: spaces for Surrogate-Key and xkey, commas for the
 * rest; trimmed, empty ones skipped, the long ones and those past MAX
 * counted as left out. */
static void split_is(const char *name, const char *value, size_t max, size_t max_len,
                     const char *want, size_t want_refused)
{
    struct ct_str out[8];
    size_t n = 1;
    out[0] = CT_STR("before"); /* appended after what is there */
    size_t refused = ct_cache_tags_split(ct_str_c(name), ct_str_c(value), out, &n, max, max_len);
    char got[256] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%.*s", i ? "|" : "",
                 (int)out[i].len, out[i].p);
    CU_ASSERT_STRING_EQUAL(got, want);
    CU_ASSERT_EQUAL(refused, want_refused);
}

static void test_split(void)
{
    split_is("Surrogate-Key", " product-42\tlist  home ", 8, 64, "before|product-42|list|home", 0);
    split_is("XKEY", "a,b c", 8, 64, "before|a,b|c", 0);
    split_is("Cache-Tag", "a, b,,c d ,", 8, 64, "before|a|b|c d", 0);
    split_is("X-Tags", " , ", 8, 64, "before", 0);
    split_is("Cache-Tag", "abcd,ab,abc", 8, 3, "before|ab|abc", 1);
    split_is("Cache-Tag", "a,b,c,d", 3, 64, "before|a|b", 2);
}

void ct_test_register(void)
{
    CT_SUITE("cache tags", {"purge by tag matches exactly", test_purge_by_tag_exact},
             {"purge by tag reaches every variant", test_every_variant},
             {"links follow replacement, expiry and URL purges", test_links_follow_objects},
             {"the index is counted to the byte", test_accounting},
             {"soft purge: stale at once, revalidated, coalesced", test_soft_purge},
             {"purge by tag during a fill", test_purge_during_fill},
             {"eviction drops links", test_eviction},
             {"large purges: the lurker frees, nothing finds them meanwhile",
              test_deferred_reclaim},
             {"a full cache frees purged objects before it evicts", test_reclaim_before_evict},
             {"purges beside lookups on threads", test_threads},
             {"large purges beside lookups and the lurker on threads", test_threads_deferred},
             {"a tag field's line split into tags", test_split});
}
