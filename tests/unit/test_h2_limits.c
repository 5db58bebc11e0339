/*
 * tests/unit/test_h2_limits.c: what the HTTP/2 engine refuses. Malformed
 * requests are stream errors and never reach the owner; a bad preface, bad
 * HPACK and every flood end the connection with a GOAWAY naming why.
 */
#include "tests/unit/test_h2_harness.h"

/* Each request breaks one RFC 9113 §8.2/8.3 rule: RST_STREAM
 * PROTOCOL_ERROR, the owner never sees it, the connection lives on. */
static void test_malformed_heads(void)
{
    static const char *const cases[][12] = {
        {GET_NV("/"), "User-Agent", "x", NULL},          /* uppercase name */
        {GET_NV("/"), "connection", "keep-alive", NULL}, /* connection-specific */
        {GET_NV("/"), "transfer-encoding", "chunked", NULL},
        {GET_NV("/"), "te", "gzip", NULL},
        {GET_NV("/"), ":path", "/twice", NULL},                      /* duplicate :path */
        {":scheme", "https", ":authority", "t", ":path", "/", NULL}, /* missing :method */
        {":method", "GET", ":scheme", "https", ":authority", "t", ":path", "", NULL},
        {GET_NV("/"), "x-a", "1\r\nx-b: 2", NULL}, /* CR in a value */
        {GET_NV("/"), ":status", "200", NULL},
        {":method", "GET", "accept", "*/*", ":scheme", "https", ":authority", "t", ":path", "/",
         NULL}, /* pseudo-header after a field */
    };
    struct rig g;
    rig_init(&g, NULL, false, 0);
    for (size_t i = 0; i < CT_ARRAY_LEN(cases); i++) {
        int32_t sid = request(&g, cases[i], NULL);
        pump(&g);
        struct cresp *r = cresp_of(&g, sid);
        if (!r->rst || r->code != NGHTTP2_PROTOCOL_ERROR)
            fprintf(stderr, "case %zu: rst %d code %u\n", i, r->rst, r->code);
        CU_ASSERT_TRUE(r->rst);
        CU_ASSERT_EQUAL(r->code, NGHTTP2_PROTOCOL_ERROR);
    }
    CU_ASSERT_EQUAL(g.ns, 0); /* none went up */
    CU_ASSERT_EQUAL(ct_h2_conn_counts(g.h)->malformed, CT_ARRAY_LEN(cases));
    /* ... and the connection still serves. */
    static const char *const ok[] = {GET_NV("/fine"), NULL};
    int32_t sid = request(&g, ok, NULL);
    pump(&g);
    CU_ASSERT_PTR_NOT_NULL(sreq_of(&g, sid));
    CU_ASSERT_FALSE(g.goaway);
    rig_free(&g);
}

/* A header list over SETTINGS_MAX_HEADER_LIST_SIZE is answered 431. */
static void test_header_list_too_large(void)
{
    struct ct_h2_settings s;
    ct_h2_settings_default(&s);
    s.max_header_list = 1000;
    struct rig g;
    rig_init(&g, &s, false, 0);
    static char big[2000];
    memset(big, 'c', sizeof big - 1);
    const char *const nv[] = {GET_NV("/"), "cookie", big, NULL};
    int32_t sid = request(&g, nv, NULL);
    pump(&g);
    CU_ASSERT_EQUAL(cresp_of(&g, sid)->status, 431);
    CU_ASSERT_TRUE(cresp_of(&g, sid)->closed);
    CU_ASSERT_EQUAL(g.ns, 0);
    CU_ASSERT_EQUAL(ct_h2_conn_counts(g.h)->refused_limit, 1);
    rig_free(&g);
}

/* Trailers: dropped when valid, a stream error when they carry a
 * pseudo-header. Written by hand: HEADERS (no END_STREAM), DATA, HEADERS
 * (END_STREAM) with literal fields never indexed. */
static size_t lit(uint8_t *p, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value), n = 0;
    p[n++] = 0x10; /* literal, never indexed, new name */
    p[n++] = (uint8_t)nl;
    memcpy(p + n, name, nl);
    n += nl;
    p[n++] = (uint8_t)vl;
    memcpy(p + n, value, vl);
    return n + vl;
}

static void trailer_case(const char *tname, bool want_ok)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    g.read_bodies = true;
    hand_start(&g);
    uint8_t blk[128], buf[512];
    size_t b = 0, n = 0;
    blk[b++] = 0x83; /* :method POST */
    blk[b++] = 0x87; /* :scheme https */
    blk[b++] = 0x84; /* :path / */
    b += lit(blk + b, ":authority", "t");
    n += frame(buf + n, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, blk, b);
    n += frame(buf + n, NGHTTP2_DATA, 0, 1, "abc", 3);
    b = lit(blk, tname, "v");
    n += frame(buf + n, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1, blk,
               b);
    to_server(&g, buf, n);
    from_server(&g); /* our RST_STREAM goes out: the stream closes */
    struct sreq *q = sreq_of(&g, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_EQUAL(q->body, 3);
    CU_ASSERT_EQUAL(q->req_end, want_ok);
    CU_ASSERT_EQUAL(q->closed, !want_ok);
    if (!want_ok)
        CU_ASSERT_EQUAL(q->close_code, NGHTTP2_PROTOCOL_ERROR);
    rig_free(&g);
}

static void test_trailers(void)
{
    trailer_case("x-checksum", true);
    trailer_case(":path", false);
}

static void test_bad_preface(void)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    static const char h1[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    to_server(&g, h1, sizeof h1 - 1);
    CU_ASSERT_EQUAL(g.rc, CT_EPROTO);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_PREFACE);
    from_server(&g);
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), NGHTTP2_PROTOCOL_ERROR);
    CU_ASSERT_TRUE(ct_h2_conn_is_done(g.h));
    CU_ASSERT_FALSE(ct_h2_conn_want_write(g.h));
    /* Further input is ignored, and says so. */
    CU_ASSERT_EQUAL(ct_h2_conn_recv(g.h, "x", 1, g.now), CT_EPROTO);
    rig_free(&g);
}

static void test_bad_hpack(void)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    hand_start(&g);
    uint8_t buf[64];
    const uint8_t block[] = {0x80}; /* indexed field 0: a decoding error (RFC 7541 §6.1) */
    size_t n = frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                     block, sizeof block);
    to_server(&g, buf, n);
    /* nghttp2 found it and queued its GOAWAY: the send that writes it says so. */
    from_server(&g);
    CU_ASSERT_EQUAL(g.rc, CT_EPROTO);
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), NGHTTP2_COMPRESSION_ERROR);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_COMPRESSION);
    CU_ASSERT_EQUAL(g.ns, 0);
    rig_free(&g);
}

static void test_frame_too_large(void)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    hand_start(&g);
    static uint8_t buf[20000];
    size_t n = frame(buf, NGHTTP2_PING, 0, 0, NULL, 0);
    buf[0] = 0; /* rewrite the length: 16385 > SETTINGS_MAX_FRAME_SIZE */
    buf[1] = 0x40;
    buf[2] = 0x01;
    to_server(&g, buf, n + 16385);
    from_server(&g);
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), NGHTTP2_FRAME_SIZE_ERROR);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_FRAME_SIZE);
    rig_free(&g);
}

/* CVE-2023-44487: streams opened and reset at once. Under the budget the
 * connection lives; past it, GOAWAY ENHANCE_YOUR_CALM, and the streams
 * reset after that never reach the owner. */
static void rapid_reset(struct rig *g, int32_t first, int count)
{
    for (int i = 0; i < count; i++) {
        uint8_t buf[64], blk[] = {0x82, 0x87, 0x84, 0x01, 0x01, 'x'};
        uint32_t sid = (uint32_t)(first + 2 * i);
        size_t n = frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM,
                         sid, blk, sizeof blk);
        const uint8_t cancel[4] = {0, 0, 0, NGHTTP2_CANCEL};
        n += frame(buf + n, NGHTTP2_RST_STREAM, 0, sid, cancel, 4);
        to_server(g, buf, n);
    }
}

static void test_rapid_reset(void)
{
    struct ct_h2_settings s;
    ct_h2_settings_default(&s);
    s.reset_burst = 20;
    s.reset_rate = 10;
    struct rig g;
    rig_init(&g, &s, true, 0);
    hand_start(&g);
    rapid_reset(&g, 1, 20); /* the whole burst: still fine */
    CU_ASSERT_EQUAL(g.rc, CT_OK);
    g.now += 1.0; /* a second later: 10 more tokens */
    rapid_reset(&g, 41, 10);
    CU_ASSERT_EQUAL(g.rc, CT_OK);
    rapid_reset(&g, 61, 5); /* one too many */
    CU_ASSERT_EQUAL(g.rc, CT_ELIMIT);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_RAPID_RESET);
    int seen = g.ns;
    CU_ASSERT_EQUAL(seen, 31); /* the 31st stream's reset tripped the limit */
    from_server(&g);
    int32_t last = 0;
    CU_ASSERT_EQUAL(goaway_in_output(&g, &last), NGHTTP2_ENHANCE_YOUR_CALM);
    CU_ASSERT_EQUAL(last, 61);
    CU_ASSERT_EQUAL(ct_h2_conn_counts(g.h)->resets_recv, 31);
    rig_free(&g);
}

/* Streams the client makes us reset (MadeYouReset, CVE-2025-8671) spend the
 * same budget. */
static void test_provoked_resets(void)
{
    struct ct_h2_settings s;
    ct_h2_settings_default(&s);
    s.reset_burst = 5;
    s.reset_rate = 1;
    struct rig g;
    rig_init(&g, &s, false, 0);
    static const char *const bad[] = {GET_NV("/"), "Upper", "x", NULL};
    for (int i = 0; i < 6; i++)
        request(&g, bad, NULL);
    pump(&g);
    CU_ASSERT_EQUAL(g.rc, CT_ELIMIT);
    CU_ASSERT_TRUE(g.goaway);
    CU_ASSERT_EQUAL(g.goaway_code, NGHTTP2_ENHANCE_YOUR_CALM);
    rig_free(&g);
}

/* SETTINGS/PING floods: the ACKs we owe pile up past max_queued_acks when
 * the client sends faster than it reads. */
static void ack_flood(uint8_t type)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    hand_start(&g);
    from_server(&g); /* our SETTINGS and the ACK of theirs are out */
    evbuffer_drain(g.out, evbuffer_get_length(g.out));
    static uint8_t buf[200 * 17];
    size_t n = 0;
    const uint8_t ping[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 200; i++)
        n += type == NGHTTP2_PING ? frame(buf + n, NGHTTP2_PING, 0, 0, ping, 8)
                                  : frame(buf + n, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
    to_server(&g, buf, n);
    CU_ASSERT_EQUAL(g.rc, CT_ELIMIT);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_ACK_FLOOD);
    from_server(&g);
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), NGHTTP2_ENHANCE_YOUR_CALM);
    rig_free(&g);
}

static void test_ping_flood(void)
{
    ack_flood(NGHTTP2_PING);
}

static void test_settings_flood(void)
{
    ack_flood(NGHTTP2_SETTINGS);
}

/* ... while a client that reads its ACKs may ping as it likes. */
static void test_pings_read_are_fine(void)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    hand_start(&g);
    const uint8_t ping[8] = {0};
    for (int i = 0; i < 500; i++) {
        uint8_t buf[32];
        to_server(&g, buf, frame(buf, NGHTTP2_PING, 0, 0, ping, 8));
        from_server(&g);
    }
    CU_ASSERT_EQUAL(g.rc, CT_OK);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_NONE);
    rig_free(&g);
}

/* CVE-2019-9518: DATA frames carrying nothing. */
static void test_empty_data_flood(void)
{
    struct ct_h2_settings s;
    ct_h2_settings_default(&s);
    s.empty_burst = 50;
    s.empty_rate = 1;
    struct rig g;
    rig_init(&g, &s, true, 0);
    hand_start(&g);
    uint8_t buf[64], blk[] = {0x83, 0x87, 0x84, 0x01, 0x01, 'x'}; /* POST, no END_STREAM */
    to_server(&g, buf, frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, blk, sizeof blk));
    CU_ASSERT_PTR_NOT_NULL(sreq_of(&g, 1));
    for (int i = 0; i < 50; i++)
        to_server(&g, buf, frame(buf, NGHTTP2_DATA, 0, 1, NULL, 0));
    CU_ASSERT_EQUAL(g.rc, CT_OK);
    to_server(&g, buf, frame(buf, NGHTTP2_DATA, 0, 1, NULL, 0));
    CU_ASSERT_EQUAL(g.rc, CT_ELIMIT);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_EMPTY_FRAMES);
    from_server(&g);
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), NGHTTP2_ENHANCE_YOUR_CALM);
    CU_ASSERT_TRUE(sreq_of(&g, 1)->closed == false); /* told at free, as cancelled */
    rig_free(&g);
    CU_ASSERT_EQUAL(sreq_of(&g, 1)->close_code, NGHTTP2_CANCEL);
}

/* CVE-2024-28182: a header block in endless CONTINUATION frames. */
static void test_continuation_flood(void)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    hand_start(&g);
    uint8_t buf[64], one = 0x82; /* each frame: one indexed field (:method GET) */
    to_server(&g, buf, frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, &one, 1));
    for (int i = 0; i < 8; i++)
        to_server(&g, buf, frame(buf, NGHTTP2_CONTINUATION, 0, 1, &one, 1));
    CU_ASSERT_EQUAL(g.rc, CT_OK);
    to_server(&g, buf, frame(buf, NGHTTP2_CONTINUATION, 0, 1, &one, 1));
    CU_ASSERT_EQUAL(g.rc, CT_ELIMIT);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_CONTINUATION_FLOOD);
    from_server(&g);
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), NGHTTP2_ENHANCE_YOUR_CALM);
    CU_ASSERT_EQUAL(g.ns, 0);
    rig_free(&g);
}

/* PRIORITY frames (RFC 7540 priorities, which we turn off) cost nothing and
 * break nothing, even pointing at idle streams. */
static void test_priority_ignored(void)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    hand_start(&g);
    for (uint32_t sid = 1; sid < 2000; sid += 2) {
        uint8_t buf[32], pri[5] = {0, 0, 0, 0, 15};
        pri[3] = (uint8_t)(sid + 2); /* depend on another idle stream */
        to_server(&g, buf, frame(buf, NGHTTP2_PRIORITY, 0, sid, pri, 5));
    }
    CU_ASSERT_EQUAL(g.rc, CT_OK);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h), CT_H2_WHY_NONE);
    rig_free(&g);
}

/* SETTINGS_MAX_CONCURRENT_STREAMS: the stream past it is refused and never
 * reaches the owner; the others are served. */
static void test_concurrent_streams(void)
{
    struct ct_h2_settings s;
    ct_h2_settings_default(&s);
    s.max_concurrent_streams = 2;
    struct rig g;
    rig_init(&g, &s, true, 0);
    hand_start(&g);
    uint8_t buf[64], blk[] = {0x83, 0x87, 0x84, 0x01, 0x01, 'x'}; /* POST, body to come */
    for (uint32_t sid = 1; sid <= 5; sid += 2)
        to_server(&g, buf,
                  frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, sid, blk, sizeof blk));
    from_server(&g);
    CU_ASSERT_EQUAL(g.ns, 2);
    CU_ASSERT_PTR_NOT_NULL(sreq_of(&g, 1));
    CU_ASSERT_PTR_NOT_NULL(sreq_of(&g, 3));
    CU_ASSERT_PTR_NULL(sreq_of(&g, 5));
    CU_ASSERT_EQUAL(rst_in_output(&g, 5), NGHTTP2_REFUSED_STREAM);
    CU_ASSERT_EQUAL(rst_in_output(&g, 1), -1);
    CU_ASSERT_EQUAL(g.rc, CT_OK);
    rig_free(&g);
}

/* ---- RFC 9113 §5.1 after nghttp2 forgot the stream (h2_rfc.c) ------------ */

/* A GET on SID (END_STREAM), by hand: HPACK static entries only. */
static size_t get_frame(uint8_t *buf, uint32_t sid)
{
    static const uint8_t blk[] = {0x82, 0x87, 0x84, 0x01, 0x01, 't'}; /* GET https / t */
    return frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, sid,
                 blk, sizeof blk);
}

/* The body a client sent with a request nghttp2 refused (REFUSED_STREAM,
 * never opened) is ignored, also once a later stream was accepted: the
 * stream closed by our reset, not by the client's END_STREAM. */
static void test_refused_body_ignored(void)
{
    struct ct_h2_settings s;
    ct_h2_settings_default(&s);
    s.max_concurrent_streams = 1;
    struct rig g;
    rig_init(&g, &s, true, 0);
    hand_start(&g);
    uint8_t buf[64], blk[] = {0x83, 0x87, 0x84, 0x01, 0x01, 'x'}; /* POST, body to come */
    to_server(&g, buf, get_frame(buf, 1));
    to_server(&g, buf, frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 3, blk, sizeof blk));
    respond(&g, 1, 204, NULL, 0, NULL);
    from_server(&g); /* stream 1 closes */
    CU_ASSERT_EQUAL(rst_in_output(&g, 3), NGHTTP2_REFUSED_STREAM);
    to_server(&g, buf, get_frame(buf, 5)); /* accepted: 3 is below the last one now */
    to_server(&g, buf, frame(buf, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 3, "abc", 3));
    from_server(&g);
    CU_ASSERT_PTR_NOT_NULL(sreq_of(&g, 5));
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), -1);
    CU_ASSERT_EQUAL(g.rc, CT_OK);
    rig_free(&g);
}

/* The last CT_H2_CLOSED_MAX (16) closed streams are remembered: DATA on one
 * the client ended is GOAWAY STREAM_CLOSED; on one older than that, it is
 * ignored (it might be one we reset, whose late frames must be). */
static void data_after_close(uint32_t late_sid, long want_goaway)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    hand_start(&g);
    uint8_t buf[64];
    for (uint32_t sid = 1; sid <= 39; sid += 2) { /* 20 streams, each answered and closed */
        to_server(&g, buf, get_frame(buf, sid));
        respond(&g, (int32_t)sid, 204, NULL, 0, NULL);
        from_server(&g);
    }
    CU_ASSERT_EQUAL(ct_h2_conn_nstreams(g.h), 0);
    to_server(&g, buf, frame(buf, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, late_sid, "abc", 3));
    from_server(&g);
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), want_goaway);
    CU_ASSERT_EQUAL(ct_h2_conn_why(g.h),
                    want_goaway < 0 ? CT_H2_WHY_NONE : CT_H2_WHY_STREAM_CLOSED);
    rig_free(&g);
}

static void test_closed_ring(void)
{
    data_after_close(39, NGHTTP2_STREAM_CLOSED);
    data_after_close(9, NGHTTP2_STREAM_CLOSED); /* the 16th from the end */
    data_after_close(7, -1);                    /* the 17th: forgotten */
}

/* Frame headers cut anywhere (one byte per read): held until whole, then
 * judged as in one piece. HEADERS, RST_STREAM from the client, DATA: the
 * stream error STREAM_CLOSED (§5.1 closed); then PRIORITY on stream 0 (its
 * payload cut too): GOAWAY PROTOCOL_ERROR (§6.3). */
static void test_cut_headers(void)
{
    struct rig g;
    rig_init(&g, NULL, true, 0);
    hand_start(&g);
    uint8_t buf[128], blk[] = {0x83, 0x87, 0x84, 0x01, 0x01, 'x'}, code[4] = {0, 0, 0, 8};
    uint8_t pri[5] = {0, 0, 0, 1, 16};
    size_t n = frame(buf, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, blk, sizeof blk);
    n += frame(buf + n, NGHTTP2_RST_STREAM, 0, 1, code, 4);
    n += frame(buf + n, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, "abc", 3);
    for (size_t i = 0; i < n; i++)
        to_server(&g, buf + i, 1);
    from_server(&g);
    CU_ASSERT_EQUAL(rst_in_output(&g, 1), NGHTTP2_STREAM_CLOSED);
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), -1);
    n = frame(buf, NGHTTP2_PRIORITY, 0, 0, pri, 5);
    for (size_t i = 0; i < n; i++)
        to_server(&g, buf + i, 1);
    from_server(&g);
    CU_ASSERT_EQUAL(goaway_in_output(&g, NULL), NGHTTP2_PROTOCOL_ERROR);
    rig_free(&g);
}

static void test_why_table(void)
{
    CU_ASSERT_STRING_EQUAL(ct_h2_why_name(CT_H2_WHY_RAPID_RESET), "RAPID_RESET");
    CU_ASSERT_STRING_EQUAL(ct_h2_why_text(CT_H2_WHY_PREFACE), "bad connection preface");
    CU_ASSERT_STRING_EQUAL(ct_h2_why_name(CT_H2_WHY__COUNT), "?");
}

void ct_test_register(void)
{
    CT_SUITE(
        "h2_limits", {"malformed heads are stream errors, never passed up", test_malformed_heads},
        {"a header list over the limit is answered 431", test_header_list_too_large},
        {"trailers are dropped, or a stream error", test_trailers},
        {"a bad preface is GOAWAY PROTOCOL_ERROR", test_bad_preface},
        {"bad HPACK is GOAWAY COMPRESSION_ERROR", test_bad_hpack},
        {"a frame over SETTINGS_MAX_FRAME_SIZE is GOAWAY FRAME_SIZE_ERROR", test_frame_too_large},
        {"a rapid-reset flood is cut with ENHANCE_YOUR_CALM", test_rapid_reset},
        {"resets the client provokes count too", test_provoked_resets},
        {"a PING flood is cut", test_ping_flood}, {"a SETTINGS flood is cut", test_settings_flood},
        {"pings whose ACKs are read are fine", test_pings_read_are_fine},
        {"an empty DATA flood is cut", test_empty_data_flood},
        {"a CONTINUATION flood is cut", test_continuation_flood},
        {"PRIORITY frames are ignored safely", test_priority_ignored},
        {"streams past max_concurrent_streams are refused", test_concurrent_streams},
        {"the body of a refused stream is ignored", test_refused_body_ignored},
        {"closed streams are remembered, 16 of them", test_closed_ring},
        {"frame headers cut across reads are judged whole", test_cut_headers},
        {"why names and texts", test_why_table});
}
