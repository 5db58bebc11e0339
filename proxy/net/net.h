/*
 * proxy/net/net.h: the transport (ct_net): a connection's reads, the write
 * path(s) and TLS I/O after the handshake, over a libevent bufferevent.
 * It knows fds, bufferevents and SSL*, and nothing of HTTP.
 */
#ifndef CT_PROXY_NET_H
#define CT_PROXY_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

struct event_base;
struct event;
struct bufferevent;
struct ssl_st;

/* ---- tuning that is not configuration ------------------------------------ */

/* Back-pressure: stop reading a source once the sink's output holds HIGH
 * bytes, resume when it has drained to LOW (le-proxy readcb/drained_writecb).
 * With 256 KiB per direction a connection pins at most ~0.5 MiB of bodies. */
#define CT_BP_HIGH (256 * 1024)
#define CT_BP_LOW (64 * 1024)
/* libevent stops reading a socket whose input holds this much. */
#define CT_READ_HIGH (256 * 1024)

/* ---- connection reads (io.c) ---------------------------------------------- */

/* The read side of one connection, and both sides of a TLS connection once
 * its handshake is done (see io.c for why not the bufferevent's own I/O).
 * Embedded in its owner; the callbacks have the bufferevent signatures and
 * get the owner's ARG; the write callback and write watermarks are the
 * bufferevent's own (bufferevent_setcb / bufferevent_setwatermark). */
struct ct_io {
    struct bufferevent *bev;
    struct event *rev; /* plain TCP: our read event; NULL: the bufferevent reads (TLS) */
    struct event *wev; /* TLS after the take-over: our write event (made when first blocked) */
    struct ssl_st *ssl; /* TLS after the take-over (the bufferevent still owns it) */
    bool reading;
    bool big_reads;   /* the last read filled CT_READ_SMALL: reserve CT_READ_ROOM (io.c) */
    bool rd_wants_w;  /* TLS: an SSL_read needs the socket writable */
    uint8_t werr;     /* TLS: 1 write error to report, 2 reported (writes stop) */
    size_t wretry;    /* TLS: length of the SSL_write that got WANT_WRITE (0: none) */
    struct event *tev; /* our reads: the read idle timeout (io.c rd_deadline; made on first use) */
    uint64_t rd_deadline_ms, tev_at_ms; /* its deadline, when it fires (monotonic ms; 0: none) */
    uint64_t read_ms, write_ms;
    void (*readcb)(struct bufferevent *, void *);
    void (*eventcb)(struct bufferevent *, short, void *);
    void *arg;
};

/* Attach to BEV (its fd must exist). PLAIN: read with our own event. */
void ct_io_attach(struct ct_io *io, struct event_base *base, struct bufferevent *bev, bool plain,
                  void (*readcb)(struct bufferevent *, void *),
                  void (*eventcb)(struct bufferevent *, short, void *), void *arg);
/* Before bufferevent_free(). */
void ct_io_detach(struct ct_io *io);
/* Start or stop reading (idempotent). */
void ct_io_read(struct ct_io *io, bool on);
/* Idle read timeout and write timeout in ms (0: none). */
void ct_io_timeouts(struct ct_io *io, uint64_t read_ms, uint64_t write_ms);

/* The write path. Output is queued on the bufferevent's output evbuffer and
 * written by ct_io_flush() at once: bufferevents are kept with EV_WRITE
 * disabled while their output is empty, so what was queued leaves with no
 * write event and no extra loop turn (TLS: one SSL_write per 16 KiB, so a
 * head and a small body share one record), and only what the socket refuses
 * goes to libevent (EV_WRITE on: its write timeout and error event apply);
 * the owner's write callback disables EV_WRITE again once the output is
 * empty. A no-op while EV_WRITE is enabled (pending data, a TLS handshake).
 * TLS connections taken over (see io.c) never use the bufferevent's writes:
 * their own write event is armed while the socket refuses, and nothing may
 * enable EV_WRITE on them. */
void ct_io_flush(struct ct_io *io);
/* Over the high mark: write what the socket takes now. True if that brought
 * the output under CT_BP_LOW (go on); false if the rest is queued with
 * libevent, whose write callback (at the low mark) resumes the source.
 * Pausing without this flush could wait for a write callback that never
 * comes: a direct write may empty the output at once. */
bool ct_io_flush_under_low(struct ct_io *io);
/* Closing: flush, and hand any rest (and the write callback once it is all
 * out) to the write event. */
void ct_io_flush_linger(struct ct_io *io);
/* Direct writes, past the evbuffer. A plain-TCP connection with nothing
 * queued and EV_WRITE off may be written to at once: ct_io_can_write_now()
 * says so. ct_io_writev() then makes one writev(2) of IOV[0..N) and queues
 * on the output, in order, what the socket did not take (EAGAIN and errors
 * alike: all of it): piece I's rest through QUEUE(ARG, I, P, LEN) when QUEUE
 * is given (e.g. by reference), else copied; then libevent takes over
 * (EV_WRITE on, as after ct_io_flush). No allocation and no buffer callback
 * when the socket takes it all. */
struct iovec;
typedef void ct_io_queue_cb(void *arg, int i, const char *p, size_t len);
bool ct_io_can_write_now(const struct ct_io *io);
void ct_io_writev(struct ct_io *io, const struct iovec *iov, int n, ct_io_queue_cb *queue,
                  void *arg);
/* The socket (sendfile(2), shutdown(2)), TLS taken over or not. */
int ct_io_fd(const struct ct_io *io);
/* Bytes the kernel holds that it has not sent yet (SIOCOUTQNSD; 0 on error). */
int ct_io_unsent(const struct ct_io *io);
/* Read/write timeouts of BEV in ms (0: none), before ct_io_attach(). */
void ct_io_bev_timeouts(struct bufferevent *bev, uint64_t read_ms, uint64_t write_ms);

#endif /* CT_PROXY_NET_H */
