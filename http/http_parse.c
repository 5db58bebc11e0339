/*
 * http/http_parse.c: the pull-style HTTP/1.1 parser (requests and responses)
 * on http-parser 2.9.
 *
 * Three pieces work on the same bytes (lexer and shadow: http_lex.c):
 *
 *   lexer   (ours)  byte-exact validation of the head: request/status line,
 *                   field lines, CRLF discipline, limits. It scans ahead of
 *                   the library, and the library is only given the bytes
 *                   before the lexer's first error, so the first offence in
 *                   the stream is the one reported whatever the split.
 *   library         tokenizes the head (callbacks), frames and decodes the
 *                   body. It stops (http_parser_pause) after the head, after
 *                   each body piece and at the end of the message.
 *   shadow  (ours)  re-validates the chunked framing bytes the library
 *                   consumed: the Debian build is not HTTP_PARSER_STRICT, so
 *                   it accepts "5\r\nhelloXY", bare LF and junk after the
 *                   chunk size. Body pieces must add up to the shadow's
 *                   chunk sizes, so the two can never frame differently.
 *
 * Framing is decided by us from the complete head (RFC 9112 §6.3) and
 * cross-checked against the library's view; any disagreement is an error.
 *
 * Methods: any token is a method (RFC 9110 §9.1), but the library knows a
 * fixed list. So the request method is held back from it: the lexer
 * validates the token, we keep its bytes, and the library is shown either
 * the same token (when it is on its list: it then sees exactly the bytes
 * it always did) or a stand-in of the same framing class (method_line()).
 * For requests, http-parser 2.9 treats one method apart, CONNECT (an
 * authority-form target, then a tunnel), and CONNECT is on its list; every
 * other method frames alike, by Content-Length or chunked only. So the
 * library still frames every request, the cross-check still compares two
 * independent readings of the same field lines, and an unknown method
 * reaches the caller as CT_METHOD_OTHER with its name as received.
 *
 * Storage: the head is copied into one growable buffer owned by the parser,
 * with one growable field array; both are reused across messages, so a
 * keep-alive connection allocates nothing per header once warm.
 *
 * How much the library consumed when paused (http_parser 2.9.4):
 *   - in on_headers_complete: up to, not including, the final LF; we then
 *     run that one LF through it at once, so HEAD's *used covers the head;
 *   - in on_body: through the end of the piece, plus the CR after chunk
 *     data; except the last piece of a Content-Length body, which would
 *     leave its last byte unconsumed: there we do not pause and let the
 *     library run on to on_message_complete, and report END next;
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
    http_parser hp;
    enum ct_http_method req_method; /* responses: what the request was */

    /* head storage: reused across messages */
    char *hbuf;
    size_t hlen, hcap;
    struct foff {
        size_t name_off, name_len, value_off, value_len;
    } * foff;
    struct ct_http_field *fields;
    size_t nfields, fcap;
    enum { FS_NONE, FS_NAME, FS_VALUE } fstate;
    size_t method_len;          /* requests: the token, at hbuf[0] */
    size_t url_len, reason_len; /* after the method; the reason at hbuf[0] */
    struct ct_http_msg msg;

    struct ct_http_lex lex;

    /* body */
    uint64_t body_seen;
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

static void field_begin(struct ct_http_parser *p)
{
    if (p->nfields == p->fcap) {
        p->fcap = p->fcap ? p->fcap * 2 : 32;
        p->foff = ct_xrealloc(p->foff, p->fcap * sizeof(*p->foff));
        p->fields = ct_xrealloc(p->fields, p->fcap * sizeof(*p->fields));
    }
    p->foff[p->nfields] = (struct foff){p->hlen, 0, p->hlen, 0};
    p->fstate = FS_NAME;
}

static void field_end(struct ct_http_parser *p)
{
    if (p->fstate != FS_NONE)
        p->nfields++;
    p->fstate = FS_NONE;
}

/* ---- library callbacks --------------------------------------------------- */

static struct ct_http_parser *from_hp(http_parser *hp)
{
    struct ct_http_parser *p = hp->data;
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    return p;
}

static int on_url(http_parser *hp, const char *at, size_t len)
{
    struct ct_http_parser *p = from_hp(hp);
    hbuf_append(p, at, len);
    p->url_len += len;
    return 0;
}

static int on_status(http_parser *hp, const char *at, size_t len)
{
    struct ct_http_parser *p = from_hp(hp);
    hbuf_append(p, at, len);
    p->reason_len += len;
    return 0;
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
    struct ct_http_parser *p = from_hp(hp);
    if (p->phase != PH_HEAD)
        return 0; /* a trailer field: validated by the shadow, then dropped */
    if (p->fstate == FS_VALUE)
        field_end(p);
    if (p->fstate == FS_NONE)
        field_begin(p);
    hbuf_append(p, at, len);
    p->foff[p->nfields].name_len += len;
    return 0;
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
    struct ct_http_parser *p = from_hp(hp);
    if (p->phase != PH_HEAD)
        return 0;
    CT_ASSERT(p->fstate != FS_NONE);
    if (p->fstate == FS_NAME) {
        p->foff[p->nfields].value_off = p->hlen;
        p->fstate = FS_VALUE;
    }
    hbuf_append(p, at, len);
    p->foff[p->nfields].value_len += len;
    return 0;
}

static int head_complete(struct ct_http_parser *p);

static int on_headers_complete(http_parser *hp)
{
    struct ct_http_parser *p = from_hp(hp);
    int rc = head_complete(p);
    if (rc < 0)
        return -1;
    http_parser_pause(hp, 1);
    return rc;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
    struct ct_http_parser *p = from_hp(hp);
    CT_ASSERT(!p->cb_has_body);
    p->cb_has_body = true;
    p->cb_body = ct_str_make(at, len);
    /* The last piece of a Content-Length body: do not pause, or its last
     * byte would stay unconsumed; on_message_complete pauses instead. */
    if (!(p->msg.framing == CT_FRAME_LENGTH && hp->content_length == 0))
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

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_status = on_status,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
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

static size_t count_named(const struct ct_http_parser *p, struct ct_str name)
{
    size_t n = 0, upto = p->nfields + (p->fstate != FS_NONE);
    for (size_t i = 0; i < upto; i++)
        n += ct_str_eq_ci(ct_str_make(p->hbuf + p->foff[i].name_off, p->foff[i].name_len), name);
    return n;
}

/* What the library refused, in our words. */
static enum ct_http_ev fail_lib(struct ct_http_parser *p)
{
    enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
    switch (e) {
    case HPE_HEADER_OVERFLOW: return fail(p, 431, "header section too large");
    case HPE_UNEXPECTED_CONTENT_LENGTH:
        if (count_named(p, CT_STR("Content-Length")) > 1)
            return fail(p, 400, "duplicate Content-Length");
        return fail(p, 400, "Content-Length and Transfer-Encoding together");
    case HPE_INVALID_CONTENT_LENGTH: return fail(p, 400, "invalid Content-Length");
    case HPE_INVALID_TRANSFER_ENCODING: return fail(p, 400, "final transfer coding is not chunked");
    case HPE_INVALID_CHUNK_SIZE: return fail(p, 400, "invalid chunk size");
    case HPE_INVALID_URL: return fail(p, 400, "invalid request target");
    case HPE_INVALID_HEADER_TOKEN: return fail(p, 400, "invalid header field");
    default: return fail(p, 400, http_errno_description(e));
    }
}

/* ---- the complete head: semantics and framing (RFC 9112 §6.3) ------------ */

static void build_msg(struct ct_http_parser *p)
{
    struct ct_http_msg *m = &p->msg;
    memset(m, 0, sizeof(*m));
    m->kind = p->kind;
    m->version = p->hp.http_major * 10u + p->hp.http_minor;
    if (p->kind == CT_HTTP_REQUEST) {
        m->method_name = ct_str_make(p->hbuf, p->method_len);
        m->method = ct_http_method_lookup(m->method_name);
        m->target = ct_str_make(p->hbuf + p->method_len, p->url_len);
    } else {
        m->status = p->hp.status_code;
        m->reason = ct_str_make(p->hbuf, p->reason_len);
    }
    for (size_t i = 0; i < p->nfields; i++) {
        struct ct_http_field *f = &p->fields[i];
        f->name = ct_str_make(p->hbuf + p->foff[i].name_off, p->foff[i].name_len);
        f->value =
            ct_str_trim_ows(ct_str_make(p->hbuf + p->foff[i].value_off, p->foff[i].value_len));
        f->id = ct_hdr_lookup(f->name);
    }
    m->fields = p->fields;
    m->nfields = p->nfields;
}

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

/* Our framing must be the library's, or the two would split the stream in
 * different places. */
static bool lib_agrees(const struct ct_http_parser *p)
{
    bool chunked = p->hp.flags & F_CHUNKED, has_cl = p->hp.flags & F_CONTENTLENGTH;
    switch (p->msg.framing) {
    case CT_FRAME_LENGTH:
        return has_cl && !chunked && p->hp.content_length == p->msg.content_length;
    case CT_FRAME_CHUNKED: return chunked && !has_cl;
    case CT_FRAME_CLOSE: return !chunked && !has_cl;
    case CT_FRAME_NONE: return true; /* we tell the library to skip the body */
    }
    return false;
}

/* Called from on_headers_complete. Returns what that callback returns to
 * the library: 0 read the body, 1 no body, 2 no body and stop (tunnel); or
 * -1 with the error set. */
static int head_complete(struct ct_http_parser *p)
{
    struct ct_http_msg *m = &p->msg;
    field_end(p);
    build_msg(p);
    if (frame_from_fields(p) < 0)
        return -1;
    if ((p->kind == CT_HTTP_REQUEST ? check_request(p) : check_response(p)) < 0)
        return -1;
    bool close = ct_http_msg_has_token(m, CT_HDR_CONNECTION, CT_STR("close"));
    bool ka = ct_http_msg_has_token(m, CT_HDR_CONNECTION, CT_STR("keep-alive"));
    m->keep_alive = (m->version == 11 ? !close : ka && !close) && m->framing != CT_FRAME_CLOSE;
    m->upgrade = ct_http_msg_has_token(m, CT_HDR_CONNECTION, CT_STR("upgrade")) &&
                 ct_http_msg_find(m, CT_HDR_UPGRADE, NULL) != NULL;
    if (!lib_agrees(p))
        return set_err(p, 400, "ambiguous message framing"), -1;
    if (p->tunnel_after_end)
        return 2;
    return m->framing == CT_FRAME_NONE ? 1 : 0;
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
    /* A fresh library state per message: nothing (upgrade, s_dead after
     * "Connection: close", flags) leaks from one message into the next. */
    http_parser_init(&p->hp, p->kind == CT_HTTP_REQUEST ? HTTP_REQUEST : HTTP_RESPONSE);
    p->hp.data = p;
    p->hlen = 0;
    p->nfields = 0;
    p->fstate = FS_NONE;
    p->method_len = p->url_len = p->reason_len = 0;
    memset(&p->msg, 0, sizeof(p->msg));
    p->lex = (struct ct_http_lex){.st = CT_LX_START, .request = p->kind == CT_HTTP_REQUEST};
    p->body_seen = 0;
    memset(&p->cs, 0, sizeof(p->cs));
    p->tunnel_after_end = false;
    p->phase = PH_HEAD;
}

static enum ct_http_ev end_message(struct ct_http_parser *p)
{
    p->phase = p->tunnel_after_end ? PH_TUNNEL : PH_IDLE;
    return CT_HTTP_EV_END;
}

/* The library's own method list (http_parser.h), each name with its SP. */
static const struct ct_str lib_methods[] = {
#define CT_LIB_METHOD(num, name, string) {#string " ", sizeof(#string " ") - 1},
    HTTP_METHOD_MAP(CT_LIB_METHOD)
#undef CT_LIB_METHOD
};

/* The request line's start as the library is shown it for the method NAME:
 * NAME itself when on its list, else "POST ", which frames the same way
 * (see the top of this file). */
static struct ct_str method_line(struct ct_str name)
{
    for (size_t i = 0; i < CT_ARRAY_LEN(lib_methods); i++) {
        struct ct_str s = lib_methods[i];
        if (s.len == name.len + 1 && memcmp(s.p, name.p, name.len) == 0)
            return s;
    }
    return CT_STR("POST ");
}

/* Requests, until the method token and its SP are in: the lexer alone reads
 * BUF (up to the first SP, which ends the token or is an error) and the
 * token's bytes are kept at hbuf[0]; the leading empty lines it allows are
 * never shown to the library. *USED: the bytes taken. Once the token is
 * complete, the library is owed method_line(). *LIB_FROM: where in BUF the
 * library's input starts: at *USED when it was given the line here, or, in
 * the common case of a token it knows that began in BUF with more bytes
 * after it, at the token, so that it reads the token with the rest of the
 * head in one run (same bytes either way; only fewer calls). */
static enum ct_http_ev feed_method(struct ct_http_parser *p, const char *buf, size_t len,
                                   size_t *used, size_t *lib_from)
{
    struct ct_http_lex *L = &p->lex;
    size_t base = L->total; /* head offset of buf[0] */
    const char *sp = memchr(buf, ' ', len);
    size_t upto = sp ? (size_t)(sp - buf) + 1 : len;
    size_t k = ct_http_lex_scan(L, &p->lim, buf, upto);
    if (L->err_status)
        return fail(p, L->err_status, L->err_reason);
    CT_ASSERT(k == upto && (L->method_done || upto == len));
    if (L->st != CT_LX_START && L->st != CT_LX_START_LF) { /* the token has begun */
        size_t from = L->line_start > base ? L->line_start - base : 0;
        size_t to = L->method_done ? L->line_start + L->method_len - base : k;
        hbuf_append(p, buf + from, to - from);
    }
    *used = *lib_from = k;
    if (!L->method_done)
        return CT_HTTP_EV_MORE;
    CT_ASSERT(p->hlen == L->method_len);
    p->method_len = p->hlen;
    struct ct_str name = ct_str_make(p->hbuf, p->hlen);
    struct ct_str line = method_line(name);
    bool lib_knows = line.len == name.len + 1 && memcmp(line.p, name.p, name.len) == 0;
    if (lib_knows && L->line_start >= base && k < len) {
        *lib_from = L->line_start - base;
        return CT_HTTP_EV_MORE;
    }
    if (lib_exec(p, line.p, line.len) != line.len || HTTP_PARSER_ERRNO(&p->hp) != HPE_OK)
        return fail(p, 400, "parser disagreement on the method");
    return CT_HTTP_EV_MORE;
}

static enum ct_http_ev feed_head(struct ct_http_parser *p, const char *buf, size_t len,
                                 size_t *used)
{
    size_t m = 0, from = 0; /* lexer input: buf + m; the library's: buf + from */
    if (p->kind == CT_HTTP_REQUEST && !p->lex.method_done) {
        enum ct_http_ev ev = feed_method(p, buf, len, &m, &from);
        *used = m;
        if (ev != CT_HTTP_EV_MORE || m == len)
            return ev;
    }
    struct ct_http_lex L = p->lex;
    size_t k = ct_http_lex_scan(&L, &p->lim, buf + m, len - m);
    size_t lk = m - from + k; /* what the library is given */
    size_t n = lk ? lib_exec(p, buf + from, lk) : 0;
    enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
    if (e == HPE_CB_headers_complete)
        return fail(p, 400, "invalid head"); /* the callback set the real error */
    if (lib_failed(p))
        return fail_lib(p);
    if (e == HPE_PAUSED) {
        /* head complete; the library stopped on the final LF */
        if (L.st != CT_LX_DONE || n + 1 != lk)
            return fail(p, 400, "parser disagreement on the end of the head");
        p->lex = L;
        p->msg.head_bytes = L.total;
        p->phase = PH_BODY;
        if (lib_exec(p, buf + from + n, 1) != 1 || lib_failed(p)) {
            set_err(p, 400, "invalid head");
            p->pending_err = true;
        } else if (p->cb_end) {
            p->pending_end = true;
        }
        *used = m + k;
        return CT_HTTP_EV_HEAD;
    }
    p->lex = L;
    if (L.err_status)
        return fail(p, L.err_status, L.err_reason);
    if (n != lk || L.st == CT_LX_DONE)
        return fail(p, 400, "parser disagreement on the head");
    *used = m + k;
    return CT_HTTP_EV_MORE;
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

static enum ct_http_ev feed_body(struct ct_http_parser *p, const char *buf, size_t len,
                                 size_t *used, struct ct_str *chunk)
{
    bool chunked = p->msg.framing == CT_FRAME_CHUNKED;
    size_t n = lib_exec(p, buf, len);
    size_t a = n, b = n; /* the body piece, if any: buf[a..b) */
    if (p->cb_has_body) {
        a = (size_t)(p->cb_body.p - buf);
        b = a + p->cb_body.len;
        CT_ASSERT(b <= n);
    }
    if (chunked && !shadow_scan(p, buf, a))
        return fail(p, 400, "malformed chunked framing");
    if (lib_failed(p))
        return fail_lib(p);
    if (!p->cb_has_body) {
        if (!p->cb_end) {
            if (n != len)
                return fail(p, 400, "parser disagreement on the body");
            *used = n;
            return CT_HTTP_EV_MORE;
        }
        if (chunked && p->cs.st != CT_CK_DONE)
            return fail(p, 400, "parser disagreement on the last chunk");
        *used = n;
        return end_message(p);
    }
    struct ct_str piece = p->cb_body;
    if (chunked) {
        if (p->cs.st != CT_CK_DATA || piece.len > p->cs.remaining)
            return fail(p, 400, "parser disagreement on chunk data");
        p->cs.remaining -= piece.len;
    }
    bool ok = body_allowed(p, &piece);
    if (ok && chunked)
        ok = shadow_scan(p, buf + b, n - b);
    if (ok && p->cb_end && chunked && p->cs.st != CT_CK_DONE)
        ok = (set_err(p, 400, "parser disagreement on the last chunk"), false);
    p->body_seen += piece.len;
    *used = n;
    if (!ok) {
        p->pending_err = true;
        if (piece.len == 0)
            return fail(p, 400, "body");
    } else if (p->cb_end) {
        p->pending_end = true;
    }
    *chunk = piece;
    return CT_HTTP_EV_BODY;
}

enum ct_http_ev ct_http_parser_feed(struct ct_http_parser *p, const char *buf, size_t len,
                                    size_t *used, struct ct_str *chunk)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    *used = 0;
    if (chunk)
        *chunk = CT_STR_NULL;
    if (p->phase == PH_ERROR)
        return CT_HTTP_EV_ERROR;
    if (p->pending_err) {
        p->pending_err = false;
        p->phase = PH_ERROR;
        return CT_HTTP_EV_ERROR;
    }
    if (p->pending_end) {
        p->pending_end = false;
        return end_message(p);
    }
    if (p->phase == PH_TUNNEL)
        return CT_HTTP_EV_END;
    if (len == 0)
        return CT_HTTP_EV_MORE;
    if (p->phase == PH_IDLE)
        message_begin(p);
    if (p->phase == PH_HEAD)
        return feed_head(p, buf, len, used);
    struct ct_str dummy;
    return feed_body(p, buf, len, used, chunk ? chunk : &dummy);
}

enum ct_http_ev ct_http_parser_eof(struct ct_http_parser *p)
{
    CT_CHECK_OBJ(p, CT_HTTP_PARSER_MAGIC);
    if (p->phase == PH_ERROR || p->pending_err) {
        p->pending_err = false;
        p->phase = PH_ERROR;
        return CT_HTTP_EV_ERROR;
    }
    if (p->pending_end) {
        p->pending_end = false;
        return end_message(p);
    }
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
    free(p->foff);
    free(p->fields);
    p->magic = 0;
    free(p);
    *pp = NULL;
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
