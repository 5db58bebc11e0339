/*
 * proxy/core/route_step.c: the route step of the request (issue 15): after
 * the head is parsed, before the cache lookup. It chooses the site and the
 * route (proxy/route/route.h), applies the route's access control (403) and
 * its own answers (redirect, fixed response), each through the protocol's
 * send_synth, so HTTP/1 and HTTP/2 answer alike; what the route decided for
 * the cache (pass, key options) is read by cache_req.c from r->route.
 *
 * Tables. Each worker compiles the table of the configuration it runs on
 * (w->cf) the first time a request needs it, and again after a reload
 * switched w->cf. A request holds a reference on the table its route lives
 * in until it is logged or freed, so a reload never frees a route under a
 * request in flight; a table nobody holds any more is freed at the next
 * switch or when the worker ends. Worker thread only: the counts are plain.
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "common/log.h"
#include "proxy/core/cache_int.h"
#include "proxy/core/core.h"
#include "proxy/core/req.h"
#include "proxy/balance/balance.h"
#include "proxy/limit/limit.h"
#include "proxy/realip/realip.h"
#include "proxy/stats/stats.h"
#include "proxy/route/route.h"
#include "proxy/upstream/wire.h"
#include "tls/tls.h"

struct ct_wroutes {
    struct ct_route_table *t;
    int *slots; /* per route id: its counter in the worker's stats block, or -1 */
    const struct ct_conf *cf;
    unsigned refs; /* requests holding it, + 1 while it is the worker's current one */
    uint64_t gen;  /* unique in the process: what a request's site memo names */
    struct ct_wroutes *next; /* older tables still held */
};

static void wroutes_unref(struct ct_worker *w, struct ct_wroutes *wr)
{
    if (--wr->refs > 0)
        return;
    for (struct ct_wroutes **pp = &w->routes; *pp; pp = &(*pp)->next) {
        if (*pp == wr) {
            *pp = wr->next;
            break;
        }
    }
    ct_route_table_free(&wr->t);
    free(wr->slots);
    free(wr);
}

static atomic_uint_fast64_t tables_built;

/* W's table for w->cf (built now if the configuration changed). */
static struct ct_wroutes *current(struct ct_worker *w)
{
    struct ct_wroutes *cur = w->routes;
    if (cur && cur->cf == w->cf)
        return cur;
    char err[256];
    struct ct_route_table *t;
    if (ct_route_table_build(w->cf, &t, err, sizeof(err)) != CT_OK) {
        /* a checked configuration compiles; JIT out of memory may not */
        CT_ERR("w%u: route table: %s; keeping the previous one", w->id, err);
        return cur;
    }
    struct ct_wroutes *wr = ct_xcalloc(1, sizeof(*wr));
    wr->t = t;
    wr->cf = w->cf;
    wr->slots = ct_xcalloc(ct_route_count(t), sizeof(*wr->slots));
    for (size_t i = 0; i < ct_route_count(t); i++) {
        const struct ct_route *rt = ct_route_at(t, i);
        wr->slots[i] = w->px && w->px->route_names
                           ? ct_stats_names_slot(w->px->route_names, rt->site_name, rt->route_name)
                           : -1;
    }
    wr->refs = 1;
    wr->gen = atomic_fetch_add(&tables_built, 1) + 1; /* workers build theirs at once */
    wr->next = cur;
    w->routes = wr;
    if (!w->route_scratch)
        w->route_scratch = ct_route_scratch_new();
    if (cur)
        wroutes_unref(w, cur); /* no longer the current one */
    return wr;
}

static bool field_of(void *arg, struct ct_str name, size_t nth, struct ct_str *value)
{
    const struct ct_http_msg *m = arg;
    const struct ct_http_field *f = NULL;
    do
        f = ct_http_msg_find_name(m, name, f);
    while (f && nth-- > 0);
    if (f)
        *value = f->value;
    return f != NULL;
}

/* The route table's view of R (ADDR holds the client address). */
static void route_req(const struct ct_req *r, const struct ct_route_table *t,
                      struct ct_realip_addr *addr, struct ct_route_req *q)
{
    const struct ct_http_field *host = ct_http_msg_find(r->msg, CT_HDR_HOST, NULL);
    addr->family = 0; /* parsed only for tables that look at it: inet_pton is dear */
    if (ct_route_table_uses_client(t) && !ct_realip_parse(ct_req_client(r), addr))
        addr->family = 0;
    *q = (struct ct_route_req){
        .host = host ? host->value : CT_STR_NULL,
        .method = r->msg->method_name,
        .target = r->msg->target,
        .family = addr->family,
        .addr = addr->addr,
        .field = field_of,
        .arg = (void *)r->msg,
        .default_site = r->lc ? r->lc->default_site : 0,
    };
}

static void vars_of(const struct ct_req *r, const struct ct_route_req *q, char *id, size_t idcap,
                    struct ct_route_vars *v)
{
    struct ct_str t = r->msg->target;
    const char *qm = memchr(t.p, '?', t.len);
    size_t plen = qm ? (size_t)(qm - t.p) : t.len;
    memset(v, 0, sizeof(*v));
    v->v[CT_CONF_VAR_SCHEME] = ct_req_https(r) ? CT_STR("https") : CT_STR("http");
    /* the host as the route table saw it: lower-case, without the port */
    v->v[CT_CONF_VAR_HOST] = q->host;
    const char *colon = q->host.len && q->host.p[0] != '[' ? memchr(q->host.p, ':', q->host.len)
                                                         : NULL;
    if (colon)
        v->v[CT_CONF_VAR_HOST].len = (size_t)(colon - q->host.p);
    v->v[CT_CONF_VAR_PATH] = ct_str_make(t.p, plen);
    v->v[CT_CONF_VAR_QUERY] = ct_str_make(t.p + plen, t.len - plen);
    v->v[CT_CONF_VAR_URI] = t;
    v->v[CT_CONF_VAR_CLIENT] = ct_req_client(r);
    int n = snprintf(id, idcap, "%llu-%llu", (unsigned long long)r->conn_id,
                     (unsigned long long)(r->t0_real * 1e6));
    v->v[CT_CONF_VAR_REQUEST_ID] = ct_str_make(id, n > 0 ? (size_t)n : 0);
    v->v[CT_CONF_VAR_SITE] = ct_str_c(r->route->site_name);
    v->v[CT_CONF_VAR_ROUTE] = ct_str_c(r->route->route_name);
}

/* Send the route's own answer: STATUS with BODY (a template, or NULL) and,
 * for redirects, LOCATION. The body is built on the stack: fixed answers
 * are short (a longer expansion is cut at 4 KiB). */
static void route_answer(struct ct_req *r, const struct ct_route_req *q, unsigned status,
                         const struct ct_route_tpl *body, const struct ct_route_tpl *location,
                         const char *fixed, const char *detail)
{
    char id[48], buf[4096], loc[2048], cs[160];
    struct ct_route_vars v;
    vars_of(r, q, id, sizeof(id), &v);
    size_t blen = 0, llen = 0;
    if (body)
        blen = CT_MIN(ct_route_expand(body, &v, buf, sizeof(buf)), sizeof(buf));
    else if (fixed)
        blen = (size_t)snprintf(buf, sizeof(buf), "%s", fixed);
    if (location) {
        llen = CT_MIN(ct_route_expand(location, &v, loc, sizeof(loc)), sizeof(loc));
        r->synth_location = ct_str_make(loc, llen);
    }
    if (r->route->conf && r->route->conf->respond.status && r->route->conf->respond.content_type[0])
        r->synth_ctype = ct_str_c(r->route->conf->respond.content_type);
    snprintf(cs, sizeof(cs), "cachet; detail=%s", detail);
    ct_req_answer(r, status, ct_str_make(buf, blen), ct_str_c(cs));
    r->synth_location = r->synth_ctype = r->synth_retry_after = CT_STR_NULL;
}

static void route_answer(struct ct_req *r, const struct ct_route_req *q, unsigned status,
                         const struct ct_route_tpl *body, const struct ct_route_tpl *location,
                         const char *fixed, const char *detail);

static void count(struct ct_req *r, enum ct_stats_route what)
{
    if (r->w->stats)
        ct_stats_add(&r->w->stats->route_answers[what], 1);
}

/* Scopes of the limit table: a hash of the site's name, with the top bit,
 * or of the site's and the route's names. Names, not indexes: a reload
 * that adds, removes or reorders routes keeps each route's buckets (and
 * its requests in flight) with it, as nginx's limit zones survive a
 * reload; a route renamed starts afresh. */
#define SITE_SCOPE 0x80000000u

static uint32_t scope_of(const char *site, const char *route)
{
    uint64_t h = ct_balance_hash(site, strlen(site));
    if (route)
        h = h * 0x9e3779b97f4a7c15ull ^ ct_balance_hash(route, strlen(route));
    uint32_t v = (uint32_t)(h ^ h >> 32) & ~SITE_SCOPE;
    return route ? v : v | SITE_SCOPE;
}

static bool has_limit(const struct ct_conf_limit *l)
{
    return l->rate || l->concurrent;
}

/* R under limit L in SCOPE: true if it may go on; else *WHAT says which
 * limit refused it and *RETRY the seconds to wait (rate). */
static bool limit_ok(struct ct_req *r, const struct ct_conf_limit *l, uint32_t scope,
                     const struct ct_realip_addr *a, enum ct_stats_route *what, unsigned *retry)
{
    struct ct_limit_table *t = r->w->px->limits;
    struct ct_limit_key k = {scope, a->family, a->addr};
    ct_time_t now = ct_time_mono();
    double per_s = (double)l->rate * 1000.0 / (double)(l->period_ms ? l->period_ms : 1000);
    if (l->rate && !ct_limit_take(t, &k, per_s, l->burst ? l->burst : l->rate, now, retry)) {
        *what = CT_STATS_ROUTE_rate;
        return false;
    }
    if (l->concurrent) {
        if (!ct_limit_enter(t, &k, l->concurrent, now)) {
            *what = CT_STATS_ROUTE_concurrency;
            *retry = 1;
            return false;
        }
        r->lim_scope[r->lim_n++] = scope;
        r->lim_family = (uint8_t)a->family;
        memcpy(r->lim_addr, a->addr, sizeof(r->lim_addr));
    }
    return true;
}

static void limits_leave(struct ct_req *r)
{
    struct ct_limit_table *t = r->w->px ? r->w->px->limits : NULL;
    for (unsigned i = 0; t && i < r->lim_n; i++) {
        struct ct_limit_key k = {r->lim_scope[i], r->lim_family, r->lim_addr};
        ct_limit_leave(t, &k);
    }
    r->lim_n = 0;
}

/* The site's and the route's limits; false when R was answered 429. */
static bool limits(struct ct_req *r, const struct ct_route_req *q, struct ct_realip_addr *a)
{
    const struct ct_conf_site *s = r->route->site;
    const struct ct_conf_route *rc = r->route->conf;
    bool site = s && has_limit(&s->limit), route = rc && has_limit(&rc->limit);
    if ((!site && !route) || !r->w->px || !r->w->px->limits)
        return true;
    if (a->family == 0 && !ct_realip_parse(ct_req_client(r), a))
        return true; /* no address to count against */
    enum ct_stats_route what = CT_STATS_ROUTE_rate;
    unsigned retry = 1;
    if ((!site || limit_ok(r, &s->limit, scope_of(r->route->site_name, NULL), a, &what, &retry)) &&
        (!route || limit_ok(r, &rc->limit, scope_of(r->route->site_name, r->route->route_name), a,
                            &what, &retry)))
        return true;
    limits_leave(r);
    count(r, what);
    char ra[16];
    int n = snprintf(ra, sizeof(ra), "%u", retry);
    r->synth_retry_after = ct_str_make(ra, (size_t)n);
    route_answer(r, q, 429, NULL, NULL, "429 Too Many Requests\n",
                 what == CT_STATS_ROUTE_rate ? "route-rate" : "route-concurrency");
    return false;
}

/* trusted_proxies: the client behind them, from X-Forwarded-For or
 * Forwarded, into r->client (the peer's address otherwise). */
static void real_client(struct ct_req *r)
{
    const struct ct_conf *cf = r->w->cf;
    if (cf->ntrusted_proxies == 0)
        return; /* r->client stays empty: ct_req_client() is the peer's */
    r->client = ct_str_make(r->peer, r->peer_ip_len);
    struct ct_realip_addr peer, out;
    if (!ct_realip_parse(r->client, &peer) ||
        !ct_realip_in(cf->trusted_proxies, cf->ntrusted_proxies, &peer))
        return;
    bool fwd = cf->real_ip_header == CT_CONF_REAL_IP_FORWARDED;
    struct ct_str v[8];
    size_t n = 0;
    for (const struct ct_http_field *f = NULL;
         n < CT_ARRAY_LEN(v) &&
         (f = fwd ? ct_http_msg_find_name(r->msg, CT_STR("Forwarded"), f)
                  : ct_http_msg_find(r->msg, CT_HDR_X_FORWARDED_FOR, f));)
        v[n++] = f->value;
    if (ct_realip_from_fields(cf->trusted_proxies, cf->ntrusted_proxies, &peer, v, n, fwd, &out))
        r->client = ct_str_make(r->client_buf, ct_realip_fmt(&out, r->client_buf,
                                                             sizeof(r->client_buf)));
}

/* The site Q's host names in WR's table: the one R's carrier found for the
 * same host last time, or looked up and kept (the hash, the probe and the
 * compare of a host lookup cost about 2.5 % of a hit). */
static long site_for(struct ct_req *r, const struct ct_wroutes *wr, const struct ct_route_req *q)
{
    struct ct_site_memo *m = r->site_memo;
    if (m == NULL)
        return ct_route_site(wr->t, q);
    if (m->gen == wr->gen && m->dflt == q->default_site &&
        ct_str_eq(q->host, ct_str_make(m->host, m->host_len)))
        return m->site;
    long site = ct_route_site(wr->t, q);
    if (q->host.len <= sizeof(m->host)) {
        if (q->host.len)
            memcpy(m->host, q->host.p, q->host.len);
        m->host_len = (uint8_t)q->host.len;
        m->gen = wr->gen;
        m->dflt = q->default_site;
        m->site = site;
    }
    return site;
}

/* ACME HTTP-01 (RFC 8555 §8.3): GET /.well-known/acme-challenge/TOKEN on
 * an http listener, for a token the ACME client (proxy/acme/) is waiting
 * on, is answered with its key authorization before any route, redirect or
 * cache lookup: a site redirecting everything to https must not hide it
 * (the CA follows redirects, but only to ports 80 and 443). Other tokens go
 * on as any request. */
#define ACME_PATH "/.well-known/acme-challenge/"

static bool acme_http01(struct ct_req *r)
{
    struct ct_tls_chal *ch = r->w->px->acme_chal;
    struct ct_str t = r->msg->target;
    size_t plen = sizeof(ACME_PATH) - 1;
    if (CT_LIKELY(t.len <= plen || memcmp(t.p, ACME_PATH, plen) != 0) || ch == NULL ||
        r->lc == NULL || r->lc->kind != CT_LISTEN_HTTP ||
        (r->msg->method != CT_METHOD_GET && r->msg->method != CT_METHOD_HEAD))
        return false;
    char ka[512];
    size_t n = ct_tls_chal_http_get(ch, t.p + plen, t.len - plen, ka, sizeof(ka));
    if (n == 0)
        return false;
    CT_INFO("w%u c%llu %.*s: ACME HTTP-01 challenge answered (token %.12s...)", r->w->id,
            (unsigned long long)r->conn_id, (int)ct_req_client(r).len, ct_req_client(r).p,
            t.p + plen);
    r->synth_ctype = CT_STR("application/octet-stream");
    ct_req_answer(r, 200, ct_str_make(ka, n), CT_STR("cachet; detail=acme-http-01"));
    r->synth_ctype = CT_STR_NULL;
    return true;
}

bool ct_req_route(struct ct_req *r)
{
    ct_req_route_release(r);
    struct ct_worker *w = r->w;
    real_client(r);
    r->synth_location = r->synth_ctype = r->synth_retry_after = CT_STR_NULL;
    if (CT_UNLIKELY(acme_http01(r)))
        return true;
    if (w->cf->nsites == 0)
        return false; /* no sites: every request as before, at no cost */
    struct ct_wroutes *wr = current(w);
    if (!wr)
        return false;
    struct ct_realip_addr addr;
    struct ct_route_req q;
    route_req(r, wr->t, &addr, &q);
    r->route = ct_route_choose_in(wr->t, site_for(r, wr, &q), &q, w->route_scratch);
    r->routes = wr;
    wr->refs++;
    int slot = wr->slots[r->route->id];
    if (slot >= 0 && w->stats)
        ct_stats_add(&w->stats->route_requests[slot], 1);
    if (!r->route->acts)
        return false; /* the common route: a group, a policy, rules for later */
    const struct ct_conf_route *rc = r->route->conf;
    switch (rc ? ct_route_check_access(r->route, &q) : CT_ROUTE_ALLOW) {
    case CT_ROUTE_ALLOW: break;
    case CT_ROUTE_DENY_ADDR:
        count(r, CT_STATS_ROUTE_deny);
        route_answer(r, &q, 403, NULL, NULL, "403 Forbidden\n", "route-deny");
        return true;
    case CT_ROUTE_DENY_HEADER:
        count(r, CT_STATS_ROUTE_require);
        route_answer(r, &q, 403, NULL, NULL, "403 Forbidden\n", "route-require");
        return true;
    }
    if (!limits(r, &q, &addr))
        return true;
    if (rc && rc->redirect.status) {
        count(r, CT_STATS_ROUTE_redirect);
        route_answer(r, &q, rc->redirect.status, NULL, r->route->location, NULL, "route-redirect");
        return true;
    }
    if (rc && rc->respond.status) {
        count(r, CT_STATS_ROUTE_respond);
        route_answer(r, &q, rc->respond.status, r->route->body, NULL, NULL, "route-respond");
        return true;
    }
    return false;
}

const struct ct_route *ct_req_route_as_get(struct ct_req *r)
{
    struct ct_wroutes *wr = r->routes;
    if (!wr || !r->route)
        return r->route;
    struct ct_realip_addr addr;
    struct ct_route_req q;
    route_req(r, wr->t, &addr, &q);
    q.method = CT_STR("GET");
    return ct_route_choose_in(wr->t, site_for(r, wr, &q), &q, r->w->route_scratch);
}

size_t ct_req_route_edits(struct ct_req *r, bool response, struct ct_fwd_edit *out, size_t max,
                          char *buf, size_t cap)
{
    const struct ct_route *rt = r->route;
    if (!rt)
        return 0;
    const struct ct_route_hdr_rule *rules = response ? rt->resp_rules : rt->req_rules;
    size_t n = CT_MIN(response ? rt->nresp_rules : rt->nreq_rules, max), used = 0;
    if (n == 0)
        return 0;
    char id[48];
    struct ct_route_vars v;
    struct ct_route_req q = {.host = CT_STR_NULL};
    const struct ct_http_field *host = ct_http_msg_find(r->msg, CT_HDR_HOST, NULL);
    q.host = host ? host->value : CT_STR_NULL;
    vars_of(r, &q, id, sizeof(id), &v);
    for (size_t i = 0; i < n; i++) {
        out[i].op = rules[i].op == CT_ROUTE_HDR_SET      ? CT_FWD_SET
                    : rules[i].op == CT_ROUTE_HDR_APPEND ? CT_FWD_APPEND
                                                         : CT_FWD_REMOVE;
        out[i].name = rules[i].name;
        out[i].value = CT_STR_NULL;
        if (!rules[i].value)
            continue;
        size_t len = ct_route_expand(rules[i].value, &v, buf + used, cap - used);
        len = CT_MIN(len, cap - used); /* cut at the buffer's end: values stay short */
        out[i].value = ct_str_make(buf + used, len);
        used += len;
    }
    return n;
}

size_t ct_req_route_resp_edits(struct ct_req *r, struct ct_fwd_edit *out, char *buf, size_t cap)
{
    if (!r->route || !r->route->conf)
        return 0;
    size_t n = ct_req_route_edits(r, true, out, CT_FWD_EDITS_MAX - 1, buf, cap);
    if (r->route->conf->strip_set_cookie)
        out[n++] = (struct ct_fwd_edit){CT_FWD_REMOVE, CT_STR("Set-Cookie"), CT_STR_NULL};
    return n;
}

size_t ct_req_route_group(const struct ct_req *r)
{
    if (!r->route || !r->routes)
        return 0;
    const struct ct_conf *now = r->w->cf, *then = r->routes->cf;
    if (then == now)
        return r->route->group < ct_conf_ngroups(now) ? r->route->group : 0;
    /* A reload came between the route step and this fetch (a retry, an
     * adopted fill): the group of the same name now, or the default one
     * if the reload removed it. Indexes of two configurations differ. */
    const char *name = ct_conf_group_at(then, r->route->group)->name;
    for (size_t i = 1; name && i < ct_conf_ngroups(now); i++)
        if (strcmp(ct_conf_group_at(now, i)->name, name) == 0)
            return i;
    return 0;
}

void ct_req_route_share(struct ct_req *to, const struct ct_req *from)
{
    to->route = from->route;
    to->routes = from->routes;
    if (to->routes)
        to->routes->refs++;
}

int ct_req_route_slot(const struct ct_req *r)
{
    return r->route && r->routes ? r->routes->slots[r->route->id] : -1;
}

void ct_req_route_release(struct ct_req *r)
{
    if (r->lim_n)
        limits_leave(r);
    if (r->routes)
        wroutes_unref(r->w, r->routes);
    r->routes = NULL;
    r->route = NULL;
}

void ct_req_routes_free(struct ct_worker *w)
{
    while (w->routes) {
        struct ct_wroutes *wr = w->routes;
        w->routes = wr->next;
        ct_route_table_free(&wr->t);
        free(wr->slots);
        free(wr);
    }
    ct_route_scratch_free(&w->route_scratch);
}
