/* tests/unit/test_cache_key.c: XXH64 reference vectors and key building. */
#include <stdio.h>

#include "cache/cache.h"
#include "tests/unit/ct_test.h"

static void test_xxh64_vectors(void)
{
    /* The reference values of the xxHash specification (seed 0 unless said);
     * the last string is long enough for the 32-byte stripe loop. */
    CU_ASSERT_EQUAL(ct_cache_hash64("", 0, 0), 0xEF46DB3751D8E999ULL);
    CU_ASSERT_EQUAL(ct_cache_hash64("", 0, 1), 0xD5AFBA1336A3BE4BULL);
    CU_ASSERT_EQUAL(ct_cache_hash64("a", 1, 0), 0xD24EC4F1A98C6E5BULL);
    CU_ASSERT_EQUAL(ct_cache_hash64("abc", 3, 0), 0x44BC2CF5AD770999ULL);
    CU_ASSERT_EQUAL(ct_cache_hash64("asdf", 4, 0), 0x415872F599CEA71EULL);
    const char *t = "Nobody inspects the spammish repetition";
    CU_ASSERT_EQUAL(ct_cache_hash64(t, strlen(t), 0), 0xFBCEA83C8A378BF1ULL);
}

static struct ct_cache_key_opts opts_keep = {.query = CT_CACHE_QUERY_KEEP, .header_name = {NULL, 0}};

static int build(const struct ct_cache_key_opts *o, const char *host, const char *target, char *buf,
                 size_t cap, struct ct_cache_key *k)
{
    struct ct_cache_key_in in = {
        CT_CACHE_MCLASS_GET, ct_str_c(host), 80, ct_str_c(target), {NULL, 0}, {NULL, 0}};
    return ct_cache_key_build(o, &in, buf, cap, k);
}

static bool same_key(const struct ct_cache_key_opts *o, const char *h1, const char *t1,
                     const char *h2, const char *t2)
{
    char b1[256], b2[256];
    struct ct_cache_key k1, k2;
    CU_ASSERT_EQUAL_FATAL(build(o, h1, t1, b1, sizeof(b1), &k1), CT_OK);
    CU_ASSERT_EQUAL_FATAL(build(o, h2, t2, b2, sizeof(b2), &k2), CT_OK);
    bool eq = ct_str_eq(k1.bytes, k2.bytes);
    CU_ASSERT_EQUAL(eq, k1.hash == k2.hash); /* equal bytes, equal hash */
    return eq;
}

static void test_key_layout(void)
{
    char buf[128];
    struct ct_cache_key k;
    CU_ASSERT_EQUAL(build(&opts_keep, "Example.COM", "/a?b=1", buf, sizeof(buf), &k), CT_OK);
    CU_ASSERT_EQUAL(k.bytes.len, 2 + 11 + 1 + 6);
    CU_ASSERT_EQUAL(memcmp(k.bytes.p, "G\0example.com\0/a?b=1", k.bytes.len), 0);
    CU_ASSERT_EQUAL(k.hash, ct_cache_hash64(k.bytes.p, k.bytes.len, 0));
}

static void test_key_host(void)
{
    CU_ASSERT_TRUE(same_key(&opts_keep, "EXAMPLE.com", "/", "example.COM", "/"));
    CU_ASSERT_TRUE(same_key(&opts_keep, "example.com:80", "/", "example.com", "/"));
    CU_ASSERT_TRUE(same_key(&opts_keep, "example.com:", "/", "example.com", "/"));
    CU_ASSERT_FALSE(same_key(&opts_keep, "example.com:8080", "/", "example.com", "/"));
    CU_ASSERT_FALSE(same_key(&opts_keep, "example.org", "/", "example.com", "/"));
    /* the path is case-sensitive (RFC 3986 §6.2.2.1) */
    CU_ASSERT_FALSE(same_key(&opts_keep, "a", "/A", "a", "/a"));
}

/* The default port is matched as ":<digits>" exactly at the end of the host
 * (formatted without snprintf since the bench showed its cost). */
static struct ct_str host_part(unsigned default_port, const char *host, char *buf, size_t cap)
{
    struct ct_cache_key k;
    struct ct_cache_key_in in = {
        CT_CACHE_MCLASS_GET, ct_str_c(host), default_port, CT_STR("/"), {NULL, 0}, {NULL, 0}};
    if (ct_cache_key_build(&opts_keep, &in, buf, cap, &k) != CT_OK)
        return ct_str_make("(overflow)", 10);
    return ct_str_make(k.bytes.p + 2, k.bytes.len - 2 - 2); /* between the NULs */
}

static void test_key_default_port(void)
{
    char b[64];
    CU_ASSERT_TRUE(ct_str_eq(host_part(443, "h.example:443", b, sizeof(b)), CT_STR("h.example")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(443, "h:4430", b, sizeof(b)), CT_STR("h:4430")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(443, "h:1443", b, sizeof(b)), CT_STR("h:1443")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(443, ":443", b, sizeof(b)), CT_STR(":443"))); /* no host left */
    CU_ASSERT_TRUE(ct_str_eq(host_part(8, "H:8", b, sizeof(b)), CT_STR("h")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(0, "h:0", b, sizeof(b)), CT_STR("h:0"))); /* 0: none */
    CU_ASSERT_TRUE(ct_str_eq(host_part(4294967295u, "h:4294967295", b, sizeof(b)), CT_STR("h")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(65535, "h:65535", b, sizeof(b)), CT_STR("h")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(65535, "h:5535", b, sizeof(b)), CT_STR("h:5535")));
    /* a host that fills the buffer exactly up to the target's room, and one byte more */
    CU_ASSERT_TRUE(ct_str_eq(host_part(80, "ABCD", b, 2 + 4 + 1 + 1), CT_STR("abcd")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(80, "ABCDE", b, 2 + 4 + 1 + 1), CT_STR("(overflow)")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(80, "ABCDE", b, 2 + 4), CT_STR("(overflow)")));
}

/* The host is lower-cased a word at a time: every byte value, at every
 * position of a word and in the byte tail, must come out as the byte rule
 * says (only 'A'..'Z' change; bytes >= 0x80 and '@', '[', '`', '{' do not). */
static void test_key_host_lower_all_bytes(void)
{
    char host[300], want[300], b[320];
    for (size_t len = 1; len <= 19; len++) {
        for (unsigned v = 0; v < 256; v++) {
            for (size_t i = 0; i < len; i++) {
                host[i] = (char)((v + i * 37) & 0xff);
                want[i] = (char)((host[i] >= 'A' && host[i] <= 'Z') ? host[i] + 32 : host[i]);
            }
            host[len - 1] = 'x'; /* no port stripping in the way */
            want[len - 1] = 'x';
            struct ct_cache_key k;
            struct ct_cache_key_in in = {
                CT_CACHE_MCLASS_GET, ct_str_make(host, len), 80, CT_STR("/"), {NULL, 0}, {NULL, 0}};
            CU_ASSERT_EQUAL_FATAL(ct_cache_key_build(&opts_keep, &in, b, sizeof(b), &k), CT_OK);
            CU_ASSERT_EQUAL_FATAL(memcmp(k.bytes.p + 2, want, len), 0);
        }
    }
    /* hosts ending in a digit are still checked for the default port */
    CU_ASSERT_TRUE(ct_str_eq(host_part(80, "10.0.0.1", b, sizeof(b)), CT_STR("10.0.0.1")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(80, "10.0.0.1:80", b, sizeof(b)), CT_STR("10.0.0.1")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(80, "[::1]:80", b, sizeof(b)), CT_STR("[::1]")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(80, "[::1]", b, sizeof(b)), CT_STR("[::1]")));
    CU_ASSERT_TRUE(ct_str_eq(host_part(80, "Example.COM.", b, sizeof(b)), CT_STR("example.com.")));
}

static void test_key_query_modes(void)
{
    struct ct_cache_key_opts drop = {.query = CT_CACHE_QUERY_DROP, .header_name = {NULL, 0}};
    struct ct_cache_key_opts sort = {.query = CT_CACHE_QUERY_SORT, .header_name = {NULL, 0}};

    CU_ASSERT_FALSE(same_key(&opts_keep, "h", "/p?a=1&b=2", "h", "/p?b=2&a=1"));
    CU_ASSERT_TRUE(same_key(&drop, "h", "/p?a=1&b=2", "h", "/p"));
    CU_ASSERT_TRUE(same_key(&drop, "h", "/p?x", "h", "/p?y"));
    CU_ASSERT_FALSE(same_key(&drop, "h", "/p?x", "h", "/q?x"));
    CU_ASSERT_TRUE(same_key(&sort, "h", "/p?b=2&a=1&c", "h", "/p?a=1&b=2&c"));
    CU_ASSERT_TRUE(same_key(&sort, "h", "/p?b=2&&a=1", "h", "/p?a=1&b=2"));
    CU_ASSERT_TRUE(same_key(&sort, "h", "/p?", "h", "/p"));
    CU_ASSERT_FALSE(same_key(&sort, "h", "/p?a=1", "h", "/p?a=2"));
    /* a prefix sorts first: "a" < "a=1" < "ab" */
    char buf[64];
    struct ct_cache_key k;
    CU_ASSERT_EQUAL(build(&sort, "h", "/?ab&a=1&a", buf, sizeof(buf), &k), CT_OK);
    CU_ASSERT_EQUAL(memcmp(k.bytes.p, "G\0h\0/?a&a=1&ab", k.bytes.len), 0);
}

static void test_key_sort_many_params(void)
{
    /* Past CT_CACHE_KEY_MAX_SORT parameters the order is kept, not truncated. */
    struct ct_cache_key_opts sort = {.query = CT_CACHE_QUERY_SORT, .header_name = {NULL, 0}};
    char target[2048], buf[2100];
    size_t n = (size_t)snprintf(target, sizeof(target), "/p?");
    for (int i = CT_CACHE_KEY_MAX_SORT + 10; i > 0 && n < sizeof(target) - 8; i--)
        n += (size_t)snprintf(target + n, sizeof(target) - n, "%d&", i);
    struct ct_cache_key k;
    CU_ASSERT_EQUAL(build(&sort, "h", target, buf, sizeof(buf), &k), CT_OK);
    CU_ASSERT_EQUAL(k.bytes.len, 4 + n);
    CU_ASSERT_EQUAL(memcmp(k.bytes.p + 4, target, n), 0);
}

static void test_key_header_and_class(void)
{
    struct ct_cache_key_opts hdr = {.query = CT_CACHE_QUERY_KEEP, .header_name = CT_STR("X-Device")};
    char b1[64], b2[64], b3[64];
    struct ct_cache_key k1, k2, k3;
    struct ct_cache_key_in in = {CT_CACHE_MCLASS_GET, CT_STR("h"), 80, CT_STR("/"), CT_STR("m"), {NULL, 0}};
    CU_ASSERT_EQUAL(ct_cache_key_build(&hdr, &in, b1, sizeof(b1), &k1), CT_OK);
    in.header_value = CT_STR("");
    CU_ASSERT_EQUAL(ct_cache_key_build(&hdr, &in, b2, sizeof(b2), &k2), CT_OK);
    in.header_value = CT_STR_NULL;
    CU_ASSERT_EQUAL(ct_cache_key_build(&hdr, &in, b3, sizeof(b3), &k3), CT_OK);
    CU_ASSERT_FALSE(ct_str_eq(k1.bytes, k2.bytes));
    CU_ASSERT_FALSE(ct_str_eq(k2.bytes, k3.bytes)); /* empty differs from absent */
    CU_ASSERT_FALSE(ct_str_eq(k1.bytes, k3.bytes));
    in.mclass = CT_CACHE_MCLASS_OTHER;
    CU_ASSERT_EQUAL(ct_cache_key_build(&hdr, &in, b1, sizeof(b1), &k1), CT_OK);
    CU_ASSERT_FALSE(ct_str_eq(k1.bytes, k3.bytes));
}

/* A route's key_cookie: the cookie's value joins the key (absent and empty
 * differ), after a key_header's; the variants prefix is a prefix of every
 * such variant of the URL and of no other URL's key. */
static void test_key_cookie_and_variants(void)
{
    struct ct_cache_key_opts both = {.query = CT_CACHE_QUERY_KEEP,
                                     .header_name = CT_STR("X-Device"),
                                     .cookie_name = CT_STR("lang")};
    struct ct_cache_key_opts cookie = {.query = CT_CACHE_QUERY_KEEP, .cookie_name = CT_STR("lang")};
    char b[5][64], pb[64];
    struct ct_cache_key k[5];
    struct ct_cache_key_in in = {.mclass = CT_CACHE_MCLASS_GET, .host = CT_STR("h"),
                                 .default_port = 80, .target = CT_STR("/a")};
    CU_ASSERT_EQUAL(ct_cache_key_build(&cookie, &in, b[0], 64, &k[0]), CT_OK); /* no cookie */
    in.cookie_value = CT_STR("en");
    CU_ASSERT_EQUAL(ct_cache_key_build(&cookie, &in, b[1], 64, &k[1]), CT_OK);
    in.cookie_value = CT_STR("");
    CU_ASSERT_EQUAL(ct_cache_key_build(&cookie, &in, b[2], 64, &k[2]), CT_OK);
    in.cookie_value = CT_STR("en");
    in.header_value = CT_STR("m");
    CU_ASSERT_EQUAL(ct_cache_key_build(&both, &in, b[3], 64, &k[3]), CT_OK);
    CU_ASSERT_EQUAL(k[0].bytes.len, 6); /* <mclass> NUL "h" NUL "/a" */
    CU_ASSERT_EQUAL(k[1].bytes.len, 6 + 4);
    CU_ASSERT_EQUAL(memcmp(k[1].bytes.p + 6, "\0\x02" "en", 4), 0);
    CU_ASSERT_EQUAL(memcmp(k[3].bytes.p + 6, "\0\x01" "m\0\x02" "en", 7), 0);
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            CU_ASSERT_FALSE(ct_str_eq(k[i].bytes, k[j].bytes));
    struct ct_str prefix;
    CU_ASSERT_EQUAL(ct_cache_key_variants_prefix(&k[0], pb, sizeof(pb), &prefix), CT_OK);
    for (int i = 1; i < 4; i++)
        CU_ASSERT_TRUE(k[i].bytes.len > prefix.len &&
                       memcmp(k[i].bytes.p, prefix.p, prefix.len) == 0);
    in = (struct ct_cache_key_in){.mclass = CT_CACHE_MCLASS_GET, .host = CT_STR("h"),
                                  .default_port = 80, .target = CT_STR("/ab")};
    CU_ASSERT_EQUAL(ct_cache_key_build(&cookie, &in, b[4], 64, &k[4]), CT_OK);
    CU_ASSERT_FALSE(memcmp(k[4].bytes.p, prefix.p, prefix.len) == 0);
    /* a cookie without key_cookie keys nothing */
    in.cookie_value = CT_STR("en");
    CU_ASSERT_EQUAL(ct_cache_key_build(&opts_keep, &in, b[0], 64, &k[0]), CT_OK);
    CU_ASSERT_EQUAL(k[0].bytes.len, 7);
}

static void test_key_overflow_and_size(void)
{
    struct ct_cache_key_in in = {CT_CACHE_MCLASS_GET, CT_STR("example.com"), 80,
                                 CT_STR("/path?q=1"), CT_STR("v"), {NULL, 0}};
    struct ct_cache_key_opts hdr = {.query = CT_CACHE_QUERY_SORT, .header_name = CT_STR("X")};
    size_t need = ct_cache_key_size(&in);
    char buf[64];
    struct ct_cache_key k;
    CU_ASSERT_TRUE(need <= sizeof(buf));
    CU_ASSERT_EQUAL(ct_cache_key_build(&hdr, &in, buf, need, &k), CT_OK);
    CU_ASSERT_EQUAL(ct_cache_key_build(&hdr, &in, buf, k.bytes.len - 1, &k), CT_ELIMIT);
    CU_ASSERT_EQUAL(ct_cache_key_build(&hdr, &in, buf, 0, &k), CT_ELIMIT);
}

static void test_key_prefix(void)
{
    char kb[128], pb[128];
    struct ct_cache_key k;
    struct ct_str prefix;
    CU_ASSERT_EQUAL(build(&opts_keep, "Example.com:80", "/img/a.png?x", kb, sizeof(kb), &k), CT_OK);
    CU_ASSERT_EQUAL(
        ct_cache_key_prefix(CT_STR("EXAMPLE.COM"), 80, CT_STR("/img/"), pb, sizeof(pb), &prefix),
        CT_OK);
    CU_ASSERT_TRUE(prefix.len <= k.bytes.len);
    CU_ASSERT_EQUAL(memcmp(k.bytes.p, prefix.p, prefix.len), 0);
    CU_ASSERT_EQUAL(ct_cache_key_prefix(CT_STR("example.com"), 80, CT_STR("/img/"), pb, 3, &prefix),
                    CT_ELIMIT);
}

void ct_test_register(void)
{
    CT_SUITE("cache_key", {"XXH64 reference vectors", test_xxh64_vectors},
             {"key byte layout", test_key_layout}, {"host normalisation", test_key_host},
             {"default port exactly", test_key_default_port},
             {"host lower-cased word-wise, every byte", test_key_host_lower_all_bytes},
             {"query keep/drop/sort", test_key_query_modes},
             {"more params than sortable", test_key_sort_many_params},
             {"named header and method class", test_key_header_and_class},
             {"named cookie, and the prefix of a URL's variants", test_key_cookie_and_variants},
             {"buffer too small", test_key_overflow_and_size},
             {"purge prefix is a key prefix", test_key_prefix});
}
