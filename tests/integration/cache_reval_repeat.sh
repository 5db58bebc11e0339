#!/usr/bin/env bash
# Regression: an object revalidated by a 304 borrows the body of the object it
# replaced; a second 304 on that borrowed head must still serve the original
# body (it served Content-Length: 0 once). Revalidated several times in a row,
# every answer keeps the whole body. Time itself is under test: the object
# lives 1 s, so the script waits for it to go stale between requests.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/c.conf" <<EOF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { grace = "0s"; keep = "60s"; };
admin = { listen = "off"; };
EOF
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/c.conf"
PORT=$(ct_wait_listen proxy http) || exit 1
URL="http://127.0.0.1:$PORT/gen?size=1500&cache-control=max-age%3D1&etag=%22v1%22"

for round in 1 2 3 4; do
    out=$(curl -s -o "$CT_TMP/body" -w '%{http_code} %{size_download}' -D "$CT_TMP/h" "$URL")
    cs=$(tr -d '\r' <"$CT_TMP/h" | sed -n 's/^cache-status: //Ip')
    ct_check "round $round: whole body ($cs)" "$out" "200 1500"
    sleep 1.2 # let the 1 s object go stale: the next request revalidates it
done
# one fetch, then one conditional request per stale round
ct_check "origin saw 1 fetch + 3 revalidations" "$(ct_origin_total "$OPORT")" "4"
ct_done
