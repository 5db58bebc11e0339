/*
 * common/log.c: the error log, to one destination at a time (common/log.h):
 * a file or stderr, a syslog socket, or JSON lines on stdout. The
 * destination is an immutable struct swapped atomically by the main thread;
 * a line in flight on another thread may still go to the old one, whose fd
 * is closed only after the swap (a lost line beats a torn one). Replaced
 * destinations are kept on a list, never freed, so a worker holding one
 * never reads freed memory; a destination changes only at a reload or a
 * SIGUSR1, a few dozen bytes each.
 */
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"

struct dest {
    struct dest *retired_next; /* the list of replaced ones */
    enum ct_log_target target;
    int fd;
    int facility;
    char tag[64];
    char *path; /* FILE: NULL for stderr; SYSLOG: the socket */
};

static struct dest stderr_dest = {.target = CT_LOG_TO_FILE, .fd = STDERR_FILENO};
static _Atomic(struct dest *) cur_dest = &stderr_dest;
static struct dest *retired; /* main thread only */
static _Thread_local struct ct_buf *capture;
static _Thread_local enum ct_log_level capture_min;

void ct_log_capture(struct ct_buf *b, enum ct_log_level min)
{
    capture = b;
    capture_min = min;
}

static _Atomic int log_level = CT_LOG_INFO;
static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERR"};

void ct_log_set_level(enum ct_log_level level)
{
    atomic_store(&log_level, (int)level);
}

enum ct_log_level ct_log_get_level(void)
{
    return (enum ct_log_level)atomic_load_explicit(&log_level, memory_order_relaxed);
}

int ct_log_level_parse(const char *name, enum ct_log_level *out)
{
    static const struct {
        const char *name;
        enum ct_log_level level;
    } names[] = {{"debug", CT_LOG_DEBUG}, {"info", CT_LOG_INFO}, {"warn", CT_LOG_WARN},
                 {"warning", CT_LOG_WARN}, {"error", CT_LOG_ERR}, {"err", CT_LOG_ERR}};
    for (size_t i = 0; i < CT_ARRAY_LEN(names); i++) {
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].level;
            return CT_OK;
        }
    }
    return CT_EPROTO;
}

static int open_file(const char *path)
{
    if (path == NULL)
        return STDERR_FILENO;
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

/* A unix datagram socket connected to PATH, non-blocking: a slow or
 * stalled syslog daemon costs a dropped line, never a stalled worker. */
static int open_syslog(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sun.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static void swap_dest(struct dest *d)
{
    struct dest *old = atomic_exchange(&cur_dest, d);
    if (old->fd > STDERR_FILENO && old->fd != d->fd)
        close(old->fd);
    if (old != &stderr_dest) {
        old->retired_next = retired;
        retired = old;
    }
}

int ct_log_set_dest(const struct ct_log_dest *d, char *err, size_t errlen)
{
    const char *path = d->target == CT_LOG_TO_SYSLOG ? d->socket : d->path;
    if (d->target == CT_LOG_TO_FILE && path && strcmp(path, "-") == 0)
        path = NULL;
    int fd = d->target == CT_LOG_TO_FILE     ? open_file(path)
             : d->target == CT_LOG_TO_SYSLOG ? open_syslog(path)
                                             : STDOUT_FILENO;
    if (fd < 0) {
        snprintf(err, errlen, "%s %s: %s",
                 d->target == CT_LOG_TO_SYSLOG ? "cannot reach the syslog socket" : "cannot open",
                 path, strerror(errno));
        return CT_EIO;
    }
    struct dest *nd = ct_xcalloc(1, sizeof(*nd));
    nd->target = d->target;
    nd->fd = fd;
    nd->facility = d->facility;
    snprintf(nd->tag, sizeof(nd->tag), "%s", d->tag ? d->tag : "cachet");
    nd->path = path ? ct_xstrdup(path) : NULL;
    swap_dest(nd);
    return CT_OK;
}

int ct_log_open(const char *path)
{
    char err[256];
    struct ct_log_dest d = {.target = CT_LOG_TO_FILE, .path = path};
    return ct_log_set_dest(&d, err, sizeof(err));
}

int ct_log_reopen(void)
{
    struct dest *d = atomic_load(&cur_dest);
    if (d->path == NULL) /* stderr, stdout: nothing to reopen */
        return CT_OK;
    char err[256];
    struct ct_log_dest nd = {.target = d->target, .path = d->path, .socket = d->path,
                             .facility = d->facility, .tag = d->tag};
    return ct_log_set_dest(&nd, err, sizeof(err));
}

/* syslog(3)'s severity of LEVEL */
static int severity(enum ct_log_level level)
{
    static const int sev[] = {LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR};
    return sev[level];
}

/* "<PRI>Mmm dd hh:mm:ss TAG[PID]: " (RFC 3164 as glibc's syslog(3) writes
 * it to /dev/log: local time, no year, no host; journald and rsyslog read
 * it) into LINE; its length. */
static int syslog_prefix(const struct dest *d, enum ct_log_level level, time_t now, char *line,
                         size_t cap)
{
    static const char mon[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    localtime_r(&now, &tm);
    return snprintf(line, cap, "<%d>%s %2d %02d:%02d:%02d %s[%d]: ", d->facility | severity(level),
                    mon[tm.tm_mon], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, d->tag,
                    (int)getpid());
}

static void write_line(int fd, const char *p, size_t len)
{
    int saved = errno;
    ssize_t w = write(fd, p, len);
    (void)w; /* nowhere to report a failed log write; a full syslog socket drops it */
    errno = saved;
}

static void vlog(enum ct_log_level level, const char *suffix, const char *fmt, va_list ap)
    CT_PRINTF(3, 0);

void ct_log(enum ct_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, "", fmt, ap);
    va_end(ap);
}

bool ct_log_limit_pass(struct ct_log_limit *l, uint64_t now_s, unsigned *dropped)
{
    if (now_s != l->second) {
        l->second = now_s;
        l->n = 0;
    }
    if (l->n >= CT_LOG_LIMIT_PER_S) {
        l->dropped++;
        return false;
    }
    l->n++;
    *dropped = l->dropped;
    l->dropped = 0;
    return true;
}

void ct_log_client(const char *fmt, ...)
{
    static _Thread_local struct ct_log_limit limit;
    if (CT_LOG_INFO < atomic_load_explicit(&log_level, memory_order_relaxed))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    unsigned dropped;
    if (!ct_log_limit_pass(&limit, (uint64_t)ts.tv_sec, &dropped))
        return;
    char suffix[64] = "";
    if (dropped)
        snprintf(suffix, sizeof(suffix), " (%u more client faults not logged)", dropped);
    va_list ap;
    va_start(ap, fmt);
    vlog(CT_LOG_INFO, suffix, fmt, ap);
    va_end(ap);
}

static void vlog(enum ct_log_level level, const char *suffix, const char *fmt, va_list ap)
{
    if ((int)level < atomic_load_explicit(&log_level, memory_order_relaxed))
        return;
    struct dest *d = atomic_load(&cur_dest);
    char line[4096], stamp[64];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(tv.tv_usec / 1000));
    int n = d->target == CT_LOG_TO_SYSLOG
                ? syslog_prefix(d, level, tv.tv_sec, line, sizeof(line))
            : d->target == CT_LOG_TO_FILE
                ? snprintf(line, sizeof(line), "%s %s ", stamp, level_names[level])
                : 0;
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : CT_MIN((size_t)m, sizeof(line) - (size_t)n - 2));
    if (*suffix) {
        int k = snprintf(line + len, sizeof(line) - len - 1, "%s", suffix);
        len += k < 0 ? 0 : CT_MIN((size_t)k, sizeof(line) - len - 2);
    }
    if (capture && level >= capture_min) {
        ct_buf_put(capture, line + n, len - (size_t)n);
        ct_buf_put_byte(capture, '\n');
    }
    if (d->target == CT_LOG_TO_SYSLOG) { /* a datagram is a line: no newline */
        write_line(d->fd, line, len);
        return;
    }
    if (d->target == CT_LOG_TO_FILE) {
        line[len++] = '\n';
        write_line(d->fd, line, len);
        return;
    }
    static const char *const json_levels[] = {"debug", "info", "warn", "error"};
    struct ct_buf b = {0};
    ct_buf_printf(&b, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":", stamp,
                  json_levels[level]);
    ct_buf_json_str(&b, (struct ct_str){line, len}, CT_JSON_UTF8);
    CT_BUF_LIT(&b, "}\n");
    write_line(d->fd, b.p, b.len);
    ct_buf_free(&b);
}
