/* tests/unit/test_conf_dump.c: `cachet -T` output loads back identically;
 * the example conf/cachet.conf loads without errors; docs/config.md's
 * configuration reference is the one generated from the schema table.
 * Source files are found with src_path(). */
#include <stdlib.h>
#include <unistd.h>

#include "tests/unit/test_conf_helpers.h"

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(fp);
    if (!buf)
        buf = calloc(1, 1);
    buf[len] = '\0';
    return buf;
}

/* dump -> load -> dump gives the same text (after the comment naming the
 * source), and that text is the configuration's every value. */
static void round_trip(const struct ct_conf *cf)
{
    char *d1 = dump_text(cf);
    struct ct_conf *again = load(d1);
    if (!again)
        fprintf(stderr, "%s", d1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(again);
    char *d2 = dump_text(again);
    CU_ASSERT_STRING_EQUAL(strchr(d1, '\n'), strchr(d2, '\n'));
    ct_conf_free(&again);
    free(d1);
    free(d2);
}

static void test_round_trip_default(void)
{
    struct ct_conf *cf;
    CU_ASSERT_EQUAL_FATAL(ct_conf_default(&cf), CT_OK);
    round_trip(cf);
    char *d = dump_text(cf);
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "  size = \"256M\";\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "workers = \"auto\";\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "self_signed = true;"));
    free(d);
    ct_conf_free(&cf);
}

/* Every value away from its default, awkward strings included. */
static void test_round_trip_everything(void)
{
    char dir[] = "/tmp/ct_conf_dumpXXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char crt[128], key[128], text[8192];
    snprintf(crt, sizeof(crt), "%s/c.pem", dir);
    snprintf(key, sizeof(key), "%s/k.pem", dir);
    CU_ASSERT_EQUAL_FATAL(write_pair(crt, key, "example.com"), 0);
    snprintf(text, sizeof(text),
             "workers = 3;\n"
             "listen = ( { kind = \"https\"; address = \"[::1]:0\"; honour_client_cache_control = false;\n"
             "  tls = { certificates = ( { cert = \"%s\"; key = \"%s\";\n"
             "      server_names = [\"example.com\", \"*.example.org\"]; default = true; } );\n"
             "    min_version = \"1.3\"; ciphers = \"ECDHE-RSA-AES128-GCM-SHA256\";\n"
             "    session_tickets = false; ticket_key_rotation = \"90m\"; session_cache = false;\n"
             "    session_cache_size = 7; handshake_timeout = \"1500ms\"; ktls = true;\n"
             "    client_ca = \"%s\"; client_verify = \"optional\";\n"
             "    client_subject_header = \"X-Client-DN\"; }; },\n"
             "  { kind = \"http\"; address = \"*:0\"; redirect_to_https = true; redirect_port = 8443; } );\n"
             "backends = ( { name = \"a \\\"quoted\\\" name\\\\\"; address = \"o.example:81\"; weight = 9;\n"
             "  connect_timeout = \"1ms\"; response_header_timeout = \"1m30s\"; read_timeout = \"45m\";\n"
             "  pool_max_idle = 0; pool_idle_timeout = \"3s\"; max_fails = 0; fail_timeout = \"59m\";\n"
             "  health_check = { enabled = true; interval = \"100ms\"; timeout = \"10ms\"; path = \"/h?x=1\";\n"
             "    expect_status = 204; rise = 100; fall = 1; }; },\n"
             "  { address = \"[::1]:82\"; } );\n"
             "cache = { size = \"1536K\"; max_object_size = 1000; default_ttl = \"5m\";\n"
             "  heuristic_fraction = 0.3333333333333333; heuristic_max = \"0s\"; grace = \"1h\"; keep = \"2d\";\n"
             "  stale_if_error = \"10m\"; store_set_cookie = true; key_query = \"sort\";\n"
             "  key_header = \"Accept-Language\"; targeted_cache_control = \"X-CC\"; hit_for_miss = \"0s\";\n"
             "  waiter_timeout = \"1ms\"; waiter_timeout_action = \"fetch\"; eviction = \"cost\";\n"
             "  purge_allow = [\"10.0.0.0/8\", \"fe80::/10\", \"192.0.2.7\"]; };\n"
             "limits = { max_request_line = 100; max_header_bytes = \"1K\"; max_header_count = 1;\n"
             "  max_body = \"1T\"; client_header_timeout = \"100ms\"; keepalive_timeout = \"0s\";\n"
             "  send_timeout = \"1h\"; max_connections_per_worker = 1; drain_timeout = \"0s\"; };\n"
             "admin = { listen = \"off\"; };\n"
             "logs = { error_log = \"/tmp/tab\\there.log\"; level = \"debug\"; access_log = \"-\";\n"
             "  access_format = \"json\"; };\n",
             crt, key, crt);
    struct ct_conf *cf;
    EXPECT_OK(text, &cf);
    round_trip(cf);
    CU_ASSERT_STRING_EQUAL(cf->backends[0].name, "a \"quoted\" name\\");
    CU_ASSERT_STRING_EQUAL(cf->logs.error_log, "/tmp/tab\there.log");
    CU_ASSERT_DOUBLE_EQUAL(cf->cache.heuristic_fraction, 0.3333333333333333, 0);
    CU_ASSERT_EQUAL(cf->cache.npurge_allow, 3);
    CU_ASSERT_EQUAL(cf->listeners[0].tls.ticket_key_rotation_ms, 90 * 60000);
    ct_conf_free(&cf);
    unlink(crt);
    unlink(key);
    rmdir(dir);
}

static void test_example_loads(void)
{
    char path[512];
    src_path("conf/cachet.conf", path, sizeof(path));
    struct ct_conf *cf = NULL;
    ct_conf_errors_init(&errs);
    int rc = ct_conf_load_file(path, &cf, &errs);
    if (rc != CT_OK)
        ct_conf_errors_print(&errs, stderr);
    CU_ASSERT_EQUAL_FATAL(rc, CT_OK);
    CU_ASSERT_EQUAL(errs.n, 0);
    /* the deployment it describes: TLS on 8443, cache, cachet-origin on 8081 */
    CU_ASSERT_EQUAL_FATAL(cf->nlisteners, 2);
    CU_ASSERT_EQUAL(cf->listeners[0].kind, CT_CONF_LISTEN_HTTPS);
    CU_ASSERT_EQUAL(cf->listeners[0].addr.port, 8443);
    CU_ASSERT_EQUAL_FATAL(cf->nbackends, 1);
    CU_ASSERT_EQUAL(cf->backends[0].port, 8081);
    CU_ASSERT_EQUAL(cf->cache.size_bytes, 256ull << 20);
    round_trip(cf);
    ct_conf_free(&cf);
    /* and through the startup path, as `cachet -t -c conf/cachet.conf` */
    struct ct_cli cli;
    char err[256];
    char *argv[] = {"cachet", "-t", "-c", path, NULL};
    CU_ASSERT_EQUAL_FATAL(ct_conf_cli_parse(4, argv, &cli, err, sizeof(err)), CT_OK);
    ct_conf_errors_init(&errs);
    CU_ASSERT_EQUAL(ct_conf_build(&cli, &cf, &errs), CT_OK);
    ct_conf_free(&cf);
}

/* The generated reference table (caller frees). */
static char *reference(void)
{
    char *ref = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&ref, &len);
    ct_conf_print_reference(fp);
    fclose(fp);
    return ref;
}

/* Where the generated reference lives: the "## Reference" section of
 * docs/config.md (scripts/sync-conf-reference.py pastes it there). */
#define REF_DOC "docs/config.md"
#define REF_SECTION "\n## Reference\n"

/* docs/config.md's "## Reference" holds the generated table verbatim: every
 * key, its type, default and help. */
static void test_doc_reference(void)
{
    char path[512];
    src_path(REF_DOC, path, sizeof(path));
    char *doc = slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    char *sec = strstr(doc, REF_SECTION);
    if (!sec)
        fprintf(stderr, "%s has no \"%s\" section\n", REF_DOC, REF_SECTION + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
    char *end = strstr(sec + 1, "\n## ");
    if (end)
        *end = '\0';
    char *ref = reference();
    size_t nkeys = 0;
    for (char *line = ref; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "| `", 3) != 0)
            continue;
        char key[160];
        size_t n = strcspn(line + 2, "|") - 1;
        snprintf(key, sizeof(key), "%.*s", (int)n, line + 2);
        nkeys++;
        if (!strstr(sec, key)) {
            fprintf(stderr, "%s reference lacks %s\n", REF_DOC, key);
            CU_FAIL("key missing from docs/config.md");
        }
    }
    CU_ASSERT(nkeys > 70);
    if (!strstr(sec, ref)) {
        /* leave the fresh table next to the test binary's working directory */
        FILE *out = fopen("conf_reference.md", "w");
        if (out) {
            fputs(ref, out);
            fclose(out);
        }
        fprintf(stderr,
                "%s's reference differs from ct_conf_print_reference(): run "
                "scripts/sync-conf-reference.py (it pastes conf_reference.md, written "
                "in the test's directory), then this test again\n",
                REF_DOC);
        CU_FAIL("docs/config.md reference out of date");
    }
    free(ref);
    free(doc);
}

/* cachet.conf(5) holds the roff reference between its BEGIN and END
 * REFERENCE lines verbatim (issue 40: the man page never drifts from the
 * schema). On a difference the fresh block goes to cachet.conf.5.ref in the
 * test's directory for scripts/sync-conf-reference.py. */
#define MAN_DOC "docs/man/cachet.conf.5"
#define MAN_BEGIN ".\\\" BEGIN REFERENCE (generated: ct_conf_print_reference_man)\n"
#define MAN_END ".\\\" END REFERENCE\n"

static void test_man_reference(void)
{
    char path[512];
    src_path(MAN_DOC, path, sizeof(path));
    char *doc = slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    char *begin = strstr(doc, MAN_BEGIN), *end = begin ? strstr(begin, MAN_END) : NULL;
    if (!begin || !end)
        fprintf(stderr, "%s lacks its BEGIN/END REFERENCE lines\n", MAN_DOC);
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    begin += strlen(MAN_BEGIN);
    *end = '\0';
    char *man = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&man, &len);
    ct_conf_print_reference_man(fp);
    fclose(fp);
    /* every key of the Markdown table has its own entry */
    char *ref = reference();
    size_t nkeys = 0;
    for (char *line = ref; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "| `", 3) != 0)
            continue;
        char key[160], entry[200];
        snprintf(key, sizeof(key), "%.*s", (int)strcspn(line + 3, "`"), line + 3);
        bool top = strchr(key, '.') == NULL;
        snprintf(entry, sizeof(entry), "%s%s\n", top ? ".SS " : ".B ", key);
        nkeys++;
        if (!strstr(man, entry)) {
            fprintf(stderr, "ct_conf_print_reference_man() has no entry \"%.*s\"\n",
                    (int)strlen(entry) - 1, entry);
            CU_FAIL("a key missing from the man page's reference");
        }
    }
    CU_ASSERT(nkeys > 70);
    if (strcmp(begin, man) != 0) {
        FILE *out = fopen("cachet.conf.5.ref", "w");
        if (out) {
            fputs(man, out);
            fclose(out);
        }
        fprintf(stderr,
                "%s's reference differs from ct_conf_print_reference_man(): run "
                "scripts/sync-conf-reference.py (it pastes cachet.conf.5.ref, written in the "
                "test's directory), then this test again\n",
                MAN_DOC);
        CU_FAIL("docs/man/cachet.conf.5 reference out of date");
    }
    free(ref);
    free(man);
    free(doc);
}

/* Every default has its reason written beside it (issue 12), and no reason
 * outlives its setting. */
static void test_every_default_has_a_reason(void)
{
    char *ref = reference();
    size_t ndefaults = 0;
    for (char *line = ref; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "| `", 3) != 0)
            continue;
        /* | `key` | type | default | meaning | */
        char *c1 = strchr(line + 1, '|'), *c2 = c1 ? strchr(c1 + 1, '|') : NULL;
        char *c3 = c2 ? strchr(c2 + 1, '|') : NULL, *eol = strchr(line, '\n');
        CU_ASSERT_PTR_NOT_NULL_FATAL(c3);
        bool has_default = memchr(c2, '`', (size_t)(c3 - c2)) != NULL; /* not groups, "required" */
        if (!has_default)
            continue;
        ndefaults++;
        char *why = strstr(c3, "*Why this default:*");
        if (why == NULL || (eol && why > eol)) {
            fprintf(stderr, "no reason for the default of %.*s\n", (int)(c1 - line - 1), line + 1);
            CU_FAIL("a default without a reason");
        }
    }
    CU_ASSERT(ndefaults > 60);
    const char **keys;
    size_t n = ct_conf_default_reasons(&keys);
    for (size_t i = 0; i < n; i++) {
        char pat[200];
        snprintf(pat, sizeof(pat), "| `%s` |", keys[i]);
        if (!strstr(ref, pat)) {
            fprintf(stderr, "a reason for %s, which is not a setting\n", keys[i]);
            CU_FAIL("a reason for no setting");
        }
    }
    free(ref);
}

void ct_test_register(void)
{
    CT_SUITE("conf dump and docs", {"round trip of the default", test_round_trip_default},
             {"round trip of every setting", test_round_trip_everything},
             {"conf/cachet.conf loads", test_example_loads},
             {"docs/config.md reference matches the table", test_doc_reference},
             {"cachet.conf(5) reference matches the schema", test_man_reference},
             {"every default has a reason", test_every_default_has_a_reason});
}
