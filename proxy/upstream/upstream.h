/*
 * proxy/upstream/upstream.h: connections to origins (ct_upstream): pools per
 * backend, balancing, passive health. It serves any owner through callbacks
 * (a request, a tunnel, a background refresh) and knows no client.
 */
#ifndef CT_PROXY_UPSTREAM_H
#define CT_PROXY_UPSTREAM_H

#include <stdbool.h>

#include "common/close.h"
#include "conf/conf.h"
#include "proxy/ctx.h"
#include "proxy/stats/stats.h"

struct ct_upstream;
struct ct_io;
struct ct_http_parser;
struct bufferevent;
struct ct_backend_addr;

/* ---- upstreams (upstream.c) ---------------------------------------------- */

/* What a borrowed upstream tells its owner (OWNER is the pointer it was lent
 * with), on the worker's thread. */
struct ct_upstream_owner {
    void (*ready)(void *owner);     /* connected: send the request */
    void (*readable)(void *owner);  /* response bytes in its input */
    void (*drained)(void *owner);   /* its output went down to the low mark */
    /* The connection failed or closed (WHY: ORIGIN_CONNECT, ORIGIN_TLS,
     * ORIGIN_TIMEOUT or ORIGIN_RESET). The upstream is dead; the owner
     * releases it. */
    void (*closed)(void *owner, enum ct_close why);
};

/* Which backend: one of GROUP (ct_conf_group_at's index) by the group's
 * balancing; KEY is the request's hash for `balance = "hash"`. */
struct ct_upstream_pick {
    size_t group;
    uint64_t key;
    /* the request's host (no port), for a TLS backend with
     * `server_name = "$host"`; empty: the backend's name */
    struct ct_str host;
};

/* Pick a backend (PICK: NULL is the group "default"; passive and active
 * health) and lend OWNER a connection: a pooled one unless FRESH, else a new
 * one. Returns CT_OK with *UP set (ready now if ct_upstream_is_connected(),
 * else OC->ready follows), or CT_EIO with *WHY set and nothing lent. */
int ct_upstream_acquire(struct ct_worker *w, const struct ct_upstream_owner *oc, void *owner,
                        const struct ct_upstream_pick *pick, bool fresh, struct ct_upstream **up,
                        enum ct_close *why);
/* W's connections to GROUP's backends lent out now (connecting or serving a
 * request): the load the balancers count as in flight. */
unsigned ct_upstream_group_busy(const struct ct_worker *w, size_t group);
/* The owner is done with *UP (NULLed). Back to the pool if REUSABLE, else closed. */
void ct_upstream_release(struct ct_upstream **up, bool reusable);
bool ct_upstream_is_connected(const struct ct_upstream *u);
bool ct_upstream_is_reused(const struct ct_upstream *u);
/* TLS to the origin: the version ("1.2", "1.3"; NULL for cleartext) and
 * whether the handshake resumed a session (access log's utls=, uts=). */
const char *ct_upstream_tls_version(const struct ct_upstream *u);
bool ct_upstream_tls_resumed(const struct ct_upstream *u);
struct bufferevent *ct_upstream_bev(struct ct_upstream *u);
struct ct_io *ct_upstream_io(struct ct_upstream *u);
struct ct_http_parser *ct_upstream_parser(struct ct_upstream *u);
const struct ct_backend_addr *ct_upstream_backend(const struct ct_upstream *u);
/* Phases set the timeouts: request fully sent -> response head clock;
 * head received -> idle-between-reads clock; tunnel. */
void ct_upstream_request_sent(struct ct_upstream *u);
/* STATUS: the final response's (a 5xx may count for passive health). */
void ct_upstream_head_received(struct ct_upstream *u, unsigned status);
void ct_upstream_tunnel(struct ct_upstream *u);
/* Lend the upstream on to another owner (the protocol's tunnel after a 101). */
void ct_upstream_set_owner(struct ct_upstream *u, const struct ct_upstream_owner *oc, void *owner);
/* Passive health: a failure of KIND, counted towards max_fails if the
 * backend's passive_fail_on lists it. Never takes out the last backend in
 * rotation. */
void ct_upstream_mark_failed(struct ct_upstream *u, enum ct_conf_fail kind);
/* Is another backend of U's group in rotation (a retry could go elsewhere)? */
bool ct_upstream_other_live(const struct ct_upstream *u);
/* Per-backend counter WHAT += 1 for U's backend (any worker). */
void ct_upstream_count(struct ct_upstream *u, enum ct_stats_be what);
/* W's backends at start, or after a reload (on W's thread): backend i is
 * ADDRS[i] configured by BCS[i]. A backend of the old set with the same name
 * and address keeps its runtime state (passive health, weights, pool); the
 * others are retired (see struct ct_backend_rt). */
void ct_upstream_backends_set(struct ct_worker *w, struct ct_backend_addr *addrs,
                              const struct ct_conf_backend *bcs, size_t n);
/* Draining: close the idle pooled connections. */
void ct_upstream_pool_close_idle(struct ct_worker *w);
/* Worker exit: close every pooled and lent connection, free the backends. */
void ct_upstream_pool_free(struct ct_worker *w);

#endif /* CT_PROXY_UPSTREAM_H */
