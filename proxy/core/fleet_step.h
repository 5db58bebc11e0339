/*
 * proxy/core/fleet_step.h: the fleet on the request path (issue 17), the
 * hooks fetch.c calls; the view itself is proxy/fleet/ (w->fleet).
 *
 *   recv     a hop header is a peer's fetch only from a member address (or
 *            with the token); from anyone else it is counted and dropped, so
 *            the request is an ordinary client's
 *   pick     a miss that fills the cache, not itself a peer's fetch, goes to
 *            its owner's peer group when the owner is another node
 *   forward  a peer fetch carries the hop header; nothing else does
 *   failed   the owner did not answer (refused, timed out, reset before a
 *            byte): marked down, counted, and the fetch goes to the origin
 *            (owner_down = origin) or fails with 502 (owner_down = error)
 *
 * Worker thread only. Internal to proxy/core.
 */
#ifndef CT_PROXY_CORE_FLEET_STEP_H
#define CT_PROXY_CORE_FLEET_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/close.h"

struct ct_req;
struct ct_upstream_pick;
struct ct_fwd_edit;
struct ct_cache_fresh;

/* Before routing: is R a trusted peer's fetch (r->fleet_hop)? */
void ct_req_fleet_recv(struct ct_req *r);
/* After the group was picked: send R's fetch to the owner of its cache key
 * instead? Sets r->fleet_peer and PICK's group. */
void ct_req_fleet_pick(struct ct_req *r, struct ct_upstream_pick *pick);
/* The hop header for R's forwarded head: set (to a peer) or removed (to the
 * origin). Writes at most one edit into OUT; returns how many (0: no fleet). */
size_t ct_req_fleet_edit(const struct ct_req *r, struct ct_fwd_edit *out);
/* R's fetch from a peer failed with WHY before any response byte. True:
 * fetch again (r->fleet_fallback set, from the origin); false: not a peer
 * fetch, or owner_down = error (R fails as usual). */
bool ct_req_fleet_failed(struct ct_req *r, enum ct_close why);

/* R's fetch came from the owner (r->fleet_peer): cap F, the freshness this
 * edge stores, so its copy is fresh for at most fleet.mirror_ttl from now
 * (the owner's Age counts: a copy whose own lifetime is shorter keeps it).
 * Hot-key mirroring: hits stay local, and a purge that misses this node is
 * outlived by mirror_ttl, not by the object's TTL. Grace and stale-if-error
 * windows start at the capped expiry, so an edge can still serve stale while
 * the owner is slow. (mirror_ttl 0, no copy at all, is cache_fill.c's
 * not_storable.) */
void ct_req_fleet_mirror_cap(const struct ct_req *r, struct ct_cache_fresh *f);

/* R, a client's PURGE, was applied here (SOFT: a soft purge; TAGS: the
 * NTAGS tags it named, else its URL): hand it to the fleet's fan-out
 * (px->fleet's outbox, published by the main thread as an admin purge:
 * through Redis, or over HTTP while Redis is down or without fleet.redis),
 * so it reaches every node, as the admin's purges do. Not for a peer's
 * request (r->fleet_hop), nor when the outbox is closed (no eventfd). False: the fan-out's queue is
 * full (fleet.purge_queue), so the other nodes will not see this PURGE
 * (counted, logged once per burst); the caller tells the client. */
struct ct_str;
bool ct_req_fleet_purge(struct ct_req *r, bool soft, const struct ct_str *tags, size_t ntags);

#endif /* CT_PROXY_CORE_FLEET_STEP_H */
