/*
 * tests/unit/test_acme.c: the ACME client's pure parts (proxy/acme/acme.h):
 * base64url, the JWK in RFC 7638's canonical form, a JWS whose ES256
 * signature verifies with the account key (r||s, not DER), the CSR, and the
 * parsing of the CA's JSON, garbage included.
 */
#include <json-c/json.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/acme/acme.h"
#include "tests/unit/ct_test.h"

/* base64url (no padding) back to bytes; returns the length. */
static size_t unb64url(const char *in, unsigned char *out, size_t cap)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned v = 0, bits = 0;
    size_t n = 0;
    for (; *in; in++) {
        const char *p = strchr(tbl, *in);
        if (p == NULL)
            return 0;
        v = v << 6 | (unsigned)(p - tbl);
        bits += 6;
        if (bits >= 8 && n < cap) {
            bits -= 8;
            out[n++] = (unsigned char)(v >> bits);
        }
    }
    return n;
}

static void test_b64url(void)
{
    const struct {
        const char *in, *out;
    } v[] = {{"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"foob", "Zm9vYg"},
             {"\xfb\xff", "-_8"}};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char *s = ct_acme_b64url((const unsigned char *)v[i].in, strlen(v[i].in));
        CU_ASSERT_STRING_EQUAL(s, v[i].out);
        free(s);
    }
}

static void test_jwk_canonical(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    char *jwk = ct_acme_jwk(k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(jwk);
    /* RFC 7638 §3.2: crv, kty, x, y in that order, no whitespace, 32-byte
     * coordinates (43 base64url characters) */
    CU_ASSERT_EQUAL(strncmp(jwk, "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"", 31), 0);
    CU_ASSERT_PTR_NULL(strchr(jwk, ' '));
    json_object *o = json_tokener_parse(jwk), *x, *y;
    CU_ASSERT_TRUE(json_object_object_get_ex(o, "x", &x) && json_object_object_get_ex(o, "y", &y));
    CU_ASSERT_EQUAL(json_object_get_string_len(x), 43);
    CU_ASSERT_EQUAL(json_object_get_string_len(y), 43);
    json_object_put(o);
    char *tp = ct_acme_thumbprint(jwk);
    CU_ASSERT_EQUAL(strlen(tp), 43); /* SHA-256 */
    char *ka = ct_acme_keyauth("tok_EN-123456789012", tp);
    CU_ASSERT_EQUAL(strncmp(ka, "tok_EN-123456789012.", 20), 0);
    CU_ASSERT_STRING_EQUAL(ka + 20, tp);
    free(ka);
    free(tp);
    free(jwk);
    EVP_PKEY_free(k);
}

/* The JWS's signature, made r||s, verifies with KEY over protected.payload. */
static void test_jws_verifies(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    char *jwk = ct_acme_jwk(k);
    const char *kids[] = {NULL, "https://ca.example/acct/1"};
    for (int i = 0; i < 2; i++) {
        char *jws = ct_acme_jws(k, jwk, kids[i], "NONCE_1", "https://ca.example/new-order",
                                i ? "" : "{\"a\":1}");
        CU_ASSERT_PTR_NOT_NULL_FATAL(jws);
        json_object *o = json_tokener_parse(jws), *p, *pl, *sg;
        CU_ASSERT_TRUE_FATAL(json_object_object_get_ex(o, "protected", &p) &&
                             json_object_object_get_ex(o, "payload", &pl) &&
                             json_object_object_get_ex(o, "signature", &sg));
        unsigned char hdr[1024], raw[80];
        size_t hn = unb64url(json_object_get_string(p), hdr, sizeof(hdr) - 1);
        hdr[hn] = '\0';
        CU_ASSERT_PTR_NOT_NULL(strstr((char *)hdr, "\"alg\":\"ES256\""));
        CU_ASSERT_PTR_NOT_NULL(strstr((char *)hdr, "\"nonce\":\"NONCE_1\""));
        CU_ASSERT_PTR_NOT_NULL(strstr((char *)hdr, "\"url\":\"https://ca.example/new-order\""));
        CU_ASSERT_PTR_NOT_NULL(strstr((char *)hdr, i ? "\"kid\":\"https://ca.example/acct/1\""
                                                     : "\"jwk\":{\"crv\":\"P-256\""));
        CU_ASSERT_EQUAL(strlen(json_object_get_string(pl)), i ? 0 : 10); /* POST-as-GET: "" */
        CU_ASSERT_EQUAL(unb64url(json_object_get_string(sg), raw, sizeof(raw)), 64);
        ECDSA_SIG *sig = ECDSA_SIG_new();
        ECDSA_SIG_set0(sig, BN_bin2bn(raw, 32, NULL), BN_bin2bn(raw + 32, 32, NULL));
        unsigned char *der = NULL;
        int dlen = i2d_ECDSA_SIG(sig, &der);
        char signing[2048];
        snprintf(signing, sizeof(signing), "%s.%s", json_object_get_string(p),
                 json_object_get_string(pl));
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        CU_ASSERT_EQUAL(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k), 1);
        CU_ASSERT_EQUAL(EVP_DigestVerify(md, der, (size_t)dlen, (unsigned char *)signing,
                                         strlen(signing)), 1);
        EVP_MD_CTX_free(md);
        OPENSSL_free(der);
        ECDSA_SIG_free(sig);
        json_object_put(o);
        free(jws);
    }
    free(jwk);
    EVP_PKEY_free(k);
}

static void test_csr(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    char *csr = ct_acme_csr(k, "www.example.com");
    CU_ASSERT_PTR_NOT_NULL_FATAL(csr);
    unsigned char der[2048];
    size_t n = unb64url(csr, der, sizeof(der));
    const unsigned char *p = der;
    X509_REQ *req = d2i_X509_REQ(NULL, &p, (long)n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_EQUAL(X509_REQ_verify(req, k), 1);
    STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(req);
    GENERAL_NAMES *gens = X509V3_get_d2i(exts, NID_subject_alt_name, NULL, NULL);
    CU_ASSERT_EQUAL_FATAL(sk_GENERAL_NAME_num(gens), 1);
    const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, 0);
    CU_ASSERT_EQUAL(g->type, GEN_DNS);
    CU_ASSERT_STRING_EQUAL((const char *)ASN1_STRING_get0_data(g->d.dNSName), "www.example.com");
    GENERAL_NAMES_free(gens);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    X509_REQ_free(req);
    free(csr);
    EVP_PKEY_free(k);
}

#define S(lit) lit, sizeof(lit) - 1

static void test_parse_directory(void)
{
    struct ct_acme_directory d;
    char err[128];
    CU_ASSERT_EQUAL(ct_acme_parse_directory(S("{\"newNonce\":\"https://x/n\",\"newAccount\":"
                                              "\"https://x/a\",\"newOrder\":\"https://x/o\","
                                              "\"meta\":{\"termsOfService\":\"https://x/t\"}}"),
                                            &d, err, sizeof(err)),
                    CT_OK);
    CU_ASSERT_STRING_EQUAL(d.new_order, "https://x/o");
    CU_ASSERT_STRING_EQUAL(d.terms, "https://x/t");
    ct_acme_directory_free(&d);
    CU_ASSERT_EQUAL(ct_acme_parse_directory(S("{\"newNonce\":\"https://x/n\"}"), &d, err,
                                            sizeof(err)),
                    CT_EPROTO);
    CU_ASSERT_STRING_EQUAL(err, "the directory lacks newNonce, newAccount or newOrder");
    CU_ASSERT_PTR_NULL(d.new_nonce);
    const char *bad[] = {"", "[]", "\"s\"", "{\"newNonce\":1}", "{", "<html>", "{\"a\":\"\\u0000\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_EQUAL(ct_acme_parse_directory(bad[i], strlen(bad[i]), &d, err, sizeof(err)),
                        CT_EPROTO);
}

static void test_parse_order_authz(void)
{
    struct ct_acme_order od;
    char err[128];
    CU_ASSERT_EQUAL(ct_acme_parse_order(S("{\"status\":\"pending\",\"authorizations\":["
                                          "\"https://x/az/1\"],\"finalize\":\"https://x/f\"}"),
                                        &od, err, sizeof(err)),
                    CT_OK);
    CU_ASSERT_EQUAL(od.status, CT_ACME_PENDING);
    CU_ASSERT_EQUAL(od.nauthz, 1);
    CU_ASSERT_PTR_NULL(od.certificate);
    ct_acme_order_free(&od);
    CU_ASSERT_EQUAL(ct_acme_parse_order(S("{\"status\":\"invalid\",\"authorizations\":[],"
                                          "\"finalize\":\"f\",\"error\":{\"type\":"
                                          "\"urn:ietf:params:acme:error:unauthorized\","
                                          "\"detail\":\"no\"}}"),
                                        &od, err, sizeof(err)),
                    CT_OK);
    CU_ASSERT_EQUAL(od.status, CT_ACME_INVALID);
    CU_ASSERT_STRING_EQUAL(od.error.type, "urn:ietf:params:acme:error:unauthorized");
    ct_acme_order_free(&od);
    CU_ASSERT_EQUAL(ct_acme_parse_order(S("{\"status\":\"pending\",\"authorizations\":[1],"
                                          "\"finalize\":\"f\"}"),
                                        &od, err, sizeof(err)),
                    CT_EPROTO);

    struct ct_acme_authz az;
    CU_ASSERT_EQUAL(
        ct_acme_parse_authz(S("{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\","
                              "\"value\":\"a.example\"},\"challenges\":[{\"type\":\"http-01\","
                              "\"url\":\"https://x/c/1\",\"token\":\"abcdefghijklmnopqrstuv\","
                              "\"status\":\"pending\"},{\"type\":\"dns-01\"},7,{\"type\":"
                              "\"tls-alpn-01\",\"url\":\"https://x/c/2\",\"token\":\"t\","
                              "\"status\":\"invalid\",\"error\":{\"type\":\"urn:x\"}}]}"),
                            &az, err, sizeof(err)),
        CT_OK);
    CU_ASSERT_STRING_EQUAL(az.name, "a.example");
    CU_ASSERT_EQUAL(az.nchal, 2); /* the one without a URL and the number are skipped */
    CU_ASSERT_STRING_EQUAL(az.chal[1].type, "tls-alpn-01");
    CU_ASSERT_STRING_EQUAL(az.chal[1].error.type, "urn:x");
    CU_ASSERT_TRUE(ct_acme_token_ok(az.chal[0].token));
    CU_ASSERT_FALSE(ct_acme_token_ok(az.chal[1].token)); /* too short */
    ct_acme_authz_free(&az);
}

static void test_problem_and_tokens(void)
{
    struct ct_acme_problem p;
    CU_ASSERT_TRUE(ct_acme_parse_problem(
        S("{\"type\":\"urn:ietf:params:acme:error:badNonce\",\"detail\":\"JWS has an invalid "
          "anti-replay nonce\",\"status\":400}"),
        &p));
    CU_ASSERT_STRING_EQUAL(p.type, "urn:ietf:params:acme:error:badNonce");
    ct_acme_problem_free(&p);
    CU_ASSERT_FALSE(ct_acme_parse_problem(S("{\"detail\":\"no type\"}"), &p));
    CU_ASSERT_FALSE(ct_acme_parse_problem(S("Service Unavailable"), &p));
    CU_ASSERT_FALSE(ct_acme_token_ok("../../../../etc/passwd____"));
    CU_ASSERT_FALSE(ct_acme_token_ok("abcdefghijklmnop/q"));
    CU_ASSERT_FALSE(ct_acme_token_ok(NULL));
    CU_ASSERT_TRUE(ct_acme_token_ok("LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"));
}

void ct_test_register(void)
{
    CT_SUITE("acme", {"base64url", test_b64url}, {"JWK canonical, thumbprint", test_jwk_canonical},
             {"JWS ES256 r||s verifies", test_jws_verifies}, {"CSR", test_csr},
             {"directory", test_parse_directory}, {"orders and authorizations", test_parse_order_authz},
             {"problems and tokens", test_problem_and_tokens});
}
