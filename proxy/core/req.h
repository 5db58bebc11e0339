/*
 * proxy/core/req.h: what a protocol calls on the request core: Varnish's
 * CNT_Request entry, h2o's h2o_process_request.
 *
 * A protocol (HTTP/1 in proxy/h1/, an HTTP/2 stream in proxy/h2/) fills a
 * struct ct_req (proxy/core/core.h: proto, w, lc, peer, conn_id, tls, the
 * parsed msg, cr kept across its requests) and calls ct_req_start(); the
 * core answers through r->proto (proxy/core/proto.h) until it calls done or fail.
 *
 * Worker thread only.
 */
#ifndef CT_PROXY_REQ_H
#define CT_PROXY_REQ_H

#include <stdbool.h>

#include "common/close.h"

struct ct_req;

/* R->msg is a complete request head: recv, lookup, deliver or fetch. */
void ct_req_start(struct ct_req *r);
/* More request body can be read (after body_read said CT_BODY_NEED). */
void ct_req_body_readable(struct ct_req *r);
/* The protocol's output for R went under its low mark: send on. */
void ct_req_drained(struct ct_req *r);
/* The carrier goes away (connection closed, stream reset) with R in
 * flight or idle: release the upstream and the cache part. R's memory is the
 * carrier's. */
void ct_req_free(struct ct_req *r);

/* R's carrier is about to fail it with WHY (enum ct_close). True: the
 * cache answered instead (a stale object within stale-if-error); the
 * failure is off. Otherwise the object being filled is failed (never
 * stored; its readers see a truncated body). */
bool ct_req_failing(struct ct_req *r, enum ct_close why);

/* The request's cache part (opaque). */
struct ct_creq;
/* An HTTP/2 connection's next stream reuses the last one's cache part (its
 * key buffer, timer and scratch), as an HTTP/1 connection's next request
 * keeps its ct_req's (issue 14). Take: R's part, reset as for a new request
 * and detached from R (NULL if it has none); R must have no upstream (a
 * fill may still need it: ct_req_free adopts it). Give: CR becomes R's
 * (R has none). Free: a part taken and never given (NULL-safe). */
struct ct_creq *ct_creq_take(struct ct_req *r);
void ct_creq_give(struct ct_req *r, struct ct_creq *cr);
void ct_creq_free(struct ct_creq **crp);

#endif /* CT_PROXY_REQ_H */
