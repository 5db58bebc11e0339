/*
 * proxy/acme/acme_jws.c: the cryptography of RFC 8555 on OpenSSL 3.0:
 *   - base64url without padding (RFC 7515 §2);
 *   - the account's JWK and its thumbprint (RFC 7638: the members crv, kty,
 *     x, y in that order, no whitespace, coordinates zero-padded to 32
 *     bytes);
 *   - JWS flattened JSON with ES256 (RFC 7518 §3.4: the signature is r||s,
 *     64 bytes, where EVP_DigestSign gives DER);
 *   - the key authorization (RFC 8555 §8.1) and the CSR (PKCS#10, DER,
 *     base64url) with the name as the only SAN.
 * Pure: no I/O.
 */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/acme/acme.h"

char *ct_acme_b64url(const unsigned char *in, size_t len)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *out = ct_xmalloc(len / 3 * 4 + 5);
    size_t o = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        out[o++] = tbl[v >> 18 & 63];
        out[o++] = tbl[v >> 12 & 63];
        out[o++] = tbl[v >> 6 & 63];
        out[o++] = tbl[v & 63];
    }
    if (i < len) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0);
        out[o++] = tbl[v >> 18 & 63];
        out[o++] = tbl[v >> 12 & 63];
        if (i + 1 < len)
            out[o++] = tbl[v >> 6 & 63];
    }
    out[o] = '\0';
    return out;
}

static char *b64url_str(const char *s)
{
    return ct_acme_b64url((const unsigned char *)s, strlen(s));
}

/* One coordinate of an EC P-256 public key, zero-padded to 32 bytes. */
static char *coord(const EVP_PKEY *key, const char *which)
{
    BIGNUM *bn = NULL;
    unsigned char buf[32];
    if (!EVP_PKEY_get_bn_param(key, which, &bn) || BN_bn2binpad(bn, buf, sizeof(buf)) != 32) {
        BN_free(bn);
        return NULL;
    }
    BN_free(bn);
    return ct_acme_b64url(buf, sizeof(buf));
}

char *ct_acme_jwk(const EVP_PKEY *key)
{
    char *x = coord(key, OSSL_PKEY_PARAM_EC_PUB_X), *y = coord(key, OSSL_PKEY_PARAM_EC_PUB_Y);
    char *out = NULL;
    if (x && y) {
        size_t n = strlen(x) + strlen(y) + 64;
        out = ct_xmalloc(n);
        snprintf(out, n, "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}", x, y);
    }
    free(x);
    free(y);
    ERR_clear_error();
    return out;
}

char *ct_acme_thumbprint(const char *jwk)
{
    unsigned char md[32];
    unsigned int n = 0;
    if (EVP_Digest(jwk, strlen(jwk), md, &n, EVP_sha256(), NULL) != 1 || n != 32)
        return NULL;
    return ct_acme_b64url(md, n);
}

char *ct_acme_keyauth(const char *token, const char *thumbprint)
{
    size_t n = strlen(token) + strlen(thumbprint) + 2;
    char *out = ct_xmalloc(n);
    snprintf(out, n, "%s.%s", token, thumbprint);
    return out;
}

/* ES256 over DATA: DER from OpenSSL, r||s (64 bytes) for JWS. */
static char *es256(EVP_PKEY *key, const char *data)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char der[128], raw[64];
    size_t dlen = sizeof(der);
    char *out = NULL;
    if (md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
        EVP_DigestSign(md, der, &dlen, (const unsigned char *)data, strlen(data)) == 1) {
        const unsigned char *p = der;
        ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)dlen);
        if (sig && BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, 32) == 32 &&
            BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + 32, 32) == 32)
            out = ct_acme_b64url(raw, sizeof(raw));
        ECDSA_SIG_free(sig);
    }
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    return out;
}

char *ct_acme_jws(EVP_PKEY *key, const char *jwk, const char *kid, const char *nonce,
                  const char *url, const char *payload)
{
    /* RFC 8555 §6.2: jwk for newAccount, kid afterwards; nonce and url
     * always. The values are ours or the CA's URLs and nonces, which hold
     * no '"' or '\\' (nonces are base64url; URLs are checked by the caller). */
    size_t n = strlen(nonce) + strlen(url) + (kid ? strlen(kid) : strlen(jwk)) + 96;
    char *prot = ct_xmalloc(n);
    snprintf(prot, n, "{\"alg\":\"ES256\",%s%s%s,\"nonce\":\"%s\",\"url\":\"%s\"}",
             kid ? "\"kid\":\"" : "\"jwk\":", kid ? kid : jwk, kid ? "\"" : "", nonce, url);
    char *p64 = b64url_str(prot), *pl64 = b64url_str(payload);
    free(prot);
    size_t sn = strlen(p64) + strlen(pl64) + 2;
    char *signing = ct_xmalloc(sn);
    snprintf(signing, sn, "%s.%s", p64, pl64);
    char *sig = es256(key, signing);
    free(signing);
    char *out = NULL;
    if (sig) {
        size_t on = strlen(p64) + strlen(pl64) + strlen(sig) + 64;
        out = ct_xmalloc(on);
        snprintf(out, on, "{\"protected\":\"%s\",\"payload\":\"%s\",\"signature\":\"%s\"}", p64,
                 pl64, sig);
    }
    free(p64);
    free(pl64);
    free(sig);
    return out;
}

char *ct_acme_csr(EVP_PKEY *key, const char *name)
{
    X509_REQ *req = X509_REQ_new();
    STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
    char san[300];
    snprintf(san, sizeof(san), "DNS:%s", name);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
    char *out = NULL;
    unsigned char *der = NULL;
    int len = -1;
    if (req && exts && ext && X509_REQ_set_version(req, 0) && X509_REQ_set_pubkey(req, key) &&
        X509_NAME_add_entry_by_txt(X509_REQ_get_subject_name(req), "CN", MBSTRING_ASC,
                                   (const unsigned char *)name, -1, -1, 0) &&
        sk_X509_EXTENSION_push(exts, ext)) {
        ext = NULL; /* the stack has it */
        if (X509_REQ_add_extensions(req, exts) && X509_REQ_sign(req, key, EVP_sha256()) > 0 &&
            (len = i2d_X509_REQ(req, &der)) > 0)
            out = ct_acme_b64url(der, (size_t)len);
    }
    OPENSSL_free(der);
    X509_EXTENSION_free(ext);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    X509_REQ_free(req);
    ERR_clear_error();
    return out;
}
