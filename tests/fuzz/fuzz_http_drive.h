/*
 * tests/fuzz/fuzz_http_drive.h: shared by the request and response fuzz
 * targets.
 *
 * Input layout: byte 0 = flags (bit 0: small limits; bits 1-2: the request
 * method a response answers; bit 3: a gateway's request parser, which turns
 * absolute-form into origin-form in place), byte 1 = seed of the split, the rest = bytes on
 * the wire. Each input is parsed twice: whole, and delivered in random
 * pieces (sizes drawn from the seed) the way a socket would deliver them,
 * unconsumed bytes kept in front of the next read. Both runs fold every
 * event, head field and body byte into a hash; a difference is the "any
 * split" property broken and aborts, like a crash. Every event is also
 * checked against the API contract (used <= len, MORE consumes all, body
 * pieces point into the input, views stay readable, a request's method is
 * a token and its id the table's).
 */
#ifndef CT_FUZZ_HTTP_DRIVE_H
#define CT_FUZZ_HTTP_DRIVE_H

#include "http/http.h"
#include "tests/fuzz/fuzz_check.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t fz_mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t fz_mix_str(uint64_t h, struct ct_str s)
{
    h = fz_mix(h, &s.len, sizeof(s.len));
    return fz_mix(h, s.p, s.len);
}

static uint64_t fz_head(uint64_t h, const struct ct_http_msg *m)
{
    if (m->kind == CT_HTTP_REQUEST) {
        /* any token is a method, kept as received and named by our table */
        FUZZ_CHECK(ct_http_is_token(m->method_name));
        FUZZ_CHECK(m->method == ct_http_method_lookup(m->method_name));
        FUZZ_CHECK(m->target.len > 0);
    }
    unsigned v[] = {m->kind,    m->method,     m->status,          m->version,
                    m->framing, m->keep_alive, m->expect_continue, m->upgrade};
    h = fz_mix(h, v, sizeof(v));
    h = fz_mix(h, &m->content_length, sizeof(m->content_length));
    h = fz_mix(h, &m->head_bytes, sizeof(m->head_bytes));
    h = fz_mix_str(h, m->method_name);
    h = fz_mix_str(h, m->target);
    h = fz_mix_str(h, m->reason);
    for (size_t i = 0; i < m->nfields; i++) {
        h = fz_mix_str(h, m->fields[i].name);
        h = fz_mix_str(h, m->fields[i].value);
        h = fz_mix(h, &m->fields[i].id, sizeof(m->fields[i].id));
        /* the helpers must be safe on anything the parser accepted */
        (void)ct_http_msg_field_is_hop(m, &m->fields[i]);
    }
    return h;
}

/* A piece size in 1..97 (small enough to split heads, big enough to
 * finish them). Not inside CT_MIN: that would draw twice. */
static size_t fz_step(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return 1 + (*s >> 16) % 97;
}

/* One run over IN. SEED 0: whole; otherwise random pieces. */
static uint64_t fz_run(enum ct_http_kind kind, const struct ct_http_limits *lim,
                       enum ct_http_method req_method, bool gateway, const char *in, size_t len,
                       uint32_t seed)
{
    struct ct_http_parser *p = ct_http_parser_new(kind, lim);
    ct_http_parser_set_request_method(p, req_method);
    if (kind == CT_HTTP_REQUEST)
        ct_http_parser_set_gateway(p, gateway);
    uint64_t h = 1469598103934665603ull;
    uint32_t rs = seed;
    size_t step = fz_step(&rs);
    size_t avail = seed ? CT_MIN(len, step) : len, pos = 0;
    uint64_t body = 0;
    for (unsigned guard = 0; guard < 4 * len + 64; guard++) {
        size_t used = (size_t)-1;
        struct ct_str chunk = CT_STR_NULL;
        enum ct_http_ev ev = ct_http_parser_feed(p, in + pos, avail - pos, &used, &chunk);
        FUZZ_CHECK(used <= avail - pos);
        pos += used;
        if (ev == CT_HTTP_EV_BODY) {
            FUZZ_CHECK(chunk.p >= in && chunk.p + chunk.len <= in + avail);
            FUZZ_CHECK(chunk.len > 0);
            body += chunk.len;
            /* max_body is per message: never more is handed out */
            FUZZ_CHECK(!lim || !lim->max_body || body <= lim->max_body);
            h = fz_mix(h, chunk.p, chunk.len); /* pieces may differ, bytes may not */
            continue;
        }
        if (ev != CT_HTTP_EV_MORE) /* how often input ran out depends on the split */
            h = fz_mix(h, &ev, sizeof(ev));
        if (ev == CT_HTTP_EV_HEAD) {
            FUZZ_CHECK(ct_http_parser_in_message(p));
            const struct ct_http_msg *m = ct_http_parser_msg(p);
            /* a gateway's requests are origin-form (or * or CONNECT's), with one Host */
            FUZZ_CHECK(!gateway || kind != CT_HTTP_REQUEST || m->method == CT_METHOD_CONNECT ||
                       (m->target.len > 0 && (m->target.p[0] == '/' || m->target.p[0] == '*')));
            FUZZ_CHECK(!gateway || kind != CT_HTTP_REQUEST || m->target.p[0] != '/' ||
                       m->version == 10 || ct_http_msg_find(m, CT_HDR_HOST, NULL) != NULL);
            h = fz_head(h, m);
            body = 0;
        } else if (ev == CT_HTTP_EV_END) {
            if (ct_http_parser_is_tunnel(p))
                break;
        } else if (ev == CT_HTTP_EV_ERROR) {
            unsigned st = ct_http_parser_error_status(p);
            FUZZ_CHECK(st >= 400 && st <= 505);
            FUZZ_CHECK(kind == CT_HTTP_REQUEST || st == 502);
            FUZZ_CHECK(ct_http_parser_error_reason(p)[0] != 0);
            h = fz_mix(h, &st, sizeof(st));
            break;
        } else {
            FUZZ_CHECK(ev == CT_HTTP_EV_MORE && pos == avail);
            if (avail == len) {
                enum ct_http_ev e = ct_http_parser_eof(p);
                h = fz_mix(h, &e, sizeof(e));
                break;
            }
            step = fz_step(&rs);
            avail = CT_MIN(len, avail + step);
        }
    }
    ct_http_parser_free(&p);
    return h;
}

static int fz_one_input(enum ct_http_kind kind, const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static const enum ct_http_method methods[] = {CT_METHOD_GET, CT_METHOD_HEAD, CT_METHOD_CONNECT,
                                                  CT_METHOD_POST};
    struct ct_http_limits small = {64, 256, 8, 100}, *lim = NULL;
    if (data[0] & 1)
        lim = &small;
    enum ct_http_method m = methods[(data[0] >> 1) & 3];
    bool gateway = (data[0] & 8) != 0;
    uint32_t seed = data[1] | 0x100u; /* never 0: that is the whole run */
    const char *in = (const char *)data + 2;
    size_t len = size - 2;
    uint64_t whole = fz_run(kind, lim, m, gateway, in, len, 0);
    uint64_t split = fz_run(kind, lim, m, gateway, in, len, seed);
    FUZZ_CHECK(whole == split);
    return 0;
}

#endif
