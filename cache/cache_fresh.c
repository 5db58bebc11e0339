/*
 * cache/cache_fresh.c: freshness lifetime (RFC 9111 §4.2.1, §4.2.2), age
 * (§4.2.3) and whether a stored response can answer a request (§4.2.4,
 * §5.2.1). Times come in as arguments; no clock is read here.
 *
 * The lifetime and the corrected initial age are computed once, when the
 * response arrives, into struct ct_cache_fresh; a lookup then only adds the
 * resident time (now - response_time), as the RFC's formulas allow.
 */
#include "cache/cache_policy.h"

#define DELTA_MAX ((int64_t)1 << 31)

/* The single value of header ID, or {NULL,0} when it is absent. *CONFLICT is
 * set when several lines disagree (§4.2.1: "either the first occurrence
 * should be used or the response should be considered stale"; we report it
 * and the callers take the stale reading). */
static struct ct_str single_value(const struct ct_http_msg *msg, enum ct_hdr_id id, bool *conflict)
{
    const struct ct_http_field *f = ct_http_msg_find(msg, id, NULL);
    *conflict = false;
    if (!f)
        return CT_STR_NULL;
    for (const struct ct_http_field *g = f; (g = ct_http_msg_find(msg, id, g)) != NULL;)
        if (!ct_str_eq(g->value, f->value))
            *conflict = true;
    return f->value;
}

/* A date field as time_t; false if absent, conflicting or not an HTTP-date. */
static bool date_field(const struct ct_http_msg *msg, enum ct_hdr_id id, ct_time_t now, time_t *t)
{
    bool conflict;
    struct ct_str v = single_value(msg, id, &conflict);
    return v.p && !conflict && ct_http_date_parse_at(v, (time_t)now, t) == CT_OK;
}

/* date_value of §4.2.3; a missing or invalid Date counts as the time the
 * response was received (§4.2.1: "if the Date header field is not present,
 * the response time"; RFC 9110 §6.6.1 lets a recipient add one). */
static ct_time_t date_value(const struct ct_http_msg *resp, ct_time_t response_time)
{
    time_t d;
    return date_field(resp, CT_HDR_DATE, response_time, &d) ? (ct_time_t)d : response_time;
}

/* §4.2.2: heuristic_pct of the time since Last-Modified, capped. */
static bool heuristic(const struct ct_http_msg *resp, const struct ct_cache_policy_opts *opts,
                      ct_time_t response_time, int64_t *lifetime)
{
    time_t lm;
    if (opts->heuristic_pct == 0 || !date_field(resp, CT_HDR_LAST_MODIFIED, response_time, &lm))
        return false;
    ct_time_t date = date_value(resp, response_time);
    if ((ct_time_t)lm > date)
        return false; /* modified in the future of its own Date: no basis */
    /* whole seconds, rounded down (non-negative here, so truncation is floor) */
    double h = (date - (ct_time_t)lm) * opts->heuristic_pct / 100.0;
    if (opts->heuristic_max >= 0 && h > (double)opts->heuristic_max)
        h = (double)opts->heuristic_max;
    *lifetime = (int64_t)h;
    return true;
}

/* Expires - Date (§4.2.1); *INVALID for a bad or conflicting Expires, which
 * means "already expired" (§5.3). */
static int64_t expires_lifetime(const struct ct_http_msg *resp, ct_time_t response_time,
                                bool *invalid)
{
    time_t exp;
    *invalid = !date_field(resp, CT_HDR_EXPIRES, response_time, &exp);
    if (*invalid)
        return 0;
    double l = (ct_time_t)exp - date_value(resp, response_time);
    return l > 0 ? (int64_t)CT_MIN(l, (double)INT64_MAX / 2) : 0;
}

/* The lifetime with the effective cache control CC from source SRC. */
static int64_t lifetime_cc(const struct ct_http_msg *resp, const struct ct_cache_policy_opts *opts,
                           const struct ct_cc *cc, enum ct_cache_cc_src src,
                           ct_time_t response_time, enum ct_cache_fresh_src *why, bool *invalid)
{
    int64_t l;
    *invalid = false;
    if (cc->s_maxage != CT_CC_UNSET) {
        *why = CT_CACHE_FRESH_S_MAXAGE;
        return cc->s_maxage;
    }
    if (cc->max_age != CT_CC_UNSET) {
        *why = CT_CACHE_FRESH_MAX_AGE;
        return cc->max_age;
    }
    /* RFC 9213 §2.1: a targeted field replaces Expires too */
    if (src != CT_CACHE_CC_CDN && src != CT_CACHE_CC_OPERATOR &&
        ct_http_msg_find(resp, CT_HDR_EXPIRES, NULL)) {
        *why = CT_CACHE_FRESH_EXPIRES;
        return expires_lifetime(resp, response_time, invalid);
    }
    /* §4.2.2: only without explicit expiration, and for a heuristically
     * cacheable status or a response marked public */
    if ((ct_cache_policy_status_heuristic(resp->status) || (cc->flags & CT_CC_PUBLIC)) &&
        heuristic(resp, opts, response_time, &l)) {
        *why = CT_CACHE_FRESH_HEURISTIC;
        return l;
    }
    if (opts->default_ttl >= 0) {
        *why = CT_CACHE_FRESH_DEFAULT;
        return opts->default_ttl;
    }
    *why = CT_CACHE_FRESH_NONE;
    return 0;
}

int64_t ct_cache_policy_lifetime(const struct ct_http_msg *resp,
                                 const struct ct_cache_policy_opts *opts, ct_time_t response_time,
                                 enum ct_cache_fresh_src *src)
{
    struct ct_cc cc;
    enum ct_cache_fresh_src why;
    bool invalid;
    enum ct_cache_cc_src cc_src = ct_cache_policy_resp_cc(resp, opts, &cc);
    int64_t l = lifetime_cc(resp, opts, &cc, cc_src, response_time, &why, &invalid);
    if (src)
        *src = why;
    return l;
}

/* Age (§5.1): delta-seconds. The field is a singleton, but "a cache
 * encountering a message with a list-based Age field value SHOULD use the
 * first member": so the first member of the first line counts (several lines
 * are one list, RFC 9110 §5.3), "7200, 0" is 7200 s old and "0, 7200" is new.
 * A first member that is not one non-negative integer (a sign, a fraction,
 * "1a") is invalid and, as §5.1 says, the field is then ignored. Clamped to
 * 2^31 (§1.2.2). */
static double age_value(const struct ct_http_msg *resp)
{
    const struct ct_http_field *f = ct_http_msg_find(resp, CT_HDR_AGE, NULL);
    struct ct_str rest, v;
    if (!f)
        return 0;
    rest = f->value;
    if (!ct_http_list_next(&rest, &v) || v.len == 0)
        return 0;
    int64_t a = 0;
    for (size_t i = 0; i < v.len; i++) {
        if (v.p[i] < '0' || v.p[i] > '9')
            return 0;
        if (a < DELTA_MAX)
            a = a * 10 + (v.p[i] - '0');
    }
    return (double)CT_MIN(a, DELTA_MAX);
}

double ct_cache_policy_initial_age(const struct ct_http_msg *resp, ct_time_t request_time,
                                   ct_time_t response_time)
{
    double apparent_age = CT_MAX(0.0, response_time - date_value(resp, response_time));
    double response_delay = response_time - request_time;
    double corrected_age_value = age_value(resp) + response_delay;
    return CT_MAX(apparent_age, corrected_age_value);
}

void ct_cache_policy_fresh(const struct ct_http_msg *resp, const struct ct_cache_policy_opts *opts,
                           ct_time_t request_time, ct_time_t response_time,
                           struct ct_cache_fresh *f)
{
    struct ct_cc cc;
    bool invalid;
    enum ct_cache_cc_src src = ct_cache_policy_resp_cc(resp, opts, &cc);
    f->lifetime = lifetime_cc(resp, opts, &cc, src, response_time, &f->src, &invalid);
    f->initial_age = ct_cache_policy_initial_age(resp, request_time, response_time);
    f->response_time = response_time;
    f->stale_while_revalidate = cc.stale_while_revalidate;
    f->stale_if_error = cc.stale_if_error;
    f->flags = 0;
    /* §5.2.2.10: s-maxage carries proxy-revalidate's semantics for us */
    if ((cc.flags & (CT_CC_MUST_REVALIDATE | CT_CC_PROXY_REVALIDATE)) || cc.s_maxage != CT_CC_UNSET)
        f->flags |= CT_CACHE_F_MUST_REVALIDATE;
    if (cc.flags & CT_CC_NO_CACHE)
        f->flags |= CT_CACHE_F_NO_CACHE;
    if (ct_http_msg_find(resp, CT_HDR_ETAG, NULL) ||
        ct_http_msg_find(resp, CT_HDR_LAST_MODIFIED, NULL))
        f->flags |= CT_CACHE_F_VALIDATOR;
    if (invalid || (cc.flags & CT_CC_INVALID))
        f->flags |= CT_CACHE_F_INVALID;
    if (src == CT_CACHE_CC_CDN || src == CT_CACHE_CC_OPERATOR)
        f->flags |= CT_CACHE_F_TARGETED;
    if (cc.flags & CT_CC_IMMUTABLE)
        f->flags |= CT_CACHE_F_IMMUTABLE;
}

double ct_cache_policy_age(const struct ct_cache_fresh *f, ct_time_t now)
{
    /* resident_time = now - response_time; a clock that went backwards
     * must not make an object younger than it arrived */
    return f->initial_age + CT_MAX(0.0, now - f->response_time);
}

double ct_cache_policy_ttl(const struct ct_cache_fresh *f, ct_time_t now)
{
    return (double)f->lifetime - ct_cache_policy_age(f, now);
}

/* Seconds past the lifetime, if stale and stale serving is not forbidden by
 * the response (§4.2.4); -1 otherwise. */
static double staleness(const struct ct_cache_fresh *f, ct_time_t now)
{
    double left = ct_cache_policy_ttl(f, now);
    if (left > 0 || (f->flags & (CT_CACHE_F_MUST_REVALIDATE | CT_CACHE_F_NO_CACHE)))
        return -1;
    return -left;
}

bool ct_cache_policy_swr_ok(const struct ct_cache_fresh *f, ct_time_t now)
{
    double s = staleness(f, now);
    return s >= 0 && f->stale_while_revalidate != CT_CC_UNSET &&
           s <= (double)f->stale_while_revalidate;
}

bool ct_cache_policy_sie_ok(const struct ct_cache_fresh *f, ct_time_t now)
{
    double s = staleness(f, now);
    return s >= 0 && f->stale_if_error != CT_CC_UNSET && s <= (double)f->stale_if_error;
}

/* What to do when the stored response cannot be used as it is. */
static enum ct_cache_use need_origin(const struct ct_cache_fresh *f, const struct ct_cc *rq)
{
    if (rq->flags & CT_CC_ONLY_IF_CACHED) /* §5.2.1.7 */
        return CT_CACHE_USE_GATEWAY_TIMEOUT;
    return (f->flags & CT_CACHE_F_VALIDATOR) ? CT_CACHE_USE_REVALIDATE : CT_CACHE_USE_FETCH;
}

enum ct_cache_use ct_cache_policy_use(const struct ct_cache_fresh *f, const struct ct_http_msg *req,
                                      const struct ct_cache_policy_opts *opts, ct_time_t now)
{
    struct ct_cc rq;
    ct_cache_policy_req_cc(req, opts, &rq);
    return ct_cache_policy_use_cc(f, &rq, now);
}

enum ct_cache_use ct_cache_policy_use_cc(const struct ct_cache_fresh *f, const struct ct_cc *rq,
                                         ct_time_t now)
{
    double age = ct_cache_policy_age(f, now);
    double left = (double)f->lifetime - age;
    /* no-cache either side (§5.2.1.4, §5.2.2.4): validate on every use */
    if ((rq->flags & CT_CC_NO_CACHE) || (f->flags & CT_CACHE_F_NO_CACHE))
        return need_origin(f, rq);
    if (rq->max_age != CT_CC_UNSET && age > (double)rq->max_age) /* §5.2.1.1 */
        return need_origin(f, rq);
    if (rq->min_fresh != CT_CC_UNSET && left < (double)rq->min_fresh) /* §5.2.1.3 */
        return need_origin(f, rq);
    if (left > 0) /* §4.2: fresh = freshness_lifetime > current_age */
        return CT_CACHE_USE_FRESH;
    /* stale: only with the client's max-stale (§5.2.1.2), and never against
     * must-revalidate / proxy-revalidate / s-maxage (§4.2.4, §5.2.2.2) */
    double s = staleness(f, now);
    if (s >= 0) {
        if (rq->max_stale != CT_CC_UNSET ? s <= (double)rq->max_stale
                                        : (rq->flags & CT_CC_MAX_STALE_ANY) != 0)
            return CT_CACHE_USE_STALE_OK;
    }
    return need_origin(f, rq);
}

enum ct_cache_use ct_cache_policy_on_miss(const struct ct_http_msg *req,
                                          const struct ct_cache_policy_opts *opts)
{
    struct ct_cc rq;
    ct_cache_policy_req_cc(req, opts, &rq);
    return ct_cache_policy_on_miss_cc(&rq);
}

enum ct_cache_use ct_cache_policy_on_miss_cc(const struct ct_cc *rq)
{
    return (rq->flags & CT_CC_ONLY_IF_CACHED) ? CT_CACHE_USE_GATEWAY_TIMEOUT : CT_CACHE_USE_FETCH;
}
