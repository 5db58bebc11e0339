#!/usr/bin/env bash
# cachet forwards every method, known or not, with its body (issue 5; RFC
# 9110 §9.1: any token is a method, case-sensitive): an unknown method with a
# Content-Length or chunked body reaches the origin's /echo as sent, a
# lower-case "get" is not GET (never answered from the cache), methods in
# http-parser's list but not in ours (PROPFIND) pass too, unknown methods
# pipeline, an unknown method invalidates the stored GET (RFC 9111 §4.4: not
# known to be safe), and a method with a non-token byte is a 400 that never
# reaches the origin. Origin requests are counted at /_origin/stats.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_pair --admin 127.0.0.1:0 --workers 1
APORT=$(ct_wait_listen proxy admin) || exit 1
MA='cache-control=max-age%3D60'

# raw PORT BYTES: one connection, print everything until the server closes.
raw() {
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf '%b' "$2" >&3
    timeout 5 cat <&3
    exec 3<&-
}
# The "method" and "body" strings of an /echo answer.
echo_method() { sed -n 's/.*"method": *"\([^"]*\)".*/\1/p'; }
echo_body() { sed -n 's/.*"body": *"\([^"]*\)".*/\1/p'; }
hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -n1; }

# ---- an unknown method with a Content-Length body
out=$(curl -s -X FOO --data-binary 'hello-foo' "$P/echo")
ct_check "FOO reaches the origin as FOO" "$(echo_method <<<"$out")" FOO
ct_check "FOO body intact" "$(echo_body <<<"$out")" hello-foo
big=$(head -c 50000 /dev/zero | tr '\0' 'f')
out=$(curl -s -X FOO --data-binary "$big" "$P/echo")
ct_check "FOO 50000-byte body intact" "$(echo_body <<<"$out")" "$big"

# ---- an unknown method with a chunked body (de-chunked by the origin)
printf 'chunked-body-of-bar' >"$CT_TMP/body"
out=$(curl -s -X BAR -H 'Transfer-Encoding: chunked' --data-binary @"$CT_TMP/body" "$P/echo")
ct_check "BAR chunked reaches the origin" "$(echo_method <<<"$out")" BAR
ct_check "BAR chunked body intact" "$(echo_body <<<"$out")" chunked-body-of-bar
resp=$(raw "$PPORT" 'ZAP /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\n\r\n')
ct_check_match "ZAP chunked with an extension: 200" "$resp" '^HTTP/1.1 200 '
ct_check "ZAP chunked body intact" "$(echo_body <<<"$resp")" abcdefg

# ---- an unknown method without a body
out=$(curl -s -X NOBODY "$P/echo")
ct_check "NOBODY reaches the origin" "$(echo_method <<<"$out")" NOBODY
ct_check "NOBODY has an empty body" "$(echo_body <<<"$out")" ""

# ---- lower-case get is another method: passed, never a cache hit
ct_origin_reset "$OPORT"
h=$(curl -s -D - -o "$CT_TMP/lc" -X get "$P/echo?$MA")
ct_check "get reaches the origin as get" "$(echo_method <"$CT_TMP/lc")" get
ct_check "get is a bypass" "$(hdr Cache-Status "$h")" "cachet; fwd=bypass; detail=method"
curl -s -o /dev/null -X get "$P/echo?$MA"
ct_check "get twice: two origin requests" "$(ct_origin_total "$OPORT")" 2

# ---- a method http-parser knows and our table does not
out=$(curl -s -X PROPFIND -H 'Depth: 1' --data-binary '<propfind/>' "$P/echo")
ct_check "PROPFIND reaches the origin" "$(echo_method <<<"$out")" PROPFIND
ct_check "PROPFIND body intact" "$(echo_body <<<"$out")" '<propfind/>'

# ---- an unknown method invalidates the stored GET of its target
ct_origin_reset "$OPORT"
curl -s -o /dev/null "$P/echo?x=1&$MA"
h=$(curl -s -D - -o /dev/null "$P/echo?x=1&$MA")
ct_check_match "GET stored then hit" "$(hdr Cache-Status "$h")" '^cachet; hit'
curl -s -o /dev/null -X FOO --data-binary 'x' "$P/echo?x=1&$MA"
h=$(curl -s -D - -o /dev/null "$P/echo?x=1&$MA")
ct_check "after FOO: GET refetched" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
ct_check "after FOO: 3 origin requests" "$(ct_origin_total "$OPORT")" 3

# ---- pipelined unknown methods, answered in order with their own bodies
resp=$(raw "$PPORT" 'FOO /echo?1 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nonebar /echo?2 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\nBAZ /echo?3 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n')
ct_check "three pipelined responses" "$(grep -c '^HTTP/1.1 200 ' <<<"$resp")" 3
flat=$(tr -d '\r\n' <<<"$resp")
ct_check_match "pipelined: in order, each with its method and body" "$flat" \
    '"method": "FOO", "target": "/echo\?1".*"body": "one".*"method": "bar", "target": "/echo\?2".*"body": "two".*"method": "BAZ", "target": "/echo\?3".*"body": ""'

# ---- a method with a byte outside tchar: 400 from cachet, origin untouched
ct_origin_reset "$OPORT"
resp=$(raw "$PPORT" 'FO(O /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx')
ct_check_match "FO(O: 400" "$resp" '^HTTP/1.1 400 '
resp=$(raw "$PPORT" 'FOO:BAR /echo HTTP/1.1\r\nHost: t\r\n\r\n')
ct_check_match "FOO:BAR: 400" "$resp" '^HTTP/1.1 400 '
ct_check "invalid methods never reach the origin" "$(ct_origin_total "$OPORT")" 0

# ---- the admin counters: the two bad methods are the only 4xx, no 5xx, and
# no connection was closed as a refused method
stats=$(curl -s "http://127.0.0.1:$APORT/stats")
ct_check_match "stats: two 4xx, no 5xx" "$stats" '"4xx":2,"5xx":0,'
ct_check_match "stats: no method closes" "$stats" '"method":0,'
ct_check_match "stats: two malformed requests" "$stats" '"rx_bad":2,'

ct_done
