/*
 * proxy/core/cache_derive.h: other content codings derived from one stored
 * representation (issue 18), inside proxy/core only.
 *
 * cachet stores one coding of a compressible response per request class
 * (zstd, br, gzip, identity: cache_req.c normalises Accept-Encoding, so
 * Vary: Accept-Encoding keys on the class). A client whose class has no
 * variant yet is answered from another class's variant instead of the
 * origin:
 *   - a stored variant in a coding the client accepts (its Accept-Encoding
 *     gives it a weight > 0) is delivered as it is, an ordinary hit (a
 *     "gzip, br" client gets the gzip copy that is there);
 *   - an identity client gets a stored coded variant decoded on its way
 *     (the deliver-side filter below: one piece of the object at a time,
 *     under the protocol's back-pressure, so memory per delivery is the
 *     decoder's window and one output piece whatever the object's size);
 *   - a client of another coding that does not accept the stored one has
 *     the stored copy recoded into its class (compression.store_transcoded,
 *     the default: one origin fetch per object, issue 46), once, stored as
 *     its variant (charged to the cache like any object); an identity copy
 *     (an identity client came first) is encoded so too, if cachet would
 *     have compressed the response at its fill. With store_transcoded off
 *     such a client is a miss, fetched once and stored in its own class.
 *     Either way a hit never compresses.
 * An object stored in a coding (cachet's or the origin's own
 * Content-Encoding) that a client hitting it does not accept is decoded the
 * same way: an origin that sends gzip without Vary: Accept-Encoding does not
 * make cachet serve gzip to a client that refused it.
 *
 * Never for a request with Cache-Control: no-transform nor from a stored
 * response with it (RFC 9110 §7.7, RFC 9111 §5.2.1.6, §5.2.2.6): those get
 * 406 when the client cannot take the stored coding, as does a client that
 * refuses identity and every coding cachet offers while a variant is stored
 * (RFC 9110 §12.5.3, §15.5.7).
 *
 * A decoded answer is 200 with the stored fields less Content-Encoding and
 * Content-Length, a strong ETag made weak (the bytes are not the stored
 * ones) unless cachet weakened it itself (CT_STORED_WEAKENED: then the
 * origin's strong one, the decoded bytes being the origin's), Vary: Accept-Encoding, Age, chunked for HTTP/1.1 (close-delimited
 * for HTTP/1.0) and without content-length on HTTP/2. Range is ignored for
 * it (RFC 9110 §14.2 allows that: the whole representation, 200); a
 * conditional matching its validators gets 304.
 *
 * Worker thread only.
 */
#ifndef CT_PROXY_CACHE_DERIVE_H
#define CT_PROXY_CACHE_DERIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/common.h"

struct ct_req;
struct ct_obj;
struct ct_stored_blk;
struct ct_derive; /* opaque; owned by the request's creq (cr->derive) */

/* The object's coding (from BLK's flags) is not R's class: does R need it
 * decoded? Then the decoded answer is sent (true). False: deliver OBJ as it
 * is. *REFUSE is set when the answer must be 406 instead (no-transform, or
 * identity refused); the caller sends it. */
bool ct_cache_derive_hit(struct ct_req *r, struct ct_obj *obj, const struct ct_stored_blk *blk,
                         struct ct_str cstatus, bool *refuse);

/* What a lookup that found another class's variants (a Vary miss) may do
 * instead of fetching. */
enum ct_derive_rc {
    CT_DERIVE_NONE,    /* nothing to derive from: fetch as usual */
    CT_DERIVE_ANSWERED, /* delivered from another variant */
    CT_DERIVE_REFUSE,  /* answer 406: nothing acceptable can be made */
};
/* *FETCH: the lookup's BUSY object for R's own class (or NULL); with
 * compression.store_transcoded, a client of a coding that does not accept
 * the stored one has the stored copy recoded into *FETCH (taken: NULL after
 * the call), stored as its class's variant and delivered from it. The
 * recoding runs at once, on this worker, over the whole object (bounded by
 * cache.max_object_size; on by default). */
enum ct_derive_rc ct_cache_derive_vary_miss(struct ct_req *r, ct_time_t now,
                                            struct ct_obj **fetch);

/* The client's output drained: decode on. True if R was delivering a
 * decoded body (the call was for it). */
bool ct_cache_derive_drained(struct ct_req *r);
/* End R's derived delivery early (the request ends or is reset); NULL-safe. */
void ct_derive_free(struct ct_derive **dp);

#endif /* CT_PROXY_CACHE_DERIVE_H */
