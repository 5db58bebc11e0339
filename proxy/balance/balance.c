/*
 * proxy/balance/balance.c: the three ways of choosing a backend and slow
 * start (balance.h says what each does).
 *
 * Weights with slow start are fixed-point: weight * 1000 * ramp, at least
 * 1, so that scaling every member by the same 1000 leaves round robin's
 * sequence exactly what it was with integer weights.
 */
#include <math.h>

#include "proxy/balance/balance.h"

#define SCALE 1000

/* Fraction of its share a member gets at NOW: 1 when not ramping. */
static double ramp(const struct ct_balance_opts *o, const struct ct_balance_member *m,
                   ct_time_t now)
{
    if (o->slow_start_s <= 0 || m->up_since <= 0)
        return 1.0;
    double f = (now - m->up_since) / o->slow_start_s;
    return f >= 1.0 ? 1.0 : f <= 0.0 ? 0.0 : f;
}

static int64_t eff_weight(const struct ct_balance_opts *o, const struct ct_balance_member *m,
                          ct_time_t now)
{
    int64_t w = (int64_t)(m->weight ? m->weight : 1) * SCALE;
    double f = ramp(o, m, now);
    if (f < 1.0)
        w = (int64_t)((double)w * f);
    return w > 0 ? w : 1;
}

/* Smooth weighted round robin over the members SEL accepts (NULL: all up). */
static int swrr(const struct ct_balance_opts *o, struct ct_balance_member *m, size_t n,
                ct_time_t now, const bool *sel)
{
    int best = -1;
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].up || (sel && !sel[i]))
            continue;
        int64_t w = eff_weight(o, &m[i], now);
        m[i].cw += w;
        total += w;
        if (best < 0 || m[i].cw > m[best].cw)
            best = (int)i;
    }
    if (best >= 0)
        m[best].cw -= total;
    return best;
}

static int least_conn(const struct ct_balance_opts *o, struct ct_balance_member *m, size_t n,
                      ct_time_t now)
{
    /* fewest inflight/weight: compare a/wa < b/wb as a*wb < b*wa */
    int best = -1;
    int64_t bw = 0;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].up)
            continue;
        int64_t w = eff_weight(o, &m[i], now);
        if (best < 0 || (int64_t)m[i].inflight * bw < (int64_t)m[best].inflight * w) {
            best = (int)i;
            bw = w;
        }
    }
    if (best < 0)
        return -1;
    bool tied[CT_BALANCE_MAX];
    size_t ntied = 0;
    if (n > CT_BALANCE_MAX)
        return best;
    for (size_t i = 0; i < n; i++) {
        int64_t w = eff_weight(o, &m[i], now);
        tied[i] = m[i].up && (int64_t)m[i].inflight * bw == (int64_t)m[best].inflight * w;
        ntied += tied[i];
    }
    return ntied > 1 ? swrr(o, m, n, now, tied) : best;
}

static uint64_t mix(uint64_t x)
{
    /* splitmix64's finaliser: every input bit reaches every output bit */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

uint64_t ct_balance_hash(const void *bytes, size_t len)
{
    const unsigned char *p = bytes;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return mix(h);
}

/* Weighted rendezvous score (Schindelhauer and Schomaker): -w / ln(u), u
 * uniform in (0, 1) from key and member; the highest score owns the key. */
static double score(uint64_t key, const struct ct_balance_member *m)
{
    uint64_t h = mix(key ^ (m->name_hash * 0x9e3779b97f4a7c15ull));
    double u = ((double)(h >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
    return -(double)(m->weight ? m->weight : 1) / log(u);
}

static int hash_pick(const struct ct_balance_opts *o, struct ct_balance_member *m, size_t n,
                     uint64_t key, ct_time_t now)
{
    if (n > CT_BALANCE_MAX)
        n = CT_BALANCE_MAX;
    double sc[CT_BALANCE_MAX];
    uint64_t total = 0;
    size_t nup = 0;
    for (size_t i = 0; i < n; i++) {
        sc[i] = m[i].up ? score(key, &m[i]) : -1.0;
        if (m[i].up) {
            total += m[i].inflight;
            nup++;
        }
    }
    if (nup == 0)
        return -1;
    /* the bound: at most FACTOR % of the mean load, counting this request */
    double cap = ceil((double)o->factor_pct / 100.0 * (double)(total + 1) / (double)nup);
    int first = -1;
    for (size_t tries = 0; tries < nup; tries++) {
        int best = -1;
        for (size_t i = 0; i < n; i++)
            if (sc[i] >= 0 && (best < 0 || sc[i] > sc[best]))
                best = (int)i;
        sc[best] = -1.0; /* tried */
        if (first < 0)
            first = best;
        double f = ramp(o, &m[best], now);
        if (f < 1.0 && (double)(mix(key + m[best].name_hash) >> 11) / 9007199254740992.0 >= f)
            continue; /* ramping up: this key is not yet its own */
        if ((double)m[best].inflight + 1 <= cap)
            return best;
    }
    return first; /* every one ramping or full: the owner (cannot happen with factor >= 100) */
}

int ct_balance_pick(const struct ct_balance_opts *o, struct ct_balance_member *m, size_t n,
                    uint64_t key, ct_time_t now)
{
    switch (o->algo) {
    case CT_CONF_BALANCE_LEAST_CONN: return least_conn(o, m, n, now);
    case CT_CONF_BALANCE_HASH: return hash_pick(o, m, n, key, now);
    case CT_CONF_BALANCE_RR: break;
    }
    return swrr(o, m, n, now, NULL);
}
