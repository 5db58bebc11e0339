/*
 * proxy/realip/realip.h: the real client address (issue 15): the PROXY
 * protocol header a load balancer puts before the first byte of a
 * connection (v1 text, v2 binary; haproxy.org's proxy-protocol.txt), and
 * the X-Forwarded-For / Forwarded (RFC 7239) fields of requests that came
 * through trusted proxies.
 *
 * Pure: bytes in, an address out; no sockets, no allocation, any thread.
 * Whom to believe is the caller's configuration: a PROXY header is only
 * read on listeners that enable it and from allowed peers (others are
 * refused), and forwarding fields only from trusted addresses.
 */
#ifndef CT_REALIP_H
#define CT_REALIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "conf/conf.h"

/* An address: AF_INET with 4 bytes of addr, or AF_INET6 with 16. */
struct ct_realip_addr {
    int family; /* 0: none */
    uint8_t addr[16];
    uint16_t port; /* 0 when not known */
};

/* Longest v1 header (the spec's 107) and the largest v2 one accepted here
 * (16 + 1024 bytes of addresses and TLVs; longer is refused). */
#define CT_PP_V1_MAX 107
#define CT_PP_V2_MAX (16 + 1024)

struct ct_pp_result {
    size_t consumed; /* header bytes, to be dropped before the protocol's first byte */
    bool local;      /* v2 LOCAL, v1 UNKNOWN, or a family other than TCP/IP: keep the
                        connection's own address (health checks of the balancer) */
    struct ct_realip_addr src, dst;
    int version; /* 1 or 2 */
};

/* Parse a PROXY header at BUF[0..LEN). CT_OK and *OUT; CT_EAGAIN when LEN
 * bytes are a valid start but not the whole header (read more; at most
 * CT_PP_V2_MAX in all); CT_EPROTO when it is no PROXY header (the
 * connection is to be closed: a listener that expects one never guesses). */
int ct_pp_parse(const uint8_t *buf, size_t len, struct ct_pp_result *out);

/* The client address behind trusted proxies. PEER is the address the
 * request came from; if it is inside TRUSTED, the forwarding fields are read
 * right to left (the nearest hop first), and each address inside TRUSTED
 * gives way to the one before it (nginx's real_ip_recursive). FIELDS are the
 * values of every X-Forwarded-For field (or Forwarded, with FORWARDED true:
 * its `for=` parameters), in order. An unreadable element stops the walk at
 * the last good address. Returns true when *OUT differs from PEER. */
bool ct_realip_from_fields(const struct ct_conf_cidr *trusted, size_t ntrusted,
                           const struct ct_realip_addr *peer, const struct ct_str *fields,
                           size_t nfields, bool forwarded, struct ct_realip_addr *out);

/* A's address as text ("192.0.2.1", "2001:db8::1") into OUT; its length. */
#define CT_SOCKADDR_STRLEN_PP 48
size_t ct_realip_fmt(const struct ct_realip_addr *a, char *out, size_t cap);

/* Is A inside one of V[0..N)? (IPv4-mapped IPv6 counts as IPv4.) */
bool ct_realip_in(const struct ct_conf_cidr *v, size_t n, const struct ct_realip_addr *a);

/* Parse "192.0.2.1", "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:443" or
 * "192.0.2.1:80" (S is not NUL-terminated). */
bool ct_realip_parse(struct ct_str s, struct ct_realip_addr *out);

#endif /* CT_REALIP_H */
