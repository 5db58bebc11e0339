#!/usr/bin/env bash
# Issue 17, the Sentinel a node is subscribed to (+switch-master) dies: the
# node asks the next Sentinel for the master at once and subscribes there,
# rather than retrying the dead one alone. A master, a replica and two
# Sentinels; node a subscribes at the first. That one is stopped, so it
# hears nothing of a failover forced through the second, then killed: a
# must learn the new master from the second Sentinel (it was never told of
# the switch) and move before the old master is demoted (no READONLY, no
# lost link), and stay subscribed at the second. Before all that, a's first
# Sentinel address is a stopped process (it accepts, never answers): a gives
# up on it after 4 s and asks the next.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 1
read -r RM RR S0 S1 S2 PA AA < <(ct_free_ports 7)
ct_start_replicated "$RM" "$RR"
ct_start_sentinel sen0 "$S0" "$RM"
kill -STOP "$(ct_pid sen0)"
ct_start_sentinel sen1 "$S1" "$RM"
ct_start_sentinel sen2 "$S2" "$RM"
declare -A PORT=([a]=$PA) ADMIN=([a]=$AA)
ct_fleet_start "redis = \"127.0.0.1:$S0\";
  redis_sentinels = [ \"127.0.0.1:$S1\", \"127.0.0.1:$S2\" ]; redis_sentinel = \"fl\";"
ct_fleet_probes
ct_wait_until 30 metric_is a fleet_redis_up 1 || ct_failed "a: Redis up"
ct_check "a gave up on the stopped Sentinel" \
    "$(grep -c "Sentinel 127.0.0.1:$S0 did not answer in 4 s: asking the next one" \
        "$CT_TMP/nodea.err")" 1
named() { redis-cli -p "$1" client list | grep -q "name=cachet-a-$2 "; }
ct_wait_until 30 named "$S1" sentinel-sub &&
    ct_pass "a subscribes at Sentinel 1 (the first that answers)" ||
    ct_failed "a subscribes at Sentinel 1 (the first that answers)"

kill -STOP "$(ct_pid sen1)"
ct_failover "$S2" "$RR"
ct_check "a, subscribed at the stopped Sentinel, still uses the old master" \
    "$(grep -c "names 127.0.0.1:$RR the master" "$CT_TMP/nodea.err")" 0

kill -KILL "$(ct_pid sen1)"
moved() { grep -q "Sentinel 127.0.0.1:$S2 names 127.0.0.1:$RR the master" "$CT_TMP/nodea.err"; }
ct_wait_until 60 moved && ct_pass "a asks Sentinel 2 at once: the new master" ||
    ct_failed "a asks Sentinel 2 at once: the new master"
ct_check "... having logged the subscribed Sentinel lost" \
    "$(grep -c "Sentinel 127.0.0.1:$S1 (subscribed to +switch-master) lost" "$CT_TMP/nodea.err")" 1
ct_wait_until 30 named "$RR" cmd && ct_pass "a's links are on the new master" ||
    ct_failed "a's links are on the new master"
ct_wait_until 30 named "$S2" sentinel-sub && ct_pass "a subscribes at Sentinel 2" ||
    ct_failed "a subscribes at Sentinel 2"
ct_wait_until 30 metric_is a fleet_redis_up 1 || ct_failed "a: Redis up on the new master"
demoted() { redis-cli -p "$RM" info replication | grep -q 'role:slave'; }
ct_wait_until 60 demoted || ct_failed "the old master is demoted"
ct_check "... before the old master was demoted (no READONLY, no lost link)" \
    "$(grep -c 'no longer the master\|Redis [0-9.]*:[0-9]* lost (' "$CT_TMP/nodea.err")" 0
ct_stop nodea
ct_check "a exits 0" "$?" 0
ct_done
