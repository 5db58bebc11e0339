#!/usr/bin/env bash
# bench/micro/compcost.sh: what a compressed hit costs cachet, counted rather
# than timed (issue 18's targets: a compressed hit within 1.1x of an
# uncompressed hit of the same stored size).
#
#   bench/micro/compcost.sh BINDIR [N]
#
# One 100 KiB JSON document (a file under cachet-origin's --root) is stored
# once per class; each cell is one keep-alive
# connection making N hits after a warm-up, under valgrind --tool=callgrind
# with the counters zeroed after the warm-up (callgrind_control), over HTTP
# or HTTPS. The reference cells are uncompressed objects (octet-stream, never
# compressed) of exactly the stored size of the br and gzip objects.
# Prints one line per cell:
#   cell=http-br stored=1234 Ir_per_req=7212
# Instructions are user space only and repeat for the same binary and inputs,
# whatever the machine is doing. CONF=FILE runs cachet with -c FILE (the
# command line's listeners and backend still apply): e.g. compression off.
# CELLS picks cells (default below; also identity-from-CODING, origin-gzip).
set -u
BIN=$(cd "${1:?usage: compcost.sh BINDIR [N]}" && pwd)
N=${2:-1000}
SCHEMES=${SCHEMES:-"http https"}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-compcost.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"; }
trap cleanup EXIT
wait_port() { # FILE PATTERN PID
    local i line
    for ((i = 0; i < 6000; i++)); do
        kill -0 "$3" 2>/dev/null || { echo "compcost: exited:" >&2; cat "$1" >&2; return 1; }
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null) && { echo "${line##*:}"; return 0; }
        sleep 0.01
    done
    echo "compcost: no '$2' in $1" >&2
    return 1
}

# 100 KiB of JSON records (ids, names, prices, tags, short texts): gzip 6
# leaves about 15 %, as for typical API answers.
mkdir -p "$TMP/root"
python3 "$(dirname "$0")/../compress/bench_doc.py" "$TMP/root/doc.json"
gzip -6 -n -c "$TMP/root/doc.json" >"$TMP/root/doc.json.gz" # the origin-gzip cell
"$BIN/cachet-origin" --port 0 --workers 1 --root "$TMP/root" >"$TMP/origin.out" 2>&1 &
pids+=($!)
OPORT=$(wait_port "$TMP/origin.out" '^listening on' $!) || exit 1
DOC="/doc.json?cache-control=max-age%3D86400"

client() { # SCHEME PORT PATH AE N ZERO(0/1) DIR: prints the stored length
    python3 - "$@" <<'PY'
import http.client, os, ssl, subprocess, sys
scheme, port, path, ae, n, zero, d = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6] == "1", sys.argv[7]
if scheme == "https":
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=600, context=ctx)
else:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
def get():
    c.request("GET", path, headers={"Accept-Encoding": ae})
    r = c.getresponse(); body = r.read()
    assert r.status == 200, r.status
    return r.getheader("Cache-Status") or "", len(body)
for _ in range(20):
    get()
s, n0 = get()
assert s.startswith("cachet; hit"), s
if zero:
    subprocess.run(["callgrind_control", "-z", os.environ["CG_PID"]], check=True, capture_output=True, cwd=d)
for _ in range(n):
    get()
if zero:
    subprocess.run(["callgrind_control", "-d", os.environ["CG_PID"]], check=True, capture_output=True, cwd=d)
print(n0)
PY
}

# The stored sizes of the br and gzip objects, from a plain run.
"$BIN/cachet" --http 127.0.0.1:0 --https off --admin off --workers 1 \
    --backend "127.0.0.1:$OPORT" --access-log off >"$TMP/plain.out" 2>&1 &
pp=$!; pids+=($pp)
port=$(wait_port "$TMP/plain.out" '^listening on http ' $pp) || exit 1
BR=$(client http "$port" "$DOC" br 0 0 "$TMP") || exit 1
GZ=$(client http "$port" "$DOC" gzip 0 0 "$TMP") || exit 1
kill -TERM $pp; wait $pp 2>/dev/null

for scheme in $SCHEMES; do
    for cell in ${CELLS:-br gzip zstd identity raw-br raw-gzip raw-br-vary}; do
        case $cell in
        raw-br) path="/gen?size=$BR&cache-control=max-age%3D86400" ae=br ;;
        raw-br-vary) path="/gen?size=$BR&cache-control=max-age%3D86400&vary=Accept-Encoding" ae=br ;;
        raw-gzip) path="/gen?size=$GZ&cache-control=max-age%3D86400" ae=gzip ;;
        identity-from-*) path=$DOC ae=identity ;; # decoded from the stored coding (issue 18)
        # the origin's own gzip (no Vary), hit by a gzip client; with CONF
        # setting compression.enabled = false, the hit that compression off costs
        origin-gzip) path="/doc.json.gz?type=application/json&hdr=Content-Encoding%3A%20gzip&cache-control=max-age%3D86400" ae=gzip ;;
        *) path=$DOC ae=$cell ;;
        esac
        d="$TMP/$scheme-$cell"; mkdir -p "$d"
        if [ "$scheme" = https ]; then lopt=(--http off --https 127.0.0.1:0); pat='^listening on https '
        else lopt=(--http 127.0.0.1:0 --https off); pat='^listening on http '; fi
        (cd "$d" && exec valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" "$BIN/cachet" \
            ${CONF:+-c "$CONF"} "${lopt[@]}" --admin off --workers 1 --backend "127.0.0.1:$OPORT" --access-log off \
            >"$d/cachet.out" 2>"$d/cachet.err") &
        vp=$!; pids+=($vp)
        port=$(wait_port "$d/cachet.out" "$pat" $vp) || exit 1
        [[ $cell == identity-from-* ]] && curl -sk -o /dev/null -H "Accept-Encoding: ${cell#identity-from-}" \
            "$scheme://127.0.0.1:$port$path"
        stored=$(CG_PID=$vp client "$scheme" "$port" "$path" "$ae" "$N" 1 "$d") || exit 1
        sleep 0.5
        total=0
        for f in "$d"/cg.*.[0-9]*; do
            [ -f "$f" ] || continue
            ir=$(awk '/^summary:/ { print $2 }' "$f"); total=$((total + ${ir:-0}))
        done
        kill -TERM $vp; wait $vp 2>/dev/null
        echo "cell=$scheme-$cell stored=$stored Ir_per_req=$((total / N))"
    done
done
