/*
 * proxy/upstream/wire.c: what goes on the wire between the two parsers.
 *
 * - Request heads for the origin and response heads for the client, built
 *   straight into space reserved in the peer's output evbuffer (no
 *   intermediate string, no per-request allocation, one commit per head).
 * - Hop-by-hop fields are dropped by the one rule in http/
 *   (ct_http_msg_field_is_hop: the table's CT_HDRF_HOP plus the tokens named
 *   by Connection), plus any Proxy-* field (RFC 9110 §7.6.1 lists Proxy-
 *   fields as connection-specific; "Proxy:" itself is httpoxy, CVE-2016-5385).
 * - Bodies move between evbuffers by reference (evbuffer_remove_buffer moves
 *   whole chains where it can); only chunk-size lines are written by us.
 * - Error responses: a short plain-text status line, never origin internals.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <stdio.h>
#include <sys/uio.h>
#include <time.h>

#include "proxy/net/net.h"
#include "proxy/ctx.h"
#include "proxy/upstream/wire.h"

static const char VIA_US[] = "1.1 cachet";

/* A head is written straight into space reserved at the end of the peer's
 * output buffer (evbuffer_reserve_space, committed once): one copy of each
 * piece, one buffer callback per head instead of one per piece. BOUND is a
 * safe upper bound (no field is written more than twice); should a piece
 * still not fit, what was written is committed and the rest is appended
 * with evbuffer_add, in order. */
struct hw {
    struct evbuffer *out;
    struct evbuffer_iovec v;
    char *p, *end; /* NULL p: reservation committed, append directly */
    bool stack;    /* v is the caller's buffer, not a reservation in OUT */
};

static void hw_begin(struct hw *w, struct evbuffer *out, size_t bound)
{
    w->out = out;
    w->p = w->end = NULL;
    w->stack = false;
    if (evbuffer_reserve_space(out, (ev_ssize_t)bound, &w->v, 1) == 1) {
        w->p = w->v.iov_base;
        w->end = w->p + w->v.iov_len;
    }
}

/* Into the caller's BUF instead (for a direct write); on overflow what it
 * holds is appended to OUT and the rest follows it there, in order. */
static void hw_begin_stack(struct hw *w, struct evbuffer *out, char *buf, size_t cap)
{
    w->out = out;
    w->v.iov_base = buf;
    w->v.iov_len = cap;
    w->p = buf;
    w->end = buf + cap;
    w->stack = true;
}

static void hw_end(struct hw *w)
{
    if (w->p == NULL)
        return;
    w->v.iov_len = (size_t)(w->p - (char *)w->v.iov_base);
    if (w->stack) {
        evbuffer_add(w->out, w->v.iov_base, w->v.iov_len);
    } else {
        int rc = evbuffer_commit_space(w->out, &w->v, 1);
        CT_ASSERT(rc == 0);
    }
    w->p = w->end = NULL;
}

static void hw_put_slow(struct hw *w, const char *s, size_t n)
{
    hw_end(w);
    evbuffer_add(w->out, s, n);
}

/* Inline, so that a literal's copy is a few moves, not a call to memcpy. */
static inline void hw_put(struct hw *w, const char *s, size_t n)
{
    if (w->p != NULL && (size_t)(w->end - w->p) >= n) {
        memcpy(w->p, s, n);
        w->p += n;
        return;
    }
    hw_put_slow(w, s, n);
}

#define ADD_LIT(out, lit) hw_put((out), (lit), sizeof(lit) - 1)

static void add_str(struct hw *out, struct ct_str s)
{
    if (s.len)
        hw_put(out, s.p, s.len);
}

/* "NAME: VALUE\r\n": one room check and two copies for the whole line (it
 * runs for every forwarded field, both ways); the piecewise path only when
 * the reservation is short. */
static void add_field(struct hw *out, struct ct_str name, struct ct_str value)
{
    size_t n = name.len + value.len + 4;
    if (out->p == NULL || (size_t)(out->end - out->p) < n) {
        add_str(out, name);
        ADD_LIT(out, ": ");
        add_str(out, value);
        ADD_LIT(out, "\r\n");
        return;
    }
    char *p = out->p;
    memcpy(p, name.p, name.len);
    p += name.len;
    *p++ = ':';
    *p++ = ' ';
    if (value.len)
        memcpy(p, value.p, value.len);
    p += value.len;
    *p++ = '\r';
    *p++ = '\n';
    out->p = p;
}

/* The hop-by-hop rule of http/ (ct_http_msg_field_is_hop), with its search
 * for Connection lines done once per head rather than once per field: a head
 * without Connection (most of them) only has the table's CT_HDRF_HOP fields to
 * drop, which is what the rule answers then. */
static bool drop_field(const struct ct_http_msg *msg, bool has_conn, const struct ct_http_field *f)
{
    bool hop =
        has_conn ? ct_http_msg_field_is_hop(msg, f) : (ct_hdr_flags(f->id) & CT_HDRF_HOP) != 0;
    return hop || ct_http_field_is_proxy(f);
}

static bool has_connection(const struct ct_http_msg *msg)
{
    return ct_http_msg_find(msg, CT_HDR_CONNECTION, NULL) != NULL;
}

/* Write "NAME: v1, v2, ..., EXTRA" joining every line of header ID with our
 * value last (RFC 9110 §5.3: a list may be combined in order). */
static void add_joined(struct hw *out, const struct ct_http_msg *msg, enum ct_hdr_id id,
                       struct ct_str extra)
{
    add_str(out, ct_str_c(ct_hdr_name(id)));
    ADD_LIT(out, ": ");
    for (const struct ct_http_field *f = ct_http_msg_find(msg, id, NULL); f;
         f = ct_http_msg_find(msg, id, f)) {
        if (f->value.len == 0)
            continue;
        add_str(out, f->value);
        ADD_LIT(out, ", ");
    }
    add_str(out, extra);
    ADD_LIT(out, "\r\n");
}

static void add_upgrade(struct hw *out, const struct ct_http_msg *msg)
{
    ADD_LIT(out, "Connection: upgrade\r\n");
    for (const struct ct_http_field *f = ct_http_msg_find(msg, CT_HDR_UPGRADE, NULL); f;
         f = ct_http_msg_find(msg, CT_HDR_UPGRADE, f))
        add_field(out, CT_STR("Upgrade"), f->value);
}

/* A request head whose bound fits is rendered here and, with nothing queued
 * before it, written at once: no evbuffer chain (malloc), commit, buffer
 * callbacks or drain per request. */
#define STACK_HEAD 4096

/* The fields a route's rules add (proxy/ctx.h). */
static void add_edits(struct hw *out, const struct ct_fwd_edit *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ct_fwd_edit_adds(e, i, n))
            add_field(out, e[i].name, e[i].value);
}

void ct_fwd_request_head(struct ct_io *io, const struct ct_fwd_req *fr)
{
    const struct ct_http_msg *msg = fr->msg;
    const struct ct_http_field *host = NULL;
    struct evbuffer *dst = bufferevent_get_output(io->bev);
    struct hw hw, *out = &hw;
    bool has_conn = has_connection(msg);
    size_t bound = 2 * msg->head_bytes + 256 + fr->peer_ip.len + fr->default_host.len +
                   fr->extra_name.len + fr->extra_value.len;
    for (size_t i = 0; i < fr->nedits; i++)
        bound += fr->edits[i].name.len + fr->edits[i].value.len + 4;
    char stack[STACK_HEAD];

    if (bound <= sizeof(stack))
        hw_begin_stack(out, dst, stack, sizeof(stack));
    else
        hw_begin(out, dst, bound);

    add_str(out, msg->method_name);
    ADD_LIT(out, " ");
    add_str(out, msg->target);
    /* We speak HTTP/1.1 to the origin whatever the client spoke (§2.5). */
    ADD_LIT(out, " HTTP/1.1\r\n");
    for (size_t i = 0; i < msg->nfields; i++) {
        const struct ct_http_field *f = &msg->fields[i];
        switch (f->id) {
        case CT_HDR_HOST:
            host = f;
            break;
        case CT_HDR_VIA:
        case CT_HDR_X_FORWARDED_FOR:
        case CT_HDR_X_FORWARDED_PROTO:
        case CT_HDR_X_FORWARDED_HOST:
            continue; /* rewritten below */
        case CT_HDR_EXPECT:
            continue; /* we answer 100-continue ourselves (see fetch.c) */
        default:
            break;
        }
        if (drop_field(msg, has_conn, f) ||
            (fr->extra_name.len && ct_str_eq_ci(f->name, fr->extra_name)))
            continue;
        if ((fr->strip_cookie && f->id == CT_HDR_COOKIE) ||
            (fr->nedits && ct_fwd_edited(fr->edits, 0, fr->nedits, f->name)))
            continue;
        add_field(out, f->name, f->value);
    }
    add_edits(out, fr->edits, fr->nedits);
    if (fr->extra_name.len && fr->extra_value.len)
        add_field(out, fr->extra_name, fr->extra_value);
    if (host == NULL && fr->default_host.len)
        add_field(out, CT_STR("Host"), fr->default_host);
    add_joined(out, msg, CT_HDR_VIA, CT_STR(VIA_US));
    add_joined(out, msg, CT_HDR_X_FORWARDED_FOR, fr->peer_ip);
    add_field(out, CT_STR("X-Forwarded-Proto"), fr->https ? CT_STR("https") : CT_STR("http"));
    if (host)
        add_field(out, CT_STR("X-Forwarded-Host"), host->value);
    if (fr->chunked_body)
        ADD_LIT(out, "Transfer-Encoding: chunked\r\n");
    if (msg->upgrade)
        add_upgrade(out, msg);
    ADD_LIT(out, "\r\n");
    if (out->stack && out->p != NULL && ct_io_can_write_now(io)) {
        struct iovec v = {stack, (size_t)(out->p - stack)};
        ct_io_writev(io, &v, 1, NULL, NULL);
        return;
    }
    hw_end(out);
}

static void add_status_line(struct hw *out, unsigned status, struct ct_str reason)
{
    /* Three digits by hand: this runs once per response (no printf). */
    char line[13] = "HTTP/1.1 000 ";
    status %= 1000;
    line[9] = (char)('0' + status / 100);
    line[10] = (char)('0' + status / 10 % 10);
    line[11] = (char)('0' + status % 10);
    hw_put(out, line, sizeof(line));
    if (reason.len == 0)
        reason = ct_str_c(ct_http_status_reason(status));
    add_str(out, reason);
    ADD_LIT(out, "\r\n");
}

static size_t response_head_bound(const struct ct_http_msg *msg,
                                  const struct ct_fwd_resp_extra *extra)
{
    size_t n = 2 * msg->head_bytes + (extra ? extra->cache_status.len : 0) + 160;
    for (size_t i = 0; extra && i < extra->nedits; i++)
        n += extra->edits[i].name.len + extra->edits[i].value.len + 4;
    return n;
}

static void response_head(struct hw *out, const struct ct_http_msg *msg, bool chunked,
                          enum ct_resp_conn conn, const struct ct_fwd_resp_extra *extra);

void ct_fwd_response_head(struct evbuffer *dst, const struct ct_http_msg *msg, bool chunked,
                          enum ct_resp_conn conn, const struct ct_fwd_resp_extra *extra)
{
    struct hw hw;
    hw_begin(&hw, dst, response_head_bound(msg, extra));
    response_head(&hw, msg, chunked, conn, extra);
    hw_end(&hw);
}

size_t ct_fwd_response_head_buf(struct evbuffer *dst, char *buf, size_t cap,
                                const struct ct_http_msg *msg, bool chunked, enum ct_resp_conn conn,
                                const struct ct_fwd_resp_extra *extra)
{
    if (response_head_bound(msg, extra) > cap) {
        ct_fwd_response_head(dst, msg, chunked, conn, extra);
        return 0;
    }
    struct hw hw;
    hw_begin_stack(&hw, dst, buf, cap);
    response_head(&hw, msg, chunked, conn, extra);
    if (hw.p == NULL)
        return 0; /* overflowed (the bound is safe, but): all of it is in DST */
    return (size_t)(hw.p - buf);
}

static void response_head(struct hw *out, const struct ct_http_msg *msg, bool chunked,
                          enum ct_resp_conn conn, const struct ct_fwd_resp_extra *extra)
{
    size_t cs_len = extra ? extra->cache_status.len : 0;
    bool has_conn = has_connection(msg);
    add_status_line(out, msg->status, msg->reason);
    for (size_t i = 0; i < msg->nfields; i++) {
        const struct ct_http_field *f = &msg->fields[i];
        if (f->id == CT_HDR_VIA || drop_field(msg, has_conn, f) ||
            (extra && extra->omit && extra->omit(f, extra->omit_arg)) ||
            (extra && extra->nedits && ct_fwd_edited(extra->edits, 0, extra->nedits, f->name)))
            continue;
        add_field(out, f->name, f->value);
    }
    if (extra)
        add_edits(out, extra->edits, extra->nedits);
    add_joined(out, msg, CT_HDR_VIA, CT_STR(VIA_US));
    if (cs_len)
        add_field(out, CT_STR("Cache-Status"), extra->cache_status);
    if (chunked)
        ADD_LIT(out, "Transfer-Encoding: chunked\r\n");
    switch (conn) {
    case CT_RESP_KEEP:
    case CT_RESP_INTERIM:
        break;
    case CT_RESP_KEEP_ALIVE_10:
        ADD_LIT(out, "Connection: keep-alive\r\n");
        break;
    case CT_RESP_CLOSE:
        ADD_LIT(out, "Connection: close\r\n");
        break;
    case CT_RESP_UPGRADE:
        add_upgrade(out, msg);
        break;
    }
    ADD_LIT(out, "\r\n");
}

void ct_fwd_body(struct evbuffer *out, struct evbuffer *src, size_t n, bool chunked)
{
    if (n == 0)
        return;
    if (chunked) {
        /* The chunk-size line in hex, by hand (once per chunk, no printf). */
        static const char hex[] = "0123456789abcdef";
        char line[2 * sizeof(size_t) + 2];
        size_t i = sizeof(line);
        line[--i] = '\n';
        line[--i] = '\r';
        for (size_t v = n; v; v >>= 4)
            line[--i] = hex[v & 0xf];
        evbuffer_add(out, line + i, sizeof(line) - i);
    }
    /* Moves chains by reference; only a partial chain at the end is copied. */
    int moved = evbuffer_remove_buffer(src, out, n);
    CT_ASSERT(moved >= 0 && (size_t)moved == n);
    if (chunked)
        evbuffer_add(out, "\r\n", 2);
}

void ct_fwd_body_end(struct evbuffer *out)
{
    evbuffer_add(out, "0\r\n\r\n", 5);
}

void ct_fwd_error(struct evbuffer *out, unsigned status, bool head_only, bool close)
{
    char date[CT_HTTP_DATE_LEN + 1];
    char body[96];
    const char *reason = ct_http_status_reason(status);
    int blen = snprintf(body, sizeof(body), "%u %s\n", status, reason);

    ct_http_date_format(time(NULL), date);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %u %s\r\nServer: cachet\r\nDate: %s\r\n"
                        "Content-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n",
                        status, reason, date, blen, close ? "Connection: close\r\n" : "");
    if (!head_only)
        evbuffer_add(out, body, (size_t)blen);
}

enum ct_http_ev ct_fwd_pump(struct ct_http_parser *p, struct evbuffer *src, struct evbuffer *dst,
                            bool chunked, size_t *body_len)
{
    struct evbuffer_iovec v;
    const char *buf = "";
    size_t len = 0, used = 0;
    struct ct_str chunk = CT_STR_NULL;

    *body_len = 0;
    if (evbuffer_peek(src, -1, NULL, &v, 1) >= 1) {
        buf = v.iov_base;
        len = v.iov_len;
    }
    enum ct_http_ev ev = ct_http_parser_feed(p, buf, len, &used, &chunk);
    CT_ASSERT(used <= len);
    if (ev != CT_HTTP_EV_BODY) {
        evbuffer_drain(src, used);
        return ev;
    }
    /* BUF = [framing][chunk][framing], all within the USED bytes. */
    CT_ASSERT(chunk.p >= buf && chunk.p + chunk.len <= buf + used);
    size_t pre = (size_t)(chunk.p - buf);
    evbuffer_drain(src, pre);
    if (dst)
        ct_fwd_body(dst, src, chunk.len, chunked);
    else
        evbuffer_drain(src, chunk.len);
    evbuffer_drain(src, used - pre - chunk.len);
    *body_len = chunk.len;
    return ev;
}
