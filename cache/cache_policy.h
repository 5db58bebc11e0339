/*
 * cache/cache_policy.h: RFC 9111 caching policy as pure functions over
 * message heads (struct ct_http_msg from http/http.h). cachet is a shared
 * cache: every rule here is the shared-cache one.
 *
 * No clock: every time comes in as an argument (ct_time_t, seconds since the
 * epoch as a double). No sockets, no logging, no global state: all functions
 * are safe from any thread. Views in results point into the messages passed
 * in, unless a function says it allocates (then the caller frees with free()).
 *
 * Map (RFC 9111 section -> function):
 *   §3     storing                 ct_cache_policy_storable, ..._field_storable
 *   §4.2.1 freshness lifetime      ct_cache_policy_lifetime  (+ RFC 9213 targeted fields)
 *   §4.2.2 heuristic freshness     (inside lifetime; options below)
 *   §4.2.3 age                     ct_cache_policy_initial_age, ct_cache_policy_age
 *   §4.2.4 serving stale, §5.2.1   ct_cache_policy_use, ct_cache_policy_on_miss
 *   §4.1   Vary                    ct_cache_vary_key, ct_cache_vary_match
 *   §4.3   validation              ct_cache_validators_*, ct_cache_policy_cond,
 *                                  ct_cache_policy_revalidate_hdrs, ..._merge_304
 *   §4.4   invalidation            ct_cache_policy_invalidate
 */
#ifndef CT_CACHE_POLICY_H
#define CT_CACHE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "http/http.h"

/* ---- options ---------------------------------------------------------- */

struct ct_cache_policy_opts {
    bool store_set_cookie;     /* store responses carrying Set-Cookie (default: no) */
    bool ignore_req_cc;        /* ignore the client's Cache-Control (per listener;
                                  default: honour it) */
    bool cdn_cache_control;    /* honour CDN-Cache-Control, RFC 9213 (default: yes) */
    struct ct_str targeted_cc; /* an operator-named targeted field, e.g.
                                  "Cachet-Cache-Control", checked before
                                  CDN-Cache-Control; empty: none */
    unsigned heuristic_pct;    /* heuristic freshness, % of (Date - Last-Modified);
                                  default 10 (§4.2.2); 0: no heuristic */
    int64_t heuristic_max;     /* cap of the heuristic, seconds; default 86400 */
    int64_t default_ttl;       /* lifetime for storable responses with no explicit or
                                  heuristic freshness, seconds; CT_CC_UNSET (default):
                                  none (lifetime 0) */
};

/* Fill OPTS with the defaults above. */
void ct_cache_policy_opts_default(struct ct_cache_policy_opts *opts);

/* ---- storing (RFC 9111 §3) -------------------------------------------- */

/* CT_CACHE_STORE(ID, "detail"): the verdict and the text for Cache-Status
 * "detail=" (RFC 9211 §2.8). OK is the only storable one. */
#define CT_CACHE_STORE_TABLE(X)                                                                    \
    X(OK, "stored")                                                                                \
    X(METHOD, "method")                   /* request method other than GET */                      \
    X(INTERIM, "interim")                 /* 1xx: not a final response */                          \
    X(PARTIAL, "partial")                 /* 206: never stored as a complete object */             \
    X(NOT_MODIFIED, "not-modified")       /* 304: updates, never stored itself */                  \
    X(REQ_NO_STORE, "req-no-store")       /* no-store in the request */                            \
    X(NO_STORE, "no-store")               /* no-store in the response */                           \
    X(MUST_UNDERSTAND, "must-understand") /* with a status we do not know */                       \
    X(PRIVATE, "private")                 /* unqualified private */                                \
    X(AUTHORIZATION, "authorization")     /* without public/s-maxage/must-revalidate */            \
    X(SET_COOKIE, "set-cookie")           /* unless opts->store_set_cookie */                      \
    X(VARY_STAR, "vary-star")             /* Vary: * (or an unusable Vary) */                      \
    X(STATUS, "status")                   /* no explicit freshness, status not                     \
                                             heuristically cacheable (§4.2.2) */

enum ct_cache_store {
#define CT_CACHE_STORE_ENUM(id, text) CT_CACHE_STORE_##id,
    CT_CACHE_STORE_TABLE(CT_CACHE_STORE_ENUM)
#undef CT_CACHE_STORE_ENUM
        CT_CACHE_STORE__COUNT
};

/* "detail" text of a verdict; "unknown" out of range. */
const char *ct_cache_store_detail(enum ct_cache_store v);

/* May RESP, the answer to REQ, be stored (§3, §3.5, §5.2)? Judged on the
 * response's effective cache control (see ct_cache_policy_resp_cc). Fields
 * named by Set-Cookie-excluding qualified directives (private="Set-Cookie",
 * no-cache="Set-Cookie") make a Set-Cookie response storable: the field is then
 * dropped by ct_cache_policy_field_storable. */
enum ct_cache_store ct_cache_policy_storable(const struct ct_http_msg *req,
                                             const struct ct_http_msg *resp,
                                             const struct ct_cache_policy_opts *opts);

/* Is the status heuristically cacheable (§4.2.2: 200 203 204 206 300 301 308
 * 404 405 410 414 501)? */
bool ct_cache_policy_status_heuristic(unsigned status);

/* Which field gave the response's cache control. */
enum ct_cache_cc_src {
    CT_CACHE_CC_NONE,     /* no Cache-Control at all */
    CT_CACHE_CC_STANDARD, /* Cache-Control */
    CT_CACHE_CC_CDN,      /* CDN-Cache-Control (RFC 9213) */
    CT_CACHE_CC_OPERATOR, /* opts->targeted_cc */
};

/* The response's effective cache control into *CC. RFC 9213 §2.1: the first
 * targeted field (operator's, then CDN-Cache-Control, if enabled) whose value
 * is a valid, non-empty Dictionary (lower-case keys; RFC 8941) replaces
 * Cache-Control AND Expires for our policy; an invalid one is ignored.
 * Member parameters are ignored; a Boolean value counts as an argument (so
 * "public=?1" is not public: the restrictive reading). Returns the source. */
enum ct_cache_cc_src ct_cache_policy_resp_cc(const struct ct_http_msg *resp,
                                             const struct ct_cache_policy_opts *opts,
                                             struct ct_cc *cc);

/* Is field F of RESP to be stored with it? No for hop-by-hop fields (the
 * table's and those named in Connection, RFC 9110 §7.6.1), fields flagged
 * CT_HDRF_NO_STORE, and fields named by a qualified private="..." or
 * no-cache="..." in the effective cache control (§5.2.2.4, §5.2.2.7: the rest
 * of the response may be stored without them). */
bool ct_cache_policy_field_storable(const struct ct_http_msg *resp, const struct ct_http_field *f,
                                    const struct ct_cache_policy_opts *opts);
/* The same for every field of one response, with what the answer needs of
 * the whole response (whether its cache control lists fields at all)
 * computed once by ct_cache_policy_fields_init: storing a response asks
 * for each of its fields, and asking anew cost n^2 scans of its values. */
struct ct_cache_fields {
    const struct ct_http_msg *resp;
    const struct ct_cache_policy_opts *opts;
    bool lists; /* some cache control holds private="..." or no-cache="..." */
};
void ct_cache_policy_fields_init(struct ct_cache_fields *fs, const struct ct_http_msg *resp,
                                 const struct ct_cache_policy_opts *opts);
bool ct_cache_policy_fields_storable(const struct ct_cache_fields *fs,
                                     const struct ct_http_field *f);

/* Is F a targeted cache-control field (CDN-Cache-Control or opts->targeted_cc)?
 * Those are for us and not forwarded to clients: store them (a later 304 is
 * judged with them) but leave them out of what is delivered. */
bool ct_cache_policy_field_targeted(const struct ct_http_field *f,
                                    const struct ct_cache_policy_opts *opts);

/* ---- freshness and age (RFC 9111 §4.2) -------------------------------- */

enum ct_cache_fresh_src {
    CT_CACHE_FRESH_NONE, /* nothing: lifetime 0 */
    CT_CACHE_FRESH_S_MAXAGE,
    CT_CACHE_FRESH_MAX_AGE,
    CT_CACHE_FRESH_EXPIRES,   /* Expires - Date (invalid Expires: 0) */
    CT_CACHE_FRESH_HEURISTIC, /* % of Date - Last-Modified */
    CT_CACHE_FRESH_DEFAULT,   /* opts->default_ttl */
};

/* Flags of struct ct_cache_fresh. */
#define CT_CACHE_F_MUST_REVALIDATE                                                                 \
    0x01                          /* must-revalidate, proxy-revalidate or                          \
                                     s-maxage (§5.2.2.10): never serve stale */
#define CT_CACHE_F_NO_CACHE 0x02  /* unqualified no-cache: validate every use */
#define CT_CACHE_F_VALIDATOR 0x04 /* has ETag or Last-Modified */
#define CT_CACHE_F_INVALID 0x08   /* invalid or conflicting freshness info */
#define CT_CACHE_F_TARGETED 0x10  /* a targeted field gave the policy */
#define CT_CACHE_F_IMMUTABLE 0x20

/* What the store keeps about a response's freshness; plain data. */
struct ct_cache_fresh {
    int64_t lifetime; /* freshness_lifetime, seconds (>= 0) */
    enum ct_cache_fresh_src src;
    double initial_age; /* corrected_initial_age, seconds (>= 0) */
    ct_time_t response_time;
    int64_t stale_while_revalidate; /* seconds; CT_CC_UNSET if absent */
    int64_t stale_if_error;         /* seconds; CT_CC_UNSET if absent */
    unsigned flags;                 /* CT_CACHE_F_* */
};

/* freshness_lifetime of RESP (§4.2.1), in order: s-maxage, max-age, Expires
 * minus Date (a missing or invalid Date: RESPONSE_TIME; an invalid Expires or
 * several different ones: 0, already expired), heuristic (§4.2.2: only with no
 * explicit expiration, for a heuristically cacheable status or public;
 * heuristic_pct of Date - Last-Modified, capped at heuristic_max), then
 * default_ttl. Never negative. *SRC (may be NULL) says which rule applied. */
int64_t ct_cache_policy_lifetime(const struct ct_http_msg *resp,
                                 const struct ct_cache_policy_opts *opts, ct_time_t response_time,
                                 enum ct_cache_fresh_src *src);

/* corrected_initial_age (§4.2.3), exactly as the RFC computes it:
 *   apparent_age = max(0, response_time - date_value)
 *   response_delay = response_time - request_time
 *   corrected_age_value = age_value + response_delay
 *   corrected_initial_age = max(apparent_age, corrected_age_value)
 * A missing or invalid Date counts as RESPONSE_TIME. Age counts by the first
 * member of its first line (§5.1: "7200, 0" and two lines "7200" / "0" are
 * 7200); a first member that is not a non-negative integer is ignored (0); an
 * Age past 2^31 clamps to 2^31. */
double ct_cache_policy_initial_age(const struct ct_http_msg *resp, ct_time_t request_time,
                                   ct_time_t response_time);

/* Everything above for RESP (answering a request sent at REQUEST_TIME,
 * received at RESPONSE_TIME), into *F. */
void ct_cache_policy_fresh(const struct ct_http_msg *resp, const struct ct_cache_policy_opts *opts,
                           ct_time_t request_time, ct_time_t response_time,
                           struct ct_cache_fresh *f);

/* current_age = corrected_initial_age + resident_time (now - response_time). */
double ct_cache_policy_age(const struct ct_cache_fresh *f, ct_time_t now);
/* lifetime - current_age: > 0 while fresh (the "ttl" of Cache-Status). */
double ct_cache_policy_ttl(const struct ct_cache_fresh *f, ct_time_t now);

/* May a stale F be served while revalidating in the background (RFC 5861 §3),
 * or when the origin fails (RFC 5861 §4), at NOW? False while still fresh, and
 * always false with CT_CACHE_F_MUST_REVALIDATE or CT_CACHE_F_NO_CACHE. */
bool ct_cache_policy_swr_ok(const struct ct_cache_fresh *f, ct_time_t now);
bool ct_cache_policy_sie_ok(const struct ct_cache_fresh *f, ct_time_t now);

/* ---- using a stored response (RFC 9111 §4, §4.2.4, §5.2.1) ------------- */

enum ct_cache_use {
    CT_CACHE_USE_FRESH,           /* fresh enough for this request: serve it */
    CT_CACHE_USE_STALE_OK,        /* stale, but the client accepts it (max-stale) */
    CT_CACHE_USE_REVALIDATE,      /* send a conditional request first (a validator exists) */
    CT_CACHE_USE_FETCH,           /* unusable and no validator: fetch it again */
    CT_CACHE_USE_GATEWAY_TIMEOUT, /* only-if-cached and nothing usable: answer 504 */
};

/* Can stored F answer REQ at NOW? Request directives (§5.2.1), unless
 * opts->ignore_req_cc: no-cache forces validation; max-age=N wants age <= N
 * (and, without max-stale, a fresh response); min-fresh=N wants N seconds of
 * freshness left; max-stale[=N] accepts a stale response (N seconds past
 * its lifetime at most) unless the response says must-revalidate,
 * proxy-revalidate, s-maxage or no-cache; only-if-cached turns every outcome
 * that needs the origin into GATEWAY_TIMEOUT. Request no-store does not stop
 * serving a stored response (§5.2.1.5); it stops storing (see storable).
 * Stale-while-revalidate is left to the caller (ct_cache_policy_swr_ok). */
enum ct_cache_use ct_cache_policy_use(const struct ct_cache_fresh *f, const struct ct_http_msg *req,
                                      const struct ct_cache_policy_opts *opts, ct_time_t now);
/* The same with the request's directives already read (ct_cache_policy_req_cc):
 * for a caller that asks more than once per request. */
enum ct_cache_use ct_cache_policy_use_cc(const struct ct_cache_fresh *f, const struct ct_cc *rq,
                                         ct_time_t now);

/* Nothing is stored for REQ: FETCH, or GATEWAY_TIMEOUT with only-if-cached
 * (§5.2.1.7; not when opts->ignore_req_cc). */
enum ct_cache_use ct_cache_policy_on_miss(const struct ct_http_msg *req,
                                          const struct ct_cache_policy_opts *opts);
enum ct_cache_use ct_cache_policy_on_miss_cc(const struct ct_cc *rq);

/* The client's request Cache-Control into *CC, or an empty one (ct_cc_init)
 * with opts->ignore_req_cc. A request without Cache-Control that says
 * "Pragma: no-cache" gets no-cache (the HTTP/1.0 spelling, RFC 7234 §5.4;
 * RFC 9111 §5.4 deprecates Pragma, clients still send it). */
void ct_cache_policy_req_cc(const struct ct_http_msg *req, const struct ct_cache_policy_opts *opts,
                            struct ct_cc *cc);

/* ---- Vary (RFC 9111 §4.1) ---------------------------------------------- */

/* The variant key of RESP for REQ: for each field name listed in RESP's Vary
 * lines (all lines; names compared case-insensitively, lower-cased, sorted,
 * duplicates dropped), "name:value\n" where value is the request's lines of
 * that field, OWS-trimmed and joined with ", " (list fields of the header
 * table are re-joined element by element, so "gzip,br" and "gzip, br" are
 * one variant), or "name\n" when the request lacks the field (absent and
 * empty differ, §4.1). No Vary: an empty key (*KEY = NULL, *LEN = 0).
 * Returns CT_OK with *KEY allocated (caller frees), or CT_EPROTO when Vary
 * holds "*" (or a name that is not a token): such a response matches no
 * later request and is not stored. */
int ct_cache_vary_key(const struct ct_http_msg *resp, const struct ct_http_msg *req, char **key,
                      size_t *len);

/* Does RESP's Vary hold "*" (on any line, anywhere in the list) or a name that
 * is not a token? Such a response never matches (§4.1) and is not stored. */
bool ct_cache_vary_is_star(const struct ct_http_msg *resp);

/* Does REQ select the variant stored with KEY (from ct_cache_vary_key)? The
 * names are read back from KEY; nothing is allocated. */
bool ct_cache_vary_match(struct ct_str key, const struct ct_http_msg *req);

/* ct_cache_vary_match in the shape of cache.h's ct_cache_vary_match_fn:
 * ARG is the request's `const struct ct_http_msg *`; REQ_BYTES is unused. */
bool ct_cache_vary_match_cb(struct ct_str stored, struct ct_str req_bytes, void *arg);

/* ---- validation and conditionals (RFC 9111 §4.3, RFC 9110 §13) --------- */

/* The validators of a stored response; views into wherever it is stored. */
struct ct_cache_validators {
    struct ct_str etag;          /* ETag value, {NULL,0} if none */
    struct ct_str last_modified; /* Last-Modified value, {NULL,0} if none */
    struct ct_str date;          /* Date value, {NULL,0} if none */
    ct_time_t response_time;     /* when it was received */
};

/* Fill *V from RESP's first ETag, Last-Modified and Date lines. */
void ct_cache_validators_from_msg(const struct ct_http_msg *resp, ct_time_t response_time,
                                  struct ct_cache_validators *v);

/* Entity-tag comparison (RFC 9110 §8.8.3.2) of A and B, each `W/"..."` or
 * `"..."`: strong (both strong and identical) or weak (opaque-tags equal).
 * A malformed tag matches nothing. */
bool ct_cache_etag_match(struct ct_str a, struct ct_str b, bool weak);

/* Answer REQ's conditionals against a stored response with validators V:
 * 304 when they say "not modified", 0 otherwise (serve the stored response).
 * RFC 9110 §13.1.2, §13.2.2: If-None-Match ("*", or a list of entity-tags,
 * weak comparison) takes precedence and If-Modified-Since is then ignored;
 * If-Modified-Since (GET/HEAD only; an invalid date ignored) compares with
 * Last-Modified, else Date, else the response time (RFC 9111 §4.3.2). */
unsigned ct_cache_policy_cond(const struct ct_http_msg *req, const struct ct_cache_validators *v);

/* The fields to add to a request revalidating a stored response (§4.3.1):
 * If-None-Match with the ETag and If-Modified-Since with the Last-Modified,
 * each when present. OUT views point into V; returns how many (0-2). */
size_t ct_cache_policy_revalidate_hdrs(const struct ct_cache_validators *v,
                                       struct ct_http_field out[2]);

/* Does the 304 RESP304 update the stored response with V (§4.3.4)? With a
 * strong ETag in the 304: the stored ETag must be that strong tag; with a
 * weak one or a Last-Modified: they must match (weakly / exactly); with no
 * validator at all: only a stored response without validators. */
bool ct_cache_policy_304_selects(const struct ct_cache_validators *v,
                                 const struct ct_http_msg *resp304);

/* The stored fields STORED[0..N) updated with RESP304's (§3.2, §4.3.4): each
 * field the 304 carries replaces all stored lines of that name (at the first
 * one's position; new names are appended), except Content-Length,
 * Content-Encoding and Transfer-Encoding (they describe the stored body),
 * hop-by-hop fields and fields not storable (ct_cache_policy_field_storable).
 * Stored Age and Date lines are dropped when the 304 has none: they belong to
 * the old exchange (recompute ct_cache_policy_fresh on the result with the
 * 304's request and response times).
 * *OUT is allocated (caller frees the array; its views point into STORED and
 * RESP304). Returns the count. */
size_t ct_cache_policy_merge_304(const struct ct_http_field *stored, size_t n,
                                 const struct ct_http_msg *resp304,
                                 const struct ct_cache_policy_opts *opts,
                                 struct ct_http_field **out);

/* ---- invalidation (RFC 9111 §4.4) -------------------------------------- */

/* The request targets to invalidate after RESP answered the unsafe REQ: none
 * for a safe method or a response outside 2xx/3xx; otherwise REQ's target
 * (as sent: that is the key it was stored under; the path of an
 * absolute-form target) and the Location and Content-Location values that
 * resolve (RFC 3986 §5.2, against the target, dot segments removed) to the
 * same host as REQ's Host (case-insensitive, default port ignored). Each
 * OUT[i] is an allocated NUL-terminated origin-form target ("/path?query",
 * fragment dropped; caller frees).
 * Duplicates are dropped. Returns the count (0-3). */
size_t ct_cache_policy_invalidate(const struct ct_http_msg *req, const struct ct_http_msg *resp,
                                  char *out[3]);

#endif /* CT_CACHE_POLICY_H */
