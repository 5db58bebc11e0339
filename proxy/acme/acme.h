/*
 * proxy/acme/acme.h: certificates that take care of themselves (issue 45):
 * an ACME client (RFC 8555) on the main thread's event loop, which orders,
 * renews and stores the certificates of the names of every HTTPS listener
 * with tls.acme, answers their challenges through tls/'s challenge store
 * (HTTP-01 in the workers' request path, TLS-ALPN-01 in the handshake), and
 * hands each new certificate to its caller, which installs it into the
 * listeners' TLS contexts (tls/tls.h ct_tls_ctx_acme_install). One process
 * orders; the workers only read.
 *
 * Files (docs/acme.md): STORAGE/account.key (the account's EC P-256 key,
 * 0600), STORAGE/account.url, STORAGE/NAME/key.pem (0600) and
 * STORAGE/NAME/cert.pem (leaf then chain), each written to a temporary
 * name and renamed.
 *
 * Threads: ct_acme_* on the main thread only. The parsing and JWS helpers
 * below are pure and thread-safe (and fuzzed: tests/fuzz/fuzz_acme_parse.c).
 */
#ifndef CT_ACME_H
#define CT_ACME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

struct event_base;
struct ct_conf;
struct ct_tls_chal;
typedef struct evp_pkey_st EVP_PKEY;

/* ---- the manager ------------------------------------------------------------ */

struct ct_acme; /* opaque; main thread */

/* Install NAME's new certificate (PEM leaf then chain, PEM key) wherever it
 * is served. Main thread. */
typedef void ct_acme_install_fn(void *arg, const char *name, const char *cert_pem,
                                size_t cert_len, const char *key_pem, size_t key_len);

/* The client for every tls.acme of CF (NULL when there is none): reads the
 * stored certificates and schedules each name's order or renewal on BASE.
 * CF must outlive it; CHAL is the store the listeners answer from. */
struct ct_acme *ct_acme_new(struct event_base *base, const struct ct_conf *cf,
                            struct ct_tls_chal *chal, ct_acme_install_fn *install, void *arg);
/* After a reload to CF: names no longer configured stop (their request in
 * flight is dropped), new names are loaded from storage or ordered; a name
 * kept keeps its certificate, its order in flight and its issuer (a changed
 * directory or storage for it takes a restart). */
void ct_acme_update(struct ct_acme *a, const struct ct_conf *cf);
/* Stop every timer and request; sets *AP = NULL. */
void ct_acme_free(struct ct_acme **ap);

/* One name's state, for /stats, /metrics, /certs and `cachet ctl certs`. */
struct ct_acme_info {
    const char *name;
    const char *state;   /* "valid", "ordering", "waiting" (retry), "none" */
    const char *outcome; /* the last order's: "none", "issued", "failed", "stored" */
    const char *detail;  /* the last failure in words ("" when none) */
    const char *challenge; /* the last challenge type answered, "" when none */
    double not_after;    /* the served certificate's expiry (Unix s), 0: none */
    double next;         /* the next order or renewal (Unix s), 0: none planned */
    uint64_t orders, failures, installs;
};
typedef void ct_acme_info_fn(const struct ct_acme_info *in, void *arg);
/* Call FN for every name, in configuration order. Returns how many. */
size_t ct_acme_each(const struct ct_acme *a, ct_acme_info_fn *fn, void *arg);

/* ---- the CA's messages (acme_parse.c) -------------------------------------- */

enum ct_acme_status {
    CT_ACME_PENDING,
    CT_ACME_READY,
    CT_ACME_PROCESSING,
    CT_ACME_VALID,
    CT_ACME_INVALID,
    CT_ACME_OTHER, /* absent, or deactivated/expired/revoked */
};
const char *ct_acme_status_name(enum ct_acme_status s);

#define CT_ACME_MAX_AUTHZ 100
#define CT_ACME_MAX_CHAL 16

struct ct_acme_problem { /* RFC 8555 §6.7; NULL members when absent */
    char *type, *detail;
};
struct ct_acme_directory {
    char *new_nonce, *new_account, *new_order, *terms;
};
struct ct_acme_order {
    enum ct_acme_status status;
    char **authz;
    size_t nauthz;
    char *finalize, *certificate; /* certificate: NULL until valid */
    struct ct_acme_problem error;
};
struct ct_acme_chal {
    char *type, *url, *token; /* token may be NULL for types we skip */
    enum ct_acme_status status;
    struct ct_acme_problem error;
};
struct ct_acme_authz {
    enum ct_acme_status status;
    char *name;
    struct ct_acme_chal *chal;
    size_t nchal;
};

/* Each parses BODY[0..LEN) (no NUL needed) into the zeroed struct: CT_OK,
 * or CT_EPROTO with ERR saying what was wrong (the struct then empty). */
int ct_acme_parse_directory(const char *body, size_t len, struct ct_acme_directory *d, char *err,
                            size_t errlen);
int ct_acme_parse_order(const char *body, size_t len, struct ct_acme_order *od, char *err,
                        size_t errlen);
int ct_acme_parse_authz(const char *body, size_t len, struct ct_acme_authz *az, char *err,
                        size_t errlen);
/* A problem document: true with P->type set (detail may be NULL). */
bool ct_acme_parse_problem(const char *body, size_t len, struct ct_acme_problem *p);
void ct_acme_directory_free(struct ct_acme_directory *d);
void ct_acme_order_free(struct ct_acme_order *od);
void ct_acme_authz_free(struct ct_acme_authz *az);
void ct_acme_chal_free(struct ct_acme_chal *ch);
void ct_acme_problem_free(struct ct_acme_problem *p);
/* A challenge token we may serve: base64url, 16 to 256 characters. */
bool ct_acme_token_ok(const char *token);

/* ---- JWS and keys (acme_jws.c); returned strings are the caller's ---------- */

char *ct_acme_b64url(const unsigned char *in, size_t len);
/* The EC P-256 public JWK in RFC 7638's canonical form (also the
 * thumbprint's input); NULL on failure. */
char *ct_acme_jwk(const EVP_PKEY *key);
char *ct_acme_thumbprint(const char *jwk);
char *ct_acme_keyauth(const char *token, const char *thumbprint);
/* A flattened JWS (RFC 8555 §6.2) of PAYLOAD ("" for POST-as-GET) signed
 * ES256 with KEY: with KID (the account URL) or, when NULL, with JWK. */
char *ct_acme_jws(EVP_PKEY *key, const char *jwk, const char *kid, const char *nonce,
                  const char *url, const char *payload);
/* A CSR for NAME with KEY, DER in base64url (newOrder's finalize). */
char *ct_acme_csr(EVP_PKEY *key, const char *name);

/* ---- the HTTPS client (acme_http.c) ----------------------------------------- */

struct ct_acme_http;
struct ct_acme_resp {
    int status; /* 0: no answer (ERR says why) */
    const char *body; /* NUL-terminated copy */
    size_t len;
    const char *nonce, *location, *retry_after, *ctype; /* NULL when absent */
    char err[256];
};
typedef void ct_acme_http_cb(void *arg, const struct ct_acme_resp *r);
/* CA_FILE: PEM CAs the server is verified against; NULL: the system's. */
struct ct_acme_http *ct_acme_http_new(struct event_base *base, const char *ca_file, char *err,
                                      size_t errlen);
void ct_acme_http_free(struct ct_acme_http **hp);
/* Drop the request in flight whose callback argument is ARG, if any: its
 * callback is never called. */
void ct_acme_http_cancel(struct ct_acme_http *h, void *arg);
/* METHOD "GET", "HEAD" or "POST" (BODY, as application/jose+json) to URL;
 * CB is called once, later, from the loop. Returns CT_OK or an error with
 * ERR (then CB is never called). */
int ct_acme_http_req(struct ct_acme_http *h, const char *method, const char *url,
                     const char *body, const char *accept, ct_acme_http_cb *cb, void *arg,
                     char *err, size_t errlen);

#endif /* CT_ACME_H */
