/*
 * proxy/core/cache_deliver.c: a response from a stored object (issue 5's hit
 * path), the request's side: what to send, not how it looks on the wire
 * (that is the protocol's, r->proto: proxy/h1/h1_resp.c for HTTP/1).
 *
 * From a complete 200 we also answer the client's conditionals (304, RFC 9110
 * §13.2.2) and a single byte range (206 / 416, RFC 9110 §14); HEAD gets the
 * head of the stored GET. plan() decides; the protocol renders the head
 * (Age per RFC 9111 §4.2.3, the stored Date, Cache-Status per RFC 9211).
 *
 * The body is walked here (pump) and handed to the protocol piece by piece,
 * by reference. From an object still filling (a coalesced waiter), the body
 * streams: add what is there, register a one-shot waiter for more
 * (cache_req.c routes the wake to this worker), stop while the protocol's
 * output is full and resume from the drained callback. A failed fetch ends
 * the client's message truncated.
 */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "proxy/core/cache_int.h"
#include "proxy/core/proto.h"

#define STREAM_PIECE (256 * 1024)


/* Hand what cr->obj has after cr->pos to the protocol, by reference, within
 * the range (cr->skip bytes dropped first, cr->body_left at most). Returns
 * END (the body or the range is all out), WAIT (nothing more yet), FAILED,
 * or DATA: stopped because the protocol's output is full (only with BP). */
static enum ct_obj_body pump(struct ct_req *r, bool bp)
{
    struct ct_creq *cr = r->cr;
    for (;;) {
        if (cr->body_left == 0)
            return CT_OBJ_BODY_END;
        if (bp && r->proto->output_full(r))
            return CT_OBJ_BODY_DATA; /* the drained callback resumes us */
        uint64_t want = cr->body_left == UINT64_MAX ? STREAM_PIECE : cr->skip + cr->body_left;
        size_t max = want < STREAM_PIECE ? (size_t)want : STREAM_PIECE;
        struct ct_str chunk;
        enum ct_obj_body got = ct_obj_body_next(cr->obj, &cr->pos, max, &chunk);
        if (got != CT_OBJ_BODY_DATA)
            return got;
        size_t k = (size_t)CT_MIN((uint64_t)chunk.len, cr->skip);
        cr->skip -= k;
        chunk = ct_str_make(chunk.p + k, chunk.len - k);
        if (chunk.len == 0)
            continue;
        r->proto->send_obj_piece(r, cr->obj, chunk);
        r->body_out += chunk.len; /* access log $body_bytes_sent */
        if (cr->body_left != UINT64_MAX)
            cr->body_left -= chunk.len;
    }
}

/* ---- for the protocol's fast paths (complete objects) ------------------------ */

bool ct_req_obj_next(struct ct_req *r, struct ct_str *chunk)
{
    struct ct_creq *cr = r->cr;
    CT_ASSERT(cr->skip == 0);
    if (cr->body_left == 0)
        return false;
    size_t max = cr->body_left < STREAM_PIECE ? (size_t)cr->body_left : STREAM_PIECE;
    if (ct_obj_body_next(cr->obj, &cr->pos, max, chunk) != CT_OBJ_BODY_DATA || chunk->len == 0)
        return false;
    r->body_out += chunk->len; /* access log $body_bytes_sent */
    cr->body_left -= chunk->len;
    return true;
}

bool ct_req_obj_at_start(const struct ct_req *r) { return r->cr->skip == 0; }

uint64_t ct_req_obj_left(const struct ct_req *r, uint64_t *off)
{
    *off = r->cr->pos.off;
    return r->cr->body_left;
}

void ct_req_obj_sent(struct ct_req *r, uint64_t k)
{
    struct ct_creq *cr = r->cr;
    if (ct_obj_body_seek(cr->obj, &cr->pos, cr->pos.off + k) != CT_OK)
        CT_WRONG("a complete body shorter than its length");
    cr->body_left -= k;
    r->body_out += k; /* access log $body_bytes_sent */
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

/* What to send for the request from the complete or streaming OBJ (§4.3.2,
 * Range) into *P; *FIRST: where the body starts. CR_BUF holds P's
 * Content-Range. */
static void plan(struct ct_req *r, struct ct_obj *obj, const struct ct_stored_blk *blk,
                 struct ct_resp_plan *p, uint64_t *first, char *cr_buf, size_t cr_cap)
{
    const struct ct_http_msg *req = r->msg;
    bool complete = ct_obj_state(obj) == CT_OBJ_COMPLETE;
    unsigned st = ct_obj_status(obj);
    /* A filling object with a Content-Length knows its length already. */
    uint64_t len = complete ? ct_obj_body_len(obj) : blk->length;
    *first = 0;
    cr_buf[0] = '\0';
    p->status = st;
    p->own_status = false;
    p->len = len;
    p->body = st != 204 && st != 304;
    p->content_range = cr_buf;
    p->from_origin = false;
    if (st == 200) {
        struct ct_cache_validators v = {.etag = ct_obj_etag(obj),
                                        .last_modified = ct_obj_last_modified(obj),
                                        .response_time = blk->fresh.response_time};
        const struct ct_http_field *rf = ct_http_msg_find(req, CT_HDR_RANGE, NULL);
        uint64_t a, b;
        int rng;
        if (ct_cache_policy_cond(req, &v) == 304) {
            p->status = 304;
            p->own_status = true;
            p->body = false;
        } else if (req->method == CT_METHOD_GET && rf != NULL && len != UINT64_MAX &&
                   if_range_ok(req, obj) && (rng = ct_range_parse(rf->value, len, &a, &b)) != 0) {
            p->own_status = true;
            if (rng < 0) {
                p->status = 416;
                p->body = false;
                p->len = 0;
                snprintf(cr_buf, cr_cap, "bytes */%llu", (unsigned long long)len);
            } else {
                p->status = 206;
                *first = a;
                p->len = b - a + 1;
                snprintf(cr_buf, cr_cap, "bytes %llu-%llu/%llu", (unsigned long long)a,
                         (unsigned long long)b, (unsigned long long)len);
            }
        }
    }
    p->length_field = p->len != UINT64_MAX && (p->body || p->status == 416);
}

/* Does R's Range on OBJ wait for OBJ to be complete? Only for an object
 * still filling whose length is not known yet and bounded: one cachet
 * encodes as it fills from an origin's Content-Length (its length is the
 * encoder's, at the end; CT_STORED_BOUNDED). The range is of the
 * representation the client receives
 * (issue 18), and its 206 names the complete length, and a suffix or open
 * range needs the end: so the head waits for the whole object. A Range
 * plan() would ignore (not GET, malformed, If-Range not matching, a 304
 * first) does not wait. */
static bool range_waits(const struct ct_req *r, const struct ct_obj *obj,
                        const struct ct_stored_blk *blk)
{
    const struct ct_http_msg *req = r->msg;
    enum ct_obj_state st = ct_obj_state(obj);
    if (blk->length != UINT64_MAX || (st != CT_OBJ_BUSY && st != CT_OBJ_STREAMING) ||
        req->method != CT_METHOD_GET || ct_obj_status(obj) != 200)
        return false;
    /* A fill that may outgrow max_object_size (an origin body of unknown
     * length) could fail with nothing sent: its Range is not held, and is
     * answered as before (RFC 9110 §14.2 lets a server ignore it). */
    if (ct_stored_may_outgrow(blk))
        return false;
    const struct ct_http_field *rf = ct_http_msg_find(req, CT_HDR_RANGE, NULL);
    uint64_t a, b;
    if (rf == NULL || ct_range_parse(rf->value, UINT64_MAX - 1, &a, &b) == 0 ||
        !if_range_ok(req, obj))
        return false;
    struct ct_cache_validators v = {.etag = ct_obj_etag(obj),
                                    .last_modified = ct_obj_last_modified(obj),
                                    .response_time = blk->fresh.response_time};
    return ct_cache_policy_cond(req, &v) != 304;
}

bool ct_cache_emit(struct ct_req *r, struct ct_obj *obj, struct ct_str cstatus, bool force_close)
{
    struct ct_creq *cr = r->cr;
    struct ct_stored_blk blk;
    struct ct_str wire;
    struct ct_resp_plan p;
    uint64_t first;
    char range[96];
    CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
    if (CT_UNLIKELY(range_waits(r, obj, &blk))) {
        /* Nothing is sent yet: STREAM waits for the object's end, then
         * emits again (ct_step_stream, ct_cache_self_end). */
        if (cr->obj != obj) {
            ct_obj_release(&cr->obj);
            cr->obj = ct_obj_ref(obj);
        }
        if (cstatus.p != cr->cstatus_buf) {
            cstatus.len = CT_MIN(cstatus.len, sizeof(cr->cstatus_buf) - 1);
            memcpy(cr->cstatus_buf, cstatus.p, cstatus.len);
        }
        cr->cstatus = ct_str_make(cr->cstatus_buf, cstatus.len);
        cr->range_hold = true;
        cr->hold_close = force_close;
        ct_req_goto(r, CT_STEP_STREAM);
        return false;
    }
    plan(r, obj, &blk, &p, &first, range, sizeof(range));
    p.cache_status = cstatus;
    p.close = force_close;
    r->status = p.status;
    bool body = p.body && r->msg->method != CT_METHOD_HEAD;
    if (body) {
        cr->pos = (struct ct_obj_body_pos)CT_OBJ_BODY_POS_INIT;
        cr->body_left = p.len;
        cr->skip = 0;
        if (first && ct_obj_body_seek(obj, &cr->pos, first) != CT_OK)
            cr->skip = first; /* not there yet: skipped as it arrives */
        if (cr->obj != obj) {
            ct_obj_release(&cr->obj);
            cr->obj = ct_obj_ref(obj);
        }
        ct_req_goto(r, CT_STEP_STREAM);
    }
    r->proto->deliver_head(r, obj, &p);
    if (!body)
        return true;
    /* A complete object costs references only: queue it all at once. */
    if (pump(r, ct_obj_state(obj) != CT_OBJ_COMPLETE) != CT_OBJ_BODY_END)
        return false;
    r->proto->send_obj_end(r);
    return true;
}

void ct_cache_fill_head(struct ct_req *r, struct ct_obj *fill, const struct ct_http_msg *msg,
                        struct ct_str cstatus)
{
    struct ct_resp_plan p = {
        .status = msg->status,
        .body = true,
        .length_field = msg->framing == CT_FRAME_LENGTH && r->msg->method != CT_METHOD_HEAD,
        .len = msg->framing == CT_FRAME_LENGTH ? msg->content_length : UINT64_MAX,
        .content_range = "",
        .cache_status = cstatus,
        .from_origin = true,
    };
    r->proto->deliver_head(r, fill, &p);
    r->fwd_head = true; /* the body follows from the origin (ct_cache_resp_body) */
}

/* DELIVER: cr->obj as R's whole response. */
enum ct_req_next ct_step_deliver(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    bool done = ct_cache_emit(r, cr->obj, cr->cstatus, false);
    ct_req_respond(r);
    r->head_sent = true;
    if (done) {
        ct_req_finish(r);
        return CT_REQ_GONE;
    }
    return CT_REQ_MORE; /* STREAM (ct_cache_emit) */
}

/* STREAM with cr->range_hold: wait for the object to be complete, then
 * answer the Range from it. MORE: emitted, streaming on; PARK: waiting;
 * GONE: the object failed (nothing was sent: a 502) or the answer is all
 * out. */
static enum ct_req_next range_held(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    for (;;) {
        enum ct_obj_state st = ct_obj_state(cr->obj);
        if (st == CT_OBJ_BUSY || st == CT_OBJ_STREAMING) {
            if (ct_creq_wait_obj(cr, st, ct_obj_body_len(cr->obj)))
                return CT_REQ_PARK; /* on_obj_change() */
            continue;
        }
        if (st != CT_OBJ_COMPLETE) {
            CT_ASSERT(ct_cache_unhold(r));
            ct_req_goto(r, CT_STEP_DONE);
            r->proto->fail(r, CT_CLOSE_ORIGIN_CUT); /* nothing sent: a 502 */
            return CT_REQ_GONE;
        }
        cr->range_hold = false;
        if (!ct_cache_emit(r, cr->obj, cr->cstatus, cr->hold_close))
            return CT_REQ_MORE; /* not reached: a complete object is all queued */
        if (cr->self) { /* the fetch ends the response (cache_fill.c) */
            ct_req_goto(r, CT_STEP_DONE);
            r->proto->flush(r);
            return CT_REQ_PARK;
        }
        ct_req_finish(r);
        return CT_REQ_GONE;
    }
}

/* STREAM: from a filling object, add what is there, wait for more. */
enum ct_req_next ct_step_stream(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    if (CT_UNLIKELY(cr->range_hold))
        return range_held(r);
    for (unsigned i = 0; i < 1000000; i++) {
        switch (pump(r, true)) {
        case CT_OBJ_BODY_DATA: /* output full: ct_cache_client_drained() resumes */
            return CT_REQ_PARK;
        case CT_OBJ_BODY_WAIT:
            if (ct_creq_wait_obj(cr, CT_OBJ_STREAMING, cr->pos.off)) {
                r->proto->flush(r);
                return CT_REQ_PARK; /* on_obj_change() */
            }
            continue;
        case CT_OBJ_BODY_END:
            r->proto->send_obj_end(r);
            if (cr->self) { /* the fetch ends the response (cache_fill.c) */
                ct_req_goto(r, CT_STEP_DONE);
                r->proto->flush(r);
                return CT_REQ_PARK;
            }
            ct_req_finish(r);
            return CT_REQ_GONE;
        case CT_OBJ_BODY_FAILED:
            /* The fetch died: what was sent must look truncated. */
            ct_req_goto(r, CT_STEP_DONE);
            r->proto->flush(r);
            r->proto->fail(r, CT_CLOSE_ORIGIN_TRUNC);
            return CT_REQ_GONE;
        }
    }
    return CT_REQ_PARK;
}

bool ct_cache_unhold(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    if (cr == NULL || !cr->range_hold)
        return false;
    cr->range_hold = false;
    r->head_sent = false; /* the callers that held it counted it sent */
    return true;
}

void ct_cache_self_end(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    ct_creq_unwait(cr);
    /* Complete now: references only, no back-pressure needed. */
    if (cr->range_hold) {
        /* The Range waited for this (ct_cache_emit). An object that was not
         * stored after all (past max_object_size) ends truncated, as any
         * reader of it does. */
        cr->range_hold = false;
        (void)ct_cache_emit(r, cr->obj, cr->cstatus, cr->hold_close);
    } else if (pump(r, false) == CT_OBJ_BODY_END) {
        r->proto->send_obj_end(r);
    }
    ct_req_goto(r, CT_STEP_DONE);
}

bool ct_cache_client_drained(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    if (cr == NULL || r->step != CT_STEP_STREAM || r->phase != CT_RP_SEND)
        return false;
    if (!cr->waiting)
        ct_req_run(r);
    return true;
}

