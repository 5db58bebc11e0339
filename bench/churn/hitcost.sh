#!/usr/bin/env bash
# bench/churn/hitcost.sh: instructions per 1 KiB keep-alive cache hit, under
# valgrind --tool=callgrind (issue 19's hit-path budget).
#
#   bench/churn/hitcost.sh BINDIR [N]
#
# One cachet worker under callgrind; one keep-alive connection makes one miss
# and then N hits on /1k (default 5000). The counters are zeroed after the
# warm-up (callgrind_control -z) and dumped after the hits, so start-up and
# shutdown are not counted: prints "Ir_per_hit=...". $HIT_ENV goes before
# valgrind (e.g. LD_PRELOAD=... to try an allocator on the same binary).
# $HIT_CONF names a configuration file loaded under the same overrides (the
# listener, backend and workers still come from the command line), e.g.
# bench/micro/routes20.conf for issue 15's 20-route figure.
set -u
BIN=$(cd "${1:?usage: hitcost.sh BINDIR [N]}" && pwd)
N=${2:-5000}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-hitcost.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; [ -n "${HIT_KEEP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"; }
trap cleanup EXIT
wait_port() { # FILE PATTERN PID
    local i line
    for ((i = 0; i < 6000; i++)); do
        kill -0 "$3" 2>/dev/null || { echo "hitcost: exited:" >&2; cat "${1%.out}.err" >&2; return 1; }
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null) && { echo "${line##*:}"; return 0; }
        sleep 0.01
    done
    echo "hitcost: no '$2' in $1" >&2
    return 1
}

"$BIN/cachet-origin" --port 0 --workers 1 >"$TMP/origin.out" 2>&1 &
pids+=($!)
OPORT=$(wait_port "$TMP/origin.out" '^listening on' $!) || exit 1
(cd "$TMP" && exec env ${HIT_ENV:-} valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.%p" \
    "$BIN/cachet" ${HIT_CONF:+-c "$HIT_CONF"} --http 127.0.0.1:0 --https off --admin off --workers 1 --backend "127.0.0.1:$OPORT" \
    --access-log off >"$TMP/cachet.out" 2>"$TMP/cachet.err") &
VP=$!
pids+=($VP)
PPORT=$(wait_port "$TMP/cachet.out" '^listening on http ' $VP) || exit 1

# callgrind_control is given the pid: without it, it zeroes and dumps every
# callgrind run of this user, another bench's included
python3 - "$PPORT" "$N" "$TMP" "$VP" <<'PY'
import http.client, subprocess, sys
port, n, tmp, vp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
def get():
    c.request("GET", "/1k?cache-control=max-age%3D3600")
    r = c.getresponse()
    body = r.read()
    assert r.status == 200 and len(body) == 1024, (r.status, len(body))
    return r.getheader("Cache-Status") or ""
for _ in range(50):           # the miss, then warm hits
    get()
assert "hit" in get()
subprocess.run(["callgrind_control", "-z", vp], check=True, capture_output=True, cwd=tmp)
for _ in range(n):
    s = get()
assert "hit" in s, s
subprocess.run(["callgrind_control", "-d", vp], check=True, capture_output=True, cwd=tmp)
PY
sleep 0.5
total=0
for f in "$TMP"/cg.*.[0-9]*; do
    [ -f "$f" ] || continue
    ir=$(awk '/^summary:/ { print $2 }' "$f")
    total=$((total + ${ir:-0}))
done
echo "Ir_per_hit=$((total / N)) (total $total over $N hits)"
