/*
 * proxy/upstream/upstream.c: connections to backends (drawn in docs/upstream_fsm.dot).
 *
 *   CONNECTING -> ACTIVE -> IDLE (pool) -> ACTIVE -> ... ; ACTIVE -> TUNNEL
 *   any -> CLOSED
 *
 * Each worker has, per backend, a keep-alive pool (struct ct_backend_rt:
 * idle list, max idle, idle timeout) and passive health (consecutive
 * failures of the kinds passive_fail_on lists; max_fails of them skip the
 * backend for fail_timeout, unless it is the last one in rotation). Nothing
 * here is shared between threads.
 *
 * A struct ct_upstream owns its bufferevent and its response parser (reused
 * for every response on the connection). While ACTIVE or TUNNEL it is lent to
 * one owner (a request), which gets every event through the callbacks it
 * lent it with (struct ct_upstream_owner; the pool knows nothing of clients)
 * and gives it back with ct_upstream_release(). An IDLE connection
 * keeps reading so that an origin closing it (or a stray byte) is seen at
 * once and the connection dropped from the pool, never handed out dead; the
 * race that remains (origin closes as we send) is covered by fetch.c's retry.
 *
 * Timeouts (per backend, from conf): connect; then sending the request
 * (header timeout as a write timeout); then the response head (read timeout
 * from the end of the request); then idle between body reads.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "proxy/balance/balance.h"
#include "proxy/ctx.h"
#include "proxy/net/net.h"
#include "proxy/upstream/upstream.h"

#define CT_UPSTREAM_STATES(X)                                                  \
    X(CONNECTING, "connecting")                                               \
    X(ACTIVE, "active")                                                       \
    X(IDLE, "idle")                                                           \
    X(TUNNEL, "tunnel")                                                       \
    X(CLOSED, "closed")

enum ct_upstream_state {
#define CT_US_ENUM(id, name) CT_US_##id,
    CT_UPSTREAM_STATES(CT_US_ENUM)
#undef CT_US_ENUM
};

static const char *const state_names[] = {
#define CT_US_NAME(id, name) name,
    CT_UPSTREAM_STATES(CT_US_NAME)
#undef CT_US_NAME
};

struct ct_upstream {
    unsigned magic;
#define CT_UPSTREAM_MAGIC 0x0a57e3a1u
    enum ct_upstream_state state;
    struct ct_worker *w;
    struct ct_backend_rt *be;
    struct bufferevent *bev;
    struct ct_io io;       /* its read side (io.c) */
    struct ct_http_parser *rp;
    const struct ct_upstream_owner *oc; /* the borrower while ACTIVE/TUNNEL */
    void *owner;
    struct ct_upstream *next, *prev; /* be->idle or w->busy */
    uint64_t id;
    unsigned nreq;
    bool reused;
    bool head_seen;
};

static void on_read(struct bufferevent *bev, void *arg);
static void on_write(struct bufferevent *bev, void *arg);
static void on_event(struct bufferevent *bev, short what, void *arg);

static bool transition_ok(enum ct_upstream_state from, enum ct_upstream_state to)
{
    switch (to) {
    case CT_US_ACTIVE: return from == CT_US_CONNECTING || from == CT_US_IDLE;
    case CT_US_IDLE: return from == CT_US_ACTIVE;
    case CT_US_TUNNEL: return from == CT_US_ACTIVE;
    case CT_US_CLOSED: return from != CT_US_CLOSED;
    case CT_US_CONNECTING: return false;
    }
    return false;
}

static void set_state(struct ct_upstream *u, enum ct_upstream_state to)
{
    if (!transition_ok(u->state, to))
        ct_panic(__FILE__, __LINE__, "u%llu: illegal transition %s -> %s",
                 (unsigned long long)u->id, state_names[u->state], state_names[to]);
    CT_DEBUG("w%u u%llu %s: %s -> %s", u->w->id, (unsigned long long)u->id, u->be->addr->name,
             state_names[u->state], state_names[to]);
    u->state = to;
}

/* ---- lists -------------------------------------------------------------------- */

static void list_push(struct ct_upstream **head, struct ct_upstream *u)
{
    u->prev = NULL;
    u->next = *head;
    if (*head)
        (*head)->prev = u;
    *head = u;
}

static void list_del(struct ct_upstream **head, struct ct_upstream *u)
{
    if (u->prev)
        u->prev->next = u->next;
    else
        *head = u->next;
    if (u->next)
        u->next->prev = u->prev;
    u->next = u->prev = NULL;
}

static struct ct_upstream **list_of(struct ct_upstream *u)
{
    return u->state == CT_US_IDLE ? &u->be->idle : &u->w->busy;
}

/* One upstream less points at BE: a retired backend goes with its last. */
static void backend_unref(struct ct_backend_rt *be)
{
    CT_ASSERT(be->nconns > 0);
    if (--be->nconns == 0 && be->retired)
        free(be);
}

static void upstream_close(struct ct_upstream *u)
{
    struct ct_backend_rt *be = u->be;
    list_del(list_of(u), u);
    if (u->state == CT_US_IDLE)
        be->nidle--;
    set_state(u, CT_US_CLOSED);
    ct_io_detach(&u->io);
    bufferevent_free(u->bev);
    ct_http_parser_free(&u->rp);
    u->magic = 0;
    free(u);
    backend_unref(be);
}

/* ---- backends ----------------------------------------------------------------- */

/* W's backend K's group (w->be is parallel to w->cf's flat list). */
static size_t group_of(const struct ct_worker *w, size_t k)
{
    return k < w->cf->nflat ? w->cf->flat_group[k] : 0;
}

/* Is BE in rotation at NOW (active checks and passive health)? Passive
 * health's time up puts it back, and a backend coming back up starts its
 * slow start (balance.h) from now. */
static bool in_rotation(struct ct_backend_rt *be, ct_time_t now)
{
    if (atomic_load_explicit(&be->addr->drain, memory_order_relaxed))
        return false; /* drained by the operator: not down, so no slow start after */
    bool down = atomic_load_explicit(&be->addr->down, memory_order_relaxed);
    if (!down && be->down_until != 0) {
        if (now < be->down_until)
            down = true;
        else
            be->down_until = 0; /* its time is up: try it again */
    }
    if (down)
        be->was_down = true;
    else if (be->was_down) {
        be->was_down = false;
        be->up_since = now;
    }
    return !down;
}

unsigned ct_upstream_group_busy(const struct ct_worker *w, size_t group)
{
    unsigned busy = 0;
    for (size_t k = 0; k < w->nbe; k++)
        if (group_of(w, k) == group)
            busy += w->be[k]->nconns - w->be[k]->nidle;
    return busy;
}

/* A backend of GROUP by the group's balancing (proxy/balance/balance.h:
 * smooth weighted round robin, least connections, bounded-load hashing of
 * KEY; slow start), among those in rotation. */
static struct ct_backend_rt *pick_backend(struct ct_worker *w, size_t group, uint64_t key)
{
    const struct ct_conf *cf = w->cf;
    if (group >= ct_conf_ngroups(cf))
        group = 0; /* a request routed under the previous configuration */
    const struct ct_conf_group *g = ct_conf_group_at(cf, group);
    struct ct_balance_member m[CT_BALANCE_MAX];
    struct ct_backend_rt *bes[CT_BALANCE_MAX];
    size_t n = 0;
    ct_time_t now = ct_time_mono();
    for (size_t k = 0; k < w->nbe && n < CT_BALANCE_MAX; k++) {
        if (group_of(w, k) != group)
            continue;
        struct ct_backend_rt *be = w->be[k];
        if (be->name_hash == 0)
            be->name_hash = ct_balance_hash(be->addr->name, strlen(be->addr->name)) | 1;
        m[n] = (struct ct_balance_member){
            .weight = be->bc->weight ? be->bc->weight : 1,
            .up = in_rotation(be, now),
            .up_since = be->up_since,
            .inflight = be->nconns - be->nidle,
            .name_hash = be->name_hash,
            .cw = be->cw,
        };
        bes[n++] = be;
    }
    struct ct_balance_opts o = {g->balance, (double)g->slow_start_ms / 1000.0,
                                g->hash_balance_factor};
    int i = ct_balance_pick(&o, m, n, key, now);
    for (size_t k = 0; k < n; k++)
        bes[k]->cw = m[k].cw;
    return i < 0 ? NULL : bes[i];
}

/* Is some backend of BE's group other than BE in rotation now (not skipped
 * by passive or active health, not drained)? */
static bool other_backend_live(struct ct_worker *w, const struct ct_backend_rt *be, ct_time_t now)
{
    size_t group = SIZE_MAX;
    for (size_t k = 0; k < w->nbe && group == SIZE_MAX; k++)
        if (w->be[k] == be)
            group = group_of(w, k);
    for (size_t k = 0; k < w->nbe; k++) {
        const struct ct_backend_rt *o = w->be[k];
        if (o != be && group_of(w, k) == group &&
            !atomic_load_explicit(&o->addr->down, memory_order_relaxed) &&
            !atomic_load_explicit(&o->addr->drain, memory_order_relaxed) &&
            (o->down_until == 0 || now >= o->down_until))
            return true;
    }
    return false;
}

void ct_upstream_mark_failed(struct ct_upstream *u, enum ct_conf_fail kind)
{
    struct ct_backend_rt *be = u->be;
    if (!(be->bc->passive_fail_mask & (1u << kind)))
        return; /* not a failure of the backend as configured (passive_fail_on) */
    be->fails++;
    if (be->bc->max_fails == 0 || be->fails < be->bc->max_fails)
        return;
    ct_time_t now = ct_time_mono();
    be->fails = 0;
    /* nginx: a lone server is never considered unavailable. Nor is the
     * last one in rotation here: skipping it would answer every request
     * 503 for fail_timeout, when trying it can only do as well. */
    if (!other_backend_live(u->w, be, now)) {
        CT_WARN("w%u backend %s: %u consecutive failures; kept, it is the last backend in "
                "rotation", u->w->id, be->addr->name, be->bc->max_fails);
        return;
    }
    be->down_until = now + (double)be->bc->fail_timeout_ms / 1000.0;
    CT_WARN("w%u backend %s: %u consecutive failures, skipped for %llu ms", u->w->id,
            be->addr->name, be->bc->max_fails, (unsigned long long)be->bc->fail_timeout_ms);
}

/* ---- connecting ------------------------------------------------------------- */

static struct ct_upstream *upstream_new(struct ct_worker *w, struct ct_backend_rt *be)
{
    struct bufferevent *bev = bufferevent_socket_new(w->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL)
        return NULL;
    struct ct_upstream *u = ct_xcalloc(1, sizeof(*u));
    u->magic = CT_UPSTREAM_MAGIC;
    u->state = CT_US_CONNECTING;
    u->w = w;
    u->be = be;
    u->bev = bev;
    u->id = ++w->next_conn_id;
    u->rp = ct_http_parser_new(CT_HTTP_RESPONSE, NULL);
    be->nconns++;
    list_push(&w->busy, u);
    /* Reads are ours (io.c), from the moment the connection is up. */
    bufferevent_setcb(bev, NULL, on_write, on_event, u);
    bufferevent_setwatermark(bev, EV_WRITE, CT_BP_LOW, 0);
    bufferevent_set_max_single_write(bev, CT_BP_HIGH); /* not 16 KiB (libevent's default) */
    /* Writes go out directly (ct_io_flush); bufferevent_socket_connect() watches
     * the connect with the write event on its own, under the write timeout,
     * and drops the event once connected. */
    bufferevent_disable(bev, EV_READ | EV_WRITE);
    ct_io_bev_timeouts(bev, 0, be->bc->connect_timeout_ms);
    if (bufferevent_socket_connect(bev, (struct sockaddr *)&be->addr->sa,
                                   (int)be->addr->salen) != 0) {
        upstream_close(u);
        return NULL;
    }
    int one = 1;
    setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ct_io_attach(&u->io, w->base, bev, true, on_read, on_event, u);
    u->io.write_ms = be->bc->connect_timeout_ms;
    return u;
}

int ct_upstream_acquire(struct ct_worker *w, const struct ct_upstream_owner *oc, void *owner,
                        const struct ct_upstream_pick *pick, bool fresh, struct ct_upstream **up,
                        enum ct_close *why)
{
    struct ct_backend_rt *be = pick_backend(w, pick ? pick->group : 0, pick ? pick->key : 0);
    if (be == NULL) {
        *why = CT_CLOSE_NO_BACKEND;
        return CT_EIO;
    }
    struct ct_upstream *u = fresh ? NULL : be->idle;
    if (u) {
        list_del(&be->idle, u);
        be->nidle--;
        set_state(u, CT_US_ACTIVE);
        list_push(&w->busy, u);
        u->reused = true;
        ct_io_timeouts(&u->io, 0, be->bc->header_timeout_ms);
    } else {
        u = upstream_new(w, be);
        if (u == NULL) {
            *why = CT_CLOSE_ORIGIN_CONNECT;
            return CT_EIO;
        }
    }
    u->oc = oc;
    u->owner = owner;
    u->nreq++;
    u->head_seen = false;
    *up = u;
    return CT_OK;
}

void ct_upstream_release(struct ct_upstream **up, bool reusable)
{
    struct ct_upstream *u = *up;
    *up = NULL;
    CT_CHECK_OBJ(u, CT_UPSTREAM_MAGIC);
    struct ct_backend_rt *be = u->be;
    u->oc = NULL;
    u->owner = NULL;
    if (!reusable || u->state != CT_US_ACTIVE || u->w->draining || be->retired ||
        be->nidle >= be->bc->pool_max_idle ||
        evbuffer_get_length(bufferevent_get_input(u->bev)) != 0 ||
        evbuffer_get_length(bufferevent_get_output(u->bev)) != 0) {
        upstream_close(u);
        return;
    }
    list_del(&u->w->busy, u);
    set_state(u, CT_US_IDLE);
    list_push(&be->idle, u);
    be->nidle++;
    /* The write timeout stays what the next request sets (acquire): an idle
     * connection has nothing queued, so it is never armed meanwhile, and two
     * bufferevent_set_timeouts per request are saved. */
    ct_io_timeouts(&u->io, be->bc->pool_idle_timeout_ms, be->bc->header_timeout_ms);
    ct_io_read(&u->io, true);
}

/* ---- phases ------------------------------------------------------------------ */

void ct_upstream_request_sent(struct ct_upstream *u)
{
    if (!u->head_seen)
        ct_io_timeouts(&u->io, u->be->bc->header_timeout_ms, u->be->bc->header_timeout_ms);
}

void ct_upstream_head_received(struct ct_upstream *u, unsigned status)
{
    u->head_seen = true;
    if (status >= 500 && (u->be->bc->passive_fail_mask & (1u << CT_CONF_FAIL_HTTP_5XX)))
        ct_upstream_mark_failed(u, CT_CONF_FAIL_HTTP_5XX);
    else
        u->be->fails = 0;
    ct_io_timeouts(&u->io, u->be->bc->read_timeout_ms, u->be->bc->header_timeout_ms);
}

void ct_upstream_set_owner(struct ct_upstream *u, const struct ct_upstream_owner *oc, void *owner)
{
    /* Lent: connecting (a fetch handed on before its connection was up) or
     * active (a tunnel, a fill going on without its client). */
    CT_ASSERT(u->state == CT_US_CONNECTING || u->state == CT_US_ACTIVE);
    u->oc = oc;
    u->owner = owner;
}

void ct_upstream_tunnel(struct ct_upstream *u)
{
    set_state(u, CT_US_TUNNEL);
    u->be->fails = 0;
    ct_io_timeouts(&u->io, u->be->bc->read_timeout_ms, u->be->bc->read_timeout_ms);
    ct_io_read(&u->io, true);
}

bool ct_upstream_is_connected(const struct ct_upstream *u) { return u->state == CT_US_ACTIVE; }
bool ct_upstream_is_reused(const struct ct_upstream *u) { return u->reused; }
struct bufferevent *ct_upstream_bev(struct ct_upstream *u) { return u->bev; }
struct ct_io *ct_upstream_io(struct ct_upstream *u) { return &u->io; }
struct ct_http_parser *ct_upstream_parser(struct ct_upstream *u) { return u->rp; }
const struct ct_backend_addr *ct_upstream_backend(const struct ct_upstream *u)
{
    return u->be->addr;
}

/* ---- callbacks ------------------------------------------------------------------ */

static void on_read(struct bufferevent *bev, void *arg)
{
    struct ct_upstream *u = arg;
    CT_CHECK_OBJ(u, CT_UPSTREAM_MAGIC);
    switch (u->state) {
    case CT_US_ACTIVE:
    case CT_US_TUNNEL:
        u->oc->readable(u->owner);
        return;
    case CT_US_IDLE:
        /* Nothing may arrive on an idle connection (RFC 9112 §9.3.2 allows
         * us to close it): drop it rather than hand it out desynchronised. */
        upstream_close(u);
        return;
    case CT_US_CONNECTING:
    case CT_US_CLOSED:
        CT_WRONG("upstream read before connect or after close");
    }
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct ct_upstream *u = arg;
    CT_CHECK_OBJ(u, CT_UPSTREAM_MAGIC);
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        bufferevent_disable(bev, EV_WRITE); /* back to direct writes */
    if (u->oc && (u->state == CT_US_ACTIVE || u->state == CT_US_TUNNEL))
        u->oc->drained(u->owner);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct ct_upstream *u = arg;
    CT_CHECK_OBJ(u, CT_UPSTREAM_MAGIC);
    if (what & BEV_EVENT_CONNECTED) {
        set_state(u, CT_US_ACTIVE);
        ct_io_timeouts(&u->io, 0, u->be->bc->header_timeout_ms);
        ct_io_read(&u->io, true);
        u->oc->ready(u->owner);
        return;
    }
    enum ct_close why;
    switch (u->state) {
    case CT_US_IDLE:
        upstream_close(u); /* the origin closed a pooled connection, or it timed out */
        return;
    case CT_US_CONNECTING:
        why = (what & BEV_EVENT_TIMEOUT) ? CT_CLOSE_ORIGIN_TIMEOUT : CT_CLOSE_ORIGIN_CONNECT;
        ct_upstream_mark_failed(u, CT_CONF_FAIL_CONNECT);
        break;
    case CT_US_ACTIVE:
    case CT_US_TUNNEL:
        why = (what & BEV_EVENT_TIMEOUT) ? CT_CLOSE_ORIGIN_TIMEOUT : CT_CLOSE_ORIGIN_RESET;
        if ((what & BEV_EVENT_TIMEOUT) && u->state == CT_US_ACTIVE && !u->head_seen)
            ct_upstream_mark_failed(u, CT_CONF_FAIL_TIMEOUT);
        break;
    default:
        CT_WRONG("upstream event after close");
    }
    /* libevent hands over the bytes read before an EOF through on_read
     * first, and reads nothing while we are paused, so no response byte is
     * left unprocessed here. */
    u->oc->closed(u->owner, why);
}

static void close_idle(struct ct_backend_rt *be)
{
    while (be->idle)
        upstream_close(be->idle);
}

void ct_upstream_pool_close_idle(struct ct_worker *w)
{
    for (size_t i = 0; i < w->nbe; i++)
        close_idle(w->be[i]);
}

void ct_upstream_pool_free(struct ct_worker *w)
{
    ct_upstream_pool_close_idle(w);
    while (w->busy)
        upstream_close(w->busy); /* frees the retired backends */
    for (size_t i = 0; i < w->nbe; i++)
        free(w->be[i]);
    CT_FREE(&w->be);
    w->nbe = 0;
}

void ct_upstream_count(struct ct_upstream *u, enum ct_stats_be what)
{
    if ((unsigned)what < CT_STATS_BE__COUNT)
        atomic_fetch_add_explicit(&u->be->addr->counts[what], 1, memory_order_relaxed);
}

/* The backend of the old set that NEW continues: same name and address. */
static struct ct_backend_rt *take_same(struct ct_backend_rt **old, size_t nold,
                                       const struct ct_backend_addr *addr)
{
    for (size_t i = 0; i < nold; i++) {
        struct ct_backend_rt *be = old[i];
        if (be && be->addr->salen == addr->salen && strcmp(be->addr->name, addr->name) == 0 &&
            memcmp(&be->addr->sa, &addr->sa, addr->salen) == 0) {
            old[i] = NULL;
            return be;
        }
    }
    return NULL;
}

void ct_upstream_backends_set(struct ct_worker *w, struct ct_backend_addr *addrs,
                              const struct ct_conf_backend *bcs, size_t n)
{
    struct ct_backend_rt **old = w->be;
    size_t nold = w->nbe;
    w->be = ct_xcalloc(n ? n : 1, sizeof(*w->be));
    w->nbe = n;
    for (size_t i = 0; i < n; i++) {
        struct ct_backend_rt *be = take_same(old, nold, &addrs[i]);
        if (be == NULL)
            be = ct_xcalloc(1, sizeof(*be));
        be->addr = &addrs[i]; /* same backend, this generation's shared object */
        be->bc = &bcs[i];
        w->be[i] = be;
    }
    /* Removed or moved: no new requests, pooled connections closed now;
     * connections lent to a client finish their response first. */
    for (size_t i = 0; i < nold; i++) {
        struct ct_backend_rt *be = old[i];
        if (be == NULL)
            continue;
        close_idle(be); /* before RETIRED: the last close must not free it here */
        be->retired = true;
        if (be->nconns == 0)
            free(be);
        else
            CT_INFO("w%u backend %s retired; %u connections finish first", w->id,
                    be->addr->name, be->nconns);
    }
    free(old);
}
