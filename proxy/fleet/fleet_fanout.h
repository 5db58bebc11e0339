/*
 * proxy/fleet/fleet_fanout.h: purges and bans sent over HTTP to the other
 * members' admin listeners (fleet.members[].admin), for a fleet without
 * Redis and while Redis is down or slow (issue 17). Owned by the bus
 * (fleet_bus.h), which decides when a purge goes this way.
 *
 * Each request carries the hop header, so the member applies it and never
 * sends it on, and this node's admin token. One keep-alive connection per
 * admin address ever used. Main thread (the bus's event loop) only.
 *
 * The catch-up: per member, the purges and bans it has not acknowledged
 * wait in order (at most fleet.fanout_queue, read at each send) and are
 * sent again with a backoff until it answers; a member cut off applies what
 * it missed when it is back, or is said (log, counters) to have missed it.
 */
#ifndef CT_PROXY_FLEET_FANOUT_H
#define CT_PROXY_FLEET_FANOUT_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "conf/conf.h"

struct event_base;
struct ct_fleet_fanout; /* opaque */

/* Why an entry was dropped unacknowledged; the order of
 * CT_STATS_FANOUT_DROP_TABLE (proxy/stats/stats.h), the label "reason" of
 * cachet_fleet_fanout_dropped. */
enum ct_fleet_fanout_drop {
    CT_FLEET_FANOUT_DROP_FULL,     /* past fleet.fanout_queue: the oldest */
    CT_FLEET_FANOUT_DROP_REJECTED, /* a 4xx but 401/403/404/429: it will never succeed */
    CT_FLEET_FANOUT_DROP_LEFT,     /* its member left the configuration in force */
    CT_FLEET_FANOUT_DROP__COUNT
};

struct ct_fleet_fanout_counts {
    uint64_t sent;    /* entries handed to a member's queue (or connection), once each */
    uint64_t retries; /* entries sent again after a failure */
    uint64_t waiting; /* gauge: entries not acknowledged yet, all members */
    uint64_t dropped[CT_FLEET_FANOUT_DROP__COUNT];
};

/* A fan-out on BASE with CF's hop header and admin token (copied: a reload
 * of them needs a restart, as the bus's other settings). CF_NOW(ARG)
 * returns the configuration in force, whose members are sent to. */
struct ct_fleet_fanout *ct_fleet_fanout_new(struct event_base *base, const struct ct_conf *cf,
                                            const struct ct_conf *(*cf_now)(void *arg),
                                            void *arg);
/* Send KIND ("purge" or "ban") with QUERY (the admin's query, without "?")
 * and EXPR (the body; may be empty) to every member but this one that has
 * an admin address; the views are copied (each member's queue owns its
 * copy). Returns how many members it was queued for (with fanout_queue 0:
 * handed to a connection); *TARGETS gets how many members had an address.
 * Also drops the queues of members that left. */
size_t ct_fleet_fanout_send(struct ct_fleet_fanout *f, const char *kind, struct ct_str query,
                            struct ct_str expr, size_t *targets);
void ct_fleet_fanout_counts(const struct ct_fleet_fanout *f, struct ct_fleet_fanout_counts *out);
/* Close the connections (BASE still exists; requests in flight are
 * dropped), free the queues and timers, and free; NULLs *FP; NULL is fine. */
void ct_fleet_fanout_free(struct ct_fleet_fanout **fp);

#endif /* CT_PROXY_FLEET_FANOUT_H */
