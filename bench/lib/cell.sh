# bench/lib/cell.sh: one measured cell (workload x system x round).
# Sourced after bench.sh and peers.sh. c_run appends one row to $RUNS_CSV.

RUNS_HEADER="workload,system,round,rps,p50_ms,p99_ms,requests,errors,non2xx,server_cpu_s,cpu_s_per_100k,client_cpu_s,max_listen_q,origin_reqs,check"

# c_path ORIGIN OBJECT TAG: the request target for OBJECT on that origin.
# cachet-origin generates every object from the query; lighttpd serves the
# same bytes as files, with Cache-Control set by URL prefix. TAG makes the
# slow-origin object unique per cell, so each round starts with a cold cache
# (it rides in etag=, a parameter cachet-origin knows).
c_path() {
    local origin=$1 object=$2 tag=$3 ttl='cache-control=max-age%3D3600'
    case $origin:$object in
        co:1k) echo /1k ;;
        co:json) echo /json ;;
        co:hit1k) echo "/gen?size=1024&$ttl" ;;
        co:hit100k) echo "/gen?size=102400&$ttl" ;;
        co:hitjson1k) echo "/gen?size=1024&type=application/json&$ttl" ;;
        co:hitjson10k) echo "/gen?size=10240&type=application/json&$ttl" ;;
        co:hitjson100k) echo "/gen?size=102400&type=application/json&$ttl" ;;
        co:pass1k) echo "/gen?size=1024&cache-control=no-store" ;;
        co:slow) echo "/gen?size=1024&$ttl&delay=100&etag=%22$tag%22" ;;
        lt:1k) echo /1k ;;
        lt:json) echo /json ;;
        lt:hit1k) echo /c/1k ;;
        lt:hit100k) echo /c/100k ;;
        lt:pass1k) echo /ns/1k ;;
        *) return 1 ;;
    esac
}

# The body size of OBJECT: every answer must carry at least this many bytes.
c_size() {
    case $1 in
        json) echo 27 ;;
        hit100k) echo 102400 ;;
        hitjson*) echo 1 ;; # coded answers are smaller than the object: whole bodies are not checked by size
        *) echo 1024 ;;
    esac
}

# Requests the origin of system S has served so far: cachet-origin's own
# counter (it excludes /_origin/), or for the classic stack Varnish's
# backend_req (every request that reached lighttpd). lighttpd's mod_status
# totals lag by up to a second, so a lighttpd origin is otherwise not counted.
c_origin_count() {
    local s=$1
    case ${SYS_ORIGIN[$s]:-} in
        co) curl -s -m 5 "http://127.0.0.1:${SYS_HTTP[$ORIGIN_CO]}/_origin/stats" |
                sed -n 's/.*"total": *\([0-9]*\).*/\1/p' ;;
        lt) [ -n "${SYS_HTTP[$s-varnish]:-}" ] &&
                varnishstat -n "$B_TMP/$s-varnish/work" -1 -f MAIN.backend_req 2>/dev/null |
                awk '$1 == "MAIN.backend_req" { print $2 }' ;;
    esac
}

c_origin_reset() {
    [ "${SYS_ORIGIN[$1]:-}" = co ] &&
        curl -s -m 5 -X POST "http://127.0.0.1:${SYS_HTTP[$ORIGIN_CO]}/_origin/stats/reset" >/dev/null
    c_origin_count "$1"
}

c_origin_delta() {
    if [ -n "$1" ] && [ -n "$2" ]; then echo $(($2 - $1)); fi
}

# All listen ports of S (and of the tiers behind it, for the stack).
c_ports() {
    local s=$1 n p out=""
    for n in $s $s-varnish $s-lt; do
        for p in ${SYS_HTTP[$n]:-} ${SYS_HTTPS[$n]:-} ${SYS_TLSR[$n]:-} ${SYS_SLOW[$n]:-}; do out+="$p "; done
    done
    echo "$out" | tr ' ' '\n' | sort -u | tr '\n' ' '
}

# c_check KIND ...: whether the cell measured what it claims.
c_check() {
    local kind=$1 errors=$2 non2xx=$3 reqs=$4 origin=$5 conns=$6 reused=$7 self=$8 bytes=$9 min=${10}
    if [ "$reqs" -le 0 ]; then echo "no requests"; return; fi
    if [ "$errors" -gt 0 ] || [ "$non2xx" -gt 0 ]; then echo "errors=$errors non2xx=$non2xx"; return; fi
    # Whole bodies: bytes read per answer below the object's size means short
    # or empty bodies (a 200 with Content-Length: 0 passes every other check).
    # 2 % slack: wrk prints its byte total rounded (e.g. 487.75MB), and on a
    # 100 KiB object it reads a little under size x requests.
    if [ $((${bytes:-0} * 100)) -lt $((min * 98)) ]; then
        echo "short answers: $bytes bytes each for a $min-byte object"
        return
    fi
    case $kind in
        hit1k | hit100k | hitjson*)
            if [ -z "$origin" ]; then echo "ok (origin not counted)"
            elif [ "$self" = 1 ]; then echo ok
            elif [ "$origin" -eq 0 ]; then echo ok
            else echo "hit reached origin $origin times"; fi ;;
        pass1k | 1k | json)
            # wrk stops with up to CONNS requests in flight: the origin may
            # have answered those without wrk counting them.
            if [ -z "$origin" ]; then echo "ok (origin not counted)"
            elif [ "$origin" -ge "$reqs" ] && [ "$origin" -le $((reqs + conns)) ]; then echo ok
            else echo "origin saw $origin of $reqs"; fi ;;
        slow) echo ok ;;
        tls-new)
            if [ "$reused" -eq 0 ]; then echo ok; else echo "$reused handshakes resumed"; fi ;;
        tls-reuse)
            if [ $((reused * 100)) -ge $((reqs * 95)) ]; then echo ok
            else echo "only $reused of $reqs resumed"; fi ;;
        *) echo ok ;;
    esac
}

# c_run WORKLOAD PROTO OBJECT CONNS CLIENT SYSTEM ROUND SECS
c_run() {
    local wl=$1 proto=$2 object=$3 conns=$4 client=$5 s=$6 round=$7 secs=$8
    local port path url pids t0 t1 o0 o1 q out parsed check origin self=0 kind=$object
    local rps p50 p99 reqs err non2xx reused=0 bytes ccpu
    case $proto in
        http) port=${SYS_HTTP[$s]}
              [ "$object" = slow ] && port=${SYS_SLOW[$s]:-$port} ;;
        https) if [ "$client" = s_reuse ]; then port=${SYS_TLSR[$s]}; else port=${SYS_HTTPS[$s]}; fi ;;
    esac
    path=$(c_path "${SYS_ORIGIN[$s]}" "$object" "$s-$round-$RUN_ID") || return 1
    # wrk-CODING: a client sending Accept-Encoding: CODING, on a URL of its own
    local -a ae=()
    case $client in wrk-*) ae=(-H "Accept-Encoding: ${client#wrk-}"); path+="&ae=${client#wrk-}" ;; esac
    url="$proto://127.0.0.1:$port$path"
    [ "$s" = "$ORIGIN_CO" ] || [ "$s" = "$ORIGIN_LT" ] && self=1
    # Warm the cache (hits), then zero the origin's counter.
    case $object in hit*) curl -sk -m 5 -o /dev/null "${ae[@]}" "$url"; curl -sk -m 5 -o /dev/null "${ae[@]}" "$url" ;; esac
    o0=$(c_origin_reset "$s")
    pids=$(for n in ${SYS_PROCS[$s]}; do b_pidtree "${B_PID[$n]}"; done)
    t0=$(b_cpu_split $pids)
    b_qsample_start $(c_ports "$s")
    out=$B_TMP/cell.$wl.$proto.$s.$round
    local TIMEFORMAT='%U %S'
    case $client in
        wrk) { time b_wrk "$out" "$url" "$conns" "$secs"; } 2>"$out.time" ;;
        wrk-*) { time b_wrk "$out" "$url" "$conns" "$secs" "${ae[@]}"; } 2>"$out.time" ;;
        close) { time b_wrk "$out" "$url" "$conns" "$secs" -H 'Connection: close'; } 2>"$out.time" ;;
        s_new | s_reuse)
            local w0 w1
            w0=$(date +%s%N)
            { time b_stime "$out" "127.0.0.1:$port" "$secs" "$conns" "${client#s_}" "$path"; } 2>"$out.time"
            w1=$(date +%s%N) ;;
    esac
    q=$(b_qsample_stop)
    t1=$(b_cpu_split $pids)
    o1=$(c_origin_count "$s")
    ccpu=$(awk '{ printf "%.2f", $1 + $2 }' "$out.time")
    if [ "${client:0:2}" = s_ ]; then
        # s_time reports whole seconds only; the rate uses the wall clock.
        parsed=$(b_parse_stime "$out".[0-9]*) || parsed=fail
        read -r rps reqs reused bytes <<<"$parsed"
        [ "$rps" = fail ] || rps=$(awk -v n="$reqs" -v ns=$((w1 - w0)) 'BEGIN { printf "%.0f", n / (ns / 1e9) }')
        p50=- p99=- err=0 non2xx=0
        kind=tls-${client#s_}
    else
        parsed=$(b_parse_wrk "$out") || parsed=fail
        read -r rps p50 p99 reqs err non2xx bytes <<<"$parsed"
    fi
    if [ "$rps" = fail ]; then
        echo "$wl/$proto,$s,$round,0,-,-,0,0,0,0,-,$ccpu,$q,,client failed: $(tail -1 "$out"* | tr ',\n' '; ')" >>"$RUNS_CSV"
        return 0
    fi
    origin=$(c_origin_delta "$o0" "$o1")
    check=$(c_check "$kind" "$err" "$non2xx" "$reqs" "$origin" "$conns" "$reused" "$self" "${bytes:-0}" "$(c_size "$object")")
    check=${check//,/;}
    local u0=${t0% *} k0=${t0#* } u1=${t1% *} k1=${t1#* }
    echo "$wl/$proto,$s,$round,$((u1 - u0)),$((k1 - k0))" >>"$SPLIT_CSV"
    awk -v ticks=$((u1 - u0 + k1 - k0)) -v hz="$B_HZ" -v reqs="$reqs" -v row="$wl/$proto,$s,$round,$rps,$p50,$p99,$reqs,$err,$non2xx" \
        -v tail="$ccpu,$q,$origin,$check" 'BEGIN {
            cpu = ticks / hz
            printf "%s,%.2f,%.3f,%s\n", row, cpu, (reqs > 0 ? cpu / reqs * 100000 : 0), tail }' >>"$RUNS_CSV"
}
