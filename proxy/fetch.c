/*
 * proxy/fetch.c: the request path after a head is read, Varnish's req FSM
 * in miniature:
 *
 *   recv -> lookup -> { hit -> deliver | miss/pass -> fetch -> deliver }
 *
 * The cache (#5) slots in at lookup(); until it lands everything is a pass.
 * fetch: lend an upstream (pooled or new), write the request head, stream the
 * request body (de-chunked by the parser, re-chunked by us), parse the
 * response with the response parser, pass 1xx through, write the response
 * head, stream the body with back-pressure both ways, and hand the upstream
 * back to the pool when both messages are complete.
 *
 * Back-pressure (le-proxy): a source stops being read when the sink's output
 * passes CT_BP_HIGH; the sink's write callback (fired at CT_BP_LOW) resumes
 * it and processes what is already buffered (no read event would come for it).
 *
 * Expect: 100-continue (RFC 9110 §10.1.1): cachet answers "100 Continue"
 * itself once the origin connection is ready, i.e. when we are about to read
 * the body, and does not forward the expectation (nginx does the same). An
 * origin's own 100 is then not passed on (the client already has one); other
 * 1xx (102, 103) go to HTTP/1.1 clients and never to HTTP/1.0 ones (§15.2).
 *
 * Any call into client.c that can end the client (ct_client_fail,
 * ct_client_response_done) is the last thing a function here does with C.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <sys/uio.h>

#include "common/log.h"
#include "proxy/cache_int.h"
#include "proxy/admin.h"
#include "proxy/proto.h"
#include "proxy/proxy_int.h"
#include "proxy/tls.h"

static void pump_request(struct ct_client *c);
static void upstream_ready(void *owner);
static void upstream_readable(void *owner);
static void upstream_drained(void *owner);
static void upstream_closed(void *owner, enum ct_close why);

static const struct ct_upstream_owner upstream_owner = {
    .ready = upstream_ready,
    .readable = upstream_readable,
    .drained = upstream_drained,
    .closed = upstream_closed,
};
static void tunnel_up(struct ct_client *c);
static void tunnel_down(struct ct_client *c);

static struct evbuffer *cout(struct ct_client *c) { return bufferevent_get_output(c->bev); }
static struct evbuffer *cin(struct ct_client *c) { return bufferevent_get_input(c->bev); }
static struct evbuffer *uout(struct ct_client *c)
{
    return bufferevent_get_output(ct_upstream_bev(c->r.u));
}
static struct evbuffer *uin(struct ct_client *c)
{
    return bufferevent_get_input(ct_upstream_bev(c->r.u));
}

/* Over the high mark: write what the socket takes now. True if that brought
 * the output under the low mark (go on); false if the rest is queued with
 * libevent, whose write callback (at the low mark) will resume the source.
 * Pausing without this flush could wait for a write callback that never
 * comes: a direct write may empty the output at once. */
static bool drained(struct ct_io *io)
{
    ct_io_flush(io);
    return evbuffer_get_length(bufferevent_get_output(io->bev)) < CT_BP_LOW;
}

static bool body_expected(const struct ct_http_msg *m)
{
    return m->framing == CT_FRAME_CHUNKED ||
           (m->framing == CT_FRAME_LENGTH && m->content_length > 0);
}

static void fetch_connect(struct ct_client *c, bool fresh)
{
    enum ct_close why;
    if (ct_upstream_acquire(c->w, &upstream_owner, c, fresh, &c->r.u, &why) != CT_OK) {
        ct_client_fail(c, why);
        return;
    }
    ct_ops_upstream(c, CT_STATS_BE_upstream_requests);
    if (!ct_upstream_is_reused(c->r.u))
        ct_ops_upstream(c, CT_STATS_BE_upstream_connections);
    if (ct_upstream_is_connected(c->r.u))
        upstream_ready(c);
}

/* Which step the request takes after its head. */
enum step { STEP_FETCH, STEP_DELIVER };

static enum step lookup(struct ct_client *c)
{
    /* HIT/STALE deliver from the object, BUSY waits on it, PURGE is answered
     * (cache_req.c); MISS and pass fetch (cache_fill.c stores). */
    return ct_cache_recv(c) ? STEP_DELIVER : STEP_FETCH;
}

void ct_fetch_start(struct ct_client *c)
{
    CT_ASSERT(c->state == CT_CS_FETCH && c->r.msg != NULL && c->r.u == NULL);
    /* recv: CONNECT asks a forward proxy for a tunnel; a reverse proxy has
     * no business opening one to wherever the client names (RFC 9110 §9.3.6:
     * a server may refuse). Everything else goes on. */
    if (c->r.msg->method == CT_METHOD_CONNECT) {
        ct_client_fail(c, CT_CLOSE_METHOD);
        return;
    }
    if (body_expected(c->r.msg))
        ct_client_body_clock(c, true);
    switch (lookup(c)) {
    case STEP_FETCH:
        fetch_connect(c, false);
        return;
    case STEP_DELIVER:
        return; /* the cache has the request */
    }
}

static void upstream_ready(void *owner)
{
    struct ct_client *c = owner;
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    const struct ct_http_msg *req = c->r.msg;
    const struct ct_backend_addr *ba = ct_upstream_backend(c->r.u);
    struct ct_fwd_req fr = {
        .msg = ct_cache_fwd_msg(c),
        .peer_ip = ct_str_make(c->peer, c->peer_ip_len),
        .https = ct_cache_client_https(c), /* a background refresh: its trigger's */
        .chunked_body = req->framing == CT_FRAME_CHUNKED,
        .default_host = ct_str_c(ba->name),
    };
    char subject[512];
    if (c->lc->subject_header.len) {
        /* mTLS: the verified subject, never a client-supplied one. */
        fr.extra_name = c->lc->subject_header;
        int n = ct_tls_peer_subject(bufferevent_openssl_get_ssl(c->bev), subject, sizeof(subject));
        if (n > 0)
            fr.extra_value = ct_str_make(subject, (size_t)n);
    }
    ct_http_parser_set_request_method(ct_upstream_parser(c->r.u), req->method);
    ct_fwd_request_head(ct_upstream_io(c->r.u), &fr);
    if (req->expect_continue && body_expected(req))
        c->r.proto->send_continue(&c->r);
    if (c->r.body_done) {
        ct_upstream_request_sent(c->r.u); /* a retry: the body was empty */
        ct_io_flush(ct_upstream_io(c->r.u));
    } else {
        pump_request(c);
    }
}

/* Stream the request body: client input -> parser -> upstream output.
 * Returns false if the client failed (C may be gone). */
static bool pump_request_body(struct ct_client *c)
{
    struct evbuffer *in = cin(c);
    struct evbuffer *out = uout(c);
    bool chunked = c->r.msg->framing == CT_FRAME_CHUNKED;
    const struct ct_conf_limits *lim = &c->w->cf->limits;

    uint64_t bytes0 = c->r.body_bytes;
    while (!c->r.body_done) {
        if (evbuffer_get_length(out) >= CT_BP_HIGH && !drained(ct_upstream_io(c->r.u))) {
            c->r.body_paused = true; /* the upstream's on_write resumes us */
            ct_io_read(&c->io, false);
            ct_client_body_pause(c, true); /* the origin's slowness, not the client's */
            return true;
        }
        size_t n, before = evbuffer_get_length(in);
        enum ct_http_ev ev = ct_fwd_pump(c->rp, in, out, chunked, &n);
        switch (ev) {
        case CT_HTTP_EV_BODY:
            c->r.body_bytes += n;
            break;
        case CT_HTTP_EV_MORE:
            if (evbuffer_get_length(in) == 0 || evbuffer_get_length(in) == before) {
                /* Need bytes from the client; a stalled body gets 408, and
                 * so does one trickled past its deadline. */
                c->r.body_paused = false;
                ct_io_timeouts(&c->io, lim->client_header_timeout_ms, lim->send_timeout_ms);
                ct_io_read(&c->io, true);
                if (c->r.body_bytes != bytes0)
                    ct_client_body_clock(c, false);
                return true;
            }
            break;
        case CT_HTTP_EV_END:
            c->r.body_done = true;
            ct_client_body_clock(c, false); /* stops it */
            if (chunked)
                ct_fwd_body_end(out);
            if (body_expected(c->r.msg)) /* the body clock stops */
                ct_io_timeouts(&c->io, 0, lim->send_timeout_ms);
            ct_upstream_request_sent(c->r.u);
            return true;
        case CT_HTTP_EV_ERROR:
            ct_client_fail(c, CT_CLOSE_RX_BAD);
            return false;
        case CT_HTTP_EV_HEAD:
            CT_WRONG("a request head inside a request body");
        }
    }
    return true;
}

static void pump_request(struct ct_client *c)
{
    if (c->r.u == NULL || !ct_upstream_is_connected(c->r.u))
        return; /* the body waits in the client's buffers for the connection */
    if (pump_request_body(c))
        ct_io_flush(ct_upstream_io(c->r.u));
}

void ct_fetch_client_readable(struct ct_client *c)
{
    if (c->state == CT_CS_TUNNEL) {
        tunnel_up(c);
        return;
    }
    if (!c->r.body_done)
        pump_request(c);
}

/* ---- the response ------------------------------------------------------------ */

static void tunnel_start(struct ct_client *c, const struct ct_http_msg *msg)
{
    ct_fwd_response_head(cout(c), msg, false, CT_RESP_UPGRADE, NULL);
    c->r.head_sent = true;
    c->r.status = msg->status;
    ct_client_set_state(c, CT_CS_TUNNEL);
    ct_upstream_tunnel(c->r.u);
    ct_io_timeouts(&c->io, 0, 0);
    ct_io_read(&c->io, true);
    tunnel_down(c);
    tunnel_up(c);
}

/* A final response head: the protocol frames it; the cache may answer
 * instead (a stored object, stale-if-error) or adds its part. */
static void final_head(struct ct_client *c, const struct ct_http_msg *msg)
{
    bool close = c->r.proto->frame_response(&c->r, msg);
    c->r.up_keep_alive = msg->keep_alive && msg->framing != CT_FRAME_CLOSE;
    struct ct_fwd_resp_extra extra;
    c->r.body_with_head = false;
    struct evbuffer *scratch;
    if (!ct_cache_resp_head(c, msg, close, &extra))
        c->r.proto->send_head(&c->r, msg, &extra,
                              !ct_cache_filling(c) &&
                                  ct_cache_body_sink(c, &scratch) == CT_SINK_CLIENT);
    c->r.head_sent = true;
    c->r.status = msg->status;
    ct_client_set_state(c, CT_CS_SEND);
    ct_upstream_head_received(c->r.u, msg->status);
}

static void response_end(struct ct_client *c)
{
    ct_cache_resp_end(c);
    c->r.proto->send_end(&c->r);
    ct_upstream_release(&c->r.u, c->r.up_keep_alive && c->r.body_done);
    ct_client_response_done(c);
}

static void upstream_readable(void *owner)
{
    struct ct_client *c = owner;
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    if (c->state == CT_CS_TUNNEL) {
        tunnel_down(c);
        return;
    }
    struct ct_http_parser *p = ct_upstream_parser(c->r.u);
    struct evbuffer *in = uin(c);
    if (evbuffer_get_length(in) > 0)
        c->r.up_got_byte = true;
    for (;;) {
        if (c->state == CT_CS_SEND &&
            !ct_cache_filling(c) && /* a fill reads on: its waiters must not wait for us */
            c->r.proto->output_full(&c->r)) {
            c->r.up_paused = true; /* on_write resumes us at the low mark */
            ct_io_read(ct_upstream_io(c->r.u), false);
            return;
        }
        size_t n, before = evbuffer_get_length(in);
        struct evbuffer *sink = NULL;
        bool chunked = false, to_client = false;
        if (c->state == CT_CS_SEND && !c->r.body_with_head) {
            switch (ct_cache_body_sink(c, &sink)) {
            case CT_SINK_CLIENT: /* moved there, framed as the protocol says */
                sink = c->r.proto->body_out(&c->r, &chunked);
                to_client = true;
                break;
            case CT_SINK_CACHE: /* the object first (ct_cache_resp_body) */
                break;
            case CT_SINK_DROP:
                sink = NULL;
                break;
            }
        }
        enum ct_http_ev ev = ct_fwd_pump(p, in, sink, chunked, &n);
        switch (ev) {
        case CT_HTTP_EV_MORE:
            if (evbuffer_get_length(in) == 0 || evbuffer_get_length(in) == before) {
                ct_io_flush(&c->io);
                return;
            }
            break;
        case CT_HTTP_EV_HEAD: {
            const struct ct_http_msg *msg = ct_http_parser_msg(p);
            if (c->state != CT_CS_FETCH) {
                ct_client_fail(c, CT_CLOSE_ORIGIN_BAD);
                return;
            }
            if (msg->status == 101) {
                if (!c->r.msg->upgrade) {
                    ct_upstream_mark_failed(c->r.u, CT_CONF_FAIL_INVALID);
                    ct_client_fail(c, CT_CLOSE_ORIGIN_BAD);
                    return;
                }
                tunnel_start(c, msg);
                return;
            }
            if (msg->status < 200) {
                if (msg->status != 100) /* the client has ours (send_continue) */
                    c->r.proto->send_interim(&c->r, msg);
            }
            else
                final_head(c, msg);
            break;
        }
        case CT_HTTP_EV_BODY:
            /* To the client (not a discarded or background fill)? */
            if (ct_cache_resp_body(c, n) || to_client || c->r.body_with_head)
                c->r.body_out += n;
            break;
        case CT_HTTP_EV_END:
            if (c->state == CT_CS_SEND) {
                response_end(c);
                return;
            }
            break; /* the end of a 1xx: the final response follows */
        case CT_HTTP_EV_ERROR:
            ct_ops_upstream(c, CT_STATS_BE_upstream_errors);
            if (c->state == CT_CS_FETCH)
                ct_upstream_mark_failed(c->r.u, CT_CONF_FAIL_INVALID);
            ct_client_fail(c, c->state == CT_CS_FETCH ? CT_CLOSE_ORIGIN_BAD
                                                      : CT_CLOSE_ORIGIN_TRUNC);
            return;
        }
    }
}

/* Retry once on a new connection: a refused connect (nothing was sent) on
 * the next backend; or (RFC 9110 §9.2.2) a reused connection that failed
 * before any response byte, for an idempotent method only. Never once a
 * request body byte was consumed: we could not replay it. */
static bool may_retry(const struct ct_client *c, enum ct_close why)
{
    if (c->r.retries != 0 || c->r.body_bytes != 0)
        return false;
    /* Refused: nothing was sent, any method may go to the next backend (as
     * nginx's proxy_next_upstream error); the one that refused counts a
     * failure for passive health. */
    if (why == CT_CLOSE_ORIGIN_CONNECT)
        return c->w->nbe > 1; /* the worker's own set: a reload swaps px's on the main thread */
    return why == CT_CLOSE_ORIGIN_RESET && ct_upstream_is_reused(c->r.u) && !c->r.up_got_byte &&
           (ct_http_method_flags(c->r.msg->method) & CT_METHOD_IDEMPOTENT) != 0;
}

static void upstream_closed(void *owner, enum ct_close why)
{
    struct ct_client *c = owner;
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    switch (c->state) {
    case CT_CS_FETCH:
        if (may_retry(c, why)) {
            ct_ops_upstream(c, CT_STATS_BE_upstream_retries);
            ct_upstream_release(&c->r.u, false);
            c->r.retries++;
            fetch_connect(c, true);
            return;
        }
        if (why == CT_CLOSE_ORIGIN_RESET)
            ct_upstream_mark_failed(c->r.u, CT_CONF_FAIL_RESET);
        ct_ops_upstream(c, why == CT_CLOSE_ORIGIN_TIMEOUT ? CT_STATS_BE_upstream_timeouts
                                                          : CT_STATS_BE_upstream_errors);
        ct_client_fail(c, why);
        return;
    case CT_CS_SEND:
        /* A close-delimited body ends here; any other body is truncated. */
        if (why == CT_CLOSE_ORIGIN_RESET &&
            ct_http_parser_eof(ct_upstream_parser(c->r.u)) == CT_HTTP_EV_END) {
            c->r.up_keep_alive = false;
            response_end(c);
            return;
        }
        ct_ops_upstream(c, why == CT_CLOSE_ORIGIN_TIMEOUT ? CT_STATS_BE_upstream_timeouts
                                                          : CT_STATS_BE_upstream_errors);
        ct_client_fail(c, why == CT_CLOSE_ORIGIN_TIMEOUT ? why : CT_CLOSE_ORIGIN_TRUNC);
        return;
    case CT_CS_TUNNEL:
        ct_client_finish(c, CT_CLOSE_TUNNEL_DONE); /* flush what the origin sent */
        return;
    default:
        CT_WRONG("upstream event for a client that holds no upstream");
    }
}

/* ---- resuming after back-pressure ------------------------------------------------ */

void ct_fetch_client_drained(struct ct_client *c)
{
    if (ct_cache_client_drained(c))
        return;
    if (c->r.u == NULL || !c->r.up_paused)
        return;
    c->r.up_paused = false;
    ct_io_read(ct_upstream_io(c->r.u), true);
    upstream_readable(c);
}

static void upstream_drained(void *owner)
{
    struct ct_client *c = owner;
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    if (!c->r.body_paused)
        return;
    c->r.body_paused = false;
    if (c->state == CT_CS_TUNNEL) {
        ct_io_read(&c->io, true);
        tunnel_up(c);
    } else if (!c->r.body_done) {
        ct_client_body_pause(c, false);
        pump_request(c);
    }
}

/* ---- tunnel ------------------------------------------------------------------ */

static void tunnel_up(struct ct_client *c)
{
    evbuffer_add_buffer(uout(c), cin(c));
    if (!drained(ct_upstream_io(c->r.u))) {
        c->r.body_paused = true;
        ct_io_read(&c->io, false);
    }
}

static void tunnel_down(struct ct_client *c)
{
    evbuffer_add_buffer(cout(c), uin(c));
    if (!drained(&c->io)) {
        c->r.up_paused = true;
        ct_io_read(ct_upstream_io(c->r.u), false);
    }
}
