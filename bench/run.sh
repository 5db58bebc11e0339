#!/usr/bin/env bash
# bench/run.sh: cachet side by side with cachet-origin, lighttpd, nginx,
# Varnish, HAProxy and the classic nginx -> Varnish -> lighttpd stack.
# Method and traps: bench/README.md; results: bench/results/.
set -u

usage() {
    cat <<'EOF'
usage: bench/run.sh [--quick | --full] [--only LIST] [--bin DIR] [--out DIR]
                    [--duration SECS] [--rounds N] [--workers N]

  --quick          short cells (2 s; c=1000: 3 s, 5 s over HTTPS), every row
                   (the default; about 7 minutes)
  --full           10 s cells and the whole grid (every system on every row)
  --only LIST      comma-separated workloads or systems to run, globs allowed:
                   --only 'origin-*'   --only nginx,cachet   --only hit-1k/https
                   --only origin-1k:co (WORKLOAD:SYSTEM, one cell)
  --bin DIR        where cachet and cachet-origin are (default: build/bin)
  --out DIR        where the report goes (default: bench/results): latest.md,
                   latest.html, the pictures latest-*.png and the CSVs
  --duration SECS  seconds per cell, overriding the mode
  --rounds N       alternating rounds per cell (default 3)
  --workers N      workers of the scaling row "cachet-w2" (default 2)

Workloads: origin-1k origin-json hit-1k hit-1k-c1000 hit-100k newconn
tls-full tls-resumed pass-1k slow-100ms comp-{1k,10k,100k}-{br,gzip,id}
(each /http or /https), and micro
(bench_http_parse and bench_cache from the build, pinned to CPU 1; they run
with every run that has no --only, or with --only micro).
Systems: co (cachet-origin) lt (lighttpd) nginx varnish haproxy stack cachet
cachet-w2.
EOF
}

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
CMDLINE="bench/run.sh${*:+ $*}"
MODE=quick ONLY="" BIN=$SRC/build/bin OUT=$HERE/results SECS="" ROUNDS=3 W2=2
while [ $# -gt 0 ]; do
    case $1 in
        --quick) MODE=quick ;;
        --full) MODE=full ;;
        --only) ONLY=${2:?--only needs a list}; shift ;;
        --bin) BIN=${2:?}; shift ;;
        --out) OUT=${2:?}; shift ;;
        --duration) SECS=${2:?}; shift ;;
        --rounds) ROUNDS=${2:?}; shift ;;
        --workers) W2=${2:?}; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $W2 =~ ^[1-9][0-9]*$ && ${SECS:-1} =~ ^[1-9][0-9]*$ ]] ||
    { echo "run.sh: --rounds, --workers and --duration take positive integers" >&2; exit 2; }
BIN=$(cd "$BIN" 2>/dev/null && pwd) || { echo "run.sh: no folder $BIN" >&2; exit 2; }

source "$HERE/lib/bench.sh"
source "$HERE/lib/peers.sh"
source "$HERE/lib/cell.sh"
source "$HERE/lib/report.sh"
source "$HERE/lib/render.sh"

for tool in wrk taskset ss curl openssl awk; do
    command -v $tool >/dev/null || { echo "run.sh: $tool is missing (make deps-bench)" >&2; exit 2; }
done
[ "$(nproc --all)" -ge 2 ] || { echo "run.sh: needs 2 cores (server on CPU 1, load on CPU 0)" >&2; exit 2; }

# The harness itself and everything it starts without an explicit taskset
# (curl, ss, the queue sampler) stay on the load generator's core.
taskset -pc 0 $$ >/dev/null

# The grid. One line per workload:
#   name proto object conns client systems...
# client: wrk (keep-alive), close (wrk, new connection per request),
# s_new / s_reuse (CONNS parallel openssl s_time, full / resumed handshakes).
# Systems marked + run in --full only.
GRID=(
    "origin-1k    http  1k      100  wrk     co lt"
    "origin-json  http  json    100  wrk     co lt"
    "hit-1k       http  hit1k   100  wrk     nginx varnish haproxy cachet cachet-w2 +stack"
    "hit-1k       https hit1k   100  wrk     nginx haproxy stack cachet cachet-w2"
    "hit-1k-c1000 http  hit1k   1000 wrk     nginx varnish haproxy cachet +cachet-w2 +stack"
    "hit-1k-c1000 https hit1k   1000 wrk     nginx haproxy stack cachet +cachet-w2"
    "hit-100k     http  hit100k 100  wrk     nginx varnish haproxy cachet +cachet-w2 +stack"
    "hit-100k     https hit100k 100  wrk     nginx haproxy stack cachet +cachet-w2"
    "newconn      http  hit1k   50   close   co lt nginx varnish haproxy cachet +stack +cachet-w2"
    "tls-full     https hit1k   4    s_new   nginx haproxy stack cachet +cachet-w2"
    "tls-resumed  https hit1k   4    s_reuse nginx haproxy stack cachet +cachet-w2"
    "pass-1k      http  pass1k  100  wrk     co lt nginx varnish haproxy stack cachet +cachet-w2"
    "slow-100ms   http  slow    100  wrk     co nginx varnish haproxy cachet +cachet-w2"
    # Compression (issue 18): JSON hits for br, gzip and identity clients,
    # cachet (compressed once, stored) beside nginx with gzip on (stores the
    # identity body, compresses per request; peers/nginx.conf), each client
    # kind its own URL so each measures its own stored variant. The body is
    # cachet-origin's pattern typed application/json: it compresses far
    # better than real JSON, so nginx's per-request gzip is cheaper here than
    # on real documents (bench/compress/gzip_vs_nginx.sh uses a real one).
    "comp-1k-br       http  hitjson1k   100 wrk-br       nginx cachet"
    "comp-1k-gzip     http  hitjson1k   100 wrk-gzip     nginx cachet"
    "comp-1k-id       http  hitjson1k   100 wrk-identity nginx cachet"
    "comp-10k-br      http  hitjson10k  100 wrk-br       nginx cachet"
    "comp-10k-gzip    http  hitjson10k  100 wrk-gzip     nginx cachet"
    "comp-10k-id      http  hitjson10k  100 wrk-identity nginx cachet"
    "comp-100k-br     http  hitjson100k 100 wrk-br       nginx cachet"
    "comp-100k-gzip   http  hitjson100k 100 wrk-gzip     nginx cachet"
    "comp-100k-id     http  hitjson100k 100 wrk-identity nginx cachet"
    "comp-100k-br     https hitjson100k 100 wrk-br       +nginx +cachet"
    "comp-100k-gzip   https hitjson100k 100 wrk-gzip     +nginx +cachet"
    "comp-100k-id     https hitjson100k 100 wrk-identity +nginx +cachet"
)

# Which (workload, system) cells this run includes.
selected() {
    local label=$1 s=$2 pat
    [ -z "$ONLY" ] && return 0
    IFS=, read -ra pats <<<"$ONLY"
    for pat in "${pats[@]}"; do
        # WORKLOAD:SYSTEM selects one cell; otherwise either may match.
        # shellcheck disable=SC2053
        if [[ $pat == *:* ]]; then
            [[ ($label == ${pat%%:*} || ${label%/*} == ${pat%%:*}) && $s == ${pat#*:} ]] && return 0
            continue
        fi
        [[ $label == $pat || ${label%/*} == $pat || $s == $pat ]] && return 0
    done
    return 1
}

# Expand the grid into cells "label proto object conns client system".
CELLS=()
declare -A NEED=()
for line in "${GRID[@]}"; do
    read -r wl proto object conns client systems <<<"$line"
    for s in $systems; do
        if [ "${s:0:1}" = + ]; then [ "$MODE" = full ] || continue; s=${s:1}; fi
        selected "$wl/$proto" "$s" || continue
        CELLS+=("$wl $proto $object $conns $client $s")
        NEED[$s]=1
    done
done
MICRO=""
selected micro - && MICRO=1
[ ${#CELLS[@]} -gt 0 ] || [ -n "$MICRO" ] || { echo "run.sh: --only '$ONLY' selects no cell" >&2; exit 2; }

b_init "$(mktemp -d "${TMPDIR:-/tmp}/cachet-bench.XXXXXX")"
RUN_ID=$(date +%s)
RUNS_CSV=$B_TMP/runs.csv
echo "$RUNS_HEADER" >"$RUNS_CSV"
# Where the server's CPU went (clock ticks per round): user space or kernel.
SPLIT_CSV=$B_TMP/cpu_split.csv
echo "workload,system,round,user_ticks,sys_ticks" >"$SPLIT_CSV"
mkdir -p "$OUT"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "bench: $MODE, ${#CELLS[@]} cells x $ROUNDS rounds; logs in $B_TMP" >&2

# lighttpd's docroot holds the same bytes as cachet-origin's objects.
make_docroot() {
    local root=$B_TMP/docroot co=${SYS_HTTP[co]:-}
    mkdir -p "$root/c" "$root/ns"
    if [ -n "$co" ]; then
        curl -s -m 5 -o "$root/1k" "http://127.0.0.1:$co/1k"
        curl -s -m 5 -o "$root/json" "http://127.0.0.1:$co/json"
        curl -s -m 5 -o "$root/c/1k" "http://127.0.0.1:$co/gen?size=1024"
        curl -s -m 5 -o "$root/c/100k" "http://127.0.0.1:$co/gen?size=102400"
    fi
    # Without cachet-origin (or if it failed to answer) the same sizes.
    [ -s "$root/1k" ] || head -c 1024 /dev/zero | tr '\0' a >"$root/1k"
    [ -s "$root/json" ] || printf '{"message":"Hello, World!"}' >"$root/json"
    [ -s "$root/c/1k" ] || cp "$root/1k" "$root/c/1k"
    [ -s "$root/c/100k" ] || head -c 102400 /dev/zero | tr '\0' b >"$root/c/100k"
    cp "$root/c/1k" "$root/ns/1k"
    echo "$root"
}

# Start what the selected cells need. The caches sit in front of
# cachet-origin (counted, so hits can be checked) or lighttpd if absent.
start_systems() {
    local root oport
    p_cert || { echo "run.sh: openssl could not make a certificate" >&2; exit 1; }
    ORIGIN_CO=co ORIGIN_LT=lt
    p_start_co co "$BIN" || echo "bench: co: ${SYS_WHY[co]}" >&2
    root=$(make_docroot)
    if [ -n "${NEED[lt]:-}${NEED[stack]:-}" ] || [ -z "${SYS_HTTP[co]:-}" ]; then
        p_start_lt lt "$root" || echo "bench: lt: ${SYS_WHY[lt]}" >&2
    fi
    if [ -n "${SYS_HTTP[co]:-}" ]; then ORIGIN=co; else ORIGIN=lt; fi
    oport=${SYS_HTTP[$ORIGIN]:-0}
    [ -n "${NEED[nginx]:-}" ] && { p_start_nginx nginx "$oport" bench && SYS_ORIGIN[nginx]=$ORIGIN; }
    [ -n "${NEED[varnish]:-}" ] && { p_start_varnish varnish "$oport" && SYS_ORIGIN[varnish]=$ORIGIN; }
    [ -n "${NEED[haproxy]:-}" ] && { p_start_haproxy haproxy "$oport" && SYS_ORIGIN[haproxy]=$ORIGIN; }
    [ -n "${NEED[stack]:-}" ] && p_start_stack stack "$root"
    [ -n "${NEED[cachet]:-}" ] && { p_start_cachet cachet "$BIN" "$oport" 1 "$SERVER_CPU" &&
        SYS_ORIGIN[cachet]=$ORIGIN && probe_cachet cachet; }
    [ -n "${NEED[cachet-w2]:-}" ] && { p_start_cachet cachet-w2 "$BIN" "$oport" "$W2" 0,1 &&
        SYS_ORIGIN[cachet-w2]=$ORIGIN && probe_cachet cachet-w2; }
    return 0
}

# cachet lands in stages: a cache exists if a second request for a
# cacheable object carries Cache-Status with a hit; TLS exists if the https
# listener answers.
declare -A CAP=()
probe_cachet() {
    local s=$1 path url
    path=$(c_path "$ORIGIN" hit1k probe)
    url="http://127.0.0.1:${SYS_HTTP[$s]}$path"
    curl -s -m 5 -o /dev/null "$url"
    if curl -s -m 5 -o /dev/null -D - "$url" | grep -qiE '^cache-status:.*hit'; then CAP[$s-cache]=1; fi
    if [ -n "${SYS_HTTPS[$s]:-}" ] &&
        [ "$(curl -sk -m 5 -o /dev/null -w '%{http_code}' "https://127.0.0.1:${SYS_HTTPS[$s]}$path")" = 200 ]; then
        CAP[$s-tls]=1
    fi
}

# Why cell (object, proto, client, system) cannot run; empty if it can.
unavailable() {
    local object=$1 proto=$2 s=$3
    [ -n "${SYS_HTTP[$s]:-}" ] || { echo "${SYS_WHY[$s]:-not started}"; return; }
    [ "$proto" = https ] && [ -z "${SYS_HTTPS[$s]:-}" ] && { echo "no HTTPS listener"; return; }
    if [ "${s:0:6}" = cachet ]; then
        [ "$proto" = https ] && [ -z "${CAP[$s-tls]:-}" ] && { echo "not yet available (no TLS)"; return; }
        [[ $object == hit* || $object == slow ]] && [ -z "${CAP[$s-cache]:-}" ] &&
            { echo "not yet available (no cache: no Cache-Status hit)"; return; }
    fi
    c_path "${SYS_ORIGIN[$s]:-$ORIGIN}" "$object" x >/dev/null ||
        echo "not available (origin ${SYS_ORIGIN[$s]:-$ORIGIN} cannot serve $object)"
}

# Quick cells are 2 s; c=1000 needs longer to amortize opening 1000
# connections, and over HTTPS their 1000 full handshakes (~0.5 s of server
# CPU when the core is free, several seconds on a loaded machine).
cell_secs() {
    local conns=$1 proto=$2
    if [ -n "$SECS" ]; then echo "$SECS"
    elif [ "$MODE" = full ]; then echo 10
    elif [ "$conns" -ge 1000 ] && [ "$proto" = https ]; then echo 5
    elif [ "$conns" -ge 1000 ]; then echo 3
    else echo 2; fi
}

# Rounds alternate systems within a workload: A B C A B C A B C.
run_grid() {
    local prev="" i r cell wl proto object conns client s why
    local -a group=()
    for ((i = 0; i <= ${#CELLS[@]}; i++)); do
        cell=${CELLS[$i]:-}
        read -r wl proto object conns client s <<<"$cell"
        if [ -n "$prev" ] && { [ -z "$cell" ] || [ "$wl/$proto" != "$prev" ]; }; then
            for ((r = 1; r <= ROUNDS; r++)); do
                for c in "${group[@]}"; do
                    read -r gwl gproto gobject gconns gclient gs <<<"$c"
                    printf 'bench: %-18s %-10s round %d\n' "$gwl/$gproto" "$gs" "$r" >&2
                    c_run "$gwl" "$gproto" "$gobject" "$gconns" "$gclient" "$gs" "$r" "$(cell_secs "$gconns" "$gproto")"
                done
            done
            group=()
        fi
        [ -n "$cell" ] || break
        prev=$wl/$proto
        why=$(unavailable "$object" "$proto" "$s")
        if [ -n "$why" ]; then
            echo "$wl/$proto,$s,na,$why" >>"$RUNS_CSV"
        else
            group+=("$cell")
        fi
    done
}

# The library's own micro-benchmarks (request parsing; cache lookup and
# insert over 1 M keys; route choice at 100 sites x 20 routes), when the build has them: their output, verbatim.
run_micro() {
    local b args
    for b in bench_http_parse bench_cache bench_route; do
        [ -x "$BIN/$b" ] || { echo "$b: not built in $BIN"; continue; }
        args=()
        if [ "$MODE" = quick ]; then
            # bench_cache keeps its 1 M keys: that is the figure asked for.
            case $b in bench_http_parse | bench_route) args=(--seconds 0.5) ;; esac
        fi
        echo "\$ $b ${args[*]}"
        taskset -c "$SERVER_CPU" timeout -k 5 300 "$BIN/$b" "${args[@]}" 2>&1 || echo "$b: failed ($?)"
        echo
    done
    # Lookups again as conf/cachet.service.in runs cachet: glibc's malloc asking
    # for transparent huge pages (Debian's THP mode is "madvise"), which
    # takes the TLB miss off a uniform lookup over 1 M objects.
    if [ -x "$BIN/bench_cache" ]; then
        echo "\$ GLIBC_TUNABLES=glibc.malloc.hugetlb=1 bench_cache --lookups-only"
        GLIBC_TUNABLES=glibc.malloc.hugetlb=1 taskset -c "$SERVER_CPU" timeout -k 5 300 \
            "$BIN/bench_cache" --lookups-only 2>&1 || echo "bench_cache: failed ($?)"
        echo
    fi
}

T0=$(date +%s)
if [ ${#CELLS[@]} -gt 0 ]; then
    start_systems
    run_grid
fi
if [ -n "$MICRO" ]; then
    echo "bench: micro-benchmarks" >&2
    run_micro >"$B_TMP/micro.txt"
fi
ELAPSED=$(($(date +%s) - T0))
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

r_summarize "$RUNS_CSV" >"$OUT/latest.csv"
cp "$RUNS_CSV" "$OUT/latest-runs.csv"
cp "$SPLIT_CSV" "$OUT/latest-cpu-split.csv"
# What render.sh needs besides the CSVs to write the report again later.
{
    echo "started=$STARTED"
    echo "command=$CMDLINE"
    echo "mode=$MODE"
    echo "rounds=$ROUNDS"
    echo "elapsed=$ELAPSED"
    echo "machine=$(nproc --all) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)," \
        "$(awk '/^MemTotal:/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)"
    echo "load_before=$LOAD_BEFORE"
    echo "load_after=$LOAD_AFTER"
    echo "build=${BIN#"$SRC"/}, source $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo "not a git checkout")"
} >"$OUT/latest-meta.txt"
if [ -n "$MICRO" ]; then cp "$B_TMP/micro.txt" "$OUT/latest-micro.txt"; else rm -f "$OUT/latest-micro.txt"; fi
r_render "$OUT"
cat "$OUT/latest.md"
echo >&2
echo "bench: wrote $OUT/latest.md latest.html latest.csv latest-runs.csv latest-cpu-split.csv latest-meta.txt and the pictures:" \
    "$(cd "$OUT" && ls latest-*.png 2>/dev/null | tr '\n' ' ')" >&2
b_cleanup
if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$B_TMP"; else echo "bench: kept $B_TMP" >&2; fi
