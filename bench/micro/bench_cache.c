/*
 * bench/micro/bench_cache.c: micro-benchmark of the cache store (one thread
 * unless said), through cache/cache.h only.
 *
 *   1. insert/s: lookup-miss + set_head + append + complete + release, 1 M keys
 *   2. counted bytes per object, and the overhead beyond key + head + body
 *   3. lookup/s on those 1 M keys (hit + release), uniform and Zipf order,
 *      with the key hash precomputed (as the proxy does once per request),
 *      with hashing included, and with the whole key built from host + target
 *      (and that building alone)
 *   4. hit ratio on a Zipf trace (default 1 M requests over 100 k keys, cache
 *      ~10 % of the keys, alpha 0.9 and 1.0): the store (sharded SIEVE) vs an
 *      exact LRU and an exact single-queue SIEVE of the same object capacity
 *
 * Usage: bench_cache [--keys N] [--lookups N] [--lookups-only] [--quick].
 * Prints a plain-text table. --lookups-only runs only the uniform lookups,
 * raw and with key building (for callgrind --cache-sim=yes: per-call costs
 * of ct_cache_lookup and ct_cache_key_build).
 * It is a CPU hog for a few seconds: run it alone (bench/README.md).
 *
 * Reading the uniform 1 M-key figure: it is bound by memory latency, not by
 * instructions. A hit reads the key's slot (8 bytes, its address comes from
 * the hash; the 16 MiB of slots mostly stay in the 32 MiB L3) and then the
 * object, whose lookup fields and key bytes are contiguous (cache_int.h),
 * and it must do a locked increment on the object's refcount: a line unique
 * to the object. 1 M objects are >= 64 MiB of such lines, more than L3, so
 * nearly every uniform hit waits for one DRAM round trip. On the 2-core EPYC
 * VM this was measured on, a dependent load over 512 MiB costs ~205 ns with
 * 4 KiB pages and ~159 ns with transparent huge pages (pointer chase,
 * pinned, quiet moment; ~200 ns either way when the other core is busy);
 * the instructions of a raw hit cost ~38 ns (--keys 10000: ~26 M/s). One at
 * a time that is 1 / (205 + 38) ns = 4.1 M/s with 4 KiB pages and
 * 1 / (159 + 38) ns = 5.1 M/s with huge pages: 5 M/s uniform needs huge
 * pages under the objects (GLIBC_TUNABLES=glibc.malloc.hugetlb=1) and a quiet
 * machine. The raw loop reads a little above that bound because the CPU's
 * out-of-order window starts the next lookup's slot load while this one
 * waits; the proxy does thousands of instructions between two lookups, so
 * the per-request figure to expect is the one with key building, where the
 * late hash leaves no such overlap (slot miss + object miss + ~75 ns).
 * Cache-resident figures (--keys 10000, Zipf) measure the instructions.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache.h"

#define T0 1000000.0

/* Rates are per second of this thread's CPU time, not wall time: the
 * machine is shared (bench/README.md: CPU per request removes most of the
 * noise); a run on an idle core gives the same figure in wall time. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift64*: fast, good enough for traces */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static double rng01(void)
{
    return (double)(rng() >> 11) / (double)(1ULL << 53);
}

/* ---- keys ----------------------------------------------------------------- */

struct keyset {
    size_t n;
    char *bytes; /* n keys, KEY_STRIDE each */
    struct ct_cache_key *keys;
    char *targets; /* n request targets, TARGET_STRIDE each, NUL-terminated */
    unsigned char *target_len;
};
#define KEY_STRIDE 48
#define TARGET_STRIDE 24
#define BENCH_HOST "bench.example"

static void keyset_init(struct keyset *ks, size_t n)
{
    ks->n = n;
    ks->bytes = malloc(n * KEY_STRIDE);
    ks->keys = malloc(n * sizeof(*ks->keys));
    ks->targets = malloc(n * TARGET_STRIDE);
    ks->target_len = malloc(n);
    struct ct_cache_key_opts o = {.query = CT_CACHE_QUERY_KEEP, .header_name = {NULL, 0}};
    for (size_t i = 0; i < n; i++) {
        char *target = ks->targets + i * TARGET_STRIDE;
        ks->target_len[i] = (unsigned char)snprintf(target, TARGET_STRIDE, "/obj/%zu", i);
        struct ct_cache_key_in in = {
            CT_CACHE_MCLASS_GET, CT_STR(BENCH_HOST), 80, ct_str_c(target), {NULL, 0}, {NULL, 0}};
        if (ct_cache_key_build(&o, &in, ks->bytes + i * KEY_STRIDE, KEY_STRIDE, &ks->keys[i]))
            abort();
    }
}

static void keyset_free(struct keyset *ks)
{
    free(ks->bytes);
    free(ks->keys);
    free(ks->targets);
    free(ks->target_len);
}

/* ---- store helpers ---------------------------------------------------------- */

static const char HEAD[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 64\r\n";
static char BODY[64];

static bool fill(struct ct_obj *obj)
{
    struct ct_obj_meta m = {.status = 200,
                            .head = CT_STR(HEAD),
                            .response_time = T0,
                            .ttl = 1e6,
                            .body_hint = sizeof(BODY)};
    if (ct_obj_set_head(obj, &m) != CT_OK || ct_obj_append(obj, BODY, sizeof(BODY)) != CT_OK) {
        ct_obj_abandon(obj, T0, 0);
        return false;
    }
    ct_obj_complete(obj, T0);
    return true;
}

static enum ct_cache_lookup get(struct ct_cache *c, const struct ct_cache_key *k, bool insert)
{
    struct ct_cache_lookup_req req = {k, {"", 0}, NULL, NULL, !insert, false, false};
    struct ct_cache_lookup_res res;
    enum ct_cache_lookup kind = ct_cache_lookup(c, &req, T0, &res);
    if (res.fetch)
        fill(res.fetch);
    ct_cache_lookup_res_release(&res);
    return kind;
}

/* Lookup inputs. The proxy looks up a key it has just built from a request
 * it has just parsed: the request bytes and the key are in L1, only the
 * store's memory is cold. So the inputs are precomputed, in lookup order, a
 * chunk at a time outside the timed loop (copied from the key set), and the
 * timed loop reads them sequentially: nothing of the store is touched while
 * preparing, and nothing is allocated per lookup. (Before, the loop read the
 * key set at random with software prefetches 8 lookups ahead: two or three
 * extra random DRAM lines per lookup competing with the store's, which is
 * why "key building alone" read ~150 ns for ~40 ns of work.) */
#define CHUNK 2048
struct lk_chunk {
    struct ct_cache_key keys[CHUNK];
    char bytes[CHUNK][KEY_STRIDE];
    struct ct_str targets[CHUNK];
    char tbytes[CHUNK][TARGET_STRIDE];
};

enum lk_mode {
    LK_RAW,        /* hash precomputed (the proxy hashes once per request) */
    LK_HASH,       /* XXH64 of the key bytes, then lookup */
    LK_BUILD,      /* key built from host + target (lower-case, port, XXH64), then lookup */
    LK_BUILD_ONLY, /* the key building alone */
};

static void chunk_fill(struct lk_chunk *ch, const struct keyset *ks, const uint32_t *order,
                       size_t m)
{
    for (size_t j = 0; j < m; j++) {
        size_t k = order[j];
        const struct ct_cache_key *src = &ks->keys[k];
        memcpy(ch->bytes[j], src->bytes.p, src->bytes.len);
        ch->keys[j] = (struct ct_cache_key){src->hash, {ch->bytes[j], src->bytes.len}};
        memcpy(ch->tbytes[j], ks->targets + k * TARGET_STRIDE, ks->target_len[k]);
        ch->targets[j] = ct_str_make(ch->tbytes[j], ks->target_len[k]);
    }
}

/* N lookups in ORDER, one at a time as the proxy does; returns CPU seconds
 * spent in the timed loops. *HITS counts CT_CACHE_HIT (or a checksum). */
static double run_lookups(struct ct_cache *c, const struct keyset *ks, const uint32_t *order,
                          size_t n, enum lk_mode mode, struct lk_chunk *ch, size_t *hits)
{
    const struct ct_cache_key_opts kopts = {.query = CT_CACHE_QUERY_KEEP, .header_name = {NULL, 0}};
    double busy = 0;
    *hits = 0;
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t m = CT_MIN((size_t)CHUNK, n - i);
        chunk_fill(ch, ks, order + i, m);
        double t = now_s();
        for (size_t j = 0; j < m; j++) {
            struct ct_cache_key k;
            char kbuf[KEY_STRIDE];
            switch (mode) {
            case LK_RAW:
                *hits += get(c, &ch->keys[j], false) == CT_CACHE_HIT;
                break;
            case LK_HASH:
                ct_cache_key_from_bytes(ch->keys[j].bytes, &k);
                *hits += get(c, &k, false) == CT_CACHE_HIT;
                break;
            case LK_BUILD:
            case LK_BUILD_ONLY: {
                struct ct_cache_key_in in = {
                    CT_CACHE_MCLASS_GET, CT_STR(BENCH_HOST), 80, ch->targets[j], {NULL, 0}, {NULL, 0}};
                if (ct_cache_key_build(&kopts, &in, kbuf, sizeof(kbuf), &k) != CT_OK)
                    abort();
                if (mode == LK_BUILD)
                    *hits += get(c, &k, false) == CT_CACHE_HIT;
                else
                    *hits += k.hash != 0;
                break;
            }
            }
        }
        busy += now_s() - t;
    }
    return busy;
}

/* Several threads looking up the same store (the last Zipf order): shards
 * mean no global lock, so the aggregate should scale with cores. Reported
 * per CPU-second of each thread and as wall-clock aggregate. */
struct lthread {
    struct ct_cache *c;
    const struct keyset *ks;
    const uint32_t *order;
    size_t from, n;
    double cpu_s;
};

static void *lookup_thread(void *arg)
{
    struct lthread *t = arg;
    struct lk_chunk *ch = malloc(sizeof(*ch));
    size_t hits;
    t->cpu_s = run_lookups(t->c, t->ks, t->order + t->from, t->n, LK_RAW, ch, &hits);
    free(ch);
    return NULL;
}

static void bench_threads(struct ct_cache *c, const struct keyset *ks, const uint32_t *order,
                          size_t n)
{
    enum { NT = 2 };
    pthread_t th[NT];
    struct lthread lt[NT];
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    for (int i = 0; i < NT; i++) {
        lt[i] = (struct lthread){c, ks, order, i * (n / NT), n / NT, 0};
        pthread_create(&th[i], NULL, lookup_thread, &lt[i]);
    }
    double per_cpu = 0;
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        per_cpu += (double)lt[i].n / lt[i].cpu_s;
    }
    clock_gettime(CLOCK_MONOTONIC, &w1);
    double wall = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9;
    printf("lookup, %d threads, same store (last Zipf order): %.2f M/s summed per CPU-second, "
           "%.2f M/s wall-clock aggregate (includes preparing inputs)\n",
           NT, per_cpu / 1e6, (double)(n / NT * NT) / wall / 1e6);
}

/* ---- 1-3: throughput and memory ----------------------------------------------- */

/* AnonHugePages of this process in KiB (-1: unknown), to tell whether the
 * store's memory is on transparent huge pages (the uniform figure depends
 * on it; GLIBC_TUNABLES=glibc.malloc.hugetlb=1 makes malloc ask for them). */
static long anon_huge_kib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static size_t opt_lookups;    /* 0: max(4 x keys, 4 M) */
static bool opt_lookups_only; /* uniform raw + with key building only */

static void bench_throughput(size_t nkeys)
{
    struct keyset ks;
    keyset_init(&ks, nkeys);
    struct ct_cache_config cfg = {
        .max_bytes = (size_t)8 << 30, .max_object_size = 1 << 20, .shards = 64};
    struct ct_cache *c = ct_cache_new(&cfg);
    struct ct_cache_stats st0, st;
    ct_cache_stats(c, &st0);

    double t = now_s();
    for (size_t i = 0; i < nkeys; i++)
        get(c, &ks.keys[i], true);
    double dt_ins = now_s() - t;
    ct_cache_stats(c, &st);
    printf("insert (miss+head+body+complete), %zu keys: %.2f M/s\n", nkeys, nkeys / dt_ins / 1e6);

    double per_obj = (double)st.bytes / st.objects;
    double payload = (double)(ks.keys[0].bytes.len + strlen(HEAD) + sizeof(BODY));
    printf("counted bytes per object: %.0f (key %zu + head %zu + body %zu = %.0f payload; "
           "overhead %.0f incl. buckets)\n",
           per_obj, ks.keys[0].bytes.len, strlen(HEAD), sizeof(BODY), payload, per_obj - payload);
    printf("  objects %llu keys %llu bytes %llu (of which empty table %llu); "
           "on huge pages: %ld MiB\n",
           (unsigned long long)st.objects, (unsigned long long)st.keys,
           (unsigned long long)st.bytes, (unsigned long long)st0.bytes, anon_huge_kib() / 1024);

    size_t nlook = opt_lookups ? opt_lookups : CT_MAX(nkeys * 4, (size_t)4000000);
    uint32_t *order = malloc(nlook * sizeof(*order));
    for (size_t i = 0; i < nlook; i++)
        order[i] = (uint32_t)(rng() % nkeys);
    struct lk_chunk *ch = malloc(sizeof(*ch));
    size_t hits;
    double dt = run_lookups(c, &ks, order, nlook, LK_RAW, ch, &hits);
    printf("lookup hit+release, uniform over %zu keys: %.2f M/s (%zu/%zu hits)\n", nkeys,
           nlook / dt / 1e6, hits, nlook);
    if (!opt_lookups_only) {
        dt = run_lookups(c, &ks, order, nlook, LK_HASH, ch, &hits);
        printf("lookup incl. XXH64 of the key, uniform: %.2f M/s\n", nlook / dt / 1e6);
        dt = run_lookups(c, &ks, order, nlook, LK_BUILD_ONLY, ch, &hits);
        printf("key building alone (host + target, XXH64): %.1f ns per key (%s)\n",
               dt / nlook * 1e9, hits == nlook ? "ok" : "?");
    }
    /* What the proxy does per request: build the key from the Host field and
     * the request target into a stack buffer, then look it up. */
    dt = run_lookups(c, &ks, order, nlook, LK_BUILD, ch, &hits);
    printf("lookup incl. building the key from host + target, uniform: %.2f M/s (%zu hits)\n",
           nlook / dt / 1e6, hits);

    /* Zipf order: real traffic is skewed, so the hot part stays in CPU caches. */
    const double alphas[] = {0.9, 0.99, 1.2};
    double *cdf = malloc(nkeys * sizeof(*cdf));
    for (size_t a = 0; a < CT_ARRAY_LEN(alphas) && !opt_lookups_only; a++) {
        double sum = 0;
        for (size_t i = 0; i < nkeys; i++)
            cdf[i] = (sum += 1.0 / pow((double)(i + 1), alphas[a]));
        for (size_t i = 0; i < nlook; i++) {
            double u = rng01() * sum;
            size_t lo = 0, hi = nkeys - 1;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (cdf[mid] < u)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            order[i] = (uint32_t)((lo * 2654435761u) % nkeys); /* rank -> scattered key */
        }
        dt = run_lookups(c, &ks, order, nlook, LK_RAW, ch, &hits);
        printf("lookup hit+release, Zipf %.2f over %zu keys: %.2f M/s\n", alphas[a], nkeys,
               nlook / dt / 1e6);
    }
    free(cdf);
    free(ch);
    if (!opt_lookups_only)
        bench_threads(c, &ks, order, nlook);
    free(order);
    ct_cache_free(&c);
    keyset_free(&ks);
}

/* ---- 4: hit ratio --------------------------------------------------------------- */

/* Exact LRU over object ids, capacity CAP: arrays, O(1) per request. */
static double sim_lru(const uint32_t *trace, size_t n, size_t nkeys, size_t cap)
{
    int32_t *prev = malloc(nkeys * 4), *next = malloc(nkeys * 4);
    char *in = calloc(nkeys, 1);
    int32_t head = -1, tail = -1;
    size_t size = 0, hits = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t k = (int32_t)trace[i];
        if (in[k]) {
            hits++;
            if (head == k)
                continue;
            next[prev[k]] = next[k]; /* unlink */
            if (next[k] >= 0)
                prev[next[k]] = prev[k];
            else
                tail = prev[k];
        } else if (size == cap) {
            int32_t v = tail; /* evict the least recently used */
            tail = prev[v];
            if (tail >= 0)
                next[tail] = -1;
            else
                head = -1;
            in[v] = 0;
        } else {
            size++;
        }
        in[k] = 1;
        prev[k] = -1;
        next[k] = head;
        if (head >= 0)
            prev[head] = k;
        head = k;
        if (tail < 0)
            tail = k;
    }
    free(prev);
    free(next);
    free(in);
    return (double)hits / n;
}

/* Exact single-queue SIEVE (the paper's algorithm), same capacity. */
static double sim_sieve(const uint32_t *trace, size_t n, size_t nkeys, size_t cap)
{
    int32_t *prev = malloc(nkeys * 4), *next = malloc(nkeys * 4); /* next: toward tail */
    char *in = calloc(nkeys, 1), *vis = calloc(nkeys, 1);
    int32_t head = -1, tail = -1, hand = -1;
    size_t size = 0, hits = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t k = (int32_t)trace[i];
        if (in[k]) {
            hits++;
            vis[k] = 1;
            continue;
        }
        if (size == cap) {
            int32_t o = hand >= 0 ? hand : tail;
            while (vis[o]) {
                vis[o] = 0;
                o = prev[o] >= 0 ? prev[o] : tail;
            }
            hand = prev[o];
            if (prev[o] >= 0)
                next[prev[o]] = next[o];
            else
                head = next[o];
            if (next[o] >= 0)
                prev[next[o]] = prev[o];
            else
                tail = prev[o];
            in[o] = 0;
            size--;
        }
        in[k] = 1;
        vis[k] = 0;
        prev[k] = -1;
        next[k] = head;
        if (head >= 0)
            prev[head] = k;
        head = k;
        if (tail < 0)
            tail = k;
        size++;
    }
    free(prev);
    free(next);
    free(in);
    free(vis);
    return (double)hits / n;
}

static uint32_t *zipf_trace(size_t n, size_t nkeys, double alpha)
{
    double *cdf = malloc(nkeys * sizeof(*cdf)), sum = 0;
    for (size_t i = 0; i < nkeys; i++)
        cdf[i] = (sum += 1.0 / pow((double)(i + 1), alpha));
    /* rank -> a random key id, so popularity is not correlated with id */
    uint32_t *perm = malloc(nkeys * sizeof(*perm));
    for (size_t i = 0; i < nkeys; i++)
        perm[i] = (uint32_t)i;
    for (size_t i = nkeys - 1; i > 0; i--) {
        size_t j = rng() % (i + 1);
        uint32_t x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    uint32_t *trace = malloc(n * sizeof(*trace));
    for (size_t i = 0; i < n; i++) {
        double u = rng01() * sum;
        size_t lo = 0, hi = nkeys - 1;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        trace[i] = perm[lo];
    }
    free(cdf);
    free(perm);
    return trace;
}

/* Run TRACE through a store whose cap holds about CAP_OBJS objects. Returns
 * the hit ratio; *HELD receives the mean number of objects held in the second
 * half (the capacity the exact simulations then get, for a fair comparison:
 * bucket growth and shard imbalance are the store's to pay). */
static double run_store(const uint32_t *trace, size_t n, const struct keyset *ks, size_t cap_objs,
                        unsigned shards, double *held)
{
    /* measure one object's counted size in a scratch store */
    struct ct_cache_config cfg = {
        .max_bytes = 64 << 20, .max_object_size = 64 << 10, .shards = shards};
    struct ct_cache *c = ct_cache_new(&cfg);
    struct ct_cache_stats st0, st;
    ct_cache_stats(c, &st0);
    get(c, &ks->keys[0], true);
    ct_cache_stats(c, &st);
    size_t obj_bytes = st.bytes - st0.bytes;
    ct_cache_free(&c);

    /* bucket arrays grow to ~ objects per shard, 8 bytes each: budget them */
    cfg.max_bytes = st0.bytes + cap_objs * (obj_bytes + 8);
    c = ct_cache_new(&cfg);
    size_t hits = 0;
    double held_sum = 0;
    size_t held_n = 0;
    for (size_t i = 0; i < n; i++) {
        hits += get(c, &ks->keys[trace[i]], true) == CT_CACHE_HIT;
        if (i >= n / 2 && i % 1000 == 0) {
            ct_cache_stats(c, &st);
            held_sum += (double)st.objects;
            held_n++;
        }
    }
    *held = held_sum / (double)held_n;
    ct_cache_free(&c);
    return (double)hits / n;
}

static void bench_hit_ratio(size_t nreq, size_t nkeys, double cache_frac)
{
    struct keyset ks;
    keyset_init(&ks, nkeys);
    size_t cap = (size_t)(nkeys * cache_frac);
    printf("\nhit ratio, Zipf trace: %zu requests over %zu keys, cache ~%zu objects (%.0f %%)\n",
           nreq, nkeys, cap, cache_frac * 100);
    printf("  %-6s %-22s %-10s %-14s %-10s %s\n", "alpha", "store (SIEVE, shards)", "held",
           "exact SIEVE", "exact LRU", "store vs LRU (miss ratio)");
    const double alphas[] = {0.8, 0.9, 1.0, 1.1};
    for (size_t a = 0; a < CT_ARRAY_LEN(alphas); a++) {
        uint32_t *trace = zipf_trace(nreq, nkeys, alphas[a]);
        const unsigned shard_opts[] = {64, 1};
        for (size_t s = 0; s < CT_ARRAY_LEN(shard_opts); s++) {
            double held;
            double h_store = run_store(trace, nreq, &ks, cap, shard_opts[s], &held);
            size_t c2 = (size_t)held;
            double h_sieve = sim_sieve(trace, nreq, nkeys, c2);
            double h_lru = sim_lru(trace, nreq, nkeys, c2);
            printf("  %-6.2f %6.4f (%2u shards)     %-10zu %-14.4f %-10.4f %+.1f %%\n", alphas[a],
                   h_store, shard_opts[s], c2, h_sieve, h_lru,
                   100.0 * ((1 - h_store) - (1 - h_lru)) / (1 - h_lru));
        }
        free(trace);
    }
    keyset_free(&ks);
}

/* ---- tags (issue 16) -----------------------------------------------------------
 *
 * NKEYS objects with 10 tags each: "shared" on every 10th object (100 k of
 * 1 M), the others from a pool of NKEYS/10 tags (so each pool tag sits on
 * about 9 objects), or with UNIQUE nine tags of its own, as
 * bench/invalidation/fill.lua stores them (so the purge also frees 9 tags
 * per object). Reports the index's bytes per link and the CPU time a purge
 * of "shared" takes (what `POST /purge?tag=shared` costs its thread); the
 * p99 of hits during it is measured end to end by bench/invalidation/inval.sh. */
static void bench_tags(size_t nkeys, bool unique)
{
    struct ct_cache_config cfg = {.max_bytes = (size_t)4 << 30, .max_object_size = 1 << 20};
    struct ct_cache *c = ct_cache_new(&cfg);
    struct keyset ks;
    keyset_init(&ks, nkeys);
    size_t pool = nkeys / 10 ? nkeys / 10 : 1;
    char names[10][24];
    struct ct_str tags[10];
    double t0 = now_s();
    for (size_t i = 0; i < nkeys; i++) {
        size_t n = 0;
        if (i % 10 == 0)
            tags[n++] = CT_STR("shared");
        while (n < 10) {
            int len = unique ? snprintf(names[n], sizeof(names[n]), "u%zux%zu", i, n)
                             : snprintf(names[n], sizeof(names[n]), "t%zu", (size_t)(rng() % pool));
            tags[n] = ct_str_make(names[n], (size_t)len);
            n++;
        }
        struct ct_cache_lookup_req req = {&ks.keys[i], {"", 0}, NULL, NULL, false, false, false};
        struct ct_cache_lookup_res res;
        ct_cache_lookup(c, &req, T0, &res);
        if (res.fetch) {
            struct ct_obj_meta m = {.status = 200, .head = CT_STR(HEAD), .response_time = T0,
                                    .ttl = 1e6, .tags = tags, .ntags = n};
            if (ct_obj_set_head(res.fetch, &m) == CT_OK)
                ct_obj_complete(res.fetch, T0);
            else
                ct_obj_abandon(res.fetch, T0, 0);
        }
        ct_cache_lookup_res_release(&res);
    }
    double t1 = now_s();
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    printf("tags (%s): %zu objects x 10 tags stored in %.2f s; index %llu links, %llu tags, "
           "%.1f bytes per link (structs of distinct tags included)\n",
           unique ? "9 unique per object" : "pool", nkeys, t1 - t0, (unsigned long long)st.tag_links, (unsigned long long)st.tags,
           (double)st.tag_bytes / (double)st.tag_links);
    double p0 = now_s();
    size_t purged = ct_cache_purge_tag(c, CT_STR("shared"), CT_CACHE_PURGE_HARD, T0);
    double p1 = now_s();
    printf("tags: purge of the tag on %zu objects: %.1f ms CPU (%.0f ns per object)\n", purged,
           (p1 - p0) * 1e3, (p1 - p0) * 1e9 / (double)(purged ? purged : 1));
    /* what the purge left the lurker thread: tag unlinks and frees */
    ct_cache_stats(c, &st);
    size_t pending = st.reclaim_pending;
    p0 = now_s();
    size_t reclaimed = ct_cache_reclaim(c, SIZE_MAX);
    p1 = now_s();
    printf("tags: then the lurker's part, %zu objects (%zu were waiting): %.1f ms CPU\n", reclaimed,
           pending, (p1 - p0) * 1e3);
    if (!unique) {
        p0 = now_s();
        size_t soft = ct_cache_purge_tag(c, CT_STR("t7"), CT_CACHE_PURGE_SOFT, T0);
        p1 = now_s();
        printf("tags: soft purge of a pool tag (%zu objects): %.3f ms\n", soft, (p1 - p0) * 1e3);
    }
    ct_cache_free(&c);
    keyset_free(&ks);
}

/* ---- bans (issue 16) -----------------------------------------------------------
 *
 * NKEYS objects, each with "X-Tag: tN" (N = i % 10). One thread looks up
 * random keys and times each lookup (wall clock: what a waiting client sees)
 * for a fixed time three times: with no ban, while the lurker works a ban
 * off at its defaults (1000 objects per slice, 10 ms apart), and while it runs
 * flat out (no pause). The ban matches one object in 100 with a regex:
 *     obj.http.x-tag == "t3" && obj.url ~ "73$"
 * Reports each phase's lookup p50 / p99 / p99.9, and the lurker's wall and
 * CPU time for the whole store. */
static bool bench_field(const struct ct_obj *obj, struct ct_str name, struct ct_str *value)
{
    struct ct_str h = ct_obj_head(obj);
    const char *p = memchr(h.p, '\n', h.len), *end = h.p + h.len;
    while (p && ++p < end) {
        const char *eol = memchr(p, '\r', (size_t)(end - p));
        const char *colon = memchr(p, ':', (size_t)(end - p));
        if (eol == NULL || colon == NULL || colon > eol)
            return false;
        if (ct_str_eq_ci(ct_str_make(p, (size_t)(colon - p)), name)) {
            *value = ct_str_trim_ows(ct_str_make(colon + 1, (size_t)(eol - colon - 1)));
            return true;
        }
        p = memchr(eol, '\n', (size_t)(end - eol));
    }
    return false;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define BAN_SAMPLES (16u << 20)

struct ban_looker {
    struct ct_cache *c;
    const struct keyset *ks;
    _Atomic int phase; /* -1: stop; else the phase being measured */
    uint32_t *ns[3];   /* per phase: latency samples */
    size_t n[3];
};

static void *ban_look_thread(void *arg)
{
    struct ban_looker *b = arg;
    uint64_t x = 0x2545F4914F6CDD1DULL;
    int ph;
    while ((ph = atomic_load_explicit(&b->phase, memory_order_relaxed)) >= 0) {
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        size_t i = (size_t)((x * 2685821657736338717ULL) % b->ks->n);
        struct ct_cache_lookup_req req = {&b->ks->keys[i], {"", 0}, NULL, NULL, true, false, false};
        struct ct_cache_lookup_res res;
        double t0 = wall_s();
        ct_cache_lookup(b->c, &req, T0, &res);
        ct_cache_lookup_res_release(&res);
        double dt = wall_s() - t0;
        if (b->n[ph] < BAN_SAMPLES)
            b->ns[ph][b->n[ph]++] = (uint32_t)CT_MIN(dt * 1e9, 4e9);
    }
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void report_phase(const char *name, uint32_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_u32);
    if (n == 0)
        return;
    printf("bans: lookups %-34s n=%-9zu p50 %5u ns  p99 %6u ns  p99.9 %7u ns\n", name, n,
           v[n / 2], v[(size_t)(n * 0.99)], v[(size_t)(n * 0.999)]);
}

/* Run the lurker until the ban is dropped, SLEEP_MS between slices (the
 * lookup thread measures meanwhile). Returns the lurker's CPU seconds. */
static double lurk_all(struct ct_cache *c, unsigned sleep_ms, double *wall)
{
    double cpu = 0, w0 = wall_s();
    struct ct_cache_stats st;
    do {
        double t0 = now_s();
        ct_cache_ban_lurk(c, T0, 1000);
        cpu += now_s() - t0;
        if (sleep_ms) {
            struct timespec ts = {0, (long)sleep_ms * 1000000L};
            nanosleep(&ts, NULL);
        }
        ct_cache_stats(c, &st);
    } while (st.bans_active);
    *wall = wall_s() - w0;
    return cpu;
}

static void bench_bans(size_t nkeys)
{
    struct ct_cache_config cfg = {.max_bytes = (size_t)4 << 30, .max_object_size = 1 << 20,
                                  .field = bench_field};
    struct ct_cache *c = ct_cache_new(&cfg);
    struct keyset ks;
    keyset_init(&ks, nkeys);
    for (size_t i = 0; i < nkeys; i++) {
        char head[128];
        int len = snprintf(head, sizeof(head), "%sX-Tag: t%zu\r\n", HEAD, i % 10);
        struct ct_cache_lookup_req req = {&ks.keys[i], {"", 0}, NULL, NULL, false, false, false};
        struct ct_cache_lookup_res res;
        ct_cache_lookup(c, &req, T0, &res);
        if (res.fetch) {
            struct ct_obj_meta m = {.status = 200, .head = ct_str_make(head, (size_t)len),
                                    .response_time = T0, .ttl = 1e6};
            if (ct_obj_set_head(res.fetch, &m) == CT_OK)
                ct_obj_complete(res.fetch, T0);
            else
                ct_obj_abandon(res.fetch, T0, 0);
        }
        ct_cache_lookup_res_release(&res);
    }
    struct ban_looker b = {.c = c, .ks = &ks};
    for (int i = 0; i < 3; i++)
        b.ns[i] = malloc(BAN_SAMPLES * sizeof(uint32_t));
    pthread_t th;
    pthread_create(&th, NULL, ban_look_thread, &b);
    struct timespec one = {1, 0};
    nanosleep(&one, NULL); /* phase 0: no ban */
    static const char expr[] = "obj.http.x-tag == \"t3\" && obj.url ~ \"73$\"";
    char err[256];
    uint64_t id;
    double wall[3] = {0}, cpu[3] = {0};
    for (int ph = 1; ph <= 2; ph++) {
        if (ct_cache_ban_add(c, expr, sizeof(expr) - 1, false, T0, &id, err, sizeof(err)) != CT_OK)
            abort();
        atomic_store(&b.phase, ph);
        cpu[ph] = lurk_all(c, ph == 1 ? 10 : 0, &wall[ph]);
    }
    atomic_store(&b.phase, -1);
    pthread_join(th, NULL);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    printf("bans: %zu objects; ban '%s' removed %llu (one in 100)\n", nkeys, expr,
           (unsigned long long)st.banned);
    for (int ph = 1; ph <= 2; ph++)
        printf("bans: lurker %-22s worked the store off in %.2f s wall, %.1f ms CPU "
               "(%.0f ns per object)\n",
               ph == 1 ? "(defaults: 1000/10 ms)" : "(no pause)", wall[ph], cpu[ph] * 1e3,
               cpu[ph] * 1e9 / (double)nkeys);
    report_phase("without a ban", b.ns[0], b.n[0]);
    report_phase("during the lurker (defaults)", b.ns[1], b.n[1]);
    report_phase("during the lurker (no pause)", b.ns[2], b.n[2]);
    for (int i = 0; i < 3; i++)
        free(b.ns[i]);
    ct_cache_free(&c);
    keyset_free(&ks);
}

int main(int argc, char **argv)
{
    bool opt_tags = false, opt_bans = false;
    size_t nkeys = 1000000, nreq = 1000000, hr_keys = 100000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--keys") && i + 1 < argc) {
            nkeys = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--lookups") && i + 1 < argc) {
            opt_lookups = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--lookups-only")) {
            opt_lookups_only = true;
        } else if (!strcmp(argv[i], "--tags")) {
            opt_tags = true;
        } else if (!strcmp(argv[i], "--bans")) {
            opt_bans = true;
        } else if (!strcmp(argv[i], "--quick")) {
            nkeys = 100000;
            nreq = 200000;
            hr_keys = 20000;
        } else {
            fprintf(stderr,
                    "usage: %s [--keys N] [--lookups N] [--lookups-only] [--tags] [--bans] [--quick]\n",
                    argv[0]);
            return 2;
        }
    }
    memset(BODY, 'b', sizeof(BODY));
    printf("cachet cache store micro-benchmark (one thread; rates per CPU-second)\n");
    printf("sizeof(struct ct_cache_waiter) %zu, ct_cache_obj_base counted in 'per object'\n",
           sizeof(struct ct_cache_waiter));
    if (opt_tags) {
        bench_tags(nkeys, false);
        bench_tags(nkeys, true);
        return 0;
    }
    if (opt_bans) {
        bench_bans(nkeys);
        return 0;
    }
    bench_throughput(nkeys);
    if (!opt_lookups_only)
        bench_hit_ratio(nreq, hr_keys, 0.10);
    return 0;
}
