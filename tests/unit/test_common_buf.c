/* tests/unit/test_common_buf.c: the growable buffer and the JSON escaper. */
#include "common/buf.h"
#include "tests/unit/ct_test.h"

#define BUF_EQ(b, lit)                                                         \
    do {                                                                       \
        CU_ASSERT_EQUAL_FATAL((b).len, sizeof(lit) - 1);                       \
        CU_ASSERT_EQUAL(memcmp((b).p, (lit), (b).len), 0);                     \
        CU_ASSERT_EQUAL((b).p[(b).len], '\0');                                 \
    } while (0)

static void test_put_grow(void)
{
    struct ct_buf b = {0};
    CT_BUF_LIT(&b, "");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b.p); /* even an empty put gives a C string */
    BUF_EQ(b, "");
    /* Past several doublings: contents survive every reallocation. */
    for (unsigned i = 0; i < 5000; i++)
        ct_buf_put_byte(&b, (char)('a' + i % 26));
    CU_ASSERT_EQUAL_FATAL(b.len, 5000);
    CU_ASSERT_TRUE(b.cap > b.len);
    for (unsigned i = 0; i < 5000; i++)
        if (b.p[i] != (char)('a' + i % 26)) {
            CU_FAIL("byte lost in growth");
            break;
        }
    CU_ASSERT_EQUAL(b.p[5000], '\0');
    /* Reset keeps the memory; the next put starts at 0. */
    char *mem = b.p;
    size_t cap = b.cap;
    ct_buf_reset(&b);
    ct_buf_put_str(&b, CT_STR("x\0y"));
    CU_ASSERT_PTR_EQUAL(b.p, mem);
    CU_ASSERT_EQUAL(b.cap, cap);
    BUF_EQ(b, "x\0y");
    ct_buf_free(&b);
    CU_ASSERT_PTR_NULL(b.p);
    CU_ASSERT_EQUAL(b.len + b.cap, 0);
    /* Reserve exactly to the edge: the NUL still has its byte. */
    ct_buf_reserve(&b, 256);
    CU_ASSERT_TRUE(b.cap >= 257);
    for (unsigned i = 0; i < 256; i++)
        ct_buf_put_byte(&b, 'z');
    CU_ASSERT_EQUAL(b.p[256], '\0');
    ct_buf_free(&b);
}

static void test_numbers_printf(void)
{
    struct ct_buf b = {0};
    ct_buf_put_u64(&b, 0);
    ct_buf_put_u64(&b, UINT64_MAX);
    BUF_EQ(b, "018446744073709551615");
    ct_buf_reset(&b);
    ct_buf_printf(&b, "%s=%d", "n", 42);
    BUF_EQ(b, "n=42");
    /* Longer than the first pass's room: the second pass writes it whole. */
    char big[3000];
    memset(big, 'q', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ct_buf_printf(&b, "[%s]", big);
    CU_ASSERT_EQUAL_FATAL(b.len, 4 + 2 + sizeof(big) - 1);
    CU_ASSERT_EQUAL(b.p[4], '[');
    CU_ASSERT_EQUAL(b.p[5 + sizeof(big) - 1], ']');
    CU_ASSERT_EQUAL(b.p[b.len], '\0');
    ct_buf_free(&b);
}

/* The two modes on the same input: quote, backslash, short escapes,
 * control, DEL, valid UTF-8 (é, €), invalid bytes (a lone 0xff, a cut
 * sequence, an encoded surrogate). */
static const char json_in[] = "a\"b\\c\n\r\t\x01\x7f\xc3\xa9\xe2\x82\xac\xff\xc3(\xed\xa0\x80";

static void test_json_utf8(void)
{
    struct ct_buf b = {0};
    ct_buf_json_escape(&b, ct_str_make(json_in, sizeof(json_in) - 1), CT_JSON_UTF8);
    BUF_EQ(b, "a\\\"b\\\\c\\n\\r\\t\\u0001\\u007f\xc3\xa9\xe2\x82\xac\\u00ff\\u00c3("
              "\\u00ed\\u00a0\\u0080");
    ct_buf_reset(&b);
    /* A sequence cut by the end of the view is not copied half. */
    ct_buf_json_str(&b, ct_str_make("\xe2\x82", 2), CT_JSON_UTF8);
    BUF_EQ(b, "\"\\u00e2\\u0082\"");
    ct_buf_reset(&b);
    /* Overlong and past U+10FFFF */
    ct_buf_json_escape(&b, CT_STR("\xc0\xaf\xf4\x90\x80\x80\xf0\x9f\x98\x80"), CT_JSON_UTF8);
    BUF_EQ(b, "\\u00c0\\u00af\\u00f4\\u0090\\u0080\\u0080\xf0\x9f\x98\x80");
    ct_buf_free(&b);
}

static void test_json_bytes(void)
{
    struct ct_buf b = {0};
    ct_buf_json_str(&b, ct_str_make(json_in, sizeof(json_in) - 1), CT_JSON_BYTES);
    BUF_EQ(b, "\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u007f\\u00c3\\u00a9\\u00e2\\u0082\\u00ac\\u00ff"
              "\\u00c3(\\u00ed\\u00a0\\u0080\"");
    ct_buf_reset(&b);
    ct_buf_json_str(&b, CT_STR_NULL, CT_JSON_BYTES);
    BUF_EQ(b, "\"\"");
    /* Worst case, all escaped, after other contents: the reservation holds. */
    char all[256];
    for (unsigned i = 0; i < 256; i++)
        all[i] = (char)(i < 128 ? i % 32 : i);
    ct_buf_json_escape(&b, ct_str_make(all, sizeof(all)), CT_JSON_BYTES);
    CU_ASSERT_EQUAL(b.len, 2 + 256 * 6 - 3 * 4 * 4); /* \n \r \t short: 4 of each */
    CU_ASSERT_EQUAL(b.p[b.len], '\0');
    ct_buf_free(&b);
}

void ct_test_register(void)
{
    CT_SUITE("common buf", {"put, growth, reset, NUL", test_put_grow},
             {"numbers and printf", test_numbers_printf},
             {"JSON: UTF-8 kept, invalid bytes escaped", test_json_utf8},
             {"JSON: every byte recoverable", test_json_bytes});
}
