/*
 * proxy/core/wcache.c: the cache's side of a worker (struct ct_wcache):
 * the store made from the configuration, the policy and key options its
 * requests use (they follow a reload), the expiry sweep, and the wake queue
 * that carries a busy object's news from the fetcher's thread to a reader's
 * worker.
 *
 * Streaming from a busy object: a reader adds what is there, then registers a
 * one-shot waiter (req.c, ct_req_wait_obj). The store calls the waiter's wake
 * on the fetcher's thread under a shard lock; the wake only queues the reader
 * on its own worker's wake queue (mutex + eventfd), and the worker continues
 * it from its loop (ct_req_run).
 *
 * Worker thread only, but for ct_wcache_waiter_wake (any thread, under the
 * object's shard lock) and ct_wcache_store_new / ct_wcache_key_opts_of /
 * ct_req_route_key (any thread).
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "proxy/core/cache_ban_glue.h"
#include "proxy/core/cache_int.h"
#include "proxy/route/route.h"

#define SWEEP_MS 500
#define SWEEP_BUDGET 4096

struct ct_cache *ct_wcache_store_new(const struct ct_conf *cf)
{
    const struct ct_conf_cache *cc = &cf->cache;
    if (cc->size_bytes == 0)
        return NULL;
    struct ct_cache_config cfg = {
        .max_bytes = cc->size_bytes,
        .max_object_size = CT_MIN(cc->max_object_bytes, cc->size_bytes),
        .field = ct_cache_ban_field, /* bans read stored fields (issue 16) */
        .max_bans = cc->max_bans,
        .evict = cc->eviction == CT_CONF_EVICTION_COST ? CT_CACHE_EVICT_COST
                                                       : CT_CACHE_EVICT_SIEVE,
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

void ct_wcache_follow(struct ct_wcache *wc, const struct ct_conf *cf)
{
    wc->cf = cf;
    for (int i = 0; i < 4; i++) {
        policy_opts(&cf->cache, i & 1, &wc->popts[i]);
        wc->popts[i].store_set_cookie |= (i & 2) != 0;
    }
}

void ct_wcache_key_opts_of(const struct ct_conf_cache *cc, struct ct_cache_key_opts *o)
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
        struct ct_creq *cr = CT_LIST_FIRST(&wc->wq);
        if (cr) {
            CT_LIST_REMOVE(&wc->wq, cr, wq_link);
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
    ct_wcache_follow(wc, w->cf);
    ct_wcache_key_opts_of(cc, &wc->kopts);
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
    CT_ASSERT(CT_LIST_EMPTY(&wc->wq)); /* every client dequeued itself when freed */
    CT_ASSERT(CT_LIST_EMPTY(&wc->bgreqs)); /* ct_worker_cut ended them (ct_fetch_bg_free_all) */
    event_free(wc->wake_ev);
    event_free(wc->sweep);
    close(wc->efd);
    pthread_mutex_destroy(&wc->mu);
    wc->magic = 0;
    free(wc);
}

/* Fetcher's thread, under the object's shard lock: queue the reader on its
 * own worker and poke that worker's loop. Nothing else. */
void ct_wcache_waiter_wake(void *arg)
{
    struct ct_creq *cr = arg;
    struct ct_wcache *wc = cr->r->w->wc;
    pthread_mutex_lock(&wc->mu);
    if (!cr->queued) {
        cr->queued = true;
        CT_LIST_INSERT_TAIL(&wc->wq, cr, wq_link);
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

void ct_wcache_dequeue(struct ct_creq *cr)
{
    struct ct_wcache *wc = cr->r->w->wc;
    pthread_mutex_lock(&wc->mu);
    if (cr->queued) {
        CT_LIST_REMOVE(&wc->wq, cr, wq_link);
        cr->queued = false;
    }
    pthread_mutex_unlock(&wc->mu);
}

struct ct_str ct_req_route_key(const struct ct_route *route, struct ct_str target,
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

void ct_req_date(const struct ct_req *r, time_t now, char *out)
{
    if (r->w->wc)
        memcpy(out, ct_http_date_cached(&r->w->wc->date, now), CT_HTTP_DATE_LEN + 1);
    else
        ct_http_date_format(now, out); /* no cache: no worker copy */
}
