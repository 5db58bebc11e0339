/*
 * proxy/ops/admin.h: operations for the cachet binary: the admin listener
 * (GET /stats, GET /metrics, POST /purge), the access log, active health
 * checks, SIGUSR1 (reopen logs) and SIGHUP (reload), and the few hooks the
 * proxy calls so that every request is counted and logged.
 *
 * Objects: struct ct_ops (one per process, main thread) owns the admin
 * listener and its connections, the access log, the health checker and the
 * signal events. Each worker owns its struct ct_stats block (w->stats) and its
 * access-log buffer (w->alog); both are created by ct_ops_worker_init().
 *
 * Threads: ct_ops_new/start/free and everything the admin listener does run
 * on the main thread's event_base (it reads worker counters with atomic
 * loads only). ct_ops_backend_up() is any thread. Requests are counted and
 * logged by the core (proxy/core/core.h ct_req_log_*), connections by their
 * protocol.
 */
#ifndef CT_ADMIN_H
#define CT_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/stats/stats.h"

struct ct_proxy;
struct ct_worker;
struct ct_client;
struct ct_req;
struct ct_cache;
struct ct_ops;

/* Set up operations for PX (main thread, after its listeners and backends
 * are resolved, before the workers are created): open the access log, bind
 * the admin listener (announced as "listening on admin ADDR:PORT" on stdout),
 * install SIGHUP and SIGUSR1 on px->main_base. NULL on failure (logged). */
struct ct_ops *ct_ops_new(struct ct_proxy *px);
/* After the workers started: the access log's flush timer, the cache handle
 * for purges. (Health checks start with ct_ops_new: workers read them.) */
void ct_ops_start(struct ct_ops *ops);
/* Main thread, after every worker was joined. Sets *OPSP = NULL. */
void ct_ops_free(struct ct_ops **opsp);
/* The cache the purge endpoints act on (NULL: 501 "no cache"). */
void ct_ops_set_cache(struct ct_ops *ops, struct ct_cache *cache);

/* Worker life: create/free w->stats and w->alog (main thread). */
void ct_ops_worker_init(struct ct_worker *w);
void ct_ops_worker_fini(struct ct_worker *w);

/* SIGHUP, on W's thread (its wake pipe said 'r'): switch to the configuration
 * the main thread prepared (proxy/ops/reload.c), opening and closing
 * listeners through LISTENERS_UPDATE (the worker's: ct_worker_listeners_update). */
struct ct_listener_conf;
typedef int ct_listeners_update_fn(struct ct_worker *w, const struct ct_listener_conf *const *add,
                                   size_t nadd, const struct ct_listener_conf *const *del,
                                   size_t ndel);
void ct_reload_worker_apply(struct ct_worker *w, ct_listeners_update_fn *listeners_update);
/* On W's thread, after a client closed and was freed: client CONN_ID may
 * have been the last one using a configuration or listener a reload
 * replaced (proxy/ops/reload.c frees them once no worker can reach them). */
void ct_reload_conn_gone(struct ct_worker *w, uint64_t conn_id);

/* LC's policy from the configuration's listener L (kind, timeouts, cache
 * control, h2c, the mTLS subject field); its address and TLS context are
 * the caller's. At start (main.c) and on SIGHUP (reload.c) alike. */
struct ct_conf_listener;
void ct_listener_conf_fill(struct ct_listener_conf *lc, const struct ct_conf_listener *l);

/* Active health state of backend I of PX (true when checks are off). Main
 * thread (px->backends changes with a reload). */
bool ct_ops_backend_up(const struct ct_proxy *px, size_t i);
/* Add the per-backend counters of PX's current backends (and of their
 * same-named predecessors across reloads) into SUM's rows. Main thread. */
void ct_ops_backend_counts(const struct ct_proxy *px, struct ct_stats *sum);

#endif /* CT_ADMIN_H */
