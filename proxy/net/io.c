/*
 * proxy/net/io.c: the read side of a connection, over a bufferevent, and both
 * sides of a TLS connection once its handshake is done.
 *
 * Why not the bufferevent's own reads for plain TCP: libevent 2.1 reads a
 * socket at most 4096 bytes at a time (EVBUFFER_MAX_READ) and asks the kernel
 * how much is pending (ioctl FIONREAD) before every read. On the hot path
 * that is one extra syscall per read, and a 1 GiB body takes 262144 reads.
 * So for plain TCP we keep the bufferevent for writes, write timeouts and
 * its event callback, and read with our own persistent EV_READ event: one
 * readv of up to CT_READ_CHUNK straight into the bufferevent's input buffer
 * (evbuffer_reserve_space/commit_space: no copy; see on_readable for the
 * part past CT_READ_ROOM), then the same read
 * callback, and the same event callback for EOF, errors and read timeouts
 * (BEV_EVENT_READING | EOF/ERROR/TIMEOUT), so the callers cannot tell.
 *
 * TLS: libevent's bufferevent_openssl does the handshake and reads until the
 * connection first goes back to reading a request (ct_io_read(on) with the
 * handshake done and the output empty, e.g. after the first response). From
 * then on the socket is ours both ways (tls_take_over):
 * - reads: bufferevent_openssl reads each record with two read(2)s (its
 *   5-byte header, then its body); with read-ahead OpenSSL takes what the
 *   socket has in one, and we stop calling SSL_read once OpenSSL holds
 *   nothing more (SSL_has_pending) instead of reading until EAGAIN. Bytes
 *   OpenSSL already holds when reading is turned back on are read without
 *   waiting for the socket (event_active).
 * - writes: ct_io_flush() writes the output at once, one
 *   SSL_write per record of up to 16 KiB; our write event is armed only
 *   while the socket refuses (with the send timeout), and calls the
 *   bufferevent's write callback once the output is down to its low
 *   watermark, as libevent would (back-pressure, close after flush).
 *   bufferevent_openssl added and removed its write event around every
 *   response (2 epoll_ctl + a loop turn); now a keep-alive HTTPS response
 *   costs what an HTTP one does: read(2) + write(2).
 * Same callbacks, same EOF/ERROR/TIMEOUT events (READING or WRITING), and
 * errors are reported from the event loop, never under the caller. An
 * SSL_read that needs to write waits for writability on our write event.
 * Until the take-over, every function here falls back to
 * bufferevent_enable/disable/set_timeouts.
 *
 * Input is bounded: when the input buffer holds CT_READ_HIGH bytes nobody
 * consumed (pipelined requests behind a slow response), reading stops until
 * the owner turns it on again after consuming.
 */
#include <errno.h>
#include <limits.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/bufferevent_struct.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proxy/net/deadline.h"
#include "proxy/net/net.h"

#define CT_READ_CHUNK (128 * 1024)
/* What on_readable reserves in the input buffer itself: a 16 KiB chain once
 * libevent adds its header (it rounds a chain up to a power of two), for
 * most reads (requests, small responses) the one allocation they need. */
#define CT_READ_ROOM (16 * 1024 - 256)
/* What a read reserves while reads are small (requests, small responses):
 * libevent makes that a 1 KiB chain with its header, which glibc's
 * per-thread cache hands out and takes back in a few instructions, where a
 * 16 KiB chain went through the arena's bins: ~340 instructions of
 * malloc/free per keep-alive request (bench/micro/reqcost.sh). A read that
 * fills it switches the connection to CT_READ_ROOM until one does not. */
#define CT_READ_SMALL 768
/* Room for a TLS record per SSL_read, less libevent's chain header: a full
 * 16 KiB reservation became a 32 KiB chain (rounded up to a power of two
 * with the header); the last 256 bytes of a full record are read by the
 * next turn of the loop (SSL_has_pending), into the next chain. */
#define CT_TLS_READ_CHUNK CT_READ_ROOM

static struct timeval tv_ms(uint64_t ms)
{
    return (struct timeval){(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
}

/* The read idle timeout (no byte for read_ms while reading) is a deadline
 * kept lazily on its own timer, as the client's is (client.c deadline_set):
 * a persistent read event with a timeout moves in libevent's timer heap on
 * every read, and each ct_io_timeouts() moved it again. Now a read only
 * notes the time (monotonic clock), the timer is re-armed only when a
 * deadline comes before the time it is set for, and one that fires early is
 * set again for the rest. */

static void on_read_timer(evutil_socket_t fd, short what, void *arg);

static void rd_deadline(struct ct_io *io)
{
    if (io->read_ms == 0) {
        io->rd_deadline_ms = 0;
        return;
    }
    io->rd_deadline_ms = ct_now_ms() + io->read_ms;
    if (io->tev_at_ms != 0 && io->tev_at_ms <= io->rd_deadline_ms)
        return; /* fires first: on_read_timer sets it again for the rest */
    if (io->tev == NULL) { /* made on first use: HTTP/2 reads have no idle timeout */
        io->tev = evtimer_new(bufferevent_get_base(io->bev), on_read_timer, io);
        CT_ASSERT(io->tev != NULL);
    }
    struct timeval tv = tv_ms(io->read_ms);
    evtimer_add(io->tev, &tv);
    io->tev_at_ms = io->rd_deadline_ms;
}

static void stop(struct ct_io *io)
{
    if (io->reading) {
        event_del(io->rev);
        io->reading = false;
    }
    io->rd_deadline_ms = 0; /* the timer stays armed; its firing is ignored */
}

static void on_read_timer(evutil_socket_t fd, short what, void *arg)
{
    struct ct_io *io = arg;
    (void)fd;
    (void)what;
    io->tev_at_ms = 0;
    if (!io->reading || io->rd_deadline_ms == 0)
        return;
    uint64_t now = ct_now_ms();
    if (now < io->rd_deadline_ms) {
        struct timeval tv = tv_ms(io->rd_deadline_ms - now);
        evtimer_add(io->tev, &tv);
        io->tev_at_ms = io->rd_deadline_ms;
        return;
    }
    stop(io);
    io->eventcb(io->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, io->arg); /* may free IO */
}

static void on_tls_readable(evutil_socket_t fd, short what, void *arg);

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct ct_io *io = arg;
    struct evbuffer *in = bufferevent_get_input(io->bev);
    (void)what; /* EV_READ only: the timeout is on_read_timer's */

    if (evbuffer_get_length(in) >= CT_READ_HIGH) {
        stop(io); /* the owner turns reading on again once it consumed */
        return;
    }
    /* Reserving all of CT_READ_CHUNK in the buffer made libevent allocate a
     * 256 KiB chain for nearly every read (a 300-byte request included):
     * under the soak (1100 connections) that was 9000 mallocs of 256 KiB a
     * second, the workers' arenas swinging by 16 MiB between trims (issue
     * 19). So the buffer gets CT_READ_ROOM, and what a big read brings past
     * it lands in this thread's scratch and is copied in after: still one
     * readv per event, and the copy only for reads past 16 KiB (bodies,
     * which are copied again into the cache or out anyway). */
    static _Thread_local char spill[CT_READ_CHUNK - CT_READ_ROOM];
    struct evbuffer_iovec v[3];
    /* The bufferevent froze the input's end so only it appends; we are its
     * reader now, so we unfreeze around our own append. */
    evbuffer_unfreeze(in, 0);
    int nv = evbuffer_reserve_space(in, io->big_reads ? CT_READ_ROOM : CT_READ_SMALL, v, 2);
    CT_ASSERT(nv > 0);
    size_t room = 0;
    for (int i = 0; i < nv; i++)
        room += v[i].iov_len;
    v[nv] = (struct evbuffer_iovec){.iov_base = spill, .iov_len = sizeof(spill)};
    /* evbuffer_iovec is struct iovec on POSIX (event2/buffer.h). */
    ssize_t n = readv(fd, (struct iovec *)v, nv + 1);
    if (n > 0) {
        io->big_reads = (size_t)n > CT_READ_SMALL;
        size_t left = CT_MIN((size_t)n, room);
        int used = 0;
        for (int i = 0; i < nv && left > 0; i++, used++) {
            v[i].iov_len = CT_MIN(v[i].iov_len, left);
            left -= v[i].iov_len;
        }
        int rc = evbuffer_commit_space(in, v, used);
        CT_ASSERT(rc == 0);
        /* In pieces of CT_READ_ROOM: one evbuffer_add of the whole rest
         * made a 128 KiB chain for each big read (one per 100 KiB body in
         * the soak), which glibc's dynamic mmap threshold then moved into
         * the arenas, where they spread; 16 KiB chains come and go from
         * the ordinary bins (issue 19, memory.md). */
        for (size_t at = room; at < (size_t)n; at += CT_READ_ROOM)
            evbuffer_add(in, spill + (at - room), CT_MIN((size_t)n - at, (size_t)CT_READ_ROOM));
        evbuffer_freeze(in, 0);
        if (io->read_ms)
            rd_deadline(io);
        io->readcb(io->bev, io->arg); /* may free IO */
        return;
    }
    evbuffer_commit_space(in, v, 0);
    evbuffer_freeze(in, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    stop(io);
    io->eventcb(io->bev, BEV_EVENT_READING | (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR), io->arg);
}

static bool is_tls(const struct ct_io *io) { return io->ssl != NULL; }

/* OpenSSL's SSL_get_error() reads this thread's error queue, so it must be
 * empty before each SSL call; it nearly always is, and clearing an empty
 * queue costs more (16 slots) than looking. */
static void err_clear(void)
{
    if (ERR_peek_error() != 0)
        ERR_clear_error();
}

static void on_tls_writable(evutil_socket_t fd, short what, void *arg);

/* The write event is made when first needed: most connections' sockets
 * never refuse a write, and an event is 136 bytes each would hold. */
static struct event *wev_of(struct ct_io *io)
{
    if (io->wev == NULL) {
        io->wev = event_new(event_get_base(io->rev), event_get_fd(io->rev),
                            EV_WRITE | EV_PERSIST, on_tls_writable, io);
        CT_ASSERT(io->wev != NULL);
    }
    return io->wev;
}

static bool wev_pending(const struct ct_io *io)
{
    return io->wev != NULL && event_pending(io->wev, EV_WRITE, NULL);
}

static void wev_arm(struct ct_io *io)
{
    struct timeval tv = tv_ms(io->write_ms);
    event_add(wev_of(io), io->write_ms ? &tv : NULL);
}

/* SSL_read into the input until OpenSSL holds nothing more: one read(2) per
 * burst of records with read-ahead, no read that only returns EAGAIN. */
static void on_tls_readable(evutil_socket_t fd, short what, void *arg)
{
    struct ct_io *io = arg;
    struct evbuffer *in = bufferevent_get_input(io->bev);
    SSL *ssl = io->ssl;
    (void)fd;

    (void)what; /* EV_READ only: the timeout is on_read_timer's */
    if (!io->reading)
        return; /* made active by ct_io_read(on), turned off since */
    size_t got = 0;
    int err = SSL_ERROR_NONE;
    do {
        if (evbuffer_get_length(in) >= CT_READ_HIGH) {
            /* The owner turns reading on again once it consumed; then
             * ct_io_read() also serves what OpenSSL still holds. */
            stop(io);
            if (got == 0)
                return;
            break;
        }
        struct evbuffer_iovec v;
        if (evbuffer_reserve_space(in, io->big_reads ? CT_TLS_READ_CHUNK : CT_READ_SMALL, &v, 1) !=
            1) {
            err = SSL_ERROR_SSL;
            break;
        }
        err_clear();
        int r = SSL_read(ssl, v.iov_base, (int)CT_MIN(v.iov_len, (size_t)INT_MAX));
        if (r <= 0) {
            err = SSL_get_error(ssl, r);
            evbuffer_commit_space(in, &v, 0);
            break;
        }
        io->big_reads = (size_t)r >= CT_MIN(v.iov_len, (size_t)CT_READ_SMALL);
        v.iov_len = (size_t)r;
        evbuffer_commit_space(in, &v, 1);
        got += (size_t)r;
    } while (SSL_has_pending(ssl));
    if (got > 0) {
        /* An error or EOF behind the data shows again on the next call. */
        if (io->read_ms && io->reading)
            rd_deadline(io);
        io->readcb(io->bev, io->arg); /* may free IO */
        return;
    }
    switch (err) {
    case SSL_ERROR_NONE:
    case SSL_ERROR_WANT_READ:
        return;
    case SSL_ERROR_WANT_WRITE:
        /* The read has something to send (a post-handshake message) and
         * the socket is full: retried when it is writable (on_tls_writable). */
        io->rd_wants_w = true;
        if (!wev_pending(io))
            wev_arm(io);
        return;
    default:
        /* As bufferevent_openssl reports it: close_notify is an EOF, a
         * truncation or a protocol error an error. */
        ERR_clear_error();
        stop(io);
        io->eventcb(io->bev, BEV_EVENT_READING | (err == SSL_ERROR_ZERO_RETURN ? BEV_EVENT_EOF
                                                                                : BEV_EVENT_ERROR),
                    io->arg);
        return;
    }
}

/* TLS writes: one SSL_write per record (up to 16 KiB of the output's first
 * bytes), so a response's head and a small body leave as one record and one
 * write(2). When the record spans evbuffer chunks (a head, then a body) its
 * bytes are gathered into a per-thread buffer; a large body's record is
 * written straight from its chunk (a cache object's memory: no copy beyond
 * the encryption). Output is drained only once SSL_write took it, so after
 * WANT_WRITE the retry offers the same bytes again, at least as many
 * (OpenSSL's rule; the buffer may move: libevent set
 * SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER). Returns CT_OK (output empty),
 * CT_EAGAIN (the socket is full) or CT_EIO; adds what was sent to *WROTE. */
#define CT_TLS_RECORD (16 * 1024)

static int tls_write(struct ct_io *io, size_t *wrote)
{
    static _Thread_local unsigned char gather[CT_TLS_RECORD];
    struct evbuffer *out = bufferevent_get_output(io->bev);
    size_t len;
    while ((len = evbuffer_get_length(out)) > 0) {
        size_t n = CT_MIN(len, (size_t)CT_TLS_RECORD);
        if (n < io->wretry) {
            /* The owner dropped output under a record OpenSSL holds
             * half-sent (it abandoned the response): no way to go on. */
            return CT_EIO;
        }
        struct evbuffer_iovec v;
        const void *p = gather;
        if (evbuffer_peek(out, (ev_ssize_t)n, NULL, &v, 1) >= 1 && v.iov_len >= n)
            p = v.iov_base;
        else
            evbuffer_copyout(out, gather, n);
        err_clear();
        int r = SSL_write(io->ssl, p, (int)n);
        if (r > 0) {
            io->wretry = 0;
            evbuffer_drain(out, (size_t)r);
            *wrote += (size_t)r;
            continue;
        }
        int err = SSL_get_error(io->ssl, r);
        if (err == SSL_ERROR_WANT_WRITE) {
            io->wretry = n;
            return CT_EAGAIN;
        }
        /* SSL_ERROR_WANT_READ cannot happen: renegotiation is off
         * (tls_ctx.c), so a server's SSL_write never has to read first.
         * Taken as an error rather than a wait that might never end. */
        ERR_clear_error();
        return CT_EIO;
    }
    return CT_OK;
}

/* Report a write error once, from the event loop; writes stop for good. */
static void write_failed(struct ct_io *io)
{
    io->werr = 2;
    event_del(io->wev);
    io->eventcb(io->bev, BEV_EVENT_WRITING | BEV_EVENT_ERROR, io->arg); /* may free IO */
}

/* The socket is writable again (or the write timeout expired): go on, and
 * tell the owner once the output is down to its low watermark, as a
 * bufferevent's write callback does. */
static void on_tls_writable(evutil_socket_t fd, short what, void *arg)
{
    struct ct_io *io = arg;
    (void)fd;
    if (io->werr == 1) {
        write_failed(io);
        return;
    }
    if (io->werr != 0) {
        event_del(io->wev);
        return;
    }
    if (what & EV_TIMEOUT) {
        event_del(io->wev);
        io->eventcb(io->bev, BEV_EVENT_WRITING | BEV_EVENT_TIMEOUT, io->arg);
        return;
    }
    if (io->rd_wants_w) {
        io->rd_wants_w = false;
        if (io->reading)
            event_active(io->rev, EV_READ, 1);
    }
    size_t wrote = 0;
    int rc = tls_write(io, &wrote);
    if (rc == CT_EIO) {
        write_failed(io);
        return;
    }
    if (rc == CT_OK && !io->rd_wants_w)
        event_del(io->wev);
    if (wrote == 0)
        return;
    size_t low = 0;
    bufferevent_data_cb writecb = NULL;
    void *cbarg = NULL;
    bufferevent_getwatermark(io->bev, EV_WRITE, &low, NULL);
    bufferevent_getcb(io->bev, NULL, &writecb, NULL, &cbarg);
    if (writecb != NULL && evbuffer_get_length(bufferevent_get_output(io->bev)) <= low)
        writecb(io->bev, cbarg); /* may free IO */
}

/* TLS after the take-over: write the output now (one SSL_write per record
 * of up to 16 KiB), arm the write event for what the socket refuses, and
 * report errors from the event loop (never under the caller). False when IO
 * does not own the writes (plain TCP, or TLS before the take-over). */
static bool owned_flush(struct ct_io *io)
{
    if (io->ssl == NULL)
        return false;
    if (io->werr != 0 || wev_pending(io))
        return true; /* dead, or waiting for the socket: on_tls_writable goes on */
    size_t wrote = 0;
    int rc = tls_write(io, &wrote);
    if (rc == CT_EAGAIN) {
        wev_arm(io);
    } else if (rc == CT_EIO) {
        io->werr = 1; /* reported from the loop: no callback under our caller */
        event_active(wev_of(io), EV_WRITE, 1);
    }
    return true;
}

/* Point one of the bufferevent's own events at fd -1, callbacks unchanged:
 * libevent keeps negative fds out of epoll, so it never fires again. */
static void park(struct event *ev, struct event_base *base)
{
    event_assign(ev, base, -1, event_get_events(ev), event_get_callback(ev),
                 event_get_callback_arg(ev));
}

/* The handshake is done, libevent was reading and has nothing to write: the
 * socket is ours from now on, both ways. bufferevent_openssl's output
 * callback adds its write event whenever the output goes from empty to not,
 * EV_WRITE enabled or not, and its write callback deletes it again: two
 * epoll_ctl and an extra loop turn per response even when we wrote it all
 * at once. So its two events are parked on fd -1 (struct bufferevent's
 * ev_read/ev_write, event2/bufferevent_struct.h; not bufferevent_setfd(),
 * which in 2.1.12 resets the SSL to its accepting state), where adding them
 * costs no syscall and they never fire; its timeouts are cleared, so they
 * never fire as timers either. The bufferevent keeps its buffers, its
 * callbacks, its watermarks and the SSL (with its socket BIO, so kTLS state
 * is kept too), and still frees the SSL and closes the fd (taken from that
 * BIO) in bufferevent_free(). From now on nothing may enable EV_READ or
 * EV_WRITE on it: ct_io_flush() and ct_io_read() come here. Returns false, with
 * libevent still reading, if it cannot take over yet. */
static bool tls_take_over(struct ct_io *io)
{
    struct bufferevent *bev = io->bev;
    struct event_base *base = bufferevent_get_base(bev);
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    evutil_socket_t fd = bufferevent_getfd(bev);
    bufferevent_disable(bev, EV_READ | EV_WRITE);
    if (event_pending(&bev->ev_read, EV_READ | EV_WRITE | EV_TIMEOUT, NULL) ||
        event_pending(&bev->ev_write, EV_READ | EV_WRITE | EV_TIMEOUT, NULL)) {
        /* libevent is in the middle of something (a read blocked on a
         * write): leave it reading, try again on the next request. */
        bufferevent_enable(bev, EV_READ);
        return false;
    }
    bufferevent_set_timeouts(bev, NULL, NULL);
    park(&bev->ev_read, base);
    park(&bev->ev_write, base);
    CT_ASSERT(bufferevent_getfd(bev) < 0);
    SSL_set_read_ahead(ssl, 1);
    io->ssl = ssl;
    io->rev = event_new(base, fd, EV_READ | EV_PERSIST, on_tls_readable, io);
    CT_ASSERT(io->rev != NULL);
    io->reading = false;
    return true;
}

static bool tls_can_take_over(const struct ct_io *io)
{
    SSL *ssl = bufferevent_openssl_get_ssl(io->bev);
    return ssl != NULL && SSL_is_init_finished(ssl) && bufferevent_getfd(io->bev) >= 0 &&
           evbuffer_get_length(bufferevent_get_output(io->bev)) == 0 &&
           !(bufferevent_get_enabled(io->bev) & EV_WRITE);
}

void ct_io_attach(struct ct_io *io, struct event_base *base, struct bufferevent *bev, bool plain,
                  void (*readcb)(struct bufferevent *, void *),
                  void (*eventcb)(struct bufferevent *, short, void *), void *arg)
{
    io->bev = bev;
    io->readcb = readcb;
    io->eventcb = eventcb;
    io->arg = arg;
    io->reading = io->rd_wants_w = io->big_reads = false;
    io->werr = 0;
    io->wretry = 0;
    io->ssl = NULL;
    io->wev = NULL;
    io->rd_deadline_ms = io->tev_at_ms = 0;
    io->tev = NULL;
    io->read_ms = io->write_ms = 0;
    io->rev = plain ? event_new(base, bufferevent_getfd(bev), EV_READ | EV_PERSIST, on_readable, io)
                    : NULL;
    CT_ASSERT(!plain || io->rev != NULL);
}

void ct_io_detach(struct ct_io *io)
{
    if (io->rev) {
        event_free(io->rev); /* deletes it first */
        io->rev = NULL;
    }
    if (io->wev) {
        event_free(io->wev);
        io->wev = NULL;
    }
    if (io->tev) {
        event_free(io->tev);
        io->tev = NULL;
    }
    io->rd_deadline_ms = io->tev_at_ms = 0;
    io->ssl = NULL;
    io->reading = false;
}

void ct_io_read(struct ct_io *io, bool on)
{
    if (io->rev == NULL && on && tls_can_take_over(io))
        (void)tls_take_over(io);
    if (io->rev == NULL) {
        if (on)
            bufferevent_enable(io->bev, EV_READ);
        else
            bufferevent_disable(io->bev, EV_READ);
        return;
    }
    if (!on) {
        stop(io);
        return;
    }
    if (io->reading)
        return;
    event_add(io->rev, NULL);
    io->reading = true;
    rd_deadline(io);
    /* Records OpenSSL already holds will not make the socket readable. */
    if (is_tls(io) && SSL_has_pending(io->ssl))
        event_active(io->rev, EV_READ, 1);
}

void ct_io_timeouts(struct ct_io *io, uint64_t read_ms, uint64_t write_ms)
{
    if (io->rev == NULL) {
        ct_io_bev_timeouts(io->bev, read_ms, write_ms);
        io->read_ms = read_ms; /* for a TLS take-over */
        io->write_ms = write_ms;
        return;
    }
    if (write_ms != io->write_ms) {
        io->write_ms = write_ms;
        if (!is_tls(io)) {
            struct timeval w = tv_ms(write_ms);
            bufferevent_set_timeouts(io->bev, NULL, write_ms ? &w : NULL);
        } else if (wev_pending(io)) {
            if (write_ms)
                wev_arm(io); /* re-arms the timeout from now, as bufferevents do */
            else
                event_remove_timer(io->wev);
        }
    }
    if (read_ms != io->read_ms) {
        io->read_ms = read_ms;
        if (io->reading)
            rd_deadline(io); /* from now, as event_add would */
    }
}

/* ---- the write path ------------------------------------------------------------
 *
 * TLS before io.c took the connection over (the first response on it; see
 * owned_flush for all later ones): one SSL_write per record's worth of
 * output, so a response's head and body (separate evbuffer chunks) leave as
 * one record and one write(2), not one of each per chunk as
 * bufferevent_openssl's do_write does. The first CT_TLS_WRITE bytes are
 * made contiguous (a copy only when they span chunks). Whatever the socket
 * does not take (WANT_WRITE; SSL_write is then retried by libevent from the
 * same first bytes, a buffer at least as long, which OpenSSL allows with
 * SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, set by libevent) and any error go to
 * libevent by enabling EV_WRITE: its write timeout, its error event and
 * OpenSSL's error queue then apply as before, on the next loop turn, so no
 * callback runs under our caller. */
#define CT_TLS_WRITE (16 * 1024)

static void tls_flush(struct bufferevent *bev, SSL *ssl)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    size_t len;
    while ((len = evbuffer_get_length(out)) > 0) {
        size_t n = CT_MIN(len, (size_t)CT_TLS_WRITE);
        unsigned char *p = evbuffer_pullup(out, (ev_ssize_t)n);
        if (p == NULL)
            break;
        ERR_clear_error();
        int r = SSL_write(ssl, p, (int)n);
        if (r <= 0)
            break; /* WANT_WRITE/WANT_READ or an error: libevent's to handle */
        evbuffer_drain(out, (size_t)r);
    }
    if (evbuffer_get_length(out) > 0)
        bufferevent_enable(bev, EV_WRITE);
}

void ct_io_flush(struct ct_io *io)
{
    struct bufferevent *bev = io->bev;
    struct evbuffer *out = bufferevent_get_output(bev);
    if (owned_flush(io))
        return; /* io.c writes this connection */
    if ((bufferevent_get_enabled(bev) & EV_WRITE) || evbuffer_get_length(out) == 0)
        return; /* libevent is already on it, or nothing to do */
    SSL *ssl = bufferevent_openssl_get_ssl(bev); /* NULL: not a TLS bufferevent */
    if (ssl != NULL) {
        tls_flush(bev, ssl);
        return;
    }
    /* A socket bufferevent keeps its output's front frozen so that only it
     * drains it; its own write callback unfreezes around the write, and so
     * do we (same public calls, same order). */
    evbuffer_unfreeze(out, 1);
    int n = evbuffer_write(out, bufferevent_getfd(bev));
    evbuffer_freeze(out, 1);
    /* The rest, or the error, go through libevent: its write timeout and
     * error event then apply as usual. */
    if (n < 0 || evbuffer_get_length(out) > 0)
        bufferevent_enable(bev, EV_WRITE);
}

bool ct_io_flush_under_low(struct ct_io *io)
{
    ct_io_flush(io);
    return evbuffer_get_length(bufferevent_get_output(io->bev)) < CT_BP_LOW;
}

void ct_io_flush_linger(struct ct_io *io)
{
    if (!owned_flush(io)) /* TLS taken over: io.c writes, never the bufferevent */
        bufferevent_enable(io->bev, EV_WRITE);
}

void ct_io_bev_timeouts(struct bufferevent *bev, uint64_t read_ms, uint64_t write_ms)
{
    struct timeval r = tv_ms(read_ms), wr = tv_ms(write_ms);
    bufferevent_set_timeouts(bev, read_ms ? &r : NULL, write_ms ? &wr : NULL);
}

bool ct_io_can_write_now(const struct ct_io *io)
{
    struct bufferevent *bev = io->bev;
    return !(bufferevent_get_enabled(bev) & EV_WRITE) &&
           evbuffer_get_length(bufferevent_get_output(bev)) == 0 &&
           bufferevent_openssl_get_ssl(bev) == NULL; /* TLS: records, see ct_io_flush */
}

void ct_io_writev(struct ct_io *io, const struct iovec *iov, int n, ct_io_queue_cb *queue,
                  void *arg)
{
    struct bufferevent *bev = io->bev;
    struct evbuffer *out = bufferevent_get_output(bev);
    ssize_t k = writev(bufferevent_getfd(bev), iov, n);
    size_t sent = k > 0 ? (size_t)k : 0;
    for (int i = 0; i < n; i++) {
        size_t len = iov[i].iov_len, done = CT_MIN(sent, len);
        sent -= done;
        if (done == len)
            continue;
        const char *p = (const char *)iov[i].iov_base + done;
        if (queue)
            queue(arg, i, p, len - done);
        else
            evbuffer_add(out, p, len - done);
    }
    if (evbuffer_get_length(out) > 0)
        bufferevent_enable(bev, EV_WRITE);
}

/* After a TLS take-over the bufferevent's events are parked on fd -1
 * (tls_take_over), so bufferevent_getfd() says -1: the socket is our read
 * event's. */
int ct_io_fd(const struct ct_io *io)
{
    return io->rev ? event_get_fd(io->rev) : bufferevent_getfd(io->bev);
}

int ct_io_unsent(const struct ct_io *io)
{
    int held = 0;
    if (ioctl(bufferevent_getfd(io->bev), SIOCOUTQNSD, &held) != 0)
        return 0;
    return held > 0 ? held : 0;
}
