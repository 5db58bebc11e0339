/*
 * proxy/core/fetch.c: the protocol's entry into the request core (req.h:
 * start, body readable, drained, free), the steps recv, route, pass, fill
 * and done (req_step.h), and the fetch from the origin.
 *
 * The fetch: lend an upstream (pooled or new), write the request head, stream the
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
 * The request reaches its client only through r->proto (proxy/core/proto.h): no
 * connection, no HTTP/1 bytes here. Any call that can end the request
 * (proto->done, proto->fail) is the last thing a function does with R.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <sys/uio.h>

#include "common/log.h"
#include "proxy/core/cache_derive.h"
#include "proxy/core/cache_int.h"
#include "proxy/balance/balance.h"
#include "proxy/core/core.h"
#include "proxy/core/proto.h"
#include "proxy/core/req.h"
#include "proxy/net/net.h"
#include "proxy/upstream/upstream.h"
#include "proxy/route/route.h"
#include "proxy/upstream/wire.h"
#include "proxy/core/fleet_step.h"
#include "tls/tls.h"

static void pump_request(struct ct_req *r);
static void upstream_ready(void *owner);
static void upstream_readable(void *owner);
static void upstream_drained(void *owner);
static void upstream_closed(void *owner, enum ct_close why);
/* Hand FROM's fetch (its upstream, wherever the exchange is) to TO, which
 * carries on as if it had made it; then fetch_resume(TO) reads on what the
 * upstream holds already. */
static void fetch_move(struct ct_req *from, struct ct_req *to);
static void fetch_resume(struct ct_req *r);

static const struct ct_upstream_owner upstream_owner = {
    .ready = upstream_ready,
    .readable = upstream_readable,
    .drained = upstream_drained,
    .closed = upstream_closed,
};

static struct evbuffer *uout(struct ct_req *r) { return bufferevent_get_output(ct_upstream_bev(r->u)); }
static struct evbuffer *uin(struct ct_req *r) { return bufferevent_get_input(ct_upstream_bev(r->u)); }

static struct ct_req *req_of(void *owner)
{
    struct ct_req *r = owner;
    CT_CHECK_OBJ(r, CT_REQ_MAGIC);
    return r;
}

/* A buffered request body (body_buffer) goes. */
static void body_buf_free(struct ct_req *r)
{
    if (r->body_buf) {
        evbuffer_free(r->body_buf);
        r->body_buf = NULL;
    }
}

/* The request failed: stale-if-error may still answer it from the cache. */
static void req_fail(struct ct_req *r, enum ct_close why)
{
    body_buf_free(r); /* the exchange may go on (a stale answer, a 502 with keep-alive) */
    if (why == CT_CLOSE_ORIGIN_TRUNC && ct_cache_unhold(r))
        why = CT_CLOSE_ORIGIN_CUT; /* a held Range: the client has no byte yet */
    if (ct_req_failing(r, why))
        return;
    r->proto->fail(r, why);
}

/* The value of cookie NAME in R's Cookie fields, or false. */
static bool cookie_of(const struct ct_http_msg *m, struct ct_str name, struct ct_str *value)
{
    for (const struct ct_http_field *f = ct_http_msg_find(m, CT_HDR_COOKIE, NULL); f;
         f = ct_http_msg_find(m, CT_HDR_COOKIE, f)) {
        const char *p = f->value.p, *end = p + f->value.len;
        while (p < end) {
            while (p < end && *p == ' ')
                p++;
            const char *e = memchr(p, ';', (size_t)(end - p));
            e = e ? e : end;
            const char *eq = memchr(p, '=', (size_t)(e - p));
            if (eq && ct_str_eq(ct_str_make(p, (size_t)(eq - p)), name)) {
                *value = ct_str_make(eq + 1, (size_t)(e - eq - 1));
                return true;
            }
            p = e + 1;
        }
    }
    return false;
}

/* Which group serves R (its route's) and, for a hashing group, R's key:
 * the cache key, a header's or cookie's value, or the client address. */
static void pick_of(const struct ct_req *r, struct ct_upstream_pick *pick)
{
    const struct ct_conf *cf = r->w->cf;
    pick->group = ct_req_route_group(r);
    pick->key = 0;
    pick->host = CT_STR_NULL;
    const struct ct_http_field *hf = ct_http_msg_find(r->msg, CT_HDR_HOST, NULL);
    if (hf) { /* a TLS backend's `server_name = "$host"`: the name without its port */
        const char *colon = memchr(hf->value.p, ':', hf->value.len);
        if (hf->value.len == 0 || hf->value.p[0] != '[')
            pick->host = ct_str_make(hf->value.p, colon ? (size_t)(colon - hf->value.p)
                                                        : hf->value.len);
    }
    const struct ct_conf_group *g = ct_conf_group_at(cf, pick->group);
    if (g->balance != CT_CONF_BALANCE_HASH)
        return;
    struct ct_str v = CT_STR_NULL;
    const struct ct_http_field *f;
    switch (g->hash_on) {
    case CT_CONF_HASH_HEADER:
        if ((f = ct_http_msg_find_name(r->msg, ct_str_c(g->hash_name), NULL)))
            v = f->value;
        break;
    case CT_CONF_HASH_COOKIE: (void)cookie_of(r->msg, ct_str_c(g->hash_name), &v); break;
    case CT_CONF_HASH_CLIENT: v = ct_req_client(r); break;
    case CT_CONF_HASH_KEY: break;
    }
    if (v.p) {
        pick->key = ct_balance_hash(v.p, v.len);
        return;
    }
    /* the key: host and target, as the cache keys them (what is absent
     * from the others hashes here too) */
    const struct ct_http_field *host = ct_http_msg_find(r->msg, CT_HDR_HOST, NULL);
    uint64_t h = host ? ct_balance_hash(host->value.p, host->value.len) : 0;
    pick->key = h ^ ct_balance_hash(r->msg->target.p, r->msg->target.len);
}

static void fetch_connect(struct ct_req *r, bool fresh)
{
    enum ct_close why;
    struct ct_upstream_pick pick;
    pick_of(r, &pick);
    ct_req_fleet_pick(r, &pick);
    if (ct_upstream_acquire(r->w, &upstream_owner, r, &pick, fresh, &r->u, &why) != CT_OK) {
        req_fail(r, why);
        return;
    }
    ct_req_log_upstream(r, CT_STATS_BE_upstream_requests);
    if (!ct_upstream_is_reused(r->u))
        ct_req_log_upstream(r, CT_STATS_BE_upstream_connections);
    if (ct_upstream_is_connected(r->u))
        upstream_ready(r);
}

void ct_req_start(struct ct_req *r)
{
    CT_CHECK_OBJ(r, CT_REQ_MAGIC);
    CT_ASSERT(r->msg != NULL && r->u == NULL);
    r->phase = CT_RP_FETCH;
    r->trail = 0;
    ct_req_goto(r, CT_STEP_RECV);
    ct_req_run(r);
}

/* ---- the steps this file owns (req_step.h) ------------------------------------ */

enum ct_req_next ct_step_recv(struct ct_req *r)
{
    /* CONNECT asks a forward proxy for a tunnel; a reverse proxy has no
     * business opening one to wherever the client names (RFC 9110 §9.3.6:
     * a server may refuse). */
    if (r->msg->method == CT_METHOD_CONNECT) {
        r->proto->fail(r, CT_CLOSE_METHOD);
        return CT_REQ_GONE;
    }
    /* a peer's fetch is never forwarded to an owner again; without a fleet
     * the request's fleet flags are as its carrier zeroed them */
    if (CT_UNLIKELY(r->w->cf->fleet.self != NULL))
        ct_req_fleet_recv(r);
    ct_req_goto(r, CT_STEP_ROUTE);
    return CT_REQ_MORE;
}

enum ct_req_next ct_step_route(struct ct_req *r)
{
    /* A route's own answer (redirect, fixed response, 403) is sent from
     * route_step.c at once: its texts live in its stack. */
    if (ct_req_route(r))
        return CT_REQ_GONE;
    ct_req_goto(r, CT_STEP_CACHE);
    return CT_REQ_MORE;
}

/* Request-body buffering (limits.request_buffer; nginx's
 * proxy_request_buffering, HAProxy's http-buffer-request): a body that fits
 * is read whole before the origin is asked, so the origin gets the request
 * in one piece, a slow uploader holds no origin connection, and a body the
 * protocol finds malformed on the way (HTTP/2: longer or shorter than its
 * content-length, RFC 9113 §8.1.1; HTTP/1.1: cut short, a bad chunk) never
 * reaches it. A body whose content-length is over the buffer, or that turns
 * out larger, is streamed from there on; the protocols keep a malformed one
 * from looking complete to the origin (HTTP/2 holds back the byte that
 * completes the content-length until END_STREAM, the last chunk is written
 * only at the body's end) and a failed request never gives its origin
 * connection back. Not for Expect: 100-continue, which asks for the origin's
 * verdict before the body is sent. */
enum body_go { BODY_GO, BODY_WAIT, BODY_GONE };

static enum body_go body_buffer(struct ct_req *r)
{
    size_t cap = (size_t)r->w->cf->limits.request_buffer_bytes;
    const struct ct_http_msg *req = r->msg;
    if (r->body_done || cap == 0 || !ct_http_msg_body_expected(req) || req->expect_continue ||
        (req->framing == CT_FRAME_LENGTH && req->content_length > cap))
        return BODY_GO;
    if (r->body_buf == NULL)
        r->body_buf = evbuffer_new();
    bool chunked = req->framing == CT_FRAME_CHUNKED;
    while (evbuffer_get_length(r->body_buf) < cap) {
        size_t n = 0;
        switch (r->proto->body_read(r, r->body_buf, chunked, &n)) {
        case CT_BODY_DATA: r->body_bytes += n; break;
        case CT_BODY_NEED: return BODY_WAIT; /* ct_req_body_readable() comes back here */
        case CT_BODY_END:
            r->body_done = true;
            if (chunked)
                ct_fwd_body_end(r->body_buf);
            return BODY_GO;
        case CT_BODY_ERROR:
            body_buf_free(r);
            r->proto->fail(r, CT_CLOSE_RX_BAD);
            return BODY_GONE;
        }
    }
    return BODY_GO; /* larger than the buffer: the rest streams */
}

/* PASS and FILL start the upstream's machine: its events carry R on (once
 * the body is buffered, if it is). */
enum ct_req_next ct_step_pass(struct ct_req *r)
{
    CT_ASSERT(r->phase == CT_RP_FETCH && r->u == NULL);
    switch (body_buffer(r)) {
    case BODY_GONE: return CT_REQ_GONE;
    case BODY_WAIT: return CT_REQ_PARK;
    case BODY_GO: break;
    }
    fetch_connect(r, false);
    return CT_REQ_PARK;
}

enum ct_req_next ct_step_fill(struct ct_req *r)
{
    if (r->u) { /* a background request handed a fetch (ct_fetch_adopt): read on */
        fetch_resume(r);
        return CT_REQ_PARK;
    }
    return ct_step_pass(r);
}

/* Answered; what ends the request (the fetch's end, the protocol) is an
 * event of its own. */
enum ct_req_next ct_step_done(struct ct_req *r)
{
    (void)r;
    return CT_REQ_PARK;
}

void ct_req_free(struct ct_req *r)
{
    body_buf_free(r);
    if (r->u)
        ct_fetch_adopt(r); /* a fill others may read goes on without its client */
    ct_req_route_release(r); /* after: an adopted fill keeps the route's group */
    ct_creq_free(&r->cr);
    if (r->u)
        ct_upstream_release(&r->u, false);
}

static void upstream_ready(void *owner)
{
    struct ct_req *r = req_of(owner);
    const struct ct_http_msg *req = r->msg;
    const struct ct_backend_addr *ba = ct_upstream_backend(r->u);
    r->up_tls = ct_upstream_tls_version(r->u); /* the access log's utls= and uts= */
    r->up_tls_resumed = ct_upstream_tls_resumed(r->u);
    struct ct_fwd_req fr = {
        .msg = ct_cache_fwd_msg(r),
        .peer_ip = ct_str_make(r->peer, r->peer_ip_len),
        .https = ct_req_https(r), /* a background refresh: its trigger's */
        .chunked_body = req->framing == CT_FRAME_CHUNKED,
        .default_host = ct_str_c(ba->name),
    };
    char subject[512];
    if (r->lc->subject_header.len) {
        /* mTLS: the verified subject, never a client-supplied one. */
        fr.extra_name = r->lc->subject_header;
        int n = r->tls ? ct_tls_peer_subject(r->tls, subject, sizeof(subject)) : 0;
        if (n > 0)
            fr.extra_value = ct_str_make(subject, (size_t)n);
    }
    struct ct_fwd_edit edits[17]; /* a route's 16, the fleet's hop header */
    char ebuf[2048];
    if (r->route && r->route->conf) {
        fr.edits = edits;
        fr.nedits = ct_req_route_edits(r, false, edits, CT_ARRAY_LEN(edits) - 1, ebuf, sizeof(ebuf));
        fr.strip_cookie = r->route->conf->strip_cookie;
    }
    if (ct_req_fleet_edit(r, &edits[fr.nedits])) {
        fr.edits = edits;
        fr.nedits++;
    }
    ct_http_parser_set_request_method(ct_upstream_parser(r->u), req->method);
    ct_fwd_request_head(ct_upstream_io(r->u), &fr);
    r->tsent = ct_time_mono(); /* a fill's cost starts here (ct_req_fetch_us) */
    if (req->expect_continue && ct_http_msg_body_expected(req))
        r->proto->send_continue(r);
    if (r->body_buf) { /* buffered: it goes with the head */
        evbuffer_add_buffer(uout(r), r->body_buf);
        body_buf_free(r);
    }
    if (r->body_done) {
        ct_upstream_request_sent(r->u); /* a buffered body, or a retry: the body was empty */
        ct_io_flush(ct_upstream_io(r->u));
    } else {
        pump_request(r);
    }
}

/* Stream the request body: the protocol's body source -> upstream output.
 * Returns false if the request failed (R may be gone). */
static bool pump_request_body(struct ct_req *r)
{
    struct evbuffer *out = uout(r);
    bool chunked = r->msg->framing == CT_FRAME_CHUNKED;
    while (!r->body_done) {
        if (evbuffer_get_length(out) >= CT_BP_HIGH && !ct_io_flush_under_low(ct_upstream_io(r->u))) {
            r->body_paused = true; /* the upstream's drained hook resumes us */
            r->proto->body_hold(r, true); /* the origin's slowness, not the client's */
            return true;
        }
        size_t n = 0;
        switch (r->proto->body_read(r, out, chunked, &n)) {
        case CT_BODY_DATA:
            r->body_bytes += n;
            break;
        case CT_BODY_NEED:
            r->body_paused = false;
            return true;
        case CT_BODY_END:
            r->body_done = true;
            if (chunked)
                ct_fwd_body_end(out);
            ct_upstream_request_sent(r->u);
            return true;
        case CT_BODY_ERROR:
            r->proto->fail(r, CT_CLOSE_RX_BAD);
            return false;
        }
    }
    return true;
}

static void pump_request(struct ct_req *r)
{
    if (r->u == NULL || !ct_upstream_is_connected(r->u))
        return; /* the body waits in the protocol's buffers for the connection */
    if (pump_request_body(r))
        ct_io_flush(ct_upstream_io(r->u));
}

void ct_req_body_readable(struct ct_req *r)
{
    if (r->u == NULL && r->body_buf != NULL) { /* buffering (ct_step_pass) */
        if (body_buffer(r) == BODY_GO)
            fetch_connect(r, false);
        return;
    }
    if (!r->body_done && !r->body_paused)
        pump_request(r);
}

/* ---- the response ------------------------------------------------------------ */

/* A final response head: the protocol frames it; the cache may answer
 * instead (a stored object, stale-if-error) or adds its part. */
static void final_head(struct ct_req *r, const struct ct_http_msg *msg)
{
    bool close = r->proto->frame_response(r, msg);
    r->up_keep_alive = msg->keep_alive && msg->framing != CT_FRAME_CLOSE;
    struct ct_fwd_resp_extra extra;
    r->body_with_head = false;
    struct evbuffer *scratch;
    r->up_status = msg->status;
    if (!ct_cache_resp_head(r, msg, close, &extra)) {
        r->proto->send_head(r, msg, &extra,
                            !ct_cache_filling(r) &&
                                ct_cache_body_sink(r, &scratch) == CT_SINK_CLIENT);
        r->fwd_head = true;
        r->status = msg->status;
    } else if (r->status == 0) {
        /* the cache answers from an object (a revalidated hit, a fill):
         * its delivery set what the client got; until then, the origin's */
        r->status = msg->status;
    }
    r->head_sent = true;
    if (r->phase == CT_RP_FETCH)
        ct_req_respond(r);
    ct_upstream_head_received(r->u, msg->status);
}

static void response_end(struct ct_req *r)
{
    ct_cache_resp_end(r);
    if (r->fwd_head)
        r->proto->send_end(r);
    else
        r->proto->flush(r);
    ct_upstream_release(&r->u, r->up_keep_alive && r->body_done);
    r->proto->done(r);
}

static void upstream_readable(void *owner)
{
    struct ct_req *r = req_of(owner);
    struct ct_http_parser *p = ct_upstream_parser(r->u);
    struct evbuffer *in = uin(r);
    if (evbuffer_get_length(in) > 0)
        r->up_got_byte = true;
    for (;;) {
        bool sending = r->phase == CT_RP_SEND;
        if (sending &&
            !ct_cache_filling(r) && /* a fill reads on: its waiters must not wait for us */
            r->proto->output_full(r)) {
            r->up_paused = true; /* ct_req_drained resumes us at the low mark */
            ct_io_read(ct_upstream_io(r->u), false);
            return;
        }
        size_t n, before = evbuffer_get_length(in);
        struct evbuffer *sink = NULL;
        bool chunked = false, to_client = false;
        if (sending && !r->body_with_head) {
            switch (ct_cache_body_sink(r, &sink)) {
            case CT_SINK_CLIENT: /* moved there, framed as the protocol says */
                sink = r->proto->body_out(r, &chunked);
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
                r->proto->flush(r);
                return;
            }
            break;
        case CT_HTTP_EV_HEAD: {
            const struct ct_http_msg *msg = ct_http_parser_msg(p);
            if (r->phase != CT_RP_FETCH) {
                req_fail(r, CT_CLOSE_ORIGIN_BAD);
                return;
            }
            if (msg->status == 101) {
                if (!r->msg->upgrade || !r->proto->tunnel(r, msg)) {
                    ct_upstream_mark_failed(r->u, CT_CONF_FAIL_INVALID);
                    r->proto->fail(r, CT_CLOSE_ORIGIN_BAD);
                    return;
                }
                r->phase = CT_RP_TUNNEL; /* the protocol's from now on */
                return;
            }
            if (msg->status < 200) {
                if (msg->status != 100) /* the client has ours (send_continue) */
                    r->proto->send_interim(r, msg);
            }
            else {
                final_head(r, msg);
                if (ct_fetch_detach(r))
                    return; /* the fill reads on by itself (cache_bg.c); R reads the object */
            }
            break;
        }
        case CT_HTTP_EV_BODY:
            /* To the client (not a discarded or background fill)? */
            if (ct_cache_resp_body(r, n) || to_client || r->body_with_head)
                r->body_out += n;
            break;
        case CT_HTTP_EV_END:
            if (r->phase == CT_RP_SEND) {
                response_end(r);
                return;
            }
            break; /* the end of a 1xx: the final response follows */
        case CT_HTTP_EV_ERROR:
            ct_req_log_upstream(r, CT_STATS_BE_upstream_errors);
            if (r->phase == CT_RP_FETCH)
                ct_upstream_mark_failed(r->u, CT_CONF_FAIL_INVALID);
            req_fail(r, r->phase == CT_RP_FETCH ? CT_CLOSE_ORIGIN_BAD : CT_CLOSE_ORIGIN_TRUNC);
            return;
        }
    }
}

/* Retry once on a new connection: a refused connect (nothing was sent) on
 * the next backend; or (RFC 9110 §9.2.2) a reused connection that failed
 * before any response byte, for an idempotent method only. Never once a
 * request body byte was consumed: we could not replay it. */
static bool may_retry(const struct ct_req *r, enum ct_close why)
{
    if (r->retries != 0 || r->body_bytes != 0)
        return false;
    /* Refused: nothing was sent, any method may go to the next backend (as
     * nginx's proxy_next_upstream error); the one that refused counts a
     * failure for passive health. */
    if (why == CT_CLOSE_ORIGIN_CONNECT)
        return r->w->nbe > 1; /* the worker's own set: a reload swaps px's on the main thread */
    /* A TLS failure (a certificate, a name) would fail again on the same
     * backend: only another one of the group may do better. */
    if (why == CT_CLOSE_ORIGIN_TLS)
        return ct_upstream_other_live(r->u);
    return why == CT_CLOSE_ORIGIN_RESET && ct_upstream_is_reused(r->u) && !r->up_got_byte &&
           (ct_http_method_flags(r->msg->method) & CT_METHOD_IDEMPOTENT) != 0;
}

static void upstream_closed(void *owner, enum ct_close why)
{
    struct ct_req *r = req_of(owner);
    switch (r->phase) {
    case CT_RP_FETCH:
        if (ct_req_fleet_failed(r, why)) { /* the owner is down: the origin, once */
            ct_req_log_upstream(r, why == CT_CLOSE_ORIGIN_TIMEOUT ? CT_STATS_BE_upstream_timeouts
                                                              : CT_STATS_BE_upstream_errors);
            ct_upstream_release(&r->u, false);
            fetch_connect(r, true);
            return;
        }
        if (may_retry(r, why)) {
            ct_req_log_upstream(r, CT_STATS_BE_upstream_retries);
            ct_upstream_release(&r->u, false);
            r->retries++;
            fetch_connect(r, true);
            return;
        }
        if (why == CT_CLOSE_ORIGIN_RESET)
            ct_upstream_mark_failed(r->u, CT_CONF_FAIL_RESET);
        ct_req_log_upstream(r, why == CT_CLOSE_ORIGIN_TIMEOUT ? CT_STATS_BE_upstream_timeouts
                                                          : CT_STATS_BE_upstream_errors);
        req_fail(r, why);
        return;
    case CT_RP_SEND:
        /* A close-delimited body ends here; any other body is truncated. */
        if (why == CT_CLOSE_ORIGIN_RESET &&
            ct_http_parser_eof(ct_upstream_parser(r->u)) == CT_HTTP_EV_END) {
            r->up_keep_alive = false;
            response_end(r);
            return;
        }
        ct_req_log_upstream(r, why == CT_CLOSE_ORIGIN_TIMEOUT ? CT_STATS_BE_upstream_timeouts
                                                          : CT_STATS_BE_upstream_errors);
        req_fail(r, why == CT_CLOSE_ORIGIN_TIMEOUT ? why : CT_CLOSE_ORIGIN_TRUNC);
        return;
    case CT_RP_IDLE:
    case CT_RP_TUNNEL:
        CT_WRONG("upstream event for a request that does not own it");
    }
}

/* ---- fills that outlive their client (Varnish's busyobj) ------------------------ */
/* Can R's fetch go on as a request of its own? It fills an object (the
 * store's fetch slot) that other readers may be waiting on, its request is
 * all sent (fills are GETs: no body), and either its response head is not
 * in yet, or it was stored. DETACH (R stays, reading the object): only if
 * R reads the object like any reader (cr->self); a fill of unknown length
 * feeds its client itself until the end (cache_fill.c says why). */
static bool adoptable(const struct ct_req *r, bool detach)
{
    const struct ct_creq *cr = r->cr;
    if (cr == NULL || cr->fill == NULL || cr->bg || r->u == NULL || !r->body_done)
        return false;
    if (r->phase == CT_RP_FETCH)
        return r->step == CT_STEP_FILL;
    return r->phase == CT_RP_SEND && cr->store_ok && (cr->self || !detach);
}

static bool adopt(struct ct_req *r, bool detach)
{
    if (!adoptable(r, detach))
        return false;
    struct ct_wcache *wc = r->w->wc;
    if (wc->nbg >= CT_CACHE_BG_MAX) {
        CT_INFO("w%u c%llu %s: %u background fetches in flight: %.*s is not filled on", r->w->id,
                (unsigned long long)r->conn_id, r->peer, wc->nbg, (int)r->msg->target.len,
                r->msg->target.p);
        return false;
    }
    struct ct_req *br = ct_bg_new(r);
    if (br == NULL)
        return false;
    struct ct_creq *cr = r->cr, *bc = br->cr;
    bc->fill = cr->fill;
    bc->stale = cr->stale;
    cr->fill = cr->stale = NULL;
    bc->store_ok = cr->store_ok;
    bc->validate = cr->validate;
    bc->fwd_kind = cr->fwd_kind;
    bc->req_time = cr->req_time;
    bc->cs = cr->cs;
    /* an encoded fill's encoder goes with it (issue 18), and what it made
     * that nobody has taken yet */
    bc->enc = cr->enc;
    cr->enc = NULL;
    bc->ae_class = cr->ae_class;
    if (bc->enc) {
        if (bc->zbuf == NULL)
            bc->zbuf = evbuffer_new();
        if (bc->scratch == NULL)
            bc->scratch = evbuffer_new();
        if (cr->zbuf)
            evbuffer_add_buffer(bc->zbuf, cr->zbuf);
    }
    cr->store_ok = cr->self = false;
    r->fwd_head = false; /* nothing more from the origin for R */
    fetch_move(r, br);
    ct_bg_run(br); /* reads on from the next loop turn */
    CT_DEBUG("w%u c%llu %s: the fill of %.*s goes on as a request of its own", r->w->id,
             (unsigned long long)r->conn_id, r->peer, (int)r->msg->target.len, r->msg->target.p);
    return true;
}

bool ct_fetch_adopt(struct ct_req *r) { return adopt(r, false); }

bool ct_fetch_detach(struct ct_req *r)
{
    if (r->phase != CT_RP_SEND || !adopt(r, true))
        return false;
    if (r->step == CT_STEP_DONE)
        ct_req_finish(r); /* its answer had no body to wait for (304, 416) */
    return true;
}

static void fetch_move(struct ct_req *from, struct ct_req *to)
{
    CT_ASSERT(from->u != NULL && to->u == NULL);
    to->u = from->u;
    from->u = NULL;
    ct_upstream_set_owner(to->u, &upstream_owner, to);
    to->phase = from->phase;
    to->retries = from->retries;
    to->head_sent = from->head_sent;
    to->status = from->status;
    to->up_keep_alive = from->up_keep_alive;
    to->up_got_byte = from->up_got_byte;
    to->tup = from->tup;
    to->tsent = from->tsent; /* the adopted fill's cost goes on */
    if (from->up_paused) { /* paused for FROM's output, which TO does not share */
        from->up_paused = false;
        ct_io_read(ct_upstream_io(to->u), true);
    }
}

static void fetch_resume(struct ct_req *r)
{
    /* Not connected yet: upstream_ready() sends the request when it is. */
    if (r->u && ct_upstream_is_connected(r->u))
        upstream_readable(r);
}

/* ---- resuming after back-pressure ------------------------------------------------ */

void ct_req_drained(struct ct_req *r)
{
    /* a decoded delivery (DECODE), else a stored one (STREAM), else the
     * origin's body */
    if (r->cr && r->cr->derive ? ct_cache_derive_drained(r) : ct_cache_client_drained(r))
        return;
    if (r->u == NULL || !r->up_paused)
        return;
    r->up_paused = false;
    ct_io_read(ct_upstream_io(r->u), true);
    upstream_readable(r);
}

static void upstream_drained(void *owner)
{
    struct ct_req *r = req_of(owner);
    if (!r->body_paused)
        return;
    r->body_paused = false;
    if (!r->body_done) {
        r->proto->body_hold(r, false);
        pump_request(r);
    }
}

static bool origin_error(enum ct_close why)
{
    return why == CT_CLOSE_NO_BACKEND || why == CT_CLOSE_ORIGIN_CONNECT ||
           why == CT_CLOSE_ORIGIN_TLS ||
           why == CT_CLOSE_ORIGIN_TIMEOUT ||
           why == CT_CLOSE_ORIGIN_RESET || why == CT_CLOSE_ORIGIN_BAD ||
           why == CT_CLOSE_ORIGIN_TRUNC;
}

bool ct_req_failing(struct ct_req *r, enum ct_close why)
{
    struct ct_creq *cr = r->cr;
    if (cr == NULL)
        return false;
    if (!origin_error(why))
        ct_fetch_adopt(r); /* the client's failure is not the fill's: it goes on */
    if (cr->fill) { /* never stored, never complete: readers see it truncated */
        ct_obj_fail(cr->fill);
        ct_obj_release(&cr->fill);
    }
    if (cr->bg && origin_error(why)) {
        /* The client already has its (stale) answer, or left its fill
         * behind (ct_fetch_detach): a refresh or a fill, both in the
         * background now, failed. */
        CT_WARN("w%u c%llu %s: background fetch of %.*s failed: %s", r->w->id,
                (unsigned long long)r->conn_id, r->peer, (int)r->msg->target.len, r->msg->target.p,
                ct_close_text(why));
        cr->bg = false;
        if (r->u)
            ct_upstream_release(&r->u, false);
        if (r->phase == CT_RP_FETCH)
            ct_req_respond(r);
        r->head_sent = true;
        ct_req_finish(r);
        return true;
    }
    if (cr->stale && !cr->validate && !r->head_sent && r->phase == CT_RP_FETCH &&
        origin_error(why) &&
        ct_req_sie_ok(r, cr->stale, ct_time_real())) {
        if (r->u)
            ct_upstream_release(&r->u, false);
        cr->cs = CT_STATS_CS_STALE;
        struct ct_obj *stale = cr->stale;
        cr->stale = NULL;
        ct_req_to_deliver(r, stale, CT_STR("cachet; hit; detail=stale-if-error"));
        ct_req_run(r);
        return true;
    }
    return false;
}
