/*
 * tests/unit/test_realip_parse.c: PROXY protocol v1 and v2 headers (whole,
 * cut short, malformed) and the client address behind trusted proxies from
 * X-Forwarded-For and Forwarded.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/realip/realip.h"
#include "tests/unit/ct_test.h"

static const char *ip(const struct ct_realip_addr *a)
{
    static char buf[INET6_ADDRSTRLEN];
    inet_ntop(a->family, a->addr, buf, sizeof(buf));
    return buf;
}

static void test_v1(void)
{
    struct ct_pp_result r;
    const char *h = "PROXY TCP4 192.0.2.7 198.51.100.1 51234 443\r\nGET / HTTP/1.1\r\n";
    CU_ASSERT_EQUAL_FATAL(ct_pp_parse((const uint8_t *)h, strlen(h), &r), CT_OK);
    CU_ASSERT_EQUAL(r.version, 1);
    CU_ASSERT_EQUAL(r.consumed, strlen("PROXY TCP4 192.0.2.7 198.51.100.1 51234 443\r\n"));
    CU_ASSERT_FALSE(r.local);
    CU_ASSERT_STRING_EQUAL(ip(&r.src), "192.0.2.7");
    CU_ASSERT_EQUAL(r.src.port, 51234);
    CU_ASSERT_EQUAL(r.dst.port, 443);
    /* every shorter prefix asks for more */
    for (size_t n = 1; n < r.consumed; n++)
        CU_ASSERT_EQUAL(ct_pp_parse((const uint8_t *)h, n, &r), CT_EAGAIN);
    h = "PROXY TCP6 2001:db8::1 2001:db8::2 1 2\r\n";
    CU_ASSERT_EQUAL(ct_pp_parse((const uint8_t *)h, strlen(h), &r), CT_OK);
    CU_ASSERT_STRING_EQUAL(ip(&r.src), "2001:db8::1");
    h = "PROXY UNKNOWN whatever follows\r\n";
    CU_ASSERT_EQUAL(ct_pp_parse((const uint8_t *)h, strlen(h), &r), CT_OK);
    CU_ASSERT_TRUE(r.local);
    static const char *bad[] = {
        "GET / HTTP/1.1\r\n",                               /* not a PROXY header */
        "PROXY TCP4 192.0.2.7 198.51.100.1 51234\r\n",      /* a field missing */
        "PROXY TCP4 2001:db8::1 198.51.100.1 1 2\r\n",      /* v6 under TCP4 */
        "PROXY TCP4 192.0.2.7 198.51.100.1 65536 2\r\n",    /* port out of range */
        "PROXY TCP4 192.0.2.7 198.51.100.1 01 2\r\n",       /* leading zero */
        "PROXY TCP4 192.0.2.7 198.51.100.1 1 2 \r\n",       /* trailing space */
        "PROXY TCP4 192.0.2.7 198.51.100.1 1 2\n",          /* no CR */
        "PROXY UDP4 192.0.2.7 198.51.100.1 1 2\r\n",        /* not TCP */
        "proxy TCP4 192.0.2.7 198.51.100.1 1 2\r\n",        /* case */
    };
    for (size_t i = 0; i < CT_ARRAY_LEN(bad); i++) {
        int rc = ct_pp_parse((const uint8_t *)bad[i], strlen(bad[i]), &r);
        if (rc != CT_EPROTO)
            fprintf(stderr, "accepted: %s\n", bad[i]);
        CU_ASSERT_EQUAL(rc, CT_EPROTO);
    }
    /* 107 bytes without CRLF: no valid header is that long */
    char longh[200];
    memset(longh, 'x', sizeof(longh));
    memcpy(longh, "PROXY ", 6);
    CU_ASSERT_EQUAL(ct_pp_parse((const uint8_t *)longh, sizeof(longh), &r), CT_EPROTO);
}

static size_t v2(uint8_t *b, uint8_t cmd, uint8_t fam, const uint8_t *addrs, size_t n)
{
    static const uint8_t sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
                                    0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};
    memcpy(b, sig, 12);
    b[12] = (uint8_t)(0x20 | cmd);
    b[13] = fam;
    b[14] = (uint8_t)(n >> 8);
    b[15] = (uint8_t)n;
    if (n)
        memcpy(b + 16, addrs, n);
    return 16 + n;
}

static void test_v2(void)
{
    uint8_t b[2048];
    struct ct_pp_result r;
    uint8_t a4[12 + 5] = {192, 0, 2, 9, 198, 51, 100, 1, 0xc8, 0x01, 0x01, 0xbb,
                          0x04, 0x00, 0x02, 'h', '2'}; /* + a TLV, ignored */
    size_t n = v2(b, 1, 0x11, a4, sizeof(a4));
    b[n] = 'G';
    CU_ASSERT_EQUAL_FATAL(ct_pp_parse(b, n + 1, &r), CT_OK);
    CU_ASSERT_EQUAL(r.version, 2);
    CU_ASSERT_EQUAL(r.consumed, n);
    CU_ASSERT_STRING_EQUAL(ip(&r.src), "192.0.2.9");
    CU_ASSERT_EQUAL(r.src.port, 0xc801);
    CU_ASSERT_EQUAL(r.dst.port, 443);
    for (size_t k = 1; k < n; k++)
        CU_ASSERT_EQUAL(ct_pp_parse(b, k, &r), CT_EAGAIN);
    uint8_t a6[36] = {0x20, 0x01, 0x0d, 0xb8, [15] = 5, [16] = 0x20, [17] = 0x01, [32] = 0, [33] = 80};
    n = v2(b, 1, 0x21, a6, sizeof(a6));
    CU_ASSERT_EQUAL(ct_pp_parse(b, n, &r), CT_OK);
    CU_ASSERT_STRING_EQUAL(ip(&r.src), "2001:db8::5");
    CU_ASSERT_EQUAL(r.src.port, 80);
    /* an IPv4-mapped source is the IPv4 address */
    uint8_t m6[36] = {[10] = 0xff, [11] = 0xff, [12] = 10, [13] = 1, [14] = 2, [15] = 3};
    n = v2(b, 1, 0x21, m6, sizeof(m6));
    CU_ASSERT_EQUAL(ct_pp_parse(b, n, &r), CT_OK);
    CU_ASSERT_EQUAL(r.src.family, AF_INET);
    CU_ASSERT_STRING_EQUAL(ip(&r.src), "10.1.2.3");
    n = v2(b, 0, 0x00, NULL, 0); /* LOCAL: the balancer's health check */
    CU_ASSERT_EQUAL(ct_pp_parse(b, n, &r), CT_OK);
    CU_ASSERT_TRUE(r.local);
    n = v2(b, 1, 0x11, a4, 8); /* too short for its family */
    CU_ASSERT_EQUAL(ct_pp_parse(b, n, &r), CT_EPROTO);
    n = v2(b, 1, 0x11, a4, sizeof(a4));
    b[12] = 0x31; /* version 3 */
    CU_ASSERT_EQUAL(ct_pp_parse(b, n, &r), CT_EPROTO);
    b[12] = 0x22; /* command 2 */
    CU_ASSERT_EQUAL(ct_pp_parse(b, n, &r), CT_EPROTO);
    b[12] = 0x21;
    b[14] = 0x10; /* 4 KiB of TLVs: past what is accepted */
    CU_ASSERT_EQUAL(ct_pp_parse(b, n, &r), CT_EPROTO);
}

static struct ct_conf_cidr cidr(const char *s)
{
    struct ct_conf_cidr c = {0};
    char ipb[64];
    const char *slash = strchr(s, '/');
    snprintf(ipb, sizeof(ipb), "%.*s", (int)(slash - s), s);
    c.family = strchr(ipb, ':') ? AF_INET6 : AF_INET;
    inet_pton(c.family, ipb, c.addr);
    c.prefix_len = (unsigned)atoi(slash + 1);
    return c;
}

static void test_forwarded_fields(void)
{
    struct ct_conf_cidr trusted[] = {cidr("10.0.0.0/8"), cidr("::1/128")};
    struct ct_realip_addr peer, out;
    CU_ASSERT_TRUE(ct_realip_parse(CT_STR("10.0.0.5"), &peer));
    /* two trusted hops, then the client */
    struct ct_str xff[] = {CT_STR("203.0.113.9, 10.1.1.1"), CT_STR("10.2.2.2")};
    CU_ASSERT_TRUE(ct_realip_from_fields(trusted, 2, &peer, xff, 2, false, &out));
    CU_ASSERT_STRING_EQUAL(ip(&out), "203.0.113.9");
    /* a client-supplied value left of an untrusted hop is not believed */
    struct ct_str spoof[] = {CT_STR("1.2.3.4, 198.51.100.7, 10.1.1.1")};
    ct_realip_from_fields(trusted, 2, &peer, spoof, 1, false, &out);
    CU_ASSERT_STRING_EQUAL(ip(&out), "198.51.100.7");
    /* from an untrusted peer nothing is read */
    struct ct_realip_addr stranger;
    ct_realip_parse(CT_STR("192.0.2.1"), &stranger);
    CU_ASSERT_FALSE(ct_realip_from_fields(trusted, 2, &stranger, xff, 2, false, &out));
    CU_ASSERT_STRING_EQUAL(ip(&out), "192.0.2.1");
    /* garbage stops the walk at the last good address */
    struct ct_str junk[] = {CT_STR("203.0.113.9, unknown")};
    ct_realip_from_fields(trusted, 2, &peer, junk, 1, false, &out);
    CU_ASSERT_STRING_EQUAL(ip(&out), "10.0.0.5");
    /* Forwarded, RFC 7239 §4 and §6 (quoted IPv6 with a port) */
    struct ct_str fwd[] = {CT_STR("for=\"[2001:db8:cafe::17]:4711\";proto=https, for=10.3.3.3")};
    CU_ASSERT_TRUE(ct_realip_from_fields(trusted, 2, &peer, fwd, 1, true, &out));
    CU_ASSERT_STRING_EQUAL(ip(&out), "2001:db8:cafe::17");
    CU_ASSERT_EQUAL(out.port, 4711);
    struct ct_str fwd2[] = {CT_STR("proto=http;For=192.0.2.60;by=203.0.113.43")};
    ct_realip_from_fields(trusted, 2, &peer, fwd2, 1, true, &out);
    CU_ASSERT_STRING_EQUAL(ip(&out), "192.0.2.60");
    /* address forms */
    CU_ASSERT_TRUE(ct_realip_parse(CT_STR("192.0.2.1:8080"), &out));
    CU_ASSERT_EQUAL(out.port, 8080);
    CU_ASSERT_TRUE(ct_realip_parse(CT_STR(" ::ffff:192.0.2.1 "), &out));
    CU_ASSERT_EQUAL(out.family, AF_INET);
    CU_ASSERT_FALSE(ct_realip_parse(CT_STR("[::1"), &out));
    CU_ASSERT_FALSE(ct_realip_parse(CT_STR("example.com"), &out));
    CU_ASSERT_FALSE(ct_realip_parse(CT_STR("192.0.2.1:99999"), &out));
}

void ct_test_register(void)
{
    CT_SUITE("real client address", {"PROXY protocol v1", test_v1}, {"PROXY protocol v2", test_v2},
             {"X-Forwarded-For and Forwarded behind trusted proxies", test_forwarded_fields});
}
