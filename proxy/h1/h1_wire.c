/*
 * proxy/h1/h1_wire.c: HTTP/1 towards the client: response heads from an
 * origin's message (through the head writer both directions share,
 * proxy/upstream/headw.h) and our short error answers.
 */
#include <event2/buffer.h>
#include <stdio.h>
#include <time.h>

#include "proxy/h1/h1_wire.h"
#include "proxy/upstream/headw.h"

static void add_status_line(struct ct_headw *out, unsigned status, struct ct_str reason)
{
    /* Three digits by hand: this runs once per response (no printf). */
    char line[13] = "HTTP/1.1 000 ";
    status %= 1000;
    line[9] = (char)('0' + status / 100);
    line[10] = (char)('0' + status / 10 % 10);
    line[11] = (char)('0' + status % 10);
    ct_headw_put(out, line, sizeof(line));
    if (reason.len == 0)
        reason = ct_str_c(ct_http_status_reason(status));
    ct_headw_str(out, reason);
    CT_HEADW_LIT(out, "\r\n");
}

static size_t response_head_bound(const struct ct_http_msg *msg,
                                  const struct ct_fwd_resp_extra *extra)
{
    size_t n = 2 * msg->head_bytes + (extra ? extra->cache_status.len : 0) + 160;
    for (size_t i = 0; extra && i < extra->nedits; i++)
        n += extra->edits[i].name.len + extra->edits[i].value.len + 4;
    return n;
}

static void response_head(struct ct_headw *out, const struct ct_http_msg *msg, bool chunked,
                          enum ct_h1_conn conn, const struct ct_fwd_resp_extra *extra);

void ct_h1_response_head(struct evbuffer *dst, const struct ct_http_msg *msg, bool chunked,
                          enum ct_h1_conn conn, const struct ct_fwd_resp_extra *extra)
{
    struct ct_headw hw;
    ct_headw_begin(&hw, dst, response_head_bound(msg, extra));
    response_head(&hw, msg, chunked, conn, extra);
    ct_headw_end(&hw);
}

size_t ct_h1_response_head_buf(struct evbuffer *dst, char *buf, size_t cap,
                                const struct ct_http_msg *msg, bool chunked, enum ct_h1_conn conn,
                                const struct ct_fwd_resp_extra *extra)
{
    if (response_head_bound(msg, extra) > cap) {
        ct_h1_response_head(dst, msg, chunked, conn, extra);
        return 0;
    }
    struct ct_headw hw;
    ct_headw_begin_stack(&hw, dst, buf, cap);
    response_head(&hw, msg, chunked, conn, extra);
    if (hw.p == NULL)
        return 0; /* overflowed (the bound is safe, but): all of it is in DST */
    return (size_t)(hw.p - buf);
}

static void response_head(struct ct_headw *out, const struct ct_http_msg *msg, bool chunked,
                          enum ct_h1_conn conn, const struct ct_fwd_resp_extra *extra)
{
    size_t cs_len = extra ? extra->cache_status.len : 0;
    bool has_conn = ct_headw_has_connection(msg);
    add_status_line(out, msg->status, msg->reason);
    for (size_t i = 0; i < msg->nfields; i++) {
        const struct ct_http_field *f = &msg->fields[i];
        if (f->id == CT_HDR_VIA || ct_headw_drop(msg, has_conn, f) ||
            (extra && extra->omit && extra->omit(f, extra->omit_arg)) ||
            (extra && extra->nedits && ct_fwd_edited(extra->edits, 0, extra->nedits, f->name)))
            continue;
        ct_headw_field(out, f->name, f->value);
    }
    if (extra)
        ct_headw_edits(out, extra->edits, extra->nedits);
    ct_headw_joined(out, msg, CT_HDR_VIA, CT_STR(CT_VIA_US));
    if (cs_len)
        ct_headw_field(out, CT_STR("Cache-Status"), extra->cache_status);
    if (chunked)
        CT_HEADW_LIT(out, "Transfer-Encoding: chunked\r\n");
    switch (conn) {
    case CT_H1_CONN_KEEP:
    case CT_H1_CONN_INTERIM:
        break;
    case CT_H1_CONN_KEEP_ALIVE_10:
        CT_HEADW_LIT(out, "Connection: keep-alive\r\n");
        break;
    case CT_H1_CONN_CLOSE:
        CT_HEADW_LIT(out, "Connection: close\r\n");
        break;
    case CT_H1_CONN_UPGRADE:
        ct_headw_upgrade(out, msg);
        break;
    }
    CT_HEADW_LIT(out, "\r\n");
}

void ct_h1_error(struct evbuffer *out, unsigned status, bool head_only, bool close,
                 const char *cache_status)
{
    char date[CT_HTTP_DATE_LEN + 1];
    char body[96];
    const char *reason = ct_http_status_reason(status);
    int blen = snprintf(body, sizeof(body), "%u %s\n", status, reason);

    ct_http_date_format(time(NULL), date);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %u %s\r\nServer: cachet\r\nDate: %s\r\n"
                        "Content-Type: text/plain\r\nContent-Length: %d\r\n%s%s%s%s\r\n",
                        status, reason, date, blen, cache_status ? "Cache-Status: " : "",
                        cache_status ? cache_status : "", cache_status ? "\r\n" : "",
                        close ? "Connection: close\r\n" : "");
    if (!head_only)
        evbuffer_add(out, body, (size_t)blen);
}

