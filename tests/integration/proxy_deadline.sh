#!/usr/bin/env bash
# The client connection's deadline (keep-alive idle, request head) is kept
# lazily (client.c deadline_set): the timer is not re-armed when a deadline
# moves later, it fires at the old time and is set again for the rest. So a
# keep-alive connection used again after its first header deadline has
# passed must stay open, close at keepalive_timeout after its last response
# (not at a stale deadline), and a slow head sent after a keep-alive pause
# must get its 408 at client_header_timeout from its first byte. The read
# timeouts of origin connections are kept the same way (io.c rd_deadline):
# a body trickling with pauses shorter than read_timeout arrives whole though
# it takes longer than read_timeout; a pause longer cuts it; a pooled
# connection (idle deadline 60 s) answers 504 at response_header_timeout.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; response_header_timeout = "400ms";
               read_timeout = "400ms"; max_fails = 0; } );
limits = { client_header_timeout = "400ms"; keepalive_timeout = "1200ms"; };
admin = { listen = "off"; };
CONF
ct_start_proxy -c "$CT_TMP/cachet.conf"

cat >"$CT_TMP/deadline.py" <<'EOF'
import socket, sys, time

port = int(sys.argv[1])
REQ = b"GET /gen?size=10 HTTP/1.1\r\nHost: a\r\n\r\n"

def response(s):
    buf = b""
    while not buf.endswith(b"0123456789"):
        d = s.recv(4096)
        if not d:
            return None
        buf += d
    return buf.split(b"\r\n")[0].decode()

def closed_after(s, t0):
    s.settimeout(5)
    try:
        d = s.recv(4096)
    except socket.timeout:
        return "open", -1
    return (d.split(b"\r\n")[0].decode() if d else "EOF"), int((time.monotonic() - t0) * 1000)

s = socket.create_connection(("127.0.0.1", port))
s.sendall(REQ)
print("first|%s" % response(s))
time.sleep(0.6)  # past the first head's 400 ms deadline, inside the 1200 ms idle one
s.sendall(REQ)
print("second|%s" % response(s))
t0 = time.monotonic()
what, ms = closed_after(s, t0)
print("idle close|%s %d" % (what, ms))

s = socket.create_connection(("127.0.0.1", port))
s.sendall(REQ)
response(s)
time.sleep(0.3)
t0 = time.monotonic()
s.sendall(b"GET /gen?size=10 HTTP/1.1\r\n")  # a head that never ends, trickled
for _ in range(3):
    time.sleep(0.1)
    s.sendall(b"X-A: b\r\n")
what, ms = closed_after(s, t0)
print("slow head|%s %d" % (what, ms))
EOF
res=$(timeout 30 python3 "$CT_TMP/deadline.py" "$PPORT" 2>&1)
get() { printf '%s\n' "$res" | sed -n "s/^$1|//p"; }
ct_check "keep-alive: first response" "$(get first)" "HTTP/1.1 200 OK"
ct_check "the same connection past its first head deadline is still served" "$(get second)" \
    "HTTP/1.1 200 OK"
idle=$(get 'idle close')
ct_check_match "idle: closed ~1200 ms after the last response, not at a stale deadline ($idle)" \
    "$idle" '^EOF (1[0-9][0-9][0-9]|2[0-4][0-9][0-9])$'
slow=$(get 'slow head')
ct_check_match "a slow head after a keep-alive pause: 408 ~400 ms from its first byte ($slow)" \
    "$slow" '^HTTP/1.1 408 Request Timeout ([3-9][0-9][0-9])$'
[ "$CT_FAIL" -eq 0 ] || printf '%s\n' "$res"

P="http://127.0.0.1:$PPORT"
# 5 pieces 150 ms apart (~600 ms in all, > read_timeout): whole.
out=$(curl -s -w ' %{http_code}' "$P/gen?size=5000&trickle=150&trickle-size=1000&cache-control=no-store")
ct_check "a body trickling faster than read_timeout arrives whole" "${#out} ${out##* }" "5004 200"
# Pieces 900 ms apart: cut after the first silence of 400 ms.
start=$(date +%s%N)
out=$(curl -s -o /dev/null -w '%{size_download}' "$P/gen?size=3000&trickle=900&trickle-size=1000&cache-control=no-store")
ms=$((($(date +%s%N) - start) / 1000000))
ct_check "a body pausing longer than read_timeout is cut (got $out bytes)" "$out" 1000
ct_check_match "cut ~400 ms after its first piece (was $ms ms)" "$ms" '^([3-9][0-9][0-9]|1[0-4][0-9][0-9])$'
# The origin connection goes back to the pool (60 s idle deadline), then a
# slow answer on it: 504 at the 400 ms header timeout.
curl -s -o /dev/null "$P/gen?size=10&cache-control=no-store"
start=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' "$P/delay/3000?cache-control=no-store")
ms=$((($(date +%s%N) - start) / 1000000))
ct_check "a pooled origin connection that does not answer: 504" "$code" 504
ct_check_match "504 at ~400 ms, not at the pool's idle deadline (was $ms ms)" "$ms" '^([3-9][0-9][0-9]|1[0-4][0-9][0-9])$'
ct_done
