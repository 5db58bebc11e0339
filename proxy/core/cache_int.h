/*
 * proxy/core/cache_int.h: what the files of the request core share and
 * nobody else sees. Inside proxy/core only.
 *
 * Objects and owners:
 *   struct ct_cache   one per process, made by main from the config, borrowed
 *                     by every worker through px->cache (shared; thread-safe)
 *   struct ct_wcache  one per worker (w->wc, wcache.c): its policy options,
 *                     its expiry sweep timer and its wake queue (the only
 *                     part other threads touch, under its mutex)
 *   struct ct_creq    the request's cache part (r->cr, req.c), made at the
 *                     first request of a carrier and reset for each: the key
 *                     buffer, the objects it holds references on, its waiter
 *
 * The files call one way (scripts/check_layers.sh checks it):
 *
 *   steps   cache_req.c (cache, purge, lookup, wait), cache_deliver.c
 *           (deliver, stream), cache_derive.c (decode), route_step.c,
 *           fetch.c (recv, route, pass, fill, done; and the fetch), cache_bg.c
 *   fill    cache_fill.c: each piece of the origin's response into the object
 *   leaves  req.c (start and end of every request, waiting), wcache.c (the
 *           worker's side), stored.c (the stored head), fleet_step.c,
 *           req_log.c, req_fsm.c (the step loop), cache_ban_glue.c
 */
#ifndef CT_PROXY_CACHE_INT_H
#define CT_PROXY_CACHE_INT_H

#include <pthread.h>

#include "cache/cache.h"
#include "common/list.h"
#include "http/http_ae.h"
#include "proxy/core/core.h"
#include "proxy/core/stored.h"
#include "proxy/upstream/wire.h"

struct ct_creq;
struct ct_wcache;
struct ct_bgreq;

struct ct_creq {
    unsigned magic;
#define CT_CREQ_MAGIC 0xcac4e5e1u
    struct ct_req *r;
    unsigned cs;           /* enum ct_stats_cs */
    char *keybuf;
    size_t keycap;
    struct ct_cache_key key;
    struct ct_obj *obj;    /* being delivered (DELIVER, STREAM), or busy one waited on (WAIT) */
    struct ct_obj *fill;   /* we are its fetcher */
    struct ct_obj *stale;  /* stale object being revalidated / refreshed */
    const char *fwd_kind;  /* RFC 9211 fwd= of a forwarded answer: "uri-miss",
                              "vary-miss", "miss" (from the store), "stale", or
                              "request" (the client's no-cache / max-age=0 made us
                              validate a fresh object) */
    bool validate;         /* cr->stale is fresh, validated for the client's
                              directives: never served instead of an error */
    struct ct_obj_body_pos pos;
    uint64_t body_left;    /* bytes still to deliver (Range); UINT64_MAX: to the end */
    uint64_t skip;         /* Range start not yet in the object: bytes to drop */
    bool self;             /* the fetcher reads its own fill like a waiter (it wants
                              a Range or asked a conditional we answer ourselves) */
    bool stripped;         /* the client's conditionals / Range were not forwarded */
    bool range_hold;       /* STREAM: a Range on cr->obj, whose length is known only
                              once it is complete, waits for that (ct_cache_emit) */
    bool hold_close;       /* ... and the force_close it was asked with */
    /* a background refresh (cache_bg.c) */
    unsigned bg_port;      /* the triggering client's default port (key); 0: not one */
    bool discard;          /* the origin's body goes nowhere */
    bool store_ok;         /* fill: the head was stored */
    bool bg;               /* fill in the background: the client has its answer */
    struct evbuffer *scratch; /* background fill: the origin's body lands here */
    ct_time_t req_time;    /* RFC 9111 §4.2.3 request_time */
    unsigned relookups;
    /* the request as forwarded (fill / revalidation) */
    struct ct_http_msg fwd;
    struct ct_http_field *fwd_fields;
    size_t fwd_cap;
    /* compression (issue 18) */
    int ae_class;          /* enum ct_coding of the request's Accept-Encoding;
                              CT_CODING_NONE: left as sent (compression off, or
                              nothing acceptable) */
    struct ct_http_msg ae_msg; /* r->msg with Accept-Encoding replaced by the class */
    struct ct_http_field *ae_fields;
    size_t ae_cap;
    struct ct_codec *enc;  /* fill: the origin's body encoded into the object */
    uint64_t enc_bound;    /* ... the origin's Content-Length (0: none): what the
                              encoded body is reserved for (ct_obj_meta.body_hint_max) */
    struct evbuffer *zbuf; /* the encoder's output, to the object then the client */
    struct ct_ce_head *otf_head; /* compression.on_the_fly: the head sent, kept
                                    until the request ends */
    const struct ct_http_msg *ae_orig; /* the client's message, when r->msg is ae_msg */
    struct ct_derive *derive; /* a decoded delivery in progress (cache_derive.c, step DECODE) */
    void (*derive_free)(struct ct_derive **); /* ... its end, set with it: req.c calls no step */
    struct ct_str cstatus; /* Cache-Status of the answer: forwarded, delivered or synth */
    char cstatus_buf[CT_REQ_CSTATUS_MAX];
    /* SYNTH: our own short answer */
    unsigned synth_status;
    struct ct_str synth_body;
    /* waiting */
    struct ct_cache_waiter waiter;
    bool waiting;
    bool registered;       /* a waiter was registered since the last dequeue */
    bool timer_on;
    struct event *timer;   /* waiter timeout */
    uint64_t held_len;     /* body bytes of the object waited on when the timer was
                              last armed: a fill held for its end that grew since is
                              waited for again (on_wait_timeout) */
    bool queued;           /* on the worker's wake queue (under wc->mu) */
    CT_LIST_LINK(ct_creq) wq_link; /* wc->wq, while queued */
};

struct ct_wcache {
    unsigned magic;
#define CT_WCACHE_MAGIC 0x3cac4e11u
    struct ct_worker *w;
    struct ct_cache *cache;
    const struct ct_conf *cf;             /* the configuration popts were built from */
    /* [0] honour client CC, [1] ignore it; [2], [3] the same storing
     * Set-Cookie responses (for routes with strip_set_cookie, which store
     * them without the field) */
    struct ct_cache_policy_opts popts[4];
    struct ct_cache_key_opts kopts;
    struct event *sweep;
    int efd;               /* eventfd: other threads wake this worker's waiters */
    pthread_t thread;      /* its loop's thread, once bound (ct_wcache_bind) */
    bool bound;
    struct event *wake_ev;
    pthread_mutex_t mu;    /* guards the queue below */
    CT_LIST_HEAD(ct_creq) wq;      /* readers woken, in the order of their wakes */
    struct ct_listener_conf bg_lc; /* what background refreshes read of "their listener" */
    CT_LIST_HEAD(ct_bgreq) bgreqs; /* background refreshes and fills in flight (cache_bg.c) */
    unsigned nbg;                  /* ... how many (at most CT_CACHE_BG_MAX) */
    struct ct_http_date_cache date; /* Date of this second, formatted once */
};

/* ---- wcache.c: the worker's cache side ------------------------------------ */

/* The waiter callback of every creq (ct_cache_waiter_init): any thread,
 * under the object's shard lock; queues CR's request on its worker. */
void ct_wcache_waiter_wake(void *arg);
/* Take CR off its worker's wake queue (a wake not run yet is dropped). */
void ct_wcache_dequeue(struct ct_creq *cr);

/* ---- req.c: every request's start and end ---------------------------------- */

/* A new creq for R (r->cr). */
struct ct_creq *ct_creq_new(struct ct_req *r);
/* Drop what the last request held. A fill still unended here was cut short. */
void ct_creq_reset(struct ct_creq *cr);
/* Register on cr->obj; false if there is news already (read now). */
bool ct_creq_wait_obj(struct ct_creq *cr, enum ct_obj_state seen, uint64_t have);
/* Unregister cr's waiter, dequeue its wake, stop its timer. */
void ct_creq_unwait(struct ct_creq *cr);
/* The answer's Cache-Status (cr->cstatus), formatted into cr->cstatus_buf. */
void ct_creq_set_status(struct ct_creq *cr, const char *fmt, ...) CT_PRINTF(2, 3);
/* Did R's request come over HTTPS? Its listener's scheme, or for a
 * background refresh the triggering client's (so the refresh carries the
 * original X-Forwarded-Proto). */
bool ct_req_https(const struct ct_req *r);
/* How the cache took part in R's current request (enum ct_stats_cs). */
unsigned ct_req_cs(const struct ct_req *r);
/* The storage policy options for R (its listener's and route's say). */
const struct ct_cache_policy_opts *ct_req_popts(const struct ct_req *r);
/* Build the key of TARGET for R's request into cr->keybuf / *KEY. */
bool ct_req_key_for(struct ct_req *r, struct ct_str target, struct ct_cache_key *key);
/* R's response starts: its head is written next (phase SEND, proto->respond). */
void ct_req_respond(struct ct_req *r);
/* The response is out: release what it held, flush, next request (R may be
 * gone after this). */
void ct_req_finish(struct ct_req *r);
/* R's next step is SYNTH: STATUS with BODY (a view that must live until
 * the step ran) and the Cache-Status set in cr->cstatus. */
void ct_req_to_synth(struct ct_req *r, unsigned status, struct ct_str body);
/* Answer R with a short response of our own (a route's redirect, fixed
 * answer or 403; proxy/core/route_step.c) through its protocol's send_synth,
 * and finish it. R may be gone afterwards. */
void ct_req_answer(struct ct_req *r, unsigned status, struct ct_str body, struct ct_str cstatus);
/* R's next step delivers OBJ (a new reference, taken) with CSTATUS (copied)
 * as its whole response (step DELIVER; FETCH -> SEND, then the next
 * request). */
void ct_req_to_deliver(struct ct_req *r, struct ct_obj *obj, struct ct_str cstatus);
/* May STALE be served instead of an origin error at NOW (RFC 5861 §4, or the
 * operator's stale_if_error)? */
bool ct_req_sie_ok(struct ct_req *r, struct ct_obj *stale, ct_time_t now);

/* ---- fetch.c ------------------------------------------------------------------ */

/* The fill R fetches goes on as a request of its own (the null protocol),
 * for the object's other readers and the store, if it can: before its
 * response head, or once the head was stored and R reads the object like
 * any reader. True if it did: R no longer has an upstream or a fill. Called
 * when R's carrier goes (ct_req_free) or fails on its side. */
bool ct_fetch_adopt(struct ct_req *r);
/* After R's response head was stored: hand the fill over (as above), so R
 * is one reader of the object among others, whatever its pace or fate. True
 * if it did (R may have ended: its answer had no body). */
bool ct_fetch_detach(struct ct_req *r);

/* ---- cache_fill.c: the origin's response into the object -------------------- */

/* The request as it goes to the origin: R's own, or a copy without the
 * client's conditionals and Range (a fill) and with our validators (a
 * revalidation). Valid until the response head is in. */
const struct ct_http_msg *ct_cache_fwd_msg(struct ct_req *r);
/* A final response head from the origin. True: the cache wrote the head for
 * the client itself (Cache-Status, Age; maybe from a stored object); false:
 * the caller forwards it as usual with *EXTRA (the cache's Cache-Status and
 * the fields it keeps to itself; zeroed: none). */
bool ct_cache_resp_head(struct ct_req *r, const struct ct_http_msg *msg, bool close,
                        struct ct_fwd_resp_extra *extra);
/* Where the origin's body goes in SEND: to the client (a pass: the protocol's
 * body_out), dropped (an object was delivered instead), or into *SCRATCH,
 * unframed, which ct_cache_resp_body() empties (a fill, a background
 * refresh, a client reading its own fill). */
enum ct_body_sink { CT_SINK_CLIENT, CT_SINK_DROP, CT_SINK_CACHE };
enum ct_body_sink ct_cache_body_sink(struct ct_req *r, struct evbuffer **scratch);
/* N body bytes just landed in the scratch sink: append them to the object
 * being filled, then move them to the client's output unless it reads the
 * object or has its answer. True if they went to the client. */
bool ct_cache_resp_body(struct ct_req *r, size_t n);
/* The origin's response is complete. */
void ct_cache_resp_end(struct ct_req *r);
/* R is filling an object: keep reading the origin whatever R's own output
 * holds, so other readers of the object are not held to R's pace. Memory
 * stays bounded: the object is capped at max_object_size and R's output
 * holds at most the same bytes (so 2 x max_object_size per fill). */
bool ct_cache_filling(const struct ct_req *r);
/* Render MSG's storable fields (and our Via) into OUT as the stored block
 * (prefix + status line + fields). */
void ct_cache_render_block(struct evbuffer *out, const struct ct_http_msg *msg,
                           const struct ct_req *r, const struct ct_stored_blk *blk);
/* Is F one of cache.tag_headers (matched case-insensitively, RFC 9110 §5.1)? */
bool ct_cache_is_tag_field(const struct ct_conf_cache *cc, const struct ct_http_field *f);
/* The tags named by MSG's tag fields (cache.tag_headers) into OUT (at most
 * cache.max_tags; views into MSG), counting and logging what the limits
 * leave out. Returns the count. */
size_t ct_cache_tags_of(struct ct_req *r, const struct ct_http_msg *msg,
                        struct ct_str out[CT_CACHE_TAGS_MAX]);
/* Store MSG as the head of FILL (a BUSY object from R's lookup, not R's
 * cr->fill) as a fill of R's request would (WEAKENED: cachet made its ETag
 * weak, CT_STORED_WEAKENED); CT_OK or the store's error. */
int ct_cache_store_head_of(struct ct_req *r, struct ct_obj *fill, const struct ct_http_msg *msg,
                           bool weakened, ct_time_t now);
/* Would cachet compress MSG, a response to R's request (its type, size,
 * coding and method rules, http/http_ae.h)? */
bool ct_cache_compressible(const struct ct_req *r, const struct ct_http_msg *msg);

/* ---- cache_deliver.c: responses from objects ------------------------------- */

/* The head of the object C fills (FILL, stored from the origin's MSG) with
 * CSTATUS; its body follows from the origin (fetch.c frames it). */
void ct_cache_fill_head(struct ct_req *r, struct ct_obj *fill, const struct ct_http_msg *msg,
                        struct ct_str cstatus);
/* Write the whole response from OBJ (head, and body as far as it is there).
 * True if it is all out; false: the body streams on (step STREAM). The
 * client's state is the caller's. */
bool ct_cache_emit(struct ct_req *r, struct ct_obj *obj, struct ct_str cstatus,
                   bool force_close);
/* The fetcher reading its own fill (cr->self): the object is complete,
 * queue the rest of its response now. */
void ct_cache_self_end(struct ct_req *r);
/* The client's output drained below the low mark. True if the cache is
 * delivering (the call was for it). */
bool ct_cache_client_drained(struct ct_req *r);
/* R's Range waited for its object (ct_cache_emit) and the object failed
 * first: nothing was sent, so the failure can still be answered. True if
 * so; R no longer counts its head as sent. */
bool ct_cache_unhold(struct ct_req *r);

/* ---- cache_bg.c: background fetches ----------------------------------------- */

/* Refresh *FILL (our BUSY object; *STALE for its validators) as
 * a request of its own with no client, so R's connection is free at once.
 * Takes both references (NULLs them) and returns true, or false with
 * nothing taken. */
bool ct_cache_bg_start(struct ct_req *r, struct ct_obj **fill, struct ct_obj **stale);
/* Background requests in flight per worker, refreshes and adopted fills: past
 * this a refresh runs on its client's connection and a fill whose client
 * went is abandoned (its readers fetch again), so a flood of cut requests
 * cannot turn into unbounded origin fetches. */
#define CT_CACHE_BG_MAX 1024
/* A background request for R's request head (the null protocol, a cache
 * part that answers nobody: cr->bg), at step FILL; NULL if the head does
 * not fit its copy. The caller hands it a fill (ct_fetch_adopt) or a slot,
 * then starts it with ct_bg_run: on the next loop turn it starts its fetch,
 * or reads on the one it was handed. */
struct ct_req *ct_bg_new(struct ct_req *r);
void ct_bg_run(struct ct_req *br);

#endif /* CT_PROXY_CACHE_INT_H */
