# tests/integration/lib.sh: sourced by every integration test script.
#
# Starts the real binaries on free loopback ports, waits for their
# "listening on" lines (never a sleep), checks responses, and stops every
# process it started when the script exits. The script ends with ct_done,
# which prints "N passed, N failed" and sets the exit code.
#
#   ct_start NAME CMD...      run CMD in the background, output in $CT_TMP/NAME.out
#   ct_wait_listen NAME KIND  wait for "listening on KIND ADDR:PORT" (KIND may be
#                             empty for cachet-origin's "listening on ADDR:PORT");
#                             prints PORT
#   ct_start_origin [ARGS...] cachet-origin as "origin" (--port 0 --workers 1,
#                             then ARGS); waits; sets OPORT and O (its URL)
#   ct_start_proxy ARGS...    cachet as "proxy" with ARGS (-c FILE or flags);
#                             waits for its http listener; sets PPORT and P
#   ct_start_pair [ARGS...]   both, cachet in front of the origin: --http
#                             127.0.0.1:0 --https off --admin off --backend
#                             <origin>, each default left out if ARGS has it
#   ct_stop NAME [SIG]        signal it (default TERM) and wait for it
#   ct_wait_until SECS CMD... poll CMD until it succeeds, at most SECS seconds
#                             (e.g. ct_wait_until 20 ct_origin_total_ge "$OPORT" 1)
#   ct_reload PID N [ERRLOG]  SIGHUP PID; wait until configuration N is in use by
#                             every worker (ERRLOG: default $CT_TMP/proxy.err)
#   ct_check DESC ACTUAL EXPECTED      equality
#   ct_check_match DESC ACTUAL REGEX   bash regex
#   ct_done

set -u
CT_BIN=${CT_BIN:?CT_BIN must name the folder with the built binaries}
CT_SRC=${CT_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-integ.XXXXXX")
CT_PORTS=${TMPDIR:-/tmp}/ct-ports # ct_free_ports's reservations, shared by every test
CT_PASS=0
CT_FAIL=0
declare -A CT_PIDS=()

ct_cleanup() {
    local name
    for name in "${!CT_PIDS[@]}"; do
        kill -KILL "${CT_PIDS[$name]}" 2>/dev/null
    done
    wait 2>/dev/null
    grep -lsx "$$" "$CT_PORTS"/* | xargs -r rm -f
    if [ "$CT_FAIL" -eq 0 ]; then rm -rf "$CT_TMP"; else echo "kept $CT_TMP"; fi
}
trap ct_cleanup EXIT

ct_start() {
    local name=$1
    shift
    # emptied here, not by the background job's redirections (done after the
    # fork): a restarted NAME's ct_wait_listen must not read the last run's line
    : >"$CT_TMP/$name.out"
    : >"$CT_TMP/$name.err"
    "$@" >"$CT_TMP/$name.out" 2>"$CT_TMP/$name.err" &
    CT_PIDS[$name]=$!
}

ct_pid() { echo "${CT_PIDS[$1]}"; }

# ct_rss_kb PID: the resident set size of PID, in KiB.
ct_rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# ct_peak_rss_during PID OUT CMD...: run CMD (its stdout into OUT) while
# sampling PID's RSS every 20 ms; prints the peak seen (KiB).
ct_peak_rss_during() {
    local pid=$1 out=$2 peak r job
    shift 2
    peak=$(ct_rss_kb "$pid")
    "$@" >"$out" &
    job=$!
    while kill -0 "$job" 2>/dev/null; do
        r=$(ct_rss_kb "$pid")
        ((r > peak)) && peak=$r
        sleep 0.02
    done
    wait "$job"
    echo "$peak"
}

# Wait up to 60 s for the announce line (a sanitized build beside a parallel
# ctest can take seconds to start); print the port.
ct_wait_listen() {
    local name=$1 kind=${2:-} pattern i line
    if [ -n "$kind" ]; then pattern="^listening on $kind "; else pattern="^listening on [0-9[]"; fi
    for ((i = 0; i < 6000; i++)); do
        line=$(grep -m1 -E "$pattern" "$CT_TMP/$name.out" 2>/dev/null)
        if [ -n "$line" ]; then
            echo "${line##*:}"
            return 0
        fi
        if ! kill -0 "${CT_PIDS[$name]}" 2>/dev/null; then
            echo "ct_wait_listen: $name exited; stderr:" >&2
            cat "$CT_TMP/$name.err" >&2
            return 1
        fi
        sleep 0.01
    done
    echo "ct_wait_listen: $name did not announce '$pattern'" >&2
    return 1
}

# ct_wait_until SECONDS CMD...: poll CMD every 10 ms until it succeeds (0) or
# SECONDS of wall time pass (1), CMD's own time included: on a loaded machine
# a count of tries would stretch the bound without limit. For conditions
# whose time grows under load or sanitizers: the bound is generous, the wait
# is as short as the condition allows. CMD is tried once more at the bound.
ct_wait_until() {
    local limit=$1 end
    shift
    end=$((${EPOCHREALTIME/./} + limit * 1000000)) # microseconds, no fork (bash 5)
    while ((${EPOCHREALTIME/./} < end)); do
        "$@" && return 0
        sleep 0.01
    done
    "$@"
}

# ct_reload PID N [ERRLOG]: SIGHUP cachet's PID and wait (60 s at most) until
# generation N is in use by every worker, as ERRLOG (its stderr) says; fails
# when it does not come (a refused file never logs that line).
ct_reload() {
    kill -HUP "$1"
    ct_wait_until 60 grep -qs "SIGHUP: configuration $2 from .* in use by every worker" \
        "${3:-$CT_TMP/proxy.err}"
}

# ct_free_ports N: N distinct free loopback ports on one line, for
# configurations that must name each other's ports (a fleet's member list).
# Chosen at random below the kernel's ephemeral range (as bench.sh's
# b_free_port): a port the kernel hands out for bind(0) is also one it may
# give the next outgoing connection before our server binds it (seen: a
# redis-server refused its port while a soak ran beside the tests). Each port
# is also reserved for this script in $CT_PORTS (a file named by the port,
# holding our PID, made by link(2)) until it exits: between the choice and
# the server's bind the port is free, and a test beside it under ctest -j
# could choose it too (seen: a Sentinel test's redis-server refused its port).
# A reservation whose owner is gone is taken over.
ct_free_ports() {
    mkdir -p "$CT_PORTS"
    /usr/bin/python3 -c '
import os, random, socket, sys
n, owner, dirname = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])

def reserve(p):
    # link(2) of a file already holding our PID: no one reads a half-made one
    path, mine = os.path.join(dirname, str(p)), os.path.join(dirname, "new.%s" % owner)
    with open(mine, "w") as f:
        f.write(owner)
    try:
        for _ in range(2):
            try:
                os.link(mine, path)
                return True
            except FileExistsError:
                pass
            try:
                os.kill(int(open(path).read()), 0)
                return False
            except PermissionError:
                return False
            except (ProcessLookupError, ValueError, FileNotFoundError):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        return False
    finally:
        os.unlink(mine)

got, held = [], []
while len(got) < n:
    p = random.randint(10000, lo - 1)
    if p in got:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        s.close()
        continue
    if not reserve(p):
        s.close()
        continue
    got.append(p)
    held.append(s)
print(*got)' "$1" "$$" "$CT_PORTS"
}

# ct_start_redis PORT [ARGS...]: a redis-server named "redis" on PORT that
# keeps nothing on disk (its RDB, if any, in the test's own directory, so no
# other test's is loaded), up once it answers PING (with --requirepass PW
# among ARGS, PING authenticates). The script fails if it does not come up.
ct_start_redis() {
    local port=$1 a pw=""
    shift
    local -a args=("$@")
    for ((a = 0; a < ${#args[@]}; a++)); do
        [ "${args[a]}" = --requirepass ] && pw=${args[a + 1]}
    done
    ct_start redis redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$CT_TMP" "$@"
    local -a auth=()
    [ -n "$pw" ] && auth=(-a "$pw" --no-auth-warning)
    ct_wait_until 30 sh -c "redis-cli -p $port ${auth[*]} ping 2>/dev/null | grep -q PONG" ||
        { ct_failed "redis-server starts"; exit 1; }
}

# ct_start_replicated MPORT RPORT: redis-servers "rmaster" on MPORT and
# "rreplica" on RPORT, a replica of it, kept off disk as ct_start_redis's;
# up once both answer PING.
ct_start_replicated() {
    local p
    ct_start rmaster redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$CT_TMP"
    ct_start rreplica redis-server --port "$2" --bind 127.0.0.1 --save "" --appendonly no \
        --replicaof 127.0.0.1 "$1" --dir "$CT_TMP"
    for p in "$1" "$2"; do
        ct_wait_until 30 sh -c "redis-cli -p $p ping 2>/dev/null | grep -q PONG" ||
            { ct_failed "redis-server $p starts"; exit 1; }
    done
}

# ct_failover SPORT RPORT: a failover forced at the Sentinel on SPORT once the
# replica on RPORT has synced; returns once that replica is the master and
# the Sentinel names it. (The Sentinel learns of a replica from the master's
# INFO, every 10 s at first: until then it answers NOGOODSLAVE, retried.)
ct_failover() {
    local s=$1 r=$2
    ct_wait_until 30 sh -c "redis-cli -p $r info replication | grep -q master_link_status:up" ||
        ct_failed "the replica syncs"
    ct_wait_until 60 sh -c "redis-cli -p $s SENTINEL FAILOVER fl | grep -q OK" ||
        ct_failed "the Sentinel starts a failover"
    ct_wait_until 60 sh -c "redis-cli -p $r info replication | grep -q role:master" ||
        ct_failed "the replica was promoted"
    ct_wait_until 60 sh -c "redis-cli -p $s SENTINEL get-master-addr-by-name fl | grep -qx $r" ||
        ct_failed "the Sentinel names the new master"
}

# ct_start_sentinel NAME PORT MPORT: a Sentinel named NAME on PORT watching
# the master "fl" at 127.0.0.1:MPORT (quorum 1), up once it answers PING. Its
# down-after-milliseconds is 60 s: the tests' failovers are forced ones
# (SENTINEL FAILOVER), and with a quorum of 1 a second's stall of a loaded
# machine would start one of its own, even before the master listens.
ct_start_sentinel() {
    local name=$1 port=$2 mport=$3
    cat >"$CT_TMP/$name.conf" <<EOF
port $port
bind 127.0.0.1
sentinel monitor fl 127.0.0.1 $mport 1
sentinel down-after-milliseconds fl 60000
sentinel failover-timeout fl 5000
EOF
    ct_start "$name" redis-server "$CT_TMP/$name.conf" --sentinel
    ct_wait_until 30 sh -c "redis-cli -p $port ping 2>/dev/null | grep -q PONG" ||
        { ct_failed "Sentinel $name starts"; exit 1; }
}

# A fleet on loopback for the purge tests. The caller sets the associative
# arrays PORT and ADMIN (NAME -> port) and OPORT (ct_start_origin).
# ct_fleet_conf NAME EXTRA [TOP]: write $CT_TMP/NAME.conf, node NAME of the
# fleet of every PORT key (each with its admin address), 2 workers, PURGE
# allowed from loopback, EXTRA inside the fleet group (redis = ...;
# mirror_ttl = ...), TOP at the top level (sites = ...).
# ct_fleet_start EXTRA [TOP]: write and start every node ("nodeNAME"), wait
# for each admin listener; a node that does not start ends the script.
ct_fleet_conf() {
    local n=$1 m members=""
    for m in $(printf '%s\n' "${!PORT[@]}" | sort); do
        members+="${members:+, }{ name = \"$m\"; address = \"127.0.0.1:${PORT[$m]}\";"
        members+=" admin = \"127.0.0.1:${ADMIN[$m]}\"; }"
    done
    cat >"$CT_TMP/$n.conf" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$n]}"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; purge_allow = [ "127.0.0.1/32" ]; };
admin = { listen = "127.0.0.1:${ADMIN[$n]}"; };
fleet = {
  self = "$n";
  members = ( $members );
  $2
};
${3:-}
EOF
}
ct_fleet_start() {
    local n
    for n in "${!PORT[@]}"; do
        ct_fleet_conf "$n" "$1" "${2:-}"
        ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"
    done
    for n in "${!PORT[@]}"; do
        ct_wait_listen "node$n" admin >/dev/null || { ct_failed "node $n starts"; exit 1; }
    done
}

# The fleet purge tests' probes, for ct_fleet_start's nodes (PORT, ADMIN):
# metric NODE NAME (NODE's /metrics sample of cachet_NAME), metric_is NODE
# NAME VALUE (a condition for ct_wait_until), cs NODE PATH (the
# Cache-Status of a GET of PATH on NODE, Host: fleet.test: $H), and MA, an
# hour's max-age for the origin's query.
ct_fleet_probes() {
    H="Host: fleet.test"
    MA='cache-control=max-age%3D3600'
    metric() { ct_metric "${ADMIN[$1]}" "cachet_$2"; }
    metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
    cs() {
        curl -s -D - -o /dev/null -H "$H" "http://127.0.0.1:${PORT[$1]}$2" | tr -d '\r' |
            sed -n 's/^Cache-Status: //p' | tail -1
    }
}
# The start-and-wait preamble most scripts open with. A binary that does not
# come up fails the script at once (ct_wait_listen printed why).
ct_start_origin() {
    ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 1 "$@"
    OPORT=$(ct_wait_listen origin) || { ct_failed "cachet-origin starts"; exit 1; }
    O="http://127.0.0.1:$OPORT"
}

ct_start_proxy() {
    ct_start proxy "$CT_BIN/cachet" "$@"
    PPORT=$(ct_wait_listen proxy http) || { ct_failed "cachet starts"; exit 1; }
    P="http://127.0.0.1:$PPORT"
}

ct_start_pair() {
    local a http=1 https=1 admin=1
    local -a defaults=()
    for a in "$@"; do
        case $a in
        --http) http=0 ;;
        --https) https=0 ;;
        --admin) admin=0 ;;
        esac
    done
    ((http)) && defaults+=(--http 127.0.0.1:0)
    ((https)) && defaults+=(--https off)
    ((admin)) && defaults+=(--admin off)
    ct_start_origin
    ct_start_proxy "${defaults[@]}" --backend "127.0.0.1:$OPORT" "$@"
}

ct_stop() {
    local name=$1 sig=${2:-TERM} pid=${CT_PIDS[$1]}
    kill -"$sig" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    local rc=$?
    unset "CT_PIDS[$name]"
    return $rc
}

# Build a scripted test peer written in C (for what cachet-origin cannot do:
# a 101, a dropped second request): ct_cc OUT SRC DESC. On a compiler error
# the test fails with its output and the script ends.
ct_cc() {
    if ! cc -O1 -o "$1" "$2" 2>"$CT_TMP/cc.err"; then
        ct_failed "build $3" "$(cat "$CT_TMP/cc.err")"
        ct_done
        exit
    fi
}

ct_pass() { CT_PASS=$((CT_PASS + 1)); echo "ok   - $1"; }
ct_failed() { CT_FAIL=$((CT_FAIL + 1)); echo "FAIL - $1"; [ $# -gt 1 ] && echo "       $2"; return 0; }

ct_check() {
    if [ "$2" == "$3" ]; then ct_pass "$1"; else ct_failed "$1" "got '$2', expected '$3'"; fi
}

ct_check_match() {
    if [[ "$2" =~ $3 ]]; then ct_pass "$1"; else ct_failed "$1" "got '$2', expected to match '$3'"; fi
}

# Origin helpers: JSON counters of cachet-origin.
ct_origin_total() { curl -s "http://127.0.0.1:$1/_origin/stats" | sed -n 's/.*"total": *\([0-9]*\).*/\1/p'; }
# ct_origin_total_ge PORT N: has the origin counted at least N requests? For
# ct_wait_until ("the fetch has reached the origin").
ct_origin_total_ge() { local n; n=$(ct_origin_total "$1"); [ "${n:-0}" -ge "$2" ]; }
# ct_metric ADMINPORT NAME: the value of /metrics' sample NAME (or NAME_total,
# a counter's), 0 when it has none
ct_metric() {
    curl -s "http://127.0.0.1:$1/metrics" |
        awk -v s="$2" '$1 == s || $1 == s "_total" { v = $2 } END { print v + 0 }'
}
ct_origin_reset() { curl -s -X POST "http://127.0.0.1:$1/_origin/stats/reset" >/dev/null; }

ct_done() {
    echo "$CT_PASS passed, $CT_FAIL failed"
    [ "$CT_FAIL" -eq 0 ] && [ "$CT_PASS" -gt 0 ]
}
