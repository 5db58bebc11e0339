/*
 * proxy/cache_deliver.c: a response from a stored object (issue 5's hit path).
 *
 * Nothing here parses a stored header or copies a body: the stored block
 * (status line + fields, rendered once by cache_fill.c) and the body
 * segments go to the client's output by reference, one object reference per
 * handed-out piece (ct_obj_ref), released by libevent when the bytes are gone
 * (ct_obj_release_cb), so the object outlives every evbuffer that points into
 * it. Per hit we write Age (RFC 9111 §4.2.3 current_age; Date is the stored
 * one, the origin's), Cache-Status
 * (RFC 9211), the framing and Connection, from one stack buffer.
 *
 * From a complete 200 we also answer the client's conditionals (304, RFC 9110
 * §13.2.2) and a single byte range (206 / 416, RFC 9110 §14); HEAD gets the
 * head of the stored GET.
 *
 * From an object still filling (a coalesced waiter), the body streams: add
 * what is there, register a one-shot waiter for more (cache_req.c routes the
 * wake to this worker), stop at CT_BP_HIGH bytes queued and resume from the
 * drained callback. A failed fetch ends the client's message truncated.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/uio.h>

#include "common/log.h"
#include "proxy/cache_int.h"

#define STREAM_PIECE (256 * 1024)

static struct evbuffer *cout(struct ct_client *c) { return bufferevent_get_output(c->bev); }

static char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

/* Two digits per division (three numbers per hit: Age, ttl, length). */
char *ct_cache_put_i64(char *p, int64_t v)
{
    static const char pairs[201] = "000102030405060708091011121314151617181920212223242526272829"
                                   "303132333435363738394041424344454647484950515253545556575859"
                                   "606162636465666768697071727374757677787980818283848586878889"
                                   "90919293949596979899";
    char tmp[24];
    char *e = tmp + sizeof(tmp), *q = e;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--q = pairs[d + 1];
        *--q = pairs[d];
    }
    if (u >= 10) {
        *--q = pairs[u * 2 + 1];
        *--q = pairs[u * 2];
    } else {
        *--q = (char)('0' + u);
    }
    if (v < 0)
        *p++ = '-';
    memcpy(p, q, (size_t)(e - q));
    return p + (e - q);
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

static void add_piece(struct ct_client *c, struct evbuffer *out, struct ct_obj *obj, struct ct_str s,
                      bool chunked)
{
    if (chunked) {
        char line[24];
        int k = snprintf(line, sizeof(line), "%zx\r\n", s.len);
        evbuffer_add(out, line, (size_t)k);
    }
    add_ref(c, out, obj, s.p, s.len);
    if (chunked)
        evbuffer_add(out, "\r\n", 2);
}

/* Add what cr->obj has after cr->pos to the output, by reference, within
 * the range (cr->skip bytes dropped first, cr->body_left at most). Returns
 * END (the body or the range is all queued), WAIT (nothing more yet),
 * FAILED, or DATA: stopped with CT_BP_HIGH bytes queued (only with BP). */
static enum ct_obj_body pump(struct ct_client *c, bool bp)
{
    struct ct_creq *cr = c->r.cr;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    for (;;) {
        if (cr->body_left == 0)
            return CT_OBJ_BODY_END;
        if (bp && evbuffer_get_length(out) >= CT_BP_HIGH) {
            /* The socket may take it all at once: then no write event would
             * ever come to resume us, so go on. Otherwise libevent writes
             * the rest and ct_cache_client_drained() resumes us. */
            ct_io_flush(&c->io);
            if (evbuffer_get_length(out) >= CT_BP_LOW)
                return CT_OBJ_BODY_DATA;
        }
        uint64_t want = cr->body_left == UINT64_MAX ? STREAM_PIECE : cr->skip + cr->body_left;
        size_t max = want < STREAM_PIECE ? (size_t)want : STREAM_PIECE;
        struct ct_str chunk;
        enum ct_obj_body r = ct_obj_body_next(cr->obj, &cr->pos, max, &chunk);
        if (r != CT_OBJ_BODY_DATA)
            return r;
        size_t k = (size_t)CT_MIN((uint64_t)chunk.len, cr->skip);
        cr->skip -= k;
        chunk = ct_str_make(chunk.p + k, chunk.len - k);
        if (chunk.len == 0)
            continue;
        add_piece(c, out, cr->obj, chunk, cr->chunked);
        c->r.body_out += chunk.len; /* access log $body_bytes_sent */
        if (cr->body_left != UINT64_MAX)
            cr->body_left -= chunk.len;
    }
}

/* One single-range "bytes=" spec against LEN bytes (RFC 9110 §14.1.2).
 * 0: no usable range (serve 200); 1: [*first, *last]; -1: unsatisfiable. */
static int parse_range(struct ct_str v, uint64_t len, uint64_t *first, uint64_t *last)
{
    static const struct ct_str unit = CT_STR("bytes=");
    if (v.len <= unit.len || !ct_str_eq_ci(ct_str_make(v.p, unit.len), unit))
        return 0;
    struct ct_str spec = ct_str_trim_ows(ct_str_make(v.p + unit.len, v.len - unit.len));
    const char *dash = memchr(spec.p, '-', spec.len);
    if (dash == NULL || memchr(spec.p, ',', spec.len))
        return 0; /* malformed, or several ranges: the whole thing (allowed) */
    struct ct_str a = ct_str_make(spec.p, (size_t)(dash - spec.p));
    struct ct_str b = ct_str_make(dash + 1, spec.len - a.len - 1);
    uint64_t x, y;
    if (a.len == 0) { /* suffix: the last N bytes */
        if (ct_str_to_u64(b, UINT64_MAX, &y) != CT_OK)
            return 0;
        if (y == 0 || len == 0)
            return -1;
        *first = len > y ? len - y : 0;
        *last = len - 1;
        return 1;
    }
    if (ct_str_to_u64(a, UINT64_MAX, &x) != CT_OK)
        return 0;
    if (b.len == 0)
        y = UINT64_MAX;
    else if (ct_str_to_u64(b, UINT64_MAX, &y) != CT_OK || y < x)
        return 0;
    if (x >= len)
        return -1;
    *first = x;
    *last = y >= len ? len - 1 : y;
    return 1;
}

/* If-Range (RFC 9110 §13.1.5): a strong ETag equal to ours, or our exact
 * Last-Modified date; anything else: send the whole representation. */
static bool if_range_ok(const struct ct_http_msg *req, const struct ct_obj *obj)
{
    const struct ct_http_field *f = ct_http_msg_find(req, CT_HDR_IF_RANGE, NULL);
    if (f == NULL)
        return true;
    if (f->value.len && (f->value.p[0] == '"' || f->value.p[0] == 'W'))
        return ct_cache_etag_match(f->value, ct_obj_etag(obj), false);
    struct ct_str lm = ct_obj_last_modified(obj);
    return lm.len && ct_str_eq(lm, f->value);
}

struct dl {
    unsigned status;     /* the status line we send */
    bool own_line;       /* not the stored one (304, 206, 416) */
    bool body;
    uint64_t first, len; /* body range */
    char extra[96];      /* Content-Range */
};

/* What to send for REQ from the complete or streaming OBJ (§4.3.2, Range). */
static void plan(struct ct_client *c, struct ct_obj *obj, const struct ct_cache_blk *blk,
                 struct dl *d)
{
    const struct ct_http_msg *req = c->r.msg;
    bool complete = ct_obj_state(obj) == CT_OBJ_COMPLETE;
    unsigned st = ct_obj_status(obj);
    /* A filling object with a Content-Length knows its length already. */
    uint64_t len = complete ? ct_obj_body_len(obj) : blk->length;
    *d = (struct dl){.status = st, .len = len, .body = st != 204 && st != 304};
    if (st != 200)
        return;
    struct ct_cache_validators v = {.etag = ct_obj_etag(obj),
                                    .last_modified = ct_obj_last_modified(obj),
                                    .response_time = blk->fresh.response_time};
    if (ct_cache_policy_cond(req, &v) == 304) {
        d->status = 304;
        d->own_line = true;
        d->body = false;
        return;
    }
    const struct ct_http_field *rf = ct_http_msg_find(req, CT_HDR_RANGE, NULL);
    if (req->method != CT_METHOD_GET || rf == NULL || len == UINT64_MAX || !if_range_ok(req, obj))
        return;
    uint64_t a, b;
    int r = parse_range(rf->value, len, &a, &b);
    if (r == 0)
        return;
    d->own_line = true;
    if (r < 0) {
        d->status = 416;
        d->body = false;
        d->len = 0;
        snprintf(d->extra, sizeof(d->extra), "Content-Range: bytes */%llu\r\n",
                 (unsigned long long)len);
        return;
    }
    d->status = 206;
    d->first = a;
    d->len = b - a + 1;
    snprintf(d->extra, sizeof(d->extra), "Content-Range: bytes %llu-%llu/%llu\r\n",
             (unsigned long long)a, (unsigned long long)b, (unsigned long long)len);
}

/* The per-hit fields, built by hand into TAIL (TAIL_MAX bytes): this runs on
 * every hit, and printf's format parsing showed in profiles. Returns the
 * length, the head's final CRLF included. */
#define TAIL_MAX (160 + 96 + 64 + 32 + sizeof(((struct ct_creq *)0)->cstatus_buf))

static size_t render_tail(struct ct_client *c, struct ct_obj *obj, struct ct_str cstatus,
                          const char *extra, const char *frame, const char *conn, char *tail)
{
    double age = ct_obj_age(obj, ct_time_real());
    size_t ne = strlen(extra), nf = strlen(frame), nc = strlen(conn);
    CT_ASSERT(cstatus.len <= sizeof(((struct ct_creq *)0)->cstatus_buf) && ne < 96 && nf < 64 &&
              nc < 32);
    char *p = tail;
    p = put(p, "Age: ", 5);
    p = ct_cache_put_i64(p, age > 0 ? (int64_t)age : 0);
    p = put(p, "\r\nCache-Status: ", 16);
    p = put(p, cstatus.p, cstatus.len);
    p = put(p, "\r\n", 2);
    p = put(p, extra, ne);
    p = put(p, frame, nf);
    p = put(p, conn, nc);
    p = put(p, "\r\n", 2);
    return (size_t)(p - tail);
}

void ct_cache_write_head(struct ct_client *c, struct ct_obj *obj, const char *status_line,
                         struct ct_str cstatus, const char *extra, const char *frame,
                         const char *conn)
{
    struct evbuffer *out = cout(c);
    struct ct_cache_blk blk;
    struct ct_str wire;
    CT_ASSERT(ct_cache_blk_get(obj, &blk, &wire));
    if (status_line) {
        evbuffer_add(out, status_line, strlen(status_line));
        add_ref(c, out, obj, wire.p + blk.status_len, wire.len - blk.status_len);
    } else {
        add_ref(c, out, obj, wire.p, wire.len);
    }
    char tail[TAIL_MAX];
    evbuffer_add(out, tail, render_tail(c, obj, cstatus, extra, frame, conn, tail));
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
 * ct_io_flush() leaves it: its write timeout and error event apply (helpers in
 * io.c). TLS keeps the evbuffer path (one record per response, see
 * add_ref). */
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

static bool direct_ok(struct ct_client *c, const struct ct_obj *obj)
{
    return ct_obj_state(obj) == CT_OBJ_COMPLETE && ct_io_can_write_now(&c->io);
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

static void direct_write(struct ct_client *c, struct ct_obj *obj, struct direct *d)
{
    struct direct_rest r = {c, obj, d};
    ct_io_writev(&c->io, d->iov, d->n, direct_queue, &r);
}

/* The complete body from cr->pos into D's free slots (the rest: pump()). */
static void direct_body(struct ct_client *c, struct direct *d)
{
    struct ct_creq *cr = c->r.cr;
    CT_ASSERT(cr->skip == 0 && !cr->chunked);
    while (d->n < DIRECT_IOV && cr->body_left > 0) {
        size_t max = cr->body_left < STREAM_PIECE ? (size_t)cr->body_left : STREAM_PIECE;
        struct ct_str chunk;
        if (ct_obj_body_next(cr->obj, &cr->pos, max, &chunk) != CT_OBJ_BODY_DATA ||
            chunk.len == 0)
            break;
        direct_add(d, chunk.p, chunk.len, true);
        c->r.body_out += chunk.len; /* access log $body_bytes_sent */
        cr->body_left -= chunk.len;
    }
}

/* A body kept in a memfd (ct_obj_body_fd) goes out with sendfile(2) once the
 * head left nothing queued: the socket gets references to the object's pages
 * instead of a copy (on loopback the copy into the socket was most of a
 * 100 KiB hit's time). What it does not take, pump() queues by reference as
 * for any body. Plain TCP only (direct_ok): TLS must encrypt in user space. */
static void direct_sendfile(struct ct_client *c, int fd, off_t base)
{
    struct ct_creq *cr = c->r.cr;
    if (evbuffer_get_length(cout(c)) > 0)
        return;
    int sock = ct_io_fd(&c->io);
    while (cr->body_left > 0) {
        off_t off = base + (off_t)cr->pos.off;
        size_t want = (size_t)CT_MIN(cr->body_left, (uint64_t)(1u << 30));
        ssize_t k = sendfile(sock, fd, &off, want);
        if (k <= 0)
            return; /* full (EAGAIN) or failing: pump() queues the rest, libevent reports */
        if (ct_obj_body_seek(cr->obj, &cr->pos, cr->pos.off + (uint64_t)k) != CT_OK)
            CT_WRONG("a complete body shorter than its length");
        cr->body_left -= (uint64_t)k;
        c->r.body_out += (uint64_t)k; /* access log $body_bytes_sent */
    }
}

bool ct_cache_emit(struct ct_client *c, struct ct_obj *obj, struct ct_str cstatus, bool force_close)
{
    struct ct_creq *cr = c->r.cr;
    struct evbuffer *out = cout(c);
    struct ct_cache_blk blk;
    struct ct_str wire;
    struct dl d;
    CT_ASSERT(ct_cache_blk_get(obj, &blk, &wire));
    plan(c, obj, &blk, &d);
    bool head_only = c->r.msg->method == CT_METHOD_HEAD;
    bool streaming = d.len == UINT64_MAX;
    char frame[64] = "";
    if (d.body && streaming && !head_only) {
        /* Length unknown yet: chunked for HTTP/1.1, close-delimited for 1.0. */
        if (c->r.msg->version == 11)
            snprintf(frame, sizeof(frame), "Transfer-Encoding: chunked\r\n");
        else
            force_close = true;
    } else if (d.body || d.status == 416) {
        char *p = put(frame, "Content-Length: ", 16);
        p = ct_cache_put_i64(p, (int64_t)d.len);
        put(p, "\r\n", 3); /* with the NUL */
    }
    if (c->lc->kind == CT_LISTEN_HTTPS) {
        /* One contiguous piece for the whole small response: one record. */
        size_t body = d.body && !head_only && d.len <= TLS_COPY_MAX ? (size_t)d.len : 0;
        evbuffer_expand(out, wire.len + 512 + body);
    }
    char line[64];
    size_t line_len = 0;
    if (d.own_line)
        line_len = (size_t)snprintf(line, sizeof(line), "HTTP/1.1 %u %s\r\n", d.status,
                                    d.status == 206   ? "Partial Content"
                                    : d.status == 416 ? "Range Not Satisfiable"
                                                      : ct_fwd_reason(d.status));
    const char *conn = ct_cache_conn_field(c, force_close);
    c->r.status = d.status;
    bool body = d.body && !head_only && d.status != 416;
    if (body) {
        cr->chunked = streaming && c->r.msg->version == 11;
        cr->pos = (struct ct_obj_body_pos)CT_OBJ_BODY_POS_INIT;
        cr->body_left = d.len;
        cr->skip = 0;
        if (d.first && ct_obj_body_seek(obj, &cr->pos, d.first) != CT_OK)
            cr->skip = d.first; /* not there yet: skipped as it arrives */
        if (cr->obj != obj) {
            ct_obj_release(&cr->obj);
            cr->obj = ct_obj_ref(obj);
        }
        cr->mode = CT_CREQ_STREAM;
    }
    if (direct_ok(c, obj)) {
        struct direct dw = {.n = 0};
        char tail[TAIL_MAX];
        if (d.own_line) {
            direct_add(&dw, line, line_len, false);
            direct_add(&dw, wire.p + blk.status_len, wire.len - blk.status_len, true);
        } else {
            direct_add(&dw, wire.p, wire.len, true);
        }
        direct_add(&dw, tail, render_tail(c, obj, cstatus, d.extra, frame, conn, tail), false);
        off_t base = 0;
        int bfd = body && cr->skip == 0 && !cr->chunked ? ct_obj_body_fd(obj, &base) : -1;
        if (body && bfd < 0)
            direct_body(c, &dw);
        direct_write(c, obj, &dw);
        if (bfd >= 0)
            direct_sendfile(c, bfd, base);
    } else {
        ct_cache_write_head(c, obj, d.own_line ? line : NULL, cstatus, d.extra, frame, conn);
    }
    if (!body)
        return true;
    /* A complete object costs references only: queue it all at once. */
    enum ct_obj_body r = pump(c, ct_obj_state(obj) != CT_OBJ_COMPLETE);
    if (r != CT_OBJ_BODY_END)
        return false;
    if (cr->chunked)
        ct_fwd_body_end(out);
    return true;
}

/* Deliver OBJ (a new reference, taken) to C as its whole response. */
void ct_cache_deliver(struct ct_client *c, struct ct_obj *obj, struct ct_str cstatus)
{
    struct ct_creq *cr = c->r.cr;
    ct_obj_release(&cr->obj);
    cr->obj = obj;
    bool done = ct_cache_emit(c, obj, cstatus, false);
    ct_client_set_state(c, CT_CS_SEND);
    c->r.head_sent = true;
    if (done) {
        ct_cache_finish(c);
        return;
    }
    ct_cache_stream_more(c);
}

/* Streaming from a filling object: add what is there, wait for more. */
void ct_cache_stream_more(struct ct_client *c)
{
    struct ct_creq *cr = c->r.cr;
    for (unsigned i = 0; i < 1000000; i++) {
        switch (pump(c, true)) {
        case CT_OBJ_BODY_DATA: /* output full: ct_cache_client_drained() resumes */
            return;
        case CT_OBJ_BODY_WAIT:
            if (ct_cache_wait_obj(cr, CT_OBJ_STREAMING, cr->pos.off)) {
                ct_io_flush(&c->io);
                return;
            }
            continue;
        case CT_OBJ_BODY_END:
            if (cr->chunked)
                ct_fwd_body_end(cout(c));
            if (cr->self) { /* the fetch ends the response (cache_fill.c) */
                cr->mode = CT_CREQ_DONE;
                ct_io_flush(&c->io);
                return;
            }
            ct_cache_finish(c);
            return;
        case CT_OBJ_BODY_FAILED:
            /* The fetch died: what was sent must look truncated. */
            cr->mode = CT_CREQ_DONE;
            ct_io_flush(&c->io);
            ct_client_fail(c, CT_CLOSE_ORIGIN_TRUNC);
            return;
        }
    }
}

void ct_cache_self_end(struct ct_client *c)
{
    struct ct_creq *cr = c->r.cr;
    ct_cache_unwait(cr);
    /* Complete now: references only, no back-pressure needed. */
    if (pump(c, false) == CT_OBJ_BODY_END && cr->chunked)
        ct_fwd_body_end(cout(c));
    cr->mode = CT_CREQ_DONE;
}

bool ct_cache_client_drained(struct ct_client *c)
{
    struct ct_creq *cr = c->r.cr;
    if (cr == NULL || cr->mode != CT_CREQ_STREAM || c->state != CT_CS_SEND)
        return false;
    if (!cr->waiting)
        ct_cache_stream_more(c);
    return true;
}

