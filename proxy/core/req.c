/*
 * proxy/core/req.c: what every request needs at its start and its end,
 * whichever step it is at: its cache part (struct ct_creq: made at the first
 * request of a carrier, reset for each), the response's start
 * (ct_req_respond) and end (ct_req_finish), our own short answers (SYNTH),
 * the hand-over to DELIVER, waiting on a busy object and giving up the wait,
 * the Cache-Status text, the cache key and policy of the request, and
 * whether a stale object may answer an origin error.
 *
 * A leaf of the request core's calls (beside stored.c and wcache.c): the
 * steps, the fetch and the fill call it; it calls none of them, only the
 * protocol (r->proto) and the step loop (ct_req_run).
 *
 * Worker thread only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "common/log.h"
#include "http/coding/coding.h"
#include "proxy/core/cache_int.h"
#include "proxy/core/proto.h"
#include "proxy/route/route.h"

struct ct_creq *ct_creq_new(struct ct_req *r)
{
    struct ct_creq *cr = ct_xcalloc(1, sizeof(*cr));
    cr->magic = CT_CREQ_MAGIC;
    cr->r = r;
    cr->ae_class = CT_CODING_NONE;
    ct_cache_waiter_init(&cr->waiter, ct_wcache_waiter_wake, cr);
    r->cr = cr;
    return cr;
}

void ct_creq_unwait(struct ct_creq *cr)
{
    if (cr->waiting) {
        ct_obj_unwait(&cr->waiter); /* after this, waiter_wake cannot run */
        cr->waiting = false;
    }
    if (cr->registered) { /* only then can a wake be queued (saves a lock per hit) */
        ct_wcache_dequeue(cr);
        cr->registered = false;
    }
    if (cr->timer_on) {
        evtimer_del(cr->timer);
        cr->timer_on = false;
    }
}

/* Register on cr->obj; false if there is news already (read now). */
bool ct_creq_wait_obj(struct ct_creq *cr, enum ct_obj_state seen, uint64_t have)
{
    CT_ASSERT(!cr->waiting);
    if (!ct_obj_wait(cr->obj, &cr->waiter, seen, have))
        return false;
    cr->waiting = cr->registered = true;
    return true;
}

/* Drop what the last request held. A fill still unended here was cut short. */
void ct_creq_reset(struct ct_creq *cr)
{
    ct_creq_unwait(cr);
    if (cr->fill)
        ct_obj_fail(cr->fill);
    ct_obj_release(&cr->fill);
    ct_obj_release(&cr->obj);
    ct_obj_release(&cr->stale);
    cr->cs = CT_STATS_CS_NONE;
    cr->discard = cr->store_ok = cr->bg = false;
    cr->self = cr->stripped = cr->validate = cr->range_hold = false;
    cr->fwd_kind = "miss"; /* RFC 9211: when neither uri-miss nor vary-miss is known */
    cr->skip = 0;
    cr->relookups = 0;
    cr->cstatus = CT_STR_NULL;
    if (cr->scratch)
        evbuffer_drain(cr->scratch, evbuffer_get_length(cr->scratch));
    ct_codec_free(&cr->enc);
    ct_ce_head_free(&cr->otf_head);
    if (CT_UNLIKELY(cr->derive != NULL))
        cr->derive_free(&cr->derive); /* cache_derive.c's, handed down */
    cr->ae_class = CT_CODING_NONE;
    if (cr->zbuf)
        evbuffer_drain(cr->zbuf, evbuffer_get_length(cr->zbuf));
}

struct ct_creq *ct_creq_take(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    CT_ASSERT(r->u == NULL);
    if (cr == NULL)
        return NULL;
    CT_CHECK_OBJ(cr, CT_CREQ_MAGIC);
    ct_creq_reset(cr);
    cr->r = NULL;
    r->cr = NULL;
    return cr;
}

void ct_creq_give(struct ct_req *r, struct ct_creq *cr)
{
    CT_CHECK_OBJ(cr, CT_CREQ_MAGIC);
    CT_ASSERT(r->cr == NULL && cr->r == NULL);
    cr->r = r;
    r->cr = cr;
}

void ct_creq_free(struct ct_creq **crp)
{
    struct ct_creq *cr = *crp;
    if (cr == NULL)
        return;
    CT_CHECK_OBJ(cr, CT_CREQ_MAGIC);
    ct_creq_reset(cr);
    if (cr->timer)
        event_free(cr->timer);
    if (cr->scratch)
        evbuffer_free(cr->scratch);
    if (cr->zbuf)
        evbuffer_free(cr->zbuf);
    free(cr->ae_fields);
    free(cr->fwd_fields);
    free(cr->keybuf);
    cr->magic = 0;
    CT_FREE(crp);
}

bool ct_req_https(const struct ct_req *r)
{
    if (r->cr && r->cr->bg_port) /* a refresh: bg_port is the trigger's default port */
        return r->cr->bg_port == 443;
    return r->lc->kind == CT_LISTEN_HTTPS;
}

unsigned ct_req_cs(const struct ct_req *r)
{
    return r->cr ? r->cr->cs : CT_STATS_CS_NONE;
}

const struct ct_cache_policy_opts *ct_req_popts(const struct ct_req *r)
{
    const struct ct_conf_route *rc = r->route ? r->route->conf : NULL;
    /* strip_set_cookie: stored without the field (cache_fill.c), so storable */
    int sc = rc && rc->strip_set_cookie ? 2 : 0;
    if (r->cr && r->cr->bg_port) /* a refresh: its request has no CC */
        return &r->w->wc->popts[sc];
    /* A property of the listener struct, not of its index in the startup
     * table: reloads add, replace and reorder listeners. */
    bool honour = r->lc->honour_client_cc;
    if (rc && rc->cache.honour_client_cc != CT_CONF_TRI_INHERIT)
        honour = rc->cache.honour_client_cc == CT_CONF_TRI_ON; /* the route's say */
    return &r->w->wc->popts[(honour ? 0 : 1) | sc];
}

/* Cache-Status is set for every forwarded response, and its formats only use
 * %s and %u: those are expanded here by hand (vsnprintf's format parsing
 * showed on the pass path), and the literal runs between them are copied
 * whole (a byte loop over the format cost ~600 instructions per response);
 * any other conversion goes to vsnprintf. Same result either way, truncated
 * to the buffer like snprintf. */
static size_t cstatus_put(char *b, size_t n, size_t cap, const char *s, size_t k)
{
    k = CT_MIN(k, cap - n);
    memcpy(b + n, s, k);
    return n + k;
}

static size_t cstatus_fmt(char *b, size_t cap, const char *fmt, va_list ap)
{
    size_t n = 0;
    const char *f = fmt;
    while (*f != '\0' && n < cap) {
        const char *pct = strchr(f, '%');
        if (pct == NULL)
            return cstatus_put(b, n, cap, f, strlen(f));
        n = cstatus_put(b, n, cap, f, (size_t)(pct - f));
        if (pct[1] == 's') {
            const char *s = va_arg(ap, const char *);
            n = cstatus_put(b, n, cap, s, strlen(s));
        } else if (pct[1] == 'u') {
            unsigned v = va_arg(ap, unsigned);
            char d[10];
            size_t k = 0;
            do
                d[k++] = (char)('0' + v % 10);
            while ((v /= 10) != 0);
            while (k > 0 && n < cap)
                b[n++] = d[--k];
        } else {
            return SIZE_MAX;
        }
        f = pct + 2;
    }
    return n;
}

void ct_creq_set_status(struct ct_creq *cr, const char *fmt, ...)
{
    size_t cap = sizeof(cr->cstatus_buf) - 1;
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    size_t n = cstatus_fmt(cr->cstatus_buf, cap, fmt, ap);
    if (n == SIZE_MAX) {
        int k = vsnprintf(cr->cstatus_buf, sizeof(cr->cstatus_buf), fmt, again);
        n = k < 0 ? 0 : CT_MIN((size_t)k, cap);
    }
    va_end(again);
    va_end(ap);
    cr->cstatus_buf[n] = '\0';
    cr->cstatus = ct_str_make(cr->cstatus_buf, n);
}

bool ct_req_key_for(struct ct_req *r, struct ct_str target, struct ct_cache_key *key)
{
    struct ct_creq *cr = r->cr;
    struct ct_wcache *wc = r->w->wc;
    const struct ct_http_msg *req = r->msg;
    struct ct_cache_key_opts ko = wc->kopts;
    char qbuf[2048];
    target = ct_req_route_key(r->route, target, &ko, qbuf, sizeof(qbuf));
    const struct ct_http_field *host = ct_http_msg_find(req, CT_HDR_HOST, NULL);
    struct ct_cache_key_in in = {
        .mclass = CT_CACHE_MCLASS_GET,
        .host = host ? host->value : CT_STR_NULL,
        .default_port = cr->bg_port ? cr->bg_port : r->lc->kind == CT_LISTEN_HTTPS ? 443 : 80,
        .target = target,
        .header_value = CT_STR_NULL,
    };
    if (ko.header_name.len) {
        const struct ct_http_field *f = ct_http_msg_find_name(req, ko.header_name, NULL);
        if (f)
            in.header_value = f->value;
    }
    if (ko.cookie_name.len) /* the first pair of that name, as a server reads it (RFC 6265 §5.4) */
        for (const struct ct_http_field *f = ct_http_msg_find(req, CT_HDR_COOKIE, NULL);
             f && !in.cookie_value.p; f = ct_http_msg_find(req, CT_HDR_COOKIE, f)) {
            struct ct_str rest = f->value, name, val;
            while (ct_http_pair_next(&rest, ';', &name, &val))
                if (ct_str_eq(name, ko.cookie_name)) {
                    in.cookie_value = val;
                    break;
                }
        }
    size_t need = ct_cache_key_size(&in);
    if (need > cr->keycap) {
        free(cr->keybuf);
        cr->keycap = need < 512 ? 512 : need;
        cr->keybuf = ct_xmalloc(cr->keycap);
    }
    return ct_cache_key_build(&ko, &in, cr->keybuf, cr->keycap, key) == CT_OK;
}

/* The response is out: next request (C may be gone after this). */
void ct_req_finish(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    ct_obj_release(&cr->obj);
    ct_obj_release(&cr->stale);
    if (r->step != CT_STEP_PASS && r->step != CT_STEP_FILL) /* a refresh after the answer goes on */
        ct_req_goto(r, CT_STEP_DONE);
    r->proto->flush(r);
    r->proto->done(r);
}

/* R's next step is SYNTH: STATUS with BODY (a view that must live until
 * the step ran) and the Cache-Status set in cr->cstatus. */
void ct_req_to_synth(struct ct_req *r, unsigned status, struct ct_str body)
{
    struct ct_creq *cr = r->cr;
    cr->synth_status = status;
    cr->synth_body = body;
    ct_req_goto(r, CT_STEP_SYNTH);
}

enum ct_req_next ct_step_synth(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    r->proto->send_synth(r, cr->synth_status, cr->synth_body, cr->cstatus);
    ct_req_respond(r);
    r->head_sent = true;
    r->status = cr->synth_status;
    if (r->msg->method != CT_METHOD_HEAD)
        r->body_out += cr->synth_body.len; /* access log $body_bytes_sent */
    ct_req_finish(r);
    return CT_REQ_GONE;
}

void ct_req_answer(struct ct_req *r, unsigned status, struct ct_str body, struct ct_str cstatus)
{
    struct ct_creq *cr = r->cr ? r->cr : ct_creq_new(r);
    ct_creq_reset(cr);
    /* The request's end is read before the answer (the cache step does so
     * for the requests it answers): a body already here is read, else the
     * carrier closes; a bodiless one's end must be taken too, or HTTP/1
     * reads it as the next request's first event (a keep-alive client's
     * second request after a route's answer crashed on it). */
    (void)r->proto->body_finish(r);
    cr->cstatus = cstatus;
    ct_req_to_synth(r, status, body);
    (void)ct_step_synth(r); /* now: BODY and CSTATUS are the caller's stack */
}

/* May STALE be served instead of an origin error at NOW (RFC 5861 §4, or the
 * operator's stale_if_error)? */
bool ct_req_sie_ok(struct ct_req *r, struct ct_obj *stale, ct_time_t now)
{
    struct ct_stored_blk blk;
    struct ct_str wire;
    if (stale == NULL || !ct_stored_blk_get(stale, &blk, &wire))
        return false;
    if (blk.fresh.flags & (CT_CACHE_F_MUST_REVALIDATE | CT_CACHE_F_NO_CACHE))
        return false;
    double window = blk.fresh.stale_if_error != CT_CC_UNSET
                        ? (double)blk.fresh.stale_if_error
                        : (double)r->w->cf->cache.stale_if_error_ms / 1000.0;
    return -ct_cache_policy_ttl(&blk.fresh, now) <= window;
}

void ct_req_to_deliver(struct ct_req *r, struct ct_obj *obj, struct ct_str cstatus)
{
    struct ct_creq *cr = r->cr;
    ct_obj_release(&cr->obj);
    cr->obj = obj;
    if (cstatus.p != cr->cstatus_buf) {
        cstatus.len = CT_MIN(cstatus.len, sizeof(cr->cstatus_buf) - 1);
        memcpy(cr->cstatus_buf, cstatus.p, cstatus.len);
    }
    cr->cstatus = ct_str_make(cr->cstatus_buf, cstatus.len);
    ct_req_goto(r, CT_STEP_DELIVER);
}

void ct_req_respond(struct ct_req *r)
{
    r->phase = CT_RP_SEND;
    r->proto->respond(r);
}
