/*
 * proxy/h2/h2_conn.c: one HTTP/2 server connection on nghttp2 1.52: the
 * session and its options, our SETTINGS, bytes in and out, the limits, and
 * why the connection ends. Streams are in h2_stream.c.
 *
 * What nghttp2 1.52 (Debian 1.52.0-1+deb12u3) does itself, and what is ours:
 * - preface, frame-state rules (frames on idle/closed streams), SETTINGS and
 *   PING ACKs, flow-control accounting, frame size (a frame over our
 *   SETTINGS_MAX_FRAME_SIZE is GOAWAY FRAME_SIZE_ERROR), HPACK (a decoding
 *   error is GOAWAY COMPRESSION_ERROR): nghttp2.
 * - HTTP messaging (field and pseudo-header rules, content-length): ours,
 *   with nghttp2's off (no_http_messaging), so that one validator
 *   (http/http_h2msg.c) decides for every request and says why.
 * - Flow control policy: ours. no_auto_window_update: the connection window
 *   is reopened as DATA arrives (it is buffered per stream, bounded by the
 *   stream window), a stream's window only as the owner takes its body, so
 *   an unread stream holds at most its window and never stalls another.
 * - SETTINGS/PING floods: nghttp2 closes the session once more than
 *   max_outbound_ack ACKs are queued (NGHTTP2_ERR_FLOODED); we set the bound
 *   and write the GOAWAY ENHANCE_YOUR_CALM it does not send.
 * - CONTINUATION floods: the Debian build caps them at 8 per header block
 *   (CVE-2024-28182, backported); we count them too, so the cap holds on a
 *   1.52 without the backport, and say ENHANCE_YOUR_CALM.
 * - Rapid reset (CVE-2023-44487): the backport's built-in limit (1000 then
 *   33/s, GOAWAY INTERNAL_ERROR, wall clock) is looser than ours and stays
 *   as a backstop; ours counts resets either way in a bucket on the owner's
 *   clock and says ENHANCE_YOUR_CALM.
 * - Empty frames (CVE-2019-9518): ours.
 * - Priorities: we send SETTINGS_NO_RFC7540_PRIORITIES = 1 and keep no
 *   closed streams, so PRIORITY frames and priority fields cost nothing
 *   (RFC 9113 §5.3.2: priority signals are hints a server may ignore).
 *
 * After a fatal nghttp2 error the session must not be used again: we stop
 * calling it and hand-write the GOAWAY (RFC 9113 §6.8) into fin[].
 */
#include "proxy/h2/h2_int.h"

#include <event2/buffer.h>
#include <stdlib.h>

void ct_h2_settings_default(struct ct_h2_settings *s)
{
    *s = (struct ct_h2_settings){
        .max_concurrent_streams = 100,
        .initial_window = 65535,
        .conn_window = 1u << 20,
        .max_frame_size = 16384,
        .max_header_list = 64 * 1024,
        .max_fields = 100,
        .max_queued_acks = 100,
        .reset_burst = 200,
        .reset_rate = 50,
        .empty_burst = 100,
        .empty_rate = 10,
        .discard_max = 1u << 20,
    };
}

static const struct {
    const char *name, *text;
    uint32_t code;
} why_tbl[CT_H2_WHY__COUNT] = {
#define CT_H2_WHY_ROW(id, code, text) [CT_H2_WHY_##id] = {#id, text, code},
    CT_H2_WHY_TABLE(CT_H2_WHY_ROW)
#undef CT_H2_WHY_ROW
};

const char *ct_h2_why_text(enum ct_h2_why why)
{
    return (unsigned)why < CT_H2_WHY__COUNT ? why_tbl[why].text : "?";
}

const char *ct_h2_why_name(enum ct_h2_why why)
{
    return (unsigned)why < CT_H2_WHY__COUNT ? why_tbl[why].name : "?";
}

/* ---- limits --------------------------------------------------------------- */

bool ct_h2_bucket_take(struct ct_h2_bucket *b, ct_time_t now)
{
    if (now > b->last) {
        b->tokens = CT_MIN((double)b->burst, b->tokens + (now - b->last) * b->rate);
        b->last = now;
    }
    if (b->tokens < 1.0)
        return false;
    b->tokens -= 1.0;
    return true;
}

int ct_h2_conn_fail(struct ct_h2_conn *h, enum ct_h2_why why)
{
    if (h->why == CT_H2_WHY_NONE || h->why == CT_H2_WHY_DRAIN)
        h->why = why;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
}

struct ct_h2_stream *ct_h2_stream_get(const struct ct_h2_conn *h, int32_t sid)
{
    if (h->dead)
        return NULL;
    struct ct_h2_stream *st = nghttp2_session_get_stream_user_data(h->session, sid);
    if (st)
        CT_CHECK_OBJ(st, CT_H2_STREAM_MAGIC);
    return st;
}

/* ---- connection-level callbacks ----------------------------------------- */

static struct ct_h2_conn *conn_of(void *ud)
{
    struct ct_h2_conn *h = ud;
    CT_CHECK_OBJ(h, CT_H2_CONN_MAGIC);
    return h;
}

/* Frame headers as they arrive: the empty-frame and CONTINUATION budgets. */
static int on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd, void *ud)
{
    struct ct_h2_conn *h = conn_of(ud);
    if (hd->type == NGHTTP2_HEADERS)
        h->continuations = 0;
    if (hd->type == NGHTTP2_CONTINUATION && ++h->continuations > 8)
        return ct_h2_conn_fail(h, CT_H2_WHY_CONTINUATION_FLOOD);
    /* CVE-2019-9518: a frame that carries nothing and ends nothing. */
    bool empty = hd->length == 0 && !(hd->flags & NGHTTP2_FLAG_END_STREAM) &&
                 (hd->type == NGHTTP2_DATA || hd->type == NGHTTP2_CONTINUATION ||
                  hd->type == NGHTTP2_HEADERS);
    if (empty && !ct_h2_bucket_take(&h->empties, h->now))
        return ct_h2_conn_fail(h, CT_H2_WHY_EMPTY_FRAMES);
    return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    struct ct_h2_conn *h = conn_of(ud);
    switch (f->hd.type) {
    case NGHTTP2_GOAWAY:
        if (h->why == CT_H2_WHY_NONE)
            h->why = CT_H2_WHY_PEER_GOAWAY;
        return 0;
    case NGHTTP2_RST_STREAM:
        h->counts.resets_recv++;
        h->peer_rst_sid = f->hd.stream_id; /* nghttp2 closes it next (on_stream_close) */
        if (!ct_h2_bucket_take(&h->resets, h->now))
            return ct_h2_conn_fail(h, CT_H2_WHY_RAPID_RESET);
        return 0;
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA: return ct_h2_stream_frame_recv(h, f);
    default: return 0;
    }
}

static enum ct_h2_why why_of_code(uint32_t code)
{
    switch (code) {
    case NGHTTP2_NO_ERROR: return CT_H2_WHY_DRAIN;
    case NGHTTP2_FLOW_CONTROL_ERROR: return CT_H2_WHY_FLOW_CONTROL;
    case NGHTTP2_STREAM_CLOSED: return CT_H2_WHY_STREAM_CLOSED;
    case NGHTTP2_FRAME_SIZE_ERROR: return CT_H2_WHY_FRAME_SIZE;
    case NGHTTP2_COMPRESSION_ERROR: return CT_H2_WHY_COMPRESSION;
    case NGHTTP2_INTERNAL_ERROR: return CT_H2_WHY_INTERNAL;
    case NGHTTP2_ENHANCE_YOUR_CALM: return CT_H2_WHY_RAPID_RESET; /* nghttp2's own limit */
    default: return CT_H2_WHY_PROTOCOL;
    }
}

static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    struct ct_h2_conn *h = conn_of(ud);
    if (f->hd.type == NGHTTP2_RST_STREAM)
        h->counts.resets_sent++;
    if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
        (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        ct_h2_stream_response_sent(h, f->hd.stream_id);
    /* A GOAWAY of nghttp2's own (a protocol error it found) names the reason. */
    if (f->hd.type == NGHTTP2_GOAWAY && f->goaway.error_code != NGHTTP2_NO_ERROR &&
        (h->why == CT_H2_WHY_NONE || h->why == CT_H2_WHY_PROTOCOL || h->why == CT_H2_WHY_DRAIN))
        h->why = why_of_code(f->goaway.error_code);
    return 0;
}

/* A frame nghttp2 answered with an error of its own. A request it refused
 * without opening the stream (REFUSED_STREAM: over the concurrency it
 * announced) closed by our reset, so the body the client sent with it is
 * ignored, not taken for frames on a stream it ended (h2_rfc.c). */
static int on_invalid_frame(nghttp2_session *s, const nghttp2_frame *f, int lib_error, void *ud)
{
    struct ct_h2_conn *h = conn_of(ud);
    if (lib_error == NGHTTP2_ERR_REFUSED_STREAM && f->hd.type == NGHTTP2_HEADERS)
        ct_h2_closed_note(h, f->hd.stream_id, CT_H2_CLOSED_WE_RESET);
    return 0;
}

/* ---- the session ----------------------------------------------------------- */

static nghttp2_session_callbacks *callbacks(void)
{
    nghttp2_session_callbacks *cb;
    CT_ASSERT(nghttp2_session_callbacks_new(&cb) == 0);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_begin_frame);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, on_invalid_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, ct_h2_on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, ct_h2_on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, ct_h2_on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, ct_h2_on_stream_close);
    nghttp2_session_callbacks_set_send_data_callback(cb, ct_h2_send_data);
    return cb;
}

struct ct_h2_conn *ct_h2_conn_new(const struct ct_h2_settings *s, const struct ct_h2_cbs *cbs,
                                  void *owner)
{
    CT_ASSERT(cbs && cbs->on_request && cbs->on_close);
    struct ct_h2_conn *h = ct_xcalloc(1, sizeof(*h));
    h->magic = CT_H2_CONN_MAGIC;
    if (s)
        h->set = *s;
    else
        ct_h2_settings_default(&h->set);
    h->cbs = *cbs;
    h->owner = owner;
    h->resets = (struct ct_h2_bucket){h->set.reset_burst, 0, h->set.reset_burst, h->set.reset_rate};
    h->empties =
        (struct ct_h2_bucket){h->set.empty_burst, 0, h->set.empty_burst, h->set.empty_rate};
    h->scan.skip = NGHTTP2_CLIENT_MAGIC_LEN; /* then frames (h2_rfc.c) */

    nghttp2_option *opt;
    CT_ASSERT(nghttp2_option_new(&opt) == 0);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_option_set_no_http_messaging(opt, 1);
    nghttp2_option_set_no_closed_streams(opt, 1);
    nghttp2_option_set_max_outbound_ack(opt, h->set.max_queued_acks);
    nghttp2_session_callbacks *cb = callbacks();
    nghttp2_mem nm; /* copied by nghttp2 */
    ct_h2_mem_init(&h->mem, &nm);
    CT_ASSERT(nghttp2_session_server_new3(&h->session, cb, h, opt, &nm) == 0);
    ct_h2_mem_created(&h->mem);
    nghttp2_session_callbacks_del(cb);
    nghttp2_option_del(opt);

    const nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, h->set.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, h->set.initial_window},
        {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, h->set.max_frame_size},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, h->set.max_header_list},
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
    };
    CT_ASSERT(nghttp2_submit_settings(h->session, NGHTTP2_FLAG_NONE, iv, CT_ARRAY_LEN(iv)) == 0);
    if (h->set.conn_window > 65535)
        CT_ASSERT(nghttp2_session_set_local_window_size(h->session, NGHTTP2_FLAG_NONE, 0,
                                                        (int32_t)h->set.conn_window) == 0);
    return h;
}

void ct_h2_conn_free(struct ct_h2_conn **hp)
{
    struct ct_h2_conn *h = *hp;
    if (h == NULL)
        return;
    CT_CHECK_OBJ(h, CT_H2_CONN_MAGIC);
    /* nghttp2_session_del() calls no callback: close ours first; to their
     * owner they are cancelled. */
    while (h->streams)
        ct_h2_stream_close(h->streams, NGHTTP2_CANCEL);
    nghttp2_session_del(h->session);
    h->magic = 0;
    CT_FREE(hp);
}

/* The GOAWAY for a session nghttp2 can no longer send on (RFC 9113 §6.8):
 * last stream id, then the error code. */
static int die(struct ct_h2_conn *h, enum ct_h2_why why)
{
    if (!h->dead) {
        if (h->why == CT_H2_WHY_NONE || h->why == CT_H2_WHY_DRAIN ||
            h->why == CT_H2_WHY_PEER_GOAWAY)
            h->why = why;
        uint32_t last = (uint32_t)nghttp2_session_get_last_proc_stream_id(h->session);
        uint32_t code = why_tbl[h->why].code;
        uint8_t *p = h->fin;
        /* Nothing sent yet: our preface (a SETTINGS frame) must come first
         * (RFC 9113 §3.4), or the client reads the GOAWAY as garbage. */
        if (h->counts.bytes_out == 0) {
            const uint8_t settings[9] = {0, 0, 0, NGHTTP2_SETTINGS, 0, 0, 0, 0, 0};
            memcpy(p, settings, 9);
            p += 9;
        }
        const uint8_t hd[9] = {0, 0, 8, NGHTTP2_GOAWAY, 0, 0, 0, 0, 0};
        memcpy(p, hd, 9);
        for (int i = 0; i < 4; i++) {
            p[9 + i] = (uint8_t)((last & 0x7fffffffu) >> (24 - 8 * i));
            p[13 + i] = (uint8_t)(code >> (24 - 8 * i));
        }
        h->fin_len = (size_t)(p + 17 - h->fin);
        h->dead = true;
    }
    return why_tbl[h->why].code == NGHTTP2_ENHANCE_YOUR_CALM ? CT_ELIMIT : CT_EPROTO;
}

static enum ct_h2_why why_of_fatal(ssize_t rv)
{
    switch (rv) {
    case NGHTTP2_ERR_BAD_CLIENT_MAGIC: return CT_H2_WHY_PREFACE;
    case NGHTTP2_ERR_FLOODED: return CT_H2_WHY_ACK_FLOOD;
    case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS: return CT_H2_WHY_CONTINUATION_FLOOD;
    default: return CT_H2_WHY_INTERNAL; /* ours (CALLBACK_FAILURE) set h->why first */
    }
}

bool ct_h2_conn_failing(const struct ct_h2_conn *h)
{
    return h->why != CT_H2_WHY_NONE && h->why != CT_H2_WHY_DRAIN && h->why != CT_H2_WHY_PEER_GOAWAY;
}

int ct_h2_conn_recv(struct ct_h2_conn *h, const void *data, size_t len, ct_time_t now)
{
    CT_CHECK_OBJ(h, CT_H2_CONN_MAGIC);
    if (h->dead)
        return why_tbl[h->why].code == NGHTTP2_ENHANCE_YOUR_CALM ? CT_ELIMIT : CT_EPROTO;
    h->now = now;
    h->counts.bytes_in += len;
    int rv = ct_h2_rfc_recv(h, data, len);
    if (rv < 0)
        return die(h, why_of_fatal(rv));
    /* nghttp2 found a connection error and queued its GOAWAY (on_frame_send
     * will name the code): it wants nothing more from this client. */
    if (!h->drained && h->why == CT_H2_WHY_NONE && !nghttp2_session_want_read(h->session))
        h->why = CT_H2_WHY_PROTOCOL;
    if (ct_h2_conn_failing(h))
        return why_tbl[h->why].code == NGHTTP2_ENHANCE_YOUR_CALM ? CT_ELIMIT : CT_EPROTO;
    return CT_OK;
}

int ct_h2_conn_send(struct ct_h2_conn *h, struct evbuffer *out, size_t max)
{
    CT_CHECK_OBJ(h, CT_H2_CONN_MAGIC);
    if (!h->dead) {
        h->out = out;
        h->out_max = max;
        size_t before = evbuffer_get_length(out);
        while (evbuffer_get_length(out) < max) {
            const uint8_t *p;
            ssize_t n = nghttp2_session_mem_send(h->session, &p);
            if (n < 0) {
                h->out = NULL;
                die(h, CT_H2_WHY_INTERNAL);
                break;
            }
            if (n == 0)
                break;
            evbuffer_add(out, p, (size_t)n);
        }
        h->out = NULL;
        h->counts.bytes_out += evbuffer_get_length(out) - before;
    }
    if (h->dead && h->fin_len) {
        evbuffer_add(out, h->fin, h->fin_len);
        h->counts.bytes_out += h->fin_len;
        h->fin_len = 0;
    }
    if (h->dead || ct_h2_conn_failing(h))
        return why_tbl[h->why].code == NGHTTP2_ENHANCE_YOUR_CALM ? CT_ELIMIT : CT_EPROTO;
    return CT_OK;
}

bool ct_h2_conn_want_write(const struct ct_h2_conn *h)
{
    if (h->dead)
        return h->fin_len > 0;
    return nghttp2_session_want_write(h->session) != 0;
}

bool ct_h2_conn_is_done(const struct ct_h2_conn *h)
{
    if (h->dead)
        return true;
    return !nghttp2_session_want_read(h->session) && !nghttp2_session_want_write(h->session);
}

enum ct_h2_why ct_h2_conn_why(const struct ct_h2_conn *h)
{
    return h->why;
}

size_t ct_h2_conn_trim(struct ct_h2_conn *h)
{
    CT_CHECK_OBJ(h, CT_H2_CONN_MAGIC);
    if (h->nstreams > 0 || ct_h2_conn_want_write(h))
        return 0;
    if (h->dead) /* a dead session's buffers are never written again: no matter */
        return 0;
    return ct_h2_mem_trim(&h->mem);
}

size_t ct_h2_conn_nstreams(const struct ct_h2_conn *h)
{
    return h->nstreams;
}

const struct ct_h2_counts *ct_h2_conn_counts(const struct ct_h2_conn *h)
{
    return &h->counts;
}

void ct_h2_conn_drain_notice(struct ct_h2_conn *h)
{
    CT_CHECK_OBJ(h, CT_H2_CONN_MAGIC);
    if (h->dead || h->drained)
        return;
    CT_ASSERT(nghttp2_submit_shutdown_notice(h->session) == 0);
}

void ct_h2_conn_drain(struct ct_h2_conn *h)
{
    CT_CHECK_OBJ(h, CT_H2_CONN_MAGIC);
    if (h->dead || h->drained)
        return;
    h->drained = true;
    if (h->why == CT_H2_WHY_NONE)
        h->why = CT_H2_WHY_DRAIN;
    /* Streams above the last one we processed were never seen: the client
     * may retry them elsewhere (RFC 9113 §6.8). */
    int32_t last = nghttp2_session_get_last_proc_stream_id(h->session);
    CT_ASSERT(
        nghttp2_submit_goaway(h->session, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, NULL, 0) == 0);
}
