# needs: cachet-origin
# cachet-origin conditional requests (304/412, If-None-Match over
# If-Modified-Since) and byte ranges (206, 416, multi-range answered 200).
. "$(dirname "$0")/lib.sh"

hdr() { grep -i "^$1:" | head -1 | cut -d' ' -f2- | tr -d '\r'; }
code() { : >"$CT_TMP/b"; curl -s -o "$CT_TMP/b" -D "$CT_TMP/h" -w '%{http_code}\n' "$@"; }
pattern() { yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ | head -c "$1"; }

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 2
PORT=$(ct_wait_listen origin) || { ct_failed "origin starts"; ct_done; exit 1; }
U=http://127.0.0.1:$PORT

# ---- built-in file validators -------------------------------------------
curl -s -D "$CT_TMP/h0" -o /dev/null "$U/10k"
ETAG=$(hdr ETag <"$CT_TMP/h0")
LM=$(hdr Last-Modified <"$CT_TMP/h0")
ct_check "If-None-Match match 304" "$(code -H "If-None-Match: $ETAG" "$U/10k")" 304
ct_check "304 has no body" "$(wc -c <"$CT_TMP/b")" 0
ct_check "304 keeps the ETag" "$(hdr ETag <"$CT_TMP/h")" "$ETAG"
ct_check "304 has no Content-Length" "$(grep -ci '^Content-Length' "$CT_TMP/h")" 0
ct_check "If-None-Match list 304" "$(code -H "If-None-Match: \"zzz\", $ETAG" "$U/10k")" 304
ct_check "If-None-Match weak compare 304" "$(code -H "If-None-Match: W/$ETAG" "$U/10k")" 304
ct_check "If-None-Match * 304" "$(code -H 'If-None-Match: *' "$U/10k")" 304
ct_check "If-None-Match miss 200" "$(code -H 'If-None-Match: "zzz"' "$U/10k")" 200
ct_check "If-Modified-Since equal 304" "$(code -H "If-Modified-Since: $LM" "$U/10k")" 304
ct_check "If-Modified-Since old 200" "$(code -H 'If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT' "$U/10k")" 200
ct_check "If-Modified-Since garbage 200" "$(code -H 'If-Modified-Since: yesterday' "$U/10k")" 200
ct_check "If-None-Match wins over If-Modified-Since" \
    "$(code -H 'If-None-Match: "zzz"' -H "If-Modified-Since: $LM" "$U/10k")" 200
ct_check "HEAD conditional 304" "$(curl -s -I -o /dev/null -w '%{http_code}' -H "If-None-Match: $ETAG" "$U/10k")" 304

# ---- generated validators -------------------------------------------------
G="$U/gen?size=10&etag=%22g1%22&last-modified=%401000000000&cache-control=max-age%3D5"
ct_check "gen If-None-Match 304" "$(code -H 'If-None-Match: "g1"' "$G")" 304
ct_check "gen 304 keeps Cache-Control" "$(hdr Cache-Control <"$CT_TMP/h")" "max-age=5"
ct_check "gen If-None-Match weak etag param" "$(code -H 'If-None-Match: "w"' "$U/gen?etag=W/%22w%22")" 304
ct_check "gen If-Modified-Since 304" "$(code -H 'If-Modified-Since: Sun, 09 Sep 2001 01:46:40 GMT' "$G")" 304
ct_check "gen If-Modified-Since earlier 200" "$(code -H 'If-Modified-Since: Sun, 09 Sep 2001 01:46:39 GMT' "$G")" 200
ct_check "gen POST If-None-Match 412" "$(code -X POST -H 'If-None-Match: "g1"' "$G")" 412
ct_check "gen If-Match miss 412" "$(code -H 'If-Match: "other"' "$G")" 412
ct_check "gen If-Match hit 200" "$(code -H 'If-Match: "g1"' "$G")" 200
ct_check "no validators, no 304" "$(code -H 'If-None-Match: *' "$U/gen?size=3")" 200
ct_check "status=404 ignores conditionals" "$(code -H 'If-None-Match: "g1"' "$G&status=404")" 404

# ---- ranges -----------------------------------------------------------------
pattern 10240 >"$CT_TMP/full"
ct_check "range 206" "$(code -H 'Range: bytes=100-199' "$U/10k")" 206
ct_check "range content-range" "$(hdr Content-Range <"$CT_TMP/h")" "bytes 100-199/10240"
ct_check "range length" "$(hdr Content-Length <"$CT_TMP/h")" 100
ct_check "range bytes" "$(cat "$CT_TMP/b")" "$(tail -c +101 "$CT_TMP/full" | head -c 100)"
ct_check "suffix range" "$(code -H 'Range: bytes=-10' "$U/10k"; hdr Content-Range <"$CT_TMP/h")" "206
bytes 10230-10239/10240"
ct_check "suffix range bytes" "$(cat "$CT_TMP/b")" "$(tail -c 10 "$CT_TMP/full")"
ct_check "open range clamps" "$(code -H 'Range: bytes=10000-99999' "$U/10k"; hdr Content-Range <"$CT_TMP/h")" "206
bytes 10000-10239/10240"
ct_check "unsatisfiable 416" "$(code -H 'Range: bytes=20000-' "$U/10k")" 416
ct_check "416 content-range" "$(hdr Content-Range <"$CT_TMP/h")" "bytes */10240"
ct_check "multi-range answered 200 in full" "$(code -H 'Range: bytes=0-1,5-6' "$U/10k"; wc -c <"$CT_TMP/b")" "200
10240"
ct_check "bad range ignored" "$(code -H 'Range: bytes=9-2' "$U/10k")" 200
ct_check "If-Range etag match 206" "$(code -H 'Range: bytes=0-0' -H "If-Range: $ETAG" "$U/10k")" 206
ct_check "If-Range etag miss 200" "$(code -H 'Range: bytes=0-0' -H 'If-Range: "old"' "$U/10k")" 200
ct_check "If-Range date match 206" "$(code -H 'Range: bytes=0-0' -H "If-Range: $LM" "$U/10k")" 206
ct_check "HEAD ignores Range" "$(curl -s -I -o /dev/null -w '%{http_code}' -H 'Range: bytes=0-0' "$U/10k")" 200
ct_check "range on /bytes" "$(curl -s -H 'Range: bytes=63-65' "$U/bytes/1000")" "012"
ct_check "range on /gen" "$(code -H 'Range: bytes=1-2' "$U/gen?size=5"; cat "$CT_TMP/b")" "206
12"
ct_check "range with chunked=1" "$(curl -s --raw -H 'Range: bytes=1-2' "$U/gen?size=5&chunked=1" | tr -d '\r' | tr '\n' '|')" "2|12|0||"
ct_check "accept-ranges advertised" "$(curl -s -I "$U/1k" | hdr Accept-Ranges)" "bytes"
ct_stop origin TERM
ct_check "clean exit (leak check under ASan)" "$?" 0
ct_done
