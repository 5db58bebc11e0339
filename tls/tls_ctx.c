/*
 * tls/tls_ctx.c: building the TLS context of one HTTPS listener.
 *
 * Certificates and SNI. Every configured certificate is loaded and checked
 * (chain, key, key matches certificate), and each gets its server names (from
 * the configuration, else from its SAN DNS names or CN): tls_certs.c. For
 * every name we compute the set of certificates that serve it; each distinct
 * set becomes one SSL_CTX holding those certificates, at most one per key
 * type (ECDSA, RSA, ...), so OpenSSL hands a client the one its signature
 * algorithms accept. The servername callback switches a connection to the SSL_CTX of
 * its SNI name: exact match first, then the one-label wildcard ("*.b.c"
 * matches "a.b.c", not "x.a.b.c" nor "b.c"). Absent or unknown SNI stays on
 * the default SSL_CTX, the one serving the default certificate.
 *
 * Settings that must hold whichever SSL_CTX a connection ends up on
 * (protocols, ciphers, verify store, callbacks) are applied to every SSL_CTX.
 * The session cache and tickets are the default SSL_CTX's (OpenSSL keeps
 * them on the SSL_CTX the SSL was made from), so resumption works across SNI
 * switches and across workers, which all make their SSLs from the same
 * default SSL_CTX.
 *
 * ACME names (proxy/acme/) each have a slot: the SSL_CTX serving that name,
 * checked before the SNI table. Until a certificate is installed it is the
 * placeholder's (tls_acme.c); ct_tls_ctx_acme_install() builds a new
 * SSL_CTX with the same settings and swaps it in under a write lock, so a
 * handshake (which takes its own reference under the read lock, in
 * SSL_set_SSL_CTX) never sees a freed one and connections already up keep
 * the certificate they had. TLS-ALPN-01 (RFC 8737) is picked in the
 * ClientHello callback, which runs before SNI and ALPN are handled and sees
 * both: a ClientHello offering only "acme-tls/1" gets the validation
 * certificate on its SSL alone, and SNI switching leaves it alone.
 *
 * Threads: built once, then read-only except the ACME slots (rwlock); the
 * counters are atomics.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "tls/tls_int.h"

#define CT_TLS_CTX_MAGIC 0x7c1a0c7au
#define MAX_CERTS 64 /* a name's certificate set is a 64-bit mask */

struct name_ent {
    char *name; /* lower case; "*.example.com" for a wildcard */
    SSL_CTX *sctx;
};

struct acme_slot {
    char *name; /* normalised */
    SSL_CTX *sctx; /* under acme_lock; one reference */
};

struct ct_tls_ctx {
    unsigned magic;
    /* ACME: slots sorted by name, the settings new SSL_CTXs are made with */
    struct acme_slot *acme;
    size_t nacme;
    pthread_rwlock_t acme_lock;
    struct ct_tls_listener_conf keep; /* strings owned (kept_*) */
    char *kept[4];
    X509_STORE *keep_store;
    STACK_OF(X509_NAME) * keep_ca_names;
    struct ct_tls_chal *chal; /* borrowed; NULL: no TLS-ALPN-01 */
    SSL_CTX *def;    /* SSLs are made from it; owns the session cache */
    SSL_CTX **sctxs; /* every SSL_CTX, def included; one reference each */
    size_t nsctx;
    struct name_ent *names; /* sorted by name for bsearch */
    size_t nnames;
    struct ct_tls_shared *shared; /* NULL: tickets off or OpenSSL's own keys */
    atomic_uint_fast64_t hs_full, hs_resumed;
    bool h2; /* ALPN offers h2 */
    char desc[768];
    char note[384]; /* self-signed note; empty otherwise */
};

/* (name, certificate index) pairs, sorted and merged into (name, mask). */
struct name_mask {
    char *name;
    uint64_t mask;
};

static int ssl_idx_counted = -1;
static int ssl_idx_acme = -1; /* set: a TLS-ALPN-01 validation handshake */
static pthread_once_t idx_once = PTHREAD_ONCE_INIT;

static void idx_init(void)
{
    ssl_idx_counted =
        SSL_get_ex_new_index(0, (void *)"cachet: handshake counted", NULL, NULL, NULL);
    ssl_idx_acme = SSL_get_ex_new_index(0, (void *)"cachet: acme-tls/1", NULL, NULL, NULL);
}

/* ---- callbacks ---------------------------------------------------------- */

static struct ct_tls_ctx *ctx_of(SSL_CTX *sctx)
{
    struct ct_tls_ctx *lc = SSL_CTX_get_app_data(sctx);
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    return lc;
}

struct ct_tls_shared *ct_tls_ctx_shared_of(SSL_CTX *sctx)
{
    return ctx_of(sctx)->shared;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(((const struct name_ent *)a)->name, ((const struct name_ent *)b)->name);
}

static SSL_CTX *name_find(const struct ct_tls_ctx *lc, const char *name)
{
    struct name_ent key = {.name = (char *)name};
    const struct name_ent *e = bsearch(&key, lc->names, lc->nnames, sizeof(key), name_cmp);
    return e ? e->sctx : NULL;
}

/* The SSL_CTX for an SNI name: exact, then "*." + the name minus its first
 * label (RFC 6125 §6.4.3: the wildcard covers exactly one label). */
static SSL_CTX *sni_lookup(const struct ct_tls_ctx *lc, const char *sni)
{
    char norm[CT_TLS_MAX_NAME + 3];
    if (!ct_tls_name_norm(sni, strlen(sni), norm + 1) || norm[1] == '*')
        return NULL;
    SSL_CTX *sctx = name_find(lc, norm + 1);
    if (sctx != NULL)
        return sctx;
    char *dot = strchr(norm + 1, '.');
    if (dot == NULL)
        return NULL;
    dot[-1] = '*';
    return name_find(lc, dot - 1);
}

static int slot_cmp(const void *a, const void *b)
{
    return strcmp(((const struct acme_slot *)a)->name, ((const struct acme_slot *)b)->name);
}

static struct acme_slot *slot_find(const struct ct_tls_ctx *lc, const char *norm)
{
    struct acme_slot key = {.name = (char *)norm};
    return lc->nacme ? bsearch(&key, lc->acme, lc->nacme, sizeof(key), slot_cmp) : NULL;
}

/* An ACME name's current SSL_CTX onto SSL; false when SNI is no ACME name. */
static bool acme_switch(struct ct_tls_ctx *lc, SSL *ssl, const char *sni)
{
    char norm[CT_TLS_MAX_NAME + 1];
    if (lc->nacme == 0 || !ct_tls_name_norm(sni, strlen(sni), norm))
        return false;
    struct acme_slot *sl = slot_find(lc, norm);
    if (sl == NULL)
        return false;
    pthread_rwlock_rdlock(&lc->acme_lock);
    if (sl->sctx != SSL_get_SSL_CTX(ssl))
        SSL_set_SSL_CTX(ssl, sl->sctx); /* takes its own reference */
    pthread_rwlock_unlock(&lc->acme_lock);
    return true;
}

static int servername_cb(SSL *ssl, int *alert, void *arg)
{
    struct ct_tls_ctx *lc = arg;
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    (void)alert;
    if (SSL_get_ex_data(ssl, ssl_idx_acme) != NULL)
        return SSL_TLSEXT_ERR_OK; /* the validation certificate stays */
    const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (sni && acme_switch(lc, ssl, sni))
        return SSL_TLSEXT_ERR_OK;
    SSL_CTX *want = sni ? sni_lookup(lc, sni) : NULL;
    if (want != NULL && want != SSL_get_SSL_CTX(ssl))
        SSL_set_SSL_CTX(ssl, want);
    return SSL_TLSEXT_ERR_OK; /* unknown names get the default certificate */
}

/* ALPN (RFC 7301): h2 (RFC 9113 §3.2) when the listener offers it and the
 * client asks for it, else http/1.1, in our order of preference whatever
 * the client's order (as nginx and HAProxy choose). A client that offers
 * neither (say, h2 alone on a listener with http2 off) gets no ALPN
 * extension rather than a fatal no_application_protocol alert: RFC 7301
 * §3.2 allows either, and the connection can still carry HTTP/1.1 (nginx
 * before 1.21.4 did the same). */
static bool alpn_find(const unsigned char *in, unsigned int inlen, const char *proto,
                      const unsigned char **out, unsigned char *outlen)
{
    size_t plen = strlen(proto);
    for (unsigned int i = 0; i < inlen;) {
        unsigned int n = in[i];
        if (n == 0 || i + 1 + n > inlen)
            return false; /* malformed list: OpenSSL validates it, but be careful */
        if (n == plen && memcmp(in + i + 1, proto, plen) == 0) {
            *out = in + i + 1;
            *outlen = (unsigned char)n;
            return true;
        }
        i += 1 + n;
    }
    return false;
}

static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
    struct ct_tls_ctx *lc = arg;
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    if (SSL_get_ex_data(ssl, ssl_idx_acme) != NULL)
        return alpn_find(in, inlen, "acme-tls/1", out, outlen) ? SSL_TLSEXT_ERR_OK
                                                                : SSL_TLSEXT_ERR_ALERT_FATAL;
    if (lc->h2 && alpn_find(in, inlen, "h2", out, outlen))
        return SSL_TLSEXT_ERR_OK;
    if (alpn_find(in, inlen, "http/1.1", out, outlen))
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_NOACK;
}

/* The host name of a ClientHello's server_name extension (RFC 6066 §3),
 * normalised into OUT. */
static bool hello_sni(SSL *ssl, char *out)
{
    const unsigned char *p;
    size_t len;
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &len) || len < 5)
        return false;
    size_t list = (size_t)p[0] << 8 | p[1];
    size_t nlen = (size_t)p[3] << 8 | p[4];
    if (list + 2 != len || p[2] != TLSEXT_NAMETYPE_host_name || nlen + 5 > len)
        return false;
    return memchr(p + 5, '\0', nlen) == NULL && ct_tls_name_norm((const char *)p + 5, nlen, out);
}

/* RFC 8737 §3: a ClientHello whose ALPN offers exactly "acme-tls/1" is a
 * validation; it gets the challenge's certificate or fails. Any other
 * ClientHello (acme-tls/1 among others included) is a normal client. */
static int client_hello_cb(SSL *ssl, int *alert, void *arg)
{
    static const unsigned char only_acme[] = "\x00\x0b\x0a"
                                             "acme-tls/1";
    struct ct_tls_ctx *lc = arg;
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    const unsigned char *p;
    size_t len;
    if (lc->chal == NULL ||
        !SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p,
                                   &len) ||
        len != sizeof(only_acme) - 1 || memcmp(p, only_acme, len) != 0)
        return SSL_CLIENT_HELLO_SUCCESS;
    char name[CT_TLS_MAX_NAME + 1];
    if (!hello_sni(ssl, name) || !ct_tls_chal_alpn_use(lc->chal, ssl, name)) {
        *alert = SSL_AD_UNRECOGNIZED_NAME;
        return SSL_CLIENT_HELLO_ERROR;
    }
    SSL_set_ex_data(ssl, ssl_idx_acme, (void *)1);
    return SSL_CLIENT_HELLO_SUCCESS;
}

/* Count each completed handshake once, full or resumed. */
static void info_cb(const SSL *ssl, int where, int ret)
{
    if (!(where & SSL_CB_HANDSHAKE_DONE) || SSL_get_ex_data(ssl, ssl_idx_counted) != NULL)
        return;
    SSL_set_ex_data((SSL *)ssl, ssl_idx_counted, (void *)1);
    struct ct_tls_ctx *lc = ctx_of(SSL_get_SSL_CTX(ssl));
    if (SSL_session_reused(ssl))
        atomic_fetch_add_explicit(&lc->hs_resumed, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&lc->hs_full, 1, memory_order_relaxed);
}

/* ---- SSL_CTX settings ---------------------------------------------------- */

/* The session id context must differ between listeners with different
 * client-certificate rules, or a session made where no certificate was asked
 * for would resume where one is required. Same rules, same context, so
 * tickets made by one listener context resume on another (reload). */
static void set_sid_ctx(SSL_CTX *sctx, const struct ct_tls_listener_conf *cf)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char in[512];
    int n = snprintf(in, sizeof(in), "cachet-tls-1|%d|%s", (int)cf->verify,
                     cf->client_ca_file ? cf->client_ca_file : "");
    CT_ASSERT(n > 0 && EVP_Digest(in, (size_t)CT_MIN((size_t)n, sizeof(in) - 1), md, &mdlen,
                                  EVP_sha256(), NULL) == 1);
    CT_ASSERT(SSL_CTX_set_session_id_context(sctx, md, CT_MIN(mdlen, SSL_MAX_SID_CTX_LENGTH)));
}

static int set_protocols(SSL_CTX *sctx, const struct ct_tls_listener_conf *cf, char *err,
                         size_t errlen)
{
    int min = cf->min_version ? cf->min_version : CT_TLS_V1_2;
    if (min != CT_TLS_V1_2 && min != CT_TLS_V1_3) {
        snprintf(err, errlen, "minimum TLS version 0x%04x: only TLSv1.2 and TLSv1.3 are allowed",
                 (unsigned)min);
        return CT_ECONF;
    }
    const char *ciphers = cf->ciphers ? cf->ciphers : CT_TLS_DEFAULT_CIPHERS;
    const char *suites = cf->ciphersuites ? cf->ciphersuites : CT_TLS_DEFAULT_CIPHERSUITES;
    const char *groups = cf->groups ? cf->groups : CT_TLS_DEFAULT_GROUPS;
    if (!SSL_CTX_set_min_proto_version(sctx, min) ||
        !SSL_CTX_set_max_proto_version(sctx, TLS1_3_VERSION)) {
        ct_tls_set_err(err, errlen, "cannot set the TLS versions");
        return CT_ECONF;
    }
    if (!SSL_CTX_set_cipher_list(sctx, ciphers)) {
        ct_tls_set_err(err, errlen, "ciphers \"%s\"", ciphers);
        return CT_ECONF;
    }
    if (!SSL_CTX_set_ciphersuites(sctx, suites)) {
        ct_tls_set_err(err, errlen, "ciphersuites \"%s\"", suites);
        return CT_ECONF;
    }
    if (!SSL_CTX_set1_groups_list(sctx, groups)) {
        ct_tls_set_err(err, errlen, "groups \"%s\"", groups);
        return CT_ECONF;
    }
    SSL_CTX_set_dh_auto(sctx, 1); /* DHE-RSA suites: RFC 7919 group sized to the key */
    return CT_OK;
}

static void set_resumption(SSL_CTX *sctx, const struct ct_tls_listener_conf *cf,
                           struct ct_tls_ctx *lc)
{
    unsigned timeout_s =
        cf->session_timeout_s ? cf->session_timeout_s : CT_TLS_DEFAULT_SESSION_TIMEOUT_S;
    SSL_CTX_set_timeout(sctx, timeout_s); /* cache entries and ticket lifetime */
    if (cf->disable_session_cache) {
        SSL_CTX_set_session_cache_mode(sctx, SSL_SESS_CACHE_OFF);
    } else {
        SSL_CTX_set_session_cache_mode(sctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_sess_set_cache_size(sctx, cf->session_cache_size
                                              ? cf->session_cache_size
                                              : CT_TLS_DEFAULT_SESSION_CACHE_SIZE);
    }
    if (cf->disable_tickets) {
        /* TLS 1.3 then issues stateful tickets (cache ids), unless the
         * cache is off too: then none, and every handshake is full. */
        SSL_CTX_set_options(sctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(sctx, cf->disable_session_cache ? 0 : 1);
    } else {
        /* One ticket per connection: the keys are reusable, a second one
         * only costs an encryption per handshake. */
        SSL_CTX_set_num_tickets(sctx, 1);
        if (lc->shared != NULL)
            ct_tls_tickets_install(sctx);
    }
}

/* mTLS: one verify store shared by every SSL_CTX (SSL_set_SSL_CTX copies
 * the certificate settings, verify store included, from the SNI one). */
static int set_verify(SSL_CTX *sctx, const struct ct_tls_listener_conf *cf, X509_STORE *store,
                      STACK_OF(X509_NAME) * ca_names)
{
    if (cf->verify == CT_TLS_VERIFY_OFF)
        return CT_OK;
    int mode = SSL_VERIFY_PEER;
    if (cf->verify == CT_TLS_VERIFY_REQUIRED)
        mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(sctx, mode, NULL);
    SSL_CTX_set_verify_depth(
        sctx, (int)(cf->verify_depth ? cf->verify_depth : CT_TLS_DEFAULT_VERIFY_DEPTH));
    if (!SSL_CTX_set1_verify_cert_store(sctx, store))
        return CT_ETLS;
    STACK_OF(X509_NAME) *dup = SSL_dup_CA_list(ca_names);
    if (dup == NULL)
        return CT_ETLS;
    SSL_CTX_set_client_CA_list(sctx, dup); /* the names sent in CertificateRequest */
    return CT_OK;
}

static int configure(struct ct_tls_ctx *lc, SSL_CTX *sctx, const struct ct_tls_listener_conf *cf,
                     X509_STORE *store, STACK_OF(X509_NAME) * ca_names, char *err, size_t errlen)
{
    SSL_CTX_set_app_data(sctx, lc);
    uint64_t opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION;
    if (cf->ktls)
        opts |= SSL_OP_ENABLE_KTLS;
    SSL_CTX_set_options(sctx, opts);
    /* Idle keep-alive connections give their 34 KiB of TLS buffers back
     * (no measurable CPU cost on /1k keep-alive). The chain is the one in the
     * certificate file: no chain building from a store per handshake
     * (nginx does the same). */
    SSL_CTX_set_mode(sctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_NO_AUTO_CHAIN);
    int rc = set_protocols(sctx, cf, err, errlen);
    if (rc != CT_OK)
        return rc;
    set_sid_ctx(sctx, cf);
    set_resumption(sctx, cf, lc);
    if (set_verify(sctx, cf, store, ca_names) != CT_OK) {
        ct_tls_set_err(err, errlen, "cannot set up client certificate verification");
        return CT_ETLS;
    }
    SSL_CTX_set_tlsext_servername_callback(sctx, servername_cb);
    SSL_CTX_set_tlsext_servername_arg(sctx, lc);
    SSL_CTX_set_alpn_select_cb(sctx, alpn_cb, lc);
    SSL_CTX_set_client_hello_cb(sctx, client_hello_cb, lc);
    SSL_CTX_set_info_callback(sctx, info_cb);
    return CT_OK;
}

/* ---- building ------------------------------------------------------------ */

struct build {
    const struct ct_tls_listener_conf *cf;
    struct ct_tls_cert *certs;
    size_t ncerts;
    size_t def; /* index of the default certificate */
    X509_STORE *store;
    STACK_OF(X509_NAME) * ca_names;
    uint64_t *masks; /* parallel to lc->sctxs: which certificates each holds */
};

static int load_client_ca(struct build *b, char *err, size_t errlen)
{
    const struct ct_tls_listener_conf *cf = b->cf;
    if (cf->verify == CT_TLS_VERIFY_OFF) {
        if (cf->client_ca_file == NULL)
            return CT_OK;
        snprintf(err, errlen, "client CA \"%s\" given but client verification is off",
                 cf->client_ca_file);
        return CT_ECONF;
    }
    if (cf->client_ca_file == NULL) {
        snprintf(err, errlen, "client verification needs a client CA file");
        return CT_ECONF;
    }
    FILE *fp = fopen(cf->client_ca_file, "r");
    if (fp == NULL) {
        snprintf(err, errlen, "cannot read client CA \"%s\": %s", cf->client_ca_file,
                 strerror(errno));
        return CT_ECONF;
    }
    fclose(fp);
    b->store = X509_STORE_new();
    if (b->store == NULL || !X509_STORE_load_file(b->store, cf->client_ca_file)) {
        ct_tls_set_err(err, errlen, "cannot load client CA \"%s\"", cf->client_ca_file);
        return CT_ECONF;
    }
    b->ca_names = SSL_load_client_CA_file(cf->client_ca_file);
    if (b->ca_names == NULL || sk_X509_NAME_num(b->ca_names) == 0) {
        ct_tls_set_err(err, errlen, "client CA \"%s\": no certificate in it", cf->client_ca_file);
        return CT_ECONF;
    }
    ERR_clear_error();
    return CT_OK;
}

static int load_all(struct build *b, char *note, size_t notelen, char *err, size_t errlen)
{
    const struct ct_tls_listener_conf *cf = b->cf;
    if (cf->ncerts > MAX_CERTS) {
        snprintf(err, errlen, "%zu certificates on one listener: at most %d", cf->ncerts,
                 MAX_CERTS);
        return CT_ECONF;
    }
    b->ncerts = cf->ncerts ? cf->ncerts : 1;
    b->certs = ct_xcalloc(b->ncerts, sizeof(*b->certs));
    if (cf->ncerts == 0 && cf->nacme > 0) {
        /* the placeholder is the default too: no other certificate */
        struct ct_tls_cert *lc = &b->certs[0];
        int rc = ct_tls_acme_placeholder(cf->acme_names, cf->nacme, &lc->x, &lc->key, note,
                                         notelen, err, errlen);
        if (rc != CT_OK)
            return rc;
        ct_tls_names_from_cert(lc);
        snprintf(lc->label, sizeof(lc->label), "ECDSA prime256v1 ACME placeholder (self-signed)");
        return CT_OK;
    }
    if (cf->ncerts == 0) {
        struct ct_tls_cert *lc = &b->certs[0];
        int rc = ct_tls_selfsigned_make(&lc->x, &lc->key, note, notelen, err, errlen);
        if (rc != CT_OK)
            return rc;
        ct_tls_names_from_cert(lc);
        snprintf(lc->label, sizeof(lc->label), "ECDSA prime256v1 \"localhost\" (self-signed)");
        return CT_OK;
    }
    for (size_t i = 0; i < cf->ncerts; i++) {
        if (cf->certs[i].cert_file == NULL) {
            snprintf(err, errlen, "certificate %zu has no file", i + 1);
            return CT_ECONF;
        }
        int rc = ct_tls_cert_load(&b->certs[i], &cf->certs[i], err, errlen);
        if (rc != CT_OK)
            return rc;
        if (cf->certs[i].is_default)
            b->def = i;
    }
    /* Only the default may do without a name: SNI could never reach it. */
    for (size_t i = 0; i < cf->ncerts; i++) {
        if (b->certs[i].nnames == 0 && i != b->def) {
            snprintf(err, errlen,
                     "certificate \"%s\" has no server name (no DNS name in its SAN or CN, "
                     "none configured) and is not the default: no client could reach it",
                     cf->certs[i].cert_file);
            return CT_ECONF;
        }
    }
    return CT_OK;
}

static int nm_cmp(const void *a, const void *b)
{
    return strcmp(((const struct name_mask *)a)->name, ((const struct name_mask *)b)->name);
}

/* Every distinct name with the set of certificates serving it. */
static struct name_mask *collect_names(const struct build *b, size_t *np)
{
    size_t n = 0;
    for (size_t i = 0; i < b->ncerts; i++)
        n += b->certs[i].nnames;
    struct name_mask *nm = ct_xcalloc(n ? n : 1, sizeof(*nm));
    n = 0;
    for (size_t i = 0; i < b->ncerts; i++)
        for (size_t j = 0; j < b->certs[i].nnames; j++)
            nm[n++] = (struct name_mask){b->certs[i].names[j], (uint64_t)1 << i};
    qsort(nm, n, sizeof(*nm), nm_cmp);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out > 0 && strcmp(nm[out - 1].name, nm[i].name) == 0)
            nm[out - 1].mask |= nm[i].mask;
        else
            nm[out++] = nm[i];
    }
    *np = out;
    return nm;
}

/* The SSL_CTX holding exactly the certificates in MASK, made on first use.
 * Per key type the first certificate (configuration order) wins: one
 * SSL_CTX has one slot per key type. */
static SSL_CTX *sctx_for(struct ct_tls_ctx *lc, struct build *b, uint64_t mask, char *err,
                         size_t errlen)
{
    for (size_t i = 0; i < lc->nsctx; i++)
        if (b->masks[i] == mask)
            return lc->sctxs[i];
    SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
    if (sctx == NULL) {
        ct_tls_set_err(err, errlen, "cannot create the TLS context");
        return NULL;
    }
    lc->sctxs = ct_xrealloc(lc->sctxs, (lc->nsctx + 1) * sizeof(*lc->sctxs));
    b->masks = ct_xrealloc(b->masks, (lc->nsctx + 1) * sizeof(*b->masks));
    lc->sctxs[lc->nsctx] = sctx;
    b->masks[lc->nsctx++] = mask;
    if (configure(lc, sctx, b->cf, b->store, b->ca_names, err, errlen) != CT_OK)
        return NULL;
    int seen[8] = {0};
    size_t nseen = 0;
    for (size_t i = 0; i < b->ncerts; i++) {
        struct ct_tls_cert *c = &b->certs[i];
        int type = EVP_PKEY_get_base_id(c->key);
        bool dup = false;
        for (size_t k = 0; k < nseen; k++)
            dup = dup || seen[k] == type;
        if (!(mask & ((uint64_t)1 << i)) || dup || nseen == CT_ARRAY_LEN(seen))
            continue;
        seen[nseen++] = type;
        if (!SSL_CTX_use_cert_and_key(sctx, c->x, c->key, c->chain, 1)) {
            ct_tls_set_err(err, errlen, "cannot use certificate %s", c->label);
            return NULL;
        }
    }
    return sctx;
}

static int build_sni(struct ct_tls_ctx *lc, struct build *b, char *err, size_t errlen)
{
    size_t n;
    struct name_mask *nm = collect_names(b, &n);
    int rc = CT_OK;
    lc->names = ct_xcalloc(n ? n : 1, sizeof(*lc->names));
    for (size_t i = 0; i < n && rc == CT_OK; i++) {
        SSL_CTX *sctx = sctx_for(lc, b, nm[i].mask, err, errlen);
        if (sctx == NULL) {
            rc = CT_ETLS;
            break;
        }
        lc->names[lc->nnames++] = (struct name_ent){ct_xstrdup(nm[i].name), sctx};
    }
    free(nm); /* the names themselves belong to b->certs */
    if (rc != CT_OK)
        return rc;
    /* The default: the SSL_CTX its first name maps to (so an RSA twin of the
     * default certificate answers no-SNI RSA-only clients too), else its own. */
    const struct ct_tls_cert *d = &b->certs[b->def];
    lc->def = d->nnames ? name_find(lc, d->names[0]) : NULL;
    if (lc->def == NULL)
        lc->def = sctx_for(lc, b, (uint64_t)1 << b->def, err, errlen);
    return lc->def ? CT_OK : CT_ETLS;
}

static void build_free(struct build *b)
{
    for (size_t i = 0; b->certs && i < b->ncerts; i++)
        ct_tls_cert_free(&b->certs[i]);
    free(b->certs);
    free(b->masks);
    X509_STORE_free(b->store);
    sk_X509_NAME_pop_free(b->ca_names, X509_NAME_free);
}

static void describe(struct ct_tls_ctx *lc, const struct build *b)
{
    const struct ct_tls_listener_conf *cf = b->cf;
    char *p = lc->desc;
    size_t left = sizeof(lc->desc);
#define ADD(...)                                                                                   \
    do {                                                                                           \
        int n_ = snprintf(p, left, __VA_ARGS__);                                                   \
        if (n_ > 0 && (size_t)n_ < left) {                                                         \
            p += n_;                                                                               \
            left -= (size_t)n_;                                                                    \
        }                                                                                          \
    } while (0)
    ADD("%zu certificate%s (", b->ncerts, b->ncerts == 1 ? "" : "s");
    for (size_t i = 0; i < b->ncerts; i++) {
        const struct ct_tls_cert *c = &b->certs[i];
        ADD("%s%s", i ? "; " : "", c->label);
        if (c->nnames > 1)
            ADD(" +%zu name%s", c->nnames - 1, c->nnames == 2 ? "" : "s");
        if (i == b->def && b->ncerts > 1)
            ADD(" default");
    }
    ADD("), %s+", cf->min_version == CT_TLS_V1_3 ? "TLSv1.3" : "TLSv1.2");
    if (cf->disable_tickets)
        ADD(", tickets off");
    else
        ADD(", tickets %s", lc->shared ? "shared" : "per listener");
    if (cf->disable_session_cache)
        ADD(", session cache off");
    else
        ADD(", session cache %u",
            cf->session_cache_size ? cf->session_cache_size : CT_TLS_DEFAULT_SESSION_CACHE_SIZE);
    if (cf->verify != CT_TLS_VERIFY_OFF)
        ADD(", client certificates %s (CA \"%s\")",
            cf->verify == CT_TLS_VERIFY_REQUIRED ? "required" : "optional", cf->client_ca_file);
    if (cf->ktls)
        ADD(", kTLS allowed");
    if (lc->nacme)
        ADD(", ACME for %zu name%s", lc->nacme, lc->nacme == 1 ? "" : "s");
    ADD(", ALPN %s", cf->disable_h2 ? "http/1.1" : "h2,http/1.1");
#undef ADD
}

/* ---- ACME slots ------------------------------------------------------------- */

static char *read_all(const char *path, size_t *lenp)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return NULL;
    size_t cap = 4096, len = 0, n;
    char *buf = ct_xmalloc(cap);
    while ((n = fread(buf + len, 1, cap - len, fp)) > 0) {
        len += n;
        if (len == cap && cap < (1u << 20))
            buf = ct_xrealloc(buf, cap *= 2);
        else if (len == cap)
            break;
    }
    fclose(fp);
    *lenp = len;
    return buf;
}

/* A certificate stored by proxy/acme (STORAGE/NAME/cert.pem, key.pem) is
 * used at once if it is still valid; a missing, corrupt or expired one
 * leaves the placeholder (proxy/acme logs it and orders a new one). */
static void acme_load_stored(struct ct_tls_ctx *lc, const char *storage, const char *name)
{
    char cpath[4096], kpath[4096], err[256];
    snprintf(cpath, sizeof(cpath), "%s/%s/cert.pem", storage, name);
    snprintf(kpath, sizeof(kpath), "%s/%s/key.pem", storage, name);
    size_t clen = 0, klen = 0;
    char *c = read_all(cpath, &clen);
    char *k = c ? read_all(kpath, &klen) : NULL;
    if (c && k)
        ct_tls_ctx_acme_install(lc, name, c, clen, k, klen, err, sizeof(err));
    free(c);
    if (k)
        OPENSSL_cleanse(k, klen);
    free(k);
    ERR_clear_error();
}

/* A new SSL_CTX with the listener's settings serving X (and CHAIN) with KEY. */
static SSL_CTX *acme_sctx(struct ct_tls_ctx *lc, X509 *x, STACK_OF(X509) * chain, EVP_PKEY *key,
                          char *err, size_t errlen)
{
    SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
    if (sctx == NULL) {
        ct_tls_set_err(err, errlen, "cannot create the TLS context");
        return NULL;
    }
    if (configure(lc, sctx, &lc->keep, lc->keep_store, lc->keep_ca_names, err, errlen) != CT_OK ||
        !SSL_CTX_use_cert_and_key(sctx, x, key, chain, 1)) {
        if (!err[0])
            ct_tls_set_err(err, errlen, "cannot use the certificate");
        SSL_CTX_free(sctx);
        return NULL;
    }
    return sctx;
}

static void keep_settings(struct ct_tls_ctx *lc, const struct build *b)
{
    lc->keep = *b->cf;
    lc->keep.certs = NULL;
    lc->keep.ncerts = 0;
    lc->keep.acme_names = NULL;
    lc->keep.nacme = 0;
    lc->keep.acme_storage = NULL;
    const char **strs[] = {&lc->keep.ciphers, &lc->keep.ciphersuites, &lc->keep.groups,
                           &lc->keep.client_ca_file};
    for (size_t i = 0; i < CT_ARRAY_LEN(strs); i++)
        if (*strs[i])
            *strs[i] = lc->kept[i] = ct_xstrdup(*strs[i]);
    if (b->store && X509_STORE_up_ref(b->store))
        lc->keep_store = b->store;
    if (b->ca_names)
        lc->keep_ca_names = SSL_dup_CA_list(b->ca_names);
}

static int acme_setup(struct ct_tls_ctx *lc, const struct build *b, char *err, size_t errlen)
{
    const struct ct_tls_listener_conf *cf = b->cf;
    keep_settings(lc, b);
    SSL_CTX *ph = NULL;
    if (cf->ncerts == 0) {
        ph = lc->def; /* built from the placeholder by load_all() */
        SSL_CTX_up_ref(ph);
    } else {
        X509 *x = NULL;
        EVP_PKEY *key = NULL;
        int rc = ct_tls_acme_placeholder(cf->acme_names, cf->nacme, &x, &key, lc->note,
                                         sizeof(lc->note), err, errlen);
        if (rc != CT_OK)
            return rc;
        ph = acme_sctx(lc, x, NULL, key, err, errlen);
        X509_free(x);
        EVP_PKEY_free(key);
        if (ph == NULL)
            return CT_ETLS;
    }
    lc->acme = ct_xcalloc(cf->nacme, sizeof(*lc->acme));
    char norm[CT_TLS_MAX_NAME + 1];
    for (size_t i = 0; i < cf->nacme; i++) {
        const char *n = cf->acme_names[i];
        if (!ct_tls_name_norm(n, strlen(n), norm) || norm[0] == '*') {
            snprintf(err, errlen, "ACME name \"%s\" is not a host name", n);
            SSL_CTX_free(ph);
            return CT_ECONF;
        }
        if (slot_find(lc, norm))
            continue;
        SSL_CTX_up_ref(ph);
        lc->acme[lc->nacme++] = (struct acme_slot){ct_xstrdup(norm), ph};
        qsort(lc->acme, lc->nacme, sizeof(*lc->acme), slot_cmp);
    }
    SSL_CTX_free(ph);
    for (size_t i = 0; cf->acme_storage && i < lc->nacme; i++)
        acme_load_stored(lc, cf->acme_storage, lc->acme[i].name);
    return CT_OK;
}

void ct_tls_ctx_set_chal(struct ct_tls_ctx *lc, struct ct_tls_chal *ch)
{
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    lc->chal = ch;
}

bool ct_tls_ctx_has_acme(const struct ct_tls_ctx *lc, const char *name)
{
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    char norm[CT_TLS_MAX_NAME + 1];
    return ct_tls_name_norm(name, strlen(name), norm) && slot_find(lc, norm) != NULL;
}

int ct_tls_ctx_acme_install(struct ct_tls_ctx *lc, const char *name, const char *cert_pem,
                            size_t cert_len, const char *key_pem, size_t key_len, char *err,
                            size_t errlen)
{
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    char norm[CT_TLS_MAX_NAME + 1];
    struct acme_slot *sl = ct_tls_name_norm(name, strlen(name), norm) ? slot_find(lc, norm) : NULL;
    if (sl == NULL) {
        snprintf(err, errlen, "%s is not an ACME name of this listener", name);
        return CT_ENOENT;
    }
    X509 *x;
    STACK_OF(X509) *chain;
    EVP_PKEY *key;
    err[0] = '\0';
    int rc = ct_tls_pem_load(cert_pem, cert_len, key_pem, key_len, &x, &chain, &key, err, errlen);
    if (rc != CT_OK)
        return rc;
    SSL_CTX *sctx = NULL;
    if (X509_check_host(x, norm, 0, 0, NULL) != 1)
        snprintf(err, errlen, "the certificate is not for %s", norm);
    else if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0)
        snprintf(err, errlen, "the certificate has expired");
    else
        sctx = acme_sctx(lc, x, chain, key, err, errlen);
    X509_free(x);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    if (sctx == NULL) {
        ERR_clear_error();
        return CT_ECONF;
    }
    pthread_rwlock_wrlock(&lc->acme_lock);
    SSL_CTX *old = sl->sctx;
    sl->sctx = sctx;
    pthread_rwlock_unlock(&lc->acme_lock);
    SSL_CTX_free(old); /* connections made from it hold their own references */
    return CT_OK;
}

struct ct_tls_ctx *ct_tls_ctx_new(const struct ct_tls_listener_conf *cf,
                                  struct ct_tls_shared *shared, char *err, size_t errlen)
{
    pthread_once(&idx_once, idx_init);
    if (ssl_idx_counted < 0) {
        ct_tls_set_err(err, errlen, "cannot allocate an OpenSSL ex_data index");
        return NULL;
    }
    struct ct_tls_ctx *lc = ct_xcalloc(1, sizeof(*lc));
    lc->magic = CT_TLS_CTX_MAGIC;
    pthread_rwlock_init(&lc->acme_lock, NULL);
    atomic_init(&lc->hs_full, 0);
    atomic_init(&lc->hs_resumed, 0);
    lc->h2 = !cf->disable_h2;
    if (shared != NULL && !cf->disable_tickets)
        lc->shared = ct_tls_shared_ref(shared);
    struct build b = {.cf = cf};
    int rc = load_all(&b, lc->note, sizeof(lc->note), err, errlen);
    if (rc == CT_OK)
        rc = load_client_ca(&b, err, errlen);
    if (rc == CT_OK)
        rc = build_sni(lc, &b, err, errlen);
    if (rc == CT_OK && cf->nacme > 0)
        rc = acme_setup(lc, &b, err, errlen);
    if (rc == CT_OK)
        describe(lc, &b);
    build_free(&b);
    if (rc != CT_OK) {
        ct_tls_ctx_free(&lc);
        return NULL;
    }
    return lc;
}

void ct_tls_ctx_free(struct ct_tls_ctx **ctxp)
{
    struct ct_tls_ctx *lc = *ctxp;
    *ctxp = NULL;
    if (lc == NULL)
        return;
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    for (size_t i = 0; i < lc->nsctx; i++)
        SSL_CTX_free(lc->sctxs[i]);
    free(lc->sctxs);
    for (size_t i = 0; i < lc->nnames; i++)
        free(lc->names[i].name);
    free(lc->names);
    for (size_t i = 0; i < lc->nacme; i++) {
        free(lc->acme[i].name);
        SSL_CTX_free(lc->acme[i].sctx);
    }
    free(lc->acme);
    for (size_t i = 0; i < CT_ARRAY_LEN(lc->kept); i++)
        free(lc->kept[i]);
    X509_STORE_free(lc->keep_store);
    sk_X509_NAME_pop_free(lc->keep_ca_names, X509_NAME_free);
    pthread_rwlock_destroy(&lc->acme_lock);
    ct_tls_shared_release(&lc->shared);
    lc->magic = 0;
    free(lc);
}

SSL *ct_tls_new_ssl(struct ct_tls_ctx *lc)
{
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    return SSL_new(lc->def);
}

const char *ct_tls_ctx_describe(const struct ct_tls_ctx *lc)
{
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    return lc->desc;
}

const char *ct_tls_ctx_selfsigned_note(const struct ct_tls_ctx *lc)
{
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    return lc->note[0] ? lc->note : NULL;
}

void ct_tls_ctx_stats(const struct ct_tls_ctx *lc, struct ct_tls_stats *out)
{
    CT_CHECK_OBJ(lc, CT_TLS_CTX_MAGIC);
    struct ct_tls_ctx *m = (struct ct_tls_ctx *)lc; /* atomics: loads only */
    out->handshakes_full = atomic_load_explicit(&m->hs_full, memory_order_relaxed);
    out->handshakes_resumed = atomic_load_explicit(&m->hs_resumed, memory_order_relaxed);
}
