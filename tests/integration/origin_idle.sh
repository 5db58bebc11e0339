# needs: cachet-origin
# cachet-origin --idle-timeout: idle keep-alive connections, requests that
# never complete and clients that stop reading are closed; a long delay is
# not mistaken for idleness.
. "$(dirname "$0")/lib.sh"

now_ms() { date +%s%3N; }
nfds() { ls "/proc/$1/fd" | wc -l; }

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 1 --idle-timeout 1
PORT=$(ct_wait_listen origin) || { ct_failed "origin starts"; ct_done; exit 1; }
PID=$(ct_pid origin)
BASE=$(nfds "$PID")

"$CT_BIN/cachet-origin" --idle-timeout 0 >/dev/null 2>&1
ct_check "--idle-timeout 0 refused" "$?" 2

# A keep-alive connection, answered, then left idle: closed after ~1 s.
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /json HTTP/1.1\r\nHost: x\r\n\r\n' >&3
T0=$(now_ms)
OUT=$(timeout 8 cat <&3)
T1=$(now_ms)
exec 3<&-
ct_check_match "answered before the idle close" "$OUT" 'Hello, World!"\}$'
ct_check "idle keep-alive closed after 1-4 s (took $((T1 - T0)) ms)" "$(((T1 - T0) >= 900 && (T1 - T0) < 4000))" 1

# Half a request, then nothing: closed without an answer.
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /json HTTP/1.1\r\nHo' >&3
T0=$(now_ms)
OUT=$(timeout 8 cat <&3)
T1=$(now_ms)
exec 3<&-
ct_check "stalled request closed within 4 s (took $((T1 - T0)) ms)" "$(((T1 - T0) < 4000))" 1

# A delay longer than the idle timeout is not idleness.
ct_check "2.5 s delay survives a 1 s idle timeout" \
    "$(curl -s -o /dev/null -w '%{http_code}' --max-time 8 "http://127.0.0.1:$PORT/delay/2500")" 200

# A client that asks for 1 GiB and never reads: freed once the socket is full
# and nothing moves for the timeout.
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /bytes/1073741824 HTTP/1.1\r\nHost: x\r\n\r\n' >&3
fds_gt() { [ "$(nfds "$1")" -gt "$2" ]; }
ct_wait_until 60 fds_gt "$PID" "$BASE"
ok=0
for ((i = 0; i < 600; i++)); do
    if [ "$(nfds "$PID")" -le "$BASE" ]; then ok=1; break; fi
    sleep 0.01
done
exec 3<&-
ct_check "client that stops reading is dropped within 6 s" "$ok" 1
ct_check "still serving" "$(curl -s "http://127.0.0.1:$PORT/plaintext")" "Hello, World!"
ct_stop origin TERM
ct_check "clean exit" "$?" 0
ct_done
