/*
 * proxy/upstream/headw.h: the HTTP/1 head writer both directions share
 * (headw.c): request heads for origins (wire.c) and response heads for
 * HTTP/1 clients (proxy/h1/h1_wire.c).
 *
 * A head is written straight into space reserved at the end of the peer's
 * output buffer (evbuffer_reserve_space, committed once): one copy of each
 * piece, one buffer callback per head instead of one per piece. BOUND is a
 * safe upper bound (no field is written more than twice); should a piece
 * still not fit, what was written is committed and the rest is appended
 * with evbuffer_add, in order. Or into a caller's stack buffer, for a
 * direct write.
 */
#ifndef CT_PROXY_HEADW_H
#define CT_PROXY_HEADW_H

#include <stdbool.h>
#include <string.h>
#include <event2/buffer.h>

#include "common/common.h"
#include "http/http.h"
#include "proxy/ctx.h"

struct ct_headw {
    struct evbuffer *out;
    struct evbuffer_iovec v;
    char *p, *end; /* NULL p: reservation committed, append directly */
    bool stack;    /* v is the caller's buffer, not a reservation in OUT */
};

void ct_headw_begin(struct ct_headw *w, struct evbuffer *out, size_t bound);
/* Into the caller's BUF instead (for a direct write); on overflow what it
 * holds is appended to OUT and the rest follows it there, in order. */
void ct_headw_begin_stack(struct ct_headw *w, struct evbuffer *out, char *buf, size_t cap);
void ct_headw_end(struct ct_headw *w);
void ct_headw_put_slow(struct ct_headw *w, const char *s, size_t n);

/* Inline, so that a literal's copy is a few moves, not a call to memcpy. */
static inline void ct_headw_put(struct ct_headw *w, const char *s, size_t n)
{
    if (w->p != NULL && (size_t)(w->end - w->p) >= n) {
        memcpy(w->p, s, n);
        w->p += n;
        return;
    }
    ct_headw_put_slow(w, s, n);
}

#define CT_HEADW_LIT(w, lit) ct_headw_put((w), (lit), sizeof(lit) - 1)

static inline void ct_headw_str(struct ct_headw *w, struct ct_str s)
{
    if (s.len)
        ct_headw_put(w, s.p, s.len);
}

/* "NAME: VALUE\r\n": one room check and two copies for the whole line (it
 * runs for every forwarded field, both ways); the piecewise path only when
 * the reservation is short. */
static inline void ct_headw_field(struct ct_headw *w, struct ct_str name, struct ct_str value)
{
    size_t n = name.len + value.len + 4;
    if (w->p == NULL || (size_t)(w->end - w->p) < n) {
        ct_headw_str(w, name);
        CT_HEADW_LIT(w, ": ");
        ct_headw_str(w, value);
        CT_HEADW_LIT(w, "\r\n");
        return;
    }
    char *p = w->p;
    memcpy(p, name.p, name.len);
    p += name.len;
    *p++ = ':';
    *p++ = ' ';
    if (value.len)
        memcpy(p, value.p, value.len);
    p += value.len;
    *p++ = '\r';
    *p++ = '\n';
    w->p = p;
}

/* The hop-by-hop rule of http/ (ct_http_msg_field_is_hop) plus Proxy-*
 * fields, with its search for Connection lines done once per head
 * (HAS_CONN: ct_headw_has_connection) rather than once per field. */
bool ct_headw_drop(const struct ct_http_msg *msg, bool has_conn, const struct ct_http_field *f);
bool ct_headw_has_connection(const struct ct_http_msg *msg);
/* "NAME: v1, v2, ..., EXTRA" joining every line of header ID with our value
 * last (RFC 9110 §5.3: a list may be combined in order). */
void ct_headw_joined(struct ct_headw *w, const struct ct_http_msg *msg, enum ct_hdr_id id,
                     struct ct_str extra);
/* Connection: upgrade and MSG's Upgrade fields. */
void ct_headw_upgrade(struct ct_headw *w, const struct ct_http_msg *msg);
/* The fields a route's rules add (proxy/ctx.h). */
void ct_headw_edits(struct ct_headw *w, const struct ct_fwd_edit *e, size_t n);

#endif /* CT_PROXY_HEADW_H */
