/*
 * origin/origin_worker.c: the workers. Each is one thread with its own
 * event_base and its own SO_REUSEPORT listening socket, so the kernel spreads
 * connections and no event structure is shared between threads (libevent's
 * locking stays off). The main thread owns startup and shutdown: it opens the
 * sockets (so the port is known before anything runs), starts the threads,
 * waits for SIGTERM/SIGINT with sigwait(), then wakes each worker through its
 * stop pipe; a worker breaks its loop and frees its connections itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sockaddr.h"
#include "origin/origin_int.h"

const char *ct_oworker_date(struct ct_oworker *w)
{
    struct timeval tv;
    event_base_gettimeofday_cached(w->base, &tv);
    if (CT_UNLIKELY(tv.tv_sec != w->clf_sec)) {
        struct tm tm;
        w->clf_sec = tv.tv_sec;
        gmtime_r(&w->clf_sec, &tm);
        strftime(w->clf_date, sizeof(w->clf_date), "[%d/%b/%Y:%H:%M:%S +0000]", &tm);
    }
    return ct_http_date_cached(&w->date, tv.tv_sec);
}

static int open_listener(const struct sockaddr_storage *ss, socklen_t sl, char *err, size_t errlen)
{
    int one = 1;
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)ss, sl) < 0 || listen(fd, 4096) < 0) {
        snprintf(err, errlen, "bind/listen: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int resolve(struct ct_origin *o, struct sockaddr_storage *ss, socklen_t *sl, char *err,
                   size_t errlen)
{
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_PASSIVE, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%u", o->opts.port);
    int rc = getaddrinfo(o->opts.bind, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "--bind %s: %s", o->opts.bind, gai_strerror(rc));
        return CT_EIO;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *sl = ai->ai_addrlen;
    freeaddrinfo(ai);
    return CT_OK;
}

int ct_origin_listen(struct ct_origin *o, char *announce, size_t alen, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    if (resolve(o, &ss, &sl, err, errlen) != CT_OK)
        return CT_EIO;
    o->n_workers = o->opts.workers;
    o->workers = ct_xcalloc(o->n_workers, sizeof(*o->workers));
    for (unsigned i = 0; i < o->n_workers; i++) {
        struct ct_oworker *w = ct_xcalloc(1, sizeof(*w));
        w->magic = CT_OWORKER_MAGIC;
        w->id = i;
        w->o = o;
        w->stop_pipe[0] = w->stop_pipe[1] = -1;
        w->clf_sec = -1;
        o->workers[i] = w;
        w->listen_fd = open_listener(&ss, sl, err, errlen);
        if (w->listen_fd < 0)
            return CT_EIO;
        if (i == 0) {
            /* Port 0: the others bind to the port the kernel gave the first. */
            getsockname(w->listen_fd, (struct sockaddr *)&ss, &sl);
            ct_sockaddr_format((struct sockaddr *)&ss, announce, alen, NULL);
        }
    }
    return CT_OK;
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct ct_oworker *w = arg;
    CT_CHECK_OBJ(w, CT_OWORKER_MAGIC);
    ct_oconn_accept(w, fd, sa);
}

static void on_accept_error(struct evconnlistener *lev, void *arg)
{
    struct ct_oworker *w = arg;
    CT_CHECK_OBJ(w, CT_OWORKER_MAGIC);
    /* EMFILE and friends: libevent retries on the next readiness. */
    CT_WARN("w%u accepting connections: %s", w->id, strerror(errno));
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct ct_oworker *w = arg;
    CT_CHECK_OBJ(w, CT_OWORKER_MAGIC);
    event_base_loopbreak(w->base);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct ct_oworker *w = arg;
    CT_CHECK_OBJ(w, CT_OWORKER_MAGIC);
    struct timeval tv;
    event_base_gettimeofday_cached(w->base, &tv);
    ct_oconn_sweep(w, (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000);
}

static void *worker_main(void *arg)
{
    struct ct_oworker *w = arg;
    CT_CHECK_OBJ(w, CT_OWORKER_MAGIC);
    event_base_dispatch(w->base);
    /* Freed here, on the thread that owns them. */
    ct_oconn_free_all(w);
    return NULL;
}

static int worker_setup(struct ct_oworker *w)
{
    /* The precise monotonic clock: the default coarse one ticks in jiffies,
     * so a /delay/MS timer could fire a few ms before MS had passed. */
    struct event_config *cfg = event_config_new();
    if (cfg) {
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
        w->base = event_base_new_with_config(cfg);
        event_config_free(cfg);
    }
    if (!w->base || pipe2(w->stop_pipe, O_NONBLOCK | O_CLOEXEC) < 0)
        return CT_EIO;
    w->stats = ct_ostats_new();
    w->lev = evconnlistener_new(w->base, on_accept, w, LEV_OPT_CLOSE_ON_FREE, 0, w->listen_fd);
    if (!w->lev)
        return CT_EIO;
    w->listen_fd = -1; /* the listener owns it */
    evconnlistener_set_error_cb(w->lev, on_accept_error);
    w->stop_ev = event_new(w->base, w->stop_pipe[0], EV_READ, on_stop, w);
    event_add(w->stop_ev, NULL);
    /* Sweep often enough that a connection goes within 1.5x the timeout. */
    struct timeval every = {(time_t)CT_MAX(1u, CT_MIN(5u, w->o->opts.idle_s / 2)), 0};
    w->sweep_ev = event_new(w->base, -1, EV_PERSIST, on_sweep, w);
    event_add(w->sweep_ev, &every);
    ct_oworker_date(w);
    return CT_OK;
}

int ct_origin_run(struct ct_origin *o, const sigset_t *stop_signals)
{
    unsigned started = 0;
    int rc = CT_OK, sig = 0;
    for (unsigned i = 0; i < o->n_workers; i++) {
        if (worker_setup(o->workers[i]) != CT_OK) {
            CT_ERR("w%u starting: %s", i, strerror(errno));
            rc = CT_EIO;
            break;
        }
    }
    for (unsigned i = 0; rc == CT_OK && i < o->n_workers; i++) {
        if (pthread_create(&o->workers[i]->thread, NULL, worker_main, o->workers[i]) != 0) {
            CT_ERR("w%u starting its thread: %s", i, strerror(errno));
            rc = CT_EIO;
            break;
        }
        started++;
    }
    if (rc == CT_OK)
        sigwait(stop_signals, &sig);
    for (unsigned i = 0; i < started; i++) {
        char b = 's';
        if (write(o->workers[i]->stop_pipe[1], &b, 1) < 0)
            CT_ERR("w%u stopping: %s", i, strerror(errno));
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(o->workers[i]->thread, NULL);
    return rc;
}

void ct_origin_free(struct ct_origin *o)
{
    for (unsigned i = 0; o->workers && i < o->n_workers; i++) {
        struct ct_oworker *w = o->workers[i];
        if (!w)
            continue;
        ct_oconn_free_all(w);
        if (w->lev)
            evconnlistener_free(w->lev);
        if (w->listen_fd >= 0)
            close(w->listen_fd);
        if (w->stop_ev)
            event_free(w->stop_ev);
        if (w->sweep_ev)
            event_free(w->sweep_ev);
        for (int k = 0; k < 2; k++)
            if (w->stop_pipe[k] >= 0)
                close(w->stop_pipe[k]);
        if (w->base)
            event_base_free(w->base);
        ct_ostats_free(&w->stats);
        w->magic = 0;
        free(w);
    }
    CT_FREE(&o->workers);
    if (o->root_fd >= 0)
        close(o->root_fd);
    CT_FREE(&o->root_real);
    if (o->access_fd > 2)
        close(o->access_fd);
}
