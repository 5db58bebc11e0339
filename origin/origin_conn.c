/*
 * origin/origin_conn.c: one client connection: its state machine and its
 * socket I/O (docs/origin_conn.dot).
 *
 *   READ ──request──▶ (send now) ──▶ READ      keep-alive, output small
 *     │                    │  └────▶ DRAIN     output above CT_OUT_HIGH
 *     │                    │  └────▶ STREAM    body still to queue
 *     │                    └───────▶ CLOSING   Connection: close, errors
 *     └──delay=──▶ DELAY ──timer──▶ (send now)
 *   STREAM ──output drained / trickle timer──▶ (pump) ──▶ READ | DRAIN | CLOSING
 *   DRAIN ──output ≤ CT_OUT_LOW──▶ READ
 *   CLOSING ──output empty──▶ LINGER (shutdown(SHUT_WR), discard input)
 *   LINGER ──EOF or 2 s──▶ freed
 *
 * Requests are parsed only in READ, so pipelined requests wait in the input
 * buffer while an earlier one is delayed or streaming, and responses leave in
 * order. Responses to requests that arrived together are all queued before
 * the callback ends, then written with one writev.
 *
 * I/O is plain events, not bufferevents, because this is the hot path of the
 * benchmark: a read is one recv() into the worker's buffer, parsed in place
 * (no FIONREAD ioctl, no allocation; only bytes left over when a request
 * leaves READ are copied into the connection's input evbuffer); output is
 * written directly at the end of the callback, and EPOLLOUT is armed only
 * when the socket is full. Idle and stuck connections are found by the
 * worker's sweep (ct_oconn_sweep) from last_io, so nothing re-arms a timer
 * per request. Reading stops while the input holds CT_IN_HIGH bytes outside
 * READ, so a client pipelining without reading stalls itself.
 *
 * Ownership: the connection owns its socket, events, buffers, parser and
 * timer. It is freed only by conn_free(), called only from its own event
 * callbacks as their last action (flush() included, which is always last),
 * so no other function has to ask whether it is still alive.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sockaddr.h"
#include "origin/origin_int.h"

#define CT_IN_HIGH (256u * 1024)
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
    /* Count MS from now, not from the loop's cached time: with many requests
     * handled in one loop turn the cache lags, and /delay/MS answered early. */
    event_base_update_cache_time(c->w->base);
    evtimer_add(c->timer, &tv);
}

static int64_t now_ms(struct ct_oconn *c)
{
    struct timeval tv;
    event_base_gettimeofday_cached(c->w->base, &tv);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void conn_free(struct ct_oconn *c)
{
    struct ct_oworker *w = c->w;
    ct_oresp_cleanup(c);
    CT_LIST_REMOVE(&w->conns, c, link);
    event_free(c->timer);
    event_free(c->rev);
    event_free(c->wev);
    evbuffer_free(c->in);
    evbuffer_free(c->out); /* drops unsent output; releases file segments */
    close(c->fd);
    ct_http_parser_free(&c->parser);
    ct_buf_free(&c->head);
    ct_buf_free(&c->body);
    ct_buf_free(&c->reqbody);
    free(c->scratch);
    c->magic = 0;
    free(c);
}

void ct_oconn_free_all(struct ct_oworker *w)
{
    while (!CT_LIST_EMPTY(&w->conns))
        conn_free(CT_LIST_FIRST(&w->conns));
}

static void reading(struct ct_oconn *c, bool on)
{
    if (on == c->reading)
        return;
    if (on)
        event_add(c->rev, NULL);
    else
        event_del(c->rev);
    c->reading = on;
}

/* Everything is sent: half-close and wait (bounded) for the client to close,
 * so unread request bytes do not turn our FIN into an RST that could destroy
 * the response before the client reads it. */
static void linger(struct ct_oconn *c)
{
    ct_oconn_set_state(c, CT_OCS_LINGER);
    if (c->rst) {
        /* No FIN: with a zero linger time close(2) resets the connection,
         * as a crashed or overloaded origin does. Closed from the timer,
         * not under the caller. */
        struct linger l = {.l_onoff = 1, .l_linger = 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        ct_oconn_arm_timer(c, 0);
        return;
    }
    shutdown(c->fd, SHUT_WR);
    evbuffer_drain(c->in, evbuffer_get_length(c->in));
    if (c->peer_eof) {
        ct_oconn_arm_timer(c, 0);
        return;
    }
    reading(c, true);
    ct_oconn_arm_timer(c, CT_LINGER_MS);
}

static void start_close(struct ct_oconn *c)
{
    ct_oconn_set_state(c, CT_OCS_CLOSING);
    reading(c, false);
    if (evbuffer_get_length(c->out) == 0)
        linger(c);
}

void ct_oconn_response_done(struct ct_oconn *c, bool close)
{
    ct_oresp_cleanup(c);
    if (close || c->peer_eof) {
        start_close(c);
        return;
    }
    if (evbuffer_get_length(c->out) > CT_OUT_HIGH)
        ct_oconn_set_state(c, CT_OCS_DRAIN);
    else
        ct_oconn_set_state(c, CT_OCS_READ);
}

/* Parse what waits in the input buffer (bytes that arrived while the
 * connection was not in READ), then resume reading the socket. */
static void process_input(struct ct_oconn *c)
{
    while (c->state == CT_OCS_READ) {
        struct evbuffer_iovec v = {(void *)"", 0};
        size_t avail = evbuffer_get_length(c->in);
        if (avail == 0 && !c->parser_pending)
            break;
        if (avail && (evbuffer_peek(c->in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)) {
            v.iov_len = CT_MIN(avail, 16384);
            v.iov_base = evbuffer_pullup(c->in, (ev_ssize_t)v.iov_len);
        }
        evbuffer_drain(c->in, ct_oreq_feed(c, v.iov_base, v.iov_len));
    }
    if (c->state != CT_OCS_READ)
        return;
    if (c->peer_eof)
        start_close(c); /* answered everything the client sent */
    else
        reading(c, true);
}

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
        if (evbuffer_get_length(c->out) == 0)
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

/* One write; false if the connection failed (the caller frees it). */
static bool write_some(struct ct_oconn *c)
{
    int n = evbuffer_write(c->out, c->fd);
    if (n > 0) {
        c->last_io = now_ms(c);
        return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    CT_DEBUG("w%u c%llu %s: write: %s in %s", c->w->id, (unsigned long long)c->id, c->peer,
             strerror(errno), state_names[c->state]);
    return false;
}

/* Write what is queued, then keep the machine going while the output
 * drains; arm EPOLLOUT only if the socket is full. Always the last call of a
 * callback: it may free C. */
static void flush(struct ct_oconn *c)
{
    for (int round = 0; round < 16 && !c->writing; round++) {
        size_t before = evbuffer_get_length(c->out);
        if (before == 0)
            return;
        if (!write_some(c)) {
            conn_free(c);
            return;
        }
        size_t after = evbuffer_get_length(c->out);
        if (after == before || after > CT_OUT_LOW)
            break;
        output_drained(c);
    }
    if (!c->writing && evbuffer_get_length(c->out) > 0) {
        event_add(c->wev, NULL);
        c->writing = true;
    }
}

/* ---- callbacks ------------------------------------------------------- */

static void on_eof(struct ct_oconn *c)
{
    c->peer_eof = true;
    reading(c, false); /* level-triggered: EOF would fire forever */
    switch (c->state) {
    case CT_OCS_READ:
        /* Pipelined answers may still be queued: send them, then close. */
        if (evbuffer_get_length(c->out) > 0) {
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

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct ct_oconn *c = arg;
    CT_CHECK_OBJ(c, CT_OCONN_MAGIC);
    char *buf = c->w->rbuf;
    ssize_t n = recv(fd, buf, CT_ORBUF_SIZE, 0);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return;
        CT_DEBUG("w%u c%llu %s: read: %s", c->w->id, (unsigned long long)c->id, c->peer,
                 strerror(errno));
        conn_free(c);
        return;
    }
    if (n == 0) {
        on_eof(c);
        return;
    }
    c->last_io = now_ms(c);
    if (c->state == CT_OCS_LINGER)
        return; /* discarded */
    if (c->state == CT_OCS_READ && evbuffer_get_length(c->in) == 0) {
        /* The common case: parse in place, keep only what is left over. */
        size_t used = ct_oreq_feed(c, buf, (size_t)n);
        if (used < (size_t)n)
            evbuffer_add(c->in, buf + used, (size_t)n - used);
    } else {
        evbuffer_add(c->in, buf, (size_t)n);
        process_input(c);
    }
    if (c->state != CT_OCS_READ && evbuffer_get_length(c->in) >= CT_IN_HIGH)
        reading(c, false); /* resumed by process_input once back in READ */
    flush(c);
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    struct ct_oconn *c = arg;
    CT_CHECK_OBJ(c, CT_OCONN_MAGIC);
    if (!write_some(c)) {
        conn_free(c);
        return;
    }
    if (evbuffer_get_length(c->out) <= CT_OUT_LOW)
        output_drained(c);
    if (evbuffer_get_length(c->out) == 0) {
        event_del(c->wev); /* back to direct writes */
        c->writing = false;
    }
    flush(c);
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

/* Called by the worker every few seconds: close connections idle in READ
 * (keep-alive, or a request that never completes) or stuck with output the
 * client does not read, for --idle-timeout seconds. Delays, trickles and
 * lingering have their own timers. */
void ct_oconn_sweep(struct ct_oworker *w, int64_t now)
{
    struct ct_oconn *c, *next;
    int64_t idle = (int64_t)w->o->opts.idle_s * 1000;
    CT_LIST_FOREACH_SAFE(c, &w->conns, link, next) {
        bool waiting_for_client = c->state == CT_OCS_READ || c->writing;
        if (waiting_for_client && now - c->last_io >= idle) {
            CT_DEBUG("w%u c%llu %s: idle for %lld ms in %s", w->id, (unsigned long long)c->id,
                     c->peer, (long long)(now - c->last_io), state_names[c->state]);
            conn_free(c);
        }
    }
}

void ct_oconn_accept(struct ct_oworker *w, int fd, const struct sockaddr *sa)
{
    struct ct_oconn *c = ct_xcalloc(1, sizeof(*c));
    c->magic = CT_OCONN_MAGIC;
    c->w = w;
    c->id = ++w->conn_ids;
    c->state = CT_OCS_READ;
    c->fd = fd;
    c->resp.fd = -1;
    int one = 1;
    /* Responses leave in one write; Nagle would only add a delayed-ACK stall. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (w->o->access_fd >= 0)
        ct_sockaddr_ip(sa, c->peer, sizeof(c->peer));
    else
        c->peer[0] = '-';
    c->in = evbuffer_new();
    c->out = evbuffer_new();
    c->rev = event_new(w->base, fd, EV_READ | EV_PERSIST, on_readable, c);
    c->wev = event_new(w->base, fd, EV_WRITE | EV_PERSIST, on_writable, c);
    c->timer = evtimer_new(w->base, on_timer, c);
    c->parser = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    if (!c->in || !c->out || !c->rev || !c->wev || !c->timer)
        CT_WRONG("libevent allocation failed");
    c->last_io = now_ms(c);
    CT_LIST_INSERT_HEAD(&w->conns, c, link);
    reading(c, true);
}
