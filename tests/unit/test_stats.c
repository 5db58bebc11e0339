/*
 * tests/unit/test_stats.c: proxy/stats/stats.h. Every counter of the table shows in
 * the JSON and in the Prometheus text; the JSON is valid (a small strict
 * parser below); the Prometheus text follows format 0.0.4 (HELP/TYPE before
 * samples, label escaping, cumulative buckets, +Inf == count); summation over
 * worker blocks. The access-log formatter (escaping, both formats) and its
 * buffered writer (batches, reopen after a rename, threads).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <unistd.h>

#include "cache/cache.h"
#include "common/mem.h"
#include "proxy/stats/accesslog.h"
#include "proxy/stats/stats.h"
#include "tests/unit/ct_test.h"

/* ---- a strict JSON validator (RFC 8259) ------------------------------------ */

struct jp {
    const char *p, *end;
    int depth;
};

static void jws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r'))
        j->p++;
}

static bool jvalue(struct jp *j);

static bool jstring(struct jp *j)
{
    if (j->p >= j->end || *j->p != '"')
        return false;
    for (j->p++; j->p < j->end; j->p++) {
        unsigned char ch = (unsigned char)*j->p;
        if (ch == '"') {
            j->p++;
            return true;
        }
        if (ch < 0x20)
            return false;
        if (ch == '\\') {
            j->p++;
            if (j->p >= j->end)
                return false;
            if (*j->p == 'u') {
                for (int i = 0; i < 4; i++)
                    if (++j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p))
                        return false;
            } else if (!strchr("\"\\/bfnrt", *j->p)) {
                return false;
            }
        }
    }
    return false;
}

static bool jnumber(struct jp *j)
{
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9')
        return false;
    if (*j->p == '0')
        j->p++;
    else
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return false;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    return j->p > s;
}

static bool jlit(struct jp *j, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
        return false;
    j->p += n;
    return true;
}

static bool jseq(struct jp *j, char close, bool obj)
{
    j->p++;
    jws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return true;
    }
    for (;;) {
        jws(j);
        if (obj) {
            if (!jstring(j))
                return false;
            jws(j);
            if (j->p >= j->end || *j->p++ != ':')
                return false;
        }
        if (!jvalue(j))
            return false;
        jws(j);
        if (j->p >= j->end)
            return false;
        if (*j->p == close) {
            j->p++;
            return true;
        }
        if (*j->p++ != ',')
            return false;
    }
}

static bool jvalue(struct jp *j)
{
    jws(j);
    if (j->p >= j->end || ++j->depth > 64)
        return false;
    bool ok;
    switch (*j->p) {
    case '{': ok = jseq(j, '}', true); break;
    case '[': ok = jseq(j, ']', false); break;
    case '"': ok = jstring(j); break;
    case 't': ok = jlit(j, "true"); break;
    case 'f': ok = jlit(j, "false"); break;
    case 'n': ok = jlit(j, "null"); break;
    default: ok = jnumber(j); break;
    }
    j->depth--;
    return ok;
}

static bool json_valid(const char *s, size_t len)
{
    struct jp j = {s, s + len, 0};
    if (!jvalue(&j))
        return false;
    jws(&j);
    return j.p == j.end;
}

/* ---- fixtures ----------------------------------------------------------------- */

static const char *const names[] = {"origin-a", "we\"ird\\name\n"};

static void view_of(struct ct_stats_view *v, const struct ct_stats *sum)
{
    memset(v, 0, sizeof(*v));
    v->sum = sum;
    v->backend_names = names;
    v->uptime_s = 12.5;
}

static char *render(const struct ct_stats_view *v, bool json)
{
    struct ct_buf o = {0};
    if (json)
        ct_stats_render_json(v, &o);
    else
        ct_stats_render_prom(v, &o);
    return o.p; /* the caller frees */
}

/* Value of the sample line starting with PREFIX followed by a space. */
static long long sample(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, prefix, n) == 0 && l[n] == ' ')
            return atoll(l + n + 1);
    return -1;
}

/* ---- tests -------------------------------------------------------------------- */

static void test_json_valid_every_counter(void)
{
    struct ct_stats *s = ct_stats_new(2);
    ct_stats_conn_open(s);
    ct_stats_req_done(s, 200, 700, CT_STATS_CS_HIT);
    ct_stats_backend(s, 1, CT_STATS_BE_upstream_errors);
    struct ct_stats_view v;
    view_of(&v, s);
    int up[2] = {1, 0};
    struct ct_cache_stats cs = {.hits = 3, .bytes = 4096, .objects = 2};
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            v.backend_up = up;
            v.cache = &cs;
            v.tls = true;
            v.tls_full = 5;
        }
        char *js = render(&v, true);
        CU_ASSERT_TRUE(json_valid(js, strlen(js)));
#define CHECK_KEY(id, k, l, h) CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"" #id "\":"));
        CT_STATS_TABLE(CHECK_KEY)
#undef CHECK_KEY
#define CHECK_BE(id, h) CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"" #id "\":"));
        CT_STATS_BE_TABLE(CHECK_BE)
#undef CHECK_BE
        CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"2xx\":1"));
        CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"hit\":1"));
        CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"rem_close\":0"));
        CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"name\":\"we\\\"ird\\\\name\\n\""));
        CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"+Inf\":1"));
        if (round == 0) {
            CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"cache\":null"));
            CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"tls\":null"));
        } else {
#define CHECK_CACHE(nm, t) CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"" #nm "\":"));
            CT_CACHE_STATS_TABLE(CHECK_CACHE)
#undef CHECK_CACHE
            CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"hits\":3"));
            CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"up\":false"));
            CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"handshakes_full\":5"));
        }
        free(js);
    }
    ct_stats_free(&s);
    CU_ASSERT_PTR_NULL(s);
}

/* Prometheus 0.0.4: every sample's family has HELP then TYPE before it, the
 * lines are well formed, label values escaped. */
static void check_prom_format(const char *text)
{
    char fam[128] = "";
    char type[16] = "";
    bool help_seen = false;
    int samples = 0;
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        CU_ASSERT_PTR_NOT_NULL_FATAL(nl); /* every line ends with \n */
        char line[512];
        size_t n = (size_t)(nl - l);
        CU_ASSERT_FATAL(n < sizeof(line));
        memcpy(line, l, n);
        line[n] = '\0';
        if (strncmp(line, "# HELP ", 7) == 0) {
            CU_ASSERT_EQUAL(sscanf(line + 7, "%127s", fam), 1);
            help_seen = true;
            type[0] = '\0';
        } else if (strncmp(line, "# TYPE ", 7) == 0) {
            char f2[128];
            CU_ASSERT_EQUAL(sscanf(line + 7, "%127s %15s", f2, type), 2);
            CU_ASSERT_STRING_EQUAL(f2, fam);
            CU_ASSERT_TRUE(help_seen);
            CU_ASSERT_TRUE(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
                           strcmp(type, "histogram") == 0);
        } else {
            /* name[{k="v",...}] value */
            size_t fl = strlen(fam);
            CU_ASSERT_EQUAL(strncmp(line, fam, fl), 0);
            CU_ASSERT_TRUE(type[0] != '\0');
            const char *p = line + fl;
            if (strcmp(type, "histogram") == 0 && *p == '_') /* _bucket / _sum / _count */
                for (p++; *p >= 'a' && *p <= 'z'; p++)
                    ;
            if (*p == '{') {
                p++;
                while (*p != '}') {
                    while ((*p >= 'a' && *p <= 'z') || *p == '_')
                        p++;
                    CU_ASSERT_FATAL(*p == '=' && p[1] == '"');
                    for (p += 2; *p != '"'; p++) {
                        CU_ASSERT_FATAL(*p != '\0' && *p != '\n');
                        if (*p == '\\') {
                            CU_ASSERT_TRUE(p[1] == '\\' || p[1] == '"' || p[1] == 'n');
                            p++;
                        }
                    }
                    p++;
                    if (*p == ',')
                        p++;
                }
                p++;
            }
            CU_ASSERT_EQUAL(*p, ' ');
            char *end;
            strtod(p + 1, &end);
            CU_ASSERT_TRUE(end > p + 1 && *end == '\0');
            samples++;
        }
        l = nl + 1;
    }
    CU_ASSERT_TRUE(samples > 20);
}

static void test_prom_format(void)
{
    struct ct_stats *s = ct_stats_new(2);
    ct_stats_conn_open(s);
    ct_stats_conn_open(s);
    ct_stats_conn_close(s, CT_CLOSE_RX_BAD);
    ct_stats_req_done(s, 404, 100, CT_STATS_CS_MISS);
    ct_stats_backend(s, 0, CT_STATS_BE_upstream_requests);
    struct ct_stats_view v;
    view_of(&v, s);
    int up[2] = {0, 1};
    struct ct_cache_stats cs = {.misses = 7, .evictions = 2};
    v.backend_up = up;
    v.cache = &cs;
    v.tls = true;
    v.tls_resumed = 9;
    char *t = render(&v, false);
    check_prom_format(t);
#define CHECK_P(id, k, l, h) CU_ASSERT_PTR_NOT_NULL(strstr(t, "# TYPE cachet_" #id));
    CT_STATS_TABLE(CHECK_P)
#undef CHECK_P
    CU_ASSERT_EQUAL(sample(t, "cachet_connections_accepted_total"), 2);
    CU_ASSERT_EQUAL(sample(t, "cachet_connections_open"), 1);
    CU_ASSERT_EQUAL(sample(t, "cachet_connections_closed_total{reason=\"rx_bad\"}"), 1);
    CU_ASSERT_EQUAL(sample(t, "cachet_requests_total{class=\"4xx\"}"), 1);
    CU_ASSERT_EQUAL(sample(t, "cachet_cache_requests_total{cache_status=\"miss\"}"), 1);
    CU_ASSERT_EQUAL(sample(t, "cachet_upstream_requests_total{backend=\"origin-a\"}"), 1);
    CU_ASSERT_EQUAL(
        sample(t, "cachet_upstream_requests_total{backend=\"we\\\"ird\\\\name\\n\"}"), 0);
    CU_ASSERT_EQUAL(sample(t, "cachet_backend_up{backend=\"origin-a\"}"), 0);
    CU_ASSERT_EQUAL(sample(t, "cachet_cache_misses_total"), 7);
    CU_ASSERT_EQUAL(sample(t, "cachet_cache_evictions_total"), 2);
    CU_ASSERT_EQUAL(sample(t, "cachet_tls_handshakes_total{type=\"resumed\"}"), 9);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "# TYPE cachet_tls_handshakes_total counter\n"));
    free(t);
    ct_stats_free(&s);
}

/* The allocator's figures sit beside the cache's own bytes in both
 * renderings, and only when the view carries them. */
static void test_memory_figures(void)
{
    struct ct_stats *s = ct_stats_new(0);
    struct ct_stats_view v;
    view_of(&v, s);
    struct ct_cache_stats cs = {.bytes = 4096, .max_bytes = 65536};
    struct ct_mem_stats ms = {.allocator = "glibc", .allocated = 1000, .resident = 2000,
                              .retained = 300, .rss = 40960, .slab_used = 500,
                              .slab_resident = 1500, .slab_mapped = 4096,
                              .slab_regions_released = 11, .slab_slots_punched = 13,
                              .releases = 7};
    v.cache = &cs;
    char *js = render(&v, true);
    char *t = render(&v, false);
    CU_ASSERT_PTR_NULL(strstr(js, "\"memory\""));
    CU_ASSERT_PTR_NULL(strstr(t, "cachet_memory_"));
    free(js);
    free(t);
    v.mem = &ms;
    js = render(&v, true);
    CU_ASSERT_TRUE(json_valid(js, strlen(js)));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"memory\":{\"allocator\":\"glibc\",\"allocated\":1000,"
                                      "\"resident\":2000,\"retained\":300,\"rss\":40960,"
                                      "\"slab_used\":500,\"slab_resident\":1500,"
                                      "\"slab_mapped\":4096,\"slab_regions_released\":11,"
                                      "\"slab_slots_punched\":13,\"releases\":7}"));
    t = render(&v, false);
    check_prom_format(t);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_allocator_info{allocator=\"glibc\"}"), 1);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_allocated_bytes"), 1000);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_resident_bytes"), 2000);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_retained_bytes"), 300);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_rss_bytes"), 40960);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_slab_used_bytes"), 500);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_slab_resident_bytes"), 1500);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_slab_mapped_bytes"), 4096);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_slab_regions_released_total"), 11);
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_slab_slots_punched_total"), 13);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "# TYPE cachet_memory_slab_slots_punched_total counter\n"));
    CU_ASSERT_EQUAL(sample(t, "cachet_memory_releases_total"), 7);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "# TYPE cachet_memory_releases_total counter\n"));
    CU_ASSERT_EQUAL(sample(t, "cachet_cache_bytes"), 4096);
    free(js);
    free(t);
    ct_stats_free(&s);
}

static void test_histogram(void)
{
    struct ct_stats *s = ct_stats_new(0);
    /* on a bound goes into that bucket (le = less or equal) */
    uint64_t lat[] = {0, 500, 501, 1000, 99999, 100000, 20000000, 20000001};
    for (size_t i = 0; i < CT_ARRAY_LEN(lat); i++)
        ct_stats_req_done(s, 200, lat[i], CT_STATS_CS_NONE);
    struct ct_stats_view v;
    view_of(&v, s);
    char *t = render(&v, false);
    check_prom_format(t);
    const char *h = "cachet_request_duration_seconds";
    char key[128];
    snprintf(key, sizeof(key), "%s_bucket{le=\"0.0005\"}", h);
    CU_ASSERT_EQUAL(sample(t, key), 2);
    snprintf(key, sizeof(key), "%s_bucket{le=\"0.001\"}", h);
    CU_ASSERT_EQUAL(sample(t, key), 4);
    snprintf(key, sizeof(key), "%s_bucket{le=\"0.1\"}", h);
    CU_ASSERT_EQUAL(sample(t, key), 6);
    snprintf(key, sizeof(key), "%s_bucket{le=\"10\"}", h);
    CU_ASSERT_EQUAL(sample(t, key), 6);
    snprintf(key, sizeof(key), "%s_bucket{le=\"+Inf\"}", h);
    long long inf = sample(t, key);
    snprintf(key, sizeof(key), "%s_count", h);
    CU_ASSERT_EQUAL(inf, 8);
    CU_ASSERT_EQUAL(sample(t, key), inf);
    /* cumulative: never decreasing */
    long long prev = -1;
    int nb = 0;
    for (const char *p = strstr(t, "_bucket{"); p; p = strstr(p + 1, "_bucket{")) {
        long long val = atoll(strchr(p, ' ') + 1);
        CU_ASSERT_TRUE(val >= prev);
        prev = val;
        nb++;
    }
    CU_ASSERT_EQUAL(nb, CT_STATS_LAT_N + 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "cachet_request_duration_seconds_sum 40.202001\n"));
    free(t);
    ct_stats_free(&s);
}

static void test_sum_workers(void)
{
    struct ct_stats *w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = ct_stats_new(2);
        for (int k = 0; k <= i; k++) {
            ct_stats_conn_open(w[i]);
            ct_stats_req_done(w[i], 503, 2000, CT_STATS_CS_PASS);
            ct_stats_backend(w[i], 1, CT_STATS_BE_upstream_timeouts);
        }
        ct_stats_conn_close(w[i], CT_CLOSE_REM_CLOSE);
    }
    ct_stats_req_done(w[0], 0, 1, CT_STATS_CS_NONE);     /* no response */
    ct_stats_req_done(w[0], 99, 1, CT_STATS_CS__COUNT);  /* out of range: clamped */
    ct_stats_backend(w[0], 7, CT_STATS_BE_upstream_errors); /* unknown backend: ignored */
    struct ct_stats *sum = ct_stats_new(2);
    for (int i = 0; i < 3; i++)
        ct_stats_sum(sum, w[i]);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->connections_accepted[0]), 6);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->connections_open[0]), 3);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->connections_closed[CT_CLOSE_REM_CLOSE]), 3);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->requests[4]), 6);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->requests[5]), 2);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->cache_requests[CT_STATS_CS_PASS]), 6);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->cache_requests[CT_STATS_CS_NONE]), 2);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->be[1][CT_STATS_BE_upstream_timeouts]), 6);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->be[0][CT_STATS_BE_upstream_errors]), 0);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->lat_sum_us), 6 * 2000 + 2);
    /* a sum into a block with fewer backends ignores the rest */
    struct ct_stats *small = ct_stats_new(1);
    ct_stats_sum(small, w[2]);
    CU_ASSERT_EQUAL(ct_stats_get(&small->connections_accepted[0]), 3);
    ct_stats_free(&small);
    for (int i = 0; i < 3; i++)
        ct_stats_free(&w[i]);
    ct_stats_free(&sum);
}


/* Connections by protocol, request/response bytes, listeners, reloads and the
 * purge flag: in the JSON (valid, escaped) and in the Prometheus text. */
static void test_dashboard_figures(void)
{
    struct ct_stats *s = ct_stats_new(1);
    ct_stats_conn_proto(s, CT_STATS_PROTO_https, true);
    ct_stats_conn_proto(s, CT_STATS_PROTO_https, true);
    ct_stats_conn_proto(s, CT_STATS_PROTO_http, true);
    ct_stats_conn_proto(s, CT_STATS_PROTO_https, false);
    ct_stats_conn_proto(s, CT_STATS_PROTO__COUNT, true); /* out of range: ignored */
    ct_stats_req_bytes(s, 93, 1024);
    ct_stats_req_bytes(s, 7, 0);
    struct ct_stats_view v;
    view_of(&v, s);
    const struct ct_stats_listener ls[] = {{"http", "127.0.0.1:8080"}, {"admin", "[::1]:\"8082"}};
    char *js = render(&v, true);
    CU_ASSERT_TRUE(json_valid(js, strlen(js)));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"connections_open_by_proto\":{\"http\":1,\"https\":1,\"h2\":0,\"h2c\":0}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"request_bytes\":100,\"response_body_bytes\":1024"));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"listeners\":[]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"reload\":{\"generation\":0,\"ok\":0,\"failed\":0,"
                                      "\"last_time\":null,\"last_ok\":null}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"purge\":false"));
    free(js);
    v.listeners = ls;
    v.nlisteners = 2;
    v.reload = (struct ct_stats_reload){.generation = 3, .ok = 3, .failed = 1,
                                        .last_time = 1796096220.25, .last_ok = false};
    v.purge = true;
    js = render(&v, true);
    CU_ASSERT_TRUE(json_valid(js, strlen(js)));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"listeners\":[{\"kind\":\"http\",\"addr\":\"127.0.0.1:8080\"},"
                                      "{\"kind\":\"admin\",\"addr\":\"[::1]:\\\"8082\"}]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"reload\":{\"generation\":3,\"ok\":3,\"failed\":1,"
                                      "\"last_time\":1796096220.250,\"last_ok\":false}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"purge\":true"));
    free(js);
    char *t = render(&v, false);
    check_prom_format(t);
    CU_ASSERT_EQUAL(sample(t, "cachet_connections_open_by_proto{proto=\"https\"}"), 1);
    CU_ASSERT_EQUAL(sample(t, "cachet_connections_open_by_proto{proto=\"http\"}"), 1);
    CU_ASSERT_EQUAL(sample(t, "cachet_request_bytes_total"), 100);
    CU_ASSERT_EQUAL(sample(t, "cachet_response_body_bytes_total"), 1024);
    CU_ASSERT_EQUAL(sample(t, "cachet_reload_generation"), 3);
    CU_ASSERT_EQUAL(sample(t, "cachet_reloads_total{result=\"ok\"}"), 3);
    CU_ASSERT_EQUAL(sample(t, "cachet_reloads_total{result=\"failed\"}"), 1);
    CU_ASSERT_EQUAL(sample(t, "cachet_reload_last_timestamp_seconds"), 1796096220);
    free(t);
    /* summed like every other row */
    struct ct_stats *sum = ct_stats_new(1);
    ct_stats_sum(sum, s);
    ct_stats_sum(sum, s);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->connections_open_by_proto[CT_STATS_PROTO_https]), 2);
    CU_ASSERT_EQUAL(ct_stats_get(&sum->request_bytes[0]), 200);
    ct_stats_free(&sum);
    ct_stats_free(&s);
}

/* Origin time saved (issue 46): per route slot, the rest in the unrouted
 * series; summed over worker blocks; the series sum to /stats' total. */
static void test_origin_saved(void)
{
    struct ct_stats *w[2] = {ct_stats_new(1), ct_stats_new(1)};
    struct ct_stats_names *n = ct_stats_names_new();
    int slow = ct_stats_names_slot(n, "shop", "slow");
    int other = ct_stats_names_slot(n, "-", "-");
    ct_stats_origin_saved(w[0], slow, 300000);  /* two hits of a 300 ms object */
    ct_stats_origin_saved(w[1], slow, 300000);
    ct_stats_origin_saved(w[1], other, 1500);
    ct_stats_origin_saved(w[0], -1, 2000000);   /* no route table */
    ct_stats_origin_saved(w[0], CT_STATS_ROUTES_MAX, 250); /* no slot: unrouted too */
    struct ct_stats *sum = ct_stats_new(1);
    ct_stats_sum(sum, w[0]);
    ct_stats_sum(sum, w[1]);
    CU_ASSERT_EQUAL(ct_stats_origin_saved_us(w[0]), 2300250);
    CU_ASSERT_EQUAL(ct_stats_origin_saved_us(sum), 2601750);
    struct ct_stats_view v;
    view_of(&v, sum);
    v.routes = n;
    char *js = render(&v, true);
    CU_ASSERT_TRUE(json_valid(js, strlen(js)));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"origin_seconds_saved\":2.601750,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "{\"site\":\"shop\",\"route\":\"slow\",\"requests\":0,"
                                      "\"origin_seconds_saved\":0.600000}"));
    free(js);
    char *t = render(&v, false);
    check_prom_format(t);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(t, "cachet_origin_seconds_saved_total{site=\"shop\",route=\"slow\"} 0.600000\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(t, "cachet_origin_seconds_saved_total{site=\"-\",route=\"-\"} 0.001500\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(t, "cachet_origin_seconds_saved_total{site=\"\",route=\"\"} 2.000250\n"));
    free(t);
    ct_stats_names_free(&n);
    ct_stats_free(&sum);
    ct_stats_free(&w[0]);
    ct_stats_free(&w[1]);
}

/* ---- access log ------------------------------------------------------------------ */

static struct ct_accesslog_rec sample_rec(void)
{
    struct ct_accesslog_rec r = {
        .remote_addr = CT_STR("127.0.0.1"),
        .time = 1796096220.25, /* 2026-12-01T03:37:00.250Z */
        .method = CT_STR("GET"),
        .target = CT_STR("/a?b=1"),
        .version = 11,
        .status = 200,
        .body_bytes = 1024,
        .user_agent = CT_STR("curl/7.88.1"),
        .request_time_s = 0.0012,
        .upstream_time_s = 0.001,
        .upstream_status = 200,
        .cache_status = "MISS",
        .tls_version = "TLSv1.3",
    };
    return r;
}

static void test_alog_combined(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    struct ct_buf o = {0};
    struct ct_accesslog_rec r = sample_rec();
    ct_accesslog_format(CT_ACCESSLOG_COMBINED, &r, &o);
    CU_ASSERT_STRING_EQUAL(o.p, "127.0.0.1 - - [01/Dec/2026:03:37:00 +0000] \"GET /a?b=1 "
                                "HTTP/1.1\" 200 1024 \"-\" \"curl/7.88.1\" rt=0.001 ut=0.001 "
                                "us=200 cs=MISS tls=TLSv1.3\n");
    /* the formatted second is cached per thread: a new second shows */
    o.len = 0;
    r.time += 61;
    ct_accesslog_format(CT_ACCESSLOG_COMBINED, &r, &o);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, "[01/Dec/2026:03:38:01 +0000]"));
    o.len = 0;
    ct_accesslog_format(CT_ACCESSLOG_JSON, &r, &o);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, "\"time\":\"2026-12-01T03:38:01.250Z\""));
    r.time -= 61;
    /* quotes, backslashes and control bytes in the request line and UA */
    o.len = 0;
    r.target = CT_STR("/x\"y\\z\x01\x7f\xff");
    r.user_agent = CT_STR("evil\"agent\r\n127.0.0.1 - - fake");
    r.referer = CT_STR("http://r/");
    r.upstream_time_s = -1;
    r.upstream_status = 0;
    r.cache_status = NULL;
    r.tls_version = NULL;
    r.version = 10;
    ct_accesslog_format(CT_ACCESSLOG_COMBINED, &r, &o);
    CU_ASSERT_STRING_EQUAL(o.p, "127.0.0.1 - - [01/Dec/2026:03:37:00 +0000] \"GET "
                                "/x\\x22y\\x5Cz\\x01\\x7F\\xFF HTTP/1.0\" 200 1024 \"http://r/\" "
                                "\"evil\\x22agent\\x0D\\x0A127.0.0.1 - - fake\" rt=0.001 ut=- "
                                "us=- cs=- tls=-\n");
    CU_ASSERT_PTR_NULL(memchr(o.p, '\n', o.len - 1)); /* one line */
    /* seconds rounded to ms without printf; big numbers */
    o.len = 0;
    r.request_time_s = 12.3456;
    r.upstream_time_s = 0.0004;
    r.body_bytes = 18446744073709551615ull;
    ct_accesslog_format(CT_ACCESSLOG_COMBINED, &r, &o);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, " 200 18446744073709551615 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, " rt=12.346 ut=0.000 "));
    /* no request line at all (a 400 before the head was read) */
    o.len = 0;
    r.version = 0;
    r.status = 400;
    ct_accesslog_format(CT_ACCESSLOG_COMBINED, &r, &o);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, "] \"-\" 400 "));
    /* an HTTP/2 request: its stream id after tls= */
    o.len = 0;
    r = sample_rec();
    r.version = 20;
    r.stream_id = 2147483647;
    ct_accesslog_format(CT_ACCESSLOG_COMBINED, &r, &o);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, " HTTP/2.0\" 200 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, " tls=TLSv1.3 sid=2147483647\n"));
    o.len = 0;
    ct_accesslog_format(CT_ACCESSLOG_JSON, &r, &o);
    CU_ASSERT_TRUE(json_valid(o.p, o.len));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, "\"tls\":\"TLSv1.3\",\"stream_id\":2147483647}"));
    ct_buf_free(&o);
}

static void test_alog_json(void)
{
    struct ct_buf o = {0};
    struct ct_accesslog_rec r = sample_rec();
    ct_accesslog_format(CT_ACCESSLOG_JSON, &r, &o);
    CU_ASSERT_TRUE(json_valid(o.p, o.len));
    CU_ASSERT_STRING_EQUAL(o.p, "{\"time\":\"2026-12-01T03:37:00.250Z\",\"remote_addr\":"
                                "\"127.0.0.1\",\"request\":\"GET /a?b=1 HTTP/1.1\",\"method\":"
                                "\"GET\",\"uri\":\"/a?b=1\",\"status\":200,\"body_bytes_sent\":"
                                "1024,\"referer\":null,\"user_agent\":\"curl/7.88.1\","
                                "\"request_time\":0.001,\"upstream_time\":0.001,"
                                "\"upstream_status\":200,\"cache_status\":\"MISS\","
                                "\"tls\":\"TLSv1.3\"}\n");
    o.len = 0;
    r.target = CT_STR("/q\"\\\x01\xc3\xa9\xff");
    r.user_agent = CT_STR("a\tb\"c");
    r.upstream_time_s = -1;
    r.upstream_status = 0;
    r.cache_status = NULL;
    ct_accesslog_format(CT_ACCESSLOG_JSON, &r, &o);
    CU_ASSERT_TRUE(json_valid(o.p, o.len));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, "\"uri\":\"/q\\\"\\\\\\u0001\xc3\xa9\\u00ff\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, "\"user_agent\":\"a\\tb\\\"c\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.p, "\"upstream_time\":null,\"upstream_status\":null,"
                                         "\"cache_status\":null"));
    ct_buf_free(&o);
}

static size_t count_lines(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return 0;
    size_t n = 0;
    int ch;
    while ((ch = fgetc(fp)) != EOF)
        n += ch == '\n';
    fclose(fp);
    return n;
}

struct alog_thread {
    struct ct_accesslog_buf *b;
    int n;
};

static void *alog_writer(void *arg)
{
    struct alog_thread *t = arg;
    struct ct_accesslog_rec r = sample_rec();
    for (int i = 0; i < t->n; i++)
        ct_accesslog_log(t->b, &r);
    return NULL;
}

static void test_alog_writer(void)
{
    char dir[] = "/tmp/ct-alog.XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char path[128], moved[128], err[256];
    snprintf(path, sizeof(path), "%s/access.log", dir);
    snprintf(moved, sizeof(moved), "%s/access.log.1", dir);
    struct ct_accesslog *al = ct_accesslog_open(path, CT_ACCESSLOG_COMBINED, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(al);
    CU_ASSERT_PTR_NULL(ct_accesslog_open("/nonexistent/dir/x.log", 0, err, sizeof(err)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "No such file"));
    struct ct_accesslog_buf *b1 = ct_accesslog_buf_new(al), *b2 = ct_accesslog_buf_new(al);
    struct ct_accesslog_rec r = sample_rec();
    ct_accesslog_log(b1, &r);
    CU_ASSERT_EQUAL(count_lines(path), 0); /* buffered */
    ct_accesslog_flush_all(al);
    CU_ASSERT_EQUAL(count_lines(path), 1);
    /* two threads, enough to pass the flush threshold several times */
    struct alog_thread t1 = {b1, 2000}, t2 = {b2, 2000};
    pthread_t th1, th2;
    pthread_create(&th1, NULL, alog_writer, &t1);
    pthread_create(&th2, NULL, alog_writer, &t2);
    pthread_join(th1, NULL);
    pthread_join(th2, NULL);
    CU_ASSERT_TRUE(count_lines(path) > 1); /* some batches went out on size */
    /* logrotate: move, log, reopen: old lines in the moved file, new ones in the new */
    CU_ASSERT_EQUAL(rename(path, moved), 0);
    ct_accesslog_log(b2, &r);
    CU_ASSERT_EQUAL(ct_accesslog_reopen(al), CT_OK);
    CU_ASSERT_EQUAL(count_lines(moved), 4002);
    ct_accesslog_log(b1, &r);
    ct_accesslog_log(b2, &r);
    ct_accesslog_free(&al);
    CU_ASSERT_PTR_NULL(al);
    CU_ASSERT_EQUAL(count_lines(path), 2);
    /* every line complete: starts with the address, ends with the tls field */
    FILE *fp = fopen(moved, "r");
    char line[512];
    size_t good = 0;
    while (fp && fgets(line, sizeof(line), fp))
        good += strncmp(line, "127.0.0.1 - - [", 15) == 0 && strstr(line, "tls=TLSv1.3\n");
    if (fp)
        fclose(fp);
    CU_ASSERT_EQUAL(good, 4002);
    unlink(path);
    unlink(moved);
    rmdir(dir);
}

/* A full disk (/dev/full behind a symlink): lines are dropped, not retried
 * half-way; the report says so once, then at most every
 * CT_ACCESSLOG_REPORT_S, and says when writing works again (the link now
 * points at a file, reopened as after logrotate). */
static void test_alog_disk_full(void)
{
    char dir[] = "/tmp/ct-alog.XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char link[128], file[128], err[256], msg[512];
    snprintf(link, sizeof(link), "%s/access.log", dir);
    snprintf(file, sizeof(file), "%s/real.log", dir);
    CU_ASSERT_EQUAL_FATAL(symlink("/dev/full", link), 0);
    struct ct_accesslog *al = ct_accesslog_open(link, CT_ACCESSLOG_COMBINED, err, sizeof(err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(al);
    struct ct_accesslog_buf *b = ct_accesslog_buf_new(al);
    struct ct_accesslog_rec r = sample_rec();
    CU_ASSERT_EQUAL(ct_accesslog_report(al, 100.0, msg, sizeof(msg)), 0); /* nothing yet */
    ct_accesslog_log(b, &r);
    ct_accesslog_log(b, &r);
    ct_accesslog_flush_all(al);
    CU_ASSERT_EQUAL(ct_accesslog_dropped(al), 2);
    CU_ASSERT_EQUAL(ct_accesslog_report(al, 100.0, msg, sizeof(msg)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "No space left on device"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "2 lines dropped"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, link));
    /* still failing: quiet until CT_ACCESSLOG_REPORT_S has passed */
    ct_accesslog_log(b, &r);
    ct_accesslog_flush_all(al);
    CU_ASSERT_EQUAL(ct_accesslog_report(al, 100.0 + CT_ACCESSLOG_REPORT_S - 1, msg, sizeof(msg)), 0);
    ct_accesslog_log(b, &r);
    ct_accesslog_flush_all(al);
    CU_ASSERT_EQUAL(ct_accesslog_report(al, 100.0 + CT_ACCESSLOG_REPORT_S, msg, sizeof(msg)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "4 lines dropped"));
    /* space again: the next lines are written, and that is said once */
    CU_ASSERT_EQUAL(unlink(link), 0);
    CU_ASSERT_EQUAL(symlink(file, link), 0);
    CU_ASSERT_EQUAL(ct_accesslog_reopen(al), CT_OK);
    ct_accesslog_log(b, &r);
    ct_accesslog_flush_all(al);
    CU_ASSERT_EQUAL(ct_accesslog_report(al, 200.0, msg, sizeof(msg)), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "writing again (4 lines dropped in all)"));
    CU_ASSERT_EQUAL(ct_accesslog_report(al, 201.0, msg, sizeof(msg)), 0);
    CU_ASSERT_EQUAL(count_lines(file), 1);
    ct_accesslog_free(&al);
    unlink(link);
    unlink(file);
    rmdir(dir);
}

void ct_test_register(void)
{
    CT_SUITE("stats", {"JSON is valid and has every counter", test_json_valid_every_counter},
             {"Prometheus text format, labels escaped", test_prom_format},
             {"allocator figures beside the cache's bytes", test_memory_figures},
             {"latency histogram: le buckets cumulative, +Inf == count", test_histogram},
             {"worker blocks sum", test_sum_workers},
             {"dashboard figures: protocols, bytes, listeners, reloads", test_dashboard_figures},
             {"origin time saved: by route, unrouted, summed", test_origin_saved});
    CT_SUITE("accesslog", {"combined format, nginx escaping", test_alog_combined},
             {"JSON lines format, JSON escaping", test_alog_json},
             {"buffered writer: batches, threads, reopen after a rename", test_alog_writer},
             {"disk full: lines dropped, reported once, then every 10 s, recovery said",
              test_alog_disk_full});
}
