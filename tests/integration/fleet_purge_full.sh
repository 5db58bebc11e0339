#!/usr/bin/env bash
# Issue 17, a client's PURGE that the fleet's queue refuses (fleet.purge_queue
# full): applied on the node it reached, but not sent to the others, so the
# client is told (503, Retry-After), it is counted and logged once per burst.
# A queue of 0 on node a makes every one refused; a reload to the default
# makes the next one go through the stream again. Two cachet nodes, a
# standalone redis-server and one cachet-origin on loopback.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 2
read -r RP PA PB AA AB < <(ct_free_ports 5)
ct_start_redis "$RP"
declare -A PORT=([a]=$PA [b]=$PB) ADMIN=([a]=$AA [b]=$AB)
conf() { # NODE PURGE_QUEUE
    cat >"$CT_TMP/$1.conf" <<EOF2
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$1]}"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; purge_allow = [ "127.0.0.1/32" ]; };
admin = { listen = "127.0.0.1:${ADMIN[$1]}"; };
fleet = {
  self = "$1";
  members = ( { name = "a"; address = "127.0.0.1:$PA"; admin = "127.0.0.1:$AA"; },
              { name = "b"; address = "127.0.0.1:$PB"; admin = "127.0.0.1:$AB"; } );
  redis = "127.0.0.1:$RP";
  mirror_ttl = "1h";
  purge_queue = $2;
};
EOF2
}
conf a 0
conf b 4096
for n in a b; do ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"; done
for n in a b; do ct_wait_listen "node$n" admin >/dev/null || { ct_failed "node $n starts"; exit 1; }; done

metric() { ct_metric "${ADMIN[$1]}" "cachet_$2"; }
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
H="Host: fleet.test"
cs() { curl -s -D - -o /dev/null -H "$H" "http://127.0.0.1:${PORT[$1]}$2" | tr -d '\r' | sed -n 's/^Cache-Status: //p' | tail -1; }
get() { curl -s -o /dev/null -H "$H" "http://127.0.0.1:${PORT[$1]}$2"; }
MA='cache-control=max-age%3D3600'
for n in a b; do
    ct_wait_until 30 metric_is "$n" fleet_redis_up 1 || ct_failed "node $n: Redis up"
done

# ---- queue full on a: 503 with Retry-After, applied on a, not on b.
U="/gen?size=100&$MA&k=full1"
get a "$U"
get b "$U"
ct_check_match "b holds it" "$(cs b "$U")" '; hit'
resp=$(curl -s -D - -X PURGE -H "$H" "http://127.0.0.1:$PA$U" | tr -d '\r')
ct_check_match "PURGE on a, queue full: 503" "$resp" '^HTTP/1.1 503'
ct_check_match "... with Retry-After" "$resp" $'\nRetry-After: 1\n'
ct_check_match "... and a body that says it was purged here only" "$resp" 'on this node only'
ct_check_match "... it was applied on a" "$(cs a "$U")" 'fwd=uri-miss'
ct_check "counted as refused, not as handed to the fan-out" \
    "$(metric a fleet_client_purges_refused) $(metric a fleet_client_purges)" "1 0"
# a second one (b's copy is still there: nothing went out)
get a "$U"
ct_check "a second PURGE: 503 too" \
    "$(curl -s -o /dev/null -w '%{http_code}' -X PURGE -H "$H" "http://127.0.0.1:$PA$U")" 503
ct_check "two refused" "$(metric a fleet_client_purges_refused)" 2
ct_check "logged once for the burst" "$(grep -c 'not sent to the other nodes' "$CT_TMP/nodea.err")" 1
ct_check "nothing published" "$(metric a fleet_purges_published) $(metric b fleet_purges_applied)" "0 0"
ct_check_match "b still has its copy" "$(cs b "$U")" '; hit'

# ---- a reload to the default queue: the next PURGE is fanned out again.
conf a 4096
kill -HUP "$(ct_pid nodea)"
in_use() { grep -q 'in use by every worker' "$CT_TMP/nodea.err"; }
ct_wait_until 30 in_use || ct_failed "a reloads"
ct_check "after the reload: PURGE on a: 404 (gone here), and fanned out" \
    "$(curl -s -o /dev/null -w '%{http_code}' -X PURGE -H "$H" "http://127.0.0.1:$PA$U")" 404
ct_wait_until 30 metric_is b fleet_purges_applied 1
ct_check "b applied it from the stream" "$(metric b fleet_purges_applied)" 1
ct_check_match "... its copy is gone" "$(cs b "$U")" 'fwd=uri-miss'
ct_check "the end of the burst is logged once" \
    "$(grep -c 'the PURGE queue takes them again (2 refused' "$CT_TMP/nodea.err")" 1
ct_done
