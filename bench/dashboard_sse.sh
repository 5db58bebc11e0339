#!/usr/bin/env bash
# bench/dashboard_sse.sh: what open dashboards cost the hit path. The 1 KiB
# cache hit over HTTP (wrk -t1 -c100, keep-alive) with 0 and with N GET /events
# streams open (curl -N, as N dashboard pages would be), in alternating rounds
# within one run; cachet (one worker; its admin listener runs on the main
# thread) pinned to CPU 1, wrk and the stream readers to CPU 0
# (bench/README.md). Prints each round and the medians of req/s and
# of cachet's CPU per request (utime+stime from /proc).
#
#   bench/dashboard_sse.sh [--bin DIR] [--streams N] [--rounds N] [--duration SECS]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$HERE/../build/bin STREAMS=10 ROUNDS=5 SECS=5
while [ $# -gt 0 ]; do
    case $1 in
        --bin) BIN=${2:?}; shift ;;
        --streams) STREAMS=${2:?}; shift ;;
        --rounds) ROUNDS=${2:?}; shift ;;
        --duration) SECS=${2:?}; shift ;;
        *) echo "usage: $0 [--bin DIR] [--streams N] [--rounds N] [--duration SECS]" >&2; exit 2 ;;
    esac
    shift
done
[[ $STREAMS =~ ^[0-9]+$ && $ROUNDS =~ ^[1-9][0-9]*$ && $SECS =~ ^[1-9][0-9]*$ ]] ||
    { echo "$0: numbers expected" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-sse.XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

port_of() { # FILE KIND: wait for "listening on [KIND ]ADDR:PORT"
    local i line
    for ((i = 0; i < 500; i++)); do
        line=$(grep -m1 "^listening on $2" "$1" 2>/dev/null) && { echo "${line##*:}"; return 0; }
        sleep 0.02
    done
    return 1
}

taskset -c 0 "$BIN/cachet-origin" --port 0 --workers 1 >"$TMP/origin.out" 2>&1 &
PIDS+=($!)
OPORT=$(port_of "$TMP/origin.out" "[0-9]") || { echo "origin did not start" >&2; exit 1; }
taskset -c 1 "$BIN/cachet" --http 127.0.0.1:0 --https off --admin 127.0.0.1:0 --workers 1 \
    --backend "127.0.0.1:$OPORT" --log-level warn >"$TMP/cachet.out" 2>"$TMP/cachet.err" &
CPID=$!
PIDS+=($CPID)
PPORT=$(port_of "$TMP/cachet.out" http) || { echo "cachet did not start" >&2; exit 1; }
APORT=$(port_of "$TMP/cachet.out" admin) || exit 1
URL="http://127.0.0.1:$PPORT/gen?size=1024&cache-control=max-age%3D3600"
curl -s -o /dev/null "$URL" # the miss; every request of the rounds is a hit

ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$CPID/stat"; }
HZ=$(getconf CLK_TCK)

# round MODE: one wrk run with MODE (0 or N) streams open; prints "rps us_per_req"
round() {
    local n=$1 sp=() i t0 t1 rps reqs
    for ((i = 0; i < n; i++)); do
        taskset -c 0 curl -s -N -o /dev/null --max-time $((SECS + 30)) "http://127.0.0.1:$APORT/events" &
        sp+=($!)
    done
    if ((n > 0)); then # every stream open before the load starts
        for ((i = 0; i < 300; i++)); do
            curl -s "http://127.0.0.1:$APORT/stats" | grep -q "\"admin_event_streams\":$n," && break
            sleep 0.02
        done
    fi
    t0=$(ticks)
    taskset -c 0 wrk -t1 -c100 -d"${SECS}s" "$URL" >"$TMP/wrk.out" 2>&1
    t1=$(ticks)
    ((n > 0)) && kill "${sp[@]}" 2>/dev/null
    wait "${sp[@]}" 2>/dev/null
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$TMP/wrk.out")
    reqs=$(awk '/requests in/ { print $1 }' "$TMP/wrk.out")
    awk -v r="$rps" -v q="$reqs" -v d=$((t1 - t0)) -v hz="$HZ" \
        'BEGIN { printf "%.0f %.2f\n", r, q ? d / hz / q * 1e6 : 0 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "1 KiB hit, HTTP, wrk -t1 -c100 -d${SECS}s; cachet 1 worker on CPU 1; $ROUNDS rounds, alternating"
echo "round streams req/s cpu_us_per_req"
for ((r = 1; r <= ROUNDS; r++)); do
    for n in 0 "$STREAMS"; do
        read -r rps us < <(round "$n")
        echo "$r $n $rps $us" | tee -a "$TMP/rounds"
    done
done
for n in 0 "$STREAMS"; do
    rps=$(awk -v n="$n" '$2 == n { print $3 }' "$TMP/rounds" | median)
    lo=$(awk -v n="$n" '$2 == n { print $3 }' "$TMP/rounds" | sort -n | head -1)
    hi=$(awk -v n="$n" '$2 == n { print $3 }' "$TMP/rounds" | sort -n | tail -1)
    us=$(awk -v n="$n" '$2 == n { print $4 }' "$TMP/rounds" | median)
    echo "median with $n streams: $rps req/s ($lo-$hi), $us us of cachet CPU per request"
    eval "med_$n=$rps"
done
awk -v a="$med_0" -v b="$(eval echo "\$med_$STREAMS")" -v n="$STREAMS" \
    'BEGIN { printf "with %d streams: %+.2f %% req/s\n", n, (b - a) / a * 100 }'

# The streams' own cost, without the load's noise: the CPU time of cachet's
# main thread (the admin listener, where the streams live; ns in
# /proc/PID/schedstat) while idle, with 0 and with N streams open.
IDLE=20
idle() {
    local n=$1 sp=() i t0 t1
    for ((i = 0; i < n; i++)); do
        taskset -c 0 curl -s -N -o /dev/null --max-time $((IDLE + 30)) "http://127.0.0.1:$APORT/events" &
        sp+=($!)
    done
    sleep 2 # (a measurement window, not a wait for work)
    t0=$(cut -d' ' -f1 "/proc/$CPID/schedstat")
    sleep "$IDLE"
    t1=$(cut -d' ' -f1 "/proc/$CPID/schedstat")
    ((n > 0)) && kill "${sp[@]}" 2>/dev/null
    wait "${sp[@]}" 2>/dev/null
    awk -v d=$((t1 - t0)) -v s="$IDLE" 'BEGIN { printf "%.1f", d / 1000 / s }'
}
i0=$(idle 0)
iN=$(idle "$STREAMS")
echo "idle main thread CPU: $i0 us/s with 0 streams, $iN us/s with $STREAMS streams"
