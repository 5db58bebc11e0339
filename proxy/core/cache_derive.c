/*
 * proxy/core/cache_derive.c: answers in one content coding from a variant
 * stored in another (issue 18; what and why in cache_derive.h).
 *
 * The decoded body leaves through the protocol's origin-response calls
 * (frame_response, send_head, send_body, send_end), as a body cachet makes
 * on its way: HTTP/1.1 chunks it, HTTP/2 sends DATA frames without a
 * content-length, and neither protocol knows it came from an object. One
 * piece of the object (DERIVE_IN) is decoded at a time into output pieces
 * of DERIVE_OUT bytes, and nothing more is decoded while the protocol says
 * its output is full: ct_req_drained() (fetch.c) resumes us.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "common/log.h"
#include "http/coding/coding.h"
#include "http/http_ae.h"
#include "http/http_hdrindex.h"
#include "proxy/core/cache_derive.h"
#include "proxy/core/cache_int.h"
#include "proxy/core/proto.h"
#include "proxy/stats/stats.h"

#define DERIVE_IN (16 * 1024)
#define DERIVE_OUT (16 * 1024)

struct ct_derive {
    unsigned magic;
#define CT_DERIVE_MAGIC 0xde41fe01u
    struct ct_obj *obj; /* the stored representation (a reference) */
    struct ct_obj_body_pos pos;
    struct ct_str in;   /* what is left of the piece being decoded (obj's memory) */
    bool in_end;        /* the object's body is all read */
    struct ct_codec *dec;
    enum ct_coding from; /* the stored coding dec undoes */
    struct evbuffer *out;
    struct ct_http_field *stored; /* the stored fields (views into obj) and Age */
    struct ct_ce_head *head;      /* the decoded head (fields for the one sent) */
    struct ct_http_field *sent;   /* head's fields and Content-Length / -Range */
    struct ct_http_msg msg;       /* the head sent */
    uint64_t skip;                /* a range: decoded bytes to drop first */
    uint64_t left;                /* ... then to send; UINT64_MAX: all */
    char age[24];
    char clen[24];
    char crange[96];
};

void ct_derive_free(struct ct_derive **dp)
{
    struct ct_derive *d = *dp;
    if (d == NULL)
        return;
    CT_CHECK_OBJ(d, CT_DERIVE_MAGIC);
    ct_obj_release(&d->obj);
    ct_codec_free(&d->dec);
    if (d->out)
        evbuffer_free(d->out);
    ct_ce_head_free(&d->head);
    free(d->sent);
    free(d->stored);
    d->magic = 0;
    CT_FREE(dp);
}

/* The strong ETag an identity decoding of OBJ gives back (its stored W/"x"
 * as "x", a view into OBJ) when cachet weakened it; empty otherwise. */
static struct ct_str origin_etag(const struct ct_obj *obj)
{
    struct ct_stored_blk blk;
    struct ct_str wire, et = ct_obj_etag(obj);
    CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
    if (!(blk.flags & CT_STORED_WEAKENED) || et.len < 4 || memcmp(et.p, "W/", 2) != 0)
        return CT_STR_NULL;
    return ct_str_make(et.p + 2, et.len - 2);
}

/* The request as the client sent it: cache_req.c replaces Accept-Encoding
 * by the class before the lookup, and what else the client accepts is in
 * the original. */
static const struct ct_http_msg *client_msg(const struct ct_req *r)
{
    const struct ct_creq *cr = r->cr;
    return r->msg == &cr->ae_msg && cr->ae_orig ? cr->ae_orig : r->msg;
}

static bool req_no_transform(const struct ct_req *r)
{
    struct ct_cc cc;
    ct_cc_from_msg(&cc, r->msg, CT_HDR_CACHE_CONTROL);
    return (cc.flags & CT_CC_NO_TRANSFORM) != 0;
}

/* The stored head of OBJ as a message: its fields (views into OBJ) and Age,
 * into d->stored. False if the head has no field index. */
static bool stored_msg(struct ct_derive *d, struct ct_http_msg *msg)
{
    struct ct_stored_blk blk;
    struct ct_str wire;
    struct ct_hdrindex hx;
    CT_ASSERT(ct_stored_blk_get(d->obj, &blk, &wire));
    if (!ct_stored_index(&blk, wire, &hx))
        return false;
    unsigned n = ct_hdrindex_count(&hx), k = 0;
    d->stored = ct_xcalloc((size_t)n + 1, sizeof(*d->stored));
    for (unsigned i = 0; i < n; i++) {
        struct ct_hdrindex_field x = ct_hdrindex_field(&hx, i);
        /* The stored Via ends with ours: HTTP/1 adds ours to what it is
         * given (proxy/upstream/wire.c), so it goes without it. */
        if (x.id == CT_HDR_VIA && ct_str_eq(x.value, CT_STR("1.1 cachet")))
            continue;
        if (x.id == CT_HDR_VIA && x.value.len > 12 &&
            ct_str_eq(ct_str_make(x.value.p + x.value.len - 12, 12), CT_STR(", 1.1 cachet")))
            x.value.len -= 12;
        /* the origin's spelling: HTTP/1.1 sends it as is (h2 lower-cases) */
        d->stored[k++] = (struct ct_http_field){
            .name = ct_hdrindex_wire_name(&hx, i), .value = x.value, .id = x.id};
    }
    n = k;
    double a = ct_obj_age(d->obj, ct_time_real());
    char *e = ct_put_i64(d->age, a > 0 ? (int64_t)a : 0);
    d->stored[n] = (struct ct_http_field){CT_STR("Age"), ct_str_make(d->age, (size_t)(e - d->age)),
                                          CT_HDR_AGE};
    *msg = (struct ct_http_msg){.kind = CT_HTTP_RESPONSE,
                                .status = ct_hdrindex_status(&hx),
                                .version = 11,
                                .framing = CT_FRAME_LENGTH,
                                .content_length = ct_obj_body_len(d->obj)};
    ct_http_msg_set_fields(msg, d->stored, (size_t)n + 1);
    return true;
}

static bool msg_no_transform(const struct ct_http_msg *msg)
{
    struct ct_cc cc;
    ct_cc_from_msg(&cc, msg, CT_HDR_CACHE_CONTROL);
    return (cc.flags & CT_CC_NO_TRANSFORM) != 0;
}

/* A derive of OBJ (it takes the reference) with the stored head in SM, or
 * NULL (OBJ released) if the head has no field index. Made before anything
 * is decided, so what is decided on it cannot fail afterwards (an answer
 * counted as a hit that then passes). */
static struct ct_derive *derive_new(struct ct_obj *obj, struct ct_http_msg *sm)
{
    struct ct_derive *d = ct_xcalloc(1, sizeof(*d));
    d->magic = CT_DERIVE_MAGIC;
    d->obj = obj;
    if (!stored_msg(d, sm))
        ct_derive_free(&d);
    return d;
}

/* The decoded answer is out: R ends (GONE). */
static enum ct_req_next derive_end(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    ct_derive_free(&cr->derive);
    ct_req_finish(r);
    return CT_REQ_GONE;
}

/* The decode_* counters (by the stored coding): bytes through DEC since
 * IN0 / OUT0 and this thread's CPU time since T0. Decoded deliveries and
 * their Range's counting pass are counted here; a recoding
 * (store_transcoded) is counted once, as the compression it is, in the
 * compress_* counters of its target (recode()). */
static void count_decode(struct ct_req *r, enum ct_coding from, const struct ct_codec *dec,
                         uint64_t in0, uint64_t out0, uint64_t t0)
{
    struct ct_stats *st = r->w->stats;
    ct_stats_add(&st->decode_bytes_in[from], ct_codec_bytes_in(dec) - in0);
    ct_stats_add(&st->decode_bytes_out[from], ct_codec_bytes_out(dec) - out0);
    ct_stats_add(&st->decode_cpu_us[from], ct_thread_cpu_us() - t0);
}

static enum ct_req_next decode_run(struct ct_req *r, struct ct_derive *d);

/* DECODE (req_step.h): decode on until the body is out (GONE), the output
 * is full (PARK: ct_cache_derive_drained() runs R again), or the decoder
 * fails (GONE: the client's message ends truncated, its head is out). Each
 * run is counted (count_decode) before the decoder may go. */
enum ct_req_next ct_step_decode(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    struct ct_derive *d = cr->derive;
    if (d->dec == NULL)
        return derive_end(r); /* a head only (304, HEAD) */
    return decode_run(r, d);
}

static enum ct_req_next decode_run(struct ct_req *r, struct ct_derive *d)
{
    struct ct_creq *cr = r->cr;
    uint64_t t0 = ct_thread_cpu_us(), in0 = ct_codec_bytes_in(d->dec),
             out0 = ct_codec_bytes_out(d->dec);
    for (;;) {
        if (r->proto->output_full(r)) {
            count_decode(r, d->from, d->dec, in0, out0, t0);
            return CT_REQ_PARK;
        }
        if (d->in.len == 0 && !d->in_end) {
            struct ct_str chunk;
            enum ct_obj_body got = ct_obj_body_next(d->obj, &d->pos, DERIVE_IN, &chunk);
            if (got == CT_OBJ_BODY_DATA)
                d->in = chunk;
            else if (got == CT_OBJ_BODY_END)
                d->in_end = true;
            else
                CT_WRONG("a complete object's body is not all there");
            if (got == CT_OBJ_BODY_DATA && chunk.len == 0)
                continue;
        }
        struct evbuffer_iovec o;
        if (evbuffer_reserve_space(d->out, DERIVE_OUT, &o, 1) < 1)
            CT_WRONG("evbuffer_reserve_space failed");
        size_t took = d->in.len, wrote = 0;
        enum ct_codec_rc rc =
            ct_codec_run(d->dec, d->in.p, &took, o.iov_base, o.iov_len, &wrote, d->in_end);
        o.iov_len = wrote;
        evbuffer_commit_space(d->out, &o, 1);
        d->in = ct_str_make(d->in.p + took, d->in.len - took);
        size_t k = (size_t)CT_MIN((uint64_t)wrote, d->skip);
        evbuffer_drain(d->out, k);
        d->skip -= k;
        size_t n = (size_t)CT_MIN((uint64_t)(wrote - k), d->left);
        if (n) {
            r->proto->send_body(r, d->out, n);
            r->body_out += n; /* access log $body_bytes_sent */
            if (d->left != UINT64_MAX)
                d->left -= n;
        }
        evbuffer_drain(d->out, evbuffer_get_length(d->out));
        if (d->left == 0 && rc != CT_CODEC_ERROR)
            rc = CT_CODEC_DONE; /* the range is out */
        if (rc == CT_CODEC_ERROR || rc == CT_CODEC_DONE)
            count_decode(r, d->from, d->dec, in0, out0, t0);
        if (rc == CT_CODEC_ERROR) {
            CT_WARN("w%u c%llu %s: stored %.*s does not decode: %s", r->w->id,
                    (unsigned long long)r->conn_id, r->peer, (int)r->msg->target.len,
                    r->msg->target.p, ct_codec_error(d->dec));
            ct_derive_free(&cr->derive);
            ct_req_goto(r, CT_STEP_DONE);
            r->proto->flush(r);
            r->proto->fail(r, CT_CLOSE_ORIGIN_TRUNC);
            return CT_REQ_GONE;
        }
        if (rc == CT_CODEC_DONE) {
            r->proto->send_end(r);
            return derive_end(r);
        }
    }
}

bool ct_cache_derive_drained(struct ct_req *r)
{
    struct ct_creq *cr = r->cr;
    if (cr->derive == NULL || r->phase != CT_RP_SEND)
        return false;
    if (r->step == CT_STEP_DECODE)
        ct_req_run(r);
    return true;
}

/* The decoded body's length: one decoding pass that keeps nothing (the
 * price of a Range on a derived representation); UINT64_MAX if it does
 * not decode. */
static uint64_t decoded_len(struct ct_req *r, struct ct_obj *obj, enum ct_coding c)
{
    uint64_t t0 = ct_thread_cpu_us();
    struct ct_codec *cd = ct_codec_new(c, CT_CODEC_DECODE, CT_CODEC_LEVEL_DEFAULT, 0);
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str in = CT_STR_NULL;
    bool end = false;
    uint64_t total = 0;
    char *tmp = ct_xmalloc(DERIVE_OUT);
    for (;;) {
        if (in.len == 0 && !end) {
            enum ct_obj_body got = ct_obj_body_next(obj, &pos, DERIVE_IN, &in);
            if (got == CT_OBJ_BODY_END)
                end = true;
            else if (got != CT_OBJ_BODY_DATA)
                break;
        }
        size_t took = in.len, wrote = 0;
        enum ct_codec_rc rc = ct_codec_run(cd, in.p, &took, tmp, DERIVE_OUT, &wrote, end);
        in = ct_str_make(in.p + took, in.len - took);
        total += wrote;
        if (rc == CT_CODEC_DONE || rc == CT_CODEC_ERROR) {
            if (rc == CT_CODEC_ERROR)
                total = UINT64_MAX;
            break;
        }
    }
    free(tmp);
    count_decode(r, c, cd, 0, 0, t0);
    ct_codec_free(&cd);
    return total;
}

/* d->msg: the decoded head, with a single byte range of the decoded body
 * when R asks for one (206 or 416; RFC 9110 §14), and then its length. */
static void plan_range(struct ct_req *r, struct ct_derive *d, enum ct_coding from)
{
    const struct ct_http_msg *hm = &d->head->msg;
    size_t n = hm->nfields;
    d->sent = ct_xcalloc(n + 2, sizeof(*d->sent));
    memcpy(d->sent, hm->fields, n * sizeof(*d->sent));
    d->msg = *hm;
    const struct ct_http_field *rf = ct_http_msg_find(r->msg, CT_HDR_RANGE, NULL);
    uint64_t len, a, b;
    int rng;
    /* If-Range names a strong validator or a date (§13.1.5): a decoded
     * representation has at most the origin's strong ETag (origin_etag),
     * so anything else sends the whole. */
    const struct ct_http_field *ir = ct_http_msg_find(r->msg, CT_HDR_IF_RANGE, NULL);
    struct ct_str strong = origin_etag(d->obj);
    bool if_range = ir == NULL || (strong.len && ct_cache_etag_match(ir->value, strong, false));
    if (r->msg->method == CT_METHOD_GET && rf && if_range &&
        (len = decoded_len(r, d->obj, from)) != UINT64_MAX &&
        (rng = ct_range_parse(rf->value, len, &a, &b)) != 0) {
        if (rng < 0) {
            d->msg.status = 416;
            d->msg.framing = CT_FRAME_NONE;
            snprintf(d->crange, sizeof(d->crange), "bytes */%llu", (unsigned long long)len);
        } else {
            d->msg.status = 206;
            d->skip = a;
            d->left = b - a + 1;
            d->msg.framing = CT_FRAME_LENGTH;
            d->msg.content_length = d->left;
            snprintf(d->crange, sizeof(d->crange), "bytes %llu-%llu/%llu", (unsigned long long)a,
                     (unsigned long long)b, (unsigned long long)len);
            char *e = ct_put_i64(d->clen, (int64_t)d->left);
            d->sent[n++] = (struct ct_http_field){CT_STR("Content-Length"),
                                                  ct_str_make(d->clen, (size_t)(e - d->clen)),
                                                  CT_HDR_CONTENT_LENGTH};
        }
        d->msg.reason = CT_STR_NULL;
        d->sent[n++] = (struct ct_http_field){CT_STR("Content-Range"), ct_str_c(d->crange),
                                              CT_HDR_CONTENT_RANGE};
    }
    ct_http_msg_set_fields(&d->msg, d->sent, n);
}

/* Answer R from D's object (D taken; SM its stored head) coded in FROM,
 * decoded. */
static void decoded(struct ct_req *r, struct ct_derive *d, const struct ct_http_msg *sm,
                    enum ct_coding from, struct ct_str cstatus)
{
    struct ct_creq *cr = r->cr;
    struct ct_obj *obj = d->obj;
    d->head = ct_ce_head_new(sm, CT_CODING_IDENTITY, true);
    struct ct_http_msg *hm = &d->head->msg;
    /* A Range of the decoded body costs a whole decoding pass
     * (decoded_len): answered if asked, not advertised, so a download
     * manager does not split one decoded transfer into many ranges. */
    size_t k = 0;
    for (size_t i = 0; i < hm->nfields; i++)
        if (hm->fields[i].id != CT_HDR_ACCEPT_RANGES)
            d->head->fields[k++] = hm->fields[i];
    ct_http_msg_set_fields(hm, d->head->fields, k);
    /* Its validators are the decoded representation's: the origin's strong
     * ETag when cachet only weakened it, else a weak one. */
    struct ct_str strong = origin_etag(obj);
    for (size_t i = 0; strong.len && i < hm->nfields; i++)
        if (hm->fields[i].id == CT_HDR_ETAG)
            d->head->fields[i].value = strong;
    struct ct_cache_validators v = {
        .etag = strong.len      ? strong
                : d->head->etag ? ct_str_c(d->head->etag)
                                : ct_obj_etag(obj),
        .last_modified = ct_obj_last_modified(obj),
        .response_time = ct_obj_response_time(obj),
    };
    d->left = UINT64_MAX;
    d->msg = *hm;
    if (hm->status == 200 && ct_cache_policy_cond(r->msg, &v) == 304) {
        d->msg.status = 304;
        d->msg.reason = CT_STR_NULL;
        d->msg.framing = CT_FRAME_NONE;
    } else if (hm->status == 200) {
        plan_range(r, d, from);
    }
    hm = &d->msg;
    bool body = hm->framing != CT_FRAME_NONE && r->msg->method != CT_METHOD_HEAD;
    ct_derive_free(&cr->derive);
    cr->derive = d;
    cr->derive_free = ct_derive_free; /* req.c ends it with the request */
    r->status = hm->status;
    ct_req_respond(r);
    r->head_sent = true;
    (void)r->proto->frame_response(r, hm);
    struct ct_fwd_resp_extra x = {.cache_status = cstatus};
    r->proto->send_head(r, hm, &x, false);
    /* The body is the DECODE step's (d->dec NULL: none), run by the loop
     * once the lookup step that called us returns. */
    ct_req_goto(r, CT_STEP_DECODE);
    if (!body)
        return;
    d->dec = ct_codec_new(from, CT_CODEC_DECODE, CT_CODEC_LEVEL_DEFAULT, 0);
    CT_ASSERT(d->dec != NULL);
    d->from = from;
    d->out = evbuffer_new();
    d->pos = (struct ct_obj_body_pos)CT_OBJ_BODY_POS_INIT;
}

/* "cachet; hit; ...; detail=WHAT-CODING" into BUF. */
static struct ct_str status_of(char *buf, size_t cap, struct ct_str base, const char *what,
                               enum ct_coding c)
{
    int n = snprintf(buf, cap, "%.*s; detail=%s-%s", (int)base.len, base.p, what,
                     ct_coding_name(c));
    return ct_str_make(buf, n < 0 ? 0 : CT_MIN((size_t)n, cap - 1));
}

bool ct_cache_derive_hit(struct ct_req *r, struct ct_obj *obj, const struct ct_stored_blk *blk,
                         struct ct_str cstatus, bool *refuse)
{
    *refuse = false;
    enum ct_coding y = (enum ct_coding)(blk->flags & CT_STORED_CODING_MASK);
    /* The request's one Accept-Encoding field is the stored coding's name:
     * it takes it, and nothing needs parsing. With compression off no
     * class was chosen before the lookup (cr->ae_class is NONE), so every
     * hit on a coded object (the origin's own gzip) comes here, and this is
     * what cachet's own fetches and simple clients send. */
    const struct ct_http_msg *cm = client_msg(r);
    const struct ct_http_field *f = ct_http_msg_find(cm, CT_HDR_ACCEPT_ENCODING, NULL);
    if (f && ct_str_eq(f->value, ct_str_c(ct_coding_name(y))) &&
        ct_http_msg_find(cm, CT_HDR_ACCEPT_ENCODING, f) == NULL)
        return false;
    struct ct_ae ae;
    ct_ae_init(&ae);
    ct_ae_from_msg(&ae, cm);
    if (ct_ae_accepts(&ae, y))
        return false;
    struct ct_http_msg sm;
    bool nt = req_no_transform(r);
    struct ct_derive *d = nt ? NULL : derive_new(ct_obj_ref(obj), &sm);
    nt = nt || (d && msg_no_transform(&sm));
    if (nt || !ct_ae_accepts(&ae, CT_CODING_IDENTITY)) {
        ct_derive_free(&d);
        *refuse = true;
        return false;
    }
    if (d == NULL)
        return false;
    char buf[160];
    decoded(r, d, &sm, y, status_of(buf, sizeof(buf), cstatus, "decoded", y));
    return true;
}

/* A fresh complete variant of R's key stored in coding Y (looked up as a
 * request of class Y), or NULL. */
static struct ct_obj *probe_variant(struct ct_req *r, enum ct_coding y, ct_time_t now)
{
    struct ct_creq *cr = r->cr;
    const struct ct_http_msg *req = r->msg;
    struct ct_http_field *f = ct_xcalloc(req->nfields + 1, sizeof(*f));
    size_t n = 0;
    for (size_t i = 0; i < req->nfields; i++)
        if (req->fields[i].id != CT_HDR_ACCEPT_ENCODING)
            f[n++] = req->fields[i];
    f[n++] = (struct ct_http_field){CT_STR("Accept-Encoding"), ct_str_c(ct_coding_name(y)),
                                    CT_HDR_ACCEPT_ENCODING};
    struct ct_http_msg pm = *req;
    ct_http_msg_set_fields(&pm, f, n);
    struct ct_cache_lookup_req lr = {
        .key = &cr->key,
        .match = ct_cache_vary_match_cb,
        .match_arg = &pm,
        .no_insert = true,
        .uncounted = true, /* R's own lookup is the one counted */
    };
    struct ct_cache_lookup_res res = {0};
    struct ct_obj *obj = NULL;
    if (ct_cache_lookup(r->w->wc->cache, &lr, now, &res) == CT_CACHE_HIT)
        obj = ct_obj_ref(res.obj);
    ct_cache_lookup_res_release(&res);
    free(f);
    if (obj == NULL)
        return NULL;
    struct ct_stored_blk blk;
    struct ct_str wire;
    CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
    enum ct_cache_use use = ct_cache_policy_use(&blk.fresh, r->msg, ct_req_popts(r), now);
    if (ct_obj_state(obj) != CT_OBJ_COMPLETE ||
        (blk.flags & CT_STORED_CODING_MASK) != (uint32_t)y || use != CT_CACHE_USE_FRESH)
        ct_obj_release(&obj);
    return obj;
}

/* Feed MID[0..N) to ENC (LAST: the stream ends there) and append what it
 * makes to FILL. CT_OK, CT_EPROTO (the encoder failed) or the store's
 * error (over max_object_size, no memory). */
static int encode_into(struct ct_codec *enc, const char *mid, size_t n, bool last,
                       struct ct_obj *fill, char *out)
{
    size_t off = 0;
    for (;;) {
        size_t took = n - off, wrote = 0;
        enum ct_codec_rc rc = ct_codec_run(enc, mid + off, &took, out, DERIVE_OUT, &wrote, last);
        off += took;
        int rc2 = wrote ? ct_obj_append(fill, out, wrote) : CT_OK;
        if (rc2 != CT_OK)
            return rc2;
        if (rc == CT_CODEC_ERROR)
            return CT_EPROTO;
        if (rc == CT_CODEC_DONE || (rc == CT_CODEC_NEED_INPUT && off == n && !last))
            return CT_OK;
    }
}

/* SRC's body, coded FROM, recoded TO into FILL (its head stored already).
 * FROM identity: SRC's bytes go to the encoder as they are. CT_OK when all
 * of it went in. */
static int recode(struct ct_req *r, struct ct_obj *src, enum ct_coding from, enum ct_coding to,
                  struct ct_obj *fill)
{
    bool plain = from == CT_CODING_IDENTITY;
    struct ct_codec *dec =
        plain ? NULL : ct_codec_new(from, CT_CODEC_DECODE, CT_CODEC_LEVEL_DEFAULT, 0);
    struct ct_codec *enc = ct_encoder_new(&r->w->cf->compression, to, 0);
    char *mid = ct_xmalloc(DERIVE_OUT), *out = ct_xmalloc(DERIVE_OUT);
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str in = CT_STR_NULL;
    bool end = false, done = false;
    uint64_t t0 = ct_thread_cpu_us();
    int rc = (dec || plain) && enc ? CT_OK : CT_EPROTO;
    while (rc == CT_OK) {
        if (in.len == 0 && !end) {
            enum ct_obj_body got = ct_obj_body_next(src, &pos, DERIVE_IN, &in);
            if (got == CT_OBJ_BODY_END)
                end = true;
            else if (got != CT_OBJ_BODY_DATA)
                break; /* a complete object is all there: not reached */
        }
        if (plain) {
            rc = encode_into(enc, in.len ? in.p : "", in.len, end, fill, out);
            in = CT_STR_NULL;
            if ((done = end))
                break;
            continue;
        }
        size_t took = in.len, n = 0;
        enum ct_codec_rc drc = ct_codec_run(dec, in.p, &took, mid, DERIVE_OUT, &n, end);
        in = ct_str_make(in.p + took, in.len - took);
        if (drc == CT_CODEC_ERROR)
            rc = CT_EPROTO;
        else
            rc = encode_into(enc, mid, n, drc == CT_CODEC_DONE, fill, out);
        done = drc == CT_CODEC_DONE;
        if (done)
            break;
    }
    if (rc == CT_OK && !done)
        rc = CT_EPROTO; /* the body ended before the decoder's end */
    if (rc == CT_OK) {
        /* Counted once, as a compression into TO (its decoder's time is in
         * compress_cpu_us; decode_* are the decoded deliveries'). */
        struct ct_stats *st = r->w->stats;
        ct_stats_add(&st->compress_objects[to], 1);
        ct_stats_add(&st->compress_bytes_in[to], ct_codec_bytes_in(enc));
        ct_stats_add(&st->compress_bytes_out[to], ct_codec_bytes_out(enc));
        ct_stats_add(&st->compress_cpu_us[to], ct_thread_cpu_us() - t0);
    }
    free(mid);
    free(out);
    ct_codec_free(&dec);
    ct_codec_free(&enc);
    return rc;
}

/* compression.store_transcoded: OBJ (coded Y, a reference, taken) recoded
 * into FETCH (R's class's BUSY object, taken), stored, and R answered from
 * it. False if it could not be (FETCH abandoned: R's request then goes to
 * the origin unstored). */
static bool transcoded(struct ct_req *r, struct ct_obj *obj, enum ct_coding y,
                       struct ct_obj **fetch, ct_time_t now)
{
    enum ct_coding x = (enum ct_coding)r->cr->ae_class;
    struct ct_obj *fill = *fetch;
    *fetch = NULL;
    struct ct_derive probe = {.obj = obj};
    struct ct_http_msg sm;
    bool ok = stored_msg(&probe, &sm);
    struct ct_ce_head *h = ok ? ct_ce_head_new(&sm, x, true) : NULL;
    /* weakened here, or by cachet when it stored OBJ */
    bool weakened = ok && (h->etag != NULL || origin_etag(obj).len);
    ok = ok && ct_cache_store_head_of(r, fill, &h->msg, weakened, now) == CT_OK &&
         recode(r, obj, y, x, fill) == CT_OK;
    /* a hit on the recoded copy saves the origin the fetch of OBJ's, and so
     * does this answer */
    if (ok) {
        ct_obj_set_fetch_us(fill, ct_obj_fetch_us(obj));
        ct_req_log_hit(r, obj);
    }
    ct_ce_head_free(&h);
    free(probe.stored);
    ct_obj_release(&obj);
    if (!ok) {
        CT_WARN("w%u c%llu %s: %.*s: recoding %s to %s failed", r->w->id,
                (unsigned long long)r->conn_id, r->peer, (int)r->msg->target.len,
                r->msg->target.p, ct_coding_name(y), ct_coding_name(x));
        ct_obj_abandon(fill, now, 0);
        ct_obj_release(&fill);
        return false;
    }
    ct_obj_complete(fill, ct_time_real());
    ct_cache_lookup_answered(r->w->wc->cache, &r->cr->key, NULL); /* a hit (its fill is used) */
    char buf[96];
    snprintf(buf, sizeof(buf), "cachet; hit; detail=transcoded-%s", ct_coding_name(y));
    r->cr->cs = CT_STATS_CS_HIT;
    ct_req_to_deliver(r, fill, ct_str_c(buf)); /* takes our reference; DELIVER next */
    return true;
}

/* R's MISS lookup is answered from another variant: the store counts it
 * as the hit it is (one lookup, not a miss and a probe's hit), and R's own
 * BUSY object (if any) goes before R is answered: the answer may end R and
 * start the next pipelined request at once, whose lookup must not wait on
 * it. Failed, not abandoned, so a waiter on another worker looks again
 * (and derives too) instead of passing as uncacheable. */
static void drop_fetch(struct ct_req *r, struct ct_obj **fetch)
{
    ct_cache_lookup_answered(r->w->wc->cache, &r->cr->key, fetch);
}

/* R accepts nothing cachet offers, identity neither. 406 only if the
 * stored variants differ from R on Accept-Encoding alone (one of them, of
 * some class, is selected by R's other fields: RFC 9110 §15.5.7, there is
 * a representation and R refuses it); a Vary miss on another field
 * (Accept-Language...) is a miss like any, fetched with R's field as sent. */
static enum ct_derive_rc refuse_or_fetch(struct ct_req *r, ct_time_t now, struct ct_obj **fetch)
{
    for (int c = 0; c < CT_CODING__COUNT; c++) {
        struct ct_obj *obj = probe_variant(r, (enum ct_coding)c, now);
        if (obj) {
            ct_obj_release(&obj);
            drop_fetch(r, fetch);
            r->cr->cs = CT_STATS_CS_HIT; /* as the store and Cache-Status count it */
            return CT_DERIVE_REFUSE;
        }
    }
    return CT_DERIVE_NONE;
}

/* No coded variant to answer from: with store_transcoded, a coding class's
 * miss is encoded from the stored identity variant (an identity client was
 * first), if cachet would have compressed that response at its fill; else
 * fetched. NT: the request said no-transform. */
static enum ct_derive_rc from_identity(struct ct_req *r, ct_time_t now, struct ct_obj **fetch,
                                       bool nt)
{
    int x = r->cr->ae_class;
    if (nt || *fetch == NULL || !r->w->cf->compression.store_transcoded ||
        x == CT_CODING_IDENTITY || x == CT_CODING_NONE)
        return CT_DERIVE_NONE;
    struct ct_obj *obj = probe_variant(r, CT_CODING_IDENTITY, now);
    if (obj == NULL)
        return CT_DERIVE_NONE;
    struct ct_derive probe = {.obj = obj};
    struct ct_http_msg sm;
    bool ok = stored_msg(&probe, &sm) && ct_cache_compressible(r, &sm);
    free(probe.stored);
    if (!ok) {
        ct_obj_release(&obj);
        return CT_DERIVE_NONE;
    }
    return transcoded(r, obj, CT_CODING_IDENTITY, fetch, now) ? CT_DERIVE_ANSWERED
                                                               : CT_DERIVE_NONE;
}

enum ct_derive_rc ct_cache_derive_vary_miss(struct ct_req *r, ct_time_t now,
                                            struct ct_obj **fetch)
{
    struct ct_creq *cr = r->cr;
    const struct ct_conf_compression *cz = &r->w->cf->compression;
    if (!cz->enabled)
        return CT_DERIVE_NONE;
    struct ct_ae ae;
    ct_ae_init(&ae);
    ct_ae_from_msg(&ae, client_msg(r));
    if (cr->ae_class == CT_CODING_NONE) /* nothing offered is acceptable, identity neither */
        return refuse_or_fetch(r, now, fetch);
    bool nt = req_no_transform(r);
    for (unsigned i = 0; i < cz->pref.n; i++) {
        enum ct_coding y = (enum ct_coding)cz->pref.order[i];
        if (y == CT_CODING_IDENTITY || (int)y == cr->ae_class)
            continue;
        bool as_is = ct_ae_accepts(&ae, y);
        bool recoding = !as_is && cr->ae_class != CT_CODING_IDENTITY;
        if (!as_is && (nt || (recoding && !(cz->store_transcoded && *fetch))))
            continue; /* a coding class without its variant is fetched once and stored */
        struct ct_obj *obj = probe_variant(r, y, now);
        if (obj == NULL)
            continue;
        if (recoding) {
            struct ct_derive probe = {.obj = obj};
            struct ct_http_msg sm;
            bool ok = stored_msg(&probe, &sm) && !msg_no_transform(&sm);
            free(probe.stored);
            if (!ok) {
                ct_obj_release(&obj);
                continue;
            }
            return transcoded(r, obj, y, fetch, now) ? CT_DERIVE_ANSWERED : CT_DERIVE_NONE;
        }
        struct ct_stored_blk blk;
        struct ct_str wire;
        CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
        char base[64], buf[160];
        memcpy(base, "cachet; hit; ttl=", 17);
        *ct_put_i64(base + 17, (int64_t)ct_cache_policy_ttl(&blk.fresh, now)) = '\0';
        cr->cs = CT_STATS_CS_HIT;
        ct_req_log_hit(r, obj);
        if (as_is) {
            drop_fetch(r, fetch);
            ct_req_to_deliver(r, obj, status_of(buf, sizeof(buf), ct_str_c(base), "stored", y));
            return CT_DERIVE_ANSWERED;
        }
        struct ct_http_msg sm;
        struct ct_derive *d = derive_new(obj, &sm);
        if (d && !msg_no_transform(&sm)) {
            drop_fetch(r, fetch);
            decoded(r, d, &sm, y, status_of(buf, sizeof(buf), ct_str_c(base), "decoded", y));
            return CT_DERIVE_ANSWERED;
        }
        ct_derive_free(&d);
        cr->cs = CT_STATS_CS_NONE;
    }
    return from_identity(r, now, fetch, nt);
}
