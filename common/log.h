/*
 * common/log.h: the error log, used only by the binaries (proxy/, origin/);
 * the pure modules return codes and fill caller-supplied error buffers.
 *
 * One line per event: "2026-11-30T03:17:52.123Z LEVEL message". Callers put
 * who and what in the message (worker, connection, request, peer, action),
 * nginx-style: "w1 c42 r7 1.2.3.4:5 reading response head from ...: timeout".
 * Thread-safe: each line is formatted into a local buffer and written with one
 * write(2), so lines from workers never interleave.
 */
#ifndef CT_LOG_H
#define CT_LOG_H

#include "common/common.h"

enum ct_log_level { CT_LOG_DEBUG, CT_LOG_INFO, CT_LOG_WARN, CT_LOG_ERR };

/* Lines below LEVEL are dropped. Default CT_LOG_INFO. */
void ct_log_set_level(enum ct_log_level level);
enum ct_log_level ct_log_get_level(void);
/* Parse "debug", "info", "warn", "error". Returns CT_OK or CT_EPROTO. */
int ct_log_level_parse(const char *name, enum ct_log_level *out);

/* Where the lines go (logs.target). */
enum ct_log_target {
    CT_LOG_TO_FILE,   /* "2026-...Z LEVEL message" to a file, or stderr */
    CT_LOG_TO_SYSLOG, /* RFC 3164 as glibc's syslog(3) writes it, to a unix datagram socket */
    CT_LOG_TO_JSON,   /* {"time":...,"level":...,"msg":...} lines on stdout (containers) */
};

struct ct_log_dest {
    enum ct_log_target target;
    const char *path;   /* FILE: the file, or NULL / "-" for stderr */
    const char *socket; /* SYSLOG: the socket's path, "/dev/log" */
    int facility;       /* SYSLOG: a syslog.h facility (LOG_DAEMON, LOG_LOCAL0, ...) */
    const char *tag;    /* SYSLOG: the program name of each line, "cachet" */
};

/* Send the lines to D (copied). Returns CT_OK, or CT_EIO with the reason in
 * ERR (the file cannot be opened, the socket cannot be reached) and the
 * previous destination kept. Main thread; workers logging meanwhile write
 * to the old or the new destination, never to a closed one's reuse. */
int ct_log_set_dest(const struct ct_log_dest *d, char *err, size_t errlen);
/* Send the log to PATH (appending), or to stderr when PATH is NULL or "-".
 * Returns CT_OK or CT_EIO (errno set; the previous destination stays). */
int ct_log_open(const char *path);
/* Reopen the current file, or reconnect the syslog socket (logrotate,
 * SIGUSR1; a restarted syslog daemon). Returns CT_OK or CT_EIO. */
int ct_log_reopen(void);

void ct_log(enum ct_log_level level, const char *fmt, ...) CT_PRINTF(2, 3);

/* At most CT_LOG_LIMIT_PER_S lines a second pass a limiter; the others are
 * counted, and the next line that passes says how many were left out. */
#define CT_LOG_LIMIT_PER_S 20
struct ct_log_limit {
    uint64_t second;  /* the second being counted (any clock, in seconds) */
    unsigned n;       /* lines passed in it */
    unsigned dropped; /* left out since the last line that passed */
};
/* May one more line be logged at NOW_S? If so, *DROPPED receives how many
 * were left out before it (and the count restarts). Pure; one thread per L. */
bool ct_log_limit_pass(struct ct_log_limit *l, uint64_t now_s, unsigned *dropped);
/* A client's fault (a malformed request, a failed TLS handshake, a TLS or
 * HTTP/2 preface on the wrong port): something the operator need not act
 * on, so INFO, and rate-limited per thread (a scanner must not flood the
 * log): "... (N more client faults not logged)" on the next line. */
void ct_log_client(const char *fmt, ...) CT_PRINTF(1, 2);
struct ct_buf;
/* While set, the lines of level MIN and above that THIS thread logs are
 * also appended to B, the message alone, one per line (their destination
 * still gets them): `cachet ctl reload` answers with the reload's warnings
 * and errors. NULL stops. Per thread; B stays the caller's. */
void ct_log_capture(struct ct_buf *b, enum ct_log_level min);

#define CT_DEBUG(...)                                                          \
    do {                                                                       \
        if (CT_UNLIKELY(ct_log_get_level() <= CT_LOG_DEBUG))                   \
            ct_log(CT_LOG_DEBUG, __VA_ARGS__);                                 \
    } while (0)
#define CT_INFO(...) ct_log(CT_LOG_INFO, __VA_ARGS__)
#define CT_WARN(...) ct_log(CT_LOG_WARN, __VA_ARGS__)
#define CT_ERR(...) ct_log(CT_LOG_ERR, __VA_ARGS__)

#endif /* CT_LOG_H */
