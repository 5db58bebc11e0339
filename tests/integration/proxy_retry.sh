#!/usr/bin/env bash
# cachet retries a request once on a new connection when a pooled (reused)
# upstream connection fails before any response byte, for idempotent methods
# only; a POST in the same situation gets 502. The scripted origin (C, built
# here) keeps connections alive and drops, without a byte, any /retry that
# arrives as the second request on a connection.
# needs: cachet
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cat >"$CT_TMP/ka.c" <<'C'
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
static void serve(int c)
{
    char buf[8192];
    size_t n = 0;
    for (unsigned nreq = 1;; nreq++) {
        char *end;
        while (!(end = strstr(buf, "\r\n\r\n"))) {
            ssize_t k = read(c, buf + n, sizeof(buf) - 1 - n);
            if (k <= 0) return;
            n += (size_t)k;
            buf[n] = 0;
        }
        int drop = strstr(buf, " /retry ") && strstr(buf, " /retry ") < end && nreq >= 2;
        if (drop) return; /* close without a byte */
        const char *r = strstr(buf, " /retry ") && strstr(buf, " /retry ") < end
                            ? "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nCache-Control: no-store\r\n\r\nfresh"
                            : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nCache-Control: no-store\r\n\r\nka";
        size_t len = strlen(r);
        if (strncmp(buf, "HEAD ", 5) == 0) /* the head only */
            len = (size_t)(strstr(r, "\r\n\r\n") + 4 - r);
        if (write(c, r, len) < 0) return;
        size_t used = (size_t)(end + 4 - buf);
        memmove(buf, buf + used, n - used + 1);
        n -= used;
    }
}
int main(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    signal(SIGCHLD, SIG_IGN);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 16)) return 1;
    getsockname(s, (struct sockaddr *)&a, &al);
    printf("listening on 127.0.0.1:%u\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) continue;
        if (fork() == 0) { close(s); serve(c); _exit(0); }
        close(c);
    }
}
C
ct_cc "$CT_TMP/ka" "$CT_TMP/ka.c" "the scripted origin"
ct_start origin "$CT_TMP/ka"
OPORT=$(ct_wait_listen origin) || exit 1
ct_start_proxy --http 127.0.0.1:0 --https off --admin off --workers 1 \
    --backend "127.0.0.1:$OPORT"

# /ka leaves one connection in cachet's pool; /retry then goes out on it as
# its second request, is dropped, and must be retried on a new connection.
ct_check "first request fills the pool" "$(curl -s "$P/ka")" ka
ct_check "GET on a dropped reused connection is retried" "$(curl -s -w ' %{http_code}' "$P/retry")" "fresh 200"
ct_check "HEAD is retried too" "$(curl -s -I -o /dev/null -w '%{http_code}' "$P/retry")" 200
# The connection that answered is pooled again: a POST on it is not retried.
ct_check "POST on a dropped reused connection: 502, not retried" \
    "$(curl -s -o /dev/null -w '%{http_code}' -X POST --data x "$P/retry")" 502
ct_stop proxy
ct_check "cachet exits 0" "$?" 0
ct_check_match "the retries are counted at exit" "$(cat "$CT_TMP/proxy.err")" ' 2 retries'
ct_done
