#!/usr/bin/env bash
# Origin time saved (issue 46): every fresh hit credits what fetching its
# object cost the origin. cachet-origin's /delay/MS gives known costs: K
# objects filled with delay D, then H hits each: the counter is K*H*D within
# a tolerance that cannot pass by accident (at least 0.95*K*H*D: every fetch
# took D; at most K*H*(D+250 ms) on a shared machine); misses, passes and a
# route's own answers add nothing. /metrics' series (by site and route; a
# host no site claims is site "-", route "-"; without sites, both labels
# empty) sum to /stats' total, and /stats' per-route figures match them.
# Two workers: the sums span their blocks.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start o "$CT_BIN/cachet-origin" --port 0 --workers 1
OP=$(ct_wait_listen o) || exit 1

cat >"$CT_TMP/saved.conf" <<CONF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OP"; } );
admin = { listen = "127.0.0.1:0"; };
sites = ( {
  name = "shop"; hosts = [ "shop.test" ];
  routes = (
    { name = "slow"; match = { path_prefix = "/delay/"; }; },
    { name = "health"; match = { path = "/healthz"; };
      respond = { status = 200; body = "ok\n"; }; }
  ); } );
CONF
ct_start p "$CT_BIN/cachet" -c "$CT_TMP/saved.conf"
HP=$(ct_wait_listen p http) || exit 1
AP=$(ct_wait_listen p admin) || exit 1
P="http://127.0.0.1:$HP"
A="http://127.0.0.1:$AP"

jget() {
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$2" <<<"$1"
}
prom() { awk -v s="$2" '$1 == s { print $2 }' <<<"$1"; }
# check_within DESC VALUE LO HI: LO <= VALUE <= HI (LO, HI: python expressions)
check_within() {
    if python3 -c 'import sys; v = float(sys.argv[1]); sys.exit(0 if eval(sys.argv[2]) <= v <= eval(sys.argv[3]) else 1)' \
        "${2:-x}" "$3" "$4" 2>/dev/null; then
        ct_pass "$1: $2 s"
    else
        ct_failed "$1: within [$3, $4]" "got '$2'"
    fi
}
hits() { jget "$(curl -s "$A/stats")" 'd["cache_requests"]["hit"]'; }
finished() { [ "$(jget "$(curl -s "$A/stats")" 'sum(d["requests"].values())')" -ge "$1" ]; }
saved() { jget "$(curl -s "$A/stats")" 'd["origin_seconds_saved"]'; }

D=300 # ms, the site's objects
E=200 # ms, the unrouted object
K=2
H=5
CC="cache-control=max-age%3D600"
shop() { curl -s -o /dev/null -w '%{http_code} ' -H "Host: shop.test" "$P$1"; }

# ---- misses, passes and a route's answer: nothing saved ---------------------------
for k in $(seq 1 $K); do shop "/delay/$D?$CC&size=2000&k=$k" >/dev/null; done
curl -s -o /dev/null -H "Host: other.test" "$P/delay/$E?$CC&size=500"
shop "/delay/$D?cache-control=no-store&pass=1" >/dev/null # a pass, twice
shop "/delay/$D?cache-control=no-store&pass=1" >/dev/null
shop /healthz >/dev/null
ct_wait_until 30 finished 6
ct_check "fills, passes and a route's answer save nothing" "$(saved)" 0.0
ct_check "no hit yet" "$(hits)" 0

# ---- hits credit their object's fetch cost ------------------------------------------
codes=""
for h in $(seq 1 $H); do
    for k in $(seq 1 $K); do codes+=$(shop "/delay/$D?$CC&size=2000&k=$k"); done
    codes+=$(curl -s -o /dev/null -w '%{http_code} ' -H "Host: other.test" "$P/delay/$E?$CC&size=500")
done
ct_check "every hit answered 200" "$(tr ' ' '\n' <<<"$codes" | grep -c '^200$')" $((H * (K + 1)))
ct_wait_until 30 finished $((6 + H * (K + 1)))
ct_check "K*H + H hits" "$(hits)" $((K * H + H))

st=$(curl -s "$A/stats")
m=$(curl -s "$A/metrics")
routed=$(prom "$m" 'cachet_origin_seconds_saved_total{site="shop",route="slow"}')
other=$(prom "$m" 'cachet_origin_seconds_saved_total{site="-",route="-"}')
check_within "site shop, route slow: K*H*D = $((K * H * D)) ms" "$routed" \
    "0.95 * $K * $H * $D / 1000" "$K * $H * ($D + 250) / 1000"
check_within "a host no site claims (site -, route -): H*E = $((H * E)) ms" "$other" \
    "0.95 * $H * $E / 1000" "$H * ($E + 250) / 1000"
ct_check "no request without a route table: the empty-labelled series is 0" \
    "$(prom "$m" 'cachet_origin_seconds_saved_total{site="",route=""}')" 0.000000
ct_check "the route that answered itself saved nothing" \
    "$(prom "$m" 'cachet_origin_seconds_saved_total{site="shop",route="health"}')" 0.000000
ct_check "the series sum to /stats' total" \
    "$(python3 -c "print(round(sum(float(l.split()[-1]) for l in '''$m'''.splitlines() if l.startswith('cachet_origin_seconds_saved_total')), 6))")" \
    "$(jget "$st" 'round(d["origin_seconds_saved"], 6)')"
ct_check "/stats per route matches /metrics" \
    "$(jget "$st" '[r["origin_seconds_saved"] for r in d["routes"] if r["route"] == "slow"][0]')" \
    "$(python3 -c "print(float('$routed'))")"
ct_check_match "HELP and TYPE" "$m" '# TYPE cachet_origin_seconds_saved_total counter'

# ---- no sites at all: one series, both labels empty --------------------------------
ct_start q "$CT_BIN/cachet" --http 127.0.0.1:0 --https off --admin 127.0.0.1:0 \
    --backend "127.0.0.1:$OP"
QP=$(ct_wait_listen q http) || exit 1
QA=$(ct_wait_listen q admin) || exit 1
for i in 1 2 3 4; do curl -s -o /dev/null "http://127.0.0.1:$QP/delay/$E?$CC&q=1"; done
qfinished() { [ "$(jget "$(curl -s "http://127.0.0.1:$QA/stats")" 'sum(d["requests"].values())')" -ge 4 ]; }
ct_wait_until 30 qfinished
m=$(curl -s "http://127.0.0.1:$QA/metrics")
none=$(prom "$m" 'cachet_origin_seconds_saved_total{site="",route=""}')
check_within "no sites: 3 hits of a $E ms object" "$none" "0.95 * 3 * $E / 1000" "3 * ($E + 250) / 1000"
ct_check "no sites: the only series" "$(grep -c '^cachet_origin_seconds_saved_total' <<<"$m")" 1

ct_done
