/*
 * conf/conf_tls.c: the TLS cross-checks that need OpenSSL, for validation
 * only (proxy/ builds the real SSL_CTX): certificate and key files readable
 * and PEM, each certificate matching its key, the client CA file holding
 * certificates, and the cipher, suite and group lists understood by this
 * OpenSSL. Each check drains OpenSSL's error queue so nothing leaks into the
 * caller's next TLS call on this thread. The same for TLS to origins
 * (backends[].tls): CA bundle, client certificate and key, names, lists.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

#include "conf/conf_int.h"

#define TLS_ERR(cf, errs, path, ...)                                                          \
    ct_conf_err((errs), ct_conf_locs_find((cf)->_locs, (path), (cf)->source), (path), __VA_ARGS__)

/* An encrypted key can't be used unattended: refuse rather than prompt. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return 0;
}

static FILE *open_pem(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *path,
                      const char *file)
{
    FILE *fp = fopen(file, "r");
    if (!fp)
        TLS_ERR(cf, errs, path, "cannot read \"%s\": %s (expected a readable PEM file)", file,
                strerror(errno));
    return fp;
}

static X509 *read_cert(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *path,
                       const char *file)
{
    FILE *fp = open_pem(cf, errs, path, file);
    if (!fp)
        return NULL;
    X509 *x = PEM_read_X509(fp, NULL, no_passphrase, NULL);
    fclose(fp);
    if (!x)
        TLS_ERR(cf, errs, path, "no certificate in \"%s\" (expected a PEM certificate)", file);
    ERR_clear_error();
    return x;
}

static EVP_PKEY *read_key(const struct ct_conf *cf, struct ct_conf_errors *errs,
                          const char *path, const char *file)
{
    FILE *fp = open_pem(cf, errs, path, file);
    if (!fp)
        return NULL;
    EVP_PKEY *pk = PEM_read_PrivateKey(fp, NULL, no_passphrase, NULL);
    fclose(fp);
    if (!pk)
        TLS_ERR(cf, errs, path, "no usable private key in \"%s\" (expected an unencrypted PEM "
                                "private key)", file);
    ERR_clear_error();
    return pk;
}

/* CERT_FILE and KEY_FILE (at CPATH, KPATH) readable, PEM, and a pair: a
 * listener's certificate or a backend's client certificate alike. */
static void check_cert_key(const struct ct_conf *cf, struct ct_conf_errors *errs,
                           const char *cpath, const char *cert_file, const char *kpath,
                           const char *key_file)
{
    X509 *x = read_cert(cf, errs, cpath, cert_file);
    EVP_PKEY *pk = read_key(cf, errs, kpath, key_file);
    if (x && pk && X509_check_private_key(x, pk) != 1)
        TLS_ERR(cf, errs, kpath, "key \"%s\" does not match certificate \"%s\" (expected the "
                                 "private key of that certificate)", key_file, cert_file);
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(pk);
}

static void check_pair(const struct ct_conf *cf, struct ct_conf_errors *errs, size_t i, size_t k)
{
    const struct ct_conf_cert *c = &cf->listeners[i].tls.certs[k];
    char cpath[96], kpath[96];
    snprintf(cpath, sizeof(cpath), "listen[%zu].tls.certificates[%zu].cert", i, k);
    snprintf(kpath, sizeof(kpath), "listen[%zu].tls.certificates[%zu].key", i, k);
    check_cert_key(cf, errs, cpath, c->cert_file, kpath, c->key_file);
}

/* AT's `ciphers` (TLS 1.2) and `ciphersuites` (TLS 1.3), tried on CTX: a
 * listener's and a backend's tls group take the same lists. */
static void check_suites(const struct ct_conf *cf, struct ct_conf_errors *errs, SSL_CTX *ctx,
                         const char *at, const char *ciphers, const char *ciphersuites)
{
    char path[208];
    /* set_cipher_list fails only when nothing usable is left of the list */
    snprintf(path, sizeof(path), "%s.ciphers", at);
    if (SSL_CTX_set_cipher_list(ctx, ciphers) != 1)
        TLS_ERR(cf, errs, path, "no usable cipher in \"%s\" (expected an OpenSSL cipher list "
                                "such as ECDHE-ECDSA-AES128-GCM-SHA256:...)", ciphers);
    snprintf(path, sizeof(path), "%s.ciphersuites", at);
    if (SSL_CTX_set_ciphersuites(ctx, ciphersuites) != 1)
        TLS_ERR(cf, errs, path, "invalid TLS 1.3 suites \"%s\" (expected a list such as "
                                "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384)", ciphersuites);
}

static void check_lists(const struct ct_conf *cf, struct ct_conf_errors *errs, SSL_CTX *ctx,
                        size_t i)
{
    const struct ct_conf_tls *t = &cf->listeners[i].tls;
    char path[96];
    snprintf(path, sizeof(path), "listen[%zu].tls", i);
    check_suites(cf, errs, ctx, path, t->ciphers, t->ciphersuites);
    snprintf(path, sizeof(path), "listen[%zu].tls.groups", i);
    if (SSL_CTX_set1_groups_list(ctx, t->groups) != 1)
        TLS_ERR(cf, errs, path, "invalid groups \"%s\" (expected a list such as "
                                "X25519:P-256)", t->groups);
    ERR_clear_error();
}

void ct_conf_check_tls_files(const struct ct_conf *cf, struct ct_conf_errors *errs)
{
    SSL_CTX *ctx = NULL;
    for (size_t i = 0; i < cf->nlisteners; i++) {
        const struct ct_conf_tls *t = &cf->listeners[i].tls;
        if (cf->listeners[i].kind != CT_CONF_LISTEN_HTTPS)
            continue;
        for (size_t k = 0; k < t->ncerts; k++)
            check_pair(cf, errs, i, k);
        if (t->client_ca) {
            char path[96];
            snprintf(path, sizeof(path), "listen[%zu].tls.client_ca", i);
            X509_free(read_cert(cf, errs, path, t->client_ca));
        }
        if (!ctx)
            ctx = SSL_CTX_new(TLS_server_method());
        CT_ASSERT(ctx != NULL);
        check_lists(cf, errs, ctx, i);
    }
    SSL_CTX_free(ctx);
    ERR_clear_error();
}

/* ---- TLS to origins (backends[].tls) ------------------------------------------ */

/* A CA bundle: readable, PEM, at least one certificate. */
static void check_ca(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *path,
                     const char *file)
{
    X509 *x = read_cert(cf, errs, path, file);
    X509_free(x);
}

static void check_client_pair(const struct ct_conf *cf, struct ct_conf_errors *errs,
                              const char *at, const struct ct_conf_backend_tls *t)
{
    char cpath[200], kpath[200];
    snprintf(cpath, sizeof(cpath), "%s.cert", at);
    snprintf(kpath, sizeof(kpath), "%s.key", at);
    if (!t->cert != !t->key) {
        TLS_ERR(cf, errs, t->cert ? cpath : kpath, "a client certificate needs its key (expected "
                                                   "both cert and key, or neither)");
        return;
    }
    if (t->cert)
        check_cert_key(cf, errs, cpath, t->cert, kpath, t->key);
}

static bool name_ok(const char *s)
{
    unsigned char ip[16];
    char *lc = NULL;
    if (inet_pton(AF_INET, s, ip) == 1 || inet_pton(AF_INET6, s, ip) == 1)
        return true;
    if (strchr(s, '*') || ct_conf_parse_server_name(s, &lc) != CT_OK)
        return false;
    free(lc);
    return true;
}

static void check_backend_lists(const struct ct_conf *cf, struct ct_conf_errors *errs,
                                const char *at, const struct ct_conf_backend_tls *t)
{
    char path[200];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    CT_ASSERT(ctx != NULL);
    check_suites(cf, errs, ctx, at, t->ciphers, t->ciphersuites);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    snprintf(path, sizeof(path), "%s.alpn", at);
    for (size_t k = 0; k < t->nalpn; k++)
        if (strlen(t->alpn[k]) > 255)
            TLS_ERR(cf, errs, path, "protocol name of %zu bytes (expected at most 255, RFC 7301 "
                                    "§3.1)", strlen(t->alpn[k]));
}

void ct_conf_check_backend_tls(const struct ct_conf *cf, struct ct_conf_errors *errs,
                               const char *prefix, size_t i, const struct ct_conf_backend *b)
{
    const struct ct_conf_backend_tls *t = &b->tls;
    if (!t->on)
        return;
    char at[160], path[200];
    snprintf(at, sizeof(at), "%s[%zu].tls", prefix, i);
    if (strcmp(t->ca, "system") != 0) {
        snprintf(path, sizeof(path), "%s.ca", at);
        check_ca(cf, errs, path, t->ca);
    }
    check_client_pair(cf, errs, at, t);
    if (t->server_name && strcmp(t->server_name, CT_CONF_SERVER_NAME_HOST) != 0 &&
        !name_ok(t->server_name)) {
        snprintf(path, sizeof(path), "%s.server_name", at);
        TLS_ERR(cf, errs, path, "invalid name \"%s\" (expected a host name such as "
                                "origin.example.com, an IP address, \"$host\" or off)",
                t->server_name);
    }
    check_backend_lists(cf, errs, at, t);
}
