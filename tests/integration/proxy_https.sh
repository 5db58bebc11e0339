#!/usr/bin/env bash
# cachet over HTTPS (the self-signed default certificate): requests and
# bodies pass like over HTTP, X-Forwarded-Proto says https, plain HTTP on the
# TLS port gets a clear-text 400 (nginx's 497), and a handshake that never
# comes is cut. TLS itself is tested by the tls_* scripts.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
ct_start proxy "$CT_BIN/cachet" --http 127.0.0.1:0 --https 127.0.0.1:0 --admin off --workers 2 \
    --backend "127.0.0.1:$OPORT"
SPORT=$(ct_wait_listen proxy https) || exit 1
S="https://127.0.0.1:$SPORT"

out=$(curl -sk "$S/echo" | tr 'A-Z' 'a-z')
ct_check_match "HTTPS request forwarded with X-Forwarded-Proto: https" "$out" '\["x-forwarded-proto", "https"\]'
ct_check "HTTPS 1 MB response whole" "$(curl -sk "$S/bytes/1000000" | wc -c)" 1000000
ct_check "HTTPS response same bytes as the origin's" \
    "$(curl -sk "$S/bytes/300000?chunked=1" | md5sum)" "$(curl -s "http://127.0.0.1:$OPORT/bytes/300000" | md5sum)"
body=$(head -c 20000 /dev/zero | tr '\0' 's')
out=$(curl -sk -X POST --data-binary "$body" "$S/echo")
b=$(sed -n 's/.*"body": *"\([^"]*\)".*/\1/p' <<<"$out")
ct_check "HTTPS POST body reaches the origin whole" "${#b}" 20000
n=$(curl -sk -o /dev/null -o /dev/null -w '%{num_connects}\n' "$S/json" "$S/json" | awk '{s+=$1} END {print s}')
ct_check "HTTPS keep-alive reuses the connection" "$n" 1

# Plain HTTP on the TLS port: a short clear-text 400, then close.
resp=$(exec 3<>"/dev/tcp/127.0.0.1/$SPORT"; printf 'GET / HTTP/1.1\r\nHost: a\r\n\r\n' >&3; timeout 5 cat <&3)
ct_check_match "plain HTTP on the TLS port answered 400 in clear text" "$resp" '^HTTP/1.1 400'
ct_check_match "and logged" "$(cat "$CT_TMP/proxy.err")" 'plain HTTP on the TLS port'

# Graceful stop with HTTPS connections open: exit 0, nothing leaked.
ct_stop proxy
ct_check "cachet exits 0" "$?" 0
ct_done
