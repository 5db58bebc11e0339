/*
 * proxy/core/cache_req.c: the cache's steps of the request machine
 * (req_step.h, docs/req_fsm.dot): Varnish's recv -> lookup -> hit / miss /
 * pass / busy -> deliver.
 *
 *   cache:   GET/HEAD without a body take the cache path; PURGE is answered
 *            here; every other method is a pass (its response may invalidate,
 *            see cache_fill.c).
 *   lookup:  HIT     -> deliver (or 304 / 206 / 416 from the object)
 *            STALE   -> within grace: deliver the stale object at once; if we
 *                       hold the fetch slot, refresh it in the background on
 *                       this connection; else revalidate in the foreground
 *            BUSY    -> wait on the object (coalescing), then stream from it
 *            MISS    -> fetch into the new object (cache_fill.c)
 *            PASS    -> hit-for-miss: fetch, do not store
 *
 * Delivery from an object is cache_deliver.c; storing is cache_fill.c.
 *
 * Streaming from a busy object: a reader adds what is there, then registers a
 * one-shot waiter. The store calls the waiter's wake on the fetcher's thread
 * under a shard lock; the wake only queues the reader on its own worker's
 * wake queue (mutex + eventfd), and the worker continues it from its loop.
 * A reader stops adding while its output holds CT_BP_HIGH bytes and resumes
 * from the drained callback: a slow reader costs references, not copies, and
 * never slows the fetch or the other readers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "http/coding/coding.h"
#include "proxy/core/cache_derive.h"
#include "http/http_hdrindex.h"
#include "proxy/core/cache_ban_glue.h"
#include "proxy/core/cache_int.h"
#include "proxy/core/fleet_step.h"
#include "proxy/route/route.h"
#include "proxy/core/proto.h"
#include "proxy/stats/stats.h"
#include "proxy/upstream/upstream.h"

#define MAX_RELOOKUPS 4

static bool lookup_as(struct ct_req *r, bool revalidate);
static void on_wait_timeout(evutil_socket_t fd, short what, void *arg);

/* ---- short answers of our own ----------------------------------------------------- */

/* A short answer of our own (PURGE, only-if-cached, waiter timeout), with
 * texts that live as long as the program. */
static void answer(struct ct_req *r, unsigned status, const char *body, const char *cstatus)
{
    r->cr->cstatus = ct_str_c(cstatus);
    ct_req_to_synth(r, status, ct_str_c(body));
}

/* Nothing the client accepts is stored or may be made from what is
 * (RFC 9110 §12.5.3, §15.5.7; cache_derive.h). */
static void not_acceptable(struct ct_req *r)
{
    answer(r, 406, "406 Not Acceptable (no acceptable content coding)\n",
           "cachet; hit; detail=not-acceptable");
}

/* ---- waiting on a busy object ---------------------------------------------------- */

static void relookup(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    ct_obj_release(&cr->obj);
    if (++cr->relookups > MAX_RELOOKUPS) {
        ct_req_goto(r, CT_STEP_PASS);
        ct_creq_set_status(cr, "cachet; fwd=uri-miss; detail=busy-retries");
        return;
    }
    ct_req_goto(r, CT_STEP_LOOKUP);
}

/* Does R wait for the filling OBJ to end before it answers? A body of
 * unknown length may outgrow max_object_size on its way and be dropped: a
 * waiter that had been sent its head then could only be cut, so it is sent
 * nothing until the object is complete, or fetches on its own when it is
 * dropped (nginx's proxy_cache_lock: a waiter never gets a broken answer).
 * A Content-Length or a bound (CT_STORED_BOUNDED) says at the head that
 * it fits: those stream at once. A HEAD needs no body. */
static bool waits_for_end(const struct ct_req *r, const struct ct_obj *obj)
{
    struct ct_stored_blk blk;
    struct ct_str wire;
    return r->msg->method != CT_METHOD_HEAD && ct_stored_blk_get(obj, &blk, &wire) &&
           ct_stored_may_outgrow(&blk);
}

/* WAIT: the busy object we wait on changed (or the first look at it). */
enum ct_req_next ct_step_wait(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    for (;;) {
        enum ct_obj_state st = ct_obj_state(cr->obj);
        if (st == CT_OBJ_BUSY || (st == CT_OBJ_STREAMING && waits_for_end(r, cr->obj))) {
            if (ct_creq_wait_obj(cr, st, st == CT_OBJ_BUSY ? 0 : CT_OBJ_WAIT_END))
                return CT_REQ_PARK; /* on_obj_change() or the timeout run R again */
            continue;
        }
        evtimer_del(cr->timer);
        cr->timer_on = false;
        if (st == CT_OBJ_ABANDONED && ct_obj_status(cr->obj) != 0) {
            /* Its head was stored, then its body outgrew the store (or the
             * memory): nothing was sent, fetch on our own (fill_outgrown). */
            ct_obj_release(&cr->obj);
            ct_req_goto(r, CT_STEP_PASS);
            ct_stats_add(&r->w->stats->cache_waiters_released[0], 1);
            ct_creq_set_status(cr, "cachet; fwd=uri-miss; detail=too-big");
        } else if (st == CT_OBJ_ABANDONED) {
            /* Not storable: fetch on our own at once (issue 6). */
            ct_obj_release(&cr->obj);
            ct_req_goto(r, CT_STEP_PASS);
            cr->cs = CT_STATS_CS_HIT_FOR_MISS;
            ct_creq_set_status(cr, "cachet; fwd=uri-miss; detail=uncacheable");
        } else if (st == CT_OBJ_FAILED ||
                   !ct_cache_vary_match(ct_obj_vary(cr->obj), r->msg)) {
            relookup(r);
        } else {
            cr->cs = CT_STATS_CS_COALESCED;
            ct_req_to_deliver(r, ct_obj_ref(cr->obj), CT_STR("cachet; fwd=miss; collapsed"));
        }
        return CT_REQ_MORE;
    }
}

/* Arm the waiter timeout from now, noting how far the body has got. */
static void arm_wait_timer(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    uint64_t ms = r->w->cf->cache.waiter_timeout_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    cr->held_len = ct_obj_body_len(cr->obj);
    if (ms) {
        if (cr->timer == NULL) /* made at the first wait: most carriers never wait */
            cr->timer = evtimer_new(r->w->base, on_wait_timeout, cr);
        evtimer_add(cr->timer, &tv);
        cr->timer_on = true;
    }
}

static void wait_on(struct ct_req *r, struct ct_obj *busy)
{
    struct ct_creq *cr = r->cr;
    ct_obj_release(&cr->obj);
    cr->obj = busy;
    ct_req_goto(r, CT_STEP_WAIT);
    arm_wait_timer(r);
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct ct_creq *cr = arg;
    CT_CHECK_OBJ(cr, CT_CREQ_MAGIC);
    struct ct_req *r = cr->r;
    if (r->step != CT_STEP_WAIT)
        return;
    /* A fill held for its end (waits_for_end) that grew since the timer was
     * armed is not stuck: the timeout counts from its last growth, as the
     * fetch's own read timeout does, so a long body that keeps coming is
     * waited for and one that stalls is not. A head not yet come counts
     * from the start. */
    if (ct_obj_state(cr->obj) == CT_OBJ_STREAMING && ct_obj_body_len(cr->obj) > cr->held_len) {
        arm_wait_timer(r);
        return;
    }
    cr->timer_on = false;
    ct_creq_unwait(cr);
    ct_obj_release(&cr->obj);
    if (r->w->cf->cache.waiter_timeout_action == CT_CONF_WAITER_FETCH) {
        ct_req_goto(r, CT_STEP_PASS);
        ct_creq_set_status(cr, "cachet; fwd=uri-miss; detail=wait-timeout");
    } else {
        CT_WARN("w%u c%llu %s: waited %llu ms on another fetch of %.*s: 504", r->w->id,
                (unsigned long long)r->conn_id, r->peer,
                (unsigned long long)r->w->cf->cache.waiter_timeout_ms, (int)r->msg->target.len,
                r->msg->target.p);
        answer(r, 504, "504 Gateway Timeout\n", "cachet; fwd=uri-miss; detail=wait-timeout");
    }
    ct_req_run(r);
}

/* ---- recv and lookup ------------------------------------------------------------------ */

/* A bodiless request: the protocol sees its end now, so the connection can
 * take the next request when we answer without the origin. */
static bool finish_request(struct ct_req *r) { return r->proto->body_finish(r); }

static bool peer_may_purge(const struct ct_req *r)
{
    const struct ct_conf_cache *cc = &r->w->cf->cache;
    char ip[64];
    unsigned char a[16];
    int fam = AF_INET;
    snprintf(ip, sizeof(ip), "%.*s", (int)r->peer_ip_len, r->peer);
    if (inet_pton(AF_INET, ip, a) != 1) {
        fam = AF_INET6;
        if (inet_pton(AF_INET6, ip, a) != 1)
            return false;
    }
    for (size_t i = 0; i < cc->npurge_allow; i++) {
        const struct ct_conf_cidr *ci = &cc->purge_allow[i];
        if (ci->family != fam)
            continue;
        unsigned bits = ci->prefix_len, k = 0;
        for (; bits >= 8; bits -= 8, k++)
            if (a[k] != ci->addr[k])
                break;
        if (bits < 8 && (bits == 0 || ((a[k] ^ ci->addr[k]) & (0xff00u >> bits) & 0xff) == 0))
            return true;
    }
    return false;
}

enum ct_req_next ct_step_purge(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    /* no cache outcome: nothing was looked up for the client nor passed to
     * the origin (logged "-", not counted as a pass) */
    cr->cs = CT_STATS_CS_NONE;
    if (!peer_may_purge(r)) {
        answer(r, 403, "403 PURGE not allowed from this address\n", "cachet; detail=purge");
        return CT_REQ_MORE;
    }
    /* Soft (Fastly's `Fastly-Soft-Purge: 1`): stale at once, revalidated. */
    const struct ct_http_field *sf = ct_http_msg_find_name(r->msg, CT_STR("Soft-Purge"), NULL);
    if (sf == NULL)
        sf = ct_http_msg_find_name(r->msg, CT_STR("Fastly-Soft-Purge"), NULL);
    enum ct_cache_purge mode =
        sf && ct_str_eq(sf->value, CT_STR("1")) ? CT_CACHE_PURGE_SOFT : CT_CACHE_PURGE_HARD;
    ct_time_t now = ct_time_real();
    size_t n = 0;
    /* With tag fields (cache.tag_headers), the tags they name are purged
     * instead of the URL: `PURGE / HTTP/1.1` + `Surrogate-Key: a b`. */
    struct ct_str tags[CT_CACHE_TAGS_MAX];
    size_t ntags = ct_cache_tags_of(r, r->msg, tags);
    for (size_t i = 0; i < ntags; i++)
        n += ct_cache_purge_tag(r->w->wc->cache, tags[i], mode, now);
    if (ntags == 0) {
        /* keyed as a GET of its URL is (and as the other nodes key it) */
        const struct ct_route *was = r->route;
        r->route = ct_req_route_as_get(r);
        if (ct_req_key_for(r, r->msg->target, &cr->key))
            n = ct_cache_purge_key_mode(r->w->wc->cache, &cr->key, mode, now);
        r->route = was;
    }
    CT_INFO("w%u c%llu %s: PURGE%s %.*s%s: %zu objects", r->w->id, (unsigned long long)r->conn_id,
            r->peer, mode == CT_CACHE_PURGE_SOFT ? " (soft)" : "", (int)r->msg->target.len,
            r->msg->target.p, ntags ? " by tag" : "", n);
    /* the other nodes may hold it when this one does not (404 too). Not
     * queued for them: 503, since a CDN's purge API succeeds only for what
     * it accepted network-wide (Fastly's "ok"; Akamai fails the request),
     * so purging tools retry (PURGE is idempotent); a 200 would hide that
     * the owner serves the object on until its TTL (docs/fleet.md). */
    if (CT_UNLIKELY(r->w->cf->fleet.self != NULL) &&
        !ct_req_fleet_purge(r, mode == CT_CACHE_PURGE_SOFT, tags, ntags)) {
        r->synth_retry_after = CT_STR("1");
        answer(r, 503, "503 Purged on this node only: the fleet's PURGE queue is full; retry\n",
               "cachet; detail=purge-fanout-full");
        return CT_REQ_MORE;
    }
    answer(r, n ? 200 : 404, n ? "200 Purged\n" : "404 Not in cache\n", "cachet; detail=purge");
    return CT_REQ_MORE;
}

static enum ct_req_next pass(struct ct_req *r, const char *detail)
{
    struct ct_creq *cr = r->cr;
    ct_req_goto(r, CT_STEP_PASS);
    cr->cs = CT_STATS_CS_PASS;
    ct_creq_set_status(cr, "cachet; fwd=bypass; detail=%s", detail);
    return CT_REQ_MORE;
}

static double ttl_left(const struct ct_stored_blk *blk, ct_time_t now)
{
    return ct_cache_policy_ttl(&blk->fresh, now);
}

/* A complete stored OBJ for this request at NOW (HIT or STALE). The request's
 * own directives RQ decide (§5.2.1). Returns true if answered. */
static bool use_stored(struct ct_req *r, struct ct_obj *obj, const struct ct_cc *rq, ct_time_t now,
                       bool stale)
{
    struct ct_creq *cr = r->cr;
    struct ct_stored_blk blk;
    struct ct_str wire;
    CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
    enum ct_cache_use use = ct_cache_policy_use_cc(&blk.fresh, rq, now);
    switch (use) {
    case CT_CACHE_USE_FRESH:
    case CT_CACHE_USE_STALE_OK: {
        cr->cs = stale ? CT_STATS_CS_STALE : CT_STATS_CS_HIT;
        if (!stale)
            ct_req_log_hit(r, obj);
        char *cs = cr->cstatus_buf; /* per hit: no printf */
        memcpy(cs, "cachet; hit; ttl=", 17);
        char *end = ct_put_i64(cs + 17, (int64_t)ttl_left(&blk, now));
        struct ct_str cstatus = ct_str_make(cs, (size_t)(end - cs));
        if (CT_UNLIKELY((blk.flags & CT_STORED_CODING_MASK) != 0) &&
            (int)(blk.flags & CT_STORED_CODING_MASK) != cr->ae_class) {
            bool refuse; /* stored coded, and not in the client's class */
            if (ct_cache_derive_hit(r, obj, &blk, cstatus, &refuse))
                return true; /* DECODE next */
            if (refuse) {
                not_acceptable(r);
                return true;
            }
        }
        ct_req_to_deliver(r, ct_obj_ref(obj), cstatus);
        return true;
    }
    case CT_CACHE_USE_GATEWAY_TIMEOUT:
        answer(r, 504, "504 Gateway Timeout (only-if-cached)\n",
               "cachet; fwd=uri-miss; detail=only-if-cached");
        return true;
    case CT_CACHE_USE_REVALIDATE:
    case CT_CACHE_USE_FETCH:
        return false;
    }
    return false;
}

/* Within grace (or the response's stale-while-revalidate), and the client did
 * not ask for a fresh answer. */
static bool graceful(struct ct_obj *obj, const struct ct_cc *rq, ct_time_t now)
{
    struct ct_stored_blk blk;
    struct ct_str wire;
    CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
    if (blk.fresh.flags & (CT_CACHE_F_MUST_REVALIDATE | CT_CACHE_F_NO_CACHE))
        return false;
    if ((rq->flags & CT_CC_NO_CACHE) || rq->max_age != CT_CC_UNSET || rq->min_fresh != CT_CC_UNSET)
        return false;
    return ct_obj_in_grace(obj, now);
}

static bool on_stale(struct ct_req *r, struct ct_cache_lookup_res *res, const struct ct_cc *rq,
                     ct_time_t now)
{
    struct ct_creq *cr = r->cr;
    if (use_stored(r, res->obj, rq, now, true)) {
        if (res->fetch)
            ct_obj_abandon(res->fetch, now, 0);
        ct_cache_lookup_res_release(res);
        return true;
    }
    if (graceful(res->obj, rq, now) && !(r->msg->method == CT_METHOD_HEAD && res->fetch)) {
        struct ct_stored_blk blk;
        struct ct_str wire;
        char cs[112];
        CT_ASSERT(ct_stored_blk_get(res->obj, &blk, &wire));
        snprintf(cs, sizeof(cs), "cachet; hit; ttl=%lld; detail=stale-while-revalidate",
                 (long long)ttl_left(&blk, now));
        cr->cs = CT_STATS_CS_STALE;
        if (res->fetch == NULL) { /* someone else refreshes it */
            ct_req_to_deliver(r, ct_obj_ref(res->obj), ct_str_c(cs));
            ct_cache_lookup_res_release(res);
            return true;
        }
        /* We hold the one refresh: answer with the stale object now and hand
         * the refresh to a request of its own (cache_bg.c). */
        struct ct_obj *st = ct_obj_ref(res->obj);
        if (ct_cache_bg_start(r, &res->fetch, &st)) {
            ct_req_to_deliver(r, ct_obj_ref(res->obj), ct_str_c(cs));
            ct_cache_lookup_res_release(res);
            return true;
        }
        ct_obj_release(&st);
        /* Fallback: refresh on this connection after its answer (its next
         * request waits for the refresh; other clients get the stale copy). */
        cr->fill = res->fetch;
        cr->stale = res->obj;
        res->fetch = res->obj = NULL;
        ct_cache_lookup_res_release(res);
        CT_ASSERT(ct_cache_emit(r, cr->stale, ct_str_c(cs), false));
        ct_obj_release(&cr->obj); /* emit's hold: the whole body is queued */
        cr->bg = true;
        ct_req_goto(r, CT_STEP_FILL);
        r->proto->flush(r);
        /* The client may close now that it has its answer: do not read, so
         * its EOF does not end the refresh; reading resumes with its next
         * request (enter_read_head), after the refresh. */
        r->proto->answered(r);
        return false;
    }
    cr->cs = CT_STATS_CS_MISS;
    if (res->fetch) { /* revalidate (conditional if it has validators), or refetch */
        cr->fill = res->fetch;
        cr->stale = res->obj;
        res->fetch = res->obj = NULL;
        ct_cache_lookup_res_release(res);
        ct_req_goto(r, CT_STEP_FILL);
        return false;
    }
    if (res->busy) { /* someone else refreshes: wait for it like any miss */
        struct ct_obj *busy = res->busy;
        res->busy = NULL;
        ct_cache_lookup_res_release(res);
        cr->cs = CT_STATS_CS_COALESCED;
        wait_on(r, busy);
        return true;
    }
    cr->stale = res->obj; /* no room for a new object: fetch, keep it for errors */
    res->obj = NULL;
    ct_cache_lookup_res_release(res);
    ct_req_goto(r, CT_STEP_PASS);
    ct_creq_set_status(cr, "cachet; fwd=%s; detail=not-stored", cr->fwd_kind);
    return false;
}

static const char *miss_name(enum ct_cache_miss m)
{
    switch (m) {
    case CT_CACHE_MISS_URI: return "uri-miss";
    case CT_CACHE_MISS_VARY: return "vary-miss";
    case CT_CACHE_MISS_OTHER: break;
    }
    return "miss";
}

/* Look the request up; REVALIDATE: its directives forbid using the fresh
 * object unvalidated, so the store answers STALE with the fetch slot (or the
 * fetch in progress, to wait on) instead of HIT. */
static bool lookup_as(struct ct_req *r, bool revalidate)
{
    struct ct_creq *cr = r->cr;
    struct ct_wcache *wc = r->w->wc;
    const struct ct_http_msg *req = r->msg;
    ct_time_t now = ct_time_real();
    bool head = req->method == CT_METHOD_HEAD;
    struct ct_cc rq; /* read once: every answer below asks */
    ct_cache_policy_req_cc(req, ct_req_popts(r), &rq);
    struct ct_cache_lookup_req lr = {
        .key = &cr->key,
        .match = ct_cache_vary_match_cb,
        .match_arg = (void *)req,
        /* HEAD is answered from a stored GET but never fills one. */
        .no_insert = head || ct_cache_policy_on_miss_cc(&rq) == CT_CACHE_USE_GATEWAY_TIMEOUT,
        .revalidate = revalidate,
    };
    struct ct_cache_lookup_res res = {0};
    cr->req_time = now;
    switch (ct_cache_lookup(wc->cache, &lr, now, &res)) {
    case CT_CACHE_HIT:
        if (use_stored(r, res.obj, &rq, now, false)) {
            ct_cache_lookup_res_release(&res);
            return true;
        }
        /* The client wants it validated (no-cache, max-age=0..., RFC 9111
         * §5.2.1): look again for the fetch slot, so the answer refreshes or
         * replaces the object and such requests coalesce; the object stays
         * fresh for everyone else meanwhile. */
        ct_cache_lookup_res_release(&res);
        CT_ASSERT(!revalidate);
        return lookup_as(r, true);
    case CT_CACHE_STALE:
        cr->fwd_kind = revalidate ? "request" : "stale";
        cr->validate = revalidate;
        return on_stale(r, &res, &rq, now);
    case CT_CACHE_BUSY: {
        struct ct_obj *busy = res.busy;
        res.busy = NULL;
        ct_cache_lookup_res_release(&res);
        cr->cs = CT_STATS_CS_COALESCED;
        wait_on(r, busy);
        return true;
    }
    case CT_CACHE_PASS:
        ct_req_goto(r, CT_STEP_PASS);
        cr->cs = CT_STATS_CS_HIT_FOR_MISS;
        ct_creq_set_status(cr, "cachet; fwd=uri-miss; detail=hit-for-miss");
        return false;
    case CT_CACHE_MISS:
        break;
    }
    if (res.miss == CT_CACHE_MISS_VARY && !revalidate) {
        /* another class's variant may answer (cache_derive.h) */
        enum ct_derive_rc d = ct_cache_derive_vary_miss(r, now, &res.fetch);
        if (d != CT_DERIVE_NONE) { /* res.fetch was dropped before the answer */
            ct_cache_lookup_res_release(&res);
            if (d == CT_DERIVE_REFUSE)
                not_acceptable(r);
            return true;
        }
    }
    cr->fwd_kind = miss_name(res.miss);
    if (ct_cache_policy_on_miss(req, ct_req_popts(r)) == CT_CACHE_USE_GATEWAY_TIMEOUT) {
        ct_cache_lookup_res_release(&res);
        ct_creq_set_status(cr, "cachet; fwd=%s; detail=only-if-cached", cr->fwd_kind);
        ct_req_to_synth(r, 504, CT_STR("504 Gateway Timeout (only-if-cached)\n"));
        return true;
    }
    cr->cs = CT_STATS_CS_MISS;
    cr->fill = res.fetch; /* NULL: HEAD, or no memory: forward, do not store */
    res.fetch = NULL;
    ct_cache_lookup_res_release(&res);
    ct_req_goto(r, cr->fill ? CT_STEP_FILL : CT_STEP_PASS);
    if (cr->fill == NULL)
        ct_creq_set_status(cr, "cachet; fwd=%s; detail=%s", cr->fwd_kind,
                           head ? "head" : "no-memory");
    return false;
}

/* LOOKUP: every outcome of lookup_as() set the next step. */
enum ct_req_next ct_step_lookup(struct ct_req *r)
{
    (void)lookup_as(r, false);
    return CT_REQ_MORE;
}

/* Accept-Encoding to its class before the lookup (issue 18): every spelling
 * of one preference becomes the class's name, so Vary: Accept-Encoding
 * keys one variant per class (never one per spelling: the variant explosion
 * users of other caches report), and
 * the origin is asked for that coding. R's message becomes a copy with the
 * one field replaced (views into the parser's, kept alive as r->msg's; the
 * original stays in cr->ae_orig for cache_derive.c, which needs what else
 * the client accepts). A request whose class is "nothing acceptable" is
 * left as sent: a 406 when a variant is stored (cache_derive.h), else the
 * origin sees it as sent. */
static bool ae_offered(const struct ct_ae_pref *pref, enum ct_coding c)
{
    if (c == CT_CODING_IDENTITY)
        return true; /* always offered (http/http_ae.h) */
    for (unsigned i = 0; i < pref->n; i++)
        if (pref->order[i] == c)
            return true;
    return false;
}

static void normalise_ae(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    const struct ct_conf_compression *cz = &r->w->cf->compression;
    const struct ct_http_msg *req = r->msg;
    cr->ae_class = CT_CODING_NONE;
    if (!cz->enabled)
        return;
    /* The hit path's common cases parse nothing: one field that names one
     * offered class exactly, as cachet itself asks the origin and simple
     * clients ask (kept as it is), or none at all (identity). */
    enum ct_coding c = CT_CODING_IDENTITY;
    const struct ct_http_field *f = ct_http_msg_find(req, CT_HDR_ACCEPT_ENCODING, NULL);
    if (f && ct_http_msg_find(req, CT_HDR_ACCEPT_ENCODING, f) == NULL) {
        enum ct_coding one = ct_coding_lookup(f->value);
        if (one >= 0 && ae_offered(&cz->pref, one) &&
            ct_str_eq(f->value, ct_str_c(ct_coding_name(one)))) {
            cr->ae_class = one;
            return;
        }
    }
    if (f) {
        struct ct_ae ae;
        ct_ae_init(&ae);
        ct_ae_from_msg(&ae, req);
        c = ct_ae_choose(&ae, &cz->pref);
    }
    if (c == CT_CODING_NONE)
        return;
    if (req == &cr->ae_msg) { /* normalised already: the class is its own */
        cr->ae_class = c;
        return;
    }
    if (cr->ae_cap < req->nfields + 1) {
        cr->ae_cap = req->nfields + 8;
        cr->ae_fields = ct_xrealloc(cr->ae_fields, cr->ae_cap * sizeof(*cr->ae_fields));
    }
    size_t n = 0;
    for (size_t i = 0; i < req->nfields; i++)
        if (req->fields[i].id != CT_HDR_ACCEPT_ENCODING)
            cr->ae_fields[n++] = req->fields[i];
    cr->ae_fields[n++] = (struct ct_http_field){CT_STR("Accept-Encoding"),
                                                ct_str_c(ct_coding_name(c)),
                                                CT_HDR_ACCEPT_ENCODING};
    cr->ae_orig = req;
    cr->ae_msg = *req;
    ct_http_msg_set_fields(&cr->ae_msg, cr->ae_fields, n);
    r->msg = &cr->ae_msg;
    cr->ae_class = c;
}

enum ct_req_next ct_step_cache(struct ct_req *r)
{
    struct ct_wcache *wc = r->w->wc;
    if (wc == NULL) { /* no cache: everything is a pass, with no cache part */
        ct_req_goto(r, CT_STEP_PASS);
        return CT_REQ_MORE;
    }
    if (wc->cf != r->w->cf)
        ct_wcache_follow(wc, r->w->cf);
    struct ct_creq *cr = r->cr ? r->cr : ct_creq_new(r);
    ct_creq_reset(cr);
    const struct ct_http_msg *req = r->msg;
    if (req->method == CT_METHOD_PURGE && !ct_http_msg_body_expected(req) && finish_request(r)) {
        ct_req_goto(r, CT_STEP_PURGE);
        return CT_REQ_MORE;
    }
    if (req->method != CT_METHOD_GET && req->method != CT_METHOD_HEAD)
        return pass(r, "method");
    if (ct_http_msg_body_expected(req) || !finish_request(r))
        return pass(r, "request-body");
    if (req->upgrade)
        return pass(r, "upgrade");
    if (r->route && r->route->conf && r->route->conf->cache.pass)
        return pass(r, "route");
    if (!ct_req_key_for(r, req->target, &cr->key))
        return pass(r, "key");
    normalise_ae(r);
    ct_req_goto(r, CT_STEP_LOOKUP);
    return CT_REQ_MORE;
}

