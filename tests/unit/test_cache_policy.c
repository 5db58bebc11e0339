/* tests/unit/test_cache_policy.c: RFC 9111 policy functions, with the RFCs'
 * examples and the edge cases of issue 5. Messages are built by hand from
 * "Name: value" lines; time is passed in, never read. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache/cache_policy.h"
#include "tests/unit/ct_test.h"

#define T0 1700000000.0 /* Tue, 14 Nov 2023 22:13:20 GMT */

/* ---- building messages -------------------------------------------------- */

struct tmsg {
    struct ct_http_msg m;
    struct ct_http_field f[24];
};

static void add_fields(struct tmsg *t, va_list ap)
{
    const char *line;
    while ((line = va_arg(ap, const char *)) != NULL) {
        const char *colon = strchr(line, ':');
        CT_ASSERT(colon && t->m.nfields < CT_ARRAY_LEN(t->f));
        struct ct_http_field *f = &t->f[t->m.nfields++];
        f->name = ct_str_make(line, (size_t)(colon - line));
        f->value = ct_str_trim_ows(ct_str_c(colon + 1));
        f->id = ct_hdr_lookup(f->name);
    }
    t->m.fields = t->f;
}

/* A request: METHOD TARGET, then "Name: value" lines, NULL-terminated. */
static const struct ct_http_msg *req(struct tmsg *t, enum ct_http_method method, const char *target,
                                     ...)
{
    va_list ap;
    memset(t, 0, sizeof(*t));
    t->m.kind = CT_HTTP_REQUEST;
    t->m.method = method;
    t->m.target = ct_str_c(target);
    t->m.version = 11;
    va_start(ap, target);
    add_fields(t, ap);
    va_end(ap);
    return &t->m;
}

static const struct ct_http_msg *resp(struct tmsg *t, unsigned status, ...)
{
    va_list ap;
    memset(t, 0, sizeof(*t));
    t->m.kind = CT_HTTP_RESPONSE;
    t->m.status = status;
    t->m.version = 11;
    va_start(ap, status);
    add_fields(t, ap);
    va_end(ap);
    return &t->m;
}

/* An HTTP-date string for T0 + OFF, kept in one of four rotating buffers. */
static char date_bufs[16][CT_HTTP_DATE_LEN + 1];
static unsigned date_next;
static const char *hdate(double off)
{
    char *b = date_bufs[date_next++ % 16];
    ct_http_date_format((time_t)(T0 + off), b);
    return b;
}

/* "Name: <date>" line for T0 + OFF. */
static char line_bufs[16][64];
static unsigned line_next;
static const char *dline(const char *name, double off)
{
    char *b = line_bufs[line_next++ % 16];
    snprintf(b, sizeof line_bufs[0], "%s: %s", name, hdate(off));
    return b;
}

static struct ct_cache_policy_opts dflt(void)
{
    struct ct_cache_policy_opts o;
    ct_cache_policy_opts_default(&o);
    return o;
}

/* ---- storing ------------------------------------------------------------ */

static enum ct_cache_store store1(const struct ct_http_msg *rq, const struct ct_http_msg *rs)
{
    struct ct_cache_policy_opts o = dflt();
    return ct_cache_policy_storable(rq, rs, &o);
}

static void test_store_basic(void)
{
    struct tmsg a, b;
    const struct ct_http_msg *get = req(&a, CT_METHOD_GET, "/", "Host: x", NULL);
    CU_ASSERT_EQUAL(store1(get, resp(&b, 200, "Cache-Control: max-age=60", NULL)),
                    CT_CACHE_STORE_OK);
    CU_ASSERT_EQUAL(store1(get, resp(&b, 200, NULL)), CT_CACHE_STORE_OK); /* heuristic status */
    CU_ASSERT_EQUAL(store1(get, resp(&b, 100, NULL)), CT_CACHE_STORE_INTERIM);
    CU_ASSERT_EQUAL(store1(get, resp(&b, 103, "Cache-Control: max-age=60", NULL)),
                    CT_CACHE_STORE_INTERIM);
    CU_ASSERT_EQUAL(store1(get, resp(&b, 206, "Cache-Control: max-age=60", NULL)),
                    CT_CACHE_STORE_PARTIAL);
    CU_ASSERT_EQUAL(store1(get, resp(&b, 304, "Cache-Control: max-age=60", NULL)),
                    CT_CACHE_STORE_NOT_MODIFIED);
    const struct ct_http_msg *ok = resp(&b, 200, "Cache-Control: max-age=60", NULL);
    CU_ASSERT_EQUAL(store1(req(&a, CT_METHOD_POST, "/", NULL), ok), CT_CACHE_STORE_METHOD);
    CU_ASSERT_EQUAL(store1(req(&a, CT_METHOD_HEAD, "/", NULL), ok), CT_CACHE_STORE_METHOD);
    CU_ASSERT_EQUAL(store1(req(&a, CT_METHOD_OTHER, "/", NULL), ok), CT_CACHE_STORE_METHOD);
    CU_ASSERT_STRING_EQUAL(ct_cache_store_detail(CT_CACHE_STORE_OK), "stored");
    CU_ASSERT_STRING_EQUAL(ct_cache_store_detail(CT_CACHE_STORE_VARY_STAR), "vary-star");
    CU_ASSERT_STRING_EQUAL(ct_cache_store_detail((enum ct_cache_store)999), "unknown");
}

static void test_store_no_store_private(void)
{
    struct tmsg a, b;
    struct ct_cache_policy_opts o = dflt();
    const struct ct_http_msg *get = req(&a, CT_METHOD_GET, "/", NULL);
    CU_ASSERT_EQUAL(store1(get, resp(&b, 200, "Cache-Control: max-age=60, No-Store", NULL)),
                    CT_CACHE_STORE_NO_STORE);
    CU_ASSERT_EQUAL(
        store1(get, resp(&b, 200, "Cache-Control: max-age=60", "cache-control: no-store", NULL)),
        CT_CACHE_STORE_NO_STORE);
    CU_ASSERT_EQUAL(store1(get, resp(&b, 200, "Cache-Control: PRIVATE, max-age=60", NULL)),
                    CT_CACHE_STORE_PRIVATE);
    /* must-understand (§5.2.2.3): a status we implement overrides no-store */
    CU_ASSERT_EQUAL(
        store1(get, resp(&b, 200, "Cache-Control: must-understand, no-store, max-age=9", NULL)),
        CT_CACHE_STORE_OK);
    CU_ASSERT_EQUAL(
        store1(get, resp(&b, 299, "Cache-Control: must-understand, no-store, max-age=9", NULL)),
        CT_CACHE_STORE_MUST_UNDERSTAND);
    /* the request's no-store, unless client directives are ignored */
    const struct ct_http_msg *rq = req(&a, CT_METHOD_GET, "/", "Cache-Control: no-store", NULL);
    const struct ct_http_msg *rs = resp(&b, 200, "Cache-Control: max-age=60", NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_REQ_NO_STORE);
    o.ignore_req_cc = true;
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_OK);
}

static void test_store_authorization(void)
{
    struct tmsg a, b;
    const struct ct_http_msg *rq = req(&a, CT_METHOD_GET, "/", "Authorization: Basic eDp5", NULL);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 200, "Cache-Control: max-age=60", NULL)),
                    CT_CACHE_STORE_AUTHORIZATION);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 200, NULL)), CT_CACHE_STORE_AUTHORIZATION);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 200, "Cache-Control: public, max-age=60", NULL)),
                    CT_CACHE_STORE_OK);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 200, "Cache-Control: s-maxage=60", NULL)),
                    CT_CACHE_STORE_OK);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 200, "Cache-Control: must-revalidate, max-age=60", NULL)),
                    CT_CACHE_STORE_OK);
}

static void test_store_set_cookie(void)
{
    struct tmsg a, b;
    struct ct_cache_policy_opts o = dflt();
    const struct ct_http_msg *rq = req(&a, CT_METHOD_GET, "/", NULL);
    const struct ct_http_msg *rs = resp(&b, 200, "Cache-Control: max-age=60", "Set-Cookie: id=1",
                                        "Content-Type: text/plain", NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_SET_COOKIE);
    o.store_set_cookie = true;
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_OK);
    /* the origin excluded the cookie: store the rest, without it */
    o.store_set_cookie = false;
    rs = resp(&b, 200, "Cache-Control: max-age=60, private=\"Set-Cookie\"", "Set-Cookie: id=1",
              "Content-Type: text/plain", NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_OK);
    CU_ASSERT_FALSE(ct_cache_policy_field_storable(rs, &rs->fields[1], &o));
    CU_ASSERT_TRUE(ct_cache_policy_field_storable(rs, &rs->fields[2], &o));
    rs = resp(&b, 200, "Cache-Control: no-cache=\"set-cookie, X-A\", max-age=60",
              "Set-Cookie: id=1", "X-A: 1", "X-B: 2", NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_OK);
    CU_ASSERT_FALSE(ct_cache_policy_field_storable(rs, &rs->fields[1], &o));
    CU_ASSERT_FALSE(ct_cache_policy_field_storable(rs, &rs->fields[2], &o));
    CU_ASSERT_TRUE(ct_cache_policy_field_storable(rs, &rs->fields[3], &o));
}

static void test_store_fields_hop(void)
{
    struct tmsg b;
    struct ct_cache_policy_opts o = dflt();
    const struct ct_http_msg *rs =
        resp(&b, 200, "Connection: X-Trace, keep-alive", "X-Trace: 1", "Keep-Alive: timeout=5",
             "Transfer-Encoding: chunked", "ETag: \"a\"", NULL);
    CU_ASSERT_FALSE(ct_cache_policy_field_storable(rs, &rs->fields[0], &o));
    CU_ASSERT_FALSE(ct_cache_policy_field_storable(rs, &rs->fields[1], &o));
    CU_ASSERT_FALSE(ct_cache_policy_field_storable(rs, &rs->fields[2], &o));
    CU_ASSERT_FALSE(ct_cache_policy_field_storable(rs, &rs->fields[3], &o));
    CU_ASSERT_TRUE(ct_cache_policy_field_storable(rs, &rs->fields[4], &o));
}

static void test_store_vary_star(void)
{
    struct tmsg a, b;
    const struct ct_http_msg *rq = req(&a, CT_METHOD_GET, "/", NULL);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 200, "Vary: *", NULL)), CT_CACHE_STORE_VARY_STAR);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 200, "Vary: Accept-Encoding, *", NULL)),
                    CT_CACHE_STORE_VARY_STAR);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 200, "Vary: Accept-Encoding", "Vary: *", NULL)),
                    CT_CACHE_STORE_VARY_STAR);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 200, "Vary: Accept-Encoding", NULL)), CT_CACHE_STORE_OK);
}

static void test_store_status(void)
{
    struct tmsg a, b;
    const struct ct_http_msg *rq = req(&a, CT_METHOD_GET, "/", NULL);
    static const unsigned heur[] = {200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501};
    for (size_t i = 0; i < CT_ARRAY_LEN(heur); i++) {
        CU_ASSERT_TRUE(ct_cache_policy_status_heuristic(heur[i]));
        CU_ASSERT_EQUAL(store1(rq, resp(&b, heur[i], NULL)), CT_CACHE_STORE_OK);
    }
    CU_ASSERT_TRUE(ct_cache_policy_status_heuristic(206));
    static const unsigned other[] = {201, 302, 303, 307, 400, 403, 500, 502, 503};
    for (size_t i = 0; i < CT_ARRAY_LEN(other); i++) {
        CU_ASSERT_FALSE(ct_cache_policy_status_heuristic(other[i]));
        CU_ASSERT_EQUAL(store1(rq, resp(&b, other[i], NULL)), CT_CACHE_STORE_STATUS);
    }
    /* explicit freshness makes them storable */
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 302, "Cache-Control: max-age=60", NULL)),
                    CT_CACHE_STORE_OK);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 307, "Cache-Control: s-maxage=60", NULL)),
                    CT_CACHE_STORE_OK);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 503, "Cache-Control: public", NULL)), CT_CACHE_STORE_OK);
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 302, dline("Expires", 60), NULL)), CT_CACHE_STORE_OK);
    /* even an invalid Expires counts (it is then stale) */
    CU_ASSERT_EQUAL(store1(rq, resp(&b, 302, "Expires: 0", NULL)), CT_CACHE_STORE_OK);
}

static void test_store_targeted(void)
{
    struct tmsg a, b;
    struct ct_cache_policy_opts o = dflt();
    const struct ct_http_msg *rq = req(&a, CT_METHOD_GET, "/", NULL);
    /* RFC 9213: CDN-Cache-Control replaces Cache-Control for us */
    const struct ct_http_msg *rs =
        resp(&b, 200, "Cache-Control: no-store", "CDN-Cache-Control: max-age=60", NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_OK);
    struct ct_cc cc;
    CU_ASSERT_EQUAL(ct_cache_policy_resp_cc(rs, &o, &cc), CT_CACHE_CC_CDN);
    CU_ASSERT_EQUAL(cc.max_age, 60);
    o.cdn_cache_control = false;
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_NO_STORE);
    o.cdn_cache_control = true;
    rs = resp(&b, 200, "Cache-Control: max-age=60", "CDN-Cache-Control: no-store", NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_NO_STORE);
    /* not a valid Dictionary (upper-case key, trailing comma, bad item): ignored */
    static const char *const bad[] = {
        "CDN-Cache-Control: Max-Age=60", "CDN-Cache-Control: max-age=60,",
        "CDN-Cache-Control: max-age=6 0", "CDN-Cache-Control: ", "CDN-Cache-Control: max-age=\"60"};
    for (size_t i = 0; i < CT_ARRAY_LEN(bad); i++) {
        rs = resp(&b, 200, "Cache-Control: no-store", bad[i], NULL);
        CU_ASSERT_EQUAL(ct_cache_policy_resp_cc(rs, &o, &cc), CT_CACHE_CC_STANDARD);
        CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_NO_STORE);
    }
    /* parameters are ignored; the operator's field comes first */
    o.targeted_cc = CT_STR("Cachet-Cache-Control");
    rs = resp(&b, 200, "CDN-Cache-Control: no-store", "cachet-cache-control: max-age=5;x=1, public",
              NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_resp_cc(rs, &o, &cc), CT_CACHE_CC_OPERATOR);
    CU_ASSERT_EQUAL(cc.max_age, 5);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_PUBLIC);
    CU_ASSERT_EQUAL(ct_cache_policy_storable(rq, rs, &o), CT_CACHE_STORE_OK);
    CU_ASSERT_TRUE(ct_cache_policy_field_targeted(&rs->fields[0], &o));
    CU_ASSERT_TRUE(ct_cache_policy_field_targeted(&rs->fields[1], &o));
    rs = resp(&b, 200, "Cache-Control: max-age=1", NULL);
    CU_ASSERT_FALSE(ct_cache_policy_field_targeted(&rs->fields[0], &o));
    CU_ASSERT_EQUAL(ct_cache_policy_resp_cc(resp(&b, 200, NULL), &o, &cc), CT_CACHE_CC_NONE);
}

/* ---- freshness ---------------------------------------------------------- */

static int64_t life(const struct ct_http_msg *rs, const struct ct_cache_policy_opts *o,
                    enum ct_cache_fresh_src *src)
{
    return ct_cache_policy_lifetime(rs, o, T0, src);
}

static void test_fresh_explicit(void)
{
    struct tmsg b;
    struct ct_cache_policy_opts o = dflt();
    enum ct_cache_fresh_src src;
    CU_ASSERT_EQUAL(life(resp(&b, 200, "Cache-Control: max-age=60, s-maxage=120", NULL), &o, &src),
                    120);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_S_MAXAGE);
    CU_ASSERT_EQUAL(life(resp(&b, 200, "Cache-Control: max-age=60", dline("Date", 0),
                              dline("Expires", 3600), NULL),
                         &o, &src),
                    60);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_MAX_AGE);
    CU_ASSERT_EQUAL(
        life(resp(&b, 200, dline("Date", -100), dline("Expires", 3500), NULL), &o, &src), 3600);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_EXPIRES);
    /* no Date: the response time stands in */
    CU_ASSERT_EQUAL(life(resp(&b, 200, dline("Expires", 100), NULL), &o, &src), 100);
    /* Expires in the past, invalid, or several different: already expired */
    CU_ASSERT_EQUAL(life(resp(&b, 200, dline("Date", 0), dline("Expires", -10), NULL), &o, &src),
                    0);
    CU_ASSERT_EQUAL(life(resp(&b, 200, "Expires: 0", NULL), &o, &src), 0);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_EXPIRES);
    CU_ASSERT_EQUAL(life(resp(&b, 200, "Expires: Thu, 01 Jan 1970 00:00:00 GMT", NULL), &o, &src),
                    0);
    CU_ASSERT_EQUAL(
        life(resp(&b, 200, dline("Expires", 100), dline("Expires", 200), NULL), &o, &src), 0);
    /* an invalid max-age is stale, whatever else is there */
    struct ct_cache_fresh f;
    ct_cache_policy_fresh(
        resp(&b, 200, "Cache-Control: max-age=\"60\"", dline("Expires", 100), NULL), &o, T0, T0,
        &f);
    CU_ASSERT_EQUAL(f.lifetime, 0);
    CU_ASSERT_TRUE(f.flags & CT_CACHE_F_INVALID);
    ct_cache_policy_fresh(resp(&b, 200, "Cache-Control: max-age=60, max-age=30", NULL), &o, T0, T0,
                          &f);
    CU_ASSERT_EQUAL(f.lifetime, 30);
    CU_ASSERT_TRUE(f.flags & CT_CACHE_F_INVALID);
}

/* RFC 9111 §5.3 and §5.1 examples */
static void test_fresh_rfc_examples(void)
{
    struct tmsg b;
    struct ct_cache_policy_opts o = dflt();
    enum ct_cache_fresh_src src;
    /* Expires: Thu, 01 Dec 1994 16:00:00 GMT, one hour after its Date */
    const struct ct_http_msg *rs = resp(&b, 200, "Date: Thu, 01 Dec 1994 15:00:00 GMT",
                                        "Expires: Thu, 01 Dec 1994 16:00:00 GMT", NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_lifetime(rs, &o, 786294000.0 + 5, &src), 3600);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_EXPIRES);
    /* "Age: 60" on a response whose Date is as old as it was received */
    rs = resp(&b, 200, "Date: Thu, 01 Dec 1994 15:00:00 GMT", "Age: 60", NULL);
    CU_ASSERT_DOUBLE_EQUAL(ct_cache_policy_initial_age(rs, 786294000.0, 786294000.0), 60.0, 1e-9);
    /* Pragma: no-cache counts only without Cache-Control (RFC 7234 §5.4),
     * and not when the listener ignores the client's directives */
    struct tmsg a;
    struct ct_cache_fresh f;
    ct_cache_policy_fresh(resp(&b, 200, "Cache-Control: max-age=60", NULL), &o, T0, T0, &f);
    CU_ASSERT_EQUAL(
        ct_cache_policy_use(&f, req(&a, CT_METHOD_GET, "/", "Pragma: no-cache", NULL), &o, T0 + 1),
        CT_CACHE_USE_FETCH);
    CU_ASSERT_EQUAL(ct_cache_policy_use(&f,
                                        req(&a, CT_METHOD_GET, "/", "Pragma: no-cache",
                                            "Cache-Control: max-stale", NULL),
                                        &o, T0 + 1),
                    CT_CACHE_USE_FRESH);
    struct ct_cache_policy_opts ign = o;
    ign.ignore_req_cc = true;
    CU_ASSERT_EQUAL(ct_cache_policy_use(&f, req(&a, CT_METHOD_GET, "/", "Pragma: no-cache", NULL),
                                        &ign, T0 + 1),
                    CT_CACHE_USE_FRESH);
}

static void test_fresh_heuristic(void)
{
    struct tmsg b;
    struct ct_cache_policy_opts o = dflt();
    enum ct_cache_fresh_src src;
    /* 10 % of the time since Last-Modified */
    CU_ASSERT_EQUAL(
        life(resp(&b, 200, dline("Date", 0), dline("Last-Modified", -1000), NULL), &o, &src), 100);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_HEURISTIC);
    /* capped (default one day) */
    CU_ASSERT_EQUAL(
        life(resp(&b, 200, dline("Date", 0), dline("Last-Modified", -86400.0 * 365), NULL), &o,
             &src),
        86400);
    o.heuristic_max = 50;
    CU_ASSERT_EQUAL(life(resp(&b, 404, dline("Last-Modified", -1000), NULL), &o, &src), 50);
    o.heuristic_pct = 0;
    CU_ASSERT_EQUAL(life(resp(&b, 200, dline("Last-Modified", -1000), NULL), &o, &src), 0);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_NONE);
    o = dflt();
    /* not for a status outside §4.2.2, unless public */
    CU_ASSERT_EQUAL(life(resp(&b, 302, dline("Last-Modified", -1000), NULL), &o, &src), 0);
    CU_ASSERT_EQUAL(
        life(resp(&b, 302, "Cache-Control: public", dline("Last-Modified", -1000), NULL), &o, &src),
        100);
    /* not with explicit expiration, even an expired one */
    CU_ASSERT_EQUAL(
        life(resp(&b, 200, "Expires: 0", dline("Last-Modified", -1000), NULL), &o, &src), 0);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_EXPIRES);
    /* a Last-Modified after Date gives no basis */
    CU_ASSERT_EQUAL(
        life(resp(&b, 200, dline("Date", 0), dline("Last-Modified", 50), NULL), &o, &src), 0);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_NONE);
    /* the operator's default TTL for responses with nothing */
    o.default_ttl = 300;
    CU_ASSERT_EQUAL(life(resp(&b, 200, NULL), &o, &src), 300);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_DEFAULT);
    CU_ASSERT_EQUAL(life(resp(&b, 200, dline("Last-Modified", -1000), NULL), &o, &src), 100);
    CU_ASSERT_EQUAL(life(resp(&b, 200, "Cache-Control: max-age=7", NULL), &o, &src), 7);
}

static void test_fresh_targeted(void)
{
    struct tmsg b;
    struct ct_cache_policy_opts o = dflt();
    enum ct_cache_fresh_src src;
    CU_ASSERT_EQUAL(
        life(resp(&b, 200, "Cache-Control: max-age=60", "CDN-Cache-Control: max-age=600", NULL), &o,
             &src),
        600);
    /* the targeted field replaces Expires too */
    CU_ASSERT_EQUAL(
        life(resp(&b, 200, dline("Expires", 3600), "CDN-Cache-Control: public", NULL), &o, &src),
        0);
    CU_ASSERT_EQUAL(src, CT_CACHE_FRESH_NONE);
    struct ct_cache_fresh f;
    ct_cache_policy_fresh(resp(&b, 200, "CDN-Cache-Control: s-maxage=10, stale-if-error=99", NULL),
                          &o, T0, T0, &f);
    CU_ASSERT_EQUAL(f.lifetime, 10);
    CU_ASSERT_EQUAL(f.stale_if_error, 99);
    CU_ASSERT_EQUAL(f.stale_while_revalidate, CT_CC_UNSET);
    CU_ASSERT_EQUAL(f.flags, CT_CACHE_F_TARGETED | CT_CACHE_F_MUST_REVALIDATE);
}

/* ---- age ---------------------------------------------------------------- */

static void test_age(void)
{
    struct tmsg b;
    /* request sent at T0, response received at T0+2, Date T0+1 */
    CU_ASSERT_DOUBLE_EQUAL(
        ct_cache_policy_initial_age(resp(&b, 200, dline("Date", 1), NULL), T0, T0 + 2), 2.0,
        1e-9); /* response_delay wins over apparent_age 1 */
    CU_ASSERT_DOUBLE_EQUAL(
        ct_cache_policy_initial_age(resp(&b, 200, dline("Date", -50), NULL), T0, T0 + 2), 52.0,
        1e-9); /* apparent_age */
    CU_ASSERT_DOUBLE_EQUAL(
        ct_cache_policy_initial_age(resp(&b, 200, dline("Date", 0), "Age: 100", NULL), T0, T0 + 2),
        102.0, 1e-9); /* Age + response_delay */
    /* a Date in the future: apparent_age is 0 */
    CU_ASSERT_DOUBLE_EQUAL(
        ct_cache_policy_initial_age(resp(&b, 200, dline("Date", 500), NULL), T0, T0 + 1), 1.0,
        1e-9);
    /* no Date: response_time */
    CU_ASSERT_DOUBLE_EQUAL(ct_cache_policy_initial_age(resp(&b, 200, "Age: 7", NULL), T0, T0 + 1),
                           8.0, 1e-9);
    /* an invalid first member makes the field ignored (§5.1) */
    static const char *const bad[] = {"Age: -5", "Age: 5.5",  "Age: 1a, 2", "Age: \"5\"",
                                      "Age: ",   "Age: 0x10", "Age: 5s",    "Age: 1a"};
    for (size_t i = 0; i < CT_ARRAY_LEN(bad); i++)
        CU_ASSERT_DOUBLE_EQUAL(
            ct_cache_policy_initial_age(resp(&b, 200, dline("Date", 0), bad[i], NULL), T0, T0), 0.0,
            1e-9);
    /* a list counts by its first member, on one line or on several (§5.1;
     * http-tests/cache-tests age-parse-suffix, -prefix, -dup) */
    static const struct {
        const char *a, *b;
        double age;
    } lists[] = {{"Age: 7200, 0", NULL, 7200.0}, {"Age: 0, 7200", NULL, 0.0},
                 {"Age: 7200,0", NULL, 7200.0},  {"Age: 5", "Age: 6", 5.0},
                 {"Age: 0", "Age: 7200", 0.0},   {"Age: , 30", NULL, 30.0}};
    for (size_t i = 0; i < CT_ARRAY_LEN(lists); i++)
        CU_ASSERT_DOUBLE_EQUAL(ct_cache_policy_initial_age(resp(&b, 200, dline("Date", 0),
                                                                lists[i].a, lists[i].b, NULL),
                                                           T0, T0),
                               lists[i].age, 1e-9);
    /* and so "Age: 7200, 0" on max-age=3600 is stale on arrival */
    {
        struct ct_cache_policy_opts o0 = dflt();
        struct ct_cache_fresh f0;
        ct_cache_policy_fresh(
            resp(&b, 200, "Cache-Control: max-age=3600", "Age: 7200, 0", dline("Date", 0), NULL),
            &o0, T0, T0, &f0);
        CU_ASSERT(ct_cache_policy_ttl(&f0, T0) < 0);
    }
    /* overflow clamps to 2^31 */
    CU_ASSERT_DOUBLE_EQUAL(
        ct_cache_policy_initial_age(resp(&b, 200, "Age: 99999999999999999999", NULL), T0, T0),
        2147483648.0, 1e-9);
    /* current_age adds the resident time; a clock going back adds nothing */
    struct ct_cache_policy_opts o = dflt();
    struct ct_cache_fresh f;
    ct_cache_policy_fresh(
        resp(&b, 200, "Cache-Control: max-age=60", "Age: 10", dline("Date", 0), NULL), &o, T0, T0,
        &f);
    CU_ASSERT_DOUBLE_EQUAL(ct_cache_policy_age(&f, T0 + 5), 15.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(ct_cache_policy_ttl(&f, T0 + 5), 45.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(ct_cache_policy_age(&f, T0 - 100), 10.0, 1e-9);
}

/* ---- using a stored response ------------------------------------------- */

static enum ct_cache_use use(const char *resp_cc, const char *req_cc, bool validator, double at)
{
    struct tmsg a, b;
    struct ct_cache_policy_opts o = dflt();
    struct ct_cache_fresh f;
    char cc[128], rcc[128];
    snprintf(cc, sizeof cc, "Cache-Control: %s", resp_cc);
    snprintf(rcc, sizeof rcc, "Cache-Control: %s", req_cc);
    ct_cache_policy_fresh(
        resp(&b, 200, cc, dline("Date", 0), validator ? "ETag: \"v1\"" : "X-No: 1", NULL), &o, T0,
        T0, &f);
    return ct_cache_policy_use(&f, req(&a, CT_METHOD_GET, "/", rcc, NULL), &o, T0 + at);
}

static void test_use_basic(void)
{
    CU_ASSERT_EQUAL(use("max-age=60", "", false, 10), CT_CACHE_USE_FRESH);
    CU_ASSERT_EQUAL(use("max-age=60", "", false, 60), CT_CACHE_USE_FETCH); /* lifetime > age */
    CU_ASSERT_EQUAL(use("max-age=60", "", true, 61), CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("max-age=60, no-cache", "", true, 1), CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("max-age=60", "no-cache", true, 1), CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("max-age=60", "no-cache", false, 1), CT_CACHE_USE_FETCH);
    /* request no-store does not stop serving what is stored (§5.2.1.5) */
    CU_ASSERT_EQUAL(use("max-age=60", "no-store", false, 1), CT_CACHE_USE_FRESH);
}

static void test_use_request_directives(void)
{
    CU_ASSERT_EQUAL(use("max-age=60", "max-age=0", true, 1), CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("max-age=60", "max-age=10", true, 10), CT_CACHE_USE_FRESH);
    CU_ASSERT_EQUAL(use("max-age=60", "max-age=10", true, 11), CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("max-age=60", "min-fresh=30", true, 35), CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("max-age=60", "min-fresh=30", true, 30), CT_CACHE_USE_FRESH);
    /* max-stale with and without a value */
    CU_ASSERT_EQUAL(use("max-age=60", "max-stale", true, 1000), CT_CACHE_USE_STALE_OK);
    CU_ASSERT_EQUAL(use("max-age=60", "max-stale=10", true, 65), CT_CACHE_USE_STALE_OK);
    CU_ASSERT_EQUAL(use("max-age=60", "max-stale=10", true, 75), CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("max-age=60", "max-stale=x", true, 61), CT_CACHE_USE_REVALIDATE);
    /* max-age still bounds the age when max-stale is there too */
    CU_ASSERT_EQUAL(use("max-age=60", "max-age=62, max-stale", true, 61), CT_CACHE_USE_STALE_OK);
    CU_ASSERT_EQUAL(use("max-age=60", "max-age=62, max-stale", true, 63), CT_CACHE_USE_REVALIDATE);
    /* the response forbids stale serving */
    CU_ASSERT_EQUAL(use("max-age=60, must-revalidate", "max-stale", true, 61),
                    CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("max-age=60, proxy-revalidate", "max-stale", true, 61),
                    CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("s-maxage=60", "max-stale", true, 61), CT_CACHE_USE_REVALIDATE);
    CU_ASSERT_EQUAL(use("max-age=60, no-cache", "max-stale", true, 61), CT_CACHE_USE_REVALIDATE);
    /* mixed-case directives */
    CU_ASSERT_EQUAL(use("Max-Age=60", "MAX-STALE=100", true, 70), CT_CACHE_USE_STALE_OK);
}

static void test_use_only_if_cached(void)
{
    struct tmsg a;
    struct ct_cache_policy_opts o = dflt();
    CU_ASSERT_EQUAL(use("max-age=60", "only-if-cached", true, 1), CT_CACHE_USE_FRESH);
    CU_ASSERT_EQUAL(use("max-age=60", "only-if-cached", true, 61), CT_CACHE_USE_GATEWAY_TIMEOUT);
    CU_ASSERT_EQUAL(use("max-age=60", "only-if-cached, max-stale", true, 61),
                    CT_CACHE_USE_STALE_OK);
    CU_ASSERT_EQUAL(use("no-cache", "only-if-cached", true, 0), CT_CACHE_USE_GATEWAY_TIMEOUT);
    const struct ct_http_msg *rq =
        req(&a, CT_METHOD_GET, "/", "Cache-Control: only-if-cached", NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_on_miss(rq, &o), CT_CACHE_USE_GATEWAY_TIMEOUT);
    CU_ASSERT_EQUAL(ct_cache_policy_on_miss(req(&a, CT_METHOD_GET, "/", NULL), &o),
                    CT_CACHE_USE_FETCH);
    o.ignore_req_cc = true;
    CU_ASSERT_EQUAL(ct_cache_policy_on_miss(rq, &o), CT_CACHE_USE_FETCH);
}

static void test_use_ignore_client(void)
{
    struct tmsg a, b;
    struct ct_cache_policy_opts o = dflt();
    struct ct_cache_fresh f;
    ct_cache_policy_fresh(resp(&b, 200, "Cache-Control: max-age=60", "ETag: \"1\"", NULL), &o, T0,
                          T0, &f);
    const struct ct_http_msg *rq =
        req(&a, CT_METHOD_GET, "/", "Cache-Control: no-cache, max-age=0", NULL);
    CU_ASSERT_EQUAL(ct_cache_policy_use(&f, rq, &o, T0 + 1), CT_CACHE_USE_REVALIDATE);
    o.ignore_req_cc = true;
    CU_ASSERT_EQUAL(ct_cache_policy_use(&f, rq, &o, T0 + 1), CT_CACHE_USE_FRESH);
}

static void test_swr_sie(void)
{
    struct tmsg b;
    struct ct_cache_policy_opts o = dflt();
    struct ct_cache_fresh f;
    /* RFC 5861 §3 example: max-age=600, stale-while-revalidate=30 */
    ct_cache_policy_fresh(resp(&b, 200,
                               "Cache-Control: max-age=600, stale-while-revalidate=30, "
                               "stale-if-error=1200",
                               NULL),
                          &o, T0, T0, &f);
    CU_ASSERT_EQUAL(f.stale_while_revalidate, 30);
    CU_ASSERT_EQUAL(f.stale_if_error, 1200);
    CU_ASSERT_FALSE(ct_cache_policy_swr_ok(&f, T0 + 599));
    CU_ASSERT_TRUE(ct_cache_policy_swr_ok(&f, T0 + 620));
    CU_ASSERT_TRUE(ct_cache_policy_swr_ok(&f, T0 + 630));
    CU_ASSERT_FALSE(ct_cache_policy_swr_ok(&f, T0 + 631));
    CU_ASSERT_TRUE(ct_cache_policy_sie_ok(&f, T0 + 1800));
    CU_ASSERT_FALSE(ct_cache_policy_sie_ok(&f, T0 + 1801));
    ct_cache_policy_fresh(resp(&b, 200,
                               "Cache-Control: max-age=60, stale-while-revalidate=30, "
                               "must-revalidate, stale-if-error=60",
                               NULL),
                          &o, T0, T0, &f);
    CU_ASSERT_FALSE(ct_cache_policy_swr_ok(&f, T0 + 70));
    CU_ASSERT_FALSE(ct_cache_policy_sie_ok(&f, T0 + 70));
    ct_cache_policy_fresh(resp(&b, 200, "Cache-Control: max-age=60", NULL), &o, T0, T0, &f);
    CU_ASSERT_FALSE(ct_cache_policy_swr_ok(&f, T0 + 61));
}

/* ---- Vary --------------------------------------------------------------- */

static char *vkey(const struct ct_http_msg *rs, const struct ct_http_msg *rq, int *rc)
{
    char *k = NULL;
    size_t len = 0;
    *rc = ct_cache_vary_key(rs, rq, &k, &len);
    CU_ASSERT_TRUE(k == NULL || strlen(k) == len);
    return k;
}

static void test_vary_key(void)
{
    struct tmsg a, b;
    int rc;
    char *k = vkey(resp(&b, 200, "Vary: Accept-Encoding", NULL),
                   req(&a, CT_METHOD_GET, "/", "accept-encoding:  gzip ", NULL), &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_STRING_EQUAL(k, "accept-encoding:gzip\n");
    free(k);
    /* several Vary lines, mixed case, duplicates; an absent field */
    k = vkey(
        resp(&b, 200, "Vary: Accept-Language", "vary: accept-encoding, ACCEPT-LANGUAGE,", NULL),
        req(&a, CT_METHOD_GET, "/", "Accept-Encoding: gzip,br", "Accept-Encoding: zstd", NULL),
        &rc);
    CU_ASSERT_STRING_EQUAL(k, "accept-encoding:gzip, br, zstd\naccept-language\n");
    free(k);
    /* present but empty differs from absent */
    k = vkey(resp(&b, 200, "Vary: Accept-Language", NULL),
             req(&a, CT_METHOD_GET, "/", "Accept-Language:", NULL), &rc);
    CU_ASSERT_STRING_EQUAL(k, "accept-language:\n");
    free(k);
    /* no Vary: an empty key */
    k = vkey(resp(&b, 200, NULL), req(&a, CT_METHOD_GET, "/", NULL), &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_PTR_NULL(k);
    /* ... which every request selects: {NULL, 0} straight from vary_key
     * (fuzz_cache_policy: clang's UBSan saw NULL + 0 in vary_match) */
    CU_ASSERT_TRUE(ct_cache_vary_match(ct_str_make(k, 0), req(&a, CT_METHOD_GET, "/", NULL)));
    /* "*" anywhere */
    static const char *const stars[] = {"Vary: *", "Vary: Accept-Encoding, *", "Vary: *, Cookie",
                                        "Vary: bad name"};
    for (size_t i = 0; i < CT_ARRAY_LEN(stars); i++) {
        k = vkey(resp(&b, 200, "Vary: Cookie", stars[i], NULL), req(&a, CT_METHOD_GET, "/", NULL),
                 &rc);
        CU_ASSERT_EQUAL(rc, CT_EPROTO);
        CU_ASSERT_PTR_NULL(k);
        CU_ASSERT_TRUE(ct_cache_vary_is_star(&b.m));
    }
    CU_ASSERT_FALSE(ct_cache_vary_is_star(resp(&b, 200, "Vary: a, b", "Vary: ,", NULL)));
}

static void test_vary_match(void)
{
    struct tmsg a, b, c;
    int rc;
    const struct ct_http_msg *rs = resp(&b, 200, "Vary: Accept-Encoding, X-Device", NULL);
    char *k = vkey(
        rs, req(&a, CT_METHOD_GET, "/", "Accept-Encoding: gzip, br", "X-Device: a,b", NULL), &rc);
    struct ct_str key = ct_str_c(k);
    /* list fields are compared element-wise; others byte for byte */
    CU_ASSERT_TRUE(ct_cache_vary_match(
        key, req(&c, CT_METHOD_GET, "/", "accept-encoding: gzip,br", "x-device: a,b", NULL)));
    CU_ASSERT_TRUE(ct_cache_vary_match(key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: gzip",
                                                "X-Device: a,b", "Accept-Encoding: br", NULL)));
    CU_ASSERT_FALSE(ct_cache_vary_match(
        key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: gzip", "X-Device: a,b", NULL)));
    CU_ASSERT_FALSE(ct_cache_vary_match(
        key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: gzip, br", "X-Device: a, b", NULL)));
    CU_ASSERT_FALSE(
        ct_cache_vary_match(key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: gzip, br", NULL)));
    CU_ASSERT_FALSE(ct_cache_vary_match(
        key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: gzip, brx", "X-Device: a,b", NULL)));
    CU_ASSERT_TRUE(ct_cache_vary_match_cb(
        key, CT_STR_NULL,
        (void *)req(&c, CT_METHOD_GET, "/", "X-Device: a,b", "Accept-Encoding: gzip, br", NULL)));
    free(k);
    /* absent matches only absent */
    k = vkey(resp(&b, 200, "Vary: Cookie", NULL), req(&a, CT_METHOD_GET, "/", NULL), &rc);
    key = ct_str_c(k);
    CU_ASSERT_TRUE(ct_cache_vary_match(key, req(&c, CT_METHOD_GET, "/", "X: 1", NULL)));
    CU_ASSERT_FALSE(ct_cache_vary_match(key, req(&c, CT_METHOD_GET, "/", "Cookie: ", NULL)));
    CU_ASSERT_FALSE(ct_cache_vary_match(key, req(&c, CT_METHOD_GET, "/", "Cookie: a=1", NULL)));
    free(k);
    /* one line, one element (the hit path's case, compared whole): the same
     * answers as element by element */
    k = vkey(resp(&b, 200, "Vary: Accept-Encoding, User-Agent", NULL),
             req(&a, CT_METHOD_GET, "/", "Accept-Encoding: br", "User-Agent: x, y", NULL), &rc);
    key = ct_str_c(k);
    CU_ASSERT_TRUE(ct_cache_vary_match(
        key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: br", "User-Agent: x, y", NULL)));
    CU_ASSERT_TRUE(ct_cache_vary_match(
        key, req(&c, CT_METHOD_GET, "/", "accept-encoding:  br ", "User-Agent: x, y", NULL)));
    CU_ASSERT_TRUE(ct_cache_vary_match(key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: br,",
                                                "User-Agent: x, y", NULL)));
    CU_ASSERT_TRUE(ct_cache_vary_match(key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: ",
                                                "Accept-Encoding: br", "User-Agent: x, y", NULL)));
    CU_ASSERT_FALSE(ct_cache_vary_match(
        key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: gzip", "User-Agent: x, y", NULL)));
    CU_ASSERT_FALSE(ct_cache_vary_match(
        key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: b", "User-Agent: x, y", NULL)));
    CU_ASSERT_FALSE(ct_cache_vary_match(
        key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: br", "User-Agent: x,y", NULL)));
    /* two lines are joined with ", " (not the one-line case) */
    CU_ASSERT_TRUE(ct_cache_vary_match(key, req(&c, CT_METHOD_GET, "/", "Accept-Encoding: br",
                                                "User-Agent: x", "User-Agent: y", NULL)));
    CU_ASSERT_FALSE(
        ct_cache_vary_match(key, req(&c, CT_METHOD_GET, "/", "User-Agent: x, y", NULL)));
    free(k);
    /* the empty key matches everything; a damaged key nothing */
    CU_ASSERT_TRUE(
        ct_cache_vary_match(CT_STR_NULL, req(&c, CT_METHOD_GET, "/", "Cookie: a", NULL)));
    CU_ASSERT_FALSE(ct_cache_vary_match(CT_STR("cookie"), req(&c, CT_METHOD_GET, "/", NULL)));
}

/* ---- conditionals ------------------------------------------------------- */

static void test_etag_compare(void)
{
    /* RFC 9110 §8.8.3.2 table */
    CU_ASSERT_FALSE(ct_cache_etag_match(CT_STR("W/\"1\""), CT_STR("W/\"1\""), false));
    CU_ASSERT_TRUE(ct_cache_etag_match(CT_STR("W/\"1\""), CT_STR("W/\"1\""), true));
    CU_ASSERT_FALSE(ct_cache_etag_match(CT_STR("W/\"1\""), CT_STR("W/\"2\""), false));
    CU_ASSERT_FALSE(ct_cache_etag_match(CT_STR("W/\"1\""), CT_STR("W/\"2\""), true));
    CU_ASSERT_FALSE(ct_cache_etag_match(CT_STR("W/\"1\""), CT_STR("\"1\""), false));
    CU_ASSERT_TRUE(ct_cache_etag_match(CT_STR("W/\"1\""), CT_STR("\"1\""), true));
    CU_ASSERT_TRUE(ct_cache_etag_match(CT_STR("\"1\""), CT_STR("\"1\""), false));
    CU_ASSERT_TRUE(ct_cache_etag_match(CT_STR("\"1\""), CT_STR("\"1\""), true));
    /* malformed tags match nothing */
    CU_ASSERT_FALSE(ct_cache_etag_match(CT_STR("1"), CT_STR("1"), true));
    CU_ASSERT_FALSE(ct_cache_etag_match(CT_STR("w/\"1\""), CT_STR("\"1\""), true));
    CU_ASSERT_FALSE(ct_cache_etag_match(CT_STR("\"a b\""), CT_STR("\"a b\""), true));
    CU_ASSERT_FALSE(ct_cache_etag_match(CT_STR("\""), CT_STR("\""), true));
    CU_ASSERT_FALSE(ct_cache_etag_match(CT_STR_NULL, CT_STR("\"1\""), true));
    CU_ASSERT_TRUE(ct_cache_etag_match(CT_STR("\"\""), CT_STR("\"\""), false));
}

static unsigned cond(const struct ct_http_msg *rq, const char *etag, double lm_off, double date_off)
{
    struct ct_cache_validators v = {etag ? ct_str_c(etag) : CT_STR_NULL,
                                    lm_off ? ct_str_c(hdate(lm_off)) : CT_STR_NULL,
                                    date_off ? ct_str_c(hdate(date_off)) : CT_STR_NULL, T0 + 5};
    return ct_cache_policy_cond(rq, &v);
}

static void test_cond(void)
{
    struct tmsg a;
    const char *e = "\"xyzzy\"";
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_GET, "/", "If-None-Match: \"xyzzy\"", NULL), e, 0, 0),
                    304);
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_HEAD, "/", "If-None-Match: \"xyzzy\"", NULL), e, 0, 0),
                    304);
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_POST, "/", "If-None-Match: \"xyzzy\"", NULL), e, 0, 0),
                    0);
    /* RFC 9110 §13.1.2 examples */
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_GET, "/",
                             "If-None-Match: \"xyzzy\", \"r2d2xxxx\", "
                             "\"c3piozzzz\"",
                             NULL),
                         "\"c3piozzzz\"", 0, 0),
                    304);
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_GET, "/", "If-None-Match: W/\"xyzzy\"", NULL), e, 0, 0),
                    304);
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", "If-None-Match: \"xyzzy\"", NULL), "W/\"xyzzy\"", 0, 0),
        304);
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_GET, "/", "If-None-Match: *", NULL), NULL, 0, 0), 304);
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", "If-None-Match: \"other\"", "If-None-Match: *", NULL), e,
             0, 0),
        304);
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_GET, "/", "If-None-Match: \"other\"", NULL), e, 0, 0),
                    0);
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", "If-None-Match: \"xyzzy\"", NULL), NULL, -100, 0), 0);
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_GET, "/", "If-None-Match: xyzzy", NULL), e, 0, 0), 0);
    /* If-Modified-Since against Last-Modified */
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", dline("If-Modified-Since", -100), NULL), NULL, -100, 0),
        304);
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", dline("If-Modified-Since", -50), NULL), NULL, -100, 0),
        304);
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", dline("If-Modified-Since", -101), NULL), NULL, -100, 0),
        0);
    /* If-None-Match takes precedence: IMS is ignored */
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_GET, "/", "If-None-Match: \"other\"",
                             dline("If-Modified-Since", 0), NULL),
                         e, -100, 0),
                    0);
    /* invalid or repeated IMS is ignored */
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", "If-Modified-Since: yesterday", NULL), NULL, -100, 0), 0);
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_GET, "/", dline("If-Modified-Since", 0),
                             dline("If-Modified-Since", 1), NULL),
                         NULL, -100, 0),
                    0);
    /* no Last-Modified: the Date, then the response time (T0+5) */
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", dline("If-Modified-Since", -10), NULL), NULL, 0, -20),
        304);
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", dline("If-Modified-Since", -10), NULL), NULL, 0, -5), 0);
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", dline("If-Modified-Since", 5), NULL), NULL, 0, 0), 304);
    CU_ASSERT_EQUAL(
        cond(req(&a, CT_METHOD_GET, "/", dline("If-Modified-Since", 4), NULL), NULL, 0, 0), 0);
    CU_ASSERT_EQUAL(cond(req(&a, CT_METHOD_GET, "/", NULL), e, -100, 0), 0);
}

static void test_revalidate_hdrs(void)
{
    struct tmsg b;
    struct ct_cache_validators v;
    struct ct_http_field out[2];
    ct_cache_validators_from_msg(
        resp(&b, 200, "ETag: W/\"7\"", dline("Last-Modified", -9), dline("Date", 0), NULL), T0, &v);
    CU_ASSERT_EQUAL(ct_cache_policy_revalidate_hdrs(&v, out), 2);
    CU_ASSERT_EQUAL(out[0].id, CT_HDR_IF_NONE_MATCH);
    CU_ASSERT_TRUE(ct_str_eq(out[0].name, CT_STR("If-None-Match")));
    CU_ASSERT_TRUE(ct_str_eq(out[0].value, CT_STR("W/\"7\"")));
    CU_ASSERT_EQUAL(out[1].id, CT_HDR_IF_MODIFIED_SINCE);
    CU_ASSERT_TRUE(ct_str_eq(out[1].value, ct_str_c(hdate(-9))));
    ct_cache_validators_from_msg(resp(&b, 200, dline("Last-Modified", -9), NULL), T0, &v);
    CU_ASSERT_EQUAL(ct_cache_policy_revalidate_hdrs(&v, out), 1);
    CU_ASSERT_EQUAL(out[0].id, CT_HDR_IF_MODIFIED_SINCE);
    ct_cache_validators_from_msg(resp(&b, 200, dline("Date", 0), NULL), T0, &v);
    CU_ASSERT_EQUAL(ct_cache_policy_revalidate_hdrs(&v, out), 0);
}

static void test_304_selects(void)
{
    struct tmsg b;
    struct ct_cache_validators strong = {CT_STR("\"a\""), CT_STR_NULL, CT_STR_NULL, T0};
    struct ct_cache_validators weak = {CT_STR("W/\"a\""), CT_STR_NULL, CT_STR_NULL, T0};
    struct ct_cache_validators lm = {CT_STR_NULL, ct_str_c(hdate(-9)), CT_STR_NULL, T0};
    struct ct_cache_validators none = {CT_STR_NULL, CT_STR_NULL, CT_STR_NULL, T0};
    CU_ASSERT_TRUE(ct_cache_policy_304_selects(&strong, resp(&b, 304, "ETag: \"a\"", NULL)));
    CU_ASSERT_FALSE(ct_cache_policy_304_selects(&weak, resp(&b, 304, "ETag: \"a\"", NULL)));
    CU_ASSERT_FALSE(ct_cache_policy_304_selects(&strong, resp(&b, 304, "ETag: \"b\"", NULL)));
    CU_ASSERT_TRUE(ct_cache_policy_304_selects(&strong, resp(&b, 304, "ETag: W/\"a\"", NULL)));
    CU_ASSERT_TRUE(ct_cache_policy_304_selects(&weak, resp(&b, 304, "ETag: W/\"a\"", NULL)));
    CU_ASSERT_TRUE(
        ct_cache_policy_304_selects(&lm, resp(&b, 304, dline("Last-Modified", -9), NULL)));
    CU_ASSERT_FALSE(
        ct_cache_policy_304_selects(&lm, resp(&b, 304, dline("Last-Modified", -8), NULL)));
    CU_ASSERT_TRUE(ct_cache_policy_304_selects(&none, resp(&b, 304, dline("Date", 0), NULL)));
    CU_ASSERT_FALSE(ct_cache_policy_304_selects(&strong, resp(&b, 304, dline("Date", 0), NULL)));
    CU_ASSERT_FALSE(ct_cache_policy_304_selects(&none, resp(&b, 304, "ETag: \"a\"", NULL)));
}

static void test_merge_304(void)
{
    struct tmsg s, b;
    struct ct_cache_policy_opts o = dflt();
    resp(&s, 200, "Content-Type: text/html", "Cache-Control: max-age=60", "ETag: \"a\"",
         "Content-Length: 100", "X-A: 1", "x-a: 2", "Date: old", "Content-Encoding: gzip", NULL);
    const struct ct_http_msg *r304 =
        resp(&b, 304, "Cache-Control: max-age=120", "Date: new", "Content-Length: 0", "X-A: 3",
             "Connection: close, X-Hop", "X-Hop: 1", "X-New: 1", "Content-Encoding: br",
             "Keep-Alive: timeout=1", NULL);
    struct ct_http_field *out;
    size_t n = ct_cache_policy_merge_304(s.f, s.m.nfields, r304, &o, &out);
    static const char *const want[][2] = {
        {"Content-Type", "text/html"},
        {"Cache-Control", "max-age=120"},
        {"ETag", "\"a\""},
        {"Content-Length", "100"},
        {"X-A", "3"},
        {"Date", "new"},
        {"Content-Encoding", "gzip"},
        {"X-New", "1"},
    };
    CU_ASSERT_EQUAL(n, CT_ARRAY_LEN(want));
    for (size_t i = 0; i < n && i < CT_ARRAY_LEN(want); i++) {
        CU_ASSERT_TRUE(ct_str_eq(out[i].name, ct_str_c(want[i][0])));
        CU_ASSERT_TRUE(ct_str_eq(out[i].value, ct_str_c(want[i][1])));
    }
    free(out);
    /* a 304 with nothing: the stored fields unchanged but for Date and Age */
    resp(&s, 200, "Content-Type: text/html", "Age: 50", "ETag: \"a\"", "Date: old", NULL);
    n = ct_cache_policy_merge_304(s.f, s.m.nfields, resp(&b, 304, NULL), &o, &out);
    CU_ASSERT_EQUAL(n, 2);
    if (n == 2) {
        CU_ASSERT_TRUE(ct_str_eq(out[0].name, CT_STR("Content-Type")));
        CU_ASSERT_TRUE(ct_str_eq(out[1].name, CT_STR("ETag")));
    }
    free(out);
    n = ct_cache_policy_merge_304(s.f, s.m.nfields, resp(&b, 304, "Age: 3", NULL), &o, &out);
    CU_ASSERT_EQUAL(n, 3);
    if (n == 3)
        CU_ASSERT_TRUE(ct_str_eq(out[1].value, CT_STR("3")));
    free(out);
}

/* ---- invalidation ------------------------------------------------------- */

static size_t inval(const struct ct_http_msg *rq, const struct ct_http_msg *rs, char *out[3])
{
    return ct_cache_policy_invalidate(rq, rs, out);
}

static void free_all(char *out[3], size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(out[i]);
}

static void test_invalidate_basic(void)
{
    struct tmsg a, b;
    char *out[3];
    size_t n = inval(req(&a, CT_METHOD_POST, "/a/b?x=1", "Host: Example.com", NULL),
                     resp(&b, 201, "Location: /new", "Content-Location: c", NULL), out);
    CU_ASSERT_EQUAL(n, 3);
    if (n == 3) {
        CU_ASSERT_STRING_EQUAL(out[0], "/a/b?x=1");
        CU_ASSERT_STRING_EQUAL(out[1], "/new");
        CU_ASSERT_STRING_EQUAL(out[2], "/a/c");
    }
    free_all(out, n);
    /* same host in absolute form (default port ignored); other hosts not */
    n = inval(req(&a, CT_METHOD_PUT, "/p", "Host: example.com", NULL),
              resp(&b, 200, "Location: http://EXAMPLE.com:80/q#frag",
                   "Content-Location: https://other.example/r", NULL),
              out);
    CU_ASSERT_EQUAL(n, 2);
    if (n == 2)
        CU_ASSERT_STRING_EQUAL(out[1], "/q");
    free_all(out, n);
    n = inval(req(&a, CT_METHOD_DELETE, "/p", "Host: example.com:443", NULL),
              resp(&b, 204, "Content-Location: https://example.com/p2",
                   "Location: //example.com:443/p3", NULL),
              out);
    CU_ASSERT_EQUAL(n, 3);
    free_all(out, n);
    /* safe methods and error responses invalidate nothing; unknown methods do */
    const struct ct_http_msg *ok = resp(&b, 200, NULL);
    CU_ASSERT_EQUAL(inval(req(&a, CT_METHOD_GET, "/p", "Host: h", NULL), ok, out), 0);
    CU_ASSERT_EQUAL(inval(req(&a, CT_METHOD_HEAD, "/p", "Host: h", NULL), ok, out), 0);
    CU_ASSERT_EQUAL(inval(req(&a, CT_METHOD_OPTIONS, "/p", "Host: h", NULL), ok, out), 0);
    CU_ASSERT_EQUAL(inval(req(&a, CT_METHOD_POST, "/p", "Host: h", NULL), resp(&b, 404, NULL), out),
                    0);
    CU_ASSERT_EQUAL(inval(req(&a, CT_METHOD_POST, "/p", "Host: h", NULL), resp(&b, 500, NULL), out),
                    0);
    CU_ASSERT_EQUAL(inval(req(&a, CT_METHOD_POST, "/p", "Host: h", NULL), resp(&b, 100, NULL), out),
                    0);
    n = inval(req(&a, CT_METHOD_OTHER, "/p", "Host: h", NULL), resp(&b, 302, "Location: /p", NULL),
              out);
    CU_ASSERT_EQUAL(n, 1); /* Location equal to the target: once */
    free_all(out, n);
    n = inval(req(&a, CT_METHOD_PATCH, "http://h/abs?q", NULL), resp(&b, 200, NULL), out);
    CU_ASSERT_EQUAL(n, 1);
    if (n == 1)
        CU_ASSERT_STRING_EQUAL(out[0], "/abs?q");
    free_all(out, n);
    /* the target is kept as sent (the key it is stored under) */
    n = inval(req(&a, CT_METHOD_POST, "/a/../b", "Host: h", NULL),
              resp(&b, 200, "Content-Location: c", NULL), out);
    CU_ASSERT_EQUAL(n, 2);
    if (n == 2) {
        CU_ASSERT_STRING_EQUAL(out[0], "/a/../b");
        CU_ASSERT_STRING_EQUAL(out[1], "/c");
    }
    free_all(out, n);
    CU_ASSERT_EQUAL(inval(req(&a, CT_METHOD_OTHER, "*", "Host: h", NULL), resp(&b, 200, NULL), out),
                    0);
    /* other schemes are not ours */
    n = inval(req(&a, CT_METHOD_POST, "/p", "Host: h", NULL),
              resp(&b, 201, "Location: ftp://h/x", NULL), out);
    CU_ASSERT_EQUAL(n, 1);
    free_all(out, n);
}

/* RFC 3986 §5.4.1 and §5.4.2 examples, base http://a/b/c/d;p?q */
static void test_invalidate_rfc3986(void)
{
    static const char *const cases[][2] = {
        {"g", "/b/c/g"},
        {"./g", "/b/c/g"},
        {"g/", "/b/c/g/"},
        {"/g", "/g"},
        {"?y", "/b/c/d;p?y"},
        {"g?y", "/b/c/g?y"},
        {"g#s", "/b/c/g"},
        {"g?y#s", "/b/c/g?y"},
        {";x", "/b/c/;x"},
        {"g;x", "/b/c/g;x"},
        {"g;x?y#s", "/b/c/g;x?y"},
        {".", "/b/c/"},
        {"./", "/b/c/"},
        {"..", "/b/"},
        {"../", "/b/"},
        {"../g", "/b/g"},
        {"../..", "/"},
        {"../../", "/"},
        {"../../g", "/g"},
        {"../../../g", "/g"},
        {"../../../../g", "/g"},
        {"/./g", "/g"},
        {"/../g", "/g"},
        {"g.", "/b/c/g."},
        {".g", "/b/c/.g"},
        {"g..", "/b/c/g.."},
        {"..g", "/b/c/..g"},
        {"./../g", "/b/g"},
        {"./g/.", "/b/c/g/"},
        {"g/./h", "/b/c/g/h"},
        {"g/../h", "/b/c/h"},
        {"g;x=1/./y", "/b/c/g;x=1/y"},
        {"g;x=1/../y", "/b/c/y"},
        {"g?y/./x", "/b/c/g?y/./x"},
        {"http://a/b/c/g", "/b/c/g"},
        {"//a/g", "/g"},
    };
    for (size_t i = 0; i < CT_ARRAY_LEN(cases); i++) {
        struct tmsg a, b;
        char *out[3], cl[64];
        snprintf(cl, sizeof cl, "Content-Location: %s", cases[i][0]);
        size_t n = inval(req(&a, CT_METHOD_POST, "/b/c/d;p?q", "Host: a", NULL),
                         resp(&b, 200, cl, NULL), out);
        CU_ASSERT_EQUAL(n, 2);
        if (n != 2 || strcmp(out[1], cases[i][1]) != 0)
            fprintf(stderr, "%s -> %s (want %s)\n", cases[i][0], n == 2 ? out[1] : "?",
                    cases[i][1]);
        free_all(out, n);
    }
    /* references equal to the base itself collapse into the target */
    static const char *const same[] = {"", "#s", "d;p?q"};
    for (size_t i = 0; i < CT_ARRAY_LEN(same); i++) {
        struct tmsg a, b;
        char *out[3], cl[64];
        snprintf(cl, sizeof cl, "Content-Location: %s", same[i]);
        size_t n = inval(req(&a, CT_METHOD_POST, "/b/c/d;p?q", "Host: a", NULL),
                         resp(&b, 200, cl, NULL), out);
        CU_ASSERT_EQUAL(n, 1);
        free_all(out, n);
    }
    /* "//g" names another host */
    struct tmsg a, b;
    char *out[3];
    size_t n = inval(req(&a, CT_METHOD_POST, "/b/c/d;p?q", "Host: a", NULL),
                     resp(&b, 200, "Content-Location: //g", NULL), out);
    CU_ASSERT_EQUAL(n, 1);
    free_all(out, n);
}

/* ---- robustness: random inputs ----------------------------------------- */

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;
static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

/* An exact-size heap string (NUL-terminated for the "Name: value" helper,
 * the terminator is not part of the view the code sees). */
static char *rnd_value(const char *prefix)
{
    static const char alpha[] = " ,;=\"*-aAz09:/.?#W@%";
    size_t pl = strlen(prefix), len = rnd(24);
    char *s = malloc(pl + len + 1);
    memcpy(s, prefix, pl);
    for (size_t i = 0; i < len; i++)
        s[pl + i] = alpha[rnd(sizeof alpha - 1)];
    s[pl + len] = '\0';
    return s;
}

static void test_random_inputs(void)
{
    struct ct_cache_policy_opts o = dflt();
    o.targeted_cc = CT_STR("X-CC");
    int bad = 0;
    for (int iter = 0; iter < 20000; iter++) {
        struct tmsg a, b;
        char *loc = rnd_value("Location: "), *cl = rnd_value("Content-Location: ");
        char *vary = rnd_value("Vary: "), *val = rnd_value("a: ");
        char *inm = rnd_value("If-None-Match: "), *et = rnd_value("ETag: ");
        char *cdn = rnd_value("CDN-Cache-Control: "), *xcc = rnd_value("X-CC: ");
        const struct ct_http_msg *rq = req(&a, CT_METHOD_POST, "/x/y?z", "Host: h", val, inm, NULL);
        const struct ct_http_msg *rs = resp(&b, 200, loc, cl, vary, et, cdn, xcc, NULL);
        char *out[3];
        size_t n = ct_cache_policy_invalidate(rq, rs, out);
        for (size_t i = 0; i < n; i++) {
            if (out[i][0] != '/' || strchr(out[i], '#'))
                bad++;
            free(out[i]);
        }
        char *key;
        size_t klen;
        if (ct_cache_vary_key(rs, rq, &key, &klen) == CT_OK) {
            if (!ct_cache_vary_match(ct_str_make(key, klen), rq))
                bad++; /* a request always matches its own variant */
            free(key);
        }
        struct ct_cache_validators v;
        ct_cache_validators_from_msg(rs, T0, &v);
        (void)ct_cache_policy_cond(rq, &v);
        (void)ct_cache_policy_storable(rq, rs, &o);
        struct ct_cache_fresh f;
        ct_cache_policy_fresh(rs, &o, T0, T0, &f);
        if (f.lifetime < 0)
            bad++;
        free(loc), free(cl), free(vary), free(val), free(inm), free(et), free(cdn), free(xcc);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

void ct_test_register(void)
{
    CT_SUITE("storable", {"basic verdicts", test_store_basic},
             {"no-store, private, must-understand", test_store_no_store_private},
             {"Authorization", test_store_authorization}, {"Set-Cookie", test_store_set_cookie},
             {"hop-by-hop fields not stored", test_store_fields_hop},
             {"Vary: *", test_store_vary_star}, {"status codes", test_store_status},
             {"targeted cache control", test_store_targeted});
    CT_SUITE("freshness", {"explicit", test_fresh_explicit},
             {"RFC 9111 examples", test_fresh_rfc_examples}, {"heuristic", test_fresh_heuristic},
             {"targeted", test_fresh_targeted}, {"age", test_age});
    CT_SUITE("use", {"basic", test_use_basic}, {"request directives", test_use_request_directives},
             {"only-if-cached", test_use_only_if_cached}, {"ignore client", test_use_ignore_client},
             {"stale-while-revalidate / stale-if-error", test_swr_sie});
    CT_SUITE("vary", {"key", test_vary_key}, {"match", test_vary_match});
    CT_SUITE("conditionals", {"entity-tag comparison", test_etag_compare}, {"client", test_cond},
             {"revalidation fields", test_revalidate_hdrs}, {"304 selection", test_304_selects},
             {"304 merge", test_merge_304});
    CT_SUITE("invalidation", {"basic", test_invalidate_basic},
             {"RFC 3986 resolution", test_invalidate_rfc3986});
    CT_SUITE("robustness", {"random inputs", test_random_inputs});
}
