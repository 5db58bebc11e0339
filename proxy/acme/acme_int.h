/*
 * proxy/acme/acme_int.h: shared inside proxy/acme/ only.
 */
#ifndef CT_ACME_INT_H
#define CT_ACME_INT_H

#include "proxy/acme/acme.h"

/* ---- storage (acme_store.c) ---------------------------------------------- */

/* mkdir DIR 0700 unless it exists. CT_OK or CT_EIO with ERR. */
int ct_acme_mkdirs(const char *dir, char *err, size_t errlen);
/* Write DATA to PATH (0600) through PATH.tmp and rename. CT_OK or CT_EIO. */
int ct_acme_write_file(const char *path, const char *data, size_t len, char *err, size_t errlen);
/* The whole file (up to 1 MiB), NUL-terminated, or NULL; the caller frees. */
char *ct_acme_read_file(const char *path, size_t *lenp);
/* KEY as unencrypted PEM (caller frees), or NULL. */
char *ct_acme_key_pem(EVP_PKEY *key, size_t *lenp);
EVP_PKEY *ct_acme_key_from_pem(const char *pem, size_t len);
/* The first certificate of PEM: its validity as Unix times. */
int ct_acme_cert_times(const char *pem, size_t len, double *not_before, double *not_after);

#endif /* CT_ACME_INT_H */
