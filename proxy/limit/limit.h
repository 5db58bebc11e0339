/*
 * proxy/limit/limit.h: per-client limits of routes and sites (issue 15):
 * requests per second as a token bucket (429 with Retry-After past it), and
 * requests in flight at once per client address.
 *
 * One table for every worker, so a client's connections landing on several
 * workers (SO_REUSEPORT) share one bucket: 64 stripes, each with its own
 * mutex, held for a few dozen instructions. Memory is fixed at creation:
 * the table holds SLOTS entries (about 48 bytes each); a new client that
 * finds its probe window full takes the entry of the one seen longest ago
 * (never one with requests in flight), so a flood of addresses costs the
 * flooders' buckets, not memory. The price: an evicted client starts with a
 * full bucket again.
 *
 * Time comes in as NOW (seconds, monotonic): tests move it.
 */
#ifndef CT_LIMIT_H
#define CT_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

struct ct_limit_table; /* opaque; thread-safe */

/* Who is limited: SCOPE (a route or site id) and the client address
 * (FAMILY AF_INET with 4 bytes of ADDR, AF_INET6 with 16). */
struct ct_limit_key {
    uint32_t scope;
    int family;
    const uint8_t *addr;
};

/* SLOTS is rounded up to a power of two, at least 64. */
struct ct_limit_table *ct_limit_table_new(size_t slots);
void ct_limit_table_free(struct ct_limit_table **tp);

/* One request of K at NOW under RATE per second with BURST (the bucket's
 * size, >= 1). True: allowed (a token taken). False: refused, and
 * *RETRY_AFTER_S is the whole seconds until a token is there (>= 1). */
bool ct_limit_take(struct ct_limit_table *t, const struct ct_limit_key *k, double rate,
                   unsigned burst, ct_time_t now, unsigned *retry_after_s);

/* A request of K starts: true if fewer than MAX were in flight (then it
 * counts until ct_limit_leave), false if refused (nothing counted). */
bool ct_limit_enter(struct ct_limit_table *t, const struct ct_limit_key *k, unsigned max,
                    ct_time_t now);
void ct_limit_leave(struct ct_limit_table *t, const struct ct_limit_key *k);

/* Entries in use (tests, /stats). */
size_t ct_limit_used(struct ct_limit_table *t);

#endif /* CT_LIMIT_H */
