#!/usr/bin/env bash
# Issue 17, bounded-load ownership (fleet.load_factor, opt-in): three nodes
# without Redis and one cachet-origin on loopback. Eight slow misses at once
# on a, each for a different key b owns: with load_factor = 100 and
# load_floor = 1 a worker of a that already has one of them in flight to b
# sends the next to the key's next choice (c, or the origin from a), so some
# are spilled (counted), each answered whole, one origin fetch per key. Then
# a reloads with load_factor = 0 and eight more all go to b, none spilled.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin --workers 2
read -r PA PB PC AA AB AC < <(ct_free_ports 6)
declare -A PORT=([a]=$PA [b]=$PB [c]=$PC) ADMIN=([a]=$AA [b]=$AB [c]=$AC)
# delay= and cache-control= are left out of the key, so a no-store probe of
# a key and the slow cacheable request for it have the same owner
sites='sites = ( { name = "s"; hosts = [ "fleet.test" ];
  routes = ( { name = "gen"; match = { path = "/gen"; };
               cache = { key_drop_params = [ "delay", "cache-control" ]; }; } ); } );'
# mirror_ttl 0s: an edge keeps no copy of a peer's answer, and so no
# hit-for-miss marker of a probe's either (the slow GET would be a pass)
ct_fleet_start 'load_factor = 100; load_floor = 1; mirror_ttl = "0s";' "$sites"
ct_fleet_probes

get_md5() { curl -s -H "$H" "http://127.0.0.1:${PORT[a]}$1" | md5sum | cut -c1-32; }
# owned_by_b N FROM: N keys (k=FROM...) whose owner is b, found with no-store
# probes on a (a miss goes to the owner; nothing is stored): a key is b's
# when b served a peer's request for it
owned_by_b() {
    local want=$1 k=$2 h got=()
    while ((${#got[@]} < want && k < $2 + 400)); do
        h=$(metric b fleet_hop_requests)
        curl -s -o /dev/null -H "$H" \
            "http://127.0.0.1:${PORT[a]}/gen?size=4000&k=$k&cache-control=no-store"
        [ "$(metric b fleet_hop_requests)" -gt "$h" ] && got+=("$k")
        k=$((k + 1))
    done
    echo "${got[@]}"
}
# burst KEYS...: each key's slow cacheable GET on a at once; the bodies' md5s
burst() {
    local k
    for k in "$@"; do
        get_md5 "/gen?size=4000&k=$k&delay=6000&$MA" &
    done
    wait
}
want=$(curl -s "$O/gen?size=4000" | md5sum | cut -c1-32)

read -r -a K1 < <(owned_by_b 8 1)
ct_check "8 keys that b owns" "${#K1[@]}" 8
ct_origin_reset "$OPORT"
s0=$(metric a fleet_owner_spills) b0=$(metric b fleet_hop_requests)
c0=$(metric c fleet_hop_requests)
out=$(burst "${K1[@]}")
ct_check "load_factor 100: 8 slow misses at once, 8 whole bodies" \
    "$(echo "$out" | sort | uniq -c | sed 's/^ *//')" "8 $want"
spills=$(($(metric a fleet_owner_spills) - s0))
ct_check_match "... some spilled past b (2 workers, 8 at once: one has two)" "$spills" '^[1-7]$'
ct_check "... b served the rest" "$(($(metric b fleet_hop_requests) - b0))" $((8 - spills))
ct_check "... one origin fetch per key" "$(ct_origin_total "$OPORT")" 8
ct_check_match "... the spilled went to c or to the origin from a" \
    "$(($(metric c fleet_hop_requests) - c0))" "^[0-$spills]\$"
ct_check_match "/stats has the counter" "$(curl -s "http://127.0.0.1:$AA/stats")" \
    '"fleet_owner_spills":[1-9]'

# ---- off: every miss goes to its owner, however many are in flight
ct_fleet_conf a 'load_factor = 0; mirror_ttl = "0s";' "$sites"
ct_reload "${CT_PIDS[nodea]}" 1 "$CT_TMP/nodea.err" || ct_failed "a reloads with load_factor = 0"
read -r -a K2 < <(owned_by_b 8 1000)
ct_check "8 more keys that b owns" "${#K2[@]}" 8
ct_origin_reset "$OPORT"
s0=$(metric a fleet_owner_spills) b0=$(metric b fleet_hop_requests)
out=$(burst "${K2[@]}")
ct_check "load_factor 0: 8 whole bodies" "$(echo "$out" | sort | uniq -c | sed 's/^ *//')" "8 $want"
spills=$(($(metric a fleet_owner_spills) - s0))
ct_check "... none spilled, all 8 to b, one origin fetch each" \
    "$spills $(($(metric b fleet_hop_requests) - b0)) $(ct_origin_total "$OPORT")" "0 8 8"

sed 's/load_factor = 0;/load_factor = 50;/' "$CT_TMP/a.conf" >"$CT_TMP/bad.conf"
"$CT_BIN/cachet" -t -c "$CT_TMP/bad.conf" >"$CT_TMP/bad.out" 2>&1
rc=$?
ct_check_match "-t refuses load_factor = 50 with its line" "$(cat "$CT_TMP/bad.out") rc=$rc" \
    'bad\.conf:[0-9]+: fleet\.load_factor: 50 is below the mean.* rc=[1-9]'
for n in a b c; do
    kill -TERM "${CT_PIDS[node$n]}"
    wait "${CT_PIDS[node$n]}"
    ct_check "node $n exits 0" "$?" 0
    unset "CT_PIDS[node$n]"
done
ct_done
