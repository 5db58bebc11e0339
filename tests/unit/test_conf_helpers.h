/*
 * tests/unit/test_conf_helpers.h: shared by the conf test files. Loading a
 * string and finding one exact error message among those collected.
 */
#ifndef TEST_CONF_HELPERS_H
#define TEST_CONF_HELPERS_H

#include <stdio.h>
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

#endif
