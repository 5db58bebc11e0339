/*
 * conf/conf_fleet.c: the fleet section (issue 17) once every field is read:
 * its cross-checks, and one backend group per member but this node, so that
 * a peer fetch runs on the upstream layer's keep-alive pools, timeouts and
 * per-backend counters like any origin fetch (the groups come after the
 * configured ones in ct_conf_group_at; their backends are named
 * "fleet:NAME" in /stats and /metrics). The groups are derived, never
 * written or dumped: `cachet -T` shows the fleet section as written.
 */
#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"
#include "http/http.h"

static const char *loc(const struct ct_conf *cf, const char *path)
{
    return ct_conf_locs_find(cf->_locs, path, cf->source);
}

#define ERR(path, ...) ct_conf_err(errs, loc(cf, (path)), (path), __VA_ARGS__)

void ct_conf_fleet_free_derived(struct ct_conf_fleet *fl)
{
    for (size_t i = 0; i < fl->npeer_groups; i++) {
        struct ct_conf_group *g = &fl->peer_groups[i];
        ct_conf_section_free(&ct_conf_backend_section, g->backends);
        free(g->backends);
        free(g->name);
    }
    free(fl->peer_groups);
    free(fl->peer_group);
    fl->peer_groups = NULL;
    fl->peer_group = NULL;
    fl->npeer_groups = 0;
    for (size_t i = 1; i < fl->nsentinels; i++) /* [0] is fleet.redis, the row's */
        free(fl->sentinels[i].host);
    free(fl->sentinels);
    fl->sentinels = NULL;
    fl->nsentinels = 0;
}

/* Member M's backend: the top-level backends' defaults, the fleet's
 * timeouts, and no passive health (the fleet keeps its own down marks, and
 * a group of one backend would never take it out anyway). */
static void peer_backend(const struct ct_conf_fleet *fl, const struct ct_conf_fleet_member *m,
                         struct ct_conf_backend *b)
{
    ct_conf_section_defaults(&ct_conf_backend_section, b);
    free(b->name);
    size_t n = strlen(m->name) + sizeof("fleet:");
    b->name = ct_xmalloc(n);
    snprintf(b->name, n, "fleet:%s", m->name);
    b->host = ct_xstrdup(m->addr.host);
    b->port = m->addr.port;
    b->connect_timeout_ms = fl->connect_timeout_ms;
    b->header_timeout_ms = fl->response_timeout_ms;
    b->read_timeout_ms = fl->response_timeout_ms;
    b->max_fails = 0;
    b->passive_fail_mask = 0;
    b->health.enabled = false;
    /* fetches over TLS: the member's group, as a backend's */
    const struct ct_conf_section *tls = ct_conf_find_row(&ct_conf_backend_section, "tls")->sub;
    ct_conf_section_free(tls, &b->tls);
    ct_conf_section_copy(tls, &b->tls, &m->tls);
}

static bool is_name(const char *s)
{
    return *s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
                     strlen(s);
}

static void derive_groups(struct ct_conf *cf)
{
    struct ct_conf_fleet *fl = &cf->fleet;
    fl->peer_group = ct_xcalloc(fl->nmembers, sizeof(*fl->peer_group));
    fl->peer_groups = ct_xcalloc(fl->nmembers, sizeof(*fl->peer_groups));
    for (size_t i = 0; i < fl->nmembers; i++) {
        if (i == fl->self_index) {
            fl->peer_group[i] = SIZE_MAX;
            continue;
        }
        struct ct_conf_group *g = &fl->peer_groups[fl->npeer_groups];
        const struct ct_conf_fleet_member *m = &fl->members[i];
        size_t n = strlen(m->name) + sizeof("fleet:");
        g->name = ct_xmalloc(n);
        snprintf(g->name, n, "fleet:%s", m->name);
        g->balance = CT_CONF_BALANCE_RR;
        g->hash_on_text = (char *)"key";
        g->hash_on = CT_CONF_HASH_KEY;
        g->hash_balance_factor = 125;
        g->backends = ct_xcalloc(1, sizeof(*g->backends));
        g->nbackends = 1;
        peer_backend(fl, m, g->backends);
        fl->peer_group[i] = 1 + cf->ngroups + fl->npeer_groups;
        fl->npeer_groups++;
    }
}

/* fleet.redis and fleet.redis_sentinels as one list (checked already). The
 * hosts are kept in the parsed addresses: freed with the list. */
static void derive_sentinels(struct ct_conf_fleet *fl)
{
    if (!fl->redis_sentinel || !fl->redis.host)
        return;
    fl->sentinels = ct_xcalloc(1 + fl->nredis_sentinels, sizeof(*fl->sentinels));
    fl->sentinels[fl->nsentinels++] = fl->redis; /* its host stays the row's */
    for (size_t i = 0; i < fl->nredis_sentinels; i++)
        if (ct_conf_parse_addr(fl->redis_sentinels[i], &fl->sentinels[fl->nsentinels]) == CT_OK)
            fl->nsentinels++;
}

static bool same_addr(const struct ct_conf_addr *a, const struct ct_conf_addr *b)
{
    return a->salen == b->salen && memcmp(&a->sa, &b->sa, a->salen) == 0;
}

bool ct_conf_fleet_learnable(const struct ct_conf_fleet *fl, const struct ct_conf_fleet_member *m)
{
    if (!fl->self || !fl->learn_members || !fl->redis.host || !m->name || !is_name(m->name) ||
        !m->addr.host || m->addr.port == 0)
        return false;
    /* the file's word wins: a member it names keeps its configured address,
     * and an address it gives one member is not taken over by another name */
    for (size_t i = 0; i < fl->nmembers; i++)
        if (!fl->members[i].learned &&
            (strcmp(fl->members[i].name, m->name) == 0 || same_addr(&fl->members[i].addr, &m->addr)))
            return false;
    return true;
}

static void addr_copy(struct ct_conf_addr *dst, const struct ct_conf_addr *src)
{
    *dst = *src;
    dst->host = src->host ? ct_xstrdup(src->host) : NULL;
}

void ct_conf_fleet_add_learned(struct ct_conf *cf, const struct ct_conf_fleet_member *learned,
                               size_t n)
{
    struct ct_conf_fleet *fl = &cf->fleet;
    for (size_t i = 0; i < n; i++) {
        /* two registrations with one name or one address (a node renamed
         * while its old entry lives on): the first wins, as the checks
         * below would refuse the whole configuration otherwise */
        bool dup = false;
        for (size_t k = 0; k < fl->nmembers && !dup; k++)
            dup = fl->members[k].learned && (strcmp(fl->members[k].name, learned[i].name) == 0 ||
                                             same_addr(&fl->members[k].addr, &learned[i].addr));
        if (dup || !ct_conf_fleet_learnable(fl, &learned[i]))
            continue;
        fl->members = ct_xrealloc(fl->members, (fl->nmembers + 1) * sizeof(*fl->members));
        struct ct_conf_fleet_member *m = &fl->members[fl->nmembers++];
        memset(m, 0, sizeof(*m));
        m->name = ct_xstrdup(learned[i].name);
        addr_copy(&m->addr, &learned[i].addr);
        addr_copy(&m->admin, &learned[i].admin);
        m->learned = true;
    }
}

void ct_conf_check_fleet(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    struct ct_conf_fleet *fl = &cf->fleet;
    ct_conf_fleet_free_derived(fl); /* a second finish (command-line overrides) */
    fl->self_index = SIZE_MAX;
    if (!fl->self) {
        if (fl->nmembers)
            ERR("fleet.members", "set without fleet.self (expected this node's member name "
                                 "in fleet.self, or no members)");
        return;
    }
    size_t before = errs->n + errs->dropped;
    if (!ct_http_is_token(ct_str_c(fl->hop_header)))
        ERR("fleet.hop_header", "invalid header name \"%s\" (expected a token such as X-Name)",
            fl->hop_header);
    if (fl->token && !ct_conf_token_ok(fl->token, strlen(fl->token)))
        ERR("fleet.token", "not a token (expected 16 to 256 visible ASCII characters, no spaces)");
    if (fl->mirror_ttl_ms % 1000 != 0) /* object lifetimes are whole seconds (RFC 9111) */
        ERR("fleet.mirror_ttl", "%llu ms is not a whole number of seconds (expected 0s, 1s, "
                                "2s, ...)", (unsigned long long)fl->mirror_ttl_ms);
    if (fl->load_factor != 0 && fl->load_factor < 100)
        ERR("fleet.load_factor", "%u is below the mean (expected 0, off, or 100 to 1000)",
            fl->load_factor);
    if (fl->nmembers == 0)
        ERR("fleet.self", "set without fleet.members (expected every node of the fleet, this "
                          "one included)");
    for (size_t i = 0; i < fl->nmembers; i++) {
        const struct ct_conf_fleet_member *m = &fl->members[i];
        char path[96];
        snprintf(path, sizeof(path), "fleet.members[%zu].name", i);
        if (!is_name(m->name))
            ERR(path, "invalid name \"%s\" (expected letters, digits, -, _ or .)", m->name);
        for (size_t k = 0; k < i; k++) {
            if (strcmp(fl->members[k].name, m->name) == 0)
                ERR(path, "\"%s\" is already member %zu's name (expected distinct names)",
                    m->name, k);
            if (fl->members[k].addr.salen == m->addr.salen &&
                memcmp(&fl->members[k].addr.sa, &m->addr.sa, m->addr.salen) == 0) {
                snprintf(path, sizeof(path), "fleet.members[%zu].address", i);
                ERR(path, "%s:%u is already member \"%s\"'s address (expected one address "
                          "per member)", m->addr.host, m->addr.port, fl->members[k].name);
            }
        }
        if (strcmp(m->name, fl->self) == 0)
            fl->self_index = i;
        if (m->tls.on) { /* its files and names, as a backend's (conf_tls.c) */
            struct ct_conf_backend b = {.tls = m->tls};
            ct_conf_check_backend_tls(cf, errs, "fleet.members", i, &b);
        }
    }
    if (fl->nmembers && fl->self_index == SIZE_MAX)
        ERR("fleet.self", "\"%s\" is not a member's name (expected one of fleet.members)",
            fl->self);
    if (fl->learn_members && !fl->redis.host &&
        ct_conf_locs_exact(cf->_locs, "fleet.learn_members"))
        ERR("fleet.learn_members", "true without fleet.redis (expected fleet.redis, through "
                                   "which members register, or learn_members = false)");
    /* Without Redis nothing is learned: the effective value is false, so -T
     * prints what runs, and -t accepts what -T printed (it printed `true`,
     * set explicitly, which the check above refuses). */
    if (!fl->redis.host)
        fl->learn_members = false;
    if (fl->nredis_sentinels && !fl->redis_sentinel)
        ERR("fleet.redis_sentinels", "set without fleet.redis_sentinel (expected the master's "
                                     "name, which these Sentinels watch)");
    if (fl->redis_username && !fl->redis_password)
        ERR("fleet.redis_username", "set without fleet.redis_password (expected the user's "
                                    "password too)");
    if (fl->redis_sentinel_password && !fl->redis_sentinel)
        ERR("fleet.redis_sentinel_password", "set without fleet.redis_sentinel (expected the "
                                             "master's name, asked of the Sentinels)");
    for (size_t i = 0; i < fl->nredis_sentinels; i++) {
        struct ct_conf_addr a = {0};
        char path[64];
        snprintf(path, sizeof(path), "fleet.redis_sentinels[%zu]", i);
        if (ct_conf_parse_addr(fl->redis_sentinels[i], &a) != CT_OK || a.port == 0)
            ERR(path, "\"%s\" is not IP:PORT (expected e.g. 10.0.0.21:26379)",
                fl->redis_sentinels[i]);
        free(a.host);
    }
    if (errs->n + errs->dropped == before) {
        derive_groups(cf);
        derive_sentinels(fl);
    }
}
