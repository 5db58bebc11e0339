/*
 * origin/origin_req.c: requests on a connection: the parser's events turned
 * into a route, the query's knobs, a handler's answer, then a delay or an
 * immediate send. Only called while the connection is in READ (the parser is
 * not fed otherwise, so the head it returned stays valid while a delayed or
 * streamed answer is in flight).
 */
#include <event2/buffer.h>
#include <stdlib.h>

#include "common/log.h"
#include "origin/origin_int.h"

typedef void handler_fn(struct ct_oconn *c);
static handler_fn *const handlers[] = {
    [CT_OROUTE_STATIC] = ct_ohandle_static,
    [CT_OROUTE_JSON] = ct_ohandle_json,
    [CT_OROUTE_PLAINTEXT] = ct_ohandle_plaintext,
    [CT_OROUTE_GEN] = ct_ohandle_gen,
    [CT_OROUTE_ECHO] = ct_ohandle_echo,
    [CT_OROUTE_BYTES] = ct_ohandle_bytes,
    [CT_OROUTE_DELAY] = ct_ohandle_delay,
    [CT_OROUTE_BAD] = ct_ohandle_bad,
    [CT_OROUTE_STATS] = ct_ohandle_stats,
    [CT_OROUTE_STATS_RESET] = ct_ohandle_stats_reset,
};

static void on_head(struct ct_oconn *c)
{
    c->msg = ct_http_parser_msg(c->parser);
    ct_buf_reset(&c->reqbody);
    c->reqbody_over = false;
    if (ct_otarget_split(c->msg->target, &c->path, &c->query) == CT_OK) {
        c->route = ct_oroute_match(c->path, &c->rest);
    } else {
        c->path = CT_STR_NULL;
        c->route = CT_OROUTE_STATIC;
    }
    /* RFC 9110 §10.1.1: tell the client to go ahead with the body. */
    if (c->msg->expect_continue && c->msg->version >= 11 && c->msg->framing != CT_FRAME_NONE)
        evbuffer_add(c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

static void on_body(struct ct_oconn *c, struct ct_str chunk)
{
    if (c->route != CT_OROUTE_ECHO || c->reqbody_over)
        return; /* other endpoints read and discard the body */
    if (c->reqbody.len + chunk.len > CT_ECHO_MAX_BODY)
        c->reqbody_over = true;
    else
        ct_buf_put_str(&c->reqbody, chunk);
}

static bool parse_query(struct ct_oconn *c)
{
    char err[160];
    memset(&c->prm, 0, sizeof(c->prm));
    c->prm.trickle_size = 1024;
    if (c->query.len == 0)
        return true;
    size_t need = ct_oparams_scratch_len(c->query.len);
    if (need > c->scratch_cap) {
        c->scratch = ct_xrealloc(c->scratch, need);
        c->scratch_cap = need;
    }
    time_t now = (time_t)ct_time_real();
    if (ct_oparams_parse(c->query, c->scratch, now, &c->prm, err, sizeof(err)) == CT_OK)
        return true;
    memset(&c->prm, 0, sizeof(c->prm));
    ct_oresp_error(c, 400, err);
    return false;
}

static void dispatch(struct ct_oconn *c)
{
    const struct ct_http_msg *m = c->msg;
    struct ct_origin *o = c->w->o;
    c->nreq++;
    c->version = m->version;
    c->head_only = m->method == CT_METHOD_HEAD;
    c->keep_alive = m->keep_alive && !c->peer_eof;
    ct_oresp_cleanup(c);
    ct_oresp_init(&c->resp);
    memset(&c->prm, 0, sizeof(c->prm));
    bool internal = c->path.p && ct_oroute_is_internal(c->path);
    if (!c->path.p) {
        ct_oresp_error(c, 400, "request target must be origin-form or absolute-form");
    } else {
        if (!internal)
            ct_ostats_count(c->w->stats, c->path);
        if (internal || parse_query(c)) {
            if (c->reqbody_over)
                ct_oresp_error(c, 413, "echo body over 4 MiB");
            else
                handlers[c->route](c);
        }
    }
    ct_oresp_prepare(c);
    unsigned delay = c->prm.has_delay ? c->prm.delay_ms : internal ? 0 : o->opts.delay_ms;
    if (delay) {
        ct_oconn_set_state(c, CT_OCS_DELAY);
        ct_oconn_arm_timer(c, delay);
        return;
    }
    ct_oresp_send(c);
}

/* The parser refused the request: answer its status and close (we cannot
 * know where the next request would start). */
static void bad_request(struct ct_oconn *c)
{
    unsigned status = ct_http_parser_error_status(c->parser);
    CT_DEBUG("w%u c%llu %s: bad request: %u %s", c->w->id, (unsigned long long)c->id, c->peer,
             status, ct_http_parser_error_reason(c->parser));
    c->msg = NULL;
    c->version = 11;
    c->head_only = false;
    c->keep_alive = false;
    memset(&c->prm, 0, sizeof(c->prm));
    ct_oresp_error(c, status >= 400 ? status : 400, ct_http_parser_error_reason(c->parser));
    c->resp.close = true;
    ct_oresp_send(c);
}

/* Parse P[0..LEN) while the connection is in READ; returns the bytes
 * consumed (less than LEN when a request left READ: the rest waits in the
 * connection's input buffer). After HEAD or BODY the parser may hold more
 * events for bytes it already consumed (the END of a bodiless request comes
 * from the next feed), so it is fed again, with zero bytes if need be, until
 * it asks for more. BODY chunks point into P and are copied at once. */
size_t ct_oreq_feed(struct ct_oconn *c, const char *p, size_t len)
{
    size_t off = 0;
    while (c->state == CT_OCS_READ && (off < len || c->parser_pending)) {
        size_t used = 0;
        struct ct_str chunk = CT_STR_NULL;
        enum ct_http_ev ev = ct_http_parser_feed(c->parser, p + off, len - off, &used, &chunk);
        off += used;
        c->parser_pending = ev == CT_HTTP_EV_HEAD || ev == CT_HTTP_EV_BODY;
        switch (ev) {
        case CT_HTTP_EV_MORE:
            CT_ASSERT(off == len);
            break;
        case CT_HTTP_EV_HEAD:
            on_head(c);
            break;
        case CT_HTTP_EV_BODY:
            on_body(c, chunk);
            break;
        case CT_HTTP_EV_END:
            dispatch(c);
            break;
        case CT_HTTP_EV_ERROR:
            bad_request(c);
            break;
        }
    }
    return off;
}
