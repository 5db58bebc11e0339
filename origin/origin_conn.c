/*
 * origin/origin_conn.c: one client connection, as an explicit state machine
 * (docs/origin_conn.dot):
 *
 *   READ ──request──▶ (send now) ──▶ READ      keep-alive, output small
 *     │                    │  └────▶ DRAIN     output above CT_OUT_HIGH
 *     │                    │  └────▶ STREAM    body still to queue
 *     │                    └───────▶ CLOSING   Connection: close, errors
 *     └──delay=──▶ DELAY ──timer──▶ (send now)
 *   STREAM ──write cb / trickle timer──▶ (pump) ──▶ READ | DRAIN | CLOSING
 *   DRAIN ──write cb (output ≤ CT_OUT_LOW)──▶ READ
 *   CLOSING ──output empty──▶ LINGER (shutdown(SHUT_WR), discard input)
 *   LINGER ──EOF or 2 s──▶ freed
 *
 * Requests are parsed only in READ, so pipelined requests wait in the input
 * buffer while an earlier one is delayed or streaming, and responses leave in
 * order. Synchronous responses to requests that arrived together are all
 * queued before the callback returns: one write carries them. The input has
 * a high watermark, so a client pipelining without reading stalls itself.
 *
 * Ownership: the connection owns its bufferevent (CLOSE_ON_FREE), parser,
 * timer and buffers. It is freed only by conn_free(), called only from its
 * own event callbacks (error, EOF, timeouts, the linger timer) as their last
 * action, so no other function has to ask whether it is still alive.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "origin/origin_int.h"

#define CT_IN_HIGH (256u * 1024)
#define CT_IDLE_TIMEOUT_S 60
#define CT_LINGER_MS 2000

static const char *const state_names[] = {
#define CT_OCS_NAME(id, text) #id,
    CT_OCONN_STATES(CT_OCS_NAME)
#undef CT_OCS_NAME
};

/* Legal transitions: a bit per target state. */
#define B(s) (1u << CT_OCS_##s)
static const unsigned legal[] = {
    [CT_OCS_READ] = B(READ) | B(DELAY) | B(STREAM) | B(DRAIN) | B(CLOSING),
    [CT_OCS_DELAY] = B(READ) | B(STREAM) | B(DRAIN) | B(CLOSING),
    [CT_OCS_STREAM] = B(READ) | B(STREAM) | B(DRAIN) | B(CLOSING),
    [CT_OCS_DRAIN] = B(READ),
    [CT_OCS_CLOSING] = B(LINGER),
    [CT_OCS_LINGER] = 0,
};
#undef B

void ct_oconn_set_state(struct ct_oconn *c, enum ct_oconn_state s)
{
    if (CT_UNLIKELY(!(legal[c->state] & (1u << s))))
        ct_panic(__FILE__, __LINE__, "c%llu: illegal transition %s -> %s",
                 (unsigned long long)c->id, state_names[c->state], state_names[s]);
    CT_DEBUG("w%u c%llu %s -> %s", c->w->id, (unsigned long long)c->id, state_names[c->state],
             state_names[s]);
    c->state = s;
}

void ct_oconn_arm_timer(struct ct_oconn *c, unsigned ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
}

static void conn_free(struct ct_oconn *c)
{
    struct ct_oworker *w = c->w;
    ct_oresp_cleanup(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    event_free(c->timer);
    bufferevent_free(c->bev); /* drops unsent output, closes the socket */
    ct_http_parser_free(&c->parser);
    ct_obuf_free(&c->head);
    ct_obuf_free(&c->body);
    ct_obuf_free(&c->reqbody);
    free(c->scratch);
    c->magic = 0;
    free(c);
}

void ct_oconn_free_all(struct ct_oworker *w)
{
    while (w->conns)
        conn_free(w->conns);
}

/* Everything is sent: half-close and wait (bounded) for the client to close,
 * so unread request bytes do not turn our FIN into an RST that could destroy
 * the response before the client reads it. */
static void linger(struct ct_oconn *c)
{
    ct_oconn_set_state(c, CT_OCS_LINGER);
    shutdown(bufferevent_getfd(c->bev), SHUT_WR);
    if (c->peer_eof) {
        ct_oconn_arm_timer(c, 0);
        return;
    }
    bufferevent_enable(c->bev, EV_READ);
    ct_oconn_arm_timer(c, CT_LINGER_MS);
}

static void start_close(struct ct_oconn *c)
{
    ct_oconn_set_state(c, CT_OCS_CLOSING);
    bufferevent_disable(c->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        linger(c);
}

void ct_oconn_response_done(struct ct_oconn *c, bool close)
{
    ct_oresp_cleanup(c);
    if (close || c->peer_eof) {
        start_close(c);
        return;
    }
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) > CT_OUT_HIGH)
        ct_oconn_set_state(c, CT_OCS_DRAIN);
    else
        ct_oconn_set_state(c, CT_OCS_READ);
}

/* ---- requests ---------------------------------------------------------- */

typedef void handler_fn(struct ct_oconn *c);
static handler_fn *const handlers[] = {
    [CT_OROUTE_STATIC] = ct_ohandle_static,
    [CT_OROUTE_JSON] = ct_ohandle_json,
    [CT_OROUTE_PLAINTEXT] = ct_ohandle_plaintext,
    [CT_OROUTE_GEN] = ct_ohandle_gen,
    [CT_OROUTE_ECHO] = ct_ohandle_echo,
    [CT_OROUTE_BYTES] = ct_ohandle_bytes,
    [CT_OROUTE_DELAY] = ct_ohandle_delay,
    [CT_OROUTE_BAD] = ct_ohandle_bad,
    [CT_OROUTE_STATS] = ct_ohandle_stats,
    [CT_OROUTE_STATS_RESET] = ct_ohandle_stats_reset,
};

static void on_head(struct ct_oconn *c)
{
    c->msg = ct_http_parser_msg(c->parser);
    c->reqbody.len = 0;
    c->reqbody_over = false;
    if (ct_otarget_split(c->msg->target, &c->path, &c->query) == CT_OK) {
        c->route = ct_oroute_match(c->path, &c->rest);
    } else {
        c->path = CT_STR_NULL;
        c->route = CT_OROUTE_STATIC;
    }
    /* RFC 9110 §10.1.1: tell the client to go ahead with the body. */
    if (c->msg->expect_continue && c->msg->version >= 11 && c->msg->framing != CT_FRAME_NONE)
        evbuffer_add(bufferevent_get_output(c->bev), "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

static void on_body(struct ct_oconn *c, struct ct_str chunk)
{
    if (c->route != CT_OROUTE_ECHO || c->reqbody_over)
        return; /* other endpoints read and discard the body */
    if (c->reqbody.len + chunk.len > CT_ECHO_MAX_BODY)
        c->reqbody_over = true;
    else
        ct_obuf_put_str(&c->reqbody, chunk);
}

static bool parse_query(struct ct_oconn *c)
{
    char err[160];
    memset(&c->prm, 0, sizeof(c->prm));
    c->prm.trickle_size = 1024;
    if (c->query.len == 0)
        return true;
    size_t need = ct_oparams_scratch_len(c->query.len);
    if (need > c->scratch_cap) {
        c->scratch = ct_xrealloc(c->scratch, need);
        c->scratch_cap = need;
    }
    time_t now = (time_t)ct_time_real();
    if (ct_oparams_parse(c->query, c->scratch, now, &c->prm, err, sizeof(err)) == CT_OK)
        return true;
    memset(&c->prm, 0, sizeof(c->prm));
    ct_oresp_error(c, 400, err);
    return false;
}

static void dispatch(struct ct_oconn *c)
{
    const struct ct_http_msg *m = c->msg;
    struct ct_origin *o = c->w->o;
    c->nreq++;
    c->version = m->version;
    c->head_only = m->method == CT_METHOD_HEAD;
    c->keep_alive = m->keep_alive && !c->peer_eof;
    ct_oresp_cleanup(c);
    ct_oresp_init(&c->resp);
    memset(&c->prm, 0, sizeof(c->prm));
    bool internal = c->path.p && ct_oroute_is_internal(c->path);
    if (!c->path.p) {
        ct_oresp_error(c, 400, "request target must be origin-form or absolute-form");
    } else {
        if (!internal)
            ct_ostats_count(c->w->stats, c->path);
        if (internal || parse_query(c)) {
            if (c->reqbody_over)
                ct_oresp_error(c, 413, "echo body over 4 MiB");
            else
                handlers[c->route](c);
        }
    }
    ct_oresp_prepare(c);
    unsigned delay = c->prm.has_delay ? c->prm.delay_ms : internal ? 0 : o->opts.delay_ms;
    if (delay) {
        ct_oconn_set_state(c, CT_OCS_DELAY);
        ct_oconn_arm_timer(c, delay);
        return;
    }
    ct_oresp_send(c);
}

/* The parser refused the request: answer its status and close (we cannot
 * know where the next request would start). */
static void bad_request(struct ct_oconn *c)
{
    unsigned status = ct_http_parser_error_status(c->parser);
    CT_DEBUG("w%u c%llu %s: bad request: %u %s", c->w->id, (unsigned long long)c->id, c->peer,
             status, ct_http_parser_error_reason(c->parser));
    c->msg = NULL;
    c->version = 11;
    c->head_only = false;
    c->keep_alive = false;
    memset(&c->prm, 0, sizeof(c->prm));
    ct_oresp_error(c, status >= 400 ? status : 400, ct_http_parser_error_reason(c->parser));
    c->resp.close = true;
    ct_oresp_send(c);
}

/* Feed the input to the parser, one contiguous piece at a time, and answer
 * each complete request, while the connection is in READ. After HEAD or BODY
 * the parser may hold more events for bytes it already consumed (END of a
 * bodiless request comes from the next feed), so it is fed again, with zero
 * bytes if need be, until it asks for more input. */
static void process_input(struct ct_oconn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    bool pending = c->parser_pending;
    while (c->state == CT_OCS_READ) {
        size_t avail = evbuffer_get_length(in);
        struct evbuffer_iovec v = {(void *)"", 0};
        if (avail == 0 && !pending) {
            if (c->peer_eof)
                start_close(c);
            break;
        }
        if (avail && (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)) {
            v.iov_len = CT_MIN(avail, 16384);
            v.iov_base = evbuffer_pullup(in, (ev_ssize_t)v.iov_len);
        }
        size_t used = 0;
        struct ct_str chunk = CT_STR_NULL;
        enum ct_http_ev ev = ct_http_parser_feed(c->parser, v.iov_base, v.iov_len, &used, &chunk);
        pending = ev == CT_HTTP_EV_HEAD || ev == CT_HTTP_EV_BODY;
        switch (ev) {
        case CT_HTTP_EV_MORE:
            CT_ASSERT(used == v.iov_len);
            evbuffer_drain(in, used);
            break;
        case CT_HTTP_EV_HEAD:
            evbuffer_drain(in, used);
            on_head(c);
            break;
        case CT_HTTP_EV_BODY:
            on_body(c, chunk); /* chunk points into the input: copy first */
            evbuffer_drain(in, used);
            break;
        case CT_HTTP_EV_END:
            evbuffer_drain(in, used);
            dispatch(c);
            break;
        case CT_HTTP_EV_ERROR:
            bad_request(c);
            break;
        }
    }
    c->parser_pending = pending;
}

/* ---- callbacks ------------------------------------------------------- */

/* The output went below CT_OUT_LOW (or empty): queue more body, resume
 * reading requests, or finish closing. */
static void output_drained(struct ct_oconn *c)
{
    switch (c->state) {
    case CT_OCS_STREAM:
        if (c->bs.timer_wait)
            return;
        ct_oresp_pump(c);
        break;
    case CT_OCS_DRAIN:
        ct_oconn_set_state(c, CT_OCS_READ);
        break;
    case CT_OCS_CLOSING:
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            linger(c);
        return;
    case CT_OCS_READ:
    case CT_OCS_DELAY:
    case CT_OCS_LINGER:
        return;
    }
    if (c->state == CT_OCS_READ)
        process_input(c);
}

/* Write what is queued now instead of waiting for the loop: most responses
 * fit in the socket buffer, and a direct writev saves the two epoll_ctl
 * calls per response (arm, then disarm EPOLLOUT) that a bufferevent write
 * costs. Only when the socket is full does EV_WRITE get enabled, and the
 * bufferevent carries on (with its write timeout and the low watermark
 * callback). A write error is left for the bufferevent to meet again and
 * report through on_event, the one place that frees. */
static void flush(struct ct_oconn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    for (int round = 0; round < 16; round++) {
        if ((bufferevent_get_enabled(c->bev) & EV_WRITE) || evbuffer_get_length(out) == 0)
            return;
        /* A socket bufferevent freezes the front of its output so only it
         * drains it; unfreeze around our write exactly as its own write
         * callback does (libevent 2.1 bufferevent_sock.c). */
        evbuffer_unfreeze(out, 1);
        int n = evbuffer_write(out, bufferevent_getfd(c->bev));
        evbuffer_freeze(out, 1);
        if (n <= 0 || evbuffer_get_length(out) > CT_OUT_LOW)
            break;
        output_drained(c);
    }
    if (evbuffer_get_length(out) > 0)
        bufferevent_enable(c->bev, EV_WRITE);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct ct_oconn *c = arg;
    CT_CHECK_OBJ(c, CT_OCONN_MAGIC);
    if (c->state == CT_OCS_READ)
        process_input(c);
    else if (c->state == CT_OCS_LINGER)
        evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
    /* Other states leave the input for later; the watermark bounds it. */
    flush(c);
}

/* The bufferevent wrote and the output is at or below CT_OUT_LOW. */
static void on_write(struct bufferevent *bev, void *arg)
{
    struct ct_oconn *c = arg;
    CT_CHECK_OBJ(c, CT_OCONN_MAGIC);
    output_drained(c);
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        bufferevent_disable(bev, EV_WRITE); /* back to direct writes */
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct ct_oconn *c = arg;
    CT_CHECK_OBJ(c, CT_OCONN_MAGIC);
    switch (c->state) {
    case CT_OCS_DELAY:
        ct_oresp_send(c);
        break;
    case CT_OCS_STREAM:
        ct_oresp_pump(c);
        break;
    case CT_OCS_LINGER:
        conn_free(c);
        return;
    case CT_OCS_READ:
    case CT_OCS_DRAIN:
    case CT_OCS_CLOSING:
        CT_WRONG("timer in a state without one");
    }
    if (c->state == CT_OCS_READ)
        process_input(c);
    flush(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct ct_oconn *c = arg;
    CT_CHECK_OBJ(c, CT_OCONN_MAGIC);
    if (what & BEV_EVENT_ERROR) {
        CT_DEBUG("w%u c%llu %s: %s in %s", c->w->id, (unsigned long long)c->id, c->peer,
                 strerror(errno), state_names[c->state]);
        conn_free(c);
        return;
    }
    if (what & BEV_EVENT_TIMEOUT) {
        /* Idle keep-alive or a stuck request line: close. A client waiting
         * for a delayed or streamed answer is not idle: keep reading. */
        if ((what & BEV_EVENT_WRITING) || c->state == CT_OCS_READ || c->state == CT_OCS_LINGER) {
            conn_free(c);
            return;
        }
        bufferevent_enable(bev, EV_READ);
        return;
    }
    if (!(what & BEV_EVENT_EOF))
        return;
    c->peer_eof = true;
    switch (c->state) {
    case CT_OCS_READ:
        /* Pipelined answers may still be queued: send them, then close. */
        if (evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
            start_close(c);
            flush(c);
            return;
        }
        conn_free(c);
        return;
    case CT_OCS_DELAY:
    case CT_OCS_LINGER:
        /* The client is gone (or done): the timer dies with the connection. */
        conn_free(c);
        return;
    case CT_OCS_STREAM:
        c->bs.close = true; /* finish this body (half-close), then close */
        return;
    case CT_OCS_DRAIN:
    case CT_OCS_CLOSING:
        return;
    }
}

void ct_oconn_accept(struct ct_oworker *w, int fd, const struct sockaddr *sa)
{
    struct ct_oconn *c = ct_xcalloc(1, sizeof(*c));
    c->magic = CT_OCONN_MAGIC;
    c->w = w;
    c->id = ++w->conn_ids;
    c->state = CT_OCS_READ;
    c->resp.fd = -1;
    int one = 1;
    /* Responses leave in one write; Nagle would only add a delayed-ACK stall. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (w->o->access_fd >= 0)
        ct_osockaddr_format(sa, c->peer, sizeof(c->peer), false);
    else
        c->peer[0] = '-';
    c->bev = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev) {
        CT_ERR("w%u accepting a connection: bufferevent_socket_new failed", w->id);
        close(fd);
        free(c);
        return;
    }
    c->parser = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    c->timer = evtimer_new(w->base, on_timer, c);
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0, CT_IN_HIGH);
    bufferevent_setwatermark(c->bev, EV_WRITE, CT_OUT_LOW, 0);
    struct timeval idle = {CT_IDLE_TIMEOUT_S, 0};
    bufferevent_set_timeouts(c->bev, &idle, &idle);
    /* New bufferevents start with EV_WRITE enabled; we want it only when
     * the socket is full (see flush). */
    bufferevent_disable(c->bev, EV_WRITE);
    bufferevent_enable(c->bev, EV_READ);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
}
