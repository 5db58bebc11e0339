/*
 * proxy/acme/acme.c: the ACME client's orders (RFC 8555 §7), one job per
 * name, on the main thread's loop.
 *
 * An issuer is one listener's tls.acme: its CA, account key, account URL
 * (kid), directory and the last nonce the CA gave. A job is one name: one
 * certificate, ordered alone, so a name that cannot validate never holds
 * the others back. A job's steps, one request in flight at a time:
 *
 *   directory -> account -> newOrder -> (authz -> challenge -> poll authz)*
 *     -> finalize -> poll order -> certificate -> stored, installed, and a
 *     renewal timer
 *
 * Any POST needs a nonce (§7.2): the issuer's last Replay-Nonce, else one
 * from HEAD newNonce first. A badNonce problem (§6.5) is retried at once
 * with the nonce of the error response, up to BAD_NONCE_MAX times in a row (pebble
 * rejects 5 % of good nonces by default, PEBBLE_WFE_NONCEREJECT more).
 *
 * Failure anywhere (no answer, a problem document, an invalid
 * authorization, garbage) ends the attempt: logged with the step and the
 * CA's problem type and detail, the challenge answers withdrawn, and the
 * next attempt scheduled with exponential backoff (1 min doubling to 6 h,
 * as certmagic; at least the CA's Retry-After). The certificate already
 * served stays served until it expires.
 *
 * Renewal: when renew_before (default a third of the lifetime) is left,
 * minus a jitter of up to a tenth of that (at most an hour), so many names
 * issued together do not all renew in the same second.
 */
#include <errno.h>
#include <stdarg.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "conf/conf.h"
#include "proxy/acme/acme_int.h"
#include "tls/tls.h"

#define JOB_MAGIC 0xac3e0b01u
#define BAD_NONCE_MAX 10
#define POLL_MAX 120         /* polls of one authorization or order (about 2 min) */
#define BACKOFF_MIN_S 60.0   /* certmagic: 1, 2, ... minutes */
#define BACKOFF_MAX_S 21600.0 /* ... up to 6 h */
#define PEM_CHAIN "application/pem-certificate-chain"

enum step {
    ST_IDLE,
    ST_DIRECTORY,
    ST_NONCE,
    ST_ACCOUNT,
    ST_NEW_ORDER,
    ST_AUTHZ,
    ST_CHALLENGE,
    ST_POLL_AUTHZ,
    ST_FINALIZE,
    ST_POLL_ORDER,
    ST_CERT,
};

static const char *const step_doing[] = {
    [ST_IDLE] = "waiting",
    [ST_DIRECTORY] = "reading the directory",
    [ST_NONCE] = "getting a nonce",
    [ST_ACCOUNT] = "creating the account",
    [ST_NEW_ORDER] = "placing the order",
    [ST_AUTHZ] = "reading the authorization",
    [ST_CHALLENGE] = "answering the challenge",
    [ST_POLL_AUTHZ] = "waiting for the validation",
    [ST_FINALIZE] = "finalizing the order",
    [ST_POLL_ORDER] = "waiting for the certificate",
    [ST_CERT] = "downloading the certificate",
};

struct issuer {
    const struct ct_conf_acme *cf; /* = &own */
    struct ct_conf_acme own;       /* a copy: a reload frees the configuration */
    struct ct_acme_http *http;
    EVP_PKEY *key;
    char *jwk, *thumb;
    char *kid; /* the account URL; NULL until created */
    struct ct_acme_directory dir;
    bool have_dir;
    char *nonce; /* the last Replay-Nonce, unused; NULL: none */
};

struct job {
    unsigned magic;
    struct ct_acme *a;
    struct issuer *is;
    char *name;
    enum step st;
    struct event *timer;
    /* the attempt */
    char *order_url;
    struct ct_acme_order order;
    size_t authz_i;
    char *chal_url, *token; /* the challenge answered; token for HTTP-01 */
    bool alpn;              /* the challenge was TLS-ALPN-01 */
    EVP_PKEY *cert_key;
    unsigned polls, bad_nonces;
    /* the request in flight, kept for a badNonce retry */
    enum step req_st;
    char *req_url, *req_payload;
    /* what /stats shows */
    const char *state, *outcome;
    char detail[512];
    char challenge[16];
    double not_after, next;
    uint64_t orders, failures, installs;
    unsigned backoff_n;
};

struct ct_acme {
    struct event_base *base;
    struct ct_tls_chal *chal;
    ct_acme_install_fn *install;
    void *install_arg;
    struct issuer **issuers;
    size_t nissuers;
    struct job **jobs;
    size_t njobs;
};

static void step_start(struct job *j);
static void post(struct job *j, enum step st, const char *url, const char *payload);

/* ---- scheduling ----------------------------------------------------------------- */

static void schedule(struct job *j, double at)
{
    double now = ct_time_real(), d = at > now ? at - now : 0;
    struct timeval tv = {(time_t)d, (suseconds_t)((d - (double)(time_t)d) * 1e6)};
    j->next = now + d;
    evtimer_add(j->timer, &tv);
}

static double jitter_upto(double s)
{
    unsigned r = 0;
    RAND_bytes((unsigned char *)&r, sizeof(r));
    return s * ((double)r / 4294967296.0);
}

/* When the certificate valid NB..NA is to be renewed. */
static double renew_at(const struct job *j, double nb, double na)
{
    double rb = j->is->cf->renew_before_ms ? (double)j->is->cf->renew_before_ms / 1000.0
                                           : (na - nb) / 3.0;
    if (rb >= na - nb) {
        /* renew_before longer than the lifetime (a 90-day setting with
         * 45-day certificates) would order again at once, every time, into
         * the CA's rate limits: a third of the lifetime instead */
        CT_WARN("acme %s: renew_before (%.0f s) is not shorter than the certificate's lifetime "
                "(%.0f s); renewing when a third is left", j->name, rb, na - nb);
        rb = (na - nb) / 3.0;
    }
    double jit = rb / 10.0 > 3600.0 ? 3600.0 : rb / 10.0;
    return na - rb - jitter_upto(jit);
}

static void fmt_in(double s, char *buf, size_t len)
{
    if (s < 120)
        snprintf(buf, len, "%.0fs", s);
    else if (s < 7200)
        snprintf(buf, len, "%.0fm", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%.1fh", s / 3600);
    else
        snprintf(buf, len, "%.1fd", s / 86400);
}

/* ---- the end of an attempt ------------------------------------------------------ */

static void withdraw(struct job *j)
{
    if (j->token)
        ct_tls_chal_http_del(j->a->chal, j->token);
    if (j->alpn)
        ct_tls_chal_alpn_del(j->a->chal, j->name);
    free(j->token);
    free(j->chal_url);
    j->token = j->chal_url = NULL;
    j->alpn = false;
}

static void attempt_reset(struct job *j)
{
    withdraw(j);
    free(j->order_url);
    j->order_url = NULL;
    ct_acme_order_free(&j->order);
    EVP_PKEY_free(j->cert_key);
    j->cert_key = NULL;
    free(j->req_url);
    free(j->req_payload);
    j->req_url = j->req_payload = NULL;
    j->polls = j->bad_nonces = 0;
    j->st = ST_IDLE;
}

static double retry_after_s(const char *v)
{
    if (v == NULL)
        return 0;
    char *end;
    double s = strtod(v, &end);
    if (end != v && *end == '\0' && s >= 0 && s < 86400 * 7)
        return s;
    return 0; /* an HTTP-date: the backoff decides */
}

/* The attempt failed: say why, withdraw, back off. */
static void CT_PRINTF(3, 4) fail(struct job *j, const char *retry_after, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->detail, sizeof(j->detail), fmt, ap);
    va_end(ap);
    enum step st = j->st;
    attempt_reset(j);
    j->failures++;
    j->outcome = "failed";
    j->state = "waiting";
    double d = BACKOFF_MIN_S;
    for (unsigned i = 0; i < j->backoff_n && d < BACKOFF_MAX_S; i++)
        d *= 2;
    if (d > BACKOFF_MAX_S)
        d = BACKOFF_MAX_S;
    j->backoff_n++;
    double ra = retry_after_s(retry_after);
    if (ra > d)
        d = ra;
    char in[32];
    fmt_in(d, in, sizeof(in));
    CT_ERR("acme %s: order failed while %s: %s; attempt %u failed, next in %s", j->name,
           step_doing[st], j->detail, j->backoff_n, in);
    schedule(j, ct_time_real() + d);
}

/* The problem document of a failed answer, in words. */
static void fail_resp(struct job *j, const struct ct_acme_resp *r)
{
    if (r->status == 0) {
        fail(j, NULL, "no answer from the CA: %s", r->err);
        return;
    }
    struct ct_acme_problem p;
    if (ct_acme_parse_problem(r->body, r->len, &p)) {
        fail(j, r->retry_after, "HTTP %d, problem %s: %s", r->status, p.type,
             p.detail ? p.detail : "(no detail)");
        ct_acme_problem_free(&p);
    } else {
        fail(j, r->retry_after, "HTTP %d without a problem document", r->status);
    }
}

/* ---- requests -------------------------------------------------------------------- */

static void on_resp(void *arg, const struct ct_acme_resp *r);

static void http(struct job *j, const char *method, const char *url, const char *body,
                 const char *accept)
{
    char err[256];
    if (ct_acme_http_req(j->is->http, method, url, body, accept, on_resp, j, err,
                         sizeof(err)) != CT_OK)
        fail(j, NULL, "%s", err);
}

static void send_post(struct job *j)
{
    struct issuer *is = j->is;
    char *nonce = is->nonce;
    is->nonce = NULL;
    char *jws = ct_acme_jws(is->key, is->jwk, j->req_st == ST_ACCOUNT ? NULL : is->kid, nonce,
                            j->req_url, j->req_payload);
    free(nonce);
    if (jws == NULL) {
        fail(j, NULL, "cannot sign the request (OpenSSL)");
        return;
    }
    j->st = j->req_st;
    http(j, "POST", j->req_url, jws, j->req_st == ST_CERT ? PEM_CHAIN : NULL);
    free(jws);
}

/* A JWS POST of PAYLOAD to URL ("" is POST-as-GET), for step ST. */
static void post(struct job *j, enum step st, const char *url, const char *payload)
{
    char *u = ct_xstrdup(url), *p = ct_xstrdup(payload);
    free(j->req_url);
    free(j->req_payload);
    j->req_url = u;
    j->req_payload = p;
    j->req_st = st;
    if (j->is->nonce != NULL) {
        send_post(j);
        return;
    }
    j->st = ST_NONCE;
    http(j, "HEAD", j->is->dir.new_nonce, NULL, NULL);
}

static void poll_later(struct job *j, enum step st, const char *retry_after)
{
    if (++j->polls > POLL_MAX) {
        fail(j, NULL, "still %s after %u polls", st == ST_POLL_AUTHZ ? "not validated"
                                                                       : "not issued", POLL_MAX);
        return;
    }
    double d = retry_after_s(retry_after);
    d = d < 1 ? 1 : d > 60 ? 60 : d;
    j->st = st;
    j->next = 0;
    struct timeval tv = {(time_t)d, 0};
    evtimer_add(j->timer, &tv);
}

/* ---- steps ------------------------------------------------------------------------- */

static char *json_payload(json_object *o)
{
    char *s = ct_xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
    return s;
}

static void do_account(struct job *j)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "termsOfServiceAgreed", json_object_new_boolean(1));
    if (j->is->cf->email) {
        char mail[512];
        snprintf(mail, sizeof(mail), "mailto:%s", j->is->cf->email);
        json_object *c = json_object_new_array();
        json_object_array_add(c, json_object_new_string(mail));
        json_object_object_add(o, "contact", c);
    }
    char *p = json_payload(o);
    post(j, ST_ACCOUNT, j->is->dir.new_account, p);
    free(p);
}

static void do_new_order(struct job *j)
{
    json_object *o = json_object_new_object(), *ids = json_object_new_array(),
                *id = json_object_new_object();
    json_object_object_add(id, "type", json_object_new_string("dns"));
    json_object_object_add(id, "value", json_object_new_string(j->name));
    json_object_array_add(ids, id);
    json_object_object_add(o, "identifiers", ids);
    char *p = json_payload(o);
    double left = j->not_after - ct_time_real();
    if (j->not_after > 0 && left > 0)
        CT_INFO("acme %s: renewing: ordering a certificate from %s (the current one expires "
                "in %.0f s)", j->name, j->is->cf->directory, left);
    else
        CT_INFO("acme %s: ordering a certificate from %s", j->name, j->is->cf->directory);
    j->orders++;
    post(j, ST_NEW_ORDER, j->is->dir.new_order, p);
    free(p);
}

static void do_finalize(struct job *j)
{
    j->cert_key = EVP_EC_gen("P-256");
    char *csr = j->cert_key ? ct_acme_csr(j->cert_key, j->name) : NULL;
    if (csr == NULL) {
        fail(j, NULL, "cannot make the key or CSR (OpenSSL)");
        return;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "csr", json_object_new_string(csr));
    free(csr);
    char *p = json_payload(o);
    post(j, ST_FINALIZE, j->order.finalize, p);
    free(p);
}

/* The next authorization of the order, or finalize when all are valid. */
static void next_authz(struct job *j)
{
    if (j->authz_i < j->order.nauthz) {
        j->polls = 0;
        post(j, ST_AUTHZ, j->order.authz[j->authz_i], "");
        return;
    }
    do_finalize(j);
}

/* Set up the answer to the first challenge we take, in the configured
 * order of preference, and tell the CA (§7.5.1). */
static void answer(struct job *j, const struct ct_acme_authz *az)
{
    const struct ct_conf_acme *cf = j->is->cf;
    for (size_t k = 0; k < cf->nchallenges; k++) {
        for (size_t i = 0; i < az->nchal; i++) {
            const struct ct_acme_chal *c = &az->chal[i];
            if (strcmp(c->type, cf->challenges[k]) != 0)
                continue;
            if (!ct_acme_token_ok(c->token)) {
                fail(j, NULL, "the CA's %s token is not base64url", c->type);
                return;
            }
            char *ka = ct_acme_keyauth(c->token, j->is->thumb);
            char err[256];
            if (strcmp(c->type, "http-01") == 0) {
                ct_tls_chal_http_set(j->a->chal, c->token, ka);
                j->token = ct_xstrdup(c->token);
            } else if (ct_tls_chal_alpn_set(j->a->chal, j->name, ka, err, sizeof(err)) == CT_OK) {
                j->alpn = true;
            } else {
                free(ka);
                fail(j, NULL, "%s", err);
                return;
            }
            free(ka);
            snprintf(j->challenge, sizeof(j->challenge), "%s", c->type);
            j->chal_url = ct_xstrdup(c->url);
            CT_INFO("acme %s: answering %s", j->name, c->type);
            post(j, ST_CHALLENGE, c->url, "{}");
            return;
        }
    }
    fail(j, NULL, "the CA offers none of the configured challenges");
}

/* Why an authorization is invalid: its challenges' problems. */
static void fail_authz(struct job *j, const struct ct_acme_authz *az)
{
    for (size_t i = 0; i < az->nchal; i++)
        if (az->chal[i].error.type) {
            fail(j, NULL, "authorization %s: %s problem %s: %s", ct_acme_status_name(az->status),
                 az->chal[i].type, az->chal[i].error.type,
                 az->chal[i].error.detail ? az->chal[i].error.detail : "(no detail)");
            return;
        }
    fail(j, NULL, "authorization %s", ct_acme_status_name(az->status));
}

static void on_authz(struct job *j, const struct ct_acme_resp *r, bool polling)
{
    struct ct_acme_authz az;
    char err[256];
    if (ct_acme_parse_authz(r->body, r->len, &az, err, sizeof(err)) != CT_OK) {
        fail(j, NULL, "%s", err);
        return;
    }
    switch (az.status) {
    case CT_ACME_VALID:
        if (polling)
            CT_INFO("acme %s: %s validated", j->name, j->challenge);
        withdraw(j);
        j->authz_i++;
        next_authz(j);
        break;
    case CT_ACME_PENDING:
    case CT_ACME_PROCESSING:
        if (polling)
            poll_later(j, ST_POLL_AUTHZ, r->retry_after);
        else
            answer(j, &az);
        break;
    default: fail_authz(j, &az); break;
    }
    ct_acme_authz_free(&az);
}

static void on_order(struct job *j, const struct ct_acme_resp *r)
{
    ct_acme_order_free(&j->order);
    char err[256];
    if (ct_acme_parse_order(r->body, r->len, &j->order, err, sizeof(err)) != CT_OK) {
        fail(j, NULL, "%s", err);
        return;
    }
    switch (j->order.status) {
    case CT_ACME_VALID:
        if (j->order.certificate == NULL) {
            fail(j, NULL, "the order is valid without a certificate URL");
            return;
        }
        post(j, ST_CERT, j->order.certificate, "");
        break;
    case CT_ACME_PROCESSING: poll_later(j, ST_POLL_ORDER, r->retry_after); break;
    case CT_ACME_READY:
        if (j->st == ST_NEW_ORDER) {
            do_finalize(j); /* every authorization already valid (reused) */
            break;
        }
        poll_later(j, ST_POLL_ORDER, r->retry_after);
        break;
    case CT_ACME_PENDING:
        if (j->st == ST_NEW_ORDER) {
            j->authz_i = 0;
            next_authz(j);
            break;
        }
        fail(j, NULL, "the order went back to pending");
        break;
    default:
        if (j->order.error.type)
            fail(j, NULL, "order invalid: problem %s: %s", j->order.error.type,
                 j->order.error.detail ? j->order.error.detail : "(no detail)");
        else
            fail(j, NULL, "order %s", ct_acme_status_name(j->order.status));
    }
}

/* The chain arrived: store it with its key, install it, plan the renewal. */
static void on_cert(struct job *j, const struct ct_acme_resp *r)
{
    double nb, na;
    size_t klen = 0;
    char *kpem = ct_acme_key_pem(j->cert_key, &klen);
    if (kpem == NULL || ct_acme_cert_times(r->body, r->len, &nb, &na) != CT_OK) {
        free(kpem);
        fail(j, NULL, "the certificate download is not a PEM certificate");
        return;
    }
    const char *storage = j->is->cf->storage;
    char dir[4096], path[4200], err[512];
    snprintf(dir, sizeof(dir), "%s/%s", storage, j->name);
    int rc = ct_acme_mkdirs(dir, err, sizeof(err));
    if (rc == CT_OK) {
        snprintf(path, sizeof(path), "%s/key.pem", dir);
        rc = ct_acme_write_file(path, kpem, klen, err, sizeof(err));
    }
    if (rc == CT_OK) {
        snprintf(path, sizeof(path), "%s/cert.pem", dir);
        rc = ct_acme_write_file(path, r->body, r->len, err, sizeof(err));
    }
    if (rc != CT_OK) /* served from memory all the same; ordered again at restart */
        CT_ERR("acme %s: cannot store the new certificate: %s", j->name, err);
    j->a->install(j->a->install_arg, j->name, r->body, r->len, kpem, klen);
    OPENSSL_cleanse(kpem, klen);
    free(kpem);
    attempt_reset(j);
    j->installs++;
    j->not_after = na;
    j->outcome = "issued";
    j->state = "valid";
    j->detail[0] = '\0';
    j->backoff_n = 0;
    double at = renew_at(j, nb, na);
    char in[32];
    fmt_in(at - ct_time_real(), in, sizeof(in));
    CT_INFO("acme %s: certificate issued and installed, valid for %.0f s; renewal in %s",
            j->name, na - ct_time_real(), in);
    schedule(j, at);
}

static void on_resp(void *arg, const struct ct_acme_resp *r)
{
    struct job *j = arg;
    CT_CHECK_OBJ(j, JOB_MAGIC);
    struct issuer *is = j->is;
    if (r->nonce) {
        free(is->nonce);
        is->nonce = ct_xstrdup(r->nonce);
    }
    if (j->st == ST_NONCE) {
        if (is->nonce == NULL) {
            fail(j, NULL, "newNonce gave no Replay-Nonce (%s)", r->status ? "HTTP" : r->err);
            return;
        }
        send_post(j);
        return;
    }
    if (r->status >= 400 || r->status == 0) {
        struct ct_acme_problem p;
        bool bad_nonce = r->status == 400 && ct_acme_parse_problem(r->body, r->len, &p);
        if (bad_nonce) {
            bad_nonce = strcmp(p.type, "urn:ietf:params:acme:error:badNonce") == 0;
            ct_acme_problem_free(&p);
        }
        if (bad_nonce && ++j->bad_nonces <= BAD_NONCE_MAX) {
            CT_INFO("acme %s: the CA refused the nonce (badNonce) while %s; retrying with "
                    "its new one", j->name, step_doing[j->st]);
            post(j, j->req_st, j->req_url, j->req_payload);
            return;
        }
        fail_resp(j, r);
        return;
    }
    /* The bound is on refusals in a row: a CA that refuses a few nonces over
     * an order's twenty-odd POSTs (pebble: 5 %, the test 30 %) must not
     * fail it; one that refuses every nonce still does. */
    j->bad_nonces = 0;
    char err[256];
    switch (j->st) {
    case ST_DIRECTORY:
        ct_acme_directory_free(&is->dir);
        if (ct_acme_parse_directory(r->body, r->len, &is->dir, err, sizeof(err)) != CT_OK) {
            fail(j, NULL, "%s", err);
            return;
        }
        is->have_dir = true;
        step_start(j);
        return;
    case ST_ACCOUNT:
        if (r->location == NULL) {
            fail(j, NULL, "the new account has no Location");
            return;
        }
        free(is->kid);
        is->kid = ct_xstrdup(r->location);
        CT_INFO("acme: account %s", is->kid);
        step_start(j);
        return;
    case ST_NEW_ORDER:
        if (r->location == NULL) {
            fail(j, NULL, "the new order has no Location");
            return;
        }
        free(j->order_url);
        j->order_url = ct_xstrdup(r->location);
        on_order(j, r);
        return;
    case ST_AUTHZ: on_authz(j, r, false); return;
    case ST_POLL_AUTHZ: on_authz(j, r, true); return;
    case ST_CHALLENGE: poll_later(j, ST_POLL_AUTHZ, r->retry_after); return;
    case ST_FINALIZE:
    case ST_POLL_ORDER: on_order(j, r); return;
    case ST_CERT: on_cert(j, r); return;
    case ST_IDLE:
    case ST_NONCE: break;
    }
    CT_WRONG("acme: answer in an unexpected step");
}

/* From the timer: begin (or continue) the attempt. */
static void step_start(struct job *j)
{
    struct issuer *is = j->is;
    if (!is->have_dir) {
        j->st = ST_DIRECTORY;
        http(j, "GET", is->cf->directory, NULL, NULL);
    } else if (is->kid == NULL) {
        do_account(j);
    } else {
        do_new_order(j);
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct job *j = arg;
    CT_CHECK_OBJ(j, JOB_MAGIC);
    switch (j->st) {
    case ST_POLL_AUTHZ: post(j, ST_POLL_AUTHZ, j->order.authz[j->authz_i], ""); return;
    case ST_POLL_ORDER: post(j, ST_POLL_ORDER, j->order_url, ""); return;
    default: break;
    }
    j->state = "ordering";
    j->next = 0;
    step_start(j);
}

/* ---- start ------------------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s ? ct_xstrdup(s) : NULL;
}

static char **dup_list(char *const *v, size_t n)
{
    char **out = ct_xcalloc(n ? n : 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] = ct_xstrdup(v[i]);
    return out;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void own_free(struct ct_conf_acme *c)
{
    free(c->directory);
    free(c->email);
    free(c->storage);
    free(c->directory_ca);
    free_list(c->names, c->nnames);
    free_list(c->challenges, c->nchallenges);
}

static bool issuer_init(struct ct_acme *a, struct issuer *is, const struct ct_conf_acme *src)
{
    char err[512], path[4200];
    is->own = *src;
    is->own.directory = dup_or_null(src->directory);
    is->own.email = dup_or_null(src->email);
    is->own.storage = dup_or_null(src->storage);
    is->own.directory_ca = dup_or_null(src->directory_ca);
    is->own.names = dup_list(src->names, src->nnames);
    is->own.challenges = dup_list(src->challenges, src->nchallenges);
    is->cf = &is->own;
    const struct ct_conf_acme *cf = is->cf;
    if (ct_acme_mkdirs(cf->storage, err, sizeof(err)) != CT_OK)
        CT_ERR("acme: %s; certificates will not survive a restart", err);
    snprintf(path, sizeof(path), "%s/account.key", cf->storage);
    size_t len = 0;
    char *pem = ct_acme_read_file(path, &len);
    if (pem) {
        is->key = ct_acme_key_from_pem(pem, len);
        if (is->key == NULL)
            CT_ERR("acme: \"%s\" holds no usable key; using a new account key", path);
        OPENSSL_cleanse(pem, len);
        free(pem);
    }
    if (is->key == NULL) {
        is->key = EVP_EC_gen("P-256");
        pem = is->key ? ct_acme_key_pem(is->key, &len) : NULL;
        if (pem == NULL) {
            CT_ERR("acme: cannot make an account key (OpenSSL)");
            return false;
        }
        if (ct_acme_write_file(path, pem, len, err, sizeof(err)) != CT_OK)
            CT_ERR("acme: %s; the account key lives in memory only", err);
        OPENSSL_cleanse(pem, len);
        free(pem);
    }
    is->jwk = ct_acme_jwk(is->key);
    is->thumb = is->jwk ? ct_acme_thumbprint(is->jwk) : NULL;
    is->http = ct_acme_http_new(a->base, cf->directory_ca, err, sizeof(err));
    if (is->thumb == NULL || is->http == NULL) {
        CT_ERR("acme: %s", is->http ? "cannot compute the account key's JWK" : err);
        return false;
    }
    return true;
}

/* A stored certificate still valid: installed by tls/ when the listener was
 * built; here it only sets the renewal. */
static void job_load(struct job *j)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s/cert.pem", j->is->cf->storage, j->name);
    size_t len = 0;
    char *pem = ct_acme_read_file(path, &len);
    double nb, na, now = ct_time_real();
    j->state = "ordering";
    if (pem == NULL) {
        CT_INFO("acme %s: no stored certificate; ordering one", j->name);
        schedule(j, now);
        return;
    }
    if (ct_acme_cert_times(pem, len, &nb, &na) != CT_OK) {
        CT_ERR("acme %s: stored certificate \"%s\" is unreadable; ordering a new one", j->name,
               path);
        schedule(j, now);
    } else if (na <= now) {
        CT_WARN("acme %s: stored certificate expired; ordering a new one", j->name);
        schedule(j, now);
    } else {
        j->not_after = na;
        j->outcome = "stored";
        j->state = "valid";
        double at = renew_at(j, nb, na);
        char in[32];
        fmt_in(at > now ? at - now : 0, in, sizeof(in));
        CT_INFO("acme %s: using the stored certificate (valid %.0f s more); renewal in %s",
                j->name, na - now, in);
        schedule(j, at);
    }
    free(pem);
}

/* An issuer for AC: an existing one with the same CA and storage (the
 * account is the same), else a new one. NULL when it cannot start. */
static struct issuer *issuer_for(struct ct_acme *a, const struct ct_conf_acme *ac)
{
    for (size_t i = 0; i < a->nissuers; i++) {
        struct issuer *is = a->issuers[i];
        if (strcmp(is->cf->directory, ac->directory) == 0 &&
            strcmp(is->cf->storage, ac->storage) == 0)
            return is->http ? is : NULL;
    }
    struct issuer *is = ct_xcalloc(1, sizeof(*is));
    a->issuers = ct_xrealloc(a->issuers, (a->nissuers + 1) * sizeof(*a->issuers));
    a->issuers[a->nissuers++] = is;
    return issuer_init(a, is, ac) ? is : NULL; /* logged; its names keep the placeholder */
}

static struct job *job_find(const struct ct_acme *a, const char *name)
{
    for (size_t m = 0; m < a->njobs; m++)
        if (strcmp(a->jobs[m]->name, name) == 0)
            return a->jobs[m];
    return NULL;
}

/* Jobs for the names of CF's listeners that have none yet; a name already
 * ordered keeps its job (and an order in flight) whatever else changed. */
static void add_names(struct ct_acme *a, const struct ct_conf *cf)
{
    for (size_t i = 0; i < cf->nlisteners; i++) {
        const struct ct_conf_acme *ac = &cf->listeners[i].tls.acme;
        if (cf->listeners[i].kind != CT_CONF_LISTEN_HTTPS || ac->directory == NULL)
            continue;
        struct issuer *is = NULL;
        for (size_t k = 0; k < ac->nnames; k++) {
            if (job_find(a, ac->names[k]))
                continue; /* ordered once, installed wherever it is served */
            if (is == NULL && (is = issuer_for(a, ac)) == NULL)
                break;
            CT_INFO("acme %s: certificates from %s, challenges in this order: %s%s%s",
                    ac->names[k], ac->directory, ac->challenges[0], ac->nchallenges > 1 ? ", " : "",
                    ac->nchallenges > 1 ? ac->challenges[1] : "");
            struct job *j = ct_xcalloc(1, sizeof(*j));
            j->magic = JOB_MAGIC;
            j->a = a;
            j->is = is;
            j->name = ct_xstrdup(ac->names[k]);
            j->outcome = "none";
            j->state = "none";
            j->timer = evtimer_new(a->base, on_timer, j);
            a->jobs = ct_xrealloc(a->jobs, (a->njobs + 1) * sizeof(*a->jobs));
            a->jobs[a->njobs++] = j;
            job_load(j);
        }
    }
}

struct ct_acme *ct_acme_new(struct event_base *base, const struct ct_conf *cf,
                            struct ct_tls_chal *chal, ct_acme_install_fn *install, void *arg)
{
    bool any = false;
    for (size_t i = 0; i < cf->nlisteners; i++)
        any |= cf->listeners[i].kind == CT_CONF_LISTEN_HTTPS && cf->listeners[i].tls.acme.directory;
    if (!any)
        return NULL;
    struct ct_acme *a = ct_xcalloc(1, sizeof(*a));
    a->base = base;
    a->chal = chal;
    a->install = install;
    a->install_arg = arg;
    add_names(a, cf);
    return a;
}

static void job_free(struct job *j)
{
    attempt_reset(j);
    if (j->timer)
        event_free(j->timer);
    free(j->name);
    j->magic = 0;
    free(j);
}

static bool conf_has_name(const struct ct_conf *cf, const char *name)
{
    for (size_t i = 0; i < cf->nlisteners; i++) {
        const struct ct_conf_acme *ac = &cf->listeners[i].tls.acme;
        for (size_t k = 0; cf->listeners[i].kind == CT_CONF_LISTEN_HTTPS && ac->directory &&
                           k < ac->nnames;
             k++)
            if (strcmp(ac->names[k], name) == 0)
                return true;
    }
    return false;
}

void ct_acme_update(struct ct_acme *a, const struct ct_conf *cf)
{
    for (size_t m = 0; m < a->njobs;) {
        struct job *j = a->jobs[m];
        if (conf_has_name(cf, j->name)) {
            m++;
            continue;
        }
        CT_INFO("acme %s: no longer configured; its orders and renewals stop", j->name);
        if (j->st != ST_IDLE) /* a request in flight calls back into the job: let it go */
            ct_acme_http_cancel(j->is->http, j);
        job_free(j);
        a->jobs[m] = a->jobs[--a->njobs];
    }
    add_names(a, cf);
}

void ct_acme_free(struct ct_acme **ap)
{
    struct ct_acme *a = *ap;
    *ap = NULL;
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->nissuers; i++) /* no callback after this */
        ct_acme_http_free(&a->issuers[i]->http);
    for (size_t m = 0; m < a->njobs; m++)
        job_free(a->jobs[m]);
    for (size_t i = 0; i < a->nissuers; i++) {
        struct issuer *is = a->issuers[i];
        EVP_PKEY_free(is->key);
        free(is->jwk);
        free(is->thumb);
        free(is->kid);
        free(is->nonce);
        ct_acme_directory_free(&is->dir);
        own_free(&is->own);
        free(is);
    }
    free(a->issuers);
    free(a->jobs);
    free(a);
}

size_t ct_acme_each(const struct ct_acme *a, ct_acme_info_fn *fn, void *arg)
{
    for (size_t m = 0; a && m < a->njobs; m++) {
        const struct job *j = a->jobs[m];
        struct ct_acme_info in = {
            .name = j->name,
            .state = j->state,
            .outcome = j->outcome,
            .detail = j->detail,
            .challenge = j->challenge,
            .not_after = j->not_after,
            .next = j->next,
            .orders = j->orders,
            .failures = j->failures,
            .installs = j->installs,
        };
        fn(&in, arg);
    }
    return a ? a->njobs : 0;
}
