/*
 * proxy/net/accept.c: an accepted connection until a protocol takes it
 * (accept.h says what and why).
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <errno.h>
#include <unistd.h>

#include "common/log.h"
#include "proxy/ctx.h"
#include "proxy/net/accept.h"
#include "proxy/net/deadline.h"
#include "proxy/net/net.h"
#include "tls/tls.h"

/* Plain HTTP on the TLS port: how long the rest of its request is read and
 * dropped after our 400, so closing does not reset the answer away. */
#define PLAIN_LINGER_MS 5000

struct ct_hs {
    unsigned magic;
#define CT_HS_MAGIC 0x4a5c3e01u
    struct ct_worker *w;
    struct ct_conn_info info;
    ct_net_take_fn *take;
    struct ct_deadline dl;       /* the handshake's, then the linger's */
    struct event *linger_ev;     /* plain HTTP answered: reading and dropping */
    CT_LIST_LINK(ct_hs) link;    /* w->handshakes */
};

static void peer_name(struct ct_conn_info *ci, const struct sockaddr *sa)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        port = ntohs(in6->sin6_port);
    }
    ci->peer_ip_len = strlen(ip);
    snprintf(ci->peer, sizeof(ci->peer), "%s:%u", ip, port);
}

/* With CLOSE_ON_FREE, a failed bufferevent_openssl_socket_new() has already
 * freed the SSL* and closed the fd (libevent 2.1.12): never free them again. */
static struct bufferevent *make_bev(struct ct_worker *w, const struct ct_listener_conf *lc,
                                    int fd)
{
    if (lc->kind == CT_LISTEN_HTTP)
        return bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
    SSL *ssl = ct_tls_new_ssl(lc->tls);
    if (ssl == NULL) {
        close(fd);
        return NULL;
    }
    return bufferevent_openssl_socket_new(w->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                          BEV_OPT_CLOSE_ON_FREE);
}

static void hs_unlink_free(struct ct_hs *h)
{
    CT_LIST_REMOVE(&h->w->handshakes, h, link);
    ct_deadline_fini(&h->dl);
    if (h->linger_ev)
        event_free(h->linger_ev);
    h->magic = 0;
    free(h);
}

static enum ct_stats_proto proto_of(const struct ct_listener_conf *lc)
{
    return lc->kind == CT_LISTEN_HTTP ? CT_STATS_PROTO_http : CT_STATS_PROTO_https;
}

/* The connection ends before any protocol had it, for WHY. */
static void hs_close(struct ct_hs *h, enum ct_close why)
{
    struct ct_worker *w = h->w;
    uint64_t id = h->info.id;
    CT_DEBUG("w%u c%llu %s: closed (%s)", w->id, (unsigned long long)id, h->info.peer,
             ct_close_name(why));
    if (w->stats) {
        ct_stats_conn_close(w->stats, (unsigned)why);
        ct_stats_conn_proto(w->stats, proto_of(h->info.lc), false);
    }
    bufferevent_free(h->info.bev);
    hs_unlink_free(h);
    w->nclients--;
    w->conn_gone(w, id);
}

static void hand_over(struct ct_worker *w, struct ct_conn_info *ci, ct_net_take_fn *take)
{
    bufferevent_setcb(ci->bev, NULL, NULL, NULL, NULL);
    take(w, ci);
}

static void on_linger_read(evutil_socket_t fd, short what, void *arg)
{
    struct ct_hs *h = arg;
    CT_CHECK_OBJ(h, CT_HS_MAGIC);
    (void)what;
    char buf[4096];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n > 0)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        hs_close(h, CT_CLOSE_TLS_HANDSHAKE); /* EOF or an error: it has its answer */
        return;
    }
}

/* Log why (OpenSSL's errors for this connection, so the next one does not
 * inherit them) and answer plain HTTP on the TLS port like nginx's 497. */
static void handshake_failed(struct ct_hs *h, short what)
{
    struct bufferevent *bev = h->info.bev;
    unsigned long e, last = 0;
    bool plain_http = false;
    char why[256] = "";
    /* libevent queues SSL_get_error()'s value first, then OpenSSL's codes
     * (newest popped first): the last real code popped is the first cause */
    while ((e = bufferevent_get_openssl_error(bev)) != 0) {
        plain_http |= ct_tls_error_is_plain_http(e);
        if (ct_tls_error_is_real(e))
            last = e;
    }
    struct ssl_st *ssl = bufferevent_openssl_get_ssl(bev);
    const char *verify = ssl ? ct_tls_verify_error(ssl) : NULL;
    if (last)
        ct_tls_error_string(last, why, sizeof(why));
    else if (ct_tls_drain_errors(why, sizeof(why)) == 0)
        snprintf(why, sizeof(why), "%s",
                 (what & BEV_EVENT_EOF) ? "the client closed the connection during the handshake"
                                        : "I/O error during the handshake");
    /* the client's doing: INFO, rate-limited */
    ct_log_client("w%u c%llu %s TLS handshake failed: %s%s%s%s", h->w->id,
                  (unsigned long long)h->info.id, h->info.peer, why,
                  verify ? "; client certificate: " : "", verify ? verify : "",
                  plain_http ? " (plain HTTP on the TLS port: answered 400)" : "");
    if (!plain_http) {
        hs_close(h, CT_CLOSE_TLS_HANDSHAKE);
        return;
    }
    /* The clear-text 400 is written and the socket half-closed; closing now
     * with the rest of the request unread would reset the connection and
     * destroy the answer. Read the raw socket (TLS is done with) and drop
     * what comes, until the client's EOF or PLAIN_LINGER_MS. */
    int fd = bufferevent_getfd(bev);
    ct_tls_answer_plain_http(fd);
    bufferevent_disable(bev, EV_READ | EV_WRITE);
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    h->linger_ev = event_new(h->w->base, fd, EV_READ | EV_PERSIST, on_linger_read, h);
    event_add(h->linger_ev, NULL);
    ct_deadline_set(&h->dl, PLAIN_LINGER_MS);
}

/* The protocol is known: H's connection goes to it. */
static void hs_done(struct ct_hs *h, bool h2)
{
    struct ct_worker *w = h->w;
    struct ct_conn_info ci = h->info;
    ct_net_take_fn *take = h->take;
    ci.h2 = h2;
    hs_unlink_free(h); /* the count in w->nclients goes with the connection */
    hand_over(w, &ci, take);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct ct_hs *h = arg;
    CT_CHECK_OBJ(h, CT_HS_MAGIC);
    if (!(what & BEV_EVENT_CONNECTED)) {
        handshake_failed(h, what);
        return;
    }
    h->info.tls = bufferevent_openssl_get_ssl(bev);
    if (ct_tls_alpn_is_acme(h->info.tls)) {
        /* a TLS-ALPN-01 validation (RFC 8737 §3): the handshake was the
         * answer; no application data follows */
        CT_INFO("w%u c%llu %s: ACME TLS-ALPN-01 validation handshake answered", h->w->id,
                (unsigned long long)h->info.id, h->info.peer);
        ct_tls_close_notify(h->info.tls);
        hs_close(h, CT_CLOSE_RESP_DONE);
        return;
    }
    hs_done(h, ct_tls_alpn_is_h2(h->info.tls));
}

/* h2c with prior knowledge (listen[].h2c, RFC 9113 §3.3): HTTP/2 if the
 * connection opens with the preface, HTTP/1.1 from the first byte that
 * differs. Nothing is consumed: the protocol reads it all again. */
static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static void on_plain_read(struct bufferevent *bev, void *arg)
{
    struct ct_hs *h = arg;
    CT_CHECK_OBJ(h, CT_HS_MAGIC);
    struct evbuffer *in = bufferevent_get_input(bev);
    char head[sizeof(PREFACE) - 1];
    size_t n = CT_MIN(evbuffer_get_length(in), sizeof(head));
    evbuffer_copyout(in, head, n);
    if (memcmp(head, PREFACE, n) != 0)
        hs_done(h, false);
    else if (n == sizeof(head))
        hs_done(h, true);
}

static void on_plain_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct ct_hs *h = arg;
    CT_CHECK_OBJ(h, CT_HS_MAGIC);
    hs_close(h, (what & BEV_EVENT_EOF) ? CT_CLOSE_REM_CLOSE : CT_CLOSE_RX_ERROR);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct ct_hs *h = arg;
    CT_CHECK_OBJ(h, CT_HS_MAGIC);
    (void)fd, (void)what;
    if (!ct_deadline_due(&h->dl))
        return;
    /* Too slow a handshake, the linger is over, or (h2c) nothing came. */
    hs_close(h, h->info.lc->kind == CT_LISTEN_HTTP ? CT_CLOSE_IDLE_TIMEOUT : CT_CLOSE_TLS_HANDSHAKE);
}

void ct_net_accept(struct ct_worker *w, const struct ct_listener_conf *lc, int fd,
                   const struct sockaddr *sa, ct_net_take_fn *take)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct bufferevent *bev = make_bev(w, lc, fd);
    if (bev == NULL) {
        CT_ERR("w%u accept: cannot create a buffer event; connection dropped", w->id);
        return;
    }
    struct ct_conn_info ci = {.bev = bev, .lc = lc, .id = ++w->next_conn_id};
    peer_name(&ci, sa);
    w->nclients++;
    bufferevent_setwatermark(bev, EV_READ, 0, CT_READ_HIGH);
    /* libevent writes (and, for TLS, reads) at most 16 KiB per callback by
     * default: a large body would then move in 16 KiB syscalls. */
    bufferevent_set_max_single_write(bev, CT_BP_HIGH);
    bufferevent_set_max_single_read(bev, CT_BP_HIGH);
    bool plain = lc->kind == CT_LISTEN_HTTP;
    if (w->stats) {
        ct_stats_conn_open(w->stats);
        ct_stats_conn_proto(w->stats, plain ? CT_STATS_PROTO_http : CT_STATS_PROTO_https, true);
    }
    if (plain && !lc->h2c) {
        hand_over(w, &ci, take);
        return;
    }
    struct ct_hs *h = ct_xcalloc(1, sizeof(*h));
    h->magic = CT_HS_MAGIC;
    h->w = w;
    h->info = ci;
    h->take = take;
    ct_deadline_init(&h->dl, w->base, on_timer, h);
    ct_deadline_set(&h->dl, plain ? w->cf->limits.client_header_timeout_ms
                                  : lc->handshake_timeout_ms ? lc->handshake_timeout_ms : 10000);
    CT_LIST_INSERT_HEAD(&w->handshakes, h, link);
    if (plain)
        bufferevent_setcb(bev, on_plain_read, NULL, on_plain_event, h); /* h2c: which one? */
    else
        bufferevent_setcb(bev, NULL, NULL, on_event, h);
    /* The handshake writes through libevent's own events; EV_WRITE stays
     * off, as every protocol keeps it between flushes (net.h). */
    bufferevent_disable(bev, EV_WRITE);
    bufferevent_enable(bev, EV_READ);
}

void ct_net_drain_all(struct ct_worker *w)
{
    while (!CT_LIST_EMPTY(&w->handshakes))
        hs_close(CT_LIST_FIRST(&w->handshakes), CT_CLOSE_DRAIN);
}

void ct_net_abort_all(struct ct_worker *w)
{
    while (!CT_LIST_EMPTY(&w->handshakes)) {
        struct ct_hs *h = CT_LIST_FIRST(&w->handshakes);
        bufferevent_free(h->info.bev);
        hs_unlink_free(h);
        w->nclients--;
    }
}

int ct_net_listen_probe(struct sockaddr_storage *sa, socklen_t *salen)
{
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int one = 1, rc = 0;
    socklen_t len = sizeof(*sa);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* TIME_WAIT is no holder */
    if (bind(fd, (struct sockaddr *)sa, *salen) != 0 ||
        getsockname(fd, (struct sockaddr *)sa, &len) != 0)
        rc = errno;
    else
        *salen = len;
    close(fd);
    return rc;
}

const char *ct_net_bind_error(int err)
{
    if (err == EADDRINUSE)
        return "address in use (held by another socket; only this cachet's own workers "
               "share a port)";
    return strerror(err);
}
