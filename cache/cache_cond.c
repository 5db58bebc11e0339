/*
 * cache/cache_cond.c: validators and conditional requests.
 *
 *  - answering a client's If-None-Match / If-Modified-Since from a stored
 *    response (RFC 9110 §13.1.1-13.1.3, §13.2.2; RFC 9111 §4.3.2);
 *  - the conditional fields for revalidating a stale object (RFC 9111 §4.3.1);
 *  - which stored response a 304 updates, and the update itself (§4.3.4, §3.2).
 *
 * The stored response is described by struct ct_cache_validators (views), so
 * the store need not keep a parsed message; the 304 is a parsed message.
 */
#include <stdlib.h>

#include "cache/cache_policy.h"

void ct_cache_validators_from_msg(const struct ct_http_msg *resp, ct_time_t response_time,
                                  struct ct_cache_validators *v)
{
    const struct ct_http_field *f;
    f = ct_http_msg_find(resp, CT_HDR_ETAG, NULL);
    v->etag = f ? f->value : CT_STR_NULL;
    f = ct_http_msg_find(resp, CT_HDR_LAST_MODIFIED, NULL);
    v->last_modified = f ? f->value : CT_STR_NULL;
    f = ct_http_msg_find(resp, CT_HDR_DATE, NULL);
    v->date = f ? f->value : CT_STR_NULL;
    v->response_time = response_time;
}

/* entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE
 * etagc      = %x21 / %x23-7E / obs-text          (RFC 9110 §8.8.3) */
static bool etag_parse(struct ct_str s, bool *weak, struct ct_str *opaque)
{
    *weak = s.len >= 2 && s.p[0] == 'W' && s.p[1] == '/';
    if (*weak) {
        s.p += 2;
        s.len -= 2;
    }
    if (s.len < 2 || s.p[0] != '"' || s.p[s.len - 1] != '"')
        return false;
    for (size_t i = 1; i < s.len - 1; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (!(c == 0x21 || (c >= 0x23 && c != 0x7f)))
            return false;
    }
    *opaque = ct_str_make(s.p + 1, s.len - 2);
    return true;
}

bool ct_cache_etag_match(struct ct_str a, struct ct_str b, bool weak)
{
    bool wa, wb;
    struct ct_str oa, ob;
    if (!a.p || !b.p || !etag_parse(a, &wa, &oa) || !etag_parse(b, &wb, &ob))
        return false;
    if (!weak && (wa || wb))
        return false; /* §8.8.3.2: strong comparison needs two strong tags */
    return ct_str_eq(oa, ob);
}

/* If-None-Match (§13.1.2). Returns 1 if it is present and matches ("*", or a
 * listed tag equal to ETAG by weak comparison), 0 if present without a match,
 * -1 if absent. */
static int if_none_match(const struct ct_http_msg *req, struct ct_str etag)
{
    int rc = -1;
    for (const struct ct_http_field *f = NULL;
         (f = ct_http_msg_find(req, CT_HDR_IF_NONE_MATCH, f));) {
        struct ct_str rest = f->value, e;
        rc = rc < 0 ? 0 : rc;
        while (ct_http_list_next(&rest, &e)) {
            /* "*": a current representation exists, we hold it */
            if (ct_str_eq(e, CT_STR("*")) || ct_cache_etag_match(e, etag, true))
                return 1;
        }
    }
    return rc;
}

/* The stored response's modification time for If-Modified-Since (RFC 9111
 * §4.3.2): Last-Modified, else Date, else when it was received. False if the
 * field that should give it is unusable. */
static bool stored_mtime(const struct ct_cache_validators *v, time_t *t)
{
    time_t now = (time_t)v->response_time;
    if (v->last_modified.p)
        return ct_http_date_parse_at(v->last_modified, now, t) == CT_OK;
    if (v->date.p && ct_http_date_parse_at(v->date, now, t) == CT_OK)
        return true;
    *t = now;
    return true;
}

unsigned ct_cache_policy_cond(const struct ct_http_msg *req, const struct ct_cache_validators *v)
{
    /* a stored response answers GET and HEAD only; other methods' conditions
     * are for the origin (RFC 9111 §4.3.2) */
    if (req->method != CT_METHOD_GET && req->method != CT_METHOD_HEAD)
        return 0;
    int inm = if_none_match(req, v->etag);
    if (inm >= 0) /* §13.2.2 step 3: If-None-Match wins; IMS is then ignored */
        return inm ? 304 : 0;
    /* §13.1.3: ignored unless exactly one valid HTTP-date */
    const struct ct_http_field *ims = ct_http_msg_find(req, CT_HDR_IF_MODIFIED_SINCE, NULL);
    time_t since, mtime;
    if (!ims || ct_http_msg_find(req, CT_HDR_IF_MODIFIED_SINCE, ims) ||
        ct_http_date_parse_at(ims->value, (time_t)v->response_time, &since) != CT_OK)
        return 0;
    if (!stored_mtime(v, &mtime))
        return 0;
    return mtime <= since ? 304 : 0;
}

size_t ct_cache_policy_revalidate_hdrs(const struct ct_cache_validators *v,
                                       struct ct_http_field out[2])
{
    size_t n = 0;
    bool weak;
    struct ct_str opaque;
    /* §4.3.1: MUST send the entity tag; we also send Last-Modified, as nginx
     * does, for origins that only understand dates (INM wins at the origin) */
    if (v->etag.p && etag_parse(v->etag, &weak, &opaque))
        out[n++] = (struct ct_http_field){CT_STR("If-None-Match"), v->etag, CT_HDR_IF_NONE_MATCH};
    if (v->last_modified.p)
        out[n++] = (struct ct_http_field){CT_STR("If-Modified-Since"), v->last_modified,
                                          CT_HDR_IF_MODIFIED_SINCE};
    return n;
}

static bool same_date(struct ct_str a, struct ct_str b, time_t now)
{
    time_t ta, tb;
    if (ct_http_date_parse_at(a, now, &ta) == CT_OK && ct_http_date_parse_at(b, now, &tb) == CT_OK)
        return ta == tb;
    return ct_str_eq(a, b);
}

bool ct_cache_policy_304_selects(const struct ct_cache_validators *v,
                                 const struct ct_http_msg *resp304)
{
    const struct ct_http_field *et = ct_http_msg_find(resp304, CT_HDR_ETAG, NULL);
    const struct ct_http_field *lm = ct_http_msg_find(resp304, CT_HDR_LAST_MODIFIED, NULL);
    bool weak;
    struct ct_str opaque;
    if (et && etag_parse(et->value, &weak, &opaque)) {
        /* a strong validator selects by strong comparison, a weak one weakly */
        return ct_cache_etag_match(et->value, v->etag, weak);
    }
    if (lm)
        return v->last_modified.p &&
               same_date(lm->value, v->last_modified, (time_t)v->response_time);
    if (et)
        return false; /* an unusable ETag selects nothing */
    return !v->etag.p && !v->last_modified.p;
}

/* Fields a 304 must not change: they describe the stored body (§3.2). */
static bool describes_body(enum ct_hdr_id id)
{
    return id == CT_HDR_CONTENT_LENGTH || id == CT_HDR_CONTENT_ENCODING ||
           id == CT_HDR_TRANSFER_ENCODING || id == CT_HDR_CONTENT_RANGE;
}

static bool updates(const struct ct_http_msg *resp304, const struct ct_http_field *f,
                    const struct ct_cache_policy_opts *opts)
{
    return !describes_body(f->id) && ct_cache_policy_field_storable(resp304, f, opts);
}

/* Does the 304 carry an updating line named NAME? */
static bool in_304(const struct ct_http_msg *resp304, const struct ct_cache_policy_opts *opts,
                   struct ct_str name)
{
    for (size_t i = 0; i < resp304->nfields; i++)
        if (ct_str_eq_ci(resp304->fields[i].name, name) &&
            updates(resp304, &resp304->fields[i], opts))
            return true;
    return false;
}

static bool seen_before(const struct ct_http_field *stored, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (ct_str_eq_ci(stored[j].name, stored[i].name))
            return true;
    return false;
}

size_t ct_cache_policy_merge_304(const struct ct_http_field *stored, size_t n,
                                 const struct ct_http_msg *resp304,
                                 const struct ct_cache_policy_opts *opts,
                                 struct ct_http_field **out)
{
    struct ct_http_field *o = ct_xmalloc((n + resp304->nfields + 1) * sizeof(*o));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in_304(resp304, opts, stored[i].name)) {
            /* Age and Date describe the old exchange: the freshened response's
             * age comes from the 304 alone (§4.2.3), and a 304 without Date
             * was received now (RFC 9110 §6.6.1), which a missing Date means */
            if (stored[i].id != CT_HDR_AGE && stored[i].id != CT_HDR_DATE)
                o[k++] = stored[i];
            continue;
        }
        if (seen_before(stored, i))
            continue; /* replaced already, at the first line's position */
        for (size_t j = 0; j < resp304->nfields; j++) {
            const struct ct_http_field *g = &resp304->fields[j];
            if (ct_str_eq_ci(g->name, stored[i].name) && updates(resp304, g, opts))
                o[k++] = *g;
        }
    }
    /* names the stored response did not have, in the 304's order */
    for (size_t j = 0; j < resp304->nfields; j++) {
        const struct ct_http_field *g = &resp304->fields[j];
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = ct_str_eq_ci(stored[i].name, g->name);
        if (!known && updates(resp304, g, opts))
            o[k++] = *g;
    }
    *out = o;
    return k;
}
