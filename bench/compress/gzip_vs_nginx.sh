#!/usr/bin/env bash
# bench/compress/gzip_vs_nginx.sh: gzip clients of one 100 KiB JSON
# document, cachet (compressed once, stored) against nginx with proxy_cache
# and `gzip on` in front of the same cachet-origin (it stores the identity
# body and compresses per request), same run (issue 18's >= 3x target).
#
#   bench/compress/gzip_vs_nginx.sh BINDIR [SECONDS] [ROUNDS] [NGINX_LEVEL]
#
# One server worker pinned to CPU 1, wrk -t1 -c50 pinned to CPU 0 (bench/README.md),
# keep-alive, systems alternated per round; prints req/s per round and the
# median, plus the server's CPU per request (utime+stime of its process).
# nginx's gzip_comp_level is NGINX_LEVEL (default 6, cachet's gzip_level; 1
# is nginx's own default). Each cell first checks that the answer is gzip and
# decodes to the document.
set -u
BIN=$(cd "${1:?usage: gzip_vs_nginx.sh BINDIR [SECONDS] [ROUNDS] [LEVEL]}" && pwd)
SECS=${2:-5}
ROUNDS=${3:-3}
LEVEL=${4:-6}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-gzbench.XXXXXX")
pids=()
# nginx's master is stopped with TERM and waited for: a KILLed master leaves
# its worker and cache manager running.
cleanup() {
    local np
    np=$(cat "$TMP/nginx/nginx.pid" 2>/dev/null)
    [ -n "$np" ] && kill -TERM "$np" 2>/dev/null
    for ((i = 0; i < 200; i++)); do [ -n "$np" ] && kill -0 "$np" 2>/dev/null || break; sleep 0.02; done
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for ((i = 0; i < 500; i++)); do curl -s -o /dev/null "$1" && return 0; sleep 0.02; done; return 1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

mkdir -p "$TMP/root"
python3 "$(dirname "$0")/bench_doc.py" "$TMP/root/doc.json"
OPORT=$(free_port)
taskset -c 0 "$BIN/cachet-origin" --port "$OPORT" --workers 1 --root "$TMP/root" >"$TMP/origin.out" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$OPORT/doc.json" || { echo "origin did not start" >&2; exit 1; }
DOC="/doc.json?cache-control=max-age%3D86400"

CPORT=$(free_port)
taskset -c 1 "$BIN/cachet" --http "127.0.0.1:$CPORT" --https off --admin off --workers 1 \
    --backend "127.0.0.1:$OPORT" >"$TMP/cachet.out" 2>&1 &
cpid=$!; pids+=($cpid)

NPORT=$(free_port)
mkdir -p "$TMP/nginx/cache"
cat >"$TMP/nginx/nginx.conf" <<EOF
user root;
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on; tcp_nopush off; tcp_nodelay on;
    keepalive_requests 1000000;
    client_body_temp_path $TMP/nginx/body; proxy_temp_path $TMP/nginx/proxy;
    fastcgi_temp_path $TMP/nginx/fcgi; uwsgi_temp_path $TMP/nginx/uwsgi; scgi_temp_path $TMP/nginx/scgi;
    proxy_cache_path $TMP/nginx/cache levels=1:2 keys_zone=z:16m max_size=256m inactive=1h use_temp_path=off;
    upstream origin { server 127.0.0.1:$OPORT; keepalive 64; }
    gzip on;
    gzip_comp_level $LEVEL;
    gzip_types application/json;
    gzip_proxied any;
    gzip_vary on;
    server {
        listen 127.0.0.1:$NPORT backlog=4096;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache z;
        }
    }
}
EOF
taskset -c 1 nginx -c "$TMP/nginx/nginx.conf" >"$TMP/nginx/out" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$CPORT/" && wait_http "http://127.0.0.1:$NPORT/" ||
    { echo "servers did not start" >&2; cat "$TMP/nginx/error.log" >&2; exit 1; }
npid=$(pgrep -P "$(cat "$TMP/nginx/nginx.pid")" nginx | head -1)
[ -n "$npid" ] || npid=$(cat "$TMP/nginx/nginx.pid")

ref=$(md5sum <"$TMP/root/doc.json")
for sys in cachet nginx; do
    port=$([ $sys = cachet ] && echo "$CPORT" || echo "$NPORT")
    for i in 1 2 3; do curl -s -o /dev/null -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port$DOC"; done
    h=$(curl -s -D - -o "$TMP/b.gz" -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port$DOC")
    grep -qi '^content-encoding: gzip' <<<"$h" || { echo "$sys: not gzip" >&2; exit 1; }
    [ "$(gunzip <"$TMP/b.gz" | md5sum)" = "$ref" ] || { echo "$sys: wrong body" >&2; exit 1; }
    echo "$sys: gzip body $(stat -c %s "$TMP/b.gz") bytes, decodes to the document"
done

declare -A rps cpu
for ((r = 1; r <= ROUNDS; r++)); do
    for sys in cachet nginx; do
        port=$([ $sys = cachet ] && echo "$CPORT" || echo "$NPORT")
        pid=$([ $sys = cachet ] && echo "$cpid" || echo "$npid")
        t0=$(cpu_ticks "$pid")
        out=$(taskset -c 0 wrk -t1 -c50 -d"${SECS}s" -H 'Accept-Encoding: gzip' \
            "http://127.0.0.1:$port$DOC" 2>&1)
        t1=$(cpu_ticks "$pid")
        n=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' <<<"$out")
        v=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
        us=$(awk -v t=$((t1 - t0)) -v n="${n:-1}" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')
        rps[$sys]+="$v "
        cpu[$sys]+="$us "
        echo "round $r $sys: $v req/s, $us us CPU per request"
    done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mc=$(median "${rps[cachet]}") mn=$(median "${rps[nginx]}")
echo "median: cachet $mc req/s ($(median "${cpu[cachet]}") us/req), nginx gzip_comp_level $LEVEL $mn req/s ($(median "${cpu[nginx]}") us/req), ratio $(awk -v a="$mc" -v b="$mn" 'BEGIN { printf "%.1f", a / b }')x"
