/*
 * proxy/h2/h2_resp.c: a stream's side of proxy/core/proto.h (ct_h2_proto): what
 * the request path's decisions look like on an HTTP/2 stream. h1_resp.c is
 * the HTTP/1 twin.
 *
 * - Hits: the stored head is an HTTP/1 block and its field index
 *   (http/http_hdrindex.h), built once at store time: lower-case names and
 *   values as views into the object, so nothing is parsed or copied before
 *   nghttp2 encodes them. The status, Content-Length, Content-Range, Age
 *   and Cache-Status come from the plan.
 * - Body pieces of an object go to the engine by reference
 *   (NGHTTP2_DATA_FLAG_NO_COPY): one object reference per piece, released
 *   once no frame and no output chain points at it (ct_h2_body_ref).
 * - Origin responses: the engine drops the connection-specific fields
 *   (Connection and what it names, Keep-Alive, Transfer-Encoding, Upgrade,
 *   Proxy-Connection); here the cache's omitted fields go and its
 *   Cache-Status is added. The body moves into a per-stream buffer
 *   (body_out) and from there, by chain, into the engine.
 * - Back-pressure is per stream: a stream holds at most H2_STREAM_HIGH bytes
 *   queued in the engine (which sends them as the client's windows allow),
 *   and the connection's output its CT_BP_HIGH; a stream that is not read
 *   cannot hold more, nor stall the others.
 */
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "http/http_hdrindex.h"
#include "proxy/core/core.h"
#include "proxy/core/stored.h"
#include "proxy/core/proto.h"
#include "proxy/h2/h2_serve_int.h"

static struct ct_h2s_stream *st_of(struct ct_req *r) { return ct_h2s_stream_of(r); }

static void obj_unref(void *arg)
{
    struct ct_obj *obj = arg;
    ct_obj_release(&obj);
}

void ct_h2_resp_free(struct ct_h2s_stream *st)
{
    if (st->bodybuf) {
        evbuffer_free(st->bodybuf);
        st->bodybuf = NULL;
    }
}

/* The heads' scratch, this worker thread's: the fields handed to the
 * engine, which copies them before a head call returns, so every stream of
 * the thread shares it and an idle connection holds none. */
static _Thread_local struct ct_http_field *fields;
static _Thread_local size_t fcap;

void ct_h2_resp_thread_free(void)
{
    CT_FREE(&fields);
    fcap = 0;
}

/* Room for N fields in the scratch (what was in it is lost when it grows). */
static struct ct_http_field *fields_room(size_t n)
{
    if (n > fcap) {
        free(fields);
        fcap = n < 32 ? 32 : n;
        fields = ct_xmalloc(fcap * sizeof(*fields));
    }
    return fields;
}

/* OBJ's stored fields, from the field index the store keeps with the block,
 * into ST's scratch. Returns their count and the block's status in *STATUS;
 * -1 if the object has no index (the store writes one for every block it
 * renders, cache_fill.c add_index). */
static int stored_fields(struct ct_h2s_stream *st, const struct ct_stored_blk *blk,
                         struct ct_str wire, unsigned *status)
{
    struct ct_hdrindex hx;
    if (!ct_stored_index(blk, wire, &hx))
        return -1;
    unsigned n = ct_hdrindex_count(&hx);
    /* room for a route's response rules too (h2_deliver_head adds them) */
    struct ct_http_field *f = fields_room(n + CT_FWD_EDITS_MAX);
    for (unsigned i = 0; i < n; i++) {
        struct ct_hdrindex_field x = ct_hdrindex_field(&hx, i);
        f[i] = (struct ct_http_field){.name = x.name, .value = x.value, .id = x.id};
    }
    *status = ct_hdrindex_status(&hx);
    return (int)n;
}

static struct ct_http_field field(const char *name, struct ct_str value)
{
    return (struct ct_http_field){.name = ct_str_c(name), .value = value, .id = CT_HDR_UNKNOWN};
}

/* Reset the stream: the response cannot be given (the client sees a
 * stream error, the connection goes on). */
static void reset(struct ct_h2s_stream *st, uint32_t code)
{
    (void)ct_h2_reset(st->s->h, st->sid, code);
    ct_h2s_kick(st->s);
}

/* ---- from stored objects ---------------------------------------------------------- */

static void h2_deliver_head(struct ct_req *r, struct ct_obj *obj, const struct ct_resp_plan *p)
{
    struct ct_h2s_stream *st = st_of(r);
    struct ct_stored_blk blk;
    struct ct_str wire;
    CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
    unsigned status = 0;
    int n = stored_fields(st, &blk, wire, &status);
    if (n < 0) {
        CT_ERR("w%u c%llu s%d %s: stored head cannot be indexed", r->w->id,
               (unsigned long long)r->conn_id, st->sid, r->peer);
        reset(st, 0x2 /* INTERNAL_ERROR */);
        return;
    }
    struct ct_fwd_edit edits[CT_FWD_EDITS_MAX];
    char ebuf[2048];
    size_t ned = ct_req_route_resp_edits(r, edits, ebuf, sizeof(ebuf));
    if (ned) { /* a route's response_headers over the stored fields */
        struct ct_http_field *f = fields_room((size_t)n + ned);
        size_t k = 0;
        for (int i = 0; i < n; i++)
            if (!ct_fwd_edited(edits, 0, ned, f[i].name))
                f[k++] = f[i];
        for (size_t i = 0; i < ned; i++)
            if (ct_fwd_edit_adds(edits, i, ned))
                f[k++] = (struct ct_http_field){.name = edits[i].name, .value = edits[i].value,
                                                .id = ct_hdr_lookup(edits[i].name)};
        n = (int)k;
    }
    struct ct_http_msg msg = {
        .kind = CT_HTTP_RESPONSE, .status = p->own_status ? p->status : status, .version = 11};
    ct_http_msg_set_fields(&msg, fields, (size_t)n);
    char age[24], clen[24];
    double a = ct_obj_age(obj, ct_time_real());
    struct ct_http_field extra[4];
    size_t ne = 0;
    extra[ne++] = field("age", ct_str_make(age, (size_t)(ct_put_i64(age, a > 0 ? (int64_t)a : 0) - age)));
    extra[ne++] = field("cache-status", p->cache_status);
    if (p->length_field && p->len != UINT64_MAX)
        extra[ne++] = field("content-length",
                            ct_str_make(clen, (size_t)(ct_put_i64(clen, (int64_t)p->len) - clen)));
    if (p->content_range[0])
        extra[ne++] = field("content-range", ct_str_c(p->content_range));
    /* A body from the object or, after a fill's head, from the origin. */
    bool body = p->from_origin ? r->msg->method != CT_METHOD_HEAD : p->body;
    if (ct_h2_submit_head(st->s->h, st->sid, &msg, extra, ne, body) == CT_EPROTO)
        reset(st, 0x2);
    ct_h2s_kick(st->s);
}

static void h2_send_obj_piece(struct ct_req *r, struct ct_obj *obj, struct ct_str piece)
{
    struct ct_h2s_stream *st = st_of(r);
    (void)ct_h2_body_ref(st->s->h, st->sid, piece.p, piece.len, obj_unref, ct_obj_ref(obj));
}

static void h2_send_obj_end(struct ct_req *r)
{
    struct ct_h2s_stream *st = st_of(r);
    (void)ct_h2_body_end(st->s->h, st->sid);
    ct_h2s_kick(st->s);
}

static void h2_send_synth(struct ct_req *r, unsigned status, struct ct_str body,
                          struct ct_str cstatus)
{
    struct ct_h2s_stream *st = st_of(r);
    char date[CT_HTTP_DATE_LEN + 1], clen[24];
    time_t now = time(NULL);
    ct_req_date(r, now, date);
    struct ct_http_field f[7] = {
        field("server", CT_STR("cachet")),
        field("date", ct_str_make(date, CT_HTTP_DATE_LEN)),
        field("content-type", r->synth_ctype.len ? r->synth_ctype : CT_STR("text/plain")),
        field("content-length", ct_str_make(clen, (size_t)(ct_put_i64(clen, (int64_t)body.len) - clen))),
    };
    size_t nf = 4;
    if (r->synth_location.len) /* a route's redirect */
        f[nf++] = field("location", r->synth_location);
    if (r->synth_retry_after.len) /* a route's 429 */
        f[nf++] = field("retry-after", r->synth_retry_after);
    if (cstatus.len)
        f[nf++] = field("cache-status", cstatus);
    struct ct_http_msg msg = {.kind = CT_HTTP_RESPONSE, .status = status, .version = 11};
    ct_http_msg_set_fields(&msg, f, nf);
    struct ct_h2_conn *h = st->s->h;
    if (ct_h2_submit_head(h, st->sid, &msg, NULL, 0, body.len > 0) == CT_OK && body.len > 0) {
        struct evbuffer *tmp = evbuffer_new();
        evbuffer_add(tmp, body.p, body.len);
        (void)ct_h2_body_move(h, st->sid, tmp, body.len);
        evbuffer_free(tmp);
        (void)ct_h2_body_end(h, st->sid);
    }
    ct_h2s_kick(st->s);
}

/* What the request moved into body_out goes to the engine by chain. */
static void body_to_engine(struct ct_h2s_stream *st)
{
    size_t n = st->bodybuf ? evbuffer_get_length(st->bodybuf) : 0;
    if (n > 0)
        (void)ct_h2_body_move(st->s->h, st->sid, st->bodybuf, n);
}

/* ---- back-pressure --------------------------------------------------------------- */

static bool h2_output_full(struct ct_req *r)
{
    struct ct_h2s_stream *st = st_of(r);
    body_to_engine(st);
    if (ct_h2_body_queued(st->s->h, st->sid) < CT_H2S_STREAM_HIGH &&
        ct_h2s_out_len(st->s) < CT_BP_HIGH)
        return false;
    ct_h2s_stream_full(st);
    ct_h2s_kick(st->s);
    return true;
}

static void h2_flush(struct ct_req *r)
{
    struct ct_h2s_stream *st = st_of(r);
    body_to_engine(st);
    ct_h2s_kick(st->s);
}

/* HTTP/2 frames each request on its own stream: a bodiless request ends
 * with its HEADERS frame, nothing is left to read for the next one. */
static bool h2_body_finish(struct ct_req *r)
{
    struct ct_h2s_stream *st = st_of(r);
    if (!st->body_end)
        return false;
    r->body_done = true;
    return true;
}

/* ---- responses from the origin ---------------------------------------------------- */

/* Every body is framed by DATA frames and END_STREAM; the connection never
 * ends for one response. */
static bool h2_frame_response(struct ct_req *r, const struct ct_http_msg *resp)
{
    (void)r;
    (void)resp;
    return false;
}

static void h2_send_head(struct ct_req *r, const struct ct_http_msg *resp,
                         const struct ct_fwd_resp_extra *extra, bool body_direct)
{
    struct ct_h2s_stream *st = st_of(r);
    (void)body_direct;
    struct ct_fwd_edit edits[CT_FWD_EDITS_MAX];
    char ebuf[2048];
    size_t ned = ct_req_route_resp_edits(r, edits, ebuf, sizeof(ebuf));
    struct ct_http_field *f = fields_room(resp->nfields + ned);
    size_t n = 0;
    for (size_t i = 0; i < resp->nfields; i++) {
        const struct ct_http_field *x = &resp->fields[i];
        if ((extra && extra->omit && extra->omit(x, extra->omit_arg)) ||
            (ned && ct_fwd_edited(edits, 0, ned, x->name)))
            continue;
        f[n++] = *x;
    }
    for (size_t i = 0; i < ned; i++) /* a route's response_headers */
        if (ct_fwd_edit_adds(edits, i, ned))
            f[n++] = (struct ct_http_field){.name = edits[i].name, .value = edits[i].value,
                                            .id = ct_hdr_lookup(edits[i].name)};
    /* The connection-specific fields are the engine's to drop; it needs the
     * origin's Connection tokens for that, so the message keeps them. */
    struct ct_http_msg msg = *resp;
    ct_http_msg_set_fields(&msg, f, n);
    /* Our Via after the origin's (RFC 9110 §7.6.3: a proxy adds itself to
     * what it forwards; another field line of the name continues the
     * list), as HTTP/1 responses and stored heads have it. */
    struct ct_http_field cs[2];
    size_t ncs = 0;
    cs[ncs++] = field("via", CT_STR(CT_VIA_US));
    if (extra && extra->cache_status.len)
        cs[ncs++] = field("cache-status", extra->cache_status);
    bool body = r->msg->method != CT_METHOD_HEAD && resp->framing != CT_FRAME_NONE;
    if (ct_h2_submit_head_once(st->s->h, st->sid, &msg, cs, ncs, body) == CT_EPROTO)
        reset(st, 0x2);
    ct_h2s_kick(st->s);
}

/* 1xx other than 100 (RFC 9113 §8.1: interim HEADERS); 101 never reaches
 * an HTTP/2 stream (the engine refuses it, §8.6). */
static void h2_send_interim(struct ct_req *r, const struct ct_http_msg *resp)
{
    struct ct_h2s_stream *st = st_of(r);
    if (resp->status != 101)
        (void)ct_h2_submit_head(st->s->h, st->sid, resp, NULL, 0, true);
    ct_h2s_kick(st->s);
}

/* An HTTP/2 client with Expect: 100-continue waits for nothing we must
 * send: its window already lets the body come (RFC 9113 §8.1). */
static void h2_send_continue(struct ct_req *r) { (void)r; }

static struct evbuffer *h2_body_out(struct ct_req *r, bool *chunked)
{
    struct ct_h2s_stream *st = st_of(r);
    *chunked = false;
    if (st->bodybuf == NULL)
        st->bodybuf = evbuffer_new();
    return st->bodybuf;
}

static void h2_send_body(struct ct_req *r, struct evbuffer *src, size_t n)
{
    struct ct_h2s_stream *st = st_of(r);
    body_to_engine(st);
    (void)ct_h2_body_move(st->s->h, st->sid, src, n);
    ct_h2s_kick(st->s);
}

static void h2_send_end(struct ct_req *r)
{
    struct ct_h2s_stream *st = st_of(r);
    body_to_engine(st);
    (void)ct_h2_body_end(st->s->h, st->sid);
    ct_h2s_kick(st->s);
}

/* ---- the request core's calls ---------------------------------------------------- */

/* HTTP/2 cannot carry a 101 (RFC 9113 §8.6): the request fails (502). */
static bool h2_tunnel(struct ct_req *r, const struct ct_http_msg *resp)
{
    (void)r;
    (void)resp;
    return false;
}

/* Request body: what the engine holds for the stream, as it comes (its
 * window reopens by as much, so an unread stream never holds more than its
 * window). An HTTP/1 origin gets it chunked when the client gave no
 * content-length (the engine checked any it gave); the last chunk is the
 * core's. */
static enum ct_body_ev h2_body_read(struct ct_req *r, struct evbuffer *dst, bool chunked,
                                    size_t *n)
{
    struct ct_h2s_stream *st = st_of(r);
    *n = 0;
    if (st->closed)
        return CT_BODY_ERROR;
    size_t avail = ct_h2_body_unread(st->s->h, st->sid);
    if (avail > 0) {
        if (chunked)
            evbuffer_add_printf(dst, "%zx\r\n", avail);
        *n = ct_h2_body_read(st->s->h, st->sid, dst, avail);
        if (chunked)
            evbuffer_add(dst, "\r\n", 2);
        ct_h2s_kick(st->s); /* the WINDOW_UPDATE */
        return CT_BODY_DATA;
    }
    if (st->body_end)
        return CT_BODY_END;
    st->want_body = true;
    return CT_BODY_NEED;
}

/* The origin's output is full: stop handing body up; not reading it keeps
 * the stream's window shut, which stops the client. */
static void h2_body_hold(struct ct_req *r, bool hold)
{
    struct ct_h2s_stream *st = st_of(r);
    st->held = hold;
}

/* The response starts: nothing to do before its head. */
static void h2_respond(struct ct_req *r) { (void)r; }

/* The client has its answer and the request refreshes the object on: the
 * stream ends with the answer, and a close of the stream (on_close) ends
 * the refresh with it (the request head is the engine's). */
static void h2_answered(struct ct_req *r) { (void)r; }

static void h2_done(struct ct_req *r) { ct_h2s_stream_done(st_of(r)); }

/* An error response if nothing was sent yet and the reason has a status;
 * else the stream is reset, so a truncated response looks truncated
 * (RFC 9113 §8.1): CANCEL when the client went, INTERNAL_ERROR otherwise.
 * The connection and its other streams go on. */
static void h2_fail(struct ct_req *r, enum ct_close why)
{
    struct ct_h2s_stream *st = st_of(r);
    unsigned status = ct_close_status(why);
    if (ct_close_is_client(why))
        ct_log_client("w%u c%llu s%d %s: %s (status=%u close=%s)", r->w->id,
                      (unsigned long long)r->conn_id, st->sid, r->peer, ct_close_text(why),
                      r->head_sent ? 0 : status, ct_close_name(why));
    else if (ct_close_is_err(why))
        CT_ERR("w%u c%llu s%d %s: %s (status=%u close=%s)", r->w->id,
               (unsigned long long)r->conn_id, st->sid, r->peer, ct_close_text(why),
               r->head_sent ? 0 : status, ct_close_name(why));
    if (!r->head_sent && status != 0 && !st->closed) {
        char body[96];
        int n = snprintf(body, sizeof(body), "%u %s\n", status, ct_http_status_reason(status));
        const char *cs = ct_close_cache_status(why);
        h2_send_synth(r, status, ct_str_make(body, (size_t)n), cs ? ct_str_c(cs) : CT_STR_NULL);
        r->head_sent = true;
        r->status = status;
    } else if (!st->closed) {
        reset(st, why == CT_CLOSE_REM_CLOSE ? 0x8 /* CANCEL */ : 0x2 /* INTERNAL_ERROR */);
    }
    ct_h2s_stream_done(st);
}

const struct ct_proto ct_h2_proto = {
    .name = "h2",
    .deliver_head = h2_deliver_head,
    .send_obj_piece = h2_send_obj_piece,
    .send_obj_end = h2_send_obj_end,
    .send_synth = h2_send_synth,
    .output_full = h2_output_full,
    .flush = h2_flush,
    .body_finish = h2_body_finish,
    .frame_response = h2_frame_response,
    .send_head = h2_send_head,
    .send_interim = h2_send_interim,
    .send_continue = h2_send_continue,
    .body_out = h2_body_out,
    .send_body = h2_send_body,
    .send_end = h2_send_end,
    .tunnel = h2_tunnel,
    .body_read = h2_body_read,
    .body_hold = h2_body_hold,
    .respond = h2_respond,
    .answered = h2_answered,
    .done = h2_done,
    .fail = h2_fail,
};
