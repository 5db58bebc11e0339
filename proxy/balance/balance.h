/*
 * proxy/balance/balance.h: choosing a backend of a group (issue 15), as
 * pure code over an array of members the caller owns:
 *
 *   round_robin  smooth weighted round robin (nginx's; cachet's since the
 *                start): weights 3:1 give A A B A, spread, not bunched.
 *   least_conn   fewest requests in flight per unit of weight; ties go
 *                round robin among the tied.
 *   hash         weighted rendezvous hashing of a 64-bit key, bounded by
 *                load (Mirrokni et al., "Consistent Hashing with Bounded
 *                Loads"; HAProxy's hash-balance-factor): a backend whose
 *                in-flight count would pass FACTOR % of the mean goes to
 *                the key's next choice. A member leaving moves only its
 *                own keys; one joining takes ~1/N of them.
 *   slow start   a member up for less than slow_start seconds counts with
 *                weight * elapsed/slow_start (round_robin, least_conn), or,
 *                for hash, keeps only that fraction of its keys (the rest
 *                go to their next choice until the ramp ends), so its keys
 *                do not move twice (Varnish shard's rampup).
 *
 * Pure: no clock (NOW is passed in), no allocation, no locks. The members
 * belong to one worker thread, as the counts they hold do.
 */
#ifndef CT_BALANCE_H
#define CT_BALANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "conf/conf.h"

/* hash: members per group it can rank (conf/ refuses larger hash groups). */
#define CT_BALANCE_MAX 256

struct ct_balance_member {
    unsigned weight;    /* configured, >= 1 */
    bool up;            /* in rotation (active and passive health) */
    ct_time_t up_since; /* when it last came up; 0 = up from the start (no ramp) */
    unsigned inflight;  /* requests being served by it now (least_conn, hash) */
    uint64_t name_hash; /* a hash of its stable name (hash: not its address) */
    int64_t cw;         /* round robin's current weight; ct_balance_pick's own */
};

struct ct_balance_opts {
    enum ct_conf_balance algo;
    double slow_start_s;   /* 0 = no ramp */
    unsigned factor_pct;   /* hash: >= 100 */
};

/* The index of the member that serves the next request (KEY: its hash, for
 * `hash`; ignored otherwise), or -1 when no member is up. Updates the round
 * robin state in M; the caller counts inflight up and down itself. */
int ct_balance_pick(const struct ct_balance_opts *o, struct ct_balance_member *m, size_t n,
                    uint64_t key, ct_time_t now);

/* A 64-bit hash of BYTES for keys and member names (FNV-1a, finalised). */
uint64_t ct_balance_hash(const void *bytes, size_t len);

#endif /* CT_BALANCE_H */
