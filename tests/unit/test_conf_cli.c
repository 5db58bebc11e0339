/* tests/unit/test_conf_cli.c: cachet's command line: parsing (one test per
 * message), and the overrides winning over the file and the default. */
#include <stdlib.h>
#include <unistd.h>

#include "tests/unit/test_conf_helpers.h"

static struct ct_cli cli;
static char err[1024];

/* Parse a NULL-terminated list of arguments (argv[0] is added). */
#define PARSE(...)                                                                                 \
    ({                                                                                             \
        char *argv_[] = {"cachet", __VA_ARGS__, NULL};                                             \
        ct_conf_cli_parse((int)CT_ARRAY_LEN(argv_) - 1, argv_, &cli, err, sizeof(err));            \
    })

#define EXPECT_CLI_ERR(msg, ...)                                                                   \
    do {                                                                                           \
        CU_ASSERT_EQUAL(PARSE(__VA_ARGS__), CT_ECONF);                                             \
        CU_ASSERT_STRING_EQUAL(err, msg);                                                          \
    } while (0)

static struct ct_conf *build(void)
{
    struct ct_conf *cf = NULL;
    ct_conf_errors_init(&errs);
    int rc = ct_conf_build(&cli, &cf, &errs);
    CU_ASSERT_EQUAL(rc == CT_OK, cf != NULL);
    if (rc != CT_OK && errs.n == 0)
        CU_FAIL("failed without an error message");
    return cf;
}

static char conf_path[64];

static void write_conf(const char *text)
{
    snprintf(conf_path, sizeof(conf_path), "/tmp/ct_conf_cliXXXXXX");
    int fd = mkstemp(conf_path);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* ---- parsing ---------------------------------------------------------------- */

static void test_parse_all(void)
{
    CU_ASSERT_EQUAL_FATAL(PARSE("-c", "x.conf", "-t", "--http", "127.0.0.1:0", "--http=[::1]:0",
                                "--https", "off", "--backend", "a.example:81", "--backend",
                                "127.0.0.1:82", "--cert", "c.pem", "--key", "k.pem", "--cache-size",
                                "1G", "--workers", "3", "--admin=off", "--log-level", "debug",
                                "--access-log", "-"),
                          CT_OK);
    CU_ASSERT_STRING_EQUAL(cli.conf_file, "x.conf");
    CU_ASSERT_TRUE(cli.test_only);
    CU_ASSERT_FALSE(cli.dump);
    CU_ASSERT_EQUAL(cli.nhttp, 2);
    CU_ASSERT_STRING_EQUAL(cli.http[1], "[::1]:0");
    CU_ASSERT_EQUAL(cli.nhttps, 1);
    CU_ASSERT_EQUAL(cli.nbackend, 2);
    CU_ASSERT_STRING_EQUAL(cli.backend[0], "a.example:81");
    CU_ASSERT_STRING_EQUAL(cli.cert_file, "c.pem");
    CU_ASSERT_STRING_EQUAL(cli.cache_size, "1G");
    CU_ASSERT_STRING_EQUAL(cli.workers, "3");
    CU_ASSERT_STRING_EQUAL(cli.admin, "off");
    CU_ASSERT_STRING_EQUAL(cli.log_level, "debug");
    CU_ASSERT_STRING_EQUAL(cli.access_log, "-");
    CU_ASSERT_EQUAL(PARSE("-cfile.conf", "-T"), CT_OK);
    CU_ASSERT_STRING_EQUAL(cli.conf_file, "file.conf");
    CU_ASSERT_TRUE(cli.dump);
    CU_ASSERT_EQUAL(PARSE("--version"), CT_OK);
    CU_ASSERT_TRUE(cli.version);
    CU_ASSERT_EQUAL(PARSE("-h"), CT_OK);
    CU_ASSERT_TRUE(cli.help);
    char *none[] = {"cachet", NULL};
    CU_ASSERT_EQUAL(ct_conf_cli_parse(1, none, &cli, err, sizeof(err)), CT_OK);
    CU_ASSERT_PTR_NULL(cli.conf_file);
    CU_ASSERT_EQUAL(cli.nhttp, 0);
}

static void test_parse_errors(void)
{
    EXPECT_CLI_ERR("command line (--htp): unknown option (did you mean --http?)", "--htp", "x");
    EXPECT_CLI_ERR("command line (--frobnicate): unknown option (try --help)", "--frobnicate=1");
    EXPECT_CLI_ERR("command line (-x): unknown option (try --help)", "-x");
    EXPECT_CLI_ERR("command line (extra): unexpected argument (expected options; try --help)",
                   "extra");
    EXPECT_CLI_ERR(
        "command line (--http): missing value (expected IP:PORT such as 127.0.0.1:8080 or "
        "[::1]:8080, or off)",
        "--http");
    EXPECT_CLI_ERR(
        "command line (--http): invalid value \"localhost:80\" (expected IP:PORT such as "
        "127.0.0.1:8080 or [::1]:8080, or off)",
        "--http", "localhost:80");
    EXPECT_CLI_ERR(
        "command line (--backend): invalid value \"a.example\" (expected HOST:PORT such as "
        "127.0.0.1:8081, or https://HOST:PORT)",
        "--backend", "a.example");
    EXPECT_CLI_ERR(
        "command line (--backend): invalid value \"https://a.example\" (expected HOST:PORT such "
        "as 127.0.0.1:8081, or https://HOST:PORT)",
        "--backend", "https://a.example");
    EXPECT_CLI_ERR(
        "command line (--cache-size): invalid value \"lots\" (expected a size such as 256M or 1G)",
        "--cache-size", "lots");
    EXPECT_CLI_ERR("command line (--workers): invalid value \"0\" (expected 1 to 1024, or auto)",
                   "--workers", "0");
    EXPECT_CLI_ERR(
        "command line (--log-level): invalid value \"loud\" (expected debug, info, warn or error)",
        "--log-level", "loud");
    EXPECT_CLI_ERR("command line (--cache-size): given twice (expected it once)", "--cache-size",
                   "1G", "--cache-size", "2G");
    EXPECT_CLI_ERR("command line (--cert): given without --key (expected both)", "--cert", "c.pem");
    EXPECT_CLI_ERR("command line (--key): given without --cert (expected both)", "--key", "k.pem");
    EXPECT_CLI_ERR("command line (-t, -T): both given (expected one of them)", "-t", "-T");
    EXPECT_CLI_ERR(
        "command line (--https): off together with addresses (expected one or the other)",
        "--https", "127.0.0.1:0", "--https", "off");
    EXPECT_CLI_ERR("command line (--version): takes no value", "--version=2");
    EXPECT_CLI_ERR("command line (-tT): unknown option (try --help)", "-tT");
    EXPECT_CLI_ERR("command line (--config): invalid value \"\" (expected a file name)", "-c", "");
    /* every bad option, not only the first (issue 40) */
    EXPECT_CLI_ERR("command line (--cache-size): invalid value \"12X\" (expected a size such as "
                   "256M or 1G)\ncommand line (--workers): invalid value \"many\" (expected 1 "
                   "to 1024, or auto)\ncommand line (--cahce-size): unknown option (did you mean "
                   "--cache-size?)\ncommand line (--key): given without --cert (expected both)",
                   "--cache-size", "12X", "--workers", "many", "--cahce-size", "1G", "--key",
                   "k.pem");
}

static void test_parse_repeat_cap(void)
{
    char *argv[2 * CT_CLI_MAX_REPEAT + 4] = {"cachet"};
    int argc = 1;
    for (int i = 0; i <= CT_CLI_MAX_REPEAT; i++) {
        argv[argc++] = "--backend";
        argv[argc++] = "127.0.0.1:81";
    }
    CU_ASSERT_EQUAL(ct_conf_cli_parse(argc, argv, &cli, err, sizeof(err)), CT_ECONF);
    CU_ASSERT_STRING_EQUAL(err, "command line (--backend): given more than 16 times");
}

static void test_usage(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    ct_conf_cli_usage("cachet", fp);
    fclose(fp);
    const char *opts[] = {"-c, --config", "-t",        "-T",          "--version",   "--http",
                          "--https",      "--backend", "--cert",      "--key",       "--cache-size",
                          "--workers",    "--admin",   "--log-level", "--access-log"};
    for (size_t i = 0; i < CT_ARRAY_LEN(opts); i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, opts[i]));
    free(buf);
}

/* ---- overrides --------------------------------------------------------------- */

/* No file: the embedded default; overrides change it. */
static void test_default_with_overrides(void)
{
    CU_ASSERT_EQUAL_FATAL(PARSE("--http", "127.0.0.1:0", "--https", "127.0.0.1:0", "--backend",
                                "127.0.0.1:9001", "--backend", "o.example:9002", "--cache-size",
                                "64M", "--workers", "2", "--admin", "127.0.0.1:0", "--log-level",
                                "warn", "--access-log", "-"),
                          CT_OK);
    struct ct_conf *cf = build();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    CU_ASSERT_STRING_EQUAL(cf->source, "<default>");
    CU_ASSERT_EQUAL_FATAL(cf->nlisteners, 2);
    CU_ASSERT_EQUAL(cf->listeners[0].kind, CT_CONF_LISTEN_HTTP);
    CU_ASSERT_EQUAL(cf->listeners[0].addr.port, 0);
    CU_ASSERT_EQUAL(cf->listeners[1].kind, CT_CONF_LISTEN_HTTPS);
    CU_ASSERT_EQUAL(cf->listeners[1].addr.port, 0);
    CU_ASSERT_TRUE(cf->listeners[1].tls.self_signed);
    CU_ASSERT_EQUAL_FATAL(cf->nbackends, 2);
    CU_ASSERT_EQUAL(cf->backends[0].port, 9001);
    CU_ASSERT_STRING_EQUAL(cf->backends[1].name, "o.example:9002");
    CU_ASSERT_EQUAL(cf->cache.size_bytes, 64ull << 20);
    CU_ASSERT_EQUAL(cf->workers, 2);
    CU_ASSERT_EQUAL(cf->admin.addr.port, 0);
    CU_ASSERT_TRUE(cf->admin.enabled);
    CU_ASSERT_EQUAL(cf->logs.level, CT_LOG_WARN);
    CU_ASSERT_STRING_EQUAL(cf->logs.access_log, "-");
    ct_conf_free(&cf);

    CU_ASSERT_EQUAL_FATAL(PARSE("--https", "off", "--admin", "off", "--access-log", "off"), CT_OK);
    cf = build();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    CU_ASSERT_EQUAL(cf->nlisteners, 1);
    CU_ASSERT_EQUAL(cf->listeners[0].kind, CT_CONF_LISTEN_HTTP);
    CU_ASSERT_FALSE(cf->admin.enabled);
    CU_ASSERT_PTR_NULL(cf->logs.access_log);
    ct_conf_free(&cf);
}

#define FILE_CONF                                                                                  \
    "listen = (\n"                                                                                 \
    "  { kind = \"http\"; address = \"127.0.0.1:8080\"; redirect_to_https = true; },\n"            \
    "  { kind = \"https\"; address = \"127.0.0.1:8443\";\n"                                        \
    "    tls = { self_signed = true; min_version = \"1.3\"; }; }\n"                                \
    ");\n"                                                                                         \
    "backends = ( { name = \"o\"; address = \"127.0.0.1:8081\"; connect_timeout = \"2s\"; } );\n"  \
    "cache = { size = \"128M\"; max_object_size = \"1M\"; };\n"                                    \
    "workers = 6;\n"

/* The file wins over the defaults, the command line over the file; a single
 * listener of a kind keeps its settings and only moves. */
static void test_file_with_overrides(void)
{
    write_conf(FILE_CONF);
    CU_ASSERT_EQUAL_FATAL(PARSE("-c", conf_path, "--http", "127.0.0.1:0", "--https", "127.0.0.1:0",
                                "--cache-size", "32M", "--backend", "127.0.0.1:7001", "--backend",
                                "127.0.0.1:7002"),
                          CT_OK);
    struct ct_conf *cf = build();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    CU_ASSERT_STRING_EQUAL(cf->source, conf_path);
    CU_ASSERT_EQUAL_FATAL(cf->nlisteners, 2);
    CU_ASSERT_EQUAL(cf->listeners[0].addr.port, 0);
    CU_ASSERT_TRUE(cf->listeners[0].redirect_to_https); /* kept from the file */
    CU_ASSERT_EQUAL(cf->listeners[1].addr.port, 0);
    CU_ASSERT_EQUAL(cf->listeners[1].tls.min_version, 0x0304); /* kept: TLS1_3_VERSION */
    CU_ASSERT_EQUAL(cf->cache.size_bytes, 32ull << 20);        /* CLI over file */
    CU_ASSERT_EQUAL(cf->cache.max_object_bytes, 1ull << 20);   /* file over default */
    CU_ASSERT_EQUAL(cf->workers, 6);                           /* file */
    CU_ASSERT_EQUAL(cf->limits.keepalive_timeout_ms, 75000);   /* default */
    CU_ASSERT_EQUAL_FATAL(cf->nbackends, 2);
    /* CLI backends take the file's first backend's settings, and their own names */
    CU_ASSERT_EQUAL(cf->backends[0].connect_timeout_ms, 2000);
    CU_ASSERT_EQUAL(cf->backends[1].connect_timeout_ms, 2000);
    CU_ASSERT_STRING_EQUAL(cf->backends[0].name, "127.0.0.1:7001");
    CU_ASSERT_STRING_EQUAL(cf->backends[1].port == 7002 ? "ok" : "bad", "ok");
    ct_conf_free(&cf);

    /* Without overrides the file stands as written */
    CU_ASSERT_EQUAL_FATAL(PARSE("-c", conf_path), CT_OK);
    cf = build();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    CU_ASSERT_EQUAL(cf->listeners[0].addr.port, 8080);
    CU_ASSERT_EQUAL(cf->cache.size_bytes, 128ull << 20);
    CU_ASSERT_STRING_EQUAL(cf->backends[0].name, "o");
    ct_conf_free(&cf);
    unlink(conf_path);
}

/* Two --https replace the file's one; the replaced listener's place is kept. */
static void test_listener_replacement(void)
{
    write_conf(FILE_CONF);
    CU_ASSERT_EQUAL_FATAL(
        PARSE("-c", conf_path, "--https", "127.0.0.1:0", "--https", "[::1]:0", "--http", "off"),
        CT_OK);
    struct ct_conf *cf = build();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    CU_ASSERT_EQUAL_FATAL(cf->nlisteners, 2);
    CU_ASSERT_EQUAL(cf->listeners[0].kind, CT_CONF_LISTEN_HTTPS);
    CU_ASSERT_EQUAL(cf->listeners[1].kind, CT_CONF_LISTEN_HTTPS);
    CU_ASSERT_STRING_EQUAL(cf->listeners[1].addr.host, "::1");
    CU_ASSERT_EQUAL(cf->listeners[0].tls.min_version, 0x0303); /* new: defaults */
    CU_ASSERT_TRUE(cf->listeners[0].tls.self_signed);
    ct_conf_free(&cf);
    unlink(conf_path);
}

/* An error after listeners were renumbered still points at the file line. */
static void test_locations_survive_overrides(void)
{
    write_conf(
        "listen = (\n"
        "  { kind = \"http\"; address = \"127.0.0.1:8080\"; },\n"
        "  { kind = \"https\"; address = \"127.0.0.1:8443\"; tls = { self_signed = true; }; },\n"
        "  { kind = \"http\"; address = \"127.0.0.1:8081\"; },\n"
        "  { kind = \"https\"; address = \"127.0.0.1:8444\";\n"
        "    tls = { self_signed = true; client_verify = \"required\"; }; }\n"
        ");\n"
        "backends = ( { address = \"127.0.0.1:9\"; } );\n");
    CU_ASSERT_EQUAL_FATAL(PARSE("-c", conf_path, "--http", "127.0.0.1:0"), CT_OK);
    CU_ASSERT_PTR_NULL(build());
    char want[256];
    /* listen[3] of the file became listen[2]: the http ones collapsed into one */
    snprintf(want, sizeof(want),
             "%s:6: listen[2].tls.client_verify: client certificates verified against nothing "
             "(expected client_ca = \"FILE\" with it)",
             conf_path);
    CU_ASSERT_TRUE(has_err(want));
    unlink(conf_path);
}

static void test_override_errors(void)
{
    CU_ASSERT_EQUAL_FATAL(PARSE("--https", "off", "--cert", "c.pem", "--key", "k.pem"), CT_OK);
    CU_ASSERT_PTR_NULL(build());
    CU_ASSERT_TRUE(has_err("command line (--cert): no https listener to use it (expected "
                           "--https ADDR:PORT, or an https listener in the file)"));
    CU_ASSERT_EQUAL_FATAL(PARSE("--cache-size", "2T"), CT_OK);
    CU_ASSERT_PTR_NULL(build());
    CU_ASSERT_TRUE(has_err("command line (--cache-size): cache.size: out of range: \"2T\" "
                           "(expected a size such as 512K, 256M, 1G or a byte count, from 1M "
                           "to 1T)"));
    /* below the default 16M object cap: the unset cap follows (1/16) */
    CU_ASSERT_EQUAL_FATAL(PARSE("--cache-size", "8M"), CT_OK);
    struct ct_conf *cf = build();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    CU_ASSERT_EQUAL(cf->cache.max_object_bytes, 512 * 1024);
    ct_conf_free(&cf);
    CU_ASSERT_EQUAL_FATAL(PARSE("--http", "127.0.0.1:8443"), CT_OK);
    CU_ASSERT_PTR_NULL(build());
    CU_ASSERT_TRUE(has_err("<default>:3: listen[1].address: address 127.0.0.1:8443 is already "
                           "used by listen[0].address at command line (--http) (expected a "
                           "distinct IP:PORT)"));
    CU_ASSERT_EQUAL_FATAL(PARSE("--cert", "/nonexistent.pem", "--key", "/nonexistent.key"), CT_OK);
    CU_ASSERT_PTR_NULL(build());
    CU_ASSERT_TRUE(has_err("command line (--cert): listen[1].tls.certificates[0].cert: cannot "
                           "read \"/nonexistent.pem\": No such file or directory (expected a "
                           "readable PEM file)"));
    CU_ASSERT_EQUAL_FATAL(PARSE("-c", "/nonexistent.conf"), CT_OK);
    CU_ASSERT_PTR_NULL(build());
    CU_ASSERT_TRUE(has_err("/nonexistent.conf: cannot open: No such file or directory"));
}

/* --cert stands in for a file certificate that can't be read: overrides go in
 * before the cross-checks. */
static void test_cert_override_replaces_file_certs(void)
{
    write_conf(
        "listen = ( { kind = \"https\"; address = \"127.0.0.1:8443\";\n"
        "  tls = { certificates = ( { cert = \"/gone.pem\"; key = \"/gone.key\"; } ); }; } );\n"
        "backends = ( { address = \"127.0.0.1:9\"; } );\n");
    CU_ASSERT_EQUAL_FATAL(PARSE("-c", conf_path), CT_OK);
    CU_ASSERT_PTR_NULL(build());
    CU_ASSERT_EQUAL_FATAL(PARSE("-c", conf_path, "--cert", "/also-gone.pem", "--key", "/k"), CT_OK);
    CU_ASSERT_PTR_NULL(build());
    /* the errors name the CLI's files, not the file's */
    CU_ASSERT_TRUE(has_err("command line (--cert): listen[0].tls.certificates[0].cert: cannot "
                           "read \"/also-gone.pem\": No such file or directory (expected a "
                           "readable PEM file)"));
    for (size_t i = 0; i < errs.n; i++)
        CU_ASSERT_PTR_NULL(strstr(errs.msg[i], "/gone.pem"));
    unlink(conf_path);
}

/* --backend https:// speaks TLS (verified against the system store, or
 * --backend-ca), http:// and a bare address do not. */
static void test_backend_tls_overrides(void)
{
    CU_ASSERT_EQUAL_FATAL(PARSE("--backend", "https://origin.example:443", "--backend",
                                "http://127.0.0.1:8081", "--backend", "127.0.0.1:8082"),
                          CT_OK);
    struct ct_conf *cf = build();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    CU_ASSERT_EQUAL_FATAL(cf->nbackends, 3);
    CU_ASSERT_TRUE(cf->backends[0].tls.on);
    CU_ASSERT_STRING_EQUAL(cf->backends[0].host, "origin.example");
    CU_ASSERT_EQUAL(cf->backends[0].port, 443);
    CU_ASSERT_STRING_EQUAL(cf->backends[0].tls.ca, "system");
    CU_ASSERT_FALSE(cf->backends[1].tls.on);
    CU_ASSERT_STRING_EQUAL(cf->backends[1].host, "127.0.0.1");
    CU_ASSERT_FALSE(cf->backends[2].tls.on);
    ct_conf_free(&cf);
    CU_ASSERT_EQUAL_FATAL(PARSE("--backend", "https://origin.example:443", "--backend-ca",
                                "/nonexistent-ca.pem"),
                          CT_OK);
    CU_ASSERT_PTR_NULL(build());
    CU_ASSERT_TRUE(has_err("command line (--backend-ca): backends[0].tls.ca: cannot read "
                           "\"/nonexistent-ca.pem\": No such file or directory (expected a "
                           "readable PEM file)"));
    CU_ASSERT_EQUAL_FATAL(PARSE("--backend", "127.0.0.1:8081", "--backend-ca", "/ca.pem"), CT_OK);
    CU_ASSERT_PTR_NULL(build());
    CU_ASSERT_TRUE(has_err("command line (--backend-ca): no TLS backend to use it (expected "
                           "--backend https://HOST:PORT, or a backend with a tls group in the "
                           "file)"));
}

void ct_test_register(void)
{
    CT_SUITE("conf command line", {"parse every option", test_parse_all},
             {"parse errors", test_parse_errors}, {"repeat cap", test_parse_repeat_cap},
             {"usage", test_usage});
    CT_SUITE("conf overrides", {"default + overrides", test_default_with_overrides},
             {"file + overrides precedence", test_file_with_overrides},
             {"listener replacement", test_listener_replacement},
             {"locations survive renumbering", test_locations_survive_overrides},
             {"override errors", test_override_errors},
             {"--cert replaces file certificates", test_cert_override_replaces_file_certs},
             {"--backend https:// and --backend-ca", test_backend_tls_overrides});
}
