#!/usr/bin/env bash
# bench/compress/recode_cost.sh: what one recode of the bench's 100 KiB JSON
# document (gzip_vs_nginx.sh's) costs cachet, beside what one origin fetch of
# it costs (issue 46: compression.store_transcoded is the default because the
# first is CPU on the proxy once per coding class, the second the origin's
# work each time).
#
#   bench/compress/recode_cost.sh BINDIR [OBJECTS] [DELAY_MS]
#
# One cachet worker, one cachet-origin worker. For each of OBJECTS distinct
# URLs: a br client fills the object (fetched, encoded to br), then a zstd, a
# gzip and an identity client are answered from it (recoded br -> zstd, br
# -> gzip; decoded), then one more br request is a hit. Read from cachet's
# own counters (/stats), so nothing is guessed:
#   - compress_cpu_us by target coding / recodes: thread CPU time of one
#     recode (decode br + encode), the same clock the fill's encoder uses;
#   - origin_seconds_saved / hits: the fetch time of one object (request
#     sent to last body byte), with the origin's delay= (DELAY_MS, default
#     50: the middle class of issue 46's slow-origin trace, {5, 50, 500} ms)
#     and without it (0: the local origin's own time for 100 KiB);
#   - cachet-origin's utime+stime per request: the origin's CPU per fetch.
# A fill encodes as the body arrives, on the worker that reads it, so the
# fetch time includes that encoding (about one br encode, the fill line).
# Medians are not available from counters: these are means over OBJECTS.
set -u
BIN=$(cd "${1:?usage: recode_cost.sh BINDIR [OBJECTS] [DELAY_MS]}" && pwd)
N=${2:-50}
DELAY=${3:-50}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-recode.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/../lib/bench.sh" # b_free_port, b_cpu_ticks
wait_http() { for ((i = 0; i < 500; i++)); do curl -s -o /dev/null "$1" && return 0; sleep 0.02; done; return 1; }

mkdir -p "$TMP/root"
python3 "$(dirname "$0")/bench_doc.py" "$TMP/root/doc.json"
b_free_port OPORT
"$BIN/cachet-origin" --port "$OPORT" --workers 1 --root "$TMP/root" >"$TMP/origin.out" 2>&1 &
opid=$!; pids+=($opid)
wait_http "http://127.0.0.1:$OPORT/doc.json" || { echo "origin did not start" >&2; exit 1; }
b_free_port CPORT
b_free_port APORT
"$BIN/cachet" --http "127.0.0.1:$CPORT" --https off --admin "127.0.0.1:$APORT" --workers 1 \
    --backend "127.0.0.1:$OPORT" >"$TMP/cachet.out" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$APORT/stats" || { echo "cachet did not start" >&2; exit 1; }
P="http://127.0.0.1:$CPORT"

stats() { curl -s "http://127.0.0.1:$APORT/stats" >"$TMP/$1.json"; }
# one round: N objects at origin delay D ms; prints the figures
round() {
    local d=$1 tag=r$1 i c t0 t1
    stats "$tag-0"
    t0=$(b_cpu_ticks "$opid")
    for ((i = 0; i < N; i++)); do
        u="$P/doc.json?cache-control=max-age%3D86400&delay=$d&o=$tag-$i"
        curl -s -o /dev/null -H 'Accept-Encoding: br' "$u"
        for c in zstd gzip identity br; do curl -s -o /dev/null -H "Accept-Encoding: $c" "$u"; done
    done
    t1=$(b_cpu_ticks "$opid")
    sleep 0.2 # the last request is counted as its response is queued
    stats "$tag-1"
    python3 - "$TMP/$tag-0.json" "$TMP/$tag-1.json" "$N" "$d" "$((t1 - t0))" "$(getconf CLK_TCK)" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
n, d, oticks, hz = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
dv = lambda k, c: b[k][c] - a[k][c]
hits = b["cache_requests"]["hit"] - a["cache_requests"]["hit"]
fetches = b["backends"][0]["upstream_requests"] - a["backends"][0]["upstream_requests"]
saved = b["origin_seconds_saved"] - a["origin_seconds_saved"]
print("origin delay %d ms, %d objects: %d origin fetches, %d hits" % (d, n, fetches, hits))
for c in ("zstd", "gzip"):
    k = dv("compress_objects", c)
    print("  recode br -> %-4s: %6.0f us CPU each (%d recodes)" %
          (c, dv("compress_cpu_us", c) / max(k, 1), k))
print("  fill (fetch + br encode): %6.0f us CPU for the encoder each" %
      (dv("compress_cpu_us", "br") / max(dv("compress_objects", "br"), 1)))
print("  decode for identity    : %6.0f us CPU each (from the stored coding cachet prefers)" %
      (sum(dv("decode_cpu_us", c) for c in b["decode_cpu_us"]) / max(n, 1)))
print("  one origin fetch       : %6.0f us wall (request sent to last byte; mean of %d hits' credit)" %
      (saved * 1e6 / max(hits, 1), hits))
print("  cachet-origin CPU      : %6.0f us per fetch (utime+stime / fetches)" %
      (oticks * 1e6 / hz / max(fetches, 1)))
PY
}
round 0
round "$DELAY"
