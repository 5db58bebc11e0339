/*
 * http/http.h: HTTP/1.1 messages, shared by the proxy, the cache and the
 * origin. The only module that sees http-parser.
 *
 * - The header table (http_hdr_tbl.h): every header we act on has an id and
 *   flags (hop-by-hop, single-valued, list-valued, ...), so no other module
 *   compares header names by hand.
 * - The parser: incremental (any split of the input gives the same result),
 *   strict (ambiguous framing is an error, never a guess), pull-style: feed it
 *   bytes and it tells you what it found: a complete head, a piece of body, the
 *   end of a message, or an error with the status to answer.
 * - Helpers: comma-separated list tokens, HTTP dates, Cache-Control.
 *
 * Pure: no sockets, no libevent, no logging. Thread-safe as long as each
 * parser is used by one thread at a time; the tables are read-only.
 */
#ifndef CT_HTTP_H
#define CT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/common.h"

/* ---- methods --------------------------------------------------------- */

/* CT_METHOD(ID, "NAME", flags) */
#define CT_METHOD_SAFE 0x1       /* RFC 9110 §9.2.1 */
#define CT_METHOD_IDEMPOTENT 0x2 /* RFC 9110 §9.2.2: may be retried */
#define CT_METHOD_CACHEABLE 0x4  /* responses may be stored (we store GET only) */

#define CT_METHOD_TABLE(X)                                                     \
    X(GET, "GET", CT_METHOD_SAFE | CT_METHOD_IDEMPOTENT | CT_METHOD_CACHEABLE) \
    X(HEAD, "HEAD", CT_METHOD_SAFE | CT_METHOD_IDEMPOTENT | CT_METHOD_CACHEABLE) \
    X(POST, "POST", 0)                                                         \
    X(PUT, "PUT", CT_METHOD_IDEMPOTENT)                                        \
    X(DELETE, "DELETE", CT_METHOD_IDEMPOTENT)                                  \
    X(CONNECT, "CONNECT", 0)                                                   \
    X(OPTIONS, "OPTIONS", CT_METHOD_SAFE | CT_METHOD_IDEMPOTENT)               \
    X(TRACE, "TRACE", CT_METHOD_SAFE | CT_METHOD_IDEMPOTENT)                   \
    X(PATCH, "PATCH", 0)                                                       \
    X(PURGE, "PURGE", 0)

enum ct_http_method {
    CT_METHOD_OTHER = 0, /* a valid token we do not know: forwarded, unsafe */
#define CT_METHOD_ENUM(id, name, flags) CT_METHOD_##id,
    CT_METHOD_TABLE(CT_METHOD_ENUM)
#undef CT_METHOD_ENUM
        CT_METHOD__COUNT
};

/* Method id for NAME (case-sensitive, RFC 9110 §9.1); CT_METHOD_OTHER if unknown. */
enum ct_http_method ct_http_method_lookup(struct ct_str name);
const char *ct_http_method_name(enum ct_http_method m); /* "OTHER" for OTHER */
unsigned ct_http_method_flags(enum ct_http_method m);

/* ---- the header table ------------------------------------------------ */

#define CT_HDRF_HOP 0x01        /* hop-by-hop: never forwarded (RFC 9110 §7.6.1) */
#define CT_HDRF_SINGLE 0x02     /* must not repeat (Host, Content-Length, ...) */
#define CT_HDRF_LIST 0x04       /* comma-separated list, lines may be combined */
#define CT_HDRF_PER_HIT 0x08    /* written fresh by the cache on every hit */
#define CT_HDRF_NO_STORE 0x10   /* never stored with a cached response */
#define CT_HDRF_TARGETED_CC 0x20 /* targeted cache control, RFC 9213 */
/* Never made hop-by-hop by a Connection token: the message's framing and
 * authority (Content-Length, Host) are read from it once, and the next hop
 * must get them as read ("Connection: Content-Length" would otherwise send
 * the body unframed: the next request, smuggled). */
#define CT_HDRF_PINNED 0x40
/* A conditional or range the cache answers from the object it stores
 * (If-None-Match, If-Modified-Since, Range, If-Range): a fill or a refresh
 * does not forward the client's (RFC 9111 §4.3.2, §3.4). */
#define CT_HDRF_CACHE_ANSWERS 0x80

/* The table itself: CT_HDR_TABLE(X) with X(ID, "Canonical-Name", flags). */
#include "http/http_hdr_tbl.h"

enum ct_hdr_id {
    CT_HDR_UNKNOWN = 0,
#define CT_HDR_ENUM(id, name, flags) CT_HDR_##id,
    CT_HDR_TABLE(CT_HDR_ENUM)
#undef CT_HDR_ENUM
        CT_HDR__COUNT
};

/* Case-insensitive lookup of a header NAME; CT_HDR_UNKNOWN if not in the table. */
enum ct_hdr_id ct_hdr_lookup(struct ct_str name);
const char *ct_hdr_name(enum ct_hdr_id id); /* canonical spelling; NULL for UNKNOWN */
/* The canonical name in lower case (HTTP/2's spelling, RFC 9113 §8.2.1), in
 * static memory; CT_STR_NULL for UNKNOWN. Any thread. */
struct ct_str ct_hdr_lname(enum ct_hdr_id id);
unsigned ct_hdr_flags(enum ct_hdr_id id);    /* 0 for UNKNOWN */

/* ---- messages -------------------------------------------------------- */

enum ct_http_kind { CT_HTTP_REQUEST, CT_HTTP_RESPONSE };

enum ct_http_framing {
    CT_FRAME_NONE,    /* no body (GET without length, HEAD response, 1xx/204/304) */
    CT_FRAME_LENGTH,  /* Content-Length bytes */
    CT_FRAME_CHUNKED, /* Transfer-Encoding ending in chunked */
    CT_FRAME_CLOSE,   /* response body delimited by connection close */
};

struct ct_http_field {
    struct ct_str name; /* as received (case kept) */
    struct ct_str value; /* OWS trimmed */
    enum ct_hdr_id id;
};

/* A complete message head. Every view points into memory owned by the
 * parser that produced it, valid until that parser starts the next message
 * (the first ct_http_parser_feed() after CT_HTTP_EV_END) or is freed. */
struct ct_http_msg {
    enum ct_http_kind kind;
    /* request line */
    enum ct_http_method method;
    struct ct_str method_name;
    struct ct_str target;
    /* status line */
    unsigned status;
    struct ct_str reason;
    /* both */
    unsigned version; /* 10 or 11 */
    const struct ct_http_field *fields;
    size_t nfields;
    enum ct_http_framing framing;
    uint64_t content_length; /* with CT_FRAME_LENGTH */
    bool keep_alive;         /* version default adjusted by Connection */
    bool expect_continue;    /* request: Expect: 100-continue */
    bool upgrade;            /* Connection: upgrade with an Upgrade field, not h2c */
    size_t head_bytes;       /* size of the head on the wire */
    /* Bit ID set: a field with that id is present. Bit 0 (UNKNOWN) says the
     * set is filled in; a message built by hand leaves it 0 and look-ups
     * scan. Most look-ups are for fields a message does not have. */
    uint64_t ids_seen;
};

/* Give MSG the fields F[0..N) (views the caller keeps alive), and the
 * ids_seen that goes with them. Anything that changes a message's fields
 * goes through here, or look-ups would trust the old set. */
void ct_http_msg_set_fields(struct ct_http_msg *msg, const struct ct_http_field *f, size_t n);

/* Does a body follow MSG's head (chunked, or a Content-Length above 0)? */
static inline bool ct_http_msg_body_expected(const struct ct_http_msg *m)
{
    return m->framing == CT_FRAME_CHUNKED ||
           (m->framing == CT_FRAME_LENGTH && m->content_length > 0);
}

/* First field with ID after AFTER (NULL: from the start); NULL if none. */
const struct ct_http_field *ct_http_msg_find(const struct ct_http_msg *msg, enum ct_hdr_id id,
                                             const struct ct_http_field *after);
/* First field named NAME (case-insensitive) after AFTER; for names not in the table. */
const struct ct_http_field *ct_http_msg_find_name(const struct ct_http_msg *msg,
                                                  struct ct_str name,
                                                  const struct ct_http_field *after);
/* Does any line of header ID contain TOKEN as a list element (case-insensitive)? */
bool ct_http_msg_has_token(const struct ct_http_msg *msg, enum ct_hdr_id id, struct ct_str token);
/* Proxy-*: connection-specific (RFC 9110 §7.6.1 lists Proxy- fields), and
 * "Proxy:" itself is httpoxy (CVE-2016-5385): never forwarded, never stored. */
bool ct_http_field_is_proxy(const struct ct_http_field *f);

/* Is this field hop-by-hop for this message: flagged CT_HDRF_HOP, or named
 * by a token of the message's Connection header (RFC 9110 §7.6.1) and not
 * CT_HDRF_PINNED? */
bool ct_http_msg_field_is_hop(const struct ct_http_msg *msg, const struct ct_http_field *f);

/* ---- the parser ------------------------------------------------------ */

struct ct_http_limits {
    size_t max_line;       /* request or status line; over it: 414 (requests) */
    size_t max_head;       /* all header bytes; over it: 431 */
    unsigned max_fields;   /* header count; over it: 431 */
    uint64_t max_body;     /* 0 = unlimited; over it: 413 */
};

/* 8 KiB line, 64 KiB head, 100 fields, unlimited body. */
void ct_http_limits_default(struct ct_http_limits *lim);

enum ct_http_ev {
    CT_HTTP_EV_MORE,  /* all input consumed, need more bytes */
    CT_HTTP_EV_HEAD,  /* a complete head: ct_http_parser_msg() */
    CT_HTTP_EV_BODY,  /* *chunk holds body bytes (de-chunked), pointing into the input */
    CT_HTTP_EV_END,   /* the message is complete; the next feed starts a new one */
    CT_HTTP_EV_ERROR, /* ct_http_parser_error(); the parser stays in error */
};

struct ct_http_parser;

/* A parser for requests or responses, with LIMITS copied (NULL: defaults).
 * Owned by the caller; free with ct_http_parser_free(). Never fails. */
struct ct_http_parser *ct_http_parser_new(enum ct_http_kind kind,
                                          const struct ct_http_limits *limits);
void ct_http_parser_free(struct ct_http_parser **pp);

/* Request parsers of a gateway (the proxy, not cachet-origin, which must
 * see requests as sent): an absolute-form target becomes origin-form and
 * Host becomes its authority, added when missing (RFC 9112 §3.2.2: the
 * target's authority wins, and a proxy generates Host from it), so whoever
 * reads the message sees one authority; a target with userinfo is a 400.
 * End-to-end fields that Connection names (RFC 9110 §7.6.1: removed before
 * forwarding) are removed from the message, so that the proxy and the cache
 * act on the request the origin gets. Off by default. */
void ct_http_parser_set_gateway(struct ct_http_parser *p, bool on);

/* Response parsers: the method of the request this response answers, which
 * decides whether a body follows (HEAD: none; CONNECT 2xx: tunnel). Call before
 * feeding each response. */
void ct_http_parser_set_request_method(struct ct_http_parser *p, enum ct_http_method m);

/* Parse from BUF[0..LEN). *USED receives how many bytes were consumed (always
 * advance the input by it; it may be less than LEN after HEAD, BODY and END).
 * With CT_HTTP_EV_BODY, *CHUNK points into BUF. Interim 1xx responses come as
 * HEAD then END, and the final response follows. After an upgrade (101, or a
 * 2xx to CONNECT) the parser reports END and consumes nothing more: the rest of
 * the stream is a tunnel.
 * Call it again after HEAD and BODY even when no input is left (LEN 0): the
 * END of a message without a body, or after the last piece of a Content-Length
 * body, comes from that call with *USED 0. A BODY *CHUNK always lies within the
 * *USED bytes; the piece that crosses max_body is cut at the limit and the
 * next call reports the error (413; 502 for responses). CHUNK may be NULL. */
enum ct_http_ev ct_http_parser_feed(struct ct_http_parser *p, const char *buf, size_t len,
                                    size_t *used, struct ct_str *chunk);

/* The peer closed. Returns CT_HTTP_EV_END if that completes a message
 * (a close-delimited response), CT_HTTP_EV_MORE if no message was started,
 * CT_HTTP_EV_ERROR if a message is truncated. */
enum ct_http_ev ct_http_parser_eof(struct ct_http_parser *p);

/* The head from the last CT_HTTP_EV_HEAD. */
const struct ct_http_msg *ct_http_parser_msg(const struct ct_http_parser *p);

/* After CT_HTTP_EV_ERROR: the status to answer (400, 413, 414, 417, 431, 501,
 * 505; 502 for a response parser: the origin's fault) and a short reason
 * fit for a log line and an error body ("Content-Length and Transfer-Encoding
 * together"). */
unsigned ct_http_parser_error_status(const struct ct_http_parser *p);
const char *ct_http_parser_error_reason(const struct ct_http_parser *p);

/* True between HEAD and END: some of the message has been consumed. */
bool ct_http_parser_in_message(const struct ct_http_parser *p);

/* True once any byte of a message other than leading empty lines has been
 * consumed, until its END (a client that sent half a head is not idle). */
bool ct_http_parser_started(const struct ct_http_parser *p);

/* True once a response parser reported the END of a 101 or of a 2xx to
 * CONNECT: the rest of the stream is a tunnel and feed() consumes nothing. */
bool ct_http_parser_is_tunnel(const struct ct_http_parser *p);

/* ---- list tokens (RFC 9110 §5.6.1) ------------------------------------ */

/* Take the next non-empty element of a comma-separated list from *REST,
 * OWS-trimmed, into *ELEM. Quoted strings are kept whole (a comma inside quotes
 * does not split). Returns false when the list is exhausted. */
bool ct_http_list_next(struct ct_str *rest, struct ct_str *elem);

/* Take the next "name=value" pair of a list separated by SEP (';' for a
 * Cookie field, RFC 6265 §4.2.1; '&' for a query) from *REST: leading
 * spaces and tabs skipped, a pair without '=' has the empty value, nothing
 * decoded. Returns false when the list is exhausted. */
bool ct_http_pair_next(struct ct_str *rest, char sep, struct ct_str *name, struct ct_str *value);

/* Does the list VALUE contain TOKEN (case-insensitive, whole element or the
 * element's token before ';' or '=')? */
bool ct_http_list_has(struct ct_str value, struct ct_str token);

/* Is S a valid token (RFC 9110 §5.6.2 tchar+)? */
bool ct_http_is_token(struct ct_str s);

/* ---- dates (RFC 9110 §5.6.7) ------------------------------------------ */

#define CT_HTTP_DATE_LEN 29 /* "Sun, 06 Nov 1994 08:49:37 GMT" */

/* Our Via entry (RFC 9110 §7.6.3), appended to the Via of what we forward,
 * both ways and over every protocol. */
#define CT_VIA_US "1.1 cachet"

/* Write T as IMF-fixdate into OUT (CT_HTTP_DATE_LEN bytes + NUL). */
void ct_http_date_format(time_t t, char out[CT_HTTP_DATE_LEN + 1]);

/* The Date of the current second, formatted once per second: every response
 * carries one (RFC 9110 §6.6.1), and strftime-like work per response would
 * cost more than the rest of the head. Zero it to start; one per thread
 * (a worker's), never shared. Returns DC's text for NOW (NUL-terminated,
 * CT_HTTP_DATE_LEN bytes), valid until the next call with another second. */
struct ct_http_date_cache {
    time_t sec;
    char text[CT_HTTP_DATE_LEN + 1];
};
const char *ct_http_date_cached(struct ct_http_date_cache *dc, time_t now);

/* ---- status codes (RFC 9110 §15) --------------------------------------- */

/* The reason phrase of STATUS ("Not Found"), "Unknown" if not in the table.
 * Static memory; any thread. */
const char *ct_http_status_reason(unsigned status);

/* Parse IMF-fixdate, or the obsolete RFC 850 and asctime formats. Returns CT_OK
 * with *T set, or CT_EPROTO for anything else (callers decide what an invalid
 * date means: an invalid Expires is "already expired"). */
int ct_http_date_parse(struct ct_str s, time_t *t);
/* The same with the clock passed in: NOW only places an RFC 850 two-digit
 * year (one more than 50 years after NOW is read as the previous century).
 * ct_http_date_parse() is this with time(NULL). */
int ct_http_date_parse_at(struct ct_str s, time_t now, time_t *t);

/* ---- Cache-Control (RFC 9111 §5.2) ------------------------------------ */

#define CT_CC_NO_STORE 0x0001
#define CT_CC_NO_CACHE 0x0002          /* unqualified no-cache */
#define CT_CC_PRIVATE 0x0004           /* unqualified private */
#define CT_CC_PUBLIC 0x0008
#define CT_CC_MUST_REVALIDATE 0x0010
#define CT_CC_PROXY_REVALIDATE 0x0020
#define CT_CC_NO_TRANSFORM 0x0040
#define CT_CC_ONLY_IF_CACHED 0x0080
#define CT_CC_MUST_UNDERSTAND 0x0100
#define CT_CC_IMMUTABLE 0x0200
#define CT_CC_MAX_STALE_ANY 0x0400     /* max-stale without a value */
#define CT_CC_NO_CACHE_FIELDS 0x0800   /* no-cache="field,..." (qualified) */
#define CT_CC_PRIVATE_FIELDS 0x1000    /* private="field,..." (qualified) */
#define CT_CC_INVALID 0x8000           /* a known directive had an invalid or
                                          conflicting duplicate value */

#define CT_CC_UNSET (-1)

/* Parsed directives; delta-seconds values are CT_CC_UNSET when absent and
 * clamped to 2^31 on overflow (RFC 9111 §1.2.2). */
struct ct_cc {
    unsigned flags;
    int64_t max_age;
    int64_t s_maxage;
    int64_t max_stale;
    int64_t min_fresh;
    int64_t stale_while_revalidate;
    int64_t stale_if_error;
};

void ct_cc_init(struct ct_cc *cc);
/* Add the directives of one field line VALUE to CC (call once per line, in
 * order, after ct_cc_init). Returns CT_OK, or CT_EPROTO if something in the line
 * was malformed (what could be understood is still recorded; CT_CC_INVALID is
 * set when a known directive's value was unusable). */
int ct_cc_parse(struct ct_cc *cc, struct ct_str value);
/* All lines of header ID (Cache-Control, CDN-Cache-Control, ...) of MSG. */
void ct_cc_from_msg(struct ct_cc *cc, const struct ct_http_msg *msg, enum ct_hdr_id id);

#endif /* CT_HTTP_H */
