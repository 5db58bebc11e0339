/*
 * bench/micro/bench_route.c: micro-benchmark of route choice
 * (proxy/route/route.h, issue 15), one thread.
 *
 * A configuration of 100 sites x 20 routes, compiled once; then
 * ct_route_choose() over and over on requests spread over every site, for
 * each kind of route:
 *   prefix  route k of a site: path_prefix "/sN/rK/"
 *   regex   route k: path_regex "^/sN/rK/[a-z0-9]+\.(png|jpg|css)$" (JIT)
 * and for each, three request mixes: the first route matches, the last
 * (20th) matches, and none matches (all 20 tried, the site's fallback).
 * Hosts are half exact names, half under a wildcard ("x.sN.example.org").
 * Issue 15's target: <= 100 ns per choice for prefix routes.
 *
 * Times are thread CPU seconds, so other load does not count (it still
 * costs caches). Each cell is the median of --rounds (default 3).
 *
 * Usage: bench_route [--seconds S] [--rounds N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/conf.h"
#include "proxy/route/route.h"

#define NSITES 100
#define NROUTES 20
#define NREQ 4096

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *make_conf(bool regex)
{
    size_t cap = 1 << 22, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len,
                            "listen = ( { kind = \"http\"; address = \"127.0.0.1:0\"; } );\n"
                            "backends = ( { address = \"127.0.0.1:8081\"; } );\n"
                            "sites = (\n");
    for (int i = 0; i < NSITES; i++) {
        len += (size_t)snprintf(s + len, cap - len,
                                "%s{ name = \"s%d\"; hosts = [\"s%d.example.com\", "
                                "\"*.s%d.example.org\"]; routes = (\n",
                                i ? "," : "", i, i, i);
        for (int k = 0; k < NROUTES; k++) {
            if (regex)
                len += (size_t)snprintf(s + len, cap - len,
                                        "%s{ match = { path_regex = "
                                        "\"^/s%d/r%d/[a-z0-9]+\\\\.(png|jpg|css)$\"; }; }\n",
                                        k ? "," : "", i, k);
            else
                len += (size_t)snprintf(s + len, cap - len,
                                        "%s{ match = { path_prefix = \"/s%d/r%d/\"; }; }\n",
                                        k ? "," : "", i, k);
        }
        len += (size_t)snprintf(s + len, cap - len, ") }\n");
    }
    snprintf(s + len, cap - len, ");\n");
    return s;
}

struct req {
    char host[64], target[96];
    struct ct_route_req r;
};

static bool no_fields(void *arg, struct ct_str name, size_t nth, struct ct_str *value)
{
    return false;
}

/* WHICH: 0 first route, NROUTES - 1 last, -1 none. */
static void make_reqs(struct req *v, int which)
{
    static const uint8_t addr[4] = {192, 0, 2, 1};
    for (int i = 0; i < NREQ; i++) {
        int site = (i * 37) % NSITES;
        if (i % 2)
            snprintf(v[i].host, sizeof(v[i].host), "s%d.example.com", site);
        else
            snprintf(v[i].host, sizeof(v[i].host), "www.s%d.example.org", site);
        if (which >= 0)
            snprintf(v[i].target, sizeof(v[i].target), "/s%d/r%d/img%d.png?v=%d", site, which,
                     i, i);
        else
            snprintf(v[i].target, sizeof(v[i].target), "/s%d/none/img%d.png", site, i);
        v[i].r = (struct ct_route_req){.host = ct_str_c(v[i].host),
                                       .method = CT_STR("GET"),
                                       .target = ct_str_c(v[i].target),
                                       .family = 2 /* AF_INET */,
                                       .addr = addr,
                                       .field = no_fields};
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double run(const struct ct_route_table *t, struct ct_route_scratch *s, struct req *v,
                  int which, double seconds)
{
    /* check once that the mix routes where it says */
    for (int i = 0; i < NREQ; i++) {
        const struct ct_route *r = ct_route_choose(t, &v[i].r, s);
        char want[16];
        snprintf(want, sizeof(want), "%d", which);
        if (r->site == NULL || strcmp(r->route_name, which >= 0 ? want : "-") != 0) {
            fprintf(stderr, "bench_route: %s%s routed to %s/%s\n", v[i].host, v[i].target,
                    r->site_name, r->route_name);
            exit(1);
        }
    }
    unsigned long n = 0, sink = 0;
    double t0 = now_s(), t1;
    do {
        for (int i = 0; i < NREQ; i++)
            sink += ct_route_choose(t, &v[i].r, s)->id;
        n += NREQ;
    } while ((t1 = now_s()) - t0 < seconds);
    if (sink == 1)
        puts("");
    return (t1 - t0) / (double)n * 1e9;
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    int rounds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--seconds") == 0)
            seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
    }
    if (rounds < 1 || rounds > 15)
        rounds = 3;
    static struct req reqs[NREQ];
    struct ct_route_scratch *s = ct_route_scratch_new();
    printf("route choice, %d sites x %d routes, ns per request (median of %d, thread CPU)\n",
           NSITES, NROUTES, rounds);
    printf("%-8s %12s %12s %12s\n", "routes", "first", "last (20th)", "none (20)");
    for (int regex = 0; regex <= 1; regex++) {
        char *text = make_conf(regex);
        struct ct_conf *cf;
        struct ct_conf_errors errs;
        ct_conf_errors_init(&errs);
        if (ct_conf_load_string(text, "bench", &cf, &errs) != CT_OK) {
            ct_conf_errors_print(&errs, stderr);
            return 1;
        }
        struct ct_route_table *t;
        char err[200];
        if (ct_route_table_build(cf, &t, err, sizeof(err)) != CT_OK) {
            fprintf(stderr, "bench_route: %s\n", err);
            return 1;
        }
        printf("%-8s", regex ? "regex" : "prefix");
        int mixes[3] = {0, NROUTES - 1, -1};
        for (int m = 0; m < 3; m++) {
            double ns[15];
            make_reqs(reqs, mixes[m]);
            for (int r = 0; r < rounds; r++)
                ns[r] = run(t, s, reqs, mixes[m], seconds / 3);
            qsort(ns, (size_t)rounds, sizeof(double), cmp);
            printf(" %12.1f", ns[rounds / 2]);
        }
        printf("\n");
        ct_route_table_free(&t);
        ct_conf_free(&cf);
        free(text);
    }
    ct_route_scratch_free(&s);
    return 0;
}
