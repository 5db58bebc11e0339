/* tests/unit/test_common.c: string views, integer parsing, error names. */
#include "common/common.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include "tests/unit/ct_test.h"

static void test_path_dir(void)
{
    const char *cases[][2] = {{"/a/b/c", "/a/b"}, {"/c", "/"}, {"c", "."}, {"a/c", "a"}};
    for (size_t i = 0; i < CT_ARRAY_LEN(cases); i++) {
        char *d = ct_path_dir(cases[i][0]);
        CU_ASSERT_STRING_EQUAL(d, cases[i][1]);
        free(d);
    }
}

static void test_str_eq_ci(void)
{
    CU_ASSERT_TRUE(ct_str_eq_ci(CT_STR("Content-Length"), CT_STR("content-length")));
    CU_ASSERT_FALSE(ct_str_eq_ci(CT_STR("Content-Length"), CT_STR("content-lengt")));
    CU_ASSERT_FALSE(ct_str_eq_ci(CT_STR("a["), CT_STR("A{")));
}

/* The word-at-a-time compare against the byte rule, for every pair of
 * bytes at every place of a word and of each tail length. */
static void test_str_eq_ci_every_byte(void)
{
    char a[16], b[16];
    for (size_t len = 1; len <= sizeof(a); len++)
        for (size_t at = 0; at < len; at++)
            for (int x = 0; x < 256; x++)
                for (int y = 0; y < 256; y++) {
                    memset(a, 'k', sizeof(a));
                    memset(b, 'K', sizeof(b));
                    a[at] = (char)x;
                    b[at] = (char)y;
                    bool want = ct_ascii_lower((char)x) == ct_ascii_lower((char)y);
                    if (ct_str_eq_ci(ct_str_make(a, len), ct_str_make(b, len)) != want) {
                        fprintf(stderr, "\nlen %zu at %zu: 0x%02x 0x%02x\n", len, at, x, y);
                        CU_FAIL_FATAL("eq_ci differs from the byte rule");
                    }
                }
}

/* Bytes past the length never count (the tail's loads stop at it). */
static void test_load_tail(void)
{
    const char s[] = "ABCDEFGH";
    CU_ASSERT_EQUAL(ct_load_tail(s, 1), 0x41u);
    CU_ASSERT_EQUAL(ct_load_tail(s, 3), 0x434241u);
    CU_ASSERT_EQUAL(ct_load_tail(s, 5), 0x4544434241ull);
    CU_ASSERT_EQUAL(ct_load_tail(s, 7), 0x47464544434241ull);
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

/* Client faults are rate-limited: CT_LOG_LIMIT_PER_S lines a second, the
 * rest counted and reported by the next line that passes. */
static void test_log_limit(void)
{
    struct ct_log_limit l = {0};
    unsigned dropped = 99, passed = 0;
    for (int i = 0; i < 100; i++)
        passed += ct_log_limit_pass(&l, 1000, &dropped);
    CU_ASSERT_EQUAL(passed, CT_LOG_LIMIT_PER_S);
    CU_ASSERT_EQUAL(dropped, 0);
    CU_ASSERT_TRUE(ct_log_limit_pass(&l, 1001, &dropped)); /* the next second */
    CU_ASSERT_EQUAL(dropped, 100 - CT_LOG_LIMIT_PER_S);
    CU_ASSERT_TRUE(ct_log_limit_pass(&l, 1001, &dropped));
    CU_ASSERT_EQUAL(dropped, 0); /* reported once */
}

void ct_test_register(void)
{
    CT_SUITE("common", {"ASCII case-insensitive compare", test_str_eq_ci},
             {"the directory of a path", test_path_dir},
             {"case-insensitive compare, every byte pair", test_str_eq_ci_every_byte},
             {"tail loads", test_load_tail},
             {"OWS trimming", test_trim_ows}, {"decimal parsing with limits", test_to_u64},
             {"error names", test_strerror},
             {"log lines of client faults rate-limited", test_log_limit});
}
