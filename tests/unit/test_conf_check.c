/* tests/unit/test_conf_check.c: the cross-checks run after every field is
 * read, one test per message, each with its FILE:LINE; certificate files are
 * generated here with OpenSSL (EC P-256, self-signed) in a temp directory. */
#include <stdlib.h>
#include <unistd.h>

#include "tests/unit/test_conf_helpers.h"

/* Test text must never be cut short: a truncated config would test something else. */
#define FMT(buf, ...) CU_ASSERT_FATAL(snprintf((buf), sizeof(buf), __VA_ARGS__) < (int)sizeof(buf))

static char dir[64];
static char cert_a[128], key_a[128], cert_b[128], key_b[128];

static int setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/ct_conf_certsXXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(cert_a, sizeof(cert_a), "%s/a.crt", dir);
    snprintf(key_a, sizeof(key_a), "%s/a.key", dir);
    snprintf(cert_b, sizeof(cert_b), "%s/b.crt", dir);
    snprintf(key_b, sizeof(key_b), "%s/b.key", dir);
    return write_pair(cert_a, key_a, "a.example") || write_pair(cert_b, key_b, "b.example");
}

static int teardown(void)
{
    unlink(cert_a), unlink(key_a), unlink(cert_b), unlink(key_b);
    rmdir(dir);
    return 0;
}

/* A file whose line 3 is an https listener with TLS group body TLS. */
static const char *https_conf(const char *tls)
{
    static char text[4096];
    FMT(text,
             "backends = ( { address = \"127.0.0.1:8081\"; } );\n"
             "listen = (\n"
             "  { kind = \"https\"; address = \"127.0.0.1:8443\"; tls = { %s }; }\n"
             ");\n",
             tls);
    return text;
}

static const char *cert_entry(const char *cert, const char *key, const char *extra)
{
    static char text[1024];
    FMT(text, "certificates = ( { cert = \"%s\"; key = \"%s\"; %s } );", cert,
             key, extra);
    return text;
}

/* ---- TLS files ------------------------------------------------------------ */

/* The admin's and the fleet's secret: equal only to itself, whatever the
 * lengths. */
static void test_token_matches(void)
{
    const char *t = "0123456789abcdef-secret";
    CU_ASSERT_TRUE(ct_conf_token_matches(t, ct_str_c("0123456789abcdef-secret")));
    CU_ASSERT_FALSE(ct_conf_token_matches(t, ct_str_c("0123456789abcdef-secreT")));
    CU_ASSERT_FALSE(ct_conf_token_matches(t, ct_str_c("0123456789abcdef-secre")));
    CU_ASSERT_FALSE(ct_conf_token_matches(t, ct_str_c("0123456789abcdef-secrets")));
    CU_ASSERT_FALSE(ct_conf_token_matches(t, CT_STR("")));
}

static void test_cert_ok(void)
{
    struct ct_conf *cf;
    char tls[1024];
    FMT(tls,
             "certificates = ( { cert = \"%s\"; key = \"%s\"; server_names = [\"A.example\"]; },"
             " { cert = \"%s\"; key = \"%s\"; server_names = [\"*.b.example\", \"b.example\"]; } );"
             " client_verify = \"required\"; client_ca = \"%s\"; client_subject_header = "
             "\"X-Client-Subject\"; min_version = \"1.3\";",
             cert_a, key_a, cert_b, key_b, cert_b);
    EXPECT_OK(https_conf(tls), &cf);
    const struct ct_conf_tls *t = &cf->listeners[0].tls;
    CU_ASSERT_EQUAL_FATAL(t->ncerts, 2);
    CU_ASSERT_STRING_EQUAL(t->certs[0].cert_file, cert_a);
    CU_ASSERT_TRUE(t->certs[0].is_default); /* the first, when none is marked */
    CU_ASSERT_FALSE(t->certs[1].is_default);
    CU_ASSERT_STRING_EQUAL(t->certs[0].server_names[0], "a.example");
    CU_ASSERT_EQUAL(t->certs[1].n_server_names, 2);
    CU_ASSERT_STRING_EQUAL(t->certs[1].server_names[0], "*.b.example");
    CU_ASSERT_EQUAL(t->client_verify, CT_CONF_VERIFY_REQUIRED);
    CU_ASSERT_STRING_EQUAL(t->client_subject_header, "X-Client-Subject");
    CU_ASSERT_FALSE(t->self_signed);
    ct_conf_free(&cf);
}

static void test_err_cert_unreadable(void)
{
    EXPECT_ERR(https_conf(cert_entry("/nonexistent.crt", key_a, "")),
               "t.conf:3: listen[0].tls.certificates[0].cert: cannot read "
               "\"/nonexistent.crt\": No such file or directory (expected a readable PEM file)");
}

static void test_err_no_cert_in_file(void)
{
    char want[512];
    FMT(want,
             "t.conf:3: listen[0].tls.certificates[0].cert: no certificate in \"%s\" (expected "
             "a PEM certificate)", key_a);
    EXPECT_ERR(https_conf(cert_entry(key_a, key_a, "")), want);
}

static void test_err_no_key_in_file(void)
{
    char want[512];
    FMT(want,
             "t.conf:3: listen[0].tls.certificates[0].key: no usable private key in \"%s\" "
             "(expected an unencrypted PEM private key)", cert_a);
    EXPECT_ERR(https_conf(cert_entry(cert_a, cert_a, "")), want);
}

static void test_err_key_mismatch(void)
{
    char want[512];
    FMT(want,
             "t.conf:3: listen[0].tls.certificates[0].key: key \"%s\" does not match "
             "certificate \"%s\" (expected the private key of that certificate)", key_b, cert_a);
    EXPECT_ERR(https_conf(cert_entry(cert_a, key_b, "")), want);
}

static void test_err_client_ca_no_cert(void)
{
    char tls[1024], want[512];
    FMT(tls, "self_signed = true; client_verify = \"optional\"; "
                               "client_ca = \"%s\";", key_a);
    FMT(want, "t.conf:3: listen[0].tls.client_ca: no certificate in \"%s\" "
                                 "(expected a PEM certificate)", key_a);
    EXPECT_ERR(https_conf(tls), want);
}

static void test_err_cipher_lists(void)
{
    EXPECT_ERR(https_conf("self_signed = true; ciphers = \"NOPE-CIPHER\";"),
               "t.conf:3: listen[0].tls.ciphers: no usable cipher in \"NOPE-CIPHER\" (expected "
               "an OpenSSL cipher list such as ECDHE-ECDSA-AES128-GCM-SHA256:...)");
    EXPECT_ERR(https_conf("self_signed = true; ciphersuites = \"TLS_NOPE\";"),
               "t.conf:3: listen[0].tls.ciphersuites: invalid TLS 1.3 suites \"TLS_NOPE\" "
               "(expected a list such as TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384)");
    EXPECT_ERR(https_conf("self_signed = true; groups = \"X25519:P-999\";"),
               "t.conf:3: listen[0].tls.groups: invalid groups \"X25519:P-999\" (expected a "
               "list such as X25519:P-256)");
}

/* ---- TLS settings that need each other --------------------------------------- */

static void test_err_https_without_cert(void)
{
    EXPECT_ERR(https_conf("min_version = \"1.2\";"),
               "t.conf:3: listen[0].tls.certificates: https listener without a certificate "
               "(expected certificates = ( { cert = \"...\"; key = \"...\"; } ), "
               "self_signed = true, or acme = { ... })");
    /* no tls group at all: located at the listener */
    EXPECT_ERR("backends = ( { address = \"127.0.0.1:8081\"; } );\n"
               "listen = ( { kind = \"https\";\n address = \"127.0.0.1:8443\"; } );\n",
               "t.conf:2: listen[0].tls.certificates: https listener without a certificate "
               "(expected certificates = ( { cert = \"...\"; key = \"...\"; } ), "
               "self_signed = true, or acme = { ... })");
}

static void test_err_self_signed_and_certs(void)
{
    char tls[1024];
    FMT(tls, "%s self_signed = true;", cert_entry(cert_a, key_a, ""));
    EXPECT_ERR(https_conf(tls), "t.conf:3: listen[0].tls.self_signed: set together with "
                                "certificates (expected one or the other)");
}

static void test_err_two_defaults(void)
{
    char tls[1024];
    FMT(tls,
             "certificates = ( { cert = \"%s\"; key = \"%s\"; default = true; },\n"
             "{ cert = \"%s\"; key = \"%s\"; default = true; } );",
             cert_a, key_a, cert_b, key_b);
    EXPECT_ERR(https_conf(tls), "t.conf:4: listen[0].tls.certificates[1].default: a second "
                                "default certificate (expected at most one)");
}

static void test_err_mtls(void)
{
    EXPECT_ERR(https_conf("self_signed = true; client_verify = \"required\";"),
               "t.conf:3: listen[0].tls.client_verify: client certificates verified against "
               "nothing (expected client_ca = \"FILE\" with it)");
    char tls[512], want[512];
    FMT(tls, "self_signed = true; client_ca = \"%s\";", cert_a);
    EXPECT_ERR(https_conf(tls), "t.conf:3: listen[0].tls.client_ca: set while client_verify is "
                                "\"off\" (expected client_verify = \"optional\" or \"required\")");
    EXPECT_ERR(https_conf("self_signed = true; client_subject_header = \"X-S\";"),
               "t.conf:3: listen[0].tls.client_subject_header: set while client_verify is "
               "\"off\" (expected client_verify = \"optional\" or \"required\")");
    FMT(tls, "self_signed = true; client_ca = \"%s\"; client_verify = "
                               "\"optional\"; client_subject_header = \"X Subject\";", cert_a);
    FMT(want, "t.conf:3: listen[0].tls.client_subject_header: invalid header "
                                 "name \"X Subject\" (expected a token such as X-Name)");
    EXPECT_ERR(https_conf(tls), want);
}

/* ---- listeners ------------------------------------------------------------------ */

static void test_err_no_listener(void)
{
    EXPECT_ERR("backends = ( { address = \"127.0.0.1:8081\"; } );\nlisten = ( );\n",
               "t.conf:2: listen: no listener (expected at least one { kind = \"http\"; address "
               "= \"IP:PORT\"; })");
    EXPECT_ERR("backends = ( { address = \"127.0.0.1:8081\"; } );\n",
               "t.conf: listen: no listener (expected at least one { kind = \"http\"; address "
               "= \"IP:PORT\"; })");
}

static void test_err_address_in_use(void)
{
    EXPECT_ERR(BASE "admin = {\n  listen = \"127.0.0.1:8080\";\n};\n",
               "t.conf:4: admin.listen: address 127.0.0.1:8080 is already used by "
               "listen[0].address at t.conf:1 (expected a distinct IP:PORT)");
    EXPECT_ERR("backends = ( { address = \"127.0.0.1:8081\"; } );\n"
               "listen = ( { kind = \"http\"; address = \"*:80\"; },\n"
               "  { kind = \"http\"; address = \"127.0.0.1:80\"; } );\n",
               "t.conf:3: listen[1].address: address 127.0.0.1:80 is already used by "
               "listen[0].address at t.conf:2 (expected a distinct IP:PORT)");
    EXPECT_ERR("backends = ( { address = \"127.0.0.1:8081\"; } );\n"
               "listen = ( { kind = \"http\"; address = \"[::1]:80\"; },\n"
               "  { kind = \"https\"; address = \"[::1]:80\"; tls = { self_signed = true; }; } );\n",
               "t.conf:3: listen[1].address: address [::1]:80 is already used by "
               "listen[0].address at t.conf:2 (expected a distinct IP:PORT)");
}

static void test_addresses_that_do_not_clash(void)
{
    struct ct_conf *cf;
    /* port 0 twice (each bind gets its own port), v4 and v6 on one port,
     * two IPs on one port */
    EXPECT_OK("backends = ( { address = \"127.0.0.1:8081\"; } );\n"
              "listen = ( { kind = \"http\"; address = \"127.0.0.1:0\"; },\n"
              "  { kind = \"http\"; address = \"127.0.0.1:0\"; },\n"
              "  { kind = \"http\"; address = \"[::1]:80\"; },\n"
              "  { kind = \"http\"; address = \"127.0.0.1:80\"; },\n"
              "  { kind = \"http\"; address = \"127.0.0.2:80\"; } );\n"
              "admin = { listen = \"off\"; };\n",
              &cf);
    CU_ASSERT_EQUAL(cf->nlisteners, 5);
    CU_ASSERT_FALSE(cf->admin.enabled);
    CU_ASSERT_PTR_NULL(cf->admin.addr.host);
    ct_conf_free(&cf);
}

static void test_err_redirect_without_https(void)
{
    EXPECT_ERR("backends = ( { address = \"127.0.0.1:8081\"; } );\n"
               "listen = ( { kind = \"http\"; address = \"127.0.0.1:80\";\n"
               "  redirect_to_https = true; } );\n",
               "t.conf:3: listen[0].redirect_to_https: no https listener to redirect to "
               "(expected an https listener, or redirect_port)");
    struct ct_conf *cf;
    EXPECT_OK("backends = ( { address = \"127.0.0.1:8081\"; } );\n"
              "listen = ( { kind = \"http\"; address = \"127.0.0.1:80\";\n"
              "  redirect_to_https = true; redirect_port = 443; } );\n",
              &cf);
    CU_ASSERT_TRUE(cf->listeners[0].redirect_to_https);
    CU_ASSERT_EQUAL(cf->listeners[0].redirect_port, 443);
    ct_conf_free(&cf);
}

/* ---- backends, cache, logs --------------------------------------------------------- */

static void test_err_no_backend(void)
{
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
               "backends = ( );\n",
               "t.conf:2: backends: no backend (expected at least one { address = "
               "\"HOST:PORT\"; })");
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n",
               "t.conf: backends: no backend (expected at least one { address = "
               "\"HOST:PORT\"; })");
}

/* cache.persist: its directory must take the snapshot at the stop. */
static void test_err_persist(void)
{
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
               "backends = ( { address = \"127.0.0.1:8081\"; } );\n"
               "cache = { persist = \"/nonexistent-ct-persist/snap\"; };\n",
               "t.conf:3: cache.persist: directory \"/nonexistent-ct-persist\" of "
               "\"/nonexistent-ct-persist/snap\" does not exist (expected an existing "
               "directory this user may write)");
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
               "backends = ( { address = \"127.0.0.1:8081\"; } );\n"
               "cache = { persist = \"/tmp\"; };\n",
               "t.conf:3: cache.persist: \"/tmp\" is not a regular file (expected a file name "
               "for the snapshot)");
}

static void test_err_backend_names(void)
{
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
               "backends = ( { address = \"127.0.0.1:8081\"; },\n"
               "  { address = \"127.0.0.1:8082\"; name = \"127.0.0.1:8081\"; } );\n",
               "t.conf:3: backends[1].name: \"127.0.0.1:8081\" is already the name of "
               "backends[0] (expected a distinct name)");
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
               "backends = ( { address = \"o.example:80\";\n"
               "  health_check = { enabled = true; path = \"health\"; }; } );\n",
               "t.conf:3: backends[0].health_check.path: invalid request target \"health\" "
               "(expected a path starting with /)");
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
               "backends = ( { address = \"o.example:80\";\n"
               "  passive_fail_on = [ \"reset\", \"500\" ]; } );\n",
               "t.conf:3: backends[0].passive_fail_on: unknown failure \"500\" (expected "
               "\"connect\", \"timeout\", \"reset\", \"invalid\" or \"5xx\")");
}

static void test_backend_settings(void)
{
    struct ct_conf *cf;
    EXPECT_OK("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
              "backends = ( { name = \"origin\"; address = \"origin.example:8081\"; weight = 3;\n"
              "  connect_timeout = \"1s\"; max_fails = 0;\n"
              "  health_check = { enabled = true; interval = \"2s\"; path = \"/health\";\n"
              "    expect_status = 204; rise = 1; fall = 5; }; },\n"
              "  { address = \"[::1]:81\"; } );\n",
              &cf);
    CU_ASSERT_EQUAL_FATAL(cf->nbackends, 2);
    CU_ASSERT_STRING_EQUAL(cf->backends[0].name, "origin");
    CU_ASSERT_STRING_EQUAL(cf->backends[0].host, "origin.example");
    CU_ASSERT_EQUAL(cf->backends[0].weight, 3);
    CU_ASSERT_EQUAL(cf->backends[0].connect_timeout_ms, 1000);
    CU_ASSERT_EQUAL(cf->backends[0].max_fails, 0);
    CU_ASSERT_TRUE(cf->backends[0].health.enabled);
    CU_ASSERT_EQUAL(cf->backends[0].health.interval_ms, 2000);
    CU_ASSERT_EQUAL(cf->backends[0].health.expect_status, 204);
    CU_ASSERT_EQUAL(cf->backends[0].health.fall, 5);
    CU_ASSERT_STRING_EQUAL(cf->backends[1].name, "[::1]:81");
    CU_ASSERT_STRING_EQUAL(cf->backends[1].host, "::1");
    /* passive health counts what the origin fails as a whole, by default */
    CU_ASSERT_EQUAL(cf->backends[1].passive_fail_mask, (1u << CT_CONF_FAIL_CONNECT) |
                                                           (1u << CT_CONF_FAIL_TIMEOUT) |
                                                           (1u << CT_CONF_FAIL_RESET));
    ct_conf_free(&cf);
    EXPECT_OK("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
              "backends = ( { address = \"o.example:80\"; passive_fail_on = [ \"5xx\", "
              "\"invalid\" ]; },\n"
              "  { address = \"o.example:81\"; passive_fail_on = [ ]; } );\n",
              &cf);
    CU_ASSERT_EQUAL(cf->backends[0].passive_fail_mask,
                    (1u << CT_CONF_FAIL_HTTP_5XX) | (1u << CT_CONF_FAIL_INVALID));
    CU_ASSERT_EQUAL(cf->backends[1].passive_fail_mask, 0);
    ct_conf_free(&cf);
}

static void test_err_cache(void)
{
    /* an unset max_object_size follows the cache: 1/16 of it (issue 40) */
    struct ct_conf *cf = NULL;
    EXPECT_OK(BASE "cache = { size = \"1M\"; };\n", &cf);
    CU_ASSERT_EQUAL(cf->cache.max_object_bytes, 64 * 1024);
    ct_conf_free(&cf);
    EXPECT_OK(BASE "cache = { size = \"1G\"; };\n", &cf);
    CU_ASSERT_EQUAL(cf->cache.max_object_bytes, 64 * 1024 * 1024);
    ct_conf_free(&cf);
    EXPECT_OK(BASE "cache = { size = \"1G\"; max_object_size = \"1M\"; };\n", &cf);
    CU_ASSERT_EQUAL(cf->cache.max_object_bytes, 1024 * 1024); /* as written */
    ct_conf_free(&cf);
    EXPECT_ERR(BASE "cache = { size = \"1M\";\n  max_object_size = \"2M\"; };\n",
               "t.conf:4: cache.max_object_size: 2M is larger than the whole cache, cache.size "
               "= 1M (expected at most cache.size)");
    EXPECT_ERR(BASE "cache = { key_header = \"Accept Language\"; };\n",
               "t.conf:3: cache.key_header: invalid header name \"Accept Language\" (expected a "
               "token such as X-Name)");
    EXPECT_ERR(BASE "cache = { targeted_cache_control = \"X:Y\"; };\n",
               "t.conf:3: cache.targeted_cache_control: invalid header name \"X:Y\" (expected "
               "a token such as X-Name)");
    EXPECT_ERR(BASE "cache = { targeted_cache_control = \"Cache-Control\"; };\n",
               "t.conf:3: cache.targeted_cache_control: \"Cache-Control\" is a standard field "
               "(expected a targeted field name such as Cachet-Cache-Control, RFC 9213)");
    EXPECT_ERR(BASE "cache = { tag_headers = [ \"Surrogate-Key\", \"Bad Name\" ]; };\n",
               "t.conf:3: cache.tag_headers[1]: invalid value \"Bad Name\" (expected header field "
               "names such as [\"Surrogate-Key\", \"Cache-Tag\"])");
    EXPECT_ERR(BASE "cache = { tag_headers = [ \"ETag\" ]; };\n",
               "t.conf:3: cache.tag_headers: \"ETag\" is a standard field, not a tag field "
               "(expected a name such as Surrogate-Key or X-Tags)");
}

static void test_compression(void)
{
    /* defaults: on, zstd > br > gzip > identity, the text types */
    struct ct_conf *cf = load(BASE);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    const struct ct_conf_compression *cz = &cf->compression;
    CU_ASSERT_TRUE(cz->enabled);
    CU_ASSERT_FALSE(cz->on_the_fly);
    CU_ASSERT_TRUE(cz->store_transcoded); /* one origin fetch per object (issue 46) */
    CU_ASSERT_EQUAL(cz->gzip_level, 6);
    CU_ASSERT_EQUAL(cz->br_level, 6);
    CU_ASSERT_EQUAL(cz->zstd_level, 3);
    CU_ASSERT_EQUAL(cz->min_size_bytes, 256);
    CU_ASSERT_EQUAL(cz->pref.n, 3);
    CU_ASSERT_EQUAL(cz->pref.order[0], CT_CODING_ZSTD);
    CU_ASSERT_EQUAL(cz->pref.order[2], CT_CODING_GZIP);
#define TYPE_OK(t) ct_conf_compress_type(cz, (t), strlen(t))
    CU_ASSERT_TRUE(TYPE_OK("text/html"));
    CU_ASSERT_TRUE(TYPE_OK("Text/HTML; charset=utf-8"));
    CU_ASSERT_TRUE(TYPE_OK("application/json;charset=utf-8"));
    CU_ASSERT_TRUE(TYPE_OK("application/json ; q=1"));
    CU_ASSERT_TRUE(TYPE_OK("image/svg+xml"));
    CU_ASSERT_FALSE(TYPE_OK("image/png"));
    CU_ASSERT_FALSE(TYPE_OK("application/jsonx"));
    CU_ASSERT_FALSE(TYPE_OK("application/octet-stream"));
    CU_ASSERT_FALSE(TYPE_OK("text"));
    CU_ASSERT_FALSE(TYPE_OK("texts/html"));
    CU_ASSERT_FALSE(TYPE_OK(""));
    ct_conf_free(&cf);

    cf = load(BASE "compression = { prefer = [ \"gzip\", \"identity\", \"br\" ];\n"
                   "  types = [ \"application/*\", \"TEXT/CSS\" ]; };\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    cz = &cf->compression;
    CU_ASSERT_EQUAL(cz->pref.n, 3);
    CU_ASSERT_EQUAL(cz->pref.order[1], CT_CODING_IDENTITY);
    CU_ASSERT_TRUE(TYPE_OK("application/pdf"));
    CU_ASSERT_TRUE(TYPE_OK("text/css"));
    CU_ASSERT_FALSE(TYPE_OK("text/html"));
#undef TYPE_OK
    ct_conf_free(&cf);

    EXPECT_ERR(BASE "compression = {\n  prefer = [ \"gzip\", \"deflate\" ]; };\n",
               "t.conf:4: compression.prefer[1]: unknown coding \"deflate\" (expected \"zstd\", "
               "\"br\", \"gzip\" or \"identity\")");
    EXPECT_ERR(BASE "compression = { prefer = [ \"x-gzip\" ]; };\n",
               "t.conf:3: compression.prefer[0]: unknown coding \"x-gzip\" (expected \"zstd\", "
               "\"br\", \"gzip\" or \"identity\")");
    EXPECT_ERR(BASE "compression = { prefer = [ \"br\", \"BR\" ]; };\n",
               "t.conf:3: compression.prefer[1]: \"br\" is listed twice (expected each coding "
               "once)");
    EXPECT_ERR(BASE "compression = { types = [ \"text/html\", \"html\" ]; };\n",
               "t.conf:3: compression.types[1]: invalid value \"html\" (expected media types "
               "such as [\"text/*\", \"application/json\"])");
    EXPECT_ERR(BASE "compression = { types = [ \"*/*\" ]; };\n",
               "t.conf:3: compression.types[0]: invalid value \"*/*\" (expected media types "
               "such as [\"text/*\", \"application/json\"])");
    EXPECT_ERR(BASE "compression = { types = [ \"text/ht*\" ]; };\n",
               "t.conf:3: compression.types[0]: invalid value \"text/ht*\" (expected media "
               "types such as [\"text/*\", \"application/json\"])");
    EXPECT_ERR(BASE "compression = { br_level = 12; };\n",
               "t.conf:3: compression.br_level: out of range: 12 (expected an integer from 0 to 11)");
    EXPECT_ERR(BASE "compression = { gzip_level = 0; };\n",
               "t.conf:3: compression.gzip_level: out of range: 0 (expected an integer from 1 to 9)");
}

static void test_err_logs(void)
{
    EXPECT_ERR(BASE "logs = { error_log = \"\"; };\n",
               "t.conf:3: logs.error_log: empty (expected a file name, or \"-\")");
}

/* ---- admin token ---------------------------------------------------------- */

static void test_admin_token(void)
{
    struct ct_conf *cf;
    char text[1024], path[128];
    /* beyond loopback without a token: refused, located */
    EXPECT_ERR(BASE "admin = { listen = \"0.0.0.0:8082\"; };\n",
               "t.conf:3: admin.listen: 0.0.0.0 is beyond loopback without admin.token or "
               "admin.token_file (expected a 127.0.0.0/8 or ::1 address, or a token)");
    EXPECT_ERR(BASE "admin = { token = \"short\"; };\n",
               "t.conf:3: admin.token: not a token (expected 16 to 256 visible ASCII "
               "characters, no spaces)");
    EXPECT_ERR(BASE "admin = { token = \"0123456789abcdef\";\n"
                    "  token_file = \"/nonexistent/x\"; };\n",
               "t.conf:4: admin.token_file: set together with admin.token (expected one)");
    EXPECT_ERR(BASE "admin = { token_file = \"/nonexistent/x\"; };\n",
               "t.conf:3: admin.token_file: cannot read \"/nonexistent/x\": No such file or "
               "directory");
    /* with a token it may listen anywhere */
    EXPECT_OK(BASE "admin = { listen = \"0.0.0.0:0\"; token = \"0123456789abcdef\"; };\n", &cf);
    CU_ASSERT_STRING_EQUAL(ct_conf_admin_token(&cf->admin), "0123456789abcdef");
    ct_conf_free(&cf);
    /* the default: none, on loopback */
    EXPECT_OK(BASE, &cf);
    CU_ASSERT_PTR_NULL(ct_conf_admin_token(&cf->admin));
    ct_conf_free(&cf);
    /* from a file: its first line */
    FMT(path, "/tmp/ct_conf_tokenXXXXXX");
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs("s3cret-token-from-a-file\nignored\n", fp);
    fclose(fp);
    FMT(text, BASE "admin = { listen = \"[::]:0\"; token_file = \"%s\"; };\n", path);
    EXPECT_OK(text, &cf);
    CU_ASSERT_STRING_EQUAL(ct_conf_admin_token(&cf->admin), "s3cret-token-from-a-file");
    ct_conf_free(&cf);
    fp = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs("has space in it and is long\n", fp);
    fclose(fp);
    char want[512];
    FMT(want, "t.conf:3: admin.token_file: the first line of \"%s\" is not a token (expected "
              "16 to 256 visible ASCII characters, no spaces)", path);
    EXPECT_ERR(text, want);
    unlink(path);
}

/* ---- TLS to origins (backends[].tls, issue 39) ------------------------------ */

/* A file whose line 2 is a backend with TLS group body TLS (line 3: a group's). */
static const char *backend_tls_conf(const char *tls)
{
    static char text[4096];
    FMT(text,
        "listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
        "backends = ( { address = \"origin.example:443\"; tls = { %s }; } );\n"
        "backend_groups = ( { name = \"g\"; backends = ( { address = \"10.0.0.1:443\"; "
        "tls = { %s }; } ); } );\n",
        tls, tls);
    return text;
}

static void test_backend_tls_ok(void)
{
    struct ct_conf *cf;
    EXPECT_OK(backend_tls_conf(""), &cf); /* tls = {}: every default */
    const struct ct_conf_backend_tls *t = &cf->backends[0].tls;
    CU_ASSERT_TRUE(t->on);
    CU_ASSERT_TRUE(t->verify);
    CU_ASSERT_STRING_EQUAL(t->ca, "system");
    CU_ASSERT_PTR_NULL(t->server_name);
    CU_ASSERT_PTR_NULL(t->cert);
    CU_ASSERT_EQUAL(t->handshake_timeout_ms, 5000);
    CU_ASSERT_TRUE(t->session_reuse);
    CU_ASSERT_EQUAL_FATAL(t->nalpn, 1);
    CU_ASSERT_STRING_EQUAL(t->alpn[0], "http/1.1");
    CU_ASSERT_TRUE(cf->groups[0].backends[0].tls.on);
    ct_conf_free(&cf);
    EXPECT_OK("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
              "backends = ( { address = \"127.0.0.1:80\"; } );\n", &cf);
    CU_ASSERT_FALSE(cf->backends[0].tls.on); /* no group: cleartext */
    ct_conf_free(&cf);
    char tls[1024];
    FMT(tls, "ca = \"%s\"; cert = \"%s\"; key = \"%s\"; server_name = \"$host\"; "
             "min_version = \"1.3\"; alpn = []; session_reuse = false;", cert_b, cert_a, key_a);
    EXPECT_OK(backend_tls_conf(tls), &cf);
    t = &cf->backends[0].tls;
    CU_ASSERT_STRING_EQUAL(t->server_name, "$host");
    CU_ASSERT_STRING_EQUAL(t->cert, cert_a);
    CU_ASSERT_EQUAL(t->nalpn, 0);
    CU_ASSERT_FALSE(t->session_reuse);
    ct_conf_free(&cf);
}

static void test_err_backend_tls(void)
{
    char tls[1024], want[512];
    EXPECT_ERR(backend_tls_conf("ca = \"/nonexistent-ca.pem\";"),
               "t.conf:2: backends[0].tls.ca: cannot read \"/nonexistent-ca.pem\": No such file "
               "or directory (expected a readable PEM file)");
    EXPECT_ERR(backend_tls_conf("ca = \"/nonexistent-ca.pem\";"),
               "t.conf:3: backend_groups[0].backends[0].tls.ca: cannot read "
               "\"/nonexistent-ca.pem\": No such file or directory (expected a readable PEM "
               "file)");
    FMT(tls, "ca = \"%s\";", key_a);
    FMT(want, "t.conf:2: backends[0].tls.ca: no certificate in \"%s\" (expected a PEM "
              "certificate)", key_a);
    EXPECT_ERR(backend_tls_conf(tls), want);
    FMT(tls, "cert = \"%s\"; key = \"%s\";", cert_a, key_b);
    FMT(want, "t.conf:2: backends[0].tls.key: key \"%s\" does not match certificate \"%s\" "
              "(expected the private key of that certificate)", key_b, cert_a);
    EXPECT_ERR(backend_tls_conf(tls), want);
    FMT(tls, "cert = \"%s\";", cert_a);
    EXPECT_ERR(backend_tls_conf(tls), "t.conf:2: backends[0].tls.cert: a client certificate "
                                      "needs its key (expected both cert and key, or neither)");
    FMT(tls, "cert = \"%s\"; key = \"%s\";", cert_a, cert_a);
    FMT(want, "t.conf:2: backends[0].tls.key: no usable private key in \"%s\" (expected an "
              "unencrypted PEM private key)", cert_a);
    EXPECT_ERR(backend_tls_conf(tls), want);
    EXPECT_ERR(backend_tls_conf("server_name = \"*.example.com\";"),
               "t.conf:2: backends[0].tls.server_name: invalid name \"*.example.com\" (expected "
               "a host name such as origin.example.com, an IP address, \"$host\" or off)");
    EXPECT_ERR(backend_tls_conf("ciphers = \"NOPE\";"),
               "t.conf:2: backends[0].tls.ciphers: no usable cipher in \"NOPE\" (expected an "
               "OpenSSL cipher list such as ECDHE-ECDSA-AES128-GCM-SHA256:...)");
    EXPECT_ERR(backend_tls_conf("handshake_timeout = \"0s\";"),
               "t.conf:2: backends[0].tls.handshake_timeout: out of range: \"0s\" (expected a "
               "duration such as 500ms, 10s, 5m or 1h, from 1ms to 10m)");
}

void ct_test_register(void)
{
    CU_pSuite s = CU_add_suite("conf TLS files", setup, teardown);
    CU_add_test(s, "backend TLS settings", test_backend_tls_ok);
    CU_add_test(s, "backend TLS errors", test_err_backend_tls);
    CU_add_test(s, "certificates load", test_cert_ok);
    CU_add_test(s, "cert unreadable", test_err_cert_unreadable);
    CU_add_test(s, "no certificate in file", test_err_no_cert_in_file);
    CU_add_test(s, "no key in file", test_err_no_key_in_file);
    CU_add_test(s, "key does not match", test_err_key_mismatch);
    CU_add_test(s, "client CA without certificates", test_err_client_ca_no_cert);
    CU_add_test(s, "cipher, suite, group lists", test_err_cipher_lists);
    CU_add_test(s, "https without certificate", test_err_https_without_cert);
    CU_add_test(s, "self_signed and certificates", test_err_self_signed_and_certs);
    CU_add_test(s, "two default certificates", test_err_two_defaults);
    CU_add_test(s, "mTLS settings", test_err_mtls);
    CT_SUITE("conf cross-checks", {"no listener", test_err_no_listener},
             {"a token matches itself only", test_token_matches},
             {"address in use", test_err_address_in_use},
             {"addresses that don't clash", test_addresses_that_do_not_clash},
             {"redirect without https", test_err_redirect_without_https},
             {"no backend", test_err_no_backend}, {"cache.persist", test_err_persist},
             {"backend names, health path", test_err_backend_names},
             {"backend settings", test_backend_settings}, {"cache", test_err_cache},
             {"compression", test_compression},
             {"admin token", test_admin_token},
             {"logs", test_err_logs});
}
