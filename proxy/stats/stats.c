/*
 * proxy/stats/stats.c: counter blocks, summation and the two renderings.
 *
 * Rendering walks a descriptor table generated from CT_STATS_TABLE (name,
 * kind, label set, offset of the field), so adding a row to the table adds it
 * to the struct, /stats and /metrics at once. Writers and readers never lock:
 * see stats.h for the single-writer rule.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "common/mem.h"
#include "proxy/stats/stats.h"

/* ---- blocks -------------------------------------------------------------- */

struct ct_stats *ct_stats_new(size_t nbackends)
{
    struct ct_stats *s = ct_xcalloc(1, sizeof(*s));
    s->magic = CT_STATS_MAGIC;
    s->nbackends = nbackends;
    s->be = ct_xcalloc(nbackends ? nbackends : 1, sizeof(*s->be));
    return s;
}

void ct_stats_free(struct ct_stats **sp)
{
    struct ct_stats *s = *sp;
    *sp = NULL;
    if (s == NULL)
        return;
    CT_CHECK_OBJ(s, CT_STATS_MAGIC);
    free(s->be);
    s->magic = 0;
    free(s);
}

void ct_stats_conn_open(struct ct_stats *s)
{
    ct_stats_add(&s->connections_accepted[0], 1);
    ct_stats_add(&s->connections_open[0], 1);
}

void ct_stats_conn_close(struct ct_stats *s, unsigned why)
{
    ct_stats_sub(&s->connections_open[0], 1);
    if (why < CT_CLOSE__COUNT)
        ct_stats_add(&s->connections_closed[why], 1);
}

void ct_stats_conn_proto(struct ct_stats *s, enum ct_stats_proto p, bool open)
{
    if ((unsigned)p >= CT_STATS_PROTO__COUNT)
        return;
    if (open)
        ct_stats_add(&s->connections_open_by_proto[p], 1);
    else
        ct_stats_sub(&s->connections_open_by_proto[p], 1);
}

void ct_stats_conn_spoke(struct ct_stats *s, enum ct_stats_proto p)
{
    if ((unsigned)p < CT_STATS_PROTO__COUNT)
        ct_stats_add(&s->connections_by_proto[p], 1);
}

void ct_stats_req_bytes(struct ct_stats *s, uint64_t in_bytes, uint64_t out_body_bytes)
{
    ct_stats_add(&s->request_bytes[0], in_bytes);
    ct_stats_add(&s->response_body_bytes[0], out_body_bytes);
}

static const uint64_t lat_bounds_us[CT_STATS_LAT_N] = {
#define CT_STATS_LAT_VAL(us) us,
    CT_STATS_LAT_BUCKETS(CT_STATS_LAT_VAL)
#undef CT_STATS_LAT_VAL
};

void ct_stats_req_done(struct ct_stats *s, unsigned status, uint64_t latency_us,
                       enum ct_stats_cs cs)
{
    unsigned cls = (status >= 100 && status <= 599) ? status / 100 - 1 : CT_STATS_NL_CLASS - 1;
    ct_stats_add(&s->requests[cls], 1);
    ct_stats_add(&s->cache_requests[(unsigned)cs < CT_STATS_CS__COUNT ? cs : 0], 1);
    size_t b = 0;
    while (b < CT_STATS_LAT_N && latency_us > lat_bounds_us[b])
        b++;
    ct_stats_add(&s->lat_bucket[b], 1);
    ct_stats_add(&s->lat_sum_us, latency_us);
}

void ct_stats_backend(struct ct_stats *s, size_t backend, enum ct_stats_be what)
{
    if (backend < s->nbackends && (unsigned)what < CT_STATS_BE__COUNT)
        ct_stats_add(&s->be[backend][what], 1);
}

uint64_t ct_stats_origin_saved_us(const struct ct_stats *s)
{
    uint64_t t = ct_stats_get(&s->origin_saved_us_other);
    for (size_t i = 0; i < CT_STATS_ROUTES_MAX; i++)
        t += ct_stats_get(&s->route_origin_saved_us[i]);
    return t;
}

static void sum_array(_Atomic uint64_t *dst, const _Atomic uint64_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ct_stats_add(&dst[i], ct_stats_get(&src[i]));
}

void ct_stats_sum(struct ct_stats *sum, const struct ct_stats *src)
{
    CT_CHECK_OBJ(sum, CT_STATS_MAGIC);
    CT_CHECK_OBJ(src, CT_STATS_MAGIC);
#define CT_STATS_SUM(id, kind, labels, help) sum_array(sum->id, src->id, CT_STATS_NL_##labels);
    CT_STATS_TABLE(CT_STATS_SUM)
#undef CT_STATS_SUM
    sum_array(sum->lat_bucket, src->lat_bucket, CT_STATS_LAT_N + 1);
    sum_array(sum->route_requests, src->route_requests, CT_STATS_ROUTES_MAX);
    sum_array(sum->route_origin_saved_us, src->route_origin_saved_us, CT_STATS_ROUTES_MAX);
    ct_stats_add(&sum->origin_saved_us_other, ct_stats_get(&src->origin_saved_us_other));
    ct_stats_add(&sum->lat_sum_us, ct_stats_get(&src->lat_sum_us));
    size_t nb = CT_MIN(sum->nbackends, src->nbackends);
    for (size_t i = 0; i < nb; i++)
        sum_array(sum->be[i], src->be[i], CT_STATS_BE__COUNT);
}

/* ---- route names ---------------------------------------------------------- */

struct ct_stats_names {
    pthread_mutex_t mu;
    size_t n;
    char *site[CT_STATS_ROUTES_MAX], *route[CT_STATS_ROUTES_MAX];
};

struct ct_stats_names *ct_stats_names_new(void)
{
    struct ct_stats_names *n = ct_xcalloc(1, sizeof(*n));
    pthread_mutex_init(&n->mu, NULL);
    return n;
}

void ct_stats_names_free(struct ct_stats_names **np)
{
    struct ct_stats_names *n = *np;
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++) {
        free(n->site[i]);
        free(n->route[i]);
    }
    pthread_mutex_destroy(&n->mu);
    CT_FREE(np);
}

int ct_stats_names_slot(struct ct_stats_names *n, const char *site, const char *route)
{
    int slot = -1;
    pthread_mutex_lock(&n->mu);
    for (size_t i = 0; i < n->n && slot < 0; i++)
        if (strcmp(n->site[i], site) == 0 && strcmp(n->route[i], route) == 0)
            slot = (int)i;
    if (slot < 0 && n->n < CT_STATS_ROUTES_MAX) {
        n->site[n->n] = ct_xstrdup(site);
        n->route[n->n] = ct_xstrdup(route);
        slot = (int)n->n++;
    }
    pthread_mutex_unlock(&n->mu);
    return slot;
}

/* Prometheus label value: backslash, double quote and line feed escaped. */
static void prom_label_escape(struct ct_buf *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            CT_BUF_LIT(o, "\\\\");
        else if (*s == '"')
            CT_BUF_LIT(o, "\\\"");
        else if (*s == '\n')
            CT_BUF_LIT(o, "\\n");
        else
            ct_buf_put(o, s, 1);
    }
}

/* ---- descriptors ------------------------------------------------------------- */

enum kind { COUNTER, GAUGE };
enum labels { NONE, CLASS, CACHE, CLOSE, PROTO, H2WHY, CODING, ROUTE, FANOUT_DROP };

struct desc {
    const char *name;
    enum kind kind;
    enum labels labels;
    const char *help;
    size_t off;
    size_t n;
};

static const struct desc descs[] = {
#define CT_STATS_DESC(id, k, l, h)                                             \
    {#id, k, l, h, offsetof(struct ct_stats, id), CT_STATS_NL_##l},
    CT_STATS_TABLE(CT_STATS_DESC)
#undef CT_STATS_DESC
};

static const char *const class_names[] = {
#define CT_STATS_CLASS_NAME(c) #c,
    CT_STATS_CLASS_TABLE(CT_STATS_CLASS_NAME)
#undef CT_STATS_CLASS_NAME
};
static const char *const cs_names[] = {
#define CT_STATS_CS_NAME(id, name) name,
    CT_STATS_CS_TABLE(CT_STATS_CS_NAME)
#undef CT_STATS_CS_NAME
};
/* Close reasons in lower case, as label values ("rem_close"). */
static const char *const close_names[] = {
#define CT_CLOSE(name, is_err, status, text) #name,
#include "common/close_tbl.h"
#undef CT_CLOSE
};

static const char *const proto_names[] = {
#define CT_STATS_PROTO_NAME(name) #name,
    CT_STATS_PROTO_TABLE(CT_STATS_PROTO_NAME)
#undef CT_STATS_PROTO_NAME
};

static const char *const h2why_names[] = {
#define CT_STATS_H2WHY_NAME(id, code, text) #id,
    CT_H2_WHY_TABLE(CT_STATS_H2WHY_NAME)
#undef CT_STATS_H2WHY_NAME
};

static const char *const coding_names[] = {
#define CT_STATS_CODING_NAME(name) #name,
    CT_STATS_CODING_TABLE(CT_STATS_CODING_NAME)
#undef CT_STATS_CODING_NAME
};
static const char *const route_names[] = {
#define CT_STATS_ROUTE_NAME(name) #name,
    CT_STATS_ROUTE_TABLE(CT_STATS_ROUTE_NAME)
#undef CT_STATS_ROUTE_NAME
};
static const char *const fanout_drop_names[] = {
#define CT_STATS_FANOUT_DROP_NAME(name) #name,
    CT_STATS_FANOUT_DROP_TABLE(CT_STATS_FANOUT_DROP_NAME)
#undef CT_STATS_FANOUT_DROP_NAME
};
_Static_assert(CT_ARRAY_LEN(fanout_drop_names) == CT_STATS_NL_FANOUT_DROP, "label slots");

static const char *const be_names[] = {
#define CT_STATS_BE_NAME(id, help) #id,
    CT_STATS_BE_TABLE(CT_STATS_BE_NAME)
#undef CT_STATS_BE_NAME
};
static const char *const be_helps[] = {
#define CT_STATS_BE_HELP(id, help) help,
    CT_STATS_BE_TABLE(CT_STATS_BE_HELP)
#undef CT_STATS_BE_HELP
};

static const char *label_name(enum labels l)
{
    switch (l) {
    case CLASS: return "class";
    case CACHE: return "cache_status";
    case CLOSE: return "reason";
    case PROTO: return "proto";
    case H2WHY: return "reason";
    case CODING: return "coding";
    case ROUTE: return "action";
    case FANOUT_DROP: return "reason";
    default: return "";
    }
}

static const char *label_value(enum labels l, size_t i)
{
    switch (l) {
    case CLASS: return class_names[i];
    case CACHE: return cs_names[i];
    case CLOSE: return close_names[i];
    case PROTO: return proto_names[i];
    case H2WHY: return h2why_names[i];
    case CODING: return coding_names[i];
    case ROUTE: return route_names[i];
    case FANOUT_DROP: return fanout_drop_names[i];
    default: return "";
    }
}

/* Close reason labels are the table's names lower-cased. */
static void out_lower(struct ct_buf *o, const char *s)
{
    for (; *s; s++) {
        char ch = ct_ascii_lower(*s);
        ct_buf_put(o, &ch, 1);
    }
}

static const _Atomic uint64_t *field(const struct ct_stats *s, const struct desc *d)
{
    return (const _Atomic uint64_t *)((const char *)s + d->off);
}

/* ---- JSON --------------------------------------------------------------------- */

static void json_str(struct ct_buf *o, const char *s)
{
    ct_buf_json_str(o, ct_str_c(s), CT_JSON_UTF8);
}

static void json_desc(struct ct_buf *o, const struct ct_stats *s, const struct desc *d)
{
    const _Atomic uint64_t *v = field(s, d);
    ct_buf_printf(o, "\"%s\":", d->name);
    if (d->labels == NONE) {
        ct_buf_printf(o, "%llu", (unsigned long long)ct_stats_get(&v[0]));
        return;
    }
    CT_BUF_LIT(o, "{");
    for (size_t i = 0; i < d->n; i++) {
        ct_buf_printf(o, "%s\"", i ? "," : "");
        if (d->labels == CLOSE || d->labels == H2WHY)
            out_lower(o, label_value(d->labels, i));
        else
            ct_buf_printf(o, "%s", label_value(d->labels, i));
        ct_buf_printf(o, "\":%llu", (unsigned long long)ct_stats_get(&v[i]));
    }
    CT_BUF_LIT(o, "}");
}

static void json_latency(struct ct_buf *o, const struct ct_stats *s)
{
    uint64_t cum = 0;
    CT_BUF_LIT(o, "\"latency_seconds\":{\"buckets\":{");
    for (size_t b = 0; b <= CT_STATS_LAT_N; b++) {
        cum += ct_stats_get(&s->lat_bucket[b]);
        if (b < CT_STATS_LAT_N)
            ct_buf_printf(o, "\"%g\":%llu,", (double)lat_bounds_us[b] / 1e6,
                                (unsigned long long)cum);
        else
            ct_buf_printf(o, "\"+Inf\":%llu", (unsigned long long)cum);
    }
    ct_buf_printf(o, "},\"sum\":%.6f,\"count\":%llu}",
                        (double)ct_stats_get(&s->lat_sum_us) / 1e6, (unsigned long long)cum);
}

static void json_backends(struct ct_buf *o, const struct ct_stats_view *v)
{
    const struct ct_stats *s = v->sum;
    CT_BUF_LIT(o, "\"backends\":[");
    for (size_t i = 0; i < s->nbackends; i++) {
        if (i)
            CT_BUF_LIT(o, ",");
        CT_BUF_LIT(o, "{\"name\":");
        json_str(o, v->backend_names ? v->backend_names[i] : "");
        if (v->backend_up)
            ct_buf_printf(o, ",\"up\":%s", v->backend_up[i] ? "true" : "false");
        if (v->backend_drain)
            ct_buf_printf(o, ",\"drain\":%s", v->backend_drain[i] ? "true" : "false");
        for (size_t k = 0; k < CT_STATS_BE__COUNT; k++)
            ct_buf_printf(o, ",\"%s\":%llu", be_names[k],
                                (unsigned long long)ct_stats_get(&s->be[i][k]));
        CT_BUF_LIT(o, "}");
    }
    CT_BUF_LIT(o, "]");
}

static void json_cache(struct ct_buf *o, const struct ct_cache_stats *c)
{
    if (c == NULL) {
        CT_BUF_LIT(o, "\"cache\":null");
        return;
    }
    CT_BUF_LIT(o, "\"cache\":{");
#define CT_STATS_JCACHE(name, text) ct_buf_printf(o, "\"%s\":%llu,", #name, (unsigned long long)c->name);
    CT_CACHE_STATS_TABLE(CT_STATS_JCACHE)
#undef CT_STATS_JCACHE
    ct_buf_printf(o,
                        "\"bytes\":%llu,\"max_bytes\":%llu,\"objects\":%llu,\"keys\":%llu,"
                        "\"tags\":%llu,\"tag_links\":%llu,\"tag_bytes\":%llu,"
                        "\"reclaim_pending\":%llu,",
                        (unsigned long long)c->bytes, (unsigned long long)c->max_bytes,
                        (unsigned long long)c->objects, (unsigned long long)c->keys,
                        (unsigned long long)c->tags, (unsigned long long)c->tag_links,
                        (unsigned long long)c->tag_bytes, (unsigned long long)c->reclaim_pending);
    ct_stats_out_printf(o,
                        "\"bans_active\":%llu,\"bans_added\":%llu,\"bans_refused\":%llu,"
                        "\"bans_completed\":%llu,\"ban_bytes\":%llu,\"ban_lurker_progress\":%.3f}",
                        (unsigned long long)c->bans_active, (unsigned long long)c->bans_added,
                        (unsigned long long)c->bans_refused, (unsigned long long)c->bans_completed,
                        (unsigned long long)c->ban_bytes, c->ban_lurker_progress / 1000.0);
}

static void json_listeners(struct ct_buf *o, const struct ct_stats_view *v)
{
    CT_BUF_LIT(o, "\"listeners\":[");
    for (size_t i = 0; i < v->nlisteners; i++) {
        if (i)
            CT_BUF_LIT(o, ",");
        CT_BUF_LIT(o, "{\"kind\":");
        json_str(o, v->listeners[i].kind);
        CT_BUF_LIT(o, ",\"addr\":");
        json_str(o, v->listeners[i].addr);
        CT_BUF_LIT(o, "}");
    }
    CT_BUF_LIT(o, "]");
}

/* Requests by site and route, as /metrics' cachet_route_requests_total. */
static void json_routes(struct ct_buf *o, const struct ct_stats_view *v)
{
    CT_BUF_LIT(o, "\"routes\":[");
    struct ct_stats_names *n = v->routes;
    if (n) {
        pthread_mutex_lock(&n->mu);
        for (size_t i = 0; i < n->n; i++) {
            if (i)
                CT_BUF_LIT(o, ",");
            CT_BUF_LIT(o, "{\"site\":");
            json_str(o, n->site[i]);
            CT_BUF_LIT(o, ",\"route\":");
            json_str(o, n->route[i]);
            ct_buf_printf(o, ",\"requests\":%llu,\"origin_seconds_saved\":%.6f}",
                          (unsigned long long)ct_stats_get(&v->sum->route_requests[i]),
                          (double)ct_stats_get(&v->sum->route_origin_saved_us[i]) / 1e6);
        }
        pthread_mutex_unlock(&n->mu);
    }
    CT_BUF_LIT(o, "]");
}

static void json_reload(struct ct_buf *o, const struct ct_stats_reload *r)
{
    ct_buf_printf(o, "\"reload\":{\"generation\":%u,\"ok\":%llu,\"failed\":%llu,",
                        r->generation, (unsigned long long)r->ok, (unsigned long long)r->failed);
    if (r->last_time > 0)
        ct_buf_printf(o, "\"last_time\":%.3f,\"last_ok\":%s}", r->last_time,
                            r->last_ok ? "true" : "false");
    else
        CT_BUF_LIT(o, "\"last_time\":null,\"last_ok\":null}");
}

static void json_mem(struct ct_buf *o, const struct ct_mem_stats *m)
{
    CT_BUF_LIT(o, ",\"memory\":{\"allocator\":");
    json_str(o, m->allocator);
    ct_buf_printf(o, ",\"allocated\":%llu,\"resident\":%llu,\"retained\":%llu,\"rss\":%llu,",
                        (unsigned long long)m->allocated, (unsigned long long)m->resident,
                        (unsigned long long)m->retained, (unsigned long long)m->rss);
    ct_buf_printf(o,
                  "\"slab_used\":%llu,\"slab_resident\":%llu,\"slab_mapped\":%llu,"
                  "\"slab_regions_released\":%llu,\"slab_slots_punched\":%llu,"
                  "\"releases\":%llu}",
                  (unsigned long long)m->slab_used, (unsigned long long)m->slab_resident,
                  (unsigned long long)m->slab_mapped,
                  (unsigned long long)m->slab_regions_released,
                  (unsigned long long)m->slab_slots_punched, (unsigned long long)m->releases);
}

void ct_stats_render_json(const struct ct_stats_view *v, struct ct_buf *o)
{
    CT_CHECK_OBJ(v->sum, CT_STATS_MAGIC);
    ct_buf_printf(o, "{\"uptime_s\":%.3f", v->uptime_s);
    for (size_t i = 0; i < CT_ARRAY_LEN(descs); i++) {
        CT_BUF_LIT(o, ",");
        json_desc(o, v->sum, &descs[i]);
    }
    /* every hit's object's fetch cost: what the cache saved the origin */
    ct_buf_printf(o, ",\"origin_seconds_saved\":%.6f,",
                  (double)ct_stats_origin_saved_us(v->sum) / 1e6);
    json_latency(o, v->sum);
    CT_BUF_LIT(o, ",");
    json_backends(o, v);
    CT_BUF_LIT(o, ",");
    json_cache(o, v->cache);
    CT_BUF_LIT(o, ",");
    json_listeners(o, v);
    CT_BUF_LIT(o, ",");
    json_routes(o, v);
    CT_BUF_LIT(o, ",");
    json_reload(o, &v->reload);
    ct_buf_printf(o, ",\"purge\":%s", v->purge ? "true" : "false");
    if (v->mem)
        json_mem(o, v->mem);
    if (v->tls)
        ct_buf_printf(o, ",\"tls\":{\"handshakes_full\":%llu,\"handshakes_resumed\":%llu}}\n",
                            (unsigned long long)v->tls_full, (unsigned long long)v->tls_resumed);
    else
        CT_BUF_LIT(o, ",\"tls\":null}\n");
}

/* ---- Prometheus text format 0.0.4 ------------------------------------------------ */

static void prom_head(struct ct_buf *o, const char *name, const char *suffix,
                      const char *type, const char *help)
{
    ct_buf_printf(o, "# HELP cachet_%s%s %s\n# TYPE cachet_%s%s %s\n", name, suffix, help,
                        name, suffix, type);
}

static void prom_desc(struct ct_buf *o, const struct ct_stats *s, const struct desc *d)
{
    const char *suffix = d->kind == COUNTER ? "_total" : "";
    const _Atomic uint64_t *v = field(s, d);
    prom_head(o, d->name, suffix, d->kind == COUNTER ? "counter" : "gauge", d->help);
    for (size_t i = 0; i < d->n; i++) {
        ct_buf_printf(o, "cachet_%s%s", d->name, suffix);
        if (d->labels != NONE) {
            ct_buf_printf(o, "{%s=\"", label_name(d->labels));
            if (d->labels == CLOSE || d->labels == H2WHY)
                out_lower(o, label_value(d->labels, i));
            else
                prom_label_escape(o, label_value(d->labels, i));
            CT_BUF_LIT(o, "\"}");
        }
        ct_buf_printf(o, " %llu\n", (unsigned long long)ct_stats_get(&v[i]));
    }
}

static void prom_latency(struct ct_buf *o, const struct ct_stats *s)
{
    static const char name[] = "cachet_request_duration_seconds";
    ct_buf_printf(o, "# HELP %s Client request latency, head received to response "
                           "complete.\n# TYPE %s histogram\n", name, name);
    uint64_t cum = 0;
    for (size_t b = 0; b <= CT_STATS_LAT_N; b++) {
        cum += ct_stats_get(&s->lat_bucket[b]);
        if (b < CT_STATS_LAT_N)
            ct_buf_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name,
                                (double)lat_bounds_us[b] / 1e6, (unsigned long long)cum);
        else
            ct_buf_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    ct_buf_printf(o, "%s_sum %.6f\n%s_count %llu\n", name,
                        (double)ct_stats_get(&s->lat_sum_us) / 1e6, name, (unsigned long long)cum);
}

static void prom_backend_line(struct ct_buf *o, const char *metric, const char *bname,
                              uint64_t val)
{
    ct_buf_printf(o, "cachet_%s{backend=\"", metric);
    prom_label_escape(o, bname ? bname : "");
    ct_buf_printf(o, "\"} %llu\n", (unsigned long long)val);
}

static void prom_backends(struct ct_buf *o, const struct ct_stats_view *v)
{
    const struct ct_stats *s = v->sum;
    char name[64];
    for (size_t k = 0; k < CT_STATS_BE__COUNT; k++) {
        snprintf(name, sizeof(name), "%s_total", be_names[k]);
        prom_head(o, be_names[k], "_total", "counter", be_helps[k]);
        for (size_t i = 0; i < s->nbackends; i++)
            prom_backend_line(o, name, v->backend_names ? v->backend_names[i] : "",
                              ct_stats_get(&s->be[i][k]));
    }
    if (v->backend_up == NULL)
        return;
    prom_head(o, "backend_up", "", "gauge", "1 if active health checks see the backend up.");
    for (size_t i = 0; i < s->nbackends; i++)
        prom_backend_line(o, "backend_up", v->backend_names ? v->backend_names[i] : "",
                          v->backend_up[i] ? 1 : 0);
}

/* "cachet_METRIC{site="SITE",route="ROUTE"} ": a per-route sample's start. */
static void prom_route_label(struct ct_buf *o, const char *metric, const char *site,
                             const char *route)
{
    ct_buf_printf(o, "cachet_%s{site=\"", metric);
    prom_label_escape(o, site);
    CT_BUF_LIT(o, "\",route=\"");
    prom_label_escape(o, route);
    CT_BUF_LIT(o, "\"} ");
}

static void prom_routes(struct ct_buf *o, const struct ct_stats_view *v)
{
    struct ct_stats_names *n = v->routes;
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    if (n->n)
        prom_head(o, "route_requests", "_total", "counter",
                  "Requests by site and route (route \"-\": no route of the site matched).");
    for (size_t i = 0; i < n->n; i++) {
        prom_route_label(o, "route_requests_total", n->site[i], n->route[i]);
        ct_buf_printf(o, "%llu\n", (unsigned long long)ct_stats_get(&v->sum->route_requests[i]));
    }
    pthread_mutex_unlock(&n->mu);
}

/* Every series, the routes' and the unrouted one (site and route empty:
 * requests of no site), so that they sum to /stats' origin_seconds_saved. */
static void prom_saved(struct ct_buf *o, const struct ct_stats_view *v)
{
    prom_head(o, "origin_seconds_saved", "_total", "counter",
              "Origin time the cache saved: each hit adds what fetching its object took "
              "(request sent to last body byte), by site and route (empty: no site).");
    struct ct_stats_names *n = v->routes;
    if (n) {
        pthread_mutex_lock(&n->mu);
        for (size_t i = 0; i < n->n; i++) {
            prom_route_label(o, "origin_seconds_saved_total", n->site[i], n->route[i]);
            ct_buf_printf(o, "%.6f\n",
                          (double)ct_stats_get(&v->sum->route_origin_saved_us[i]) / 1e6);
        }
        pthread_mutex_unlock(&n->mu);
    }
    prom_route_label(o, "origin_seconds_saved_total", "", "");
    ct_buf_printf(o, "%.6f\n", (double)ct_stats_get(&v->sum->origin_saved_us_other) / 1e6);
}

static void prom_gauge(struct ct_buf *o, const char *name, const char *help, uint64_t val)
{
    prom_head(o, name, "", "gauge", help);
    ct_buf_printf(o, "cachet_%s %llu\n", name, (unsigned long long)val);
}

static void prom_cache(struct ct_buf *o, const struct ct_cache_stats *c)
{
#define CT_STATS_PCACHE(nm, text)                                              \
    prom_head(o, "cache_" #nm, "_total", "counter", "Cache store: " text ".");  \
    ct_buf_printf(o, "cachet_cache_" #nm "_total %llu\n", (unsigned long long)c->nm);
    CT_CACHE_STATS_TABLE(CT_STATS_PCACHE)
#undef CT_STATS_PCACHE
    prom_gauge(o, "cache_bytes", "Cache store: bytes in use (objects and bookkeeping).", c->bytes);
    prom_gauge(o, "cache_max_bytes", "Cache store: the memory cap.", c->max_bytes);
    prom_gauge(o, "cache_objects", "Cache store: objects alive.", c->objects);
    prom_gauge(o, "cache_keys", "Cache store: keys in the table.", c->keys);
    prom_gauge(o, "cache_tags", "Tag index: distinct tags.", c->tags);
    prom_gauge(o, "cache_tag_links", "Tag index: (object, tag) links.", c->tag_links);
    prom_gauge(o, "cache_tag_bytes", "Tag index: bytes (part of cachet_cache_bytes).",
               c->tag_bytes);
    prom_gauge(o, "cache_reclaim_pending",
               "Purged objects out of the table whose tags and memory the lurker has not freed "
               "yet (their bytes are in cachet_cache_bytes).",
               c->reclaim_pending);
    prom_gauge(o, "cache_bans_active", "Bans not yet dropped by the lurker.", c->bans_active);
    prom_gauge(o, "cache_ban_bytes",
               "Active bans: bytes of texts, values, compiled and JIT regex code (part of "
               "cachet_cache_bytes).",
               c->ban_bytes);
    prom_head(o, "cache_bans_added", "_total", "counter", "Bans accepted.");
    ct_stats_out_printf(o, "cachet_cache_bans_added_total %llu\n",
                        (unsigned long long)c->bans_added);
    prom_head(o, "cache_bans_refused", "_total", "counter",
              "Bans refused: cache.max_bans were active, or too big for cache.size.");
    ct_stats_out_printf(o, "cachet_cache_bans_refused_total %llu\n",
                        (unsigned long long)c->bans_refused);
    prom_head(o, "cache_bans_completed", "_total", "counter",
              "Bans dropped once every older object was tested.");
    ct_stats_out_printf(o, "cachet_cache_bans_completed_total %llu\n",
                        (unsigned long long)c->bans_completed);
    prom_head(o, "cache_ban_lurker_progress", "", "gauge",
              "Share of the ban lurker's current walk done (1 when idle).");
    ct_stats_out_printf(o, "cachet_cache_ban_lurker_progress %.3f\n",
                        c->ban_lurker_progress / 1000.0);
}

static void prom_reload(struct ct_buf *o, const struct ct_stats_reload *r)
{
    prom_gauge(o, "reload_generation", "Configurations applied by reloads since start.",
               r->generation);
    prom_head(o, "reloads", "_total", "counter", "Reloads (SIGHUP), by result.");
    ct_buf_printf(o, "cachet_reloads_total{result=\"ok\"} %llu\n"
                           "cachet_reloads_total{result=\"failed\"} %llu\n",
                        (unsigned long long)r->ok, (unsigned long long)r->failed);
    prom_head(o, "reload_last_timestamp_seconds", "", "gauge",
              "Unix time of the last reload attempt; 0: none.");
    ct_buf_printf(o, "cachet_reload_last_timestamp_seconds %.3f\n", r->last_time);
    prom_gauge(o, "reload_retired_objects",
               "Configurations, listeners and backend sets replaced by reloads and still "
               "used by connections open before the switch.",
               r->retired);
}

/* Beside cachet_cache_bytes: what the allocator holds for them (and for
 * everything else), so the gap between the cap and RSS has names. */
static void prom_mem(struct ct_buf *o, const struct ct_mem_stats *m)
{
    prom_head(o, "memory_allocator_info", "", "gauge", "The allocator cachet runs on.");
    CT_BUF_LIT(o, "cachet_memory_allocator_info{allocator=\"");
    prom_label_escape(o, m->allocator);
    CT_BUF_LIT(o, "\"} 1\n");
    prom_gauge(o, "memory_allocated_bytes", "Allocator: bytes in live allocations.", m->allocated);
    prom_gauge(o, "memory_resident_bytes",
               "Allocator: bytes of its pages in RAM (glibc: the process's anonymous resident "
               "memory: malloc's heaps, the slabs, thread stacks).",
               m->resident);
    prom_gauge(o, "memory_retained_bytes",
               "Allocator: jemalloc: mapped but given back; glibc: free bytes inside its heaps.",
               m->retained);
    prom_gauge(o, "memory_rss_bytes", "Process resident set, mapped cache bodies included.",
               m->rss);
    prom_gauge(o, "memory_slab_used_bytes",
               "Slabs (the cache's object memory): bytes in live slots (part of allocated).",
               m->slab_used);
    prom_gauge(o, "memory_slab_resident_bytes",
               "Slabs: bytes of regions not given back (an upper bound; part of resident).",
               m->slab_resident);
    prom_gauge(o, "memory_slab_mapped_bytes", "Slabs: address space mapped for regions.",
               m->slab_mapped);
    prom_head(o, "memory_slab_regions_released", "_total", "counter",
              "Slabs: empty regions whose pages were given back to the kernel.");
    ct_buf_printf(o, "cachet_memory_slab_regions_released_total %llu\n",
                  (unsigned long long)m->slab_regions_released);
    prom_head(o, "memory_slab_slots_punched", "_total", "counter",
              "Slabs: free slots (two pages or more) of regions in use whose pages were "
              "given back.");
    ct_buf_printf(o, "cachet_memory_slab_slots_punched_total %llu\n",
                  (unsigned long long)m->slab_slots_punched);
    prom_head(o, "memory_releases", "_total", "counter",
              "Free pages given back to the kernel by the allocator (glibc: malloc_trim).");
    ct_buf_printf(o, "cachet_memory_releases_total %llu\n", (unsigned long long)m->releases);
}

void ct_stats_render_prom(const struct ct_stats_view *v, struct ct_buf *o)
{
    CT_CHECK_OBJ(v->sum, CT_STATS_MAGIC);
    prom_head(o, "uptime_seconds", "", "gauge", "Seconds since cachet started.");
    ct_buf_printf(o, "cachet_uptime_seconds %.3f\n", v->uptime_s);
    for (size_t i = 0; i < CT_ARRAY_LEN(descs); i++)
        prom_desc(o, v->sum, &descs[i]);
    prom_latency(o, v->sum);
    prom_backends(o, v);
    prom_routes(o, v);
    prom_saved(o, v);
    if (v->cache)
        prom_cache(o, v->cache);
    prom_reload(o, &v->reload);
    if (v->mem)
        prom_mem(o, v->mem);
    if (v->tls) {
        prom_head(o, "tls_handshakes", "_total", "counter", "Completed TLS handshakes, by type.");
        ct_buf_printf(o, "cachet_tls_handshakes_total{type=\"full\"} %llu\n"
                               "cachet_tls_handshakes_total{type=\"resumed\"} %llu\n",
                            (unsigned long long)v->tls_full, (unsigned long long)v->tls_resumed);
    }
}
