#!/usr/bin/env bash
# Issue 17, the fleet behind Redis Sentinel: a master, a replica and one
# Sentinel started here. Two cachet nodes ask the Sentinel for the master
# (node a has a dead Sentinel address first, fleet.redis_sentinels next;
# node b one it has no route to, refused by connect(2) itself),
# fan a purge out through it; after a forced failover (the replica promoted)
# they move at its +switch-master, before the old master is demoted, and
# fan-out goes on.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 1
read -r RM RR RS PA PB DEAD < <(ct_free_ports 6)
ct_start_replicated "$RM" "$RR"
ct_start_sentinel sentinel "$RS" "$RM"
# node a is given a dead Sentinel first (nothing listens on DEAD), the
# live one second (fleet.redis_sentinels): it must go on to the next; node
# b's first fails at once (255.255.255.255: ENETUNREACH, no callback)
declare -A PORT=([a]=$PA [b]=$PB) ADMIN=() SEN=([a]="redis = \"127.0.0.1:$DEAD\"; redis_sentinels = [ \"127.0.0.1:$RS\" ];" [b]="redis = \"255.255.255.255:$DEAD\"; redis_sentinels = [ \"127.0.0.1:$RS\" ];")
for n in a b; do
    cat >"$CT_TMP/$n.conf" <<EOF2
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$n]}"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "16M"; };
admin = { listen = "127.0.0.1:0"; };
fleet = {
  self = "$n";
  members = ( { name = "a"; address = "127.0.0.1:$PA"; }, { name = "b"; address = "127.0.0.1:$PB"; } );
  ${SEN[$n]}
  redis_sentinel = "fl";
};
EOF2
    ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"
    ADMIN[$n]=$(ct_wait_listen "node$n" admin) || { ct_failed "node $n starts"; exit 1; }
done
metric() { ct_metric "${ADMIN[$1]}" "cachet_$2"; }
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
enc() { /usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
purge() { curl -s -X POST "http://127.0.0.1:${ADMIN[$1]}/purge?url=$(enc "http://fleet.test/gen?k=$2")" >/dev/null; }
for n in a b; do ct_wait_until 30 metric_is "$n" fleet_members_live 2 || ct_failed "node $n: 2 live members"; done
ct_wait_until 30 metric_is a fleet_redis_up 1 || ct_failed "a: Redis up"
ct_check_match "a found the dead Sentinel first, then asked the next" \
    "$(grep -o 'Sentinel 127.0.0.1:[0-9]* unreachable\|Sentinel 127.0.0.1:[0-9]* names' "$CT_TMP/nodea.err" | head -2 | tr '\n' ' ')" \
    "^Sentinel 127.0.0.1:$DEAD unreachable Sentinel 127.0.0.1:$RS names $"
ct_wait_until 30 metric_is b fleet_redis_up 1 || ct_failed "b: Redis up"
ct_check_match "b's first Sentinel has no route: b went on to the next" \
    "$(grep -o 'Sentinel [0-9.]*:[0-9]* unreachable\|Sentinel 127.0.0.1:[0-9]* names' "$CT_TMP/nodeb.err" | head -2 | tr '\n' ' ')" \
    "^Sentinel 255.255.255.255:$DEAD unreachable Sentinel 127.0.0.1:$RS names $"
ct_check_match "a asked the Sentinel and uses the master" "$(cat "$CT_TMP/nodea.err")" "Sentinel 127.0.0.1:$RS names 127.0.0.1:$RM the master"
purge a one
ct_wait_until 30 metric_is b fleet_purges_applied 1
ct_check "a purge on a reached b through the master" "$(metric b fleet_purges_applied)" 1

ct_failover "$RS" "$RR"
# the nodes hear the Sentinel's +switch-master and move to the new master
# (the old one is demoted ~10 s later: a node still on it then would be
# dropped, "lost")
onnew() { grep -q "+switch-master of \"fl\" to 127.0.0.1:$RR" "$CT_TMP/node$1.err"; }
ct_wait_until 60 onnew a && ct_wait_until 60 onnew b && ct_pass "both nodes moved to the new master" ||
    ct_failed "both nodes moved to the new master"
demoted() { redis-cli -p "$RM" info replication | grep -q 'role:slave'; }
ct_wait_until 60 demoted || ct_failed "the old master is demoted"
ct_check "... before the old master was demoted (it dropped neither)" \
    "$(cat "$CT_TMP/nodea.err" "$CT_TMP/nodeb.err" | grep -c 'lost (')" 0
ct_wait_until 30 metric_is a fleet_redis_up 1 || ct_failed "a: Redis up on the new master"
ct_wait_until 30 metric_is b fleet_redis_up 1 || ct_failed "b: Redis up on the new master"
purge a two
ct_wait_until 30 metric_is b fleet_purges_applied 2
ct_check "after the failover, a purge on a reached b" "$(metric b fleet_purges_applied)" 2
ct_done
