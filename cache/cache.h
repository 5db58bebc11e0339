/*
 * cache/cache.h: the shared object store (Varnish-style), for all worker threads.
 *
 * What it is: a sharded hash table of keys, each holding a list of variants
 * (Vary), each variant a refcounted object (struct ct_obj) that carries its
 * key. No sockets, no libevent, no logging, no clock: time is passed in
 * (`now`), decisions (ttl, grace, keep, the Vary secondary key bytes, whether
 * to store at all) come from the caller (cache/cache_policy.h makes them).
 *
 * Object life (forward only):
 *
 *     BUSY ──set_head──▶ STREAMING ──complete──▶ COMPLETE
 *       │                    │
 *       └──────┬─────────────┘
 *              ├──fail────▶ FAILED     (never served as complete, unlinked)
 *              └──abandon─▶ ABANDONED  (uncacheable: waiters fetch on their own,
 *                                       optional hit-for-miss marker left behind)
 *
 * A COMPLETE object is immutable: readers take no lock to read its head or body.
 *
 * References. The table holds one reference on every linked object. Every
 * function that hands out a `struct ct_obj *` hands out a NEW reference that
 * the caller drops with ct_obj_release(&obj). Removal from the table (eviction,
 * purge, expiry, replacement) drops the table's reference only; memory goes at
 * the last release, so a reader is never freed under its feet.
 *
 * Memory. A hard cap on bytes: the objects (struct, header block, validators,
 * Vary key, body segments, their copy of the key) and the tables' slot arrays
 * are all counted, and bytes are reserved BEFORE they are allocated, so the count never
 * exceeds the cap. Bytes are given back when memory is really freed (at the
 * last release), so an evicted object still held by a slow reader still counts;
 * when readers hold everything, reservations fail (CT_ELIMIT, stats.nomem)
 * rather than exceed the cap, and the proxy passes.
 * Eviction: SIEVE (NSDI'24) per shard, or SIEVE weighted by each object's
 * fetch cost per byte (ct_cache_config.evict); see cache_evict.c for why.
 *
 * Threads. Every function is safe to call from any thread unless it says
 * otherwise. Each shard has a mutex; a lookup locks one shard only. Object
 * refcounts and states are C11 atomics. The fetcher (the caller that got the
 * BUSY object from a MISS) is the only thread that may call ct_obj_set_head /
 * ct_obj_append / ct_obj_complete / ct_obj_fail / ct_obj_abandon on it.
 *
 * Errors: functions return CT_OK or a negative enum ct_err (common/common.h).
 *
 * How the proxy uses it (one request):
 *
 *     ct_cache_key_build(&opts, &in, buf, cap, &key);
 *     switch (ct_cache_lookup(cache, &(struct ct_cache_lookup_req){&key, vary_bytes,
 *                             ct_cache_vary_match_cb, req_msg, false}, now, &res)) {
 *     case CT_CACHE_HIT:   deliver res.obj: ct_obj_head() + per-hit Date/Age/
 *                          Cache-Status/Connection, then each ct_obj_body_next()
 *                          chunk by evbuffer_add_reference(.., ct_obj_release_cb,
 *                          ct_obj_ref(obj)); release res.
 *     case CT_CACHE_STALE: serve res.obj if grace allows (ct_obj_in_grace) and
 *                          refresh with res.fetch in the background, else
 *                          revalidate with res.fetch (ct_obj_etag ...) or wait
 *                          on res.busy.
 *     case CT_CACHE_BUSY:  ct_obj_wait(res.busy, &c->waiter, state, 0); on wake
 *                          stream from res.busy (ct_obj_body_next / WAIT ->
 *                          ct_obj_wait again) or look up again; ABANDONED:
 *                          fetch on your own; FAILED: look up again.
 *     case CT_CACHE_MISS:  fetch; storable: ct_obj_set_head(res.fetch, &meta),
 *                          ct_obj_append() per body chunk, ct_obj_complete();
 *                          not storable: ct_obj_abandon(res.fetch, now, hfm_ttl);
 *                          origin error: ct_obj_fail(). No res.fetch: pass.
 *     case CT_CACHE_PASS:  fetch on your own, store nothing.
 *     }
 *     ct_cache_lookup_res_release(&res);
 */
#ifndef CT_CACHE_H
#define CT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The RFC 9111 decisions the store takes as inputs. */
#include "cache/cache_policy.h"
#include "common/common.h"
#include "common/list.h"

struct ct_cache; /* opaque: the store */
struct ct_obj;   /* opaque: one stored (or being stored) response; refcounted */

/* ---- keys (cache_key.c) ---------------------------------------------- */

/* The method class of a key: GET and HEAD share one (HEAD is answered from a
 * stored GET response); anything else is never stored but may be purged. */
enum ct_cache_mclass { CT_CACHE_MCLASS_GET = 'G', CT_CACHE_MCLASS_OTHER = 'O' };

enum ct_cache_query {
    CT_CACHE_QUERY_KEEP = 0, /* query string kept byte for byte */
    CT_CACHE_QUERY_DROP,     /* everything from the first '?' dropped */
    CT_CACHE_QUERY_SORT,     /* '&'-separated parameters sorted bytewise */
};

/* Key options, fixed per listener/config. HEADER_NAME (may be empty) names a
 * request header whose value joins the key (e.g. "X-Device"). */
struct ct_cache_key_opts {
    enum ct_cache_query query;
    struct ct_str header_name;
    struct ct_str cookie_name; /* a route's key_cookie: that cookie's value joins the key */
};

/* What a request contributes. HOST is the Host header (or authority) as
 * received: it is lower-cased, and ":DEFAULT_PORT" is dropped when it matches
 * (so "Example.COM:80" and "example.com" are one key for HTTP). TARGET is the
 * request target (origin-form). HEADER_VALUE is the value of opts.header_name
 * or {NULL, 0} when the request has no such header (absent and empty differ). */
struct ct_cache_key_in {
    enum ct_cache_mclass mclass;
    struct ct_str host;
    unsigned default_port;
    struct ct_str target;
    struct ct_str header_value;
    struct ct_str cookie_value; /* of opts.cookie_name; {NULL, 0}: no such cookie */
};

/* A built key: bytes compared exactly, hash used for sharding and buckets.
 * The bytes live in the caller's buffer (an arena, a stack array); the store
 * copies them when it inserts. */
struct ct_cache_key {
    uint64_t hash;
    struct ct_str bytes;
};

/* Up to this many query parameters are sorted with CT_CACHE_QUERY_SORT; a
 * target with more keeps its order (only costs hit ratio, never correctness). */
#define CT_CACHE_KEY_MAX_SORT 128

/* Bytes of buffer ct_cache_key_build() needs at most for IN. */
size_t ct_cache_key_size(const struct ct_cache_key_in *in);

/* Build the key of IN under OPTS into BUF[0..CAP) and set *KEY (its bytes
 * point into BUF). Returns CT_OK, or CT_ELIMIT if CAP is too small (use
 * ct_cache_key_size()). Pure; any thread. */
int ct_cache_key_build(const struct ct_cache_key_opts *opts, const struct ct_cache_key_in *in,
                       char *buf, size_t cap, struct ct_cache_key *key);

/* The prefix of every key of HOST whose target starts with PATH_PREFIX (method
 * class GET), for ct_cache_purge_prefix(). Query options do not apply: the
 * prefix is raw bytes. Returns CT_OK or CT_ELIMIT (CAP too small). */
int ct_cache_key_prefix(struct ct_str host, unsigned default_port, struct ct_str path_prefix,
                        char *buf, size_t cap, struct ct_str *prefix);

/* The prefix shared by every key that BASE (built without a header or a
 * cookie value) takes with some value of opts.header_name or
 * opts.cookie_name, into BUF (CAP bytes). A purge by URL must reach those
 * too: the URL alone does not say which values the clients sent. CT_ELIMIT
 * if it does not fit. */
int ct_cache_key_variants_prefix(const struct ct_cache_key *base, char *buf, size_t cap,
                                 struct ct_str *prefix);

/* Wrap raw BYTES (already a key) into *KEY with its hash. */
void ct_cache_key_from_bytes(struct ct_str bytes, struct ct_cache_key *key);

/* XXH64 (xxHash, 64-bit variant) of DATA[0..LEN) with SEED. */
uint64_t ct_cache_hash64(const void *data, size_t len, uint64_t seed);

/* ---- the store -------------------------------------------------------- */

/* The value of response field NAME (case-insensitive, RFC 9110 §5.1) in
 * OBJ's stored head, for bans on obj.http.NAME: true with *VALUE (a view into
 * the object, valid while it is referenced) for the first field of that name,
 * false when it has none. The store does not know how the proxy lays out its
 * stored head (ct_obj_meta.head is opaque to it), so the proxy supplies this.
 * Called under a shard lock (and the ban lock, read): quick, and no calls into
 * the cache but the ct_obj_* accessors. */
typedef bool ct_cache_field_fn(const struct ct_obj *obj, struct ct_str name, struct ct_str *value);

/* What the eviction hand weighs (cache_evict.c). */
enum ct_cache_evict {
    CT_CACHE_EVICT_SIEVE = 0, /* recency of use only (SIEVE, NSDI'24) */
    CT_CACHE_EVICT_COST,      /* SIEVE with GreedyDual weights: an object whose fetch
                                 cost the origin more per byte survives more passes */
};

struct ct_cache_config {
    size_t max_bytes;       /* hard cap on all counted bytes (e.g. 256 MiB) */
    size_t max_object_size; /* head + body of one object; larger: CT_ELIMIT */
    unsigned shards;        /* power of two, 1..4096; 0: 64 */
    unsigned max_variants;  /* complete variants kept per key, the oldest evicted
                               beyond (Vary: User-Agent would otherwise grow one key
                               without bound and slow its lookups); 0: 32 */
    ct_cache_field_fn *field; /* reads stored response fields for bans; NULL: every
                                 obj.http.* term sees an absent field */
    unsigned max_bans;        /* bans kept at once, ct_cache_ban_add refuses past it;
                                 0: 1000 */
    enum ct_cache_evict evict; /* 0: SIEVE */
};

/* A new empty store. Returns NULL (and sets nothing) on an invalid config:
 * max_bytes too small to hold anything (< 4 KiB), shards not a power of two,
 * max_object_size 0, above max_bytes or 4 GiB or more. The caller owns it (ct_cache_free). */
struct ct_cache *ct_cache_new(const struct ct_cache_config *cfg);

/* Free the store and every object in it. No other thread may use it any more
 * and every reference handed out must have been released (asserted: an object
 * outliving its store would give its bytes back to freed memory). */
void ct_cache_free(struct ct_cache **cachep);

/* ---- lookup ----------------------------------------------------------- */

enum ct_cache_lookup {
    CT_CACHE_MISS,  /* nothing usable; res.fetch is yours to fill (if non-NULL) */
    CT_CACHE_HIT,   /* res.obj is a fresh complete object */
    CT_CACHE_STALE, /* res.obj is complete but past its ttl (still within
                       grace + keep); res.fetch is yours to refresh it, or
                       res.busy is someone else's refresh in progress */
    CT_CACHE_BUSY,  /* res.busy is being fetched by someone else: wait on it
                       (ct_obj_wait) and look up again, or stream from it */
    CT_CACHE_PASS,  /* hit-for-miss: fetch on your own, do not store, do not wait */
};

/* Does a stored object's Vary key STORED (the bytes given to ct_obj_set_head)
 * match this request? REQ is the bytes the caller gave to lookup. Called under
 * the shard lock: must be quick and must not call into the cache. */
typedef bool ct_cache_vary_match_fn(struct ct_str stored, struct ct_str req, void *arg);

struct ct_cache_lookup_req {
    const struct ct_cache_key *key;
    struct ct_str vary;            /* request's variant bytes (opaque to the store) */
    ct_cache_vary_match_fn *match; /* NULL: stored and request bytes compared exactly */
    void *match_arg;
    bool no_insert; /* never create a BUSY object (e.g. only-if-cached, HEAD
                       you will not store) */
    bool revalidate; /* the request forbids using a stored response unvalidated
                        (its no-cache, max-age=0, RFC 9111 §5.2.1.4): a fresh match
                        is answered like a stale one (CT_CACHE_STALE with res.obj
                        and res.fetch to revalidate it, or res.busy when a fetch
                        is already running, so such requests coalesce); fresh
                        variants stay visible to every other lookup */
    bool uncounted;  /* a probe for another variant of a key the caller looked
                        up already (its one lookup is counted): in no statistic */
};

/* What a MISS found under the key (RFC 9211 §2.2 fwd= values). */
enum ct_cache_miss {
    CT_CACHE_MISS_URI = 0, /* nothing stored under the key: fwd=uri-miss */
    CT_CACHE_MISS_VARY,    /* responses stored under the key (complete or being
                              stored), none selected by the request's fields:
                              fwd=vary-miss */
    CT_CACHE_MISS_OTHER,   /* a response the request selects was there but is
                              unusable (expired, reaped by this lookup): fwd=miss */
};

/* Each pointer here is a new reference owned by the caller (or NULL). */
struct ct_cache_lookup_res {
    struct ct_obj *obj;   /* HIT, STALE: the stored object */
    struct ct_obj *busy;  /* BUSY, STALE: another caller's BUSY/STREAMING object */
    struct ct_obj *fetch; /* MISS, STALE: a new BUSY object, now linked, that makes the
                             caller THE fetcher: it must end it with ct_obj_complete,
                             ct_obj_fail or ct_obj_abandon, then release it (if it
                             releases it unended, the object is failed when the last
                             outside reference goes, so the key is not blocked for
                             ever; waiters meanwhile wait for their timeout). NULL when
                             no_insert, or when not even the entry fits in memory
                             (then fetch on your own and do not store). */
    enum ct_cache_miss miss; /* MISS only (URI otherwise): what the key held */
};

/* Look REQ up at time NOW, atomically with creating the BUSY object on a miss,
 * so concurrent misses on one key coalesce to one fetch. A variant stored with
 * empty Vary bytes (the response had no Vary) matches every request without
 * calling MATCH. Lazily reclaims
 * expired variants met on the way (past ttl + grace + keep) and expired
 * hit-for-miss markers. Matching picks the newest variant that matches.
 * A BUSY object whose head has not arrived yet has no Vary key: it makes
 * requests with no fresh variant wait (Varnish does the same). */
enum ct_cache_lookup ct_cache_lookup(struct ct_cache *cache, const struct ct_cache_lookup_req *req,
                                     ct_time_t now, struct ct_cache_lookup_res *res);

/* Release every reference in RES (the NULL ones are skipped). */
void ct_cache_lookup_res_release(struct ct_cache_lookup_res *res);

/* The MISS lookup of KEY was answered from another of its variants after
 * all (a coding derived from a stored one, proxy/core/cache_derive.h): it
 * counts as the hit it was, not as a miss, and its fetch slot *FETCH (if
 * FETCH and *FETCH are not NULL; taken, *FETCH = NULL) is handed back unused: failed, so its
 * waiters look again, without counting a failed fetch. Any thread. */
void ct_cache_lookup_answered(struct ct_cache *cache, const struct ct_cache_key *key,
                              struct ct_obj **fetch);

/* ---- purge and expiry -------------------------------------------------- */

/* How a purge removes: HARD unlinks (the next request fetches anew); SOFT
 * marks stale at `now` (Fastly's soft purge): the object is then served only
 * as stale-while-revalidate / stale-if-error / max-stale allow, revalidated
 * with its validators, and refreshed by one fetch while the others wait or
 * get it stale, so a mass soft purge costs the origin one request per
 * object. Objects without validators or a stale window simply expire. */
enum ct_cache_purge { CT_CACHE_PURGE_HARD, CT_CACHE_PURGE_SOFT };

/* Remove KEY with all its variants, BUSY ones included (a BUSY object purged
 * mid-fetch is never found by later lookups; the fetcher and its streaming
 * readers keep their references). Returns the number of objects removed
 * (0: nothing was stored under KEY). */
size_t ct_cache_purge(struct ct_cache *cache, const struct ct_cache_key *key);

/* Remove every key whose bytes start with PREFIX (see ct_cache_key_prefix).
 * Cost: a scan of the whole table, O(keys), one shard locked at a time (a
 * lookup waits at most for the scan of one shard, 1/shards of the table).
 * Returns the number of objects removed. */
size_t ct_cache_purge_prefix(struct ct_cache *cache, struct ct_str prefix);

/* ct_cache_purge and ct_cache_purge_prefix with a MODE (HARD: the same). */
size_t ct_cache_purge_key_mode(struct ct_cache *cache, const struct ct_cache_key *key,
                               enum ct_cache_purge mode, ct_time_t now);
size_t ct_cache_purge_prefix_mode(struct ct_cache *cache, struct ct_str prefix,
                                  enum ct_cache_purge mode, ct_time_t now);

/* ---- tags (surrogate keys, cache_tags.c) ------------------------------- */

/* Limits per tag and per object, as Fastly (keys of 1 KiB) and Akamai (128
 * tags per object) cap them. The caller (the proxy) applies its configured
 * limits, at most these, and counts what it refuses. */
#define CT_CACHE_TAG_MAX_LEN 1024
#define CT_CACHE_TAGS_MAX 128

/* The tags of one line VALUE of the tag field NAME, appended to OUT[*N..MAX)
 * (*N advanced): Fastly's Surrogate-Key and Varnish's xkey list them with
 * spaces, Cloudflare's Cache-Tag and any other field with commas; each is
 * OWS-trimmed, empty ones skipped. Views point into VALUE. Returns how many
 * were left out: longer than MAX_LEN, or past MAX. Pure; any thread. */
size_t ct_cache_tags_split(struct ct_str name, struct ct_str value, struct ct_str *out, size_t *n,
                           size_t max, size_t max_len);

/* Purge every object (every variant, every key) tagged exactly TAG (bytes
 * compared as they are: the proxy decides about case). Cost: O(objects with
 * the tag), one shard lock at a time. Returns the number purged. Memory of the
 * index: 32 bytes per (object, tag) link plus one allocation per tagged object,
 * and each distinct tag once (ct_cache_stats: tag_bytes). */
size_t ct_cache_purge_tag(struct ct_cache *cache, struct ct_str tag, enum ct_cache_purge mode,
                          ct_time_t now);

/* ---- bans (cache_ban.c) -------------------------------------------------- */

/* A ban invalidates every object stored BEFORE it that matches an expression
 * over the object's own fields (Varnish's ban(), without req.*):
 *
 *     obj.http.x-tag ~ "^a" && obj.url ^= "/img/"
 *
 *   expr   := term ( && term )*        (at most CT_CACHE_BAN_MAX_TERMS terms)
 *   term   := FIELD OP VALUE
 *   FIELD  := obj.url    the request target, query included, as in the key
 *           | obj.host   lower-cased, the default port dropped, as in the key
 *           | obj.status the stored status, as decimal text
 *           | obj.http.NAME  the first stored response field NAME (any case)
 *   OP     := == | != | ~ (PCRE2 regex, JIT-compiled once) | !~ | ^= (starts with)
 *   VALUE  := "text" with \" and \\ escapes (a bare number for obj.status)
 *
 * An absent field equals nothing and matches no regex: ==, ~ and ^= are false
 * for it, != and !~ true. req.* terms are refused: they need the request,
 * which the lurker does not have (varnishcache#1635: such bans pile up).
 *
 * Applied twice, so that every older object is tested once per ban:
 * - lazily, by a lookup that meets an object not yet tested against every
 *   ban newer than the last one it passed (cost: nothing while no ban is
 *   active, one comparison for an object already tested);
 * - by the lurker (ct_cache_ban_lurk), which walks every shard's objects in
 *   bounded slices; when a walk that started after a ban was added ends,
 *   every object older than the ban has been tested, and the ban is dropped.
 * A match removes the object (as a purge does) or, for a soft ban, marks it
 * stale at the ban's time (as a soft purge does).
 *
 * Locks. Order: the lurker's lock, then an object's shard lock, then the ban
 * list lock (a rwlock: read by every test, written by add and drop). With the
 * tag index (cache_tags.c) the whole order is: obj shard -> tag shard, and
 * obj shard -> ban list; a tag shard lock and the ban lock are never held
 * together. */
#define CT_CACHE_BAN_MAX_LEN 4096 /* bytes of one expression */
#define CT_CACHE_BAN_MAX_TERMS 16

/* Add a ban on EXPR (LEN bytes) at NOW; SOFT marks matches stale instead of
 * removing them. On CT_OK *ID is its number (increasing from 1). Errors:
 * CT_EPROTO (EXPR is not a ban: ERR says at which column and why, e.g.
 * "column 12: expected ==, !=, ~, !~ or ^="), CT_ELIMIT (max_bans bans are
 * active, or the ban's bytes do not fit the budget even after evicting every
 * object; ERR says so). The ban's bytes are charged to the store's budget
 * until it is dropped (ct_cache_stats: ban_bytes), evicting objects if need
 * be. ERR (ERRLEN > 0 bytes) is always NUL-terminated. No lock may be held. */
int ct_cache_ban_add(struct ct_cache *cache, const char *expr, size_t len, bool soft,
                     ct_time_t now, uint64_t *id, char *err, size_t errlen);

/* One active ban, as ct_cache_ban_each shows it. */
struct ct_cache_ban_info {
    uint64_t id;
    ct_time_t created;
    struct ct_str expr; /* as given; valid during the callback only */
    bool soft;
    uint64_t tested; /* objects tested against it (lookups and the lurker) */
    uint64_t banned; /* objects it removed or marked stale */
};

/* Call FN for every active ban, newest first, under the ban lock (FN must not
 * call into the cache). Returns the number of bans. */
/* Change the bound on active bans (a reload): bans already active stay, and
 * ct_cache_ban_add refuses while at least MAX_BANS (1..; 0: 1000) are. */
void ct_cache_ban_set_max(struct ct_cache *cache, unsigned max_bans);

size_t ct_cache_ban_each(struct ct_cache *cache,
                         void (*fn)(const struct ct_cache_ban_info *ban, void *arg), void *arg);

/* The lurker, for a periodic timer on one thread: test up to BUDGET objects
 * (continuing where the last call stopped) against the bans they have not
 * passed, and drop the bans that every older object has been tested against.
 * Holds a shard lock for at most CT_CACHE_BAN_LURK_RUN objects at a time.
 * Returns the number of objects examined (0: no ban is active). */
#define CT_CACHE_BAN_LURK_RUN 64
size_t ct_cache_ban_lurk(struct ct_cache *cache, ct_time_t now, size_t budget);

/* Purges of many objects (by tag, by prefix) take them out of the table at
 * once, so no lookup finds them, and leave their tag unlinks and frees to
 * this, for a background thread (the ban lurker's): unlink and release up to
 * BUDGET of them, CT_CACHE_RECLAIM_RUN a time is one short slice. Their
 * bytes stay charged until then (a full cache reclaims them before it
 * evicts). Returns the number reclaimed (0: none was waiting). */
#define CT_CACHE_RECLAIM_RUN 64
size_t ct_cache_reclaim(struct ct_cache *cache, size_t budget);

/* Incremental sweep, for a periodic timer: examine at most BUDGET objects
 * (continuing where the last call stopped) and reclaim those past
 * ttl + grace + keep, and expired hit-for-miss markers. Returns the number
 * reclaimed. */
size_t ct_cache_expire_some(struct ct_cache *cache, ct_time_t now, size_t budget);

/* Would an object of BYTES (head + body) be accepted? (max_object_size only;
 * memory is reserved later and may still fail.) Lets the proxy pass large
 * responses through without trying. */
bool ct_cache_fits(const struct ct_cache *cache, uint64_t bytes);

/* ---- stats --------------------------------------------------------------- */

/* Counters, summed over shards with relaxed loads: cheap, never stops workers,
 * each counter exact but the set not a snapshot of one instant. */
#define CT_CACHE_STATS_TABLE(X)                                                                    \
    X(lookups, "lookups")                                                                          \
    X(hits, "fresh hits")                                                                          \
    X(stale, "stale objects found")                                                                \
    X(misses, "misses (fetch created or not)")                                                     \
    X(busy, "lookups told to wait on a busy object")                                               \
    X(pass, "hit-for-miss answers")                                                                \
    X(inserts, "objects completed and made visible")                                               \
    X(failed, "fetches failed")                                                                    \
    X(abandoned, "fetches abandoned as uncacheable")                                               \
    X(evictions, "objects evicted for memory")                                                     \
    X(expired, "objects reclaimed past ttl+grace+keep")                                            \
    X(purged, "objects removed by purge")                                                          \
    X(purge_deferred, "purged objects whose tags and memory a large purge left to the lurker")    \
    X(soft_purged, "objects marked stale by a soft purge")                                         \
    X(replaced, "objects replaced by a newer variant")                                             \
    X(nomem, "reservations refused (cap reached, nothing evictable)")                        \
    X(banned, "objects removed by a ban")                                                      \
    X(soft_banned, "objects marked stale by a soft ban")                                       \
    X(ban_tested, "objects tested against the bans (lookups and the lurker)")                  \
    X(ban_lurker_tested, "objects the ban lurker tested")                                      \
    X(ban_regex_limited, "objects a ban regex gave up on (its match limit): not banned")        \
    X(restored, "objects loaded from a snapshot at start (cache.persist)")                     \
    X(restore_refused, "snapshot records refused: bad checksum, malformed or truncated")

struct ct_cache_stats {
#define CT_CACHE_STAT_FIELD(name, text) uint64_t name;
    CT_CACHE_STATS_TABLE(CT_CACHE_STAT_FIELD)
#undef CT_CACHE_STAT_FIELD
    uint64_t bytes;     /* counted bytes in use now */
    uint64_t max_bytes; /* the cap */
    uint64_t objects;   /* objects alive (linked or still referenced) */
    uint64_t keys;      /* distinct keys in the table */
    uint64_t tags;      /* distinct tags in the index */
    uint64_t tag_links; /* (object, tag) links */
    uint64_t tag_bytes; /* the index's counted bytes (part of `bytes`) */
    uint64_t bans_active;    /* bans not yet dropped by the lurker */
    uint64_t bans_added;     /* bans accepted since start */
    uint64_t bans_refused;   /* ct_cache_ban_add refusals: the list was full */
    uint64_t bans_completed; /* bans dropped: every older object was tested */
    uint64_t ban_lurker_progress; /* per mille of the lurker's current walk (1000: idle) */
    uint64_t ban_bytes; /* the active bans' counted bytes: structs, texts, compiled and
                           JIT regex code (part of `bytes`) */
    uint64_t reclaim_pending; /* purged objects the lurker has not freed yet (ct_cache_reclaim) */
};

void ct_cache_stats(const struct ct_cache *cache, struct ct_cache_stats *st);

/* ---- snapshot (cache_persist.c) ------------------------------------------ */

/* The store as bytes (a file written at a graceful stop, read at the next
 * start: cache.persist), and back. The layout is described in
 * cache_persist.c; a reader refuses a header of another version or key
 * scheme, and each record carries its own checksum. */
#define CT_CACHE_PERSIST_VERSION 2
#define CT_CACHE_PERSIST_HDR_LEN 64
/* Bump when cache_key.c lays key bytes out differently: stored keys would
 * no longer be the keys requests build. */
#define CT_CACHE_KEY_SCHEME 1

/* A sink for the bytes: CT_OK, or an error that stops the save (returned). */
typedef int ct_cache_persist_write_fn(void *arg, const void *p, size_t n);

struct ct_cache_persist_counts {
    uint64_t objects;    /* records written */
    uint64_t body_bytes; /* body bytes in them */
    uint64_t file_bytes; /* bytes given to the sink, header included */
};

/* Write the header and one record per complete object to WRITE (oldest
 * first per shard, so a smaller store loading them keeps the newest). Bans
 * not yet applied are applied first (a hard match is removed, a soft one
 * saved stale); objects past ttl + grace + keep at NOW are left out. BUILD
 * (up to 31 bytes kept) names the writer, for the reader's logs. Returns
 * CT_OK or WRITE's first error (then the bytes written are incomplete). Any
 * thread; meant for a store no worker uses any more. */
int ct_cache_persist_save(struct ct_cache *cache, ct_time_t now, const char *build,
                          ct_cache_persist_write_fn *write, void *arg,
                          struct ct_cache_persist_counts *counts);

/* What a header says. */
struct ct_cache_persist_hdr {
    uint32_t version, key_scheme;
    ct_time_t written;
    char build[32]; /* NUL-terminated, printable */
};

/* The header ct_cache_persist_save writes, into OUT. */
void ct_cache_persist_header(unsigned char out[CT_CACHE_PERSIST_HDR_LEN], ct_time_t written,
                             const char *build);

/* Check the header at BUF[0..LEN): CT_OK with *H filled, or CT_EPROTO with
 * the reason in ERR (ERRLEN > 0 bytes, NUL-terminated): too short, not a
 * snapshot, checksum, another format version or key scheme. Pure. */
int ct_cache_persist_header_check(const void *buf, size_t len, struct ct_cache_persist_hdr *h,
                                  char *err, size_t errlen);

/* What became of a well-formed record. */
enum ct_cache_persist_fate {
    CT_CACHE_PERSIST_LOADED,    /* stored, as it was (its age grew with the time on disk) */
    CT_CACHE_PERSIST_EXPIRED,   /* past ttl + grace + keep now: dropped */
    CT_CACHE_PERSIST_DUPLICATE, /* the store has that key and variant already */
    CT_CACHE_PERSIST_NOROOM,    /* larger than max_object_size, or no memory even after
                                   evicting (a load larger than the store evicts the
                                   oldest loaded objects instead, as any fill does) */
    CT_CACHE_PERSIST__FATES
};

struct ct_cache_persist_report {
    bool header_refused; /* nothing loaded: why says why */
    struct ct_cache_persist_hdr hdr;
    uint64_t records;    /* records met (refused ones included) */
    uint64_t fates[CT_CACHE_PERSIST__FATES];
    uint64_t body_bytes; /* body bytes of the loaded ones */
    uint64_t refused;    /* records whose checksum failed, malformed or truncated */
    char why[160];       /* the header's refusal, or the first record's, "" if none */
};

/* Load the snapshot BUF[0..LEN) into CACHE at NOW through the path that
 * fills objects from origins (so eviction, tags, variants and the cap work
 * as for any fill): objects already expired are dropped; Age is counted
 * from the stored response_time, so it includes the time on disk. A bad
 * header loads nothing; a bad record is skipped (counted, the first reason
 * kept), a truncated one ends the load. Counts restored and refused records
 * in the store's stats. Never trusts BUF: any bytes are safe. Any thread. */
void ct_cache_persist_load(struct ct_cache *cache, const void *buf, size_t len, ct_time_t now,
                           struct ct_cache_persist_report *rep);

/* ---- objects ------------------------------------------------------------ */

enum ct_obj_state {
    CT_OBJ_BUSY = 0,  /* created by a miss, no head yet */
    CT_OBJ_STREAMING, /* head set, body filling */
    CT_OBJ_COMPLETE,  /* immutable, visible to lookups */
    CT_OBJ_FAILED,    /* fetch failed: never complete; body may be truncated */
    CT_OBJ_ABANDONED, /* uncacheable: waiters fetch on their own */
};

/* What the fetcher knows once the response head is in (from cache_policy). */
struct ct_obj_meta {
    unsigned status;
    struct ct_str head; /* the header block, rendered once, without the per-hit
                           fields (Age, Cache-Status, Connection) */
    struct ct_str etag; /* validators, empty if none */
    struct ct_str last_modified;
    struct ct_str date;      /* the response's Date value, for If-Modified-Since without
                                Last-Modified */
    struct ct_str vary;      /* Vary secondary key bytes, matched at lookup */
    ct_time_t response_time; /* RFC 9111 §4.2.3 response_time */
    double initial_age;      /* corrected_initial_age, seconds (>= 0) */
    double ttl;              /* freshness_lifetime, seconds */
    double grace;            /* stale-while-revalidate / operator grace, seconds
                                (stored as float: ~1 s precision up to 190 days) */
    double keep;             /* kept past grace for revalidation only, seconds */
    uint64_t body_hint;      /* Content-Length if known (one contiguous segment), else 0 */
    bool body_hint_max;      /* body_hint is a bound, not the length (a body encoded as it
                                fills is at most about its origin's length): used only when
                                the first segment can be a memfd mapping (so that the body
                                is one run of a file, for sendfile), and the pages the body
                                leaves untouched go back to the cap at ct_obj_complete */
    struct ct_obj *body_src; /* NULL, or a COMPLETE object whose body this one shares by
                                reference instead of its own (a 304 revalidation updates
                                the head and keeps the body, RFC 9111 §4.3.4); the new
                                object takes its own reference on it; no ct_obj_append */
    const struct ct_str *tags; /* tags (surrogate keys) for ct_cache_purge_tag: each 1 to
                                  CT_CACHE_TAG_MAX_LEN bytes, at most CT_CACHE_TAGS_MAX */
    size_t ntags;
};

/* New reference on OBJ; returns OBJ. */
struct ct_obj *ct_obj_ref(struct ct_obj *obj);

/* Drop the reference *OBJP and set *OBJP = NULL (NULL *OBJP: no-op). The last
 * release frees the object and gives its bytes back to the cap. */
void ct_obj_release(struct ct_obj **objp);

/* Same, with the signature of libevent's evbuffer_ref_cleanup_cb, so the proxy
 * can pass it directly to evbuffer_add_reference(buf, ptr, len, ct_obj_release_cb,
 * ct_obj_ref(obj)): the evbuffer then owns one reference per handed-out chunk. */
void ct_obj_release_cb(const void *data, size_t len, void *obj);

enum ct_obj_state ct_obj_state(const struct ct_obj *obj); /* acquire load */

/* Fetcher only, on a BUSY object: set the head and metadata (copied) and go
 * STREAMING; wakes the waiters. Reserves head bytes and, if body_hint is set,
 * one contiguous body segment of that size. Returns CT_OK, CT_ELIMIT (object
 * over max_object_size, or memory not available even after eviction: the
 * object stays BUSY; the fetcher should ct_obj_abandon it). */
int ct_obj_set_head(struct ct_obj *obj, const struct ct_obj_meta *meta);

/* Fetcher only, on a STREAMING object: append DATA[0..LEN) (copied) to the
 * body and wake the waiters. Returns CT_OK or CT_ELIMIT (over max_object_size
 * or no memory; nothing appended: the fetcher should ct_obj_fail it, streaming
 * readers will see a truncated body). */
int ct_obj_append(struct ct_obj *obj, const void *data, size_t len);

/* Fetcher only: STREAMING -> COMPLETE at NOW. The object becomes visible to
 * later lookups (unless purged meanwhile), replaces older COMPLETE variants of
 * the same key with the same Vary bytes and any hit-for-miss marker, and wakes
 * the waiters. */
void ct_obj_complete(struct ct_obj *obj, ct_time_t now);

/* Fetcher only, before ct_obj_complete: what fetching OBJ cost the origin,
 * microseconds from the request sent to the last body byte (capped at
 * UINT32_MAX, 71 minutes). A hit on OBJ saved the origin that much work
 * (cachet_origin_seconds_saved_total). An object made by ct_obj_set_head with
 * a body_src (a 304 update) starts with its body's cost: the 304 was cheap,
 * but a hit on the result saves the full fetch it stands for. Default 0. */
void ct_obj_set_fetch_us(struct ct_obj *obj, uint64_t fetch_us);
/* OBJ's fetch cost, microseconds (above); any thread once COMPLETE. */
uint32_t ct_obj_fetch_us(const struct ct_obj *obj);

/* Fetcher only: BUSY/STREAMING -> FAILED. Unlinked at once, waiters woken; it
 * is never served as complete (streaming readers see CT_OBJ_BODY_FAILED). */
void ct_obj_fail(struct ct_obj *obj);

/* Fetcher only: BUSY/STREAMING -> ABANDONED (the response is not storable).
 * Unlinked, waiters woken (they fetch on their own). With HFM_TTL > 0 a
 * hit-for-miss marker valid until NOW + HFM_TTL makes later lookups of this key
 * answer CT_CACHE_PASS instead of queueing behind a fetch. The marker covers
 * the key (all variants; a fresh stored variant still hits first); it is
 * replaced by the next object completed under the key, and evictable. */
void ct_obj_abandon(struct ct_obj *obj, ct_time_t now, double hfm_ttl);

/* Accessors. Valid once the head is set (STREAMING or later); immutable then.
 * The views point into the object and live as long as a reference does. */
unsigned ct_obj_status(const struct ct_obj *obj);
struct ct_str ct_obj_head(const struct ct_obj *obj);
struct ct_str ct_obj_etag(const struct ct_obj *obj);
struct ct_str ct_obj_last_modified(const struct ct_obj *obj);
struct ct_str ct_obj_date(const struct ct_obj *obj);
struct ct_str ct_obj_vary(const struct ct_obj *obj);
ct_time_t ct_obj_response_time(const struct ct_obj *obj);
/* RFC 9111 §4.2.3 current_age = corrected_initial_age + (now - response_time). */
double ct_obj_age(const struct ct_obj *obj, ct_time_t now);
/* ttl - age: > 0 while fresh. */
double ct_obj_ttl_left(const struct ct_obj *obj, ct_time_t now);
bool ct_obj_is_fresh(const struct ct_obj *obj, ct_time_t now);
bool ct_obj_in_grace(const struct ct_obj *obj, ct_time_t now); /* stale, within grace */
/* Copy OBJ's tags, while it is in the table, into OUT (at most MAX) with
 * their bytes in BUF[0..CAP) (tags that do not fit are left out). Returns the
 * count: 0 for an untagged object or one that has left the table. */
size_t ct_obj_tags(struct ct_obj *obj, struct ct_str *out, size_t max, char *buf, size_t cap);
/* When it stops being fresh: response_time - initial_age + ttl, or the time
 * of a soft purge if that came first (the only change after COMPLETE). */
ct_time_t ct_obj_expires(const struct ct_obj *obj);
/* Counted bytes of this object (struct, head, validators, body capacity);
 * final once COMPLETE (read it from other threads only then). */
size_t ct_obj_size(const struct ct_obj *obj);

/* ---- body ----------------------------------------------------------------- */

/* A reader's position in a body; caller-owned, start with CT_OBJ_BODY_POS_INIT. */
struct ct_obj_body_pos {
    const void *_seg; /* current segment (private) */
    size_t _seg_off;  /* offset inside it (private) */
    uint64_t off;     /* bytes of body consumed so far */
};
#define CT_OBJ_BODY_POS_INIT                                                                       \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

enum ct_obj_body {
    CT_OBJ_BODY_DATA,   /* *chunk holds the next bytes; pos advanced */
    CT_OBJ_BODY_WAIT,   /* no more bytes yet (BUSY/STREAMING): ct_obj_wait */
    CT_OBJ_BODY_END,    /* COMPLETE and all read */
    CT_OBJ_BODY_FAILED, /* FAILED or ABANDONED: what was read is a truncated body
                           (the fetcher itself keeps streaming from its origin) */
};

/* Next chunk of OBJ's body after POS, without a lock. CHUNK points into the
 * object's memory and never moves: hand it out by reference with one
 * ct_obj_ref() per chunk released by ct_obj_release_cb. MAX (0: no limit)
 * caps the chunk length. Any thread; one POS per reader. */
enum ct_obj_body ct_obj_body_next(const struct ct_obj *obj, struct ct_obj_body_pos *pos, size_t max,
                                  struct ct_str *chunk);

/* Move POS to body offset OFF (for Range); returns CT_OK or CT_ELIMIT if the
 * body is not that long yet. */
int ct_obj_body_seek(const struct ct_obj *obj, struct ct_obj_body_pos *pos, uint64_t off);

/* Body bytes available now (final once COMPLETE). */
uint64_t ct_obj_body_len(const struct ct_obj *obj);

/* A complete object whose body lives in a memfd (Content-Length bodies of
 * CT_CACHE_MAPPED_MIN bytes and more, while the process has file descriptors
 * to spare): that file and the offset in it of body byte 0, for sendfile(2);
 * -1 otherwise. The file is the object's memory, not a copy: it stays open
 * while a reference is held, and the bytes never change. */
int ct_obj_body_fd(const struct ct_obj *obj, off_t *off);

/* ---- waiting on a busy object --------------------------------------------- */

/* A one-shot wake-up registration, embedded in the caller's struct (e.g. the
 * client connection). WAKE runs on the fetcher's thread, under the shard lock:
 * it must be quick, must not block and must not call into the cache (write an
 * eventfd, event_active(), signal a condvar). */
struct ct_cache_waiter {
    unsigned magic; /* CT_CACHE_WAITER_MAGIC, set by ct_cache_waiter_init */
    void (*wake)(void *arg);
    void *arg;
    CT_LIST_LINK(ct_cache_waiter) _link; /* private: on the object's list */
    struct ct_obj *_obj;                   /* private: registered on (no reference) */
    void *_shard;                          /* private: lock guarding the above */
    bool _end_only;                        /* private: CT_OBJ_WAIT_END (appends skip it) */
};
#define CT_CACHE_WAITER_MAGIC 0x57a17e25u

void ct_cache_waiter_init(struct ct_cache_waiter *w, void (*wake)(void *), void *arg);

/* Register W on OBJ, to be woken once on the next change (head set, bytes
 * appended, complete, failed, abandoned). Returns true if registered; false if
 * there is already something new for a reader that has HAVE_BYTES of the body
 * and saw STATE_SEEN (so the caller reads now instead of waiting: no lost
 * wake-up). HAVE_BYTES CT_OBJ_WAIT_END on a STREAMING object: woken only when
 * it leaves STREAMING, not per append (a reader that answers only from the
 * end). Registering twice is a programming error (asserted). */
#define CT_OBJ_WAIT_END UINT64_MAX
bool ct_obj_wait(struct ct_obj *obj, struct ct_cache_waiter *w, enum ct_obj_state state_seen,
                 uint64_t have_bytes);

/* Unregister W if still registered (timeout, client gone). After it returns,
 * WAKE is not running and will not run. Safe if W already fired. */
void ct_obj_unwait(struct ct_cache_waiter *w);

#endif /* CT_CACHE_H */
