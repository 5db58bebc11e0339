#!/usr/bin/env bash
# bench/tls_origin/run.sh: issue 39's cells, TLS to origins, cachet beside
# nginx `proxy_pass https://` and HAProxy `server ... ssl verify required`.
#
#   bench/tls_origin/run.sh [--bin DIR] [--duration SECS] [--rounds N]
#                           [--conns C] [--bursts B] [--callgrind N] [--out DIR]
#
# The origin is nginx (one worker, CPU 0) serving one 1 KiB file with
# `Cache-Control: no-store` (every request is a pass, or a miss, at the
# proxy) on three ports: TLS (a test CA made here by openssl; TLS 1.3,
# tickets and a session cache), cleartext, and TLS with
# `keepalive_requests 1` (each request a new upstream connection: the storm).
# Each proxy runs one worker pinned to CPU 1, verifies the origin against the
# test CA and name (origin.bench), and routes by Host to the three.
# Cells (systems alternate within each round: cachet, nginx, haproxy):
#   pass-1k/tls-origin    wrk -t1 -cC (keep-alive, CPU 0) for SECS: req/s and
#                         the proxy's CPU per request (utime+stime of all its
#                         processes from /proc/PID/stat, before and after);
#                         new upstream connections seen by the origin in the
#                         cell (the pool's work: up to C a round, as idle
#                         pooled connections may time out between rounds),
#                         full/resumed
#   pass-1k/clear-origin  the same to the cleartext port (what TLS adds)
#   storm-100/tls-origin  after one request (a session to resume), B (5)
#                         bursts of 100 concurrent misses for new URLs (curl
#                         --parallel --parallel-immediate, one request each):
#                         100 new upstream connections a burst; the origin's
#                         access log ($ssl_session_reused) counts full and
#                         resumed handshakes; the proxy's CPU per request
#                         beside (a clock tick is 10 ms: 20 us over 500)
# Then (--callgrind N, default 2000; 0 skips) bench/micro/reqcost.sh's cells
# http-pass and http-tlspass: user-space instructions per 1 KiB pass to a
# cleartext and to a TLS 1.3 origin, counted by callgrind (load-independent).
# Writes OUT/latest-runs.csv (every round), OUT/latest.csv (medians) and
# OUT/latest.md (the table); OUT is bench/results/tls-origin by default.
# The machine may be shared: the load average before and after is printed;
# compare systems within one run (ratios), CPU per request first.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=$ROOT/build/bin
SECS=10
ROUNDS=3
CONNS=100
CG_N=2000
BURSTS=5
OUT=$ROOT/bench/results/tls-origin
while [ $# -gt 0 ]; do
    case $1 in
    --bin) BIN=$(cd "$2" && pwd); shift ;;
    --duration) SECS=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --conns) CONNS=$2; shift ;;
    --callgrind) CG_N=$2; shift ;;
    --bursts) BURSTS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) sed -n '2,/^set -u/p' "$0" | sed -n 's/^# \{0,1\}//p' >&2; exit 2 ;;
    esac
    shift
done
for t in wrk nginx haproxy openssl curl taskset; do
    command -v $t >/dev/null || { echo "bench/tls_origin: $t not installed (make deps-bench)" >&2; exit 2; }
done
[ -x "$BIN/cachet" ] || { echo "bench/tls_origin: no $BIN/cachet (build first)" >&2; exit 2; }
. "$ROOT/bench/lib/bench.sh"
. "$ROOT/bench/lib/tls_ca.sh"
b_init "$(mktemp -d "${TMPDIR:-/tmp}/ct-tlsorigin.XXXXXX")"
T=$B_TMP
trap 'b_cleanup; [ -n "${KEEP:-}" ] && echo "bench/tls_origin: kept $T" >&2 || rm -rf "$T"' EXIT
mkdir -p "$OUT"

# ---- a test CA and the origin's certificate (name and IP) -----------------------
b_test_ca "$T" origin.bench "DNS:origin.bench,IP:127.0.0.1" || exit 1
CA=$T/ca.pem

# ---- the origin: nginx, one worker on CPU 0 (beside wrk) ---------------------------
b_free_port OT; b_free_port OC; b_free_port OS
mkdir -p "$T/o/www"
head -c 1024 /dev/zero | tr '\0' 'x' >"$T/o/www/1k"
USER_LINE=$([ "$(id -u)" = 0 ] && echo "user root;")
cat >"$T/o/nginx.conf" <<EOF
$USER_LINE
worker_processes 1;
daemon off;
pid $T/o/nginx.pid;
error_log $T/o/error.log warn;
events { worker_connections 4096; }
http {
    # one line per upstream connection (its first request): full or resumed
    map \$connection_requests \$first { 1 1; default 0; }
    log_format conn '\$ssl_session_reused \$ssl_protocol \$request_uri';
    sendfile on;
    tcp_nopush off;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    client_body_temp_path $T/o/body;
    proxy_temp_path $T/o/proxy;
    fastcgi_temp_path $T/o/fcgi;
    uwsgi_temp_path $T/o/uwsgi;
    scgi_temp_path $T/o/scgi;
    ssl_certificate $T/origin.pem;
    ssl_certificate_key $T/origin.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:O:10m;
    ssl_session_tickets on;
    root $T/o/www;
    default_type application/octet-stream;
    add_header Cache-Control no-store;
    server { listen 127.0.0.1:$OT ssl; access_log $T/o/tls.log conn if=\$first;
             location / { try_files /1k =404; } }
    server { listen 127.0.0.1:$OC; access_log $T/o/clear.log conn if=\$first;
             location / { try_files /1k =404; } }
    server { listen 127.0.0.1:$OS ssl; keepalive_requests 1; access_log $T/o/storm.log conn;
             location / { try_files /1k =404; } }
}
EOF
b_start origin 0 nginx -p "$T/o" -e "$T/o/error.log" -c "$T/o/nginx.conf"
b_wait_port origin "$OS" || exit 1

# ---- the proxies, one worker each on CPU 1, routing by Host -------------------------
b_free_port CP
cat >"$T/cachet.conf" <<EOF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:$CP"; } );
admin = { listen = "off"; };
logs = { access_log = "off"; };
backends = ( { address = "127.0.0.1:$OC"; } );
backend_groups = (
  { name = "tls"; backends = ( { address = "127.0.0.1:$OT";
      tls = { ca = "$CA"; server_name = "origin.bench"; }; } ); },
  { name = "clear"; backends = ( { address = "127.0.0.1:$OC"; } ); },
  { name = "storm"; backends = ( { address = "127.0.0.1:$OS";
      tls = { ca = "$CA"; server_name = "origin.bench"; }; } ); }
);
sites = (
  { name = "tls"; hosts = [ "tls.bench" ]; backend_group = "tls"; },
  { name = "clear"; hosts = [ "clear.bench" ]; backend_group = "clear"; },
  { name = "storm"; hosts = [ "storm.bench" ]; backend_group = "storm"; }
);
EOF
"$BIN/cachet" -t -c "$T/cachet.conf" >/dev/null || exit 1
b_start cachet 1 "$BIN/cachet" -c "$T/cachet.conf"
b_wait_port cachet "$CP" || exit 1

b_free_port NP
mkdir -p "$T/n"
# nginx: an upstream keep-alive pool, verification on (off by default in
# nginx), sessions reused (on by default), the name sent as SNI and checked.
nginx_srv() { # HOST UPSTREAM SCHEME
    local ssl=""
    [ "$3" = https ] && ssl="proxy_ssl_verify on; proxy_ssl_trusted_certificate $CA;
            proxy_ssl_name origin.bench; proxy_ssl_server_name on; proxy_ssl_session_reuse on;"
    echo "server { listen 127.0.0.1:$NP; server_name $1;
        location / { proxy_pass $3://$2; proxy_http_version 1.1; proxy_set_header Connection \"\";
            $ssl } }"
}
cat >"$T/n/nginx.conf" <<EOF
$USER_LINE
worker_processes 1;
daemon off;
pid $T/n/nginx.pid;
error_log $T/n/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    tcp_nopush off;
    keepalive_requests 1000000;
    client_body_temp_path $T/n/body;
    proxy_temp_path $T/n/proxy;
    fastcgi_temp_path $T/n/fcgi;
    uwsgi_temp_path $T/n/uwsgi;
    scgi_temp_path $T/n/scgi;
    upstream o_tls { server 127.0.0.1:$OT; keepalive 256; }
    upstream o_clear { server 127.0.0.1:$OC; keepalive 256; }
    upstream o_storm { server 127.0.0.1:$OS; keepalive 256; }
    $(nginx_srv tls.bench o_tls https)
    $(nginx_srv clear.bench o_clear http)
    $(nginx_srv storm.bench o_storm https)
}
EOF
b_start nginx 1 nginx -p "$T/n" -e "$T/n/error.log" -c "$T/n/nginx.conf"
b_wait_port nginx "$NP" || exit 1

b_free_port HP
cat >"$T/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 8000
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 2s
    timeout client 60s
    timeout server 30s
    maxconn 8000
frontend fe
    bind 127.0.0.1:$HP backlog 4096
    use_backend b_tls if { hdr(host) -i tls.bench }
    use_backend b_storm if { hdr(host) -i storm.bench }
    default_backend b_clear
backend b_tls
    server o1 127.0.0.1:$OT ssl verify required ca-file $CA sni str(origin.bench) verifyhost origin.bench
backend b_clear
    server o1 127.0.0.1:$OC
backend b_storm
    server o1 127.0.0.1:$OS ssl verify required ca-file $CA sni str(origin.bench) verifyhost origin.bench
EOF
b_start haproxy 1 haproxy -db -f "$T/haproxy.cfg"
b_wait_port haproxy "$HP" || exit 1

declare -A PORT=([cachet]=$CP [nginx]=$NP [haproxy]=$HP)
declare -A NAME=([cachet]="cachet" [nginx]="nginx proxy_pass" [haproxy]="HAProxy")
SYSTEMS="cachet nginx haproxy"
for s in $SYSTEMS; do # each answers over each origin, verified (a 502 here would be a config error)
    for h in tls clear storm; do
        c=$(curl -s -m 10 -o /dev/null -w '%{http_code} %{size_download}' -H "Host: $h.bench" \
            "http://127.0.0.1:${PORT[$s]}/warm")
        [ "$c" = "200 1024" ] || { echo "bench/tls_origin: $s via $h.bench: $c" >&2; tail -3 "$T/$s.err" "$T/n/error.log" >&2; exit 1; }
    done
done

cpu() { b_cpu_ticks $(b_pidtree "${B_PID[$1]}"); }
conns() { # LOG MARK: "new full resumed" upstream connections whose first request had MARK
    awk -v m="$2" 'index($3, m) { n++; if ($1 == "r") r++ } END { printf "%d %d %d\n", n, n - r, r }' "$1"
}
RUNS=$OUT/latest-runs.csv
echo "cell,system,round,rps,requests,errors,non2xx,bytes_per_req,cpu_us_per_req,new_conns,full,resumed" >"$RUNS"

pass_cell() { # CELL HOST LOG SYSTEM ROUND
    local cell=$1 host=$2 log=$3 s=$4 r=$5 mark="c=$1-$4-$5&" c0 c1 w
    c0=$(cpu "$s")
    b_wrk "$T/wrk.out" "http://127.0.0.1:${PORT[$s]}/1k?$mark" "$CONNS" "$SECS" -H "Host: $host"
    c1=$(cpu "$s")
    w=$(b_parse_wrk "$T/wrk.out") || { echo "$cell $s: wrk failed: $(tail -3 "$T/wrk.out")" >&2; return; }
    read -r rps _ _ reqs err non2xx bpr <<<"$w"
    sleep 0.2 # nginx writes its access log line at the end of a request
    read -r n f rs <<<"$(conns "$log" "$mark")"
    echo "$cell,$s,$r,$rps,$reqs,$err,$non2xx,$bpr,$(awk -v a="$c0" -v b="$c1" -v n="$reqs" -v hz="$B_HZ" \
        'BEGIN { printf "%.2f", (b - a) / hz * 1e6 / n }'),$n,$f,$rs" >>"$RUNS"
}

storm_cell() { # SYSTEM ROUND: one request (a session to resume), then BURSTS x 100 at once
    local s=$1 r=$2 mark="c=storm-$1-$2-" c0 c1 b i codes="" ok
    curl -s -o /dev/null -H "Host: storm.bench" "http://127.0.0.1:${PORT[$s]}/1k?c=stormwarm-$s-$r"
    c0=$(cpu "$s")
    for ((b = 0; b < BURSTS; b++)); do
        for ((i = 0; i < 100; i++)); do
            printf 'url = "http://127.0.0.1:%s/1k?%s%d-%d"\noutput = "/dev/null"\n' "${PORT[$s]}" "$mark" "$b" "$i"
        done >"$T/storm.urls"
        codes+=$(taskset -c 0 curl -s --no-progress-meter -Z --parallel-immediate --parallel-max 100 \
            -K "$T/storm.urls" -H "Host: storm.bench" -w '%{http_code} %{size_download}\n')$'\n'
    done
    c1=$(cpu "$s")
    ok=$(grep -c '^200 1024$' <<<"$codes")
    sleep 0.2
    read -r n f rs <<<"$(conns "$T/o/storm.log" "$mark")"
    echo "storm-100/tls-origin,$s,$r,,$((BURSTS * 100)),0,$((BURSTS * 100 - ok)),,$(awk -v a="$c0" -v b="$c1" \
        -v hz="$B_HZ" -v n=$((BURSTS * 100)) 'BEGIN { printf "%.2f", (b - a) / hz * 1e6 / n }'),$n,$f,$rs" >>"$RUNS"
}

echo "bench/tls_origin: $(nproc) CPUs, $(uname -r); wrk -t1 -c$CONNS ${SECS}s x $ROUNDS rounds;" \
    "nginx $(nginx -v 2>&1 | sed 's/.*\///'), $(haproxy -v | awk 'NR == 1 { print "HAProxy " $3 }'), $(openssl version | cut -d' ' -f1-2)"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "loadavg before: $LOAD0"
for ((round = 1; round <= ROUNDS; round++)); do
    for s in $SYSTEMS; do pass_cell pass-1k/tls-origin tls.bench "$T/o/tls.log" "$s" "$round"; done
    for s in $SYSTEMS; do pass_cell pass-1k/clear-origin clear.bench "$T/o/clear.log" "$s" "$round"; done
    for s in $SYSTEMS; do storm_cell "$s" "$round"; done
    echo "round $round done"
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
echo "loadavg after: $LOAD1"

# ---- medians ---------------------------------------------------------------------------
med() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
range() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s-%s", lo, hi }'; }
col() { awk -F, -v c="$1" -v s="$2" -v k="$3" 'NR > 1 && $1 == c && $2 == s { print $k }' "$RUNS"; }
sum() { awk -F, -v c="$1" -v s="$2" -v k="$3" 'NR > 1 && $1 == c && $2 == s { t += $k } END { print t + 0 }' "$RUNS"; }
{
    echo "cell,system,rps_median,rps_min_max,cpu_us_per_req_median,cpu_us_min_max,new_conns,full,resumed,failed"
    for cell in pass-1k/tls-origin pass-1k/clear-origin storm-100/tls-origin; do
        for s in $SYSTEMS; do
            echo "$cell,$s,$(col $cell $s 4 | med),$(col $cell $s 4 | range),$(col $cell $s 9 | med),$(col $cell $s 9 | range),$(sum $cell $s 10),$(sum $cell $s 11),$(sum $cell $s 12),$(($(sum $cell $s 6) + $(sum $cell $s 7)))"
        done
    done
} >"$OUT/latest.csv"
cg=""
if [ "$CG_N" -gt 0 ] && command -v valgrind >/dev/null; then
    echo "callgrind: bench/micro/reqcost.sh http-pass http-tlspass, $CG_N requests"
    cg=$(CELLS="http-pass http-tlspass" "$ROOT/bench/micro/reqcost.sh" "$BIN" "$CG_N" 2>&1)
fi
cpu_of() { awk -F, -v c="$1" -v s="$2" '$1 == c && $2 == s { print $5 }' "$OUT/latest.csv"; }
{
    echo "# TLS to origins (issue 39): $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "$(nproc) CPUs, $(uname -r), shared machine (loadavg before $LOAD0, after $LOAD1)."
    echo "Each proxy one worker on CPU 1; wrk -t1 -c$CONNS and the origin (nginx, one worker) on CPU 0;"
    echo "$ROUNDS rounds of ${SECS}s, systems alternating; median (min-max). Command: \`bench/tls_origin/run.sh --duration $SECS --rounds $ROUNDS --conns $CONNS --bursts $BURSTS\`."
    echo "To a TLS origin: cachet \`backends[].tls = { ca; server_name; }\`; nginx \`proxy_pass https://\` to an"
    echo "upstream with \`keepalive\`, \`proxy_ssl_verify on\`, \`proxy_ssl_trusted_certificate\`, \`proxy_ssl_session_reuse on\`;"
    echo "HAProxy \`server ... ssl verify required ca-file ... sni ... verifyhost\`, \`http-reuse always\`."
    echo
    echo "| cell | system | req/s | proxy CPU µs/req | new upstream conns (full / resumed) | failed |"
    echo "| --- | --- | ---: | ---: | ---: | ---: |"
    awk -F, -v names="$(for s in $SYSTEMS; do printf '%s=%s;' "$s" "${NAME[$s]}"; done)" '
        BEGIN { n = split(names, a, ";"); for (i = 1; i <= n; i++) { split(a[i], kv, "="); nm[kv[1]] = kv[2] } }
        NR > 1 { printf "| %s | %s | %s | %s (%s) | %s | %d |\n", $1, nm[$2],
                 ($3 == "" ? "-" : $3 " (" $4 ")"), $5, $6,
                 ($1 ~ /clear/ ? $7 : $7 " (" $8 " / " $9 ")"), $10 }' "$OUT/latest.csv"
    echo
    echo "Targets (issue 39): pass over a TLS origin, cachet's CPU per request <= 0.9x nginx's and <= HAProxy's:"
    awk -v c="$(cpu_of pass-1k/tls-origin cachet)" -v n="$(cpu_of pass-1k/tls-origin nginx)" \
        -v h="$(cpu_of pass-1k/tls-origin haproxy)" 'BEGIN { printf "cachet %.2f us = %.2fx nginx (%.2f), %.2fx HAProxy (%.2f)\n", c, c / n, n, c / h, h }'
    awk -F, '$1 == "storm-100/tls-origin" && $2 == "cachet" {
        printf "storm: cachet %d full handshakes of %d new connections (target <= 1/5: %d)\n", $8, $7, $7 / 5 }' "$OUT/latest.csv"
    echo
    echo "New upstream connections: those the origin saw in the cell (its access log, the first request"
    echo "of each); in the pass cells the pool's (up to $CONNS a round: idle ones may time out between rounds)."
    if [ -n "$cg" ]; then
        echo
        echo "User-space instructions per 1 KiB pass (callgrind, one keep-alive client connection, $CG_N requests):"
        echo
        echo '```'
        grep '^cell=' <<<"$cg"
        echo '```'
    fi
} >"$OUT/latest.md"
cat "$OUT/latest.md"
