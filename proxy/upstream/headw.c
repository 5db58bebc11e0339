/*
 * proxy/upstream/headw.c: the HTTP/1 head writer (headw.h).
 */
#include "proxy/upstream/headw.h"

void ct_headw_begin(struct ct_headw *w, struct evbuffer *out, size_t bound)
{
    w->out = out;
    w->p = w->end = NULL;
    w->stack = false;
    if (evbuffer_reserve_space(out, (ev_ssize_t)bound, &w->v, 1) == 1) {
        w->p = w->v.iov_base;
        w->end = w->p + w->v.iov_len;
    }
}

void ct_headw_begin_stack(struct ct_headw *w, struct evbuffer *out, char *buf, size_t cap)
{
    w->out = out;
    w->v.iov_base = buf;
    w->v.iov_len = cap;
    w->p = buf;
    w->end = buf + cap;
    w->stack = true;
}

void ct_headw_end(struct ct_headw *w)
{
    if (w->p == NULL)
        return;
    w->v.iov_len = (size_t)(w->p - (char *)w->v.iov_base);
    if (w->stack) {
        evbuffer_add(w->out, w->v.iov_base, w->v.iov_len);
    } else {
        int rc = evbuffer_commit_space(w->out, &w->v, 1);
        CT_ASSERT(rc == 0);
    }
    w->p = w->end = NULL;
}

void ct_headw_put_slow(struct ct_headw *w, const char *s, size_t n)
{
    ct_headw_end(w);
    evbuffer_add(w->out, s, n);
}

/* A head without Connection (most of them) only has the table's
 * CT_HDRF_HOP fields to drop, which is what the rule answers then. */
bool ct_headw_drop(const struct ct_http_msg *msg, bool has_conn, const struct ct_http_field *f)
{
    bool hop =
        has_conn ? ct_http_msg_field_is_hop(msg, f) : (ct_hdr_flags(f->id) & CT_HDRF_HOP) != 0;
    return hop || ct_http_field_is_proxy(f);
}

bool ct_headw_has_connection(const struct ct_http_msg *msg)
{
    return ct_http_msg_find(msg, CT_HDR_CONNECTION, NULL) != NULL;
}

void ct_headw_joined(struct ct_headw *w, const struct ct_http_msg *msg, enum ct_hdr_id id,
                     struct ct_str extra)
{
    ct_headw_str(w, ct_str_c(ct_hdr_name(id)));
    CT_HEADW_LIT(w, ": ");
    for (const struct ct_http_field *f = ct_http_msg_find(msg, id, NULL); f;
         f = ct_http_msg_find(msg, id, f)) {
        if (f->value.len == 0)
            continue;
        ct_headw_str(w, f->value);
        CT_HEADW_LIT(w, ", ");
    }
    ct_headw_str(w, extra);
    CT_HEADW_LIT(w, "\r\n");
}

void ct_headw_upgrade(struct ct_headw *w, const struct ct_http_msg *msg)
{
    CT_HEADW_LIT(w, "Connection: upgrade\r\n");
    for (const struct ct_http_field *f = ct_http_msg_find(msg, CT_HDR_UPGRADE, NULL); f;
         f = ct_http_msg_find(msg, CT_HDR_UPGRADE, f))
        ct_headw_field(w, CT_STR("Upgrade"), f->value);
}

void ct_headw_edits(struct ct_headw *w, const struct ct_fwd_edit *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ct_fwd_edit_adds(e, i, n))
            ct_headw_field(w, e[i].name, e[i].value);
}
