#!/usr/bin/env bash
# bench/micro/scrapecost.sh: instructions per /metrics scrape, and the share
# of them in the allocator's figures (issue 19: mallinfo2() walks every
# malloc arena's free lists with that arena's lock held, and a worker's
# malloc on that arena waits for it), under valgrind --tool=callgrind.
#
#   bench/micro/scrapecost.sh BINDIR [N]
#
# cachet (2 workers, admin on, 32 MiB cache) under callgrind; 3000 requests
# of 100 B-60 KiB on 8 connections (a quarter chunked: the heap and the slabs
# churned, as after a while in service) and a purge of the keys starting
# with 2, 4 or 6 (about 1300 of them), so the slabs and arenas have holes; then the counters are zeroed (callgrind_control
# -z), N scrapes of /metrics (default 20) made and the counters dumped.
# Prints "Ir_per_scrape=... mem_stats=... mallinfo2=..." (inclusive
# instructions per scrape of ct_mem_stats and of mallinfo2, all threads).
set -u
BIN=$(cd "${1:?usage: scrapecost.sh BINDIR [N]}" && pwd)
N=${2:-20}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-scrapecost.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; [ -n "${SCRAPE_KEEP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"; }
trap cleanup EXIT
wait_port() { # FILE PATTERN PID
    local i line
    for ((i = 0; i < 6000; i++)); do
        kill -0 "$3" 2>/dev/null || { echo "scrapecost: exited:" >&2; cat "${1%.out}.err" >&2; return 1; }
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null) && { echo "${line##*:}"; return 0; }
        sleep 0.01
    done
    echo "scrapecost: no '$2' in $1" >&2
    return 1
}

"$BIN/cachet-origin" --port 0 --workers 1 >"$TMP/origin.out" 2>&1 &
pids+=($!)
OPORT=$(wait_port "$TMP/origin.out" '^listening on' $!) || exit 1
(cd "$TMP" && exec valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.%p" \
    "$BIN/cachet" --http 127.0.0.1:0 --https off --admin 127.0.0.1:0 --workers 2 \
    --cache-size 32M --backend "127.0.0.1:$OPORT" --access-log off \
    >"$TMP/cachet.out" 2>"$TMP/cachet.err") &
VP=$!
pids+=($VP)
PPORT=$(wait_port "$TMP/cachet.out" '^listening on http ' $VP) || exit 1
APORT=$(wait_port "$TMP/cachet.out" '^listening on admin ' $VP) || exit 1

python3 - "$PPORT" "$APORT" "$N" "$TMP" "$VP" <<'PY'
import http.client, subprocess, sys, threading
port, aport, n, tmp, vp = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
def churn(part):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    for i in range(375):
        k = part * 375 + i
        size = 100 + (k * 7919) % 60000
        q = "/gen?k=%d&size=%d&cache-control=max-age%%3D600%s" % (k, size, "&chunked=1" if k % 4 == 0 else "")
        c.request("GET", q)
        r = c.getresponse(); r.read()
        assert r.status == 200, r.status
ts = [threading.Thread(target=churn, args=(p,)) for p in range(8)]
for t in ts: t.start()
for t in ts: t.join()
a = http.client.HTTPConnection("127.0.0.1", aport, timeout=600)
for p in (2, 4, 6):
    a.request("POST", "/purge?prefix=http://127.0.0.1:%d/gen?k=%d" % (port, p)); a.getresponse().read()
def scrape():
    a.request("GET", "/metrics")
    r = a.getresponse(); body = r.read()
    assert r.status == 200 and b"cachet_memory_allocated_bytes" in body
scrape()
subprocess.run(["callgrind_control", "-z", vp], check=True, capture_output=True, cwd=tmp)
for _ in range(n):
    scrape()
subprocess.run(["callgrind_control", "-d", vp], check=True, capture_output=True, cwd=tmp)
PY
sleep 0.5
total=0 mem=0 mi=0
for f in "$TMP"/cg.*.[0-9]*; do
    [ -f "$f" ] || continue
    ir=$(awk '/^summary:/ { print $2 }' "$f")
    total=$((total + ${ir:-0}))
    read -r a b <<<"$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null | awk '
        /ct_mem_stats/ && !m { gsub(",", "", $1); m = $1 } / mallinfo2/ && !i { gsub(",", "", $1); i = $1 }
        END { print m + 0, i + 0 }')"
    mem=$((mem + a)) mi=$((mi + b))
done
echo "Ir_per_scrape=$((total / N)) mem_stats=$((mem / N)) mallinfo2=$((mi / N)) (totals $total, $mem, $mi over $N scrapes)"
