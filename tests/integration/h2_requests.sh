#!/usr/bin/env bash
# Requests over HTTP/2 (issue 14) on the request core, with real clients
# (curl --http2, nghttp, h2load, Python's h2): a miss then hits from the
# stored head (Age, Cache-Status, Content-Length from the plan; no
# connection-specific field), a miss streaming while it fills, HEAD, Range,
# 304, PURGE, a pass POST with a body (DATA -> the HTTP/1.1 origin with a
# correct Content-Length, or chunked without one), a content-length that
# contradicts the DATA (RST_STREAM, never forwarded), many streams on one
# connection, a stream that is not read beside one that is, and the origin
# seeing the same request as over HTTP/1.1 (Host from :authority,
# X-Forwarded-*, Via). Connection-level cases: h2_conn.sh.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PY=/usr/bin/python3
PEER="$CT_SRC/tests/integration/h2_peer.py"
ct_start_origin
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 1;
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; http2 = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; max_object_size = "4M"; grace = "0s"; hit_for_miss = "0s"; };
EOF
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/cachet.conf" --admin 127.0.0.1:0
SPORT=$(ct_wait_listen proxy https) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
S="https://127.0.0.1:$SPORT"
MA='cache-control=max-age%3D60'

hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
fetch() { local u=$1; shift; : >"$CT_TMP/body"; curl -sk --http2 -D - -o "$CT_TMP/body" "$@" "$u"; }
status_of() { head -1 <<<"$1" | tr -d '\r' | sed 's/ *$//'; }
origin_count() { ct_origin_total "$OPORT"; }

# ---- miss, then hit.
ct_origin_reset "$OPORT"
h1=$(fetch "$S/bytes/3000?$MA")
b1=$(md5sum <"$CT_TMP/body")
h2=$(fetch "$S/bytes/3000?$MA")
b2=$(md5sum <"$CT_TMP/body")
ct_check "h2 miss: HTTP/2 200" "$(status_of "$h1")" "HTTP/2 200"
ct_check "h2 miss: Cache-Status" "$(hdr Cache-Status "$h1")" "cachet; fwd=uri-miss; stored"
ct_check_match "h2 hit: Cache-Status" "$(hdr Cache-Status "$h2")" '^cachet; hit; ttl=(5[0-9]|60)$'
ct_check "h2 hit: the origin's bytes" "$b2" "$(curl -s "$O/bytes/3000" | md5sum)"
ct_check "h2 miss: the origin's bytes" "$b1" "$b2"
ct_check "h2 hit: content-length from the plan" "$(hdr content-length "$h2")" 3000
ct_check_match "h2 hit: age" "$(hdr age "$h2")" '^[0-9]+$'
ct_check_match "h2 hit: the stored fields (via)" "$(hdr via "$h2")" '1\.1 cachet'
ct_check "h2 hit: no connection-specific field" \
    "$(tr -d '\r' <<<"$h2" | grep -ciE '^(connection|keep-alive|transfer-encoding|upgrade|proxy-connection):')" 0
ct_check "miss then hit: one origin fetch" "$(origin_count)" 2

# ---- a miss streaming while it fills (chunked from the origin, trickled).
ref=$(curl -s "$O/bytes/200000" | md5sum)
ct_origin_reset "$OPORT"
h=$(fetch "$S/bytes/200000?$MA&chunked=1&trickle=5&trickle-size=20000")
ct_check "streaming miss: whole body" "$(wc -c <"$CT_TMP/body")" 200000
ct_check "streaming miss: the origin's bytes" "$(md5sum <"$CT_TMP/body")" "$ref"
h=$(fetch "$S/bytes/200000?$MA&chunked=1&trickle=5&trickle-size=20000")
ct_check_match "... then a hit" "$(hdr Cache-Status "$h")" '^cachet; hit'
ct_check "streaming miss: one origin fetch" "$(origin_count)" 1

# ---- HEAD, Range, 304 and PURGE.
h=$(curl -sk --http2 -I "$S/bytes/3000?$MA")
ct_check "HEAD hit: 200" "$(status_of "$h")" "HTTP/2 200"
ct_check "HEAD hit: content-length" "$(hdr content-length "$h")" 3000
h=$(fetch "$S/bytes/3000?$MA" -H 'Range: bytes=10-19')
ct_check "Range hit: 206" "$(status_of "$h")" "HTTP/2 206"
ct_check "Range hit: content-range" "$(hdr content-range "$h")" "bytes 10-19/3000"
ct_check "Range hit: the bytes" "$(cat "$CT_TMP/body")" "$(curl -s "$O/bytes/3000" | head -c 20 | tail -c 10)"
E='etag=%22v1%22'
fetch "$S/bytes/500?$MA&$E" >/dev/null
h=$(fetch "$S/bytes/500?$MA&$E" -H 'If-None-Match: "v1"')
ct_check "conditional hit: 304" "$(status_of "$h")" "HTTP/2 304"
ct_check_match "304: from the cache" "$(hdr cache-status "$h")" '^cachet; hit'
ct_check "304: no body" "$(wc -c <"$CT_TMP/body")" 0
ct_check "PURGE over h2: 200" "$(curl -sk --http2 -o /dev/null -w '%{http_code}' -X PURGE "$S/bytes/3000?$MA")" 200
ct_check_match "after PURGE: a miss" "$(hdr Cache-Status "$(fetch "$S/bytes/3000?$MA")")" 'fwd=uri-miss'

# ---- the origin sees what it sees over HTTP/1.1.
e2=$(curl -sk --http2 -H 'X-Forwarded-For: 192.0.2.7' "$S/echo" | tr 'A-Z' 'a-z')
e1=$(curl -sk --http1.1 -H 'X-Forwarded-For: 192.0.2.7' "$S/echo" | tr 'A-Z' 'a-z')
ct_check_match "h2 -> origin: Host from :authority" "$e2" "\\[\"host\", \"127.0.0.1:$SPORT\"\\]"
ct_check_match "h2 -> origin: HTTP/1.1" "$e2" '"version": "http/1.1"'
for f in x-forwarded-for x-forwarded-proto x-forwarded-host via; do
    v2=$(grep -o "\[\"$f\", \"[^\"]*\"\]" <<<"$e2")
    v1=$(grep -o "\[\"$f\", \"[^\"]*\"\]" <<<"$e1")
    ct_check "h2 -> origin: $f as over HTTP/1.1" "$v2" "$v1"
done

# ---- pass POST with a body: Content-Length kept, or chunked without one.
body=$(head -c 100000 /dev/zero | tr '\0' 'p')
out=$(curl -sk --http2 -X POST --data-binary "$body" "$S/echo")
b=$(sed -n 's/.*"body": *"\([^"]*\)".*/\1/p' <<<"$out")
ct_check "h2 POST: the body reaches the origin whole" "${#b}" 100000
ct_check_match "h2 POST: with its Content-Length" "$(tr 'A-Z' 'a-z' <<<"$out")" '\["content-length", "100000"\]'
out=$(printf 'abc' | curl -sk --http2 -X POST -H 'Content-Length:' -H 'Transfer-Encoding:' --data-binary @- "$S/echo")
ct_check_match "h2 POST without content-length: chunked to the origin" "$(tr 'A-Z' 'a-z' <<<"$out")" '\["transfer-encoding", "chunked"\]'
ct_check_match "... and the body arrives" "$out" '"body": "abc"'
ct_origin_reset "$OPORT"
out=$($PY "$PEER" "$SPORT" cl_mismatch long)
ct_check_match "DATA past content-length: RST_STREAM PROTOCOL_ERROR, next stream served" "$out" $'^reset 1 stream=1\nstatus 200 stream=3'
out=$($PY "$PEER" "$SPORT" cl_mismatch short)
ct_check_match "DATA short of content-length: RST_STREAM PROTOCOL_ERROR" "$out" $'^reset 1 stream=1\nstatus 200 stream=3'
n=$(curl -s "$O/_origin/stats" | grep -o '"/echo[^"]*": *[0-9]*' | grep -o '[0-9]*$' | head -1)
ct_check "a body that contradicts content-length is never forwarded" "${n:-0}" 0

# ---- one connection, one stream after another: each stream's cache part is
# the last one's, reset (h2_serve.c keeps it for the next stream), so each
# says its own Cache-Status: a miss, its hit, a pass, a miss that fills
# while streaming, then the first again.
u="$S/bytes/700?$MA&seq=1"
accepted() { curl -s "http://127.0.0.1:$APORT/metrics" | awk '$1 == "cachet_connections_accepted_total" {print $2}'; }
a0=$(accepted)
out=$(curl -sk --http2 -D - -o /dev/null "$u" "$u" "$S/bytes/500?cache-control=no-store" \
    "$S/bytes/90000?$MA&seq=2&chunked=1" "$u" |
    tr -d '\r' | sed -n 's/^cache-status: //Ip' | tr '\n' '|')
ct_check_match "one connection, 5 streams: each its own Cache-Status" "$out" \
    '^cachet; fwd=uri-miss; stored\|cachet; hit; ttl=[0-9]+\|cachet; fwd=uri-miss; detail=no-store\|cachet; fwd=uri-miss; stored\|cachet; hit; ttl=[0-9]+\|$'
ct_check "... on one connection" "$(($(accepted) - a0))" 1

# ---- Via (RFC 9110 §7.6.3): ours once, after the origin's, on what is
# forwarded (a pass) as on what is stored (a hit).
out=$(curl -sk --http2 -D - -o /dev/null -H 'Accept-Encoding: identity' "$S/gen?size=10&cache-control=no-store")
ct_check "pass over h2: one Via of ours" "$(grep -ic '^via: .*1\.1 cachet' <<<"$out")" 1
curl -sk --http2 -o /dev/null "$S/gen?size=11&$MA"
out=$(curl -sk --http2 -D - -o /dev/null "$S/gen?size=11&$MA")
ct_check_match "hit over h2: a hit" "$out" 'cache-status: cachet; hit'
ct_check "hit over h2: one Via of ours" "$(grep -io '1\.1 cachet' <<<"$out" | wc -l)" 1

# ---- many streams on one connection; nghttp and h2load.
out=$($PY "$PEER" "$SPORT" many "/bytes/1000?$MA" 100)
ct_check "100 concurrent streams on one connection: all 200" "$out" $'status 200 x100\nbytes 100000'
out=$(timeout 60 nghttp -n -m 50 "$S/bytes/1000?$MA" -s 2>&1 | grep -c ' 200 ')
ct_check "nghttp -m 50: 50 responses" "$out" 50
out=$(timeout 120 h2load -n 2000 -c 4 -m 10 "$S/bytes/1000?$MA" 2>&1)
ct_check_match "h2load -n2000 -c4 -m10: every request 2xx" "$out" 'status codes: 2000 2xx'
# 100 KiB hits on 10 streams at once, with h2load's wide-open windows: a
# megabyte queued at once, more than one write takes (it stalled: the
# write took what it was given, no write callback came for the rest).
curl -sk -o /dev/null "$S/bytes/102400?$MA"
out=$(timeout 120 h2load -n 200 -c 2 -m 10 "$S/bytes/102400?$MA" 2>&1)
ct_check_match "h2load 100 KiB hits -c2 -m10: every request 2xx" "$out" 'status codes: 200 2xx'

# ---- a stream that is not read does not stall another.
out=$($PY "$PEER" "$SPORT" noread "/bytes/4000000?$MA" "/bytes/1000?$MA")
ct_check_match "unread stream holds no more than its window" "$out" '^stream1 16384 ended=False'
ct_check_match "and the other stream completes" "$out" 'stream3 1000 ended=True'

# ---- drain with a stream in flight: GOAWAY NO_ERROR naming it, then its
# answer, then the close. (nghttp: Python's h2 takes a GOAWAY as the end of
# every stream, which RFC 9113 §6.8 does not.)
ct_origin_reset "$OPORT"
timeout 60 nghttp -nv "$S/delay/1500" >"$CT_TMP/inflight.out" 2>&1 &
infl=$!
ct_wait_until 30 ct_origin_total_ge "$OPORT" 1 # the origin has it
ct_stop proxy
ct_check "cachet exits 0 after the stream in flight" "$?" 0
wait $infl
ct_check "nghttp exits 0" "$?" 0
out=$(cat "$CT_TMP/inflight.out")
ct_check_match "drain: GOAWAY NO_ERROR with the stream in flight as the last" "$out" \
    'recv GOAWAY frame [^)]*\(last_stream_id=13, error_code=NO_ERROR'
ct_check_match "... then its answer, whole" "$out" 'recv \(stream_id=13\) :status: 200'
ct_check_match "... to its END_STREAM" "$out" 'recv DATA frame <length=[0-9]+, flags=0x01, stream_id=13>'

# ---- the send timeout per stream: a client that never opens its window.
cat >"$CT_TMP/stall.conf" <<EOF
workers = 1;
limits = { send_timeout = "1s"; };
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
ct_start stall "$CT_BIN/cachet" -c "$CT_TMP/stall.conf" --admin off
TPORT=$(ct_wait_listen stall https) || exit 1
out=$($PY "$PEER" "$TPORT" stall "/bytes/4000000")
ct_check_match "a stream whose client takes nothing is reset (CANCEL) after send_timeout" "$out" '^reset 8 stream=1'
ct_check_match "... and logged" "$(cat "$CT_TMP/stall.err")" 'took no response bytes for 1000 ms'
ct_stop stall
ct_check "cachet exits 0" "$?" 0
ct_done
