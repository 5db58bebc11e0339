/*
 * proxy/h1/h1_resp.c: responses from stored objects and our own short answers,
 * as HTTP/1.1 bytes (ct_h1_proto, proxy/core/proto.h).
 *
 * The request path decides what to send (cache_deliver.c: the plan, the
 * range, when the body is all out); this file decides how it looks on an
 * HTTP/1 connection: the status line, Content-Length or chunked framing,
 * Connection, and the per-hit fields (Age, Cache-Status). Nothing here
 * parses a stored header or copies a body: the stored block (status line +
 * fields, rendered once at store time by cache_fill.c) and the body segments
 * go to the client's output by reference, one object reference per handed-out
 * piece (ct_obj_ref), released by libevent when the bytes are gone
 * (ct_obj_release_cb), so the object outlives every evbuffer that points
 * into it. The per-hit fields come from one stack buffer.
 *
 * Fast paths (plain TCP, nothing queued, complete object): one writev(2)
 * straight from the object's memory and the stack, and sendfile(2) for a body
 * kept in a memfd. TLS keeps the evbuffer path, arranged so that a small
 * response is one record.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <time.h>

#include "common/log.h"
#include "proxy/core/core.h"
#include "proxy/core/stored.h"
#include "proxy/core/proto.h"
#include "proxy/h1/h1.h"
#include "proxy/h1/h1_wire.h"
#include "proxy/route/route.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/wire.h"

#define ADD_LIT(out, lit) evbuffer_add((out), (lit), sizeof(lit) - 1)

static struct ct_client *h1(struct ct_req *r) { return CT_CONTAINER_OF(r, struct ct_client, r); }
static struct evbuffer *cout(struct ct_client *c) { return bufferevent_get_output(c->bev); }

static char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

/* Which Connection field the response needs; sets c->resp_close. */
static const char *conn_field(struct ct_client *c, bool force_close)
{
    const struct ct_http_msg *req = c->r.msg;
    c->resp_close = force_close || !req->keep_alive || c->w->draining;
    if (c->resp_close)
        return "Connection: close\r\n";
    return req->version == 10 ? "Connection: keep-alive\r\n" : "";
}

/* Object bytes to the client's output: by reference (one object reference
 * per piece). Under TLS a piece up to one record is copied instead:
 * bufferevent_openssl makes one SSL_write (one record, one send) per buffer
 * piece, so a hit as three referenced pieces cost three records; copied, the
 * head, the per-hit fields and a small body share one. OpenSSL copies while
 * encrypting anyway; big bodies stay by reference. */
#define TLS_COPY_MAX 16384

static void add_ref(struct ct_client *c, struct evbuffer *out, struct ct_obj *obj, const char *p,
                    size_t len)
{
    if (len == 0)
        return;
    if (c->lc->kind == CT_LISTEN_HTTPS && len <= TLS_COPY_MAX)
        evbuffer_add(out, p, len);
    else
        evbuffer_add_reference(out, p, len, ct_obj_release_cb, ct_obj_ref(obj));
}

/* The per-hit fields, built by hand into TAIL (TAIL_MAX bytes): this runs on
 * every hit, and printf's format parsing showed in profiles. Returns the
 * length, the head's final CRLF included. */
#define TAIL_MAX (160 + 96 + 64 + 32 + CT_REQ_CSTATUS_MAX)

static size_t render_tail(struct ct_obj *obj, struct ct_str cstatus, const char *extra,
                          const char *frame, const char *conn, char *tail)
{
    double age = ct_obj_age(obj, ct_time_real());
    size_t ne = strlen(extra), nf = strlen(frame), nc = strlen(conn);
    CT_ASSERT(cstatus.len <= CT_REQ_CSTATUS_MAX && ne < 96 && nf < 64 && nc < 32);
    char *p = tail;
    p = put(p, "Age: ", 5);
    p = ct_put_i64(p, age > 0 ? (int64_t)age : 0);
    p = put(p, "\r\nCache-Status: ", 16);
    p = put(p, cstatus.p, cstatus.len);
    p = put(p, "\r\n", 2);
    p = put(p, extra, ne);
    p = put(p, frame, nf);
    p = put(p, conn, nc);
    p = put(p, "\r\n", 2);
    return (size_t)(p - tail);
}

/* OBJ's stored head (or STATUS_LINE + its fields) and the per-hit fields:
 * Age, Cache-Status, then EXTRA, FRAME and CONN verbatim. */
static void write_head(struct ct_client *c, struct ct_obj *obj, const struct ct_str wire,
                       uint32_t status_len, const char *status_line, struct ct_str cstatus,
                       const char *extra, const char *frame, const char *conn)
{
    struct evbuffer *out = cout(c);
    if (status_line) {
        evbuffer_add(out, status_line, strlen(status_line));
        add_ref(c, out, obj, wire.p + status_len, wire.len - status_len);
    } else {
        add_ref(c, out, obj, wire.p, wire.len);
    }
    char tail[TAIL_MAX];
    evbuffer_add(out, tail, render_tail(obj, cstatus, extra, frame, conn, tail));
}

/* write_head with a route's response rules (proxy/ctx.h): the stored
 * fields they replace or remove are left out (the others still go by
 * reference, in runs), the fields they add follow the stored ones. Rare
 * enough (a route with response_headers) to take the queued path always. */
static void write_head_edited(struct ct_client *c, struct ct_obj *obj, const struct ct_str wire,
                              uint32_t status_len, const char *status_line,
                              struct ct_str cstatus, const char *extra, const char *frame,
                              const char *conn, const struct ct_fwd_edit *e, size_t ne)
{
    struct evbuffer *out = cout(c);
    if (status_line)
        evbuffer_add(out, status_line, strlen(status_line));
    else
        add_ref(c, out, obj, wire.p, status_len);
    const char *p = wire.p + status_len, *end = wire.p + wire.len, *run = p;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *next = eol ? eol + 1 : end;
        const char *colon = memchr(p, ':', (size_t)(next - p));
        if (colon && ct_fwd_edited(e, 0, ne, ct_str_make(p, (size_t)(colon - p)))) {
            if (p > run)
                add_ref(c, out, obj, run, (size_t)(p - run));
            run = next;
        }
        p = next;
    }
    if (end > run)
        add_ref(c, out, obj, run, (size_t)(end - run));
    for (size_t i = 0; i < ne; i++)
        if (ct_fwd_edit_adds(e, i, ne))
            evbuffer_add_printf(out, "%.*s: %.*s\r\n", (int)e[i].name.len, e[i].name.p,
                                (int)e[i].value.len, e[i].value.p);
    char tail[TAIL_MAX];
    evbuffer_add(out, tail, render_tail(obj, cstatus, extra, frame, conn, tail));
}

/* ---- direct writes ------------------------------------------------------------
 *
 * A plain-TCP hit on a complete object with nothing queued before it goes out
 * in one writev(2) straight from the object's memory and the stack: no
 * evbuffer chain, so no allocation, no buffer callback and no drain per hit
 * (three chains cost three mallocs, six callbacks and a drain before). The
 * object cannot change under us (complete = immutable) and writev copies
 * before returning, so no reference is taken for the bytes the socket took.
 * What it did not take is queued as before, in order (the object's bytes by
 * reference, ours copied), and libevent's write event takes over, exactly as
 * ct_io_flush() leaves it (io.c). */
#define DIRECT_IOV 16

struct direct {
    struct iovec iov[DIRECT_IOV];
    bool obj_bytes[DIRECT_IOV]; /* points into the object (else: stack, copied) */
    int n;
};

static void direct_add(struct direct *d, const void *p, size_t len, bool obj_bytes)
{
    if (len == 0)
        return;
    CT_ASSERT(d->n < DIRECT_IOV);
    d->iov[d->n] = (struct iovec){(void *)p, len};
    d->obj_bytes[d->n++] = obj_bytes;
}

struct direct_rest {
    struct ct_client *c;
    struct ct_obj *obj;
    const struct direct *d;
};

/* What the socket did not take: the object's bytes by reference, ours copied. */
static void direct_queue(void *arg, int i, const char *p, size_t len)
{
    struct direct_rest *r = arg;
    if (r->d->obj_bytes[i])
        evbuffer_add_reference(cout(r->c), p, len, ct_obj_release_cb, ct_obj_ref(r->obj));
    else
        evbuffer_add(cout(r->c), p, len);
}

/* The complete body from where the request stands into D's free slots (the
 * rest: the request pumps it). */
static void direct_body(struct ct_client *c, struct direct *d)
{
    struct ct_str chunk;
    while (d->n < DIRECT_IOV && ct_req_obj_next(&c->r, &chunk))
        direct_add(d, chunk.p, chunk.len, true);
}

/* A body kept in a memfd (ct_obj_body_fd) goes out with sendfile(2) once the
 * head left nothing queued: the socket gets references to the object's pages
 * instead of a copy (on loopback the copy into the socket was most of a
 * 100 KiB hit's time). What it does not take, the request's pump queues by
 * reference as for any body. Plain TCP only: TLS must encrypt in user space. */
static void direct_sendfile(struct ct_client *c, int fd, off_t base)
{
    if (evbuffer_get_length(cout(c)) > 0)
        return;
    int sock = ct_io_fd(&c->io);
    uint64_t off0, left;
    while ((left = ct_req_obj_left(&c->r, &off0)) > 0) {
        off_t off = base + (off_t)off0;
        size_t want = (size_t)CT_MIN(left, (uint64_t)(1u << 30));
        ssize_t k = sendfile(sock, fd, &off, want);
        if (k <= 0)
            return; /* full (EAGAIN) or failing: the pump queues the rest, libevent reports */
        ct_req_obj_sent(&c->r, (uint64_t)k);
    }
}

/* ---- struct ct_proto ------------------------------------------------------------- */

static void h1_deliver_head(struct ct_req *r, struct ct_obj *obj, const struct ct_resp_plan *p)
{
    struct ct_client *c = h1(r);
    struct ct_stored_blk blk;
    struct ct_str wire;
    CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
    char frame[64] = "";
    struct ct_fwd_edit edits[CT_FWD_EDITS_MAX];
    char ebuf[2048];
    size_t ned = 0;
    if (CT_UNLIKELY(r->route && r->route->conf &&
                    (r->route->nresp_rules || r->route->conf->strip_set_cookie)))
        ned = ct_req_route_resp_edits(r, edits, ebuf, sizeof(ebuf));
    if (p->from_origin) { /* framing decided for the origin's response (fetch.c) */
        if (c->resp_chunked)
            snprintf(frame, sizeof(frame), "Transfer-Encoding: chunked\r\n");
        else if (p->length_field)
            snprintf(frame, sizeof(frame), "Content-Length: %llu\r\n",
                     (unsigned long long)p->len);
        if (ned)
            write_head_edited(c, obj, wire, blk.status_len, NULL, p->cache_status, "", frame,
                              conn_field(c, c->resp_close), edits, ned);
        else
            write_head(c, obj, wire, blk.status_len, NULL, p->cache_status, "", frame,
                       conn_field(c, c->resp_close));
        return;
    }
    bool head_only = r->msg->method == CT_METHOD_HEAD;
    bool streaming = p->len == UINT64_MAX;
    bool force_close = p->close;
    bool send_body = p->body && !head_only;
    if (send_body && streaming) {
        /* Length unknown yet: chunked for HTTP/1.1, close-delimited for 1.0. */
        if (r->msg->version == 11)
            snprintf(frame, sizeof(frame), "Transfer-Encoding: chunked\r\n");
        else
            force_close = true;
    } else if (p->length_field) {
        char *q = put(frame, "Content-Length: ", 16);
        q = ct_put_i64(q, (int64_t)p->len);
        put(q, "\r\n", 3); /* with the NUL */
    }
    c->obj_chunked = send_body && streaming && r->msg->version == 11;
    char extra[96] = "";
    if (p->content_range[0])
        snprintf(extra, sizeof(extra), "Content-Range: %s\r\n", p->content_range);
    struct evbuffer *out = cout(c);
    if (c->lc->kind == CT_LISTEN_HTTPS) {
        /* One contiguous piece for the whole small response: one record. */
        size_t body = send_body && p->len <= TLS_COPY_MAX ? (size_t)p->len : 0;
        evbuffer_expand(out, wire.len + 512 + body);
    }
    char line[64];
    size_t line_len = 0;
    if (p->own_status)
        line_len = (size_t)snprintf(line, sizeof(line), "HTTP/1.1 %u %s\r\n", p->status,
                                    ct_http_status_reason(p->status));
    const char *conn = conn_field(c, force_close);
    if (ned) {
        write_head_edited(c, obj, wire, blk.status_len, p->own_status ? line : NULL,
                          p->cache_status, extra, frame, conn, edits, ned);
        return;
    }
    if (ct_obj_state(obj) != CT_OBJ_COMPLETE || !ct_io_can_write_now(&c->io)) {
        write_head(c, obj, wire, blk.status_len, p->own_status ? line : NULL, p->cache_status,
                   extra, frame, conn);
        return;
    }
    struct direct dw = {.n = 0};
    char tail[TAIL_MAX];
    if (p->own_status) {
        direct_add(&dw, line, line_len, false);
        direct_add(&dw, wire.p + blk.status_len, wire.len - blk.status_len, true);
    } else {
        direct_add(&dw, wire.p, wire.len, true);
    }
    direct_add(&dw, tail, render_tail(obj, p->cache_status, extra, frame, conn, tail), false);
    off_t base = 0;
    int bfd = send_body && !c->obj_chunked && ct_req_obj_at_start(&c->r)
                  ? ct_obj_body_fd(obj, &base)
                  : -1;
    if (send_body && bfd < 0)
        direct_body(c, &dw);
    struct direct_rest rest = {c, obj, &dw};
    ct_io_writev(&c->io, dw.iov, dw.n, direct_queue, &rest);
    if (bfd >= 0)
        direct_sendfile(c, bfd, base);
}

static void h1_send_obj_piece(struct ct_req *r, struct ct_obj *obj, struct ct_str s)
{
    struct ct_client *c = h1(r);
    struct evbuffer *out = cout(c);
    if (c->obj_chunked) {
        char line[24];
        int k = snprintf(line, sizeof(line), "%zx\r\n", s.len);
        evbuffer_add(out, line, (size_t)k);
    }
    add_ref(c, out, obj, s.p, s.len);
    if (c->obj_chunked)
        ADD_LIT(out, "\r\n");
}

static void h1_send_obj_end(struct ct_req *r)
{
    struct ct_client *c = h1(r);
    if (c->obj_chunked)
        ct_fwd_body_end(cout(c));
    c->obj_chunked = false;
}

static void h1_send_synth(struct ct_req *r, unsigned status, struct ct_str body,
                          struct ct_str cstatus)
{
    struct ct_client *c = h1(r);
    bool head = r->msg->method == CT_METHOD_HEAD;
    /* a route's answer may come before the request body was read: the
     * connection cannot be reused then (those bytes are no next request) */
    bool unread = ct_http_msg_body_expected(r->msg) && !r->body_done;
    struct ct_str ctype = r->synth_ctype.len ? r->synth_ctype : CT_STR("text/plain");
    char date[CT_HTTP_DATE_LEN + 1];
    ct_req_date(r, time(NULL), date); /* the worker's copy; a cacheless worker has none */
    evbuffer_add_printf(cout(c),
                        "HTTP/1.1 %u %s\r\nServer: cachet\r\nDate: %s\r\n"
                        "Content-Type: %.*s\r\nContent-Length: %zu\r\n",
                        status, ct_http_status_reason(status),
                        date, (int)ctype.len, ctype.p, body.len);
    if (r->synth_location.len)
        evbuffer_add_printf(cout(c), "Location: %.*s\r\n", (int)r->synth_location.len,
                            r->synth_location.p);
    if (r->synth_retry_after.len)
        evbuffer_add_printf(cout(c), "Retry-After: %.*s\r\n", (int)r->synth_retry_after.len,
                            r->synth_retry_after.p);
    evbuffer_add_printf(cout(c), "Cache-Status: %.*s\r\n%s\r\n", (int)cstatus.len, cstatus.p,
                        conn_field(c, unread));
    if (!head && body.len)
        evbuffer_add(cout(c), body.p, body.len);
}

/* The socket may take it all at once: then no write event would ever come
 * to resume the request, so it goes on. Otherwise libevent writes the rest
 * and the write callback at the low mark resumes it. */
static bool h1_output_full(struct ct_req *r)
{
    struct ct_client *c = h1(r);
    struct evbuffer *out = cout(c);
    if (evbuffer_get_length(out) < CT_BP_HIGH)
        return false;
    ct_io_flush(&c->io);
    return evbuffer_get_length(out) >= CT_BP_LOW;
}

static void h1_flush(struct ct_req *r) { ct_io_flush(&h1(r)->io); }

/* A bodiless request: let the parser reach its END now, so the connection
 * can take the next request when we answer without the origin. */
static bool h1_body_finish(struct ct_req *r)
{
    struct ct_client *c = h1(r);
    size_t n;
    if (ct_fwd_pump(c->rp, bufferevent_get_input(c->bev), NULL, false, &n) != CT_HTTP_EV_END)
        return false;
    r->body_done = true;
    return true;
}

/* ---- responses from the origin ------------------------------------------------ */

/* RFC 9112 §6.3: a close-delimited or chunked body goes to an HTTP/1.1 client
 * chunked (we know its end), to an HTTP/1.0 client close-delimited. */
static bool h1_frame_response(struct ct_req *r, const struct ct_http_msg *resp)
{
    struct ct_client *c = h1(r);
    const struct ct_http_msg *req = r->msg;
    bool no_body = req->method == CT_METHOD_HEAD || resp->framing == CT_FRAME_NONE;
    c->resp_chunked = false;
    /* A request body still unread would be taken for the next request. */
    c->resp_close = !req->keep_alive || !r->body_done || c->w->draining;
    if (!no_body && (resp->framing == CT_FRAME_CHUNKED || resp->framing == CT_FRAME_CLOSE)) {
        if (req->version == 11)
            c->resp_chunked = true;
        else
            c->resp_close = true;
    }
    return c->resp_close;
}

static enum ct_h1_conn conn_of(const struct ct_client *c)
{
    return c->resp_close ? CT_H1_CONN_CLOSE
           : c->r.msg->version == 10 ? CT_H1_CONN_KEEP_ALIVE_10
                                     : CT_H1_CONN_KEEP;
}

/* Direct response: when the whole body of a Content-Length response is
 * already in the upstream's input (a small response: one read) and nothing
 * is queued for the client, the head (rendered on the stack) and the body
 * (where the read put it) leave in one writev: no evbuffer chain for the
 * head, no chain moved, no drain of the client's output. The parser then
 * only consumes the body bytes (r->body_with_head: no sink). What the socket
 * does not take is copied to the client's output, in order, and libevent's
 * write event takes over (as after ct_io_flush). Not for a response the
 * cache stores (the body goes to the object first), nor chunked or
 * close-delimited ones. */
#define DIRECT_BODY_IOV 8
#define DIRECT_HEAD 4096

/* The body's pieces in V (N at most), or -1: not a direct response. */
static int origin_body_iov(struct ct_client *c, const struct ct_http_msg *msg, bool no_body,
                           struct iovec *v, int n)
{
    if (c->resp_chunked || !ct_io_can_write_now(&c->io))
        return -1;
    if (no_body)
        return 0;
    if (msg->framing != CT_FRAME_LENGTH || msg->content_length > CT_BP_HIGH)
        return -1;
    size_t len = (size_t)msg->content_length;
    struct evbuffer *in = bufferevent_get_input(ct_upstream_bev(c->r.u));
    if (len == 0)
        return 0;
    if (evbuffer_get_length(in) < len)
        return -1;
    struct evbuffer_iovec ev[DIRECT_BODY_IOV];
    int k = evbuffer_peek(in, (ev_ssize_t)len, NULL, ev, CT_MIN(n, DIRECT_BODY_IOV));
    if (k <= 0 || k > CT_MIN(n, DIRECT_BODY_IOV))
        return -1;
    size_t left = len;
    for (int i = 0; i < k; i++) {
        size_t take = CT_MIN(left, ev[i].iov_len);
        v[i] = (struct iovec){ev[i].iov_base, take};
        left -= take;
    }
    CT_ASSERT(left == 0);
    return k;
}

static void h1_send_head(struct ct_req *r, const struct ct_http_msg *msg,
                         const struct ct_fwd_resp_extra *extra, bool body_direct)
{
    struct ct_client *c = h1(r);
    bool no_body = r->msg->method == CT_METHOD_HEAD || msg->framing == CT_FRAME_NONE;
    enum ct_h1_conn conn = conn_of(c);
    struct ct_fwd_edit edits[CT_FWD_EDITS_MAX];
    char ebuf[2048];
    struct ct_fwd_resp_extra x;
    if (extra && r->route && r->route->conf &&
        (x = *extra, x.nedits = ct_req_route_resp_edits(r, edits, ebuf, sizeof(ebuf))) > 0) {
        x.edits = edits; /* a route's response_headers */
        extra = &x;
    }
    struct iovec v[1 + DIRECT_BODY_IOV];
    int nb = body_direct ? origin_body_iov(c, msg, no_body, v + 1, DIRECT_BODY_IOV) : -1;
    if (nb < 0) {
        ct_h1_response_head(cout(c), msg, c->resp_chunked, conn, extra);
        return;
    }
    char head[DIRECT_HEAD];
    size_t hlen = ct_h1_response_head_buf(cout(c), head, sizeof(head), msg, false, conn, extra);
    if (hlen == 0)
        return; /* the head went to the output: the body follows as usual */
    v[0] = (struct iovec){head, hlen};
    ct_io_writev(&c->io, v, nb + 1, NULL, NULL); /* the rest copied: the input is drained */
    r->body_with_head = true;
}

/* 1xx go to HTTP/1.1 clients and never to HTTP/1.0 ones (RFC 9110 §15.2). */
static void h1_send_interim(struct ct_req *r, const struct ct_http_msg *resp)
{
    if (r->msg->version == 11)
        ct_h1_response_head(cout(h1(r)), resp, false, CT_H1_CONN_INTERIM, NULL);
}

static void h1_send_continue(struct ct_req *r)
{
    struct ct_client *c = h1(r);
    if (r->msg->version != 11 || c->sent_continue)
        return;
    ADD_LIT(cout(c), "HTTP/1.1 100 Continue\r\n\r\n");
    ct_io_flush(&c->io);
    c->sent_continue = true;
}

static struct evbuffer *h1_body_out(struct ct_req *r, bool *chunked)
{
    struct ct_client *c = h1(r);
    *chunked = c->resp_chunked;
    return cout(c);
}

static void h1_send_body(struct ct_req *r, struct evbuffer *src, size_t n)
{
    struct ct_client *c = h1(r);
    ct_fwd_body(cout(c), src, n, c->resp_chunked);
}

static void h1_send_end(struct ct_req *r)
{
    struct ct_client *c = h1(r);
    if (c->resp_chunked)
        ct_fwd_body_end(cout(c));
    ct_io_flush(&c->io);
}

static void h1_respond(struct ct_req *r) { ct_client_set_state(h1(r), CT_CS_SEND); }

/* The client has its (stale) answer while this request refreshes the
 * object: do not read, so its EOF does not end the refresh; reading resumes
 * with its next request (enter_read_head), after the refresh. */
static void h1_answered(struct ct_req *r) { ct_io_read(&h1(r)->io, false); }

static void h1_done(struct ct_req *r) { ct_client_response_done(h1(r)); }

static void h1_fail(struct ct_req *r, enum ct_close why) { ct_client_req_fail(h1(r), why); }

const struct ct_proto ct_h1_proto = {
    .name = "http/1.1",
    .deliver_head = h1_deliver_head,
    .send_obj_piece = h1_send_obj_piece,
    .send_obj_end = h1_send_obj_end,
    .send_synth = h1_send_synth,
    .output_full = h1_output_full,
    .flush = h1_flush,
    .body_finish = h1_body_finish,
    .frame_response = h1_frame_response,
    .send_head = h1_send_head,
    .send_interim = h1_send_interim,
    .send_continue = h1_send_continue,
    .body_out = h1_body_out,
    .send_body = h1_send_body,
    .send_end = h1_send_end,
    .tunnel = ct_h1_tunnel,
    .body_read = ct_h1_body_read,
    .body_hold = ct_h1_body_hold,
    .respond = h1_respond,
    .answered = h1_answered,
    .done = h1_done,
    .fail = h1_fail,
};
