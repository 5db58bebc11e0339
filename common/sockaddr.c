/* common/sockaddr.c: socket addresses as text (see sockaddr.h). */
#include "common/sockaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

/* The ip text of SA into IP (INET6_ADDRSTRLEN bytes); its port in *PORT.
 * Returns the family's kind: 4, 6 or 0 (unknown: IP is "?"). */
static int ip_text(const struct sockaddr *sa, char ip[INET6_ADDRSTRLEN], unsigned *port)
{
    *port = 0;
    if (sa != NULL && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        if (inet_ntop(AF_INET, &in->sin_addr, ip, INET6_ADDRSTRLEN)) {
            *port = ntohs(in->sin_port);
            return 4;
        }
    } else if (sa != NULL && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (inet_ntop(AF_INET6, &in6->sin6_addr, ip, INET6_ADDRSTRLEN)) {
            *port = ntohs(in6->sin6_port);
            return 6;
        }
    }
    memcpy(ip, "?", 2);
    return 0;
}

static size_t clamp(int n, size_t cap)
{
    if (n < 0 || cap == 0)
        return 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t ct_sockaddr_format(const struct sockaddr *sa, char *out, size_t cap, struct ct_str *ip)
{
    char text[INET6_ADDRSTRLEN];
    unsigned port;
    int kind = ip_text(sa, text, &port);
    int n;
    if (kind == 6)
        n = snprintf(out, cap, "[%s]:%u", text, port);
    else if (kind == 4)
        n = snprintf(out, cap, "%s:%u", text, port);
    else
        n = snprintf(out, cap, "%s", text);
    size_t len = clamp(n, cap);
    if (ip) {
        size_t off = kind == 6 ? 1 : 0;
        size_t want = strlen(text);
        /* cut short: the view covers what fits */
        *ip = ct_str_make(out + CT_MIN(off, len), len > off ? CT_MIN(want, len - off) : 0);
    }
    return len;
}

size_t ct_sockaddr_ip(const struct sockaddr *sa, char *out, size_t cap)
{
    char text[INET6_ADDRSTRLEN];
    unsigned port;
    ip_text(sa, text, &port);
    return clamp(snprintf(out, cap, "%s", text), cap);
}
