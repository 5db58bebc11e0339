#!/usr/bin/env bash
# bench/invalidation/inval.sh: hit latency while invalidating at scale (issue 16).
#
#   bench/invalidation/inval.sh BINDIR [OUTDIR]
#
# Fills cachet with INVAL_N (default 1 M) objects of 1 KiB, each with ten
# Surrogate-Key tags, one of them shared by a tenth of the store ("gK": the
# objects with k mod 10 == K, N/10 of them). Then INVAL_ROUNDS (default 3)
# rounds of three wrk runs of INVAL_SECONDS (default 10) of keep-alive hits on
# objects nothing invalidates: a baseline; one with POST /purge?tag=g(9-r)
# three seconds in; one with a ban matching 1 in 100 objects (k mod 100 ==
# 10+r) two seconds in, until the lurker drops it. Each round invalidates
# objects of its own, so every round purges and bans as much as the first.
#
# cachet runs on CPU 0, wrk, the origin and this script's polling on CPU 1.
# For each run: hit p50/p99 and req/s (wrk), and the CPU time of cachet's
# threads (utime+stime from /proc/PID/task/TID/stat: "main" is the admin
# thread, "lurker" the ban lurker, "worker" the rest). For each purge, the
# CPU the admin thread spent on it (from cachet's log line) and the wall time;
# for each ban, the lurker's time to drop it. Then the medians over rounds of
# the p99 ratios (each against its own round's baseline). Loopback only.
set -u
BIN=$(cd "${1:?usage: inval.sh BINDIR [OUTDIR]}" && pwd)
OUT=${2:-$(mktemp -d "${TMPDIR:-/tmp}/ct-inval.XXXXXX")}
N=${INVAL_N:-1000000}
SECS=${INVAL_SECONDS:-10}
ROUNDS=${INVAL_ROUNDS:-3}
(( ROUNDS >= 1 && ROUNDS <= 5 )) || { echo "inval: INVAL_ROUNDS must be 1..5" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export INVAL_N=$N INVAL_ROUNDS=$ROUNDS
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
# One number from the small GET /bans answer: no Python per poll, and on
# CPU 1, so the polling does not take CPU 0 from cachet.
bans_active() {
    taskset -c 1 curl -s "http://127.0.0.1:$APORT/bans" | grep -o '"bans_active":[0-9]*' | cut -d: -f2
}
# CPU ms of cachet's threads by role: "main worker lurker".
thread_cpu() {
    local t comm ticks main=0 worker=0 lurker=0 hz
    hz=$(getconf CLK_TCK)
    for t in /proc/"$CPID"/task/*; do
        comm=$(cat "$t/comm" 2>/dev/null) || continue
        # fields 14, 15 (utime, stime) after the ")" that closes comm
        ticks=$(sed 's/.*) //' "$t/stat" | awk '{ print $12 + $13 }')
        if [ "${t##*/}" = "$CPID" ]; then main=$((main + ticks))
        elif [ "$comm" = "cachet-lurker" ]; then lurker=$((lurker + ticks))
        else worker=$((worker + ticks)); fi
    done
    echo "$((main * 1000 / hz)) $((worker * 1000 / hz)) $((lurker * 1000 / hz))"
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
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
CPID=$!
pids+=($CPID)
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
    cpu0=$(thread_cpu)
    taskset -c 1 wrk -t1 -c16 -d"${SECS}s" --latency -s "$HERE/hits.lua" "$P" >"$OUT/$1.txt" 2>&1 &
    wp=$!
}
hits_end() { # NAME: wait for the run, note its thread CPU
    wait $wp
    local c1
    c1=$(thread_cpu)
    awk -v a="$cpu0" -v b="$c1" 'BEGIN { split(a, x, " "); split(b, y, " ");
        printf "main %d worker %d lurker %d\n", y[1] - x[1], y[2] - x[2], y[3] - x[3] }' >"$OUT/$1.cpu"
}
pct() { awk -v p="$2" '$1 == p { print $2 }' "$OUT/$1.txt"; }
us() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else print n * 1000000 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

hits warm; hits_end warm
for ((r = 0; r < ROUNDS; r++)); do
    hits "base$r"; hits_end "base$r"
    hits "purge$r"
    sleep 3
    pt=$(curl -s -o "$OUT/purge$r.json" -w '%{time_total}' -X POST "http://127.0.0.1:$APORT/purge?tag=g$((9 - r))")
    hits_end "purge$r"
    pl=$(grep -h 'admin: purge of 1 tags' "$OUT/cachet.err" | tail -1)
    pcpu=$(echo "$pl" | sed -n 's/.*(\([0-9.]*\) ms CPU).*/\1/p')
    echo "$pcpu" >>"$OUT/purge_cpu"
    echo "round $r: purge of g$((9 - r)): $(tr -d '\n' <"$OUT/purge$r.json") in $pt s wall (curl), ${pl#*: purge of 1 tags (*): }" | tee -a "$OUT/summary.txt"
    hits "ban$r"
    sleep 2
    b0=$(date +%s.%N)
    curl -s -o "$OUT/ban$r.json" -X POST --data-binary "obj.url ~ \"k=[0-9]*1$r&\"" "http://127.0.0.1:$APORT/ban"
    while (( $(bans_active) > 0 )); do sleep 0.1; done
    b1=$(date +%s.%N)
    hits_end "ban$r"
    echo "round $r: ban (1 in 100 objects): $(tr -d '\n' <"$OUT/ban$r.json"); dropped by the lurker after $(awk -v a="$b0" -v b="$b1" 'BEGIN{printf "%.1f", b - a}') s" | tee -a "$OUT/summary.txt"
    for k in base purge ban; do
        printf 'round %d %-5s p50 %8s  p99 %8s  %-14s cpu ms: %s\n' "$r" "$k" "$(pct "$k$r" 50%)" "$(pct "$k$r" 99%)" \
            "$(awk '/Requests\/sec/ {print $2 " req/s"}' "$OUT/$k$r.txt")" "$(cat "$OUT/$k$r.cpu")" | tee -a "$OUT/summary.txt"
    done
    b99=$(us "$(pct "base$r" 99%)")
    for k in purge ban; do
        awk -v a="$(us "$(pct "$k$r" 99%)")" -v b="$b99" 'BEGIN { printf "%.2f\n", a / b }' >>"$OUT/ratio_$k"
    done
done
for k in purge ban; do
    echo "$k: hit p99 / same round's baseline p99: median $(median <"$OUT/ratio_$k") of $(tr '\n' ' ' <"$OUT/ratio_$k")"
done
echo "purge CPU ms (admin thread): median $(median <"$OUT/purge_cpu") of $(tr '\n' ' ' <"$OUT/purge_cpu")"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
