/*
 * proxy/h2/h2_rfc.c: what RFC 9113 asks of a server that nghttp2 1.52, as
 * cachet configures it, lets pass (issue 41; docs/h2.md, "RFC 9113: who
 * does what").
 *
 * cachet sends SETTINGS_NO_RFC7540_PRIORITIES = 1 and sets no_closed_streams,
 * so nghttp2 forgets a stream the moment it closes, and skips PRIORITY
 * frames unread (nghttp2_session.c at v1.52.0: nghttp2_session_close_stream
 * destroys the stream when pending_no_rfc7540_priorities is 1;
 * session_on_data_received_fail_fast turns DATA on a stream it does not
 * hold into NGHTTP2_IB_IGN_DATA, where no callback at all runs, not even
 * on_begin_frame; nghttp2_session_on_request_headers_received ignores a
 * header block on an id it has passed, IGN_HEADER_BLOCK). Keeping closed
 * streams (no_closed_streams unset) would not do: 1.52 keeps them only
 * with RFC 7540 priorities in use, for the dependency tree, at most
 * max_concurrent_streams of them, one nghttp2_stream each.
 *
 * So the engine looks at each frame header before nghttp2 does
 * (ct_h2_rfc_recv): the bytes before a header are fed first, so nghttp2's
 * view of the streams is current, then the header (and a PRIORITY frame's
 * 5-byte payload) is checked, then fed. Only DATA, HEADERS and PRIORITY
 * frames on ids nghttp2 does not hold are judged here, against a ring of
 * the CT_H2_CLOSED_MAX streams closed last and how each closed:
 *
 *   closed by                 DATA or HEADERS after it            RFC 9113
 *   the client's END_STREAM   connection error STREAM_CLOSED      §5.1 closed
 *   the client's RST_STREAM   stream error STREAM_CLOSED (RST)    §5.1 closed
 *   our RST_STREAM, the       ignored (the client may have sent   §5.1 closed
 *   client still sending      it before our reset reached it)
 *   never opened (an id       HEADERS: connection error           §5.1.1
 *   skipped, below the last)  PROTOCOL_ERROR; DATA: STREAM_CLOSED
 *   forgotten (older than     ignored, as nghttp2 does: we cannot
 *   the ring)                 tell which of the above it was
 *
 * and a PRIORITY frame on stream 0 is a connection error PROTOCOL_ERROR
 * (§6.3), one that depends on itself a stream error PROTOCOL_ERROR (§5.3.1)
 * if the stream is open, else a connection error (no RST_STREAM may name an
 * idle stream, §6.4). A stream error we send here takes a token from the
 * reset budget, as every stream error a client provokes (h2_stream.c).
 *
 * Ids above the last stream nghttp2 accepted (refused after our GOAWAY, or
 * still idle) are nghttp2's to judge. A stream nghttp2 refuses without
 * opening it (REFUSED_STREAM) is noted as reset by us (on_invalid_frame_recv).
 */
#include "proxy/h2/h2_int.h"

#include <string.h>

static uint32_t frame_len(const uint8_t *hd)
{
    return (uint32_t)hd[0] << 16 | (uint32_t)hd[1] << 8 | hd[2];
}

static uint32_t u31(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]) & 0x7fffffffu;
}

void ct_h2_closed_note(struct ct_h2_conn *h, int32_t sid, enum ct_h2_closed how)
{
    unsigned i = h->closed_next++ % CT_H2_CLOSED_MAX;
    /* The entry this one replaces is forgotten: an id at or below the
     * highest forgotten one that is not in the ring may be any of them. */
    if (h->closed_id[i] > h->forgot_below)
        h->forgot_below = h->closed_id[i];
    h->closed_id[i] = (uint32_t)sid;
    h->closed_how[i] = (uint8_t)how;
}

/* How SID closed; CT_H2_CLOSED_UNKNOWN if it is not in the ring. */
static enum ct_h2_closed closed_how(const struct ct_h2_conn *h, uint32_t sid)
{
    for (unsigned i = 0; i < CT_H2_CLOSED_MAX; i++)
        if (h->closed_id[i] == sid)
            return (enum ct_h2_closed)h->closed_how[i];
    return CT_H2_CLOSED_UNKNOWN;
}

/* A connection error of ours: nghttp2 queues the GOAWAY (CODE, its last
 * stream) and ignores all further input. */
static void conn_error(struct ct_h2_conn *h, enum ct_h2_why why, uint32_t code)
{
    if (!ct_h2_conn_failing(h))
        h->why = why;
    CT_ASSERT(nghttp2_session_terminate_session(h->session, code) == 0);
}

/* A stream error of ours on a stream nghttp2 no longer holds (or never
 * opened): RST_STREAM CODE, noted as our reset, so what the client sent
 * before it saw the reset is ignored. */
static void stream_error(struct ct_h2_conn *h, uint32_t sid, uint32_t code)
{
    CT_ASSERT(nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, (int32_t)sid, code) == 0);
    h->counts.malformed++;
    ct_h2_closed_note(h, (int32_t)sid, CT_H2_CLOSED_WE_RESET);
    if (!ct_h2_bucket_take(&h->resets, h->now))
        conn_error(h, CT_H2_WHY_RAPID_RESET, NGHTTP2_ENHANCE_YOUR_CALM);
}

/* DATA or HEADERS on SID, which nghttp2 does not hold. */
static void check_closed(struct ct_h2_conn *h, uint8_t type, uint32_t sid)
{
    switch (closed_how(h, sid)) {
    case CT_H2_CLOSED_WE_RESET: return;
    case CT_H2_CLOSED_PEER_RESET: stream_error(h, sid, NGHTTP2_STREAM_CLOSED); return;
    case CT_H2_CLOSED_ENDED: conn_error(h, CT_H2_WHY_STREAM_CLOSED, NGHTTP2_STREAM_CLOSED); return;
    case CT_H2_CLOSED_UNKNOWN: break;
    }
    if (sid <= h->forgot_below)
        return; /* forgotten: maybe one we reset */
    /* Never opened: an id the client skipped (§5.1.1: the first use of an
     * id closes every idle stream below it). */
    if (type == NGHTTP2_HEADERS)
        conn_error(h, CT_H2_WHY_PROTOCOL, NGHTTP2_PROTOCOL_ERROR);
    else
        conn_error(h, CT_H2_WHY_STREAM_CLOSED, NGHTTP2_STREAM_CLOSED);
}

/* Does frame header HD (with a PRIORITY frame's payload after it) need
 * nghttp2's view of the streams to be judged? New request streams, and
 * all other frame types, do not: they pass unchecked. */
static bool wants_check(const struct ct_h2_conn *h, const uint8_t *hd)
{
    uint8_t type = hd[3];
    uint32_t sid = u31(hd + 5);
    if (type == NGHTTP2_PRIORITY)
        return true;
    if (type != NGHTTP2_DATA && type != NGHTTP2_HEADERS)
        return false;
    return sid != 0 && (sid & 1) && sid <= h->max_sid;
}

/* Judge frame header HD (nghttp2 has every byte before it). */
static void check(struct ct_h2_conn *h, const uint8_t *hd)
{
    uint8_t type = hd[3];
    uint32_t sid = u31(hd + 5);
    if (type == NGHTTP2_PRIORITY) {
        if (sid == 0) { /* §6.3 */
            conn_error(h, CT_H2_WHY_PROTOCOL, NGHTTP2_PROTOCOL_ERROR);
            return;
        }
        if (frame_len(hd) != 5 || u31(hd + 9) != sid)
            return; /* a wrong length is nghttp2's FRAME_SIZE_ERROR */
        /* §5.3.1: a stream cannot depend on itself. */
        if (nghttp2_session_find_stream(h->session, (int32_t)sid) != NULL)
            stream_error(h, sid, NGHTTP2_PROTOCOL_ERROR);
        else
            conn_error(h, CT_H2_WHY_PROTOCOL, NGHTTP2_PROTOCOL_ERROR);
        return;
    }
    if ((int32_t)sid > nghttp2_session_get_last_proc_stream_id(h->session))
        return; /* refused after our GOAWAY, or not accepted yet: nghttp2's */
    if (nghttp2_session_find_stream(h->session, (int32_t)sid) != NULL)
        return; /* open or half-closed: nghttp2 answers (§5.1) */
    check_closed(h, type, sid);
}

/* Feed N bytes to nghttp2. Returns its fatal error, or 0. */
static int feed(struct ct_h2_conn *h, const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    ssize_t rv = nghttp2_session_mem_recv(h->session, p, n);
    return rv < 0 ? (int)rv : 0;
}

int ct_h2_rfc_recv(struct ct_h2_conn *h, const uint8_t *data, size_t len)
{
    struct ct_h2_scan *sc = &h->scan;
    const uint8_t *p = data, *end = data + len, *run = data; /* run: not fed yet */
    int rv;
    while (p < end) {
        if (sc->skip > 0) { /* the preface, or a payload: nghttp2's */
            size_t k = CT_MIN((size_t)sc->skip, (size_t)(end - p));
            p += k;
            sc->skip -= (uint32_t)k;
            continue;
        }
        /* A frame header. Whole in this buffer (the usual case): judged in
         * place, and most frames pass without splitting the run. */
        if (sc->have == 0 && end - p >= 9) {
            const uint8_t *hd = p;
            bool prio5 = hd[3] == NGHTTP2_PRIORITY && frame_len(hd) == 5;
            if (!prio5 || end - p >= 14) {
                if (hd[3] == NGHTTP2_HEADERS && (u31(hd + 5) & 1) && u31(hd + 5) > h->max_sid)
                    h->max_sid = u31(hd + 5);
                else if (wants_check(h, hd)) {
                    if ((rv = feed(h, run, (size_t)(p - run))) != 0)
                        return rv;
                    run = p;
                    if (ct_h2_conn_failing(h))
                        break; /* ended by what came before: nothing more to judge */
                    check(h, hd);
                }
                p += 9;
                sc->skip = frame_len(hd);
                continue;
            }
        }
        /* A header cut by the end of the buffer: held back (with a
         * PRIORITY frame's payload) until it is whole, then judged and fed. */
        if ((rv = feed(h, run, (size_t)(p - run))) != 0)
            return rv;
        if (sc->need == 0)
            sc->need = 9;
        size_t k = CT_MIN((size_t)(sc->need - sc->have), (size_t)(end - p));
        memcpy(sc->hd + sc->have, p, k);
        sc->have = (uint8_t)(sc->have + k);
        p += k;
        run = p;
        if (sc->have < sc->need)
            break;
        if (sc->need == 9 && sc->hd[3] == NGHTTP2_PRIORITY && frame_len(sc->hd) == 5) {
            sc->need = 14;
            continue;
        }
        const uint8_t *hd = sc->hd;
        if (hd[3] == NGHTTP2_HEADERS && (u31(hd + 5) & 1) && u31(hd + 5) > h->max_sid)
            h->max_sid = u31(hd + 5);
        else if (wants_check(h, hd) && !ct_h2_conn_failing(h))
            check(h, hd);
        sc->skip = frame_len(hd) - (uint32_t)(sc->have - 9);
        rv = feed(h, sc->hd, sc->have);
        sc->have = sc->need = 0;
        if (rv != 0)
            return rv;
    }
    return feed(h, run, (size_t)(end - run));
}
