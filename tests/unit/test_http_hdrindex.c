/* tests/unit/test_http_hdrindex.c: the stored-head field index. */
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "http/http_hdrindex.h"
#include "tests/unit/ct_test.h"

#define STR_EQ(s, lit) CU_ASSERT_TRUE(ct_str_eq((s), CT_STR(lit)))

/* A head as cache_fill.c renders it: mixed-case table names, a table name
 * sent in lower case, unknown names in both cases, an empty value. */
static const char typical[] = "HTTP/1.1 200 OK\r\n"
                              "Content-Type: text/html; charset=utf-8\r\n"
                              "cache-control: max-age=60\r\n"
                              "ETag: \"abc\"\r\n"
                              "Last-Modified: Tue, 01 Dec 2026 00:00:00 GMT\r\n"
                              "X-Request-Id: 42\r\n"
                              "x-lower: yes\r\n"
                              "Set-Cookie: a=1\r\n"
                              "Set-Cookie: b=2\r\n"
                              "X-Empty: \r\n"
                              "Date: Tue, 01 Dec 2026 00:00:01 GMT\r\n";

/* Build BLOCK into a fresh allocation of exactly the needed size. */
static unsigned char *build(struct ct_str block, size_t *len)
{
    CU_ASSERT_EQUAL_FATAL(ct_hdrindex_build(block, NULL, 0, len), CT_ELIMIT);
    CU_ASSERT_FATAL(*len > 0);
    unsigned char *ix = malloc(*len);
    size_t len2 = 0;
    CU_ASSERT_EQUAL_FATAL(ct_hdrindex_build(block, ix, *len, &len2), CT_OK);
    CU_ASSERT_EQUAL(len2, *len);
    return ix;
}

static bool within(struct ct_str s, const void *base, size_t len)
{
    return s.p >= (const char *)base && s.p + s.len <= (const char *)base + len;
}

static void test_typical(void)
{
    struct ct_str block = ct_str_make(typical, sizeof(typical) - 1);
    size_t len;
    unsigned char *ix = build(block, &len);
    /* 10 entries; two copied names ("X-Request-Id", "X-Empty"), the others
     * are table names or lower case already. */
    CU_ASSERT_EQUAL(len, CT_HDRINDEX_HEAD_SIZE + 10 * CT_HDRINDEX_ENTRY_SIZE + 12 + 7);
    struct ct_hdrindex hx;
    CU_ASSERT_EQUAL_FATAL(ct_hdrindex_open(&hx, ix, len, block), CT_OK);
    CU_ASSERT_EQUAL(ct_hdrindex_count(&hx), 10);
    CU_ASSERT_EQUAL(ct_hdrindex_status(&hx), 200);
    static const struct {
        const char *name, *value;
        enum ct_hdr_id id;
    } want[] = {
        {"content-type", "text/html; charset=utf-8", CT_HDR_CONTENT_TYPE},
        {"cache-control", "max-age=60", CT_HDR_CACHE_CONTROL},
        {"etag", "\"abc\"", CT_HDR_ETAG},
        {"last-modified", "Tue, 01 Dec 2026 00:00:00 GMT", CT_HDR_LAST_MODIFIED},
        {"x-request-id", "42", CT_HDR_UNKNOWN},
        {"x-lower", "yes", CT_HDR_UNKNOWN},
        {"set-cookie", "a=1", CT_HDR_SET_COOKIE},
        {"set-cookie", "b=2", CT_HDR_SET_COOKIE},
        {"x-empty", "", CT_HDR_UNKNOWN},
        {"date", "Tue, 01 Dec 2026 00:00:01 GMT", CT_HDR_DATE},
    };
    for (unsigned i = 0; i < CT_ARRAY_LEN(want); i++) {
        struct ct_hdrindex_field f = ct_hdrindex_field(&hx, i);
        CU_ASSERT_TRUE(ct_str_eq(f.name, ct_str_c(want[i].name)));
        CU_ASSERT_TRUE(ct_str_eq(f.value, ct_str_c(want[i].value)));
        CU_ASSERT_EQUAL(f.id, want[i].id);
        /* values are views into the block, never copies */
        CU_ASSERT_TRUE(within(f.value, typical, sizeof(typical) - 1));
    }
    /* Where the names live: the lower-case unknown one in the block, the
     * mixed-case unknown one in the index. */
    CU_ASSERT_TRUE(within(ct_hdrindex_field(&hx, 5).name, typical, sizeof(typical) - 1));
    CU_ASSERT_TRUE(within(ct_hdrindex_field(&hx, 4).name, ix, len));
    CU_ASSERT_TRUE(within(ct_hdrindex_field(&hx, 8).name, ix, len));
    /* the names as the block spells them (HTTP/1.1 keeps the origin's
     * case): table, copied and lower-case ones alike (issue 40) */
    static const char *const wire[] = {"Content-Type", "cache-control", "ETag", "Last-Modified",
                                        "X-Request-Id", "x-lower", "Set-Cookie", "Set-Cookie",
                                        "X-Empty", "Date"};
    for (unsigned i = 0; i < CT_ARRAY_LEN(wire); i++) {
        struct ct_str w = ct_hdrindex_wire_name(&hx, i);
        CU_ASSERT_TRUE(ct_str_eq(w, ct_str_c(wire[i])));
        CU_ASSERT_TRUE(within(w, typical, sizeof(typical) - 1));
    }
    /* find: every Set-Cookie in order, then none; absent ids */
    CU_ASSERT_EQUAL(ct_hdrindex_find(&hx, CT_HDR_SET_COOKIE, 0), 6);
    CU_ASSERT_EQUAL(ct_hdrindex_find(&hx, CT_HDR_SET_COOKIE, 7), 7);
    CU_ASSERT_EQUAL(ct_hdrindex_find(&hx, CT_HDR_SET_COOKIE, 8), -1);
    CU_ASSERT_EQUAL(ct_hdrindex_find(&hx, CT_HDR_DATE, 0), 9);
    CU_ASSERT_EQUAL(ct_hdrindex_find(&hx, CT_HDR_VARY, 0), -1);
    CU_ASSERT_EQUAL(ct_hdrindex_find(&hx, CT_HDR_DATE, 100), -1);
    free(ix);
}

static void test_odd_heads(void)
{
    /* Status line only; no reason phrase; empty values with and without the
     * space; OWS around a value. */
    static const char b[] = "HTTP/1.1 304\r\n"
                            "X-A:\r\n"
                            "X-B: \t \r\n"
                            "Vary:  Accept-Encoding \t\r\n";
    struct ct_str block = ct_str_make(b, sizeof(b) - 1);
    size_t len;
    unsigned char *ix = build(block, &len);
    struct ct_hdrindex hx;
    CU_ASSERT_EQUAL_FATAL(ct_hdrindex_open(&hx, ix, len, block), CT_OK);
    CU_ASSERT_EQUAL(ct_hdrindex_status(&hx), 304);
    CU_ASSERT_EQUAL_FATAL(ct_hdrindex_count(&hx), 3);
    STR_EQ(ct_hdrindex_field(&hx, 0).name, "x-a");
    CU_ASSERT_EQUAL(ct_hdrindex_field(&hx, 0).value.len, 0);
    CU_ASSERT_EQUAL(ct_hdrindex_field(&hx, 1).value.len, 0);
    STR_EQ(ct_hdrindex_field(&hx, 2).value, "Accept-Encoding");
    CU_ASSERT_EQUAL(ct_hdrindex_field(&hx, 2).id, CT_HDR_VARY);
    free(ix);

    static const char only[] = "HTTP/1.1 204 No Content\r\n";
    block = ct_str_make(only, sizeof(only) - 1);
    ix = build(block, &len);
    CU_ASSERT_EQUAL(len, CT_HDRINDEX_HEAD_SIZE);
    CU_ASSERT_EQUAL_FATAL(ct_hdrindex_open(&hx, ix, len, block), CT_OK);
    CU_ASSERT_EQUAL(ct_hdrindex_count(&hx), 0);
    CU_ASSERT_EQUAL(ct_hdrindex_status(&hx), 204);
    CU_ASSERT_EQUAL(ct_hdrindex_find(&hx, CT_HDR_UNKNOWN, 0), -1);
    free(ix);
}

/* A 300-byte mixed-case name (copied, lower-cased) and 2000 fields. */
static void test_long_and_many(void)
{
    struct ct_buf b = {0};
    CT_BUF_LIT(&b, "HTTP/1.1 200 OK\r\n");
    char name[300];
    for (size_t i = 0; i < sizeof(name); i++)
        name[i] = (char)("AbC-"[i % 4]);
    ct_buf_put(&b, name, sizeof(name));
    CT_BUF_LIT(&b, ": long\r\n");
    for (unsigned i = 0; i < 2000; i++)
        ct_buf_printf(&b, "%s: %u\r\n", i % 2 ? "X-Many" : "Age", i);
    struct ct_str block = ct_str_make(b.p, b.len);
    size_t len;
    unsigned char *ix = build(block, &len);
    /* The copied names: the long one and "X-Many" 1000 times. */
    CU_ASSERT_EQUAL(len, CT_HDRINDEX_HEAD_SIZE + 2001 * CT_HDRINDEX_ENTRY_SIZE + 300 + 1000 * 6);
    struct ct_hdrindex hx;
    CU_ASSERT_EQUAL_FATAL(ct_hdrindex_open(&hx, ix, len, block), CT_OK);
    CU_ASSERT_EQUAL_FATAL(ct_hdrindex_count(&hx), 2001);
    struct ct_hdrindex_field f = ct_hdrindex_field(&hx, 0);
    CU_ASSERT_EQUAL_FATAL(f.name.len, 300);
    for (size_t i = 0; i < 300; i++)
        if (f.name.p[i] != ct_ascii_lower(name[i])) {
            CU_FAIL("long name not lower-cased");
            break;
        }
    unsigned ages = 0;
    for (int i = ct_hdrindex_find(&hx, CT_HDR_AGE, 0); i >= 0;
         i = ct_hdrindex_find(&hx, CT_HDR_AGE, (unsigned)i + 1)) {
        char want[8];
        snprintf(want, sizeof(want), "%u", ages * 2);
        CU_ASSERT_TRUE(ct_str_eq(ct_hdrindex_field(&hx, (unsigned)i).value, ct_str_c(want)));
        ages++;
    }
    CU_ASSERT_EQUAL(ages, 1000);
    STR_EQ(ct_hdrindex_field(&hx, 2000).name, "x-many");
    STR_EQ(ct_hdrindex_field(&hx, 2000).value, "1999");
    free(ix);
    ct_buf_free(&b);
}

static void test_limits(void)
{
    /* A name past 65535 bytes does not fit an entry. */
    struct ct_buf b = {0};
    CT_BUF_LIT(&b, "HTTP/1.1 200 OK\r\n");
    for (unsigned i = 0; i < 70000; i++)
        ct_buf_put_byte(&b, 'n');
    CT_BUF_LIT(&b, ": v\r\n");
    size_t len = 1;
    unsigned char small[64];
    CU_ASSERT_EQUAL(ct_hdrindex_build(ct_str_make(b.p, b.len), small, sizeof(small), &len),
                    CT_ELIMIT);
    CU_ASSERT_EQUAL(len, 0);
    /* 65536 fields do not fit the count. */
    ct_buf_reset(&b);
    CT_BUF_LIT(&b, "HTTP/1.1 200 OK\r\n");
    for (unsigned i = 0; i < 65536; i++)
        CT_BUF_LIT(&b, "a: b\r\n");
    CU_ASSERT_EQUAL(ct_hdrindex_build(ct_str_make(b.p, b.len), small, sizeof(small), &len),
                    CT_ELIMIT);
    CU_ASSERT_EQUAL(len, 0);
    ct_buf_free(&b);

    /* One byte short: refused with the length; exact: written. Any
     * alignment of the output works (the index goes after a block). */
    struct ct_str block = ct_str_make(typical, sizeof(typical) - 1);
    size_t need;
    CU_ASSERT_EQUAL(ct_hdrindex_build(block, NULL, 0, &need), CT_ELIMIT);
    unsigned char *mem = malloc(need + 1);
    CU_ASSERT_EQUAL(ct_hdrindex_build(block, mem + 1, need - 1, &len), CT_ELIMIT);
    CU_ASSERT_EQUAL(len, need);
    CU_ASSERT_EQUAL(ct_hdrindex_build(block, mem + 1, need, &len), CT_OK);
    struct ct_hdrindex hx;
    CU_ASSERT_EQUAL_FATAL(ct_hdrindex_open(&hx, mem + 1, len, block), CT_OK);
    STR_EQ(ct_hdrindex_field(&hx, 4).name, "x-request-id");
    /* open refuses what is not this block's index */
    CU_ASSERT_EQUAL(ct_hdrindex_open(&hx, mem + 1, len - 1, block), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_hdrindex_open(&hx, mem + 1, len, ct_str_make(typical, 20)), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_hdrindex_open(&hx, mem + 1, 8, block), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_hdrindex_open(&hx, typical, len, block), CT_EPROTO); /* no magic */
    CU_ASSERT_EQUAL(ct_hdrindex_open(&hx, NULL, 0, block), CT_EPROTO);
    free(mem);
}

static void test_malformed(void)
{
    static const char *const bad[] = {
        "",                                  /* nothing */
        "HTTP/1.1 200 OK",                   /* no CRLF */
        "HTTP/1.1 200 OK\n",                 /* bare LF */
        "HTTP/1.1 20 OK\r\n",                /* two digits */
        "HTTP/1.1 2000\r\n",                 /* four */
        "HTTP/1.1 2x0 OK\r\n",               /* not digits */
        "ICY 200 OK\r\n",                    /* not HTTP */
        "HTTP/1.1 200 OK\r\nNo-Colon\r\n",   /* a line without ':' */
        "HTTP/1.1 200 OK\r\n: v\r\n",        /* empty name */
        "HTTP/1.1 200 OK\r\nName : v\r\n",   /* space before the colon */
        "HTTP/1.1 200 OK\r\nA: b\r\n\r\n",   /* a blank line: not in our block */
        "HTTP/1.1 200 OK\r\nA: b\r\nC: d",   /* last line cut */
        "HTTP/1.1 200 OK\r\nA: b\nC: d\r\n", /* bare LF inside */
    };
    unsigned char out[512];
    for (size_t i = 0; i < CT_ARRAY_LEN(bad); i++) {
        size_t len = 99;
        int rc = ct_hdrindex_build(ct_str_c(bad[i]), out, sizeof(out), &len);
        if (rc != CT_EPROTO)
            fprintf(stderr, "\n  accepted bad head %zu (rc %d)\n", i, rc);
        CU_ASSERT_EQUAL(rc, CT_EPROTO);
        CU_ASSERT_EQUAL(len, 0);
    }
}

static void test_lname(void)
{
    /* The lower-case table names follow the canonical ones, row for row. */
    for (int id = 1; id < CT_HDR__COUNT; id++) {
        struct ct_str l = ct_hdr_lname((enum ct_hdr_id)id);
        struct ct_str c = ct_str_c(ct_hdr_name((enum ct_hdr_id)id));
        CU_ASSERT_TRUE(ct_str_eq_ci(l, c));
        for (size_t i = 0; i < l.len; i++)
            CU_ASSERT_FALSE(l.p[i] >= 'A' && l.p[i] <= 'Z');
    }
    STR_EQ(ct_hdr_lname(CT_HDR_WWW_AUTHENTICATE), "www-authenticate");
    CU_ASSERT_PTR_NULL(ct_hdr_lname(CT_HDR_UNKNOWN).p);
    CU_ASSERT_PTR_NULL(ct_hdr_lname(CT_HDR__COUNT).p);
}

void ct_test_register(void)
{
    CT_SUITE("http hdrindex", {"a typical stored head", test_typical},
             {"status only, empty values, OWS", test_odd_heads},
             {"a long mixed-case name, 2001 fields", test_long_and_many},
             {"limits, short buffers, alignment, open checks", test_limits},
             {"malformed blocks refused", test_malformed},
             {"lower-case table names", test_lname});
}
