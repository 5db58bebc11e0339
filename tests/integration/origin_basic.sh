# needs: cachet-origin
# cachet-origin basics: command line, announce line, every endpoint's body and
# headers, query-controlled headers, X-Origin-Seq, stats, HEAD, bad input.
. "$(dirname "$0")/lib.sh"

hdr() { grep -i "^$1:" | head -1 | cut -d' ' -f2- | tr -d '\r'; }
status() { head -1 | cut -d' ' -f2; }
pattern() { yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ | head -c "$1"; }

# ---- command line ---------------------------------------------------------
"$CT_BIN/cachet-origin" --bogus >/dev/null 2>"$CT_TMP/usage.err"
ct_check "unknown flag exits 2" "$?" 2
ct_check_match "unknown flag prints usage" "$(cat "$CT_TMP/usage.err")" "usage: cachet-origin"
"$CT_BIN/cachet-origin" --port 70000 >/dev/null 2>&1
ct_check "port out of range exits 2" "$?" 2
"$CT_BIN/cachet-origin" --workers 0 >/dev/null 2>&1
ct_check "zero workers exits 2" "$?" 2
"$CT_BIN/cachet-origin" --port 0 extra >/dev/null 2>&1
ct_check "stray argument exits 2" "$?" 2
"$CT_BIN/cachet-origin" --port 0 --root /nonexistent/dir >/dev/null 2>&1
ct_check "missing --root exits 2" "$?" 2

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 2
PORT=$(ct_wait_listen origin) || { ct_failed "origin starts"; ct_done; exit 1; }
U=http://127.0.0.1:$PORT
ct_check_match "announce line is exact" "$(head -1 "$CT_TMP/origin.out")" "^listening on 127\.0\.0\.1:[0-9]+$"

# ---- /json and /plaintext ------------------------------------------------
curl -s -D "$CT_TMP/h" -o "$CT_TMP/b" "$U/json"
ct_check "/json body" "$(cat "$CT_TMP/b")" '{"message":"Hello, World!"}'
ct_check "/json type" "$(hdr Content-Type <"$CT_TMP/h")" "application/json"
ct_check "/json length" "$(hdr Content-Length <"$CT_TMP/h")" 27
ct_check "/json server" "$(hdr Server <"$CT_TMP/h")" "cachet-origin"
ct_check_match "/json date" "$(hdr Date <"$CT_TMP/h")" "^[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT$"
SEQ1=$(hdr X-Origin-Seq <"$CT_TMP/h")
ct_check_match "X-Origin-Seq present" "$SEQ1" "^[0-9]+$"
curl -s -D "$CT_TMP/h" -o "$CT_TMP/b" "$U/plaintext"
ct_check "/plaintext body" "$(cat "$CT_TMP/b")" "Hello, World!"
ct_check "/plaintext type" "$(hdr Content-Type <"$CT_TMP/h")" "text/plain"
SEQ2=$(hdr X-Origin-Seq <"$CT_TMP/h")
ct_check "X-Origin-Seq increases" "$((SEQ2 > SEQ1))" 1

# ---- built-in docroot ----------------------------------------------------
for f in 1k:1024 10k:10240 100k:102400 1m:1048576; do
    name=${f%%:*} size=${f##*:}
    curl -s -D "$CT_TMP/h" -o "$CT_TMP/b" "$U/$name"
    pattern "$size" >"$CT_TMP/want"
    if cmp -s "$CT_TMP/b" "$CT_TMP/want"; then ct_pass "/$name body is the pattern"; else ct_failed "/$name body is the pattern"; fi
    ct_check "/$name length" "$(hdr Content-Length <"$CT_TMP/h")" "$size"
    ct_check_match "/$name strong etag" "$(hdr ETag <"$CT_TMP/h")" '^"[0-9a-f]{16}"$'
    ct_check_match "/$name last-modified" "$(hdr Last-Modified <"$CT_TMP/h")" "GMT$"
done
ct_check "unknown path 404" "$(curl -s -o /dev/null -w '%{http_code}' "$U/nope")" 404
ct_check "POST on a file 405" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$U/1k")" 405

# ---- HEAD ------------------------------------------------------------------
curl -s -I "$U/1m" >"$CT_TMP/h"
ct_check "HEAD status" "$(status <"$CT_TMP/h")" 200
ct_check "HEAD keeps Content-Length" "$(hdr Content-Length <"$CT_TMP/h")" 1048576
ct_check "HEAD has no body" "$(curl -s -I "$U/json" -o /dev/null -w '%{size_download}')" 0
ct_check "HEAD on /gen keeps the etag" "$(curl -s -I "$U/gen?etag=%22h%22" | hdr ETag)" '"h"'

# ---- /gen header control ------------------------------------------------
curl -s -D "$CT_TMP/h" -o "$CT_TMP/b" \
    "$U/gen?size=100&status=203&cache-control=max-age%3D60%2C%20public&expires=%2B3600&etag=%22v1%22&last-modified=-60&vary=Accept-Encoding&set-cookie=a%3D1&set-cookie=b%3D2"
ct_check "gen status" "$(status <"$CT_TMP/h")" 203
ct_check "gen size" "$(wc -c <"$CT_TMP/b")" 100
ct_check "gen cache-control decoded" "$(hdr Cache-Control <"$CT_TMP/h")" "max-age=60, public"
ct_check_match "gen expires as a date" "$(hdr Expires <"$CT_TMP/h")" "GMT$"
ct_check "gen etag" "$(hdr ETag <"$CT_TMP/h")" '"v1"'
ct_check_match "gen last-modified as a date" "$(hdr Last-Modified <"$CT_TMP/h")" "GMT$"
ct_check "gen vary" "$(hdr Vary <"$CT_TMP/h")" "Accept-Encoding"
ct_check "gen two set-cookies" "$(grep -ci '^Set-Cookie:' "$CT_TMP/h")" 2
ct_check "gen 500" "$(curl -s -o /dev/null -w '%{http_code}' "$U/gen?status=503")" 503
ct_check "json honours status=" "$(curl -s -o /dev/null -w '%{http_code}' "$U/json?status=404")" 404
ct_check "expires passed raw" "$(curl -s -D - -o /dev/null "$U/gen?expires=0" | hdr Expires)" "0"
ct_check "gen default size 0" "$(curl -s "$U/gen" | wc -c)" 0
ct_check "status=204 sends no body" "$(curl -s "$U/gen?size=10&status=204" | wc -c)" 0

# ---- bad query values ---------------------------------------------------
ct_check "status=abc 400" "$(curl -s -o "$CT_TMP/b" -w '%{http_code}' "$U/gen?status=abc")" 400
ct_check_match "status=abc reason" "$(cat "$CT_TMP/b")" "^bad query value status=abc: "
ct_check "reason is one line" "$(wc -l <"$CT_TMP/b")" 1
ct_check "size=-1 400" "$(curl -s -o "$CT_TMP/b" -w '%{http_code}' "$U/gen?size=-1")" 400
ct_check_match "size=-1 reason" "$(cat "$CT_TMP/b")" "size=-1"
ct_check "CRLF in a header value 400" "$(curl -s -o /dev/null -w '%{http_code}' "$U/gen?vary=a%0d%0aX-Evil:%201")" 400
ct_check "/bytes/abc 400" "$(curl -s -o /dev/null -w '%{http_code}' "$U/bytes/abc")" 400
ct_check "/delay/x 400" "$(curl -s -o /dev/null -w '%{http_code}' "$U/delay/x")" 400
ct_check "unknown keys ignored" "$(curl -s -o /dev/null -w '%{http_code}' "$U/json?v=123&x")" 200

# ---- /echo ----------------------------------------------------------------
OUT=$(curl -s -X PUT -H 'X-A: 1' -H 'x-a: 2' -H 'X-Q: say "hi"' --data-binary $'line1\nline2\x01' "$U/echo?q=%20")
ct_check_match "echo method and target" "$OUT" '^\{"method": "PUT", "target": "/echo\?q=%20", "version": "HTTP/1.1", "headers": \['
ct_check_match "echo keeps duplicates in order" "$OUT" '\["X-A", "1"\], \["x-a", "2"\]'
ct_check_match "echo escapes quotes" "$OUT" '\["X-Q", "say \\"hi\\""\]'
ct_check_match "echo body escaped" "$OUT" '"body": "line1\\nline2\\u0001"\}$'
OUT=$(printf 'abc' | curl -s -H 'Transfer-Encoding: chunked' --data-binary @- "$U/echo")
ct_check_match "echo de-chunks the body" "$OUT" '"body": "abc"\}$'
if command -v python3 >/dev/null; then
    printf '\377\000"' >"$CT_TMP/bin"
    # Bytes >= 0x80 come back as \u00XX, one per byte: latin-1 recovers them.
    OUT=$(curl -s -H 'X-Bin: é' --data-binary @"$CT_TMP/bin" "$U/echo" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); h=[v for n,v in d["headers"] if n=="X-Bin"][0]; print(d["body"].encode("latin-1").hex(), h.encode("latin-1").decode("utf-8"))' 2>&1)
    ct_check "echo JSON parses and round-trips bytes" "$OUT" "ff0022 é"
fi

# ---- stats --------------------------------------------------------------
ct_origin_reset "$PORT"
ct_check "stats after reset" "$(curl -s "$U/_origin/stats")" '{"total": 0, "paths": {}}'
for i in 1 2 3; do curl -s -o /dev/null "$U/json?i=$i"; done
curl -s -o /dev/null "$U/gen"
curl -s -o /dev/null "$U/nope"
ct_check "stats count by path without query" "$(curl -s "$U/_origin/stats")" \
    '{"total": 5, "paths": {"/gen": 1, "/json": 3, "/nope": 1}}'
ct_check "stats requests are not counted" "$(ct_origin_total "$PORT")" 5
ct_check "GET on reset is 405" "$(curl -s -o /dev/null -w '%{http_code}' "$U/_origin/stats/reset")" 405
ct_origin_reset "$PORT"
ct_check "reset zeroes" "$(ct_origin_total "$PORT")" 0

# ---- shutdown -------------------------------------------------------------
ct_stop origin TERM
ct_check "SIGTERM exits 0" "$?" 0

# ---- IPv6 bind and the access log ------------------------------------------
ct_start origin2 "$CT_BIN/cachet-origin" --port 0 --workers 1 --bind ::1 --access-log "$CT_TMP/access.log"
# lib.sh's ct_wait_listen expects a digit after "listening on"; IPv6 is "[".
wait_v6() {
    local i line
    for ((i = 0; i < 1000; i++)); do
        line=$(grep -m1 '^listening on \[' "$CT_TMP/origin2.out" 2>/dev/null)
        [ -n "$line" ] && { echo "${line##*:}"; return 0; }
        kill -0 "$(ct_pid origin2)" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}
if PORT6=$(wait_v6); then
    ct_check_match "IPv6 announce" "$(head -1 "$CT_TMP/origin2.out")" '^listening on \[::1\]:[0-9]+$'
    ct_check "IPv6 request" "$(curl -s -g "http://[::1]:$PORT6/plaintext?a=b")" "Hello, World!"
    curl -s -g -o /dev/null "http://[::1]:$PORT6/nope"
    ct_check_match "access log line" "$(head -1 "$CT_TMP/access.log")" \
        '^::1 - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8} \+0000\] "GET /plaintext\?a=b HTTP/1\.1" 200 13 seq=1$'
    ct_check_match "access log 404" "$(sed -n 2p "$CT_TMP/access.log")" '"GET /nope HTTP/1\.1" 404 [0-9]+ seq=2$'
    ct_check "no Host: 400" "$(curl -s -g -o /dev/null -w '%{http_code}' -H 'Host:' "http://[::1]:$PORT6/json")" 400
    ct_check_match "access log of a refused request" "$(sed -n 3p "$CT_TMP/access.log")" '"- - HTTP/1\.1" 400 [0-9]+ seq=3$'
    ct_stop origin2 INT
    ct_check "SIGINT exits 0" "$?" 0
else
    ct_failed "origin on ::1 starts"
fi
ct_done
