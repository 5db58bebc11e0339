/*
 * proxy/core/fleet_step.c: the fleet's hooks on the request path
 * (fleet_step.h).
 */
#include <math.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "proxy/core/cache_int.h"
#include "proxy/core/fleet_step.h"
#include "proxy/balance/balance.h"
#include "proxy/fleet/fleet.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/wire.h"

static const struct ct_http_field *hop_field(const struct ct_req *r)
{
    const char *h = r->w->cf->fleet.hop_header;
    return ct_http_msg_find_name(r->msg, ct_str_c(h), NULL);
}

void ct_req_fleet_recv(struct ct_req *r)
{
    const struct ct_conf_fleet *fl = &r->w->cf->fleet;
    r->fleet_hop = r->fleet_peer = r->fleet_fallback = false;
    if (!fl->self)
        return;
    const struct ct_http_field *f = hop_field(r);
    if (!f)
        return;
    /* r->peer's ip part: the TCP peer's (the PROXY header's, on listeners
     * that read one), never a forwarded field's */
    struct ct_str ip = r->peer ? ct_str_make(r->peer, r->peer_ip_len) : (struct ct_str){0};
    if (ct_fleet_hop_trusted_ip(fl, ip, f->value)) {
        r->fleet_hop = true;
        ct_stats_add(&r->w->stats->fleet_hop_requests[0], 1);
    } else {
        ct_stats_add(&r->w->stats->fleet_hop_untrusted[0], 1);
    }
}

void ct_req_fleet_pick(struct ct_req *r, struct ct_upstream_pick *pick)
{
    const struct ct_conf *cf = r->w->cf;
    r->fleet_peer = false;
    if (!cf->fleet.self || r->fleet_hop || r->fleet_fallback || !r->w->px->fleet)
        return;
    /* only a fill (a revalidation of our stale copy is one too: the owner
     * answers its conditional): what the owner stores is worth asking it
     * for; a pass goes to the origin */
    if (!r->cr || !r->cr->fill)
        return;
    /* the cache key as stored (dropped query parameters and all): every
     * node with the same configuration derives the same one */
    struct ct_str kb = r->cr->key.bytes;
    /* a background refresh (cache_bg.c) starts at FILL with a cache part of
     * its own that never looked up: its key is built here, else every
     * refresh would hash the empty key and go to one node */
    if (kb.len == 0) {
        if (!ct_req_key_for(r, r->msg->target, &r->cr->key))
            return;
        kb = r->cr->key.bytes;
    }
    uint64_t key = ct_balance_hash(kb.p, kb.len);
    const struct ct_conf_fleet *fl = &cf->fleet;
    unsigned busy[CT_BALANCE_MAX];
    bool spilled = false;
    if (fl->load_factor)
        for (size_t i = 0; i < fl->nmembers && i < CT_BALANCE_MAX; i++)
            busy[i] = i == fl->self_index ? 0 : ct_upstream_group_busy(r->w, fl->peer_group[i]);
    size_t g = ct_fleet_owner_group(r->w->px->fleet, cf, key, ct_time_mono(),
                                    fl->load_factor ? busy : NULL, &spilled);
    if (spilled)
        ct_stats_add(&r->w->stats->fleet_owner_spills[0], 1);
    if (g == SIZE_MAX)
        return;
    pick->group = g;
    pick->key = 0;
    r->fleet_peer = true;
    r->fleet_group = g;
    ct_stats_add(&r->w->stats->fleet_peer_fetches[0], 1);
}

size_t ct_req_fleet_edit(const struct ct_req *r, struct ct_fwd_edit *out)
{
    const struct ct_conf_fleet *fl = &r->w->cf->fleet;
    if (!fl->self)
        return 0;
    out->name = ct_str_c(fl->hop_header);
    if (r->fleet_peer) {
        out->op = CT_FWD_SET;
        out->value = ct_fleet_hop_value(fl);
    } else {
        out->op = CT_FWD_REMOVE; /* the origin never sees it, nor a peer a client's */
        out->value = CT_STR_NULL;
    }
    return 1;
}

bool ct_req_fleet_failed(struct ct_req *r, enum ct_close why)
{
    (void)why;
    if (!r->fleet_peer || r->up_got_byte)
        return false;
    const struct ct_conf *cf = r->w->cf;
    ct_fleet_peer_failed(r->w->px->fleet, cf, r->fleet_group, ct_time_mono());
    ct_stats_add(&r->w->stats->fleet_owner_down[0], 1);
    r->fleet_peer = false;
    if (cf->fleet.owner_down == CT_CONF_OWNER_DOWN_ERROR) {
        r->retries++; /* fail closed: no retry on another backend either */
        return false;
    }
    r->fleet_fallback = true;
    return true;
}

void ct_req_fleet_mirror_cap(const struct ct_req *r, struct ct_cache_fresh *f)
{
    /* lifetimes are whole seconds; the age at fill, rounded down, keeps the
     * copy's freshness at or under mirror_ttl */
    int64_t cap = (int64_t)floor(f->initial_age) + (int64_t)(r->w->cf->fleet.mirror_ttl_ms / 1000);
    if (f->lifetime > cap)
        f->lifetime = cap;
}

/* Append V to B percent-encoded as a query value (all but RFC 3986's
 * unreserved characters, '/' and ':'), as ct_ops_purge decodes it. */
static void put_qvalue(struct ct_buf *b, struct ct_str v)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < v.len; i++) {
        unsigned char ch = (unsigned char)v.p[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '/' || ch == ':') {
            ct_buf_put(b, (const char *)&ch, 1);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            ct_buf_put(b, e, 3);
        }
    }
}

bool ct_req_fleet_purge(struct ct_req *r, bool soft, const struct ct_str *tags, size_t ntags)
{
    const struct ct_conf_fleet *fl = &r->w->cf->fleet;
    if (!fl->self || r->fleet_hop || !r->w->px->fleet)
        return true;
    struct ct_buf b = {0};
    if (ntags) {
        for (size_t i = 0; i < ntags; i++) {
            ct_buf_put(&b, i ? "&tag=" : "tag=", i ? 5 : 4);
            put_qvalue(&b, tags[i]);
        }
    } else {
        /* the URL the admin's ?url= names: scheme, Host, target, raw: the
         * other nodes key it under the route a GET of it takes there */
        const struct ct_http_field *host = ct_http_msg_find(r->msg, CT_HDR_HOST, NULL);
        struct ct_str t = r->msg->target;
        ct_buf_put(&b, "url=", 4);
        if (t.len && t.p[0] == '/') {
            struct ct_str sch = r->lc->kind == CT_LISTEN_HTTPS ? CT_STR("https://") : CT_STR("http://");
            put_qvalue(&b, sch);
            put_qvalue(&b, host ? host->value : CT_STR_NULL);
        }
        put_qvalue(&b, t);
    }
    if (soft)
        ct_buf_put(&b, "&soft=1", 7);
    size_t burst;
    enum ct_fleet_push res =
        ct_fleet_outbox_push(r->w->px->fleet, ct_str_make(b.p, b.len), fl->purge_queue, &burst);
    ct_buf_free(&b);
    if (res == CT_FLEET_PUSH_QUEUED) {
        ct_stats_add(&r->w->stats->fleet_client_purges[0], 1);
        if (burst)
            CT_INFO("w%u: fleet: the PURGE queue takes them again (%zu refused in a row before)",
                    r->w->id, burst);
        return true;
    }
    if (res == CT_FLEET_PUSH_CLOSED)
        return true; /* no bus: this node only, by configuration (warned at start if not) */
    ct_stats_add(&r->w->stats->fleet_client_purges_refused[0], 1);
    if (burst == 1) /* the queue stays full for a while: once per burst, not per PURGE */
        CT_WARN("w%u c%llu %s: fleet: PURGE %.*s applied here but not sent to the other nodes: "
                "the queue is full (fleet.purge_queue = %u); answering 503 until it drains",
                r->w->id, (unsigned long long)r->conn_id, r->peer, (int)r->msg->target.len,
                r->msg->target.p, fl->purge_queue);
    return false;
}
