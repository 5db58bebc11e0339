/*
 * proxy/core/req_step.h: the request's step machine (Varnish's CNT_Request,
 * drawn in docs/req_fsm.dot).
 *
 * A request is always at one step (r->step). ct_req_run() runs steps in one
 * loop: each step does its work, sets the next step and says MORE, or says
 * PARK (it waits for an event: a busy object, the client's output, the
 * upstream) or GONE (the request ended: R may be freed or already carry the
 * carrier's next request, so nothing may touch it). An event that unparks a
 * request sets its step, if it changes, and calls ct_req_run() again.
 *
 * The fetch itself (PASS and FILL) is the upstream's machine (fetch.c,
 * docs/origin_conn.dot): those steps start it and park; its events carry
 * the request to its end, or into STREAM when the fetching client reads
 * the object it fills.
 *
 * Worker thread only.
 */
#ifndef CT_PROXY_REQ_STEP_H
#define CT_PROXY_REQ_STEP_H

#include <stdint.h>

struct ct_req;

/* X(NAME, fn, what it does). Order is the usual path; the values fit in 4
 * bits (the trail below). */
#define CT_REQ_STEPS(X)                                                                        \
    X(RECV, recv, "the head is in: CONNECT is refused, the rest goes on")                     \
    X(ROUTE, route, "site and route; a route's own answer (redirect, fixed, 403) ends it")   \
    X(CACHE, cache, "may the cache answer: PURGE, the pass reasons, the key, Accept-Encoding") \
    X(PURGE, purge, "PURGE from an allowed address, by URL or by tag")                        \
    X(LOOKUP, lookup, "the store: HIT/STALE deliver, BUSY waits, MISS fills, else pass")      \
    X(WAIT, wait, "parked on a busy object's head (coalescing), with a timeout")              \
    X(PASS, pass, "fetch from the origin, nothing stored")                                    \
    X(FILL, fill, "fetch from the origin into the object")                                    \
    X(DELIVER, deliver, "a stored object: its head and the body that is there")               \
    X(STREAM, stream, "the rest of the object's body, as it fills and the client takes it")   \
    X(DECODE, decode, "a stored object decoded for a client that cannot take its coding")     \
    X(SYNTH, synth, "a short answer of ours (PURGE, only-if-cached, wait timeout, route)")    \
    X(DONE, done, "answered: the fetch or the protocol ends the request")

enum ct_req_step {
    CT_STEP_NONE, /* not started (0 in the trail: no step recorded there) */
#define CT_REQ_STEP_ENUM(name, fn, what) CT_STEP_##name,
    CT_REQ_STEPS(CT_REQ_STEP_ENUM)
#undef CT_REQ_STEP_ENUM
        CT_STEP__N
};

enum ct_req_next {
    CT_REQ_MORE, /* r->step was set: run it now */
    CT_REQ_PARK, /* waiting for an event, which calls ct_req_run() again */
    CT_REQ_GONE, /* the request ended: R must not be touched */
};

/* One function per step, in the file that owns that part of the request:
 * fetch.c (recv, route, pass, fill, done), cache_req.c (cache, purge,
 * lookup, wait, synth), cache_deliver.c (deliver, stream), cache_derive.c
 * (decode). */
#define CT_REQ_STEP_DECL(name, fn, what) enum ct_req_next ct_step_##fn(struct ct_req *r);
CT_REQ_STEPS(CT_REQ_STEP_DECL)
#undef CT_REQ_STEP_DECL

/* Run R from r->step until a step parks or ends it. */
void ct_req_run(struct ct_req *r);
/* ct_req_goto(R, STEP) (core.h, inline: the hit path takes six): set R's
 * step, recorded in its trail, without running it. */
/* "lookup" ... */
const char *ct_req_step_name(enum ct_req_step step);
/* The steps R went through, oldest first (the last 16 at most), as
 * "recv route cache lookup deliver" into BUF; for logs, panics and tests. */
const char *ct_req_trail(const struct ct_req *r, char *buf, unsigned cap);

#endif /* CT_PROXY_REQ_STEP_H */
