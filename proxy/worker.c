/*
 * proxy/worker.c: one worker = one thread, one event_base, one SO_REUSEPORT
 * socket per configured listener (the kernel spreads connections), its own
 * clients, upstream pools and passive health. Workers share nothing mutable;
 * the main thread talks to one only through its wake pipe.
 *
 * Limits: at max_connections_per_worker the worker stops accepting
 * (evconnlistener_disable: connections wait in the kernel's queue or go to
 * another worker) and starts again when one closes.
 *
 * Drain (SIGTERM/SIGINT via the main thread): close the listeners (new
 * connections are refused once every worker has), close idle clients and
 * pooled upstreams, let requests in flight finish (their responses say
 * Connection: close), and leave the loop when the last client is gone or the
 * drain timeout passes.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"
#include "proxy/core/core.h"
#include "proxy/ctx.h"
#include "proxy/h1/h1.h"
#include "proxy/h2/h2_serve.h"
#include "proxy/net/accept.h"
#include "proxy/ops/admin.h"
#include "proxy/upstream/upstream.h"

/* The protocol dispatch (h2o's ALPN table): what the handshake chose. */
static void take(struct ct_worker *w, const struct ct_conn_info *ci)
{
    if (ci->h2)
        ct_h2s_take(w, ci);
    else
        ct_client_take(w, ci);
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct ct_wlistener *wl = arg;
    CT_CHECK_OBJ(wl, CT_WLISTENER_MAGIC);
    struct ct_worker *w = wl->w;
    if (wl->lc->proxy_protocol) /* a PROXY header first (proxy/net/pp_accept.c) */
        ct_pp_accept(w, wl->lc, fd, sa, (socklen_t)salen, take);
    else
        ct_net_accept(w, wl->lc, fd, sa, take);
    unsigned max = w->cf->limits.max_connections_per_worker;
    if (max && w->nclients >= max && !w->accept_paused) {
        w->accept_paused = true;
        for (size_t i = 0; i < w->nls; i++)
            evconnlistener_disable(w->ls[i].lev);
        CT_WARN("w%u: %u connections, the per-worker limit: not accepting", w->id, w->nclients);
    }
}

static void listeners_enable(struct ct_worker *w, bool on)
{
    for (size_t i = 0; i < w->nls; i++)
        if (w->ls[i].lev)
            (on ? evconnlistener_enable : evconnlistener_disable)(w->ls[i].lev);
}

static void on_accept_retry(evutil_socket_t fd, short what, void *arg)
{
    struct ct_worker *w = arg;
    CT_CHECK_OBJ(w, CT_WORKER_MAGIC);
    w->accept_backoff = false;
    if (!w->draining && !w->accept_paused)
        listeners_enable(w, true);
}

static void on_accept_error(struct evconnlistener *lev, void *arg)
{
    struct ct_wlistener *wl = arg;
    CT_CHECK_OBJ(wl, CT_WLISTENER_MAGIC);
    struct ct_worker *w = wl->w;
    int err = errno;
    if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM) {
        CT_ERR("w%u accept on %s: %s", w->id, wl->lc->name, strerror(err));
        return;
    }
    /* Out of descriptors or memory: the pending connection stays readable,
     * so accepting again at once would spin. Stop for a moment, like nginx
     * (ngx_event_accept disables accept events for 500 ms). */
    if (w->accept_backoff)
        return;
    w->accept_backoff = true;
    listeners_enable(w, false);
    if (w->accept_retry == NULL)
        w->accept_retry = evtimer_new(w->base, on_accept_retry, w);
    struct timeval backoff = {0, 100 * 1000};
    evtimer_add(w->accept_retry, &backoff);
    CT_WARN("w%u accept on %s: %s; not accepting for 100 ms (%u connections open)", w->id,
            wl->lc->name, strerror(err), w->nclients);
}

static void listeners_free(struct ct_worker *w)
{
    for (size_t i = 0; i < w->nls; i++)
        if (w->ls[i].lev)
            evconnlistener_free(w->ls[i].lev);
    CT_FREE(&w->ls);
    w->nls = 0;
}

/* A connection closed: re-enable accepting if we were at the limit; finish a
 * drain; tell reload retirement (w->conn_gone). */
static void conn_gone(struct ct_worker *w, uint64_t conn_id)
{
    ct_reload_conn_gone(w, conn_id);
    unsigned max = w->cf->limits.max_connections_per_worker;
    if (w->accept_paused && !w->draining && w->nclients < max) {
        w->accept_paused = false;
        if (!w->accept_backoff)
            listeners_enable(w, true);
    }
    if (w->draining && w->nclients == 0)
        event_base_loopexit(w->base, NULL);
}

static void on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct ct_worker *w = arg;
    CT_CHECK_OBJ(w, CT_WORKER_MAGIC);
    CT_WARN("w%u: drain timeout, closing %u connections still open", w->id, w->nclients);
    event_base_loopexit(w->base, NULL);
}

static void drain(struct ct_worker *w)
{
    if (w->draining)
        return;
    w->draining = true;
    listeners_free(w);
    ct_upstream_pool_close_idle(w);
    struct ct_client *c = w->clients, *next;
    for (; c; c = next) {
        next = c->next;
        ct_client_drain(c); /* may free c */
    }
    ct_h2s_drain_all(w, false);
    ct_net_drain_all(w);
    ct_pp_abort_all(w); /* no request yet, as idle ones: else accepted after their header */
    if (w->nclients == 0) {
        event_base_loopexit(w->base, NULL);
        return;
    }
    uint64_t ms = w->cf->limits.drain_timeout_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    w->drain_timer = evtimer_new(w->base, on_drain_timeout, w);
    evtimer_add(w->drain_timer, &tv);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct ct_worker *w = arg;
    CT_CHECK_OBJ(w, CT_WORKER_MAGIC);
    char buf[16];
    ssize_t n = read(fd, buf, sizeof(buf));
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == 'd')
            drain(w);
        else if (buf[i] == 'r' && !w->draining) {
            ct_reload_worker_apply(w, ct_worker_listeners_update); /* SIGHUP */
            ct_h2s_drain_all(w, true); /* h2 clients reconnect to the new configuration */
        }
    }
}

static int listen_on(struct ct_worker *w, struct ct_wlistener *wl, const struct ct_listener_conf *lc)
{
    wl->magic = CT_WLISTENER_MAGIC;
    wl->w = w;
    wl->lc = lc;
    wl->lev = evconnlistener_new_bind(
        w->base, on_accept, wl,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT,
        1024, (struct sockaddr *)&lc->sa, (int)lc->salen);
    if (wl->lev == NULL) {
        CT_ERR("w%u cannot listen on %s %s: %s", w->id,
               lc->kind == CT_LISTEN_HTTP ? "http" : "https", lc->name, strerror(errno));
        return CT_EIO;
    }
    evconnlistener_set_error_cb(wl->lev, on_accept_error);
    return CT_OK;
}

static int listen_one(struct ct_worker *w, size_t i)
{
    return listen_on(w, &w->ls[i], &w->px->listeners[i]);
}

/* A listener going away: take what the kernel already queued on it, so a
 * reload does not reset connections that were accepted by the kernel
 * (bounded; a connection arriving between this and the close still can). */
static void accept_queued(struct ct_wlistener *wl)
{
    int fd = evconnlistener_get_fd(wl->lev);
    for (int i = 0; i < 4096; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int cfd = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0)
            return;
        on_accept(wl->lev, cfd, (struct sockaddr *)&ss, (int)len, wl);
    }
}

int ct_worker_listeners_update(struct ct_worker *w, const struct ct_listener_conf *const *add,
                               size_t nadd, const struct ct_listener_conf *const *del,
                               size_t ndel)
{
    struct ct_wlistener *ls = ct_xcalloc(w->nls + nadd + 1, sizeof(*ls));
    size_t k = 0;
    int rc = CT_OK;
    for (size_t i = 0; i < nadd; i++) { /* new ones first: no gap in accepting */
        if (listen_on(w, &ls[k], add[i]) != CT_OK) {
            rc = CT_EIO;
            continue;
        }
        if (w->accept_paused)
            evconnlistener_disable(ls[k].lev);
        k++;
    }
    for (size_t i = 0; i < w->nls; i++) {
        struct ct_wlistener *wl = &w->ls[i];
        bool gone = false;
        for (size_t d = 0; d < ndel; d++)
            gone = gone || wl->lc == del[d];
        if (gone) {
            accept_queued(wl);
            evconnlistener_free(wl->lev);
            continue;
        }
        ls[k] = *wl; /* the listener's callback argument moves with it */
        evconnlistener_set_cb(ls[k].lev, on_accept, &ls[k]);
        evconnlistener_set_error_cb(ls[k].lev, on_accept_error);
        k++;
    }
    free(w->ls);
    w->ls = ls;
    w->nls = k;
    /* accept_queued() may have reached the connection limit: the pause
     * covers every listener, including the ones just opened. */
    for (size_t i = 0; w->accept_paused && i < k; i++)
        evconnlistener_disable(ls[i].lev);
    return rc;
}

struct ct_worker *ct_worker_new(struct ct_proxy *px, unsigned id)
{
    struct ct_worker *w = ct_xcalloc(1, sizeof(*w));
    const struct ct_conf_limits *lim = &px->cf->limits;
    w->magic = CT_WORKER_MAGIC;
    w->id = id;
    w->px = px;
    w->cf = px->cf;
    w->wake_fd[0] = w->wake_fd[1] = -1;
    w->conn_gone = conn_gone;
    w->base = event_base_new();
    CT_ASSERT(w->base != NULL);
    ct_http_limits_default(&w->limits);
    w->limits.max_line = lim->max_request_line_bytes;
    w->limits.max_head = lim->max_header_bytes;
    w->limits.max_fields = lim->max_header_count;
    w->limits.max_body = lim->max_body_bytes;
    ct_upstream_backends_set(w, px->backends, px->cf->flat_backends, px->nbackends);
    ct_ops_worker_init(w);
    w->ls = ct_xcalloc(px->nlisteners ? px->nlisteners : 1, sizeof(*w->ls));
    w->nls = px->nlisteners;
    for (size_t i = 0; i < px->nlisteners; i++)
        if (listen_one(w, i) != CT_OK)
            goto fail;
    if (pipe2(w->wake_fd, O_NONBLOCK | O_CLOEXEC) != 0)
        goto fail;
    w->wake_ev = event_new(w->base, w->wake_fd[0], EV_READ | EV_PERSIST, on_wake, w);
    event_add(w->wake_ev, NULL);
    w->wc = ct_wcache_new(w, px->cache);
    return w;
fail:
    ct_worker_join_free(&w);
    return NULL;
}

void ct_worker_cut(struct ct_worker *w)
{
    while (w->clients)
        ct_client_abort(w->clients);
    ct_pp_abort_all(w);
    ct_h2s_abort_all(w);
    ct_net_abort_all(w);
    if (w->wc)
        ct_fetch_bg_free_all(w->wc); /* refreshes in flight hold upstreams */
    ct_upstream_pool_free(w);
    ct_req_routes_free(w);
}

static void *worker_main(void *arg)
{
    struct ct_worker *w = arg;
    CT_CHECK_OBJ(w, CT_WORKER_MAGIC);
    if (w->wc)
        ct_wcache_bind(w->wc); /* wakes from this thread skip the eventfd */
    event_base_dispatch(w->base);
    ct_worker_cut(w); /* drained or timed out: whatever is left is cut */
    return NULL;
}

int ct_worker_start(struct ct_worker *w)
{
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
        return CT_EIO;
    w->started = true;
    return CT_OK;
}

void ct_worker_stop(struct ct_worker *w)
{
    static const char d = 'd';
    /* The pipe never fills: one byte per signal. */
    if (write(w->wake_fd[1], &d, 1) != 1)
        CT_ERR("w%u: cannot wake the worker: %s", w->id, strerror(errno));
}

void ct_worker_join(struct ct_worker *w)
{
    if (w->started)
        pthread_join(w->thread, NULL);
    w->started = false;
}

void ct_worker_join_free(struct ct_worker **wp)
{
    struct ct_worker *w = *wp;
    *wp = NULL;
    if (w == NULL)
        return;
    CT_CHECK_OBJ(w, CT_WORKER_MAGIC);
    ct_worker_join(w);
    listeners_free(w);
    if (w->wake_ev)
        event_free(w->wake_ev);
    if (w->drain_timer)
        event_free(w->drain_timer);
    if (w->accept_retry)
        event_free(w->accept_retry);
    for (int i = 0; i < 2; i++)
        if (w->wake_fd[i] >= 0)
            close(w->wake_fd[i]);
    ct_upstream_pool_free(w); /* a worker that never ran: its backends (before their base) */
    ct_wcache_free(&w->wc);
    event_base_free(w->base);
    ct_ops_worker_fini(w);
    w->magic = 0;
    free(w);
}
