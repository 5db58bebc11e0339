#!/usr/bin/env bash
# Issue 17, the Sentinel a node is subscribed to (+switch-master) dies or
# stalls: the node asks the next Sentinel for the master at once and
# subscribes there, rather than waiting on that one alone. A master, a
# replica and three Sentinels after a stopped one. Node a gives up on the
# stopped first one after 4 s (it accepts, never answers) and subscribes at
# Sentinel 1. That one is killed: a asks Sentinel 2 at once and subscribes
# there. Sentinel 2 is stopped (SIGSTOP: its links up, nothing answered, so
# the subscription alone would hear nothing) and a failover forced through
# Sentinel 3: a, asking its subscribed Sentinel again every register_ttl / 3,
# finds it silent for 4 s, drops that subscription, asks Sentinel 3 and
# moves to the promoted replica before the old master is demoted (no
# READONLY, no lost link), where its purges land.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 1
read -r RM RR S0 S1 S2 S3 PA AA < <(ct_free_ports 8)
ct_start_replicated "$RM" "$RR"
ct_start_sentinel sen0 "$S0" "$RM"
kill -STOP "$(ct_pid sen0)"
ct_start_sentinel sen1 "$S1" "$RM"
ct_start_sentinel sen2 "$S2" "$RM"
ct_start_sentinel sen3 "$S3" "$RM"
declare -A PORT=([a]=$PA) ADMIN=([a]=$AA)
ct_fleet_start "redis = \"127.0.0.1:$S0\";
  redis_sentinels = [ \"127.0.0.1:$S1\", \"127.0.0.1:$S2\", \"127.0.0.1:$S3\" ];
  redis_sentinel = \"fl\";"
ct_fleet_probes
ct_wait_until 30 metric_is a fleet_redis_up 1 || ct_failed "a: Redis up"
ct_check "a gave up on the stopped Sentinel" \
    "$(grep -c "Sentinel 127.0.0.1:$S0 did not answer in 4 s: asking the next one" \
        "$CT_TMP/nodea.err")" 1
named() { redis-cli -p "$1" client list | grep -q "name=cachet-a-$2 "; }
ct_wait_until 30 named "$S1" sentinel-sub &&
    ct_pass "a subscribes at Sentinel 1 (the first that answers)" ||
    ct_failed "a subscribes at Sentinel 1 (the first that answers)"

kill -KILL "$(ct_pid sen1)"
lost() { grep -q "Sentinel 127.0.0.1:$S1 (subscribed to +switch-master) lost" "$CT_TMP/nodea.err"; }
ct_wait_until 30 lost && ct_pass "a logs the subscribed Sentinel lost" ||
    ct_failed "a logs the subscribed Sentinel lost"
ct_wait_until 30 named "$S2" sentinel-sub && ct_pass "... and subscribes at Sentinel 2" ||
    ct_failed "... and subscribes at Sentinel 2"

kill -STOP "$(ct_pid sen2)"
ct_failover "$S3" "$RR"
moved="a, subscribed at a stopped Sentinel, moves to the new master"
ct_wait_until 60 named "$RR" cmd && ct_pass "$moved" || ct_failed "$moved"
ct_check "... having given up on it (logged)" \
    "$(grep -c "Sentinel 127.0.0.1:$S2 (subscribed to +switch-master) did not answer in 4 s" \
        "$CT_TMP/nodea.err")" 1
ct_check "... and counted" "$(metric a fleet_redis_sentinel_stalls)" 1
ct_wait_until 30 named "$S3" sentinel-sub && ct_pass "a subscribes at Sentinel 3" ||
    ct_failed "a subscribes at Sentinel 3"
ct_wait_until 30 metric_is a fleet_redis_up 1 || ct_failed "a: Redis up on the new master"
curl -s -X POST "http://127.0.0.1:$AA/purge?url=http%3A%2F%2Ffleet.test%2Fgen%3Fk%3Done" >/dev/null
landed() { [ "$(redis-cli -p "$RR" xlen '{cachet}:purges')" -ge 1 ]; }
ct_wait_until 30 landed && ct_pass "a's purge lands on the new master" ||
    ct_failed "a's purge lands on the new master"
demoted() { redis-cli -p "$RM" info replication | grep -q 'role:slave'; }
ct_wait_until 60 demoted || ct_failed "the old master is demoted"
ct_check "... before the old master was demoted (no READONLY, no lost link)" \
    "$(grep -c 'no longer the master\|Redis [0-9.]*:[0-9]* lost (' "$CT_TMP/nodea.err")" 0
ct_check "a published its purges, none over HTTP for want of Redis" \
    "$(metric a fleet_purges_published)" 1
kill -CONT "$(ct_pid sen0)" "$(ct_pid sen2)"
ct_stop nodea
ct_check "a exits 0" "$?" 0
ct_done
