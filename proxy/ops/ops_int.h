/*
 * proxy/ops/ops_int.h: shared between the operations files (admin.c, ops.c,
 * health.c, reload.c) only. The public side is proxy/ops/admin.h.
 */
#ifndef CT_OPS_INT_H
#define CT_OPS_INT_H

#include <sys/socket.h>

#include "common/common.h"
#include "proxy/ops/admin.h"

struct event;
struct evconnlistener;
struct bufferevent;
struct ct_http_msg;
struct ct_accesslog;
struct ct_health;
struct ct_conf_addr;
struct admin_conn;
struct ct_reload;

/* Everything here belongs to the main thread. */
struct ct_ops {
    unsigned magic;
#define CT_OPS_MAGIC 0x0b5e7a11u
    struct ct_proxy *px;
    ct_time_t started;             /* mono */
    struct evconnlistener *lev;    /* admin listener; NULL when off */
    char admin_name[80];
    struct admin_conn *conns;      /* open admin connections */
    uint64_t admin_requests;
    struct ct_cache *cache;        /* purge target; NULL: none */
    struct ct_accesslog *alog;     /* NULL: off */
    struct event *alog_timer;
    struct event *sig_hup, *sig_usr1;
    struct ct_health *health;      /* NULL: no backend has checks */
    struct ct_reload *rl;          /* reload.c state; NULL before the first SIGHUP */
    struct ct_stats_reload reload; /* reload outcomes, for /stats */
    struct ct_ops_events *events;  /* GET /events streams (ops_events.c); NULL: none yet */
    struct ct_fleet_bus *bus;      /* the fleet's fan-out (ops_fleet.c); NULL: no fleet */
    struct event *outbox_ev;       /* clients' PURGEs from the workers (ops_fleet.c) */
    int outbox_fd;                 /* ... their eventfd, while outbox_ev is set */
    /* fleet.learn_members (ops_fleet.c): the members Redis says joined, which
     * every reload (this one's and SIGHUP's) merges into the file's */
    struct ct_conf_fleet_member *learned;
    size_t nlearned;
    struct event *learn_timer;     /* the rate-limited reload that applies them */
    ct_time_t learn_last;          /* mono time of the last such reload */
    struct event *lurk_timer;      /* the ban lurker's settings timer; its arg is the
                                      lurker (ops.c); NULL: no lurker */
    /* the route table of px->cf for purges by URL (ops.c); NULL: not built
     * since the last reload */
    struct ct_route_table *purge_routes;
    struct ct_route_scratch *purge_scratch;
    struct ct_acme *acme;          /* the ACME client (ops_acme.c); NULL: no tls.acme */
};

/* ops_acme.c: the ACME client (proxy/acme/acme.h), its installs and its
 * figures: start after the workers, stop before the main base goes;
 * RENDER appends to /stats (JSON: the "acme" member) or /metrics; JSON
 * writes the array /certs serves. */
struct ct_buf;
void ct_ops_acme_start(struct ct_ops *ops);
void ct_ops_acme_stop(struct ct_ops *ops);
/* After a reload is in use by every worker (its listeners' contexts are the
 * ones installs go to): new names ordered, removed ones stopped. */
void ct_ops_acme_reloaded(struct ct_ops *ops);
void ct_ops_acme_render(const struct ct_ops *ops, bool json, struct ct_buf *out);
void ct_ops_acme_json(const struct ct_ops *ops, struct ct_buf *out);
/* The table `cachet ctl certs` prints (GET /certs?format=text). */
void ct_ops_acme_text(const struct ct_ops *ops, struct ct_buf *out);

/* ops_fleet.c: the fleet's fan-out (proxy/fleet/fleet_bus.h). Start: the bus
 * when the configuration has a fleet (over HTTP only without fleet.redis);
 * stop: before the main loop's base goes. */
void ct_ops_fleet_start(struct ct_ops *ops);
void ct_ops_fleet_stop(struct ct_ops *ops);
/* An admin purge or ban (KIND "purge" or "ban") answered STATUS here, from
 * the admin connection on FD with head REQ: send it to the other nodes,
 * unless it came from one (a trusted hop header) or was refused. */
void ct_ops_fleet_fanout(struct ct_ops *ops, int fd, const struct ct_http_msg *req,
                         const char *kind, struct ct_str query, struct ct_str expr,
                         unsigned status);
/* The members learned through Redis, for the reload's ct_conf_build_learned. */
const struct ct_conf_fleet_member *ct_ops_fleet_learned(const struct ct_ops *ops, size_t *n);
/* Add the bus's counters to SUM (/stats, /metrics). */
void ct_ops_fleet_counts(struct ct_ops *ops, struct ct_stats *sum);

/* admin.c */
int ct_ops_admin_listen(struct ct_ops *ops, const struct ct_conf_addr *addr);
/* Bind an admin listener on ADDR (its "ip:port" into NAME); NULL if it
 * cannot (logged). Reloads swap it for ops->lev. */
struct evconnlistener *ct_ops_admin_bind(struct ct_ops *ops, const struct ct_conf_addr *addr,
                                         char *name, size_t namelen);
void ct_ops_admin_close(struct ct_ops *ops);

/* ops.c: POST /purge?url=URL or ?prefix=URL (QUERY). Returns the status to
 * answer and appends the JSON body to BODY. */
unsigned ct_ops_purge(struct ct_ops *ops, struct ct_str query, struct ct_stats_out *body);
/* px->cf was replaced: the purges' route table is built again from the new
 * one when next needed (it borrows the old one's strings). Main thread. */
void ct_ops_purge_routes_drop(struct ct_ops *ops);
/* ops.c: POST /ban[?soft=1] with EXPR (the request body): 200 with the new
 * ban's id, 400 with the parse error, 503 when the ban list is full, 501
 * without a cache; the JSON body is appended to BODY. GET /bans: the list. */
unsigned ct_ops_ban(struct ct_ops *ops, struct ct_str query, struct ct_str expr,
                    struct ct_stats_out *body);
unsigned ct_ops_bans(struct ct_ops *ops, struct ct_stats_out *body);
/* ops.c: the ban lurker's thread (main thread: start after the cache is
 * set, stop before it is freed; stopping twice is harmless). */
void ct_ops_start_lurker(struct ct_ops *ops);
void ct_ops_stop_lurker(struct ct_ops *ops);
/* reload.c: SIGHUP. What a reload replaced is freed once no connection can
 * use it any more; ct_reload_free_retired() frees the rest at exit. */
void ct_ops_reload(struct ct_ops *ops);
void ct_reload_free_retired(struct ct_ops *ops);
/* Before the NWORKERS workers start (main thread): the state workers read
 * when their clients close (ct_reload_conn_gone). */
void ct_reload_init(struct ct_ops *ops, unsigned nworkers);
/* Add the handshakes of the TLS contexts reloads created to FULL and RESUMED;
 * returns true if there is any such context. */
bool ct_reload_tls_stats(const struct ct_ops *ops, uint64_t *full, uint64_t *resumed);
/* The client listeners in use (after any reload's switch), at most CAP of
 * them into OUT; returns how many. Main thread. */
struct ct_listener_conf;
size_t ct_reload_listeners(const struct ct_ops *ops, const struct ct_listener_conf **out,
                           size_t cap);
/* admin.c: the /stats JSON (JSON) or the /metrics text of the whole process,
 * appended to OUT. Main thread. */
void ct_ops_render(struct ct_ops *ops, bool json, struct ct_stats_out *out);
/* ops_events.c: GET /events. Takes over BEV (an admin connection whose
 * request was read: its input holds nothing more we need) and streams one
 * snapshot a second until the client leaves, falls behind or cachet exits.
 * Answers 503 itself when too many streams are open. */
void ct_ops_events_add(struct ct_ops *ops, struct bufferevent *bev);
void ct_ops_events_free(struct ct_ops *ops);
/* Arm the once-a-second snapshot (streams and history) from the start. */
void ct_ops_events_start(struct ct_ops *ops);
/* GET /history: the kept snapshots as one JSON array, oldest first. */
void ct_ops_events_history(struct ct_ops *ops, struct ct_stats_out *body);
/* Streams open now, and those closed because their client did not read. */
void ct_ops_events_counts(const struct ct_ops *ops, uint64_t *open, uint64_t *dropped);
/* ops.c: the access log's flush timer. */
void ct_ops_start_alog_timer(struct ct_ops *ops);
/* The value of NAME in the query string Q, percent-decoded into BUF[CAP]
 * (*OUT points into it). False if absent, malformed or too long. */
bool ct_ops_query_param(struct ct_str q, const char *name, char *buf, size_t cap,
                        struct ct_str *out);
/* POST /reload (`cachet ctl reload`): reload as SIGHUP does and answer
 * with the outcome: 200 {"result":"applied",...} with the reload's
 * warnings, or 422 {"result":"refused","error":...} with every reason
 * (409 while the previous reload is still being applied). Main thread. */
unsigned ct_ops_reload_cmd(struct ct_ops *ops, struct ct_stats_out *body);
/* POST /backend?name=NAME&state=drain|enable (`cachet ctl backend`): take
 * a backend out of rotation (requests in flight finish) or put it back.
 * 200 with its state, 404 for an unknown name, 400 for a bad query. */
unsigned ct_ops_backend_cmd(struct ct_ops *ops, struct ct_str query, struct ct_stats_out *body);
/* Point the error log at CF's logs.target (file or stderr, syslog, JSON on
 * stdout) and level, unless OLD (the running configuration, or NULL at
 * start) has the same destination. WHEN prefixes the error line ("SIGHUP:
 * " or ""). False if the destination could not be opened: the previous one
 * stays, and the reason is logged. Main thread. */
bool ct_ops_log_apply(const struct ct_conf *cf, const struct ct_conf *old, const char *when);
void ct_ops_addr_name(const struct sockaddr *sa, char *out, size_t len);
/* Resolve backend B (numeric or by name) into BA's address and "host:port"
 * name, and build its TLS client context if it has one. On failure logs "DURING backend NAME: cannot resolve ..." and returns
 * false. Main thread (getaddrinfo may block). */
struct ct_conf_backend;
struct ct_backend_addr;
/* The same without logging (cachet -t reports it in its own words): NULL,
 * or why B does not resolve (static storage). */
const char *ct_ops_backend_lookup(const struct ct_conf_backend *b, struct ct_backend_addr *ba);
bool ct_ops_backend_resolve(const struct ct_conf_backend *b, struct ct_backend_addr *ba,
                            const char *during);
/* Free a backend array of N (their TLS client contexts too); *AP = NULL. */
void ct_ops_backends_free(struct ct_backend_addr **ap, size_t n);

#endif /* CT_OPS_INT_H */
