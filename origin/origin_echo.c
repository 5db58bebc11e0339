/*
 * origin/origin_echo.c: the introspection endpoints.
 *
 *   /echo                the request as received, as JSON: method, target,
 *                        version, every header in order (duplicates kept, names
 *                        as sent) and the body (Content-Length or chunked,
 *                        de-chunked; up to 4 MiB, else 413)
 *   GET /_origin/stats   {"total": N, "paths": {"/json": N, ...}}
 *   POST /_origin/stats/reset
 *
 * Requests under /_origin/ are not counted and ignore the query's controls.
 */
#include "origin/origin_int.h"

void ct_ohandle_echo(struct ct_oconn *c)
{
    const struct ct_http_msg *m = c->msg;
    struct ct_buf *b = &c->body;
    ct_buf_reset(b);
    CT_BUF_LIT(b, "{\"method\": ");
    ct_buf_json_str(b, m->method_name, CT_JSON_BYTES);
    CT_BUF_LIT(b, ", \"target\": ");
    ct_buf_json_str(b, m->target, CT_JSON_BYTES);
    CT_BUF_LIT(b, ", \"version\": ");
    ct_buf_json_str(b, m->version == 10 ? CT_STR("HTTP/1.0") : CT_STR("HTTP/1.1"), CT_JSON_BYTES);
    CT_BUF_LIT(b, ", \"headers\": [");
    for (size_t i = 0; i < m->nfields; i++) {
        if (i)
            CT_BUF_LIT(b, ", ");
        CT_BUF_LIT(b, "[");
        ct_buf_json_str(b, m->fields[i].name, CT_JSON_BYTES);
        CT_BUF_LIT(b, ", ");
        ct_buf_json_str(b, m->fields[i].value, CT_JSON_BYTES);
        CT_BUF_LIT(b, "]");
    }
    CT_BUF_LIT(b, "], \"body\": ");
    ct_buf_json_str(b, ct_str_make(c->reqbody.p, c->reqbody.len), CT_JSON_BYTES);
    CT_BUF_LIT(b, "}\n");
    ct_oresp_copy_body(c, 200, "application/json");
    c->resp.controls = true;
    /* An echo describes one request: a cache in front must not answer the
     * next one with it, or a test reading it would read an old request.
     * A query's cache-control= still says otherwise. */
    if (c->prm.cache_control.len == 0)
        c->prm.cache_control = CT_STR("no-store");
}

void ct_ohandle_stats(struct ct_oconn *c)
{
    if (c->msg->method != CT_METHOD_GET && c->msg->method != CT_METHOD_HEAD) {
        ct_oresp_error(c, 405, "GET /_origin/stats");
        c->resp.allow = "GET, HEAD";
        return;
    }
    struct ct_origin *o = c->w->o;
    struct ct_ostats *tables[256];
    size_t n = CT_MIN(o->n_workers, CT_ARRAY_LEN(tables));
    for (size_t i = 0; i < n; i++)
        tables[i] = o->workers[i]->stats;
    ct_buf_reset(&c->body);
    ct_ostats_json(tables, n, &c->body);
    ct_oresp_copy_body(c, 200, "application/json");
}

void ct_ohandle_stats_reset(struct ct_oconn *c)
{
    if (c->msg->method != CT_METHOD_POST) {
        ct_oresp_error(c, 405, "POST /_origin/stats/reset");
        c->resp.allow = "POST";
        return;
    }
    struct ct_origin *o = c->w->o;
    for (unsigned i = 0; i < o->n_workers; i++)
        ct_ostats_reset(o->workers[i]->stats);
    ct_buf_reset(&c->body);
    CT_BUF_LIT(&c->body, "{\"reset\": true}\n");
    ct_oresp_copy_body(c, 200, "application/json");
}
