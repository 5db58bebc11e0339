/*
 * tests/fuzz/fuzz_cache_ban.c: libFuzzer target for ban expressions
 * (ct_cache_ban_add, cache/cache_ban.c), as an admin's POST /ban or another
 * fleet node sends them, and for what an accepted ban does to a store.
 *
 * Input: byte 0 = flags (bits 0-3: ban i is soft if bit i % 4; bit 4: one
 * shard instead of four; bit 5: max_bans 2; bit 6: a store of 16 KiB, where
 * a ban's bytes evict objects (then only the bounds and the accounting are
 * checked: lookups that miss evict too, so A and B differ); bit 7: the rest is one
 * expression, NULs and all), byte 1 = the lurker's budget per call
 * (1 + b % 16), the rest = expressions separated by NUL bytes (at most 8).
 *
 * Two stores get the same objects (older than the bans), the same bans and
 * one object newer than them. Store A is looked up first (bans applied
 * lazily), then lurked; store B only lurked. Checks (a failure aborts):
 *   - a refused expression says where and why ("column N: ..."), within
 *     ERRLEN; an accepted one has the next id and is listed as given;
 *     past max_bans, CT_ELIMIT;
 *   - the lurker ends every walk: bans_active 0 within a bound of calls,
 *     progress 1000, the bans' bytes given back;
 *   - A and B agree on every object afterwards (lazy and lurker tests are
 *     one test), the newer object is never touched, a hard-banned object
 *     is gone and a soft-banned one stale;
 *   - emptied, each store is back to its empty byte count (no leak of
 *     counted bytes; LSan sees the rest).
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_cache_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BANS 8

struct fz_obj {
    const char *host, *target;
    unsigned status;
    const char *fields; /* the head's field lines */
    const char *tag;    /* one tag for the index, or NULL */
};

/* Varied enough for every field a ban can name: hosts with ports and case,
 * queries, statuses, absent, empty and repeated fields. The last is stored
 * after the bans. */
static const struct fz_obj objs[] = {
    {"example.com", "/", 200, "Content-Type: text/html\r\nX-Tag: home\r\n", "home"},
    {"example.com", "/img/a.png", 200, "Content-Type: image/png\r\nX-Tag: a1 img\r\n", "img"},
    {"example.com", "/img/b.png?v=2&w=10", 200, "Content-Type: image/png\r\nX-Tag: b1\r\n", "img"},
    {"WWW.Example.COM:80", "/css/site.css", 200, "Content-Type: text/css\r\n", NULL},
    {"example.com", "/api/items?id=42", 404, "Content-Type: application/json\r\nX-Tag: \r\n",
     "api"},
    {"example.org:8000", "/old", 301, "Location: /new\r\nx-tag: Upper\r\n", NULL},
    {"b.example", "/z%20q", 503, "X-Tag: a\r\nX-Tag: b\r\nRetry-After: 5\r\n", "b"},
    {"example.com", "/img/c.png", 200, "Content-Type: image/png\r\nX-Tag: a2\r\n", "img"},
};
#define NOBJS (sizeof(objs) / sizeof(objs[0]))

static bool put_obj(struct ct_cache *c, const struct fz_obj *o, struct fz_key *k, ct_time_t now)
{
    char head[256];
    int n = snprintf(head, sizeof(head), "HTTP/1.1 %u X\r\n%s", o->status, o->fields);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof(head));
    struct ct_str tag = ct_str_c(o->tag ? o->tag : "");
    struct ct_obj_meta m = {.status = o->status,
                            .head = ct_str_make(head, (size_t)n),
                            .etag = CT_STR("\"v1\""),
                            .response_time = now,
                            .ttl = 60,
                            .grace = 30,
                            .tags = &tag,
                            .ntags = o->tag ? 1 : 0};
    fz_key(k, ct_str_c(o->host), ct_str_c(o->target));
    return fz_store(c, &k->key, &m, CT_STR("body"), now);
}

struct listed {
    struct ct_str *want; /* the accepted expressions, oldest first */
    size_t n, seen;
};

static void each_cb(const struct ct_cache_ban_info *b, void *arg)
{
    struct listed *l = arg;
    /* newest first */
    FUZZ_CHECK(l->seen < l->n);
    FUZZ_CHECK(ct_str_eq(b->expr, l->want[l->n - 1 - l->seen]));
    l->seen++;
}

/* Run the lurker until no ban is active; it must get there. */
static void lurk_all(struct ct_cache *c, ct_time_t now, size_t budget)
{
    struct ct_cache_stats st;
    /* a walk is NOBJS objects plus one call per shard end; bans added
     * during a walk wait for the next: two walks at most */
    size_t bound = 2 * (NOBJS / budget + 4 + 2) + 2;
    for (size_t i = 0; i < bound; i++) {
        ct_cache_stats(c, &st);
        if (st.bans_active == 0)
            break;
        FUZZ_CHECK(ct_cache_ban_lurk(c, now, budget) <= budget);
    }
    ct_cache_stats(c, &st);
    FUZZ_CHECK(st.bans_active == 0);
    FUZZ_CHECK(st.ban_lurker_progress == 1000);
    FUZZ_CHECK(st.ban_bytes == 0);
    FUZZ_CHECK(st.bans_completed == st.bans_added);
    FUZZ_CHECK(ct_cache_ban_lurk(c, now, budget) == 0);
}

/* The state of every object: HIT, STALE (soft-banned) or MISS (banned). */
static void look_all(struct ct_cache *c, struct fz_key *keys, ct_time_t now,
                     enum ct_cache_lookup out[NOBJS])
{
    for (size_t i = 0; i < NOBJS; i++) {
        out[i] = fz_look(c, &keys[i].key, CT_STR_NULL, NULL, NULL, now, NULL);
        FUZZ_CHECK(out[i] == CT_CACHE_HIT || out[i] == CT_CACHE_STALE || out[i] == CT_CACHE_MISS);
    }
}

/* Lazy (LAZY, then A) and lurker-only (B) runs agree, and with the bans. */
static void check_agree(const enum ct_cache_lookup lazy[NOBJS], const enum ct_cache_lookup a[NOBJS],
                        const enum ct_cache_lookup b[NOBJS], bool any_hard, bool any_soft,
                        const struct ct_cache_stats st[2])
{
    size_t gone = 0, stale = 0;
    for (size_t i = 0; i < NOBJS; i++) {
        FUZZ_CHECK(a[i] == b[i]);
        FUZZ_CHECK(lazy[i] == a[i]);
        FUZZ_CHECK(a[i] != CT_CACHE_MISS || any_hard);
        FUZZ_CHECK(a[i] != CT_CACHE_STALE || any_soft);
        gone += a[i] == CT_CACHE_MISS;
        stale += a[i] == CT_CACHE_STALE;
    }
    FUZZ_CHECK(a[NOBJS - 1] == CT_CACHE_HIT);
    FUZZ_CHECK(st[0].banned == st[1].banned && st[0].soft_banned == st[1].soft_banned);
    /* each hard-banned object counted once; a soft-banned one may be hard-banned after */
    FUZZ_CHECK(st[1].banned == gone && st[1].soft_banned >= stale);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > CT_CACHE_BAN_MAX_LEN + 64)
        return 0;
    uint8_t flags = data[0];
    size_t budget = 1 + data[1] % 16;
    unsigned shards = (flags & 0x10) ? 1 : 4, max_bans = (flags & 0x20) ? 2 : 0;
    bool tight = (flags & 0x40) != 0;
    size_t max_bytes = tight ? 16u << 10 : 8u << 20;
    const char *text = (const char *)data + 2;
    size_t len = size - 2;

    struct ct_str exprs[MAX_BANS];
    size_t nexprs = 0;
    if (flags & 0x80) {
        exprs[nexprs++] = ct_str_make(text, len);
    } else {
        for (size_t start = 0, i = 0; i <= len && nexprs < MAX_BANS; i++) {
            if (i == len || text[i] == '\0') {
                exprs[nexprs++] = ct_str_make(text + start, i - start);
                start = i + 1;
            }
        }
    }

    size_t empty[2];
    struct ct_cache *c[2] = {fz_cache_new(max_bytes, shards, max_bans, &empty[0]),
                             fz_cache_new(max_bytes, shards, max_bans, &empty[1])};
    struct fz_key keys[NOBJS];
    for (size_t s = 0; s < 2; s++)
        for (size_t i = 0; i + 1 < NOBJS; i++)
            FUZZ_CHECK(put_obj(c[s], &objs[i], &keys[i], FZ_T0) || tight);

    struct ct_str accepted[MAX_BANS];
    bool any_soft = false, any_hard = false;
    size_t naccepted = 0;
    for (size_t e = 0; e < nexprs; e++) {
        bool soft = (flags >> (e % 4)) & 1;
        int rc[2];
        for (size_t s = 0; s < 2; s++) {
            char err[128];
            uint64_t id = 0;
            memset(err, 'x', sizeof(err));
            rc[s] = ct_cache_ban_add(c[s], exprs[e].p, exprs[e].len, soft, FZ_T0 + 1, &id, err,
                                     sizeof(err));
            FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
            if (rc[s] == CT_OK) {
                FUZZ_CHECK(err[0] == '\0');
                FUZZ_CHECK(id == naccepted + 1);
            } else if (rc[s] == CT_EPROTO) {
                FUZZ_CHECK(strncmp(err, "column ", 7) == 0);
            } else {
                FUZZ_CHECK(rc[s] == CT_ELIMIT && ((max_bans && naccepted >= max_bans) || tight));
                FUZZ_CHECK(err[0] != '\0');
            }
        }
        FUZZ_CHECK(rc[0] == rc[1]);
        if (rc[0] == CT_OK) {
            accepted[naccepted++] = exprs[e];
            any_soft |= soft;
            any_hard |= !soft;
        }
    }
    for (size_t s = 0; s < 2; s++) {
        struct listed l = {accepted, naccepted, 0};
        FUZZ_CHECK(ct_cache_ban_each(c[s], each_cb, &l) == naccepted);
        FUZZ_CHECK(l.seen == naccepted);
        FUZZ_CHECK(put_obj(c[s], &objs[NOBJS - 1], &keys[NOBJS - 1], FZ_T0 + 2) || tight);
    }

    enum ct_cache_lookup lazy[NOBJS], a[NOBJS], b[NOBJS];
    look_all(c[0], keys, FZ_T0 + 3, lazy);
    lurk_all(c[0], FZ_T0 + 3, budget);
    lurk_all(c[1], FZ_T0 + 3, budget);
    look_all(c[0], keys, FZ_T0 + 4, a);
    look_all(c[1], keys, FZ_T0 + 4, b);
    struct ct_cache_stats st[2];
    for (size_t s = 0; s < 2; s++) {
        ct_cache_stats(c[s], &st[s]);
        FUZZ_CHECK(st[s].bytes <= st[s].max_bytes);
    }
    if (!tight)
        check_agree(lazy, a, b, any_hard, any_soft, st);
    for (size_t s = 0; s < 2; s++)
        fz_cache_drain(&c[s], keys, NOBJS, empty[s]);
    return 0;
}
