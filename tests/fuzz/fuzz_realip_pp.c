/*
 * tests/fuzz/fuzz_realip_pp.c: libFuzzer target for what proxy/realip reads
 * from the network before anything else: the PROXY protocol header
 * (ct_pp_parse, on every connection of a proxy_protocol listener) and the
 * forwarding fields of trusted proxies (ct_realip_from_fields).
 *
 * Input: any bytes. Checks (a failure aborts, like a crash):
 *   - ct_pp_parse gives CT_OK, CT_EAGAIN or CT_EPROTO; on CT_OK the header
 *     it consumed is inside the input and at most CT_PP_V2_MAX, a non-local
 *     result has an IPv4 or IPv6 source; every shorter prefix of an accepted
 *     header asks for more or is refused, never accepted with a different
 *     length;
 *   - the input as a field value (split at NULs into several fields) walks
 *     to an address that is the peer's or a parsed one, X-Forwarded-For and
 *     Forwarded alike.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/realip/realip.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ct_pp_result r;
    int rc = ct_pp_parse(data, size, &r);
    CHECK(rc == CT_OK || rc == CT_EAGAIN || rc == CT_EPROTO);
    if (rc == CT_OK) {
        CHECK(r.consumed > 0 && r.consumed <= size && r.consumed <= CT_PP_V2_MAX);
        CHECK(r.local || r.src.family == AF_INET || r.src.family == AF_INET6);
        struct ct_pp_result again;
        for (size_t k = 1; k < r.consumed; k += 1 + k / 8) {
            int rk = ct_pp_parse(data, k, &again);
            CHECK(rk != CT_OK || again.consumed <= k);
        }
    }
    struct ct_str fields[4];
    size_t nf = 0;
    const char *p = (const char *)data, *end = p + size;
    while (p < end && nf < 4) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        const char *e = z ? z : end;
        fields[nf++] = ct_str_make(p, (size_t)(e - p));
        p = e + 1;
    }
    struct ct_conf_cidr all4 = {.family = AF_INET, .prefix_len = 0};
    struct ct_conf_cidr all6 = {.family = AF_INET6, .prefix_len = 0};
    struct ct_conf_cidr trusted[2] = {all4, all6};
    struct ct_realip_addr peer = {.family = AF_INET, .addr = {127, 0, 0, 1}}, out;
    for (int fwd = 0; fwd < 2; fwd++) {
        bool moved = ct_realip_from_fields(trusted, 2, &peer, fields, nf, fwd, &out);
        CHECK(out.family == AF_INET || out.family == AF_INET6);
        CHECK(moved || memcmp(&out, &peer, sizeof(out)) == 0);
    }
    return 0;
}
