/*
 * proxy/stats/accesslog.c: access-log formatting and the buffered writer.
 *
 * Objects: struct ct_accesslog (the file, owned by the main thread) holds the
 * list of worker buffers. Locks: al->mu guards the fd swap and the list; each
 * buffer's mu guards its bytes. A worker takes only its buffer's lock; the
 * main thread takes al->mu, then buffer locks (one order, no deadlock).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "proxy/stats/accesslog.h"

struct ct_accesslog_buf {
    unsigned magic;
#define CT_ALBUF_MAGIC 0xa1b0f0e1u
    struct ct_accesslog *al;
    pthread_mutex_t mu;
    struct ct_buf out; /* complete lines only */
    unsigned nlines;         /* lines in out */
    struct ct_accesslog_buf *next;
};

struct ct_accesslog {
    unsigned magic;
#define CT_ACCESSLOG_MAGIC 0xa1a1a1a1u
    pthread_mutex_t mu;
    char *path;         /* NULL: stdout */
    _Atomic int fd;     /* swapped by reopen with every buffer locked */
    enum ct_accesslog_fmt fmt;
    struct ct_accesslog_buf *bufs;
    _Atomic uint64_t lines, dropped;
    _Atomic int write_errno; /* of the last failed write (0: short write) */
    /* ct_accesslog_report(), main thread only */
    uint64_t seen_lines, seen_dropped;
    double reported_at;
    bool failing;
};

/* ---- formatting ---------------------------------------------------------- */

void ct_accesslog_escape(struct ct_buf *o, struct ct_str s)
{
    static const char hex[] = "0123456789ABCDEF";
    if (s.p == NULL) {
        CT_BUF_LIT(o, "-");
        return;
    }
    size_t from = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            continue;
        /* nginx's escaping: a log line stays one line of printable ASCII
         * whatever a client put in its request line or User-Agent. */
        ct_buf_put(o, s.p + from, i - from);
        char esc[4] = {'\\', 'x', hex[ch >> 4], hex[ch & 15]};
        ct_buf_put(o, esc, 4);
        from = i + 1;
    }
    ct_buf_put(o, s.p + from, s.len - from);
}

/* The formatted second, once per second per thread: localtime_r() takes a
 * lock and checks TZ, which cost more than the rest of the line. */
struct time_cache {
    time_t secs;
    size_t len;
    char buf[40];
};

/* Seconds with three decimals ("0.001"), rounded to the nearest ms. */
static void out_secs(struct ct_buf *o, double s)
{
    uint64_t ms = s > 0 ? (uint64_t)(s * 1000.0 + 0.5) : 0;
    char frac[4] = {'.', (char)('0' + ms / 100 % 10), (char)('0' + ms / 10 % 10),
                    (char)('0' + ms % 10)};
    ct_buf_put_u64(o, ms / 1000);
    ct_buf_put(o, frac, 4);
}

static void time_local(struct ct_buf *o, ct_time_t t)
{
    static _Thread_local struct time_cache tc = {.secs = -1};
    time_t secs = (time_t)t;
    if (secs != tc.secs) {
        struct tm tm;
        localtime_r(&secs, &tm);
        /* C locale month names: we never call setlocale(). */
        tc.len = strftime(tc.buf, sizeof(tc.buf), "%d/%b/%Y:%H:%M:%S %z", &tm);
        tc.secs = secs;
    }
    ct_buf_put(o, tc.buf, tc.len);
}

static void time_iso(struct ct_buf *o, ct_time_t t)
{
    static _Thread_local struct time_cache tc = {.secs = -1};
    time_t secs = (time_t)t;
    if (secs != tc.secs) {
        struct tm tm;
        gmtime_r(&secs, &tm);
        tc.len = strftime(tc.buf, sizeof(tc.buf), "%Y-%m-%dT%H:%M:%S", &tm);
        tc.secs = secs;
    }
    ct_buf_put(o, tc.buf, tc.len);
    unsigned ms = (unsigned)((t - (double)secs) * 1000.0);
    ms = ms > 999 ? 999 : ms;
    char frac[5] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10),
                    'Z'};
    ct_buf_put(o, frac, sizeof(frac));
}

/* JSON string contents: a log reader gets UTF-8 as sent, and every other
 * byte still leaves the line valid JSON. */
static void json_escape(struct ct_buf *o, struct ct_str s)
{
    ct_buf_json_escape(o, s, CT_JSON_UTF8);
}

static void request_line(struct ct_buf *o, const struct ct_accesslog_rec *r,
                         void (*esc)(struct ct_buf *, struct ct_str))
{
    esc(o, r->method);
    CT_BUF_LIT(o, " ");
    esc(o, r->target);
    char v[9] = {' ', 'H', 'T', 'T', 'P', '/', (char)('0' + r->version / 10 % 10), '.',
                 (char)('0' + r->version % 10)};
    ct_buf_put(o, v, sizeof(v));
}

static void format_combined(const struct ct_accesslog_rec *r, struct ct_buf *o)
{
    ct_accesslog_escape(o, r->remote_addr);
    CT_BUF_LIT(o, " - - [");
    time_local(o, r->time);
    CT_BUF_LIT(o, "] \"");
    if (r->version)
        request_line(o, r, ct_accesslog_escape);
    else
        CT_BUF_LIT(o, "-");
    CT_BUF_LIT(o, "\" ");
    ct_buf_put_u64(o, r->status);
    CT_BUF_LIT(o, " ");
    ct_buf_put_u64(o, r->body_bytes);
    CT_BUF_LIT(o, " \"");
    ct_accesslog_escape(o, r->referer);
    CT_BUF_LIT(o, "\" \"");
    ct_accesslog_escape(o, r->user_agent);
    CT_BUF_LIT(o, "\" rt=");
    out_secs(o, r->request_time_s);
    CT_BUF_LIT(o, " ut=");
    if (r->upstream_time_s >= 0)
        out_secs(o, r->upstream_time_s);
    else
        CT_BUF_LIT(o, "-");
    CT_BUF_LIT(o, " us=");
    if (r->upstream_status)
        ct_buf_put_u64(o, r->upstream_status);
    else
        CT_BUF_LIT(o, "-");
    CT_BUF_LIT(o, " cs=");
    const char *cs = r->cache_status ? r->cache_status : "-";
    ct_buf_put(o, cs, strlen(cs));
    CT_BUF_LIT(o, " tls=");
    const char *tls = r->tls_version ? r->tls_version : "-";
    ct_buf_put(o, tls, strlen(tls));
    if (r->up_tls_version) { /* the origin's TLS: utls=1.3 uts=r (resumed) or f (full) */
        CT_BUF_LIT(o, " utls=");
        ct_buf_put(o, r->up_tls_version, strlen(r->up_tls_version));
        if (r->up_tls_resumed)
            CT_BUF_LIT(o, " uts=r");
        else
            CT_BUF_LIT(o, " uts=f");
    }
    if (r->stream_id) {
        CT_BUF_LIT(o, " sid=");
        ct_buf_put_u64(o, r->stream_id);
    }
    if (r->site) { /* a route's name is free text: escaped as the other fields */
        CT_BUF_LIT(o, " site=");
        ct_accesslog_escape(o, ct_str_c(r->site));
        CT_BUF_LIT(o, " route=");
        ct_accesslog_escape(o, ct_str_c(r->route));
    }
    CT_BUF_LIT(o, "\n");
}

static void json_field(struct ct_buf *o, const char *name, struct ct_str v)
{
    CT_BUF_LIT(o, ",\"");
    ct_buf_put(o, name, strlen(name));
    CT_BUF_LIT(o, "\":");
    if (v.p == NULL) {
        CT_BUF_LIT(o, "null");
        return;
    }
    CT_BUF_LIT(o, "\"");
    json_escape(o, v);
    CT_BUF_LIT(o, "\"");
}

static void format_json(const struct ct_accesslog_rec *r, struct ct_buf *o)
{
    CT_BUF_LIT(o, "{\"time\":\"");
    time_iso(o, r->time);
    CT_BUF_LIT(o, "\"");
    json_field(o, "remote_addr", r->remote_addr);
    if (r->version) {
        CT_BUF_LIT(o, ",\"request\":\"");
        request_line(o, r, json_escape);
        CT_BUF_LIT(o, "\"");
    } else {
        CT_BUF_LIT(o, ",\"request\":null");
    }
    json_field(o, "method", r->method);
    json_field(o, "uri", r->target);
    CT_BUF_LIT(o, ",\"status\":");
    ct_buf_put_u64(o, r->status);
    CT_BUF_LIT(o, ",\"body_bytes_sent\":");
    ct_buf_put_u64(o, r->body_bytes);
    json_field(o, "referer", r->referer);
    json_field(o, "user_agent", r->user_agent);
    CT_BUF_LIT(o, ",\"request_time\":");
    out_secs(o, r->request_time_s);
    CT_BUF_LIT(o, ",\"upstream_time\":");
    if (r->upstream_time_s >= 0)
        out_secs(o, r->upstream_time_s);
    else
        CT_BUF_LIT(o, "null");
    CT_BUF_LIT(o, ",\"upstream_status\":");
    if (r->upstream_status)
        ct_buf_put_u64(o, r->upstream_status);
    else
        CT_BUF_LIT(o, "null");
    json_field(o, "cache_status", ct_str_c(r->cache_status));
    json_field(o, "tls", ct_str_c(r->tls_version));
    if (r->up_tls_version) {
        json_field(o, "upstream_tls", ct_str_c(r->up_tls_version));
        CT_BUF_LIT(o, ",\"upstream_tls_resumed\":");
        if (r->up_tls_resumed)
            CT_BUF_LIT(o, "true");
        else
            CT_BUF_LIT(o, "false");
    }
    if (r->stream_id) {
        CT_BUF_LIT(o, ",\"stream_id\":");
        ct_buf_put_u64(o, r->stream_id);
    }
    if (r->site) {
        json_field(o, "site", ct_str_c(r->site));
        json_field(o, "route", ct_str_c(r->route));
    }
    CT_BUF_LIT(o, "}\n");
}

void ct_accesslog_format(enum ct_accesslog_fmt fmt, const struct ct_accesslog_rec *rec,
                         struct ct_buf *out)
{
    if (fmt == CT_ACCESSLOG_JSON)
        format_json(rec, out);
    else
        format_combined(rec, out);
}

/* ---- the file ------------------------------------------------------------------ */

static int open_path(const char *path)
{
    if (path == NULL)
        return STDOUT_FILENO;
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

struct ct_accesslog *ct_accesslog_open(const char *path, enum ct_accesslog_fmt fmt, char *err,
                                       size_t errlen)
{
    bool is_stdout = path == NULL || strcmp(path, "-") == 0;
    int fd = open_path(is_stdout ? NULL : path);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open access log %s: %s", path, strerror(errno));
        return NULL;
    }
    struct ct_accesslog *al = ct_xcalloc(1, sizeof(*al));
    al->magic = CT_ACCESSLOG_MAGIC;
    pthread_mutex_init(&al->mu, NULL);
    al->path = is_stdout ? NULL : ct_xstrdup(path);
    atomic_init(&al->fd, fd);
    al->fmt = fmt;
    return al;
}

/* Write B's lines with one write(2). Caller holds b->mu. Lines a failed or
 * short write did not take are counted as dropped, never retried half-way
 * (a retry would split a line). */
static void buf_flush_locked(struct ct_accesslog_buf *b)
{
    struct ct_accesslog *al = b->al;
    if (b->out.len == 0)
        return;
    int fd = atomic_load(&al->fd);
    ssize_t n;
    do
        n = write(fd, b->out.p, b->out.len);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)b->out.len) {
        atomic_fetch_add(&al->lines, b->nlines);
    } else {
        atomic_store(&al->write_errno, n < 0 ? errno : 0);
        atomic_fetch_add(&al->dropped, b->nlines);
    }
    ct_buf_reset(&b->out);
    b->nlines = 0;
}

void ct_accesslog_flush_all(struct ct_accesslog *al)
{
    CT_CHECK_OBJ(al, CT_ACCESSLOG_MAGIC);
    pthread_mutex_lock(&al->mu);
    for (struct ct_accesslog_buf *b = al->bufs; b; b = b->next) {
        pthread_mutex_lock(&b->mu);
        buf_flush_locked(b);
        pthread_mutex_unlock(&b->mu);
    }
    pthread_mutex_unlock(&al->mu);
}

int ct_accesslog_reopen(struct ct_accesslog *al)
{
    CT_CHECK_OBJ(al, CT_ACCESSLOG_MAGIC);
    if (al->path == NULL)
        return CT_OK; /* stdout: nothing to reopen */
    int fd = open_path(al->path);
    if (fd < 0)
        return CT_EIO;
    pthread_mutex_lock(&al->mu);
    struct ct_accesslog_buf *b;
    for (b = al->bufs; b; b = b->next) {
        pthread_mutex_lock(&b->mu);
        buf_flush_locked(b); /* what was logged before the signal: old file */
    }
    int old = atomic_exchange(&al->fd, fd);
    for (b = al->bufs; b; b = b->next)
        pthread_mutex_unlock(&b->mu);
    pthread_mutex_unlock(&al->mu);
    close(old);
    return CT_OK;
}

void ct_accesslog_free(struct ct_accesslog **alp)
{
    struct ct_accesslog *al = *alp;
    *alp = NULL;
    if (al == NULL)
        return;
    CT_CHECK_OBJ(al, CT_ACCESSLOG_MAGIC);
    ct_accesslog_flush_all(al);
    struct ct_accesslog_buf *b, *next;
    for (b = al->bufs; b; b = next) {
        next = b->next;
        pthread_mutex_destroy(&b->mu);
        ct_buf_free(&b->out);
        b->magic = 0;
        free(b);
    }
    int fd = atomic_load(&al->fd);
    if (fd != STDOUT_FILENO)
        close(fd);
    pthread_mutex_destroy(&al->mu);
    free(al->path);
    al->magic = 0;
    free(al);
}

struct ct_accesslog_buf *ct_accesslog_buf_new(struct ct_accesslog *al)
{
    CT_CHECK_OBJ(al, CT_ACCESSLOG_MAGIC);
    struct ct_accesslog_buf *b = ct_xcalloc(1, sizeof(*b));
    b->magic = CT_ALBUF_MAGIC;
    b->al = al;
    pthread_mutex_init(&b->mu, NULL);
    pthread_mutex_lock(&al->mu);
    b->next = al->bufs;
    al->bufs = b;
    pthread_mutex_unlock(&al->mu);
    return b;
}

void ct_accesslog_log(struct ct_accesslog_buf *b, const struct ct_accesslog_rec *rec)
{
    CT_CHECK_OBJ(b, CT_ALBUF_MAGIC);
    pthread_mutex_lock(&b->mu);
    ct_accesslog_format(b->al->fmt, rec, &b->out);
    b->nlines++;
    if (b->out.len >= CT_ACCESSLOG_FLUSH)
        buf_flush_locked(b);
    pthread_mutex_unlock(&b->mu);
}

int ct_accesslog_report(struct ct_accesslog *al, double now, char *msg, size_t msglen)
{
    CT_CHECK_OBJ(al, CT_ACCESSLOG_MAGIC);
    uint64_t lines = atomic_load(&al->lines), dropped = atomic_load(&al->dropped);
    bool new_drops = dropped > al->seen_dropped, new_lines = lines > al->seen_lines;
    const char *name = al->path ? al->path : "stdout";
    int report = 0;
    al->seen_lines = lines;
    al->seen_dropped = dropped;
    if (new_drops && (!al->failing || now - al->reported_at >= CT_ACCESSLOG_REPORT_S)) {
        int e = atomic_load(&al->write_errno);
        snprintf(msg, msglen, "access log %s: cannot write (%s): %llu lines dropped so far; "
                 "requests are served", name, e ? strerror(e) : "short write",
                 (unsigned long long)dropped);
        al->failing = true;
        al->reported_at = now;
        report = -1;
    } else if (!new_drops && new_lines && al->failing) {
        snprintf(msg, msglen, "access log %s: writing again (%llu lines dropped in all)", name,
                 (unsigned long long)dropped);
        al->failing = false;
        report = 1;
    }
    return report;
}

uint64_t ct_accesslog_lines(const struct ct_accesslog *al) { return atomic_load(&al->lines); }
uint64_t ct_accesslog_dropped(const struct ct_accesslog *al) { return atomic_load(&al->dropped); }
