/* tests/unit/test_conf_robust.c: libconfig's own error messages, odd but
 * valid number forms, and a deterministic mutation run over the example
 * file: whatever the bytes, loading ends in a configuration or in located
 * errors, never a crash (run under ASan/UBSan by `make test`). */
#include <stdlib.h>
#include <unistd.h>

#include "tests/unit/test_conf_helpers.h"

static void test_err_duplicate_setting(void)
{
    EXPECT_ERR(BASE "cache = { size = \"1G\";\n  size = \"2G\"; };\n",
               "t.conf:4: duplicate setting name (expected each setting once per group)");
}

static void test_err_missing_include(void)
{
    char dir[] = "/tmp/ct_conf_robXXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/main.conf", dir);
    FILE *fp = fopen(path, "w");
    fputs(BASE "@include \"missing.conf\"\n", fp);
    fclose(fp);
    struct ct_conf *cf;
    ct_conf_errors_init(&errs);
    CU_ASSERT_EQUAL(ct_conf_load_file(path, &cf, &errs), CT_ECONF);
    char want[256];
    snprintf(want, sizeof(want), "%s:3: cannot open include file (expected a readable file, "
                                 "relative to the including one)", path);
    CU_ASSERT_TRUE(has_err(want));
    unlink(path);
    rmdir(dir);
}

/* libconfig 1.5 exit()s from its scanner on an @include of a directory
 * (libconfig #292): a reload must get an error instead, the process lives. */
static void test_err_include_not_a_file(void)
{
    char dir[] = "/tmp/ct_conf_robXXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char path[128], sub[128], want[512];
    snprintf(path, sizeof(path), "%s/main.conf", dir);
    snprintf(sub, sizeof(sub), "%s/sub.conf", dir);
    FILE *fp = fopen(path, "w");
    fputs(BASE "@include \"sub.conf\"\n  @include \".\"\n", fp);
    fclose(fp);
    fp = fopen(sub, "w");
    fputs("# nested\n\t@include \"/tmp\"\n", fp);
    fclose(fp);
    struct ct_conf *cf;
    ct_conf_errors_init(&errs);
    CU_ASSERT_EQUAL(ct_conf_load_file(path, &cf, &errs), CT_ECONF);
    snprintf(want, sizeof(want), "%s:4: @include \"%s/.\": not a regular file (expected a "
                                 "configuration file)", path, dir);
    CU_ASSERT_TRUE(has_err(want));
    snprintf(want, sizeof(want), "%s:2: @include \"/tmp\": not a regular file (expected a "
                                 "configuration file)", sub);
    CU_ASSERT_TRUE(has_err(want));
    EXPECT_ERR(BASE "@include \"/\"\n", "t.conf:3: @include \"/\": not a regular file "
                                        "(expected a configuration file)");
    unlink(sub);
    unlink(path);
    rmdir(dir);
}

/* libconfig's 64-bit and hex integers are integers like any other. */
static void test_number_forms(void)
{
    struct ct_conf *cf;
    EXPECT_OK(BASE "cache = { size = 268435456L; max_object_size = 0x100000;\n"
                   "  heuristic_fraction = 1; };\nlimits = { max_header_count = 0x10; };\n",
              &cf);
    CU_ASSERT_EQUAL(cf->cache.size_bytes, 256ull << 20);
    CU_ASSERT_EQUAL(cf->cache.max_object_bytes, 1ull << 20);
    CU_ASSERT_DOUBLE_EQUAL(cf->cache.heuristic_fraction, 1.0, 0);
    CU_ASSERT_EQUAL(cf->limits.max_header_count, 16);
    ct_conf_free(&cf);
    EXPECT_ERR(BASE "workers = 2.5;\n",
               "t.conf:3: workers: invalid value 2.5 (expected an integer from 1 to 1024, or "
               "\"auto\")");
    EXPECT_ERR(BASE "listen = 1;\n", "t.conf:3: duplicate setting name (expected each setting "
                                     "once per group)");
}

/* Long names and values are cut in messages, never overflow a buffer. */
static void test_long_inputs(void)
{
    char text[16384];
    char name[3000];
    memset(name, 'k', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    snprintf(text, sizeof(text), BASE "cache = { %s = \"%s\"; key_header = \"%s\"; };\n", name,
             name, name);
    struct ct_conf *cf = load(text);
    CU_ASSERT_PTR_NULL(cf);
    CU_ASSERT_TRUE(errs.n >= 1);
    for (size_t i = 0; i < errs.n; i++) {
        CU_ASSERT_TRUE(strlen(errs.msg[i]) < CT_CONF_ERR_LEN);
        CU_ASSERT_EQUAL(strncmp(errs.msg[i], "t.conf:3: ", 10), 0);
    }
}

/* libconfig 1.5 leaks a string token on some syntax errors (libconfig #142,
 * fixed in 1.7.3; Debian 12 ships 1.5): bytes per broken file, not ours. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:strbuf_append\n";
}

static uint32_t rng_state = 12345;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static void mutate(char *buf, size_t *len, size_t cap)
{
    static const char tokens[] = "\"{}()[];=,:#@.0123456789-xL \n";
    size_t pos = *len ? rnd() % *len : 0;
    switch (rnd() % 4) {
    case 0: /* replace a byte with a syntax-relevant one */
        if (*len)
            buf[pos] = tokens[rnd() % (sizeof(tokens) - 1)];
        break;
    case 1: /* delete a run */
        if (*len) {
            size_t r = rnd() % 8 + 1; /* once: CT_MIN evaluates its arguments twice */
            size_t n = CT_MIN(r, *len - pos);
            memmove(buf + pos, buf + pos + n, *len - pos - n);
            *len -= n;
        }
        break;
    case 2: /* duplicate a run */
        if (*len && *len + 32 < cap) {
            size_t r = rnd() % 32 + 1;
            size_t n = CT_MIN(r, *len - pos);
            memmove(buf + pos + n, buf + pos, *len - pos);
            *len += n;
        }
        break;
    default: /* any byte at all */
        if (*len)
            buf[pos] = (char)(rnd() % 255 + 1);
        break;
    }
    buf[*len] = '\0';
}

static void test_mutations_never_crash(void)
{
    char path[512];
    src_path("conf/cachet.conf", path, sizeof(path));
    FILE *fp = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    static char orig[32768], buf[32768];
    size_t olen = fread(orig, 1, sizeof(orig) - 1, fp);
    fclose(fp);
    unsigned ok = 0, failed = 0;
    for (int i = 0; i < 600; i++) {
        size_t len = olen;
        memcpy(buf, orig, olen + 1);
        for (int m = (int)(rnd() % 4); m >= 0; m--)
            mutate(buf, &len, sizeof(buf) - 1);
        struct ct_conf *cf = load(buf);
        if (cf) {
            ok++;
            ct_conf_free(&cf);
        } else {
            failed++;
            CU_ASSERT_TRUE(errs.n > 0);
            /* every message starts with a location: "t.conf:" (or an include) */
            CU_ASSERT_PTR_NOT_NULL(strchr(errs.msg[0], ':'));
        }
    }
    CU_ASSERT(failed > 100); /* the mutations do reach the error paths */
    CU_ASSERT(ok > 0 || failed == 600);
}

void ct_test_register(void)
{
    CT_SUITE("conf robustness", {"duplicate setting", test_err_duplicate_setting},
             {"missing include", test_err_missing_include},
             {"include of a directory", test_err_include_not_a_file},
             {"number forms", test_number_forms}, {"long inputs", test_long_inputs},
             {"mutations of the example never crash", test_mutations_never_crash});
}
