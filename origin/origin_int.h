/*
 * origin/origin_int.h: what the files of cachet-origin share. Never included
 * from outside origin/.
 *
 * Objects and owners:
 * - struct ct_origin: the process. Options, the --root directory fd, the
 *   access log fd, the X-Origin-Seq counter (atomic) and the workers. Read-only
 *   once the workers run, except the counter.
 * - struct ct_oworker: one thread, its event_base, its SO_REUSEPORT listener,
 *   its connections and its stats table (the only part other threads touch,
 *   under the table's mutex). Date strings are cached here once per second.
 * - struct ct_oconn: one client connection, confined to its worker. It owns
 *   its socket, read/write events, input/output evbuffers, request parser, a
 *   timer and scratch buffers reused by every request on it, so a request
 *   allocates nothing once the buffers have grown.
 *
 * The pure parts (query, path, route, range, conditionals, stats table, JSON)
 * take plain views and are unit-tested through this header.
 */
#ifndef CT_ORIGIN_INT_H
#define CT_ORIGIN_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/buf.h"
#include "common/common.h"
#include "common/list.h"
#include "http/http.h"

struct event;
struct event_base;
struct evconnlistener;
struct evbuffer;
struct evbuffer_file_segment;

/* ---- the deterministic byte pattern (origin_buf.c) -------------------- */

/* Byte I of every generated body is CT_OPATTERN_LINE[I % 63]: the test side
 * reproduces it with `yes 0123...XYZ | head -c N`. The period does not divide
 * any power of two, so a lost or repeated piece shows in a checksum. */
#define CT_OPATTERN_LINE "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n"
#define CT_OPATTERN_PERIOD 63u
#define CT_OPATTERN_SPAN (1u << 20) /* longest slice handed out at once */

/* The pattern, CT_OPATTERN_SPAN + CT_OPATTERN_PERIOD bytes: a slice of up to
 * CT_OPATTERN_SPAN bytes starting at any offset OFF is at p + OFF % 63.
 * Built once before the workers start (ct_opattern_init), read-only after. */
void ct_opattern_init(void);
const char *ct_opattern_at(uint64_t off);

/* ---- query parameters (origin_query.c) -------------------------------- */

#define CT_OPARAM_MAX_COOKIES 16
#define CT_OPARAM_MAX_HDRS 16 /* hdr=Name%3A%20Value knobs per request */
#define CT_OPARAM_MAX_DELAY_MS 600000u
#define CT_OPARAM_MAX_SIZE (UINT64_C(1) << 40)

/* What the query of a request asks for. Views point into the caller's
 * scratch buffer (decoded values) and stay valid as long as it does. */
struct ct_oparams {
    unsigned status; /* 0: the endpoint's own */
    struct ct_str cache_control, expires, etag, last_modified, vary;
    struct ct_str type; /* type=: the Content-Type instead of the endpoint's */
    struct ct_str set_cookie[CT_OPARAM_MAX_COOKIES];
    unsigned n_cookies;
    struct ct_str hdr_name[CT_OPARAM_MAX_HDRS], hdr_value[CT_OPARAM_MAX_HDRS];
    unsigned n_hdrs;      /* hdr=: any other field, sent as given, in order */
    bool has_size;
    uint64_t size;
    bool chunked;
    bool has_delay;
    unsigned delay_ms;
    bool close_mid;
    unsigned trickle_ms; /* 0: no trickle */
    uint64_t trickle_size;
};

/* Decode %XX (and '+' as space when PLUS_SPACE) from IN into OUT, which
 * holds at least IN.len bytes. Returns the decoded length, or -1 on a bad
 * escape. */
long ct_ourl_decode(struct ct_str in, char *out, bool plus_space);

/* Parse QUERY (without '?'). hdr=Name:Value (repeatable) adds a response
 * field: Name a token, Value without CR, LF or NUL, never a field the origin
 * writes itself (framing, Connection, Date, Server...). Values are URL-decoded into SCRATCH, which must
 * hold ct_oparams_scratch_len(QUERY.len) bytes. expires=+N / -N and
 * last-modified=+N / -N mean NOW plus or minus N seconds, and @T means the
 * Unix time T; they are formatted as HTTP dates. Unknown keys are ignored
 * (cache busters). Returns CT_OK, or CT_EPROTO with a one-line reason in ERR. */
int ct_oparams_parse(struct ct_str query, char *scratch, time_t now, struct ct_oparams *prm,
                     char *err, size_t errlen);
size_t ct_oparams_scratch_len(size_t query_len);

/* ---- targets, routes and paths (origin_route.c) ----------------------- */

/* CT_OROUTE(ID, "path", is_prefix) */
#define CT_OROUTE_TABLE(X)                                                     \
    X(JSON, "/json", false)                                                    \
    X(PLAINTEXT, "/plaintext", false)                                          \
    X(GEN, "/gen", false)                                                      \
    X(ECHO, "/echo", false)                                                    \
    X(BYTES, "/bytes/", true)                                                  \
    X(DELAY, "/delay/", true)                                                  \
    X(BAD, "/bad/", true)                                                      \
    X(STATS, "/_origin/stats", false)                                          \
    X(STATS_RESET, "/_origin/stats/reset", false)

enum ct_oroute {
    CT_OROUTE_STATIC = 0, /* anything else: the docroot */
#define CT_OROUTE_ENUM(id, path, prefix) CT_OROUTE_##id,
    CT_OROUTE_TABLE(CT_OROUTE_ENUM)
#undef CT_OROUTE_ENUM
};

/* Split a request target into path and query. Origin-form ("/p?q") and
 * absolute-form ("http://host/p?q") are accepted; anything else returns
 * CT_EPROTO. */
int ct_otarget_split(struct ct_str target, struct ct_str *path, struct ct_str *query);
/* The route for PATH; for a prefix route *REST gets what follows the prefix. */
enum ct_oroute ct_oroute_match(struct ct_str path, struct ct_str *rest);
/* Is PATH under /_origin/ (not counted in stats)? */
bool ct_oroute_is_internal(struct ct_str path);

/* Turn a request PATH into a relative file path under the root: decode %XX,
 * collapse "//" and "/./", drop the leading '/'. Returns CT_OK (OUT is
 * NUL-terminated; "" is the root itself), CT_EPROTO for traversal attempts
 * ("..", raw or encoded, an encoded '/' or '\\'), CT_EAGAIN for NUL or a bad
 * escape (a 400), CT_ELIMIT if OUT (OUTLEN bytes) is too small. */
int ct_opath_normalize(struct ct_str path, char *out, size_t outlen);
/* Content-Type for the extension of NAME (application/octet-stream if unknown). */
const char *ct_omime_type(struct ct_str name);

/* ---- conditionals and ranges (origin_cond.c) -------------------------- */

struct ct_ovalidators {
    struct ct_str etag; /* quoted entity-tag, possibly W/; empty if none */
    bool has_mtime;
    time_t mtime; /* Last-Modified */
};

enum ct_ocond {
    CT_OCOND_PASS,         /* serve normally */
    CT_OCOND_NOT_MODIFIED, /* 304 */
    CT_OCOND_FAILED,       /* 412 */
};

/* RFC 9110 §13.2.2: If-Match, If-Unmodified-Since, If-None-Match, then
 * If-Modified-Since (GET/HEAD only, ignored when If-None-Match is present). */
enum ct_ocond ct_ocond_eval(const struct ct_http_msg *msg, const struct ct_ovalidators *v);

/* Do entity-tags A and B match by weak (RFC 9110 §8.8.3.2) or strong comparison? */
bool ct_oetag_match(struct ct_str a, struct ct_str b, bool strong);

enum ct_orange {
    CT_ORANGE_NONE,  /* no usable Range: serve 200 in full */
    CT_ORANGE_ONE,   /* one satisfiable range: 206 */
    CT_ORANGE_MULTI, /* several ranges: we answer 200 in full (no multipart) */
    CT_ORANGE_UNSAT, /* none satisfiable: 416 */
};

/* Parse a Range VALUE against a representation of LEN bytes (RFC 9110
 * §14.1.2). On ONE, [*FIRST, *LAST] is the inclusive byte range. A syntax
 * error or another unit gives NONE (the field is ignored, §14.2). */
enum ct_orange ct_orange_parse(struct ct_str value, uint64_t len, uint64_t *first,
                               uint64_t *last);
/* Does If-Range (if any) in MSG allow the range (RFC 9110 §13.1.5)? */
bool ct_oif_range_ok(const struct ct_http_msg *msg, const struct ct_ovalidators *v);

/* ---- the stats table (origin_stats.c) --------------------------------- */

/* Per-worker request counters by path. Counting takes the table's mutex
 * (uncontended: only its worker counts); reading and resetting may come
 * from any worker. */
struct ct_ostats;
struct ct_ostats *ct_ostats_new(void);
void ct_ostats_free(struct ct_ostats **sp);
void ct_ostats_count(struct ct_ostats *s, struct ct_str path);
void ct_ostats_reset(struct ct_ostats *s);
/* {"total": N, "paths": {"/p": N, ...}} summed over the N tables, paths
 * sorted, into OUT. */
void ct_ostats_json(struct ct_ostats *const *tables, size_t n, struct ct_buf *out);

/* ---- the process, workers, connections -------------------------------- */

struct ct_origin_opts {
    const char *bind;
    unsigned port;
    const char *root;
    unsigned workers;
    unsigned delay_ms;
    unsigned idle_s; /* close connections idle this long */
    const char *access_log;
};

struct ct_oworker;

struct ct_origin {
    struct ct_origin_opts opts;
    int root_fd;          /* -1 without --root */
    char *root_real;      /* realpath of --root, for the fallback check */
    int access_fd;        /* -1: no access log */
    atomic_bool no_openat2; /* use the realpath() fallback (origin_static.c) */
    time_t start;         /* Last-Modified of the built-in files */
    atomic_uint_fast64_t seq;
    struct ct_oworker **workers;
    unsigned n_workers;
};

#define CT_OWORKER_MAGIC 0x6f776b72u
#define CT_ORBUF_SIZE (64u * 1024)

struct ct_oconn;

struct ct_oworker {
    unsigned magic;
    unsigned id;
    struct ct_origin *o;
    struct event_base *base;
    struct evconnlistener *lev;
    int listen_fd;
    int stop_pipe[2];
    struct event *stop_ev;
    pthread_t thread;
    struct ct_ostats *stats;
    CT_LIST_HEAD(ct_oconn) conns; /* every open connection, for shutdown */
    struct event *sweep_ev; /* idle connections, every few seconds */
    uint64_t conn_ids;
    struct ct_http_date_cache date; /* Date of this second */
    time_t clf_sec;    /* the second clf_date was made for */
    char clf_date[32]; /* access log: [30/Nov/2026:03:22:33 +0000] */
    char rbuf[CT_ORBUF_SIZE]; /* every read lands here and is parsed in place */
};

/* Worker W's Date string for now (refreshed once per second). */
const char *ct_oworker_date(struct ct_oworker *w);

/* origin_worker.c. Open the listening sockets (one per worker, SO_REUSEPORT;
 * with port 0 the first picks the port and the others join it) and write
 * "ADDR:PORT" into ANNOUNCE. Returns CT_OK or CT_EIO with ERR filled. */
int ct_origin_listen(struct ct_origin *o, char *announce, size_t alen, char *err, size_t errlen);
/* Start the workers, wait for SIGTERM or SIGINT (blocked in every thread;
 * the caller blocks them first), stop and join the workers. */
int ct_origin_run(struct ct_origin *o, const sigset_t *stop_signals);
/* Free the workers, their connections and the process state. */
void ct_origin_free(struct ct_origin *o);

/* origin_conn.c */
struct sockaddr;
void ct_oconn_accept(struct ct_oworker *w, int fd, const struct sockaddr *sa);
void ct_oconn_free_all(struct ct_oworker *w);
/* Free connections idle (or not reading their answer) for too long. */
void ct_oconn_sweep(struct ct_oworker *w, int64_t now_ms);

/* ---- one response (origin_resp.c) -------------------------------------- */

enum ct_obody {
    CT_OBODY_NONE,
    CT_OBODY_MEM,     /* static memory, sent by reference */
    CT_OBODY_PATTERN, /* the pattern from offset pat_off, streamed */
    CT_OBODY_FILE,    /* fd from file_off, sent with sendfile */
    CT_OBODY_COPY,    /* the connection's body buffer, copied out */
};

/* What a handler answers; the connection adds the query-controlled headers,
 * conditionals, ranges, delay and framing. */
struct ct_oresp {
    unsigned status;
    const char *ctype;
    const char *allow;       /* for 405 */
    struct ct_ovalidators val;
    struct ct_str lm_text;   /* Last-Modified as sent (from val.mtime or the query) */
    bool controls;           /* apply the query-controlled headers */
    bool rangeable;
    bool raw;                /* /bad: body is the whole reply; close after it */
    enum ct_obody kind;
    const char *mem;
    uint64_t pat_off;
    int fd; /* owned until the body is sent; -1 otherwise */
    uint64_t off;
    uint64_t len;      /* bytes this response carries */
    uint64_t full_len; /* representation length, for Content-Range */
    uint64_t range_first;
    bool close;        /* close the connection after it */
    char etag_buf[64];
    char lm_buf[CT_HTTP_DATE_LEN + 1];
};

#define CT_OCONN_MAGIC 0x6f636f6eu

/* Connection states (docs/origin_conn.dot). */
#define CT_OCONN_STATES(X)                                                     \
    X(READ, "reading requests")                                                \
    X(DELAY, "waiting out a delay")                                            \
    X(STREAM, "streaming a body")                                              \
    X(DRAIN, "waiting for output to drain")                                    \
    X(CLOSING, "sending the last response")                                    \
    X(LINGER, "lingering close")

enum ct_oconn_state {
#define CT_OCS_ENUM(id, text) CT_OCS_##id,
    CT_OCONN_STATES(CT_OCS_ENUM)
#undef CT_OCS_ENUM
};

struct ct_obody_state {
    enum ct_obody kind;
    const char *mem;
    uint64_t pos;       /* offset of the next byte in the source */
    uint64_t remaining; /* bytes still to queue */
    struct evbuffer_file_segment *seg;
    bool chunked;     /* Transfer-Encoding: chunked in the head */
    bool send_body;   /* not HEAD, not 204/304 */
    bool close_after; /* close=mid: no terminator, close when queued */
    bool close;       /* close the connection once queued */
    uint64_t piece;   /* max bytes per step */
    unsigned trickle_ms;
    bool timer_wait;  /* STREAM: waiting for the trickle timer, not the output */
};

struct ct_oconn {
    unsigned magic;
    enum ct_oconn_state state;
    struct ct_oworker *w;
    CT_LIST_LINK(ct_oconn) link; /* on w->conns */
    uint64_t id;
    uint64_t nreq;
    int fd;
    struct event *rev, *wev;
    struct evbuffer *in;  /* bytes received while not in READ */
    struct evbuffer *out; /* queued response bytes */
    bool reading, writing; /* rev / wev added */
    int64_t last_io;       /* ms: last byte read or written, for the sweep */
    struct ct_http_parser *parser;
    struct event *timer; /* delay, trickle, linger */
    char peer[64];
    bool peer_eof;
    bool rst; /* /bad/reset: end with an RST (SO_LINGER 0), not a FIN */
    bool parser_pending; /* the parser may have events without more input */
    bool keep_alive; /* of the current request */
    /* the current request; views into the parser or scratch */
    const struct ct_http_msg *msg;
    struct ct_str path, query, rest;
    enum ct_oroute route;
    struct ct_oparams prm;
    char *scratch;
    size_t scratch_cap;
    struct ct_buf reqbody; /* /echo */
    bool reqbody_over;
    /* the response */
    struct ct_oresp resp;
    struct ct_buf head;
    struct ct_buf body;
    struct ct_obody_state bs;
    uint64_t seq;
    bool head_only; /* HEAD request */
    unsigned version;
};

/* Handlers fill c->resp (origin_static.c, origin_gen.c, origin_echo.c). An
 * error is answered by ct_oresp_error (status + one-line reason). */
void ct_ohandle_static(struct ct_oconn *c);
void ct_ohandle_json(struct ct_oconn *c);
void ct_ohandle_plaintext(struct ct_oconn *c);
void ct_ohandle_gen(struct ct_oconn *c);
void ct_ohandle_bytes(struct ct_oconn *c);
void ct_ohandle_delay(struct ct_oconn *c);
void ct_ohandle_bad(struct ct_oconn *c);
void ct_ohandle_echo(struct ct_oconn *c);
void ct_ohandle_stats(struct ct_oconn *c);
void ct_ohandle_stats_reset(struct ct_oconn *c);

void ct_oresp_init(struct ct_oresp *r);
/* A plain-text error: STATUS with REASON and "\n" as the body. */
void ct_oresp_error(struct ct_oconn *c, unsigned status, const char *reason);
/* Body from the connection's body buffer (c->body), as TYPE. */
void ct_oresp_copy_body(struct ct_oconn *c, unsigned status, const char *type);

/* Built-in docroot (origin_static.c). */
void ct_obuiltin_init(time_t start);

/* origin_resp.c. None of these frees C: a connection is only freed from
 * its own event callbacks (origin_conn.c), so callers never check. */
/* Apply the query's controls, conditionals and Range to c->resp. */
void ct_oresp_prepare(struct ct_oconn *c);
/* Write the head and start the body; sets the next state. */
void ct_oresp_send(struct ct_oconn *c);
/* Queue more body (output drained, or the trickle timer fired). */
void ct_oresp_pump(struct ct_oconn *c);
/* Release what the response holds (file, segment). Idempotent. */
void ct_oresp_cleanup(struct ct_oconn *c);

/* origin_req.c: parse P[0..LEN) while in READ; returns bytes consumed. */
size_t ct_oreq_feed(struct ct_oconn *c, const char *p, size_t len);

/* origin_conn.c, used by origin_resp.c */
void ct_oconn_set_state(struct ct_oconn *c, enum ct_oconn_state s);
/* The response is fully queued: next request, wait for drain, or close. */
void ct_oconn_response_done(struct ct_oconn *c, bool close);
void ct_oconn_arm_timer(struct ct_oconn *c, unsigned ms);

#define CT_OUT_HIGH (512u * 1024) /* stop queueing body above this */
#define CT_OUT_LOW (128u * 1024)  /* write callback below this */
#define CT_ECHO_MAX_BODY (4u << 20)

#endif /* CT_ORIGIN_INT_H */
