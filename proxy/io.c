/*
 * proxy/io.c: the read side of a connection, over a bufferevent.
 *
 * Why not the bufferevent's own reads for plain TCP: libevent 2.1 reads a
 * socket at most 4096 bytes at a time (EVBUFFER_MAX_READ) and asks the kernel
 * how much is pending (ioctl FIONREAD) before every read. On the hot path
 * that is one extra syscall per read, and a 1 GiB body takes 262144 reads.
 * So for plain TCP we keep the bufferevent for writes, write timeouts and
 * its event callback, and read with our own persistent EV_READ event: one
 * readv of up to CT_READ_CHUNK straight into the bufferevent's input buffer
 * (evbuffer_reserve_space/commit_space: no copy), then the same read
 * callback, and the same event callback for EOF, errors and read timeouts
 * (BEV_EVENT_READING | EOF/ERROR/TIMEOUT), so the callers cannot tell.
 *
 * TLS: libevent's bufferevent_openssl does the handshake and reads until the
 * connection first goes back to reading a request (ct_io_read(on) with the
 * handshake done, e.g. after the first response). From then on reads are ours
 * too (tls_take_over): bufferevent_openssl reads each record with two
 * read(2)s (its 5-byte header, then its body); with read-ahead OpenSSL takes
 * what the socket has in one, and we stop calling SSL_read once OpenSSL holds
 * nothing more (SSL_has_pending) instead of reading until EAGAIN. Same
 * callbacks, same EOF/ERROR/TIMEOUT events. Bytes OpenSSL already holds when
 * reading is turned back on are read without waiting for the socket
 * (event_active). An SSL_read that needs to write (WANT_WRITE) hands reading
 * back to libevent, which handles that case, until reading is next turned on. Until the take-over, every
 * function here falls back to bufferevent_enable/disable/set_timeouts.
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
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/uio.h>

#include "proxy/proxy_int.h"

#define CT_READ_CHUNK (128 * 1024)
/* Room for a whole TLS record (16 KiB of plaintext) per SSL_read. */
#define CT_TLS_READ_CHUNK (16 * 1024)

static struct timeval tv_ms(uint64_t ms)
{
    return (struct timeval){(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
}

static void stop(struct ct_io *io)
{
    if (io->reading) {
        event_del(io->rev);
        io->reading = false;
    }
}

static void on_tls_readable(evutil_socket_t fd, short what, void *arg);

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct ct_io *io = arg;
    struct evbuffer *in = bufferevent_get_input(io->bev);

    if (what & EV_TIMEOUT) {
        stop(io);
        io->eventcb(io->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, io->arg);
        return;
    }
    if (evbuffer_get_length(in) >= CT_READ_HIGH) {
        stop(io); /* the owner turns reading on again once it consumed */
        return;
    }
    struct evbuffer_iovec v[2];
    /* The bufferevent froze the input's end so only it appends; we are its
     * reader now, so we unfreeze around our own append. */
    evbuffer_unfreeze(in, 0);
    int nv = evbuffer_reserve_space(in, CT_READ_CHUNK, v, 2);
    CT_ASSERT(nv > 0);
    /* evbuffer_iovec is struct iovec on POSIX (event2/buffer.h). */
    ssize_t n = readv(fd, (struct iovec *)v, nv);
    if (n > 0) {
        size_t left = (size_t)n;
        int used = 0;
        for (int i = 0; i < nv && left > 0; i++, used++) {
            v[i].iov_len = CT_MIN(v[i].iov_len, left);
            left -= v[i].iov_len;
        }
        int rc = evbuffer_commit_space(in, v, used);
        CT_ASSERT(rc == 0);
        evbuffer_freeze(in, 0);
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

static bool is_tls(const struct ct_io *io)
{
    return io->rev != NULL && event_get_callback(io->rev) == on_tls_readable;
}

/* SSL_read into the input until OpenSSL holds nothing more: one read(2) per
 * burst of records with read-ahead, no read that only returns EAGAIN. */
static void on_tls_readable(evutil_socket_t fd, short what, void *arg)
{
    struct ct_io *io = arg;
    struct evbuffer *in = bufferevent_get_input(io->bev);
    SSL *ssl = bufferevent_openssl_get_ssl(io->bev);
    (void)fd;

    if (!io->reading)
        return; /* made active by ct_io_read(on), turned off since */
    if (what & EV_TIMEOUT) {
        stop(io);
        io->eventcb(io->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, io->arg);
        return;
    }
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
        if (evbuffer_reserve_space(in, CT_TLS_READ_CHUNK, &v, 1) != 1) {
            err = SSL_ERROR_SSL;
            break;
        }
        ERR_clear_error();
        int r = SSL_read(ssl, v.iov_base, (int)CT_MIN(v.iov_len, (size_t)INT_MAX));
        if (r <= 0) {
            err = SSL_get_error(ssl, r);
            evbuffer_commit_space(in, &v, 0);
            break;
        }
        v.iov_len = (size_t)r;
        evbuffer_commit_space(in, &v, 1);
        got += (size_t)r;
    } while (SSL_has_pending(ssl));
    if (got > 0) {
        /* An error or EOF behind the data shows again on the next call. */
        io->readcb(io->bev, io->arg); /* may free IO */
        return;
    }
    switch (err) {
    case SSL_ERROR_NONE:
    case SSL_ERROR_WANT_READ:
        return;
    case SSL_ERROR_WANT_WRITE:
        /* Renegotiation-like traffic under a full socket: libevent knows
         * how to wait for writability on behalf of a read. */
        event_free(io->rev);
        io->rev = NULL;
        io->reading = false;
        ct_set_timeouts(io->bev, io->read_ms, io->write_ms);
        bufferevent_enable(io->bev, EV_READ);
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

/* The handshake is done and libevent was reading: our event from now on. */
static void tls_take_over(struct ct_io *io)
{
    SSL_set_read_ahead(bufferevent_openssl_get_ssl(io->bev), 1);
    bufferevent_disable(io->bev, EV_READ);
    struct timeval w = tv_ms(io->write_ms);
    bufferevent_set_timeouts(io->bev, NULL, io->write_ms ? &w : NULL);
    io->rev = event_new(bufferevent_get_base(io->bev), bufferevent_getfd(io->bev),
                        EV_READ | EV_PERSIST, on_tls_readable, io);
    CT_ASSERT(io->rev != NULL);
    io->reading = false;
}

static bool tls_can_take_over(const struct ct_io *io)
{
    SSL *ssl = bufferevent_openssl_get_ssl(io->bev);
    return ssl != NULL && SSL_is_init_finished(ssl) && bufferevent_getfd(io->bev) >= 0;
}

void ct_io_attach(struct ct_io *io, struct event_base *base, struct bufferevent *bev, bool plain,
                  void (*readcb)(struct bufferevent *, void *),
                  void (*eventcb)(struct bufferevent *, short, void *), void *arg)
{
    io->bev = bev;
    io->readcb = readcb;
    io->eventcb = eventcb;
    io->arg = arg;
    io->reading = false;
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
    io->reading = false;
}

void ct_io_read(struct ct_io *io, bool on)
{
    if (io->rev == NULL && on && tls_can_take_over(io))
        tls_take_over(io);
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
    struct timeval tv = tv_ms(io->read_ms);
    event_add(io->rev, io->read_ms ? &tv : NULL);
    io->reading = true;
    /* Records OpenSSL already holds will not make the socket readable. */
    if (is_tls(io) && SSL_has_pending(bufferevent_openssl_get_ssl(io->bev)))
        event_active(io->rev, EV_READ, 1);
}

void ct_io_timeouts(struct ct_io *io, uint64_t read_ms, uint64_t write_ms)
{
    if (io->rev == NULL) {
        ct_set_timeouts(io->bev, read_ms, write_ms);
        io->read_ms = read_ms; /* for a TLS take-over */
        io->write_ms = write_ms;
        return;
    }
    if (write_ms != io->write_ms) {
        struct timeval w = tv_ms(write_ms);
        bufferevent_set_timeouts(io->bev, NULL, write_ms ? &w : NULL);
        io->write_ms = write_ms;
    }
    if (read_ms != io->read_ms) {
        io->read_ms = read_ms;
        if (io->reading) {
            struct timeval tv = tv_ms(read_ms);
            if (read_ms)
                event_add(io->rev, &tv); /* re-arms the timeout from now */
            else
                event_remove_timer(io->rev);
        }
    }
}
