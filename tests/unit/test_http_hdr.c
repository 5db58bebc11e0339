/* tests/unit/test_http_hdr.c: the method table, the header table, field
 * lookups in a message, list tokens of a message, hop-by-hop detection. */
#include "http/http.h"
#include "tests/unit/ct_test.h"

static void test_method_lookup(void)
{
    CU_ASSERT_EQUAL(ct_http_method_lookup(CT_STR("GET")), CT_METHOD_GET);
    CU_ASSERT_EQUAL(ct_http_method_lookup(CT_STR("PURGE")), CT_METHOD_PURGE);
    CU_ASSERT_EQUAL(ct_http_method_lookup(CT_STR("CONNECT")), CT_METHOD_CONNECT);
    /* case-sensitive, RFC 9110 §9.1 */
    CU_ASSERT_EQUAL(ct_http_method_lookup(CT_STR("get")), CT_METHOD_OTHER);
    CU_ASSERT_EQUAL(ct_http_method_lookup(CT_STR("GETX")), CT_METHOD_OTHER);
    CU_ASSERT_EQUAL(ct_http_method_lookup(CT_STR("GE")), CT_METHOD_OTHER);
    CU_ASSERT_EQUAL(ct_http_method_lookup(CT_STR("")), CT_METHOD_OTHER);
    CU_ASSERT_STRING_EQUAL(ct_http_method_name(CT_METHOD_DELETE), "DELETE");
    CU_ASSERT_STRING_EQUAL(ct_http_method_name(CT_METHOD_OTHER), "OTHER");
}

static void test_method_flags(void)
{
    unsigned get = ct_http_method_flags(CT_METHOD_GET);
    CU_ASSERT_TRUE(get & CT_METHOD_SAFE);
    CU_ASSERT_TRUE(get & CT_METHOD_IDEMPOTENT);
    CU_ASSERT_TRUE(get & CT_METHOD_CACHEABLE);
    CU_ASSERT_EQUAL(ct_http_method_flags(CT_METHOD_POST), 0);
    CU_ASSERT_EQUAL(ct_http_method_flags(CT_METHOD_PUT), CT_METHOD_IDEMPOTENT);
    CU_ASSERT_EQUAL(ct_http_method_flags(CT_METHOD_OTHER), 0);
}

static void test_hdr_lookup_case(void)
{
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("Content-Length")), CT_HDR_CONTENT_LENGTH);
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("content-length")), CT_HDR_CONTENT_LENGTH);
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("CONTENT-LENGTH")), CT_HDR_CONTENT_LENGTH);
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("cOnNeCtIoN")), CT_HDR_CONNECTION);
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("te")), CT_HDR_TE);
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("etag")), CT_HDR_ETAG);
}

static void test_hdr_lookup_every_row(void)
{
    /* every row is found by its canonical name, upper and lower case */
    for (int id = 1; id < CT_HDR__COUNT; id++) {
        const char *name = ct_hdr_name((enum ct_hdr_id)id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(name);
        char lo[64], up[64];
        size_t n = strlen(name);
        CU_ASSERT_FATAL(n < sizeof(lo));
        for (size_t i = 0; i < n; i++) {
            lo[i] = ct_ascii_lower(name[i]);
            up[i] = (char)((name[i] >= 'a' && name[i] <= 'z') ? name[i] - 32 : name[i]);
        }
        CU_ASSERT_EQUAL((int)ct_hdr_lookup(ct_str_make(name, n)), id);
        CU_ASSERT_EQUAL((int)ct_hdr_lookup(ct_str_make(lo, n)), id);
        CU_ASSERT_EQUAL((int)ct_hdr_lookup(ct_str_make(up, n)), id);
    }
}

static void test_hdr_unknown(void)
{
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("X-Custom")), CT_HDR_UNKNOWN);
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("Content-Lengt")), CT_HDR_UNKNOWN);
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("Content-Length ")), CT_HDR_UNKNOWN);
    CU_ASSERT_EQUAL(ct_hdr_lookup(CT_STR("")), CT_HDR_UNKNOWN);
    CU_ASSERT_PTR_NULL(ct_hdr_name(CT_HDR_UNKNOWN));
    CU_ASSERT_EQUAL(ct_hdr_flags(CT_HDR_UNKNOWN), 0);
}

static void test_hdr_flags(void)
{
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_CONNECTION) & CT_HDRF_HOP);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_TRANSFER_ENCODING) & CT_HDRF_HOP);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_KEEP_ALIVE) & CT_HDRF_HOP);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_PROXY_AUTHORIZATION) & CT_HDRF_HOP);
    CU_ASSERT_FALSE(ct_hdr_flags(CT_HDR_HOST) & CT_HDRF_HOP);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_HOST) & CT_HDRF_SINGLE);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_CACHE_CONTROL) & CT_HDRF_LIST);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_AGE) & CT_HDRF_PER_HIT);
    CU_ASSERT_STRING_EQUAL(ct_hdr_name(CT_HDR_X_FORWARDED_FOR), "X-Forwarded-For");
    /* What a cache answers from its object: these four and nothing else. */
    size_t answers = 0;
    for (unsigned id = 0; id < CT_HDR__COUNT; id++)
        answers += (ct_hdr_flags((enum ct_hdr_id)id) & CT_HDRF_CACHE_ANSWERS) != 0;
    CU_ASSERT_EQUAL(answers, 4);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_IF_NONE_MATCH) & CT_HDRF_CACHE_ANSWERS);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_IF_MODIFIED_SINCE) & CT_HDRF_CACHE_ANSWERS);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_RANGE) & CT_HDRF_CACHE_ANSWERS);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_IF_RANGE) & CT_HDRF_CACHE_ANSWERS);
    CU_ASSERT_FALSE(ct_hdr_flags(CT_HDR_IF_MATCH) & CT_HDRF_CACHE_ANSWERS); /* the origin's to judge */
}

/* A message built by hand, so these tests do not depend on the parser. */
static struct ct_http_field mkf(const char *name, const char *value)
{
    struct ct_http_field f = {ct_str_c(name), ct_str_c(value), ct_hdr_lookup(ct_str_c(name))};
    return f;
}

static void test_msg_find(void)
{
    struct ct_http_field fs[] = {
        mkf("Host", "a"),
        mkf("Accept", "*/*"),
        mkf("cache-control", "no-cache"),
        mkf("X-A", "1"),
        mkf("Cache-Control", "max-age=5"),
        mkf("x-a", "2"),
    };
    struct ct_http_msg m = {.fields = fs, .nfields = CT_ARRAY_LEN(fs)};
    const struct ct_http_field *f = ct_http_msg_find(&m, CT_HDR_CACHE_CONTROL, NULL);
    CU_ASSERT_PTR_EQUAL(f, &fs[2]);
    f = ct_http_msg_find(&m, CT_HDR_CACHE_CONTROL, f);
    CU_ASSERT_PTR_EQUAL(f, &fs[4]);
    CU_ASSERT_PTR_NULL(ct_http_msg_find(&m, CT_HDR_CACHE_CONTROL, f));
    CU_ASSERT_PTR_NULL(ct_http_msg_find(&m, CT_HDR_VARY, NULL));
    f = ct_http_msg_find_name(&m, CT_STR("X-a"), NULL);
    CU_ASSERT_PTR_EQUAL(f, &fs[3]);
    f = ct_http_msg_find_name(&m, CT_STR("X-a"), f);
    CU_ASSERT_PTR_EQUAL(f, &fs[5]);
    CU_ASSERT_PTR_NULL(ct_http_msg_find_name(&m, CT_STR("X-a"), f));
    CU_ASSERT_PTR_NULL(ct_http_msg_find_name(&m, CT_STR("X-b"), NULL));
}

/* The same look-ups with the id set filled in (as a parser does), and after
 * the fields change through ct_http_msg_set_fields(). */
static void test_msg_find_indexed(void)
{
    struct ct_http_field fs[] = {
        mkf("Host", "a"),
        mkf("Cache-Control", "no-cache"),
        mkf("X-A", "1"),
        mkf("cache-control", "max-age=5"),
    };
    struct ct_http_msg m = {.kind = CT_HTTP_REQUEST};
    ct_http_msg_set_fields(&m, fs, CT_ARRAY_LEN(fs));
    CU_ASSERT_EQUAL(m.nfields, CT_ARRAY_LEN(fs));
    const struct ct_http_field *f = ct_http_msg_find(&m, CT_HDR_CACHE_CONTROL, NULL);
    CU_ASSERT_PTR_EQUAL(f, &fs[1]);
    CU_ASSERT_PTR_EQUAL(ct_http_msg_find(&m, CT_HDR_CACHE_CONTROL, f), &fs[3]);
    CU_ASSERT_PTR_EQUAL(ct_http_msg_find(&m, CT_HDR_UNKNOWN, NULL), &fs[2]);
    CU_ASSERT_PTR_NULL(ct_http_msg_find(&m, CT_HDR_IF_NONE_MATCH, NULL));
    CU_ASSERT_FALSE(ct_http_msg_has_token(&m, CT_HDR_CONNECTION, CT_STR("close")));

    /* a field added (a validator for revalidation): found once set again */
    struct ct_http_field more[] = {fs[0], fs[1], mkf("If-None-Match", "\"x\"")};
    ct_http_msg_set_fields(&m, more, CT_ARRAY_LEN(more));
    CU_ASSERT_PTR_EQUAL(ct_http_msg_find(&m, CT_HDR_IF_NONE_MATCH, NULL), &more[2]);
    CU_ASSERT_PTR_NULL(ct_http_msg_find(&m, CT_HDR_UNKNOWN, NULL));

    /* and a parsed head carries the set */
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    static const char req[] = "GET / HTTP/1.1\r\nHost: h\r\nVary: x\r\nX-Y: 1\r\n\r\n";
    size_t used;
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, req, sizeof(req) - 1, &used, NULL), CT_HTTP_EV_HEAD);
    const struct ct_http_msg *pm = ct_http_parser_msg(p);
    CU_ASSERT_EQUAL(pm->ids_seen, 1ull | 1ull << CT_HDR_HOST | 1ull << CT_HDR_VARY);
    CU_ASSERT_PTR_EQUAL(ct_http_msg_find(pm, CT_HDR_VARY, NULL), &pm->fields[1]);
    CU_ASSERT_PTR_NULL(ct_http_msg_find(pm, CT_HDR_CONNECTION, NULL));
    ct_http_parser_free(&p);
}

static void test_msg_has_token(void)
{
    struct ct_http_field fs[] = {
        mkf("Connection", "keep-alive"),
        mkf("Cache-Control", "no-store, max-age=0"),
        mkf("connection", " Upgrade , X-Trace"),
        mkf("Vary", "Accept-Encoding"),
    };
    struct ct_http_msg m = {.fields = fs, .nfields = CT_ARRAY_LEN(fs)};
    CU_ASSERT_TRUE(ct_http_msg_has_token(&m, CT_HDR_CONNECTION, CT_STR("upgrade")));
    CU_ASSERT_TRUE(ct_http_msg_has_token(&m, CT_HDR_CONNECTION, CT_STR("KEEP-ALIVE")));
    CU_ASSERT_FALSE(ct_http_msg_has_token(&m, CT_HDR_CONNECTION, CT_STR("close")));
    CU_ASSERT_TRUE(ct_http_msg_has_token(&m, CT_HDR_CACHE_CONTROL, CT_STR("max-age")));
    CU_ASSERT_FALSE(ct_http_msg_has_token(&m, CT_HDR_CACHE_CONTROL, CT_STR("no")));
    CU_ASSERT_FALSE(ct_http_msg_has_token(&m, CT_HDR_PRAGMA, CT_STR("no-cache")));
}

static void test_field_is_hop(void)
{
    struct ct_http_field fs[] = {
        mkf("Host", "a"),         mkf("Connection", "close, X-Trace"),
        mkf("X-Trace", "1"),      mkf("Keep-Alive", "timeout=5"),
        mkf("x-trace", "2"),      mkf("X-Other", "3"),
        mkf("Upgrade", "h2c"),    mkf("TE", "trailers"),
        mkf("Content-Type", "t"), mkf("Connection", "content-type"),
    };
    struct ct_http_msg m = {.fields = fs, .nfields = CT_ARRAY_LEN(fs)};
    CU_ASSERT_FALSE(ct_http_msg_field_is_hop(&m, &fs[0]));
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(&m, &fs[1]));
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(&m, &fs[2])); /* named in Connection */
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(&m, &fs[3]));
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(&m, &fs[4])); /* case-insensitive */
    CU_ASSERT_FALSE(ct_http_msg_field_is_hop(&m, &fs[5]));
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(&m, &fs[6]));
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(&m, &fs[7]));
    /* a known end-to-end field becomes hop-by-hop when a later Connection line names it */
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(&m, &fs[8]));

    struct ct_http_msg plain = {.fields = fs, .nfields = 1};
    CU_ASSERT_FALSE(ct_http_msg_field_is_hop(&plain, &fs[0]));
}

/* "Connection: Content-Length" must not unframe a body (the origin would
 * read it as the next request), nor "Connection: Host" unaddress a request. */
static void test_field_is_proxy(void)
{
    static const char *const yes[] = {"Proxy", "proxy", "Proxy-Connection", "PROXY-AUTHORIZATION",
                                      "proxy-x"};
    static const char *const no[] = {"Proxyx", "Prox", "X-Proxy", "P", "", "Pragma"};
    for (size_t i = 0; i < CT_ARRAY_LEN(yes); i++) {
        struct ct_http_field f = mkf(yes[i], "v");
        CU_ASSERT_TRUE(ct_http_field_is_proxy(&f));
    }
    for (size_t i = 0; i < CT_ARRAY_LEN(no); i++) {
        struct ct_http_field f = mkf(no[i], "v");
        CU_ASSERT_FALSE(ct_http_field_is_proxy(&f));
    }
}

static void test_conn_cannot_drop_pinned(void)
{
    struct ct_http_field fs[] = {
        mkf("Host", "a"),
        mkf("Connection", "keep-alive, Content-Length, host, Transfer-Encoding, X-A"),
        mkf("Content-Length", "5"),
        mkf("X-A", "1"),
        mkf("Transfer-Encoding", "chunked"),
    };
    struct ct_http_msg m = {.fields = fs, .nfields = CT_ARRAY_LEN(fs)};
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_CONTENT_LENGTH) & CT_HDRF_PINNED);
    CU_ASSERT_TRUE(ct_hdr_flags(CT_HDR_HOST) & CT_HDRF_PINNED);
    CU_ASSERT_FALSE(ct_http_msg_field_is_hop(&m, &fs[0])); /* Host */
    CU_ASSERT_FALSE(ct_http_msg_field_is_hop(&m, &fs[2])); /* Content-Length */
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(&m, &fs[3]));  /* any other named field */
    /* always hop-by-hop: the proxy writes its own Transfer-Encoding */
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(&m, &fs[4]));
}

void ct_test_register(void)
{
    CT_SUITE("http_hdr", {"method lookup is case-sensitive", test_method_lookup},
             {"look-ups with the id set filled in", test_msg_find_indexed},
             {"Connection cannot drop Content-Length or Host", test_conn_cannot_drop_pinned},
             {"method flags", test_method_flags},
             {"header lookup is case-insensitive", test_hdr_lookup_case},
             {"every table row is found", test_hdr_lookup_every_row},
             {"unknown names", test_hdr_unknown}, {"header flags", test_hdr_flags},
             {"find by id and by name, iterating", test_msg_find},
             {"list tokens across lines", test_msg_has_token},
             {"hop-by-hop incl. Connection tokens", test_field_is_hop},
             {"Proxy-* fields (httpoxy)", test_field_is_proxy});
}
