/*
 * tests/unit/test_conf_acme.c: listen[].tls.acme (conf/conf_acme.c): what
 * `cachet -t` refuses offline, each with its message and line, the names
 * taken from the sites, and `cachet -T` printing the group.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/test_conf_helpers.h"

static char dir[64];

static int setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/ct-acme-conf.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void)
{
    char p[128];
    snprintf(p, sizeof(p), "%s/file", dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/ro/sub", dir);
    rmdir(p);
    snprintf(p, sizeof(p), "%s/ro", dir);
    chmod(p, 0700);
    rmdir(p);
    return rmdir(dir);
}

/* An http and an https listener; the acme group's settings are ACME (line 4). */
static const char *acme_conf(const char *acme)
{
    static char text[4096];
    snprintf(text, sizeof(text),
             "backends = ( { address = \"127.0.0.1:8081\"; } );\n"
             "listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; },\n"
             "  { kind = \"https\"; address = \"127.0.0.1:8443\"; tls = { acme = {\n"
             "    %s\n"
             "  }; }; } );\n",
             acme);
    return text;
}

static const char *with_dir(const char *fmt)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf), fmt, dir);
    return buf;
}

#define OK_BASE "directory = \"https://ca.example/dir\"; storage = \"%s\";"

static void test_ok_without_certificates(void)
{
    struct ct_conf *cf = NULL;
    char acme[512];
    snprintf(acme, sizeof(acme), OK_BASE " names = [\"A.example.com\", \"b.example.com\"];", dir);
    EXPECT_OK(acme_conf(acme), &cf);
    const struct ct_conf_acme *a = &cf->listeners[1].tls.acme;
    CU_ASSERT_EQUAL(a->nnames, 2);
    CU_ASSERT_STRING_EQUAL(a->names[0], "a.example.com");
    CU_ASSERT_EQUAL(a->challenge_mask, CT_CONF_ACME_TLS_ALPN | CT_CONF_ACME_HTTP);
    CU_ASSERT_EQUAL(a->renew_before_ms, 0); /* auto: a third of the lifetime */
    char *t = dump_text(cf);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "directory = \"https://ca.example/dir\";"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "renew_before = \"auto\";"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "challenges = [ \"tls-alpn-01\", \"http-01\" ];"));
    free(t);
    ct_conf_free(&cf);
}

static void test_names_from_sites(void)
{
    struct ct_conf *cf = NULL;
    char text[8192];
    snprintf(text, sizeof(text), "%s"
             "sites = ( { name = \"s\"; hosts = [\"www.example.com\", \"example.com\"]; } );\n",
             acme_conf(with_dir(OK_BASE)));
    EXPECT_OK(text, &cf);
    const struct ct_conf_acme *a = &cf->listeners[1].tls.acme;
    CU_ASSERT_EQUAL(a->nnames, 2);
    if (a->nnames == 2) {
        CU_ASSERT_STRING_EQUAL(a->names[0], "www.example.com");
        CU_ASSERT_STRING_EQUAL(a->names[1], "example.com");
    }
    ct_conf_free(&cf);
}

static void test_err_wildcard(void)
{
    char acme[512];
    snprintf(acme, sizeof(acme), OK_BASE " names = [\"*.example.com\"];", dir);
    EXPECT_ERR(acme_conf(acme),
               "t.conf:4: listen[1].tls.acme.names[0]: wildcard \"*.example.com\": a wildcard "
               "certificate needs the DNS-01 challenge, which cachet does not answer (expected "
               "exact names, or certificates = ( ... ) for the wildcard)");
    snprintf(acme, sizeof(acme), OK_BASE " names = [\"localhost\", \"10.0.0.1\"];", dir);
    EXPECT_ERR(acme_conf(acme),
               "t.conf:4: listen[1].tls.acme.names[0]: \"localhost\" is not a public DNS name "
               "(expected a name such as \"www.example.com\"; a CA validates no IP address or "
               "single label)");
}

static void test_err_no_names(void)
{
    EXPECT_ERR(acme_conf(with_dir(OK_BASE)),
               "t.conf:3: listen[1].tls.acme.names: no names, and no site has hosts to take "
               "them from (expected names = [\"www.example.com\"])");
}

static void test_err_url(void)
{
    char acme[512];
    snprintf(acme, sizeof(acme),
             "directory = \"http://ca.example/dir\"; storage = \"%s\"; names = [\"a.example\"];",
             dir);
    EXPECT_ERR(acme_conf(acme),
               "t.conf:4: listen[1].tls.acme.directory: \"http://ca.example/dir\" is not an "
               "https URL (expected \"https://HOST[:PORT]/PATH\", such as "
               "\"https://acme-v02.api.letsencrypt.org/directory\")");
}

static void test_err_challenges(void)
{
    char acme[512];
    snprintf(acme, sizeof(acme), OK_BASE " names = [\"a.example\"]; challenges = [\"dns-01\"];",
             dir);
    EXPECT_ERR(acme_conf(acme),
               "t.conf:4: listen[1].tls.acme.challenges: unknown challenge \"dns-01\" (expected "
               "\"tls-alpn-01\" or \"http-01\"; dns-01 is not supported)");
}

static void test_err_storage(void)
{
    char acme[512], path[128];
    snprintf(path, sizeof(path), "%s/file", dir);
    FILE *fp = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fclose(fp);
    snprintf(acme, sizeof(acme),
             "directory = \"https://ca.example/dir\"; names = [\"a.example\"]; storage = \"%s\";",
             path);
    char want[512];
    snprintf(want, sizeof(want),
             "t.conf:4: listen[1].tls.acme.storage: \"%s\" is not a directory (expected a "
             "directory for keys and certificates)", path);
    EXPECT_ERR(acme_conf(acme), want);
    if (geteuid() == 0)
        return; /* root writes anywhere: the permission case cannot fail */
    snprintf(path, sizeof(path), "%s/ro", dir);
    mkdir(path, 0500);
    snprintf(acme, sizeof(acme),
             "directory = \"https://ca.example/dir\"; names = [\"a.example\"]; "
             "storage = \"%s/sub\";", path);
    snprintf(want, sizeof(want),
             "t.conf:4: listen[1].tls.acme.storage: \"%s/sub\" does not exist and cannot be "
             "created in \"%s\": Permission denied (expected a writable directory)", path, path);
    EXPECT_ERR(acme_conf(acme), want);
}

static void test_err_directory_ca(void)
{
    char acme[512];
    snprintf(acme, sizeof(acme),
             OK_BASE " names = [\"a.example\"]; directory_ca = \"/nonexistent/ca.pem\";", dir);
    EXPECT_ERR(acme_conf(acme),
               "t.conf:4: listen[1].tls.acme.directory_ca: cannot read \"/nonexistent/ca.pem\": "
               "No such file or directory (expected a PEM CA file)");
}

void ct_test_register(void)
{
    CU_pSuite s = CU_add_suite("conf acme", setup, teardown);
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {{"an acme listener needs no certificates", test_ok_without_certificates},
             {"names default to the sites' hosts", test_names_from_sites},
             {"wildcards and non-public names refused", test_err_wildcard},
             {"no names at all", test_err_no_names}, {"https URL only", test_err_url},
             {"unknown challenge", test_err_challenges}, {"storage", test_err_storage},
             {"directory_ca", test_err_directory_ca}};
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
        CU_add_test(s, tests[i].name, tests[i].fn);
}
