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
 * TLS (issue 39): a backend with a client context (be->addr->tls) gets
 * bufferevent_openssl connections, the handshake done while CONNECTING
 * (tls.handshake_timeout on its reads, connect_timeout on its connect).
 * Pooled connections stay TLS; the pool and the saved sessions are keyed
 * by the client context's generation (every setting) and the SNI name, so
 * a connection or session made under other settings or for another name is
 * never handed out (OpenSSL does not verify again on resumption). Sessions
 * are saved per worker and backend (struct ct_backend_sess: a stock of
 * single-use TLS 1.3 tickets, or a TLS 1.2 session), and dropped when a
 * handshake offering one fails or does not resume.
 *
 * Timeouts (per backend, from conf): connect; then sending the request
 * (header timeout as a write timeout); then the response head (read timeout
 * from the end of the request); then idle between body reads.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <errno.h>
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
#include "tls/tls.h"

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
    /* TLS: the client context generation and name it was made for (the
     * pool's key), where its new sessions go, what the handshake gave */
    uint64_t tls_gen;
    char *sni;
    struct ct_tls_sess_sink sink;
    bool tls_resuming; /* offered a saved session */
    bool tls_resumed;
    const char *tls_version;
};

/* Saved TLS sessions of one backend in one worker, by name (a `$host`
 * backend has several) and client context generation. A stock, not one:
 * TLS 1.3 tickets are used once (OpenSSL origins, nginx's among them,
 * refuse a ticket offered again, and RFC 8446 §C.4 says clients should not),
 * and each connection brings one or two new ones, so a burst of new
 * connections resumes as far as the stock goes; a TLS 1.2 session is
 * offered again and again. Oldest replaced first when full. */
#define SESS_MAX 128
struct ct_backend_sess {
    uint64_t gen, stamp;
    SSL_SESSION *s;
    char name[256];
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

/* ---- saved TLS sessions --------------------------------------------------------- */

/* Made under TLS settings (or for a TLS-ness) its backend no longer has? */
static bool tls_stale(const struct ct_upstream *u)
{
    const struct ct_tls_client *tc = u->be->addr->tls;
    return (u->sni != NULL) != (tc != NULL) || (tc && u->tls_gen != ct_tls_client_gen(tc));
}

/* The newest session saved for (GEN, NAME), or NULL. */
static struct ct_backend_sess *sess_find(struct ct_backend_rt *be, uint64_t gen, const char *name)
{
    struct ct_backend_sess *best = NULL;
    for (size_t i = 0; be->sess && i < SESS_MAX; i++) {
        struct ct_backend_sess *e = &be->sess[i];
        if (e->s && e->gen == gen && strcmp(e->name, name) == 0 &&
            (best == NULL || e->stamp > best->stamp))
            best = e;
    }
    return best;
}

static size_t sess_count(const struct ct_backend_rt *be, uint64_t gen, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; be->sess && i < SESS_MAX; i++)
        n += be->sess[i].s && be->sess[i].gen == gen && strcmp(be->sess[i].name, name) == 0;
    return n;
}

/* A session to offer for (GEN, NAME), the caller's reference (NULL: none).
 * A TLS 1.2 session stays in the stock. A TLS 1.3 ticket leaves it while
 * others are left (RFC 8446 §C.4: a client SHOULD NOT reuse one), but the
 * last one stays and is offered to every new connection until a newer one
 * arrives, as nginx (proxy_ssl_session_reuse) and HAProxy do with the one
 * they keep: else a burst of new connections, all opened before the first
 * ones' tickets arrive, does full handshakes. An origin that takes a ticket
 * only once answers with a full handshake, which drops it. What stays is
 * offered as a copy, and a saved session OpenSSL will not resume is dropped
 * here: OpenSSL marks the session a connection holds not resumable when
 * that connection fails, and with one object shared 78 of a 100-connection
 * burst did full handshakes (13 under ASan in upstream_tls). */
static SSL_SESSION *sess_take(struct ct_backend_rt *be, uint64_t gen, const char *name)
{
    struct ct_backend_sess *e;
    while ((e = sess_find(be, gen, name)) != NULL && !ct_tls_session_resumable(e->s))
        ct_tls_session_free(&e->s);
    if (e == NULL)
        return NULL;
    SSL_SESSION *s = e->s;
    if (ct_tls_session_single_use(s) && sess_count(be, gen, name) > 1)
        e->s = NULL;
    else
        s = ct_tls_session_copy(s); /* one failing connection must not spoil the stock's */
    return s;
}

/* The origin refused what was offered for (GEN, NAME): drop the rest
 * too (HAProxy frees its reused_sess on failure); the next full handshake
 * brings new ones. */
static void sess_drop(struct ct_backend_rt *be, uint64_t gen, const char *name)
{
    for (size_t i = 0; be->sess && i < SESS_MAX; i++)
        if (be->sess[i].s && be->sess[i].gen == gen && strcmp(be->sess[i].name, name) == 0)
            ct_tls_session_free(&be->sess[i].s);
}

static void sess_free_all(struct ct_backend_rt *be)
{
    for (size_t i = 0; be->sess && i < SESS_MAX; i++)
        ct_tls_session_free(&be->sess[i].s);
    CT_FREE(&be->sess);
}

/* A connection of U's got a resumable session (a TLS 1.2 handshake's, or
 * a TLS 1.3 ticket): into the stock, in a free slot or one of another
 * generation, else over the oldest. A TLS 1.2 session replaces the name's
 * previous one (it is offered again and again). */
static void on_session(void *arg, SSL_SESSION *s)
{
    struct ct_upstream *u = arg;
    CT_CHECK_OBJ(u, CT_UPSTREAM_MAGIC);
    struct ct_backend_rt *be = u->be;
    if (be->sess == NULL)
        be->sess = ct_xcalloc(SESS_MAX, sizeof(*be->sess));
    uint64_t stamp = 0;
    for (size_t i = 0; i < SESS_MAX; i++)
        stamp = CT_MAX(stamp, be->sess[i].stamp);
    struct ct_backend_sess *e = ct_tls_session_single_use(s) ? NULL
                                                              : sess_find(be, u->tls_gen, u->sni);
    for (size_t i = 0; e == NULL && i < SESS_MAX; i++)
        if (be->sess[i].s == NULL || be->sess[i].gen != u->tls_gen)
            e = &be->sess[i];
    if (e == NULL) { /* all in use: the oldest goes */
        e = &be->sess[0];
        for (size_t i = 1; i < SESS_MAX; i++)
            if (be->sess[i].stamp < e->stamp)
                e = &be->sess[i];
    }
    ct_tls_session_free(&e->s);
    e->s = s;
    e->gen = u->tls_gen;
    e->stamp = stamp + 1;
    snprintf(e->name, sizeof(e->name), "%s", u->sni);
}

static void backend_free(struct ct_backend_rt *be)
{
    sess_free_all(be);
    free(be);
}

/* One upstream less points at BE: a retired backend goes with its last. */
static void backend_unref(struct ct_backend_rt *be)
{
    CT_ASSERT(be->nconns > 0);
    if (--be->nconns == 0 && be->retired)
        backend_free(be);
}

static void upstream_close(struct ct_upstream *u)
{
    struct ct_backend_rt *be = u->be;
    list_del(list_of(u), u);
    if (u->state == CT_US_IDLE)
        be->nidle--;
    /* A pooled TLS connection ends cleanly: close_notify (a TLS 1.2 origin
     * then keeps its session resumable). */
    if (u->sni && u->state == CT_US_IDLE)
        ct_tls_close_notify(bufferevent_openssl_get_ssl(u->bev));
    else if (u->sni)
        ct_tls_session_keep(bufferevent_openssl_get_ssl(u->bev));
    set_state(u, CT_US_CLOSED);
    ct_io_detach(&u->io);
    bufferevent_free(u->bev);
    ct_http_parser_free(&u->rp);
    free(u->sni);
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

bool ct_upstream_other_live(const struct ct_upstream *u)
{
    return other_backend_live(u->w, u->be, ct_time_mono());
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

/* A TLS bufferevent for U to NAME, resuming the session saved for it.
 * NULL on failure (with CLOSE_ON_FREE libevent has freed the SSL then). */
static struct bufferevent *tls_bev(struct ct_worker *w, struct ct_upstream *u, const char *name)
{
    struct ct_backend_rt *be = u->be;
    u->tls_gen = ct_tls_client_gen(be->addr->tls);
    u->sni = ct_xstrdup(name);
    u->sink = (struct ct_tls_sess_sink){on_session, u};
    SSL_SESSION *saved = sess_take(be, u->tls_gen, name);
    u->tls_resuming = saved != NULL;
    SSL *ssl = ct_tls_client_ssl(be->addr->tls, name, saved, &u->sink);
    ct_tls_session_free(&saved); /* the SSL holds its own reference */
    if (ssl == NULL) {
        char why[256];
        ct_tls_drain_errors(why, sizeof(why));
        CT_ERR("w%u backend %s: cannot make a TLS connection: %s", w->id, be->bc->name, why);
        return NULL;
    }
    return bufferevent_openssl_socket_new(w->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                          BEV_OPT_CLOSE_ON_FREE);
}

static struct ct_upstream *upstream_new(struct ct_worker *w, struct ct_backend_rt *be,
                                        const char *name)
{
    struct ct_upstream *u = ct_xcalloc(1, sizeof(*u));
    u->magic = CT_UPSTREAM_MAGIC;
    u->be = be;
    struct bufferevent *bev = be->addr->tls ? tls_bev(w, u, name)
                                            : bufferevent_socket_new(w->base, -1,
                                                                     BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        free(u->sni);
        free(u);
        return NULL;
    }
    u->state = CT_US_CONNECTING;
    u->w = w;
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
    /* TLS: the handshake's reads wait at most handshake_timeout (an origin
     * that accepts and stalls, or never answers the ClientHello). */
    ct_io_bev_timeouts(bev, u->sni ? be->bc->tls.handshake_timeout_ms : 0,
                       be->bc->connect_timeout_ms);
    if (bufferevent_socket_connect(bev, (struct sockaddr *)&be->addr->sa,
                                   (int)be->addr->salen) != 0) {
        upstream_close(u);
        return NULL;
    }
    int one = 1;
    setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ct_io_attach(&u->io, w->base, bev, u->sni == NULL, on_read, on_event, u);
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
    /* TLS: the name the connection is for, the pool's key with the settings */
    char name[256] = "";
    if (be->addr->tls) {
        struct ct_str h = pick ? pick->host : CT_STR_NULL;
        if (be->addr->tls_host && h.len > 0 && h.len < sizeof(name))
            memcpy(name, h.p, h.len);
        else
            snprintf(name, sizeof(name), "%s", be->addr->tls_name[0] ? be->addr->tls_name
                                                                      : be->bc->host);
        for (char *p = name; *p; p++)
            *p = ct_ascii_lower(*p);
    }
    struct ct_upstream *u = fresh ? NULL : be->idle;
    while (u && (tls_stale(u) || (u->sni && strcmp(u->sni, name) != 0)))
        u = u->next;
    if (u) {
        list_del(&be->idle, u);
        be->nidle--;
        set_state(u, CT_US_ACTIVE);
        list_push(&w->busy, u);
        u->reused = true;
        ct_io_timeouts(&u->io, 0, be->bc->header_timeout_ms);
    } else {
        u = upstream_new(w, be, name);
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
        tls_stale(u) ||
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
const char *ct_upstream_tls_version(const struct ct_upstream *u) { return u->tls_version; }
bool ct_upstream_tls_resumed(const struct ct_upstream *u) { return u->tls_resumed; }
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

/* The TLS handshake is done: count it, note what it gave. */
static void tls_connected(struct ct_upstream *u)
{
    SSL *ssl = bufferevent_openssl_get_ssl(u->bev);
    u->tls_resumed = ct_tls_session_reused(ssl);
    u->tls_version = ct_tls_version_name(ssl);
    ct_upstream_count(u, u->tls_resumed ? CT_STATS_BE_upstream_tls_handshakes_resumed
                                        : CT_STATS_BE_upstream_tls_handshakes_full);
    if (u->tls_resuming && !u->tls_resumed)
        sess_drop(u->be, u->tls_gen, u->sni); /* the origin refused it: not offered again */
}

/* The TLS connection failed before its handshake was done. Returns the
 * close reason: ORIGIN_CONNECT when TCP never connected (refused,
 * unreachable), ORIGIN_TIMEOUT, else ORIGIN_TLS; says why in words. */
static enum ct_close tls_failed(struct ct_upstream *u, short what, int err)
{
    struct ct_backend_rt *be = u->be;
    SSL *ssl = bufferevent_openssl_get_ssl(u->bev);
    unsigned long e = 0, more;
    while ((more = bufferevent_get_openssl_error(u->bev)) != 0)
        e = e ? e : ct_tls_error_real(more);
    char rest[256];
    ct_tls_drain_errors(rest, sizeof(rest)); /* none left for the next connection */
    if (u->tls_resuming)
        sess_drop(be, u->tls_gen, u->sni); /* HAProxy frees reused_sess on failure too */
    if (what & BEV_EVENT_TIMEOUT) {
        ct_upstream_count(u, CT_STATS_BE_upstream_tls_fail_timeout);
        CT_ERR("w%u u%llu backend %s: no TLS connection (name %s) within %llu ms (connect "
               "or handshake timeout)", u->w->id, (unsigned long long)u->id, be->bc->name,
               u->sni, (unsigned long long)be->bc->tls.handshake_timeout_ms);
        return CT_CLOSE_ORIGIN_TIMEOUT;
    }
    if (e == 0 && ct_tls_verify_ok(ssl) &&
        (err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH))
        return CT_CLOSE_ORIGIN_CONNECT; /* TCP's failure, logged as any connect */
    char why[320];
    enum ct_tls_fail kind = ct_tls_client_failure(ssl, e, why, sizeof(why));
    static const enum ct_stats_be counters[] = {
#define CT_UP_TLS_FAIL(id, label) [CT_TLS_FAIL_##id] = CT_STATS_BE_upstream_tls_fail_##label,
        CT_TLS_FAIL_TABLE(CT_UP_TLS_FAIL)
#undef CT_UP_TLS_FAIL
    };
    ct_upstream_count(u, counters[kind]);
    CT_ERR("w%u u%llu backend %s: TLS handshake failed (name %s): %s%s%s", u->w->id,
           (unsigned long long)u->id, be->bc->name, u->sni, why,
           e == 0 && err != 0 && !(what & BEV_EVENT_EOF) ? ": " : "",
           e == 0 && err != 0 && !(what & BEV_EVENT_EOF) ? strerror(err) : "");
    return CT_CLOSE_ORIGIN_TLS;
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct ct_upstream *u = arg;
    int err = errno; /* a TLS connect's failure: refused, or the handshake's */
    CT_CHECK_OBJ(u, CT_UPSTREAM_MAGIC);
    if (what & BEV_EVENT_CONNECTED) {
        if (u->sni)
            tls_connected(u);
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
        if (u->sni)
            why = tls_failed(u, what, err);
        /* a failed TLS handshake is a failed connect for passive health */
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
        backend_free(w->be[i]);
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
        if (be != NULL && (be->addr->tls != NULL || addrs[i].tls != NULL)) {
            /* TLS settings (CA, certificate, name...) may have changed:
             * new connections use the new ones; idle ones made under the
             * old ones are closed and their sessions dropped */
            close_idle(be);
            sess_free_all(be);
        }
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
            backend_free(be);
        else
            CT_INFO("w%u backend %s retired; %u connections finish first", w->id,
                    be->addr->name, be->nconns);
    }
    free(old);
}
