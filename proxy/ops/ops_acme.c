/*
 * proxy/ops/ops_acme.c: the ACME client (proxy/acme/acme.h) in the
 * process: started with the admin's other main-thread duties, its new
 * certificates installed into the TLS context of every HTTPS listener that
 * serves the name (the current generation's, so a reload in between is
 * covered: a context built by a reload also reads the storage), and its
 * state shown in /stats ("acme"), /metrics (cachet_acme_*) and /certs
 * (`cachet ctl certs`).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "proxy/acme/acme.h"
#include "proxy/ctx.h"
#include "proxy/ops/ops_int.h"
#include "tls/tls.h"

#define MAX_LISTENERS 256

static void install(void *arg, const char *name, const char *cert_pem, size_t cert_len,
                    const char *key_pem, size_t key_len)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    const struct ct_listener_conf *lcs[MAX_LISTENERS];
    size_t n = ct_reload_listeners(ops, lcs, MAX_LISTENERS), done = 0;
    for (size_t i = 0; i < n; i++) {
        if (lcs[i]->tls == NULL || !ct_tls_ctx_has_acme(lcs[i]->tls, name))
            continue;
        char err[256];
        if (ct_tls_ctx_acme_install(lcs[i]->tls, name, cert_pem, cert_len, key_pem, key_len, err,
                                    sizeof(err)) == CT_OK)
            done++;
        else
            CT_ERR("acme %s: cannot install the new certificate on %s: %s", name, lcs[i]->name,
                   err);
    }
    CT_INFO("acme %s: new certificate in use for new handshakes on %zu listener%s", name, done,
            done == 1 ? "" : "s");
}

void ct_ops_acme_start(struct ct_ops *ops)
{
    struct ct_proxy *px = ops->px;
    if (px->acme_chal != NULL)
        ops->acme = ct_acme_new(px->main_base, px->cf, px->acme_chal, install, ops);
}

void ct_ops_acme_reloaded(struct ct_ops *ops)
{
    if (ops->acme)
        ct_acme_update(ops->acme, ops->px->cf);
    else
        ct_ops_acme_start(ops);
}

void ct_ops_acme_stop(struct ct_ops *ops)
{
    ct_acme_free(&ops->acme);
}

struct render {
    struct ct_buf *out;
    bool json, first;
};

static void one_json(const struct ct_acme_info *in, void *arg)
{
    struct render *r = arg;
    struct ct_buf *o = r->out;
    ct_buf_printf(o, "%s\n  {\"name\":", r->first ? "" : ",");
    r->first = false;
    ct_buf_json_str(o, ct_str_c(in->name), CT_JSON_UTF8);
    ct_buf_printf(o, ",\"state\":\"%s\",\"outcome\":\"%s\",\"not_after\":%.0f,\"next\":%.0f,"
                     "\"challenge\":\"%s\",\"orders\":%llu,\"failures\":%llu,\"installs\":%llu,"
                     "\"detail\":",
                  in->state, in->outcome, in->not_after, in->next, in->challenge,
                  (unsigned long long)in->orders, (unsigned long long)in->failures,
                  (unsigned long long)in->installs);
    ct_buf_json_str(o, ct_str_c(in->detail), CT_JSON_UTF8);
    CT_BUF_LIT(o, "}");
}

void ct_ops_acme_json(const struct ct_ops *ops, struct ct_buf *out)
{
    struct render r = {out, true, true};
    CT_BUF_LIT(out, "[");
    ct_acme_each(ops->acme, one_json, &r);
    CT_BUF_LIT(out, "\n]");
}

static void when(double t, char *buf, size_t len)
{
    time_t s = (time_t)t;
    struct tm tm;
    if (t <= 0 || gmtime_r(&s, &tm) == NULL)
        snprintf(buf, len, "-");
    else
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void one_text(const struct ct_acme_info *in, void *arg)
{
    struct render *r = arg;
    char exp[32], next[32];
    when(in->not_after, exp, sizeof(exp));
    when(in->next, next, sizeof(next));
    ct_buf_printf(r->out, "%-30s %-9s %-7s %-20s %-20s %-11s %s\n", in->name, in->state,
                  in->outcome, exp, next, in->challenge[0] ? in->challenge : "-", in->detail);
}

void ct_ops_acme_text(const struct ct_ops *ops, struct ct_buf *out)
{
    struct render r = {out, false, true};
    ct_buf_printf(out, "%-30s %-9s %-7s %-20s %-20s %-11s %s\n", "NAME", "STATE", "LAST",
                  "EXPIRES", "NEXT", "CHALLENGE", "DETAIL");
    if (ct_acme_each(ops->acme, one_text, &r) == 0)
        CT_BUF_LIT(out, "(no tls.acme names)\n");
}

static void one_prom(const struct ct_acme_info *in, void *arg)
{
    struct render *r = arg;
    struct ct_buf *o = r->out;
    /* names are host names (conf/ checked them): no quote or backslash */
    ct_buf_printf(o, "cachet_acme_cert_expiry_seconds{name=\"%s\"} %.0f\n", in->name,
                  in->not_after);
    ct_buf_printf(o, "cachet_acme_next_renewal_seconds{name=\"%s\"} %.0f\n", in->name, in->next);
    ct_buf_printf(o, "cachet_acme_last_outcome{name=\"%s\",outcome=\"%s\"} 1\n", in->name,
                  in->outcome);
    ct_buf_printf(o, "cachet_acme_orders_total{name=\"%s\"} %llu\n", in->name,
                  (unsigned long long)in->orders);
    ct_buf_printf(o, "cachet_acme_failures_total{name=\"%s\"} %llu\n", in->name,
                  (unsigned long long)in->failures);
}

void ct_ops_acme_render(const struct ct_ops *ops, bool json, struct ct_buf *out)
{
    if (ops->acme == NULL)
        return;
    if (json) {
        /* /stats is one object: its closing brace gives way to "acme" */
        while (out->len && (out->p[out->len - 1] == '\n' || out->p[out->len - 1] == '}')) {
            bool brace = out->p[--out->len] == '}';
            if (brace)
                break;
        }
        CT_BUF_LIT(out, ",\"acme\":");
        ct_ops_acme_json(ops, out);
        CT_BUF_LIT(out, "}\n");
        return;
    }
    struct render r = {out, false, true};
    CT_BUF_LIT(out, "# HELP cachet_acme_cert_expiry_seconds Expiry (Unix time) of the "
                    "certificate served for the name; 0 before the first.\n"
                    "# TYPE cachet_acme_cert_expiry_seconds gauge\n"
                    "# HELP cachet_acme_next_renewal_seconds When the next order or renewal "
                    "starts (Unix time); 0 while one runs.\n"
                    "# TYPE cachet_acme_next_renewal_seconds gauge\n"
                    "# HELP cachet_acme_last_outcome The last order's outcome (none, stored, "
                    "issued, failed).\n"
                    "# TYPE cachet_acme_last_outcome gauge\n"
                    "# HELP cachet_acme_orders_total Orders placed for the name.\n"
                    "# TYPE cachet_acme_orders_total counter\n"
                    "# HELP cachet_acme_failures_total Attempts that failed for the name.\n"
                    "# TYPE cachet_acme_failures_total counter\n");
    ct_acme_each(ops->acme, one_prom, &r);
}
