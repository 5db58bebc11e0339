/*
 * tests/unit/test_cache_helpers.h: helpers shared by the cache store tests
 * (test_cache_store.c, test_cache_threads.c). Static functions: each test
 * binary gets its own copy. Uses CUnit asserts, so include after CUnit.
 */
#ifndef CT_TEST_CACHE_HELPERS_H
#define CT_TEST_CACHE_HELPERS_H

#include <stdio.h>
#include <stdlib.h>

#include "cache/cache.h"
#include "tests/unit/ct_test.h"

#define T0 1000000.0

struct tkey {
    char buf[128];
    struct ct_cache_key key;
};

static inline void mk_key(struct tkey *k, const char *host, const char *target)
{
    struct ct_cache_key_opts o = {.query = CT_CACHE_QUERY_KEEP, .header_name = {NULL, 0}};
    struct ct_cache_key_in in = {
        CT_CACHE_MCLASS_GET, ct_str_c(host), 80, ct_str_c(target), {NULL, 0}, {NULL, 0}};
    CU_ASSERT_EQUAL_FATAL(ct_cache_key_build(&o, &in, k->buf, sizeof(k->buf), &k->key), CT_OK);
}

static inline struct ct_cache *mk_cache(size_t max_bytes, size_t max_obj, unsigned shards)
{
    struct ct_cache_config cfg = {
        .max_bytes = max_bytes, .max_object_size = max_obj, .shards = shards};
    struct ct_cache *c = ct_cache_new(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

static inline enum ct_cache_lookup lookup_v(struct ct_cache *c, struct tkey *k, const char *vary,
                                            ct_time_t now, struct ct_cache_lookup_res *res)
{
    struct ct_cache_lookup_req req = {&k->key, ct_str_c(vary), NULL, NULL, false, false, false};
    return ct_cache_lookup(c, &req, now, res);
}

static inline enum ct_cache_lookup lookup(struct ct_cache *c, struct tkey *k, ct_time_t now,
                                          struct ct_cache_lookup_res *res)
{
    return lookup_v(c, k, "", now, res);
}

struct fill {
    const char *body;
    const char *vary;
    double ttl, grace, keep;
    bool hint;
};

static inline void set_head(struct ct_obj *obj, const struct fill *f, ct_time_t now)
{
    struct ct_obj_meta m = {0};
    m.status = 200;
    m.head = CT_STR("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n");
    m.etag = CT_STR("\"v1\"");
    m.last_modified = CT_STR("Sun, 06 Nov 1994 08:49:37 GMT");
    m.date = CT_STR("Mon, 07 Nov 1994 08:49:37 GMT");
    m.vary = ct_str_c(f->vary ? f->vary : "");
    m.response_time = now;
    m.ttl = f->ttl;
    m.grace = f->grace;
    m.keep = f->keep;
    m.body_hint = f->hint ? strlen(f->body) : 0;
    CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(obj, &m), CT_OK);
}

static inline void fill_obj(struct ct_obj *obj, const struct fill *f, ct_time_t now)
{
    set_head(obj, f, now);
    CU_ASSERT_EQUAL_FATAL(ct_obj_append(obj, f->body, strlen(f->body)), CT_OK);
    ct_obj_complete(obj, now);
}

/* Miss, fill, release: the common "store this" step. */
static inline void store(struct ct_cache *c, struct tkey *k, const struct fill *f, ct_time_t now)
{
    struct ct_cache_lookup_res res;
    CU_ASSERT_EQUAL_FATAL(lookup_v(c, k, f->vary ? f->vary : "", now, &res), CT_CACHE_MISS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res.fetch);
    fill_obj(res.fetch, f, now);
    ct_cache_lookup_res_release(&res);
}

/* The whole body as one string (test bodies are small). */
static inline bool body_is(const struct ct_obj *obj, const char *want)
{
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str chunk;
    char buf[4096];
    size_t n = 0;
    enum ct_obj_body r;
    while ((r = ct_obj_body_next(obj, &pos, 0, &chunk)) == CT_OBJ_BODY_DATA) {
        if (n + chunk.len > sizeof(buf))
            return false;
        memcpy(buf + n, chunk.p, chunk.len);
        n += chunk.len;
    }
    return r == CT_OBJ_BODY_END && n == strlen(want) && memcmp(buf, want, n) == 0;
}

static inline size_t idle_bytes(struct ct_cache *c)
{
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    return st.bytes;
}

#endif
