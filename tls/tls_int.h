/*
 * tls/tls_int.h: shared inside the TLS code only (tls_ctx.c, tls_tickets.c,
 * tls_selfsigned.c); nothing outside tls/tls_**.c includes it.
 */
#ifndef CT_TLS_INT_H
#define CT_TLS_INT_H

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tls/tls.h"

/* Install the shared ticket-key callback on SSL_CTX (tls_tickets.c). The
 * callback finds SH through the SSL_CTX's app data (struct ct_tls_ctx) via
 * ct_tls_ctx_shared_of(). */
void ct_tls_tickets_install(SSL_CTX *sctx);
struct ct_tls_shared *ct_tls_ctx_shared_of(SSL_CTX *sctx);

/* Generate the embedded default: an EC P-256 key and a self-signed
 * certificate for CN=localhost, SAN DNS:localhost, IP:127.0.0.1, valid from
 * an hour ago for a year (tls_selfsigned.c). On success the caller owns *XP
 * and *KEYP and NOTE holds a one-line description. Returns CT_OK or CT_ETLS
 * with ERR filled. */
int ct_tls_selfsigned_make(X509 **xp, EVP_PKEY **keyp, char *note, size_t notelen, char *err,
                           size_t errlen);

/* A random positive 127-bit serial number on X (tls_selfsigned.c): 1 or 0. */
int ct_tls_set_random_serial(X509 *x);

/* Append the SHA-256 fingerprint of X as "AB:CD:..." to BUF. */
void ct_tls_fingerprint(X509 *x, char *buf, size_t len);

#define CT_TLS_MAX_NAME 253 /* RFC 1035 §2.3.4, without the trailing dot */

/* One loaded certificate (tls_certs.c); freed with ct_tls_cert_free(). */
struct ct_tls_cert {
    X509 *x;
    STACK_OF(X509) * chain;
    EVP_PKEY *key;
    char **names;
    size_t nnames;
    char label[160]; /* for the description */
};

/* Load CC's certificate, chain and key, check they match, and collect its
 * server names. Returns CT_OK or CT_ECONF with ERR filled (file + reason). */
int ct_tls_cert_load(struct ct_tls_cert *lc, const struct ct_tls_cert_conf *cc, char *err,
                     size_t errlen);
void ct_tls_cert_free(struct ct_tls_cert *lc);
/* The names of LC->x (SAN DNS names, else the CN), appended to LC->names. */
void ct_tls_names_from_cert(struct ct_tls_cert *lc);
/* Lower-case and check a server name into OUT (CT_TLS_MAX_NAME + 1 bytes);
 * '*' only as a whole first label; a trailing dot dropped. */
bool ct_tls_name_norm(const char *s, size_t len, char *out);
/* Fill ERR with the message and, when OpenSSL queued reasons, ": reason"
 * (the queue is emptied either way). */
void ct_tls_set_err(char *err, size_t errlen, const char *fmt, ...) CT_PRINTF(3, 4);

/* ---- ACME (tls_acme.c) ---------------------------------------------------- */

/* Serve the TLS-ALPN-01 validation certificate of NAME (normalised) on SSL,
 * replacing its certificates. False when there is none. Any thread. */
bool ct_tls_chal_alpn_use(struct ct_tls_chal *ch, SSL *ssl, const char *name);
/* The placeholder served for ACME names until their first certificate: a
 * self-signed EC P-256 certificate for NAMES[0..N). NOTE: one line for the
 * log. Returns CT_OK (caller owns *XP, *KEYP) or CT_ETLS with ERR. */
int ct_tls_acme_placeholder(const char *const *names, size_t n, X509 **xp, EVP_PKEY **keyp,
                            char *note, size_t notelen, char *err, size_t errlen);
/* A PEM certificate (leaf, then chain) and its PEM key, checked to match.
 * Returns CT_OK (caller owns the three) or CT_ECONF with ERR. */
int ct_tls_pem_load(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                    X509 **xp, STACK_OF(X509) * *chainp, EVP_PKEY **keyp, char *err,
                    size_t errlen);

#endif /* CT_TLS_INT_H */
