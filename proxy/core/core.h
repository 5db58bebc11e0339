/*
 * proxy/core/core.h: the request (ct_core): one exchange, whatever protocol
 * carries it. A protocol fills one and calls proxy/core/req.h; the core
 * answers through r->proto (proxy/core/proto.h). No HTTP/1 bytes here.
 */
#ifndef CT_PROXY_CORE_H
#define CT_PROXY_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/common.h"
#include "proxy/core/proto.h"
#include "proxy/ctx.h"

struct ct_upstream;
struct ct_creq;
struct ct_http_msg;
struct ssl_st;

struct ct_proto;
/* Where the request is (the response's side; the cache's own steps are
 * struct ct_creq's mode). */
enum ct_req_phase {
    CT_RP_IDLE,   /* no request head yet */
    CT_RP_FETCH,  /* head read: looking up, waiting, or fetching; nothing sent */
    CT_RP_SEND,   /* the response started */
    CT_RP_TUNNEL, /* after a 101: the protocol's (proto->tunnel) */
};

struct ct_req {
    unsigned magic;
#define CT_REQ_MAGIC 0x7e90e57u
    enum ct_req_phase phase;
    const struct ct_proto *proto;  /* what carries it (proxy/proto.h) */
    /* what the request reads of its connection (set by the protocol) */
    struct ct_worker *w;
    const struct ct_listener_conf *lc; /* scheme, policy, mTLS subject field */
    const char *peer;           /* "ip:port" for logs; the ip part for X-Forwarded-For */
    size_t peer_ip_len;
    uint64_t conn_id;
    struct ssl_st *tls;         /* the TLS session that carries it; NULL: plain */
    const struct ct_http_msg *msg; /* views into the connection's parser */
    bool body_done;             /* the request parser reached its END */
    bool body_paused;           /* body reads stopped: upstream output full */
    uint64_t body_bytes;
    uint64_t body_t0_ms;        /* body deadline clock start (monotonic ms), moved
                                   forward by the time reads were paused */
    uint64_t body_paused_ms;    /* when reads paused for the upstream (0: not) */
    unsigned retries;
    struct ct_upstream *u;      /* borrowed from the pool during a fetch */
    struct ct_creq *cr;         /* the cache's part (cache_req.c), kept across requests */
    /* the response */
    bool head_sent;
    bool body_with_head;        /* the protocol sent the body with the head */
    bool fwd_head;              /* the client's body follows from the origin, through
                                   send_body .. send_end (its head was the origin's,
                                   or the object's being filled) */
    unsigned status;
    bool up_keep_alive;         /* the origin connection may be reused */
    bool up_paused;             /* upstream reads stopped: client output full */
    bool up_got_byte;           /* some response byte came on this upstream */
    /* operations (proxy/admin.h ct_ops_*): the log record */
    ct_time_t t0, t0_real;      /* head received: mono, wall clock */
    ct_time_t tup;              /* mono, first upstream asked for; 0: none */
    uint64_t body_out;          /* response body bytes forwarded */
    uint8_t cs;                 /* enum ct_stats_cs, set by the cache path */
    bool logged;                /* counted and logged (ct_req_log_end) */
};

/* The log record (req_log.c), on R's worker. */
/* A request head arrived: its clock starts. */
void ct_req_log_start(struct ct_req *r);
/* The request ended with STATUS (0: nothing was answered): counted and
 * logged once; later calls for the same request do nothing. */
void ct_req_log_end(struct ct_req *r, unsigned status);
/* An upstream event of the backend r->u belongs to (enum ct_stats_be). */
void ct_req_log_upstream(struct ct_req *r, enum ct_stats_be what);

#endif /* CT_PROXY_CORE_H */
