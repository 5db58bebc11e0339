#!/usr/bin/env bash
# Backend groups on real requests (issue 15): two sites served by different
# groups (three cachet-origin instances, counted to see which answered), a
# route by header to a hashing group (one URL, one backend), a route by
# cookie and one by client address, and a SIGHUP that swaps the routes under
# a client loop with no failed request.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

for o in a b c; do
    ct_start "o$o" "$CT_BIN/cachet-origin" --port 0 --workers 1
done
A=$(ct_wait_listen oa) || exit 1
B=$(ct_wait_listen ob) || exit 1
C=$(ct_wait_listen oc) || exit 1

CONF="$CT_TMP/cachet.conf"
write_conf() { # write_conf GROUP_OF_SITE_ONE
    cat >"$CONF" <<CONF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "http"; address = "127.0.0.1:0"; default_site = "one"; } );
admin = { listen = "off"; };
logs = { level = "info"; };
backends = ( { address = "127.0.0.1:$A"; } );
backend_groups = (
  { name = "bee"; backends = ( { address = "127.0.0.1:$B"; } ); },
  { name = "hashed"; balance = "hash"; hash_on = "key";
    backends = ( { address = "127.0.0.1:$B"; }, { address = "127.0.0.1:$C"; } ); },
  { name = "sea"; balance = "least_conn"; backends = ( { address = "127.0.0.1:$C"; } ); }
);
sites = (
  { name = "one"; hosts = [ "one.test" ]; backend_group = "$1"; },
  { name = "two"; hosts = [ "two.test" ];
    routes = (
      { name = "pool"; match = { headers = [ "X-Pool: hashed" ]; }; backend_group = "hashed"; },
      { name = "beta"; match = { cookies = [ "beta=yes" ]; }; backend_group = "sea"; },
      { name = "lan"; match = { client = [ "127.0.0.2/32" ]; }; backend_group = "bee"; }
    ); }
);
CONF
}
write_conf bee
ct_start_proxy -c "$CONF"
P="http://127.0.0.1:$(ct_wait_listen proxy http)" || exit 1
PID=$(ct_pid proxy)
NC="cache-control=no-store"
reset() { ct_origin_reset "$A"; ct_origin_reset "$B"; ct_origin_reset "$C"; }
counts() { echo "$(ct_origin_total "$A") $(ct_origin_total "$B") $(ct_origin_total "$C")"; }
get() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

reset
for i in 1 2 3; do get -H 'Host: one.test' "$P/gen?$NC&i=$i" >/dev/null; done
ct_check "site one: its group (B) answered" "$(counts)" "0 3 0"
reset
for i in 1 2 3; do get -H 'Host: two.test' "$P/gen?$NC&i=$i" >/dev/null; done
ct_check "site two without a route: the default group (A)" "$(counts)" "3 0 0"
reset
for i in 1 2 3 4 5 6; do get -H 'Host: two.test' -H 'X-Pool: hashed' "$P/gen?$NC&same=1" >/dev/null; done
ct_check_match "hash: one URL, one backend of the group" "$(counts)" '^0 (6 0|0 6)$'
reset
for i in $(seq 1 40); do get -H 'Host: two.test' -H 'X-Pool: hashed' "$P/gen?$NC&u=$i" >/dev/null; done
ct_check_match "hash: many URLs spread over both" "$(counts)" '^0 [1-9][0-9]* [1-9][0-9]*$'
reset
for i in 1 2; do get -H 'Host: two.test' -b 'x=1; beta=yes' "$P/gen?$NC&i=$i" >/dev/null; done
ct_check "cookie route: its group (C)" "$(counts)" "0 0 2"
reset
get --interface 127.0.0.2 -H 'Host: two.test' "$P/gen?$NC" >/dev/null
get -H 'Host: two.test' "$P/gen?$NC" >/dev/null
ct_check "client route: 127.0.0.2 to B, 127.0.0.1 to A" "$(counts)" "1 1 0"
# the second listener's default site is "one": an unknown host goes to B there
P2=""
second_port() {
    P2=$(grep '^listening on http ' "$CT_TMP/proxy.out" 2>/dev/null | sed -n '2s/.*://p')
    [ -n "$P2" ]
}
ct_wait_until 60 second_port
reset
get -H 'Host: nobody.test' "$P/gen?$NC" >/dev/null
get -H 'Host: nobody.test' "http://127.0.0.1:$P2/gen?$NC" >/dev/null
ct_check "default_site per listener: unknown host to A on one, to B on the other" "$(counts)" "1 1 0"

# ---- a reload swaps site one's group under a client loop --------------------
reload() { ct_reload "$PID" "$1"; } # reload N: SIGHUP, wait until N is in use by every worker
STOP="$CT_TMP/stop"
loop() {
    for ((i = 0; i < 100000; i++)); do
        [ -e "$STOP" ] && break
        curl -s -o /dev/null -w '%{http_code}\n' -H 'Host: one.test' "$P/gen?$NC&loop=$i" >>"$CT_TMP/codes"
    done
}
loop &
LOOP=$!
ct_wait_until 60 test -s "$CT_TMP/codes"
write_conf sea
reload 1 || ct_failed "reload 1 (site one: bee -> sea)"
reset
for i in 1 2 3; do get -H 'Host: one.test' "$P/gen?$NC&after=$i" >/dev/null; done
ct_check_match "after the reload site one goes to C (the loop's too)" "$(counts)" '^0 0 ([3-9]|[1-9][0-9]+)$'
write_conf bee
reload 2 || ct_failed "reload 2 (back to bee)"
touch "$STOP"
wait $LOOP
total=$(wc -l <"$CT_TMP/codes")
good=$(grep -c '^200$' "$CT_TMP/codes")
ct_check_match "requests were made during the reloads" "$total" '^[1-9][0-9]+$'
ct_check "no failed request across the route reloads ($total made)" "$good" "$total"

kill -TERM "$PID"
ct_done
