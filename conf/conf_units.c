/*
 * conf/conf_units.c: the value syntaxes of the config file and command line
 * (sizes, durations, addresses, CIDR prefixes, server names), their exact
 * inverse for `cachet -T`, and the error/location helpers.
 *
 * Every parser takes a whole NUL-terminated string and either accepts all of
 * it or returns CT_ECONF: "10s " or "1G0" are errors, never a prefix match.
 * Every formatter prints something its parser reads back to the same value.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"
#include "http/http.h"

/* ---- errors ----------------------------------------------------------- */

void ct_conf_errors_init(struct ct_conf_errors *errs)
{
    memset(errs, 0, sizeof(*errs));
}

void ct_conf_errors_print(const struct ct_conf_errors *errs, FILE *fp)
{
    for (size_t i = 0; i < errs->n; i++)
        fprintf(fp, "%s\n", errs->msg[i]);
    if (errs->dropped)
        fprintf(fp, "(%zu more errors)\n", errs->dropped);
}

void ct_conf_err(struct ct_conf_errors *errs, const char *where, const char *path,
                 const char *fmt, ...)
{
    if (errs->n >= CT_CONF_MAX_ERRORS) {
        errs->dropped++;
        return;
    }
    char *m = errs->msg[errs->n++];
    int k = path ? snprintf(m, CT_CONF_ERR_LEN, "%s: %s: ", where, path)
                 : snprintf(m, CT_CONF_ERR_LEN, "%s: ", where);
    if (k < 0 || k >= CT_CONF_ERR_LEN)
        return; /* truncated: still a located message */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m + k, CT_CONF_ERR_LEN - (size_t)k, fmt, ap);
    va_end(ap);
}

/* ---- locations ---------------------------------------------------------- */

bool ct_conf_path_under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    /* "listen[1]" is under "listen[1]" and "listen[1].x", not "listen[10]" */
    return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '.');
}

void ct_conf_locs_set(struct ct_conf_locs *locs, const char *path, const char *where)
{
    for (size_t i = 0; i < locs->n; i++) {
        if (strcmp(locs->v[i].path, path) == 0) {
            free(locs->v[i].where);
            locs->v[i].where = ct_xstrdup(where);
            return;
        }
    }
    if (locs->n == locs->cap) {
        locs->cap = locs->cap ? locs->cap * 2 : 64;
        locs->v = ct_xrealloc(locs->v, locs->cap * sizeof(*locs->v));
    }
    locs->v[locs->n].path = ct_xstrdup(path);
    locs->v[locs->n].where = ct_xstrdup(where);
    locs->n++;
}

static const char *locs_exact(const struct ct_conf_locs *locs, const char *path, size_t len)
{
    for (size_t i = 0; locs && i < locs->n; i++)
        if (strlen(locs->v[i].path) == len && strncmp(locs->v[i].path, path, len) == 0)
            return locs->v[i].where;
    return NULL;
}

const char *ct_conf_locs_exact(const struct ct_conf_locs *locs, const char *path)
{
    return locs_exact(locs, path, strlen(path));
}

const char *ct_conf_locs_find(const struct ct_conf_locs *locs, const char *path,
                              const char *fallback)
{
    size_t len = strlen(path);
    for (;;) {
        const char *w = locs_exact(locs, path, len);
        if (w)
            return w;
        /* strip the last component: "a.b[2]" -> "a.b" -> "a" */
        while (len > 0 && path[len - 1] != '.' && path[len - 1] != '[')
            len--;
        if (len == 0)
            return fallback;
        len--;
        if (len == 0)
            return fallback;
    }
}

void ct_conf_locs_copy_prefix(struct ct_conf_locs *dst, const struct ct_conf_locs *src,
                              const char *old_prefix, const char *new_prefix)
{
    size_t olen = strlen(old_prefix);
    for (size_t i = 0; i < src->n; i++) {
        if (!ct_conf_path_under(src->v[i].path, old_prefix))
            continue;
        char path[256];
        snprintf(path, sizeof(path), "%s%s", new_prefix, src->v[i].path + olen);
        ct_conf_locs_set(dst, path, src->v[i].where);
    }
}

void ct_conf_locs_free(struct ct_conf_locs *locs)
{
    for (size_t i = 0; i < locs->n; i++) {
        free(locs->v[i].path);
        free(locs->v[i].where);
    }
    CT_FREE(&locs->v);
    locs->n = locs->cap = 0;
}

/* ---- sizes and durations ----------------------------------------------- */

/* Read the leading decimal digits of *sp into *v (at least one digit). */
static int read_digits(const char **sp, uint64_t *v)
{
    const char *s = *sp;
    uint64_t x = 0;
    if (!isdigit((unsigned char)*s))
        return CT_ECONF;
    for (; isdigit((unsigned char)*s); s++) {
        if (x > (UINT64_MAX - 9) / 10)
            return CT_ECONF;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    *sp = s;
    *v = x;
    return CT_OK;
}

static int mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (b != 0 && a > UINT64_MAX / b)
        return CT_ECONF;
    *out = a * b;
    return CT_OK;
}

/* "256M" = 256 MiB: binary units, like nginx and Varnish. */
int ct_conf_parse_size(const char *s, uint64_t *out)
{
    uint64_t v, mult = 1;
    if (read_digits(&s, &v) != CT_OK)
        return CT_ECONF;
    switch (*s) {
    case '\0': break;
    case 'k': case 'K': mult = 1ull << 10; s++; break;
    case 'm': case 'M': mult = 1ull << 20; s++; break;
    case 'g': case 'G': mult = 1ull << 30; s++; break;
    case 't': case 'T': mult = 1ull << 40; s++; break;
    default: return CT_ECONF;
    }
    if (*s != '\0')
        return CT_ECONF;
    return mul_ok(v, mult, out);
}

void ct_conf_fmt_size(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "TGMK";
    for (int i = 0; i < 4; i++) {
        uint64_t m = 1ull << (10 * (4 - i));
        if (v != 0 && v % m == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(v / m), units[i]);
            return;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)v);
}

struct dur_unit {
    const char *name;
    uint64_t ms;
};
/* Longest suffix first so "ms" is not read as "m" followed by "s". */
static const struct dur_unit dur_units[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
};

/* "500ms", "10s", "5m", "1h", "1d" and sums of them ("1m30s"); "0" alone. */
int ct_conf_parse_dur(const char *s, uint64_t *out_ms)
{
    if (strcmp(s, "0") == 0) {
        *out_ms = 0;
        return CT_OK;
    }
    uint64_t total = 0;
    do {
        uint64_t v, part;
        if (read_digits(&s, &v) != CT_OK)
            return CT_ECONF;
        size_t i;
        for (i = 0; i < CT_ARRAY_LEN(dur_units); i++) {
            size_t n = strlen(dur_units[i].name);
            if (strncmp(s, dur_units[i].name, n) == 0 && !isalpha((unsigned char)s[n]))
                break;
        }
        if (i == CT_ARRAY_LEN(dur_units))
            return CT_ECONF;
        s += strlen(dur_units[i].name);
        if (mul_ok(v, dur_units[i].ms, &part) != CT_OK || total > UINT64_MAX - part)
            return CT_ECONF;
        total += part;
    } while (*s != '\0');
    *out_ms = total;
    return CT_OK;
}

void ct_conf_fmt_dur(uint64_t ms, char *buf, size_t len)
{
    for (size_t i = CT_ARRAY_LEN(dur_units); i-- > 1;) {
        if (ms != 0 && ms % dur_units[i].ms == 0) {
            snprintf(buf, len, "%llu%s", (unsigned long long)(ms / dur_units[i].ms),
                     dur_units[i].name);
            return;
        }
    }
    if (ms == 0)
        snprintf(buf, len, "0s");
    else
        snprintf(buf, len, "%llums", (unsigned long long)ms);
}

/* ---- addresses ------------------------------------------------------------ */

static int parse_port(const char *s, uint16_t *port)
{
    uint64_t v;
    if (read_digits(&s, &v) != CT_OK || *s != '\0' || v > 65535)
        return CT_ECONF;
    *port = (uint16_t)v;
    return CT_OK;
}

/* Split "HOST:PORT" / "[V6]:PORT" into a host copy (brackets removed). */
static int split_hostport(const char *s, char *host, size_t hostlen, uint16_t *port)
{
    const char *colon, *h = s;
    size_t n;
    if (*s == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return CT_ECONF;
        h = s + 1;
        n = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || memchr(s, ':', (size_t)(colon - s)))
            return CT_ECONF; /* bare IPv6 needs brackets */
        n = (size_t)(colon - s);
    }
    if (n == 0 || n >= hostlen)
        return CT_ECONF;
    memcpy(host, h, n);
    host[n] = '\0';
    return parse_port(colon + 1, port);
}

int ct_conf_parse_addr(const char *s, struct ct_conf_addr *a)
{
    char host[INET6_ADDRSTRLEN + 1];
    uint16_t port;
    if (split_hostport(s, host, sizeof(host), &port) != CT_OK)
        return CT_ECONF;
    if (strcmp(host, "*") == 0)
        snprintf(host, sizeof(host), "0.0.0.0");
    memset(a, 0, sizeof(*a));
    struct sockaddr_in *in4 = (struct sockaddr_in *)&a->sa;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->sa;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(port);
        a->salen = sizeof(*in4);
    } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        a->salen = sizeof(*in6);
    } else {
        return CT_ECONF;
    }
    a->host = ct_xstrdup(host);
    a->port = port;
    return CT_OK;
}

void ct_conf_fmt_addr(const struct ct_conf_addr *a, char *buf, size_t len)
{
    if (!a->host)
        snprintf(buf, len, "off");
    else if (strchr(a->host, ':'))
        snprintf(buf, len, "[%s]:%u", a->host, (unsigned)a->port);
    else
        snprintf(buf, len, "%s:%u", a->host, (unsigned)a->port);
}

bool ct_conf_addr_eq(const struct ct_conf_addr *a, const struct ct_conf_addr *b)
{
    return a->salen == b->salen && a->salen != 0 && memcmp(&a->sa, &b->sa, a->salen) == 0;
}

void ct_conf_addr_free(struct ct_conf_addr *a)
{
    CT_FREE(&a->host);
}

/* RFC 1123 host name labels, or an IP literal. */
static bool is_dns_name(const char *s)
{
    size_t label = 0;
    if (*s == '\0' || strlen(s) > 253)
        return false;
    for (; *s; s++) {
        if (*s == '.') {
            if (label == 0)
                return false;
            label = 0;
        } else if (isalnum((unsigned char)*s) || (*s == '-' && label > 0)) {
            if (++label > 63)
                return false;
        } else {
            return false;
        }
    }
    return label > 0;
}

int ct_conf_parse_hostport(const char *s, char **host, uint16_t *port)
{
    char h[256];
    struct in6_addr a6;
    if (split_hostport(s, h, sizeof(h), port) != CT_OK || *port == 0)
        return CT_ECONF;
    if (!is_dns_name(h) && inet_pton(AF_INET6, h, &a6) != 1)
        return CT_ECONF;
    *host = ct_xstrdup(h);
    return CT_OK;
}

/* ---- CIDR prefixes and server names -------------------------------------- */

int ct_conf_parse_cidr(const char *s, struct ct_conf_cidr *c)
{
    char ip[INET6_ADDRSTRLEN + 1];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(ip))
        return CT_ECONF;
    memcpy(ip, s, n);
    ip[n] = '\0';
    memset(c, 0, sizeof(*c));
    if (inet_pton(AF_INET, ip, c->addr) == 1)
        c->family = AF_INET;
    else if (inet_pton(AF_INET6, ip, c->addr) == 1)
        c->family = AF_INET6;
    else
        return CT_ECONF;
    unsigned bits = c->family == AF_INET ? 32 : 128;
    uint64_t plen = bits;
    if (slash) {
        const char *p = slash + 1;
        if (read_digits(&p, &plen) != CT_OK || *p != '\0' || plen > bits)
            return CT_ECONF;
    }
    c->prefix_len = (unsigned)plen;
    /* Host bits set ("10.0.0.1/8") are a typo more often than intent. */
    for (unsigned b = c->prefix_len; b < bits; b++)
        if (c->addr[b / 8] & (0x80u >> (b % 8)))
            return CT_ECONF;
    return CT_OK;
}

bool ct_conf_cidr_match(const struct ct_conf_cidr *c, int family, const uint8_t *addr)
{
    if (c->family != family)
        return false;
    unsigned full = c->prefix_len / 8, rest = c->prefix_len % 8;
    if (memcmp(c->addr, addr, full) != 0)
        return false;
    return rest == 0 || ((c->addr[full] ^ addr[full]) & (0xff00u >> rest) & 0xffu) == 0;
}

void ct_conf_fmt_cidr(const struct ct_conf_cidr *c, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN];
    inet_ntop(c->family, c->addr, ip, sizeof(ip));
    snprintf(buf, len, "%s/%u", ip, c->prefix_len);
}

int ct_conf_parse_server_name(const char *s, char **out)
{
    const char *rest = strncmp(s, "*.", 2) == 0 ? s + 2 : s;
    if (!is_dns_name(rest))
        return CT_ECONF;
    char *lc = ct_xstrdup(s);
    for (char *p = lc; *p; p++)
        *p = ct_ascii_lower(*p);
    *out = lc;
    return CT_OK;
}

int ct_conf_parse_media_type(const char *s, char **out)
{
    const char *slash = strchr(s, '/');
    if (!slash || !ct_http_is_token(ct_str_make(s, (size_t)(slash - s))) || s[0] == '*')
        return CT_ECONF;
    struct ct_str sub = ct_str_c(slash + 1);
    if (!ct_http_is_token(sub) || (memchr(sub.p, '*', sub.len) && !ct_str_eq(sub, CT_STR("*"))))
        return CT_ECONF; /* "*" alone, or a subtype without one: no "text/ht*" */
    char *lc = ct_xstrdup(s);
    for (char *p = lc; *p; p++)
        *p = ct_ascii_lower(*p);
    *out = lc;
    return CT_OK;
}

/* ---- did you mean ------------------------------------------------------------ */

unsigned ct_conf_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 99;
    unsigned row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned up = row[j];
            unsigned cost = ct_ascii_lower(a[i - 1]) == ct_ascii_lower(b[j - 1]) ? 0 : 1;
            row[j] = CT_MIN(CT_MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
            diag = up;
        }
    }
    return row[lb];
}
