/*
 * proxy/fleet/fleet_sentinel.h: the fleet bus's Sentinel client (issue 17,
 * fleet.redis_sentinel): which master the bus's links go to.
 *
 *   asking      SENTINEL get-master-addr-by-name on a short link to one
 *               Sentinel of the list (fleet.redis, then fleet.redis_sentinels),
 *               the next one after a failure (unreachable, no such master, no
 *               answer within 4 s), whenever the bus has no master.
 *   following   subscribed to +switch-master at the Sentinel that answered:
 *               a failover is followed when it happens; a subscription lost
 *               has the next Sentinel asked at once. That Sentinel is asked
 *               again every register_ttl / 3 on the short link (hiredis 0.14
 *               does not pass a PING's answer back on a subscribed link): one
 *               that does not answer within 4 s (stopped) loses the
 *               subscription too, the next one asked at once.
 *   ROLE        the master named is used once its ROLE says "master"; one
 *               that says otherwise is not, and the next Sentinel is asked
 *               after 1 s, 2 s, 4 s, ... up to 30 s.
 *
 * Owned by the bus (fleet_bus.c), on its thread; its links are made by the
 * bus (OPS->link: authenticated, named), so the bus's counts stay one set.
 */
#ifndef CT_PROXY_FLEET_SENTINEL_H
#define CT_PROXY_FLEET_SENTINEL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/common.h"
#include "conf/conf.h"

struct redisAsyncContext;
struct redisReply;
struct ct_fleet_sentinel; /* opaque */

/* What the bus does for its Sentinel client; ARG is the bus. */
struct ct_fleet_sentinel_ops {
    /* A link to HOST:PORT for ROLE ("sentinel", "sentinel-sub"), AUTH with
     * fleet.redis_sentinel_password queued first, no callbacks set: the
     * caller sets its own and its ac->data. NULL when it failed at once
     * (said and counted). */
    struct redisAsyncContext *(*link)(void *arg, const char *host, int port, const char *role);
    /* HOST:PORT (a copy is taken) is the master: named when asked
     * (SWITCHED false), or announced by a +switch-master (true). True when
     * it is not the one in use (the bus moves its links there). */
    bool (*master)(void *arg, const char *host, int port, bool switched);
    /* A Sentinel failed (unreachable, lost, given up on): a Redis error. */
    void (*error)(void *arg);
};

/* The counters it keeps, part of ct_fleet_bus_counts. */
struct ct_fleet_sentinel_counts {
    uint64_t role_mismatch; /* masters named whose ROLE said otherwise */
    uint64_t stalls;        /* subscriptions dropped: their Sentinel did not answer */
};

/* The client for FL's fleet.redis_sentinel (non-NULL) and its Sentinels;
 * OPS and ARG outlive it. Asks nothing until the first tick. */
struct ct_fleet_sentinel *ct_fleet_sentinel_new(const struct ct_conf_fleet *fl,
                                                const struct ct_fleet_sentinel_ops *ops,
                                                void *arg);
/* The bus's tick (about every second, NOW mono): give up on a Sentinel
 * late to answer; with no master (HAVE_MASTER false) ask for one (past a
 * ROLE mismatch's backoff); with one, subscribe to +switch-master and ask
 * the subscribed Sentinel again every CHECK_S. */
void ct_fleet_sentinel_tick(struct ct_fleet_sentinel *s, ct_time_t now, bool have_master,
                            double check_s);
/* ROLE's answer REP (the bus's command link to HOST:PORT, the master named):
 * true when it may be used (it says "master", or ROLE was refused: said,
 * used unverified); false when it is not a master (said, counted, the next
 * Sentinel asked after the backoff): the bus drops its links. */
bool ct_fleet_sentinel_role(struct ct_fleet_sentinel *s, const char *host, int port,
                            const struct redisReply *rep);
void ct_fleet_sentinel_counts(const struct ct_fleet_sentinel *s,
                              struct ct_fleet_sentinel_counts *out);
/* Close its links (their callbacks do nothing by then) and free; NULLs *SP. */
void ct_fleet_sentinel_free(struct ct_fleet_sentinel **sp);

#endif /* CT_PROXY_FLEET_SENTINEL_H */
