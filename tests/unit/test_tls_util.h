/*
 * tests/unit/test_tls_util.h: helpers for the TLS unit tests, included by
 * test_tls*.c. Certificates are made at run time with OpenSSL's APIs (a tiny
 * CA and leaf certificates for given names) and written as PEM into a fresh
 * temporary folder, so the tests go through the same file loading as cachet.
 * Handshakes run in memory: a client SSL and a server SSL joined by a BIO
 * pair, driven in a bounded loop; no sockets.
 */
#ifndef CT_TEST_TLS_UTIL_H
#define CT_TEST_TLS_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tests/unit/ct_test.h"
#include "tls/tls.h"

struct tt_pki {
    EVP_PKEY *key;
    X509 *x;
};

static inline void tt_pki_free(struct tt_pki *p)
{
    X509_free(p->x);
    EVP_PKEY_free(p->key);
    p->x = NULL;
    p->key = NULL;
}

/* A certificate with subject CN (and O=cachet test) for KEY, signed by
 * ISSUER (NULL: self-signed). SAN like "DNS:a.test,DNS:*.b.test" or NULL. */
static inline X509 *tt_cert(EVP_PKEY *key, const char *cn, const char *san, bool is_ca,
                            const struct tt_pki *issuer)
{
    X509 *x = X509_new();
    X509_NAME *name = X509_get_subject_name(x);
    unsigned char serial[8];
    RAND_bytes(serial, sizeof(serial));
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(serial[0] & 0x7f) << 16 | serial[1]);
    X509_set_version(x, X509_VERSION_3);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"cachet test", -1,
                               -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer->x) : name);
    X509 *ix = issuer ? issuer->x : x;
    CU_ASSERT_FATAL(ct_tls_x509_add_ext(x, ix, NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE"));
    if (is_ca)
        CU_ASSERT_FATAL(ct_tls_x509_add_ext(x, ix, NID_key_usage, "critical,keyCertSign,cRLSign"));
    if (san)
        CU_ASSERT_FATAL(ct_tls_x509_add_ext(x, ix, NID_subject_alt_name, san));
    CU_ASSERT_FATAL(X509_sign(x, issuer ? issuer->key : key, EVP_sha256()) > 0);
    return x;
}

static inline struct tt_pki tt_make(const char *keytype, const char *cn, const char *san,
                                    bool is_ca, const struct tt_pki *issuer)
{
    struct tt_pki p;
    p.key = strcmp(keytype, "RSA") == 0 ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
    CU_ASSERT_FATAL(p.key != NULL);
    p.x = tt_cert(p.key, cn, san, is_ca, issuer);
    return p;
}

/* ---- files --------------------------------------------------------------- */

static char tt_dir[64];

static inline const char *tt_path(const char *name)
{
    static char buf[32][160];
    static unsigned next;
    if (tt_dir[0] == '\0') {
        snprintf(tt_dir, sizeof(tt_dir), "%s/ct-tls-test.XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        CU_ASSERT_FATAL(mkdtemp(tt_dir) != NULL);
    }
    char *b = buf[next++ % 32];
    snprintf(b, sizeof(buf[0]), "%s/%s", tt_dir, name);
    return b;
}

/* Write the certificate (then EXTRA, a chain certificate, if any) and the key
 * into NAME.crt / NAME.key. */
static inline void tt_write(const char *name, const struct tt_pki *p, X509 *extra)
{
    char fn[64];
    snprintf(fn, sizeof(fn), "%s.crt", name);
    FILE *fp = fopen(tt_path(fn), "w");
    CU_ASSERT_FATAL(fp != NULL);
    CU_ASSERT_FATAL(PEM_write_X509(fp, p->x));
    if (extra)
        CU_ASSERT_FATAL(PEM_write_X509(fp, extra));
    fclose(fp);
    snprintf(fn, sizeof(fn), "%s.key", name);
    fp = fopen(tt_path(fn), "w");
    CU_ASSERT_FATAL(fp != NULL);
    CU_ASSERT_FATAL(PEM_write_PrivateKey(fp, p->key, NULL, NULL, 0, NULL, NULL));
    fclose(fp);
}

static inline void tt_write_raw(const char *name, const char *text)
{
    FILE *fp = fopen(tt_path(name), "w");
    CU_ASSERT_FATAL(fp != NULL);
    fputs(text, fp);
    fclose(fp);
}

static inline void tt_cleanup_dir(void)
{
    if (tt_dir[0] == '\0')
        return;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tt_dir);
    CU_ASSERT(system(cmd) == 0);
    tt_dir[0] = '\0';
}

/* ---- in-memory handshakes ------------------------------------------------ */

/* A client context: TLS 1.2..1.3 unless narrowed, no verification. */
static inline SSL_CTX *tt_client_ctx(int min, int max)
{
    SSL_CTX *c = SSL_CTX_new(TLS_client_method());
    CU_ASSERT_FATAL(c != NULL);
    if (min && min < TLS1_2_VERSION)
        SSL_CTX_set_security_level(c, 0); /* OpenSSL 3 refuses < 1.2 at level 1 */
    SSL_CTX_set_min_proto_version(c, min);
    SSL_CTX_set_max_proto_version(c, max);
    if (min && min < TLS1_2_VERSION)
        SSL_CTX_set_cipher_list(c, "DEFAULT:@SECLEVEL=0");
    return c;
}

struct tt_conn {
    SSL *c, *s;
};

static inline struct tt_conn tt_pair(SSL_CTX *cctx, struct ct_tls_ctx *lc, const char *sni)
{
    struct tt_conn t = {SSL_new(cctx), ct_tls_new_ssl(lc)};
    CU_ASSERT_FATAL(t.c != NULL && t.s != NULL);
    BIO *cb = NULL, *sb = NULL;
    CU_ASSERT_FATAL(BIO_new_bio_pair(&cb, 0, &sb, 0) == 1);
    SSL_set_bio(t.c, cb, cb);
    SSL_set_bio(t.s, sb, sb);
    SSL_set_connect_state(t.c);
    SSL_set_accept_state(t.s);
    if (sni)
        SSL_set_tlsext_host_name(t.c, sni);
    return t;
}

static inline bool tt_want(SSL *ssl, int rc)
{
    int e = SSL_get_error(ssl, rc);
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

/* Drive both sides until done (1), or a side fails (0); bounded. */
static inline int tt_drive(struct tt_conn *t)
{
    for (int i = 0; i < 64; i++) {
        int rc = SSL_do_handshake(t->c);
        if (rc != 1 && !tt_want(t->c, rc))
            return 0;
        int rs = SSL_do_handshake(t->s);
        if (rs != 1 && !tt_want(t->s, rs))
            return 0;
        if (rc == 1 && rs == 1)
            return 1;
    }
    return 0;
}

/* After the handshake, move one byte server -> client so the client reads
 * the TLS 1.3 NewSessionTicket that precedes it; returns the client session
 * (caller frees) for resumption. */
static inline SSL_SESSION *tt_take_session(struct tt_conn *t)
{
    char ch = 'x';
    CU_ASSERT(SSL_write(t->s, &ch, 1) == 1);
    CU_ASSERT(SSL_read(t->c, &ch, 1) == 1);
    return SSL_get1_session(t->c);
}

/* A clean close (close_notify both ways): OpenSSL drops the session of a
 * connection freed without one (ssl_clear_bad_session), as a server must. */
static inline void tt_close(struct tt_conn *t)
{
    if (SSL_is_init_finished(t->c) && SSL_is_init_finished(t->s)) {
        SSL_shutdown(t->c);
        SSL_shutdown(t->s);
    }
    SSL_free(t->c);
    SSL_free(t->s);
    t->c = t->s = NULL;
    ERR_clear_error();
}

/* Handshake once; returns 1 ok / 0 failed; *reused / *cn describe it. */
static inline int tt_handshake(SSL_CTX *cctx, struct ct_tls_ctx *lc, const char *sni,
                               SSL_SESSION *resume, SSL_SESSION **out_sess, bool *reused, char *cn,
                               size_t cnlen)
{
    struct tt_conn t = tt_pair(cctx, lc, sni);
    if (resume)
        SSL_set_session(t.c, resume);
    int ok = tt_drive(&t);
    if (ok && reused)
        *reused = SSL_session_reused(t.c) && SSL_session_reused(t.s);
    if (ok && cn) {
        X509 *peer = SSL_get0_peer_certificate(t.c);
        cn[0] = '\0';
        if (peer)
            X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, (int)cnlen);
    }
    if (ok && out_sess)
        *out_sess = tt_take_session(&t);
    tt_close(&t);
    return ok;
}

#endif /* CT_TEST_TLS_UTIL_H */
