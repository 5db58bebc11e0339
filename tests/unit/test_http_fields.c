/* tests/unit/test_http_fields.c: list tokens, HTTP dates and Cache-Control,
 * with the RFCs' own examples (RFC 9110 §5.6, RFC 9111 §5.2). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "http/http.h"
#include "tests/unit/ct_test.h"

/* ---- lists ------------------------------------------------------------ */

/* Join the elements of VALUE with '|' into OUT, for compact assertions. */
static const char *elems(const char *value, char *out, size_t cap)
{
    struct ct_str rest = ct_str_c(value), e;
    size_t n = 0;
    out[0] = '\0';
    while (ct_http_list_next(&rest, &e)) {
        if (n > 0 && n + 1 < cap)
            out[n++] = '|';
        for (size_t i = 0; i < e.len && n + 1 < cap; i++)
            out[n++] = e.p[i];
        out[n] = '\0';
    }
    return out;
}

/* The pairs of VALUE split at SEP as "name=value|..." ("name" alone when
 * it had no '='), into OUT. */
static const char *pairs(const char *value, char sep, char *out, size_t cap)
{
    struct ct_str rest = ct_str_c(value), name, val;
    size_t n = 0;
    out[0] = '\0';
    while (ct_http_pair_next(&rest, sep, &name, &val))
        n += (size_t)snprintf(out + n, cap - n, "%s%.*s=%.*s", n ? "|" : "", (int)name.len,
                              name.p, (int)val.len, val.p);
    return out;
}

static void test_pairs(void)
{
    char buf[128];
    CU_ASSERT_STRING_EQUAL(pairs("a=1; b=2;c=3", ';', buf, sizeof(buf)), "a=1|b=2|c=3");
    CU_ASSERT_STRING_EQUAL(pairs("  sid=x=y;  flag;e=", ';', buf, sizeof(buf)),
                           "sid=x=y|flag=|e=");
    CU_ASSERT_STRING_EQUAL(pairs("q=1&utm=2&", '&', buf, sizeof(buf)), "q=1|utm=2");
    CU_ASSERT_STRING_EQUAL(pairs("a=1; b=2", '&', buf, sizeof(buf)), "a=1; b=2");
    CU_ASSERT_STRING_EQUAL(pairs("", ';', buf, sizeof(buf)), "");
    CU_ASSERT_STRING_EQUAL(pairs("   ", ';', buf, sizeof(buf)), "");
}

static void test_list_rfc_examples(void)
{
    char buf[128];
    /* RFC 9110 §5.6.1.2: all valid, two or three elements */
    CU_ASSERT_STRING_EQUAL(elems("foo,bar", buf, sizeof buf), "foo|bar");
    CU_ASSERT_STRING_EQUAL(elems("foo ,bar,", buf, sizeof buf), "foo|bar");
    CU_ASSERT_STRING_EQUAL(elems("foo , ,bar,charlie", buf, sizeof buf), "foo|bar|charlie");
    /* ... and these have no element at all */
    CU_ASSERT_STRING_EQUAL(elems("", buf, sizeof buf), "");
    CU_ASSERT_STRING_EQUAL(elems(",", buf, sizeof buf), "");
    CU_ASSERT_STRING_EQUAL(elems(",   ,", buf, sizeof buf), "");
    CU_ASSERT_STRING_EQUAL(elems("\t a \t,\tb", buf, sizeof buf), "a|b");
}

static void test_list_quoted(void)
{
    char buf[128];
    CU_ASSERT_STRING_EQUAL(elems("no-cache=\"a, b\", max-age=1", buf, sizeof buf),
                           "no-cache=\"a, b\"|max-age=1");
    /* an escaped quote does not end the string */
    CU_ASSERT_STRING_EQUAL(elems("x=\"a\\\", b\", c", buf, sizeof buf), "x=\"a\\\", b\"|c");
    /* unterminated: kept whole rather than split at a meant-to-be-quoted comma */
    CU_ASSERT_STRING_EQUAL(elems("a, x=\"b, c", buf, sizeof buf), "a|x=\"b, c");
    CU_ASSERT_STRING_EQUAL(elems("W/\"x,y\", \"z\"", buf, sizeof buf), "W/\"x,y\"|\"z\"");
}

static void test_list_has(void)
{
    CU_ASSERT_TRUE(ct_http_list_has(CT_STR("gzip;q=1.0, br"), CT_STR("gzip")));
    CU_ASSERT_TRUE(ct_http_list_has(CT_STR("gzip;q=1.0, br"), CT_STR("BR")));
    CU_ASSERT_FALSE(ct_http_list_has(CT_STR("gzip;q=1.0, br"), CT_STR("gzi")));
    CU_ASSERT_TRUE(ct_http_list_has(CT_STR("keep-alive, Upgrade"), CT_STR("upgrade")));
    CU_ASSERT_TRUE(ct_http_list_has(CT_STR("max-age=5, no-cache"), CT_STR("max-age")));
    CU_ASSERT_FALSE(ct_http_list_has(CT_STR("x=\"close\""), CT_STR("close")));
    CU_ASSERT_FALSE(ct_http_list_has(CT_STR(""), CT_STR("close")));
    CU_ASSERT_FALSE(ct_http_list_has(CT_STR("close"), CT_STR("")));
}

static void test_token(void)
{
    CU_ASSERT_TRUE(ct_http_is_token(CT_STR("GET")));
    CU_ASSERT_TRUE(ct_http_is_token(CT_STR("!#$%&'*+-.^_`|~09azAZ")));
    CU_ASSERT_FALSE(ct_http_is_token(CT_STR("")));
    CU_ASSERT_FALSE(ct_http_is_token(CT_STR("a b")));
    CU_ASSERT_FALSE(ct_http_is_token(CT_STR("a:b")));
    CU_ASSERT_FALSE(ct_http_is_token(CT_STR("\"a\"")));
    CU_ASSERT_FALSE(ct_http_is_token(CT_STR("a,b")));
    CU_ASSERT_FALSE(ct_http_is_token(ct_str_make("a\0b", 3)));
    CU_ASSERT_FALSE(ct_http_is_token(CT_STR("caf\xc3\xa9")));
}

/* ---- dates ------------------------------------------------------------ */

#define T_1994 ((time_t)784111777)    /* Sun, 06 Nov 1994 08:49:37 GMT */
#define NOW_2026 ((time_t)1796000000) /* 2026-11-30 */

static int parse(const char *s, time_t *t)
{
    return ct_http_date_parse_at(ct_str_c(s), NOW_2026, t);
}

static void test_date_rfc_examples(void)
{
    time_t t = 0;
    /* RFC 9110 §5.6.7: the same instant in the three formats */
    CU_ASSERT_EQUAL(parse("Sun, 06 Nov 1994 08:49:37 GMT", &t), CT_OK);
    CU_ASSERT_EQUAL(t, T_1994);
    t = 0;
    CU_ASSERT_EQUAL(parse("Sunday, 06-Nov-94 08:49:37 GMT", &t), CT_OK);
    CU_ASSERT_EQUAL(t, T_1994);
    t = 0;
    CU_ASSERT_EQUAL(parse("Sun Nov  6 08:49:37 1994", &t), CT_OK);
    CU_ASSERT_EQUAL(t, T_1994);
    t = 0;
    CU_ASSERT_EQUAL(parse("Sun Nov 16 08:49:37 1994", &t), CT_OK);
    CU_ASSERT_EQUAL(t, T_1994 + 10 * 86400);
    /* and the wrapper that reads the clock agrees on the unambiguous ones */
    CU_ASSERT_EQUAL(ct_http_date_parse(CT_STR("Sun, 06 Nov 1994 08:49:37 GMT"), &t), CT_OK);
    CU_ASSERT_EQUAL(t, T_1994);
}

static void test_date_format(void)
{
    char out[CT_HTTP_DATE_LEN + 1];
    ct_http_date_format(T_1994, out);
    CU_ASSERT_STRING_EQUAL(out, "Sun, 06 Nov 1994 08:49:37 GMT");
    ct_http_date_format(0, out);
    CU_ASSERT_STRING_EQUAL(out, "Thu, 01 Jan 1970 00:00:00 GMT");
    ct_http_date_format(-1, out);
    CU_ASSERT_STRING_EQUAL(out, "Wed, 31 Dec 1969 23:59:59 GMT");
    ct_http_date_format((time_t)951782400, out); /* leap day of a /400 year */
    CU_ASSERT_STRING_EQUAL(out, "Tue, 29 Feb 2000 00:00:00 GMT");
    ct_http_date_format((time_t)253402300799LL, out);
    CU_ASSERT_STRING_EQUAL(out, "Fri, 31 Dec 9999 23:59:59 GMT");
    ct_http_date_format((time_t)253402300800LL * 2, out); /* clamped, still 29 bytes */
    CU_ASSERT_STRING_EQUAL(out, "Fri, 31 Dec 9999 23:59:59 GMT");
}

/* Against libc's gmtime_r over 400+ years in irregular steps, both ways. */
static void test_date_roundtrip(void)
{
    char out[CT_HTTP_DATE_LEN + 1], ref[64];
    int bad = 0;
    for (int64_t v = -2208988800LL; v < 10000000000LL; v += 86400 * 13 + 3607) {
        time_t t = (time_t)v, back = 0;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(ref, sizeof ref, "%a, %d %b %Y %H:%M:%S GMT", &tm); /* C locale */
        ct_http_date_format(t, out);
        if (strcmp(out, ref) != 0 || parse(out, &back) != CT_OK || back != t)
            bad++;
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_date_rfc850_year(void)
{
    time_t t = 0;
    struct tm tm;
    /* now = 2026-11-30: years up to 2076-11-30 are "not more than 50 years
     * in the future"; later ones are the previous century */
    CU_ASSERT_EQUAL(parse("Friday, 06-Nov-76 08:49:37 GMT", &t), CT_OK);
    gmtime_r(&t, &tm);
    CU_ASSERT_EQUAL(tm.tm_year + 1900, 2076);
    CU_ASSERT_EQUAL(parse("Thursday, 31-Dec-76 08:49:37 GMT", &t), CT_OK);
    gmtime_r(&t, &tm);
    CU_ASSERT_EQUAL(tm.tm_year + 1900, 1976);
    CU_ASSERT_EQUAL(parse("Saturday, 01-Jan-77 00:00:00 GMT", &t), CT_OK);
    gmtime_r(&t, &tm);
    CU_ASSERT_EQUAL(tm.tm_year + 1900, 1977);
    CU_ASSERT_EQUAL(parse("Saturday, 01-Jan-25 00:00:00 GMT", &t), CT_OK);
    gmtime_r(&t, &tm);
    CU_ASSERT_EQUAL(tm.tm_year + 1900, 2025);
    /* the same digits seen from 1994 */
    CU_ASSERT_EQUAL(ct_http_date_parse_at(CT_STR("Sunday, 06-Nov-44 08:49:37 GMT"), T_1994, &t),
                    CT_OK);
    gmtime_r(&t, &tm);
    CU_ASSERT_EQUAL(tm.tm_year + 1900, 2044);
    CU_ASSERT_EQUAL(ct_http_date_parse_at(CT_STR("Sunday, 06-Nov-45 08:49:37 GMT"), T_1994, &t),
                    CT_OK);
    gmtime_r(&t, &tm);
    CU_ASSERT_EQUAL(tm.tm_year + 1900, 1945);
}

static void test_date_rejects(void)
{
    static const char *const bad[] = {
        "",
        "Sun",
        "Sun, 06 Nov 1994 08:49:37 gmt", /* GMT is case-sensitive */
        "sun, 06 Nov 1994 08:49:37 GMT", /* so are the names */
        "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sun, 6 Nov 1994 08:49:37 GMT", /* day is 2DIGIT */
        "Sun,  06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
        " Sun, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT ",
        "Sun, 06 Nov 1994 08:49:37 GMTX",
        "Sun, 06 Nov 1994 24:00:00 GMT", /* out of range fields */
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sun, 29 Feb 2023 08:49:37 GMT", /* not a leap year */
        "Sun, 29 Feb 1900 08:49:37 GMT", /* /100 but not /400 */
        "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37",
        "Sunday, 06-Nov-1994 08:49:37 GMT", /* RFC 850 has a two-digit year */
        "Sun, 06-Nov-94 08:49:37 GMT",
        "Sunday, 06 Nov 94 08:49:37 GMT",
        "Sunday, 32-Dec-94 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994", /* asctime pads the day with SP */
        "Sun Nov  6 08:49:37 94",
        "Sun Nov  6 08:49:37 1994 GMT",
        "Sun Nov 31 08:49:37 1994",
        "1994-11-06T08:49:37Z",
        "784111777",
        "Sun, 06 Nov 1994 08:49:37 GMT\0",
    };
    for (size_t i = 0; i < CT_ARRAY_LEN(bad); i++) {
        time_t t = 12345;
        size_t len = strlen(bad[i]) + (i == CT_ARRAY_LEN(bad) - 1);
        int rc = ct_http_date_parse_at(ct_str_make(bad[i], len), NOW_2026, &t);
        if (rc != CT_EPROTO)
            fprintf(stderr, "accepted: '%s'\n", bad[i]);
        CU_ASSERT_EQUAL(rc, CT_EPROTO);
        CU_ASSERT_EQUAL(t, 12345); /* untouched on error */
    }
    time_t t;
    CU_ASSERT_EQUAL(ct_http_date_parse_at(CT_STR_NULL, NOW_2026, &t), CT_EPROTO);
}

static void test_date_edges(void)
{
    time_t t = 0;
    CU_ASSERT_EQUAL(parse("Thu, 29 Feb 2024 00:00:00 GMT", &t), CT_OK);
    CU_ASSERT_EQUAL(t, (time_t)1709164800);
    CU_ASSERT_EQUAL(parse("Tue, 29 Feb 2000 00:00:00 GMT", &t), CT_OK);
    /* the leap second the grammar allows reads as the next second */
    CU_ASSERT_EQUAL(parse("Sat, 31 Dec 2016 23:59:60 GMT", &t), CT_OK);
    CU_ASSERT_EQUAL(t, (time_t)1483228800);
    CU_ASSERT_EQUAL(parse("Thu, 01 Jan 1970 00:00:00 GMT", &t), CT_OK);
    CU_ASSERT_EQUAL(t, 0);
    CU_ASSERT_EQUAL(parse("Mon, 01 Jan 1900 00:00:00 GMT", &t), CT_OK);
    CU_ASSERT_EQUAL(t, (time_t)-2208988800LL);
    /* the day name is spelled right but wrong for the date: accepted */
    CU_ASSERT_EQUAL(parse("Mon, 06 Nov 1994 08:49:37 GMT", &t), CT_OK);
    CU_ASSERT_EQUAL(t, T_1994);
    CU_ASSERT_EQUAL(parse("Sun Nov 06 08:49:37 1994", &t), CT_OK);
    CU_ASSERT_EQUAL(t, T_1994);
}

/* ---- Cache-Control ---------------------------------------------------- */

static struct ct_cc cc_of(const char *v, int *rc)
{
    struct ct_cc cc;
    ct_cc_init(&cc);
    int r = ct_cc_parse(&cc, ct_str_c(v));
    if (rc)
        *rc = r;
    return cc;
}

static void test_cc_basic(void)
{
    int rc;
    struct ct_cc cc = cc_of("max-age=3600, public", &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_EQUAL(cc.max_age, 3600);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_PUBLIC);
    CU_ASSERT_EQUAL(cc.s_maxage, CT_CC_UNSET);
    CU_ASSERT_EQUAL(cc.min_fresh, CT_CC_UNSET);
    cc = cc_of("no-cache, no-store, must-revalidate, proxy-revalidate, no-transform, "
               "only-if-cached, must-understand, immutable, private",
               &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_NO_CACHE | CT_CC_NO_STORE | CT_CC_MUST_REVALIDATE |
                                  CT_CC_PROXY_REVALIDATE | CT_CC_NO_TRANSFORM |
                                  CT_CC_ONLY_IF_CACHED | CT_CC_MUST_UNDERSTAND | CT_CC_IMMUTABLE |
                                  CT_CC_PRIVATE);
    cc = cc_of("s-maxage=10, stale-while-revalidate=30, stale-if-error=600, min-fresh=5", &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_EQUAL(cc.s_maxage, 10);
    CU_ASSERT_EQUAL(cc.stale_while_revalidate, 30);
    CU_ASSERT_EQUAL(cc.stale_if_error, 600);
    CU_ASSERT_EQUAL(cc.min_fresh, 5);
    CU_ASSERT_EQUAL(cc.flags, 0);
    /* names are case-insensitive */
    cc = cc_of("Max-Age=5, NO-STORE, Private", &rc);
    CU_ASSERT_EQUAL(cc.max_age, 5);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_NO_STORE | CT_CC_PRIVATE);
    /* RFC 5861 example */
    cc = cc_of("max-age=600, stale-while-revalidate=30", &rc);
    CU_ASSERT_EQUAL(cc.max_age, 600);
    CU_ASSERT_EQUAL(cc.stale_while_revalidate, 30);
}

static void test_cc_max_stale(void)
{
    struct ct_cc cc = cc_of("max-stale", NULL);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_MAX_STALE_ANY);
    CU_ASSERT_EQUAL(cc.max_stale, CT_CC_UNSET);
    cc = cc_of("max-stale=30", NULL);
    CU_ASSERT_EQUAL(cc.flags, 0);
    CU_ASSERT_EQUAL(cc.max_stale, 30);
    cc = cc_of("max-stale=x", NULL);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_INVALID);
    CU_ASSERT_EQUAL(cc.max_stale, 0);
}

static void test_cc_invalid_values(void)
{
    int rc;
    /* quoted and fractional delta-seconds are invalid: stale (0) */
    struct ct_cc cc = cc_of("max-age=\"5\"", &rc);
    CU_ASSERT_EQUAL(rc, CT_EPROTO);
    CU_ASSERT_EQUAL(cc.max_age, 0);
    CU_ASSERT_TRUE(cc.flags & CT_CC_INVALID);
    cc = cc_of("max-age=1.5", &rc);
    CU_ASSERT_EQUAL(rc, CT_EPROTO);
    CU_ASSERT_EQUAL(cc.max_age, 0);
    CU_ASSERT_TRUE(cc.flags & CT_CC_INVALID);
    static const char *const bad[] = {"max-age=",   "max-age",      "max-age=-1",
                                      "max-age=+5", "max-age=5s",   "max-age = 5",
                                      "max-age =5", "max-age=0x10", "s-maxage=\"\""};
    for (size_t i = 0; i < CT_ARRAY_LEN(bad); i++) {
        cc = cc_of(bad[i], &rc);
        CU_ASSERT_EQUAL(rc, CT_EPROTO);
        CU_ASSERT_TRUE(cc.flags & CT_CC_INVALID);
        CU_ASSERT_TRUE(cc.max_age == 0 || cc.s_maxage == 0);
    }
    /* invalid next to valid: the most restrictive (0) wins */
    cc = cc_of("max-age=60, max-age=1.5", &rc);
    CU_ASSERT_EQUAL(cc.max_age, 0);
    /* an invalid min-fresh is ignored but reported */
    cc = cc_of("min-fresh=abc", &rc);
    CU_ASSERT_EQUAL(rc, CT_EPROTO);
    CU_ASSERT_EQUAL(cc.min_fresh, CT_CC_UNSET);
    CU_ASSERT_TRUE(cc.flags & CT_CC_INVALID);
    /* the rest of the line is still understood */
    cc = cc_of("max-age=\"5\", no-store", &rc);
    CU_ASSERT_TRUE(cc.flags & CT_CC_NO_STORE);
}

static void test_cc_overflow(void)
{
    struct ct_cc cc = cc_of("max-age=2147483648", NULL);
    CU_ASSERT_EQUAL(cc.max_age, 2147483648LL);
    CU_ASSERT_EQUAL(cc.flags, 0);
    cc = cc_of("max-age=99999999999999999999999999999999", NULL);
    CU_ASSERT_EQUAL(cc.max_age, 2147483648LL);
    CU_ASSERT_EQUAL(cc.flags, 0);
    cc = cc_of("max-age=2147483647", NULL);
    CU_ASSERT_EQUAL(cc.max_age, 2147483647LL);
    cc = cc_of("max-age=99999999999999999999999x", NULL); /* not digits: invalid */
    CU_ASSERT_EQUAL(cc.max_age, 0);
    CU_ASSERT_TRUE(cc.flags & CT_CC_INVALID);
}

static void test_cc_duplicates(void)
{
    int rc;
    struct ct_cc cc = cc_of("max-age=10, max-age=5", &rc);
    CU_ASSERT_EQUAL(cc.max_age, 5);
    CU_ASSERT_TRUE(cc.flags & CT_CC_INVALID);
    cc = cc_of("max-age=5, MAX-AGE=5", &rc); /* same value: no conflict */
    CU_ASSERT_EQUAL(cc.max_age, 5);
    CU_ASSERT_EQUAL(cc.flags, 0);
    cc = cc_of("min-fresh=10, min-fresh=20", &rc); /* larger is stricter here */
    CU_ASSERT_EQUAL(cc.min_fresh, 20);
    CU_ASSERT_TRUE(cc.flags & CT_CC_INVALID);
    /* across two field lines */
    ct_cc_init(&cc);
    CU_ASSERT_EQUAL(ct_cc_parse(&cc, CT_STR("s-maxage=100")), CT_OK);
    CU_ASSERT_EQUAL(ct_cc_parse(&cc, CT_STR("s-maxage=50, public")), CT_OK);
    CU_ASSERT_EQUAL(cc.s_maxage, 50);
    CU_ASSERT_TRUE(cc.flags & CT_CC_INVALID);
    CU_ASSERT_TRUE(cc.flags & CT_CC_PUBLIC);
}

static void test_cc_qualified(void)
{
    int rc;
    /* RFC 9111 §5.2.2.4 / §5.2.2.7: qualified forms */
    struct ct_cc cc = cc_of("no-cache=\"Set-Cookie, Set-Cookie2\"", &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_NO_CACHE_FIELDS);
    cc = cc_of("private=\"Set-Cookie\", max-age=60", &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_PRIVATE_FIELDS);
    CU_ASSERT_EQUAL(cc.max_age, 60);
    cc = cc_of("no-cache=Set-Cookie", &rc); /* token form tolerated */
    CU_ASSERT_EQUAL(cc.flags, CT_CC_NO_CACHE_FIELDS);
    /* a broken argument falls back to the stricter unqualified meaning */
    cc = cc_of("private=\"Set-Cookie", &rc);
    CU_ASSERT_EQUAL(rc, CT_EPROTO);
    CU_ASSERT_TRUE(cc.flags & CT_CC_PRIVATE);
    CU_ASSERT_TRUE(cc.flags & CT_CC_INVALID);
    CU_ASSERT_FALSE(cc.flags & CT_CC_PRIVATE_FIELDS);
}

static void test_cc_flags_with_args(void)
{
    int rc;
    struct ct_cc cc = cc_of("no-store=1", &rc); /* restrictive: still counts */
    CU_ASSERT_EQUAL(rc, CT_EPROTO);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_NO_STORE | CT_CC_INVALID);
    cc = cc_of("public=yes", &rc); /* permissive: voided */
    CU_ASSERT_EQUAL(rc, CT_EPROTO);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_INVALID);
    cc = cc_of("must-revalidate=\"x\"", &rc);
    CU_ASSERT_TRUE(cc.flags & CT_CC_MUST_REVALIDATE);
}

static void test_cc_extensions(void)
{
    int rc;
    /* RFC 9111 §5.2.3 example: unknown extensions are ignored */
    struct ct_cc cc = cc_of("private, community=\"UCI\"", &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_PRIVATE);
    cc = cc_of("foo, bar=baz, max-age=1", &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_EQUAL(cc.max_age, 1);
    CU_ASSERT_EQUAL(cc.flags, 0);
    cc = cc_of("foo bar, max-age=2", &rc); /* malformed: reported, rest kept */
    CU_ASSERT_EQUAL(rc, CT_EPROTO);
    CU_ASSERT_EQUAL(cc.max_age, 2);
    CU_ASSERT_FALSE(cc.flags & CT_CC_INVALID); /* not a known directive */
    cc = cc_of("x=\"a, max-age=3", &rc);       /* unterminated quote eats the rest */
    CU_ASSERT_EQUAL(rc, CT_EPROTO);
    CU_ASSERT_EQUAL(cc.max_age, CT_CC_UNSET);
    cc = cc_of(", ,,", &rc);
    CU_ASSERT_EQUAL(rc, CT_OK);
    CU_ASSERT_EQUAL(cc.flags, 0);
}

static void test_cc_from_msg(void)
{
    struct ct_http_field f[] = {
        {CT_STR("Cache-Control"), CT_STR("max-age=60"), CT_HDR_CACHE_CONTROL},
        {CT_STR("CDN-Cache-Control"), CT_STR("max-age=600"), CT_HDR_CDN_CACHE_CONTROL},
        {CT_STR("cache-control"), CT_STR("no-cache=\"Foo\", Max-Age=30"), CT_HDR_CACHE_CONTROL},
        {CT_STR("X-Other"), CT_STR("no-store"), CT_HDR_UNKNOWN},
    };
    struct ct_http_msg msg = {.kind = CT_HTTP_RESPONSE, .fields = f, .nfields = 4};
    struct ct_cc cc;
    cc.flags = 0xffff; /* garbage: from_msg starts from ct_cc_init */
    ct_cc_from_msg(&cc, &msg, CT_HDR_CACHE_CONTROL);
    CU_ASSERT_EQUAL(cc.max_age, 30);
    CU_ASSERT_EQUAL(cc.flags, CT_CC_NO_CACHE_FIELDS | CT_CC_INVALID);
    ct_cc_from_msg(&cc, &msg, CT_HDR_CDN_CACHE_CONTROL);
    CU_ASSERT_EQUAL(cc.max_age, 600);
    CU_ASSERT_EQUAL(cc.flags, 0);
    ct_cc_from_msg(&cc, &msg, CT_HDR_PRAGMA);
    CU_ASSERT_EQUAL(cc.max_age, CT_CC_UNSET);
    CU_ASSERT_EQUAL(cc.flags, 0);
}

/* ---- robustness: random inputs ----------------------------------------- */

/* A deterministic generator (xorshift) over an alphabet full of the bytes the
 * parsers branch on; each string is an exact-size heap copy so ASan sees any
 * read past the view. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

static char *rnd_str(size_t *len)
{
    static const char alpha[] = " \t,;=\"\\*-aAzZ09:/.?#W(nN)GMTSu\x7f\x80";
    *len = rnd(40);
    char *s = malloc(*len ? *len : 1);
    for (size_t i = 0; i < *len; i++)
        s[i] = alpha[rnd(sizeof alpha - 1)];
    return s;
}

static void test_random_inputs(void)
{
    int bad = 0;
    for (int iter = 0; iter < 50000; iter++) {
        size_t len;
        char *s = rnd_str(&len);
        struct ct_str v = ct_str_make(s, len), rest = v, e;
        unsigned n = 0;
        while (ct_http_list_next(&rest, &e) && n++ < 100) {
            /* elements are inside the input, non-empty and OWS-trimmed */
            if (e.len == 0 || e.p < s || e.p + e.len > s + len || e.p[0] == ' ' ||
                e.p[e.len - 1] == ' ' || e.p[0] == ',')
                bad++;
        }
        if (n > 100)
            bad++;
        struct ct_cc cc;
        ct_cc_init(&cc);
        (void)ct_cc_parse(&cc, v);
        if (cc.max_age < CT_CC_UNSET || cc.max_age > 2147483648LL)
            bad++;
        time_t t;
        (void)ct_http_date_parse_at(v, NOW_2026, &t);
        (void)ct_http_list_has(v, CT_STR("a"));
        (void)ct_http_is_token(v);
        free(s);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

void ct_test_register(void)
{
    CT_SUITE("http lists", {"RFC 9110 5.6.1.2 examples", test_list_rfc_examples},
             {"quoted strings stay whole", test_list_quoted}, {"list_has", test_list_has},
             {"tokens", test_token}, {"name=value pairs (Cookie, query)", test_pairs});
    CT_SUITE("http dates", {"RFC 9110 5.6.7 examples", test_date_rfc_examples},
             {"IMF-fixdate formatting", test_date_format},
             {"round trip against gmtime_r", test_date_roundtrip},
             {"RFC 850 two-digit years", test_date_rfc850_year},
             {"rejects everything else", test_date_rejects}, {"edge dates", test_date_edges});
    CT_SUITE("cache-control", {"directives", test_cc_basic}, {"max-stale", test_cc_max_stale},
             {"invalid values", test_cc_invalid_values}, {"overflow clamps", test_cc_overflow},
             {"duplicates", test_cc_duplicates}, {"qualified no-cache/private", test_cc_qualified},
             {"flags with arguments", test_cc_flags_with_args},
             {"extensions ignored", test_cc_extensions}, {"from message", test_cc_from_msg});
    CT_SUITE("robustness", {"random inputs", test_random_inputs});
}
