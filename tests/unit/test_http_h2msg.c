/* tests/unit/test_http_h2msg.c: an HTTP/2 field section becomes a request
 * (RFC 9113 §8.2, §8.3, §8.5), and every rule of those sections refuses. */
#include <stdio.h>
#include <string.h>

#include "http/http_h2msg.h"
#include "tests/unit/ct_test.h"

/* A field list written as "name", "value", ..., NULL. The value may hold
 * NUL when written with an explicit length: use nv_len below for that. */
static int build(struct ct_http_h2msg *b, const char *const *nv, bool end,
                 const struct ct_http_msg **m)
{
    for (size_t i = 0; nv[i]; i += 2) {
        int rc = ct_http_h2msg_add(b, ct_str_c(nv[i]), ct_str_c(nv[i + 1]));
        if (rc != CT_OK)
            return rc;
    }
    return ct_http_h2msg_finish(b, end, m);
}

/* Build NV into a fresh builder; the status it fails with (0: accepted). */
static unsigned refused(const char *const *nv, bool end)
{
    struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
    const struct ct_http_msg *m = NULL;
    int rc = build(b, nv, end, &m);
    unsigned st = rc == CT_OK ? 0 : ct_http_h2msg_error_status(b);
    CU_ASSERT_TRUE(rc == CT_OK ? m != NULL : m == NULL && st != 0);
    ct_http_h2msg_free(&b);
    CU_ASSERT_PTR_NULL(b);
    return st;
}

#define GET_PSEUDO ":method", "GET", ":scheme", "https", ":authority", "a.example", ":path", "/x?y"

static void test_get(void)
{
    static const char *const nv[] = {GET_PSEUDO, "accept", "*/*", "user-agent", "t", NULL};
    struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
    const struct ct_http_msg *m;
    CU_ASSERT_EQUAL_FATAL(build(b, nv, true, &m), CT_OK);
    CU_ASSERT_EQUAL(m->kind, CT_HTTP_REQUEST);
    CU_ASSERT_EQUAL(m->method, CT_METHOD_GET);
    CU_ASSERT_TRUE(ct_str_eq(m->method_name, CT_STR("GET")));
    CU_ASSERT_TRUE(ct_str_eq(m->target, CT_STR("/x?y")));
    CU_ASSERT_EQUAL(m->version, 20);
    CU_ASSERT_EQUAL(m->framing, CT_FRAME_NONE);
    const struct ct_http_field *h = ct_http_msg_find(m, CT_HDR_HOST, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT_TRUE(ct_str_eq(h->value, CT_STR("a.example")));
    CU_ASSERT_PTR_NULL(ct_http_msg_find(m, CT_HDR_HOST, h));
    CU_ASSERT_PTR_NOT_NULL(ct_http_msg_find(m, CT_HDR_USER_AGENT, NULL));
    CU_ASSERT_EQUAL(m->nfields, 3);
    CU_ASSERT_TRUE(ct_str_eq(ct_http_h2msg_scheme(b), CT_STR("https")));
    ct_http_h2msg_free(&b);
}

static void test_body_framing(void)
{
    static const char *const cl[] = {":method",        "POST", ":scheme", "https",
                                     ":authority",     "a",    ":path",   "/p",
                                     "content-length", "5",    NULL};
    static const char *const nocl[] = {":method", "POST",  ":scheme", "https", ":authority",
                                       "a",       ":path", "/p",      NULL};
    struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
    const struct ct_http_msg *m;
    CU_ASSERT_EQUAL_FATAL(build(b, cl, false, &m), CT_OK);
    CU_ASSERT_EQUAL(m->framing, CT_FRAME_LENGTH);
    CU_ASSERT_EQUAL(m->content_length, 5);
    ct_http_h2msg_free(&b);
    b = ct_http_h2msg_new(NULL);
    CU_ASSERT_EQUAL_FATAL(build(b, nocl, false, &m), CT_OK);
    CU_ASSERT_EQUAL(m->framing, CT_FRAME_CHUNKED); /* ends with the stream */
    ct_http_h2msg_free(&b);
    /* RFC 9113 §8.1.1: content-length 5 and no DATA to come */
    CU_ASSERT_EQUAL(refused(cl, true), 400);
}

static void test_host_and_authority(void)
{
    static const char *const same[] = {GET_PSEUDO, "host", "A.example", NULL};
    static const char *const differ[] = {GET_PSEUDO, "host", "b.example", NULL};
    static const char *const host_only[] = {":method", "GET",  ":scheme",   "http", ":path",
                                            "/",       "host", "h.example", NULL};
    static const char *const neither[] = {":method", "GET", ":scheme", "http", ":path", "/", NULL};
    static const char *const userinfo[] = {":method", "GET",        ":scheme", "http", ":path",
                                           "/",       ":authority", "u@h",     NULL};
    static const char *const two_hosts[] = {":method", "GET", ":scheme", "http", ":path", "/",
                                            "host",    "h",   "host",    "h",    NULL};
    CU_ASSERT_EQUAL(refused(same, true), 0);
    CU_ASSERT_EQUAL(refused(differ, true), 400);
    CU_ASSERT_EQUAL(refused(host_only, true), 0);
    CU_ASSERT_EQUAL(refused(neither, true), 400);
    CU_ASSERT_EQUAL(refused(userinfo, true), 400);
    CU_ASSERT_EQUAL(refused(two_hosts, true), 400);
}

static void test_cookies_joined(void)
{
    static const char *const nv[] = {GET_PSEUDO, "cookie", "a=1",    "accept", "x",
                                     "cookie",   "b=2",    "cookie", "c=3",    NULL};
    struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
    const struct ct_http_msg *m;
    CU_ASSERT_EQUAL_FATAL(build(b, nv, true, &m), CT_OK);
    const struct ct_http_field *c = ct_http_msg_find(m, CT_HDR_COOKIE, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_TRUE(ct_str_eq(c->value, CT_STR("a=1; b=2; c=3")));
    CU_ASSERT_PTR_NULL(ct_http_msg_find(m, CT_HDR_COOKIE, c));
    CU_ASSERT_EQUAL(m->nfields, 3); /* cookie, accept, host */
    ct_http_h2msg_free(&b);
}

/* A head past the builder's own storage (24 fields, 1 KiB of bytes) moves
 * to the heap whole: N fields of long values, cookies joined at the end
 * (the buffer grows once more), every byte where it belongs. */
static void test_big_head(void)
{
    static const size_t counts[] = {1, 20, 23, 24, 25, 60};
    for (size_t k = 0; k < CT_ARRAY_LEN(counts); k++) {
        struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
        static const char *const pseudo[] = {GET_PSEUDO, NULL};
        for (size_t i = 0; pseudo[i]; i += 2)
            CU_ASSERT_EQUAL(ct_http_h2msg_add(b, ct_str_c(pseudo[i]), ct_str_c(pseudo[i + 1])),
                            CT_OK);
        char names[60][32], values[60][80];
        for (size_t i = 0; i < counts[k]; i++) {
            snprintf(names[i], sizeof(names[i]), "x-f%zu", i);
            memset(values[i], 'a' + (int)(i % 26), sizeof(values[i]) - 1);
            values[i][sizeof(values[i]) - 1] = 0;
            CU_ASSERT_EQUAL(ct_http_h2msg_add(b, ct_str_c(names[i]), ct_str_c(values[i])), CT_OK);
        }
        CU_ASSERT_EQUAL(ct_http_h2msg_add(b, CT_STR("cookie"), CT_STR("a=1")), CT_OK);
        CU_ASSERT_EQUAL(ct_http_h2msg_add(b, CT_STR("cookie"), CT_STR("b=2")), CT_OK);
        const struct ct_http_msg *m = NULL;
        CU_ASSERT_EQUAL_FATAL(ct_http_h2msg_finish(b, true, &m), CT_OK);
        CU_ASSERT_EQUAL(m->nfields, counts[k] + 2); /* + cookie, host */
        CU_ASSERT_TRUE(ct_str_eq(m->target, CT_STR("/x?y")));
        for (size_t i = 0; i < counts[k]; i++) {
            const struct ct_http_field *f = ct_http_msg_find_name(m, ct_str_c(names[i]), NULL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(f);
            CU_ASSERT_TRUE(ct_str_eq(f->value, ct_str_c(values[i])));
        }
        const struct ct_http_field *c = ct_http_msg_find(m, CT_HDR_COOKIE, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_TRUE(ct_str_eq(c->value, CT_STR("a=1; b=2")));
        const struct ct_http_field *h = ct_http_msg_find(m, CT_HDR_HOST, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(h);
        CU_ASSERT_TRUE(ct_str_eq(h->value, CT_STR("a.example")));
        ct_http_h2msg_free(&b);
    }
}

/* A builder reset for the next stream is as new: storage that outgrew it
 * is gone, an error does not stick, the limits are the new ones. */
static void test_reset(void)
{
    struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
    static const char *const pseudo[] = {GET_PSEUDO, NULL};
    char names[60][32], values[60][80];
    for (int round = 0; round < 3; round++) {
        if (round)
            ct_http_h2msg_reset(b, round == 2 ? &(struct ct_http_h2msg_limits){64 * 1024, 2}
                                              : NULL);
        for (size_t i = 0; pseudo[i]; i += 2)
            CU_ASSERT_EQUAL(ct_http_h2msg_add(b, ct_str_c(pseudo[i]), ct_str_c(pseudo[i + 1])),
                            CT_OK);
        size_t n = round == 0 ? 60 : 2; /* round 0 outgrows the builder's own storage */
        for (size_t i = 0; i < n; i++) {
            snprintf(names[i], sizeof(names[i]), "x-r%d-%zu", round, i);
            memset(values[i], 'a' + (int)(i % 26), sizeof(values[i]) - 1);
            values[i][sizeof(values[i]) - 1] = 0;
            CU_ASSERT_EQUAL(ct_http_h2msg_add(b, ct_str_c(names[i]), ct_str_c(values[i])), CT_OK);
        }
        if (round == 1) /* malformed: the error sticks until the reset */
            CU_ASSERT_EQUAL(ct_http_h2msg_add(b, CT_STR("X-Upper"), CT_STR("1")), CT_EPROTO);
        const struct ct_http_msg *m = NULL;
        int rc = ct_http_h2msg_finish(b, true, &m);
        if (round == 1) {
            CU_ASSERT_EQUAL(rc, CT_EPROTO);
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(rc, CT_OK);
        CU_ASSERT_EQUAL(m->nfields, n + 1); /* + host */
        for (size_t i = 0; i < n; i++) {
            const struct ct_http_field *f = ct_http_msg_find_name(m, ct_str_c(names[i]), NULL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(f);
            CU_ASSERT_TRUE(ct_str_eq(f->value, ct_str_c(values[i])));
        }
        if (round) /* nothing of the first request is left */
            CU_ASSERT_PTR_NULL(ct_http_msg_find_name(m, CT_STR("x-r0-0"), NULL));
    }
    /* the limit given at the last reset holds: 3 fields against 2 */
    ct_http_h2msg_reset(b, &(struct ct_http_h2msg_limits){64 * 1024, 2});
    for (size_t i = 0; pseudo[i]; i += 2)
        ct_http_h2msg_add(b, ct_str_c(pseudo[i]), ct_str_c(pseudo[i + 1]));
    ct_http_h2msg_add(b, CT_STR("a"), CT_STR("1"));
    ct_http_h2msg_add(b, CT_STR("b"), CT_STR("1"));
    int rc = ct_http_h2msg_add(b, CT_STR("c"), CT_STR("1"));
    const struct ct_http_msg *m = NULL;
    if (rc == CT_OK)
        rc = ct_http_h2msg_finish(b, true, &m);
    CU_ASSERT_EQUAL(rc, CT_ELIMIT);
    ct_http_h2msg_free(&b);
}

/* Each list breaks one rule of RFC 9113 §8.2 or §8.3. */
static void test_malformed(void)
{
    static const char *const cases[][14] = {
        {GET_PSEUDO, "Accept", "x", NULL},         /* uppercase name */
        {GET_PSEUDO, "connection", "close", NULL}, /* connection-specific */
        {GET_PSEUDO, "keep-alive", "1", NULL},
        {GET_PSEUDO, "proxy-connection", "x", NULL},
        {GET_PSEUDO, "transfer-encoding", "chunked", NULL},
        {GET_PSEUDO, "upgrade", "h2c", NULL},
        {GET_PSEUDO, "te", "gzip", NULL},                            /* te other than trailers */
        {GET_PSEUDO, ":path", "/again", NULL},                       /* duplicate pseudo */
        {":scheme", "https", ":authority", "a", ":path", "/", NULL}, /* no :method */
        {":method", "GET", ":authority", "a", ":path", "/", NULL},   /* no :scheme */
        {":method", "GET", ":scheme", "https", ":authority", "a", NULL}, /* no :path */
        {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "", NULL},
        {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "x", NULL},
        {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "/a b", NULL},
        {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "/a#f", NULL},
        {":method", "GET", ":scheme", "https", ":authority", "a", ":path", "*", NULL},
        {":method", "GET", "accept", "x", ":scheme", "https", ":authority", "a", ":path", "/",
         NULL},                                       /* pseudo after regular */
        {GET_PSEUDO, ":status", "200", NULL},         /* response pseudo */
        {GET_PSEUDO, ":protocol", "websocket", NULL}, /* unknown pseudo */
        {GET_PSEUDO, "x", "a\rb", NULL},              /* CR in a value */
        {GET_PSEUDO, "x", "a\nb", NULL},
        {GET_PSEUDO, "x", " lead", NULL}, /* leading / trailing whitespace */
        {GET_PSEUDO, "x", "trail\t", NULL},
        {GET_PSEUDO, "x", "a\x01", NULL}, /* other CTL */
        {GET_PSEUDO, "a:b", "x", NULL},   /* colon in a name */
        {GET_PSEUDO, "a b", "x", NULL},
        {GET_PSEUDO, "content-length", "1", "content-length", "1", NULL},
        {GET_PSEUDO, "content-length", "-1", NULL},
        {":method", "G T", ":scheme", "https", ":authority", "a", ":path", "/", NULL},
        {":method", "GET", ":scheme", "1ht", ":authority", "a", ":path", "/", NULL},
        {":method", "CONNECT", ":authority", "a:443", ":path", "/", NULL}, /* CONNECT + :path */
        {":method", "CONNECT", ":authority", "a:443", ":scheme", "https", NULL},
        {":method", "CONNECT", NULL}, /* CONNECT without :authority */
    };
    for (size_t i = 0; i < CT_ARRAY_LEN(cases); i++) {
        unsigned st = refused(cases[i], false);
        if (st != 400)
            fprintf(stderr, "case %zu accepted or wrong status %u\n", i, st);
        CU_ASSERT_EQUAL(st, 400);
    }
}

static void test_accepted_edges(void)
{
    static const char *const options_star[] = {
        ":method", "OPTIONS", ":scheme", "https", ":authority", "a", ":path", "*", NULL};
    static const char *const connect[] = {":method", "CONNECT", ":authority", "a.example:443",
                                          NULL};
    static const char *const te_trailers[] = {GET_PSEUDO, "te", "Trailers", NULL};
    static const char *const empty_value[] = {GET_PSEUDO, "x-empty", "", "x-mid", "a b", NULL};
    CU_ASSERT_EQUAL(refused(options_star, true), 0);
    CU_ASSERT_EQUAL(refused(te_trailers, true), 0);
    CU_ASSERT_EQUAL(refused(empty_value, true), 0);
    struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
    const struct ct_http_msg *m;
    CU_ASSERT_EQUAL_FATAL(build(b, connect, false, &m), CT_OK);
    CU_ASSERT_EQUAL(m->method, CT_METHOD_CONNECT);
    CU_ASSERT_TRUE(ct_str_eq(m->target, CT_STR("a.example:443")));
    ct_http_h2msg_free(&b);
}

static void test_nul_in_value(void)
{
    struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
    static const char *const nv[] = {GET_PSEUDO, NULL};
    for (size_t i = 0; nv[i]; i += 2)
        CU_ASSERT_EQUAL(ct_http_h2msg_add(b, ct_str_c(nv[i]), ct_str_c(nv[i + 1])), CT_OK);
    CU_ASSERT_EQUAL(ct_http_h2msg_add(b, CT_STR("x"), ct_str_make("a\0b", 3)), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_http_h2msg_error_status(b), 400);
    ct_http_h2msg_free(&b);
}

static void test_limits(void)
{
    /* A decompression bomb: many copies of one big field. Refused once the
     * list passes the limit, and every later add is refused without work. */
    struct ct_http_h2msg_limits lim = {.max_list_size = 4096, .max_fields = 100};
    struct ct_http_h2msg *b = ct_http_h2msg_new(&lim);
    char big[1000];
    memset(big, 'v', sizeof big);
    int rc = CT_OK;
    unsigned added = 0;
    for (; added < 1000 && rc == CT_OK; added++)
        rc = ct_http_h2msg_add(b, CT_STR("x-big"), ct_str_make(big, sizeof big));
    CU_ASSERT_EQUAL(rc, CT_ELIMIT);
    CU_ASSERT_EQUAL(added, 4); /* 3 * 1037 fit in 4096, the 4th does not */
    CU_ASSERT_EQUAL(ct_http_h2msg_error_status(b), 431);
    CU_ASSERT_EQUAL(ct_http_h2msg_add(b, CT_STR("a"), CT_STR("b")), CT_ELIMIT);
    const struct ct_http_msg *m;
    CU_ASSERT_EQUAL(ct_http_h2msg_finish(b, true, &m), CT_ELIMIT);
    ct_http_h2msg_free(&b);

    lim = (struct ct_http_h2msg_limits){.max_list_size = 1 << 20, .max_fields = 3};
    b = ct_http_h2msg_new(&lim);
    static const char *const nv[] = {GET_PSEUDO, "a", "1", "b", "2", "c", "3", "d", "4", NULL};
    CU_ASSERT_EQUAL(build(b, nv, true, &m), CT_ELIMIT);
    ct_http_h2msg_free(&b);
}

static void test_expect(void)
{
    static const char *const cont[] = {":method", "PUT",   ":scheme", "https",  ":authority",
                                       "a",       ":path", "/",       "expect", "100-continue",
                                       NULL};
    static const char *const other[] = {GET_PSEUDO, "expect", "something", NULL};
    struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
    const struct ct_http_msg *m;
    CU_ASSERT_EQUAL_FATAL(build(b, cont, false, &m), CT_OK);
    CU_ASSERT_TRUE(m->expect_continue);
    ct_http_h2msg_free(&b);
    CU_ASSERT_EQUAL(refused(other, true), 417);
}

static void test_trailers(void)
{
    static const char *const nv[] = {":method", "POST",  ":scheme", "https", ":authority",
                                     "a",       ":path", "/",       NULL};
    struct ct_http_h2msg *b = ct_http_h2msg_new(NULL);
    const struct ct_http_msg *m;
    CU_ASSERT_EQUAL_FATAL(build(b, nv, false, &m), CT_OK);
    size_t n = m->nfields;
    ct_http_h2msg_begin_trailers(b);
    CU_ASSERT_EQUAL(ct_http_h2msg_add(b, CT_STR("x-checksum"), CT_STR("abc")), CT_OK);
    CU_ASSERT_EQUAL(m->nfields, n); /* dropped, the head unchanged */
    CU_ASSERT_EQUAL(ct_http_h2msg_add(b, CT_STR(":path"), CT_STR("/")), CT_EPROTO);
    ct_http_h2msg_free(&b);
}

void ct_test_register(void)
{
    CT_SUITE("http_h2msg", {"a GET becomes a request with Host from :authority", test_get},
             {"content-length and END_STREAM decide the framing", test_body_framing},
             {"host and :authority agree, or the request is malformed", test_host_and_authority},
             {"cookie fields are joined with '; '", test_cookies_joined},
             {"a head past the builder's own storage moves whole", test_big_head},
        {"a reset builder is as new", test_reset},
             {"each RFC 9113 field and pseudo-header rule refuses", test_malformed},
             {"OPTIONS *, CONNECT, te: trailers and empty values pass", test_accepted_edges},
             {"NUL in a value refuses", test_nul_in_value},
             {"header list size and field count limits answer 431", test_limits},
             {"expect: 100-continue is kept, others answer 417", test_expect},
             {"trailers are validated and dropped", test_trailers});
}
