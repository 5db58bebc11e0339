/* tests/unit/test_tls.c: tls/tls.h, every behaviour through in-memory
 * handshakes (see test_tls_util.h). */
#include <sys/socket.h>

#include "tests/unit/test_tls_util.h"

/* The PKI every test uses, made once. */
static struct {
    bool made;
    struct tt_pki ca, other_ca, def, www, wild, dual_ec, dual_rsa, alice, mallory;
} pki;

static void fixture(void)
{
    if (pki.made)
        return;
    pki.ca = tt_make("EC", "cachet test CA", NULL, true, NULL);
    pki.other_ca = tt_make("EC", "other CA", NULL, true, NULL);
    pki.def = tt_make("EC", "default.test", "DNS:default.test", false, &pki.ca);
    pki.www =
        tt_make("EC", "www.example.com", "DNS:www.example.com,DNS:example.com", false, &pki.ca);
    pki.wild = tt_make("EC", "*.wild.test", "DNS:*.wild.test", false, &pki.ca);
    pki.dual_ec = tt_make("EC", "dual ecdsa", "DNS:dual.test", false, &pki.ca);
    pki.dual_rsa = tt_make("RSA", "dual rsa", "DNS:dual.test", false, &pki.ca);
    pki.alice = tt_make("EC", "alice", NULL, false, &pki.ca);
    pki.mallory = tt_make("EC", "mallory", NULL, false, &pki.other_ca);
    tt_write("def", &pki.def, pki.ca.x);
    tt_write("www", &pki.www, NULL);
    tt_write("wild", &pki.wild, NULL);
    tt_write("dual_ec", &pki.dual_ec, NULL);
    tt_write("dual_rsa", &pki.dual_rsa, NULL);
    tt_write("ca", &pki.ca, NULL);
    pki.made = true;
}

/* The SNI listener: default.test (default), www/example.com, *.wild.test,
 * and dual.test in ECDSA and RSA. */
static struct ct_tls_cert_conf certs_sni[5];

static struct ct_tls_listener_conf conf_sni(void)
{
    fixture();
    static const char *const names[] = {"Default.Test."};
    certs_sni[0] =
        (struct ct_tls_cert_conf){tt_path("def.crt"), tt_path("def.key"), names, 1, true};
    certs_sni[1] =
        (struct ct_tls_cert_conf){tt_path("www.crt"), tt_path("www.key"), NULL, 0, false};
    certs_sni[2] =
        (struct ct_tls_cert_conf){tt_path("wild.crt"), tt_path("wild.key"), NULL, 0, false};
    certs_sni[3] =
        (struct ct_tls_cert_conf){tt_path("dual_ec.crt"), tt_path("dual_ec.key"), NULL, 0, false};
    certs_sni[4] =
        (struct ct_tls_cert_conf){tt_path("dual_rsa.crt"), tt_path("dual_rsa.key"), NULL, 0, false};
    /* certs_sni[0] is listed first but also marked default: both agree. */
    return (struct ct_tls_listener_conf){.certs = certs_sni, .ncerts = 5};
}

static struct ct_tls_ctx *ctx_or_fail(const struct ct_tls_listener_conf *cf,
                                      struct ct_tls_shared *sh)
{
    char err[512] = "";
    struct ct_tls_ctx *lc = ct_tls_ctx_new(cf, sh, err, sizeof(err));
    if (lc == NULL)
        fprintf(stderr, "ct_tls_ctx_new: %s\n", err);
    CU_ASSERT_FATAL(lc != NULL);
    return lc;
}

/* ---- the embedded default ---------------------------------------------- */

static void test_selfsigned_default(void)
{
    struct ct_tls_listener_conf cf = {0};
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    CU_ASSERT_PTR_NOT_NULL(ct_tls_ctx_selfsigned_note(lc));
    CU_ASSERT_PTR_NOT_NULL(strstr(ct_tls_ctx_selfsigned_note(lc), "self-signed EC P-256"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ct_tls_ctx_describe(lc), "self-signed"));
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    struct tt_conn t = tt_pair(cctx, lc, NULL);
    CU_ASSERT_FATAL(tt_drive(&t) == 1);
    X509 *peer = SSL_get0_peer_certificate(t.c);
    CU_ASSERT_FATAL(peer != NULL);
    CU_ASSERT_EQUAL(X509_check_host(peer, "localhost", 0, 0, NULL), 1);
    CU_ASSERT_EQUAL(X509_check_ip_asc(peer, "127.0.0.1", 0), 1);
    CU_ASSERT_EQUAL(EVP_PKEY_get_base_id(X509_get0_pubkey(peer)), EVP_PKEY_EC);
    CU_ASSERT_EQUAL(X509_NAME_cmp(X509_get_subject_name(peer), X509_get_issuer_name(peer)), 0);
    CU_ASSERT_EQUAL(X509_verify(peer, X509_get0_pubkey(peer)), 1); /* self-signed */
    CU_ASSERT_EQUAL(SSL_version(t.s), TLS1_3_VERSION);
    tt_close(&t);
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);
    CU_ASSERT_PTR_NULL(lc);
}

/* ---- protocol versions ---------------------------------------------------- */

static int version_of_handshake(struct ct_tls_ctx *lc, int cmin, int cmax)
{
    SSL_CTX *cctx = tt_client_ctx(cmin, cmax);
    struct tt_conn t = tt_pair(cctx, lc, NULL);
    int v = tt_drive(&t) ? SSL_version(t.s) : -1;
    tt_close(&t);
    SSL_CTX_free(cctx);
    return v;
}

static void test_versions(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    CU_ASSERT_EQUAL(version_of_handshake(lc, 0, 0), TLS1_3_VERSION);
    CU_ASSERT_EQUAL(version_of_handshake(lc, TLS1_3_VERSION, TLS1_3_VERSION), TLS1_3_VERSION);
    CU_ASSERT_EQUAL(version_of_handshake(lc, TLS1_2_VERSION, TLS1_2_VERSION), TLS1_2_VERSION);
    CU_ASSERT_EQUAL(version_of_handshake(lc, TLS1_1_VERSION, TLS1_1_VERSION), -1);
    CU_ASSERT_EQUAL(version_of_handshake(lc, TLS1_VERSION, TLS1_VERSION), -1);
    ct_tls_ctx_free(&lc);

    cf.min_version = CT_TLS_V1_3;
    lc = ctx_or_fail(&cf, NULL);
    CU_ASSERT_EQUAL(version_of_handshake(lc, TLS1_2_VERSION, TLS1_2_VERSION), -1);
    CU_ASSERT_EQUAL(version_of_handshake(lc, 0, 0), TLS1_3_VERSION);
    ct_tls_ctx_free(&lc);

    char err[256];
    cf.min_version = 0x0302; /* TLS 1.1 may not be configured at all */
    CU_ASSERT_PTR_NULL(ct_tls_ctx_new(&cf, NULL, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "only TLSv1.2 and TLSv1.3"));
    CU_ASSERT_EQUAL(ct_tls_version_parse("TLSv1.2"), CT_TLS_V1_2);
    CU_ASSERT_EQUAL(ct_tls_version_parse("1.3"), CT_TLS_V1_3);
    CU_ASSERT_EQUAL(ct_tls_version_parse("TLSv1.1"), CT_ECONF);
}

/* The cipher list, groups, renegotiation and compression settings. */
static void test_ciphers_and_options(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    SSL_CTX *cctx = tt_client_ctx(TLS1_2_VERSION, TLS1_2_VERSION);
    /* A client that only has a CBC suite from the old days is refused. */
    SSL_CTX_set_cipher_list(cctx, "ECDHE-ECDSA-AES128-SHA");
    struct tt_conn t = tt_pair(cctx, lc, NULL);
    CU_ASSERT_EQUAL(tt_drive(&t), 0);
    tt_close(&t);
    SSL_CTX_set_cipher_list(cctx, "ECDHE-ECDSA-CHACHA20-POLY1305");
    t = tt_pair(cctx, lc, NULL);
    CU_ASSERT_FATAL(tt_drive(&t) == 1);
    CU_ASSERT_STRING_EQUAL(SSL_get_cipher_name(t.s), "ECDHE-ECDSA-CHACHA20-POLY1305");
    CU_ASSERT(SSL_get_options(t.s) & SSL_OP_NO_RENEGOTIATION);
    CU_ASSERT(SSL_get_options(t.s) & SSL_OP_NO_COMPRESSION);
    CU_ASSERT_FALSE(SSL_get_options(t.s) & SSL_OP_ENABLE_KTLS); /* off by default */
    CU_ASSERT_EQUAL(SSL_get_negotiated_group(t.s), NID_X25519);
    tt_close(&t);
    /* A client with only P-384 shares no group with X25519:P-256. */
    SSL_CTX_set1_groups_list(cctx, "P-384");
    t = tt_pair(cctx, lc, NULL);
    CU_ASSERT_EQUAL(tt_drive(&t), 0);
    tt_close(&t);
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);

    char err[256];
    cf.ciphers = "NO-SUCH-CIPHER";
    CU_ASSERT_PTR_NULL(ct_tls_ctx_new(&cf, NULL, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "ciphers \"NO-SUCH-CIPHER\""));
    cf.ciphers = NULL;
    cf.groups = "X25519:nonsense";
    CU_ASSERT_PTR_NULL(ct_tls_ctx_new(&cf, NULL, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "groups"));
    cf.groups = NULL;
    cf.ktls = true;
    lc = ctx_or_fail(&cf, NULL);
    cctx = tt_client_ctx(0, 0);
    t = tt_pair(cctx, lc, NULL);
    CU_ASSERT(SSL_get_options(t.s) & SSL_OP_ENABLE_KTLS);
    CU_ASSERT_FALSE(ct_tls_ktls_send(t.s)); /* a BIO pair has no kernel to offload to */
    tt_close(&t);
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);
}

/* ---- SNI and certificate selection ----------------------------------------- */

static void sni_expect(struct ct_tls_ctx *lc, SSL_CTX *cctx, const char *sni, const char *cn)
{
    char got[128] = "";
    CU_ASSERT_FATAL(tt_handshake(cctx, lc, sni, NULL, NULL, NULL, got, sizeof(got)) == 1);
    if (strcmp(got, cn) != 0)
        fprintf(stderr, "SNI %s: got %s, expected %s\n", sni ? sni : "(none)", got, cn);
    CU_ASSERT_STRING_EQUAL(got, cn);
}

static void test_sni(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    sni_expect(lc, cctx, "www.example.com", "www.example.com");
    sni_expect(lc, cctx, "WWW.Example.COM", "www.example.com"); /* case-insensitive */
    sni_expect(lc, cctx, "example.com", "www.example.com");     /* second SAN name */
    sni_expect(lc, cctx, "default.test", "default.test");
    sni_expect(lc, cctx, "a.wild.test", "*.wild.test");
    sni_expect(lc, cctx, "zz-9.wild.test", "*.wild.test");
    sni_expect(lc, cctx, "a.b.wild.test", "default.test"); /* one label only */
    sni_expect(lc, cctx, "wild.test", "default.test");     /* not the bare domain */
    sni_expect(lc, cctx, "unknown.test", "default.test");
    sni_expect(lc, cctx, NULL, "default.test");
    for (int v = TLS1_2_VERSION; v <= TLS1_3_VERSION; v++) {
        SSL_CTX *c12 = tt_client_ctx(v, v);
        sni_expect(lc, c12, "a.wild.test", "*.wild.test");
        sni_expect(lc, c12, "nothing.test", "default.test");
        SSL_CTX_free(c12);
    }
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);
}

/* A listener's default is the is_default certificate even when listed last. */
static void test_sni_default_flag(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    struct ct_tls_cert_conf certs[2] = {certs_sni[1], certs_sni[0]};
    certs[0].is_default = false;
    certs[1].is_default = true;
    cf.certs = certs;
    cf.ncerts = 2;
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    sni_expect(lc, cctx, NULL, "default.test");
    sni_expect(lc, cctx, "www.example.com", "www.example.com");
    certs[1].is_default = false; /* none marked: the first one */
    ct_tls_ctx_free(&lc);
    lc = ctx_or_fail(&cf, NULL);
    sni_expect(lc, cctx, "nope.test", "www.example.com");
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);
}

/* ECDSA and RSA for dual.test: the client's signature algorithms (TLS 1.3)
 * or cipher suites (TLS 1.2) decide which one it gets. */
static void test_ecdsa_rsa(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    SSL_CTX *cctx = tt_client_ctx(TLS1_3_VERSION, TLS1_3_VERSION);
    sni_expect(lc, cctx, "dual.test", "dual ecdsa"); /* ECDSA first by default */
    CU_ASSERT(SSL_CTX_set1_sigalgs_list(cctx, "rsa_pss_rsae_sha256:rsa_pss_rsae_sha384"));
    sni_expect(lc, cctx, "dual.test", "dual rsa");
    CU_ASSERT(SSL_CTX_set1_sigalgs_list(cctx, "ECDSA+SHA256"));
    sni_expect(lc, cctx, "dual.test", "dual ecdsa");
    SSL_CTX_free(cctx);
    cctx = tt_client_ctx(TLS1_2_VERSION, TLS1_2_VERSION);
    CU_ASSERT(SSL_CTX_set_cipher_list(cctx, "ECDHE-RSA-AES128-GCM-SHA256"));
    sni_expect(lc, cctx, "dual.test", "dual rsa");
    CU_ASSERT(SSL_CTX_set_cipher_list(cctx, "ECDHE-ECDSA-AES128-GCM-SHA256"));
    sni_expect(lc, cctx, "dual.test", "dual ecdsa");
    /* Mozilla intermediate keeps DHE-RSA for old clients (RFC 7919 group). */
    CU_ASSERT(SSL_CTX_set_cipher_list(cctx, "DHE-RSA-AES128-GCM-SHA256"));
    sni_expect(lc, cctx, "dual.test", "dual rsa");
    /* An RSA-only client asking for an ECDSA-only name fails the handshake. */
    CU_ASSERT(SSL_CTX_set_cipher_list(cctx, "ECDHE-RSA-AES128-GCM-SHA256"));
    CU_ASSERT_EQUAL(tt_handshake(cctx, lc, "www.example.com", NULL, NULL, NULL, NULL, 0), 0);
    SSL_CTX_free(cctx);
    CU_ASSERT_PTR_NOT_NULL(strstr(ct_tls_ctx_describe(lc), "5 certificates"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ct_tls_ctx_describe(lc), "RSA 2048 \"dual.test\""));
    ct_tls_ctx_free(&lc);
}

/* ---- ALPN ------------------------------------------------------------------ */

static void alpn_expect(struct ct_tls_ctx *lc, const unsigned char *offer, unsigned len,
                        const char *want)
{
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    if (offer)
        CU_ASSERT_EQUAL(SSL_CTX_set_alpn_protos(cctx, offer, len), 0);
    struct tt_conn t = tt_pair(cctx, lc, NULL);
    CU_ASSERT_FATAL(tt_drive(&t) == 1); /* never a handshake failure */
    const unsigned char *got = NULL;
    unsigned int gotlen = 0;
    SSL_get0_alpn_selected(t.c, &got, &gotlen);
    CU_ASSERT_EQUAL(gotlen, want ? strlen(want) : 0);
    if (want && gotlen == strlen(want))
        CU_ASSERT_EQUAL(memcmp(got, want, gotlen), 0);
    CU_ASSERT_EQUAL(ct_tls_alpn_is_h2(t.s), want != NULL && strcmp(want, "h2") == 0);
    char line[256];
    ct_tls_conn_describe(t.s, line, sizeof(line));
    if (want) {
        char alpn[32];
        snprintf(alpn, sizeof(alpn), "alpn=%s", want);
        CU_ASSERT_PTR_NOT_NULL(strstr(line, alpn));
    } else {
        CU_ASSERT_PTR_NULL(strstr(line, "alpn="));
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "TLSv1.3 TLS_AES_"));
    tt_close(&t);
    SSL_CTX_free(cctx);
}

/* h2 first whatever the client's order (RFC 7301 §3.2: the server picks),
 * http/1.1 when that is all it asks, and nothing rather than a failure. */
static void test_alpn(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(ct_tls_ctx_describe(lc), "ALPN h2,http/1.1"));
    alpn_expect(lc, (const unsigned char *)"\x02h2\x08http/1.1", 12, "h2");
    alpn_expect(lc, (const unsigned char *)"\x08http/1.1\x02h2", 12, "h2");
    alpn_expect(lc, (const unsigned char *)"\x08http/1.1", 9, "http/1.1");
    alpn_expect(lc, (const unsigned char *)"\x02h2", 3, "h2");
    alpn_expect(lc, (const unsigned char *)"\x08http/1.0\x02h3", 12, NULL);
    alpn_expect(lc, NULL, 0, NULL);
    ct_tls_ctx_free(&lc);
}

/* listen[].tls.http2 = false: HTTP/1.1 only, as before HTTP/2 existed. */
static void test_alpn_h2_off(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    cf.disable_h2 = true;
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(ct_tls_ctx_describe(lc), "ALPN http/1.1"));
    alpn_expect(lc, (const unsigned char *)"\x02h2\x08http/1.1", 12, "http/1.1");
    alpn_expect(lc, (const unsigned char *)"\x08http/1.1", 9, "http/1.1");
    alpn_expect(lc, (const unsigned char *)"\x02h2", 3, NULL); /* no ALPN, no failure */
    alpn_expect(lc, NULL, 0, NULL);
    ct_tls_ctx_free(&lc);
}

/* ---- resumption -------------------------------------------------------------- */

static void stats_expect(struct ct_tls_ctx *lc, uint64_t full, uint64_t resumed)
{
    struct ct_tls_stats st;
    ct_tls_ctx_stats(lc, &st);
    CU_ASSERT_EQUAL(st.handshakes_full, full);
    CU_ASSERT_EQUAL(st.handshakes_resumed, resumed);
}

/* Resume with SESS on LC; returns whether it was reused. */
static bool resumes(SSL_CTX *cctx, struct ct_tls_ctx *lc, SSL_SESSION *sess)
{
    bool reused = false;
    CU_ASSERT_FATAL(tt_handshake(cctx, lc, NULL, sess, NULL, &reused, NULL, 0) == 1);
    return reused;
}

static void test_resume_tickets(void)
{
    struct ct_tls_shared *sh = ct_tls_shared_new(0, 0, NULL, 0);
    CU_ASSERT_FATAL(sh != NULL);
    struct ct_tls_listener_conf cf = conf_sni();
    cf.disable_session_cache = true; /* tickets alone */
    struct ct_tls_ctx *w1 = ctx_or_fail(&cf, sh), *w2 = ctx_or_fail(&cf, sh);
    for (int v = TLS1_2_VERSION; v <= TLS1_3_VERSION; v++) {
        SSL_CTX *cctx = tt_client_ctx(v, v);
        SSL_SESSION *sess = NULL;
        bool reused = true;
        CU_ASSERT_FATAL(tt_handshake(cctx, w1, NULL, NULL, &sess, &reused, NULL, 0) == 1);
        CU_ASSERT_FALSE(reused);
        CU_ASSERT_FATAL(sess != NULL);
        CU_ASSERT(SSL_SESSION_has_ticket(sess));
        CU_ASSERT_TRUE(resumes(cctx, w1, sess)); /* another SSL of the same context */
        CU_ASSERT_TRUE(resumes(cctx, w2, sess)); /* another context, same keys */
        SSL_SESSION_free(sess);
        SSL_CTX_free(cctx);
    }
    stats_expect(w1, 2, 2);
    stats_expect(w2, 0, 2);
    /* With SNI on a non-default certificate (the connection switches
     * SSL_CTX; tickets and cache stay the default one's). */
    for (int v = TLS1_2_VERSION; v <= TLS1_3_VERSION; v++) {
        SSL_CTX *cctx = tt_client_ctx(v, v);
        SSL_SESSION *sess = NULL;
        char cn[64];
        CU_ASSERT_FATAL(tt_handshake(cctx, w1, "x.wild.test", NULL, &sess, NULL, cn, sizeof(cn)));
        CU_ASSERT_STRING_EQUAL(cn, "*.wild.test");
        bool reused = false;
        CU_ASSERT(tt_handshake(cctx, w2, "x.wild.test", sess, NULL, &reused, NULL, 0));
        CU_ASSERT_TRUE(reused);
        SSL_SESSION_free(sess);
        SSL_CTX_free(cctx);
    }
    /* A context with its own key store does not take the others' tickets. */
    struct ct_tls_shared *sh2 = ct_tls_shared_new(0, 0, NULL, 0);
    struct ct_tls_ctx *w3 = ctx_or_fail(&cf, sh2);
    ct_tls_shared_release(&sh2);
    CU_ASSERT_PTR_NULL(sh2);
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    SSL_SESSION *sess = NULL;
    CU_ASSERT_FATAL(tt_handshake(cctx, w1, NULL, NULL, &sess, NULL, NULL, 0) == 1);
    CU_ASSERT_FALSE(resumes(cctx, w3, sess));
    SSL_SESSION_free(sess);
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&w1);
    ct_tls_ctx_free(&w2);
    ct_tls_ctx_free(&w3);
    ct_tls_shared_release(&sh);
}

/* Tickets off, cache on: TLS 1.2 session ids and TLS 1.3 stateful tickets
 * resume on the same context (every worker shares it). */
static void test_resume_cache(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    cf.disable_tickets = true;
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    for (int v = TLS1_2_VERSION; v <= TLS1_3_VERSION; v++) {
        SSL_CTX *cctx = tt_client_ctx(v, v);
        SSL_SESSION *sess = NULL;
        CU_ASSERT_FATAL(tt_handshake(cctx, lc, "www.example.com", NULL, &sess, NULL, NULL, 0));
        CU_ASSERT_FATAL(sess != NULL);
        if (v == TLS1_2_VERSION)
            CU_ASSERT_FALSE(SSL_SESSION_has_ticket(sess));
        bool reused = false;
        char cn[64];
        CU_ASSERT(tt_handshake(cctx, lc, "www.example.com", sess, NULL, &reused, cn, sizeof(cn)));
        CU_ASSERT_TRUE(reused);
        SSL_SESSION_free(sess);
        SSL_CTX_free(cctx);
    }
    stats_expect(lc, 2, 2);
    ct_tls_ctx_free(&lc);
}

/* TLS 1.2 session ids: a connection freed without close_notify loses its
 * cached session (OpenSSL's rule); ct_tls_close_notify() keeps it. */
static void test_close_notify(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    cf.disable_tickets = true;
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    SSL_CTX *cctx = tt_client_ctx(TLS1_2_VERSION, TLS1_2_VERSION);
    for (int clean = 0; clean <= 1; clean++) {
        struct tt_conn t = tt_pair(cctx, lc, NULL);
        CU_ASSERT_FATAL(tt_drive(&t) == 1);
        SSL_SESSION *sess = tt_take_session(&t);
        SSL_shutdown(t.c); /* the client side always closes cleanly */
        if (clean) {
            ct_tls_close_notify(t.s);
            CU_ASSERT(SSL_get_shutdown(t.s) & SSL_SENT_SHUTDOWN);
            ct_tls_close_notify(t.s); /* idempotent */
        }
        SSL_free(t.c);
        SSL_free(t.s);
        CU_ASSERT_EQUAL(resumes(cctx, lc, sess), clean == 1);
        SSL_SESSION_free(sess);
    }
    /* Before the handshake it does nothing (no alert, no error). */
    SSL *s = ct_tls_new_ssl(lc);
    ct_tls_close_notify(s);
    CU_ASSERT_FALSE(SSL_get_shutdown(s) & SSL_SENT_SHUTDOWN);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
    SSL_free(s);
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);
}

static void test_resume_disabled(void)
{
    struct ct_tls_shared *sh = ct_tls_shared_new(0, 0, NULL, 0);
    struct ct_tls_listener_conf cf = conf_sni();
    cf.disable_tickets = true;
    cf.disable_session_cache = true;
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, sh);
    CU_ASSERT_PTR_NOT_NULL(strstr(ct_tls_ctx_describe(lc), "tickets off, session cache off"));
    for (int v = TLS1_2_VERSION; v <= TLS1_3_VERSION; v++) {
        SSL_CTX *cctx = tt_client_ctx(v, v);
        SSL_SESSION *sess = NULL;
        CU_ASSERT_FATAL(tt_handshake(cctx, lc, NULL, NULL, &sess, NULL, NULL, 0) == 1);
        for (int i = 0; i < 3; i++)
            CU_ASSERT_FALSE(sess && resumes(cctx, lc, sess));
        SSL_SESSION_free(sess);
        SSL_CTX_free(cctx);
    }
    stats_expect(lc, 8, 0);
    ct_tls_ctx_free(&lc);
    ct_tls_shared_release(&sh);
}

/* A ticket outlives one rotation (previous key), not two. */
static void test_rotation(void)
{
    struct ct_tls_shared *sh = ct_tls_shared_new(60000, 100.0, NULL, 0);
    struct ct_tls_listener_conf cf = conf_sni();
    cf.disable_session_cache = true;
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, sh);
    for (int v = TLS1_2_VERSION; v <= TLS1_3_VERSION; v++) {
        SSL_CTX *cctx = tt_client_ctx(v, v);
        SSL_SESSION *sess = NULL;
        CU_ASSERT_FATAL(tt_handshake(cctx, lc, NULL, NULL, &sess, NULL, NULL, 0) == 1);
        CU_ASSERT_TRUE(resumes(cctx, lc, sess));
        CU_ASSERT_EQUAL(ct_tls_shared_rotate(sh), CT_OK);
        CU_ASSERT_TRUE(resumes(cctx, lc, sess)); /* previous key still decrypts */
        CU_ASSERT_EQUAL(ct_tls_shared_rotate(sh), CT_OK);
        CU_ASSERT_FALSE(resumes(cctx, lc, sess)); /* gone: full handshake */
        SSL_SESSION_free(sess);
        SSL_CTX_free(cctx);
    }
    /* The timer entry point: due only once the interval has passed. */
    uint64_t r = ct_tls_shared_rotations(sh);
    CU_ASSERT_EQUAL(r, 4);
    CU_ASSERT_EQUAL(ct_tls_shared_tick(sh, 159.0), 0);
    CU_ASSERT_EQUAL(ct_tls_shared_tick(sh, 160.0), 1);
    CU_ASSERT_EQUAL(ct_tls_shared_tick(sh, 160.5), 0);
    CU_ASSERT_EQUAL(ct_tls_shared_tick(sh, 220.0), 1);
    CU_ASSERT_EQUAL(ct_tls_shared_rotations(sh), r + 2);
    ct_tls_ctx_free(&lc);
    ct_tls_shared_release(&sh);
}

/* ---- mTLS ------------------------------------------------------------------- */

static SSL_CTX *client_with_cert(const struct tt_pki *p)
{
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    if (p) {
        CU_ASSERT(SSL_CTX_use_certificate(cctx, p->x) == 1);
        CU_ASSERT(SSL_CTX_use_PrivateKey(cctx, p->key) == 1);
    }
    return cctx;
}

/* Handshake with client certificate P; on success SUBJECT gets the server's
 * view (or the error code as text). Returns 1 / 0. */
static int mtls(struct ct_tls_ctx *lc, const struct tt_pki *p, char *subject, size_t len, int *rc)
{
    SSL_CTX *cctx = client_with_cert(p);
    struct tt_conn t = tt_pair(cctx, lc, NULL);
    int ok = tt_drive(&t);
    if (ok) {
        /* TLS 1.3: the server sees the client's Certificate with its Finished. */
        *rc = ct_tls_peer_subject(t.s, subject, len);
    }
    tt_close(&t);
    SSL_CTX_free(cctx);
    return ok;
}

static void test_mtls(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    cf.verify = CT_TLS_VERIFY_REQUIRED;
    cf.client_ca_file = tt_path("ca.crt");
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    char subj[256];
    int rc = 0;
    CU_ASSERT_EQUAL(mtls(lc, &pki.alice, subj, sizeof(subj), &rc), 1);
    CU_ASSERT_EQUAL(rc, (int)strlen("CN=alice,O=cachet test"));
    CU_ASSERT_STRING_EQUAL(subj, "CN=alice,O=cachet test");
    CU_ASSERT_EQUAL(mtls(lc, &pki.alice, subj, 8, &rc), 1);
    CU_ASSERT_EQUAL(rc, CT_ELIMIT);
    /* A subject built to smuggle a header comes out escaped, one line. */
    struct tt_pki evil = tt_make("EC", "eve\r\nX-Admin: 1, O=\xc3\xa9", NULL, false, &pki.ca);
    CU_ASSERT_EQUAL(mtls(lc, &evil, subj, sizeof(subj), &rc), 1);
    CU_ASSERT(rc > 0);
    CU_ASSERT_PTR_NULL(strpbrk(subj, "\r\n"));
    for (const char *p = subj; *p; p++)
        CU_ASSERT((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
    CU_ASSERT_PTR_NOT_NULL(strstr(subj, "CN=eve\\0D\\0AX-Admin: 1\\, O="));
    tt_pki_free(&evil);
    CU_ASSERT_EQUAL(mtls(lc, NULL, subj, sizeof(subj), &rc), 0);         /* none: refused */
    CU_ASSERT_EQUAL(mtls(lc, &pki.mallory, subj, sizeof(subj), &rc), 0); /* other CA */
    ct_tls_ctx_free(&lc);

    cf.verify = CT_TLS_VERIFY_OPTIONAL;
    lc = ctx_or_fail(&cf, NULL);
    CU_ASSERT_EQUAL(mtls(lc, NULL, subj, sizeof(subj), &rc), 1);
    CU_ASSERT_EQUAL(rc, CT_ENOENT);
    CU_ASSERT_EQUAL(mtls(lc, &pki.alice, subj, sizeof(subj), &rc), 1);
    CU_ASSERT_STRING_EQUAL(subj, "CN=alice,O=cachet test");
    CU_ASSERT_EQUAL(mtls(lc, &pki.mallory, subj, sizeof(subj), &rc), 0);
    ct_tls_ctx_free(&lc);

    char err[512];
    cf.client_ca_file = NULL;
    CU_ASSERT_PTR_NULL(ct_tls_ctx_new(&cf, NULL, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "needs a client CA file"));
    cf.client_ca_file = tt_path("missing-ca.crt");
    CU_ASSERT_PTR_NULL(ct_tls_ctx_new(&cf, NULL, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "missing-ca.crt\": No such file"));
}

/* A session resumed on an mTLS listener keeps the client's subject; one made
 * on a listener without client certificates does not resume there. */
static void test_mtls_resume(void)
{
    struct ct_tls_shared *sh = ct_tls_shared_new(0, 0, NULL, 0);
    struct ct_tls_listener_conf plain = conf_sni(), req = conf_sni();
    req.verify = CT_TLS_VERIFY_REQUIRED;
    req.client_ca_file = tt_path("ca.crt");
    struct ct_tls_ctx *lp = ctx_or_fail(&plain, sh), *lr = ctx_or_fail(&req, sh);
    SSL_CTX *cctx = client_with_cert(&pki.alice);
    SSL_SESSION *sess = NULL;
    CU_ASSERT_FATAL(tt_handshake(cctx, lp, NULL, NULL, &sess, NULL, NULL, 0) == 1);
    CU_ASSERT_FALSE(resumes(cctx, lr, sess)); /* different session id context */
    SSL_SESSION_free(sess);
    sess = NULL;
    CU_ASSERT_FATAL(tt_handshake(cctx, lr, NULL, NULL, &sess, NULL, NULL, 0) == 1);
    struct tt_conn t = tt_pair(cctx, lr, NULL);
    SSL_set_session(t.c, sess);
    CU_ASSERT_FATAL(tt_drive(&t) == 1);
    CU_ASSERT_TRUE(SSL_session_reused(t.s));
    char subj[128];
    CU_ASSERT(ct_tls_peer_subject(t.s, subj, sizeof(subj)) > 0);
    CU_ASSERT_STRING_EQUAL(subj, "CN=alice,O=cachet test");
    tt_close(&t);
    SSL_SESSION_free(sess);
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lp);
    ct_tls_ctx_free(&lr);
    ct_tls_shared_release(&sh);
}

/* ---- loading errors ----------------------------------------------------------- */

static void expect_err(struct ct_tls_cert_conf cc, const char *want)
{
    struct ct_tls_listener_conf cf = {.certs = &cc, .ncerts = 1};
    char err[512] = "";
    struct ct_tls_ctx *lc = ct_tls_ctx_new(&cf, NULL, err, sizeof(err));
    CU_ASSERT_PTR_NULL(lc);
    if (strstr(err, want) == NULL)
        fprintf(stderr, "error \"%s\" lacks \"%s\"\n", err, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    ct_tls_ctx_free(&lc);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0); /* nothing left for the next connection */
}

static void test_load_errors(void)
{
    fixture();
    char want[512];
    snprintf(want, sizeof(want), "certificate \"%s\" and private key \"%s\" do not match",
             tt_path("www.crt"), tt_path("def.key"));
    expect_err(
        (struct ct_tls_cert_conf){.cert_file = tt_path("www.crt"), .key_file = tt_path("def.key")},
        want);
    expect_err((struct ct_tls_cert_conf){.cert_file = tt_path("dual_rsa.crt"),
                                         .key_file = tt_path("dual_ec.key")},
               "do not match");
    expect_err(
        (struct ct_tls_cert_conf){.cert_file = tt_path("nope.crt"), .key_file = tt_path("def.key")},
        "nope.crt\": No such file or directory");
    expect_err(
        (struct ct_tls_cert_conf){.cert_file = tt_path("www.crt"), .key_file = tt_path("nope.key")},
        "nope.key\": No such file or directory");
    tt_write_raw("garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n"
                                "-----END CERTIFICATE-----\n");
    expect_err((struct ct_tls_cert_conf){.cert_file = tt_path("garbage.pem"),
                                         .key_file = tt_path("def.key")},
               "cannot load certificate");
    tt_write_raw("empty.pem", "");
    expect_err((struct ct_tls_cert_conf){.cert_file = tt_path("empty.pem"),
                                         .key_file = tt_path("def.key")},
               "cannot load certificate");
    expect_err(
        (struct ct_tls_cert_conf){.cert_file = tt_path("www.crt"), .key_file = tt_path("www.crt")},
        "cannot load private key");
    static const char *const bad[] = {"a.*.example.com"};
    expect_err((struct ct_tls_cert_conf){tt_path("www.crt"), tt_path("www.key"), bad, 1, false},
               "invalid server name \"a.*.example.com\"");
    /* A certificate without any name, not the default: unreachable. */
    struct tt_pki anon = tt_make("EC", "", NULL, false, &pki.ca);
    tt_write("anon", &anon, NULL);
    struct ct_tls_cert_conf two[2] = {
        {.cert_file = tt_path("www.crt"), .key_file = tt_path("www.key")},
        {.cert_file = tt_path("anon.crt"), .key_file = tt_path("anon.key")},
    };
    struct ct_tls_listener_conf cf2 = {.certs = two, .ncerts = 2};
    char err[512];
    CU_ASSERT_PTR_NULL(ct_tls_ctx_new(&cf2, NULL, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "anon.crt\" has no server name"));
    two[1].is_default = true; /* as the default it is fine */
    struct ct_tls_ctx *lc2 = ctx_or_fail(&cf2, NULL);
    ct_tls_ctx_free(&lc2);
    tt_pki_free(&anon);
    /* An expired certificate is served, and the description says so. */
    struct tt_pki old = tt_make("EC", "old.test", "DNS:old.test", false, &pki.ca);
    X509_gmtime_adj(X509_getm_notAfter(old.x), -60);
    X509_sign(old.x, pki.ca.key, EVP_sha256());
    tt_write("old", &old, NULL);
    struct ct_tls_cert_conf oc = {.cert_file = tt_path("old.crt"), .key_file = tt_path("old.key")};
    struct ct_tls_listener_conf ocf = {.certs = &oc, .ncerts = 1};
    lc2 = ctx_or_fail(&ocf, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(ct_tls_ctx_describe(lc2), "\"old.test\" EXPIRED"));
    ct_tls_ctx_free(&lc2);
    tt_pki_free(&old);
    /* Leaf, chain certificate and key all in one file (key_file NULL). */
    FILE *fp = fopen(tt_path("bundle.pem"), "w");
    CU_ASSERT_FATAL(fp != NULL);
    PEM_write_X509(fp, pki.def.x);
    PEM_write_X509(fp, pki.ca.x);
    PEM_write_PrivateKey(fp, pki.def.key, NULL, NULL, 0, NULL, NULL);
    fclose(fp);
    struct ct_tls_cert_conf cc = {.cert_file = tt_path("bundle.pem")};
    struct ct_tls_listener_conf cf = {.certs = &cc, .ncerts = 1};
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    struct tt_conn t = tt_pair(cctx, lc, NULL);
    CU_ASSERT_FATAL(tt_drive(&t) == 1);
    STACK_OF(X509) *chain = SSL_get_peer_cert_chain(t.c);
    CU_ASSERT_EQUAL(chain ? sk_X509_num(chain) : 0, 2); /* leaf + CA sent */
    tt_close(&t);
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);
}

/* ---- bad input -------------------------------------------------------------- */

/* Feed BYTES to a fresh server SSL as if from a client; returns the error
 * code OpenSSL queued (0 if it just wants more). */
static unsigned long feed(struct ct_tls_ctx *lc, const void *bytes, size_t len, int *ssl_err)
{
    SSL *s = ct_tls_new_ssl(lc);
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    BIO_write(in, bytes, (int)len);
    BIO_set_mem_eof_return(in, -1); /* no more yet, not EOF */
    SSL_set_bio(s, in, out);
    SSL_set_accept_state(s);
    int rc = SSL_do_handshake(s);
    *ssl_err = SSL_get_error(s, rc);
    unsigned long e = ERR_peek_error();
    char buf[512];
    ct_tls_drain_errors(buf, sizeof(buf));
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
    SSL_free(s);
    return e;
}

static void test_bad_input(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    int se = 0;
    unsigned char junk[512];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(i * 7 + 3);
    unsigned long e = feed(lc, junk, sizeof(junk), &se);
    CU_ASSERT_EQUAL(se, SSL_ERROR_SSL);
    CU_ASSERT_NOT_EQUAL(e, 0);
    CU_ASSERT_FALSE(ct_tls_error_is_plain_http(e));
    static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    e = feed(lc, get, sizeof(get) - 1, &se);
    CU_ASSERT_EQUAL(se, SSL_ERROR_SSL);
    CU_ASSERT_TRUE(ct_tls_error_is_plain_http(e));
    char text[256];
    ct_tls_error_string(e, text, sizeof(text));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "http request"));
    /* A truncated ClientHello: OpenSSL waits for the rest (the proxy's
     * handshake timeout ends it); freeing it then leaks nothing. */
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    SSL *c = SSL_new(cctx);
    BIO *cin = BIO_new(BIO_s_mem()), *cout = BIO_new(BIO_s_mem());
    SSL_set_bio(c, cin, cout);
    SSL_set_connect_state(c);
    CU_ASSERT_EQUAL(SSL_do_handshake(c), -1);
    char *hello = NULL;
    long hlen = BIO_get_mem_data(cout, &hello);
    CU_ASSERT_FATAL(hlen > 100);
    e = feed(lc, hello, (size_t)hlen / 2, &se);
    CU_ASSERT_EQUAL(se, SSL_ERROR_WANT_READ);
    CU_ASSERT_EQUAL(e, 0);
    e = feed(lc, hello, (size_t)hlen, &se); /* and whole, it proceeds */
    CU_ASSERT_EQUAL(se, SSL_ERROR_WANT_READ);
    CU_ASSERT_EQUAL(e, 0);
    SSL_free(c);
    SSL_CTX_free(cctx);
    stats_expect(lc, 0, 0);
    ct_tls_ctx_free(&lc);
}

/* Plain HTTP on a real socket: the handshake fails as "http request" and
 * the client reads a clear-text 400 before the close. */
static void test_plain_http_answer(void)
{
    struct ct_tls_listener_conf cf = conf_sni();
    struct ct_tls_ctx *lc = ctx_or_fail(&cf, NULL);
    int sv[2];
    CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    static const char req[] = "GET /index.html HTTP/1.1\r\nHost: a.test\r\n"
                              "User-Agent: test\r\n\r\n";
    CU_ASSERT_FATAL(write(sv[1], req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1);
    SSL *s = ct_tls_new_ssl(lc);
    SSL_set_fd(s, sv[0]);
    SSL_set_accept_state(s);
    CU_ASSERT_EQUAL(SSL_do_handshake(s), -1);
    unsigned long e = ERR_peek_error();
    CU_ASSERT_TRUE(ct_tls_error_is_plain_http(e));
    ERR_clear_error();
    CU_ASSERT_EQUAL(ct_tls_answer_plain_http(sv[0]), CT_OK);
    SSL_free(s); /* does not close the fd (SSL_set_fd's BIO has no close flag) */
    close(sv[0]);
    char buf[512] = "";
    ssize_t n, got = 0;
    while ((n = read(sv[1], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
        got += n;
    buf[got] = '\0';
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "HTTP/1.1 400 Bad Request\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "Connection: close\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "use https://"));
    char *hdr_end = strstr(buf, "\r\n\r\n");
    CU_ASSERT_FATAL(hdr_end != NULL);
    CU_ASSERT_EQUAL(strlen(hdr_end + 4), (size_t)atoi(strstr(buf, "Content-Length: ") + 16));
    close(sv[1]);
    CU_ASSERT_EQUAL(ct_tls_answer_plain_http(-1), CT_EIO);
    ct_tls_ctx_free(&lc);
}

static void test_drain_errors(void)
{
    char buf[64];
    CU_ASSERT_EQUAL(ct_tls_drain_errors(buf, sizeof(buf)), 0);
    CU_ASSERT_STRING_EQUAL(buf, "");
    ERR_raise(ERR_LIB_SSL, SSL_R_HTTP_REQUEST);
    ERR_raise_data(ERR_LIB_SYS, 2, "calling fopen(%s)", "x.pem");
    CU_ASSERT_EQUAL(ct_tls_drain_errors(buf, sizeof(buf)), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "http request; "));
    CU_ASSERT(strlen(buf) < sizeof(buf));
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
    ERR_raise(ERR_LIB_SSL, SSL_R_HTTP_REQUEST);
    CU_ASSERT_EQUAL(ct_tls_drain_errors(buf, 8), 1); /* truncated, terminated */
    CU_ASSERT_EQUAL(strlen(buf), 7);
}

static void test_cleanup(void)
{
    tt_pki_free(&pki.ca);
    tt_pki_free(&pki.other_ca);
    tt_pki_free(&pki.def);
    tt_pki_free(&pki.www);
    tt_pki_free(&pki.wild);
    tt_pki_free(&pki.dual_ec);
    tt_pki_free(&pki.dual_rsa);
    tt_pki_free(&pki.alice);
    tt_pki_free(&pki.mallory);
    pki.made = false;
    tt_cleanup_dir();
}

void ct_test_register(void)
{
    CT_SUITE("tls", {"self-signed default certificate", test_selfsigned_default},
             {"TLS 1.3 and 1.2 accepted, 1.0/1.1 refused", test_versions},
             {"ciphers, groups and options", test_ciphers_and_options},
             {"SNI exact, wildcard, default", test_sni},
             {"default certificate flag", test_sni_default_flag},
             {"ECDSA or RSA by client capabilities", test_ecdsa_rsa}, {"ALPN h2 then http/1.1", test_alpn},
             {"ALPN with http2 off", test_alpn_h2_off},
             {"resumption by ticket across contexts", test_resume_tickets},
             {"resumption by session cache", test_resume_cache},
             {"close_notify keeps the cached session", test_close_notify},
             {"resumption disabled", test_resume_disabled}, {"ticket key rotation", test_rotation},
             {"client certificates", test_mtls},
             {"client certificates and resumption", test_mtls_resume},
             {"certificate loading errors", test_load_errors},
             {"garbage, plain HTTP, truncated hello", test_bad_input},
             {"plain HTTP answered with a clear-text 400", test_plain_http_answer},
             {"error queue draining", test_drain_errors}, {"cleanup", test_cleanup});
}
