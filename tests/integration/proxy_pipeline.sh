#!/usr/bin/env bash
# cachet pipelining (responses strictly in order, even when the first is the
# slowest) and Expect: 100-continue (cachet answers 100 itself when it is
# about to read the body, and never forwards the expectation).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin --workers 2
ct_start_proxy --http 127.0.0.1:0 --https off --admin off --workers 1 \
    --backend "127.0.0.1:$OPORT"

# Three requests in one write; the first is slow (300 ms), the last closes.
exec 3<>"/dev/tcp/127.0.0.1/$PPORT"
printf 'GET /delay/300 HTTP/1.1\r\nHost: a\r\n\r\nGET /bytes/7 HTTP/1.1\r\nHost: a\r\n\r\nPOST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello' >&3
resp=$(timeout 10 cat <&3)
exec 3<&-
ct_check "three pipelined responses" "$(grep -o 'HTTP/1.1 200 OK' <<<"$resp" | wc -l)" 3
# Markers of each response body, in the order they appear on the wire.
flat=$(tr -d '\r\n' <<<"$resp")
pos() { local rest=${flat%%"$1"*}; [ "$rest" = "$flat" ] && echo -1 || echo "${#rest}"; }
p1=$(pos 'Content-Length: 7') p2=$(pos 'hello') p0=$(pos 'HTTP/1.1 200 OK')
ct_check_match "first response (the slow one) comes first" "$p0" '^0$'
if ((p1 > 0 && p2 > p1)); then ct_pass "responses in request order"; else ct_failed "responses in request order" "$flat"; fi
ct_check_match "last response closes" "$resp" $'Connection: close\r\n'

# A burst of 300 pipelined requests in one write, all answered in order
# (cacheable: after the first, they are answered from the cache in the same
# loop turn, the case that must not nest calls without bound).
reqs=""
for i in $(seq 1 299); do reqs+="GET /gen?cache-control=max-age%3D60&size=5 HTTP/1.1\r\nHost: burst\r\n\r\n"; done
reqs+="GET /bytes/4 HTTP/1.1\r\nHost: burst\r\nConnection: close\r\n\r\n"
resp=$(exec 3<>"/dev/tcp/127.0.0.1/$PPORT"; printf '%b' "$reqs" >&3; timeout 10 cat <&3)
ct_check "300 pipelined requests, 300 responses" "$(grep -o 'HTTP/1.1 200 OK' <<<"$resp" | wc -l)" 300
ct_check_match "the last response is the last request's" "$resp" $'Content-Length: 4\r\n.*\r\n\r\n....$'

# 100-continue: send the head, wait for "100 Continue", then the body.
exec 3<>"/dev/tcp/127.0.0.1/$PPORT"
printf 'POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n' >&3
IFS= read -r -t 30 line <&3
ct_check "100 Continue before the body" "${line%$'\r'}" "HTTP/1.1 100 Continue"
IFS= read -r -t 30 blank <&3
printf 'hello world' >&3
resp=$(timeout 5 cat <&3)
exec 3<&-
ct_check_match "final response after 100" "$resp" '^HTTP/1.1 200'
ct_check_match "body forwarded after 100" "$resp" 'hello world'
if [[ "$(tr 'A-Z' 'a-z' <<<"$resp")" == *"100-continue"* ]]; then
    ct_failed "Expect not forwarded to the origin" "$resp"
else
    ct_pass "Expect not forwarded to the origin"
fi

# Unknown expectation: 417 and never forwarded.
ct_origin_reset "$OPORT"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Expect: teapot' --data x "http://127.0.0.1:$PPORT/echo")
ct_check "unknown Expect answered 417" "$code" 417
ct_check "unknown Expect not forwarded" "$(ct_origin_total "$OPORT")" 0

# HTTP/1.0 client with Expect: no 100 (RFC 9110 §10.1.1), body still read.
resp=$(exec 3<>"/dev/tcp/127.0.0.1/$PPORT"; printf 'POST /echo HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc' >&3; timeout 5 cat <&3)
ct_check_match "HTTP/1.0 gets no 100" "$resp" '^HTTP/1.1 200'

ct_done
