#!/usr/bin/env bash
# bench/churn/churn.sh: cache churn against a real cachet, with an RSS
# sampler (issue 19). Loopback only, bounded in time.
#
#   bench/churn/churn.sh BINDIR OUTDIR
#
# Starts cachet-origin and cachet (--cache-size $CHURN_CACHE), records the
# RSS of the empty process, runs wrk with churn.lua for $CHURN_SECONDS
# (inserts, replacements, expiry, evictions, PURGEs; a purge of everything
# every $CHURN_PURGE_EVERY s), sampling RSS and the store's own bytes every
# second into OUTDIR/rss.csv; then purges everything and samples for up to
# 60 s more. OUTDIR/summary prints the figures the issue's bound is about.
# $CHURN_ENV is put before cachet's command line (e.g. "MALLOC_ARENA_MAX=2"
# or "LD_PRELOAD=..."), to compare allocator candidates on one binary;
# $CHURN_ARGS goes after its flags (e.g. "--log-level debug").
set -u
BIN=${1:?usage: churn.sh BINDIR OUTDIR}
OUT=${2:?usage: churn.sh BINDIR OUTDIR}
SECONDS_RUN=${CHURN_SECONDS:-120}
CACHE=${CHURN_CACHE:-64M}
WORKERS=${CHURN_WORKERS:-2}
CONNS=${CHURN_CONNS:-32}
PURGE_EVERY=${CHURN_PURGE_EVERY:-60}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$OUT"

pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

# wait_port FILE PATTERN: the port of the first "listening on" line matching.
wait_port() {
    local i line
    for ((i = 0; i < 1000; i++)); do
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null) && { echo "${line##*:}"; return 0; }
        sleep 0.01
    done
    echo "churn: no '$2' in $1" >&2
    return 1
}
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# sample: "rss_kb,cache_bytes,allocated,resident" (the allocator's figures
# are empty when the binary predates them)
sample() {
    curl -s "$A/metrics" | awk -v rss="$(rss_kb "$CPID")" '
        $1 == "cachet_cache_bytes" { c = $2 } $1 == "cachet_memory_allocated_bytes" { a = $2 }
        $1 == "cachet_memory_resident_bytes" { r = $2 }
        END { printf "%s,%s,%s,%s\n", rss, c, a, r }'
}

"$BIN/cachet-origin" --port 0 --workers 1 >"$OUT/origin.out" 2>&1 &
pids+=($!)
OPORT=$(wait_port "$OUT/origin.out" '^listening on') || exit 1
env ${CHURN_ENV:-} "$BIN/cachet" --http 127.0.0.1:0 --admin 127.0.0.1:0 --workers "$WORKERS" \
    --backend "127.0.0.1:$OPORT" --cache-size "$CACHE" --access-log off ${CHURN_ARGS:-} \
    >"$OUT/cachet.out" 2>"$OUT/cachet.err" &
CPID=$!
pids+=($CPID)
PPORT=$(wait_port "$OUT/cachet.out" '^listening on http ') || exit 1
APORT=$(wait_port "$OUT/cachet.out" '^listening on admin ') || exit 1
A="http://127.0.0.1:$APORT"
purge_all() { curl -s -o /dev/null -X POST "$A/purge?prefix=http://127.0.0.1:$PPORT/"; }

# the empty process, after one request of each kind has warmed the code paths
curl -s -o /dev/null "http://127.0.0.1:$PPORT/gen?size=100"
curl -s -o /dev/null "http://127.0.0.1:$PPORT/gen?size=200000&chunked=1"
purge_all
empty=$(rss_kb "$CPID")

wrk -t2 -c"$CONNS" -d"${SECONDS_RUN}s" -s "$HERE/churn.lua" "http://127.0.0.1:$PPORT" \
    >"$OUT/wrk.out" 2>&1 &
WRK=$!
pids+=($WRK)
echo "t,rss_kb,cache_bytes,allocated,resident" >"$OUT/rss.csv"
t=0
while kill -0 "$WRK" 2>/dev/null; do
    sleep 1
    t=$((t + 1))
    echo "$t,$(sample)" >>"$OUT/rss.csv"
    ((PURGE_EVERY > 0 && t % PURGE_EVERY == 0)) && purge_all
done
wait "$WRK"
end_t=$t
purge_all
purged_at=$t
back=""
while ((t < purged_at + 60)); do
    sleep 1
    t=$((t + 1))
    r=$(rss_kb "$CPID")
    echo "$t,$(sample)" >>"$OUT/rss.csv"
    if [ -z "$back" ] && ((r * 10 <= empty * 11)); then back=$((t - purged_at)); break; fi
done
kill -0 "$CPID" 2>/dev/null && alive=yes || alive=no

cache_kb=$(numfmt --from=iec "$CACHE" | awk '{ print int($1 / 1024) }')
# Steady state: samples from minute 2 on (the second half of a shorter run),
# leaving out the 15 s after each purge of everything (the cache refills);
# flat means every such sample within 5 % of their median.
awk -F, -v end_t="$end_t" -v pe="$PURGE_EVERY" 'NR > 1 && $1 <= end_t &&
    ($1 >= 120 || (end_t < 240 && $1 >= end_t / 2)) && !(pe > 0 && $1 % pe < 15 && $1 > pe) {
    print $2 }' "$OUT/rss.csv" | sort -n >"$OUT/steady"
awk -F, -v empty="$empty" -v end_t="$end_t" -v cache_kb="$cache_kb" -v back="$back" \
    -v alive="$alive" -v steady="$OUT/steady" \
    -v wrk="$(grep -m1 'Requests/sec' "$OUT/wrk.out" | awk '{print $2}')" '
NR == 1 { next }
$1 <= end_t { if ($2 > peak) peak = $2; last = $2; la = $4; lr = $5 }
$1 > end_t { after = $2; aa = $4 }
END {
    while ((getline v < steady) > 0) st[++n] = v
    med = st[int((n + 1) / 2)]
    dev = 0
    for (i = 1; i <= n; i++) { d = (st[i] - med) * 100.0 / med; if (d < 0) d = -d; if (d > dev) dev = d }
    bound = 1.15 * cache_kb + 48 * 1024
    printf "empty_kb=%d peak_kb=%d end_kb=%d bound_kb=%d within_bound=%s\n", empty, peak, last,
           bound, (peak <= bound ? "yes" : "no")
    printf "steady_median_kb=%d steady_lo_kb=%d steady_hi_kb=%d max_dev=%.1f%% flat=%s\n", med,
           st[1], st[n], dev, (dev <= 5 ? "yes" : "no")
    printf "end_allocated_kb=%d end_resident_kb=%d\n", la / 1024, lr / 1024
    printf "after_purge_kb=%d after_purge_allocated_kb=%d back_within_10pct_s=%s alive=%s wrk_rps=%s\n",
           after, aa / 1024, (back == "" ? "never" : back), alive, wrk
}' "$OUT/rss.csv" | tee "$OUT/summary"
