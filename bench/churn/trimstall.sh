#!/usr/bin/env bash
# bench/churn/trimstall.sh: do the workers' hits stall while freed cache
# memory goes back to the kernel after a large purge? (issue 19)
#
#   bench/churn/trimstall.sh BINDIR [OUTDIR]
#
# cachet (2 workers, cache.size $TRIM_CACHE, default 1G, --log-level debug)
# is filled with TRIM_N (default 30000) objects of 1-32 KiB (trimfill.lua),
# then two wrk runs of TRIM_SECONDS (default 12) of keep-alive 1 KiB hits on
# 100 objects nothing purges: a baseline, and one with a purge of the 30 k
# objects (POST /purge?tag=fill) three seconds in, so the memory they held
# is given back while the hits run. For each run: hit p50/p99/max and req/s
# (wrk), and a probe's slowest hit in each 250 ms (one keep-alive connection,
# sequential requests, so a stall shows when it happened: the purge at 0,
# the giving back after it); for the purge, RSS before and 5 s after, and
# cachet's lines about the purge and giving memory back. cachet's workers
# run on CPU 0; its main thread (where the purge and the giving back run),
# wrk, the probe and the origin on CPU 1, so what the main thread does shows
# in the hits only through locks the workers wait for, not through CPU it
# takes from them. Loopback only, bounded in time.
set -u
BIN=$(cd "${1:?usage: trimstall.sh BINDIR [OUTDIR]}" && pwd)
OUT=${2:-$(mktemp -d "${TMPDIR:-/tmp}/ct-trimstall.XXXXXX")}
N=${TRIM_N:-30000}
SECS=${TRIM_SECONDS:-12}
CACHE=${TRIM_CACHE:-1G}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TRIM_N=$N
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
    echo "trimstall: no '$2' in $1" >&2
    return 1
}
rss_mib() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$CPID/status"; }
objects() { curl -s "$A/metrics" | awk '$1 == "cachet_cache_objects" { print $2 }'; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c 1 "$BIN/cachet-origin" --port 0 --workers 1 >"$OUT/origin.out" 2>&1 &
pids+=($!)
OPORT=$(wait_port "$OUT/origin.out" '^listening on') || exit 1
taskset -c 0 env ${TRIM_ENV:-} "$BIN/cachet" --http 127.0.0.1:0 --admin 127.0.0.1:0 --workers 2 \
    --backend "127.0.0.1:$OPORT" --cache-size "$CACHE" --access-log off --log-level debug \
    >"$OUT/cachet.out" 2>"$OUT/cachet.err" &
CPID=$!
pids+=($CPID)
PPORT=$(wait_port "$OUT/cachet.out" '^listening on http ') || exit 1
taskset -pc 1 "$CPID" >/dev/null # the main thread only; the workers stay on CPU 0
APORT=$(wait_port "$OUT/cachet.out" '^listening on admin ') || exit 1
A="http://127.0.0.1:$APORT"
P="http://127.0.0.1:$PPORT"

# fill until every object is in (wrk cycles k = 1..N)
for ((i = 0; i < 20; i++)); do
    taskset -c 1 wrk -t1 -c8 -d3s -s "$HERE/trimfill.lua" "$P" >/dev/null 2>&1
    [ "$(objects)" -ge "$N" ] 2>/dev/null && break
done
echo "filled: $(objects) objects, RSS $(rss_mib) MiB"
hits='local k = 0
function request() k = k % 100 + 1
  return wrk.format("GET", "/gen?hot=" .. k .. "&size=1024&cache-control=max-age%3D3600") end'
echo "$hits" >"$OUT/hits.lua"
taskset -c 1 wrk -t1 -c16 -d3s -s "$OUT/hits.lua" "$P" >/dev/null 2>&1 # the hot set in

# probe NAME: sequential hits for SECS s; "t_ms,latency_ms" per request, t
# from when the purge request returned (OUT/purged's mtime) or the start
probe() {
    taskset -c 1 python3 - "$PPORT" "$SECS" "$OUT/probe.$1" <<'PY'
import http.client, sys, time
port, secs, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
rows, end = [], time.time() + secs
while time.time() < end:
    t0 = time.time()
    c.request("GET", "/gen?hot=1&size=1024&cache-control=max-age%3D3600")
    c.getresponse().read()
    rows.append((t0, time.time() - t0))
with open(out, "w") as f:
    for t, l in rows:
        f.write("%.6f,%.3f\n" % (t, l * 1e3))
PY
}
# worst: the probe's slowest hit per 250 ms bucket around the purge
worst() {
    local t0
    t0=$(stat -c %.6Y "$OUT/purged" 2>/dev/null || head -1 "$OUT/probe.$1" | cut -d, -f1)
    awk -F, -v t0="$t0" '{ b = int(($1 - t0) * 4 + 1000) - 1000; if ($2 > m[b]) m[b] = $2; n[b]++ }
        END { for (b in m) if (b >= -4 && b < 24) printf "%6.2f s %7.2f ms (%d hits)\n", b / 4, m[b], n[b] }' \
        "$OUT/probe.$1" | sort -n | sed "s/^/  $1 probe: /"
    awk -F, '{ if ($2 > m) m = $2 } END { printf "  %s probe: max %.2f ms over %d hits\n", name, m, NR }' \
        name="$1" "$OUT/probe.$1"
}
run() { # NAME PURGE(0/1)
    probe "$1" &
    local pr=$!
    taskset -c 1 wrk -t1 -c16 -d"${SECS}s" --latency -s "$OUT/hits.lua" "$P" >"$OUT/wrk.$1" 2>&1 &
    local w=$!
    if [ "$2" = 1 ]; then
        sleep 3
        local before
        before=$(rss_mib)
        local n0
        n0=$(wc -l <"$OUT/cachet.err")
        curl -s -o "$OUT/purge.json" -X POST "$A/purge?tag=fill"
        touch "$OUT/purged"
        sleep 5
        echo "purge: $(cat "$OUT/purge.json"); RSS $before -> $(rss_mib) MiB 5 s later"
        tail -n +"$((n0 + 1))" "$OUT/cachet.err" | grep -E 'memory|purge' | sed 's/^/  log: /'
    fi
    wait "$w" "$pr"
    awk -v name="$1" '
        $1 == "Latency" && !lat { lat = 1; max = $4 }
        $1 == "50%" { p50 = $2 } $1 == "99%" { p99 = $2 }
        $1 == "Requests/sec:" { rps = $2 }
        END { printf "%-8s p50=%s p99=%s max=%s req/s=%s\n", name, p50, p99, max, rps }' "$OUT/wrk.$1"
    [ "$2" = 1 ] && worst "$1" || worst "$1" | tail -1
}
run baseline 0
run purge 1
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
