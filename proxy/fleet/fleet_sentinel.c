/*
 * proxy/fleet/fleet_sentinel.c: the fleet bus's Sentinel client
 * (fleet_sentinel.h).
 *
 * Two links, each NULL while down: ASK for one question (made per
 * question, closed once it is answered) and SUB, subscribed to
 * +switch-master at the Sentinel that answered. hiredis frees a context
 * after its connect callback failed or its disconnect callback ran: the
 * callbacks only forget the pointer. Their ac->data is the client, not the
 * bus (the bus's AUTH answer does not read it).
 *
 * A Sentinel that stops (SIGSTOP: the link up, nothing answered) while SUB
 * is its only link would tell nothing of a failover, and hiredis 0.14 does
 * not pass a PING's answer back on a subscribed link: so it is asked the
 * question again on ASK every check period (which also catches a switch
 * missed), and one that does not answer in ANSWER_S loses SUB as well
 * (late()): the next Sentinel is asked and subscribed at.
 */
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proxy/fleet/fleet_sentinel.h"

/* A Sentinel that has not answered within ANSWER_S (stopped, or its
 * address drops the SYNs: hiredis 0.14 has no connect timeout) is given up
 * on like an unreachable one, or it would hold every question. The bus's
 * STALL_MIN_S. */
#define ANSWER_S 4.0
/* A master a Sentinel named that ROLE says is not one (a stale Sentinel, a
 * demoted node): the next Sentinel is asked after 1 s, 2 s, 4 s, ... up to
 * this, so a fleet does not hammer a Sentinel that keeps naming it. */
#define ROLE_BACKOFF_MAX_S 30

struct ct_fleet_sentinel {
    unsigned magic;
#define CT_FLEET_SENTINEL_MAGIC 0x5e471e1u
    const struct ct_fleet_sentinel_ops *ops;
    void *arg;
    char *master_name;
    struct sen_addr {
        char *host;
        int port;
    } *sens; /* fleet.redis then fleet.redis_sentinels */
    size_t nsens, idx;
    const char *host; /* the Sentinel asked now: SENS[IDX] */
    int port;
    redisAsyncContext *ask;
    ct_time_t asked; /* mono: when ASK was made (late) */
    /* subscribed to +switch-master at a Sentinel: a failover is followed
     * when it happens, not ~10 s later when the old master is demoted (until
     * then it takes writes that its demotion throws away) */
    redisAsyncContext *sub;
    size_t sub_idx;       /* SUB's Sentinel: SENS[SUB_IDX] */
    ct_time_t next_check; /* mono: when SUB's Sentinel is asked again (check) */
    double check_s;       /* the check's period (the tick's) */
    unsigned role_misses; /* ROLE mismatches in a row: the backoff's exponent */
    ct_time_t after;      /* mono: no question before (the backoff) */
    bool closing;
    struct ct_fleet_sentinel_counts n;
};

static struct ct_fleet_sentinel *sentinel_of(const redisAsyncContext *ac)
{
    struct ct_fleet_sentinel *s = ac->data;
    CT_CHECK_OBJ(s, CT_FLEET_SENTINEL_MAGIC);
    return s;
}

static redisAsyncContext *link_new(struct ct_fleet_sentinel *s, redisConnectCallback *on_conn,
                                   redisDisconnectCallback *on_disc, const char *role)
{
    redisAsyncContext *ac = s->ops->link(s->arg, s->host, s->port, role);
    if (!ac)
        return NULL;
    ac->data = s;
    redisAsyncSetConnectCallback(ac, on_conn);
    redisAsyncSetDisconnectCallback(ac, on_disc);
    return ac;
}

static void ask(struct ct_fleet_sentinel *s);

/* The Sentinel asked now failed (unreachable, or it knows no master): the
 * next one in the list is asked, at once unless the round is over (then
 * on the next tick, a second later), so a dead first address costs one
 * connect, not a second per attempt. */
static void next_sentinel(struct ct_fleet_sentinel *s, bool now)
{
    if (s->nsens < 2)
        return;
    s->idx = (s->idx + 1) % s->nsens;
    s->host = s->sens[s->idx].host;
    s->port = s->sens[s->idx].port;
    if (now && s->idx != 0)
        ask(s);
}

static void on_master(redisAsyncContext *ac, void *r, void *priv)
{
    (void)priv;
    struct ct_fleet_sentinel *s = sentinel_of(ac);
    redisReply *rep = r;
    if (s->closing || (!rep && ac != s->ask))
        return; /* (given up on: late() moved on) */
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[0]->type == REDIS_REPLY_STRING && rep->element[1]->type == REDIS_REPLY_STRING) {
        const char *host = rep->element[0]->str;
        int port = atoi(rep->element[1]->str);
        /* asked with the links up (the subscribed Sentinel was lost): the
         * bus moves them on a failover it was not told of, as on a
         * +switch-master */
        if (s->ops->master(s->arg, host, port, false))
            CT_INFO("fleet: Sentinel %s:%d names %s:%d the master of \"%s\"", s->host, s->port,
                    host, port, s->master_name);
    } else {
        CT_WARN("fleet: Sentinel %s:%d knows no master \"%s\"%s%s", s->host, s->port,
                s->master_name, rep && rep->type == REDIS_REPLY_ERROR ? ": " : "",
                rep && rep->type == REDIS_REPLY_ERROR ? rep->str : "");
        next_sentinel(s, false); /* this one is still connected: asked on the next tick */
    }
    redisAsyncDisconnect(ac);
}

static void ask_connect(const redisAsyncContext *ac, int status)
{
    struct ct_fleet_sentinel *s = sentinel_of(ac);
    if (status != REDIS_OK) {
        s->ask = NULL;
        s->ops->error(s->arg);
        CT_WARN("fleet: Sentinel %s:%d unreachable (%s)", s->host, s->port,
                ac->errstr[0] ? ac->errstr : "connect failed");
        next_sentinel(s, true);
        return;
    }
    redisAsyncCommand((redisAsyncContext *)ac, on_master, NULL,
                      "SENTINEL get-master-addr-by-name %s", s->master_name);
}

static void ask_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    sentinel_of(ac)->ask = NULL;
}

static void ask(struct ct_fleet_sentinel *s)
{
    if (s->ask)
        return; /* a question in flight */
    s->ask = link_new(s, ask_connect, ask_disconnect, "sentinel");
    s->asked = ct_time_mono();
    s->next_check = s->asked + s->check_s; /* any question checks the Sentinel */
    if (!s->ask)
        next_sentinel(s, true); /* as ask_connect() does */
}

/* A "+switch-master" message: "NAME OLD_IP OLD_PORT NEW_IP NEW_PORT". */
static void on_switch(redisAsyncContext *ac, void *r, void *priv)
{
    (void)priv;
    struct ct_fleet_sentinel *s = sentinel_of(ac);
    redisReply *rep = r;
    char name[128], host[64];
    int port;
    if (s->closing || !rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
        rep->element[2]->type != REDIS_REPLY_STRING ||
        sscanf(rep->element[2]->str, "%127s %*s %*s %63s %d", name, host, &port) != 3 ||
        strcmp(name, s->master_name) != 0)
        return; /* the subscription's confirmation, or another master's */
    CT_INFO("fleet: Sentinel %s:%d: +switch-master of \"%s\" to %s:%d", ac->c.tcp.host,
            ac->c.tcp.port, name, host, port);
    (void)s->ops->master(s->arg, host, port, true); /* the tick connects to the new master */
}

/* The subscribed Sentinel lost (or never reached): a failover may have
 * ended meanwhile, untold, so the next Sentinel is asked for the master at
 * once, and the tick subscribes there (the one asked now); retrying a dead
 * one alone would miss every failover until the master is lost. */
static void sub_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    struct ct_fleet_sentinel *s = sentinel_of(ac);
    if (s->closing || ac != s->sub)
        return; /* (or dropped: drop_sub) */
    s->sub = NULL;
    s->ops->error(s->arg);
    CT_WARN("fleet: Sentinel %s:%d (subscribed to +switch-master) lost (%s): asking the next "
            "one for the master", ac->c.tcp.host, ac->c.tcp.port,
            ac->errstr[0] ? ac->errstr : "closed");
    next_sentinel(s, false);
    ask(s);
}

static void sub_connect(const redisAsyncContext *ac, int status)
{
    if (status != REDIS_OK)
        sub_disconnect(ac, status);
}

/* Subscribe at the Sentinel asked now; a failed one is tried again on the
 * next tick (then at the Sentinel asked by then). */
static void subscribe_switch(struct ct_fleet_sentinel *s)
{
    if (s->sub)
        return;
    s->sub = link_new(s, sub_connect, sub_disconnect, "sentinel-sub");
    s->sub_idx = s->idx;
    if (s->sub)
        redisAsyncCommand(s->sub, on_switch, NULL, "SUBSCRIBE +switch-master");
}

/* Close SUB without its lost path: freed, since a disconnect would wait
 * for answers a stopped Sentinel does not send. */
static void drop_sub(struct ct_fleet_sentinel *s)
{
    redisAsyncContext *ac = s->sub;
    s->sub = NULL;
    if (ac)
        redisAsyncFree(ac);
}

/* A Sentinel late to answer (ANSWER_S) is given up on like an unreachable
 * one, and the next asked at once. */
static void late(struct ct_fleet_sentinel *s, ct_time_t now)
{
    if (!s->ask || now - s->asked < ANSWER_S)
        return;
    s->ops->error(s->arg);
    bool subscribed = s->sub && s->sub_idx == s->idx;
    CT_WARN("fleet: Sentinel %s:%d%s did not answer in %.0f s: asking the next one%s", s->host,
            s->port, subscribed ? " (subscribed to +switch-master)" : "", ANSWER_S,
            subscribed ? " and subscribing there" : "");
    redisAsyncContext *ac = s->ask;
    s->ask = NULL;
    redisAsyncFree(ac);
    if (subscribed) {
        s->n.stalls++;
        drop_sub(s); /* the tick subscribes at the next one once it answered */
    }
    next_sentinel(s, true);
}

/* With a master: SUB's Sentinel asked again CHECK_S after the last
 * question (the file's comment). A SUB left at a Sentinel other than the
 * one asked now (the master was lost meanwhile and another answered) moves
 * to that one. */
static void check(struct ct_fleet_sentinel *s, ct_time_t now)
{
    if (!s->sub || !(s->sub->c.flags & REDIS_CONNECTED) || s->ask || now < s->next_check)
        return;
    if (s->sub_idx != s->idx) {
        drop_sub(s);
        subscribe_switch(s);
        return;
    }
    ask(s);
}

void ct_fleet_sentinel_tick(struct ct_fleet_sentinel *s, ct_time_t now, bool have_master,
                            double check_s)
{
    CT_CHECK_OBJ(s, CT_FLEET_SENTINEL_MAGIC);
    s->check_s = check_s;
    late(s, now);
    if (!have_master) {
        if (now >= s->after) /* past a ROLE mismatch's backoff */
            ask(s);          /* the bus connects once it answered: the next tick */
        return;
    }
    subscribe_switch(s); /* at the Sentinel that answered */
    check(s, now);
}

/* ROLE's answer: the master used only if it says "master" (the Sentinel
 * client spec: a stale Sentinel or a demoted node must not get the fleet's
 * writes). A refused ROLE (an ACL without +role) cannot tell: said, and the
 * master used unverified. */
bool ct_fleet_sentinel_role(struct ct_fleet_sentinel *s, const char *host, int port,
                            const struct redisReply *rep)
{
    CT_CHECK_OBJ(s, CT_FLEET_SENTINEL_MAGIC);
    bool is_array = rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
                    rep->element[0]->type == REDIS_REPLY_STRING;
    if (is_array && strcmp(rep->element[0]->str, "master") == 0) {
        s->role_misses = 0;
        return true;
    }
    if (!is_array) {
        CT_WARN("fleet: Redis %s:%d refused ROLE (%s): using it as the master unverified "
                "(an ACL user needs +role)", host, port,
                rep->type == REDIS_REPLY_ERROR ? rep->str : "no role in the answer");
        return true;
    }
    unsigned shift = s->role_misses < 5 ? s->role_misses : 5;
    unsigned wait_s = 1u << shift;
    if (wait_s > ROLE_BACKOFF_MAX_S)
        wait_s = ROLE_BACKOFF_MAX_S;
    s->role_misses++;
    s->n.role_mismatch++;
    CT_WARN("fleet: Redis %s:%d, named the master of \"%s\" by a Sentinel, says it is a "
            "%s: not used; asking the next Sentinel in %u s", host, port, s->master_name,
            rep->element[0]->str, wait_s);
    s->after = ct_time_mono() + wait_s;
    next_sentinel(s, false);
    return false;
}

struct ct_fleet_sentinel *ct_fleet_sentinel_new(const struct ct_conf_fleet *fl,
                                                const struct ct_fleet_sentinel_ops *ops,
                                                void *arg)
{
    struct ct_fleet_sentinel *s = ct_xcalloc(1, sizeof(*s));
    s->magic = CT_FLEET_SENTINEL_MAGIC;
    s->ops = ops;
    s->arg = arg;
    s->master_name = ct_xstrdup(fl->redis_sentinel);
    size_t n = fl->nsentinels ? fl->nsentinels : 1;
    s->sens = ct_xcalloc(n, sizeof(*s->sens));
    for (size_t i = 0; i < n; i++) {
        const struct ct_conf_addr *a = fl->nsentinels ? &fl->sentinels[i] : &fl->redis;
        s->sens[i].host = ct_xstrdup(a->host);
        s->sens[i].port = a->port;
    }
    s->nsens = n;
    s->host = s->sens[0].host;
    s->port = s->sens[0].port;
    return s;
}

void ct_fleet_sentinel_counts(const struct ct_fleet_sentinel *s,
                              struct ct_fleet_sentinel_counts *out)
{
    CT_CHECK_OBJ(s, CT_FLEET_SENTINEL_MAGIC);
    *out = s->n;
}

void ct_fleet_sentinel_free(struct ct_fleet_sentinel **sp)
{
    struct ct_fleet_sentinel *s = *sp;
    if (!s)
        return;
    CT_CHECK_OBJ(s, CT_FLEET_SENTINEL_MAGIC);
    s->closing = true; /* the callbacks redisAsyncFree runs (NULL replies) do nothing */
    if (s->ask)
        redisAsyncFree(s->ask);
    if (s->sub)
        redisAsyncFree(s->sub);
    free(s->master_name);
    for (size_t i = 0; i < s->nsens; i++)
        free(s->sens[i].host);
    free(s->sens);
    s->magic = 0;
    free(s);
    *sp = NULL;
}
