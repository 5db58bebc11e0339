/*
 * conf/conf_acme.c: the cross-checks of listen[].tls.acme (proxy/acme/
 * orders the certificates, docs/acme.md): everything that can be judged
 * offline, so `cachet -t` catches it before a CA is ever asked.
 *   - the directory is an https:// URL with a host (RFC 8555 §7.1.1: the
 *     directory is fetched over HTTPS; plain http only for a loopback test
 *     CA is not worth a hole);
 *   - names: given, or every site's hosts; no wildcard (a wildcard needs
 *     DNS-01, RFC 8555 §8.4, which cachet does not answer), no IP literal;
 *   - challenges: the words tls-alpn-01 and http-01, at least one, http-01
 *     only with an http listener to answer it;
 *   - storage: an existing writable directory, or one whose parent is
 *     writable (created at start, 0700);
 *   - directory_ca: a readable PEM certificate.
 * Derived: challenge_mask.
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf_int.h"

#define ACME_ERR(cf, errs, path, ...)                                                         \
    ct_conf_err((errs), ct_conf_locs_find((cf)->_locs, (path), (cf)->source), (path), __VA_ARGS__)

static void check_directory(const struct ct_conf *cf, struct ct_conf_errors *errs,
                            const char *pfx, const char *url)
{
    char path[128];
    snprintf(path, sizeof(path), "%s.directory", pfx);
    const char *host = strncmp(url, "https://", 8) == 0 ? url + 8 : NULL;
    bool ok = host && *host && *host != '/' && *host != ':';
    for (const char *p = url; ok && *p; p++)
        ok = *p > 0x20 && *p < 0x7f;
    if (!ok)
        ACME_ERR(cf, errs, path, "\"%s\" is not an https URL (expected "
                                 "\"https://HOST[:PORT]/PATH\", such as "
                                 "\"https://acme-v02.api.letsencrypt.org/directory\")", url);
}

static bool is_ip_literal(const char *s)
{
    return strspn(s, "0123456789.") == strlen(s) || strchr(s, ':') != NULL;
}

/* One name: a DNS name for which a CA can validate the challenges. */
static void check_name(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *path,
                       const char *name)
{
    if (strncmp(name, "*.", 2) == 0)
        ACME_ERR(cf, errs, path, "wildcard \"%s\": a wildcard certificate needs the DNS-01 "
                                 "challenge, which cachet does not answer (expected exact names, "
                                 "or certificates = ( ... ) for the wildcard)", name);
    else if (is_ip_literal(name) || strchr(name, '.') == NULL)
        ACME_ERR(cf, errs, path, "\"%s\" is not a public DNS name (expected a name such as "
                                 "\"www.example.com\"; a CA validates no IP address or single "
                                 "label)", name);
}

/* Without names, every site's hosts (the names clients will ask for). */
static void default_names(struct ct_conf *cf, struct ct_conf_acme *a)
{
    size_t n = 0;
    for (size_t s = 0; s < cf->nsites; s++)
        n += cf->sites[s].nhosts;
    a->names = ct_xcalloc(n ? n : 1, sizeof(*a->names));
    for (size_t s = 0; s < cf->nsites; s++)
        for (size_t h = 0; h < cf->sites[s].nhosts; h++)
            a->names[a->nnames++] = ct_xstrdup(cf->sites[s].hosts[h]);
}

static void check_names(struct ct_conf *cf, struct ct_conf_errors *errs, const char *pfx,
                        struct ct_conf_acme *a)
{
    char path[128];
    snprintf(path, sizeof(path), "%s.names", pfx);
    bool given = a->nnames > 0;
    if (!given) {
        free(a->names);
        default_names(cf, a);
    }
    if (a->nnames == 0)
        ACME_ERR(cf, errs, path, "no names, and no site has hosts to take them from (expected "
                                 "names = [\"www.example.com\"])");
    for (size_t i = 0; i < a->nnames; i++) {
        char ipath[160];
        if (given)
            snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
        else
            snprintf(ipath, sizeof(ipath), "%s (from the sites' hosts)", path);
        check_name(cf, errs, given ? ipath : path, a->names[i]);
        for (size_t k = 0; k < i; k++)
            if (strcmp(a->names[k], a->names[i]) == 0) {
                ACME_ERR(cf, errs, given ? ipath : path, "\"%s\" named twice", a->names[i]);
                break;
            }
    }
}

static void check_challenges(struct ct_conf *cf, struct ct_conf_errors *errs, const char *pfx,
                             struct ct_conf_acme *a)
{
    char path[128];
    snprintf(path, sizeof(path), "%s.challenges", pfx);
    a->challenge_mask = 0;
    for (size_t i = 0; i < a->nchallenges; i++) {
        if (strcmp(a->challenges[i], "tls-alpn-01") == 0)
            a->challenge_mask |= CT_CONF_ACME_TLS_ALPN;
        else if (strcmp(a->challenges[i], "http-01") == 0)
            a->challenge_mask |= CT_CONF_ACME_HTTP;
        else
            ACME_ERR(cf, errs, path, "unknown challenge \"%s\" (expected \"tls-alpn-01\" or "
                                     "\"http-01\"; dns-01 is not supported)", a->challenges[i]);
    }
    if (a->nchallenges == 0)
        ACME_ERR(cf, errs, path, "empty (expected \"tls-alpn-01\", \"http-01\" or both)");
    bool http = false;
    for (size_t i = 0; i < cf->nlisteners; i++)
        http |= cf->listeners[i].kind == CT_CONF_LISTEN_HTTP;
    if (a->challenge_mask == CT_CONF_ACME_HTTP && !http)
        ACME_ERR(cf, errs, path, "http-01 alone, but no http listener answers it (expected an "
                                 "http listener, or \"tls-alpn-01\")");
}

static void check_storage(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *pfx,
                          const char *dir)
{
    char path[128];
    snprintf(path, sizeof(path), "%s.storage", pfx);
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            ACME_ERR(cf, errs, path, "\"%s\" is not a directory (expected a directory for "
                                     "keys and certificates)", dir);
        else if (access(dir, W_OK | X_OK) != 0)
            ACME_ERR(cf, errs, path, "\"%s\" is not writable: %s (expected a directory this "
                                     "user may write)", dir, strerror(errno));
        return;
    }
    if (errno != ENOENT) {
        ACME_ERR(cf, errs, path, "\"%s\": %s", dir, strerror(errno));
        return;
    }
    char *parent = ct_path_dir(dir);
    if (access(parent, W_OK | X_OK) != 0)
        ACME_ERR(cf, errs, path, "\"%s\" does not exist and cannot be created in \"%s\": %s "
                                 "(expected a writable directory)", dir, parent, strerror(errno));
    free(parent);
}

static void check_ca(const struct ct_conf *cf, struct ct_conf_errors *errs, const char *pfx,
                     const char *file)
{
    char path[128];
    snprintf(path, sizeof(path), "%s.directory_ca", pfx);
    FILE *fp = fopen(file, "r");
    if (!fp) {
        ACME_ERR(cf, errs, path, "cannot read \"%s\": %s (expected a PEM CA file)", file,
                 strerror(errno));
        return;
    }
    X509 *x = PEM_read_X509(fp, NULL, NULL, NULL);
    fclose(fp);
    if (!x)
        ACME_ERR(cf, errs, path, "no certificate in \"%s\" (expected a PEM CA file)", file);
    X509_free(x);
    ERR_clear_error();
}

void ct_conf_check_acme(struct ct_conf *cf, struct ct_conf_errors *errs)
{
    for (size_t i = 0; i < cf->nlisteners; i++) {
        struct ct_conf_acme *a = &cf->listeners[i].tls.acme;
        if (cf->listeners[i].kind != CT_CONF_LISTEN_HTTPS || a->directory == NULL)
            continue;
        char pfx[64];
        snprintf(pfx, sizeof(pfx), "listen[%zu].tls.acme", i);
        check_directory(cf, errs, pfx, a->directory);
        check_names(cf, errs, pfx, a);
        check_challenges(cf, errs, pfx, a);
        check_storage(cf, errs, pfx, a->storage);
        if (a->directory_ca)
            check_ca(cf, errs, pfx, a->directory_ca);
    }
}
