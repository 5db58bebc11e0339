/*
 * proxy/tls_int.h: shared inside the TLS code only (tls_ctx.c, tls_tickets.c,
 * tls_selfsigned.c); nothing outside proxy/tls*.c includes it.
 */
#ifndef CT_TLS_INT_H
#define CT_TLS_INT_H

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "proxy/tls.h"

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
int ct_tls_selfsigned_make(X509 **xp, EVP_PKEY **keyp, char *note, size_t notelen,
                           char *err, size_t errlen);

/* Append the SHA-256 fingerprint of X as "AB:CD:..." to BUF. */
void ct_tls_fingerprint(X509 *x, char *buf, size_t len);

#endif /* CT_TLS_INT_H */
