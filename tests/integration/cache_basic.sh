#!/usr/bin/env bash
# cachet's cache on the request path (issue 5): miss then hit, Age and
# Cache-Status (RFC 9211), HEAD from a stored GET, client conditionals and
# Range answered from the object, what is never stored (no-store, private,
# Authorization, Set-Cookie, too big), Vary variants, invalidation by POST,
# PURGE, only-if-cached, pass for other methods. Origin fetches are counted
# at cachet-origin (/_origin/stats).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "http"; address = "127.0.0.1:0"; honour_client_cache_control = false; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; max_object_size = "64K"; grace = "0s"; hit_for_miss = "0s"; };
admin = { listen = "off"; };
EOF
ct_start_proxy -c "$CT_TMP/cachet.conf"
# The second http listener ignores the client's Cache-Control; then HTTPS.
IPORT=$(grep -E '^listening on http ' "$CT_TMP/proxy.out" | sed -n '2s/.*://p')
SPORT=$(ct_wait_listen proxy https) || exit 1
MA='cache-control=max-age%3D60'

# hdr FIELD HEADERS: the value of FIELD in a header dump.
hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
# fetch URL [curl args]: headers of a GET (body to $CT_TMP/body).
fetch() { local u=$1; shift; : >"$CT_TMP/body"; curl -s -D - -o "$CT_TMP/body" "$@" "$u"; }
origin_count() { ct_origin_total "$OPORT"; }
status_of() { head -1 <<<"$1" | tr -d '\r'; }

# ---- miss, then hit: one origin fetch, same bytes, Cache-Status and Age.
ct_origin_reset "$OPORT"
h1=$(fetch "$P/bytes/1000?$MA")
b1=$(md5sum <"$CT_TMP/body")
h2=$(fetch "$P/bytes/1000?$MA")
b2=$(md5sum <"$CT_TMP/body")
ct_check "miss: Cache-Status" "$(hdr Cache-Status "$h1")" "cachet; fwd=uri-miss; stored"
ct_check_match "hit: Cache-Status with ttl" "$(hdr Cache-Status "$h2")" '^cachet; hit; ttl=(5[0-9]|60)$'
ct_check "hit: same body" "$b2" "$b1"
ct_check "hit: same body as the origin's" "$b2" "$(curl -s "$O/bytes/1000" | md5sum)"
ct_check_match "hit: Age present" "$(hdr Age "$h2")" '^[0-9]+$'
ct_check "hit: Content-Length" "$(hdr Content-Length "$h2")" 1000
ct_check "miss then hit: one origin fetch" "$(origin_count)" 2 # + the direct one above
ct_check_match "hit: Via" "$(hdr Via "$h2")" '1\.1 cachet'

# Age grows with the time the object spent here (wait for the second to turn).
ct_origin_reset "$OPORT"
fetch "$P/bytes/10?$MA&age=1" >/dev/null
age_grown() { a=$(hdr Age "$(fetch "$P/bytes/10?$MA&age=1")"); [ "${a:-0}" -ge 2 ]; }
ct_wait_until 60 age_grown
ct_check_match "Age grows while stored" "$a" '^[2-9]$'
ct_check "Age test: one origin fetch" "$(origin_count)" 1
# An upstream Age counts (RFC 9111 4.2.3): Age from an upstream cache.
# (cachet-origin does not send Age; covered by the policy unit tests.)

# ---- HEAD answered from the stored GET.
ct_origin_reset "$OPORT"
h=$(curl -s -I "$P/bytes/1000?$MA")
ct_check "HEAD from stored GET: hit" "$(hdr Cache-Status "$h" | cut -d';' -f2)" " hit"
ct_check "HEAD from stored GET: Content-Length" "$(hdr Content-Length "$h")" 1000
ct_check "HEAD from stored GET: no origin fetch" "$(origin_count)" 0

# ---- client conditionals answered 304 from the cache.
U="$P/bytes/500?$MA&etag=%22v1%22&last-modified=@1700000000"
fetch "$U" >/dev/null
ct_origin_reset "$OPORT"
h=$(fetch "$U" -H 'If-None-Match: "v1"')
ct_check "If-None-Match match: 304 from cache" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 304 Not Modified"
ct_check "304 has no body" "$(wc -c <"$CT_TMP/body")" 0
h=$(fetch "$U" -H 'If-None-Match: "other"')
ct_check "If-None-Match mismatch: 200" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 200 OK"
h=$(fetch "$U" -H 'If-Modified-Since: Wed, 15 Nov 2023 00:00:00 GMT')
ct_check "If-Modified-Since later than Last-Modified: 304" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 304 Not Modified"
h=$(fetch "$U" -H 'If-Modified-Since: Sun, 01 Jan 2023 00:00:00 GMT')
ct_check "If-Modified-Since earlier: 200" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 200 OK"
ct_check "conditionals: no origin fetch" "$(origin_count)" 0

# ---- Range on a stored object: 206 with the right bytes, 416 past the end.
h=$(fetch "$U" -H 'Range: bytes=100-199')
ct_check "Range: 206" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 206 Partial Content"
ct_check "Range: Content-Range" "$(hdr Content-Range "$h")" "bytes 100-199/500"
ct_check "Range: the bytes" "$(md5sum <"$CT_TMP/body")" "$(curl -s "$O/bytes/500" | head -c 200 | tail -c 100 | md5sum)"
h=$(fetch "$U" -H 'Range: bytes=-10')
ct_check "Range suffix: last 10 bytes" "$(hdr Content-Range "$h")" "bytes 490-499/500"
h=$(fetch "$U" -H 'Range: bytes=900-')
ct_check "Range past the end: 416" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 416 Range Not Satisfiable"
ct_check "416: Content-Range */len" "$(hdr Content-Range "$h")" "bytes */500"
h=$(fetch "$U" -H 'Range: bytes=0-9' -H 'If-Range: "old"')
ct_check "If-Range mismatch: whole 200" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 200 OK"
ct_origin_reset "$OPORT"

# ---- Range and conditionals on a miss: the whole object is fetched and
# stored, the client gets its 206 / 304 from it as it fills.
ct_origin_reset "$OPORT"
RU="$P/bytes/40000?$MA&etag=%22r1%22&rm=1"
h=$(fetch "$RU" -H 'Range: bytes=30000-30009')
ct_check "Range on a miss: 206" "$(status_of "$h")" "HTTP/1.1 206 Partial Content"
ct_check "Range on a miss: Content-Range" "$(hdr Content-Range "$h")" "bytes 30000-30009/40000"
ct_check "Range on a miss: the bytes" "$(md5sum <"$CT_TMP/body")" "$(curl -s "$O/bytes/40000" | head -c 30010 | tail -c 10 | md5sum)"
ct_check "Range on a miss: stored" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
h=$(fetch "$RU")
ct_check "after Range miss: whole object is a hit" "$(hdr Cache-Status "$h" | cut -d';' -f2) $(wc -c <"$CT_TMP/body")" " hit 40000"
ct_origin_reset "$OPORT"
h=$(fetch "$P/bytes/600?$MA&etag=%22c1%22&cm=1" -H 'If-None-Match: "c1"')
ct_check "If-None-Match on a miss: 304" "$(status_of "$h")" "HTTP/1.1 304 Not Modified"
h=$(fetch "$P/bytes/600?$MA&etag=%22c1%22&cm=1")
ct_check "after the 304 miss: the object is stored" "$(hdr Cache-Status "$h" | cut -d';' -f2) $(wc -c <"$CT_TMP/body")" " hit 600"
ct_check "conditional miss: one origin fetch" "$(origin_count)" 1

# ---- never stored: each request goes to the origin.
never() { # DESC URL PATTERN
    local desc=$1 u=$2 pat=$3
    shift 3
    ct_origin_reset "$OPORT"
    local h
    h=$(fetch "$u" "$@")
    fetch "$u" "$@" >/dev/null
    ct_check "$desc: not stored (2 origin fetches)" "$(origin_count)" 2
    ct_check_match "$desc: Cache-Status says why" "$(hdr Cache-Status "$h")" "$pat"
}
never "no-store" "$P/bytes/10?cache-control=no-store" 'fwd=uri-miss; detail=no-store'
never "private" "$P/bytes/10?cache-control=private%2C%20max-age%3D60" 'detail=private'
never "Set-Cookie" "$P/bytes/10?$MA&set-cookie=a%3D1" 'detail=set-cookie'
ct_origin_reset "$OPORT"
fetch "$P/bytes/11?$MA" -H 'Authorization: Basic eDp5' >/dev/null
fetch "$P/bytes/11?$MA" -H 'Authorization: Basic eDp5' >/dev/null
ct_check "Authorization without public: not stored" "$(origin_count)" 2
ct_origin_reset "$OPORT"
fetch "$P/bytes/12?cache-control=public%2C%20max-age%3D60" -H 'Authorization: Basic eDp5' >/dev/null
fetch "$P/bytes/12?cache-control=public%2C%20max-age%3D60" -H 'Authorization: Basic eDp5' >/dev/null
ct_check "Authorization with public: stored" "$(origin_count)" 1
ct_origin_reset "$OPORT"
h=$(fetch "$P/bytes/10?$MA&rq=1" -H 'Cache-Control: no-store')
fetch "$P/bytes/10?$MA&rq=1" >/dev/null
ct_check "request no-store: not stored" "$(origin_count)" 2

# ---- max_object_size (64K): passed through whole, not stored.
ct_origin_reset "$OPORT"
h=$(fetch "$P/bytes/100000?$MA")
ct_check "too big: whole body" "$(wc -c <"$CT_TMP/body")" 100000
ct_check_match "too big: Cache-Status" "$(hdr Cache-Status "$h")" 'detail=too-big'
fetch "$P/bytes/100000?$MA" >/dev/null
ct_check "too big: not stored" "$(origin_count)" 2
ct_origin_reset "$OPORT"
fetch "$P/bytes/100000?$MA&chunked=1" >/dev/null
ct_check "too big, chunked: whole body" "$(wc -c <"$CT_TMP/body")" 100000
fetch "$P/bytes/100000?$MA&chunked=1" >/dev/null
ct_check "too big, chunked: whole body again" "$(wc -c <"$CT_TMP/body")" 100000
ct_check "too big, chunked: not stored" "$(origin_count)" 2

# ---- chunked response stored and served with Content-Length.
ct_origin_reset "$OPORT"
fetch "$P/bytes/30000?$MA&chunked=1" >/dev/null
h=$(fetch "$P/bytes/30000?$MA&chunked=1")
ct_check "chunked origin: hit" "$(hdr Cache-Status "$h" | cut -d';' -f2)" " hit"
ct_check "chunked origin: hit has Content-Length" "$(hdr Content-Length "$h")" 30000
ct_check "chunked origin: same bytes" "$(md5sum <"$CT_TMP/body")" "$(curl -s "$O/bytes/30000" | md5sum)"
ct_check "chunked origin: one fetch (+1 direct)" "$(origin_count)" 2

# ---- Vary: one variant per Accept-Encoding value.
ct_origin_reset "$OPORT"
V="$P/bytes/64?$MA&vary=Accept-Encoding"
fetch "$V" -H 'Accept-Encoding: gzip' >/dev/null
fetch "$V" -H 'Accept-Encoding: br' >/dev/null
h1=$(fetch "$V" -H 'Accept-Encoding: gzip')
h2=$(fetch "$V" -H 'Accept-Encoding: br')
h3=$(fetch "$V")
ct_check "Vary: gzip variant hit" "$(hdr Cache-Status "$h1" | cut -d';' -f2)" " hit"
ct_check "Vary: br variant hit" "$(hdr Cache-Status "$h2" | cut -d';' -f2)" " hit"
ct_check "Vary: no Accept-Encoding is another variant" "$(hdr Cache-Status "$h3" | cut -d';' -f2)" " fwd=vary-miss"
ct_check "Vary: three variants, three fetches" "$(origin_count)" 3
ct_origin_reset "$OPORT"
fetch "$P/bytes/64?$MA&vary=%2A" >/dev/null
fetch "$P/bytes/64?$MA&vary=%2A" >/dev/null
ct_check "Vary: * is never stored" "$(origin_count)" 2

# ---- invalidation: a POST's 2xx drops the stored GET of its target.
ct_origin_reset "$OPORT"
fetch "$P/echo?$MA" >/dev/null
fetch "$P/echo?$MA" >/dev/null
ct_check "echo stored" "$(origin_count)" 1
h=$(curl -s -D - -o /dev/null -X POST --data 'x=1' "$P/echo?$MA")
ct_check "POST: bypass" "$(hdr Cache-Status "$h")" "cachet; fwd=bypass; detail=method"
h=$(fetch "$P/echo?$MA")
ct_check "after POST: GET refetched" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
ct_check "after POST: 3 origin requests" "$(origin_count)" 3

# ---- PURGE (allowed from loopback by default): 200, then 404; refetch.
ct_origin_reset "$OPORT"
fetch "$P/bytes/77?$MA" >/dev/null
ct_check "PURGE stored: 200" "$(curl -s -o /dev/null -w '%{http_code}' -X PURGE "$P/bytes/77?$MA")" 200
ct_check "PURGE again: 404" "$(curl -s -o /dev/null -w '%{http_code}' -X PURGE "$P/bytes/77?$MA")" 404
h=$(fetch "$P/bytes/77?$MA")
ct_check "after PURGE: miss" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
ct_check "PURGE: not forwarded, 2 fetches" "$(origin_count)" 2

# ---- only-if-cached: 504 when not stored, the object when it is.
ct_origin_reset "$OPORT"
ct_check "only-if-cached, not stored: 504" \
    "$(curl -s -o /dev/null -w '%{http_code}' -H 'Cache-Control: only-if-cached' "$P/bytes/78?$MA")" 504
fetch "$P/bytes/78?$MA" >/dev/null
ct_check "only-if-cached, stored: 200" \
    "$(curl -s -o /dev/null -w '%{http_code}' -H 'Cache-Control: only-if-cached' "$P/bytes/78?$MA")" 200
ct_check "only-if-cached: one fetch" "$(origin_count)" 1
# Request no-cache: validated with the origin (forwarded), not served from the store.
h=$(fetch "$P/bytes/78?$MA" -H 'Cache-Control: no-cache')
ct_check_match "request no-cache goes to the origin" "$(hdr Cache-Status "$h")" 'fwd='
ct_check "request no-cache: a second fetch" "$(origin_count)" 2

# A listener with honour_client_cache_control = false serves it from the store
# (same Host, so the same key).
h=$(fetch "http://127.0.0.1:$IPORT/bytes/78?$MA" -H 'Cache-Control: no-cache' -H "Host: 127.0.0.1:$PPORT")
ct_check_match "listener ignoring client no-cache: a hit" "$(hdr Cache-Status "$h")" '^cachet; hit'
ct_check "listener ignoring client no-cache: no fetch" "$(origin_count)" 2

# ---- HTTPS: the same object, the same zero-copy hit path under TLS.
ct_origin_reset "$OPORT"
curl -sk -o /dev/null "https://127.0.0.1:$SPORT/bytes/50000?$MA"
h=$(fetch "https://127.0.0.1:$SPORT/bytes/50000?$MA" -k)
ct_check_match "HTTPS: hit" "$(hdr Cache-Status "$h")" '^cachet; hit'
ct_check "HTTPS: same bytes" "$(md5sum <"$CT_TMP/body")" "$(curl -s "$O/bytes/50000" | md5sum)"
ct_check "HTTPS: one fetch (+1 direct)" "$(origin_count)" 2
# A small HTTPS/1.1 hit goes out as one copied record (head + fields + body).
curl -sk -o /dev/null "https://127.0.0.1:$SPORT/bytes/1000?$MA&t=1"
h=$(fetch "https://127.0.0.1:$SPORT/bytes/1000?$MA&t=1" -k --http1.1 -H 'Range: bytes=990-')
ct_check "HTTPS small hit, Range: 206 with the last 10 bytes" \
    "$(status_of "$h") $(md5sum <"$CT_TMP/body")" \
    "HTTP/1.1 206 Partial Content $(curl -s "$O/bytes/1000" | tail -c 10 | md5sum)"
h=$(fetch "https://127.0.0.1:$SPORT/bytes/1000?$MA&t=1" -k --http1.1)
ct_check "HTTPS small hit: the whole body" "$(md5sum <"$CT_TMP/body")" "$(curl -s "$O/bytes/1000" | md5sum)"

# ---- targeted cache control: CDN-Cache-Control rules, and is not forwarded.
ct_origin_reset "$OPORT"
h=$(fetch "$P/plaintext?tc=1" ) # no freshness: not stored
fetch "$P/plaintext?tc=1" >/dev/null
ct_check "no freshness information: not stored" "$(origin_count)" 2

# ---- keep-alive and pipelining across hits.
resp=$( { printf 'GET /bytes/1000?%s HTTP/1.1\r\nHost: t\r\n\r\nGET /bytes/1000?%s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n' "$MA" "$MA"; } | timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PPORT; cat >&3; cat <&3")
ct_check "two pipelined requests on one connection" "$(grep -o 'HTTP/1.1 200' <<<"$resp" | wc -l)" 2

ct_stop proxy
ct_check "cachet exits 0 on SIGTERM" "$?" 0
ct_done
