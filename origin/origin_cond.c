/*
 * origin/origin_cond.c: conditional requests (RFC 9110 §13) and byte ranges
 * (RFC 9110 §14) for static files and generated responses alike. Pure: reads
 * a parsed request head and the validators of what would be sent.
 */
#include "origin/origin_int.h"

static struct ct_str opaque(struct ct_str tag, bool *weak)
{
    *weak = tag.len >= 2 && tag.p[0] == 'W' && tag.p[1] == '/';
    if (*weak)
        tag = ct_str_make(tag.p + 2, tag.len - 2);
    return tag;
}

bool ct_oetag_match(struct ct_str a, struct ct_str b, bool strong)
{
    bool wa, wb;
    a = opaque(a, &wa);
    b = opaque(b, &wb);
    if (strong && (wa || wb))
        return false;
    /* An opaque-tag is a quoted string; compare it byte for byte. */
    return a.len >= 2 && a.p[0] == '"' && ct_str_eq(a, b);
}

/* Does any element of any line of header ID match V's entity-tag? */
static bool any_tag_matches(const struct ct_http_msg *msg, enum ct_hdr_id id,
                            const struct ct_ovalidators *v, bool strong)
{
    for (const struct ct_http_field *f = ct_http_msg_find(msg, id, NULL); f;
         f = ct_http_msg_find(msg, id, f)) {
        struct ct_str rest = f->value, elem;
        while (ct_http_list_next(&rest, &elem)) {
            /* "*" matches any current representation, and ours exists. */
            if (ct_str_eq(elem, CT_STR("*")))
                return true;
            if (v->etag.len && ct_oetag_match(elem, v->etag, strong))
                return true;
        }
    }
    return false;
}

static bool date_field(const struct ct_http_msg *msg, enum ct_hdr_id id, time_t *t)
{
    const struct ct_http_field *f = ct_http_msg_find(msg, id, NULL);
    return f && ct_http_date_parse(f->value, t) == CT_OK;
}

enum ct_ocond ct_ocond_eval(const struct ct_http_msg *msg, const struct ct_ovalidators *v)
{
    bool get_head = msg->method == CT_METHOD_GET || msg->method == CT_METHOD_HEAD;
    time_t t;

    /* §13.2.2 step 1-2: preconditions that fail with 412. */
    if (ct_http_msg_find(msg, CT_HDR_IF_MATCH, NULL)) {
        if (!any_tag_matches(msg, CT_HDR_IF_MATCH, v, true))
            return CT_OCOND_FAILED;
    } else if (v->has_mtime && date_field(msg, CT_HDR_IF_UNMODIFIED_SINCE, &t)) {
        if (v->mtime > t)
            return CT_OCOND_FAILED;
    }
    /* Step 3: If-None-Match wins over If-Modified-Since. */
    if (ct_http_msg_find(msg, CT_HDR_IF_NONE_MATCH, NULL)) {
        if (any_tag_matches(msg, CT_HDR_IF_NONE_MATCH, v, false))
            return get_head ? CT_OCOND_NOT_MODIFIED : CT_OCOND_FAILED;
        return CT_OCOND_PASS;
    }
    /* Step 4. */
    if (get_head && v->has_mtime && date_field(msg, CT_HDR_IF_MODIFIED_SINCE, &t)) {
        if (v->mtime <= t)
            return CT_OCOND_NOT_MODIFIED;
    }
    return CT_OCOND_PASS;
}

bool ct_oif_range_ok(const struct ct_http_msg *msg, const struct ct_ovalidators *v)
{
    const struct ct_http_field *f = ct_http_msg_find(msg, CT_HDR_IF_RANGE, NULL);
    if (!f)
        return true;
    struct ct_str val = f->value;
    if (val.len && (val.p[0] == '"' || (val.len > 1 && val.p[0] == 'W' && val.p[1] == '/')))
        return v->etag.len && ct_oetag_match(val, v->etag, true);
    time_t t;
    /* §13.1.5: a date matches only an exactly equal Last-Modified. */
    return v->has_mtime && ct_http_date_parse(val, &t) == CT_OK && t == v->mtime;
}

/* One range-spec; returns CT_EPROTO on a syntax error, else CT_OK with
 * *SAT telling whether it is satisfiable and [*first, *last] clamped. */
static int range_spec(struct ct_str s, uint64_t len, bool *sat, uint64_t *first, uint64_t *last)
{
    const char *dash = memchr(s.p, '-', s.len);
    if (!dash)
        return CT_EPROTO;
    struct ct_str a = ct_str_make(s.p, (size_t)(dash - s.p));
    struct ct_str b = ct_str_make(dash + 1, s.len - a.len - 1);
    uint64_t x, y;
    if (a.len == 0) { /* suffix-range: the last Y bytes */
        if (ct_str_to_u64(b, UINT64_MAX, &y) != CT_OK)
            return CT_EPROTO;
        *sat = y > 0 && len > 0;
        *first = len - CT_MIN(y, len);
        *last = len ? len - 1 : 0;
        return CT_OK;
    }
    if (ct_str_to_u64(a, UINT64_MAX, &x) != CT_OK)
        return CT_EPROTO;
    if (b.len == 0) {
        y = UINT64_MAX;
    } else if (ct_str_to_u64(b, UINT64_MAX, &y) != CT_OK || y < x) {
        return CT_EPROTO;
    }
    *sat = x < len;
    *first = x;
    *last = len ? CT_MIN(y, len - 1) : 0;
    return CT_OK;
}

enum ct_orange ct_orange_parse(struct ct_str value, uint64_t len, uint64_t *first,
                               uint64_t *last)
{
    static const struct ct_str unit = CT_STR("bytes=");
    if (value.len <= unit.len || !ct_str_eq_ci(ct_str_make(value.p, unit.len), unit))
        return CT_ORANGE_NONE;
    struct ct_str rest = ct_str_make(value.p + unit.len, value.len - unit.len), elem;
    unsigned nspec = 0, nsat = 0;
    while (ct_http_list_next(&rest, &elem)) {
        bool sat;
        uint64_t f, l;
        if (range_spec(elem, len, &sat, &f, &l) != CT_OK)
            return CT_ORANGE_NONE;
        if (sat && nsat++ == 0) {
            *first = f;
            *last = l;
        }
        nspec++;
    }
    if (nspec == 0)
        return CT_ORANGE_NONE;
    if (nsat == 0)
        return CT_ORANGE_UNSAT;
    return nspec == 1 ? CT_ORANGE_ONE : CT_ORANGE_MULTI;
}
