/*
 * http/http_parse.c: the pull-style HTTP/1.1 parser (requests and responses).
 *
 * Heads are read once, by us: the lexer (http_lex.c) holds every byte of the
 * start line and the field lines to RFC 9112 with the limits, the head is
 * copied as it is accepted, and when the lexer reaches the empty line the
 * head (already known to be well-formed) is split into its parts where the
 * lexer marked the start line's end and each field's colon and CR. Framing is then decided from the complete head (RFC 9112 §6.3),
 * strictly: anything ambiguous is an error, never a guess.
 *
 * Bodies: a Content-Length body is counted and a close-delimited response
 * body is everything until EOF; neither needs a parser. A chunked body is
 * decoded by http-parser 2.9 and re-validated byte for byte by our chunk
 * shadow (http_lex.c), because the Debian build is not HTTP_PARSER_STRICT
 * and accepts "5\r\nhelloXY", bare LF and junk after a chunk size; body
 * pieces must add up to the shadow's chunk sizes, so the two can never frame
 * differently. The library is put into its chunked-body state by a fixed
 * synthetic head (chunked_prologue()), so it never sees the real one.
 *
 * Why not let http-parser read heads too, as it did until 2026-11: the
 * Debian library is lenient, so every head byte had to be validated by the
 * lexer anyway, and running the library's callbacks over the same bytes was
 * the largest user-space cost of the proxy (18.5 % of a pass-through
 * request's instructions, 47 % of a cache hit's with the lexer). Its URL
 * parser is still what checks absolute-form and authority-form targets.
 *
 * Methods: any token is a method (RFC 9110 §9.1); an unknown one reaches the
 * caller as CT_METHOD_OTHER with its name as received. Every request method
 * frames alike (Content-Length or chunked; CONNECT may have neither).
 *
 * Storage: the head is copied into one growable buffer owned by the parser,
 * with one growable field array; both are reused across messages, so a
 * keep-alive connection allocates nothing per header once warm.
 *
 * How much the library consumes when paused (http_parser 2.9.4), chunked
 * bodies only:
 *   - in on_body: through the end of the piece, plus the CR after chunk data;
 *   - in on_message_complete: through the byte that completed the message.
 */
#include "http/http_int.h"

#include <http_parser.h>
#include <pthread.h>
#include <stdlib.h>

#define CT_HTTP_PARSER_MAGIC 0x48545450u /* "HTTP" */

enum phase { PH_IDLE, PH_HEAD, PH_BODY, PH_TUNNEL, PH_ERROR };

struct ct_http_parser {
    unsigned magic;
    enum ct_http_kind kind;
    struct ct_http_limits lim;
    enum phase phase;
    enum ct_http_method req_method; /* responses: what the request was */
    bool gateway;                   /* requests: ct_http_parser_set_gateway() */

    /* head storage: reused across messages */
    char *hbuf;
    size_t hlen, hcap;
    struct ct_http_field *fields;
    size_t fcap;
    struct ct_http_msg msg;

    struct ct_http_lex lex;
    struct ct_http_lex_mark marks[CT_HTTP_LEX_MARKS]; /* the head's fields, lex.marks */

    /* body */
    uint64_t body_seen;
    uint64_t body_left; /* CT_FRAME_LENGTH: bytes still owed */
    http_parser hp;     /* CT_FRAME_CHUNKED: the decoder */
    struct ct_http_chunk cs;

    /* set by callbacks during one http_parser_execute() */
    bool cb_end;
    bool cb_has_body;
    struct ct_str cb_body;

    /* an event owed to the caller on the next feed */
    bool pending_end, pending_err, tunnel_after_end;
    unsigned err_status;
    const char *err_reason;
};

static unsigned status_for(const struct ct_http_parser *p, unsigned req_status)
{
    return p->kind == CT_HTTP_RESPONSE ? 502 : req_status;
}

/* ---- storage ------------------------------------------------------------- */

static void hbuf_append(struct ct_http_parser *p, const char *at, size_t len)
{
    if (len == 0)
        return;
    if (p->hlen + len > p->hcap) {
        size_t cap = p->hcap ? p->hcap : 1024;
        while (cap < p->hlen + len)
            cap *= 2;
        p->hbuf = ct_xrealloc(p->hbuf, cap);
        p->hcap = cap;
    }
    memcpy(p->hbuf + p->hlen, at, len);
    p->hlen += len;
}

/* ---- the chunked decoder ------------------------------------------------- */

static struct ct_http_parser *from_hp(http_parser *hp)
{
    struct ct_http_parser *p = hp->data;
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    return p;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
    struct ct_http_parser *p = from_hp(hp);
    CT_ASSERT(!p->cb_has_body);
    p->cb_has_body = true;
    p->cb_body = ct_str_make(at, len);
    http_parser_pause(hp, 1);
    return 0;
}

static int on_message_complete(http_parser *hp)
{
    struct ct_http_parser *p = from_hp(hp);
    p->cb_end = true;
    http_parser_pause(hp, 1);
    return 0;
}

/* Trailer fields are validated by the shadow and dropped: no field
 * callbacks. */
static const http_parser_settings settings = {
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Run the library over BUF[0..LEN) (LEN > 0: zero means EOF to it). */
static size_t lib_exec(struct ct_http_parser *p, const char *buf, size_t len)
{
    CT_ASSERT(len > 0);
    http_parser_pause(&p->hp, 0);
    p->cb_end = false;
    p->cb_has_body = false;
    return http_parser_execute(&p->hp, &settings, buf, len);
}

static bool lib_failed(const struct ct_http_parser *p)
{
    enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
    return e != HPE_OK && e != HPE_PAUSED;
}

/* Put the library into its chunked-body state: a fixed head of the same
 * kind with only "Transfer-Encoding: chunked". The real head was read by us. */
static bool chunked_prologue(struct ct_http_parser *p)
{
    static const struct ct_str req = CT_STR("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    static const struct ct_str resp = CT_STR("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    struct ct_str head = p->kind == CT_HTTP_REQUEST ? req : resp;
    http_parser_init(&p->hp, p->kind == CT_HTTP_REQUEST ? HTTP_REQUEST : HTTP_RESPONSE);
    p->hp.data = p;
    return lib_exec(p, head.p, head.len) == head.len && HTTP_PARSER_ERRNO(&p->hp) == HPE_OK &&
           (p->hp.flags & F_CHUNKED);
}

/* ---- errors -------------------------------------------------------------- */

/* The first error sticks: later ones are consequences. */
static void set_err(struct ct_http_parser *p, unsigned status, const char *reason)
{
    if (p->err_status == 0) {
        p->err_status = status_for(p, status);
        p->err_reason = reason;
    }
}

static enum ct_http_ev fail(struct ct_http_parser *p, unsigned status, const char *reason)
{
    set_err(p, status, reason);
    p->phase = PH_ERROR;
    return CT_HTTP_EV_ERROR;
}

/* What the chunked decoder refused, in our words. */
static enum ct_http_ev fail_lib(struct ct_http_parser *p)
{
    enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
    switch (e) {
    case HPE_INVALID_CHUNK_SIZE: return fail(p, 400, "invalid chunk size");
    case HPE_HEADER_OVERFLOW: return fail(p, 431, "trailer section too large");
    default: return fail(p, 400, http_errno_description(e));
    }
}

/* ---- the complete head: its parts ---------------------------------------- */

static void fields_reserve(struct ct_http_parser *p, size_t n)
{
    if (n <= p->fcap)
        return;
    size_t cap = CT_MAX(p->fcap * 2, (size_t)32);
    while (cap < n)
        cap *= 2;
    p->fields = ct_xrealloc(p->fields, cap * sizeof(*p->fields));
    p->fcap = cap;
}

/* The head in hbuf[0..hlen) passed the lexer, so its shape is known: empty
 * lines, the start line, field lines "name:value" and the empty line, each
 * ending in CRLF; no CR inside a line, no colon inside a name, no SP inside
 * a method or a target. Only the boundaries are left to find. */
static void split_head(struct ct_http_parser *p)
{
    const struct ct_http_lex *L = &p->lex;
    struct ct_http_msg *m = &p->msg;
    const char *end = p->hbuf + p->hlen;
    const char *line = p->hbuf + L->line_start;
    const char *eol = p->hbuf + L->line_end;
    CT_ASSERT(eol > line && eol < end && *eol == '\r');

    memset(m, 0, sizeof(*m));
    m->kind = p->kind;
    m->version = L->major * 10u + L->minor;
    if (p->kind == CT_HTTP_REQUEST) {
        m->method_name = ct_str_make(line, L->method_len);
        m->method = ct_http_method_lookup(m->method_name);
        /* the lexer took nothing after the target but " HTTP/1.x" */
        const char *t = line + L->method_len + 1;
        const char *sp = eol - (sizeof(" HTTP/1.1") - 1);
        CT_ASSERT(sp > t && *sp == ' ');
        m->target = ct_str_make(t, (size_t)(sp - t));
    } else {
        const char *s = line + sizeof("HTTP/1.1 ") - 1; /* three digits, then SP or CR */
        m->status = (unsigned)(s[0] - '0') * 100 + (unsigned)(s[1] - '0') * 10 +
                    (unsigned)(s[2] - '0');
        const char *r = s + 3 < eol ? s + 4 : eol;
        m->reason = ct_str_make(r, (size_t)(eol - r));
    }

    fields_reserve(p, L->nfields);
    size_t n = 0;
    for (const char *f = eol + 2; *f != '\r'; n++) {
        const char *colon, *fe;
        if (n < CT_HTTP_LEX_MARKS) {
            colon = p->hbuf + L->marks[n].colon;
            fe = p->hbuf + L->marks[n].cr;
        } else {
            colon = memchr(f, ':', (size_t)(end - f));
            fe = memchr(colon, '\r', (size_t)(end - colon));
        }
        CT_ASSERT(colon != NULL && fe != NULL && n < L->nfields);
        CT_ASSERT(*colon == ':' && *fe == '\r' && colon > f && fe < end);
        struct ct_http_field *fl = &p->fields[n];
        fl->name = ct_str_make(f, (size_t)(colon - f));
        fl->value = ct_str_trim_ows(ct_str_make(colon + 1, (size_t)(fe - colon - 1)));
        fl->id = ct_hdr_lookup(fl->name);
        f = fe + 2;
    }
    CT_ASSERT(n == L->nfields);
    ct_http_msg_set_fields(m, p->fields, n);
    m->head_bytes = L->total;
}

/* ---- the complete head: semantics and framing (RFC 9112 §6.3) ------------ */

static bool is_known_coding(struct ct_str c)
{
    static const struct ct_str known[] = {CT_STR("gzip"), CT_STR("x-gzip"), CT_STR("deflate"),
                                          CT_STR("compress"), CT_STR("x-compress")};
    for (size_t i = 0; i < CT_ARRAY_LEN(known); i++)
        if (ct_str_eq_ci(c, known[i]))
            return true;
    return false;
}

/* Walk every Transfer-Encoding coding in order. *CHUNKED_LAST: chunked is
 * the final one. Returns 0 or -1 with the error set. */
static int te_codings(struct ct_http_parser *p, bool *chunked_last)
{
    const struct ct_http_msg *m = &p->msg;
    bool seen_chunked = false;
    size_t n = 0;
    *chunked_last = false;
    for (const struct ct_http_field *f = ct_http_msg_find(m, CT_HDR_TRANSFER_ENCODING, NULL); f;
         f = ct_http_msg_find(m, CT_HDR_TRANSFER_ENCODING, f)) {
        struct ct_str rest = f->value, e;
        while (ct_http_list_next(&rest, &e)) {
            size_t k = 0;
            while (k < e.len && e.p[k] != ';')
                k++;
            struct ct_str name = ct_str_trim_ows(ct_str_make(e.p, k));
            n++;
            if (ct_str_eq_ci(name, CT_STR("chunked"))) {
                /* RFC 9112 §6.1: a sender MUST NOT apply chunked twice */
                if (seen_chunked || k != e.len) {
                    set_err(p, 400,
                            seen_chunked ? "chunked applied more than once"
                                         : "parameters on chunked");
                    return -1;
                }
                seen_chunked = *chunked_last = true;
            } else if (is_known_coding(name)) {
                *chunked_last = false;
            } else {
                set_err(p, 501, "unknown transfer coding");
                return -1;
            }
        }
    }
    if (n == 0) {
        set_err(p, 400, "empty Transfer-Encoding");
        return -1;
    }
    return 0;
}

/* Framing from Content-Length / Transfer-Encoding, before the no-body rules. */
static int frame_from_fields(struct ct_http_parser *p)
{
    struct ct_http_msg *m = &p->msg;
    const struct ct_http_field *cl = ct_http_msg_find(m, CT_HDR_CONTENT_LENGTH, NULL);
    const struct ct_http_field *te = ct_http_msg_find(m, CT_HDR_TRANSFER_ENCODING, NULL);
    bool request = p->kind == CT_HTTP_REQUEST;

    /* RFC 9112 §6.3 lets a recipient merge identical duplicate values; we
     * take the strict side and refuse any duplicate Content-Length. */
    if (cl && ct_http_msg_find(m, CT_HDR_CONTENT_LENGTH, cl)) {
        set_err(p, 400, "duplicate Content-Length");
        return -1;
    }
    if (cl && te) { /* §6.3 rule 3: a smuggling signature; refuse, never pick one */
        set_err(p, 400, "Content-Length and Transfer-Encoding together");
        return -1;
    }
    if (te) {
        bool chunked_last;
        if (m->version == 10) { /* §6.1: framing of such a message is faulty */
            set_err(p, 400, "Transfer-Encoding in an HTTP/1.0 message");
            return -1;
        }
        if (te_codings(p, &chunked_last) < 0)
            return -1;
        if (!chunked_last && request) { /* §6.3 rule 4 */
            set_err(p, 400, "final transfer coding is not chunked");
            return -1;
        }
        m->framing = chunked_last ? CT_FRAME_CHUNKED : CT_FRAME_CLOSE;
    } else if (cl) {
        if (ct_str_to_u64(cl->value, UINT64_MAX - 1, &m->content_length) != CT_OK) {
            set_err(p, 400, "invalid Content-Length");
            return -1;
        }
        m->framing = CT_FRAME_LENGTH;
    } else {
        m->framing = request ? CT_FRAME_NONE : CT_FRAME_CLOSE; /* §6.3 rules 6, 7 */
    }
    return 0;
}

/* uri-host [ ":" port ]: reg-name / IPv4 / IP-literal characters only. */
static bool host_ok(struct ct_str h)
{
    for (size_t i = 0; i < h.len; i++)
        if (!(ct_http_cls[(unsigned char)h.p[i]] & CT_CH_HOST))
            return false;
    return true;
}

/* RFC 9112 §3.2: origin-form, absolute-form, authority-form (CONNECT only),
 * asterisk-form (OPTIONS only). */
static bool target_ok(const struct ct_http_msg *m)
{
    struct ct_str t = m->target;
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (m->method == CT_METHOD_CONNECT)
        return http_parser_parse_url(t.p, t.len, 1, &u) == 0;
    if (t.len == 1 && t.p[0] == '*')
        return m->method == CT_METHOD_OPTIONS;
    /* A fragment is never sent (RFC 9112 §3.2); one here would only split
     * cache keys or reach an origin that reads it differently. */
    if (memchr(t.p, '#', t.len))
        return false;
    if (t.len > 0 && t.p[0] == '/')
        return true;
    return http_parser_parse_url(t.p, t.len, 0, &u) == 0 && (u.field_set & (1u << UF_SCHEMA)) &&
           (u.field_set & (1u << UF_HOST));
}

/* A gateway's absolute-form request (target_ok() passed): RFC 9112 §3.2.2,
 * the target's authority wins over Host, and a proxy MUST generate Host from
 * it rather than forward the received one. So the message is made what the
 * next hop will get: Host = the authority (added if there was none, HTTP/1.0),
 * target = origin-form. Everything downstream (the forwarded head,
 * X-Forwarded-Host, the cache key, logs) then sees one authority.
 * "http://a?q" has no '/' to start its origin-form at: the authority moves
 * one byte left (into the "//" before it) to make room for one. Returns 0, or
 * -1 with the error set. */
static int absolute_to_origin_form(struct ct_http_parser *p)
{
    struct ct_http_msg *m = &p->msg;
    char *t = (char *)m->target.p, *end = t + m->target.len; /* in hbuf: ours */
    char *a = memchr(t, ':', m->target.len);
    if (a == NULL || end - a < 3 || a[1] != '/' || a[2] != '/')
        return set_err(p, 400, "invalid request target form"), -1;
    a += 3;
    char *e = a;
    while (e < end && *e != '/' && *e != '?')
        e++;
    struct ct_str auth = ct_str_make(a, (size_t)(e - a));
    /* RFC 9110 §4.2.4: userinfo is deprecated; a recipient SHOULD treat it as
     * an error (it has hidden the real host from readers of the URI). */
    if (memchr(auth.p, '@', auth.len))
        return set_err(p, 400, "userinfo in the request target"), -1;
    if (auth.len == 0 || !host_ok(auth))
        return set_err(p, 400, "invalid authority in the request target"), -1;
    if (e == end) {
        m->target = CT_STR("/");
    } else if (*e == '?') {
        memmove(a - 1, a, auth.len);
        auth.p = a - 1;
        e[-1] = '/';
        m->target = ct_str_make(e - 1, (size_t)(end - e + 1));
    } else {
        m->target = ct_str_make(e, (size_t)(end - e));
    }
    const struct ct_http_field *host = ct_http_msg_find(m, CT_HDR_HOST, NULL);
    if (host) {
        p->fields[host - p->fields].value = auth;
        return 0;
    }
    size_t n = m->nfields;
    fields_reserve(p, n + 1);
    p->fields[n] = (struct ct_http_field){CT_STR("Host"), auth, CT_HDR_HOST};
    ct_http_msg_set_fields(m, p->fields, n + 1);
    return 0;
}

/* The Connection options of M, in one pass over its fields: close,
 * keep-alive, upgrade, and whether any other token (a field name) is there.
 * It runs for every message, hits included: a lone keep-alive or close
 * (nearly every line) needs no list walk. */
struct conn_opts {
    bool close, keep_alive, upgrade, names_fields;
};

static void connection_options(const struct ct_http_msg *m, struct conn_opts *o)
{
    *o = (struct conn_opts){false, false, false, false};
    if ((m->ids_seen & 1) && !(m->ids_seen & (1ull << CT_HDR_CONNECTION)))
        return;
    for (size_t i = 0; i < m->nfields; i++) {
        const struct ct_http_field *c = &m->fields[i];
        if (c->id != CT_HDR_CONNECTION)
            continue;
        if (c->value.len == 10 && ct_str_eq_ci(c->value, CT_STR("keep-alive"))) {
            o->keep_alive = true;
            continue;
        }
        if (c->value.len == 5 && ct_str_eq_ci(c->value, CT_STR("close"))) {
            o->close = true;
            continue;
        }
        struct ct_str rest = c->value, tok;
        while (ct_http_list_next(&rest, &tok)) {
            if (ct_str_eq_ci(tok, CT_STR("keep-alive")))
                o->keep_alive = true;
            else if (ct_str_eq_ci(tok, CT_STR("close")))
                o->close = true;
            else if (ct_str_eq_ci(tok, CT_STR("upgrade")))
                o->upgrade = true;
            else
                o->names_fields = true;
        }
    }
}

/* A gateway's request: RFC 9110 §7.6.1, the fields Connection names are
 * removed before the message is forwarded. They are removed here, from the
 * message itself, so that what cachet acts on is what the origin is sent:
 * otherwise "Accept-Language: fr" with "Connection: Accept-Language" would
 * have the origin's default answer stored as the French variant (Vary
 * selection, cache.key_header, Authorization and Cookie rules read the
 * request). The table's hop-by-hop fields stay (they never leave; Connection
 * and Upgrade are read below), and so do the pinned ones (the framing). Most
 * requests with Connection say only keep-alive or close: one walk of it. */
static void drop_connection_named(struct ct_http_parser *p)
{
    struct ct_http_msg *m = &p->msg;
    /* Mark first, then compact: the rule reads the Connection lines, which
     * must stay where they are while it runs. */
    const enum ct_hdr_id gone = CT_HDR__COUNT; /* no field has it, no look-up finds it */
    for (size_t i = 0; i < m->nfields; i++) {
        struct ct_http_field *f = &p->fields[i];
        if (!(ct_hdr_flags(f->id) & CT_HDRF_HOP) && ct_http_msg_field_is_hop(m, f))
            f->id = gone;
    }
    size_t n = 0;
    for (size_t i = 0; i < m->nfields; i++)
        if (p->fields[i].id != gone)
            p->fields[n++] = p->fields[i];
    ct_http_msg_set_fields(m, p->fields, n);
}

static int check_request(struct ct_http_parser *p)
{
    struct ct_http_msg *m = &p->msg;
    const struct ct_http_field *host = ct_http_msg_find(m, CT_HDR_HOST, NULL);
    if (host && ct_http_msg_find(m, CT_HDR_HOST, host))
        return set_err(p, 400, "more than one Host"), -1;
    if (!host && m->version == 11) /* RFC 9112 §3.2 */
        return set_err(p, 400, "missing Host"), -1;
    if (host && !host_ok(host->value))
        return set_err(p, 400, "invalid Host"), -1;
    if (!target_ok(m))
        return set_err(p, 400, "invalid request target form"), -1;
    if (p->gateway && m->method != CT_METHOD_CONNECT && m->target.p[0] != '/' &&
        !(m->target.len == 1 && m->target.p[0] == '*') && absolute_to_origin_form(p) < 0)
        return -1;
    if (m->method == CT_METHOD_CONNECT && m->framing != CT_FRAME_NONE)
        return set_err(p, 400, "CONNECT with a body"), -1;
    bool cont = false;
    for (const struct ct_http_field *f = ct_http_msg_find(m, CT_HDR_EXPECT, NULL); f;
         f = ct_http_msg_find(m, CT_HDR_EXPECT, f)) {
        struct ct_str rest = f->value, e;
        while (ct_http_list_next(&rest, &e)) {
            if (!ct_str_eq_ci(e, CT_STR("100-continue")))
                return set_err(p, 417, "unsupported expectation"), -1;
            cont = true;
        }
    }
    /* RFC 9110 §10.1.1: ignore 100-continue from an HTTP/1.0 client */
    m->expect_continue = cont && m->version == 11;
    if (p->lim.max_body && m->framing == CT_FRAME_LENGTH && m->content_length > p->lim.max_body)
        return set_err(p, 413, "body too large"), -1;
    return 0;
}

/* Responses: 1xx, 204, 304 and answers to HEAD have no body whatever their
 * fields say; 101 and a 2xx to CONNECT turn the stream into a tunnel. */
static int check_response(struct ct_http_parser *p)
{
    struct ct_http_msg *m = &p->msg;
    if (m->status < 100 || m->status > 599)
        return set_err(p, 502, "invalid status code"), -1;
    p->tunnel_after_end =
        m->status == 101 || (p->req_method == CT_METHOD_CONNECT && m->status / 100 == 2);
    if (m->status / 100 == 1 || m->status == 204 || m->status == 304 ||
        p->req_method == CT_METHOD_HEAD || p->tunnel_after_end) {
        m->framing = CT_FRAME_NONE;
        m->content_length = 0;
    }
    if (p->lim.max_body && m->framing == CT_FRAME_LENGTH && m->content_length > p->lim.max_body)
        return set_err(p, 502, "body too large"), -1;
    return 0;
}

/* The complete head: its parts, framing and semantics. Returns 0, or -1
 * with the error set. */
static int head_complete(struct ct_http_parser *p)
{
    struct ct_http_msg *m = &p->msg;
    split_head(p);
    if (frame_from_fields(p) < 0)
        return -1;
    if ((p->kind == CT_HTTP_REQUEST ? check_request(p) : check_response(p)) < 0)
        return -1;
    struct conn_opts co;
    connection_options(m, &co);
    if (co.names_fields && p->gateway)
        drop_connection_named(p);
    m->keep_alive = (m->version == 11 ? !co.close : co.keep_alive && !co.close) &&
                    m->framing != CT_FRAME_CLOSE;
    /* h2c is not an upgrade anyone may tunnel: HTTP/2 over cleartext would
     * carry requests past the proxy, straight to the origin (RFC 9113 §3.1
     * deprecated it; HTTP/2 starts by ALPN or prior knowledge). Such a request
     * is answered as the HTTP/1.1 request it also is; Upgrade and
     * HTTP2-Settings are hop-by-hop and go no further. */
    m->upgrade = co.upgrade && ct_http_msg_find(m, CT_HDR_UPGRADE, NULL) != NULL &&
                 !ct_http_msg_has_token(m, CT_HDR_UPGRADE, CT_STR("h2c"));
    return 0;
}

/* The chunked framing in BUF[0..LEN) that the library consumed. */
static bool shadow_scan(struct ct_http_parser *p, const char *buf, size_t len)
{
    if (ct_http_chunk_scan(&p->cs, &p->lim, buf, len))
        return true;
    set_err(p, p->cs.err_status, p->cs.err_reason);
    return false;
}

/* ---- feeding ------------------------------------------------------------- */

static void message_begin(struct ct_http_parser *p)
{
    p->hlen = 0;
    p->msg.nfields = 0; /* the rest of msg is set when the head is complete */
    p->lex = (struct ct_http_lex){
        .st = CT_LX_START, .request = p->kind == CT_HTTP_REQUEST, .marks = p->marks};
    p->body_seen = p->body_left = 0;
    p->tunnel_after_end = false;
    p->phase = PH_HEAD;
}

static enum ct_http_ev end_message(struct ct_http_parser *p)
{
    p->phase = p->tunnel_after_end ? PH_TUNNEL : PH_IDLE;
    return CT_HTTP_EV_END;
}

/* After the head: what the body needs, and the END owed when there is none. */
static enum ct_http_ev body_begin(struct ct_http_parser *p)
{
    const struct ct_http_msg *m = &p->msg;
    p->phase = PH_BODY;
    switch (m->framing) {
    case CT_FRAME_NONE: p->pending_end = true; break;
    case CT_FRAME_LENGTH:
        p->body_left = m->content_length;
        p->pending_end = m->content_length == 0;
        break;
    case CT_FRAME_CHUNKED:
        memset(&p->cs, 0, sizeof(p->cs));
        if (!chunked_prologue(p)) {
            set_err(p, 400, "chunked decoder refused its prologue");
            p->pending_err = true;
        }
        break;
    case CT_FRAME_CLOSE: break;
    }
    return CT_HTTP_EV_HEAD;
}

static enum ct_http_ev feed_head(struct ct_http_parser *p, const char *buf, size_t len,
                                 size_t *used)
{
    size_t k = ct_http_lex_scan(&p->lex, &p->lim, buf, len);
    hbuf_append(p, buf, k);
    *used = k;
    if (p->lex.err_status)
        return fail(p, p->lex.err_status, p->lex.err_reason);
    if (p->lex.st != CT_LX_DONE)
        return CT_HTTP_EV_MORE;
    if (head_complete(p) < 0)
        return fail(p, 400, "invalid head"); /* head_complete set the real error */
    return body_begin(p);
}

/* Hand out at most max_body bytes in all; the piece that crosses the limit
 * is cut there and the error follows, whatever the split of the input. */
static bool body_allowed(struct ct_http_parser *p, struct ct_str *chunk)
{
    if (p->lim.max_body == 0)
        return true;
    uint64_t room = p->lim.max_body - p->body_seen;
    if (chunk->len <= room)
        return true;
    chunk->len = (size_t)room;
    set_err(p, 413, "body too large");
    return false;
}

/* Report PIECE (already through body_allowed) as BODY; OK false: the error
 * follows on the next call, END: the END does. */
static enum ct_http_ev body_piece(struct ct_http_parser *p, struct ct_str piece, bool ok, bool end,
                                  struct ct_str *chunk)
{
    p->body_seen += piece.len;
    if (!ok) {
        p->pending_err = true;
        if (piece.len == 0)
            return fail(p, 400, "body");
    } else if (end) {
        p->pending_end = true;
    }
    *chunk = piece;
    return CT_HTTP_EV_BODY;
}

/* Content-Length: counted; close-delimited: everything until EOF. */
static enum ct_http_ev feed_plain_body(struct ct_http_parser *p, const char *buf, size_t len,
                                       size_t *used, struct ct_str *chunk)
{
    size_t n = len;
    if (p->msg.framing == CT_FRAME_LENGTH) {
        n = (size_t)CT_MIN((uint64_t)len, p->body_left);
        p->body_left -= n;
    }
    struct ct_str piece = ct_str_make(buf, n);
    bool ok = body_allowed(p, &piece);
    *used = n;
    return body_piece(p, piece, ok, p->msg.framing == CT_FRAME_LENGTH && p->body_left == 0, chunk);
}

static enum ct_http_ev feed_chunked(struct ct_http_parser *p, const char *buf, size_t len,
                                    size_t *used, struct ct_str *chunk)
{
    size_t n = lib_exec(p, buf, len);
    size_t a = n, b = n; /* the body piece, if any: buf[a..b) */
    if (p->cb_has_body) {
        a = (size_t)(p->cb_body.p - buf);
        b = a + p->cb_body.len;
        CT_ASSERT(b <= n);
    }
    if (!shadow_scan(p, buf, a))
        return fail(p, 400, "malformed chunked framing");
    if (lib_failed(p))
        return fail_lib(p);
    *used = n;
    if (!p->cb_has_body) {
        if (!p->cb_end) {
            if (n != len)
                return fail(p, 400, "parser disagreement on the body");
            return CT_HTTP_EV_MORE;
        }
        if (p->cs.st != CT_CK_DONE)
            return fail(p, 400, "parser disagreement on the last chunk");
        return end_message(p);
    }
    struct ct_str piece = p->cb_body;
    if (p->cs.st != CT_CK_DATA || piece.len > p->cs.remaining)
        return fail(p, 400, "parser disagreement on chunk data");
    p->cs.remaining -= piece.len;
    bool ok = body_allowed(p, &piece) && shadow_scan(p, buf + b, n - b);
    if (ok && p->cb_end && p->cs.st != CT_CK_DONE)
        ok = (set_err(p, 400, "parser disagreement on the last chunk"), false);
    return body_piece(p, piece, ok, p->cb_end, chunk);
}

/* An event owed before any more input is looked at: the error a previous
 * call found (or the parser is in), or the END of a message whose head said
 * it has no body. Feed and EOF both owe it first. False: none. */
static bool take_pending(struct ct_http_parser *p, enum ct_http_ev *ev)
{
    if (p->phase == PH_ERROR || p->pending_err) {
        p->pending_err = false;
        p->phase = PH_ERROR;
        *ev = CT_HTTP_EV_ERROR;
        return true;
    }
    if (p->pending_end) {
        p->pending_end = false;
        *ev = end_message(p);
        return true;
    }
    return false;
}

enum ct_http_ev ct_http_parser_feed(struct ct_http_parser *p, const char *buf, size_t len,
                                    size_t *used, struct ct_str *chunk)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    *used = 0;
    if (chunk)
        *chunk = CT_STR_NULL;
    enum ct_http_ev ev;
    if (take_pending(p, &ev))
        return ev;
    if (p->phase == PH_TUNNEL)
        return CT_HTTP_EV_END;
    if (len == 0)
        return CT_HTTP_EV_MORE;
    if (p->phase == PH_IDLE)
        message_begin(p);
    if (p->phase == PH_HEAD)
        return feed_head(p, buf, len, used);
    struct ct_str dummy;
    if (p->msg.framing == CT_FRAME_CHUNKED)
        return feed_chunked(p, buf, len, used, chunk ? chunk : &dummy);
    return feed_plain_body(p, buf, len, used, chunk ? chunk : &dummy);
}

enum ct_http_ev ct_http_parser_eof(struct ct_http_parser *p)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    enum ct_http_ev ev;
    if (take_pending(p, &ev))
        return ev;
    switch (p->phase) {
    case PH_IDLE:
    case PH_TUNNEL: return CT_HTTP_EV_MORE;
    case PH_HEAD:
        /* only empty lines so far: a clean close between messages */
        if (p->lex.st == CT_LX_START)
            return CT_HTTP_EV_MORE;
        return fail(p, 400, "connection closed in the middle of the head");
    case PH_BODY:
        if (p->msg.framing == CT_FRAME_CLOSE) /* RFC 9112 §6.3 rule 8 */
            return end_message(p);
        return fail(p, 400, "connection closed in the middle of the body");
    case PH_ERROR: break;
    }
    return CT_HTTP_EV_ERROR;
}

/* ---- object -------------------------------------------------------------- */

void ct_http_limits_default(struct ct_http_limits *lim)
{
    lim->max_line = 8 * 1024;
    lim->max_head = 64 * 1024;
    lim->max_fields = 100;
    lim->max_body = 0;
}

/* The library's own cap on head bytes (80 KiB, a process-wide setting)
 * would answer before our limits do; the lexer and the shadow bound every
 * head, trailer and chunk line, so lift it once. */
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_init(void)
{
    http_parser_set_max_header_size(UINT32_MAX / 2);
}

struct ct_http_parser *ct_http_parser_new(enum ct_http_kind kind,
                                          const struct ct_http_limits *limits)
{
    ct_http_cls_init();
    pthread_once(&lib_once, lib_init);
    struct ct_http_parser *p = ct_xcalloc(1, sizeof(*p));
    p->magic = CT_HTTP_PARSER_MAGIC;
    p->kind = kind;
    if (limits)
        p->lim = *limits;
    else
        ct_http_limits_default(&p->lim);
    /* zero limits would refuse everything; treat them as "smallest sane" */
    p->lim.max_line = CT_MAX(p->lim.max_line, (size_t)16);
    p->lim.max_head = CT_MAX(p->lim.max_head, (size_t)16);
    p->lim.max_fields = CT_MAX(p->lim.max_fields, 1u);
    p->phase = PH_IDLE;
    p->req_method = CT_METHOD_GET;
    return p;
}

void ct_http_parser_free(struct ct_http_parser **pp)
{
    struct ct_http_parser *p = *pp;
    if (p == NULL)
        return;
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    free(p->hbuf);
    free(p->fields);
    p->magic = 0;
    free(p);
    *pp = NULL;
}

void ct_http_parser_set_gateway(struct ct_http_parser *p, bool on)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    CT_ASSERT(p->kind == CT_HTTP_REQUEST);
    p->gateway = on;
}

void ct_http_parser_set_request_method(struct ct_http_parser *p, enum ct_http_method m)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    p->req_method = m;
}

const struct ct_http_msg *ct_http_parser_msg(const struct ct_http_parser *p)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    return &p->msg;
}

unsigned ct_http_parser_error_status(const struct ct_http_parser *p)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    return p->err_status;
}

const char *ct_http_parser_error_reason(const struct ct_http_parser *p)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    return p->err_reason ? p->err_reason : "";
}

bool ct_http_parser_in_message(const struct ct_http_parser *p)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    return p->phase == PH_BODY || p->pending_end;
}

bool ct_http_parser_started(const struct ct_http_parser *p)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    if (p->phase == PH_HEAD)
        return p->lex.st != CT_LX_START;
    return p->phase == PH_BODY || p->pending_end;
}

bool ct_http_parser_is_tunnel(const struct ct_http_parser *p)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    return p->phase == PH_TUNNEL || (p->pending_end && p->tunnel_after_end);
}
