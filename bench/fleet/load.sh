#!/usr/bin/env bash
# bench/fleet/load.sh: a fleet under wrk load on one machine (issue 17).
#
#   bench/fleet/load.sh BINDIR [SECS]
#
# cachet-origin, a standalone redis-server and cachet nodes on loopback;
# wrk (keep-alive, one instance per node, 10 connections each) asks for
# 1 KiB objects spread over 1000 keys (random per request, max-age 1h).
# Cases, each SECS (default 10) seconds:
#   one         1 node, 2 workers, three wrk -c 10 on it
#   three       3 nodes, 1 worker each, wrk -c 10 on each (the same clients)
#   kill-node   three, node c killed (SIGKILL) at SECS/3: the failures of
#               a's and b's clients (should be 0) and of c's own
#   kill-redis  three, Redis killed at SECS/3 and restarted at 2*SECS/3:
#               failures (should be 0), then Redis up again on every node and
#               a purge's fan-out through it
# Prints per case: requests/s (the wrk instances summed), failed requests
# (non-2xx + socket errors, per node), origin requests, hit ratio. All of it
# shares the machine's cores (nproc printed): a fleet on one machine shows
# what it costs, not what it gains (issue 17: expect no gain on 2 cores;
# the figures that matter are origin requests and hit ratio).
set -u
BIN=$(cd "${1:?usage: load.sh BINDIR [SECS]}" && pwd)
SECS=${2:-10}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-fleetload.XXXXXX")
declare -A PID=()
cleanup() { for p in "${PID[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
ports() { /usr/bin/python3 -c '
import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])' "$1"; }
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_up() { local i; for ((i = 0; i < 3000; i++)); do up "$1" && return 0; sleep 0.01; done; echo "port $1 not up" >&2; exit 1; }
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v s="cachet_$2" '$1 == s || $1 == s "_total" { v = $2 } END { print v + 0 }'; }
# hits NODE: "HITS TOTAL" of its cache (a peer's request counts on its owner too)
hits() { curl -s "http://127.0.0.1:$1/metrics" | awk '$1 ~ /^cachet_cache_requests_total\{cache_status="(hit|stale)"/ { h += $2 } $1 ~ /^cachet_cache_requests_total\{/ { t += $2 } END { printf "%d %d\n", h, t }'; }

read -r OP RP < <(ports 2)
"$BIN/cachet-origin" --port "$OP" --workers 1 >"$TMP/origin.out" 2>&1 &
PID[origin]=$!
wait_up "$OP"
start_redis() {
    redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no >"$TMP/redis.out" 2>&1 &
    PID[redis]=$!
    wait_up "$RP"
}
cat >"$TMP/keys.lua" <<'EOF'
math.randomseed(os.time() + math.floor(os.clock() * 1e6))
request = function()
  return wrk.format("GET", "/1k?cache-control=max-age%3D3600&k=" .. math.random(1, 1000),
                    { Host = "fleet.test" })
end
EOF

# start_nodes N WORKERS: nodes a.. with Redis; sets PORT[], ADMIN[]
declare -A PORT=() ADMIN=()
start_nodes() {
    local n=$1 w=$2 names=(a b c) i m members=""
    read -r -a P < <(ports $((2 * n)))
    for ((i = 0; i < n; i++)); do
        m=${names[$i]}; PORT[$m]=${P[$i]}; ADMIN[$m]=${P[$((n + i))]}
        members+="{ name = \"$m\"; address = \"127.0.0.1:${PORT[$m]}\"; admin = \"127.0.0.1:${ADMIN[$m]}\"; },"
    done
    for ((i = 0; i < n; i++)); do
        m=${names[$i]}
        local fleet=""
        ((n > 1)) && fleet="fleet = { self = \"$m\"; members = ( ${members%,} ); redis = \"127.0.0.1:$RP\"; register_ttl = \"3s\"; };"
        cat >"$TMP/$m.conf" <<EOF2
workers = $w;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$m]}"; } );
backends = ( { address = "127.0.0.1:$OP"; } );
cache = { size = "64M"; };
admin = { listen = "127.0.0.1:${ADMIN[$m]}"; };
$fleet
EOF2
        "$BIN/cachet" -c "$TMP/$m.conf" >"$TMP/$m.out" 2>"$TMP/$m.err" &
        PID[$m]=$!
    done
    for ((i = 0; i < n; i++)); do m=${names[$i]}; wait_up "${PORT[$m]}"; wait_up "${ADMIN[$m]}"; done
    if ((n > 1)); then
        for m in "${names[@]:0:$n}"; do # every node sees all, so they agree on owners
            for ((i = 0; i < 1000; i++)); do
                [ "$(metric "${ADMIN[$m]}" fleet_members_live)" = "$n" ] && break
                sleep 0.01
            done
        done
    fi
}
stop_nodes() { local m; for m in a b c; do [ -n "${PID[$m]:-}" ] && { kill -TERM "${PID[$m]}" 2>/dev/null; wait "${PID[$m]}" 2>/dev/null; unset "PID[$m]"; }; done; PORT=(); ADMIN=(); }
WRKS=()
# wrk_on NODE CONNS [TAG]: output in $TMP/wrk.TAG (default NODE)
wrk_on() { wrk -t 1 -c "$2" -d "${SECS}s" --latency -s "$TMP/keys.lua" "http://127.0.0.1:${PORT[$1]}/" >"$TMP/wrk.${3:-$1}" 2>&1 & WRKS+=($!); }
wait_wrk() { wait "${WRKS[@]}"; WRKS=(); }
rps() { awk '/^Requests\/sec/ { print int($2) }' "$TMP/wrk.$1"; }
fails() { awk '/Non-2xx/ { n += $NF } /Socket errors/ { gsub(",", ""); n += $4 + $6 + $8 + $10 } END { print n + 0 }' "$TMP/wrk.$1"; }
origin_reqs() { curl -s "http://127.0.0.1:$OP/_origin/stats" | sed -n 's/.*"total": *\([0-9]*\).*/\1/p'; }
curl -s -X POST "http://127.0.0.1:$OP/_origin/stats/reset" >/dev/null

start_redis
echo "load.sh: ${SECS}s per case, 1000 keys of 1 KiB, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
report() { # CASE NODES...
    local total=0 fl="" m h t hs=0 ts=0
    for m in "${@:2}"; do
        total=$((total + $(rps "$m")))
        fl+=" $m:$(fails "$m")"
    done
    for m in $(printf '%s\n' "${@:2}" | sed 's/[0-9]*$//' | sort -u); do # each node once
        read -r h t < <(hits "${ADMIN[$m]}" 2>/dev/null || echo "0 0")
        hs=$((hs + ${h:-0})); ts=$((ts + ${t:-0}))
    done
    local ratio
    ratio=$(awk -v h="$hs" -v t="$ts" 'BEGIN { printf "%.3f", t ? h / t : 0 }')
    echo "case=$1 req_per_s=$total failed=${fl# } origin_requests=$(origin_reqs) hit_ratio=$ratio ${EXTRA:-}"
}

# ---- one node
curl -s -X POST "http://127.0.0.1:$OP/_origin/stats/reset" >/dev/null
start_nodes 1 2
for t in a a2 a3; do wrk_on a 10 $t; done; wait_wrk
for t in a2 a3; do ADMIN[$t]=${ADMIN[a]}; done
EXTRA="" report one a a2 a3
stop_nodes

# ---- three nodes
curl -s -X POST "http://127.0.0.1:$OP/_origin/stats/reset" >/dev/null
start_nodes 3 1
for m in a b c; do wrk_on $m 10; done; wait_wrk
report three a b c
stop_nodes

# ---- three nodes, c killed under load
curl -s -X POST "http://127.0.0.1:$OP/_origin/stats/reset" >/dev/null
start_nodes 3 1
for m in a b c; do wrk_on $m 10; done
sleep $((SECS / 3))
kill -KILL "${PID[c]}"; wait "${PID[c]}" 2>/dev/null; unset "PID[c]"
wait_wrk
EXTRA="owner_down_a=$(metric "${ADMIN[a]}" fleet_owner_down) owner_down_b=$(metric "${ADMIN[b]}" fleet_owner_down) live_a=$(metric "${ADMIN[a]}" fleet_members_live)" report kill-node a b c
stop_nodes

# ---- three nodes, Redis killed and restarted under load
curl -s -X POST "http://127.0.0.1:$OP/_origin/stats/reset" >/dev/null
start_nodes 3 1
for m in a b c; do wrk_on $m 10; done
sleep $((SECS / 3))
kill -KILL "${PID[redis]}"; wait "${PID[redis]}" 2>/dev/null
sleep $((SECS / 3))
start_redis
wait_wrk
ok=0
for i in $(seq 1 500); do
    up_all=1
    for m in a b c; do [ "$(metric "${ADMIN[$m]}" fleet_redis_up)" = 1 ] || up_all=0; done
    ((up_all)) && { ok=1; break; }
    sleep 0.02
done
p0=$(metric "${ADMIN[b]}" fleet_purges_applied)
curl -s -X POST "http://127.0.0.1:${ADMIN[a]}/purge?url=http%3A%2F%2Ffleet.test%2F1k%3Fk%3D1" >/dev/null
for i in $(seq 1 500); do [ "$(metric "${ADMIN[b]}" fleet_purges_applied)" -gt "$p0" ] && break; sleep 0.02; done
EXTRA="redis_up_again=$ok purge_fanout_after=$(($(metric "${ADMIN[b]}" fleet_purges_applied) - p0)) redis_errors_a=$(metric "${ADMIN[a]}" fleet_redis_errors) http_fanout_a=$(metric "${ADMIN[a]}" fleet_http_fanout)" report kill-redis a b c
stop_nodes
