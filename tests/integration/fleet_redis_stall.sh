#!/usr/bin/env bash
# Issue 17, a stalled Redis (SIGSTOP: the link stays up, nothing answers, no
# error): a purge published while Redis does not answer reaches the other
# node over HTTP once it has waited 2 s for its XADD, counted
# (fleet_redis_slow_publishes), and past 1024 unanswered XADDs a purge goes
# over HTTP alone (memory bounded); when Redis runs again the XADDs are answered
# and the other node applies it from the stream as well (the same purge
# twice is one purge). A second, longer stall: the registrations and
# membership reads wait one of each kind at most (the next ones skipped,
# counted: fleet_redis_skipped), and one unanswered for register_ttl gets
# both links dropped and made again, as for a lost Redis (fleet_redis_stalls,
# logged); Redis's own ZADD count shows how few were sent meanwhile. Two
# cachet nodes, a standalone redis-server and one cachet-origin on loopback.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 2
read -r RP PA PB AA AB < <(ct_free_ports 5)
ct_start_redis "$RP"
declare -A PORT=([a]=$PA [b]=$PB) ADMIN=([a]=$AA [b]=$AB)
# register_ttl 20 s: the first stall (about 6 s) stays under the stall
# bound, so its XADDs wait on their link; a registration every 6.7 s
ct_fleet_start "redis = \"127.0.0.1:$RP\"; mirror_ttl = \"1h\"; register_ttl = \"20s\";"

ct_fleet_probes
metric_ge() { [ "$(metric "$1" "$2")" -ge "$3" ]; }
get() { curl -s -o /dev/null -H "$H" "http://127.0.0.1:${PORT[$1]}$2"; }
for n in a b; do
    ct_wait_until 30 metric_is "$n" fleet_redis_up 1 || ct_failed "node $n: Redis up"
done

U="/gen?size=100&$MA&k=stall1"
EU="http%3A%2F%2Ffleet.test%2Fgen%3Fsize%3D100%26cache-control%3Dmax-age%253D3600%26k%3Dstall1"
get a "$U"
get b "$U"
ct_check_match "b holds it" "$(cs b "$U")" '; hit'

kill -STOP "$(ct_pid redis)"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$AA/purge?url=$EU")
ct_check "a purges it while Redis is stalled: 200" "$code" 200
ct_wait_until 60 metric_ge a fleet_redis_slow_publishes 1 ||
    ct_failed "a counts the unanswered XADD as slow"
ct_wait_until 60 metric_ge a fleet_http_fanout 1 || ct_failed "a sends it over HTTP"
ct_check "... counted once" "$(metric a fleet_redis_slow_publishes)" 1
# each GET of a copy not yet purged is a hit; the first after the purge
# arrived is a miss (and stores it again)
gone_on_b() { [[ "$(cs b "$U")" == *fwd=uri-miss* ]]; }
ct_wait_until 60 gone_on_b && ct_pass "b's copy is gone while Redis is stalled" ||
    ct_failed "b's copy is gone while Redis is stalled"
ct_check "b applied nothing from the stream yet" "$(metric b fleet_purges_applied)" 0
ct_check "a still counts Redis as up (no error, only silence)" "$(metric a fleet_redis_up)" 1
# 1100 more purges while it is stalled: 1023 wait for Redis beside the
# first (1024 unanswered at most), the other 77 go over HTTP at once; in
# the end every one went over HTTP
urls=()
for ((i = 0; i < 1100; i++)); do
    urls+=("http://127.0.0.1:$AA/purge?url=http%3A%2F%2Ffleet.test%2Fbulk$i")
done
curl -s -o /dev/null -X POST "${urls[@]}"
ct_wait_until 120 metric_is a fleet_redis_slow_publishes 1101 &&
    ct_pass "all 1101 purges went over HTTP" ||
    ct_failed "all 1101 purges went over HTTP" "$(metric a fleet_redis_slow_publishes)"
ct_check "... 1024 of them sent to Redis, no more" "$(metric a fleet_purges_published)" 1024

kill -CONT "$(ct_pid redis)"
ct_wait_until 120 metric_is b fleet_purges_applied 1024 &&
    ct_pass "b applies the 1024 entries from the stream once Redis answers" ||
    ct_failed "b applies the 1024 entries from the stream once Redis answers" \
        "$(metric b fleet_purges_applied)"
ct_check "a published 1024 entries" "$(metric a fleet_purges_published)" 1024
ct_check_match "... which purged b's new copy" "$(cs b "$U")" 'fwd=uri-miss'
ct_check_match "... and b serves the URL again" "$(cs b "$U")" '; hit'

# the second stall: without the bound, each node would queue a registration
# and a membership read every 6.7 s for as long as it lasts
zadds() { redis-cli -p "$RP" info commandstats | sed -n 's/^cmdstat_zadd:calls=\([0-9]*\),.*/\1/p'; }
z0=$(zadds)
k0=$(metric a fleet_redis_skipped)
ct_check "no stall counted yet" "$(metric a fleet_redis_stalls)" 0
kill -STOP "$(ct_pid redis)"
ct_wait_until 120 metric_ge a fleet_redis_stalls 1 &&
    ct_pass "a drops the stalled links (no answer for register_ttl)" ||
    ct_failed "a drops the stalled links (no answer for register_ttl)"
ct_wait_until 60 metric_ge b fleet_redis_stalls 1 || ct_failed "b drops the stalled links"
# two periods at least passed with the registration unanswered: both kinds skipped twice
k1=$(metric a fleet_redis_skipped)
[ $((k1 - k0)) -ge 4 ] && ct_pass "a skipped registrations and reads meanwhile ($((k1 - k0)))" ||
    ct_failed "a skipped registrations and reads meanwhile" "$k0 -> $k1"
ct_check_match "a logs the stall" "$(cat "$CT_TMP/nodea.err")" \
    "Redis 127.0.0.1:$RP lost \(stalled: no answer for 20 s\)"
sa=$(metric a fleet_redis_stalls) sb=$(metric b fleet_redis_stalls)
kill -CONT "$(ct_pid redis)"
ct_wait_until 30 sh -c "redis-cli -p $RP ping | grep -q PONG" || ct_failed "Redis answers again"
z1=$(zadds)
# one registration per link made during the stall (the first and one after
# each drop), plus one fresh round per node in case a period ended since
max=$((1 + sa + 1 + sb + 2))
[ $((z1 - z0)) -le $max ] &&
    ct_pass "ZADDs sent during the stall: $((z1 - z0)) (at most $max)" ||
    ct_failed "ZADDs sent during the stall: at most $max" "$((z1 - z0))"
for n in a b; do
    ct_wait_until 60 metric_is "$n" fleet_redis_up 1 || ct_failed "node $n: Redis up again"
done
get a "$U"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$AA/purge?url=$EU")
ct_check "a purges once Redis answers again: 200" "$code" 200
ct_wait_until 60 metric_is b fleet_purges_applied 1025 &&
    ct_pass "... through the stream on the new links" ||
    ct_failed "... through the stream on the new links" "$(metric b fleet_purges_applied)"

# nothing left waiting, nothing leaked (a sanitizer's exit status)
ct_stop nodea
ct_check "a exits 0" "$?" 0
ct_stop nodeb
ct_check "b exits 0" "$?" 0
ct_done
