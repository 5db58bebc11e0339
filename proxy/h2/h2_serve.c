/*
 * proxy/h2/h2_serve.c: an HTTP/2 connection (issue 14) on the request core.
 *
 *   TLS handshake (client.c) --ALPN h2--> ct_h2s_take(): the bufferevent,
 *   its ct_io (proxy/net/io.c: the one read and write path), the engine
 *
 *     socket --ct_io--> input --ct_h2_conn_recv--> engine --on_request--> stream (ct_req)
 *     socket <--ct_io_flush-- output <--ct_h2_conn_send-- engine <--submit-- ct_h2_proto
 *
 * Output and back-pressure. The engine's frames go to the bufferevent's
 * output (DATA payloads from objects by reference) while it holds less than
 * CT_BP_HIGH, and ct_io_flush writes them at once; the rest waits for the
 * write callback at CT_BP_LOW. Reads stop while the output is over the high
 * mark (a client that sends requests and reads no responses), so memory per
 * connection stays bounded by the windows and the marks.
 *
 * Re-entrancy. ct_h2_conn_send() closes streams (on_close) and so ends
 * requests, so it never runs under a caller that holds a request: responses
 * submitted from outside a read (a cache wake, an origin's bytes) only kick
 * the deferred pump event (ct_h2s_kick); a read pumps once the engine
 * returned. A close wanted inside the engine waits for the outermost call
 * (depth, close_now), as Redis's CONN_FLAG_CLOSE_SCHEDULED.
 *
 * Timeouts: the preface (the client's first bytes) within the header
 * timeout; idle (no stream open, nothing to write) for the keep-alive
 * timeout, then GOAWAY and close; writes have the send timeout (ct_io).
 * These, the idle trim, the streams' send timeout and a reload's final
 * GOAWAY are deadlines on one timer per connection, which the deferred
 * pump (ct_h2s_kick) makes active too: an idle connection holds one event
 * of ours, not five.
 * Drain: GOAWAY NO_ERROR with the last stream id, streams up to it finish,
 * then close (ct_h2s_drain_all).
 *
 * The worker has no protocol-neutral list of connections yet (issue 13 step
 * 5 moves accept and ALPN dispatch to proxy/net): until then each worker
 * thread keeps its h2 connections in a thread-local list, and they count in
 * w->nclients like HTTP/1 clients (connection limit, drain end).
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "proxy/core/core.h"
#include "proxy/core/proto.h"
#include "proxy/core/req.h"
#include "proxy/h2/h2_serve_int.h"
#include "proxy/net/accept.h"
#include "tls/tls.h"

static _Thread_local struct ct_h2s *conns; /* this worker thread's (see above) */

static void pump(struct ct_h2s *s);
static void settle(struct ct_h2s *s);

size_t ct_h2s_out_len(const struct ct_h2s *s)
{
    return evbuffer_get_length(bufferevent_get_output(s->bev));
}

/* The timer, made active: its callback settles (pumps) on the next loop turn. */
void ct_h2s_kick(struct ct_h2s *s)
{
    CT_CHECK_OBJ(s, CT_H2S_MAGIC);
    if (s->depth == 0 && !s->kicked) {
        s->kicked = true;
        event_active(s->timer, EV_TIMEOUT, 1);
    }
}

/* ---- deadlines ------------------------------------------------------------------ */

/* The timer fires at AT or before, unless it already does. Lazily: a
 * deadline cleared or moved later leaves the timer as it is, and its
 * callback sets it again for what is left (as proxy/net/deadline.h). */
static void timer_arm(struct ct_h2s *s, uint64_t at, uint64_t now)
{
    /* Active (kicked): event_add would take it off the active queue, and
     * its callback arms it anyway. */
    if (s->kicked || (s->timer_at_ms != 0 && s->timer_at_ms <= at))
        return;
    uint64_t ms = at > now ? at - now : 0;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    evtimer_add(s->timer, &tv);
    s->timer_at_ms = at;
}

/* *AT is MS from now (MS 0: none). */
static void deadline_set_at(struct ct_h2s *s, uint64_t *at, uint64_t ms)
{
    if (ms == 0) {
        *at = 0;
        return;
    }
    uint64_t now = ct_now_ms();
    *at = now + ms;
    timer_arm(s, *at, now);
}

static void deadline_set(struct ct_h2s *s, uint64_t ms)
{
    deadline_set_at(s, &s->end_at_ms, ms);
}

/* In the timer's callback: true (and cleared) if *AT has passed. */
static bool is_due(uint64_t *at, uint64_t now)
{
    if (*at == 0 || now < *at)
        return false;
    *at = 0;
    return true;
}

static uint64_t next_at(const struct ct_h2s *s)
{
    uint64_t at = 0, all[] = {s->end_at_ms, s->trim_at_ms, s->stall_at_ms, s->drain_at_ms};
    for (size_t i = 0; i < CT_ARRAY_LEN(all); i++)
        if (all[i] != 0 && (at == 0 || all[i] < at))
            at = all[i];
    return at;
}

/* ---- streams that wait for their client ------------------------------------------- */

void ct_h2s_stream_full(struct ct_h2s_stream *st)
{
    if (st->full)
        return;
    st->full = true;
    st->full_since_ms = ct_now_ms();
    uint64_t ms = st->s->w->cf->limits.send_timeout_ms;
    if (st->s->stall_at_ms == 0)
        deadline_set_at(st->s, &st->s->stall_at_ms, ms);
}

/* Streams whose output went under the low mark go on (their requests were
 * waiting in output_full). After the engine ran: never under it. */
static void drained(struct ct_h2s *s)
{
    bool conn_low = ct_h2s_out_len(s) < CT_BP_LOW;
    for (struct ct_h2s_stream *st = s->streams; st; st = st->next) {
        if (!st->full || !conn_low || st->closed ||
            ct_h2_body_queued(s->h, st->sid) >= CT_H2S_STREAM_LOW)
            continue;
        st->full = false;
        if (st->in_core)
            ct_req_drained(&st->r);
    }
}

/* The send timeout per stream: a stream whose client has not taken its
 * output for send_timeout is reset (CANCEL), so a client that never opens
 * its windows holds neither the request nor its origin connection. The
 * connection's own writes have the send timeout of ct_io. */
static void stall(struct ct_h2s *s, uint64_t now)
{
    uint64_t limit = s->w->cf->limits.send_timeout_ms, next = 0;
    for (struct ct_h2s_stream *st = s->streams; st; st = st->next) {
        if (!st->full || st->closed)
            continue;
        if (now - st->full_since_ms >= limit) {
            CT_INFO("w%u c%llu s%d %s: the client took no response bytes for %llu ms: stream "
                    "reset", s->w->id, (unsigned long long)s->id, st->sid, s->peer,
                    (unsigned long long)limit);
            st->full = false;
            (void)ct_h2_reset(s->h, st->sid, 0x8 /* CANCEL */);
            continue;
        }
        uint64_t left = limit - (now - st->full_since_ms);
        if (next == 0 || left < next)
            next = left;
    }
    if (next)
        s->stall_at_ms = now + next; /* the timer's callback arms it */
}

static bool is_idle(struct ct_h2s *s)
{
    return !s->closing && s->got_bytes && ct_h2_conn_nstreams(s->h) == 0 &&
           ct_h2s_out_len(s) == 0;
}

/* Quiet this long, an idle connection gives back the memory it needs only
 * while busy (ct_h2_conn_trim: the pages of nghttp2's 16 KiB frame buffer
 * and of its empty stream map; its spare cache part goes to the thread's
 * stash; TLS buffers go at once, SSL_MODE_RELEASE_BUFFERS), as nginx's
 * HTTP/2 idle state frees its buffers. Not at once: a busy connection goes
 * idle between bursts, and its next frame would fault the pages back in. */
#define TRIM_QUIET_MS 1000

/* Spare cache parts (struct ct_creq) that idle connections gave back,
 * this worker thread's, for the first stream of a connection that has
 * none. Freed at each trim instead, they left holes in the heap between
 * the next connections' long-lived blocks (~2 KiB per idle connection,
 * bench/h2/run.sh --idle). */
#define STASH_MAX 16
static _Thread_local struct ct_creq *stash[STASH_MAX];
static _Thread_local unsigned nstash;

static void stash_give(struct ct_creq **crp)
{
    if (*crp == NULL)
        return;
    if (nstash < STASH_MAX) {
        stash[nstash++] = *crp;
        *crp = NULL;
    } else {
        ct_creq_free(crp);
    }
}

static struct ct_creq *stash_take(void)
{
    return nstash ? stash[--nstash] : NULL;
}

/* Stream structs that went, this worker thread's, for the next streams
 * (one allocation per request less; bounded like the engine's). */
#define SPARE_MAX 32
static _Thread_local struct ct_h2s_stream *spare_st; /* linked by ->next */
static _Thread_local unsigned nspare_st;

static void trim(struct ct_h2s *s)
{
    if (is_idle(s)) { /* busy since, and maybe idle again: re-armed then */
        size_t n = ct_h2_conn_trim(s->h);
        stash_give(&s->spare_cr);
        if (s->w->stats) {
            ct_stats_add(&s->w->stats->h2_idle_trims[0], 1);
            ct_stats_add(&s->w->stats->h2_idle_trim_bytes[0], n);
        }
    }
}

/* Idle: no stream and nothing to write, for the keep-alive timeout. Set on
 * the way into idleness only, so a busy connection arms no timer (the
 * trim's deadline moves with the idle one). */
static void idle_check(struct ct_h2s *s)
{
    if (s->closing)
        return; /* the deadline is the linger's */
    bool idle = is_idle(s);
    if (idle && s->end_at_ms == 0) {
        deadline_set(s, s->w->cf->limits.keepalive_timeout_ms);
        deadline_set_at(s, &s->trim_at_ms, TRIM_QUIET_MS);
    } else if (!idle && s->got_bytes)
        s->end_at_ms = 0; /* the timer stays armed; its firing finds nothing due */
}

/* ---- streams -------------------------------------------------------------------- */

static void stream_unlink_free(struct ct_h2s_stream *st)
{
    struct ct_h2s *s = st->s;
    if (st->prev)
        st->prev->next = st->next;
    else
        s->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    /* The next stream takes its cache part, unless a fill may still need it. */
    if (s->spare_cr == NULL && st->r.u == NULL)
        s->spare_cr = ct_creq_take(&st->r);
    ct_req_free(&st->r); /* its cache part, and an upstream if it was cut short */
    ct_h2_resp_free(st);
    st->magic = 0;
    if (nspare_st < SPARE_MAX) {
        st->next = spare_st;
        spare_st = st;
        nspare_st++;
    } else {
        free(st);
    }
}

/* The stream carries its request to the core. */
static void stream_start(struct ct_h2s_stream *st)
{
    st->in_core = true;
    ct_req_log_start(&st->r);
    ct_req_start(&st->r); /* may answer at once (a hit): done() before this returns */
}

void ct_h2s_stream_done(struct ct_h2s_stream *st)
{
    CT_CHECK_OBJ(st, CT_H2S_STREAM_MAGIC);
    if (!st->in_core)
        return;
    ct_req_log_end(&st->r, st->r.head_sent ? st->r.status : 0);
    st->in_core = false;
    ct_h2s_kick(st->s);
    if (st->closed)
        stream_unlink_free(st);
}

static void *on_request(void *owner, int32_t sid, const struct ct_http_msg *msg, bool end_stream)
{
    struct ct_h2s *s = owner;
    CT_CHECK_OBJ(s, CT_H2S_MAGIC);
    struct ct_h2s_stream *st = spare_st;
    if (st) {
        spare_st = st->next;
        nspare_st--;
        memset(st, 0, sizeof(*st));
    } else {
        st = ct_xcalloc(1, sizeof(*st));
    }
    st->magic = CT_H2S_STREAM_MAGIC;
    st->s = s;
    st->sid = sid;
    st->body_end = end_stream;
    st->r = (struct ct_req){.magic = CT_REQ_MAGIC,
                            .proto = &ct_h2_proto,
                            .w = s->w,
                            .lc = s->lc,
                            .peer = s->peer,
                            .peer_ip_len = s->peer_ip_len,
                            .conn_id = s->id,
                            .stream_id = (uint32_t)sid,
                            .tls = bufferevent_openssl_get_ssl(s->bev),
                            .msg = msg,
                            .body_done = end_stream,
                            .site_memo = &s->site_memo};
    struct ct_creq *cr = s->spare_cr ? s->spare_cr : stash_take();
    s->spare_cr = NULL;
    if (cr)
        ct_creq_give(&st->r, cr);
    st->next = s->streams;
    if (s->streams)
        s->streams->prev = st;
    s->streams = st;
    stream_start(st);
    return st;
}

/* More request body (or its end): the core reads it if it waits for it. */
static void body_news(struct ct_h2s_stream *st)
{
    if (st->in_core && st->want_body && !st->held) {
        st->want_body = false;
        ct_req_body_readable(&st->r);
    }
}

static void on_body(void *owner, void *req, int32_t sid)
{
    struct ct_h2s_stream *st = req;
    (void)owner;
    (void)sid;
    CT_CHECK_OBJ(st, CT_H2S_STREAM_MAGIC);
    body_news(st);
}

static void on_request_end(void *owner, void *req, int32_t sid)
{
    struct ct_h2s_stream *st = req;
    (void)owner;
    (void)sid;
    CT_CHECK_OBJ(st, CT_H2S_STREAM_MAGIC);
    st->body_end = true;
    body_news(st);
}

static void on_close(void *owner, void *req, int32_t sid, uint32_t code)
{
    (void)owner;
    (void)sid;
    (void)code;
    struct ct_h2s_stream *st = req;
    CT_CHECK_OBJ(st, CT_H2S_STREAM_MAGIC);
    st->closed = true;
    if (st->in_core) {
        /* Reset (or the connection went) with the request in flight: the
         * core lets go of its upstream and its cache part; a fill that
         * others may read goes on as a request of its own (ct_req_free). */
        ct_req_log_end(&st->r, st->r.head_sent ? st->r.status : 0);
        st->in_core = false;
    }
    stream_unlink_free(st); /* ct_req_free: the core lets go */
}

static const struct ct_h2_cbs cbs = {
    .on_request = on_request,
    .on_body = on_body,
    .on_request_end = on_request_end,
    .on_close = on_close,
};

/* The engine's counts since the last look, into the worker's stats. */
static void count(struct ct_h2s *s)
{
    struct ct_stats *st = s->w->stats;
    if (st == NULL || s->h == NULL)
        return;
    const struct ct_h2_counts *c = ct_h2_conn_counts(s->h);
    ct_stats_add(&st->h2_streams[0], c->streams - s->counted.streams);
    ct_stats_add(&st->h2_malformed[0], c->malformed - s->counted.malformed);
    ct_stats_add(&st->h2_resets_received[0], c->resets_recv - s->counted.resets_recv);
    ct_stats_add(&st->h2_resets_sent[0], c->resets_sent - s->counted.resets_sent);
    s->counted = *c;
}

/* ---- close ---------------------------------------------------------------------- */

static void conn_free(struct ct_h2s *s)
{
    s->depth++;
    ct_h2_conn_free(&s->h); /* on_close (CANCEL) for every open stream */
    s->depth--;
    CT_ASSERT(s->streams == NULL);
    stash_give(&s->spare_cr);
    ct_io_detach(&s->io);
    bufferevent_free(s->bev);
    event_free(s->timer);
    if (s->prev)
        s->prev->next = s->next;
    else
        conns = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->magic = 0;
    free(s);
}

static void conn_close(struct ct_h2s *s)
{
    struct ct_worker *w = s->w;
    CT_DEBUG("w%u c%llu %s: h2 closed (%s; %s)", w->id, (unsigned long long)s->id, s->peer,
             ct_close_name(s->why), ct_h2_why_text(ct_h2_conn_why(s->h)));
    /* TLS: a clean end says so, not after a truncation (client.c does the same). */
    SSL *ssl = bufferevent_openssl_get_ssl(s->bev); /* NULL: h2c */
    if (ssl && !ct_close_is_err(s->why) && ct_h2s_out_len(s) == 0)
        ct_tls_close_notify(ssl);
    if (w->stats) {
        count(s);
        ct_stats_add(&w->stats->h2_connections_ended[ct_h2_conn_why(s->h)], 1);
        ct_stats_conn_close(w->stats, (unsigned)s->why);
        enum ct_stats_proto p = ssl ? CT_STATS_PROTO_h2 : CT_STATS_PROTO_h2c;
        ct_stats_conn_proto(w->stats, p, false);
        ct_stats_conn_spoke(w->stats, p);
    }
    uint64_t id = s->id; /* for w->conn_gone, after the free */
    conn_free(s);
    w->nclients--;
    w->conn_gone(w, id); /* it no longer holds its configuration or listener */
}

/* Close now, or once the outermost call returns. */
static void close_soon(struct ct_h2s *s, enum ct_close why)
{
    if (!s->closing && !s->close_now)
        s->why = why;
    s->close_now = true;
}

/* The engine is done (GOAWAY both ways and no stream, or a connection
 * error): write what is queued, then close. */
static void finish(struct ct_h2s *s, enum ct_close why)
{
    if (s->closing)
        return;
    s->closing = true;
    s->why = why;
    bufferevent_setwatermark(s->bev, EV_WRITE, 0, 0); /* the write callback at empty */
    ct_io_flush(&s->io);
}

static enum ct_close why_of(const struct ct_h2_conn *h)
{
    switch (ct_h2_conn_why(h)) {
    case CT_H2_WHY_NONE:
    case CT_H2_WHY_PEER_GOAWAY: return CT_CLOSE_RESP_DONE;
    case CT_H2_WHY_DRAIN: return CT_CLOSE_DRAIN;
    default: return CT_CLOSE_RX_BAD;
    }
}

/* All written: say so (close_notify, FIN) and read on, dropping what comes,
 * until the client's EOF or LINGER_MS. Closing with its bytes unread would
 * reset the connection, and a reset can destroy our GOAWAY in the client's
 * receive buffer before it reads it (client.c lingers for the same reason). */
#define LINGER_MS 2000

static void linger(struct ct_h2s *s)
{
    if (s->lingering)
        return;
    s->lingering = true;
    SSL *ssl = bufferevent_openssl_get_ssl(s->bev); /* NULL: h2c */
    if (ssl && !ct_close_is_err(s->why))
        ct_tls_close_notify(ssl);
    /* The socket's own fd: after the TLS take-over the bufferevent's is -1,
     * and a TLS client waited LINGER_MS for the FIN (RFC 9113 §5.4.1: close
     * after the GOAWAY of a connection error). */
    shutdown(ct_io_fd(&s->io), SHUT_WR);
    ct_io_read(&s->io, true);
    deadline_set(s, LINGER_MS);
}

/* After every entry point: write what the engine has, close what is done. */
static void settle(struct ct_h2s *s)
{
    if (s->depth > 0)
        return;
    if (!s->close_now) {
        pump(s);
        if (!s->closing && ct_h2_conn_is_done(s->h))
            finish(s, why_of(s->h));
        if (s->closing && ct_h2s_out_len(s) == 0)
            linger(s);
    }
    if (s->close_now) {
        conn_close(s);
        return;
    }
    count(s);
    drained(s);
    idle_check(s);
}

/* ---- bytes in and out ----------------------------------------------------------- */

/* The engine's frames into the output while it holds less than the high
 * mark, then a write. */
static void pump(struct ct_h2s *s)
{
    struct evbuffer *out = bufferevent_get_output(s->bev);
    /* Again while the write took nearly all of it: a write the socket takes
     * whole schedules no write callback, and what the engine still holds
     * (hits of a few 100 KiB on many streams, queued at once, with the
     * client's windows wide open) would wait for an event that never
     * comes. The socket's own limit ends the loop: past it the output
     * stays over the low mark and on_write() pumps on. */
    for (;;) {
        bool added = false;
        s->depth++;
        while (evbuffer_get_length(out) < CT_BP_HIGH && ct_h2_conn_want_write(s->h)) {
            size_t before = evbuffer_get_length(out);
            int rc = ct_h2_conn_send(s->h, out, CT_BP_HIGH);
            if (rc != CT_OK || evbuffer_get_length(out) == before)
                break; /* an error's GOAWAY is in OUT: settle() closes after it */
            added = true;
        }
        s->depth--;
        ct_io_flush(&s->io);
        if (!added || s->close_now || evbuffer_get_length(out) >= CT_BP_LOW ||
            !ct_h2_conn_want_write(s->h))
            break;
    }
    /* A client that sends and does not read: stop taking its input. */
    ct_io_read(&s->io, s->closing || evbuffer_get_length(out) < CT_BP_HIGH);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct ct_h2s *s = arg;
    CT_CHECK_OBJ(s, CT_H2S_MAGIC);
    struct evbuffer *in = bufferevent_get_input(bev);
    if (s->closing) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    if (evbuffer_get_length(in) > 0 && !s->got_bytes) {
        s->got_bytes = true;
        s->end_at_ms = 0;
    }
    ct_time_t now = ct_time_mono();
    s->depth++;
    size_t len;
    while ((len = evbuffer_get_length(in)) > 0) {
        size_t n = (size_t)evbuffer_get_contiguous_space(in);
        const unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)n);
        int rc = ct_h2_conn_recv(s->h, p, n, now);
        evbuffer_drain(in, n);
        if (rc != CT_OK) {
            CT_INFO("w%u c%llu %s: h2 connection error: %s (GOAWAY %s)", s->w->id,
                    (unsigned long long)s->id, s->peer, ct_h2_why_text(ct_h2_conn_why(s->h)),
                    ct_h2_why_name(ct_h2_conn_why(s->h)));
            evbuffer_drain(in, evbuffer_get_length(in));
            break;
        }
    }
    s->depth--;
    settle(s);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct ct_h2s *s = arg;
    CT_CHECK_OBJ(s, CT_H2S_MAGIC);
    (void)bev;
    settle(s);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct ct_h2s *s = arg;
    CT_CHECK_OBJ(s, CT_H2S_MAGIC);
    (void)bev;
    enum ct_close why = CT_CLOSE_RX_ERROR;
    if (what & BEV_EVENT_TIMEOUT)
        why = (what & BEV_EVENT_READING) ? CT_CLOSE_RX_TIMEOUT : CT_CLOSE_TX_TIMEOUT;
    else if (what & BEV_EVENT_EOF)
        why = CT_CLOSE_REM_CLOSE;
    else if (what & BEV_EVENT_WRITING)
        why = CT_CLOSE_TX_ERROR;
    if (s->closing && !(what & BEV_EVENT_TIMEOUT))
        why = s->why; /* the end we were writing anyway */
    close_soon(s, why);
    settle(s);
}

/* The connection's deadline (end_at_ms) passed. */
static void expire(struct ct_h2s *s)
{
    if (s->lingering) {
        close_soon(s, s->why);
    } else if (!s->got_bytes) { /* no preface: nothing to say to whoever this is */
        close_soon(s, CT_CLOSE_RX_TIMEOUT);
    } else {
        /* Idle: GOAWAY NO_ERROR, then close once it is out (RFC 9113 §9.1). */
        s->depth++;
        ct_h2_conn_drain(s->h);
        s->depth--;
        pump(s);
        finish(s, CT_CLOSE_IDLE_TIMEOUT);
    }
}

static void drain_final(struct ct_h2s *s);

/* The timer fired or was kicked: what is due, then the pump (settle). */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct ct_h2s *s = arg;
    CT_CHECK_OBJ(s, CT_H2S_MAGIC);
    (void)fd;
    (void)what;
    s->timer_at_ms = 0; /* not persistent: libevent took it off, kicked or not */
    s->kicked = false;
    if (next_at(s) != 0) {
        uint64_t now = ct_now_ms();
        if (is_due(&s->trim_at_ms, now))
            trim(s);
        if (is_due(&s->stall_at_ms, now))
            stall(s, now);
        if (is_due(&s->drain_at_ms, now))
            drain_final(s);
        if (is_due(&s->end_at_ms, now))
            expire(s);
        uint64_t at = next_at(s);
        if (at != 0)
            timer_arm(s, at, now);
    }
    settle(s); /* may close s */
}

/* ---- the public calls ------------------------------------------------------------ */

static void settings_of(const struct ct_worker *w, struct ct_h2_settings *set)
{
    const struct ct_conf_http2 *c = &w->cf->limits.http2;
    *set = (struct ct_h2_settings){
        .max_concurrent_streams = c->max_concurrent_streams,
        .initial_window = (uint32_t)c->stream_window,
        .conn_window = (uint32_t)c->connection_window,
        .max_frame_size = (uint32_t)c->max_frame_size,
        .max_header_list = 64 * 1024,
        .max_fields = 100,
        .max_queued_acks = c->max_queued_acks,
        .reset_burst = c->reset_burst,
        .reset_rate = c->reset_rate,
        .empty_burst = c->empty_frames_burst,
        .empty_rate = c->empty_frames_rate,
        .discard_max = (size_t)c->early_response_discard,
    };
    /* The request head limits of HTTP/1 hold for HTTP/2 too. */
    if (w->limits.max_head)
        set->max_header_list = (uint32_t)CT_MIN(w->limits.max_head, (size_t)UINT32_MAX);
    if (w->limits.max_fields)
        set->max_fields = w->limits.max_fields;
}

void ct_h2s_take(struct ct_worker *w, const struct ct_conn_info *ci)
{
    const struct ct_listener_conf *lc = ci->lc;
    struct bufferevent *bev = ci->bev;
    uint64_t conn_id = ci->id;
    const char *peer = ci->peer;
    size_t peer_ip_len = ci->peer_ip_len;
    struct ct_h2s *s = ct_xcalloc(1, sizeof(*s));
    s->magic = CT_H2S_MAGIC;
    s->w = w;
    s->lc = lc;
    s->bev = bev;
    s->id = conn_id;
    snprintf(s->peer, sizeof(s->peer), "%s", peer);
    s->peer_ip_len = CT_MIN(peer_ip_len, strlen(s->peer));
    s->why = CT_CLOSE_RESP_DONE;
    s->timer = evtimer_new(w->base, on_timer, s);
    CT_ASSERT(s->timer != NULL);
    struct ct_h2_settings set;
    settings_of(w, &set);
    s->h = ct_h2_conn_new(&set, &cbs, s);
    s->next = conns;
    if (conns)
        conns->prev = s;
    conns = s; /* counted in w->nclients since accept (proxy/net/accept.c) */
    bool plain = ci->tls == NULL; /* h2c with prior knowledge (listen[].h2c) */
    if (w->stats) {
        ct_stats_conn_proto(w->stats, plain ? CT_STATS_PROTO_http : CT_STATS_PROTO_https, false);
        ct_stats_conn_proto(w->stats, plain ? CT_STATS_PROTO_h2c : CT_STATS_PROTO_h2, true);
    }
    bufferevent_setcb(bev, plain ? NULL : on_read, on_write, on_event, s);
    bufferevent_setwatermark(bev, EV_WRITE, CT_BP_LOW, 0);
    ct_io_attach(&s->io, w->base, bev, plain, on_read, on_event, s);
    if (plain) /* our reads and direct writes, as HTTP/1's (proxy/net/net.h) */
        bufferevent_disable(bev, EV_READ | EV_WRITE);
    ct_io_timeouts(&s->io, 0, w->cf->limits.send_timeout_ms);
    deadline_set(s, w->cf->limits.client_header_timeout_ms);
    ct_io_read(&s->io, true); /* takes the TLS connection over (io.c) */
    CT_DEBUG("w%u c%llu %s: h2", w->id, (unsigned long long)conn_id, s->peer);
    if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
        on_read(bev, s); /* may close s */
    else
        settle(s); /* our SETTINGS */
}

/* A reload's graceful GOAWAY comes in two steps (RFC 9113 §6.8): the
 * notice, then this long after it (generous for a round trip on any real
 * network, short beside a keep-alive) the final one. A request the client
 * sent before it saw the notice is served, not refused: curl and browsers
 * retry a refused request, but only some of them, and not every time. */
#define DRAIN_NOTICE_MS 1000

/* The final GOAWAY (one that never spoke is closed); settle() after it. */
static void drain_final(struct ct_h2s *s)
{
    if (!s->got_bytes) {
        close_soon(s, CT_CLOSE_DRAIN);
    } else {
        s->depth++;
        ct_h2_conn_drain(s->h);
        s->depth--;
    }
}

void ct_h2s_drain_all(struct ct_worker *w, bool reload)
{
    struct ct_h2s *s = conns, *next;
    for (; s; s = next) {
        next = s->next;
        if (s->w != w)
            continue;
        if (reload) {
            if (s->reload_drain)
                continue; /* a reload's drain is under way already */
            s->reload_drain = true;
            deadline_set_at(s, &s->drain_at_ms, DRAIN_NOTICE_MS);
            if (s->got_bytes) {
                s->depth++;
                ct_h2_conn_drain_notice(s->h);
                s->depth--;
                settle(s); /* may close s */
            }
            continue;
        }
        drain_final(s);
        settle(s); /* may close s */
    }
}

void ct_h2s_abort_all(struct ct_worker *w)
{
    struct ct_h2s *s = conns, *next;
    for (; s; s = next) {
        next = s->next;
        if (s->w == w) {
            conn_free(s);
            w->nclients--;
        }
    }
    /* the worker thread ends: what its connections shared goes */
    while (nstash)
        ct_creq_free(&stash[--nstash]);
    while (spare_st) {
        struct ct_h2s_stream *st = spare_st;
        spare_st = st->next;
        free(st);
    }
    nspare_st = 0;
    ct_h2_resp_thread_free();
    ct_h2_thread_free();
}
