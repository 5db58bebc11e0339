#!/usr/bin/env bash
# No memory kept per TLS connection: after a warm-up, 10 000 more full
# handshakes (openssl s_time -new, four clients at once, each connection a
# new TLS 1.3 session) leave cachet's RSS flat. Under ASan (CT_SANITIZE
# builds) the RSS is ASan's; there the check is its leak report at exit.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
ct_start proxy "$CT_BIN/cachet" --http off --https 127.0.0.1:0 --admin off --workers 1 \
    --backend "127.0.0.1:$OPORT"
SPORT=$(ct_wait_listen proxy https) || exit 1
PID=$(ct_pid proxy)

# round SECONDS: four parallel s_time clients; prints the handshakes made.
round() {
    local i
    for i in 1 2 3 4; do
        timeout $(($1 + 10)) openssl s_time -connect "127.0.0.1:$SPORT" -new -time "$1" 2>&1 |
            sed -n 's/^\([0-9]*\) connections in [0-9]* real seconds.*/\1/p' &
    done | awk '{n += $1} END {print n + 0}'
}

warm=$(round 2)
ct_check_match "warm-up handshakes made" "$warm" '^[1-9][0-9]+$'
before=$(ct_rss_kb "$PID")
total=0
# rounds until 10 000, bounded: a sanitized build on a loaded machine is slow
for ((r = 0; r < 60 && total < 10000; r++)); do
    total=$((total + $(round 3)))
done
after=$(ct_rss_kb "$PID")
echo "    $total handshakes: RSS ${before} kB -> ${after} kB"
ct_check_match "10 000 full handshakes made" "$total" '^[0-9]{5,}$'
ct_check "served after the loop" \
    "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$SPORT/1k")" 200
if ldd "$CT_BIN/cachet" 2>/dev/null | grep -q libasan; then
    ct_stop proxy
    ct_check "cachet exits 0 (ASan leak check at exit)" "$?" 0
    ct_check "no leak report (ASan)" "$(grep -c 'LeakSanitizer' "$CT_TMP/proxy.err")" 0
else
    # A leak of 100 bytes per handshake would show as ~1 MB.
    ct_check_match "RSS flat: grew $((after - before)) kB (< 512 kB)" "$((after - before))" \
        '^(-?[0-9]{1,2}|-?[1-4][0-9]{2}|50[0-9]|51[01])$'
fi
ct_done
