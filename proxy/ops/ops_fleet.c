/*
 * proxy/ops/ops_fleet.c: the fleet's fan-out on the admin side (issue 17).
 * An admin purge or ban is applied here first (its answer says what it did
 * here), then sent to the other nodes through the bus (Redis, or HTTP to
 * their admin listeners while Redis is down or without fleet.redis); what
 * the bus brings from the others goes through the same ct_ops_purge /
 * ct_ops_ban. Main thread.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "http/http.h"
#include "proxy/ctx.h"
#include "proxy/fleet/fleet.h"
#include "proxy/fleet/fleet_bus.h"
#include "proxy/fleet/fleet_fanout.h"
#include "proxy/ops/ops_int.h"

static const struct ct_conf *cf_now(void *arg)
{
    struct ct_ops *ops = arg;
    return ops->px->cf;
}

static void apply(void *arg, const char *kind, struct ct_str query, struct ct_str expr)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    struct ct_stats_out out = {0};
    unsigned status = strcmp(kind, "ban") == 0 ? ct_ops_ban(ops, query, expr, &out)
                                               : ct_ops_purge(ops, query, &out);
    CT_INFO("fleet: %s from another node (%.*s): %u", kind, (int)query.len, query.p ? query.p : "",
            status);
    ct_stats_out_free(&out);
}

/* ---- learned members (fleet.learn_members) ----------------------------------
 *
 * The bus reports the members registered in Redis that the file does not
 * list whenever they differ from the configuration in force; the
 * configuration is then rebuilt with them through the reload (the SIGHUP
 * path), so their peer groups, pools and the hop check are made by the code
 * that makes the file's, and a SIGHUP of the file keeps them (it merges the
 * same list). At most one such reload a second: joins and leaves that come
 * within it are coalesced into the next. A reload refused (a peer address
 * that does not resolve) or skipped (the previous one still being applied)
 * leaves the difference, which the next membership read reports again. */
#define LEARN_GAP 1.0 /* seconds between two reloads for learned members */

static void learned_free(struct ct_ops *ops)
{
    for (size_t i = 0; i < ops->nlearned; i++) {
        free(ops->learned[i].name);
        free(ops->learned[i].addr.host);
        free(ops->learned[i].admin.host);
    }
    CT_FREE(&ops->learned);
    ops->nlearned = 0;
}

const struct ct_conf_fleet_member *ct_ops_fleet_learned(const struct ct_ops *ops, size_t *n)
{
    *n = ops->nlearned;
    return ops->learned;
}

static void on_learn_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    ops->learn_last = ct_time_mono();
    CT_INFO("fleet: membership changed in Redis: reloading with %zu learned member%s",
            ops->nlearned, ops->nlearned == 1 ? "" : "s");
    ct_ops_reload(ops);
}

static void on_learned(void *arg, const struct ct_conf_fleet_member *m, size_t n)
{
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    learned_free(ops);
    ops->learned = ct_xcalloc(n ? n : 1, sizeof(*ops->learned));
    for (size_t i = 0; i < n; i++) {
        struct ct_conf_fleet_member *l = &ops->learned[i];
        *l = m[i];
        l->name = ct_xstrdup(m[i].name);
        l->addr.host = ct_xstrdup(m[i].addr.host);
        l->admin.host = m[i].admin.host ? ct_xstrdup(m[i].admin.host) : NULL;
    }
    ops->nlearned = n;
    if (!ops->learn_timer)
        ops->learn_timer = evtimer_new(ops->px->main_base, on_learn_timer, ops);
    if (evtimer_pending(ops->learn_timer, NULL))
        return; /* coalesced: that reload takes this list */
    double wait = ops->learn_last + LEARN_GAP - ct_time_mono();
    if (wait < 0)
        wait = 0;
    struct timeval tv = {(time_t)wait, (suseconds_t)((wait - (double)(time_t)wait) * 1e6)};
    evtimer_add(ops->learn_timer, &tv);
}

/* Clients' PURGEs (the workers' outbox, fleet.h): the worker that queued
 * one wakes us through an eventfd; we publish them as the admin's purges
 * are (already applied where the client sent them). */
static void outbox_wake(void *arg)
{
    struct ct_ops *ops = arg;
    uint64_t one = 1;
    ssize_t n = write(ops->outbox_fd, &one, sizeof(one)); /* full counter: woken already */
    (void)n;
}

static void on_outbox(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct ct_ops *ops = arg;
    CT_CHECK_OBJ(ops, CT_OPS_MAGIC);
    uint64_t n;
    ssize_t got = read(fd, &n, sizeof(n));
    (void)got;
    char *q;
    while ((q = ct_fleet_outbox_pop(ops->px->fleet))) {
        if (ops->bus)
            ct_fleet_bus_publish(ops->bus, "purge", ct_str_c(q), CT_STR_NULL);
        free(q);
    }
}

void ct_ops_fleet_start(struct ct_ops *ops)
{
    struct ct_proxy *px = ops->px;
    if (!ops->bus && px->fleet)
        ops->bus = ct_fleet_bus_new(px->main_base, px->cf, px->fleet, cf_now, apply, on_learned,
                                    ops);
    if (!ops->bus || ops->outbox_ev)
        return;
    ops->outbox_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ops->outbox_fd < 0) {
        CT_WARN("fleet: eventfd: %s: clients' PURGEs reach this node only", strerror(errno));
        return;
    }
    ops->outbox_ev = event_new(px->main_base, ops->outbox_fd, EV_READ | EV_PERSIST, on_outbox, ops);
    event_add(ops->outbox_ev, NULL);
    ct_fleet_outbox_open(px->fleet, outbox_wake, ops);
}

void ct_ops_fleet_stop(struct ct_ops *ops)
{
    if (ops->outbox_ev) {
        ct_fleet_outbox_close(ops->px->fleet); /* no worker signals past this */
        event_free(ops->outbox_ev);
        ops->outbox_ev = NULL;
        close(ops->outbox_fd);
    }
    ct_fleet_bus_free(&ops->bus);
    if (ops->learn_timer) {
        event_free(ops->learn_timer);
        ops->learn_timer = NULL;
    }
    learned_free(ops);
}

/* Did a member send this (trusted hop header), so it is not sent on? */
static bool from_member(struct ct_ops *ops, int fd, const struct ct_http_msg *req)
{
    const struct ct_conf_fleet *fl = &ops->px->cf->fleet;
    const struct ct_http_field *f = ct_http_msg_find_name(req, ct_str_c(fl->hop_header), NULL);
    if (!f)
        return false;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    bool have = fd >= 0 && getpeername(fd, (struct sockaddr *)&ss, &len) == 0;
    return ct_fleet_hop_trusted(fl, have ? (struct sockaddr *)&ss : NULL, f->value);
}

void ct_ops_fleet_fanout(struct ct_ops *ops, int fd, const struct ct_http_msg *req,
                         const char *kind, struct ct_str query, struct ct_str expr,
                         unsigned status)
{
    /* 404: nothing was stored here, the others may have it */
    if (!ops->bus || (status != 200 && status != 404) || from_member(ops, fd, req))
        return;
    ct_fleet_bus_publish(ops->bus, kind, query, expr);
}

void ct_ops_fleet_counts(struct ct_ops *ops, struct ct_stats *sum)
{
    if (ops->px->fleet)
        ct_stats_add(&sum->fleet_members_down[0],
                     ct_fleet_members_down(ops->px->fleet, ops->px->cf, ct_time_mono()));
    if (!ops->bus)
        return;
    struct ct_fleet_bus_counts n;
    ct_fleet_bus_counts(ops->bus, &n);
    ct_stats_add(&sum->fleet_purges_published[0], n.published);
    ct_stats_add(&sum->fleet_purges_applied[0], n.applied);
    ct_stats_add(&sum->fleet_http_fanout[0], n.http_sent);
    ct_stats_add(&sum->fleet_fanout_unsent[0], n.unsent);
    ct_stats_add(&sum->fleet_redis_errors[0], n.redis_errors);
    ct_stats_add(&sum->fleet_redis_missed[0], n.missed);
    ct_stats_add(&sum->fleet_redis_up[0], n.redis_up);
    ct_stats_add(&sum->fleet_members_live[0], n.live);
    ct_stats_add(&sum->fleet_redis_redirects[0], n.redirects);
    ct_stats_add(&sum->fleet_redis_asks[0], n.asks);
    ct_stats_add(&sum->fleet_redis_slow_publishes[0], n.slow);
    ct_stats_add(&sum->fleet_redis_skipped[0], n.skipped);
    ct_stats_add(&sum->fleet_redis_stalls[0], n.stalls);
    ct_stats_add(&sum->fleet_redis_role_mismatch[0], n.role_mismatch);
    ct_stats_add(&sum->fleet_redis_sentinel_stalls[0], n.sentinel_stalls);
    struct ct_fleet_fanout_counts fo;
    ct_fleet_bus_fanout_counts(ops->bus, &fo);
    ct_stats_add(&sum->fleet_fanout_waiting[0], fo.waiting);
    ct_stats_add(&sum->fleet_fanout_retries[0], fo.retries);
    _Static_assert(CT_STATS_NL_FANOUT_DROP == CT_FLEET_FANOUT_DROP__COUNT, "same reasons");
    for (size_t i = 0; i < CT_FLEET_FANOUT_DROP__COUNT; i++)
        ct_stats_add(&sum->fleet_fanout_dropped[i], fo.dropped[i]);
}
