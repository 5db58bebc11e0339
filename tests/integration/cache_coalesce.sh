#!/usr/bin/env bash
# Issue 6 through cachet and cachet-origin: request coalescing (200 clients,
# one cold /delay/500 object -> one origin fetch, 200 correct bodies),
# streaming while fetching, uncacheable answers releasing the waiters at once
# (no serialisation), an origin that dies mid-body (truncated for every
# streaming client, never stored, next request refetches), a slow reader that
# does not hold up a fast one, purge during a fetch.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin --workers 2
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; pool_max_idle = 64; } );
cache = { size = "256M"; max_object_size = "32M"; grace = "0s"; hit_for_miss = "0s";
          waiter_timeout = "2s"; waiter_timeout_action = "504"; };
admin = { listen = "127.0.0.1:0"; };
EOF
ct_start_proxy -c "$CT_TMP/cachet.conf"
APORT=$(ct_wait_listen proxy admin) || exit 1
# metric SERIES: one sample of cachet's /metrics (Prometheus text).
metric() { curl -s "http://127.0.0.1:$APORT/metrics" | awk -v s="$1" '$1 == s { print $2 }'; }
cs_count() { metric "cachet_cache_requests_total{cache_status=\"$1\"}"; }
# an hour: on a loaded, sanitized machine 200 curl processes alone took 50 s
MA='cache-control=max-age%3D3600'
origin_count() { ct_origin_total "$OPORT"; }
now_ms() { date +%s%3N; }

# many N URL: N parallel GETs, one line per response: "status size md5".
many() {
    seq "$1" | xargs -P "$1" -I{} sh -c \
        'r=$(curl -s -o "$0.{}" -w "%{http_code} %{size_download}" "$1"); echo "$r $(md5sum <"$0.{}" | cut -c1-32)"; rm -f "$0.{}"' \
        "$CT_TMP/body" "$2" | sort | uniq -c | sed 's/^ *//'
}

# ---- 200 concurrent requests for one cold cacheable /delay/500 object.
ct_origin_reset "$OPORT"
U="$P/delay/500?size=20000&$MA"
want=$(curl -s "$O/gen?size=20000" | md5sum | cut -c1-32)
ct_origin_reset "$OPORT"
co0=$(cs_count coalesced)
mi0=$(cs_count miss)
hi0=$(cs_count hit)
t0=$(now_ms)
out=$(many 200 "$U")
t1=$(now_ms)
ct_check "200 coalesced clients: 200 complete, correct bodies" "$out" "200 200 20000 $want"
ct_check "200 coalesced clients: one origin fetch" "$(origin_count)" 1
# (clients that arrive once the object is complete are plain hits)
ct_check "/metrics: 1 miss, 199 coalesced or hit" \
    "$(($(cs_count miss) - mi0)) $(($(cs_count coalesced) - co0 + $(cs_count hit) - hi0))" "1 199"
echo "     (200 clients answered in $((t1 - t0)) ms)"

# ---- the same object, now stored: all hits, still one fetch.
t0=$(now_ms)
out=$(many 100 "$U")
t_hits=$(($(now_ms) - t0)) # 100 clients' own cost here: the baseline below
ct_check "100 more: all from the cache" "$out" "100 200 20000 $want"
ct_check "still one origin fetch" "$(origin_count)" 1

# ---- not storable and slow: the waiters are released at once, each fetches
# (no serialisation behind one fetch: about one delay, not 100 x 500 ms).
ct_origin_reset "$OPORT"
t0=$(now_ms)
out=$(many 100 "$P/delay/500?size=1000&cache-control=no-store")
t1=$(now_ms)
ct_check_match "uncacheable: 100 complete answers" "$out" '^100 200 1000 '
ct_check "uncacheable: every client went to the origin" "$(origin_count)" 100
el=$((t1 - t0))
# Serialised, 100 fetches of 500 ms take 50 s more than 100 hits (t_hits:
# starting 100 curl processes, which a loaded or sanitized machine makes
# slow); released at once, about one delay more. Half of 50 s is the bound.
if [ $((el - t_hits)) -lt 25000 ]; then
    ct_pass "uncacheable: waiters released at once ($el ms for 100, hits took $t_hits ms)"
else
    ct_failed "uncacheable: waiters serialised ($el ms for 100, hits took $t_hits ms)"
fi

# ---- streaming while fetching: the first bytes reach a waiter long before
# the origin finishes (trickle: 64 KiB every 100 ms, 1 MiB in ~1.6 s).
ct_origin_reset "$OPORT"
SU="$P/bytes/1048576?trickle=100&trickle-size=65536&$MA&s=1"
curl -s -o "$CT_TMP/first" "$SU" &
fpid=$!
ct_wait_until 20 ct_origin_total_ge "$OPORT" 1
ttfb=$(curl -s -o "$CT_TMP/second" -w '%{time_starttransfer} %{time_total}' "$SU")
wait $fpid
read -r tfb ttot <<<"$ttfb"
ct_check "streaming: the waiter got the whole body" "$(wc -c <"$CT_TMP/second")" 1048576
ct_check "streaming: same bytes as the fetcher" "$(md5sum <"$CT_TMP/second")" "$(md5sum <"$CT_TMP/first")"
ct_check "streaming: one origin fetch" "$(origin_count)" 1
if awk -v a="$tfb" -v b="$ttot" 'BEGIN { exit !(a < b / 2) }'; then
    ct_pass "streaming: first byte ($tfb s) long before the end ($ttot s)"
else
    ct_failed "streaming: waiter got its first byte only at $tfb s of $ttot s"
fi

# ---- HEAD coalesced onto an object still filling without a length: the
# head says nothing about the length (it once said Content-Length: -1).
ct_origin_reset "$OPORT"
HU="$P/bytes/1048576?trickle=100&trickle-size=65536&chunked=1&$MA&h=1"
curl -s -o /dev/null "$HU" &
hpid=$!
ct_wait_until 20 ct_origin_total_ge "$OPORT" 1
hh=$(curl -s -I "$HU" | tr -d '\r')
wait $hpid
ct_check_match "HEAD on a filling chunked object: 200, coalesced" "$hh" '^HTTP/1.1 200 .*Cache-Status: cachet; fwd=miss; collapsed'
ct_check "HEAD on a filling chunked object: no Content-Length" \
    "$(grep -ci '^content-length' <<<"$hh")" 0
ct_check "HEAD on a filling chunked object: one origin fetch" "$(origin_count)" 1

# ---- the fetching client goes away mid-body: the fetch goes on for the
# others (it is stored and complete for a waiter that was streaming from it).
ct_origin_reset "$OPORT"
GU="$P/bytes/1048576?trickle=100&trickle-size=65536&$MA&g=1"
curl -s -o /dev/null --max-time 0.4 "$GU"
code=$?
ct_wait_until 20 ct_origin_total_ge "$OPORT" 1
curl -s -o "$CT_TMP/gone" "$GU"
ct_check "fetcher gone: it was cut (curl 28)" "$code" 28
ct_check "fetcher gone: a later reader gets the whole object" \
    "$(md5sum <"$CT_TMP/gone")" "$(curl -s "$O/bytes/1048576" | md5sum)"
h=$(curl -s -D - -o /dev/null "$GU" | tr -d '\r' | grep -i '^cache-status')
ct_check_match "fetcher gone: the object was stored" "$h" 'cachet; hit'
ct_check "fetcher gone: one origin fetch (+1 direct)" "$(origin_count)" 2

# ---- a slow reader does not hold up a fast one (same object, fetched now).
ct_origin_reset "$OPORT"
BU="$P/bytes/4000000?trickle=20&trickle-size=262144&$MA&s=2"
curl -s --limit-rate 200k -o /dev/null "$BU" &
spid=$!
ct_wait_until 20 ct_origin_total_ge "$OPORT" 1
t0=$(now_ms)
size=$(curl -s -o /dev/null -w '%{size_download}' --max-time 20 "$BU")
t1=$(now_ms)
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
ct_check "slow reader: the fast one got everything" "$size" 4000000
el=$((t1 - t0))
if [ "$el" -lt 12000 ]; then ct_pass "slow reader: fast reader done in $el ms (slow one needs ~20 s)"; else ct_failed "slow reader held the fast one: $el ms"; fi
ct_check "slow reader: one origin fetch" "$(origin_count)" 1
rss=$(awk '/VmRSS/ {print $2}' "/proc/$(ct_pid proxy)/status")
echo "     (cachet RSS after the slow/fast pair: $((rss / 1024)) MiB)"

# ---- origin dies mid-body: every streaming client sees a truncated message,
# nothing is stored, the next request refetches.
ct_origin_reset "$OPORT"
KU="$P/delay/300?size=2000000&close=mid&$MA"
codes=$(seq 5 | xargs -P 5 -I{} sh -c 'curl -s -o /dev/null -w "%{size_download}\n" "$0"; echo "rc=$?"' "$KU" | paste - - | sort | uniq -c | sed 's/^ *//')
if grep -q 'rc=0' <<<"$codes"; then ct_failed "mid-body close: a client saw a complete message" "$codes"; else ct_pass "mid-body close: all 5 clients saw a truncated message"; fi
n1=$(origin_count)
curl -s -o /dev/null "$KU"
ct_check "mid-body close: not stored, next request refetches" "$(origin_count)" $((n1 + 1))
h=$(curl -s -D - -o /dev/null "$P/delay/300?size=2000000&close=mid&$MA" | tr -d '\r' | grep -i '^cache-status')
ct_check_match "mid-body close: still a miss" "$h" 'fwd=uri-miss'

# ---- purge during a fetch: later clients do not get the purged object.
ct_origin_reset "$OPORT"
PU="$P/delay/600?size=100&$MA&p=1"
curl -s -o /dev/null "$PU" &
fpid=$!
ct_wait_until 20 ct_origin_total_ge "$OPORT" 1
ct_check "PURGE of a busy object: 200" "$(curl -s -o /dev/null -w '%{http_code}' -X PURGE "$PU")" 200
wait $fpid
h=$(curl -s -D - -o /dev/null "$PU" | tr -d '\r' | grep -i '^cache-status')
ct_check "after a purge mid-fetch: fetched again" "$h" "Cache-Status: cachet; fwd=uri-miss; stored"
ct_check "purge mid-fetch: two origin fetches" "$(origin_count)" 2

# ---- waiter timeout (2 s, then 504): the fetcher still gets its answer.
ct_origin_reset "$OPORT"
WU="$P/delay/3500?size=10&$MA&wt=1"
curl -s -o /dev/null -w '%{http_code}' "$WU" >"$CT_TMP/fetcher" &
fpid=$!
ct_wait_until 20 ct_origin_total_ge "$OPORT" 1
read -r code t <<<"$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$WU")"
ct_check "waiter timeout: 504" "$code" 504
if awk -v t="$t" 'BEGIN { exit !(t > 1.5 && t < 3.2) }'; then ct_pass "waiter timeout after ~2 s ($t s)"; else ct_failed "waiter timeout took $t s"; fi
wait "$fpid"
ct_check "waiter timeout: the fetcher got 200" "$(cat "$CT_TMP/fetcher")" 200
ct_check "waiter timeout: one origin fetch" "$(origin_count)" 1

ct_stop proxy
ct_check "cachet exits 0 on SIGTERM" "$?" 0
ct_done
