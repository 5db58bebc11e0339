#!/usr/bin/env bash
# Session-ticket key rotation, end to end (~2 minutes: the shortest rotation
# interval the config accepts is 1m). A ticket made before one rotation still
# resumes (the previous key decrypts it); made before two, it does not (full
# handshake). Tickets only: the session cache is off, so a "Reused" can only
# come from a ticket. Two workers share the keys.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/rot.conf" <<EOF
workers = 2;
listen = ( { kind = "https"; address = "127.0.0.1:0";
             tls = { self_signed = true; session_cache = false;
                     ticket_key_rotation = "1m"; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/rot.conf" --admin off
SPORT=$(ct_wait_listen proxy https) || exit 1
T0=$(date +%s) # the key store starts its clock at startup, just before this

s_client() {
    printf 'GET /1k HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' |
        timeout 10 openssl s_client -connect "127.0.0.1:$SPORT" -ign_eof "$@" 2>&1
}
# resumed VERSION FILE: "Reused" or "New"
resumed() { s_client "$1" -sess_in "$2" | sed -n 's/^\(Reused\|New\),.*/\1/p' | head -1; }
wait_until() { # seconds since T0; bounded by the test's own timeout
    local left=$(($1 - ($(date +%s) - T0)))
    [ "$left" -gt 0 ] && sleep "$left"
}

for v in -tls1_3 -tls1_2; do
    s_client "$v" -sess_out "$CT_TMP/gen0$v" >/dev/null
    ct_check "$v: ticket resumes before any rotation" "$(resumed "$v" "$CT_TMP/gen0$v")" Reused
done
wait_until 66 # rotation 1 at ~60 s
for v in -tls1_3 -tls1_2; do
    ct_check "$v: ticket from before one rotation still resumes" \
        "$(resumed "$v" "$CT_TMP/gen0$v")" Reused
    s_client "$v" -sess_out "$CT_TMP/gen1$v" >/dev/null
done
wait_until 126 # rotation 2 at ~120 s
for v in -tls1_3 -tls1_2; do
    ct_check "$v: ticket from before two rotations gets a full handshake" \
        "$(resumed "$v" "$CT_TMP/gen0$v")" New
    ct_check "$v: ticket from before one rotation resumes" "$(resumed "$v" "$CT_TMP/gen1$v")" Reused
done
ct_check "still serving" "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$SPORT/1k")" 200
ct_done
