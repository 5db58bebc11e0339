/*
 * proxy/h1/h1_req.c: HTTP/1's request side for the core (proxy/core/proto.h):
 * the request body source (the connection's parser on its input, with the
 * body deadline) and the Upgrade tunnel after a 101.
 *
 * Back-pressure (le-proxy): a source stops being read when the sink's output
 * passes CT_BP_HIGH; the sink's drained hook (at CT_BP_LOW) resumes it and
 * processes what is already buffered (no read event would come for it).
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "proxy/h1/h1.h"
#include "proxy/h1/h1_wire.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/wire.h"

static struct ct_client *h1(struct ct_req *r) { return ct_h1_of(r); }
static struct evbuffer *cin(struct ct_client *c) { return bufferevent_get_input(c->bev); }
static struct evbuffer *cout(struct ct_client *c) { return bufferevent_get_output(c->bev); }

/* ---- the request body --------------------------------------------------------- */

enum ct_body_ev ct_h1_body_read(struct ct_req *r, struct evbuffer *dst, bool chunked, size_t *n)
{
    struct ct_client *c = h1(r);
    struct evbuffer *in = cin(c);
    const struct ct_conf_limits *lim = &c->w->cf->limits;
    for (;;) {
        size_t before = evbuffer_get_length(in);
        switch (ct_fwd_pump(c->rp, in, dst, chunked, n)) {
        case CT_HTTP_EV_BODY:
            return CT_BODY_DATA;
        case CT_HTTP_EV_MORE:
            if (before > 0 && evbuffer_get_length(in) != before)
                continue; /* framing consumed (a chunk header): go on */
            /* Need bytes from the client; a stalled body gets 408, and so
             * does one trickled past its deadline. */
            ct_io_timeouts(&c->io, lim->client_header_timeout_ms, lim->send_timeout_ms);
            ct_io_read(&c->io, true);
            if (r->body_bytes != c->body_seen) {
                c->body_seen = r->body_bytes;
                ct_client_body_clock(c, CT_BODY_CLOCK_MOVE);
            }
            return CT_BODY_NEED;
        case CT_HTTP_EV_END:
            ct_client_body_clock(c, CT_BODY_CLOCK_STOP);
            if (ct_http_msg_body_expected(r->msg)) /* the body's read clock stops too */
                ct_io_timeouts(&c->io, 0, lim->send_timeout_ms);
            return CT_BODY_END;
        case CT_HTTP_EV_ERROR:
            return CT_BODY_ERROR;
        case CT_HTTP_EV_HEAD:
            break;
        }
        CT_WRONG("a request head inside a request body");
    }
}

void ct_h1_body_hold(struct ct_req *r, bool hold)
{
    struct ct_client *c = h1(r);
    if (hold)
        ct_io_read(&c->io, false); /* body_read turns it on again when it needs bytes */
    ct_client_body_pause(c, hold);
}

/* ---- the Upgrade tunnel (after a 101) -------------------------------------------- */

static void tunnel_up(struct ct_client *c)
{
    struct ct_upstream *u = c->r.u;
    evbuffer_add_buffer(bufferevent_get_output(ct_upstream_bev(u)), cin(c));
    if (!ct_io_flush_under_low(ct_upstream_io(u))) {
        c->r.body_paused = true; /* the upstream's drained hook resumes us */
        ct_io_read(&c->io, false);
    }
}

static void tunnel_down(struct ct_client *c)
{
    struct ct_upstream *u = c->r.u;
    evbuffer_add_buffer(cout(c), bufferevent_get_input(ct_upstream_bev(u)));
    if (!ct_io_flush_under_low(&c->io)) {
        c->r.up_paused = true; /* the client's on_write resumes us */
        ct_io_read(ct_upstream_io(u), false);
    }
}

static struct ct_client *tunnel_client(void *owner)
{
    struct ct_client *c = owner;
    CT_CHECK_OBJ(c, CT_CLIENT_MAGIC);
    CT_ASSERT(c->state == CT_CS_TUNNEL);
    return c;
}

static void tunnel_ready(void *owner)
{
    (void)owner;
    CT_WRONG("a tunnel's upstream connects again");
}

static void tunnel_readable(void *owner) { tunnel_down(tunnel_client(owner)); }

static void tunnel_upstream_drained(void *owner)
{
    struct ct_client *c = tunnel_client(owner);
    if (!c->r.body_paused)
        return;
    c->r.body_paused = false;
    ct_io_read(&c->io, true);
    tunnel_up(c);
}

static void tunnel_closed(void *owner, enum ct_close why)
{
    (void)why;
    ct_client_finish(tunnel_client(owner), CT_CLOSE_TUNNEL_DONE); /* flush what the origin sent */
}

static const struct ct_upstream_owner tunnel_owner = {
    .ready = tunnel_ready,
    .readable = tunnel_readable,
    .drained = tunnel_upstream_drained,
    .closed = tunnel_closed,
};

bool ct_h1_tunnel(struct ct_req *r, const struct ct_http_msg *resp)
{
    struct ct_client *c = h1(r);
    ct_h1_response_head(cout(c), resp, false, CT_H1_CONN_UPGRADE, NULL);
    r->head_sent = true;
    r->status = resp->status;
    ct_client_set_state(c, CT_CS_TUNNEL);
    ct_upstream_set_owner(r->u, &tunnel_owner, c);
    ct_upstream_tunnel(r->u);
    ct_io_timeouts(&c->io, 0, 0);
    ct_io_read(&c->io, true);
    tunnel_down(c);
    tunnel_up(c);
    return true;
}

void ct_h1_tunnel_readable(struct ct_client *c) { tunnel_up(c); }

void ct_h1_tunnel_drained(struct ct_client *c)
{
    if (c->r.u == NULL || !c->r.up_paused)
        return;
    c->r.up_paused = false;
    ct_io_read(ct_upstream_io(c->r.u), true);
    tunnel_down(c);
}
