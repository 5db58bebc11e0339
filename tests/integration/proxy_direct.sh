#!/usr/bin/env bash
# Direct writes (proxy/core/cache_deliver.c, proxy/core/fetch.c, proxy/upstream/wire.c): a
# plain-HTTP hit on a complete object leaves in one writev straight from the
# object, a small pass response in one writev of its head (from the stack)
# and its body (from the upstream's input), and what the socket does not take
# is queued and sent by libevent. Checked where that matters: an 8 MiB hit to
# a client with a tiny receive window (the writev is partial, the rest must
# follow intact), pipelined hits and pass responses behind partial writes
# (they must queue behind them, in order), HEAD, 304 and a Range from the
# same object, pass responses of several sizes (whole body in one read or
# not), and the counters (hits, origin fetches).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; max_object_size = "16M"; grace = "0s"; hit_for_miss = "0s"; };
admin = { listen = "127.0.0.1:0"; };
EOF
ct_start_proxy -c "$CT_TMP/cachet.conf"
APORT=$(ct_wait_listen proxy admin) || exit 1
MA='cache-control=max-age%3D600'
BIG="/bytes/8388608?$MA"
SMALL="/bytes/1000?$MA&etag=%22s1%22"
hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
hits() { curl -s "http://127.0.0.1:$APORT/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache_requests"]["hit"])'; }

# Store both objects; the origin's own bytes are the reference.
ct_origin_reset "$OPORT"
curl -s -o /dev/null "$P$BIG"
curl -s -o /dev/null "$P$SMALL"
big_md5=$(curl -s "$O/bytes/8388608" | md5sum | cut -c1-32)
small_md5=$(curl -s "$O$SMALL" | md5sum | cut -c1-32)

# slow HOST PORT REQ...: send the requests at once (pipelined) on a socket
# with a 4 KiB receive buffer, so cachet's writes stay partial; read every
# response in order, print "status length md5 cache-status" per response.
cat >"$CT_TMP/slow.py" <<'EOF'
import hashlib, socket, sys
host, port, reqs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((host, port))
def head(r):
    m, u = r.split(" ", 1) if " " in r else ("GET", r)
    return ("%s %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (m, u, host, port)).encode()
s.sendall(b"".join(head(r) for r in reqs))
f = s.makefile("rb", buffering=4096)
for r in reqs:
    status = f.readline().split()[1].decode()
    fields = {}
    while True:
        line = f.readline().rstrip(b"\r\n")
        if not line:
            break
        k, v = line.split(b":", 1)
        fields[k.strip().lower().decode()] = v.strip().decode()
    n = 0 if r.startswith("HEAD ") else int(fields.get("content-length", "0"))
    h = hashlib.md5()
    while n:
        b = f.read(min(n, 65536))
        if not b:
            break
        h.update(b)
        n -= len(b)
    print(status, fields.get("content-length", "-"), h.hexdigest() if n == 0 else "truncated",
          fields.get("cache-status", "-"))
EOF
slow() { timeout 60 python3 "$CT_TMP/slow.py" 127.0.0.1 "$PPORT" "$@"; }

h0=$(hits)
out=$(slow "$BIG")
ct_check_match "partial write: the 8 MiB hit arrives whole" "$out" "^200 8388608 $big_md5 cachet; hit; ttl="

out=$(slow "$BIG" "$SMALL" "$BIG" "$SMALL" | cut -d' ' -f1-3 | tr '\n' ' ')
ct_check "pipelined hits behind a partial write: in order, whole" "$out" \
    "200 8388608 $big_md5 200 1000 $small_md5 200 8388608 $big_md5 200 1000 $small_md5 "

out=$(slow "HEAD $BIG" "$SMALL")
ct_check "HEAD hit then a GET hit on one connection" "$(cut -d' ' -f1-3 <<<"$out" | tr '\n' ' ')" \
    "200 8388608 d41d8cd98f00b204e9800998ecf8427e 200 1000 $small_md5 "

# Range and conditional answers from the same complete object, plain HTTP.
h=$(curl -s -D - -o "$CT_TMP/range" -H 'Range: bytes=5000000-5999999' "$P$BIG")
ct_check "range hit: 206" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 206 Partial Content"
ct_check "range hit: the right bytes" "$(md5sum <"$CT_TMP/range" | cut -c1-32)" \
    "$(curl -s "$O/bytes/8388608" | tail -c +5000001 | head -c 1000000 | md5sum | cut -c1-32)"
etag=$(hdr ETag "$(curl -s -D - -o /dev/null "$P$SMALL")")
ct_check "the small object has its ETag" "$etag" '"s1"'
h=$(curl -s -D - -o /dev/null -H "If-None-Match: $etag" "$P$SMALL")
ct_check "conditional hit: 304" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 304 Not Modified"

# A keep-alive connection serving many small hits in a row (curl reuses it).
urls=()
for ((i = 0; i < 50; i++)); do urls+=("$P$SMALL"); done
sum=$(curl -s "${urls[@]}" | md5sum | cut -c1-32)
ct_check "50 keep-alive hits: same bytes" "$sum" \
    "$(for ((i = 0; i < 50; i++)); do curl -s "$O$SMALL"; done | md5sum | cut -c1-32)"

# Pass (no-store) responses to the same slow client, pipelined: small ones
# go out directly with their body, bigger ones (the body over several reads)
# the usual way; partial writes must keep every byte and the order.
NS='cache-control=no-store'
refs=""
reqs=()
for size in 1000 60000 100000 200000 0 1000; do
    reqs+=("/bytes/$size?$NS&s=$size")
    refs+="200 $size $(curl -s "$O/bytes/$size" | md5sum | cut -c1-32) "
done
out=$(slow "${reqs[@]}" | cut -d' ' -f1-3 | tr '\n' ' ')
ct_check "pipelined pass responses to a slow reader: in order, whole" "$out" "$refs"
out=$(slow "$BIG" "/bytes/1000?$NS" "HEAD /bytes/1000?$NS" "/bytes/1000?$NS" | cut -d' ' -f1-3 | tr '\n' ' ')
ct_check "pass responses behind a partial hit write, HEAD among them" "$out" \
    "200 8388608 $big_md5 200 1000 $(curl -s "$O/bytes/1000" | md5sum | cut -c1-32) 200 1000 d41d8cd98f00b204e9800998ecf8427e 200 1000 $(curl -s "$O/bytes/1000" | md5sum | cut -c1-32) "
h=$(curl -s -D - -o /dev/null "$P/bytes/10?$NS")
ct_check "pass: Cache-Status bypass" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; detail=no-store"
ct_check "pass: Via" "$(hdr Via "$h")" "1.1 cachet"

h1=$(hits)
ct_check "every one of them a hit" "$((h1 - h0))" "$((1 + 4 + 2 + 1 + 2 + 50 + 1))"
ct_check "one origin fetch per object, one per pass" "$(ct_origin_total "$OPORT")" \
    "$((2 + 1 + 1 + 1 + 50 + 6 * 2 + 3 * 1 + 2 + 1))" # fills, reference fetches, passes

ct_done
