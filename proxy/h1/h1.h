/*
 * proxy/h1/h1.h: HTTP/1.1 connections (ct_h1): client.c (the connection
 * FSM, docs/client_fsm.dot), h1_req.c (request bodies, Upgrade tunnels),
 * h1_resp.c (ct_h1_proto: heads, chunking, errors, the hit fast paths).
 */
#ifndef CT_PROXY_H1_H
#define CT_PROXY_H1_H

#include <stdbool.h>
#include <stdint.h>

#include "common/close.h"
#include "proxy/core/core.h"
#include "proxy/net/accept.h"
#include "proxy/net/deadline.h"
#include "proxy/net/net.h"

struct evbuffer;
struct ct_http_parser;

/* ---- clients (client.c, fetch.c) ----------------------------------------- */

/* The client connection FSM (docs/client_fsm.dot). One state, one enum;
 * transitions only through client_set_state(), which checks them. */
#define CT_CLIENT_STATES(X)                                                    \
    X(READ_HEAD, "read-head")     /* idle or reading a request head */         \
    X(FETCH, "fetch")             /* request forwarded, waiting for the head */ \
    X(SEND, "send")               /* streaming the response body */            \
    X(TUNNEL, "tunnel")           /* after a 101: raw bytes both ways */       \
    X(LINGER, "linger")           /* last bytes out, draining input, closing */ \
    X(CLOSED, "closed")

enum ct_client_state {
#define CT_CS_ENUM(id, name) CT_CS_##id,
    CT_CLIENT_STATES(CT_CS_ENUM)
#undef CT_CS_ENUM
        CT_CS__COUNT
};

/* One exchange: the parsed request, the upstream it borrowed, the cache's
 * part, the response's progress and the log record, whatever connection
 * carries it. An HTTP/1 connection embeds one (pipelined requests are served
 * one at a time); it is reset between requests (enter_read_head). */
struct ct_client {
    unsigned magic;
#define CT_CLIENT_MAGIC 0xc11e0a7bu
    enum ct_client_state state;
    struct ct_worker *w;
    const struct ct_listener_conf *lc;
    struct ct_site_memo site_memo; /* its requests' Host -> site (route_step.c) */
    struct bufferevent *bev;    /* owned; BEV_OPT_CLOSE_ON_FREE */
    struct ct_io io;            /* its read side */
    struct ct_http_parser *rp;  /* request parser, reused for every request */
    struct ct_deadline dl;      /* handshake / head / keep-alive / body / linger deadline */
    int linger_outq;            /* linger: bytes the kernel still held at the last look */
    uint64_t linger_moved_ms;   /* linger: when that count last went down */
    struct ct_client *next, *prev; /* w->clients */
    struct ssl_st *tls;         /* HTTPS: the bufferevent's SSL (it owns it); NULL: plain */
    uint64_t id;
    unsigned nreq;
    char peer[64];              /* "ip:port" for logs */
    size_t peer_ip_len;         /* the "ip" part, for X-Forwarded-For */
    enum ct_close why;          /* first close reason recorded */
    bool failed;                /* client_fail() ran for this connection */
    bool head_started;          /* READ_HEAD: a byte of the next head arrived */
    bool resume;                /* READ_HEAD: the timer is a deferred parse, not a deadline */
    uint64_t body_seen;         /* r.body_bytes when the body source last ran dry (h1_req.c) */
    struct ct_req r;            /* the request in flight (FETCH..SEND); one at a time */
    /* framing of the response in flight (HTTP/1) */
    bool sent_continue;
    bool resp_chunked;          /* we add chunked framing towards the client */
    bool resp_close;            /* close after this response */
    bool obj_chunked;           /* a stored object's body goes out chunked (h1_resp.c) */
};

/* The HTTP/1 connection that carries R (client.c and h1_*.c only). */
static inline struct ct_client *ct_h1_of(struct ct_req *r)
{
    return CT_CONTAINER_OF(r, struct ct_client, r);
}

/* proxy/h1/h1_resp.c: HTTP/1's side of proxy/core/proto.h. */
extern const struct ct_proto ct_h1_proto;

/* Take over the connection proxy/net/accept.c made (INFO->bev is ours from
 * now on, counted in w->nclients already): HTTP/1.1 from its first byte. */
void ct_client_take(struct ct_worker *w, const struct ct_conn_info *info);
/* Draining: close the client now if it sits between requests. */
void ct_client_drain(struct ct_client *c);
/* Worker exit: free without ceremony. */
void ct_client_abort(struct ct_client *c);

/* client.c internals used by h1_*.c */
void ct_client_set_state(struct ct_client *c, enum ct_client_state to);
/* Fail: log once, answer the status of WHY if nothing was sent yet, close
 * (unless the cache answers instead: stale-if-error). */
void ct_client_fail(struct ct_client *c, enum ct_close why);
/* The same for proto->fail, after the request core asked the cache. */
void ct_client_req_fail(struct ct_client *c, enum ct_close why);
/* Flush the output, then close (lingering: input drained meanwhile). */
void ct_client_finish(struct ct_client *c, enum ct_close why);
/* The request body's deadline (limits.client_body_timeout, extended by
 * client_body_min_rate per byte received): start it with the head (START),
 * move it after body bytes, stop it at the body's end (req_body_done). While
 * reads are paused for the upstream (req_paused) it does not run:
 * ct_client_body_pause() stops and restarts its clock. 408 on expiry. */
enum ct_body_clock { CT_BODY_CLOCK_START, CT_BODY_CLOCK_MOVE, CT_BODY_CLOCK_STOP };
void ct_client_body_clock(struct ct_client *c, enum ct_body_clock op);
void ct_client_body_pause(struct ct_client *c, bool paused);
/* The response is complete: next request (keep-alive) or close. */
void ct_client_response_done(struct ct_client *c);
const char *ct_client_state_name(enum ct_client_state s);

/* h1_req.c: HTTP/1's request body source and upgrade tunnel (proto.h's
 * body_read, body_hold, tunnel), and the connection's events for them. */
enum ct_body_ev ct_h1_body_read(struct ct_req *r, struct evbuffer *dst, bool chunked, size_t *n);
void ct_h1_body_hold(struct ct_req *r, bool hold);
bool ct_h1_tunnel(struct ct_req *r, const struct ct_http_msg *resp);
void ct_h1_tunnel_readable(struct ct_client *c);
void ct_h1_tunnel_drained(struct ct_client *c);

#endif /* CT_PROXY_H1_H */
