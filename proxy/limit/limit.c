/*
 * proxy/limit/limit.c: the shared table of per-client buckets and in-flight
 * counts (limit.h). Open addressing over a window of PROBE slots from the
 * key's hash; stripe = the window's first slot's stripe, so one lock covers
 * the whole window (windows never cross a stripe boundary: the stripe is
 * chosen first, then the slot inside it).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/limit/limit.h"

#define NSTRIPES 64
#define PROBE 8

struct entry {
    uint64_t hash; /* 0 = free */
    uint32_t scope;
    uint8_t family;
    uint8_t addr[16];
    unsigned inflight;
    bool has_bucket; /* tokens is meaningful (ct_limit_take saw it) */
    double tokens;
    ct_time_t last; /* last time seen (refill and eviction) */
};

struct stripe {
    pthread_mutex_t mu;
    struct entry *e; /* per_stripe entries */
    size_t used;
};

struct ct_limit_table {
    struct stripe s[NSTRIPES];
    size_t per_stripe; /* power of two */
};

static uint64_t key_hash(const struct ct_limit_key *k)
{
    uint64_t h = 0xcbf29ce484222325ull ^ k->scope;
    size_t n = k->family == AF_INET6 ? 16 : 4;
    for (size_t i = 0; i < n; i++)
        h = (h ^ k->addr[i]) * 0x100000001b3ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h ? h : 1;
}

struct ct_limit_table *ct_limit_table_new(size_t slots)
{
    struct ct_limit_table *t = ct_xcalloc(1, sizeof(*t));
    size_t per = PROBE;
    while (per * NSTRIPES < slots)
        per *= 2;
    t->per_stripe = per;
    for (size_t i = 0; i < NSTRIPES; i++) {
        pthread_mutex_init(&t->s[i].mu, NULL);
        t->s[i].e = ct_xcalloc(per, sizeof(struct entry));
    }
    return t;
}

void ct_limit_table_free(struct ct_limit_table **tp)
{
    struct ct_limit_table *t = *tp;
    if (!t)
        return;
    for (size_t i = 0; i < NSTRIPES; i++) {
        pthread_mutex_destroy(&t->s[i].mu);
        free(t->s[i].e);
    }
    CT_FREE(tp);
}

static bool same(const struct entry *e, uint64_t h, const struct ct_limit_key *k)
{
    size_t n = k->family == AF_INET6 ? 16 : 4;
    return e->hash == h && e->scope == k->scope && e->family == (uint8_t)k->family &&
           memcmp(e->addr, k->addr, n) == 0;
}

/* K's entry in its (locked) stripe: found, or made in a free slot, or in
 * the least recently seen one without requests in flight. NULL when the
 * whole window is in flight (the caller lets the request through). */
static struct entry *find(struct stripe *s, size_t per, uint64_t h, const struct ct_limit_key *k,
                          bool create, ct_time_t now, bool *fresh)
{
    size_t base = (h >> 6) & (per - 1);
    struct entry *victim = NULL;
    *fresh = false;
    for (size_t i = 0; i < PROBE; i++) {
        struct entry *e = &s->e[(base + i) & (per - 1)];
        if (e->hash && same(e, h, k))
            return e;
        if (!e->hash) {
            if (!victim || victim->hash)
                victim = e;
        } else if (e->inflight == 0 && (!victim || (victim->hash && e->last < victim->last))) {
            victim = e;
        }
    }
    if (!create || !victim)
        return NULL;
    if (!victim->hash)
        s->used++;
    memset(victim, 0, sizeof(*victim));
    victim->hash = h;
    victim->scope = k->scope;
    victim->family = (uint8_t)k->family;
    memcpy(victim->addr, k->addr, k->family == AF_INET6 ? 16 : 4);
    victim->last = now;
    *fresh = true;
    return victim;
}

bool ct_limit_take(struct ct_limit_table *t, const struct ct_limit_key *k, double rate,
                   unsigned burst, ct_time_t now, unsigned *retry_after_s)
{
    uint64_t h = key_hash(k);
    struct stripe *s = &t->s[h & (NSTRIPES - 1)];
    bool fresh, ok = true;
    double cap = burst ? burst : 1;
    pthread_mutex_lock(&s->mu);
    struct entry *e = find(s, t->per_stripe, h, k, true, now, &fresh);
    if (e) {
        e->tokens = !e->has_bucket ? cap : fmin(cap, e->tokens + (now - e->last) * rate);
        e->has_bucket = true;
        e->last = now;
        if (e->tokens >= 1.0) {
            e->tokens -= 1.0;
        } else {
            ok = false;
            double wait = (1.0 - e->tokens) / rate;
            *retry_after_s = (unsigned)ceil(wait < 1.0 ? 1.0 : wait);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

bool ct_limit_enter(struct ct_limit_table *t, const struct ct_limit_key *k, unsigned max,
                    ct_time_t now)
{
    uint64_t h = key_hash(k);
    struct stripe *s = &t->s[h & (NSTRIPES - 1)];
    bool fresh, ok = true;
    pthread_mutex_lock(&s->mu);
    struct entry *e = find(s, t->per_stripe, h, k, true, now, &fresh);
    if (e && e->inflight >= max)
        ok = false;
    else if (e)
        e->inflight++, e->last = now;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

void ct_limit_leave(struct ct_limit_table *t, const struct ct_limit_key *k)
{
    uint64_t h = key_hash(k);
    struct stripe *s = &t->s[h & (NSTRIPES - 1)];
    bool fresh;
    pthread_mutex_lock(&s->mu);
    struct entry *e = find(s, t->per_stripe, h, k, false, 0, &fresh);
    if (e && e->inflight)
        e->inflight--;
    pthread_mutex_unlock(&s->mu);
}

size_t ct_limit_used(struct ct_limit_table *t)
{
    size_t n = 0;
    for (size_t i = 0; i < NSTRIPES; i++) {
        pthread_mutex_lock(&t->s[i].mu);
        n += t->s[i].used;
        pthread_mutex_unlock(&t->s[i].mu);
    }
    return n;
}
