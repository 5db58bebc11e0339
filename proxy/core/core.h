/*
 * proxy/core/core.h: the request (ct_core): one exchange, whatever protocol
 * carries it. A protocol fills one and calls proxy/core/req.h; the core
 * answers through r->proto (proxy/core/proto.h). No HTTP/1 bytes here.
 */
#ifndef CT_PROXY_CORE_H
#define CT_PROXY_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/common.h"
#include "proxy/core/proto.h"
#include "proxy/core/req_step.h"
#include "proxy/ctx.h"

struct ct_upstream;
struct ct_creq;
struct ct_http_msg;
struct ssl_st;

struct ct_proto;

/* The site a connection's last request named by its Host (route_step.c),
 * owned by the connection, which sends one Host again and again: valid for
 * the route table of generation GEN, the listener default DFLT and that
 * host. Zero: nothing kept. */
struct ct_site_memo {
    uint64_t gen;
    long site;
    int dflt;
    uint8_t host_len;
    char host[47];
};

/* Where the response is, as the protocol sees it (the request's own
 * steps are r->step, proxy/core/req_step.h). */
enum ct_req_phase {
    CT_RP_IDLE,   /* no request head yet */
    CT_RP_FETCH,  /* head read: looking up, waiting, or fetching; nothing sent */
    CT_RP_SEND,   /* the response started */
    CT_RP_TUNNEL, /* after a 101: the protocol's (proto->tunnel) */
};

struct ct_req {
    unsigned magic;
#define CT_REQ_MAGIC 0x7e90e57u
    enum ct_req_phase phase;
    enum ct_req_step step;      /* where the request is (req_step.h) */
    uint64_t trail;             /* the last 16 steps, 4 bits each, newest lowest */
    const struct ct_proto *proto;  /* what carries it (proxy/core/proto.h) */
    /* what the request reads of its connection (set by the protocol) */
    struct ct_worker *w;
    const struct ct_listener_conf *lc; /* scheme, policy, mTLS subject field */
    const char *peer;           /* "ip:port" for logs; the ip part for X-Forwarded-For */
    size_t peer_ip_len;
    /* the client's address (ip): the peer's, or the one trusted proxies name
     * (trusted_proxies, route_step.c); used by logs, routes and hashing */
    struct ct_str client;
    char client_buf[48];
    uint64_t conn_id;
    uint32_t stream_id;         /* HTTP/2: its stream (the access log); 0: HTTP/1 */
    struct ssl_st *tls;         /* the TLS session that carries it; NULL: plain */
    const struct ct_http_msg *msg; /* views into the connection's parser */
    bool body_done;             /* the request parser reached its END */
    bool body_paused;           /* body reads stopped: upstream output full */
    uint64_t body_bytes;
    uint64_t body_t0_ms;        /* body deadline clock start (monotonic ms), moved
                                   forward by the time reads were paused */
    uint64_t body_paused_ms;    /* when reads paused for the upstream (0: not) */
    /* the body read before the origin is asked (limits.request_buffer,
     * fetch.c): framed for the origin; moved to it with the head */
    struct evbuffer *body_buf;
    unsigned retries;
    struct ct_upstream *u;      /* borrowed from the pool during a fetch */
    struct ct_creq *cr;         /* the cache's part (cache_req.c), kept across requests */
    /* the response */
    bool head_sent;
    bool body_with_head;        /* the protocol sent the body with the head */
    bool fwd_head;              /* the client's body follows from the origin, through
                                   send_body .. send_end (its head was the origin's,
                                   or the object's being filled) */
    unsigned status;            /* what the client got (logged and counted) */
    unsigned up_status;         /* the origin's answer, logged apart ($upstream_status):
                                   a revalidated hit is the object's 200 to the client
                                   and the origin's 304; 0: no origin answered */
    bool up_keep_alive;         /* the origin connection may be reused */
    bool up_paused;             /* upstream reads stopped: client output full */
    bool up_got_byte;           /* some response byte came on this upstream */
    /* operations (req_log.c): the log record */
    ct_time_t t0, t0_real;      /* head received: mono, wall clock */
    ct_time_t tup;              /* mono, first upstream asked for; 0: none */
    ct_time_t tsent;            /* mono, the request head went to the origin (the last
                                   try's): a fill's cost runs from here (ct_req_fetch_us) */
    uint32_t hit_cost_us;       /* a hit: its object's fetch cost, credited to
                                   cachet_origin_seconds_saved_total when logged */
    uint64_t body_out;          /* response body bytes forwarded */
    uint8_t cs;                 /* enum ct_stats_cs, set by the cache path */
    /* the route step (route_step.c): the route chosen, and a reference on
     * the table that holds it (held until the request is logged or freed) */
    const struct ct_route *route;
    struct ct_wroutes *routes;
    /* the carrier's memo of the site its requests' Host named (NULL: none) */
    struct ct_site_memo *site_memo;
    /* what send_synth adds for a route's answer: a Location (redirects), a
     * Content-Type other than text/plain; empty otherwise */
    struct ct_str synth_location, synth_ctype, synth_retry_after;
    /* a request counted in flight against a concurrency limit (route_step.c):
     * its key, released with the route */
    uint8_t lim_n;             /* 0, 1 (route or site) or 2 (both) */
    uint32_t lim_scope[2];
    uint8_t lim_family;
    uint8_t lim_addr[16];
    bool logged;                /* counted and logged (ct_req_log_end) */
    bool up_tls_resumed;        /* TLS to the origin resumed a session (access log uts=r) */
    const char *up_tls;         /* TLS to the origin: "1.2", "1.3"; NULL: none (utls=) */
    /* the fleet (fleet_step.c, issue 17) */
    bool fleet_hop;      /* a trusted peer's fetch: never forwarded to an owner again */
    bool fleet_peer;     /* this fetch goes to the key's owner node, not the origin */
    bool fleet_fallback; /* the owner failed: this request's fetch is the origin's */
    size_t fleet_group;  /* fleet_peer: the owner's peer group (ct_conf_group_at) */
};

static inline void ct_req_goto(struct ct_req *r, enum ct_req_step step)
{
    r->step = step;
    r->trail = r->trail << 4 | (uint64_t)step;
}

/* The route step (route_step.c), on R's worker, before the cache lookup:
 * site and route for R's head; a route's own answer (redirect, fixed
 * response, 403) is sent from here. True when R was answered. */
bool ct_req_route(struct ct_req *r);
/* R's route's header rules (RESPONSE: for the client, else for the
 * origin), their values expanded into BUF: up to MAX into OUT, the count. */
struct ct_fwd_edit;
size_t ct_req_route_edits(struct ct_req *r, bool response, struct ct_fwd_edit *out, size_t max,
                          char *buf, size_t cap);
/* The rules for R's response to the client (its route's response_headers,
 * then strip_set_cookie's): up to CT_FWD_EDITS_MAX into OUT, values in BUF. */
size_t ct_req_route_resp_edits(struct ct_req *r, struct ct_fwd_edit *out, char *buf, size_t cap);
/* The backend group R's route names, as an index of the worker's current
 * configuration (r->w->cf): the group of the same name if a reload came
 * since the route step, the default one if it went. */
size_t ct_req_route_group(const struct ct_req *r);
struct ct_route;
/* The route a GET with R's head would take, in the table R's route is from
 * (R's own route when it has none): what a PURGE is keyed by, so a route
 * chosen by method (`methods = ["GET", "HEAD"]`) keys it as it keyed the
 * GET that stored the object. Valid while R holds its route. */
const struct ct_route *ct_req_route_as_get(struct ct_req *r);
/* TO (a background refresh) goes where FROM, its trigger, was routed. */
void ct_req_route_share(struct ct_req *to, const struct ct_req *from);
/* R's client address (r->client, or the peer's ip when not set). */
static inline struct ct_str ct_req_client(const struct ct_req *r)
{
    return r->client.len ? r->client : ct_str_make(r->peer, r->peer_ip_len);
}
/* R is done with its route (idempotent). */
void ct_req_route_release(struct ct_req *r);
/* The worker's route tables go (ct_worker_cut). */
void ct_req_routes_free(struct ct_worker *w);

/* The log record (req_log.c), on R's worker. */
/* A request head arrived: its clock starts. */
void ct_req_log_start(struct ct_req *r);
/* The request ended with STATUS (0: nothing was answered): counted and
 * logged once; later calls for the same request do nothing. */
void ct_req_log_end(struct ct_req *r, unsigned status);
/* An upstream event of the backend r->u belongs to (enum ct_stats_be). */
void ct_req_log_upstream(struct ct_req *r, enum ct_stats_be what);
/* What R's fetch has cost the origin so far, microseconds: from its request
 * head sent (the last try's; pool and connect waits left out) to now; 0 if
 * nothing was sent. At a fill's last byte, that is the object's cost. */
uint64_t ct_req_fetch_us(const struct ct_req *r);
/* R is answered as a fresh hit from OBJ: its fetch cost is credited as
 * origin time saved when R is logged (per worker: a hit writes nothing shared). */
struct ct_obj;
void ct_req_log_hit(struct ct_req *r, const struct ct_obj *obj);
/* R's route's counter slot in the worker's stats block, or -1 (no route). */
int ct_req_route_slot(const struct ct_req *r);


/* ---- the worker's cache side (wcache.c), for main.c, worker.c, ops -------- */

struct ct_cache;
struct ct_wcache;
struct ct_conf_cache;
struct ct_cache_key_opts;
/* The key options cache.key_query and cache.key_header configure. */
void ct_wcache_key_opts_of(const struct ct_conf_cache *cc, struct ct_cache_key_opts *o);
/* The store for CF's cache settings; NULL when the cache is off (size 0). */
struct ct_cache *ct_wcache_store_new(const struct ct_conf *cf);
/* Worker W's cache side (W's base must exist); NULL CACHE: no cache, returns
 * NULL. Freed on W's thread after its loop ended (and ct_worker_cut ended
 * its background fetches), or before it started. */
struct ct_wcache *ct_wcache_new(struct ct_worker *w, struct ct_cache *cache);
/* On W's own thread, before its loop runs: readers this thread wakes (a
 * fill and its readers on one worker, the common case) are run from the
 * loop directly, without the eventfd's write and read. */
void ct_wcache_bind(struct ct_wcache *wc);
void ct_wcache_free(struct ct_wcache **wcp);
/* The policy options follow CF (a reload switched the worker's
 * configuration; the key options and the store's size need a restart). */
void ct_wcache_follow(struct ct_wcache *wc, const struct ct_conf *cf);
/* A route's key rules over the cache section's: KO holds the options of
 * cache.key_* and gets ROUTE's (the query kept, dropped or sorted, another
 * key header); its key_drop_params leave tracking parameters out of TARGET
 * (the result may be a view into QBUF[QCAP]). ROUTE NULL or a fallback:
 * TARGET and KO as they are. Returns the target to key on. The one place a
 * route's key rules are applied: the request path (ct_req_key_for) and
 * the admin's purge by URL (ops.c), so a purge fanned out from another node
 * finds what a request for that URL stored. Any thread. */
struct ct_route;
struct ct_str ct_req_route_key(const struct ct_route *route, struct ct_str target,
                               struct ct_cache_key_opts *ko, char *qbuf, size_t qcap);
/* Worker exit: abandon the refreshes in flight (before the upstream pool goes). */
void ct_fetch_bg_free_all(struct ct_wcache *wc);
/* The Date field value of NOW into OUT (CT_HTTP_DATE_LEN + 1 bytes, NUL
 * included), from the worker's once-a-second copy when it has one. */
void ct_req_date(const struct ct_req *r, time_t now, char *out);

#endif /* CT_PROXY_CORE_H */
