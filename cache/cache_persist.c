/*
 * cache/cache_persist.c: the store as bytes, and back (issue 44's snapshot).
 * The proxy writes them to a file at a graceful stop and reads the file back
 * at start (proxy/ops/persist.c); this file only turns objects into bytes and
 * bytes into objects, so the loader, which reads whatever the disk holds, is
 * a pure function of its input (tests/fuzz/fuzz_cache_persist.c).
 *
 * Format (integers little-endian, times and durations IEEE-754 binary64):
 *
 *   header, CT_CACHE_PERSIST_HDR_LEN (64) bytes:
 *     0 "CACHETSN"  8 u32 format version  12 u32 key scheme (CT_CACHE_KEY_SCHEME)
 *    16 f64 time written (wall clock)  24 char build[32], NUL-padded
 *    56 u32 0 (reserved)  60 u32 crc32 of bytes 0..59
 *   records, one per object, oldest response first (each shard's SIEVE
 *   order, merged by response_time), so that a load into a smaller store
 *   evicts among the oldest ones:
 *     u32 LEN, u32 crc32 of (the LEN field, then the LEN payload bytes),
 *     payload: u16 status, u16 ntags, u32 key, head, etag, last-modified,
 *     date and vary lengths, u64 body length, f64 response_time, expires,
 *     initial_age, grace, keep, u32 fetch cost (µs; version 2); then the key,
 *     head, etag, last-modified, date and vary bytes, each tag as u16
 *     length + bytes, the body bytes.
 *
 * Why these fields: they are everything ct_obj_set_head takes (the ttl is
 * expires - response_time + initial_age, so a soft purge's lowered expiry
 * survives), and what the fetch cost (ct_obj_set_fetch_us: a restored hit
 * still credits the origin time it saves, and cache.eviction = "cost"
 * keeps weighing it; version 1 files lacked it), so a load goes through the one path that makes objects (a
 * lookup's BUSY object, set_head, append, complete) and nothing else has to
 * know how an object is laid out. Times are wall-clock (the monotonic clock
 * restarts at boot): an object's age keeps growing while it is on disk, as
 * RFC 9111 §4.2.3 counts age from response_time. The key's hash is not
 * stored: it is computed again, so a seed change cannot misplace a key.
 *
 * Refusals: a header that is short, not ours, of another version or key
 * scheme, or whose checksum fails refuses the whole input; a record whose
 * checksum fails or whose fields do not add up is skipped (its length says
 * where the next one starts; a length past the end stops the load).
 *
 * Threads: save walks the shards one lock at a time and writes with no lock
 * held; load may run beside lookups (it uses their path), but is meant for
 * before the listeners accept.
 */
#include <math.h>
#include <stdio.h>
#include <zlib.h>

#include "cache/cache_int.h"

#define MAGIC "CACHETSN"
#define REC_FIXED 80 /* the payload's fixed part */
#define REC_TAGS_MAX (CT_CACHE_TAGS_MAX * (2 + CT_CACHE_TAG_MAX_LEN))

/* ---- little-endian fields ---------------------------------------------------- */

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void putf(unsigned char *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof(v));
    put64(p, v);
}

static uint16_t get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static double getf(const unsigned char *p)
{
    uint64_t v = get64(p);
    double d;
    memcpy(&d, &v, sizeof(d));
    return d;
}

static uint32_t crc(uint32_t c, const void *p, size_t n)
{
    /* zlib's crc32 takes a uInt length: feed large bodies in slices */
    while (n) {
        uInt k = (uInt)CT_MIN(n, (size_t)1 << 30);
        c = (uint32_t)crc32(c, p, k);
        p = (const char *)p + k;
        n -= k;
    }
    return c;
}

/* ---- header ---------------------------------------------------------------------- */

void ct_cache_persist_header(unsigned char out[CT_CACHE_PERSIST_HDR_LEN], ct_time_t written,
                             const char *build)
{
    memset(out, 0, CT_CACHE_PERSIST_HDR_LEN);
    memcpy(out, MAGIC, 8);
    put32(out + 8, CT_CACHE_PERSIST_VERSION);
    put32(out + 12, CT_CACHE_KEY_SCHEME);
    putf(out + 16, written);
    if (build)
        memcpy(out + 24, build, CT_MIN(strlen(build), (size_t)31));
    put32(out + 60, crc(0, out, 60));
}

int ct_cache_persist_header_check(const void *buf, size_t len, struct ct_cache_persist_hdr *h,
                                  char *err, size_t errlen)
{
    const unsigned char *p = buf;
    memset(h, 0, sizeof(*h));
    if (len < CT_CACHE_PERSIST_HDR_LEN) {
        snprintf(err, errlen, "%zu bytes, shorter than a header (%d): truncated or empty", len,
                 CT_CACHE_PERSIST_HDR_LEN);
        return CT_EPROTO;
    }
    if (memcmp(p, MAGIC, 8) != 0) {
        snprintf(err, errlen, "not a cachet snapshot (no \"" MAGIC "\" at the start)");
        return CT_EPROTO;
    }
    if (get32(p + 60) != crc(0, p, 60)) {
        snprintf(err, errlen, "header checksum mismatch: corrupted");
        return CT_EPROTO;
    }
    h->version = get32(p + 8);
    h->key_scheme = get32(p + 12);
    h->written = getf(p + 16);
    memcpy(h->build, p + 24, 31);
    h->build[31] = '\0';
    for (char *c = h->build; *c; c++) /* for logs: printable only */
        if (*c < 0x20 || *c > 0x7e)
            *c = '?';
    if (h->version != CT_CACHE_PERSIST_VERSION) {
        snprintf(err, errlen, "format version %u, this build reads %u (written by %s)",
                 (unsigned)h->version, CT_CACHE_PERSIST_VERSION, h->build);
        return CT_EPROTO;
    }
    if (h->key_scheme != CT_CACHE_KEY_SCHEME) {
        snprintf(err, errlen, "cache key scheme %u, this build uses %u (written by %s)",
                 (unsigned)h->key_scheme, CT_CACHE_KEY_SCHEME, h->build);
        return CT_EPROTO;
    }
    if (!isfinite(h->written)) {
        snprintf(err, errlen, "time written is not a number: corrupted");
        return CT_EPROTO;
    }
    return CT_OK;
}

/* ---- writing ------------------------------------------------------------------------ */

/* One object's record, gathered with no lock held but for the tags. */
struct rec_out {
    unsigned char fixed[8 + REC_FIXED]; /* LEN, crc, the fixed payload */
    struct ct_str parts[6];             /* key, head, etag, lm, date, vary */
    unsigned char *tags;                /* REC_TAGS_MAX bytes of scratch */
    size_t tags_len;
    struct ct_str *tag_views; /* CT_CACHE_TAGS_MAX */
    char *tag_bytes;          /* CT_CACHE_TAGS_MAX * CT_CACHE_TAG_MAX_LEN */
};

typedef int piece_fn(void *arg, const void *p, size_t n);

/* Every piece of OBJ's record after LEN and crc, in order, to FN. */
static int each_piece(const struct ct_obj *obj, const struct rec_out *r, piece_fn *fn, void *arg)
{
    int rc = fn(arg, r->fixed + 8, REC_FIXED);
    for (size_t i = 0; rc == CT_OK && i < CT_ARRAY_LEN(r->parts); i++)
        rc = r->parts[i].len ? fn(arg, r->parts[i].p, r->parts[i].len) : CT_OK;
    if (rc == CT_OK && r->tags_len)
        rc = fn(arg, r->tags, r->tags_len);
    struct ct_obj_body_pos pos = CT_OBJ_BODY_POS_INIT;
    struct ct_str chunk;
    while (rc == CT_OK && ct_obj_body_next(obj, &pos, 0, &chunk) == CT_OBJ_BODY_DATA)
        rc = fn(arg, chunk.p, chunk.len);
    return rc;
}

static int crc_piece(void *arg, const void *p, size_t n)
{
    uint32_t *c = arg;
    *c = crc(*c, p, n);
    return CT_OK;
}

struct sink {
    ct_cache_persist_write_fn *write;
    void *arg;
};

static int write_piece(void *arg, const void *p, size_t n)
{
    struct sink *s = arg;
    return s->write(s->arg, p, n);
}

/* Lay out OBJ's record in R; false if it cannot be one (too long a field). */
static bool rec_layout(struct ct_obj *obj, struct rec_out *r, uint64_t *len)
{
    r->parts[0] = ct_str_make(obj->key, obj->key_len);
    r->parts[1] = ct_obj_head(obj);
    r->parts[2] = ct_obj_etag(obj);
    r->parts[3] = ct_obj_last_modified(obj);
    r->parts[4] = ct_obj_date(obj);
    r->parts[5] = ct_obj_vary(obj);
    size_t ntags = ct_obj_tags(obj, r->tag_views, CT_CACHE_TAGS_MAX, r->tag_bytes,
                               (size_t)CT_CACHE_TAGS_MAX * CT_CACHE_TAG_MAX_LEN);
    r->tags_len = 0;
    for (size_t i = 0; i < ntags; i++) {
        put16(r->tags + r->tags_len, (uint16_t)r->tag_views[i].len);
        memcpy(r->tags + r->tags_len + 2, r->tag_views[i].p, r->tag_views[i].len);
        r->tags_len += 2 + r->tag_views[i].len;
    }
    uint64_t body = ct_obj_body_len(obj);
    unsigned char *f = r->fixed + 8;
    put16(f, (uint16_t)obj->status);
    put16(f + 2, (uint16_t)ntags);
    uint64_t total = REC_FIXED + r->tags_len + body;
    for (size_t i = 0; i < CT_ARRAY_LEN(r->parts); i++) {
        put32(f + 4 + 4 * i, (uint32_t)r->parts[i].len);
        total += r->parts[i].len;
    }
    put64(f + 28, body);
    putf(f + 36, obj->response_time);
    putf(f + 44, obj_expires(obj));
    putf(f + 52, (double)obj->initial_age);
    putf(f + 60, (double)obj->grace);
    putf(f + 68, (double)obj->keep);
    put32(f + 76, ct_obj_fetch_us(obj));
    if (total > UINT32_MAX)
        return false;
    *len = total;
    return true;
}

static int write_record(struct ct_obj *obj, struct rec_out *r, struct sink *s,
                        struct ct_cache_persist_counts *n)
{
    uint64_t len;
    if (!rec_layout(obj, r, &len))
        return CT_OK; /* objects are < 4 GiB (ct_obj's size field): cannot happen */
    put32(r->fixed, (uint32_t)len);
    uint32_t c = crc(0, r->fixed, 4);
    each_piece(obj, r, crc_piece, &c);
    put32(r->fixed + 4, c);
    int rc = s->write(s->arg, r->fixed, 8);
    if (rc == CT_OK)
        rc = each_piece(obj, r, write_piece, s);
    if (rc == CT_OK) {
        n->objects++;
        n->body_bytes += ct_obj_body_len(obj);
        n->file_bytes += 8 + len;
    }
    return rc;
}

/* Append references to SH's complete objects, oldest first, to *V (N used,
 * CAP allocated; the caller releases them and frees it). Pending bans are
 * applied on the way, as a lookup would: a hard match is removed and not
 * saved, a soft one is saved stale. Expired ones are left out. */
static void collect(struct ct_cache_shard *sh, ct_time_t now, struct ct_obj ***vp, size_t *np,
                    size_t *capp)
{
    pthread_mutex_lock(&sh->mtx);
    if (*np + sh->qlen > *capp) {
        *capp = CT_MAX(*np + sh->qlen, *capp * 2);
        *vp = ct_xrealloc(*vp, *capp * sizeof(**vp));
    }
    struct ct_obj **v = *vp;
    size_t n = *np;
    struct ct_obj *obj, *prev;
    CT_LIST_FOREACH_REVERSE_SAFE(obj, &sh->q, qlink, prev) {
        if ((obj->flags & OBJ_F_HFM) || ct_cache_obj_state(obj) != CT_OBJ_COMPLETE)
            continue;
        if (ct_cache_ban_due(sh->cache) && ct_cache_ban_test(sh, obj, now)) {
            ct_cache_obj_invalidate(sh, obj, CT_CACHE_PURGE_HARD, now);
            continue;
        }
        if (!ct_cache_obj_is_expired(obj, now))
            v[n++] = ct_cache_obj_ref(obj);
    }
    pthread_mutex_unlock(&sh->mtx);
    *np = n;
}

/* Oldest response first; equal times keep their shard order (qsort is not
 * stable, so the position breaks ties: the array is sorted by (time, index)
 * through a copy of each index taken before). */
struct by_time {
    struct ct_obj *obj;
    size_t idx;
};

static int cmp_time(const void *a, const void *b)
{
    const struct by_time *x = a, *y = b;
    if (x->obj->response_time != y->obj->response_time)
        return x->obj->response_time < y->obj->response_time ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void sort_by_time(struct ct_obj **v, size_t n)
{
    struct by_time *t = ct_xmalloc((n ? n : 1) * sizeof(*t));
    for (size_t i = 0; i < n; i++)
        t[i] = (struct by_time){v[i], i};
    qsort(t, n, sizeof(*t), cmp_time);
    for (size_t i = 0; i < n; i++)
        v[i] = t[i].obj;
    free(t);
}

int ct_cache_persist_save(struct ct_cache *cache, ct_time_t now, const char *build,
                          ct_cache_persist_write_fn *write, void *arg,
                          struct ct_cache_persist_counts *n)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    memset(n, 0, sizeof(*n));
    unsigned char hdr[CT_CACHE_PERSIST_HDR_LEN];
    ct_cache_persist_header(hdr, now, build);
    int rc = write(arg, hdr, sizeof(hdr));
    n->file_bytes = sizeof(hdr);
    struct rec_out r;
    r.tags = ct_xmalloc(REC_TAGS_MAX);
    r.tag_views = ct_xmalloc(CT_CACHE_TAGS_MAX * sizeof(*r.tag_views));
    r.tag_bytes = ct_xmalloc((size_t)CT_CACHE_TAGS_MAX * CT_CACHE_TAG_MAX_LEN);
    struct sink s = {write, arg};
    /* a reference on every object at once (8 bytes each), so that the file
     * can be in one order across shards: a smaller store loading it evicts
     * round-robin across shards, each from its oldest */
    struct ct_obj **v = NULL;
    size_t cnt = 0, cap = 0;
    for (unsigned i = 0; i < cache->cfg.shards; i++)
        collect(&cache->shards[i], now, &v, &cnt, &cap);
    sort_by_time(v, cnt);
    for (size_t k = 0; k < cnt; k++) {
        if (rc == CT_OK)
            rc = write_record(v[k], &r, &s, n);
        ct_obj_release(&v[k]);
    }
    free(v);
    free(r.tags);
    free(r.tag_views);
    free(r.tag_bytes);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------ */

struct rec_in {
    unsigned status;
    struct ct_str parts[6]; /* key, head, etag, lm, date, vary */
    struct ct_str tags[CT_CACHE_TAGS_MAX];
    size_t ntags;
    struct ct_str body;
    double response_time, expires, initial_age, grace, keep;
    uint32_t fetch_us;
};

/* Decode payload P[0..LEN) into R (views into P); NULL or why not. */
static const char *rec_decode(const unsigned char *p, size_t len, struct rec_in *r)
{
    if (len < REC_FIXED)
        return "shorter than its fixed part";
    r->status = get16(p);
    r->ntags = get16(p + 2);
    uint64_t body = get64(p + 28);
    size_t off = REC_FIXED;
    if (r->status < 100 || r->status > 999)
        return "status out of range";
    if (r->ntags > CT_CACHE_TAGS_MAX)
        return "too many tags";
    for (size_t i = 0; i < CT_ARRAY_LEN(r->parts); i++) {
        uint32_t n = get32(p + 4 + 4 * i);
        if (n > len - off)
            return "a field runs past the record";
        r->parts[i] = ct_str_make((const char *)p + off, n);
        off += n;
    }
    for (size_t i = 0; i < r->ntags; i++) {
        if (len - off < 2)
            return "a tag runs past the record";
        size_t n = get16(p + off);
        if (n == 0 || n > CT_CACHE_TAG_MAX_LEN || n > len - off - 2)
            return "a tag is empty, too long or runs past the record";
        r->tags[i] = ct_str_make((const char *)p + off + 2, n);
        off += 2 + n;
    }
    if (body != len - off)
        return "the body length does not match the record's";
    r->body = ct_str_make((const char *)p + off, (size_t)body);
    r->response_time = getf(p + 36);
    r->expires = getf(p + 44);
    r->initial_age = getf(p + 52);
    r->grace = getf(p + 60);
    r->keep = getf(p + 68);
    r->fetch_us = get32(p + 76);
    /* Bounds the object can hold as it is (durations are floats, so a
     * larger one would come back as infinity) and that leave its sums
     * finite: times in the epoch's first 3000 years, durations under 10. */
    const double t[] = {r->response_time, r->expires, r->initial_age, r->grace, r->keep};
    for (size_t i = 0; i < CT_ARRAY_LEN(t); i++)
        if (!(t[i] >= 0 && t[i] <= (i < 2 ? 1e11 : 3.2e8)))
            return "a time or a duration is out of range (or not a number)";
    /* cache_key.c's layout: a method class, NUL, host, NUL, target... */
    struct ct_str k = r->parts[0];
    if (k.len < 3 || k.p[1] != '\0' || memchr(k.p + 2, '\0', k.len - 2) == NULL ||
        (k.p[0] != CT_CACHE_MCLASS_GET && k.p[0] != CT_CACHE_MCLASS_OTHER))
        return "the key is not a cache key";
    if (r->parts[4].len > UINT16_MAX)
        return "the date is too long";
    return NULL;
}

/* Make R an object of CACHE through the lookup path. */
static enum ct_cache_persist_fate restore(struct ct_cache *cache, const struct rec_in *r,
                                          ct_time_t now)
{
    if (now >= r->expires + r->grace + r->keep)
        return CT_CACHE_PERSIST_EXPIRED;
    struct ct_cache_key key;
    ct_cache_key_from_bytes(r->parts[0], &key);
    /* revalidate: a fresh object found is handed back with a fetch slot
     * (as STALE), so that a record of another variant is stored beside one
     * that answers every request (stored without Vary) instead of being
     * taken for it; only the same Vary bytes make a duplicate */
    struct ct_cache_lookup_req req = {
        .key = &key, .vary = r->parts[5], .revalidate = true, .uncounted = true};
    struct ct_cache_lookup_res res;
    ct_cache_lookup(cache, &req, now, &res);
    enum ct_cache_persist_fate fate = CT_CACHE_PERSIST_DUPLICATE;
    bool dup = (res.obj && ct_str_eq(ct_obj_vary(res.obj), r->parts[5])) || res.busy;
    if (res.fetch && !dup) {
        struct ct_obj_meta m = {
            .status = r->status,
            .head = r->parts[1],
            .etag = r->parts[2],
            .last_modified = r->parts[3],
            .date = r->parts[4],
            .vary = r->parts[5],
            .response_time = r->response_time,
            .initial_age = r->initial_age,
            .ttl = r->expires - r->response_time + r->initial_age,
            .grace = r->grace,
            .keep = r->keep,
            .body_hint = r->body.len,
            .tags = r->tags,
            .ntags = r->ntags,
        };
        fate = CT_CACHE_PERSIST_NOROOM;
        if (ct_obj_set_head(res.fetch, &m) != CT_OK) {
            ct_obj_abandon(res.fetch, now, 0);
        } else if (ct_obj_append(res.fetch, r->body.p, r->body.len) != CT_OK) {
            ct_obj_fail(res.fetch);
        } else {
            ct_obj_set_fetch_us(res.fetch, r->fetch_us);
            ct_obj_complete(res.fetch, now);
            fate = CT_CACHE_PERSIST_LOADED;
        }
    } else if (res.fetch) {
        ct_obj_abandon(res.fetch, now, 0); /* that copy is there already */
    } else if (!dup) {
        fate = CT_CACHE_PERSIST_NOROOM; /* not even the entry fits */
    }
    ct_cache_lookup_res_release(&res);
    return fate;
}

static void refuse(struct ct_cache_persist_report *rep, size_t off, const char *why)
{
    rep->refused++;
    if (rep->why[0] == '\0')
        snprintf(rep->why, sizeof(rep->why), "record at byte %zu: %s", off, why);
}

void ct_cache_persist_load(struct ct_cache *cache, const void *buf, size_t len, ct_time_t now,
                           struct ct_cache_persist_report *rep)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    const unsigned char *p = buf;
    memset(rep, 0, sizeof(*rep));
    if (ct_cache_persist_header_check(buf, len, &rep->hdr, rep->why, sizeof(rep->why)) != CT_OK) {
        rep->header_refused = true;
        return;
    }
    struct rec_in *r = ct_xmalloc(sizeof(*r));
    size_t off = CT_CACHE_PERSIST_HDR_LEN;
    while (off < len) {
        rep->records++;
        if (len - off < 8) {
            refuse(rep, off, "truncated (shorter than a record's length and checksum)");
            break;
        }
        uint32_t n = get32(p + off);
        if (n > len - off - 8) {
            refuse(rep, off, "truncated (its length runs past the end)");
            break;
        }
        uint32_t c = crc(crc(0, p + off, 4), p + off + 8, n);
        const char *why = c != get32(p + off + 4) ? "checksum mismatch: corrupted"
                                                  : rec_decode(p + off + 8, n, r);
        if (why) {
            refuse(rep, off, why);
        } else {
            enum ct_cache_persist_fate f = restore(cache, r, now);
            rep->fates[f]++;
            if (f == CT_CACHE_PERSIST_LOADED)
                rep->body_bytes += r->body.len;
        }
        off += 8 + (size_t)n;
    }
    free(r);
    struct ct_cache_shard *sh = &cache->shards[0];
    atomic_fetch_add_explicit(&sh->st.restored, rep->fates[CT_CACHE_PERSIST_LOADED],
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&sh->st.restore_refused, rep->refused, memory_order_relaxed);
}
