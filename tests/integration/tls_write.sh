#!/usr/bin/env bash
# cachet's own TLS writes once io.c took a keep-alive connection over (after
# its first response; io.c ct_io_flush, on_tls_writable): pipelined requests
# answered in order; a large pass-through body to a slow TLS reader arrives
# whole with bounded memory (back-pressure through our write event and the
# write callback at the low mark); a response with Connection: close larger
# than the socket buffer is flushed, then closed with close_notify; a client
# that stops reading is cut at send_timeout; a keep-alive HTTPS hit costs no
# epoll_ctl (no write event added and removed per response); a 100 KiB hit
# goes out as 16 KiB records, one write(2) each.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
if ldd "$CT_BIN/cachet" 2>/dev/null | grep -q libasan; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
fi
cat >"$CT_TMP/cachet.conf" <<CONF
workers = 1;
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
limits = { send_timeout = "3s"; }; # a loaded machine may not schedule the slow reader for 400 ms
admin = { listen = "off"; };
CONF
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/cachet.conf"
SPORT=$(ct_wait_listen proxy https) || exit 1
PID=$(ct_pid proxy)

cat >"$CT_TMP/tlsw.py" <<'EOF'
import hashlib, os, socket, ssl, sys, time

port, what = int(sys.argv[1]), sys.argv[2]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
PAT = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n"

def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    # A dirty EOF (no close_notify) raises instead of reading as b"".
    return ctx.wrap_socket(s, server_hostname="localhost", suppress_ragged_eofs=False)

def req(path, extra=""):
    return ("GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n" % (path, extra)).encode()

class Reader:
    def __init__(self, s):
        self.s, self.buf = s, b""
    def fill(self, n=65536):
        d = self.s.recv(n)
        if not d:
            raise EOFError
        self.buf += d
    def head(self):
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        h, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = h.decode("latin-1").split("\r\n")
        return lines[0], {k.strip().lower(): v.strip() for k, _, v in
                          (l.partition(":") for l in lines[1:])}
    def body(self, n, slow=False):
        """Read N bytes; return (count, sha256, matches the origin pattern)."""
        sha, got, ok = hashlib.sha256(), 0, True
        while got < n:
            if not self.buf:
                if slow:
                    time.sleep(0.001)
                self.fill(16384 if slow else 262144)
            take = self.buf[:n - got]
            self.buf = self.buf[len(take):]
            off = got % 63
            want = (PAT * (len(take) // 63 + 2))[off:off + len(take)]
            ok = ok and take == want
            sha.update(take)
            got += len(take)
        return got, ok
    def response(self, slow=False):
        status, h = self.head()
        n, ok = self.body(int(h["content-length"]), slow)
        return status, h, n, ok

s = conn()
r = Reader(s)
s.sendall(req("/gen?size=10&k=w0"))  # the first response: then io.c takes over
r.response()

if what == "pipeline":
    # 40 requests in one write: hits and passes of different sizes.
    paths = []
    for i in range(40):
        if i % 2:
            paths.append("/gen?size=%d&cache-control=no-store&k=p%d" % (100 + i, i))
        else:
            paths.append("/gen?size=%d&cache-control=max-age%%3D60&k=h%d" % (5000 + i, i % 4))
    s.sendall(b"".join(req(p) for p in paths))
    sizes, seqs, good = [], [], True
    for p in paths:
        st, h, n, ok = r.response()
        sizes.append(n)
        good = good and ok and st == "HTTP/1.1 200 OK"
        if "no-store" in p:
            seqs.append(int(h["x-origin-seq"]))
    want = [100 + i if i % 2 else 5000 + i for i in range(40)]
    print("pipeline sizes in order|%s" % (sizes == want))
    print("pipeline bodies|%s" % good)
    print("pipeline origin order|%s" % (seqs == sorted(seqs)))
elif what == "big":
    n = int(sys.argv[3])
    s.sendall(req("/bytes/%d" % n))
    st, h, got, ok = r.response(slow=True)
    print("big|%d %s" % (got, ok))
    s.sendall(req("/gen?size=20&k=after"))  # still keep-alive
    print("after big|%s" % r.response()[0])
elif what == "close":
    # Connection: close, 3 MB from the cache path (no-store: pass): more than
    # the socket takes at once, so the rest goes out from the write event.
    s.sendall(req("/gen?size=3000000&cache-control=no-store", "Connection: close\r\n"))
    st, h, got, ok = r.response(slow=True)
    print("close body|%d %s" % (got, ok))
    try:
        end = s.recv(100)
        print("close end|%s" % ("close_notify" if end == b"" else "data"))
    except ssl.SSLEOFError:
        print("close end|dirty")
elif what == "stall":
    s.sendall(req("/bytes/200000000"))
    time.sleep(float(sys.argv[3]))
elif what == "hits":
    n, size = int(sys.argv[3]), int(sys.argv[4])
    path = "/gen?size=%d&cache-control=max-age%%3D60&k=hits" % size
    s.sendall(req(path))
    r.response()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()
    for _ in range(n):
        s.sendall(req(path))
        st, h, got, ok = r.response()
    print("hits|%s %d %s" % (h.get("cache-status", "")[:12], got, ok))
EOF
py() { timeout 120 python3 "$CT_TMP/tlsw.py" "$SPORT" "$@" 2>&1; }
get() { printf '%s\n' "$1" | sed -n "s/^$2|//p"; }

res=$(py pipeline)
ct_check "40 pipelined requests: sizes in order" "$(get "$res" 'pipeline sizes in order')" True
ct_check "40 pipelined requests: every body whole, every status 200" "$(get "$res" 'pipeline bodies')" True
ct_check "pipelined passes reached the origin in order" "$(get "$res" 'pipeline origin order')" True

# 64 MiB pass-through to a reader taking 16 KiB at a time: cachet stops
# reading the origin instead of buffering (our write event, then the write
# callback at the low mark resumes it).
N=67108864
base=$(ct_rss_kb "$PID")
peak=$(ct_peak_rss_during "$PID" "$CT_TMP/big.out" py big "$N")
res=$(cat "$CT_TMP/big.out")
growth=$(((peak - base) / 1024))
echo "# 64 MiB over TLS to a slow reader: RSS growth ${growth} MiB"
ct_check "64 MiB to a slow TLS reader arrives whole, the origin's bytes" "$(get "$res" big)" "$N True"
ct_check "the connection stays usable after it" "$(get "$res" 'after big')" "HTTP/1.1 200 OK"
ct_check_match "slow TLS reader: RSS growth <= 16 MiB (was ${growth} MiB)" "$growth" '^([0-9]|1[0-6])$'

res=$(py close)
ct_check "Connection: close, 3 MB: flushed whole" "$(get "$res" 'close body')" "3000000 True"
ct_check "then closed with close_notify" "$(get "$res" 'close end')" close_notify

py stall 60 >/dev/null &
job=$!
ct_wait_until 120 grep -q 'client send timeout' "$CT_TMP/proxy.err"
kill "$job" 2>/dev/null
wait "$job" 2>/dev/null
ct_check_match "a TLS client that stops reading is cut at the send timeout" \
    "$(cat "$CT_TMP/proxy.err")" 'sending the response.*client send timeout'

# Under strace: no write event per response (200 keep-alive 1 KiB hits, no
# epoll_ctl), and a 100 KiB hit leaves in full 16 KiB records, one write(2)
# each (7 per response: the head fills the first record).
# traced SIZE N STRACE-ARGS...: N hits of SIZE bytes, strace output in
# $CT_TMP/strace.out, the client's last line in $res.
traced() {
    local size=$1 n=$2 st line i
    shift 2
    coproc HITS { timeout 120 python3 "$CT_TMP/tlsw.py" "$SPORT" hits "$n" "$size" 2>&1; }
    read -r line <&"${HITS[0]}"
    rm -f "$CT_TMP/strace.err" # or the wait below sees the previous run's line
    strace -f -o "$CT_TMP/strace.out" -p "$PID" "$@" 2>"$CT_TMP/strace.err" &
    st=$!
    # "attached with N threads": every thread
    ct_wait_until 60 grep -qs 'attached' "$CT_TMP/strace.err"
    echo go >&"${HITS[1]}"
    res=$(cat <&"${HITS[0]}")
    kill -INT "$st"
    wait "$st" 2>/dev/null
}
if command -v strace >/dev/null; then
    traced 1024 200 -c
    ctl=$(awk '$NF == "epoll_ctl" {print $4}' "$CT_TMP/strace.out")
    ct_check "200 keep-alive HTTPS hits were hits, whole" "$(get "$res" hits)" "cachet; hit; 1024 True"
    ct_check_match "200 keep-alive HTTPS hits: at most 4 epoll_ctl (was ${ctl:-0})" "${ctl:-0}" '^[0-4]$'
    traced 102400 5 -e trace=write
    ct_check "5 keep-alive 100 KiB HTTPS hits, whole" "$(get "$res" hits)" "cachet; hit; 102400 True"
    # TLS 1.3 record of 16 KiB: 16384 + 5 (header) + 1 (type) + 16 (tag); the
    # 24-byte write, if strace is still there, is the close_notify at the end.
    sizes=$(sed -n 's/^[0-9]* *write([0-9]*, .*, \([0-9]*\)) *= [0-9]*$/\1/p' "$CT_TMP/strace.out" |
        sort -n | uniq -c | awk '{printf "%s%sx%s", (NR > 1 ? " " : ""), $1, $2}')
    ct_check_match "100 KiB hits: 6 full 16 KiB records + 1 per response, one write each ($sizes)" \
        "$sizes" '^(1x24 )?5x[0-9]+ 30x16406$'
else
    echo "# strace not installed: epoll_ctl count and record sizes not checked"
fi
ct_check "proxy still running" "$(kill -0 "$PID" 2>/dev/null && echo yes)" yes
ct_done
