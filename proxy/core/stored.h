/*
 * proxy/core/stored.h: the head of a stored object as the request core
 * writes it (cache_fill.c, at store time) and every reader opens it: the
 * request path, the protocols' hit paths (proxy/h1/h1_resp.c,
 * proxy/h2/h2_resp.c), bans (cache_ban_glue.c). Plus the few pure helpers
 * those readers share. stored.c is a leaf of proxy/core: it calls nothing
 * else of it. Any thread; no state.
 */
#ifndef CT_PROXY_STORED_H
#define CT_PROXY_STORED_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "common/common.h"
#include "http/http_ae.h"

struct ct_obj;
struct ct_http_msg;
struct ct_hdrindex;
struct ct_conf_compression;
struct ct_codec;

/* The stored head: this prefix, then the HTTP/1 block (the status line and
 * the fields, CRLF after each, no blank line), then the block's field index
 * (http/http_hdrindex.h), all rendered once at store time. The prefix
 * carries what the policy needs and the store does not keep (must-revalidate,
 * no-cache, stale-if-error...), so a hit reads it with one memcpy; HTTP/1
 * writes the block as is, and a protocol that needs (name, value) pairs
 * (HTTP/2) opens the index instead of parsing (ct_stored_index). */
struct ct_stored_blk {
    struct ct_cache_fresh fresh;
    uint32_t status_len; /* bytes of the status line, CRLF included */
    uint32_t flags;      /* CT_STORED_* below */
    uint64_t length;     /* body length if known at store time, else UINT64_MAX */
    uint32_t wire_len;   /* bytes of the HTTP/1 block; the index follows it */
    uint32_t index_len;  /* bytes of the index (0: none, the block exceeds its format) */
};

/* ct_stored_blk.flags: the stored body's coding (enum ct_coding; 0 identity),
 * set at store time, so a hit tells a coded object by a bit test. */
#define CT_STORED_CODING_MASK 0x7u
/* ... and cachet made its ETag weak when it changed the coding (http_ae.h,
 * ct_ce_head_new): the body decoded is the origin's representation, which
 * the ETag without W/ names, so an identity answer decoded from it gives
 * the origin's strong ETag back. Not set for an origin's own coding. */
#define CT_STORED_WEAKENED 0x8u
/* ... and its length, unknown until the end (cachet encodes it as it fills),
 * is bounded by the origin's Content-Length well under max_object_size: the
 * fill cannot outgrow the store, so a Range may wait for its end
 * (cache_deliver.c, range_waits). */
#define CT_STORED_BOUNDED 0x10u

/* OBJ's stored prefix into *BLK (freshness floored by a soft purge) and its
 * HTTP/1 block into *WIRE (a view into OBJ); false if OBJ has no head yet. */
bool ct_stored_blk_get(const struct ct_obj *obj, struct ct_stored_blk *blk, struct ct_str *wire);
/* Open the stored field index that follows WIRE (BLK and WIRE from
 * ct_stored_blk_get) into HX; false if it has none. Views valid while the
 * object is held. */
bool ct_stored_index(const struct ct_stored_blk *blk, struct ct_str wire, struct ct_hdrindex *hx);
/* Can the fill described by BLK outgrow max_object_size on its way (no
 * length at the head, and no bound)? Readers of such a fill must not start
 * an answer they could not finish. */
bool ct_stored_may_outgrow(const struct ct_stored_blk *blk);
/* The flags of STORED (the head to store); WEAKENED: cachet weakened its
 * ETag (only kept when STORED's ETag is weak). */
uint32_t ct_stored_flags_of(const struct ct_http_msg *stored, bool weakened);

/* Write V in decimal at P; returns the end (no NUL). */
char *ct_put_i64(char *p, int64_t v);
/* One single-range "bytes=" value V against LEN bytes (RFC 9110 §14.1.2).
 * 0: no usable range (serve 200); 1: [*FIRST, *LAST]; -1: unsatisfiable. */
int ct_range_parse(struct ct_str v, uint64_t len, uint64_t *first, uint64_t *last);
/* An encoder for coding C at its configured level
 * (SIZE_HINT as for ct_codec_new); NULL if it cannot be made. */
struct ct_codec *ct_encoder_new(const struct ct_conf_compression *cz, enum ct_coding c,
                                uint64_t size_hint);
/* This thread's CPU time in µs (the compress_cpu_us counters). */
uint64_t ct_thread_cpu_us(void);

#endif /* CT_PROXY_STORED_H */
