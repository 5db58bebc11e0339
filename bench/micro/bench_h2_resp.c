/*
 * bench/micro/bench_h2_resp.c: the HTTP/2 engine's cost per response, for
 * callgrind (docs/h2.md has the figures and the command):
 *
 *   valgrind --tool=callgrind --toggle-collect='ct_h2_*' bench_h2_resp [N] [M]
 *
 * An nghttp2 client sends N GETs, M streams in flight at a time (h2load -mM);
 * the engine validates each, and the owner answers each with a cache-hit-like
 * head (8 fields, 2 of them per-hit extras) and a 1 KiB body by reference
 * (NO_COPY). Only the engine's entry points are collected (the owner's calls
 * are made outside ct_h2_conn_recv(), so the toggles never nest), so the
 * figure is the engine: HPACK both ways, validation, framing, flow control.
 * Not a test; run by hand. Exits non-zero if a response went missing.
 *
 *   bench_h2_resp --idle N
 *
 * instead opens N engine connections, each past the SETTINGS exchange and
 * one request, idle, and prints the heap bytes each holds (mallinfo2).
 */
#include <event2/buffer.h>
#include <malloc.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/http.h"
#include "proxy/h2/h2.h"

struct drv {
    struct ct_h2_conn *h;
    nghttp2_session *c;
    struct evbuffer *out;
    int32_t pending[256];
    int npending;
    long done, body_bytes;
};

static void *on_request(void *owner, int32_t sid, const struct ct_http_msg *msg, bool end)
{
    struct drv *d = owner;
    d->pending[d->npending++] = sid;
    return d;
}

static void on_close(void *owner, void *req, int32_t sid, uint32_t code)
{
    struct drv *d = owner;
    if (code == 0)
        d->done++;
}

static int c_data(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *data, size_t len,
                  void *ud)
{
    struct drv *d = ud;
    d->body_bytes += (long)len;
    nghttp2_session_consume(s, sid, len);
    return 0;
}

static char body[1024];

static void answer(struct drv *d, int32_t sid)
{
    static const struct ct_http_field f[] = {
        {CT_STR("Content-Type"), CT_STR("text/plain"), CT_HDR_CONTENT_TYPE},
        {CT_STR("Content-Length"), CT_STR("1024"), CT_HDR_CONTENT_LENGTH},
        {CT_STR("ETag"), CT_STR("\"5f3a-400\""), CT_HDR_ETAG},
        {CT_STR("Last-Modified"), CT_STR("Tue, 01 Dec 2026 10:00:00 GMT"), CT_HDR_LAST_MODIFIED},
        {CT_STR("Date"), CT_STR("Tue, 01 Dec 2026 23:59:59 GMT"), CT_HDR_DATE},
        {CT_STR("Cache-Control"), CT_STR("max-age=3600"), CT_HDR_CACHE_CONTROL},
    };
    static const struct ct_http_field extra[] = {
        {CT_STR("Age"), CT_STR("12"), CT_HDR_AGE},
        {CT_STR("Cache-Status"), CT_STR("cachet; hit"), CT_HDR_CACHE_STATUS},
    };
    struct ct_http_msg resp = {.kind = CT_HTTP_RESPONSE, .status = 200};
    ct_http_msg_set_fields(&resp, f, sizeof f / sizeof f[0]);
    if (ct_h2_submit_head(d->h, sid, &resp, extra, 2, true) != CT_OK ||
        ct_h2_body_ref(d->h, sid, body, sizeof body, NULL, NULL) != CT_OK ||
        ct_h2_body_end(d->h, sid) != CT_OK)
        abort();
}

/* Client bytes to the engine, engine bytes to the client, until quiet. */
static void pump(struct drv *d)
{
    for (;;) {
        size_t moved = 0;
        const uint8_t *p;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(d->c, &p)) > 0) {
            if (ct_h2_conn_recv(d->h, p, (size_t)n, 0.0) != CT_OK)
                abort();
            moved += (size_t)n;
        }
        for (int i = 0; i < d->npending; i++)
            answer(d, d->pending[i]);
        d->npending = 0;
        if (ct_h2_conn_send(d->h, d->out, 1 << 20) != CT_OK)
            abort();
        size_t len = evbuffer_get_length(d->out);
        if (len) {
            unsigned char *b = evbuffer_pullup(d->out, -1);
            if (nghttp2_session_mem_recv(d->c, b, len) != (ssize_t)len)
                abort();
            evbuffer_drain(d->out, len);
            moved += len;
        }
        if (moved == 0)
            return;
    }
}

static void client_new(struct drv *d)
{
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_data);
    nghttp2_option *opt;
    nghttp2_option_new(&opt);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_session_client_new2(&d->c, cb, d, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(d->c, NGHTTP2_FLAG_NONE, NULL, 0);
}

#define NV(a, b)                                                                                   \
    {                                                                                              \
        (uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, 0                            \
    }
static nghttp2_nv req[] = {NV(":method", "GET"),
                           NV(":scheme", "https"),
                           NV(":authority", "bench.example"),
                           NV(":path", "/1k"),
                           NV("user-agent", "h2load nghttp2/1.52.0"),
                           NV("accept", "*/*"),
                           NV("accept-encoding", "gzip, deflate, br")};

/* Heap per idle connection: the engine's side only (the clients are
 * created first and their heap is not counted). */
static int idle(long n)
{
    struct drv *d = calloc((size_t)n, sizeof(*d));
    struct ct_h2_cbs cbs = {.on_request = on_request, .on_close = on_close};
    for (long i = 0; i < n; i++) {
        client_new(&d[i]);
        d[i].out = evbuffer_new();
    }
    size_t before = mallinfo2().uordblks;
    for (long i = 0; i < n; i++) {
        d[i].h = ct_h2_conn_new(NULL, &cbs, &d[i]);
        nghttp2_submit_request(d[i].c, NULL, req, sizeof req / sizeof req[0], NULL, NULL);
        pump(&d[i]); /* SETTINGS both ways, one hit, then idle */
    }
    size_t after = mallinfo2().uordblks;
    long done = 0;
    for (long i = 0; i < n; i++)
        done += d[i].done;
    printf("idle connections=%ld (%ld requests served), engine heap per connection=%zu bytes\n", n,
           done, (after - before) / (size_t)n);
    for (long i = 0; i < n; i++) {
        ct_h2_conn_free(&d[i].h);
        nghttp2_session_del(d[i].c);
        evbuffer_free(d[i].out);
    }
    free(d);
    return done == n ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--idle") == 0)
        return idle(atol(argv[2]));
    long n = argc > 1 ? atol(argv[1]) : 10000;
    int m = argc > 2 ? atoi(argv[2]) : 10;
    if (n <= 0 || m <= 0 || m > 200) {
        fprintf(stderr, "usage: bench_h2_resp [N] [M (1-200)]\n");
        return 2;
    }
    memset(body, 'x', sizeof body);
    struct drv d = {0};
    struct ct_h2_cbs cbs = {.on_request = on_request, .on_close = on_close};
    d.h = ct_h2_conn_new(NULL, &cbs, &d);
    d.out = evbuffer_new();
    client_new(&d);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long sent = 0; sent < n;) {
        for (int i = 0; i < m && sent < n; i++, sent++)
            if (nghttp2_submit_request(d.c, NULL, req, sizeof req / sizeof req[0], NULL, NULL) < 0)
                abort();
        pump(&d);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("responses=%ld of %ld, body bytes=%ld, %d in flight, %.0f responses/s (engine + "
           "client in one thread)\n",
           d.done, n, d.body_bytes, m, (double)d.done / s);
    ct_h2_conn_free(&d.h);
    nghttp2_session_del(d.c);
    evbuffer_free(d.out);
    return d.done == n && d.body_bytes == n * (long)sizeof body ? 0 : 1;
}
