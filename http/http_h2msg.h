/*
 * http/http_h2msg.h: a request from a decoded field section (an HTTP/2
 * header list, RFC 9113 §8.2-8.3; HTTP/3 has the same rules, RFC 9114 §4.2),
 * validated to the letter and turned into the struct ct_http_msg that the
 * HTTP/1 parser produces, so the rest of cachet sees one kind of request.
 *
 * The caller (an HTTP/2 session) feeds each decoded field in order with
 * ct_http_h2msg_add(), then calls ct_http_h2msg_finish() at the end of the
 * header block. Any violation makes the request malformed: the caller resets
 * the stream (PROTOCOL_ERROR, RFC 9113 §8.1.1) or, for the limits, answers
 * the status given. Nothing malformed is ever handed on.
 *
 * What the message looks like:
 * - method from :method, target from :path (CONNECT: from :authority, in
 *   authority-form as HTTP/1 has it), version 20;
 * - Host from :authority (RFC 9113 §8.3.1: a Host field that differs from
 *   :authority is malformed; one that agrees is folded into one Host);
 * - cookie fields joined with "; " (RFC 9113 §8.2.3), so a single Cookie
 *   line reaches an HTTP/1 origin;
 * - framing: LENGTH with content-length; NONE when the HEADERS frame ended
 *   the stream; otherwise CHUNKED, meaning "a body of unknown length that
 *   ends with the stream": it must be forwarded to an HTTP/1 origin chunked.
 *
 * Pure: no nghttp2, no sockets. One builder per stream, one thread.
 */
#ifndef CT_HTTP_H2MSG_H
#define CT_HTTP_H2MSG_H

#include "http/http.h"

struct ct_http_h2msg;

/* The limits of one request's field section. */
struct ct_http_h2msg_limits {
    size_t max_list_size; /* RFC 9113 §6.5.2: sum of name + value + 32 per field; over: 431 */
    unsigned max_fields;  /* regular fields; over: 431 */
};

/* A builder with LIM copied (NULL: 64 KiB list, 100 fields). Owned by the
 * caller; free with ct_http_h2msg_free(). Never fails. */
struct ct_http_h2msg *ct_http_h2msg_new(const struct ct_http_h2msg_limits *lim);
void ct_http_h2msg_free(struct ct_http_h2msg **bp);
/* B as ct_http_h2msg_new() made it, with LIM, for the next request (a
 * stream's builder kept for the next stream: no allocation). */
void ct_http_h2msg_reset(struct ct_http_h2msg *b, const struct ct_http_h2msg_limits *lim);

/* Add one decoded field; NAME and VALUE are copied. Returns CT_OK, CT_EPROTO
 * (malformed: ct_http_h2msg_error_status() is 400) or CT_ELIMIT (a limit:
 * 431). After the first error every call returns that error and does no
 * work, so a decompression bomb costs no more than its input. */
int ct_http_h2msg_add(struct ct_http_h2msg *b, struct ct_str name, struct ct_str value);

/* The header block is complete; END_STREAM says whether the frame that ended
 * it also ended the stream (no body). Checks the section as a whole (the
 * required pseudo-headers, CONNECT, Host against :authority, content-length)
 * and on CT_OK sets *MSGP to the request, valid until the builder is freed.
 * Returns CT_EPROTO (400), CT_ELIMIT (431) or CT_EPROTO with 417 (an
 * expectation other than 100-continue) otherwise. */
int ct_http_h2msg_finish(struct ct_http_h2msg *b, bool end_stream, const struct ct_http_msg **msgp);

/* After finish: the fields that follow are a trailer section (RFC 9113
 * §8.1): each is validated as a field (no pseudo-headers) and dropped.
 * ct_http_h2msg_add() then returns CT_EPROTO for a malformed one. */
void ct_http_h2msg_begin_trailers(struct ct_http_h2msg *b);

/* The :scheme of a finished request (empty for CONNECT). */
struct ct_str ct_http_h2msg_scheme(const struct ct_http_h2msg *b);

/* After an error: the status an HTTP/1 server would answer (400, 417, 431)
 * and a reason for logs ("uppercase field name"). 0 and NULL before. */
unsigned ct_http_h2msg_error_status(const struct ct_http_h2msg *b);
const char *ct_http_h2msg_error_reason(const struct ct_http_h2msg *b);

#endif /* CT_HTTP_H2MSG_H */
