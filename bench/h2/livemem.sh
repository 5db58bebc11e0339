#!/usr/bin/env bash
# bench/h2/livemem.sh [--bin DIR] [--conns N] [--requests 0|1] [--nginx]: where
# the memory of an idle HTTP/2 connection goes, by call stack (docs/h2.md,
# "Idle connection memory"). cachet (one worker) or nginx runs under
# bench/h2/livemem.c; 20 connections warm it up and close; then the live
# heap is dumped, N connections (default 300) from idle_conns.py make
# REQUESTS requests each (default 1; 0: only the SETTINGS exchange) and
# idle 2.5 s (past cachet's 1 s idle trim), the heap is dumped again, and
# livemem.py prints the growth per connection by stack. The trimmed pages
# are still allocated blocks here (the frame buffer's 20 KiB, the stream
# map's 4 KiB): subtract them for what is resident. Bytes, not time.
# KEEP=1 keeps the dumps (the folder is printed).
set -u
BIN=$(cd "$(dirname "$0")/../.." && pwd)/build/bin
N=300 REQ=1 NGINX=
while [ $# -gt 0 ]; do
    case $1 in
    --bin) BIN=$2; shift ;;
    --conns) N=$2; shift ;;
    --requests) REQ=$2; shift ;;
    --nginx) NGINX=1 ;;
    *) echo "usage: $0 [--bin DIR] [--conns N] [--requests 0|1] [--nginx]" >&2; exit 2 ;;
    esac
    shift
done
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-livemem.XXXXXX")
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT
[ -n "${KEEP:-}" ] && echo "livemem: dumps kept in $TMP" >&2
gcc -O1 -g -fPIC -shared -o "$TMP/livemem.so" "$HERE/livemem.c" -ldl -lpthread || exit 1
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
    for _ in $(seq 1000); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.01; done
    return 1
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/key.pem" \
    -out "$TMP/cert.pem" -days 2 -subj /CN=localhost >/dev/null 2>&1
PORT=$(free_port)
if [ -n "$NGINX" ]; then
    mkdir -p "$TMP/n"
    cat >"$TMP/nginx.conf" <<EOC
user root; worker_processes 1; daemon off; master_process off; pid $TMP/n/pid; error_log $TMP/n/err warn;
events { worker_connections 8192; }
http { access_log off; client_body_temp_path $TMP/n/b; proxy_temp_path $TMP/n/p; fastcgi_temp_path $TMP/n/f;
  uwsgi_temp_path $TMP/n/u; scgi_temp_path $TMP/n/s;
  ssl_certificate $TMP/cert.pem; ssl_certificate_key $TMP/key.pem; ssl_protocols TLSv1.2 TLSv1.3;
  server { listen 127.0.0.1:$PORT ssl http2; location / { return 200 "$(printf '%01024d' 0)"; } } }
EOC
    MEMTRACE=$TMP/dump LD_PRELOAD=$TMP/livemem.so nginx -c "$TMP/nginx.conf" &
    PIDS+=($!)
    URL=/1k
else
    OPORT=$(free_port)
    "$BIN/cachet-origin" --port "$OPORT" --workers 1 >/dev/null 2>&1 &
    PIDS+=($!)
    cat >"$TMP/cachet.conf" <<EOC
workers = 1;
listen = ( { kind = "https"; address = "127.0.0.1:$PORT";
             tls = { certificates = ( { cert = "$TMP/cert.pem"; key = "$TMP/key.pem"; } ); http2 = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOC
    MEMTRACE=$TMP/dump LD_PRELOAD=$TMP/livemem.so "$BIN/cachet" -c "$TMP/cachet.conf" --admin off \
        >/dev/null 2>"$TMP/cachet.err" &
    PIDS+=($!)
    URL=/1k?cache-control=max-age%3D3600
fi
wait_port "$PORT" || { echo "livemem: the server did not start" >&2; exit 1; }
dump() { # wait for the dump file the tracer writes
    local before; before=$(ls "$TMP"/dump.[0-9]* 2>/dev/null | wc -l)
    touch "$TMP/dump.req"
    for _ in $(seq 500); do [ "$(ls "$TMP"/dump.[0-9]* 2>/dev/null | wc -l)" -gt "$before" ] && return; sleep 0.01; done
}
/usr/bin/python3 "$HERE/idle_conns.py" "$PORT" 20 "$URL" "$REQ" </dev/null >/dev/null
sleep 1.5 # the warm-up's connections closed and trimmed
dump
coproc IDLEC { /usr/bin/python3 "$HERE/idle_conns.py" "$PORT" "$N" "$URL" "$REQ"; }
read -r -t 120 line <&"${IDLEC[0]}"
sleep 2.5 # past the idle trim (1 s)
dump
eval "exec ${IDLEC[1]}>&-"
echo "$line connections, $REQ request(s) each"
/usr/bin/python3 "$HERE/livemem.py" "$TMP/dump.1" "$TMP/dump.2" "$N"
