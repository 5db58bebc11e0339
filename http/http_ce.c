/*
 * http/http_ce.c: the response side of content codings for a cache: which
 * responses to compress, and the head of a response whose coding the cache
 * changed (http_ae.h has the rules).
 *
 * The decision looks at the response alone (plus the request's method and
 * the caller's verdict on the type), so the fill can take it on the head,
 * before any body byte: a coding chosen then applies to the whole stream.
 */
#include <stdio.h>
#include <stdlib.h>

#include "http/http.h"
#include "http/http_ae.h"

static const char *const skip_names[CT_CE__COUNT] = {
#define CT_CE_SKIP_NAME(id, text) text,
    CT_CE_SKIP_TABLE(CT_CE_SKIP_NAME)
#undef CT_CE_SKIP_NAME
};

const char *ct_ce_skip_name(enum ct_ce_skip s)
{
    return (unsigned)s < CT_CE__COUNT ? skip_names[s] : "?";
}

enum ct_ce_skip ct_ce_should_encode(const struct ct_http_msg *resp, int method, bool type_ok,
                                    uint64_t min_size)
{
    if (method != CT_METHOD_GET)
        return CT_CE_METHOD;
    /* the statuses stored with a body that are worth it; never 206 (a part
     * of the origin's representation) or 304 (no body) */
    switch (resp->status) {
    case 200:
    case 203:
    case 404:
    case 410: break;
    default: return CT_CE_STATUS;
    }
    if (ct_coding_of_msg(resp) != CT_CODING_IDENTITY)
        return CT_CE_ENCODED;
    struct ct_cc cc;
    ct_cc_init(&cc);
    ct_cc_from_msg(&cc, resp, CT_HDR_CACHE_CONTROL);
    if (cc.flags & CT_CC_NO_TRANSFORM)
        return CT_CE_NO_TRANSFORM;
    if (!type_ok || ct_http_msg_find(resp, CT_HDR_CONTENT_TYPE, NULL) == NULL)
        return CT_CE_TYPE;
    if (resp->framing == CT_FRAME_LENGTH && resp->content_length < min_size)
        return CT_CE_SMALL;
    if (resp->framing == CT_FRAME_NONE)
        return CT_CE_SMALL; /* no body at all */
    return CT_CE_YES;
}

/* Does a Vary line of RESP list Accept-Encoding or "*"? */
static bool varies_on_ae(const struct ct_http_msg *resp)
{
    for (const struct ct_http_field *f = ct_http_msg_find(resp, CT_HDR_VARY, NULL); f;
         f = ct_http_msg_find(resp, CT_HDR_VARY, f))
        if (ct_http_list_has(f->value, CT_STR("accept-encoding")) ||
            ct_http_list_has(f->value, CT_STR("*")))
            return true;
    return false;
}

struct ct_ce_head *ct_ce_head_new(const struct ct_http_msg *resp, enum ct_coding to,
                                  bool changed)
{
    struct ct_ce_head *h = ct_xcalloc(1, sizeof(*h));
    h->fields = ct_xcalloc(resp->nfields + 2, sizeof(*h->fields));
    size_t n = 0;
    for (size_t i = 0; i < resp->nfields; i++) {
        const struct ct_http_field *f = &resp->fields[i];
        if (f->id == CT_HDR_CONTENT_ENCODING || (changed && f->id == CT_HDR_CONTENT_LENGTH))
            continue;
        h->fields[n] = *f;
        /* W/ + the opaque tag; a weak one stays as it is */
        if (changed && f->id == CT_HDR_ETAG && h->etag == NULL && f->value.len >= 2 &&
            f->value.p[0] == '"') {
            h->etag = ct_xmalloc(f->value.len + 3);
            memcpy(h->etag, "W/", 2);
            memcpy(h->etag + 2, f->value.p, f->value.len);
            h->etag[f->value.len + 2] = '\0';
            h->fields[n].value = ct_str_make(h->etag, f->value.len + 2);
        }
        n++;
    }
    if (to != CT_CODING_IDENTITY) {
        const char *name = ct_coding_name(to);
        CT_ASSERT(name != NULL);
        h->fields[n++] = (struct ct_http_field){CT_STR("Content-Encoding"), ct_str_c(name),
                                                CT_HDR_CONTENT_ENCODING};
    }
    if (!varies_on_ae(resp))
        h->fields[n++] = (struct ct_http_field){CT_STR("Vary"), CT_STR("Accept-Encoding"),
                                                CT_HDR_VARY};
    h->msg = *resp;
    ct_http_msg_set_fields(&h->msg, h->fields, n);
    if (changed) {
        h->msg.framing = CT_FRAME_CHUNKED;
        h->msg.content_length = 0;
    }
    return h;
}

void ct_ce_head_free(struct ct_ce_head **hp)
{
    struct ct_ce_head *h = *hp;
    if (h == NULL)
        return;
    free(h->fields);
    free(h->etag);
    CT_FREE(hp);
}
