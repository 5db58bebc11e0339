/*
 * common/log.c: the error log. The destination fd is swapped atomically on
 * reopen; a line in flight on another thread may still go to the old fd,
 * which is closed only after the swap (a lost line beats a torn one).
 */
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = CT_LOG_INFO;
static _Atomic int log_fd = STDERR_FILENO;
static char *log_path; /* NULL = stderr; changed only from the main thread */

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

static int open_fd(const char *path)
{
    if (path == NULL)
        return STDERR_FILENO;
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

static void swap_fd(int fd)
{
    int old = atomic_exchange(&log_fd, fd);
    if (old != STDERR_FILENO && old != fd)
        close(old);
}

int ct_log_open(const char *path)
{
    if (path != NULL && strcmp(path, "-") == 0)
        path = NULL;
    int fd = open_fd(path);
    if (fd < 0)
        return CT_EIO;
    free(log_path);
    log_path = path ? ct_xstrdup(path) : NULL;
    swap_fd(fd);
    return CT_OK;
}

int ct_log_reopen(void)
{
    int fd = open_fd(log_path);
    if (fd < 0)
        return CT_EIO;
    swap_fd(fd);
    return CT_OK;
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
    char line[4096];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), level_names[level]);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : CT_MIN((size_t)m, sizeof(line) - (size_t)n - 2));
    if (*suffix) {
        int k = snprintf(line + len, sizeof(line) - len - 1, "%s", suffix);
        len += k < 0 ? 0 : CT_MIN((size_t)k, sizeof(line) - len - 2);
    }
    line[len++] = '\n';
    int saved = errno;
    ssize_t w = write(atomic_load(&log_fd), line, len);
    (void)w; /* nowhere to report a failed log write */
    errno = saved;
}
