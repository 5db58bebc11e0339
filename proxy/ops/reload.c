/*
 * proxy/ops/reload.c: SIGHUP reloads the configuration without dropping a
 * connection (nginx's HUP, varnishadm vcl.load + vcl.use).
 *
 * On the main thread:
 *   1. ct_conf_build() with the original command line (file + the same
 *      overrides), and the fleet members learned through Redis merged in
 *      (ops_fleet.c, which also reloads when they change). Errors: each "FILE:LINE: ..." goes to the error log and the
 *      running configuration stays.
 *   2. A changed backend set (added, removed, moved, renamed, reordered) is
 *      resolved into a new array of shared backend objects (an address that
 *      does not resolve refuses the reload); same-named backends chain to
 *      their predecessor so /metrics counts continue. Warn about settings
 *      that only take effect on a restart (workers, cache size and key
 *      options). The admin listener, on the main thread, is bound anew if its
 *      address changed and switched at once; so are px->backends and the
 *      active health checker (restarted on the new set).
 *   3. Plan the listeners: kept (same kind and configured address), added,
 *      removed. HTTPS listeners are always replaced by a new one on the same
 *      address with a new TLS context, so certificates are re-read. An added
 *      listener's address is bound first by the main thread (without
 *      listening): a port in use refuses the reload before anything changed,
 *      and port 0 becomes the concrete port every worker then binds.
 *   4. Build everything (TLS contexts, access log) before anything changes;
 *      a failure abandons the reload with nothing changed.
 *   5. Hand the new generation to each worker through its wake pipe ('r').
 *      Each worker switches at a safe point (between events): its config
 *      snapshot, backend settings or set (ct_upstream_backends_set: same
 *      name+address keep their runtime state, the others are retired and
 *      freed with their last upstream), limits, access-log buffer, then opens
 *      the added listeners before closing the removed ones. Requests in
 *      flight go on; the cache is untouched.
 *   6. A 10 ms timer waits until every worker has switched, then announces
 *      the added listeners ("listening on KIND ADDR:PORT") and logs the end.
 *
 * Retirement: what a reload replaces (the configuration, the listener
 * structs with their TLS contexts, the backend array) is still read by the
 * connections that were open when a worker switched: a client reads its
 * listener struct, a request in flight the configuration it started on, a
 * retired backend's upstreams its settings and shared object. So each is
 * put on the retired list with the generation that replaced it, and freed
 * by the main thread (sweep, every RETIRE_SWEEP_MS while the list is not
 * empty) once every worker is quiet at that generation: it switched, and
 * every client it had open then has closed. A worker counts those itself
 * (struct rl_quiet, written by its thread only; client ids grow, so "open
 * at the switch" is "id <= the fence"), and publishes the generation with a
 * release store the sweep reads with acquire. Connections accepted after a
 * switch only meet the new generation (the removed listeners were closed in
 * the switch, after taking what was queued on them), so 1000 reloads keep
 * what one keeps. Counters survive their objects: the handshakes of a freed
 * TLS context and the counts of a freed backend array are added to their
 * successors. The configuration and backend array main.c made at start are
 * main.c's; ct_reload_free_retired() frees the rest at exit.
 */
#include <errno.h>
#include <event2/event.h>
#include <netdb.h>
#include <event2/listener.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"
#include "conf/conf.h"
#include "proxy/core/core.h"
#include "proxy/ctx.h"
#include "proxy/net/accept.h"
#include "proxy/ops/ops_int.h"
#include "proxy/stats/accesslog.h"
#include "proxy/upstream/health.h"
#include "proxy/upstream/upstream.h"
#include "tls/tls.h"

/* One listening address as the reload knows it. */
struct rl_listener {
    const struct ct_listener_conf *lc;
    enum ct_conf_listen_kind kind;
    char host[64];
    uint16_t port; /* as configured (0 = ephemeral) */
};

/* One worker's view of retirement. Written by its thread only; QUIET is
 * read by the main thread's sweep. */
struct rl_quiet {
    uint64_t fence;    /* client ids up to this one were open at the last switch */
    unsigned old_open; /* ... and this many of them still are */
    unsigned target;   /* the generation of that switch */
    _Atomic unsigned quiet; /* nothing older than this generation is in use here */
};

/* Something a reload replaced, freed once every worker is quiet at GEN. */
struct rl_retired {
    unsigned gen;
    enum { RL_CONF, RL_LISTENER } kind;
    void *p; /* struct ct_conf *, struct ct_listener_conf * */
};

/* A replaced backend array (N entries), in retirement order. */
struct rl_old_backends {
    struct ct_backend_addr *a;
    size_t n;
    unsigned gen;
};

#define RETIRE_SWEEP_MS 100

struct ct_reload {
    unsigned magic;
#define CT_RELOAD_MAGIC 0x7e10ad00u
    struct rl_listener *active;
    size_t nactive;
    /* made by reloads, freed when retired and quiet (or at exit) */
    struct ct_conf **confs;
    size_t nconfs;
    struct ct_listener_conf **lcs;
    size_t nlcs;
    unsigned generation;
    struct rl_quiet *quiet; /* per worker id */
    unsigned nquiet;
    struct rl_retired *retired;
    size_t nretired;
    struct event *sweep_timer;
    uint64_t tls_gone_full, tls_gone_resumed; /* handshakes of freed TLS contexts */
    bool tls_gone;
    /* the reload being applied (read by workers after their 'r') */
    const struct ct_conf *next_cf;
    const struct ct_listener_conf **add;
    size_t nadd;
    const struct ct_listener_conf **del;
    size_t ndel;
    struct rl_listener *next_active;
    size_t next_nactive;
    bool alog_change;
    struct ct_accesslog *next_alog;
    struct ct_accesslog_buf **alog_bufs; /* per worker id */
    int *reserved;                       /* fds holding ephemeral ports */
    size_t nreserved;
    _Atomic unsigned pending; /* workers that have not switched yet */
    struct event *done_timer;
    struct event *ticket_timer; /* rotation of a ticket store a reload created */
    bool admin_change;
    struct evconnlistener *next_admin;
    char next_admin_name[80];
    /* a new backend set (NULL: same backends, new settings); workers switch
     * to it; replaced arrays are retired (retired upstreams and counter
     * chains point into them) */
    struct ct_backend_addr *next_backends;
    size_t next_nbackends;
    struct rl_old_backends *old_backends;
    size_t nold_backends;
};

static void rl_listener_set(struct rl_listener *r, const struct ct_listener_conf *lc,
                            const struct ct_conf_listener *l)
{
    r->lc = lc;
    r->kind = l->kind;
    snprintf(r->host, sizeof(r->host), "%s", l->addr.host ? l->addr.host : "");
    r->port = l->addr.port;
}

static struct ct_reload *reload_get(struct ct_ops *ops)
{
    if (ops->rl)
        return ops->rl;
    struct ct_proxy *px = ops->px;
    struct ct_reload *rl = ct_xcalloc(1, sizeof(*rl));
    rl->magic = CT_RELOAD_MAGIC;
    /* main.c made px->listeners[i] from cf->listeners[i], in order. */
    rl->active = ct_xcalloc(px->nlisteners + 1, sizeof(*rl->active));
    for (size_t i = 0; i < px->nlisteners && i < px->cf->nlisteners; i++)
        rl_listener_set(&rl->active[rl->nactive++], &px->listeners[i], &px->cf->listeners[i]);
    ops->rl = rl;
    return rl;
}

void ct_reload_init(struct ct_ops *ops, unsigned nworkers)
{
    struct ct_reload *rl = reload_get(ops);
    CT_ASSERT(rl->quiet == NULL);
    rl->quiet = ct_xcalloc(nworkers + 1, sizeof(*rl->quiet));
    rl->nquiet = nworkers;
}

/* ---- retirement ---------------------------------------------------------------- */

static void on_sweep(evutil_socket_t fd, short what, void *arg);

/* P (of KIND) was replaced by the reload to generation GEN. Main thread. */
static void retire(struct ct_ops *ops, int kind, void *p, unsigned gen)
{
    struct ct_reload *rl = ops->rl;
    rl->retired = ct_xrealloc(rl->retired, (rl->nretired + 1) * sizeof(*rl->retired));
    rl->retired[rl->nretired++] = (struct rl_retired){gen, kind, p};
    if (rl->sweep_timer == NULL)
        rl->sweep_timer = event_new(ops->px->main_base, -1, EV_PERSIST, on_sweep, ops);
    if (!event_pending(rl->sweep_timer, EV_TIMEOUT, NULL))
        event_add(rl->sweep_timer, &(struct timeval){0, RETIRE_SWEEP_MS * 1000});
}

/* The oldest generation some worker may still use (0 without
 * ct_reload_init(): nobody counts, so nothing is known to be free). */
static unsigned quiet_gen(const struct ct_reload *rl)
{
    if (rl->quiet == NULL)
        return 0;
    unsigned q = rl->generation;
    for (unsigned i = 0; i < rl->nquiet; i++) {
        unsigned g = atomic_load_explicit(&rl->quiet[i].quiet, memory_order_acquire);
        q = g < q ? g : q;
    }
    return q;
}

/* Remove P from the N pointers at V (order does not matter); false if absent. */
static bool ptrs_remove(void **v, size_t *n, const void *p)
{
    for (size_t i = 0; i < *n; i++) {
        if (v[i] != p)
            continue;
        v[i] = v[--*n];
        return true;
    }
    return false;
}

/* A replaced listener nobody uses: its handshake counts go on (the sum
 * /metrics shows only grows), its TLS context goes. A struct a reload made
 * goes too; main.c's (px->listeners) stay until exit. */
static void listener_free(struct ct_reload *rl, struct ct_listener_conf *lc)
{
    if (lc->tls) {
        struct ct_tls_stats ts;
        ct_tls_ctx_stats(lc->tls, &ts);
        rl->tls_gone_full += ts.handshakes_full;
        rl->tls_gone_resumed += ts.handshakes_resumed;
        rl->tls_gone = true;
        ct_tls_ctx_free(&lc->tls);
    }
    if (ptrs_remove((void **)rl->lcs, &rl->nlcs, lc))
        free(lc);
}

/* The oldest replaced backend array nobody uses: the same-named backends of
 * the next set continue its counts (they chain to it through PREV). */
static void old_backends_free(struct ct_proxy *px, struct ct_reload *rl)
{
    struct rl_old_backends *o = &rl->old_backends[0];
    struct ct_backend_addr *next = rl->nold_backends > 1 ? rl->old_backends[1].a : px->backends;
    size_t nnext = rl->nold_backends > 1 ? rl->old_backends[1].n : px->nbackends;
    for (size_t i = 0; i < nnext; i++) {
        const struct ct_backend_addr *p = next[i].prev;
        if (p == NULL || p < o->a || p >= o->a + o->n)
            continue;
        for (size_t k = 0; k < CT_STATS_BE__COUNT; k++)
            atomic_fetch_add(&next[i].counts[k], atomic_load(&p->counts[k]));
        next[i].prev = p->prev; /* NULL: its own predecessors went first */
    }
    ct_ops_backends_free(&o->a, o->n);
    memmove(o, o + 1, (--rl->nold_backends) * sizeof(*o));
}

/* Free what every worker is done with. Main thread. */
static void sweep(struct ct_ops *ops)
{
    struct ct_reload *rl = ops->rl;
    unsigned q = quiet_gen(rl);
    size_t k = 0;
    for (size_t i = 0; i < rl->nretired; i++) {
        struct rl_retired *r = &rl->retired[i];
        if (r->gen > q) {
            rl->retired[k++] = *r;
        } else if (r->kind == RL_CONF) {
            struct ct_conf *cf = r->p;
            if (ptrs_remove((void **)rl->confs, &rl->nconfs, cf))
                ct_conf_free(&cf);
        } else {
            listener_free(rl, r->p);
        }
    }
    rl->nretired = k;
    while (rl->nold_backends > 0 && rl->old_backends[0].gen <= q)
        old_backends_free(ops->px, rl);
    ops->reload.retired = rl->nretired + rl->nold_backends;
    if (rl->nretired == 0 && rl->nold_backends == 0)
        evtimer_del(rl->sweep_timer);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    sweep(ops);
}

void ct_reload_conn_gone(struct ct_worker *w, uint64_t conn_id)
{
    struct ct_reload *rl = w->px->ops ? w->px->ops->rl : NULL;
    if (rl == NULL || w->id >= rl->nquiet)
        return;
    struct rl_quiet *q = &rl->quiet[w->id];
    if (q->old_open == 0 || conn_id > q->fence)
        return;
    if (--q->old_open == 0)
        atomic_store_explicit(&q->quiet, q->target, memory_order_release);
}

/* W switched to generation GEN: what it had open keeps the older ones. */
static void worker_switched(struct ct_worker *w, struct ct_reload *rl, unsigned gen)
{
    if (w->id >= rl->nquiet)
        return;
    struct rl_quiet *q = &rl->quiet[w->id];
    q->fence = w->next_conn_id;
    q->old_open = w->nclients;
    q->target = gen;
    if (q->old_open == 0)
        atomic_store_explicit(&q->quiet, gen, memory_order_release);
}

/* ---- checks ------------------------------------------------------------------ */

static const char *opt(const char *s) { return s ? s : ""; }

/* Same backends (name, host, port) in the same order: only settings change,
 * the running objects stay. Never with TLS backends: their client contexts
 * are rebuilt on every reload (a CA or certificate file may have changed
 * under the same name), which takes a new set. */
static bool backends_same(const struct ct_conf *a, const struct ct_conf *b)
{
    if (a->nflat != b->nflat)
        return false;
    for (size_t i = 0; i < a->nflat; i++)
        if (a->flat_backends[i].tls.on || b->flat_backends[i].tls.on ||
            a->flat_backends[i].port != b->flat_backends[i].port ||
            strcmp(a->flat_backends[i].host, b->flat_backends[i].host) != 0 ||
            strcmp(opt(a->flat_backends[i].name), opt(b->flat_backends[i].name)) != 0 ||
            a->flat_group[i] != b->flat_group[i])
            return false;
    return true;
}

/* The label of a backend in /metrics and the key that carries its counters
 * over a reload. */
static const char *be_label(const struct ct_conf_backend *bc, const struct ct_backend_addr *a)
{
    return bc->name ? bc->name : a->name;
}

/* A new backend set for CF (NULL if an address does not resolve: the
 * reload is refused). A backend named like a running one continues its
 * counters (PREV) and its drain; with the same address and checks on both
 * sides, its active-health state too. */
static struct ct_backend_addr *plan_backends(const struct ct_proxy *px, const struct ct_conf *cf)
{
    struct ct_backend_addr *nb = ct_xcalloc(cf->nflat + 1, sizeof(*nb));
    for (size_t i = 0; i < cf->nflat; i++) {
        const struct ct_conf_backend *bc = &cf->flat_backends[i];
        if (!ct_ops_backend_resolve(bc, &nb[i], "SIGHUP: ")) {
            ct_ops_backends_free(&nb, i);
            return NULL;
        }
        for (size_t j = 0; j < px->nbackends; j++) {
            const struct ct_backend_addr *o = &px->backends[j];
            const struct ct_conf_backend *obc = &px->cf->flat_backends[j];
            if (strcmp(be_label(obc, o), be_label(bc, &nb[i])) != 0)
                continue;
            nb[i].prev = o;
            /* drained stays drained under its name, whatever its address */
            atomic_store(&nb[i].drain, atomic_load(&o->drain));
            if (o->salen == nb[i].salen && memcmp(&o->sa, &nb[i].sa, o->salen) == 0 &&
                obc->health.enabled && bc->health.enabled)
                atomic_store(&nb[i].down, atomic_load(&o->down));
            break;
        }
    }
    return nb;
}

/* Main thread: the new set is PX's from now on (admin, health); the
 * workers follow through ct_reload_worker_apply. */
static void switch_backends(struct ct_ops *ops, const struct ct_conf *cf)
{
    struct ct_reload *rl = ops->rl;
    struct ct_proxy *px = ops->px;
    if (rl->next_backends == NULL) {
        ct_health_reconfigure(ops->health, cf->flat_backends, cf->nflat);
        return;
    }
    rl->old_backends = ct_xrealloc(rl->old_backends,
                                   (rl->nold_backends + 1) * sizeof(*rl->old_backends));
    rl->old_backends[rl->nold_backends++] =
        (struct rl_old_backends){px->backends, px->nbackends, rl->generation};
    px->backends = rl->next_backends;
    px->nbackends = rl->next_nbackends;
    /* The probes of the old set stop; the workers read `down` from the
     * objects, never the checker, so it can go at once. */
    ct_health_free(&ops->health);
    ops->health = ct_health_new(px->main_base, px->backends, cf->flat_backends, px->nbackends);
    CT_INFO("SIGHUP: %zu backends (set changed)", px->nbackends);
}

static void warn_restart_only(const struct ct_conf *old, const struct ct_conf *cf)
{
    if (old->workers != cf->workers)
        CT_WARN("SIGHUP: workers: a change needs a restart; keeping %u", old->workers);
    if (old->cache.size_bytes != cf->cache.size_bytes)
        CT_WARN("SIGHUP: cache.size: a change needs a restart (the cache survives reloads)");
    if (old->cache.eviction != cf->cache.eviction)
        CT_WARN("SIGHUP: cache.eviction: a change needs a restart (the cache survives reloads)");
}

static bool admin_changed(const struct ct_conf *a, const struct ct_conf *b)
{
    return a->admin.enabled != b->admin.enabled || a->admin.addr.port != b->admin.addr.port ||
           strcmp(a->admin.addr.host ? a->admin.addr.host : "",
                  b->admin.addr.host ? b->admin.addr.host : "") != 0;
}

/* A new admin address: bind it now (a failure refuses the reload). */
static bool plan_admin(struct ct_ops *ops, const struct ct_conf *old, const struct ct_conf *cf)
{
    struct ct_reload *rl = ops->rl;
    rl->admin_change = admin_changed(old, cf);
    if (!rl->admin_change || !cf->admin.enabled)
        return true;
    rl->next_admin = ct_ops_admin_bind(ops, &cf->admin.addr, rl->next_admin_name,
                                       sizeof(rl->next_admin_name));
    return rl->next_admin != NULL;
}

/* The admin listener lives on the main thread: switch it at once. Open
 * admin connections finish on their own. */
static void switch_admin(struct ct_ops *ops)
{
    struct ct_reload *rl = ops->rl;
    if (!rl->admin_change)
        return;
    if (ops->lev)
        evconnlistener_free(ops->lev);
    ops->lev = rl->next_admin;
    rl->next_admin = NULL;
    rl->admin_change = false;
    if (ops->lev) {
        memcpy(ops->admin_name, rl->next_admin_name, sizeof(ops->admin_name));
        printf("listening on admin %s\n", ops->admin_name);
        fflush(stdout);
    }
    CT_INFO("SIGHUP: admin listener %s%s", ops->lev ? "now on " : "closed",
            ops->lev ? ops->admin_name : "");
}

/* ---- building ---------------------------------------------------------------- */

/* Is SA the address of one of the running listeners (their real ports)? */
static bool ours(const struct ct_reload *rl, const struct sockaddr_storage *sa)
{
    for (size_t i = 0; i < rl->nactive; i++) {
        const struct ct_listener_conf *a = rl->active[i].lc;
        if (a->sa.ss_family != sa->ss_family)
            continue;
        if (sa->ss_family == AF_INET) {
            const struct sockaddr_in *x = (const void *)&a->sa, *y = (const void *)sa;
            if (x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr)
                return true;
        } else if (sa->ss_family == AF_INET6) {
            const struct sockaddr_in6 *x = (const void *)&a->sa, *y = (const void *)sa;
            if (x->sin6_port == y->sin6_port &&
                memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0)
                return true;
        }
    }
    return false;
}

/* Bind (no listen) a socket on SA to learn the port the kernel picks for 0;
 * the workers then bind that port with SO_REUSEPORT. Only our own running
 * listeners may already hold it (a listener that changes kind or settings,
 * or a :0 one now named by its port): a port another process holds is
 * refused (ct_net_listen_probe). Returns the fd or -1 (errno set). */
static int reserve_port(const struct ct_reload *rl, struct ct_listener_conf *lc)
{
    int e = ct_net_listen_probe(&lc->sa, &lc->salen);
    if (e != 0 && !(e == EADDRINUSE && ours(rl, &lc->sa))) {
        errno = e;
        return -1;
    }
    int fd = socket(lc->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    socklen_t len = sizeof(lc->sa);
    if (bind(fd, (struct sockaddr *)&lc->sa, lc->salen) != 0 ||
        getsockname(fd, (struct sockaddr *)&lc->sa, &len) != 0) {
        close(fd);
        return -1;
    }
    lc->salen = len;
    return fd;
}

static void on_ticket_tick(evutil_socket_t fd, short what, void *arg)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    if (ct_tls_shared_tick(ops->px->tickets, ct_time_mono()) < 0)
        CT_ERR("TLS ticket key rotation failed (RNG); keeping the current keys");
}

/* The TLS side of an HTTPS listener made by a reload: its context (the
 * certificates read now) on the process's one ticket store, created here
 * (with its rotation timer) if no HTTPS listener existed at start; the mTLS
 * subject header as main.c sets it. */
static int https_ctx(struct ct_ops *ops, struct ct_listener_conf *lc,
                     const struct ct_conf_listener *l)
{
    struct ct_proxy *px = ops->px;
    struct ct_reload *rl = ops->rl;
    char err[256];
    if (l->tls.session_tickets && px->tickets == NULL) {
        px->tickets = ct_tls_shared_new(l->tls.ticket_key_rotation_ms, ct_time_mono(), err,
                                        sizeof(err));
        if (px->tickets == NULL) {
            CT_ERR("SIGHUP: TLS session tickets: %s", err);
            return CT_ETLS;
        }
        rl->ticket_timer = event_new(px->main_base, -1, EV_PERSIST, on_ticket_tick, ops);
        event_add(rl->ticket_timer, &(struct timeval){1, 0});
    }
    lc->tls = ct_tls_ctx_from_conf(&l->tls, px->tickets, err, sizeof(err));
    if (lc->tls && px->acme_chal)
        ct_tls_ctx_set_chal(lc->tls, px->acme_chal);
    if (lc->tls == NULL) {
        CT_ERR("SIGHUP: https listener %s:%u: %s", l->addr.host, l->addr.port, err);
        return CT_ETLS;
    }
    CT_INFO("SIGHUP: https listener %s:%u: %s", l->addr.host, l->addr.port,
            ct_tls_ctx_describe(lc->tls));
    return CT_OK;
}

void ct_listener_conf_fill(struct ct_listener_conf *lc, const struct ct_conf_listener *l)
{
    lc->kind = l->kind == CT_CONF_LISTEN_HTTPS ? CT_LISTEN_HTTPS : CT_LISTEN_HTTP;
    lc->handshake_timeout_ms = l->tls.handshake_timeout_ms;
    lc->honour_client_cc = l->honour_client_cc;
    lc->h2c = lc->kind == CT_LISTEN_HTTP && l->h2c;
    lc->proxy_protocol = l->proxy_protocol;
    lc->default_site = l->default_site_index + 1;
    lc->npp_from = CT_MIN(l->nproxy_protocol_from, CT_LISTEN_PP_MAX);
    if (lc->npp_from)
        memcpy(lc->pp_from, l->proxy_protocol_from, lc->npp_from * sizeof(*lc->pp_from));
    if (lc->kind == CT_LISTEN_HTTPS && l->tls.client_verify != CT_CONF_VERIFY_OFF &&
        l->tls.client_subject_header)
        lc->subject_header = ct_str_c(l->tls.client_subject_header); /* conf kept until exit */
}

/* A listener struct for L (address from SAME if it replaces one). NULL on
 * failure (logged). */
static struct ct_listener_conf *new_listener(struct ct_ops *ops, const struct ct_conf_listener *l,
                                             const struct ct_listener_conf *same)
{
    struct ct_reload *rl = ops->rl;
    struct ct_listener_conf *lc = ct_xcalloc(1, sizeof(*lc));
    ct_listener_conf_fill(lc, l);
    memcpy(&lc->sa, same ? &same->sa : &l->addr.sa, same ? same->salen : l->addr.salen);
    lc->salen = same ? same->salen : l->addr.salen;
    if (lc->kind == CT_LISTEN_HTTPS && https_ctx(ops, lc, l) != CT_OK) {
        free(lc);
        return NULL;
    }
    if (same == NULL) {
        /* Port 0: learn the port every worker will bind. Any port: find out
         * now, while nothing has changed, that it cannot be bound. */
        int fd = reserve_port(rl, lc);
        if (fd < 0) {
            CT_ERR("SIGHUP: cannot listen on %s:%u: %s", l->addr.host, l->addr.port,
                   ct_net_bind_error(errno));
            ct_tls_ctx_free(&lc->tls);
            free(lc);
            return NULL;
        }
        rl->reserved = ct_xrealloc(rl->reserved, (rl->nreserved + 1) * sizeof(int));
        rl->reserved[rl->nreserved++] = fd;
    }
    ct_ops_addr_name((struct sockaddr *)&lc->sa, lc->name, sizeof(lc->name));
    rl->lcs = ct_xrealloc(rl->lcs, (rl->nlcs + 1) * sizeof(*rl->lcs));
    rl->lcs[rl->nlcs++] = lc;
    return lc;
}

/* The active listener L continues: same kind and configured address, not
 * claimed by an earlier entry of the new file (two "127.0.0.1:0" listeners
 * are two listeners). */
static const struct rl_listener *find_active(const struct ct_reload *rl,
                                             const struct ct_conf_listener *l, const bool *claimed)
{
    for (size_t i = 0; i < rl->nactive; i++) {
        const struct rl_listener *a = &rl->active[i];
        if (!claimed[i] && a->kind == l->kind && a->port == l->addr.port && strcmp(a->host, l->addr.host) == 0)
            return a;
    }
    return NULL;
}

/* Which listeners to open and close. False if one could not be built. */
static bool plan_listeners(struct ct_ops *ops, const struct ct_conf *cf)
{
    struct ct_reload *rl = ops->rl;
    rl->add = ct_xcalloc(cf->nlisteners + 1, sizeof(*rl->add));
    rl->del = ct_xcalloc(rl->nactive + 1, sizeof(*rl->del));
    rl->next_active = ct_xcalloc(cf->nlisteners + 1, sizeof(*rl->next_active));
    bool *kept = ct_xcalloc(rl->nactive + 1, sizeof(*kept));
    bool *claimed = ct_xcalloc(rl->nactive + 1, sizeof(*claimed));
    bool ok = true;
    for (size_t i = 0; i < cf->nlisteners && ok; i++) {
        const struct ct_conf_listener *l = &cf->listeners[i];
        const struct rl_listener *a = find_active(rl, l, claimed);
        if (a)
            claimed[a - rl->active] = true;
        const struct ct_listener_conf *lc = a ? a->lc : NULL;
        if (a == NULL || l->kind == CT_CONF_LISTEN_HTTPS ||
            a->lc->honour_client_cc != l->honour_client_cc || a->lc->h2c != l->h2c ||
            a->lc->proxy_protocol != l->proxy_protocol ||
            a->lc->default_site != l->default_site_index + 1 ||
            a->lc->npp_from != l->nproxy_protocol_from ||
            (l->nproxy_protocol_from &&
             memcmp(a->lc->pp_from, l->proxy_protocol_from,
                    a->lc->npp_from * sizeof(*l->proxy_protocol_from)) != 0)) {
            /* new; HTTPS: a new context re-reads the certificates; a
             * listener setting changed: listener structs are immutable
             * (workers read them without locks), so a new one replaces it */
            lc = new_listener(ops, l, a ? a->lc : NULL);
            if (lc == NULL) {
                ok = false;
                break;
            }
            rl->add[rl->nadd++] = lc;
        }
        if (a)
            kept[a - rl->active] = lc == a->lc;
        rl_listener_set(&rl->next_active[rl->next_nactive++], lc, l);
    }
    for (size_t i = 0; i < rl->nactive; i++)
        if (!kept[i])
            rl->del[rl->ndel++] = rl->active[i].lc;
    free(kept);
    free(claimed);
    return ok;
}

static bool plan_access_log(struct ct_ops *ops, const struct ct_conf *old, const struct ct_conf *cf)
{
    struct ct_reload *rl = ops->rl;
    const char *op = old->logs.access_log, *np = cf->logs.access_log;
    rl->alog_change = (op == NULL) != (np == NULL) || (op && strcmp(op, np) != 0) ||
                      old->logs.access_format != cf->logs.access_format;
    if (!rl->alog_change || np == NULL)
        return true;
    char err[256];
    rl->next_alog = ct_accesslog_open(
        np, cf->logs.access_format == CT_CONF_ACCESS_JSON ? CT_ACCESSLOG_JSON : CT_ACCESSLOG_COMBINED,
        err, sizeof(err));
    if (rl->next_alog == NULL) {
        CT_ERR("SIGHUP: %s", err);
        return false;
    }
    struct ct_proxy *px = ops->px;
    rl->alog_bufs = ct_xcalloc(px->nworkers + 1, sizeof(*rl->alog_bufs));
    for (unsigned i = 0; i < px->nworkers; i++)
        rl->alog_bufs[i] = ct_accesslog_buf_new(rl->next_alog);
    return true;
}

/* Undo a plan that will not be applied. */
static void plan_abandon(struct ct_reload *rl)
{
    for (size_t i = 0; i < rl->nadd; i++) {
        for (size_t k = 0; k < rl->nlcs; k++) {
            if (rl->lcs[k] != rl->add[i])
                continue;
            ct_tls_ctx_free(&rl->lcs[k]->tls);
            free(rl->lcs[k]);
            rl->lcs[k] = rl->lcs[--rl->nlcs];
            break;
        }
    }
    for (size_t i = 0; i < rl->nreserved; i++)
        close(rl->reserved[i]);
    CT_FREE(&rl->reserved);
    rl->nreserved = 0;
    ct_accesslog_free(&rl->next_alog);
    CT_FREE(&rl->alog_bufs);
    if (rl->next_admin)
        evconnlistener_free(rl->next_admin);
    rl->next_admin = NULL;
    rl->admin_change = false;
    CT_FREE(&rl->add);
    CT_FREE(&rl->del);
    CT_FREE(&rl->next_active);
    rl->nadd = rl->ndel = rl->next_nactive = 0;
}

/* ---- switching ----------------------------------------------------------------- */

void ct_reload_worker_apply(struct ct_worker *w, ct_listeners_update_fn *listeners_update)
{
    struct ct_reload *rl = w->px->ops->rl;
    CT_CHECK_OBJ(rl, CT_RELOAD_MAGIC);
    const struct ct_conf *cf = rl->next_cf;
    w->cf = cf;
    if (rl->next_backends)
        ct_upstream_backends_set(w, rl->next_backends, cf->flat_backends, rl->next_nbackends);
    else
        for (size_t i = 0; i < w->nbe && i < cf->nflat; i++)
            w->be[i]->bc = &cf->flat_backends[i];
    w->limits.max_line = cf->limits.max_request_line_bytes;
    w->limits.max_head = cf->limits.max_header_bytes;
    w->limits.max_fields = cf->limits.max_header_count;
    w->limits.max_body = cf->limits.max_body_bytes;
    if (rl->alog_change)
        w->alog = rl->alog_bufs ? rl->alog_bufs[w->id] : NULL;
    if (listeners_update(w, rl->add, rl->nadd, rl->del, rl->ndel) != CT_OK)
        CT_ERR("w%u SIGHUP: some added listeners could not be opened", w->id);
    /* The cache's policy options follow the new configuration now (a
     * request compares the pointer, and the new one may sit where a freed
     * one was). */
    if (w->wc)
        ct_wcache_follow(w->wc, cf);
    worker_switched(w, rl, rl->generation); /* after the listeners: what they took is old */
    atomic_fetch_sub(&rl->pending, 1); /* last: main may now retire what we left */
}

static void finish(struct ct_ops *ops)
{
    struct ct_reload *rl = ops->rl;
    for (size_t i = 0; i < rl->nreserved; i++)
        close(rl->reserved[i]); /* every worker has its own socket on the port now */
    CT_FREE(&rl->reserved);
    rl->nreserved = 0;
    if (rl->alog_change) {
        ct_accesslog_free(&ops->alog); /* flushes what was logged before the switch */
        ops->alog = rl->next_alog;
        rl->next_alog = NULL;
        CT_FREE(&rl->alog_bufs);
        if (ops->alog && ops->alog_timer == NULL)
            ct_ops_start_alog_timer(ops);
    }
    for (size_t i = 0; i < rl->nadd; i++) {
        bool replaced = false;
        for (size_t k = 0; k < rl->ndel; k++)
            replaced = replaced || strcmp(rl->del[k]->name, rl->add[i]->name) == 0;
        if (!replaced)
            printf("listening on %s %s\n", rl->add[i]->kind == CT_LISTEN_HTTP ? "http" : "https",
                   rl->add[i]->name);
    }
    fflush(stdout);
    CT_INFO("SIGHUP: configuration %u from %s in use by every worker (%zu listeners opened, "
            "%zu closed)",
            rl->generation, rl->next_cf->source, rl->nadd, rl->ndel);
    free(rl->active);
    rl->active = rl->next_active;
    rl->nactive = rl->next_nactive;
    rl->next_active = NULL;
    rl->next_nactive = 0;
    ct_ops_acme_reloaded(ops); /* installs go to rl->active from now on */
    CT_FREE(&rl->add);
    for (size_t i = 0; i < rl->ndel; i++) /* no worker listens on them any more */
        retire(ops, RL_LISTENER, (void *)rl->del[i], rl->generation);
    CT_FREE(&rl->del);
    rl->nadd = rl->ndel = 0;
    rl->next_backends = NULL; /* px->backends now */
    rl->next_nbackends = 0;
}

static void on_done_timer(evutil_socket_t fd, short what, void *arg)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    if (atomic_load(&ops->rl->pending) == 0) {
        evtimer_del(ops->rl->done_timer);
        finish(ops);
    }
}

/* Log the errors of a refused configuration, one "FILE:LINE: ..." each. */
static void log_errors(const struct ct_conf_errors *errs)
{
    for (size_t i = 0; i < errs->n; i++)
        CT_ERR("SIGHUP: %s", errs->msg[i]);
    if (errs->dropped)
        CT_ERR("SIGHUP: (%zu more errors)", errs->dropped);
}

static struct ct_conf *load(struct ct_ops *ops)
{
    struct ct_conf_errors *errs = ct_xcalloc(1, sizeof(*errs));
    struct ct_conf *cf = NULL;
    ct_conf_errors_init(errs);
    size_t nlearned;
    const struct ct_conf_fleet_member *learned = ct_ops_fleet_learned(ops, &nlearned);
    if (ct_conf_build_learned(ops->px->cli, learned, nlearned, &cf, errs) != CT_OK) {
        log_errors(errs);
        cf = NULL;
    }
    free(errs);
    return cf;
}

/* For /stats: the outcome of this SIGHUP. */
static void reload_counted(struct ct_ops *ops, bool ok)
{
    struct ct_stats_reload *r = &ops->reload;
    r->generation = ops->rl->generation;
    r->last_time = ct_time_real();
    r->last_ok = ok;
    if (ok)
        r->ok++;
    else
        r->failed++;
}

void ct_ops_reload(struct ct_ops *ops)
{
    struct ct_proxy *px = ops->px;
    struct ct_reload *rl = reload_get(ops);
    if (atomic_load(&rl->pending) > 0) {
        CT_WARN("SIGHUP: the previous reload is still being applied; ignored");
        return;
    }
    if (rl->done_timer && event_pending(rl->done_timer, EV_TIMEOUT, NULL)) {
        /* every worker switched, its 10 ms timer has not run: finish that
         * reload first (its plan, e.g. next_backends, is still in rl) */
        evtimer_del(rl->done_timer);
        finish(ops);
    }
    CT_INFO("SIGHUP: reloading %s", px->cli && px->cli->conf_file ? px->cli->conf_file
                                                                   : "the embedded default");
    struct ct_conf *cf = px->cli ? load(ops) : NULL;
    if (cf && !backends_same(px->cf, cf)) {
        rl->next_backends = plan_backends(px, cf);
        rl->next_nbackends = cf->nflat;
        if (rl->next_backends == NULL)
            ct_conf_free(&cf);
    }
    if (cf && (!plan_listeners(ops, cf) || !plan_access_log(ops, px->cf, cf) ||
               !plan_admin(ops, px->cf, cf))) {
        plan_abandon(rl);
        ct_conf_free(&cf);
    }
    if (cf == NULL) { /* planned here, never handed over */
        ct_ops_backends_free(&rl->next_backends, rl->next_nbackends);
        rl->next_nbackends = 0;
    }
    if (cf == NULL) {
        CT_ERR("SIGHUP: configuration refused; the running one stays");
        reload_counted(ops, false);
        return;
    }
    warn_restart_only(px->cf, cf);
    ct_ops_log_apply(cf, px->cf, "SIGHUP: ");
    rl->confs = ct_xrealloc(rl->confs, (rl->nconfs + 1) * sizeof(*rl->confs));
    rl->confs[rl->nconfs++] = cf;
    rl->generation++;
    reload_counted(ops, true);
    retire(ops, RL_CONF, (void *)px->cf, rl->generation); /* main.c's: sweep skips it */
    px->cf = cf; /* main thread's view; workers switch on their own */
    ct_ops_purge_routes_drop(ops);
    switch_admin(ops);
    switch_backends(ops, cf);
    rl->next_cf = cf;
    atomic_store(&rl->pending, px->nworkers);
    static const char r = 'r';
    for (unsigned i = 0; i < px->nworkers; i++)
        if (write(px->workers[i]->wake_fd[1], &r, 1) != 1) {
            CT_ERR("SIGHUP: cannot wake w%u: %s", i, strerror(errno));
            atomic_fetch_sub(&rl->pending, 1);
        }
    if (rl->done_timer == NULL)
        rl->done_timer = event_new(px->main_base, -1, EV_PERSIST, on_done_timer, ops);
    event_add(rl->done_timer, &(struct timeval){0, 10000});
}

void ct_reload_free_retired(struct ct_ops *ops)
{
    struct ct_reload *rl = ops->rl;
    if (rl == NULL)
        return;
    CT_CHECK_OBJ(rl, CT_RELOAD_MAGIC);
    if (rl->done_timer)
        event_free(rl->done_timer);
    if (rl->ticket_timer)
        event_free(rl->ticket_timer);
    if (rl->sweep_timer)
        event_free(rl->sweep_timer);
    free(rl->retired); /* what they point at is in the lists below */
    free(rl->quiet);
    plan_abandon(rl); /* a reload cut short by the exit */
    for (size_t i = 0; i < rl->nlcs; i++) {
        ct_tls_ctx_free(&rl->lcs[i]->tls);
        free(rl->lcs[i]);
    }
    free(rl->lcs);
    for (size_t i = 0; i < rl->nold_backends; i++)
        ct_ops_backends_free(&rl->old_backends[i].a, rl->old_backends[i].n);
    free(rl->old_backends);
    /* The last one may be px->cf: nothing reads it after the workers. */
    for (size_t i = 0; i < rl->nconfs; i++)
        ct_conf_free(&rl->confs[i]);
    free(rl->confs);
    free(rl->active);
    rl->magic = 0;
    free(rl);
    ops->rl = NULL;
}

bool ct_reload_tls_stats(const struct ct_ops *ops, uint64_t *full, uint64_t *resumed)
{
    const struct ct_reload *rl = ops->rl;
    bool any = rl && rl->tls_gone;
    if (any) {
        *full += rl->tls_gone_full;
        *resumed += rl->tls_gone_resumed;
    }
    for (size_t i = 0; rl && i < rl->nlcs; i++) {
        if (rl->lcs[i]->tls == NULL)
            continue;
        any = true;
        struct ct_tls_stats ts;
        ct_tls_ctx_stats(rl->lcs[i]->tls, &ts);
        *full += ts.handshakes_full;
        *resumed += ts.handshakes_resumed;
    }
    return any;
}

size_t ct_reload_listeners(const struct ct_ops *ops, const struct ct_listener_conf **out,
                           size_t cap)
{
    const struct ct_reload *rl = ops->rl;
    size_t n = 0;
    if (rl == NULL) { /* no reload yet: main.c's set */
        for (size_t i = 0; i < ops->px->nlisteners && n < cap; i++)
            out[n++] = &ops->px->listeners[i];
        return n;
    }
    for (size_t i = 0; i < rl->nactive && n < cap; i++)
        out[n++] = rl->active[i].lc;
    return n;
}
