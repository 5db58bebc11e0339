/*
 * http/http_h2msg.c: a request from an HTTP/2 field section (see
 * http_h2msg.h). RFC 9113 §8.2 (fields), §8.3 (pseudo-headers), §8.5
 * (CONNECT), checked field by field as they arrive and as a whole at the end.
 *
 * Storage: names and values are copied into one growing byte buffer and
 * remembered by offset (the buffer may move while it grows); the field
 * array of views is built once, at finish, when nothing more is added. The
 * builder owns all of it; the message's views live as long as the builder.
 *
 * Stricter than RFC 9113 alone where the request goes on to an HTTP/1
 * origin (RFC 9113 §8.2.1 lets an implementation be; the HTTP/1 side must
 * be): names must be tokens (RFC 9110 §5.1), values must not hold any CTL
 * (RFC 9110 §5.5; the HTTP/1 lexer refuses them too), and :path must be
 * what the HTTP/1 lexer accepts as a target, so nothing here can smuggle a
 * second request onto the origin connection.
 */
#include "http/http_h2msg.h"

#include <stddef.h>
#include <stdlib.h>

#include "http/http_int.h"

/* One field by offset into buf; views are made at finish. */
struct slot {
    uint32_t name_off, name_len, value_off, value_len;
    enum ct_hdr_id id;
};

struct span {
    uint32_t off, len;
    bool seen;
};

struct ct_http_h2msg {
    struct ct_http_h2msg_limits lim;
    char *buf;
    size_t buf_len, buf_cap;
    struct slot *slots;
    size_t nslots, slots_cap;
    struct ct_http_field *fields; /* built at finish */
    size_t list_size;             /* RFC 9113 §6.5.2 accounting */
    struct span method, scheme, authority, path;
    bool regular_seen; /* a regular field came: no pseudo-header may follow */
    bool trailers;
    bool finished;
    int err;
    unsigned err_status;
    const char *err_reason;
    struct ct_http_msg msg;
    /* The first storage of buf, slots and fields: a usual request head (a
     * browser's is 10-20 fields, under 1 KiB) needs no allocation but this
     * struct's (one malloc per stream instead of four; issue 14). */
    char buf0[1024];
    struct slot slots0[24];
    struct ct_http_field fields0[24];
};

/* P (holding USED elements of ELEM bytes, in the struct's own storage
 * INLINE0 or on the heap) moved to room for CAP; the new place. */
static void *grow(void *p, const void *inline0, size_t used, size_t cap, size_t elem)
{
    if (p != inline0)
        return ct_xrealloc(p, cap * elem);
    void *q = ct_xmalloc(cap * elem);
    memcpy(q, p, used * elem);
    return q;
}

static void init(struct ct_http_h2msg *b, const struct ct_http_h2msg_limits *lim)
{
    /* the head zeroed; the storage needs not be */
    memset(b, 0, offsetof(struct ct_http_h2msg, buf0));
    b->lim = lim ? *lim : (struct ct_http_h2msg_limits){64 * 1024, 100};
    b->buf = b->buf0;
    b->buf_cap = sizeof(b->buf0);
    b->slots = b->slots0;
    b->slots_cap = CT_ARRAY_LEN(b->slots0);
}

struct ct_http_h2msg *ct_http_h2msg_new(const struct ct_http_h2msg_limits *lim)
{
    ct_http_cls_init();
    struct ct_http_h2msg *b = ct_xmalloc(sizeof(*b));
    init(b, lim);
    return b;
}

/* The storage that outgrew the builder's own. */
static void free_grown(struct ct_http_h2msg *b)
{
    if (b->buf != b->buf0)
        free(b->buf);
    if (b->slots != b->slots0)
        free(b->slots);
    if (b->fields != b->fields0)
        free(b->fields);
}

void ct_http_h2msg_reset(struct ct_http_h2msg *b, const struct ct_http_h2msg_limits *lim)
{
    free_grown(b);
    init(b, lim);
}

void ct_http_h2msg_free(struct ct_http_h2msg **bp)
{
    struct ct_http_h2msg *b = *bp;
    if (b == NULL)
        return;
    free_grown(b);
    CT_FREE(bp);
}

static int fail(struct ct_http_h2msg *b, int err, unsigned status, const char *reason)
{
    b->err = err;
    b->err_status = status;
    b->err_reason = reason;
    return err;
}

static uint32_t keep(struct ct_http_h2msg *b, struct ct_str s)
{
    if (b->buf_len + s.len > b->buf_cap) {
        b->buf_cap = CT_MAX(b->buf_cap * 2, b->buf_len + s.len + 256);
        b->buf = grow(b->buf, b->buf0, b->buf_len, b->buf_cap, 1);
    }
    uint32_t off = (uint32_t)b->buf_len;
    if (s.len)
        memcpy(b->buf + off, s.p, s.len);
    b->buf_len += s.len;
    return off;
}

static struct ct_str view(const struct ct_http_h2msg *b, uint32_t off, uint32_t len)
{
    return ct_str_make(b->buf + off, len);
}

/* RFC 9113 §8.2.1: no 0x00-0x20, no upper case, no 0x7f-0xff, no colon;
 * plus RFC 9110 §5.1: a token, or HTTP/1 could not carry it. */
static bool name_ok(struct ct_str n)
{
    if (n.len == 0)
        return false;
    for (size_t i = 0; i < n.len; i++) {
        unsigned char c = (unsigned char)n.p[i];
        if (!(ct_http_cls[c] & CT_CH_TCHAR) || (c >= 'A' && c <= 'Z'))
            return false;
    }
    return true;
}

/* RFC 9113 §8.2.1: no NUL, CR or LF anywhere, no SP/HTAB at either end;
 * RFC 9110 §5.5: no other CTL either. */
static bool value_ok(struct ct_str v)
{
    for (size_t i = 0; i < v.len; i++)
        if (!(ct_http_cls[(unsigned char)v.p[i]] & CT_CH_FV))
            return false;
    return v.len == 0 || (!(ct_http_cls[(unsigned char)v.p[0]] & CT_CH_WS) &&
                          !(ct_http_cls[(unsigned char)v.p[v.len - 1]] & CT_CH_WS));
}

/* RFC 9113 §8.2.2: fields that only mean something to one HTTP/1 hop. */
static const char *connection_specific(enum ct_hdr_id id, struct ct_str value)
{
    switch (id) {
    case CT_HDR_CONNECTION: return "connection field";
    case CT_HDR_KEEP_ALIVE: return "keep-alive field";
    case CT_HDR_PROXY_CONNECTION: return "proxy-connection field";
    case CT_HDR_TRANSFER_ENCODING: return "transfer-encoding field";
    case CT_HDR_UPGRADE: return "upgrade field";
    case CT_HDR_TE:
        return ct_str_eq_ci(value, CT_STR("trailers")) ? NULL : "te other than trailers";
    default: return NULL;
    }
}

static int add_pseudo(struct ct_http_h2msg *b, struct ct_str name, struct ct_str value)
{
    /* RFC 9113 §8.3: all pseudo-headers before the regular fields, none in
     * trailers, only the request ones, each once. */
    if (b->trailers)
        return fail(b, CT_EPROTO, 400, "pseudo-header in trailers");
    if (b->regular_seen)
        return fail(b, CT_EPROTO, 400, "pseudo-header after a regular field");
    struct span *s;
    if (ct_str_eq(name, CT_STR(":method")))
        s = &b->method;
    else if (ct_str_eq(name, CT_STR(":scheme")))
        s = &b->scheme;
    else if (ct_str_eq(name, CT_STR(":authority")))
        s = &b->authority;
    else if (ct_str_eq(name, CT_STR(":path")))
        s = &b->path;
    else if (ct_str_eq(name, CT_STR(":status")))
        return fail(b, CT_EPROTO, 400, "response pseudo-header in a request");
    else
        return fail(b, CT_EPROTO, 400, "unknown pseudo-header");
    if (s->seen)
        return fail(b, CT_EPROTO, 400, "duplicate pseudo-header");
    if (!value_ok(value))
        return fail(b, CT_EPROTO, 400, "invalid pseudo-header value");
    *s = (struct span){keep(b, value), (uint32_t)value.len, true};
    return CT_OK;
}

int ct_http_h2msg_add(struct ct_http_h2msg *b, struct ct_str name, struct ct_str value)
{
    if (b->err)
        return b->err;
    CT_ASSERT(!b->finished || b->trailers);
    b->list_size += name.len + value.len + 32;
    if (b->list_size > b->lim.max_list_size)
        return fail(b, CT_ELIMIT, 431, "header list too large");
    if (name.len > 0 && name.p[0] == ':')
        return add_pseudo(b, name, value);
    if (!name_ok(name))
        return fail(b, CT_EPROTO, 400,
                    name.len && memchr(name.p, ':', name.len) ? "colon in a field name"
                                                              : "invalid or uppercase field name");
    if (!value_ok(value))
        return fail(b, CT_EPROTO, 400, "invalid field value");
    enum ct_hdr_id id = ct_hdr_lookup(name);
    const char *bad = connection_specific(id, value);
    if (bad)
        return fail(b, CT_EPROTO, 400, bad);
    b->regular_seen = true;
    if (b->trailers)
        return CT_OK; /* validated, dropped */
    if (b->nslots >= b->lim.max_fields)
        return fail(b, CT_ELIMIT, 431, "too many fields");
    if (b->nslots == b->slots_cap) {
        b->slots_cap *= 2;
        b->slots = grow(b->slots, b->slots0, b->nslots, b->slots_cap, sizeof(*b->slots));
    }
    uint32_t noff = keep(b, name), voff = keep(b, value);
    b->slots[b->nslots++] = (struct slot){noff, (uint32_t)name.len, voff, (uint32_t)value.len, id};
    return CT_OK;
}

/* RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
static bool scheme_ok(struct ct_str s)
{
    if (s.len == 0)
        return false;
    for (size_t i = 0; i < s.len; i++) {
        char c = ct_ascii_lower(s.p[i]);
        bool alpha = c >= 'a' && c <= 'z';
        if (!alpha && (i == 0 || !((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.')))
            return false;
    }
    return true;
}

/* uri-host [ ":" port ], no userinfo (RFC 9113 §8.3.1: '@' is not a host octet). */
static bool authority_ok(struct ct_str a)
{
    if (a.len == 0)
        return false;
    for (size_t i = 0; i < a.len; i++)
        if (!(ct_http_cls[(unsigned char)a.p[i]] & CT_CH_HOST))
            return false;
    return true;
}

/* What the HTTP/1 lexer takes as an origin-form target: visible octets, no
 * fragment (RFC 9112 §3.2), starting with '/'. */
static bool path_ok(struct ct_str p)
{
    if (p.len == 0 || p.p[0] != '/')
        return false;
    for (size_t i = 0; i < p.len; i++)
        if (!(ct_http_cls[(unsigned char)p.p[i]] & CT_CH_VCHAR) || p.p[i] == '#')
            return false;
    return true;
}

/* The pseudo-headers as a whole: RFC 9113 §8.3.1 and, for CONNECT, §8.5. */
static int check_pseudo(struct ct_http_h2msg *b, struct ct_http_msg *m)
{
    if (!b->method.seen)
        return fail(b, CT_EPROTO, 400, "missing :method");
    m->method_name = view(b, b->method.off, b->method.len);
    if (!ct_http_is_token(m->method_name))
        return fail(b, CT_EPROTO, 400, "invalid :method");
    m->method = ct_http_method_lookup(m->method_name);
    struct ct_str path = view(b, b->path.off, b->path.len);
    if (m->method == CT_METHOD_CONNECT) {
        if (b->scheme.seen || b->path.seen)
            return fail(b, CT_EPROTO, 400, "CONNECT with :scheme or :path");
        if (!b->authority.seen)
            return fail(b, CT_EPROTO, 400, "CONNECT without :authority");
        m->target = view(b, b->authority.off, b->authority.len);
        return CT_OK;
    }
    if (!b->scheme.seen || !scheme_ok(view(b, b->scheme.off, b->scheme.len)))
        return fail(b, CT_EPROTO, 400, b->scheme.seen ? "invalid :scheme" : "missing :scheme");
    if (!b->path.seen)
        return fail(b, CT_EPROTO, 400, "missing :path");
    if (path.len == 0)
        return fail(b, CT_EPROTO, 400, "empty :path");
    if (!(path.len == 1 && path.p[0] == '*' && m->method == CT_METHOD_OPTIONS) && !path_ok(path))
        return fail(b, CT_EPROTO, 400, "invalid :path");
    m->target = path;
    return CT_OK;
}

/* Host from :authority, and at most one Host: RFC 9113 §8.3.1. SLOT_HOST
 * is the index of a received Host field or -1. Adds a field slot, so it
 * runs before the views are built. */
static int settle_host(struct ct_http_h2msg *b, long slot_host)
{
    if (b->authority.seen) {
        struct ct_str auth = view(b, b->authority.off, b->authority.len);
        if (!authority_ok(auth))
            return fail(b, CT_EPROTO, 400, "invalid :authority");
        if (slot_host >= 0) {
            struct slot *h = &b->slots[slot_host];
            if (!ct_str_eq_ci(view(b, h->value_off, h->value_len), auth))
                return fail(b, CT_EPROTO, 400, "host differs from :authority");
            return CT_OK;
        }
        if (b->nslots == b->slots_cap) {
            b->slots_cap *= 2;
            b->slots = grow(b->slots, b->slots0, b->nslots, b->slots_cap, sizeof(*b->slots));
        }
        uint32_t noff = keep(b, CT_STR("host"));
        b->slots[b->nslots++] =
            (struct slot){noff, 4, b->authority.off, b->authority.len, CT_HDR_HOST};
        return CT_OK;
    }
    if (slot_host < 0) /* "http" and "https" have a mandatory authority */
        return fail(b, CT_EPROTO, 400, "neither :authority nor host");
    struct slot *h = &b->slots[slot_host];
    if (!authority_ok(view(b, h->value_off, h->value_len)))
        return fail(b, CT_EPROTO, 400, "invalid host");
    return CT_OK;
}

/* RFC 9113 §8.2.3: several cookie fields become one, joined by "; ", before
 * an HTTP/1 hop sees them. The later ones are marked gone (id COUNT). */
static void join_cookies(struct ct_http_h2msg *b)
{
    long first = -1;
    size_t total = 0, n = 0;
    for (size_t i = 0; i < b->nslots; i++)
        if (b->slots[i].id == CT_HDR_COOKIE) {
            if (first < 0)
                first = (long)i;
            total += b->slots[i].value_len + 2;
            n++;
        }
    if (n < 2)
        return;
    if (b->buf_len + total > b->buf_cap) {
        b->buf_cap = b->buf_len + total;
        b->buf = grow(b->buf, b->buf0, b->buf_len, b->buf_cap, 1);
    }
    uint32_t off = (uint32_t)b->buf_len;
    for (size_t i = (size_t)first; i < b->nslots; i++) {
        struct slot *s = &b->slots[i];
        if (s->id != CT_HDR_COOKIE)
            continue;
        if ((long)i != first) {
            memcpy(b->buf + b->buf_len, "; ", 2);
            b->buf_len += 2;
            s->id = CT_HDR__COUNT;
        }
        memmove(b->buf + b->buf_len, b->buf + s->value_off, s->value_len);
        b->buf_len += s->value_len;
    }
    b->slots[first].value_off = off;
    b->slots[first].value_len = (uint32_t)(b->buf_len - off);
}

/* content-length (one, digits) against END_STREAM; expect. */
static int check_body(struct ct_http_h2msg *b, struct ct_http_msg *m, bool end_stream)
{
    const struct ct_http_field *cl = ct_http_msg_find(m, CT_HDR_CONTENT_LENGTH, NULL);
    if (cl && ct_http_msg_find(m, CT_HDR_CONTENT_LENGTH, cl))
        return fail(b, CT_EPROTO, 400, "duplicate content-length");
    if (ct_http_msg_find(m, CT_HDR_HOST, ct_http_msg_find(m, CT_HDR_HOST, NULL)))
        return fail(b, CT_EPROTO, 400, "more than one host");
    if (cl) {
        if (ct_str_to_u64(cl->value, UINT64_MAX - 1, &m->content_length) != CT_OK)
            return fail(b, CT_EPROTO, 400, "invalid content-length");
        /* RFC 9113 §8.1.1: the DATA frames must add up to it; none will come. */
        if (end_stream && m->content_length != 0)
            return fail(b, CT_EPROTO, 400, "content-length but the stream ended");
        m->framing = CT_FRAME_LENGTH;
    } else {
        m->framing = end_stream ? CT_FRAME_NONE : CT_FRAME_CHUNKED;
    }
    if (m->method == CT_METHOD_CONNECT)
        m->framing = CT_FRAME_NONE; /* a tunnel, if anything: not a body */
    for (const struct ct_http_field *f = ct_http_msg_find(m, CT_HDR_EXPECT, NULL); f;
         f = ct_http_msg_find(m, CT_HDR_EXPECT, f)) {
        struct ct_str rest = f->value, e;
        while (ct_http_list_next(&rest, &e)) {
            if (!ct_str_eq_ci(e, CT_STR("100-continue")))
                return fail(b, CT_EPROTO, 417, "unsupported expectation");
            m->expect_continue = true;
        }
    }
    return CT_OK;
}

int ct_http_h2msg_finish(struct ct_http_h2msg *b, bool end_stream, const struct ct_http_msg **msgp)
{
    *msgp = NULL;
    if (b->err)
        return b->err;
    CT_ASSERT(!b->finished);
    b->finished = true;
    struct ct_http_msg *m = &b->msg;
    *m = (struct ct_http_msg){.kind = CT_HTTP_REQUEST, .version = 20, .keep_alive = true};
    int rc = check_pseudo(b, m);
    if (rc != CT_OK)
        return rc;
    long slot_host = -1;
    for (size_t i = 0; i < b->nslots && slot_host < 0; i++)
        if (b->slots[i].id == CT_HDR_HOST)
            slot_host = (long)i;
    if ((rc = settle_host(b, slot_host)) != CT_OK)
        return rc;
    join_cookies(b);
    /* The buffer has stopped moving: views from here on. */
    if (m->method == CT_METHOD_CONNECT)
        m->target = view(b, b->authority.off, b->authority.len);
    else
        m->target = view(b, b->path.off, b->path.len);
    m->method_name = view(b, b->method.off, b->method.len);
    if (b->nslots <= CT_ARRAY_LEN(b->fields0)) {
        if (b->fields != b->fields0)
            free(b->fields);
        b->fields = b->fields0;
    } else {
        if (b->fields == b->fields0)
            b->fields = NULL;
        b->fields = ct_xrealloc(b->fields, b->nslots * sizeof(*b->fields));
    }
    size_t n = 0;
    for (size_t i = 0; i < b->nslots; i++) {
        const struct slot *s = &b->slots[i];
        if (s->id == CT_HDR__COUNT)
            continue;
        b->fields[n++] = (struct ct_http_field){view(b, s->name_off, s->name_len),
                                                view(b, s->value_off, s->value_len), s->id};
    }
    ct_http_msg_set_fields(m, b->fields, n);
    m->head_bytes = b->list_size;
    if ((rc = check_body(b, m, end_stream)) != CT_OK)
        return rc;
    *msgp = m;
    return CT_OK;
}

void ct_http_h2msg_begin_trailers(struct ct_http_h2msg *b)
{
    CT_ASSERT(b->finished);
    b->trailers = true;
    b->regular_seen = true;
    b->list_size = 0; /* a field section of its own, under the same limit */
}

struct ct_str ct_http_h2msg_scheme(const struct ct_http_h2msg *b)
{
    return b->scheme.seen ? view(b, b->scheme.off, b->scheme.len) : CT_STR("");
}

unsigned ct_http_h2msg_error_status(const struct ct_http_h2msg *b)
{
    return b->err_status;
}

const char *ct_http_h2msg_error_reason(const struct ct_http_h2msg *b)
{
    return b->err_reason;
}
