#!/usr/bin/env bash
# Issue 17, the fleet on a Redis Cluster of three masters started here: each
# cachet node is given a different cluster node, so at least two of them are
# redirected (MOVED) to the master of the fleet's slot ({cachet}); then
# membership and purge fan-out work as on a standalone Redis. Then the
# fleet's slot is migrated to another master: while it is (the keys moved,
# the old master answering ASK) each command goes once to the new one after
# ASKING and the links stay on the old master; at the migration's end its
# MOVED is followed.
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

# ---- the slot migrated (as redis-cli --cluster reshard does it) ----
SRC=${owner##*:}
for p in $R1 $R2 $R3; do [ "$p" != "$SRC" ] && { DST=$p; break; }; done
src_id=$(redis-cli -p "$SRC" cluster myid)
dst_id=$(redis-cli -p "$DST" cluster myid)
declare -A MOVED0=()
for n in a b c; do MOVED0[$n]=$(metric $n fleet_redis_redirects); done
redis-cli -p "$DST" cluster setslot "$slot" importing "$src_id" >/dev/null
redis-cli -p "$SRC" cluster setslot "$slot" migrating "$dst_id" >/dev/null
# a key the nodes write meanwhile is still the old master's until MIGRATE
# moves it; once moved, one missing there is ASKed, never made there again
for i in 1 2 3 4 5; do
    keys=$(redis-cli -p "$SRC" cluster getkeysinslot "$slot" 10)
    [ -z "$keys" ] && break
    # shellcheck disable=SC2086 # one word per key
    redis-cli -p "$SRC" migrate 127.0.0.1 "$DST" "" 0 5000 KEYS $keys >/dev/null
done
ct_check "the fleet's keys moved to the importing master" \
    "$(redis-cli -p "$SRC" cluster countkeysinslot "$slot")" 0
asked() { for n in a b c; do [ "$(metric $n fleet_redis_asks)" -gt 0 ] || return 1; done; }
ct_wait_until 30 asked || ct_failed "every node was asked (ASK)" \
    "asks $(metric a fleet_redis_asks) $(metric b fleet_redis_asks) $(metric c fleet_redis_asks)"
# at the importing master, only after ASKING (the slot is not its own yet)
asking() { printf 'ASKING\n%s\n' "$1" | redis-cli -p "$DST" | tail -n +2; }
scores() { asking "ZRANGE {cachet}:members 0 -1 WITHSCORES" | awk 'NR % 2 == 0' | tr '\n' ' '; }
s0=$(scores)
fresher() { local s; s=$(scores); [ "$s" != "$s0" ] && [ "$(echo "$s" | wc -w)" = 3 ]; }
ct_wait_until 30 fresher
ct_check "registrations refreshed on the importing master" "$(fresher && echo yes)" yes
names() { redis-cli -p "$1" client list | grep -o 'name=cachet-[^ ]*' | sort | tr '\n' ' '; }
ct_check "the links stay on the old master" "$(names "$SRC")" \
    "name=cachet-a-cmd name=cachet-a-stream name=cachet-b-cmd name=cachet-b-stream name=cachet-c-cmd name=cachet-c-stream "
ct_check_match "the ASKed commands went to the importing master" "$(names "$DST")" \
    "name=cachet-a-ask-cmd .*name=cachet-b-ask-cmd .*name=cachet-c-ask-cmd "
ct_check "no MOVED followed during the migration" \
    "$(metric a fleet_redis_redirects) $(metric b fleet_redis_redirects) $(metric c fleet_redis_redirects)" \
    "${MOVED0[a]} ${MOVED0[b]} ${MOVED0[c]}"
# the membership read: c stopped drops out of a's and b's view, then back
kill -STOP "$(ct_pid nodec)"
ct_wait_until 30 metric_is a fleet_members_live 2
ct_wait_until 30 metric_is b fleet_members_live 2
ct_check "c stopped: gone from a's and b's view (read through ASK)" \
    "$(metric a fleet_members_live) $(metric b fleet_members_live)" "2 2"
kill -CONT "$(ct_pid nodec)"
ct_wait_until 30 metric_is a fleet_members_live 3
ct_wait_until 30 metric_is b fleet_members_live 3
ct_check "c back in their view" "$(metric a fleet_members_live) $(metric b fleet_members_live)" "3 3"
curl -s -X POST "http://127.0.0.1:${ADMIN[a]}/purge?url=$(enc "http://fleet.test/gen?k=ask")" >/dev/null
ct_wait_until 30 metric_is b fleet_purges_applied 1
ct_wait_until 30 metric_is c fleet_purges_applied 2
ct_check "a purge on a reached b and c during the migration (stream through ASK)" \
    "$(metric a fleet_purges_published) $(metric b fleet_purges_applied) $(metric c fleet_purges_applied)" \
    "1 1 2"

# ---- the migration ends: the old master answers MOVED ----
for p in $DST $SRC $R1 $R2 $R3; do
    redis-cli -p "$p" cluster setslot "$slot" node "$dst_id" >/dev/null
done
followed() { for n in a b c; do [ "$(metric $n fleet_redis_redirects)" -gt "${MOVED0[$n]}" ] || return 1; done; }
ct_wait_until 30 followed
ct_check "every node followed the MOVED" "$(followed && echo yes)" yes
on_dst() { names "$DST" | grep -q "name=cachet-a-cmd .*name=cachet-b-cmd .*name=cachet-c-cmd "; }
ct_wait_until 30 on_dst
ct_check "the links are on the new master" "$(on_dst && echo yes)" yes
curl -s -X POST "http://127.0.0.1:${ADMIN[c]}/purge?url=$(enc "http://fleet.test/gen?k=moved")" >/dev/null
ct_wait_until 30 metric_is a fleet_purges_applied 2
ct_wait_until 30 metric_is b fleet_purges_applied 2
ct_check "a purge on c reached a and b after the migration" \
    "$(metric c fleet_purges_published) $(metric a fleet_purges_applied) $(metric b fleet_purges_applied)" \
    "1 2 2"
ct_done
