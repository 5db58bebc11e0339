#!/usr/bin/env bash
# Graceful drain: SIGTERM while a /delay/1000 request is in flight: new
# connections are refused, the request in flight completes with its full
# response (Connection: close), and cachet exits 0.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_pair --workers 2

# An idle keep-alive connection, which the drain must close.
exec 4<>"/dev/tcp/127.0.0.1/$PPORT"
printf 'GET /bytes/3 HTTP/1.1\r\nHost: a\r\n\r\n' >&4
IFS= read -r -t 30 first <&4
ct_check "idle keep-alive connection served" "${first%$'\r'}" "HTTP/1.1 200 OK"

ct_origin_reset "$OPORT"
curl -s -D "$CT_TMP/slow.h" -o "$CT_TMP/slow.out" "$P/delay/1000" &
slow=$!
# Wait (bounded) until the slow request reached the origin.
ct_wait_until 60 ct_origin_total_ge "$OPORT" 1
ct_check "slow request is in flight" "$(ct_origin_total "$OPORT")" 1

PID=$(ct_pid proxy)
kill -TERM "$PID"
# New connections are refused once the listeners are closed (bounded wait).
refused=no
for ((i = 0; i < 100; i++)); do
    curl -s -o /dev/null --max-time 1 "$P/json"
    if [ $? -eq 7 ]; then refused=yes; break; fi
    sleep 0.01
done
ct_check "new connections refused while draining" "$refused" yes
# The idle connection was closed by the drain.
rest=$(timeout 5 cat <&4)
ct_check_match "idle connection closed by the drain" "$?" '^0$'
exec 4<&-

wait "$slow"
ct_check "in-flight request completed" "$?" 0
ct_check_match "in-flight response is 200" "$(head -n1 "$CT_TMP/slow.h")" '^HTTP/1.1 200'
ct_check_match "in-flight response says Connection: close" "$(cat "$CT_TMP/slow.h")" $'Connection: close\r'
wait "$PID"
ct_check "cachet exited 0 after the drain" "$?" 0
unset "CT_PIDS[proxy]"
ct_done
