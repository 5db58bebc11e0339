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

#define SWEEP_MS 500
#define SWEEP_BUDGET 4096
#define MAX_RELOOKUPS 4

static bool lookup_as(struct ct_req *r, bool revalidate);
static void on_wait_timeout(evutil_socket_t fd, short what, void *arg);

/* ---- the process and its workers ------------------------------------------ */

struct ct_cache *ct_cache_from_conf(const struct ct_conf *cf)
{
    const struct ct_conf_cache *cc = &cf->cache;
    if (cc->size_bytes == 0)
        return NULL;
    struct ct_cache_config cfg = {
        .max_bytes = cc->size_bytes,
        .max_object_size = CT_MIN(cc->max_object_bytes, cc->size_bytes),
        .field = ct_cache_ban_field, /* bans read stored fields (issue 16) */
        .max_bans = cc->max_bans,
    };
    struct ct_cache *cache = ct_cache_new(&cfg);
    if (cache == NULL)
        CT_ERR("cache: cannot create a store of %llu bytes; running without a cache",
               (unsigned long long)cc->size_bytes);
    return cache;
}

static void policy_opts(const struct ct_conf_cache *cc, bool ignore_req_cc,
                        struct ct_cache_policy_opts *po)
{
    ct_cache_policy_opts_default(po);
    po->store_set_cookie = cc->store_set_cookie;
    po->ignore_req_cc = ignore_req_cc;
    po->targeted_cc = ct_str_c(cc->targeted_cc);
    po->heuristic_pct = (unsigned)(cc->heuristic_fraction * 100.0 + 0.5);
    po->heuristic_max = (int64_t)(cc->heuristic_max_ms / 1000);
    po->default_ttl = cc->default_ttl_ms ? (int64_t)(cc->default_ttl_ms / 1000) : CT_CC_UNSET;
}

void ct_cache_key_opts_of(const struct ct_conf_cache *cc, struct ct_cache_key_opts *o)
{
    o->query = cc->key_query == CT_CONF_QUERY_DROP   ? CT_CACHE_QUERY_DROP
               : cc->key_query == CT_CONF_QUERY_SORT ? CT_CACHE_QUERY_SORT
                                                     : CT_CACHE_QUERY_KEEP;
    o->header_name = ct_str_c(cc->key_header);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct ct_wcache *wc = arg;
    CT_CHECK_OBJ(wc, CT_WCACHE_MAGIC);
    /* Bounded work per tick; lookups also reclaim lazily what they meet. */
    ct_cache_expire_some(wc->cache, ct_time_real(), SWEEP_BUDGET);
}

static void on_obj_change(struct ct_creq *cr);

/* Worker thread: run the readers other threads queued. One at a time, so a
 * reader that ends its client cannot leave a freed one in a local list. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct ct_wcache *wc = arg;
    CT_CHECK_OBJ(wc, CT_WCACHE_MAGIC);
    uint64_t v;
    if ((what & EV_READ) && read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        CT_ERR("w%u cache wake: %s", wc->w->id, strerror(errno));
    for (unsigned i = 0; i < 100000; i++) {
        pthread_mutex_lock(&wc->mu);
        struct ct_creq *cr = wc->wq_head;
        if (cr) {
            wc->wq_head = cr->wq_next;
            if (wc->wq_head == NULL)
                wc->wq_tail = NULL;
            cr->wq_next = NULL;
            cr->queued = false;
        }
        pthread_mutex_unlock(&wc->mu);
        if (cr == NULL)
            return;
        on_obj_change(cr);
    }
}

struct ct_wcache *ct_wcache_new(struct ct_worker *w, struct ct_cache *cache)
{
    if (cache == NULL)
        return NULL;
    struct ct_wcache *wc = ct_xcalloc(1, sizeof(*wc));
    const struct ct_conf_cache *cc = &w->cf->cache;
    wc->magic = CT_WCACHE_MAGIC;
    wc->w = w;
    wc->cache = cache;
    wc->cf = w->cf;
    for (int i = 0; i < 4; i++) {
        policy_opts(cc, i & 1, &wc->popts[i]);
        wc->popts[i].store_set_cookie |= (i & 2) != 0;
    }
    ct_cache_key_opts_of(cc, &wc->kopts);
    pthread_mutex_init(&wc->mu, NULL);
    wc->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    CT_ASSERT(wc->efd >= 0);
    wc->wake_ev = event_new(w->base, wc->efd, EV_READ | EV_PERSIST, on_wake, wc);
    event_add(wc->wake_ev, NULL);
    wc->bg_lc.kind = CT_LISTEN_HTTP;
    snprintf(wc->bg_lc.name, sizeof(wc->bg_lc.name), "background");
    wc->sweep = event_new(w->base, -1, EV_PERSIST, on_sweep, wc);
    event_add(wc->sweep, &(struct timeval){0, SWEEP_MS * 1000});
    return wc;
}

void ct_wcache_free(struct ct_wcache **wcp)
{
    struct ct_wcache *wc = *wcp;
    *wcp = NULL;
    if (wc == NULL)
        return;
    CT_CHECK_OBJ(wc, CT_WCACHE_MAGIC);
    CT_ASSERT(wc->wq_head == NULL); /* every client dequeued itself when freed */
    ct_cache_bg_free_all(wc);
    event_free(wc->wake_ev);
    event_free(wc->sweep);
    close(wc->efd);
    pthread_mutex_destroy(&wc->mu);
    wc->magic = 0;
    free(wc);
}

/* Fetcher's thread, under the object's shard lock: queue the reader on its
 * own worker and poke that worker's loop. Nothing else. */
static void waiter_wake(void *arg)
{
    struct ct_creq *cr = arg;
    struct ct_wcache *wc = cr->r->w->wc;
    pthread_mutex_lock(&wc->mu);
    if (!cr->queued) {
        cr->queued = true;
        if (wc->wq_tail)
            wc->wq_tail->wq_next = cr;
        else
            wc->wq_head = cr;
        wc->wq_tail = cr;
    }
    pthread_mutex_unlock(&wc->mu);
    if (wc->bound && pthread_equal(wc->thread, pthread_self())) {
        event_active(wc->wake_ev, EV_TIMEOUT, 0); /* our own loop: no syscall */
        return;
    }
    uint64_t one = 1;
    if (write(wc->efd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is full, so the worker is awake anyway. */
    }
}

void ct_wcache_bind(struct ct_wcache *wc)
{
    /* Read by wakers on other threads only for readers this worker
     * registered after this, under the object's shard lock: ordered. */
    wc->thread = pthread_self();
    wc->bound = true;
}

static void dequeue(struct ct_creq *cr)
{
    struct ct_wcache *wc = cr->r->w->wc;
    pthread_mutex_lock(&wc->mu);
    if (cr->queued) {
        struct ct_creq **pp = &wc->wq_head, *prev = NULL;
        while (*pp != cr) {
            prev = *pp;
            pp = &(*pp)->wq_next;
        }
        *pp = cr->wq_next;
        if (wc->wq_tail == cr)
            wc->wq_tail = prev;
        cr->wq_next = NULL;
        cr->queued = false;
    }
    pthread_mutex_unlock(&wc->mu);
}

/* ---- per-connection state --------------------------------------------------- */

struct ct_creq *ct_cache_creq_new(struct ct_req *r)
{
    struct ct_creq *cr = ct_xcalloc(1, sizeof(*cr));
    cr->magic = CT_CREQ_MAGIC;
    cr->r = r;
    cr->ae_class = CT_CODING_NONE;
    ct_cache_waiter_init(&cr->waiter, waiter_wake, cr);
    cr->timer = evtimer_new(r->w->base, on_wait_timeout, cr);
    r->cr = cr;
    return cr;
}

void ct_cache_unwait(struct ct_creq *cr)
{
    if (cr->waiting) {
        ct_obj_unwait(&cr->waiter); /* after this, waiter_wake cannot run */
        cr->waiting = false;
    }
    if (cr->registered) { /* only then can a wake be queued (saves a lock per hit) */
        dequeue(cr);
        cr->registered = false;
    }
    if (cr->timer_on) {
        evtimer_del(cr->timer);
        cr->timer_on = false;
    }
}

/* Register on cr->obj; false if there is news already (read now). */
bool ct_cache_wait_obj(struct ct_creq *cr, enum ct_obj_state seen, uint64_t have)
{
    CT_ASSERT(!cr->waiting);
    if (!ct_obj_wait(cr->obj, &cr->waiter, seen, have))
        return false;
    cr->waiting = cr->registered = true;
    return true;
}

/* Drop what the last request held. A fill still unended here was cut short. */
static void creq_reset(struct ct_creq *cr)
{
    ct_cache_unwait(cr);
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
        ct_derive_free(&cr->derive);
    cr->ae_class = CT_CODING_NONE;
    if (cr->zbuf)
        evbuffer_drain(cr->zbuf, evbuffer_get_length(cr->zbuf));
}

void ct_cache_client_free(struct ct_req *r)
{
    ct_cache_creq_free(&r->cr);
}

struct ct_creq *ct_cache_client_take(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    CT_ASSERT(r->u == NULL);
    if (cr == NULL)
        return NULL;
    CT_CHECK_OBJ(cr, CT_CREQ_MAGIC);
    creq_reset(cr);
    cr->r = NULL;
    r->cr = NULL;
    return cr;
}

void ct_cache_client_give(struct ct_req *r, struct ct_creq *cr)
{
    CT_CHECK_OBJ(cr, CT_CREQ_MAGIC);
    CT_ASSERT(r->cr == NULL && cr->r == NULL);
    cr->r = r;
    r->cr = cr;
}

void ct_cache_creq_free(struct ct_creq **crp)
{
    struct ct_creq *cr = *crp;
    if (cr == NULL)
        return;
    CT_CHECK_OBJ(cr, CT_CREQ_MAGIC);
    creq_reset(cr);
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

bool ct_cache_client_https(const struct ct_req *r)
{
    if (r->cr && r->cr->bg_port) /* a refresh: bg_port is the trigger's default port */
        return r->cr->bg_port == 443;
    return r->lc->kind == CT_LISTEN_HTTPS;
}

unsigned ct_cache_client_cs(const struct ct_req *r)
{
    return r->cr ? r->cr->cs : CT_STATS_CS_NONE;
}

const struct ct_cache_policy_opts *ct_cache_popts(const struct ct_req *r)
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

void ct_cache_set_status(struct ct_creq *cr, const char *fmt, ...)
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

bool ct_cache_blk_get(const struct ct_obj *obj, struct ct_cache_blk *blk, struct ct_str *wire)
{
    struct ct_str h = ct_obj_head(obj);
    if (h.len < sizeof(*blk))
        return false;
    memcpy(blk, h.p, sizeof(*blk)); /* the block is not aligned for the struct */
    CT_ASSERT((size_t)blk->wire_len + blk->index_len == h.len - sizeof(*blk));
    *wire = ct_str_make(h.p + sizeof(*blk), blk->wire_len);
    /* A soft purge (cache.h) ended its freshness at ct_obj_expires(): every
     * decision made from the stored freshness sees that. The store computed
     * its expiry from these very fields, so only a purge makes them differ. */
    struct ct_cache_fresh *f = &blk->fresh;
    ct_time_t purged = ct_obj_expires(obj);
    if (CT_UNLIKELY(purged < f->response_time - f->initial_age + (double)f->lifetime))
        f->lifetime = (int64_t)CT_MAX(0.0, purged - f->response_time + f->initial_age); /* floor */
    return true;
}

bool ct_cache_blk_index(const struct ct_cache_blk *blk, struct ct_str wire,
                        struct ct_hdrindex *hx)
{
    /* The index lives right after the block, in the same stored head. */
    return blk->index_len != 0 &&
           ct_hdrindex_open(hx, wire.p + wire.len, blk->index_len, wire) == CT_OK;
}

/* ---- keys ------------------------------------------------------------------- */

struct ct_str ct_cache_route_key(const struct ct_route *route, struct ct_str target,
                                 struct ct_cache_key_opts *ko, char *qbuf, size_t qcap)
{
    const struct ct_conf_route *rc = route ? route->conf : NULL;
    if (!rc)
        return target;
    const struct ct_conf_route_cache *c = &rc->cache;
    if (c->key_query != CT_CONF_QUERY_INHERIT)
        ko->query = c->key_query == CT_CONF_QUERY_DROP   ? CT_CACHE_QUERY_DROP
                    : c->key_query == CT_CONF_QUERY_SORT ? CT_CACHE_QUERY_SORT
                                                         : CT_CACHE_QUERY_KEEP;
    if (c->key_header)
        ko->header_name = ct_str_c(c->key_header);
    if (c->key_cookie)
        ko->cookie_name = ct_str_c(c->key_cookie);
    const char *q = c->nkey_drop_params ? memchr(target.p, '?', target.len) : NULL;
    size_t plen = q ? (size_t)(q - target.p) : 0;
    if (!q || target.len > qcap)
        return target; /* a target past the buffer keys whole: only costs hit ratio */
    memcpy(qbuf, target.p, plen);
    size_t n = ct_route_key_query(route, ct_str_make(q + 1, target.len - plen - 1),
                                  qbuf + plen + 1, qcap - plen - 1);
    if (n == 0)
        return ct_str_make(qbuf, plen); /* nothing left: no '?' either */
    qbuf[plen] = '?';
    return ct_str_make(qbuf, plen + 1 + n);
}

bool ct_cache_key_for(struct ct_req *r, struct ct_str target, struct ct_cache_key *key)
{
    struct ct_creq *cr = r->cr;
    struct ct_wcache *wc = r->w->wc;
    const struct ct_http_msg *req = r->msg;
    struct ct_cache_key_opts ko = wc->kopts;
    char qbuf[2048];
    target = ct_cache_route_key(r->route, target, &ko, qbuf, sizeof(qbuf));
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

/* ---- small answers ------------------------------------------------------------ */

/* The response is out: next request (C may be gone after this). */
void ct_cache_finish(struct ct_req *r)
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
static void to_synth(struct ct_req *r, unsigned status, struct ct_str body)
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
    ct_cache_finish(r);
    return CT_REQ_GONE;
}

void ct_cache_answer(struct ct_req *r, unsigned status, struct ct_str body, struct ct_str cstatus)
{
    struct ct_creq *cr = r->cr ? r->cr : ct_cache_creq_new(r);
    creq_reset(cr);
    /* The request's end is read before the answer (the cache step does so
     * for the requests it answers): a body already here is read, else the
     * carrier closes; a bodiless one's end must be taken too, or HTTP/1
     * reads it as the next request's first event (a keep-alive client's
     * second request after a route's answer crashed on it). */
    (void)r->proto->body_finish(r);
    cr->cstatus = cstatus;
    to_synth(r, status, body);
    (void)ct_step_synth(r); /* now: BODY and CSTATUS are the caller's stack */
}

/* A short answer of our own (PURGE, only-if-cached, waiter timeout), with
 * texts that live as long as the program. */
static void answer(struct ct_req *r, unsigned status, const char *body, const char *cstatus)
{
    r->cr->cstatus = ct_str_c(cstatus);
    to_synth(r, status, ct_str_c(body));
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
        ct_cache_set_status(cr, "cachet; fwd=uri-miss; detail=busy-retries");
        return;
    }
    ct_req_goto(r, CT_STEP_LOOKUP);
}

/* Does R wait for the filling OBJ to end before it answers? A body of
 * unknown length may outgrow max_object_size on its way and be dropped: a
 * waiter that had been sent its head then could only be cut, so it is sent
 * nothing until the object is complete, or fetches on its own when it is
 * dropped (nginx's proxy_cache_lock: a waiter never gets a broken answer).
 * A Content-Length or a bound (CT_CACHE_BLK_BOUNDED) says at the head that
 * it fits: those stream at once. A HEAD needs no body. */
static bool waits_for_end(const struct ct_req *r, const struct ct_obj *obj)
{
    struct ct_cache_blk blk;
    struct ct_str wire;
    return r->msg->method != CT_METHOD_HEAD && ct_cache_blk_get(obj, &blk, &wire) &&
           ct_cache_blk_may_outgrow(&blk);
}

/* WAIT: the busy object we wait on changed (or the first look at it). */
enum ct_req_next ct_step_wait(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    for (;;) {
        enum ct_obj_state st = ct_obj_state(cr->obj);
        if (st == CT_OBJ_BUSY || (st == CT_OBJ_STREAMING && waits_for_end(r, cr->obj))) {
            if (ct_cache_wait_obj(cr, st, st == CT_OBJ_BUSY ? 0 : CT_OBJ_WAIT_END))
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
            ct_cache_set_status(cr, "cachet; fwd=uri-miss; detail=too-big");
        } else if (st == CT_OBJ_ABANDONED) {
            /* Not storable: fetch on our own at once (issue 6). */
            ct_obj_release(&cr->obj);
            ct_req_goto(r, CT_STEP_PASS);
            cr->cs = CT_STATS_CS_HIT_FOR_MISS;
            ct_cache_set_status(cr, "cachet; fwd=uri-miss; detail=uncacheable");
        } else if (st == CT_OBJ_FAILED ||
                   !ct_cache_vary_match(ct_obj_vary(cr->obj), r->msg)) {
            relookup(r);
        } else {
            cr->cs = CT_STATS_CS_COALESCED;
            ct_cache_to_deliver(r, ct_obj_ref(cr->obj), CT_STR("cachet; fwd=miss; collapsed"));
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

static void on_obj_change(struct ct_creq *cr)
{
    CT_CHECK_OBJ(cr, CT_CREQ_MAGIC);
    if (cr->waiting) {
        ct_obj_unwait(&cr->waiter);
        cr->waiting = false;
    }
    struct ct_req *r = cr->r;
    if (r->step == CT_STEP_WAIT || (r->step == CT_STEP_STREAM && r->phase == CT_RP_SEND))
        ct_req_run(r);
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
    ct_cache_unwait(cr);
    ct_obj_release(&cr->obj);
    if (r->w->cf->cache.waiter_timeout_action == CT_CONF_WAITER_FETCH) {
        ct_req_goto(r, CT_STEP_PASS);
        ct_cache_set_status(cr, "cachet; fwd=uri-miss; detail=wait-timeout");
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
    cr->cs = CT_STATS_CS_PASS;
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
        if (ct_cache_key_for(r, r->msg->target, &cr->key))
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
    ct_cache_set_status(cr, "cachet; fwd=bypass; detail=%s", detail);
    return CT_REQ_MORE;
}

static double ttl_left(const struct ct_cache_blk *blk, ct_time_t now)
{
    return ct_cache_policy_ttl(&blk->fresh, now);
}

/* A complete stored OBJ for this request at NOW (HIT or STALE). The request's
 * own directives decide (§5.2.1). Returns true if answered. */
static bool use_stored(struct ct_req *r, struct ct_obj *obj, ct_time_t now, bool stale)
{
    struct ct_creq *cr = r->cr;
    struct ct_cache_blk blk;
    struct ct_str wire;
    CT_ASSERT(ct_cache_blk_get(obj, &blk, &wire));
    enum ct_cache_use use = ct_cache_policy_use(&blk.fresh, r->msg, ct_cache_popts(r), now);
    switch (use) {
    case CT_CACHE_USE_FRESH:
    case CT_CACHE_USE_STALE_OK: {
        cr->cs = stale ? CT_STATS_CS_STALE : CT_STATS_CS_HIT;
        char *cs = cr->cstatus_buf; /* per hit: no printf */
        memcpy(cs, "cachet; hit; ttl=", 17);
        char *end = ct_cache_put_i64(cs + 17, (int64_t)ttl_left(&blk, now));
        struct ct_str cstatus = ct_str_make(cs, (size_t)(end - cs));
        if (CT_UNLIKELY((blk.flags & CT_CACHE_BLK_CODING_MASK) != 0) &&
            (int)(blk.flags & CT_CACHE_BLK_CODING_MASK) != cr->ae_class) {
            bool refuse; /* stored coded, and not in the client's class */
            if (ct_cache_derive_hit(r, obj, &blk, cstatus, &refuse))
                return true; /* DECODE next */
            if (refuse) {
                not_acceptable(r);
                return true;
            }
        }
        ct_cache_to_deliver(r, ct_obj_ref(obj), cstatus);
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
static bool graceful(struct ct_req *r, struct ct_obj *obj, ct_time_t now)
{
    struct ct_cache_blk blk;
    struct ct_str wire;
    struct ct_cc cc;
    CT_ASSERT(ct_cache_blk_get(obj, &blk, &wire));
    if (blk.fresh.flags & (CT_CACHE_F_MUST_REVALIDATE | CT_CACHE_F_NO_CACHE))
        return false;
    ct_cache_policy_req_cc(r->msg, ct_cache_popts(r), &cc);
    if ((cc.flags & CT_CC_NO_CACHE) || cc.max_age != CT_CC_UNSET || cc.min_fresh != CT_CC_UNSET)
        return false;
    return ct_obj_in_grace(obj, now);
}

static bool on_stale(struct ct_req *r, struct ct_cache_lookup_res *res, ct_time_t now)
{
    struct ct_creq *cr = r->cr;
    if (use_stored(r, res->obj, now, true)) {
        if (res->fetch)
            ct_obj_abandon(res->fetch, now, 0);
        ct_cache_lookup_res_release(res);
        return true;
    }
    if (graceful(r, res->obj, now) && !(r->msg->method == CT_METHOD_HEAD && res->fetch)) {
        struct ct_cache_blk blk;
        struct ct_str wire;
        char cs[112];
        CT_ASSERT(ct_cache_blk_get(res->obj, &blk, &wire));
        snprintf(cs, sizeof(cs), "cachet; hit; ttl=%lld; detail=stale-while-revalidate",
                 (long long)ttl_left(&blk, now));
        cr->cs = CT_STATS_CS_STALE;
        if (res->fetch == NULL) { /* someone else refreshes it */
            ct_cache_to_deliver(r, ct_obj_ref(res->obj), ct_str_c(cs));
            ct_cache_lookup_res_release(res);
            return true;
        }
        /* We hold the one refresh: answer with the stale object now and hand
         * the refresh to a request of its own (cache_bg.c). */
        struct ct_obj *st = ct_obj_ref(res->obj);
        if (ct_cache_bg_start(r, &res->fetch, &st)) {
            ct_cache_to_deliver(r, ct_obj_ref(res->obj), ct_str_c(cs));
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
    ct_cache_set_status(cr, "cachet; fwd=%s; detail=not-stored", cr->fwd_kind);
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
    struct ct_cache_lookup_req lr = {
        .key = &cr->key,
        .match = ct_cache_vary_match_cb,
        .match_arg = (void *)req,
        /* HEAD is answered from a stored GET but never fills one. */
        .no_insert = head || ct_cache_policy_on_miss(req, ct_cache_popts(r)) ==
                                 CT_CACHE_USE_GATEWAY_TIMEOUT,
        .revalidate = revalidate,
    };
    struct ct_cache_lookup_res res = {0};
    cr->req_time = now;
    switch (ct_cache_lookup(wc->cache, &lr, now, &res)) {
    case CT_CACHE_HIT:
        if (use_stored(r, res.obj, now, false)) {
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
        return on_stale(r, &res, now);
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
        ct_cache_set_status(cr, "cachet; fwd=uri-miss; detail=hit-for-miss");
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
    if (ct_cache_policy_on_miss(req, ct_cache_popts(r)) == CT_CACHE_USE_GATEWAY_TIMEOUT) {
        ct_cache_lookup_res_release(&res);
        ct_cache_set_status(cr, "cachet; fwd=%s; detail=only-if-cached", cr->fwd_kind);
        to_synth(r, 504, CT_STR("504 Gateway Timeout (only-if-cached)\n"));
        return true;
    }
    cr->cs = CT_STATS_CS_MISS;
    cr->fill = res.fetch; /* NULL: HEAD, or no memory: forward, do not store */
    res.fetch = NULL;
    ct_cache_lookup_res_release(&res);
    ct_req_goto(r, cr->fill ? CT_STEP_FILL : CT_STEP_PASS);
    if (cr->fill == NULL)
        ct_cache_set_status(cr, "cachet; fwd=%s; detail=%s", cr->fwd_kind,
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
    if (wc->cf != r->w->cf) {
        /* A reload switched this worker's configuration: the policy follows
         * (the key options and the store's size need a restart). */
        wc->cf = r->w->cf;
        for (int i = 0; i < 4; i++) {
            policy_opts(&wc->cf->cache, i & 1, &wc->popts[i]);
            wc->popts[i].store_set_cookie |= (i & 2) != 0;
        }
    }
    struct ct_creq *cr = r->cr ? r->cr : ct_cache_creq_new(r);
    creq_reset(cr);
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
    if (!ct_cache_key_for(r, req->target, &cr->key))
        return pass(r, "key");
    normalise_ae(r);
    ct_req_goto(r, CT_STEP_LOOKUP);
    return CT_REQ_MORE;
}

/* ---- failures --------------------------------------------------------------------- */

static bool origin_error(enum ct_close why)
{
    return why == CT_CLOSE_NO_BACKEND || why == CT_CLOSE_ORIGIN_CONNECT ||
           why == CT_CLOSE_ORIGIN_TLS ||
           why == CT_CLOSE_ORIGIN_TIMEOUT ||
           why == CT_CLOSE_ORIGIN_RESET || why == CT_CLOSE_ORIGIN_BAD ||
           why == CT_CLOSE_ORIGIN_TRUNC;
}

/* May STALE be served instead of an origin error at NOW (RFC 5861 §4, or the
 * operator's stale_if_error)? */
bool ct_cache_sie_ok(struct ct_req *r, struct ct_obj *stale, ct_time_t now)
{
    struct ct_cache_blk blk;
    struct ct_str wire;
    if (stale == NULL || !ct_cache_blk_get(stale, &blk, &wire))
        return false;
    if (blk.fresh.flags & (CT_CACHE_F_MUST_REVALIDATE | CT_CACHE_F_NO_CACHE))
        return false;
    double window = blk.fresh.stale_if_error != CT_CC_UNSET
                        ? (double)blk.fresh.stale_if_error
                        : (double)r->w->cf->cache.stale_if_error_ms / 1000.0;
    return -ct_cache_policy_ttl(&blk.fresh, now) <= window;
}

bool ct_cache_client_fail(struct ct_req *r, enum ct_close why)
{
    struct ct_creq *cr = r->cr;
    if (cr == NULL)
        return false;
    if (!origin_error(why))
        ct_cache_fill_adopt(r); /* the client's failure is not the fill's: it goes on */
    if (cr->fill) { /* never stored, never complete: readers see it truncated */
        ct_obj_fail(cr->fill);
        ct_obj_release(&cr->fill);
    }
    if (cr->bg && origin_error(why)) {
        /* The client already has its (stale) answer, or left its fill
         * behind (ct_cache_fill_detach): a refresh or a fill, both in the
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
        ct_cache_finish(r);
        return true;
    }
    if (cr->stale && !cr->validate && !r->head_sent && r->phase == CT_RP_FETCH &&
        origin_error(why) &&
        ct_cache_sie_ok(r, cr->stale, ct_time_real())) {
        if (r->u)
            ct_upstream_release(&r->u, false);
        cr->cs = CT_STATS_CS_STALE;
        struct ct_obj *stale = cr->stale;
        cr->stale = NULL;
        ct_cache_to_deliver(r, stale, CT_STR("cachet; hit; detail=stale-if-error"));
        ct_req_run(r);
        return true;
    }
    return false;
}
