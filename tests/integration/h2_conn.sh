#!/usr/bin/env bash
# HTTP/2 connections (issue 14): ALPN on HTTPS listeners (h2 first with
# listen[].tls.http2, http/1.1 otherwise and for clients that ask for it),
# the connection served by proxy/h2/h2_serve.c: our SETTINGS, streams, a bad
# preface (GOAWAY PROTOCOL_ERROR), malformed requests as stream errors that
# leave the connection serving, rapid reset (GOAWAY ENHANCE_YOUR_CALM), the
# idle and preface timeouts and the drain (GOAWAY NO_ERROR with the last stream id), and
# the h2 connection gauge. Requests themselves: h2_requests.sh.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PY=/usr/bin/python3 # Debian's, with python3-h2
PEER="$CT_SRC/tests/integration/h2_peer.py"

ct_start_origin
ALOG=$CT_TMP/access.log
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 1;
logs = { access_log = "$ALOG"; };
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; http2 = false; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/cachet.conf" --admin 127.0.0.1:0
APORT=$(ct_wait_listen proxy admin) || exit 1
# both listeners' lines (the admin's may come first on a loaded machine)
two_https() { [ "$(grep -c '^listening on https ' "$CT_TMP/proxy.out")" -ge 2 ]; }
ct_wait_until 60 two_https
ports=($(grep '^listening on https ' "$CT_TMP/proxy.out" | sed 's/.*://'))
H2=${ports[0]} H1=${ports[1]}

alpn() { # PORT OFFER: what the server chose
    timeout 20 openssl s_client -connect "127.0.0.1:$1" -alpn "$2" </dev/null 2>/dev/null |
        sed -n 's/^ALPN protocol: //p'
}
ct_check "ALPN h2,http/1.1 -> h2 (http2 on: the default)" "$(alpn "$H2" h2,http/1.1)" h2
ct_check "ALPN http/1.1,h2 -> h2 (our preference)" "$(alpn "$H2" http/1.1,h2)" h2
ct_check "ALPN http/1.1 -> http/1.1 (http2 on)" "$(alpn "$H2" http/1.1)" http/1.1
ct_check "ALPN h2,http/1.1 -> http/1.1 (http2 off)" "$(alpn "$H1" h2,http/1.1)" http/1.1
out=$(timeout 20 openssl s_client -connect "127.0.0.1:$H2" </dev/null 2>/dev/null | grep -c '^ALPN protocol')
ct_check "no ALPN offered: none chosen, handshake fine" "$out" 0

# HTTP/1.1 exactly as before on the h2 listener: no ALPN, and ALPN http/1.1.
ct_check "curl --http1.1 on the h2 listener" \
    "$(curl -sk --http1.1 -o /dev/null -w '%{http_version} %{http_code}' "https://127.0.0.1:$H2/json")" "1.1 200"
resp=$(printf 'GET /json HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' |
    timeout 20 openssl s_client -quiet -connect "127.0.0.1:$H2" -alpn http/1.1 2>/dev/null | head -1)
ct_check_match "openssl s_client -alpn http/1.1 gets HTTP/1.1" "$resp" '^HTTP/1.1 200'
resp=$(printf 'GET /json HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' |
    timeout 20 openssl s_client -quiet -connect "127.0.0.1:$H2" 2>/dev/null | head -1)
ct_check_match "openssl s_client without ALPN gets HTTP/1.1" "$resp" '^HTTP/1.1 200'

# curl and nghttp speak h2 to it.
ct_check "curl --http2 negotiates h2" \
    "$(curl -sk --http2 -o /dev/null -w '%{http_version}' "https://127.0.0.1:$H2/json")" 2
out=$(timeout 20 nghttp -nv "https://127.0.0.1:$H2/json" 2>&1)
ct_check_match "nghttp: our SETTINGS" "$out" 'recv SETTINGS frame <length=[1-9]'
ct_check_match "nghttp: SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100" "$out" 'SETTINGS_MAX_CONCURRENT_STREAMS\(0x03\):100'
ct_check_match "nghttp: its SETTINGS acknowledged" "$out" 'recv SETTINGS frame <length=0, flags=0x01'
ct_check_match "nghttp: a response head" "$out" 'recv \(stream_id=13\) :status: '

# The access log says HTTP/2.0 (lines are written in batches: poll).
ct_wait_until 30 grep -q '"GET /json HTTP/2.0" ' "$ALOG"
ct_check_match "access log: an h2 request as HTTP/2.0" "$(cat "$ALOG" 2>/dev/null)" '"GET /json HTTP/2.0" [0-9]{3} '
# ... with its stream id (nghttp's request is stream 13, after its PRIORITY
# streams; curl's is 1), and an HTTP/1.1 line without one.
ct_wait_until 30 grep -q 'HTTP/2.0" .* sid=13$' "$ALOG"
ct_check "access log: nghttp's request on stream 13" "$(grep -c 'HTTP/2.0" .* tls=TLSv1.3 sid=13$' "$ALOG")" 1
ct_check_match "access log: curl's on stream 1" "$(grep -c 'HTTP/2.0" .* sid=1$' "$ALOG")" '^[1-9]'
ct_check "access log: HTTP/1.1 lines carry no stream id" "$(grep 'HTTP/1.1" ' "$ALOG" | grep -c 'sid=')" 0

# Protocol cases from a scripted client.
out=$($PY "$PEER" "$H2" preface)
ct_check "bad connection preface: GOAWAY PROTOCOL_ERROR, then close" "$out" $'goaway 1\nclosed'
for kind in upper connection te; do
    out=$($PY "$PEER" "$H2" malformed $kind)
    ct_check_match "malformed request ($kind): RST_STREAM PROTOCOL_ERROR, the next stream served" \
        "$out" $'^reset 1 stream=1\nstatus [0-9]+ stream=3\nended stream=3$'
done
out=$($PY "$PEER" "$H2" rapid_reset 1000)
ct_check "rapid reset: GOAWAY ENHANCE_YOUR_CALM" "${out%% last=*}" "goaway 11"
ct_check_match "rapid reset: logged" "$(cat "$CT_TMP/proxy.err")" 'GOAWAY RAPID_RESET'

# Floods through the real binary, with the default budgets: empty DATA
# frames, empty CONTINUATION frames, PINGs whose ACKs are never read.
for kind in empty continuation ping; do
    out=$($PY "$PEER" "$H2" flood "$kind")
    ct_check "$kind flood: GOAWAY ENHANCE_YOUR_CALM" "${out%% last=*}" "goaway 11"
done

# The counters (/metrics), summed over the cases above.
prom() { curl -s "http://127.0.0.1:$APORT/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
ge() { [ "${1:-0}" -ge "$2" ]; }
ct_check "h2 connections ended by a bad preface" "$(prom 'cachet_h2_connections_ended_total{reason="preface"}')" 1
ct_check "h2 connections ended by rapid reset" "$(prom 'cachet_h2_connections_ended_total{reason="rapid_reset"}')" 1
for r in empty_frames continuation_flood ack_flood; do
    ct_check "h2 connections ended by $r" "$(prom "cachet_h2_connections_ended_total{reason=\"$r\"}")" 1
done
ct_check "h2 malformed requests counted" "$(prom cachet_h2_malformed_total)" 3
n=$(prom cachet_h2_resets_received_total)
ge "$n" 200 && ct_pass "client resets counted ($n >= the burst of 200)" || ct_failed "client resets counted" "got $n"
n=$(prom cachet_h2_streams_total)
ge "$n" 206 && ct_pass "h2 streams counted ($n)" || ct_failed "h2 streams counted" "got $n"

# A reload: a connection held open gets GOAWAY NO_ERROR in two steps (RFC
# 9113 §6.8: first the notice, then the last stream id) and closes once that
# is done, so its client's next requests meet the new configuration; then
# nothing holds the old one (retired objects 0).
$PY "$PEER" "$H2" hold >"$CT_TMP/rhold.out" 2>&1 &
rhold=$!
ct_wait_until 30 grep -q '^ready' "$CT_TMP/rhold.out"
kill -HUP "$(ct_pid proxy)"
wait $rhold
# (h2_peer prints "closed" as it sees it, and the events read before it after.)
ct_check_match "reload: GOAWAY NO_ERROR notice (last 2^31-1), a round trip later the last stream id, then close" \
    "$(cat "$CT_TMP/rhold.out")" $'ready\ngoaway 0 last=2147483647\nclosed\ngoaway 0 last=1'
retired_none() { [ "$(prom cachet_reload_retired_objects)" = 0 ]; }
ct_check "reload: no configuration kept for it" "$(ct_wait_until 60 retired_none && echo 0)" 0
ct_check "reload: h2 served on a new connection" "$($PY "$PEER" "$H2" get /json | head -1)" "status 200 stream=1"

# The h2 gauge, and the drain: a connection held open gets GOAWAY NO_ERROR
# naming its last stream, then the close, and cachet exits 0.
$PY "$PEER" "$H2" hold >"$CT_TMP/hold.out" 2>&1 &
hold=$!
ct_wait_until 30 grep -q '^ready' "$CT_TMP/hold.out"
ct_check "h2 connection counted by protocol" "$(prom 'cachet_connections_open_by_proto{proto="h2"}')" 1
ct_check "... and not as https" "$(prom 'cachet_connections_open_by_proto{proto="https"}')" 0
# ... and in cachet ctl top: the h2 row under the open connections, the streams row.
top=$("$CT_BIN/cachet" ctl top --once -i 0.2 --admin "127.0.0.1:$APORT")
ct_check "ctl top: exit 0" "$?" 0
ct_check_match "ctl top: h2 connections open" "$top" $'\n  h2 +1 '
streams=$(prom cachet_h2_streams_total)
ct_check_match "ctl top: h2 streams as /metrics, none in the interval" "$top" \
    $'\n'"h2 streams +$streams +0"$'\n'
ct_stop proxy
ct_check "cachet exits 0 after draining h2" "$?" 0
wait $hold
ct_check_match "drain: GOAWAY NO_ERROR with the last stream id, then close" \
    "$(cat "$CT_TMP/hold.out")" $'ready\ngoaway 0 last=1\nclosed'

# The idle timeout: GOAWAY NO_ERROR once no stream is open for keepalive_timeout.
# The preface timeout: a client that says nothing after the TLS handshake is
# closed, without a GOAWAY, after client_header_timeout (not at once).
cat >"$CT_TMP/idle.conf" <<EOF
workers = 1;
limits = { keepalive_timeout = "1s"; client_header_timeout = "1s"; };
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; http2 = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
ct_start idle "$CT_BIN/cachet" -c "$CT_TMP/idle.conf" --admin off
IPORT=$(ct_wait_listen idle https) || exit 1
out=$($PY "$PEER" "$IPORT" hold)
ct_check_match "idle h2 connection: GOAWAY NO_ERROR, then close" "$out" $'ready\ngoaway 0 last=1\nclosed'
ct_check "no preface: closed after client_header_timeout, no GOAWAY" \
    "$($PY "$PEER" "$IPORT" silent 1)" "closed"
ct_stop idle
ct_check "cachet exits 0" "$?" 0
ct_done
