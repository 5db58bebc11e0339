#!/usr/bin/env bash
# The idle trim of an HTTP/2 connection (issue 14; proxy/h2/h2_serve.c,
# h2_mem.c): a connection makes a request, idles past the trim (1 s with no
# stream: nghttp2's frame buffer and the empty stream map give their pages
# back), which /metrics counts (h2_idle_trims, h2_idle_trim_bytes); then the
# same connection makes more requests, several at once and then again (hits,
# a miss streaming past the stream window, a small response), and every one
# is answered whole with the origin's bytes.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PY=/usr/bin/python3
PEER="$CT_SRC/tests/integration/h2_peer.py"
ct_start_origin
cat >"$CT_TMP/cachet.conf" <<EOF2
workers = 1;
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; http2 = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
limits = { keepalive_timeout = "120s"; };
EOF2
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/cachet.conf" --admin 127.0.0.1:0
SPORT=$(ct_wait_listen proxy https) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
MA='cache-control=max-age%3D60'
A="/bytes/30000?$MA" B="/bytes/100000?$MA" C="/bytes/700?$MA"

trims0=$(ct_metric "$APORT" cachet_h2_idle_trims)
# the peer waits on a FIFO for the go-ahead; its lines go to a file
mkfifo "$CT_TMP/go"
exec 7<>"$CT_TMP/go"
"$PY" "$PEER" "$SPORT" trim "$A" "$B" "$C" <"$CT_TMP/go" >"$CT_TMP/peer.out" &
peer=$!
ct_wait_until 60 grep -qx ready "$CT_TMP/peer.out"
ct_check "before the trim: the first response" "$(head -1 "$CT_TMP/peer.out")" \
    "$A 200 30000 $(curl -s "http://127.0.0.1:$OPORT/bytes/30000" | md5sum | cut -d' ' -f1)"

trimmed() { [ "$(ct_metric "$APORT" cachet_h2_idle_trims)" -gt "$trims0" ]; }
ct_wait_until 60 trimmed
ct_check_match "the idle connection was trimmed (h2_idle_trims)" \
    "$(ct_metric "$APORT" cachet_h2_idle_trims)" '^[1-9][0-9]*$'
ct_check_match "the trim gave pages back (h2_idle_trim_bytes)" \
    "$(ct_metric "$APORT" cachet_h2_idle_trim_bytes)" '^[1-9][0-9]{3,}$'

echo go >&7
exec 7>&-
wait "$peer"
mapfile -t after < <(sed '1,/^ready$/d' "$CT_TMP/peer.out")
ref() { echo "$1 200 $2 $(curl -s "http://127.0.0.1:$OPORT/bytes/$2" | md5sum | cut -d' ' -f1)"; }
want=("$(ref "$A" 30000)" "$(ref "$B" 100000)" "$(ref "$C" 700)")
ct_check "after the trim, three streams at once on the same connection" \
    "${after[*]:0:3}" "${want[*]}"
ct_check "after the trim, the same three again (hits)" "${after[*]:3:3}" "${want[*]}"
ct_check "no reset, no GOAWAY" "${#after[@]}" 6
ct_done
