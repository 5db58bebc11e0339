/*
 * proxy/fleet/fleet_fanout.c: purges and bans over HTTP to the members'
 * admin listeners (fleet_fanout.h).
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proxy/fleet/fleet.h"
#include "proxy/fleet/fleet_fanout.h"

struct peer_admin {
    char *host;
    uint16_t port;
    struct evhttp_connection *conn; /* kept: keep-alive to that admin listener */
};

struct ct_fleet_fanout {
    unsigned magic;
#define CT_FLEET_FANOUT_MAGIC 0xfa40a7e5u
    struct event_base *base;
    const struct ct_conf *(*cf_now)(void *arg);
    void *arg;
    char *hop_header, *hop_value, *admin_token;
    struct peer_admin *admins;
    size_t nadmins;
    struct ct_fleet_fanout_counts n;
};

static void on_http_done(struct evhttp_request *req, void *arg)
{
    const char *who = arg;
    if (!req || evhttp_request_get_response_code(req) == 0)
        CT_WARN("fleet: HTTP fan-out to %s failed", who);
}

/* The admin listener at A's connection slot, made on first use: the members
 * are those of the configuration in force, learned ones included, so their
 * slots are found by address (a reload reorders them); a slot outlives its
 * member (one per address ever used, with its keep-alive connection). */
static struct peer_admin *admin_slot(struct ct_fleet_fanout *f, const struct ct_conf_addr *a)
{
    for (size_t i = 0; i < f->nadmins; i++)
        if (f->admins[i].port == a->port && strcmp(f->admins[i].host, a->host) == 0)
            return &f->admins[i];
    f->admins = ct_xrealloc(f->admins, (f->nadmins + 1) * sizeof(*f->admins));
    struct peer_admin *pa = &f->admins[f->nadmins++];
    *pa = (struct peer_admin){.host = ct_xstrdup(a->host), .port = a->port};
    return pa;
}

size_t ct_fleet_fanout_send(struct ct_fleet_fanout *f, const char *kind, struct ct_str query,
                            struct ct_str expr, size_t *targets)
{
    CT_CHECK_OBJ(f, CT_FLEET_FANOUT_MAGIC);
    size_t sent = 0;
    *targets = 0;
    const struct ct_conf_fleet *fl = &f->cf_now(f->arg)->fleet;
    for (size_t i = 0; i < fl->nmembers; i++) {
        if (i == fl->self_index || !fl->members[i].admin.host)
            continue;
        (*targets)++;
        struct peer_admin *pa = admin_slot(f, &fl->members[i].admin);
        if (!pa->conn) {
            pa->conn = evhttp_connection_base_new(f->base, NULL, pa->host, pa->port);
            if (!pa->conn)
                continue;
            evhttp_connection_set_timeout(pa->conn, 5);
        }
        struct evhttp_request *req = evhttp_request_new(on_http_done, pa->host);
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);
        char hostport[300];
        snprintf(hostport, sizeof(hostport), "%s:%u", pa->host, pa->port);
        evhttp_add_header(h, "Host", hostport);
        evhttp_add_header(h, f->hop_header, f->hop_value); /* applied there, never sent on */
        if (f->admin_token) {
            char auth[300];
            snprintf(auth, sizeof(auth), "Bearer %s", f->admin_token);
            evhttp_add_header(h, "Authorization", auth);
        }
        if (expr.len)
            evbuffer_add(evhttp_request_get_output_buffer(req), expr.p, expr.len);
        char uri[4200];
        snprintf(uri, sizeof(uri), "/%s%s%.*s", kind, query.len ? "?" : "", (int)query.len,
                 query.p ? query.p : "");
        if (evhttp_make_request(pa->conn, req, EVHTTP_REQ_POST, uri) == 0)
            sent++;
    }
    f->n.sent += sent;
    return sent;
}

struct ct_fleet_fanout *ct_fleet_fanout_new(struct event_base *base, const struct ct_conf *cf,
                                            const struct ct_conf *(*cf_now)(void *arg),
                                            void *arg)
{
    const struct ct_conf_fleet *fl = &cf->fleet;
    struct ct_fleet_fanout *f = ct_xcalloc(1, sizeof(*f));
    f->magic = CT_FLEET_FANOUT_MAGIC;
    f->base = base;
    f->cf_now = cf_now;
    f->arg = arg;
    f->hop_header = ct_xstrdup(fl->hop_header);
    struct ct_str hv = ct_fleet_hop_value(fl);
    f->hop_value = ct_xstrndup(hv.p, hv.len);
    const char *tok = ct_conf_admin_token(&cf->admin);
    f->admin_token = tok ? ct_xstrdup(tok) : NULL;
    return f;
}

void ct_fleet_fanout_counts(const struct ct_fleet_fanout *f, struct ct_fleet_fanout_counts *out)
{
    CT_CHECK_OBJ(f, CT_FLEET_FANOUT_MAGIC);
    *out = f->n;
}

void ct_fleet_fanout_free(struct ct_fleet_fanout **fp)
{
    struct ct_fleet_fanout *f = *fp;
    if (!f)
        return;
    CT_CHECK_OBJ(f, CT_FLEET_FANOUT_MAGIC);
    for (size_t i = 0; i < f->nadmins; i++) {
        if (f->admins[i].conn)
            evhttp_connection_free(f->admins[i].conn);
        free(f->admins[i].host);
    }
    free(f->admins);
    free(f->hop_header);
    free(f->hop_value);
    free(f->admin_token);
    f->magic = 0;
    free(f);
    *fp = NULL;
}
