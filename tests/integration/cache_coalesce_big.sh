#!/usr/bin/env bash
# Coalesced waiters on a fill of unknown length (chunked): they hold their
# answer until the fill ends. One that outgrows max_object_size releases
# them to fetch on their own (each gets the whole body, none a cut 200, and
# cachet_cache_waiters_released_total counts them); one that fits is one
# origin fetch for all. A held waiter that goes away is freed; one held
# on a body that keeps coming is answered at its end however long it takes,
# and one held on a body that stalls for cache.waiter_timeout gets its 504.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin --workers 2
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; pool_max_idle = 64; } );
cache = { size = "64M"; max_object_size = "1M"; grace = "0s"; waiter_timeout = "4s"; };
admin = { listen = "127.0.0.1:0"; };
EOF
ct_start_proxy -c "$CT_TMP/cachet.conf"
APORT=$(ct_wait_listen proxy admin) || exit 1
MA='cache-control=max-age%3D3600'
N=5
released() { ct_metric "$APORT" cachet_cache_waiters_released; }

# coalesced URL SIZE [GONE]: one client starts the fill, N-1 more join it
# once the origin has the request (with GONE, one more that gives up after
# 0.5 s: its curl status goes to $CT_TMP/gone); every body must be SIZE
# bytes of the origin's.
coalesced() {
    local want
    want=$(curl -s "$O/bytes/$2" | sha256sum | cut -c1-64)
    ct_origin_reset "$OPORT"
    curl -s -o "$CT_TMP/b.0" "$1" &
    ct_wait_until 20 ct_origin_total_ge "$OPORT" 1
    [ -n "${3:-}" ] && { curl -s -o /dev/null --max-time 0.5 "$1"; echo $? >"$CT_TMP/gone"; } &
    rm -f "$CT_TMP"/h.*
    seq $((N - 1)) | xargs -P "$N" -I{} curl -s -D "$CT_TMP/h.{}" -o "$CT_TMP/b.{}" "$1"
    wait
    for i in $(seq 0 $((N - 1))); do
        echo "$(wc -c <"$CT_TMP/b.$i") $(sha256sum <"$CT_TMP/b.$i" | cut -c1-64)"
    done | sort | uniq -c | sed 's/^ *//'
    echo "= $N $2 $want"
}

# ---- chunked, 2 MiB (twice max_object_size), 64 KiB every 250 ms: it
# outgrows the store after ~4 s, with every waiter already coalesced (the
# waiters start as soon as the origin has the fill's request; on a loaded
# machine that took more than the 1.6 s a 100 ms pace left).
r0=$(released)
out=$(coalesced "$P/bytes/2097152?trickle=250&trickle-size=65536&chunked=1&$MA&big=1" 2097152)
ct_check "chunked over max_object_size: every client byte-exact" \
    "$(head -n -1 <<<"$out")" "$(tail -n 1 <<<"$out" | cut -c3-)"
ct_check "chunked over max_object_size: each waiter fetched on its own" "$(ct_origin_total "$OPORT")" "$N"
ct_check "chunked over max_object_size: $((N - 1)) waiters released" "$(($(released) - r0))" $((N - 1))
ct_check "chunked over max_object_size: the waiters say why" \
    "$(cat "$CT_TMP"/h.* | grep -ci '^cache-status: cachet; fwd=uri-miss; detail=too-big')" $((N - 1))

# ---- chunked, 512 KiB (fits): one origin fetch for all, and a held waiter
# whose client goes away (curl --max-time 0.5) is freed. The body takes
# ~3.2 s (64 KiB every 400 ms), so that client is surely still held when it
# gives up, even if it started seconds late on a loaded machine (at 100 ms a
# piece the body could end within its 0.5 s: "got 0", issue 40).
r0=$(released)
SU="$P/bytes/524288?trickle=400&trickle-size=65536&chunked=1&$MA&small=1"
out=$(coalesced "$SU" 524288 gone)
ct_check "a held waiter that went away: cut by its client (curl 28)" "$(cat "$CT_TMP/gone")" 28
ct_check "chunked within max_object_size: every client byte-exact" \
    "$(head -n -1 <<<"$out")" "$(tail -n 1 <<<"$out" | cut -c3-)"
ct_check "chunked within max_object_size: one origin fetch" "$(ct_origin_total "$OPORT")" 1
ct_check "chunked within max_object_size: none released" "$(($(released) - r0))" 0
ct_check "chunked within max_object_size: the waiters coalesced" \
    "$(cat "$CT_TMP"/h.* | grep -ci '^cache-status: cachet; fwd=miss; collapsed')" $((N - 1))
h=$(curl -s -D - -o /dev/null "$SU" | tr -d '\r' | grep -i '^cache-status')
ct_check_match "chunked within max_object_size: stored" "$h" 'cachet; hit'

# ---- a held wait counts cache.waiter_timeout (4 s) from the body's last
# growth: a chunked body that fits and keeps coming for ~6 s is waited for
# to its end, one origin fetch for both.
want=$(curl -s "$O/bytes/655360" | sha256sum | cut -c1-64)
ct_origin_reset "$OPORT"
TU="$P/bytes/655360?trickle=600&trickle-size=65536&chunked=1&$MA&slow=1"
curl -s -o "$CT_TMP/slow" "$TU" &
fpid=$!
ct_wait_until 20 ct_origin_total_ge "$OPORT" 1
read -r code t <<<"$(curl -s -o "$CT_TMP/slow.w" -w '%{http_code} %{time_total}' "$TU")"
wait "$fpid"
ct_check "held on a growing body past waiter_timeout: 200" "$code" 200
if awk -v t="$t" 'BEGIN { exit !(t > 4.5) }'; then
    ct_pass "held on a growing body: waited past waiter_timeout ($t s)"
else
    ct_failed "held on a growing body: answered after $t s, before the body could end"
fi
ct_check "held on a growing body: the waiter's body byte-exact" \
    "$(sha256sum <"$CT_TMP/slow.w" | cut -c1-64)" "$want"
ct_check "held on a growing body: the fetcher got everything" "$(wc -c <"$CT_TMP/slow")" 655360
ct_check "held on a growing body: one origin fetch" "$(ct_origin_total "$OPORT")" 1

# ---- a body that stalls: its first piece, then nothing for 12 s. A waiter
# that joins after the first piece gets its 504 ~4 s later; the fetcher
# still gets all of it.
ct_origin_reset "$OPORT"
SU="$P/bytes/131072?trickle=12000&trickle-size=65536&chunked=1&$MA&stall=1"
curl -s -o "$CT_TMP/stall" "$SU" &
fpid=$!
# (curl's stdio buffer may hold the piece's last few KiB back from the file)
has_first_piece() { [ "$(stat -c %s "$CT_TMP/stall" 2>/dev/null || echo 0)" -ge 32768 ]; }
ct_wait_until 20 has_first_piece
read -r code t <<<"$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$SU")"
ct_check "held on a stalled body: 504" "$code" 504
if awk -v t="$t" 'BEGIN { exit !(t > 3.5 && t < 11) }'; then
    ct_pass "held on a stalled body: after waiter_timeout, before the body resumed ($t s)"
else
    ct_failed "held on a stalled body: took $t s"
fi
wait "$fpid"
ct_check "held on a stalled body: the fetcher got everything" "$(wc -c <"$CT_TMP/stall")" 131072

ct_stop proxy
ct_check "cachet exits 0 on SIGTERM" "$?" 0
ct_done
