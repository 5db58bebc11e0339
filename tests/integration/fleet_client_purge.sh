#!/usr/bin/env bash
# Issue 17, a client's PURGE request (cache.purge_allow) in a fleet: applied
# on the node it reached, then fanned out like the admin's purges, through
# the Redis stream (each node applies it once) and, while Redis is down,
# over HTTP to the members' admin listeners. Three cachet nodes, a
# standalone redis-server and one cachet-origin on loopback.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 2
read -r RP PA PB PC AA AB AC < <(ct_free_ports 7)
start_redis() { ct_start_redis "$RP"; }
start_redis
declare -A PORT=([a]=$PA [b]=$PB [c]=$PC) ADMIN=([a]=$AA [b]=$AB [c]=$AC)
# mirror_ttl 1h: the edges keep their copies, so each node's own copy shows
# whether the purge reached it
ct_fleet_start "redis = \"127.0.0.1:$RP\"; mirror_ttl = \"1h\";"

ct_fleet_probes
get() { curl -s -o /dev/null -w '%{http_code}' -H "$H" "http://127.0.0.1:${PORT[$1]}$2"; }
cpurge() { curl -s -o /dev/null -w '%{http_code}' -X PURGE -H "$H" "${@:3}" "http://127.0.0.1:${PORT[$1]}$2"; }
on_all() { local n; for n in a b c; do get "$n" "$1" >/dev/null; done; }
hit_on() { cs "$1" "$2" | grep -q '; hit'; }
miss_on() { ! hit_on "$1" "$2"; }

for n in a b c; do
    ct_wait_until 30 metric_is "$n" fleet_redis_up 1 || ct_failed "node $n: Redis up"
done

# ---- a client's PURGE on a: applied there, then on b and c, once.
U="/gen?size=100&$MA&k=cp1"
on_all "$U"
for n in a b c; do ct_check_match "node $n: a hit before the PURGE" "$(cs "$n" "$U")" '; hit'; done
ct_check "PURGE on a: 200" "$(cpurge a "$U")" 200
ct_wait_until 30 metric_is b fleet_purges_applied 1
ct_wait_until 30 metric_is c fleet_purges_applied 1
ct_check "b and c applied it once (from the stream)" \
    "$(metric b fleet_purges_applied) $(metric c fleet_purges_applied)" "1 1"
ct_check "a handed one to the fan-out and published it" \
    "$(metric a fleet_client_purges) $(metric a fleet_purges_published) $(metric a fleet_purges_applied)" "1 1 0"
for n in b c; do ct_check_match "node $n: gone after a's PURGE" "$(cs "$n" "$U")" 'fwd=uri-miss'; done

# ---- a soft PURGE (Soft-Purge: 1) on b: stale everywhere, not gone.
U2="/gen?size=100&$MA&k=cp2"
on_all "$U2"
ct_check "soft PURGE on b: 200" "$(cpurge b "$U2" -H 'Soft-Purge: 1')" 200
ct_wait_until 30 metric_is a fleet_purges_applied 1
ct_wait_until 30 metric_is c fleet_purges_applied 2
ct_check_match "a: its copy is not a hit now (soft-purged: fetched again)" "$(cs a "$U2")" '^cachet; fwd='

# ---- a PURGE of what this node does not hold (404 here) still fans out.
U3="/gen?size=100&$MA&k=cp3"
get c "$U3" >/dev/null
ct_check "PURGE on a of an object only b and c hold: 404 on a" "$(cpurge a "$U3")" 404
ct_wait_until 30 metric_is c fleet_purges_applied 3
ct_wait_until 10 miss_on c "$U3" && ct_pass "... gone on c" || ct_failed "... gone on c"

# ---- Redis down: the PURGE goes to the other admins over HTTP.
ct_stop redis KILL
ct_wait_until 30 metric_is a fleet_redis_up 0
U4="/gen?size=100&$MA&k=cp4"
on_all "$U4"
ct_check_match "b holds it" "$(cs b "$U4")" '; hit'
f0=$(metric a fleet_http_fanout)
ct_check "Redis down: PURGE on a: 200" "$(cpurge a "$U4")" 200
ct_wait_until 30 metric_is a fleet_http_fanout $((f0 + 2))
ct_check "... sent to both other admins over HTTP" "$(($(metric a fleet_http_fanout) - f0))" 2
ct_wait_until 30 miss_on b "$U4" && ct_pass "... b applied it" || ct_failed "... b applied it"
ct_wait_until 30 miss_on c "$U4" && ct_pass "... c applied it" || ct_failed "... c applied it"
ct_check "b and c did not send it on" "$(metric b fleet_http_fanout) $(metric c fleet_http_fanout)" "0 0"

# ---- a PURGE from a peer (trusted hop header) is not sent on again.
start_redis
for n in a b c; do ct_wait_until 30 metric_is "$n" fleet_redis_up 1 || ct_failed "node $n reconnected"; done
k0=$(metric a fleet_client_purges)
cpurge a "/gen?k=hop" -H 'Cachet-Fleet-Hop: 1' >/dev/null
ct_check "a hop-marked PURGE is this node's only" "$(($(metric a fleet_client_purges) - k0))" 0
p0=$(metric b fleet_purges_applied)
cpurge c "$U" >/dev/null
ct_wait_until 30 metric_is b fleet_purges_applied $((p0 + 1))
ct_check "Redis back: a client PURGE goes through the stream again" "$(metric b fleet_purges_applied)" $((p0 + 1))
ct_done
