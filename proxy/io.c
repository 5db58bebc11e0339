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
 * TLS bufferevents keep libevent's reads (records need OpenSSL anyway): every
 * function here falls back to bufferevent_enable/disable/set_timeouts.
 *
 * Input is bounded: when the input buffer holds CT_READ_HIGH bytes nobody
 * consumed (pipelined requests behind a slow response), reading stops until
 * the owner turns it on again after consuming.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sys/uio.h>

#include "proxy/proxy_int.h"

#define CT_READ_CHUNK (128 * 1024)

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
}

void ct_io_timeouts(struct ct_io *io, uint64_t read_ms, uint64_t write_ms)
{
    if (io->rev == NULL) {
        ct_set_timeouts(io->bev, read_ms, write_ms);
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
