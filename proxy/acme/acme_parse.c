/*
 * proxy/acme/acme_parse.c: reading the CA's JSON (RFC 8555 §7.1): the
 * directory, orders, authorizations and their challenges, and problem
 * documents (RFC 7807 / RFC 8555 §6.7). Pure: no I/O, no logging, no
 * allocation that outlives a call except the structs' own strings; every
 * field is checked for its type, so a CA answering garbage gives an error
 * in words, never a crash (tests/fuzz/fuzz_acme_parse.c).
 *
 * json-c (libjson-c5, docs/acme.md says why): json_tokener_parse_ex with an
 * explicit length, so a body without a NUL terminator is fine.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/acme/acme.h"

#define MAX_BODY (1u << 20) /* a CA's JSON is a few KiB */

static json_object *parse(const char *body, size_t len)
{
    if (len == 0 || len > MAX_BODY)
        return NULL;
    json_tokener *tok = json_tokener_new();
    if (tok == NULL)
        return NULL;
    json_object *o = json_tokener_parse_ex(tok, body, (int)len);
    if (o != NULL && json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    if (o != NULL && !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* A member that must be a string; a copy, or NULL. */
static char *str_of(json_object *o, const char *key)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    if (memchr(s, '\0', n) != NULL)
        return NULL; /* no embedded NUL may cut a URL short */
    return ct_xstrdup(s);
}

static void set_err(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s", what);
}

int ct_acme_parse_directory(const char *body, size_t len, struct ct_acme_directory *d, char *err,
                            size_t errlen)
{
    memset(d, 0, sizeof(*d));
    json_object *o = parse(body, len);
    if (o == NULL) {
        set_err(err, errlen, "the directory is not a JSON object");
        return CT_EPROTO;
    }
    d->new_nonce = str_of(o, "newNonce");
    d->new_account = str_of(o, "newAccount");
    d->new_order = str_of(o, "newOrder");
    json_object *meta;
    if (json_object_object_get_ex(o, "meta", &meta) && json_object_is_type(meta, json_type_object))
        d->terms = str_of(meta, "termsOfService");
    json_object_put(o);
    if (!d->new_nonce || !d->new_account || !d->new_order) {
        set_err(err, errlen, "the directory lacks newNonce, newAccount or newOrder");
        ct_acme_directory_free(d);
        return CT_EPROTO;
    }
    return CT_OK;
}

void ct_acme_directory_free(struct ct_acme_directory *d)
{
    free(d->new_nonce);
    free(d->new_account);
    free(d->new_order);
    free(d->terms);
    memset(d, 0, sizeof(*d));
}

static const char *const status_names[] = {
    [CT_ACME_PENDING] = "pending", [CT_ACME_READY] = "ready",   [CT_ACME_PROCESSING] = "processing",
    [CT_ACME_VALID] = "valid",     [CT_ACME_INVALID] = "invalid", [CT_ACME_OTHER] = "other",
};

const char *ct_acme_status_name(enum ct_acme_status s)
{
    return (unsigned)s < CT_ARRAY_LEN(status_names) ? status_names[s] : "?";
}

static enum ct_acme_status status_of(json_object *o)
{
    json_object *v;
    if (!json_object_object_get_ex(o, "status", &v) || !json_object_is_type(v, json_type_string))
        return CT_ACME_OTHER;
    const char *s = json_object_get_string(v);
    for (size_t i = 0; i < CT_ARRAY_LEN(status_names); i++)
        if (i != CT_ACME_OTHER && strcmp(s, status_names[i]) == 0)
            return (enum ct_acme_status)i;
    return CT_ACME_OTHER; /* "deactivated", "expired", "revoked": not usable */
}

static void problem_of(json_object *o, struct ct_acme_problem *p)
{
    p->type = str_of(o, "type");
    p->detail = str_of(o, "detail");
}

int ct_acme_parse_order(const char *body, size_t len, struct ct_acme_order *od, char *err,
                        size_t errlen)
{
    memset(od, 0, sizeof(*od));
    json_object *o = parse(body, len), *v, *e;
    if (o == NULL) {
        set_err(err, errlen, "the order is not a JSON object");
        return CT_EPROTO;
    }
    od->status = status_of(o);
    od->finalize = str_of(o, "finalize");
    od->certificate = str_of(o, "certificate");
    if (json_object_object_get_ex(o, "error", &e) && json_object_is_type(e, json_type_object))
        problem_of(e, &od->error);
    bool ok = od->finalize != NULL && od->status != CT_ACME_OTHER;
    if (ok && json_object_object_get_ex(o, "authorizations", &v) &&
        json_object_is_type(v, json_type_array)) {
        size_t n = json_object_array_length(v);
        od->authz = ct_xcalloc(n ? n : 1, sizeof(*od->authz));
        for (size_t i = 0; i < n && i < CT_ACME_MAX_AUTHZ; i++) {
            json_object *a = json_object_array_get_idx(v, i);
            if (!json_object_is_type(a, json_type_string)) {
                ok = false;
                break;
            }
            od->authz[od->nauthz++] = ct_xstrdup(json_object_get_string(a));
        }
    } else {
        ok = false;
    }
    json_object_put(o);
    if (!ok) {
        set_err(err, errlen, "the order lacks a status, finalize or authorizations");
        ct_acme_order_free(od);
        return CT_EPROTO;
    }
    return CT_OK;
}

void ct_acme_order_free(struct ct_acme_order *od)
{
    for (size_t i = 0; i < od->nauthz; i++)
        free(od->authz[i]);
    free(od->authz);
    free(od->finalize);
    free(od->certificate);
    ct_acme_problem_free(&od->error);
    memset(od, 0, sizeof(*od));
}

int ct_acme_parse_authz(const char *body, size_t len, struct ct_acme_authz *az, char *err,
                        size_t errlen)
{
    memset(az, 0, sizeof(*az));
    json_object *o = parse(body, len), *v, *id;
    if (o == NULL) {
        set_err(err, errlen, "the authorization is not a JSON object");
        return CT_EPROTO;
    }
    az->status = status_of(o);
    if (json_object_object_get_ex(o, "identifier", &id) && json_object_is_type(id, json_type_object))
        az->name = str_of(id, "value");
    bool ok = az->name != NULL;
    if (ok && json_object_object_get_ex(o, "challenges", &v) &&
        json_object_is_type(v, json_type_array)) {
        size_t n = json_object_array_length(v);
        az->chal = ct_xcalloc(n ? n : 1, sizeof(*az->chal));
        for (size_t i = 0; i < n && i < CT_ACME_MAX_CHAL; i++) {
            json_object *c = json_object_array_get_idx(v, i), *e;
            if (!json_object_is_type(c, json_type_object))
                continue;
            struct ct_acme_chal *ch = &az->chal[az->nchal];
            ch->type = str_of(c, "type");
            ch->url = str_of(c, "url");
            ch->token = str_of(c, "token");
            ch->status = status_of(c);
            if (json_object_object_get_ex(c, "error", &e) && json_object_is_type(e, json_type_object))
                problem_of(e, &ch->error);
            if (ch->type && ch->url) {
                az->nchal++;
            } else {
                ct_acme_chal_free(ch);
            }
        }
    } else {
        ok = false;
    }
    json_object_put(o);
    if (!ok) {
        set_err(err, errlen, "the authorization lacks an identifier or challenges");
        ct_acme_authz_free(az);
        return CT_EPROTO;
    }
    return CT_OK;
}

void ct_acme_chal_free(struct ct_acme_chal *ch)
{
    free(ch->type);
    free(ch->url);
    free(ch->token);
    ct_acme_problem_free(&ch->error);
    memset(ch, 0, sizeof(*ch));
}

void ct_acme_authz_free(struct ct_acme_authz *az)
{
    for (size_t i = 0; i < az->nchal; i++)
        ct_acme_chal_free(&az->chal[i]);
    free(az->chal);
    free(az->name);
    memset(az, 0, sizeof(*az));
}

bool ct_acme_parse_problem(const char *body, size_t len, struct ct_acme_problem *p)
{
    memset(p, 0, sizeof(*p));
    json_object *o = parse(body, len);
    if (o == NULL)
        return false;
    problem_of(o, p);
    json_object_put(o);
    if (p->type == NULL) {
        ct_acme_problem_free(p);
        return false;
    }
    return true;
}

void ct_acme_problem_free(struct ct_acme_problem *p)
{
    free(p->type);
    free(p->detail);
    p->type = p->detail = NULL;
}

bool ct_acme_token_ok(const char *token)
{
    /* RFC 8555 §8.1: base64url characters only; it becomes a URL path
     * segment and a file-free lookup key, so nothing else may pass */
    size_t n = token ? strlen(token) : 0;
    if (n < 16 || n > 256)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = token[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}
