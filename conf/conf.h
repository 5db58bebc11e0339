/*
 * conf/conf.h: cachet's configuration: schema, loading, validation, defaults
 * and command-line overrides. The contract between conf/ and its users.
 *
 * Flow (the same for startup, `cachet -t` and SIGHUP reload):
 *
 *     ct_conf_cli_parse(argc, argv, &cli, err, errlen)   command line -> struct ct_cli
 *     ct_conf_build(&cli, &cf, &errs)                    file (or embedded default)
 *                                                        + overrides + cross-checks
 *     ... use cf (read-only, any thread) ...
 *     ct_conf_free(&cf)
 *
 * A struct ct_conf is immutable once built: one owner (whoever built it),
 * freed with ct_conf_free(). Any thread may read it concurrently. Reload
 * builds a complete new one and swaps the pointer; a failed build leaves
 * nothing behind and the old one keeps serving.
 *
 * The struct is public (not opaque, unlike most modules) because every module
 * reads its fields; treat every field as const. All strings are NUL-terminated
 * and owned by the struct. Durations are in milliseconds (`_ms`), sizes in
 * bytes (`_bytes`); in the file they are strings with units ("10s", "256M").
 *
 * conf/ is pure: no logging, no sockets. Errors are collected into a
 * caller-supplied struct ct_conf_errors, each one formatted exactly as
 *     FILE:LINE: setting.path: what is wrong (what was expected)
 * and every error is reported (up to CT_CONF_MAX_ERRORS), not only the first.
 */
#ifndef CT_CONF_H
#define CT_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "common/log.h"
#include "http/http_ae.h"

#define CT_CONF_MAGIC 0xc0f1c0f1u

/* ---- errors ------------------------------------------------------------ */

#define CT_CONF_MAX_ERRORS 32
#define CT_CONF_ERR_LEN 512

/* Caller-owned; zero it (or ct_conf_errors_init) before use. Past
 * CT_CONF_MAX_ERRORS, further errors are counted in `dropped` only. */
struct ct_conf_errors {
    size_t n;
    size_t dropped;
    char msg[CT_CONF_MAX_ERRORS][CT_CONF_ERR_LEN];
};

void ct_conf_errors_init(struct ct_conf_errors *errs);
/* Where setting PATH ("backends[1].address") of CF was written: "FILE:LINE",
 * "command line (--opt)", or CF's source when it is not known. Valid while
 * CF lives. For errors found outside conf/ (a name that does not resolve). */
struct ct_conf;
const char *ct_conf_where(const struct ct_conf *cf, const char *path);
/* Print every message, one per line, then "(N more errors)" if some were
 * dropped. */
void ct_conf_errors_print(const struct ct_conf_errors *errs, FILE *fp);

/* ---- the configuration ------------------------------------------------- */

struct ct_conf_locs;

enum ct_conf_listen_kind { CT_CONF_LISTEN_HTTP, CT_CONF_LISTEN_HTTPS };

/* A numeric listening address, resolved at load time (no DNS for listeners).
 * host is the textual IP without brackets ("127.0.0.1", "::1"). */
struct ct_conf_addr {
    char *host;
    uint16_t port; /* 0 = ephemeral, allowed */
    struct sockaddr_storage sa;
    socklen_t salen;
};

/* One certificate (chain) and its key, chosen by SNI. */
struct ct_conf_cert {
    char *cert_file; /* PEM; may hold the chain */
    char *key_file;  /* PEM */
    char **server_names; /* "example.com" or "*.example.com"; may be empty */
    size_t n_server_names;
    bool is_default; /* used when SNI is absent or matches nothing */
};

enum ct_conf_verify {
    CT_CONF_VERIFY_OFF,      /* no client certificates asked for */
    CT_CONF_VERIFY_OPTIONAL, /* asked for; verified if sent */
    CT_CONF_VERIFY_REQUIRED, /* handshake fails without a valid one */
};

/* ACME (RFC 8555) on an HTTPS listener (proxy/acme/): certificates ordered,
 * renewed and installed by cachet. Off while directory is NULL. */
enum ct_conf_acme_key { CT_CONF_ACME_EC_P256 };
#define CT_CONF_ACME_TLS_ALPN 0x1u /* challenge "tls-alpn-01" (RFC 8737) */
#define CT_CONF_ACME_HTTP 0x2u     /* challenge "http-01" (RFC 8555 §8.3) */
struct ct_conf_acme {
    char *directory;    /* the CA's directory URL (https://...); NULL: ACME off */
    char *email;        /* account contact; NULL: none */
    char **names;       /* names to order; none: every site's hosts */
    size_t nnames;
    char **challenges;  /* as written, in order of preference */
    size_t nchallenges;
    char *storage;      /* directory of the account key, keys and certificates */
    uint64_t renew_before_ms; /* 0: when a third of the lifetime is left */
    enum ct_conf_acme_key key_type;
    char *directory_ca; /* PEM CAs verifying the directory's TLS; NULL: the system's */
    /* derived by ct_conf_finish */
    unsigned challenge_mask; /* CT_CONF_ACME_* */
};

struct ct_conf_tls {
    struct ct_conf_cert *certs;
    size_t ncerts;
    /* No certificate configured: generate the self-signed localhost/127.0.0.1
     * EC P-256 certificate at start (the embedded default, docs/usage.md). Set by the
     * embedded default, by `--https` without `--cert`, or by `self_signed =
     * true` in the file. Never true when ncerts > 0. */
    bool self_signed;
    int min_version;    /* OpenSSL constant: TLS1_2_VERSION or TLS1_3_VERSION */
    char *ciphers;      /* TLS <= 1.2 cipher list (SSL_CTX_set_cipher_list) */
    char *ciphersuites; /* TLS 1.3 (SSL_CTX_set_ciphersuites) */
    char *groups;       /* SSL_CTX_set1_groups_list */
    bool session_tickets;
    uint64_t ticket_key_rotation_ms;
    bool session_cache;
    uint32_t session_cache_size; /* entries */
    uint64_t handshake_timeout_ms;
    bool ktls; /* try SSL_OP_ENABLE_KTLS */
    bool http2; /* ALPN offers h2 before http/1.1 (proxy/h2/h2_serve.c serves it) */
    /* mTLS: enabled when client_verify != OFF (then client_ca is set). */
    char *client_ca;
    enum ct_conf_verify client_verify;
    char *client_subject_header; /* header passing the verified subject; NULL = none */
    struct ct_conf_acme acme;
};

struct ct_conf_listener {
    enum ct_conf_listen_kind kind;
    struct ct_conf_addr addr;
    struct ct_conf_tls tls; /* HTTPS only (holds unused defaults for HTTP) */
    bool redirect_to_https; /* HTTP only: 301 to https://host/target */
    uint16_t redirect_port; /* port in the Location; 0 = first HTTPS listener's */
    bool honour_client_cc;  /* obey request Cache-Control (no-cache, max-age...) */
    bool h2c;               /* HTTP only: HTTP/2 with prior knowledge beside HTTP/1.1 */
    /* PROXY protocol v1/v2 before the first byte (issue 15), read only from
     * these peers; a connection from anyone else is closed */
    bool proxy_protocol;
    struct ct_conf_cidr *proxy_protocol_from;
    size_t nproxy_protocol_from;
    char *default_site; /* the site for hosts no site claims, here; NULL = the global one */
    int default_site_index; /* derived: index into cf->sites, or -1 */
};

struct ct_conf_health {
    bool enabled;
    uint64_t interval_ms;
    uint64_t timeout_ms;
    char *path;
    unsigned expect_status;
    unsigned rise; /* consecutive successes to mark up */
    unsigned fall; /* consecutive failures to mark down */
};

/* TLS to one origin (backends[].tls, issue 39). A backend speaks TLS when
 * its `tls` group is written (ON): `tls = {};` verifies against the
 * system's CA store, with SNI and the name check on the backend's host. */
struct ct_conf_backend_tls {
    bool on;            /* derived: the group is in the file (or --backend https://) */
    bool verify;        /* the origin's certificate chain and name */
    char *ca;           /* PEM CA bundle; "system": the system's store */
    char *server_name;  /* SNI and checked name; NULL: the host, "$host": the request's */
    char *cert, *key;   /* mTLS: our client certificate and key; NULL: none */
    int min_version;    /* TLS1_2_VERSION or TLS1_3_VERSION */
    char *ciphers;      /* TLS <= 1.2 */
    char *ciphersuites; /* TLS 1.3 */
    char **alpn;        /* protocols offered, in order */
    size_t nalpn;
    bool session_reuse; /* resume saved sessions (ids or tickets) */
    uint64_t handshake_timeout_ms;
};
#define CT_CONF_SERVER_NAME_HOST "$host"

struct ct_conf_backend {
    char *name;
    char *host; /* name or IP; resolved by proxy/ */
    uint16_t port;
    unsigned weight;
    uint64_t connect_timeout_ms;
    uint64_t header_timeout_ms; /* response header */
    uint64_t read_timeout_ms;   /* idle between body reads */
    unsigned pool_max_idle;
    uint64_t pool_idle_timeout_ms;
    unsigned max_fails;       /* passive health: consecutive failures ... */
    uint64_t fail_timeout_ms; /* ... then skipped for this long */
    char **passive_fail_on;   /* ... of these kinds (names, as written) */
    size_t n_passive_fail_on;
    unsigned passive_fail_mask; /* derived: CT_CONF_FAIL_* of passive_fail_on */
    struct ct_conf_health health;
    struct ct_conf_backend_tls tls;
};

/* What counts as a failure for passive health (backends[].passive_fail_on). */
#define CT_CONF_FAIL_TABLE(X)                                                  \
    X(CONNECT, "connect") /* refused, or no connection within connect_timeout */ \
    X(TIMEOUT, "timeout") /* no response head within response_header_timeout */ \
    X(RESET, "reset")     /* closed or reset before a response head */         \
    X(INVALID, "invalid") /* a malformed response head (or an unasked 101) */  \
    X(HTTP_5XX, "5xx")    /* a response with a 5xx status */
enum ct_conf_fail {
#define CT_CONF_FAIL_ENUM(id, name) CT_CONF_FAIL_##id,
    CT_CONF_FAIL_TABLE(CT_CONF_FAIL_ENUM)
#undef CT_CONF_FAIL_ENUM
};

enum ct_conf_real_ip { CT_CONF_REAL_IP_XFF, CT_CONF_REAL_IP_FORWARDED };

enum ct_conf_query {
    CT_CONF_QUERY_INHERIT = -1, /* routes only: the cache section's */
    CT_CONF_QUERY_KEEP,
    CT_CONF_QUERY_DROP,
    CT_CONF_QUERY_SORT
};
enum ct_conf_waiter { CT_CONF_WAITER_504, CT_CONF_WAITER_FETCH };
/* cache.eviction: cache/cache.h enum ct_cache_evict, same order. */
enum ct_conf_eviction { CT_CONF_EVICTION_SIEVE, CT_CONF_EVICTION_COST };

/* An address prefix: purge ACL. */
struct ct_conf_cidr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    unsigned prefix_len;
};

/* ---- backend groups, sites and routes (issue 15) --------------------------
 *
 * A backend group is a named set of backends with its balancing; the
 * top-level `backends` list is the group "default" (cf->groups[0], its
 * backends are cf->backends). A site is chosen by the request's host; its
 * routes are tried in order and the first that matches decides. The route
 * table that does the matching is compiled from these by proxy/route/. */

enum ct_conf_balance { CT_CONF_BALANCE_RR, CT_CONF_BALANCE_LEAST_CONN, CT_CONF_BALANCE_HASH };
enum ct_conf_hash_on {
    CT_CONF_HASH_KEY,    /* the cache key */
    CT_CONF_HASH_HEADER, /* a request header's value (hash_name) */
    CT_CONF_HASH_COOKIE, /* a cookie's value (hash_name) */
    CT_CONF_HASH_CLIENT, /* the client address */
};

struct ct_conf_group {
    char *name;
    enum ct_conf_balance balance;
    char *hash_on_text; /* as written: "key", "client", "header:NAME", "cookie:NAME" */
    unsigned hash_balance_factor; /* percent of the mean load a backend may carry (>= 100) */
    uint64_t slow_start_ms;       /* weight ramps from ~0 over this after coming up; 0 = off */
    struct ct_conf_backend *backends;
    size_t nbackends;
    /* derived (conf_route.c) */
    enum ct_conf_hash_on hash_on;
    const char *hash_name; /* header or cookie name for HEADER/COOKIE (inside hash_on_text) */
};

/* "Inherit" for the route overrides that are durations: the site's (or the
 * cache section's) value applies. */
#define CT_CONF_INHERIT UINT64_MAX

enum ct_conf_tri { CT_CONF_TRI_INHERIT = -1, CT_CONF_TRI_OFF = 0, CT_CONF_TRI_ON = 1 };

/* What a route matches; every condition given must hold (an empty one holds). */
struct ct_conf_match {
    char *path;        /* exact path (no query); NULL = any */
    char *path_prefix; /* NULL = any */
    char *path_regex;  /* PCRE2, matched against the path; NULL = any */
    char **methods;    /* any of these; empty = any method */
    size_t nmethods;
    char **headers; /* each "Name" (present) or "Name: value" (equal) */
    size_t nheaders;
    char **cookies; /* each "name" or "name=value" */
    size_t ncookies;
    char **query; /* each "name" or "name=value" */
    size_t nquery;
    struct ct_conf_cidr *client; /* any of these; empty = any address */
    size_t nclient;
};

struct ct_conf_route_cache {
    bool pass;                 /* neither looked up nor stored */
    uint64_t ttl_ms;           /* forced TTL for ttl_statuses; INHERIT = origin's headers */
    char **ttl_statuses;       /* "200", "301", ... */
    size_t nttl_statuses;
    uint64_t min_ttl_ms;       /* INHERIT = no floor */
    uint64_t max_ttl_ms;       /* INHERIT = no cap */
    uint64_t grace_ms;         /* INHERIT = cache.grace */
    uint64_t stale_if_error_ms;/* INHERIT = cache.stale_if_error */
    uint64_t keep_ms;          /* INHERIT = cache.keep */
    int honour_client_cc;      /* enum ct_conf_tri: INHERIT = the listener's */
    int key_query;             /* enum ct_conf_query, or CT_CONF_QUERY_INHERIT */
    char **key_drop_params;    /* query parameters left out of the key ("utm_*" globs) */
    size_t nkey_drop_params;
    char *key_header;          /* NULL = cache.key_header */
    char *key_cookie;          /* a cookie whose value joins the key; NULL = none */
};

struct ct_conf_redirect {
    unsigned status; /* 0 = no redirect; else 301, 302, 303, 307 or 308 */
    char *location;  /* template with variables ($host, $path, ...) */
};

struct ct_conf_respond {
    unsigned status; /* 0 = no fixed answer */
    char *body;
    char *content_type;
};

/* Per client address (sites and routes): 0 is off. */
struct ct_conf_limit {
    unsigned rate;       /* requests per period (token bucket) ... */
    uint64_t period_ms;  /* ... of this length (1 s: per second) ... */
    unsigned burst;      /* ... up to this many at once (0: rate) */
    unsigned concurrent; /* requests in flight at once */
};

struct ct_conf_route {
    char *name;
    struct ct_conf_limit limit;
    struct ct_conf_match match;
    char *backend_group; /* NULL = the site's */
    struct ct_conf_route_cache cache;
    bool strip_cookie;     /* Cookie left off the origin request */
    bool strip_set_cookie; /* Set-Cookie left off the response (and so storable) */
    char **request_headers; /* "set Name: value", "append Name: value", "remove Name" */
    size_t nrequest_headers;
    char **response_headers;
    size_t nresponse_headers;
    struct ct_conf_redirect redirect;
    struct ct_conf_respond respond;
    struct ct_conf_cidr *allow; /* non-empty: only these clients (else 403) */
    size_t nallow;
    struct ct_conf_cidr *deny;  /* these clients get 403 */
    size_t ndeny;
    char **require_headers; /* each "Name: value" must be in the request (else 403) */
    size_t nrequire_headers;
    /* derived (conf_route.c) */
    size_t group; /* ct_conf_group_at()'s index */
};

struct ct_conf_site {
    char *name;
    char **hosts; /* "example.com", "*.example.com" (lower-case) */
    size_t nhosts;
    bool is_default; /* hosts matching no site come here */
    char *backend_group; /* routes without one use it; NULL = "default" */
    struct ct_conf_limit limit; /* every request of the site, besides its route's */
    struct ct_conf_route *routes;
    size_t nroutes;
    /* derived */
    size_t group;
};

struct ct_conf_cache {
    uint64_t size_bytes;
    uint64_t max_object_bytes;
    uint64_t default_ttl_ms;       /* 0 = none: no freshness info -> not fresh */
    double heuristic_fraction;     /* of (Date - Last-Modified), RFC 9111 4.2.2 */
    uint64_t heuristic_max_ms;     /* cap on heuristic freshness */
    uint64_t grace_ms;             /* serve stale while one fetch refreshes */
    uint64_t keep_ms;              /* keep stale objects with validators for 304s */
    uint64_t stale_if_error_ms;
    bool store_set_cookie;
    enum ct_conf_query key_query;
    char *key_header;              /* extra request header in the key; NULL = none */
    char *targeted_cc;             /* RFC 9213 field; CDN-Cache-Control always honoured */
    uint64_t hit_for_miss_ms;
    uint64_t waiter_timeout_ms;
    enum ct_conf_waiter waiter_timeout_action;
    enum ct_conf_eviction eviction;
    struct ct_conf_cidr *purge_allow;
    size_t npurge_allow;
    char **tag_headers;            /* response fields read as tags (surrogate keys) */
    size_t ntag_headers;
    unsigned max_tags;             /* per object; past it: counted, logged, left out */
    unsigned max_tag_length;       /* bytes per tag; longer: counted, logged, left out */
    bool expose_tags;              /* forward the tag fields to clients (debugging) */
    unsigned max_bans;             /* bans active at once (POST /ban refuses past it) */
    unsigned ban_lurker_batch;     /* objects the ban lurker tests per slice */
    uint64_t ban_lurker_sleep_ms;  /* pause between the lurker's slices */
    char *persist;                 /* snapshot file (issue 44); NULL = off */
};

/* HTTP/2 connections (limits.http2): SETTINGS we announce and the floods
 * we stop (proxy/h2/h2.h struct ct_h2_settings says what each does). */
struct ct_conf_http2 {
    unsigned max_concurrent_streams;
    uint64_t stream_window;     /* SETTINGS_INITIAL_WINDOW_SIZE */
    uint64_t connection_window;
    uint64_t max_frame_size;
    unsigned max_queued_acks;
    unsigned reset_burst, reset_rate;
    unsigned empty_frames_burst, empty_frames_rate;
    uint64_t early_response_discard;
};

struct ct_conf_limits {
    uint64_t max_request_line_bytes;
    uint64_t max_header_bytes;
    unsigned max_header_count;
    uint64_t max_body_bytes; /* 0 = unlimited */
    uint64_t request_buffer_bytes; /* bodies up to this are read whole first; 0: streamed */
    uint64_t client_header_timeout_ms;
    uint64_t client_body_timeout_ms;  /* whole body, from its head ... */
    uint64_t client_body_min_rate;    /* ... plus 1 s per this many bytes (0: fixed) */
    uint64_t keepalive_timeout_ms;
    uint64_t send_timeout_ms;
    unsigned max_connections_per_worker;
    uint64_t drain_timeout_ms;
    struct ct_conf_http2 http2;
};

/* compression: which responses cachet encodes, how hard, and what it offers
 * (docs/config.md, issue 18). */
struct ct_conf_compression {
    bool enabled;
    char **types;   /* media types: type/subtype, or type and a star; lower case */
    size_t ntypes;
    uint64_t min_size_bytes; /* smaller Content-Length: stored as it came */
    unsigned gzip_level;     /* 1..9 (http/coding/coding.h's ranges) */
    unsigned br_level;       /* 0..11 */
    unsigned zstd_level;     /* 1..19 */
    char **prefer;           /* coding names, most preferred first */
    size_t nprefer;
    bool on_the_fly;         /* also compress pass-through responses per request */
    bool store_transcoded;   /* store the other classes derived from a hit */
    /* derived (conf_check.c): prefer as the negotiation's server order */
    struct ct_ae_pref pref;
};

/* Does compression.types cover the media type of CONTENT_TYPE (a
 * Content-Type field value; parameters and case ignored)? */
bool ct_conf_compress_type(const struct ct_conf_compression *cz, const char *content_type,
                           size_t len);

#define CT_CONF_TOKEN_MAX 256

struct ct_conf_admin {
    bool enabled; /* "off" disables the admin listener */
    struct ct_conf_addr addr;
    char *token;      /* admin.token: the bearer token admin requests need; NULL: none */
    char *token_file; /* admin.token_file: a file whose first line is the token */
    /* derived (conf_check.c): token_file's token, read at load and reload */
    char file_token[CT_CONF_TOKEN_MAX + 1];
};

/* Is GOT the secret TOKEN (the admin's, the fleet's)? Compared as SHA-256
 * digests with CRYPTO_memcmp: constant time, and TOKEN's length does not
 * leak through the compare. */
bool ct_conf_token_matches(const char *token, struct ct_str got);

/* The admin token in force (admin.token, or the one read from
 * admin.token_file), or NULL when admin requests need none. */
static inline const char *ct_conf_admin_token(const struct ct_conf_admin *a)
{
    return a->token ? a->token : a->file_token[0] ? a->file_token : NULL;
}

/* ---- the fleet (issue 17) ---------------------------------------------------
 *
 * N cachet nodes that act as one cache: each key has an owner among the
 * members (rendezvous hashing on the key over the members not marked down);
 * a miss elsewhere is fetched from the owner's peer address, marked with
 * hop_header, and the owner fetches from the origin once for the fleet. */
struct ct_conf_fleet_member {
    char *name;              /* stable: ownership hashes on it, not on the address */
    struct ct_conf_addr addr; /* IP:PORT of its HTTP listener peers fetch from */
    struct ct_conf_addr admin; /* its admin listener, for HTTP fan-out; host NULL: none */
    struct ct_conf_backend_tls tls; /* peer fetches over TLS (on: address is an https one) */
    /* not a row: learned from its registration in Redis (fleet.learn_members),
     * merged in by ct_conf_build_learned, never in the file */
    bool learned;
};
enum ct_conf_owner_down { CT_CONF_OWNER_DOWN_ORIGIN, CT_CONF_OWNER_DOWN_ERROR };
struct ct_conf_fleet {
    char *self; /* this node's member name; NULL ("off"): no fleet */
    struct ct_conf_fleet_member *members;
    size_t nmembers;
    char *hop_header;  /* marks a peer request; never forwarded again */
    char *token;       /* NULL: peers are known by address only */
    uint64_t connect_timeout_ms;
    uint64_t response_timeout_ms; /* response head, and silence in the body */
    uint64_t down_ms;  /* a peer that failed is not asked for this long */
    int owner_down;    /* enum ct_conf_owner_down */
    unsigned load_factor; /* bounded-load ownership: % of the mean; 0: off */
    unsigned load_floor;  /* ... never below this many in flight to the owner */
    struct ct_conf_addr redis; /* IP:PORT; host NULL ("off"): static members, no fan-out */
    char *redis_sentinel;      /* master name: REDIS is a Sentinel's address; NULL: not */
    char *redis_password;      /* AUTH to the Redis server(s); NULL: none */
    char *redis_username;      /* ACL user of that AUTH (Redis 6); NULL: "default" */
    char *redis_sentinel_password; /* AUTH to the Sentinels; NULL: none */
    char **redis_sentinels;    /* more Sentinels' "IP:PORT", tried after REDIS in order */
    size_t nredis_sentinels;
    char *redis_prefix;        /* key prefix: {PREFIX}:purges, {PREFIX}:members */
    uint64_t register_ttl_ms;  /* membership entry lifetime (refreshed every third) */
    bool learn_members;        /* members registered in Redis but not listed here join */
    uint64_t mirror_ttl_ms;    /* an edge keeps an owner's answer fresh at most this long
                                  (whole seconds); 0: it keeps no copy */
    unsigned purge_queue;      /* clients' PURGEs queued for the fan-out; past it: 503 */
    unsigned fanout_queue;     /* per member, HTTP fan-out entries kept until acknowledged;
                                  past it the oldest is dropped; 0: none kept (sent once) */
    /* derived (conf_fleet.c): one backend group per member but self, after
     * the configured groups (ct_conf_group_at); PEER_GROUP[i] is member i's
     * group index, SIZE_MAX for self. Owned here, freed by ct_conf_free. */
    size_t self_index;
    struct ct_conf_group *peer_groups;
    size_t npeer_groups;
    size_t *peer_group;
    /* derived: REDIS then REDIS_SENTINELS, parsed (with redis_sentinel set) */
    struct ct_conf_addr *sentinels;
    size_t nsentinels;
};

enum ct_conf_access_format { CT_CONF_ACCESS_COMBINED, CT_CONF_ACCESS_JSON };

struct ct_conf_logs {
    enum ct_log_target target; /* common/log.h: error_log's file, syslog, JSON on stdout */
    int syslog_facility;       /* a syslog.h value: LOG_DAEMON, LOG_LOCAL0, ... */
    char *syslog_tag;
    char *syslog_socket;
    char *error_log; /* path, or "-" for stderr */
    enum ct_log_level level;
    char *access_log; /* NULL = off; "-" = stdout; else a path */
    enum ct_conf_access_format access_format;
};

struct ct_conf {
    unsigned magic; /* CT_CONF_MAGIC */
    char *source;   /* file name, or "<default>" for the embedded default */
    unsigned workers; /* 0 = auto (one per core) */
    char *pid_file;   /* written at start, removed at exit; NULL = none */
    struct ct_conf_listener *listeners;
    size_t nlisteners;
    struct ct_conf_backend *backends; /* the group "default" */
    size_t nbackends;
    struct ct_conf_group *groups; /* backend_groups as written (without "default") */
    size_t ngroups;
    struct ct_conf_site *sites;
    size_t nsites;
    /* derived (conf_route.c): the group "default" over `backends` (borrowed,
     * not owned; refreshed by every ct_conf_finish) */
    struct ct_conf_group default_group;
    /* derived: every backend of every group, "default"'s first, in order;
     * shallow copies (their strings belong to the lists above); backend i
     * is in group flat_group[i]. The proxy's backend objects, health checks
     * and counters are parallel to this list. */
    struct ct_conf_backend *flat_backends;
    size_t *flat_group;
    size_t nflat;
    /* The real client address behind proxies: requests from these peers have
     * their client read from real_ip_header (issue 15) */
    struct ct_conf_cidr *trusted_proxies;
    size_t ntrusted_proxies;
    int real_ip_header; /* enum ct_conf_real_ip */
    struct ct_conf_cache cache;
    struct ct_conf_compression compression;
    struct ct_conf_limits limits;
    struct ct_conf_admin admin;
    struct ct_conf_logs logs;
    struct ct_conf_fleet fleet;
    struct ct_conf_locs *_locs; /* private to conf/: where each setting came from */
};

/* Backend groups by index: 0 is "default" (the top-level backends), then
 * cf->groups[i - 1], then the fleet's peer groups (one per other member). */
static inline size_t ct_conf_ngroups(const struct ct_conf *cf)
{
    return 1 + cf->ngroups + cf->fleet.npeer_groups;
}
static inline const struct ct_conf_group *ct_conf_group_at(const struct ct_conf *cf, size_t i)
{
    return i == 0               ? &cf->default_group
           : i <= cf->ngroups ? &cf->groups[i - 1]
                              : &cf->fleet.peer_groups[i - 1 - cf->ngroups];
}

/* Variables of header rules, redirect locations and fixed bodies, written
 * `$name` or `${name}` (`$$` is a `$`). X(id, name, what). */
#define CT_CONF_VAR_TABLE(X)                                                   \
    X(SCHEME, "scheme", "http or https")                                      \
    X(HOST, "host", "the request's host, lower-case, without a default port") \
    X(PATH, "path", "the path, before any ?")                                 \
    X(QUERY, "query", "? and the query, or nothing")                          \
    X(URI, "uri", "path and query")                                           \
    X(CLIENT, "client", "the client address (no port)")                       \
    X(REQUEST_ID, "request_id", "the request's id")                           \
    X(SITE, "site", "the site's name")                                        \
    X(ROUTE, "route", "the route's name")
enum ct_conf_var {
#define CT_CONF_VAR_ENUM(id, name, what) CT_CONF_VAR_##id,
    CT_CONF_VAR_TABLE(CT_CONF_VAR_ENUM)
#undef CT_CONF_VAR_ENUM
    CT_CONF_VAR_DOLLAR, /* "$$" */
    CT_CONF_VAR_COUNT
};
/* The variable at S (which starts with '$'): its id, and *LEN the bytes it
 * takes ("$host" 5, "${host}" 7, "$$" 2). -1 if S names none. */
int ct_conf_var_parse(const char *s, size_t *len);

/* Is ADDR (FAMILY AF_INET with 4 bytes, or AF_INET6 with 16) inside C? */
bool ct_conf_cidr_match(const struct ct_conf_cidr *c, int family, const uint8_t *addr);

/* ---- building ---------------------------------------------------------- */

/* The embedded default (docs/usage.md): http 127.0.0.1:8080, https 127.0.0.1:8443
 * with the self-signed certificate, backend 127.0.0.1:8081, 256 MiB cache,
 * admin 127.0.0.1:8082. *out is new, owned by the caller. Returns CT_OK. */
int ct_conf_default(struct ct_conf **out);

/* Parse and validate a file (or a string; NAME is used as FILE in errors;
 * `@include "f"` resolves next to the file, or from the working directory
 * for a string), including cross-checks (duplicate addresses, certificate files readable and
 * matching their keys, ...). On CT_OK *out is new and owned by the caller; on
 * CT_ECONF *out = NULL and ERRS holds every error found. */
int ct_conf_load_file(const char *path, struct ct_conf **out, struct ct_conf_errors *errs);
int ct_conf_load_string(const char *text, const char *name, struct ct_conf **out,
                        struct ct_conf_errors *errs);

/* Free *cfp and everything it owns; sets *cfp = NULL. NULL is fine. */
void ct_conf_free(struct ct_conf **cfp);

/* Print CF in the file syntax, every setting with its effective value, such
 * that loading the output gives an identical configuration (`cachet -T`). */
void ct_conf_dump(const struct ct_conf *cf, FILE *fp);

/* Print the configuration reference (Markdown) generated from the schema
 * table: every key, type, default and help. docs/config.md embeds its output. */
void ct_conf_print_reference(FILE *fp);
/* The same reference as roff (.SS per top-level key, .TP per setting), for
 * cachet.conf(5): docs/man/cachet.conf.5 embeds its output. */
void ct_conf_print_reference_man(FILE *fp);

/* The reason a setting's default was chosen (the reference's "Why this
 * default"), by its reference key such as "cache.grace" or
 * "listen[].tls.min_version"; NULL if none is written down. */
const char *ct_conf_default_reason(const char *key);
/* Every key that has a reason, into *KEYS (static storage); the count. */
size_t ct_conf_default_reasons(const char ***keys);

/* ---- command line ------------------------------------------------------- */

#define CT_CLI_MAX_REPEAT 16

/* The parsed command line. Strings point into argv (valid for the process). */
struct ct_cli {
    const char *conf_file; /* -c FILE; NULL = embedded default */
    bool test_only;        /* -t: validate and exit */
    bool dump;             /* -T: print the effective configuration and exit */
    bool version;          /* --version */
    bool build_info;       /* -V: versions of the build and its libraries */
    bool help;             /* -h, --help */
    /* Overrides; a NULL/0 field means "not given". Listener values may be
     * "off" to remove every listener of that kind. */
    const char *http[CT_CLI_MAX_REPEAT];
    size_t nhttp;
    const char *https[CT_CLI_MAX_REPEAT];
    size_t nhttps;
    const char *backend[CT_CLI_MAX_REPEAT];
    size_t nbackend;
    const char *backend_ca; /* --backend-ca FILE: the CA of https:// backends */
    const char *cert_file;
    const char *key_file;
    const char *cache_size;
    const char *workers;
    const char *admin;
    const char *log_level;
    const char *access_log;
};

/* Parse cachet's whole command line (argv[0] is skipped):
 *   -c FILE  -t  -T  --version  -h/--help
 *   --http ADDR:PORT|off (repeatable)  --https ADDR:PORT|off (repeatable)
 *   --backend [http://|https://]HOST:PORT (repeatable)  --backend-ca FILE
 *   --cert FILE --key FILE (together)
 *   --cache-size SIZE  --workers N|auto  --admin ADDR:PORT|off
 *   --log-level debug|info|warn|error  --access-log FILE|-|off
 * Values are syntax-checked here, every argument read whatever came before.
 * Returns CT_OK, or CT_ECONF with every error in ERR, one per line, located
 * as the overrides' are: "command line (--http): invalid value ... (expected
 * ...)". */
int ct_conf_cli_parse(int argc, char **argv, struct ct_cli *cli, char *err, size_t errlen);

/* The usage text for -h. */
void ct_conf_cli_usage(const char *prog, FILE *fp);

/* Apply CLI's overrides to CF (they win over the file), then re-run the
 * cross-checks. Only by the owner of CF, before CF is shared: it writes CF.
 * "off" for --http/--https/--admin removes those listeners. Rules: --http/--https replace the listeners of that kind (if the
 * file had exactly one of that kind, its other settings are kept and only the
 * address changes); --cert/--key replace the certificates of every HTTPS
 * listener; --backend replaces the backend list (settings copied from the
 * file's first backend). Returns CT_OK or CT_ECONF (errors in ERRS, located
 * as "command line: --opt: ..."). */
int ct_conf_apply_cli(struct ct_conf *cf, const struct ct_cli *cli, struct ct_conf_errors *errs);

/* The whole startup/-t/reload path: load cli->conf_file (or the embedded
 * default), apply the overrides, cross-check. On CT_OK *out is new and owned
 * by the caller; on CT_ECONF *out = NULL and ERRS holds the errors. */
int ct_conf_build(const struct ct_cli *cli, struct ct_conf **out, struct ct_conf_errors *errs);

/* ct_conf_build, with LEARNED[0..N) (members learned through Redis, issue
 * 17) appended to fleet.members before the cross-checks, each marked
 * learned, so their peer groups are derived like the file's. Skipped: all
 * of them when the file has no fleet or fleet.learn_members is false, and
 * each one a file member already names or holds the address of
 * (ct_conf_fleet_learnable). A SIGHUP rebuilds through this too, so a learned
 * member outlives a reload of the file. */
int ct_conf_build_learned(const struct ct_cli *cli, const struct ct_conf_fleet_member *learned,
                          size_t n, struct ct_conf **out, struct ct_conf_errors *errs);
/* May M be learned into FL: FL learns members, and no member of the file
 * (the ones not learned) has M's name or address? */
bool ct_conf_fleet_learnable(const struct ct_conf_fleet *fl, const struct ct_conf_fleet_member *m);
/* Numeric "IP:PORT", "[IPv6]:PORT" or "*:PORT"; A->host is allocated. */
int ct_conf_parse_addr(const char *s, struct ct_conf_addr *a);

#endif /* CT_CONF_H */
