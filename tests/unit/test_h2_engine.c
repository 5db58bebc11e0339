/*
 * tests/unit/test_h2_engine.c: the HTTP/2 engine (proxy/h2/h2.h) driven in
 * memory by an nghttp2 client: requests up, responses down without a copy,
 * request bodies against content-length, flow control on both levels,
 * deferred bodies, drain.
 */
#include "tests/unit/test_h2_harness.h"

static void test_get_no_copy(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    static const char *const nv[] = {GET_NV("/a?b=1"), "accept", "*/*", NULL};
    int32_t sid = request(&g, nv, NULL);
    pump(&g);
    struct sreq *q = sreq_of(&g, sid);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_STRING_EQUAL(q->method, "GET");
    CU_ASSERT_STRING_EQUAL(q->path, "/a?b=1");
    CU_ASSERT_STRING_EQUAL(q->host, "t.example");
    CU_ASSERT_TRUE(q->end_stream && q->req_end);

    static char body[1024];
    memset(body, 'x', sizeof body);
    memcpy(body, "hello", 5);
    int released = 0;
    respond(&g, sid, 200, body, sizeof body, &released);
    /* NO_COPY: the frame's payload in the output IS the owner's memory. */
    ct_h2_conn_send(g.h, g.out, 1 << 20);
    struct evbuffer_iovec v[16];
    int nv_out = evbuffer_peek(g.out, -1, NULL, v, 16);
    bool by_ref = false;
    for (int i = 0; i < nv_out && i < 16; i++)
        by_ref |= v[i].iov_base == (void *)body && v[i].iov_len == sizeof body;
    CU_ASSERT_TRUE(by_ref);
    CU_ASSERT_EQUAL(released, 0); /* still referenced by the output */
    pump(&g);
    struct cresp *r = cresp_of(&g, sid);
    CU_ASSERT_EQUAL(r->status, 200);
    CU_ASSERT_EQUAL(r->body, sizeof body);
    CU_ASSERT_EQUAL(memcmp(r->data, "hello", 5), 0);
    CU_ASSERT_TRUE(r->closed);
    CU_ASSERT_EQUAL(r->code, 0);
    CU_ASSERT_TRUE(q->closed);
    CU_ASSERT_EQUAL(q->close_code, 0);
    CU_ASSERT_EQUAL(released, 1); /* once the bytes left the output */
    CU_ASSERT_EQUAL(ct_h2_conn_counts(g.h)->requests, 1);
    CU_ASSERT_EQUAL(ct_h2_conn_nstreams(g.h), 0);
    rig_free(&g);
    CU_ASSERT_EQUAL(released, 1);
}

/* The HTTP/1 origin's Connection field never reaches the client, nor what it
 * names; names go lower-case; Age from the extra fields. */
static int hdr_seen;
static int c_header_check(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                          size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
    for (size_t i = 0; i < nl; i++)
        if (name[i] >= 'A' && name[i] <= 'Z')
            hdr_seen |= 1;
    if ((nl == 10 && memcmp(name, "connection", 10) == 0) ||
        (nl == 7 && memcmp(name, "x-trace", 7) == 0) ||
        (nl == 17 && memcmp(name, "transfer-encoding", 17) == 0) ||
        (nl == 10 && memcmp(name, "keep-alive", 10) == 0))
        hdr_seen |= 2;
    if (nl == 3 && memcmp(name, "age", 3) == 0 && vl == 2 && memcmp(value, "42", 2) == 0)
        hdr_seen |= 4;
    if (nl == 4 && memcmp(name, "etag", 4) == 0)
        hdr_seen |= 8;
    return 0;
}

static void test_response_fields(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    nghttp2_session_del(g.c);
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, c_header_check);
    nghttp2_session_client_new(&g.c, cb, &g);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(g.c, NGHTTP2_FLAG_NONE, NULL, 0);
    static const char *const nv[] = {GET_NV("/"), NULL};
    int32_t sid = request(&g, nv, NULL);
    pump(&g);
    struct ct_http_field f[] = {
        {CT_STR("ETag"), CT_STR("\"v1\""), CT_HDR_ETAG},
        {CT_STR("Connection"), CT_STR("X-Trace, keep-alive"), CT_HDR_CONNECTION},
        {CT_STR("X-Trace"), CT_STR("1"), CT_HDR_UNKNOWN},
        {CT_STR("Keep-Alive"), CT_STR("timeout=5"), CT_HDR_KEEP_ALIVE},
        {CT_STR("Transfer-Encoding"), CT_STR("chunked"), CT_HDR_TRANSFER_ENCODING},
    };
    struct ct_http_field extra[] = {{CT_STR("Age"), CT_STR("42"), CT_HDR_AGE}};
    struct ct_http_msg resp = {.kind = CT_HTTP_RESPONSE, .status = 304};
    ct_http_msg_set_fields(&resp, f, CT_ARRAY_LEN(f));
    hdr_seen = 0;
    CU_ASSERT_EQUAL(ct_h2_submit_head(g.h, sid, &resp, extra, 1, false), CT_OK);
    CU_ASSERT_EQUAL(ct_h2_submit_head(g.h, sid, &resp, extra, 1, false), CT_EPROTO);
    pump(&g);
    CU_ASSERT_EQUAL(hdr_seen, 4 | 8);
    CU_ASSERT_TRUE(sreq_of(&g, sid)->closed);
    rig_free(&g);
}

static void test_interim_then_final(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    static const char *const nv[] = {GET_NV("/"), NULL};
    int32_t sid = request(&g, nv, NULL);
    pump(&g);
    struct ct_http_msg early = {.kind = CT_HTTP_RESPONSE, .status = 103};
    struct ct_http_msg sw = {.kind = CT_HTTP_RESPONSE, .status = 101};
    CU_ASSERT_EQUAL(ct_h2_submit_head(g.h, sid, &sw, NULL, 0, false), CT_EPROTO);
    CU_ASSERT_EQUAL(ct_h2_submit_head(g.h, sid, &early, NULL, 0, false), CT_OK);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, sid)->interim, 103);
    CU_ASSERT_FALSE(cresp_of(&g, sid)->closed);
    respond(&g, sid, 204, NULL, 0, NULL);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, sid)->status, 204);
    CU_ASSERT_TRUE(cresp_of(&g, sid)->closed);
    rig_free(&g);
}

static void test_post_with_length(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    g.read_bodies = true;
    static char data[40000];
    memset(data, 'p', sizeof data);
    struct body_src b = {data, sizeof data, 0};
    static const char *const nv[] = {":method",        "POST",  ":scheme", "https",
                                     ":authority",     "t",     ":path",   "/up",
                                     "content-length", "40000", NULL};
    int32_t sid = request(&g, nv, &b);
    pump(&g);
    struct sreq *q = sreq_of(&g, sid);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_FALSE(q->end_stream);
    CU_ASSERT_EQUAL(q->body, sizeof data);
    CU_ASSERT_TRUE(q->req_end);
    CU_ASSERT_TRUE(q->bodies >= 3); /* one call per DATA frame of 16 KiB */
    CU_ASSERT_FALSE(q->closed);
    respond(&g, sid, 201, NULL, 0, NULL);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, sid)->status, 201);
    CU_ASSERT_TRUE(q->closed);
    rig_free(&g);
}

/* The byte that completes a content-length waits for END_STREAM: DATA
 * carrying exactly the length, END_STREAM not yet seen, gives the owner
 * all but one byte; a further DATA frame (past the length) resets the
 * stream, and the owner never had the whole body (issue 41). */
static void test_length_held_to_end(void)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    hand_start(&g);
    uint8_t buf[128], blk[] = {0x83, 0x87, 0x84, 0x01, 0x01, 't', 0x5c, 0x02, '1', '0'};
    /* POST https / :authority t, content-length: 10 (static entry 28) */
    to_server(&g, buf, frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, blk, sizeof blk));
    to_server(&g, buf, frame(buf, NGHTTP2_DATA, 0, 1, "0123456789", 10));
    CU_ASSERT_EQUAL(ct_h2_body_unread(g.h, 1), 9);
    struct evbuffer *b = evbuffer_new();
    CU_ASSERT_EQUAL(ct_h2_body_read(g.h, 1, b, SIZE_MAX), 9);
    CU_ASSERT_EQUAL(ct_h2_body_read(g.h, 1, b, SIZE_MAX), 0);
    to_server(&g, buf, frame(buf, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, "x", 1));
    from_server(&g);
    CU_ASSERT_EQUAL(rst_in_output(&g, 1), NGHTTP2_PROTOCOL_ERROR);
    CU_ASSERT_EQUAL(ct_h2_body_read(g.h, 1, b, SIZE_MAX), 0);
    CU_ASSERT_EQUAL(evbuffer_get_length(b), 9);
    /* the same with an END_STREAM of no payload: the tenth byte comes */
    uint8_t blk3[] = {0x83, 0x87, 0x84, 0x01, 0x01, 't', 0x5c, 0x02, '1', '0'};
    to_server(&g, buf, frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 3, blk3, sizeof blk3));
    to_server(&g, buf, frame(buf, NGHTTP2_DATA, 0, 3, "0123456789", 10));
    CU_ASSERT_EQUAL(ct_h2_body_unread(g.h, 3), 9);
    to_server(&g, buf, frame(buf, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 3, NULL, 0));
    CU_ASSERT_EQUAL(ct_h2_body_unread(g.h, 3), 10);
    evbuffer_free(b);
    rig_free(&g);
}

/* RFC 9113 §8.1.1: DATA that contradicts content-length is a stream error;
 * what goes past the length never reaches the owner. */
static void test_content_length_mismatch(void)
{
    static char data[100];
    memset(data, 'z', sizeof data);
    const char *cls[] = {"10", "1000"}; /* too much, too little */
    for (int i = 0; i < 2; i++) {
        struct rig g;
        rig_init(&g, NULL, false, 0);
        g.read_bodies = true;
        struct body_src b = {data, sizeof data, 0};
        const char *const nv[] = {":method", "PUT", ":scheme",        "https", ":authority", "t",
                                  ":path",   "/",   "content-length", cls[i],  NULL};
        int32_t sid = request(&g, nv, &b);
        pump(&g);
        struct sreq *q = sreq_of(&g, sid);
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        CU_ASSERT_TRUE(q->body <= 10 || i == 1);
        CU_ASSERT_FALSE(q->req_end);
        CU_ASSERT_TRUE(q->closed);
        CU_ASSERT_EQUAL(q->close_code, NGHTTP2_PROTOCOL_ERROR);
        CU_ASSERT_TRUE(cresp_of(&g, sid)->rst);
        CU_ASSERT_EQUAL(cresp_of(&g, sid)->code, NGHTTP2_PROTOCOL_ERROR);
        CU_ASSERT_FALSE(g.goaway); /* a stream error, not the connection */
        rig_free(&g);
    }
}

/* Request direction: stream A's body is never read; stream B's body still
 * flows to the end, and A holds no more than its window. The connection
 * window is the minimum, so only reopening it on arrival lets B through. */
static void test_unread_stream_does_not_stall(void)
{
    struct ct_h2_settings s;
    ct_h2_settings_default(&s);
    s.conn_window = 65535;
    struct rig g;
    rig_init(&g, &s, false, 0);
    static char data[200000];
    memset(data, 'd', sizeof data);
    struct body_src a = {data, sizeof data, 0}, b = {data, sizeof data, 0};
    static const char *const nv[] = {":method", "POST",  ":scheme", "https", ":authority",
                                     "t",       ":path", "/",       NULL};
    int32_t sa = request(&g, nv, &a);
    pump(&g); /* A's head is up: the owner decides not to read A */
    int32_t sb = request(&g, nv, &b);
    pump(&g);
    struct sreq *qa = sreq_of(&g, sa), *qb = sreq_of(&g, sb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(qa);
    CU_ASSERT_PTR_NOT_NULL_FATAL(qb);
    qb->read_body = true;
    /* B was not read either until now: take what is there, then pump. */
    struct evbuffer *sink = evbuffer_new();
    qb->body += ct_h2_body_read(g.h, sb, sink, SIZE_MAX);
    pump(&g);
    CU_ASSERT_EQUAL(qb->body, sizeof data);
    CU_ASSERT_TRUE(qb->req_end);
    CU_ASSERT_FALSE(qa->req_end);
    CU_ASSERT_TRUE(ct_h2_body_unread(g.h, sa) <= 65535);
    CU_ASSERT_TRUE(ct_h2_body_unread(g.h, sa) > 0);
    /* A reads now and finishes too. */
    qa->read_body = true;
    qa->body += ct_h2_body_read(g.h, sa, sink, SIZE_MAX);
    pump(&g);
    CU_ASSERT_EQUAL(qa->body, sizeof data);
    CU_ASSERT_TRUE(qa->req_end);
    evbuffer_free(sink);
    rig_free(&g);
}

/* Response direction: the client never opens stream A's window (1000
 * bytes); stream B's response still arrives whole. */
static void test_zero_window_stream_does_not_stall(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 1000);
    static const char *const nv[] = {GET_NV("/"), NULL};
    int32_t sa = request(&g, nv, NULL), sb = request(&g, nv, NULL);
    g.consume_only = sb;
    pump(&g);
    static char big[50000];
    memset(big, 'b', sizeof big);
    int ra = 0, rb = 0;
    respond(&g, sa, 200, big, sizeof big, &ra);
    respond(&g, sb, 200, big, sizeof big, &rb);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, sb)->body, sizeof big);
    CU_ASSERT_TRUE(cresp_of(&g, sb)->closed);
    CU_ASSERT_EQUAL(cresp_of(&g, sa)->body, 1000);
    CU_ASSERT_FALSE(cresp_of(&g, sa)->closed);
    CU_ASSERT_EQUAL(ct_h2_body_queued(g.h, sa), sizeof big - 1000);
    CU_ASSERT_EQUAL(rb, 1);
    CU_ASSERT_EQUAL(ra, 0); /* A's piece is still queued */
    rig_free(&g);
    CU_ASSERT_EQUAL(ra, 1); /* released with the connection */
    CU_ASSERT_EQUAL(sreq_of(&g, sa)->close_code, NGHTTP2_CANCEL);
}

static void test_deferred_resumes(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    static const char *const nv[] = {GET_NV("/slow"), NULL};
    int32_t sid = request(&g, nv, NULL);
    pump(&g);
    struct ct_http_msg resp = {.kind = CT_HTTP_RESPONSE, .status = 200};
    CU_ASSERT_EQUAL(ct_h2_submit_head(g.h, sid, &resp, NULL, 0, true), CT_OK);
    pump(&g); /* head out, no body yet: DEFERRED */
    CU_ASSERT_EQUAL(cresp_of(&g, sid)->status, 200);
    CU_ASSERT_EQUAL(cresp_of(&g, sid)->body, 0);
    CU_ASSERT_FALSE(cresp_of(&g, sid)->closed);
    CU_ASSERT_FALSE(ct_h2_conn_want_write(g.h));
    static const char part1[] = "first ", part2[] = "second";
    CU_ASSERT_EQUAL(ct_h2_body_ref(g.h, sid, part1, 6, NULL, NULL), CT_OK);
    CU_ASSERT_TRUE(ct_h2_conn_want_write(g.h));
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, sid)->body, 6);
    CU_ASSERT_FALSE(cresp_of(&g, sid)->closed);
    struct evbuffer *src = evbuffer_new();
    evbuffer_add(src, part2, 6);
    CU_ASSERT_EQUAL(ct_h2_body_move(g.h, sid, src, 6), CT_OK);
    CU_ASSERT_EQUAL(evbuffer_get_length(src), 0);
    evbuffer_free(src);
    CU_ASSERT_EQUAL(ct_h2_body_end(g.h, sid), CT_OK);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, sid)->body, 12);
    CU_ASSERT_EQUAL(memcmp(cresp_of(&g, sid)->data, "first second", 12), 0);
    CU_ASSERT_TRUE(cresp_of(&g, sid)->closed);
    CU_ASSERT_EQUAL(ct_h2_body_end(g.h, sid), CT_ENOENT);
    rig_free(&g);
}

/* A graceful drain: GOAWAY NO_ERROR naming the last stream processed;
 * streams after it never reach the owner; the open one finishes. */
static void test_drain(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    static const char *const nv[] = {GET_NV("/"), NULL};
    int32_t s1 = request(&g, nv, NULL), s3 = request(&g, nv, NULL);
    pump(&g);
    respond(&g, s1, 200, NULL, 0, NULL);
    ct_h2_conn_drain(g.h);
    ct_h2_conn_drain(g.h); /* idempotent */
    pump(&g);
    CU_ASSERT_TRUE(g.goaway);
    CU_ASSERT_EQUAL(g.goaway_code, NGHTTP2_NO_ERROR);
    CU_ASSERT_EQUAL(g.goaway_last, s3);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_DRAIN);
    CU_ASSERT_FALSE(ct_h2_conn_is_done(g.h)); /* s3 is still open */
    /* A request after the GOAWAY (a client that had not read it yet). */
    uint8_t hb[64];
    /* GET https / and :authority x as a literal never indexed, so the
     * client's HPACK encoder and our decoder stay in step. */
    uint8_t block[] = {0x82, 0x87, 0x84, 0x01, 0x01, 'x'};
    size_t n = frame(hb, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 5,
                     block, sizeof block);
    to_server(&g, hb, n);
    CU_ASSERT_PTR_NULL(sreq_of(&g, 5));
    CU_ASSERT_EQUAL(g.ns, 2);
    respond(&g, s3, 200, NULL, 0, NULL);
    pump(&g);
    CU_ASSERT_TRUE(cresp_of(&g, s3)->closed);
    CU_ASSERT_TRUE(ct_h2_conn_is_done(g.h));
    rig_free(&g);
}

static void test_owner_refuses_and_resets(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    g.refuse = true;
    static const char *const nv[] = {GET_NV("/"), NULL};
    int32_t s1 = request(&g, nv, NULL);
    pump(&g);
    CU_ASSERT_TRUE(cresp_of(&g, s1)->rst);
    CU_ASSERT_EQUAL(cresp_of(&g, s1)->code, NGHTTP2_REFUSED_STREAM);
    g.refuse = false;
    int32_t s3 = request(&g, nv, NULL);
    pump(&g);
    static char body[100];
    int rel = 0;
    struct ct_http_msg resp = {.kind = CT_HTTP_RESPONSE, .status = 200};
    CU_ASSERT_EQUAL(ct_h2_submit_head(g.h, s3, &resp, NULL, 0, true), CT_OK);
    CU_ASSERT_EQUAL(ct_h2_body_ref(g.h, s3, body, sizeof body, release_count, &rel), CT_OK);
    CU_ASSERT_EQUAL(ct_h2_reset(g.h, s3, NGHTTP2_CANCEL), CT_OK);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, s3)->code, NGHTTP2_CANCEL);
    CU_ASSERT_EQUAL(sreq_of(&g, s3)->close_code, NGHTTP2_CANCEL);
    CU_ASSERT_EQUAL(rel, 1);
    /* After close, nothing names the stream any more. */
    CU_ASSERT_EQUAL(ct_h2_body_ref(g.h, s3, body, 1, release_count, &rel), CT_ENOENT);
    CU_ASSERT_EQUAL(rel, 2); /* released even when refused */
    CU_ASSERT_EQUAL(ct_h2_reset(g.h, s3, NGHTTP2_CANCEL), CT_ENOENT);
    rig_free(&g);
}

/* A body the response cannot have (HEAD, 204, 304) never goes out, even
 * when the owner hands one in. */
static void test_no_content_responses(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    static const char *const head[] = {":method", "HEAD",  ":scheme", "https", ":authority",
                                       "t",       ":path", "/",       NULL};
    static const char *const get[] = {GET_NV("/"), NULL};
    int32_t sh = request(&g, head, NULL), s204 = request(&g, get, NULL);
    pump(&g);
    static char body[100];
    int rh = 0, r204 = 0;
    respond(&g, sh, 200, body, sizeof body, &rh);
    respond(&g, s204, 204, body, sizeof body, &r204);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, sh)->status, 200);
    CU_ASSERT_EQUAL(cresp_of(&g, sh)->body, 0);
    CU_ASSERT_TRUE(cresp_of(&g, sh)->closed);
    CU_ASSERT_EQUAL(cresp_of(&g, sh)->code, 0);
    CU_ASSERT_EQUAL(cresp_of(&g, s204)->body, 0);
    CU_ASSERT_TRUE(cresp_of(&g, s204)->closed);
    CU_ASSERT_EQUAL(cresp_of(&g, s204)->code, 0);
    CU_ASSERT_EQUAL(rh, 1); /* dropped and released at once */
    CU_ASSERT_EQUAL(r204, 1);
    rig_free(&g);
}

/* A hit answered from inside on_request, before the owner's handle is
 * known; and a stream reset from there never sees on_request_end. */
static void test_answer_inside_callback(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    g.inline_answer = 1;
    static const char *const nv[] = {GET_NV("/hit"), NULL};
    int32_t s1 = request(&g, nv, NULL);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, s1)->status, 200);
    CU_ASSERT_EQUAL(cresp_of(&g, s1)->body, 26);
    CU_ASSERT_TRUE(cresp_of(&g, s1)->closed);
    CU_ASSERT_EQUAL(cresp_of(&g, s1)->code, 0);
    CU_ASSERT_EQUAL(g.inline_released, 1);
    g.inline_answer = 2;
    int32_t s3 = request(&g, nv, NULL);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, s3)->code, NGHTTP2_REFUSED_STREAM);
    CU_ASSERT_FALSE(sreq_of(&g, s3)->req_end);
    CU_ASSERT_TRUE(sreq_of(&g, s3)->closed);
    rig_free(&g);
}

/* The response is complete before the request body is (an early 413, a
 * hit for a POST): the rest of the body is read and dropped, so the client
 * finishes its upload and keeps the response; past discard_max it is told
 * to stop with RST_STREAM NO_ERROR. Either way it never waits on a window
 * nobody opens. */
static void early_response(size_t discard_max, bool want_rst, bool inline_answer)
{
    struct ct_h2_settings s;
    ct_h2_settings_default(&s);
    s.discard_max = discard_max;
    struct rig g;
    rig_init(&g, &s, false, 0);
    static char data[300000];
    struct body_src b = {data, sizeof data, 0};
    static const char *const nv[] = {":method", "POST",  ":scheme", "https", ":authority",
                                     "t",       ":path", "/",       NULL};
    g.inline_answer = inline_answer ? 3 : 0;
    int32_t sid = request(&g, nv, &b);
    pump(&g); /* the owner never reads: the client is stuck on the window */
    CU_ASSERT_TRUE(b.off < sizeof data || inline_answer);
    if (!inline_answer)
        respond(&g, sid, 413, NULL, 0, NULL);
    pump(&g);
    struct cresp *r = cresp_of(&g, sid);
    CU_ASSERT_EQUAL(r->status, 413);
    CU_ASSERT_TRUE(r->closed);
    CU_ASSERT_EQUAL(r->rst, want_rst);
    CU_ASSERT_EQUAL(r->code, NGHTTP2_NO_ERROR);
    CU_ASSERT_EQUAL(b.off == sizeof data, !want_rst);
    CU_ASSERT_TRUE(sreq_of(&g, sid)->closed);
    CU_ASSERT_FALSE(sreq_of(&g, sid)->req_end);
    CU_ASSERT_EQUAL(sreq_of(&g, sid)->body, 0);
    CU_ASSERT_EQUAL(ct_h2_conn_nstreams(g.h), 0);
    rig_free(&g);
}

static void test_early_response_drains_upload(void)
{
    early_response(1 << 20, false, false);
    early_response(100000, true, false);
    /* answered at once: a window's worth of body is already buffered when
     * the response goes out */
    early_response(1 << 20, false, true);
}

/* An idle connection gives back nghttp2's frame buffer (whole pages, by
 * madvise: they leave the resident set) and our head scratch, and the
 * session goes on: the next response is whole. A busy one keeps them. */
static void test_idle_trim(void)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    static const char *const nv[] = {GET_NV("/one"), NULL};
    static char body[20000]; /* over a frame: the buffer is written again after the trim */
    memset(body, 'y', sizeof body);
    memcpy(body, "first", 5);
    int released = 0;
    int32_t sid = request(&g, nv, NULL);
    pump(&g);
    CU_ASSERT_EQUAL(ct_h2_conn_trim(g.h), 0); /* a stream is open: nothing */
    respond(&g, sid, 200, body, sizeof body, &released);
    pump(&g);
    CU_ASSERT_EQUAL(ct_h2_conn_nstreams(g.h), 0);
    size_t n = ct_h2_conn_trim(g.h);
    /* the frame buffer's pages that frames touched, the empty stream map */
    CU_ASSERT(n >= 8192);
    for (int round = 0; round < 2; round++) {
        static const char *const nv2[] = {GET_NV("/two"), NULL};
        int32_t sid2 = request(&g, nv2, NULL);
        pump(&g);
        respond(&g, sid2, 200, body, sizeof body, &released);
        pump(&g);
        struct cresp *r = cresp_of(&g, sid2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        CU_ASSERT_EQUAL(r->status, 200);
        CU_ASSERT_EQUAL(r->body, sizeof body);
        CU_ASSERT_EQUAL(memcmp(r->data, "first", 5), 0);
        CU_ASSERT_TRUE(r->closed && r->code == 0);
        CU_ASSERT(ct_h2_conn_trim(g.h) >= 8192);
    }
    CU_ASSERT_FALSE(g.goaway);
    rig_free(&g);
    CU_ASSERT_EQUAL(released, 3);
}

/* A pass's head (ct_h2_submit_head_once): a field whose value changes on
 * every response is not added to the HPACK table (the client's decoder
 * table does not grow), one that repeats (Server) is; a stored head
 * (ct_h2_submit_head) indexes every field. */
static size_t table_after(bool once, int nresp)
{
    struct rig g;
    rig_init(&g, NULL, false, 0);
    size_t size = 0;
    for (int i = 0; i < nresp; i++) {
        static const char *const nv[] = {GET_NV("/p"), NULL};
        int32_t sid = request(&g, nv, NULL);
        pump(&g);
        char seq[16];
        int len = snprintf(seq, sizeof seq, "%d", 1000 + i);
        struct ct_http_field f[] = {
            {CT_STR("Server"), CT_STR("origin"), CT_HDR_SERVER},
            {CT_STR("X-Seq"), ct_str_make(seq, (size_t)len), CT_HDR_UNKNOWN},
        };
        struct ct_http_msg resp = {.kind = CT_HTTP_RESPONSE, .status = 200};
        ct_http_msg_set_fields(&resp, f, CT_ARRAY_LEN(f));
        int rc = once ? ct_h2_submit_head_once(g.h, sid, &resp, NULL, 0, false)
                      : ct_h2_submit_head(g.h, sid, &resp, NULL, 0, false);
        CU_ASSERT_EQUAL(rc, CT_OK);
        pump(&g);
        struct cresp *r = cresp_of(&g, sid);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        CU_ASSERT_EQUAL(r->status, 200);
        size = nghttp2_session_get_hd_inflate_dynamic_table_size(g.c);
    }
    rig_free(&g);
    return size;
}

static void test_pass_head_not_indexed(void)
{
    /* once: Server alone (32 + 6 + 6 bytes), whatever the count */
    CU_ASSERT_EQUAL(table_after(true, 1), 44);
    CU_ASSERT_EQUAL(table_after(true, 5), 44);
    /* stored: Server and every X-Seq value (32 + 5 + 4 each) */
    CU_ASSERT_EQUAL(table_after(false, 5), 44 + 5 * 41);
}

void ct_test_register(void)
{
    CT_SUITE(
        "h2_engine", {"a GET gets a response with a NO_COPY body", test_get_no_copy},
        {"a pass's head leaves its one-off fields out of the HPACK table",
         test_pass_head_not_indexed},
        {"response heads drop connection-specific fields, lower-case names", test_response_fields},
        {"a 1xx interim head, then the final one; no 101", test_interim_then_final},
        {"a POST with DATA and content-length", test_post_with_length},
        {"the byte that completes a content-length waits for END_STREAM", test_length_held_to_end},
        {"DATA against content-length: RST_STREAM PROTOCOL_ERROR", test_content_length_mismatch},
        {"an unread request body does not stall another stream", test_unread_stream_does_not_stall},
        {"a stream whose window is 0 does not stop another",
         test_zero_window_stream_does_not_stall},
        {"deferred data resumes when the owner has bytes", test_deferred_resumes},
        {"drain sends GOAWAY with the last stream id", test_drain},
        {"the owner refuses a stream, resets another", test_owner_refuses_and_resets},
        {"HEAD, 204 and 304 responses carry no body", test_no_content_responses},
        {"a response submitted from inside on_request", test_answer_inside_callback},
        {"a response complete before the upload: body dropped, then NO_ERROR",
         test_early_response_drains_upload},
        {"an idle connection gives its frame buffer back and goes on", test_idle_trim});
}
