/*
 * proxy/cache_bg.c: background refreshes (grace / stale-while-revalidate,
 * issue 6) on a connection of their own.
 *
 * A client that finds a stale object within grace and gets the store's fetch
 * slot (the BUSY object) is answered with the stale object at once; the
 * refresh must not hold that client's connection (its next request would
 * wait for the origin). So the slot is handed to an internal client: one end
 * of a socketpair goes through ct_client_accept() like any accepted
 * connection, the other end writes it a copy of the request (without the
 * client's conditionals, Range, Cache-Control and hop-by-hop fields, with
 * Connection: close) and then reads and drops whatever comes back. The
 * internal client's creq carries the handed-over BUSY object (and the stale
 * one, for the validators), so its recv skips the lookup and fills the
 * object like any fetcher: exactly one origin fetch, no race for the slot.
 * It ends like any client (its Connection: close; the dropping end closes at
 * EOF), and everything it held is released by the usual hooks.
 *
 * Owned here, per worker: the dropping ends (struct ct_ghost), freed at EOF
 * or by ct_cache_bg_free_all() when the worker exits. Worker thread only.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "proxy/cache_int.h"

struct ct_ghost {
    unsigned magic;
#define CT_GHOST_MAGIC 0x6405e0f1u
    struct ct_wcache *wc;
    int fd;
    struct event *ev;
    struct ct_ghost *next, *prev;
};

#define ADD_LIT(out, lit) evbuffer_add((out), (lit), sizeof(lit) - 1)

static void ghost_free(struct ct_ghost *g)
{
    struct ct_wcache *wc = g->wc;
    if (g->prev)
        g->prev->next = g->next;
    else
        wc->ghosts = g->next;
    if (g->next)
        g->next->prev = g->prev;
    event_free(g->ev);
    close(g->fd);
    g->magic = 0;
    free(g);
}

void ct_cache_bg_free_all(struct ct_wcache *wc)
{
    while (wc->ghosts)
        ghost_free(wc->ghosts);
}

/* The dropping end: read and discard the internal client's response; its
 * close (after the refresh) ends this. */
static void on_ghost_readable(evutil_socket_t fd, short what, void *arg)
{
    struct ct_ghost *g = arg;
    CT_CHECK_OBJ(g, CT_GHOST_MAGIC);
    char buf[16384];
    for (unsigned i = 0; i < 64; i++) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        ghost_free(g); /* EOF or error: the internal client is done */
        return;
    }
}

/* The request for the internal client: REQ's target and end-to-end fields,
 * minus what would change the answer (conditionals, Range, the client's own
 * Cache-Control) or the framing. False if REQ has no Host to send. */
static bool render_request(struct evbuffer *out, const struct ct_http_msg *req)
{
    if (ct_http_msg_find(req, CT_HDR_HOST, NULL) == NULL)
        return false;
    ADD_LIT(out, "GET ");
    evbuffer_add(out, req->target.p, req->target.len);
    ADD_LIT(out, " HTTP/1.1\r\n");
    for (size_t i = 0; i < req->nfields; i++) {
        const struct ct_http_field *f = &req->fields[i];
        switch (f->id) {
        case CT_HDR_IF_NONE_MATCH:
        case CT_HDR_IF_MODIFIED_SINCE:
        case CT_HDR_RANGE:
        case CT_HDR_IF_RANGE:
        case CT_HDR_CACHE_CONTROL:
        case CT_HDR_EXPECT:
        case CT_HDR_CONTENT_LENGTH:
        case CT_HDR_TRANSFER_ENCODING:
            continue;
        default:
            break;
        }
        if (ct_http_msg_field_is_hop(req, f))
            continue;
        evbuffer_add(out, f->name.p, f->name.len);
        ADD_LIT(out, ": ");
        evbuffer_add(out, f->value.p, f->value.len);
        ADD_LIT(out, "\r\n");
    }
    ADD_LIT(out, "Connection: close\r\n\r\n");
    return true;
}

/* Write REQ into FD (a fresh socketpair end: its buffer takes a head). */
static bool send_request(int fd, const struct ct_http_msg *req)
{
    struct evbuffer *buf = evbuffer_new();
    bool ok = render_request(buf, req);
    if (ok) {
        size_t len = evbuffer_get_length(buf);
        ssize_t n = write(fd, evbuffer_pullup(buf, -1), len);
        ok = n == (ssize_t)len;
    }
    evbuffer_free(buf);
    return ok;
}

bool ct_cache_bg_start(struct ct_client *c, struct ct_obj **fill, struct ct_obj **stale)
{
    struct ct_worker *w = c->w;
    struct ct_wcache *wc = w->wc;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        return false;
    if (!send_request(sv[1], c->r.msg)) {
        close(sv[0]);
        close(sv[1]);
        return false;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct ct_client *head = w->clients;
    ct_client_accept(w, &wc->bg_lc, sv[0], (struct sockaddr *)&sa, sizeof(sa));
    struct ct_client *g = w->clients; /* ct_client_accept links the new one first */
    if (g == head || g == NULL) {
        close(sv[1]); /* it could not take the connection (logged there) */
        return false;
    }
    /* Logs and X-Forwarded-For name the client that triggered the refresh. */
    memcpy(g->peer, c->peer, sizeof(g->peer));
    g->peer_ip_len = c->peer_ip_len;
    struct ct_creq *gr = ct_cache_creq_new(g);
    gr->bg_port = c->lc->kind == CT_LISTEN_HTTPS ? 443 : 80;
    gr->handoff_fill = *fill;
    gr->handoff_stale = *stale;
    *fill = *stale = NULL;

    struct ct_ghost *gh = ct_xcalloc(1, sizeof(*gh));
    gh->magic = CT_GHOST_MAGIC;
    gh->wc = wc;
    gh->fd = sv[1];
    gh->ev = event_new(w->base, sv[1], EV_READ | EV_PERSIST, on_ghost_readable, gh);
    event_add(gh->ev, NULL);
    gh->next = wc->ghosts;
    if (wc->ghosts)
        wc->ghosts->prev = gh;
    wc->ghosts = gh;
    CT_DEBUG("w%u c%llu %s: background refresh of %.*s on c%llu", w->id,
             (unsigned long long)c->id, c->peer, (int)c->r.msg->target.len, c->r.msg->target.p,
             (unsigned long long)g->id);
    return true;
}
