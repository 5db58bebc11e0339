#!/usr/bin/env bash
# cachet against a scripted origin: the Upgrade tunnel (when the origin
# answers 101 to a request with Connection: upgrade, bytes flow both ways
# until either side closes), and the origin's hop-by-hop response fields
# (Connection and what it names, Keep-Alive, Proxy-*, Trailer, Upgrade) never
# reaching the client. cachet-origin has no 101 endpoint and cannot send
# arbitrary fields, so this test builds a tiny origin (C, with the compiler
# the build already needs): GET /hop answers with hop-by-hop fields, GET
# /hopcl with "Connection: Content-Length", GET
# /early with a 103 before its 200 (to HTTP/1.1 and HTTP/2 clients); any
# request carrying "Upgrade:" gets a 101 and then every byte echoed
# upper-cased; anything else gets a 400. The tunnel is also checked over
# HTTPS, through cachet's own TLS reads and writes.
# needs: cachet
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cat >"$CT_TMP/up.c" <<'C'
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 16)) return 1;
    getsockname(s, (struct sockaddr *)&a, &al);
    printf("listening on 127.0.0.1:%u\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int c = accept(s, NULL, NULL);
        char buf[8192];
        size_t n = 0;
        ssize_t k;
        if (c < 0) continue;
        while (n < sizeof(buf) - 1 && (k = read(c, buf + n, sizeof(buf) - 1 - n)) > 0) {
            n += (size_t)k;
            buf[n] = 0;
            if (strstr(buf, "\r\n\r\n")) break;
        }
        if (strncmp(buf, "GET /hop ", 9) == 0) {
            const char *r = "HTTP/1.1 200 OK\r\nConnection: X-Secret, close\r\nX-Secret: 1\r\n"
                            "Keep-Alive: timeout=9\r\nProxy-Authenticate: Basic\r\n"
                            "Proxy-Connection: keep-alive\r\nTrailer: X-T\r\nUpgrade: h2c\r\n"
                            "Via: 1.0 origin\r\nX-End: kept\r\nContent-Length: 2\r\n\r\nok";
            write(c, r, strlen(r));
            close(c);
            continue;
        }
        if (strncmp(buf, "GET /hopcl ", 11) == 0) {
            const char *r = "HTTP/1.1 200 OK\r\nConnection: Content-Length\r\n"
                            "Cache-Control: no-store\r\nContent-Length: 2\r\n\r\nok";
            write(c, r, strlen(r));
            close(c);
            continue;
        }
        if (strncmp(buf, "GET /early ", 11) == 0) {
            const char *r = "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
                            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
            write(c, r, strlen(r));
            close(c);
            continue;
        }
        if (!strcasestr(buf, "\nUpgrade:")) {
            const char *r = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            write(c, r, strlen(r));
            close(c);
            continue;
        }
        const char *r = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\n";
        write(c, r, strlen(r));
        char *rest = strstr(buf, "\r\n\r\n") + 4;
        size_t m = n - (size_t)(rest - buf);
        for (;;) {
            for (size_t i = 0; i < m; i++) rest[i] = (char)toupper((unsigned char)rest[i]);
            if (m && write(c, rest, m) < 0) break;
            k = read(c, buf, sizeof(buf));
            if (k <= 0) break;
            rest = buf;
            m = (size_t)k;
        }
        close(c);
    }
}
C
ct_cc "$CT_TMP/up" "$CT_TMP/up.c" "the 101 helper origin"
ct_start up "$CT_TMP/up"
UPORT=$(ct_wait_listen up) || exit 1
ct_start_proxy --http 127.0.0.1:0 --https off --admin off --workers 1 \
    --backend "127.0.0.1:$UPORT"

exec 3<>"/dev/tcp/127.0.0.1/$PPORT"
printf 'GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\n' >&3
IFS= read -r -t 30 status <&3
ct_check "101 passed to the client" "${status%$'\r'}" "HTTP/1.1 101 Switching Protocols"
head=""
while IFS= read -r -t 30 line <&3; do
    line=${line%$'\r'}
    [ -z "$line" ] && break
    head+="$line|"
done
ct_check_match "101 keeps Connection: upgrade" "$(tr 'A-Z' 'a-z' <<<"$head")" 'connection: upgrade'
ct_check_match "101 keeps the Upgrade field" "$head" 'Upgrade: shout'
printf 'hello tunnel\n' >&3
IFS= read -r -t 30 echo1 <&3
ct_check "bytes go through the tunnel both ways" "$echo1" "HELLO TUNNEL"
printf 'second message\n' >&3
IFS= read -r -t 30 echo2 <&3
ct_check "and keep flowing" "$echo2" "SECOND MESSAGE"
# 200 KiB through the tunnel in one go (back-pressure both ways).
head -c 200000 /dev/zero | tr '\0' 'a' >&3
got=$(head -c 200000 <&3 | tr -d 'A' | wc -c)
ct_check "200 KB through the tunnel intact" "$got" 0
exec 3<&-

# The origin's hop-by-hop response fields are removed, Via is appended.
h=$(curl -s -D - "http://127.0.0.1:$PPORT/hop" | tr -d '\r' | tr 'A-Z' 'a-z')
for f in 'x-secret:' 'keep-alive:' 'proxy-authenticate:' 'proxy-connection:' 'trailer:' 'upgrade:' 'connection: x-secret'; do
    if [[ "$h" == *"$f"* ]]; then ct_failed "response hop-by-hop $f removed" "$h"; else ct_pass "response hop-by-hop $f removed"; fi
done
ct_check_match "response end-to-end field kept" "$h" $'\nx-end: kept\n'
ct_check_match "response Via appended to the origin's" "$h" $'\nvia: 1\\.0 origin, 1\\.1 cachet\n'
ct_check_match "response body intact" "$h" $'\n\nok$'

# A Connection token naming Content-Length does not unframe the response
# (the client would take the next response's bytes for this body); no-store,
# so that it is forwarded, not re-framed from a stored object.
h=$(curl -s -D - --max-time 5 "http://127.0.0.1:$PPORT/hopcl" | tr -d '\r' | tr 'A-Z' 'a-z')
ct_check_match "response: Connection: Content-Length keeps its Content-Length" "$h" \
    $'\ncontent-length: 2\n'

# Upgrade: h2c is never tunnelled (HTTP/2 would carry requests past cachet):
# Upgrade and HTTP2-Settings are not forwarded, so this origin, which
# switches to its tunnel for any request carrying Upgrade, answers 400.
resp=$(exec 3<>"/dev/tcp/127.0.0.1/$PPORT"
    printf 'GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n' >&3
    IFS= read -r -t 30 line <&3; echo "${line%$'\r'}")
ct_check "Upgrade: h2c is not tunnelled" "$resp" "HTTP/1.1 400 Bad Request"

# Interim 1xx (103 Early Hints) pass through to HTTP/1.1 clients, before the
# final response; HTTP/1.0 clients never get a 1xx (RFC 9110 §15.2).
resp=$(exec 3<>"/dev/tcp/127.0.0.1/$PPORT"; printf 'GET /early HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' >&3; timeout 5 cat <&3 | tr -d '\r')
ct_check_match "103 passed to an HTTP/1.1 client, then the 200" "$resp" \
    $'^HTTP/1.1 103 Early Hints\nLink: </s.css>; rel=preload\n(.*\n)?\nHTTP/1.1 200 OK\n.*\n\nok$'
resp=$(exec 3<>"/dev/tcp/127.0.0.1/$PPORT"; printf 'GET /early HTTP/1.0\r\n\r\n' >&3; timeout 5 cat <&3 | tr -d '\r')
ct_check_match "no 1xx for an HTTP/1.0 client" "$resp" $'^HTTP/1.1 200 OK\n.*\n\nok$'

# Without Upgrade the helper answers 400: an ordinary response, passed on.
ct_check "non-upgrade request is an ordinary exchange" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PPORT/ws")" 400

ct_stop proxy
ct_check "cachet exits 0" "$?" 0

# The same tunnel over HTTPS, on a keep-alive connection cachet's io.c has
# taken over (after its first response): 300 KB each way through our TLS
# reads and writes, with back-pressure.
ct_start tproxy "$CT_BIN/cachet" --http off --https 127.0.0.1:0 --admin off --workers 1 \
    --backend "127.0.0.1:$UPORT"
SPORT=$(ct_wait_listen tproxy https) || exit 1
cat >"$CT_TMP/tlsup.py" <<'EOF2'
import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10),
                    server_hostname="localhost")
def head():
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    return buf
s.sendall(b"GET /hop HTTP/1.1\r\nHost: a\r\n\r\n")
buf = head()
while not buf.endswith(b"ok"):
    buf += s.recv(4096)
s.sendall(b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\n")
print("status|%s" % head().split(b"\r\n")[0].decode())
s.sendall(b"a" * 300000)
got = b""
while len(got) < 300000:
    d = s.recv(65536)
    if not d:
        break
    got += d
print("echo|%d %s" % (len(got), got == b"A" * 300000))
EOF2
res=$(timeout 30 python3 "$CT_TMP/tlsup.py" "$SPORT" 2>&1)
ct_check "HTTPS keep-alive: 101 after a first response" "$(sed -n 's/^status|//p' <<<"$res")" \
    "HTTP/1.1 101 Switching Protocols"
ct_check "300 KB through the TLS tunnel intact" "$(sed -n 's/^echo|//p' <<<"$res")" "300000 True"

# 103 Early Hints over HTTP/2 (the HTTPS listener offers h2 by default): an
# interim HEADERS frame with :status 103 and the origin's Link, then the
# final 200 on the same stream (RFC 9113 §8.1; Python's h2 refuses a 1xx
# after the final head or one with END_STREAM).
res=$(timeout 30 /usr/bin/python3 "$CT_SRC/tests/integration/h2_peer.py" "$SPORT" get /early 2>&1)
ct_check "h2: the 103 with its Link, then the 200" "$res" \
    $'interim 103 stream=1 link=</s.css>; rel=preload\nstatus 200 stream=1\nended stream=1'
ct_done
