/* tests/unit/test_http_status.c: reason phrases and the once-a-second Date. */
#include "http/http.h"
#include "tests/unit/ct_test.h"

static void test_reason(void)
{
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(200), "OK");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(101), "Switching Protocols");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(206), "Partial Content");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(304), "Not Modified");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(413), "Content Too Large"); /* RFC 9110's */
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(416), "Range Not Satisfiable");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(418), "I'm a teapot");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(431), "Request Header Fields Too Large");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(504), "Gateway Timeout");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(299), "Unknown");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(0), "Unknown");
    CU_ASSERT_STRING_EQUAL(ct_http_status_reason(1000), "Unknown");
}

static void test_date_cached(void)
{
    struct ct_http_date_cache dc = {0};
    /* A zeroed cache formats even for second 0. */
    CU_ASSERT_STRING_EQUAL(ct_http_date_cached(&dc, 0), "Thu, 01 Jan 1970 00:00:00 GMT");
    const char *a = ct_http_date_cached(&dc, 784111777);
    CU_ASSERT_STRING_EQUAL(a, "Sun, 06 Nov 1994 08:49:37 GMT"); /* RFC 9110 §5.6.7 */
    /* Same second: the same text, not reformatted (poke it to see). */
    dc.text[0] = 'X';
    CU_ASSERT_EQUAL(ct_http_date_cached(&dc, 784111777)[0], 'X');
    /* Next second: formatted again. */
    CU_ASSERT_STRING_EQUAL(ct_http_date_cached(&dc, 784111778), "Sun, 06 Nov 1994 08:49:38 GMT");
    /* Time going back (a clock step) is just another second. */
    CU_ASSERT_STRING_EQUAL(ct_http_date_cached(&dc, 784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
}

void ct_test_register(void)
{
    CT_SUITE("http status", {"reason phrases", test_reason},
             {"Date once per second", test_date_cached});
}
