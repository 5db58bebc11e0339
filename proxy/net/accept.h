/*
 * proxy/net/accept.h: an accepted connection until a protocol takes it
 * (h2o's lib/core/util.c accept + ALPN dispatch; nginx's ngx_ssl_handshake
 * then ngx_http_init_connection / ngx_http_v2_init).
 *
 * ct_net_accept() gives the socket TCP_NODELAY and a bufferevent, an id
 * (w->next_conn_id) and a peer name, counts it in w->nclients and in the
 * connection counters (its listener's scheme), and for HTTPS runs the TLS
 * handshake under the listener's handshake_timeout: a failure is logged
 * with OpenSSL's reason and closed; plain HTTP on the TLS port is answered
 * 400 in clear text (nginx's 497) and the rest of it read and dropped for a
 * moment, so the answer is not destroyed by a reset. On an HTTP listener
 * with h2c (listen[].h2c) the first bytes decide: the HTTP/2 connection
 * preface (prior knowledge, RFC 9113 §3.3) or anything else (HTTP/1.1),
 * under the header timeout, nothing consumed. Then TAKE(W, INFO)
 * hands the connection to the protocol ALPN chose (INFO->h2) or HTTP/1.1:
 * the bufferevent (callbacks cleared, input kept: a request may have come
 * with the handshake's last flight) and the place in w->nclients are the
 * taker's from then on.
 *
 * Owned here: the connections in their handshake (w->handshakes), closed
 * by a drain and freed at worker exit. Worker thread only.
 */
#ifndef CT_PROXY_NET_ACCEPT_H
#define CT_PROXY_NET_ACCEPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct bufferevent;
struct ct_worker;
struct ct_listener_conf;
struct ssl_st;

struct ct_conn_info {
    struct bufferevent *bev;           /* BEV_OPT_CLOSE_ON_FREE; TLS: owns the SSL */
    const struct ct_listener_conf *lc;
    uint64_t id;                       /* w->next_conn_id at accept */
    char peer[64];                     /* "ip:port" for logs */
    size_t peer_ip_len;                /* the "ip" part, for X-Forwarded-For */
    struct ssl_st *tls;                /* HTTPS: the session; NULL: plain */
    bool h2;                           /* ALPN chose h2 */
};

typedef void ct_net_take_fn(struct ct_worker *w, const struct ct_conn_info *info);

/* Take over accepted FD from listener LC (owns the fd from now on). */
void ct_net_accept(struct ct_worker *w, const struct ct_listener_conf *lc, int fd,
                   const struct sockaddr *sa, ct_net_take_fn *take);
/* A listener with proxy_protocol (pp_accept.c): FD's PROXY header first,
 * from LC's allowed peers only (others are closed and logged), then
 * ct_net_accept() with the header's source address. */
void ct_pp_accept(struct ct_worker *w, const struct ct_listener_conf *lc, int fd,
                  const struct sockaddr *sa, socklen_t salen, ct_net_take_fn *take);
/* Before the workers bind SA with SO_REUSEPORT: bind it alone (SO_REUSEADDR
 * only, no listen) and let go, so a port another process holds fails here
 * with EADDRINUSE (even one that set SO_REUSEPORT too: Linux lets any
 * socket of the same user join its group, and our workers would silently
 * take a share of its connections, issue 40). Port 0 becomes the port the
 * kernel picked, written into SA and *SALEN. 0 or an errno. Any thread. */
int ct_net_listen_probe(struct sockaddr_storage *sa, socklen_t *salen);
/* ERR (an errno of a bind) in words for the error log: EADDRINUSE is
 * "address in use" with who may share a port. Static storage. */
const char *ct_net_bind_error(int err);
/* Draining or worker exit: close the connections still waiting for their
 * header (they sent no request yet). */
void ct_pp_abort_all(struct ct_worker *w);
/* Draining: close the connections still in their handshake. */
void ct_net_drain_all(struct ct_worker *w);
/* Worker exit: free them without ceremony. */
void ct_net_abort_all(struct ct_worker *w);

#endif /* CT_PROXY_NET_ACCEPT_H */
