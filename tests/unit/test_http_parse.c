/*
 * tests/unit/test_http_parse.c: the request and response parsers.
 *
 * Every input goes through a driver that feeds it in pieces the way a
 * connection would (unconsumed bytes stay in front of the next read) and
 * writes a transcript: heads with their fields, body bytes, ENDs, the error
 * status. The "any split" property compares the transcript of the whole
 * input with the transcripts of every two-way split and of byte-by-byte
 * feeding; the rule tests check the error status of each (whole and byte by
 * byte) and its reason.
 */
#include "http/http.h"
#include "http/http_int.h" /* CT_HTTP_LEX_MARKS */
#include "tests/unit/ct_test.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

struct tr {
    char s[16384];
    size_t n;
    char body[8192];
    size_t blen;
    unsigned status;
    char reason[128];
};

static void tr_put(struct tr *t, const char *p, size_t len)
{
    len = CT_MIN(len, sizeof(t->s) - 1 - t->n);
    memcpy(t->s + t->n, p, len);
    t->n += len;
    t->s[t->n] = 0;
}

static void tr_printf(struct tr *t, const char *fmt, ...) CT_PRINTF(2, 3);
#include <stdarg.h>
static void tr_printf(struct tr *t, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    tr_put(t, buf, (size_t)CT_MIN(n, (int)sizeof(buf) - 1));
}

static void tr_flush_body(struct tr *t)
{
    if (t->blen) {
        tr_printf(t, "BODY(%zu:", t->blen);
        tr_put(t, t->body, t->blen);
        tr_put(t, ")", 1);
        t->blen = 0;
    }
}

static void tr_head(struct tr *t, const struct ct_http_msg *m)
{
    if (m->kind == CT_HTTP_REQUEST)
        tr_printf(t, "HEAD(%.*s %.*s", (int)m->method_name.len, m->method_name.p,
                  (int)m->target.len, m->target.p);
    else
        tr_printf(t, "HEAD(%u %.*s", m->status, (int)m->reason.len, m->reason.p);
    tr_printf(t, " v%u fr%d cl%llu ka%d ec%d up%d hb%zu", m->version, (int)m->framing,
              (unsigned long long)m->content_length, m->keep_alive, m->expect_continue, m->upgrade,
              m->head_bytes);
    for (size_t i = 0; i < m->nfields; i++)
        tr_printf(t, " [%.*s=%.*s%s]", (int)m->fields[i].name.len, m->fields[i].name.p,
                  (int)m->fields[i].value.len, m->fields[i].value.p,
                  m->fields[i].id != CT_HDR_UNKNOWN ? "*" : "");
    tr_put(t, ") ", 2);
}

struct opts {
    enum ct_http_kind kind;
    const struct ct_http_limits *lim;
    enum ct_http_method req_method; /* responses */
    bool eof;                       /* signal EOF once all input is in */
};

/* Feed IN (LEN bytes) delivering it up to each of CUTS[0..NCUTS) in turn. */
static void drive(const struct opts *o, const char *in, size_t len, const size_t *cuts,
                  size_t ncuts, struct tr *t)
{
    memset(t, 0, sizeof(*t));
    struct ct_http_parser *p = ct_http_parser_new(o->kind, o->lim);
    if (o->kind == CT_HTTP_RESPONSE)
        ct_http_parser_set_request_method(p, o->req_method);
    size_t avail = ncuts ? cuts[0] : len, pos = 0, ci = 1;
    for (int guard = 0; guard < 1000000; guard++) {
        size_t used = 99999;
        struct ct_str chunk = CT_STR_NULL;
        enum ct_http_ev ev = ct_http_parser_feed(p, in + pos, avail - pos, &used, &chunk);
        CU_ASSERT_FATAL(used <= avail - pos);
        pos += used;
        if (ev == CT_HTTP_EV_BODY) {
            CU_ASSERT_FATAL(chunk.p >= in && chunk.p + chunk.len <= in + avail);
            CU_ASSERT_FATAL(t->blen + chunk.len <= sizeof(t->body));
            memcpy(t->body + t->blen, chunk.p, chunk.len);
            t->blen += chunk.len;
            continue;
        }
        if (ev != CT_HTTP_EV_MORE)
            tr_flush_body(t);
        if (ev == CT_HTTP_EV_HEAD) {
            tr_head(t, ct_http_parser_msg(p));
        } else if (ev == CT_HTTP_EV_END) {
            tr_put(t, "END ", 4);
            if (ct_http_parser_is_tunnel(p)) {
                tr_printf(t, "TUNNEL(%zu)", len - pos);
                break;
            }
        } else if (ev == CT_HTTP_EV_ERROR) {
            t->status = ct_http_parser_error_status(p);
            snprintf(t->reason, sizeof(t->reason), "%s", ct_http_parser_error_reason(p));
            tr_printf(t, "ERR(%u %s)", t->status, t->reason);
            break;
        } else { /* MORE: everything given was consumed */
            CU_ASSERT_EQUAL_FATAL(pos, avail);
            if (avail < len) {
                avail = ci < ncuts ? cuts[ci++] : len;
                continue;
            }
            if (o->eof) {
                ev = ct_http_parser_eof(p);
                tr_flush_body(t);
                if (ev == CT_HTTP_EV_END) {
                    tr_put(t, "EOF-END", 7);
                } else if (ev == CT_HTTP_EV_ERROR) {
                    t->status = ct_http_parser_error_status(p);
                    snprintf(t->reason, sizeof(t->reason), "%s", ct_http_parser_error_reason(p));
                    tr_printf(t, "EOF-ERR(%u %s)", t->status, t->reason);
                } else {
                    tr_put(t, "EOF", 3);
                }
            }
            break;
        }
    }
    ct_http_parser_free(&p);
    CU_ASSERT_PTR_NULL(p);
}

static void run_whole(const struct opts *o, const char *in, size_t len, struct tr *t)
{
    drive(o, in, len, NULL, 0, t);
}

/* Whole, every two-way split, byte by byte (and every three-way split for
 * short inputs) must all give the same transcript. */
static void check_any_split(const struct opts *o, const char *in, size_t len)
{
    static struct tr whole, t;
    run_whole(o, in, len, &whole);
    for (size_t i = 1; i < len; i++) {
        size_t cut[1] = {i};
        drive(o, in, len, cut, 1, &t);
        if (strcmp(whole.s, t.s) != 0) {
            fprintf(stderr, "\nsplit at %zu differs:\n whole: %s\n split: %s\n", i, whole.s, t.s);
            CU_FAIL("two-way split changed the transcript");
            return;
        }
    }
    size_t *cuts = calloc(len + 1, sizeof(*cuts));
    for (size_t i = 0; i + 1 < len; i++)
        cuts[i] = i + 1;
    drive(o, in, len, cuts, len ? len - 1 : 0, &t);
    free(cuts);
    if (strcmp(whole.s, t.s) != 0) {
        fprintf(stderr, "\nbyte by byte differs:\n whole: %s\n bytes: %s\n", whole.s, t.s);
        CU_FAIL("byte-by-byte feeding changed the transcript");
        return;
    }
    if (len > 160)
        return;
    for (size_t i = 1; i < len; i++)
        for (size_t j = i + 1; j < len; j++) {
            size_t cut[2] = {i, j};
            drive(o, in, len, cut, 2, &t);
            if (strcmp(whole.s, t.s) != 0) {
                fprintf(stderr, "\nsplit at %zu,%zu differs:\n whole: %s\n split: %s\n", i, j,
                        whole.s, t.s);
                CU_FAIL("three-way split changed the transcript");
                return;
            }
        }
}

static const struct opts REQ = {CT_HTTP_REQUEST, NULL, CT_METHOD_GET, false};
static const struct opts RESP = {CT_HTTP_RESPONSE, NULL, CT_METHOD_GET, true};

#define S(lit) lit, sizeof(lit) - 1

/* The error status (whole and byte by byte) and a reason containing WHY. */
static void expect_err_o(const struct opts *o, const char *in, size_t len, unsigned status,
                         const char *why)
{
    static struct tr t;
    run_whole(o, in, len, &t);
    if (t.status != status || (why && !strstr(t.reason, why)))
        fprintf(stderr, "\nexpected %u (%s), got: %s\n  input: %.*s\n", status, why ? why : "", t.s,
                (int)len, in);
    CU_ASSERT_EQUAL(t.status, status);
    if (why)
        CU_ASSERT_PTR_NOT_NULL(strstr(t.reason, why));
    check_any_split(o, in, len);
}

#define EXPECT_REQ_ERR(lit, status, why) expect_err_o(&REQ, S(lit), status, why)
#define EXPECT_RESP_ERR(lit, status, why) expect_err_o(&RESP, S(lit), status, why)

static void expect_tr_o(const struct opts *o, const char *in, size_t len, const char *want)
{
    static struct tr t;
    run_whole(o, in, len, &t);
    if (strcmp(t.s, want) != 0)
        fprintf(stderr, "\nwant: %s\n got: %s\n", want, t.s);
    CU_ASSERT_STRING_EQUAL(t.s, want);
    check_any_split(o, in, len);
}

#define EXPECT_REQ(lit, want) expect_tr_o(&REQ, S(lit), want)
#define EXPECT_RESP(lit, want) expect_tr_o(&RESP, S(lit), want)

#define CHUNKED_POST_HEAD "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"

/* ---- valid requests ------------------------------------------------------ */

static void test_simple_get(void)
{
    EXPECT_REQ("GET /a?b=c HTTP/1.1\r\nHost: example.com\r\nUser-Agent:  t \r\n\r\n",
               "HEAD(GET /a?b=c v11 fr0 cl0 ka1 ec0 up0 hb59 [Host=example.com*]"
               " [User-Agent=t*]) END ");
}

static void test_head_storage_and_used(void)
{
    /* views stay valid after the input buffer is gone; HEAD's used is the head */
    char *in = strdup("GET /x HTTP/1.1\r\nHost: h\r\nX-Long: abcdefghij\r\n\r\nrest");
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used;
    struct ct_str chunk;
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in, strlen(in), &used, &chunk), CT_HTTP_EV_HEAD);
    CU_ASSERT_EQUAL(used, strlen(in) - 4);
    CU_ASSERT_FALSE(ct_http_parser_in_message(p) && false);
    memset(in, 'Z', strlen(in));
    const struct ct_http_msg *m = ct_http_parser_msg(p);
    CU_ASSERT_TRUE(ct_str_eq(m->target, CT_STR("/x")));
    CU_ASSERT_EQUAL(m->nfields, 2);
    CU_ASSERT_TRUE(ct_str_eq(m->fields[1].value, CT_STR("abcdefghij")));
    CU_ASSERT_EQUAL(m->head_bytes, used);
    /* a message without a body ends without consuming anything more */
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in, 0, &used, &chunk), CT_HTTP_EV_END);
    CU_ASSERT_EQUAL(used, 0);
    CU_ASSERT_FALSE(ct_http_parser_in_message(p));
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in, 0, &used, &chunk), CT_HTTP_EV_MORE);
    ct_http_parser_free(&p);
    free(in);
}

static void test_post_length(void)
{
    EXPECT_REQ("POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
               "HEAD(POST /f v11 fr1 cl5 ka1 ec0 up0 hb48 [Host=a*] [Content-Length=5*])"
               " BODY(5:hello)END ");
    EXPECT_REQ("POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
               "HEAD(POST /f v11 fr1 cl0 ka1 ec0 up0 hb48 [Host=a*] [Content-Length=0*])"
               " END ");
}

static void test_chunked(void)
{
    EXPECT_REQ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
               "5\r\nhello\r\n1;ext=val;q=\"a;\\\"b\" \r\n!\r\nA\r\n0123456789\r\n"
               "0\r\nX-Trailer: t\r\n\r\n",
               "HEAD(POST / v11 fr2 cl0 ka1 ec0 up0 hb56 [Host=a*]"
               " [Transfer-Encoding=chunked*]) BODY(16:hello!0123456789)END ");
    /* codings before the final chunked are fine */
    EXPECT_REQ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n"
               "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
               "HEAD(POST / v11 fr2 cl0 ka1 ec0 up0 hb81 [Host=a*]"
               " [Transfer-Encoding=gzip*] [Transfer-Encoding=chunked*]) END ");
}

static void test_trailers_dropped(void)
{
    /* trailer fields are validated and dropped; the head stays as it was */
    const char in[] = CHUNKED_POST_HEAD "1\r\nx\r\n0\r\nX-T1: a\r\nX-T2: b\r\n\r\n";
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used, pos = 0;
    struct ct_str chunk;
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in, sizeof(in) - 1, &used, &chunk), CT_HTTP_EV_HEAD);
    pos += used;
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in + pos, sizeof(in) - 1 - pos, &used, &chunk),
                    CT_HTTP_EV_BODY);
    pos += used;
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in + pos, sizeof(in) - 1 - pos, &used, &chunk),
                    CT_HTTP_EV_END);
    pos += used;
    CU_ASSERT_EQUAL(pos, sizeof(in) - 1);
    const struct ct_http_msg *m = ct_http_parser_msg(p);
    CU_ASSERT_EQUAL(m->nfields, 2);
    CU_ASSERT_TRUE(ct_str_eq(m->fields[1].value, CT_STR("chunked")));
    CU_ASSERT_PTR_NULL(ct_http_msg_find_name(m, CT_STR("X-T1"), NULL));
    ct_http_parser_free(&p);
}

static void test_no_allocation_when_warm(void)
{
    /* the head buffer and field array are reused: once a connection has seen
     * its largest head, memory in use stays flat over more messages (glibc's
     * counters: this catches growth and leaks, not alloc/free churn; under
     * ASan they read 0 and the test proves nothing) */
    const char in[] = "POST /f HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n"
                      "Content-Length: 2\r\n\r\nok";
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used;
    struct ct_str chunk;
    struct mallinfo2 before = {0}, after;
    for (int i = 0; i < 1000; i++) {
        if (i == 1)
            before = mallinfo2();
        size_t pos = 0;
        for (int guard = 0; guard < 8; guard++) {
            enum ct_http_ev ev =
                ct_http_parser_feed(p, in + pos, sizeof(in) - 1 - pos, &used, &chunk);
            pos += used;
            CU_ASSERT_NOT_EQUAL_FATAL(ev, CT_HTTP_EV_ERROR);
            if (ev == CT_HTTP_EV_END)
                break;
        }
    }
    after = mallinfo2();
    CU_ASSERT_EQUAL(after.uordblks, before.uordblks);
    ct_http_parser_free(&p);
}

static void test_pipelining(void)
{
    EXPECT_REQ(
        "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
        "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
        "\r\nGET /3 HTTP/1.0\r\n\r\n"
        "POST /4 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
        "HEAD(GET /1 v11 fr0 cl0 ka1 ec0 up0 hb28 [Host=a*]) END "
        "HEAD(POST /2 v11 fr1 cl3 ka1 ec0 up0 hb48 [Host=a*] [Content-Length=3*])"
        " BODY(3:abc)END "
        "HEAD(GET /3 v10 fr0 cl0 ka0 ec0 up0 hb21) END "
        "HEAD(POST /4 v11 fr2 cl0 ka1 ec0 up0 hb57 [Host=a*]"
        " [Transfer-Encoding=chunked*]) BODY(1:x)END ");

    /* used is exact: each message starts where the previous one ended */
    const char in[] = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n";
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used, pos = 0;
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in, sizeof(in) - 1, &used, NULL), CT_HTTP_EV_HEAD);
    pos += used;
    CU_ASSERT_EQUAL(pos, 28);
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in + pos, sizeof(in) - 1 - pos, &used, NULL),
                    CT_HTTP_EV_END);
    CU_ASSERT_EQUAL(used, 0);
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in + pos, sizeof(in) - 1 - pos, &used, NULL),
                    CT_HTTP_EV_HEAD);
    CU_ASSERT_TRUE(ct_str_eq(ct_http_parser_msg(p)->target, CT_STR("/2")));
    ct_http_parser_free(&p);
}

static void test_keep_alive(void)
{
    EXPECT_REQ("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
               "HEAD(GET / v11 fr0 cl0 ka0 ec0 up0 hb46 [Host=a*] [Connection=close*]) END ");
    EXPECT_REQ("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
               "HEAD(GET / v10 fr0 cl0 ka1 ec0 up0 hb42 [Connection=Keep-Alive*]) END ");
    EXPECT_REQ("GET / HTTP/1.0\r\n\r\n", "HEAD(GET / v10 fr0 cl0 ka0 ec0 up0 hb18) END ");
    EXPECT_REQ("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n",
               "HEAD(GET / v11 fr0 cl0 ka0 ec0 up0 hb58 [Host=a*]"
               " [Connection=keep-alive, close*]) END ");
}

static void test_target_forms(void)
{
    EXPECT_REQ("GET http://example.com:8080/p?q HTTP/1.1\r\nHost: example.com:8080\r\n\r\n",
               "HEAD(GET http://example.com:8080/p?q v11 fr0 cl0 ka1 ec0 up0 hb68"
               " [Host=example.com:8080*]) END ");
    EXPECT_REQ("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(OPTIONS * v11 fr0 cl0 ka1 ec0 up0 hb31 [Host=a*]) END ");
    EXPECT_REQ("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
               "HEAD(CONNECT example.com:443 v11 fr0 cl0 ka1 ec0 up0 hb59"
               " [Host=example.com:443*]) END ");
    EXPECT_REQ_ERR("GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    EXPECT_REQ_ERR("CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    EXPECT_REQ_ERR("GET example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    EXPECT_REQ_ERR("OPTIONS *x HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    EXPECT_REQ_ERR("GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400, NULL);
    EXPECT_REQ_ERR("GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    EXPECT_REQ_ERR("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    EXPECT_REQ_ERR("GET /a#frag HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    EXPECT_REQ_ERR("GET http://a/b#c HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
}

static void test_expect(void)
{
    EXPECT_REQ("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\nx",
               "HEAD(PUT / v11 fr1 cl1 ka1 ec1 up0 hb68 [Host=a*] [Expect=100-Continue*]"
               " [Content-Length=1*]) BODY(1:x)END ");
    /* RFC 9110 §10.1.1: an HTTP/1.0 100-continue is ignored */
    EXPECT_REQ("PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n",
               "HEAD(PUT / v10 fr0 cl0 ka0 ec0 up0 hb40 [Expect=100-continue*]) END ");
    EXPECT_REQ_ERR("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", 417, "expectation");
    EXPECT_REQ_ERR("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue, x\r\n\r\n", 417, NULL);
}

static void test_upgrade_request(void)
{
    EXPECT_REQ("GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
               "HEAD(GET /ws v11 fr0 cl0 ka1 ec0 up1 hb70 [Host=a*] [Connection=Upgrade*]"
               " [Upgrade=websocket*]) END ");
}

/* h2c is never an upgrade: it would tunnel HTTP/2 requests past the proxy. */
static void test_upgrade_h2c_is_not(void)
{
    static const char in[] = "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                             "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n";
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used;
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in, sizeof(in) - 1, &used, NULL), CT_HTTP_EV_HEAD);
    const struct ct_http_msg *m = ct_http_parser_msg(p);
    CU_ASSERT_FALSE(m->upgrade);
    const struct ct_http_field *f = ct_http_msg_find(m, CT_HDR_HTTP2_SETTINGS, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_TRUE(ct_http_msg_field_is_hop(m, f));
    ct_http_parser_free(&p);
}

/* Gateway parsers: absolute-form becomes origin-form with Host = authority. */
static void gateway_case(const char *in, const char *target, const char *host, unsigned err)
{
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    ct_http_parser_set_gateway(p, true);
    size_t used;
    enum ct_http_ev ev = ct_http_parser_feed(p, in, strlen(in), &used, NULL);
    if (err) {
        CU_ASSERT_EQUAL(ev, CT_HTTP_EV_ERROR);
        CU_ASSERT_EQUAL(ct_http_parser_error_status(p), err);
    } else {
        CU_ASSERT_EQUAL_FATAL(ev, CT_HTTP_EV_HEAD);
        const struct ct_http_msg *m = ct_http_parser_msg(p);
        CU_ASSERT_TRUE(ct_str_eq(m->target, ct_str_c(target)));
        const struct ct_http_field *h = ct_http_msg_find(m, CT_HDR_HOST, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(h);
        CU_ASSERT_TRUE(ct_str_eq(h->value, ct_str_c(host)));
        CU_ASSERT_PTR_NULL(ct_http_msg_find(m, CT_HDR_HOST, h));
        CU_ASSERT_EQUAL(ct_http_parser_feed(p, "", 0, &used, NULL), CT_HTTP_EV_END);
    }
    ct_http_parser_free(&p);
}

static void test_gateway_absolute_form(void)
{
    gateway_case("GET http://other.test/x?y HTTP/1.1\r\nHost: hostile.test\r\n\r\n", "/x?y",
                 "other.test", 0);
    gateway_case("GET http://other.test:8080?q=1 HTTP/1.1\r\nHost: h\r\nX-A: b\r\n\r\n", "/?q=1",
                 "other.test:8080", 0);
    gateway_case("GET HTTPS://[::1]:8443 HTTP/1.1\r\nHost: h\r\n\r\n", "/", "[::1]:8443", 0);
    gateway_case("GET http://other.test/ HTTP/1.0\r\nX-A: b\r\n\r\n", "/", "other.test", 0);
    gateway_case("GET /p HTTP/1.1\r\nHost: h\r\n\r\n", "/p", "h", 0);
    gateway_case("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", "*", "h", 0);
    gateway_case("GET http://u:pw@other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n", NULL, NULL,
                 400);
    gateway_case("GET http://other.test/ HTTP/1.1\r\n\r\n", NULL, NULL, 400); /* Host still required */
}

/* Gateway parsers drop what Connection names (but the framing), so the
 * proxy's cache reads the request the origin gets; others keep it. */
static void test_gateway_connection_named(void)
{
    static const char in[] = "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, X-A, "
                             "accept-language, Content-Length\r\nX-A: 1\r\nAccept-Language: fr\r\n"
                             "X-B: 2\r\nContent-Length: 0\r\nx-a: 3\r\n\r\n";
    for (int gw = 0; gw < 2; gw++) {
        struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
        ct_http_parser_set_gateway(p, gw);
        size_t used;
        CU_ASSERT_EQUAL_FATAL(ct_http_parser_feed(p, in, sizeof(in) - 1, &used, NULL),
                              CT_HTTP_EV_HEAD);
        const struct ct_http_msg *m = ct_http_parser_msg(p);
        CU_ASSERT_EQUAL(m->nfields, gw ? 4u : 7u);
        CU_ASSERT_EQUAL(ct_http_msg_find_name(m, CT_STR("x-a"), NULL) == NULL, gw);
        CU_ASSERT_EQUAL(ct_http_msg_find_name(m, CT_STR("Accept-Language"), NULL) == NULL, gw);
        CU_ASSERT_PTR_NOT_NULL(ct_http_msg_find_name(m, CT_STR("X-B"), NULL));
        CU_ASSERT_PTR_NOT_NULL(ct_http_msg_find(m, CT_HDR_CONTENT_LENGTH, NULL));
        CU_ASSERT_PTR_NOT_NULL(ct_http_msg_find(m, CT_HDR_CONNECTION, NULL));
        CU_ASSERT_TRUE(m->keep_alive);
        ct_http_parser_free(&p);
    }
}

static void test_leading_empty_lines(void)
{
    /* RFC 9112 §2.2: empty lines before the request line are ignored */
    EXPECT_REQ("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(GET / v11 fr0 cl0 ka1 ec0 up0 hb31 [Host=a*]) END ");
}

/* ---- the rules ------------------------------------------------------------ */

static void test_cl_and_te(void)
{
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                   400, "Content-Length and Transfer-Encoding");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                   "Content-Length: 5\r\n\r\n0\r\n\r\n",
                   400, "Content-Length and Transfer-Encoding");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                   "Transfer-Encoding: gzip\r\n\r\nhello",
                   400, "Content-Length and Transfer-Encoding");
}

static void test_duplicate_cl(void)
{
    /* strict side: even equal values are refused */
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
                   400, "duplicate Content-Length");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
                   400, "duplicate Content-Length");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\nx", 400,
                   "Content-Length");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\nx", 400,
                   "Content-Length");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 1\r\n\r\nx", 400,
                   "Content-Length");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n"
                   "\r\nx",
                   400, "Content-Length");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\nx", 400, NULL);
}

static void test_te_rules(void)
{
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\nx", 400,
                   "not chunked");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"
                   "0\r\n\r\n",
                   400, "not chunked");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                   "Transfer-Encoding: gzip\r\n\r\n0\r\n\r\n",
                   400, "not chunked");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
                   "0\r\n\r\n",
                   400, "more than once");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                   400, "more than once");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: foo, chunked\r\n\r\n"
                   "0\r\n\r\n",
                   501, "unknown transfer coding");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", 501,
                   "unknown transfer coding");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;x=1\r\n\r\n"
                   "0\r\n\r\n",
                   400, "chunked");
    EXPECT_REQ_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n", 400, NULL);
    EXPECT_REQ_ERR("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
                   "HTTP/1.0");
}

static void test_chunk_sizes(void)
{
#define CHUNKED_POST "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
    EXPECT_REQ_ERR(CHUNKED_POST "fffffffffffffffff\r\nx\r\n0\r\n\r\n", 400, NULL);
    EXPECT_REQ_ERR(CHUNKED_POST "10000000000000000\r\nx\r\n0\r\n\r\n", 400, NULL);
    EXPECT_REQ_ERR(CHUNKED_POST "x\r\nx\r\n0\r\n\r\n", 400, "chunk size");
    EXPECT_REQ_ERR(CHUNKED_POST "-1\r\nx\r\n0\r\n\r\n", 400, "chunk size");
    EXPECT_REQ_ERR(CHUNKED_POST "\r\nx\r\n0\r\n\r\n", 400, "chunk size");
    EXPECT_REQ_ERR(CHUNKED_POST "1 x\r\nx\r\n0\r\n\r\n", 400, "chunk size");
    EXPECT_REQ_ERR(CHUNKED_POST "1 \r\nx\r\n0\r\n\r\n", 400, "chunk size");
    EXPECT_REQ_ERR(CHUNKED_POST "1;\r\nx\r\n0\r\n\r\n", 400, "chunk size");
    EXPECT_REQ_ERR(CHUNKED_POST "1;a=\"x\r\nx\r\n0\r\n\r\n", 400, "chunk size");
    EXPECT_REQ_ERR(CHUNKED_POST "1\nx\r\n0\r\n\r\n", 400, "chunk size");
    EXPECT_REQ_ERR(CHUNKED_POST "1;a\nb\r\nx\r\n0\r\n\r\n", 400, "chunk size");
    /* data not followed by CRLF: the classic desync */
    EXPECT_REQ_ERR(CHUNKED_POST "5\r\nhelloXY0\r\n\r\n", 400, "chunk data");
    EXPECT_REQ_ERR(CHUNKED_POST "5\r\nhello\n0\r\n\r\n", 400, "chunk data");
    EXPECT_REQ_ERR(CHUNKED_POST "5\r\nhello\r0\r\n\r\n", 400, "chunk data");
    /* the last chunk and the trailer section follow the field rules */
    EXPECT_REQ_ERR(CHUNKED_POST "0\r\n\n", 400, "bare LF");
    EXPECT_REQ_ERR(CHUNKED_POST "0\r\nX : y\r\n\r\n", 400, "colon");
    EXPECT_REQ_ERR(CHUNKED_POST "0\r\nX: y\r\n z\r\n\r\n", 400, "folding");
    /* body pieces come before an error later in the framing */
    static struct tr t;
    const char in[] = CHUNKED_POST "5\r\nhelloXY0\r\n\r\n";
    run_whole(&REQ, in, sizeof(in) - 1, &t);
    CU_ASSERT_PTR_NOT_NULL(strstr(t.s, "BODY(5:hello)ERR(400"));
}

static void test_obs_fold_and_bytes(void)
{
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400, "folding");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400, "folding");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", 400, "bare CR");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a\r\r\n\r\n", 400, "bare CR");
    EXPECT_REQ_ERR("GET / HTTP/1.1\rHost: a\r\n\r\n", 400, "bare CR");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a\r\n\rX", 400, "bare CR");
    EXPECT_REQ_ERR("GET / HTTP/1.1\nHost: a\n\n", 400, NULL);
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400, "bare LF");
    expect_err_o(&REQ, S("GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n"), 400, "control");
    expect_err_o(&REQ, S("GET / HTTP/1.1\r\nHost: a\r\nX\0: b\r\n\r\n"), 400, "name");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n", 400, "control");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", 400, "control");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a\r\nX\x01: b\r\n\r\n", 400, "name");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, "colon");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400, "colon");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\n: a\r\n\r\n", 400, "name");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nX(y): a\r\n\r\n", 400, "name");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost a\r\n\r\n", 400, "name");
    /* obs-text in values is allowed (RFC 9110 §5.5) */
    EXPECT_REQ("GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n",
               "HEAD(GET / v11 fr0 cl0 ka1 ec0 up0 hb37 [Host=a*] [X=caf\xc3\xa9]) END ");
}

static void test_ctl_anywhere_in_long_values(void)
{
    /* every position of a long value, every kind of forbidden octet (the
     * value scan works a word at a time) */
    static const unsigned char bad[] = {0x00, 0x01, 0x08, 0x0a, 0x0b, 0x0d, 0x1f, 0x7f};
    char in[128];
    static struct tr t;
    for (size_t b = 0; b < sizeof(bad); b++)
        for (size_t k = 0; k < 40; k++) {
            int n = snprintf(in, sizeof(in), "GET / HTTP/1.1\r\nHost: a\r\nX: %s\r\n\r\n",
                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
            in[28 + k] = (char)bad[b];
            run_whole(&REQ, in, (size_t)n, &t);
            if (t.status != 400)
                fprintf(stderr, "\noctet 0x%02x at %zu: %s\n", bad[b], k, t.s);
            CU_ASSERT_EQUAL(t.status, 400);
        }
    /* tabs and obs-text anywhere are fine */
    for (size_t k = 0; k < 40; k++) {
        int n = snprintf(in, sizeof(in), "GET / HTTP/1.1\r\nHost: a\r\nX: %s\r\n\r\n",
                         "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
        in[28 + k] = (char)(k % 2 ? 0xff : '\t');
        in[28 + (k + 7) % 40] = (char)0x80;
        run_whole(&REQ, in, (size_t)n, &t);
        CU_ASSERT_EQUAL(t.status, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(t.s, "END"));
    }
}

static void test_method_tokens(void)
{
    EXPECT_REQ_ERR("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "method");
    EXPECT_REQ_ERR(" GET / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "method");
    EXPECT_REQ_ERR("GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", 400, "method");
    EXPECT_REQ_ERR("\x01GET / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "method");
    EXPECT_REQ_ERR("FO(O / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "method");
    EXPECT_REQ_ERR("FOO: / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "method");
    EXPECT_REQ_ERR("FO\x80O / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "method");
    EXPECT_REQ_ERR("FOO\r\nHost: a\r\n\r\n", 400, "method");
    EXPECT_REQ_ERR("FOO  / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    /* any valid token is a method (RFC 9110 §9.1), forwarded as received */
    EXPECT_REQ("FOO / HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(FOO / v11 fr0 cl0 ka1 ec0 up0 hb27 [Host=a*]) END ");
    EXPECT_REQ("get / HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(get / v11 fr0 cl0 ka1 ec0 up0 hb27 [Host=a*]) END ");
    EXPECT_REQ("GETS / HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(GETS / v11 fr0 cl0 ka1 ec0 up0 hb28 [Host=a*]) END ");
    EXPECT_REQ("!#$%&'*+-.^_`|~09azAZ / HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(!#$%&'*+-.^_`|~09azAZ / v11 fr0 cl0 ka1 ec0 up0 hb45 [Host=a*]) END ");
    /* methods the library knows and the table does not: OTHER, forwarded */
    EXPECT_REQ("PROPFIND /d HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(PROPFIND /d v11 fr0 cl0 ka1 ec0 up0 hb33 [Host=a*]) END ");
    EXPECT_REQ("PURGE /d HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(PURGE /d v11 fr0 cl0 ka1 ec0 up0 hb30 [Host=a*]) END ");
}

/* The method id of the first request in IN: our table is case-sensitive. */
static enum ct_http_method method_of(const char *in)
{
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used;
    enum ct_http_method m = CT_METHOD__COUNT; /* no head */
    if (ct_http_parser_feed(p, in, strlen(in), &used, NULL) == CT_HTTP_EV_HEAD)
        m = ct_http_parser_msg(p)->method;
    ct_http_parser_free(&p);
    return m;
}

static void test_method_ids(void)
{
    CU_ASSERT_EQUAL(method_of("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), CT_METHOD_GET);
    CU_ASSERT_EQUAL(method_of("get / HTTP/1.1\r\nHost: a\r\n\r\n"), CT_METHOD_OTHER);
    CU_ASSERT_EQUAL(method_of("Get / HTTP/1.1\r\nHost: a\r\n\r\n"), CT_METHOD_OTHER);
    CU_ASSERT_EQUAL(method_of("FOO / HTTP/1.1\r\nHost: a\r\n\r\n"), CT_METHOD_OTHER);
    CU_ASSERT_EQUAL(method_of("GETS / HTTP/1.1\r\nHost: a\r\n\r\n"), CT_METHOD_OTHER);
    CU_ASSERT_EQUAL(method_of("PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n"), CT_METHOD_OTHER);
    CU_ASSERT_EQUAL(method_of("PURGE / HTTP/1.1\r\nHost: a\r\n\r\n"), CT_METHOD_PURGE);
    CU_ASSERT_EQUAL(method_of("POST / HTTP/1.1\r\nHost: a\r\n\r\n"), CT_METHOD_POST);
    CU_ASSERT_EQUAL(method_of("\r\n\r\nPATCH / HTTP/1.1\r\nHost: a\r\n\r\n"), CT_METHOD_PATCH);
    CU_ASSERT_EQUAL(method_of("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n"), CT_METHOD_CONNECT);
}

/* Methods the library does not know frame like any other: a body exactly
 * when Content-Length or chunked says so (RFC 9112 §6.3). */
static void test_unknown_method_bodies(void)
{
    EXPECT_REQ("FOO /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
               "HEAD(FOO /echo v11 fr1 cl5 ka1 ec0 up0 hb50 [Host=a*] [Content-Length=5*])"
               " BODY(5:hello)END ");
    EXPECT_REQ("foo /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
               "3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n",
               "HEAD(foo /echo v11 fr2 cl0 ka1 ec0 up0 hb59 [Host=a*]"
               " [Transfer-Encoding=chunked*]) BODY(5:abcde)END ");
    /* no length, no chunked: no body, the next bytes are the next request */
    EXPECT_REQ("FOO / HTTP/1.1\r\nHost: a\r\n\r\nBAR / HTTP/1.0\r\n\r\n",
               "HEAD(FOO / v11 fr0 cl0 ka1 ec0 up0 hb27 [Host=a*]) END "
               "HEAD(BAR / v10 fr0 cl0 ka0 ec0 up0 hb18) END ");
    /* the framing rules stay ours and the library's, cross-checked */
    EXPECT_REQ_ERR("FOO / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                   "Transfer-Encoding: chunked\r\n\r\nabc",
                   400, "Transfer-Encoding");
    EXPECT_REQ_ERR("FOO / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
                   400, "Content-Length");
    EXPECT_REQ_ERR("FOO / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "3\r\nabcXY\r\n0\r\n\r\n",
                   400, "chunk");
    /* the target forms of RFC 9112 §3.2 still depend on the real method */
    EXPECT_REQ_ERR("FOO * HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    EXPECT_REQ_ERR("connect a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 400, "target");
    EXPECT_REQ("FOO http://h/x HTTP/1.1\r\nHost: h\r\n\r\n",
               "HEAD(FOO http://h/x v11 fr0 cl0 ka1 ec0 up0 hb36 [Host=h*]) END ");
    /* an upgrade request of an unknown method: the head, its body, then the
     * next request, exactly as for a known one */
    EXPECT_REQ("FOO /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: x\r\n"
               "Content-Length: 2\r\n\r\nhiFOO / HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(FOO /ws v11 fr1 cl2 ka1 ec0 up1 hb81 [Host=a*] [Connection=Upgrade*]"
               " [Upgrade=x*] [Content-Length=2*]) BODY(2:hi)END "
               "HEAD(FOO / v11 fr0 cl0 ka1 ec0 up0 hb27 [Host=a*]) END ");
    /* methods the library knows keep working, with and without a body */
    EXPECT_REQ("M-SEARCH / HTTP/1.1\r\nHost: a\r\n\r\n",
               "HEAD(M-SEARCH / v11 fr0 cl0 ka1 ec0 up0 hb32 [Host=a*]) END ");
    EXPECT_REQ_ERR("M-SEARCH * HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target");
    EXPECT_REQ("PROPFIND /d HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n<>",
               "HEAD(PROPFIND /d v11 fr1 cl2 ka1 ec0 up0 hb52 [Host=a*] [Content-Length=2*])"
               " BODY(2:<>)END ");
}

static void test_unknown_method_pipelined(void)
{
    EXPECT_REQ(
        "\r\nFOO /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi"
        "lock /2 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"
        "GET /3 HTTP/1.1\r\nHost: a\r\n\r\n"
        "X /4 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        "HEAD(FOO /1 v11 fr1 cl2 ka1 ec0 up0 hb49 [Host=a*] [Content-Length=2*])"
        " BODY(2:hi)END "
        "HEAD(lock /2 v11 fr2 cl0 ka1 ec0 up0 hb57 [Host=a*]"
        " [Transfer-Encoding=chunked*]) BODY(1:x)END "
        "HEAD(GET /3 v11 fr0 cl0 ka1 ec0 up0 hb28 [Host=a*]) END "
        "HEAD(X /4 v11 fr0 cl0 ka0 ec0 up0 hb45 [Host=a*] [Connection=close*]) END ");
    /* views of an unknown method's name outlive the input and survive the
     * head buffer growing behind it */
    char *in = strdup("FOOBARBAZ /t HTTP/1.1\r\nHost: h\r\nX-Long: "
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "0123456789012345678901234567890123456789012345678901234567890123456789"
                      "\r\n\r\n");
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used, pos = 0;
    enum ct_http_ev ev = CT_HTTP_EV_MORE;
    for (size_t len = strlen(in); ev == CT_HTTP_EV_MORE && pos < len; pos += used)
        ev = ct_http_parser_feed(p, in + pos, CT_MIN((size_t)3, len - pos), &used, NULL);
    CU_ASSERT_EQUAL(ev, CT_HTTP_EV_HEAD);
    memset(in, 'Z', strlen(in));
    const struct ct_http_msg *m = ct_http_parser_msg(p);
    CU_ASSERT_TRUE(ct_str_eq(m->method_name, CT_STR("FOOBARBAZ")));
    CU_ASSERT_TRUE(ct_str_eq(m->target, CT_STR("/t")));
    CU_ASSERT_EQUAL(m->method, CT_METHOD_OTHER);
    ct_http_parser_free(&p);
    free(in);
}

static void test_method_limits(void)
{
    struct ct_http_limits lim;
    ct_http_limits_default(&lim);
    lim.max_line = 32;
    struct opts o = REQ;
    o.lim = &lim;
    /* the method counts toward the request line: 32 bytes fit, 33 do not */
    expect_tr_o(&o, S("ABCDEFGHIJKLMNOPQRSTU / HTTP/1.1\r\nHost: a\r\n\r\n"),
                "HEAD(ABCDEFGHIJKLMNOPQRSTU / v11 fr0 cl0 ka1 ec0 up0 hb45 [Host=a*]) END ");
    expect_err_o(&o, S("ABCDEFGHIJKLMNOPQRSTUV / HTTP/1.1\r\nHost: a\r\n\r\n"), 414, "line");
    expect_err_o(&o, S("ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ"), 414, "line");
    /* a half-sent method is a started message; EOF inside it is an error */
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used;
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, "\r\nFO", 4, &used, NULL), CT_HTTP_EV_MORE);
    CU_ASSERT_EQUAL(used, 4);
    CU_ASSERT_TRUE(ct_http_parser_started(p));
    CU_ASSERT_EQUAL(ct_http_parser_eof(p), CT_HTTP_EV_ERROR);
    CU_ASSERT_EQUAL(ct_http_parser_error_status(p), 400);
    ct_http_parser_free(&p);
}

static void test_versions(void)
{
    EXPECT_REQ_ERR("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, "version");
    EXPECT_REQ_ERR("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505, "version");
    EXPECT_REQ_ERR("GET / HTTP/0.9\r\n\r\n", 505, "version");
    EXPECT_REQ_ERR("GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400, NULL);
    EXPECT_REQ_ERR("GET / http/1.1\r\nHost: a\r\n\r\n", 400, "version");
    EXPECT_REQ_ERR("GET /\r\nHost: a\r\n\r\n", 400, NULL);
    EXPECT_REQ_ERR("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400, NULL);
}

static void test_host_rules(void)
{
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\n\r\n", 400, "missing Host");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400, "more than one Host");
    EXPECT_REQ_ERR("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n", 400, "more than one Host");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, "invalid Host");
    EXPECT_REQ_ERR("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "invalid Host");
    /* an empty Host is valid syntax (RFC 9110 §7.2) */
    EXPECT_REQ("GET / HTTP/1.1\r\nHost:\r\n\r\n",
               "HEAD(GET / v11 fr0 cl0 ka1 ec0 up0 hb25 [Host=*]) END ");
}

static void test_limits(void)
{
    struct ct_http_limits lim;
    ct_http_limits_default(&lim);
    lim.max_line = 32;
    lim.max_head = 128;
    lim.max_fields = 3;
    lim.max_body = 4;
    struct opts o = REQ;
    o.lim = &lim;
    /* a request line of 32 bytes (CRLF aside) fits, 33 do not */
    expect_tr_o(&o, S("GET /012345678901234567 HTTP/1.1\r\nHost: a\r\n\r\n"),
                "HEAD(GET /012345678901234567 v11 fr0 cl0 ka1 ec0 up0 hb45 [Host=a*]) END ");
    expect_err_o(&o, S("GET /0123456789012345678 HTTP/1.1\r\nHost: a\r\n\r\n"), 414, "line");
    expect_err_o(&o, S("GET /0123456789012345678901234567890123456789 HTTP/1.1\r\n\r\n"), 414,
                 "line");
    expect_err_o(&o, S("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n"), 0, NULL);
    expect_err_o(&o, S("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), 431,
                 "too many");
    expect_err_o(&o,
                 S("GET / HTTP/1.1\r\nHost: a\r\nA: 01234567890123456789012345678901234"
                   "5678901234567890123456789012345678901234567890123456789012345678\r\n\r\n"),
                 431, "too large");
    /* body: Content-Length over the limit is refused at the head */
    expect_err_o(&o, S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"), 413,
                 "body");
    expect_tr_o(&o, S("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nhell"),
                "HEAD(POST / v11 fr1 cl4 ka1 ec0 up0 hb47 [Host=a*] [Content-Length=4*])"
                " BODY(4:hell)END ");
    /* chunked: exactly max_body bytes are handed out, then 413 */
    expect_tr_o(&o, S(CHUNKED_POST "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"),
                "HEAD(POST / v11 fr2 cl0 ka1 ec0 up0 hb56 [Host=a*]"
                " [Transfer-Encoding=chunked*]) BODY(4:abcd)ERR(413 body too large)");
    /* the trailer section has the head's limits */
    lim.max_body = 0;
    expect_err_o(&o, S(CHUNKED_POST "0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"), 431, "too many");
}

/* Whole lines are read by the lexer's fast path, and lines cut by a split
 * by its byte machine: at every line, head and field-count limit around the
 * sizes of these heads, both must give the same transcript. */
static void test_fast_lines_at_limits(void)
{
    static const char req[] = "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t/1\r\n"
                              "Accept: */*\r\n\r\n";
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nETag: \"x\"\r\n\r\nhi";
    static const char resp_no_reason[] = "HTTP/1.0 204\r\nA: b\r\n\r\n";
    const struct {
        const struct opts *o;
        const char *in;
        size_t len, line;
    } cases[] = {
        {&REQ, req, sizeof(req) - 1, sizeof("GET /a/b?c=d HTTP/1.1") - 1},
        {&RESP, resp, sizeof(resp) - 1, sizeof("HTTP/1.1 200 OK") - 1},
        {&RESP, resp_no_reason, sizeof(resp_no_reason) - 1, sizeof("HTTP/1.0 204") - 1},
    };
    for (size_t c = 0; c < CT_ARRAY_LEN(cases); c++) {
        struct ct_http_limits lim;
        struct opts o = *cases[c].o;
        o.lim = &lim;
        for (size_t d = 0; d <= 4; d++) {
            ct_http_limits_default(&lim);
            lim.max_line = cases[c].line + 2 - d; /* fits, fits exactly, then 414 */
            check_any_split(&o, cases[c].in, cases[c].len);
            ct_http_limits_default(&lim);
            lim.max_fields = (unsigned)(d + 1); /* 431 until every field fits */
            check_any_split(&o, cases[c].in, cases[c].len);
        }
        for (size_t h = 16; h <= cases[c].len + 2; h++) {
            ct_http_limits_default(&lim);
            lim.max_head = h; /* 431 at every byte of the head, then fits */
            check_any_split(&o, cases[c].in, cases[c].len);
        }
    }
}

/* The lexer's word-at-a-time runs (names, the target, values) against its
 * byte machine: every byte value at every place of the first two words of
 * each, whole against byte by byte. */
static void test_fast_words_every_byte(void)
{
    static const struct {
        const char *before, *after;
        char fill;
    } shapes[] = {
        {"GET /", " HTTP/1.1\r\nHost: a\r\n\r\n", 'p'},
        {"GET / HTTP/1.1\r\nHost: a\r\n", ": v\r\n\r\n", 'N'},
        {"GET / HTTP/1.1\r\nHost: a\r\nX-V: ", "\r\n\r\n", 'v'},
    };
    static struct tr whole, bytes;
    enum { RUN = 16 };
    char in[128];
    size_t cuts[128];
    for (size_t i = 0; i < CT_ARRAY_LEN(cuts); i++)
        cuts[i] = i + 1;
    for (size_t s = 0; s < CT_ARRAY_LEN(shapes); s++)
        for (size_t at = 0; at < RUN; at++)
            for (int c = 0; c < 256; c++) {
                size_t nb = strlen(shapes[s].before), na = strlen(shapes[s].after);
                size_t len = nb + RUN + na;
                memcpy(in, shapes[s].before, nb);
                memset(in + nb, shapes[s].fill, RUN);
                in[nb + at] = (char)c;
                memcpy(in + nb + RUN, shapes[s].after, na);
                run_whole(&REQ, in, len, &whole);
                drive(&REQ, in, len, cuts, len - 1, &bytes);
                if (strcmp(whole.s, bytes.s) != 0) {
                    fprintf(stderr, "\nshape %zu byte 0x%02x at %zu:\n whole: %s\n bytes: %s\n", s,
                            c, at, whole.s, bytes.s);
                    CU_FAIL_FATAL("the fast runs and the byte machine differ");
                }
            }
}

static void test_big_head_within_limits(void)
{
    /* our limits, not the library's 80 KiB default, decide */
    struct ct_http_limits lim;
    ct_http_limits_default(&lim);
    lim.max_head = 256 * 1024;
    size_t vlen = 150 * 1024;
    char *in = malloc(vlen + 64);
    size_t n = (size_t)snprintf(in, 64, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: ");
    memset(in + n, 'v', vlen);
    n += vlen;
    memcpy(in + n, "\r\n\r\n", 4);
    n += 4;
    struct opts o = REQ;
    o.lim = &lim;
    static struct tr t;
    run_whole(&o, in, n, &t);
    CU_ASSERT_EQUAL(t.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(t.s, "END"));
    size_t cut[1] = {n / 2};
    static struct tr t2;
    drive(&o, in, n, cut, 1, &t2);
    CU_ASSERT_STRING_EQUAL(t.s, t2.s);
    lim.max_head = 100 * 1024;
    run_whole(&o, in, n, &t);
    CU_ASSERT_EQUAL(t.status, 431);
    free(in);
}

/* The lexer marks each field's colon and CR for the first
 * CT_HTTP_LEX_MARKS fields and the parser searches past them: both give
 * every field, whole, split anywhere and byte by byte, with leading empty
 * lines shifting every offset. */
static void test_field_marks(void)
{
    static char in[4096];
    static char want[4096];
    size_t n = (size_t)snprintf(in, sizeof(in), "\r\nGET /m HTTP/1.1\r\nHost: a\r\n");
    size_t w = 0;
    for (int i = 0; i < CT_HTTP_LEX_MARKS + 8; i++) {
        /* names and values of growing length; OWS around some values */
        n += (size_t)snprintf(in + n, sizeof(in) - n, "X-F%0*d:%s%.*s%s\r\n", 1 + i % 5, i,
                              i % 3 ? " " : "", 1 + i % 11, "abcdefghijkl", i % 4 ? "" : " \t");
        w += (size_t)snprintf(want + w, sizeof(want) - w, " [X-F%0*d=%.*s]", 1 + i % 5, i,
                              1 + i % 11, "abcdefghijkl");
    }
    n += (size_t)snprintf(in + n, sizeof(in) - n, "\r\n");
    static struct tr t;
    run_whole(&REQ, in, n, &t);
    CU_ASSERT_EQUAL_FATAL(t.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(t.s, " [Host=a*]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t.s, want));
    check_any_split(&REQ, in, n);
}

/* ---- responses ------------------------------------------------------------ */

static void test_responses(void)
{
    EXPECT_RESP("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
                "HEAD(200 OK v11 fr1 cl3 ka1 ec0 up0 hb38 [Content-Length=3*]) BODY(3:abc)END "
                "EOF");
    EXPECT_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                "HEAD(200 OK v11 fr2 cl0 ka1 ec0 up0 hb47 [Transfer-Encoding=chunked*])"
                " BODY(3:abc)END EOF");
    /* no length: read until close */
    EXPECT_RESP("HTTP/1.1 200 OK\r\n\r\nabcdef",
                "HEAD(200 OK v11 fr3 cl0 ka0 ec0 up0 hb19) BODY(6:abcdef)EOF-END");
    /* final coding not chunked: close-delimited (RFC 9112 §6.3 rule 4) */
    EXPECT_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc",
                "HEAD(200 OK v11 fr3 cl0 ka0 ec0 up0 hb44 [Transfer-Encoding=gzip*])"
                " BODY(3:abc)EOF-END");
    EXPECT_RESP("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
                "HEAD(200 OK v10 fr1 cl0 ka1 ec0 up0 hb62 [Connection=keep-alive*]"
                " [Content-Length=0*]) END EOF");
    /* no reason phrase */
    EXPECT_RESP("HTTP/1.1 204\r\n\r\n", "HEAD(204  v11 fr0 cl0 ka1 ec0 up0 hb16) END EOF");
    /* truncated bodies are errors, not complete messages */
    EXPECT_RESP_ERR("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", 502, "closed");
    EXPECT_RESP_ERR("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc", 502, "closed");
    EXPECT_RESP_ERR("HTTP/1.1 200 OK\r\nContent-Le", 502, "closed");
}

static void test_response_no_body(void)
{
    EXPECT_RESP("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"
                "HTTP/1.1 204 No Content\r\n\r\n",
                "HEAD(304 Not Modified v11 fr0 cl0 ka1 ec0 up0 hb49 [Content-Length=10*]) END "
                "HEAD(204 No Content v11 fr0 cl0 ka1 ec0 up0 hb27) END EOF");
    struct opts head = RESP;
    head.req_method = CT_METHOD_HEAD;
    expect_tr_o(&head, S("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"),
                "HEAD(200 OK v11 fr0 cl0 ka1 ec0 up0 hb39 [Content-Length=10*]) END EOF");
    expect_tr_o(&head, S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
                "HEAD(200 OK v11 fr0 cl0 ka1 ec0 up0 hb47 [Transfer-Encoding=chunked*]) END EOF");
}

static void test_response_interim_and_tunnel(void)
{
    EXPECT_RESP("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                "HEAD(100 Continue v11 fr0 cl0 ka1 ec0 up0 hb25) END "
                "HEAD(103 Early Hints v11 fr0 cl0 ka1 ec0 up0 hb40 [Link=</a>]) END "
                "HEAD(200 OK v11 fr1 cl2 ka1 ec0 up0 hb38 [Content-Length=2*]) BODY(2:ok)END EOF");
    EXPECT_RESP("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket"
                "\r\n\r\n\x81\x05hello",
                "HEAD(101 Switching Protocols v11 fr0 cl0 ka1 ec0 up1 hb77"
                " [Connection=upgrade*] [Upgrade=websocket*]) END TUNNEL(7)");
    struct opts conn = RESP;
    conn.req_method = CT_METHOD_CONNECT;
    expect_tr_o(&conn, S("HTTP/1.1 200 Connection Established\r\n\r\n\x16\x03\x01"),
                "HEAD(200 Connection Established v11 fr0 cl0 ka1 ec0 up0 hb39) END TUNNEL(3)");
    /* a refused CONNECT is an ordinary response */
    expect_tr_o(&conn, S("HTTP/1.1 403 Forbidden\r\nContent-Length: 1\r\n\r\nx"),
                "HEAD(403 Forbidden v11 fr1 cl1 ka1 ec0 up0 hb45 [Content-Length=1*])"
                " BODY(1:x)END EOF");
}

static void test_response_errors(void)
{
    /* everything the origin gets wrong is a 502 */
    EXPECT_RESP_ERR("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                    502, "Content-Length and Transfer-Encoding");
    EXPECT_RESP_ERR("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", 502,
                    "duplicate");
    EXPECT_RESP_ERR("HTTP/1.1 200 OK\r\nTransfer-Encoding: foo\r\n\r\n", 502, "unknown");
    EXPECT_RESP_ERR("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXY", 502,
                    "chunk data");
    EXPECT_RESP_ERR("HTTP/2.0 200 OK\r\n\r\n", 502, "version");
    EXPECT_RESP_ERR("HTTP/1.1 20 OK\r\n\r\n", 502, "status");
    EXPECT_RESP_ERR("HTTP/1.1 099 OK\r\n\r\n", 502, NULL);
    EXPECT_RESP_ERR("HTTP/1.1 600 OK\r\n\r\n", 502, "status");
    EXPECT_RESP_ERR("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", 502, "folding");
    EXPECT_RESP_ERR("HTTP/1.1 200 O\x01K\r\n\r\n", 502, "reason");
    EXPECT_RESP_ERR("HTTX/1.1 200 OK\r\n\r\n", 502, NULL);
    EXPECT_RESP_ERR("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 502,
                    "HTTP/1.0");
}

static void test_errors_stick(void)
{
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used;
    const char bad[] = "GET / HTTP/1.1\r\nHost : a\r\n\r\n";
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, bad, sizeof(bad) - 1, &used, NULL), CT_HTTP_EV_ERROR);
    CU_ASSERT_EQUAL(ct_http_parser_error_status(p), 400);
    const char good[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, good, sizeof(good) - 1, &used, NULL), CT_HTTP_EV_ERROR);
    CU_ASSERT_EQUAL(used, 0);
    CU_ASSERT_EQUAL(ct_http_parser_eof(p), CT_HTTP_EV_ERROR);
    ct_http_parser_free(&p);
}

static void test_eof_between_messages(void)
{
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    size_t used;
    CU_ASSERT_EQUAL(ct_http_parser_eof(p), CT_HTTP_EV_MORE);
    CU_ASSERT_FALSE(ct_http_parser_started(p));
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, "\r\n", 2, &used, NULL), CT_HTTP_EV_MORE);
    CU_ASSERT_FALSE(ct_http_parser_started(p));
    CU_ASSERT_EQUAL(ct_http_parser_eof(p), CT_HTTP_EV_MORE);
    ct_http_parser_free(&p);

    p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, "GE", 2, &used, NULL), CT_HTTP_EV_MORE);
    CU_ASSERT_TRUE(ct_http_parser_started(p));
    CU_ASSERT_FALSE(ct_http_parser_in_message(p));
    CU_ASSERT_EQUAL(ct_http_parser_eof(p), CT_HTTP_EV_ERROR);
    CU_ASSERT_EQUAL(ct_http_parser_error_status(p), 400);
    ct_http_parser_free(&p);
}

static void test_in_message(void)
{
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    const char in[] = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nab";
    size_t used;
    struct ct_str chunk;
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in, sizeof(in) - 1, &used, &chunk), CT_HTTP_EV_HEAD);
    CU_ASSERT_TRUE(ct_http_parser_in_message(p));
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, in + used, 2, &used, &chunk), CT_HTTP_EV_BODY);
    CU_ASSERT_EQUAL(used, 2);
    CU_ASSERT_TRUE(ct_str_eq(chunk, CT_STR("ab")));
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, "cd", 2, &used, &chunk), CT_HTTP_EV_BODY);
    CU_ASSERT_EQUAL(used, 2); /* the last piece is consumed with it */
    CU_ASSERT_EQUAL(ct_http_parser_feed(p, "", 0, &used, &chunk), CT_HTTP_EV_END);
    CU_ASSERT_FALSE(ct_http_parser_in_message(p));
    CU_ASSERT_EQUAL(ct_http_parser_eof(p), CT_HTTP_EV_MORE);
    ct_http_parser_free(&p);
}

/* ---- any split --------------------------------------------------------------- */

static const char *split_inputs[] = {
    "GET /1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\nGET /2 HTTP/1.0\r\n\r\n",
    "POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789GET / HTTP/1.1\r\n"
    "Host: b\r\n\r\n",
    CHUNKED_POST "3;a=b\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: 1\r\n\r\n",
    CHUNKED_POST "3\r\nabc\r\nZ\r\n",
    "GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n z\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
    "XYZW / HTTP/1.1\r\nHost: a\r\n\r\n",
    "FOO /e HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcget /f HTTP/1.1\r\nHost: a\r\n"
    "Transfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\nFO(O / HTTP/1.1\r\n\r\n",
    "\r\n\r\nWHATEVER-1.0_x~ * HTTP/1.1\r\nHost: a\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a\r\nExpect: nope\r\n\r\n",
    "\r\nPUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
};

static const char *split_responses[] = {
    ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n"), /* one input */
    "HTTP/1.1 200 OK\r\nServer: s\r\n\r\nclose-delimited body",
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\n",
};

static void test_any_split(void)
{
    for (size_t i = 0; i < CT_ARRAY_LEN(split_inputs); i++)
        check_any_split(&REQ, split_inputs[i], strlen(split_inputs[i]));
    for (size_t i = 0; i < CT_ARRAY_LEN(split_responses); i++)
        check_any_split(&RESP, split_responses[i], strlen(split_responses[i]));
}

void ct_test_register(void)
{
    CT_SUITE("http_parse requests", {"simple GET", test_simple_get},
             {"head storage outlives the input; used", test_head_storage_and_used},
             {"Content-Length body", test_post_length}, {"chunked body", test_chunked},
             {"trailers are dropped", test_trailers_dropped},
             {"memory flat once warm", test_no_allocation_when_warm},
             {"pipelining", test_pipelining}, {"keep-alive rules", test_keep_alive},
             {"request target forms", test_target_forms}, {"Expect", test_expect},
             {"upgrade request", test_upgrade_request},
             {"Upgrade: h2c is not an upgrade", test_upgrade_h2c_is_not},
             {"gateway: absolute-form to origin-form, Host from the authority",
              test_gateway_absolute_form},
             {"gateway: fields Connection names are dropped", test_gateway_connection_named},
             {"leading empty lines", test_leading_empty_lines});
    CT_SUITE("http_parse rules", {"CL with TE", test_cl_and_te},
             {"duplicate or invalid CL", test_duplicate_cl},
             {"Transfer-Encoding codings", test_te_rules},
             {"chunk sizes and framing", test_chunk_sizes},
             {"obs-fold, bare CR/LF, CTL, name/colon", test_obs_fold_and_bytes},
             {"CTL anywhere in a long value", test_ctl_anywhere_in_long_values},
             {"method tokens", test_method_tokens}, {"method ids", test_method_ids},
             {"unknown methods with and without bodies", test_unknown_method_bodies},
             {"unknown methods pipelined; name storage", test_unknown_method_pipelined},
             {"method and the line limit", test_method_limits}, {"HTTP versions", test_versions},
             {"Host", test_host_rules}, {"limits", test_limits},
             {"heads past 80 KiB within our limits", test_big_head_within_limits},
             {"fields past the lexer's marks", test_field_marks},
             {"errors stick", test_errors_stick},
             {"EOF between and inside messages", test_eof_between_messages},
             {"in_message", test_in_message});
    CT_SUITE("http_parse responses", {"framing", test_responses},
             {"no body: 204, 304, HEAD", test_response_no_body},
             {"1xx and tunnels", test_response_interim_and_tunnel},
             {"errors are 502", test_response_errors});
    CT_SUITE("http_parse any split", {"same transcript for every split", test_any_split},
             {"fast path and byte machine agree at the limits", test_fast_lines_at_limits},
             {"fast runs and byte machine agree on every byte", test_fast_words_every_byte});
}
