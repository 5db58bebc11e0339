/*
 * common/close.h: why a client connection (or, later, a request) ended:
 * enum ct_close and its name, text, status and is-error, all generated from
 * the one table common/close_tbl.h (Varnish include/tbl/sess_close.h).
 *
 * The accessors are inline reads of one const table (ct_close_tbl, in
 * close.c), so any thread may call them and the log, stats and error paths
 * pay nothing for them. WHY must be a value of the enum: anything else is a
 * caller bug and panics.
 *
 * XXX(#13): proxy/ctx.h still declares its own enum ct_close and
 * proxy/h1/client.c its own table; the request-core split replaces both with
 * this header (and proxy/stats/stats.h's mirror enum ct_stats_close with
 * CT_CLOSE__COUNT). Until then no file includes both.
 */
#ifndef CT_CLOSE_H
#define CT_CLOSE_H

#include "common/common.h"

enum ct_close {
#define CT_CLOSE(name, is_err, status, text) CT_CLOSE_##name,
#include "common/close_tbl.h"
#undef CT_CLOSE
    CT_CLOSE__COUNT
};

struct ct_close_row {
    const char *name;   /* "RX_TIMEOUT": the enum's name, for logs */
    const char *text;   /* "client request timeout" */
    unsigned status;    /* answer if nothing was sent yet; 0: just close */
    bool is_err;        /* worth a log line and an error counter */
};
extern const struct ct_close_row ct_close_tbl[CT_CLOSE__COUNT];

static inline const struct ct_close_row *ct_close_row(enum ct_close why)
{
    CT_ASSERT((unsigned)why < CT_CLOSE__COUNT);
    return &ct_close_tbl[why];
}
static inline const char *ct_close_name(enum ct_close why)
{
    return ct_close_row(why)->name;
}
static inline const char *ct_close_text(enum ct_close why)
{
    return ct_close_row(why)->text;
}
static inline unsigned ct_close_status(enum ct_close why)
{
    return ct_close_row(why)->status;
}
/* The Cache-Status (RFC 9211) of the error answer for WHY, when it says
 * more than the status: NULL for none. */
static inline const char *ct_close_cache_status(enum ct_close why)
{
    return why == CT_CLOSE_ORIGIN_TLS ? "cachet; detail=origin-tls" : NULL;
}

static inline bool ct_close_is_err(enum ct_close why)
{
    return ct_close_row(why)->is_err;
}

/* The client's fault (close_tbl.h's group from RX_BAD to TLS_HANDSHAKE):
 * logged at INFO and rate-limited (ct_log_client), not at ERR. */
static inline bool ct_close_is_client(enum ct_close why)
{
    return why >= CT_CLOSE_RX_BAD && why <= CT_CLOSE_TLS_HANDSHAKE;
}

#endif /* CT_CLOSE_H */
