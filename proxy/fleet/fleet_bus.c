/*
 * proxy/fleet/fleet_bus.c: purge fan-out and membership through Redis, HTTP
 * fan-out while Redis is down (fleet_bus.h).
 *
 * Two connections: CMD for commands that answer at once (XADD, ZADD, the
 * membership read) and BLK for the XREAD BLOCK loop, so a blocked read never
 * holds up a publish. Each is NULL while down; one timer reconnects both
 * every second. While a Redis Cluster migrates the fleet's slot, an ASKed
 * command goes once more on one of two links to the importing node (ASK).
 * With fleet.redis_sentinel, which master they go to is the Sentinel
 * client's answer (fleet_sentinel.c, its links made here). hiredis frees a context after its connect callback failed or its
 * disconnect callback ran: the callbacks only forget the pointer.
 */
#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "common/log.h"
#include "proxy/balance/balance.h"
#include "proxy/fleet/fleet.h"
#include "proxy/fleet/fleet_bus.h"
#include "proxy/fleet/fleet_fanout.h"
#include "proxy/fleet/fleet_sentinel.h"

#define STREAM_MAXLEN "10000" /* entries kept for the catch-up (approximate trim) */
#define BLOCK_MS "2000"       /* one XREAD BLOCK: its answer proves the link alive */
#define ID_MAX 64
/* A stalled Redis (the link up, no answers: a SIGSTOP, a fork's copy, a
 * swap storm) errors nothing, and each purge would wait for it with its copy
 * held: one that has no answer within XADD_WAIT_S goes over HTTP as well,
 * and past XADD_INFLIGHT_MAX unanswered ones a purge goes over HTTP only. */
#define XADD_WAIT_S 2.0
#define XADD_INFLIGHT_MAX 1024
/* The registration and the membership read are sent once per register_ttl
 * / 3, one of each kind in flight at most: a stall queues none beyond it in
 * hiredis's output buffer. One left unanswered for register_ttl (three
 * periods: this node's entry has expired in the others' view by then), or a
 * blocked read for that past its BLOCK_MS, is a stalled Redis: both links
 * are dropped and made again as after a lost one (Sentinel asked again).
 * STALL_MIN_S keeps a short register_ttl from taking a busy Redis for one. */
#define STALL_MIN_S 4.0

struct ct_fleet_bus {
    unsigned magic;
#define CT_FLEET_BUS_MAGIC 0xb05f1ee7u
    struct event_base *base;
    struct ct_fleet *view;
    const struct ct_conf *(*cf_now)(void *arg);
    ct_fleet_bus_apply_cb *apply;
    void *arg;
    /* copied from the configuration at start */
    char *host;
    int port;
    char *self;
    char *reg; /* this node's entry in the members set: "NAME PEER ADMIN" (entry_parse) */
    ct_fleet_bus_learn_cb *learn;
    char *k_stream, *k_members; /* PREFIX:purges, PREFIX:members */
    uint64_t ttl_ms;
    char *password; /* fleet.redis_password; NULL: no AUTH */
    char *username; /* fleet.redis_username; NULL: AUTH PASSWORD alone */
    char *sen_password; /* fleet.redis_sentinel_password; NULL: no AUTH to Sentinels */
    struct ct_fleet_fanout *fanout; /* HTTP to the members' admin listeners */
    /* state */
    redisAsyncContext *cmd, *blk;
    bool cmd_up, blk_up, reading, closing;
    bool cmd_noauth, blk_noauth; /* that link's AUTH was refused: connected, but every command is */
    /* unanswered: the registration's commands (ZADD, ZREMRANGEBYSCORE) or
     * a new link's ROLE, and the membership read, one of each kind at most
     * (STALL_MIN_S) */
    unsigned reg_wait;
    bool members_wait;
    ct_time_t reg_sent, read_sent; /* mono: the registration's, the XREAD's */
    const char *drop_why; /* the reason on_disconnect gives a link we dropped */
    CT_LIST_HEAD(pending) inflight; /* XADDs not answered yet, oldest first */
    unsigned ninflight;
    /* the XREAD in flight (READING): a read of a link left behind (an ASK
     * target's, as a MOVED ends a migration) may still answer; only this
     * one's answer goes on reading */
    uintptr_t read_gen;
    bool redirecting; /* closing both connections after a MOVED */
    /* Redis Cluster ASK: the node importing the fleet's slot, and a link
     * to it for CMD's commands and one for BLK's (a blocked read there must
     * not hold up a publish either); NULL until an ASK needs one */
    char *ask_host;
    int ask_port;
    redisAsyncContext *ask[2]; /* [0]: CMD's, [1]: BLK's */
    /* Sentinel (fleet.redis_sentinel; NULL: none): host:port above is the
     * master it named, asked again whenever the master is lost */
    struct ct_fleet_sentinel *sen;
    bool have_master;
    /* the command link's ROLE said "master" (always, without Sentinel):
     * until then nothing registers, publishes or reads the stream there */
    bool role_ok;
    char last_id[ID_MAX]; /* the last stream id read; "" = not known yet */
    struct event *tick;   /* reconnect, register, membership */
    ct_time_t next_register;
    /* after a connect (mono): until then a member missing from the set
     * but live in our last view stays live (see on_members) */
    ct_time_t settle_until;
    bool live[CT_BALANCE_MAX]; /* that view, by member index (the view's bound);
                                  at start every configured member, as the view */
    struct ct_fleet_bus_counts n;
};

static struct ct_fleet_bus *bus_of(const redisAsyncContext *ac)
{
    struct ct_fleet_bus *b = ac->data;
    CT_CHECK_OBJ(b, CT_FLEET_BUS_MAGIC);
    return b;
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = ct_xmalloc(n);
    snprintf(s, n, "%s:%s", a, b);
    return s;
}

static void up_gauge(struct ct_fleet_bus *b)
{
    b->n.redis_up = b->cmd_up && b->blk_up && !b->cmd_noauth && !b->blk_noauth;
}

/* ---- Redis Cluster: MOVED and ASK ------------------------------------------------
 *
 * Both keys carry the hash tag {PREFIX}, so they live in one slot and one
 * master serves everything this node asks. A reply "MOVED slot ip:port"
 * (the configured address is any node of the cluster, or the slot moved)
 * points both connections at that master: they are closed and the tick
 * reconnects there. "ASK slot ip:port" (the slot is being migrated and our
 * keys are on the importing node already) holds for that one command only
 * (Cluster spec, "ASK redirection"): it is sent once more, after ASKING, to
 * the importing node, and CMD and BLK stay where they are, so the next
 * command is asked of the master again; the migration's end is its MOVED.
 * So each keyed command is kept (struct sent) until its answer. */

struct sent {
    redisCallbackFn *fn;
    void *priv;
    char *cmd; /* as formatted, to send again */
    size_t len;
    bool asked; /* sent to the ASK target already: its answer is final */
};

static redisAsyncContext *link_new(struct ct_fleet_bus *b, const char *host, int port,
                                   redisConnectCallback *on_conn,
                                   redisDisconnectCallback *on_disc, const char *role);

static bool is_redirect(const redisReply *rep, const char *kind)
{
    return rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, kind, strlen(kind)) == 0;
}

/* The "ip:port" a MOVED or ASK error ends with; false when malformed. */
static bool redirect_addr(const redisReply *rep, char host[64], int *port)
{
    const char *at = strrchr(rep->str, ' ');
    const char *colon = at ? strrchr(at, ':') : NULL;
    if (!colon || colon - at - 1 <= 0 || colon - at - 1 >= 64)
        return false;
    snprintf(host, 64, "%.*s", (int)(colon - at - 1), at + 1);
    *port = atoi(colon + 1);
    return true;
}

static void drop_ask(struct ct_fleet_bus *b)
{
    for (size_t i = 0; i < CT_ARRAY_LEN(b->ask); i++)
        if (b->ask[i])
            redisAsyncDisconnect(b->ask[i]); /* once its answers are in: ask_disconnect */
}

static void drop_links(struct ct_fleet_bus *b)
{
    b->redirecting = b->cmd || b->blk; /* the disconnects are not errors */
    if (b->cmd)
        redisAsyncDisconnect(b->cmd);
    if (b->blk)
        redisAsyncDisconnect(b->blk);
    drop_ask(b);
}

static void forget_ask(const redisAsyncContext *ac)
{
    struct ct_fleet_bus *b = bus_of(ac);
    for (size_t i = 0; i < CT_ARRAY_LEN(b->ask); i++)
        if (b->ask[i] == ac)
            b->ask[i] = NULL;
}

static void ask_connect(const redisAsyncContext *ac, int status)
{
    if (status == REDIS_OK)
        return;
    bus_of(ac)->n.redis_errors++;
    CT_WARN("fleet: Redis %s:%d (asked by an ASK) unreachable (%s)", ac->c.tcp.host,
            ac->c.tcp.port, ac->errstr[0] ? ac->errstr : "connect failed");
    forget_ask(ac); /* its commands were answered NULL: the tick sends them again */
}

static void ask_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    forget_ask(ac);
}

static void on_sent(redisAsyncContext *ac, void *r, void *priv);

/* S, sent on CMD or BLK (AC), was answered ASK (REP): send it once to the
 * node importing the slot, on the link for AC's kind. False when it cannot
 * be (the ASK then stands as the answer; the tick's next round asks again). */
static bool ask_again(struct ct_fleet_bus *b, redisAsyncContext *ac, struct sent *s,
                      const redisReply *rep)
{
    char host[64];
    int port;
    if (!redirect_addr(rep, host, &port))
        return false;
    if (!b->ask_host || strcmp(b->ask_host, host) != 0 || b->ask_port != port) {
        CT_INFO("fleet: Redis %s:%d asks %s:%d for the fleet's slot (%s): a slot migration; "
                "each such command goes there once", b->host, b->port, host, port, rep->str);
        drop_ask(b); /* the links to a former target: new ones once they are closed */
        free(b->ask_host);
        b->ask_host = ct_xstrdup(host);
        b->ask_port = port;
    }
    size_t i = ac == b->blk;
    if (!b->ask[i])
        b->ask[i] = link_new(b, host, port, ask_connect, ask_disconnect,
                             i ? "ask-stream" : "ask-cmd");
    redisAsyncContext *to = b->ask[i];
    if (!to || (to->c.flags & REDIS_DISCONNECTING) ||
        redisAsyncCommand(to, NULL, NULL, "ASKING") != REDIS_OK ||
        redisAsyncFormattedCommand(to, on_sent, s, s->cmd, s->len) != REDIS_OK)
        return false;
    s->asked = true;
    b->n.asks++;
    return true;
}

static void on_sent(redisAsyncContext *ac, void *r, void *priv)
{
    struct sent *s = priv;
    struct ct_fleet_bus *b = bus_of(ac);
    if (!s->asked && !b->closing && is_redirect(r, "ASK ") && ask_again(b, ac, s, r))
        return;
    s->fn(ac, r, s->priv);
    redisFreeCommand(s->cmd);
    free(s);
}

/* Send CMD (LEN bytes from redisFormatCommand*, taken; LEN < 0: it failed)
 * on AC, FN getting its answer, the one after an ASK if it got one. */
static int send_formatted(redisAsyncContext *ac, redisCallbackFn *fn, void *priv, char *cmd,
                          int len)
{
    if (len < 0)
        return REDIS_ERR;
    struct sent *s = ct_xmalloc(sizeof(*s));
    *s = (struct sent){.fn = fn, .priv = priv, .cmd = cmd, .len = (size_t)len};
    if (redisAsyncFormattedCommand(ac, on_sent, s, cmd, s->len) == REDIS_OK)
        return REDIS_OK;
    redisFreeCommand(cmd);
    free(s);
    return REDIS_ERR;
}

/* A command on a key of the slot, sent on AC (CMD or BLK) with send_formatted. */
static int send_cmd(redisAsyncContext *ac, redisCallbackFn *fn, void *priv, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    return send_formatted(ac, fn, priv, cmd, len);
}

static bool redirected(struct ct_fleet_bus *b, const redisReply *rep)
{
    /* Sentinel: the master we talk to was demoted (a failover): ask again */
    if (b->sen && (is_redirect(rep, "READONLY") || is_redirect(rep, "UNBLOCKED"))) {
        CT_INFO("fleet: Redis %s:%d is no longer the master (%s): asking Sentinel", b->host,
                b->port, rep->str);
        b->have_master = false;
        b->n.redirects++;
        drop_links(b);
        return true;
    }
    if (is_redirect(rep, "ASK "))
        return true; /* asked once already (on_sent) or it could not be: the tick retries */
    if (!is_redirect(rep, "MOVED "))
        return false;
    char host[64];
    int port;
    if (!redirect_addr(rep, host, &port))
        return true; /* malformed: ignore it, the tick retries the command */
    if (strcmp(host, b->host) == 0 && port == b->port)
        return true;
    CT_INFO("fleet: Redis %s:%d redirects to %s:%d (%s)", b->host, b->port, host, port, rep->str);
    free(b->host);
    b->host = ct_xstrdup(host);
    b->port = port;
    b->n.redirects++;
    drop_links(b);
    return true;
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv)
{
    (void)priv;
    struct ct_fleet_bus *b = bus_of(ac);
    if (!b->closing)
        (void)redirected(b, r);
}

/* ---- membership ------------------------------------------------------------- */

/* An entry of the set: "NAME PEER_ADDR ADMIN_ADDR" (ADMIN "-": none), or a
 * bare NAME (a node of an older release). Is it member NAME's? */
static bool entry_is(const redisReply *e, const char *name)
{
    size_t n = strlen(name);
    return e->type == REDIS_REPLY_STRING && e->len >= n && memcmp(e->str, name, n) == 0 &&
           (e->len == n || e->str[n] == ' ');
}

/* Entry E as a member to learn (its strings allocated: member_clear), or
 * false when it carries no addresses or they do not parse. */
static bool entry_parse(const redisReply *e, struct ct_conf_fleet_member *m)
{
    memset(m, 0, sizeof(*m));
    char name[128], addr[128], admin[128];
    if (e->type != REDIS_REPLY_STRING || e->len >= 384 ||
        sscanf(e->str, "%127s %127s %127s", name, addr, admin) != 3)
        return false;
    if (ct_conf_parse_addr(addr, &m->addr) != CT_OK ||
        (strcmp(admin, "-") != 0 && ct_conf_parse_addr(admin, &m->admin) != CT_OK)) {
        free(m->addr.host);
        free(m->admin.host);
        return false;
    }
    m->name = ct_xstrdup(name);
    m->learned = true;
    return true;
}

static void member_clear(struct ct_conf_fleet_member *m)
{
    free(m->name);
    free(m->addr.host);
    free(m->admin.host);
}

static bool addr_eq(const struct ct_conf_addr *a, const struct ct_conf_addr *b)
{
    return a->port == b->port && strcmp(a->host ? a->host : "", b->host ? b->host : "") == 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct ct_conf_fleet_member *)a)->name,
                  ((const struct ct_conf_fleet_member *)b)->name);
}

/* fleet.learn_members: the members to learn are the registered ones the file
 * does not list (ct_conf_fleet_learnable), sorted by name, one per name and
 * per address (as ct_conf_fleet_add_learned keeps them), plus, while
 * SETTLING, the learned members in force that the set lacks now (kept for
 * the same reason as the file's, see on_members). When that differs from
 * the learned members of CF, the owner of the bus rebuilds the
 * configuration with them (a reload, rate-limited there); until it has,
 * every read finds the difference again, so a reload refused or skipped is
 * retried. */
static void learn_members(struct ct_fleet_bus *b, const struct ct_conf *cf, const redisReply *rep,
                  bool settling)
{
    const struct ct_conf_fleet *fl = &cf->fleet;
    if (!b->learn || !fl->learn_members)
        return;
    struct ct_conf_fleet_member *v = ct_xcalloc(rep->elements + fl->nmembers + 1, sizeof(*v));
    size_t n = 0;
    for (size_t k = 0; k < rep->elements; k++)
        if (entry_parse(rep->element[k], &v[n])) {
            if (ct_conf_fleet_learnable(fl, &v[n]))
                n++;
            else
                member_clear(&v[n]);
        }
    for (size_t i = 0; settling && i < fl->nmembers; i++) {
        const struct ct_conf_fleet_member *m = &fl->members[i];
        bool have = false;
        for (size_t k = 0; k < n && !have; k++)
            have = strcmp(v[k].name, m->name) == 0;
        if (m->learned && !have) {
            v[n] = (struct ct_conf_fleet_member){.name = ct_xstrdup(m->name), .learned = true};
            v[n].addr = m->addr;
            v[n].addr.host = ct_xstrdup(m->addr.host);
            v[n].admin = m->admin;
            v[n].admin.host = m->admin.host ? ct_xstrdup(m->admin.host) : NULL;
            n++;
        }
    }
    qsort(v, n, sizeof(*v), by_name);
    size_t kept = 0;
    for (size_t k = 0; k < n; k++) {
        bool dup = false;
        for (size_t j = 0; j < kept && !dup; j++)
            dup = strcmp(v[j].name, v[k].name) == 0 || addr_eq(&v[j].addr, &v[k].addr);
        if (dup)
            member_clear(&v[k]);
        else
            v[kept++] = v[k];
    }
    n = kept;
    /* the same set as CF's learned members? (ct_conf_fleet_add_learned keeps
     * the order it is given: CF's are sorted by name too) */
    bool same = true;
    size_t j = 0;
    for (size_t i = 0; i < fl->nmembers && same; i++) {
        const struct ct_conf_fleet_member *m = &fl->members[i];
        if (!m->learned)
            continue;
        same = j < n && strcmp(m->name, v[j].name) == 0 && addr_eq(&m->addr, &v[j].addr) &&
               addr_eq(&m->admin, &v[j].admin);
        j++;
    }
    if (!same || j != n)
        b->learn(b->arg, v, n);
    for (size_t k = 0; k < n; k++)
        member_clear(&v[k]);
    free(v);
}

static void on_members(redisAsyncContext *ac, void *r, void *priv)
{
    (void)priv;
    struct ct_fleet_bus *b = bus_of(ac);
    redisReply *rep = r;
    b->members_wait = false;
    if (b->closing || redirected(b, rep) || !rep || rep->type != REDIS_REPLY_ARRAY)
        return; /* Redis down or an error: the last view stands */
    const struct ct_conf *cf = b->cf_now(b->arg);
    const struct ct_conf_fleet *fl = &cf->fleet;
    /* Just connected: at start the others may not have registered yet;
     * after a reconnect (a Redis restarted empty, a promoted replica that
     * missed the last ZADDs) they register again within their own reconnect
     * second and a refresh. Dropping them meanwhile would move their keys
     * here and fetch them from the origin twice. A member really gone is
     * dropped once this ends (and a failed peer fetch marks it down before). */
    bool settling = ct_time_mono() < b->settle_until;
    b->n.live = 0;
    for (size_t i = 0; i < fl->nmembers; i++) {
        bool seen = i == fl->self_index;
        for (size_t k = 0; k < rep->elements && !seen; k++)
            seen = entry_is(rep->element[k], fl->members[i].name);
        if (i < CT_BALANCE_MAX) {
            if (!seen && settling && b->live[i])
                seen = true; /* kept from the last view */
            b->live[i] = seen;
        }
        ct_fleet_member_live(b->view, cf, i, seen);
        b->n.live += seen;
    }
    learn_members(b, cf, rep, settling);
}

static void on_registered(redisAsyncContext *ac, void *r, void *priv)
{
    struct ct_fleet_bus *b = bus_of(ac);
    if (b->reg_wait)
        b->reg_wait--;
    on_reply(ac, r, priv);
}

/* Each kind (registration, membership read) is sent only once the last one
 * of its kind was answered, or its link lost (NULL answers): a skipped one
 * is counted and sent at the next period. */
static void register_self(struct ct_fleet_bus *b)
{
    long long now_ms = (long long)(ct_time_real() * 1000.0);
    char exp[32], nowb[32];
    snprintf(exp, sizeof(exp), "%lld", now_ms + (long long)b->ttl_ms);
    snprintf(nowb, sizeof(nowb), "%lld", now_ms);
    /* the set's scores are expiry times on this node's clock: members need
     * clocks within a fraction of register_ttl (NTP) */
    if (b->reg_wait) {
        b->n.skipped++;
    } else {
        b->reg_sent = ct_time_mono();
        b->reg_wait += send_cmd(b->cmd, on_registered, NULL, "ZADD %s %s %s", b->k_members,
                                exp, b->reg) == REDIS_OK;
        b->reg_wait += send_cmd(b->cmd, on_registered, NULL, "ZREMRANGEBYSCORE %s -inf %s",
                                b->k_members, nowb) == REDIS_OK;
    }
    if (b->members_wait)
        b->n.skipped++;
    else
        b->members_wait = send_cmd(b->cmd, on_members, NULL, "ZRANGEBYSCORE %s %s +inf",
                                   b->k_members, nowb) == REDIS_OK;
}

/* ---- the stream ----------------------------------------------------------------- */

static void read_more(struct ct_fleet_bus *b);

static struct ct_str field(const redisReply *kv, const char *name)
{
    for (size_t i = 0; i + 1 < kv->elements; i += 2)
        if (kv->element[i]->type == REDIS_REPLY_STRING && strcmp(kv->element[i]->str, name) == 0)
            return ct_str_make(kv->element[i + 1]->str, kv->element[i + 1]->len);
    return CT_STR_NULL;
}

struct stream_id {
    unsigned long long ms, seq;
};

static struct stream_id id_of(const char *s)
{
    struct stream_id id = {0, 0};
    sscanf(s, "%llu-%llu", &id.ms, &id.seq);
    return id;
}

static bool id_after(struct stream_id a, struct stream_id b)
{
    return a.ms > b.ms || (a.ms == b.ms && a.seq > b.seq);
}

static void apply_entries(struct ct_fleet_bus *b, const redisReply *entries)
{
    for (size_t i = 0; i < entries->elements; i++) {
        const redisReply *e = entries->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_ARRAY)
            continue;
        /* each once: two reads from one id (a left-behind link's and the
         * current one) answer the same entries */
        if (!id_after(id_of(e->element[0]->str), id_of(b->last_id)))
            continue;
        snprintf(b->last_id, sizeof(b->last_id), "%s", e->element[0]->str);
        const redisReply *kv = e->element[1];
        struct ct_str node = field(kv, "node"), kind = field(kv, "kind");
        if (!node.p || !kind.p || ct_str_eq(node, ct_str_c(b->self)))
            continue; /* ours: applied when it was issued here */
        char k[16];
        snprintf(k, sizeof(k), "%.*s", (int)(kind.len < 15 ? kind.len : 15), kind.p);
        b->apply(b->arg, k, field(kv, "query"), field(kv, "expr"));
        b->n.applied++;
    }
}

static void on_read(redisAsyncContext *ac, void *r, void *priv)
{
    struct ct_fleet_bus *b = bus_of(ac);
    redisReply *rep = r;
    bool current = (uintptr_t)priv == b->read_gen;
    if (current)
        b->reading = false;
    if (b->closing || !rep || (current && redirected(b, rep)))
        return;
    if (rep->type == REDIS_REPLY_ARRAY) /* [[stream, entries]]; NIL: the block timed out */
        for (size_t i = 0; i < rep->elements; i++)
            if (rep->element[i]->type == REDIS_REPLY_ARRAY && rep->element[i]->elements == 2)
                apply_entries(b, rep->element[i]->element[1]);
    if (rep->type == REDIS_REPLY_ERROR && current)
        CT_WARN("fleet: XREAD: %s", rep->str);
    if (current)
        read_more(b);
}

static void read_more(struct ct_fleet_bus *b)
{
    if (!b->blk_up || !b->role_ok || b->reading || b->closing || !b->last_id[0])
        return;
    b->reading = send_cmd(b->blk, on_read, (void *)++b->read_gen,
                          "XREAD BLOCK " BLOCK_MS " STREAMS %s %s", b->k_stream,
                          b->last_id) == REDIS_OK;
    b->read_sent = ct_time_mono();
}

/* The first entry still in the stream, after a reconnect: past our last id,
 * something we never read was trimmed. */
static void on_first(redisAsyncContext *ac, void *r, void *priv)
{
    (void)priv;
    struct ct_fleet_bus *b = bus_of(ac);
    redisReply *rep = r;
    if (b->closing || redirected(b, rep) || !rep || rep->type != REDIS_REPLY_ARRAY ||
        rep->elements == 0)
        return;
    const redisReply *e = rep->element[0];
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 1 || e->element[0]->type != REDIS_REPLY_STRING)
        return;
    struct stream_id last = id_of(b->last_id);
    last.seq++; /* the next id there can be, in the same millisecond */
    if (id_after(id_of(e->element[0]->str), last)) {
        b->n.missed++;
        CT_WARN("fleet: purges between stream ids %s and %s were trimmed while this node was "
                "away: not applied (purge what matters again)", b->last_id, e->element[0]->str);
    }
}

/* Where to read from on the first connection: after the newest entry. */
static void on_last(redisAsyncContext *ac, void *r, void *priv)
{
    (void)priv;
    struct ct_fleet_bus *b = bus_of(ac);
    redisReply *rep = r;
    if (b->closing || !rep || redirected(b, rep))
        return;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
        rep->element[0]->type == REDIS_REPLY_ARRAY && rep->element[0]->elements >= 1 &&
        rep->element[0]->element[0]->type == REDIS_REPLY_STRING)
        snprintf(b->last_id, sizeof(b->last_id), "%s", rep->element[0]->element[0]->str);
    else
        snprintf(b->last_id, sizeof(b->last_id), "0-0");
    read_more(b);
}

/* ---- connections ----------------------------------------------------------------- */

/* The stream link connected, and the master verified (role_ok). */
static void stream_start(struct ct_fleet_bus *b)
{
    if (!b->blk_up || !b->role_ok)
        return;
    if (b->last_id[0]) /* a reconnect: catch up from where we stopped */
        send_cmd(b->blk, on_first, NULL, "XRANGE %s - + COUNT 1", b->k_stream);
    else
        send_cmd(b->blk, on_last, NULL, "XREVRANGE %s + - COUNT 1", b->k_stream);
    read_more(b);
}

/* The command link connected, and the master verified. */
static void cmd_ready(struct ct_fleet_bus *b)
{
    b->cmd_up = true;
    b->next_register = 0; /* register now */
    /* the others' registrations may be missing for their reconnect (the 1 s
     * tick) and one register_ttl */
    b->settle_until = ct_time_mono() + 1.0 + (double)b->ttl_ms / 1000.0;
}

/* ROLE's answer on a command link to a master a Sentinel named
 * (ct_fleet_sentinel_role). */
static void on_role(redisAsyncContext *ac, void *r, void *priv)
{
    (void)priv;
    struct ct_fleet_bus *b = bus_of(ac);
    redisReply *rep = r;
    if (b->reg_wait)
        b->reg_wait--;
    if (b->closing || !rep || ac != b->cmd)
        return; /* lost: on_disconnect */
    if (!ct_fleet_sentinel_role(b->sen, b->host, b->port, rep)) {
        b->have_master = false;
        drop_links(b);
        return;
    }
    b->role_ok = true;
    cmd_ready(b);
    stream_start(b);
    up_gauge(b);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct ct_fleet_bus *b = bus_of(ac);
    bool is_cmd = ac == b->cmd;
    if (status != REDIS_OK) {
        if (is_cmd)
            b->cmd = NULL;
        else
            b->blk = NULL;
        b->n.redis_errors++;
        b->have_master = false;
        return; /* hiredis frees AC; the tick retries */
    }
    CT_INFO("fleet: Redis %s:%d connected (%s)", b->host, b->port, is_cmd ? "commands" : "stream");
    if (is_cmd) {
        b->cmd_noauth = false; /* until this connection's AUTH answers */
        if (b->sen) { /* answered after AUTH's, sent first */
            b->reg_sent = ct_time_mono(); /* a stalled master: drop_stalled */
            b->reg_wait += redisAsyncCommand((redisAsyncContext *)ac, on_role, NULL, "ROLE") ==
                           REDIS_OK;
        } else {
            cmd_ready(b);
        }
    } else {
        b->blk_up = true;
        b->blk_noauth = false;
        stream_start(b);
    }
    up_gauge(b);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct ct_fleet_bus *b = bus_of(ac);
    if (ac == b->cmd) {
        b->cmd = NULL;
        b->cmd_up = false;
        b->role_ok = !b->sen; /* the next master is checked again */
    } else {
        b->blk = NULL;
        b->blk_up = false;
        b->reading = false;
        b->read_gen++; /* its read will not answer; an ASK target's may */
    }
    up_gauge(b);
    if (b->closing)
        return;
    if (b->redirecting) {
        b->redirecting = b->cmd || b->blk; /* until both are closed */
        return;
    }
    b->n.redis_errors++;
    b->have_master = false; /* Sentinel: ask which master now */
    CT_WARN("fleet: Redis %s:%d lost (%s)%s: serving on the last membership view, purges go "
            "over HTTP until it is back", b->host, b->port,
            b->drop_why ? b->drop_why : ac->errstr[0] ? ac->errstr : "closed",
            status == REDIS_OK ? "" : "");
}

/* AUTH's answer: an error (a wrong password or user, or none set on a
 * server that wants one) leaves the connection up but every command
 * refused (NOAUTH): said once per connection, counted. PRIV: the bus (a
 * Sentinel link's ac->data is the Sentinel client's). */
static void on_auth(redisAsyncContext *ac, void *r, void *priv)
{
    struct ct_fleet_bus *b = priv;
    CT_CHECK_OBJ(b, CT_FLEET_BUS_MAGIC);
    redisReply *rep = r;
    if (b->closing || !rep || rep->type != REDIS_REPLY_ERROR)
        return;
    b->n.redis_errors++;
    CT_WARN("fleet: Redis %s:%d refused AUTH: %s (%s)", ac->c.tcp.host, ac->c.tcp.port, rep->str,
            ac->data == b ? "fleet.redis_password" : "fleet.redis_sentinel_password");
    /* fleet_redis_up says whether Redis serves the fleet, not whether a
     * socket is open */
    if (ac == b->cmd)
        b->cmd_noauth = true;
    else if (ac == b->blk)
        b->blk_noauth = true;
    up_gauge(b);
}

/* AUTH as the first command queued on AC (hiredis sends in order once
 * connected): no command runs unauthenticated. */
static void auth_first(struct ct_fleet_bus *b, redisAsyncContext *ac, const char *user,
                       const char *pass)
{
    if (!pass)
        return;
    if (user)
        redisAsyncCommand(ac, on_auth, b, "AUTH %s %s", user, pass);
    else
        redisAsyncCommand(ac, on_auth, b, "AUTH %s", pass);
}

/* A connection to HOST:PORT for ROLE ("cmd", "stream", "ask-cmd", ...,
 * "sentinel", "sentinel-sub"), NULL when it fails at once (said and counted). */
static redisAsyncContext *link_new(struct ct_fleet_bus *b, const char *host, int port,
                                   redisConnectCallback *on_conn,
                                   redisDisconnectCallback *on_disc, const char *role)
{
    bool sen = strncmp(role, "sentinel", 8) == 0;
    redisAsyncContext *ac = redisAsyncConnect(host, port);
    if (!ac)
        return NULL;
    if (ac->err) {
        /* refused before any callback (no route to it: ENETUNREACH from
         * connect(2) itself) */
        CT_WARN("fleet: %s %s:%d unreachable (%s)", sen ? "Sentinel" : "Redis", host, port,
                ac->errstr);
        redisAsyncFree(ac);
        b->n.redis_errors++;
        return NULL;
    }
    ac->data = b;
    redisLibeventAttach(ac, b->base);
    redisAsyncSetConnectCallback(ac, on_conn);
    redisAsyncSetDisconnectCallback(ac, on_disc);
    if (sen)
        auth_first(b, ac, NULL, b->sen_password);
    else
        auth_first(b, ac, b->username, b->password);
    /* named, so an operator (and the tests) can tell the nodes apart */
    redisAsyncCommand(ac, NULL, NULL, "CLIENT SETNAME cachet-%s-%s", b->self, role);
    return ac;
}

/* ---- Sentinel (fleet_sentinel.c) ------------------------------------------------- */

static struct redisAsyncContext *sen_link(void *arg, const char *host, int port,
                                          const char *role)
{
    return link_new(arg, host, port, NULL, NULL, role);
}

/* Move the links to HOST:PORT: on a +switch-master (SWITCHED), or when
 * the Sentinel asked with the links up (the subscribed one was lost) names
 * another master, a failover it was not told of. */
static bool sen_master(void *arg, const char *host, int port, bool switched)
{
    struct ct_fleet_bus *b = arg;
    CT_CHECK_OBJ(b, CT_FLEET_BUS_MAGIC);
    bool moved = strcmp(b->host, host) != 0 || port != b->port;
    if (switched && !moved)
        return false;
    free(b->host);
    b->host = ct_xstrdup(host);
    b->port = port;
    b->have_master = true;
    if (moved && (switched || b->cmd || b->blk)) {
        b->n.redirects++;
        drop_links(b); /* the tick connects to the new master */
    }
    return moved;
}

static void sen_error(void *arg)
{
    struct ct_fleet_bus *b = arg;
    CT_CHECK_OBJ(b, CT_FLEET_BUS_MAGIC);
    b->n.redis_errors++;
}

static const struct ct_fleet_sentinel_ops sen_ops = {
    .link = sen_link, .master = sen_master, .error = sen_error};

static void slow_publishes(struct ct_fleet_bus *b, ct_time_t now);

/* A stalled Redis (see STALL_MIN_S): the links are freed, not disconnected,
 * since a disconnect waits for the answers that do not come; their
 * commands are answered NULL (the XADDs go over HTTP) and on_disconnect
 * forgets them as lost ones. */
static void drop_stalled(struct ct_fleet_bus *b, ct_time_t now)
{
    double bound = (double)b->ttl_ms / 1000.0;
    if (bound < STALL_MIN_S)
        bound = STALL_MIN_S;
    /* (b->cmd may be a link closing, its disconnect waiting for answers) */
    bool cmd_late = b->cmd && b->reg_wait && now - b->reg_sent > bound;
    bool blk_late = b->blk_up && b->reading &&
                    now - b->read_sent > bound + atoi(BLOCK_MS) / 1000.0;
    if (!cmd_late && !blk_late)
        return;
    char why[64];
    snprintf(why, sizeof(why), "stalled: no answer for %.0f s", bound);
    b->drop_why = why;
    b->n.stalls++;
    /* on_disconnect NULLs each (run for connected ones only; one still
     * connecting has nothing sent) */
    if (b->cmd && (b->cmd->c.flags & REDIS_CONNECTED))
        redisAsyncFree(b->cmd);
    if (b->blk && (b->blk->c.flags & REDIS_CONNECTED))
        redisAsyncFree(b->blk);
    b->drop_why = NULL;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ct_fleet_bus *b = arg;
    CT_CHECK_OBJ(b, CT_FLEET_BUS_MAGIC);
    /* first: the links a Sentinel's answer is awaited for may be closing
     * ones, their disconnect waiting on a stalled master */
    ct_time_t now = ct_time_mono();
    slow_publishes(b, now);
    drop_stalled(b, now);
    if (b->sen) {
        ct_fleet_sentinel_tick(b->sen, now, b->have_master, (double)b->ttl_ms / 3000.0);
        if (!b->have_master)
            return; /* connect once a Sentinel answered: the next tick */
    }
    if (!b->cmd)
        b->cmd = link_new(b, b->host, b->port, on_connect, on_disconnect, "cmd");
    if (!b->blk)
        b->blk = link_new(b, b->host, b->port, on_connect, on_disconnect, "stream");
    read_more(b); /* a read lost with a link to an ASK target: on again */
    if (b->cmd_up && now >= b->next_register) {
        register_self(b);
        b->next_register = now + (double)b->ttl_ms / 3000.0;
    }
}

/* ---- HTTP fan-out while Redis is down ------------------------------------------- */

static void send_http(struct ct_fleet_bus *b, const char *kind, struct ct_str query,
                      struct ct_str expr)
{
    size_t targets;
    size_t sent = ct_fleet_fanout_send(b->fanout, kind, query, expr, &targets);
    b->n.http_sent += sent;
    if (targets == 0 && !b->host)
        return; /* static members without admin addresses: no fan-out, as configured */
    if (sent == 0) {
        b->n.unsent++;
        CT_WARN("fleet: Redis down and no member admin address: this %s reached no other node",
                kind);
    }
}

/* An XADD in flight: what to send over HTTP if it does not land. */
struct pending {
    CT_LIST_LINK(pending) link; /* in b->inflight */
    ct_time_t sent;
    bool http; /* sent over HTTP already: Redis was slow to answer */
    char kind[8];
    struct ct_str query, expr; /* owned copies */
};

static struct pending *pending_new(struct ct_fleet_bus *b, const char *kind, struct ct_str query,
                                   struct ct_str expr)
{
    struct pending *p = ct_xcalloc(1, sizeof(*p));
    p->sent = ct_time_mono();
    CT_LIST_INSERT_TAIL(&b->inflight, p, link);
    b->ninflight++;
    snprintf(p->kind, sizeof(p->kind), "%s", kind);
    char *q = ct_xmalloc(query.len + expr.len + 1);
    if (query.len)
        memcpy(q, query.p, query.len);
    if (expr.len)
        memcpy(q + query.len, expr.p, expr.len);
    p->query = ct_str_make(q, query.len);
    p->expr = ct_str_make(q + query.len, expr.len);
    return p;
}

static void pending_free(struct ct_fleet_bus *b, struct pending *p)
{
    CT_LIST_REMOVE(&b->inflight, p, link);
    b->ninflight--;
    free((char *)p->query.p);
    free(p);
}

/* The tick: the XADDs Redis has not answered for XADD_WAIT_S go over HTTP
 * too (a purge applied twice is the same purge; a ban twice, the same ban). */
static void slow_publishes(struct ct_fleet_bus *b, ct_time_t now)
{
    struct pending *p;
    CT_LIST_FOREACH(p, &b->inflight, link) {
        if (now - p->sent < XADD_WAIT_S)
            break; /* sent in order */
        if (p->http)
            continue;
        p->http = true;
        b->n.slow++;
        send_http(b, p->kind, p->query, p->expr);
    }
}

/* The XADD's answer: an id (done), or a redirect / an error / the link
 * lost (NULL): the others get it over HTTP instead, so it is not lost. */
static void on_xadd(redisAsyncContext *ac, void *r, void *priv)
{
    struct ct_fleet_bus *b = bus_of(ac);
    struct pending *p = priv;
    redisReply *rep = r;
    if (!b->closing && (!rep || rep->type != REDIS_REPLY_STRING)) {
        (void)redirected(b, rep);
        b->n.published--;
        if (!p->http)
            send_http(b, p->kind, p->query, p->expr);
    }
    pending_free(b, p);
}

void ct_fleet_bus_publish(struct ct_fleet_bus *b, const char *kind, struct ct_str query,
                          struct ct_str expr)
{
    CT_CHECK_OBJ(b, CT_FLEET_BUS_MAGIC);
    if (!b->cmd_up || b->ninflight >= XADD_INFLIGHT_MAX) {
        b->n.slow += b->cmd_up;
        send_http(b, kind, query, expr);
        return;
    }
    const char *argv[] = {"XADD", b->k_stream, "MAXLEN", "~", STREAM_MAXLEN, "*", "node", b->self,
                          "kind", kind, "query", query.p ? query.p : "", "expr",
                          expr.p ? expr.p : ""};
    size_t len[CT_ARRAY_LEN(argv)];
    for (size_t i = 0; i < CT_ARRAY_LEN(argv); i++) /* query and expr: views, no NUL */
        len[i] = i == 11 ? query.len : i == 13 ? expr.len : strlen(argv[i]);
    char *cmd = NULL;
    int n = redisFormatCommandArgv(&cmd, (int)CT_ARRAY_LEN(argv), argv, len);
    struct pending *p = pending_new(b, kind, query, expr);
    if (send_formatted(b->cmd, on_xadd, p, cmd, n) == REDIS_OK) {
        b->n.published++;
        return;
    }
    pending_free(b, p);
    send_http(b, kind, query, expr);
}

/* ---- life ------------------------------------------------------------------------ */

static void addr_text(const struct ct_conf_addr *a, char *buf, size_t len)
{
    if (!a->host)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, strchr(a->host, ':') ? "[%s]:%u" : "%s:%u", a->host, a->port);
}

/* What this node registers: its name and, for the nodes that learn members
 * (fleet.learn_members), the addresses its own configuration gives it. */
static char *registration(const struct ct_conf_fleet *fl)
{
    const struct ct_conf_fleet_member *m = &fl->members[fl->self_index];
    char peer[80], admin[80];
    addr_text(&m->addr, peer, sizeof(peer));
    addr_text(&m->admin, admin, sizeof(admin));
    size_t n = strlen(m->name) + strlen(peer) + strlen(admin) + 3;
    char *s = ct_xmalloc(n);
    snprintf(s, n, "%s %s %s", m->name, peer, admin);
    return s;
}

struct ct_fleet_bus *ct_fleet_bus_new(struct event_base *base, const struct ct_conf *cf,
                                      struct ct_fleet *view,
                                      const struct ct_conf *(*cf_now)(void *arg),
                                      ct_fleet_bus_apply_cb *apply,
                                      ct_fleet_bus_learn_cb *learn, void *arg)
{
    const struct ct_conf_fleet *fl = &cf->fleet;
    if (!fl->self)
        return NULL;
    struct ct_fleet_bus *b = ct_xcalloc(1, sizeof(*b));
    b->magic = CT_FLEET_BUS_MAGIC;
    b->base = base;
    b->view = view;
    b->cf_now = cf_now;
    b->apply = apply;
    b->learn = learn;
    b->arg = arg;
    b->fanout = ct_fleet_fanout_new(base, cf, cf_now, arg);
    if (!fl->redis.host)
        return b; /* static members: the HTTP fan-out only, as with Redis down for good */
    b->host = ct_xstrdup(fl->redis.host);
    b->port = fl->redis.port;
    if (fl->redis_sentinel)
        b->sen = ct_fleet_sentinel_new(fl, &sen_ops, b);
    b->self = ct_xstrdup(fl->self);
    b->reg = registration(fl);
    /* {PREFIX}: one hash slot for both keys (Redis Cluster) */
    size_t tl = strlen(fl->redis_prefix) + 3;
    char *tag = ct_xmalloc(tl);
    snprintf(tag, tl, "{%s}", fl->redis_prefix);
    b->k_stream = join(tag, "purges");
    b->k_members = join(tag, "members");
    free(tag);
    b->ttl_ms = fl->register_ttl_ms;
    b->password = fl->redis_password ? ct_xstrdup(fl->redis_password) : NULL;
    b->username = fl->redis_username ? ct_xstrdup(fl->redis_username) : NULL;
    b->sen_password =
        fl->redis_sentinel_password ? ct_xstrdup(fl->redis_sentinel_password) : NULL;
    b->role_ok = !b->sen;
    for (size_t i = 0; i < CT_BALANCE_MAX; i++)
        b->live[i] = true; /* the view starts with every member live */
    b->tick = event_new(base, -1, EV_PERSIST, on_tick, b);
    event_add(b->tick, &(struct timeval){1, 0});
    on_tick(-1, 0, b); /* connect now */
    return b;
}

void ct_fleet_bus_counts(const struct ct_fleet_bus *b, struct ct_fleet_bus_counts *out)
{
    CT_CHECK_OBJ(b, CT_FLEET_BUS_MAGIC);
    *out = b->n;
    if (b->sen) {
        struct ct_fleet_sentinel_counts sn;
        ct_fleet_sentinel_counts(b->sen, &sn);
        out->role_mismatch = sn.role_mismatch;
        out->sentinel_stalls = sn.stalls;
    }
}

void ct_fleet_bus_fanout_counts(const struct ct_fleet_bus *b, struct ct_fleet_fanout_counts *out)
{
    CT_CHECK_OBJ(b, CT_FLEET_BUS_MAGIC);
    ct_fleet_fanout_counts(b->fanout, out);
}

void ct_fleet_bus_free(struct ct_fleet_bus **bp)
{
    struct ct_fleet_bus *b = *bp;
    if (!b)
        return;
    CT_CHECK_OBJ(b, CT_FLEET_BUS_MAGIC);
    b->closing = true; /* the callbacks redisAsyncFree runs (NULL replies) do nothing */
    if (b->cmd)
        redisAsyncFree(b->cmd);
    if (b->blk)
        redisAsyncFree(b->blk);
    ct_fleet_sentinel_free(&b->sen);
    for (size_t i = 0; i < CT_ARRAY_LEN(b->ask); i++)
        if (b->ask[i])
            redisAsyncFree(b->ask[i]);
    free(b->ask_host);
    if (b->tick)
        event_free(b->tick);
    ct_fleet_fanout_free(&b->fanout);
    free(b->host);
    free(b->self);
    free(b->reg);
    free(b->k_stream);
    free(b->k_members);
    free(b->password);
    free(b->username);
    free(b->sen_password);
    b->magic = 0;
    free(b);
    *bp = NULL;
}
