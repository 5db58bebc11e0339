/*
 * tls/tls_client.c: TLS to origins (issue 39), the client side.
 *
 * One struct ct_tls_client per TLS backend and configuration generation: an
 * SSL_CTX with the backend's verification (CA bundle, or the system store
 * loaded once per process and shared by every backend: ~140 roots parsed
 * once, not per SSL_CTX), client certificate, versions, ciphers and ALPN.
 * Built on the main thread, then read-only: SSL_new from any worker.
 *
 * Per connection (ct_tls_client_ssl): SNI is the name unless it is an IP
 * literal (RFC 6066 §3); the certificate is checked against the name
 * (X509_VERIFY_PARAM host, no partial wildcards) or the IP address.
 *
 * Sessions. OpenSSL's client cache is not used (SSL_SESS_CACHE_NO_INTERNAL_STORE):
 * the caller keeps the sessions, per worker and backend, keyed by the name
 * and this context's generation (which changes with every setting), because
 * OpenSSL does not verify the certificate again on resumption: a session
 * resumed under another name or other trust would skip the check. Each new
 * session (TLS 1.2 at the handshake's end; TLS 1.3 when a NewSessionTicket
 * arrives, after the handshake) goes to the connection's sink.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "tls/tls_int.h"

#define CT_TLS_CLIENT_MAGIC 0x7c11e47au

struct ct_tls_client {
    unsigned magic;
    SSL_CTX *sctx;
    uint64_t gen;
    bool verify;
};

static atomic_uint_fast64_t next_gen = 1;
static int sink_idx = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static X509_STORE *system_store; /* the system's CAs, built once; one reference held */
static char system_err[256];

static pthread_once_t system_once = PTHREAD_ONCE_INIT;

static void init_once(void)
{
    sink_idx = SSL_get_ex_new_index(0, (void *)"cachet: session sink", NULL, NULL, NULL);
}

/* Parsing Debian's bundle costs ~250 M instructions: only for a backend
 * that uses it. */
static void system_store_once(void)
{
    system_store = X509_STORE_new();
    if (system_store && !X509_STORE_set_default_paths(system_store)) {
        ct_tls_set_err(system_err, sizeof(system_err), "cannot load the system CA store");
        X509_STORE_free(system_store);
        system_store = NULL;
    }
    ERR_clear_error();
}

/* The connection got a resumable session: its sink takes the reference. */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    const struct ct_tls_sess_sink *sink = SSL_get_ex_data(ssl, sink_idx);
    if (sink == NULL || sink->fn == NULL || !SSL_SESSION_is_resumable(sess))
        return 0; /* OpenSSL keeps (and frees) it */
    sink->fn(sink->arg, sess);
    return 1;
}

static int set_ca(struct ct_tls_client *c, const struct ct_tls_client_conf *cf, char *err,
                  size_t errlen)
{
    if (!cf->verify)
        return CT_OK;
    if (cf->ca_file == NULL) {
        pthread_once(&system_once, system_store_once);
        if (system_store == NULL) {
            snprintf(err, errlen, "%s", system_err[0] ? system_err : "no system CA store");
            return CT_ECONF;
        }
        SSL_CTX_set1_cert_store(c->sctx, system_store);
    } else if (!SSL_CTX_load_verify_file(c->sctx, cf->ca_file)) {
        ct_tls_set_err(err, errlen, "cannot load CA \"%s\"", cf->ca_file);
        return CT_ECONF;
    }
    SSL_CTX_set_verify(c->sctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_verify_depth(c->sctx, (int)CT_TLS_DEFAULT_VERIFY_DEPTH);
    return CT_OK;
}

static int set_client_cert(struct ct_tls_client *c, const struct ct_tls_client_conf *cf,
                           char *err, size_t errlen)
{
    if (cf->cert_file == NULL)
        return CT_OK;
    struct ct_tls_cert lc = {0};
    struct ct_tls_cert_conf cc = {.cert_file = cf->cert_file, .key_file = cf->key_file};
    int rc = ct_tls_cert_load(&lc, &cc, err, errlen);
    if (rc == CT_OK && !SSL_CTX_use_cert_and_key(c->sctx, lc.x, lc.key, lc.chain, 1)) {
        ct_tls_set_err(err, errlen, "cannot use client certificate \"%s\"", cf->cert_file);
        rc = CT_ECONF;
    }
    ct_tls_cert_free(&lc);
    return rc;
}

static int set_alpn(struct ct_tls_client *c, const struct ct_tls_client_conf *cf, char *err,
                    size_t errlen)
{
    unsigned char wire[512];
    size_t n = 0;
    for (size_t i = 0; i < cf->nalpn; i++) {
        size_t len = strlen(cf->alpn[i]);
        if (len == 0 || len > 255 || n + 1 + len > sizeof(wire)) {
            snprintf(err, errlen, "ALPN list too long or empty name (RFC 7301 §3.1)");
            return CT_ECONF;
        }
        wire[n++] = (unsigned char)len;
        memcpy(wire + n, cf->alpn[i], len);
        n += len;
    }
    if (n > 0 && SSL_CTX_set_alpn_protos(c->sctx, wire, (unsigned)n) != 0) {
        ct_tls_set_err(err, errlen, "cannot set ALPN");
        return CT_ECONF;
    }
    return CT_OK;
}

struct ct_tls_client *ct_tls_client_new(const struct ct_tls_client_conf *cf, char *err,
                                        size_t errlen)
{
    pthread_once(&once, init_once);
    if (sink_idx < 0) {
        snprintf(err, errlen, "cannot allocate an OpenSSL ex_data index");
        return NULL;
    }
    struct ct_tls_client *c = ct_xcalloc(1, sizeof(*c));
    c->magic = CT_TLS_CLIENT_MAGIC;
    c->gen = atomic_fetch_add(&next_gen, 1);
    c->verify = cf->verify;
    c->sctx = SSL_CTX_new(TLS_client_method());
    int rc = c->sctx ? CT_OK : CT_ETLS;
    if (rc != CT_OK)
        ct_tls_set_err(err, errlen, "cannot make a TLS client context");
    int min = cf->min_version ? cf->min_version : CT_TLS_V1_2;
    if (rc == CT_OK && (!SSL_CTX_set_min_proto_version(c->sctx, min) ||
                        !SSL_CTX_set_cipher_list(c->sctx, cf->ciphers ? cf->ciphers
                                                                      : CT_TLS_DEFAULT_CIPHERS) ||
                        !SSL_CTX_set_ciphersuites(c->sctx, cf->ciphersuites
                                                               ? cf->ciphersuites
                                                               : CT_TLS_DEFAULT_CIPHERSUITES))) {
        ct_tls_set_err(err, errlen, "TLS versions or ciphers");
        rc = CT_ECONF;
    }
    if (rc == CT_OK)
        rc = set_ca(c, cf, err, errlen);
    if (rc == CT_OK)
        rc = set_client_cert(c, cf, err, errlen);
    if (rc == CT_OK)
        rc = set_alpn(c, cf, err, errlen);
    if (rc != CT_OK) {
        ct_tls_client_free(&c);
        return NULL;
    }
    SSL_CTX_set_options(c->sctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                     (cf->session_reuse ? 0 : SSL_OP_NO_TICKET));
    /* Idle pooled connections give their TLS buffers back. */
    SSL_CTX_set_mode(c->sctx, SSL_MODE_RELEASE_BUFFERS);
    if (cf->session_reuse) {
        SSL_CTX_set_session_cache_mode(c->sctx,
                                       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(c->sctx, on_new_session);
    } else {
        SSL_CTX_set_session_cache_mode(c->sctx, SSL_SESS_CACHE_OFF);
    }
    ERR_clear_error();
    return c;
}

void ct_tls_client_free(struct ct_tls_client **cp)
{
    struct ct_tls_client *c = *cp;
    *cp = NULL;
    if (c == NULL)
        return;
    CT_CHECK_OBJ(c, CT_TLS_CLIENT_MAGIC);
    SSL_CTX_free(c->sctx);
    c->magic = 0;
    free(c);
}

uint64_t ct_tls_client_gen(const struct ct_tls_client *c)
{
    CT_CHECK_OBJ(c, CT_TLS_CLIENT_MAGIC);
    return c->gen;
}

bool ct_tls_name_is_ip(const char *name)
{
    unsigned char ip[16];
    return inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
}

SSL *ct_tls_client_ssl(struct ct_tls_client *c, const char *name, SSL_SESSION *resume,
                       const struct ct_tls_sess_sink *sink)
{
    CT_CHECK_OBJ(c, CT_TLS_CLIENT_MAGIC);
    SSL *ssl = SSL_new(c->sctx);
    if (ssl == NULL)
        return NULL;
    bool ip = ct_tls_name_is_ip(name);
    bool ok = ip || SSL_set_tlsext_host_name(ssl, name) == 1;
    if (ok && c->verify) {
        if (ip) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1;
        } else {
            SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            ok = SSL_set1_host(ssl, name) == 1;
        }
    }
    if (ok && sink)
        ok = SSL_set_ex_data(ssl, sink_idx, (void *)sink) == 1;
    if (ok && resume)
        ok = SSL_set_session(ssl, resume) == 1;
    if (!ok) {
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}

void ct_tls_session_free(SSL_SESSION **sp)
{
    SSL_SESSION_free(*sp);
    *sp = NULL;
}

enum ct_tls_fail ct_tls_client_failure(SSL *ssl, unsigned long e, char *buf, size_t len)
{
    long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (vr != X509_V_OK) {
        snprintf(buf, len, "certificate verify failed: %s", X509_verify_cert_error_string(vr));
        switch (vr) {
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH: return CT_TLS_FAIL_NAME;
        case X509_V_ERR_CERT_HAS_EXPIRED:
        case X509_V_ERR_CERT_NOT_YET_VALID: return CT_TLS_FAIL_EXPIRED;
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE: return CT_TLS_FAIL_UNTRUSTED;
        default: return CT_TLS_FAIL_VERIFY;
        }
    }
    e = ct_tls_error_real(e);
    if (e != 0) {
        ct_tls_error_string(e, buf, len);
        /* a cleartext answer on the TLS port reads as a bad record */
        if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER)
            snprintf(buf, len, "the origin does not speak TLS on this port (wrong version "
                               "number: a cleartext answer?)");
        return CT_TLS_FAIL_HANDSHAKE;
    }
    snprintf(buf, len, "connection closed during the TLS handshake");
    return CT_TLS_FAIL_HANDSHAKE;
}

const char *ct_tls_version_name(SSL *ssl)
{
    switch (SSL_version(ssl)) {
    case TLS1_3_VERSION: return "1.3";
    case TLS1_2_VERSION: return "1.2";
    default: return "-";
    }
}

bool ct_tls_session_reused(SSL *ssl) { return SSL_session_reused(ssl) == 1; }

bool ct_tls_verify_ok(SSL *ssl) { return SSL_get_verify_result(ssl) == X509_V_OK; }

void ct_tls_session_keep(SSL *ssl)
{
    if (ssl != NULL)
        SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_SENT_SHUTDOWN);
}

SSL_SESSION *ct_tls_session_copy(SSL_SESSION *s) { return SSL_SESSION_dup(s); }

bool ct_tls_session_single_use(SSL_SESSION *s)
{
    return SSL_SESSION_get_protocol_version(s) == TLS1_3_VERSION;
}

bool ct_tls_session_resumable(SSL_SESSION *s) { return SSL_SESSION_is_resumable(s) == 1; }


unsigned long ct_tls_error_real(unsigned long e) { return ERR_GET_LIB(e) == 0 ? 0 : e; }
