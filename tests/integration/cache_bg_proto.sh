#!/usr/bin/env bash
# A background refresh (stale-while-revalidate) triggered by an HTTPS client
# tells the origin X-Forwarded-Proto: https, like the client's own fetch did
# (it runs on an internal plain connection; the scheme is the trigger's).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<EOF2
workers = 1;
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "16M"; grace = "0s"; hit_for_miss = "0s"; };
admin = { listen = "off"; };
EOF2
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/cachet.conf"
SPORT=$(ct_wait_listen proxy https) || exit 1
# Stored already stale (max-age=0) within stale-while-revalidate: the next
# request is answered from it and refreshes it in the background.
U="https://127.0.0.1:$SPORT/echo?cache-control=max-age%3D0%2C%20stale-while-revalidate%3D60"
proto() { sed -n 's/.*"X-Forwarded-Proto", *"\([a-z]*\)".*/\1/p' "$CT_TMP/body"; }
cs() { tr -d '\r' <"$CT_TMP/h" | sed -n 's/^cache-status: //Ip'; }
get() { curl -sk -m 5 -D "$CT_TMP/h" -o "$CT_TMP/body" "$U"; }

ct_origin_reset "$OPORT"
get
ct_check "first fetch: stored" "$(cs)" "cachet; fwd=uri-miss; stored"
ct_check "first fetch: X-Forwarded-Proto https" "$(proto)" https
get
ct_check_match "stale answer, refresh in the background" "$(cs)" 'detail=stale-while-revalidate'
# wait for the background fetch to reach the origin and complete
ct_wait_until 20 ct_origin_total_ge "$OPORT" 2
ct_check "one background fetch" "$(ct_origin_total "$OPORT")" 2
# the refreshed object is the echo of the background request
refreshed() {
    get
    seq=$(tr -d '\r' <"$CT_TMP/h" | sed -n 's/^x-origin-seq: //Ip')
    [ "${seq:-0}" -ge 2 ]
}
ct_wait_until 60 refreshed
ct_check_match "refreshed object served" "$(cs)" 'stale-while-revalidate|hit'
ct_check "background refresh: X-Forwarded-Proto https" "$(proto)" https
ct_done
