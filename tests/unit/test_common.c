/* tests/unit/test_common.c: string views, integer parsing, error names. */
#include "common/common.h"
#include "tests/unit/ct_test.h"

static void test_str_eq_ci(void)
{
    CU_ASSERT_TRUE(ct_str_eq_ci(CT_STR("Content-Length"), CT_STR("content-length")));
    CU_ASSERT_FALSE(ct_str_eq_ci(CT_STR("Content-Length"), CT_STR("content-lengt")));
    CU_ASSERT_FALSE(ct_str_eq_ci(CT_STR("a["), CT_STR("A{")));
}

static void test_trim_ows(void)
{
    struct ct_str s = ct_str_trim_ows(CT_STR(" \t gzip \t"));
    CU_ASSERT_TRUE(ct_str_eq(s, CT_STR("gzip")));
    s = ct_str_trim_ows(CT_STR("  "));
    CU_ASSERT_EQUAL(s.len, 0);
}

static void test_to_u64(void)
{
    uint64_t v = 0;
    CU_ASSERT_EQUAL(ct_str_to_u64(CT_STR("12345"), UINT64_MAX, &v), CT_OK);
    CU_ASSERT_EQUAL(v, 12345);
    CU_ASSERT_EQUAL(ct_str_to_u64(CT_STR("18446744073709551615"), UINT64_MAX, &v), CT_OK);
    CU_ASSERT_EQUAL(v, UINT64_MAX);
    CU_ASSERT_EQUAL(ct_str_to_u64(CT_STR("18446744073709551616"), UINT64_MAX, &v), CT_ELIMIT);
    CU_ASSERT_EQUAL(ct_str_to_u64(CT_STR("101"), 100, &v), CT_ELIMIT);
    CU_ASSERT_EQUAL(ct_str_to_u64(CT_STR("7"), 5, &v), CT_ELIMIT);
    CU_ASSERT_EQUAL(ct_str_to_u64(CT_STR(""), 100, &v), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_str_to_u64(CT_STR("-1"), 100, &v), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_str_to_u64(CT_STR("1 "), 100, &v), CT_EPROTO);
}

static void test_strerror(void)
{
    CU_ASSERT_STRING_EQUAL(ct_strerror(CT_ETIMEDOUT), "timed out");
    CU_ASSERT_STRING_EQUAL(ct_strerror(12345), "unknown error");
}

void ct_test_register(void)
{
    CT_SUITE("common", {"ASCII case-insensitive compare", test_str_eq_ci},
             {"OWS trimming", test_trim_ows}, {"decimal parsing with limits", test_to_u64},
             {"error names", test_strerror});
}
