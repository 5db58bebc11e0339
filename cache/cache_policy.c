/*
 * cache/cache_policy.c: what may be stored (RFC 9111 §3), which field gives a
 * response's cache control (RFC 9213 targeted fields), which fields are stored
 * with it, and what a request invalidates (§4.4).
 *
 * Pure functions over message heads; see cache_policy.h for the contract.
 * Freshness and age live in cache_fresh.c, Vary in cache_vary.c, validation
 * in cache_cond.c.
 */
#include <stdlib.h>

#include "cache/cache_policy.h"

void ct_cache_policy_opts_default(struct ct_cache_policy_opts *opts)
{
    *opts = (struct ct_cache_policy_opts){
        .store_set_cookie = false,
        .ignore_req_cc = false,
        .cdn_cache_control = true,
        .targeted_cc = CT_STR_NULL,
        .heuristic_pct = 10,
        .heuristic_max = 86400,
        .default_ttl = CT_CC_UNSET,
    };
}

static const char *const store_details[] = {
#define CT_CACHE_STORE_TEXT(id, text) text,
    CT_CACHE_STORE_TABLE(CT_CACHE_STORE_TEXT)
#undef CT_CACHE_STORE_TEXT
};

const char *ct_cache_store_detail(enum ct_cache_store v)
{
    return (unsigned)v < CT_ARRAY_LEN(store_details) ? store_details[v] : "unknown";
}

bool ct_cache_policy_status_heuristic(unsigned status)
{
    switch (status) {
    case 200:
    case 203:
    case 204:
    case 206:
    case 300:
    case 301:
    case 308:
    case 404:
    case 405:
    case 410:
    case 414:
    case 501: return true;
    default: return false;
    }
}

/* Statuses whose caching requirements we implement, for must-understand
 * (§5.2.2.3): the heuristic ones we store, plus the redirects cacheable with
 * explicit freshness. 206 is not: we never store partial content. */
static bool status_understood(unsigned status)
{
    if (status == 206)
        return false;
    return ct_cache_policy_status_heuristic(status) || status == 302 || status == 303 ||
           status == 307;
}

/* ---- targeted cache control (RFC 9213) ---------------------------------- */

/* RFC 9213 fields are Structured Field Dictionaries (RFC 8941 §3.2). A small
 * validator: enough to refuse what is not one (upper-case keys, bare words
 * with spaces, trailing commas), and to find each member without its
 * parameters so ct_cc_parse can read it. Inner lists are not cache
 * directives: a field with one is treated as invalid. */
struct sf {
    const char *p, *end;
};

static bool sf_lc(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool sf_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool sf_key(struct sf *s)
{
    if (s->p == s->end || !(sf_lc(*s->p) || *s->p == '*'))
        return false;
    s->p++;
    while (s->p < s->end && (sf_lc(*s->p) || sf_digit(*s->p) || *s->p == '_' || *s->p == '-' ||
                             *s->p == '.' || *s->p == '*'))
        s->p++;
    return true;
}

static bool sf_number(struct sf *s)
{
    int n = 0, frac = -1;
    if (*s->p == '-')
        s->p++;
    for (; s->p < s->end; s->p++) {
        if (sf_digit(*s->p)) {
            n++;
            if (frac >= 0)
                frac++;
        } else if (*s->p == '.' && frac < 0 && n > 0 && n <= 12) {
            frac = 0;
        } else {
            break;
        }
    }
    return n > 0 && n <= 15 && frac != 0 && frac <= 3;
}

static bool sf_string(struct sf *s)
{
    for (s->p++; s->p < s->end; s->p++) {
        char c = *s->p;
        if (c == '"') {
            s->p++;
            return true;
        }
        if (c == '\\') {
            if (++s->p == s->end || (*s->p != '"' && *s->p != '\\'))
                return false;
        } else if (c < 0x20 || c > 0x7e) {
            return false;
        }
    }
    return false;
}

static bool sf_token_char(char c)
{
    struct ct_str one = {&c, 1};
    return ct_http_is_token(one) || c == ':' || c == '/';
}

static bool sf_bare_item(struct sf *s)
{
    if (s->p == s->end)
        return false;
    char c = *s->p;
    if (c == '-' || sf_digit(c))
        return sf_number(s);
    if (c == '"')
        return sf_string(s);
    if (c == '?') {
        s->p++;
        return s->p < s->end && (*s->p == '0' || *s->p == '1') && (s->p++, true);
    }
    if (c == ':') { /* byte sequence: base64 between colons */
        for (s->p++; s->p < s->end && *s->p != ':'; s->p++)
            if (!(sf_lc(*s->p) || (*s->p >= 'A' && *s->p <= 'Z') || sf_digit(*s->p) ||
                  *s->p == '+' || *s->p == '/' || *s->p == '='))
                return false;
        return s->p < s->end && (s->p++, true);
    }
    if ((c >= 'A' && c <= 'Z') || sf_lc(c) || c == '*') {
        for (s->p++; s->p < s->end && sf_token_char(*s->p); s->p++)
            ;
        return true;
    }
    return false;
}

static bool sf_params(struct sf *s)
{
    while (s->p < s->end && *s->p == ';') {
        s->p++;
        while (s->p < s->end && *s->p == ' ')
            s->p++;
        if (!sf_key(s))
            return false;
        if (s->p < s->end && *s->p == '=') {
            s->p++;
            if (!sf_bare_item(s))
                return false;
        }
    }
    return true;
}

/* Validate one line as a Dictionary; with CC, feed each member (without its
 * parameters) to ct_cc_parse. Returns the member count, or -1 if invalid. */
static int sf_dict(struct ct_str line, struct ct_cc *cc)
{
    struct sf s = {line.p, line.p + line.len};
    int members = 0;
    while (s.p < s.end && *s.p == ' ')
        s.p++;
    while (s.p < s.end) {
        const char *start = s.p;
        if (!sf_key(&s))
            return -1;
        if (s.p < s.end && *s.p == '=') {
            s.p++;
            if (!sf_bare_item(&s))
                return -1;
        }
        if (cc)
            (void)ct_cc_parse(cc, ct_str_make(start, (size_t)(s.p - start)));
        if (!sf_params(&s))
            return -1;
        members++;
        while (s.p < s.end && (*s.p == ' ' || *s.p == '\t'))
            s.p++;
        if (s.p == s.end)
            break;
        if (*s.p != ',')
            return -1;
        s.p++;
        while (s.p < s.end && (*s.p == ' ' || *s.p == '\t'))
            s.p++;
        if (s.p == s.end)
            return -1; /* trailing comma */
    }
    return members;
}

/* Is F a line of the cache-control source SRC? */
static bool is_src_line(const struct ct_http_field *f, enum ct_cache_cc_src src,
                        const struct ct_cache_policy_opts *opts)
{
    switch (src) {
    case CT_CACHE_CC_STANDARD: return f->id == CT_HDR_CACHE_CONTROL;
    case CT_CACHE_CC_CDN: return f->id == CT_HDR_CDN_CACHE_CONTROL;
    case CT_CACHE_CC_OPERATOR:
        return opts->targeted_cc.len > 0 && ct_str_eq_ci(f->name, opts->targeted_cc);
    case CT_CACHE_CC_NONE: break;
    }
    return false;
}

/* Use the targeted field SRC if it is present, valid and non-empty. */
static bool try_targeted(const struct ct_http_msg *resp, enum ct_cache_cc_src src,
                         const struct ct_cache_policy_opts *opts, struct ct_cc *cc)
{
    int members = 0;
    for (size_t i = 0; i < resp->nfields; i++) {
        if (!is_src_line(&resp->fields[i], src, opts))
            continue;
        int n = sf_dict(resp->fields[i].value, NULL);
        if (n < 0)
            return false; /* RFC 9213 §2.1: an invalid field is ignored */
        members += n;
    }
    if (members == 0)
        return false;
    ct_cc_init(cc);
    for (size_t i = 0; i < resp->nfields; i++)
        if (is_src_line(&resp->fields[i], src, opts))
            (void)sf_dict(resp->fields[i].value, cc);
    return true;
}

enum ct_cache_cc_src ct_cache_policy_resp_cc(const struct ct_http_msg *resp,
                                             const struct ct_cache_policy_opts *opts,
                                             struct ct_cc *cc)
{
    if (opts->targeted_cc.len > 0 && try_targeted(resp, CT_CACHE_CC_OPERATOR, opts, cc))
        return CT_CACHE_CC_OPERATOR;
    if (opts->cdn_cache_control && try_targeted(resp, CT_CACHE_CC_CDN, opts, cc))
        return CT_CACHE_CC_CDN;
    ct_cc_from_msg(cc, resp, CT_HDR_CACHE_CONTROL);
    return ct_http_msg_find(resp, CT_HDR_CACHE_CONTROL, NULL) ? CT_CACHE_CC_STANDARD
                                                              : CT_CACHE_CC_NONE;
}

void ct_cache_policy_req_cc(const struct ct_http_msg *req, const struct ct_cache_policy_opts *opts,
                            struct ct_cc *cc)
{
    if (opts->ignore_req_cc) {
        ct_cc_init(cc);
        return;
    }
    ct_cc_from_msg(cc, req, CT_HDR_CACHE_CONTROL);
    /* HTTP/1.0 clients (and browsers' reloads) say "Pragma: no-cache":
     * without any Cache-Control it means no-cache (RFC 7234 §5.4; RFC 9111
     * §5.4 deprecates Pragma but the requests still come). */
    if (ct_http_msg_find(req, CT_HDR_CACHE_CONTROL, NULL) == NULL &&
        ct_http_msg_has_token(req, CT_HDR_PRAGMA, CT_STR("no-cache")))
        cc->flags |= CT_CC_NO_CACHE;
}

bool ct_cache_policy_field_targeted(const struct ct_http_field *f,
                                    const struct ct_cache_policy_opts *opts)
{
    return f->id == CT_HDR_CDN_CACHE_CONTROL || is_src_line(f, CT_CACHE_CC_OPERATOR, opts);
}

/* ---- which fields are stored ------------------------------------------- */

/* Is NAME listed by a qualified private="..." or no-cache="..." in line E of
 * the effective cache control? */
static bool element_lists(struct ct_str e, struct ct_str name)
{
    const char *eq = memchr(e.p, '=', e.len);
    if (!eq)
        return false;
    struct ct_str dir = ct_str_trim_ows(ct_str_make(e.p, (size_t)(eq - e.p)));
    if (!ct_str_eq_ci(dir, CT_STR("private")) && !ct_str_eq_ci(dir, CT_STR("no-cache")))
        return false;
    struct ct_str arg = ct_str_trim_ows(ct_str_make(eq + 1, e.len - (size_t)(eq + 1 - e.p)));
    if (arg.len >= 2 && arg.p[0] == '"' && arg.p[arg.len - 1] == '"')
        arg = ct_str_make(arg.p + 1, arg.len - 2);
    struct ct_str field;
    while (ct_http_list_next(&arg, &field))
        if (ct_str_eq_ci(field, name))
            return true;
    return false;
}

/* Does V contain NEEDLE (ASCII case-insensitive)? */
static bool contains_ci(struct ct_str v, struct ct_str needle)
{
    for (size_t i = 0; i + needle.len <= v.len; i++)
        if (ct_str_eq_ci(ct_str_make(v.p + i, needle.len), needle))
            return true;
    return false;
}

/* Cheap pre-check: could any cache-control line hold a qualified list? Keeps
 * the per-field check linear for the usual response without one. */
static bool may_list_fields(const struct ct_http_msg *resp, const struct ct_cache_policy_opts *opts)
{
    for (size_t i = 0; i < resp->nfields; i++) {
        const struct ct_http_field *f = &resp->fields[i];
        if ((f->id == CT_HDR_CACHE_CONTROL || ct_cache_policy_field_targeted(f, opts)) &&
            (contains_ci(f->value, CT_STR("private=")) ||
             contains_ci(f->value, CT_STR("no-cache="))))
            return true;
    }
    return false;
}

/* NAME is listed by RESP's effective cache control; LISTS: may_list_fields()
 * said it could be. */
static bool listed(const struct ct_http_msg *resp, const struct ct_cache_policy_opts *opts,
                   struct ct_str name, bool lists)
{
    if (!lists)
        return false;
    struct ct_cc cc;
    enum ct_cache_cc_src src = ct_cache_policy_resp_cc(resp, opts, &cc);
    if (!(cc.flags & (CT_CC_PRIVATE_FIELDS | CT_CC_NO_CACHE_FIELDS)))
        return false;
    for (size_t i = 0; i < resp->nfields; i++) {
        if (!is_src_line(&resp->fields[i], src, opts))
            continue;
        struct ct_str rest = resp->fields[i].value, e;
        while (ct_http_list_next(&rest, &e))
            if (element_lists(e, name))
                return true;
    }
    return false;
}

static bool field_excluded(const struct ct_http_msg *resp, const struct ct_cache_policy_opts *opts,
                           struct ct_str name)
{
    return listed(resp, opts, name, may_list_fields(resp, opts));
}

void ct_cache_policy_fields_init(struct ct_cache_fields *fs, const struct ct_http_msg *resp,
                                 const struct ct_cache_policy_opts *opts)
{
    *fs = (struct ct_cache_fields){.resp = resp, .opts = opts,
                                   .lists = may_list_fields(resp, opts)};
}

bool ct_cache_policy_fields_storable(const struct ct_cache_fields *fs,
                                     const struct ct_http_field *f)
{
    if (ct_http_msg_field_is_hop(fs->resp, f) || (ct_hdr_flags(f->id) & CT_HDRF_NO_STORE))
        return false;
    return !listed(fs->resp, fs->opts, f->name, fs->lists);
}

bool ct_cache_policy_field_storable(const struct ct_http_msg *resp, const struct ct_http_field *f,
                                    const struct ct_cache_policy_opts *opts)
{
    struct ct_cache_fields fs;
    ct_cache_policy_fields_init(&fs, resp, opts);
    return ct_cache_policy_fields_storable(&fs, f);
}

/* ---- storing (§3) ------------------------------------------------------ */

static bool has_field(const struct ct_http_msg *msg, enum ct_hdr_id id)
{
    return ct_http_msg_find(msg, id, NULL) != NULL;
}

/* §3 (and §4.2.2 for heuristics): explicit freshness or a status we may
 * give heuristic freshness. With a targeted field, Expires does not count
 * (RFC 9213 §2.1: it replaces Cache-Control and Expires). */
static bool may_have_freshness(const struct ct_http_msg *resp, const struct ct_cc *cc,
                               enum ct_cache_cc_src src)
{
    bool targeted = src == CT_CACHE_CC_CDN || src == CT_CACHE_CC_OPERATOR;
    if ((cc->flags & CT_CC_PUBLIC) || cc->max_age != CT_CC_UNSET || cc->s_maxage != CT_CC_UNSET)
        return true;
    if (!targeted && has_field(resp, CT_HDR_EXPIRES))
        return true;
    return ct_cache_policy_status_heuristic(resp->status);
}

/* The response's own directives, in §3's order after the status checks. */
static enum ct_cache_store storable_cc(const struct ct_http_msg *req,
                                       const struct ct_http_msg *resp,
                                       const struct ct_cache_policy_opts *opts)
{
    struct ct_cc cc;
    enum ct_cache_cc_src src = ct_cache_policy_resp_cc(resp, opts, &cc);
    if (cc.flags & CT_CC_MUST_UNDERSTAND) {
        /* §5.2.2.3: a cache that implements the status code's caching
         * requirements ignores no-store; one that does not, does not store. */
        if (!status_understood(resp->status))
            return CT_CACHE_STORE_MUST_UNDERSTAND;
    } else if (cc.flags & CT_CC_NO_STORE) {
        return CT_CACHE_STORE_NO_STORE;
    }
    if (cc.flags & CT_CC_PRIVATE)
        return CT_CACHE_STORE_PRIVATE;
    /* §3.5: a shared cache stores an answer to an authenticated request only
     * when the response says so explicitly. */
    if (has_field(req, CT_HDR_AUTHORIZATION) &&
        !(cc.flags & (CT_CC_PUBLIC | CT_CC_MUST_REVALIDATE)) && cc.s_maxage == CT_CC_UNSET)
        return CT_CACHE_STORE_AUTHORIZATION;
    /* A cookie is one user's: store it only when the operator says so, or
     * when the origin excluded it (private="Set-Cookie"). */
    if (!opts->store_set_cookie && has_field(resp, CT_HDR_SET_COOKIE) &&
        !field_excluded(resp, opts, CT_STR("Set-Cookie")))
        return CT_CACHE_STORE_SET_COOKIE;
    if (ct_cache_vary_is_star(resp))
        return CT_CACHE_STORE_VARY_STAR;
    if (!may_have_freshness(resp, &cc, src))
        return CT_CACHE_STORE_STATUS;
    return CT_CACHE_STORE_OK;
}

enum ct_cache_store ct_cache_policy_storable(const struct ct_http_msg *req,
                                             const struct ct_http_msg *resp,
                                             const struct ct_cache_policy_opts *opts)
{
    /* §3: a method we understand and store (GET; HEAD is answered from it) */
    if (req->method != CT_METHOD_GET)
        return CT_CACHE_STORE_METHOD;
    if (resp->status < 200)
        return CT_CACHE_STORE_INTERIM;
    if (resp->status == 206)
        return CT_CACHE_STORE_PARTIAL;
    if (resp->status == 304)
        return CT_CACHE_STORE_NOT_MODIFIED;
    struct ct_cc rq;
    ct_cache_policy_req_cc(req, opts, &rq);
    if (rq.flags & CT_CC_NO_STORE) /* §5.2.1.5 */
        return CT_CACHE_STORE_REQ_NO_STORE;
    return storable_cc(req, resp, opts);
}

/* ---- invalidation (§4.4) ------------------------------------------------ */

/* RFC 3986 §5.2.4 remove_dot_segments on PATH, into a new string. */
static char *remove_dot_segments(struct ct_str path)
{
    char *in = ct_xstrndup(path.p ? path.p : "", path.len);
    char *out = ct_xmalloc(path.len + 2);
    size_t i = 0, n = path.len, o = 0;
    while (i < n) {
        const char *s = in + i;
        size_t left = n - i;
        if (left >= 3 && memcmp(s, "../", 3) == 0) {
            i += 3; /* A */
        } else if (left >= 2 && memcmp(s, "./", 2) == 0) {
            i += 2;
        } else if (left >= 3 && memcmp(s, "/./", 3) == 0) {
            i += 2; /* B: "/./x" -> "/x" */
        } else if (left == 2 && memcmp(s, "/.", 2) == 0) {
            in[i + 1] = '/';
            i += 1;
        } else if ((left >= 4 && memcmp(s, "/../", 4) == 0) ||
                   (left == 3 && memcmp(s, "/..", 3) == 0)) {
            if (left == 3)
                in[i + 2] = '/'; /* C: "/.." -> "/" */
            i += 3 - (left == 3);
            while (o > 0 && out[o - 1] != '/')
                o--; /* drop the last output segment and its "/" */
            if (o > 0)
                o--;
        } else if ((left == 1 && s[0] == '.') || (left == 2 && memcmp(s, "..", 2) == 0)) {
            i = n; /* D */
        } else {
            size_t k = 1; /* E: the first segment, with its leading "/" */
            while (k < left && s[k] != '/')
                k++;
            memcpy(out + o, s, k);
            o += k;
            i += k;
        }
    }
    out[o] = '\0';
    free(in);
    return out;
}

/* PATH (resolved) + QUERY (with its "?" if any) as one new string. */
static char *join_target(struct ct_str path, struct ct_str query)
{
    char *p = remove_dot_segments(path.len ? path : CT_STR("/"));
    size_t pl = strlen(p);
    if (pl == 0 || p[0] != '/') { /* an origin-form target starts with "/" */
        char *q = ct_xmalloc(pl + 2);
        q[0] = '/';
        memcpy(q + 1, p, pl + 1);
        free(p);
        p = q;
        pl++;
    }
    char *t = ct_xmalloc(pl + query.len + 1);
    memcpy(t, p, pl);
    if (query.len)
        memcpy(t + pl, query.p, query.len);
    t[pl + query.len] = '\0';
    free(p);
    return t;
}

/* Split S (fragment already removed) at its first "?" into path and query. */
static void split_query(struct ct_str s, struct ct_str *path, struct ct_str *query)
{
    const char *q = memchr(s.p, '?', s.len);
    *path = ct_str_make(s.p, q ? (size_t)(q - s.p) : s.len);
    *query = q ? ct_str_make(q, s.len - path->len) : CT_STR_NULL;
}

/* Authorities equal, case-insensitively, without userinfo and without the
 * default port of SCHEME ("http": 80, "https": 443; none: both as given). */
static struct ct_str norm_authority(struct ct_str a, struct ct_str scheme)
{
    const char *at = NULL;
    for (size_t i = 0; i < a.len; i++)
        if (a.p[i] == '@')
            at = a.p + i;
    if (at)
        a = ct_str_make(at + 1, a.len - (size_t)(at + 1 - a.p));
    struct ct_str port = ct_str_eq_ci(scheme, CT_STR("http"))    ? CT_STR(":80")
                         : ct_str_eq_ci(scheme, CT_STR("https")) ? CT_STR(":443")
                                                                 : CT_STR_NULL;
    if (port.len && a.len > port.len &&
        ct_str_eq(ct_str_make(a.p + a.len - port.len, port.len), port))
        a.len -= port.len;
    return a;
}

static bool same_host(struct ct_str authority, struct ct_str host, struct ct_str scheme)
{
    return host.len > 0 &&
           ct_str_eq_ci(norm_authority(authority, scheme), norm_authority(host, scheme));
}

/* Length of a URI scheme followed by ":" at the start of REF, or 0. */
static size_t scheme_len(struct ct_str ref)
{
    size_t i = 0;
    while (i < ref.len) {
        char c = ref.p[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (c == ':')
            return i;
        if (!alpha && (i == 0 || !((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.')))
            return 0;
        i++;
    }
    return 0;
}

/* Resolve REF against BASE (an origin-form target) on HOST (RFC 3986 §5.2.2);
 * NULL if it names another host or is not an http(s) URI. */
static char *resolve(struct ct_str ref, struct ct_str base, struct ct_str host)
{
    const char *hash = memchr(ref.p, '#', ref.len);
    if (hash)
        ref.len = (size_t)(hash - ref.p);
    struct ct_str scheme = CT_STR_NULL, path, query, bpath, bquery;
    size_t sl = scheme_len(ref);
    if (sl) {
        scheme = ct_str_make(ref.p, sl);
        if (!ct_str_eq_ci(scheme, CT_STR("http")) && !ct_str_eq_ci(scheme, CT_STR("https")))
            return NULL;
        ref = ct_str_make(ref.p + sl + 1, ref.len - sl - 1);
        if (ref.len < 2 || ref.p[0] != '/' || ref.p[1] != '/')
            return NULL; /* http URIs have an authority */
    }
    if (ref.len >= 2 && ref.p[0] == '/' && ref.p[1] == '/') {
        const char *a = ref.p + 2, *end = ref.p + ref.len, *e = a;
        while (e < end && *e != '/' && *e != '?')
            e++;
        if (!same_host(ct_str_make(a, (size_t)(e - a)), host, scheme))
            return NULL;
        split_query(ct_str_make(e, (size_t)(end - e)), &path, &query);
        return join_target(path, query);
    }
    split_query(base, &bpath, &bquery);
    split_query(ref, &path, &query);
    if (path.len == 0) /* "" or "?q": the base path, the ref's query if any */
        return join_target(bpath, ref.len ? query : bquery);
    if (path.p[0] == '/')
        return join_target(path, query);
    /* merge (§5.2.3): the base path up to its last "/", then the ref's path */
    size_t keep = bpath.len;
    while (keep > 0 && bpath.p[keep - 1] != '/')
        keep--;
    char *merged = ct_xmalloc(keep + path.len + 1);
    memcpy(merged, bpath.p, keep);
    memcpy(merged + keep, path.p, path.len);
    char *t = join_target(ct_str_make(merged, keep + path.len), query);
    free(merged);
    return t;
}

static void add_target(char *out[3], size_t *n, char *t)
{
    for (size_t i = 0; t && i < *n; i++) {
        if (strcmp(out[i], t) == 0) {
            free(t);
            return;
        }
    }
    if (t)
        out[(*n)++] = t;
}

size_t ct_cache_policy_invalidate(const struct ct_http_msg *req, const struct ct_http_msg *resp,
                                  char *out[3])
{
    size_t n = 0;
    /* §4.4: unsafe methods (any method not known to be safe) with a non-error
     * response, 2xx or 3xx */
    if ((ct_http_method_flags(req->method) & CT_METHOD_SAFE) || resp->status < 200 ||
        resp->status >= 400)
        return 0;
    const struct ct_http_field *h = ct_http_msg_find(req, CT_HDR_HOST, NULL);
    struct ct_str host = h ? h->value : CT_STR_NULL;
    struct ct_str target = req->target;
    if (target.len == 0)
        return 0;
    if (target.p[0] != '/') {
        /* absolute-form: its authority is the host (RFC 9112 §3.2.2) */
        size_t sl = scheme_len(target);
        struct ct_str rest = ct_str_make(target.p + sl + 1, sl ? target.len - sl - 1 : 0);
        if (!sl || rest.len < 2 || rest.p[0] != '/' || rest.p[1] != '/')
            return 0; /* "*" or authority-form: no stored response to drop */
        const char *a = rest.p + 2, *end = rest.p + rest.len, *e = a;
        while (e < end && *e != '/' && *e != '?' && *e != '#')
            e++;
        host = ct_str_make(a, (size_t)(e - a));
        target = ct_str_make(e, (size_t)(end - e));
    }
    /* the target as the request sent it: that is what was stored under */
    add_target(out, &n, ct_xstrndup(target.len ? target.p : "/", target.len ? target.len : 1));
    char *base = n ? out[0] : NULL;
    static const enum ct_hdr_id ids[] = {CT_HDR_LOCATION, CT_HDR_CONTENT_LOCATION};
    for (size_t i = 0; base && i < CT_ARRAY_LEN(ids); i++) {
        const struct ct_http_field *f = ct_http_msg_find(resp, ids[i], NULL);
        if (f)
            add_target(out, &n, resolve(f->value, ct_str_c(base), host));
    }
    return n;
}
