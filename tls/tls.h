/*
 * tls/tls.h: TLS termination on OpenSSL 3.0 (issue 4). Deals in SSL_CTX
 * and SSL only; the proxy wraps an accepted fd with
 *
 *     SSL *ssl = ct_tls_new_ssl(lctx);
 *     bev = bufferevent_openssl_socket_new(base, fd, ssl,
 *               BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE | ...);
 *
 * and libevent owns the SSL from then on (freed by bufferevent_free(), and
 * already freed when that call fails).
 *
 * Objects:
 * - struct ct_tls_shared: the session-ticket keys (current + previous),
 *   refcounted, shared by every listener context and every worker. Rotated by
 *   ct_tls_shared_tick() from a timer (any thread); a ticket made with the key
 *   that has just been retired still decrypts (and is renewed), one made two
 *   rotations ago does not (full handshake).
 * - struct ct_tls_ctx: one per HTTPS listener, built once from a
 *   struct ct_tls_listener_conf and shared read-only by all workers (an
 *   SSL_CTX is thread-safe for SSL_new and its session cache is locked), so a
 *   session cached by one worker resumes on another. Holds one SSL_CTX per
 *   group of certificates that serve the same server names (an ECDSA and an
 *   RSA certificate for the same names sit on one SSL_CTX and OpenSSL gives
 *   each client the one its signature algorithms allow), a name table for SNI
 *   (exact names, then one-label wildcards), and handshake counters.
 *
 * Wiring checklist for the proxy (what each piece of issue 4 needs):
 * - start: one ct_tls_shared per process, ct_tls_ctx_from_conf() per HTTPS
 *   listener (log ct_tls_ctx_describe() and ct_tls_ctx_selfsigned_note());
 *   a 1 s timer calls ct_tls_shared_tick(sh, ct_time_mono()). Keep the same
 *   ct_tls_shared across reloads and tickets survive them.
 * - accept: ct_tls_new_ssl() into bufferevent_openssl_socket_new().
 * - handshake error event: pop bufferevent_get_openssl_error(); if
 *   ct_tls_error_is_plain_http(), ct_tls_answer_plain_http(fd) before the
 *   free; log ct_tls_error_string().
 * - request from an HTTPS client: X-Forwarded-Proto: https; with
 *   client_subject_header, drop any client-sent copy and add
 *   ct_tls_peer_subject() when it returns > 0.
 * - normal close (response done, idle/keep-alive end, client EOF): call
 *   ct_tls_close_notify() once the output is flushed, then bufferevent_free();
 *   without it TLS 1.2 session-id resumption fails and clients that read to
 *   EOF (s_time, wrk) see "unexpected eof" and drop their tickets.
 * - metrics: ct_tls_ctx_stats() per listener.
 *
 * Threads: everything here may be called from any thread, except that one SSL
 * belongs to one thread at a time (OpenSSL's rule). Nothing here logs: errors
 * are written into caller-supplied buffers, OpenSSL's queue is drained by
 * ct_tls_drain_errors() for the caller's log.
 */
#ifndef CT_TLS_H
#define CT_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* OpenSSL's own typedef (openssl/types.h); C11 allows the repetition and it
 * keeps this header free of OpenSSL includes. */
typedef struct ssl_st SSL;
typedef struct x509_st X509;

struct ct_tls_shared; /* opaque; refcounted */
struct ct_tls_chal;   /* opaque; one per process (ACME challenges) */
struct ct_tls_ctx;    /* opaque; single owner (the listener) */

/* TLS protocol versions as on the wire (= OpenSSL's TLS1_x_VERSION). */
#define CT_TLS_V1_2 0x0303
#define CT_TLS_V1_3 0x0304

/* Mozilla "intermediate" (v5.7) TLS 1.2 suites; TLS 1.3 uses OpenSSL's three
 * default suites, which are Mozilla's too. DHE needs a group: OpenSSL picks
 * an RFC 7919 ffdhe group matching the key size (SSL_CTX_set_dh_auto). */
#define CT_TLS_DEFAULT_CIPHERS                                                                     \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                                   \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"                                   \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"                                   \
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:"                                         \
    "DHE-RSA-CHACHA20-POLY1305"
#define CT_TLS_DEFAULT_CIPHERSUITES                                                                \
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define CT_TLS_DEFAULT_GROUPS "X25519:P-256"
#define CT_TLS_DEFAULT_SESSION_CACHE_SIZE 20480u /* sessions, OpenSSL's default */
#define CT_TLS_DEFAULT_SESSION_TIMEOUT_S 300u    /* nginx ssl_session_timeout */
#define CT_TLS_DEFAULT_ROTATE_MS 3600000u        /* ticket key rotation: 1 h */
#define CT_TLS_DEFAULT_VERIFY_DEPTH 4u

enum ct_tls_verify {
    CT_TLS_VERIFY_OFF = 0,  /* no CertificateRequest */
    CT_TLS_VERIFY_OPTIONAL, /* ask; a certificate sent must verify */
    CT_TLS_VERIFY_REQUIRED, /* ask; no certificate = handshake failure */
};

/* One certificate. The PEM cert file holds the leaf first, then its chain. */
struct ct_tls_cert_conf {
    const char *cert_file;
    const char *key_file; /* NULL: the key is in cert_file too */
    /* Server names this certificate answers ("www.example.com",
     * "*.example.com"). None: taken from the certificate (SAN DNS names, or
     * the CN when there is no SAN). */
    const char *const *names;
    size_t nnames;
    bool is_default; /* answers when SNI is absent or unknown; else the first */
};

/* A zero-filled struct is the embedded default: a self-signed EC P-256
 * certificate for localhost / 127.0.0.1, TLS 1.2+, tickets and cache on. */
struct ct_tls_listener_conf {
    const struct ct_tls_cert_conf *certs;
    size_t ncerts;               /* 0: generate the self-signed one */
    int min_version;             /* CT_TLS_V1_2 (0) or CT_TLS_V1_3 */
    const char *ciphers;         /* TLS <= 1.2; NULL: default above */
    const char *ciphersuites;    /* TLS 1.3; NULL: default above */
    const char *groups;          /* NULL: "X25519:P-256" */
    bool disable_tickets;        /* no session tickets issued or taken */
    bool disable_session_cache;  /* no server-side session cache */
    unsigned session_cache_size; /* 0: default */
    unsigned session_timeout_s;  /* 0: default; also the ticket lifetime hint */
    bool ktls;                   /* SSL_OP_ENABLE_KTLS (off by default) */
    bool disable_h2;             /* ALPN: http/1.1 only (else h2 first, then http/1.1) */
    const char *client_ca_file;  /* mTLS: PEM CA bundle; needs verify != OFF */
    enum ct_tls_verify verify;
    unsigned verify_depth; /* 0: default */
    /* ACME (proxy/acme/): names whose certificate is installed at run time
     * (ct_tls_ctx_acme_install). Until then they get a self-signed
     * placeholder; with no certificate besides, it is the default one too.
     * ACME_STORAGE: where NAME/cert.pem and NAME/key.pem are looked for
     * when the context is built (start, reload), NULL for none. */
    const char *const *acme_names;
    size_t nacme;
    const char *acme_storage;
};

/* ---- shared ticket keys ---------------------------------------------- */

/* A ticket key store rotating every ROTATE_MS milliseconds (0: default),
 * starting at NOW (monotonic clock, ct_time_mono()). Returns NULL with ERR
 * filled when the RNG fails. The caller owns one reference. */
struct ct_tls_shared *ct_tls_shared_new(uint64_t rotate_ms, ct_time_t now, char *err,
                                        size_t errlen);
struct ct_tls_shared *ct_tls_shared_ref(struct ct_tls_shared *sh);
/* Drop a reference; sets *SHP = NULL; the last one wipes the keys. */
void ct_tls_shared_release(struct ct_tls_shared **shp);
/* Rotate now: current becomes previous, a fresh key becomes current, the old
 * previous is wiped. Returns CT_OK or CT_ETLS (RNG failure; keys unchanged). */
int ct_tls_shared_rotate(struct ct_tls_shared *sh);
/* Rotate if the interval has passed since the last rotation (call it from a
 * timer, e.g. once a second, from any one thread). Returns 1 if it rotated,
 * 0 if not due, CT_ETLS on RNG failure. */
int ct_tls_shared_tick(struct ct_tls_shared *sh, ct_time_t now);
/* Number of rotations so far (for stats and tests). */
uint64_t ct_tls_shared_rotations(const struct ct_tls_shared *sh);

/* ---- listener context -------------------------------------------------- */

/* Build the context for one HTTPS listener: load and check every certificate
 * (or generate the self-signed default), apply protocols, ciphers, groups,
 * resumption, ALPN and mTLS settings. SHARED may be NULL when tickets are
 * disabled; otherwise the context takes its own reference.
 * Returns NULL with a one-line reason in ERR, e.g.
 *   certificate "/etc/cachet/a.pem" and key "/etc/cachet/a.key" do not match */
struct ct_tls_ctx *ct_tls_ctx_new(const struct ct_tls_listener_conf *cf,
                                  struct ct_tls_shared *shared, char *err, size_t errlen);
/* Free the context; sets *CTXP = NULL. SSLs made from it hold references to
 * its SSL_CTXs and may outlive it, but its counters and SNI table go: free
 * it only after its connections are closed. */
void ct_tls_ctx_free(struct ct_tls_ctx **ctxp);

/* The same from conf/'s view of one HTTPS listener (conf/conf.h): the
 * listener's certificates (or self_signed), versions, ciphers, tickets,
 * cache, kTLS and client verification. Only in ct_tls when conf/ is built.
 * Create one struct ct_tls_shared per process (rotation from the first HTTPS
 * listener's ticket_key_rotation_ms) and pass it to every listener. */
struct ct_conf_tls;
struct ct_tls_ctx *ct_tls_ctx_from_conf(const struct ct_conf_tls *t, struct ct_tls_shared *sh,
                                        char *err, size_t errlen);

/* A new server-side SSL for one accepted connection (owned by the caller,
 * which normally hands it to bufferevent_openssl). NULL on allocation
 * failure (OpenSSL's queue says why). The handshake counters come from the
 * SSL_CTX's info callback: do not install one on the SSL itself
 * (SSL_set_info_callback would replace it). */
SSL *ct_tls_new_ssl(struct ct_tls_ctx *ctx);

/* One line describing the certificates and settings, for the startup log:
 * "2 certificates (ECDSA P-256 "example.com" +1 name; RSA 2048 ...), TLSv1.2+, ..." */
const char *ct_tls_ctx_describe(const struct ct_tls_ctx *ctx);
/* When the self-signed default was generated, one line saying so (subject,
 * names, SHA-256 fingerprint, where it lives); NULL otherwise. */
const char *ct_tls_ctx_selfsigned_note(const struct ct_tls_ctx *ctx);

struct ct_tls_stats {
    uint64_t handshakes_full;    /* completed, new session */
    uint64_t handshakes_resumed; /* completed, resumed (ticket or cache) */
};
void ct_tls_ctx_stats(const struct ct_tls_ctx *ctx, struct ct_tls_stats *out);

/* ---- ACME ----------------------------------------------------------------- */

/* The challenge store, shared by the ACME client (main thread, writes) and
 * every worker (reads). All calls are thread-safe. */
struct ct_tls_chal *ct_tls_chal_new(void);
void ct_tls_chal_free(struct ct_tls_chal **chp); /* sets *CHP = NULL */
/* HTTP-01 (RFC 8555 §8.3): the key authorization answered at
 * /.well-known/acme-challenge/TOKEN. */
void ct_tls_chal_http_set(struct ct_tls_chal *ch, const char *token, const char *keyauth);
void ct_tls_chal_http_del(struct ct_tls_chal *ch, const char *token);
/* Copy TOKEN[0..TLEN)'s key authorization into OUT (NUL-terminated);
 * returns its length, 0 when there is none (or it does not fit). */
size_t ct_tls_chal_http_get(struct ct_tls_chal *ch, const char *token, size_t tlen, char *out,
                            size_t outlen);
/* TLS-ALPN-01 (RFC 8737): make NAME's validation certificate for KEYAUTH;
 * a handshake for NAME offering only ALPN "acme-tls/1" gets it. Returns
 * CT_OK, or CT_ECONF/CT_ETLS with ERR. */
int ct_tls_chal_alpn_set(struct ct_tls_chal *ch, const char *name, const char *keyauth,
                         char *err, size_t errlen);
void ct_tls_chal_alpn_del(struct ct_tls_chal *ch, const char *name);

/* Answer TLS-ALPN-01 on CTX from CH (borrowed: it outlives CTX). Call once,
 * before CTX is used by any worker. */
void ct_tls_ctx_set_chal(struct ct_tls_ctx *ctx, struct ct_tls_chal *ch);
/* Whether CTX orders NAME by ACME (it has a slot for it). */
bool ct_tls_ctx_has_acme(const struct ct_tls_ctx *ctx, const char *name);
/* Install NAME's certificate (PEM leaf then chain, and its PEM key) on CTX:
 * new handshakes in every worker get it; connections already open keep
 * theirs. Any thread. Returns CT_OK, CT_ENOENT (no slot for NAME on CTX)
 * or CT_ECONF with ERR (bad PEM, key mismatch, NAME not in it). */
int ct_tls_ctx_acme_install(struct ct_tls_ctx *ctx, const char *name, const char *cert_pem,
                            size_t cert_len, const char *key_pem, size_t key_len, char *err,
                            size_t errlen);

/* ---- per connection ----------------------------------------------------- */

/* The verified client certificate's subject, one line in RFC 2253 form
 * ("CN=alice,O=Example"), NUL-terminated into BUF. Returns its length, or
 * CT_ENOENT (no client certificate), CT_ETLS (not verified), CT_ELIMIT (BUF
 * too small). Safe for a header value: no control characters. */
int ct_tls_peer_subject(SSL *ssl, char *buf, size_t len);

/* "TLSv1.3 TLS_AES_128_GCM_SHA256 resumed sni=example.com alpn=http/1.1" for
 * access logs; BUF is always NUL-terminated. */
void ct_tls_conn_describe(SSL *ssl, char *buf, size_t len);

/* Did ALPN choose h2 on this (handshaken) connection? */
bool ct_tls_alpn_is_h2(SSL *ssl);
/* Did ALPN choose acme-tls/1 (a TLS-ALPN-01 validation: close it, RFC 8737
 * §3 says no application data follows)? */
bool ct_tls_alpn_is_acme(SSL *ssl);

/* Send close_notify (RFC 8446 §6.1) before freeing a connection that ends
 * normally, without waiting for the peer's. It also keeps the session
 * resumable: OpenSSL removes the cached session of a connection freed without
 * one (TLS 1.2 session ids; tickets are unaffected). Nonblocking; the SSL
 * writes straight to the socket (bufferevent_openssl's socket BIO, which
 * proxy/net/io.c keeps when it takes a connection over), so call it once the
 * output buffer is empty, then bufferevent_free(). No-op before the
 * handshake completed or when already sent; leaves no OpenSSL errors. */
void ct_tls_close_notify(SSL *ssl);

/* Whether kernel TLS took over sending / receiving on this connection. */
bool ct_tls_ktls_send(SSL *ssl);
bool ct_tls_ktls_recv(SSL *ssl);

/* ---- TLS to origins (tls_client.c) --------------------------------------- */

typedef struct ssl_session_st SSL_SESSION;
struct ct_tls_client; /* opaque; one per TLS backend and configuration generation */

struct ct_tls_client_conf {
    bool verify;            /* chain and name (SSL_VERIFY_PEER) */
    const char *ca_file;    /* PEM bundle; NULL: the system's store (loaded once) */
    const char *cert_file;  /* mTLS client certificate; NULL: none */
    const char *key_file;
    int min_version;        /* CT_TLS_V1_2 (0) or CT_TLS_V1_3 */
    const char *ciphers;    /* NULL: CT_TLS_DEFAULT_CIPHERS */
    const char *ciphersuites;
    const char *const *alpn; /* offered, in order; none: no extension */
    size_t nalpn;
    bool session_reuse;     /* new sessions go to the connections' sinks */
};

/* Build the client context of one backend (main thread). Returns NULL with
 * a one-line reason in ERR. Any thread may then call ct_tls_client_ssl(). */
struct ct_tls_client *ct_tls_client_new(const struct ct_tls_client_conf *cf, char *err,
                                        size_t errlen);
/* From conf/'s backends[].tls (tls_conf.c). */
struct ct_conf_backend_tls;
struct ct_tls_client *ct_tls_client_from_conf(const struct ct_conf_backend_tls *t, char *err,
                                              size_t errlen);
/* Sets *CP = NULL. SSLs made from it may outlive it (they hold its SSL_CTX). */
void ct_tls_client_free(struct ct_tls_client **cp);
/* A number no other client context of this process has: saved sessions
 * are keyed by it (and the name), so none resumes under other settings. */
uint64_t ct_tls_client_gen(const struct ct_tls_client *c);

/* Where a connection's new resumable sessions go: FN(ARG, S) takes the
 * reference to S (free it with ct_tls_session_free). Owned by the caller,
 * it must outlive the SSL. */
struct ct_tls_sess_sink {
    void (*fn)(void *arg, SSL_SESSION *s);
    void *arg;
};

/* A client SSL for one connection to NAME (a host name, or an IP literal:
 * then no SNI and the certificate's IP address is checked), resuming RESUME
 * if not NULL (the SSL takes its own reference), new sessions to SINK (NULL:
 * none kept). Owned by the caller (normally handed to bufferevent_openssl).
 * NULL on failure (OpenSSL's queue says why). */
SSL *ct_tls_client_ssl(struct ct_tls_client *c, const char *name, SSL_SESSION *resume,
                       const struct ct_tls_sess_sink *sink);
void ct_tls_session_free(SSL_SESSION **sp);
/* A copy of S for one connection to offer (the caller's; NULL if out of
 * memory): a session offered again stays in the stock, and OpenSSL marks
 * the session a connection holds not resumable when that connection fails
 * (a fatal alert, an unexpected EOF, SSL_CTX_remove_session), which would
 * end it for every other connection sharing the object. */
SSL_SESSION *ct_tls_session_copy(SSL_SESSION *s);
/* Is S a TLS 1.3 ticket, to be offered once (RFC 8446 §C.4)? */
bool ct_tls_session_single_use(SSL_SESSION *s);
/* Can S still be offered? OpenSSL marks a session not resumable for good
 * when a connection using it sends a fatal alert or is freed mid-way. */
bool ct_tls_session_resumable(SSL_SESSION *s);
/* Before freeing a client SSL closed without close_notify: keep its session
 * (shared with the saved one) resumable. OpenSSL marks the session of a
 * connection freed mid-way not resumable, and the saved copy with it, so
 * one reset would stop resumption for that name until a full handshake. */
void ct_tls_session_keep(SSL *ssl);
bool ct_tls_name_is_ip(const char *name);

/* Why a client handshake failed, for metrics (X-macro: id, label as a
 * word, which names counters). */
#define CT_TLS_FAIL_TABLE(X)                                                   \
    X(UNTRUSTED, untrusted) /* unknown CA, self-signed */                   \
    X(EXPIRED, expired)     /* expired or not yet valid */                  \
    X(NAME, name)           /* hostname or IP address mismatch */           \
    X(VERIFY, verify)       /* another verification failure */              \
    X(HANDSHAKE, handshake) /* alert, cleartext answer, close mid-way */    \
    X(TIMEOUT, timeout)     /* no handshake within handshake_timeout */
enum ct_tls_fail {
#define CT_TLS_FAIL_ENUM(id, label) CT_TLS_FAIL_##id,
    CT_TLS_FAIL_TABLE(CT_TLS_FAIL_ENUM)
#undef CT_TLS_FAIL_ENUM
};
/* Classify a failed client handshake on SSL (E: the first OpenSSL error
 * code of the failure, 0 for none) and say it in words into BUF, with
 * OpenSSL's verify reason ("certificate has expired", "hostname mismatch"). */
enum ct_tls_fail ct_tls_client_failure(SSL *ssl, unsigned long e, char *buf, size_t len);
/* E as OpenSSL's error, or 0 for none: bufferevent_openssl records
 * SSL_get_error()'s value (5, SSL_ERROR_SYSCALL: the socket failed or
 * closed) as an error of library 0 when OpenSSL's queue had none. */
unsigned long ct_tls_error_real(unsigned long e);
/* Did the peer's certificate verify (or was it not checked, or not seen yet)? */
bool ct_tls_verify_ok(SSL *ssl);
/* "1.2" / "1.3" (access log's ut=); whether the session was resumed. */
const char *ct_tls_version_name(SSL *ssl);
bool ct_tls_session_reused(SSL *ssl);

/* ---- errors ------------------------------------------------------------ */

/* Pop this thread's OpenSSL error queue into BUF ("reason; reason", NUL-
 * terminated, truncated to fit), so the next connection does not inherit
 * them. Returns how many errors were popped. */
size_t ct_tls_drain_errors(char *buf, size_t len);
/* One error code (e.g. from bufferevent_get_openssl_error()) as text. */
void ct_tls_error_string(unsigned long e, char *buf, size_t len);
/* Is E one of OpenSSL's error codes (not the SSL_get_error() value that
 * libevent queues first among them, "error:00000001:lib(0)::reason(1)")? */
bool ct_tls_error_is_real(unsigned long e);
/* Why SSL's peer certificate failed verification (mTLS), in words; NULL if
 * it did not (or none was asked for). */
const char *ct_tls_verify_error(const struct ssl_st *ssl);
/* Whether the code says the client spoke plain HTTP on the TLS port (answer
 * it like nginx's 497: a short plain-text 400, then close). */
bool ct_tls_error_is_plain_http(unsigned long e);

/* Answer a client that spoke plain HTTP on the TLS port, like nginx's 497:
 * write a short "400 Bad Request" in clear text straight to FD (the SSL is
 * not used), half-close, and drain what the client already sent so the
 * close does not turn into a reset that destroys the answer. Call it when
 * the handshake fails with ct_tls_error_is_plain_http(), then close FD as
 * usual. Nonblocking, best effort (150 bytes into an empty socket buffer).
 * Returns CT_OK or CT_EIO. */
int ct_tls_answer_plain_http(int fd);

/* "TLSv1.2" / "1.2" -> CT_TLS_V1_2, "TLSv1.3" / "1.3" -> CT_TLS_V1_3;
 * anything else (including 1.0 and 1.1, which we refuse) -> CT_ECONF. */
int ct_tls_version_parse(const char *s);

/* Add the X509v3 extension NID with its config-style VALUE ("critical,CA:FALSE",
 * "DNS:a.test,IP:127.0.0.1", "hash") to certificate X, whose issuer is
 * ISSUER (NULL: X itself, self-signed; the issuer matters for
 * authorityKeyIdentifier). Used for the self-signed fallback certificate and
 * by the unit tests' certificate factory. Returns 1 on success, 0 on failure
 * (OpenSSL's queue says why). */
int ct_tls_x509_add_ext(X509 *x, X509 *issuer, int nid, const char *value);

#endif /* CT_TLS_H */
