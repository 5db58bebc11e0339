/*
 * http/http_ae.h: content codings and Accept-Encoding negotiation
 * (RFC 9110 §8.4.1, §12.5.3), reduced to one class per request.
 *
 * The cache keys Vary: Accept-Encoding on the class this module picks, never
 * on the raw field, so "gzip, deflate" and "deflate, gzip" (and every other
 * spelling) share one variant, and no crafted value can reach another class's
 * variant: the class is a small enum, not a hash of the text.
 *
 * Negotiation:
 * - every Accept-Encoding field line of the request is read, in order, as one
 *   list (RFC 9110 §5.3); a client sending "gzip" on a second line is gzip
 *   only if the first line said nothing else (HAProxy #987 used the first);
 * - codings are case-insensitive tokens; "x-gzip" is gzip (§8.4.1.3);
 * - a weight is ";q=" with a qvalue (0, 0.xxx, 1, 1.000: three decimals at
 *   most, §12.4.2); q=0 refuses a coding; "*" weighs every coding the list
 *   does not name, identity included (§12.5.3);
 * - identity is acceptable unless "identity;q=0", or "*;q=0" without an
 *   identity entry, refuses it; when acceptable without being named it ranks
 *   below every named coding with q > 0;
 * - a malformed element (not a token, a bad or repeated weight, another
 *   parameter) is ignored, never fatal; a coding named twice keeps its lowest
 *   weight (a refusal is never overridden by a later spelling);
 * - no Accept-Encoding field, or one with no usable element: identity
 *   (RFC 9110 allows any coding then; sending none is the safe reading);
 * - the class is the acceptable coding with the highest weight among those the
 *   server offers; equal weights go to the server's order (default zstd, br,
 *   gzip, identity). Nothing acceptable: CT_CODING_NONE, a 406, which only
 *   happens when identity is refused too.
 *
 * Pure functions over views; no allocation; any thread.
 */
#ifndef CT_HTTP_AE_H
#define CT_HTTP_AE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/common.h"
#include "http/http.h"

/* The codings cachet produces and decodes. The values are stable (stats
 * tables and variant keys use them) and below 8 (bit sets). */
#define CT_CODING_TABLE(X)                                                     \
    X(IDENTITY, "identity")                                                    \
    X(GZIP, "gzip")                                                            \
    X(BR, "br")                                                                \
    X(ZSTD, "zstd")

enum ct_coding {
#define CT_CODING_ENUM(id, name) CT_CODING_##id,
    CT_CODING_TABLE(CT_CODING_ENUM)
#undef CT_CODING_ENUM
        CT_CODING__COUNT,
    CT_CODING_NONE = -1,  /* negotiation: nothing acceptable (406) */
    CT_CODING_OTHER = -2, /* Content-Encoding: a coding we cannot decode, or several */
};

/* "gzip", "br", ...; NULL for NONE, OTHER or out of range. Static memory. */
const char *ct_coding_name(enum ct_coding c);
/* The coding named NAME (case-insensitive; "x-gzip" is gzip); CT_CODING_OTHER
 * if unknown. */
enum ct_coding ct_coding_lookup(struct ct_str name);

/* The server's side: the codings it offers, most preferred first. identity
 * need not be listed: it is always offered, after the listed ones (listing it
 * places it). At most CT_CODING__COUNT entries, no repeats. */
struct ct_ae_pref {
    uint8_t n;
    uint8_t order[CT_CODING__COUNT]; /* enum ct_coding values */
};

/* zstd, br, gzip, identity (zstd first, or it is never chosen where clients
 * list it beside br at equal weight: zstd-nginx-module PR#44). */
void ct_ae_pref_default(struct ct_ae_pref *pref);
/* Append C to PREF. Returns CT_OK, or CT_ECONF if C is already listed or out
 * of range. */
int ct_ae_pref_add(struct ct_ae_pref *pref, enum ct_coding c);

/* The client's side, accumulated over field lines. Zero it with
 * ct_ae_init(); plain data, copy freely. Weights are in thousandths. */
struct ct_ae {
    bool present;                   /* at least one Accept-Encoding line */
    int16_t q[CT_CODING__COUNT];    /* -1: not named */
    int16_t star;                   /* -1: no "*" */
};

void ct_ae_init(struct ct_ae *ae);
/* Add one Accept-Encoding field line's VALUE to AE. Malformed elements are
 * skipped; returns how many were (0 for a clean line), for counters. */
unsigned ct_ae_add(struct ct_ae *ae, struct ct_str value);
/* Every Accept-Encoding line of MSG, in order, into AE (after ct_ae_init). */
void ct_ae_from_msg(struct ct_ae *ae, const struct ct_http_msg *msg);

/* Is coding C acceptable to the client (weight > 0 by name, by "*", or
 * identity by default)? */
bool ct_ae_accepts(const struct ct_ae *ae, enum ct_coding c);
/* The class for AE under PREF: an offered coding, or CT_CODING_NONE. */
enum ct_coding ct_ae_choose(const struct ct_ae *ae, const struct ct_ae_pref *pref);

/* The coding a response's Content-Encoding lines declare: IDENTITY when
 * absent, empty or only "identity"; GZIP/BR/ZSTD when that is the one coding
 * applied; CT_CODING_OTHER for anything else (unknown, or several codings
 * stacked, which cachet does not undo). */
enum ct_coding ct_coding_of_msg(const struct ct_http_msg *msg);

/* ---- what a cache compresses, and the head it stores (http_ce.c) --------- */

/* Why a response is not compressed (for counters); CT_CE_YES when it is. */
#define CT_CE_SKIP_TABLE(X)                                                    \
    X(YES, "compressed")                                                       \
    X(METHOD, "not GET") /* HEAD has no body; others are not stored */        \
    X(STATUS, "status")  /* 206, 304, and all but 200 203 404 410 */          \
    X(ENCODED, "already encoded") /* Content-Encoding other than identity */  \
    X(NO_TRANSFORM, "no-transform") /* RFC 9110 §7.7, RFC 9111 §5.2.2.6 */     \
    X(TYPE, "type")      /* no Content-Type, or not in compression.types */    \
    X(SMALL, "small")    /* Content-Length below compression.min_size */

enum ct_ce_skip {
#define CT_CE_SKIP_ENUM(id, text) CT_CE_##id,
    CT_CE_SKIP_TABLE(CT_CE_SKIP_ENUM)
#undef CT_CE_SKIP_ENUM
        CT_CE__COUNT
};
const char *ct_ce_skip_name(enum ct_ce_skip s);

/* Should a cache compress RESP, the answer to a request with METHOD?
 * TYPE_OK says its Content-Type is one to compress (the caller's list:
 * ct_conf_compress_type); MIN_SIZE applies to a Content-Length (a body of
 * unknown length is compressed). */
enum ct_ce_skip ct_ce_should_encode(const struct ct_http_msg *resp, int method, bool type_ok,
                                    uint64_t min_size);

/* A response head with its coding changed (CHANGED) or only marked as
 * depending on Accept-Encoding (!CHANGED: an identity response of a type
 * that is compressed for other clients): RESP's fields (views RESP keeps
 * alive) less Content-Encoding and Content-Length, plus
 *   - "Content-Encoding: TO" unless TO is identity (a decoded delivery);
 *   - "Vary: Accept-Encoding" unless Vary lists it or is "*" (the answer
 *     depends on it, RFC 9110 §12.5.5);
 *   - CHANGED: a strong ETag made weak: the bytes differ from the origin's
 *     for the same validator (RFC 9110 §8.8.3; nginx and Varnish do the
 *     same), and framing CT_FRAME_CHUNKED (the new length is known only at
 *     the end); !CHANGED: the ETag and framing as they were.
 * Owned by the caller: ct_ce_head_free(). msg is ready for rendering. */
struct ct_ce_head {
    struct ct_http_msg msg;
    struct ct_http_field *fields; /* msg.fields */
    char *etag;                   /* the weak ETag, when one was made */
};
struct ct_ce_head *ct_ce_head_new(const struct ct_http_msg *resp, enum ct_coding to,
                                  bool changed);
void ct_ce_head_free(struct ct_ce_head **hp);

#endif /* CT_HTTP_AE_H */
