#!/usr/bin/env bash
# Per-client limits of routes and sites (issue 15): requests per period (a
# token bucket, one a minute here so no token comes back during the test:
# 429 with Retry-After past the burst, another client address unaffected),
# requests in flight at once, a site-wide limit, and the route_answers
# counters in /metrics. (The refill itself: tests/unit/test_limit_bucket.c.)
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start o "$CT_BIN/cachet-origin" --port 0 --workers 1
OP=$(ct_wait_listen o) || exit 1

cat >"$CT_TMP/limits.conf" <<CONF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OP"; } );
admin = { listen = "127.0.0.1:0"; };
sites = (
  { name = "www"; hosts = [ "www.test" ];
    routes = (
      { name = "api"; match = { path = "/gen"; }; limit = { rate = 1; period = "1m"; burst = 3; };
        cache = { pass = true; }; },
      { name = "slow"; match = { path_prefix = "/delay/"; }; limit = { concurrent = 1; }; }
    ); },
  { name = "small"; hosts = [ "small.test" ]; limit = { rate = 1; period = "1m"; burst = 1; }; }
);
CONF
ct_start p "$CT_BIN/cachet" -c "$CT_TMP/limits.conf"
HP=$(ct_wait_listen p http) || exit 1
SP=$(ct_wait_listen p https) || exit 1
AP=$(ct_wait_listen p admin) || exit 1
U="http://127.0.0.1:$HP"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

codes=""
for i in 1 2 3 4; do codes+="$(code -H 'Host: www.test' "$U/gen?i=$i") "; done
ct_check "rate: the burst, then 429" "$codes" "200 200 200 429 "
out=$(curl -s -D - -o /dev/null -H 'Host: www.test' "$U/gen?i=5")
ct_check_match "rate: 429 says Retry-After (a minute's token)" "$out" $'Retry-After: (5[0-9]|60)\r'
ct_check_match "rate: and why" "$out" 'Cache-Status: cachet; detail=route-rate'
ct_check "rate: another client address has its own bucket" \
    "$(code --interface 127.0.0.2 -H 'Host: www.test' "$U/gen?i=6")" 200
ct_check "rate: over HTTP/2 too (the same bucket, whatever the protocol)" \
    "$(code -k --http2 -H 'Host: www.test' "https://127.0.0.1:$SP/gen?i=7")" 429

# concurrency: one /delay/ request in flight per client; a second is refused.
# The origin has already answered the /gen requests above, so wait for its
# count to pass what it was, not for any count (a second request sent before
# the first reached cachet would be let in). 3 s of delay leaves the second
# request time to arrive under sanitizers on a loaded machine.
before=$(ct_origin_total "$OP")
curl -s -o /dev/null -H 'Host: www.test' "$U/delay/3000?cache-control=no-store&a=1" &
SLOW=$!
ct_wait_until 60 ct_origin_total_ge "$OP" $((before + 1))
ct_check "concurrent: a second request in flight is refused" \
    "$(code -H 'Host: www.test' "$U/delay/10?cache-control=no-store&b=1")" 429
ct_check "concurrent: another client is not" \
    "$(code --interface 127.0.0.2 -H 'Host: www.test' "$U/delay/10?cache-control=no-store&c=1")" 200
wait $SLOW
ct_check "concurrent: once it ended, the next goes" \
    "$(code -H 'Host: www.test' "$U/delay/10?cache-control=no-store&d=1")" 200

# a site-wide limit (no route): every path of the site counts
ct_check "site limit: first" "$(code -H 'Host: small.test' "$U/1k")" 200
ct_check "site limit: second path, same bucket" "$(code -H 'Host: small.test' "$U/json")" 429

m=$(curl -s "http://127.0.0.1:$AP/metrics")
ct_check_match "metrics: rate refusals counted" "$m" 'cachet_route_answers_total\{action="rate"\} [3-9]'
ct_check_match "metrics: concurrency refusals counted" "$m" 'cachet_route_answers_total\{action="concurrency"\} 1'
ct_check_match "metrics: requests per route" "$m" 'cachet_route_requests_total\{site="www",route="api"\} ([6-9]|[1-9][0-9])'
ct_check_match "metrics: a site's requests no route matched" "$m" 'cachet_route_requests_total\{site="small",route="-"\} 2'
# the same counters in /stats, parsed as JSON
j=$(curl -s "http://127.0.0.1:$AP/stats" | /usr/bin/python3 -c '
import json, sys
r = {(x["site"], x["route"]): x["requests"] for x in json.load(sys.stdin)["routes"]}
print(r.get(("small", "-")), r.get(("www", "api"), 0) >= 6)')
ct_check "stats: requests per route" "$j" "2 True"

# A reload that puts a route before "api" keeps api's buckets: they are
# keyed by the site's and route's names, not by the route's place.
sed -i 's|    routes = (|    routes = (\n      { name = "first"; match = { path = "/first"; }; respond = { status = 204; }; },|' \
    "$CT_TMP/limits.conf"
kill -HUP "$(ct_pid p)"
reloaded() { grep -q 'in use by every worker' "$CT_TMP/p.err"; }
ct_wait_until 90 reloaded
ct_check "reload: the new route answers" "$(code -H 'Host: www.test' "$U/first")" 204
ct_check "reload: api's spent bucket is still spent" "$(code -H 'Host: www.test' "$U/gen?i=8")" 429
ct_check "reload: the other client's bucket still has its tokens" \
    "$(code --interface 127.0.0.2 -H 'Host: www.test' "$U/gen?i=9")" 200
ct_done
