#!/usr/bin/env bash
# Issue 17, a client's PURGE that the fleet's queue refuses (fleet.purge_queue
# full): applied on the node it reached, but not sent to the others, so the
# client is told (503, Retry-After), it is counted and logged once per burst.
# A reload to a queue of 0 on node a makes every one refused; a reload back
# to the default makes the next one go through the stream again. Two cachet
# nodes, a standalone redis-server and one cachet-origin on loopback.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 2
read -r RP PA PB AA AB < <(ct_free_ports 5)
ct_start_redis "$RP"
declare -A PORT=([a]=$PA [b]=$PB) ADMIN=([a]=$AA [b]=$AB)
fleet() { echo "redis = \"127.0.0.1:$RP\"; mirror_ttl = \"1h\"; purge_queue = $1;"; }
ct_fleet_start "$(fleet 4096)"
ct_fleet_conf a "$(fleet 0)"
kill -HUP "$(ct_pid nodea)"
in_use() { [ "$(grep -c 'in use by every worker' "$CT_TMP/nodea.err")" -ge "$1" ]; }
ct_wait_until 30 in_use 1 || ct_failed "a reloads with purge_queue = 0"

ct_fleet_probes
get() { curl -s -o /dev/null -H "$H" "http://127.0.0.1:${PORT[$1]}$2"; }
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
ct_check "logged once for the burst" \
    "$(grep -c 'not sent to the other nodes' "$CT_TMP/nodea.err")" 1
ct_check "nothing published" \
    "$(metric a fleet_purges_published) $(metric b fleet_purges_applied)" "0 0"
ct_check_match "b still has its copy" "$(cs b "$U")" '; hit'

# ---- a reload to the default queue: the next PURGE is fanned out again.
ct_fleet_conf a "$(fleet 4096)"
kill -HUP "$(ct_pid nodea)"
ct_wait_until 30 in_use 2 || ct_failed "a reloads"
ct_check "after the reload: PURGE on a: 404 (gone here), and fanned out" \
    "$(curl -s -o /dev/null -w '%{http_code}' -X PURGE -H "$H" "http://127.0.0.1:$PA$U")" 404
ct_wait_until 30 metric_is b fleet_purges_applied 1
ct_check "b applied it from the stream" "$(metric b fleet_purges_applied)" 1
ct_check_match "... its copy is gone" "$(cs b "$U")" 'fwd=uri-miss'
ct_check "the end of the burst is logged once" \
    "$(grep -c 'the PURGE queue takes them again (2 refused' "$CT_TMP/nodea.err")" 1
ct_done
