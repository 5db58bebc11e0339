/*
 * common/sockaddr.h: a socket address as text, one way everywhere (logs,
 * /stats listeners, X-Forwarded-For, the origin's announce line):
 *
 *     IPv4  "192.0.2.1:8080"       ip part "192.0.2.1"
 *     IPv6  "[2001:db8::1]:443"    ip part "2001:db8::1"  (RFC 3986 §3.2.2
 *                                  brackets, so the port cannot be misread)
 *     other "?"                    (and ip part "?")
 *
 * Pure, no allocation, any thread. OUT is always NUL-terminated when CAP > 0;
 * CT_SOCKADDR_STRLEN bytes always suffice.
 */
#ifndef CT_SOCKADDR_H
#define CT_SOCKADDR_H

#include "common/common.h"

struct sockaddr;

/* "[" + the longest IPv6 text (45, with an embedded IPv4) + "]:" + 5 + NUL */
#define CT_SOCKADDR_STRLEN 56

/* SA as "ip:port" / "[ip]:port" into OUT (CAP bytes). Returns the length
 * written (less than CAP; cut short if CAP is too small). *IP, if not NULL,
 * receives the view of the ip part inside OUT (no brackets), e.g. for
 * X-Forwarded-For (RFC 7239 §6 has its own brackets). */
size_t ct_sockaddr_format(const struct sockaddr *sa, char *out, size_t cap, struct ct_str *ip);

/* The ip part alone ("192.0.2.1", "2001:db8::1", "?"). Returns its length. */
size_t ct_sockaddr_ip(const struct sockaddr *sa, char *out, size_t cap);

#endif /* CT_SOCKADDR_H */
