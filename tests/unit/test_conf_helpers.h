/*
 * tests/unit/test_conf_helpers.h: shared by the conf test files. Loading a
 * string and finding one exact error message among those collected.
 */
#ifndef TEST_CONF_HELPERS_H
#define TEST_CONF_HELPERS_H

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "tests/unit/ct_test.h"

/* Two lines that make a valid file; tests append from line 3 on. */
#define BASE                                                                   \
    "listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"        \
    "backends = ( { address = \"127.0.0.1:8081\"; } );\n"

static struct ct_conf_errors errs;

static inline struct ct_conf *load(const char *text)
{
    struct ct_conf *cf = NULL;
    ct_conf_errors_init(&errs);
    int rc = ct_conf_load_string(text, "t.conf", &cf, &errs);
    CU_ASSERT_EQUAL(rc == CT_OK, cf != NULL);
    CU_ASSERT_EQUAL(rc == CT_OK, errs.n == 0);
    return cf;
}

/* `cachet -T`'s text of CF (ct_conf_dump; the caller frees it). */
static inline char *dump_text(const struct ct_conf *cf)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    ct_conf_dump(cf, fp);
    fclose(fp);
    return buf;
}

static inline int has_err(const char *exact)
{
    for (size_t i = 0; i < errs.n; i++)
        if (strcmp(errs.msg[i], exact) == 0)
            return 1;
    fprintf(stderr, "\nwanted: %s\ngot %zu:\n", exact, errs.n);
    ct_conf_errors_print(&errs, stderr);
    return 0;
}

/* TEXT must fail to load with the message MSG among its errors. */
#define EXPECT_ERR(text, msg)                                                  \
    do {                                                                       \
        struct ct_conf *cf_ = load(text);                                      \
        CU_ASSERT_PTR_NULL(cf_);                                               \
        CU_ASSERT_TRUE(has_err(msg));                                          \
        ct_conf_free(&cf_);                                                    \
    } while (0)

/* TEXT must load; the configuration is left in *cfp. */
#define EXPECT_OK(text, cfp)                                                   \
    do {                                                                       \
        *(cfp) = load(text);                                                   \
        if (!*(cfp))                                                           \
            ct_conf_errors_print(&errs, stderr);                               \
        CU_ASSERT_PTR_NOT_NULL_FATAL(*(cfp));                                  \
    } while (0)

/* PATH of a source file (REL from the top of the tree): under $CT_SRC, else
 * next to this test (__FILE__ is absolute under CMake), else relative. */
static inline void src_path(const char *rel, char *out, size_t len)
{
    const char *env = getenv("CT_SRC");
    const char *me = __FILE__, *tail = strstr(me, "tests/unit/");
    if (env)
        snprintf(out, len, "%s/%s", env, rel);
    else if (tail && tail != me)
        snprintf(out, len, "%.*s%s", (int)(tail - me), me, rel);
    else
        snprintf(out, len, "%s", rel);
}

/* A self-signed EC P-256 certificate for CN and its key, as PEM files.
 * Runs in the suite's setup: no CU_ASSERT here, failure is the return. */
static inline int write_pair(const char *cert_path, const char *key_path, const char *cn)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!pk || !x)
        return 1;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pk);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509_sign(x, pk, EVP_sha256());
    int bad = 0;
    FILE *fp = fopen(cert_path, "w");
    bad |= !fp || PEM_write_X509(fp, x) != 1;
    if (fp)
        fclose(fp);
    fp = fopen(key_path, "w");
    bad |= !fp || PEM_write_PrivateKey(fp, pk, NULL, NULL, 0, NULL, NULL) != 1;
    if (fp)
        fclose(fp);
    X509_free(x);
    EVP_PKEY_free(pk);
    return bad;
}

#endif
