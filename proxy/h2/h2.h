/*
 * proxy/h2/h2.h: the HTTP/2 protocol engine (RFC 9113, server side), on
 * nghttp2 1.52. Bytes in, bytes out: it knows frames, HPACK, streams, flow
 * control and the limits that hold under attack, and nothing of sockets,
 * TLS, the cache or the request core. Its owner (a connection) feeds it what
 * the transport read, writes what it produces, and turns its callbacks into
 * requests.
 *
 *     transport ──bytes──▶ ct_h2_conn_recv() ──callbacks──▶ owner (requests)
 *     transport ◀──evbuffer── ct_h2_conn_send() ◀──submit── owner (responses)
 *
 * Ownership. The owner owns the struct ct_h2_conn (ct_h2_conn_new/free).
 * The engine owns its streams and, for each, the request head and the
 * unread request body. Response body pieces handed in by reference stay the
 * owner's memory: the engine calls the piece's release callback once no
 * frame and no output buffer points at it any more (that may be after
 * ct_h2_conn_free(), from the evbuffer the bytes were written to).
 *
 * Re-entrancy. Callbacks run inside ct_h2_conn_recv() (and on_close also
 * inside ct_h2_conn_send() and ct_h2_conn_free()). From a callback the owner
 * may call any ct_h2_* function except ct_h2_conn_recv/send/free; from
 * on_request it may already answer or reset the stream it is handed.
 *
 * Threads: one connection, one thread (the worker that owns the socket).
 */
#ifndef CT_H2_H
#define CT_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/h2why.h"

struct evbuffer;
struct ct_http_msg;
struct ct_http_field;
struct ct_h2_conn;

/* ---- settings and limits ----------------------------------------------- */

struct ct_h2_settings {
    uint32_t max_concurrent_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS */
    uint32_t initial_window;         /* SETTINGS_INITIAL_WINDOW_SIZE: the bound on unread
                                        request body per stream */
    uint32_t conn_window;            /* connection receive window (WINDOW_UPDATE on 0) */
    uint32_t max_frame_size;         /* SETTINGS_MAX_FRAME_SIZE we accept */
    uint32_t max_header_list;        /* SETTINGS_MAX_HEADER_LIST_SIZE, enforced: 431 */
    unsigned max_fields;             /* regular fields per request: 431 */
    size_t max_queued_acks;          /* SETTINGS/PING ACKs not yet written: flood */
    /* Streams that end in a reset (RST_STREAM either way, before the response
     * is complete) take a token from a bucket of reset_burst that refills at
     * reset_rate per second; an empty bucket is GOAWAY ENHANCE_YOUR_CALM
     * (CVE-2023-44487 rapid reset, and the server-side resets a client can
     * provoke, CVE-2025-8671). */
    unsigned reset_burst;
    unsigned reset_rate;
    /* DATA frames with no payload and no END_STREAM, and CONTINUATION with
     * no header block: the same kind of bucket (CVE-2019-9518). */
    unsigned empty_burst;
    unsigned empty_rate;
    /* A response complete before its request body: the rest of the body is
     * read and dropped up to this many bytes (so the client finishes its
     * upload and reads the response), then RST_STREAM NO_ERROR. */
    size_t discard_max;
};

/* 100 streams, 64 KiB stream and 1 MiB connection windows, 16 KiB frames,
 * 64 KiB header list, 100 fields, 100 queued ACKs, 200 resets then 50 per
 * second, 100 empty frames then 10 per second, 1 MiB of body dropped after
 * an early response. */
void ct_h2_settings_default(struct ct_h2_settings *s);

const char *ct_h2_why_text(enum ct_h2_why why);
const char *ct_h2_why_name(enum ct_h2_why why); /* "RAPID_RESET" */

/* Per-connection counts, for /metrics (summed by the owner). */
struct ct_h2_counts {
    uint64_t streams;       /* request streams opened by the client */
    uint64_t requests;      /* heads that passed validation and went up */
    uint64_t malformed;     /* heads or bodies refused (RST_STREAM PROTOCOL_ERROR) */
    uint64_t refused_limit; /* heads answered 431/417 by the engine */
    uint64_t resets_recv;   /* RST_STREAM from the client */
    uint64_t resets_sent;   /* RST_STREAM we sent */
    uint64_t bytes_in, bytes_out;
};

/* ---- callbacks to the owner --------------------------------------------- */

struct ct_h2_cbs {
    /* A validated request head on stream SID (RFC 9113 §8.2/8.3; see
     * http/http_h2msg.h for its shape). MSG is valid until on_close for SID.
     * END_STREAM: no body follows. Returns the owner's handle for the stream
     * (any non-NULL pointer), passed back to every later callback; NULL
     * refuses the stream (RST_STREAM REFUSED_STREAM). */
    void *(*on_request)(void *owner, int32_t sid, const struct ct_http_msg *msg, bool end_stream);
    /* More request body is buffered for SID (ct_h2_body_unread() bytes);
     * take it with ct_h2_body_read(). DATA beyond content-length never gets
     * here (the stream is reset instead, RFC 9113 §8.1.1). */
    void (*on_body)(void *owner, void *req, int32_t sid);
    /* The request is complete (END_STREAM; content-length matched; any
     * trailers were validated and dropped). Unread body may remain. */
    void (*on_request_end)(void *owner, void *req, int32_t sid);
    /* SID is closed: the response went out whole (ERROR_CODE 0), or the
     * stream was reset by either side (the HTTP/2 error code). After this the
     * owner must not name SID again; REQ is its to free. */
    void (*on_close)(void *owner, void *req, int32_t sid, uint32_t error_code);
};

/* ---- the connection ----------------------------------------------------- */

/* A server session with S copied (NULL: defaults) and callbacks CBS (copied;
 * on_request and on_close required). Our SETTINGS are queued at once. Never
 * fails (allocation aborts). */
struct ct_h2_conn *ct_h2_conn_new(const struct ct_h2_settings *s, const struct ct_h2_cbs *cbs,
                                  void *owner);
/* Free H and its streams (on_close runs for each open one, code CANCEL) and
 * set *HP = NULL. Output not yet taken by ct_h2_conn_send() is lost. */
void ct_h2_conn_free(struct ct_h2_conn **hp);

/* Feed LEN received bytes at time NOW (monotonic seconds: the limits' clock).
 * Returns CT_OK, or a connection error: CT_EPROTO (the client broke the
 * protocol) or CT_ELIMIT (a flood limit). On error a GOAWAY is queued (why:
 * ct_h2_conn_why()): call ct_h2_conn_send() once more, write it, close.
 * Errors nghttp2 finds itself (HPACK, frame size, stream states) come back
 * from the ct_h2_conn_send() that writes their GOAWAY instead. After an
 * error further input is ignored. */
int ct_h2_conn_recv(struct ct_h2_conn *h, const void *data, size_t len, ct_time_t now);

/* Append the frames that are ready to OUT, until OUT holds at least MAX bytes
 * or nothing is ready. DATA payloads handed in by reference are added to OUT
 * by reference (evbuffer_add_reference): nothing is copied. Returns CT_OK or
 * CT_EPROTO/CT_ELIMIT as ct_h2_conn_recv() (then the GOAWAY is in OUT). */
int ct_h2_conn_send(struct ct_h2_conn *h, struct evbuffer *out, size_t max);

/* Is output ready (ct_h2_conn_send() would add something)? */
bool ct_h2_conn_want_write(const struct ct_h2_conn *h);
/* Is the connection finished: GOAWAY sent or received and no stream left, or
 * a connection error? Then, once OUT is written, the owner closes. */
bool ct_h2_conn_is_done(const struct ct_h2_conn *h);
/* Why it ends (CT_H2_WHY_NONE while open). */
enum ct_h2_why ct_h2_conn_why(const struct ct_h2_conn *h);
/* An idle connection (no stream, nothing to write; otherwise a no-op)
 * gives back the pages it holds only while busy (h2_mem.c): nghttp2's
 * 16 KiB frame buffer's and the empty stream map's, which come back zeroed
 * at the next write. Bytes the kernel got back. The session goes on as
 * before. */
size_t ct_h2_conn_trim(struct ct_h2_conn *h);
/* Free the calling thread's response-head scratch (shared by its sessions),
 * when it is done with HTTP/2, e.g. a worker thread that ends. */
void ct_h2_thread_free(void);
/* Open streams (idle timeout: none open and nothing to write). */
size_t ct_h2_conn_nstreams(const struct ct_h2_conn *h);
const struct ct_h2_counts *ct_h2_conn_counts(const struct ct_h2_conn *h);

/* Graceful drain (reload, shutdown): GOAWAY NO_ERROR with the last stream id
 * processed; streams up to it finish, later ones are refused. Idempotent. */
void ct_h2_conn_drain(struct ct_h2_conn *h);
/* The first step of a graceful shutdown (RFC 9113 §6.8): GOAWAY NO_ERROR
 * with the largest stream id, so the client opens no new stream here while
 * the requests it already sent are still served; ct_h2_conn_drain() about
 * one round trip later refuses only what came after. */
void ct_h2_conn_drain_notice(struct ct_h2_conn *h);

/* ---- responses (calls from the owner) ----------------------------------- */

/* Submit the response head for SID: RESP's status, then its fields with
 * names lower-cased, minus the connection-specific ones of an HTTP/1 message
 * (Connection and every field it names, Keep-Alive, Transfer-Encoding,
 * Upgrade, Proxy-Connection, TE: whatever ct_http_msg_field_is_hop() says),
 * then EXTRA[0..NEXTRA) as given (per-response fields: Age, Cache-Status).
 * BODY false ends the stream with the head; otherwise the body follows
 * through ct_h2_body_ref/move/end. A response to HEAD, a 204 and a 304 end
 * the stream with the head whatever BODY says (RFC 9110 §9.3.2, §15.3.5,
 * §15.4.5), and body calls for them return CT_OK and drop the bytes. A 1xx RESP goes out as an
 * interim head (101 is refused: RFC 9113 §8.6) and a final head follows.
 * Returns CT_OK, CT_ENOENT (SID closed: the client went away) or CT_EPROTO
 * (a second final head, 101, a status outside 100-599). */
int ct_h2_submit_head(struct ct_h2_conn *h, int32_t sid, const struct ct_http_msg *resp,
                      const struct ct_http_field *extra, size_t nextra, bool body);
/* The same for a head that is this response's own (a pass), not a stored
 * one sent on every hit: RESP's fields are not added to the HPACK encoder's
 * table, but those whose values usually repeat (Server, Content-Type,
 * Cache-Control, Vary, Accept-Ranges, Content-Encoding, Via); EXTRA's are. */
int ct_h2_submit_head_once(struct ct_h2_conn *h, int32_t sid, const struct ct_http_msg *resp,
                           const struct ct_http_field *extra, size_t nextra, bool body);

/* The owner's memory, sent without a copy: P[0..LEN) stays valid until
 * RELEASE(ARG) runs (it runs exactly once, also when the stream is reset
 * before the bytes were sent; RELEASE may be NULL for static memory). */
typedef void ct_h2_release_cb(void *arg);
int ct_h2_body_ref(struct ct_h2_conn *h, int32_t sid, const void *p, size_t len,
                   ct_h2_release_cb *release, void *arg);
/* N bytes moved out of SRC (evbuffer chains move; only a chain cut at a
 * frame boundary is copied). */
int ct_h2_body_move(struct ct_h2_conn *h, int32_t sid, struct evbuffer *src, size_t n);
/* No more body: END_STREAM on the last DATA frame (trailers are never sent). */
int ct_h2_body_end(struct ct_h2_conn *h, int32_t sid);
/* Body bytes queued for SID and not yet framed (back-pressure: a stream the
 * client does not read holds at most what the owner queued, and the owner
 * queues only while this is under its mark). 0 for a closed stream. */
size_t ct_h2_body_queued(const struct ct_h2_conn *h, int32_t sid);

/* Reset SID with ERROR_CODE (CANCEL when the origin failed mid-body,
 * INTERNAL_ERROR ...). CT_ENOENT if it is closed already. */
int ct_h2_reset(struct ct_h2_conn *h, int32_t sid, uint32_t error_code);

/* ---- request body (calls from the owner) --------------------------------- */

/* Buffered request body of SID that may be taken now: all of it, but with
 * a content-length the byte that completes it waits for END_STREAM (so a
 * longer body never reaches the owner whole). */
size_t ct_h2_body_unread(const struct ct_h2_conn *h, int32_t sid);
/* Move up to MAX buffered body bytes of SID to DST and open the stream's
 * window by as much (WINDOW_UPDATE): the client sends more only as the owner
 * takes it, and a stream that is not read never holds more than
 * initial_window bytes nor stalls the others. Returns the bytes moved. */
size_t ct_h2_body_read(struct ct_h2_conn *h, int32_t sid, struct evbuffer *dst, size_t max);

#endif /* CT_H2_H */
