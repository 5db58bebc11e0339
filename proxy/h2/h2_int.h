/*
 * proxy/h2/h2_int.h: shared inside proxy/h2/ only: the connection and
 * stream structs, and the calls between h2_conn.c (session, settings,
 * limits, bytes in and out) and h2_stream.c (one request and its response).
 */
#ifndef CT_H2_INT_H
#define CT_H2_INT_H

#include <nghttp2/nghttp2.h>

#include "http/http_h2msg.h"
#include "proxy/h2/h2.h"

#define CT_H2_CONN_MAGIC 0x68324331u   /* "h2C1" */
#define CT_H2_STREAM_MAGIC 0x68325331u /* "h2S1" */
#define CT_H2_PIECE_MAGIC 0x68325031u  /* "h2P1" */

/* A token bucket: BURST tokens at most, RATE more per second. */
struct ct_h2_bucket {
    double tokens;
    ct_time_t last;
    unsigned burst, rate;
};

/* One piece of response body: the owner's memory (REF) or moved bytes
 * (BUF). Refcounted: one reference while queued, one per output chain that
 * points into it; the last one releases the owner's memory. */
struct ct_h2_piece {
    unsigned magic;
    struct ct_h2_piece *next;
    const char *p;        /* REF */
    struct evbuffer *buf; /* BUF */
    size_t len, off;      /* bytes, and how many were framed */
    unsigned refs;
    ct_h2_release_cb *release;
    void *arg;
};

/* A session's allocator (h2_mem.c): blocks of CT_H2_MEM_BIG bytes or more
 * (the stream map's table is 4096) are whole pages from a page pool and
 * remembered, so an idle connection can give their pages back
 * (ct_h2_mem_trim). Embedded in the connection, which outlives its session.
 * A session has two (the frame buffer and the stream map's table) and a
 * third while one grows; past CT_ARRAY_LEN(big) a block is plain malloc. */
#define CT_H2_MEM_BIG 4096
struct ct_h2_mem {
    struct {
        void *p;
        uint32_t pages;
        bool framebuf; /* nghttp2's frame buffer: dead between frames */
        bool pooled;   /* from the page pool (else aligned_alloc: too big for it) */
    } big[4];
    unsigned nbig;
    bool creating; /* until ct_h2_mem_created: the session is being made */
};
/* M empty; NM (handed to nghttp2_session_server_new3) allocates through it. */
void ct_h2_mem_init(struct ct_h2_mem *m, nghttp2_mem *nm);
/* The session is made (its frame buffer is known). */
void ct_h2_mem_created(struct ct_h2_mem *m);
/* Return to the kernel the resident pages of M's big blocks that hold
 * nothing: the frame buffer's (the caller promises no stream and nothing to
 * send) and pages of zeros; bytes given back. */
size_t ct_h2_mem_trim(struct ct_h2_mem *m);
/* The page pool's counts (any thread): blocks handed out, free blocks
 * kept for reuse (their pages given back), bytes of address space mapped. */
struct ct_h2_pool_stats {
    size_t used, free, mapped;
};
void ct_h2_mem_pool_stats(struct ct_h2_pool_stats *out);

/* The request side's states (docs/h2_stream.dot). */
enum ct_h2_rx {
    CT_H2_RX_HEAD,     /* header block being received */
    CT_H2_RX_BODY,     /* head delivered; DATA may come */
    CT_H2_RX_TRAILERS, /* trailer block being received (validated, dropped) */
    CT_H2_RX_DONE,     /* END_STREAM received and checked */
    CT_H2_RX_REFUSED,  /* malformed or refused: reset or answered, never passed up */
    CT_H2_RX_DISCARD,  /* the response is complete first: the rest of the body is dropped */
};

/* The response side's states. */
enum ct_h2_tx {
    CT_H2_TX_NONE,  /* nothing submitted (1xx heads may have gone) */
    CT_H2_TX_BODY,  /* final head submitted, body pieces coming */
    CT_H2_TX_ENDED, /* end submitted (or a head without body) */
};

struct ct_h2_stream {
    unsigned magic;
    int32_t id;
    struct ct_h2_conn *h;
    struct ct_h2_stream *prev, *next; /* the connection's list */
    struct ct_http_h2msg *head;       /* the request; owns the message's bytes */
    void *req;                        /* the owner's handle; NULL until delivered */
    bool delivering;                  /* inside on_request: the owner may answer already */
    enum ct_h2_rx rx;
    enum ct_h2_tx tx;
    bool deferred;     /* the data source returned DEFERRED */
    bool head_request; /* HEAD: no response content (RFC 9110 §9.3.2) */
    bool bodiless;     /* the response can have no content: body calls are dropped */
    bool has_length;
    uint64_t content_length, body_received;
    uint64_t discarded;       /* in RX_DISCARD */
    struct evbuffer *body_in; /* received, not yet taken by the owner */
    struct ct_h2_piece *out_head, *out_tail;
    size_t out_queued; /* bytes in pieces not yet framed */
};

/* How a stream closed, as far as frames after it go (h2_rfc.c). */
enum ct_h2_closed {
    CT_H2_CLOSED_UNKNOWN,    /* not among the last CT_H2_CLOSED_MAX */
    CT_H2_CLOSED_ENDED,      /* the client's END_STREAM had come */
    CT_H2_CLOSED_PEER_RESET, /* the client's RST_STREAM */
    CT_H2_CLOSED_WE_RESET,   /* our RST_STREAM, the client still sending */
};
/* Streams remembered after they close: 16 x 5 bytes per connection. */
#define CT_H2_CLOSED_MAX 16

/* Where the input is in the frame stream (h2_rfc.c): the client preface
 * or a payload to pass (SKIP), or a frame header being held (HD). */
struct ct_h2_scan {
    uint32_t skip;
    uint8_t hd[14]; /* header, and a PRIORITY frame's 5 payload bytes */
    uint8_t have, need;
};

struct ct_h2_conn {
    unsigned magic;
    nghttp2_session *session;
    struct ct_h2_settings set;
    struct ct_h2_cbs cbs;
    void *owner;
    struct ct_h2_counts counts;
    struct ct_h2_stream *streams; /* every stream we hold state for */
    size_t nstreams;
    enum ct_h2_why why;
    bool dead; /* nghttp2 failed fatally: only the hand GOAWAY is left */
    bool drained;
    uint8_t fin[26]; /* a hand-written [SETTINGS +] GOAWAY after a fatal error */
    size_t fin_len;
    unsigned continuations; /* CONTINUATION frames of the current header block */
    ct_time_t now;
    struct ct_h2_bucket resets, empties;
    struct evbuffer *out; /* during ct_h2_conn_send() */
    size_t out_max;
    struct ct_h2_mem mem; /* the session's allocator */
    /* RFC 9113 §5.1 after nghttp2 forgot a stream (h2_rfc.c). */
    struct ct_h2_scan scan;
    uint32_t max_sid;      /* the highest request stream id seen */
    uint32_t forgot_below; /* the highest id that fell out of the ring */
    int32_t peer_rst_sid;  /* the client's RST_STREAM being processed */
    unsigned closed_next;  /* the ring's next slot */
    uint32_t closed_id[CT_H2_CLOSED_MAX];
    uint8_t closed_how[CT_H2_CLOSED_MAX]; /* enum ct_h2_closed */
};

/* h2_conn.c */
/* Take one token from B at H->now; false when the bucket is empty. */
bool ct_h2_bucket_take(struct ct_h2_bucket *b, ct_time_t now);
/* The client broke a limit or the protocol badly enough to end it all: record
 * WHY; the caller returns NGHTTP2_ERR_CALLBACK_FAILURE to nghttp2. */
int ct_h2_conn_fail(struct ct_h2_conn *h, enum ct_h2_why why);
struct ct_h2_stream *ct_h2_stream_get(const struct ct_h2_conn *h, int32_t sid);
/* A connection error is under way (not a drain, not the client's GOAWAY). */
bool ct_h2_conn_failing(const struct ct_h2_conn *h);

/* h2_rfc.c: feed LEN received bytes to nghttp2, each DATA, HEADERS and
 * PRIORITY frame header checked first (RFC 9113 §5.1, §5.1.1, §5.3.1,
 * §6.3). Returns 0, or nghttp2's fatal error (the caller ends the session). */
int ct_h2_rfc_recv(struct ct_h2_conn *h, const uint8_t *data, size_t len);
/* Stream SID closed (or was refused unopened) so. */
void ct_h2_closed_note(struct ct_h2_conn *h, int32_t sid, enum ct_h2_closed how);

/* h2_stream.c: the nghttp2 callbacks about streams. */
int ct_h2_on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud);
int ct_h2_on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                    const uint8_t *value, size_t valuelen, uint8_t flags, void *ud);
int ct_h2_on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *data,
                        size_t len, void *ud);
/* HEADERS, DATA and RST_STREAM frames complete, for stream SID. */
int ct_h2_stream_frame_recv(struct ct_h2_conn *h, const nghttp2_frame *f);
/* The response on SID went out whole (END_STREAM sent). */
void ct_h2_stream_response_sent(struct ct_h2_conn *h, int32_t sid);
/* Tell the owner (if it has the stream), free the stream and its pieces. */
void ct_h2_stream_close(struct ct_h2_stream *st, uint32_t code);
int ct_h2_on_stream_close(nghttp2_session *s, int32_t sid, uint32_t code, void *ud);
int ct_h2_send_data(nghttp2_session *s, nghttp2_frame *f, const uint8_t *framehd, size_t length,
                    nghttp2_data_source *src, void *ud);

#endif /* CT_H2_INT_H */
