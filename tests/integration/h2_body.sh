#!/usr/bin/env bash
# Request bodies that cannot desynchronise an origin (issue 41, item 9):
# limits.request_buffer (64K by default) reads a body that fits whole before
# the origin is asked, so a malformed one never reaches it; a larger one
# streams, and a body that turns out longer or shorter than its
# content-length leaves the origin a message it cannot take for complete,
# on a connection that is closed. Over HTTP/2 (h2_peer.py upload) and
# HTTP/1.1 (raw sockets). The origin (body_origin.py) logs per request
# "PATH complete N" or "PATH incomplete N of CL".
# needs: cachet
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PY=/usr/bin/python3 # Debian's, with python3-h2
PEER="$CT_SRC/tests/integration/h2_peer.py"
OLOG=$CT_TMP/origin.log
: >"$OLOG"
ct_start origin $PY "$CT_SRC/tests/integration/body_origin.py" "$OLOG"
OPORT=$(ct_wait_listen origin) || exit 1

conf() { # NAME EXTRA-LIMITS
    cat >"$CT_TMP/$1.conf" <<CONF
workers = 1;
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; },
           { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
limits = { $2 };
CONF
}
conf on ""
conf off 'request_buffer = "0";'
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/on.conf" --admin off
H2=$(ct_wait_listen proxy https) || exit 1
H1=$(ct_wait_listen proxy http) || exit 1
ct_start proxy0 "$CT_BIN/cachet" -c "$CT_TMP/off.conf" --admin off
H2OFF=$(ct_wait_listen proxy0 https) || exit 1
H1OFF=$(ct_wait_listen proxy0 http) || exit 1

up() { $PY "$PEER" "$1" upload "${@:2}"; }
# The origin's line for PATH, once there is one ("none" if none came while
# a later request's line did: requests are made one after the other, and
# the last one of each group is a good body, so its line says the origin
# saw everything before it).
olog() { grep "^$1 " "$OLOG" | grep -v ' head$' | tail -1 | cut -d' ' -f2-; }
heads() { grep -c "^$1 head$" "$OLOG"; }
logged() { grep "^$1 " "$OLOG" | grep -qv ' head$'; }
sync_on() { # PORT NAME: a good small body through PORT, logged
    up "$1" "/sync-$2" 2 2 >/dev/null
    ct_wait_until 30 logged "/sync-$2"
}

# ---- HTTP/2, bodies that fit the buffer (content-length 10)
ct_check "h2 small, exact: 200" "$(up "$H2" /a1 10 10)" "status 200"
ct_wait_until 30 logged /a1
ct_check "... the origin has it whole" "$(olog /a1)" "complete 10"
ct_check "h2 small, longer than its content-length: RST_STREAM PROTOCOL_ERROR" \
    "$(up "$H2" /a2 10 20)" "reset 1"
ct_check "h2 small, shorter (END_STREAM after 5 of 10): RST_STREAM PROTOCOL_ERROR" \
    "$(up "$H2" /a3 10 5)" "reset 1"
ct_check "h2 small, the length complete and then more: RST_STREAM PROTOCOL_ERROR" \
    "$(up "$H2" /a4 10 10 5)" "reset 1"
ct_check "h2 no content-length, 30 bytes: 200" "$(up "$H2" /a5 - 30)" "status 200"
sync_on "$H2" a
ct_check "... the origin has the one without a length whole (chunked)" "$(olog /a5)" "complete 30"
for p in /a2 /a3 /a4; do
    ct_check "buffered $p: never sent to the origin, not even its head" "$(heads $p)" 0
done

# ---- HTTP/2, bodies over the buffer (content-length 100000): streamed
ct_check "h2 large, exact: 200" "$(up "$H2" /b1 100000 100000)" "status 200"
ct_check "h2 large, the length complete and then more: RST_STREAM PROTOCOL_ERROR" \
    "$(up "$H2" /b2 100000 100000 10)" "reset 1"
ct_check "h2 large, shorter (END_STREAM after 70000): RST_STREAM PROTOCOL_ERROR" \
    "$(up "$H2" /b3 100000 70000)" "reset 1"
sync_on "$H2" b
ct_wait_until 30 logged /b2
ct_wait_until 30 logged /b3
ct_check "streamed /b1: the origin has it whole" "$(olog /b1)" "complete 100000"
ct_check "streamed /b2: the origin never had the last byte, and the connection was closed" \
    "$(olog /b2)" "incomplete 99999 of 100000"
ct_check_match "streamed /b3: the origin has a part, and the connection was closed" \
    "$(olog /b3)" '^incomplete [0-9]+ of 100000$'

# ---- HTTP/1.1: the client stops short (content-length 10 / 100000), then
# closes its side; and a bad chunk.
h1() { # PORT PATH CL BYTES [WAIT]: a POST that sends BYTES of CL, then EOF (WAIT: the
    # body only once the origin has the head); the response's first line
    $PY - "$OLOG" "$@" <<'PYEOF'
import socket, sys, time
olog, port, path, cl, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
s = socket.create_connection(("127.0.0.1", port), timeout=30)
hd = "POST %s HTTP/1.1\r\nHost: t\r\n" % path
hd += ("Transfer-Encoding: chunked\r\n" if cl == "chunked" else "Content-Length: %s\r\n" % cl)
s.sendall(hd.encode() + b"\r\n")
end = time.time() + 30
while len(sys.argv) > 6 and time.time() < end and ("%s head\n" % path) not in open(olog).read():
    time.sleep(0.01)
body = b"5\r\nhello\r\nZZ\r\n" if cl == "chunked" else b"u" * n
s.sendall(body)
s.shutdown(socket.SHUT_WR)
d = b""
try:
    while True:
        k = s.recv(65536)
        if not k:
            break
        d += k
except OSError:
    pass
print(d.split(b"\r\n")[0].decode() or "closed")
PYEOF
}
h1 "$H1" /c1 10 10 >/dev/null
h1 "$H1" /c2 10 5 >/dev/null
h1 "$H1" /c3 chunked 0 >/dev/null
h1 "$H1" /c4 100000 70000 wait >/dev/null
sync_on "$H2" c
ct_wait_until 30 logged /c4
ct_check "h1 small, exact: the origin has it whole" "$(olog /c1)" "complete 10"
ct_check "h1 small, cut short: never sent to the origin, not even its head" "$(heads /c2)" 0
ct_check "h1 small, a bad chunk: never sent to the origin, not even its head" "$(heads /c3)" 0
ct_check "h1 large, cut short: the origin has a part, and the connection was closed" \
    "$(olog /c4)" "incomplete 70000 of 100000"

# ---- limits.request_buffer = "0": every body streams, the small ones too:
# the origin has the head before the body is complete, and a part of a body
# cut short.
h1 "$H1OFF" /d1 10 5 wait >/dev/null
sync_on "$H2OFF" d
ct_wait_until 30 logged /d1
ct_check "off: h1 small, cut short: the origin had the head and a part" "$(olog /d1)" "incomplete 5 of 10"

ct_done
