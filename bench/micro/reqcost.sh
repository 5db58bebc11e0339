#!/usr/bin/env bash
# bench/micro/reqcost.sh: what one keep-alive request costs cachet, counted
# rather than timed (issue 13's before/after table).
#
#   bench/micro/reqcost.sh BINDIR [N]
#
# For each cell (HTTP hit, HTTP pass, HTTPS hit, HTTPS pass; 1 KiB bodies;
# CELLS="h2-hit h2-pass" adds HTTP/2 over TLS, one stream at a time;
# SCHEME-miss cells fetch a new URL each time and store it; http-tlspass is
# the HTTP pass to a TLS 1.3 origin, nginx terminating TLS in front of the
# same cachet-origin, verified against a CA made here: issue 39)
# one cachet worker runs under valgrind --tool=callgrind and one keep-alive
# connection makes N requests after a warm-up; the counters are zeroed after
# the warm-up and dumped after the N (callgrind_control), so start-up is not
# counted. Then the same cell runs without valgrind under strace -f -c, which
# gives the socket syscalls per request. Prints one line per cell:
#   cell=http-hit Ir_per_req=7212 reads_per_req=1.00 writes_per_req=1.00
# Instructions are user space only and repeat exactly for the same binary
# and inputs, whatever the machine is doing.
set -u
BIN=$(cd "${1:?usage: reqcost.sh BINDIR [N]}" && pwd)
N=${2:-2000}
CELLS=${CELLS:-"http-hit http-miss http-pass https-hit https-pass"}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ct-reqcost.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"; }
[ -n "${KEEP:-}" ] && echo "kept $TMP" >&2 && cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
wait_port() { # FILE PATTERN PID
    local i line
    for ((i = 0; i < 6000; i++)); do
        kill -0 "$3" 2>/dev/null || { echo "reqcost: exited:" >&2; cat "$1" "${1%.out}.err" >&2 2>/dev/null; return 1; }
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null) && { echo "${line##*:}"; return 0; }
        sleep 0.01
    done
    echo "reqcost: no '$2' in $1" >&2
    return 1
}
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

"$BIN/cachet-origin" --port 0 --workers 1 >"$TMP/origin.out" 2>&1 &
pids+=($!)
OPORT=$(wait_port "$TMP/origin.out" '^listening on' $!) || exit 1

# http-tlspass (issue 39): the pass over a TLS 1.3 origin, nginx (one
# worker) terminating TLS in front of the same cachet-origin, its
# certificate (IP 127.0.0.1) from a CA made here, verified by cachet.
TBACKEND=()
if [[ " $CELLS " == *" http-tlspass "* ]]; then
    . "$(dirname "$0")/../lib/tls_ca.sh"
    b_test_ca "$TMP" 127.0.0.1 IP:127.0.0.1 || exit 1
    TPORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$TMP/ng"
    cat >"$TMP/ng/nginx.conf" <<EOF
$([ "$(id -u)" = 0 ] && echo "user root;")
worker_processes 1;
daemon off;
pid $TMP/ng/nginx.pid;
error_log $TMP/ng/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $TMP/ng/body;
    proxy_temp_path $TMP/ng/proxy;
    fastcgi_temp_path $TMP/ng/fcgi;
    uwsgi_temp_path $TMP/ng/uwsgi;
    scgi_temp_path $TMP/ng/scgi;
    keepalive_requests 1000000;
    upstream co { server 127.0.0.1:$OPORT; keepalive 16; }
    server { listen 127.0.0.1:$TPORT ssl; ssl_protocols TLSv1.3;
             ssl_certificate $TMP/origin.pem; ssl_certificate_key $TMP/origin.key;
             location / { proxy_pass http://co; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
EOF
    nginx -p "$TMP/ng" -e "$TMP/ng/error.log" -c "$TMP/ng/nginx.conf" >"$TMP/ng/out" 2>&1 &
    NGPID=$! # its master stops its worker on TERM; a KILL would leave the worker
    trap 'kill -TERM $NGPID 2>/dev/null; wait $NGPID 2>/dev/null; cleanup' EXIT
    for ((i = 0; i < 1000; i++)); do (exec 3<>"/dev/tcp/127.0.0.1/$TPORT") 2>/dev/null && break; sleep 0.01; done
    TBACKEND=(--backend "https://127.0.0.1:$TPORT" --backend-ca "$TMP/ca.pem")
fi

client() { # SCHEME PORT PATH N ZERO(0/1) DIR
    "${PY:-/usr/bin/python3}" - "$@" <<'PY'
import http.client, os, ssl, subprocess, sys
scheme, port, tpath, n, zero, d = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6]
seq = [0]
def next_path():                     # "{i}" in the path: a new URL each time (the miss cell)
    seq[0] += 1
    return tpath.replace("{i}", str(seq[0]))
if scheme == "h2":                   # one HTTP/2 connection over TLS, one stream at a time
    import socket, h2.config, h2.connection, h2.events
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=600), server_hostname="localhost")
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection(); sock.sendall(conn.data_to_send())
    class C: pass
    c = C()
    def get():
        path = next_path()
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "GET"), (":path", path), (":scheme", "https"),
                                (":authority", "127.0.0.1")], end_stream=True)
        sock.sendall(conn.data_to_send())
        st, cs, body, done = None, "", 0, False
        while not done:
            for ev in conn.receive_data(sock.recv(65536)):
                if isinstance(ev, h2.events.ResponseReceived):
                    h = dict(ev.headers); st = h.get(b":status"); cs = h.get(b"cache-status", b"").decode()
                elif isinstance(ev, h2.events.DataReceived):
                    body += len(ev.data); conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                    done = True
            sock.sendall(conn.data_to_send())
        assert st == b"200" and body == 1024, (st, body)
        return cs
elif scheme == "https":
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=600, context=ctx)
else:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
if scheme != "h2":
    def get():
        c.request("GET", next_path())
        r = c.getresponse(); body = r.read()
        assert r.status == 200 and len(body) == 1024, (r.status, len(body))
        return r.getheader("Cache-Status") or ""
for _ in range(50):
    get()
if zero:
    subprocess.run(["callgrind_control", "-z", os.environ["CG_PID"]], check=True, capture_output=True, cwd=d)
else:
    open(d + "/go", "w").close()
    import time
    while True:                      # strace attaches while we wait
        try: open(d + "/ready").close(); break
        except FileNotFoundError: time.sleep(0.01)
for _ in range(n):
    s = get()
if zero:
    subprocess.run(["callgrind_control", "-d", os.environ["CG_PID"]], check=True, capture_output=True, cwd=d)
print(s)
PY
}

for cell in $CELLS; do
    scheme=${cell%-*}; kind=${cell#*-}
    backend=(--backend "127.0.0.1:$OPORT")
    [ "$kind" = tlspass ] && backend=("${TBACKEND[@]}")
    case $kind in
        hit) path="/1k?cache-control=max-age%3D3600" ;;
        miss) path="/gen?size=1024&cache-control=max-age%3D3600&n={i}" ;; # fetched and stored
        *) path="/gen?size=1024&cache-control=no-store" ;;
    esac
    d="$TMP/$cell"; mkdir -p "$d"
    if [ "$scheme" = https ] || [ "$scheme" = h2 ]; then lopt=(--http off --https 127.0.0.1:0); pat='^listening on https '; else lopt=(--http 127.0.0.1:0); pat='^listening on http '; fi
    # instructions
    (cd "$d" && exec valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" "$BIN/cachet" "${lopt[@]}" \
        --admin off --workers 1 "${backend[@]}" --access-log off >"$d/cachet.out" 2>"$d/cachet.err") &
    vp=$!; pids+=($vp)
    port=$(wait_port "$d/cachet.out" "$pat" $vp) || exit 1
    cs=$(CG_PID=$vp client "$scheme" "$port" "$path" "$N" 1 "$d") || exit 1
    sleep 0.5
    total=0
    for f in "$d"/cg.*.[0-9]*; do
        [ -f "$f" ] || continue
        ir=$(awk '/^summary:/ { print $2 }' "$f"); total=$((total + ${ir:-0}))
    done
    stop $vp
    # syscalls
    rm -f "$d"/go "$d"/ready
    "$BIN/cachet" "${lopt[@]}" --admin off --workers 1 "${backend[@]}" --access-log off \
        >"$d/s.out" 2>"$d/s.err" &
    sp=$!; pids+=($sp)
    port=$(wait_port "$d/s.out" "$pat" $sp) || exit 1
    client "$scheme" "$port" "$path" "$N" 0 "$d" >/dev/null &
    cp=$!
    for ((i = 0; i < 6000; i++)); do [ -f "$d/go" ] && break; sleep 0.01; done
    strace -f -c -o "$d/strace" -p "$sp" 2>/dev/null &
    stp=$!
    sleep 1; touch "$d/ready"
    wait $cp
    kill -INT $stp; wait $stp 2>/dev/null
    stop $sp
    awk -v n="$N" -v cell="$cell" -v ir="$((total / N))" -v cs="$cs" '
        $NF ~ /^(read|readv|recvfrom|recvmsg)$/ { r += $4 }
        $NF ~ /^(write|writev|sendto|sendmsg|sendfile)$/ { w += $4 }
        $NF ~ /^(epoll_ctl)$/ { e += $4 }
        END { printf "cell=%s Ir_per_req=%d reads_per_req=%.2f writes_per_req=%.2f epoll_ctl_per_req=%.2f (%s)\n", cell, ir, r / n, w / n, e / n, cs }' "$d/strace"
done
