/*
 * proxy/ops/ops.c: operations glue (proxy/ops/admin.h): setting up and tearing down
 * the admin listener, the access log, health checks and the signal events;
 * the hooks the proxy calls for counters and access-log lines; purge.
 *
 * Threads: ct_ops_new/start/free, the signal handlers and the log timer run
 * on the main thread; the ct_ops_conn_* / req_* / upstream hooks on the
 * worker owning the client, touching only that worker's block and buffer.
 */
#include <arpa/inet.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cache/cache.h"
#include "common/log.h"
#include "proxy/core/core.h"
#include "proxy/ops/ops_int.h"
#include "proxy/route/route.h"
#include "proxy/stats/accesslog.h"
#include "proxy/upstream/health.h"
#include "proxy/upstream/upstream.h"
#include "tls/tls.h"

/* Buffers of the access log are written out at least this often. */
#define ALOG_FLUSH_MS 1000

void ct_ops_addr_name(const struct sockaddr *sa, char *out, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(out, len, "[%s]:%u", ip, ntohs(in6->sin6_port));
    } else {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(out, len, "%s:%u", ip, ntohs(in->sin_port));
    }
}

const char *ct_ops_backend_lookup(const struct ct_conf_backend *b, struct ct_backend_addr *ba)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%u", b->port);
    int rc = getaddrinfo(b->host, port, &hints, &res);
    if (rc != 0 || res == NULL)
        return rc != 0 ? gai_strerror(rc) : "no address";
    memcpy(&ba->sa, res->ai_addr, res->ai_addrlen);
    ba->salen = res->ai_addrlen;
    freeaddrinfo(res);
    snprintf(ba->name, sizeof(ba->name), "%s:%u", b->host, b->port);
    return NULL;
}

bool ct_ops_backend_resolve(const struct ct_conf_backend *b, struct ct_backend_addr *ba,
                            const char *during)
{
    const char *why = ct_ops_backend_lookup(b, ba);
    if (why) {
        CT_ERR("%sbackend %s: cannot resolve %s: %s", during, b->name ? b->name : b->host,
               b->host, why);
        return false;
    }
    if (!b->tls.on)
        return true;
    /* TLS to the origin: its client context, built here (main thread) for
     * this generation of the backend set, shared by every worker */
    char err[256];
    ba->tls = ct_tls_client_from_conf(&b->tls, err, sizeof(err));
    if (ba->tls == NULL) {
        CT_ERR("%sbackend %s: TLS: %s", during, b->name ? b->name : b->host, err);
        return false;
    }
    const char *sn = b->tls.server_name;
    ba->tls_host = sn && strcmp(sn, CT_CONF_SERVER_NAME_HOST) == 0;
    snprintf(ba->tls_name, sizeof(ba->tls_name), "%s", sn && !ba->tls_host ? sn : b->host);
    return true;
}

void ct_ops_backends_free(struct ct_backend_addr **ap, size_t n)
{
    for (size_t i = 0; *ap && i < n; i++)
        ct_tls_client_free(&(*ap)[i].tls);
    CT_FREE(ap);
}

/* ---- the error log's destination -------------------------------------------------- */

static bool same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

static bool same_log_dest(const struct ct_conf_logs *a, const struct ct_conf_logs *b)
{
    if (a->target != b->target)
        return false;
    if (a->target == CT_LOG_TO_FILE)
        return same_str(a->error_log, b->error_log);
    if (a->target == CT_LOG_TO_SYSLOG)
        return a->syslog_facility == b->syslog_facility &&
               same_str(a->syslog_tag, b->syslog_tag) &&
               same_str(a->syslog_socket, b->syslog_socket);
    return true;
}

bool ct_ops_log_apply(const struct ct_conf *cf, const struct ct_conf *old, const char *when)
{
    const struct ct_conf_logs *l = &cf->logs;
    ct_log_set_level(l->level);
    if (old && same_log_dest(l, &old->logs))
        return true;
    struct ct_log_dest d = {.target = l->target, .path = l->error_log,
                            .socket = l->syslog_socket, .facility = l->syslog_facility,
                            .tag = l->syslog_tag};
    char err[512];
    if (ct_log_set_dest(&d, err, sizeof(err)) != CT_OK) {
        CT_ERR("%slogs.target = \"%s\": %s; the error log stays where it was", when,
               l->target == CT_LOG_TO_SYSLOG ? "syslog" : l->target == CT_LOG_TO_JSON ? "json"
                                                                                       : "file",
               err);
        return false;
    }
    return true;
}

/* ---- signals and timers ------------------------------------------------------- */

static void on_usr1(evutil_socket_t sig, short what, void *arg)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    if (ct_log_reopen() != CT_OK)
        CT_ERR("SIGUSR1: cannot reopen the error log: %s", strerror(errno));
    if (ops->alog && ct_accesslog_reopen(ops->alog) != CT_OK)
        CT_ERR("SIGUSR1: cannot reopen the access log %s: %s", ops->px->cf->logs.access_log,
               strerror(errno));
    CT_INFO("SIGUSR1: log files reopened");
}

static void on_hup(evutil_socket_t sig, short what, void *arg)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    ct_ops_reload(ops);
}

static void on_alog_timer(evutil_socket_t fd, short what, void *arg)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    char msg[512];
    if (ops->alog == NULL) /* a reload may have turned it off */
        return;
    ct_accesslog_flush_all(ops->alog);
    int r = ct_accesslog_report(ops->alog, ct_time_mono(), msg, sizeof(msg));
    if (r < 0)
        CT_ERR("%s", msg);
    else if (r > 0)
        CT_INFO("%s", msg);
}

/* ---- life ------------------------------------------------------------------------ */

static int open_access_log(struct ct_ops *ops)
{
    const struct ct_conf_logs *lg = &ops->px->cf->logs;
    if (lg->access_log == NULL)
        return CT_OK;
    char err[256];
    enum ct_accesslog_fmt fmt =
        lg->access_format == CT_CONF_ACCESS_JSON ? CT_ACCESSLOG_JSON : CT_ACCESSLOG_COMBINED;
    ops->alog = ct_accesslog_open(lg->access_log, fmt, err, sizeof(err));
    if (ops->alog == NULL) {
        CT_ERR("%s", err);
        return CT_EIO;
    }
    return CT_OK;
}

struct ct_ops *ct_ops_new(struct ct_proxy *px)
{
    struct ct_ops *ops = ct_xcalloc(1, sizeof(*ops));
    ops->magic = CT_OPS_MAGIC;
    ops->px = px;
    ops->started = ct_time_mono();
    px->ops = ops;
    if (open_access_log(ops) != CT_OK)
        goto fail;
    if (px->cf->admin.enabled && ct_ops_admin_listen(ops, &px->cf->admin.addr) != CT_OK)
        goto fail;
    /* Before the workers start: they read ops->health (its first probes run
     * once the main loop does). */
    ops->health = ct_health_new(px->main_base, px->backends, px->cf->flat_backends, px->nbackends);
    ops->sig_hup = evsignal_new(px->main_base, SIGHUP, on_hup, ops);
    ops->sig_usr1 = evsignal_new(px->main_base, SIGUSR1, on_usr1, ops);
    evsignal_add(ops->sig_hup, NULL);
    evsignal_add(ops->sig_usr1, NULL);
    return ops;
fail:
    ct_ops_free(&ops);
    px->ops = NULL;
    return NULL;
}

void ct_ops_start(struct ct_ops *ops)
{
    struct ct_proxy *px = ops->px;
    if (ops->cache == NULL)
        ops->cache = px->cache; /* the shared store, once main made it */
    if (ops->alog)
        ct_ops_start_alog_timer(ops);
    ct_ops_start_lurker(ops);
    ct_ops_fleet_start(ops);
    if (ops->lev) /* the dashboard's history, streams or not */
        ct_ops_events_start(ops);
    ct_ops_acme_start(ops);
}

void ct_ops_start_alog_timer(struct ct_ops *ops)
{
    ops->alog_timer = event_new(ops->px->main_base, -1, EV_PERSIST, on_alog_timer, ops);
    struct timeval tv = {ALOG_FLUSH_MS / 1000, (ALOG_FLUSH_MS % 1000) * 1000};
    event_add(ops->alog_timer, &tv);
}

void ct_ops_free(struct ct_ops **opsp)
{
    struct ct_ops *ops = *opsp;
    *opsp = NULL;
    if (ops == NULL)
        return;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    ct_ops_events_free(ops);
    ct_ops_acme_stop(ops);
    ct_ops_fleet_stop(ops);
    ct_ops_admin_close(ops);
    ct_health_free(&ops->health);
    ct_ops_stop_lurker(ops); /* if main did not already */
    struct event *evs[] = {ops->sig_hup, ops->sig_usr1, ops->alog_timer};
    for (size_t i = 0; i < CT_ARRAY_LEN(evs); i++)
        if (evs[i])
            event_free(evs[i]);
    ct_accesslog_free(&ops->alog); /* flushes what the workers left */
    ct_reload_free_retired(ops);
    ct_ops_purge_routes_drop(ops);
    ct_route_scratch_free(&ops->purge_scratch);
    ops->magic = 0;
    free(ops);
}

void ct_ops_set_cache(struct ct_ops *ops, struct ct_cache *cache) { ops->cache = cache; }

void ct_ops_worker_init(struct ct_worker *w)
{
    struct ct_ops *ops = w->px->ops;
    w->stats = ct_stats_new(w->px->nbackends);
    if (ops && ops->alog)
        w->alog = ct_accesslog_buf_new(ops->alog); /* owned by the log */
}

void ct_ops_worker_fini(struct ct_worker *w)
{
    ct_stats_free(&w->stats);
    w->alog = NULL;
}

bool ct_ops_backend_up(const struct ct_proxy *px, size_t i)
{
    return i >= px->nbackends || !atomic_load(&px->backends[i].down);
}

void ct_ops_backend_counts(const struct ct_proxy *px, struct ct_stats *sum)
{
    for (size_t i = 0; i < px->nbackends && i < sum->nbackends; i++)
        for (const struct ct_backend_addr *a = &px->backends[i]; a; a = a->prev)
            for (size_t k = 0; k < CT_STATS_BE__COUNT; k++)
                ct_stats_add(&sum->be[i][k], atomic_load_explicit(&a->counts[k],
                                                                  memory_order_relaxed));
}

/* ---- purge --------------------------------------------------------------------- */

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = ct_ascii_lower(ch);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

bool ct_ops_query_param(struct ct_str q, const char *name, char *buf, size_t cap,
                        struct ct_str *out)
{
    size_t nlen = strlen(name);
    for (size_t i = 0; i < q.len;) {
        const char *amp = memchr(q.p + i, '&', q.len - i);
        size_t end = amp ? (size_t)(amp - q.p) : q.len;
        if (end - i > nlen && memcmp(q.p + i, name, nlen) == 0 && q.p[i + nlen] == '=') {
            size_t n = 0;
            for (size_t k = i + nlen + 1; k < end; k++) {
                char ch = q.p[k];
                if (ch == '%') {
                    int hi = k + 2 < end ? hexval(q.p[k + 1]) : -1;
                    int lo = k + 2 < end ? hexval(q.p[k + 2]) : -1;
                    if (hi < 0 || lo < 0)
                        return false;
                    ch = (char)(hi * 16 + lo);
                    k += 2;
                } else if (ch == '+') {
                    ch = ' ';
                }
                if (n + 1 >= cap)
                    return false;
                buf[n++] = ch;
            }
            *out = ct_str_make(buf, n);
            return true;
        }
        i = end + 1;
    }
    return false;
}

/* Split an absolute "http[s]://host[:port]/path" into host (with any port),
 * the scheme's default port and the path. */
static bool split_url(struct ct_str url, struct ct_str *host, unsigned *port, struct ct_str *path)
{
    struct ct_str rest;
    if (url.len > 7 && memcmp(url.p, "http://", 7) == 0) {
        *port = 80;
        rest = ct_str_make(url.p + 7, url.len - 7);
    } else if (url.len > 8 && memcmp(url.p, "https://", 8) == 0) {
        *port = 443;
        rest = ct_str_make(url.p + 8, url.len - 8);
    } else {
        return false;
    }
    const char *slash = memchr(rest.p, '/', rest.len);
    if (slash == NULL || slash == rest.p)
        return false;
    *host = ct_str_make(rest.p, (size_t)(slash - rest.p));
    *path = ct_str_make(slash, rest.len - host->len);
    return true;
}

static unsigned purge_body(struct ct_stats_out *body, unsigned status, const char *msg, size_t n)
{
    if (msg)
        ct_stats_out_printf(body, "{\"error\":\"%s\"}\n", msg);
    else
        ct_stats_out_printf(body, "{\"purged\":%zu}\n", n);
    return status;
}

/* S in B (the caller's, freed by it), NUL-terminated for a log line, its
 * control bytes as \xHH: a purge's URL or tag and a ban's expression are
 * decoded or raw admin input, and a newline in them would forge a line.
 * Not the access log's escaping: that one also escapes '"' and '\', which
 * ban expressions are full of. */
static const char *log_text(struct ct_buf *b, struct ct_str s)
{
    static const char hex[] = "0123456789ABCDEF";
    ct_buf_reset(b);
    for (size_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (ch < 0x20 || ch == 0x7f) {
            char esc[4] = {'\\', 'x', hex[ch >> 4], hex[ch & 15]};
            ct_buf_put(b, esc, 4);
        } else {
            ct_buf_put_byte(b, (char)ch);
        }
    }
    ct_buf_put_byte(b, '\0');
    return b->p;
}

/* This thread's CPU time, ms: what a purge cost the admin thread (its wall
 * time also counts the time the scheduler gave to others). */
static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* POST /purge?tag=T[&tag=U...]: every object tagged exactly T, U... */
static unsigned purge_tags(struct ct_ops *ops, struct ct_str query, enum ct_cache_purge mode,
                           struct ct_stats_out *body)
{
    char val[CT_CACHE_TAG_MAX_LEN + 2]; /* query_param keeps one byte free */
    size_t n = 0, ntags = 0;
    struct ct_buf first = {0}; /* the first tag, for the log line */
    ct_time_t now = ct_time_real(), t0 = ct_time_mono();
    double cpu0 = thread_cpu_ms();
    for (size_t i = 0; i < query.len;) {
        const char *amp = memchr(query.p + i, '&', query.len - i);
        size_t end = amp ? (size_t)(amp - query.p) : query.len;
        struct ct_str one = ct_str_make(query.p + i, end - i), tag;
        i = end + 1;
        if (one.len < 4 || memcmp(one.p, "tag=", 4) != 0)
            continue;
        if (!ct_ops_query_param(one, "tag", val, sizeof(val), &tag) || tag.len == 0) {
            ct_buf_free(&first);
            return purge_body(body, 400, "a tag is empty, malformed or longer than 1024 bytes", 0);
        }
        n += ct_cache_purge_tag(ops->cache, tag, mode, now);
        if (ntags++ == 0)
            log_text(&first, tag);
    }
    CT_INFO("admin: purge%s of %zu tags (%s%s): %zu objects in %.1f ms (%.1f ms CPU)",
            mode == CT_CACHE_PURGE_SOFT ? " (soft)" : "", ntags, first.p ? first.p : "",
            ntags > 1 ? ", ..." : "", n, (ct_time_mono() - t0) * 1e3, thread_cpu_ms() - cpu0);
    ct_buf_free(&first);
    return purge_body(body, n ? 200 : 404, NULL, n);
}

static bool no_field(void *arg, struct ct_str name, size_t nth, struct ct_str *value)
{
    (void)arg, (void)name, (void)nth, (void)value;
    return false;
}

/* The route a GET of TARGET on HOST takes under the configuration in force
 * (NULL: no sites), so a purge by URL builds the key that request stored.
 * A purge names a URL only: a route chosen by header, cookie or client
 * address conditions sees none, and a listener's default site is not
 * known (the table's is used). The table is built at the first purge after
 * each reload (ct_ops_purge_routes_drop) on the main thread, the admin's. */
static const struct ct_route *purge_route(struct ct_ops *ops, struct ct_str host,
                                          struct ct_str target)
{
    const struct ct_conf *cf = ops->px->cf;
    if (cf->nsites == 0)
        return NULL;
    if (!ops->purge_routes) {
        char err[256];
        if (ct_route_table_build(cf, &ops->purge_routes, err, sizeof(err)) != CT_OK) {
            CT_ERR("admin: route table: %s; purging by the cache.key_* rules only", err);
            return NULL;
        }
        if (!ops->purge_scratch)
            ops->purge_scratch = ct_route_scratch_new();
    }
    struct ct_route_req q = {.host = host, .method = CT_STR("GET"), .target = target,
                             .field = no_field};
    return ct_route_choose(ops->purge_routes, &q, ops->purge_scratch);
}

void ct_ops_purge_routes_drop(struct ct_ops *ops)
{
    ct_route_table_free(&ops->purge_routes);
}

unsigned ct_ops_purge(struct ct_ops *ops, struct ct_str query, struct ct_stats_out *body)
{
    if (ops->cache == NULL)
        return purge_body(body, 501, "no cache", 0);
    char val[4096];
    struct ct_str url, host, path, soft;
    unsigned port;
    enum ct_cache_purge mode =
        ct_ops_query_param(query, "soft", val, sizeof(val), &soft) && ct_str_eq(soft, CT_STR("1"))
            ? CT_CACHE_PURGE_SOFT
            : CT_CACHE_PURGE_HARD;
    if (ct_ops_query_param(query, "tag", val, sizeof(val), &url))
        return purge_tags(ops, query, mode, body);
    bool prefix = ct_ops_query_param(query, "prefix", val, sizeof(val), &url);
    if (!prefix && !ct_ops_query_param(query, "url", val, sizeof(val), &url))
        return purge_body(body, 400, "expected ?url=URL, ?prefix=URL or ?tag=TAG", 0);
    if (!split_url(url, &host, &port, &path))
        return purge_body(body, 400, "expected an absolute http:// or https:// URL", 0);
    size_t n, cap = host.len + path.len + 256;
    char *buf = ct_xmalloc(cap);
    if (prefix) {
        struct ct_str pfx;
        if (ct_cache_key_prefix(host, port, path, buf, cap, &pfx) != CT_OK) {
            free(buf);
            return purge_body(body, 400, "URL too long", 0);
        }
        n = ct_cache_purge_prefix_mode(ops->cache, pfx, mode, ct_time_real());
    } else {
        struct ct_cache_key_opts opts;
        ct_wcache_key_opts_of(&ops->px->cf->cache, &opts);
        char qbuf[2048];
        path = ct_req_route_key(purge_route(ops, host, path), path, &opts, qbuf, sizeof(qbuf));
        struct ct_cache_key_in in = {.mclass = CT_CACHE_MCLASS_GET, .host = host,
                                     .default_port = port, .target = path};
        size_t need = ct_cache_key_size(&in) + 2;
        if (need > cap) {
            buf = ct_xrealloc(buf, need);
            cap = need;
        }
        struct ct_cache_key key;
        CT_ASSERT(ct_cache_key_build(&opts, &in, buf, cap, &key) == CT_OK);
        n = ct_cache_purge_key_mode(ops->cache, &key, mode, ct_time_real());
        struct ct_str variants;
        if ((opts.header_name.len || opts.cookie_name.len) &&
            ct_cache_key_variants_prefix(&key, buf, cap, &variants) == CT_OK)
            n += ct_cache_purge_prefix_mode(ops->cache, variants, mode, ct_time_real());
    }
    free(buf);
    struct ct_buf esc = {0};
    CT_INFO("admin: purge%s %s %s: %zu objects", mode == CT_CACHE_PURGE_SOFT ? " (soft)" : "",
            prefix ? "prefix" : "url", log_text(&esc, url), n);
    ct_buf_free(&esc);
    return purge_body(body, n ? 200 : 404, NULL, n);
}

/* ---- bans (issue 16) ---------------------------------------------------------- */

static unsigned ban_error(struct ct_stats_out *body, unsigned status, const char *msg)
{
    ct_stats_out_printf(body, "{\"error\":\"");
    ct_buf_json_escape(body, ct_str_c(msg), CT_JSON_UTF8);
    ct_stats_out_printf(body, "\"}\n");
    return status;
}

unsigned ct_ops_ban(struct ct_ops *ops, struct ct_str query, struct ct_str expr,
                    struct ct_stats_out *body)
{
    if (ops->cache == NULL)
        return ban_error(body, 501, "no cache");
    char val[8], err[256];
    struct ct_str soft;
    bool is_soft =
        ct_ops_query_param(query, "soft", val, sizeof(val), &soft) && ct_str_eq(soft, CT_STR("1"));
    expr = ct_str_trim_ows(expr);
    while (expr.len && (expr.p[expr.len - 1] == '\n' || expr.p[expr.len - 1] == '\r'))
        expr = ct_str_trim_ows(ct_str_make(expr.p, expr.len - 1)); /* curl -d @file, echo */
    uint64_t id;
    int rc = ct_cache_ban_add(ops->cache, expr.p ? expr.p : "", expr.len, is_soft,
                              ct_time_real(), &id, err, sizeof(err));
    if (rc != CT_OK) {
        CT_INFO("admin: ban refused: %s", err);
        /* 400: the expression is wrong; 503: right, but the list is full for now */
        return ban_error(body, rc == CT_ELIMIT ? 503 : 400, err);
    }
    struct ct_cache_stats st;
    ct_cache_stats(ops->cache, &st);
    struct ct_buf esc = {0};
    CT_INFO("admin: ban %llu%s added: %s (%llu active)", (unsigned long long)id,
            is_soft ? " (soft)" : "", log_text(&esc, expr), (unsigned long long)st.bans_active);
    ct_buf_free(&esc);
    ct_stats_out_printf(body, "{\"id\":%llu,\"soft\":%s,\"expression\":\"",
                        (unsigned long long)id, is_soft ? "true" : "false");
    ct_buf_json_escape(body, expr, CT_JSON_UTF8);
    ct_stats_out_printf(body, "\",\"bans_active\":%llu}\n", (unsigned long long)st.bans_active);
    return 200;
}

struct ban_list {
    struct ct_stats_out *out;
    ct_time_t now;
    size_t n;
};

static void ban_row(const struct ct_cache_ban_info *b, void *arg)
{
    struct ban_list *l = arg;
    ct_stats_out_printf(l->out, "%s{\"id\":%llu,\"expression\":\"", l->n++ ? "," : "",
                        (unsigned long long)b->id);
    ct_buf_json_escape(l->out, b->expr, CT_JSON_UTF8);
    ct_stats_out_printf(l->out, "\",\"soft\":%s,\"age_s\":%.3f,\"tested\":%llu,\"banned\":%llu}",
                        b->soft ? "true" : "false", CT_MAX(0.0, l->now - b->created),
                        (unsigned long long)b->tested, (unsigned long long)b->banned);
}

unsigned ct_ops_bans(struct ct_ops *ops, struct ct_stats_out *body)
{
    if (ops->cache == NULL)
        return ban_error(body, 501, "no cache");
    struct ban_list l = {body, ct_time_real(), 0};
    struct ct_cache_stats st;
    ct_stats_out_printf(body, "{\"bans\":[");
    ct_cache_ban_each(ops->cache, ban_row, &l);
    ct_cache_stats(ops->cache, &st);
    ct_stats_out_printf(body,
                        "],\"bans_active\":%llu,\"bans_added\":%llu,\"bans_completed\":%llu,"
                        "\"lurker_progress\":%.3f,\"lurker_tested\":%llu}\n",
                        (unsigned long long)st.bans_active, (unsigned long long)st.bans_added,
                        (unsigned long long)st.bans_completed, st.ban_lurker_progress / 1000.0,
                        (unsigned long long)st.ban_lurker_tested);
    return 200;
}

/* ---- the ban lurker (issue 16) ---------------------------------------------------- */

/* Its own thread, so the walk never delays the admin listener, and at a low
 * priority with short slices, so it never delays a worker either: a slice
 * of cache.ban_lurker_batch objects is worked in runs of
 * CT_CACHE_BAN_LURK_RUN (one shard lock hold each, ~0.1 ms) with a
 * sched_yield() between runs, then the thread sleeps ban_lurker_sleep.
 * On the main thread (where it ran before) each 1000-object slice took the
 * CPU for milliseconds at a time from the worker sharing its core.
 *
 * Nice +10 (weight 110 against a worker's 1024): beside a worker that keeps
 * its core busy the lurker still gets about a tenth of it (a walk of 1 M
 * objects then takes seconds, not minutes), and the scheduler preempts it
 * as soon as the worker wakes. Not SCHED_IDLE: a lurker preempted while
 * holding a shard lock would wait for an idle core (never, on a loaded
 * machine) while the worker waits for the lock.
 *
 * Settings: a reload changes cache.ban_lurker_batch / _sleep on the main
 * thread's config, which this thread must not read; a 1 s timer on the main
 * thread copies them into atomics and wakes the thread when they changed
 * (it may be asleep for the old, long pause). Idle (no ban), the thread
 * looks every ban_lurker_sleep as the main thread's timer did: a new ban
 * waits for at most that, and an operator can slow the lurker down to
 * nothing. The same timer gives the store a reloaded cache.max_bans.
 *
 * It also frees what large purges left it (ct_cache_reclaim): the purge
 * takes the objects out of the table, and their tag unlinks and frees run
 * here, in runs of CT_CACHE_RECLAIM_RUN with a yield between, before each
 * ban slice (their bytes are charged until then). */
#define LURKER_NICE 10

struct lurker {
    unsigned magic;
#define LURKER_MAGIC 0x1a2ce7e5u
    struct ct_ops *ops;
    struct ct_cache *cache;
    pthread_t thread;
    pthread_mutex_t mtx;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    bool stop, changed;  /* mtx */
    bool thread_started; /* main thread */
    unsigned max_bans;   /* main thread: the bound last given to the store */
    _Atomic unsigned batch;
    _Atomic uint64_t sleep_ms;
};

static struct lurker *lurker_of(const struct ct_ops *ops)
{
    if (ops->lurk_timer == NULL)
        return NULL;
    struct lurker *lk = event_get_callback_arg(ops->lurk_timer);
    CT_CHECK_OBJ(lk, LURKER_MAGIC);
    return lk;
}

/* Wait up to MS on LK's condition (mtx held); false once asked to stop. */
static bool lurker_wait(struct lurker *lk, uint64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (!lk->stop && !lk->changed)
        if (pthread_cond_timedwait(&lk->cond, &lk->mtx, &ts) != 0)
            break; /* ETIMEDOUT */
    lk->changed = false;
    return !lk->stop;
}

static void *lurker_main(void *arg)
{
    struct lurker *lk = arg;
    CT_CHECK_OBJ(lk, LURKER_MAGIC);
    /* per thread on Linux: a nice value is a property of the task; relative
     * to the process's own (started under nice, it stays the nicer one) */
    errno = 0;
    int base = getpriority(PRIO_PROCESS, (id_t)gettid());
    if (errno != 0 || setpriority(PRIO_PROCESS, (id_t)gettid(), CT_MIN(base + LURKER_NICE, 19)) != 0)
        CT_DEBUG("ban lurker: cannot lower its priority: %s", strerror(errno));
    pthread_mutex_lock(&lk->mtx);
    for (;;) {
        pthread_mutex_unlock(&lk->mtx);
        while (ct_cache_reclaim(lk->cache, CT_CACHE_RECLAIM_RUN) > 0)
            sched_yield();
        size_t batch = atomic_load_explicit(&lk->batch, memory_order_relaxed);
        for (size_t done = 0; done < batch;) {
            size_t run = CT_MIN(batch - done, (size_t)CT_CACHE_BAN_LURK_RUN);
            size_t n = ct_cache_ban_lurk(lk->cache, ct_time_real(), run);
            if (n == 0)
                break; /* no ban, or the walk ended (the ban dropped) */
            done += n;
            sched_yield(); /* a runnable worker goes first */
        }
        pthread_mutex_lock(&lk->mtx);
        if (!lurker_wait(lk, atomic_load_explicit(&lk->sleep_ms, memory_order_relaxed)))
            break;
    }
    pthread_mutex_unlock(&lk->mtx);
    return NULL;
}

/* Main thread, each second: the ban settings of the current config (the
 * bound on bans too: the store was made with the first config's). */
static void on_lurk_conf(evutil_socket_t fd, short what, void *arg)
{
    struct lurker *lk = arg;
    CT_CHECK_OBJ(lk, LURKER_MAGIC);
    const struct ct_conf_cache *cc = &lk->ops->px->cf->cache;
    if (cc->max_bans != lk->max_bans) {
        ct_cache_ban_set_max(lk->cache, cc->max_bans);
        lk->max_bans = cc->max_bans;
    }
    if (atomic_load_explicit(&lk->batch, memory_order_relaxed) == cc->ban_lurker_batch &&
        atomic_load_explicit(&lk->sleep_ms, memory_order_relaxed) == cc->ban_lurker_sleep_ms)
        return;
    atomic_store_explicit(&lk->batch, cc->ban_lurker_batch, memory_order_relaxed);
    atomic_store_explicit(&lk->sleep_ms, cc->ban_lurker_sleep_ms, memory_order_relaxed);
    pthread_mutex_lock(&lk->mtx);
    lk->changed = true;
    pthread_cond_signal(&lk->cond);
    pthread_mutex_unlock(&lk->mtx);
}

void ct_ops_start_lurker(struct ct_ops *ops)
{
    if (ops->cache == NULL)
        return;
    struct lurker *lk = ct_xcalloc(1, sizeof(*lk));
    lk->magic = LURKER_MAGIC;
    lk->ops = ops;
    lk->cache = ops->cache;
    pthread_condattr_t ca;
    CT_ASSERT(pthread_condattr_init(&ca) == 0);
    CT_ASSERT(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0);
    CT_ASSERT(pthread_cond_init(&lk->cond, &ca) == 0);
    pthread_condattr_destroy(&ca);
    CT_ASSERT(pthread_mutex_init(&lk->mtx, NULL) == 0);
    on_lurk_conf(-1, 0, lk);
    lk->changed = false; /* the settings it starts with, not news: no second pass at once */
    ops->lurk_timer = event_new(ops->px->main_base, -1, EV_PERSIST, on_lurk_conf, lk);
    event_add(ops->lurk_timer, &(struct timeval){1, 0});
    if (pthread_create(&lk->thread, NULL, lurker_main, lk) != 0) {
        /* bans still work (at lookup), they are just never dropped */
        CT_ERR("ban lurker: cannot start its thread: %s", strerror(errno));
        ct_ops_stop_lurker(ops);
        return;
    }
    pthread_setname_np(lk->thread, "cachet-lurker");
    lk->thread_started = true;
}

void ct_ops_stop_lurker(struct ct_ops *ops)
{
    struct lurker *lk = lurker_of(ops);
    if (lk == NULL)
        return;
    if (lk->thread_started) {
        pthread_mutex_lock(&lk->mtx);
        lk->stop = true;
        pthread_cond_signal(&lk->cond);
        pthread_mutex_unlock(&lk->mtx);
        pthread_join(lk->thread, NULL);
    }
    event_free(ops->lurk_timer);
    ops->lurk_timer = NULL;
    pthread_cond_destroy(&lk->cond);
    pthread_mutex_destroy(&lk->mtx);
    lk->magic = 0;
    free(lk);
}
