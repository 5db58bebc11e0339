/* tests/unit/test_http_ae.c: Accept-Encoding to one class (RFC 9110
 * §12.5.3), with the peers' bugs as cases (issue 18), and the
 * coding a response's Content-Encoding declares. */
#include <stdio.h>

#include "http/http.h"
#include "http/http_ae.h"
#include "tests/unit/ct_test.h"

enum { NONE = CT_CODING_NONE, ID = CT_CODING_IDENTITY, GZ = CT_CODING_GZIP, BR = CT_CODING_BR,
       ZS = CT_CODING_ZSTD };

/* The class for the field lines LINES[0..N) (NULL-terminated) under PREF
 * (NULL: the default order). */
static int choose_lines(const char *const *lines, const struct ct_ae_pref *pref)
{
    struct ct_ae_pref def;
    struct ct_ae ae;
    ct_ae_pref_default(&def);
    ct_ae_init(&ae);
    for (; *lines; lines++)
        ct_ae_add(&ae, ct_str_c(*lines));
    return ct_ae_choose(&ae, pref ? pref : &def);
}

static int choose(const char *value)
{
    const char *lines[] = {value, NULL};
    return choose_lines(lines, NULL);
}

static void test_basic(void)
{
    CU_ASSERT_EQUAL(choose("gzip"), GZ);
    CU_ASSERT_EQUAL(choose("br"), BR);
    CU_ASSERT_EQUAL(choose("zstd"), ZS);
    CU_ASSERT_EQUAL(choose("identity"), ID);
    CU_ASSERT_EQUAL(choose("deflate"), ID); /* not ours: identity by default */
    /* equal weights: the server's order, zstd before br before gzip */
    CU_ASSERT_EQUAL(choose("gzip, deflate, br"), BR);
    CU_ASSERT_EQUAL(choose("gzip, deflate, br, zstd"), ZS);
    CU_ASSERT_EQUAL(choose("br, gzip"), BR);
}

static void test_absent_and_empty(void)
{
    struct ct_ae ae;
    struct ct_ae_pref pref;
    ct_ae_pref_default(&pref);
    ct_ae_init(&ae); /* no field at all */
    CU_ASSERT_EQUAL(ct_ae_choose(&ae, &pref), ID);
    CU_ASSERT_FALSE(ct_ae_accepts(&ae, CT_CODING_GZIP));
    CU_ASSERT_TRUE(ct_ae_accepts(&ae, CT_CODING_IDENTITY));
    /* an empty value: "does not want any content coding" (§12.5.3) */
    CU_ASSERT_EQUAL(choose(""), ID);
    CU_ASSERT_EQUAL(choose(" , ,"), ID);
}

static void test_qvalues(void)
{
    /* the client's weights win over the server's order */
    CU_ASSERT_EQUAL(choose("gzip;q=1, br;q=0.5"), GZ);
    CU_ASSERT_EQUAL(choose("br;q=0.5, gzip;q=0.499"), BR);
    CU_ASSERT_EQUAL(choose("gzip, br;q=0"), GZ);
    CU_ASSERT_EQUAL(choose("gzip;q=0"), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=0.001"), GZ); /* above identity by default */
    CU_ASSERT_EQUAL(choose("gzip;q=0.5, identity"), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=0.5, identity;q=0.5"), GZ);
    /* the qvalue grammar: 0[.ddd] or 1[.000] */
    CU_ASSERT_EQUAL(choose("gzip;q=1.000"), GZ);
    CU_ASSERT_EQUAL(choose("gzip;q=0."), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=1."), GZ);
    CU_ASSERT_EQUAL(choose("gzip;q=0.000"), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=1.001"), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=0.0001"), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=2"), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=.5"), ID);
    CU_ASSERT_EQUAL(choose("gzip;q="), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=-1"), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=0.5x"), ID);
    CU_ASSERT_EQUAL(choose("gzip;q=\"1\""), ID);
    /* OWS around ';' and a capital Q (parameter names are case-insensitive) */
    CU_ASSERT_EQUAL(choose("gzip ; q=0.5, br;Q=0.4"), GZ);
    CU_ASSERT_EQUAL(choose("gzip\t;\tq=0.2,br;q=0.3"), BR);
}

static void test_identity_refused(void)
{
    /* 406 only when identity is refused and nothing else fits */
    CU_ASSERT_EQUAL(choose("identity;q=0"), NONE);
    CU_ASSERT_EQUAL(choose("identity;q=0, deflate"), NONE);
    CU_ASSERT_EQUAL(choose("identity;q=0, gzip"), GZ);
    CU_ASSERT_EQUAL(choose("*;q=0"), NONE);
    CU_ASSERT_EQUAL(choose("*;q=0, identity"), ID);
    CU_ASSERT_EQUAL(choose("*;q=0, gzip;q=0.1"), GZ);
    CU_ASSERT_EQUAL(choose("identity;q=0, gzip;q=0"), NONE);
}

static void test_star(void)
{
    CU_ASSERT_EQUAL(choose("*"), ZS);
    CU_ASSERT_EQUAL(choose("*, zstd;q=0"), BR);
    CU_ASSERT_EQUAL(choose("*;q=0.5, gzip"), GZ);
    CU_ASSERT_EQUAL(choose("br;q=0.5, *"), ZS); /* "*" weighs the unnamed ones */
    CU_ASSERT_EQUAL(choose("*, zstd;q=0, br;q=0, gzip;q=0"), ID);
    CU_ASSERT_EQUAL(choose("*, zstd;q=0, br;q=0, gzip;q=0, identity;q=0"), NONE);
}

static void test_case_and_aliases(void)
{
    CU_ASSERT_EQUAL(choose("GZIP"), GZ);
    CU_ASSERT_EQUAL(choose("Br"), BR);
    CU_ASSERT_EQUAL(choose("ZSTD;Q=1"), ZS);
    CU_ASSERT_EQUAL(choose("x-gzip"), GZ); /* RFC 9110 §8.4.1.3 */
    CU_ASSERT_EQUAL(choose("IDENTITY;q=0"), NONE);
}

static void test_malformed_ignored(void)
{
    CU_ASSERT_EQUAL(choose("g@zip, br"), BR);
    CU_ASSERT_EQUAL(choose("gzip;level=9, br;q=0.1"), BR);
    CU_ASSERT_EQUAL(choose("gzip;q=0;q=1"), ID);
    CU_ASSERT_EQUAL(choose("\"gzip\", br"), BR);
    CU_ASSERT_EQUAL(choose(";q=1, gzip"), GZ);
    CU_ASSERT_EQUAL(choose("gzip;"), ID);
    CU_ASSERT_EQUAL(choose("gz ip"), ID);
    struct ct_ae ae;
    ct_ae_init(&ae);
    CU_ASSERT_EQUAL(ct_ae_add(&ae, CT_STR("g@zip, br;q=9, gzip")), 2);
    CU_ASSERT_EQUAL(ct_ae_add(&ae, CT_STR("zstd")), 0);
}

/* HAProxy #987: the second Accept-Encoding line was ignored, so a client
 * refusing br there got br. */
static void test_every_line(void)
{
    const char *refuse_br_later[] = {"br, gzip", "br;q=0", NULL};
    CU_ASSERT_EQUAL(choose_lines(refuse_br_later, NULL), GZ);
    const char *gzip_on_second[] = {"deflate", "gzip", NULL};
    CU_ASSERT_EQUAL(choose_lines(gzip_on_second, NULL), GZ);
    const char *empty_then_br[] = {"", "br", NULL};
    CU_ASSERT_EQUAL(choose_lines(empty_then_br, NULL), BR);
    /* a refusal is never overridden by a later, looser spelling */
    CU_ASSERT_EQUAL(choose("gzip;q=0, gzip"), ID);
    CU_ASSERT_EQUAL(choose("gzip, gzip;q=0"), ID);
    const char *twice[] = {"gzip", "x-gzip;q=0", NULL};
    CU_ASSERT_EQUAL(choose_lines(twice, NULL), ID);

    /* and through a message, as the proxy reads it */
    struct ct_http_field f[] = {
        {CT_STR("Accept-Encoding"), CT_STR("br, gzip"), CT_HDR_ACCEPT_ENCODING},
        {CT_STR("Host"), CT_STR("x"), CT_HDR_HOST},
        {CT_STR("accept-encoding"), CT_STR("br;q=0"), CT_HDR_ACCEPT_ENCODING},
    };
    struct ct_http_msg msg = {.kind = CT_HTTP_REQUEST};
    ct_http_msg_set_fields(&msg, f, CT_ARRAY_LEN(f));
    struct ct_ae ae;
    struct ct_ae_pref pref;
    ct_ae_init(&ae);
    ct_ae_pref_default(&pref);
    ct_ae_from_msg(&ae, &msg);
    CU_ASSERT_EQUAL(ct_ae_choose(&ae, &pref), GZ);
    CU_ASSERT_FALSE(ct_ae_accepts(&ae, CT_CODING_BR));
}

/* HAProxy #988: XORed CRC32s of the elements let crafted values collide
 * ("gzip, gzip" cancelled out). The class is computed, not hashed: every
 * spelling of one set of weights gives one class, and repeats change nothing. */
static void test_no_collisions(void)
{
    CU_ASSERT_EQUAL(choose("gzip, gzip"), GZ);
    CU_ASSERT_EQUAL(choose("br, gzip, gzip"), BR);
    CU_ASSERT_EQUAL(choose("br, br, gzip"), BR);
    CU_ASSERT_EQUAL(choose("gzip,br"), choose("br , gzip"));
    CU_ASSERT_EQUAL(choose("gzip, deflate"), choose("deflate, gzip"));
    CU_ASSERT_EQUAL(choose("gzip, deflate"), GZ);
    CU_ASSERT_EQUAL(choose("deflate, compress"), ID);
}

/* br never to a gzip-only client; gzip never to a client preferring br when
 * br is offered (ATS #7458 served a stored gzip variant to br clients: the
 * class depends on the request alone, so the store's order cannot matter). */
static void test_peer_wrong_encoding(void)
{
    CU_ASSERT_EQUAL(choose("gzip"), GZ);
    CU_ASSERT_EQUAL(choose("gzip, deflate"), GZ);
    CU_ASSERT_EQUAL(choose("gzip;q=0.8, br"), BR);
    CU_ASSERT_EQUAL(choose("gzip, br"), BR);
    CU_ASSERT_EQUAL(choose("br;q=0.9, gzip;q=0.8"), BR);
}

static void test_server_order(void)
{
    struct ct_ae_pref pref = {0};
    CU_ASSERT_EQUAL(ct_ae_pref_add(&pref, CT_CODING_GZIP), CT_OK);
    CU_ASSERT_EQUAL(ct_ae_pref_add(&pref, CT_CODING_BR), CT_OK);
    CU_ASSERT_EQUAL(ct_ae_pref_add(&pref, CT_CODING_GZIP), CT_ECONF);
    CU_ASSERT_EQUAL(ct_ae_pref_add(&pref, CT_CODING_NONE), CT_ECONF);
    const char *both[] = {"br, gzip, zstd", NULL};
    CU_ASSERT_EQUAL(choose_lines(both, &pref), GZ);
    const char *zstd_only[] = {"zstd", NULL}; /* not offered: identity */
    CU_ASSERT_EQUAL(choose_lines(zstd_only, &pref), ID);
    const char *zstd_no_id[] = {"zstd, identity;q=0", NULL};
    CU_ASSERT_EQUAL(choose_lines(zstd_no_id, &pref), NONE);
    /* identity listed first wins ties, never a higher weight */
    struct ct_ae_pref idfirst = {0};
    ct_ae_pref_add(&idfirst, CT_CODING_IDENTITY);
    ct_ae_pref_add(&idfirst, CT_CODING_GZIP);
    const char *star[] = {"*", NULL};
    CU_ASSERT_EQUAL(choose_lines(star, &idfirst), ID);
    const char *gz[] = {"gzip", NULL};
    CU_ASSERT_EQUAL(choose_lines(gz, &idfirst), GZ);
}

static void test_names(void)
{
    CU_ASSERT_STRING_EQUAL(ct_coding_name(CT_CODING_BR), "br");
    CU_ASSERT_STRING_EQUAL(ct_coding_name(CT_CODING_IDENTITY), "identity");
    CU_ASSERT_PTR_NULL(ct_coding_name(CT_CODING_NONE));
    CU_ASSERT_PTR_NULL(ct_coding_name(CT_CODING__COUNT));
    CU_ASSERT_EQUAL(ct_coding_lookup(CT_STR("ZStd")), CT_CODING_ZSTD);
    CU_ASSERT_EQUAL(ct_coding_lookup(CT_STR("deflate")), CT_CODING_OTHER);
    CU_ASSERT_EQUAL(ct_coding_lookup(CT_STR("gzi")), CT_CODING_OTHER);
}

static int coding_of(const char *a, const char *b)
{
    struct ct_http_field f[2] = {
        {CT_STR("Content-Encoding"), ct_str_c(a), CT_HDR_CONTENT_ENCODING},
        {CT_STR("Content-Encoding"), ct_str_c(b), CT_HDR_CONTENT_ENCODING},
    };
    struct ct_http_msg msg = {.kind = CT_HTTP_RESPONSE};
    ct_http_msg_set_fields(&msg, f, a ? (b ? 2 : 1) : 0);
    return ct_coding_of_msg(&msg);
}

static void test_content_encoding(void)
{
    CU_ASSERT_EQUAL(coding_of(NULL, NULL), ID);
    CU_ASSERT_EQUAL(coding_of("", NULL), ID);
    CU_ASSERT_EQUAL(coding_of("identity", NULL), ID);
    CU_ASSERT_EQUAL(coding_of("gzip", NULL), GZ);
    CU_ASSERT_EQUAL(coding_of("X-Gzip", NULL), GZ);
    CU_ASSERT_EQUAL(coding_of("br", NULL), BR);
    CU_ASSERT_EQUAL(coding_of("identity, zstd", NULL), ZS);
    CU_ASSERT_EQUAL(coding_of("deflate", NULL), CT_CODING_OTHER);
    CU_ASSERT_EQUAL(coding_of("gzip, br", NULL), CT_CODING_OTHER);
    CU_ASSERT_EQUAL(coding_of("gzip", "gzip"), CT_CODING_OTHER); /* applied twice */
    CU_ASSERT_EQUAL(coding_of("gzip;q=1", NULL), CT_CODING_OTHER);
}

/* ---- what to compress, and the head stored ----------------------------- */

#define F(name, value, id) {CT_STR(name), CT_STR(value), CT_HDR_##id}

static struct ct_http_msg resp_of(const struct ct_http_field *f, size_t n, unsigned status)
{
    struct ct_http_msg m = {.kind = CT_HTTP_RESPONSE, .status = status, .version = 11,
                            .framing = CT_FRAME_LENGTH, .content_length = 5000};
    ct_http_msg_set_fields(&m, f, n);
    return m;
}

static void test_should_encode(void)
{
    struct ct_http_field f[] = {F("Content-Type", "application/json", CONTENT_TYPE),
                                F("Cache-Control", "max-age=60", CACHE_CONTROL)};
    struct ct_http_msg m = resp_of(f, 2, 200);
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, true, 256), CT_CE_YES);
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_HEAD, true, 256), CT_CE_METHOD);
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, false, 256), CT_CE_TYPE);
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, true, 5001), CT_CE_SMALL);
    m.framing = CT_FRAME_CHUNKED; /* unknown length: compressed */
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, true, 1 << 30), CT_CE_YES);
    unsigned no[] = {206, 304, 204, 500, 301};
    for (size_t i = 0; i < CT_ARRAY_LEN(no); i++) {
        m = resp_of(f, 2, no[i]);
        CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, true, 256), CT_CE_STATUS);
    }
    m = resp_of(f, 2, 404);
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, true, 256), CT_CE_YES);

    struct ct_http_field nt[] = {F("Content-Type", "text/html", CONTENT_TYPE),
                                 F("Cache-Control", "public, No-Transform", CACHE_CONTROL)};
    m = resp_of(nt, 2, 200);
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, true, 256), CT_CE_NO_TRANSFORM);
    struct ct_http_field enc[] = {F("Content-Type", "text/html", CONTENT_TYPE),
                                  F("Content-Encoding", "gzip", CONTENT_ENCODING)};
    m = resp_of(enc, 2, 200);
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, true, 256), CT_CE_ENCODED);
    struct ct_http_field ident[] = {F("Content-Type", "text/html", CONTENT_TYPE),
                                    F("Content-Encoding", "identity", CONTENT_ENCODING)};
    m = resp_of(ident, 2, 200);
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, true, 256), CT_CE_YES);
    m = resp_of(f + 1, 1, 200); /* no Content-Type at all */
    CU_ASSERT_EQUAL(ct_ce_should_encode(&m, CT_METHOD_GET, true, 256), CT_CE_TYPE);
    CU_ASSERT_STRING_EQUAL(ct_ce_skip_name(CT_CE_NO_TRANSFORM), "no-transform");
}

static const char *value_of(const struct ct_http_msg *m, enum ct_hdr_id id, char *buf)
{
    const struct ct_http_field *f = ct_http_msg_find(m, id, NULL);
    if (!f)
        return NULL;
    snprintf(buf, 128, "%.*s", (int)f->value.len, f->value.p);
    return buf;
}

static int count_of(const struct ct_http_msg *m, enum ct_hdr_id id)
{
    int n = 0;
    for (const struct ct_http_field *f = ct_http_msg_find(m, id, NULL); f;
         f = ct_http_msg_find(m, id, f))
        n++;
    return n;
}

static void test_encoded_head(void)
{
    char b[128];
    struct ct_http_field f[] = {F("Content-Type", "application/json", CONTENT_TYPE),
                                F("Content-Length", "5000", CONTENT_LENGTH),
                                F("ETag", "\"v1\"", ETAG), F("Vary", "Cookie", VARY),
                                F("X-Other", "kept", UNKNOWN)};
    struct ct_http_msg m = resp_of(f, CT_ARRAY_LEN(f), 200);
    struct ct_ce_head *h = ct_ce_head_new(&m, CT_CODING_BR, true);
    CU_ASSERT_STRING_EQUAL(value_of(&h->msg, CT_HDR_CONTENT_ENCODING, b), "br");
    CU_ASSERT_STRING_EQUAL(value_of(&h->msg, CT_HDR_ETAG, b), "W/\"v1\"");
    CU_ASSERT_PTR_NULL(value_of(&h->msg, CT_HDR_CONTENT_LENGTH, b));
    CU_ASSERT_TRUE(ct_http_msg_has_token(&h->msg, CT_HDR_VARY, CT_STR("Accept-Encoding")));
    CU_ASSERT_TRUE(ct_http_msg_has_token(&h->msg, CT_HDR_VARY, CT_STR("cookie")));
    CU_ASSERT_PTR_NOT_NULL(ct_http_msg_find_name(&h->msg, CT_STR("x-other"), NULL));
    CU_ASSERT_EQUAL(h->msg.framing, CT_FRAME_CHUNKED);
    CU_ASSERT_EQUAL(h->msg.status, 200);
    CU_ASSERT_EQUAL(ct_coding_of_msg(&h->msg), CT_CODING_BR);
    ct_ce_head_free(&h);
    CU_ASSERT_PTR_NULL(h);

    /* decoded for an identity client: no Content-Encoding; Vary already
     * names Accept-Encoding (once), a weak ETag stays */
    struct ct_http_field g[] = {F("Content-Type", "text/html", CONTENT_TYPE),
                                F("Content-Encoding", "gzip", CONTENT_ENCODING),
                                F("ETag", "W/\"x\"", ETAG),
                                F("Vary", "accept-encoding", VARY)};
    m = resp_of(g, CT_ARRAY_LEN(g), 200);
    h = ct_ce_head_new(&m, CT_CODING_IDENTITY, true);
    CU_ASSERT_PTR_NULL(value_of(&h->msg, CT_HDR_CONTENT_ENCODING, b));
    CU_ASSERT_STRING_EQUAL(value_of(&h->msg, CT_HDR_ETAG, b), "W/\"x\"");
    CU_ASSERT_EQUAL(count_of(&h->msg, CT_HDR_VARY), 1);
    CU_ASSERT_EQUAL(ct_coding_of_msg(&h->msg), CT_CODING_IDENTITY);
    ct_ce_head_free(&h);

    /* Vary: * stays alone; no ETag, none made */
    struct ct_http_field s[] = {F("Vary", "*", VARY)};
    m = resp_of(s, 1, 200);
    h = ct_ce_head_new(&m, CT_CODING_ZSTD, true);
    CU_ASSERT_EQUAL(count_of(&h->msg, CT_HDR_VARY), 1);
    CU_ASSERT_PTR_NULL(value_of(&h->msg, CT_HDR_ETAG, b));
    CU_ASSERT_EQUAL(h->msg.nfields, 2);
    ct_ce_head_free(&h);
    ct_ce_head_free(&h);

    /* unchanged identity, of a type compressed for others: only Vary */
    m = resp_of(f, CT_ARRAY_LEN(f), 200);
    h = ct_ce_head_new(&m, CT_CODING_IDENTITY, false);
    CU_ASSERT_STRING_EQUAL(value_of(&h->msg, CT_HDR_ETAG, b), "\"v1\"");
    CU_ASSERT_STRING_EQUAL(value_of(&h->msg, CT_HDR_CONTENT_LENGTH, b), "5000");
    CU_ASSERT_EQUAL(h->msg.framing, CT_FRAME_LENGTH);
    CU_ASSERT_EQUAL(h->msg.content_length, 5000);
    CU_ASSERT_TRUE(ct_http_msg_has_token(&h->msg, CT_HDR_VARY, CT_STR("accept-encoding")));
    ct_ce_head_free(&h);
}

void ct_test_register(void)
{
    CT_SUITE("accept-encoding", {"one coding each", test_basic},
             {"absent and empty", test_absent_and_empty}, {"qvalues", test_qvalues},
             {"identity refused: 406", test_identity_refused}, {"star", test_star},
             {"case and x-gzip", test_case_and_aliases},
             {"malformed elements ignored", test_malformed_ignored},
             {"every field line (HAProxy #987)", test_every_line},
             {"no collisions (HAProxy #988)", test_no_collisions},
             {"right coding (HAProxy #987, ATS #7458)", test_peer_wrong_encoding},
             {"server order", test_server_order}, {"coding names", test_names});
    CT_SUITE("content-encoding", {"the coding of a response", test_content_encoding},
             {"what a cache compresses", test_should_encode},
             {"the head it stores", test_encoded_head});
}
