/*
 * proxy/ops/admin.c: the admin listener and the operations glue (proxy/ops/admin.h).
 *
 * The admin listener is a small HTTP/1.1 server on the main thread's
 * event_base, parsing with the project's request parser (keep-alive and
 * pipelining work, bodies are read and dropped) and answering errors exactly
 * like the proxy (ct_h1_error). Routes:
 *
 *     GET|HEAD /          text/html                the dashboard (dashboard.html)
 *     GET|HEAD /stats     application/json         ct_stats_render_json
 *     GET|HEAD /metrics   text/plain; version=0.0.4 ct_stats_render_prom
 *     GET /events         text/event-stream        /stats once a second (ops_events.c)
 *     POST /purge?url=URL | ?prefix=URL | ?tag=T   the cache's purge API
 *     POST /ban[?soft=1]  body: the expression     a ban (cache/cache.h syntax)
 *     GET /bans           application/json         the active bans
 *     anything else       404; a known path with a wrong method: 405 + Allow
 *
 * With an admin token (admin.token / admin.token_file) every request but
 * GET|HEAD / needs "Authorization: Bearer TOKEN" (RFC 6750 §2.1), else 401
 * with WWW-Authenticate. The comparison (ct_conf_token_matches, shared with
 * the fleet's token) is of SHA-256 digests with CRYPTO_memcmp: constant
 * time, and the token's length does not leak.
 * Request bodies are kept (up to ADMIN_MAX_BODY) for POST /ban only.
 *
 * Reading the counters: every worker's block is summed with relaxed atomic
 * loads into a fresh block (stats.h), so a scrape never stops a worker.
 *
 * Admin connection objects are owned by struct ct_ops (a list, freed at
 * exit); one is freed only by admin_close().
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache/cache.h"
#include "common/log.h"
#include "common/mem.h"
#include "proxy/ctx.h"
#include "proxy/ops/admin.h"
#include "proxy/ops/ops_int.h"
#include "proxy/stats/accesslog.h"
#include "proxy/upstream/health.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/wire.h"
#include "tls/tls.h"

#define ADMIN_TIMEOUT_S 30
#define ADMIN_MAX_BODY (64 * 1024)

struct admin_conn {
    unsigned magic;
#define CT_ADMIN_CONN_MAGIC 0xad3100c1u
    struct ct_ops *ops;
    struct bufferevent *bev;
    struct ct_http_parser *rp;
    struct evbuffer *body; /* the current request's body */
    bool closing; /* last response queued: free once it is written */
    bool streaming; /* GET /events: the bufferevent goes to ops_events.c */
    struct admin_conn *next, *prev;
};

/* ---- connections ------------------------------------------------------------ */

/* The page: proxy/ops/dashboard.html, made into this array at build time
 * (proxy/ops/embed.cmake). */
extern const unsigned char ct_dashboard_html[];
extern const size_t ct_dashboard_html_len;

/* The page may load nothing from anywhere (no fonts, scripts or images from
 * other hosts) and may talk only to this listener. */
#define DASHBOARD_HEADERS                                                        \
    "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; " \
    "style-src 'unsafe-inline'; img-src data:; connect-src 'self'\r\n"          \
    "X-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"

/* Unlink AC from the list and free it; its bufferevent too unless KEEP_BEV. */
static void admin_drop(struct admin_conn *ac, bool keep_bev)
{
    struct ct_ops *ops = ac->ops;
    if (ac->prev)
        ac->prev->next = ac->next;
    else
        ops->conns = ac->next;
    if (ac->next)
        ac->next->prev = ac->prev;
    if (!keep_bev)
        bufferevent_free(ac->bev);
    ct_http_parser_free(&ac->rp);
    evbuffer_free(ac->body);
    ac->magic = 0;
    free(ac);
}

static void admin_close(struct admin_conn *ac) { admin_drop(ac, false); }

static void respond(struct admin_conn *ac, const struct ct_http_msg *req, unsigned status,
                    const char *ctype, const char *extra, const char *body, size_t len)
{
    struct evbuffer *out = bufferevent_get_output(ac->bev);
    char date[CT_HTTP_DATE_LEN + 1];
    ct_http_date_format(time(NULL), date);
    bool close = req == NULL || !req->keep_alive;
    evbuffer_add_printf(out,
                        "HTTP/1.1 %u %s\r\nServer: cachet\r\nDate: %s\r\nContent-Type: %s\r\n"
                        "Content-Length: %zu\r\nCache-Control: no-store\r\n%s%s\r\n",
                        status, ct_http_status_reason(status), date, ctype, len, extra ? extra : "",
                        close ? "Connection: close\r\n" : "");
    if (req == NULL || req->method != CT_METHOD_HEAD)
        evbuffer_add(out, body, len);
    if (close)
        ac->closing = true;
}

/* Sum every worker's block; the caller frees the result. */
static struct ct_stats *sum_workers(struct ct_ops *ops)
{
    struct ct_proxy *px = ops->px;
    struct ct_stats *sum = ct_stats_new(px->nbackends);
    for (unsigned i = 0; i < px->nworkers; i++)
        if (px->workers[i] && px->workers[i]->stats)
            ct_stats_sum(sum, px->workers[i]->stats);
    ct_ops_backend_counts(px, sum);
    ct_stats_add(&sum->admin_requests[0], ops->admin_requests);
    ct_ops_fleet_counts(ops, sum);
    uint64_t open, dropped;
    ct_ops_events_counts(ops, &open, &dropped);
    ct_stats_add(&sum->admin_event_streams[0], open);
    ct_stats_add(&sum->admin_event_streams_dropped[0], dropped);
    return sum;
}

#define ADMIN_MAX_LISTENERS 64

void ct_ops_render(struct ct_ops *ops, bool json, struct ct_stats_out *out)
{
    struct ct_proxy *px = ops->px;
    struct ct_stats *sum = sum_workers(ops);
    const char **names = ct_xcalloc(px->nbackends + 1, sizeof(*names));
    int *up = ct_xcalloc(px->nbackends + 1, sizeof(*up));
    int *drain = ct_xcalloc(px->nbackends + 1, sizeof(*drain));
    for (size_t i = 0; i < px->nbackends; i++) {
        const struct ct_conf_backend *b = &px->cf->flat_backends[i];
        names[i] = b->name ? b->name : px->backends[i].name;
        up[i] = ct_ops_backend_up(px, i);
        drain[i] = atomic_load(&px->backends[i].drain);
    }
    struct ct_stats_view v = {
        .sum = sum,
        .backend_names = names,
        .backend_up = ops->health ? up : NULL,
        .backend_drain = drain,
        .uptime_s = ct_time_mono() - ops->started,
        .reload = ops->reload,
        .purge = ops->cache != NULL,
        .routes = px->route_names,
    };
    const struct ct_listener_conf *lcs[ADMIN_MAX_LISTENERS];
    struct ct_stats_listener ls[ADMIN_MAX_LISTENERS + 1];
    size_t nl = ct_reload_listeners(ops, lcs, ADMIN_MAX_LISTENERS);
    for (size_t i = 0; i < nl; i++)
        ls[i] = (struct ct_stats_listener){lcs[i]->kind == CT_LISTEN_HTTP ? "http" : "https",
                                           lcs[i]->name};
    if (ops->lev)
        ls[nl++] = (struct ct_stats_listener){"admin", ops->admin_name};
    v.listeners = ls;
    v.nlisteners = nl;
    struct ct_mem_stats ms;
    ct_mem_stats(&ms);
    v.mem = &ms;
    struct ct_cache_stats cs;
    if (ops->cache) {
        ct_cache_stats(ops->cache, &cs);
        v.cache = &cs;
    }
    for (size_t i = 0; i < px->nlisteners; i++) {
        if (px->listeners[i].tls == NULL)
            continue;
        struct ct_tls_stats ts;
        ct_tls_ctx_stats(px->listeners[i].tls, &ts);
        v.tls = true;
        v.tls_full += ts.handshakes_full;
        v.tls_resumed += ts.handshakes_resumed;
    }
    uint64_t full = 0, resumed = 0; /* listeners made by reloads */
    if (ct_reload_tls_stats(ops, &full, &resumed))
        v.tls = true;
    v.tls_full += full;
    v.tls_resumed += resumed;
    if (json)
        ct_stats_render_json(&v, out);
    else
        ct_stats_render_prom(&v, out);
    ct_ops_acme_render(ops, json, out);
    free(names);
    free(up);
    free(drain);
    ct_stats_free(&sum);
}

static void serve_stats(struct admin_conn *ac, const struct ct_http_msg *req, bool json)
{
    struct ct_stats_out out = {0};
    ct_ops_render(ac->ops, json, &out);
    respond(ac, req, 200, json ? "application/json" : "text/plain; version=0.0.4; charset=utf-8",
            NULL, out.p, out.len);
    ct_stats_out_free(&out);
}

static void error(struct admin_conn *ac, const struct ct_http_msg *req, unsigned status,
                  const char *extra)
{
    char body[96];
    int n = snprintf(body, sizeof(body), "%u %s\n", status, ct_http_status_reason(status));
    respond(ac, req, status, "text/plain", extra, body, (size_t)n);
}

static void serve_purge(struct admin_conn *ac, const struct ct_http_msg *req, struct ct_str query)
{
    struct ct_stats_out out = {0};
    unsigned status = ct_ops_purge(ac->ops, query, &out);
    ct_ops_fleet_fanout(ac->ops, bufferevent_getfd(ac->bev), req, "purge", query, CT_STR_NULL,
                        status);
    respond(ac, req, status, "application/json", NULL, out.p, out.len);
    ct_stats_out_free(&out);
}

static void serve_ban(struct admin_conn *ac, const struct ct_http_msg *req, struct ct_str query)
{
    struct ct_stats_out out = {0};
    size_t len = evbuffer_get_length(ac->body);
    struct ct_str expr = ct_str_make((const char *)evbuffer_pullup(ac->body, -1), len);
    unsigned status = ct_ops_ban(ac->ops, query, expr, &out);
    ct_ops_fleet_fanout(ac->ops, bufferevent_getfd(ac->bev), req, "ban", query, expr, status);
    respond(ac, req, status, "application/json", NULL, out.p, out.len);
    ct_stats_out_free(&out);
}

static void serve_bans(struct admin_conn *ac, const struct ct_http_msg *req)
{
    struct ct_stats_out out = {0};
    unsigned status = ct_ops_bans(ac->ops, &out);
    respond(ac, req, status, "application/json", NULL, out.p, out.len);
    ct_stats_out_free(&out);
}

/* Does REQ carry the admin token (or is none configured)? */
static bool authorized(struct admin_conn *ac, const struct ct_http_msg *req)
{
    const char *token = ct_conf_admin_token(&ac->ops->px->cf->admin);
    if (token == NULL)
        return true;
    const struct ct_http_field *f = ct_http_msg_find(req, CT_HDR_AUTHORIZATION, NULL);
    if (f == NULL || f->value.len < 7 || !ct_str_eq_ci(ct_str_make(f->value.p, 7), CT_STR("Bearer ")))
        return false;
    return ct_conf_token_matches(token,
                                 ct_str_trim_ows(ct_str_make(f->value.p + 7, f->value.len - 7)));
}

static void route(struct admin_conn *ac, const struct ct_http_msg *req)
{
    struct ct_str path = req->target, query = CT_STR_NULL;
    const char *q = memchr(path.p, '?', path.len);
    if (q) {
        query = ct_str_make(q + 1, path.len - (size_t)(q + 1 - path.p));
        path.len = (size_t)(q - path.p);
    }
    bool get = req->method == CT_METHOD_GET || req->method == CT_METHOD_HEAD;
    ac->ops->admin_requests++;
    /* the page itself holds no figures; everything it shows needs the token */
    if (!(ct_str_eq(path, CT_STR("/")) && get) && !authorized(ac, req)) {
        CT_INFO("admin: %.*s %.*s refused: no or wrong admin token", (int)req->method_name.len,
                req->method_name.p, (int)path.len, path.p);
        static const char why[] =
            "401 Unauthorized: this admin listener needs Authorization: Bearer TOKEN\n";
        respond(ac, req, 401, "text/plain",
                "WWW-Authenticate: Bearer realm=\"cachet admin\"\r\n", why, sizeof(why) - 1);
        return;
    }
    if (ct_str_eq(path, CT_STR("/"))) {
        if (!get)
            error(ac, req, 405, "Allow: GET, HEAD\r\n");
        else
            respond(ac, req, 200, "text/html; charset=utf-8", DASHBOARD_HEADERS,
                    (const char *)ct_dashboard_html, ct_dashboard_html_len);
    } else if (ct_str_eq(path, CT_STR("/history"))) {
        if (!get) {
            error(ac, req, 405, "Allow: GET, HEAD\r\n");
        } else {
            struct ct_stats_out out = {0};
            ct_ops_events_history(ac->ops, &out);
            respond(ac, req, 200, "application/json", NULL, out.p, out.len);
            ct_stats_out_free(&out);
        }
    } else if (ct_str_eq(path, CT_STR("/events"))) {
        if (req->method != CT_METHOD_GET)
            error(ac, req, 405, "Allow: GET\r\n");
        else
            ac->streaming = true; /* on_read hands the connection over */
    } else if (ct_str_eq(path, CT_STR("/stats")) || ct_str_eq(path, CT_STR("/metrics"))) {
        if (!get)
            error(ac, req, 405, "Allow: GET, HEAD\r\n");
        else
            serve_stats(ac, req, path.len == 6);
    } else if (ct_str_eq(path, CT_STR("/purge"))) {
        if (req->method != CT_METHOD_POST)
            error(ac, req, 405, "Allow: POST\r\n");
        else
            serve_purge(ac, req, query);
    } else if (ct_str_eq(path, CT_STR("/ban"))) {
        if (req->method != CT_METHOD_POST)
            error(ac, req, 405, "Allow: POST\r\n");
        else
            serve_ban(ac, req, query);
    } else if (ct_str_eq(path, CT_STR("/reload")) || ct_str_eq(path, CT_STR("/backend"))) {
        if (req->method != CT_METHOD_POST) {
            error(ac, req, 405, "Allow: POST\r\n");
        } else {
            struct ct_stats_out out = {0};
            unsigned status = path.len == 7 ? ct_ops_reload_cmd(ac->ops, &out)
                                            : ct_ops_backend_cmd(ac->ops, query, &out);
            respond(ac, req, status, "application/json", NULL, out.p, out.len);
            ct_stats_out_free(&out);
        }
    } else if (ct_str_eq(path, CT_STR("/certs"))) {
        if (!get) {
            error(ac, req, 405, "Allow: GET, HEAD\r\n");
        } else {
            struct ct_stats_out out = {0};
            bool text = ct_str_eq(query, CT_STR("format=text"));
            if (text) {
                ct_ops_acme_text(ac->ops, &out);
            } else {
                ct_ops_acme_json(ac->ops, &out);
                CT_BUF_LIT(&out, "\n");
            }
            respond(ac, req, 200, text ? "text/plain; charset=utf-8" : "application/json", NULL,
                    out.p, out.len);
            ct_stats_out_free(&out);
        }
    } else if (ct_str_eq(path, CT_STR("/bans"))) {
        if (!get)
            error(ac, req, 405, "Allow: GET, HEAD\r\n");
        else
            serve_bans(ac, req);
    } else {
        error(ac, req, 404, NULL);
    }
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct admin_conn *ac = arg;
    CT_CHECK_OBJ(ac, CT_ADMIN_CONN_MAGIC);
    if (ac->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        admin_close(ac);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct admin_conn *ac = arg;
    CT_CHECK_OBJ(ac, CT_ADMIN_CONN_MAGIC);
    struct evbuffer *in = bufferevent_get_input(bev);
    /* Bounded: every turn consumes input or reports an event that moves the
     * parser on (HEAD, then END even for an empty buffer). */
    while (!ac->closing) {
        size_t n, before = evbuffer_get_length(in);
        enum ct_http_ev ev = ct_fwd_pump(ac->rp, in, ac->body, false, &n);
        if (ev == CT_HTTP_EV_END) {
            route(ac, ct_http_parser_msg(ac->rp));
            evbuffer_drain(ac->body, evbuffer_get_length(ac->body));
        }
        else if (ev == CT_HTTP_EV_ERROR)
            error(ac, NULL, ct_http_parser_error_status(ac->rp), NULL);
        else if (ev == CT_HTTP_EV_MORE && (before == 0 || evbuffer_get_length(in) == before))
            break;
        if (ac->streaming) {
            /* Responses queued before on this connection go out first: the
             * stream appends to the same output. Pipelined input is dropped. */
            struct ct_ops *ops = ac->ops;
            evbuffer_drain(in, evbuffer_get_length(in));
            admin_drop(ac, true);
            ct_ops_events_add(ops, bev);
            return;
        }
        if (ev == CT_HTTP_EV_END && evbuffer_get_length(in) == 0)
            break; /* the next request has not started */
    }
    if (ac->closing) {
        bufferevent_disable(bev, EV_READ);
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            admin_close(ac);
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct admin_conn *ac = arg;
    CT_CHECK_OBJ(ac, CT_ADMIN_CONN_MAGIC);
    admin_close(ac); /* EOF, error or timeout: nothing more to say */
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    struct bufferevent *bev = bufferevent_socket_new(ops->px->main_base, fd,
                                                     BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        evutil_closesocket(fd);
        return;
    }
    struct admin_conn *ac = ct_xcalloc(1, sizeof(*ac));
    ac->magic = CT_ADMIN_CONN_MAGIC;
    ac->ops = ops;
    ac->bev = bev;
    struct ct_http_limits lim;
    ct_http_limits_default(&lim);
    lim.max_body = ADMIN_MAX_BODY;
    ac->rp = ct_http_parser_new(CT_HTTP_REQUEST, &lim);
    ac->body = evbuffer_new();
    ac->next = ops->conns;
    if (ops->conns)
        ops->conns->prev = ac;
    ops->conns = ac;
    struct timeval tv = {ADMIN_TIMEOUT_S, 0};
    bufferevent_set_timeouts(bev, &tv, &tv);
    bufferevent_setcb(bev, on_read, on_write, on_event, ac);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

struct evconnlistener *ct_ops_admin_bind(struct ct_ops *ops, const struct ct_conf_addr *addr,
                                         char *name, size_t namelen)
{
    struct evconnlistener *lev = evconnlistener_new_bind(
        ops->px->main_base, on_accept, ops,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE, 64,
        (const struct sockaddr *)&addr->sa, (int)addr->salen);
    if (lev == NULL) {
        CT_ERR("cannot listen on admin %s:%u: %s", addr->host, addr->port, strerror(errno));
        return NULL;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    getsockname(evconnlistener_get_fd(lev), (struct sockaddr *)&ss, &len);
    ct_ops_addr_name((struct sockaddr *)&ss, name, namelen);
    return lev;
}

int ct_ops_admin_listen(struct ct_ops *ops, const struct ct_conf_addr *addr)
{
    ops->lev = ct_ops_admin_bind(ops, addr, ops->admin_name, sizeof(ops->admin_name));
    if (ops->lev == NULL)
        return CT_EIO;
    printf("listening on admin %s\n", ops->admin_name);
    fflush(stdout);
    return CT_OK;
}

void ct_ops_admin_close(struct ct_ops *ops)
{
    if (ops->lev)
        evconnlistener_free(ops->lev);
    ops->lev = NULL;
    while (ops->conns)
        admin_close(ops->conns);
}
