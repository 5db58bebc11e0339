/*
 * conf/conf_cli.c: cachet's command line and its overrides.
 *
 * ct_conf_cli_parse() only reads argv (no getopt: its global state would make
 * the parser unusable twice in one process, as the tests need) and checks
 * each value's syntax. ct_conf_apply_cli() writes the overrides into a
 * configuration through the same row parsers as the file, so a value means
 * the same thing in both places and is range-checked by the same table, and
 * records "command line (--opt)" as the location of what it set, so the
 * cross-checks that follow name the option instead of a file line.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "conf/conf_int.h"

enum opt_kind { OPT_FLAG, OPT_VALUE, OPT_REPEAT };

struct opt {
    const char *name; /* "--http" */
    char short_name;  /* 'c', or 0 */
    enum opt_kind kind;
    size_t off;       /* bool, const char * or const char *[] in struct ct_cli */
    size_t count_off; /* OPT_REPEAT: size_t count */
    int (*check)(const char *value);
    const char *expect;
};

static int check_listen(const char *v)
{
    struct ct_conf_addr a;
    if (strcmp(v, "off") == 0)
        return CT_OK;
    if (ct_conf_parse_addr(v, &a) != CT_OK)
        return CT_ECONF;
    ct_conf_addr_free(&a);
    return CT_OK;
}

/* "https://HOST:PORT" -> true and HOST:PORT in *REST; "http://" or none -> false. */
static bool backend_scheme(const char *v, const char **rest)
{
    if (strncmp(v, "https://", 8) == 0) {
        *rest = v + 8;
        return true;
    }
    *rest = strncmp(v, "http://", 7) == 0 ? v + 7 : v;
    return false;
}

static int check_backend(const char *v)
{
    (void)backend_scheme(v, &v);
    char *host;
    uint16_t port;
    if (ct_conf_parse_hostport(v, &host, &port) != CT_OK)
        return CT_ECONF;
    free(host);
    return CT_OK;
}

static int check_size(const char *v)
{
    uint64_t x;
    return ct_conf_parse_size(v, &x);
}

static int check_workers(const char *v)
{
    uint64_t n;
    if (strcmp(v, "auto") == 0)
        return CT_OK;
    return ct_str_to_u64(ct_str_c(v), 1024, &n) == CT_OK && n > 0 ? CT_OK : CT_ECONF;
}

static int check_level(const char *v)
{
    enum ct_log_level l;
    return ct_log_level_parse(v, &l) == CT_OK ? CT_OK : CT_ECONF;
}

static int check_nonempty(const char *v)
{
    return *v ? CT_OK : CT_ECONF;
}

#define F(f) offsetof(struct ct_cli, f)
#define LISTEN_EXPECT "IP:PORT such as 127.0.0.1:8080 or [::1]:8080, or off"
static const struct opt opts[] = {
    {"--config", 'c', OPT_VALUE, F(conf_file), 0, check_nonempty, "a file name"},
    {"--test", 't', OPT_FLAG, F(test_only), 0, NULL, NULL},
    {"--dump", 'T', OPT_FLAG, F(dump), 0, NULL, NULL},
    {"--version", 0, OPT_FLAG, F(version), 0, NULL, NULL},
    {"-V", 'V', OPT_FLAG, F(build_info), 0, NULL, NULL},
    {"--help", 'h', OPT_FLAG, F(help), 0, NULL, NULL},
    {"--http", 0, OPT_REPEAT, F(http), F(nhttp), check_listen, LISTEN_EXPECT},
    {"--https", 0, OPT_REPEAT, F(https), F(nhttps), check_listen, LISTEN_EXPECT},
    {"--backend", 0, OPT_REPEAT, F(backend), F(nbackend), check_backend,
     "HOST:PORT such as 127.0.0.1:8081, or https://HOST:PORT"},
    {"--backend-ca", 0, OPT_VALUE, F(backend_ca), 0, check_nonempty, "a PEM file"},
    {"--cert", 0, OPT_VALUE, F(cert_file), 0, check_nonempty, "a PEM file"},
    {"--key", 0, OPT_VALUE, F(key_file), 0, check_nonempty, "a PEM file"},
    {"--cache-size", 0, OPT_VALUE, F(cache_size), 0, check_size, "a size such as 256M or 1G"},
    {"--workers", 0, OPT_VALUE, F(workers), 0, check_workers, "1 to 1024, or auto"},
    {"--admin", 0, OPT_VALUE, F(admin), 0, check_listen, LISTEN_EXPECT},
    {"--log-level", 0, OPT_VALUE, F(log_level), 0, check_level, "debug, info, warn or error"},
    {"--access-log", 0, OPT_VALUE, F(access_log), 0, check_nonempty, "a file, - or off"},
};
#undef F

void ct_conf_cli_usage(const char *prog, FILE *fp)
{
    fprintf(fp,
            "usage: %s [-c FILE] [-t | -T] [overrides]\n"
            "       %s ctl COMMAND ...  talk to a running cachet (cachet ctl --help)\n"
            "  -c, --config FILE     run FILE (default: the embedded configuration)\n"
            "  -t, --test            check the configuration and exit\n"
            "  -T, --dump            print the effective configuration and exit\n"
            "      --version         print the version and exit\n"
            "  -V                    print the version, git revision, compiler and the\n"
            "                        libraries' versions (built with, running with)\n"
            "  -h, --help            this text\n"
            "overrides (they win over the file):\n"
            "  --http ADDR:PORT|off  HTTP listener (repeatable)\n"
            "  --https ADDR:PORT|off HTTPS listener (repeatable)\n"
            "  --backend [https://]HOST:PORT  origin (repeatable; replaces the file's\n"
            "                        backends); https:// speaks verified TLS to it\n"
            "  --backend-ca FILE     CA bundle the https backends are verified against\n"
            "  --cert FILE --key FILE  certificate of every HTTPS listener\n"
            "  --cache-size SIZE     e.g. 256M, 1G\n"
            "  --workers N|auto      worker threads\n"
            "  --admin ADDR:PORT|off admin listener (/stats, /metrics)\n"
            "  --log-level LEVEL     debug, info, warn or error\n"
            "  --access-log FILE|-|off\n",
            prog, prog);
}

static const struct opt *find_opt(const char *arg, const char **inline_val)
{
    *inline_val = NULL;
    if (arg[0] == '-' && arg[1] != '-' && arg[1] != '\0') {
        for (size_t i = 0; i < CT_ARRAY_LEN(opts); i++) {
            if (opts[i].short_name == arg[1]) {
                /* "-cFILE"; flags take nothing after the letter */
                if (arg[2] != '\0' && opts[i].kind == OPT_FLAG)
                    return NULL;
                *inline_val = arg[2] ? arg + 2 : NULL;
                return &opts[i];
            }
        }
        return NULL;
    }
    size_t n = strcspn(arg, "=");
    for (size_t i = 0; i < CT_ARRAY_LEN(opts); i++) {
        if (strlen(opts[i].name) == n && strncmp(opts[i].name, arg, n) == 0) {
            *inline_val = arg[n] == '=' ? arg + n + 1 : NULL;
            return &opts[i];
        }
    }
    return NULL;
}

/* Every error of the command line, one per line in ERR:
 * "command line (--opt): reason", as the overrides' errors are located. */
struct cli_errs {
    char *p;
    size_t len, used;
    unsigned n;
};

static void cli_err(struct cli_errs *e, const char *opt, const char *fmt, ...) CT_PRINTF(3, 4);
static void cli_err(struct cli_errs *e, const char *opt, const char *fmt, ...)
{
    e->n++;
    if (e->used + 1 >= e->len)
        return;
    int n = snprintf(e->p + e->used, e->len - e->used, "%scommand line (%s): ", e->used ? "\n" : "",
                     opt);
    e->used = n < 0 ? e->used : CT_MIN(e->len - 1, e->used + (size_t)n);
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(e->p + e->used, e->len - e->used, fmt, ap);
    va_end(ap);
    e->used = n < 0 ? e->used : CT_MIN(e->len - 1, e->used + (size_t)n);
}

static void unknown_opt(const char *arg, struct cli_errs *e)
{
    const char *best = NULL;
    unsigned best_d = 3;
    char name[64];
    snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="), arg);
    for (size_t i = 0; i < CT_ARRAY_LEN(opts); i++) {
        if (opts[i].name[1] != '-')
            continue; /* "-V" alone: any one-letter typo is one edit from it */
        unsigned d = ct_conf_edit_distance(name, opts[i].name);
        if (d < best_d) {
            best_d = d;
            best = opts[i].name;
        }
    }
    if (best)
        cli_err(e, name, "unknown option (did you mean %s?)", best);
    else
        cli_err(e, name, "unknown option (try --help)");
}

static void set_value(const struct opt *o, const char *val, struct ct_cli *cli, struct cli_errs *e)
{
    char *base = (char *)cli;
    if (o->check && o->check(val) != CT_OK) {
        cli_err(e, o->name, "invalid value \"%s\" (expected %s)", val, o->expect);
        return;
    }
    if (o->kind == OPT_VALUE) {
        const char **slot = (const char **)(base + o->off);
        if (*slot)
            cli_err(e, o->name, "given twice (expected it once)");
        else
            *slot = val;
        return;
    }
    size_t *n = (size_t *)(base + o->count_off);
    if (*n == CT_CLI_MAX_REPEAT) {
        cli_err(e, o->name, "given more than %d times", CT_CLI_MAX_REPEAT);
        return;
    }
    ((const char **)(base + o->off))[(*n)++] = val;
}

/* Rules between options, once all are read. */
static void check_combination(const struct ct_cli *cli, struct cli_errs *e)
{
    if (!cli->cert_file != !cli->key_file)
        cli_err(e, cli->cert_file ? "--cert" : "--key", "given without %s (expected both)",
                cli->cert_file ? "--key" : "--cert");
    if (cli->test_only && cli->dump)
        cli_err(e, "-t, -T", "both given (expected one of them)");
    const char *const *lists[] = {cli->http, cli->https};
    const size_t counts[] = {cli->nhttp, cli->nhttps};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; counts[k] > 1 && i < counts[k]; i++) {
            if (strcmp(lists[k][i], "off") == 0) {
                cli_err(e, k ? "--https" : "--http",
                        "off together with addresses (expected one or the other)");
                break;
            }
        }
    }
}

int ct_conf_cli_parse(int argc, char **argv, struct ct_cli *cli, char *err, size_t errlen)
{
    memset(cli, 0, sizeof(*cli));
    struct cli_errs e = {err, errlen, 0, 0};
    if (errlen)
        err[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *val;
        const struct opt *o = find_opt(argv[i], &val);
        if (!o && argv[i][0] != '-') {
            cli_err(&e, argv[i], "unexpected argument (expected options; try --help)");
            continue;
        }
        if (!o) {
            unknown_opt(argv[i], &e);
            /* "--cahce-size 1G": its value is not an argument of its own */
            if (!strchr(argv[i], '=') && i + 1 < argc && argv[i + 1][0] != '-')
                i++;
            continue;
        }
        if (o->kind == OPT_FLAG) {
            if (val)
                cli_err(&e, o->name, "takes no value");
            else
                *(bool *)((char *)cli + o->off) = true;
            continue;
        }
        if (!val && i + 1 == argc) {
            cli_err(&e, o->name, "missing value (expected %s)", o->expect);
            continue;
        }
        set_value(o, val ? val : argv[++i], cli, &e);
    }
    check_combination(cli, &e);
    return e.n ? CT_ECONF : CT_OK;
}

/* ---- applying overrides ------------------------------------------------------ */

struct apply {
    struct ct_conf *cf;
    struct ct_conf_errors *errs;
};

/* Set one row from a command-line string through the file's row parser. */
static int cli_set(struct apply *ap, const struct ct_conf_section *sec, const char *row, void *base,
                   const char *path, const char *value, const char *opt)
{
    const struct ct_conf_row *r = ct_conf_find_row(sec, row);
    CT_ASSERT(r != NULL);
    /* a count is an integer to libconfig; everything else is a string */
    bool digits = value[0] && strspn(value, "0123456789") == strlen(value) && strlen(value) < 19;
    config_t cfg;
    config_init(&cfg);
    config_setting_t *s = config_setting_add(config_root_setting(&cfg), "v",
                                             digits ? CONFIG_TYPE_INT64 : CONFIG_TYPE_STRING);
    if (digits)
        config_setting_set_int64(s, strtoll(value, NULL, 10));
    else
        config_setting_set_string(s, value);
    char where[64];
    snprintf(where, sizeof(where), "command line (%s)", opt);
    struct ct_conf_loadctx lc = {ap->errs, ap->cf->_locs, where, true, NULL};
    int rc = ct_conf_row_parse(&lc, r, s, base, path);
    config_destroy(&cfg);
    return rc;
}

/* A new location table: SRC without the entries under PREFIX. */
static struct ct_conf_locs locs_without(const struct ct_conf_locs *src, const char *prefix)
{
    struct ct_conf_locs out = {0};
    for (size_t i = 0; i < src->n; i++)
        if (!ct_conf_path_under(src->v[i].path, prefix))
            ct_conf_locs_set(&out, src->v[i].path, src->v[i].where);
    return out;
}

static void set_locs(struct ct_conf *cf, struct ct_conf_locs *fresh)
{
    ct_conf_locs_free(cf->_locs);
    *cf->_locs = *fresh;
}

static void new_listener(struct apply *ap, struct ct_conf_listener *l, size_t i,
                         enum ct_conf_listen_kind kind, const char *addr, const char *opt)
{
    char path[64];
    memset(l, 0, sizeof(*l));
    ct_conf_section_defaults(&ct_conf_listener_section, l);
    l->kind = kind;
    /* docs/usage.md: an HTTPS listener with no certificate gets the self-signed
     * one; --cert, applied next, replaces it */
    l->tls.self_signed = kind == CT_CONF_LISTEN_HTTPS;
    snprintf(path, sizeof(path), "listen[%zu]", i);
    char where[64];
    snprintf(where, sizeof(where), "command line (%s)", opt);
    ct_conf_locs_set(ap->cf->_locs, path, where);
    snprintf(path, sizeof(path), "listen[%zu].address", i);
    cli_set(ap, &ct_conf_listener_section, "address", l, path, addr, opt);
}

/* --http/--https: replace the listeners of KIND. If the file has exactly one
 * and one address is given, only its address changes (its other settings,
 * TLS included, stay): that is what `cachet -c FILE --https 127.0.0.1:0`
 * means in a test. New listeners take the place of the first replaced one. */
static void apply_listeners(struct apply *ap, const char *const *vals, size_t nvals,
                            enum ct_conf_listen_kind kind, const char *opt)
{
    struct ct_conf *cf = ap->cf;
    size_t nkind = 0;
    for (size_t i = 0; i < cf->nlisteners; i++)
        nkind += cf->listeners[i].kind == kind;
    if (nvals == 0)
        return;
    bool off = strcmp(vals[0], "off") == 0;
    bool keep_one = !off && nkind == 1 && nvals == 1;
    size_t nnew = (off || keep_one) ? 0 : nvals, cap = cf->nlisteners + nnew;
    struct ct_conf_listener *v = ct_xcalloc(cap + 1, sizeof(*v));
    long *origin = ct_xcalloc(cap + 1, sizeof(*origin)); /* old index, or -1 - value index */
    size_t n = 0;
    bool placed = false;
    for (size_t i = 0; i <= cf->nlisteners; i++) {
        struct ct_conf_listener *l = i < cf->nlisteners ? &cf->listeners[i] : NULL;
        if (l && (l->kind != kind || keep_one)) {
            origin[n] = (long)i;
            v[n++] = *l; /* moved, not copied */
            continue;
        }
        if (l)
            ct_conf_section_free(&ct_conf_listener_section, l);
        for (size_t k = 0; !placed && k < nnew; k++)
            origin[n++] = -1 - (long)k;
        placed = true;
    }
    struct ct_conf_locs locs = locs_without(cf->_locs, "listen");
    for (size_t i = 0; i < n; i++) {
        char from[32], to[32];
        snprintf(from, sizeof(from), "listen[%ld]", origin[i]);
        snprintf(to, sizeof(to), "listen[%zu]", i);
        if (origin[i] >= 0)
            ct_conf_locs_copy_prefix(&locs, cf->_locs, from, to);
    }
    set_locs(cf, &locs);
    free(cf->listeners);
    cf->listeners = v;
    cf->nlisteners = n;
    for (size_t i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof(path), "listen[%zu].address", i);
        if (origin[i] < 0)
            new_listener(ap, &v[i], i, kind, vals[-1 - origin[i]], opt);
        else if (keep_one && v[i].kind == kind)
            cli_set(ap, &ct_conf_listener_section, "address", &v[i], path, vals[0], opt);
    }
    free(origin);
}

/* --cert/--key: the one certificate of every HTTPS listener. */
static void apply_cert(struct apply *ap, const struct ct_cli *cli)
{
    struct ct_conf *cf = ap->cf;
    const struct ct_conf_row *tls = ct_conf_find_row(&ct_conf_listener_section, "tls");
    const struct ct_conf_row *certs = ct_conf_find_row(tls->sub, "certificates");
    const struct ct_conf_section one = {.name = "", .rows = certs, .nrows = 1};
    bool used = false;
    for (size_t i = 0; i < cf->nlisteners; i++) {
        struct ct_conf_listener *l = &cf->listeners[i];
        char path[96];
        if (l->kind != CT_CONF_LISTEN_HTTPS)
            continue;
        used = true;
        ct_conf_section_free(&one, &l->tls);
        l->tls.certs = ct_xcalloc(1, sizeof(*l->tls.certs));
        l->tls.ncerts = 1;
        l->tls.self_signed = false;
        ct_conf_section_defaults(certs->sub, l->tls.certs);
        snprintf(path, sizeof(path), "listen[%zu].tls.certificates[0].cert", i);
        cli_set(ap, certs->sub, "cert", l->tls.certs, path, cli->cert_file, "--cert");
        snprintf(path, sizeof(path), "listen[%zu].tls.certificates[0].key", i);
        cli_set(ap, certs->sub, "key", l->tls.certs, path, cli->key_file, "--key");
        l->tls.certs[0].is_default = true;
    }
    if (!used)
        ct_conf_err(ap->errs, "command line (--cert)", NULL,
                    "no https listener to use it (expected --https ADDR:PORT, or an https "
                    "listener in the file)");
}

/* --backend: replaces the list; the settings (timeouts, pool, health) come
 * from the file's first backend so a file can tune what the CLI points at. */
static void apply_backends(struct apply *ap, const struct ct_cli *cli)
{
    struct ct_conf *cf = ap->cf;
    if (cli->nbackend == 0)
        return;
    struct ct_conf_backend tmpl;
    if (cf->nbackends > 0) {
        ct_conf_section_copy(&ct_conf_backend_section, &tmpl, &cf->backends[0]);
    } else {
        memset(&tmpl, 0, sizeof(tmpl));
        ct_conf_section_defaults(&ct_conf_backend_section, &tmpl);
    }
    const struct ct_conf_row *list = ct_conf_find_row(&ct_conf_root_section, "backends");
    ct_conf_section_free(&(struct ct_conf_section){.name = "", .rows = list, .nrows = 1}, cf);
    struct ct_conf_locs locs = locs_without(cf->_locs, "backends");
    set_locs(cf, &locs);
    cf->backends = ct_xcalloc(cli->nbackend, sizeof(*cf->backends));
    for (size_t i = 0; i < cli->nbackend; i++) {
        struct ct_conf_backend *b = &cf->backends[i];
        char path[64];
        ct_conf_section_copy(&ct_conf_backend_section, b, &tmpl);
        b->name[0] = '\0'; /* named after its address by ct_conf_finish */
        snprintf(path, sizeof(path), "backends[%zu]", i);
        ct_conf_locs_set(cf->_locs, path, "command line (--backend)");
        snprintf(path, sizeof(path), "backends[%zu].address", i);
        const char *addr;
        /* https:// turns TLS on (with the file's first backend's TLS
         * settings if it has some, else the defaults); http:// and a bare
         * address are cleartext */
        b->tls.on = backend_scheme(cli->backend[i], &addr);
        cli_set(ap, &ct_conf_backend_section, "address", b, path, addr, "--backend");
    }
    cf->nbackends = cli->nbackend;
    ct_conf_section_free(&ct_conf_backend_section, &tmpl);
}

/* --backend-ca: the CA bundle of every TLS backend of the top-level list. */
static void apply_backend_ca(struct apply *ap, const struct ct_cli *cli)
{
    struct ct_conf *cf = ap->cf;
    const struct ct_conf_row *tls = ct_conf_find_row(&ct_conf_backend_section, "tls");
    bool used = false;
    for (size_t i = 0; i < cf->nbackends; i++) {
        struct ct_conf_backend *b = &cf->backends[i];
        if (!b->tls.on)
            continue;
        char path[64];
        snprintf(path, sizeof(path), "backends[%zu].tls.ca", i);
        cli_set(ap, tls->sub, "ca", &b->tls, path, cli->backend_ca, "--backend-ca");
        used = true;
    }
    if (!used)
        ct_conf_err(ap->errs, "command line (--backend-ca)", NULL,
                    "no TLS backend to use it (expected --backend https://HOST:PORT, or a "
                    "backend with a tls group in the file)");
}

/* One scalar override: SECTION.ROW of the root, e.g. cache.size. */
static void apply_one(struct apply *ap, const char *group, const char *row, const char *value,
                      const char *opt)
{
    if (!value)
        return;
    const struct ct_conf_section *sec = &ct_conf_root_section;
    void *base = ap->cf;
    char path[64];
    if (group) {
        const struct ct_conf_row *g = ct_conf_find_row(sec, group);
        sec = g->sub;
        base = (char *)base + g->off;
    }
    snprintf(path, sizeof(path), "%s%s%s", group ? group : "", group ? "." : "", row);
    cli_set(ap, sec, row, base, path, value, opt);
}

static void apply_all(struct ct_conf *cf, const struct ct_cli *cli, struct ct_conf_errors *errs)
{
    struct apply ap = {cf, errs};
    apply_listeners(&ap, cli->http, cli->nhttp, CT_CONF_LISTEN_HTTP, "--http");
    apply_listeners(&ap, cli->https, cli->nhttps, CT_CONF_LISTEN_HTTPS, "--https");
    if (cli->cert_file)
        apply_cert(&ap, cli);
    apply_backends(&ap, cli);
    if (cli->backend_ca)
        apply_backend_ca(&ap, cli);
    apply_one(&ap, "cache", "size", cli->cache_size, "--cache-size");
    apply_one(&ap, NULL, "workers", cli->workers, "--workers");
    apply_one(&ap, "admin", "listen", cli->admin, "--admin");
    apply_one(&ap, "logs", "level", cli->log_level, "--log-level");
    apply_one(&ap, "logs", "access_log", cli->access_log, "--access-log");
}

int ct_conf_apply_cli(struct ct_conf *cf, const struct ct_cli *cli, struct ct_conf_errors *errs)
{
    CT_CHECK_OBJ(cf, CT_CONF_MAGIC);
    size_t before = errs->n + errs->dropped;
    apply_all(cf, cli, errs);
    if (errs->n + errs->dropped != before)
        return CT_ECONF;
    return ct_conf_finish(cf, errs);
}

int ct_conf_build(const struct ct_cli *cli, struct ct_conf **out, struct ct_conf_errors *errs)
{
    return ct_conf_build_learned(cli, NULL, 0, out, errs);
}

int ct_conf_build_learned(const struct ct_cli *cli, const struct ct_conf_fleet_member *learned,
                          size_t n, struct ct_conf **out, struct ct_conf_errors *errs)
{
    struct ct_conf *cf;
    /* overrides go in before the cross-checks: a --cert must be able to stand
     * in for a file's unreadable certificate */
    int rc = cli->conf_file
                 ? ct_conf_read_file(cli->conf_file, &cf, errs, false)
                 : ct_conf_read_string(ct_conf_embedded_default, "<default>", &cf, errs, false);
    *out = NULL;
    if (rc != CT_OK)
        return rc;
    ct_conf_fleet_add_learned(cf, learned, n); /* before the checks derive the peer groups */
    rc = ct_conf_apply_cli(cf, cli, errs);
    if (rc != CT_OK) {
        ct_conf_free(&cf);
        return rc;
    }
    *out = cf;
    return CT_OK;
}
