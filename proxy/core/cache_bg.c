/*
 * proxy/core/cache_bg.c: background refreshes (grace / stale-while-revalidate,
 * issue 6) as requests with no client: Varnish's bgfetch, a busyobj with no
 * req attached.
 *
 * A client that finds a stale object within its grace and gets the store's
 * fetch slot (the BUSY object) is answered with the stale object at once;
 * the refresh must not hold that client's connection (its next request would
 * wait for the origin). So the slot goes to a struct ct_bgreq: a struct
 * ct_req of its own, carried by the null protocol below, with its own copy
 * of the request head (the client's parser moves on to its next request):
 * the target and the end-to-end fields, minus what would change the answer
 * (conditionals, Range, the client's Cache-Control) or the framing. Its
 * cache part holds the BUSY object (and the stale one, for the validators)
 * with cr->bg set, so the fill stores the origin's answer and sends nothing:
 * exactly one origin fetch, no race for the slot. It skips recv and lookup
 * and starts its fetch on the next loop turn (the trigger's lookup is still
 * on the stack), ends when its response does (proto->done) or fails
 * (proto->fail), and is counted by its backend, not as a client request.
 *
 * The same kind of request takes a client's fill over (fetch.c, ct_fetch_adopt): the
 * fetch (its upstream, mid-exchange) moves over, and the client is one
 * reader of the object among others (Varnish's busyobj). That happens when
 * the stored head is in and the client reads the object (so its pace does
 * not hold the fill), and when a fetching client goes (its connection
 * closed, its stream reset, it stopped reading) before the fill is done, so
 * the object's other readers and the store still get it.
 *
 * Owned here, per worker: the requests in flight (wc->bgreqs, at most
 * CT_CACHE_BG_MAX), freed when they end or by ct_fetch_bg_free_all() when
 * the worker exits. Worker thread only.
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "common/log.h"
#include "proxy/core/cache_int.h"
#include "proxy/core/proto.h"
#include "proxy/core/req.h"
#include "proxy/upstream/upstream.h"

struct ct_bgreq {
    unsigned magic;
#define CT_BGREQ_MAGIC 0xb9e0f7c1u
    struct ct_req r;
    struct ct_wcache *wc;
    struct event *start;         /* the next loop turn: its fetch starts, or reads on */
    struct ct_http_msg msg;      /* the request, its views into BUF and FIELDS */
    struct ct_http_field *fields;
    char *buf;
    char peer[64];               /* the trigger's, for X-Forwarded-For and logs */
    CT_LIST_LINK(ct_bgreq) link; /* wc->bgreqs */
};

static struct ct_bgreq *bg_of(struct ct_req *r)
{
    struct ct_bgreq *b = CT_CONTAINER_OF(r, struct ct_bgreq, r);
    CT_CHECK_OBJ(b, CT_BGREQ_MAGIC);
    return b;
}

static void bg_free(struct ct_bgreq *b)
{
    /* ct_req_free (fetch.c) for a request whose fill cannot be handed on
     * (cr->bg): its route, its cache part, its upstream if it has one */
    ct_req_route_release(&b->r);
    ct_creq_free(&b->r.cr);
    if (b->r.u)
        ct_upstream_release(&b->r.u, false);
    CT_LIST_REMOVE(&b->wc->bgreqs, b, link);
    b->wc->nbg--;
    event_free(b->start);
    free(b->fields);
    free(b->buf);
    b->magic = 0;
    free(b);
}

void ct_fetch_bg_free_all(struct ct_wcache *wc)
{
    while (CT_LIST_FIRST(&wc->bgreqs))
        bg_free(CT_LIST_FIRST(&wc->bgreqs));
}

/* ---- the null protocol: nobody to answer ---------------------------------------- */

/* The fill sends a refresh nothing (cr->bg): these calls have no client to
 * write to. They do nothing rather than assert, so a path that answers
 * "the client" of a refresh is harmless. */
static void null_deliver_head(struct ct_req *r, struct ct_obj *obj,
                              const struct ct_resp_plan *plan)
{
    (void)r, (void)obj, (void)plan;
}
static void null_send_obj_piece(struct ct_req *r, struct ct_obj *obj, struct ct_str piece)
{
    (void)r, (void)obj, (void)piece;
}
static void null_req(struct ct_req *r) { (void)r; }
static void null_send_synth(struct ct_req *r, unsigned status, struct ct_str body,
                            struct ct_str cache_status)
{
    (void)r, (void)status, (void)body, (void)cache_status;
}
static bool null_output_full(struct ct_req *r)
{
    (void)r;
    return false;
}
static bool null_body_finish(struct ct_req *r)
{
    (void)r;
    return true; /* its request has no body */
}
static bool null_frame_response(struct ct_req *r, const struct ct_http_msg *resp)
{
    (void)r, (void)resp;
    return false;
}
static void null_send_head(struct ct_req *r, const struct ct_http_msg *resp,
                           const struct ct_fwd_resp_extra *extra, bool body_direct)
{
    (void)r, (void)resp, (void)extra, (void)body_direct;
}
static void null_send_interim(struct ct_req *r, const struct ct_http_msg *resp)
{
    (void)r, (void)resp;
}
static struct evbuffer *null_body_out(struct ct_req *r, bool *chunked)
{
    (void)r;
    *chunked = false;
    return NULL; /* ct_fwd_pump drops the body */
}
static void null_send_body(struct ct_req *r, struct evbuffer *src, size_t n)
{
    (void)r;
    evbuffer_drain(src, n);
}
static bool null_tunnel(struct ct_req *r, const struct ct_http_msg *resp)
{
    (void)r, (void)resp;
    return false;
}
static enum ct_body_ev null_body_read(struct ct_req *r, struct evbuffer *dst, bool chunked,
                                      size_t *n)
{
    (void)r, (void)dst, (void)chunked;
    *n = 0;
    return CT_BODY_END;
}
static void null_body_hold(struct ct_req *r, bool hold) { (void)r, (void)hold; }

static void null_done(struct ct_req *r) { bg_free(bg_of(r)); }

static void null_fail(struct ct_req *r, enum ct_close why)
{
    struct ct_bgreq *b = bg_of(r);
    CT_WARN("w%u c%llu %s: background refresh of %.*s failed: %s", r->w->id,
            (unsigned long long)r->conn_id, r->peer, (int)r->msg->target.len, r->msg->target.p,
            ct_close_text(why));
    bg_free(b);
}

static const struct ct_proto null_proto = {
    .name = "background",
    .deliver_head = null_deliver_head,
    .send_obj_piece = null_send_obj_piece,
    .send_obj_end = null_req,
    .send_synth = null_send_synth,
    .output_full = null_output_full,
    .flush = null_req,
    .body_finish = null_body_finish,
    .frame_response = null_frame_response,
    .send_head = null_send_head,
    .send_interim = null_send_interim,
    .send_continue = null_req,
    .body_out = null_body_out,
    .send_body = null_send_body,
    .send_end = null_req,
    .tunnel = null_tunnel,
    .body_read = null_body_read,
    .body_hold = null_body_hold,
    .respond = null_req,
    .answered = null_req,
    .done = null_done,
    .fail = null_fail,
};

/* ---- the refresh's request ----------------------------------------------------- */

/* Fields of the trigger's request the refresh does not send: they would
 * change the answer (conditionals, Range, the client's own Cache-Control)
 * or speak of a body and framing it does not have. */
static bool dropped(const struct ct_http_msg *req, const struct ct_http_field *f)
{
    if (ct_hdr_flags(f->id) & CT_HDRF_CACHE_ANSWERS)
        return true;
    switch (f->id) {
    case CT_HDR_CACHE_CONTROL:
    case CT_HDR_EXPECT:
    case CT_HDR_CONTENT_LENGTH:
    case CT_HDR_TRANSFER_ENCODING:
        return true;
    default:
        return ct_http_msg_field_is_hop(req, f);
    }
}

static struct ct_str copy_into(char **p, struct ct_str s)
{
    memcpy(*p, s.p, s.len);
    struct ct_str out = ct_str_make(*p, s.len);
    *p += s.len;
    return out;
}

/* B's own GET for REQ's target and end-to-end fields, in one allocation
 * (views in B->msg point into it). False if REQ has no Host to send. */
static bool copy_request(struct ct_bgreq *b, const struct ct_http_msg *req)
{
    if (ct_http_msg_find(req, CT_HDR_HOST, NULL) == NULL)
        return false;
    size_t bytes = req->target.len, n = 0;
    for (size_t i = 0; i < req->nfields; i++)
        if (!dropped(req, &req->fields[i])) {
            bytes += req->fields[i].name.len + req->fields[i].value.len;
            n++;
        }
    b->buf = ct_xmalloc(bytes + 1);
    b->fields = ct_xcalloc(n + 1, sizeof(*b->fields));
    char *p = b->buf;
    b->msg = (struct ct_http_msg){
        .kind = CT_HTTP_REQUEST,
        .method = CT_METHOD_GET,
        .method_name = CT_STR("GET"),
        .version = 11,
        .framing = CT_FRAME_NONE,
        .keep_alive = true,
    };
    b->msg.target = copy_into(&p, req->target);
    size_t k = 0;
    for (size_t i = 0; i < req->nfields; i++) {
        const struct ct_http_field *f = &req->fields[i];
        if (dropped(req, f))
            continue;
        b->fields[k].id = f->id;
        b->fields[k].name = copy_into(&p, f->name);
        b->fields[k].value = copy_into(&p, f->value);
        k++;
    }
    ct_http_msg_set_fields(&b->msg, b->fields, k);
    return true;
}

static void on_start(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct ct_bgreq *b = arg;
    CT_CHECK_OBJ(b, CT_BGREQ_MAGIC);
    /* At FILL (bg_new): a refresh starts its fetch (nothing to look up: it
     * holds the fetch slot); a fill handed over (ct_fetch_adopt, fetch.c)
     * reads on what its upstream holds. May free b. */
    if (b->r.u == NULL)
        b->r.phase = CT_RP_FETCH;
    ct_req_run(&b->r);
}

/* A request of its own for R's request head, carried by the null protocol,
 * with a cache part that answers nobody (cr->bg); NULL if the head does not
 * fit its copy. Started by the caller (b->start). */
static struct ct_bgreq *bg_new(struct ct_req *r)
{
    struct ct_worker *w = r->w;
    struct ct_wcache *wc = w->wc;
    struct ct_bgreq *b = ct_xcalloc(1, sizeof(*b));
    b->magic = CT_BGREQ_MAGIC;
    b->wc = wc;
    if (!copy_request(b, r->msg)) {
        free(b);
        return NULL;
    }
    snprintf(b->peer, sizeof(b->peer), "%s", r->peer);
    b->r = (struct ct_req){
        .magic = CT_REQ_MAGIC,
        .proto = &null_proto,
        .w = w,
        .lc = &wc->bg_lc,
        .peer = b->peer,
        .peer_ip_len = r->peer_ip_len,
        .conn_id = r->conn_id, /* logs name the connection that triggered it */
        .msg = &b->msg,
        .body_done = true,
        .logged = true, /* not a client's request: no access-log line, no request counters */
    };
    ct_req_route_share(&b->r, r); /* its trigger's backend group */
    struct ct_creq *cr = ct_creq_new(&b->r);
    cr->bg_port = r->lc->kind == CT_LISTEN_HTTPS ? 443 : 80;
    ct_req_goto(&b->r, CT_STEP_FILL);
    cr->bg = true;
    b->start = evtimer_new(w->base, on_start, b);
    CT_LIST_INSERT_HEAD(&wc->bgreqs, b, link);
    wc->nbg++;
    return b;
}

bool ct_cache_bg_start(struct ct_req *r, struct ct_obj **fill, struct ct_obj **stale)
{
    if (r->w->wc->nbg >= CT_CACHE_BG_MAX)
        return false; /* the caller refreshes on the client's connection instead */
    struct ct_bgreq *b = bg_new(r);
    if (b == NULL)
        return false;
    /* Its cache part fills the BUSY object and answers nobody (bg). */
    struct ct_creq *cr = b->r.cr;
    cr->fill = *fill;
    cr->stale = *stale;
    *fill = *stale = NULL;
    cr->cs = CT_STATS_CS_STALE;
    cr->fwd_kind = "stale";
    cr->req_time = ct_time_real();
    event_active(b->start, EV_TIMEOUT, 0);
    CT_DEBUG("w%u c%llu %s: background refresh of %.*s", r->w->id,
             (unsigned long long)r->conn_id, r->peer, (int)r->msg->target.len, r->msg->target.p);
    return true;
}

/* ---- fills that outlive their client (fetch.c hands them over) ------------------ */

struct ct_req *ct_bg_new(struct ct_req *r)
{
    struct ct_bgreq *b = bg_new(r);
    return b ? &b->r : NULL;
}

void ct_bg_run(struct ct_req *br)
{
    event_active(bg_of(br)->start, EV_TIMEOUT, 0);
}
