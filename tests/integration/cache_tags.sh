#!/usr/bin/env bash
# Issue 16: tags (surrogate keys) from Surrogate-Key, Cache-Tag and xkey, not
# sent to clients; purge by tag through the admin listener and the PURGE
# method, every Vary variant, exact matching; soft purge with a slow origin
# (stale answers meanwhile, one refresh); the limits counted; the index in
# /stats and /metrics.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin --workers 2
ct_start_proxy --http 127.0.0.1:0 --https off --admin 127.0.0.1:0 \
    --backend "127.0.0.1:$OPORT"
APORT=$(ct_wait_listen proxy admin) || exit 1
A="http://127.0.0.1:$APORT"
hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
cstatus() { hdr Cache-Status "$(curl -s -D - -o /dev/null "$@")"; }
metric() { curl -s "$A/metrics" | awk -v s="$1" '$1 == s { print $2 }'; }
count() { ct_origin_total "$OPORT"; }
MA='cache-control=max-age%3D600'
# URL-encoded "Name: value" for the origin's hdr= knob
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

U1="$P/gen?size=10&$MA&k=1&hdr=$(enc 'Surrogate-Key: prod-1 all')"
U2="$P/gen?size=10&$MA&k=2&hdr=$(enc 'Cache-Tag: prod-2, all,Product-1')"
U3="$P/gen?size=10&$MA&k=3&hdr=$(enc 'xkey: prod-1')"
h=$(curl -s -D - -o /dev/null "$U1")
ct_check "tagged response stored" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
ct_check "Surrogate-Key not sent to the client" "$(hdr Surrogate-Key "$h")" ""
curl -s -o /dev/null "$U2"
curl -s -o /dev/null "$U3"
ct_check "Cache-Tag not sent on a hit either" "$(hdr Cache-Tag "$(curl -s -D - -o /dev/null "$U2")")" ""
ct_check_match "/stats: the index" "$(curl -s "$A/stats")" '"tags":4,"tag_links":6,"tag_bytes":[1-9]'

# ---- purge by tag, admin: exact bytes (Product-1 is another tag)
out=$(curl -s -X POST "$A/purge?tag=prod-1")
ct_check "admin purge ?tag=prod-1: two objects" "$out" '{"purged":2}'
ct_check_match "the log says what the purge cost the admin thread" \
    "$(grep 'admin: purge of 1 tags' "$CT_TMP/proxy.err")" \
    'purge of 1 tags \(prod-1\): 2 objects in [0-9.]+ ms \([0-9.]+ ms CPU\)$'
ct_check_match "prod-1 (Surrogate-Key) purged" "$(cstatus "$U1")" 'fwd=[a-z-]*miss; stored'
ct_check_match "prod-1 (xkey) purged" "$(cstatus "$U3")" 'fwd=[a-z-]*miss; stored'
ct_check_match "Product-1 untouched" "$(cstatus "$U2")" '^cachet; hit;'
ct_check "a tag nobody has: 404" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$A/purge?tag=prod")" 404
# several tags at once
out=$(curl -s -X POST "$A/purge?tag=prod-2&tag=prod-1")
ct_check "admin purge of two tags: three objects" "$out" '{"purged":3}'
ct_check_match "... logged with the first tag named" \
    "$(grep 'purge of 2 tags' "$CT_TMP/proxy.err")" \
    'purge of 2 tags \(prod-2, \.\.\.\): 3 objects'
# a decoded tag's control bytes are escaped in the log (one line per purge)
curl -s -o /dev/null -X POST "$A/purge?tag=a%0Ab%22"
escaped=$(grep -c 'purge of 1 tags (a\\x0Ab"): 0 objects' "$CT_TMP/proxy.err")
ct_check "a tag with a newline: logged escaped, on one line" \
    "$escaped $(grep -c '^b' "$CT_TMP/proxy.err")" "1 0"

# ---- every Vary variant
V="$P/gen?size=10&$MA&k=v&vary=Accept-Encoding&hdr=$(enc 'Surrogate-Key: page')"
curl -s -o /dev/null -H 'Accept-Encoding: gzip' "$V"
curl -s -o /dev/null -H 'Accept-Encoding: br' "$V"
ct_check_match "variant gzip stored" "$(cstatus -H 'Accept-Encoding: gzip' "$V")" '^cachet; hit;'
# ---- the PURGE method with a tag field
code=$(curl -s -o /dev/null -w '%{http_code}' -X PURGE -H 'Surrogate-Key: page' "$P/")
ct_check "PURGE with Surrogate-Key: 200" "$code" 200
ct_check_match "variant gzip purged" "$(cstatus -H 'Accept-Encoding: gzip' "$V")" 'miss; stored'
ct_check_match "variant br purged" "$(cstatus -H 'Accept-Encoding: br' "$V")" 'miss; stored'

# ---- limits: 130 tags on one response, 128 kept, 2 counted
many=$(seq -f 't%g' 1 130 | tr '\n' ' ')
r0=$(metric cachet_cache_tags_refused_total)
curl -s -o /dev/null "$P/gen?size=10&$MA&k=many&hdr=$(enc "Surrogate-Key: $many")"
ct_check "tags over cache.max_tags are counted" "$(($(metric cachet_cache_tags_refused_total) - r0))" 2
ct_check_match "and logged" "$(cat "$CT_TMP/proxy.err")" '2 tags left out \(cache.max_tags = 128'
ct_check "the 128th is kept" "$(curl -s -X POST "$A/purge?tag=t128")" '{"purged":1}'

# ---- soft purge: stale answers at once while one fetch refreshes (slow origin)
S="$P/delay/1500?size=10&$MA%2C%20stale-while-revalidate%3D60&etag=%22s1%22&hdr=$(enc 'Surrogate-Key: soft')"
curl -s -o /dev/null "$S"
ct_check_match "soft: stored, a hit" "$(cstatus "$S")" '^cachet; hit;'
ct_origin_reset "$OPORT"
out=$(curl -s -X POST "$A/purge?tag=soft&soft=1")
ct_check "admin soft purge: one object" "$out" '{"purged":1}'
res=$(seq 20 | xargs -P 20 -I{} curl -s -o /dev/null -D - -w 'time %{time_total}\n' "$S" |
    tr -d '\r' | awk '/^Cache-Status:/ { s = $0 } /^time / { print (s ~ /stale-while-revalidate/ ? "stale" : s ~ /; hit; ttl=[1-9]/ ? "hit" : s), ($2 < 1.5 ? "quick" : "slow") }')
# (the ones that start after the refresh is done get the refreshed object)
ct_check "soft: 20 answers, none waited for the 1.5 s origin" \
    "$(grep -cE '^(stale|hit) quick$' <<<"$res")" 20
ct_check_match "soft: the first ones stale" "$res" 'stale quick'
ct_wait_until 60 ct_origin_total_ge "$OPORT" 1
ct_wait_until 60 sh -c "curl -s -D - -o /dev/null '$S' | grep -q 'Cache-Status: cachet; hit; ttl=[1-9]'"
ct_check "soft: one refresh for 20 requests" "$(count)" 1
ct_check_match "soft: fresh again after it" "$(cstatus "$S")" '^cachet; hit; ttl=[1-9]'
ct_check "/metrics: soft purges counted" "$(metric cachet_cache_soft_purged_total)" 1
# soft purge by URL, and the PURGE method's Soft-Purge field
curl -s -o /dev/null "$U2"
ct_check "admin soft purge by URL" "$(curl -s -X POST "$A/purge?soft=1&url=$(enc "http://127.0.0.1:$PPORT/gen?size=10&$MA&k=2&hdr=$(enc 'Cache-Tag: prod-2, all,Product-1')")")" '{"purged":1}'
curl -s -o /dev/null "$U1"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PURGE -H 'Soft-Purge: 1' -H 'Surrogate-Key: all' "$P/")
ct_check "PURGE Soft-Purge: 1 by tag" "$code" 200
# U1 and U2 carry "all"; U2, soft-purged above without a validator, may
# already be reclaimed as expired by the sweep (500 ms)
ct_check_match "/metrics: soft purges counted" "$(metric cachet_cache_soft_purged_total)" '^[34]$'
# (no validator, no stale window: soft-purged means expired)
ct_check_match "soft-purged object without validator is fetched" "$(cstatus "$U1")" 'miss; stored'

# ---- a large purge: out of the table at once, its tags and memory freed by
# the lurker thread (past the first 64 objects)
b0=$(metric cachet_cache_bytes) l0=$(metric cachet_cache_tag_links)
seq 200 | xargs -P 8 -I{} curl -s -o /dev/null "$P/gen?size=10&$MA&k=bulk{}&hdr=$(enc 'Surrogate-Key: bulk own{}')"
ct_check_match "200 objects stored for the large purge" "$(curl -s "$A/stats")" '"tag_links":[0-9]*[2-9][0-9][0-9],'
ct_check "admin purge of a tag on 200 objects" "$(curl -s -X POST "$A/purge?tag=bulk")" '{"purged":200}'
ct_check_match "none of them found right after" "$(cstatus "$P/gen?size=10&$MA&k=bulk7&hdr=$(enc 'Surrogate-Key: bulk own7')")" 'miss; stored'
curl -s -o /dev/null -X POST "$A/purge?tag=own7"
ct_wait_until 30 sh -c "curl -s '$A/metrics' | grep -qx 'cachet_cache_reclaim_pending 0'"
ct_wait_until 30 sh -c "[ \$(curl -s '$A/metrics' | awk '\$1 == \"cachet_cache_bytes\" { print \$2 }') -le $b0 ]"
ct_check "the lurker freed them all: nothing waits" "$(metric cachet_cache_reclaim_pending)" 0
# (<=: earlier objects may have expired meanwhile)
ct_check "their links are gone from the index" "$(($(metric cachet_cache_tag_links) <= l0))" 1
ct_check "and their bytes are back" "$(($(metric cachet_cache_bytes) <= b0))" 1

ct_done
