#!/usr/bin/env bash
# Issue 17, the fleet on a Redis Cluster of three masters started here: each
# cachet node is given a different cluster node, so at least two of them are
# redirected (MOVED) to the master of the fleet's slot ({cachet}); then
# membership and purge fan-out work as on a standalone Redis.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 1
# (each Redis node's cluster bus gets a free port of its own: the default,
# port + 10000, is past 65535 for the high ephemeral ports)
read -r R1 R2 R3 PA PB PC B1 B2 B3 < <(ct_free_ports 9)
declare -A BUS=([$R1]=$B1 [$R2]=$B2 [$R3]=$B3)
for p in $R1 $R2 $R3; do
    mkdir -p "$CT_TMP/r$p"
    ct_start "redis$p" sh -c "cd $CT_TMP/r$p && exec redis-server --port $p --bind 127.0.0.1 --save '' --appendonly no --cluster-enabled yes --cluster-port ${BUS[$p]} --cluster-config-file nodes.conf --cluster-node-timeout 5000"
done
for p in $R1 $R2 $R3; do
    ct_wait_until 30 sh -c "redis-cli -p $p ping 2>/dev/null | grep -q PONG" || { ct_failed "redis $p starts"; exit 1; }
done
redis-cli --cluster create "127.0.0.1:$R1" "127.0.0.1:$R2" "127.0.0.1:$R3" --cluster-replicas 0 \
    --cluster-yes >"$CT_TMP/create.out" 2>&1 || { ct_failed "cluster create" "$(cat "$CT_TMP/create.out")"; exit 1; }
cluster_ok() { for p in $R1 $R2 $R3; do redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || return 1; done; }
ct_wait_until 60 cluster_ok || { ct_failed "cluster state ok"; exit 1; }
ct_pass "a 3-master cluster"

declare -A PORT=([a]=$PA [b]=$PB [c]=$PC) SEED=([a]=$R1 [b]=$R2 [c]=$R3) ADMIN=()
for n in a b c; do
    cat >"$CT_TMP/$n.conf" <<EOF2
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$n]}"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "16M"; };
admin = { listen = "127.0.0.1:0"; };
fleet = {
  self = "$n";
  members = ( { name = "a"; address = "127.0.0.1:$PA"; },
              { name = "b"; address = "127.0.0.1:$PB"; },
              { name = "c"; address = "127.0.0.1:$PC"; } );
  redis = "127.0.0.1:${SEED[$n]}";
  register_ttl = "3s";
};
EOF2
    ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"
    ADMIN[$n]=$(ct_wait_listen "node$n" admin) || { ct_failed "node $n starts"; exit 1; }
done
metric() { ct_metric "${ADMIN[$1]}" "cachet_$2"; }
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
for n in a b c; do
    ct_wait_until 60 metric_is "$n" fleet_members_live 3 ||
        ct_failed "node $n sees 3 live members" "live $(metric $n fleet_members_live)"
done
red=$(($(metric a fleet_redis_redirects) > 0 ? 1 : 0))
red=$((red + ($(metric b fleet_redis_redirects) > 0 ? 1 : 0) + ($(metric c fleet_redis_redirects) > 0 ? 1 : 0)))
ct_check "two of the three nodes were redirected to the slot's master" "$red" 2
slot=$(redis-cli -p "$R1" cluster keyslot "{cachet}:members")
owner=$(redis-cli -c -p "$R1" cluster nodes | awk -v s="$slot" '{ for (i = 9; i <= NF; i++) { split($i, r, "-"); if (s >= r[1] && s <= (r[2] == "" ? r[1] : r[2])) { sub("@.*", "", $2); print $2 } } }')
# the live gauge counts the configured members from the start (the settle
# window): read the set itself until all three registered
members_now() { redis-cli -h "${owner%:*}" -p "${owner##*:}" ZRANGE "{cachet}:members" 0 -1 | cut -d" " -f1 | sort | tr '\n' ' '; }
all_in() { [ "$(members_now)" = "a b c " ]; }
ct_wait_until 30 all_in
ct_check "the members' set on that master" "$(members_now)" "a b c "
enc() { /usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
curl -s -X POST "http://127.0.0.1:${ADMIN[b]}/purge?url=$(enc "http://fleet.test/gen?k=cluster")" >/dev/null
ct_wait_until 30 metric_is a fleet_purges_applied 1
ct_wait_until 30 metric_is c fleet_purges_applied 1
ct_check "a purge on b reached a and c through the cluster" \
    "$(metric b fleet_purges_published) $(metric a fleet_purges_applied) $(metric c fleet_purges_applied)" "1 1 1"
ct_done
