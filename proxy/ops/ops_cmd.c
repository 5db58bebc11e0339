/*
 * proxy/ops/ops_cmd.c: the admin commands that change a running cachet
 * without a file (proxy/ops/ops_int.h): POST /reload and POST /backend,
 * behind `cachet ctl reload` and `cachet ctl backend NAME drain|enable`.
 * Main thread (the admin listener's loop), like SIGHUP's reload.
 *
 * /reload runs the same ct_ops_reload() as SIGHUP and tells its outcome:
 * the reload counts it as ok or failed in ops->reload, and every warning
 * or error it logs on this thread is captured (ct_log_capture) to be the
 * answer's reasons, so the operator reads at the prompt what the error
 * log says.
 *
 * /backend sets the backend's drain flag, which every worker reads when it
 * picks a backend (proxy/upstream/upstream.c in_rotation): nothing new is
 * sent to it, and what it is serving finishes on its connection.
 */
#include <stdatomic.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "proxy/ctx.h"
#include "proxy/ops/ops_int.h"

/* Append LINES ("a\nb\n") to B as a JSON array of strings. */
static void json_lines(struct ct_buf *b, const struct ct_buf *lines)
{
    CT_BUF_LIT(b, "[");
    const char *p = lines->p, *end = lines->p ? lines->p + lines->len : NULL;
    bool first = true;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (!first)
            CT_BUF_LIT(b, ",");
        ct_buf_json_str(b, ct_str_make(p, n), CT_JSON_UTF8);
        first = false;
        p += n + 1;
    }
    CT_BUF_LIT(b, "]");
}

unsigned ct_ops_reload_cmd(struct ct_ops *ops, struct ct_stats_out *body)
{
    struct ct_stats_reload before = ops->reload;
    struct ct_buf said = {0};
    ct_log_capture(&said, CT_LOG_WARN);
    CT_INFO("admin: reload requested (cachet ctl reload)");
    ct_ops_reload(ops);
    ct_log_capture(NULL, CT_LOG_WARN);
    unsigned status;
    if (ops->reload.ok > before.ok) {
        status = 200;
        ct_buf_printf(body, "{\"result\":\"applied\",\"configuration\":%u,\"warnings\":",
                      ops->reload.generation);
        json_lines(body, &said);
        CT_BUF_LIT(body, "}\n");
    } else {
        /* refused, or ignored: the previous reload still being applied */
        status = ops->reload.failed > before.failed ? 422 : 409;
        CT_BUF_LIT(body, "{\"result\":\"refused\",\"error\":");
        struct ct_buf why = {0}; /* "refused: A; B" from the lines "A\nB\n" */
        CT_BUF_LIT(&why, "refused: ");
        for (size_t i = 0; i < said.len; i++) {
            if (said.p[i] != '\n')
                ct_buf_put_byte(&why, said.p[i]);
            else if (i + 1 < said.len)
                CT_BUF_LIT(&why, "; ");
        }
        ct_buf_json_str(body, ct_str_make(why.p, why.len), CT_JSON_UTF8);
        CT_BUF_LIT(body, ",\"errors\":");
        json_lines(body, &said);
        CT_BUF_LIT(body, "}\n");
        ct_buf_free(&why);
    }
    ct_buf_free(&said);
    return status;
}

/* The backend NAME of the running set (its name, else "host:port"), or -1. */
static long find_backend(const struct ct_proxy *px, struct ct_str name)
{
    for (size_t i = 0; i < px->nbackends; i++) {
        const struct ct_conf_backend *b = &px->cf->flat_backends[i];
        const char *n = b->name ? b->name : px->backends[i].name;
        if (ct_str_eq(name, ct_str_c(n)))
            return (long)i;
    }
    return -1;
}

static void json_error(struct ct_stats_out *body, const char *fmt, struct ct_str arg)
{
    char msg[512];
    int n = snprintf(msg, sizeof(msg), fmt, (int)CT_MIN(arg.len, 200), arg.p);
    CT_BUF_LIT(body, "{\"error\":");
    ct_buf_json_str(body, ct_str_make(msg, (size_t)CT_MAX(n, 0)), CT_JSON_UTF8);
    CT_BUF_LIT(body, "}\n");
}

unsigned ct_ops_backend_cmd(struct ct_ops *ops, struct ct_str query, struct ct_stats_out *body)
{
    struct ct_proxy *px = ops->px;
    char nbuf[256], sbuf[16];
    struct ct_str name, state;
    if (!ct_ops_query_param(query, "name", nbuf, sizeof(nbuf), &name) || name.len == 0) {
        json_error(body, "expected name=BACKEND%.*s", CT_STR(""));
        return 400;
    }
    bool drain = ct_ops_query_param(query, "state", sbuf, sizeof(sbuf), &state) &&
                 ct_str_eq(state, CT_STR("drain"));
    if (!drain && !ct_str_eq(state, CT_STR("enable"))) {
        json_error(body, "expected state=drain or state=enable, got \"%.*s\"", state);
        return 400;
    }
    long i = find_backend(px, name);
    if (i < 0) {
        json_error(body, "no backend named \"%.*s\" in the running configuration", name);
        return 404;
    }
    struct ct_backend_addr *a = &px->backends[i];
    bool was = atomic_exchange(&a->drain, drain);
    if (was != drain)
        CT_INFO("admin: backend %.*s %s", (int)name.len, name.p,
                drain ? "drained: no new requests, those in flight finish"
                      : "enabled: back in rotation");
    ct_buf_printf(body, "{\"backend\":");
    ct_buf_json_str(body, name, CT_JSON_UTF8);
    ct_buf_printf(body, ",\"state\":\"%s\",\"changed\":%s}\n", drain ? "drain" : "enabled",
                  was != drain ? "true" : "false");
    return 200;
}
