/*
 * conf/conf_schema.c: THE table of settings. Every key of the config file is
 * one row here: name, type, limits, default (in file syntax, parsed by the
 * same code as the file, so a default can't be something a user couldn't
 * write), target field and help. Defaults live nowhere else;
 * docs/config.md's reference is printed from these rows and a unit test
 * (tests/unit/test_conf_dump.c) checks it.
 *
 * Also here: the generic walks that need nothing but the table (defaults,
 * free, deep copy) and the reference printer.
 */
#include <libconfig.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <syslog.h>

#include "conf/conf_int.h"

/* A default written as a libconfig string literal. */
#define Q(s) "\"" s "\""
#define FLD(T, f) .off = offsetof(T, f), .size = sizeof(((T *)0)->f)

#define ROW_BOOL(T, key, f, d, h) {.name = key, .type = CT_ROW_BOOL, FLD(T, f), .def = d, .help = h}
#define ROW_UINT(T, key, f, fl, lo, hi, d, h)                                                 \
    {.name = key, .type = CT_ROW_UINT, .flags = fl, FLD(T, f), .min = lo, .max = hi, .def = d, \
     .help = h}
#define ROW_SIZE(T, key, f, lo, hi, d, h)                                                     \
    {.name = key, .type = CT_ROW_SIZE, FLD(T, f), .min = lo, .max = hi, .def = d, .help = h}
#define ROW_DUR(T, key, f, fl, lo, hi, d, h)                                                  \
    {.name = key, .type = CT_ROW_DUR, .flags = fl, FLD(T, f), .min = lo, .max = hi, .def = d,  \
     .help = h}
/* Rows whose non-default values depart from an RFC (the opt-ins). */
#define ROW_BOOL_DEP(T, key, f, d, h, dep)                                                         \
    {.name = key, .type = CT_ROW_BOOL, FLD(T, f), .def = d, .help = h, .departs = dep}
#define ROW_DUR_DEP(T, key, f, fl, lo, hi, d, h, dep)                                              \
    {.name = key, .type = CT_ROW_DUR, .flags = fl, FLD(T, f), .min = lo, .max = hi, .def = d,  \
     .help = h, .departs = dep}
#define ROW_FRAC(T, key, f, d, h) {.name = key, .type = CT_ROW_FRAC, FLD(T, f), .def = d, .help = h}
#define ROW_STR(T, key, f, fl, d, h)                                                          \
    {.name = key, .type = CT_ROW_STR, .flags = fl, FLD(T, f), .def = d, .help = h}
#define ROW_OPTSTR(T, key, f, d, h) {.name = key, .type = CT_ROW_OPTSTR, FLD(T, f), .def = d, .help = h}
#define ROW_OPTSTR_F(T, key, f, fl, d, h)                                                          \
    {.name = key, .type = CT_ROW_OPTSTR, FLD(T, f), .flags = fl, .def = d, .help = h}
#define ROW_ENUM(T, key, f, fl, e, d, h)                                                      \
    {.name = key, .type = CT_ROW_ENUM, .flags = fl, FLD(T, f), .enums = e, .def = d, .help = h}
#define ROW_ADDR(T, key, f, fl, d, h)                                                         \
    {.name = key, .type = CT_ROW_ADDR, .flags = fl, FLD(T, f), .def = d, .help = h}
#define ROW_HOSTPORT(T, key, fh, fp, fl, h)                                                   \
    {.name = key, .type = CT_ROW_HOSTPORT, .flags = fl, FLD(T, fh), .off2 = offsetof(T, fp),   \
     .help = h}
#define ROW_STRLIST(T, key, f, fn, d, h)                                                      \
    {.name = key, .type = CT_ROW_STRLIST, FLD(T, f), .off2 = offsetof(T, fn), .def = d, .help = h}
#define ROW_TEXTLIST(T, key, f, fn, d, h)                                                     \
    {.name = key, .type = CT_ROW_STRLIST, .flags = CT_ROW_TEXT, FLD(T, f),                     \
     .off2 = offsetof(T, fn), .def = d, .help = h}
#define ROW_WORDLIST(T, key, f, fn, d, h)                                                     \
    {.name = key, .type = CT_ROW_STRLIST, .flags = CT_ROW_WORDS, FLD(T, f),                    \
     .off2 = offsetof(T, fn), .def = d, .help = h}
#define ROW_FIELDLIST(T, key, f, fn, d, h)                                                    \
    {.name = key, .type = CT_ROW_STRLIST, .flags = CT_ROW_FIELDS, FLD(T, f),                   \
     .off2 = offsetof(T, fn), .def = d, .help = h}
#define ROW_TYPELIST(T, key, f, fn, d, h)                                                     \
    {.name = key, .type = CT_ROW_STRLIST, .flags = CT_ROW_TYPES, FLD(T, f),                    \
     .off2 = offsetof(T, fn), .def = d, .help = h}
#define ROW_CIDRLIST(T, key, f, fn, d, h)                                                     \
    {.name = key, .type = CT_ROW_CIDRLIST, FLD(T, f), .off2 = offsetof(T, fn), .def = d,       \
     .help = h}
#define ROW_GROUP(T, key, f, s, h) {.name = key, .type = CT_ROW_GROUP, FLD(T, f), .sub = &s, .help = h}
#define ROW_LIST(T, key, f, fn, ET, s, h)                                                     \
    {.name = key, .type = CT_ROW_LIST, FLD(T, f), .off2 = offsetof(T, fn),                    \
     .elem_size = sizeof(ET), .sub = &s, .help = h}

#define SECTION(nm, T, rs) {.name = nm, .rows = rs, .nrows = CT_ARRAY_LEN(rs), .size = sizeof(T)}

#define SEC 1000ull
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
#define KiB 1024ull
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define TiB (1024 * GiB)

/* Mozilla "intermediate" (server side TLS guidelines v5.7). */
#define CT_MOZ_INTERMEDIATE                                                                   \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                               \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"                               \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"                               \
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305"
#define CT_TLS13_SUITES "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

static const struct ct_conf_enum kinds[] = {
    {"http", CT_CONF_LISTEN_HTTP}, {"https", CT_CONF_LISTEN_HTTPS}, {NULL, 0}};
static const struct ct_conf_enum tls_versions[] = {
    {"1.2", TLS1_2_VERSION}, {"1.3", TLS1_3_VERSION}, {NULL, 0}};
static const struct ct_conf_enum verifies[] = {{"off", CT_CONF_VERIFY_OFF},
                                               {"optional", CT_CONF_VERIFY_OPTIONAL},
                                               {"required", CT_CONF_VERIFY_REQUIRED},
                                               {NULL, 0}};
static const struct ct_conf_enum queries[] = {{"keep", CT_CONF_QUERY_KEEP},
                                              {"drop", CT_CONF_QUERY_DROP},
                                              {"sort", CT_CONF_QUERY_SORT},
                                              {NULL, 0}};
static const struct ct_conf_enum evictions[] = {
    {"sieve", CT_CONF_EVICTION_SIEVE}, {"cost", CT_CONF_EVICTION_COST}, {NULL, 0}};
static const struct ct_conf_enum waiters[] = {
    {"504", CT_CONF_WAITER_504}, {"fetch", CT_CONF_WAITER_FETCH}, {NULL, 0}};
static const struct ct_conf_enum real_ips[] = {{"X-Forwarded-For", CT_CONF_REAL_IP_XFF},
                                               {"Forwarded", CT_CONF_REAL_IP_FORWARDED},
                                               {NULL, 0}};
static const struct ct_conf_enum levels[] = {{"debug", CT_LOG_DEBUG},
                                             {"info", CT_LOG_INFO},
                                             {"warn", CT_LOG_WARN},
                                             {"error", CT_LOG_ERR},
                                             {NULL, 0}};
static const struct ct_conf_enum log_targets[] = {{"file", CT_LOG_TO_FILE},
                                                  {"syslog", CT_LOG_TO_SYSLOG},
                                                  {"json", CT_LOG_TO_JSON},
                                                  {NULL, 0}};
static const struct ct_conf_enum facilities[] = {
    {"user", LOG_USER},     {"daemon", LOG_DAEMON}, {"auth", LOG_AUTH},     {"authpriv", LOG_AUTHPRIV},
    {"syslog", LOG_SYSLOG}, {"local0", LOG_LOCAL0}, {"local1", LOG_LOCAL1}, {"local2", LOG_LOCAL2},
    {"local3", LOG_LOCAL3}, {"local4", LOG_LOCAL4}, {"local5", LOG_LOCAL5}, {"local6", LOG_LOCAL6},
    {"local7", LOG_LOCAL7}, {NULL, 0}};
_Static_assert(sizeof(enum ct_log_target) == sizeof(int), "enum size");
static const struct ct_conf_enum formats[] = {
    {"combined", CT_CONF_ACCESS_COMBINED}, {"json", CT_CONF_ACCESS_JSON}, {NULL, 0}};

/* The enum rows store through an int *. */
_Static_assert(sizeof(enum ct_conf_listen_kind) == sizeof(int), "enum size");
_Static_assert(sizeof(enum ct_conf_verify) == sizeof(int), "enum size");
_Static_assert(sizeof(enum ct_log_level) == sizeof(int), "enum size");

#define T struct ct_conf_cert
static const struct ct_conf_row cert_rows[] = {
    ROW_STR(T, "cert", cert_file, CT_ROW_REQUIRED | CT_ROW_PATH, NULL,
            "PEM certificate file; may hold the chain after the leaf."),
    ROW_STR(T, "key", key_file, CT_ROW_REQUIRED | CT_ROW_PATH, NULL,
            "PEM private key file matching `cert`."),
    ROW_STRLIST(T, "server_names", server_names, n_server_names, "[]",
                "SNI names this certificate serves: exact (`example.com`) or wildcard "
                "(`*.example.com`, one label)."),
    ROW_BOOL(T, "default", is_default, "false",
             "Serve this certificate when SNI is absent or matches nothing; at most one per "
             "listener (the first certificate when none is marked)."),
};
static const struct ct_conf_section cert_section = SECTION("certificate", T, cert_rows);
#undef T

static const struct ct_conf_enum acme_keys[] = {{"ec-p256", CT_CONF_ACME_EC_P256}, {NULL, 0}};
_Static_assert(sizeof(enum ct_conf_acme_key) == sizeof(int), "enum size");

#define T struct ct_conf_acme
static const struct ct_conf_row acme_rows[] = {
    ROW_OPTSTR(T, "directory", directory, Q("off"),
               "The ACME CA's directory URL, `https://...` (Let's Encrypt: "
               "`https://acme-v02.api.letsencrypt.org/directory`); `off`: no ACME."),
    ROW_OPTSTR(T, "email", email, Q("off"),
               "Contact address given to the CA with the account (expiry notices)."),
    ROW_STRLIST(T, "names", names, nnames, "[]",
                "Names to obtain certificates for, one certificate each; none: every site's "
                "`hosts`. No wildcards (they need DNS-01)."),
    ROW_WORDLIST(T, "challenges", challenges, nchallenges,
                 "[" Q("tls-alpn-01") ", " Q("http-01") "]",
                 "Challenges answered, in order of preference: `tls-alpn-01` (on this "
                 "listener, RFC 8737), `http-01` (on the http listeners, port 80 for a real CA)."),
    ROW_STR(T, "storage", storage, CT_ROW_PATH, Q("/var/lib/cachet/acme"),
            "Directory for the account key, certificate keys and certificates (files 0600)."),
    ROW_DUR(T, "renew_before", renew_before_ms, CT_ROW_AUTO, 1 * SEC, 365 * DAY, Q("auto"),
            "Renew when this much of a certificate's life is left; `auto`: a third of its "
            "lifetime."),
    ROW_ENUM(T, "key_type", key_type, 0, acme_keys, Q("ec-p256"),
             "Key of the certificates and of the account: `ec-p256` (ES256)."),
    ROW_OPTSTR_F(T, "directory_ca", directory_ca, CT_ROW_PATH, Q("off"),
               "PEM CAs that verify the directory's certificate (a private CA such as "
               "pebble's); `off`: the system's store."),
};
static const struct ct_conf_section acme_section = SECTION("acme", T, acme_rows);
#undef T

#define T struct ct_conf_tls
static const struct ct_conf_row tls_rows[] = {
    ROW_BOOL(T, "self_signed", self_signed, "false",
             "No certificate files: generate a self-signed EC P-256 certificate for "
             "localhost/127.0.0.1 at start (the embedded default's HTTPS listener)."),
    ROW_LIST(T, "certificates", certs, ncerts, struct ct_conf_cert, cert_section,
             "Certificates chosen by SNI: `( { cert = \"...\"; key = \"...\"; server_names = "
             "[...]; default = true; }, ... )`. An ECDSA and an RSA certificate may share names."),
    ROW_ENUM(T, "min_version", min_version, 0, tls_versions, Q("1.2"),
             "Lowest TLS version accepted; SSLv3, TLS 1.0 and 1.1 are never offered."),
    ROW_STR(T, "ciphers", ciphers, 0, Q(CT_MOZ_INTERMEDIATE),
            "TLS 1.2 cipher list (OpenSSL syntax); default: Mozilla intermediate."),
    ROW_STR(T, "ciphersuites", ciphersuites, 0, Q(CT_TLS13_SUITES), "TLS 1.3 cipher suites."),
    ROW_STR(T, "groups", groups, 0, Q("X25519:P-256"), "Key exchange groups, in preference order."),
    ROW_BOOL(T, "session_tickets", session_tickets, "true",
             "Stateless resumption with session tickets; keys shared by all workers."),
    ROW_DUR(T, "ticket_key_rotation", ticket_key_rotation_ms, 0, 1 * MIN, 7 * DAY, Q("1h"),
            "How often a new ticket key is made; the previous key still decrypts."),
    ROW_BOOL(T, "session_cache", session_cache, "true", "Server-side session cache (resumption by ID)."),
    ROW_UINT(T, "session_cache_size", session_cache_size, 0, 1, 10000000, "20480",
             "Sessions kept in the session cache."),
    ROW_DUR(T, "handshake_timeout", handshake_timeout_ms, 0, 100, 10 * MIN, Q("10s"),
            "A client that has not finished the handshake by then is closed."),
    ROW_BOOL(T, "ktls", ktls, "false", "Try kernel TLS (SSL_OP_ENABLE_KTLS) where offered."),
    ROW_BOOL(T, "http2", http2, "true",
             "Offer HTTP/2: ALPN `h2` first, then `http/1.1`; clients without ALPN or asking "
             "for `http/1.1` get HTTP/1.1. `false`: HTTP/1.1 only."),
    ROW_OPTSTR_F(T, "client_ca", client_ca, CT_ROW_PATH, Q("off"),
               "mTLS: PEM file of CAs that client certificates are verified against."),
    ROW_ENUM(T, "client_verify", client_verify, 0, verifies, Q("off"),
             "mTLS: `off`, `optional` (verified if sent) or `required`."),
    ROW_OPTSTR(T, "client_subject_header", client_subject_header, Q("off"),
               "mTLS: request header carrying the verified client subject to the origin."),
    ROW_GROUP(T, "acme", acme, acme_section,
              "Certificates obtained and renewed by ACME (RFC 8555), docs/acme.md: "
              "`{ directory = \"URL\"; storage = \"DIR\"; ... }`."),
};
static const struct ct_conf_section tls_section = SECTION("tls", T, tls_rows);
#undef T

static const char *listener_why_not(const char *row, const void *base)
{
    const struct ct_conf_listener *l = base;
    if (l->kind == CT_CONF_LISTEN_HTTP && strcmp(row, "tls") == 0)
        return "only https listeners have tls settings";
    if (l->kind == CT_CONF_LISTEN_HTTPS &&
        (strcmp(row, "redirect_to_https") == 0 || strcmp(row, "redirect_port") == 0))
        return "only http listeners redirect to https";
    if (l->kind == CT_CONF_LISTEN_HTTPS && strcmp(row, "h2c") == 0)
        return "https listeners offer h2 by ALPN (tls.http2)";
    return NULL;
}

#define T struct ct_conf_listener
static const struct ct_conf_row listener_rows[] = {
    ROW_ENUM(T, "kind", kind, CT_ROW_REQUIRED, kinds, NULL, "`http` or `https`."),
    ROW_ADDR(T, "address", addr, CT_ROW_REQUIRED, NULL,
             "Numeric `IP:PORT` (`[::1]:8443` for IPv6, `*:8080` for every IPv4 address); "
             "port 0 picks a free port, announced as `listening on KIND ADDR:PORT`."),
    ROW_BOOL(T, "redirect_to_https", redirect_to_https, "false",
             "HTTP listeners: answer every request with 301 to the same host and target over "
             "https."),
    ROW_UINT(T, "redirect_port", redirect_port, 0, 0, 65535, "0",
             "Port put in the redirect's Location; 0 = the first HTTPS listener's port."),
    ROW_BOOL_DEP(T, "honour_client_cache_control", honour_client_cc, "true",
                 "Obey request Cache-Control (no-cache, max-age, min-fresh, max-stale, "
                 "only-if-cached) and `Pragma: no-cache`; `false` serves fresh hits whatever the "
                 "client asks (public sites often turn it off, so a reload button cannot reach "
                 "the origin).",
                 "RFC 9111 §5.2.1 (request directives ignored)"),
    ROW_BOOL(T, "h2c", h2c, "false",
             "HTTP listeners: also serve HTTP/2 over cleartext to clients that open with its "
             "connection preface (prior knowledge, RFC 9113 §3.3), beside HTTP/1.1 on the same "
             "port. `Upgrade: h2c` stays refused."),
    ROW_BOOL(T, "proxy_protocol", proxy_protocol, "false",
             "Every connection starts with a PROXY protocol header (v1 or v2, as HAProxy and "
             "cloud load balancers send it), whose source address is the client's; only from "
             "`proxy_protocol_from`, other peers are closed."),
    ROW_CIDRLIST(T, "proxy_protocol_from", proxy_protocol_from, nproxy_protocol_from, "[]",
                 "Load balancer address prefixes allowed to send the PROXY header (at most "
                 "16)."),
    ROW_OPTSTR(T, "default_site", default_site, Q("off"),
               "The site for requests on this listener whose host no site claims; `off` = the "
               "site with `default = true`, if any."),
    ROW_GROUP(T, "tls", tls, tls_section, "HTTPS listeners: TLS settings (group)."),
};
#undef T
const struct ct_conf_section ct_conf_listener_section = {
    .name = "listener", .rows = listener_rows, .nrows = CT_ARRAY_LEN(listener_rows),
    .size = sizeof(struct ct_conf_listener), .why_not = listener_why_not};

#define T struct ct_conf_health
static const struct ct_conf_row health_rows[] = {
    ROW_BOOL(T, "enabled", enabled, "false", "Probe the backend actively."),
    ROW_DUR(T, "interval", interval_ms, 0, 100, 1 * HOUR, Q("5s"), "Time between probes."),
    ROW_DUR(T, "timeout", timeout_ms, 0, 10, 10 * MIN, Q("2s"), "A probe slower than this failed."),
    ROW_STR(T, "path", path, 0, Q("/"), "Request target of the probe (GET)."),
    ROW_UINT(T, "expect_status", expect_status, 0, 100, 599, "200", "Status a healthy backend answers."),
    ROW_UINT(T, "rise", rise, 0, 1, 100, "2", "Consecutive good probes to mark a backend up."),
    ROW_UINT(T, "fall", fall, 0, 1, 100, "3", "Consecutive bad probes to mark a backend down."),
};
static const struct ct_conf_section health_section = SECTION("health_check", T, health_rows);
#undef T

#define T struct ct_conf_backend_tls
static const struct ct_conf_row backend_tls_rows[] = {
    ROW_BOOL_DEP(T, "verify", verify, "true",
                 "Verify the origin's certificate: its chain against `ca` and its name against "
                 "`server_name` (or the IP address of an IP literal). A failure answers 502 and "
                 "logs OpenSSL's reason.",
                 "RFC 9110 §4.3.4 (an https origin's certificate must be verified)"),
    ROW_STR(T, "ca", ca, CT_ROW_PATH, Q("system"),
            "PEM file of the CAs the origin's certificate is verified against; `system` = "
            "the system's CA store."),
    ROW_OPTSTR(T, "server_name", server_name, Q("off"),
               "Name sent as SNI and checked in the certificate; `off` = the backend's host "
               "(for an IP literal: no SNI, and the certificate must hold that IP address); "
               "`$host` = the request's Host (without its port)."),
    ROW_OPTSTR_F(T, "cert", cert, CT_ROW_PATH, Q("off"),
               "mTLS: PEM client certificate (chain after the leaf) shown to the origin."),
    ROW_OPTSTR_F(T, "key", key, CT_ROW_PATH, Q("off"), "mTLS: PEM private key of `cert`."),
    ROW_ENUM(T, "min_version", min_version, 0, tls_versions, Q("1.2"),
             "Lowest TLS version offered to the origin."),
    ROW_STR(T, "ciphers", ciphers, 0, Q(CT_MOZ_INTERMEDIATE),
            "TLS 1.2 cipher list offered (OpenSSL syntax)."),
    ROW_STR(T, "ciphersuites", ciphersuites, 0, Q(CT_TLS13_SUITES), "TLS 1.3 cipher suites offered."),
    ROW_TEXTLIST(T, "alpn", alpn, nalpn, "[" Q("http/1.1") "]",
                 "ALPN protocols offered, in order; `[]` = no ALPN extension."),
    ROW_BOOL(T, "session_reuse", session_reuse, "true",
             "Resume a recent session (ticket or session id) on new connections, kept per "
             "worker, backend, SNI name and verification settings."),
    ROW_DUR(T, "handshake_timeout", handshake_timeout_ms, 0, 1, 10 * MIN, Q("5s"),
            "From the TCP connection to the end of the TLS handshake; past it the request "
            "fails with 504."),
};
static const struct ct_conf_section backend_tls_section = SECTION("tls", T, backend_tls_rows);
#undef T

#define T struct ct_conf_backend
static const struct ct_conf_row backend_rows[] = {
    ROW_STR(T, "name", name, 0, Q(""), "Name in logs and metrics; empty = the address."),
    ROW_HOSTPORT(T, "address", host, port, CT_ROW_REQUIRED,
                 "`HOST:PORT` of the origin (DNS name or IP, resolved at start and reload)."),
    ROW_UINT(T, "weight", weight, 0, 1, 1000, "1", "Share of requests in the round-robin."),
    ROW_DUR(T, "connect_timeout", connect_timeout_ms, 0, 1, 10 * MIN, Q("5s"),
            "TCP connect; past it the request fails with 504."),
    ROW_DUR(T, "response_header_timeout", header_timeout_ms, 0, 1, 1 * HOUR, Q("30s"),
            "From request sent to the end of the response head (504)."),
    ROW_DUR(T, "read_timeout", read_timeout_ms, 0, 1, 1 * HOUR, Q("30s"),
            "Longest silence between two reads of the response body."),
    ROW_UINT(T, "pool_max_idle", pool_max_idle, 0, 0, 100000, "256",
             "Idle keep-alive connections kept per worker. Keep it at or above the requests a "
             "worker forwards at once: a smaller pool closes the surplus after each burst and "
             "reconnects on the next (at 100 clients and 32, half the requests paid a connect); "
             "unused ones close after pool_idle_timeout."),
    ROW_DUR(T, "pool_idle_timeout", pool_idle_timeout_ms, 0, 1, 1 * HOUR, Q("60s"),
            "An idle pooled connection is closed after this."),
    ROW_UINT(T, "max_fails", max_fails, 0, 0, 1000, "3",
             "Passive health: consecutive failures before the backend is skipped; 0 = never."),
    ROW_DUR(T, "fail_timeout", fail_timeout_ms, 0, 1, 1 * HOUR, Q("10s"),
            "Passive health: how long a failed backend is skipped. Never the last backend in "
            "rotation: with one backend (or every other one skipped) passive health takes "
            "nothing out, as nginx ignores max_fails for a lone server."),
    ROW_WORDLIST(T, "passive_fail_on", passive_fail_on, n_passive_fail_on,
                "[" Q("connect") ", " Q("timeout") ", " Q("reset") "]",
                "Passive health: what counts as a failure: `connect` (refused or timed out), "
                "`timeout` (no response head in time), `reset` (closed before a response "
                "head), `invalid` (malformed head), `5xx`."),
    ROW_GROUP(T, "health_check", health, health_section, "Active health check (group)."),
    {.name = "tls", .type = CT_ROW_GROUP, .flags = CT_ROW_PRESENCE, FLD(T, tls),
     .sub = &backend_tls_section,
     .help = "TLS to the origin (group): a backend with a `tls` group speaks HTTPS to it, "
             "`tls = {};` with every default. Without one, cleartext HTTP/1.1."},
};
#undef T
const struct ct_conf_section ct_conf_backend_section =
    SECTION("backend", struct ct_conf_backend, backend_rows);

#define T struct ct_conf_cache
static const struct ct_conf_row cache_rows[] = {
    ROW_SIZE(T, "size", size_bytes, 1 * MiB, 1 * TiB, Q("256M"),
             "Memory for objects, counting headers, body and bookkeeping."),
    ROW_SIZE(T, "max_object_size", max_object_bytes, 1, 1 * TiB, Q("16M"),
             "Larger responses are passed through, not stored. Unset: 1/16 of `cache.size` "
             "(16M for the default 256M)."),
    ROW_DUR_DEP(T, "default_ttl", default_ttl_ms, CT_ROW_OFF, 0, 365 * DAY, Q("off"),
                "Freshness for storable responses without any (no max-age, Expires or "
                "Last-Modified); `off` = none, as the RFC says (Varnish's `default_ttl` is 120s, "
                "nginx caches only what `proxy_cache_valid` names).",
                "RFC 9111 §4.2.2 (freshness without an explicit or heuristic basis)"),
    ROW_FRAC(T, "heuristic_fraction", heuristic_fraction, "0.1",
             "Heuristic freshness: this fraction of the time since Last-Modified (RFC 9111 "
             "4.2.2)."),
    ROW_DUR(T, "heuristic_max", heuristic_max_ms, 0, 0, 365 * DAY, Q("1d"),
            "Cap on heuristic freshness."),
    ROW_DUR_DEP(T, "grace", grace_ms, 0, 0, 365 * DAY, Q("0s"),
                "Serve any stale object this long past its TTL while one background fetch "
                "refreshes it, without the origin's permission (Varnish's `default_grace`, 10s "
                "there). The default serves stale only where the response "
                "(`stale-while-revalidate`, `stale-if-error`), the client (`max-stale`) or "
                "`stale_if_error` allows it.",
                "RFC 9111 §4.2.4 (a cache MUST NOT generate a stale response unless permitted)"),
    ROW_DUR(T, "keep", keep_ms, 0, 0, 365 * DAY, Q("7d"),
            "Keep stale objects that carry a validator (ETag, Last-Modified) this long past TTL + "
            "grace, and revalidate them with a conditional request (a 304 refreshes the stored "
            "headers, RFC 9111 §4.3.4) instead of fetching them whole. Eviction still wins: a "
            "kept object costs memory only while nothing newer needs it (Varnish's `keep`, ATS "
            "keeps stale objects until evicted, nginx `proxy_cache_revalidate`)."),
    ROW_DUR(T, "stale_if_error", stale_if_error_ms, 0, 0, 365 * DAY, Q("0s"),
            "Serve stale this long past TTL when the origin fails (response stale-if-error "
            "wins when given)."),
    ROW_BOOL(T, "store_set_cookie", store_set_cookie, "false",
             "Store responses carrying Set-Cookie (they are never stored by default)."),
    ROW_ENUM(T, "key_query", key_query, 0, queries, Q("keep"),
             "Query string in the cache key: `keep`, `drop` or `sort` its parameters."),
    ROW_OPTSTR(T, "key_header", key_header, Q("off"),
               "Request header whose value is added to the cache key."),
    ROW_STR(T, "targeted_cache_control", targeted_cc, 0, Q("Cachet-Cache-Control"),
            "RFC 9213 field that overrides Cache-Control for cachet (CDN-Cache-Control is "
            "always honoured too); not forwarded to clients."),
    ROW_DUR(T, "hit_for_miss", hit_for_miss_ms, 0, 0, 1 * DAY, Q("2m"),
            "After an uncacheable answer, requests for the key skip coalescing this long."),
    ROW_DUR(T, "waiter_timeout", waiter_timeout_ms, 0, 1, 1 * HOUR, Q("30s"),
            "Longest wait on another client's fetch of the same object; a wait held for "
            "the end of a body of unknown length counts from the body's last growth."),
    ROW_ENUM(T, "waiter_timeout_action", waiter_timeout_action, 0, waiters, Q("504"),
             "What a waiter does on timeout: answer `504` or start its own `fetch`."),
    ROW_ENUM(T, "eviction", eviction, 0, evictions, Q("sieve"),
             "What eviction weighs: `sieve`, recency of use only (SIEVE); `cost`, SIEVE "
             "weighted by what each object's fetch cost the origin per byte (GreedyDual-"
             "style lives set from its cost class, docs/caching.md): slow objects stay "
             "longer. A hit writes nothing shared either way. A change needs a restart."),
    ROW_CIDRLIST(T, "purge_allow", purge_allow, npurge_allow, "[" Q("127.0.0.0/8") ", " Q("::1/128") "]",
                 "Client address prefixes allowed to PURGE."),
    ROW_FIELDLIST(T, "tag_headers", tag_headers, ntag_headers,
                  "[" Q("Surrogate-Key") ", " Q("Cache-Tag") ", " Q("xkey") "]",
                  "Response fields whose values tag the stored object for purges by tag "
                  "(`Surrogate-Key` and `xkey` space-separated, `Cache-Tag` and any other "
                  "comma-separated); matched exactly, case included; `[]` = no tags."),
    ROW_UINT(T, "max_tags", max_tags, 0, 1, 128, "128", /* CT_CACHE_TAGS_MAX */
             "Tags kept per object; the rest are left out, counted (`tags_refused`) and logged."),
    ROW_UINT(T, "max_tag_length", max_tag_length, 0, 1, 1024, "1024", /* CT_CACHE_TAG_MAX_LEN */
             "Longest tag, in bytes; longer ones are left out, counted and logged."),
    ROW_BOOL(T, "expose_tags", expose_tags, "false",
             "Send the tag fields on to clients (for debugging); by default they are for "
             "cachet only."),
    ROW_UINT(T, "max_bans", max_bans, 0, 1, 100000, "1000",
             "Bans active at once (`POST /ban`); past it a ban is refused (503) until the "
             "lurker has dropped older ones."),
    ROW_UINT(T, "ban_lurker_batch", ban_lurker_batch, 0, 1, 1000000, "1000",
             "Objects the ban lurker tests per slice (a shard lock is held for at most 64 at "
             "a time)."),
    ROW_DUR(T, "ban_lurker_sleep", ban_lurker_sleep_ms, 0, 1, 1 * MIN, Q("10ms"),
            "Pause between two slices of the ban lurker."),
    ROW_OPTSTR_F(T, "persist", persist, CT_ROW_PATH, Q("off"),
                 "Snapshot file: the cache is written there on a graceful stop (SIGTERM, "
                 "SIGQUIT, SIGINT; atomically, mode 0600) and loaded from it at the next start "
                 "before the listeners accept (a relative path is taken from the config file's "
                 "directory); `off` = a start is cold."),
};
static const struct ct_conf_section cache_section = SECTION("cache", T, cache_rows);
#undef T

#define T struct ct_conf_compression
static const struct ct_conf_row compression_rows[] = {
    ROW_BOOL(T, "enabled", enabled, "true",
             "Store compressible responses compressed (once, as they fill, in the coding "
             "the requesting client's Accept-Encoding class names), one variant per class."),
    ROW_TYPELIST(T, "types", types, ntypes,
                 "[" Q("text/*") ", " Q("application/json") ", " Q("application/javascript")
                 ", " Q("application/xml") ", " Q("application/xhtml+xml") ", "
                 Q("application/rss+xml") ", " Q("application/atom+xml") ", "
                 Q("application/ld+json") ", " Q("application/manifest+json") ", "
                 Q("application/geo+json") ", " Q("application/wasm") ", "
                 Q("image/svg+xml") ", " Q("image/x-icon") ", " Q("font/ttf") ", "
                 Q("font/otf") "]",
                 "Media types compressed (`type/subtype` or `type/*`; the Content-Type's "
                 "parameters and case do not matter); already-compressed formats (JPEG, PNG, "
                 "WOFF2, video) gain nothing and are left out."),
    ROW_SIZE(T, "min_size", min_size_bytes, 0, 1 * GiB, Q("256"),
             "Responses whose Content-Length is below this are stored as they came; a "
             "response without one is compressed."),
    ROW_UINT(T, "gzip_level", gzip_level, 0, 1, 9, "6",
             "zlib level, 1 (fastest) to 9; the CPU cost per level is in docs/config.md."),
    ROW_UINT(T, "br_level", br_level, 0, 0, 11, "6",
             "Brotli quality, 0 to 11; above 9 it is an order of magnitude slower."),
    ROW_UINT(T, "zstd_level", zstd_level, 0, 1, 19, "3",
             "Zstandard level, 1 to 19."),
    ROW_WORDLIST(T, "prefer", prefer, nprefer, "[" Q("zstd") ", " Q("br") ", " Q("gzip") "]",
                 "The codings offered, most preferred first, among `zstd`, `br`, `gzip` and "
                 "`identity` (always offered, last unless listed); a client's weights (q=) "
                 "come first, this order breaks ties. Codings not listed are never produced."),
    ROW_BOOL(T, "on_the_fly", on_the_fly, "false",
             "Also compress responses that are not stored (pass-through, hit-for-miss), per "
             "request, with back-pressure; this costs CPU on every such request."),
    ROW_BOOL(T, "store_transcoded", store_transcoded, "true",
             "Store the other codings derived from a stored object (a br object recoded to "
             "gzip for a gzip-only client) as variants of their own, charged to cache.size. "
             "On: the stored copy is recoded at once, on the worker, and the origin is not "
             "asked: one origin fetch per object whatever codings clients ask for. Off "
             "(the opt-in): such a client has its class fetched once from the origin "
             "(identity clients get the stored coding decoded either way)."),
};
static const struct ct_conf_section compression_section =
    SECTION("compression", T, compression_rows);
#undef T

#define T struct ct_conf_http2
static const struct ct_conf_row http2_rows[] = {
    ROW_UINT(T, "max_concurrent_streams", max_concurrent_streams, 0, 1, 10000, "100",
             "SETTINGS_MAX_CONCURRENT_STREAMS: requests in flight per connection; a stream "
             "past it is refused (RST_STREAM REFUSED_STREAM)."),
    ROW_SIZE(T, "stream_window", stream_window, 1, 2147483647, Q("65535"),
             "SETTINGS_INITIAL_WINDOW_SIZE: request body a stream may send before we read it, "
             "so what one unread upload can hold."),
    ROW_SIZE(T, "connection_window", connection_window, 65535, 2147483647, Q("1M"),
             "Request body all of a connection's streams may send before we read it."),
    ROW_SIZE(T, "max_frame_size", max_frame_size, 16384, 16777215, Q("16K"),
             "SETTINGS_MAX_FRAME_SIZE: the largest frame we accept."),
    ROW_UINT(T, "max_queued_acks", max_queued_acks, 0, 1, 100000, "100",
             "SETTINGS and PING acknowledgements owed and not yet written; past it the "
             "connection ends with GOAWAY ENHANCE_YOUR_CALM (a ping/settings flood)."),
    ROW_UINT(T, "reset_burst", reset_burst, 0, 1, 1000000, "200",
             "Streams that may end in a reset at once, either side's (rapid reset, "
             "CVE-2023-44487; provoked resets, CVE-2025-8671); then reset_rate per second. "
             "Past it: GOAWAY ENHANCE_YOUR_CALM."),
    ROW_UINT(T, "reset_rate", reset_rate, 0, 1, 1000000, "50",
             "Resets per second the reset budget earns back."),
    ROW_UINT(T, "empty_frames_burst", empty_frames_burst, 0, 1, 1000000, "100",
             "Empty DATA (no END_STREAM) and CONTINUATION frames allowed at once "
             "(CVE-2019-9518); then empty_frames_rate per second."),
    ROW_UINT(T, "empty_frames_rate", empty_frames_rate, 0, 1, 1000000, "10",
             "Empty frames per second that budget earns back."),
    ROW_SIZE(T, "early_response_discard", early_response_discard, 0, 1 * GiB, Q("1M"),
             "A response complete before its request body: this much more of the body is read "
             "and dropped (so the client finishes sending and reads the answer), then "
             "RST_STREAM NO_ERROR."),
};
static const struct ct_conf_section http2_section = SECTION("http2", T, http2_rows);
#undef T

#define T struct ct_conf_limits
static const struct ct_conf_row limits_rows[] = {
    ROW_SIZE(T, "max_request_line", max_request_line_bytes, 64, 1 * MiB, Q("8K"),
             "Longest request line; longer gets 414."),
    ROW_SIZE(T, "max_header_bytes", max_header_bytes, 1 * KiB, 16 * MiB, Q("64K"),
             "All request header bytes; more gets 431."),
    ROW_UINT(T, "max_header_count", max_header_count, 0, 1, 10000, "100",
             "Request header fields; more gets 431."),
    ROW_SIZE(T, "max_body", max_body_bytes, 0, UINT64_MAX, Q("0"),
             "Largest request body (413 past it); 0 = unlimited (streamed)."),
    ROW_SIZE(T, "request_buffer", request_buffer_bytes, 0, 16 * MiB, Q("64K"),
             "A request body up to this size is read whole, and checked, before the request "
             "goes to the origin; a larger one (by its Content-Length, or as it comes) is "
             "streamed. 0 = stream every body. Expect: 100-continue requests always stream."),
    ROW_DUR(T, "client_header_timeout", client_header_timeout_ms, 0, 100, 1 * HOUR, Q("10s"),
            "A request head must arrive within this (slowloris gets 408)."),
    ROW_DUR(T, "client_body_timeout", client_body_timeout_ms, 0, 100, 24 * HOUR, Q("60s"),
            "A request body must arrive within this from the end of its head, plus one second "
            "per client_body_min_rate bytes received; a body trickled slower gets 408 and the "
            "origin connection is dropped. Time cachet itself stops reading (the origin takes "
            "the body slowly) is not counted. The per-read bound stays client_header_timeout."),
    ROW_SIZE(T, "client_body_min_rate", client_body_min_rate, 0, 1 * GiB, Q("1K"),
             "Bytes per second of request body that earn one more second of "
             "client_body_timeout, so large uploads at any usable speed finish; 0 = a fixed "
             "deadline."),
    ROW_DUR(T, "keepalive_timeout", keepalive_timeout_ms, 0, 0, 1 * HOUR, Q("75s"),
            "Idle time allowed between requests on a connection; 0s = no keep-alive."),
    ROW_DUR(T, "send_timeout", send_timeout_ms, 0, 100, 1 * HOUR, Q("60s"),
            "Longest time a client may take to accept more response bytes."),
    ROW_UINT(T, "max_connections_per_worker", max_connections_per_worker, 0, 1, 1000000, "4096",
             "Past it a worker stops accepting until a connection closes."),
    ROW_DUR(T, "drain_timeout", drain_timeout_ms, 0, 0, 1 * HOUR, Q("30s"),
            "On SIGTERM/SIGINT, how long in-flight requests may finish."),
    ROW_GROUP(T, "http2", http2, http2_section,
              "HTTP/2 connections: what they announce and the floods they stop (group). The "
              "request head limits above hold for HTTP/2 too."),
};
static const struct ct_conf_section limits_section = SECTION("limits", T, limits_rows);
#undef T

#define T struct ct_conf_admin
static const struct ct_conf_row admin_rows[] = {
    ROW_ADDR(T, "listen", addr, CT_ROW_OFF, Q("127.0.0.1:8082"),
             "Admin listener (`/stats`, `/metrics`, purge, bans) `IP:PORT`, or `off`. Beyond "
             "loopback only with a token."),
    ROW_OPTSTR_F(T, "token", token, CT_ROW_SECRET, Q("off"),
               "Bearer token every admin request but `GET /` must carry (`Authorization: "
               "Bearer TOKEN`, compared in constant time); 16 to 256 visible ASCII characters, "
               "or `off`. Prefer `token_file`."),
    ROW_OPTSTR_F(T, "token_file", token_file, CT_ROW_PATH, Q("off"),
               "File whose first line is the admin token (read at start and at each reload), "
               "or `off`. Not with `token`."),
};
static const struct ct_conf_section admin_section = SECTION("admin", T, admin_rows);
#undef T

#define T struct ct_conf_logs
static const struct ct_conf_row logs_rows[] = {
    ROW_STR(T, "error_log", error_log, CT_ROW_PATH, Q("-"), "Error log file, or `-` for stderr."),
    ROW_ENUM(T, "level", level, 0, levels, Q("info"), "`debug`, `info`, `warn` or `error`."),
    ROW_OPTSTR_F(T, "access_log", access_log, CT_ROW_PATH, Q("off"),
               "Access log file, `-` for stdout, or `off`."),
    ROW_ENUM(T, "access_format", access_format, 0, formats, Q("combined"),
             "`combined` (plus request time, upstream time, cache status, TLS version) or "
             "`json` (one object per line)."),
    ROW_ENUM(T, "target", target, 0, log_targets, Q("file"),
             "Where the error log goes: `file` (`error_log`: a file, or stderr), `syslog` (the "
             "`syslog_socket`, RFC 3164 lines as syslog(3) writes them, with "
             "`syslog_facility` and `syslog_tag`; the level is the severity) or `json` (one JSON "
             "object a line on stdout, `time`, `level`, `msg`: for containers). The access log "
             "has its own `access_log`."),
    ROW_ENUM(T, "syslog_facility", syslog_facility, 0, facilities, Q("daemon"),
             "The facility of the error log's syslog lines."),
    ROW_STR(T, "syslog_tag", syslog_tag, 0, Q("cachet"),
            "The program name of the error log's syslog lines (`TAG[PID]:`)."),
    ROW_STR(T, "syslog_socket", syslog_socket, CT_ROW_PATH, Q("/dev/log"),
            "The unix datagram socket syslog lines are sent to: journald's and rsyslog's "
            "`/dev/log`, or another daemon's."),
};
static const struct ct_conf_section logs_section = SECTION("logs", T, logs_rows);
#undef T


/* ---- the fleet (issue 17) ------------------------------------------------ */

static const struct ct_conf_enum owner_downs[] = {{"origin", CT_CONF_OWNER_DOWN_ORIGIN},
                                                  {"error", CT_CONF_OWNER_DOWN_ERROR},
                                                  {NULL, 0}};
_Static_assert(sizeof(enum ct_conf_owner_down) == sizeof(int), "enum size");

#define T struct ct_conf_fleet_member
static const struct ct_conf_row fleet_member_rows[] = {
    ROW_STR(T, "name", name, CT_ROW_REQUIRED, NULL,
            "The member's stable name: keys are owned by name, so an address change moves none."),
    ROW_ADDR(T, "address", addr, CT_ROW_REQUIRED, NULL,
             "`IP:PORT` of the member's HTTP listener that peers fetch from; requests carrying "
             "the hop header are trusted from these IPs."),
    ROW_ADDR(T, "admin", admin, CT_ROW_OFF, Q("off"),
             "`IP:PORT` of the member's admin listener: purges and bans are sent there over "
             "HTTP while Redis is down, and always without `redis`; `off` = none."),
    {.name = "tls", .type = CT_ROW_GROUP, .flags = CT_ROW_PRESENCE, FLD(T, tls),
     .sub = &backend_tls_section,
     .help = "Peer fetches to this member over TLS (group, the keys of `backends[].tls`): "
             "`address` is then its https listener; verified against its IP address unless "
             "`server_name` is set. Members learned from Redis are fetched from in cleartext."},
};
static bool member_learned(const void *elem)
{
    return ((const struct ct_conf_fleet_member *)elem)->learned;
}
static const struct ct_conf_section fleet_member_section = {
    .name = "fleet_member", .rows = fleet_member_rows, .nrows = CT_ARRAY_LEN(fleet_member_rows),
    .size = sizeof(T), .hidden = member_learned};
#undef T

/* `cachet -T` reads the file: the members a running node learned from Redis
 * are not its to show (and a dump made by a node would make them the
 * file's), so the list is the file's, and the comment says so. */
static const char *fleet_note(const char *row, const void *base, char *buf, size_t len)
{
    const struct ct_conf_fleet *fl = base;
    if (strcmp(row, "members") != 0 || !fl->self || !fl->redis.host || !fl->learn_members)
        return NULL;
    size_t nl = 0, at = 0;
    for (size_t i = 0; i < fl->nmembers; i++) {
        if (!fl->members[i].learned)
            continue;
        int k = snprintf(buf + at, len - at, "%s%s", nl ? ", " : "", fl->members[i].name);
        if (k > 0 && (size_t)k < len - at)
            at += (size_t)k;
        nl++;
    }
    if (nl == 0)
        return "static members (this file's); members learned from Redis at run time "
               "(learn_members) join them and are not shown";
    char names[200];
    snprintf(names, sizeof(names), "%s", buf);
    snprintf(buf, len, "static members (this file's); %zu learned from Redis at run time, not "
             "shown: %s", nl, names);
    return buf;
}

#define T struct ct_conf_fleet
static const struct ct_conf_row fleet_rows[] = {
    ROW_OPTSTR(T, "self", self, Q("off"),
               "This node's name in `members`, or `off` (no fleet: every miss goes to the "
               "origin)."),
    ROW_LIST(T, "members", members, nmembers, struct ct_conf_fleet_member, fleet_member_section,
             "Every node of the fleet, this one included, the same list on each: `( { name = "
             "\"a\"; address = \"10.0.0.1:80\"; }, ... )`."),
    ROW_STR(T, "hop_header", hop_header, 0, Q("Cachet-Fleet-Hop"),
            "Request field that marks a fetch from a peer; a marked request is never forwarded "
            "again. Trusted only from a member address (or with `token`), else removed."),
    ROW_OPTSTR_F(T, "token", token, CT_ROW_SECRET, Q("off"),
                 "Shared secret sent as the hop header's value; when set, a hop header is "
                 "trusted from any address that carries it (16 to 256 visible ASCII "
                 "characters), or `off`."),
    ROW_DUR(T, "connect_timeout", connect_timeout_ms, 0, 1, 1 * MIN, Q("500ms"),
            "Connecting to the owner; past it this node fetches from the origin."),
    ROW_DUR(T, "response_timeout", response_timeout_ms, 0, 1, 1 * HOUR, Q("30s"),
            "The owner's response head (it may be waiting on the origin), and silence in its "
            "body."),
    ROW_DUR(T, "down_time", down_ms, 0, 1, 1 * HOUR, Q("5s"),
            "A member that failed a peer fetch is not asked for this long: its keys go to their "
            "next owner meanwhile."),
    ROW_ENUM(T, "owner_down", owner_down, 0, owner_downs, Q("origin"),
             "When the owner cannot be reached: `origin` (fail open: fetch from the origin "
             "here, counted) or `error` (fail closed: 502, to spare the origin)."),
    ROW_UINT(T, "load_factor", load_factor, 0, 0, 1000, "0",
             "Bounded-load ownership (Mirrokni et al.; HAProxy's `hash-balance-factor`): a miss "
             "whose owner already has more than `load_factor` % of the mean this worker has in "
             "flight to the other members (and more than `load_floor`) goes to the key's next "
             "node, this one included (then to the origin from here), counted as a spill. `0`: "
             "off, every miss goes to its owner; else 100 to 1000 (docs/fleet.md)."),
    ROW_UINT(T, "load_floor", load_floor, 0, 1, 65536, "8",
             "With `load_factor`: an owner is never passed over while this worker has at most "
             "this many peer fetches in flight to it, so ordinary concurrency keeps the fleet's "
             "one origin fetch per object."),
    ROW_ADDR(T, "redis", redis, CT_ROW_OFF, Q("off"),
             "`IP:PORT` of the Redis server (standalone, >= 5) that carries purge and ban "
             "fan-out and membership (docs/fleet.md), or `off`: the static member list only "
             "(purges then go to the members' `admin` addresses over HTTP)."),
    ROW_OPTSTR(T, "redis_sentinel", redis_sentinel, Q("off"),
               "The master's name at a Sentinel: `redis` is then a Sentinel's `IP:PORT`, "
               "asked for the master at start and after every failover; `off`: `redis` is the "
               "server (or any node of a Cluster)."),
    ROW_TEXTLIST(T, "redis_sentinels", redis_sentinels, nredis_sentinels, "[]",
                "More Sentinels of the same master (`[\"IP:PORT\", ...]`), asked in order "
                "after `redis` when one cannot be reached or knows no master."),
    ROW_OPTSTR_F(T, "redis_password", redis_password, CT_ROW_SECRET, Q("off"),
                 "Password sent with AUTH on every connection to the Redis server (its "
                 "`requirepass`, or `redis_username`'s ACL password; for a Cluster, every "
                 "node's; not sent to a Sentinel), or `off`. Sent in clear: hiredis 0.14 has "
                 "no TLS (docs/fleet.md)."),
    ROW_OPTSTR(T, "redis_username", redis_username, Q("off"),
               "ACL user (Redis 6) that `redis_password` belongs to: AUTH is then `AUTH user "
               "password`; `off`: `AUTH password` (the `default` user, `requirepass`)."),
    ROW_OPTSTR_F(T, "redis_sentinel_password", redis_sentinel_password, CT_ROW_SECRET,
                 Q("off"),
                 "Password sent with AUTH to every Sentinel asked (their `requirepass` in "
                 "sentinel.conf), or `off`. Sent in clear, as `redis_password`."),
    ROW_STR(T, "redis_prefix", redis_prefix, 0, Q("cachet"),
            "Prefix of the Redis keys (`{PREFIX}:purges`, `{PREFIX}:members`): one per fleet."),
    ROW_DUR(T, "register_ttl", register_ttl_ms, 0, 1 * SEC, 1 * HOUR, Q("10s"),
            "A member's registration in Redis lives this long and is refreshed every third of "
            "it; a member whose entry expired is not live (its keys go to the others)."),
    ROW_BOOL(T, "learn_members", learn_members, "true",
             "With `redis`: a node registered there that `members` does not list joins the "
             "fleet (its name, peer and admin addresses as it registered them) and leaves when "
             "its registration expires; `false`: only `members` count."),
    ROW_DUR(T, "mirror_ttl", mirror_ttl_ms, 0, 0, 1 * HOUR, Q("2s"),
            "How long a node that is not a key's owner keeps the owner's answer fresh (hot-key "
            "mirroring): its copy's freshness is capped at this, whatever the answer's own "
            "lifetime, so a purge that misses it is outlived by seconds, not by the TTL. Whole "
            "seconds; `0s`: keep no copy (every request there asks the owner)."),
    ROW_UINT(T, "purge_queue", purge_queue, 0, 0, 65536, "4096",
             "Clients' PURGEs applied on a worker and waiting for the main thread to send them "
             "to the other nodes; one that finds the queue full is answered 503 (applied here, "
             "not sent on; docs/fleet.md). `0` queues none (every client PURGE is answered so)."),
    ROW_UINT(T, "fanout_queue", fanout_queue, 0, 0, 65536, "4096",
             "Per member, the purges and bans sent over HTTP (no Redis, or Redis down) that it "
             "has not acknowledged yet: kept in order and sent again (backoff 1 s doubling to "
             "30 s) until it answers; past this the oldest is dropped, counted and logged "
             "(docs/fleet.md). `0` keeps none: each is sent once, lost if that fails."),
};
static const struct ct_conf_section fleet_section = {
    .name = "fleet", .rows = fleet_rows, .nrows = CT_ARRAY_LEN(fleet_rows), .size = sizeof(T),
    .note = fleet_note};
#undef T

/* ---- backend groups, sites, routes (issue 15) ------------------------------ */

static const struct ct_conf_enum balances[] = {{"round_robin", CT_CONF_BALANCE_RR},
                                               {"least_conn", CT_CONF_BALANCE_LEAST_CONN},
                                               {"hash", CT_CONF_BALANCE_HASH},
                                               {NULL, 0}};
static const struct ct_conf_enum tris[] = {{"inherit", CT_CONF_TRI_INHERIT},
                                           {"honour", CT_CONF_TRI_ON},
                                           {"ignore", CT_CONF_TRI_OFF},
                                           {NULL, 0}};
static const struct ct_conf_enum route_queries[] = {{"inherit", CT_CONF_QUERY_INHERIT},
                                                    {"keep", CT_CONF_QUERY_KEEP},
                                                    {"drop", CT_CONF_QUERY_DROP},
                                                    {"sort", CT_CONF_QUERY_SORT},
                                                    {NULL, 0}};
_Static_assert(sizeof(enum ct_conf_balance) == sizeof(int), "enum size");

#define T struct ct_conf_group
static const struct ct_conf_row group_rows[] = {
    ROW_STR(T, "name", name, CT_ROW_REQUIRED, NULL,
            "The group's name, used by `sites[].backend_group` and routes; `default` is the "
            "top-level `backends`."),
    ROW_ENUM(T, "balance", balance, 0, balances, Q("round_robin"),
             "`round_robin` (smooth, by weight), `least_conn` (fewest requests in flight per "
             "weight) or `hash` (bounded-load consistent hashing on `hash_on`)."),
    ROW_STR(T, "hash_on", hash_on_text, 0, Q("key"),
            "`balance = hash`: what is hashed: `key` (the cache key), `client` (the client "
            "address), `header:NAME` or `cookie:NAME` (requests without it hash on the key)."),
    ROW_UINT(T, "hash_balance_factor", hash_balance_factor, 0, 100, 1000, "125",
             "`balance = hash`: a backend takes at most this percentage of the mean load in "
             "flight before its keys go to the next one (HAProxy's `hash-balance-factor`)."),
    ROW_DUR(T, "slow_start", slow_start_ms, CT_ROW_OFF, 0, 1 * HOUR, Q("off"),
            "A backend that comes (back) up gets its weight ramped from almost nothing to full "
            "over this time, so a cold origin is not sent a full share at once; `off` = none."),
    ROW_LIST(T, "backends", backends, nbackends, struct ct_conf_backend, ct_conf_backend_section,
             "The group's origins, with the settings of the top-level `backends`."),
};
static const struct ct_conf_section group_section = SECTION("backend_group", T, group_rows);
#undef T

#define T struct ct_conf_match
static const struct ct_conf_row match_rows[] = {
    ROW_OPTSTR(T, "path", path, Q("off"), "The path (before any `?`) equals this exactly."),
    ROW_OPTSTR(T, "path_prefix", path_prefix, Q("off"), "The path starts with this."),
    ROW_OPTSTR(T, "path_regex", path_regex, Q("off"),
               "The path matches this PCRE2 regular expression (unanchored: write `^` and `$` "
               "to anchor it), JIT-compiled at load."),
    ROW_TEXTLIST(T, "methods", methods, nmethods, "[]",
                 "The method is one of these (`[\"GET\", \"HEAD\"]`); `[]` = any."),
    ROW_TEXTLIST(T, "headers", headers, nheaders, "[]",
                 "Every one holds: `\"Name\"` (present) or `\"Name: value\"` (a field of that "
                 "name has exactly that value)."),
    ROW_TEXTLIST(T, "cookies", cookies, ncookies, "[]",
                 "Every one holds: `\"name\"` (the cookie is sent) or `\"name=value\"`."),
    ROW_TEXTLIST(T, "query", query, nquery, "[]",
                 "Every one holds: `\"name\"` (the query has the parameter) or "
                 "`\"name=value\"`."),
    ROW_CIDRLIST(T, "client", client, nclient, "[]",
                 "The client address is inside one of these prefixes; `[]` = any."),
};
static const struct ct_conf_section match_section = SECTION("match", T, match_rows);
#undef T

#define T struct ct_conf_route_cache
static const struct ct_conf_row route_cache_rows[] = {
    ROW_BOOL(T, "pass", pass, "false",
             "Neither look up nor store: every request goes to the origin (Varnish's "
             "`return (pass)`)."),
    ROW_DUR_DEP(T, "ttl", ttl_ms, CT_ROW_INHERIT, 0, 365 * DAY, Q("inherit"),
                "Freshness forced on responses with a status in `ttl_statuses`, whatever their "
                "Cache-Control says (nginx's `proxy_cache_valid` with `proxy_ignore_headers`, "
                "Varnish's `beresp.ttl`); `inherit` = the response's own.",
                "RFC 9111 §4.2.1 (freshness from the response)"),
    ROW_TEXTLIST(T, "ttl_statuses", ttl_statuses, nttl_statuses,
                 "[" Q("200") ", " Q("203") ", " Q("204") ", " Q("300") ", " Q("301") ", "
                 Q("308") ", " Q("404") ", " Q("410") "]",
                 "Statuses `ttl` applies to."),
    ROW_DUR_DEP(T, "min_ttl", min_ttl_ms, CT_ROW_INHERIT, 0, 365 * DAY, Q("inherit"),
                "Storable responses are fresh at least this long; `inherit` = no floor.",
                "RFC 9111 §4.2.1 (freshness from the response)"),
    ROW_DUR(T, "max_ttl", max_ttl_ms, CT_ROW_INHERIT, 0, 365 * DAY, Q("inherit"),
            "Freshness is capped at this; `inherit` = no cap."),
    ROW_DUR_DEP(T, "grace", grace_ms, CT_ROW_INHERIT, 0, 365 * DAY, Q("inherit"),
                "`cache.grace` for this route; `inherit` = the cache section's.",
                "RFC 9111 §4.2.4 (a cache MUST NOT generate a stale response unless permitted)"),
    ROW_DUR(T, "stale_if_error", stale_if_error_ms, CT_ROW_INHERIT, 0, 365 * DAY, Q("inherit"),
            "`cache.stale_if_error` for this route; `inherit` = the cache section's."),
    ROW_DUR(T, "keep", keep_ms, CT_ROW_INHERIT, 0, 365 * DAY, Q("inherit"),
            "`cache.keep` for this route; `inherit` = the cache section's."),
    ROW_ENUM(T, "client_cache_control", honour_client_cc, 0, tris, Q("inherit"),
             "`honour` or `ignore` request Cache-Control on this route; `inherit` = the "
             "listener's `honour_client_cache_control`."),
    ROW_ENUM(T, "key_query", key_query, 0, route_queries, Q("inherit"),
             "`keep`, `drop` or `sort` the query in the key; `inherit` = `cache.key_query`."),
    ROW_TEXTLIST(T, "key_drop_params", key_drop_params, nkey_drop_params, "[]",
                 "Query parameters left out of the key, by name or with a trailing `*` "
                 "(`[\"utm_*\", \"gclid\", \"fbclid\"]`); the origin still gets them."),
    ROW_OPTSTR(T, "key_header", key_header, Q("off"),
               "Request header whose value joins the key on this route; `off` = "
               "`cache.key_header`."),
    ROW_OPTSTR(T, "key_cookie", key_cookie, Q("off"),
               "Cookie whose value joins the key on this route (the first pair of that "
               "name in `Cookie`; absent and empty differ; an admin purge by URL takes every "
               "value); `off` = none."),
};
static const struct ct_conf_section route_cache_section =
    SECTION("route_cache", T, route_cache_rows);
#undef T

#define T struct ct_conf_redirect
static const struct ct_conf_row redirect_rows[] = {
    ROW_UINT(T, "status", status, 0, 0, 308, "0",
             "301, 302, 303, 307 or 308 answers every matching request with a redirect; 0 = "
             "none."),
    ROW_STR(T, "location", location, 0, Q(""),
            "The Location, with variables: `$scheme`, `$host`, `$path`, `$query` (with its "
            "`?`, or empty), `$uri` (path and query), `$client`, `$request_id`, `$site`, "
            "`$route`, `$$` for a `$`."),
};
static const struct ct_conf_section redirect_section = SECTION("redirect", T, redirect_rows);
#undef T

#define T struct ct_conf_respond
static const struct ct_conf_row respond_rows[] = {
    ROW_UINT(T, "status", status, 0, 0, 599, "0",
             "200 to 599 answers every matching request itself with this status; 0 = none."),
    ROW_STR(T, "body", body, 0, Q(""), "The body of that answer (variables as in `redirect`)."),
    ROW_STR(T, "content_type", content_type, 0, Q("text/plain"), "Its Content-Type."),
};
static const struct ct_conf_section respond_section = SECTION("respond", T, respond_rows);
#undef T

#define T struct ct_conf_limit
static const struct ct_conf_row limit_rows[] = {
    ROW_UINT(T, "rate", rate, 0, 0, 1000000, "0",
             "Requests per `period` per client address (a token bucket); past it 429 with "
             "Retry-After; 0 = no limit."),
    ROW_DUR(T, "period", period_ms, 0, 1, 1 * HOUR, Q("1s"),
            "The period `rate` counts over: `rate = 30; period = \"1m\";` is 30 a minute."),
    ROW_UINT(T, "burst", burst, 0, 0, 1000000, "0",
             "Requests a client may make at once before `rate` paces it; 0 = `rate` (at least "
             "1)."),
    ROW_UINT(T, "concurrent", concurrent, 0, 0, 1000000, "0",
             "Requests in flight at once per client address; past it 429; 0 = no limit."),
};
static const struct ct_conf_section limit_section = SECTION("limit", T, limit_rows);
#undef T

#define T struct ct_conf_route
static const struct ct_conf_row route_rows[] = {
    ROW_STR(T, "name", name, 0, Q(""),
            "Name in the access log and metrics; empty = `SITE/INDEX`."),
    ROW_GROUP(T, "match", match, match_section,
              "What the route matches (group); every condition given must hold, an empty "
              "group matches every request."),
    ROW_OPTSTR(T, "backend_group", backend_group, Q("off"),
               "The backend group that serves it; `off` = the site's."),
    ROW_GROUP(T, "cache", cache, route_cache_section, "Cache policy overrides (group)."),
    ROW_BOOL(T, "strip_cookie", strip_cookie, "false",
             "Leave Cookie off the request to the origin (static content)."),
    ROW_BOOL_DEP(T, "strip_set_cookie", strip_set_cookie, "false",
                 "Leave Set-Cookie off the response (which then may be stored).",
                 "RFC 9111 §3 (storing what the origin sent as it sent it)"),
    ROW_TEXTLIST(T, "request_headers", request_headers, nrequest_headers, "[]",
                 "Rules on the request to the origin, in order: `\"set Name: value\"`, "
                 "`\"append Name: value\"`, `\"remove Name\"` (variables as in `redirect`)."),
    ROW_TEXTLIST(T, "response_headers", response_headers, nresponse_headers, "[]",
                 "The same rules on the response to the client."),
    ROW_GROUP(T, "redirect", redirect, redirect_section, "Answer with a redirect (group)."),
    ROW_GROUP(T, "respond", respond, respond_section, "Answer with a fixed response (group)."),
    ROW_CIDRLIST(T, "allow", allow, nallow, "[]",
                 "When not empty, only clients inside these prefixes are served; others get "
                 "403."),
    ROW_CIDRLIST(T, "deny", deny, ndeny, "[]", "Clients inside these prefixes get 403."),
    ROW_TEXTLIST(T, "require_headers", require_headers, nrequire_headers, "[]",
                 "Every `\"Name: value\"` must be in the request, else 403."),
    ROW_GROUP(T, "limit", limit, limit_section,
              "Per-client limits of this route (group), besides its site's."),
};
static const struct ct_conf_section route_section = SECTION("route", T, route_rows);
#undef T

#define T struct ct_conf_site
static const struct ct_conf_row site_rows[] = {
    ROW_STR(T, "name", name, CT_ROW_REQUIRED, NULL,
            "The site's name, in the access log and metrics."),
    ROW_STRLIST(T, "hosts", hosts, nhosts, "[]",
                "Host names served: exact (`example.com`) or wildcard (`*.example.com`, any "
                "depth below it); compared lower-case, without the listener's default port."),
    ROW_BOOL(T, "default", is_default, "false",
             "Requests whose host matches no site come here; at most one site (without one, "
             "they get the group `default` and the cache section's policy)."),
    ROW_OPTSTR(T, "backend_group", backend_group, Q("off"),
               "Group of routes that name none; `off` = `default`."),
    ROW_GROUP(T, "limit", limit, limit_section,
              "Per-client limits of every request of the site (group)."),
    ROW_LIST(T, "routes", routes, nroutes, struct ct_conf_route, route_section,
             "Routes tried in order, the first match decides; no match = the site's group "
             "and the cache section's policy."),
};
static const struct ct_conf_section site_section = SECTION("site", T, site_rows);
#undef T

#define T struct ct_conf
static const struct ct_conf_row root_rows[] = {
    ROW_UINT(T, "workers", workers, CT_ROW_AUTO, 1, 1024, Q("auto"),
             "Worker threads, each with its own event loop and SO_REUSEPORT sockets; `auto` = "
             "one per core."),
    ROW_OPTSTR_F(T, "pid_file", pid_file, CT_ROW_PATH, Q("off"),
               "File cachet writes its process id to once its listeners are bound, and removes "
               "at exit, for `kill -USR1 $(cat FILE)` (log rotation) and `kill -HUP` (reload); "
               "relative to the configuration file's folder. Read at start only."),
    ROW_LIST(T, "listen", listeners, nlisteners, struct ct_conf_listener, ct_conf_listener_section,
             "Listeners: `( { kind = \"https\"; address = \"127.0.0.1:8443\"; tls = { ... }; }, "
             "... )`."),
    ROW_LIST(T, "backends", backends, nbackends, struct ct_conf_backend, ct_conf_backend_section,
             "Origins, used round-robin by weight: `( { address = \"127.0.0.1:8081\"; }, ... )`; "
             "the backend group `default`."),
    ROW_LIST(T, "backend_groups", groups, ngroups, struct ct_conf_group, group_section,
             "More named groups of backends: `( { name = \"static\"; balance = \"hash\"; "
             "backends = ( ... ); }, ... )`."),
    ROW_LIST(T, "sites", sites, nsites, struct ct_conf_site, site_section,
             "Sites chosen by the request's host, each with ordered routes: `( { name = "
             "\"www\"; hosts = [\"example.com\"]; routes = ( { match = { path_prefix = "
             "\"/static/\"; }; ... } ); } )`."),
    ROW_CIDRLIST(T, "trusted_proxies", trusted_proxies, ntrusted_proxies, "[]",
                 "Proxies in front of cachet whose forwarding field (`real_ip_header`) names the "
                 "client: read right to left past every trusted address; the client address "
                 "is then used by logs, routes (client, allow, deny, limits) and hashing."),
    ROW_ENUM(T, "real_ip_header", real_ip_header, 0, real_ips, Q("X-Forwarded-For"),
             "`X-Forwarded-For` or `Forwarded` (RFC 7239 `for=`)."),
    ROW_GROUP(T, "cache", cache, cache_section, "The response cache (group)."),
    ROW_GROUP(T, "compression", compression, compression_section,
              "Content codings: gzip, br and zstd (group)."),
    ROW_GROUP(T, "limits", limits, limits_section, "Client-side limits and timeouts (group)."),
    ROW_GROUP(T, "admin", admin, admin_section, "The admin listener (group)."),
    ROW_GROUP(T, "logs", logs, logs_section, "Error and access logs (group)."),
    ROW_GROUP(T, "fleet", fleet, fleet_section,
              "Several cachet nodes as one cache: owners, peer fetch (group; docs/fleet.md)."),
};
#undef T
const struct ct_conf_section ct_conf_root_section = SECTION("", struct ct_conf, root_rows);

/* ---- generic walks ------------------------------------------------------ */

static void default_row(const struct ct_conf_row *r, void *base)
{
    char text[1024];
    snprintf(text, sizeof(text), "v = %s;", r->def);
    config_t cfg;
    config_init(&cfg);
    int ok = config_read_string(&cfg, text);
    CT_ASSERT(ok == CONFIG_TRUE); /* a default that doesn't parse is our bug */
    struct ct_conf_errors errs;
    struct ct_conf_locs locs = {0};
    struct ct_conf_loadctx lc = {&errs, &locs, "<default>", false, NULL};
    ct_conf_errors_init(&errs);
    int rc = ct_conf_row_parse(&lc, r, config_lookup(&cfg, "v"), base, r->name);
    if (rc != CT_OK)
        ct_panic(__FILE__, __LINE__, "bad default: %s", errs.msg[0]);
    ct_conf_locs_free(&locs);
    config_destroy(&cfg);
}

void ct_conf_section_defaults(const struct ct_conf_section *sec, void *base)
{
    for (size_t i = 0; i < sec->nrows; i++) {
        const struct ct_conf_row *r = &sec->rows[i];
        if (r->type == CT_ROW_GROUP)
            ct_conf_section_defaults(r->sub, (char *)base + r->off);
        else if (r->def)
            default_row(r, base);
    }
}

void ct_conf_section_free(const struct ct_conf_section *sec, void *base)
{
    for (size_t i = 0; i < sec->nrows; i++) {
        const struct ct_conf_row *r = &sec->rows[i];
        void *f = (char *)base + r->off;
        size_t *n = (size_t *)((char *)base + r->off2);
        switch (r->type) {
        case CT_ROW_STR: case CT_ROW_OPTSTR: case CT_ROW_HOSTPORT:
            CT_FREE((char **)f);
            break;
        case CT_ROW_ADDR:
            ct_conf_addr_free(f);
            break;
        case CT_ROW_STRLIST:
            for (size_t k = 0; k < *n; k++)
                free((*(char ***)f)[k]);
            CT_FREE((char ***)f);
            *n = 0;
            break;
        case CT_ROW_CIDRLIST:
            CT_FREE((struct ct_conf_cidr **)f);
            *n = 0;
            break;
        case CT_ROW_GROUP:
            ct_conf_section_free(r->sub, f);
            break;
        case CT_ROW_LIST:
            for (size_t k = 0; k < *n; k++)
                ct_conf_section_free(r->sub, *(char **)f + k * r->elem_size);
            CT_FREE((void **)f);
            *n = 0;
            break;
        default:
            break;
        }
    }
}

static char *dup_or_null(const char *s)
{
    return s ? ct_xstrdup(s) : NULL;
}

static void copy_row(const struct ct_conf_row *r, void *dst, const void *src)
{
    void *df = (char *)dst + r->off;
    const void *sf = (const char *)src + r->off;
    size_t n = *(const size_t *)((const char *)src + r->off2);
    switch (r->type) {
    case CT_ROW_STR: case CT_ROW_OPTSTR: case CT_ROW_HOSTPORT:
        *(char **)df = dup_or_null(*(char *const *)sf);
        break;
    case CT_ROW_ADDR:
        ((struct ct_conf_addr *)df)->host = dup_or_null(((const struct ct_conf_addr *)sf)->host);
        break;
    case CT_ROW_STRLIST: {
        char **v = n ? ct_xcalloc(n, sizeof(char *)) : NULL;
        for (size_t k = 0; k < n; k++)
            v[k] = ct_xstrdup((*(char **const *)sf)[k]);
        *(char ***)df = v;
        break;
    }
    case CT_ROW_CIDRLIST: {
        struct ct_conf_cidr *v = n ? ct_xcalloc(n, sizeof(*v)) : NULL;
        if (n)
            memcpy(v, *(struct ct_conf_cidr *const *)sf, n * sizeof(*v));
        *(struct ct_conf_cidr **)df = v;
        break;
    }
    case CT_ROW_GROUP:
        ct_conf_section_copy(r->sub, df, sf);
        break;
    case CT_ROW_LIST: {
        char *v = n ? ct_xcalloc(n, r->elem_size) : NULL;
        for (size_t k = 0; k < n; k++)
            ct_conf_section_copy(r->sub, v + k * r->elem_size,
                                 *(char *const *)sf + k * r->elem_size);
        *(char **)df = v;
        break;
    }
    default:
        break; /* scalars came with the memcpy */
    }
}

void ct_conf_section_copy(const struct ct_conf_section *sec, void *dst, const void *src)
{
    memcpy(dst, src, sec->size);
    for (size_t i = 0; i < sec->nrows; i++)
        copy_row(&sec->rows[i], dst, src);
}

const char *ct_conf_enum_name(const struct ct_conf_enum *e, int value)
{
    for (; e->name; e++)
        if (e->value == value)
            return e->name;
    return "?";
}

/* ---- the reference -------------------------------------------------------- */

const char *ct_conf_row_type_name(const struct ct_conf_row *r)
{
    switch (r->type) {
    case CT_ROW_BOOL: return "bool";
    case CT_ROW_UINT: return r->flags & CT_ROW_AUTO ? "integer or \"auto\"" : "integer";
    case CT_ROW_SIZE: return "size";
    case CT_ROW_DUR:
        return r->flags & CT_ROW_OFF       ? "duration or \"off\""
               : r->flags & CT_ROW_AUTO    ? "duration or \"auto\""
               : r->flags & CT_ROW_INHERIT ? "duration or \"inherit\""
                                           : "duration";
    case CT_ROW_FRAC: return "number";
    case CT_ROW_STR: return "string";
    case CT_ROW_OPTSTR: return "string or \"off\"";
    case CT_ROW_ENUM: return "enum";
    case CT_ROW_ADDR: return r->flags & CT_ROW_OFF ? "IP:PORT or \"off\"" : "IP:PORT";
    case CT_ROW_HOSTPORT: return "HOST:PORT";
    case CT_ROW_STRLIST: return "array of strings";
    case CT_ROW_CIDRLIST: return "array of prefixes";
    case CT_ROW_GROUP: return "group";
    case CT_ROW_LIST: return "list of groups";
    }
    return "?";
}

/* ---- why each default (the reference's "Why this default") ---------------
 *
 * Beside the schema so a default and its reason change together; keyed by the
 * reference's key. tests/unit/test_conf_dump.c checks that every row with a
 * default has one and that none names a key the schema lacks. */
static const struct {
    const char *key, *why;
} reasons[] = {
    {"workers", "one event loop per core, as nginx's `worker_processes auto` and HAProxy's "
                "`nbthread`."},
    {"pid_file", "none: under systemd the unit knows the process (`$MAINPID`), and a file "
                 "needs a writable place chosen by the packager (nginx's is a build option)."},
    {"listen[].redirect_to_https", "a listener serves what it is asked; redirecting is a site's "
                                   "policy (nginx needs a `return 301` too)."},
    {"listen[].redirect_port", "the port clients would use for HTTPS here."},
    {"listen[].h2c", "prior knowledge is for clients told out of band (a load balancer, "
                     "gRPC); browsers never speak HTTP/2 in clear text, and nginx, HAProxy and "
                     "h2o serve h2c only when asked."},
    {"listen[].honour_client_cache_control",
     "RFC 9111 §5.2.1 defines what the client's directives mean for a cache; nginx (without "
     "`proxy_cache_bypass`) and Varnish's builtin VCL ignore them, which is the opt-in here."},
    {"listen[].tls.self_signed", "a listener in a file names its certificate; only the embedded "
                                 "default, meant for trying cachet out, makes one."},
    {"listen[].tls.certificates[].server_names", "a single certificate serves every name."},
    {"listen[].tls.certificates[].default", "the first certificate, as nginx takes its first "
                                            "server block."},
    {"listen[].tls.min_version", "TLS 1.0 and 1.1 are deprecated (RFC 8996); Mozilla's "
                                 "intermediate profile, nginx since 1.23 and HAProxy start at "
                                 "1.2."},
    {"listen[].tls.ciphers", "Mozilla's intermediate profile: forward secrecy and AEAD only, "
                             "every client of the last decade."},
    {"listen[].tls.ciphersuites", "OpenSSL's TLS 1.3 default (RFC 8446 §9.1 requires "
                                  "TLS_AES_128_GCM_SHA256)."},
    {"listen[].tls.groups", "what every TLS 1.3 client offers; X25519 first as the fastest "
                            "(Mozilla's profile)."},
    {"listen[].tls.session_tickets", "a resumed handshake costs about 3/4 of a full one here "
                                     "(bench/README.md); nginx and HAProxy issue tickets by "
                                     "default."},
    {"listen[].tls.ticket_key_rotation",
     "a stolen ticket key decrypts the sessions it protected, so keys live an hour (the "
     "previous one still decrypts), as Mozilla advises; nginx never rotates without a reload."},
    {"listen[].tls.session_cache", "resumption for clients that do not take tickets."},
    {"listen[].tls.session_cache_size", "about 5 MiB per listener; nginx's `shared:SSL:10m` "
                                        "holds about 40000."},
    {"listen[].tls.handshake_timeout", "ten seconds cover a slow mobile round trip several "
                                       "times over and stop idle handshakes holding sockets "
                                       "(HAProxy's `timeout client` applies to them too)."},
    {"listen[].tls.http2", "every browser prefers HTTP/2 on HTTPS, and nginx (`http2 on`), "
                           "HAProxy (`alpn h2,http/1.1`), Caddy and h2o offer it; HTTP/1.1 "
                           "stays for whoever does not ask for h2."},
    {"listen[].tls.ktls", "kernel TLS needs the kernel's `tls` module and helps only with "
                          "sendfile of large bodies; nginx's KTLS is opt-in too."},
    {"listen[].tls.client_ca", "client certificates are a site's policy."},
    {"listen[].tls.client_verify", "client certificates are a site's policy."},
    {"listen[].tls.client_subject_header", "nothing is added to requests unless asked."},
    {"listen[].tls.acme.directory", "a certificate is ordered only from a CA the operator names."},
    {"listen[].tls.acme.email", "RFC 8555 §7.3 makes the contact optional; nothing is sent unless given."},
    {"listen[].tls.acme.names", "the names the sites already claim are the ones clients will ask for."},
    {"listen[].tls.acme.challenges", "both need no DNS access; TLS-ALPN-01 first since it needs only this listener (port 443), HTTP-01 as Caddy and certbot fall back to it."},
    {"listen[].tls.acme.storage", "the FHS place for a daemon's state (/var/lib), so keys and certificates survive restarts and no new order is made while they are valid."},
    {"listen[].tls.acme.renew_before", "a third of the lifetime left, as certmagic and certbot renew (30 of 90 days), leaves room for days of CA outage."},
    {"listen[].tls.acme.key_type", "P-256 is what every client accepts and the fastest handshake here; ES256 is the JWS algorithm every ACME CA takes."},
    {"listen[].tls.acme.directory_ca", "a public CA's directory is verified against the system's store like any HTTPS server."},
    {"backends[].name", "the address names the backend well enough."},
    {"backends[].weight", "equal shares, as nginx's `weight=1`."},
    {"backends[].connect_timeout",
     "an origin on the same network connects in milliseconds, so 5 s means it is down (HAProxy's "
     "examples use `timeout connect 5s`; nginx's 60 s holds a client a minute)."},
    {"backends[].response_header_timeout",
     "long enough for a slow page, short enough that a hung origin answers 504 in half of "
     "nginx's `proxy_read_timeout` and Varnish's `first_byte_timeout` (60 s)."},
    {"backends[].read_timeout", "as response_header_timeout: half of nginx's "
                                "`proxy_read_timeout` and Varnish's `between_bytes_timeout`."},
    {"backends[].pool_idle_timeout", "nginx's upstream `keepalive_timeout` (60 s); a request on a "
                                     "connection the origin closed meanwhile is retried once."},
    {"backends[].pool_max_idle", "see the meaning: a pool smaller than a burst reconnects after "
                                 "every burst."},
    {"backends[].max_fails", "three in a row, not nginx's one, so a single reset does not take a "
                             "backend out."},
    {"backends[].passive_fail_on",
     "the origin failing as a whole, nginx's `proxy_next_upstream error timeout` (what its "
     "`max_fails` counts): a malformed or 5xx answer is one URL's problem and takes no backend "
     "out unless listed (nginx's `invalid_header`, `http_500`...)."},
    {"backends[].fail_timeout", "nginx's `fail_timeout` (10 s)."},
    {"backends[].health_check.enabled", "probing needs a path the origin answers cheaply; passive "
                                        "health works without one (nginx open source has only "
                                        "passive checks)."},
    {"backends[].health_check.interval", "nginx Plus' `health_check interval=5`."},
    {"backends[].health_check.timeout", "a probe slower than this would be a slow page for a "
                                        "client too."},
    {"backends[].health_check.path", "every origin answers `/`; set a cheap health URL."},
    {"backends[].health_check.expect_status", "a healthy `/` answers 200."},
    {"backends[].health_check.rise", "HAProxy's `rise 2`: one good probe could be luck."},
    {"backends[].health_check.fall", "HAProxy's `fall 3`: one lost probe is not an outage."},
    {"backends[].tls.verify", "HAProxy's `ssl-server-verify required`: an unverified origin can be "
                              "anyone on the path; nginx's `proxy_ssl_verify off` is its known "
                              "foot-gun."},
    {"backends[].tls.ca", "the CAs the system trusts are what a browser asking the origin "
                          "directly would trust (HAProxy's `@system-ca`)."},
    {"backends[].tls.server_name", "the name the backend is configured by is the name its "
                                   "certificate is for; SNI-routed origins (CDNs, cloud load "
                                   "balancers) need it sent (RFC 6066 §3 forbids it for IP "
                                   "literals)."},
    {"backends[].tls.cert", "few origins ask for a client certificate."},
    {"backends[].tls.key", "goes with `cert`."},
    {"backends[].tls.min_version", "TLS 1.0 and 1.1 are deprecated (RFC 8996); every origin of "
                                   "today speaks 1.2."},
    {"backends[].tls.ciphers", "the listener's list (Mozilla intermediate): what a modern "
                               "origin accepts."},
    {"backends[].tls.ciphersuites", "OpenSSL's TLS 1.3 defaults, Mozilla's too."},
    {"backends[].tls.alpn", "cachet speaks HTTP/1.1 to origins; saying so keeps an origin that "
                            "prefers h2 from choosing it."},
    {"backends[].tls.session_reuse", "a resumed handshake skips the certificate exchange and "
                                     "its verification (nginx `proxy_ssl_session_reuse on`)."},
    {"backends[].tls.handshake_timeout", "as connect_timeout: a handshake on a live origin takes "
                                         "milliseconds."},
    {"cache.size", "a demonstration size; set it to the memory the cache may use (Varnish's "
                   "default storage is 100 MB)."},
    {"cache.max_object_size", "1/16 of the cache (of whatever `cache.size` says), so one "
                              "object cannot flush it (HAProxy caps objects at half of its "
                              "cache)."},
    {"cache.default_ttl", "RFC 9111 §4.2.2 gives freshness only from the response or a "
                          "Last-Modified heuristic; inventing it serves content the origin never "
                          "allowed to be reused."},
    {"cache.heuristic_fraction", "the 10 % RFC 9111 §4.2.2 suggests, as Squid and ATS use."},
    {"cache.heuristic_max", "ATS's `heuristic_max_lifetime` (one day): a file unchanged for a "
                            "year is still re-checked daily."},
    {"cache.grace", "RFC 9111 §4.2.4: stale responses need the origin's or the client's "
                    "permission, which `stale-while-revalidate`, `stale-if-error` and "
                    "`max-stale` give."},
    {"cache.keep", "a 304 costs the origin a fraction of a full answer (RFC 9111 §4.3); a week "
                   "covers weekly-changing content, and eviction reclaims kept objects before "
                   "fresh ones."},
    {"cache.stale_if_error", "serving stale on errors needs permission (RFC 5861 "
                             "`stale-if-error`, honoured by default); nginx's "
                             "`proxy_cache_use_stale` is off by default too."},
    {"cache.store_set_cookie", "Set-Cookie is nearly always per user: nginx and Varnish's builtin "
                               "VCL do not store such responses either."},
    {"cache.key_query", "the query is part of the target URI, which is the key (RFC 9111 §2)."},
    {"cache.key_header", "RFC 9111 keys on the URI; Vary adds request fields where the origin "
                         "asks."},
    {"cache.targeted_cache_control", "RFC 9213 targeted fields are named per cache: this one is "
                                     "cachet's."},
    {"cache.hit_for_miss", "Varnish's hit-for-miss lifetime (120 s): long enough to keep "
                           "uncacheable URLs out of the waiting list, short enough to notice "
                           "when they become cacheable."},
    {"cache.waiter_timeout", "as long as the fetch it waits for may take "
                             "(response_header_timeout); nginx's `proxy_cache_lock_timeout` is 5 "
                             "s, Varnish waits without a limit."},
    {"cache.eviction", "SIEVE is measured (bench_cache) and recency-only like every peer's; "
                       "`cost` becomes the default only once the bench's trace replay shows it "
                       "never loses by more than noise on a recency-only trace (issue 46)."},
    {"cache.waiter_timeout_action", "a slow origin is not sent every waiter's request at once "
                                    "(nginx's `fetch` behaviour is the alternative)."},
    {"cache.purge_allow", "purging is an operator's action: loopback only."},
    {"cache.tag_headers", "the fields Fastly (`Surrogate-Key`), Cloudflare (`Cache-Tag`) and "
                          "Varnish's xkey read, so an origin written for any of them works."},
    {"cache.max_tags", "Akamai's limit (128 per object); the index costs 32 bytes per tag per "
                       "object."},
    {"cache.max_tag_length", "Fastly's limit (1 KiB per key)."},
    {"cache.expose_tags", "tags describe the origin's data model, and Fastly and Cloudflare strip "
                          "them before delivery too."},
    {"limits.max_request_line", "RFC 9112 §3 recommends supporting at least 8000 octets; nginx's "
                                "`large_client_header_buffers` is 8k."},
    {"limits.max_header_bytes", "twice nginx's 4 x 8k; HAProxy's whole buffer is 16 KiB."},
    {"limits.max_header_count", "Apache's `LimitRequestFields` (100)."},
    {"limits.http2.max_concurrent_streams", "RFC 9113 §6.5.2 recommends at least 100; nginx's "
                                            "`http2_max_concurrent_streams` is 128, HAProxy's 100."},
    {"limits.http2.stream_window", "the protocol's initial 65535: an upload costs at most 64 KiB "
                                   "of our memory until the origin reads it."},
    {"limits.http2.connection_window", "16 streams' windows, so one upload never holds up the "
                                       "connection's others."},
    {"limits.http2.max_frame_size", "the protocol's initial 16 KiB (RFC 9113 §4.2); larger frames "
                                    "buy nothing for requests."},
    {"limits.http2.max_queued_acks", "nghttp2's own default (`max_outbound_ack`)."},
    {"limits.http2.reset_burst", "well above what a browser resets when a page navigates away, "
                                 "far below a rapid-reset attack's thousands per second."},
    {"limits.http2.reset_rate", "nginx counts resets against 2 x max streams per read; a steady "
                                "50 per second is generous for real clients."},
    {"limits.http2.empty_frames_burst", "no real client sends empty frames in numbers."},
    {"limits.http2.empty_frames_rate", "as nghttp2 and nginx bound empty frames."},
    {"limits.http2.early_response_discard", "nginx's `lingering_close` reads for 5 s; a 1 MiB bound "
                                            "lets most clients finish an upload they started."},
    {"limits.request_buffer", "nginx's proxy_request_buffering is on by default (in memory up to "
                              "client_body_buffer_size, 16 KiB, then a file); 64 KiB in memory "
                              "holds the usual form or API call whole, so the origin never sees "
                              "a malformed one and a slow uploader holds no origin connection; "
                              "it costs at most 64 KiB per upload in flight (over HTTP/2 plus "
                              "the stream window the engine held anyway) and 0.8k instructions "
                              "per small POST, 4% (bench/micro/postcost.sh, docs/h2.md)."},
    {"limits.max_body", "bodies over limits.request_buffer are streamed to the origin, so "
                        "their size costs "
                        "no memory here; the origin knows its limits (nginx's 1 MiB exists "
                        "because it buffers)."},
    {"limits.client_header_timeout", "a request head is one packet for a real client; 10 s "
                                     "stops slowloris sooner than nginx's 60 s."},
    {"limits.client_body_timeout",
     "nginx's `client_body_timeout` (60 s) bounds each read only, and HAProxy's `timeout "
     "http-request` the head (the body only with `http-buffer-request`), so one byte every few "
     "seconds holds a connection and an upstream for ever; a whole-body deadline that grows "
     "with the bytes received is Apache mod_reqtimeout's `body=20,MinRate=500`, with nginx's "
     "60 s."},
    {"limits.client_body_min_rate", "Apache's `MinRate` is 500 bytes/s; 1 KiB/s is a slow "
                                    "mobile upload, and a trickle earns nothing."},
    {"limits.keepalive_timeout", "nginx's `keepalive_timeout` (75 s)."},
    {"limits.send_timeout", "nginx's `send_timeout` (60 s)."},
    {"limits.max_connections_per_worker", "fits the usual 8192..65536 file limit with room for "
                                          "origin connections; nginx's Debian default is 768."},
    {"limits.drain_timeout", "Kubernetes' default termination grace period (30 s)."},
    {"admin.listen", "stats, metrics and purges are for operators: on loopback."},
    {"admin.token", "on loopback the operator's machine is the boundary; a token is needed, "
                    "and checked, as soon as the listener leaves it."},
    {"admin.token_file", "a secret belongs in a file readable by cachet alone, not in a "
                         "config that is copied around (Varnish's `-S secret`)."},
    {"cache.max_bans", "Varnish keeps bans without bound and users report CPU burn past a "
                       "million (varnishcache#1635); 1000 active bans cost each untested "
                       "object at most 1000 tests."},
    {"cache.ban_lurker_batch", "Varnish's `ban_lurker_batch` (1000)."},
    {"cache.ban_lurker_sleep", "Varnish's `ban_lurker_sleep` (0.010 s): 1 M objects are "
                               "walked in about 10 s of mostly idle time."},
    {"cache.persist", "writing the cache to disk needs a place the packager or operator "
                      "chooses, and a stop then takes as long as writing it: like Varnish "
                      "and HAProxy, whose caches are always empty after a restart, a start "
                      "is cold unless asked."},
    {"compression.enabled", "compressing once as an object fills costs a hit nothing, and a "
                            "gzip or br answer is a fifth to a seventh of a JSON body; Varnish "
                            "stores gzip by default too (`http_gzip_support`). RFC 9110 §7.7 "
                            "lets an intermediary change the coding unless `no-transform` says "
                            "otherwise, and cachet never does then."},
    {"compression.types", "the text formats browsers and APIs send (nginx's `gzip_types` covers "
                          "only text/html unless told, Cloudflare's list is close to this one); "
                          "images, fonts in WOFF2 and video are compressed already."},
    {"compression.min_size", "below about 256 bytes the coding's framing (18 bytes for gzip) and "
                             "the per-object work outweigh the gain (Akamai compresses from 860 "
                             "bytes, nginx's `gzip_min_length` is 20)."},
    {"compression.gzip_level", "6 is zlib's own default: within 3 % of level 9's size at a third "
                               "of its CPU, paid once per stored object (the table in "
                               "docs/config.md)."},
    {"compression.br_level", "6 measured smaller and cheaper than 5 on 100 KiB of JSON "
                             "(docs/config.md); 10 and 11 cost 30-60 times more for 10 % less."},
    {"compression.zstd_level", "zstd's own default (3): faster than gzip 1 and smaller."},
    {"compression.prefer", "zstd first or it is never chosen where clients list it beside br "
                           "(zstd-nginx-module PR#44); br before gzip, as every browser that "
                           "sends br prefers it."},
    {"compression.on_the_fly", "a response that is not stored is compressed again for every "
                               "request, the per-request cost this design avoids (nginx's "
                               "`gzip on` model); a site opts in."},
    {"compression.store_transcoded", "cachet fronts slow origins: fetching an object again per "
                                     "coding class multiplies the origin's work (3 fetches for br, "
                                     "zstd and gzip clients), while one recode of the bench's "
                                     "100 KiB JSON costs 0.7 ms (br to zstd) to 2.7 ms (br to "
                                     "gzip) of CPU, once per class, against 7 ms for one fetch "
                                     "from a local origin and 57 ms at 50 ms of origin delay "
                                     "(bench/compress/recode_cost.sh, docs/caching.md); the "
                                     "copies are charged to cache.size like any variant. Off "
                                     "(per-class fetching) trades origin fetches for memory."},
    {"backend_groups[].balance", "today's behaviour and nginx's default (smooth weighted round robin)."},
    {"backend_groups[].hash_on", "the cache key is what a fleet of caches shards on, so each object is fetched by one backend."},
    {"backend_groups[].hash_balance_factor", "the bounded-load paper's 1.25 (Mirrokni et al.), which Vimeo and HAProxy run: one hot key spills to the next backend instead of melting its owner."},
    {"backend_groups[].slow_start", "as nginx's `slow_start` (off unless asked): a ramp needs an operator who knows the origin is cold."},
    {"sites[].hosts", "a site matches nothing until told which hosts are its own."},
    {"sites[].default", "requests for unknown hosts keep today's behaviour unless a site claims them (nginx's `default_server`)."},
    {"sites[].backend_group", "the top-level backends, as before sites existed."},
    {"sites[].routes[].name", "the site and the route's position name it well enough."},
    {"sites[].routes[].match.path", "a condition holds only when written."},
    {"sites[].routes[].match.path_prefix", "a condition holds only when written."},
    {"sites[].routes[].match.path_regex", "a condition holds only when written."},
    {"sites[].routes[].match.methods", "a condition holds only when written."},
    {"sites[].routes[].match.headers", "a condition holds only when written."},
    {"sites[].routes[].match.cookies", "a condition holds only when written."},
    {"sites[].routes[].match.query", "a condition holds only when written."},
    {"sites[].routes[].match.client", "a condition holds only when written."},
    {"sites[].routes[].backend_group", "a route changes only what it says; the site's group otherwise."},
    {"sites[].routes[].cache.pass", "the route caches as the cache section says unless told otherwise."},
    {"sites[].routes[].cache.ttl", "RFC 9111 §4.2.1: the origin's freshness information decides."},
    {"sites[].routes[].cache.ttl_statuses", "the statuses RFC 9110 §15.1 calls heuristically cacheable that carry content worth keeping (nginx's `proxy_cache_valid` without a status names 200, 301 and 302)."},
    {"sites[].routes[].cache.min_ttl", "RFC 9111 §4.2.1: the origin's freshness information decides."},
    {"sites[].routes[].cache.max_ttl", "RFC 9111 §4.2.1: the origin's freshness information decides."},
    {"sites[].routes[].cache.grace", "a route changes only what it says."},
    {"sites[].routes[].cache.stale_if_error", "a route changes only what it says."},
    {"sites[].routes[].cache.keep", "a route changes only what it says."},
    {"sites[].routes[].cache.client_cache_control", "a route changes only what it says."},
    {"sites[].routes[].cache.key_query", "a route changes only what it says."},
    {"sites[].routes[].cache.key_drop_params", "RFC 9111 §2 keys on the whole URI; dropping tracking parameters (`utm_*`, `gclid`, `fbclid`) is the site's decision, as dotCMS and Shopware make it opt-in."},
    {"sites[].routes[].cache.key_header", "a route changes only what it says."},
    {"sites[].routes[].cache.key_cookie", "RFC 9111 keys on the URI; a cookie in the key is the site's decision."},
    {"sites[].routes[].strip_cookie", "the origin gets the request as the client sent it."},
    {"sites[].routes[].strip_set_cookie", "the client gets the response as the origin sent it."},
    {"sites[].routes[].request_headers", "the origin gets the request as the client sent it (plus the forwarding fields)."},
    {"sites[].routes[].response_headers", "the client gets the response as the origin sent it."},
    {"sites[].routes[].redirect.status", "a route answers itself only when told."},
    {"sites[].routes[].redirect.location", "no redirect without a status."},
    {"sites[].routes[].respond.status", "a route answers itself only when told."},
    {"sites[].routes[].respond.body", "an empty body is the least surprising fixed answer."},
    {"sites[].routes[].respond.content_type", "RFC 9110 §8.3: a body says what it is; plain text is what an empty or short message is."},
    {"sites[].routes[].allow", "access control is a site's policy."},
    {"sites[].routes[].deny", "access control is a site's policy."},
    {"sites[].routes[].require_headers", "access control is a site's policy."},
    {"sites[].limit.rate", "limits are a site's policy; nginx's `limit_req` is off unless set."},
    {"sites[].limit.burst", "nginx's `limit_req` without `burst` refuses a second request 10 ms after the first at 10 r/s: a burst of `rate` lets a page load its assets."},
    {"sites[].limit.period", "per second, as nginx's `r/s`."},
    {"sites[].routes[].limit.period", "per second, as nginx's `r/s`."},
    {"sites[].limit.concurrent", "limits are a site's policy; nginx's `limit_conn` is off unless set."},
    {"sites[].routes[].limit.rate", "limits are a site's policy; nginx's `limit_req` is off unless set."},
    {"sites[].routes[].limit.burst", "nginx's `limit_req` without `burst` refuses a second request 10 ms after the first at 10 r/s: a burst of `rate` lets a page load its assets."},
    {"sites[].routes[].limit.concurrent", "limits are a site's policy; nginx's `limit_conn` is off unless set."},
    {"listen[].proxy_protocol", "a PROXY header is only sent by a balancer set up for it; read "
                                "from anyone else it would let a client choose its address."},
    {"listen[].proxy_protocol_from", "no peer is trusted until named (Caddy's `allow`, ATS's "
                                     "`proxy_protocol_allowlist`)."},
    {"listen[].default_site", "one default for every listener, as before listeners had their "
                              "own (nginx's `default_server` is per listen address)."},
    {"trusted_proxies", "a forwarding field is the client's to write unless a proxy we trust "
                        "wrote it (nginx's `set_real_ip_from`)."},
    {"real_ip_header", "what nginx, HAProxy and every load balancer send."},
    {"logs.target", "the error log where `error_log` says (stderr by default), as every peer "
                    "starts; syslog and JSON are a host's or a container's choice."},
    {"logs.syslog_facility", "`daemon`, the facility of system daemons, which syslog(3) "
                             "gives a daemon that names none."},
    {"logs.syslog_tag", "the program's name, as syslog(3) takes it by default."},
    {"logs.syslog_socket", "where glibc's syslog(3) writes: journald and rsyslog both listen "
                           "there."},
    {"logs.error_log", "stderr, so systemd's journal or a terminal has it."},
    {"logs.level", "errors and what changes state (start, reload, backend up/down), not every "
                   "request."},
    {"logs.access_log", "one line per request costs CPU and disk on the hit path; turn it on "
                        "where it is wanted (Varnish logs to memory, varnishncsa is separate)."},
    {"logs.access_format", "nginx's and Apache's `combined`, which every log tool reads."},
    {"fleet.self", "one node is a whole cache; a fleet is set up on purpose."},
    {"fleet.hop_header", "names cachet's own field, which no client or origin sends."},
    {"fleet.token", "members on a private network are known by their addresses."},
    {"fleet.connect_timeout", "a peer on the same network connects in well under a millisecond; "
                              "waiting longer than this only delays the origin fallback."},
    {"fleet.response_timeout", "the owner may itself wait on the origin: the backends' own "
                               "30s response_header_timeout."},
    {"fleet.down_time", "short enough that a restarted node gets its keys back quickly, long "
                        "enough that a dead one is not retried on every request."},
    {"fleet.members[].admin", "purges reach the others through Redis; HTTP fan-out is a "
                              "fallback an operator sets up by naming the admin listeners."},
    {"fleet.redis", "a static member list needs nothing else running."},
    {"fleet.redis_sentinel", "a standalone server or a Cluster names itself."},
    {"fleet.redis_sentinels", "`redis` names the one Sentinel most setups start with."},
    {"fleet.redis_password", "a Redis on a private network often has no password; one that has "
                             "is named here (or `requirepass` is off)."},
    {"fleet.redis_username", "`requirepass` authenticates the `default` user, the one most "
                             "servers have."},
    {"fleet.redis_sentinel_password", "Sentinels on a private network often have no "
                                      "password, as their servers."},
    {"fleet.redis_prefix", "the program's name: one fleet per Redis unless told otherwise."},
    {"fleet.register_ttl", "a dead node's keys re-home within 10 s, while three refreshes "
                           "must be lost before a live one is dropped."},
    {"fleet.learn_members", "adding a node then means starting it, not editing and reloading "
                            "every other node; Redis is trusted with membership already."},
    {"fleet.mirror_ttl", "a hot key's hits stay local on every node (groupcache's hot cache) "
                         "while an edge copy outlives a purge by 2 s at most."},
    {"fleet.purge_queue", "a burst of thousands of PURGEs (a CMS saving a catalogue) is queued, "
                          "while a stalled main thread cannot make the workers' purges grow "
                          "memory without bound."},
    {"fleet.fanout_queue", "a member cut off for minutes during a deploy's purges catches up "
                           "when it is back, while one gone for good costs a bounded few MiB "
                           "(an entry is its query and expression)."},
    {"fleet.owner_down", "no failed client request when a node dies (ledge#193: \"if Redis is "
                         "down, response is not fetched from origin\"); `error` is the opt-in "
                         "that protects the origin (ledge#60)."},
    {"fleet.load_factor", "the owner's coalescing is what gives the fleet one origin fetch per "
                          "object; spilling a hot owner's misses trades that for its load, the "
                          "operator's call (HAProxy's `hash-balance-factor` is 0 too)."},
    {"fleet.load_floor", "a few concurrent misses to one owner are ordinary; the bound is for "
                         "an owner that piles up, not for two requests at once."},
};

const char *ct_conf_default_reason(const char *key)
{
    for (size_t i = 0; i < CT_ARRAY_LEN(reasons); i++)
        if (strcmp(reasons[i].key, key) == 0)
            return reasons[i].why;
    /* a fleet member's TLS takes the backends' */
    static const char mtls[] = "fleet.members[].tls.";
    if (strncmp(key, mtls, sizeof(mtls) - 1) == 0) {
        char k[128];
        snprintf(k, sizeof(k), "backends[].tls.%s", key + sizeof(mtls) - 1);
        return ct_conf_default_reason(k);
    }
    /* a group's backends take the top-level backends' rows and reasons */
    static const char grp[] = "backend_groups[].";
    if (strncmp(key, grp, sizeof(grp) - 1) == 0 &&
        strncmp(key + sizeof(grp) - 1, "backends[].", 11) == 0)
        return ct_conf_default_reason(key + sizeof(grp) - 1);
    return NULL;
}

size_t ct_conf_default_reasons(const char ***keys)
{
    static const char *k[CT_ARRAY_LEN(reasons)];
    for (size_t i = 0; i < CT_ARRAY_LEN(reasons); i++)
        k[i] = reasons[i].key;
    *keys = k;
    return CT_ARRAY_LEN(reasons);
}

/* Every row under SEC in reference order, each with its reference key
 * ("listen[].tls.min_version") and its depth (0 at the top). */
static void walk_rows(const struct ct_conf_section *sec, const char *prefix, unsigned depth,
                      ct_conf_ref_cb *cb, void *arg)
{
    for (size_t i = 0; i < sec->nrows; i++) {
        const struct ct_conf_row *r = &sec->rows[i];
        char key[160];
        snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", r->name);
        cb(key, r, depth, arg);
        if (r->type == CT_ROW_GROUP)
            walk_rows(r->sub, key, depth + 1, cb, arg);
        if (r->type == CT_ROW_LIST) {
            snprintf(key + strlen(key), sizeof(key) - strlen(key), "[]");
            walk_rows(r->sub, key, depth + 1, cb, arg);
        }
    }
}

void ct_conf_reference_walk(ct_conf_ref_cb *cb, void *arg)
{
    walk_rows(&ct_conf_root_section, "", 0, cb, arg);
}

bool ct_conf_row_says_expected(const struct ct_conf_row *r)
{
    /* "Expected" only where it says more than the type column */
    return r->type != CT_ROW_STR && r->type != CT_ROW_GROUP && r->type != CT_ROW_LIST &&
           r->type != CT_ROW_BOOL;
}

/* Markdown cells must not contain '|'; the defaults don't, the help neither. */
static void md_row(const char *key, const struct ct_conf_row *r, unsigned depth, void *arg)
{
    FILE *fp = arg;
    char expect[400];
    ct_conf_row_expect(r, expect, sizeof(expect));
    const char *def = r->def ? r->def : (r->flags & CT_ROW_REQUIRED) ? "required" : "";
    bool say = ct_conf_row_says_expected(r);
    fprintf(fp, "| `%s` | %s | %s%s%s | %s%s%s%s", key, ct_conf_row_type_name(r),
            r->def ? "`" : "", def, r->def ? "`" : "", r->help, say ? " Expected: " : "",
            say ? expect : "", say ? "." : "");
    const char *why = ct_conf_default_reason(key);
    if (why)
        fprintf(fp, " *Why this default:* %s", why);
    if (r->departs)
        fprintf(fp, " **Any other value is an opt-in that departs from %s.**", r->departs);
    fputs(" |\n", fp);
}

void ct_conf_print_reference(FILE *fp)
{
    fprintf(fp, "| key | type | default | meaning |\n| --- | --- | --- | --- |\n");
    ct_conf_reference_walk(md_row, fp);
}

/* ---- what a row expects (the "(expected ...)" of every error) ------------ */

static void expect_enum(const struct ct_conf_enum *e, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "one of");
    for (const struct ct_conf_enum *p = e; p->name && k < len; p++)
        k += (size_t)snprintf(buf + k, len - k, "%s\"%s\"",
                              p == e ? " " : p[1].name ? ", " : " or ", p->name);
}

void ct_conf_row_expect(const struct ct_conf_row *r, char *buf, size_t len)
{
    char lo[32], hi[32];
    const char *off = (r->flags & CT_ROW_OFF)       ? ", or \"off\""
                      : (r->flags & CT_ROW_AUTO)    ? ", or \"auto\""
                      : (r->flags & CT_ROW_INHERIT) ? ", or \"inherit\""
                                                    : "";
    switch (r->type) {
    case CT_ROW_BOOL: snprintf(buf, len, "true or false"); break;
    case CT_ROW_UINT:
        snprintf(buf, len, "an integer from %llu to %llu%s", (unsigned long long)r->min,
                 (unsigned long long)r->max, (r->flags & CT_ROW_AUTO) ? ", or \"auto\"" : "");
        break;
    case CT_ROW_SIZE:
        ct_conf_fmt_size(r->min, lo, sizeof(lo));
        ct_conf_fmt_size(r->max, hi, sizeof(hi));
        if (r->max == UINT64_MAX)
            snprintf(buf, len, "a size such as 512K, 256M, 1G or a byte count");
        else
            snprintf(buf, len, "a size such as 512K, 256M, 1G or a byte count, from %s to %s",
                     lo, hi);
        break;
    case CT_ROW_DUR:
        ct_conf_fmt_dur(r->min, lo, sizeof(lo));
        ct_conf_fmt_dur(r->max, hi, sizeof(hi));
        snprintf(buf, len, "a duration such as 500ms, 10s, 5m or 1h, from %s to %s%s", lo, hi,
                 off);
        break;
    case CT_ROW_FRAC: snprintf(buf, len, "a number from 0.0 to 1.0"); break;
    case CT_ROW_STR: snprintf(buf, len, "a string"); break;
    case CT_ROW_OPTSTR: snprintf(buf, len, "a non-empty string, or \"off\""); break;
    case CT_ROW_ENUM: expect_enum(r->enums, buf, len); break;
    case CT_ROW_ADDR:
        snprintf(buf, len, "\"IP:PORT\" such as \"127.0.0.1:8080\" or \"[::1]:8080\"%s", off);
        break;
    case CT_ROW_HOSTPORT:
        snprintf(buf, len, "\"HOST:PORT\" such as \"127.0.0.1:8081\" or \"origin.example:80\"");
        break;
    case CT_ROW_STRLIST:
        if (r->flags & CT_ROW_WORDS)
            snprintf(buf, len, "an array of the words above, such as %s", r->def);
        else if (r->flags & CT_ROW_TEXT)
            snprintf(buf, len, "an array of non-empty strings as described");
        else if (r->flags & CT_ROW_FIELDS)
            snprintf(buf, len, "header field names such as [\"Surrogate-Key\", \"Cache-Tag\"]");
        else if (r->flags & CT_ROW_TYPES)
            snprintf(buf, len, "media types such as [\"text/*\", \"application/json\"]");
        else
            snprintf(buf, len, "server names such as [\"example.com\", \"*.example.com\"]");
        break;
    case CT_ROW_CIDRLIST:
        snprintf(buf, len, "address prefixes such as [\"127.0.0.0/8\", \"::1/128\"]");
        break;
    case CT_ROW_GROUP: snprintf(buf, len, "a group { ... }"); break;
    case CT_ROW_LIST: snprintf(buf, len, "a list of groups ( { ... }, ... )"); break;
    }
}
