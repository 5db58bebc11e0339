#!/usr/bin/env bash
# Targeted cache control (RFC 9213): CDN-Cache-Control and the operator's
# field (default Cachet-Cache-Control) decide cachet's own freshness over
# Cache-Control, the most specific one first, and never reach the client;
# Cache-Control itself is passed on untouched. The origin's hdr= knob
# sends the fields.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<EOF2
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "16M"; grace = "0s"; hit_for_miss = "0s"; };
admin = { listen = "off"; };
EOF2
ct_start_proxy -c "$CT_TMP/cachet.conf"
hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
has() { tr -d '\r' <<<"$2" | grep -ci "^$1:"; }
fetch() { curl -s -D - -o "$CT_TMP/body" "$1"; }
CDN='hdr=CDN-Cache-Control%3A%20max-age%3D60'

# CDN-Cache-Control: max-age=60 over Cache-Control: no-store: stored, hit.
U="$P/gen?size=20&cache-control=no-store&$CDN"
ct_origin_reset "$OPORT"
h1=$(fetch "$U")
h2=$(fetch "$U")
ct_check "CDN-Cache-Control: stored" "$(hdr Cache-Status "$h1")" "cachet; fwd=uri-miss; stored"
ct_check_match "CDN-Cache-Control: then a hit" "$(hdr Cache-Status "$h2")" '^cachet; hit; ttl=(5[0-9]|60)$'
ct_check "CDN-Cache-Control: one origin fetch" "$(ct_origin_total "$OPORT")" 1
for h in "$h1" "$h2"; do
    ct_check "CDN-Cache-Control not forwarded" "$(has CDN-Cache-Control "$h")" 0
    ct_check "Cache-Control: no-store still forwarded" "$(hdr Cache-Control "$h")" "no-store"
done
ct_check "hit: whole body" "$(wc -c <"$CT_TMP/body" | tr -d ' ')" 20

# The operator's field (Cachet-Cache-Control) wins over CDN-Cache-Control.
U="$P/gen?size=20&cache-control=no-store&hdr=Cachet-Cache-Control:max-age%3D30&hdr=CDN-Cache-Control:no-store"
ct_origin_reset "$OPORT"
h1=$(fetch "$U")
h2=$(fetch "$U")
ct_check_match "operator field: hit" "$(hdr Cache-Status "$h2")" '^cachet; hit; ttl=(2[0-9]|30)$'
ct_check "operator field: one origin fetch" "$(ct_origin_total "$OPORT")" 1
for h in "$h1" "$h2"; do
    ct_check "neither targeted field forwarded" \
        "$(($(has Cachet-Cache-Control "$h") + $(has CDN-Cache-Control "$h")))" 0
done

# CDN-Cache-Control: no-store over a cacheable Cache-Control: not stored.
U="$P/gen?size=20&cache-control=max-age%3D60&hdr=CDN-Cache-Control:no-store"
ct_origin_reset "$OPORT"
h1=$(fetch "$U")
h2=$(fetch "$U")
ct_check_match "CDN no-store: not stored" "$(hdr Cache-Status "$h2")" '^cachet; fwd='
ct_check "CDN no-store: two origin fetches" "$(ct_origin_total "$OPORT")" 2
ct_check "CDN no-store: Cache-Control forwarded" "$(hdr Cache-Control "$h2")" "max-age=60"
ct_check "CDN no-store: field not forwarded" "$(has CDN-Cache-Control "$h2")" 0
ct_done
