/* tests/unit/test_common_sockaddr.c: socket addresses as text. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/sockaddr.h"
#include "tests/unit/ct_test.h"

static struct sockaddr_in v4(const char *ip, unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    CU_ASSERT_EQUAL(inet_pton(AF_INET, ip, &a.sin_addr), 1);
    return a;
}

static struct sockaddr_in6 v6(const char *ip, unsigned port)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    CU_ASSERT_EQUAL(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
    return a;
}

static void test_format(void)
{
    char out[CT_SOCKADDR_STRLEN];
    struct ct_str ip;
    struct sockaddr_in a4 = v4("192.0.2.1", 8080);
    CU_ASSERT_EQUAL(ct_sockaddr_format((struct sockaddr *)&a4, out, sizeof(out), &ip), 14);
    CU_ASSERT_STRING_EQUAL(out, "192.0.2.1:8080");
    CU_ASSERT_TRUE(ct_str_eq(ip, CT_STR("192.0.2.1")));
    CU_ASSERT_PTR_EQUAL(ip.p, out);

    struct sockaddr_in6 a6 = v6("::1", 80);
    CU_ASSERT_EQUAL(ct_sockaddr_format((struct sockaddr *)&a6, out, sizeof(out), &ip), 8);
    CU_ASSERT_STRING_EQUAL(out, "[::1]:80");
    CU_ASSERT_TRUE(ct_str_eq(ip, CT_STR("::1")));
    CU_ASSERT_PTR_EQUAL(ip.p, out + 1);

    /* The longest text inet_ntop writes fits CT_SOCKADDR_STRLEN. */
    a6 = v6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 65535);
    size_t n = ct_sockaddr_format((struct sockaddr *)&a6, out, sizeof(out), &ip);
    CU_ASSERT_STRING_EQUAL(out, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
    CU_ASSERT_EQUAL(n, strlen(out));
    CU_ASSERT_EQUAL(ip.len, 39);
    /* A v4-mapped address stays in its v6 spelling, bracketed. */
    a6 = v6("::ffff:192.0.2.1", 1);
    ct_sockaddr_format((struct sockaddr *)&a6, out, sizeof(out), &ip);
    CU_ASSERT_STRING_EQUAL(out, "[::ffff:192.0.2.1]:1");

    /* Not an IP socket. */
    struct sockaddr un = {.sa_family = AF_UNIX};
    CU_ASSERT_EQUAL(ct_sockaddr_format(&un, out, sizeof(out), &ip), 1);
    CU_ASSERT_STRING_EQUAL(out, "?");
    CU_ASSERT_TRUE(ct_str_eq(ip, CT_STR("?")));
}

static void test_ip_only_and_short(void)
{
    char out[CT_SOCKADDR_STRLEN];
    struct sockaddr_in6 a6 = v6("2001:db8::1", 443);
    CU_ASSERT_EQUAL(ct_sockaddr_ip((struct sockaddr *)&a6, out, sizeof(out)), 11);
    CU_ASSERT_STRING_EQUAL(out, "2001:db8::1");
    struct sockaddr_in a4 = v4("127.0.0.1", 1);
    CU_ASSERT_EQUAL(ct_sockaddr_ip((struct sockaddr *)&a4, out, sizeof(out)), 9);
    CU_ASSERT_STRING_EQUAL(out, "127.0.0.1");
    /* A short buffer: cut, terminated, the view inside what was written. */
    char small[6];
    struct ct_str ip;
    CU_ASSERT_EQUAL(ct_sockaddr_format((struct sockaddr *)&a6, small, sizeof(small), &ip), 5);
    CU_ASSERT_STRING_EQUAL(small, "[2001");
    CU_ASSERT_TRUE(ct_str_eq(ip, CT_STR("2001")));
    CU_ASSERT_EQUAL(ct_sockaddr_ip((struct sockaddr *)&a4, small, sizeof(small)), 5);
    CU_ASSERT_STRING_EQUAL(small, "127.0");
}

void ct_test_register(void)
{
    CT_SUITE("common sockaddr", {"ip:port, [v6]:port, unknown", test_format},
             {"ip alone, short buffers", test_ip_only_and_short});
}
