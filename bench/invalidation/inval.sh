#!/usr/bin/env bash
# bench/invalidation/inval.sh: hit latency while invalidating at scale (issue 16).
#
#   bench/invalidation/inval.sh BINDIR [OUTDIR]
#
# Fills cachet with INVAL_N (default 1 M) objects of 1 KiB, each with ten
# Surrogate-Key tags, one of them shared by a tenth of the store ("g0": N/10
# objects). Then wrk runs of INVAL_SECONDS (default 10) of keep-alive hits on
# objects nothing invalidates: a baseline; one with POST /purge?tag=g0 three
# seconds in (its wall time); one with a ban matching 1 in 100 objects (the
# lurker's time to work it off). cachet runs on CPU 0, wrk and the origin on
# CPU 1. Prints each run's p50/p99 and the p99 ratios. Loopback only.
set -u
BIN=$(cd "${1:?usage: inval.sh BINDIR [OUTDIR]}" && pwd)
OUT=${2:-$(mktemp -d "${TMPDIR:-/tmp}/ct-inval.XXXXXX")}
N=${INVAL_N:-1000000}
SECS=${INVAL_SECONDS:-10}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export INVAL_N=$N
mkdir -p "$OUT"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
wait_port() { # FILE PATTERN
    local i line
    for ((i = 0; i < 3000; i++)); do
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null) && { echo "${line##*:}"; return 0; }
        sleep 0.01
    done
    echo "inval: no '$2' in $1" >&2
    return 1
}
stat() { curl -s "http://127.0.0.1:$APORT/stats" | python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

taskset -c 1 "$BIN/cachet-origin" --port 0 --workers 1 >"$OUT/origin.out" 2>&1 &
pids+=($!)
OPORT=$(wait_port "$OUT/origin.out" '^listening on') || exit 1
cat >"$OUT/cachet.conf" <<EOF2
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; pool_max_idle = 64; } );
cache = { size = "3G"; };
admin = { listen = "127.0.0.1:0"; };
EOF2
taskset -c 0 "$BIN/cachet" -c "$OUT/cachet.conf" >"$OUT/cachet.out" 2>"$OUT/cachet.err" &
pids+=($!)
PPORT=$(wait_port "$OUT/cachet.out" '^listening on http ') || exit 1
APORT=$(wait_port "$OUT/cachet.out" '^listening on admin ') || exit 1
P="http://127.0.0.1:$PPORT"

t0=$(date +%s)
taskset -c 1 wrk -t1 -c32 -d3600s -s "$HERE/fill.lua" "$P" >"$OUT/fill.txt" 2>&1 &
wp=$!
while (( $(stat 'd["cache"]["objects"]') < N )); do sleep 1; done
kill -INT $wp; wait $wp 2>/dev/null
echo "filled: $(stat 'd["cache"]["objects"]') objects, $(stat 'd["cache"]["tag_links"]') tag links, $(stat 'd["cache"]["tag_bytes"]') tag-index bytes, in $(( $(date +%s) - t0 )) s"

hits() { # NAME: a wrk run of hits into OUT/NAME.txt, in the background
    taskset -c 1 wrk -t1 -c16 -d"${SECS}s" --latency -s "$HERE/hits.lua" "$P" >"$OUT/$1.txt" 2>&1 &
    wp=$!
}
pct() { awk -v p="$2" '$1 == p { print $2 }' "$OUT/$1.txt"; }
us() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else print n * 1000000 }'; }
hits warm; wait $wp
hits base; wait $wp
hits purge
sleep 3
pt=$(curl -s -o "$OUT/purge.json" -w '%{time_total}' -X POST "http://127.0.0.1:$APORT/purge?tag=g0")
wait $wp
echo "purge of g0: $(tr -d '\n' <"$OUT/purge.json") in $pt s (wall, admin request)"
hits ban
sleep 2
b0=$(date +%s.%N)
curl -s -o "$OUT/ban.json" -X POST --data-binary 'obj.url ~ "k=[0-9]*42&"' "http://127.0.0.1:$APORT/ban"
while (( $(stat 'd["cache"]["bans_active"]') > 0 )); do sleep 0.1; done
b1=$(date +%s.%N)
wait $wp
echo "ban (1 in 100 objects): $(tr -d '\n' <"$OUT/ban.json"); worked off by the lurker in $(awk -v a="$b0" -v b="$b1" 'BEGIN{printf "%.1f", b - a}') s"
for r in base purge ban; do
    printf '%-6s p50 %8s  p99 %8s  %s\n' "$r" "$(pct "$r" 50%)" "$(pct "$r" 99%)" "$(awk '/Requests\/sec/ {print $2 " req/s"}' "$OUT/$r.txt")"
done
b99=$(us "$(pct base 99%)")
for r in purge ban; do
    echo "$r: hit p99 / baseline p99 = $(awk -v a="$(us "$(pct "$r" 99%)")" -v b="$b99" 'BEGIN { printf "%.2f", a / b }')"
done
