/*
 * conf/conf_route.c: the cross-checks of backend groups, sites and routes
 * (issue 15), run by ct_conf_finish after every field is read.
 *
 *   - derived: the group "default" over the top-level backends, each
 *     group's hash_on, each site's and route's group index;
 *   - every name a route or site refers to exists, names are unique, one
 *     host is served by one site, at most one default site;
 *   - every value a row cannot judge alone: regular expressions (compiled
 *     here with PCRE2, whose error offset the message gives), header and
 *     cookie conditions, header rules and their variables, redirect and
 *     fixed-answer statuses;
 *   - a route that an earlier one of its site shadows (the earlier one
 *     matches every request the later one does) "can never match".
 *
 * proxy/route/ compiles the same data again into its route table; the
 * checks here are what guarantee that compile cannot fail.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"
#include "http/http.h"

static const char *loc(const struct ct_conf *cf, const char *path)
{
    return ct_conf_locs_find(cf->_locs, path, cf->source);
}

#define ERR(path, ...) ct_conf_err(errs, loc(cf, (path)), (path), __VA_ARGS__)

/* ---- variables ------------------------------------------------------------- */

static const char *const var_names[] = {
#define CT_CONF_VAR_NAME(id, name, what) [CT_CONF_VAR_##id] = name,
    CT_CONF_VAR_TABLE(CT_CONF_VAR_NAME)
#undef CT_CONF_VAR_NAME
};

int ct_conf_var_parse(const char *s, size_t *len)
{
    if (s[0] != '$')
        return -1;
    if (s[1] == '$') {
        *len = 2;
        return CT_CONF_VAR_DOLLAR;
    }
    bool brace = s[1] == '{';
    const char *name = s + 1 + brace;
    size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz_");
    if (brace && name[n] != '}')
        return -1;
    for (size_t i = 0; i < CT_ARRAY_LEN(var_names); i++) {
        if (strlen(var_names[i]) == n && memcmp(var_names[i], name, n) == 0) {
            *len = 1 + brace + n + brace;
            return (int)i;
        }
    }
    return -1;
}

/* Every '$' in TEXT starts a known variable. */
static void check_template(const struct ct_conf *cf, struct ct_conf_errors *errs,
                           const char *path, const char *text)
{
    for (const char *p = strchr(text, '$'); p; p = strchr(p, '$')) {
        size_t len;
        if (ct_conf_var_parse(p, &len) < 0) {
            ERR(path, "unknown variable at \"%.20s\" (expected $scheme, $host, $path, $query, "
                      "$uri, $client, $request_id, $site, $route or $$)", p);
            return;
        }
        p += len;
    }
}

/* ---- small syntax helpers -------------------------------------------------- */

static bool is_token_n(const char *s, size_t n)
{
    return n > 0 && ct_http_is_token(ct_str_make(s, n));
}

/* "Name" or "Name: value" (SEP ':') / "name" or "name=value" (SEP '='):
 * the name's length, and *VALUE (NULL when absent). */
static size_t split_cond(const char *s, char sep, const char **value)
{
    const char *p = strchr(s, sep);
    *value = NULL;
    if (!p)
        return strlen(s);
    const char *v = p + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    *value = v;
    return (size_t)(p - s);
}

/* A name of the group list (and its references): letters, digits, - _ . */
static bool is_name(const char *s)
{
    return *s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
                     strlen(s);
}

/* ---- groups ------------------------------------------------------------------ */

static int find_group(const struct ct_conf *cf, const char *name)
{
    if (name == NULL || strcmp(name, "default") == 0)
        return 0;
    for (size_t i = 0; i < cf->ngroups; i++)
        if (strcmp(cf->groups[i].name, name) == 0)
            return (int)i + 1;
    return -1;
}

static void group_list(const struct ct_conf *cf, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "\"default\"");
    for (size_t i = 0; i < cf->ngroups && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, ", \"%s\"", cf->groups[i].name);
}

static void resolve_group(const struct ct_conf *cf, struct ct_conf_errors *errs,
                          const char *path, const char *name, size_t *out)
{
    int g = find_group(cf, name);
    if (g >= 0) {
        *out = (size_t)g;
        return;
    }
    char names[400];
    group_list(cf, names, sizeof(names));
    ERR(path, "unknown backend group \"%s\" (expected one of %s)", name, names);
    *out = 0;
}

static void check_hash_on(struct ct_conf *cf, struct ct_conf_errors *errs, size_t i)
{
    struct ct_conf_group *g = &cf->groups[i];
    char path[96];
    snprintf(path, sizeof(path), "backend_groups[%zu].hash_on", i);
    const char *t = g->hash_on_text;
    g->hash_name = NULL;
    if (strcmp(t, "key") == 0) {
        g->hash_on = CT_CONF_HASH_KEY;
    } else if (strcmp(t, "client") == 0) {
        g->hash_on = CT_CONF_HASH_CLIENT;
    } else if (strncmp(t, "header:", 7) == 0 && is_token_n(t + 7, strlen(t + 7))) {
        g->hash_on = CT_CONF_HASH_HEADER;
        g->hash_name = t + 7;
    } else if (strncmp(t, "cookie:", 7) == 0 && is_token_n(t + 7, strlen(t + 7))) {
        g->hash_on = CT_CONF_HASH_COOKIE;
        g->hash_name = t + 7;
    } else {
        ERR(path, "invalid value \"%s\" (expected \"key\", \"client\", \"header:NAME\" or "
                  "\"cookie:NAME\")", t);
    }
    if (g->balance != CT_CONF_BALANCE_HASH && g->hash_on != CT_CONF_HASH_KEY)
        ERR(path, "set while balance is not \"hash\" (expected balance = \"hash\" with it)");
}

static void check_groups(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    cf->default_group = (struct ct_conf_group){
        .name = (char *)"default",
        .balance = CT_CONF_BALANCE_RR,
        .hash_on_text = (char *)"key",
        .hash_balance_factor = 125,
        .backends = cf->backends,
        .nbackends = cf->nbackends,
        .hash_on = CT_CONF_HASH_KEY,
    };
    for (size_t i = 0; i < cf->ngroups; i++) {
        struct ct_conf_group *g = &cf->groups[i];
        char path[96];
        snprintf(path, sizeof(path), "backend_groups[%zu].name", i);
        if (!is_name(g->name))
            ERR(path, "invalid name \"%s\" (expected letters, digits, -, _ or .)", g->name);
        else if (strcmp(g->name, "default") == 0)
            ERR(path, "\"default\" is the top-level backends (expected another name)");
        for (size_t j = 0; j < i; j++) {
            if (strcmp(cf->groups[j].name, g->name) == 0) {
                char other[96];
                snprintf(other, sizeof(other), "backend_groups[%zu]", j);
                ERR(path, "\"%s\" is already the name of %s at %s (expected a distinct name)",
                    g->name, other, loc(cf, other));
                break;
            }
        }
        snprintf(path, sizeof(path), "backend_groups[%zu].backends", i);
        if (g->nbackends == 0)
            ERR(path, "no backend (expected at least one { address = \"HOST:PORT\"; })");
        for (size_t k = 0; k < g->nbackends; k++) {
            struct ct_conf_backend *b = &g->backends[k];
            if (b->name[0] == '\0') { /* the group's name first: one address may serve two */
                char name[400];
                bool v6 = strchr(b->host, ':') != NULL;
                snprintf(name, sizeof(name), "%s/%s%s%s:%u", g->name, v6 ? "[" : "", b->host,
                         v6 ? "]" : "", (unsigned)b->port);
                free(b->name);
                b->name = ct_xstrdup(name);
            }
        }
        ct_conf_check_backend_list(cf, errs, path, g->backends, g->nbackends);
        check_hash_on(cf, errs, i);
        if (g->balance == CT_CONF_BALANCE_HASH && g->nbackends > 256) /* CT_BALANCE_MAX */
            ERR(path, "%zu backends (expected at most 256 in a hash group)", g->nbackends);
    }
}

/* ---- sites ------------------------------------------------------------------- */

static void check_sites(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    size_t ndefault = 0;
    for (size_t i = 0; i < cf->nsites; i++) {
        struct ct_conf_site *s = &cf->sites[i];
        char path[96];
        snprintf(path, sizeof(path), "sites[%zu].name", i);
        if (!is_name(s->name))
            ERR(path, "invalid name \"%s\" (expected letters, digits, -, _ or .)", s->name);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(cf->sites[j].name, s->name) == 0) {
                char other[96];
                snprintf(other, sizeof(other), "sites[%zu].name", j);
                ERR(path, "duplicate site name \"%s\", already at %s (expected a distinct name)",
                    s->name, loc(cf, other));
                break;
            }
        }
        if (s->is_default && ++ndefault == 2) {
            snprintf(path, sizeof(path), "sites[%zu].default", i);
            ERR(path, "a second default site (expected at most one)");
        }
        if (s->nhosts == 0 && !s->is_default) {
            snprintf(path, sizeof(path), "sites[%zu].hosts", i);
            ERR(path, "the site serves no host (expected hosts = [\"example.com\"], or "
                      "default = true)");
        }
        for (size_t h = 0; h < s->nhosts; h++) {
            for (size_t j = 0; j <= i; j++) {
                const struct ct_conf_site *o = &cf->sites[j];
                size_t lim = j == i ? h : o->nhosts;
                size_t k = 0;
                while (k < lim && strcmp(o->hosts[k], s->hosts[h]) != 0)
                    k++;
                if (k == lim)
                    continue;
                snprintf(path, sizeof(path), "sites[%zu].hosts[%zu]", i, h);
                ERR(path, "host \"%s\" is already served by site \"%s\" (expected each host in "
                          "one site)", s->hosts[h], o->name);
                j = i; /* once */
            }
        }
        snprintf(path, sizeof(path), "sites[%zu].backend_group", i);
        resolve_group(cf, errs, path, s->backend_group, &s->group);
    }
}

/* ---- routes ------------------------------------------------------------------ */

static void check_regex(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *path,
                        const char *re)
{
    int code;
    PCRE2_SIZE off;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, 0, &code, &off, NULL);
    if (c) {
        pcre2_code_free(c);
        return;
    }
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(code, msg, sizeof(msg));
    ERR(path, "invalid regular expression \"%s\": %s at offset %zu (expected a PCRE2 pattern)",
        re, (const char *)msg, (size_t)off);
}

/* Conditions "Name" / "Name: value" (headers, SEP ':') or "name" /
 * "name=value" (cookies and query, SEP '='). */
static void check_conds(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *path,
                        char **v, size_t n, char sep, bool need_value)
{
    for (size_t i = 0; i < n; i++) {
        const char *value;
        size_t nl = split_cond(v[i], sep, &value);
        bool ok = sep == ':' || sep == '=' ? is_token_n(v[i], nl) : false;
        if (sep == '=' && nl > 0 && strcspn(v[i], "&#; ") >= nl)
            ok = true; /* query names are not tokens: anything but the separators */
        if (ok && need_value && !value)
            ok = false;
        if (ok)
            continue;
        char epath[160];
        snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
        if (sep == ':')
            ERR(epath, "invalid condition \"%s\" (expected %s)", v[i],
                need_value ? "\"Name: value\"" : "\"Name\" or \"Name: value\"");
        else
            ERR(epath, "invalid condition \"%s\" (expected \"name\" or \"name=value\")", v[i]);
    }
}

/* "set Name: value", "append Name: value", "remove Name". */
static void check_rules(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *path,
                        char **v, size_t n)
{
    if (n > 16) /* what the request core holds per request (proxy/core/fetch.c) */
        ERR(path, "%zu rules (expected at most 16)", n);
    for (size_t i = 0; i < n; i++) {
        char epath[160];
        snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
        const char *s = v[i], *arg = NULL;
        bool rm = false;
        if (strncmp(s, "set ", 4) == 0)
            arg = s + 4;
        else if (strncmp(s, "append ", 7) == 0)
            arg = s + 7;
        else if (strncmp(s, "remove ", 7) == 0)
            arg = s + 7, rm = true;
        const char *value = NULL;
        size_t nl = arg ? split_cond(arg, ':', &value) : 0;
        bool ok = arg && is_token_n(arg, nl) && (rm ? !value : value != NULL);
        if (!ok) {
            ERR(epath, "invalid rule \"%s\" (expected \"set Name: value\", \"append Name: "
                       "value\" or \"remove Name\")", s);
            continue;
        }
        if (value)
            check_template(cf, errs, epath, value);
        if (ct_hdr_flags(ct_hdr_lookup(ct_str_make(arg, nl))) & (CT_HDRF_HOP | CT_HDRF_PINNED))
            ERR(epath, "\"%.*s\" is a framing or hop-by-hop field, which cachet manages "
                       "(expected an end-to-end field)", (int)nl, arg);
    }
}

static void check_cache_overrides(const struct ct_conf *cf, struct ct_conf_errors *errs,
                                  const char *rpath, const struct ct_conf_route_cache *c)
{
    char path[160];
    for (size_t i = 0; i < c->nttl_statuses; i++) {
        char *end;
        unsigned long st = strtoul(c->ttl_statuses[i], &end, 10);
        if (*end != '\0' || st < 100 || st > 599) {
            snprintf(path, sizeof(path), "%s.cache.ttl_statuses[%zu]", rpath, i);
            ERR(path, "invalid status \"%s\" (expected a number from 100 to 599)",
                c->ttl_statuses[i]);
        }
    }
    if (c->min_ttl_ms != CT_CONF_INHERIT && c->max_ttl_ms != CT_CONF_INHERIT &&
        c->min_ttl_ms > c->max_ttl_ms) {
        snprintf(path, sizeof(path), "%s.cache.min_ttl", rpath);
        ERR(path, "larger than max_ttl (expected min_ttl <= max_ttl)");
    }
    for (size_t i = 0; i < c->nkey_drop_params; i++) {
        const char *p = c->key_drop_params[i];
        size_t n = strlen(p), star = strcspn(p, "*");
        if (strcspn(p, "&=#; ") != n || (star != n && star != n - 1) || (n == 1 && *p == '*')) {
            snprintf(path, sizeof(path), "%s.cache.key_drop_params[%zu]", rpath, i);
            ERR(path, "invalid parameter \"%s\" (expected a name, or a prefix and *, such as "
                      "\"utm_*\")", p);
        }
    }
    if (c->key_header && !is_token_n(c->key_header, strlen(c->key_header))) {
        snprintf(path, sizeof(path), "%s.cache.key_header", rpath);
        ERR(path, "invalid header name \"%s\" (expected a token such as X-Name)", c->key_header);
    }
    if (c->key_cookie && !is_token_n(c->key_cookie, strlen(c->key_cookie))) {
        snprintf(path, sizeof(path), "%s.cache.key_cookie", rpath);
        ERR(path, "invalid cookie name \"%s\" (expected a token)", c->key_cookie);
    }
}

static void check_answers(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *rpath,
                          const struct ct_conf_route *r)
{
    char path[160];
    unsigned rs = r->redirect.status;
    if (rs && rs != 301 && rs != 302 && rs != 303 && rs != 307 && rs != 308) {
        snprintf(path, sizeof(path), "%s.redirect.status", rpath);
        ERR(path, "invalid redirect status %u (expected 301, 302, 303, 307 or 308)", rs);
    }
    snprintf(path, sizeof(path), "%s.redirect.location", rpath);
    if (rs && r->redirect.location[0] == '\0')
        ERR(path, "a redirect without a location (expected a URL such as "
                  "\"https://$host$uri\")");
    check_template(cf, errs, path, r->redirect.location);
    if (r->respond.status && r->respond.status < 200) {
        snprintf(path, sizeof(path), "%s.respond.status", rpath);
        ERR(path, "invalid status %u (expected 200 to 599)", r->respond.status);
    }
    if (r->respond.status && rs) {
        snprintf(path, sizeof(path), "%s.respond", rpath);
        ERR(path, "set together with redirect (expected one answer)");
    }
    snprintf(path, sizeof(path), "%s.respond.body", rpath);
    check_template(cf, errs, path, r->respond.body);
}

/* ---- shadowing -------------------------------------------------------------- */

static bool strs_subset(char **sub, size_t nsub, char **of, size_t nof)
{
    for (size_t i = 0; i < nsub; i++) {
        size_t k = 0;
        while (k < nof && strcmp(sub[i], of[k]) != 0)
            k++;
        if (k == nof)
            return false;
    }
    return true;
}

/* Does condition list B imply every condition of A? Same name (headers:
 * case-insensitive) and A's value absent or the same. */
static bool conds_implied(char **a, size_t na, char **b, size_t nb, char sep)
{
    for (size_t i = 0; i < na; i++) {
        const char *av, *bv;
        size_t an = split_cond(a[i], sep, &av), k = 0;
        for (; k < nb; k++) {
            size_t bn = split_cond(b[k], sep, &bv);
            bool same = an == bn && (sep == ':' ? strncasecmp(a[i], b[k], an) == 0
                                                : strncmp(a[i], b[k], an) == 0);
            if (same && (!av || (bv && strcmp(av, bv) == 0)))
                break;
        }
        if (k == nb)
            return false;
    }
    return true;
}

static bool cidr_inside(const struct ct_conf_cidr *in, const struct ct_conf_cidr *out)
{
    return in->family == out->family && out->prefix_len <= in->prefix_len &&
           ct_conf_cidr_match(out, in->family, in->addr);
}

/* Does A match every request B matches? Conservative: "yes" only when it is
 * sure, so a warning is never wrong (a regex covers only the same regex). */
static bool covers(const struct ct_conf_match *a, const struct ct_conf_match *b)
{
    if (a->path_regex && !(b->path_regex && strcmp(a->path_regex, b->path_regex) == 0))
        return false;
    if (a->path && !(b->path && strcmp(a->path, b->path) == 0))
        return false;
    if (a->path_prefix) {
        const char *bp = b->path ? b->path : b->path_prefix;
        if (!bp || strncmp(bp, a->path_prefix, strlen(a->path_prefix)) != 0)
            return false;
    }
    if (a->nmethods && (!b->nmethods || !strs_subset(b->methods, b->nmethods, a->methods,
                                                     a->nmethods)))
        return false;
    if (!conds_implied(a->headers, a->nheaders, b->headers, b->nheaders, ':') ||
        !conds_implied(a->cookies, a->ncookies, b->cookies, b->ncookies, '=') ||
        !conds_implied(a->query, a->nquery, b->query, b->nquery, '='))
        return false;
    if (a->nclient) {
        if (!b->nclient)
            return false;
        for (size_t i = 0; i < b->nclient; i++) {
            size_t k = 0;
            while (k < a->nclient && !cidr_inside(&b->client[i], &a->client[k]))
                k++;
            if (k == a->nclient)
                return false;
        }
    }
    return true;
}

static void check_route(struct ct_conf *cf, struct ct_conf_errors *errs, size_t si, size_t ri)
{
    struct ct_conf_site *s = &cf->sites[si];
    struct ct_conf_route *r = &s->routes[ri];
    const struct ct_conf_match *m = &r->match;
    char rpath[96], path[160];
    snprintf(rpath, sizeof(rpath), "sites[%zu].routes[%zu]", si, ri);
    snprintf(path, sizeof(path), "%s.backend_group", rpath);
    r->group = s->group;
    if (r->backend_group)
        resolve_group(cf, errs, path, r->backend_group, &r->group);
    if (m->path && m->path_prefix) {
        snprintf(path, sizeof(path), "%s.match.path_prefix", rpath);
        ERR(path, "set together with match.path (expected one of them)");
    }
    if (m->path && m->path[0] != '/') {
        snprintf(path, sizeof(path), "%s.match.path", rpath);
        ERR(path, "invalid path \"%s\" (expected a path starting with /)", m->path);
    }
    if (m->path_prefix && m->path_prefix[0] != '/') {
        snprintf(path, sizeof(path), "%s.match.path_prefix", rpath);
        ERR(path, "invalid path \"%s\" (expected a path starting with /)", m->path_prefix);
    }
    if (m->path_regex) {
        snprintf(path, sizeof(path), "%s.match.path_regex", rpath);
        check_regex(cf, errs, path, m->path_regex);
    }
    for (size_t i = 0; i < m->nmethods; i++) {
        if (!is_token_n(m->methods[i], strlen(m->methods[i]))) {
            snprintf(path, sizeof(path), "%s.match.methods[%zu]", rpath, i);
            ERR(path, "invalid method \"%s\" (expected a token such as GET)", m->methods[i]);
        }
    }
    snprintf(path, sizeof(path), "%s.match.headers", rpath);
    check_conds(cf, errs, path, m->headers, m->nheaders, ':', false);
    snprintf(path, sizeof(path), "%s.match.cookies", rpath);
    check_conds(cf, errs, path, m->cookies, m->ncookies, '=', false);
    snprintf(path, sizeof(path), "%s.match.query", rpath);
    check_conds(cf, errs, path, m->query, m->nquery, '=', false);
    snprintf(path, sizeof(path), "%s.require_headers", rpath);
    check_conds(cf, errs, path, r->require_headers, r->nrequire_headers, ':', true);
    snprintf(path, sizeof(path), "%s.request_headers", rpath);
    check_rules(cf, errs, path, r->request_headers, r->nrequest_headers);
    snprintf(path, sizeof(path), "%s.response_headers", rpath);
    check_rules(cf, errs, path, r->response_headers, r->nresponse_headers);
    check_cache_overrides(cf, errs, rpath, &r->cache);
    check_answers(cf, errs, rpath, r);
    for (size_t j = 0; j < ri; j++) {
        if (!covers(&s->routes[j].match, m))
            continue;
        char other[96];
        snprintf(other, sizeof(other), "sites[%zu].routes[%zu]", si, j);
        ERR(rpath, "can never match: %s at %s matches every request this route matches "
                   "(expected it before that route, or a narrower earlier one)",
            other, loc(cf, other));
        break;
    }
}

/* The flat list of every backend (conf.h), and one name per backend in it:
 * the proxy's counters and reloads know a backend by its name. */
static void flatten(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    free(cf->flat_backends);
    free(cf->flat_group);
    size_t n = 0;
    for (size_t g = 0; g < ct_conf_ngroups(cf); g++)
        n += ct_conf_group_at(cf, g)->nbackends;
    cf->flat_backends = ct_xcalloc(n ? n : 1, sizeof(*cf->flat_backends));
    cf->flat_group = ct_xcalloc(n ? n : 1, sizeof(*cf->flat_group));
    cf->nflat = 0;
    for (size_t g = 0; g < ct_conf_ngroups(cf); g++) {
        const struct ct_conf_group *gr = ct_conf_group_at(cf, g);
        for (size_t i = 0; i < gr->nbackends; i++) {
            const struct ct_conf_backend *b = &gr->backends[i];
            for (size_t k = 0; k < cf->nflat; k++) {
                if (strcmp(cf->flat_backends[k].name, b->name) != 0)
                    continue;
                char path[96];
                snprintf(path, sizeof(path), "backend_groups[%zu].backends[%zu].name", g - 1, i);
                ERR(path, "\"%s\" is already the name of a backend of group \"%s\" (expected "
                          "a distinct name)", b->name, ct_conf_group_at(cf, cf->flat_group[k])->name);
                break;
            }
            cf->flat_group[cf->nflat] = g;
            cf->flat_backends[cf->nflat++] = *b;
        }
    }
}

static void check_listener_sites(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    for (size_t i = 0; i < cf->nlisteners; i++) {
        struct ct_conf_listener *l = &cf->listeners[i];
        l->default_site_index = -1;
        if (!l->default_site)
            continue;
        for (size_t k = 0; k < cf->nsites && l->default_site_index < 0; k++)
            if (strcmp(cf->sites[k].name, l->default_site) == 0)
                l->default_site_index = (int)k;
        if (l->default_site_index < 0) {
            char path[96];
            snprintf(path, sizeof(path), "listen[%zu].default_site", i);
            ERR(path, "unknown site \"%s\" (expected the name of one of sites)", l->default_site);
        }
    }
}

void ct_conf_check_routes(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    check_groups(cf, errs);
    flatten(cf, errs);
    check_sites(cf, errs);
    check_listener_sites(cf, errs);
    for (size_t i = 0; i < cf->nsites; i++)
        for (size_t k = 0; k < cf->sites[i].nroutes; k++)
            check_route(cf, errs, i, k);
}
