#!/usr/bin/env bash
# needs: cachet cachet-origin
# tests/integration/ops_ctl_backend.sh: `cachet ctl backend NAME drain|enable`
# (HAProxy's `set server ... state drain`) and `cachet ctl reload`.
# Drain: a request in flight on the drained backend finishes (200, whole
# body), no new request reaches it (the other backend's origin counts them
# all), /stats and `ctl top` say "drain", it survives a reload under its
# name, and enable puts it back. Errors: an unknown name (exit 3, the reason
# on stderr), a bad state (exit 2). Reload: "applied: configuration N" with
# a warning for a restart-only change, "refused:" with the FILE:LINE reason
# for a broken file (exit 3) and the running configuration serving on.
source "$(dirname "$0")/lib.sh"

CTL=("$CT_BIN/cachet" ctl)
ct_start oa "$CT_BIN/cachet-origin" --port 0 --workers 1
ct_start ob "$CT_BIN/cachet-origin" --port 0 --workers 1
PA=$(ct_wait_listen oa) && PB=$(ct_wait_listen ob) || { ct_failed "origins start"; ct_done; }

conf() { # conf [EXTRA]: two backends a and b, round robin, admin on a free port
    cat >"$CT_TMP/c.conf" <<EOF2
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "127.0.0.1:0"; };
backends = ( { name = "a"; address = "127.0.0.1:$PA"; },
             { name = "b"; address = "127.0.0.1:$PB"; } );
${1:-}
EOF2
}
conf
ct_start_proxy -c "$CT_TMP/c.conf"
APORT=$(ct_wait_listen proxy admin)
A=(--admin "127.0.0.1:$APORT")
# count ORIGIN_PORT PATH: requests for PATH the origin received
count() { curl -s "http://127.0.0.1:$1/_origin/stats" | python3 -c \
    'import json, sys; print(json.load(sys.stdin)["paths"].get(sys.argv[1], 0))' "$2"; }
drain_of() { curl -s "http://127.0.0.1:$APORT/stats" | python3 -c \
    'import json, sys; print([b.get("drain") for b in json.load(sys.stdin)["backends"] if b["name"] == sys.argv[1]][0])' "$1"; }

for i in $(seq 1 8); do curl -s -o /dev/null "$P/gen?cache-control=no-store&size=10"; done
ct_check_match "both backends serve before ($(count "$PA" /gen) + $(count "$PB" /gen))" \
    "$(count "$PA" /gen) $(count "$PB" /gen)" '^[1-9][0-9]* [1-9][0-9]*$'
ct_check "/stats: a is not drained" "$(drain_of a)" False

# A slow request in flight on whichever backend got it; drain that one.
curl -s -o "$CT_TMP/slow.body" -w '%{http_code}' "$P/delay/3000?cache-control=no-store&size=5000" \
    >"$CT_TMP/slow.code" &
slow=$!
on() { [ "$(count "$PA" /delay/3000)" = 1 ] || [ "$(count "$PB" /delay/3000)" = 1 ]; }
ct_wait_until 30 on
if [ "$(count "$PA" /delay/3000)" = 1 ]; then D=a DP=$PA OP=$PB; else D=b DP=$PB OP=$PA; fi
out=$("${CTL[@]}" backend "$D" drain "${A[@]}" 2>&1)
ct_check "ctl backend $D drain exits 0" "$?" 0
ct_check "ctl backend $D drain says so" "$out" "{\"backend\":\"$D\",\"state\":\"drain\",\"changed\":true}"
ct_check "/stats: $D is drained" "$(drain_of "$D")" True
ct_check_match "ctl top shows DRAIN" "$("${CTL[@]}" top --once -i 0.2 "${A[@]}")" $'\n'"$D +DRAIN "
before=$(count "$DP" /gen) other=$(count "$OP" /gen)
for i in $(seq 1 10); do curl -s -o /dev/null "$P/gen?cache-control=no-store&size=10"; done
ct_check "no new request reaches the drained backend" "$(count "$DP" /gen)" "$before"
ct_check "the other backend has them all" "$(count "$OP" /gen)" "$((other + 10))"
wait "$slow"
ct_check "the request in flight on it finished" "$(cat "$CT_TMP/slow.code") $(stat -c %s "$CT_TMP/slow.body")" "200 5000"
ct_check_match "the error log says it" "$(cat "$CT_TMP/proxy.err")" \
    "admin: backend $D drained: no new requests, those in flight finish"

# Drain survives a reload under its name; the reload says applied.
conf 'cache = { size = "64M"; };'
out=$("${CTL[@]}" reload "${A[@]}" 2>&1)
ct_check "ctl reload exits 0" "$?" 0
ct_check_match "ctl reload: applied, with the restart-only warning" "$out" \
    '^applied: configuration 1'$'\n''warning: SIGHUP: cache.size: a change needs a restart'
ct_check "/stats: still drained after the reload" "$(drain_of "$D")" True
before=$(count "$DP" /gen)
for i in $(seq 1 6); do curl -s -o /dev/null "$P/gen?cache-control=no-store&size=10"; done
ct_check "still no new request after the reload" "$(count "$DP" /gen)" "$before"

out=$("${CTL[@]}" backend "$D" enable "${A[@]}" 2>&1)
ct_check "ctl backend $D enable" "$out" "{\"backend\":\"$D\",\"state\":\"enabled\",\"changed\":true}"
for i in $(seq 1 8); do curl -s -o /dev/null "$P/gen?cache-control=no-store&size=10"; done
ct_check_match "enabled: it serves again" "$(count "$DP" /gen)" "^$((before + 1))|^$((before + 2))|^$((before + 3))|^$((before + 4))"

"${CTL[@]}" backend nosuch drain "${A[@]}" >"$CT_TMP/e.out" 2>"$CT_TMP/e.err"
ct_check "an unknown backend: exit 3" "$?" 3
ct_check "an unknown backend: the reason" "$(cat "$CT_TMP/e.err")" \
    'cachet ctl backend: 404: no backend named "nosuch" in the running configuration'
"${CTL[@]}" backend a sleep "${A[@]}" >/dev/null 2>"$CT_TMP/e.err"
ct_check "a bad state: exit 2" "$?" 2

# A broken file: refused with its FILE:LINE reason; the running one serves on.
conf 'cache = { sise = "1G"; };'
"${CTL[@]}" reload "${A[@]}" >"$CT_TMP/r.out" 2>"$CT_TMP/r.err"
ct_check "ctl reload of a broken file exits 3" "$?" 3
line=$(grep -n 'sise' "$CT_TMP/c.conf" | cut -d: -f1)
ct_check_match "ctl reload: refused and why" "$(cat "$CT_TMP/r.err")" \
    "^refused:"$'\n'"  SIGHUP: $CT_TMP/c.conf:$line: cache.sise: unknown setting"
ct_check "nothing on stdout" "$(cat "$CT_TMP/r.out")" ""
ct_check "the running configuration serves on" \
    "$(curl -s -o /dev/null -w '%{http_code}' "$P/gen?cache-control=no-store")" 200
ct_check_match "/stats counts one reload ok, one failed" \
    "$(curl -s "http://127.0.0.1:$APORT/stats" | python3 -c 'import json,sys; r=json.load(sys.stdin)["reload"]; print(r["ok"], r["failed"])')" '^1 1$'
ct_done
