#!/usr/bin/env bash
# Memory per connection (issue 19): a connection with a pipelined request
# waiting behind a slow response holds its input buffer; that buffer is
# sized for what was read, not for the largest read (net/io.c reserved 128 KiB per read, which
# libevent made a 256 KiB allocation: 1100 soak connections swung the
# workers' arenas by 16 MiB). 200 such connections must cost less than
# 64 KiB each in allocated bytes (/metrics, the allocator's own figure), and
# a large body still passes whole (the reads past 16 KiB).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_pair --admin 127.0.0.1:0 --workers 1 --access-log off
APORT=$(ct_wait_listen proxy admin) || exit 1
A="http://127.0.0.1:$APORT"
prom() { curl -s "$A/metrics" | awk -v s="$1" '$1 == s { print $2 }'; }
curl -s -o /dev/null "$P/gen?size=100&warm=1"
a0=$(prom cachet_memory_allocated_bytes)
N=200
# N connections, each with a slow request and a second one pipelined behind
# it (read, not yet consumed); they stay open until the file STOP exists
/usr/bin/python3 - "$PPORT" "$N" "$CT_TMP/stop" <<'PY' &
import os, socket, sys, time
port, n, stop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
for s in socks:
    s.sendall(b"GET /delay/20000?size=10&cache-control=no-store HTTP/1.1\r\nHost: x\r\n\r\n"
              b"GET /gen?size=10 HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 300 + b"\r\n\r\n")
while not os.path.exists(stop):
    time.sleep(0.05)
PY
held=$!
grown() { local a; a=$(prom cachet_memory_allocated_bytes); [ -n "$a" ] && ((a - a0 >= N * 2048)); }
ct_wait_until 60 grown
per=$((($(prom cachet_memory_allocated_bytes) - a0) / N))
touch "$CT_TMP/stop"
wait "$held"
ct_check "a pipelined request costs its connection < 64 KiB ($per bytes)" "$((per < 65536))" 1
# the spill path: a body far past 16 KiB per read, byte for byte
ct_check "a 3 MiB body passes whole" \
    "$(curl -s "$P/gen?size=3145728&cache-control=no-store" | cmp - <(curl -s "http://127.0.0.1:$OPORT/gen?size=3145728&cache-control=no-store") && echo same)" same
ct_done
