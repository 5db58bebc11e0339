/*
 * origin/origin_resp.c: one response, from what a handler filled in
 * (struct ct_oresp) to bytes in the connection's output evbuffer.
 *
 * - prepare: the query's controls (status=, etag=, last-modified=), then
 *   conditionals (304/412), then Range (206/416), in RFC 9110 §13.2.2 order.
 * - send: the head is built in the connection's reusable buffer and added
 *   with one copy; a small body rides in the same copy, so a /json response
 *   is one evbuffer_add. Bigger bodies go by reference (built-in files, the
 *   pattern) or as a sendfile segment (--root files): no body copy.
 * - pump: bodies are queued in pieces while the output is under CT_OUT_HIGH;
 *   the connection's write callback (at CT_OUT_LOW) calls pump again, so a
 *   1 GiB /bytes holds at most a few hundred KiB of references at a time.
 *   trickle= spaces the pieces with the connection's timer instead.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <unistd.h>

#include "common/log.h"
#include "origin/origin_int.h"

void ct_oresp_init(struct ct_oresp *r)
{
    memset(r, 0, offsetof(struct ct_oresp, etag_buf));
    r->status = 200;
    r->fd = -1;
}

void ct_oresp_copy_body(struct ct_oconn *c, unsigned status, const char *type)
{
    struct ct_oresp *r = &c->resp;
    r->status = status;
    r->ctype = type;
    r->kind = CT_OBODY_COPY;
    r->mem = c->body.p;
    r->len = c->body.len;
}

void ct_oresp_error(struct ct_oconn *c, unsigned status, const char *reason)
{
    ct_oresp_cleanup(c);
    ct_oresp_init(&c->resp);
    ct_buf_reset(&c->body);
    ct_buf_put(&c->body, reason, strlen(reason));
    CT_BUF_LIT(&c->body, "\n");
    ct_oresp_copy_body(c, status, "text/plain; charset=utf-8");
}

static void apply_controls(struct ct_oconn *c)
{
    struct ct_oresp *r = &c->resp;
    const struct ct_oparams *prm = &c->prm;
    if (prm->status && r->status == 200)
        r->status = prm->status;
    if (prm->etag.len)
        r->val.etag = prm->etag;
    if (prm->last_modified.len) {
        r->lm_text = prm->last_modified;
        r->val.has_mtime = ct_http_date_parse(prm->last_modified, &r->val.mtime) == CT_OK;
    }
}

static void no_body(struct ct_oresp *r, unsigned status)
{
    r->status = status;
    r->kind = CT_OBODY_NONE;
    r->len = 0;
}

void ct_oresp_prepare(struct ct_oconn *c)
{
    struct ct_oresp *r = &c->resp;
    if (r->controls)
        apply_controls(c);
    r->full_len = r->len;
    if (r->status != 200 || r->raw)
        return;
    if (r->val.etag.len || r->val.has_mtime) {
        enum ct_ocond cond = ct_ocond_eval(c->msg, &r->val);
        if (cond == CT_OCOND_NOT_MODIFIED) {
            no_body(r, 304);
            return;
        }
        if (cond == CT_OCOND_FAILED) {
            no_body(r, 412);
            return;
        }
    }
    const struct ct_http_field *f = ct_http_msg_find(c->msg, CT_HDR_RANGE, NULL);
    if (!r->rangeable || !f || c->msg->method != CT_METHOD_GET || !ct_oif_range_ok(c->msg, &r->val))
        return;
    uint64_t first, last;
    switch (ct_orange_parse(f->value, r->len, &first, &last)) {
    case CT_ORANGE_ONE:
        r->status = 206;
        r->range_first = first;
        r->off += first;
        r->len = last - first + 1;
        break;
    case CT_ORANGE_UNSAT:
        no_body(r, 416);
        break;
    case CT_ORANGE_NONE:
    case CT_ORANGE_MULTI: /* XXX: no multipart/byteranges; the full 200 is allowed */
        break;
    }
}

static void put_hdr(struct ct_buf *h, const char *name, size_t nlen, struct ct_str v)
{
    ct_buf_reserve(h, nlen + v.len + 4);
    ct_buf_put(h, name, nlen);
    ct_buf_put(h, ": ", 2);
    ct_buf_put_str(h, v);
    ct_buf_put(h, "\r\n", 2);
}
#define PUT_HDR(h, lit, v) put_hdr((h), lit, sizeof(lit) - 1, (v))

static void put_controls(struct ct_oconn *c, struct ct_buf *h)
{
    const struct ct_oparams *prm = &c->prm;
    if (prm->cache_control.len)
        PUT_HDR(h, "Cache-Control", prm->cache_control);
    if (prm->expires.len)
        PUT_HDR(h, "Expires", prm->expires);
    if (prm->vary.len)
        PUT_HDR(h, "Vary", prm->vary);
    for (unsigned i = 0; i < prm->n_cookies; i++)
        PUT_HDR(h, "Set-Cookie", prm->set_cookie[i]);
    for (unsigned i = 0; i < prm->n_hdrs; i++)
        put_hdr(h, prm->hdr_name[i].p, prm->hdr_name[i].len, prm->hdr_value[i]);
}

static void put_framing(struct ct_oconn *c, struct ct_buf *h, bool body_allowed)
{
    struct ct_oresp *r = &c->resp;
    if (r->status == 206 || r->status == 416) {
        CT_BUF_LIT(h, "Content-Range: bytes ");
        if (r->status == 206) {
            ct_buf_put_u64(h, r->range_first);
            CT_BUF_LIT(h, "-");
            ct_buf_put_u64(h, r->range_first + r->len - 1);
        } else {
            CT_BUF_LIT(h, "*");
        }
        CT_BUF_LIT(h, "/");
        ct_buf_put_u64(h, r->full_len);
        CT_BUF_LIT(h, "\r\n");
    }
    if (!body_allowed)
        return;
    if (c->bs.chunked) {
        CT_BUF_LIT(h, "Transfer-Encoding: chunked\r\n");
    } else {
        CT_BUF_LIT(h, "Content-Length: ");
        ct_buf_put_u64(h, r->len);
        CT_BUF_LIT(h, "\r\n");
    }
}

static void write_head(struct ct_oconn *c, bool body_allowed)
{
    struct ct_oresp *r = &c->resp;
    struct ct_buf *h = &c->head;
    const char *reason = ct_http_status_reason(r->status);
    ct_buf_reset(h);
    ct_buf_reserve(h, 512);
    CT_BUF_LIT(h, "HTTP/1.1 ");
    ct_buf_put_u64(h, r->status);
    CT_BUF_LIT(h, " ");
    ct_buf_put(h, reason, strlen(reason));
    CT_BUF_LIT(h, "\r\nServer: cachet-origin\r\nDate: ");
    ct_buf_put(h, ct_oworker_date(c->w), CT_HTTP_DATE_LEN);
    CT_BUF_LIT(h, "\r\n");
    /* RFC 9110 §15.4.5: a 304 carries the validators and caching fields,
     * not the representation's metadata. */
    if (r->ctype && r->status != 304 && r->status != 204)
        PUT_HDR(h, "Content-Type",
                r->controls && c->prm.type.len ? c->prm.type : ct_str_c(r->ctype));
    put_framing(c, h, body_allowed);
    if (r->rangeable)
        CT_BUF_LIT(h, "Accept-Ranges: bytes\r\n");
    if (r->val.etag.len)
        PUT_HDR(h, "ETag", r->val.etag);
    if (r->lm_text.len)
        PUT_HDR(h, "Last-Modified", r->lm_text);
    if (r->controls)
        put_controls(c, h);
    if (r->allow)
        PUT_HDR(h, "Allow", ct_str_c(r->allow));
    CT_BUF_LIT(h, "X-Origin-Seq: ");
    ct_buf_put_u64(h, c->seq);
    CT_BUF_LIT(h, "\r\n");
    if (c->bs.close)
        CT_BUF_LIT(h, "Connection: close\r\n");
    else if (c->version == 10)
        CT_BUF_LIT(h, "Connection: keep-alive\r\n");
    CT_BUF_LIT(h, "\r\n");
}

/* Common Log Format plus the sequence number; one write(2) per line, so
 * lines from several workers never interleave. */
static void access_log(struct ct_oconn *c)
{
    int fd = c->w->o->access_fd;
    if (fd < 0)
        return;
    char line[1400];
    const struct ct_http_msg *m = c->msg;
    /* No head for a request the parser refused. */
    struct ct_str meth = m ? m->method_name : CT_STR("-");
    struct ct_str target = m ? m->target : CT_STR("-");
    int n = snprintf(line, sizeof(line), "%s - - %s \"%.*s %.*s HTTP/1.%u\" %u %llu seq=%llu\n",
                     c->peer, c->w->clf_date, (int)CT_MIN(meth.len, 32), meth.p,
                     (int)CT_MIN(target.len, 1024), target.p, c->version % 10, c->resp.status,
                     (unsigned long long)(c->head_only ? 0 : c->resp.len),
                     (unsigned long long)c->seq);
    if (n > 0 && write(fd, line, CT_MIN((size_t)n, sizeof(line) - 1)) < 0)
        CT_WARN("w%u c%llu writing the access log: %s", c->w->id, (unsigned long long)c->id,
                strerror(errno));
}

/* Set up c->bs for the body of c->resp. */
static void body_start(struct ct_oconn *c, bool body_allowed)
{
    struct ct_oresp *r = &c->resp;
    struct ct_obody_state *b = &c->bs;
    bool controls = r->controls;
    memset(b, 0, sizeof(*b));
    b->close = r->close || !c->keep_alive;
    /* HTTP/1.0 has no chunked coding: those clients get Content-Length. */
    b->chunked = controls && c->prm.chunked && body_allowed && c->version >= 11;
    b->close_after = controls && c->prm.close_mid;
    if (b->close_after)
        b->close = true;
    b->send_body = body_allowed && !c->head_only;
    if (!b->send_body)
        return;
    b->kind = r->kind;
    b->mem = r->mem;
    b->pos = r->kind == CT_OBODY_PATTERN ? r->pat_off + r->off : r->off;
    b->remaining = b->close_after ? r->len / 2 : r->len;
    b->trickle_ms = controls ? c->prm.trickle_ms : 0;
    if (b->trickle_ms)
        b->piece = c->prm.trickle_size;
    else if (r->kind == CT_OBODY_PATTERN)
        b->piece = 256 * 1024;
    else
        b->piece = UINT64_MAX;
    if (r->kind == CT_OBODY_FILE && b->remaining) {
        /* The segment owns the fd from here (closed when the last piece
         * referencing it has been sent). */
        b->seg = evbuffer_file_segment_new(r->fd, (ev_off_t)r->off, (ev_off_t)r->len,
                                           EVBUF_FS_CLOSE_ON_FREE);
        if (b->seg) {
            r->fd = -1;
            b->pos = 0;
        } else {
            b->remaining = 0; /* cannot happen for a regular file; answer short */
            b->close = true;
        }
    }
}

void ct_oresp_send(struct ct_oconn *c)
{
    struct ct_oresp *r = &c->resp;
    struct evbuffer *out = c->out;
    if (r->raw) {
        /* /bad/KIND: the body is the whole reply, on purpose. */
        evbuffer_add(out, r->mem, r->len);
        ct_oconn_response_done(c, true);
        return;
    }
    c->seq = atomic_fetch_add_explicit(&c->w->o->seq, 1, memory_order_relaxed) + 1;
    bool body_allowed = r->status >= 200 && r->status != 204 && r->status != 304;
    body_start(c, body_allowed);
    write_head(c, body_allowed);
    access_log(c);
    struct ct_obody_state *b = &c->bs;
    /* Small whole bodies ride in the head's copy: one evbuffer_add, one
     * chain, instead of a second chain for a reference (cheaper below a few
     * KiB than the reference's allocation). */
    if (b->remaining && b->remaining <= 4096 && !b->chunked && !b->trickle_ms &&
        b->kind != CT_OBODY_FILE) {
        const char *p = b->kind == CT_OBODY_PATTERN ? ct_opattern_at(b->pos) : b->mem + b->pos;
        ct_buf_put(&c->head, p, b->remaining);
        b->remaining = 0;
    }
    evbuffer_add(out, c->head.p, c->head.len);
    ct_oresp_pump(c);
}

static void add_piece(struct ct_oconn *c, struct evbuffer *out, uint64_t n)
{
    struct ct_obody_state *b = &c->bs;
    switch (b->kind) {
    case CT_OBODY_MEM:
        evbuffer_add_reference(out, b->mem + b->pos, n, NULL, NULL);
        break;
    case CT_OBODY_COPY:
        evbuffer_add(out, b->mem + b->pos, n);
        break;
    case CT_OBODY_PATTERN:
        CT_ASSERT(n <= CT_OPATTERN_SPAN);
        evbuffer_add_reference(out, ct_opattern_at(b->pos), n, NULL, NULL);
        break;
    case CT_OBODY_FILE:
        evbuffer_add_file_segment(out, b->seg, (ev_off_t)b->pos, (ev_off_t)n);
        break;
    case CT_OBODY_NONE:
        CT_WRONG("body piece without a body");
    }
}

void ct_oresp_pump(struct ct_oconn *c)
{
    struct ct_obody_state *b = &c->bs;
    struct evbuffer *out = c->out;
    b->timer_wait = false;
    while (b->remaining > 0) {
        if (evbuffer_get_length(out) >= CT_OUT_HIGH) {
            ct_oconn_set_state(c, CT_OCS_STREAM); /* the write callback resumes */
            return;
        }
        uint64_t n = CT_MIN(b->remaining, b->piece);
        if (b->chunked) {
            char size[24];
            int k = snprintf(size, sizeof(size), "%llx\r\n", (unsigned long long)n);
            evbuffer_add(out, size, (size_t)k);
        }
        add_piece(c, out, n);
        if (b->chunked)
            evbuffer_add(out, "\r\n", 2);
        b->pos += n;
        b->remaining -= n;
        if (b->trickle_ms && b->remaining > 0) {
            ct_oconn_set_state(c, CT_OCS_STREAM);
            b->timer_wait = true;
            ct_oconn_arm_timer(c, b->trickle_ms);
            return;
        }
    }
    if (b->chunked && b->send_body && !b->close_after)
        evbuffer_add(out, "0\r\n\r\n", 5);
    ct_oresp_cleanup(c);
    ct_oconn_response_done(c, b->close);
}

void ct_oresp_cleanup(struct ct_oconn *c)
{
    if (c->bs.seg) {
        /* Refcounted: pieces still queued keep the file open until sent. */
        evbuffer_file_segment_free(c->bs.seg);
        c->bs.seg = NULL;
    }
    if (c->resp.fd >= 0) {
        close(c->resp.fd);
        c->resp.fd = -1;
    }
}
