/*
 * proxy/upstream/health.h: active health checks (nginx plus's health_check, Varnish's
 * probes). For every backend whose configuration enables them, the main
 * thread sends `GET <path>` every interval over a new connection and reads
 * the status line with the project's response parser. `fall` consecutive
 * failures (connect error, timeout, wrong status, malformed response) mark
 * the backend down; `rise` consecutive successes mark it up again. Backends
 * start up (traffic is not held back at startup) and a first probe runs at
 * once.
 *
 * The up/down state is an atomic per backend, also stored in the backend's
 * shared object (ct_backend_addr.down): workers read that in their backend
 * selection (upstream.c pick_backend), on top of their own passive health
 * (max_fails/fail_timeout). A reload that changes the backend set replaces
 * the checker (ct_health_new on the new objects; proxy/ops/reload.c).
 */
#ifndef CT_HEALTH_H
#define CT_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct ct_backend_addr;
struct ct_conf_backend;
struct ct_health;

/* Checks for the N backends (ADDRS[i] configured by BCS[i]) on BASE (main
 * thread). NULL when no backend enables health checks. Owned by the caller. */
struct ct_health *ct_health_new(struct event_base *base, struct ct_backend_addr *addrs,
                                const struct ct_conf_backend *bcs, size_t n);
/* Stop every probe and free; sets *HP = NULL. Main thread. */
void ct_health_free(struct ct_health **hp);
/* SIGHUP: take the settings of BCS (same backends, same order) from the next
 * probe on; checks turned off mark their backend up. Main thread. */
void ct_health_reconfigure(struct ct_health *h, const struct ct_conf_backend *bcs, size_t n);
/* Is backend I up? Any thread; true for backends without checks. */
bool ct_health_is_up(const struct ct_health *h, size_t i);

#endif /* CT_HEALTH_H */
