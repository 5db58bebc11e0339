#!/usr/bin/env bash
# The real client address (issue 15): the PROXY protocol (v1 and v2, over
# HTTP and under TLS) on a listener that enables it, from an allowed peer
# (127.0.0.1) and refused from another (127.0.0.2 is another loopback
# source); X-Forwarded-For from trusted proxies only. The client address is
# what the access log, a route's deny and X-Forwarded-For to the origin see.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start o "$CT_BIN/cachet-origin" --port 0 --workers 1
OP=$(ct_wait_listen o) || exit 1

cat >"$CT_TMP/realip.conf" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; proxy_protocol = true;
             proxy_protocol_from = [ "127.0.0.1/32" ]; },
           { kind = "https"; address = "127.0.0.1:0"; proxy_protocol = true;
             proxy_protocol_from = [ "127.0.0.1/32" ]; tls = { self_signed = true; http2 = false; }; },
           { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OP"; } );
admin = { listen = "off"; };
trusted_proxies = [ "127.0.0.1/32" ];
logs = { access_log = "$CT_TMP/access.log"; access_format = "json"; };
sites = ( { name = "s"; hosts = [ "s.test" ];
  routes = ( { name = "closed"; match = { path = "/json"; }; deny = [ "198.51.100.0/24" ]; } ); } );
CONF
ct_start p "$CT_BIN/cachet" -c "$CT_TMP/realip.conf"
PP=$(ct_wait_listen p http) || exit 1
SP=$(ct_wait_listen p https) || exit 1
# the third listener (plain, no PROXY): the last "listening on http" line
second_port() {
    NP=$(grep '^listening on http ' "$CT_TMP/p.out" 2>/dev/null | sed -n '2s/.*://p')
    [ -n "$NP" ]
}
ct_wait_until 60 second_port

send() { # send PORT SOURCE VERSION(1|2|none) TLS(0|1) PATH [XFF] -> status line and body
    python3 - "$@" <<'PY'
import socket, ssl, struct, sys
port, src, ver, tls, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5]
xff = sys.argv[6] if len(sys.argv) > 6 else None
s = socket.socket()
s.settimeout(10)
s.bind((src, 0))
s.connect(("127.0.0.1", port))
if ver == "1":
    s.sendall(b"PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n")
elif ver == "2":
    sig = b"\r\n\r\n\x00\r\nQUIT\n"
    addrs = socket.inet_aton("203.0.113.8") + socket.inet_aton("127.0.0.1") + struct.pack("!HH", 6666, 80)
    s.sendall(sig + bytes([0x21, 0x11]) + struct.pack("!H", len(addrs)) + addrs)
elif ver == "junk":
    s.sendall(b"GET / HTTP/1.1\r\nHost: s.test\r\n\r\n")
if tls:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        s = ctx.wrap_socket(s, server_hostname="s.test")
    except (ssl.SSLError, OSError) as e:
        print("closed"); sys.exit(0)
req = "GET %s HTTP/1.1\r\nHost: s.test\r\nConnection: close\r\n" % path
if xff:
    req += "X-Forwarded-For: %s\r\n" % xff
try:
    if ver != "junk":
        s.sendall((req + "\r\n").encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
except (ConnectionResetError, BrokenPipeError, socket.timeout, ssl.SSLError):
    data = b""
if not data:
    print("closed")
else:
    head, _, body = data.partition(b"\r\n\r\n")
    print(head.split(b"\r\n")[0].decode())
    print(body.decode(errors="replace"))
PY
}

out=$(send "$PP" 127.0.0.1 1 0 /echo)
ct_check_match "PROXY v1 from an allowed peer: served" "$out" '^HTTP/1.1 200'
ct_check_match "PROXY v1: the origin sees the client in X-Forwarded-For" "$out" '"X-Forwarded-For", "203\.0\.113\.7"'
out=$(send "$PP" 127.0.0.1 2 0 /echo)
ct_check_match "PROXY v2 from an allowed peer: the client" "$out" '"X-Forwarded-For", "203\.0\.113\.8"'
out=$(send "$SP" 127.0.0.1 1 1 /echo)
ct_check_match "PROXY v1 before TLS: served over HTTPS" "$out" '"X-Forwarded-For", "203\.0\.113\.7"'
out=$(send "$SP" 127.0.0.1 2 1 /echo)
ct_check_match "PROXY v2 before TLS" "$out" '"X-Forwarded-For", "203\.0\.113\.8"'
ct_check "PROXY header from a peer not allowed: closed" "$(send "$PP" 127.0.0.2 1 0 /echo)" "closed"
ct_check "... under TLS too" "$(send "$SP" 127.0.0.2 1 1 /echo)" "closed"
ct_check "no PROXY header where one is required: closed" "$(send "$PP" 127.0.0.1 junk 0 /echo)" "closed"
ct_check_match "the refusal is logged" "$(cat "$CT_TMP/p.err")" '127\.0\.0\.2 may not send a PROXY header'

# trusted_proxies: 127.0.0.1's X-Forwarded-For names the client; 127.0.0.2's is not believed
ct_check_match "trusted proxy: its client is denied by the route" \
    "$(send "$NP" 127.0.0.1 none 0 /json 198.51.100.4)" '^HTTP/1.1 403'
ct_check_match "untrusted peer: its X-Forwarded-For is not the client" \
    "$(send "$NP" 127.0.0.2 none 0 /json 198.51.100.4)" '^HTTP/1.1 200'
out=$(send "$NP" 127.0.0.1 none 0 /echo "192.0.2.1, 198.51.100.5")
ct_check_match "trusted proxy: the hop is still appended to X-Forwarded-For" "$out" \
    '"X-Forwarded-For", "192\.0\.2\.1, 198\.51\.100\.5, 127\.0\.0\.1"'
ct_wait_until 60 grep -qs '198.51.100.5' "$CT_TMP/access.log"
log=$(cat "$CT_TMP/access.log")
ct_check_match "access log: the PROXY client" "$log" '"remote_addr":"203\.0\.113\.7"'
ct_check_match "access log: the trusted proxy's client" "$log" '"remote_addr":"198\.51\.100\.5"'
ct_check_match "access log: an untrusted peer as itself" "$log" '"remote_addr":"127\.0\.0\.2"'

# A drain (SIGTERM) closes a connection still waiting for its PROXY header
# at once, as it closes idle ones, while a request in flight finishes.
out=$(/usr/bin/python3 - "$PP" "$NP" "$(ct_pid p)" "$OP" <<'PY'
import json, os, signal, socket, sys, time, urllib.request
pp, np, pid, op = (int(a) for a in sys.argv[1:5])
def origin_total():
    with urllib.request.urlopen("http://127.0.0.1:%d/_origin/stats" % op) as r:
        return json.load(r)["total"]
before = origin_total()
silent = socket.create_connection(("127.0.0.1", pp))
slow = socket.create_connection(("127.0.0.1", np))
slow.sendall(b"GET /delay/5000?cache-control=no-store HTTP/1.1\r\nHost: x\r\n\r\n")
end = time.monotonic() + 60
while origin_total() <= before and time.monotonic() < end:  # the slow one is in flight
    time.sleep(0.02)
os.kill(pid, signal.SIGTERM)
silent.settimeout(60)
gone = silent.recv(1) == b""
# closed before the request in flight was answered, not when the worker
# ended after it: an order, not a time
slow.setblocking(False)
try:
    slow.recv(1, socket.MSG_PEEK)  # bytes (or EOF) there already: answered first
    answered_first = True
except BlockingIOError:
    answered_first = False
slow.setblocking(True)
slow.settimeout(60)
resp = b""
while b"\r\n\r\n" not in resp:
    k = slow.recv(4096)
    if not k:
        break
    resp += k
print("silent closed" if gone and not answered_first else "silent closed after the answer",
      resp.split(b"\r\n")[0].decode())
PY
)
ct_check "drain: a connection waiting for its PROXY header is closed, the request in flight ends" \
    "$out" "silent closed HTTP/1.1 200 OK"
ct_done
