/*
 * proxy/acme/acme_store.c: the storage directory (acme.h lists its files).
 * Keys are written 0600 and every file goes to a temporary name first, then
 * rename(2), so a crash or a full disk never leaves half a key or half a
 * chain where the next start would read it.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy/acme/acme_int.h"

int ct_acme_mkdirs(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0700) == 0 || errno == EEXIST)
        return CT_OK;
    snprintf(err, errlen, "cannot create \"%s\": %s", dir, strerror(errno));
    return CT_EIO;
}

int ct_acme_write_file(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write \"%s\": %s", tmp, strerror(errno));
        return CT_EIO;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "cannot write \"%s\": %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            return CT_EIO;
        }
        off += (size_t)n;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write \"%s\": %s", path, strerror(errno));
        unlink(tmp);
        return CT_EIO;
    }
    return CT_OK;
}

char *ct_acme_read_file(const char *path, size_t *lenp)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return NULL;
    size_t cap = 8192, len = 0, n;
    char *buf = ct_xmalloc(cap + 1);
    while ((n = fread(buf + len, 1, cap - len, fp)) > 0) {
        len += n;
        if (len < cap)
            continue;
        if (cap >= (1u << 20))
            break;
        cap *= 2;
        buf = ct_xrealloc(buf, cap + 1);
    }
    fclose(fp);
    buf[len] = '\0';
    *lenp = len;
    return buf;
}

char *ct_acme_key_pem(EVP_PKEY *key, size_t *lenp)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (b && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) == 1) {
        char *p;
        long n = BIO_get_mem_data(b, &p);
        out = ct_xmalloc((size_t)n + 1);
        memcpy(out, p, (size_t)n);
        out[n] = '\0';
        *lenp = (size_t)n;
    }
    BIO_free(b);
    ERR_clear_error();
    return out;
}

EVP_PKEY *ct_acme_key_from_pem(const char *pem, size_t len)
{
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    ERR_clear_error();
    return k;
}

int ct_acme_cert_times(const char *pem, size_t len, double *not_before, double *not_after)
{
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    int rc = CT_EPROTO;
    struct tm tb, ta;
    if (x && ASN1_TIME_to_tm(X509_get0_notBefore(x), &tb) == 1 &&
        ASN1_TIME_to_tm(X509_get0_notAfter(x), &ta) == 1) {
        *not_before = (double)timegm(&tb);
        *not_after = (double)timegm(&ta);
        rc = CT_OK;
    }
    X509_free(x);
    ERR_clear_error();
    return rc;
}
