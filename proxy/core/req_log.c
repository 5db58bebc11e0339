/*
 * proxy/core/req_log.c: every request counted and logged once, whatever
 * protocol carried it: its clock (head received, first upstream asked), the
 * worker's counters (proxy/stats) and its access-log line.
 *
 * Worker thread only: touches that worker's counter block and log buffer.
 */
#include <openssl/ssl.h>

#include "common/log.h"
#include "proxy/core/cache_int.h"
#include "proxy/core/core.h"
#include "proxy/route/route.h"
#include "proxy/stats/accesslog.h"
#include "proxy/upstream/upstream.h"

void ct_req_log_start(struct ct_req *r)
{
    r->t0 = ct_time_mono();
    r->t0_real = ct_time_real();
    r->tup = r->tsent = 0;
    r->hit_cost_us = 0;
    r->status = r->up_status = 0;
    r->body_out = 0;
    r->cs = CT_STATS_CS_NONE;
    r->logged = false;
    r->up_tls = NULL;
}

static const char *cs_text(unsigned cs)
{
    static const char *const names[] = {
#define CT_REQ_CS_NAME(id, name) #id,
        CT_STATS_CS_TABLE(CT_REQ_CS_NAME)
#undef CT_REQ_CS_NAME
    };
    return cs == CT_STATS_CS_NONE || cs >= CT_ARRAY_LEN(names) ? NULL : names[cs];
}

static struct ct_str field(const struct ct_http_msg *m, enum ct_hdr_id id, const char *name)
{
    const struct ct_http_field *f =
        id != CT_HDR_UNKNOWN ? ct_http_msg_find(m, id, NULL)
                             : ct_http_msg_find_name(m, ct_str_c(name), NULL);
    return f ? f->value : CT_STR_NULL;
}

static void access_log(struct ct_req *q, unsigned status, double rt, double ut)
{
    const struct ct_http_msg *m = q->msg;
    struct ct_accesslog_rec r = {
        .remote_addr = ct_req_client(q),
        .time = q->t0_real,
        .status = status,
        .body_bytes = q->body_out,
        .request_time_s = rt,
        .upstream_time_s = ut,
        .upstream_status = q->up_status,
        .cache_status = cs_text(q->cs),
        .tls_version = q->tls ? SSL_get_version(q->tls) : NULL,
        .up_tls_version = q->up_tls,
        .up_tls_resumed = q->up_tls_resumed,
        .site = q->route ? q->route->site_name : NULL,
        .route = q->route ? q->route->route_name : NULL,
        .stream_id = q->stream_id,
    };
    if (m) {
        r.method = m->method_name;
        r.target = m->target;
        r.version = m->version;
        r.referer = field(m, CT_HDR_UNKNOWN, "Referer");
        r.user_agent = field(m, CT_HDR_USER_AGENT, NULL);
    }
    ct_accesslog_log(q->w->alog, &r);
}

void ct_req_log_end(struct ct_req *r, unsigned status)
{
    /* A request in flight is logged once. Without one (an error before a
     * complete head, e.g. 400/408), only when something was answered;
     * client_fail() runs once per connection, so that is once too. */
    if (r->msg ? r->logged : status == 0)
        return;
    if (r->msg == NULL)
        ct_req_log_start(r); /* a request that never got a head: rt = 0 */
    r->logged = true;
    ct_time_t now = ct_time_mono();
    double rt = now - r->t0;
    double ut = r->tup > 0 ? now - r->tup : -1;
    if (r->cs == CT_STATS_CS_NONE)
        r->cs = (uint8_t)ct_req_cs(r); /* what the cache path decided */
    if (r->w->stats) {
        if (r->cs == CT_STATS_CS_HIT && r->hit_cost_us)
            ct_stats_origin_saved(r->w->stats, ct_req_route_slot(r), r->hit_cost_us);
        ct_stats_req_done(r->w->stats, status, (uint64_t)(rt * 1e6), (enum ct_stats_cs)r->cs);
        ct_stats_req_bytes(r->w->stats, (r->msg ? r->msg->head_bytes : 0) + r->body_bytes,
                           r->body_out);
    }
    if (r->w->alog)
        access_log(r, status, rt, ut);
    if (CT_UNLIKELY(ct_log_get_level() <= CT_LOG_DEBUG) && r->msg) {
        char steps[160];
        CT_DEBUG("w%u c%llu %s: %.*s %.*s: %u; steps: %s", r->w->id,
                 (unsigned long long)r->conn_id, r->peer, (int)r->msg->method_name.len,
                 r->msg->method_name.p, (int)r->msg->target.len, r->msg->target.p, status,
                 ct_req_trail(r, steps, sizeof(steps)));
    }
    ct_req_route_release(r);
}

uint64_t ct_req_fetch_us(const struct ct_req *r)
{
    if (r->tsent <= 0)
        return 0;
    ct_time_t d = ct_time_mono() - r->tsent;
    return d > 0 ? (uint64_t)(d * 1e6) : 0;
}

void ct_req_log_hit(struct ct_req *r, const struct ct_obj *obj)
{
    r->hit_cost_us = ct_obj_fetch_us(obj);
}

void ct_req_log_upstream(struct ct_req *r, enum ct_stats_be what)
{
    if (r->u == NULL || r->w->stats == NULL)
        return;
    if (what == CT_STATS_BE_upstream_requests && r->tup == 0)
        r->tup = ct_time_mono();
    /* On the backend's shared object (not this worker's block): it outlives
     * a reload that retires the backend, and the next set's same-named
     * backend continues its counts (ct_ops_backend_counts). */
    ct_upstream_count(r->u, what);
}

