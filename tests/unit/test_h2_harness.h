/*
 * tests/unit/test_h2_harness.h: drives the HTTP/2 engine in memory. A
 * `struct rig` holds the engine (server) with a recording owner, and an
 * nghttp2 CLIENT session; pump() moves bytes both ways until neither side
 * has anything to say. Hand-written frames (frame()) cover what a
 * well-behaved client library will not send. Static functions: each test
 * binary gets its own copy. Include after CUnit.
 */
#ifndef CT_TEST_H2_HARNESS_H
#define CT_TEST_H2_HARNESS_H

#include <event2/buffer.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "proxy/h2/h2.h"
#include "tests/unit/ct_test.h"

#define MAXS 64

/* What the owner (server side) saw of one stream. */
struct sreq {
    int32_t sid;
    char method[16], path[128], host[64];
    size_t nfields;
    bool end_stream, req_end, closed;
    uint32_t close_code;
    size_t body;    /* bytes read out with ct_h2_body_read() */
    bool read_body; /* read body as it comes */
    int bodies;     /* on_body calls */
};

/* What the client saw of one stream. */
struct cresp {
    int32_t sid;
    int status, interim;
    size_t body;
    char data[4096]; /* the first bytes of the body */
    bool closed, rst;
    uint32_t code;
};

struct rig {
    struct ct_h2_conn *h;
    nghttp2_session *c; /* NULL: hand-written client */
    struct evbuffer *out;
    struct sreq s[MAXS];
    int ns;
    struct cresp r[MAXS];
    int nr;
    bool read_bodies;  /* the owner reads every body as it comes */
    bool refuse;       /* on_request returns NULL */
    int inline_answer; /* on_request answers at once: 1 a 200 with a body, 2 a reset, 3 a 413 */
    int inline_released;
    bool goaway;
    uint32_t goaway_code;
    int32_t goaway_last;
    int rc; /* the last recv/send result that was not CT_OK */
    ct_time_t now;
    int32_t consume_only; /* the client opens only this stream's window (0: all) */
};

static struct sreq *sreq_of(struct rig *g, int32_t sid)
{
    for (int i = 0; i < g->ns; i++)
        if (g->s[i].sid == sid)
            return &g->s[i];
    return NULL;
}

static struct cresp *cresp_of(struct rig *g, int32_t sid)
{
    for (int i = 0; i < g->nr; i++)
        if (g->r[i].sid == sid)
            return &g->r[i];
    CU_ASSERT_FATAL(g->nr < MAXS);
    g->r[g->nr] = (struct cresp){.sid = sid};
    return &g->r[g->nr++];
}

/* ---- the owner ----------------------------------------------------------- */

static inline void release_count(void *arg)
{
    (*(int *)arg)++;
}

static inline void copy_str(char *dst, size_t cap, struct ct_str s)
{
    size_t n = CT_MIN(s.len, cap - 1);
    memcpy(dst, s.p, n);
    dst[n] = '\0';
}

static inline void *o_request(void *owner, int32_t sid, const struct ct_http_msg *msg, bool end)
{
    struct rig *g = owner;
    CU_ASSERT_FATAL(g->ns < MAXS);
    struct sreq *q = &g->s[g->ns++];
    *q = (struct sreq){
        .sid = sid, .end_stream = end, .nfields = msg->nfields, .read_body = g->read_bodies};
    copy_str(q->method, sizeof q->method, msg->method_name);
    copy_str(q->path, sizeof q->path, msg->target);
    const struct ct_http_field *host = ct_http_msg_find(msg, CT_HDR_HOST, NULL);
    if (host)
        copy_str(q->host, sizeof q->host, host->value);
    if (g->inline_answer == 1) {
        static const char hit[] = "answered from the callback";
        struct ct_http_msg resp = {.kind = CT_HTTP_RESPONSE, .status = 200};
        CU_ASSERT_EQUAL(ct_h2_submit_head(g->h, sid, &resp, NULL, 0, true), CT_OK);
        CU_ASSERT_EQUAL(
            ct_h2_body_ref(g->h, sid, hit, sizeof hit - 1, release_count, &g->inline_released),
            CT_OK);
        CU_ASSERT_EQUAL(ct_h2_body_end(g->h, sid), CT_OK);
    } else if (g->inline_answer == 3) {
        struct ct_http_msg resp = {.kind = CT_HTTP_RESPONSE, .status = 413};
        CU_ASSERT_EQUAL(ct_h2_submit_head(g->h, sid, &resp, NULL, 0, false), CT_OK);
    } else if (g->inline_answer == 2) {
        CU_ASSERT_EQUAL(ct_h2_reset(g->h, sid, NGHTTP2_REFUSED_STREAM), CT_OK);
    }
    return g->refuse ? NULL : q;
}

static inline void o_body(void *owner, void *req, int32_t sid)
{
    struct rig *g = owner;
    struct sreq *q = req;
    CU_ASSERT_EQUAL(q->sid, sid);
    q->bodies++;
    if (q->read_body) {
        struct evbuffer *b = evbuffer_new();
        q->body += ct_h2_body_read(g->h, sid, b, SIZE_MAX);
        evbuffer_free(b);
    }
}

static inline void o_end(void *owner, void *req, int32_t sid)
{
    struct rig *g = owner;
    struct sreq *q = req;
    CU_ASSERT_FALSE(q->req_end);
    q->req_end = true;
    if (q->read_body) { /* the byte that completes a content-length comes only now */
        struct evbuffer *b = evbuffer_new();
        q->body += ct_h2_body_read(g->h, sid, b, SIZE_MAX);
        evbuffer_free(b);
    }
}

static inline void o_close(void *owner, void *req, int32_t sid, uint32_t code)
{
    struct sreq *q = req;
    CU_ASSERT_FALSE(q->closed);
    q->closed = true;
    q->close_code = code;
}

static const struct ct_h2_cbs owner_cbs = {o_request, o_body, o_end, o_close};

/* ---- the client ---------------------------------------------------------- */

static inline int c_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                           size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
    struct rig *g = ud;
    if (f->hd.type == NGHTTP2_HEADERS && nl == 7 && memcmp(name, ":status", 7) == 0) {
        struct cresp *r = cresp_of(g, f->hd.stream_id);
        int st = atoi((const char *)value);
        if (st < 200)
            r->interim = st;
        else
            r->status = st;
    }
    return 0;
}

static inline int c_data(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *data,
                         size_t len, void *ud)
{
    struct rig *g = ud;
    struct cresp *r = cresp_of(g, sid);
    if (r->body < sizeof r->data)
        memcpy(r->data + r->body, data, CT_MIN(len, sizeof r->data - r->body));
    r->body += len;
    if (g->consume_only == 0 || g->consume_only == sid)
        nghttp2_session_consume(s, sid, len);
    return 0;
}

static inline int c_close(nghttp2_session *s, int32_t sid, uint32_t code, void *ud)
{
    struct rig *g = ud;
    struct cresp *r = cresp_of(g, sid);
    r->closed = true;
    r->code = code;
    return 0;
}

static inline int c_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    struct rig *g = ud;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        g->goaway = true;
        g->goaway_code = f->goaway.error_code;
        g->goaway_last = f->goaway.last_stream_id;
    }
    if (f->hd.type == NGHTTP2_RST_STREAM)
        cresp_of(g, f->hd.stream_id)->rst = true;
    return 0;
}

/* A rig with server settings S (NULL: defaults); a client session unless
 * HAND (then the test writes the client's bytes). CLIENT_WINDOW: the
 * client's SETTINGS_INITIAL_WINDOW_SIZE (0: default), with its window
 * updates under the test's control (consume_only). */
static inline void rig_init(struct rig *g, const struct ct_h2_settings *s, bool hand,
                            uint32_t client_window)
{
    memset(g, 0, sizeof(*g));
    g->now = 1000.0;
    g->h = ct_h2_conn_new(s, &owner_cbs, g);
    g->out = evbuffer_new();
    if (hand)
        return;
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, c_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, c_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, c_frame);
    nghttp2_option *opt;
    nghttp2_option_new(&opt);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    CU_ASSERT_EQUAL_FATAL(nghttp2_session_client_new2(&g->c, cb, g, opt), 0);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry iv[1] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, client_window}};
    nghttp2_submit_settings(g->c, NGHTTP2_FLAG_NONE, iv, client_window ? 1 : 0);
}

static inline void rig_free(struct rig *g)
{
    ct_h2_conn_free(&g->h);
    CU_ASSERT_PTR_NULL(g->h);
    if (g->c)
        nghttp2_session_del(g->c);
    evbuffer_free(g->out);
}

/* Give the server BUF[0..LEN) as one read. */
static inline void to_server(struct rig *g, const void *buf, size_t len)
{
    int rc = ct_h2_conn_recv(g->h, buf, len, g->now);
    if (rc != CT_OK)
        g->rc = rc;
}

/* Server output to the client (or just collect it in g->out when HAND). */
static inline size_t from_server(struct rig *g)
{
    size_t before = evbuffer_get_length(g->out);
    int rc = ct_h2_conn_send(g->h, g->out, 1 << 20);
    if (rc != CT_OK)
        g->rc = rc;
    size_t n = evbuffer_get_length(g->out);
    if (g->c && n) {
        unsigned char *p = evbuffer_pullup(g->out, -1);
        ssize_t used = nghttp2_session_mem_recv(g->c, p, n);
        CU_ASSERT_EQUAL(used, (ssize_t)n);
        evbuffer_drain(g->out, n);
    }
    return n - (g->c ? 0 : before);
}

/* Both ways until quiet (bounded: a livelock fails the test, never hangs). */
static inline void pump(struct rig *g)
{
    for (int round = 0; round < 10000; round++) {
        size_t moved = 0;
        if (g->c) {
            const uint8_t *p;
            ssize_t n;
            while ((n = nghttp2_session_mem_send(g->c, &p)) > 0) {
                to_server(g, p, (size_t)n);
                moved += (size_t)n;
            }
        }
        moved += from_server(g);
        if (moved == 0)
            return;
    }
    CU_FAIL("pump did not settle");
}

/* A request from the client: NV as "name", "value", ..., NULL. BODY (LEN
 * bytes, may be NULL) goes as DATA with END_STREAM; NULL BODY and !OPEN:
 * END_STREAM on HEADERS. */
struct body_src {
    const char *p;
    size_t len, off;
};

static inline ssize_t body_read_cb(nghttp2_session *s, int32_t sid, uint8_t *buf, size_t length,
                                   uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    struct body_src *b = src->ptr;
    size_t n = CT_MIN(length, b->len - b->off);
    memcpy(buf, b->p + b->off, n);
    b->off += n;
    if (b->off == b->len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static inline int32_t request(struct rig *g, const char *const *nv, struct body_src *body)
{
    nghttp2_nv a[32];
    size_t n = 0;
    for (; nv[2 * n]; n++)
        a[n] = (nghttp2_nv){(uint8_t *)nv[2 * n], (uint8_t *)nv[2 * n + 1], strlen(nv[2 * n]),
                            strlen(nv[2 * n + 1]),
                            /* names as written: nghttp2 lower-cases the ones it copies */
                            NGHTTP2_NV_FLAG_NO_COPY_NAME};
    nghttp2_data_provider prd = {.source.ptr = body, .read_callback = body_read_cb};
    int32_t sid = nghttp2_submit_request(g->c, NULL, a, n, body ? &prd : NULL, NULL);
    CU_ASSERT_FATAL(sid > 0);
    return sid;
}

#define GET_NV(path) ":method", "GET", ":scheme", "https", ":authority", "t.example", ":path", path

/* A response from the owner: STATUS, one field, body from BODY (by
 * reference, released into *RELEASED) or none. */

static inline void respond(struct rig *g, int32_t sid, unsigned status, const char *body,
                           size_t len, int *released)
{
    struct ct_http_field f[2] = {
        {CT_STR("Content-Type"), CT_STR("text/plain"), CT_HDR_CONTENT_TYPE},
        {CT_STR("Connection"), CT_STR("keep-alive"), CT_HDR_CONNECTION}};
    struct ct_http_msg resp = {.kind = CT_HTTP_RESPONSE, .status = status};
    ct_http_msg_set_fields(&resp, f, 2);
    CU_ASSERT_EQUAL(ct_h2_submit_head(g->h, sid, &resp, NULL, 0, body != NULL), CT_OK);
    if (body) {
        CU_ASSERT_EQUAL(ct_h2_body_ref(g->h, sid, body, len, release_count, released), CT_OK);
        CU_ASSERT_EQUAL(ct_h2_body_end(g->h, sid), CT_OK);
    }
}

/* ---- hand-written frames (RFC 9113 §4.1) -------------------------------- */

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static inline size_t frame(uint8_t *out, uint8_t type, uint8_t flags, uint32_t sid,
                           const void *payload, size_t len)
{
    out[0] = (uint8_t)(len >> 16);
    out[1] = (uint8_t)(len >> 8);
    out[2] = (uint8_t)len;
    out[3] = type;
    out[4] = flags;
    out[5] = (uint8_t)(sid >> 24);
    out[6] = (uint8_t)(sid >> 16);
    out[7] = (uint8_t)(sid >> 8);
    out[8] = (uint8_t)sid;
    if (len)
        memcpy(out + 9, payload, len);
    return 9 + len;
}

/* The preface and an empty SETTINGS, as a hand client starts. */
static inline void hand_start(struct rig *g)
{
    uint8_t b[64];
    size_t n = sizeof(preface) - 1;
    memcpy(b, preface, n);
    n += frame(b + n, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
    to_server(g, b, n);
}

/* Find a GOAWAY in the server's collected output (HAND rigs): its error code,
 * or -1 if none. */
static inline long goaway_in_output(struct rig *g, int32_t *last)
{
    size_t n = evbuffer_get_length(g->out);
    const uint8_t *p = evbuffer_pullup(g->out, -1);
    for (size_t i = 0; i + 9 <= n;) {
        size_t len = ((size_t)p[i] << 16) | ((size_t)p[i + 1] << 8) | p[i + 2];
        if (p[i + 3] == NGHTTP2_GOAWAY && i + 9 + 8 <= n) {
            const uint8_t *q = p + i + 9;
            if (last)
                *last = (int32_t)(((uint32_t)(q[0] & 0x7f) << 24) | ((uint32_t)q[1] << 16) |
                                  ((uint32_t)q[2] << 8) | q[3]);
            return (long)(((uint32_t)q[4] << 24) | ((uint32_t)q[5] << 16) | ((uint32_t)q[6] << 8) |
                          q[7]);
        }
        i += 9 + len;
    }
    return -1;
}

/* The error code of a RST_STREAM for SID in the collected output, or -1. */
static inline long rst_in_output(struct rig *g, uint32_t sid)
{
    size_t n = evbuffer_get_length(g->out);
    const uint8_t *p = evbuffer_pullup(g->out, -1);
    for (size_t i = 0; i + 9 <= n;) {
        size_t len = ((size_t)p[i] << 16) | ((size_t)p[i + 1] << 8) | p[i + 2];
        uint32_t fsid = ((uint32_t)(p[i + 5] & 0x7f) << 24) | ((uint32_t)p[i + 6] << 16) |
                        ((uint32_t)p[i + 7] << 8) | p[i + 8];
        if (p[i + 3] == NGHTTP2_RST_STREAM && fsid == sid && i + 13 <= n)
            return (long)(((uint32_t)p[i + 9] << 24) | ((uint32_t)p[i + 10] << 16) |
                          ((uint32_t)p[i + 11] << 8) | p[i + 12]);
        i += 9 + len;
    }
    return -1;
}

#endif
