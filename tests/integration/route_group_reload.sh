#!/usr/bin/env bash
# A request routed before a reload and fetched after it goes to its route's
# group by name, not by the group's index in the new configuration: a
# waiter on an uncacheable fetch (it fetches on its own when the first
# answer says no-store) across a reload that swaps the groups' order.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

for o in a b; do
    ct_start "o$o" "$CT_BIN/cachet-origin" --port 0 --workers 1
done
A=$(ct_wait_listen oa) || exit 1
B=$(ct_wait_listen ob) || exit 1
CONF="$CT_TMP/cachet.conf"
ELOG="$CT_TMP/error.log"
write_conf() { # write_conf FIRST SECOND: the groups in that order
    local aa='{ name = "aa"; backends = ( { address = "127.0.0.1:'$A'"; } ); }'
    local bee='{ name = "bee"; backends = ( { address = "127.0.0.1:'$B'"; } ); }'
    local first second
    [ "$1" = aa ] && { first=$aa; second=$bee; } || { first=$bee; second=$aa; }
    cat >"$CONF" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "off"; };
logs = { level = "debug"; error_log = "$ELOG"; };
backends = ( { address = "127.0.0.1:$A"; } );
backend_groups = ( $first, $second );
sites = ( { name = "one"; hosts = [ "one.test" ]; backend_group = "bee"; } );
CONF
}
write_conf aa
ct_start_proxy -c "$CONF"

T="/gen?size=10&cache-control=no-store&delay=2000"
curl -s -o "$CT_TMP/r1" -H 'Host: one.test' "$P$T" &
c1=$!
ct_wait_until 60 ct_origin_total_ge "$B" 1
curl -s -o "$CT_TMP/r2" -w '%{http_code}' -H 'Host: one.test' "$P$T" >"$CT_TMP/c2" &
c2=$!
# the second request is in the core (it waits on the first's fetch) ...
two_in() { [ "$(grep -c 'read-head -> fetch' "$ELOG")" -ge 2 ]; }
ct_wait_until 60 two_in
# ... when a reload swaps the groups: "bee" was index 2, it is now 1
write_conf bee
kill -HUP "$(ct_pid proxy)"
reloaded() { grep -q 'in use by every worker' "$ELOG"; }
ct_wait_until 90 reloaded
wait $c1 $c2
ct_check "the waiter got its answer" "$(cat "$CT_TMP/c2")" 200
ct_check "both went to bee's backend" "$(ct_origin_total "$B")" 2
ct_check "none to aa's" "$(ct_origin_total "$A")" 0
ct_check_match "the second waited, then fetched on its own" "$(cat "$ELOG")" \
    'steps: recv route cache lookup wait pass'
ct_done
