#!/usr/bin/env bash
# Passive health: one URL that answers badly must not take the site down.
# - The embedded default with one backend: malformed heads, resets and 5xx
#   from /bad/* and ?status=500, many more than max_fails (3) in a row, and
#   /json is still served: the last backend in rotation is never skipped
#   (nginx ignores max_fails for a lone server).
# - Two backends, defaults: malformed answers do not count (only connect,
#   timeout and reset do), so both stay in rotation; resets take one out
#   and keep the other, the last one.
# - passive_fail_on lists what counts: with "invalid" or "5xx" those take a
#   backend out (still never the last one).
# One worker (a CLI override) so that one passive-health state sees every
# request. The witness: each origin's /json counter.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start o1 "$CT_BIN/cachet-origin" --port 0 --workers 1
O1=$(ct_wait_listen o1) || exit 1
ct_start o2 "$CT_BIN/cachet-origin" --port 0 --workers 1
O2=$(ct_wait_listen o2) || exit 1

N=0 # proxies started (each gets a fresh passive-health state)
# proxy [-c FILE] BACKEND-PORT...: start a cachet, set P to its base URL.
proxy() {
    local conf=() args=()
    if [ "$1" == "-c" ]; then conf=(-c "$2"); shift 2; fi
    for b in "$@"; do args+=(--backend "127.0.0.1:$b"); done
    N=$((N + 1))
    ct_start "p$N" "$CT_BIN/cachet" "${conf[@]}" --http 127.0.0.1:0 --https off --admin off \
        --workers 1 "${args[@]}"
    P="http://127.0.0.1:$(ct_wait_listen "p$N" http)" || exit 1
    ct_origin_reset "$O1"
    ct_origin_reset "$O2"
}
# codes N URL: N requests, one connection each; "CODE:COUNT ..." sorted.
codes() {
    for ((i = 0; i < $1; i++)); do curl -s -o /dev/null -w '%{http_code}\n' --max-time 10 "$2"; done |
        sort | uniq -c | awk '{printf "%s:%s ", $2, $1}'
}
json_at() { curl -s "http://127.0.0.1:$1/_origin/stats" |
    python3 -c "import json,sys; print(json.load(sys.stdin)['paths'].get('/json', 0))"; }

# ---- one backend, the embedded default -------------------------------------
proxy "$O1"
for kind in garbage status header reset empty; do
    ct_check "one backend: /bad/$kind x5 is the origin's failure" "$(codes 5 "$P/bad/$kind")" "502:5 "
done
ct_check "one backend: status=500 x5 passes through" "$(codes 5 "$P/gen?status=500")" "500:5 "
ct_check "one backend: /json still served after 30 bad answers" "$(codes 4 "$P/json")" "200:4 "
ct_check "... by the origin" "$(json_at "$O1")" 4
ct_check_match "... the lone backend was kept, and the log says why" "$(cat "$CT_TMP/p$N.err")" \
    'consecutive failures; kept, it is the last backend in rotation'
ct_check "... and never skipped" "$(grep -c 'skipped for' "$CT_TMP/p$N.err")" 0
ct_stop "p$N"

# ---- two backends, defaults: malformed answers do not count -------------------
proxy "$O1" "$O2"
ct_check "two backends: /bad/garbage x8" "$(codes 8 "$P/bad/garbage")" "502:8 "
ct_check "... both stay in rotation: /json x4" "$(codes 4 "$P/json")" "200:4 "
ct_check "... served by both" "$(json_at "$O1") $(json_at "$O2")" "2 2"
ct_stop "p$N"

# ---- two backends, defaults: resets count, the last one is kept ----------------
proxy "$O1" "$O2"
ct_check "two backends: /bad/reset x8" "$(codes 8 "$P/bad/reset")" "502:8 "
ct_check "... /json x4 still served" "$(codes 4 "$P/json")" "200:4 "
ct_check "... all by one backend: the other was skipped" \
    "$(echo "$(json_at "$O1") $(json_at "$O2")" | tr ' ' '\n' | sort -n | tr '\n' ' ')" "0 4 "
ct_check "... one skip logged" "$(grep -c 'skipped for' "$CT_TMP/p$N.err")" 1
ct_check_match "... and the other kept as the last in rotation" "$(cat "$CT_TMP/p$N.err")" \
    'kept, it is the last backend in rotation'
ct_stop "p$N"

# ---- passive_fail_on: "invalid", "5xx" ----------------------------------------
for what in invalid 5xx; do
    printf 'backends = ( { address = "127.0.0.1:1"; passive_fail_on = [ "%s" ]; } );\n' "$what" \
        >"$CT_TMP/$what.conf"
    proxy -c "$CT_TMP/$what.conf" "$O1" "$O2" # --backend takes the file's first backend's settings
    url="$P/bad/garbage"
    [ "$what" == 5xx ] && url="$P/gen?status=503"
    codes 8 "$url" >/dev/null
    ct_check "passive_fail_on = [\"$what\"]: /json x4 served" "$(codes 4 "$P/json")" "200:4 "
    ct_check "... all by one backend: the other was skipped" \
        "$(echo "$(json_at "$O1") $(json_at "$O2")" | tr ' ' '\n' | sort -n | tr '\n' ' ')" "0 4 "
    ct_stop "p$N"
done

printf 'backends = ( { address = "127.0.0.1:1"; passive_fail_on = [ "reset", "bogus" ]; } );\n' \
    >"$CT_TMP/bad.conf"
out=$("$CT_BIN/cachet" -t -c "$CT_TMP/bad.conf" 2>&1)
ct_check_match "an unknown passive_fail_on kind is a config error with its place" "$out" \
    'bad.conf:1: backends\[0\].passive_fail_on: unknown failure "bogus"'
ct_done
