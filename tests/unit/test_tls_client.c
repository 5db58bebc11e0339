/* tests/unit/test_tls_client.c: TLS to origins, the client side
 * (tls/tls_client.c), against a listener context (tls_ctx.c) in memory:
 * SNI and the name check (host names, IP literals), each failure's class
 * and words, verify = false, the CA file, sessions through the sink and
 * single-use TLS 1.3 tickets. */
#include "tests/unit/test_tls_util.h"

static struct tt_pki ca, good, selfsigned;

static void fixture(void)
{
    if (ca.x)
        return;
    ca = tt_make("EC", "test CA", NULL, true, NULL);
    good = tt_make("EC", "origin.test", "DNS:origin.test,IP:127.0.0.1", false, &ca);
    selfsigned = tt_make("EC", "self.test", "DNS:self.test", false, NULL);
    tt_write("ca", &ca, NULL);
    tt_write("good", &good, NULL);
    tt_write("self", &selfsigned, NULL);
}

static struct ct_tls_ctx *server(const char *name)
{
    fixture();
    static struct ct_tls_cert_conf cc;
    char fn[32];
    snprintf(fn, sizeof(fn), "%s.crt", name);
    cc.cert_file = tt_path(fn);
    snprintf(fn, sizeof(fn), "%s.key", name);
    cc.key_file = tt_path(fn);
    struct ct_tls_listener_conf cf = {.certs = &cc, .ncerts = 1, .disable_session_cache = true};
    struct ct_tls_shared *sh = ct_tls_shared_new(0, 0, NULL, 0);
    char err[256];
    struct ct_tls_ctx *lc = ct_tls_ctx_new(&cf, sh, err, sizeof(err));
    ct_tls_shared_release(&sh);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lc);
    return lc;
}

static struct ct_tls_client *client(bool verify, bool reuse)
{
    fixture();
    struct ct_tls_client_conf cf = {
        .verify = verify, .ca_file = tt_path("ca.crt"), .session_reuse = reuse};
    char err[256] = "";
    struct ct_tls_client *c = ct_tls_client_new(&cf, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

struct got {
    int ok;
    enum ct_tls_fail fail;
    char why[320];
    char sni[64];
    bool resumed;
    int version;
};

static SSL_SESSION *sunk[8];
static size_t nsunk;
static void sink_fn(void *arg, SSL_SESSION *s)
{
    (void)arg;
    CU_ASSERT_FATAL(nsunk < CT_ARRAY_LEN(sunk));
    sunk[nsunk++] = s;
}

/* One handshake of C (name NAME, resuming RESUME) with LC. */
static struct got handshake(struct ct_tls_client *c, struct ct_tls_ctx *lc, const char *name,
                            SSL_SESSION *resume, int max_version)
{
    static const struct ct_tls_sess_sink sink = {sink_fn, NULL};
    struct got g = {0};
    struct tt_conn t = {ct_tls_client_ssl(c, name, resume, &sink), ct_tls_new_ssl(lc)};
    CU_ASSERT_FATAL(t.c != NULL && t.s != NULL);
    if (max_version)
        SSL_set_max_proto_version(t.c, max_version);
    BIO *cb = NULL, *sb = NULL;
    CU_ASSERT_FATAL(BIO_new_bio_pair(&cb, 0, &sb, 0) == 1);
    SSL_set_bio(t.c, cb, cb);
    SSL_set_bio(t.s, sb, sb);
    SSL_set_connect_state(t.c);
    SSL_set_accept_state(t.s);
    g.ok = tt_drive(&t);
    const char *sni = SSL_get_servername(t.s, TLSEXT_NAMETYPE_host_name);
    snprintf(g.sni, sizeof(g.sni), "%s", sni ? sni : "");
    if (g.ok) {
        g.resumed = ct_tls_session_reused(t.c);
        g.version = SSL_version(t.c);
        char ch = 'x'; /* the client reads the TLS 1.3 tickets before this byte */
        CU_ASSERT(SSL_write(t.s, &ch, 1) == 1);
        CU_ASSERT(SSL_read(t.c, &ch, 1) == 1);
    } else {
        g.fail = ct_tls_client_failure(t.c, ERR_peek_error(), g.why, sizeof(g.why));
    }
    tt_close(&t);
    return g;
}

static void sunk_free(void)
{
    for (size_t i = 0; i < nsunk; i++)
        ct_tls_session_free(&sunk[i]);
    nsunk = 0;
}

static void test_names(void)
{
    struct ct_tls_ctx *lc = server("good");
    struct ct_tls_client *c = client(true, false);
    struct got g = handshake(c, lc, "origin.test", NULL, 0);
    CU_ASSERT_EQUAL(g.ok, 1);
    CU_ASSERT_STRING_EQUAL(g.sni, "origin.test");
    g = handshake(c, lc, "127.0.0.1", NULL, 0); /* an IP literal: no SNI, the IP checked */
    CU_ASSERT_EQUAL(g.ok, 1);
    CU_ASSERT_STRING_EQUAL(g.sni, "");
    g = handshake(c, lc, "wrong.test", NULL, 0);
    CU_ASSERT_EQUAL(g.ok, 0);
    CU_ASSERT_EQUAL(g.fail, CT_TLS_FAIL_NAME);
    CU_ASSERT_PTR_NOT_NULL(strstr(g.why, "hostname mismatch"));
    g = handshake(c, lc, "127.0.0.2", NULL, 0);
    CU_ASSERT_EQUAL(g.ok, 0);
    CU_ASSERT_EQUAL(g.fail, CT_TLS_FAIL_NAME);
    CU_ASSERT_PTR_NOT_NULL(strstr(g.why, "IP address mismatch"));
    g = handshake(c, lc, "x.origin.test", NULL, 0); /* no wildcard in the certificate */
    CU_ASSERT_EQUAL(g.ok, 0);
    CU_ASSERT_TRUE(ct_tls_name_is_ip("::1"));
    CU_ASSERT_FALSE(ct_tls_name_is_ip("origin.test"));
    ct_tls_client_free(&c);
    CU_ASSERT_PTR_NULL(c);
    ct_tls_ctx_free(&lc);
    ERR_clear_error();
}

static void test_untrusted_and_verify_off(void)
{
    struct ct_tls_ctx *lc = server("self");
    struct ct_tls_client *c = client(true, false);
    struct got g = handshake(c, lc, "self.test", NULL, 0);
    CU_ASSERT_EQUAL(g.ok, 0);
    CU_ASSERT_EQUAL(g.fail, CT_TLS_FAIL_UNTRUSTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(g.why, "self-signed certificate"));
    ct_tls_client_free(&c);
    c = client(false, false);
    g = handshake(c, lc, "anything.test", NULL, 0); /* verify = false: any certificate */
    CU_ASSERT_EQUAL(g.ok, 1);
    ct_tls_client_free(&c);
    ct_tls_ctx_free(&lc);
    ERR_clear_error();
}

static void test_sessions(void)
{
    struct ct_tls_ctx *lc = server("good");
    struct ct_tls_client *c = client(true, true);
    for (int v = TLS1_2_VERSION; v <= TLS1_3_VERSION; v++) {
        nsunk = 0;
        struct got g = handshake(c, lc, "origin.test", NULL, v);
        CU_ASSERT_EQUAL_FATAL(g.ok, 1);
        CU_ASSERT_FALSE(g.resumed);
        CU_ASSERT_EQUAL(g.version, v);
        CU_ASSERT_FATAL(nsunk >= 1); /* the sink got the session (or tickets) */
        SSL_SESSION *s = sunk[nsunk - 1];
        CU_ASSERT_EQUAL(ct_tls_session_single_use(s), v == TLS1_3_VERSION);
        sunk[nsunk - 1] = NULL;
        sunk_free();
        g = handshake(c, lc, "origin.test", s, v);
        CU_ASSERT_EQUAL(g.ok, 1);
        CU_ASSERT_TRUE(g.resumed);
        ct_tls_session_free(&s);
        sunk_free();
    }
    /* session_reuse = false: the sink gets nothing */
    struct ct_tls_client *off = client(true, false);
    nsunk = 0;
    CU_ASSERT_EQUAL(handshake(off, lc, "origin.test", NULL, 0).ok, 1);
    CU_ASSERT_EQUAL(nsunk, 0);
    CU_ASSERT_NOT_EQUAL(ct_tls_client_gen(c), ct_tls_client_gen(off));
    ct_tls_client_free(&off);
    ct_tls_client_free(&c);
    ct_tls_ctx_free(&lc);
}

static void test_bad_ca(void)
{
    fixture();
    tt_write_raw("notpem.crt", "not a certificate\n");
    struct ct_tls_client_conf cf = {.verify = true, .ca_file = tt_path("notpem.crt")};
    char err[256] = "";
    CU_ASSERT_PTR_NULL(ct_tls_client_new(&cf, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot load CA"));
    const char *alpn[] = {""};
    struct ct_tls_client_conf cf2 = {.verify = false, .alpn = alpn, .nalpn = 1};
    CU_ASSERT_PTR_NULL(ct_tls_client_new(&cf2, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "ALPN"));
    ERR_clear_error();
}

static void test_cleanup(void)
{
    tt_pki_free(&ca);
    tt_pki_free(&good);
    tt_pki_free(&selfsigned);
    tt_cleanup_dir();
}

void ct_test_register(void)
{
    CT_SUITE("tls client", {"SNI and the name check", test_names},
             {"untrusted; verify = false", test_untrusted_and_verify_off},
             {"sessions through the sink", test_sessions}, {"bad CA file, bad ALPN", test_bad_ca},
             {"cleanup", test_cleanup});
}
