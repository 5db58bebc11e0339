/*
 * proxy/main.c: the `cachet` binary. Main thread only.
 *
 *   parse the command line -> load the file or the embedded default ->
 *   apply the overrides (ct_conf_build) -> -t / -T -> run:
 *   resolve backends, make the one cache of the process (shared by every
 *   worker) and load its snapshot (cache.persist), bind every listener in
 *   worker 0 (port 0 becomes a real port, then the other workers bind the
 *   same one with SO_REUSEPORT), announce "listening on KIND ADDR:PORT"
 *   (first lines on stdout, flushed), start the workers, and wait for
 *   SIGINT/SIGTERM/SIGQUIT on the main event_base. A signal tells every
 *   worker to drain (through its pipe); main joins them, writes the snapshot,
 *   frees everything (ASan's leak check runs at exit) and exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/mem.h"
#include "conf/conf.h"
#include "cache/cache.h"
#include "proxy/core/core.h"
#include "proxy/build_info.h"
#include "proxy/ctx.h"
#include "proxy/fleet/fleet.h"
#include "proxy/limit/limit.h"
#include "proxy/net/accept.h"
#include "proxy/h1/h1.h"
#include "proxy/ops/admin.h"
#include "proxy/ops/ctl.h"
#include "proxy/ops/ops_int.h"
#include "proxy/ops/persist.h"
#include "proxy/upstream/upstream.h"
#include "tls/tls.h"

/* Every backend resolved, each failure logged with its name and why. */
static int resolve_backends(struct ct_proxy *px)
{
    const struct ct_conf *cf = px->cf;
    px->backends = ct_xcalloc(cf->nflat ? cf->nflat : 1, sizeof(*px->backends));
    px->nbackends = cf->nflat;
    size_t bad = 0;
    for (size_t i = 0; i < cf->nflat; i++)
        if (!ct_ops_backend_resolve(&cf->flat_backends[i], &px->backends[i], ""))
            bad++;
    if (bad)
        CT_ERR("cannot start: %zu of %zu backends do not resolve", bad, cf->nflat);
    return px->nbackends && !bad ? CT_OK : CT_ECONF;
}

/* -t predicts start and reload: every backend must resolve as they need it
 * to. Each failure on stderr as a configuration error (FILE:LINE: path:
 * ...); the count of failures. */
static size_t check_backends(const struct ct_conf *cf)
{
    size_t bad = 0;
    for (size_t g = 0; g < 1 + cf->ngroups; g++) { /* fleet peers: checked at start */
        const struct ct_conf_group *grp = ct_conf_group_at(cf, g);
        for (size_t j = 0; j < grp->nbackends; j++) {
            const struct ct_conf_backend *b = &grp->backends[j];
            struct ct_backend_addr ba;
            const char *why = ct_ops_backend_lookup(b, &ba);
            if (why == NULL)
                continue;
            char path[96];
            if (g == 0)
                snprintf(path, sizeof(path), "backends[%zu].address", j);
            else
                snprintf(path, sizeof(path), "backend_groups[%zu].backends[%zu].address", g - 1,
                         j);
            fprintf(stderr, "%s: %s: backend %s: cannot resolve %s: %s\n", ct_conf_where(cf, path),
                    path, b->name ? b->name : b->host, b->host, why);
            bad++;
        }
    }
    return bad;
}

/* The TLS context of one HTTPS listener (tls/tls.h), from its config.
 * One ticket-key store for the process, so a ticket from any listener and
 * any worker resumes anywhere. */
static struct ct_tls_ctx *https_ctx(struct ct_proxy *px, const struct ct_conf_listener *l)
{
    const struct ct_conf_tls *t = &l->tls;
    char err[256];
    if (t->session_tickets && px->tickets == NULL) {
        px->tickets = ct_tls_shared_new(t->ticket_key_rotation_ms, ct_time_mono(), err,
                                        sizeof(err));
        if (px->tickets == NULL) {
            CT_ERR("TLS session tickets: %s", err);
            return NULL;
        }
    }
    struct ct_tls_ctx *ctx = ct_tls_ctx_from_conf(t, px->tickets, err, sizeof(err));
    if (ctx == NULL) {
        CT_ERR("https listener %s:%u: %s", l->addr.host, l->addr.port, err);
        return NULL;
    }
    if (px->acme_chal)
        ct_tls_ctx_set_chal(ctx, px->acme_chal);
    CT_INFO("https listener %s:%u: %s", l->addr.host, l->addr.port, ct_tls_ctx_describe(ctx));
    if (ct_tls_ctx_selfsigned_note(ctx))
        CT_INFO("%s", ct_tls_ctx_selfsigned_note(ctx));
    return ctx;
}

static int setup_listeners(struct ct_proxy *px)
{
    const struct ct_conf *cf = px->cf;
    /* always made: a reload may add tls.acme, and workers read the pointer */
    px->acme_chal = ct_tls_chal_new();
    px->listeners = ct_xcalloc(cf->nlisteners ? cf->nlisteners : 1, sizeof(*px->listeners));
    for (size_t i = 0; i < cf->nlisteners; i++) {
        const struct ct_conf_listener *l = &cf->listeners[i];
        struct ct_tls_ctx *tls = NULL;
        if (l->kind == CT_CONF_LISTEN_HTTPS && (tls = https_ctx(px, l)) == NULL)
            return CT_ETLS;
        struct ct_listener_conf *lc = &px->listeners[px->nlisteners++];
        ct_listener_conf_fill(lc, l);
        lc->tls = tls;
        memcpy(&lc->sa, &l->addr.sa, l->addr.salen);
        lc->salen = l->addr.salen;
        ct_ops_addr_name((struct sockaddr *)&lc->sa, lc->name, sizeof(lc->name));
        /* the port is ours alone before worker 0 binds it with SO_REUSEPORT
         * (port 0: the one the kernel picks now, which every worker binds) */
        int e = ct_net_listen_probe(&lc->sa, &lc->salen);
        if (e != 0) {
            CT_ERR("cannot listen on %s %s: %s", lc->kind == CT_LISTEN_HTTP ? "http" : "https",
                   lc->name, ct_net_bind_error(e));
            return CT_EIO;
        }
    }
    return CT_OK;
}

static void on_ticket_tick(evutil_socket_t fd, short what, void *arg)
{
    struct ct_proxy *px = arg;
    CT_CHECK_OBJ(px, CT_PROXY_MAGIC);
    if (ct_tls_shared_tick(px->tickets, ct_time_mono()) < 0)
        CT_ERR("TLS ticket key rotation failed (RNG); keeping the current keys");
}

/* Worker 0 bound port 0 to a real port: the others must bind that one. */
/* Once a second: let the allocator give free pages back (common/mem.h). */
struct mem_tick {
    struct event *ev;
    struct ct_proxy *px;
    struct ct_mem_trim trim;
};

static void on_mem_tick(evutil_socket_t fd, short what, void *arg)
{
    struct mem_tick *mt = arg;
    struct timespec c0, c1;
    double t0 = ct_time_mono();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    struct ct_cache_stats cs = {0};
    if (mt->px->cache)
        ct_cache_stats(mt->px->cache, &cs);
    if (!ct_mem_maintain(&mt->trim, t0, cs.bytes, cs.max_bytes))
        return;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    CT_DEBUG("memory: free pages given back in %.2f ms (%.2f ms of CPU)",
             (ct_time_mono() - t0) * 1e3,
             (double)(c1.tv_sec - c0.tv_sec) * 1e3 + (double)(c1.tv_nsec - c0.tv_nsec) / 1e6);
}

static void learn_ports(struct ct_proxy *px, struct ct_worker *w0)
{
    for (size_t i = 0; i < px->nlisteners; i++) {
        struct ct_listener_conf *lc = &px->listeners[i];
        socklen_t len = sizeof(lc->sa);
        getsockname(evconnlistener_get_fd(w0->ls[i].lev), (struct sockaddr *)&lc->sa, &len);
        lc->salen = len;
        ct_ops_addr_name((struct sockaddr *)&lc->sa, lc->name, sizeof(lc->name));
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct ct_proxy *px = arg;
    CT_CHECK_OBJ(px, CT_PROXY_MAGIC);
    CT_INFO("signal %d: draining (up to %llu ms) and exiting", (int)sig,
            (unsigned long long)px->cf->limits.drain_timeout_ms);
    for (unsigned i = 0; i < px->nworkers; i++)
        ct_worker_stop(px->workers[i]);
    event_base_loopexit(px->main_base, NULL);
}

/* The same counters /stats shows, summed once more at exit. */
static void log_totals(struct ct_proxy *px)
{
    struct ct_stats *sum = ct_stats_new(px->nbackends);
    for (unsigned i = 0; i < px->nworkers; i++)
        if (px->workers[i]->stats)
            ct_stats_sum(sum, px->workers[i]->stats);
    ct_ops_backend_counts(px, sum);
    uint64_t req = 0, up[CT_STATS_BE__COUNT] = {0};
    for (size_t k = 0; k < CT_ARRAY_LEN(sum->requests); k++)
        req += ct_stats_get(&sum->requests[k]);
    for (size_t b = 0; b < sum->nbackends; b++)
        for (size_t k = 0; k < CT_STATS_BE__COUNT; k++)
            up[k] += ct_stats_get(&sum->be[b][k]);
    CT_INFO("exit: %llu connections, %llu requests, upstream %llu requests on %llu new "
            "connections, %llu retries",
            (unsigned long long)ct_stats_get(&sum->connections_accepted[0]),
            (unsigned long long)req, (unsigned long long)up[CT_STATS_BE_upstream_requests],
            (unsigned long long)up[CT_STATS_BE_upstream_connections],
            (unsigned long long)up[CT_STATS_BE_upstream_retries]);
    ct_stats_free(&sum);
}

static int start_workers(struct ct_proxy *px, unsigned n)
{
    px->workers = ct_xcalloc(n, sizeof(*px->workers));
    for (unsigned i = 0; i < n; i++) {
        px->workers[i] = ct_worker_new(px, i);
        if (px->workers[i] == NULL)
            return CT_EIO;
        px->nworkers = i + 1;
        if (i == 0)
            learn_ports(px, px->workers[0]);
    }
    for (size_t i = 0; i < px->nlisteners; i++)
        printf("listening on %s %s\n", px->listeners[i].kind == CT_LISTEN_HTTP ? "http" : "https",
               px->listeners[i].name);
    fflush(stdout);
    for (unsigned i = 0; i < n; i++)
        if (ct_worker_start(px->workers[i]) != CT_OK)
            return CT_EIO;
    return CT_OK;
}

/* pid_file: written once the listeners are known to be ours, before they
 * are announced (so a script that saw "listening on" finds the file). */
static bool pid_file_write(const char *path)
{
    FILE *f = fopen(path, "we");
    if (f == NULL || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0) {
        CT_ERR("pid_file %s: cannot write: %s", path, strerror(errno));
        return false;
    }
    return true;
}

/* At exit: only if it still names this process (a second instance that
 * started since may have written it). */
static void pid_file_remove(const char *path)
{
    FILE *f = fopen(path, "re");
    long pid = 0;
    if (f == NULL)
        return;
    bool ours = fscanf(f, "%ld", &pid) == 1 && pid == (long)getpid();
    fclose(f);
    if (ours && unlink(path) != 0)
        CT_ERR("pid_file %s: cannot remove: %s", path, strerror(errno));
}

static int run(const struct ct_conf *cf, const struct ct_cli *cli)
{
    struct ct_proxy px = {.magic = CT_PROXY_MAGIC, .cf = cf, .cli = cli};
    int rc = 1;
    struct event_base *base = event_base_new();
    px.main_base = base;
    struct event *sigs[3] = {NULL, NULL, NULL};
    struct event *tick = NULL;
    struct mem_tick mt = {.px = &px};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = cf->workers ? cf->workers : (unsigned)(cores > 0 ? cores : 1);
    bool pid_written = false;

    signal(SIGPIPE, SIG_IGN);
    /* Until ct_ops_new() installs their handlers, a SIGHUP (a reload sent by
     * systemd during startup) or SIGUSR1 must not kill us. */
    signal(SIGHUP, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    if (setup_listeners(&px) != CT_OK)
        goto out;
    if (resolve_backends(&px) != CT_OK)
        goto out;
    if (px.nlisteners == 0) {
        CT_ERR("nothing to do: %zu listeners, %zu backends", px.nlisteners, px.nbackends);
        goto out;
    }
    if (cf->pid_file && !(pid_written = pid_file_write(cf->pid_file)))
        goto out;
    sigs[0] = evsignal_new(base, SIGINT, on_signal, &px);
    sigs[1] = evsignal_new(base, SIGTERM, on_signal, &px);
    /* nginx's graceful stop; here every stop is graceful (drain, snapshot) */
    sigs[2] = evsignal_new(base, SIGQUIT, on_signal, &px);
    for (int i = 0; i < 3; i++)
        evsignal_add(sigs[i], NULL);
    if (px.tickets) {
        tick = event_new(base, -1, EV_PERSIST, on_ticket_tick, &px);
        event_add(tick, &(struct timeval){1, 0});
    }
    mt.ev = event_new(base, -1, EV_PERSIST, on_mem_tick, &mt);
    event_add(mt.ev, &(struct timeval){1, 0});
    if (ct_ops_new(&px) == NULL) /* admin listener, access log, SIGHUP/SIGUSR1 */
        goto out;
    px.cache = ct_wcache_store_new(cf);
    /* before any worker exists, so the listeners accept into a warm cache */
    if (px.cache && cf->cache.persist)
        ct_persist_load(px.cache, cf->cache.persist);
    px.fleet = ct_fleet_new(); /* kept even without a fleet: a reload may add one */
    /* 16 k clients per process (~1 MiB): enough for the busy ones; an idle
     * client's bucket is what a flood of new addresses takes over */
    px.limits = ct_limit_table_new(16384);
    px.route_names = ct_stats_names_new();
    ct_reload_init(px.ops, n);
    if (start_workers(&px, n) != CT_OK) {
        for (unsigned i = 0; i < px.nworkers; i++)
            if (px.workers[i] && px.workers[i]->started)
                ct_worker_stop(px.workers[i]);
        goto out;
    }
    ct_ops_start(px.ops);
    CT_INFO("cachet %s: %u workers, %zu listeners, %zu backends", ct_build_version(), n, px.nlisteners,
            px.nbackends);
    event_base_dispatch(base); /* until a signal */
    rc = 0;
out:
    for (unsigned i = 0; i < px.nworkers; i++)
        if (px.workers[i])
            ct_worker_join(px.workers[i]);
    if (rc == 0)
        log_totals(&px);
    for (unsigned i = 0; i < px.nworkers; i++)
        ct_worker_join_free(&px.workers[i]);
    if (px.ops)
        ct_ops_stop_lurker(px.ops); /* its thread walks the cache */
    /* drained: no worker and no lurker touch the store any more. The
     * configuration of the last reload says where (px.cf). */
    if (rc == 0 && px.cache && px.cf->cache.persist) {
        char build[64];
        snprintf(build, sizeof(build), "cachet %s", ct_build_version());
        ct_persist_save(px.cache, px.cf->cache.persist, build);
    }
    ct_cache_free(&px.cache); /* after the workers: their buffers held references */
    ct_limit_table_free(&px.limits);
    ct_stats_names_free(&px.route_names);
    for (int i = 0; i < 3; i++)
        if (sigs[i])
            event_free(sigs[i]);
    if (tick)
        event_free(tick);
    if (mt.ev)
        event_free(mt.ev);
    ct_ops_free(&px.ops);
    ct_fleet_free(&px.fleet); /* after the ops: its Redis link marks members in it */
    event_base_free(base);
    for (size_t i = 0; i < px.nlisteners; i++)
        ct_tls_ctx_free(&px.listeners[i].tls);
    ct_tls_shared_release(&px.tickets);
    ct_tls_chal_free(&px.acme_chal); /* after every context that reads it */
    free(px.workers);
    ct_ops_backends_free(&px.backends, px.nbackends);
    free(px.listeners);
    if (pid_written)
        pid_file_remove(cf->pid_file);
    return rc;
}

int main(int argc, char **argv)
{
    struct ct_cli cli;
    char err[2048];
    if (argc >= 2 && strcmp(argv[1], "ctl") == 0)
        return ct_ctl_main(argc - 1, argv + 1); /* cachet ctl top: talks to a running cachet */
    if (ct_conf_cli_parse(argc, argv, &cli, err, sizeof(err)) != CT_OK) {
        /* every bad option, located; not the whole usage, which buries them */
        fprintf(stderr, "%s\n(cachet --help lists the options)\n", err);
        return 2;
    }
    if (cli.help) {
        ct_conf_cli_usage(argv[0], stdout);
        return 0;
    }
    if (cli.build_info) { /* as nginx -V: no configuration is read */
        ct_build_info_print(stdout);
        return 0;
    }
    struct ct_conf_errors *errs = ct_xcalloc(1, sizeof(*errs));
    struct ct_conf *cf = NULL;
    ct_conf_errors_init(errs);
    int rc = ct_conf_build(&cli, &cf, errs);
    if (rc != CT_OK) {
        ct_conf_errors_print(errs, stderr);
        free(errs);
        return 1;
    }
    free(errs);
    if (cli.version) {
        printf("cachet %s\n", ct_build_version());
    } else if (cli.test_only) {
        if (check_backends(cf) == 0)
            printf("configuration ok\n");
        else
            rc = 1;
    } else if (cli.dump) {
        ct_conf_dump(cf, stdout);
    } else {
        ct_ops_log_apply(cf, NULL, ""); /* on failure the reason is on stderr */
        rc = run(cf, &cli);
    }
    ct_conf_free(&cf);
    return rc;
}
