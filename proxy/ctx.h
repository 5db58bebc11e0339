/*
 * proxy/ctx.h: the context every layer of proxy/ reads (h2o_context_t,
 * Varnish's struct worker): the process, its workers, listeners and
 * backends. Pointers to the other layers' objects are opaque here.
 *
 *
 * Objects and owners (all confined to one worker thread unless marked):
 *
 *   struct ct_proxy      main thread; owns the config, the workers, the
 *                        resolved backend addresses (read-only once running)
 *   struct ct_worker     one thread: its event_base, its listeners (one per
 *                        configured listener, SO_REUSEPORT), its clients, its
 *                        upstream pools and passive-health state per backend
 *   struct ct_client     one accepted connection (client.c); owns its
 *                        bufferevent and request parser; borrows an upstream
 *   struct ct_upstream   one connection to a backend (upstream.c); owns its
 *                        bufferevent and response parser; lent to one client
 *                        at a time, otherwise idle in its backend's pool
 *
 * Only client_close() frees a client and only upstream_close() frees an
 * upstream; each side asks the other's owner to let go, never frees it.
 */
#ifndef CT_PROXY_CTX_H
#define CT_PROXY_CTX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/common.h"
#include "common/list.h"
#include "conf/conf.h"
#include "http/http.h"
#include "proxy/stats/stats.h"

struct event_base;
struct event;
struct evconnlistener;
struct bufferevent;
struct ct_conf;
struct ct_tls_ctx;
struct ct_tls_shared;
struct ct_tls_chal;
struct ct_tls_client;
struct ssl_session_st;
struct ct_ops;
struct ct_stats;
struct ct_accesslog_buf;
struct ct_cli;
struct ct_wcache;
struct ct_hs;

/* ---- the proxy (main thread) --------------------------------------------- */

/* One backend of one configuration generation, shared by every thread and
 * kept until exit (a reload that changes the backend set makes new ones and
 * retires the old array: in-flight upstreams still point at them). */
struct ct_backend_addr {
    struct sockaddr_storage sa;
    socklen_t salen;
    char name[80]; /* "host:port" for logs */
    _Atomic bool down; /* active health checks (health.c writes, workers read) */
    /* `cachet ctl backend NAME drain` (the admin thread writes, workers
     * read): no new request is sent to it; requests in flight finish on
     * their connection (HAProxy's `set server ... state drain`) */
    _Atomic bool drain;
    /* per-backend counters (enum ct_stats_be), every worker adds (fetch_add);
     * PREV: the same-named backend of the previous set, whose counts continue
     * these (/metrics sums the chain), NULL for a new name */
    _Atomic uint64_t counts[CT_STATS_BE__COUNT];
    const struct ct_backend_addr *prev;
    /* TLS to the origin (issue 39): its client context (tls/tls.h), NULL for
     * cleartext; the name sent as SNI and verified (the backend's host or
     * tls.server_name), empty with tls_host: the request's Host instead */
    struct ct_tls_client *tls;
    char tls_name[256];
    bool tls_host;
};

struct ct_listener_conf {
    enum { CT_LISTEN_HTTP, CT_LISTEN_HTTPS } kind;
    struct sockaddr_storage sa; /* port filled in after the first bind */
    socklen_t salen;
    char name[80];                /* "127.0.0.1:8080" as announced */
    struct ct_tls_ctx *tls;       /* HTTPS: owned (tls/tls.h); NULL for HTTP */
    uint64_t handshake_timeout_ms;
    bool honour_client_cc;        /* the listener's honour_client_cache_control */
    bool h2c;                     /* HTTP: HTTP/2 with prior knowledge too (proxy/net/accept.c) */
    struct ct_str subject_header; /* mTLS: header carrying the verified subject */
    /* PROXY protocol (proxy/h1/pp_accept.c): read first, from these peers only */
    bool proxy_protocol;
#define CT_LISTEN_PP_MAX 16
    struct ct_conf_cidr pp_from[CT_LISTEN_PP_MAX];
    size_t npp_from;
    int default_site; /* 1 + the listener's default site's cf->sites index; 0: none */
};

/* A route's header rule with its value expanded (proxy/core/route_step.c),
 * for whichever layer writes the head (wire.c to origins and HTTP/1
 * clients, h2_resp.c). The rules apply in order: SET replaces every field
 * of its name, APPEND adds one, REMOVE drops them. */
enum ct_fwd_edit_op { CT_FWD_SET, CT_FWD_APPEND, CT_FWD_REMOVE };
struct ct_fwd_edit {
    enum ct_fwd_edit_op op;
    struct ct_str name, value;
};
#define CT_FWD_EDITS_MAX 17 /* a route's 16 rules, and strip_set_cookie */

/* Is a field NAME replaced or removed by E[FROM..N)? */
static inline bool ct_fwd_edited(const struct ct_fwd_edit *e, size_t from, size_t n,
                                 struct ct_str name)
{
    for (size_t i = from; i < n; i++)
        if (e[i].op != CT_FWD_APPEND && ct_str_eq_ci(e[i].name, name))
            return true;
    return false;
}

/* Does E[I] add a field (a SET or APPEND that no later SET or REMOVE of the
 * same name undoes)? */
static inline bool ct_fwd_edit_adds(const struct ct_fwd_edit *e, size_t i, size_t n)
{
    return e[i].op != CT_FWD_REMOVE && !ct_fwd_edited(e, i + 1, n, e[i].name);
}

struct ct_worker;

struct ct_proxy {
    unsigned magic;
#define CT_PROXY_MAGIC 0x9a0c7e11u
    const struct ct_conf *cf;
    struct event_base *main_base; /* signals */
    struct ct_tls_shared *tickets; /* shared ticket keys; NULL without HTTPS */
    struct ct_backend_addr *backends; /* parallel to cf->backends */
    size_t nbackends;
    struct ct_listener_conf *listeners;
    size_t nlisteners;
    struct ct_worker **workers;
    unsigned nworkers;
    struct ct_ops *ops; /* proxy/ops/admin.h: admin, access log, health, signals */
    const struct ct_cli *cli; /* the command line, for SIGHUP reloads */
    struct ct_cache *cache; /* the shared store (cache/cache.h, made by
                               ct_wcache_store_new, proxy/core/core.h); NULL: no cache */
    struct ct_fleet *fleet; /* the fleet's down marks (proxy/fleet/); NULL: none kept */
    /* per-client limits of sites and routes, shared by every worker
     * (proxy/limit/limit.h); NULL: limits are not applied */
    struct ct_limit_table *limits;
    struct ct_stats_names *route_names; /* per-route counters' slots (proxy/stats) */
    /* ACME challenge answers (tls/tls.h), written by the ACME client on the
     * main thread, read by every worker; made at start whatever the config
     * (a reload may add tls.acme), empty without it */
    struct ct_tls_chal *acme_chal;
};

/* ---- workers (worker.c) -------------------------------------------------- */

/* Per-worker passive health and pool of one backend. Heap object referenced
 * by w->be[] and by each of its upstreams (NCONNS); a reload that removes or
 * moves the backend RETIREs it (idle pool closed, no new connection) and the
 * last upstream to close frees it (upstream.c). */
struct ct_upstream;
struct ct_backend_rt {
    struct ct_backend_addr *addr;
    const struct ct_conf_backend *bc;
    unsigned fails;          /* consecutive failures */
    int64_t cw;              /* current weight (smooth weighted round robin) */
    uint64_t name_hash;      /* its name's hash (balance = "hash"), 0 until first used */
    bool was_down;           /* last seen out of rotation (slow start begins when back) */
    ct_time_t up_since;      /* mono, when it last came back; 0: up from the start */
    ct_time_t down_until;    /* mono; skipped until then */
    struct ct_upstream *idle; /* pool: idle keep-alive connections */
    /* TLS: sessions saved for new connections (upstream.c), by client
     * context generation and SNI name; NULL until the first one */
    struct ct_backend_sess *sess;
    unsigned nidle;
    unsigned nconns; /* upstreams pointing here (idle or lent) */
    bool retired;    /* not in w->be any more: freed with its last upstream */
};

struct ct_client;
struct ct_worker;

/* One listening socket of one worker (SO_REUSEPORT: each worker has its own). */
struct ct_wlistener {
    unsigned magic;
#define CT_WLISTENER_MAGIC 0x1157e4e5u
    struct ct_worker *w;
    const struct ct_listener_conf *lc;
    struct evconnlistener *lev;
};

struct ct_worker {
    unsigned magic;
#define CT_WORKER_MAGIC 0x3e2c0a17u
    unsigned id;
    struct ct_proxy *px;
    const struct ct_conf *cf; /* snapshot this worker runs on */
    struct event_base *base;
    pthread_t thread;
    bool started;
    struct ct_wlistener *ls; /* one per px->listeners[i]; NULL once draining */
    size_t nls;
    bool accept_paused;
    bool draining;
    int wake_fd[2]; /* main -> worker: 'd' drain */
    struct event *wake_ev;
    struct event *drain_timer;
    struct event *accept_retry; /* accept stopped after EMFILE & co. */
    bool accept_backoff;        /* ... until it fires */
    struct ct_backend_rt **be; /* NBE entries: this worker's backend set */
    size_t nbe;
    struct ct_client *clients; /* every open client (for drain and exit) */
    unsigned nclients;
    struct ct_upstream *busy; /* upstreams lent to a client */
    uint64_t next_conn_id;
    unsigned read_depth;      /* nested pipelined parses (client.c) */
    struct ct_http_limits limits;
    struct ct_wcache *wc;     /* its side of the cache (cache_req.c); NULL: no cache */
    struct ct_stats *stats;         /* proxy/stats/stats.h: written by this thread only */
    struct ct_accesslog_buf *alog;  /* NULL: access log off (owned by the log) */
    /* The route table of CF and the ones requests still hold after a reload
     * (proxy/core/route_step.c); its own PCRE2 match data. */
    struct ct_wroutes *routes;
    struct ct_route_scratch *route_scratch;
    struct ct_pp_wait *pp_waits; /* connections reading their PROXY header (net/pp_accept.c) */
    CT_LIST_HEAD(ct_hs) handshakes; /* connections no protocol has yet (proxy/net/accept.c) */
    /* Set by ct_worker_new (worker.c sits above the protocols that call it):
     * a connection closed and was freed (accepting resumes at the limit, a
     * drain finishes, reload retirement counts it). */
    void (*conn_gone)(struct ct_worker *w, uint64_t conn_id);
};

/* Create worker ID with its base and listeners (listener i binds
 * px->listeners[i].sa, which must carry a concrete port for ID > 0).
 * Returns NULL on a bind failure (logged). Main thread, before start. */
struct ct_worker *ct_worker_new(struct ct_proxy *px, unsigned id);
int ct_worker_start(struct ct_worker *w);
/* Ask the worker to drain and exit (any thread: writes to its pipe). */
void ct_worker_stop(struct ct_worker *w);
/* The worker's loop ended: close its clients, background refreshes and
 * upstreams (its thread, or the thread that ran its loop). */
void ct_worker_cut(struct ct_worker *w);
/* Wait for the worker's thread to end (idempotent). */
void ct_worker_join(struct ct_worker *w);
void ct_worker_join_free(struct ct_worker **wp);
/* Reload (proxy/ops/reload.c), on W's thread: open listeners ADD (SO_REUSEPORT,
 * their sa carries a concrete port) before closing those in DEL (after
 * accepting what is queued on them). CT_EIO if some ADD could not be bound
 * (logged; the others are open). */
int ct_worker_listeners_update(struct ct_worker *w, const struct ct_listener_conf *const *add,
                               size_t nadd, const struct ct_listener_conf *const *del,
                               size_t ndel);

#endif /* CT_PROXY_CTX_H */
