/*
 * tls/tls_acme.c: the TLS side of ACME (proxy/acme/ orders, this installs).
 *
 * - The challenge store (struct ct_tls_chal): one per process, written by
 *   the ACME client on the main thread, read by every worker: HTTP-01
 *   tokens with their key authorizations (RFC 8555 §8.3), and TLS-ALPN-01
 *   validation certificates by name (RFC 8737 §3). A mutex guards it: it is
 *   read once per validation connection or per /.well-known/acme-challenge/
 *   request, never on the normal path.
 * - The validation certificate: self-signed, one SAN dNSName (the name),
 *   the critical acmeIdentifier extension (OID 1.3.6.1.5.5.7.1.31) whose
 *   value is the DER OCTET STRING of SHA-256(key authorization).
 * - The placeholder: a self-signed certificate for every ACME name of a
 *   listener, served until its first real certificate arrives (a handshake
 *   that completes and says "self-signed" is easier to diagnose than an
 *   alert, and a browser shows the name it was for).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509v3.h>

#include "tls/tls_int.h"

#define CT_TLS_CHAL_MAGIC 0x7c1acac3u
#define TOKEN_MAX 256 /* RFC 8555 §8.1: 128 bits of entropy, base64url; Let's Encrypt's are 43 */

struct http_ent {
    char *token;
    char *keyauth;
};

struct alpn_ent {
    char *name;
    X509 *x;
    EVP_PKEY *key;
};

struct ct_tls_chal {
    unsigned magic;
    pthread_mutex_t mu; /* guards everything below */
    struct http_ent *http;
    size_t nhttp;
    struct alpn_ent *alpn;
    size_t nalpn;
};

struct ct_tls_chal *ct_tls_chal_new(void)
{
    struct ct_tls_chal *ch = ct_xcalloc(1, sizeof(*ch));
    ch->magic = CT_TLS_CHAL_MAGIC;
    pthread_mutex_init(&ch->mu, NULL);
    return ch;
}

void ct_tls_chal_free(struct ct_tls_chal **chp)
{
    struct ct_tls_chal *ch = *chp;
    *chp = NULL;
    if (ch == NULL)
        return;
    CT_CHECK_OBJ(ch, CT_TLS_CHAL_MAGIC);
    for (size_t i = 0; i < ch->nhttp; i++) {
        free(ch->http[i].token);
        free(ch->http[i].keyauth);
    }
    for (size_t i = 0; i < ch->nalpn; i++) {
        free(ch->alpn[i].name);
        X509_free(ch->alpn[i].x);
        EVP_PKEY_free(ch->alpn[i].key);
    }
    free(ch->http);
    free(ch->alpn);
    pthread_mutex_destroy(&ch->mu);
    ch->magic = 0;
    free(ch);
}

void ct_tls_chal_http_set(struct ct_tls_chal *ch, const char *token, const char *keyauth)
{
    CT_CHECK_OBJ(ch, CT_TLS_CHAL_MAGIC);
    pthread_mutex_lock(&ch->mu);
    for (size_t i = 0; i < ch->nhttp; i++)
        if (strcmp(ch->http[i].token, token) == 0) {
            free(ch->http[i].keyauth);
            ch->http[i].keyauth = ct_xstrdup(keyauth);
            pthread_mutex_unlock(&ch->mu);
            return;
        }
    ch->http = ct_xrealloc(ch->http, (ch->nhttp + 1) * sizeof(*ch->http));
    ch->http[ch->nhttp++] = (struct http_ent){ct_xstrdup(token), ct_xstrdup(keyauth)};
    pthread_mutex_unlock(&ch->mu);
}

void ct_tls_chal_http_del(struct ct_tls_chal *ch, const char *token)
{
    CT_CHECK_OBJ(ch, CT_TLS_CHAL_MAGIC);
    pthread_mutex_lock(&ch->mu);
    for (size_t i = 0; i < ch->nhttp; i++)
        if (strcmp(ch->http[i].token, token) == 0) {
            free(ch->http[i].token);
            free(ch->http[i].keyauth);
            ch->http[i] = ch->http[--ch->nhttp];
            break;
        }
    pthread_mutex_unlock(&ch->mu);
}

size_t ct_tls_chal_http_get(struct ct_tls_chal *ch, const char *token, size_t tlen, char *out,
                            size_t outlen)
{
    CT_CHECK_OBJ(ch, CT_TLS_CHAL_MAGIC);
    size_t n = 0;
    pthread_mutex_lock(&ch->mu);
    for (size_t i = 0; i < ch->nhttp && tlen <= TOKEN_MAX; i++) {
        if (strlen(ch->http[i].token) != tlen || memcmp(ch->http[i].token, token, tlen) != 0)
            continue;
        n = strlen(ch->http[i].keyauth);
        if (n >= outlen)
            n = 0;
        else
            memcpy(out, ch->http[i].keyauth, n + 1);
        break;
    }
    pthread_mutex_unlock(&ch->mu);
    return n;
}

/* ---- certificates made here ------------------------------------------------ */

/* RFC 8737 §3: the acmeIdentifier extension, critical, extnValue = the DER
 * of "Authorization ::= OCTET STRING (SIZE (32))". */
static int add_acme_id(X509 *x, const unsigned char digest[32])
{
    unsigned char der[34] = {0x04, 0x20};
    memcpy(der + 2, digest, 32);
    ASN1_OBJECT *obj = OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1);
    ASN1_OCTET_STRING *val = ASN1_OCTET_STRING_new();
    X509_EXTENSION *ext = NULL;
    int ok = obj && val && ASN1_OCTET_STRING_set(val, der, sizeof(der)) &&
             (ext = X509_EXTENSION_create_by_OBJ(NULL, obj, 1, val)) != NULL &&
             X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    ASN1_OCTET_STRING_free(val);
    ASN1_OBJECT_free(obj);
    return ok;
}

/* A self-signed EC P-256 certificate for CN with SAN (config syntax),
 * valid DAYS; with DIGEST, the acmeIdentifier extension. */
static X509 *self_signed(EVP_PKEY *key, const char *cn, const char *san, int days,
                         const unsigned char *digest)
{
    X509 *x = X509_new();
    if (x == NULL)
        return NULL;
    X509_NAME *name = X509_get_subject_name(x);
    int ok = X509_set_version(x, X509_VERSION_3) && ct_tls_set_random_serial(x) &&
             X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
             X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL) && X509_set_pubkey(x, key) &&
             X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1,
                                        -1, 0) &&
             X509_set_issuer_name(x, name) &&
             ct_tls_x509_add_ext(x, NULL, NID_subject_alt_name, san) &&
             ct_tls_x509_add_ext(x, NULL, NID_basic_constraints, "critical,CA:FALSE") &&
             (digest == NULL || add_acme_id(x, digest)) && X509_sign(x, key, EVP_sha256()) > 0;
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

int ct_tls_chal_alpn_set(struct ct_tls_chal *ch, const char *name, const char *keyauth,
                         char *err, size_t errlen)
{
    CT_CHECK_OBJ(ch, CT_TLS_CHAL_MAGIC);
    char norm[CT_TLS_MAX_NAME + 1], san[CT_TLS_MAX_NAME + 8];
    if (!ct_tls_name_norm(name, strlen(name), norm) || norm[0] == '*') {
        snprintf(err, errlen, "invalid name \"%s\"", name);
        return CT_ECONF;
    }
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)keyauth, strlen(keyauth), digest);
    snprintf(san, sizeof(san), "DNS:%s", norm);
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = key ? self_signed(key, norm, san, 7, digest) : NULL;
    if (x == NULL) {
        ct_tls_set_err(err, errlen, "cannot make the TLS-ALPN-01 certificate for %s", norm);
        EVP_PKEY_free(key);
        return CT_ETLS;
    }
    ct_tls_chal_alpn_del(ch, norm);
    pthread_mutex_lock(&ch->mu);
    ch->alpn = ct_xrealloc(ch->alpn, (ch->nalpn + 1) * sizeof(*ch->alpn));
    ch->alpn[ch->nalpn++] = (struct alpn_ent){ct_xstrdup(norm), x, key};
    pthread_mutex_unlock(&ch->mu);
    return CT_OK;
}

void ct_tls_chal_alpn_del(struct ct_tls_chal *ch, const char *name)
{
    CT_CHECK_OBJ(ch, CT_TLS_CHAL_MAGIC);
    pthread_mutex_lock(&ch->mu);
    for (size_t i = 0; i < ch->nalpn; i++)
        if (strcasecmp(ch->alpn[i].name, name) == 0) {
            free(ch->alpn[i].name);
            X509_free(ch->alpn[i].x);
            EVP_PKEY_free(ch->alpn[i].key);
            ch->alpn[i] = ch->alpn[--ch->nalpn];
            break;
        }
    pthread_mutex_unlock(&ch->mu);
}

bool ct_tls_chal_alpn_use(struct ct_tls_chal *ch, SSL *ssl, const char *name)
{
    CT_CHECK_OBJ(ch, CT_TLS_CHAL_MAGIC);
    bool ok = false;
    pthread_mutex_lock(&ch->mu);
    for (size_t i = 0; i < ch->nalpn; i++) {
        if (strcmp(ch->alpn[i].name, name) != 0)
            continue;
        /* Only this certificate: an RSA one of the listener must not be
         * the one OpenSSL picks for this client. */
        SSL_certs_clear(ssl);
        ok = SSL_use_certificate(ssl, ch->alpn[i].x) == 1 &&
             SSL_use_PrivateKey(ssl, ch->alpn[i].key) == 1;
        break;
    }
    pthread_mutex_unlock(&ch->mu);
    return ok;
}

int ct_tls_acme_placeholder(const char *const *names, size_t n, X509 **xp, EVP_PKEY **keyp,
                            char *note, size_t notelen, char *err, size_t errlen)
{
    size_t cap = 16;
    for (size_t i = 0; i < n; i++)
        cap += strlen(names[i]) + 5;
    char *san = ct_xmalloc(cap);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(san + k, cap - k, "%sDNS:%s", i ? "," : "", names[i]);
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = key ? self_signed(key, n ? names[0] : "localhost", san, 90, NULL) : NULL;
    free(san);
    if (x == NULL) {
        ct_tls_set_err(err, errlen, "cannot make the ACME placeholder certificate");
        EVP_PKEY_free(key);
        return CT_ETLS;
    }
    int w = snprintf(note, notelen,
                     "ACME: until the CA issues them, %s%s gets a self-signed EC P-256 "
                     "certificate (made in memory), SHA-256 ",
                     n ? names[0] : "?", n > 1 ? " (and every other ACME name of the listener)" : "");
    if (w > 0 && (size_t)w < notelen)
        ct_tls_fingerprint(x, note, notelen);
    *xp = x;
    *keyp = key;
    return CT_OK;
}

int ct_tls_pem_load(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                    X509 **xp, STACK_OF(X509) * *chainp, EVP_PKEY **keyp, char *err,
                    size_t errlen)
{
    BIO *cb = BIO_new_mem_buf(cert_pem, (int)cert_len);
    BIO *kb = BIO_new_mem_buf(key_pem, (int)key_len);
    X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    STACK_OF(X509) *chain = sk_X509_new_null();
    EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
    X509 *c;
    while (x && chain && (c = PEM_read_bio_X509(cb, NULL, NULL, NULL)) != NULL)
        sk_X509_push(chain, c);
    ERR_clear_error(); /* the end of the chain reads as an error */
    BIO_free(cb);
    BIO_free(kb);
    const char *why = x == NULL       ? "no certificate in it"
                      : key == NULL   ? "no usable private key"
                      : chain == NULL ? "out of memory"
                      : X509_check_private_key(x, key) != 1 ? "key and certificate do not match"
                                                            : NULL;
    if (why) {
        ct_tls_set_err(err, errlen, "%s", why);
        X509_free(x);
        EVP_PKEY_free(key);
        sk_X509_pop_free(chain, X509_free);
        return CT_ECONF;
    }
    *xp = x;
    *chainp = chain;
    *keyp = key;
    return CT_OK;
}
