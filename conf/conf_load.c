/*
 * conf/conf_load.c: libconfig text -> struct ct_conf, row by row.
 *
 * libconfig does the syntax (and tells us FILE:LINE of syntax errors and of
 * every setting); this file walks the parsed tree against the schema table:
 * a key not in the table is an error (with "did you mean"), a missing
 * required key is an error, every value is checked against its row's type and
 * range. Errors are collected, never fatal, so one run reports all of them.
 * Cross-field checks come after, in conf_check.c.
 */
#include <errno.h>
#include <libconfig.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conf/conf_int.h"
#include "http/http.h"

void ct_conf_setting_where(const struct ct_conf_loadctx *lc, const config_setting_t *s,
                           char *buf, size_t len)
{
    const char *file = config_setting_source_file(s);
    if (lc->no_line) /* a value from the command line: the name says where */
        snprintf(buf, len, "%s", lc->name);
    else if (file && lc->incdir && file[0] != '/' && strcmp(file, lc->name) != 0)
        /* libconfig names an @include'd file as written: make it findable */
        snprintf(buf, len, "%s/%s:%u", lc->incdir, file, (unsigned)config_setting_source_line(s));
    else
        snprintf(buf, len, "%s:%u", file ? file : lc->name,
                 (unsigned)config_setting_source_line(s));
}

/* The offending value as the user wrote it, for "invalid value X". */
static void describe(const config_setting_t *s, char *buf, size_t len)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        snprintf(buf, len, "%lld", config_setting_get_int64(s));
        break;
    case CONFIG_TYPE_FLOAT:
        snprintf(buf, len, "%g", config_setting_get_float(s));
        break;
    case CONFIG_TYPE_BOOL:
        snprintf(buf, len, "%s", config_setting_get_bool(s) ? "true" : "false");
        break;
    case CONFIG_TYPE_STRING:
        snprintf(buf, len, "\"%.100s\"", config_setting_get_string(s));
        break;
    case CONFIG_TYPE_GROUP: snprintf(buf, len, "a group"); break;
    case CONFIG_TYPE_LIST: snprintf(buf, len, "a list"); break;
    case CONFIG_TYPE_ARRAY: snprintf(buf, len, "an array"); break;
    default: snprintf(buf, len, "?"); break;
    }
}

static int bad(struct ct_conf_loadctx *lc, const struct ct_conf_row *r, const config_setting_t *s,
               const char *path, const char *what)
{
    char where[300], val[128], expect[400];
    ct_conf_setting_where(lc, s, where, sizeof(where));
    describe(s, val, sizeof(val));
    ct_conf_row_expect(r, expect, sizeof(expect));
    ct_conf_err(lc->errs, where, path, "%s %s (expected %s)", what, val, expect);
    return CT_ECONF;
}

static const char *str_of(const config_setting_t *s)
{
    return config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;
}

static bool is_int(const config_setting_t *s)
{
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
}

static void store_uint(void *f, size_t size, uint64_t v)
{
    switch (size) {
    case 1: *(uint8_t *)f = (uint8_t)v; break;
    case 2: *(uint16_t *)f = (uint16_t)v; break;
    case 4: *(uint32_t *)f = (uint32_t)v; break;
    case 8: *(uint64_t *)f = v; break;
    default: CT_WRONG("field width");
    }
}

/* UINT, SIZE, DUR: a number with its unit syntax, then the range. */
static int parse_number(struct ct_conf_loadctx *lc, const struct ct_conf_row *r,
                        const config_setting_t *s, void *f, const char *path)
{
    const char *str = str_of(s);
    uint64_t v = 0;
    int rc = CT_ECONF;
    if (str && (r->flags & CT_ROW_AUTO) && strcmp(str, "auto") == 0) {
        store_uint(f, r->size, 0);
        return CT_OK;
    }
    if (str && (r->flags & CT_ROW_INHERIT) && strcmp(str, "inherit") == 0) {
        store_uint(f, r->size, CT_CONF_INHERIT);
        return CT_OK;
    }
    if (str && (r->flags & CT_ROW_OFF) && strcmp(str, "off") == 0) {
        store_uint(f, r->size, 0);
        return CT_OK;
    }
    if (is_int(s) && r->type != CT_ROW_DUR) {
        /* a bare number is bytes or a count; a duration always has a unit */
        long long i = config_setting_get_int64(s);
        rc = i < 0 ? CT_ECONF : CT_OK;
        v = (uint64_t)i;
    } else if (str && r->type == CT_ROW_SIZE) {
        rc = ct_conf_parse_size(str, &v);
    } else if (str && r->type == CT_ROW_DUR) {
        rc = ct_conf_parse_dur(str, &v);
    }
    if (rc != CT_OK)
        return bad(lc, r, s, path, "invalid value");
    if (v < r->min || v > r->max)
        return bad(lc, r, s, path, "out of range:");
    store_uint(f, r->size, v);
    return CT_OK;
}

/* A relative path written in a file is relative to that file's folder (as
 * @include), never to the working directory: under systemd that is "/",
 * and a file checked with -t in its own folder would then fail to start.
 * The folder is made absolute, so a reload finds the same files. A value
 * from the command line, "-" (stdout/stderr) and a text without a file
 * (the embedded default, tests' strings) stay as written. A new string. */
static char *file_relative(const struct ct_conf_loadctx *lc, const config_setting_t *s,
                           const char *str)
{
    /* "-" is stderr (logs), "system" the system CA store (backends[].tls.ca):
     * keywords, not file names */
    if (lc->no_line || !lc->incdir || str[0] == '/' || strcmp(str, "-") == 0 ||
        strcmp(str, "system") == 0)
        return ct_xstrdup(str);
    const char *file = config_setting_source_file(s);
    char dir[4096];
    const char *slash = file ? strrchr(file, '/') : NULL;
    if (file && file[0] == '/')
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - file), file);
    else if (slash && strcmp(file, lc->name) != 0) /* an @include'd file in a subfolder */
        snprintf(dir, sizeof(dir), "%s/%.*s", lc->incdir, (int)(slash - file), file);
    else
        snprintf(dir, sizeof(dir), "%s", lc->incdir);
    char *abs = realpath(dir, NULL);
    size_t n = strlen(abs ? abs : dir) + strlen(str) + 2;
    char *out = ct_xmalloc(n);
    snprintf(out, n, "%s/%s", abs ? abs : dir, str);
    free(abs);
    return out;
}

static int parse_scalar(struct ct_conf_loadctx *lc, const struct ct_conf_row *r,
                        const config_setting_t *s, void *f, const char *path)
{
    const char *str = str_of(s);
    switch (r->type) {
    case CT_ROW_BOOL:
        if (config_setting_type(s) != CONFIG_TYPE_BOOL)
            return bad(lc, r, s, path, "invalid value");
        *(bool *)f = config_setting_get_bool(s) != 0;
        return CT_OK;
    case CT_ROW_FRAC: {
        double d;
        if (config_setting_type(s) == CONFIG_TYPE_FLOAT)
            d = config_setting_get_float(s);
        else if (is_int(s))
            d = (double)config_setting_get_int64(s);
        else
            return bad(lc, r, s, path, "invalid value");
        if (!(d >= 0.0 && d <= 1.0))
            return bad(lc, r, s, path, "out of range:");
        *(double *)f = d;
        return CT_OK;
    }
    case CT_ROW_STR:
    case CT_ROW_OPTSTR:
        if (!str || (r->type == CT_ROW_OPTSTR && *str == '\0'))
            return bad(lc, r, s, path, "invalid value");
        CT_FREE((char **)f);
        if (!(r->type == CT_ROW_OPTSTR && strcmp(str, "off") == 0))
            *(char **)f = r->flags & CT_ROW_PATH ? file_relative(lc, s, str) : ct_xstrdup(str);
        return CT_OK;
    case CT_ROW_ENUM:
        for (const struct ct_conf_enum *e = r->enums; str && e->name; e++) {
            if (strcmp(e->name, str) == 0) {
                *(int *)f = e->value;
                return CT_OK;
            }
        }
        return bad(lc, r, s, path, "invalid value");
    default:
        return parse_number(lc, r, s, f, path);
    }
}

static int parse_address(struct ct_conf_loadctx *lc, const struct ct_conf_row *r,
                         const config_setting_t *s, void *base, const char *path)
{
    const char *str = str_of(s);
    void *f = (char *)base + r->off;
    if (r->type == CT_ROW_ADDR) {
        struct ct_conf_addr a = {0};
        if (!str || (!((r->flags & CT_ROW_OFF) && strcmp(str, "off") == 0) &&
                     ct_conf_parse_addr(str, &a) != CT_OK))
            return bad(lc, r, s, path, "invalid value");
        ct_conf_addr_free(f);
        *(struct ct_conf_addr *)f = a;
        return CT_OK;
    }
    char *host;
    uint16_t port;
    if (!str || ct_conf_parse_hostport(str, &host, &port) != CT_OK)
        return bad(lc, r, s, path, "invalid value");
    CT_FREE((char **)f);
    *(char **)f = host;
    *(uint16_t *)((char *)base + r->off2) = port;
    return CT_OK;
}

/* STRLIST, CIDRLIST: an array or list of strings (or one bare string). */
static int parse_strings(struct ct_conf_loadctx *lc, const struct ct_conf_row *r,
                         const config_setting_t *s, void *base, const char *path)
{
    int t = config_setting_type(s);
    bool one = t == CONFIG_TYPE_STRING;
    if (!one && t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
        return bad(lc, r, s, path, "invalid value");
    size_t n = one ? 1 : (size_t)config_setting_length(s);
    bool cidr = r->type == CT_ROW_CIDRLIST;
    void *v = n ? ct_xcalloc(n, cidr ? sizeof(struct ct_conf_cidr) : sizeof(char *)) : NULL;
    size_t got = 0;
    int rc = CT_OK;
    for (size_t i = 0; i < n; i++) {
        const config_setting_t *e = one ? s : config_setting_get_elem(s, (unsigned)i);
        const char *str = str_of(e);
        char epath[256];
        snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
        int erc = CT_ECONF;
        if (!str)
            erc = CT_ECONF;
        else if (cidr)
            erc = ct_conf_parse_cidr(str, (struct ct_conf_cidr *)v + got);
        else if (r->flags & CT_ROW_TYPES)
            erc = ct_conf_parse_media_type(str, (char **)v + got);
        else if (r->flags & CT_ROW_TEXT)
            erc = *str ? (((char **)v)[got] = ct_xstrdup(str), CT_OK) : CT_ECONF;
        else if (!(r->flags & CT_ROW_FIELDS))
            erc = ct_conf_parse_server_name(str, (char **)v + got);
        else if (ct_http_is_token(ct_str_c(str))) /* RFC 9110 §5.1, as written */
            erc = (((char **)v)[got] = ct_xstrdup(str)) ? CT_OK : CT_ECONF;
        if (erc == CT_OK)
            got++;
        else
            rc = bad(lc, r, e, epath, "invalid value");
    }
    ct_conf_section_free(&(struct ct_conf_section){.name = "", .rows = r, .nrows = 1}, base);
    *(void **)((char *)base + r->off) = v;
    *(size_t *)((char *)base + r->off2) = got;
    return rc;
}

static int parse_list(struct ct_conf_loadctx *lc, const struct ct_conf_row *r,
                      const config_setting_t *s, void *base, const char *path)
{
    int t = config_setting_type(s);
    /* "( )" and "[ ]" are both empty lists to libconfig's users */
    if (t != CONFIG_TYPE_LIST && !(t == CONFIG_TYPE_ARRAY && config_setting_length(s) == 0))
        return bad(lc, r, s, path, "invalid value");
    size_t n = (size_t)config_setting_length(s);
    char *v = n ? ct_xcalloc(n, r->elem_size) : NULL;
    int rc = CT_OK;
    for (size_t i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char epath[256];
        snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
        char where[300];
        ct_conf_setting_where(lc, e, where, sizeof(where));
        ct_conf_locs_set(lc->locs, epath, where);
        ct_conf_section_defaults(r->sub, v + i * r->elem_size);
        if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
            rc = bad(lc, r, e, epath, "invalid element");
            continue;
        }
        ct_conf_section_load(lc, r->sub, e, v + i * r->elem_size, epath);
    }
    ct_conf_section_free(&(struct ct_conf_section){.name = "", .rows = r, .nrows = 1}, base);
    *(char **)((char *)base + r->off) = v;
    *(size_t *)((char *)base + r->off2) = n;
    return rc;
}

int ct_conf_row_parse(struct ct_conf_loadctx *lc, const struct ct_conf_row *r,
                      const config_setting_t *s, void *base, const char *path)
{
    char where[300];
    ct_conf_setting_where(lc, s, where, sizeof(where));
    ct_conf_locs_set(lc->locs, path, where);
    switch (r->type) {
    case CT_ROW_ADDR:
    case CT_ROW_HOSTPORT:
        return parse_address(lc, r, s, base, path);
    case CT_ROW_STRLIST:
    case CT_ROW_CIDRLIST:
        return parse_strings(lc, r, s, base, path);
    case CT_ROW_GROUP:
        if (config_setting_type(s) != CONFIG_TYPE_GROUP)
            return bad(lc, r, s, path, "invalid value");
        if (r->flags & CT_ROW_PRESENCE)
            *(bool *)((char *)base + r->off) = true;
        ct_conf_section_load(lc, r->sub, s, (char *)base + r->off, path);
        return CT_OK;
    case CT_ROW_LIST:
        return parse_list(lc, r, s, base, path);
    default:
        return parse_scalar(lc, r, s, (char *)base + r->off, path);
    }
}

const struct ct_conf_row *ct_conf_find_row(const struct ct_conf_section *sec, const char *name)
{
    for (size_t i = 0; i < sec->nrows; i++)
        if (strcmp(sec->rows[i].name, name) == 0)
            return &sec->rows[i];
    return NULL;
}

static void unknown_key(struct ct_conf_loadctx *lc, const struct ct_conf_section *sec,
                        const config_setting_t *s, const char *path)
{
    char where[300], list[400] = "";
    const char *best = NULL;
    unsigned best_d = 3; /* closer than this is a likely typo */
    const char *name = config_setting_name(s);
    for (size_t i = 0; i < sec->nrows; i++) {
        unsigned d = ct_conf_edit_distance(name, sec->rows[i].name);
        /* a typo, or one name inside the other ("listen_address", "max_object") */
        bool inside = strlen(name) >= 4 && (strstr(sec->rows[i].name, name) ||
                                            strstr(name, sec->rows[i].name));
        if (d < best_d || (inside && !best)) {
            best_d = CT_MIN(d, best_d);
            best = sec->rows[i].name;
        }
        size_t k = strlen(list);
        snprintf(list + k, sizeof(list) - k, "%s%s", k ? ", " : "", sec->rows[i].name);
    }
    ct_conf_setting_where(lc, s, where, sizeof(where));
    if (best)
        ct_conf_err(lc->errs, where, path, "unknown setting (did you mean \"%s\"?)", best);
    else
        ct_conf_err(lc->errs, where, path, "unknown setting (expected one of: %s)", list);
}

/* `log = { target = "syslog"; ... }` is the `logs` group under the singular
 * name operators also write (issue 40 names `log.target`; nginx's
 * `error_log`, HAProxy's `log`): the same rows, errors named as written.
 * Both spellings in one file would set the group twice: refused. */
static const struct ct_conf_row *log_group(struct ct_conf_loadctx *lc, const config_setting_t *grp,
                                           const config_setting_t *s, const char *spath)
{
    if (config_setting_get_member(grp, "logs")) {
        char where[300];
        ct_conf_setting_where(lc, s, where, sizeof(where));
        ct_conf_err(lc->errs, where, spath, "given twice (as \"log\" and \"logs\"; expected one)");
        return NULL;
    }
    return ct_conf_find_row(&ct_conf_root_section, "logs");
}

void ct_conf_section_load(struct ct_conf_loadctx *lc, const struct ct_conf_section *sec,
                          const config_setting_t *grp, void *base, const char *path)
{
    unsigned n = (unsigned)config_setting_length(grp);
    for (unsigned i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(grp, i);
        char spath[256];
        snprintf(spath, sizeof(spath), "%s%s%s", path, *path ? "." : "", config_setting_name(s));
        const struct ct_conf_row *r = ct_conf_find_row(sec, config_setting_name(s));
        if (!r && sec == &ct_conf_root_section && strcmp(config_setting_name(s), "log") == 0)
            r = log_group(lc, grp, s, spath);
        if (!r)
            unknown_key(lc, sec, s, spath);
        else
            ct_conf_row_parse(lc, r, s, base, spath);
    }
    char where[300];
    ct_conf_setting_where(lc, grp, where, sizeof(where));
    for (size_t i = 0; i < sec->nrows; i++) {
        const struct ct_conf_row *r = &sec->rows[i];
        char spath[256], expect[400];
        snprintf(spath, sizeof(spath), "%s%s%s", path, *path ? "." : "", r->name);
        const config_setting_t *s = config_setting_get_member(grp, r->name);
        const char *why = (s && sec->why_not) ? sec->why_not(r->name, base) : NULL;
        ct_conf_row_expect(r, expect, sizeof(expect));
        if ((r->flags & CT_ROW_REQUIRED) && !s)
            ct_conf_err(lc->errs, where, spath, "missing (expected %s)", expect);
        if (why) {
            char swhere[300];
            ct_conf_setting_where(lc, s, swhere, sizeof(swhere));
            ct_conf_err(lc->errs, swhere, spath, "not allowed here (%s)", why);
        }
    }
}

/* ---- whole configurations -------------------------------------------------- */

struct ct_conf *ct_conf_new_empty(const char *source)
{
    struct ct_conf *cf = ct_xcalloc(1, sizeof(*cf));
    cf->magic = CT_CONF_MAGIC;
    cf->source = ct_xstrdup(source);
    cf->_locs = ct_xcalloc(1, sizeof(*cf->_locs));
    ct_conf_section_defaults(&ct_conf_root_section, cf);
    return cf;
}

void ct_conf_free(struct ct_conf **cfp)
{
    struct ct_conf *cf = *cfp;
    if (!cf)
        return;
    CT_CHECK_OBJ(cf, CT_CONF_MAGIC);
    ct_conf_section_free(&ct_conf_root_section, cf);
    free(cf->flat_backends);
    free(cf->flat_group);
    ct_conf_fleet_free_derived(&cf->fleet);
    ct_conf_locs_free(cf->_locs);
    free(cf->_locs);
    free(cf->source);
    cf->magic = 0;
    free(cf);
    *cfp = NULL;
}

static int load(config_t *cfg, const char *name, struct ct_conf **out, struct ct_conf_errors *errs,
                bool finish)
{
    const char *incdir = config_get_include_dir(cfg);
    size_t before = errs->n + errs->dropped;
    struct ct_conf *cf = ct_conf_new_empty(name);
    struct ct_conf_loadctx lc = {errs, cf->_locs, name, false, incdir};
    ct_conf_section_load(&lc, &ct_conf_root_section, config_root_setting(cfg), cf, "");
    /* Cross-checks only on a structurally valid file: on a broken one they
     * would mostly repeat the same mistakes in other words. */
    if (finish && errs->n + errs->dropped == before)
        ct_conf_finish(cf, errs);
    if (errs->n + errs->dropped != before) {
        ct_conf_free(&cf);
        *out = NULL;
        return CT_ECONF;
    }
    *out = cf;
    return CT_OK;
}

static int syntax_error(config_t *cfg, const char *name, struct ct_conf_errors *errs)
{
    char where[300];
    const char *file = config_error_file(cfg);
    snprintf(where, sizeof(where), "%s:%d", file ? file : name, config_error_line(cfg));
    /* libconfig's texts are terse; add what was expected where we know it */
    static const struct {
        const char *text, *expect;
    } hints[] = {
        {"syntax error", " (expected libconfig syntax: name = value;)"},
        {"duplicate setting name", " (expected each setting once per group)"},
        {"cannot open include file", " (expected a readable file, relative to the including one)"},
    };
    const char *text = config_error_text(cfg), *expect = "";
    for (size_t i = 0; text && i < CT_ARRAY_LEN(hints); i++)
        if (strcmp(text, hints[i].text) == 0)
            expect = hints[i].expect;
    ct_conf_err(errs, where, NULL, "%s%s", text ? text : "parse error", expect);
    config_destroy(cfg);
    return CT_ECONF;
}

static void check_includes(const char *text, const char *name, const char *incdir,
                           struct ct_conf_errors *errs, int depth);

int ct_conf_read_string(const char *text, const char *name, struct ct_conf **out,
                        struct ct_conf_errors *errs, bool finish)
{
    config_t cfg;
    *out = NULL;
    size_t before = errs->n + errs->dropped;
    check_includes(text, name, NULL, errs, 0);
    if (errs->n + errs->dropped != before)
        return CT_ECONF;
    config_init(&cfg);
    if (config_read_string(&cfg, text) != CONFIG_TRUE)
        return syntax_error(&cfg, name, errs);
    int rc = load(&cfg, name, out, errs, finish);
    config_destroy(&cfg);
    return rc;
}

/* Read a whole file (bounded: a config past 16 MiB is a mistake). */
static char *slurp(const char *path, struct ct_conf_errors *errs)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        ct_conf_err(errs, path, NULL, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, n;
    char *buf = ct_xmalloc(cap);
    while ((n = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
        len += n;
        if (len + 1 == cap && cap < (16u << 20))
            buf = ct_xrealloc(buf, cap *= 2);
        else if (len + 1 == cap)
            break;
    }
    int bad = ferror(fp), eno = errno, big = len + 1 == cap && fgetc(fp) != EOF;
    fclose(fp);
    if (bad || big) {
        ct_conf_err(errs, path, NULL, bad ? "cannot read: %s" : "larger than 16M (expected %s)",
                    bad ? strerror(eno) : "a configuration file");
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

/* libconfig 1.5 calls exit() from its scanner when an @include names
 * something that opens but can't be read as a file, such as a directory
 * (libconfig issue #292): a reload would kill the running proxy. So look at
 * every @include line first and refuse anything but a regular file. Nested
 * includes are followed to libconfig's own depth limit. */
static void check_includes(const char *text, const char *name, const char *incdir,
                           struct ct_conf_errors *errs, int depth)
{
    unsigned line = 1;
    for (const char *p = text; *p; line++) {
        const char *eol = strchr(p, '\n');
        size_t llen = eol ? (size_t)(eol - p) : strlen(p);
        const char *q = p + strspn(p, " \t");
        if (strncmp(q, "@include", 8) == 0 && (q[8] == ' ' || q[8] == '\t')) {
            q += 8 + strspn(q + 8, " \t");
            const char *close = *q == '"' ? memchr(q + 1, '"', llen - (size_t)(q + 1 - p)) : NULL;
            char file[4096];
            struct stat st;
            if (close && (size_t)(close - q) < 2000) {
                int k = (int)(close - q - 1);
                if (q[1] == '/' || !incdir)
                    snprintf(file, sizeof(file), "%.*s", k, q + 1);
                else
                    snprintf(file, sizeof(file), "%s/%.*s", incdir, k, q + 1);
                if (stat(file, &st) == 0 && !S_ISREG(st.st_mode)) {
                    char where[300];
                    snprintf(where, sizeof(where), "%s:%u", name, line);
                    ct_conf_err(errs, where, NULL, "@include \"%s\": not a regular file "
                                                   "(expected a configuration file)", file);
                } else if (stat(file, &st) == 0 && depth < 10) {
                    struct ct_conf_errors ignored; /* libconfig reports those itself */
                    char *sub = slurp(file, &ignored);
                    if (sub)
                        check_includes(sub, file, incdir, errs, depth + 1);
                    free(sub);
                }
            }
        }
        p += llen + (eol ? 1 : 0);
    }
}

int ct_conf_read_file(const char *path, struct ct_conf **out, struct ct_conf_errors *errs,
                      bool finish)
{
    config_t cfg;
    *out = NULL;
    char *text = slurp(path, errs);
    if (!text)
        return CT_ECONF;
    /* @include "x.conf" resolves next to the file, not the working directory */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    size_t before = errs->n + errs->dropped;
    check_includes(text, path, dir, errs, 0);
    if (errs->n + errs->dropped != before) {
        free(text);
        return CT_ECONF;
    }
    config_init(&cfg);
    config_set_include_dir(&cfg, dir);
    int ok = config_read_string(&cfg, text);
    free(text);
    if (ok != CONFIG_TRUE)
        return syntax_error(&cfg, path, errs);
    int rc = load(&cfg, path, out, errs, finish);
    config_destroy(&cfg);
    return rc;
}

int ct_conf_load_string(const char *text, const char *name, struct ct_conf **out,
                        struct ct_conf_errors *errs)
{
    return ct_conf_read_string(text, name, out, errs, true);
}

int ct_conf_load_file(const char *path, struct ct_conf **out, struct ct_conf_errors *errs)
{
    return ct_conf_read_file(path, out, errs, true);
}

const char ct_conf_embedded_default[] =
    "listen = (\n"
    "  { kind = \"http\"; address = \"127.0.0.1:8080\"; },\n"
    "  { kind = \"https\"; address = \"127.0.0.1:8443\"; tls = { self_signed = true; }; }\n"
    ");\n"
    "backends = ( { address = \"127.0.0.1:8081\"; } );\n";

int ct_conf_default(struct ct_conf **out)
{
    struct ct_conf_errors errs;
    ct_conf_errors_init(&errs);
    int rc = ct_conf_load_string(ct_conf_embedded_default, "<default>", out, &errs);
    if (rc != CT_OK)
        ct_panic(__FILE__, __LINE__, "embedded default: %s", errs.msg[0]);
    return rc;
}
