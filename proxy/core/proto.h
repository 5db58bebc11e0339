/*
 * proxy/core/proto.h: what request logic may ask of the protocol that carries a
 * request (Varnish's struct transport, h2o's final output stream).
 *
 * The request core (proxy/core) decides what to answer: a stored object
 * under a plan (status, range, length, Cache-Status), a short answer of our
 * own, body pieces. How that looks on the wire (status lines, chunk framing,
 * Connection, the writev/sendfile fast paths, TLS records, DATA frames) is
 * the protocol's: HTTP/1 is proxy/h1/h1_resp.c (ct_h1_proto), HTTP/2
 * proxy/h2/h2_resp.c (ct_h2_proto). A request reaches its protocol only
 * through r->proto.
 *
 * Worker thread only. Every call may write to the socket at once.
 */
#ifndef CT_PROXY_PROTO_H
#define CT_PROXY_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#include "common/close.h"
#include "common/common.h"

struct ct_req;
struct ct_obj;
struct ct_http_msg;
struct evbuffer;

struct ct_fwd_edit;
struct ct_http_field;

/* What the request adds to a forwarded response head (send_head): its Cache-Status value
 * (appended after any upstream one, RFC 9211 §2) and fields it keeps from the
 * client besides the hop-by-hop ones (targeted cache control, RFC 9213). */
struct ct_fwd_resp_extra {
    struct ct_str cache_status;
    const struct ct_fwd_edit *edits; /* a route's response rules (proxy/ctx.h) */
    size_t nedits;
    bool (*omit)(const struct ct_http_field *f, const void *arg);
    const void *omit_arg;
};
/* What the protocol's request body source gives (body_read). */
enum ct_body_ev {
    CT_BODY_DATA,  /* *N bytes were moved */
    CT_BODY_NEED,  /* nothing now: ct_req_body_readable() follows when more came */
    CT_BODY_END,   /* the body is complete (nothing was moved) */
    CT_BODY_ERROR, /* the body is malformed: the request fails (CT_CLOSE_RX_BAD) */
};

/* What the request decided to send from a stored object. */
struct ct_resp_plan {
    unsigned status;          /* the status to send */
    bool own_status;          /* 304/206/416: not the stored status line */
    bool body;                /* body bytes follow (not HEAD, 204/304/416) */
    bool length_field;        /* state the length (Content-Length: LEN) */
    uint64_t len;             /* the body's length; UINT64_MAX: unknown yet (streaming) */
    const char *content_range; /* "bytes A-B/LEN" or "bytes * /LEN" value, or "" */
    struct ct_str cache_status;
    bool close;               /* end the connection after this response */
    /* The stored head only: the body follows from the origin, framed as the
     * protocol decided for the origin's response (ct_h1 final_head). */
    bool from_origin;
};

struct ct_proto {
    const char *name; /* "http/1.1" */
    /* The head of a response from OBJ as PLAN says, and with PLAN->body
     * (complete object, from the range's start) as much of the body as the
     * protocol can send at once (ct_req_obj_next() gives it the pieces).
     * Then the request pumps the rest through send_obj_piece. */
    void (*deliver_head)(struct ct_req *r, struct ct_obj *obj, const struct ct_resp_plan *plan);
    /* A piece of OBJ's body, by reference: OBJ outlives the bytes. */
    void (*send_obj_piece)(struct ct_req *r, struct ct_obj *obj, struct ct_str piece);
    /* The object's body is all sent. */
    void (*send_obj_end)(struct ct_req *r);
    /* A short text answer of our own (PURGE, only-if-cached, waiter timeout). */
    void (*send_synth)(struct ct_req *r, unsigned status, struct ct_str body,
                       struct ct_str cache_status);
    /* Write what is queued. True if the output still holds more than the
     * low mark: stop adding until the protocol calls the request's drained
     * hook (ct_cache_client_drained). */
    bool (*output_full)(struct ct_req *r);
    void (*flush)(struct ct_req *r);
    /* A request whose head announced no body: let the protocol see its end
     * now, so the connection can take the next one. False if it cannot. */
    bool (*body_finish)(struct ct_req *r);

    /* Responses from the origin. */
    /* RESP is the origin's final head: choose how its body is framed towards
     * the client. True if the connection ends after this response. */
    bool (*frame_response)(struct ct_req *r, const struct ct_http_msg *resp);
    /* Send RESP's head with EXTRA (the cache's Cache-Status, fields it
     * keeps). BODY_DIRECT: the body goes straight to the client, so the
     * protocol may send it with the head when it is all there already; it
     * then sets r->body_with_head and the request only consumes it. */
    void (*send_head)(struct ct_req *r, const struct ct_http_msg *resp,
                      const struct ct_fwd_resp_extra *extra, bool body_direct);
    /* A 1xx from the origin (never 100: see send_continue). */
    void (*send_interim)(struct ct_req *r, const struct ct_http_msg *resp);
    /* Expect: 100-continue, answered by us when the body is about to be read. */
    void (*send_continue)(struct ct_req *r);
    /* Where the origin's body may be moved to directly, and whether it must
     * be chunk-framed there (ct_fwd_pump). */
    struct evbuffer *(*body_out)(struct ct_req *r, bool *chunked);
    /* N body bytes from SRC, moved (not copied). */
    void (*send_body)(struct ct_req *r, struct evbuffer *src, size_t n);
    /* The origin's body is complete. */
    void (*send_end)(struct ct_req *r);
    /* A 101 from the origin to a request that asked for an upgrade: the
     * protocol takes the upstream over for raw bytes both ways (r->u is its
     * from now on). False if it cannot (HTTP/2): the request then fails. */
    bool (*tunnel)(struct ct_req *r, const struct ct_http_msg *resp);

    /* The request's body source (after the head). */
    /* Move what there is of the request body into DST, chunk-framed when
     * CHUNKED. The body's deadline is the protocol's. */
    enum ct_body_ev (*body_read)(struct ct_req *r, struct evbuffer *dst, bool chunked, size_t *n);
    /* Stop (HOLD) or resume taking body bytes: the upstream's output is full.
     * Time held is cachet's, not the client's: it does not count against the
     * body's deadline. */
    void (*body_hold)(struct ct_req *r, bool hold);

    /* The exchange's ends. Each of done/fail is the request's last call
     * into the protocol: R may be gone afterwards. */
    /* The response starts: its head is written next. */
    void (*respond)(struct ct_req *r);
    /* The client has its whole answer but the request goes on (a refresh on
     * this request after a stale answer): the client's leaving must not end
     * it, and the carrier takes no next request until done. */
    void (*answered)(struct ct_req *r);
    /* The response is complete: the carrier takes its next request. */
    void (*done)(struct ct_req *r);
    /* The exchange failed for WHY: answer ct_close_status(WHY) if no head
     * was sent, else cut the response so it looks truncated. */
    void (*fail)(struct ct_req *r, enum ct_close why);
};

/* The longest Cache-Status value a response may carry (what a protocol
 * reserves for it beside the stored head). */
#define CT_REQ_CSTATUS_MAX 128

/* For the protocol's fast paths on a complete object being delivered: the
 * next body piece (false: none left or not there), whether the body starts
 * at the object's first byte, the bytes left and the offset they start at,
 * and K bytes sent past the pieces (sendfile). Each counts the bytes sent. */
bool ct_req_obj_next(struct ct_req *r, struct ct_str *chunk);
bool ct_req_obj_at_start(const struct ct_req *r);
uint64_t ct_req_obj_left(const struct ct_req *r, uint64_t *off);
void ct_req_obj_sent(struct ct_req *r, uint64_t k);

#endif /* CT_PROXY_PROTO_H */
