/*
 * proxy/net/pp_accept.c: the PROXY protocol stage of a connection on a
 * listener with `proxy_protocol` (issue 15), before TLS or HTTP see a byte.
 *
 * The peer must be one of the listener's proxy_protocol_from prefixes, or
 * the connection is closed at once (a PROXY header read from anyone would
 * let a client choose its address). Then the header is read straight from
 * the socket: peeked (MSG_PEEK) until proxy/realip/realip.h says it is
 * whole, and only its own bytes are consumed, so the TLS handshake or the
 * request that follows is untouched in the kernel's buffer. The connection
 * then goes on as accepted from the header's source address (a LOCAL or
 * UNKNOWN header keeps the balancer's own): ct_net_accept() from there. No
 * header within the client
 * header timeout, or a malformed one: closed.
 *
 * Pending stages are on w->pp_waits, so a worker that ends frees them.
 * Worker thread only.
 */
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "proxy/ctx.h"
#include "proxy/net/accept.h"
#include "proxy/realip/realip.h"

struct ct_pp_wait {
    unsigned magic;
#define CT_PP_WAIT_MAGIC 0x99acce97u
    struct ct_worker *w;
    const struct ct_listener_conf *lc;
    ct_net_take_fn *take;
    int fd;
    struct event *ev; /* readable or timed out */
    struct sockaddr_storage peer;
    socklen_t peerlen;
    struct ct_pp_wait *next, *prev; /* w->pp_waits */
};

static void pp_free(struct ct_pp_wait *p, bool close_fd)
{
    struct ct_worker *w = p->w;
    if (p->prev)
        p->prev->next = p->next;
    else
        w->pp_waits = p->next;
    if (p->next)
        p->next->prev = p->prev;
    event_free(p->ev);
    if (close_fd)
        close(p->fd);
    p->magic = 0;
    free(p);
}

static void addr_of(const struct sockaddr *sa, struct ct_realip_addr *a)
{
    memset(a, 0, sizeof(*a));
    if (sa->sa_family == AF_INET) {
        a->family = AF_INET;
        memcpy(a->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        a->family = AF_INET6;
        memcpy(a->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

static socklen_t sockaddr_of(const struct ct_realip_addr *a, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (a->family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(a->port);
        memcpy(&in->sin_addr, a->addr, 4);
        return sizeof(*in);
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(a->port);
    memcpy(&in6->sin6_addr, a->addr, 16);
    return sizeof(*in6);
}

static void on_pp(evutil_socket_t fd, short what, void *arg)
{
    struct ct_pp_wait *p = arg;
    CT_CHECK_OBJ(p, CT_PP_WAIT_MAGIC);
    struct ct_worker *w = p->w;
    if (what & EV_TIMEOUT) {
        CT_INFO("w%u accept on %s: no PROXY header in time; closed", w->id, p->lc->name);
        pp_free(p, true);
        return;
    }
    uint8_t buf[CT_PP_V2_MAX];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    struct ct_pp_result res;
    int rc = n > 0 ? ct_pp_parse(buf, (size_t)n, &res) : CT_EPROTO;
    if (rc == CT_EAGAIN && (size_t)n < sizeof(buf))
        return; /* the rest is on its way */
    if (rc != CT_OK) {
        CT_INFO("w%u accept on %s: %s; closed", w->id, p->lc->name,
                n == 0 ? "closed before a PROXY header" : "not a PROXY header");
        pp_free(p, true);
        return;
    }
    /* exactly the header's bytes: what follows is the protocol's */
    if (recv(fd, buf, res.consumed, 0) != (ssize_t)res.consumed) {
        pp_free(p, true);
        return;
    }
    struct sockaddr_storage real;
    socklen_t reallen = p->peerlen;
    memcpy(&real, &p->peer, sizeof(real));
    if (!res.local)
        reallen = sockaddr_of(&res.src, &real);
    const struct ct_listener_conf *lc = p->lc;
    ct_net_take_fn *take = p->take;
    pp_free(p, false);
    (void)reallen;
    ct_net_accept(w, lc, fd, (struct sockaddr *)&real, take);
}

void ct_pp_accept(struct ct_worker *w, const struct ct_listener_conf *lc, int fd,
                  const struct sockaddr *sa, socklen_t salen, ct_net_take_fn *take)
{
    struct ct_realip_addr a;
    addr_of(sa, &a);
    if (!ct_realip_in(lc->pp_from, lc->npp_from, &a)) {
        char name[CT_SOCKADDR_STRLEN_PP];
        ct_realip_fmt(&a, name, sizeof(name));
        CT_WARN("w%u accept on %s: %s may not send a PROXY header (proxy_protocol_from); "
                "closed", w->id, lc->name, name);
        close(fd);
        return;
    }
    struct ct_pp_wait *p = ct_xcalloc(1, sizeof(*p));
    p->magic = CT_PP_WAIT_MAGIC;
    p->w = w;
    p->lc = lc;
    p->take = take;
    p->fd = fd;
    memcpy(&p->peer, sa, salen < sizeof(p->peer) ? salen : sizeof(p->peer));
    p->peerlen = salen;
    evutil_make_socket_nonblocking(fd);
    p->ev = event_new(w->base, fd, EV_READ | EV_PERSIST, on_pp, p);
    uint64_t ms = w->cf->limits.client_header_timeout_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    event_add(p->ev, &tv);
    p->next = w->pp_waits;
    if (w->pp_waits)
        w->pp_waits->prev = p;
    w->pp_waits = p;
}

void ct_pp_abort_all(struct ct_worker *w)
{
    while (w->pp_waits)
        pp_free(w->pp_waits, true);
}
