#!/usr/bin/env bash
# SIGHUP reload that changes the backend set: from A to B (new requests go to
# B; a slow request in flight on A finishes with 200 on its connection), A
# added back (round robin over both), per-backend counters in /metrics by
# name (B's kept across reloads, removed backends dropped, new ones from 0),
# an unresolvable backend refused with the old set serving, and a client loop
# across every reload without a failed request.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start oa "$CT_BIN/cachet-origin" --port 0 --workers 1
APORT=$(ct_wait_listen oa) || exit 1
ct_start ob "$CT_BIN/cachet-origin" --port 0 --workers 1
BPORT=$(ct_wait_listen ob) || exit 1

CONF="$CT_TMP/cachet.conf"
A="{ name = \"a\"; address = \"127.0.0.1:$APORT\"; }"
B="{ name = \"b\"; address = \"127.0.0.1:$BPORT\"; }"
write_conf() { # write_conf BACKENDS...
    local list
    list=$(IFS=,; echo "$*")
    cat >"$CONF" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "127.0.0.1:0"; };
backends = ( $list );
logs = { level = "info"; };
EOF
}
write_conf "$A"
ct_start_proxy -c "$CONF"
APORT_ADMIN=$(ct_wait_listen proxy admin) || exit 1
PID=$(ct_pid proxy)
M="http://127.0.0.1:$APORT_ADMIN/metrics"
NC="cache-control=no-store"

reload() { ct_reload "$PID" "$1"; } # reload N: SIGHUP, wait until N is in use by every worker
count() { # count NAME: cachet_upstream_requests_total of backend NAME ("" if absent)
    curl -s "$M" | sed -n "s/^cachet_upstream_requests_total{backend=\"$1\"} \([0-9]*\)$/\1/p"
}
get() { curl -s -o /dev/null -w '%{http_code}' "$P/gen?$NC&i=$1"; }

# a client loop across all the reloads below
STOP="$CT_TMP/stop"
loop() {
    for ((i = 0; i < 100000; i++)); do
        [ -e "$STOP" ] && break
        curl -s -o /dev/null -w '%{http_code}\n' "$P/gen?$NC&loop=$i" >>"$CT_TMP/codes"
    done
}
loop &
LOOP=$!

for i in 1 2 3 4; do get "a$i" >/dev/null; done
ct_check_match "A counted before the reload" "$(count a)" '^[1-9][0-9]*$'

# ---- A -> B, with a slow request in flight on A ------------------------------------------
curl -s -o "$CT_TMP/slow.body" -w '%{http_code}' "$P/delay/1000?$NC&slow=1" >"$CT_TMP/slow.code" &
SLOW=$!
slow_at_a() { curl -s "http://127.0.0.1:$APORT/_origin/stats" | grep -q '"/delay/1000"'; }
ct_wait_until 60 slow_at_a
write_conf "$B"
ct_origin_reset "$BPORT"
reload 1 || ct_failed "reload 1 (A -> B)"
wait $SLOW
ct_check "in-flight request on the removed backend completes" "$(cat "$CT_TMP/slow.code")" 200
ct_check_match "retired backend logged" "$(cat "$CT_TMP/proxy.err")" 'backend 127.0.0.1:'"$APORT"' retired; [0-9]+ connections finish first'
ct_origin_reset "$APORT"
codes=""
for i in 1 2 3 4 5 6; do codes+="$(get "b$i") "; done
ct_check "after A -> B: answered" "$codes" "200 200 200 200 200 200 "
ct_check "after A -> B: nothing reaches A" "$(ct_origin_total "$APORT")" 0
ct_check_match "after A -> B: B gets the requests" "$(ct_origin_total "$BPORT")" '^([6-9]|[1-9][0-9]+)$'
ct_check "metrics: removed backend A dropped" "$(count a)" ""
B1=$(count b)
ct_check_match "metrics: B counted from 0 after the reload" "$B1" '^([6-9]|[1-9][0-9]+)$'

# ---- A added back: round robin over both; B's counters continue ---------------------------
write_conf "$A" "$B"
reload 2 || ct_failed "reload 2 (A added)"
touch "$STOP" # the loop's requests would skew the split below
wait $LOOP
B2=$(count b)
A2=$(count a)
ct_check_match "metrics: A back (counted from 0: only the loop's requests)" "$A2" '^[0-9]+$'
ct_origin_reset "$APORT"
ct_origin_reset "$BPORT"
# one keep-alive connection: one worker, whose round robin alternates
args=()
for i in $(seq 1 20); do args+=(-o /dev/null "$P/gen?$NC&ab=$i"); done
curl -s "${args[@]}"
ct_check "round robin after adding A: A got half" "$(ct_origin_total "$APORT")" 10
ct_check "round robin after adding A: B got half" "$(ct_origin_total "$BPORT")" 10
ct_check "metrics: A counts on" "$(count a)" $((A2 + 10))
ct_check "metrics: B's count kept across the reload" "$(count b)" $((B2 + 10))
ct_check_match "metrics: B's count did not restart" "$B2" "^[0-9]+$"
[ "${B2:-0}" -ge "${B1:-0}" ] && ct_pass "metrics: B monotonic across the reload" ||
    ct_failed "metrics: B monotonic across the reload" "$B1 then $B2"

# ---- a moved backend (same name, new address) and a settings change --------------------
rm -f "$STOP"
loop &
LOOP=$!
write_conf "{ name = \"a\"; address = \"127.0.0.1:$BPORT\"; weight = 2; }" "$B"
reload 3 || ct_failed "reload 3 (a moved to B's address)"
ct_origin_reset "$APORT"
for i in 1 2 3 4; do get "m$i" >/dev/null; done
ct_check "moved backend: nothing reaches the old address" "$(ct_origin_total "$APORT")" 0

# ---- a bad backend address is refused; the old set keeps serving -------------------------
write_conf "$A" "{ name = \"b\"; address = \"no-such-host.invalid:80\"; }"
kill -HUP "$PID"
ct_wait_until 60 grep -q 'cannot resolve no-such-host.invalid' "$CT_TMP/proxy.err"
ct_check_match "unresolvable backend refused" "$(cat "$CT_TMP/proxy.err")" \
    'SIGHUP: backend b: cannot resolve no-such-host.invalid'
ct_check_match "refusal logged" "$(cat "$CT_TMP/proxy.err")" 'configuration refused; the running one stays'
ct_origin_reset "$APORT"
for i in 1 2 3 4; do get "r$i" >/dev/null; done
ct_check "old set still serves (A untouched)" "$(ct_origin_total "$APORT")" 0
ct_check "generation unchanged" "$(grep -c 'in use by every worker' "$CT_TMP/proxy.err")" 3

# ---- active health checks follow the new set: an added dead backend goes down ----------
ct_start oc "$CT_BIN/cachet-origin" --port 0 --workers 1
DPORT=$(ct_wait_listen oc) || exit 1
ct_stop oc KILL
HC='health_check = { enabled = true; path = "/json"; interval = "100ms"; timeout = "500ms";
                     expect_status = 200; rise = 2; fall = 2; };'
write_conf "{ name = \"a\"; address = \"127.0.0.1:$APORT\"; $HC }" \
    "{ name = \"dead\"; address = \"127.0.0.1:$DPORT\"; $HC }"
reload 4 || ct_failed "reload 4 (a dead backend with health checks added)"
up() { curl -s "$M" | awk -v s="cachet_backend_up{backend=\"$1\"}" '$1 == s { print $2 }'; }
dead_down() { [ "$(up dead)" = 0 ]; }
ct_wait_until 60 dead_down
ct_check "health: the added dead backend is down" "$(up dead)" 0
ct_check "health: A is up" "$(up a)" 1
ct_check_match "health: logged" "$(cat "$CT_TMP/proxy.err")" "backend dead \(127.0.0.1:$DPORT\) is down"
D1=$(count dead)
codes=""
for i in 1 2 3 4; do codes+="$(get "h$i") "; done
ct_check "health: answered" "$codes" "200 200 200 200 "
ct_check "health: nothing sent to the down backend" "$(count dead)" "$D1"

# ---- back to A alone; the loop saw no failure -------------------------------------------
write_conf "$A"
reload 5 || ct_failed "reload 5 (A only)"
sleep 0.2
touch "$STOP"
wait $LOOP
total=$(wc -l <"$CT_TMP/codes")
good=$(grep -c '^200$' "$CT_TMP/codes")
ct_check_match "requests were made during the reloads" "$total" '^[1-9][0-9]+$'
ct_check "no failed request across the backend reloads ($total made)" "$good" "$total"
ct_check "metrics: only A listed" "$(curl -s "$M" | grep -c '^cachet_upstream_requests_total{')" 1

kill -TERM "$PID"
ct_done
