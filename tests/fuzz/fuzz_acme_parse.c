/*
 * tests/fuzz/fuzz_acme_parse.c: libFuzzer target for what the ACME client
 * (proxy/acme/) reads from the CA: the directory, orders, authorizations
 * with their challenges, and problem documents (acme_parse.c, json-c).
 *
 * Input: any bytes, given to each parser (no NUL terminator: the parsers
 * take a length). Checks (a failure aborts, like a crash):
 *   - every parser gives CT_OK or CT_EPROTO, and on CT_EPROTO leaves its
 *     struct empty;
 *   - on CT_OK the members the client relies on are there: the directory's
 *     three URLs, the order's finalize URL and at most CT_ACME_MAX_AUTHZ
 *     authorizations, the authorization's name and challenges that each
 *     have a type and a URL, at most CT_ACME_MAX_CHAL;
 *   - a problem document parsed has a type;
 *   - a token accepted by ct_acme_token_ok is base64url only.
 * Leaks are caught by ASan's leak checker when the struct is freed.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/acme/acme.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    char err[256];
    struct ct_acme_directory d;
    int rc = ct_acme_parse_directory(body, size, &d, err, sizeof(err));
    CHECK(rc == CT_OK || rc == CT_EPROTO);
    if (rc == CT_OK)
        CHECK(d.new_nonce && d.new_account && d.new_order);
    else
        CHECK(!d.new_nonce && !d.new_account && !d.new_order && !d.terms);
    ct_acme_directory_free(&d);

    struct ct_acme_order od;
    rc = ct_acme_parse_order(body, size, &od, err, sizeof(err));
    CHECK(rc == CT_OK || rc == CT_EPROTO);
    if (rc == CT_OK) {
        CHECK(od.finalize && od.status != CT_ACME_OTHER && od.nauthz <= CT_ACME_MAX_AUTHZ);
        for (size_t i = 0; i < od.nauthz; i++)
            CHECK(od.authz[i] != NULL);
    } else {
        CHECK(od.nauthz == 0 && !od.finalize && !od.certificate);
    }
    ct_acme_order_free(&od);

    struct ct_acme_authz az;
    rc = ct_acme_parse_authz(body, size, &az, err, sizeof(err));
    CHECK(rc == CT_OK || rc == CT_EPROTO);
    if (rc == CT_OK) {
        CHECK(az.name && az.nchal <= CT_ACME_MAX_CHAL);
        for (size_t i = 0; i < az.nchal; i++) {
            CHECK(az.chal[i].type && az.chal[i].url);
            if (az.chal[i].token && ct_acme_token_ok(az.chal[i].token))
                CHECK(strspn(az.chal[i].token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                               "0123456789-_") == strlen(az.chal[i].token));
        }
    } else {
        CHECK(az.nchal == 0 && !az.name);
    }
    ct_acme_authz_free(&az);

    struct ct_acme_problem p;
    if (ct_acme_parse_problem(body, size, &p))
        CHECK(p.type != NULL);
    else
        CHECK(p.type == NULL && p.detail == NULL);
    ct_acme_problem_free(&p);
    return 0;
}
