/*
 * proxy/route/route.h: the route table (issue 15). Chooses, for a parsed
 * request, its site (by host) and its route (the first of the site's routes
 * whose conditions all hold), and carries what the route decided: backend
 * group, cache overrides, header rules, a direct answer, access control.
 *
 * Pure: no libevent, no sockets, no proxy internals; it reads a struct
 * ct_conf and views into the request. proxy/core calls it as the RECV
 * sub-step "route", before the cache lookup.
 *
 *     ct_route_table_build(cf, &t, err, len)    at load/reload, with the conf
 *     s = ct_route_scratch_new()                once per worker thread
 *     r = ct_route_choose(t, &req, s)           per request: no allocation
 *     ct_route_table_free(&t)                   when the generation retires
 *
 * Ownership and threads: the table is immutable once built and may be read
 * by every worker at once; it borrows strings from CF, which must outlive
 * it (both belong to one reload generation). A scratch belongs to one
 * thread (PCRE2 match data); any table may be used with it.
 *
 * Matching rules, as docs/routing.md states them:
 *   - host: lower-cased, a trailing dot and any ":port" dropped (the port
 *     chose the listener); exact names first, then `*.example.com`
 *     wildcards (any depth below, the longest suffix wins), then the
 *     default site; with none, the table's fallback (group "default").
 *   - path: the target up to '?' as received (no percent-decoding, no
 *     dot-segment removal); exact, prefix, or a PCRE2 regex (unanchored
 *     unless the pattern anchors itself).
 *   - headers by name case-insensitively, values exactly; cookies and query
 *     parameters by name and value exactly.
 *   - a site's request that no route matches gets the site's fallback.
 */
#ifndef CT_ROUTE_H
#define CT_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "conf/conf.h"

struct ct_route_table;   /* opaque */
struct ct_route_scratch; /* opaque, one per thread */

/* A compiled text with variables (header rule values, redirect locations,
 * fixed bodies). */
struct ct_route_tpl;

enum ct_route_hdr_op { CT_ROUTE_HDR_SET, CT_ROUTE_HDR_APPEND, CT_ROUTE_HDR_REMOVE };

struct ct_route_hdr_rule {
    enum ct_route_hdr_op op;
    struct ct_str name;
    const struct ct_route_tpl *value; /* NULL for REMOVE */
};

/* What a request was routed to. Immutable, owned by the table. */
struct ct_route {
    unsigned id;                      /* dense, 0..ct_route_count()-1: counters per route */
    const char *site_name;            /* "-" when no site */
    const char *route_name;           /* the route's name, its index, or "-" (fallback) */
    const struct ct_conf_site *site;  /* NULL: no site matched and none is the default */
    const struct ct_conf_route *conf; /* NULL: a fallback (no route matched) */
    size_t group;                     /* ct_conf_group_at() index */
    const struct ct_route_hdr_rule *req_rules, *resp_rules;
    size_t nreq_rules, nresp_rules;
    bool acts; /* access control, an answer of its own, or a limit (its site's too): the
                  request step has more to do than note the route */
    const struct ct_route_tpl *location; /* redirect.location, or NULL */
    const struct ct_route_tpl *body;     /* respond.body, or NULL */
};

/* The request as the route table sees it: views into the parsed request. */
struct ct_route_req {
    struct ct_str host;   /* Host field or :authority, as received */
    struct ct_str method;
    struct ct_str target; /* origin-form: path [ "?" query ] */
    int family;           /* AF_INET (4 bytes) or AF_INET6 (16); 0 = unknown */
    const uint8_t *addr;  /* the client address (IPv4-mapped IPv6 given as IPv4) */
    int default_site;     /* 1 + the listener's default site's cf->sites index; 0: the table's */
    /* The NTH (0, 1, ...) field named NAME (case-insensitive): true and
     * *VALUE, or false past the last. Called only for routes with header or
     * cookie conditions. */
    bool (*field)(void *arg, struct ct_str name, size_t nth, struct ct_str *value);
    void *arg;
};

/* Build the table for CF (a configuration ct_conf_finish accepted). On CT_OK
 * *OUT is new, owned by the caller; on error (which a checked config cannot
 * give, but JIT may run out of memory) a message in ERR. */
int ct_route_table_build(const struct ct_conf *cf, struct ct_route_table **out, char *err,
                         size_t errlen);
void ct_route_table_free(struct ct_route_table **tp);

struct ct_route_scratch *ct_route_scratch_new(void);
void ct_route_scratch_free(struct ct_route_scratch **sp);

/* The site REQ's host names (its listener's default, the table's, or -1:
 * none, which the fallback route serves), for ct_route_choose_in: a
 * connection that sends one Host again and again may keep it for the
 * table it came from. */
long ct_route_site(const struct ct_route_table *t, const struct ct_route_req *req);
/* The route for REQ within SITE (ct_route_site's for T and REQ's host and
 * default site). Never NULL. No allocation. */
const struct ct_route *ct_route_choose_in(const struct ct_route_table *t, long site,
                                          const struct ct_route_req *req,
                                          struct ct_route_scratch *s);
/* The route for REQ. Never NULL (a fallback at worst). No allocation. */
const struct ct_route *ct_route_choose(const struct ct_route_table *t, const struct ct_route_req *req,
                                       struct ct_route_scratch *s);

/* Does some route of T look at the client address? (Else the caller need
 * not work it out: family 0 is fine.) */
bool ct_route_table_uses_client(const struct ct_route_table *t);

/* Every route of T (fallbacks included), by id. */
size_t ct_route_count(const struct ct_route_table *t);
const struct ct_route *ct_route_at(const struct ct_route_table *t, size_t id);

/* ---- what a route decided ------------------------------------------------- */

enum ct_route_access { CT_ROUTE_ALLOW, CT_ROUTE_DENY_ADDR, CT_ROUTE_DENY_HEADER };

/* Access control of R for REQ: allow/deny prefixes, then require_headers. */
enum ct_route_access ct_route_check_access(const struct ct_route *r, const struct ct_route_req *req);

/* The values the variables take for one request ($$ needs none). */
struct ct_route_vars {
    struct ct_str v[CT_CONF_VAR_COUNT];
};

/* Expand T into OUT[0..CAP). Returns the full length, which may exceed CAP
 * (then OUT holds the first CAP bytes): call again with a larger buffer. */
size_t ct_route_expand(const struct ct_route_tpl *t, const struct ct_route_vars *vars, char *out,
                       size_t cap);

/* The query QUERY (without '?') with the parameters R's key_drop_params name
 * left out (names exactly, or by prefix for "utm_*"), into OUT (CAP >=
 * QUERY.len suffices). Returns the new length; the order is kept. */
size_t ct_route_key_query(const struct ct_route *r, struct ct_str query, char *out, size_t cap);

#endif /* CT_ROUTE_H */
