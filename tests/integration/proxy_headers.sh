#!/usr/bin/env bash
# cachet forwarding headers, checked at the origin through /echo: hop-by-hop
# fields removed (Connection and what it names, Keep-Alive, TE, Trailer,
# Upgrade, Proxy-*), Via appended, X-Forwarded-For appended,
# X-Forwarded-Proto and X-Forwarded-Host set, Host kept.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_pair --workers 1

# The echo of one request, lower-cased so header names compare simply.
echo_of() { curl -s "$@" | tr 'A-Z' 'a-z'; }

out=$(echo_of -H 'Connection: keep-alive, X-Drop-Me' -H 'X-Drop-Me: 1' -H 'X-Keep-Me: 2' \
    -H 'Keep-Alive: timeout=5' -H 'TE: trailers' -H 'Trailer: X-T' -H 'Upgrade: h2c' \
    -H 'Proxy-Authorization: Basic Zm9vOmJhcg==' -H 'Proxy-Foo: 1' -H 'Proxy: http://evil' \
    -H 'Host: example.test:8000' -H 'X-Forwarded-For: 192.0.2.7' -H 'Via: 1.0 upstreamproxy' \
    -H 'X-Forwarded-Proto: gopher' -H 'X-Forwarded-Host: forged' "$P/echo")
for h in '"connection"' x-drop-me keep-alive '"te"' '"trailer"' '"upgrade"' proxy-authorization proxy-foo '"proxy"'; do
    if [[ "$out" == *"$h"* ]]; then ct_failed "hop-by-hop $h removed" "$out"; else ct_pass "hop-by-hop $h removed"; fi
done
ct_check_match "end-to-end field kept" "$out" '\["x-keep-me", "2"\]'
ct_check_match "Host kept" "$out" '\["host", "example.test:8000"\]'
ct_check_match "Via appended" "$out" '\["via", "1.0 upstreamproxy, 1.1 cachet"\]'
ct_check_match "X-Forwarded-For appended" "$out" '\["x-forwarded-for", "192.0.2.7, 127.0.0.1"\]'
ct_check_match "X-Forwarded-Proto set" "$out" '\["x-forwarded-proto", "http"\]'
ct_check_match "X-Forwarded-Host set from Host" "$out" '\["x-forwarded-host", "example.test:8000"\]'

out=$(echo_of "$P/echo")
ct_check_match "X-Forwarded-For created" "$out" '\["x-forwarded-for", "127.0.0.1"\]'
ct_check_match "Via created" "$out" '\["via", "1.1 cachet"\]'

# Without a Connection field the table's hop-by-hop flags alone decide
# (forward.c looks for Connection once per head).
out=$(echo_of -H 'Keep-Alive: timeout=5' -H 'TE: trailers' -H 'Proxy-Foo: 1' -H 'X-Keep-Me: 3' "$P/echo?noconn")
for h in keep-alive '"te"' proxy-foo; do
    if [[ "$out" == *"$h"* ]]; then ct_failed "no Connection: $h removed" "$out"; else ct_pass "no Connection: $h removed"; fi
done
ct_check_match "no Connection: end-to-end field kept" "$out" '\["x-keep-me", "3"\]'

# A head too big for the stack buffer (4 KiB) is built in the upstream's
# output buffer instead: same fields, same order, same additions.
big=()
for i in $(seq 10 33); do big+=(-H "X-Big-$i: $(head -c 300 /dev/zero | tr '\0' 'b')"); done
out=$(echo_of "${big[@]}" -H 'TE: trailers' "$P/echo?big")
ct_check "big head: every field forwarded, in order" \
    "$(grep -o '"x-big-[0-9]*", "b*"' <<<"$out" | cut -c8-9 | tr '\n' ' ')" "$(seq -s ' ' 10 33) "
ct_check_match "big head: Via and X-Forwarded-For added" "$out" '\["via", "1.1 cachet"\].*\["x-forwarded-for", "127.0.0.1"\]'
if [[ "$out" == *'"te"'* ]]; then ct_failed "big head: TE removed" "$out"; else ct_pass "big head: TE removed"; fi

# Response side: the origin's own hop-by-hop fields are checked in
# proxy_upgrade.sh, whose scripted origin can send any field.
h=$(curl -s -D - -o /dev/null "$P/json" | tr -d '\r' | tr 'A-Z' 'a-z')
ct_check_match "response Via appended" "$h" $'\nvia: 1\\.1 cachet'

ct_done
