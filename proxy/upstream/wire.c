/*
 * proxy/upstream/wire.c: HTTP/1 towards the origin, and the body pump
 * between a parser and evbuffers.
 *
 * - Request heads for the origin, built straight into space reserved in
 *   the upstream's output evbuffer (headw.h: no intermediate string, no
 *   per-request allocation, one commit per head); response heads for
 *   HTTP/1 clients are proxy/h1/h1_wire.c's, with the same writer.
 * - Hop-by-hop fields are dropped by the one rule in http/
 *   (ct_http_msg_field_is_hop: the table's CT_HDRF_HOP plus the tokens named
 *   by Connection), plus any Proxy-* field (RFC 9110 §7.6.1 lists Proxy-
 *   fields as connection-specific; "Proxy:" itself is httpoxy, CVE-2016-5385).
 * - Bodies move between evbuffers by reference (evbuffer_remove_buffer moves
 *   whole chains where it can); only chunk-size lines are written by us.
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
#include "proxy/upstream/headw.h"
#include "proxy/upstream/wire.h"

/* A request head whose bound fits is rendered here and, with nothing queued
 * before it, written at once: no evbuffer chain (malloc), commit, buffer
 * callbacks or drain per request. */
#define STACK_HEAD 4096

void ct_fwd_request_head(struct ct_io *io, const struct ct_fwd_req *fr)
{
    const struct ct_http_msg *msg = fr->msg;
    const struct ct_http_field *host = NULL;
    struct evbuffer *dst = bufferevent_get_output(io->bev);
    struct ct_headw hw, *out = &hw;
    bool has_conn = ct_headw_has_connection(msg);
    size_t bound = 2 * msg->head_bytes + 256 + fr->peer_ip.len + fr->default_host.len +
                   fr->extra_name.len + fr->extra_value.len;
    for (size_t i = 0; i < fr->nedits; i++)
        bound += fr->edits[i].name.len + fr->edits[i].value.len + 4;
    char stack[STACK_HEAD];

    if (bound <= sizeof(stack))
        ct_headw_begin_stack(out, dst, stack, sizeof(stack));
    else
        ct_headw_begin(out, dst, bound);

    ct_headw_str(out, msg->method_name);
    CT_HEADW_LIT(out, " ");
    ct_headw_str(out, msg->target);
    /* We speak HTTP/1.1 to the origin whatever the client spoke (§2.5). */
    CT_HEADW_LIT(out, " HTTP/1.1\r\n");
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
        if (ct_headw_drop(msg, has_conn, f) ||
            (fr->extra_name.len && ct_str_eq_ci(f->name, fr->extra_name)))
            continue;
        if ((fr->strip_cookie && f->id == CT_HDR_COOKIE) ||
            (fr->nedits && ct_fwd_edited(fr->edits, 0, fr->nedits, f->name)))
            continue;
        ct_headw_field(out, f->name, f->value);
    }
    ct_headw_edits(out, fr->edits, fr->nedits);
    if (fr->extra_name.len && fr->extra_value.len)
        ct_headw_field(out, fr->extra_name, fr->extra_value);
    if (host == NULL && fr->default_host.len)
        ct_headw_field(out, CT_STR("Host"), fr->default_host);
    ct_headw_joined(out, msg, CT_HDR_VIA, CT_STR(CT_VIA_US));
    ct_headw_joined(out, msg, CT_HDR_X_FORWARDED_FOR, fr->peer_ip);
    ct_headw_field(out, CT_STR("X-Forwarded-Proto"), fr->https ? CT_STR("https") : CT_STR("http"));
    if (host)
        ct_headw_field(out, CT_STR("X-Forwarded-Host"), host->value);
    if (fr->chunked_body)
        CT_HEADW_LIT(out, "Transfer-Encoding: chunked\r\n");
    if (msg->upgrade)
        ct_headw_upgrade(out, msg);
    CT_HEADW_LIT(out, "\r\n");
    if (out->stack && out->p != NULL && ct_io_can_write_now(io)) {
        struct iovec v = {stack, (size_t)(out->p - stack)};
        ct_io_writev(io, &v, 1, NULL, NULL);
        return;
    }
    ct_headw_end(out);
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
