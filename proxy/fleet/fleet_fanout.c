/*
 * proxy/fleet/fleet_fanout.c: purges and bans over HTTP to the members'
 * admin listeners (fleet_fanout.h).
 *
 * One slot per admin address ever used (struct peer_admin, allocated alone:
 * its timer and its requests point at it while the array of slots grows),
 * with one keep-alive connection and the ordered queue of the entries that
 * member has not acknowledged. Only the queue's head is in flight: the
 * order per member is kept, and a connect failure fails one request, not a
 * burst of them. The queue owns the entries: evhttp's request is a copy of
 * the head, and evhttp_connection_free drops queued requests without their
 * callbacks, so nothing of ours is ever left in evhttp's hands.
 *
 *   ack       2xx, or 404 (nothing was stored there; ct_ops_fleet_fanout
 *             reads it the same way): the head is freed, the next one sent
 *             at once, the backoff starts again at 1 s
 *   retry     no answer (refused, reset, the 5 s timeout), 5xx, 401, 403,
 *             429: the head is sent again after the backoff, 1 s doubling
 *             to 30 s (without Redis nothing says a member is back); a purge
 *             applied twice is one purge
 *   rejected  any other status will never succeed: dropped, counted, logged
 *   full      past fleet.fanout_queue the oldest is dropped, counted and
 *             logged once per burst: that member needs a purge by hand
 *   left      a member gone from the configuration in force (a reload, a
 *             learned member that deregistered) has its queue dropped at the
 *             next send or retry, counted
 * fanout_queue = 0 queues nothing: each entry is sent once, as before the
 * catch-up, and one that fails is counted as dropped (full).
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "common/log.h"
#include "proxy/fleet/fleet.h"
#include "proxy/fleet/fleet_fanout.h"

#define BACKOFF_MIN_S 1
#define BACKOFF_MAX_S 30
#define SEND_TIMEOUT_S 5

struct entry {
    CT_LIST_LINK(entry) link; /* in its slot's queue */
    char kind[8];
    size_t query_len, expr_len;
    char bytes[]; /* the query, then the expression (owned) */
};

struct peer_admin {
    unsigned magic;
#define CT_FLEET_PEER_ADMIN_MAGIC 0xad319eb5u
    struct ct_fleet_fanout *f;
    char *host, *hostport;
    uint16_t port;
    struct evhttp_connection *conn; /* kept: keep-alive to that admin listener */
    CT_LIST_HEAD(entry) queue;      /* oldest first; the head may be in flight */
    size_t nqueued;
    bool busy;              /* a request of the queue's is out, its answer awaited */
    struct entry *inflight; /* that request's entry; NULL once it was dropped meanwhile */
    struct event *retry;    /* the backoff's timer */
    unsigned backoff_s;     /* the next wait after a failure */
    bool failing;           /* said in the log that sends fail; said again when one works */
    uint64_t burst_dropped; /* dropped as full since the queue last emptied */
};

struct ct_fleet_fanout {
    unsigned magic;
#define CT_FLEET_FANOUT_MAGIC 0xfa40a7e5u
    struct event_base *base;
    const struct ct_conf *(*cf_now)(void *arg);
    void *arg;
    char *hop_header, *hop_value, *auth; /* auth: "Bearer TOKEN", NULL without a token */
    struct peer_admin **admins;
    size_t nadmins;
    struct ct_fleet_fanout_counts n;
};

/* The member of the configuration in force whose admin listener PA is,
 * NULL if none is now (it left). */
static const struct ct_conf_fleet_member *member_of(const struct peer_admin *pa)
{
    const struct ct_conf_fleet *fl = &pa->f->cf_now(pa->f->arg)->fleet;
    for (size_t i = 0; i < fl->nmembers; i++) {
        const struct ct_conf_addr *a = &fl->members[i].admin;
        if (i != fl->self_index && a->host && a->port == pa->port &&
            strcmp(a->host, pa->host) == 0)
            return &fl->members[i];
    }
    return NULL;
}

static const char *name_of(const struct peer_admin *pa)
{
    const struct ct_conf_fleet_member *m = member_of(pa);
    return m ? m->name : "(gone)";
}

static void entry_drop(struct peer_admin *pa, struct entry *e, enum ct_fleet_fanout_drop why)
{
    CT_LIST_REMOVE(&pa->queue, e, link);
    pa->nqueued--;
    pa->f->n.waiting--;
    if (why < CT_FLEET_FANOUT_DROP__COUNT)
        pa->f->n.dropped[why]++;
    if (pa->inflight == e)
        pa->inflight = NULL; /* its answer, when it comes, moves on to the next */
    free(e);
}

#define ACKED CT_FLEET_FANOUT_DROP__COUNT /* entry_drop's WHY for an entry done with */

/* Drop PA's whole queue (WHY), and its backoff with it. */
static void queue_drop(struct peer_admin *pa, enum ct_fleet_fanout_drop why)
{
    struct entry *e, *t;
    CT_LIST_FOREACH_SAFE(e, &pa->queue, link, t)
        entry_drop(pa, e, why);
    if (pa->retry)
        event_del(pa->retry);
    pa->backoff_s = BACKOFF_MIN_S;
    pa->failing = false;
    pa->burst_dropped = 0;
}

static struct evhttp_request *request_new(struct peer_admin *pa, const char *kind,
                                          struct ct_str query, struct ct_str expr,
                                          void (*done)(struct evhttp_request *, void *),
                                          char **urip)
{
    struct ct_fleet_fanout *f = pa->f;
    struct evhttp_request *req = evhttp_request_new(done, pa);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", pa->hostport);
    evhttp_add_header(h, f->hop_header, f->hop_value); /* applied there, never sent on */
    if (f->auth)
        evhttp_add_header(h, "Authorization", f->auth);
    if (expr.len)
        evbuffer_add(evhttp_request_get_output_buffer(req), expr.p, expr.len);
    size_t n = strlen(kind) + query.len + 3;
    *urip = ct_xmalloc(n);
    snprintf(*urip, n, "/%s%s%.*s", kind, query.len ? "?" : "", (int)query.len,
             query.len ? query.p : "");
    return req;
}

static bool connected(struct peer_admin *pa)
{
    if (!pa->conn) {
        pa->conn = evhttp_connection_base_new(pa->f->base, NULL, pa->host, pa->port);
        if (!pa->conn)
            return false;
        evhttp_connection_set_timeout(pa->conn, SEND_TIMEOUT_S);
    }
    return true;
}

static void on_queued_done(struct evhttp_request *req, void *arg);

static void retry_later(struct peer_admin *pa)
{
    event_add(pa->retry, &(struct timeval){pa->backoff_s, 0});
    pa->backoff_s = pa->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : pa->backoff_s * 2;
}

/* Send PA's head unless one is out or the backoff runs; a member that left
 * has its queue dropped instead. RETRY: the head was sent before. */
static void send_head(struct peer_admin *pa, bool retry)
{
    struct entry *e = CT_LIST_FIRST(&pa->queue);
    if (!e || pa->busy || event_pending(pa->retry, EV_TIMEOUT, NULL))
        return;
    if (!member_of(pa)) {
        queue_drop(pa, CT_FLEET_FANOUT_DROP_LEFT);
        return;
    }
    if (!connected(pa)) {
        retry_later(pa);
        return;
    }
    char *uri;
    struct evhttp_request *req =
        request_new(pa, e->kind, ct_str_make(e->bytes, e->query_len),
                    ct_str_make(e->bytes + e->query_len, e->expr_len), on_queued_done, &uri);
    pa->busy = true;
    pa->inflight = e;
    if (retry)
        pa->f->n.retries++;
    int rc = evhttp_make_request(pa->conn, req, EVHTTP_REQ_POST, uri);
    free(uri);
    if (rc != 0 && pa->busy) { /* not sent, and no answer came inside the call */
        pa->busy = false;
        pa->inflight = NULL;
        retry_later(pa);
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct peer_admin *pa = arg;
    CT_CHECK_OBJ(pa, CT_FLEET_PEER_ADMIN_MAGIC);
    send_head(pa, true);
}

/* What an answer means for the entry: 2xx and 404 are done, the
 * statuses a member or its configuration may get over (overload, a token
 * not rolled out yet) and no answer at all are tried again, and anything
 * else will never succeed. */
enum verdict { ACK, RETRY, REJECT };

static enum verdict verdict_of(int code)
{
    if ((code >= 200 && code < 300) || code == 404)
        return ACK;
    if (code == 0 || code >= 500 || code == 401 || code == 403 || code == 429)
        return RETRY;
    return REJECT;
}

static void on_queued_done(struct evhttp_request *req, void *arg)
{
    struct peer_admin *pa = arg;
    CT_CHECK_OBJ(pa, CT_FLEET_PEER_ADMIN_MAGIC);
    int code = req ? evhttp_request_get_response_code(req) : 0;
    struct entry *e = pa->inflight;
    pa->busy = false;
    pa->inflight = NULL;
    enum verdict v = verdict_of(code);
    if (v == RETRY) { /* E may have been dropped meanwhile: the backoff holds for the next */
        if (!pa->failing) {
            char why[32] = "no answer";
            if (code)
                snprintf(why, sizeof(why), "answered %d", code);
            CT_WARN("fleet: HTTP fan-out to %s (%s): %s; %zu waiting, sent again with a backoff "
                    "of up to %d s until it answers",
                    name_of(pa), pa->hostport, why, pa->nqueued, BACKOFF_MAX_S);
        }
        pa->failing = true;
        if (!CT_LIST_EMPTY(&pa->queue))
            retry_later(pa);
        return;
    }
    if (v == REJECT && e) {
        CT_WARN("fleet: HTTP fan-out to %s (%s): %s %.*s answered %d: dropped, not sent again "
                "(purge it there by hand)",
                name_of(pa), pa->hostport, e->kind, (int)e->query_len, e->bytes, code);
        entry_drop(pa, e, CT_FLEET_FANOUT_DROP_REJECTED);
    } else if (e) {
        entry_drop(pa, e, ACKED);
    }
    if (pa->failing && v == ACK)
        CT_INFO("fleet: HTTP fan-out to %s (%s) answers again; %zu waiting", name_of(pa),
                pa->hostport, pa->nqueued);
    pa->failing = false;
    pa->backoff_s = BACKOFF_MIN_S;
    if (CT_LIST_EMPTY(&pa->queue) && pa->burst_dropped) {
        CT_INFO("fleet: HTTP fan-out to %s (%s) caught up (%llu purges or bans dropped before)",
                name_of(pa), pa->hostport, (unsigned long long)pa->burst_dropped);
        pa->burst_dropped = 0;
    }
    send_head(pa, false);
}

/* fanout_queue = 0: sent once, nothing kept. */
static void on_direct_done(struct evhttp_request *req, void *arg)
{
    struct peer_admin *pa = arg;
    CT_CHECK_OBJ(pa, CT_FLEET_PEER_ADMIN_MAGIC);
    int code = req ? evhttp_request_get_response_code(req) : 0;
    if (verdict_of(code) == ACK)
        return;
    pa->f->n.dropped[verdict_of(code) == REJECT ? CT_FLEET_FANOUT_DROP_REJECTED
                                                : CT_FLEET_FANOUT_DROP_FULL]++;
    CT_WARN("fleet: HTTP fan-out to %s (%s) failed (%d), not sent again (fleet.fanout_queue = "
            "0): that member missed a purge or ban; purge again there (a full purge if in doubt)",
            name_of(pa), pa->hostport, code);
}

static bool send_direct(struct peer_admin *pa, const char *kind, struct ct_str query,
                        struct ct_str expr)
{
    if (!connected(pa))
        return false;
    char *uri;
    struct evhttp_request *req = request_new(pa, kind, query, expr, on_direct_done, &uri);
    int rc = evhttp_make_request(pa->conn, req, EVHTTP_REQ_POST, uri);
    free(uri);
    return rc == 0;
}

/* Queue a copy for PA, dropping the oldest past BOUND (>= 1). */
static void enqueue(struct peer_admin *pa, const char *kind, struct ct_str query,
                    struct ct_str expr, unsigned bound)
{
    uint64_t before = pa->burst_dropped;
    while (pa->nqueued >= bound) {
        entry_drop(pa, CT_LIST_FIRST(&pa->queue), CT_FLEET_FANOUT_DROP_FULL);
        pa->burst_dropped++;
    }
    if (before == 0 && pa->burst_dropped)
        CT_WARN("fleet: HTTP fan-out to %s (%s): %zu purges or bans wait unacknowledged "
                "(fleet.fanout_queue = %u), the oldest dropped: that member missed purges; "
                "purge what matters again there (a full purge if in doubt)",
                name_of(pa), pa->hostport, pa->nqueued, bound);
    struct entry *e = ct_xmalloc(sizeof(*e) + query.len + expr.len);
    snprintf(e->kind, sizeof(e->kind), "%s", kind);
    e->query_len = query.len;
    e->expr_len = expr.len;
    if (query.len)
        memcpy(e->bytes, query.p, query.len);
    if (expr.len)
        memcpy(e->bytes + query.len, expr.p, expr.len);
    e->link.next = e->link.prev = NULL;
    CT_LIST_INSERT_TAIL(&pa->queue, e, link);
    pa->nqueued++;
    pa->f->n.waiting++;
    send_head(pa, false);
}

/* The admin listener at A's slot, made on first use: the members are those
 * of the configuration in force, learned ones included, so their slots are
 * found by address (a reload reorders them); a slot outlives its member
 * (one per address ever used, with its keep-alive connection). */
static struct peer_admin *admin_slot(struct ct_fleet_fanout *f, const struct ct_conf_addr *a)
{
    for (size_t i = 0; i < f->nadmins; i++)
        if (f->admins[i]->port == a->port && strcmp(f->admins[i]->host, a->host) == 0)
            return f->admins[i];
    f->admins = ct_xrealloc(f->admins, (f->nadmins + 1) * sizeof(*f->admins));
    struct peer_admin *pa = ct_xcalloc(1, sizeof(*pa));
    f->admins[f->nadmins++] = pa;
    pa->magic = CT_FLEET_PEER_ADMIN_MAGIC;
    pa->f = f;
    pa->host = ct_xstrdup(a->host);
    pa->port = a->port;
    size_t n = strlen(a->host) + 8;
    pa->hostport = ct_xmalloc(n);
    snprintf(pa->hostport, n, "%s:%u", a->host, a->port);
    pa->backoff_s = BACKOFF_MIN_S;
    pa->retry = event_new(f->base, -1, 0, on_retry, pa);
    return pa;
}

size_t ct_fleet_fanout_send(struct ct_fleet_fanout *f, const char *kind, struct ct_str query,
                            struct ct_str expr, size_t *targets)
{
    CT_CHECK_OBJ(f, CT_FLEET_FANOUT_MAGIC);
    size_t sent = 0;
    *targets = 0;
    for (size_t i = 0; i < f->nadmins; i++)
        if (f->admins[i]->nqueued && !member_of(f->admins[i]))
            queue_drop(f->admins[i], CT_FLEET_FANOUT_DROP_LEFT);
    const struct ct_conf_fleet *fl = &f->cf_now(f->arg)->fleet;
    for (size_t i = 0; i < fl->nmembers; i++) {
        if (i == fl->self_index || !fl->members[i].admin.host)
            continue;
        (*targets)++;
        struct peer_admin *pa = admin_slot(f, &fl->members[i].admin);
        if (fl->fanout_queue == 0) {
            queue_drop(pa, CT_FLEET_FANOUT_DROP_FULL); /* a reload to 0: none is kept */
            sent += send_direct(pa, kind, query, expr);
        } else {
            enqueue(pa, kind, query, expr, fl->fanout_queue);
            sent++;
        }
    }
    f->n.sent += sent;
    return sent;
}

struct ct_fleet_fanout *ct_fleet_fanout_new(struct event_base *base, const struct ct_conf *cf,
                                            const struct ct_conf *(*cf_now)(void *arg),
                                            void *arg)
{
    const struct ct_conf_fleet *fl = &cf->fleet;
    struct ct_fleet_fanout *f = ct_xcalloc(1, sizeof(*f));
    f->magic = CT_FLEET_FANOUT_MAGIC;
    f->base = base;
    f->cf_now = cf_now;
    f->arg = arg;
    f->hop_header = ct_xstrdup(fl->hop_header);
    struct ct_str hv = ct_fleet_hop_value(fl);
    f->hop_value = ct_xstrndup(hv.p, hv.len);
    const char *tok = ct_conf_admin_token(&cf->admin);
    if (tok) {
        size_t n = strlen(tok) + 8;
        f->auth = ct_xmalloc(n);
        snprintf(f->auth, n, "Bearer %s", tok);
    }
    return f;
}

void ct_fleet_fanout_counts(const struct ct_fleet_fanout *f, struct ct_fleet_fanout_counts *out)
{
    CT_CHECK_OBJ(f, CT_FLEET_FANOUT_MAGIC);
    *out = f->n;
}

void ct_fleet_fanout_free(struct ct_fleet_fanout **fp)
{
    struct ct_fleet_fanout *f = *fp;
    if (!f)
        return;
    CT_CHECK_OBJ(f, CT_FLEET_FANOUT_MAGIC);
    for (size_t i = 0; i < f->nadmins; i++) {
        struct peer_admin *pa = f->admins[i];
        if (pa->conn)
            evhttp_connection_free(pa->conn); /* the request out: freed, no callback */
        struct entry *e, *t;
        CT_LIST_FOREACH_SAFE(e, &pa->queue, link, t)
            free(e);
        event_free(pa->retry);
        free(pa->host);
        free(pa->hostport);
        pa->magic = 0;
        free(pa);
    }
    free(f->admins);
    free(f->hop_header);
    free(f->hop_value);
    free(f->auth);
    f->magic = 0;
    free(f);
    *fp = NULL;
}
