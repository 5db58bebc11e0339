/*
 * proxy/stats/stats.h: cachet's counters, and their two renderings (/stats JSON and
 * /metrics Prometheus text). Pure C11 + atomics: no libevent, no sockets, so
 * the unit tests link the library `ct_stats` alone.
 *
 * One X-macro table (CT_STATS_TABLE) lists every per-worker counter with its
 * kind (counter or gauge), its label set and its help text. The struct, the
 * JSON and the Prometheus text are all generated from it, so they cannot
 * drift (Varnish include/tbl/vsc_*.h; the close reasons come the same way from
 * common/close_tbl.h). Per-backend counters have their own table
 * (CT_STATS_BE_TABLE), the latency histogram its fixed buckets
 * (CT_STATS_LAT_BUCKETS).
 *
 * Threads. Each worker owns one struct ct_stats and is the only writer: an
 * increment is a relaxed load + relaxed store (no locked instruction, no
 * contention). Any other thread (the admin listener) may read a block at any
 * time with relaxed loads (ct_stats_sum): every value is exact, the set is not
 * a snapshot of one instant (like ct_cache_stats()).
 *
 * Ownership: ct_stats_new()/ct_stats_free() for a block; a sum is a block too.
 * Renderings append to a struct ct_buf (common/buf.h) owned by the caller.
 */
#ifndef CT_STATS_H
#define CT_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/close.h"
#include "common/common.h"
#include "common/h2why.h"

struct ct_cache_stats; /* cache/cache.h */
struct ct_mem_stats;   /* common/mem.h */

/* ---- label sets ---------------------------------------------------------- */

/* Status classes: "none" is a request that got no response at all (client
 * gone, or the connection cut after a partial response was impossible). */
#define CT_STATS_CLASS_TABLE(X) X(1xx) X(2xx) X(3xx) X(4xx) X(5xx) X(none)

/* How the cache took part in a request (RFC 9211 vocabulary, Varnish names). */
#define CT_STATS_CS_TABLE(X)                                                   \
    X(NONE, "none")           /* no cache on this path (not wired, or off) */ \
    X(HIT, "hit")             /* fresh object delivered */                     \
    X(MISS, "miss")           /* fetched (and stored if storable) */           \
    X(STALE, "stale")         /* stale object delivered (grace/swr/sie) */     \
    X(PASS, "pass")           /* not cacheable: forwarded as is */             \
    X(COALESCED, "coalesced") /* waited on another client's fetch */           \
    X(HIT_FOR_MISS, "hit_for_miss")

enum ct_stats_cs {
#define CT_STATS_CS_ENUM(id, name) CT_STATS_CS_##id,
    CT_STATS_CS_TABLE(CT_STATS_CS_ENUM)
#undef CT_STATS_CS_ENUM
        CT_STATS_CS__COUNT
};

/* The protocol a client connection speaks: HTTP/1 on its listener's kind
 * (http, https), or HTTP/2 (h2: ALPN chose it on an HTTPS listener; a
 * connection counts as https until its handshake is done). */
/* http, https: HTTP/1.1 in clear text, over TLS; h2: HTTP/2 over TLS; h2c:
 * HTTP/2 in clear text (listen[].h2c). */
#define CT_STATS_PROTO_TABLE(X) X(http) X(https) X(h2) X(h2c)

enum ct_stats_proto {
#define CT_STATS_PROTO_ENUM(name) CT_STATS_PROTO_##name,
    CT_STATS_PROTO_TABLE(CT_STATS_PROTO_ENUM)
#undef CT_STATS_PROTO_ENUM
        CT_STATS_PROTO__COUNT
};

/* Content codings, in http/http_ae.h's enum ct_coding order (the core
 * asserts it): the label of the compression counters. */
#define CT_STATS_CODING_TABLE(X) X(identity) X(gzip) X(br) X(zstd)
#define CT_STATS_NL_CODING 4

/* What a route did with a request itself (issue 15, proxy/core/route_step.c). */
#define CT_STATS_ROUTE_TABLE(X) X(deny) X(require) X(redirect) X(respond) X(rate) X(concurrency)

enum ct_stats_route {
#define CT_STATS_ROUTE_ENUM(name) CT_STATS_ROUTE_##name,
    CT_STATS_ROUTE_TABLE(CT_STATS_ROUTE_ENUM)
#undef CT_STATS_ROUTE_ENUM
        CT_STATS_ROUTE__COUNT
};

/* Why the fleet's HTTP fan-out dropped a purge or ban unacknowledged, in
 * proxy/fleet/fleet_fanout.h's enum ct_fleet_fanout_drop order. */
#define CT_STATS_FANOUT_DROP_TABLE(X) X(full) X(rejected) X(left)
#define CT_STATS_NL_FANOUT_DROP 3

/* Number of slots of each label set. */
#define CT_STATS_NL_NONE 1
#define CT_STATS_NL_CLASS 6
#define CT_STATS_NL_CACHE CT_STATS_CS__COUNT
#define CT_STATS_NL_CLOSE CT_CLOSE__COUNT
#define CT_STATS_NL_PROTO CT_STATS_PROTO__COUNT
#define CT_STATS_NL_H2WHY CT_H2_WHY__COUNT
#define CT_STATS_NL_ROUTE CT_STATS_ROUTE__COUNT

/* ---- the tables ------------------------------------------------------------ */

/* X(id, kind, labels, help): kind COUNTER or GAUGE; labels NONE, CLASS (label
 * "class"), CACHE (label "cache_status"), CLOSE (label "reason"), PROTO
 * (label "proto"), H2WHY (label "reason": why an HTTP/2 connection ended,
 * common/h2why.h CT_H2_WHY_TABLE, lower case), CODING (label "coding":
 * CT_STATS_CODING_TABLE), ROUTE (label "action") or FANOUT_DROP (label
 * "reason": CT_STATS_FANOUT_DROP_TABLE).
 * Prometheus name: cachet_<id>, plus _total for counters. */
#define CT_STATS_TABLE(X)                                                      \
    X(connections_accepted, COUNTER, NONE, "Client connections accepted.")      \
    X(connections_open, GAUGE, NONE, "Client connections open now.")            \
    X(connections_open_by_proto, GAUGE, PROTO, "Client connections open now, by protocol.") \
    X(connections_by_proto, COUNTER, PROTO,                                     \
      "Client connections that ended, by the protocol they spoke.")             \
    X(requests, COUNTER, CLASS, "Client requests finished, by response status class.") \
    X(cache_requests, COUNTER, CACHE, "Client requests finished, by cache status.") \
    X(connections_closed, COUNTER, CLOSE, "Client connections closed, by reason.") \
    X(request_bytes, COUNTER, NONE,                                             \
      "Request bytes from clients: heads as received, bodies without chunk framing.") \
    X(response_body_bytes, COUNTER, NONE,                                       \
      "Response body bytes sent to clients, without chunk framing.")            \
    X(admin_requests, COUNTER, NONE, "Requests served by the admin listener.")   \
    X(admin_event_streams, GAUGE, NONE, "GET /events streams open on the admin listener.") \
    X(admin_event_streams_dropped, COUNTER, NONE,                               \
      "Event streams closed because their client did not read.")                \
    X(cache_tags_refused, COUNTER, NONE,                                       \
      "Tags left out of stored objects: over cache.max_tags or cache.max_tag_length.") \
    X(cache_waiters_released, COUNTER, NONE,                                   \
      "Coalesced waiters sent to the origin: the fill they held for outgrew the store.") \
    X(compress_objects, COUNTER, CODING,                                        \
      "Responses stored compressed by cachet, by coding.")                       \
    X(compress_bytes_in, COUNTER, CODING,                                       \
      "Bytes fed to cachet's encoders (before compression), by coding.")         \
    X(compress_bytes_out, COUNTER, CODING,                                      \
      "Bytes cachet's encoders produced (after compression), by coding.")        \
    X(compress_cpu_us, COUNTER, CODING,                                         \
      "Thread CPU time spent in cachet's encoders, microseconds, by coding.")    \
    X(decode_bytes_in, COUNTER, CODING,                                         \
      "Stored coded bytes decoded for clients that cannot take the coding, by coding.") \
    X(decode_bytes_out, COUNTER, CODING,                                        \
      "Bytes those decoders produced (identity), by the stored coding.")        \
    X(decode_cpu_us, COUNTER, CODING,                                           \
      "Thread CPU time spent decoding for such clients, microseconds, by coding.") \
    X(h2_streams, COUNTER, NONE, "HTTP/2 request streams opened by clients.")   \
    X(h2_malformed, COUNTER, NONE,                                              \
      "HTTP/2 requests refused as malformed (RST_STREAM PROTOCOL_ERROR).")      \
    X(h2_resets_received, COUNTER, NONE, "HTTP/2 RST_STREAM frames from clients.") \
    X(h2_resets_sent, COUNTER, NONE, "HTTP/2 RST_STREAM frames we sent.")       \
    X(h2_connections_ended, COUNTER, H2WHY,                                     \
      "HTTP/2 connections ended, by reason (GOAWAY we sent or received, drain).") \
    X(h2_idle_trims, COUNTER, NONE,                                             \
      "HTTP/2 connections that gave back their busy-only memory after 1 s with no stream.") \
    X(h2_idle_trim_bytes, COUNTER, NONE,                                        \
      "Bytes of resident memory pages those idle trims gave back to the kernel.") \
    X(route_answers, COUNTER, ROUTE,                                            \
      "Requests a route answered itself: 403 (deny, require), redirect, respond, 429 (rate, concurrency).") \
    X(fleet_peer_fetches, COUNTER, NONE,                                        \
      "Misses fetched from the key's owner node (fleet, issue 17).")            \
    X(fleet_owner_spills, COUNTER, NONE,                                        \
      "Misses not sent to their owner: this worker had more than fleet.load_factor % of the mean in flight to it; sent to the key's next node (or the origin).") \
    X(fleet_owner_down, COUNTER, NONE,                                          \
      "Peer fetches that failed before a response (owner down or slow); fetched from the origin, or 502 with owner_down = error.") \
    X(fleet_client_purges, COUNTER, NONE,                                       \
      "Clients' PURGE requests handed to the fleet's fan-out (Redis, or HTTP while it is down).") \
    X(fleet_client_purges_refused, COUNTER, NONE,                               \
      "Clients' PURGEs applied here but not fanned out: the queue (fleet.purge_queue) was full; answered 503.") \
    X(fleet_hop_requests, COUNTER, NONE,                                        \
      "Requests from peers (trusted hop header) served as the owner.")          \
    X(fleet_hop_untrusted, COUNTER, NONE,                                       \
      "Requests with a hop header from a non-member without the token (the header was dropped).") \
    X(fleet_purges_published, COUNTER, NONE,                                    \
      "Purges and bans of this node's admin sent to the fleet through Redis.")  \
    X(fleet_purges_applied, COUNTER, NONE,                                      \
      "Purges and bans of other nodes applied here from Redis (each once).")    \
    X(fleet_http_fanout, COUNTER, NONE,                                         \
      "Purge and ban requests sent to members' admin listeners while Redis was down.") \
    X(fleet_fanout_unsent, COUNTER, NONE,                                       \
      "Purges and bans that reached no other node (Redis down, no member admin address).") \
    X(fleet_fanout_waiting, GAUGE, NONE,                                        \
      "Purges and bans sent over HTTP that members have not acknowledged yet (all members).") \
    X(fleet_fanout_retries, COUNTER, NONE,                                      \
      "HTTP fan-out requests sent again after a failure (no answer, 5xx, 401, 403, 429).") \
    X(fleet_fanout_dropped, COUNTER, FANOUT_DROP,                               \
      "HTTP fan-out purges and bans given up unacknowledged: queue full (fleet.fanout_queue), rejected (another 4xx), member left.") \
    X(fleet_redis_errors, COUNTER, NONE, "Redis connects that failed and connections lost.") \
    X(fleet_redis_missed, COUNTER, NONE,                                        \
      "Reconnects that found purges trimmed from the stream before this node read them.") \
    X(fleet_redis_up, GAUGE, NONE, "1 while both Redis connections are up and authenticated.") \
    X(fleet_redis_redirects, COUNTER, NONE,                                     \
      "Redis Cluster MOVED replies followed; Sentinel failovers followed.") \
    X(fleet_redis_asks, COUNTER, NONE,                                          \
      "Redis Cluster ASK replies: the command sent once to the importing node (ASKING).") \
    X(fleet_redis_slow_publishes, COUNTER, NONE,                                \
      "Purges and bans Redis had not answered within 2 s (or past 1024 unanswered): sent over HTTP as well.") \
    X(fleet_redis_skipped, COUNTER, NONE,                                       \
      "Registrations and membership reads not sent: the last one of their kind was unanswered.") \
    X(fleet_redis_stalls, COUNTER, NONE,                                        \
      "Times both Redis links were dropped and made again: no answer for register_ttl.") \
    X(fleet_redis_role_mismatch, COUNTER, NONE,                                 \
      "Masters a Sentinel named whose ROLE was not master: not used, the next Sentinel asked.") \
    X(fleet_redis_sentinel_stalls, COUNTER, NONE,                               \
      "Sentinel subscriptions (+switch-master) dropped: that Sentinel did not answer in 4 s.") \
    X(fleet_members_live, GAUGE, NONE,                                          \
      "Members registered in Redis at the last membership read, this one included.") \
    X(fleet_members_down, GAUGE, NONE,                                          \
      "Members not asked for fleet.down_time after a failed peer fetch.")

/* Per backend, label "backend" (its configured name). */
#define CT_STATS_BE_TABLE(X)                                                   \
    X(upstream_requests, "Requests sent to the backend.")                      \
    X(upstream_connections, "New connections opened to the backend.")          \
    X(upstream_errors, "Connect errors, resets and malformed responses.")      \
    X(upstream_timeouts, "Connect, header or read timeouts.")                  \
    X(upstream_retries, "Requests retried on another connection.")            \
    X(upstream_tls_handshakes_full, "TLS handshakes to the backend with a new session.") \
    X(upstream_tls_handshakes_resumed, "TLS handshakes to the backend resuming a session.") \
    X(upstream_tls_fail_untrusted, "TLS failures: certificate of an unknown CA or self-signed.") \
    X(upstream_tls_fail_expired, "TLS failures: certificate expired or not yet valid.") \
    X(upstream_tls_fail_name, "TLS failures: certificate not for the name (or IP address).") \
    X(upstream_tls_fail_verify, "TLS failures: other certificate verification errors.") \
    X(upstream_tls_fail_handshake, "TLS failures: alert, cleartext answer or close mid-handshake.") \
    X(upstream_tls_fail_timeout, "TLS failures: no handshake within handshake_timeout.")

enum ct_stats_be {
#define CT_STATS_BE_ENUM(id, help) CT_STATS_BE_##id,
    CT_STATS_BE_TABLE(CT_STATS_BE_ENUM)
#undef CT_STATS_BE_ENUM
        CT_STATS_BE__COUNT
};

/* Request latency (head received -> response complete) histogram upper
 * bounds in microseconds; a last implicit bucket is +Inf. */
#define CT_STATS_LAT_BUCKETS(X)                                                \
    X(500) X(1000) X(2500) X(5000) X(10000) X(25000) X(50000) X(100000)       \
    X(250000) X(500000) X(1000000) X(2500000) X(5000000) X(10000000)
#define CT_STATS_LAT_ONE(us) +1
#define CT_STATS_LAT_N (0 CT_STATS_LAT_BUCKETS(CT_STATS_LAT_ONE))

/* ---- one block (per worker, or a sum) --------------------------------------- */

/* Requests per route (issue 15), by the route's site and name: slots a
 * process-wide name table hands out (ct_stats_names), a counter per slot
 * in every worker's block. A name keeps its slot across reloads, so its
 * count goes on; past CT_STATS_ROUTES_MAX names, new ones are not counted. */
#define CT_STATS_ROUTES_MAX 1024

struct ct_stats {
    unsigned magic;
#define CT_STATS_MAGIC 0x57a75b10u
#define CT_STATS_FIELD(id, kind, labels, help) _Atomic uint64_t id[CT_STATS_NL_##labels];
    CT_STATS_TABLE(CT_STATS_FIELD)
#undef CT_STATS_FIELD
    _Atomic uint64_t lat_bucket[CT_STATS_LAT_N + 1]; /* not cumulative; last = +Inf */
    _Atomic uint64_t lat_sum_us;
    _Atomic uint64_t route_requests[CT_STATS_ROUTES_MAX]; /* by ct_stats_names slot */
    /* Origin time saved (issue 46): each hit adds its object's fetch cost,
     * microseconds, to its route's slot, or to origin_saved_us_other when it
     * had no route (no sites, or a slot table full): the series of
     * cachet_origin_seconds_saved_total, which sum to the /stats total. */
    _Atomic uint64_t route_origin_saved_us[CT_STATS_ROUTES_MAX];
    _Atomic uint64_t origin_saved_us_other;
    size_t nbackends;
    _Atomic uint64_t (*be)[CT_STATS_BE__COUNT]; /* nbackends rows */
};

/* A zeroed block for NBACKENDS backends. Owned by the caller. */
struct ct_stats *ct_stats_new(size_t nbackends);
void ct_stats_free(struct ct_stats **sp);

/* Writer side: the owning thread only. */
static inline void ct_stats_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}
static inline void ct_stats_sub(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) - n,
                          memory_order_relaxed);
}
static inline uint64_t ct_stats_get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}
/* A hit saved the origin COST_US of work: credited to route slot SLOT
 * (ct_stats_names_slot), or to the unrouted series when SLOT < 0 (inline:
 * once per hit). */
static inline void ct_stats_origin_saved(struct ct_stats *s, int slot, uint64_t cost_us)
{
    ct_stats_add(slot >= 0 && slot < CT_STATS_ROUTES_MAX ? &s->route_origin_saved_us[slot]
                                                         : &s->origin_saved_us_other,
                 cost_us);
}

/* A connection was accepted (accepted++, open++). */
void ct_stats_conn_open(struct ct_stats *s);
/* A connection closed for WHY (an enum ct_close value; open--). */
void ct_stats_conn_close(struct ct_stats *s, unsigned why);
/* A connection of protocol P opened (OPEN) or closed (!OPEN). */
void ct_stats_conn_proto(struct ct_stats *s, enum ct_stats_proto p, bool open);
/* A connection that spoke P ended (the dashboard's listener rows name the
 * protocols used, from these and the open ones). */
void ct_stats_conn_spoke(struct ct_stats *s, enum ct_stats_proto p);
/* A request read IN_BYTES from its client and sent OUT_BODY_BYTES of body. */
void ct_stats_req_bytes(struct ct_stats *s, uint64_t in_bytes, uint64_t out_body_bytes);
/* A request finished with STATUS (0: no response) after LATENCY_US, with
 * cache status CS. */
void ct_stats_req_done(struct ct_stats *s, unsigned status, uint64_t latency_us,
                       enum ct_stats_cs cs);
/* The total of every series of S's origin time saved, microseconds. */
uint64_t ct_stats_origin_saved_us(const struct ct_stats *s);
/* Per-backend event; BACKEND past nbackends is ignored (a reload added it). */
void ct_stats_backend(struct ct_stats *s, size_t backend, enum ct_stats_be what);

/* Reader side, any thread: add every counter of SRC into SUM (a block owned by
 * the reader; backends past sum->nbackends are ignored). */
void ct_stats_sum(struct ct_stats *sum, const struct ct_stats *src);

/* ---- rendering ---------------------------------------------------------------- */

/* The rendering buffer is common/buf.h's struct ct_buf.
 * XXX(#13): the ct_stats_out names below only keep proxy/ops/ops.c, admin.c and
 * ops_events.c compiling until the request-core split renames their uses to
 * ct_buf / ct_buf_put / ct_buf_printf / ct_buf_free; then delete them. */
#define ct_stats_out ct_buf
static inline void ct_stats_out_free(struct ct_buf *o)
{
    ct_buf_free(o);
}
static inline void ct_stats_out_mem(struct ct_buf *o, const char *p, size_t len)
{
    ct_buf_put(o, p, len);
}
#define ct_stats_out_printf ct_buf_printf

/* A listening address, as shown (no client address is ever shown). */
struct ct_stats_listener {
    const char *kind; /* "http", "https", "admin" */
    const char *addr; /* "IP:PORT" */
};

/* Configuration reloads (SIGHUP) since start. */
struct ct_stats_reload {
    unsigned generation; /* configurations applied after the first one */
    uint64_t ok, failed;
    double last_time; /* Unix time of the last attempt; 0: none yet */
    bool last_ok;
    size_t retired; /* replaced configurations, listeners and backend sets
                       not freed yet: connections open before the switch */
};

/* The names of the route counters' slots. Thread-safe (a mutex: taken when
 * a worker compiles a route table, and by renderings), freed at exit. */
struct ct_stats_names;
struct ct_stats_names *ct_stats_names_new(void);
void ct_stats_names_free(struct ct_stats_names **np);
/* The slot of SITE/ROUTE (a new one the first time), or -1 when full. */
int ct_stats_names_slot(struct ct_stats_names *n, const char *site, const char *route);

/* Everything a rendering shows besides the summed block. */
struct ct_stats_view {
    const struct ct_stats *sum;
    const char *const *backend_names; /* sum->nbackends names */
    const int *backend_up;            /* per backend 1/0; NULL: not checked */
    const int *backend_drain;         /* per backend 1/0 (cachet ctl backend); NULL: none */
    const struct ct_cache_stats *cache; /* NULL: no cache */
    const struct ct_mem_stats *mem;   /* the allocator's figures; NULL: not shown */
    bool tls;                         /* an HTTPS listener exists */
    uint64_t tls_full, tls_resumed;   /* handshakes */
    double uptime_s;
    const struct ct_stats_listener *listeners;
    size_t nlisteners;
    struct ct_stats_reload reload;
    bool purge; /* the admin listener takes POST /purge (it has a cache) */
    struct ct_stats_names *routes; /* NULL or none yet: no per-route counters shown */
};

/* Append the JSON object (/stats) or the Prometheus text format 0.0.4
 * (/metrics) of V to OUT. */
void ct_stats_render_json(const struct ct_stats_view *v, struct ct_buf *out);
void ct_stats_render_prom(const struct ct_stats_view *v, struct ct_buf *out);

#endif /* CT_STATS_H */
