#!/usr/bin/env bash
# bench/micro/postcost.sh: instructions per small POST under callgrind, with
# request-body buffering on and off (issue 41: limits.request_buffer).
#
#   bench/micro/postcost.sh BINDIR [N]
#
# One cachet worker under valgrind --tool=callgrind in front of cachet-origin;
# one HTTP/1.1 keep-alive connection POSTs a 100-byte body to /echo (a pass)
# 50 times, the counters are zeroed (callgrind_control -z), then N more
# (default 500) are counted. Once with limits.request_buffer = "0" (every
# body streamed, as before the buffer existed) and once with the default
# "64K". Prints "request_buffer=0 Ir_per_post=..." and the same for 64K.
set -u
BIN=$(cd "${1:?usage: postcost.sh BINDIR [N]}" && pwd)
N=${2:-500}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-postcost.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
wait_port() { # FILE PATTERN PID
    local i line
    for ((i = 0; i < 6000; i++)); do
        kill -0 "$3" 2>/dev/null || { echo "postcost: exited:" >&2; cat "${1%.out}.err" >&2; return 1; }
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null) && { echo "${line##*:}"; return 0; }
        sleep 0.01
    done
    echo "postcost: no '$2' in $1" >&2
    return 1
}

"$BIN/cachet-origin" --port 0 --workers 1 >"$TMP/origin.out" 2>&1 &
pids+=($!)
OPORT=$(wait_port "$TMP/origin.out" '^listening on' $!) || exit 1

for rb in 0 64K; do
    d="$TMP/$rb"
    mkdir -p "$d"
    printf 'limits = { request_buffer = "%s"; };\n' "$rb" >"$d/c.conf"
    (cd "$d" && exec valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" "$BIN/cachet" \
        -c "$d/c.conf" --http 127.0.0.1:0 --https off --admin off --workers 1 \
        --backend "127.0.0.1:$OPORT" --access-log off >"$d/cachet.out" 2>"$d/cachet.err") &
    vp=$!
    pids+=($vp)
    port=$(wait_port "$d/cachet.out" '^listening on http ' $vp) || exit 1
    /usr/bin/python3 - "$port" "$N" "$vp" "$d" <<'PY' || exit 1
import http.client, subprocess, sys
port, n, vp, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
body = b"p" * 100
def post():
    c.request("POST", "/echo?cache-control=no-store", body=body,
              headers={"Content-Type": "text/plain"})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
for _ in range(50):
    post()
subprocess.run(["callgrind_control", "-z", vp], check=True, capture_output=True, cwd=d)
for _ in range(n):
    post()
subprocess.run(["callgrind_control", "-d", vp], check=True, capture_output=True, cwd=d)
PY
    sleep 0.5
    total=0
    for f in "$d"/cg.*.[0-9]*; do
        [ -f "$f" ] || continue
        ir=$(awk '/^summary:/ { print $2 }' "$f")
        total=$((total + ${ir:-0}))
    done
    kill -TERM $vp 2>/dev/null
    wait $vp 2>/dev/null
    echo "request_buffer=$rb Ir_per_post=$((total / N))"
done
