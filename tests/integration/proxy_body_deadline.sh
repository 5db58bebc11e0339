#!/usr/bin/env bash
# A request body has a deadline of its own (limits.client_body_timeout, plus
# one second per client_body_min_rate bytes received), besides the per-read
# bound: a body trickled one byte at a time, each byte well inside the
# per-read timeout, gets 408 and its connection closed instead of holding it
# and an origin connection for ever; a body that keeps moving at a usable
# rate finishes even when that takes longer than client_body_timeout.
# The embedded default (60s, 1K/s) with only client_body_timeout lowered to
# 1s, so the test does not wait a minute.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
printf 'limits = { client_body_timeout = "1s"; };\n' >"$CT_TMP/cachet.conf"
ct_start_proxy -c "$CT_TMP/cachet.conf" --http 127.0.0.1:0 --https off \
    --admin off --backend "127.0.0.1:$OPORT"

cat >"$CT_TMP/body.py" <<'EOF'
import socket, sys, time

port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
t0 = time.monotonic()

def answer(limit):
    """The status line and when it came (ms after the head), or why not."""
    s.settimeout(limit)
    buf = b""
    try:
        while b"\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                return "EOF", -1
            buf += d
    except socket.timeout:
        return "no answer", -1
    except ConnectionResetError:
        return "reset", -1
    return buf.split(b"\r\n")[0].decode(), int((time.monotonic() - t0) * 1000)

if mode == "trickle":
    # 100 bytes announced, one every 300 ms (each read well inside the 10 s
    # per-read timeout): 30 s in all, unless cut.
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n")
    s.setblocking(False)
    status, ms = "no answer", -1
    for i in range(100):
        try:
            s.send(b"x")
        except (BlockingIOError, BrokenPipeError, ConnectionResetError):
            break
        try:
            if s.recv(1, socket.MSG_PEEK):
                break
        except BlockingIOError:
            pass
        except ConnectionResetError:
            break
        if time.monotonic() - t0 > 8:
            break
        time.sleep(0.3)
    s.setblocking(True)
    status, ms = answer(2)
    rest = b""
    try:
        s.settimeout(5)
        while True:
            d = s.recv(65536)
            if not d:
                break
            rest += d
        closed = "closed"
    except socket.timeout:
        closed = "open"
    except ConnectionResetError:
        closed = "closed"
    print("trickle|%s|%d|%s" % (status, ms, closed))
else:
    # 1 MiB in four pieces 350 ms apart: ~1.05 s, past the 1 s timeout but
    # inside 1 s + 1 MiB / (1 KiB/s) ms.
    piece = b"y" * (256 * 1024)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % (4 * len(piece)))
    for i in range(4):
        if i:
            time.sleep(0.35)
        s.sendall(piece)
    status, ms = answer(10)
    print("steady|%s|%d" % (status, int((time.monotonic() - t0) * 1000)))
EOF

res=$(timeout 30 python3 "$CT_TMP/body.py" "$PPORT" trickle 2>&1)
IFS='|' read -r _ status ms closed <<<"$res"
ct_check "a trickled body gets 408 ($res)" "$status" "HTTP/1.1 408 Request Timeout"
ct_check_match "... at its deadline, ~1 s after the head, not at a per-read timeout (${ms} ms)" \
    "$ms" '^([89][0-9][0-9]|[1-5][0-9][0-9][0-9])$'
ct_check "... and its connection is closed" "$closed" "closed"

res=$(timeout 30 python3 "$CT_TMP/body.py" "$PPORT" steady 2>&1)
IFS='|' read -r _ status ms <<<"$res"
ct_check "a body moving at a usable rate finishes past client_body_timeout ($res)" \
    "$status" "HTTP/1.1 200 OK"
ct_check_match "... it did take longer than the timeout (${ms} ms)" "$ms" '^[1-9][0-9][0-9][0-9]+$'

# The proxy still serves (the 408 released what the trickle held).
ct_check "a request after the 408" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PPORT/json")" 200
ct_done
