/*
 * tls/tls_selfsigned.c: the embedded default certificate. With no
 * certificate configured, cachet still serves HTTPS out of the box: an EC
 * P-256 key and a self-signed certificate for localhost are made in memory at
 * start (nothing is written to disk, so there is no private key file to
 * protect or clean up). Clients must skip verification (curl -k) or pin the
 * fingerprint the startup log prints.
 */
#include <stdio.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "tls/tls_int.h"

#define SELFSIGNED_DAYS 365

void ct_tls_fingerprint(X509 *x, char *buf, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    size_t used = strlen(buf);
    if (X509_digest(x, EVP_sha256(), md, &n) != 1)
        return;
    for (unsigned i = 0; i < n && used + 3 < len; i++) {
        snprintf(buf + used, len - used, i ? ":%02X" : "%02X", md[i]);
        used += i ? 3 : 2;
    }
}

int ct_tls_x509_add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (ext == NULL)
        return 0;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}

/* A random positive 127-bit serial (RFC 5280 §4.1.2.2: unique, <= 20 bytes). */
int ct_tls_set_random_serial(X509 *x)
{
    unsigned char raw[16];
    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return 0;
    raw[0] &= 0x7f;
    BIGNUM *bn = BN_bin2bn(raw, sizeof(raw), NULL);
    int ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok;
}

static X509 *make_cert(EVP_PKEY *key)
{
    X509 *x = X509_new();
    X509_NAME *name = X509_get_subject_name(x);
    int ok = x != NULL && X509_set_version(x, X509_VERSION_3) && ct_tls_set_random_serial(x) &&
             X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
             X509_time_adj_ex(X509_getm_notAfter(x), SELFSIGNED_DAYS, 0, NULL) &&
             X509_set_pubkey(x, key) &&
             X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                        (const unsigned char *)"localhost", -1, -1, 0) &&
             X509_set_issuer_name(x, name) &&
             ct_tls_x509_add_ext(x, NULL, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1") &&
             ct_tls_x509_add_ext(x, NULL, NID_basic_constraints, "critical,CA:FALSE") &&
             ct_tls_x509_add_ext(x, NULL, NID_key_usage, "critical,digitalSignature") &&
             ct_tls_x509_add_ext(x, NULL, NID_ext_key_usage, "serverAuth") &&
             ct_tls_x509_add_ext(x, NULL, NID_subject_key_identifier, "hash") && X509_sign(x, key, EVP_sha256()) > 0;
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

int ct_tls_selfsigned_make(X509 **xp, EVP_PKEY **keyp, char *note, size_t notelen, char *err,
                           size_t errlen)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = key ? make_cert(key) : NULL;
    if (x == NULL) {
        char why[256] = "";
        ct_tls_drain_errors(why, sizeof(why));
        snprintf(err, errlen, "cannot generate the self-signed certificate: %s",
                 why[0] ? why : "unknown OpenSSL error");
        EVP_PKEY_free(key);
        return CT_ETLS;
    }
    int n = snprintf(note, notelen,
                     "no certificate configured: generated a self-signed EC P-256 "
                     "certificate in memory for CN=localhost (DNS:localhost, IP:127.0.0.1), "
                     "valid %d days, SHA-256 ",
                     SELFSIGNED_DAYS);
    if (n > 0 && (size_t)n < notelen)
        ct_tls_fingerprint(x, note, notelen);
    *xp = x;
    *keyp = key;
    return CT_OK;
}
