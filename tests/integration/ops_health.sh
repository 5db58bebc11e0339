#!/usr/bin/env bash
# Active health checks: a stopped origin is taken out of the rotation (no
# failed request, no request sent to it), comes back once restarted on the
# same port, and with every backend down the proxy answers 503.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start o1 "$CT_BIN/cachet-origin" --port 0 --workers 1
O1=$(ct_wait_listen o1) || exit 1
ct_start o2 "$CT_BIN/cachet-origin" --port 0 --workers 1
O2=$(ct_wait_listen o2) || exit 1

cat >"$CT_TMP/h.conf" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "127.0.0.1:0"; };
backends = (
    { name = "one"; address = "127.0.0.1:$O1";
      health_check = { enabled = true; path = "/json"; interval = "100ms"; timeout = "500ms";
                       expect_status = 200; rise = 2; fall = 2; }; },
    { name = "two"; address = "127.0.0.1:$O2";
      health_check = { enabled = true; path = "/json"; interval = "100ms"; timeout = "500ms";
                       expect_status = 200; rise = 2; fall = 2; }; }
);
EOF
ct_start_proxy -c "$CT_TMP/h.conf"
APORT=$(ct_wait_listen proxy admin) || exit 1

up() { # up NAME: 1 or 0 from /metrics
    curl -s "http://127.0.0.1:$APORT/metrics" |
        awk -v s="cachet_backend_up{backend=\"$1\"}" '$1 == s { print $2 }'
}
up_is() { [ "$(up "$1")" = "$2" ]; }
wait_up() { ct_wait_until 60 up_is "$1" "$2"; } # wait_up NAME VALUE
codes() { # codes N [PATH]: the statuses of N requests (not cacheable), counted
    local i
    for ((i = 0; i < $1; i++)); do curl -s -o /dev/null -w '%{http_code}\n' "$P${2:-/gen?cache-control=no-store}"; done |
        sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }'
}

ct_check "both backends start up" "$(up one)$(up two)" 11
ct_check "all requests answered" "$(codes 10)" "200:10 "
ct_origin_reset "$O1"
ct_origin_reset "$O2"
codes 10 >/dev/null
ct_check_match "round robin reaches backend two" "$(ct_origin_total "$O2")" '^[1-9]'

# Backend two goes away: taken out after `fall` failed probes.
ct_stop o2
wait_up two 0
ct_check "stopped backend marked down" "$(up two)" 0
ct_check "backend one still up" "$(up one)" 1
ct_check "no failed request while two is down" "$(codes 20)" "200:20 "
err=$(grep -c 'is down: 2 failed health checks' "$CT_TMP/proxy.err")
ct_check "down transition logged once" "$err" 1

# Back on the same port: in again after `rise` good probes.
ct_start o2 "$CT_BIN/cachet-origin" --port "$O2" --workers 1
ct_wait_listen o2 >/dev/null || exit 1
wait_up two 1
ct_check "restarted backend marked up" "$(up two)" 1
ct_origin_reset "$O2"
codes 10 >/dev/null
ct_check_match "requests reach backend two again" "$(ct_origin_total "$O2")" '^[1-9]'
ct_check_match "up transition logged" "$(grep 'backend two' "$CT_TMP/proxy.err" | tail -1)" 'is up'

STORED="/gen?cache-control=max-age%3D300&k=health"
curl -s -o /dev/null "$P$STORED"
# Every backend down: 503 at once, nothing attempted, for what the cache
# cannot answer; a stored object is still served (stale).
ct_stop o1
ct_stop o2
wait_up one 0
wait_up two 0
ct_check "all backends down" "$(up one)$(up two)" 00
NS="/gen?cache-control=no-store"
ct_check "every backend down: 503" "$(codes 3 "$NS")" "503:3 "
ct_check "every backend down: a stored object is served" "$(codes 1 "$STORED")" "200:1 "
hdrs=$(curl -s -D - -o /dev/null "$P$NS" | tr -d '\r')
ct_check_match "503 says Connection: close like the proxy's errors" "$hdrs" $'\n''Connection: close'
ct_check_match "close reason no_backend counted" "$(curl -s "http://127.0.0.1:$APORT/metrics")" \
    'cachet_connections_closed_total\{reason="no_backend"\} [1-9]'

ct_stop proxy
ct_check "cachet exits 0" "$?" 0
ct_done
