/*
 * proxy/h2/h2_stream.c: one HTTP/2 stream: its request (head validated by
 * http/http_h2msg.c, body checked against content-length and buffered
 * under the stream window) and its response (head, then body pieces sent
 * without a copy). States: enum ct_h2_rx / ct_h2_tx, drawn in
 * docs/h2_stream.dot.
 *
 * A stream struct exists from the first HEADERS frame (on_begin_headers)
 * until nghttp2 closes the stream (on_stream_close) or the connection is
 * freed; it hangs off nghttp2's stream user data and the connection's list.
 * Response body pieces are refcounted (h2_int.h): the queue holds one
 * reference, and each output chain that points into a piece one more, so a
 * reset stream frees its queue while bytes already written stay valid.
 */
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>

#include "http/http.h"
#include "proxy/h2/h2_int.h"

static struct ct_h2_conn *conn_of(void *ud)
{
    struct ct_h2_conn *h = ud;
    CT_CHECK_OBJ(h, CT_H2_CONN_MAGIC);
    return h;
}

/* The most unread body a stream can hold: its window as we announced it,
 * or the default window a client may use before it has our SETTINGS. */
static size_t body_bound(const struct ct_h2_conn *h)
{
    return CT_MAX((size_t)65535, (size_t)h->set.initial_window);
}

/* Drop N bytes of body in RX_DISCARD, opening the stream's window for them;
 * past discard_max, RST_STREAM NO_ERROR tells the client to stop (RFC 9113
 * §8.1). */
static void discard(struct ct_h2_conn *h, struct ct_h2_stream *st, size_t n)
{
    nghttp2_session_consume_stream(h->session, st->id, n);
    st->discarded += n;
    if (st->discarded > h->set.discard_max) {
        st->rx = CT_H2_RX_REFUSED;
        CT_ASSERT(nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, st->id,
                                            NGHTTP2_NO_ERROR) == 0);
    }
}

/* ---- spares ------------------------------------------------------------------ */

/* Stream structs (with their request builder) and body pieces that went,
 * this thread's, for the next ones: a stream and a piece per response were
 * three allocations and frees (the builder is 2.7 KiB). Per thread rather
 * than per connection, so an idle connection holds none, and a piece may
 * outlive its connection (an output chain still points at it). Bounded: a
 * burst's structs beyond SPARE_MAX go back to malloc. */
#define SPARE_MAX 32
static _Thread_local struct ct_h2_stream *spare_st; /* linked by ->next */
static _Thread_local unsigned nspare_st;
static _Thread_local struct ct_h2_piece *spare_pc;
static _Thread_local unsigned nspare_pc;

static struct ct_h2_piece *piece_new(void)
{
    struct ct_h2_piece *pc = spare_pc;
    if (pc == NULL)
        return ct_xmalloc(sizeof(*pc));
    spare_pc = pc->next;
    nspare_pc--;
    return pc;
}

/* ---- pieces of response body ---------------------------------------------- */

static void piece_unref(struct ct_h2_piece *pc)
{
    CT_CHECK_OBJ(pc, CT_H2_PIECE_MAGIC);
    if (--pc->refs > 0)
        return;
    if (pc->buf)
        evbuffer_free(pc->buf);
    if (pc->release)
        pc->release(pc->arg);
    pc->magic = 0;
    if (nspare_pc < SPARE_MAX) {
        pc->next = spare_pc;
        spare_pc = pc;
        nspare_pc++;
    } else {
        free(pc);
    }
}

/* evbuffer_add_reference() cleanup: an output chain is done with the piece. */
static void piece_chain_done(const void *data, size_t len, void *arg)
{
    piece_unref(arg);
}

static void queue_piece(struct ct_h2_stream *st, struct ct_h2_piece *pc)
{
    if (st->out_tail)
        st->out_tail->next = pc;
    else
        st->out_head = pc;
    st->out_tail = pc;
    st->out_queued += pc->len;
}

/* ---- stream life ---------------------------------------------------------- */

int ct_h2_on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    struct ct_h2_conn *h = conn_of(ud);
    if (f->hd.type != NGHTTP2_HEADERS)
        return 0;
    if (f->headers.cat == NGHTTP2_HCAT_REQUEST) {
        struct ct_http_h2msg_limits lim = {h->set.max_header_list, h->set.max_fields};
        struct ct_h2_stream *st = spare_st;
        struct ct_http_h2msg *head;
        if (st) {
            spare_st = st->next;
            nspare_st--;
            head = st->head;
            ct_http_h2msg_reset(head, &lim);
        } else {
            st = ct_xmalloc(sizeof(*st));
            head = ct_http_h2msg_new(&lim);
        }
        *st = (struct ct_h2_stream){.magic = CT_H2_STREAM_MAGIC, .id = f->hd.stream_id, .h = h};
        st->head = head;
        st->next = h->streams;
        if (h->streams)
            h->streams->prev = st;
        h->streams = st;
        h->nstreams++;
        CT_ASSERT(nghttp2_session_set_stream_user_data(s, st->id, st) == 0);
        h->counts.streams++;
        return 0;
    }
    /* A second header block on a request stream: trailers (RFC 9113 §8.1). */
    struct ct_h2_stream *st = ct_h2_stream_get(h, f->hd.stream_id);
    if (st && st->rx == CT_H2_RX_BODY) {
        st->rx = CT_H2_RX_TRAILERS;
        ct_http_h2msg_begin_trailers(st->head);
    }
    return 0;
}

void ct_h2_stream_close(struct ct_h2_stream *st, uint32_t code)
{
    CT_CHECK_OBJ(st, CT_H2_STREAM_MAGIC);
    struct ct_h2_conn *h = st->h;
    if (st->prev)
        st->prev->next = st->next;
    else
        h->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    h->nstreams--;
    if (st->req)
        h->cbs.on_close(h->owner, st->req, st->id, code);
    for (struct ct_h2_piece *pc = st->out_head, *next; pc; pc = next) {
        next = pc->next;
        piece_unref(pc);
    }
    if (st->body_in)
        evbuffer_free(st->body_in);
    st->magic = 0;
    if (nspare_st < SPARE_MAX) { /* its builder goes with it (reset when taken) */
        st->next = spare_st;
        spare_st = st;
        nspare_st++;
    } else {
        ct_http_h2msg_free(&st->head);
        free(st);
    }
}

int ct_h2_on_stream_close(nghttp2_session *s, int32_t sid, uint32_t code, void *ud)
{
    struct ct_h2_conn *h = conn_of(ud);
    /* How it closed decides what later frames on it get (h2_rfc.c). A
     * client's RST_STREAM marks the stream closed for reading too. */
    enum ct_h2_closed how = sid == h->peer_rst_sid ? CT_H2_CLOSED_PEER_RESET
                            : nghttp2_session_get_stream_remote_close(s, sid) == 1
                                ? CT_H2_CLOSED_ENDED
                                : CT_H2_CLOSED_WE_RESET;
    h->peer_rst_sid = 0;
    ct_h2_closed_note(h, sid, how);
    struct ct_h2_stream *st = nghttp2_session_get_stream_user_data(s, sid);
    if (st)
        ct_h2_stream_close(st, code);
    return 0;
}

/* ---- the request ------------------------------------------------------------ */

/* A stream error the client caused: RST_STREAM CODE, counted against the
 * reset budget (a client that makes us reset streams is resetting them). */
static int stream_error(struct ct_h2_conn *h, struct ct_h2_stream *st, uint32_t code)
{
    st->rx = CT_H2_RX_REFUSED;
    h->counts.malformed++;
    CT_ASSERT(nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, st->id, code) == 0);
    if (!ct_h2_bucket_take(&h->resets, h->now))
        return ct_h2_conn_fail(h, CT_H2_WHY_RAPID_RESET);
    return 0;
}

/* A head that never reaches the owner. Malformed (400): RST_STREAM
 * PROTOCOL_ERROR (RFC 9113 §8.1.1). Over a limit (431) or an unmet
 * expectation (417): answered with that status; if the client is still
 * sending, RST_STREAM NO_ERROR then tells it to stop (RFC 9113 §8.1). */
static int refuse_head(struct ct_h2_conn *h, struct ct_h2_stream *st, bool end_stream)
{
    unsigned status = ct_http_h2msg_error_status(st->head);
    if (status != 431 && status != 417)
        return stream_error(h, st, NGHTTP2_PROTOCOL_ERROR);
    st->rx = CT_H2_RX_REFUSED;
    h->counts.refused_limit++;
    char code[4];
    snprintf(code, sizeof code, "%u", status);
    nghttp2_nv nv = {(uint8_t *)":status", (uint8_t *)code, 7, 3, NGHTTP2_NV_FLAG_NONE};
    CT_ASSERT(nghttp2_submit_response(h->session, st->id, &nv, 1, NULL) == 0);
    if (!end_stream)
        CT_ASSERT(nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, st->id,
                                            NGHTTP2_NO_ERROR) == 0);
    return 0;
}

int ct_h2_on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                    const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    struct ct_h2_conn *h = conn_of(ud);
    struct ct_h2_stream *st = ct_h2_stream_get(h, f->hd.stream_id);
    if (st == NULL || (st->rx != CT_H2_RX_HEAD && st->rx != CT_H2_RX_TRAILERS))
        return 0;
    /* The first error sticks in the builder; the block is still decoded
     * (HPACK state must stay in step) but nothing more is kept. */
    ct_http_h2msg_add(st->head, ct_str_make((const char *)name, namelen),
                      ct_str_make((const char *)value, valuelen));
    return 0;
}

/* END_STREAM: the body must add up to content-length (RFC 9113 §8.1.1). */
static int request_end(struct ct_h2_conn *h, struct ct_h2_stream *st)
{
    if (st->has_length && st->body_received != st->content_length)
        return stream_error(h, st, NGHTTP2_PROTOCOL_ERROR);
    st->rx = CT_H2_RX_DONE;
    if (h->cbs.on_request_end)
        h->cbs.on_request_end(h->owner, st->req, st->id);
    return 0;
}

static int head_done(struct ct_h2_conn *h, struct ct_h2_stream *st, bool end)
{
    const struct ct_http_msg *msg;
    if (ct_http_h2msg_finish(st->head, end, &msg) != CT_OK)
        return refuse_head(h, st, end);
    st->has_length = msg->framing == CT_FRAME_LENGTH;
    st->head_request = msg->method == CT_METHOD_HEAD;
    st->content_length = msg->content_length;
    st->rx = end ? CT_H2_RX_DONE : CT_H2_RX_BODY;
    h->counts.requests++;
    /* A hit may be answered from inside the callback, before its handle is
     * known: the stream is the owner's from here on. */
    st->delivering = true;
    st->req = h->cbs.on_request(h->owner, st->id, msg, end);
    st->delivering = false;
    if (st->req == NULL) {
        st->rx = CT_H2_RX_REFUSED;
        CT_ASSERT(nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, st->id,
                                            NGHTTP2_REFUSED_STREAM) == 0);
        return 0;
    }
    if (st->rx == CT_H2_RX_REFUSED) /* the owner reset it from the callback */
        return 0;
    if (end && h->cbs.on_request_end)
        h->cbs.on_request_end(h->owner, st->req, st->id);
    return 0;
}

int ct_h2_stream_frame_recv(struct ct_h2_conn *h, const nghttp2_frame *f)
{
    struct ct_h2_stream *st = ct_h2_stream_get(h, f->hd.stream_id);
    if (st == NULL)
        return 0;
    bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
    if (f->hd.type == NGHTTP2_HEADERS) {
        if (st->rx == CT_H2_RX_HEAD)
            return head_done(h, st, end);
        if (st->rx != CT_H2_RX_TRAILERS)
            return 0;
        /* Trailers: validated (a bad one is malformed), dropped, and they
         * must end the stream (RFC 9113 §8.1). */
        if (ct_http_h2msg_error_status(st->head) != 0 || !end)
            return stream_error(h, st, NGHTTP2_PROTOCOL_ERROR);
        return request_end(h, st);
    }
    /* DATA, complete: tell the owner once per frame, then the end. */
    if (st->rx != CT_H2_RX_BODY)
        return 0;
    if (st->body_in && evbuffer_get_length(st->body_in) && h->cbs.on_body)
        h->cbs.on_body(h->owner, st->req, st->id);
    if (end && st->rx == CT_H2_RX_BODY)
        return request_end(h, st);
    return 0;
}

int ct_h2_on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *data,
                        size_t len, void *ud)
{
    struct ct_h2_conn *h = conn_of(ud);
    /* The connection window reopens at once: what stays buffered is held
     * against the stream's window, which reopens only as the owner reads. */
    nghttp2_session_consume_connection(s, len);
    struct ct_h2_stream *st = ct_h2_stream_get(h, sid);
    if (st && st->rx == CT_H2_RX_DISCARD)
        discard(h, st, len);
    if (st == NULL || st->rx != CT_H2_RX_BODY)
        return 0; /* reset, refused or answered: dropped */
    st->body_received += len;
    if (st->has_length && st->body_received > st->content_length)
        return stream_error(h, st, NGHTTP2_PROTOCOL_ERROR); /* never passed on */
    if (st->body_in == NULL)
        st->body_in = evbuffer_new();
    /* nghttp2 holds the client to the window; this holds us to it too. */
    if (evbuffer_get_length(st->body_in) + len > body_bound(h))
        return stream_error(h, st, NGHTTP2_FLOW_CONTROL_ERROR);
    evbuffer_add(st->body_in, data, len);
    return 0;
}

void ct_h2_stream_response_sent(struct ct_h2_conn *h, int32_t sid)
{
    struct ct_h2_stream *st = ct_h2_stream_get(h, sid);
    if (st == NULL || (st->rx != CT_H2_RX_BODY && st->rx != CT_H2_RX_TRAILERS))
        return;
    /* The response is complete and the request is not. Resetting at once
     * (RFC 9113 §8.1 allows RST_STREAM NO_ERROR) makes some clients drop
     * the response (curl 7.88: error 92), so the rest of the body is read
     * and dropped, up to discard_max, as HTTP/1 lingers on close. */
    st->rx = CT_H2_RX_DISCARD;
    size_t unread = st->body_in ? evbuffer_get_length(st->body_in) : 0;
    if (unread) {
        evbuffer_drain(st->body_in, unread);
        discard(h, st, unread);
    }
}

/* The buffered body ST may hand up now. With a content-length, the byte
 * that completes it stays until END_STREAM shows nothing more follows:
 * DATA past the length is a malformed message (RFC 9113 §8.1.1), and an
 * origin given the whole length would take the request for complete
 * before the excess is seen (issue 41). A short body at END_STREAM is
 * refused the same way (request_end): the origin never has it all. */
static size_t body_ready(const struct ct_h2_stream *st)
{
    size_t n = st->body_in ? evbuffer_get_length(st->body_in) : 0;
    if (n > 0 && st->has_length && st->rx != CT_H2_RX_DONE &&
        st->body_received == st->content_length)
        n--;
    return n;
}

size_t ct_h2_body_unread(const struct ct_h2_conn *h, int32_t sid)
{
    struct ct_h2_stream *st = ct_h2_stream_get(h, sid);
    return st ? body_ready(st) : 0;
}

size_t ct_h2_body_read(struct ct_h2_conn *h, int32_t sid, struct evbuffer *dst, size_t max)
{
    struct ct_h2_stream *st = ct_h2_stream_get(h, sid);
    if (st == NULL || st->body_in == NULL)
        return 0;
    max = CT_MIN(max, body_ready(st));
    if (max == 0)
        return 0;
    int n = evbuffer_remove_buffer(st->body_in, dst, max);
    if (n <= 0)
        return 0;
    nghttp2_session_consume_stream(h->session, sid, (size_t)n);
    return (size_t)n;
}

/* ---- the response ----------------------------------------------------------- */

/* The response heads' scratch, this thread's: nghttp2 copies the pairs
 * before a submit returns, so every session of the thread shares it, and an
 * idle connection holds none (freed with each connection's trim, it left
 * holes in the heap between the next connections' long-lived blocks). */
static _Thread_local nghttp2_nv *nv_scratch;
static _Thread_local size_t nv_cap;

void ct_h2_thread_free(void)
{
    free(nv_scratch);
    nv_scratch = NULL;
    nv_cap = 0;
    while (spare_st) {
        struct ct_h2_stream *st = spare_st;
        spare_st = st->next;
        ct_http_h2msg_free(&st->head);
        free(st);
    }
    nspare_st = 0;
    while (spare_pc) {
        struct ct_h2_piece *pc = spare_pc;
        spare_pc = pc->next;
        free(pc);
    }
    nspare_pc = 0;
}

/* RESP's head as nghttp2 name/value pairs in nv_scratch: :status, the fields
 * that are not connection-specific (RFC 9113 §8.2.2), EXTRA. nghttp2 copies
 * them at submit and lower-cases each name as it copies (RFC 9113 §8.2.1;
 * nghttp2_nv_array_copy), so the views need not outlive the call and no
 * second copy is made here. Returns the count. */
/* A head that is this response's own (a pass), not a stored one sent again:
 * its fields go as literals the encoder does not index (NGHTTP2_NV_FLAG_NO_INDEX,
 * which nghttp2 writes as "never indexed", RFC 7541 §6.2.3: its only
 * non-indexing form), but those whose values usually repeat from one
 * response to the next. nghttp2 1.52's encoder keys its dynamic table by name: every new
 * value of a name (a request id, a sequence number) added an entry that
 * each later lookup of the name compares (memcmp), 160 compares and 9k
 * instructions per pass response with cachet-origin's X-Origin-Seq
 * (bench/micro/reqcost.sh h2-pass); nginx and HAProxy never index
 * responses at all. Stored heads repeat whole on every hit, so indexing pays
 * there. */
static uint8_t once_flags(const struct ct_http_field *f)
{
    switch (f->id) {
    case CT_HDR_ACCEPT_RANGES:
    case CT_HDR_CACHE_CONTROL:
    case CT_HDR_CONTENT_ENCODING:
    case CT_HDR_CONTENT_TYPE:
    case CT_HDR_SERVER:
    case CT_HDR_VARY:
    case CT_HDR_VIA: return NGHTTP2_NV_FLAG_NONE;
    default: return NGHTTP2_NV_FLAG_NO_INDEX;
    }
}

static size_t head_nv(const struct ct_http_msg *resp, const struct ct_http_field *extra,
                      size_t nextra, char status[4], bool once)
{
    size_t nmax = 1 + resp->nfields + nextra;
    if (nmax > nv_cap) {
        nv_cap = nmax * 2;
        nv_scratch = ct_xrealloc(nv_scratch, nv_cap * sizeof(*nv_scratch));
    }
    nghttp2_nv *nv = nv_scratch;
    /* 100-599 (checked by the caller): three digits, without printf */
    status[0] = (char)('0' + resp->status / 100);
    status[1] = (char)('0' + resp->status / 10 % 10);
    status[2] = (char)('0' + resp->status % 10);
    status[3] = '\0';
    size_t n = 0;
    nv[n++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, 3, NGHTTP2_NV_FLAG_NONE};
    for (size_t i = 0; i < resp->nfields + nextra; i++) {
        const struct ct_http_field *f =
            i < resp->nfields ? &resp->fields[i] : &extra[i - resp->nfields];
        if (i < resp->nfields && ct_http_msg_field_is_hop(resp, f))
            continue;
        nv[n++] = (nghttp2_nv){(uint8_t *)f->name.p, (uint8_t *)f->value.p, f->name.len,
                               f->value.len,
                               once && i < resp->nfields ? once_flags(f) : NGHTTP2_NV_FLAG_NONE};
    }
    return n;
}

static ssize_t read_body(nghttp2_session *s, int32_t sid, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    struct ct_h2_stream *st = src->ptr;
    CT_CHECK_OBJ(st, CT_H2_STREAM_MAGIC);
    if (st->out_queued == 0) {
        if (st->tx == CT_H2_TX_ENDED) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            return 0;
        }
        st->deferred = true; /* until ct_h2_body_*() resumes it */
        return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = CT_MIN(length, st->out_queued);
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (n == st->out_queued && st->tx == CT_H2_TX_ENDED)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* NO_COPY: the 9-byte frame header, then LENGTH bytes of the stream's pieces
 * added to the output by reference (REF) or moved (BUF). */
int ct_h2_send_data(nghttp2_session *s, nghttp2_frame *f, const uint8_t *framehd, size_t length,
                    nghttp2_data_source *src, void *ud)
{
    struct ct_h2_conn *h = conn_of(ud);
    struct ct_h2_stream *st = src->ptr;
    CT_CHECK_OBJ(st, CT_H2_STREAM_MAGIC);
    if (h->out == NULL || evbuffer_get_length(h->out) >= h->out_max)
        return NGHTTP2_ERR_WOULDBLOCK; /* the same frame comes back next send */
    CT_ASSERT(f->data.padlen == 0);    /* we never pad */
    CT_ASSERT(length <= st->out_queued);
    evbuffer_add(h->out, framehd, 9);
    while (length > 0) {
        struct ct_h2_piece *pc = st->out_head;
        size_t k = CT_MIN(length, pc->len - pc->off);
        if (pc->buf) {
            evbuffer_remove_buffer(pc->buf, h->out, k);
        } else {
            pc->refs++;
            evbuffer_add_reference(h->out, pc->p + pc->off, k, piece_chain_done, pc);
        }
        pc->off += k;
        length -= k;
        st->out_queued -= k;
        if (pc->off == pc->len) {
            st->out_head = pc->next;
            if (st->out_head == NULL)
                st->out_tail = NULL;
            piece_unref(pc);
        }
    }
    return 0;
}

static void resume(struct ct_h2_conn *h, struct ct_h2_stream *st)
{
    if (st->deferred) {
        st->deferred = false;
        nghttp2_session_resume_data(h->session, st->id);
    }
}

/* The stream the owner names, if it is still the owner's to answer. */
static struct ct_h2_stream *owned(struct ct_h2_conn *h, int32_t sid)
{
    CT_CHECK_OBJ(h, CT_H2_CONN_MAGIC);
    struct ct_h2_stream *st = ct_h2_stream_get(h, sid);
    return st && (st->req || st->delivering) && st->rx != CT_H2_RX_REFUSED ? st : NULL;
}

static int submit_head(struct ct_h2_conn *h, int32_t sid, const struct ct_http_msg *resp,
                       const struct ct_http_field *extra, size_t nextra, bool body, bool once)
{
    struct ct_h2_stream *st = owned(h, sid);
    if (st == NULL)
        return CT_ENOENT;
    if (st->tx != CT_H2_TX_NONE || resp->status < 100 || resp->status > 599 || resp->status == 101)
        return CT_EPROTO; /* RFC 9113 §8.6: no 101 in HTTP/2 */
    char status[4];
    size_t n = head_nv(resp, extra, nextra, status, once);
    /* RFC 9110 §9.3.2, §15.3.5, §15.4.5: whatever the owner says, these
     * responses have no content; the head ends the stream and any body the
     * owner hands in later is dropped (released at once). */
    if (resp->status >= 200 && (st->head_request || resp->status == 204 || resp->status == 304)) {
        st->bodiless = true;
        body = false;
    }
    int rv;
    if (resp->status < 200) {
        rv = nghttp2_submit_headers(h->session, NGHTTP2_FLAG_NONE, sid, NULL, nv_scratch, n, NULL);
    } else {
        nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_body};
        rv = nghttp2_submit_response(h->session, sid, nv_scratch, n, body ? &prd : NULL);
        if (rv == 0)
            st->tx = body ? CT_H2_TX_BODY : CT_H2_TX_ENDED;
    }
    return rv == 0 ? CT_OK : CT_ENOENT;
}

int ct_h2_submit_head(struct ct_h2_conn *h, int32_t sid, const struct ct_http_msg *resp,
                      const struct ct_http_field *extra, size_t nextra, bool body)
{
    return submit_head(h, sid, resp, extra, nextra, body, false);
}

int ct_h2_submit_head_once(struct ct_h2_conn *h, int32_t sid, const struct ct_http_msg *resp,
                           const struct ct_http_field *extra, size_t nextra, bool body)
{
    return submit_head(h, sid, resp, extra, nextra, body, true);
}

int ct_h2_body_ref(struct ct_h2_conn *h, int32_t sid, const void *p, size_t len,
                   ct_h2_release_cb *release, void *arg)
{
    struct ct_h2_stream *st = owned(h, sid);
    int rc = st == NULL                ? CT_ENOENT
             : st->bodiless            ? CT_OK
             : st->tx != CT_H2_TX_BODY ? CT_EPROTO
                                       : CT_OK;
    if (rc != CT_OK || len == 0 || st->bodiless) {
        if (release)
            release(arg);
        return rc;
    }
    struct ct_h2_piece *pc = piece_new();
    *pc = (struct ct_h2_piece){
        .magic = CT_H2_PIECE_MAGIC, .p = p, .len = len, .refs = 1, .release = release, .arg = arg};
    queue_piece(st, pc);
    resume(h, st);
    return CT_OK;
}

int ct_h2_body_move(struct ct_h2_conn *h, int32_t sid, struct evbuffer *src, size_t n)
{
    struct ct_h2_stream *st = owned(h, sid);
    if (st == NULL)
        return CT_ENOENT;
    if (st->bodiless) {
        evbuffer_drain(src, n);
        return CT_OK;
    }
    if (st->tx != CT_H2_TX_BODY)
        return CT_EPROTO;
    struct evbuffer *buf = evbuffer_new();
    int moved = evbuffer_remove_buffer(src, buf, n);
    if (moved <= 0) {
        evbuffer_free(buf);
        return CT_OK;
    }
    struct ct_h2_piece *pc = piece_new();
    *pc = (struct ct_h2_piece){
        .magic = CT_H2_PIECE_MAGIC, .buf = buf, .len = (size_t)moved, .refs = 1};
    queue_piece(st, pc);
    resume(h, st);
    return CT_OK;
}

int ct_h2_body_end(struct ct_h2_conn *h, int32_t sid)
{
    struct ct_h2_stream *st = owned(h, sid);
    if (st == NULL)
        return CT_ENOENT;
    if (st->bodiless)
        return CT_OK;
    if (st->tx != CT_H2_TX_BODY)
        return CT_EPROTO;
    st->tx = CT_H2_TX_ENDED;
    resume(h, st);
    return CT_OK;
}

size_t ct_h2_body_queued(const struct ct_h2_conn *h, int32_t sid)
{
    struct ct_h2_stream *st = ct_h2_stream_get(h, sid);
    return st ? st->out_queued : 0;
}

int ct_h2_reset(struct ct_h2_conn *h, int32_t sid, uint32_t error_code)
{
    struct ct_h2_stream *st = owned(h, sid);
    if (st == NULL)
        return CT_ENOENT;
    st->rx = CT_H2_RX_REFUSED; /* nothing more goes up or out */
    st->tx = CT_H2_TX_ENDED;
    return nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, sid, error_code) == 0
               ? CT_OK
               : CT_ENOENT;
}
