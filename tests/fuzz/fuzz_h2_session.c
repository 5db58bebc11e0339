/* tests/fuzz/fuzz_h2_session.c: libFuzzer target for the HTTP/2 engine and
 * the request validator behind it (proxy/h2, http/http_h2msg.c): the input
 * is what a client sends on a connection, fed to a server session in pieces,
 * with an owner that answers the way cachet's streams do (a hit-like head
 * and a body by reference, a body moved from a buffer, a reset, a request
 * body read as it comes, an answer from inside on_request or later).
 *
 * Input: byte 0 chooses the owner's behaviour (bits below), byte 1 the size
 * of the pieces the rest is fed in (1..256); if bit PREFACE is set the
 * client preface is sent first, so inputs need not find its 24 bytes.
 *
 * Checks: every request handed up is valid (method, target, version 20, no
 * upper-case field name); every body piece handed in by reference is
 * released exactly once, by the end, also after resets and the free; the
 * output never holds more than it was allowed plus one frame; the engine
 * never calls back for a stream it closed. Sanitizers do the rest.
 */
#include <event2/buffer.h>
#include <stdint.h>
#include <string.h>

#include "http/http.h"
#include "proxy/h2/h2.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    ANSWER_INLINE = 1, /* answer from inside on_request */
    BODY_MOVE = 2,     /* body moved from an evbuffer, not by reference */
    RESET_ODD = 4,     /* reset every other stream instead of answering */
    READ_BODY = 8,     /* take request bodies as they come */
    SMALL_OUT = 16,    /* small output budget per send (back-pressure) */
    DRAIN = 32,        /* drain halfway through */
    PREFACE = 64,
};

#define MAX_STREAMS 256

struct fz_stream {
    int32_t sid;
    bool open, answered;
    const struct ct_http_msg *msg;
};

struct fz_owner {
    struct ct_h2_conn *h;
    unsigned mode;
    struct fz_stream st[MAX_STREAMS];
    unsigned n;
    unsigned refs_out, refs_back;
    struct evbuffer *sink;
};

static const char body_bytes[1024] = {'x'};

static void on_release(void *arg)
{
    struct fz_owner *o = arg;
    o->refs_back++;
    FUZZ_CHECK(o->refs_back <= o->refs_out);
}

static void answer(struct fz_owner *o, struct fz_stream *s)
{
    if (s->answered || !s->open)
        return;
    s->answered = true;
    if ((o->mode & RESET_ODD) && (s->sid & 2)) {
        (void)ct_h2_reset(o->h, s->sid, 0x8 /* CANCEL */);
        return;
    }
    const struct ct_http_field f[] = {
        {CT_STR("Content-Type"), CT_STR("text/plain"), CT_HDR_CONTENT_TYPE},
        {CT_STR("Connection"), CT_STR("x-hop"), CT_HDR_CONNECTION},
        {CT_STR("X-Hop"), CT_STR("1"), CT_HDR_UNKNOWN},
    };
    const struct ct_http_field extra[] = {{CT_STR("age"), CT_STR("3"), CT_HDR_AGE}};
    struct ct_http_msg resp = {.kind = CT_HTTP_RESPONSE, .status = 200, .version = 11};
    ct_http_msg_set_fields(&resp, f, 3);
    if (ct_h2_submit_head(o->h, s->sid, &resp, extra, 1, true) != CT_OK)
        return;
    if (o->mode & BODY_MOVE) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add(b, body_bytes, sizeof(body_bytes));
        (void)ct_h2_body_move(o->h, s->sid, b, sizeof(body_bytes));
        evbuffer_free(b);
    } else {
        o->refs_out++;
        (void)ct_h2_body_ref(o->h, s->sid, body_bytes, sizeof(body_bytes), on_release, o);
    }
    (void)ct_h2_body_end(o->h, s->sid);
}

static void check_msg(const struct ct_http_msg *m)
{
    FUZZ_CHECK(m->kind == CT_HTTP_REQUEST);
    FUZZ_CHECK(m->version == 20);
    FUZZ_CHECK(m->method_name.len > 0 && m->target.len > 0);
    for (size_t i = 0; i < m->nfields; i++) {
        const struct ct_http_field *f = &m->fields[i];
        FUZZ_CHECK(f->name.len > 0);
        for (size_t k = 0; k < f->value.len; k++)
            FUZZ_CHECK(f->value.p[k] != '\r' && f->value.p[k] != '\n' && f->value.p[k] != 0);
    }
}

static void *on_request(void *owner, int32_t sid, const struct ct_http_msg *msg, bool end_stream)
{
    struct fz_owner *o = owner;
    (void)end_stream;
    check_msg(msg);
    if (o->n == MAX_STREAMS)
        return NULL; /* refused: REFUSED_STREAM */
    struct fz_stream *s = &o->st[o->n++];
    *s = (struct fz_stream){.sid = sid, .open = true, .msg = msg};
    if (o->mode & ANSWER_INLINE)
        answer(o, s);
    return s;
}

static void on_body(void *owner, void *req, int32_t sid)
{
    struct fz_owner *o = owner;
    struct fz_stream *s = req;
    FUZZ_CHECK(s->open && s->sid == sid);
    if (o->mode & READ_BODY) {
        (void)ct_h2_body_read(o->h, sid, o->sink, 100000);
        evbuffer_drain(o->sink, evbuffer_get_length(o->sink));
    }
}

static void on_request_end(void *owner, void *req, int32_t sid)
{
    (void)owner;
    struct fz_stream *s = req;
    FUZZ_CHECK(s->open && s->sid == sid);
}

static void on_close(void *owner, void *req, int32_t sid, uint32_t code)
{
    (void)owner;
    (void)code;
    struct fz_stream *s = req;
    FUZZ_CHECK(s->open && s->sid == sid);
    s->open = false;
}

static const struct ct_h2_cbs cbs = {on_request, on_body, on_request_end, on_close};

static bool send_some(struct fz_owner *o, struct evbuffer *out, size_t max)
{
    for (int i = 0; i < 64 && ct_h2_conn_want_write(o->h); i++) {
        int rc = ct_h2_conn_send(o->h, out, max);
        size_t got = evbuffer_get_length(out);
        /* At most one frame past the budget: a DATA frame is 16 KiB + 9. */
        FUZZ_CHECK(got <= max + 16384 + 9 + 4096);
        evbuffer_drain(out, got);
        if (rc != CT_OK)
            return false;
        if (got == 0)
            break;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static const char magic[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    struct fz_owner o = {.mode = data[0], .sink = evbuffer_new()};
    size_t piece = (size_t)data[1] + 1;
    data += 2;
    size = size - 2;
    o.h = ct_h2_conn_new(NULL, &cbs, &o);
    struct evbuffer *out = evbuffer_new();
    size_t max = (o.mode & SMALL_OUT) ? 100 : 65536;
    ct_time_t now = 1000.0;
    bool ok = true;
    if (o.mode & PREFACE)
        ok = ct_h2_conn_recv(o.h, magic, sizeof(magic) - 1, now) == CT_OK;
    for (size_t off = 0; ok && off < size; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        ok = ct_h2_conn_recv(o.h, data + off, n, now) == CT_OK;
        now += 0.01;
        for (unsigned i = 0; i < o.n; i++)
            answer(&o, &o.st[i]);
        if ((o.mode & DRAIN) && off >= size / 2)
            ct_h2_conn_drain(o.h);
        if (!send_some(&o, out, max))
            ok = false;
    }
    (void)send_some(&o, out, max); /* the GOAWAY of an error */
    ct_h2_conn_free(&o.h);
    evbuffer_free(out); /* the last output chains release their pieces */
    for (unsigned i = 0; i < o.n; i++)
        FUZZ_CHECK(!o.st[i].open);
    FUZZ_CHECK(o.refs_back == o.refs_out);
    evbuffer_free(o.sink);
    return 0;
}
