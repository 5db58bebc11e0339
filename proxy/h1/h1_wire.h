/*
 * proxy/h1/h1_wire.h: HTTP/1 towards the client (h1_wire.c): response
 * heads for a forwarded response, and our short error answers.
 */
#ifndef CT_PROXY_H1_WIRE_H
#define CT_PROXY_H1_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "http/http.h"
#include "proxy/core/proto.h"
#include "proxy/upstream/wire.h"

struct evbuffer;

enum ct_h1_conn {
    CT_H1_CONN_KEEP,          /* HTTP/1.1 client: nothing to say */
    CT_H1_CONN_KEEP_ALIVE_10, /* HTTP/1.0 client: Connection: keep-alive */
    CT_H1_CONN_CLOSE,         /* Connection: close */
    CT_H1_CONN_UPGRADE,       /* 101: Connection: upgrade + the Upgrade field */
    CT_H1_CONN_INTERIM,       /* 1xx: no Connection field */
};
/* Write the response head for the client into OUT. CHUNKED: we frame the
 * body with chunked coding. CONN: what our Connection header says. EXTRA:
 * NULL, or the cache's additions. */
void ct_h1_response_head(struct evbuffer *out, const struct ct_http_msg *msg, bool chunked,
                          enum ct_h1_conn conn, const struct ct_fwd_resp_extra *extra);
/* The same head rendered into BUF (CAP bytes) for a direct write; returns
 * its length. Returns 0 if it did not fit: then it was written into OUT
 * instead, as by ct_h1_response_head (either way it exists once). */
size_t ct_h1_response_head_buf(struct evbuffer *out, char *buf, size_t cap,
                                const struct ct_http_msg *msg, bool chunked, enum ct_h1_conn conn,
                                const struct ct_fwd_resp_extra *extra);
/* A short plain-text error response; CLOSE adds Connection: close,
 * CACHE_STATUS (NULL: none) a Cache-Status field. */
void ct_h1_error(struct evbuffer *out, unsigned status, bool head_only, bool close,
                 const char *cache_status);


#endif /* CT_PROXY_H1_WIRE_H */
