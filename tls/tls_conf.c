/*
 * tls/tls_conf.c: the bridge from conf/'s view of an HTTPS listener
 * (struct ct_conf_tls) to struct ct_tls_listener_conf. Kept apart so the
 * rest of ct_tls does not depend on conf/ (its unit tests build without it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "tls/tls.h"

static enum ct_tls_verify verify_of(enum ct_conf_verify v)
{
    switch (v) {
    case CT_CONF_VERIFY_OFF: return CT_TLS_VERIFY_OFF;
    case CT_CONF_VERIFY_OPTIONAL: return CT_TLS_VERIFY_OPTIONAL;
    case CT_CONF_VERIFY_REQUIRED: return CT_TLS_VERIFY_REQUIRED;
    }
    CT_WRONG("unknown ct_conf_verify");
}

struct ct_tls_ctx *ct_tls_ctx_from_conf(const struct ct_conf_tls *t, struct ct_tls_shared *sh,
                                        char *err, size_t errlen)
{
    struct ct_tls_cert_conf *certs = ct_xcalloc(t->ncerts ? t->ncerts : 1, sizeof(*certs));
    for (size_t i = 0; i < t->ncerts; i++) {
        const struct ct_conf_cert *c = &t->certs[i];
        certs[i] = (struct ct_tls_cert_conf){
            .cert_file = c->cert_file,
            .key_file = c->key_file,
            .names = (const char *const *)c->server_names,
            .nnames = c->n_server_names,
            .is_default = c->is_default,
        };
    }
    struct ct_tls_listener_conf cf = {
        .certs = certs,
        .ncerts = t->self_signed ? 0 : t->ncerts,
        .min_version = t->min_version,
        .ciphers = t->ciphers,
        .ciphersuites = t->ciphersuites,
        .groups = t->groups,
        .disable_tickets = !t->session_tickets,
        .disable_session_cache = !t->session_cache,
        .session_cache_size = t->session_cache_size,
        .ktls = t->ktls,
        .disable_h2 = !t->http2,
        .client_ca_file = t->client_verify != CT_CONF_VERIFY_OFF ? t->client_ca : NULL,
        .verify = verify_of(t->client_verify),
        .acme_names = t->acme.directory ? (const char *const *)t->acme.names : NULL,
        .nacme = t->acme.directory ? t->acme.nnames : 0,
        .acme_storage = t->acme.directory ? t->acme.storage : NULL,
    };
    struct ct_tls_ctx *lc = ct_tls_ctx_new(&cf, sh, err, errlen);
    free(certs);
    return lc;
}

struct ct_tls_client *ct_tls_client_from_conf(const struct ct_conf_backend_tls *t, char *err,
                                              size_t errlen)
{
    struct ct_tls_client_conf cf = {
        .verify = t->verify,
        .ca_file = strcmp(t->ca, "system") == 0 ? NULL : t->ca,
        .cert_file = t->cert,
        .key_file = t->key,
        .min_version = t->min_version,
        .ciphers = t->ciphers,
        .ciphersuites = t->ciphersuites,
        .alpn = (const char *const *)t->alpn,
        .nalpn = t->nalpn,
        .session_reuse = t->session_reuse,
    };
    return ct_tls_client_new(&cf, err, errlen);
}
