#!/usr/bin/env bash
# cachet pass-through: GET/POST/PUT/HEAD, chunked bodies both ways, HTTP/1.0
# with and without keep-alive, keep-alive reuse, Via on responses.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_pair --workers 2

# raw PORT BYTES: one connection, print everything until the server closes.
raw() {
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf '%b' "$2" >&3
    timeout 5 cat <&3
    exec 3<&-
}

# GET, same bytes as from the origin itself.
direct=$(curl -s "http://127.0.0.1:$OPORT/json")
via=$(curl -s "$P/json")
ct_check "GET /json body passes through" "$via" "$direct"
ct_check "GET status" "$(curl -s -o /dev/null -w '%{http_code}' "$P/json")" 200
hdrs=$(curl -s -D - -o /dev/null "$P/json" | tr -d '\r')
ct_check_match "response carries Via: 1.1 cachet" "$hdrs" $'\n''Via: ([^\n]*, )?1\.1 cachet'
ct_check "GET /bytes/100000 size" "$(curl -s "$P/bytes/100000" | wc -c)" 100000
ct_check "GET /bytes/100000 same bytes as origin" \
    "$(curl -s "$P/bytes/100000" | md5sum)" "$(curl -s "http://127.0.0.1:$OPORT/bytes/100000" | md5sum)"

# The length of the "body" string in an /echo answer.
echo_body_len() { local b; b=$(sed -n 's/.*"body": *"\([^"]*\)".*/\1/p'); echo "${#b}"; }

# POST / PUT bodies reach the origin (/echo reports the request).
body=$(head -c 30000 /dev/zero | tr '\0' 'p')
out=$(curl -s -X POST --data-binary "$body" "$P/echo")
ct_check "POST body reaches origin whole" "$(echo_body_len <<<"$out")" 30000
ct_check_match "POST method reaches origin" "${out:0:200}" '"method": *"POST"'
out=$(curl -s -X PUT --data-binary "hello-put" "$P/echo")
ct_check_match "PUT method and body reach origin" "$out" '"PUT".*hello-put|hello-put.*"PUT"'

# HEAD: headers with the GET's Content-Length, no body.
h=$(curl -s -I "$P/bytes/1234" | tr -d '\r')
ct_check_match "HEAD has Content-Length of the GET" "$h" $'\n''Content-Length: 1234'
resp=$(raw "$PPORT" 'HEAD /bytes/1234 HTTP/1.1\r\nHost: t\r\n\r\nGET /bytes/5 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n')
ct_check_match "HEAD response has no body (next response follows at once)" "$resp" \
    $'Content-Length: 1234\r\n(.*\r\n)?\r\nHTTP/1.1 200'

# Chunked request body (curl sends Transfer-Encoding: chunked from stdin).
out=$(head -c 70000 /dev/zero | tr '\0' 'c' | curl -s -X POST -H 'Transfer-Encoding: chunked' \
    --data-binary @- "$P/echo")
ct_check "chunked request body is de-chunked, re-chunked and complete" \
    "$(echo_body_len <<<"$out")" 70000
ct_check_match "chunked request body goes on chunked" "${out:0:600}" '"Transfer-Encoding", "chunked"'

# Chunked response to an HTTP/1.1 client: re-chunked, complete.
h=$(curl -s -D - -o "$CT_TMP/chunked.out" "$P/bytes/50000?chunked=1" | tr -d '\r')
ct_check_match "chunked response stays chunked for HTTP/1.1" "$h" $'\n''Transfer-Encoding: chunked'
ct_check "chunked response body complete" "$(wc -c <"$CT_TMP/chunked.out")" 50000

# HTTP/1.0 without keep-alive: close-delimited for a chunked origin response.
resp=$(raw "$PPORT" 'GET /bytes/3000?chunked=1 HTTP/1.0\r\n\r\n')
ct_check_match "HTTP/1.0 response is not chunked" "$resp" $'^HTTP/1.1 200'
if [[ "$resp" == *"Transfer-Encoding"* ]]; then ct_failed "HTTP/1.0 got Transfer-Encoding"; else ct_pass "HTTP/1.0 gets no Transfer-Encoding"; fi
ct_check "HTTP/1.0 close-delimited body complete" "$(printf '%s' "${resp#*$'\r\n\r\n'}" | wc -c)" 3000

# HTTP/1.0 with keep-alive: two responses on one connection.
resp=$(raw "$PPORT" 'GET /bytes/10 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /bytes/20 HTTP/1.0\r\n\r\n')
ct_check_match "HTTP/1.0 keep-alive answered with Connection: keep-alive" "$resp" \
    $'Connection: keep-alive\r\n'
ct_check "HTTP/1.0 keep-alive: both responses on one connection" \
    "$(grep -o 'HTTP/1.1 200' <<<"$resp" | wc -l)" 2

# HTTP/1.1 keep-alive: curl reuses the connection for two URLs.
n=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects}\n' "$P/json" "$P/json" | awk '{s+=$1} END {print s}')
ct_check "HTTP/1.1 keep-alive reuses the client connection" "$n" 1

# Status codes from the origin pass through.
ct_check "origin 404 passes" "$(curl -s -o /dev/null -w '%{http_code}' "$P/gen?status=404")" 404
ct_check "origin 204 passes" "$(curl -s -o /dev/null -w '%{http_code}' "$P/gen?status=204")" 204

ct_stop proxy
ct_check "cachet exits 0 on SIGTERM" "$?" 0
ct_done
