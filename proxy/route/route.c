/*
 * proxy/route/route.c: the route table: built once per configuration,
 * consulted once per request without allocating.
 *
 * Layout. Hosts go into one open-addressing hash table: exact names as
 * written ("www.example.com"), wildcards by their suffix with its dot
 * (".example.com" for "*.example.com"); an exact name never starts with a
 * dot, so the two cannot collide. A lookup hashes the normalised host, then
 * each suffix after a dot, left to right, so the longest wildcard wins
 * (nginx's rule). Each site holds its routes in order; a route is a list of
 * precompiled conditions tried cheapest first (path, method, then the
 * client address, headers, cookies, query, and the regex last), so a prefix
 * route costs a length compare and a memcmp.
 *
 * Regexes are PCRE2, JIT-compiled here; the match data lives in a per-thread
 * scratch (one ovector pair: only "matched or not" is asked).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <netinet/in.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/http.h"
#include "proxy/route/route.h"
#include "proxy/route/route_int.h"

#define HOST_MAX 255 /* RFC 1035 §2.3.4; longer hosts match no name */

struct cond {
    struct ct_str name, value;
    bool has_value;
};

enum path_kind { PATH_ANY, PATH_EXACT, PATH_PREFIX };

struct croute {
    struct ct_route pub;
    enum path_kind path_kind;
    struct ct_str path;
    pcre2_code *re;
    struct ct_str re_lit; /* a literal the path must start with for RE to match */
    size_t nclient;
    struct ct_str *methods;
    size_t nmethods;
    struct cond *headers, *cookies, *query, *require;
    size_t nheaders, ncookies, nquery, nrequire;
    char *name_buf; /* route_name when it is made up (an index) */
};

/* The path test of one route, packed (24 bytes) so a site's 20 routes are
 * 8 cache lines: the first 8 bytes of the prefix (or exact path, or a
 * regex's literal start) compared as one word, the rest by memcmp. */
struct pfilter {
    uint64_t head, mask;
    uint32_t len;
    uint8_t kind;      /* enum path_kind */
    bool only_path;    /* no other condition: a pass here is a match */
};

/* Which routes a path can match, by the path's second byte (the one after
 * the leading '/'): the routes whose literal has that byte there, and those
 * with no literal that long, in their order. Bucket 256 is for paths
 * shorter than 2 bytes. A request looks at its bucket only, so a site's
 * routes under other first letters cost it nothing. */
#define NBUCKETS 257

struct csite {
    uint32_t boff[NBUCKETS + 1]; /* bucket b is bidx[boff[b] .. boff[b + 1]) */
    uint32_t *bidx;
    struct pfilter *pf;
    struct croute *routes;
    size_t nroutes;
    struct croute fallback;
};

struct hent {
    const char *name; /* NULL = empty slot */
    size_t len;
    uint64_t hash;
    size_t site;
};

struct ct_route_table {
    struct csite *sites;
    size_t nsites;
    struct hent *hosts;
    size_t hmask;
    bool has_wild;
    /* bit N: some exact name (EXACT_LEN) / wildcard suffix (WILD_LEN) is N
     * bytes long, so a host of another length skips the hashing */
    uint64_t exact_len[4], wild_len[4];
    bool uses_client; /* some route tests the client address */
    long default_site; /* -1: none */
    struct croute fallback;
    const struct ct_route **by_id;
    size_t nids;
};

struct ct_route_scratch {
    pcre2_match_data *md;
};

/* FNV-1a run from the last byte to the first, so that one pass over a
 * host gives the hash of every suffix too (the wildcards' keys). */
#define FNV_INIT 0xcbf29ce484222325ull
#define FNV_STEP(h, c) (((h) ^ (unsigned char)(c)) * 0x100000001b3ull)
static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = FNV_INIT;
    while (n)
        h = FNV_STEP(h, p[--n]);
    return h;
}

/* Exact names hash 8 bytes at a time, lower-casing as they go (SWAR: the
 * bytes 'A'..'Z' get 0x20), into BUF when not NULL: the common lookup, a
 * host that is one site's name, costs a few instructions per word. */
static uint64_t lower8(uint64_t x)
{
    uint64_t low7 = x & 0x7f7f7f7f7f7f7f7full;
    uint64_t ge_a = low7 + 0x3f3f3f3f3f3f3f3full; /* high bit: >= 'A' */
    uint64_t gt_z = low7 + 0x2525252525252525ull; /* high bit: > 'Z' */
    uint64_t upper = (ge_a ^ gt_z) & ~x & 0x8080808080808080ull;
    return x | (upper >> 2);
}

static uint64_t hash_exact(const char *p, size_t n, char *buf)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* fixed-size copies: inlined, no calls */
        memcpy(&w, p + i, 8);
        w = lower8(w);
        if (buf)
            memcpy(buf + i, &w, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    if (i < n) { /* the tail, a byte at a time into the last word */
        w = 0;
        for (size_t k = 0; i + k < n; k++) {
            char c = ct_ascii_lower(p[i + k]);
            if (buf)
                buf[i + k] = c;
            w |= (uint64_t)(unsigned char)c << (8 * k);
        }
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    return h;
}

/* "^/literal..." regexes: the literal, which a cheap memcmp checks before
 * PCRE2 runs (most route regexes start so, and a missed JIT call is ~20 ns
 * hot but far more once 2000 of them no longer fit the caches). Stops
 * before any metacharacter and before a character a quantifier follows;
 * none at all when a top-level '|' could make the '^' optional. */
static struct ct_str regex_literal(const char *re)
{
    if (re[0] != '^')
        return CT_STR_NULL;
    int depth = 0;
    for (const char *p = re; *p; p++) {
        if (*p == '\\' && p[1])
            p++;
        else if (*p == '(' || *p == '[')
            depth++; /* a class's '|' is literal: counting it as a group is only careful */
        else if ((*p == ')' || *p == ']') && depth > 0)
            depth--;
        else if (*p == '|' && depth == 0)
            return CT_STR_NULL;
    }
    const char *start = re + 1, *p = start;
    while (*p && !strchr("\\^$.[]|()?*+{}", *p))
        p++;
    if (*p && strchr("?*+{", *p) && p > start)
        p--; /* "^/ab*": b is optional */
    return ct_str_make(start, (size_t)(p - start));
}

/* ---- building ------------------------------------------------------------ */

static struct cond *compile_conds(char **v, size_t n, char sep)
{
    struct cond *c = n ? ct_xcalloc(n, sizeof(*c)) : NULL;
    for (size_t i = 0; i < n; i++) {
        const char *s = v[i], *p = strchr(s, sep);
        c[i].name = ct_str_make(s, p ? (size_t)(p - s) : strlen(s));
        if (p) {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            c[i].value = ct_str_c(p);
            c[i].has_value = true;
        }
    }
    return c;
}

static struct ct_route_hdr_rule *compile_rules(char **v, size_t n)
{
    struct ct_route_hdr_rule *r = n ? ct_xcalloc(n, sizeof(*r)) : NULL;
    for (size_t i = 0; i < n; i++) {
        const char *s = v[i];
        r[i].op = s[0] == 's' ? CT_ROUTE_HDR_SET : s[0] == 'a' ? CT_ROUTE_HDR_APPEND
                                                                : CT_ROUTE_HDR_REMOVE;
        const char *arg = strchr(s, ' ') + 1, *colon = strchr(arg, ':');
        r[i].name = ct_str_make(arg, colon ? (size_t)(colon - arg) : strlen(arg));
        if (colon) {
            const char *val = colon + 1;
            while (*val == ' ' || *val == '\t')
                val++;
            r[i].value = ct_route_tpl_compile(val);
        }
    }
    return r;
}

static void free_rules(const struct ct_route_hdr_rule *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ct_route_tpl_free((struct ct_route_tpl *)r[i].value);
    free((void *)r);
}

static int compile_route(struct croute *cr, const struct ct_conf_route *rc, char *err,
                         size_t errlen)
{
    const struct ct_conf_match *m = &rc->match;
    if (m->path) {
        cr->path_kind = PATH_EXACT;
        cr->path = ct_str_c(m->path);
    } else if (m->path_prefix) {
        cr->path_kind = PATH_PREFIX;
        cr->path = ct_str_c(m->path_prefix);
    }
    if (m->path_regex) {
        int code;
        PCRE2_SIZE off;
        cr->re = pcre2_compile((PCRE2_SPTR)m->path_regex, PCRE2_ZERO_TERMINATED, 0, &code, &off,
                               NULL);
        if (!cr->re) {
            snprintf(err, errlen, "route %s: regex \"%s\" does not compile", cr->pub.route_name,
                     m->path_regex);
            return CT_ECONF;
        }
        /* Without JIT (an architecture PCRE2 has none for) the interpreter
         * answers the same, slower. */
        (void)pcre2_jit_compile(cr->re, PCRE2_JIT_COMPLETE);
        cr->re_lit = regex_literal(m->path_regex);
    }
    cr->nclient = m->nclient;
    cr->nmethods = m->nmethods;
    cr->methods = m->nmethods ? ct_xcalloc(m->nmethods, sizeof(*cr->methods)) : NULL;
    for (size_t i = 0; i < m->nmethods; i++)
        cr->methods[i] = ct_str_c(m->methods[i]);
    cr->headers = compile_conds(m->headers, cr->nheaders = m->nheaders, ':');
    cr->cookies = compile_conds(m->cookies, cr->ncookies = m->ncookies, '=');
    cr->query = compile_conds(m->query, cr->nquery = m->nquery, '=');
    cr->require = compile_conds(rc->require_headers, cr->nrequire = rc->nrequire_headers, ':');
    cr->pub.req_rules = compile_rules(rc->request_headers, cr->pub.nreq_rules = rc->nrequest_headers);
    cr->pub.resp_rules =
        compile_rules(rc->response_headers, cr->pub.nresp_rules = rc->nresponse_headers);
    if (rc->redirect.status)
        cr->pub.location = ct_route_tpl_compile(rc->redirect.location);
    if (rc->respond.status)
        cr->pub.body = ct_route_tpl_compile(rc->respond.body);
    return CT_OK;
}

static void free_route(struct croute *cr)
{
    pcre2_code_free(cr->re);
    free(cr->methods);
    free(cr->headers);
    free(cr->cookies);
    free(cr->query);
    free(cr->require);
    free_rules(cr->pub.req_rules, cr->pub.nreq_rules);
    free_rules(cr->pub.resp_rules, cr->pub.nresp_rules);
    ct_route_tpl_free((struct ct_route_tpl *)cr->pub.location);
    ct_route_tpl_free((struct ct_route_tpl *)cr->pub.body);
    free(cr->name_buf);
}

/* The first 8 bytes of P[0..N) as a word, zero-padded (a fixed-size copy
 * when there are 8: inlined, not a call). */
static uint64_t head8(const char *p, size_t n)
{
    uint64_t v = 0;
    if (n >= 8) {
        memcpy(&v, p, 8);
        return v;
    }
    for (size_t k = 0; k < n; k++)
        v |= (uint64_t)(unsigned char)p[k] << (8 * k);
    return v;
}

static struct pfilter make_pfilter(const struct croute *cr)
{
    struct pfilter f = {0};
    struct ct_str lit = cr->path_kind != PATH_ANY ? cr->path : cr->re_lit;
    f.kind = cr->path_kind != PATH_ANY ? cr->path_kind : lit.len ? PATH_PREFIX : PATH_ANY;
    f.len = (uint32_t)lit.len;
    size_t k = lit.len < 8 ? lit.len : 8;
    f.head = lit.len ? head8(lit.p, k) : 0;
    f.mask = k == 8 ? ~0ull : k ? head8("\xff\xff\xff\xff\xff\xff\xff", k) : 0;
    f.only_path = !cr->re && !cr->nmethods && !cr->nclient && !cr->nheaders && !cr->ncookies &&
                  !cr->nquery;
    /* a regex route whose literal alone was tested is not yet a match */
    return f;
}

/* The literal that RT's path test compares (exact path, prefix, or a
 * regex's literal start), or none. */
static struct ct_str literal_of(const struct croute *cr)
{
    return cr->path_kind != PATH_ANY ? cr->path : cr->re_lit;
}

static bool in_bucket(const struct croute *cr, size_t b)
{
    struct ct_str lit = literal_of(cr);
    if (b == NBUCKETS - 1) /* paths shorter than 2 bytes */
        return lit.len < 2;
    return lit.len < 2 || (unsigned char)lit.p[1] == b;
}

static void index_buckets(struct csite *s)
{
    size_t n = 0;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (size_t i = 0; i < s->nroutes; i++)
            n += in_bucket(&s->routes[i], b);
    s->bidx = n ? ct_xcalloc(n, sizeof(*s->bidx)) : NULL;
    n = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
        s->boff[b] = (uint32_t)n;
        for (size_t i = 0; i < s->nroutes; i++)
            if (in_bucket(&s->routes[i], b))
                s->bidx[n++] = (uint32_t)i;
    }
    s->boff[NBUCKETS] = (uint32_t)n;
}

static void host_insert(struct ct_route_table *t, const char *name, size_t len, size_t site)
{
    /* exact names and wildcard suffixes (".example.com") hash differently:
     * each kind is looked up with its own (site_of) */
    uint64_t h = name[0] == '.' ? hash_bytes(name, len) : hash_exact(name, len, NULL);
    size_t i = h & t->hmask;
    while (t->hosts[i].name)
        i = (i + 1) & t->hmask;
    t->hosts[i] = (struct hent){name, len, h, site};
}

static void index_hosts(struct ct_route_table *t, const struct ct_conf *cf)
{
    size_t n = 0;
    for (size_t i = 0; i < cf->nsites; i++)
        n += cf->sites[i].nhosts;
    size_t cap = 8;
    while (cap < 2 * n)
        cap *= 2;
    t->hosts = ct_xcalloc(cap, sizeof(*t->hosts));
    t->hmask = cap - 1;
    for (size_t i = 0; i < cf->nsites; i++) {
        for (size_t k = 0; k < cf->sites[i].nhosts; k++) {
            const char *h = cf->sites[i].hosts[k];
            bool wild = h[0] == '*';
            t->has_wild |= wild;
            h += wild; /* "*.example.com" is keyed ".example.com" */
            size_t len = strlen(h);
            if (len && h[len - 1] == '.')
                len--; /* "example.com." is "example.com" */
            host_insert(t, h, len, i);
            if (len <= HOST_MAX)
                (wild ? t->wild_len : t->exact_len)[len / 64] |= 1ull << (len % 64);
        }
    }
}

static void set_names(struct croute *cr, const char *site, const char *route, unsigned id)
{
    cr->pub.id = id;
    cr->pub.site_name = site;
    cr->pub.route_name = route;
}

int ct_route_table_build(const struct ct_conf *cf, struct ct_route_table **out, char *err,
                         size_t errlen)
{
    struct ct_route_table *t = ct_xcalloc(1, sizeof(*t));
    size_t nids = 1;
    for (size_t i = 0; i < cf->nsites; i++)
        nids += 1 + cf->sites[i].nroutes;
    t->by_id = ct_xcalloc(nids, sizeof(*t->by_id));
    t->default_site = -1;
    set_names(&t->fallback, "-", "-", 0);
    t->by_id[t->nids++] = &t->fallback.pub;
    t->nsites = cf->nsites;
    t->sites = cf->nsites ? ct_xcalloc(cf->nsites, sizeof(*t->sites)) : NULL;
    int rc = CT_OK;
    for (size_t i = 0; i < cf->nsites && rc == CT_OK; i++) {
        const struct ct_conf_site *sc = &cf->sites[i];
        struct csite *s = &t->sites[i];
        if (sc->is_default)
            t->default_site = (long)i;
        s->routes = sc->nroutes ? ct_xcalloc(sc->nroutes, sizeof(*s->routes)) : NULL;
        s->pf = sc->nroutes ? ct_xcalloc(sc->nroutes, sizeof(*s->pf)) : NULL;
        s->nroutes = sc->nroutes;
        for (size_t k = 0; k < sc->nroutes && rc == CT_OK; k++) {
            struct croute *cr = &s->routes[k];
            const struct ct_conf_route *rcf = &sc->routes[k];
            const char *name = rcf->name;
            if (!name[0]) {
                char buf[32];
                snprintf(buf, sizeof(buf), "%zu", k);
                name = cr->name_buf = ct_xstrdup(buf);
            }
            set_names(cr, sc->name, name, (unsigned)t->nids);
            t->by_id[t->nids++] = &cr->pub;
            cr->pub.site = sc;
            cr->pub.conf = rcf;
            cr->pub.group = rcf->group;
            t->uses_client |= rcf->match.nclient || rcf->nallow || rcf->ndeny;
            rc = compile_route(cr, rcf, err, errlen);
            cr->pub.acts = rcf->nallow || rcf->ndeny || rcf->nrequire_headers ||
                           rcf->redirect.status || rcf->respond.status || rcf->limit.rate ||
                           rcf->limit.concurrent || sc->limit.rate || sc->limit.concurrent;
            s->pf[k] = make_pfilter(cr);
        }
        if (rc == CT_OK)
            index_buckets(s);
        set_names(&s->fallback, sc->name, "-", (unsigned)t->nids);
        t->by_id[t->nids++] = &s->fallback.pub;
        s->fallback.pub.site = sc;
        s->fallback.pub.group = sc->group;
        s->fallback.pub.acts = sc->limit.rate || sc->limit.concurrent;
    }
    index_hosts(t, cf);
    if (rc != CT_OK) {
        ct_route_table_free(&t);
        return rc;
    }
    *out = t;
    return CT_OK;
}

void ct_route_table_free(struct ct_route_table **tp)
{
    struct ct_route_table *t = *tp;
    if (!t)
        return;
    for (size_t i = 0; i < t->nsites; i++) {
        for (size_t k = 0; k < t->sites[i].nroutes; k++)
            free_route(&t->sites[i].routes[k]);
        free(t->sites[i].routes);
        free(t->sites[i].pf);
        free(t->sites[i].bidx);
    }
    free(t->sites);
    free(t->hosts);
    free(t->by_id);
    free(t);
    *tp = NULL;
}

struct ct_route_scratch *ct_route_scratch_new(void)
{
    struct ct_route_scratch *s = ct_xcalloc(1, sizeof(*s));
    s->md = pcre2_match_data_create(1, NULL);
    CT_ASSERT(s->md != NULL);
    return s;
}

void ct_route_scratch_free(struct ct_route_scratch **sp)
{
    if (!*sp)
        return;
    pcre2_match_data_free((*sp)->md);
    CT_FREE(sp);
}

bool ct_route_table_uses_client(const struct ct_route_table *t)
{
    return t->uses_client;
}

size_t ct_route_count(const struct ct_route_table *t)
{
    return t->nids;
}

const struct ct_route *ct_route_at(const struct ct_route_table *t, size_t id)
{
    return id < t->nids ? t->by_id[id] : NULL;
}

/* ---- the host ------------------------------------------------------------ */

/* HOST lower-cased into BUF without a port or a trailing dot; its length,
 * or 0 when it cannot name a site. "[v6]:port" keeps its brackets. */
static size_t host_len(struct ct_str host);

size_t ct_route_host_norm(struct ct_str host, char *buf, size_t cap)
{
    size_t n = host_len(host);
    if (n == 0 || n > cap)
        return 0;
    for (size_t i = 0; i < n; i++)
        buf[i] = ct_ascii_lower(host.p[i]);
    return n;
}

static const struct hent *host_find_h(const struct ct_route_table *t, const char *p, size_t n,
                                      uint64_t h)
{
    for (size_t i = h & t->hmask; t->hosts[i].name; i = (i + 1) & t->hmask) {
        const struct hent *e = &t->hosts[i];
        if (e->hash == h && e->len == n && memcmp(e->name, p, n) == 0)
            return e;
    }
    return NULL;
}

/* The length of HOST without its port and trailing dot (0: names nothing),
 * as ct_route_host_norm() cuts it. */
static size_t host_len(struct ct_str host)
{
    size_t n = host.len;
    if (n && host.p[0] == '[') {
        const char *close = memchr(host.p, ']', n);
        n = close ? (size_t)(close - host.p) + 1 : 0;
    } else {
        const char *colon = memchr(host.p, ':', n);
        if (colon)
            n = (size_t)(colon - host.p);
    }
    if (n && host.p[n - 1] == '.')
        n--;
    return n <= HOST_MAX ? n : 0;
}

static bool len_in(const uint64_t *bits, size_t n)
{
    return (bits[n / 64] >> (n % 64)) & 1;
}

static long site_of(const struct ct_route_table *t, struct ct_str host, long dflt)
{
    char buf[HOST_MAX];
    size_t n = host_len(host);
    if (n == 0 || (!t->has_wild && !len_in(t->exact_len, n)))
        return dflt; /* no name that long: nothing to hash */
    const struct hent *e;
    uint64_t h = hash_exact(host.p, n, buf); /* lower-cased into BUF */
    if (len_in(t->exact_len, n) && (e = host_find_h(t, buf, n, h)))
        return (long)e->site;
    if (!t->has_wild)
        return dflt;
    /* one pass from the end: the hash of each ".suffix" on the way */
    struct {
        uint64_t h;
        size_t at;
    } dots[64];
    size_t nd = 0;
    h = FNV_INIT;
    for (size_t i = n; i-- > 0;) {
        h = FNV_STEP(h, buf[i]);
        if (buf[i] == '.' && nd < CT_ARRAY_LEN(dots) && i > 0)
            dots[nd++] = (typeof(dots[0])){h, i};
    }
    /* wildcards: the longest suffix first (the leftmost dot) */
    while (nd-- > 0)
        if (len_in(t->wild_len, n - dots[nd].at) &&
            (e = host_find_h(t, buf + dots[nd].at, n - dots[nd].at, dots[nd].h)))
            return (long)e->site;
    return dflt;
}

/* ---- conditions ---------------------------------------------------------- */

static bool method_ok(const struct croute *cr, struct ct_str m)
{
    for (size_t i = 0; i < cr->nmethods; i++)
        if (ct_str_eq(cr->methods[i], m))
            return true;
    return false;
}

static bool client_ok(const struct ct_conf_cidr *v, size_t n, const struct ct_route_req *req)
{
    if (!req->family)
        return false;
    for (size_t i = 0; i < n; i++)
        if (ct_conf_cidr_match(&v[i], req->family, req->addr))
            return true;
    return false;
}

/* Some field NAME with VALUE (or any value when C has none). */
static bool field_ok(const struct cond *c, const struct ct_route_req *req)
{
    struct ct_str v;
    for (size_t nth = 0; req->field && req->field(req->arg, c->name, nth, &v); nth++)
        if (!c->has_value || ct_str_eq(v, c->value))
            return true;
    return false;
}

/* In "a=1; b=2" (Cookie) or "a=1&b=2" (query), the pair named C->name. */
static bool pair_ok(const struct cond *c, struct ct_str list, char sep)
{
    struct ct_str name, val;
    while (ct_http_pair_next(&list, sep, &name, &val))
        if (ct_str_eq(name, c->name) && (!c->has_value || ct_str_eq(val, c->value)))
            return true;
    return false;
}

static bool cookie_ok(const struct cond *c, const struct ct_route_req *req)
{
    struct ct_str v;
    /* HTTP/2 may split cookies over several fields (RFC 9113 §8.2.3) */
    for (size_t nth = 0; req->field && req->field(req->arg, CT_STR("Cookie"), nth, &v); nth++)
        if (pair_ok(c, v, ';'))
            return true;
    return false;
}

static bool path_ok(const struct pfilter *f, struct ct_str path, uint64_t phead)
{
    if ((phead & f->mask) != f->head)
        return false;
    if (f->kind == PATH_EXACT ? path.len != f->len : path.len < f->len)
        return false;
    return true;
}

/* Everything but the path filter (tested first, from the packed array). */
static bool route_matches(const struct croute *cr, const struct ct_route_req *req,
                          struct ct_str path, struct ct_str query, struct ct_route_scratch *s)
{
    if (cr->nmethods && !method_ok(cr, req->method))
        return false;
    if (cr->nclient && !client_ok(cr->pub.conf->match.client, cr->nclient, req))
        return false;
    for (size_t i = 0; i < cr->nheaders; i++)
        if (!field_ok(&cr->headers[i], req))
            return false;
    for (size_t i = 0; i < cr->ncookies; i++)
        if (!cookie_ok(&cr->cookies[i], req))
            return false;
    for (size_t i = 0; i < cr->nquery; i++)
        if (!pair_ok(&cr->query[i], query, '&'))
            return false;
    if (cr->re && pcre2_match(cr->re, (PCRE2_SPTR)path.p, path.len, 0, 0, s->md, NULL) < 0)
        return false;
    return true;
}

long ct_route_site(const struct ct_route_table *t, const struct ct_route_req *req)
{
    long dflt = req->default_site > 0 && (size_t)req->default_site <= t->nsites
                    ? req->default_site - 1 : t->default_site;
    return t->nsites ? site_of(t, req->host, dflt) : -1;
}

const struct ct_route *ct_route_choose(const struct ct_route_table *t, const struct ct_route_req *req,
                                       struct ct_route_scratch *s)
{
    return ct_route_choose_in(t, ct_route_site(t, req), req, s);
}

const struct ct_route *ct_route_choose_in(const struct ct_route_table *t, long si,
                                          const struct ct_route_req *req, struct ct_route_scratch *s)
{
    if (si < 0 || (size_t)si >= t->nsites)
        return &t->fallback.pub;
    const struct csite *site = &t->sites[si];
    const char *q = memchr(req->target.p, '?', req->target.len);
    struct ct_str path = ct_str_make(req->target.p, q ? (size_t)(q - req->target.p) : req->target.len);
    struct ct_str query = q ? ct_str_make(q + 1, req->target.len - path.len - 1) : CT_STR("");
    uint64_t phead = head8(path.p, path.len);
    size_t b = path.len >= 2 ? (unsigned char)path.p[1] : NBUCKETS - 1;
    for (size_t k = site->boff[b]; k < site->boff[b + 1]; k++) {
        size_t i = site->bidx[k];
        const struct pfilter *f = &site->pf[i];
        if (f->kind != PATH_ANY && !path_ok(f, path, phead))
            continue;
        if (f->len > 8) { /* the rest of the literal */
            const struct croute *cr = &site->routes[i];
            const char *lit = cr->path_kind != PATH_ANY ? cr->path.p : cr->re_lit.p;
            if (memcmp(path.p + 8, lit + 8, f->len - 8) != 0)
                continue;
        }
        if (f->only_path || route_matches(&site->routes[i], req, path, query, s))
            return &site->routes[i].pub;
    }
    return &site->fallback.pub;
}

/* ---- access ------------------------------------------------------------- */

enum ct_route_access ct_route_check_access(const struct ct_route *r, const struct ct_route_req *req)
{
    const struct ct_conf_route *rc = r->conf;
    if (!rc)
        return CT_ROUTE_ALLOW;
    if (rc->ndeny && client_ok(rc->deny, rc->ndeny, req))
        return CT_ROUTE_DENY_ADDR;
    if (rc->nallow && !client_ok(rc->allow, rc->nallow, req))
        return CT_ROUTE_DENY_ADDR;
    const struct croute *cr = CT_CONTAINER_OF(r, struct croute, pub);
    for (size_t i = 0; i < cr->nrequire; i++)
        if (!field_ok(&cr->require[i], req))
            return CT_ROUTE_DENY_HEADER;
    return CT_ROUTE_ALLOW;
}

/* ---- the key's query ----------------------------------------------------- */

static bool param_dropped(const struct ct_conf_route *rc, struct ct_str name)
{
    for (size_t i = 0; i < rc->cache.nkey_drop_params; i++) {
        const char *d = rc->cache.key_drop_params[i];
        size_t n = strlen(d);
        if (d[n - 1] == '*' ? name.len >= n - 1 && memcmp(name.p, d, n - 1) == 0
                            : name.len == n && memcmp(name.p, d, n) == 0)
            return true;
    }
    return false;
}

size_t ct_route_key_query(const struct ct_route *r, struct ct_str query, char *out, size_t cap)
{
    size_t len = 0;
    const char *p = query.p, *end = query.p + query.len;
    while (p < end) {
        const char *e = memchr(p, '&', (size_t)(end - p));
        if (!e)
            e = end;
        const char *eq = memchr(p, '=', (size_t)(e - p));
        struct ct_str name = ct_str_make(p, (size_t)((eq ? eq : e) - p));
        size_t n = (size_t)(e - p);
        if (!(r->conf && param_dropped(r->conf, name)) && len + (len > 0) + n <= cap) {
            if (len)
                out[len++] = '&';
            memcpy(out + len, p, n);
            len += n;
        }
        p = e + 1;
    }
    return len;
}
