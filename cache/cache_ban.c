/*
 * cache/cache_ban.c: bans (cache/cache.h), Varnish-style: an expression over
 * the stored objects' own fields, tested lazily at lookup and by a lurker
 * that walks the store in bounded slices, dropped once every object older
 * than it was tested.
 *
 * Objects owned here: struct ban (one per active ban: its text, its parsed
 * terms with their JIT-compiled PCRE2 regexes, its counters), in one list,
 * newest first, owned by struct ct_cache_bans (one per store).
 *
 * Memory: a ban's bytes (ban_cost: its allocations with malloc's overhead,
 * and each regex's compiled and JIT code as PCRE2 reports them) are charged
 * to the store's byte budget when it is added, evicting objects if need be
 * (issue 16: a pile of bans must not grow memory past cache.size), and given
 * back when it is dropped; ct_cache_stats' ban_bytes shows them.
 *
 * Which bans an object still needs: each object carries ban_seq, the id of
 * the newest ban it was tested against (or the newest there was when its
 * head was set: its response is newer than all of those). Ids only grow, so
 * the bans it needs are exactly those of the list with id > ban_seq, a prefix
 * of the list. Dropping a ban never makes an object need it again.
 *
 * The lurker's walk: at its start it notes the newest id (its target), then
 * visits every shard's SIEVE queue from the oldest object toward the newest
 * (objects never move in it; new ones join at the newest end, with ban_seq
 * already >= target), testing each object whose ban_seq < target. BUSY
 * objects have no head to test; they take the current id when it is set, so
 * they never need a ban older than that. When the walk has passed every
 * shard, every object older than a ban of id <= target has been tested (or
 * has left the store): those bans are dropped.
 *
 * Locks (order in cache/cache.h): lurk_mtx (the walk's state) -> shard lock
 * -> lock (the list, a rwlock: read by tests, written by add and drop). The
 * counters of a ban are atomics, bumped under the read lock.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache/cache_int.h"

enum field { F_URL, F_HOST, F_STATUS, F_HTTP };
enum op { OP_EQ, OP_NE, OP_RE, OP_NRE, OP_PREFIX };

struct term {
    enum field field;
    enum op op;
    struct ct_str name; /* F_HTTP: the field name (points into ban->text's copy) */
    char *val;          /* unescaped, owned */
    size_t val_len;
    pcre2_code *re;     /* OP_RE, OP_NRE */
};

struct ban {
    struct ban *older;
    uint64_t id;
    ct_time_t created;
    bool soft;
    char *text; /* as given, owned */
    size_t text_len;
    size_t bytes; /* counted against the store's budget (ban_cost) */
    unsigned nterms;
    struct term terms[CT_CACHE_BAN_MAX_TERMS];
    _Atomic uint64_t tested, banned;
};

struct ct_cache_bans {
    pthread_rwlock_t lock;
    struct ban *newest;   /* lock */
    unsigned n;           /* lock */
    _Atomic uint64_t seq; /* the newest id given; written under lock (write) */
    _Atomic uint64_t added, refused, completed;
    _Atomic uint64_t bytes; /* the active bans' counted bytes (part of cache->bytes) */
    /* the lurker's walk, under lurk_mtx */
    pthread_mutex_t lurk_mtx;
    bool walking, shard_started;
    uint64_t target;
    unsigned shard;
    size_t walked, total;
    _Atomic unsigned progress; /* per mille, read relaxed by stats */
};

/* ---- parsing ------------------------------------------------------------------ */

struct lex {
    const char *s;
    size_t len, i;
    char *err;
    size_t errlen;
};

static int fail(struct lex *lx, size_t at, const char *fmt, ...) CT_PRINTF(3, 4);
static int fail(struct lex *lx, size_t at, const char *fmt, ...)
{
    int n = snprintf(lx->err, lx->errlen, "column %zu: ", at + 1);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < lx->errlen)
        vsnprintf(lx->err + n, lx->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return CT_EPROTO;
}

static void skip_ws(struct lex *lx)
{
    while (lx->i < lx->len && (lx->s[lx->i] == ' ' || lx->s[lx->i] == '\t' ||
                               lx->s[lx->i] == '\n' || lx->s[lx->i] == '\r'))
        lx->i++;
}

static bool at(const struct lex *lx, const char *tok)
{
    size_t n = strlen(tok);
    return lx->len - lx->i >= n && memcmp(lx->s + lx->i, tok, n) == 0;
}

static bool is_ident(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '-' || ch == '_';
}

/* An HTTP field name (RFC 9110 §5.1 token), ASCII letters, digits and the
 * token punctuation that reads unambiguously here. */
static bool is_name(struct ct_str n)
{
    if (n.len == 0)
        return false;
    for (size_t i = 0; i < n.len; i++)
        if (!is_ident(n.p[i]) || n.p[i] == '.')
            return false;
    return true;
}

#define FIELDS_HELP "obj.url, obj.host, obj.status or obj.http.NAME"

static int parse_field(struct lex *lx, struct term *t)
{
    size_t start = lx->i;
    while (lx->i < lx->len && is_ident(lx->s[lx->i]))
        lx->i++;
    struct ct_str id = ct_str_make(lx->s + start, lx->i - start);
    if (id.len == 0)
        return fail(lx, start, "expected a field (" FIELDS_HELP ")");
    if (ct_str_eq(id, CT_STR("req")) || (id.len > 4 && memcmp(id.p, "req.", 4) == 0))
        return fail(lx, start,
                    "%.*s: req.* terms need the request, which the lurker does not have "
                    "(they would pile up); ban on " FIELDS_HELP,
                    (int)id.len, id.p);
    if (ct_str_eq(id, CT_STR("obj.url"))) {
        t->field = F_URL;
    } else if (ct_str_eq(id, CT_STR("obj.host"))) {
        t->field = F_HOST;
    } else if (ct_str_eq(id, CT_STR("obj.status"))) {
        t->field = F_STATUS;
    } else if (id.len > 9 && memcmp(id.p, "obj.http.", 9) == 0) {
        t->field = F_HTTP;
        t->name = ct_str_make(id.p + 9, id.len - 9);
        if (!is_name(t->name))
            return fail(lx, start + 9, "\"%.*s\" is not a field name", (int)t->name.len,
                        t->name.p);
    } else {
        return fail(lx, start, "unknown field \"%.*s\" (expected " FIELDS_HELP ")", (int)id.len,
                    id.p);
    }
    return CT_OK;
}

static int parse_op(struct lex *lx, struct term *t)
{
    static const struct {
        const char *tok;
        enum op op;
    } ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"!~", OP_NRE}, {"^=", OP_PREFIX}, {"~", OP_RE}};
    for (size_t k = 0; k < CT_ARRAY_LEN(ops); k++) {
        if (at(lx, ops[k].tok)) {
            t->op = ops[k].op;
            lx->i += strlen(ops[k].tok);
            return CT_OK;
        }
    }
    if (lx->i == lx->len)
        return fail(lx, lx->i, "expected ==, !=, ~, !~ or ^= after the field, found the end");
    return fail(lx, lx->i, "expected ==, !=, ~, !~ or ^=, found '%c'", lx->s[lx->i]);
}

static int parse_value(struct lex *lx, struct term *t)
{
    size_t start = lx->i;
    if (lx->i < lx->len && t->field == F_STATUS && lx->s[lx->i] >= '0' && lx->s[lx->i] <= '9') {
        while (lx->i < lx->len && lx->s[lx->i] >= '0' && lx->s[lx->i] <= '9')
            lx->i++;
        t->val_len = lx->i - start;
        t->val = ct_xstrndup(lx->s + start, t->val_len);
        return CT_OK;
    }
    if (lx->i >= lx->len || lx->s[lx->i] != '"')
        return fail(lx, lx->i, "expected a \"quoted\" value%s",
                    t->field == F_STATUS ? " or a number" : "");
    char *buf = ct_xmalloc(lx->len - lx->i + 1);
    size_t n = 0;
    for (lx->i++; lx->i < lx->len && lx->s[lx->i] != '"'; lx->i++) {
        char ch = lx->s[lx->i];
        if (ch == '\\') {
            if (lx->i + 1 >= lx->len)
                break;
            ch = lx->s[++lx->i];
            if (ch != '"' && ch != '\\') {
                free(buf);
                return fail(lx, lx->i - 1,
                            "unknown escape \\%c in a value (only \\\" and \\\\; a regex "
                            "escape such as \\. is written \\\\.)",
                            ch);
            }
        }
        buf[n++] = ch;
    }
    if (lx->i >= lx->len) {
        free(buf);
        return fail(lx, start, "unterminated string (no closing \")");
    }
    lx->i++;
    buf[n] = '\0';
    t->val = ct_xrealloc(buf, n + 1); /* its exact size: ban_cost counts n + 1 */
    t->val_len = n;
    return CT_OK;
}

static int compile(struct lex *lx, struct term *t, size_t val_at)
{
    int code;
    PCRE2_SIZE off;
    t->re = pcre2_compile((PCRE2_SPTR)t->val, t->val_len, 0, &code, &off, NULL);
    if (t->re == NULL) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof(msg));
        return fail(lx, val_at, "bad regex: %s (at byte %zu of the pattern)", (const char *)msg,
                    (size_t)off);
    }
    /* JIT where the platform has it; the interpreter otherwise (same result). */
    pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE);
    return CT_OK;
}

/* What B holds, as the budget counts it: each allocation with malloc's
 * overhead, and for a regex its compiled code and its JIT code, as PCRE2
 * reports them (PCRE2_INFO_SIZE, PCRE2_INFO_JITSIZE). */
static size_t ban_cost(const struct ban *b)
{
    size_t n = sizeof(*b) + CT_CACHE_MALLOC_OVERHEAD + b->text_len + 1 + CT_CACHE_MALLOC_OVERHEAD;
    for (unsigned i = 0; i < b->nterms; i++) {
        const struct term *t = &b->terms[i];
        if (t->val)
            n += t->val_len + 1 + CT_CACHE_MALLOC_OVERHEAD;
        size_t code = 0, jit = 0;
        if (t->re && pcre2_pattern_info(t->re, PCRE2_INFO_SIZE, &code) == 0)
            n += code + CT_CACHE_MALLOC_OVERHEAD;
        if (t->re && pcre2_pattern_info(t->re, PCRE2_INFO_JITSIZE, &jit) == 0)
            n += jit;
    }
    return n;
}

static void ban_free(struct ban *b)
{
    for (unsigned i = 0; i < b->nterms; i++) {
        free(b->terms[i].val);
        pcre2_code_free(b->terms[i].re);
    }
    free(b->text);
    free(b);
}

/* Parse B->text into B's terms. */
static int parse(struct ban *b, char *err, size_t errlen)
{
    struct lex lx = {b->text, b->text_len, 0, err, errlen};
    if (b->text_len > CT_CACHE_BAN_MAX_LEN)
        return fail(&lx, CT_CACHE_BAN_MAX_LEN, "longer than %d bytes", CT_CACHE_BAN_MAX_LEN);
    if (memchr(b->text, '\0', b->text_len))
        return fail(&lx, (size_t)((char *)memchr(b->text, '\0', b->text_len) - b->text),
                    "a NUL byte");
    for (;;) {
        skip_ws(&lx);
        if (lx.i == lx.len)
            return fail(&lx, lx.i, "expected a term such as obj.url ^= \"/img/\"");
        if (b->nterms == CT_CACHE_BAN_MAX_TERMS)
            return fail(&lx, lx.i, "more than %d terms", CT_CACHE_BAN_MAX_TERMS);
        struct term *t = &b->terms[b->nterms++];
        int rc = parse_field(&lx, t);
        if (rc == CT_OK) {
            skip_ws(&lx);
            rc = parse_op(&lx, t);
        }
        size_t val_at = 0;
        if (rc == CT_OK) {
            skip_ws(&lx);
            val_at = lx.i;
            rc = parse_value(&lx, t);
        }
        if (rc == CT_OK && (t->op == OP_RE || t->op == OP_NRE))
            rc = compile(&lx, t, val_at);
        if (rc != CT_OK)
            return rc;
        skip_ws(&lx);
        if (lx.i == lx.len)
            return CT_OK;
        if (at(&lx, "||"))
            return fail(&lx, lx.i, "|| is not supported: add one ban per alternative");
        if (!at(&lx, "&&"))
            return fail(&lx, lx.i, "expected && or the end, found '%c'", lx.s[lx.i]);
        lx.i += 2;
    }
}

static struct ban *ban_parse(const char *expr, size_t len, char *err, size_t errlen)
{
    struct ban *b = ct_xcalloc(1, sizeof(*b));
    b->text = ct_xstrndup(expr, len);
    b->text_len = len;
    if (parse(b, err, errlen) != CT_OK) {
        ban_free(b);
        return NULL;
    }
    return b;
}

/* ---- testing an object ------------------------------------------------------------ */

/* What one test needs of an object, read once. */
struct subject {
    const struct ct_obj *obj;
    ct_cache_field_fn *field;
    struct ct_str host, target;
    char status[8];
    pcre2_match_data *md; /* made at the first regex, freed by the tester */
    bool limited;         /* a regex hit BAN_MATCH_LIMIT */
};

/* A regex's work on one value is bounded, as Varnish bounds it
 * (pcre2_match_limit, 10 000 by default): a pattern that backtracks without
 * end (`^(a+)+$` on a long run of a's) would hold a shard's lock for the
 * lurker's whole slice. A term whose match hits the bound is false, ~ and
 * !~ alike: the object is not banned on a verdict nobody reached. */
#define BAN_MATCH_LIMIT 10000
static pthread_once_t match_once = PTHREAD_ONCE_INIT;
static pcre2_match_context *match_ctx; /* read-only once made: shared by every thread */

static void match_ctx_make(void)
{
    match_ctx = pcre2_match_context_create(NULL);
    if (match_ctx)
        pcre2_set_match_limit(match_ctx, BAN_MATCH_LIMIT);
}

static bool term_matches(const struct term *t, struct subject *s)
{
    struct ct_str v;
    bool have = true;
    switch (t->field) {
    case F_URL: v = s->target; break;
    case F_HOST: v = s->host; break;
    case F_STATUS: v = ct_str_c(s->status); break;
    case F_HTTP: have = s->field && s->field(s->obj, t->name, &v); break;
    }
    if (!have) /* an absent field equals nothing and matches nothing */
        return t->op == OP_NE || t->op == OP_NRE;
    switch (t->op) {
    case OP_EQ: return ct_str_eq(v, ct_str_make(t->val, t->val_len));
    case OP_NE: return !ct_str_eq(v, ct_str_make(t->val, t->val_len));
    case OP_PREFIX: return v.len >= t->val_len && memcmp(v.p, t->val, t->val_len) == 0;
    case OP_RE:
    case OP_NRE: {
        if (s->md == NULL)
            s->md = pcre2_match_data_create(1, NULL);
        CT_ASSERT(s->md != NULL);
        pthread_once(&match_once, match_ctx_make);
        /* rc 0: a match with too small an ovector, still a match */
        int rc = pcre2_match(t->re, (PCRE2_SPTR)(v.p ? v.p : ""), v.len, 0, 0, s->md, match_ctx);
        if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
            rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT) {
            s->limited = true;
            return false;
        }
        return (rc >= 0) == (t->op == OP_RE);
    }
    }
    return false;
}

static bool ban_matches(const struct ban *b, struct subject *s)
{
    for (unsigned i = 0; i < b->nterms; i++)
        if (!term_matches(&b->terms[i], s))
            return false;
    return true;
}

uint64_t ct_cache_ban_seq(const struct ct_cache *cache)
{
    return atomic_load_explicit(&cache->bans->seq, memory_order_acquire);
}

bool ct_cache_ban_test(struct ct_cache_shard *sh, struct ct_obj *obj, ct_time_t now)
{
    struct ct_cache *cache = sh->cache;
    struct ct_cache_bans *bs = cache->bans;
    (void)now;
    /* tested against everything already: no lock (a hit while bans are active) */
    if (obj->ban_seq >= ct_cache_ban_seq(cache))
        return false;
    struct subject s = {.obj = obj, .field = cache->cfg.field};
    bool hard = false;
    pthread_rwlock_rdlock(&bs->lock);
    struct ban *b = bs->newest;
    if (b && obj->ban_seq < b->id) {
        CT_STAT_INC(sh, ban_tested);
        ct_cache_key_parts(obj->key, obj->key_len, &s.host, &s.target);
        snprintf(s.status, sizeof(s.status), "%u", (unsigned)obj->status);
        for (; b && b->id > obj->ban_seq; b = b->older) {
            atomic_fetch_add_explicit(&b->tested, 1, memory_order_relaxed);
            if (!ban_matches(b, &s))
                continue;
            atomic_fetch_add_explicit(&b->banned, 1, memory_order_relaxed);
            if (!b->soft) {
                hard = true;
                break;
            }
            /* stale since the ban; never unlinks a STREAMING/COMPLETE object */
            ct_cache_obj_invalidate(sh, obj, CT_CACHE_PURGE_SOFT, b->created);
            CT_STAT_INC(sh, soft_banned);
        }
        obj->ban_seq = bs->newest->id;
    } else if (b) {
        obj->ban_seq = b->id;
    }
    pthread_rwlock_unlock(&bs->lock);
    pcre2_match_data_free(s.md);
    if (hard)
        CT_STAT_INC(sh, banned);
    if (s.limited)
        CT_STAT_INC(sh, ban_regex_limited);
    return hard;
}

/* ---- the list ------------------------------------------------------------------------ */

int ct_cache_ban_add(struct ct_cache *cache, const char *expr, size_t len, bool soft,
                     ct_time_t now, uint64_t *id, char *err, size_t errlen)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    struct ct_cache_bans *bs = cache->bans;
    CT_ASSERT(errlen > 0);
    err[0] = '\0';
    struct ban *b = ban_parse(expr, len, err, errlen);
    if (b == NULL)
        return CT_EPROTO;
    b->soft = soft;
    b->created = now;
    b->bytes = ban_cost(b);
    /* Before the ban lock: reserving may evict, which takes shard locks. */
    if (ct_cache_reserve(cache, b->bytes) != CT_OK) {
        snprintf(err, errlen, "the ban needs %zu bytes of the cache's %llu (cache.size)", b->bytes,
                 (unsigned long long)cache->cfg.max_bytes);
        ban_free(b);
        atomic_fetch_add_explicit(&bs->refused, 1, memory_order_relaxed);
        return CT_ELIMIT;
    }
    pthread_rwlock_wrlock(&bs->lock);
    if (bs->n >= cache->cfg.max_bans) {
        pthread_rwlock_unlock(&bs->lock);
        ct_cache_unreserve(cache, b->bytes);
        ban_free(b);
        atomic_fetch_add_explicit(&bs->refused, 1, memory_order_relaxed);
        snprintf(err, errlen,
                 "%u bans are active, the most cache.max_bans allows: wait for the lurker to "
                 "drop some (GET /bans shows its progress)",
                 cache->cfg.max_bans);
        return CT_ELIMIT;
    }
    b->id = atomic_load_explicit(&bs->seq, memory_order_relaxed) + 1;
    b->older = bs->newest;
    bs->newest = b;
    bs->n++;
    atomic_store_explicit(&bs->seq, b->id, memory_order_release);
    atomic_store_explicit(&cache->nbans, bs->n, memory_order_relaxed);
    atomic_fetch_add_explicit(&bs->bytes, b->bytes, memory_order_relaxed);
    *id = b->id; /* before the unlock: the lurker may drop and free B at once */
    pthread_rwlock_unlock(&bs->lock);
    atomic_fetch_add_explicit(&bs->added, 1, memory_order_relaxed);
    return CT_OK;
}

void ct_cache_ban_set_max(struct ct_cache *cache, unsigned max_bans)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    struct ct_cache_bans *bs = cache->bans;
    pthread_rwlock_wrlock(&bs->lock); /* ct_cache_ban_add reads it under this lock */
    cache->cfg.max_bans = max_bans ? max_bans : 1000;
    pthread_rwlock_unlock(&bs->lock);
}

size_t ct_cache_ban_each(struct ct_cache *cache,
                         void (*fn)(const struct ct_cache_ban_info *ban, void *arg), void *arg)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    struct ct_cache_bans *bs = cache->bans;
    size_t n = 0;
    pthread_rwlock_rdlock(&bs->lock);
    for (struct ban *b = bs->newest; b; b = b->older, n++) {
        struct ct_cache_ban_info info = {
            .id = b->id,
            .created = b->created,
            .expr = ct_str_make(b->text, b->text_len),
            .soft = b->soft,
            .tested = atomic_load_explicit(&b->tested, memory_order_relaxed),
            .banned = atomic_load_explicit(&b->banned, memory_order_relaxed),
        };
        fn(&info, arg);
    }
    pthread_rwlock_unlock(&bs->lock);
    return n;
}

/* Drop every ban of id <= UPTO (the oldest ones: the list's tail). */
static void drop_upto(struct ct_cache *cache, uint64_t upto)
{
    struct ct_cache_bans *bs = cache->bans;
    struct ban *gone = NULL;
    size_t k = 0;
    pthread_rwlock_wrlock(&bs->lock);
    for (struct ban **pp = &bs->newest; *pp; pp = &(*pp)->older) {
        if ((*pp)->id <= upto) {
            gone = *pp;
            *pp = NULL;
            break;
        }
    }
    for (struct ban *b = gone; b; b = b->older)
        k++;
    bs->n -= (unsigned)k;
    atomic_store_explicit(&cache->nbans, bs->n, memory_order_relaxed);
    pthread_rwlock_unlock(&bs->lock);
    while (gone) {
        struct ban *older = gone->older;
        atomic_fetch_sub_explicit(&bs->bytes, gone->bytes, memory_order_relaxed);
        ct_cache_unreserve(cache, gone->bytes);
        ban_free(gone);
        gone = older;
    }
    atomic_fetch_add_explicit(&bs->completed, k, memory_order_relaxed);
}

/* ---- the lurker ---------------------------------------------------------------------- */

/* Walk up to QUOTA objects of SH from its cursor toward the newest (lurk_mtx
 * held). True when the shard's walk is over. */
static bool lurk_run(struct ct_cache_bans *bs, struct ct_cache_shard *sh, ct_time_t now,
                     size_t quota, size_t *examined)
{
    pthread_mutex_lock(&sh->mtx);
    if (!bs->shard_started) {
        sh->lurk = CT_LIST_LAST(&sh->q);
        bs->shard_started = true;
    }
    struct ct_obj *obj = sh->lurk;
    while (obj && quota--) {
        struct ct_obj *next = CT_LIST_PREV(obj, qlink);
        enum ct_obj_state st = ct_cache_obj_state(obj);
        (*examined)++;
        if (!(obj->flags & OBJ_F_HFM) && (st == CT_OBJ_STREAMING || st == CT_OBJ_COMPLETE) &&
            obj->ban_seq < bs->target) {
            CT_STAT_INC(sh, ban_lurker_tested);
            if (ct_cache_ban_test(sh, obj, now))
                ct_cache_obj_invalidate(sh, obj, CT_CACHE_PURGE_HARD, now);
        }
        obj = next;
    }
    sh->lurk = obj;
    pthread_mutex_unlock(&sh->mtx);
    return obj == NULL;
}

size_t ct_cache_ban_lurk(struct ct_cache *cache, ct_time_t now, size_t budget)
{
    CT_CHECK_OBJ(cache, CT_CACHE_MAGIC);
    struct ct_cache_bans *bs = cache->bans;
    size_t examined = 0;
    if (!ct_cache_ban_due(cache))
        return 0;
    pthread_mutex_lock(&bs->lurk_mtx);
    if (!bs->walking) {
        bs->walking = true;
        bs->target = ct_cache_ban_seq(cache);
        bs->shard = 0;
        bs->shard_started = false;
        bs->walked = 0;
        bs->total = atomic_load_explicit(&cache->objects, memory_order_relaxed);
    }
    while (examined < budget && bs->walking) {
        size_t quota = CT_MIN(budget - examined, (size_t)CT_CACHE_BAN_LURK_RUN), before = examined;
        if (lurk_run(bs, &cache->shards[bs->shard], now, quota, &examined)) {
            bs->shard_started = false;
            if (++bs->shard == cache->cfg.shards) {
                bs->walking = false;
                drop_upto(cache, bs->target);
            }
        }
        bs->walked += examined - before;
    }
    unsigned pm = 1000;
    if (bs->walking)
        pm = (unsigned)CT_MIN((size_t)999, bs->total ? bs->walked * 1000 / bs->total : 0);
    atomic_store_explicit(&bs->progress, pm, memory_order_relaxed);
    pthread_mutex_unlock(&bs->lurk_mtx);
    return examined;
}

/* ---- life and stats -------------------------------------------------------------------- */

void ct_cache_bans_init(struct ct_cache *cache)
{
    struct ct_cache_bans *bs = ct_xcalloc(1, sizeof(*bs));
    CT_ASSERT(pthread_rwlock_init(&bs->lock, NULL) == 0);
    CT_ASSERT(pthread_mutex_init(&bs->lurk_mtx, NULL) == 0);
    atomic_init(&bs->progress, 1000);
    cache->bans = bs;
}

void ct_cache_bans_fini(struct ct_cache *cache)
{
    struct ct_cache_bans *bs = cache->bans;
    while (bs->newest) {
        struct ban *b = bs->newest;
        bs->newest = b->older;
        ct_cache_unreserve(cache, b->bytes);
        ban_free(b);
    }
    pthread_rwlock_destroy(&bs->lock);
    pthread_mutex_destroy(&bs->lurk_mtx);
    free(bs);
    cache->bans = NULL;
}

void ct_cache_bans_stats(const struct ct_cache *cache, struct ct_cache_stats *st)
{
    struct ct_cache_bans *bs = cache->bans;
    st->bans_active = atomic_load_explicit(&cache->nbans, memory_order_relaxed);
    st->bans_added = atomic_load_explicit(&bs->added, memory_order_relaxed);
    st->bans_refused = atomic_load_explicit(&bs->refused, memory_order_relaxed);
    st->bans_completed = atomic_load_explicit(&bs->completed, memory_order_relaxed);
    st->ban_lurker_progress = atomic_load_explicit(&bs->progress, memory_order_relaxed);
    st->ban_bytes = atomic_load_explicit(&bs->bytes, memory_order_relaxed);
}
