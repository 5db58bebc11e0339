#!/usr/bin/env bash
# Operations: the admin listener (/stats JSON, /metrics Prometheus text, 404,
# 405, purge by URL and prefix), counters that move with requests (status
# classes, connections, latency histogram, per-backend upstream counters, TLS
# handshakes), and the access log in both formats.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin

ALOG="$CT_TMP/access.log"
ct_start_proxy --http 127.0.0.1:0 --https 127.0.0.1:0 --admin 127.0.0.1:0 \
    --workers 2 --backend "127.0.0.1:$OPORT" --access-log "$ALOG"
SPORT=$(ct_wait_listen proxy https) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
A="http://127.0.0.1:$APORT"

have_py=0
command -v python3 >/dev/null && have_py=1

# jget JSON EXPR: a value from the /stats JSON (python3), e.g. 'd["requests"]["2xx"]'.
jget() {
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$2" <<<"$1"
}
# prom TEXT SERIES: the value of one sample line.
prom() { awk -v s="$2" '$1 == s { print $2 }' <<<"$1"; }

# ---- /stats and /metrics answer, with the right types -----------------------------
hdrs=$(curl -s -D - -o /dev/null "$A/stats" | tr -d '\r')
ct_check_match "/stats is application/json" "$hdrs" $'\n''Content-Type: application/json'
hdrs=$(curl -s -D - -o /dev/null "$A/metrics" | tr -d '\r')
ct_check_match "/metrics is text/plain; version=0.0.4" "$hdrs" \
    $'\n''Content-Type: text/plain; version=0.0.4'
ct_check "unknown admin path: 404" "$(curl -s -o /dev/null -w '%{http_code}' "$A/nope")" 404
hdrs=$(curl -s -D - -o /dev/null -X POST "$A/stats" | tr -d '\r')
ct_check_match "POST /stats: 405 with Allow" "$hdrs" '^HTTP/1.1 405 .*'$'\n''Allow: GET, HEAD'
ct_check "purge without url= or prefix=: 400" \
    "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$A/purge?x=1")" 400
ct_check "purge of a relative URL: 400" \
    "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$A/purge?url=/a")" 400
# the decoded URL's control bytes are escaped in the log line: one line per purge
curl -s -o /dev/null -X POST "$A/purge?url=http%3A%2F%2Fh.test%2Fa%0Db%0Ac"
ct_check "purge of a URL with CR LF: logged escaped, on one line" \
    "$(grep -c 'admin: purge url http://h.test/a\\x0Db\\x0Ac: 0 objects' "$CT_TMP/proxy.err")" 1
ct_check "GET /purge: 405" "$(curl -s -o /dev/null -w '%{http_code}' "$A/purge?url=http://x/a")" 405
ct_check "HEAD /stats: no body" "$(curl -s -I "$A/stats" -o /dev/null -w '%{size_download}')" 0
# two requests on one admin connection (keep-alive)
n=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects}\n' "$A/stats" "$A/metrics" |
    awk '{ s += $1 } END { print s }')
ct_check "admin keep-alive: two requests, one connection" "$n" 1

# ---- counters move ----------------------------------------------------------------
# (no-store: these go to the origin every time, whatever the cache does)
NS="cache-control=no-store"
before=$(curl -s "$A/stats")
for i in 1 2 3 4 5; do curl -s -o /dev/null "$P/gen?$NS&i=$i"; done
curl -s -o /dev/null "$P/gen?status=404&$NS"
curl -s -o /dev/null "$P/gen?status=503&$NS"
curl -sk -o /dev/null "https://127.0.0.1:$SPORT/gen?$NS"
# A worker counts a request once its response is queued, which may be just
# after the client has read it: wait for the last one to show.
total() { awk -F'"requests":' '{ print $2 }' <<<"$1" | grep -o '[0-9]\+' | head -6 | awk '{ s += $1 } END { print s }'; }
want=$(($(total "$before") + 8))
counted() { after=$(curl -s "$A/stats"); [ "$(total "$after")" -ge "$want" ]; }
ct_wait_until 60 counted
if [ $have_py = 1 ]; then
    ct_check "/stats is valid JSON" "$(jget "$after" '"ok"')" ok
    d2=$(($(jget "$after" 'd["requests"]["2xx"]') - $(jget "$before" 'd["requests"]["2xx"]')))
    ct_check "requests 2xx moved by 6" "$d2" 6
    d4=$(($(jget "$after" 'd["requests"]["4xx"]') - $(jget "$before" 'd["requests"]["4xx"]')))
    ct_check "requests 4xx moved by 1" "$d4" 1
    d5=$(($(jget "$after" 'd["requests"]["5xx"]') - $(jget "$before" 'd["requests"]["5xx"]')))
    ct_check "requests 5xx moved by 1" "$d5" 1
    da=$(($(jget "$after" 'd["connections_accepted"]') - $(jget "$before" 'd["connections_accepted"]')))
    ct_check "connections accepted moved by 8" "$da" 8
    du=$(($(jget "$after" 'd["backends"][0]["upstream_requests"]') - $(jget "$before" 'd["backends"][0]["upstream_requests"]')))
    ct_check "upstream requests of the backend moved by 8" "$du" 8
    ct_check "histogram count == +Inf bucket" \
        "$(jget "$after" 'd["latency_seconds"]["count"] == d["latency_seconds"]["buckets"]["+Inf"]')" True
    ct_check "TLS: one full handshake" "$(jget "$after" 'd["tls"]["handshakes_full"]')" 1
    ct_check "cache store stats present" "$(jget "$after" '"lookups" in d["cache"]')" True
    ct_check "admin requests counted" "$(($(jget "$after" 'd["admin_requests"]') > 5))" 1
else
    ct_check_match "/stats has the requests object" "$after" '"requests":\{"1xx":'
fi

# ---- /metrics: Prometheus text format 0.0.4 ------------------------------------------
m=$(curl -s "$A/metrics")
# Metric names as Prometheus has them: [a-zA-Z_:][a-zA-Z0-9_:]* (ours: lower case, digits as in h2_).
MN='[a-z_][a-z0-9_]*'
bad=$(grep -vE '^(# HELP '"$MN"' .+|# TYPE '"$MN"' (counter|gauge|histogram)|'"$MN"'(\{[a-z_]+="([^"\\]|\\.)*"(,[a-z_]+="([^"\\]|\\.)*")*\})? [0-9.e+-]+)$' <<<"$m" | head -3)
ct_check "every /metrics line is HELP, TYPE or a sample" "$bad" ""
ct_check "every family has HELP and TYPE" \
    "$(grep -c '^# HELP' <<<"$m")" "$(grep -c '^# TYPE' <<<"$m")"
ct_check "requests_total{class=2xx} >= 6" \
    "$(($(prom "$m" 'cachet_requests_total{class="2xx"}') >= 6))" 1
ct_check "requests_total{class=5xx}" "$(prom "$m" 'cachet_requests_total{class="5xx"}')" 1
ct_check "connections_open gauge is 0 between requests" "$(prom "$m" cachet_connections_open)" 0
ct_check "histogram +Inf == _count" \
    "$(prom "$m" 'cachet_request_duration_seconds_bucket{le="+Inf"}')" \
    "$(prom "$m" cachet_request_duration_seconds_count)"
ct_check "tls full handshakes" "$(prom "$m" 'cachet_tls_handshakes_total{type="full"}')" 1
ct_check_match "per-backend series" "$m" "cachet_upstream_requests_total\{backend=\"127.0.0.1:$OPORT\"\} [0-9]+"
ct_check_match "close reasons" "$m" 'cachet_connections_closed_total\{reason="rem_close"\} [1-9]'
# an open connection shows in the gauge
exec 5<>"/dev/tcp/127.0.0.1/$PPORT"
open_is_1() { o=$(prom "$(curl -s "$A/metrics")" cachet_connections_open); [ "$o" = 1 ]; }
ct_wait_until 60 open_is_1
ct_check "connections_open counts an idle connection" "$o" 1
m=$(curl -s "$A/metrics")
ct_check "... by protocol: http" "$(prom "$m" 'cachet_connections_open_by_proto{proto="http"}')" 1
ct_check "... by protocol: https" "$(prom "$m" 'cachet_connections_open_by_proto{proto="https"}')" 0
# request and response bytes of one request whose size is known exactly
REQ=$'GET /bytes/1000?cache-control=no-store HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
rb0=$(prom "$m" cachet_request_bytes_total)
bb0=$(prom "$m" cachet_response_body_bytes_total)
printf '%s' "$REQ" >&5
cat <&5 >/dev/null
exec 5<&-
body_counted() {
    m=$(curl -s "$A/metrics")
    [ "$(prom "$m" cachet_response_body_bytes_total)" != "$bb0" ]
}
ct_wait_until 60 body_counted
ct_check "request bytes: the head as sent" "$(($(prom "$m" cachet_request_bytes_total) - rb0))" "${#REQ}"
ct_check "response body bytes: 1000" "$(($(prom "$m" cachet_response_body_bytes_total) - bb0))" 1000
if [ $have_py = 1 ]; then
    st=$(curl -s "$A/stats")
    ct_check "/stats lists the listeners" "$(jget "$st" '[l["kind"] for l in d["listeners"]]')" \
        "['http', 'https', 'admin']"
    ct_check "/stats: the admin listener's address" "$(jget "$st" 'd["listeners"][2]["addr"]')" \
        "127.0.0.1:$APORT"
    ct_check "/stats: no reload yet" "$(jget "$st" 'd["reload"]')" \
        "{'generation': 0, 'ok': 0, 'failed': 0, 'last_time': None, 'last_ok': None}"
    ct_check "/stats: purges allowed (a cache)" "$(jget "$st" 'd["purge"]')" True
fi

# ---- cache counters and purge through the admin API ------------------------------------
U="/gen?size=100&cache-control=max-age%3D60&k=ops"
EU="http%3A%2F%2F127.0.0.1%3A$PPORT%2Fgen%3Fsize%3D100%26cache-control%3Dmax-age%253D60%26k%3Dops"
cs() { curl -s -D - -o /dev/null "$P$U" | tr -d '\r' | sed -n 's/^Cache-Status: //p'; }
hits0=$(prom "$(curl -s "$A/metrics")" 'cachet_cache_requests_total{cache_status="hit"}')
miss0=$(prom "$(curl -s "$A/metrics")" 'cachet_cache_requests_total{cache_status="miss"}')
purged0=$(prom "$(curl -s "$A/metrics")" cachet_cache_purged_total)
ct_check_match "first request: miss, stored" "$(cs)" 'fwd=uri-miss; stored'
ct_check_match "second: hit" "$(cs)" '; hit'
m=$(curl -s "$A/metrics")
ct_check "hit counted by cache status" \
    "$(($(prom "$m" 'cachet_cache_requests_total{cache_status="hit"}') - hits0))" 1
ct_check "miss counted by cache status" \
    "$(($(prom "$m" 'cachet_cache_requests_total{cache_status="miss"}') - miss0))" 1
ct_check_match "store: hits counted" "$(prom "$m" cachet_cache_hits_total)" '^[1-9]' 
ct_check_match "store: objects and bytes" \
    "$(prom "$m" cachet_cache_objects) $(prom "$m" cachet_cache_bytes)" '^[1-9][0-9]* [1-9][0-9]*$'
out=$(curl -s -w ' %{http_code}' -X POST "$A/purge?url=$EU")
ct_check "purge by URL" "$out" '{"purged":1}
 200'
ct_check "purge again: 404" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$A/purge?url=$EU")" 404
ct_check_match "after the purge: miss" "$(cs)" 'fwd=uri-miss'
out=$(curl -s -X POST "$A/purge?prefix=http://127.0.0.1:$PPORT/gen%3Fsize%3D100%26cache")
ct_check "purge by prefix" "$out" '{"purged":1}'
ct_check "store: purged counted" \
    "$(($(prom "$(curl -s "$A/metrics")" cachet_cache_purged_total) - purged0))" 2

# ---- access log (combined) ---------------------------------------------------------------
curl -s -o /dev/null -A 'agent "quoted"' -e 'http://ref/' "$P/json?x=1"
# /json is stored without freshness: later requests revalidate (STALE); the
# logged size is what the client got, whichever path the body took
JLEN=$(curl -s "$P/json?k=reval" | wc -c)
curl -s -o /dev/null "$P/json?k=reval"
curl -s -o /dev/null "$P/json?k=reval"
RV="$P/gen?size=100&cache-control=max-age%3D0&etag=%22v1%22&k=rv"
curl -s -o /dev/null "$RV" # stored, stale at once: each later request revalidates
st=$(curl -s "$A/stats")
s2xx0=$(jget "$st" 'd["requests"]["2xx"]')
s3xx0=$(jget "$st" 'd["requests"]["3xx"]')
m3xx0=$(prom "$(curl -s "$A/metrics")" 'cachet_requests_total{class="3xx"}')
for i in 1 2; do
    ct_check "revalidated hit: the client gets 200 (origin 304)" \
        "$(curl -s -o /dev/null -D - "$RV" | tr -d '\r' |
            sed -n -e 's/^HTTP\/1.1 \([0-9]*\).*/\1/p' -e 's/^Cache-Status: .*fwd-status=/ /p' |
            tr -d '\n')" "200 304"
done
# what the client received is counted, not the origin's 304 (bug 1 of issue 40)
counted2() { [ "$(jget "$(curl -s "$A/stats")" 'd["requests"]["2xx"]')" -ge $((s2xx0 + 2)) ]; }
ct_wait_until 30 counted2 || ct_failed "the two revalidated hits counted as 2xx"
ct_check "revalidated hits: /stats requests.3xx unchanged" \
    "$(jget "$(curl -s "$A/stats")" 'd["requests"]["3xx"]')" "$s3xx0"
ct_check "revalidated hits: /metrics 3xx unchanged" \
    "$(prom "$(curl -s "$A/metrics")" 'cachet_requests_total{class="3xx"}')" "$m3xx0"
# a PURGE answer is logged with its body's bytes, and as no cache outcome
# ("-": nothing was looked up or passed to the origin; issue 40, bug 10)
PB=$(curl -s -X PURGE "$RV" | wc -c)
PB2=$(curl -s -X PURGE "$RV" | wc -c)
ct_stop proxy # flushes the buffers
ct_check "PURGE answers logged with their bytes and cs=-" \
    "$(grep -F '"PURGE /gen?' "$ALOG" | grep -F 'k=rv' | sed -E 's/.*" ([0-9]{3}) ([0-9]+) .* cs=([^ ]+) .*/\1 \2 \3/' | sort | tr '\n' ' ')" \
    "200 $PB - 404 $PB2 - "
ct_check "revalidated hits logged 200, the origin's 304 as us=" \
    "$(grep -F 'k=rv' "$ALOG" | grep -c '" 200 100 .* us=304 cs=STALE')" 2
ct_check "the miss logged with the origin's 200 as us=" \
    "$(grep -F 'k=rv' "$ALOG" | grep -c '" 200 100 .* us=200 cs=MISS')" 1
ct_check "body bytes logged = bytes received (miss, revalidations)" \
    "$(grep -F 'k=reval' "$ALOG" | awk '{ print $10 }' | sort -u)" "$JLEN"
line=$(grep -F '/json?x=1' "$ALOG")
ct_check_match "combined line" "$line" \
    '^127\.0\.0\.1 - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8} [+-][0-9]{4}\] "GET /json\?x=1 HTTP/1\.1" 200 [0-9]+ "http://ref/" "agent \\x22quoted\\x22" rt=[0-9]+\.[0-9]{3} ut=[0-9]+\.[0-9]{3} us=200 cs=[A-Z_]+ tls=-$'
ct_check_match "404 line" "$(grep -F 'status=404' "$ALOG")" '" 404 [0-9]+ '
# (curl speaks h2 to the HTTPS listener: its line ends with the stream id)
ct_check_match "TLS line says the version" "$(grep -F 'tls=TLS' "$ALOG")" 'tls=TLSv1\.[23]( sid=[0-9]+)?$'
ct_check "one line per proxied request" "$(wc -l <"$ALOG")" 21
# (workers write their own batches: lines are whole but not in time order)
ct_check "cache status in the log: HIT" "$(grep -F 'k=ops' "$ALOG" | grep -c '" 200 100 .* cs=HIT tls=-$')" 1
ct_check "cache status in the log: MISS" "$(grep -F 'k=ops' "$ALOG" | grep -c '" 200 100 .* cs=MISS tls=-$')" 2


# ---- access log (JSON) through a config file ------------------------------------------------
JLOG="$CT_TMP/access.json"
cat >"$CT_TMP/json.conf" <<EOF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { name = "origin \"one\""; address = "127.0.0.1:$OPORT"; } );
admin = { listen = "127.0.0.1:0"; };
logs = { access_log = "$JLOG"; access_format = "json"; };
EOF
ct_start pj "$CT_BIN/cachet" -c "$CT_TMP/json.conf"
JPORT=$(ct_wait_listen pj http) || exit 1
JAPORT=$(ct_wait_listen pj admin) || exit 1
curl -s -o /dev/null -A $'tab\there' "http://127.0.0.1:$JPORT/json"
curl -s -o /dev/null "http://127.0.0.1:$JPORT/bytes/1000"
m=$(curl -s "http://127.0.0.1:$JAPORT/metrics")
ct_check_match "backend label escaped" "$m" 'cachet_upstream_requests_total\{backend="origin \\"one\\""\} 2'
ct_stop pj
ct_check "two JSON lines" "$(wc -l <"$JLOG")" 2
if [ $have_py = 1 ]; then
    ok=$(python3 -c 'import json,sys
n=0
for l in open(sys.argv[1]):
    d=json.loads(l)
    assert d["remote_addr"]=="127.0.0.1" and d["method"]=="GET" and d["tls"] is None
    n+=1
print(n)' "$JLOG" 2>&1)
    ct_check "JSON lines parse" "$ok" 2
    ct_check "JSON: body_bytes_sent" \
        "$(python3 -c 'import json,sys; print([json.loads(l)["body_bytes_sent"] for l in open(sys.argv[1])][1])' "$JLOG")" 1000
    ct_check "JSON: user agent with a tab" \
        "$(python3 -c 'import json,sys; print(repr(json.loads(open(sys.argv[1]).readline())["user_agent"]))' "$JLOG")" "'tab\\there'"
else
    ct_check_match "JSON line" "$(head -1 "$JLOG")" '^\{"time":"[0-9T:.-]+Z","remote_addr":"127.0.0.1".*\}$'
fi

ct_done
