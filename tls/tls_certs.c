/*
 * tls/tls_certs.c: loading one certificate for a listener: the PEM leaf and
 * chain, the private key (encrypted keys refused: nobody is there to type a
 * passphrase), the check that they match, and the server names it answers
 * (configured, else its SAN DNS names, else its CN), normalised for SNI
 * matching. Errors name the file and carry OpenSSL's reason.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tls/tls_int.h"

/* Fill ERR with the message and, when OpenSSL queued reasons, ": reason". */
void ct_tls_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n + 3 >= errlen) {
        ERR_clear_error();
        return;
    }
    char why[256] = "";
    if (ct_tls_drain_errors(why, sizeof(why)) > 0)
        snprintf(err + n, errlen - (size_t)n, ": %s", why);
}

/* ---- names -------------------------------------------------------------- */

/* Lower-case and check a server name into OUT (CT_TLS_MAX_NAME + 1 bytes):
 * letters, digits, '-', '_' and '.', no empty label, and '*' only as a whole
 * first label followed by at least one more label. A trailing dot is dropped. */
bool ct_tls_name_norm(const char *s, size_t len, char *out)
{
    if (len > 0 && s[len - 1] == '.')
        len--;
    if (len == 0 || len > CT_TLS_MAX_NAME)
        return false;
    bool label_start = true;
    for (size_t i = 0; i < len; i++) {
        char ch = ct_ascii_lower(s[i]);
        if (ch == '*') {
            if (i != 0 || len < 3 || s[1] != '.')
                return false;
        } else if (ch == '.') {
            if (label_start)
                return false;
        } else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                     ch == '_')) {
            return false;
        }
        label_start = ch == '.';
        out[i] = ch;
    }
    out[len] = '\0';
    return !label_start;
}

static void names_push(struct ct_tls_cert *lc, const char *norm)
{
    for (size_t i = 0; i < lc->nnames; i++)
        if (strcmp(lc->names[i], norm) == 0)
            return;
    lc->names = ct_xrealloc(lc->names, (lc->nnames + 1) * sizeof(char *));
    lc->names[lc->nnames++] = ct_xstrdup(norm);
}

/* Names from the certificate: SAN DNS entries, or the CN without a SAN
 * (RFC 6125 §6.4.4). Names we cannot match on are skipped. */
void ct_tls_names_from_cert(struct ct_tls_cert *lc)
{
    char norm[CT_TLS_MAX_NAME + 1];
    GENERAL_NAMES *gens = X509_get_ext_d2i(lc->x, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type != GEN_DNS)
            continue;
        const char *p = (const char *)ASN1_STRING_get0_data(g->d.dNSName);
        size_t len = (size_t)ASN1_STRING_length(g->d.dNSName);
        if (memchr(p, '\0', len) == NULL && ct_tls_name_norm(p, len, norm))
            names_push(lc, norm);
    }
    bool had_san = gens != NULL;
    GENERAL_NAMES_free(gens);
    if (had_san)
        return;
    X509_NAME *subj = X509_get_subject_name(lc->x);
    int pos = X509_NAME_get_index_by_NID(subj, NID_commonName, -1);
    unsigned char *utf8 = NULL;
    int len =
        pos < 0
            ? -1
            : ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, pos)));
    if (len > 0 && memchr(utf8, '\0', (size_t)len) == NULL &&
        ct_tls_name_norm((char *)utf8, (size_t)len, norm))
        names_push(lc, norm);
    OPENSSL_free(utf8);
}

static int names_from_conf(struct ct_tls_cert *lc, const struct ct_tls_cert_conf *cc, char *err,
                           size_t errlen)
{
    char norm[CT_TLS_MAX_NAME + 1];
    for (size_t i = 0; i < cc->nnames; i++) {
        const char *n = cc->names[i];
        if (!ct_tls_name_norm(n, strlen(n), norm)) {
            snprintf(err, errlen,
                     "certificate \"%s\": invalid server name \"%s\" (expected a host name "
                     "or \"*.\" followed by one)",
                     cc->cert_file, n);
            return CT_ECONF;
        }
        names_push(lc, norm);
    }
    return CT_OK;
}

/* ---- loading ------------------------------------------------------------ */

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    return 0; /* encrypted keys would need a prompt at start: refuse them */
}

/* Leaf then chain from a PEM file. Reading stops at the end of the file,
 * which OpenSSL reports as "no start line": that one is not an error. */
static int load_certs(struct ct_tls_cert *lc, const char *path, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        snprintf(err, errlen, "cannot read certificate \"%s\": %s", path, strerror(errno));
        return CT_ECONF;
    }
    lc->x = PEM_read_X509(fp, NULL, no_passphrase, NULL);
    lc->chain = sk_X509_new_null();
    X509 *c;
    while (lc->x != NULL && (c = PEM_read_X509(fp, NULL, no_passphrase, NULL)) != NULL)
        CT_ASSERT(sk_X509_push(lc->chain, c) > 0);
    fclose(fp);
    unsigned long e = ERR_peek_last_error();
    if (lc->x != NULL && ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
        ERR_clear_error();
    if (lc->x == NULL || ERR_peek_error() != 0) {
        ct_tls_set_err(err, errlen, "cannot load certificate \"%s\"", path);
        return CT_ECONF;
    }
    return CT_OK;
}

static int load_key(struct ct_tls_cert *lc, const char *path, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        snprintf(err, errlen, "cannot read private key \"%s\": %s", path, strerror(errno));
        return CT_ECONF;
    }
    lc->key = PEM_read_PrivateKey(fp, NULL, no_passphrase, NULL);
    fclose(fp);
    if (lc->key == NULL) {
        ct_tls_set_err(err, errlen, "cannot load private key \"%s\"", path);
        return CT_ECONF;
    }
    ERR_clear_error();
    return CT_OK;
}

static void key_describe(EVP_PKEY *key, char *buf, size_t len)
{
    char group[64] = "";
    size_t glen = 0;
    switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_EC:
        EVP_PKEY_get_group_name(key, group, sizeof(group), &glen);
        snprintf(buf, len, "ECDSA %s", group);
        break;
    case EVP_PKEY_RSA:
    case EVP_PKEY_RSA_PSS: snprintf(buf, len, "RSA %d", EVP_PKEY_get_bits(key)); break;
    default: snprintf(buf, len, "%s", OBJ_nid2sn(EVP_PKEY_get_base_id(key))); break;
    }
}

/* Served anyway (as nginx does: the operator may be replacing it), but the
 * startup line says so, since clients will refuse it. */
static const char *validity_note(X509 *x, char *note, size_t len)
{
    int days = 0, secs = 0;
    note[0] = '\0';
    if (ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notBefore(x)) && (days > 0 || secs > 0))
        snprintf(note, len, " NOT YET VALID");
    else if (ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(x)) && (days < 0 || secs < 0))
        snprintf(note, len, " EXPIRED");
    else if (days < 30)
        snprintf(note, len, " expires in %d day%s", days, days == 1 ? "" : "s");
    return note;
}

int ct_tls_cert_load(struct ct_tls_cert *lc, const struct ct_tls_cert_conf *cc, char *err,
                     size_t errlen)
{
    const char *key_file = cc->key_file ? cc->key_file : cc->cert_file;
    int rc = load_certs(lc, cc->cert_file, err, errlen);
    if (rc == CT_OK)
        rc = load_key(lc, key_file, err, errlen);
    if (rc != CT_OK)
        return rc;
    if (X509_check_private_key(lc->x, lc->key) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "certificate \"%s\" and private key \"%s\" do not match",
                 cc->cert_file, key_file);
        return CT_ECONF;
    }
    rc = cc->nnames ? names_from_conf(lc, cc, err, errlen) : CT_OK;
    if (rc == CT_OK && cc->nnames == 0)
        ct_tls_names_from_cert(lc);
    char kd[64], note[32];
    key_describe(lc->key, kd, sizeof(kd));
    snprintf(lc->label, sizeof(lc->label), "%s \"%s\"%s", kd,
             lc->nnames ? lc->names[0] : cc->cert_file, validity_note(lc->x, note, sizeof(note)));
    return rc;
}

void ct_tls_cert_free(struct ct_tls_cert *lc)
{
    X509_free(lc->x);
    sk_X509_pop_free(lc->chain, X509_free);
    EVP_PKEY_free(lc->key);
    for (size_t i = 0; i < lc->nnames; i++)
        free(lc->names[i]);
    free(lc->names);
}
