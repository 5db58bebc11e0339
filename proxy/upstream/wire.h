/*
 * proxy/upstream/wire.h: HTTP/1 on the wire (wire.c): request heads for
 * origins, chunk framing, and the body pump between a parser and
 * evbuffers, which HTTP/1 clients' bodies use too. What the cache adds to a
 * forwarded response head is here as well (the core passes it to any
 * protocol); HTTP/1 response heads themselves are proxy/h1/h1_wire.h's.
 */
#ifndef CT_PROXY_WIRE_H
#define CT_PROXY_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/common.h"
#include "http/http.h"
#include "proxy/ctx.h"

struct evbuffer;
struct ct_io;
struct ct_http_parser;

struct ct_fwd_req {
    const struct ct_http_msg *msg;
    struct ct_str peer_ip;   /* appended to X-Forwarded-For */
    bool https;              /* X-Forwarded-Proto */
    bool chunked_body;       /* we send Transfer-Encoding: chunked */
    struct ct_str default_host; /* Host for HTTP/1.0 requests without one */
    /* A field we set and never take from the client (mTLS subject); a
     * client-sent copy is dropped. EXTRA_VALUE empty: only the drop. */
    struct ct_str extra_name, extra_value;
    /* A route's rules, applied in order: SET replaces every field of that
     * name, APPEND adds one, REMOVE drops them; STRIP_COOKIE drops Cookie. */
    const struct ct_fwd_edit *edits;
    size_t nedits;
    bool strip_cookie;
};

/* Send the request head for the origin on IO (an upstream's): written at
 * once when nothing is queued (ct_io_writev), else queued on its output. */
void ct_fwd_request_head(struct ct_io *io, const struct ct_fwd_req *fr);

/* Move N body bytes from SRC to OUT, as one chunk if CHUNKED. */
void ct_fwd_body(struct evbuffer *out, struct evbuffer *src, size_t n, bool chunked);
/* The last chunk, no trailers. */
void ct_fwd_body_end(struct evbuffer *out);
/* Feed one event's worth of SRC to parser P: peek the first contiguous
 * segment, feed it, drain what the parser consumed. With CT_HTTP_EV_BODY the
 * body bytes are moved (not copied) to DST, framed as a chunk if CHUNKED, or
 * dropped if DST is NULL; *BODY_LEN says how many. An empty SRC is fed as a
 * zero-length segment, so a bodiless message still reports its END. */
enum ct_http_ev ct_fwd_pump(struct ct_http_parser *p, struct evbuffer *src, struct evbuffer *dst,
                            bool chunked, size_t *body_len);

#endif /* CT_PROXY_WIRE_H */
