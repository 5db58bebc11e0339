/*
 * proxy/fleet/fleet.h: the fleet's view on one worker (issue 17): which
 * member owns a key, which members are marked down after a failed peer
 * fetch, and whether a hop-marked request comes from a peer.
 *
 * Ownership is weighted rendezvous hashing (proxy/balance/) of the request's
 * key over the member names not marked down, this node included: every node
 * with the same member list computes the same owner, a member leaving moves
 * only its own keys, one joining takes ~1/N. Bounded load is opt-in
 * (fleet.load_factor): the load a node sees is its own, so a spill gives
 * two nodes two owners for one key for a while and costs the owner's
 * coalescing (the fleet's one origin fetch per object).
 *
 * Pure: no sockets, no clock (NOW passed in); the outbox below is a locked
 * queue, its wake-up the caller's. One ct_fleet per process
 * (px->fleet), shared by every worker: a member one worker found down is
 * skipped by all (lock-free marks, see fleet.c).
 */
#ifndef CT_PROXY_FLEET_H
#define CT_PROXY_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/common.h"
#include "conf/conf.h"

struct ct_fleet; /* opaque */

/* A view with no member marked down. The caller owns it (ct_fleet_free,
 * after the workers). */
struct ct_fleet *ct_fleet_new(void);
void ct_fleet_free(struct ct_fleet **fp); /* NULLs *FP; NULL is fine */

/* The backend group (ct_conf_group_at) a miss on KEY is fetched from under
 * CF: the owner's peer group, or SIZE_MAX when this node owns the key or CF
 * has no fleet. With fleet.load_factor and BUSY (per member of CF, the
 * caller's peer fetches in flight to it; NULL: no bound), an owner past the
 * bound is passed over for the key's next choice, and *SPILLED says so.
 * Any thread. */
size_t ct_fleet_owner_group(const struct ct_fleet *f, const struct ct_conf *cf, uint64_t key,
                            ct_time_t now, const unsigned *busy, bool *spilled);

/* A peer fetch from GROUP (a peer group of CF) failed before any response
 * byte: its member is not asked again for fleet.down_time. Any thread. */
void ct_fleet_peer_failed(struct ct_fleet *f, const struct ct_conf *cf, size_t group,
                          ct_time_t now);
/* How many members of CF are within such a mark at NOW (a gauge). */
size_t ct_fleet_members_down(const struct ct_fleet *f, const struct ct_conf *cf, ct_time_t now);

/* Membership (fleet_bus.c): member I of CF is registered in Redis (LIVE)
 * or not; a member not live owns no key until it is again. Any thread. */
void ct_fleet_member_live(struct ct_fleet *f, const struct ct_conf *cf, size_t i, bool live);

/* Is GROUP one of CF's fleet peer groups? */
bool ct_fleet_is_peer_group(const struct ct_conf *cf, size_t group);

/* May a request from SA (the TCP peer, never a forwarded address) that
 * carries the hop header with VALUE be served as a peer's fetch? With
 * fleet.token set, VALUE must be the token (compared in constant time);
 * without it, SA's IP must be a member's. */
bool ct_fleet_hop_trusted(const struct ct_conf_fleet *fl, const struct sockaddr *sa,
                          struct ct_str value);

/* ct_fleet_hop_trusted with the TCP peer's IP as text (as a connection
 * names its peer: inet_ntop's, or a PROXY header's). */
bool ct_fleet_hop_trusted_ip(const struct ct_conf_fleet *fl, struct ct_str ip,
                             struct ct_str value);

/* The hop header's value this node sends: the token, or "1". */
struct ct_str ct_fleet_hop_value(const struct ct_conf_fleet *fl);

/* The outbox: clients' PURGE requests, applied on a worker, go to the other
 * nodes through the main thread's bus (fleet_bus.h), which is not the
 * workers' to call. A worker pushes the purge as an admin /purge query
 * ("url=...", "tag=...", "&soft=1"); the main thread, woken by WAKE (called
 * under the outbox's lock, from the pushing thread: it must only signal,
 * e.g. write an eventfd), pops and publishes. Closed (the default, and
 * without a bus) it takes nothing: CLOSED. At most MAX are queued
 * (fleet.purge_queue, passed on each push so a reload applies at once):
 * past it a push is refused, FULL (the caller answers and counts it), so a
 * stalled main thread cannot make the workers' purges grow memory. *BURST
 * is for one log line per burst of refusals: on FULL, how many in a row
 * this one makes (1: the first); on QUEUED, how many were refused in a row
 * just before (0: none); 0 on CLOSED. Open and close: main thread; push:
 * any thread; pop: main thread. */
enum ct_fleet_push { CT_FLEET_PUSH_QUEUED, CT_FLEET_PUSH_FULL, CT_FLEET_PUSH_CLOSED };
void ct_fleet_outbox_open(struct ct_fleet *f, void (*wake)(void *arg), void *arg);
void ct_fleet_outbox_close(struct ct_fleet *f); /* what is queued is dropped */
enum ct_fleet_push ct_fleet_outbox_push(struct ct_fleet *f, struct ct_str query, size_t max,
                                        size_t *burst);
/* The oldest query (NUL-terminated; the caller frees it), or NULL. */
char *ct_fleet_outbox_pop(struct ct_fleet *f);

#endif /* CT_PROXY_FLEET_H */
