#!/usr/bin/env bash
# Issue 16: bans through the admin listener (POST /ban, GET /bans) on a real
# cachet + cachet-origin: the matching objects are gone (or stale, soft),
# the others untouched, objects stored after the ban untouched; the lurker
# drops the ban; parse errors are a 400 that says where; req.* refused; the
# list is bounded; the counters in /stats and /metrics; the admin token
# (401 without it, the listener refused beyond loopback without one); and
# `cachet ctl ban / purge / stats / bans` with their exit codes.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 2
OPORT=$(ct_wait_listen origin) || exit 1
# A slow lurker (one object per 100 ms), so the ban can be seen in /bans
# before it is dropped; a short list, to see its bound.
CONF="$CT_TMP/cachet.conf"
cat >"$CONF" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "127.0.0.1:0"; };
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { max_bans = 3; ban_lurker_batch = 1; ban_lurker_sleep = "100ms"; };
EOF
ct_start proxy "$CT_BIN/cachet" -c "$CONF"
PPORT=$(ct_wait_listen proxy http) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
P="http://127.0.0.1:$PPORT"
A="http://127.0.0.1:$APORT"
hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
cstatus() { hdr Cache-Status "$(curl -s -D - -o /dev/null "$@")"; }
metric() { curl -s "$A/metrics" | awk -v s="$1" '$1 == s { print $2 }'; }
# URL-encoded "Name: value" for the origin's hdr= knob (names and values here
# are letters, digits and '-': only ':' and ' ' need it)
enc() { local v=${1//:/%3A}; echo "${v// /%20}"; }
MA='cache-control=max-age%3D600'
# url K TAG [SECTION]: an object of the origin carrying "X-Tag: TAG", its
# target starting with /gen?p=SECTION& (the origin ignores p)
url() { echo "$P/gen?p=${3:-any}&size=10&$MA&k=$1&hdr=$(enc "X-Tag: $2")"; }

# ---- 30 objects: img and css sections, tags a* and b*
for i in $(seq 1 30); do
    t=$([ $((i % 2)) = 0 ] && echo "a$i" || echo "b$i")
    curl -s -o /dev/null "$(url "$i" "$t" "$([ "$i" -le 15 ] && echo img || echo css)")"
done
ct_check_match "stored" "$(cstatus "$(url 2 a2 img)")" '^cachet; hit;'
ct_origin_reset "$OPORT"
# (built now: the lurker must not get ahead while python starts)
U2=$(url 2 a2 img) U14=$(url 14 a14 img) U3=$(url 3 b3 img) U16=$(url 16 a16 css)
U100=$(url 100 a100 img) U12=$(url 12 a12 img)

# ---- POST /ban: the issue's example
out=$(curl -s -X POST --data-binary 'obj.http.x-tag ~ "^a" && obj.url ^= "/gen?p=img&"' "$A/ban")
ct_check "POST /ban: its id and the list's size" "$out" \
    '{"id":1,"soft":false,"expression":"obj.http.x-tag ~ \"^a\" && obj.url ^= \"/gen?p=img&\"","bans_active":1}'
# its memory is charged to the cache (issue 16): text, values, the regex's code
bb=$(metric cachet_cache_ban_bytes)
ct_check_match "/metrics: the ban's bytes" "$bb" '^[1-9][0-9]+$'
ct_check_match "/stats: the ban's bytes" "$(curl -s "$A/stats")" "\"ban_bytes\":$bb,"
# objects stored after the ban are not banned
curl -s -o /dev/null "$U100"
bans=$(curl -s "$A/bans")
ct_check_match "GET /bans: the ban, its age and counts" "$bans" \
    '^\{"bans":\[\{"id":1,"expression":"obj.http.x-tag ~ \\"\^a\\" && obj.url \^= \\"/gen\?p=img&\\"","soft":false,"age_s":[0-9.]+,"tested":[0-9]+,"banned":[0-9]+\}\],"bans_active":1,'
# (found by this lookup: fwd=miss; by the lurker first: the key is gone, uri-miss)
ct_check_match "banned: an a tag in img" "$(cstatus "$U2")" 'miss; stored'
ct_check_match "banned: another" "$(cstatus "$U14")" 'miss; stored'
ct_check_match "untouched: a b tag in img" "$(cstatus "$U3")" '^cachet; hit;'
ct_check_match "untouched: an a tag in css" "$(cstatus "$U16")" '^cachet; hit;'
ct_check_match "untouched: stored after the ban" "$(cstatus "$U100")" '^cachet; hit;'
ct_check "the origin saw only the banned ones again" "$(ct_origin_total "$OPORT")" 3

# ---- the lurker works the rest off and drops the ban
ct_wait_until 60 sh -c "curl -s '$A/bans' | grep -q '\"bans_active\":0'" ||
    ct_failed "the lurker did not drop the ban" "$(curl -s "$A/bans")"
ct_check "after the lurker: the list is empty" "$(curl -s "$A/bans" | sed 's/,"bans_active".*//')" '{"bans":[]'
# 7 of img 1..15 are a-tagged (2, 4, ... 14): all banned, by lookups or the lurker
ct_check "/metrics: objects banned" "$(metric cachet_cache_banned_total)" 7
ct_check "/metrics: bans completed" "$(metric cachet_cache_bans_completed_total)" 1
ct_check "/metrics: each older object tested once (lookups and lurker)" "$(metric cachet_cache_ban_tested_total)" 30
ct_check_match "/metrics: the lurker tested most" "$(metric cachet_cache_ban_lurker_tested_total)" '^(2[5-9]|30)$'
ct_check "/metrics: lurker idle" "$(metric cachet_cache_ban_lurker_progress)" 1.000
ct_check "/metrics: a dropped ban's bytes given back" "$(metric cachet_cache_ban_bytes)" 0
ct_check_match "/stats: the ban counters" "$(curl -s "$A/stats")" '"banned":7,.*"bans_active":0,"bans_added":1,'
ct_check_match "a banned one the lurker found is gone too" "$(cstatus "$U12")" 'uri-miss; stored'

# ---- errors: 400 with the column; req.* refused; 405; the list's bound
code=$(curl -s -o "$CT_TMP/e" -w '%{http_code}' -X POST --data-binary 'obj.url = "/a"' "$A/ban")
ct_check "bad expression: 400" "$code" 400
ct_check "bad expression: says where" "$(cat "$CT_TMP/e")" \
    '{"error":"column 9: expected ==, !=, ~, !~ or ^=, found '"'"'='"'"'"}'
code=$(curl -s -o "$CT_TMP/e" -w '%{http_code}' -X POST --data-binary 'req.url ~ "^/img/"' "$A/ban")
ct_check "req.* ban: 400" "$code" 400
ct_check_match "req.* ban: why" "$(cat "$CT_TMP/e")" 'req.url: req.\* terms need the request, which the lurker does not have'
ct_check "GET /ban: 405" "$(curl -s -o /dev/null -w '%{http_code}' "$A/ban")" 405
ct_check "empty ban: 400" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$A/ban")" 400
ct_check "nothing was added" "$(metric cachet_cache_bans_added_total)" 1
for i in 1 2 3; do curl -s -o /dev/null -X POST --data-binary "obj.url == \"/none$i\"" "$A/ban"; done
ct_wait_until 60 sh -c "curl -s '$A/bans' | grep -q '\"bans_active\":0'"

# ---- soft ban: stale, revalidated, not gone
S="$P/delay/300?size=10&$MA%2C%20stale-while-revalidate%3D60&etag=%22s1%22&hdr=$(enc 'X-Tag: soft')"
curl -s -o /dev/null "$S"
ct_check_match "soft: stored" "$(cstatus "$S")" '^cachet; hit;'
out=$(curl -s -X POST --data-binary 'obj.http.X-Tag == "soft"' "$A/ban?soft=1")
ct_check_match "POST /ban?soft=1" "$out" '"soft":true'
ct_check_match "soft-banned: served stale at once" "$(cstatus "$S")" '; hit; ttl=-?[0-9]+; detail=stale-while-revalidate'
ct_check "/metrics: soft bans counted" "$(metric cachet_cache_soft_banned_total)" 1

# ---- cachet ctl
CTL=("$CT_BIN/cachet" ctl)
curl -s -o /dev/null "$(url 200 ctl-a imgy)"
out=$("${CTL[@]}" ban --admin "127.0.0.1:$APORT" 'obj.url ^= "/gen?p=imgy&"')
ct_check "ctl ban: exit 0" "$?" 0
ct_check_match "ctl ban: prints the answer" "$out" '^\{"id":[0-9]+,"soft":false,'
ct_check_match "ctl ban: the object is gone" "$(cstatus "$(url 200 ctl-a imgy)")" 'miss; stored'
err=$("${CTL[@]}" ban --admin "127.0.0.1:$APORT" 'obj.url ^= ' 2>&1 >/dev/null)
ct_check "ctl ban of a bad expression: exit 3" "$?" 3
ct_check "ctl ban: the reason, unescaped" "$err" 'cachet ctl ban: 400: column 11: expected a "quoted" value'
"${CTL[@]}" ban >/dev/null 2>&1
ct_check "ctl ban without an expression: exit 2" "$?" 2
curl -s -o /dev/null "$P/gen?size=10&$MA&k=ctl&hdr=$(enc 'Surrogate-Key: ctl-tag')"
out=$("${CTL[@]}" purge --admin "127.0.0.1:$APORT" --tag ctl-tag)
ct_check "ctl purge --tag" "$out" '{"purged":1}'
out=$("${CTL[@]}" purge --admin "127.0.0.1:$APORT" --tag ctl-tag)
ct_check "ctl purge of nothing: exit 0" "$?:$out" '0:{"purged":0}'
curl -s -o /dev/null "$(url 300 u imgz)"
out=$("${CTL[@]}" purge --admin "127.0.0.1:$APORT" --url "$(url 300 u imgz)" --soft)
ct_check "ctl purge --url --soft" "$out" '{"purged":1}'
out=$("${CTL[@]}" purge --admin "127.0.0.1:$APORT" --prefix "$P/gen?p=img")
ct_check_match "ctl purge --prefix" "$out" '^\{"purged":[1-9][0-9]*\}$'
"${CTL[@]}" purge --admin "127.0.0.1:$APORT" --tag a --url "$P/" >/dev/null 2>&1
ct_check "ctl purge of two kinds: exit 2" "$?" 2
out=$("${CTL[@]}" stats --admin "127.0.0.1:$APORT")
ct_check_match "ctl stats: name value lines" "$out" $'(^|\n)cache\\.bans_added [0-9]+(\n|$)'
ct_check_match "ctl bans" "$("${CTL[@]}" bans --admin "127.0.0.1:$APORT")" '^\{"bans":\['
"${CTL[@]}" stats --admin 127.0.0.1:1 >/dev/null 2>&1
ct_check "ctl stats, nothing listening: exit 1" "$?" 1

# ---- the admin token
TOK="$CT_TMP/token"
echo "0123456789abcdef-integration" >"$TOK"
C2="$CT_TMP/token.conf"
cat >"$C2" <<EOF
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "127.0.0.1:0"; token_file = "$TOK"; };
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { max_bans = 1; ban_lurker_sleep = "1m"; };
EOF
ct_start tok "$CT_BIN/cachet" -c "$C2"
TPORT=$(ct_wait_listen tok admin) || exit 1
T="http://127.0.0.1:$TPORT"
ct_check "token: /stats without it: 401" "$(curl -s -o /dev/null -w '%{http_code}' "$T/stats")" 401
ct_check_match "token: says how" "$(curl -s -D - -o /dev/null "$T/stats" | tr -d '\r')" 'WWW-Authenticate: Bearer realm="cachet admin"'
ct_check "token: a wrong one: 401" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer 0123456789abcdef-integratioN' "$T/stats")" 401
ct_check "token: POST /ban without it: 401" "$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary 'obj.url == "/"' "$T/ban")" 401
ct_check "token: with it: 200" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer 0123456789abcdef-integration' "$T/stats")" 200
ct_check "token: the page itself needs none" "$(curl -s -o /dev/null -w '%{http_code}' "$T/")" 200
"${CTL[@]}" stats --admin "127.0.0.1:$TPORT" >/dev/null 2>"$CT_TMP/e"
ct_check "ctl without the token: exit 3" "$?" 3
ct_check_match "ctl without the token: why" "$(cat "$CT_TMP/e")" '401: the admin listener needs its token'
"${CTL[@]}" stats --admin "127.0.0.1:$TPORT" --token-file "$TOK" >/dev/null
ct_check "ctl --token-file: exit 0" "$?" 0
# (the file the ctl reads names the port the running one got)
sed "s/127.0.0.1:0\"; token_file/127.0.0.1:$TPORT\"; token_file/" "$C2" >"$CT_TMP/ctl.conf"
"${CTL[@]}" ban -c "$CT_TMP/ctl.conf" 'obj.url == "/nothing"' >/dev/null
ct_check "ctl -c FILE takes the file's token" "$?" 0
# the list's bound (max_bans = 1 here; this lurker wakes once a minute)
code=$(curl -s -o "$CT_TMP/e" -w '%{http_code}' -H 'Authorization: Bearer 0123456789abcdef-integration' \
    -X POST --data-binary 'obj.url == "/x"' "$T/ban")
ct_check "a second ban past max_bans = 1: 503" "$code" 503
ct_check_match "and why" "$(cat "$CT_TMP/e")" '1 bans are active, the most cache.max_bans allows'
"${CTL[@]}" ban -c "$CT_TMP/ctl.conf" 'obj.url == "/y"' 2>"$CT_TMP/e" >/dev/null
ct_check "ctl ban past the bound: exit 3" "$?" 3
ct_check_match "ctl ban past the bound: why" "$(cat "$CT_TMP/e")" 'cachet ctl ban: 503: 1 bans are active'
# the lurker: a thread of its own, named, 10 nicer than the rest (the
# workers go first); its pause is the config's, and a reload reaches it at
# once, though it is asleep for its old pause (1 m: a lurker not woken by the
# reload would drop the ban only a minute after its start)
C4="$CT_TMP/lurker.conf"
cat >"$C4" <<EOF
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "127.0.0.1:0"; };
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { ban_lurker_sleep = "1m"; max_bans = 1; };
EOF
ct_start lz "$CT_BIN/cachet" -c "$C4"
LPORT=$(ct_wait_listen lz admin) || exit 1
L="http://127.0.0.1:$LPORT"
curl -s -o /dev/null -X POST --data-binary 'obj.url == "/nothing"' "$L/ban"
bans_active() { curl -s "$L/bans" | grep -o '"bans_active":[0-9]*'; }
ct_check "the ban waits for the lurker" "$(bans_active)" '"bans_active":1'
LZ=$(ct_pid lz)
lt=$(grep -l '^cachet-lurker$' /proc/"$LZ"/task/*/comm 2>/dev/null | head -1)
ct_check_match "the lurker has a thread of its own" "$lt" '/task/[0-9]+/comm$'
nice_of() { sed 's/.*) //' "$1/stat" 2>/dev/null | awk '{ print $17 }'; }
main_nice=$(nice_of "/proc/$LZ")
ct_check "10 nicer than the main thread" "$(nice_of "${lt%/comm}")" "$((main_nice + 10 > 19 ? 19 : main_nice + 10))"
# a reload applies cache.max_bans too (within the second)
ban_code() { curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary "obj.url == \"/$1\"" "$L/ban"; }
ct_check "max_bans = 1: a second ban refused" "$(ban_code b)" 503
sed -i 's/max_bans = 1;/max_bans = 2;/' "$C4"
t0=$SECONDS
kill -HUP "$LZ"
second_taken() { [ "$(ban_code c)" = 200 ]; }
ct_wait_until 90 second_taken
ct_check "reloaded to max_bans = 2: a second ban taken" "$?:$(( SECONDS - t0 < 30 ))" 0:1
sed -i 's/ban_lurker_sleep = "1m"/ban_lurker_sleep = "10ms"/' "$C4"
t0=$SECONDS
kill -HUP "$LZ"
bans_dropped() { [ "$(bans_active)" = '"bans_active":0' ]; }
ct_wait_until 90 bans_dropped
# (ct_wait_until counts polls, not seconds: the clock tells how long it took)
ct_check "reloaded to 10ms: the lurker drops the ban at once" "$?:$(( SECONDS - t0 < 30 ))" 0:1
# cachet -T says an inline token is set, never what it is
printf 'listen = ( { kind = "http"; address = "127.0.0.1:0"; } );\nbackends = ( { address = "127.0.0.1:%s"; } );\nadmin = { listen = "127.0.0.1:0"; token = "0123456789abcdef-inline"; };\n' "$OPORT" >"$CT_TMP/inline.conf"
dump=$("$CT_BIN/cachet" -T -c "$CT_TMP/inline.conf")
ct_check_match "cachet -T: an inline admin.token is said to be set" "$dump" '# token = \(set; not shown\);'
ct_check "cachet -T: never the token itself" "$(grep -c 0123456789abcdef-inline <<<"$dump")" 0
# beyond loopback: refused without a token, with FILE:LINE; accepted with one
C3="$CT_TMP/wide.conf"
printf 'listen = ( { kind = "http"; address = "127.0.0.1:0"; } );\nbackends = ( { address = "127.0.0.1:%s"; } );\nadmin = { listen = "0.0.0.0:0"; };\n' "$OPORT" >"$C3"
err=$("$CT_BIN/cachet" -t -c "$C3" 2>&1)
ct_check "admin beyond loopback without a token: refused" "$?" 1
ct_check_match "with FILE:LINE" "$err" "$C3:3: admin.listen: 0.0.0.0 is beyond loopback without admin.token"
sed -i "s|0.0.0.0:0\";|0.0.0.0:0\"; token_file = \"$TOK\";|" "$C3"
"$CT_BIN/cachet" -t -c "$C3" >/dev/null 2>&1
ct_check "admin beyond loopback with a token: accepted" "$?" 0

ct_done
