#!/usr/bin/env bash
# Issue 17, Redis 6 ACL users and a Sentinel with a password: a Redis whose
# fleet users (fleet, fleetc) may run only the fleet's commands on its keys,
# and a Sentinel with requirepass. Node a finds the master through the
# Sentinel (fleet.redis_sentinel_password) and all of a, b, c authenticate
# as an ACL user (fleet.redis_username): they register and fan a purge out.
# Node d gives the Sentinel a wrong password: refused, said, counted, and it
# serves with its purges over HTTP. Then c's user gets a new password and
# c's links are killed: its AUTH is refused on the reconnect, said and
# counted, and c serves on its last view, its purges over HTTP. a's user
# loses +role: a, reconnected, uses the master unverified and says so. -T
# prints the user, never a password.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 1
read -r RP RS PA PB PC PD AA AB AC AD < <(ct_free_ports 10)
ROOT='root-pass-for-tests' UPW='fleet-user-pass' SPW='sentinel-pass'
# what the fleet runs, on its keys only (docs/fleet.md, "ACL")
CMDS=(resetchannels '~{cachet}:*' -@all +zadd +zremrangebyscore +zrangebyscore +xadd +xread
      +xrange +xrevrange '+client|setname' +asking +role)
ct_start_redis "$RP" --requirepass "$ROOT" --user fleet on ">$UPW" "${CMDS[@]}" \
    --user fleetc on ">$UPW" "${CMDS[@]}"
R() { redis-cli -p "$RP" -a "$ROOT" --no-auth-warning "$@"; }
cat >"$CT_TMP/sentinel.conf" <<EOF2
port $RS
bind 127.0.0.1
requirepass "$SPW"
sentinel monitor fl 127.0.0.1 $RP 1
sentinel auth-pass fl $ROOT
EOF2
ct_start sentinel redis-server "$CT_TMP/sentinel.conf" --sentinel
sen_up() { redis-cli -p "$RS" -a "$SPW" --no-auth-warning ping 2>/dev/null | grep -q PONG; }
ct_wait_until 30 sen_up || { ct_failed "the Sentinel starts"; exit 1; }

declare -A PORT=([a]=$PA [b]=$PB [c]=$PC [d]=$PD) ADMIN=([a]=$AA [b]=$AB [c]=$AC [d]=$AD)
declare -A LINK=(
    [a]="redis = \"127.0.0.1:$RS\"; redis_sentinel = \"fl\"; redis_sentinel_password = \"$SPW\";
  redis_username = \"fleet\"; redis_password = \"$UPW\";"
    [b]="redis = \"127.0.0.1:$RP\"; redis_username = \"fleet\"; redis_password = \"$UPW\";"
    [c]="redis = \"127.0.0.1:$RP\"; redis_username = \"fleetc\"; redis_password = \"$UPW\";"
    [d]="redis = \"127.0.0.1:$RS\"; redis_sentinel = \"fl\"; redis_sentinel_password = \"wrong-one\";
  redis_username = \"fleet\"; redis_password = \"$UPW\";")
member() { echo "{ name = \"$1\"; address = \"127.0.0.1:${PORT[$1]}\"; admin = \"127.0.0.1:${ADMIN[$1]}\"; }"; }
for n in a b c d; do
    others="$(member a), $(member b), $(member c)"
    [ "$n" = d ] && others="$others, $(member d)"
    cat >"$CT_TMP/$n.conf" <<EOF2
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$n]}"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "16M"; };
admin = { listen = "127.0.0.1:${ADMIN[$n]}"; };
fleet = {
  self = "$n";
  members = ( $others );
  ${LINK[$n]}
  register_ttl = "3s";
};
EOF2
    ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"
done
for n in a b c d; do ct_wait_listen "node$n" admin >/dev/null || { ct_failed "node $n starts"; exit 1; }; done
metric() { ct_metric "${ADMIN[$1]}" "cachet_$2"; }
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
metric_gt() { [ "$(metric "$1" "$2")" -gt "$3" ]; }
enc() { /usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
purge() { curl -s -X POST "http://127.0.0.1:${ADMIN[$1]}/purge?url=$(enc "http://fleet.test/gen?k=$2")" >/dev/null; }
get() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${PORT[$1]}/gen?k=$2" -H 'Host: fleet.test'; }

dump=$("$CT_BIN/cachet" -T -c "$CT_TMP/a.conf" 2>&1)
ct_check_match "-T prints the user" "$dump" 'redis_username = "fleet";'
ct_check_match "-T hides the Sentinel's password" "$dump" \
    '# redis_sentinel_password = \(set; not shown\);'
ct_check "-T prints no password" "$(echo "$dump" | grep -c -e "$UPW" -e "$SPW")" 0

# registered now: entries whose score (their expiry, ms) is still ahead
live_set() { R ZRANGEBYSCORE "{cachet}:members" "$((${EPOCHREALTIME/./} / 1000))" +inf | cut -d" " -f1 | sort | tr '\n' ' '; }
all_in() { [ "$(live_set)" = "a b c " ]; }
ct_wait_until 30 all_in
ct_check "a (through the Sentinel), b and c registered as ACL users; d did not" "$(live_set)" "a b c "
ct_check_match "a asked the Sentinel with its password" "$(cat "$CT_TMP/nodea.err")" \
    "Sentinel 127.0.0.1:$RS names 127.0.0.1:$RP the master"
users() { R CLIENT LIST | grep -o 'name=cachet-[abc]-[a-z]* .*user=[a-z]*' | sed 's/ .* / /' | sort | tr '\n' ' '; }
ct_check "each link is its node's ACL user" "$(users)" \
    "name=cachet-a-cmd user=fleet name=cachet-a-stream user=fleet name=cachet-b-cmd user=fleet name=cachet-b-stream user=fleet name=cachet-c-cmd user=fleetc name=cachet-c-stream user=fleetc "
purge a one
ct_wait_until 30 metric_is b fleet_purges_applied 1
ct_wait_until 30 metric_is c fleet_purges_applied 1
ct_check "a purge on a reached b and c" "$(metric b fleet_purges_applied) $(metric c fleet_purges_applied)" "1 1"

# d: the Sentinel refuses its AUTH
d_refused() { grep -q "refused AUTH: WRONGPASS.*(fleet.redis_sentinel_password)" "$CT_TMP/noded.err"; }
ct_wait_until 30 d_refused && ct_pass "d says the Sentinel refused its AUTH" ||
    ct_failed "d says the Sentinel refused its AUTH" "$(grep fleet "$CT_TMP/noded.err" | tail -3)"
ct_check_match "... counted" "$(metric d fleet_redis_errors)" '^[1-9][0-9]*$'
ct_check "... has no Redis" "$(metric d fleet_redis_up)" 0
ct_check "... and serves" "$(get d dkey)" 200
purge d two
ct_wait_until 30 metric_gt d fleet_http_fanout 0
ct_check_match "... its purge went over HTTP" "$(metric d fleet_http_fanout)" '^[1-9][0-9]*$'

# c: its user's password changed, its links killed: refused on the reconnect
e0=$(metric c fleet_redis_errors) h0=$(metric c fleet_http_fanout) p0=$(metric c fleet_purges_published)
R ACL SETUSER fleetc resetpass ">another-pass" >/dev/null
R CLIENT KILL USER fleetc >/dev/null
c_refused() { grep -q "refused AUTH: WRONGPASS.*(fleet.redis_password)" "$CT_TMP/nodec.err"; }
ct_wait_until 30 c_refused && ct_pass "c says Redis refused its AUTH" ||
    ct_failed "c says Redis refused its AUTH" "$(grep fleet "$CT_TMP/nodec.err" | tail -3)"
ct_wait_until 30 metric_gt c fleet_redis_errors "$e0"
ct_check "... counted" "$(($(metric c fleet_redis_errors) > e0))" 1
ct_check "... serves on its last view" "$(get c ckey) $(metric c fleet_members_live)" "200 3"
ct_check "... and says Redis is not up (connected, every command refused)" \
    "$(metric c fleet_redis_up)" 0
purge c three
ct_wait_until 30 metric_gt c fleet_http_fanout "$h0"
ct_check "... its purge went over HTTP, not into the stream" \
    "$(($(metric c fleet_http_fanout) > h0)) $(metric c fleet_purges_published)" "1 $p0"

# a checked its master with ROLE (+role); a user without it: used unverified, said
ct_check "a's ROLE was answered" "$(grep -c 'refused ROLE' "$CT_TMP/nodea.err")" 0
R ACL SETUSER fleet -role >/dev/null
R CLIENT KILL USER fleet >/dev/null
unverified() { grep -q "refused ROLE (NOPERM.*): using it as the master unverified" "$CT_TMP/nodea.err"; }
ct_wait_until 30 unverified && ct_pass "a, refused ROLE, says so" ||
    ct_failed "a, refused ROLE, says so" "$(grep fleet "$CT_TMP/nodea.err" | tail -3)"
ct_wait_until 30 metric_is a fleet_redis_up 1 && ct_pass "... and uses the master unverified" ||
    ct_failed "... and uses the master unverified"
ct_check "... no mismatch counted" "$(metric a fleet_redis_role_mismatch)" 0
ct_done
