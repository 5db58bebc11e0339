# bench/lib/peers.sh: start the systems under test from bench/peers/ templates.
# Sourced after bench.sh. Each p_start_* fills, for system S:
#   SYS_HTTP[S] SYS_HTTPS[S] SYS_TLSR[S]   ports (HTTP, HTTPS full-handshake
#                                          listener, HTTPS resuming listener)
#   SYS_PROCS[S]                           names in B_PID whose process trees
#                                          are the system (CPU is summed)
#   SYS_ORIGIN[S]                          co or lt: whose counters to read
# and returns non-zero, with the reason in SYS_WHY[S], if it cannot run.

B_PEERS=${B_PEERS:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../peers" && pwd)}
#   SYS_SLOW[S]                            port for the slow-origin cell, if
#                                          not SYS_HTTP (nginx: with its lock)
declare -A SYS_HTTP=() SYS_HTTPS=() SYS_TLSR=() SYS_SLOW=() SYS_PROCS=() SYS_ORIGIN=() SYS_WHY=()
SERVER_CPU=${SERVER_CPU:-1}

# A self-signed EC P-256 certificate, made fresh in the results temp dir.
p_cert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$B_TMP/key.pem" -out "$B_TMP/cert.pem" -days 2 \
        -subj /CN=localhost >/dev/null 2>&1 || return 1
    cat "$B_TMP/cert.pem" "$B_TMP/key.pem" >"$B_TMP/cert+key.pem"
}

# p_render TEMPLATE OUT KEY=VALUE...: replace @KEY@ with VALUE.
p_render() {
    local in=$1 out=$2 kv script=""
    shift 2
    for kv in "$@"; do script+="s|@${kv%%=*}@|${kv#*=}|g;"; done
    sed "$script" "$in" >"$out"
}

p_have() { command -v "$1" >/dev/null 2>&1; }

p_start_co() {
    local s=$1 bin=$2 port
    [ -x "$bin/cachet-origin" ] || { SYS_WHY[$s]="not yet available (no $bin/cachet-origin)"; return 1; }
    b_start "$s" "$SERVER_CPU" "$bin/cachet-origin" --port 0 --bind 127.0.0.1 --workers 1 || return 1
    b_wait_line "$s" port || { SYS_WHY[$s]="cachet-origin did not start"; return 1; }
    SYS_HTTP[$s]=$port SYS_PROCS[$s]=$s SYS_ORIGIN[$s]=co
}

# lighttpd serves a docroot filled by p_docroot: the same bytes as
# cachet-origin's objects, under /c/ (cacheable) and /ns/ (no-store).
p_start_lt() {
    local s=$1 root=$2 dir=$B_TMP/$1 port
    p_have lighttpd || { SYS_WHY[$s]="lighttpd not installed"; return 1; }
    mkdir -p "$dir"
    b_free_port port || return 1
    p_render "$B_PEERS/lighttpd.conf" "$dir/lighttpd.conf" ROOT="$root" PORT="$port" DIR="$dir"
    b_start "$s" "$SERVER_CPU" lighttpd -D -f "$dir/lighttpd.conf"
    b_wait_port "$s" "$port" || { SYS_WHY[$s]="lighttpd did not start"; return 1; }
    SYS_HTTP[$s]=$port SYS_PROCS[$s]=$s SYS_ORIGIN[$s]=lt
}

# p_start_nginx S ORIGIN_PORT CACHE(bench|off)
p_start_nginx() {
    local s=$1 oport=$2 cache=$3 dir=$B_TMP/$1 port tport rport lport
    p_have nginx || { SYS_WHY[$s]="nginx not installed"; return 1; }
    mkdir -p "$dir"
    b_free_port port && b_free_port tport && b_free_port rport && b_free_port lport || return 1
    p_render "$B_PEERS/nginx-proxy.inc" "$dir/proxy.inc" CACHE="$cache" LOCK=off
    p_render "$B_PEERS/nginx-proxy.inc" "$dir/proxy-lock.inc" CACHE="$cache" LOCK=on
    p_render "$B_PEERS/nginx.conf" "$dir/nginx.conf" DIR="$dir" PORT="$port" \
        TLS_PORT="$tport" TLS_RESUME_PORT="$rport" LOCK_PORT="$lport" ORIGIN_PORT="$oport" \
        CERT="$B_TMP/cert.pem" KEY="$B_TMP/key.pem"
    b_start "$s" "$SERVER_CPU" nginx -p "$dir" -e "$dir/nginx.err" -c "$dir/nginx.conf"
    b_wait_port "$s" "$port" || { SYS_WHY[$s]="nginx did not start"; return 1; }
    SYS_HTTP[$s]=$port SYS_HTTPS[$s]=$tport SYS_TLSR[$s]=$rport SYS_SLOW[$s]=$lport SYS_PROCS[$s]=$s
}

p_start_varnish() {
    local s=$1 oport=$2 dir=$B_TMP/$1 port params=() line
    p_have varnishd || { SYS_WHY[$s]="varnishd not installed"; return 1; }
    mkdir -p "$dir"
    b_free_port port || return 1
    p_render "$B_PEERS/varnish.vcl" "$dir/default.vcl" ORIGIN_PORT="$oport"
    while read -r line; do
        [[ $line == \#* || -z $line ]] || params+=(-p "$line")
    done <"$B_PEERS/varnish.params"
    # -j none: no privilege separation, so the temp dir needs no chown.
    b_start "$s" "$SERVER_CPU" varnishd -F -j none -n "$dir/work" -a "127.0.0.1:$port" \
        -f "$dir/default.vcl" -s malloc,256m -T none "${params[@]}"
    b_wait_port "$s" "$port" || { SYS_WHY[$s]="varnishd did not start"; return 1; }
    SYS_HTTP[$s]=$port SYS_PROCS[$s]=$s
}

p_start_haproxy() {
    local s=$1 oport=$2 dir=$B_TMP/$1 port tport rport
    p_have haproxy || { SYS_WHY[$s]="haproxy not installed"; return 1; }
    mkdir -p "$dir"
    b_free_port port && b_free_port tport && b_free_port rport || return 1
    p_render "$B_PEERS/haproxy.cfg" "$dir/haproxy.cfg" PORT="$port" TLS_PORT="$tport" \
        TLS_RESUME_PORT="$rport" ORIGIN_PORT="$oport" PEM="$B_TMP/cert+key.pem"
    b_start "$s" "$SERVER_CPU" haproxy -db -f "$dir/haproxy.cfg"
    b_wait_port "$s" "$port" || { SYS_WHY[$s]="haproxy did not start"; return 1; }
    SYS_HTTP[$s]=$port SYS_HTTPS[$s]=$tport SYS_TLSR[$s]=$rport SYS_PROCS[$s]=$s
}

# The classic stack: nginx (TLS, no cache) -> Varnish -> lighttpd, all three
# on the server core. Its CPU figure counts nginx and Varnish, not lighttpd,
# as every proxy row leaves its origin out.
p_start_stack() {
    local s=$1 root=$2
    p_start_lt "$s-lt" "$root" || { SYS_WHY[$s]=${SYS_WHY[$s-lt]}; return 1; }
    p_start_varnish "$s-varnish" "${SYS_HTTP[$s-lt]}" || { SYS_WHY[$s]=${SYS_WHY[$s-varnish]}; return 1; }
    p_start_nginx "$s-nginx" "${SYS_HTTP[$s-varnish]}" off || { SYS_WHY[$s]=${SYS_WHY[$s-nginx]}; return 1; }
    SYS_HTTP[$s]=${SYS_HTTP[$s-nginx]} SYS_HTTPS[$s]=${SYS_HTTPS[$s-nginx]}
    SYS_TLSR[$s]=${SYS_TLSR[$s-nginx]} SYS_PROCS[$s]="$s-nginx $s-varnish" SYS_ORIGIN[$s]=lt
}

# cachet lands in stages; start it with everything it may understand and
# fall back to plain HTTP pass-through if it rejects the TLS/admin flags.
# Capabilities are probed afterwards by run.sh (cache, TLS).
p_start_cachet() {
    local s=$1 bin=$2 oport=$3 workers=$4 cpus=$5 port tport rport aport
    [ -x "$bin/cachet" ] || { SYS_WHY[$s]="not yet available (no $bin/cachet)"; return 1; }
    b_free_port port && b_free_port tport && b_free_port rport && b_free_port aport || return 1
    # Like the peers: full handshakes against an HTTPS listener that refuses
    # resumption (no tickets, no session cache, so no ticket is minted and
    # thrown away per handshake), resumed ones against one with tickets.
    local certs="certificates = ( { cert = \"$B_TMP/cert.pem\"; key = \"$B_TMP/key.pem\"; } );"
    cat >"$B_TMP/$s.conf" <<EOF
workers = $workers;
listen = (
  { kind = "http"; address = "127.0.0.1:$port"; },
  { kind = "https"; address = "127.0.0.1:$tport";
    tls = { $certs session_tickets = false; session_cache = false; }; },
  { kind = "https"; address = "127.0.0.1:$rport"; tls = { $certs }; }
);
backends = ( { address = "127.0.0.1:$oport"; } );
admin = { listen = "127.0.0.1:$aport"; };
EOF
    b_start "$s" "$cpus" "$bin/cachet" -c "$B_TMP/$s.conf"
    if b_wait_port "$s" "$port" 2>/dev/null; then
        SYS_HTTPS[$s]=$tport SYS_TLSR[$s]=$rport
    else
        b_stop "$s"
        b_start "$s" "$cpus" "$bin/cachet" --http "127.0.0.1:$port" \
            --backend "127.0.0.1:$oport" --workers "$workers"
        b_wait_port "$s" "$port" || {
            SYS_WHY[$s]="not yet available (cachet does not start: $(tail -1 "$B_TMP/$s.err"))"
            return 1
        }
    fi
    SYS_HTTP[$s]=$port SYS_PROCS[$s]=$s
}

# Stop every process of system S.
p_stop() {
    local n
    for n in ${SYS_PROCS[$1]:-}; do b_stop "$n"; done
}
