/*
 * bench/micro/bench_http_parse.c: micro-benchmark of the request parser
 * (http/http.h), one thread.
 *
 * Two requests, each parsed over and over on one keep-alive parser (the
 * steady state of a connection: no allocation once warm) for about
 * --seconds (default 2) each:
 *   small  ~100 B: a GET with Host, User-Agent, Accept
 *   large  ~2 KiB: a GET with 20 header fields (cookies, UAs, accept-*)
 * For scale, the same bytes through bare http_parser_execute() with no
 * callbacks: the lenient library alone, which no longer reads our heads
 * (http_parse.c says why); our strict parse does more per byte and still
 * costs about as much on small heads and less on large ones.
 *
 * Times are thread CPU seconds, so other load on the machine does not count
 * (it still costs caches). Each row is the median of --rounds (default 3)
 * with the min-max of requests/s.
 *
 * Usage: bench_http_parse [--seconds S] [--rounds N]. Prints MB/s, req/s.
 */
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/http.h"

/* Thread CPU time, not wall time: the machine is shared, and CPU per
 * request is what carries over (bench/README.md). */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char small_req[] = "GET /index.html?id=42 HTTP/1.1\r\n"
                                "Host: www.example.com\r\n"
                                "User-Agent: bench/1.0\r\n"
                                "Accept: */*\r\n"
                                "\r\n";

static char large_req[4096];
static size_t large_len;

static void build_large(void)
{
    static const char *const fields[] = {
        "Host: www.example.com",
        "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/120.0.0.0 Safari/537.36",
        "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
        "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
        "Accept-Encoding: gzip, deflate, br",
        "Accept-Language: en-US,en;q=0.9,fr;q=0.8,de;q=0.7",
        "Cache-Control: max-age=0",
        "Connection: keep-alive",
        "Cookie: session=0123456789abcdef0123456789abcdef; prefs=theme%3Ddark%26lang%3Den; "
        "_ga=GA1.2.1234567890.1234567890; _gid=GA1.2.0987654321.0987654321; "
        "csrftoken=abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdef",
        "Referer: https://www.example.com/some/where/else/page.html?from=search&q=cachet",
        "Sec-Ch-Ua: \"Not_A Brand\";v=\"8\", \"Chromium\";v=\"120\", \"Google Chrome\";v=\"120\"",
        "Sec-Ch-Ua-Mobile: ?0",
        "Sec-Ch-Ua-Platform: \"Linux\"",
        "Sec-Fetch-Dest: document",
        "Sec-Fetch-Mode: navigate",
        "Sec-Fetch-Site: same-origin",
        "Upgrade-Insecure-Requests: 1",
        "If-None-Match: \"5f1b-3c7a9e1d2b4f6a8c0e2d4f6a8c0e2d4f6a8c0e2d4f6a8c0e2d4f6a8c0e\"",
        "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT",
        "X-Request-Id: 7d9f3c2a-1b4e-4f6a-9c8d-0e1f2a3b4c5d-padding-to-make-the-request-larger-"
        "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234"
        "5678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
        "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234"
        "5678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
        "012345678901234567890123456789012345678901234567890123456789",
        "X-Debug-Trace: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01; "
        "vendor=abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789; "
        "more=abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789; "
        "end=abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefgh",
    };
    size_t n = (size_t)snprintf(large_req, sizeof(large_req),
                                "GET /a/fairly/long/path/to/a/"
                                "resource.html?with=query&and=more "
                                "HTTP/1.1\r\n");
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        n += (size_t)snprintf(large_req + n, sizeof(large_req) - n, "%s\r\n", fields[i]);
    n += (size_t)snprintf(large_req + n, sizeof(large_req) - n, "\r\n");
    large_len = n;
}

/* One message through our parser: HEAD, then END. */
static void parse_ours(struct ct_http_parser *p, const char *req, size_t len)
{
    size_t used, pos = 0;
    enum ct_http_ev ev = ct_http_parser_feed(p, req, len, &used, NULL);
    if (ev != CT_HTTP_EV_HEAD) {
        fprintf(stderr, "bench: expected HEAD, got %d (%u %s)\n", (int)ev,
                ct_http_parser_error_status(p), ct_http_parser_error_reason(p));
        exit(1);
    }
    pos += used;
    ev = ct_http_parser_feed(p, req + pos, len - pos, &used, NULL);
    if (ev != CT_HTTP_EV_END || pos + used != len) {
        fprintf(stderr, "bench: expected END\n");
        exit(1);
    }
}

static int bare_done(http_parser *hp)
{
    (void)hp;
    return 0;
}

static void parse_bare(http_parser *hp, const http_parser_settings *s, const char *req, size_t len)
{
    http_parser_init(hp, HTTP_REQUEST);
    if (http_parser_execute(hp, s, req, len) != len || hp->http_errno != HPE_OK) {
        fprintf(stderr, "bench: http_parser_execute failed\n");
        exit(1);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median and range of ROUNDS rates (requests per CPU second). */
static void report(const char *what, const char *name, size_t len, double *rates, int rounds)
{
    qsort(rates, (size_t)rounds, sizeof(*rates), cmp_double);
    double med = rates[rounds / 2];
    printf("%-9s %-10s %5zu B  %9.0f req/s (%.0f-%.0f)  %6.1f MB/s  %6.0f ns/req\n", what, name,
           len, med, rates[0], rates[rounds - 1], med * (double)len / 1e6, 1e9 / med);
}

static double run_ours(const char *req, size_t len, double seconds)
{
    struct ct_http_parser *p = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    double n = 0, t0 = now_s(), t;
    do {
        for (int i = 0; i < 1000; i++)
            parse_ours(p, req, len);
        n += 1000;
    } while ((t = now_s()) - t0 < seconds);
    ct_http_parser_free(&p);
    return n / (t - t0);
}

static double run_bare(const char *req, size_t len, double seconds)
{
    http_parser hp;
    http_parser_settings s;
    memset(&s, 0, sizeof(s));
    s.on_message_complete = bare_done;
    double n = 0, t0 = now_s(), t;
    do {
        for (int i = 0; i < 1000; i++)
            parse_bare(&hp, &s, req, len);
        n += 1000;
    } while ((t = now_s()) - t0 < seconds);
    return n / (t - t0);
}

static void bench_one(const char *name, const char *req, size_t len, double seconds, int rounds)
{
    double ours[16], bare[16];
    for (int r = 0; r < rounds; r++) { /* alternate, so drift hits both alike */
        ours[r] = run_ours(req, len, seconds / rounds);
        bare[r] = run_bare(req, len, seconds / rounds / 2);
    }
    report("cachet", name, len, ours, rounds);
    report("bare-lib", name, len, bare, rounds);
}

int main(int argc, char **argv)
{
    double seconds = 2.0;
    int rounds = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--seconds S] [--rounds N]\n", argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > 16 || !(seconds > 0)) {
        fprintf(stderr, "bench: --rounds 1..16, --seconds > 0\n");
        return 2;
    }
    build_large();
    printf("request parser, one thread, one keep-alive parser; ~%.1f CPU s per request size;\n"
           "median of %d rounds (min-max req/s); bare-lib: http_parser_execute alone, no "
           "callbacks\n",
           seconds, rounds);
    bench_one("small", small_req, sizeof(small_req) - 1, seconds, rounds);
    bench_one("large-20h", large_req, large_len, seconds, rounds);
    return 0;
}
