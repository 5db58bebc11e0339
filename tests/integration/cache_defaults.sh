#!/usr/bin/env bash
# Issue 12: the embedded default (no configuration file, only addresses on the
# command line) caches by RFC 9111 as written.
#   - no freshness and no validator: never reused, not even stored (no stale
#     answer without the origin's permission: grace is an opt-in, default 0);
#   - a validator and no freshness, or past its freshness: kept and
#     revalidated with a conditional request (keep defaults to 7 days), and the
#     304 refreshes the stored headers;
#   - stale is served where the response allows it (stale-while-revalidate);
#   - a hit carries the origin's Date, and Age the time spent here;
#   - Age as a list counts by its first member (RFC 9111 §5.1).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin --workers 2
ct_start_proxy --http 127.0.0.1:0 --https 127.0.0.1:0 --admin 127.0.0.1:0 \
    --backend "127.0.0.1:$OPORT"
SPORT=$(ct_wait_listen proxy https) || exit 1
hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
get() { curl -s -D - -o /dev/null "$@"; }
count() { ct_origin_total "$OPORT"; }
# Wait until the wall clock has passed second $1 + $2 (whole seconds: Date
# and Age have a resolution of one second).
past() { [ "$(date +%s)" -ge $(($1 + $2)) ]; }

# ---- -T says what the defaults are.
dump=$("$CT_BIN/cachet" -T)
ct_check "-T: grace defaults to 0s" "$(sed -n 's/^ *grace = \(.*\);/\1/p' <<<"$dump")" '"0s"'
ct_check "-T: keep defaults to 7d" "$(sed -n 's/^ *keep = \(.*\);/\1/p' <<<"$dump")" '"7d"'
ct_check_match "-T: says the defaults follow the RFCs" "$dump" 'defaults follow RFC 9110/9111'
dump=$("$CT_BIN/cachet" -T -c <(printf 'listen = ( { kind = "http"; address = "127.0.0.1:0"; } );\nbackends = ( { address = "127.0.0.1:1"; } );\ncache = { grace = "10s"; };\n'))
ct_check_match "-T: an opt-in grace is marked as a departure from RFC 9111" "$dump" \
    '# departs from RFC 9111 §4.2.4[^
]*
 *grace = "10s";'

# ---- no freshness, no validator (/json): fetched every time, never stale.
ct_origin_reset "$OPORT"
t0=$(date +%s)
h=$(get "$P/json")
ct_check "no freshness: not stored, and why" "$(hdr Cache-Status "$h")" \
    "cachet; fwd=uri-miss; detail=no-freshness"
ct_wait_until 30 past "$t0" 1
h=$(get "$P/json")
ct_check_match "no freshness, a second later: not served stale" "$(hdr Cache-Status "$h")" \
    '^cachet; fwd=[a-z-]*miss; detail=(no-freshness|hit-for-miss)$'
ct_check "no freshness: both went to the origin" "$(count)" 2
# and concurrent requests for it are not serialised behind one fetch
ct_origin_reset "$OPORT"
out=$(seq 20 | xargs -P 20 -I{} curl -s -o /dev/null -w '%{http_code}\n' "$P/delay/300" | sort | uniq -c | sed 's/^ *//')
ct_check "no freshness: 20 concurrent answers" "$out" "20 200"
ct_check "no freshness: each fetched" "$(count)" 20

# ---- a validator and no freshness: stored, every use revalidated (304).
ct_origin_reset "$OPORT"
U="$P/gen?size=100&etag=%22v1%22"
h=$(get "$U")
ct_check "validator, no freshness: stored" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
h=$(get "$U")
ct_check "validator, no freshness: revalidated, 304 from the origin" "$(hdr Cache-Status "$h")" \
    "cachet; fwd=stale; fwd-status=304"
ct_check "validator, no freshness: served whole" "$(hdr Content-Length "$h")" 100
ct_check "validator, no freshness: two origin requests" "$(count)" 2

# ---- expired with a validator: kept past its TTL, revalidated, and the 304's
# fields replace the stored ones (RFC 9111 §4.3.4; X-Origin-Seq counts).
ct_origin_reset "$OPORT"
U="$P/gen?size=100&cache-control=max-age%3D1&etag=%22k1%22"
t0=$(date +%s)
h=$(get "$U")
seq1=$(hdr X-Origin-Seq "$h")
ct_wait_until 30 past "$t0" 2
h=$(get "$U")
ct_check "expired with a validator: kept and revalidated" "$(hdr Cache-Status "$h")" \
    "cachet; fwd=stale; fwd-status=304"
ct_check "expired with a validator: the 304 updated the stored fields" \
    "$(hdr X-Origin-Seq "$h")" "$((seq1 + 1))"

# ---- expired without a validator, no stale-while-revalidate: fetched again.
ct_origin_reset "$OPORT"
U="$P/gen?size=100&cache-control=max-age%3D1"
t0=$(date +%s)
get "$U" >/dev/null
ct_wait_until 30 past "$t0" 2
h=$(get "$U")
ct_check_match "expired, no validator: not served stale" "$(hdr Cache-Status "$h")" \
    '^cachet; fwd=[a-z-]*miss; stored$'
ct_check "expired, no validator: two origin requests" "$(count)" 2

# ---- the response allows stale: served at once while one fetch refreshes.
ct_origin_reset "$OPORT"
U="$P/gen?size=100&cache-control=max-age%3D1%2C%20stale-while-revalidate%3D60"
t0=$(date +%s)
get "$U" >/dev/null
ct_wait_until 30 past "$t0" 2
h=$(get "$U")
ct_check_match "stale-while-revalidate from the response: stale hit" "$(hdr Cache-Status "$h")" \
    '^cachet; hit; ttl=-?[0-9]+; detail=stale-while-revalidate$'

# ---- a hit carries the origin's Date; Age says how long it has been here.
ct_origin_reset "$OPORT"
U="$P/gen?size=10&cache-control=max-age%3D600&d=1"
S="https://127.0.0.1:$SPORT/gen?size=10&cache-control=max-age%3D600&d=1"
t0=$(date +%s)
date1=$(hdr Date "$(get "$U")")
date2=$(hdr Date "$(get -k "$S")")
ct_wait_until 30 past "$t0" 2
h=$(get "$U")
ct_check_match "Date: a hit" "$(hdr Cache-Status "$h")" '^cachet; hit; ttl='
ct_check "Date: the hit carries the origin's Date, not a new one" "$(hdr Date "$h")" "$date1"
ct_check_match "Age: the seconds since then" "$(hdr Age "$h")" '^[1-9][0-9]*$'
h=$(get -k "$S")
ct_check "Date: the same over HTTPS" "$(hdr Cache-Status "$h" | cut -d';' -f2) $(hdr Date "$h")" " hit $date2"

# ---- Age as a list or on two lines: the first member counts (§5.1).
age_case() { # DESC AGE-QUERY EXPECTED-SECOND-STATUS-REGEX
    ct_origin_reset "$OPORT"
    local u="$P/gen?size=10&cache-control=max-age%3D3600&$2"
    get "$u" >/dev/null
    ct_check_match "$1" "$(hdr Cache-Status "$(get "$u")")" "$3"
}
age_case 'Age: 7200, 0 on max-age=3600 is stale: not reused' 'hdr=Age%3A%207200%2C%200' \
    '^cachet; fwd=[a-z-]*miss; detail=(no-freshness|hit-for-miss)$'
age_case 'Age: 7200 then Age: 0 (two lines) is stale: not reused' 'hdr=Age%3A%207200&hdr=Age%3A%200' \
    '^cachet; fwd=[a-z-]*miss; detail=(no-freshness|hit-for-miss)$'
age_case 'Age: 0, 7200 is fresh: a hit' 'hdr=Age%3A%200%2C%207200' '^cachet; hit; ttl=3[0-9]{3}$'
age_case 'Age: 1a is invalid and ignored (§5.1): a hit' 'hdr=Age%3A%201a' '^cachet; hit; ttl=3[0-9]{3}$'

ct_done
