/*
 * tests/fuzz/fuzz_cache_policy.c: libFuzzer target for the storage policy
 * (cache/cache_policy.h: cache_policy.c, cache_fresh.c, cache_vary.c,
 * cache_cond.c) over an origin's response head, and for storing what it
 * allows in a small store and looking it up again.
 *
 * Input: byte 0 = the policy options (bit 0: store_set_cookie; 1:
 * ignore_req_cc; 2: no CDN-Cache-Control; 3: Cachet-Cache-Control as the
 * operator's targeted field; bits 4-5: heuristic_pct 10, 0, 100 or 33; 6:
 * default_ttl 300; 7: heuristic_max 60), byte 1 = times (request sent
 * b % 16 s before the response came; looked up b / 16 * 37 s after it),
 * then the response head on the wire, then request A's head (the one the
 * response answers; "GET / HTTP/1.1" for example.com when absent or
 * refused), then request B's (A when absent), each parsed by our parser.
 *
 * Checks (a failure aborts):
 *   - every verdict and source is in its range; the lifetime is never
 *     negative and agrees with ct_cache_policy_fresh, the age is finite and
 *     never negative, a heuristic lifetime is capped, stale is never served
 *     against must-revalidate, only-if-cached never reaches the origin;
 *   - the per-response field check (ct_cache_policy_fields_storable) gives
 *     the answer of the per-field one for every field;
 *   - Vary: a storable response has a key, the request it was made from
 *     selects it, and B selects it exactly when B's own key is the same;
 *   - tags (ct_cache_tags_split) are views into their field, 1 to
 *     CT_CACHE_TAG_MAX_LEN bytes, at most CT_CACHE_TAGS_MAX, none refused
 *     without a reason;
 *   - entity-tag comparison is symmetric and strong implies weak; 304
 *     merge and invalidation stay in their bounds;
 *   - stored, the object is fresh at the lookup exactly when the policy's
 *     ttl says so (away from the edge), B hits it when Vary lets it, a
 *     request that must revalidate gets it STALE and a 304 that shares its
 *     body replaces it, its tags purge it, and the emptied store is back to
 *     its empty bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_cache_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 4096

/* Parse the first head of KIND from IN[0..LEN); NULL if there is none.
 * *USED: the bytes it took. The message lives as long as *P. */
static const struct ct_http_msg *parse_head(enum ct_http_kind kind, const char *in, size_t len,
                                            struct ct_http_parser **p, size_t *used)
{
    *p = ct_http_parser_new(kind, NULL);
    if (kind == CT_HTTP_REQUEST)
        ct_http_parser_set_gateway(*p, true);
    else
        ct_http_parser_set_request_method(*p, CT_METHOD_GET);
    size_t n = 0;
    enum ct_http_ev ev = ct_http_parser_feed(*p, in, len, &n, NULL);
    *used = n;
    return ev == CT_HTTP_EV_HEAD ? ct_http_parser_msg(*p) : NULL;
}

/* Tags as the proxy reads them from its default tag fields. */
static size_t tags_of(const struct ct_http_msg *m, struct ct_str out[CT_CACHE_TAGS_MAX])
{
    static const struct ct_str names[] = {CT_STR("Surrogate-Key"), CT_STR("Cache-Tag"),
                                          CT_STR("xkey")};
    size_t n = 0;
    for (size_t i = 0; i < m->nfields; i++) {
        const struct ct_http_field *f = &m->fields[i];
        for (size_t k = 0; k < CT_ARRAY_LEN(names); k++) {
            if (!ct_str_eq_ci(f->name, names[k]))
                continue;
            size_t before = n;
            size_t refused = ct_cache_tags_split(f->name, f->value, out, &n, CT_CACHE_TAGS_MAX,
                                                 CT_CACHE_TAG_MAX_LEN);
            FUZZ_CHECK(n >= before && n <= CT_CACHE_TAGS_MAX);
            FUZZ_CHECK(refused == 0 || n == CT_CACHE_TAGS_MAX ||
                       f->value.len > CT_CACHE_TAG_MAX_LEN);
            for (size_t t = before; t < n; t++)
                FUZZ_CHECK(out[t].len > 0 && out[t].len <= CT_CACHE_TAG_MAX_LEN &&
                           out[t].p >= f->value.p &&
                           out[t].p + out[t].len <= f->value.p + f->value.len);
        }
    }
    return n;
}

static struct ct_str first_value(const struct ct_http_msg *m, enum ct_hdr_id id)
{
    const struct ct_http_field *f = ct_http_msg_find(m, id, NULL);
    return f ? f->value : CT_STR_NULL;
}

/* The stored head: the status line and the fields the policy stores. */
static size_t render_head(const struct ct_http_msg *resp, const struct ct_cache_policy_opts *po,
                          char *buf, size_t cap)
{
    struct ct_cache_fields fs;
    ct_cache_policy_fields_init(&fs, resp, po);
    int n = snprintf(buf, cap, "HTTP/1.1 %u %.*s\r\n", resp->status, (int)resp->reason.len,
                     resp->reason.p);
    FUZZ_CHECK(n > 0 && (size_t)n < cap);
    size_t len = (size_t)n;
    for (size_t i = 0; i < resp->nfields; i++) {
        const struct ct_http_field *f = &resp->fields[i];
        bool keep = ct_cache_policy_fields_storable(&fs, f);
        /* the fast path answers as the per-field one */
        FUZZ_CHECK(keep == ct_cache_policy_field_storable(resp, f, po));
        if (!keep)
            continue;
        n = snprintf(buf + len, cap - len, "%.*s: %.*s\r\n", (int)f->name.len, f->name.p,
                     (int)f->value.len, f->value.p);
        FUZZ_CHECK(n > 0 && (size_t)n < cap - len);
        len += (size_t)n;
    }
    return len;
}

static void opts_of(uint8_t b, struct ct_cache_policy_opts *po)
{
    static const unsigned pcts[] = {10, 0, 100, 33};
    ct_cache_policy_opts_default(po);
    po->store_set_cookie = b & 1;
    po->ignore_req_cc = (b & 2) != 0;
    po->cdn_cache_control = !(b & 4);
    if (b & 8)
        po->targeted_cc = CT_STR("Cachet-Cache-Control");
    po->heuristic_pct = pcts[(b >> 4) & 3];
    if (b & 0x40)
        po->default_ttl = 300;
    if (b & 0x80)
        po->heuristic_max = 60;
}

/* Freshness, age and use of RESP for REQ. */
static void check_fresh(const struct ct_http_msg *resp, const struct ct_http_msg *req,
                        const struct ct_cache_policy_opts *po, ct_time_t req_time,
                        ct_time_t resp_time, ct_time_t now, struct ct_cache_fresh *f)
{
    enum ct_cache_fresh_src src;
    int64_t life = ct_cache_policy_lifetime(resp, po, resp_time, &src);
    ct_cache_policy_fresh(resp, po, req_time, resp_time, f);
    FUZZ_CHECK(life >= 0 && f->lifetime == life && f->src == src);
    FUZZ_CHECK(src >= CT_CACHE_FRESH_NONE && src <= CT_CACHE_FRESH_DEFAULT);
    FUZZ_CHECK(src != CT_CACHE_FRESH_NONE || life == 0);
    FUZZ_CHECK(src != CT_CACHE_FRESH_DEFAULT || life == po->default_ttl);
    FUZZ_CHECK(src != CT_CACHE_FRESH_HEURISTIC || life <= po->heuristic_max);
    FUZZ_CHECK(isfinite(f->initial_age) && f->initial_age >= 0);
    FUZZ_CHECK(f->initial_age == ct_cache_policy_initial_age(resp, req_time, resp_time));
    double age = ct_cache_policy_age(f, now), ttl = ct_cache_policy_ttl(f, now);
    FUZZ_CHECK(isfinite(age) && age >= f->initial_age && !isnan(ttl));
    if (f->flags & (CT_CACHE_F_MUST_REVALIDATE | CT_CACHE_F_NO_CACHE))
        FUZZ_CHECK(!ct_cache_policy_swr_ok(f, now) && !ct_cache_policy_sie_ok(f, now));
    enum ct_cache_use use = ct_cache_policy_use(f, req, po, now);
    FUZZ_CHECK(use >= CT_CACHE_USE_FRESH && use <= CT_CACHE_USE_GATEWAY_TIMEOUT);
    FUZZ_CHECK(use != CT_CACHE_USE_REVALIDATE || (f->flags & CT_CACHE_F_VALIDATOR));
    FUZZ_CHECK(use != CT_CACHE_USE_FRESH || ttl > 0);
    if (ct_cache_policy_on_miss(req, po) == CT_CACHE_USE_GATEWAY_TIMEOUT)
        FUZZ_CHECK(use != CT_CACHE_USE_FETCH && use != CT_CACHE_USE_REVALIDATE);
}

/* Validators, conditionals, 304 merge and invalidation: bounds only. */
static void check_cond(const struct ct_http_msg *resp, const struct ct_http_msg *req,
                       const struct ct_cache_policy_opts *po, ct_time_t resp_time)
{
    struct ct_cache_validators v;
    ct_cache_validators_from_msg(resp, resp_time, &v);
    unsigned cond = ct_cache_policy_cond(req, &v);
    FUZZ_CHECK(cond == 0 || cond == 304);
    FUZZ_CHECK(cond == 0 || req->method == CT_METHOD_GET || req->method == CT_METHOD_HEAD);
    struct ct_http_field hdrs[2];
    /* a malformed ETag is not sent back */
    size_t nh = ct_cache_policy_revalidate_hdrs(&v, hdrs);
    FUZZ_CHECK(nh >= (v.last_modified.p != NULL) &&
               nh <= (size_t)(v.etag.p != NULL) + (v.last_modified.p != NULL));
    struct ct_str inm = first_value(req, CT_HDR_IF_NONE_MATCH);
    for (int weak = 0; weak < 2; weak++)
        FUZZ_CHECK(ct_cache_etag_match(v.etag, inm, weak) ==
                   ct_cache_etag_match(inm, v.etag, weak));
    FUZZ_CHECK(!ct_cache_etag_match(v.etag, inm, false) || ct_cache_etag_match(v.etag, inm, true));
    (void)ct_cache_policy_304_selects(&v, resp);
    struct ct_http_field *merged = NULL;
    size_t nm = ct_cache_policy_merge_304(resp->fields, resp->nfields, resp, po, &merged);
    FUZZ_CHECK(nm <= 2 * resp->nfields);
    free(merged);
    char *inval[3] = {NULL, NULL, NULL};
    size_t ni = ct_cache_policy_invalidate(req, resp, inval);
    FUZZ_CHECK(ni <= 3);
    for (size_t i = 0; i < ni; i++) {
        FUZZ_CHECK(inval[i] != NULL && inval[i][0] == '/');
        for (size_t j = 0; j < i; j++) /* duplicates dropped */
            FUZZ_CHECK(strcmp(inval[i], inval[j]) != 0);
    }
    for (size_t i = 0; i < ni; i++)
        free(inval[i]);
}

/* A request that must revalidate gets the fresh object M stored under K as
 * STALE with a fetch; a 304 then replaces it by a head that shares its body
 * (RFC 9111 §4.3.4), which hits, body and all, once the old one is gone. */
static void check_304(struct ct_cache *c, const struct fz_key *k, const struct ct_obj_meta *m,
                      const struct ct_http_msg *a, ct_time_t now)
{
    struct ct_cache_lookup_req rq = {&k->key, m->vary, ct_cache_vary_match_cb, (void *)a, false,
                                     true,    false};
    struct ct_cache_lookup_res res;
    FUZZ_CHECK(ct_cache_lookup(c, &rq, now, &res) == CT_CACHE_STALE);
    FUZZ_CHECK(res.obj != NULL && res.fetch != NULL);
    struct ct_obj_meta m2 = *m;
    m2.body_src = res.obj;
    m2.body_hint = 0;
    m2.response_time = now;
    FUZZ_CHECK(ct_obj_set_head(res.fetch, &m2) == CT_OK);
    ct_obj_complete(res.fetch, now);
    ct_cache_lookup_res_release(&res);
    struct ct_obj *obj = NULL;
    FUZZ_CHECK(fz_look(c, &k->key, m->vary, ct_cache_vary_match_cb, (void *)a, now, &obj) ==
               CT_CACHE_HIT);
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str chunk;
    FUZZ_CHECK(ct_obj_body_next(obj, &pos, 0, &chunk) == CT_OBJ_BODY_DATA);
    FUZZ_CHECK(ct_str_eq(chunk, CT_STR("body")));
    FUZZ_CHECK(ct_obj_body_next(obj, &pos, 0, &chunk) == CT_OBJ_BODY_END);
    ct_obj_release(&obj);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    /* the old one unlinked, alive while the new one shares its body */
    FUZZ_CHECK(st.keys == 1 && st.replaced == 1 && st.objects == 2);
}

/* Store RESP for A under A's key and look it up with A and B. */
static void check_store(const struct ct_http_msg *resp, const struct ct_http_msg *a,
                        const struct ct_http_msg *b, const struct ct_cache_policy_opts *po,
                        const struct ct_cache_fresh *f, struct ct_str vkey, ct_time_t now)
{
    size_t empty;
    struct ct_cache *c = fz_cache_new(8u << 20, 4, 0, &empty);
    char head[MAX_INPUT + 64];
    struct ct_str tags[CT_CACHE_TAGS_MAX];
    const struct ct_http_field *host = ct_http_msg_find(a, CT_HDR_HOST, NULL);
    struct fz_key k;
    fz_key(&k, host ? host->value : CT_STR("example.com"), a->target);
    bool validator = (f->flags & CT_CACHE_F_VALIDATOR) != 0;
    struct ct_obj_meta m = {
        .status = resp->status,
        .head = ct_str_make(head, render_head(resp, po, head, sizeof(head))),
        .etag = first_value(resp, CT_HDR_ETAG),
        .last_modified = first_value(resp, CT_HDR_LAST_MODIFIED),
        .date = first_value(resp, CT_HDR_DATE),
        .vary = vkey,
        .response_time = f->response_time,
        .initial_age = f->initial_age,
        .ttl = (double)f->lifetime,
        .grace = f->stale_while_revalidate > 0 ? (double)f->stale_while_revalidate : 0,
        .keep = validator ? 3600 : 0,
        .tags = tags,
        .ntags = tags_of(resp, tags),
    };
    FUZZ_CHECK(fz_store(c, &k.key, &m, CT_STR("body"), f->response_time));
    struct ct_obj *obj = NULL;
    enum ct_cache_lookup r = fz_look(c, &k.key, vkey, ct_cache_vary_match_cb, (void *)a, now, &obj);
    double ttl = ct_cache_policy_ttl(f, now);
    if (obj) {
        FUZZ_CHECK(ct_obj_status(obj) == resp->status);
        FUZZ_CHECK(!isnan(ct_obj_ttl_left(obj, now)) && ct_obj_age(obj, now) >= 0);
        struct ct_str got[CT_CACHE_TAGS_MAX];
        char buf[MAX_INPUT];
        FUZZ_CHECK(ct_obj_tags(obj, got, CT_CACHE_TAGS_MAX, buf, sizeof(buf)) <= m.ntags);
        ct_obj_release(&obj);
    }
    /* away from the edge, where the store's float age may round the other way */
    if (ttl > 1)
        FUZZ_CHECK(r == CT_CACHE_HIT);
    else if (ttl < -1)
        FUZZ_CHECK(r != CT_CACHE_HIT);
    enum ct_cache_lookup rb =
        fz_look(c, &k.key, vkey, ct_cache_vary_match_cb, (void *)b, now, NULL);
    if (r == CT_CACHE_HIT && ct_cache_vary_match(vkey, b))
        FUZZ_CHECK(rb == CT_CACHE_HIT);
    if (!ct_cache_vary_match(vkey, b))
        FUZZ_CHECK(rb == CT_CACHE_MISS);
    if (r == CT_CACHE_HIT)
        check_304(c, &k, &m, a, now);
    if (m.ntags > 0 && r == CT_CACHE_HIT) {
        FUZZ_CHECK(ct_cache_purge_tag(c, tags[0], CT_CACHE_PURGE_HARD, now) >= 1);
        while (ct_cache_reclaim(c, CT_CACHE_RECLAIM_RUN) > 0)
            ;
        FUZZ_CHECK(fz_look(c, &k.key, vkey, ct_cache_vary_match_cb, (void *)a, now, NULL) ==
                   CT_CACHE_MISS);
    }
    fz_cache_drain(&c, &k, 1, empty);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > MAX_INPUT)
        return 0;
    struct ct_cache_policy_opts po;
    opts_of(data[0], &po);
    ct_time_t resp_time = FZ_T0, req_time = FZ_T0 - (data[1] & 15);
    ct_time_t now = FZ_T0 + (data[1] >> 4) * 37;
    const char *in = (const char *)data + 2;
    size_t len = size - 2, used;

    struct ct_http_parser *pr, *pa, *pb, *pd;
    const struct ct_http_msg *resp = parse_head(CT_HTTP_RESPONSE, in, len, &pr, &used);
    in += used;
    len -= used;
    const struct ct_http_msg *a = parse_head(CT_HTTP_REQUEST, in, len, &pa, &used);
    in += used;
    len -= used;
    const struct ct_http_msg *b = parse_head(CT_HTTP_REQUEST, in, len, &pb, &used);
    static const char dflt[] = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";
    const struct ct_http_msg *d = parse_head(CT_HTTP_REQUEST, dflt, sizeof(dflt) - 1, &pd, &used);
    FUZZ_CHECK(d != NULL);
    if (a == NULL)
        a = d;
    if (b == NULL)
        b = a;
    if (resp == NULL)
        goto out;

    enum ct_cache_store st = ct_cache_policy_storable(a, resp, &po);
    FUZZ_CHECK(st >= CT_CACHE_STORE_OK && st < CT_CACHE_STORE__COUNT);
    FUZZ_CHECK(strcmp(ct_cache_store_detail(st), "unknown") != 0);
    struct ct_cc cc;
    enum ct_cache_cc_src src = ct_cache_policy_resp_cc(resp, &po, &cc);
    FUZZ_CHECK(src >= CT_CACHE_CC_NONE && src <= CT_CACHE_CC_OPERATOR);
    struct ct_cache_fresh f;
    check_fresh(resp, a, &po, req_time, resp_time, now, &f);
    check_cond(resp, a, &po, resp_time);

    char *ka = NULL, *kb = NULL;
    size_t la = 0, lb = 0;
    bool star = ct_cache_vary_is_star(resp);
    FUZZ_CHECK(st != CT_CACHE_STORE_OK || !star);
    FUZZ_CHECK((ct_cache_vary_key(resp, a, &ka, &la) == CT_OK) == !star);
    if (!star) {
        FUZZ_CHECK(ct_cache_vary_key(resp, b, &kb, &lb) == CT_OK);
        struct ct_str vka = ct_str_make(ka, la), vkb = ct_str_make(kb, lb);
        FUZZ_CHECK(ct_cache_vary_match(vka, a));
        FUZZ_CHECK(ct_cache_vary_match(vka, b) == ct_str_eq(vka, vkb));
        if (st == CT_CACHE_STORE_OK)
            check_store(resp, a, b, &po, &f, vka, now);
    }
    free(ka);
    free(kb);
out:
    ct_http_parser_free(&pr);
    ct_http_parser_free(&pa);
    ct_http_parser_free(&pb);
    ct_http_parser_free(&pd);
    return 0;
}
