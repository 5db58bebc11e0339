#!/usr/bin/env bash
# Issue 39: fleet peer fetches over TLS (fleet.members[].tls, the keys of
# backends[].tls). Two nodes, each with an HTTPS listener whose certificate
# (from a test CA made here) holds 127.0.0.1, which the members' addresses
# name: a miss on the node that does not own a key is fetched from its
# owner over verified TLS (the owner's peer group counts TLS handshakes,
# resumed ones among them), and the fleet still fetches each key from the
# origin once.
# needs: cachet cachet-origin
# (and openssl: the Makefile's TEST_PKGS)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tls_ca.inc"

D=$CT_TMP
ct_ca_init "$D/ca" || { ct_done; exit; }
ct_ca_cert "$D/ca" node "DNS:node.fleet,IP:127.0.0.1" || exit 1
ct_start_origin --workers 2
read -r PA PB SA SB < <(ct_free_ports 4)
declare -A PORT=([a]=$PA [b]=$PB) ADMIN=()
for n in a b; do
    s=$SA
    [ "$n" = b ] && s=$SB
    cat >"$D/$n.conf" <<EOF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$n]}"; },
           { kind = "https"; address = "127.0.0.1:$s";
             tls = { certificates = ( { cert = "$D/ca/node.pem"; key = "$D/ca/node.key"; } ); }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
admin = { listen = "127.0.0.1:0"; };
fleet = {
  self = "$n";
  members = ( { name = "a"; address = "127.0.0.1:$SA"; tls = { ca = "$D/ca/ca.pem"; }; },
              { name = "b"; address = "127.0.0.1:$SB"; tls = { ca = "$D/ca/ca.pem"; }; } );
};
EOF
    ct_check "-t accepts node $n's members with tls" "$("$CT_BIN/cachet" -t -c "$D/$n.conf" 2>&1)" \
        "configuration ok"
done
for n in a b; do
    ct_start "node$n" "$CT_BIN/cachet" -c "$D/$n.conf"
    ct_wait_listen "node$n" http >/dev/null || { ct_failed "node $n starts"; exit 1; }
    ADMIN[$n]=$(ct_wait_listen "node$n" admin) || exit 1
done
metric() { ct_metric "${ADMIN[$1]}" "cachet_$2"; }
H="Host: fleet.test"

ct_origin_reset "$OPORT"
ok=0
for k in $(seq 1 12); do
    u="/gen?size=2000&cache-control=max-age%3D3600&k=$k"
    a=$(curl -s -H "$H" "http://127.0.0.1:$PA$u" | wc -c)
    b=$(curl -s -H "$H" "http://127.0.0.1:$PB$u" | wc -c)
    [ "$a $b" = "2000 2000" ] && ok=$((ok + 1))
done
ct_check "12 keys asked on both nodes: 24 whole bodies" "$ok" 12
ct_check "... one origin fetch per key for the fleet" "$(ct_origin_total "$OPORT")" 12
peer=$(($(metric a fleet_peer_fetches) + $(metric b fleet_peer_fetches)))
ct_check_match "... the non-owners fetched from the owners ($peer peer fetches)" "$peer" '^([6-9]|1[0-2])$'
hs() { # hs NODE PEER KIND: TLS handshakes NODE made to PEER's peer group
    metric "$1" "upstream_tls_handshakes_$3_total{backend=\"fleet:$2\"}"
}
tls=$(($(hs a b full) + $(hs a b resumed) + $(hs b a full) + $(hs b a resumed)))
ct_check_match "... over TLS ($tls handshakes between the nodes)" "$tls" '^[1-9]'
ct_check "... verified: no TLS failure" "$(grep -c 'TLS handshake failed' "$CT_TMP/nodea.err" "$CT_TMP/nodeb.err" | awk -F: '{s+=$2} END {print s}')" 0

ct_done
