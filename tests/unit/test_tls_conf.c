/* tests/unit/test_tls_conf.c: ct_tls_ctx_from_conf(), from configurations
 * loaded by conf/ (embedded default, and a file with SNI certificates and
 * client verification). Built only when conf/ is. */
#include "conf/conf.h"
#include "tests/unit/test_tls_util.h"

static struct ct_tls_ctx *from_text(const char *text, struct ct_tls_shared *sh)
{
    struct ct_conf *cf = NULL;
    struct ct_conf_errors errs;
    ct_conf_errors_init(&errs);
    if (ct_conf_load_string(text, "test.conf", &cf, &errs) != CT_OK) {
        ct_conf_errors_print(&errs, stderr);
        CU_FAIL_FATAL("config rejected");
    }
    struct ct_tls_ctx *lc = NULL;
    char err[512] = "";
    for (size_t i = 0; i < cf->nlisteners && lc == NULL; i++)
        if (cf->listeners[i].kind == CT_CONF_LISTEN_HTTPS)
            lc = ct_tls_ctx_from_conf(&cf->listeners[i].tls, sh, err, sizeof(err));
    if (lc == NULL)
        fprintf(stderr, "ct_tls_ctx_from_conf: %s\n", err);
    ct_conf_free(&cf); /* the context keeps nothing of it */
    return lc;
}

static void test_embedded_default(void)
{
    struct ct_conf *cf = NULL;
    CU_ASSERT_FATAL(ct_conf_default(&cf) == CT_OK);
    const struct ct_conf_tls *t = NULL;
    for (size_t i = 0; i < cf->nlisteners; i++)
        if (cf->listeners[i].kind == CT_CONF_LISTEN_HTTPS)
            t = &cf->listeners[i].tls;
    CU_ASSERT_FATAL(t != NULL);
    char err[256];
    struct ct_tls_ctx *lc = ct_tls_ctx_from_conf(t, NULL, err, sizeof(err));
    CU_ASSERT_FATAL(lc != NULL);
    CU_ASSERT_PTR_NOT_NULL(ct_tls_ctx_selfsigned_note(lc));
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    char cn[64];
    CU_ASSERT(tt_handshake(cctx, lc, NULL, NULL, NULL, NULL, cn, sizeof(cn)) == 1);
    CU_ASSERT_STRING_EQUAL(cn, "localhost");
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);
    ct_conf_free(&cf);
}

static void test_sni_and_mtls(void)
{
    struct tt_pki ca = tt_make("EC", "conf CA", NULL, true, NULL);
    struct tt_pki a = tt_make("EC", "a.test", "DNS:a.test", false, &ca);
    struct tt_pki b = tt_make("EC", "b.test", "DNS:b.test", false, &ca);
    struct tt_pki alice = tt_make("EC", "alice", NULL, false, &ca);
    tt_write("a", &a, NULL);
    tt_write("b", &b, NULL);
    tt_write("ca", &ca, NULL);
    char text[2048];
    snprintf(text, sizeof(text),
             "listen = ( { kind = \"https\"; address = \"127.0.0.1:0\"; tls = {\n"
             "  certificates = ( { cert = \"%s\"; key = \"%s\"; },\n"
             "                   { cert = \"%s\"; key = \"%s\"; server_names = [\"*.b.test\"];"
             " default = true; } );\n"
             "  min_version = \"1.3\"; session_tickets = false;\n"
             "  client_ca = \"%s\"; client_verify = \"required\"; }; } );\n"
             "backends = ( { address = \"127.0.0.1:8081\"; } );\n",
             tt_path("a.crt"), tt_path("a.key"), tt_path("b.crt"), tt_path("b.key"),
             tt_path("ca.crt"));
    struct ct_tls_ctx *lc = from_text(text, NULL);
    CU_ASSERT_FATAL(lc != NULL);
    const char *d = ct_tls_ctx_describe(lc);
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "TLSv1.3+, tickets off, session cache 20480"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "client certificates required"));
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    char cn[64];
    CU_ASSERT_EQUAL(tt_handshake(cctx, lc, "a.test", NULL, NULL, NULL, cn, sizeof(cn)), 0);
    SSL_CTX_use_certificate(cctx, alice.x);
    SSL_CTX_use_PrivateKey(cctx, alice.key);
    CU_ASSERT_FATAL(tt_handshake(cctx, lc, "a.test", NULL, NULL, NULL, cn, sizeof(cn)) == 1);
    CU_ASSERT_STRING_EQUAL(cn, "a.test");
    CU_ASSERT(tt_handshake(cctx, lc, "x.b.test", NULL, NULL, NULL, cn, sizeof(cn)) == 1);
    CU_ASSERT_STRING_EQUAL(cn, "b.test"); /* names from the config, not the SAN */
    CU_ASSERT(tt_handshake(cctx, lc, NULL, NULL, NULL, NULL, cn, sizeof(cn)) == 1);
    CU_ASSERT_STRING_EQUAL(cn, "b.test"); /* the marked default */
    SSL_CTX_free(cctx);
    cctx = tt_client_ctx(TLS1_2_VERSION, TLS1_2_VERSION);
    CU_ASSERT_EQUAL(tt_handshake(cctx, lc, "a.test", NULL, NULL, NULL, NULL, 0), 0);
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);
    tt_pki_free(&ca);
    tt_pki_free(&a);
    tt_pki_free(&b);
    tt_pki_free(&alice);
    tt_cleanup_dir();
}

void ct_test_register(void)
{
    CT_SUITE("tls conf", {"embedded default listener", test_embedded_default},
             {"SNI certificates, TLS 1.3 only, mTLS from a file", test_sni_and_mtls});
}
