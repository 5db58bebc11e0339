/*
 * proxy/fleet/fleet_bus.h: the fleet's coordination through Redis (issue 17):
 * purge and ban fan-out, and membership.
 *
 *   fan-out     an admin purge, tag purge, soft purge or ban applied on this
 *               node is appended to the Redis stream {PREFIX}:purges (XADD, with
 *               the node's name); every node reads the stream (XREAD BLOCK
 *               from the last id it applied) and applies each entry of the
 *               others once. A stream rather than PUBLISH: its ids order the
 *               entries and a node cut off reads on from its last id when it
 *               reconnects (the catch-up); pub/sub would lose what was sent
 *               while it was away. The stream keeps the last 10000 entries; a
 *               node that was away longer says so in its log and counts it.
 *   membership  the node registers itself in the sorted set {PREFIX}:members
 *               (score: expiry in ms) every register_ttl / 3, drops expired
 *               entries and reads the set back: a configured member missing
 *               from it is not live, and its keys go to their next owner
 *               until it registers again. An entry is "NAME PEER ADMIN"
 *               (addresses IP:PORT, ADMIN "-" for none); with
 *               fleet.learn_members a registered node the configuration
 *               does not list is learned (LEARN below) and joins.
 *   no Redis    (static members) purges go over HTTP, as below, always.
 *   Redis down  nothing is waited for: the fleet serves on its last view,
 *               purges are applied here and sent to the other members' admin
 *               listeners over HTTP instead (fleet.members[].admin); it
 *               reconnects every second and picks up where it stopped.
 *   stalled     (the links up, nothing answered) bounded: XADDs past a count
 *               go over HTTP, one registration and one membership read in
 *               flight at most; one unanswered for register_ttl drops the
 *               links, made again as after a loss.
 *
 * Runs on the main thread's event loop, the one the admin listener runs on:
 * admin purges are issued there, so publishing is a plain call, and one
 * connection per node (not per worker) is what the cache needs, since the
 * store is shared by the workers. Never on a request's path.
 * hiredis 0.14 (Debian 12), its libevent adapter; Redis >= 5 (streams),
 * standalone, Cluster (both keys in the slot of {PREFIX}; MOVED followed, an
 * ASKed command sent once to the importing node) or
 * a Sentinel-managed primary (asked again after every loss; a failover
 * followed at the Sentinel's +switch-master; the master named used only
 * once its ROLE says so: fleet_sentinel.h).
 */
#ifndef CT_PROXY_FLEET_BUS_H
#define CT_PROXY_FLEET_BUS_H

#include <stdint.h>

#include "common/common.h"
#include "conf/conf.h"

struct event_base;
struct ct_fleet;
struct ct_fleet_bus; /* opaque */
struct ct_fleet_fanout_counts;

/* Apply an entry from another node: KIND "purge" (QUERY: the admin's
 * /purge query) or "ban" (QUERY: /ban's, EXPR its body). On BASE's thread. */
typedef void ct_fleet_bus_apply_cb(void *arg, const char *kind, struct ct_str query,
                                   struct ct_str expr);

/* fleet.learn_members: the members registered in Redis that the file does
 * not list are now M[0..N) (sorted by name; the strings are the caller's, to
 * copy), which differs from the learned members of the configuration in
 * force. On BASE's thread, after a membership read. */
typedef void ct_fleet_bus_learn_cb(void *arg, const struct ct_conf_fleet_member *m, size_t n);

/* The counters the bus keeps (main thread), for /stats and /metrics. */
struct ct_fleet_bus_counts {
    uint64_t published;  /* entries this node appended */
    uint64_t applied;    /* others' entries applied here */
    uint64_t http_sent;  /* HTTP fan-out requests sent while Redis was down */
    uint64_t unsent;     /* fan-outs that reached nobody (Redis down, no admin addresses) */
    uint64_t redis_errors; /* failed connects and lost connections */
    uint64_t missed;     /* catch-ups that found the stream trimmed past the last id */
    uint64_t redis_up;   /* gauge: 1 while both connections are up */
    uint64_t live;       /* gauge: members live in the last membership read (self included) */
    uint64_t redirects;  /* Redis Cluster MOVED followed; Sentinel: a master demoted, or
                            a +switch-master */
    uint64_t asks;       /* Redis Cluster ASK: commands sent once to the importing node */
    uint64_t slow;       /* purges and bans Redis left unanswered: sent over HTTP as well */
    uint64_t skipped;    /* registrations and membership reads not sent: the last one of
                            their kind was still unanswered */
    uint64_t stalls;     /* links dropped: Redis answered nothing for register_ttl */
    uint64_t role_mismatch; /* Sentinel: a master named whose ROLE said otherwise */
    uint64_t sentinel_stalls; /* Sentinel: subscriptions dropped, their Sentinel silent */
};

/* A bus for CF's fleet on BASE, connecting at once; NULL when CF has no
 * fleet. Without fleet.redis (static members) it is the HTTP fan-out alone,
 * as with Redis down for good: nothing registers or is learned, and a
 * fleet whose members name no admin address has no fan-out at all (not
 * counted as unsent). VIEW (px->fleet) gets the membership marks. The bus copies
 * what it needs of CF (a reload of fleet.redis needs a restart); CF_NOW
 * returns the configuration in force (members are matched by name). */
struct ct_fleet_bus *ct_fleet_bus_new(struct event_base *base, const struct ct_conf *cf,
                                      struct ct_fleet *view,
                                      const struct ct_conf *(*cf_now)(void *arg),
                                      ct_fleet_bus_apply_cb *apply,
                                      ct_fleet_bus_learn_cb *learn, void *arg);
/* Send this node's purge or ban to the others (see ct_fleet_bus_apply_cb). */
void ct_fleet_bus_publish(struct ct_fleet_bus *b, const char *kind, struct ct_str query,
                          struct ct_str expr);
void ct_fleet_bus_counts(const struct ct_fleet_bus *b, struct ct_fleet_bus_counts *out);
/* The HTTP fan-out's counters (fleet_fanout.h), main thread. */
void ct_fleet_bus_fanout_counts(const struct ct_fleet_bus *b,
                                struct ct_fleet_fanout_counts *out);
/* Close the connections (BASE still exists) and free; NULLs *BP. */
void ct_fleet_bus_free(struct ct_fleet_bus **bp);

#endif /* CT_PROXY_FLEET_BUS_H */
