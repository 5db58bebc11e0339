#!/usr/bin/env bash
# Issue 17, Redis with a password (requirepass): nodes with
# fleet.redis_password register and fan purges out through it; a node
# without it (or with a wrong one) is refused, says so, and falls back as
# when Redis is down; -T never prints the password.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin
read -r RP PA PB PC AA AB AC < <(ct_free_ports 7)
PW='s3cret-fleet-pass'
ct_start_redis "$RP" --requirepass "$PW"
declare -A PORT=([a]=$PA [b]=$PB [c]=$PC) ADMIN=([a]=$AA [b]=$AB [c]=$AC) PASS=([a]="\"$PW\"" [b]="\"$PW\"" [c]='"wrong-password"')
for n in a b c; do
    cat >"$CT_TMP/$n.conf" <<EOF2
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$n]}"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
admin = { listen = "127.0.0.1:${ADMIN[$n]}"; };
fleet = {
  self = "$n";
  members = ( { name = "a"; address = "127.0.0.1:$PA"; }, { name = "b"; address = "127.0.0.1:$PB"; },
              { name = "c"; address = "127.0.0.1:$PC"; } );
  redis = "127.0.0.1:$RP";
  redis_password = ${PASS[$n]};
};
EOF2
    ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"
done
for n in a b c; do ct_wait_listen "node$n" admin >/dev/null || { ct_failed "node $n starts"; exit 1; }; done
metric() { ct_metric "${ADMIN[$1]}" "cachet_$2"; }
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
R() { redis-cli -p "$RP" -a "$PW" --no-auth-warning "$@"; }

ct_check_match "-T does not print the password" "$("$CT_BIN/cachet" -T -c "$CT_TMP/a.conf" 2>&1 | grep -i 'redis_password')" '^ *# redis_password = \(set; not shown\);$'
# registered now: entries whose score (their expiry, ms) is still ahead
live_set() { R ZRANGEBYSCORE "{cachet}:members" "$((${EPOCHREALTIME/./} / 1000))" +inf | cut -d" " -f1; }
in_set() { live_set | grep -qx "$1"; }
ct_wait_until 30 in_set a && ct_wait_until 30 in_set b
ct_check "a and b (the password) registered; c (a wrong one) did not" \
    "$(live_set | sort | tr '\n' ' ')" "a b "
refused() { grep -q 'refused AUTH' "$CT_TMP/nodec.err"; }
ct_wait_until 30 refused && ct_pass "c says Redis refused its AUTH" || ct_failed "c says Redis refused its AUTH"
p0=$(metric b fleet_purges_applied)
curl -s -X POST "http://127.0.0.1:$AA/purge?url=http%3A%2F%2Ffleet.test%2Fx" >/dev/null
ct_wait_until 30 metric_is b fleet_purges_applied $((p0 + 1))
ct_check "a purge on a reaches b through the authenticated stream" "$(($(metric b fleet_purges_applied) - p0))" 1
ct_check_match "... and c, refused, counted Redis errors" "$(metric c fleet_redis_errors)" '^[1-9][0-9]*$'
ct_done
