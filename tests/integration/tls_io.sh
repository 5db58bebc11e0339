#!/usr/bin/env bash
# cachet's own TLS I/O on keep-alive connections (client.c ct_flush for writes,
# io.c for reads once the first request is done): several TLS records that
# arrive in one TCP segment are all answered, in order, also when reading
# pauses at the input high mark (OpenSSL reads ahead: records it holds do not
# make the socket readable again); a response larger
# than a record and than the socket buffer reaches a slow reader whole (the
# rest goes through libevent after WANT_WRITE); a cache hit over TLS carries
# the same bytes as over HTTP; a client's close_notify ends the connection.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_pair --https 127.0.0.1:0 --workers 1
SPORT=$(ct_wait_listen proxy https) || exit 1

# A TLS client over memory BIOs, so that the test decides how records map to
# TCP writes. Prints one line per check result: "name|value".
cat >"$CT_TMP/tlsio.py" <<'EOF'
import socket, ssl, sys, time, hashlib

port = int(sys.argv[1])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE

class Conn:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.t = ctx.wrap_bio(self.inc, self.out, server_hostname="localhost")
        self.buf = b""
        while True:
            try:
                self.t.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.flush()
                self.fill()
        self.flush()

    def flush(self):
        data = self.out.read()
        if data:
            self.s.sendall(data)

    def fill(self, n=65536):
        data = self.s.recv(n)
        if not data:
            self.inc.write_eof()
        else:
            self.inc.write(data)
        return len(data)

    def more(self, slow=False):
        while True:
            try:
                self.buf += self.t.read(65536)
                return True
            except ssl.SSLWantReadError:
                if slow:
                    time.sleep(0.002)
                if self.fill(4096 if slow else 65536) == 0:
                    return False
            except ssl.SSLZeroReturnError:
                return False

    def response(self, slow=False):
        while b"\r\n\r\n" not in self.buf:
            if not self.more():
                return None
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        hdr = {}
        for l in lines[1:]:
            k, _, v = l.partition(":")
            hdr[k.strip().lower()] = v.strip()
        n = int(hdr.get("content-length", "-1"))
        if n < 0:
            return None
        while len(self.buf) < n:
            if not self.more(slow):
                return None
        body, self.buf = self.buf[:n], self.buf[n:]
        return lines[0], hdr, body

    def send(self, *reqs):
        for r in reqs:  # one TLS record each
            self.t.write(r)
        self.flush()    # all records in one TCP write

def req(path):
    return ("GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path).encode()

out = []
c = Conn()
c.send(req("/gen?size=100&k=tlsio0"))
r = c.response()
out.append("first response|%s" % str(r and r[0]))
# Three records in one segment, after the first response (our reads by then).
c.send(req("/gen?size=1000&k=tlsio1"), req("/gen?size=2000&k=tlsio2"),
       req("/gen?size=3000&k=tlsio3"))
sizes = []
for _ in range(3):
    r = c.response()
    sizes.append(len(r[2]) if r else None)
out.append("pipelined records|%s" % sizes)
# Bursts just over the proxy's input high mark (256 KiB) of 2 KiB requests,
# one record each: reading pauses at the mark while OpenSSL may hold the
# last records with the socket already empty; every request must still be
# answered. The burst's end falls at a different place on each connection.
pad = "x" * 1900
answered = []
for k in range(1, 9):
    b = Conn()
    b.send(req("/gen?size=10&k=tlsiob"))
    b.response()
    n = (256 * 1024) // 2000 + k
    b.send(*[("GET /gen?size=10&k=tlsiob HTTP/1.1\r\nHost: localhost\r\n"
              "X-Pad: %s\r\n\r\n" % pad).encode() for _ in range(n)])
    b.s.settimeout(3)
    got = 0
    try:
        for _ in range(n):
            if b.response() is None:
                break
            got += 1
    except socket.timeout:
        pass
    answered.append(got == n)
    b.s.close()
out.append("bursts over the high mark answered|%s" % all(answered))
# 3 MB through a reader that takes 4 KiB at a time: far more than the socket
# buffer and than one record.
c.send(req("/gen?size=3000000&cache-control=max-age%3D600&k=tlsiobig"))
r = c.response(slow=True)
out.append("large slow response|%s" % (len(r[2]) if r else None))
big = hashlib.sha256(r[2]).hexdigest() if r else "-"
# The same object again: a cache hit (body by reference) over TLS.
c.send(req("/gen?size=3000000&cache-control=max-age%3D600&k=tlsiobig"))
r = c.response()
out.append("large hit|%s" % str(r and (r[1].get("cache-status", "")[:12], len(r[2]))))
out.append("large hit same bytes|%s" % (r is not None and hashlib.sha256(r[2]).hexdigest() == big))
out.append("big sha|%s" % big)
# close_notify from the client: the server answers with EOF, not a hang.
try:
    c.t.unwrap()
except ssl.SSLWantReadError:
    pass
c.flush()
c.s.settimeout(5)
end = b"x"
try:
    while end:
        end = c.s.recv(65536)
    out.append("close_notify ends the connection|yes")
except socket.timeout:
    out.append("close_notify ends the connection|timeout")
print("\n".join(out))
EOF

res=$(timeout 60 python3 "$CT_TMP/tlsio.py" "$SPORT" 2>&1)
get() { printf '%s\n' "$res" | sed -n "s/^$1|//p"; }
ct_check "keep-alive: first response" "$(get 'first response')" "HTTP/1.1 200 OK"
ct_check "three records in one TCP write: three responses, in order" \
    "$(get 'pipelined records')" "[1000, 2000, 3000]"
ct_check "bursts of records over the input high mark: every request answered" \
    "$(get 'bursts over the high mark answered')" True
ct_check "3 MB to a slow TLS reader arrives whole" "$(get 'large slow response')" 3000000
ct_check "the same object again is a hit, whole" "$(get 'large hit')" "('cachet; hit;', 3000000)"
ct_check "the hit carries the same bytes" "$(get 'large hit same bytes')" True
plain=$(curl -s "http://127.0.0.1:$PPORT/gen?size=3000000&cache-control=max-age%3D600&k=tlsiobig" | sha256sum | cut -d' ' -f1)
ct_check "the bytes are those served over HTTP" "$(get 'big sha')" "$plain"
ct_check "the client's close_notify ends the connection" \
    "$(get 'close_notify ends the connection')" yes
[ "$CT_FAIL" -eq 0 ] || printf '%s\n' "$res" | tail -5
ct_check "proxy still running" "$(kill -0 "$(ct_pid proxy)" 2>/dev/null && echo yes)" yes
ct_done
