/*
 * proxy/proxy_int.h: declarations shared inside proxy/ only.
 *
 * Objects and owners (all confined to one worker thread unless marked):
 *
 *   struct ct_proxy      main thread; owns the config, the workers, the
 *                        resolved backend addresses (read-only once running)
 *   struct ct_worker     one thread: its event_base, its listeners (one per
 *                        configured listener, SO_REUSEPORT), its clients, its
 *                        upstream pools and passive-health state per backend
 *   struct ct_client     one accepted connection (client.c); owns its
 *                        bufferevent and request parser; borrows an upstream
 *   struct ct_upstream   one connection to a backend (upstream.c); owns its
 *                        bufferevent and response parser; lent to one client
 *                        at a time, otherwise idle in its backend's pool
 *
 * Only client_close() frees a client and only upstream_close() frees an
 * upstream; each side asks the other's owner to let go, never frees it.
 */
#ifndef CT_PROXY_INT_H
#define CT_PROXY_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/close.h"
#include "common/common.h"
#include "conf/conf.h"
#include "http/http.h"
#include "proxy/proto.h"
#include "proxy/stats.h"

struct event_base;
struct event;
struct evconnlistener;
struct bufferevent;
struct evbuffer;
struct ct_conf;
struct ct_tls_ctx;
struct ct_tls_shared;
struct ct_ops;
struct ct_stats;
struct ct_accesslog_buf;
struct ct_cli;


/* ---- tuning that is not configuration ------------------------------------ */

/* Back-pressure: stop reading a source once the sink's output holds HIGH
 * bytes, resume when it has drained to LOW (le-proxy readcb/drained_writecb).
 * With 256 KiB per direction a connection pins at most ~0.5 MiB of bodies. */
#define CT_BP_HIGH (256 * 1024)
#define CT_BP_LOW (64 * 1024)
/* libevent stops reading a socket whose input holds this much. */
#define CT_READ_HIGH (256 * 1024)

/* ---- connection reads (io.c) ---------------------------------------------- */

/* The read side of one connection, and both sides of a TLS connection once
 * its handshake is done (see io.c for why not the bufferevent's own I/O).
 * Embedded in its owner; the callbacks have the bufferevent signatures and
 * get the owner's ARG; the write callback and write watermarks are the
 * bufferevent's own (bufferevent_setcb / bufferevent_setwatermark). */
struct ct_io {
    struct bufferevent *bev;
    struct event *rev; /* plain TCP: our read event; NULL: the bufferevent reads (TLS) */
    struct event *wev; /* TLS after the take-over: our write event, armed while blocked */
    struct ssl_st *ssl; /* TLS after the take-over (the bufferevent still owns it) */
    bool reading;
    bool rd_wants_w;  /* TLS: an SSL_read needs the socket writable */
    uint8_t werr;     /* TLS: 1 write error to report, 2 reported (writes stop) */
    size_t wretry;    /* TLS: length of the SSL_write that got WANT_WRITE (0: none) */
    struct event *tev; /* our reads: the read idle timeout (io.c rd_deadline) */
    uint64_t rd_deadline_ms, tev_at_ms; /* its deadline, when it fires (monotonic ms; 0: none) */
    uint64_t read_ms, write_ms;
    void (*readcb)(struct bufferevent *, void *);
    void (*eventcb)(struct bufferevent *, short, void *);
    void *arg;
};

/* Attach to BEV (its fd must exist). PLAIN: read with our own event. */
void ct_io_attach(struct ct_io *io, struct event_base *base, struct bufferevent *bev, bool plain,
                  void (*readcb)(struct bufferevent *, void *),
                  void (*eventcb)(struct bufferevent *, short, void *), void *arg);
/* Before bufferevent_free(). */
void ct_io_detach(struct ct_io *io);
/* Start or stop reading (idempotent). */
void ct_io_read(struct ct_io *io, bool on);
/* Idle read timeout and write timeout in ms (0: none). */
void ct_io_timeouts(struct ct_io *io, uint64_t read_ms, uint64_t write_ms);

/* The write path. Output is queued on the bufferevent's output evbuffer and
 * written by ct_io_flush() at once: bufferevents are kept with EV_WRITE
 * disabled while their output is empty, so what was queued leaves with no
 * write event and no extra loop turn (TLS: one SSL_write per 16 KiB, so a
 * head and a small body share one record), and only what the socket refuses
 * goes to libevent (EV_WRITE on: its write timeout and error event apply);
 * the owner's write callback disables EV_WRITE again once the output is
 * empty. A no-op while EV_WRITE is enabled (pending data, a TLS handshake).
 * TLS connections taken over (see io.c) never use the bufferevent's writes:
 * their own write event is armed while the socket refuses, and nothing may
 * enable EV_WRITE on them. */
void ct_io_flush(struct ct_io *io);
/* Over the high mark: write what the socket takes now. True if that brought
 * the output under CT_BP_LOW (go on); false if the rest is queued with
 * libevent, whose write callback (at the low mark) resumes the source.
 * Pausing without this flush could wait for a write callback that never
 * comes: a direct write may empty the output at once. */
bool ct_io_flush_under_low(struct ct_io *io);
/* Closing: flush, and hand any rest (and the write callback once it is all
 * out) to the write event. */
void ct_io_flush_linger(struct ct_io *io);
/* Direct writes, past the evbuffer. A plain-TCP connection with nothing
 * queued and EV_WRITE off may be written to at once: ct_io_can_write_now()
 * says so. ct_io_writev() then makes one writev(2) of IOV[0..N) and queues
 * on the output, in order, what the socket did not take (EAGAIN and errors
 * alike: all of it): piece I's rest through QUEUE(ARG, I, P, LEN) when QUEUE
 * is given (e.g. by reference), else copied; then libevent takes over
 * (EV_WRITE on, as after ct_io_flush). No allocation and no buffer callback
 * when the socket takes it all. */
struct iovec;
typedef void ct_io_queue_cb(void *arg, int i, const char *p, size_t len);
bool ct_io_can_write_now(const struct ct_io *io);
void ct_io_writev(struct ct_io *io, const struct iovec *iov, int n, ct_io_queue_cb *queue,
                  void *arg);
/* The socket (for sendfile(2)). */
int ct_io_fd(const struct ct_io *io);
/* Bytes the kernel holds that it has not sent yet (SIOCOUTQNSD; 0 on error). */
int ct_io_unsent(const struct ct_io *io);
/* Read/write timeouts of BEV in ms (0: none), before ct_io_attach(). */
void ct_io_bev_timeouts(struct bufferevent *bev, uint64_t read_ms, uint64_t write_ms);

/* ---- the proxy (main thread) --------------------------------------------- */

/* One backend of one configuration generation, shared by every thread and
 * kept until exit (a reload that changes the backend set makes new ones and
 * retires the old array: in-flight upstreams still point at them). */
struct ct_backend_addr {
    struct sockaddr_storage sa;
    socklen_t salen;
    char name[80]; /* "host:port" for logs */
    _Atomic bool down; /* active health checks (health.c writes, workers read) */
    /* per-backend counters (enum ct_stats_be), every worker adds (fetch_add);
     * PREV: the same-named backend of the previous set, whose counts continue
     * these (/metrics sums the chain), NULL for a new name */
    _Atomic uint64_t counts[CT_STATS_BE__COUNT];
    const struct ct_backend_addr *prev;
};

struct ct_listener_conf {
    enum { CT_LISTEN_HTTP, CT_LISTEN_HTTPS } kind;
    struct sockaddr_storage sa; /* port filled in after the first bind */
    socklen_t salen;
    char name[80];                /* "127.0.0.1:8080" as announced */
    struct ct_tls_ctx *tls;       /* HTTPS: owned (proxy/tls.h); NULL for HTTP */
    uint64_t handshake_timeout_ms;
    bool honour_client_cc;        /* the listener's honour_client_cache_control */
    struct ct_str subject_header; /* mTLS: header carrying the verified subject */
};

struct ct_worker;

struct ct_proxy {
    unsigned magic;
#define CT_PROXY_MAGIC 0x9a0c7e11u
    const struct ct_conf *cf;
    struct event_base *main_base; /* signals */
    struct ct_tls_shared *tickets; /* shared ticket keys; NULL without HTTPS */
    struct ct_backend_addr *backends; /* parallel to cf->backends */
    size_t nbackends;
    struct ct_listener_conf *listeners;
    size_t nlisteners;
    struct ct_worker **workers;
    unsigned nworkers;
    struct ct_ops *ops; /* proxy/admin.h: admin, access log, health, signals */
    const struct ct_cli *cli; /* the command line, for SIGHUP reloads */
    struct ct_cache *cache; /* the shared store (proxy/cache_int.h); NULL: no cache */
};

/* ---- workers (worker.c) -------------------------------------------------- */

/* Per-worker passive health and pool of one backend. Heap object referenced
 * by w->be[] and by each of its upstreams (NCONNS); a reload that removes or
 * moves the backend RETIREs it (idle pool closed, no new connection) and the
 * last upstream to close frees it (upstream.c). */
struct ct_upstream;
struct ct_backend_rt {
    struct ct_backend_addr *addr;
    const struct ct_conf_backend *bc;
    unsigned fails;          /* consecutive failures */
    int64_t cw;              /* current weight (smooth weighted round robin) */
    ct_time_t down_until;    /* mono; skipped until then */
    struct ct_upstream *idle; /* pool: idle keep-alive connections */
    unsigned nidle;
    unsigned nconns; /* upstreams pointing here (idle or lent) */
    bool retired;    /* not in w->be any more: freed with its last upstream */
};

struct ct_client;
struct ct_worker;

/* One listening socket of one worker (SO_REUSEPORT: each worker has its own). */
struct ct_wlistener {
    unsigned magic;
#define CT_WLISTENER_MAGIC 0x1157e4e5u
    struct ct_worker *w;
    const struct ct_listener_conf *lc;
    struct evconnlistener *lev;
};

struct ct_worker {
    unsigned magic;
#define CT_WORKER_MAGIC 0x3e2c0a17u
    unsigned id;
    struct ct_proxy *px;
    const struct ct_conf *cf; /* snapshot this worker runs on */
    struct event_base *base;
    pthread_t thread;
    bool started;
    struct ct_wlistener *ls; /* one per px->listeners[i]; NULL once draining */
    size_t nls;
    bool accept_paused;
    bool draining;
    int wake_fd[2]; /* main -> worker: 'd' drain */
    struct event *wake_ev;
    struct event *drain_timer;
    struct event *accept_retry; /* accept stopped after EMFILE & co. */
    bool accept_backoff;        /* ... until it fires */
    struct ct_backend_rt **be; /* NBE entries: this worker's backend set */
    size_t nbe;
    struct ct_client *clients; /* every open client (for drain and exit) */
    unsigned nclients;
    struct ct_upstream *busy; /* upstreams lent to a client */
    uint64_t next_conn_id;
    unsigned read_depth;      /* nested pipelined parses (client.c) */
    struct ct_http_limits limits;
    struct ct_wcache *wc;     /* its side of the cache (cache_req.c); NULL: no cache */
    struct ct_stats *stats;         /* proxy/stats.h: written by this thread only */
    struct ct_accesslog_buf *alog;  /* NULL: access log off (owned by the log) */
};

/* Create worker ID with its base and listeners (listener i binds
 * px->listeners[i].sa, which must carry a concrete port for ID > 0).
 * Returns NULL on a bind failure (logged). Main thread, before start. */
struct ct_worker *ct_worker_new(struct ct_proxy *px, unsigned id);
int ct_worker_start(struct ct_worker *w);
/* Ask the worker to drain and exit (any thread: writes to its pipe). */
void ct_worker_stop(struct ct_worker *w);
/* The worker's loop ended: close its clients, background refreshes and
 * upstreams (its thread, or the thread that ran its loop). */
void ct_worker_cut(struct ct_worker *w);
/* Wait for the worker's thread to end (idempotent). */
void ct_worker_join(struct ct_worker *w);
void ct_worker_join_free(struct ct_worker **wp);
/* Reload (proxy/reload.c), on W's thread: open listeners ADD (SO_REUSEPORT,
 * their sa carries a concrete port) before closing those in DEL (after
 * accepting what is queued on them). CT_EIO if some ADD could not be bound
 * (logged; the others are open). */
int ct_worker_listeners_update(struct ct_worker *w, const struct ct_listener_conf *const *add,
                               size_t nadd, const struct ct_listener_conf *const *del,
                               size_t ndel);
/* A client closed: re-enable accepting if we were at the limit; finish a drain. */
void ct_worker_conn_closed(struct ct_worker *w);

/* ---- clients (client.c, fetch.c) ----------------------------------------- */

/* The client connection FSM (docs/client_fsm.dot). One state, one enum;
 * transitions only through client_set_state(), which checks them. */
#define CT_CLIENT_STATES(X)                                                    \
    X(TLS_HANDSHAKE, "tls-handshake") /* HTTPS only, before the first byte */  \
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
    bool logged;                /* counted and logged (ct_ops_req_end) */
};

struct ct_client {
    unsigned magic;
#define CT_CLIENT_MAGIC 0xc11e0a7bu
    enum ct_client_state state;
    struct ct_worker *w;
    const struct ct_listener_conf *lc;
    struct bufferevent *bev;    /* owned; BEV_OPT_CLOSE_ON_FREE */
    struct ct_io io;            /* its read side */
    struct ct_http_parser *rp;  /* request parser, reused for every request */
    struct event *timer;        /* head / keep-alive / linger deadline */
    uint64_t deadline_ms;       /* that deadline (monotonic ms; 0: none), kept lazily */
    uint64_t timer_at_ms;       /* when the timer fires (0: not armed) */
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

/* proxy/h1_resp.c: HTTP/1's side of proxy/proto.h. */
extern const struct ct_proto ct_h1_proto;

/* Take over accepted FD from listener LC (owns the fd from now on). */
void ct_client_accept(struct ct_worker *w, const struct ct_listener_conf *lc, int fd,
                      const struct sockaddr *sa, socklen_t salen);
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

/* ---- upstreams (upstream.c) ---------------------------------------------- */

/* What a borrowed upstream tells its owner (OWNER is the pointer it was lent
 * with), on the worker's thread. */
struct ct_upstream_owner {
    void (*ready)(void *owner);     /* connected: send the request */
    void (*readable)(void *owner);  /* response bytes in its input */
    void (*drained)(void *owner);   /* its output went down to the low mark */
    /* The connection failed or closed (WHY: ORIGIN_CONNECT, ORIGIN_TIMEOUT
     * or ORIGIN_RESET). The upstream is dead; the owner releases it. */
    void (*closed)(void *owner, enum ct_close why);
};

/* Pick a backend (round robin, passive health) and lend OWNER a connection:
 * a pooled one unless FRESH, else a new one. Returns CT_OK with *UP set
 * (ready now if ct_upstream_is_connected(), else OC->ready follows), or
 * CT_EIO with *WHY set and nothing lent. */
int ct_upstream_acquire(struct ct_worker *w, const struct ct_upstream_owner *oc, void *owner,
                        bool fresh, struct ct_upstream **up, enum ct_close *why);
/* The owner is done with *UP (NULLed). Back to the pool if REUSABLE, else closed. */
void ct_upstream_release(struct ct_upstream **up, bool reusable);
bool ct_upstream_is_connected(const struct ct_upstream *u);
bool ct_upstream_is_reused(const struct ct_upstream *u);
struct bufferevent *ct_upstream_bev(struct ct_upstream *u);
struct ct_io *ct_upstream_io(struct ct_upstream *u);
struct ct_http_parser *ct_upstream_parser(struct ct_upstream *u);
const struct ct_backend_addr *ct_upstream_backend(const struct ct_upstream *u);
/* Phases set the timeouts: request fully sent -> response head clock;
 * head received -> idle-between-reads clock; tunnel. */
void ct_upstream_request_sent(struct ct_upstream *u);
/* STATUS: the final response's (a 5xx may count for passive health). */
void ct_upstream_head_received(struct ct_upstream *u, unsigned status);
void ct_upstream_tunnel(struct ct_upstream *u);
/* Lend the upstream on to another owner (the protocol's tunnel after a 101). */
void ct_upstream_set_owner(struct ct_upstream *u, const struct ct_upstream_owner *oc, void *owner);
/* Passive health: a failure of KIND, counted towards max_fails if the
 * backend's passive_fail_on lists it. Never takes out the last backend in
 * rotation. */
void ct_upstream_mark_failed(struct ct_upstream *u, enum ct_conf_fail kind);
/* Per-backend counter WHAT += 1 for U's backend (any worker). */
void ct_upstream_count(struct ct_upstream *u, enum ct_stats_be what);
/* W's backends at start, or after a reload (on W's thread): backend i is
 * ADDRS[i] configured by BCS[i]. A backend of the old set with the same name
 * and address keeps its runtime state (passive health, weights, pool); the
 * others are retired (see struct ct_backend_rt). */
void ct_upstream_backends_set(struct ct_worker *w, struct ct_backend_addr *addrs,
                              const struct ct_conf_backend *bcs, size_t n);
/* Draining: close the idle pooled connections. */
void ct_upstream_pool_close_idle(struct ct_worker *w);
/* Worker exit: close every pooled and lent connection, free the backends. */
void ct_upstream_pool_free(struct ct_worker *w);

/* ---- forwarding (forward.c) ---------------------------------------------- */

struct ct_fwd_req {
    const struct ct_http_msg *msg;
    struct ct_str peer_ip;   /* appended to X-Forwarded-For */
    bool https;              /* X-Forwarded-Proto */
    bool chunked_body;       /* we send Transfer-Encoding: chunked */
    struct ct_str default_host; /* Host for HTTP/1.0 requests without one */
    /* A field we set and never take from the client (mTLS subject); a
     * client-sent copy is dropped. EXTRA_VALUE empty: only the drop. */
    struct ct_str extra_name, extra_value;
};

/* Send the request head for the origin on IO (an upstream's): written at
 * once when nothing is queued (ct_io_writev), else queued on its output. */
void ct_fwd_request_head(struct ct_io *io, const struct ct_fwd_req *fr);

enum ct_resp_conn {
    CT_RESP_KEEP,          /* HTTP/1.1 client: nothing to say */
    CT_RESP_KEEP_ALIVE_10, /* HTTP/1.0 client: Connection: keep-alive */
    CT_RESP_CLOSE,         /* Connection: close */
    CT_RESP_UPGRADE,       /* 101: Connection: upgrade + the Upgrade field */
    CT_RESP_INTERIM,       /* 1xx: no Connection field */
};
/* What the cache adds to a forwarded response head: its Cache-Status value
 * (appended after any upstream one, RFC 9211 §2) and fields it keeps from the
 * client besides the hop-by-hop ones (targeted cache control, RFC 9213). */
struct ct_fwd_resp_extra {
    struct ct_str cache_status;
    bool (*omit)(const struct ct_http_field *f, const void *arg);
    const void *omit_arg;
};
/* Write the response head for the client into OUT. CHUNKED: we frame the
 * body with chunked coding. CONN: what our Connection header says. EXTRA:
 * NULL, or the cache's additions. */
void ct_fwd_response_head(struct evbuffer *out, const struct ct_http_msg *msg, bool chunked,
                          enum ct_resp_conn conn, const struct ct_fwd_resp_extra *extra);
/* The same head rendered into BUF (CAP bytes) for a direct write; returns
 * its length. Returns 0 if it did not fit: then it was written into OUT
 * instead, as by ct_fwd_response_head (either way it exists once). */
size_t ct_fwd_response_head_buf(struct evbuffer *out, char *buf, size_t cap,
                                const struct ct_http_msg *msg, bool chunked, enum ct_resp_conn conn,
                                const struct ct_fwd_resp_extra *extra);
/* Move N body bytes from SRC to OUT, as one chunk if CHUNKED. */
void ct_fwd_body(struct evbuffer *out, struct evbuffer *src, size_t n, bool chunked);
/* The last chunk, no trailers. */
void ct_fwd_body_end(struct evbuffer *out);
/* A short plain-text error response; CLOSE adds Connection: close. */
void ct_fwd_error(struct evbuffer *out, unsigned status, bool head_only, bool close);

/* Feed one event's worth of SRC to parser P: peek the first contiguous
 * segment, feed it, drain what the parser consumed. With CT_HTTP_EV_BODY the
 * body bytes are moved (not copied) to DST, framed as a chunk if CHUNKED, or
 * dropped if DST is NULL; *BODY_LEN says how many. An empty SRC is fed as a
 * zero-length segment, so a bodiless message still reports its END. */
enum ct_http_ev ct_fwd_pump(struct ct_http_parser *p, struct evbuffer *src, struct evbuffer *dst,
                            bool chunked, size_t *body_len);

#endif /* CT_PROXY_INT_H */
