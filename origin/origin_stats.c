/*
 * origin/origin_stats.c: how many requests each path got, for tests that
 * count origin fetches (GET /_origin/stats, POST /_origin/stats/reset).
 *
 * One table per worker, each behind its own mutex: the worker that owns it is
 * the only one counting, so the lock is uncontended on the request path.
 * Reading or resetting takes every table's lock, always in worker order (no
 * deadlock: counting never holds two). A table keeps at most CT_OSTATS_MAX
 * distinct paths; past that only the total grows, so a scan of random URLs
 * cannot eat memory. Reset zeroes the counts and keeps the keys (zero counts
 * are not shown), so the request path never frees.
 */
#include <pthread.h>
#include <stdlib.h>

#include "origin/origin_int.h"

#define CT_OSTATS_MAX 4096
#define CT_OSTATS_SLOTS 8192 /* power of two, twice the maximum: short probes */

struct ostat {
    char *path; /* NULL: empty slot */
    size_t len;
    uint64_t hash;
    uint64_t count;
};

struct ct_ostats {
    pthread_mutex_t mtx;
    uint64_t total;
    size_t used;
    struct ostat slot[CT_OSTATS_SLOTS];
};

struct ct_ostats *ct_ostats_new(void)
{
    struct ct_ostats *s = ct_xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->mtx, NULL);
    return s;
}

void ct_ostats_free(struct ct_ostats **sp)
{
    struct ct_ostats *s = *sp;
    if (!s)
        return;
    for (size_t i = 0; i < CT_OSTATS_SLOTS; i++)
        free(s->slot[i].path);
    pthread_mutex_destroy(&s->mtx);
    CT_FREE(sp);
}

static uint64_t fnv1a(struct ct_str s)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < s.len; i++)
        h = (h ^ (unsigned char)s.p[i]) * 1099511628211ull;
    return h;
}

void ct_ostats_count(struct ct_ostats *s, struct ct_str path)
{
    uint64_t h = fnv1a(path);
    pthread_mutex_lock(&s->mtx);
    s->total++;
    for (size_t i = h & (CT_OSTATS_SLOTS - 1);; i = (i + 1) & (CT_OSTATS_SLOTS - 1)) {
        struct ostat *e = &s->slot[i];
        if (!e->path) {
            if (s->used == CT_OSTATS_MAX)
                break;
            e->path = ct_xstrndup(path.p, path.len);
            e->len = path.len;
            e->hash = h;
            e->count = 1;
            s->used++;
            break;
        }
        if (e->hash == h && ct_str_eq(ct_str_make(e->path, e->len), path)) {
            e->count++;
            break;
        }
    }
    pthread_mutex_unlock(&s->mtx);
}

void ct_ostats_reset(struct ct_ostats *s)
{
    pthread_mutex_lock(&s->mtx);
    s->total = 0;
    for (size_t i = 0; i < CT_OSTATS_SLOTS; i++)
        s->slot[i].count = 0;
    pthread_mutex_unlock(&s->mtx);
}

static int by_path(const void *a, const void *b)
{
    const struct ostat *x = *(const struct ostat *const *)a, *y = *(const struct ostat *const *)b;
    int c = memcmp(x->path, y->path, CT_MIN(x->len, y->len));
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

void ct_ostats_json(struct ct_ostats *const *tables, size_t n, struct ct_buf *out)
{
    uint64_t total = 0;
    size_t cnt = 0;
    for (size_t t = 0; t < n; t++)
        pthread_mutex_lock(&tables[t]->mtx);
    for (size_t t = 0; t < n; t++)
        cnt += tables[t]->used;
    struct ostat **v = ct_xmalloc((cnt ? cnt : 1) * sizeof(*v));
    cnt = 0;
    for (size_t t = 0; t < n; t++) {
        total += tables[t]->total;
        for (size_t i = 0; i < CT_OSTATS_SLOTS; i++)
            if (tables[t]->slot[i].count)
                v[cnt++] = &tables[t]->slot[i];
    }
    qsort(v, cnt, sizeof(*v), by_path);
    CT_BUF_LIT(out, "{\"total\": ");
    ct_buf_put_u64(out, total);
    CT_BUF_LIT(out, ", \"paths\": {");
    for (size_t i = 0; i < cnt;) {
        /* The same path counted by several workers: one key, summed. */
        uint64_t sum = 0;
        size_t j = i;
        while (j < cnt && by_path(&v[i], &v[j]) == 0)
            sum += v[j++]->count;
        if (i)
            CT_BUF_LIT(out, ", ");
        ct_buf_json_str(out, ct_str_make(v[i]->path, v[i]->len), CT_JSON_BYTES);
        CT_BUF_LIT(out, ": ");
        ct_buf_put_u64(out, sum);
        i = j;
    }
    CT_BUF_LIT(out, "}}\n");
    for (size_t t = n; t-- > 0;)
        pthread_mutex_unlock(&tables[t]->mtx);
    free(v);
}
