#!/usr/bin/env bash
# Issue 17, the fleet with Redis (a standalone redis-server started here):
# three cachet nodes and one cachet-origin on loopback.
#   - membership: every node registers; a killed node's entry expires and
#     its keys re-home with no failed peer fetch;
#   - fan-out: a purge, a soft purge and a ban on one node are applied once
#     on the others (through the stream), timed;
#   - a node whose connections are cut catches up from its last id;
#   - Redis down: requests still served, purges go over HTTP to the members'
#     admin listeners (applied there, not sent on); Redis back: resumed,
#     and the members that have not registered again yet are kept live.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 2
# free ports: Redis, and each node's listener and admin (the member list
# names them all, so they cannot be port 0)
read -r RP PA PB PC AA AB AC < <(ct_free_ports 7)
start_redis() { ct_start_redis "$RP"; }
start_redis
R() { redis-cli -p "$RP" "$@"; }
declare -A PORT=([a]=$PA [b]=$PB [c]=$PC) ADMIN=([a]=$AA [b]=$AB [c]=$AC)
for n in a b c; do
    cat >"$CT_TMP/$n.conf" <<EOF2
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$n]}"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; };
admin = { listen = "127.0.0.1:${ADMIN[$n]}"; };
fleet = {
  self = "$n";
  members = ( { name = "a"; address = "127.0.0.1:$PA"; admin = "127.0.0.1:$AA"; },
              { name = "b"; address = "127.0.0.1:$PB"; admin = "127.0.0.1:$AB"; },
              { name = "c"; address = "127.0.0.1:$PC"; admin = "127.0.0.1:$AC"; } );
  redis = "127.0.0.1:$RP";
  register_ttl = "2s";
};
EOF2
    ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"
done
for n in a b c; do ct_wait_listen "node$n" admin >/dev/null || { ct_failed "node $n starts"; exit 1; }; done

ct_fleet_probes
get() { curl -s -o /dev/null -w '%{http_code}' -H "$H" "http://127.0.0.1:${PORT[$1]}$2"; }
enc() { /usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
purge() { curl -s -X POST "http://127.0.0.1:${ADMIN[$1]}/purge?$2"; }

# ---- membership: all three registered and seen by each.
for n in a b c; do
    ct_wait_until 30 metric_is "$n" fleet_redis_up 1 && ct_wait_until 30 metric_is "$n" fleet_members_live 3 ||
        ct_failed "node $n: Redis up, 3 live members" "up $(metric $n fleet_redis_up) live $(metric $n fleet_members_live)"
done
# the live gauge counts the configured members from the start (the settle
# window): read the set itself until all three registered
members_now() { R ZRANGE "{cachet}:members" 0 -1 | cut -d" " -f1 | sort | tr '\n' ' '; }
all_in() { [ "$(members_now)" = "a b c " ]; }
ct_wait_until 30 all_in
ct_check "the members' set in Redis" "$(members_now)" "a b c "

# ---- fan-out: an object on every node, purged on a, gone everywhere.
U="/gen?size=100&$MA&k=fan"
for n in a b c; do get "$n" "$U" >/dev/null; done
for n in a b c; do ct_check_match "node $n: a hit before the purge" "$(cs "$n" "$U")" 'hit'; done
t0=${EPOCHREALTIME/./}
ct_check_match "purge on a: applied there" "$(purge a "url=$(enc "http://fleet.test$U")")" '"purged":1'
ct_wait_until 30 metric_is b fleet_purges_applied 1
ct_wait_until 30 metric_is c fleet_purges_applied 1
t1=${EPOCHREALTIME/./}
ct_check "b and c applied it once" "$(metric b fleet_purges_applied) $(metric c fleet_purges_applied)" "1 1"
echo "     (purge on a applied on b and c within $(((t1 - t0) / 1000)) ms, polling every 10 ms)"
ct_check "a published one, applied none of its own" "$(metric a fleet_purges_published) $(metric a fleet_purges_applied)" "1 0"
for n in b c; do ct_check_match "node $n: a miss after the purge" "$(cs "$n" "$U")" 'fwd=uri-miss'; done

# ---- a ban and a soft purge go the same way.
ct_check_match "a ban on b" "$(curl -s -X POST --data-binary 'obj.url ^= "/gen?k=banme"' "http://127.0.0.1:$AB/ban")" '"id":1,'

ct_wait_until 30 metric_is a fleet_purges_applied 1
ct_wait_until 30 metric_is c fleet_purges_applied 2
ct_check "a ban on b reached a and c" "$(metric a fleet_purges_applied) $(metric c fleet_purges_applied)" "1 2"
purge c "url=$(enc "http://fleet.test$U")&soft=1" >/dev/null
ct_wait_until 30 metric_is a fleet_purges_applied 2
ct_wait_until 30 metric_is b fleet_purges_applied 2
ct_check "a soft purge on c reached a and b" "$(metric a fleet_purges_applied) $(metric b fleet_purges_applied)" "2 2"

# ---- catch-up: c's connections cut, a purge meanwhile, c reads it on reconnect.
e0=$(metric c fleet_redis_errors)
for id in $(R CLIENT LIST | awk '/name=cachet-c-/ { sub("id=", "", $1); print $1 }'); do R CLIENT KILL ID "$id" >/dev/null; done
purge a "url=$(enc "http://fleet.test/gen?k=whilecut")" >/dev/null
ct_wait_until 30 metric_is c fleet_purges_applied 3
ct_check "c lost its link, then applied what was sent meanwhile" \
    "$(($(metric c fleet_redis_errors) > e0)) $(metric c fleet_purges_applied)" "1 3"

# ---- Redis down: served on the last view, purges over HTTP.
ct_stop redis KILL
ct_wait_until 30 metric_is a fleet_redis_up 0
ct_check "Redis down: requests still served" "$(get a "/gen?size=10&$MA&k=down1") $(get b "/gen?size=10&$MA&k=down2")" "200 200"
U2="/gen?size=100&$MA&k=http"
for n in a b c; do get "$n" "$U2" >/dev/null; done
ct_check_match "b has it" "$(cs b "$U2")" 'hit'
purge a "url=$(enc "http://fleet.test$U2")" >/dev/null
ct_wait_until 30 metric_is a fleet_http_fanout 2
ct_check "Redis down: the purge went to both other admins over HTTP" "$(metric a fleet_http_fanout)" 2
miss_on() { ! cs "$1" "$U2" | grep -q hit; }
ct_wait_until 30 miss_on b && ct_pass "b applied it (no hit now)" || ct_failed "b applied it"
ct_check "b and c did not send it on (a hop-marked admin request)" \
    "$(metric b fleet_http_fanout) $(metric c fleet_http_fanout)" "0 0"

# ---- Redis back (empty: no persistence): every node reconnects and
# fan-out resumes. b is held (SIGSTOP) for the first 1.5 s, so it cannot
# register again: a must not drop it (nor c, which may register after a
# reads) from its view meanwhile, or their keys would move to a and be
# fetched from the origin a second time.
kill -STOP "$(ct_pid nodeb)"
start_redis
ct_wait_until 30 metric_is a fleet_redis_up 1
lo=3
end=$((${EPOCHREALTIME/./} + 1500000))
while ((${EPOCHREALTIME/./} < end)); do
    v=$(metric a fleet_members_live)
    ((v < lo)) && lo=$v
done
kill -CONT "$(ct_pid nodeb)"
ct_check "Redis back empty, b not registered again yet: a kept 3 members live (the lowest seen in 1.5 s)" "$lo" 3
for n in a b c; do ct_wait_until 30 metric_is "$n" fleet_redis_up 1 || ct_failed "node $n reconnected"; done
p0=$(metric b fleet_purges_applied)
purge a "url=$(enc "http://fleet.test/gen?k=after")" >/dev/null
ct_wait_until 30 metric_is b fleet_purges_applied $((p0 + 1))
ct_check "Redis back: fan-out through the stream again" "$(metric b fleet_purges_applied)" $((p0 + 1))

# ---- membership: b killed, its entry expires, its keys re-home at once.
ct_wait_until 30 metric_is a fleet_members_live 3
ct_stop nodeb KILL
ct_wait_until 30 metric_is a fleet_members_live 2 || ct_failed "a sees b gone"
d0=$(metric a fleet_owner_down)
codes=$(for i in $(seq 1 20); do get a "/gen?size=10&$MA&k=rehome$i"; echo; done | sort | uniq -c | sed 's/^ *//')
ct_check "b expired: 20 new keys on a, all 200" "$codes" "20 200"
ct_check "... with no failed peer fetch (b's keys went to a or c)" "$(($(metric a fleet_owner_down) - d0))" 0
ct_done
