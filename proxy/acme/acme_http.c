/*
 * proxy/acme/acme_http.c: the HTTPS client that talks to the CA, on the
 * main thread's event loop: libevent's evhttp over a bufferevent_openssl,
 * one connection per request (a few requests an hour: no pool worth
 * keeping), names resolved by evdns (never a blocking getaddrinfo on the
 * loop that also serves the admin listener).
 *
 * The CA's certificate is verified: against directory_ca when given (a
 * private CA such as pebble's), else the system's store; the host name (or
 * IP literal) of the URL must match (X509_VERIFY_PARAM_set1_host/_ip_asc).
 *
 * Lifetimes: a request owns its evhttp connection (which owns the
 * bufferevent and the SSL). The connection is freed from a zero timeout
 * after the callback returned: libevent must not free a connection from
 * inside its own request callback. ct_acme_http_free() frees what is still
 * in flight without calling back.
 */
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/buffer.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "proxy/acme/acme.h"

#define HREQ_MAGIC 0xacde1a77u
#define TIMEOUT_S 30
#define MAX_BODY (1u << 20)

struct hreq {
    unsigned magic;
    struct ct_acme_http *h;
    struct evhttp_connection *conn;
    struct event *free_ev;
    ct_acme_http_cb *cb;
    void *arg;
    enum evhttp_request_error herr;
    bool had_error;
    char where[200]; /* "host:port", for errors (a long host is cut) */
    CT_LIST_LINK(hreq) link;
};

struct ct_acme_http {
    struct event_base *base;
    struct evdns_base *dns;
    SSL_CTX *sctx;
    CT_LIST_HEAD(hreq) live;
};

struct ct_acme_http *ct_acme_http_new(struct event_base *base, const char *ca_file, char *err,
                                      size_t errlen)
{
    SSL_CTX *sctx = SSL_CTX_new(TLS_client_method());
    if (sctx == NULL) {
        snprintf(err, errlen, "cannot create a TLS client context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(sctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(sctx, SSL_VERIFY_PEER, NULL);
    int ok = ca_file ? SSL_CTX_load_verify_locations(sctx, ca_file, NULL)
                     : SSL_CTX_set_default_verify_paths(sctx);
    if (ok != 1) {
        char why[200] = "";
        unsigned long e = ERR_get_error();
        if (e)
            ERR_error_string_n(e, why, sizeof(why));
        ERR_clear_error();
        snprintf(err, errlen, "cannot load the CA certificates %s%s%s: %s",
                 ca_file ? "\"" : "(system store)", ca_file ? ca_file : "", ca_file ? "\"" : "",
                 why);
        SSL_CTX_free(sctx);
        return NULL;
    }
    struct ct_acme_http *h = ct_xcalloc(1, sizeof(*h));
    h->base = base;
    h->sctx = sctx;
    h->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                      EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (h->dns == NULL) /* no resolv.conf: numeric hosts still work */
        h->dns = evdns_base_new(base, 0);
    CT_LIST_INIT(&h->live);
    return h;
}

static void hreq_free(struct hreq *hr)
{
    CT_LIST_REMOVE(&hr->h->live, hr, link);
    if (hr->conn)
        evhttp_connection_free(hr->conn);
    if (hr->free_ev)
        event_free(hr->free_ev);
    hr->magic = 0;
    free(hr);
}

void ct_acme_http_free(struct ct_acme_http **hp)
{
    struct ct_acme_http *h = *hp;
    *hp = NULL;
    if (h == NULL)
        return;
    while (!CT_LIST_EMPTY(&h->live))
        hreq_free(CT_LIST_FIRST(&h->live));
    if (h->dns)
        evdns_base_free(h->dns, 0);
    SSL_CTX_free(h->sctx);
    free(h);
}

void ct_acme_http_cancel(struct ct_acme_http *h, void *arg)
{
    for (struct hreq *hr = CT_LIST_FIRST(&h->live), *next; hr; hr = next) {
        next = CT_LIST_NEXT(hr, link);
        if (hr->arg == arg && hr->free_ev == NULL)
            hreq_free(hr); /* evhttp_connection_free drops its request uncalled */
    }
}

static void on_free(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct hreq *hr = arg;
    CT_CHECK_OBJ(hr, HREQ_MAGIC);
    hreq_free(hr);
}

static const char *herr_name(enum evhttp_request_error e)
{
    switch (e) {
    case EVREQ_HTTP_TIMEOUT: return "timed out";
    case EVREQ_HTTP_EOF: return "connection closed before the answer";
    case EVREQ_HTTP_INVALID_HEADER: return "invalid answer";
    case EVREQ_HTTP_BUFFER_ERROR: return "buffer error";
    case EVREQ_HTTP_REQUEST_CANCEL: return "cancelled";
    case EVREQ_HTTP_DATA_TOO_LONG: return "answer too long";
    }
    return "failed";
}

static void on_error(enum evhttp_request_error e, void *arg)
{
    struct hreq *hr = arg;
    CT_CHECK_OBJ(hr, HREQ_MAGIC);
    hr->herr = e;
    hr->had_error = true;
}

/* Why a request got no answer: TLS (verification) first, else libevent's. */
static void why_failed(struct hreq *hr, char *buf, size_t len)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(hr->conn);
    unsigned long e = 0, last = 0;
    while (bev && (e = bufferevent_get_openssl_error(bev)) != 0)
        last = e;
    SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
    long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (vr != X509_V_OK) {
        snprintf(buf, len, "TLS: the CA's certificate does not verify: %s",
                 X509_verify_cert_error_string(vr));
    } else if (last && ERR_GET_LIB(last) != 0) {
        char s[200];
        ERR_error_string_n(last, s, sizeof(s));
        snprintf(buf, len, "TLS: %s", s);
    } else if (last) { /* libevent queues the socket's errno when the connect fails */
        snprintf(buf, len, "cannot connect to %.200s", hr->where);
    } else {
        snprintf(buf, len, "%s%.200s", hr->had_error ? herr_name(hr->herr) : "cannot connect to ",
                 hr->had_error ? "" : hr->where);
    }
    ERR_clear_error();
}

static void on_done(struct evhttp_request *req, void *arg)
{
    struct hreq *hr = arg;
    CT_CHECK_OBJ(hr, HREQ_MAGIC);
    struct ct_acme_resp r = {0};
    char *body = NULL;
    if (req == NULL || evhttp_request_get_response_code(req) == 0) {
        why_failed(hr, r.err, sizeof(r.err));
    } else {
        r.status = evhttp_request_get_response_code(req);
        struct evkeyvalq *hd = evhttp_request_get_input_headers(req);
        r.nonce = evhttp_find_header(hd, "Replay-Nonce");
        r.location = evhttp_find_header(hd, "Location");
        r.retry_after = evhttp_find_header(hd, "Retry-After");
        r.ctype = evhttp_find_header(hd, "Content-Type");
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        r.len = evbuffer_get_length(in);
        body = ct_xmalloc(r.len + 1);
        evbuffer_copyout(in, body, r.len);
        body[r.len] = '\0';
        r.body = body;
    }
    hr->cb(hr->arg, &r);
    free(body);
    /* free the connection once libevent is out of its callback */
    static const struct timeval zero = {0, 0};
    hr->free_ev = evtimer_new(hr->h->base, on_free, hr);
    evtimer_add(hr->free_ev, &zero);
}

int ct_acme_http_req(struct ct_acme_http *h, const char *method, const char *url,
                     const char *body, const char *accept, ct_acme_http_cb *cb, void *arg,
                     char *err, size_t errlen)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
    if (host == NULL || scheme == NULL || strcmp(scheme, "https") != 0) {
        snprintf(err, errlen, "not an https URL: %.200s", url);
        evhttp_uri_free(u);
        return CT_EPROTO;
    }
    int port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : 443;
    char target[2048];
    const char *path = evhttp_uri_get_path(u), *query = evhttp_uri_get_query(u);
    snprintf(target, sizeof(target), "%s%s%s", path && *path ? path : "/", query ? "?" : "",
             query ? query : "");
    SSL *ssl = SSL_new(h->sctx);
    bool ip = strchr(host, ':') || strspn(host, "0123456789.") == strlen(host);
    X509_VERIFY_PARAM *vp = ssl ? SSL_get0_param(ssl) : NULL;
    if (vp == NULL || (ip ? !X509_VERIFY_PARAM_set1_ip_asc(vp, host)
                          : (!X509_VERIFY_PARAM_set1_host(vp, host, 0) ||
                             !SSL_set_tlsext_host_name(ssl, host)))) {
        snprintf(err, errlen, "cannot set up TLS for %s", host);
        SSL_free(ssl);
        evhttp_uri_free(u);
        ERR_clear_error();
        return CT_ETLS;
    }
    /* with CLOSE_ON_FREE a failed creation has freed the SSL already */
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        h->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
    struct evhttp_connection *conn =
        bev ? evhttp_connection_base_bufferevent_new(h->base, h->dns, bev, host,
                                                     (unsigned short)port)
            : NULL;
    if (conn == NULL) {
        if (bev)
            bufferevent_free(bev);
        snprintf(err, errlen, "cannot create a connection to %s", host);
        evhttp_uri_free(u);
        return CT_EIO;
    }
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    evhttp_connection_set_timeout(conn, TIMEOUT_S);
    evhttp_connection_set_max_body_size(conn, MAX_BODY);
    struct hreq *hr = ct_xcalloc(1, sizeof(*hr));
    hr->magic = HREQ_MAGIC;
    hr->h = h;
    hr->conn = conn;
    hr->cb = cb;
    hr->arg = arg;
    snprintf(hr->where, sizeof(hr->where), "%s:%d", host, port);
    CT_LIST_INSERT_HEAD(&h->live, hr, link);
    struct evhttp_request *req = evhttp_request_new(on_done, hr);
    evhttp_request_set_error_cb(req, on_error);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    char hosthdr[300];
    if (evhttp_uri_get_port(u) > 0)
        snprintf(hosthdr, sizeof(hosthdr), "%s:%d", host, port);
    else
        snprintf(hosthdr, sizeof(hosthdr), "%s", host);
    evhttp_add_header(out, "Host", hosthdr);
    evhttp_add_header(out, "User-Agent", "cachet (ACME client)");
    evhttp_add_header(out, "Connection", "close");
    if (accept)
        evhttp_add_header(out, "Accept", accept);
    enum evhttp_cmd_type cmd = EVHTTP_REQ_GET;
    if (strcmp(method, "POST") == 0) {
        cmd = EVHTTP_REQ_POST;
        evhttp_add_header(out, "Content-Type", "application/jose+json");
        evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
    } else if (strcmp(method, "HEAD") == 0) {
        cmd = EVHTTP_REQ_HEAD;
    }
    evhttp_uri_free(u);
    if (evhttp_make_request(conn, req, cmd, target) != 0) {
        /* libevent freed REQ */
        snprintf(err, errlen, "cannot send the request to %s", host);
        hreq_free(hr);
        return CT_EIO;
    }
    return CT_OK;
}
