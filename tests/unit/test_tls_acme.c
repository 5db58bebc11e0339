/*
 * tests/unit/test_tls_acme.c: tls/'s side of ACME (tls_acme.c and the ACME
 * slots of tls_ctx.c), in memory: the placeholder before the first
 * certificate, a certificate installed for new handshakes (a wrong one
 * refused), TLS-ALPN-01's validation certificate (RFC 8737: one SAN, the
 * critical acmeIdentifier holding SHA-256 of the key authorization) given
 * only to a ClientHello offering exactly acme-tls/1, and the HTTP-01 store.
 */
#include <openssl/sha.h>

#include "tests/unit/test_tls_util.h"

static const char *const names[] = {"a.test", "b.test"};

static struct ct_tls_ctx *acme_ctx(void)
{
    struct ct_tls_listener_conf cf = {.acme_names = names, .nacme = 2};
    char err[256];
    struct ct_tls_ctx *lc = ct_tls_ctx_new(&cf, NULL, err, sizeof(err));
    if (lc == NULL)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lc);
    return lc;
}

/* The server certificate a client gets for SNI with ALPN offer ALPN (wire
 * format, NULL: none); NULL when the handshake fails. *SEL: the protocol
 * ALPN chose. */
static X509 *peer_cert(struct ct_tls_ctx *lc, const char *sni, const char *alpn, size_t alen,
                       char *sel, size_t sellen)
{
    SSL_CTX *cctx = tt_client_ctx(TLS1_2_VERSION, TLS1_3_VERSION);
    struct tt_conn t = tt_pair(cctx, lc, sni);
    if (alpn)
        SSL_set_alpn_protos(t.c, (const unsigned char *)alpn, (unsigned)alen);
    X509 *x = NULL;
    if (tt_drive(&t)) {
        x = SSL_get1_peer_certificate(t.c);
        const unsigned char *p;
        unsigned n = 0;
        SSL_get0_alpn_selected(t.c, &p, &n);
        snprintf(sel, sellen, "%.*s", (int)n, n ? (const char *)p : "");
        CU_ASSERT_EQUAL(ct_tls_alpn_is_acme(t.s), n == 10 && memcmp(p, "acme-tls/1", 10) == 0);
    }
    tt_close(&t);
    SSL_CTX_free(cctx);
    return x;
}

static char *pem_of(X509 *x, EVP_PKEY *k, size_t *len)
{
    BIO *b = BIO_new(BIO_s_mem());
    CU_ASSERT_FATAL(x ? PEM_write_bio_X509(b, x) : PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0,
                                                                           NULL, NULL));
    char *p;
    *len = (size_t)BIO_get_mem_data(b, &p);
    char *out = malloc(*len + 1);
    memcpy(out, p, *len);
    out[*len] = '\0';
    BIO_free(b);
    return out;
}

static bool issued_by(X509 *x, const char *cn)
{
    char buf[128] = "";
    X509_NAME_get_text_by_NID(X509_get_issuer_name(x), NID_commonName, buf, sizeof(buf));
    return strcmp(buf, cn) == 0;
}

static void test_placeholder_then_install(void)
{
    struct ct_tls_ctx *lc = acme_ctx();
    CU_ASSERT_TRUE(ct_tls_ctx_has_acme(lc, "A.TEST"));
    CU_ASSERT_FALSE(ct_tls_ctx_has_acme(lc, "c.test"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ct_tls_ctx_selfsigned_note(lc), "ACME: until the CA issues"));
    char sel[32];
    X509 *x = peer_cert(lc, "b.test", NULL, 0, sel, sizeof(sel));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(X509_check_host(x, "b.test", 0, 0, NULL), 1); /* placeholder covers b */
    CU_ASSERT_TRUE(issued_by(x, "a.test"));                         /* self-signed */
    X509_free(x);

    struct tt_pki ca = tt_make("EC", "acme CA", NULL, true, NULL);
    struct tt_pki a = tt_make("EC", "a.test", "DNS:a.test", false, &ca);
    size_t cl, kl, cal;
    char *c = pem_of(a.x, NULL, &cl), *k = pem_of(NULL, a.key, &kl), *cap = pem_of(ca.x, NULL, &cal);
    char *chain = malloc(cl + cal + 1);
    memcpy(chain, c, cl);
    memcpy(chain + cl, cap, cal + 1);
    char err[256];
    CU_ASSERT_EQUAL(ct_tls_ctx_acme_install(lc, "a.test", chain, cl + cal, k, kl, err, sizeof(err)),
                    CT_OK);
    x = peer_cert(lc, "a.test", NULL, 0, sel, sizeof(sel));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_TRUE(issued_by(x, "acme CA"));
    X509_free(x);
    x = peer_cert(lc, "b.test", NULL, 0, sel, sizeof(sel));
    CU_ASSERT_TRUE(x && issued_by(x, "a.test")); /* b.test still on the placeholder */
    X509_free(x);
    /* refused: a certificate not for the name, a name without a slot, a wrong key */
    CU_ASSERT_EQUAL(ct_tls_ctx_acme_install(lc, "b.test", c, cl, k, kl, err, sizeof(err)),
                    CT_ECONF);
    CU_ASSERT_STRING_EQUAL(err, "the certificate is not for b.test");
    CU_ASSERT_EQUAL(ct_tls_ctx_acme_install(lc, "c.test", c, cl, k, kl, err, sizeof(err)),
                    CT_ENOENT);
    size_t kl2;
    char *k2 = pem_of(NULL, ca.key, &kl2);
    CU_ASSERT_EQUAL(ct_tls_ctx_acme_install(lc, "a.test", c, cl, k2, kl2, err, sizeof(err)),
                    CT_ECONF);
    CU_ASSERT_EQUAL(ct_tls_ctx_acme_install(lc, "a.test", "garbage", 7, k, kl, err, sizeof(err)),
                    CT_ECONF);
    x = peer_cert(lc, "a.test", NULL, 0, sel, sizeof(sel));
    CU_ASSERT_TRUE(x && issued_by(x, "acme CA")); /* the refusals changed nothing */
    X509_free(x);
    free(c), free(k), free(k2), free(cap), free(chain);
    tt_pki_free(&a);
    tt_pki_free(&ca);
    ct_tls_ctx_free(&lc);
}

static void test_tls_alpn_01(void)
{
    struct ct_tls_ctx *lc = acme_ctx();
    struct ct_tls_chal *ch = ct_tls_chal_new();
    ct_tls_ctx_set_chal(lc, ch);
    char err[256], sel[32];
    CU_ASSERT_EQUAL(ct_tls_chal_alpn_set(ch, "a.test", "tok.thumb", err, sizeof(err)), CT_OK);
    static const char only[] = "\x0a" "acme-tls/1";
    static const char both[] = "\x0a" "acme-tls/1" "\x08" "http/1.1";
    X509 *x = peer_cert(lc, "a.test", only, sizeof(only) - 1, sel, sizeof(sel));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_STRING_EQUAL(sel, "acme-tls/1");
    ASN1_OBJECT *acme_id = OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1);
    int i = X509_get_ext_by_OBJ(x, acme_id, -1);
    CU_ASSERT_FATAL(i >= 0);
    X509_EXTENSION *e = X509_get_ext(x, i);
    CU_ASSERT_TRUE(X509_EXTENSION_get_critical(e));
    const ASN1_OCTET_STRING *v = X509_EXTENSION_get_data(e);
    unsigned char want[34] = {0x04, 0x20};
    SHA256((const unsigned char *)"tok.thumb", 9, want + 2);
    CU_ASSERT_EQUAL(ASN1_STRING_length(v), 34);
    CU_ASSERT_EQUAL(memcmp(ASN1_STRING_get0_data(v), want, 34), 0);
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    CU_ASSERT_EQUAL(sk_GENERAL_NAME_num(gens), 1);
    GENERAL_NAMES_free(gens);
    X509_free(x);
    /* a normal client offering acme-tls/1 among others is a normal client */
    x = peer_cert(lc, "a.test", both, sizeof(both) - 1, sel, sizeof(sel));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_STRING_EQUAL(sel, "http/1.1");
    CU_ASSERT_TRUE(X509_get_ext_by_OBJ(x, acme_id, -1) < 0);
    ASN1_OBJECT_free(acme_id);
    X509_free(x);
    /* no challenge for b.test, or withdrawn for a.test: the validation fails */
    CU_ASSERT_PTR_NULL(peer_cert(lc, "b.test", only, sizeof(only) - 1, sel, sizeof(sel)));
    ct_tls_chal_alpn_del(ch, "a.test");
    CU_ASSERT_PTR_NULL(peer_cert(lc, "a.test", only, sizeof(only) - 1, sel, sizeof(sel)));
    ct_tls_ctx_free(&lc);
    ct_tls_chal_free(&ch);
}

static void test_http_01_store(void)
{
    struct ct_tls_chal *ch = ct_tls_chal_new();
    char out[64];
    ct_tls_chal_http_set(ch, "tokenAAAAAAAAAAAAAAA", "tokenAAAAAAAAAAAAAAA.thumb");
    CU_ASSERT_EQUAL(ct_tls_chal_http_get(ch, "tokenAAAAAAAAAAAAAAA", 20, out, sizeof(out)), 26);
    CU_ASSERT_STRING_EQUAL(out, "tokenAAAAAAAAAAAAAAA.thumb");
    CU_ASSERT_EQUAL(ct_tls_chal_http_get(ch, "tokenAAAAAAAAAAAAAAA", 19, out, sizeof(out)), 0);
    CU_ASSERT_EQUAL(ct_tls_chal_http_get(ch, "tokenAAAAAAAAAAAAAAA", 20, out, 10), 0); /* no room */
    ct_tls_chal_http_del(ch, "tokenAAAAAAAAAAAAAAA");
    CU_ASSERT_EQUAL(ct_tls_chal_http_get(ch, "tokenAAAAAAAAAAAAAAA", 20, out, sizeof(out)), 0);
    ct_tls_chal_free(&ch);
}

void ct_test_register(void)
{
    CT_SUITE("tls acme", {"placeholder, then an installed certificate", test_placeholder_then_install},
             {"TLS-ALPN-01 validation certificate", test_tls_alpn_01},
             {"HTTP-01 store", test_http_01_store});
}
