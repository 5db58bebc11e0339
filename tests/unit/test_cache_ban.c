/*
 * tests/unit/test_cache_ban.c: bans (issue 16) through cache/cache.h: the
 * expression parser and its errors (column and why), req.* refused, lazy
 * application at lookup (only objects older than the ban), soft bans, the
 * lurker's bounded slices and the drop of a finished ban, the list's bound,
 * the bans' memory charged to the store's budget, and lookups on other
 * threads while bans are added and lurked.
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "common/buf.h"
#include "tests/unit/test_cache_helpers.h"

/* The store's field getter for these tests: OBJ's head is a plain HTTP/1
 * block ("HTTP/1.1 200 OK\r\nName: value\r\n..."), as the helpers write it. */
static bool field_of(const struct ct_obj *obj, struct ct_str name, struct ct_str *value)
{
    struct ct_str h = ct_obj_head(obj);
    const char *p = memchr(h.p, '\n', h.len), *end = h.p + h.len;
    while (p && ++p < end) {
        const char *eol = memchr(p, '\r', (size_t)(end - p));
        const char *colon = memchr(p, ':', (size_t)(end - p));
        if (eol == NULL || colon == NULL || colon > eol)
            return false;
        if (ct_str_eq_ci(ct_str_make(p, (size_t)(colon - p)), name)) {
            *value = ct_str_trim_ows(ct_str_make(colon + 1, (size_t)(eol - colon - 1)));
            return true;
        }
        p = memchr(eol, '\n', (size_t)(end - eol));
    }
    return false;
}

static struct ct_cache *mk_ban_cache(unsigned max_bans, unsigned shards)
{
    struct ct_cache_config cfg = {.max_bytes = 64u << 20, .max_object_size = 1u << 20,
                                  .shards = shards, .field = field_of, .max_bans = max_bans};
    struct ct_cache *c = ct_cache_new(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

/* Store TARGET on HOST with status STATUS, field "X-Tag: TAG" (none if NULL),
 * ttl 60 s and a 30 s grace, at NOW. */
static void put(struct ct_cache *c, const char *host, const char *target, unsigned status,
                const char *tag, ct_time_t now)
{
    struct tkey k;
    mk_key(&k, host, target);
    struct ct_cache_lookup_res res;
    CU_ASSERT_EQUAL_FATAL(lookup(c, &k, now, &res), CT_CACHE_MISS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res.fetch);
    char head[256];
    snprintf(head, sizeof(head), "HTTP/1.1 %u X\r\nContent-Type: text/plain\r\n%s%s%s", status,
             tag ? "X-Tag: " : "", tag ? tag : "", tag ? "\r\n" : "");
    struct ct_obj_meta m = {0};
    m.status = status;
    m.head = ct_str_c(head);
    m.etag = CT_STR("\"v1\"");
    m.response_time = now;
    m.ttl = 60;
    m.grace = 30;
    CU_ASSERT_EQUAL_FATAL(ct_obj_set_head(res.fetch, &m), CT_OK);
    CU_ASSERT_EQUAL_FATAL(ct_obj_append(res.fetch, "body", 4), CT_OK);
    ct_obj_complete(res.fetch, now);
    ct_cache_lookup_res_release(&res);
}

static enum ct_cache_lookup look(struct ct_cache *c, const char *host, const char *target,
                                 ct_time_t now)
{
    struct tkey k;
    mk_key(&k, host, target);
    struct ct_cache_lookup_res res;
    enum ct_cache_lookup r = lookup(c, &k, now, &res);
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

static int ban(struct ct_cache *c, const char *expr, bool soft, ct_time_t now, char *err,
               size_t errlen)
{
    uint64_t id = 0;
    return ct_cache_ban_add(c, expr, strlen(expr), soft, now, &id, err, errlen);
}

/* EXPR is refused with an error starting with WANT. */
static void refused(struct ct_cache *c, const char *expr, const char *want)
{
    char err[256];
    CU_ASSERT_EQUAL(ban(c, expr, false, T0, err, sizeof(err)), CT_EPROTO);
    if (strncmp(err, want, strlen(want)) != 0) {
        fprintf(stderr, "\n  %s\n  got:  %s\n  want: %s...\n", expr, err, want);
        CU_FAIL("wrong parse error");
    }
}

static void test_parse_ok(void)
{
    struct ct_cache *c = mk_ban_cache(0, 4);
    char err[256];
    const char *ok[] = {
        "obj.url == \"/a\"",
        "obj.http.x-tag ~ \"^a\" && obj.url ~ \"^/img/\"",
        "obj.status == 404",
        "obj.status != \"200\"",
        "obj.host ^= \"example.\"&&obj.url!~\"\\\\.css$\"",
        "  obj.http.Content-Type   ==   \"text/plain\"  ",
        "obj.url == \"quote \\\" and backslash \\\\\"",
    };
    for (size_t i = 0; i < CT_ARRAY_LEN(ok); i++) {
        int rc = ban(c, ok[i], false, T0, err, sizeof(err));
        if (rc != CT_OK)
            fprintf(stderr, "\n  %s: %s\n", ok[i], err);
        CU_ASSERT_EQUAL(rc, CT_OK);
    }
    CU_ASSERT_EQUAL(stats(c).bans_active, CT_ARRAY_LEN(ok));
    CU_ASSERT_EQUAL(stats(c).bans_added, CT_ARRAY_LEN(ok));
    ct_cache_free(&c);
}

static void test_parse_errors(void)
{
    struct ct_cache *c = mk_ban_cache(0, 4);
    refused(c, "", "column 1: expected a term");
    refused(c, "obj.url", "column 8: expected ==, !=, ~, !~ or ^= after the field, found the end");
    refused(c, "obj.url = \"/a\"", "column 9: expected ==, !=, ~, !~ or ^=, found '='");
    refused(c, "obj.body == \"x\"", "column 1: unknown field \"obj.body\"");
    refused(c, "obj.http. == \"x\"", "column 1: unknown field \"obj.http.\"");
    refused(c, "obj.url == /a", "column 12: expected a \"quoted\" value");
    refused(c, "obj.url == \"/a", "column 12: unterminated string");
    refused(c, "obj.url ~ \"(\"", "column 11: bad regex: missing closing parenthesis");
    refused(c, "obj.url ~ \"\\.css\"", "column 12: unknown escape \\.");
    refused(c, "obj.url == \"/a\" || obj.url == \"/b\"", "column 17: || is not supported");
    refused(c, "obj.url == \"/a\" obj.url == \"/b\"", "column 17: expected && or the end");
    refused(c, "obj.url == \"/a\" &&", "column 19: expected a term");
    refused(c, "obj.status == abc", "column 15: expected a \"quoted\" value or a number");
    struct ct_buf many = {0};
    for (int i = 0; i <= CT_CACHE_BAN_MAX_TERMS; i++)
        ct_buf_printf(&many, "%sobj.url != \"x\"", i ? " && " : "");
    refused(c, many.p, "column 289: more than 16 terms");
    ct_buf_free(&many);
    CU_ASSERT_EQUAL(stats(c).bans_active, 0);
    CU_ASSERT_EQUAL(stats(c).bans_added, 0);
    ct_cache_free(&c);
}

static void test_req_refused(void)
{
    struct ct_cache *c = mk_ban_cache(0, 4);
    refused(c, "req.url ~ \"^/img/\"", "column 1: req.url: req.* terms need the request");
    refused(c, "obj.status == 200 && req.http.host == \"a\"",
            "column 22: req.http.host: req.* terms need the request");
    CU_ASSERT_EQUAL(stats(c).bans_active, 0);
    ct_cache_free(&c);
}

/* The example: only the objects matching every term, only those
 * stored before the ban. */
static void test_lazy_at_lookup(void)
{
    struct ct_cache *c = mk_ban_cache(0, 4);
    put(c, "example.com", "/img/a.png", 200, "a1", T0);
    put(c, "example.com", "/img/b.png", 200, "b1", T0);
    put(c, "example.com", "/css/c.css", 200, "a2", T0);
    put(c, "example.com", "/img/d.png", 200, NULL, T0);
    char err[256];
    CU_ASSERT_EQUAL(ban(c, "obj.http.x-tag ~ \"^a\" && obj.url ^= \"/img/\"", false, T0 + 1, err,
                        sizeof(err)),
                    CT_OK);
    put(c, "example.com", "/img/e.png", 200, "a3", T0 + 2); /* newer than the ban */
    CU_ASSERT_EQUAL(look(c, "example.com", "/img/a.png", T0 + 3), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(look(c, "example.com", "/img/b.png", T0 + 3), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(look(c, "example.com", "/css/c.css", T0 + 3), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(look(c, "example.com", "/img/d.png", T0 + 3), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(look(c, "example.com", "/img/e.png", T0 + 3), CT_CACHE_HIT);
    struct ct_cache_stats st = stats(c);
    CU_ASSERT_EQUAL(st.banned, 1);
    CU_ASSERT_EQUAL(st.soft_banned, 0);
    CU_ASSERT_EQUAL(st.ban_tested, 4); /* each older object once; e.png never */
    CU_ASSERT_EQUAL(st.bans_active, 1); /* only the lurker drops it */
    /* tested once: looking again tests nothing */
    CU_ASSERT_EQUAL(look(c, "example.com", "/img/b.png", T0 + 4), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(stats(c).ban_tested, 4);
    ct_cache_free(&c);
}

/* obj.status, obj.host, !=, !~ and absent fields. */
static void test_terms(void)
{
    struct ct_cache *c = mk_ban_cache(0, 4);
    char err[256];
    put(c, "a.example", "/x", 200, "t", T0);
    put(c, "a.example", "/y", 404, NULL, T0);
    put(c, "b.example", "/x", 200, NULL, T0);
    put(c, "b.example", "/z?q=1", 200, "keep", T0);
    CU_ASSERT_EQUAL(ban(c, "obj.status == 404", false, T0, err, sizeof(err)), CT_OK);
    CU_ASSERT_EQUAL(look(c, "a.example", "/y", T0 + 1), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(look(c, "a.example", "/x", T0 + 1), CT_CACHE_HIT);
    /* absent X-Tag: != is true for it */
    CU_ASSERT_EQUAL(ban(c, "obj.host == \"b.example\" && obj.http.X-TAG != \"keep\"", false,
                        T0 + 1, err, sizeof(err)),
                    CT_OK);
    CU_ASSERT_EQUAL(look(c, "b.example", "/x", T0 + 2), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(look(c, "b.example", "/z?q=1", T0 + 2), CT_CACHE_HIT);
    /* absent field: ~ never matches, !~ always */
    CU_ASSERT_EQUAL(ban(c, "obj.http.x-none ~ \"\"", false, T0 + 2, err, sizeof(err)), CT_OK);
    CU_ASSERT_EQUAL(look(c, "a.example", "/x", T0 + 3), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(ban(c, "obj.url !~ \"^/x\" && obj.url ^= \"/z\"", false, T0 + 3, err,
                        sizeof(err)),
                    CT_OK);
    CU_ASSERT_EQUAL(look(c, "b.example", "/z?q=1", T0 + 4), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(look(c, "a.example", "/x", T0 + 4), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(stats(c).banned, 3);
    ct_cache_free(&c);
}

/* A regex that backtracks without end gives up at its match limit: the
 * term is false for ~ and !~ alike (nothing banned on no verdict), counted,
 * and the test ends at once (without our limit, !~ would ban it after ~2^20
 * steps, within PCRE2's own default of 10 million). */
static void test_regex_limit(void)
{
    struct ct_cache *c = mk_ban_cache(0, 4);
    char err[256];
    put(c, "a.example", "/x", 200, "aaaaaaaaaaaaaaaaaaaab", T0); /* 20 a's, then b */
    put(c, "a.example", "/y", 200, "ab", T0);
    CU_ASSERT_EQUAL(ban(c, "obj.http.x-tag !~ \"^(a+)+$\"", false, T0, err, sizeof(err)), CT_OK);
    CU_ASSERT_EQUAL(look(c, "a.example", "/x", T0 + 1), CT_CACHE_HIT); /* gave up: kept */
    CU_ASSERT_EQUAL(look(c, "a.example", "/y", T0 + 1), CT_CACHE_MISS); /* a verdict: banned */
    CU_ASSERT_EQUAL(stats(c).ban_regex_limited, 1);
    CU_ASSERT_EQUAL(stats(c).banned, 1);
    ct_cache_free(&c);
}

/* A soft ban marks stale (served as grace allows, revalidated), not gone. */
static void test_soft_ban(void)
{
    struct ct_cache *c = mk_ban_cache(0, 4);
    char err[256];
    put(c, "example.com", "/a", 200, "t", T0);
    put(c, "example.com", "/b", 200, "u", T0);
    CU_ASSERT_EQUAL(ban(c, "obj.http.x-tag == \"t\"", true, T0 + 1, err, sizeof(err)), CT_OK);
    struct tkey k;
    mk_key(&k, "example.com", "/a");
    struct ct_cache_lookup_res res;
    CU_ASSERT_EQUAL(lookup(c, &k, T0 + 2, &res), CT_CACHE_STALE);
    CU_ASSERT_PTR_NOT_NULL(res.obj);
    CU_ASSERT_PTR_NOT_NULL(res.fetch); /* ours to revalidate */
    if (res.obj) {
        CU_ASSERT(!ct_obj_is_fresh(res.obj, T0 + 2));
        CU_ASSERT(ct_obj_in_grace(res.obj, T0 + 2));
        CU_ASSERT_EQUAL(ct_obj_expires(res.obj), T0 + 1); /* stale since the ban */
    }
    if (res.fetch)
        ct_obj_abandon(res.fetch, T0 + 2, 0);
    ct_cache_lookup_res_release(&res);
    CU_ASSERT_EQUAL(look(c, "example.com", "/b", T0 + 2), CT_CACHE_HIT);
    struct ct_cache_stats st = stats(c);
    CU_ASSERT_EQUAL(st.soft_banned, 1);
    CU_ASSERT_EQUAL(st.banned, 0);
    ct_cache_free(&c);
}

/* The lurker walks in slices of at most BUDGET objects, tests every older
 * object once, and drops the ban when the walk is over; a ban added during
 * a walk waits for the next one. */
static void test_lurker_slices(void)
{
    struct ct_cache *c = mk_ban_cache(0, 8);
    char err[256], url[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(url, sizeof(url), "/o/%d", i);
        put(c, "example.com", url, 200, i % 2 ? "odd" : "even", T0);
    }
    CU_ASSERT_EQUAL(stats(c).objects, 1000);
    CU_ASSERT_EQUAL(ct_cache_ban_lurk(c, T0, 100), 0); /* no ban: nothing to do */
    CU_ASSERT_EQUAL(ban(c, "obj.http.x-tag == \"odd\"", false, T0 + 1, err, sizeof(err)), CT_OK);
    size_t calls = 0, total = 0, n;
    bool added_second = false;
    while (stats(c).bans_completed == 0 && calls < 100) {
        n = ct_cache_ban_lurk(c, T0 + 2, 100);
        CU_ASSERT(n <= 100);
        total += n;
        calls++;
        if (calls == 3) {
            CU_ASSERT_EQUAL(stats(c).bans_active, 1);
            unsigned pm = (unsigned)stats(c).ban_lurker_progress;
            CU_ASSERT(pm >= 250 && pm <= 350); /* 300 of 1000 walked */
            CU_ASSERT_EQUAL(ban(c, "obj.url == \"/o/0\"", false, T0 + 2, err, sizeof(err)), CT_OK);
            added_second = true;
        }
    }
    CU_ASSERT(added_second);
    CU_ASSERT(calls >= 10 && calls <= 12); /* 1000 objects by 100, plus the shard ends */
    CU_ASSERT(total >= 1000);
    struct ct_cache_stats st = stats(c);
    CU_ASSERT_EQUAL(st.bans_completed, 1);
    CU_ASSERT_EQUAL(st.bans_active, 1); /* the second one: its walk starts next */
    CU_ASSERT_EQUAL(st.banned, 500);
    CU_ASSERT_EQUAL(st.objects, 500);
    CU_ASSERT_EQUAL(st.ban_lurker_tested, 1000);
    /* the second walk: every remaining object is older than ban 2 */
    for (calls = 0; stats(c).bans_active && calls < 100; calls++)
        ct_cache_ban_lurk(c, T0 + 3, 100);
    st = stats(c);
    CU_ASSERT_EQUAL(st.bans_active, 0);
    CU_ASSERT_EQUAL(st.bans_completed, 2);
    CU_ASSERT_EQUAL(st.banned, 501);
    CU_ASSERT_EQUAL(st.ban_lurker_progress, 1000);
    CU_ASSERT_EQUAL(look(c, "example.com", "/o/0", T0 + 4), CT_CACHE_MISS);
    CU_ASSERT_EQUAL(look(c, "example.com", "/o/2", T0 + 4), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(ct_cache_ban_lurk(c, T0 + 4, 100), 0);
    ct_cache_free(&c);
}

/* Objects stored after the ban are not tested, by the lurker either. */
static void test_lurker_skips_newer(void)
{
    struct ct_cache *c = mk_ban_cache(0, 2);
    char err[256];
    put(c, "example.com", "/old", 200, "t", T0);
    CU_ASSERT_EQUAL(ban(c, "obj.http.x-tag == \"t\"", false, T0 + 1, err, sizeof(err)), CT_OK);
    put(c, "example.com", "/new", 200, "t", T0 + 2);
    for (int i = 0; stats(c).bans_active && i < 100; i++)
        ct_cache_ban_lurk(c, T0 + 3, 1);
    struct ct_cache_stats st = stats(c);
    CU_ASSERT_EQUAL(st.bans_active, 0);
    CU_ASSERT_EQUAL(st.ban_lurker_tested, 1);
    CU_ASSERT_EQUAL(st.banned, 1);
    CU_ASSERT_EQUAL(look(c, "example.com", "/new", T0 + 4), CT_CACHE_HIT);
    CU_ASSERT_EQUAL(look(c, "example.com", "/old", T0 + 4), CT_CACHE_MISS);
    ct_cache_free(&c);
}

static void each_cb(const struct ct_cache_ban_info *b, void *arg)
{
    ct_buf_printf(arg, "%llu:%.*s:%s:%llu/%llu;", (unsigned long long)b->id, (int)b->expr.len,
                  b->expr.p, b->soft ? "soft" : "hard", (unsigned long long)b->banned,
                  (unsigned long long)b->tested);
}

/* The list is bounded and visible. */
static void test_list_bound(void)
{
    struct ct_cache *c = mk_ban_cache(2, 4);
    char err[256];
    put(c, "example.com", "/a", 200, "t", T0);
    CU_ASSERT_EQUAL(ban(c, "obj.url == \"/a\"", false, T0, err, sizeof(err)), CT_OK);
    CU_ASSERT_EQUAL(ban(c, "obj.url == \"/b\"", true, T0, err, sizeof(err)), CT_OK);
    CU_ASSERT_EQUAL(ban(c, "obj.url == \"/c\"", false, T0, err, sizeof(err)), CT_ELIMIT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "2 bans are active, the most cache.max_bans allows"));
    CU_ASSERT_EQUAL(look(c, "example.com", "/a", T0 + 1), CT_CACHE_MISS);
    struct ct_buf list = {0};
    CU_ASSERT_EQUAL(ct_cache_ban_each(c, each_cb, &list), 2);
    CU_ASSERT_STRING_EQUAL(list.p, "2:obj.url == \"/b\":soft:0/1;1:obj.url == \"/a\":hard:1/1;");
    ct_buf_free(&list);
    struct ct_cache_stats st = stats(c);
    CU_ASSERT_EQUAL(st.bans_refused, 1);
    CU_ASSERT_EQUAL(st.bans_added, 2);
    /* the lurker frees room */
    for (int i = 0; stats(c).bans_active && i < 10; i++)
        ct_cache_ban_lurk(c, T0 + 2, 100);
    CU_ASSERT_EQUAL(ban(c, "obj.url == \"/c\"", false, T0, err, sizeof(err)), CT_OK);
    ct_cache_free(&c);
}

/* Bans are charged to the store's budget (issue 16): to the byte for their
 * text and values, with a regex's compiled and JIT code on top; given back
 * when the lurker drops them; room made by evicting objects; a ban that
 * cannot fit even in an empty store refused. */
static void test_memory(void)
{
    struct ct_cache *c = mk_ban_cache(0, 4);
    char err[256];
    size_t empty = idle_bytes(c);
    CU_ASSERT_EQUAL(stats(c).ban_bytes, 0);
    CU_ASSERT_EQUAL(ban(c, "obj.url == \"/a\"", false, T0, err, sizeof(err)), CT_OK);
    struct ct_cache_stats st = stats(c);
    size_t one = st.ban_bytes;
    CU_ASSERT_EQUAL(st.bytes - empty, one);
    CU_ASSERT(one > strlen("obj.url == \"/a\"") + 3 * 16);
    /* 4 more bytes of text and 4 more of value: 8 more bytes */
    CU_ASSERT_EQUAL(ban(c, "obj.url == \"/abcde\"", false, T0, err, sizeof(err)), CT_OK);
    CU_ASSERT_EQUAL(stats(c).ban_bytes - one, one + 8);
    /* the same length with a regex: its code on top */
    size_t two = stats(c).ban_bytes;
    CU_ASSERT_EQUAL(ban(c, "obj.url ~ \"^/x[0-9]+$\"", false, T0, err, sizeof(err)), CT_OK);
    size_t re = stats(c).ban_bytes - two;
    CU_ASSERT(re > one + 64);
    st = stats(c);
    CU_ASSERT_EQUAL(st.bytes - empty, st.ban_bytes);
    for (int i = 0; stats(c).bans_active && i < 10; i++)
        ct_cache_ban_lurk(c, T0 + 1, 100);
    st = stats(c);
    CU_ASSERT_EQUAL(st.bans_active, 0);
    CU_ASSERT_EQUAL(st.ban_bytes, 0);
    CU_ASSERT_EQUAL(st.bytes, empty);
    ct_cache_free(&c);

    /* a full store of 64 KiB: a ban evicts objects to fit; one bigger than
     * the whole store is refused */
    struct ct_cache_config cfg = {.max_bytes = 64u << 10, .max_object_size = 1u << 10,
                                  .shards = 1, .field = field_of};
    c = ct_cache_new(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    char url[32];
    for (int i = 0; i < 400; i++) {
        snprintf(url, sizeof(url), "/fill/%d", i);
        put(c, "example.com", url, 200, NULL, T0);
    }
    st = stats(c);
    CU_ASSERT(st.evictions > 0); /* it is full */
    CU_ASSERT_EQUAL(ban(c, "obj.url ~ \"^/nothing/[a-z]+/[0-9]+$\"", false, T0, err,
                        sizeof(err)), CT_OK);
    struct ct_cache_stats st2 = stats(c);
    CU_ASSERT(st2.evictions > st.evictions);
    CU_ASSERT(st2.bytes <= cfg.max_bytes);
    CU_ASSERT(st2.ban_bytes > 0);
    ct_cache_free(&c);

    /* the smallest store (4 KiB) and a ban of 4000 bytes: text and value
     * alone are twice what it holds */
    cfg.max_bytes = 4096;
    c = ct_cache_new(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    static char big[4000];
    memcpy(big, "obj.url == \"", 12);
    memset(big + 12, 'a', sizeof(big) - 14);
    big[sizeof(big) - 2] = '"';
    big[sizeof(big) - 1] = '\0';
    CU_ASSERT_EQUAL(ban(c, big, false, T0, err, sizeof(err)), CT_ELIMIT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "the ban needs"));
    st = stats(c);
    CU_ASSERT_EQUAL(st.ban_bytes, 0);
    CU_ASSERT_EQUAL(st.bans_refused, 1);
    ct_cache_free(&c);
}

/* Lookups and fills on two threads while the main thread bans and lurks:
 * nothing crashes or leaks (ASan), and each banned object is gone. */
struct hammer {
    struct ct_cache *c;
    _Atomic bool stop;
};

/* One thread's argument: its own seed (not written while threads run). */
struct hammer_arg {
    struct hammer *h;
    int seed;
};

static void *hammer_main(void *arg)
{
    struct hammer_arg *ha = arg;
    struct hammer *h = ha->h;
    char url[32];
    unsigned x = (unsigned)ha->seed;
    while (!atomic_load(&h->stop)) {
        x = x * 1103515245u + 12345u;
        snprintf(url, sizeof(url), "/h/%u", (x >> 8) % 200);
        struct tkey k;
        mk_key(&k, "example.com", url);
        struct ct_cache_lookup_res res;
        struct ct_cache_lookup_req req = {&k.key, CT_STR(""), NULL, NULL, false, false, false};
        enum ct_cache_lookup r = ct_cache_lookup(h->c, &req, T0 + 1, &res);
        if (r == CT_CACHE_MISS && res.fetch) {
            struct ct_obj_meta m = {0};
            m.status = 200;
            m.head = (x & 1) ? CT_STR("HTTP/1.1 200 OK\r\nX-Tag: odd\r\n")
                             : CT_STR("HTTP/1.1 200 OK\r\nX-Tag: even\r\n");
            m.response_time = T0;
            m.ttl = 600;
            if (ct_obj_set_head(res.fetch, &m) == CT_OK) {
                ct_obj_append(res.fetch, "b", 1);
                ct_obj_complete(res.fetch, T0 + 1);
            } else {
                ct_obj_abandon(res.fetch, T0 + 1, 0);
            }
        }
        ct_cache_lookup_res_release(&res);
    }
    return NULL;
}

static void test_threads(void)
{
    struct ct_cache *c = mk_ban_cache(0, 4);
    struct hammer h = {.c = c};
    char url[32];
    for (int i = 0; i < 200; i++) { /* so that the first bans have something to ban */
        snprintf(url, sizeof(url), "/h/%d", i);
        put(c, "example.com", url, 200, i % 2 ? "odd" : "even", T0);
    }
    pthread_t th[2];
    struct hammer_arg ha[2];
    for (int i = 0; i < 2; i++) {
        ha[i] = (struct hammer_arg){&h, i + 1};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, hammer_main, &ha[i]), 0);
    }
    char err[256];
    for (int round = 0; round < 200; round++) {
        CU_ASSERT_EQUAL(ban(c, round % 2 ? "obj.http.x-tag == \"odd\"" : "obj.url ~ \"/h/1\"",
                            round % 3 == 0, T0 + 1, err, sizeof(err)),
                        CT_OK);
        for (int i = 0; i < 5; i++)
            ct_cache_ban_lurk(c, T0 + 1, 50);
    }
    atomic_store(&h.stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; stats(c).bans_active && i < 10000; i++)
        ct_cache_ban_lurk(c, T0 + 1, 1000);
    struct ct_cache_stats st = stats(c);
    CU_ASSERT_EQUAL(st.bans_active, 0);
    CU_ASSERT_EQUAL(st.bans_completed, 200);
    CU_ASSERT(st.banned + st.soft_banned > 0);
    ct_cache_free(&c);
}

void ct_test_register(void)
{
    CT_SUITE("cache_ban", {"parse: accepted expressions", test_parse_ok},
             {"parse: errors say the column and why", test_parse_errors},
             {"parse: req.* terms refused", test_req_refused},
             {"lazy: a lookup tests older objects once", test_lazy_at_lookup},
             {"terms: status, host, !=, !~, absent fields", test_terms},
             {"a regex past its match limit bans nothing", test_regex_limit},
             {"soft ban marks stale", test_soft_ban},
             {"lurker: bounded slices, ban dropped after its walk", test_lurker_slices},
             {"lurker: objects newer than the ban untested", test_lurker_skips_newer},
             {"list: bounded and visible", test_list_bound},
             {"memory: charged to the budget, given back", test_memory},
             {"threads: lookups beside bans and the lurker", test_threads});
}
