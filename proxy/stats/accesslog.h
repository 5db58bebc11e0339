/*
 * proxy/stats/accesslog.h: the access log. One line per finished request, in one of
 * two formats (conf logs.access_format):
 *
 *   combined (nginx's "combined" plus four fields):
 *     $remote_addr - - [$time_local] "$request" $status $body_bytes_sent
 *     "$http_referer" "$http_user_agent" rt=$request_time ut=$upstream_time
 *     us=$upstream_status cs=$cache_status tls=$tls_version
 *     [sid=$stream_id (HTTP/2)]
 *   e.g.
 *     127.0.0.1 - - [30/Nov/2026:03:37:00 +0000] "GET /a HTTP/1.1" 200 1024
 *     "-" "curl/7.88.1" rt=0.001 ut=0.001 us=200 cs=MISS tls=TLSv1.3
 *   rt: seconds from the first byte of the request head to the last byte of
 *   the response queued, ms precision; ut: seconds from asking for an upstream
 *   connection to the end of its response, "-" when no upstream was used;
 *   us: the status the origin answered, "-" when none did ($status is what
 *   the client got: a hit revalidated by a 304 is "200 ... us=304");
 *   cs: HIT MISS STALE PASS COALESCED HIT_FOR_MISS or "-" (no cache);
 *   tls: the protocol version, "-" over plain HTTP. Strings are escaped like
 *   nginx: '"', '\' and bytes outside 0x20..0x7e become \xHH; an absent field
 *   is "-". $body_bytes_sent counts body bytes without chunk framing.
 *
 *   json (one object per line, same fields, JSON-escaped, absent = null):
 *     {"time":"2026-11-30T03:37:00.123Z","remote_addr":"127.0.0.1",
 *      "request":"GET /a HTTP/1.1","method":"GET","uri":"/a","status":200,
 *      "body_bytes_sent":1024,"referer":null,"user_agent":"curl/7.88.1",
 *      "request_time":0.001,"upstream_time":0.001,"upstream_status":200,
 *      "cache_status":"MISS",
 *      "tls":"TLSv1.3"}
 *
 * Writing. Each worker appends to its own buffer (struct ct_accesslog_buf)
 * under that buffer's mutex (never contended except by a flush); a buffer is
 * written to the file with ONE write(2) when it passes CT_ACCESSLOG_FLUSH
 * bytes, and by the main thread's timer (ct_accesslog_flush_all). The file is
 * opened O_APPEND, so batches from several workers never interleave inside a
 * line. ct_accesslog_reopen() (SIGUSR1, logrotate) flushes every buffer into
 * the old file, then switches every writer to the new one.
 *
 * Pure C (no libevent): the formatter is unit-tested in test_stats_accesslog.c.
 */
#ifndef CT_ACCESSLOG_H
#define CT_ACCESSLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "proxy/stats/stats.h"

enum ct_accesslog_fmt { CT_ACCESSLOG_COMBINED, CT_ACCESSLOG_JSON };

/* A buffer is written out once it holds this much. */
#define CT_ACCESSLOG_FLUSH (32 * 1024)

/* One finished request. Views may be empty ({NULL,0}: shown as "-"/null). */
struct ct_accesslog_rec {
    struct ct_str remote_addr;
    ct_time_t time;         /* wall clock when the request head arrived */
    struct ct_str method;
    struct ct_str target;
    unsigned version;       /* 10 or 11; 0: no request line was read */
    unsigned status;        /* 0: no response was sent */
    uint64_t body_bytes;
    struct ct_str referer;
    struct ct_str user_agent;
    double request_time_s;
    double upstream_time_s; /* < 0: no upstream */
    unsigned upstream_status; /* the origin's status ($upstream_status); 0: none */
    const char *cache_status; /* NULL: "-" */
    const char *tls_version;  /* NULL: plain HTTP */
    const char *up_tls_version; /* TLS to the origin: "1.2", "1.3"; NULL: none (or cleartext) */
    bool up_tls_resumed;        /* ... and its handshake resumed a session */
    const char *site, *route; /* the request's site and route; NULL: no sites configured */
    uint32_t stream_id;       /* HTTP/2: the request's stream; 0: HTTP/1 (not shown) */
};

/* Append one line (with its '\n') for REC in FMT to OUT. Pure, any thread. */
void ct_accesslog_format(enum ct_accesslog_fmt fmt, const struct ct_accesslog_rec *rec,
                         struct ct_buf *out);

/* Escape S the nginx way (see above) into OUT. */
void ct_accesslog_escape(struct ct_buf *out, struct ct_str s);

struct ct_accesslog;     /* the file; opaque */
struct ct_accesslog_buf; /* one worker's buffer; opaque */

/* Open PATH ("-" = stdout) for appending. NULL on failure with ERR filled.
 * Main thread; the caller owns the result. */
struct ct_accesslog *ct_accesslog_open(const char *path, enum ct_accesslog_fmt fmt, char *err,
                                       size_t errlen);
/* Flush every buffer, free them and the log; sets *ALP = NULL. Only when no
 * worker writes any more. */
void ct_accesslog_free(struct ct_accesslog **alp);
/* Reopen the file under its name (logrotate moved it). Returns CT_OK, or
 * CT_EIO (errno set) and the old file stays in use. Main thread. */
int ct_accesslog_reopen(struct ct_accesslog *al);
/* Write out every buffer (main thread timer). */
void ct_accesslog_flush_all(struct ct_accesslog *al);

/* A buffer for one worker, owned by AL (freed with it). Main thread. */
struct ct_accesslog_buf *ct_accesslog_buf_new(struct ct_accesslog *al);
/* Log REC through B (the owning worker only). */
void ct_accesslog_log(struct ct_accesslog_buf *b, const struct ct_accesslog_rec *rec);

/* Write errors, for the error log (main thread, from the flush timer; NOW
 * in seconds). Returns -1 with a line in MSG when lines were dropped since
 * the last call (the first time, then at most every CT_ACCESSLOG_REPORT_S
 * while writes keep failing: a full disk must not flood the error log), 1
 * with a line when lines are written again after drops, else 0. */
#define CT_ACCESSLOG_REPORT_S 10.0
int ct_accesslog_report(struct ct_accesslog *al, double now, char *msg, size_t msglen);

/* Lines written and lines lost to write errors, for tests and stats. */
uint64_t ct_accesslog_lines(const struct ct_accesslog *al);
uint64_t ct_accesslog_dropped(const struct ct_accesslog *al);

#endif /* CT_ACCESSLOG_H */
