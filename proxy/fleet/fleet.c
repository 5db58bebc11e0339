/*
 * proxy/fleet/fleet.c: owners, down marks and the peer check (fleet.h).
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/balance/balance.h"
#include "proxy/fleet/fleet.h"

/* A down mark: until when (monotonic ms) the member of that name hash is
 * not asked. Both halves are atomics written together by whichever worker
 * saw the failure; a reader racing a writer sees the old mark or the new
 * one for one request, which costs at most one more failed peer fetch. The
 * name hash keeps a mark with its member across a reload that reorders the
 * list. */
struct mark {
    _Atomic uint64_t name_hash;
    _Atomic int64_t until_ms;
};

/* A queued client purge (the outbox, fleet.h). */
struct outmsg {
    struct outmsg *next;
    char query[]; /* NUL-terminated */
};

struct ct_fleet {
    unsigned magic;
#define CT_FLEET_MAGIC 0xf1ee7017u
    struct mark down[CT_BALANCE_MAX];   /* by member index: a failed peer fetch */
    struct mark absent[CT_BALANCE_MAX]; /* until_ms 1: not registered in Redis */
    /* the outbox, under MU (any worker pushes, the main thread pops) */
    pthread_mutex_t mu;
    void (*wake)(void *arg); /* NULL: closed */
    void *wake_arg;
    struct outmsg *head, **tail;
    size_t nout;
    size_t refused; /* pushes refused in a row: the burst ct_fleet_outbox_push reports */
};

struct ct_fleet *ct_fleet_new(void)
{
    struct ct_fleet *f = ct_xcalloc(1, sizeof(*f));
    f->magic = CT_FLEET_MAGIC;
    pthread_mutex_init(&f->mu, NULL);
    f->tail = &f->head;
    return f;
}

void ct_fleet_outbox_open(struct ct_fleet *f, void (*wake)(void *arg), void *arg)
{
    CT_CHECK_OBJ(f, CT_FLEET_MAGIC);
    pthread_mutex_lock(&f->mu);
    f->wake = wake;
    f->wake_arg = arg;
    pthread_mutex_unlock(&f->mu);
}

void ct_fleet_outbox_close(struct ct_fleet *f)
{
    CT_CHECK_OBJ(f, CT_FLEET_MAGIC);
    pthread_mutex_lock(&f->mu);
    f->wake = NULL;
    f->wake_arg = NULL;
    while (f->head) {
        struct outmsg *m = f->head;
        f->head = m->next;
        free(m);
    }
    f->tail = &f->head;
    f->nout = 0;
    pthread_mutex_unlock(&f->mu);
}

enum ct_fleet_push ct_fleet_outbox_push(struct ct_fleet *f, struct ct_str query, size_t max,
                                        size_t *burst)
{
    CT_CHECK_OBJ(f, CT_FLEET_MAGIC);
    struct outmsg *m = ct_xmalloc(sizeof(*m) + query.len + 1);
    m->next = NULL;
    if (query.len)
        memcpy(m->query, query.p, query.len);
    m->query[query.len] = '\0';
    enum ct_fleet_push res = CT_FLEET_PUSH_QUEUED;
    *burst = 0;
    pthread_mutex_lock(&f->mu);
    if (!f->wake) {
        res = CT_FLEET_PUSH_CLOSED;
    } else if (f->nout >= max) {
        res = CT_FLEET_PUSH_FULL;
        *burst = ++f->refused;
    } else {
        *f->tail = m;
        f->tail = &m->next;
        f->nout++;
        *burst = f->refused;
        f->refused = 0;
        f->wake(f->wake_arg); /* under the lock: close cannot free what it signals */
    }
    pthread_mutex_unlock(&f->mu);
    if (res != CT_FLEET_PUSH_QUEUED)
        free(m);
    return res;
}

char *ct_fleet_outbox_pop(struct ct_fleet *f)
{
    CT_CHECK_OBJ(f, CT_FLEET_MAGIC);
    pthread_mutex_lock(&f->mu);
    struct outmsg *m = f->head;
    if (m) {
        f->head = m->next;
        if (!f->head)
            f->tail = &f->head;
        f->nout--;
    }
    pthread_mutex_unlock(&f->mu);
    if (!m)
        return NULL;
    /* the string moves to the front of its own allocation: one free */
    size_t n = strlen(m->query);
    memmove(m, m->query, n + 1);
    return (char *)m;
}

void ct_fleet_free(struct ct_fleet **fp)
{
    struct ct_fleet *f = *fp;
    if (!f)
        return;
    CT_CHECK_OBJ(f, CT_FLEET_MAGIC);
    ct_fleet_outbox_close(f);
    pthread_mutex_destroy(&f->mu);
    f->magic = 0;
    free(f);
    *fp = NULL;
}

static uint64_t name_hash(const struct ct_conf_fleet *fl, size_t i)
{
    const char *name = fl->members[i].name;
    return ct_balance_hash(name, strlen(name));
}

static bool is_down(const struct ct_fleet *f, size_t i, uint64_t nh, ct_time_t now)
{
    const struct mark *m = &f->down[i];
    return atomic_load_explicit(&m->name_hash, memory_order_relaxed) == nh &&
           (double)atomic_load_explicit(&m->until_ms, memory_order_relaxed) > now * 1000.0;
}

bool ct_fleet_is_peer_group(const struct ct_conf *cf, size_t group)
{
    return group > cf->ngroups && group < ct_conf_ngroups(cf);
}

static bool is_absent(const struct ct_fleet *f, size_t i, uint64_t nh)
{
    const struct mark *m = &f->absent[i];
    return atomic_load_explicit(&m->name_hash, memory_order_relaxed) == nh &&
           atomic_load_explicit(&m->until_ms, memory_order_relaxed) != 0;
}

void ct_fleet_member_live(struct ct_fleet *f, const struct ct_conf *cf, size_t i, bool live)
{
    CT_CHECK_OBJ(f, CT_FLEET_MAGIC);
    if (i >= cf->fleet.nmembers || i >= CT_BALANCE_MAX)
        return;
    atomic_store_explicit(&f->absent[i].name_hash, name_hash(&cf->fleet, i), memory_order_relaxed);
    atomic_store_explicit(&f->absent[i].until_ms, live ? 0 : 1, memory_order_relaxed);
}

/* Plain rendezvous ranking: the members carry no load (see next_within_bound) */
static const struct ct_balance_opts ranking = {.algo = CT_CONF_BALANCE_HASH, .factor_pct = 100};

/* Bounded load over the rendezvous ranking of M, whose first choice K is a
 * peer: that peer, or the next member down the ranking whose BUSY count is
 * within the bound. This node is always within it (it is always up, so the
 * walk ends there at the latest): the miss then goes to the origin from
 * here. The mean is over the peers up, so this node's own fills, which
 * BUSY does not count, do not lower it. */
static int next_within_bound(const struct ct_conf_fleet *fl, struct ct_balance_member *m,
                             size_t n, const unsigned *busy, uint64_t key, ct_time_t now, int k)
{
    uint64_t total = 0;
    size_t npeers = 0;
    for (size_t i = 0; i < n; i++)
        if (m[i].up && i != fl->self_index) {
            total += busy[i];
            npeers++;
        }
    /* as ct_balance_pick's bound, counting this request, never below the floor */
    double cap = ceil((double)fl->load_factor / 100.0 * (double)(total + 1) / (double)npeers);
    if (cap < (double)fl->load_floor)
        cap = (double)fl->load_floor;
    for (; k >= 0; k = ct_balance_pick(&ranking, m, n, key, now)) {
        if ((size_t)k == fl->self_index || (double)busy[k] + 1 <= cap)
            break;
        m[k].up = false; /* past the bound: the key's next choice */
    }
    return k;
}

size_t ct_fleet_owner_group(const struct ct_fleet *f, const struct ct_conf *cf, uint64_t key,
                            ct_time_t now, const unsigned *busy, bool *spilled)
{
    CT_CHECK_OBJ(f, CT_FLEET_MAGIC);
    const struct ct_conf_fleet *fl = &cf->fleet;
    if (!fl->self || fl->nmembers < 2)
        return SIZE_MAX;
    struct ct_balance_member m[CT_BALANCE_MAX];
    size_t n = fl->nmembers < CT_BALANCE_MAX ? fl->nmembers : CT_BALANCE_MAX;
    for (size_t i = 0; i < n; i++) {
        uint64_t nh = name_hash(fl, i);
        m[i] = (struct ct_balance_member){
            .weight = 1,
            .up = i == fl->self_index || (!is_down(f, i, nh, now) && !is_absent(f, i, nh)),
            .name_hash = nh,
        };
    }
    int k = ct_balance_pick(&ranking, m, n, key, now); /* self is always up: k >= 0 */
    if (busy && fl->load_factor && (size_t)k != fl->self_index) {
        int owner = k;
        k = next_within_bound(fl, m, n, busy, key, now, k);
        *spilled = k != owner;
    }
    if (k < 0 || (size_t)k == fl->self_index)
        return SIZE_MAX;
    return fl->peer_group[k];
}

void ct_fleet_peer_failed(struct ct_fleet *f, const struct ct_conf *cf, size_t group,
                          ct_time_t now)
{
    CT_CHECK_OBJ(f, CT_FLEET_MAGIC);
    const struct ct_conf_fleet *fl = &cf->fleet;
    for (size_t i = 0; i < fl->nmembers && i < CT_BALANCE_MAX; i++) {
        if (fl->peer_group[i] != group)
            continue;
        atomic_store_explicit(&f->down[i].name_hash, name_hash(fl, i), memory_order_relaxed);
        atomic_store_explicit(&f->down[i].until_ms, (int64_t)(now * 1000.0) + (int64_t)fl->down_ms,
                              memory_order_relaxed);
    }
}

size_t ct_fleet_members_down(const struct ct_fleet *f, const struct ct_conf *cf, ct_time_t now)
{
    CT_CHECK_OBJ(f, CT_FLEET_MAGIC);
    size_t n = 0;
    for (size_t i = 0; i < cf->fleet.nmembers && i < CT_BALANCE_MAX; i++)
        n += is_down(f, i, name_hash(&cf->fleet, i), now);
    return n;
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr_storage *b)
{
    if (a->sa_family != b->ss_family)
        return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
    return false;
}

bool ct_fleet_hop_trusted(const struct ct_conf_fleet *fl, const struct sockaddr *sa,
                          struct ct_str value)
{
    if (!fl->self)
        return false;
    if (fl->token)
        return ct_conf_token_matches(fl->token, value); /* as the admin token's */
    if (!sa)
        return false;
    for (size_t i = 0; i < fl->nmembers; i++)
        if (same_ip(sa, &fl->members[i].addr.sa))
            return true;
    return false;
}

bool ct_fleet_hop_trusted_ip(const struct ct_conf_fleet *fl, struct ct_str ip,
                             struct ct_str value)
{
    if (!fl->self)
        return false;
    if (fl->token)
        return ct_conf_token_matches(fl->token, value);
    /* a member written as the text inet_ntop gives its address: no parse
     * (one per hop request, as much as the rest of the trust check) */
    for (size_t i = 0; i < fl->nmembers; i++)
        if (fl->members[i].addr.host && ct_str_eq(ip, ct_str_c(fl->members[i].addr.host)))
            return true;
    char text[INET6_ADDRSTRLEN];
    if (ip.len == 0 || ip.len >= sizeof(text))
        return false;
    memcpy(text, ip.p, ip.len);
    text[ip.len] = '\0';
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, text, &s4->sin_addr) == 1)
        s4->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1)
        s6->sin6_family = AF_INET6;
    else
        return false;
    return ct_fleet_hop_trusted(fl, (const struct sockaddr *)&ss, value);
}

struct ct_str ct_fleet_hop_value(const struct ct_conf_fleet *fl)
{
    return fl->token ? ct_str_c(fl->token) : CT_STR("1");
}
