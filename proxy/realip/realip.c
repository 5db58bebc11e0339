/*
 * proxy/realip/realip.c: PROXY protocol v1/v2 and forwarding fields
 * (realip.h). The PROXY parser follows proxy-protocol.txt to the letter: v1
 * is one CRLF-ended line of at most 107 bytes with exactly the fields it
 * names; v2 starts with its 12-byte signature, version 2, command LOCAL or
 * PROXY, and a length that covers the addresses of its family.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "proxy/realip/realip.h"

static const uint8_t v2sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
                                  0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};

/* "IPv4-mapped" ::ffff:a.b.c.d as the IPv4 address it is. */
static void unmap(struct ct_realip_addr *a)
{
    static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (a->family == AF_INET6 && memcmp(a->addr, pfx, 12) == 0) {
        memmove(a->addr, a->addr + 12, 4);
        memset(a->addr + 4, 0, 12);
        a->family = AF_INET;
    }
}

static bool parse_ip(const char *s, size_t n, int family, struct ct_realip_addr *a)
{
    char buf[INET6_ADDRSTRLEN + 1];
    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    memset(a, 0, sizeof(*a));
    if (family != AF_INET6 && inet_pton(AF_INET, buf, a->addr) == 1)
        a->family = AF_INET;
    else if (family != AF_INET && inet_pton(AF_INET6, buf, a->addr) == 1)
        a->family = AF_INET6;
    return a->family != 0;
}

/* A decimal port, 0..65535, no sign, no leading zero (the spec's form). */
static bool parse_port(const char *s, size_t n, uint16_t *port)
{
    uint64_t v;
    if (n == 0 || n > 5 || (n > 1 && s[0] == '0') ||
        ct_str_to_u64(ct_str_make(s, n), 65535, &v) != CT_OK)
        return false;
    *port = (uint16_t)v;
    return true;
}

static int parse_v1(const uint8_t *buf, size_t len, struct ct_pp_result *out)
{
    const char *s = (const char *)buf;
    size_t n = len < CT_PP_V1_MAX ? len : CT_PP_V1_MAX;
    const char *cr = memchr(s, '\r', n), *lf = memchr(s, '\n', n);
    if (lf && (!cr || lf < cr))
        return CT_EPROTO; /* a bare LF ends no PROXY line */
    if (!cr)
        return len < CT_PP_V1_MAX ? CT_EAGAIN : CT_EPROTO;
    if ((size_t)(cr - s) + 1 >= len)
        return CT_EAGAIN;
    if (cr[1] != '\n')
        return CT_EPROTO;
    out->version = 1;
    out->consumed = (size_t)(cr - s) + 2;
    /* "PROXY" SP proto [SP src SP dst SP sport SP dport] */
    const char *f[6];
    size_t fl[6], nf = 0;
    for (const char *p = s; p < cr && nf < 6;) {
        const char *sp = memchr(p, ' ', (size_t)(cr - p));
        const char *e = sp ? sp : cr;
        f[nf] = p;
        fl[nf++] = (size_t)(e - p);
        p = sp ? sp + 1 : cr;
        if (sp && p == cr)
            return CT_EPROTO; /* a trailing space */
    }
    if (nf < 2 || fl[0] != 5 || memcmp(f[0], "PROXY", 5) != 0)
        return CT_EPROTO;
    if (fl[1] == 7 && memcmp(f[1], "UNKNOWN", 7) == 0) {
        out->local = true; /* the rest of the line is to be ignored */
        return CT_OK;
    }
    int fam = fl[1] == 4 && memcmp(f[1], "TCP4", 4) == 0   ? AF_INET
              : fl[1] == 4 && memcmp(f[1], "TCP6", 4) == 0 ? AF_INET6
                                                           : 0;
    if (!fam || nf != 6 || memchr(f[5], ' ', (size_t)(cr - f[5])))
        return CT_EPROTO;
    if (!parse_ip(f[2], fl[2], fam, &out->src) || !parse_ip(f[3], fl[3], fam, &out->dst) ||
        !parse_port(f[4], fl[4], &out->src.port) || !parse_port(f[5], fl[5], &out->dst.port))
        return CT_EPROTO;
    return CT_OK;
}

static int parse_v2(const uint8_t *buf, size_t len, struct ct_pp_result *out)
{
    if (len < 16)
        return CT_EAGAIN;
    unsigned ver = buf[12] >> 4, cmd = buf[12] & 0xf, fam = buf[13];
    size_t body = (size_t)buf[14] << 8 | buf[15];
    if (ver != 2 || cmd > 1 || 16 + body > CT_PP_V2_MAX)
        return CT_EPROTO;
    if (len < 16 + body)
        return CT_EAGAIN;
    out->version = 2;
    out->consumed = 16 + body;
    const uint8_t *a = buf + 16;
    if (cmd == 0) { /* LOCAL: the balancer's own connection */
        out->local = true;
        return CT_OK;
    }
    switch (fam) {
    case 0x11: /* TCP over IPv4 */
        if (body < 12)
            return CT_EPROTO;
        out->src.family = out->dst.family = AF_INET;
        memcpy(out->src.addr, a, 4);
        memcpy(out->dst.addr, a + 4, 4);
        out->src.port = (uint16_t)(a[8] << 8 | a[9]);
        out->dst.port = (uint16_t)(a[10] << 8 | a[11]);
        unmap(&out->src);
        return CT_OK;
    case 0x21: /* TCP over IPv6 */
        if (body < 36)
            return CT_EPROTO;
        out->src.family = out->dst.family = AF_INET6;
        memcpy(out->src.addr, a, 16);
        memcpy(out->dst.addr, a + 16, 16);
        out->src.port = (uint16_t)(a[32] << 8 | a[33]);
        out->dst.port = (uint16_t)(a[34] << 8 | a[35]);
        unmap(&out->src);
        unmap(&out->dst);
        return CT_OK;
    default: /* UNSPEC, UDP, unix: "the receiver must ignore the addresses" */
        out->local = true;
        return CT_OK;
    }
}

int ct_pp_parse(const uint8_t *buf, size_t len, struct ct_pp_result *out)
{
    memset(out, 0, sizeof(*out));
    size_t k = len < 12 ? len : 12;
    if (memcmp(buf, v2sig, k) == 0)
        return len < 12 ? CT_EAGAIN : parse_v2(buf, len, out);
    k = len < 6 ? len : 6;
    if (memcmp(buf, "PROXY ", k) == 0)
        return len < 6 ? CT_EAGAIN : parse_v1(buf, len, out);
    return CT_EPROTO;
}

/* ---- forwarding fields -------------------------------------------------- */

size_t ct_realip_fmt(const struct ct_realip_addr *a, char *out, size_t cap)
{
    if (!a->family || !inet_ntop(a->family, a->addr, out, (socklen_t)cap))
        return (size_t)snprintf(out, cap, "?");
    return strlen(out);
}

bool ct_realip_in(const struct ct_conf_cidr *v, size_t n, const struct ct_realip_addr *a)
{
    struct ct_realip_addr u = *a;
    unmap(&u);
    for (size_t i = 0; i < n; i++)
        if (ct_conf_cidr_match(&v[i], u.family, u.addr))
            return true;
    return false;
}

bool ct_realip_parse(struct ct_str s, struct ct_realip_addr *out)
{
    s = ct_str_trim_ows(s);
    const char *p = s.p;
    size_t n = s.len;
    uint16_t port = 0;
    if (n && p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (!close)
            return false;
        size_t rest = n - (size_t)(close - p) - 1;
        if (rest && (close[1] != ':' || !parse_port(close + 2, rest - 1, &port)))
            return false;
        if (!parse_ip(p + 1, (size_t)(close - p - 1), AF_INET6, out))
            return false;
    } else {
        const char *colon = memchr(p, ':', n);
        /* one colon: IPv4 with a port; more: a bare IPv6 address */
        if (colon && !memchr(colon + 1, ':', n - (size_t)(colon - p) - 1)) {
            if (!parse_port(colon + 1, n - (size_t)(colon - p) - 1, &port) ||
                !parse_ip(p, (size_t)(colon - p), AF_INET, out))
                return false;
        } else if (!parse_ip(p, n, 0, out)) {
            return false;
        }
    }
    out->port = port;
    unmap(out);
    return true;
}

/* Walks the comma-separated elements of several fields from the last one
 * back (the nearest proxy appended the last element). END is the exclusive
 * end of what is left of field FI - 1; -1 when that field is used up. */
struct walk {
    const struct ct_str *f;
    size_t fi;
    long end;
};

static bool prev_elem(struct walk *w, struct ct_str *elem)
{
    while (w->fi > 0) {
        const struct ct_str *f = &w->f[w->fi - 1];
        if (w->end < 0) {
            if (--w->fi == 0)
                return false;
            w->end = (long)w->f[w->fi - 1].len;
            continue;
        }
        size_t e = (size_t)w->end, b = e;
        while (b > 0 && f->p[b - 1] != ',')
            b--;
        *elem = ct_str_make(f->p + b, e - b);
        w->end = (long)b - 1; /* left of the comma; -1: the field is used up */
        return true;
    }
    return false;
}

/* Forwarded (RFC 7239 §4): the for= of one element "for=...;proto=..." */
static bool forwarded_for(struct ct_str elem, struct ct_realip_addr *a)
{
    const char *p = elem.p, *end = elem.p + elem.len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ';'))
            p++;
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *e = semi ? semi : end;
        if (e - p > 4 && strncasecmp(p, "for=", 4) == 0) {
            struct ct_str v = ct_str_trim_ows(ct_str_make(p + 4, (size_t)(e - p - 4)));
            if (v.len >= 2 && v.p[0] == '"' && v.p[v.len - 1] == '"')
                v = ct_str_make(v.p + 1, v.len - 2);
            return ct_realip_parse(v, a);
        }
        p = e + 1;
    }
    return false;
}

bool ct_realip_from_fields(const struct ct_conf_cidr *trusted, size_t ntrusted,
                           const struct ct_realip_addr *peer, const struct ct_str *fields,
                           size_t nfields, bool forwarded, struct ct_realip_addr *out)
{
    *out = *peer;
    struct walk w = {fields, nfields, nfields ? (long)fields[nfields - 1].len : -1};
    struct ct_str elem;
    bool moved = false;
    while (ct_realip_in(trusted, ntrusted, out) && prev_elem(&w, &elem)) {
        struct ct_realip_addr a;
        if (!(forwarded ? forwarded_for(elem, &a) : ct_realip_parse(elem, &a)))
            break; /* "unknown", an obfuscated name, garbage: stop at what we know */
        *out = a;
        moved = true;
    }
    return moved;
}
