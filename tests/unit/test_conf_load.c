/* tests/unit/test_conf_load.c: the embedded default, value syntaxes (units),
 * and every row-level error message of the loader with its FILE:LINE. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <unistd.h>
#include <openssl/ssl.h>

#include "conf/conf_int.h"
#include "tests/unit/test_conf_helpers.h"

/* ---- the embedded default (docs/usage.md) ------------------------------ */

static void test_default(void)
{
    struct ct_conf *cf = NULL;
    CU_ASSERT_EQUAL_FATAL(ct_conf_default(&cf), CT_OK);
    CU_ASSERT_EQUAL(cf->magic, CT_CONF_MAGIC);
    CU_ASSERT_EQUAL(cf->workers, 0);
    CU_ASSERT_EQUAL_FATAL(cf->nlisteners, 2);
    CU_ASSERT_EQUAL(cf->listeners[0].kind, CT_CONF_LISTEN_HTTP);
    CU_ASSERT_STRING_EQUAL(cf->listeners[0].addr.host, "127.0.0.1");
    CU_ASSERT_EQUAL(cf->listeners[0].addr.port, 8080);
    CU_ASSERT_EQUAL(cf->listeners[0].addr.sa.ss_family, AF_INET);
    CU_ASSERT_EQUAL(cf->listeners[1].kind, CT_CONF_LISTEN_HTTPS);
    CU_ASSERT_EQUAL(cf->listeners[1].addr.port, 8443);
    CU_ASSERT_TRUE(cf->listeners[1].tls.self_signed);
    CU_ASSERT_EQUAL(cf->listeners[1].tls.ncerts, 0);
    CU_ASSERT_EQUAL(cf->listeners[1].tls.min_version, TLS1_2_VERSION);
    CU_ASSERT_STRING_EQUAL(cf->listeners[1].tls.groups, "X25519:P-256");
    CU_ASSERT_PTR_NOT_NULL(strstr(cf->listeners[1].tls.ciphers, "ECDHE-ECDSA-AES128-GCM-SHA256"));
    CU_ASSERT_TRUE(cf->listeners[1].tls.session_tickets);
    CU_ASSERT_EQUAL(cf->listeners[1].tls.handshake_timeout_ms, 10000);
    CU_ASSERT_EQUAL(cf->listeners[1].tls.client_verify, CT_CONF_VERIFY_OFF);
    CU_ASSERT_PTR_NULL(cf->listeners[1].tls.client_ca);
    CU_ASSERT_TRUE(cf->listeners[0].honour_client_cc);
    CU_ASSERT_FALSE(cf->listeners[0].redirect_to_https);
    CU_ASSERT_EQUAL_FATAL(cf->nbackends, 1);
    CU_ASSERT_STRING_EQUAL(cf->backends[0].host, "127.0.0.1");
    CU_ASSERT_EQUAL(cf->backends[0].port, 8081);
    CU_ASSERT_STRING_EQUAL(cf->backends[0].name, "127.0.0.1:8081");
    CU_ASSERT_EQUAL(cf->backends[0].weight, 1);
    CU_ASSERT_EQUAL(cf->backends[0].connect_timeout_ms, 5000);
    CU_ASSERT_EQUAL(cf->backends[0].header_timeout_ms, 30000);
    CU_ASSERT_EQUAL(cf->backends[0].read_timeout_ms, 30000);
    CU_ASSERT_FALSE(cf->backends[0].health.enabled);
    CU_ASSERT_STRING_EQUAL(cf->backends[0].health.path, "/");
    CU_ASSERT_EQUAL(cf->cache.size_bytes, 256ull << 20);
    CU_ASSERT_EQUAL(cf->cache.default_ttl_ms, 0);
    CU_ASSERT_DOUBLE_EQUAL(cf->cache.heuristic_fraction, 0.1, 1e-12);
    CU_ASSERT_FALSE(cf->cache.store_set_cookie);
    CU_ASSERT_EQUAL(cf->cache.key_query, CT_CONF_QUERY_KEEP);
    CU_ASSERT_EQUAL(cf->cache.eviction, CT_CONF_EVICTION_SIEVE);
    CU_ASSERT_PTR_NULL(cf->cache.key_header);
    CU_ASSERT_STRING_EQUAL(cf->cache.targeted_cc, "Cachet-Cache-Control");
    CU_ASSERT_EQUAL_FATAL(cf->cache.npurge_allow, 2);
    CU_ASSERT_EQUAL(cf->cache.purge_allow[0].family, AF_INET);
    CU_ASSERT_EQUAL(cf->cache.purge_allow[0].prefix_len, 8);
    CU_ASSERT_EQUAL(cf->cache.purge_allow[1].family, AF_INET6);
    CU_ASSERT_EQUAL(cf->cache.purge_allow[1].prefix_len, 128);
    CU_ASSERT_EQUAL(cf->limits.max_request_line_bytes, 8192);
    CU_ASSERT_EQUAL(cf->limits.max_header_bytes, 65536);
    CU_ASSERT_EQUAL(cf->limits.max_header_count, 100);
    CU_ASSERT_EQUAL(cf->limits.max_body_bytes, 0);
    CU_ASSERT_EQUAL(cf->limits.client_header_timeout_ms, 10000);
    CU_ASSERT_EQUAL(cf->limits.keepalive_timeout_ms, 75000);
    CU_ASSERT_TRUE(cf->admin.enabled);
    CU_ASSERT_STRING_EQUAL(cf->admin.addr.host, "127.0.0.1");
    CU_ASSERT_EQUAL(cf->admin.addr.port, 8082);
    CU_ASSERT_STRING_EQUAL(cf->logs.error_log, "-");
    CU_ASSERT_EQUAL(cf->logs.level, CT_LOG_INFO);
    CU_ASSERT_PTR_NULL(cf->logs.access_log);
    CU_ASSERT_EQUAL(cf->logs.access_format, CT_CONF_ACCESS_COMBINED);
    ct_conf_free(&cf);
    CU_ASSERT_PTR_NULL(cf);
    ct_conf_free(&cf); /* NULL is fine */
}

/* A minimal file gets every default of the table, not zeroes. */
static void test_minimal_file_gets_defaults(void)
{
    struct ct_conf *cf;
    EXPECT_OK(BASE, &cf);
    CU_ASSERT_EQUAL(cf->cache.size_bytes, 256ull << 20);
    CU_ASSERT_EQUAL(cf->backends[0].health.rise, 2);
    CU_ASSERT_STRING_EQUAL(cf->source, "t.conf");
    ct_conf_free(&cf);
}

/* ---- units -------------------------------------------------------------- */

static void test_sizes(void)
{
    uint64_t v;
    CU_ASSERT_EQUAL(ct_conf_parse_size("512K", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 512 * 1024);
    CU_ASSERT_EQUAL(ct_conf_parse_size("256M", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 256ull << 20);
    CU_ASSERT_EQUAL(ct_conf_parse_size("1g", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 1ull << 30);
    CU_ASSERT_EQUAL(ct_conf_parse_size("2T", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 2ull << 40);
    CU_ASSERT_EQUAL(ct_conf_parse_size("1000", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 1000);
    CU_ASSERT_EQUAL(ct_conf_parse_size("", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_size("1.5G", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_size("10X", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_size("10MB", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_size("-1", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_size(" 1M", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_size("99999999999T", &v), CT_ECONF); /* overflow */
    CU_ASSERT_EQUAL(ct_conf_parse_size("99999999999999999999", &v), CT_ECONF);
    char buf[32];
    uint64_t samples[] = {0, 1, 1000, 1024, 1536, 256ull << 20, 3ull << 30, 5ull << 40};
    for (size_t i = 0; i < CT_ARRAY_LEN(samples); i++) {
        ct_conf_fmt_size(samples[i], buf, sizeof(buf));
        CU_ASSERT_EQUAL(ct_conf_parse_size(buf, &v), CT_OK);
        CU_ASSERT_EQUAL(v, samples[i]);
    }
    ct_conf_fmt_size(256ull << 20, buf, sizeof(buf));
    CU_ASSERT_STRING_EQUAL(buf, "256M");
}

static void test_durations(void)
{
    uint64_t v;
    CU_ASSERT_EQUAL(ct_conf_parse_dur("500ms", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 500);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("10s", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 10000);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("5m", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 300000);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("1h", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 3600000);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("2d", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 2 * 86400000ull);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("1m30s", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 90000);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("0", &v), CT_OK);
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("10", &v), CT_ECONF); /* a unit is required */
    CU_ASSERT_EQUAL(ct_conf_parse_dur("", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("1.5s", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("10sec", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("10 s", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("s", &v), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_dur("999999999999999999d", &v), CT_ECONF);
    char buf[32];
    uint64_t samples[] = {0, 1, 999, 1000, 1500, 60000, 90000, 3600000, 86400000};
    for (size_t i = 0; i < CT_ARRAY_LEN(samples); i++) {
        ct_conf_fmt_dur(samples[i], buf, sizeof(buf));
        CU_ASSERT_EQUAL(ct_conf_parse_dur(buf, &v), CT_OK);
        CU_ASSERT_EQUAL(v, samples[i]);
    }
    ct_conf_fmt_dur(90000, buf, sizeof(buf));
    CU_ASSERT_STRING_EQUAL(buf, "90s");
}

static void test_addresses(void)
{
    struct ct_conf_addr a;
    CU_ASSERT_EQUAL_FATAL(ct_conf_parse_addr("[::1]:8443", &a), CT_OK);
    CU_ASSERT_STRING_EQUAL(a.host, "::1");
    CU_ASSERT_EQUAL(a.port, 8443);
    CU_ASSERT_EQUAL(a.sa.ss_family, AF_INET6);
    ct_conf_addr_free(&a);
    CU_ASSERT_EQUAL_FATAL(ct_conf_parse_addr("*:80", &a), CT_OK);
    CU_ASSERT_STRING_EQUAL(a.host, "0.0.0.0");
    ct_conf_addr_free(&a);
    CU_ASSERT_EQUAL_FATAL(ct_conf_parse_addr("127.0.0.1:0", &a), CT_OK);
    CU_ASSERT_EQUAL(a.port, 0);
    CU_ASSERT_EQUAL(ntohs(((struct sockaddr_in *)&a.sa)->sin_port), 0);
    ct_conf_addr_free(&a);
    CU_ASSERT_EQUAL(ct_conf_parse_addr("localhost:80", &a), CT_ECONF); /* numeric only */
    CU_ASSERT_EQUAL(ct_conf_parse_addr("127.0.0.1", &a), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_addr("127.0.0.1:65536", &a), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_addr("::1:80", &a), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_addr("127.0.0.1:", &a), CT_ECONF);
    char *host;
    uint16_t port;
    CU_ASSERT_EQUAL_FATAL(ct_conf_parse_hostport("origin.example:80", &host, &port), CT_OK);
    CU_ASSERT_STRING_EQUAL(host, "origin.example");
    CU_ASSERT_EQUAL(port, 80);
    free(host);
    CU_ASSERT_EQUAL(ct_conf_parse_hostport("origin:0", &host, &port), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_hostport("bad_name:80", &host, &port), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_hostport("-bad:80", &host, &port), CT_ECONF);
    struct ct_conf_cidr c;
    CU_ASSERT_EQUAL(ct_conf_parse_cidr("10.0.0.0/8", &c), CT_OK);
    CU_ASSERT_EQUAL(c.prefix_len, 8);
    CU_ASSERT_EQUAL(ct_conf_parse_cidr("10.0.0.1", &c), CT_OK);
    CU_ASSERT_EQUAL(c.prefix_len, 32);
    CU_ASSERT_EQUAL(ct_conf_parse_cidr("10.0.0.1/8", &c), CT_ECONF); /* host bits set */
    CU_ASSERT_EQUAL(ct_conf_parse_cidr("10.0.0.0/33", &c), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_cidr("fe80::/10", &c), CT_OK);
    char *name;
    CU_ASSERT_EQUAL_FATAL(ct_conf_parse_server_name("*.Example.COM", &name), CT_OK);
    CU_ASSERT_STRING_EQUAL(name, "*.example.com");
    free(name);
    CU_ASSERT_EQUAL(ct_conf_parse_server_name("a.*.example.com", &name), CT_ECONF);
    CU_ASSERT_EQUAL(ct_conf_parse_server_name("*", &name), CT_ECONF);
}

/* The units reach the struct through a file. */
static void test_units_in_file(void)
{
    struct ct_conf *cf;
    EXPECT_OK(BASE "cache = { size = \"1G\"; max_object_size = 1048576; default_ttl = \"1m30s\";"
                   " heuristic_fraction = 0.25; grace = \"500ms\"; };\n"
                   "workers = 4;\n",
              &cf);
    CU_ASSERT_EQUAL(cf->cache.size_bytes, 1ull << 30);
    CU_ASSERT_EQUAL(cf->cache.max_object_bytes, 1048576);
    CU_ASSERT_EQUAL(cf->cache.default_ttl_ms, 90000);
    CU_ASSERT_DOUBLE_EQUAL(cf->cache.heuristic_fraction, 0.25, 1e-12);
    CU_ASSERT_EQUAL(cf->cache.grace_ms, 500);
    CU_ASSERT_EQUAL(cf->workers, 4);
    ct_conf_free(&cf);
}

/* ---- one test per loader error message ---------------------------------- */

static void test_err_syntax(void)
{
    EXPECT_ERR(BASE "cache = {\n  size = = \"1G\";\n};\n",
               "t.conf:4: syntax error (expected libconfig syntax: name = value;)");
}

static void test_err_cannot_open(void)
{
    struct ct_conf *cf;
    ct_conf_errors_init(&errs);
    CU_ASSERT_EQUAL(ct_conf_load_file("/nonexistent/cachet.conf", &cf, &errs), CT_ECONF);
    CU_ASSERT_PTR_NULL(cf);
    CU_ASSERT_TRUE(has_err("/nonexistent/cachet.conf: cannot open: No such file or directory"));
}

static void test_err_unknown_did_you_mean(void)
{
    EXPECT_ERR(BASE "cache = {\n  sise = \"1G\";\n};\n",
               "t.conf:4: cache.sise: unknown setting (did you mean \"size\"?)");
    EXPECT_ERR(BASE "\nlisten_address = 1;\n",
               "t.conf:4: listen_address: unknown setting (did you mean \"listen\"?)");
}

/* log.target as issue 40 writes it: the logs group under its singular name */
static void test_log_singular(void)
{
    struct ct_conf *cf;
    EXPECT_OK(BASE "log = { target = \"syslog\"; syslog_tag = \"edge\"; };\n", &cf);
    CU_ASSERT_EQUAL(cf->logs.target, CT_LOG_TO_SYSLOG);
    CU_ASSERT_STRING_EQUAL(cf->logs.syslog_tag, "edge");
    ct_conf_free(&cf);
    EXPECT_ERR(BASE "log = { target = \"pigeon\"; };\n",
               "t.conf:3: log.target: invalid value \"pigeon\" (expected one of \"file\", "
               "\"syslog\" or \"json\")");
    EXPECT_ERR(BASE "logs = { level = \"info\"; };\nlog = { target = \"json\"; };\n",
               "t.conf:4: log: given twice (as \"log\" and \"logs\"; expected one)");
}

static void test_err_unknown_expected(void)
{
    EXPECT_ERR(BASE "logs = { zzzzzz = 1; };\n",
               "t.conf:3: logs.zzzzzz: unknown setting (expected one of: error_log, level, "
               "access_log, access_format, target, syslog_facility, syslog_tag, syslog_socket)");
}

static void test_err_invalid_value(void)
{
    EXPECT_ERR(BASE "workers = \"many\";\n",
               "t.conf:3: workers: invalid value \"many\" (expected an integer from 1 to 1024, "
               "or \"auto\")");
    EXPECT_ERR(BASE "cache = { size = \"10X\"; };\n",
               "t.conf:3: cache.size: invalid value \"10X\" (expected a size such as 512K, "
               "256M, 1G or a byte count, from 1M to 1T)");
    EXPECT_ERR(BASE "cache = { grace = 10; };\n",
               "t.conf:3: cache.grace: invalid value 10 (expected a duration such as 500ms, "
               "10s, 5m or 1h, from 0s to 365d)");
    EXPECT_ERR(BASE "cache = { store_set_cookie = \"yes\"; };\n",
               "t.conf:3: cache.store_set_cookie: invalid value \"yes\" (expected true or false)");
    EXPECT_ERR(BASE "cache = { key_query = \"shuffle\"; };\n",
               "t.conf:3: cache.key_query: invalid value \"shuffle\" (expected one of \"keep\", "
               "\"drop\" or \"sort\")");
    EXPECT_ERR(BASE "cache = { eviction = \"lru\"; };\n",
               "t.conf:3: cache.eviction: invalid value \"lru\" (expected one of \"sieve\" "
               "or \"cost\")");
    EXPECT_ERR(BASE "cache = { heuristic_fraction = \"10%\"; };\n",
               "t.conf:3: cache.heuristic_fraction: invalid value \"10%\" (expected a number "
               "from 0.0 to 1.0)");
    EXPECT_ERR(BASE "logs = { error_log = 5; };\n",
               "t.conf:3: logs.error_log: invalid value 5 (expected a string)");
    EXPECT_ERR(BASE "logs = { access_log = \"\"; };\n",
               "t.conf:3: logs.access_log: invalid value \"\" (expected a non-empty string, or "
               "\"off\")");
    EXPECT_ERR(BASE "admin = { listen = \"localhost:8082\"; };\n",
               "t.conf:3: admin.listen: invalid value \"localhost:8082\" (expected \"IP:PORT\" "
               "such as \"127.0.0.1:8080\" or \"[::1]:8080\", or \"off\")");
    EXPECT_ERR(BASE "cache = 5;\n",
               "t.conf:3: cache: invalid value 5 (expected a group { ... })");
    EXPECT_ERR(BASE "cache = { purge_allow = [\"10.0.0.1/8\"]; };\n",
               "t.conf:3: cache.purge_allow[0]: invalid value \"10.0.0.1/8\" (expected address "
               "prefixes such as [\"127.0.0.0/8\", \"::1/128\"])");
}

static void test_err_invalid_list(void)
{
    EXPECT_ERR("listen = { kind = \"http\"; };\n"
               "backends = ( { address = \"127.0.0.1:8081\"; } );\n",
               "t.conf:1: listen: invalid value a group (expected a list of groups ( { ... }, "
               "... ))");
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
               "backends = ( \"127.0.0.1:8081\" );\n",
               "t.conf:2: backends[0]: invalid element \"127.0.0.1:8081\" (expected a list of "
               "groups ( { ... }, ... ))");
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:8080\"; } );\n"
               "backends = (\n  { address = \"127.0.0.1:0\"; }\n);\n",
               "t.conf:3: backends[0].address: invalid value \"127.0.0.1:0\" (expected "
               "\"HOST:PORT\" such as \"127.0.0.1:8081\" or \"origin.example:80\")");
}

static void test_err_out_of_range(void)
{
    EXPECT_ERR(BASE "workers = 0;\n",
               "t.conf:3: workers: out of range: 0 (expected an integer from 1 to 1024, or "
               "\"auto\")");
    EXPECT_ERR(BASE "cache = { size = \"512K\"; };\n",
               "t.conf:3: cache.size: out of range: \"512K\" (expected a size such as 512K, "
               "256M, 1G or a byte count, from 1M to 1T)");
    EXPECT_ERR(BASE "limits = { client_header_timeout = \"2h\"; };\n",
               "t.conf:3: limits.client_header_timeout: out of range: \"2h\" (expected a "
               "duration such as 500ms, 10s, 5m or 1h, from 100ms to 1h)");
    EXPECT_ERR(BASE "cache = { heuristic_fraction = 1.5; };\n",
               "t.conf:3: cache.heuristic_fraction: out of range: 1.5 (expected a number from "
               "0.0 to 1.0)");
    EXPECT_ERR(BASE "workers = -3;\n",
               "t.conf:3: workers: invalid value -3 (expected an integer from 1 to 1024, or "
               "\"auto\")");
}

static void test_err_missing(void)
{
    EXPECT_ERR("listen = (\n  { kind = \"http\"; }\n);\n"
               "backends = ( { address = \"127.0.0.1:8081\"; } );\n",
               "t.conf:2: listen[0].address: missing (expected \"IP:PORT\" such as "
               "\"127.0.0.1:8080\" or \"[::1]:8080\")");
}

static void test_err_not_allowed_here(void)
{
    EXPECT_ERR("backends = ( { address = \"127.0.0.1:8081\"; } );\n"
               "listen = ( { kind = \"http\"; address = \"127.0.0.1:80\";\n"
               "  tls = { self_signed = true; }; } );\n",
               "t.conf:3: listen[0].tls: not allowed here (only https listeners have tls "
               "settings)");
    EXPECT_ERR("backends = ( { address = \"127.0.0.1:8081\"; } );\n"
               "listen = ( { kind = \"https\"; address = \"127.0.0.1:443\";\n"
               "  tls = { self_signed = true; };\n  redirect_to_https = true; } );\n",
               "t.conf:4: listen[0].redirect_to_https: not allowed here (only http listeners "
               "redirect to https)");
}

/* Every error is reported, not only the first; past the cap they're counted. */
static void test_err_all_reported_and_capped(void)
{
    struct ct_conf *cf = load(BASE "workers = \"x\";\ncache = { size = \"x\"; grace = 1; };\n");
    CU_ASSERT_PTR_NULL(cf);
    CU_ASSERT_EQUAL(errs.n, 3);
    char text[8192] = BASE "cache = {\n";
    for (int i = 0; i < CT_CONF_MAX_ERRORS + 5; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "bad%d = 1;\n", i);
    snprintf(text + strlen(text), sizeof(text) - strlen(text), "};\n");
    cf = load(text);
    CU_ASSERT_PTR_NULL(cf);
    CU_ASSERT_EQUAL(errs.n, CT_CONF_MAX_ERRORS);
    CU_ASSERT_EQUAL(errs.dropped, 5);
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    ct_conf_errors_print(&errs, fp);
    fclose(fp);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "(5 more errors)\n"));
    free(buf);
}

/* Errors inside an @include'd file name that file. */
static void test_err_in_include(void)
{
    char dir[] = "/tmp/ct_conf_incXXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char main_path[256], inc_path[256];
    snprintf(main_path, sizeof(main_path), "%s/main.conf", dir);
    snprintf(inc_path, sizeof(inc_path), "%s/cache.conf", dir);
    FILE *fp = fopen(inc_path, "w");
    fputs("\n# the cache\ncache = { sizee = \"1G\"; };\n", fp);
    fclose(fp);
    fp = fopen(main_path, "w");
    fputs(BASE "@include \"cache.conf\"\n", fp);
    fclose(fp);
    struct ct_conf *cf;
    ct_conf_errors_init(&errs);
    CU_ASSERT_EQUAL(ct_conf_load_file(main_path, &cf, &errs), CT_ECONF);
    char want[512];
    snprintf(want, sizeof(want), "%s:3: cache.sizee: unknown setting (did you mean \"size\"?)",
             inc_path);
    CU_ASSERT_TRUE(has_err(want));
    unlink(inc_path);
    unlink(main_path);
    rmdir(dir);
}

void ct_test_register(void)
{
    CT_SUITE("conf defaults", {"embedded default is the documented one", test_default},
             {"a minimal file gets the table's defaults", test_minimal_file_gets_defaults});
    CT_SUITE("conf units", {"sizes", test_sizes}, {"durations", test_durations},
             {"addresses, prefixes, server names", test_addresses},
             {"units in a file", test_units_in_file});
    CT_SUITE("conf load errors", {"syntax error", test_err_syntax},
             {"cannot open", test_err_cannot_open},
             {"unknown setting, did you mean", test_err_unknown_did_you_mean},
             {"log is the logs group", test_log_singular},
             {"unknown setting, expected one of", test_err_unknown_expected},
             {"invalid value per type", test_err_invalid_value},
             {"invalid list", test_err_invalid_list}, {"out of range", test_err_out_of_range},
             {"missing required", test_err_missing}, {"not allowed here", test_err_not_allowed_here},
             {"all reported, capped", test_err_all_reported_and_capped},
             {"error inside an include", test_err_in_include});
}
