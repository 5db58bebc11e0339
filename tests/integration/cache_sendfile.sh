#!/usr/bin/env bash
# Large stored bodies go out with sendfile(2) over plain HTTP (cache/cache_obj.c
# keeps Content-Length bodies of 64 KiB and more in a memfd; proxy/
# cache_deliver.c direct_sendfile): the bytes are the origin's, whole, for a
# plain hit, a Range, HEAD, a reader with a tiny receive window (sendfile
# takes part, the rest is queued from the same memory; and the connection
# (Connection: close) is not closed while the kernel still holds the end of
# the response: client.c linger_draining) and over HTTPS (which encrypts from
# the mapping); small bodies keep the writev path.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; max_object_size = "16M"; };
admin = { listen = "off"; };
CONF
ct_start_proxy -c "$CT_TMP/cachet.conf"
SPORT=$(ct_wait_listen proxy https) || exit 1
PID=$(ct_pid proxy)
BIG="/gen?size=200000&cache-control=max-age%3D600"
HUGE="/bytes/12000000?cache-control=max-age%3D600"
SMALL="/gen?size=2000&cache-control=max-age%3D600"

sum() { md5sum | cut -d' ' -f1; }
want_big=$(curl -s "$O$BIG" | sum)
want_huge=$(curl -s "$O$HUGE" | sum)

ct_check "200 KB miss: the origin's bytes" "$(curl -s "$P$BIG" | sum)" "$want_big"
status=$(curl -s -D - -o "$CT_TMP/big" "$P$BIG" | tr -d '\r' | awk -F': ' 'tolower($1) == "cache-status" {print $2}')
ct_check_match "200 KB second request is a hit" "$status" '^cachet; hit'
ct_check "200 KB hit: the origin's bytes" "$(sum <"$CT_TMP/big")" "$want_big"

# Range on the stored object: the same bytes as the origin's
ct_check "Range 150000-150099 of a 200 KB hit" "$(curl -s -r 150000-150099 "$P$BIG" | sum)" \
    "$(curl -s "$O$BIG" | tail -c +150001 | head -c 100 | sum)"
ct_check "HEAD of a 200 KB hit: no body, its length" \
    "$(curl -s -I "$P$BIG" | tr -d '\r' | awk -F': ' 'tolower($1) == "content-length" {print $2}')/$(curl -s -I "$P$BIG" -o /dev/null -w '%{size_download}')" \
    "200000/0"

# A reader with a 4 KiB receive window: sendfile takes part, the rest is
# queued (by reference, from the same memory) and sent as the reader drains.
curl -s -o /dev/null "$P$HUGE"
cat >"$CT_TMP/slow.py" <<'PY'
import hashlib, socket, ssl, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
if sys.argv[3] == "tls":
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(s)
s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % sys.argv[2]).encode())
# Linear in the body: the head is split off once, the body hashed as it
# comes (appending to one bytes object is quadratic, and under ASan with a
# parallel ctest that alone outlasted the timeout).
head, body_len, md5 = bytearray(), 0, hashlib.md5()
while True:
    try:
        d = s.recv(65536)
    except (ssl.SSLError, ConnectionResetError):
        break
    if not d:
        break
    if head is not None:
        head += d
        i = head.find(b"\r\n\r\n")
        if i < 0:
            continue
        d = bytes(head[i + 4:])
        head = None
    body_len += len(d)
    md5.update(d)
print(body_len, md5.hexdigest())
PY
# Generous bounds: the reader is slow by design, and slower under ASan.
slow=$(timeout 300 python3 "$CT_TMP/slow.py" "$PPORT" "$HUGE" plain)
ct_check "12 MB hit (more than the socket buffer takes) to a reader with a 4 KiB window: whole" "$slow" "12000000 $want_huge"
# The same over TLS (io.c's record writes to a slow reader), whole.
ct_check "12 MB HTTPS hit to a reader with a 4 KiB window: whole" \
    "$(timeout 300 python3 "$CT_TMP/slow.py" "$SPORT" "$HUGE" tls)" "12000000 $want_huge"
# ...but an answer the kernel has already sent is not held back: a
# Connection: close response over TLS ends (EOF) right after its last byte.
# The median wait over 10 connections (a wait for the ACK of the last bytes,
# one 100 ms poll, was 100+ ms each).
eof_wait=$(timeout 300 python3 - "$SPORT" "$SMALL" <<'PY'
import socket, ssl, sys, time
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
waits = []
for _ in range(10):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % sys.argv[2]).encode())
    data, t_body = b"", None
    while True:
        try:
            d = s.recv(65536)
        except (ssl.SSLError, ConnectionResetError):
            d = b""
        if not d:
            break
        data += d
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep and t_body is None and len(body) >= 2000:
            t_body = time.monotonic()
    waits.append((time.monotonic() - t_body) * 1000 if t_body else 9999)
    s.close()
waits.sort()
print("%.0f" % waits[len(waits) // 2])
PY
)
ct_check "Connection: close over TLS: EOF right after the body (median ${eof_wait} ms < 50)" \
    "$([ "${eof_wait:-9999}" -lt 50 ] && echo yes)" yes
ct_check "200 KB hit over HTTPS: the origin's bytes" \
    "$(curl -sk "https://127.0.0.1:$SPORT$BIG" | sum)" "$want_big"
ct_check "2 KB hit: whole" "$(curl -s "$P$SMALL" | sum)" "$(curl -s "$O$SMALL" | sum)"

# The path itself: 200 KB hits call sendfile, 2 KB hits do not
# traced URL N: N hits of URL under strace -e trace=sendfile; prints the calls.
traced() {
    local url=$1 n=$2 st i
    rm -f "$CT_TMP/strace.err" "$CT_TMP/strace.out"
    strace -f -e trace=sendfile -o "$CT_TMP/strace.out" -p "$PID" 2>"$CT_TMP/strace.err" &
    st=$!
    ct_wait_until 60 grep -qs 'attached' "$CT_TMP/strace.err"
    for ((i = 0; i < n; i++)); do curl -s -o /dev/null "$url"; done
    kill -INT "$st"
    wait "$st" 2>/dev/null
    grep -c 'sendfile(' "$CT_TMP/strace.out"
}
if command -v strace >/dev/null; then
    ct_check_match "3 plain-HTTP 200 KB hits use sendfile" "$(traced "$P$BIG" 3)" '^([3-9]|[1-9][0-9]+)$'
    ct_check "3 plain-HTTP 2 KB hits do not" "$(traced "$P$SMALL" 3)" 0
else
    echo "# strace not installed: the sendfile calls not checked"
fi
ct_check "proxy still running" "$(kill -0 "$PID" 2>/dev/null && echo yes)" yes
ct_done
