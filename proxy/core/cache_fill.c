/*
 * proxy/core/cache_fill.c: the origin's response on its way through the cache.
 *
 * The fetcher is a client connection (fetch.c streams origin -> client as
 * for any request); these hooks add the cache's part:
 *   - the request head: the client's conditionals and Range are left out of
 *     a fill (we want the whole, storable representation; the client's
 *     conditionals are answered from the object), our validators are added to
 *     a revalidation (RFC 9111 §4.3.1);
 *   - the response head: RFC 9111 §3 storability (cache_policy.h), then
 *     either ct_obj_set_head() on the BUSY object with the header block
 *     rendered ONCE here (status line + storable fields + Via; never the
 *     per-hit fields) or ct_obj_abandon() with a hit-for-miss marker so the
 *     waiters fetch on their own at once; a 304 to a revalidation merges
 *     headers into a new object sharing the old body (§4.3.4); a 5xx within
 *     stale-if-error serves the stale object instead; an unsafe method's
 *     non-error response invalidates (§4.4);
 *   - the body: each piece the origin sends is appended to the object (one
 *     copy: the object owns its memory) before the fetching client gets it
 *     (moved, not copied); waiters stream from the object;
 *   - the end: ct_obj_complete(); a failure anywhere before it ends the
 *     object FAILED (fetch.c, ct_req_failing): never stored, its
 *     readers see a truncated body.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "http/coding/coding.h"
#include "proxy/core/cache_derive.h"
#include "http/http_hdrindex.h"
#include "proxy/core/cache_int.h"
#include "proxy/core/fleet_step.h"
#include "proxy/route/route.h"
#include "proxy/core/proto.h"
#include "proxy/stats/stats.h"
#include "proxy/upstream/headw.h"

/* ---- rendering --------------------------------------------------------------- */

static int status_line(char *buf, size_t cap, const struct ct_http_msg *msg)
{
    struct ct_str reason = msg->reason.len ? msg->reason : ct_str_c(ct_http_status_reason(msg->status));
    int n = snprintf(buf, cap, "HTTP/1.1 %03u %.*s\r\n", msg->status % 1000, (int)reason.len,
                     reason.p);
    return CT_MIN(n, (int)cap - 1);
}

/* ---- tags (issue 16) --------------------------------------------------------- */

_Static_assert(CT_CACHE_TAGS_MAX == 128 && CT_CACHE_TAG_MAX_LEN == 1024,
               "conf_schema.c's bounds of cache.max_tags and cache.max_tag_length");

bool ct_cache_is_tag_field(const struct ct_conf_cache *cc, const struct ct_http_field *f)
{
    if (f->id != CT_HDR_UNKNOWN) /* conf_check.c: tag fields are outside the table */
        return false;
    for (size_t i = 0; i < cc->ntag_headers; i++)
        if (ct_str_eq_ci(f->name, ct_str_c(cc->tag_headers[i])))
            return true;
    return false;
}

size_t ct_cache_tags_of(struct ct_req *r, const struct ct_http_msg *msg,
                        struct ct_str out[CT_CACHE_TAGS_MAX])
{
    const struct ct_conf_cache *cc = &r->w->cf->cache;
    size_t n = 0, refused = 0;
    for (size_t i = 0; i < msg->nfields; i++) {
        const struct ct_http_field *f = &msg->fields[i];
        if (ct_cache_is_tag_field(cc, f))
            refused += ct_cache_tags_split(f->name, f->value, out, &n, cc->max_tags,
                                           cc->max_tag_length);
    }
    if (refused) {
        ct_stats_add(&r->w->stats->cache_tags_refused[0], refused);
        CT_INFO("w%u c%llu: %.*s: %zu tags left out (cache.max_tags = %u, cache.max_tag_length "
                "= %u)",
                r->w->id, (unsigned long long)r->conn_id, (int)r->msg->target.len, r->msg->target.p,
                refused, cc->max_tags, cc->max_tag_length);
    }
    return n;
}

void ct_cache_render_block(struct evbuffer *out, const struct ct_http_msg *msg,
                           const struct ct_req *r, const struct ct_stored_blk *blk0)
{
    const struct ct_cache_policy_opts *po = ct_req_popts(r);
    const struct ct_conf_cache *cc = &r->w->cf->cache;
    /* a route's strip_set_cookie: stored (and so served) without Set-Cookie */
    bool strip_sc = r->route && r->route->conf && r->route->conf->strip_set_cookie;
    struct ct_stored_blk blk = *blk0;
    char line[160];
    int n = status_line(line, sizeof(line), msg);
    blk.status_len = (uint32_t)n;
    /* One reservation for the whole block (the head writer HTTP/1 heads
     * use): no field is written twice, Date and Via are bounded. */
    size_t bound = sizeof(blk) + (size_t)n + CT_HTTP_DATE_LEN + sizeof(CT_VIA_US) + 16;
    for (size_t i = 0; i < msg->nfields; i++)
        bound += msg->fields[i].name.len + msg->fields[i].value.len + 4;
    struct ct_headw hw;
    ct_headw_begin(&hw, out, bound);
    ct_headw_put(&hw, (const char *)&blk, sizeof(blk));
    ct_headw_put(&hw, line, (size_t)n);
    bool has_date = false;
    struct ct_cache_fields fs;
    ct_cache_policy_fields_init(&fs, msg, po);
    for (size_t i = 0; i < msg->nfields; i++) {
        const struct ct_http_field *f = &msg->fields[i];
        /* Per-hit fields are written on every delivery; the framing is ours;
         * targeted cache control is for us only (RFC 9213 §2). */
        if ((ct_hdr_flags(f->id) & CT_HDRF_PER_HIT) || f->id == CT_HDR_CONTENT_LENGTH ||
            f->id == CT_HDR_TRANSFER_ENCODING || f->id == CT_HDR_VIA || ct_http_field_is_proxy(f) ||
            ct_cache_policy_field_targeted(f, po) || !ct_cache_policy_fields_storable(&fs, f) ||
            (!cc->expose_tags && ct_cache_is_tag_field(cc, f)) ||
            (f->id == CT_HDR_SET_COOKIE && strip_sc))
            continue;
        if (f->id == CT_HDR_DATE && has_date)
            continue; /* a singleton (RFC 9110 §6.6.1): the first line counts */
        has_date |= f->id == CT_HDR_DATE;
        ct_headw_field(&hw, f->name, f->value);
    }
    /* Hits carry the origin's Date, not the time of the hit: Age says how long
     * it sat here (RFC 9110 §6.6.1, RFC 9111 §5.1). A response without one
     * gets the time it was received, as a recipient with a clock must add. */
    if (!has_date) {
        char date[CT_HTTP_DATE_LEN + 1];
        ct_http_date_format((time_t)blk.fresh.response_time, date);
        ct_headw_field(&hw, CT_STR("Date"), ct_str_make(date, CT_HTTP_DATE_LEN));
    }
    /* "Via: <theirs>, 1.1 cachet" (RFC 9110 §7.6.3: append, in order) */
    ct_headw_joined(&hw, msg, CT_HDR_VIA, CT_STR(CT_VIA_US));
    ct_headw_end(&hw);
}

/* Targeted cache control is for us only (RFC 9213 §2), and so are the tags
 * unless cache.expose_tags: never forwarded. */
static bool omit_ours(const struct ct_http_field *f, const void *arg)
{
    const struct ct_req *r = arg;
    const struct ct_conf_cache *cc = &r->w->cf->cache;
    if (f->id != CT_HDR_UNKNOWN) /* per pass-response field: the common case first */
        return f->id == CT_HDR_CDN_CACHE_CONTROL;
    return ct_cache_policy_field_targeted(f, ct_req_popts(r)) ||
           (!cc->expose_tags && ct_cache_is_tag_field(cc, f));
}

/* ---- the request ------------------------------------------------------------------ */

static void validators(struct ct_obj *obj, struct ct_cache_validators *v)
{
    struct ct_stored_blk blk;
    struct ct_str wire;
    CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
    *v = (struct ct_cache_validators){.etag = ct_obj_etag(obj),
                                      .last_modified = ct_obj_last_modified(obj),
                                      .response_time = blk.fresh.response_time};
}

const struct ct_http_msg *ct_cache_fwd_msg(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    const struct ct_http_msg *req = r->msg;
    if (cr == NULL || r->step != CT_STEP_FILL)
        return req;
    if (cr->fwd_cap < req->nfields + 2) {
        free(cr->fwd_fields);
        cr->fwd_cap = req->nfields + 16;
        cr->fwd_fields = ct_xmalloc(cr->fwd_cap * sizeof(*cr->fwd_fields));
    }
    size_t n = 0;
    for (size_t i = 0; i < req->nfields; i++) {
        if (ct_hdr_flags(req->fields[i].id) & CT_HDRF_CACHE_ANSWERS) {
            cr->stripped = true;
            continue; /* answered from the object we store */
        }
        cr->fwd_fields[n++] = req->fields[i];
    }
    if (cr->stale) {
        struct ct_cache_validators v;
        validators(cr->stale, &v); /* views into the stale object, which we hold */
        n += ct_cache_policy_revalidate_hdrs(&v, &cr->fwd_fields[n]);
    }
    cr->fwd = *req;
    ct_http_msg_set_fields(&cr->fwd, cr->fwd_fields, n);
    return &cr->fwd;
}

/* ---- invalidation (§4.4) ----------------------------------------------------------------- */

static void invalidate(struct ct_req *r, const struct ct_http_msg *resp)
{
    char *targets[3];
    size_t n = ct_cache_policy_invalidate(r->msg, resp, targets);
    struct ct_cache_key key;
    for (size_t i = 0; i < n; i++) {
        if (ct_req_key_for(r, ct_str_c(targets[i]), &key)) {
            size_t k = ct_cache_purge(r->w->wc->cache, &key);
            CT_DEBUG("w%u c%llu: %.*s %.*s invalidates %s (%zu objects)", r->w->id,
                     (unsigned long long)r->conn_id, (int)r->msg->method_name.len,
                     r->msg->method_name.p, (int)r->msg->target.len, r->msg->target.p,
                     targets[i], k);
        }
        free(targets[i]);
    }
}

/* ---- the response head ----------------------------------------------------------------- */

/* First value of header ID, or empty. */
static struct ct_str first_value(const struct ct_http_msg *msg, enum ct_hdr_id id)
{
    const struct ct_http_field *f = ct_http_msg_find(msg, id, NULL);
    return f ? f->value : CT_STR_NULL;
}

/* grace and keep of a response, seconds: grace serves stale while one fetch
 * refreshes (the response's stale-while-revalidate, or the operator's opt-in
 * cache.grace); keep holds it longer for 304s (objects with a validator) and
 * for stale-if-error. */
/* A route's override of a cache section duration (ms), or the section's. */
static double route_s(uint64_t route_ms, uint64_t section_ms)
{
    return (double)(route_ms != CT_CONF_INHERIT ? route_ms : section_ms) / 1000.0;
}

/* The route's freshness overrides (issue 15) on F, the response's: a TTL
 * forced for the statuses it names (Varnish's beresp.ttl, nginx's
 * proxy_cache_valid), then the floor and the cap. What the origin forbade
 * storing is still not stored: only its lifetime changes here. */
static void route_fresh(const struct ct_req *r, unsigned status, struct ct_cache_fresh *f)
{
    const struct ct_conf_route *rc = r->route ? r->route->conf : NULL;
    if (!rc)
        return;
    const struct ct_conf_route_cache *c = &rc->cache;
    if (c->ttl_ms != CT_CONF_INHERIT) {
        for (size_t i = 0; i < c->nttl_statuses; i++) {
            if ((unsigned)strtoul(c->ttl_statuses[i], NULL, 10) == status) {
                f->lifetime = (int64_t)(c->ttl_ms / 1000);
                f->flags &= ~(unsigned)CT_CACHE_F_NO_CACHE;
                break;
            }
        }
    }
    if (c->min_ttl_ms != CT_CONF_INHERIT && f->lifetime < (int64_t)(c->min_ttl_ms / 1000))
        f->lifetime = (int64_t)(c->min_ttl_ms / 1000);
    if (c->max_ttl_ms != CT_CONF_INHERIT && f->lifetime > (int64_t)(c->max_ttl_ms / 1000))
        f->lifetime = (int64_t)(c->max_ttl_ms / 1000);
}

static void windows(struct ct_req *r, const struct ct_cache_fresh *f, bool validator,
                    double *grace, double *keep)
{
    const struct ct_conf_cache *cc = &r->w->cf->cache;
    const struct ct_conf_route *rc = r->route ? r->route->conf : NULL;
    uint64_t inh = CT_CONF_INHERIT;
    double grace_s = route_s(rc ? rc->cache.grace_ms : inh, cc->grace_ms);
    double keep_s = route_s(rc ? rc->cache.keep_ms : inh, cc->keep_ms);
    double sie_s = route_s(rc ? rc->cache.stale_if_error_ms : inh, cc->stale_if_error_ms);
    bool strict = f->flags & (CT_CACHE_F_MUST_REVALIDATE | CT_CACHE_F_NO_CACHE);
    double swr = f->stale_while_revalidate != CT_CC_UNSET ? (double)f->stale_while_revalidate : 0;
    double sie = f->stale_if_error != CT_CC_UNSET ? (double)f->stale_if_error : sie_s;
    *grace = strict ? 0 : CT_MAX(swr, grace_s);
    *keep = validator ? keep_s : 0;
    if (!strict)
        *keep = CT_MAX(*keep, sie - *grace);
}

/* Append the field index of TMP's stored block (ct_cache_render_block's)
 * and record both lengths in its prefix: built once here, so no reader
 * parses the block again. */
static void add_index(struct evbuffer *tmp)
{
    size_t total = evbuffer_get_length(tmp);
    struct ct_stored_blk blk;
    evbuffer_copyout(tmp, &blk, sizeof(blk));
    blk.wire_len = (uint32_t)(total - sizeof(blk));
    blk.index_len = 0;
    size_t need = 0;
    struct ct_str wire = ct_str_make((const char *)evbuffer_pullup(tmp, -1) + sizeof(blk),
                                     blk.wire_len);
    char small[2048]; /* a head of up to ~120 fields: no allocation */
    if (ct_hdrindex_build(wire, small, sizeof(small), &need) == CT_OK) {
        evbuffer_add(tmp, small, need);
        blk.index_len = (uint32_t)need;
    } else if (need > 0) {
        char *ix = ct_xmalloc(need);
        size_t len = 0;
        if (ct_hdrindex_build(wire, ix, need, &len) == CT_OK) {
            evbuffer_add(tmp, ix, len);
            blk.index_len = (uint32_t)len;
        }
        free(ix);
    }
    memcpy(evbuffer_pullup(tmp, -1), &blk, sizeof(blk));
}

/* Set the fill object's head from MSG (answering REQ) with BODY_SRC (a 304
 * update) or a body to come; WEAKENED: cachet made MSG's ETag weak
 * (cache_derive.h). Returns CT_OK, CT_ENOENT when nothing could reuse the
 * response (it is not stored), or the store's error. */
static int store_head(struct ct_req *r, const struct ct_http_msg *msg, struct ct_obj *body_src,
                      bool weakened, ct_time_t now)
{
    struct ct_creq *cr = r->cr;
    const struct ct_cache_policy_opts *po = ct_req_popts(r);
    struct ct_stored_blk blk = {.length = UINT64_MAX};
    char *vkey = NULL;
    size_t vlen = 0;
    ct_cache_policy_fresh(msg, po, cr->req_time, now, &blk.fresh);
    route_fresh(r, msg->status, &blk.fresh);
    if (CT_UNLIKELY(r->fleet_peer)) /* the owner's answer: an edge copy, kept briefly */
        ct_req_fleet_mirror_cap(r, &blk.fresh);
    blk.flags = ct_stored_flags_of(msg, weakened); /* its coding, for hits (cache_derive.h) */
    /* the encoder's output past the origin's length: a few bytes per block
     * for input it cannot shrink; an eighth is far above that */
    if (cr->enc && cr->enc_bound &&
        ct_cache_fits(r->w->wc->cache, cr->enc_bound + cr->enc_bound / 8 + 4096))
        blk.flags |= CT_STORED_BOUNDED;
    if (body_src) {
        struct ct_str v = ct_obj_vary(body_src);
        vkey = v.len ? ct_xmalloc(v.len) : NULL;
        if (v.len)
            memcpy(vkey, v.p, v.len);
        vlen = v.len;
    } else if (ct_cache_vary_key(msg, r->msg, &vkey, &vlen) != CT_OK) {
        return CT_EPROTO;
    }
    if (body_src)
        blk.length = ct_obj_body_len(body_src);
    else if (msg->framing == CT_FRAME_LENGTH)
        blk.length = msg->content_length;
    struct evbuffer *tmp = evbuffer_new();
    ct_cache_render_block(tmp, msg, r, &blk);
    add_index(tmp);
    size_t hlen = evbuffer_get_length(tmp);
    struct ct_obj_meta meta = {
        .status = msg->status,
        .head = ct_str_make((const char *)evbuffer_pullup(tmp, -1), hlen),
        .etag = first_value(msg, CT_HDR_ETAG),
        .last_modified = first_value(msg, CT_HDR_LAST_MODIFIED),
        .vary = ct_str_make(vkey, vlen),
        .response_time = blk.fresh.response_time,
        .initial_age = blk.fresh.initial_age,
        .ttl = (double)blk.fresh.lifetime,
        .body_hint = !body_src && msg->framing == CT_FRAME_LENGTH ? msg->content_length : 0,
        .body_src = body_src,
    };
    /* A body encoded as it fills has no length yet, but at most about the
     * origin's: reserved as one run (a memfd when large enough), so that
     * its hits can sendfile(2) like any large body; the store gives back
     * what it did not use when it completes. */
    if (!body_src && cr->enc && cr->enc_bound) {
        meta.body_hint = cr->enc_bound;
        meta.body_hint_max = true;
    }
    /* Tags: the response's; after a 304 without tag fields, the stored
     * object's (its tag fields are not in the stored block: the index has
     * them, RFC 9111 §4.3.4 keeps what the 304 does not replace). */
    struct ct_str tags[CT_CACHE_TAGS_MAX];
    char *tagbuf = NULL;
    meta.tags = tags;
    meta.ntags = ct_cache_tags_of(r, msg, tags);
    if (meta.ntags == 0 && body_src) {
        size_t cap = (size_t)CT_CACHE_TAGS_MAX * CT_CACHE_TAG_MAX_LEN;
        tagbuf = ct_xmalloc(cap);
        meta.ntags = ct_obj_tags(body_src, tags, CT_CACHE_TAGS_MAX, tagbuf, cap);
    }
    bool validator = meta.etag.len || meta.last_modified.len;
    windows(r, &blk.fresh, validator, &meta.grace, &meta.keep);
    int rc = CT_ENOENT;
    /* Nothing could reuse it without the origin: stale on arrival, no
     * validator to revalidate with and no window to serve it stale in
     * (RFC 9111 §4.2.4). Storing it would only cost memory and make later
     * requests queue behind each other's fetches; nginx does not store it
     * either. A 304 update (BODY_SRC) has a validator by construction. */
    if (body_src || validator || meta.grace > 0 || meta.keep > 0 ||
        ct_cache_policy_ttl(&blk.fresh, now) > 0)
        rc = ct_obj_set_head(cr->fill, &meta);
    evbuffer_free(tmp);
    free(tagbuf);
    free(vkey);
    return rc;
}

static void drop_fill(struct ct_creq *cr, ct_time_t now, double hfm)
{
    if (cr->fill)
        ct_obj_abandon(cr->fill, now, hfm);
    ct_obj_release(&cr->fill);
    cr->store_ok = false;
}

/* The origin's body will not reach the client: it got an object instead. */
static void serve_instead(struct ct_req *r, struct ct_obj *obj, struct ct_str cstatus,
                          bool close)
{
    struct ct_creq *cr = r->cr;
    cr->discard = true;
    if (cr->bg)
        return; /* the client already has its answer */
    CT_ASSERT(ct_cache_emit(r, obj, cstatus, close));
    ct_obj_release(&cr->obj);
    r->proto->flush(r);
}

/* Parse our own stored block back into fields (only on a 304 update, never
 * on a hit). *OUT is allocated; views point into WIRE. Our Via is left out
 * (it is added again when the merged head is rendered). */
static size_t parse_block(struct ct_str wire, uint32_t status_len, struct ct_http_field **out)
{
    size_t cap = 8, n = 0;
    struct ct_http_field *f = ct_xmalloc(cap * sizeof(*f));
    const char *p = wire.p + status_len, *end = wire.p + wire.len;
    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        const char *colon = eol ? memchr(p, ':', (size_t)(eol - p)) : NULL;
        if (eol == NULL || colon == NULL)
            break;
        struct ct_str name = ct_str_make(p, (size_t)(colon - p));
        struct ct_str value = ct_str_trim_ows(ct_str_make(colon + 1, (size_t)(eol - colon - 1)));
        enum ct_hdr_id id = ct_hdr_lookup(name);
        p = eol + 2;
        if (id == CT_HDR_VIA)
            continue;
        if (n == cap)
            f = ct_xrealloc(f, (cap *= 2) * sizeof(*f));
        f[n++] = (struct ct_http_field){name, value, id};
    }
    *out = f;
    return n;
}

/* A 304's strong ETag "x" for a stored W/"x": cachet made it weak when it
 * changed the coding (http_ae.h), and the 304 says the stored bytes are
 * still current, not that they became the origin's: keep W/. */
static void keep_weak_etag(const struct ct_http_field *stored, size_t ns,
                           struct ct_http_field *merged, size_t nm)
{
    const struct ct_http_field *old = NULL;
    for (size_t i = 0; i < ns && !old; i++)
        if (stored[i].id == CT_HDR_ETAG)
            old = &stored[i];
    if (old == NULL || old->value.len < 4 || memcmp(old->value.p, "W/", 2) != 0)
        return;
    for (size_t i = 0; i < nm; i++)
        if (merged[i].id == CT_HDR_ETAG &&
            ct_str_eq(merged[i].value, ct_str_make(old->value.p + 2, old->value.len - 2)))
            merged[i].value = old->value;
}

/* Does R304's strong ETag "x" select a stored W/"x" that cachet weakened
 * when it changed the coding? The origin validated "x", the representation
 * the stored one was made from (RFC 9111 §4.3.4 reads the weak one as not
 * strongly matching; without this, such an object once stale would be
 * revalidated on every request and never refreshed). */
static bool weakened_selects(const struct ct_cache_validators *v, const struct ct_http_msg *r304)
{
    const struct ct_http_field *et = ct_http_msg_find(r304, CT_HDR_ETAG, NULL);
    return et && v->etag.len >= 4 && memcmp(v->etag.p, "W/", 2) == 0 && et->value.len &&
           et->value.p[0] == '"' &&
           ct_str_eq(et->value, ct_str_make(v->etag.p + 2, v->etag.len - 2));
}

/* A 304 to our revalidation (§4.3.3, §4.3.4): a new object with the merged
 * head that shares the stored body; serve it. */
static bool revalidated(struct ct_req *r, const struct ct_http_msg *r304,
                        bool close, ct_time_t now)
{
    struct ct_creq *cr = r->cr;
    struct ct_obj *stale = cr->stale;
    struct ct_cache_validators v;
    struct ct_stored_blk blk;
    struct ct_str wire;
    validators(stale, &v);
    CT_ASSERT(ct_stored_blk_get(stale, &blk, &wire));
    cr->cs = CT_STATS_CS_STALE;
    if (!ct_cache_policy_304_selects(&v, r304) && !weakened_selects(&v, r304)) {
        drop_fill(cr, now, 0);
        ct_creq_set_status(cr, "cachet; fwd=%s; fwd-status=304; detail=not-selected", cr->fwd_kind);
        serve_instead(r, stale, cr->cstatus, close);
        return true;
    }
    struct ct_http_field *stored, *merged;
    size_t ns = parse_block(wire, blk.status_len, &stored);
    size_t nm = ct_cache_policy_merge_304(stored, ns, r304, ct_req_popts(r), &merged);
    keep_weak_etag(stored, ns, merged, nm);
    struct ct_http_msg m = {.kind = CT_HTTP_RESPONSE, .status = ct_obj_status(stale),
                            .version = 11, .fields = merged, .nfields = nm,
                            .framing = CT_FRAME_LENGTH, .content_length = ct_obj_body_len(stale)};
    /* reason phrase: what follows "HTTP/1.1 NNN " in our stored status line */
    if (blk.status_len > 15)
        m.reason = ct_str_make(wire.p + 13, blk.status_len - 15);
    /* the body is the stale one's: so is who weakened its ETag */
    if (store_head(r, &m, stale, (blk.flags & CT_STORED_WEAKENED) != 0, now) == CT_OK) {
        ct_obj_complete(cr->fill, now);
        struct ct_obj *obj = cr->fill;
        cr->fill = NULL;
        ct_creq_set_status(cr, "cachet; fwd=%s; fwd-status=304", cr->fwd_kind);
        serve_instead(r, obj, cr->cstatus, close);
        ct_obj_release(&obj);
    } else {
        drop_fill(cr, now, 0);
        ct_creq_set_status(cr, "cachet; fwd=%s; fwd-status=304; detail=not-updated", cr->fwd_kind);
        serve_instead(r, stale, cr->cstatus, close);
    }
    free(stored);
    free(merged);
    return true;
}

/* Why not to store MSG, or NULL to store it. *HFM: leave a hit-for-miss marker. */
static const char *not_storable(struct ct_req *r, const struct ct_http_msg *msg, bool *hfm)
{
    if (CT_UNLIKELY(r->fleet_peer) && r->w->cf->fleet.mirror_ttl_ms == 0) {
        *hfm = false; /* fleet.mirror_ttl 0: no edge copy, the next request asks the owner */
        return "fleet-no-mirror";
    }
    enum ct_cache_store v = ct_cache_policy_storable(r->msg, msg, ct_req_popts(r));
    *hfm = v != CT_CACHE_STORE_NOT_MODIFIED && v != CT_CACHE_STORE_PARTIAL &&
           v != CT_CACHE_STORE_REQ_NO_STORE;
    if (v != CT_CACHE_STORE_OK)
        return ct_cache_store_detail(v);
    if (msg->framing == CT_FRAME_LENGTH &&
        !ct_cache_fits(r->w->wc->cache, msg->content_length + msg->head_bytes))
        return "too-big";
    return NULL;
}

static int append_all(struct ct_obj *obj, struct evbuffer *src);

/* ---- compression (issue 18) --------------------------------------------------------- */

/* The stats label is the coding's enum value. */
_Static_assert(CT_CODING_IDENTITY == 0 && CT_CODING_GZIP == 1 && CT_CODING_BR == 2 &&
                   CT_CODING_ZSTD == 3 && CT_STATS_NL_CODING == CT_CODING__COUNT,
               "CT_STATS_CODING_TABLE follows enum ct_coding");

bool ct_cache_compressible(const struct ct_req *r, const struct ct_http_msg *msg)
{
    const struct ct_conf_compression *cz = &r->w->cf->compression;
    const struct ct_http_field *ct = ct_http_msg_find(msg, CT_HDR_CONTENT_TYPE, NULL);
    bool type_ok = ct && ct_conf_compress_type(cz, ct->value.p, ct->value.len);
    return ct_ce_should_encode(msg, r->msg->method, type_ok, cz->min_size_bytes) == CT_CE_YES;
}

int ct_cache_store_head_of(struct ct_req *r, struct ct_obj *fill, const struct ct_http_msg *msg,
                           bool weakened, ct_time_t now)
{
    struct ct_creq *cr = r->cr;
    CT_ASSERT(cr->fill == NULL);
    cr->fill = fill;
    int rc = store_head(r, msg, NULL, weakened, now);
    cr->fill = NULL;
    return rc;
}

/* An encoder for coding C at its configured level into cr->enc, with the
 * buffers its body goes through (the scratch sink: a body may never come).
 * False if the codec could not be made. */
static bool encoder_start(struct ct_req *r, enum ct_coding c, const struct ct_http_msg *msg)
{
    struct ct_creq *cr = r->cr;
    const struct ct_conf_compression *cz = &r->w->cf->compression;
    cr->enc = ct_encoder_new(cz, c, msg->framing == CT_FRAME_LENGTH ? msg->content_length : 0);
    if (cr->enc == NULL)
        return false;
    cr->enc_bound = msg->framing == CT_FRAME_LENGTH ? msg->content_length : 0;
    if (cr->zbuf == NULL)
        cr->zbuf = evbuffer_new();
    if (cr->scratch == NULL)
        cr->scratch = evbuffer_new();
    return true;
}

/* Does the fill of MSG store it compressed, and with which head? NULL: as
 * it came. Otherwise the head to store: a response of a type cachet
 * compresses gets Vary: Accept-Encoding whatever the class (an identity
 * variant must not answer a br client), and for a coding class
 * Content-Encoding, a weak ETag and an encoder (cr->enc) for the body. */
static struct ct_ce_head *compress_plan(struct ct_req *r, const struct ct_http_msg *msg)
{
    struct ct_creq *cr = r->cr;
    if (cr->ae_class == CT_CODING_NONE)
        return NULL;
    if (!ct_cache_compressible(r, msg))
        return NULL;
    enum ct_coding c = (enum ct_coding)cr->ae_class;
    if (c == CT_CODING_IDENTITY)
        return ct_ce_head_new(msg, CT_CODING_IDENTITY, false);
    if (!encoder_start(r, c, msg))
        return NULL;
    return ct_ce_head_new(msg, c, true);
}

/* compression.on_the_fly: a response that is not stored, to a request of
 * a coding class, encoded on its way to the client (per request: the cost
 * the stored path avoids). The head is sent here, with Content-Encoding;
 * the body goes through the scratch sink and the encoder
 * (ct_cache_resp_body), under the client's back-pressure like any pass
 * (fetch.c pauses the origin while the client's output is full). */
static bool on_the_fly(struct ct_req *r, const struct ct_http_msg *msg,
                       const struct ct_fwd_resp_extra *extra)
{
    struct ct_creq *cr = r->cr;
    const struct ct_conf_compression *cz = &r->w->cf->compression;
    if (!cz->enabled || !cz->on_the_fly || cr->discard || cr->bg || cr->fill ||
        cr->ae_class == CT_CODING_NONE || cr->ae_class == CT_CODING_IDENTITY)
        return false;
    enum ct_coding c = (enum ct_coding)cr->ae_class;
    if (!ct_cache_compressible(r, msg) || !encoder_start(r, c, msg))
        return false;
    cr->otf_head = ct_ce_head_new(msg, c, true);
    r->proto->frame_response(r, &cr->otf_head->msg);
    r->proto->send_head(r, &cr->otf_head->msg, extra, false);
    r->fwd_head = true;
    return true;
}

/* Run the fill's encoder over all of IN (drained) into cr->zbuf; LAST ends
 * the stream. The output is bounded by the input (plus the coding's
 * framing), so nothing here waits for the client. Returns CT_OK, or
 * CT_EPROTO if the encoder failed (a zstd size pledge the body broke). */
static int encode(struct ct_req *r, struct evbuffer *in, bool last)
{
    struct ct_creq *cr = r->cr;
    struct ct_codec *cd = cr->enc;
    if (!last && evbuffer_get_length(in) == 0)
        return CT_OK;
    uint64_t t0 = ct_thread_cpu_us(), in0 = ct_codec_bytes_in(cd), out0 = ct_codec_bytes_out(cd);
    int rc = CT_OK;
    for (;;) {
        size_t avail = evbuffer_get_length(in), n = 0;
        const void *p = NULL;
        if (avail) {
            struct evbuffer_iovec v;
            evbuffer_peek(in, -1, NULL, &v, 1);
            p = v.iov_base;
            n = v.iov_len;
        }
        struct evbuffer_iovec o;
        if (evbuffer_reserve_space(cr->zbuf, 16384, &o, 1) < 1) {
            rc = CT_EIO;
            break;
        }
        size_t wrote = 0;
        enum ct_codec_rc cc = ct_codec_run(cd, p, &n, o.iov_base, o.iov_len, &wrote,
                                           last && n == avail);
        o.iov_len = wrote;
        evbuffer_commit_space(cr->zbuf, &o, 1);
        evbuffer_drain(in, n);
        if (cc == CT_CODEC_ERROR) {
            rc = CT_EPROTO;
            break;
        }
        if (cc == CT_CODEC_DONE || (cc == CT_CODEC_NEED_INPUT && evbuffer_get_length(in) == 0))
            break;
    }
    int c = (int)cr->ae_class;
    struct ct_stats *st = r->w->stats;
    ct_stats_add(&st->compress_bytes_in[c], ct_codec_bytes_in(cd) - in0);
    ct_stats_add(&st->compress_bytes_out[c], ct_codec_bytes_out(cd) - out0);
    ct_stats_add(&st->compress_cpu_us[c], ct_thread_cpu_us() - t0);
    if (rc != CT_OK)
        CT_WARN("w%u c%llu: %.*s: %s encoder failed: %s", r->w->id,
                (unsigned long long)r->conn_id, (int)r->msg->target.len, r->msg->target.p,
                ct_coding_name(cr->ae_class), ct_codec_error(cd));
    return rc;
}

/* The fill object could not take N more bytes: over max_object_size (no
 * Content-Length said so at the head) or no memory. Of unknown length, it
 * is abandoned, not failed: its waiters hold their answer until it ends
 * (ct_step_wait), have been sent nothing, and so fetch on their own at once
 * (nginx's proxy_cache_lock released without an object); too big, it leaves
 * a hit-for-miss marker, as a Content-Length over the limit does. A fill
 * whose length or bound was known has readers streaming from it (the same
 * predicate let them start): they see it cut. */
static void fill_outgrown(struct ct_req *r, size_t n)
{
    struct ct_creq *cr = r->cr;
    struct ct_cache *cache = r->w->wc->cache;
    struct ct_stored_blk blk;
    struct ct_str wire;
    if (ct_stored_blk_get(cr->fill, &blk, &wire) && ct_stored_may_outgrow(&blk)) {
        bool big = !ct_cache_fits(cache, (uint64_t)ct_obj_size(cr->fill) + n);
        double hfm = big ? (double)r->w->cf->cache.hit_for_miss_ms / 1000.0 : 0;
        ct_obj_abandon(cr->fill, ct_time_real(), hfm);
    } else {
        ct_obj_fail(cr->fill);
    }
    ct_obj_release(&cr->fill);
    cr->store_ok = false;
}

/* The encoded bytes in cr->zbuf: into the fill object, then to the client
 * unless it reads the object or has its answer. True if they went to it. */
static bool encoded_out(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    size_t n = evbuffer_get_length(cr->zbuf);
    if (n && cr->fill && cr->store_ok && append_all(cr->fill, cr->zbuf) != CT_OK)
        fill_outgrown(r, n);
    if (cr->bg || cr->self || !r->fwd_head || n == 0) {
        evbuffer_drain(cr->zbuf, n);
        return !cr->bg && !cr->self;
    }
    r->proto->send_body(r, cr->zbuf, n);
    return true;
}

static bool fill_head(struct ct_req *r, const struct ct_http_msg *msg, bool close,
                      ct_time_t now)
{
    struct ct_creq *cr = r->cr;
    const struct ct_conf_cache *cc = &r->w->cf->cache;
    if (cr->stale && msg->status == 304)
        return revalidated(r, msg, close, now);
    if (cr->stale && !cr->validate && msg->status >= 500 && ct_req_sie_ok(r, cr->stale, now)) {
        drop_fill(cr, now, 0);
        cr->cs = CT_STATS_CS_STALE;
        serve_instead(r, cr->stale, CT_STR("cachet; hit; detail=stale-if-error"), close);
        return true;
    }
    bool hfm;
    const char *why = not_storable(r, msg, &hfm);
    struct ct_ce_head *ceh = why ? NULL : compress_plan(r, msg);
    const struct ct_http_msg *stored = ceh ? &ceh->msg : msg;
    int rc = why ? CT_OK : store_head(r, stored, NULL, ceh && ceh->etag, now);
    if (why == NULL && rc != CT_OK)
        why = rc == CT_ELIMIT ? "no-memory" : rc == CT_ENOENT ? "no-freshness" : "vary-star";
    hfm = hfm || rc == CT_ENOENT;
    if (why && ceh) {
        /* not stored after all: the client gets the origin's bytes as they are */
        ct_codec_free(&r->cr->enc);
        ct_ce_head_free(&ceh);
    }
    if (why) {
        /* Waiters are released at once; the marker keeps later requests for
         * this key from queueing behind a fetch (issue 6). */
        drop_fill(cr, now, hfm ? (double)cc->hit_for_miss_ms / 1000.0 : 0);
        if (cr->bg) {
            cr->discard = true;
            return true;
        }
        ct_creq_set_status(cr, "cachet; fwd=%s; detail=%s", cr->fwd_kind, why);
        return false;
    }
    cr->store_ok = true;
    if (cr->enc)
        ct_stats_add(&r->w->stats->compress_objects[cr->ae_class], 1);
    if (cr->bg) {
        ct_ce_head_free(&ceh);
        return true; /* the body goes to the scratch buffer, unframed */
    }
    if (cr->stale)
        ct_creq_set_status(cr, "cachet; fwd=%s; fwd-status=%u; stored", cr->fwd_kind, msg->status);
    else
        ct_creq_set_status(cr, "cachet; fwd=%s; stored", cr->fwd_kind);
    if (stored->framing != CT_FRAME_LENGTH && !cr->stripped) {
        /* A body of unknown length may outgrow max_object_size on its way:
         * the object is then dropped, and the fetching client must get the
         * rest from the origin. So it is sent the origin's bytes, after the
         * object has them (ct_cache_resp_body), and keeps the fetch; if it
         * goes, the fill goes on without it (ct_fetch_adopt). An
         * encoded fill is one of these (its length is known at the end):
         * the client gets the encoder's bytes, chunked for HTTP/1.1. */
        if (cr->enc)
            r->proto->frame_response(r, stored);
        ct_cache_fill_head(r, cr->fill, stored, cr->cstatus);
        ct_ce_head_free(&ceh);
        return true;
    }
    /* The fetching client reads the object as it fills, like any reader
     * (Varnish's busyobj): it gets what the store holds, its Range or
     * conditionals answered from it (issue 5: on a miss, fetch the whole
     * object and answer the range), and fetch.c hands the fill over to a
     * request of its own (ct_fetch_detach), so the client's pace or
     * departure is nobody else's concern. */
    cr->self = true;
    if (ct_cache_emit(r, cr->fill, cr->cstatus, close))
        ct_req_goto(r, CT_STEP_DONE);
    else
        ct_req_run(r); /* STREAM, until the object is complete (ct_cache_self_end) */
    ct_ce_head_free(&ceh);
    return true;
}

bool ct_cache_resp_head(struct ct_req *r, const struct ct_http_msg *msg, bool close,
                        struct ct_fwd_resp_extra *extra)
{
    struct ct_creq *cr = r->cr;
    *extra = (struct ct_fwd_resp_extra){0};
    if (cr == NULL)
        return false;
    ct_time_t now = ct_time_real();
    if (!(ct_http_method_flags(r->msg->method) & CT_METHOD_SAFE))
        invalidate(r, msg);
    if (r->step == CT_STEP_FILL && fill_head(r, msg, close, now))
        return true;
    if (r->step != CT_STEP_FILL && cr->stale && !cr->validate && msg->status >= 500 &&
        ct_req_sie_ok(r, cr->stale, now)) {
        cr->cs = CT_STATS_CS_STALE;
        serve_instead(r, cr->stale, CT_STR("cachet; hit; detail=stale-if-error"), close);
        return true;
    }
    if (cr->cstatus.len == 0)
        ct_creq_set_status(cr, "cachet; fwd=bypass");
    *extra = (struct ct_fwd_resp_extra){
        .cache_status = cr->cstatus, .omit = omit_ours, .omit_arg = r};
    if (on_the_fly(r, msg, extra))
        return true; /* sent with its new coding; the body follows, encoded */
    return false; /* fetch.c forwards it (at once with its body when it can) */
}

/* ---- the body ------------------------------------------------------------------------ */

/* A fill takes the origin's body first (unframed, into the scratch buffer),
 * and only then does the fetching client get it (ct_cache_resp_body): the
 * object is filled from the upstream, never from what a client was sent. */
enum ct_body_sink ct_cache_body_sink(struct ct_req *r, struct evbuffer **scratch)
{
    struct ct_creq *cr = r->cr;
    *scratch = NULL;
    if (cr == NULL)
        return CT_SINK_CLIENT;
    if (cr->discard)
        return CT_SINK_DROP;
    /* an encoded fill stays on this path to its end, even if the object
     * fails: the client's head said Content-Encoding */
    if (cr->bg || cr->self || (cr->fill && cr->store_ok) || cr->enc) {
        if (cr->scratch == NULL)
            cr->scratch = evbuffer_new();
        *scratch = cr->scratch;
        return CT_SINK_CACHE;
    }
    return CT_SINK_CLIENT;
}

/* Append all of SRC to the fill object, by its segments (no copy but the
 * object's own). Returns CT_OK or the store's error. */
static int append_all(struct ct_obj *obj, struct evbuffer *src)
{
    size_t n = evbuffer_get_length(src);
    struct evbuffer_ptr ptr;
    if (evbuffer_ptr_set(src, &ptr, 0, EVBUFFER_PTR_SET) != 0)
        return CT_EIO;
    while (n > 0) {
        struct evbuffer_iovec v[8];
        int k = evbuffer_peek(src, (ev_ssize_t)n, &ptr, v, 8);
        if (k <= 0)
            return CT_EIO;
        size_t got = 0;
        for (int i = 0; i < k && i < 8 && got < n; i++) {
            size_t len = CT_MIN(v[i].iov_len, n - got);
            int rc = ct_obj_append(obj, v[i].iov_base, len);
            if (rc != CT_OK)
                return rc;
            got += len;
        }
        n -= got;
        if (n && evbuffer_ptr_set(src, &ptr, got, EVBUFFER_PTR_ADD) != 0)
            return CT_EIO;
    }
    return CT_OK;
}

bool ct_cache_resp_body(struct ct_req *r, size_t n)
{
    struct ct_creq *cr = r->cr;
    if (cr == NULL || cr->scratch == NULL || evbuffer_get_length(cr->scratch) == 0)
        return false; /* not through the scratch buffer: straight to the client */
    CT_ASSERT(evbuffer_get_length(cr->scratch) == n);
    if (cr->enc) {
        if (encode(r, cr->scratch, false) != CT_OK) {
            evbuffer_drain(cr->scratch, evbuffer_get_length(cr->scratch));
            if (cr->fill)
                ct_obj_fail(cr->fill);
            ct_obj_release(&cr->fill);
            cr->store_ok = false;
        }
        return encoded_out(r);
    }
    if (cr->fill && cr->store_ok && append_all(cr->fill, cr->scratch) != CT_OK)
        fill_outgrown(r, n); /* this client gets the rest from the origin */
    if (cr->bg || cr->self) { /* the client reads the object, or has its answer */
        evbuffer_drain(cr->scratch, n);
        return false;
    }
    r->proto->send_body(r, cr->scratch, n);
    return true;
}

bool ct_cache_filling(const struct ct_req *r)
{
    return r->cr && r->cr->fill && r->cr->store_ok && !r->cr->discard;
}

void ct_cache_resp_end(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    if (cr == NULL)
        return;
    if (cr->enc) { /* the encoder's last bytes, before the object completes */
        if (encode(r, cr->scratch, true) == CT_OK) {
            encoded_out(r);
        } else if (cr->fill) {
            ct_obj_fail(cr->fill);
            ct_obj_release(&cr->fill);
            cr->store_ok = false;
        }
        ct_codec_free(&cr->enc);
    }
    if (cr->fill) {
        if (cr->store_ok) {
            ct_obj_set_fetch_us(cr->fill, ct_req_fetch_us(r));
            ct_obj_complete(cr->fill, ct_time_real());
        } else {
            ct_obj_abandon(cr->fill, ct_time_real(), 0);
        }
        ct_obj_release(&cr->fill);
    }
    if (cr->self && r->step == CT_STEP_STREAM)
        ct_cache_self_end(r); /* the rest of its range, before fetch.c ends it */
    ct_obj_release(&cr->stale);
    if (cr->scratch)
        evbuffer_drain(cr->scratch, evbuffer_get_length(cr->scratch));
    cr->bg = false;
}
