#!/usr/bin/env bash
# bench/micro/abwall.sh: two cachet builds side by side in requests per
# second, alternating them round by round in one run (A B A B ...), for the
# cells where a change must stay "within run-to-run noise" (issue 13).
#
#   bench/micro/abwall.sh BINDIR_A BINDIR_B [ROUNDS] [SECS]
#
# Cells: 1 KiB HTTP hit, HTTP pass, HTTPS hit, HTTPS pass, each on one
# keep-alive-heavy wrk load (1 thread, 50 connections). cachet runs one
# worker pinned to CPU 0; wrk and the origin (B's cachet-origin, for both)
# share CPU 1. Prints per cell the median req/s of each build, B/A, and the
# spread of A's rounds (max/min): a B/A inside that spread is noise.
set -u
A=$(cd "${1:?usage: abwall.sh BINDIR_A BINDIR_B [ROUNDS] [SECS]}" && pwd)
B=$(cd "${2:?usage: abwall.sh BINDIR_A BINDIR_B [ROUNDS] [SECS]}" && pwd)
ROUNDS=${3:-5}
SECS=${4:-5}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-abwall.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
command -v wrk >/dev/null || { echo "abwall: wrk is needed (make deps-bench)" >&2; exit 1; }

wait_port() { # FILE PATTERN PID
    local line i
    for ((i = 0; i < 3000; i++)); do
        kill -0 "$3" 2>/dev/null || { echo "abwall: exited:" >&2; cat "${1%.out}.err" >&2; return 1; }
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null) && { echo "${line##*:}"; return 0; }
        sleep 0.01
    done
    return 1
}

taskset -c 1 "$B/cachet-origin" --port 0 --workers 1 >"$TMP/origin.out" 2>"$TMP/origin.err" &
pids+=($!)
OPORT=$(wait_port "$TMP/origin.out" '^listening on' $!) || exit 1

# one_run BIN CELL -> req/s
one_run() {
    local bin=$1 cell=$2 scheme=${2%-*} kind=${2#*-} path lopt pat port pid rps
    [ "$kind" = hit ] && path="/1k?cache-control=max-age%3D3600" || path="/gen?size=1024&cache-control=no-store"
    if [ "$scheme" = https ]; then lopt=(--http off --https 127.0.0.1:0); pat='^listening on https '
    else lopt=(--http 127.0.0.1:0); pat='^listening on http '; fi
    taskset -c 0 "$bin/cachet" "${lopt[@]}" --admin off --workers 1 --backend "127.0.0.1:$OPORT" \
        --access-log off >"$TMP/c.out" 2>"$TMP/c.err" &
    pid=$!
    port=$(wait_port "$TMP/c.out" "$pat" $pid) || return 1
    curl -sk -o /dev/null "$scheme://127.0.0.1:$port$path"
    taskset -c 1 wrk -t1 -c50 -d1s "$scheme://127.0.0.1:$port$path" >/dev/null 2>&1 # warm-up
    rps=$(taskset -c 1 wrk -t1 -c50 -d"${SECS}s" "$scheme://127.0.0.1:$port$path" 2>/dev/null |
        awk '/^Requests\/sec:/ { printf "%d", $2 }')
    kill -TERM $pid; wait $pid 2>/dev/null
    echo "${rps:-0}"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

printf "%-11s %10s %10s %7s %13s\n" cell A_median B_median B/A A_max/A_min
for cell in http-hit http-pass https-hit https-pass; do
    : >"$TMP/a" && : >"$TMP/b"
    for ((r = 0; r < ROUNDS; r++)); do
        one_run "$A" "$cell" >>"$TMP/a" || exit 1
        one_run "$B" "$cell" >>"$TMP/b" || exit 1
    done
    ma=$(median <"$TMP/a"); mb=$(median <"$TMP/b")
    spread=$(sort -n "$TMP/a" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f", lo ? hi / lo : 0 }')
    printf "%-11s %10d %10d %7.3f %13s\n" "$cell" "$ma" "$mb" "$(echo "$mb $ma" | awk '{ printf "%.3f", $2 ? $1 / $2 : 0 }')" "$spread"
done
