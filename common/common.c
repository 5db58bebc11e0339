/* common/common.c: panics, checked allocation, error names, string views, clocks. */
#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void ct_panic(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "PANIC %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

void *ct_xmalloc_at(size_t n, const char *file, int line)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        ct_panic(file, line, "out of memory allocating %zu bytes", n);
    return p;
}

void *ct_xcalloc_at(size_t nmemb, size_t size, const char *file, int line)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (p == NULL)
        ct_panic(file, line, "out of memory allocating %zu x %zu bytes", nmemb, size);
    return p;
}

void *ct_xrealloc_at(void *old, size_t n, const char *file, int line)
{
    void *p = realloc(old, n ? n : 1);
    if (p == NULL)
        ct_panic(file, line, "out of memory reallocating to %zu bytes", n);
    return p;
}

char *ct_xstrndup_at(const char *s, size_t n, const char *file, int line)
{
    char *p = ct_xmalloc_at(n + 1, file, line);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

const char *ct_strerror(int err)
{
    switch (err) {
    case CT_OK: return "ok";
    case CT_EAGAIN: return "need more input";
    case CT_EPROTO: return "protocol error";
    case CT_ELIMIT: return "limit exceeded";
    case CT_EIO: return "I/O error";
    case CT_ETIMEDOUT: return "timed out";
    case CT_ETLS: return "TLS error";
    case CT_ECONF: return "configuration error";
    case CT_ENOENT: return "not found";
    }
    return "unknown error";
}

/* Words X and Y hold the same bytes but for ASCII case: where they differ,
 * only in bit 0x20, and only where X's byte is a letter. */
static bool words_eq_ci(uint64_t x, uint64_t y)
{
    uint64_t d = x ^ y;
    if (d == 0)
        return true;
    if (d & ~(CT_LANES_ONES * 0x20))
        return false;
    uint64_t low7 = (x | CT_LANES_ONES * 0x20) & ~CT_LANES_HIGHS; /* lower-cased */
    uint64_t letter = ct_lanes_within(low7, 'a', 'z') & ~x;       /* not obs-text */
    return ((d << 2) & ~letter) == 0; /* 0x20 << 2 is the lane's high bit */
}

bool ct_str_eq_ci(struct ct_str a, struct ct_str b)
{
    if (a.len != b.len)
        return false;
    size_t i = 0;
    for (; a.len - i >= 8; i += 8) {
        uint64_t x, y;
        memcpy(&x, a.p + i, 8);
        memcpy(&y, b.p + i, 8);
        if (!words_eq_ci(x, y))
            return false;
    }
    return i == a.len ||
           words_eq_ci(ct_load_tail(a.p + i, a.len - i), ct_load_tail(b.p + i, a.len - i));
}

struct ct_str ct_str_trim_ows(struct ct_str s)
{
    while (s.len > 0 && (s.p[0] == ' ' || s.p[0] == '\t')) {
        s.p++;
        s.len--;
    }
    while (s.len > 0 && (s.p[s.len - 1] == ' ' || s.p[s.len - 1] == '\t'))
        s.len--;
    return s;
}

int ct_str_to_u64(struct ct_str s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (s.len == 0)
        return CT_EPROTO;
    for (size_t i = 0; i < s.len; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return CT_EPROTO;
        unsigned d = (unsigned)(s.p[i] - '0');
        if (d > max || v > (max - d) / 10)
            return CT_ELIMIT;
        v = v * 10 + d;
    }
    *out = v;
    return CT_OK;
}

ct_time_t ct_time_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ct_time_t ct_time_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

char *ct_path_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return ct_xstrdup(".");
    return ct_xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
}
