/*
 * proxy/ops/ops_events.c: GET /events on the admin listener, a Server-Sent Events
 * stream (text/event-stream, WHATWG HTML "Server-sent events") carrying the
 * /stats JSON once a second. The dashboard page (GET /) reads it with
 * EventSource; anything that speaks SSE (curl -N) can too.
 *
 * Cost. One timer for the whole admin listener, never one per client,
 * armed from the start (ct_ops_events_start): each tick sums the workers'
 * counters and renders the JSON once (what one GET /stats costs), keeps it
 * in the history, then sends the same bytes to every stream, one send(2)
 * each when its socket takes them. Workers are not touched (relaxed loads
 * only).
 *
 * History. The last HISTORY snapshots (15 minutes at one a second), the
 * JSON as streamed, in a ring of buffers reused in place (about 3.7 KB
 * each, 3.3 MB in all): GET /history answers them as one JSON array, oldest
 * first, so a page opened now draws its charts at once instead of waiting
 * for two snapshots.
 *
 * Bounds. At most MAX_STREAMS streams (the next one gets 503). A stream is
 * write-only: what its client sends is read and dropped. A client that does
 * not read is closed when a snapshot is due while its output still holds more
 * than MAX_BEHIND snapshots (counted as admin_event_streams_dropped), so a
 * stream holds at most a few snapshots of memory. Its socket's send buffer is
 * made small (SNDBUF) so that "does not read" shows within seconds instead
 * of after megabytes queued in the kernel.
 *
 * Objects (main thread only): struct ct_ops_events, owned by struct ct_ops,
 * owns the timer and the streams; a stream owns its bufferevent (taken over
 * from the admin connection that read the request) and is freed only by
 * stream_close().
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "common/log.h"
#include "http/http.h"
#include "proxy/ctx.h"
#include "proxy/ops/ops_int.h"

#define MAX_STREAMS 256
#define MAX_BEHIND 4           /* snapshots a client may leave unread */
#define SNDBUF (16 * 1024)     /* per stream socket; the kernel doubles it */
#define TICK_MS 1000
#define HISTORY 900            /* snapshots kept: 15 minutes at one a second */
#define WRITE_TIMEOUT_S 30

struct stream {
    unsigned magic;
#define CT_EV_STREAM_MAGIC 0x55e5a7e0u
    struct ct_ops_events *evs;
    struct bufferevent *bev;
    struct stream *next, *prev;
};

struct ct_ops_events {
    unsigned magic;
#define CT_OPS_EVENTS_MAGIC 0x5e7e0e75u
    struct ct_ops *ops;
    struct event *tick;
    struct stream *streams;
    size_t nstreams;
    uint64_t dropped;
    struct ct_buf hist[HISTORY]; /* a ring: the JSON of each snapshot */
    size_t hist_next, hist_n;    /* the slot the next one goes to; how many */
};

static void stream_close(struct stream *st)
{
    struct ct_ops_events *evs = st->evs;
    if (st->prev)
        st->prev->next = st->next;
    else
        evs->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    evs->nstreams--;
    bufferevent_free(st->bev);
    st->magic = 0;
    free(st);
}

/* One SSE event: "data: JSON\n\n" (the JSON is one line; its final newline
 * is dropped, since a line break would end the data field). */
static void frame(struct ct_ops *ops, struct ct_stats_out *out)
{
    ct_stats_out_mem(out, "data: ", 6);
    size_t at = out->len;
    ct_ops_render(ops, true, out);
    while (out->len > at && out->p[out->len - 1] == '\n')
        out->len--;
    ct_stats_out_mem(out, "\n\n", 2);
}

/* Queue P on ST's stream. With nothing pending, one send(2) now: through
 * the bufferevent a write costs two epoll_ctl and a loop turn on top (its
 * write event is added, fires once, and is removed), per stream per
 * second. What the socket does not take goes to the bufferevent's output,
 * written by libevent as usual (with its write timeout). -1: the peer is
 * gone. */
static int send_now(struct stream *st, const char *p, size_t len)
{
    struct evbuffer *o = bufferevent_get_output(st->bev);
    ssize_t n = 0;
    if (evbuffer_get_length(o) == 0) {
        n = send(bufferevent_getfd(st->bev), p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        if (n < 0)
            n = 0;
    }
    if ((size_t)n < len)
        evbuffer_add(o, p + n, len - (size_t)n);
    return 0;
}

/* Keep the JSON of FRAME (a "data: JSON\n\n" event) as the newest snapshot. */
static void remember(struct ct_ops_events *evs, const struct ct_stats_out *frame)
{
    struct ct_buf *b = &evs->hist[evs->hist_next];
    ct_buf_reset(b);
    ct_buf_put(b, frame->p + 6, frame->len - 8); /* between "data: " and "\n\n" */
    evs->hist_next = (evs->hist_next + 1) % HISTORY;
    if (evs->hist_n < HISTORY)
        evs->hist_n++;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct ct_ops_events *evs = arg;
    CT_CHECK_OBJ(evs, CT_OPS_EVENTS_MAGIC);
    struct ct_stats_out out = {0};
    frame(evs->ops, &out);
    remember(evs, &out);
    for (struct stream *st = evs->streams, *next; st; st = next) {
        next = st->next;
        struct evbuffer *o = bufferevent_get_output(st->bev);
        if (evbuffer_get_length(o) > MAX_BEHIND * out.len) {
            evs->dropped++;
            CT_INFO("admin: event stream closed: the client left %zu bytes unread",
                    evbuffer_get_length(o));
            stream_close(st);
            continue;
        }
        if (send_now(st, out.p, out.len) < 0) {
            stream_close(st); /* the client is gone (EPIPE, ECONNRESET) */
            continue;
        }
    }
    ct_stats_out_free(&out);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct stream *st = arg;
    CT_CHECK_OBJ(st, CT_EV_STREAM_MAGIC);
    struct evbuffer *in = bufferevent_get_input(bev);
    evbuffer_drain(in, evbuffer_get_length(in)); /* nothing to read on a stream */
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct stream *st = arg;
    CT_CHECK_OBJ(st, CT_EV_STREAM_MAGIC);
    stream_close(st); /* EOF, error or a write that made no progress */
}

static struct ct_ops_events *events_get(struct ct_ops *ops)
{
    if (ops->events)
        return ops->events;
    struct ct_ops_events *evs = ct_xcalloc(1, sizeof(*evs));
    evs->magic = CT_OPS_EVENTS_MAGIC;
    evs->ops = ops;
    evs->tick = event_new(ops->px->main_base, -1, EV_PERSIST, on_tick, evs);
    ops->events = evs;
    return evs;
}

static void head(struct evbuffer *out, unsigned status, const char *ctype)
{
    char date[CT_HTTP_DATE_LEN + 1];
    ct_http_date_format(time(NULL), date);
    /* No length: the stream ends when the connection does. */
    evbuffer_add_printf(out,
                        "HTTP/1.1 %u %s\r\nServer: cachet\r\nDate: %s\r\nContent-Type: %s\r\n"
                        "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                        status, ct_http_status_reason(status), date, ctype);
}

/* Free BEV once its output is written (the 503 answer). */
static void on_refused_write(struct bufferevent *bev, void *arg)
{
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        bufferevent_free(bev);
}

static void on_refused_event(struct bufferevent *bev, short what, void *arg)
{
    bufferevent_free(bev);
}

void ct_ops_events_add(struct ct_ops *ops, struct bufferevent *bev)
{
    struct ct_ops_events *evs = events_get(ops);
    struct evbuffer *out = bufferevent_get_output(bev);
    if (evs->nstreams >= MAX_STREAMS) {
        static const char body[] = "503 too many event streams\n";
        head(out, 503, "text/plain");
        evbuffer_add(out, body, sizeof(body) - 1);
        bufferevent_disable(bev, EV_READ);
        bufferevent_set_timeouts(bev, NULL, &(struct timeval){WRITE_TIMEOUT_S, 0});
        bufferevent_setcb(bev, NULL, on_refused_write, on_refused_event, NULL);
        return;
    }
    int sndbuf = SNDBUF;
    setsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    struct stream *st = ct_xcalloc(1, sizeof(*st));
    st->magic = CT_EV_STREAM_MAGIC;
    st->evs = evs;
    st->bev = bev;
    st->next = evs->streams;
    if (evs->streams)
        evs->streams->prev = st;
    evs->streams = st;
    evs->nstreams++;
    ct_ops_events_start(ops); /* armed already unless the admin listener came by a reload */
    /* A stream is idle on input by design: only a stalled write times out. */
    bufferevent_set_timeouts(bev, NULL, &(struct timeval){WRITE_TIMEOUT_S, 0});
    bufferevent_setcb(bev, on_read, NULL, on_event, st);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    head(out, 200, "text/event-stream");
    /* The client's reconnect delay, then a first snapshot at once so a page
     * shows figures without waiting for the next tick. */
    evbuffer_add_printf(out, "retry: 2000\n\n");
    struct ct_stats_out snap = {0};
    frame(ops, &snap);
    evbuffer_add(out, snap.p, snap.len);
    ct_stats_out_free(&snap);
}

void ct_ops_events_start(struct ct_ops *ops)
{
    struct ct_ops_events *evs = events_get(ops);
    if (!event_pending(evs->tick, EV_TIMEOUT, NULL))
        event_add(evs->tick, &(struct timeval){TICK_MS / 1000, (TICK_MS % 1000) * 1000});
}

void ct_ops_events_history(struct ct_ops *ops, struct ct_stats_out *body)
{
    struct ct_ops_events *evs = events_get(ops);
    size_t first = (evs->hist_next + HISTORY - evs->hist_n) % HISTORY;
    ct_buf_put_byte(body, '[');
    for (size_t k = 0; k < evs->hist_n; k++) {
        const struct ct_buf *b = &evs->hist[(first + k) % HISTORY];
        if (k)
            ct_buf_put_byte(body, ',');
        ct_buf_put(body, b->p, b->len);
    }
    CT_BUF_LIT(body, "]\n");
}

void ct_ops_events_counts(const struct ct_ops *ops, uint64_t *open, uint64_t *dropped)
{
    *open = ops->events ? ops->events->nstreams : 0;
    *dropped = ops->events ? ops->events->dropped : 0;
}

void ct_ops_events_free(struct ct_ops *ops)
{
    struct ct_ops_events *evs = ops->events;
    if (evs == NULL)
        return;
    CT_CHECK_OBJ(evs, CT_OPS_EVENTS_MAGIC);
    while (evs->streams)
        stream_close(evs->streams);
    for (size_t i = 0; i < HISTORY; i++)
        ct_buf_free(&evs->hist[i]);
    event_free(evs->tick);
    evs->magic = 0;
    free(evs);
    ops->events = NULL;
}
