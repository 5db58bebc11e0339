/*
 * proxy/h2/h2_serve.h: cachet's side of an HTTP/2 connection (issue 14):
 * the socket and its TLS after ALPN chose h2, the engine (proxy/h2/h2.h) fed
 * from it, and one struct ct_req per stream on the request core, carried by
 * ct_h2_proto (h2_resp.c). docs/proxy.md, "HTTP/2", has the picture.
 *
 * Worker thread only: a connection lives and dies on the worker that
 * accepted it.
 */
#ifndef CT_H2_SERVE_H
#define CT_H2_SERVE_H

#include <stdbool.h>

#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct ct_worker;
struct ct_listener_conf;

/* Take over INFO->bev (a TLS bufferevent whose handshake chose h2, owned
 * from now on: BEV_OPT_CLOSE_ON_FREE, callbacks and ct_io replaced), made by
 * proxy/net/accept.c, which counted it in w->nclients; the stats count it
 * as an h2 connection from now on (no longer https). Input already read
 * (the client's preface may come with the handshake's last flight) is
 * served at once. */
struct ct_conn_info;
void ct_h2s_take(struct ct_worker *w, const struct ct_conn_info *info);

/* Worker drain (shutdown) or RELOAD: every h2 connection of W's thread
 * sends GOAWAY NO_ERROR with its last stream id, finishes those streams and
 * closes, so the client's next requests go on a new connection under the
 * new configuration (nginx and HAProxy do the same when old processes
 * stop). A drain closes at once a connection that has not spoken yet; a
 * reload sends it GOAWAY too (last stream 0: it may retry at once). */
void ct_h2s_drain_all(struct ct_worker *w, bool reload);
/* Worker exit: free every h2 connection of W's thread without ceremony. */
void ct_h2s_abort_all(struct ct_worker *w);

#endif /* CT_H2_SERVE_H */
