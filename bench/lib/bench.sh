# bench/lib/bench.sh: process control and measurement for bench/run.sh and
# tests/integration/bench_harness.sh. Sourced, never run.
#
# Every server is started on a free loopback port, pinned with taskset, and
# stopped by its PID; every load is bounded in time. Measurements follow
# bench/README.md (the method): wrk -t1 pinned to CPU 0, server CPU from
# /proc/PID/stat (all processes of the system), listen queue sampled with ss.
#
#   b_init DIR                    state dir for logs, configs, samples
#   b_free_port VAR               a free port in 20000-31999 into $VAR
#   b_start NAME CPUS CMD...      start CMD pinned to CPUS; PID in B_PID[NAME]
#   b_wait_port NAME PORT         wait until PORT listens (NAME must stay alive)
#   b_wait_line NAME VAR          wait for "listening on ADDR:PORT"; PORT into $VAR
#   b_stop NAME                   TERM, then KILL after 5 s; reaps it
#   b_pidtree PID...              the PIDs and all their descendants
#   b_cpu_ticks PID...            utime+stime of those processes, clock ticks
#   b_cpu_split PID...            "utime stime" of those processes, clock ticks
#   b_wrk OUT URL CONNS SECS [wrk args]   one bounded wrk run, output in OUT
#   b_parse_wrk FILE              "rps p50_ms p99_ms requests errors non2xx bytes_per_req"
#   b_stime OUT HOSTPORT SECS PAR MODE   PAR parallel openssl s_time (MODE new|reuse)
#   b_parse_stime FILES...        "rps conns reused min_bytes_per_conn"
#   b_qsample_start PORTS / b_qsample_stop   max listen-queue Recv-Q during a run

B_TMP=
declare -A B_PID=()
declare -A B_PORT_TAKEN=()
B_HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)

b_init() {
    B_TMP=$1
    mkdir -p "$B_TMP"
    trap b_cleanup EXIT
    trap 'exit 130' INT TERM
}

b_cleanup() {
    local name
    b_qsample_stop >/dev/null 2>&1
    for name in "${!B_PID[@]}"; do
        b_stop "$name" 2>/dev/null
    done
}

# Ports come from 20000-31999, below the kernel's ephemeral range (32768+),
# so wrk's own client ports never collide with them; a port is taken only if
# no socket uses it and this run has not handed it out already.
b_free_port() {
    local __var=$1 p i used
    used=" $(ss -Htan | awk '{n = split($4, a, ":"); printf "%s ", a[n]}') "
    for ((i = 0; i < 500; i++)); do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
        [[ -n ${B_PORT_TAKEN[$p]:-} || $used == *" $p "* ]] && continue
        B_PORT_TAKEN[$p]=1
        printf -v "$__var" '%s' "$p"
        return 0
    done
    echo "b_free_port: no free port found" >&2
    return 1
}

b_start() {
    local name=$1 cpus=$2
    shift 2
    taskset -c "$cpus" "$@" >"$B_TMP/$name.out" 2>"$B_TMP/$name.err" </dev/null &
    B_PID[$name]=$!
}

b_alive() { kill -0 "${B_PID[$1]:-0}" 2>/dev/null; }

b_wait_port() {
    local name=$1 port=$2 i
    for ((i = 0; i < 1000; i++)); do
        if [ -n "$(ss -Hltn "sport = :$port")" ]; then return 0; fi
        if ! b_alive "$name"; then
            echo "b_wait_port: $name exited; stderr:" >&2
            tail -5 "$B_TMP/$name.err" >&2
            return 1
        fi
        sleep 0.01
    done
    echo "b_wait_port: $name does not listen on $port after 10 s" >&2
    return 1
}

b_wait_line() {
    local name=$1 __var=$2 i line
    for ((i = 0; i < 1000; i++)); do
        line=$(grep -m1 -E '^listening on [0-9.]+:[0-9]+' "$B_TMP/$name.out" 2>/dev/null)
        if [ -n "$line" ]; then
            printf -v "$__var" '%s' "${line##*:}"
            return 0
        fi
        if ! b_alive "$name"; then
            echo "b_wait_line: $name exited; stderr:" >&2
            tail -5 "$B_TMP/$name.err" >&2
            return 1
        fi
        sleep 0.01
    done
    echo "b_wait_line: $name did not print 'listening on' in 10 s" >&2
    return 1
}

b_stop() {
    local name=$1 pid=${B_PID[$1]:-} i
    [ -n "$pid" ] || return 0
    unset "B_PID[$name]"
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 500; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.01
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

# nginx's worker and Varnish's child are forked by the PID we started; their
# CPU counts as the system's, so measure the whole tree.
b_pidtree() {
    ps -e -o pid=,ppid= | awk -v roots="$*" '
        BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
        { parent[$1] = $2; pids[++m] = $1 }
        END {
            do { grew = 0
                for (i = 1; i <= m; i++)
                    if (!(pids[i] in keep) && (parent[pids[i]] in keep)) { keep[pids[i]] = 1; grew = 1 }
            } while (grew)
            for (p in keep) print p
        }'
}

# Field 14/15 of /proc/PID/stat, counted after the ")" that ends the command
# name (which may hold spaces: Varnish's child is "cache-main").
b_cpu_ticks() {
    local p sum=0 t
    for p in "$@"; do
        t=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null) || continue
        sum=$((sum + ${t:-0}))
    done
    echo "$sum"
}

b_cpu_split() {
    local p u=0 k=0 t
    for p in "$@"; do
        t=$(awk '{ sub(/^.*\) /, ""); print $12, $13 }' "/proc/$p/stat" 2>/dev/null) || continue
        [ -n "$t" ] || continue
        u=$((u + ${t% *})) k=$((k + ${t#* }))
    done
    echo "$u $k"
}

b_wrk() {
    local out=$1 url=$2 conns=$3 secs=$4
    shift 4
    # Time-bounded twice: wrk's -d, and timeout in case a server stops answering.
    taskset -c 0 timeout -k 2 $((secs + 15)) \
        wrk -t1 -c"$conns" -d"${secs}s" --timeout 5s --latency "$@" "$url" >"$out" 2>&1
}

# wrk prints latencies as 993.00us, 1.05ms or 1.20s; all become milliseconds.
b_parse_wrk() {
    awk '
        function ms(v) {
            if (v ~ /us$/) return v / 1000
            if (v ~ /ms$/) return v + 0
            if (v ~ /m$/) return v * 60000
            if (v ~ /s$/) return v * 1000
            return v + 0
        }
        /^ +50% / { p50 = ms($2) }
        /^ +99% / { p99 = ms($2) }
        / requests in / {
            reqs = $1; v = $5; sub(/read$/, "", v); b = v + 0
            if (v ~ /KB$/) b *= 1024; else if (v ~ /MB$/) b *= 1048576
            else if (v ~ /GB$/) b *= 1073741824; else if (v ~ /TB$/) b *= 1099511627776
            bytes = b
        }
        /Socket errors:/ { gsub(/,/, ""); err = $4 + $6 + $8 + $10 }
        /Non-2xx or 3xx responses:/ { non2xx = $5 }
        /^Requests\/sec:/ { rps = $2; ok = 1 }
        END {
            if (!ok) { print "fail"; exit 1 }
            printf "%.0f %.3f %.3f %d %d %d %.0f\n", rps, p50, p99, reqs, err + 0, non2xx + 0, (reqs > 0 ? bytes / reqs : 0)
        }' "$1"
}

# openssl s_time opens one connection at a time (handshake, GET, close);
# PAR of them in parallel keep the server's core busy. -new never offers a
# session, so every handshake is a full one; -reuse offers the first one's.
# s_time sends "GET <www> HTTP/1.0\r\n\r\n" with no Host; HAProxy's cache
# never answers HTTP/1.0, so the target smuggles in an HTTP/1.1 request with
# Host and Connection: close (s_time reads until the server closes), and the
# trailing " HTTP/1.0" lands harmlessly in an X-Pad header.
b_stime() {
    local out=$1 hostport=$2 secs=$3 par=$4 mode=$5 path=$6 i pids=()
    local www="$path HTTP/1.1"$'\r\n'"Host: $hostport"$'\r\n'"Connection: close"$'\r\n'"X-Pad: x"
    for ((i = 0; i < par; i++)); do
        taskset -c 0 timeout -k 2 $((secs + 15)) \
            openssl s_time -connect "$hostport" -"$mode" -time "$secs" -www "$www" \
            >"$out.$i" 2>&1 </dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
}

# "N connections in T real seconds, B bytes read per connection": the rate
# is the sum of N/T; the smallest B shows whether every client got the whole
# object (an error page is shorter). In -reuse mode s_time prints one
# character per connection, 'r' if the session was resumed, so resumption
# is verified, not assumed. Prints "rps conns reused min_bytes_per_conn".
b_parse_stime() {
    awk '
        /connections in [0-9.]+ real seconds/ {
            for (i = 1; i <= NF; i++) if ($i == "real") { n += $1; rate += $1 / $(i - 1); ok++ }
            b = $(NF - 4) + 0; if (minb == "" || b < minb) minb = b
        }
        /^[r*0-9t]+$/ && !/connections/ { rr += gsub(/r/, "r") }
        END {
            if (!ok) { print "fail"; exit 1 }
            printf "%.0f %d %d %d\n", rate, n, rr, minb
        }' "$@"
}

B_QPID=
b_qsample_start() {
    local filter="" p
    for p in "$@"; do filter+="sport = :$p or "; done
    filter=${filter% or }
    echo 0 >"$B_TMP/qmax"
    (
        max=0
        while :; do
            q=$(ss -Hltn "( $filter )" | awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }')
            if [ "${q:-0}" -gt "$max" ]; then
                max=$q
                echo "$max" >"$B_TMP/qmax.new" && mv "$B_TMP/qmax.new" "$B_TMP/qmax"
            fi
            sleep 0.1
        done
    ) &
    B_QPID=$!
}

b_qsample_stop() {
    [ -n "$B_QPID" ] || return 0
    kill "$B_QPID" 2>/dev/null
    wait "$B_QPID" 2>/dev/null
    B_QPID=
    cat "$B_TMP/qmax"
}
