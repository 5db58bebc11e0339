/* tests/unit/test_origin.c: the pure parts of cachet-origin: query knobs,
 * targets and routes, path containment, conditionals, ranges, stats, JSON. */
#include <stdlib.h>

#include "origin/origin_int.h"
#include "tests/unit/ct_test.h"

#define STR_EQ(view, lit) CU_ASSERT_TRUE(ct_str_eq((view), CT_STR(lit)))

static int parse_q(const char *q, struct ct_oparams *prm, char *err, size_t errlen)
{
    static char scratch[4096];
    CU_ASSERT_TRUE_FATAL(ct_oparams_scratch_len(strlen(q)) <= sizeof(scratch));
    return ct_oparams_parse(ct_str_c(q), scratch, 1000000000, prm, err, errlen);
}

static void test_query_knobs(void)
{
    struct ct_oparams p;
    char err[160] = "";
    CU_ASSERT_EQUAL(parse_q("size=1024&cache-control=max-age%3D60&etag=%22v1%22&status=203"
                            "&chunked=1&delay=5&vary=Accept&set-cookie=a%3D1&set-cookie=b=2"
                            "&close=mid&trickle=10&trickle-size=7&v=cachebuster",
                            &p, err, sizeof(err)),
                    CT_OK);
    CU_ASSERT_TRUE(p.has_size);
    CU_ASSERT_EQUAL(p.size, 1024);
    STR_EQ(p.cache_control, "max-age=60");
    STR_EQ(p.etag, "\"v1\"");
    STR_EQ(p.vary, "Accept");
    CU_ASSERT_EQUAL(p.status, 203);
    CU_ASSERT_TRUE(p.chunked);
    CU_ASSERT_TRUE(p.has_delay);
    CU_ASSERT_EQUAL(p.delay_ms, 5);
    CU_ASSERT_EQUAL(p.n_cookies, 2);
    STR_EQ(p.set_cookie[0], "a=1");
    STR_EQ(p.set_cookie[1], "b=2");
    CU_ASSERT_TRUE(p.close_mid);
    CU_ASSERT_EQUAL(p.trickle_ms, 10);
    CU_ASSERT_EQUAL(p.trickle_size, 7);
}

static void test_query_dates(void)
{
    struct ct_oparams p;
    char err[160];
    /* 1000000000 = Sun, 09 Sep 2001 01:46:40 GMT */
    CU_ASSERT_EQUAL(parse_q("expires=%2B60&last-modified=-40&expires=%2B0", &p, err, sizeof(err)),
                    CT_OK);
    STR_EQ(p.expires, "Sun, 09 Sep 2001 01:46:40 GMT");
    STR_EQ(p.last_modified, "Sun, 09 Sep 2001 01:46:00 GMT");
    CU_ASSERT_EQUAL(parse_q("last-modified=@0&expires=garbage+date", &p, err, sizeof(err)), CT_OK);
    STR_EQ(p.last_modified, "Thu, 01 Jan 1970 00:00:00 GMT");
    STR_EQ(p.expires, "garbage date");
}

static void test_query_bad_values(void)
{
    struct ct_oparams p;
    char err[160];
    CU_ASSERT_EQUAL(parse_q("status=abc", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "status=abc"));
    CU_ASSERT_EQUAL(parse_q("status=99", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("status=600", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("size=-1", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "size=-1"));
    CU_ASSERT_EQUAL(parse_q("size=1099511627777", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("delay=600001", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("chunked=yes", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("close=end", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("cache-control=a%0d%0aX-Evil:%201", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "CR, LF"));
    CU_ASSERT_EQUAL(parse_q("etag=%zz", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("etag=%2", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("&&x&=&", &p, err, sizeof(err)), CT_OK);
    CU_ASSERT_EQUAL(parse_q("type=json", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "media type"));
    CU_ASSERT_EQUAL(parse_q("type=text/", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("type=text/a%0d%0aX:1", &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_EQUAL(parse_q("type=application/json;+charset=utf-8", &p, err, sizeof(err)), CT_OK);
    STR_EQ(p.type, "application/json; charset=utf-8");
}

/* hdr=Name:Value: any field, validated, in order, 16 at most. */
static void test_query_hdr(void)
{
    struct ct_oparams p;
    char err[160];
    CU_ASSERT_EQUAL(parse_q("hdr=CDN-Cache-Control%3A%20max-age%3D60&hdr=X-A:+b,%20c+"
                            "&hdr=Cache-Control:private",
                            &p, err, sizeof(err)),
                    CT_OK);
    CU_ASSERT_EQUAL(p.n_hdrs, 3);
    STR_EQ(p.hdr_name[0], "CDN-Cache-Control");
    STR_EQ(p.hdr_value[0], "max-age=60");
    STR_EQ(p.hdr_name[1], "X-A");
    STR_EQ(p.hdr_value[1], "b, c"); /* OWS trimmed */
    STR_EQ(p.hdr_name[2], "Cache-Control");
    const char *bad[][2] = {
        {"hdr=NoColon", "Name:Value"},
        {"hdr=Bad%20Name:1", "not a token"},
        {"hdr=:1", "not a token"},
        {"hdr=X-Evil:a%0d%0aX-Injected:%201", "CR, LF"},
        {"hdr=X:a%00b", "CR, LF or NUL"},
        {"hdr=content-length:%205", "sets itself"},
        {"hdr=Transfer-Encoding:chunked", "sets itself"},
        {"hdr=Connection:close", "sets itself"},
    };
    for (size_t i = 0; i < CT_ARRAY_LEN(bad); i++) {
        err[0] = '\0';
        CU_ASSERT_EQUAL(parse_q(bad[i][0], &p, err, sizeof(err)), CT_EPROTO);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i][1]));
        CU_ASSERT_PTR_NULL(strchr(err, '\n')); /* one line */
    }
    char q[400] = "";
    for (int i = 0; i < 17; i++)
        strncat(q, "hdr=X-N:1&", sizeof(q) - strlen(q) - 1);
    CU_ASSERT_EQUAL(parse_q(q, &p, err, sizeof(err)), CT_EPROTO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "too many"));
}

static void test_url_decode(void)
{
    char out[32];
    CU_ASSERT_EQUAL(ct_ourl_decode(CT_STR("a%20b+c%2F"), out, true), 6);
    CU_ASSERT_EQUAL(memcmp(out, "a b c/", 6), 0);
    CU_ASSERT_EQUAL(ct_ourl_decode(CT_STR("a+b"), out, false), 3);
    CU_ASSERT_EQUAL(memcmp(out, "a+b", 3), 0);
    CU_ASSERT_EQUAL(ct_ourl_decode(CT_STR("%4"), out, false), -1);
    CU_ASSERT_EQUAL(ct_ourl_decode(CT_STR("%g0"), out, false), -1);
}

static void test_target_split(void)
{
    struct ct_str path, query;
    CU_ASSERT_EQUAL(ct_otarget_split(CT_STR("/gen?size=1"), &path, &query), CT_OK);
    STR_EQ(path, "/gen");
    STR_EQ(query, "size=1");
    CU_ASSERT_EQUAL(ct_otarget_split(CT_STR("/json"), &path, &query), CT_OK);
    STR_EQ(path, "/json");
    CU_ASSERT_EQUAL(query.len, 0);
    CU_ASSERT_EQUAL(ct_otarget_split(CT_STR("HTTP://example.com:80/a/b?x"), &path, &query), CT_OK);
    STR_EQ(path, "/a/b");
    STR_EQ(query, "x");
    CU_ASSERT_EQUAL(ct_otarget_split(CT_STR("https://h?q=1"), &path, &query), CT_OK);
    STR_EQ(path, "/");
    STR_EQ(query, "q=1");
    CU_ASSERT_EQUAL(ct_otarget_split(CT_STR("*"), &path, &query), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_otarget_split(CT_STR("example.com:443"), &path, &query), CT_EPROTO);
}

static void test_route_match(void)
{
    struct ct_str rest;
    CU_ASSERT_EQUAL(ct_oroute_match(CT_STR("/json"), &rest), CT_OROUTE_JSON);
    CU_ASSERT_EQUAL(ct_oroute_match(CT_STR("/jsonx"), &rest), CT_OROUTE_STATIC);
    CU_ASSERT_EQUAL(ct_oroute_match(CT_STR("/bytes/123"), &rest), CT_OROUTE_BYTES);
    STR_EQ(rest, "123");
    CU_ASSERT_EQUAL(ct_oroute_match(CT_STR("/bytes/"), &rest), CT_OROUTE_STATIC);
    CU_ASSERT_EQUAL(ct_oroute_match(CT_STR("/delay/500"), &rest), CT_OROUTE_DELAY);
    STR_EQ(rest, "500");
    CU_ASSERT_EQUAL(ct_oroute_match(CT_STR("/_origin/stats"), &rest), CT_OROUTE_STATS);
    CU_ASSERT_EQUAL(ct_oroute_match(CT_STR("/_origin/stats/reset"), &rest),
                    CT_OROUTE_STATS_RESET);
    CU_ASSERT_EQUAL(ct_oroute_match(CT_STR("/1k"), &rest), CT_OROUTE_STATIC);
    CU_ASSERT_TRUE(ct_oroute_is_internal(CT_STR("/_origin/anything")));
    CU_ASSERT_FALSE(ct_oroute_is_internal(CT_STR("/_origin")));
    CU_ASSERT_FALSE(ct_oroute_is_internal(CT_STR("/json")));
}

static void test_path_normalize(void)
{
    char out[64];
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/a/b.txt"), out, sizeof(out)), CT_OK);
    CU_ASSERT_STRING_EQUAL(out, "a/b.txt");
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("//a/./b//"), out, sizeof(out)), CT_OK);
    CU_ASSERT_STRING_EQUAL(out, "a/b");
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/"), out, sizeof(out)), CT_OK);
    CU_ASSERT_STRING_EQUAL(out, "");
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/sp%20ace"), out, sizeof(out)), CT_OK);
    CU_ASSERT_STRING_EQUAL(out, "sp ace");
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/..a/b.."), out, sizeof(out)), CT_OK);
    CU_ASSERT_STRING_EQUAL(out, "..a/b..");
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/../etc/passwd"), out, sizeof(out)), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/a/.."), out, sizeof(out)), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/%2e%2e/x"), out, sizeof(out)), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/.%2E/x"), out, sizeof(out)), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/a%2f..%2fb"), out, sizeof(out)), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/a%5cb"), out, sizeof(out)), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/a%00b"), out, sizeof(out)), CT_EAGAIN);
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/a%zz"), out, sizeof(out)), CT_EAGAIN);
    CU_ASSERT_EQUAL(ct_opath_normalize(CT_STR("/aaaaaaaaaa/bbbbbbbbbb"), out, 12), CT_ELIMIT);
}

static void test_mime(void)
{
    CU_ASSERT_STRING_EQUAL(ct_omime_type(CT_STR("a/b.HTML")), "text/html; charset=utf-8");
    CU_ASSERT_STRING_EQUAL(ct_omime_type(CT_STR("x.json")), "application/json");
    CU_ASSERT_STRING_EQUAL(ct_omime_type(CT_STR("noext")), "application/octet-stream");
    CU_ASSERT_STRING_EQUAL(ct_omime_type(CT_STR("d.png/file")), "application/octet-stream");
}

static void test_etag_match(void)
{
    CU_ASSERT_TRUE(ct_oetag_match(CT_STR("\"a\""), CT_STR("\"a\""), true));
    CU_ASSERT_TRUE(ct_oetag_match(CT_STR("W/\"a\""), CT_STR("\"a\""), false));
    CU_ASSERT_FALSE(ct_oetag_match(CT_STR("W/\"a\""), CT_STR("\"a\""), true));
    CU_ASSERT_FALSE(ct_oetag_match(CT_STR("\"a\""), CT_STR("\"b\""), false));
    CU_ASSERT_FALSE(ct_oetag_match(CT_STR("a"), CT_STR("a"), false));
}

static enum ct_orange rng(const char *v, uint64_t len, uint64_t *f, uint64_t *l)
{
    return ct_orange_parse(ct_str_c(v), len, f, l);
}

static void test_range(void)
{
    uint64_t f = 0, l = 0;
    CU_ASSERT_EQUAL(rng("bytes=0-99", 1000, &f, &l), CT_ORANGE_ONE);
    CU_ASSERT_EQUAL(f, 0);
    CU_ASSERT_EQUAL(l, 99);
    CU_ASSERT_EQUAL(rng("bytes=900-", 1000, &f, &l), CT_ORANGE_ONE);
    CU_ASSERT_EQUAL(f, 900);
    CU_ASSERT_EQUAL(l, 999);
    CU_ASSERT_EQUAL(rng("bytes=-100", 1000, &f, &l), CT_ORANGE_ONE);
    CU_ASSERT_EQUAL(f, 900);
    CU_ASSERT_EQUAL(l, 999);
    CU_ASSERT_EQUAL(rng("bytes=-5000", 1000, &f, &l), CT_ORANGE_ONE);
    CU_ASSERT_EQUAL(f, 0);
    CU_ASSERT_EQUAL(rng("BYTES=990-5000", 1000, &f, &l), CT_ORANGE_ONE);
    CU_ASSERT_EQUAL(l, 999);
    CU_ASSERT_EQUAL(rng("bytes=1000-", 1000, &f, &l), CT_ORANGE_UNSAT);
    CU_ASSERT_EQUAL(rng("bytes=-0", 1000, &f, &l), CT_ORANGE_UNSAT);
    CU_ASSERT_EQUAL(rng("bytes=0-0", 0, &f, &l), CT_ORANGE_UNSAT);
    CU_ASSERT_EQUAL(rng("bytes=0-1, 5-6", 1000, &f, &l), CT_ORANGE_MULTI);
    CU_ASSERT_EQUAL(rng("bytes=2000-, 5-6", 1000, &f, &l), CT_ORANGE_MULTI);
    CU_ASSERT_EQUAL(rng("bytes=2000-, 3000-", 1000, &f, &l), CT_ORANGE_UNSAT);
    CU_ASSERT_EQUAL(rng("bytes=5-2", 1000, &f, &l), CT_ORANGE_NONE);
    CU_ASSERT_EQUAL(rng("bytes=a-b", 1000, &f, &l), CT_ORANGE_NONE);
    CU_ASSERT_EQUAL(rng("items=0-1", 1000, &f, &l), CT_ORANGE_NONE);
    CU_ASSERT_EQUAL(rng("bytes=", 1000, &f, &l), CT_ORANGE_NONE);
}

/* A request head with the given fields, as the parser would make it. */
static struct ct_http_field fields[8];
static struct ct_http_msg req(enum ct_http_method m, size_t n)
{
    struct ct_http_msg msg = {.kind = CT_HTTP_REQUEST, .method = m, .version = 11};
    msg.fields = fields;
    msg.nfields = n;
    for (size_t i = 0; i < n; i++)
        fields[i].id = ct_hdr_lookup(fields[i].name);
    return msg;
}
#define FIELD(i, n, v) (fields[i] = (struct ct_http_field){CT_STR(n), CT_STR(v), 0})

static void test_conditionals(void)
{
    /* Sun, 09 Sep 2001 01:46:40 GMT */
    struct ct_ovalidators v = {CT_STR("\"v1\""), true, 1000000000};
    struct ct_http_msg m;
    FIELD(0, "If-None-Match", "\"x\", W/\"v1\"");
    m = req(CT_METHOD_GET, 1);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_NOT_MODIFIED);
    m = req(CT_METHOD_POST, 1);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_FAILED);
    FIELD(0, "If-None-Match", "\"x\"");
    FIELD(1, "if-none-match", "*");
    m = req(CT_METHOD_HEAD, 2);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_NOT_MODIFIED);
    /* If-None-Match wins over a matching If-Modified-Since. */
    FIELD(0, "If-None-Match", "\"other\"");
    FIELD(1, "If-Modified-Since", "Sun, 09 Sep 2001 01:46:40 GMT");
    m = req(CT_METHOD_GET, 2);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_PASS);
    m = req(CT_METHOD_GET, 0);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_PASS);
    FIELD(0, "If-Modified-Since", "Sun, 09 Sep 2001 01:46:40 GMT");
    m = req(CT_METHOD_GET, 1);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_NOT_MODIFIED);
    FIELD(0, "If-Modified-Since", "Sun, 09 Sep 2001 01:46:39 GMT");
    m = req(CT_METHOD_GET, 1);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_PASS);
    FIELD(0, "If-Modified-Since", "not a date");
    m = req(CT_METHOD_GET, 1);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_PASS);
    FIELD(0, "If-Match", "\"v1\"");
    m = req(CT_METHOD_PUT, 1);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_PASS);
    FIELD(0, "If-Match", "W/\"v1\"");
    m = req(CT_METHOD_PUT, 1);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_FAILED);
    FIELD(0, "If-Unmodified-Since", "Sun, 09 Sep 2001 01:46:39 GMT");
    m = req(CT_METHOD_GET, 1);
    CU_ASSERT_EQUAL(ct_ocond_eval(&m, &v), CT_OCOND_FAILED);
}

static void test_if_range(void)
{
    struct ct_ovalidators v = {CT_STR("\"v1\""), true, 1000000000};
    struct ct_http_msg m = req(CT_METHOD_GET, 0);
    CU_ASSERT_TRUE(ct_oif_range_ok(&m, &v));
    FIELD(0, "If-Range", "\"v1\"");
    m = req(CT_METHOD_GET, 1);
    CU_ASSERT_TRUE(ct_oif_range_ok(&m, &v));
    FIELD(0, "If-Range", "\"v2\"");
    m = req(CT_METHOD_GET, 1);
    CU_ASSERT_FALSE(ct_oif_range_ok(&m, &v));
    FIELD(0, "If-Range", "Sun, 09 Sep 2001 01:46:40 GMT");
    m = req(CT_METHOD_GET, 1);
    CU_ASSERT_TRUE(ct_oif_range_ok(&m, &v));
    FIELD(0, "If-Range", "Sun, 09 Sep 2001 01:46:41 GMT");
    m = req(CT_METHOD_GET, 1);
    CU_ASSERT_FALSE(ct_oif_range_ok(&m, &v));
}

static void test_stats(void)
{
    struct ct_ostats *t[2] = {ct_ostats_new(), ct_ostats_new()};
    struct ct_buf out = {0};
    ct_ostats_count(t[0], CT_STR("/json"));
    ct_ostats_count(t[1], CT_STR("/json"));
    ct_ostats_count(t[1], CT_STR("/a\"b"));
    ct_ostats_json(t, 2, &out);
    CU_ASSERT_EQUAL_FATAL(out.len,
                          strlen("{\"total\": 3, \"paths\": {\"/a\\\"b\": 1, \"/json\": 2}}\n"));
    CU_ASSERT_EQUAL(memcmp(out.p, "{\"total\": 3, \"paths\": {\"/a\\\"b\": 1, \"/json\": 2}}\n",
                           out.len), 0);
    ct_ostats_reset(t[0]);
    ct_ostats_reset(t[1]);
    out.len = 0;
    ct_ostats_json(t, 2, &out);
    CU_ASSERT_EQUAL(memcmp(out.p, "{\"total\": 0, \"paths\": {}}\n", out.len), 0);
    /* Past the cap only the total grows (reset keeps the old "/json" key). */
    char p[16];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(p, sizeof(p), "/p%d", i);
        ct_ostats_count(t[0], ct_str_make(p, (size_t)n));
    }
    out.len = 0;
    ct_ostats_json(t, 1, &out);
    CU_ASSERT_EQUAL(memcmp(out.p, "{\"total\": 5000,", 15), 0);
    CU_ASSERT_PTR_NULL(memmem(out.p, out.len, "\"/p4095\"", 8));
    CU_ASSERT_PTR_NOT_NULL(memmem(out.p, out.len, "\"/p4094\": 1", 11));
    ct_buf_free(&out);
    ct_ostats_free(&t[0]);
    ct_ostats_free(&t[1]);
    CU_ASSERT_PTR_NULL(t[0]);
}

static void test_pattern(void)
{
    ct_opattern_init();
    CU_ASSERT_EQUAL(ct_opattern_at(0)[0], '0');
    CU_ASSERT_EQUAL(ct_opattern_at(62)[0], '\n');
    CU_ASSERT_EQUAL(ct_opattern_at(63)[0], '0');
    const char *p = ct_opattern_at(1000);
    for (unsigned i = 0; i < CT_OPATTERN_SPAN; i += 4099)
        CU_ASSERT_EQUAL(p[i], CT_OPATTERN_LINE[(1000 + i) % CT_OPATTERN_PERIOD]);
    CU_ASSERT_EQUAL(p[CT_OPATTERN_SPAN - 1],
                    CT_OPATTERN_LINE[(1000 + CT_OPATTERN_SPAN - 1) % CT_OPATTERN_PERIOD]);
}

void ct_test_register(void)
{
    CT_SUITE("origin query", {"knobs", test_query_knobs}, {"relative dates", test_query_dates},
             {"bad values", test_query_bad_values}, {"url decode", test_url_decode},
             {"hdr= fields", test_query_hdr});
    CT_SUITE("origin routes", {"target split", test_target_split},
             {"route match", test_route_match}, {"path normalize", test_path_normalize},
             {"mime", test_mime});
    CT_SUITE("origin conditionals", {"etag match", test_etag_match}, {"range", test_range},
             {"preconditions", test_conditionals}, {"if-range", test_if_range});
    CT_SUITE("origin stats", {"count, json, reset, cap", test_stats},
             {"pattern", test_pattern});
}
