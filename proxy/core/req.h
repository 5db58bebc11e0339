/*
 * proxy/core/req.h: what a protocol calls on the request core (fetch.c and the
 * cache glue): Varnish's CNT_Request entry, h2o's h2o_process_request.
 *
 * A protocol (HTTP/1 in client.c / h1_*.c, an HTTP/2 stream in proxy/h2/)
 * fills a struct ct_req (proxy_int.h: proto, w, lc, peer, conn_id, tls, the
 * parsed msg, cr kept across its requests) and calls ct_req_start(); the
 * core answers through r->proto (proxy/core/proto.h) until it calls done or fail.
 *
 * Worker thread only.
 */
#ifndef CT_PROXY_REQ_H
#define CT_PROXY_REQ_H

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

#endif /* CT_PROXY_REQ_H */
