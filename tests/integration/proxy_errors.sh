#!/usr/bin/env bash
# cachet error paths: origin down -> 502, slow origin -> 504 (short response
# header timeout from a config file), malformed origin response -> 502,
# origin closing mid-body -> the client sees a truncated message, slowloris
# -> 408 and close; error bodies are short plain text.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin

cat >"$CT_TMP/cachet.conf" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; response_header_timeout = "300ms"; read_timeout = "300ms"; max_fails = 0; } );
limits = { client_header_timeout = "500ms"; send_timeout = "300ms"; };
admin = { listen = "off"; };
CONF
ct_start_proxy -c "$CT_TMP/cachet.conf"

# Slow origin: 504 after the header timeout, short plain-text body.
start=$(date +%s%N)
resp=$(curl -s -D - "$P/delay/2000" | tr -d '\r')
ms=$((($(date +%s%N) - start) / 1000000))
ct_check_match "slow origin answered 504" "$resp" '^HTTP/1.1 504 Gateway Timeout'
ct_check_match "504 body is short plain text" "$resp" $'Content-Type: text/plain.*\n\n504 Gateway Timeout$'
ct_check_match "504 came after ~300 ms, not 2 s (was $ms ms)" "$ms" '^([3-9][0-9][0-9]|1[0-8][0-9][0-9])$'

# A fast request on the same proxy still works.
ct_check "fast request after a 504" "$(curl -s -o /dev/null -w '%{http_code}' "$P/json")" 200

# Malformed origin response heads: 502, nothing of the origin's bytes leaks.
for kind in garbage status no-status header space cl-te two-cl bad-cl empty; do
    resp=$(curl -s -D - "$P/bad/$kind" | tr -d '\r')
    ct_check_match "malformed origin response ($kind) answered 502" "$resp" \
        $'^HTTP/1.1 502 Bad Gateway\n.*\n\n502 Bad Gateway$'
done
# Broken after a good head: the client sees a truncated message, not a 502.
curl -s -o /dev/null "$P/bad/short"
ct_check_match "origin body shorter than its Content-Length: truncated for the client" "$?" '^(18|56)$'
resp=$(exec 3<>"/dev/tcp/127.0.0.1/$PPORT"; printf 'GET /bad/chunk HTTP/1.1\r\nHost: a\r\n\r\n' >&3; timeout 5 cat <&3)
if [[ "$resp" == *$'0\r\n\r\n' ]]; then ct_failed "bad chunk after the head: no clean end"; else ct_pass "bad chunk after the head: no clean end"; fi

# Origin dies mid-body: the client must not see a complete message.
curl -s -o "$CT_TMP/trunc.out" "$P/bytes/200000?close=mid"
rc=$?
ct_check_match "mid-body close: curl reports a truncated transfer" "$rc" '^(18|56|92)$'
resp=$(exec 3<>"/dev/tcp/127.0.0.1/$PPORT"; printf 'GET /bytes/200000?chunked=1&close=mid HTTP/1.1\r\nHost: a\r\n\r\n' >&3; timeout 5 cat <&3)
if [[ "$resp" == *$'\r\n0\r\n\r\n' ]]; then ct_failed "chunked mid-body close has no last chunk"; else ct_pass "chunked mid-body close has no last chunk"; fi

# Slowloris: a head trickling in is cut at the header timeout with 408.
exec 3<>"/dev/tcp/127.0.0.1/$PPORT"
start=$(date +%s%N)
printf 'GET /json HTTP/1.1\r\n' >&3
for i in 1 2 3 4 5 6 7 8; do printf 'X-Slow-%d: 1\r\n' "$i" >&3 2>/dev/null || break; sleep 0.1; done
resp=$(timeout 5 cat <&3)
ms=$((($(date +%s%N) - start) / 1000000))
exec 3<&-
ct_check_match "slowloris answered 408" "$resp" '^HTTP/1.1 408 Request Timeout'
ct_check_match "slowloris closed at ~500 ms despite trickling bytes (was $ms ms)" "$ms" '^([4-9][0-9][0-9]|1[0-9][0-9][0-9]|2[0-4][0-9][0-9])$'

# A client that stops reading a large response: cut after send_timeout
# without progress, not held forever.
exec 3<>"/dev/tcp/127.0.0.1/$PPORT"
printf 'GET /bytes/200000000 HTTP/1.1\r\nHost: a\r\n\r\n' >&3
ct_wait_until 60 grep -q 'client send timeout' "$CT_TMP/proxy.err"
exec 3<&-
ct_check_match "a client that stops reading is cut at the send timeout" "$(cat "$CT_TMP/proxy.err")" \
    'sending the response.*client send timeout'

ct_stop proxy
ct_check "cachet exits 0" "$?" 0

# Origin down: 502 (connection refused).
ct_stop origin KILL
ct_start proxy2 "$CT_BIN/cachet" --http 127.0.0.1:0 --https off --admin off --workers 1 \
    --backend "127.0.0.1:$OPORT"
PPORT=$(ct_wait_listen proxy2 http) || exit 1
resp=$(curl -s -D - "http://127.0.0.1:$PPORT/json" | tr -d '\r')
ct_check_match "origin down answered 502" "$resp" '^HTTP/1.1 502 Bad Gateway'
ct_check_match "502 body is short plain text" "$resp" $'\n\n502 Bad Gateway$'
ct_check_match "502 closes the connection" "$resp" $'\nConnection: close\n'
ct_check_match "cachet logged why" "$(cat "$CT_TMP/proxy2.err")" 'cannot connect to origin'
ct_done
