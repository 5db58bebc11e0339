/*
 * proxy/h2/h2_serve_int.h: shared by h2_serve.c (the connection) and
 * h2_resp.c (ct_h2_proto, a stream's side of proxy/core/proto.h) only.
 *
 * Objects and owners (worker thread only):
 *   struct ct_h2s         one HTTP/2 connection: owns its bufferevent (and
 *                         SSL), its ct_io, the engine session, its timer and
 *                         its streams
 *   struct ct_h2s_stream  one request stream: embeds the struct ct_req the
 *                         core runs on; freed by the connection once the
 *                         engine closed the stream and the core let go
 */
#ifndef CT_H2_SERVE_INT_H
#define CT_H2_SERVE_INT_H

#include "proxy/core/core.h"
#include "proxy/h2/h2.h"
#include "proxy/h2/h2_serve.h"
#include "proxy/net/deadline.h" /* ct_now_ms */
#include "proxy/net/net.h"

#define CT_H2S_MAGIC 0x68325331u        /* "h2S1" */
#define CT_H2S_STREAM_MAGIC 0x68327331u /* "h2s1" */

struct ct_h2s_stream {
    unsigned magic;
    struct ct_h2s *s;
    int32_t sid;
    struct ct_req r;
    bool closed;  /* the engine closed the stream (on_close) */
    bool in_core; /* the core holds r: from the start until done/fail/free */
    bool body_end; /* the request's END_STREAM was received */
    bool held;     /* the core holds the request body back (body_hold) */
    bool want_body; /* body_read said NEED: ct_req_body_readable when more comes */
    bool full;     /* output_full said so: drained() once under the low mark */
    uint64_t full_since_ms; /* since when (the per-stream send timeout) */
    struct evbuffer *bodybuf; /* body_out: the origin's body on its way to the engine */
    struct ct_h2s_stream *prev, *next; /* the connection's streams */
};

struct ct_h2s {
    unsigned magic;
    struct ct_worker *w;
    const struct ct_listener_conf *lc;
    struct ct_site_memo site_memo; /* its streams' :authority -> site (route_step.c) */
    struct bufferevent *bev; /* owned; BEV_OPT_CLOSE_ON_FREE */
    struct ct_io io;
    struct ct_h2_conn *h;
    /* One timer for all of the connection's deadlines (monotonic ms; 0:
     * none), kept lazily, and for the deferred pump (ct_h2s_kick): each
     * libevent event is 136 bytes an idle connection would hold. */
    struct event *timer;
    uint64_t timer_at_ms; /* when it fires (0: not armed) */
    uint64_t end_at_ms;   /* preface / idle / linger */
    uint64_t trim_at_ms;  /* idle a while: give back the busy-only memory */
    uint64_t stall_at_ms; /* the send timeout of streams whose client does not read */
    uint64_t drain_at_ms; /* reload: the final GOAWAY, a round trip after the notice */
    uint64_t id;
    char peer[64];
    size_t peer_ip_len;
    enum ct_close why;
    unsigned depth;     /* inside the engine (recv/send/free): no send, no close */
    bool closing;       /* GOAWAY or error written: close once the output is out */
    bool close_now;     /* close at the end of the outermost call (no flush) */
    bool lingering;     /* all written and shut: waiting for the client's EOF */
    bool got_bytes;     /* the client sent something (the preface timeout is over) */
    bool kicked;        /* the timer was made active for the pump */
    bool reload_drain;  /* a reload's drain is under way */
    struct ct_h2s_stream *streams;
    struct ct_creq *spare_cr; /* the last stream's cache part, for the next one */
    struct ct_h2_counts counted; /* the engine's counts already in the stats */
    struct ct_h2s *prev, *next; /* this worker thread's h2 connections */
};

static inline struct ct_h2s_stream *ct_h2s_stream_of(struct ct_req *r)
{
    struct ct_h2s_stream *st = CT_CONTAINER_OF(r, struct ct_h2s_stream, r);
    CT_CHECK_OBJ(st, CT_H2S_STREAM_MAGIC);
    return st;
}

/* The engine has output for the client (a response was submitted outside
 * a read): write it on the next loop turn, never under the caller, whose
 * request a write could close (on_close runs inside ct_h2_conn_send). */
void ct_h2s_kick(struct ct_h2s *s);
/* Bytes queued for the client and not yet written (the connection's side
 * of a stream's back-pressure). */
size_t ct_h2s_out_len(const struct ct_h2s *s);
/* ST's output is full (its queued body over the high mark): its request
 * waits for drained(); past the send timeout the stream is reset. */
void ct_h2s_stream_full(struct ct_h2s_stream *st);

/* A stream's body queued in the engine: over HIGH the request waits, under
 * LOW it goes on (the client's stream window decides how fast). */
#define CT_H2S_STREAM_HIGH (64 * 1024)
#define CT_H2S_STREAM_LOW (16 * 1024)

/* The core is done with ST's request (done, fail): log it; the stream
 * goes once the engine closed it too. */
void ct_h2s_stream_done(struct ct_h2s_stream *st);

/* h2_resp.c */
extern const struct ct_proto ct_h2_proto;
/* The stream is gone: release what its response held (body_out's buffer). */
void ct_h2_resp_free(struct ct_h2s_stream *st);
/* The worker thread is done with HTTP/2: free its heads' scratch. */
void ct_h2_resp_thread_free(void);

#endif /* CT_H2_SERVE_INT_H */
