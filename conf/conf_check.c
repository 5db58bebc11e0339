/*
 * conf/conf_check.c: what no single row can judge. Runs after every field is
 * read (twemproxy's conf_post_validate), and again after the command-line
 * overrides, on the complete struct ct_conf:
 *   - derived values: admin.enabled, backend names, the default certificate;
 *   - cross-checks: listeners sharing an address, an HTTPS listener without a
 *     certificate, mTLS settings that need each other, no backend, an object
 *     cap above the cache size, header names that are not tokens, ...;
 *   - the files named by the TLS settings (conf_tls.c).
 * Errors are located through the struct's location table, so they point at
 * the line of the file (or the command-line option) that set the value.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf_int.h"
#include "http/http.h"

static const char *loc(const struct ct_conf *cf, const char *path)
{
    return ct_conf_locs_find(cf->_locs, path, cf->source);
}

const char *ct_conf_where(const struct ct_conf *cf, const char *path)
{
    return loc(cf, path);
}

#define CHECK_ERR(cf, errs, path, ...) ct_conf_err((errs), loc((cf), (path)), (path), __VA_ARGS__)

/* RFC 9110 5.1: field-name = token. */
static bool is_token(const char *s)
{
    return s && ct_http_is_token(ct_str_c(s));
}

static void check_token(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *path,
                        const char *value)
{
    if (value && !is_token(value))
        CHECK_ERR(cf, errs, path, "invalid header name \"%s\" (expected a token such as X-Name)",
                  value);
}

/* ---- listeners ------------------------------------------------------------ */

static bool is_wildcard(const struct ct_conf_addr *a)
{
    static const uint8_t zero[16];
    if (a->sa.ss_family == AF_INET)
        return ((const struct sockaddr_in *)&a->sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    return memcmp(&((const struct sockaddr_in6 *)&a->sa)->sin6_addr, zero, 16) == 0;
}

/* Would binding both fail (or split traffic oddly under SO_REUSEPORT)? Port 0
 * never clashes: each bind gets its own free port. */
static bool addr_clash(const struct ct_conf_addr *a, const struct ct_conf_addr *b)
{
    if (!a->host || !b->host || a->port == 0 || a->port != b->port ||
        a->sa.ss_family != b->sa.ss_family)
        return false;
    return ct_conf_addr_eq(a, b) || is_wildcard(a) || is_wildcard(b);
}

struct named_addr {
    const struct ct_conf_addr *addr;
    char path[64];
};

static void check_addresses(const struct ct_conf *cf, struct ct_conf_errors *errs)
{
    size_t n = cf->nlisteners + 1;
    struct named_addr *v = ct_xcalloc(n, sizeof(*v));
    for (size_t i = 0; i < cf->nlisteners; i++) {
        v[i].addr = &cf->listeners[i].addr;
        snprintf(v[i].path, sizeof(v[i].path), "listen[%zu].address", i);
    }
    v[n - 1].addr = &cf->admin.addr;
    snprintf(v[n - 1].path, sizeof(v[n - 1].path), "admin.listen");
    for (size_t i = 1; i < n; i++) {
        for (size_t j = 0; j < i; j++) {
            if (!addr_clash(v[i].addr, v[j].addr))
                continue;
            char a[80];
            ct_conf_fmt_addr(v[i].addr, a, sizeof(a));
            CHECK_ERR(cf, errs, v[i].path,
                      "address %s is already used by %s at %s (expected a distinct IP:PORT)", a,
                      v[j].path, loc(cf, v[j].path));
            break;
        }
    }
    free(v);
}

static void check_certs(struct ct_conf *cf, size_t i, struct ct_conf_errors *errs)
{
    struct ct_conf_tls *t = &cf->listeners[i].tls;
    char path[96];
    if (t->ncerts == 0 && !t->self_signed && !t->acme.directory) {
        snprintf(path, sizeof(path), "listen[%zu].tls.certificates", i);
        CHECK_ERR(cf, errs, path, "https listener without a certificate (expected "
                                  "certificates = ( { cert = \"...\"; key = \"...\"; } ), "
                                  "self_signed = true, or acme = { ... })");
    }
    if (t->ncerts > 0 && t->self_signed) {
        snprintf(path, sizeof(path), "listen[%zu].tls.self_signed", i);
        CHECK_ERR(cf, errs, path, "set together with certificates (expected one or the other)");
    }
    size_t ndefault = 0;
    for (size_t k = 0; k < t->ncerts; k++) {
        if (t->certs[k].is_default && ++ndefault == 2) {
            snprintf(path, sizeof(path), "listen[%zu].tls.certificates[%zu].default", i, k);
            CHECK_ERR(cf, errs, path, "a second default certificate (expected at most one)");
        }
    }
    /* nginx's rule: without an explicit default, the first one is it */
    if (ndefault == 0 && t->ncerts > 0)
        t->certs[0].is_default = true;
}

static void check_mtls(const struct ct_conf *cf, size_t i, struct ct_conf_errors *errs)
{
    const struct ct_conf_tls *t = &cf->listeners[i].tls;
    char path[96];
    if (t->client_verify != CT_CONF_VERIFY_OFF && !t->client_ca) {
        snprintf(path, sizeof(path), "listen[%zu].tls.client_verify", i);
        CHECK_ERR(cf, errs, path, "client certificates verified against nothing (expected "
                                  "client_ca = \"FILE\" with it)");
    }
    if (t->client_verify == CT_CONF_VERIFY_OFF && t->client_ca) {
        snprintf(path, sizeof(path), "listen[%zu].tls.client_ca", i);
        CHECK_ERR(cf, errs, path, "set while client_verify is \"off\" (expected client_verify "
                                  "= \"optional\" or \"required\")");
    }
    if (t->client_verify == CT_CONF_VERIFY_OFF && t->client_subject_header) {
        snprintf(path, sizeof(path), "listen[%zu].tls.client_subject_header", i);
        CHECK_ERR(cf, errs, path, "set while client_verify is \"off\" (expected client_verify "
                                  "= \"optional\" or \"required\")");
    }
    snprintf(path, sizeof(path), "listen[%zu].tls.client_subject_header", i);
    check_token(cf, errs, path, t->client_subject_header);
}

static void check_listeners(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    bool any_https = false;
    if (cf->nlisteners == 0)
        CHECK_ERR(cf, errs, "listen", "no listener (expected at least one "
                                      "{ kind = \"http\"; address = \"IP:PORT\"; })");
    for (size_t i = 0; i < cf->nlisteners; i++)
        any_https |= cf->listeners[i].kind == CT_CONF_LISTEN_HTTPS;
    for (size_t i = 0; i < cf->nlisteners; i++) {
        const struct ct_conf_listener *l = &cf->listeners[i];
        char path[96];
        snprintf(path, sizeof(path), "listen[%zu].proxy_protocol_from", i);
        if (l->proxy_protocol && l->nproxy_protocol_from == 0)
            CHECK_ERR(cf, errs, path, "empty while proxy_protocol is on (expected the load "
                                      "balancers' prefixes, such as [\"10.0.0.0/8\"])");
        if (l->nproxy_protocol_from > 16) /* CT_LISTEN_PP_MAX */
            CHECK_ERR(cf, errs, path, "%zu prefixes (expected at most 16)",
                      l->nproxy_protocol_from);
        if (l->kind == CT_CONF_LISTEN_HTTPS) {
            check_certs(cf, i, errs);
            check_mtls(cf, i, errs);
        } else if (l->redirect_to_https && l->redirect_port == 0 && !any_https) {
            snprintf(path, sizeof(path), "listen[%zu].redirect_to_https", i);
            CHECK_ERR(cf, errs, path, "no https listener to redirect to (expected an https "
                                      "listener, or redirect_port)");
        }
    }
    check_addresses(cf, errs);
}

/* ---- backends, cache ------------------------------------------------------ */

void ct_conf_check_backend_list(struct ct_conf *cf, struct ct_conf_errors *errs,
                                const char *prefix, struct ct_conf_backend *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct ct_conf_backend *b = &v[i];
        char path[160];
        if (b->name[0] == '\0') {
            char name[300];
            bool v6 = strchr(b->host, ':') != NULL;
            snprintf(name, sizeof(name), "%s%s%s:%u", v6 ? "[" : "", b->host, v6 ? "]" : "",
                     (unsigned)b->port);
            free(b->name);
            b->name = ct_xstrdup(name);
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(v[j].name, b->name) == 0) {
                snprintf(path, sizeof(path), "%s[%zu].name", prefix, i);
                CHECK_ERR(cf, errs, path, "\"%s\" is already the name of %s[%zu] "
                                          "(expected a distinct name)", b->name, prefix, j);
                break;
            }
        }
        b->passive_fail_mask = 0;
        for (size_t k = 0; k < b->n_passive_fail_on; k++) {
            static const char *const kinds[] = {
#define CT_CONF_FAIL_NAME(id, name) [CT_CONF_FAIL_##id] = name,
                CT_CONF_FAIL_TABLE(CT_CONF_FAIL_NAME)
#undef CT_CONF_FAIL_NAME
            };
            size_t f = 0;
            while (f < CT_ARRAY_LEN(kinds) && strcmp(kinds[f], b->passive_fail_on[k]) != 0)
                f++;
            if (f < CT_ARRAY_LEN(kinds)) {
                b->passive_fail_mask |= 1u << f;
                continue;
            }
            snprintf(path, sizeof(path), "%s[%zu].passive_fail_on", prefix, i);
            CHECK_ERR(cf, errs, path, "unknown failure \"%s\" (expected \"connect\", "
                                      "\"timeout\", \"reset\", \"invalid\" or \"5xx\")",
                      b->passive_fail_on[k]);
        }
        if (b->health.path[0] != '/') {
            snprintf(path, sizeof(path), "%s[%zu].health_check.path", prefix, i);
            CHECK_ERR(cf, errs, path, "invalid request target \"%s\" (expected a path "
                                      "starting with /)", b->health.path);
        }
        ct_conf_check_backend_tls(cf, errs, prefix, i, b);
    }
}

static void check_backends(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    if (cf->nbackends == 0)
        CHECK_ERR(cf, errs, "backends", "no backend (expected at least one "
                                        "{ address = \"HOST:PORT\"; })");
    ct_conf_check_backend_list(cf, errs, "backends", cf->backends, cf->nbackends);
}

/* cache.persist: written at every graceful stop, so its directory must
 * take a new file (the snapshot is a temporary file renamed over it); a
 * wrong path found at the stop would lose the cache it was meant to keep. */
static void check_persist(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *file)
{
    struct stat st;
    if (stat(file, &st) == 0 && !S_ISREG(st.st_mode)) {
        CHECK_ERR(cf, errs, "cache.persist", "\"%s\" is not a regular file (expected a file "
                  "name for the snapshot)", file);
        return;
    }
    char *dir = ct_path_dir(file);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        CHECK_ERR(cf, errs, "cache.persist", "directory \"%s\" of \"%s\" does not exist "
                  "(expected an existing directory this user may write)", dir, file);
    else if (access(dir, W_OK | X_OK) != 0)
        CHECK_ERR(cf, errs, "cache.persist", "directory \"%s\" of \"%s\" is not writable: %s "
                  "(expected a directory this user may write)", dir, file, strerror(errno));
    free(dir);
}

static void check_cache(const struct ct_conf *cf, struct ct_conf_errors *errs)
{
    const struct ct_conf_cache *c = &cf->cache;
    if (c->persist)
        check_persist(cf, errs, c->persist);
    if (c->max_object_bytes > c->size_bytes) {
        char a[32], b[32];
        ct_conf_fmt_size(c->max_object_bytes, a, sizeof(a));
        ct_conf_fmt_size(c->size_bytes, b, sizeof(b));
        /* blame whichever of the two was written; the object cap first */
        const char *where = ct_conf_locs_exact(cf->_locs, "cache.max_object_size");
        if (!where)
            where = ct_conf_locs_exact(cf->_locs, "cache.size");
        ct_conf_err(errs, where ? where : loc(cf, "cache.max_object_size"),
                    "cache.max_object_size",
                    "%s is larger than the whole cache, cache.size = %s (expected at most "
                    "cache.size)", a, b);
    }
    check_token(cf, errs, "cache.key_header", c->key_header);
    for (size_t i = 0; i < c->ntag_headers; i++) {
        /* (each is a token: the loader checked) the proxy recognises tag fields among the fields its header table
         * does not know, so a pass response pays nothing for them */
        if (ct_hdr_lookup(ct_str_c(c->tag_headers[i])) != CT_HDR_UNKNOWN)
            CHECK_ERR(cf, errs, "cache.tag_headers",
                      "\"%s\" is a standard field, not a tag field (expected a name such as "
                      "Surrogate-Key or X-Tags)",
                      c->tag_headers[i]);
    }
    check_token(cf, errs, "cache.targeted_cache_control", c->targeted_cc);
    /* RFC 9213 targeted fields are fields of their own; the pass path tells
     * them (and tags) apart from the standard fields it knows by id */
    if (is_token(c->targeted_cc) && ct_hdr_lookup(ct_str_c(c->targeted_cc)) != CT_HDR_UNKNOWN &&
        ct_hdr_lookup(ct_str_c(c->targeted_cc)) != CT_HDR_CDN_CACHE_CONTROL)
        CHECK_ERR(cf, errs, "cache.targeted_cache_control",
                  "\"%s\" is a standard field (expected a targeted field name such as "
                  "Cachet-Cache-Control, RFC 9213)",
                  c->targeted_cc);
}

/* ---- compression ------------------------------------------------------------ */

/* compression.prefer: known codings, each once, into the server order the
 * negotiation uses (http/http_ae.h). */
static void check_compression(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    struct ct_conf_compression *cz = &cf->compression;
    memset(&cz->pref, 0, sizeof(cz->pref));
    for (size_t i = 0; i < cz->nprefer; i++) {
        char path[64];
        snprintf(path, sizeof(path), "compression.prefer[%zu]", i);
        enum ct_coding c = ct_coding_lookup(ct_str_c(cz->prefer[i]));
        /* the names as the reference gives them: "x-gzip" is a request's alias */
        if (c < 0 || strcmp(ct_coding_name(c), cz->prefer[i]) != 0)
            CHECK_ERR(cf, errs, path, "unknown coding \"%s\" (expected \"zstd\", \"br\", "
                                      "\"gzip\" or \"identity\")", cz->prefer[i]);
        else if (ct_ae_pref_add(&cz->pref, c) != CT_OK)
            CHECK_ERR(cf, errs, path, "\"%s\" is listed twice (expected each coding once)",
                      cz->prefer[i]);
    }
}

/* ---- admin ----------------------------------------------------------------- */

static bool is_loopback(const struct ct_conf_addr *a)
{
    static const uint8_t one[16] = {[15] = 1};
    if (a->sa.ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)&a->sa)->sin_addr.s_addr) >> 24) == 127;
    return memcmp(&((const struct sockaddr_in6 *)&a->sa)->sin6_addr, one, 16) == 0;
}

bool ct_conf_token_matches(const char *token, struct ct_str got)
{
    unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)got.p, got.len, a);
    SHA256((const unsigned char *)token, strlen(token), b);
    return CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

/* A token goes in an Authorization field: visible ASCII, and long enough
 * not to be guessed by a script. */
bool ct_conf_token_ok(const char *t, size_t len)
{
    if (len < 16 || len > CT_CONF_TOKEN_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (t[i] <= ' ' || t[i] > '~')
            return false;
    return true;
}

#define TOKEN_RULE "16 to 256 visible ASCII characters, no spaces"

static void read_token_file(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    struct ct_conf_admin *a = &cf->admin;
    FILE *fp = fopen(a->token_file, "r");
    char line[CT_CONF_TOKEN_MAX + 3];
    if (fp == NULL) {
        CHECK_ERR(cf, errs, "admin.token_file", "cannot read \"%s\": %s", a->token_file,
                  strerror(errno));
        return;
    }
    size_t n = fgets(line, sizeof(line), fp) ? strcspn(line, "\r\n") : 0;
    fclose(fp);
    if (!ct_conf_token_ok(line, n)) {
        CHECK_ERR(cf, errs, "admin.token_file",
                  "the first line of \"%s\" is not a token (expected " TOKEN_RULE ")",
                  a->token_file);
        return;
    }
    memcpy(a->file_token, line, n);
    a->file_token[n] = '\0';
}

static void check_admin(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    struct ct_conf_admin *a = &cf->admin;
    a->file_token[0] = '\0';
    if (a->token && a->token_file)
        CHECK_ERR(cf, errs, "admin.token_file", "set together with admin.token (expected one)");
    else if (a->token && !ct_conf_token_ok(a->token, strlen(a->token)))
        CHECK_ERR(cf, errs, "admin.token", "not a token (expected " TOKEN_RULE ")");
    else if (a->token_file)
        read_token_file(cf, errs);
    /* Purges and bans from anywhere on the network need a credential. */
    if (a->enabled && !is_loopback(&a->addr) && ct_conf_admin_token(a) == NULL &&
        !a->token_file)
        CHECK_ERR(cf, errs, "admin.listen",
                  "%s is beyond loopback without admin.token or admin.token_file (expected a "
                  "127.0.0.0/8 or ::1 address, or a token)",
                  a->addr.host);
}

int ct_conf_finish(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    size_t before = errs->n + errs->dropped;
    cf->admin.enabled = cf->admin.addr.host != NULL;
    check_listeners(cf, errs);
    check_backends(cf, errs);
    ct_conf_check_fleet(cf, errs);
    ct_conf_check_routes(cf, errs);
    /* an unset max_object_size follows the cache, at the default's ratio
     * (1/16): setting only cache.size must not fail on a key never written */
    if (ct_conf_locs_exact(cf->_locs, "cache.max_object_size") == NULL)
        cf->cache.max_object_bytes = cf->cache.size_bytes / 16;
    check_cache(cf, errs);
    check_compression(cf, errs);
    check_admin(cf, errs);
    if (cf->logs.error_log[0] == '\0')
        CHECK_ERR(cf, errs, "logs.error_log", "empty (expected a file name, or \"-\")");
    ct_conf_check_tls_files(cf, errs);
    ct_conf_check_acme(cf, errs);
    return errs->n + errs->dropped == before ? CT_OK : CT_ECONF;
}
