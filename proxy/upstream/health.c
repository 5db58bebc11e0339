/*
 * proxy/upstream/health.c: active health checks (see health.h).
 *
 * One probe per backend at a time, each its own small state machine:
 *
 *     IDLE --timer--> CONNECTING --connected--> WAIT_HEAD --head--> IDLE
 *                          |                        |
 *                          +---- error/timeout -----+--> IDLE (failure)
 *
 * Everything runs on the main thread's event_base; only `up` is shared
 * (an atomic read by the workers). A TLS backend is probed over TLS, with
 * its client context (verified as requests are; no session kept): a probe
 * that cannot complete the handshake failed, with the reason in words.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "proxy/ctx.h"
#include "proxy/net/net.h"
#include "proxy/upstream/health.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/wire.h"
#include "tls/tls.h"

enum probe_state { PROBE_IDLE, PROBE_CONNECTING, PROBE_WAIT_HEAD };

struct probe {
    unsigned magic;
#define CT_PROBE_MAGIC 0x9b0be001u
    struct ct_health *h;
    size_t idx;
    struct ct_backend_addr *addr; /* its `down` is what workers read */
    const struct ct_conf_backend *bc;
    enum probe_state state;
    struct event *timer;      /* next probe */
    struct bufferevent *bev;  /* the probe in flight */
    struct ct_http_parser *rp;
    unsigned ok_run, fail_run;
};

struct ct_health {
    unsigned magic;
#define CT_HEALTH_MAGIC 0x4ea1742bu
    struct event_base *base;
    size_t n;
    struct probe *probes;
    _Atomic bool *up; /* shared: written here, read by workers */
};

static void probe_arm(struct probe *pr, uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    evtimer_add(pr->timer, &tv);
}

static void probe_end(struct probe *pr, bool ok, const char *why)
{
    if (pr->bev)
        bufferevent_free(pr->bev);
    pr->bev = NULL;
    pr->state = PROBE_IDLE;
    _Atomic bool *up = &pr->h->up[pr->idx];
    const char *name = pr->bc->name ? pr->bc->name : pr->addr->name;
    if (ok) {
        pr->fail_run = 0;
        if (++pr->ok_run >= pr->bc->health.rise && !atomic_load(up)) {
            atomic_store(up, true);
            atomic_store(&pr->addr->down, false);
            CT_INFO("backend %s (%s) is up: %u successful health checks", name, pr->addr->name,
                    pr->ok_run);
        }
    } else {
        pr->ok_run = 0;
        ++pr->fail_run;
        CT_DEBUG("backend %s health check GET %s: %s", name, pr->bc->health.path, why);
        if (pr->fail_run >= pr->bc->health.fall && atomic_load(up)) {
            atomic_store(up, false);
            atomic_store(&pr->addr->down, true);
            CT_WARN("backend %s (%s) is down: %u failed health checks, last: %s", name,
                    pr->addr->name, pr->fail_run, why);
        }
    }
    probe_arm(pr, pr->bc->health.interval_ms);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct probe *pr = arg;
    CT_CHECK_OBJ(pr, CT_PROBE_MAGIC);
    struct evbuffer *in = bufferevent_get_input(bev);
    char why[64];
    while (evbuffer_get_length(in) > 0) {
        size_t n, before = evbuffer_get_length(in);
        enum ct_http_ev ev = ct_fwd_pump(pr->rp, in, NULL, false, &n);
        if (ev == CT_HTTP_EV_HEAD) {
            const struct ct_http_msg *msg = ct_http_parser_msg(pr->rp);
            if (msg->status < 200)
                continue; /* interim: the final status follows */
            snprintf(why, sizeof(why), "status %u, expected %u", msg->status,
                     pr->bc->health.expect_status);
            probe_end(pr, msg->status == pr->bc->health.expect_status, why);
            return;
        }
        if (ev == CT_HTTP_EV_ERROR) {
            probe_end(pr, false, "malformed response");
            return;
        }
        if (evbuffer_get_length(in) == before)
            return;
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct probe *pr = arg;
    CT_CHECK_OBJ(pr, CT_PROBE_MAGIC);
    if (what & BEV_EVENT_CONNECTED) {
        pr->state = PROBE_WAIT_HEAD;
        return;
    }
    const char *why = (what & BEV_EVENT_TIMEOUT) ? "timeout"
                      : pr->state == PROBE_CONNECTING ? "cannot connect"
                      : (what & BEV_EVENT_EOF)         ? "closed before a response"
                                                       : "read error";
    char tls_why[340];
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    if (ssl && pr->state == PROBE_CONNECTING && !(what & BEV_EVENT_TIMEOUT)) {
        unsigned long e = bufferevent_get_openssl_error(bev), more;
        while ((more = bufferevent_get_openssl_error(bev)) != 0)
            ;
        char s[320];
        ct_tls_client_failure(ssl, e, s, sizeof(s));
        snprintf(tls_why, sizeof(tls_why), "TLS: %s", s);
        why = tls_why;
    }
    if (ssl) {
        char rest[256];
        ct_tls_drain_errors(rest, sizeof(rest)); /* none left for the next TLS call here */
    }
    probe_end(pr, false, why);
}

static void probe_start(evutil_socket_t fd, short what, void *arg)
{
    struct probe *pr = arg;
    CT_CHECK_OBJ(pr, CT_PROBE_MAGIC);
    CT_ASSERT(pr->state == PROBE_IDLE && pr->bev == NULL);
    const struct ct_conf_backend *bc = pr->bc;
    if (pr->addr->tls) {
        SSL *ssl = ct_tls_client_ssl(pr->addr->tls,
                                     pr->addr->tls_host ? bc->host : pr->addr->tls_name, NULL,
                                     NULL);
        pr->bev = ssl ? bufferevent_openssl_socket_new(pr->h->base, -1, ssl,
                                                       BUFFEREVENT_SSL_CONNECTING,
                                                       BEV_OPT_CLOSE_ON_FREE)
                      : NULL;
    } else {
        pr->bev = bufferevent_socket_new(pr->h->base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (pr->bev == NULL) {
        probe_end(pr, false, "out of sockets");
        return;
    }
    pr->state = PROBE_CONNECTING;
    ct_http_parser_free(&pr->rp);
    pr->rp = ct_http_parser_new(CT_HTTP_RESPONSE, NULL);
    ct_http_parser_set_request_method(pr->rp, CT_METHOD_GET);
    uint64_t ms = bc->health.timeout_ms ? bc->health.timeout_ms : 2000;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    bufferevent_set_timeouts(pr->bev, &tv, &tv);
    bufferevent_setcb(pr->bev, on_read, NULL, on_event, pr);
    evbuffer_add_printf(bufferevent_get_output(pr->bev),
                        "GET %s HTTP/1.1\r\nHost: %s:%u\r\nUser-Agent: cachet-health\r\n"
                        "Connection: close\r\n\r\n",
                        bc->health.path ? bc->health.path : "/", bc->host, bc->port);
    bufferevent_enable(pr->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(pr->bev, (struct sockaddr *)&pr->addr->sa,
                                   (int)pr->addr->salen) != 0)
        probe_end(pr, false, "cannot connect"); /* bev already freed by probe_end */
}

struct ct_health *ct_health_new(struct event_base *base, struct ct_backend_addr *addrs,
                                const struct ct_conf_backend *bcs, size_t n)
{
    size_t checked = 0;
    for (size_t i = 0; i < n; i++)
        checked += bcs[i].health.enabled;
    if (checked == 0)
        return NULL;
    struct ct_health *h = ct_xcalloc(1, sizeof(*h));
    h->magic = CT_HEALTH_MAGIC;
    h->base = base;
    h->n = n;
    h->probes = ct_xcalloc(n, sizeof(*h->probes));
    h->up = ct_xcalloc(n, sizeof(*h->up));
    for (size_t i = 0; i < n; i++) {
        struct probe *pr = &h->probes[i];
        /* a reload carries a surviving backend's state over (reload.c) */
        atomic_init(&h->up[i], !atomic_load(&addrs[i].down));
        pr->magic = CT_PROBE_MAGIC;
        pr->h = h;
        pr->idx = i;
        pr->addr = &addrs[i];
        pr->bc = &bcs[i];
        pr->timer = evtimer_new(base, probe_start, pr);
        if (bcs[i].health.enabled)
            probe_arm(pr, 0);
    }
    return h;
}

void ct_health_reconfigure(struct ct_health *h, const struct ct_conf_backend *bcs, size_t n)
{
    if (h == NULL)
        return;
    CT_CHECK_OBJ(h, CT_HEALTH_MAGIC);
    for (size_t i = 0; i < h->n && i < n; i++) {
        struct probe *pr = &h->probes[i];
        bool was = pr->bc->health.enabled, is = bcs[i].health.enabled;
        pr->bc = &bcs[i]; /* new interval, path, status, rise/fall from the next probe on */
        if (was && !is) {
            evtimer_del(pr->timer);
            if (pr->bev)
                bufferevent_free(pr->bev);
            pr->bev = NULL;
            pr->state = PROBE_IDLE;
            pr->ok_run = pr->fail_run = 0;
            atomic_store(&h->up[i], true); /* unchecked backends count as up */
            atomic_store(&pr->addr->down, false);
        } else if (!was && is) {
            probe_arm(pr, 0);
        }
    }
}

void ct_health_free(struct ct_health **hp)
{
    struct ct_health *h = *hp;
    *hp = NULL;
    if (h == NULL)
        return;
    CT_CHECK_OBJ(h, CT_HEALTH_MAGIC);
    for (size_t i = 0; i < h->n; i++) {
        struct probe *pr = &h->probes[i];
        if (pr->timer)
            event_free(pr->timer);
        if (pr->bev)
            bufferevent_free(pr->bev);
        ct_http_parser_free(&pr->rp);
    }
    free(h->probes);
    free(h->up);
    h->magic = 0;
    free(h);
}

bool ct_health_is_up(const struct ct_health *h, size_t i)
{
    if (h == NULL || i >= h->n)
        return true;
    return atomic_load_explicit(&h->up[i], memory_order_relaxed);
}
