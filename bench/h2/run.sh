#!/usr/bin/env bash
# bench/h2/run.sh [--bin DIR] [--n REQUESTS] [--rounds N] [--idle CONNS]: the HTTP/2 cells
# of issue 14 beside HTTPS/1.1, on one machine over loopback.
#
# Cells (h2load on CPU 0, each server one worker pinned to CPU 1):
#   hit-1k h2 -c100 -m10   a 1 KiB cache hit, 100 connections x 10 streams
#   hit-1k h2 -c100 -m1    the same, one stream at a time
#   hit-1k https/1.1 -c100 (h2load --h1): the same hit over HTTPS/1.1
#   hit-100k h2 -c10 -m10  a 100 KiB hit (N/10 requests)
#   pass-1k h2 -c100 -m10  a 1 KiB no-store response: every request reaches the origin
# Systems: cachet (listen[].tls.http2), nginx proxy_cache with `http2` on
# its TLS listener, HAProxy's cache (`alpn h2,http/1.1`), h2o as an HTTP/2
# proxy (it has no cache: its "hit" is a pass) and nginx `return 200` over
# h2 (the ceiling). HAProxy and h2o run only when installed (make
# deps-bench installs them). Each cell
# runs N requests (default 100000) and reports req/s, the 2xx count (every
# request must succeed: a cell whose counts are short is marked) and the
# server's CPU seconds per 100 000 requests. Rounds alternate the systems.
# The load average before and after is printed: the machine is shared.
# Last, the memory of an idle h2 connection: RSS growth of the server (its
# worker) with CONNS connections (default 500) that each made one request
# (bench/h2/idle_conns.py), divided by CONNS, read 2 s after the last one
# went idle (cachet trims an h2 connection's busy-only buffers after 1 s of
# quiet, proxy/h2/h2_serve.c; nginx frees its own at once).
set -u
BIN=$(cd "$(dirname "$0")/../.." && pwd)/build/bin
N=100000
ROUNDS=3
IDLE=500
while [ $# -gt 0 ]; do
    case $1 in
    --bin) BIN=$2; shift ;;
    --n) N=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --idle) IDLE=$2; shift ;;
    *) echo "usage: $0 [--bin DIR] [--n REQUESTS] [--rounds N] [--idle CONNS]" >&2; exit 2 ;;
    esac
    shift
done
for t in h2load nginx openssl taskset; do
    command -v $t >/dev/null || { echo "bench/h2: $t not installed" >&2; exit 2; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-h2bench.XXXXXX")
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"' EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # PORT: until it accepts (10 s)
    for _ in $(seq 1000); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.01
    done
    return 1
}
cpu_of() { # PID: utime+stime in ticks of it and its children (nginx's worker)
    local p t=0
    for p in $1 $(pgrep -P "$1"); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    done
    echo $t
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/key.pem" \
    -out "$TMP/cert.pem" -days 2 -subj /CN=localhost >/dev/null 2>&1

# The origin: cachet-origin, unpinned (it only serves the first miss).
OPORT=$(free_port)
"$BIN/cachet-origin" --port "$OPORT" --workers 1 >"$TMP/origin.out" 2>&1 &
PIDS+=($!)
wait_port "$OPORT" || { echo "origin did not start" >&2; exit 1; }

# cachet: one worker on CPU 1, h2 on its HTTPS listener.
CPORT=$(free_port)
cat >"$TMP/cachet.conf" <<EOF
workers = 1;
listen = ( { kind = "https"; address = "127.0.0.1:$CPORT";
             tls = { certificates = ( { cert = "$TMP/cert.pem"; key = "$TMP/key.pem"; } ); http2 = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
taskset -c 1 "$BIN/cachet" -c "$TMP/cachet.conf" --admin off >"$TMP/cachet.out" 2>"$TMP/cachet.err" &
CPID=$!
PIDS+=($CPID)
wait_port "$CPORT" || { echo "cachet did not start" >&2; cat "$TMP/cachet.err" >&2; exit 1; }

# nginx: proxy_cache with http2 on the TLS listener, and return 200 (ceiling).
NPORT=$(free_port) RPORT=$(free_port)
mkdir -p "$TMP/nginx"
cat >"$TMP/nginx.conf" <<EOF
user root;
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    sendfile on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    http2_max_concurrent_streams 128;
    client_body_temp_path $TMP/nginx/body;
    proxy_temp_path $TMP/nginx/proxy;
    fastcgi_temp_path $TMP/nginx/fcgi;
    uwsgi_temp_path $TMP/nginx/uwsgi;
    scgi_temp_path $TMP/nginx/scgi;
    proxy_cache_path $TMP/nginx/cache levels=1:2 keys_zone=h2b:16m max_size=256m use_temp_path=off;
    ssl_certificate $TMP/cert.pem;
    ssl_certificate_key $TMP/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    upstream origin { server 127.0.0.1:$OPORT; keepalive 64; }
    server {
        listen 127.0.0.1:$NPORT ssl http2;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache h2b;
            proxy_cache_valid 200 1h;
        }
    }
    server {
        listen 127.0.0.1:$RPORT ssl http2;
        location / { return 200 "\$request_uri"; }
    }
}
EOF
taskset -c 1 nginx -c "$TMP/nginx.conf" >"$TMP/nginx.out" 2>&1 &
NPID=$!
PIDS+=($NPID)
wait_port "$NPORT" || { echo "nginx did not start" >&2; cat "$TMP/nginx.out" >&2; exit 1; }

# HAProxy: its cache, h2 and HTTP/1.1 by ALPN on the TLS listener.
HPORT="" HPID=""
if command -v haproxy >/dev/null; then
    HPORT=$(free_port)
    cat "$TMP/cert.pem" "$TMP/key.pem" >"$TMP/both.pem"
    cat >"$TMP/haproxy.cfg" <<HCFG
global
    nbthread 1
    maxconn 8000
    tune.bufsize 131072
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 2s
    timeout client 60s
    timeout server 30s
    maxconn 8000
cache h2b
    total-max-size 256
    max-object-size 1048576
    max-age 3600
frontend fe
    bind 127.0.0.1:$HPORT ssl crt $TMP/both.pem alpn h2,http/1.1 backlog 4096
    default_backend origin
backend origin
    http-request cache-use h2b
    http-response cache-store h2b
    server o1 127.0.0.1:$OPORT maxconn 1000
HCFG
    taskset -c 1 haproxy -f "$TMP/haproxy.cfg" -db >"$TMP/haproxy.out" 2>&1 &
    HPID=$!
    PIDS+=($HPID)
    wait_port "$HPORT" || { echo "haproxy did not start" >&2; cat "$TMP/haproxy.out" >&2; exit 1; }
fi

# h2o: an HTTP/2 reverse proxy (no cache), one thread.
TPORT="" TPID=""
if command -v h2o >/dev/null; then
    TPORT=$(free_port)
    # as root h2o switches to nobody, who may not write in $TMP: stay root
    cat >"$TMP/h2o.conf" <<TCFG
$([ "$(id -u)" = 0 ] && echo "user: root")
num-threads: 1
pid-file: $TMP/h2o.pid
error-log: $TMP/h2o.err
listen:
  host: 127.0.0.1
  port: $TPORT
  ssl:
    certificate-file: $TMP/cert.pem
    key-file: $TMP/key.pem
hosts:
  default:
    paths:
      "/":
        proxy.reverse.url: http://127.0.0.1:$OPORT/
TCFG
    taskset -c 1 h2o -c "$TMP/h2o.conf" >"$TMP/h2o.out" 2>&1 &
    TPID=$!
    PIDS+=($TPID)
    wait_port "$TPORT" || { echo "h2o did not start" >&2; cat "$TMP/h2o.out" "$TMP/h2o.err" >&2; exit 1; }
fi

URL=/1k?cache-control=max-age%3D3600
URL100K=/100k?cache-control=max-age%3D3600
for p in "$CPORT" "$NPORT" $HPORT; do # warm the caches; say what a hit looks like
    curl -sk -o /dev/null "https://127.0.0.1:$p$URL100K"
    curl -sk -o /dev/null "https://127.0.0.1:$p$URL"
    echo "warm :$p: $(curl -sk --http2 -o /dev/null -w '%{http_version} %{http_code} %{size_download}' "https://127.0.0.1:$p$URL")"
done

# cell SYSTEM PID PORT ARGS...: one h2load run; prints a table row.
cell() {
    local sys=$1 pid=$2 port=$3 label=$4
    shift 4
    [ -n "$port" ] || return 0 # a peer that is not installed
    local url=$URL n=$N
    case $label in
    hit-100k*) url=$URL100K n=$((N / 10)) ;;
    pass-1k*) url='/gen?size=1024&cache-control=no-store' ;;
    esac
    local c0 c1 out rps ok
    c0=$(cpu_of "$pid")
    out=$(taskset -c 0 timeout 300 h2load -n "$n" "$@" "https://127.0.0.1:$port$url" 2>&1)
    c1=$(cpu_of "$pid")
    rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")
    ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' <<<"$out")
    local tck
    tck=$(getconf CLK_TCK)
    local cpu
    cpu=$(awk -v a="$c0" -v b="$c1" -v n="$n" -v t="$tck" 'BEGIN {printf "%.2f", (b - a) / t * 100000 / n}')
    printf '| %-22s | %-18s | %10s | %8s%s | %6s |\n' "$label" "$sys" "${rps:-?}" "${ok:-0}" \
        "$([ "${ok:-0}" = "$n" ] || echo ' SHORT')" "$cpu"
}

echo "bench/h2: $(nproc) CPUs, $(uname -r); h2load $(h2load --version | head -1 | awk '{print $2}'); nginx $(nginx -v 2>&1 | sed 's/.*\///')"
echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| cell                   | system             |      req/s |      2xx | CPU s / 100k |"
echo "| --- | --- | ---: | ---: | ---: |"
for ((round = 1; round <= ROUNDS; round++)); do
    cell cachet "$CPID" "$CPORT" "hit-1k h2 -c100 -m10" -c100 -m10
    cell nginx-proxy_cache "$NPID" "$NPORT" "hit-1k h2 -c100 -m10" -c100 -m10
    cell haproxy-cache "$HPID" "$HPORT" "hit-1k h2 -c100 -m10" -c100 -m10
    cell h2o-proxy "$TPID" "$TPORT" "hit-1k h2 -c100 -m10" -c100 -m10
    cell nginx-return-200 "$NPID" "$RPORT" "hit-1k h2 -c100 -m10" -c100 -m10
    cell cachet "$CPID" "$CPORT" "hit-1k h2 -c100 -m1" -c100 -m1
    cell nginx-proxy_cache "$NPID" "$NPORT" "hit-1k h2 -c100 -m1" -c100 -m1
    cell cachet "$CPID" "$CPORT" "hit-1k https/1.1 -c100" -c100 --h1
    cell nginx-proxy_cache "$NPID" "$NPORT" "hit-1k https/1.1 -c100" -c100 --h1
    cell haproxy-cache "$HPID" "$HPORT" "hit-1k https/1.1 -c100" -c100 --h1
    cell cachet "$CPID" "$CPORT" "hit-100k h2 -c10 -m10" -c10 -m10
    cell nginx-proxy_cache "$NPID" "$NPORT" "hit-100k h2 -c10 -m10" -c10 -m10
    cell haproxy-cache "$HPID" "$HPORT" "hit-100k h2 -c10 -m10" -c10 -m10
    cell cachet "$CPID" "$CPORT" "pass-1k h2 -c100 -m10" -c100 -m10
    cell nginx-proxy_cache "$NPID" "$NPORT" "pass-1k h2 -c100 -m10" -c100 -m10
    cell haproxy-cache "$HPID" "$HPORT" "pass-1k h2 -c100 -m10" -c100 -m10
    cell h2o-proxy "$TPID" "$TPORT" "pass-1k h2 -c100 -m10" -c100 -m10
done
echo
rss_of() { # PID: KiB resident, of it and its children
    local p t=0
    for p in $1 $(pgrep -P "$1"); do
        t=$((t + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status")))
    done
    echo $t
}
idle_mem() { # SYSTEM PID PORT
    local r0 r1
    r0=$(rss_of "$2")
    coproc IDLEC { /usr/bin/python3 "$(dirname "$0")/idle_conns.py" "$3" "$IDLE" "$URL"; }
    local line
    read -r -t 120 line <&"${IDLEC[0]}"
    # time under measure: an idle h2 connection gives its buffers back after
    # 1 s of quiet (proxy/h2/h2_mem.c), so RSS is read past that
    sleep 2
    r1=$(rss_of "$2")
    printf '| idle h2 connection | %-18s | %s | %6d KiB for %d | %.1f KiB each |\n' "$1" "$line" \
        $((r1 - r0)) "$IDLE" "$(awk -v a="$r0" -v b="$r1" -v n="$IDLE" 'BEGIN {print (b - a) / n}')"
    eval "exec ${IDLEC[1]}>&-"
    wait "$IDLEC_PID" 2>/dev/null
}
if [ "$IDLE" -gt 0 ]; then
    idle_mem cachet "$CPID" "$CPORT"
    idle_mem nginx "$NPID" "$NPORT"
fi
echo
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
