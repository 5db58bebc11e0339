#!/usr/bin/env bash
# Issue 17, members learned through Redis (fleet.learn_members): a and b are
# configured with each other; c, started later, lists only itself. Each
# node registers its name and addresses in Redis, so:
#   - a and b learn c (and c learns them): 3 live members on each;
#   - a cold key owned by c, asked on a, is fetched from c (one origin
#     request for the fleet), then on b from c too (no second one);
#   - a SIGHUP of a's file keeps c (no membership reload follows it);
#   - Redis down: purges go over HTTP to the learned member too; Redis back
#     (empty): c is kept through the settle window, no reload;
#   - c killed: its entry expires, a and b drop it and its keys re-home
#     with no failed peer fetch;
#   - with learn_members = false on a, c is never used by a.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 2
read -r RP PA PB PC AA AB AC < <(ct_free_ports 7)
ct_start_redis "$RP"
declare -A PORT=([a]=$PA [b]=$PB [c]=$PC) ADMIN=([a]=$AA [b]=$AB [c]=$AC)
member() { echo "{ name = \"$1\"; address = \"127.0.0.1:${PORT[$1]}\"; admin = \"127.0.0.1:${ADMIN[$1]}\"; }"; }
conf() { # NODE MEMBERS EXTRA
    cat >"$CT_TMP/$1.conf" <<EOF2
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$1]}"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; };
admin = { listen = "127.0.0.1:${ADMIN[$1]}"; };
fleet = {
  self = "$1";
  members = ( $2 );
  redis = "127.0.0.1:$RP";
  register_ttl = "2s";
  ${3:-}
};
EOF2
}
conf a "$(member a), $(member b)"
conf b "$(member a), $(member b)"
conf c "$(member c)"
for n in a b; do ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"; done
for n in a b; do ct_wait_listen "node$n" admin >/dev/null || { ct_failed "node $n starts"; exit 1; }; done

metric() { ct_metric "${ADMIN[$1]}" "cachet_$2"; }
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
H="Host: fleet.test"
get() { curl -s -o /dev/null -w '%{http_code}' -H "$H" "http://127.0.0.1:${PORT[$1]}$2"; }
MA='cache-control=max-age%3D3600'
origin_count() { ct_origin_total "$OPORT"; }
learned_reloads() { grep -c "fleet: membership changed in Redis" "$CT_TMP/node$1.err"; }

for n in a b; do
    ct_wait_until 30 metric_is "$n" fleet_members_live 2 || ct_failed "node $n: 2 live members"
done
ct_check "registered with its addresses" "$(redis-cli -p "$RP" ZSCORE '{cachet}:members' "a 127.0.0.1:$PA 127.0.0.1:$AA" | grep -c .)" 1

# ---- c starts, listed by nobody but itself: a and b learn it, it learns them.
ct_start nodec "$CT_BIN/cachet" -c "$CT_TMP/c.conf"
ct_wait_listen nodec admin >/dev/null || { ct_failed "node c starts"; exit 1; }
for n in a b c; do
    ct_wait_until 30 metric_is "$n" fleet_members_live 3 ||
        ct_failed "node $n: c joined, 3 live members" "live $(metric $n fleet_members_live)"
done
ct_check "a and b each reloaded once for c" "$(learned_reloads a) $(learned_reloads b)" "1 1"
ct_check_match "a has the peer group fleet:c" "$(curl -s "http://127.0.0.1:$AA/metrics" | grep -c 'backend="fleet:c"')" '^[1-9]'

# ---- a cold key owned by c, asked on a: fetched from c, one origin request.
UC=
for ((i = 0; i < 64; i++)); do
    u="/gen?size=100&$MA&k=c$i"
    ct_origin_reset "$OPORT"
    h0=$(metric c fleet_hop_requests)
    get a "$u" >/dev/null
    if [ "$(metric c fleet_hop_requests)" -gt "$h0" ]; then UC=$u; break; fi
done
[ -n "$UC" ] || ct_failed "some key of 64 is c's, as a sees it"
ct_check "a's miss on c's key: one origin request (c's)" "$(origin_count)" 1
p0=$(metric b fleet_peer_fetches)
ct_check "the same key on b: 200" "$(get b "$UC")" 200
ct_check "... fetched from c, no second origin request" "$(($(metric b fleet_peer_fetches) - p0)) $(origin_count)" "1 1"

# ---- a SIGHUP of a's file (which does not list c) keeps c.
r0=$(metric a reloads)
kill -HUP "$(ct_pid nodea)"
ct_wait_until 30 sh -c "[ \$(curl -s http://127.0.0.1:$AA/metrics | awk '/^cachet_reloads_total\{result=\"ok\"\}/ {print \$2}') -gt $r0 ]" ||
    ct_failed "a's SIGHUP applied"
# generation 1 was c's learning, 2 this SIGHUP
ct_wait_until 30 grep -q "configuration 2 from .* in use by every worker" "$CT_TMP/nodea.err" ||
    ct_failed "a's SIGHUP in use by every worker"
# three membership reads (every register_ttl / 3): none may find c missing
end=$((${EPOCHREALTIME/./} + 2500000))
lo=3
while ((${EPOCHREALTIME/./} < end)); do
    v=$(metric a fleet_members_live)
    ((v < lo)) && lo=$v
done
ct_check "after the SIGHUP: c still a member of a (lowest live count in 2.5 s; no learning reload)" \
    "$lo $(learned_reloads a)" "3 1"

# ---- Redis down: purges go over HTTP to the members in force, learned
# ones included (a's to b and c, c's to a and b), and are answered.
ct_stop redis KILL
for n in a c; do ct_wait_until 30 metric_is "$n" fleet_redis_up 0 || ct_failed "node $n: Redis down"; done
purge() { curl -s -X POST "http://127.0.0.1:${ADMIN[$1]}/purge?url=$2"; }
purge a "http%3A%2F%2Ffleet.test%2Fgen%3Fk%3Dx1" >/dev/null
purge c "http%3A%2F%2Ffleet.test%2Fgen%3Fk%3Dx2" >/dev/null
ct_wait_until 30 metric_is a fleet_http_fanout 2
ct_wait_until 30 metric_is c fleet_http_fanout 2
ct_check "Redis down: a's purge sent to b and c, c's to a and b, over HTTP" \
    "$(metric a fleet_http_fanout) $(metric c fleet_http_fanout) $(metric c fleet_fanout_unsent)" "2 2 0"
for n in a c; do ct_wait_until 30 metric_is "$n" fleet_fanout_waiting 0 || ct_failed "$n: acknowledged"; done
ct_check "... each acknowledged at once, none failed" \
    "$(metric a fleet_fanout_retries) $(metric c fleet_fanout_retries)" "0 0"
ct_start_redis "$RP"
for n in a b c; do ct_wait_until 30 metric_is "$n" fleet_redis_up 1 || ct_failed "node $n: Redis back"; done
in_set() { redis-cli -p "$RP" ZRANGE '{cachet}:members' 0 -1 | cut -d" " -f1 | sort | tr '\n' ' '; }
ct_wait_until 30 sh -c "[ \"\$(redis-cli -p $RP ZRANGE '{cachet}:members' 0 -1 | cut -d' ' -f1 | sort | tr '\n' ' ')\" = 'a b c ' ]" ||
    ct_failed "all three registered again" "$(in_set)"
ct_check "Redis back: no learning reload on a (c kept through the settle window)" "$(learned_reloads a)" 1

# ---- c killed: it expires from a's and b's views, its keys re-home.
ct_stop nodec KILL
for n in a b; do
    ct_wait_until 30 metric_is "$n" fleet_members_live 2 || ct_failed "node $n: c expired"
done
for n in a b; do
    ct_wait_until 30 sh -c "[ \$(grep -c 'fleet: membership changed in Redis' $CT_TMP/node$n.err) -ge 2 ]" ||
        ct_failed "node $n reloaded without c"
    ct_wait_until 30 sh -c "! curl -s http://127.0.0.1:${ADMIN[$n]}/metrics | grep -q 'backend=\"fleet:c\"'" ||
        ct_failed "node $n: the peer group fleet:c is gone"
done
d0=$(metric a fleet_owner_down)
o0=$(origin_count)
ct_check "c's key on a after c left: 200" "$(get a "$UC")" 200
codes=$(for i in $(seq 1 20); do get a "/gen?size=10&$MA&k=rehome$i"; echo; done | sort | uniq -c | sed 's/^ *//')
ct_check "20 new keys on a, all 200" "$codes" "20 200"
ct_check "... with no failed peer fetch (c's keys went to a or b)" "$(($(metric a fleet_owner_down) - d0))" 0

# ---- learn_members = false: a keeps to its file.
ct_stop nodea
conf a "$(member a), $(member b)" "learn_members = false;"
ct_start nodea "$CT_BIN/cachet" -c "$CT_TMP/a.conf"
ct_wait_listen nodea admin >/dev/null || { ct_failed "node a starts again"; exit 1; }
ct_start nodec "$CT_BIN/cachet" -c "$CT_TMP/c.conf"
ct_wait_listen nodec admin >/dev/null || { ct_failed "node c starts again"; exit 1; }
ct_wait_until 30 metric_is b fleet_members_live 3 || ct_failed "b learns c again"
ct_check "learn_members = false: a does not learn c" "$(metric a fleet_members_live) $(learned_reloads a)" "2 0"
"$CT_BIN/cachet" -t -c "$CT_TMP/a.conf" >/dev/null 2>&1
ct_check "cachet -t accepts learn_members = false" "$?" 0
ct_done
