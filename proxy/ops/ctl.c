/*
 * proxy/ops/ctl.c: `cachet ctl ...` (proxy/ops/ctl.h), varnishadm-style commands over
 * the admin listener's HTTP: top, stats, purge, ban, bans, reload, backend. Each request goes
 * on its own connection with the admin token when there is one (--token,
 * --token-file, or the -c FILE's admin.token / admin.token_file).
 *
 * `reload` (POST /reload) prints "applied: configuration N" and the reload's
 * warnings, or "refused:" and each reason, as the error log has them.
 * `backend NAME drain|enable` (POST /backend) takes a backend out of
 * rotation or puts it back (HAProxy's `set server ... state drain`).
 *
 * `top` reads GET /stats from the
 * admin listener every interval and prints the figures the dashboard shows,
 * each with its current value and its change per second between the last two
 * readings (varnishstat's CURRENT / CHANGE columns), then a table of
 * backends. `--once` takes two readings one interval apart, prints one
 * table without terminal control codes and exits (for scripts and tests).
 *
 * /stats is read into a flat list of (path, value) leaves ("requests.2xx",
 * "backends.0.name"), which is all a table needs: no JSON tree is built.
 * Each reading owns its list; nothing here outlives the command.
 */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "conf/conf.h"
#include "proxy/ops/ctl.h"

#define CTL_TIMEOUT_S 5
#define CTL_MAX_BODY (4 * 1024 * 1024)
#define CTL_MAX_DEPTH 16

/* ---- /stats as leaves ---------------------------------------------------------- */

struct leaf {
    char *path, *val;
};

struct reading {
    struct leaf *v;
    size_t n, cap;
};

static void reading_free(struct reading *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].path);
        free(r->v[i].val);
    }
    free(r->v);
    memset(r, 0, sizeof(*r));
}

struct jp {
    const char *p, *end;
    char path[512];
    size_t plen;
    struct reading *r;
};

static void jws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
        j->p++;
}

static void leaf_add(struct jp *j, const char *val, size_t len)
{
    struct reading *r = j->r;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 256;
        r->v = ct_xrealloc(r->v, r->cap * sizeof(*r->v));
    }
    r->v[r->n].path = ct_xstrndup(j->path, j->plen);
    r->v[r->n].val = ct_xstrndup(val, len);
    r->n++;
}

/* A JSON string at j->p into OUT (escapes decoded; a \u beyond ASCII shows as
 * '?', enough for names). */
static bool jstring(struct jp *j, char *out, size_t cap, size_t *len)
{
    size_t n = 0;
    if (j->p >= j->end || *j->p != '"')
        return false;
    for (j->p++; j->p < j->end && *j->p != '"'; j->p++) {
        char ch = *j->p;
        if (ch == '\\') {
            if (++j->p >= j->end)
                return false;
            ch = *j->p;
            if (ch == 'u') {
                if (j->end - j->p < 5)
                    return false;
                unsigned cp = (unsigned)strtoul((char[5]){j->p[1], j->p[2], j->p[3], j->p[4], 0},
                                                NULL, 16);
                ch = cp < 0x80 ? (char)cp : '?';
                j->p += 4;
            } else if (ch == 'n' || ch == 't' || ch == 'r' || ch == 'b' || ch == 'f') {
                ch = ' ';
            }
        }
        if (n + 1 < cap)
            out[n++] = ch;
    }
    if (j->p >= j->end)
        return false;
    j->p++;
    *len = n;
    return true;
}

static bool jvalue(struct jp *j, int depth);

/* Append ".NAME" (or "NAME" at the top) to the path; false if too long. */
static bool path_push(struct jp *j, const char *name, size_t len)
{
    size_t need = (j->plen ? 1 : 0) + len;
    if (j->plen + need >= sizeof(j->path))
        return false;
    if (j->plen)
        j->path[j->plen++] = '.';
    memcpy(j->path + j->plen, name, len);
    j->plen += len;
    return true;
}

static bool jcontainer(struct jp *j, int depth, bool object)
{
    char close = object ? '}' : ']';
    size_t at = j->plen;
    j->p++;
    jws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return true;
    }
    for (size_t i = 0;; i++) {
        char key[256];
        size_t klen;
        jws(j);
        if (object) {
            if (!jstring(j, key, sizeof(key), &klen))
                return false;
            jws(j);
            if (j->p >= j->end || *j->p++ != ':')
                return false;
        } else {
            klen = (size_t)snprintf(key, sizeof(key), "%zu", i);
        }
        if (!path_push(j, key, klen) || !jvalue(j, depth + 1))
            return false;
        j->plen = at;
        jws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return true;
        }
        return false;
    }
}

static bool jvalue(struct jp *j, int depth)
{
    jws(j);
    if (j->p >= j->end || depth > CTL_MAX_DEPTH)
        return false;
    if (*j->p == '{' || *j->p == '[')
        return jcontainer(j, depth, *j->p == '{');
    if (*j->p == '"') {
        char s[256];
        size_t len;
        if (!jstring(j, s, sizeof(s), &len))
            return false;
        leaf_add(j, s, len);
        return true;
    }
    const char *s = j->p;
    while (j->p < j->end && strchr("+-.0123456789eEtrufalsn", *j->p))
        j->p++;
    if (j->p == s)
        return false;
    leaf_add(j, s, (size_t)(j->p - s));
    return true;
}

static bool parse(const char *body, size_t len, struct reading *r)
{
    struct jp j = {.p = body, .end = body + len, .r = r};
    if (!jvalue(&j, 0))
        return false;
    jws(&j);
    return j.p == j.end;
}

static const char *get(const struct reading *r, const char *fmt, ...) CT_PRINTF(2, 3);
static const char *get(const struct reading *r, const char *fmt, ...)
{
    char key[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(key, sizeof(key), fmt, ap);
    va_end(ap);
    for (size_t i = 0; r && i < r->n; i++)
        if (strcmp(r->v[i].path, key) == 0)
            return r->v[i].val;
    return NULL;
}

/* The number at KEY; NAN when absent or not a number (null, a string). */
#define NUM(r, ...) num_of(get((r), __VA_ARGS__))
static double num_of(const char *v)
{
    if (v == NULL || strchr("-0123456789", v[0]) == NULL)
        return NAN;
    return strtod(v, NULL);
}

/* ---- reading /stats -------------------------------------------------------------- */

struct target {
    struct sockaddr_storage sa;
    socklen_t salen;
    char name[128];
    char token[CT_CONF_TOKEN_MAX + 1]; /* "" : none */
};

/* One request on its own connection: METHOD PATH with BODY (NULL: none) and
 * the target's token. On CT_OK *STATUS is the answer's status and *RESP its
 * body (NUL-terminated, the caller frees it). */
static int request(const struct target *t, const char *method, const char *path,
                   const char *body, unsigned *status, char **resp, char *err, size_t errlen)
{
    int fd = socket(t->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {CTL_TIMEOUT_S, 0};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
        connect(fd, (const struct sockaddr *)&t->sa, t->salen) != 0) {
        snprintf(err, errlen, "cannot connect to the admin listener %s: %s", t->name,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return CT_EIO;
    }
    size_t blen = body ? strlen(body) : 0, rlen = strlen(path) + blen + strlen(t->token) + 256;
    char *req = ct_xmalloc(rlen);
    int k = snprintf(req, rlen,
                     "%s %s HTTP/1.1\r\nHost: cachet\r\nConnection: close\r\n%s%s%s"
                     "Content-Length: %zu\r\n\r\n%s",
                     method, path, t->token[0] ? "Authorization: Bearer " : "", t->token,
                     t->token[0] ? "\r\n" : "", blen, body ? body : "");
    size_t len = 0, cap = 64 * 1024;
    char *buf = ct_xmalloc(cap);
    ssize_t n = send(fd, req, (size_t)k, MSG_NOSIGNAL);
    free(req);
    while (n > 0 && (n = recv(fd, buf + len, cap - len - 1, 0)) > 0) {
        len += (size_t)n;
        if (len + 1 == cap && cap < CTL_MAX_BODY)
            buf = ct_xrealloc(buf, cap *= 2);
        else if (len + 1 == cap)
            n = -1, errno = EFBIG;
    }
    int rc = CT_OK;
    buf[len] = '\0';
    const char *sep = strstr(buf, "\r\n\r\n");
    if (n < 0) {
        snprintf(err, errlen, "reading %s%s: %s", t->name, path, strerror(errno));
        rc = CT_EIO;
    } else if (strncmp(buf, "HTTP/1.1 ", 9) != 0 || sep == NULL ||
               (*status = (unsigned)strtoul(buf + 9, NULL, 10)) < 100) {
        snprintf(err, errlen, "%s%s: not an HTTP answer (\"%.*s\")", t->name, path,
                 (int)strcspn(buf, "\r\n"), buf);
        rc = CT_EPROTO;
    } else if (*status == 401) {
        snprintf(err, errlen,
                 "%s%s: 401: the admin listener needs its token (--token-file FILE, "
                 "--token TOKEN, or -c FILE with admin.token_file)",
                 t->name, path);
        rc = CT_EPROTO;
    } else {
        *resp = ct_xstrdup(sep + 4);
    }
    close(fd);
    free(buf);
    return rc;
}

static int fetch(const struct target *t, struct reading *r, char *err, size_t errlen)
{
    unsigned status = 0;
    char *body = NULL;
    int rc = request(t, "GET", "/stats", NULL, &status, &body, err, errlen);
    if (rc == CT_OK && status != 200) {
        snprintf(err, errlen, "%s/stats answered %u", t->name, status);
        rc = CT_EPROTO;
    } else if (rc == CT_OK && !parse(body, strlen(body), r)) {
        snprintf(err, errlen, "%s/stats: not the JSON cachet sends", t->name);
        rc = CT_EPROTO;
    }
    free(body);
    return rc;
}

/* ADDR as IP:PORT, [IPv6]:PORT or HOST:PORT. */
static bool target_of(const char *addr, struct target *t)
{
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || colon == addr || colon[1] == '\0')
        return false;
    char host[96];
    size_t hlen = (size_t)(colon - addr);
    if (addr[0] == '[' && colon[-1] == ']')
        addr++, hlen -= 2;
    if (hlen == 0 || hlen >= sizeof(host))
        return false;
    memcpy(host, addr, hlen);
    host[hlen] = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
        return false;
    memcpy(&t->sa, res->ai_addr, res->ai_addrlen);
    t->salen = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

/* ---- the table --------------------------------------------------------------------- */

static void fmt_num(char *out, size_t cap, double v, bool bytes)
{
    static const char *const bu[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    static const char *const du[] = {"", "k", "M", "G", "T"};
    if (isnan(v)) {
        snprintf(out, cap, "-");
        return;
    }
    size_t i = 0;
    double base = bytes ? 1024 : 1000;
    while (fabs(v) >= (bytes ? 1024 : 100000) && i < 4)
        v /= base, i++;
    if (i == 0 && (v == floor(v) || bytes))
        snprintf(out, cap, "%.0f%s%s", v, bytes ? " " : "", bytes ? bu[0] : "");
    else
        snprintf(out, cap, "%.*f%s%s", fabs(v) >= 100 ? 0 : 1, v, bytes ? " " : "",
                 bytes ? bu[i] : du[i]);
}

static void fmt_s(char *out, size_t cap, double s)
{
    if (isnan(s))
        snprintf(out, cap, "-");
    else if (s < 0.001)
        snprintf(out, cap, "%.0f us", s * 1e6);
    else if (s < 1)
        snprintf(out, cap, "%.2f ms", s * 1e3);
    else
        snprintf(out, cap, "%.2f s", s);
}

/* One row: NAME, the value now and its change per second. */
static void row(FILE *fp, int indent, const char *name, double cur, double prev, double dt,
                bool bytes, bool gauge)
{
    char a[32], b[32];
    fmt_num(a, sizeof(a), cur, bytes);
    if (gauge || isnan(prev) || dt <= 0 || cur < prev)
        snprintf(b, sizeof(b), "%s", gauge ? "" : "-");
    else
        fmt_num(b, sizeof(b), (cur - prev) / dt, bytes);
    fprintf(fp, "%*s%-*s %14s %14s%s\n", indent, "", 34 - indent, name, a, b,
            bytes && !gauge && b[0] != '-' ? "/s" : "");
}

/* The latency at quantile Q of the requests between the two readings,
 * interpolated inside its bucket (as the page and Prometheus do). */
static double quantile(double q, const struct reading *p, const struct reading *c)
{
    static const char pre[] = "latency_seconds.buckets.";
    double total = NUM(c, "latency_seconds.count") - (p ? NUM(p, "latency_seconds.count") : 0);
    if (!(total > 0))
        return NAN;
    double want = q * total, prev_cum = 0, prev_b = 0;
    for (size_t i = 0; i < c->n; i++) {
        const char *b = c->v[i].path;
        if (strncmp(b, pre, sizeof(pre) - 1) != 0)
            continue;
        b += sizeof(pre) - 1;
        double cum = num_of(c->v[i].val) - (p ? NUM(p, "%s%s", pre, b) : 0);
        if (cum >= want) {
            if (strcmp(b, "+Inf") == 0)
                return prev_b;
            double ub = strtod(b, NULL), in = cum - prev_cum;
            return in > 0 ? prev_b + (ub - prev_b) * (want - prev_cum) / in : ub;
        }
        prev_cum = cum;
        if (strcmp(b, "+Inf") != 0)
            prev_b = strtod(b, NULL);
    }
    return prev_b;
}

static const char *const cache_statuses[] = {"hit", "miss", "stale", "pass", "coalesced",
                                             "hit_for_miss", "none"};

static void show(FILE *fp, const struct target *t, const struct reading *p,
                 const struct reading *c)
{
    double up = NUM(c, "uptime_s"), dt = p ? up - NUM(p, "uptime_s") : 0;
    if (p && !(dt > 0))
        p = NULL; /* restarted between the readings */
    char when[32];
    time_t now = time(NULL);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
    fprintf(fp, "cachet top  %s  %s  uptime %.0fh%02.0fm%02.0fs  configuration %s\n\n", t->name,
            when, floor(up / 3600), fmod(floor(up / 60), 60), fmod(floor(up), 60),
            get(c, "reload.generation") ? get(c, "reload.generation") : "-");
    fprintf(fp, "%-34s %14s %14s\n", "FIELD", "CURRENT", "CHANGE/s");
#define P(...) (p ? NUM(p, __VA_ARGS__) : NAN)
    double req = 0, preq = 0;
    static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx", "none"};
    for (size_t i = 0; i < CT_ARRAY_LEN(classes); i++) {
        req += NUM(c, "requests.%s", classes[i]);
        preq += P("requests.%s", classes[i]);
    }
    row(fp, 0, "requests", req, preq, dt, false, false);
    for (size_t i = 0; i < CT_ARRAY_LEN(cache_statuses); i++) {
        char name[48];
        snprintf(name, sizeof(name), "cache %s", cache_statuses[i]);
        row(fp, 2, name, NUM(c, "cache_requests.%s", cache_statuses[i]),
            P("cache_requests.%s", cache_statuses[i]), dt, false, false);
    }
    for (size_t i = 1; i < CT_ARRAY_LEN(classes) - 1; i++) {
        char name[48];
        snprintf(name, sizeof(name), "status %s", classes[i]);
        row(fp, 2, name, NUM(c, "requests.%s", classes[i]), P("requests.%s", classes[i]), dt,
            false, false);
    }
    double lookups = 0, hits = NUM(c, "cache_requests.hit") - (p ? P("cache_requests.hit") : 0);
    static const char *const looked[] = {"hit", "miss", "stale", "coalesced", "hit_for_miss"};
    for (size_t i = 0; i < CT_ARRAY_LEN(looked); i++)
        lookups += NUM(c, "cache_requests.%s", looked[i]) - (p ? P("cache_requests.%s", looked[i]) : 0);
    char ratio[32] = "-", l50[32], l90[32], l99[32];
    if (lookups > 0)
        snprintf(ratio, sizeof(ratio), "%.1f%%", 100 * hits / lookups);
    fprintf(fp, "%-34s %14s\n", "hit ratio (this interval)", ratio);
    fmt_s(l50, sizeof(l50), quantile(0.5, p, c));
    fmt_s(l90, sizeof(l90), quantile(0.9, p, c));
    fmt_s(l99, sizeof(l99), quantile(0.99, p, c));
    fprintf(fp, "%-34s %14s %14s %14s\n", "latency p50 / p90 / p99", l50, l90, l99);
    row(fp, 0, "connections open", NUM(c, "connections_open"), NAN, dt, false, true);
    row(fp, 2, "http", NUM(c, "connections_open_by_proto.http"), NAN, dt, false, true);
    row(fp, 2, "https", NUM(c, "connections_open_by_proto.https"), NAN, dt, false, true);
    row(fp, 2, "h2", NUM(c, "connections_open_by_proto.h2"), NAN, dt, false, true);
    row(fp, 0, "h2 streams", NUM(c, "h2_streams"), P("h2_streams"), dt, false, false);
    row(fp, 0, "connections accepted", NUM(c, "connections_accepted"), P("connections_accepted"),
        dt, false, false);
    row(fp, 0, "request bytes", NUM(c, "request_bytes"), P("request_bytes"), dt, true, false);
    row(fp, 0, "response body bytes", NUM(c, "response_body_bytes"), P("response_body_bytes"),
        dt, true, false);
    if (get(c, "tls.handshakes_full")) {
        row(fp, 0, "tls handshakes full", NUM(c, "tls.handshakes_full"),
            P("tls.handshakes_full"), dt, false, false);
        row(fp, 0, "tls handshakes resumed", NUM(c, "tls.handshakes_resumed"),
            P("tls.handshakes_resumed"), dt, false, false);
    }
    if (get(c, "cache.bytes")) {
        char used[32], max[32], line[80];
        fmt_num(used, sizeof(used), NUM(c, "cache.bytes"), true);
        fmt_num(max, sizeof(max), NUM(c, "cache.max_bytes"), true);
        snprintf(line, sizeof(line), "%s of %s (%.1f%%)", used, max,
                 100 * NUM(c, "cache.bytes") / NUM(c, "cache.max_bytes"));
        fprintf(fp, "%-34s %29s\n", "cache memory", line);
        row(fp, 0, "cache objects", NUM(c, "cache.objects"), NAN, dt, false, true);
        row(fp, 0, "cache evictions", NUM(c, "cache.evictions"), P("cache.evictions"), dt, false,
            false);
    }
    row(fp, 0, "admin event streams", NUM(c, "admin_event_streams"), NAN, dt, false, true);
    fprintf(fp, "%-34s %14s %14s\n", "reloads ok / failed", get(c, "reload.ok"),
            get(c, "reload.failed"));
    fprintf(fp, "\n%-28s %-11s %12s %10s %9s %9s %9s\n", "BACKEND", "HEALTH", "REQUESTS",
            "REQ/S", "ERRORS", "TIMEOUTS", "RETRIES");
    for (size_t i = 0; get(c, "backends.%zu.name", i); i++) {
        const char *upv = get(c, "backends.%zu.up", i);
        double r = NUM(c, "backends.%zu.upstream_requests", i);
        double pr = P("backends.%zu.upstream_requests", i);
        char rate[32] = "-";
        if (p && !isnan(pr) && r >= pr)
            fmt_num(rate, sizeof(rate), (r - pr) / dt, false);
        const char *dr = get(c, "backends.%zu.drain", i);
        bool drained = dr && strcmp(dr, "true") == 0;
        fprintf(fp, "%-28s %-11s %12.0f %10s %9.0f %9.0f %9.0f\n", get(c, "backends.%zu.name", i),
                drained ? "DRAIN" : upv == NULL ? "not checked" : strcmp(upv, "true") == 0 ? "up" : "DOWN", r, rate,
                NUM(c, "backends.%zu.upstream_errors", i),
                NUM(c, "backends.%zu.upstream_timeouts", i),
                NUM(c, "backends.%zu.upstream_retries", i));
    }
#undef P
}

/* ---- the commands ----------------------------------------------------------------------- */

static volatile sig_atomic_t stop;
static void on_stop(int sig) { stop = sig; }

static int usage(FILE *fp, int rc)
{
    fprintf(fp,
            "usage: cachet ctl COMMAND [--admin ADDR:PORT | -c FILE] [--token-file FILE | "
            "--token TOKEN]\n"
            "  top [-i SECONDS] [-1|--once]   the figures, refreshed (--once: one table)\n"
            "  stats [--json]                 every /stats figure, one \"name value\" a line\n"
            "  purge --tag T [--tag U ...] | --url URL | --prefix URL  [--soft]\n"
            "                                 purge by tag, URL or URL prefix\n"
            "  ban [--soft] 'EXPR'            ban, e.g. 'obj.http.x-tag ~ \"^a\" && "
            "obj.url ^= \"/img/\"'\n"
            "  bans                           the active bans (JSON)\n"
            "  reload                         reload the configuration: applied or refused, and why\n"
            "  backend NAME drain|enable      take a backend out of rotation (in-flight requests\n"
            "                                 finish) or put it back\n"
            "  certs [--json]                 ACME certificates: expiry, last order, next renewal\n"
            "The admin listener is 127.0.0.1:8082 unless --admin or -c FILE (its admin.listen\n"
            "and its token) say otherwise. Exit status: 0 done, 1 cachet could not be read,\n"
            "2 bad command line, 3 cachet refused the request (the reason on stderr).\n");
    return rc;
}

/* Options every command takes; *I is moved past a value it consumed. True
 * if ARGV[*I] was one of them (or an error, then *RC is set). */
struct common {
    const char *admin, *conf, *token, *token_file;
};

static bool common_opt(struct common *co, int argc, char **argv, int *i, int *rc)
{
    const char *a = argv[*i];
    bool has = *i + 1 < argc;
    const char **dst = (strcmp(a, "--admin") == 0 || strcmp(a, "-a") == 0) ? &co->admin
                       : strcmp(a, "-c") == 0                              ? &co->conf
                       : strcmp(a, "--token") == 0                         ? &co->token
                       : strcmp(a, "--token-file") == 0                    ? &co->token_file
                                                                           : NULL;
    if (dst == NULL)
        return false;
    if (!has) {
        fprintf(stderr, "cachet ctl: %s needs a value\n", a);
        *rc = 2;
        return true;
    }
    *dst = argv[++*i];
    return true;
}

/* The token of FILE: its first line. */
static bool read_token(const char *path, char *out, size_t cap)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        fprintf(stderr, "cachet ctl: --token-file: cannot read \"%s\": %s\n", path,
                strerror(errno));
        return false;
    }
    bool ok = fgets(out, (int)cap, fp) != NULL;
    fclose(fp);
    out[ok ? strcspn(out, "\r\n") : 0] = '\0';
    if (out[0] == '\0')
        fprintf(stderr, "cachet ctl: --token-file: \"%s\" has no token on its first line\n", path);
    return out[0] != '\0';
}

/* The admin listener (and its token, unless one was given) of configuration
 * file PATH. */
static bool target_of_conf(const char *path, struct target *t)
{
    struct ct_conf_errors *errs = ct_xcalloc(1, sizeof(*errs));
    struct ct_conf *cf = NULL;
    ct_conf_errors_init(errs);
    bool ok = ct_conf_load_file(path, &cf, errs) == CT_OK;
    if (!ok)
        ct_conf_errors_print(errs, stderr);
    else if (!cf->admin.enabled)
        fprintf(stderr, "cachet ctl: %s: the admin listener is off\n", path), ok = false;
    if (ok) {
        memcpy(&t->sa, &cf->admin.addr.sa, cf->admin.addr.salen);
        t->salen = cf->admin.addr.salen;
        snprintf(t->name, sizeof(t->name), "%s:%u", cf->admin.addr.host, cf->admin.addr.port);
        const char *tok = ct_conf_admin_token(&cf->admin);
        if (tok && t->token[0] == '\0')
            snprintf(t->token, sizeof(t->token), "%s", tok);
    }
    ct_conf_free(&cf);
    free(errs);
    return ok;
}

/* The target the common options name; the exit status on failure (else 0). */
static int resolve(const struct common *co, struct target *t)
{
    memset(t, 0, sizeof(*t));
    if (co->token && co->token_file) {
        fprintf(stderr, "cachet ctl: --token and --token-file: give one\n");
        return 2;
    }
    if (co->token)
        snprintf(t->token, sizeof(t->token), "%s", co->token);
    if (co->token_file && !read_token(co->token_file, t->token, sizeof(t->token)))
        return 1;
    if (co->conf)
        return target_of_conf(co->conf, t) ? 0 : 1;
    const char *admin = co->admin ? co->admin : "127.0.0.1:8082";
    if (!target_of(admin, t)) {
        fprintf(stderr, "cachet ctl: --admin: expected ADDR:PORT, got '%s'\n", admin);
        return 2;
    }
    snprintf(t->name, sizeof(t->name), "%s", admin);
    return 0;
}

static int top(int argc, char **argv)
{
    struct target t;
    struct common co = {0};
    double interval = 1;
    bool once = false;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (common_opt(&co, argc, argv, &i, &rc)) {
            if (rc)
                return rc;
        } else if (strcmp(a, "-1") == 0 || strcmp(a, "--once") == 0) {
            once = true;
        } else if ((strcmp(a, "-i") == 0 || strcmp(a, "--interval") == 0) && has) {
            char *end;
            interval = strtod(argv[++i], &end);
            if (*end || !(interval >= 0.1 && interval <= 3600)) {
                fprintf(stderr, "cachet ctl top: -i: expected seconds from 0.1 to 3600\n");
                return 2;
            }
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return usage(stdout, 0);
        } else {
            fprintf(stderr, "cachet ctl top: unknown or incomplete option '%s'\n", a);
            return usage(stderr, 2);
        }
    }
    if ((rc = resolve(&co, &t)) != 0)
        return rc;
    signal(SIGINT, on_stop);
    signal(SIGTERM, on_stop);
    struct reading prev = {0}, cur = {0};
    char err[384];
    for (int n = 0; !stop; n++) {
        if (fetch(&t, &cur, err, sizeof(err)) != CT_OK) {
            fprintf(stderr, "cachet ctl top: %s\n", err);
            rc = 1;
            break;
        }
        if (!once || n == 1) {
            if (!once)
                fputs("\033[H\033[2J", stdout); /* home, clear: a refreshing screen */
            show(stdout, &t, n ? &prev : NULL, &cur);
            if (fflush(stdout) == EOF || ferror(stdout))
                break; /* nobody reads any more (a closed terminal, a pipe) */
        }
        reading_free(&prev);
        prev = cur;
        memset(&cur, 0, sizeof(cur));
        if (once && n == 1)
            break;
        struct timespec ts = {(time_t)interval, (long)((interval - floor(interval)) * 1e9)};
        nanosleep(&ts, NULL); /* a signal cuts it short */
    }
    reading_free(&prev);
    reading_free(&cur);
    return rc;
}

/* Percent-encode S (RFC 3986 unreserved kept) onto OUT[*LEN..CAP). */
static bool put_enc(char *out, size_t cap, size_t *len, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || strchr("-._~", ch);
        if (*len + 4 >= cap)
            return false;
        if (keep) {
            out[(*len)++] = (char)ch;
        } else {
            out[(*len)++] = '%';
            out[(*len)++] = hex[ch >> 4];
            out[(*len)++] = hex[ch & 15];
        }
    }
    out[*len] = '\0';
    return true;
}

static bool put_lit(char *out, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 >= cap)
        return false;
    memcpy(out + *len, s, n + 1);
    *len += n;
    return true;
}

/* Send METHOD PATH (BODY) and report: the answer on stdout (200, and 404
 * for a purge that matched nothing), the reason on stderr otherwise. */
static int send_cmd(const char *cmd, const struct target *t, const char *method, const char *path,
                    const char *body, bool ok_404)
{
    unsigned status = 0;
    char *resp = NULL, err[384];
    if (request(t, method, path, body, &status, &resp, err, sizeof(err)) != CT_OK) {
        fprintf(stderr, "cachet ctl %s: %s\n", cmd, err);
        return strstr(err, ": 401:") ? 3 : 1;
    }
    int rc = status == 200 || (ok_404 && status == 404) ? 0 : status >= 500 && status != 503 ? 1 : 3;
    if (rc == 0) {
        fputs(resp, stdout);
    } else {
        /* {"error":"..."}: the reason alone, its JSON escapes decoded, reads
         * better in a terminal */
        const char *e = strstr(resp, "\"error\":\"");
        char reason[512];
        size_t n = 0;
        struct jp j = {.p = e ? e + 8 : NULL, .end = resp + strlen(resp)};
        if (e && jstring(&j, reason, sizeof(reason), &n)) {
            fprintf(stderr, "cachet ctl %s: %u: %.*s\n", cmd, status, (int)n, reason);
        } else {
            fprintf(stderr, "cachet ctl %s: %u: %s", cmd, status, resp);
        }
    }
    free(resp);
    return rc;
}

static int purge(int argc, char **argv)
{
    struct common co = {0};
    struct target t;
    char path[8192] = "/purge?";
    size_t len = strlen(path);
    int rc = 0, kinds = 0;
    bool soft = false, tag = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (common_opt(&co, argc, argv, &i, &rc)) {
            if (rc)
                return rc;
        } else if (strcmp(a, "--soft") == 0) {
            soft = true;
        } else if ((strcmp(a, "--tag") == 0 || strcmp(a, "--url") == 0 ||
                    strcmp(a, "--prefix") == 0) && has) {
            bool is_tag = a[2] == 't';
            if (!is_tag || !tag)
                kinds++;
            tag = tag || is_tag;
            if (!put_lit(path, sizeof(path), &len, len > 7 ? "&" : "") ||
                !put_lit(path, sizeof(path), &len, a + 2) ||
                !put_lit(path, sizeof(path), &len, "=") ||
                !put_enc(path, sizeof(path), &len, argv[++i])) {
                fprintf(stderr, "cachet ctl purge: the request is too long\n");
                return 2;
            }
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return usage(stdout, 0);
        } else {
            fprintf(stderr, "cachet ctl purge: unknown or incomplete option '%s'\n", a);
            return usage(stderr, 2);
        }
    }
    if (kinds != 1) {
        fprintf(stderr, "cachet ctl purge: expected --tag T (repeatable), --url URL or "
                        "--prefix URL, one kind\n");
        return 2;
    }
    if (soft)
        put_lit(path, sizeof(path), &len, "&soft=1");
    if ((rc = resolve(&co, &t)) != 0)
        return rc;
    return send_cmd("purge", &t, "POST", path, NULL, true);
}

static int ban(int argc, char **argv)
{
    struct common co = {0};
    struct target t;
    const char *expr = NULL;
    bool soft = false;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (common_opt(&co, argc, argv, &i, &rc)) {
            if (rc)
                return rc;
        } else if (strcmp(a, "--soft") == 0) {
            soft = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return usage(stdout, 0);
        } else if (a[0] != '-' && expr == NULL) {
            expr = a;
        } else {
            fprintf(stderr, "cachet ctl ban: unknown option or a second expression '%s' "
                            "(quote the expression as one argument)\n", a);
            return usage(stderr, 2);
        }
    }
    if (expr == NULL) {
        fprintf(stderr, "cachet ctl ban: expected an expression, e.g. "
                        "'obj.http.x-tag ~ \"^a\" && obj.url ^= \"/img/\"'\n");
        return 2;
    }
    if ((rc = resolve(&co, &t)) != 0)
        return rc;
    return send_cmd("ban", &t, "POST", soft ? "/ban?soft=1" : "/ban", expr, false);
}

/* stats (flat "name value" lines, as varnishstat -1) and bans (JSON as sent). */
static int simple_get(const char *cmd, int argc, char **argv)
{
    struct common co = {0};
    struct target t;
    bool json = strcmp(cmd, "bans") == 0;
    bool certs = strcmp(cmd, "certs") == 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (common_opt(&co, argc, argv, &i, &rc)) {
            if (rc)
                return rc;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            return usage(stdout, 0);
        } else {
            fprintf(stderr, "cachet ctl %s: unknown or incomplete option '%s'\n", cmd, argv[i]);
            return usage(stderr, 2);
        }
    }
    if ((rc = resolve(&co, &t)) != 0)
        return rc;
    if (certs) /* the table is cachet's (it knows the names' states) */
        return send_cmd(cmd, &t, "GET", json ? "/certs" : "/certs?format=text", NULL, false);
    if (json)
        return send_cmd(cmd, &t, "GET", strcmp(cmd, "bans") == 0 ? "/bans" : "/stats", NULL,
                        false);
    struct reading r = {0};
    char err[384];
    if (fetch(&t, &r, err, sizeof(err)) != CT_OK) {
        fprintf(stderr, "cachet ctl stats: %s\n", err);
        return strstr(err, ": 401:") ? 3 : 1;
    }
    for (size_t i = 0; i < r.n; i++)
        printf("%s %s\n", r.v[i].path, r.v[i].val);
    reading_free(&r);
    return 0;
}

/* Options every command takes, and nothing else but "-h"; the exit status
 * of a bad one (2), 0 if all were fine, -1 after printing the usage. */
static int only_common(const char *cmd, struct common *co, int argc, char **argv, int first)
{
    int rc = 0;
    for (int i = first; i < argc; i++) {
        if (common_opt(co, argc, argv, &i, &rc)) {
            if (rc)
                return rc;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout, 0);
            return -1;
        } else {
            fprintf(stderr, "cachet ctl %s: unknown or incomplete option '%s'\n", cmd, argv[i]);
            return usage(stderr, 2);
        }
    }
    return 0;
}

static int reload(int argc, char **argv)
{
    struct common co = {0};
    struct target t;
    int rc = only_common("reload", &co, argc, argv, 1);
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = resolve(&co, &t)) != 0)
        return rc;
    unsigned status = 0;
    char *resp = NULL, err[384];
    if (request(&t, "POST", "/reload", NULL, &status, &resp, err, sizeof(err)) != CT_OK) {
        fprintf(stderr, "cachet ctl reload: %s\n", err);
        return 1;
    }
    struct reading r = {0};
    bool ok = parse(resp, strlen(resp), &r);
    const char *res = ok ? get(&r, "result") : NULL;
    if (status == 200 && res && strcmp(res, "applied") == 0) {
        printf("applied: configuration %s\n", get(&r, "configuration"));
        for (size_t i = 0; get(&r, "warnings.%zu", i); i++)
            printf("warning: %s\n", get(&r, "warnings.%zu", i));
        rc = 0;
    } else if (res && strcmp(res, "refused") == 0) {
        fprintf(stderr, "refused%s\n", get(&r, "errors.0") ? ":" : "");
        for (size_t i = 0; get(&r, "errors.%zu", i); i++)
            fprintf(stderr, "  %s\n", get(&r, "errors.%zu", i));
        rc = 3;
    } else {
        const char *e = ok ? get(&r, "error") : NULL;
        fprintf(stderr, "cachet ctl reload: %u: %s%s", status, e ? e : resp, e ? "\n" : "");
        rc = status >= 500 ? 1 : 3;
    }
    reading_free(&r);
    free(resp);
    return rc;
}

static int backend(int argc, char **argv)
{
    struct common co = {0};
    struct target t;
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
        return usage(stdout, 0);
    if (argc < 3 || argv[1][0] == '-' ||
        (strcmp(argv[2], "drain") != 0 && strcmp(argv[2], "enable") != 0)) {
        fprintf(stderr, "cachet ctl backend: expected NAME drain|enable\n");
        return 2;
    }
    int rc = only_common("backend", &co, argc, argv, 3);
    if (rc)
        return rc < 0 ? 0 : rc;
    char path[1024] = "/backend?name=";
    size_t len = strlen(path);
    if (!put_enc(path, sizeof(path), &len, argv[1]) ||
        !put_lit(path, sizeof(path), &len, "&state=") ||
        !put_lit(path, sizeof(path), &len, argv[2])) {
        fprintf(stderr, "cachet ctl backend: the name is too long\n");
        return 2;
    }
    if ((rc = resolve(&co, &t)) != 0)
        return rc;
    return send_cmd("backend", &t, "POST", path, NULL, false);
}

int ct_ctl_main(int argc, char **argv)
{
    /* The server's signals (SIGUSR1 reopen logs, SIGHUP reload), sent with
     * `kill -USR1 $(pidof cachet)`, reach this process too (the same name):
     * they must not end a `ctl top` session. A hung-up terminal still ends
     * it: its writes fail (top stops then). */
    signal(SIGUSR1, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    const char *cmd = argc >= 2 ? argv[1] : "";
    if (strcmp(cmd, "top") == 0)
        return top(argc - 1, argv + 1);
    if (strcmp(cmd, "purge") == 0)
        return purge(argc - 1, argv + 1);
    if (strcmp(cmd, "ban") == 0)
        return ban(argc - 1, argv + 1);
    if (strcmp(cmd, "stats") == 0 || strcmp(cmd, "bans") == 0 || strcmp(cmd, "certs") == 0)
        return simple_get(cmd, argc - 1, argv + 1);
    if (strcmp(cmd, "reload") == 0)
        return reload(argc - 1, argv + 1);
    if (strcmp(cmd, "backend") == 0)
        return backend(argc - 1, argv + 1);
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0)
        return usage(stdout, 0);
    fprintf(stderr, "cachet ctl: expected a command: top, stats, purge, ban, bans, certs, reload or "
                    "backend\n");
    return usage(stderr, 2);
}
