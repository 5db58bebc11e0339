/*
 * proxy/h1/client.c: the client connection FSM (drawn in docs/client_fsm.dot).
 *
 *   (proxy/net/accept.c: accept, TLS handshake, ALPN: http/1.1)
 *     -> READ_HEAD -> FETCH -> SEND -> READ_HEAD ...
 *          |          |       |
 *          |          +-------+--> TUNNEL (101)
 *          +--- any failure ----> LINGER -> CLOSED
 *
 * A struct ct_client owns its bufferevent (made with BEV_OPT_CLOSE_ON_FREE)
 * and its request parser (one per connection, reused for every request: no
 * per-request allocation). Only client_close() frees it; everything else
 * that wants it gone goes through ct_client_fail() (idempotent: first reason
 * wins, one log line, one counter) or client_finish() (flush, then close).
 *
 * Pipelining: after a head is read, reading stops; the next request is parsed
 * only once the current response is done, from the bytes still in the input
 * buffer. Responses therefore go out strictly in order.
 *
 * Timeouts: one timer per connection holds the phase deadline: keep-alive
 * idle (no byte of the next request yet), header (from the first byte of a
 * head; absolute, so a slowloris trickle cannot extend it -> 408), linger;
 * re-armed lazily (deadline_set), not on every request; in FETCH and SEND it
 * is the request body's deadline (ct_client_body_clock: a trickled body gets
 * 408 however fast each byte comes).
 * Each body read and send also has the bufferevent's own read/write timeout.
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "proxy/core/core.h"
#include "proxy/core/req.h"
#include "proxy/h1/h1.h"
#include "proxy/h1/h1_wire.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/wire.h"
#include "tls/tls.h"

#define LINGER_MS 5000
/* How often a lingering connection whose last bytes are still in the kernel
 * looks again (linger_draining). */
#define LINGER_POLL_MS 100

static void on_read(struct bufferevent *bev, void *arg);
static void on_write(struct bufferevent *bev, void *arg);
static void on_event(struct bufferevent *bev, short what, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);
static void read_head(struct ct_client *c);

/* ---- states ----------------------------------------------------------------- */

static const char *const state_names[] = {
#define CT_CS_NAME(id, name) name,
    CT_CLIENT_STATES(CT_CS_NAME)
#undef CT_CS_NAME
};

const char *ct_client_state_name(enum ct_client_state s)
{
    CT_ASSERT(s < CT_CS__COUNT);
    return state_names[s];
}

/* Legal transitions, as drawn in docs/client_fsm.dot. */
static bool transition_ok(enum ct_client_state from, enum ct_client_state to)
{
    if (to == CT_CS_LINGER || to == CT_CS_CLOSED)
        return from != CT_CS_CLOSED;
    switch (from) {
    case CT_CS_READ_HEAD: return to == CT_CS_FETCH;
    case CT_CS_FETCH: return to == CT_CS_SEND || to == CT_CS_TUNNEL;
    case CT_CS_SEND: return to == CT_CS_READ_HEAD;
    case CT_CS_TUNNEL:
    case CT_CS_LINGER:
    case CT_CS_CLOSED:
    case CT_CS__COUNT: return false;
    }
    return false;
}

void ct_client_set_state(struct ct_client *c, enum ct_client_state to)
{
    if (!transition_ok(c->state, to))
        ct_panic(__FILE__, __LINE__, "c%llu: illegal transition %s -> %s",
                 (unsigned long long)c->id, ct_client_state_name(c->state),
                 ct_client_state_name(to));
    CT_DEBUG("w%u c%llu r%u %s: %s -> %s", c->w->id, (unsigned long long)c->id, c->nreq,
             c->peer, ct_client_state_name(c->state), ct_client_state_name(to));
    c->state = to;
}

/* The connection's one deadline (TLS handshake, keep-alive idle, request
 * head, request body, linger): proxy/net/deadline.h keeps it lazily. */
static void deadline_set(struct ct_client *c, uint64_t ms) { ct_deadline_set(&c->dl, ms); }
static void deadline_clear(struct ct_client *c) { ct_deadline_clear(&c->dl); }

static bool linger_draining(struct ct_client *c);

/* FETCH .. SEND have one deadline only, the request body's (Apache
 * mod_reqtimeout's body=T,MinRate=R): T from the end of the head, one more
 * second per R bytes received. Moving it later costs no timer call (see
 * deadline_set), so it is set again after every piece of body. */
void ct_client_body_clock(struct ct_client *c, enum ct_body_clock op)
{
    const struct ct_conf_limits *lim = &c->w->cf->limits;
    uint64_t now = ct_now_ms();
    if (op == CT_BODY_CLOCK_START) {
        c->r.body_t0_ms = now;
        c->r.body_paused_ms = 0;
    }
    if (op == CT_BODY_CLOCK_STOP || c->r.body_paused_ms) {
        deadline_clear(c);
        return;
    }
    uint64_t allowed = lim->client_body_timeout_ms;
    if (lim->client_body_min_rate)
        allowed += c->r.body_bytes * 1000 / lim->client_body_min_rate;
    uint64_t end = c->r.body_t0_ms + allowed;
    deadline_set(c, end > now ? end - now : 0);
}

void ct_client_body_pause(struct ct_client *c, bool paused)
{
    if (paused == (c->r.body_paused_ms != 0))
        return;
    if (paused) {
        c->r.body_paused_ms = ct_now_ms();
        deadline_clear(c);
        return;
    }
    c->r.body_t0_ms += ct_now_ms() - c->r.body_paused_ms; /* cachet's wait, not the client's */
    c->r.body_paused_ms = 0;
    ct_client_body_clock(c, CT_BODY_CLOCK_MOVE);
}

/* A new exchange on C: what it reads of the connection, and the cache's
 * part (its buffers) kept from the last one. */
static void req_reset(struct ct_client *c)
{
    c->r = (struct ct_req){.magic = CT_REQ_MAGIC, .proto = &ct_h1_proto, .w = c->w, .lc = c->lc,
                           .peer = c->peer, .peer_ip_len = c->peer_ip_len, .conn_id = c->id,
                           .tls = c->tls, .cr = c->r.cr, .site_memo = &c->site_memo};
    c->body_seen = 0;
}

/* ---- accept / close ---------------------------------------------------------- */

/* Connections are counted by protocol (/metrics cachet_connections{proto}):
 * opened by proxy/net/accept.c, closed here. */
static enum ct_stats_proto proto_of(const struct ct_client *c)
{
    return c->lc->kind == CT_LISTEN_HTTPS ? CT_STATS_PROTO_https : CT_STATS_PROTO_http;
}

static void conn_counted_close(struct ct_client *c)
{
    if (c->r.msg && !c->r.logged)
        ct_req_log_end(&c->r, c->r.head_sent ? c->r.status : 0);
    if (c->w->stats) {
        ct_stats_conn_close(c->w->stats, (unsigned)c->why);
        ct_stats_conn_proto(c->w->stats, proto_of(c), false);
        ct_stats_conn_spoke(c->w->stats, proto_of(c));
    }
}



void ct_client_take(struct ct_worker *w, const struct ct_conn_info *ci)
{
    struct bufferevent *bev = ci->bev;
    const struct ct_listener_conf *lc = ci->lc;
    struct ct_client *c = ct_xcalloc(1, sizeof(*c));
    c->magic = CT_CLIENT_MAGIC;
    c->w = w;
    c->lc = lc;
    c->bev = bev;
    c->tls = ci->tls;
    c->id = ci->id;
    memcpy(c->peer, ci->peer, sizeof(c->peer));
    c->peer_ip_len = ci->peer_ip_len;
    c->rp = ct_http_parser_new(CT_HTTP_REQUEST, &w->limits);
    ct_http_parser_set_gateway(c->rp, true);
    ct_deadline_init(&c->dl, w->base, on_timer, c);
    req_reset(c);
    c->next = w->clients;
    if (w->clients)
        w->clients->prev = c;
    w->clients = c;

    bool plain = c->tls == NULL;
    bufferevent_setcb(bev, plain ? NULL : on_read, on_write, on_event, c);
    bufferevent_setwatermark(bev, EV_WRITE, CT_BP_LOW, 0);
    ct_io_attach(&c->io, w->base, bev, plain, on_read, on_event, c);
    ct_io_timeouts(&c->io, 0, w->cf->limits.send_timeout_ms);
    c->state = CT_CS_READ_HEAD;
    deadline_set(c, w->cf->limits.client_header_timeout_ms);
    /* We write directly (ct_io_flush; TLS: tls_flush), libevent only takes over
     * what the socket did not take. Plain TCP: reads are ours too (io.c). */
    bufferevent_disable(bev, plain ? EV_READ | EV_WRITE : EV_WRITE);
    ct_io_read(&c->io, true);
    if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
        read_head(c); /* a request that came with the handshake's last flight */
}

static void client_unlink(struct ct_client *c)
{
    struct ct_worker *w = c->w;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = c->prev = NULL;
    w->nclients--;
}

static void client_free(struct ct_client *c)
{
    ct_req_free(&c->r);
    ct_io_detach(&c->io);
    bufferevent_free(c->bev);
    ct_deadline_fini(&c->dl);
    ct_http_parser_free(&c->rp);
    client_unlink(c);
    c->magic = 0;
    free(c);
}

/* Free C. The caller must not touch C afterwards. */
static void client_close(struct ct_client *c, enum ct_close why)
{
    struct ct_worker *w = c->w;
    uint64_t id = c->id; /* for w->conn_gone, after the free */
    if (!c->failed)
        c->why = why;
    conn_counted_close(c);
    CT_DEBUG("w%u c%llu %s: closed (%s)", w->id, (unsigned long long)c->id, c->peer,
             ct_close_name(c->why));
    /* TLS: a clean end says so (close_notify; it also keeps a TLS 1.2
     * session resumable). Not after a truncation: the client must see one. */
    if (c->lc->kind == CT_LISTEN_HTTPS && (c->state == CT_CS_LINGER || !ct_close_is_err(c->why)) &&
        evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        ct_tls_close_notify(bufferevent_openssl_get_ssl(c->bev));
    c->state = CT_CS_CLOSED;
    client_free(c);
    w->conn_gone(w, id); /* it no longer holds its configuration or listener */
}

void ct_client_abort(struct ct_client *c)
{
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    client_free(c);
}

/* Flush what is queued, then close: stop parsing, keep draining input so the
 * kernel does not reset the connection under our last response (nginx's
 * lingering close), half-close once the output is empty, close at EOF or after
 * LINGER_MS. */
void ct_client_finish(struct ct_client *c, enum ct_close why)
{
    if (!c->failed)
        c->why = why;
    if (c->r.u)
        ct_upstream_release(&c->r.u, false);
    ct_client_set_state(c, CT_CS_LINGER);
    bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
    ct_io_timeouts(&c->io, 0, 0);
    deadline_set(c, LINGER_MS);
    ct_io_flush_linger(&c->io);
    ct_io_read(&c->io, true);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        on_write(c->bev, c);
}

static const char *action(const struct ct_client *c)
{
    switch (c->state) {
    case CT_CS_READ_HEAD: return "reading the request head";
    case CT_CS_FETCH: return "forwarding the request";
    case CT_CS_SEND: return "sending the response";
    case CT_CS_TUNNEL: return "tunnelling";
    default: return "closing";
    }
}

/* Answer the status of WHY if nothing was sent yet, and close. */
static void client_fail(struct ct_client *c, enum ct_close why)
{
    c->failed = true;
    c->why = why;
    unsigned status = ct_close_status(why);
    const char *detail = "";
    if (why == CT_CLOSE_RX_BAD) {
        status = ct_http_parser_error_status(c->rp);
        detail = ct_http_parser_error_reason(c->rp);
    }
    if (ct_close_is_client(why)) {
        ct_log_client("w%u c%llu r%u %s %s: %s%s%s (status=%u close=%s)", c->w->id,
                      (unsigned long long)c->id, c->nreq, c->peer, action(c), ct_close_text(why),
                      *detail ? ": " : "", detail, c->r.head_sent ? 0 : status,
                      ct_close_name(why));
    } else if (ct_close_is_err(why)) {
        const char *be = c->r.u ? ct_upstream_backend(c->r.u)->name : "";
        CT_ERR("w%u c%llu r%u %s %s%s%s: %s%s%s (status=%u close=%s)", c->w->id,
               (unsigned long long)c->id, c->nreq, c->peer, action(c), *be ? " via " : "", be,
               ct_close_text(why), *detail ? ": " : "", detail,
               c->r.head_sent ? 0 : status, ct_close_name(why));
    }
    if (status == 0 || c->r.head_sent || c->state == CT_CS_TUNNEL) {
        /* Nothing to say, or too late to say it: a truncated message must
         * look truncated, so close without a clean end. */
        client_close(c, why);
        return;
    }
    bool head_only = c->r.msg && c->r.msg->method == CT_METHOD_HEAD;
    ct_req_log_end(&c->r, status);
    ct_h1_error(bufferevent_get_output(c->bev), status, head_only, true,
                ct_close_cache_status(why));
    ct_client_finish(c, why);
}

static bool may_fail(const struct ct_client *c)
{
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    return !c->failed && c->state != CT_CS_LINGER && c->state != CT_CS_CLOSED;
}

void ct_client_fail(struct ct_client *c, enum ct_close why)
{
    if (!may_fail(c))
        return;
    if (c->r.msg && ct_req_failing(&c->r, why))
        return; /* answered from the cache (stale-if-error) */
    client_fail(c, why);
}

/* proto->fail: the request core has had the cache's say already. */
void ct_client_req_fail(struct ct_client *c, enum ct_close why)
{
    if (may_fail(c))
        client_fail(c, why);
}

/* ---- the next request ---------------------------------------------------------- */

static void enter_read_head(struct ct_client *c)
{
    struct ct_worker *w = c->w;
    CT_ASSERT(c->r.u == NULL);
    req_reset(c);
    c->sent_continue = c->resp_chunked = c->resp_close = c->obj_chunked = false;
    c->head_started = evbuffer_get_length(bufferevent_get_input(c->bev)) > 0;
    ct_io_timeouts(&c->io, 0, w->cf->limits.send_timeout_ms);
    deadline_set(c, c->head_started ? w->cf->limits.client_header_timeout_ms
                                    : w->cf->limits.keepalive_timeout_ms);
    ct_io_read(&c->io, true);
}

void ct_client_response_done(struct ct_client *c)
{
    ct_req_log_end(&c->r, c->r.status);
    if (c->resp_close || c->w->draining) {
        ct_client_finish(c, c->w->draining ? CT_CLOSE_DRAIN : CT_CLOSE_RESP_DONE);
        return;
    }
    ct_client_set_state(c, CT_CS_READ_HEAD);
    enter_read_head(c);
    /* Pipelined bytes are already in the input buffer: no read event will
     * come for them, so parse them now. A response that completes inside
     * that call (a hit from the store) comes back here: past a few levels, continue
     * on the next loop turn instead, so a burst of pipelined requests cannot
     * nest calls without bound. */
    if (!c->head_started)
        return;
    struct ct_worker *w = c->w;
    if (w->read_depth >= 8) {
        c->resume = true;
        deadline_set(c, 0);
        return;
    }
    w->read_depth++;
    read_head(c); /* may free c */
    w->read_depth--;
}

void ct_client_drain(struct ct_client *c)
{
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    if (c->state == CT_CS_READ_HEAD && !c->head_started)
        client_close(c, CT_CLOSE_DRAIN);
}

static void read_head(struct ct_client *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    if (evbuffer_get_length(in) > 0 && !c->head_started) {
        /* First byte of a head: the header clock starts now and is not
         * extended by later bytes (slowloris gets 408, not infinity). */
        c->head_started = true;
        deadline_set(c, c->w->cf->limits.client_header_timeout_ms);
    }
    while (evbuffer_get_length(in) > 0) {
        size_t n;
        enum ct_http_ev ev = ct_fwd_pump(c->rp, in, NULL, false, &n);
        switch (ev) {
        case CT_HTTP_EV_MORE:
            continue;
        case CT_HTTP_EV_HEAD:
            deadline_clear(c);
            c->r.msg = ct_http_parser_msg(c->rp);
            c->nreq++;
            ct_req_log_start(&c->r);
            /* Reading stays on (saves two epoll_ctl per request) but nothing
             * more is parsed until this response is done: pipelined
             * requests wait in the input buffer, bounded by CT_READ_HIGH. */
            ct_client_set_state(c, CT_CS_FETCH);
            if (ct_http_msg_body_expected(c->r.msg))
                ct_client_body_clock(c, CT_BODY_CLOCK_START);
            ct_req_start(&c->r);
            return;
        case CT_HTTP_EV_ERROR:
            ct_client_fail(c, CT_CLOSE_RX_BAD);
            return;
        case CT_HTTP_EV_BODY:
        case CT_HTTP_EV_END:
            CT_WRONG("request body before its head");
        }
    }
}

/* ---- callbacks ---------------------------------------------------------------- */

static void on_read(struct bufferevent *bev, void *arg)
{
    struct ct_client *c = arg;
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    switch (c->state) {
    case CT_CS_READ_HEAD:
        read_head(c);
        break;
    case CT_CS_FETCH:
    case CT_CS_SEND:
        ct_req_body_readable(&c->r);
        break;
    case CT_CS_TUNNEL:
        ct_h1_tunnel_readable(c);
        break;
    case CT_CS_LINGER:
        evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
        break;
    case CT_CS_CLOSED:
    case CT_CS__COUNT:
        CT_WRONG("client read in a state that does not read");
    }
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct ct_client *c = arg;
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    if (c->state != CT_CS_LINGER && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        bufferevent_disable(bev, EV_WRITE); /* back to direct writes */
    switch (c->state) {
    case CT_CS_LINGER:
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
            /* All out of our buffers. Plain TCP: half-close and wait for
             * the client's EOF (bounded by the linger timer). TLS: close
             * now, unless the kernel still holds part of the response: then
             * close once it has gone (linger_draining). */
            if (c->lc->kind == CT_LISTEN_HTTPS) {
                if (linger_draining(c))
                    deadline_set(c, LINGER_POLL_MS);
                else
                    client_close(c, c->why);
            } else if (shutdown(bufferevent_getfd(bev), SHUT_WR) != 0) {
                client_close(c, c->why);
            }
        }
        break;
    case CT_CS_SEND:
    case CT_CS_FETCH:
        ct_req_drained(&c->r);
        break;
    case CT_CS_TUNNEL:
        ct_h1_tunnel_drained(c);
        break;
    default:
        break;
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct ct_client *c = arg;
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    if (c->state == CT_CS_LINGER) {
        client_close(c, c->why);
        return;
    }
    if (what & BEV_EVENT_TIMEOUT) {
        /* Reading: a request body stalled. Writing: the client stopped reading. */
        ct_client_fail(c, (what & BEV_EVENT_READING) ? CT_CLOSE_RX_TIMEOUT : CT_CLOSE_TX_TIMEOUT);
        return;
    }
    if (what & BEV_EVENT_EOF) {
        /* Between requests, a close is the normal end; mid-request the client
         * gave up, and the origin exchange is abandoned with it. */
        client_close(c, c->state == CT_CS_TUNNEL ? CT_CLOSE_TUNNEL_DONE : CT_CLOSE_REM_CLOSE);
        return;
    }
    client_close(c, (what & BEV_EVENT_WRITING) ? CT_CLOSE_TX_ERROR : CT_CLOSE_RX_ERROR);
}

/* Does the kernel still hold bytes of our last response that it has not
 * even sent, because the client is taking them slowly? The send queue holds
 * up to tcp_wmem's maximum (4 MB here): to a slow reader a "finished"
 * response can still be seconds from its end, and closing then leaves an
 * orphan socket that Linux gives up on with the reader's last megabytes. So
 * a lingering connection stays while that backlog shrinks, and is closed
 * once it is gone or has not moved for send_timeout (a reader that stopped).
 * Bytes sent and merely not yet acknowledged (SIOCOUTQ counts those too) do
 * not hold a close back: the kernel finishes those on its own, and waiting
 * for their ACK would cost every short connection a poll interval. */
static bool linger_draining(struct ct_client *c)
{
    int held = ct_io_unsent(&c->io);
    if (held == 0)
        return false;
    uint64_t now = ct_now_ms();
    if (c->linger_outq == 0 || held < c->linger_outq) {
        c->linger_outq = held;
        c->linger_moved_ms = now;
    }
    uint64_t stall = c->w->cf->limits.send_timeout_ms ? c->w->cf->limits.send_timeout_ms : LINGER_MS;
    return now - c->linger_moved_ms < stall;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct ct_client *c = arg;
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    (void)fd;
    (void)what;
    if (!ct_deadline_due(&c->dl))
        return; /* none (a state without one), or it moved later */
    switch (c->state) {
    case CT_CS_READ_HEAD:
        if (c->resume) { /* not a deadline: the deferred parse of pipelined bytes */
            c->resume = false;
            deadline_set(c, c->w->cf->limits.client_header_timeout_ms);
            read_head(c);
        } else if (c->head_started)
            ct_client_fail(c, CT_CLOSE_RX_TIMEOUT);
        else
            client_close(c, CT_CLOSE_IDLE_TIMEOUT);
        break;
    case CT_CS_LINGER:
        if (linger_draining(c)) {
            deadline_set(c, LINGER_POLL_MS);
            break;
        }
        client_close(c, c->why);
        break;
    case CT_CS_FETCH:
    case CT_CS_SEND:
        /* The request body's deadline: a trickle must not hold this
         * connection and its upstream for ever (408, or a close once the
         * response has begun). Only while cachet reads the body for an
         * upstream (or buffers it for one, fetch.c); anything else that left
         * the deadline set has ended it. */
        if (!c->r.body_done && (c->r.u != NULL || c->r.body_buf != NULL) &&
            c->r.body_paused_ms == 0)
            ct_client_fail(c, CT_CLOSE_RX_TIMEOUT);
        break;
    case CT_CS_TUNNEL:
        break; /* a body deadline left from before the 101: the tunnel has its own timeouts */
    default:
        CT_WRONG("client timer in a state without a deadline");
    }
}
