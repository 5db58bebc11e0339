/*
 * http/http_int.h: shared inside http/ only (never included from outside):
 * the octet classes, the head lexer and the chunked-framing shadow that
 * http_parse.c runs beside http-parser (see http_lex.c).
 */
#ifndef CT_HTTP_INT_H
#define CT_HTTP_INT_H

#include "http/http.h"

/* ---- octet classes (ct_http_cls) ----------------------------------------- */

#define CT_CH_TCHAR 0x01 /* RFC 9110 §5.6.2 */
#define CT_CH_VCHAR 0x02 /* 0x21-0x7e */
#define CT_CH_OBS 0x04   /* obs-text 0x80-0xff */
#define CT_CH_WS 0x08    /* SP HTAB */
#define CT_CH_DIGIT 0x10
#define CT_CH_HEX 0x20
#define CT_CH_HOST 0x40 /* uri-host [":" port] octets: unreserved, sub-delims, %, :, [ ] */
#define CT_CH_FV (CT_CH_VCHAR | CT_CH_OBS | CT_CH_WS) /* field-value octets */

extern uint8_t ct_http_cls[256];
void ct_http_cls_init(void); /* idempotent, thread-safe */

/* ---- the head lexer (http_lex.c) ----------------------------------------- */

enum ct_http_lex_state {
    CT_LX_START, /* before the start line; empty lines allowed (RFC 9112 §2.2) */
    CT_LX_START_LF,
    CT_LX_METHOD,
    CT_LX_TARGET_START,
    CT_LX_TARGET,
    CT_LX_VERSION, /* "HTTP/" then DIGIT "." DIGIT, tracked by ver_idx */
    CT_LX_STATUS_SP,
    CT_LX_STATUS,
    CT_LX_REASON,
    CT_LX_LINE_CR,
    CT_LX_LINE_LF,
    CT_LX_FIELD_START,
    CT_LX_NAME,
    CT_LX_VALUE,
    CT_LX_VALUE_LF,
    CT_LX_END_LF,
    CT_LX_DONE,
};

/* Where a field line's colon and CR are, as offsets in the head (the
 * `total` they were lexed at): the parser then takes each field without
 * searching for its boundaries again. The first CT_HTTP_LEX_MARKS lines are
 * marked; past them the parser searches (more fields than any browser
 * sends). */
#define CT_HTTP_LEX_MARKS 32
struct ct_http_lex_mark {
    uint32_t colon, cr;
};

struct ct_http_lex {
    uint8_t st;
    uint8_t ver_idx; /* bytes of "HTTP/D.D" seen */
    uint8_t major, minor;
    uint8_t status_digits;
    bool request;      /* start line is a request line */
    bool trailer;      /* field lines only (chunked trailer section) */
    bool method_done;  /* a valid method token and its SP were seen */
    size_t method_len; /* with method_done: bytes of the token */
    size_t total;      /* bytes of this head so far */
    size_t line_start; /* value of total where the start line began */
    size_t line_end;   /* and at its CR (a request's target ends 9 bytes before) */
    unsigned nfields;
    struct ct_http_lex_mark *marks; /* CT_HTTP_LEX_MARKS of them; NULL: none kept */
    unsigned err_status; /* 0: no error */
    const char *err_reason;
};

/* Scan BUF[0..LEN) from state L under LIM. Returns how many bytes were
 * accepted: all of them, or up to and including the head's final LF
 * (L->st == CT_LX_DONE), or up to the offending byte (L->err_status set,
 * with the status for a request: 400, 414, 431 or 505). */
size_t ct_http_lex_scan(struct ct_http_lex *L, const struct ct_http_limits *lim, const char *buf,
                        size_t len);

/* ---- the chunked framing shadow (http_lex.c) ----------------------------- */

enum ct_http_chunk_state {
    CT_CK_SIZE_START,
    CT_CK_SIZE,
    CT_CK_SIZE_WS,
    CT_CK_EXT_NAME_START,
    CT_CK_EXT_NAME,
    CT_CK_EXT_AFTER_NAME,
    CT_CK_EXT_VAL_START,
    CT_CK_EXT_VAL_TOKEN,
    CT_CK_EXT_VAL_QUOTED,
    CT_CK_EXT_VAL_QESC,
    CT_CK_EXT_AFTER_VAL,
    CT_CK_SIZE_LF,
    CT_CK_DATA,
    CT_CK_DATA_LF,
    CT_CK_TRAILER,
    CT_CK_DONE,
};

struct ct_http_chunk {
    uint8_t st;
    uint64_t size;      /* of the chunk being read */
    uint64_t remaining; /* data bytes still owed by http-parser */
    size_t line_len;    /* bytes of the current chunk-size line */
    struct ct_http_lex trailer;
    unsigned err_status;
    const char *err_reason;
};

/* Validate framing bytes BUF[0..LEN) (everything http-parser consumed that
 * was not chunk data). False, with err_* set, unless they are exactly
 * RFC 9112 §7.1 chunked framing so far. The caller subtracts the data
 * pieces from cs->remaining. */
bool ct_http_chunk_scan(struct ct_http_chunk *cs, const struct ct_http_limits *lim, const char *buf,
                        size_t len);

#endif /* CT_HTTP_INT_H */
