# needs: cachet-origin
# cachet-origin --root: files, types, validators, sendfile bodies, directory
# index, and refusal of every way out of the root (403): "..", raw or
# %-encoded, encoded slashes, symlinks pointing out. Run twice: with openat2
# RESOLVE_BENEATH and with the realpath() fallback (CT_ORIGIN_NO_OPENAT2=1).
. "$(dirname "$0")/lib.sh"

hdr() { grep -i "^$1:" | head -1 | cut -d' ' -f2- | tr -d '\r'; }
code() { curl -s --path-as-is -o /dev/null -w '%{http_code}' "$@"; }

ROOT=$CT_TMP/root
mkdir -p "$ROOT/sub/deeper" "$ROOT/noindex" "$CT_TMP/outside"
echo '<h1>index</h1>' >"$ROOT/index.html"
echo '{"a":1}' >"$ROOT/data.json"
echo 'sub index' >"$ROOT/sub/index.html"
head -c 300000 /dev/urandom >"$ROOT/sub/deeper/blob.bin"
echo 'secret' >"$CT_TMP/outside/secret.txt"
echo 'spaced' >"$ROOT/with space.txt"
ln -s "$CT_TMP/outside/secret.txt" "$ROOT/link-out.txt"
ln -s "$CT_TMP/outside" "$ROOT/dir-out"
ln -s data.json "$ROOT/link-in.json"
touch -d '2020-01-02 03:04:05 UTC' "$ROOT/data.json"

run_suite() {
    local mode=$1 U=$2
    curl -s -D "$CT_TMP/h" -o "$CT_TMP/b" "$U/data.json"
    ct_check "$mode: file body" "$(cat "$CT_TMP/b")" '{"a":1}'
    ct_check "$mode: json type" "$(hdr Content-Type <"$CT_TMP/h")" "application/json"
    ct_check "$mode: last-modified from mtime" "$(hdr Last-Modified <"$CT_TMP/h")" "Thu, 02 Jan 2020 03:04:05 GMT"
    local etag
    etag=$(hdr ETag <"$CT_TMP/h")
    ct_check_match "$mode: strong etag" "$etag" '^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+\.[0-9a-f]+"$'
    ct_check "$mode: file 304" "$(code -H "If-None-Match: $etag" "$U/data.json")" 304
    # Same size, same second, new content: a new strong validator.
    echo '{"a":2}' >"$ROOT/data2.json"
    local e1 e2
    e1=$(curl -s -D - -o /dev/null "$U/data2.json" | hdr ETag)
    echo '{"a":3}' >"$ROOT/data2.json"
    e2=$(curl -s -D - -o /dev/null "$U/data2.json" | hdr ETag)
    ct_check "$mode: rewrite changes the etag" "$([ "$e1" != "$e2" ] && echo changed)" "changed"
    ct_check "$mode: file IMS 304" "$(code -H 'If-Modified-Since: Thu, 02 Jan 2020 03:04:05 GMT' "$U/data.json")" 304
    ct_check "$mode: html type" "$(curl -s -D - -o /dev/null "$U/index.html" | hdr Content-Type)" "text/html; charset=utf-8"
    ct_check "$mode: root serves index.html" "$(curl -s "$U/")" "<h1>index</h1>"
    ct_check "$mode: directory serves its index" "$(curl -s "$U/sub/")" "sub index"
    ct_check "$mode: directory without index 404" "$(code "$U/noindex/")" 404
    ct_check "$mode: missing file 404" "$(code "$U/missing.txt")" 404
    ct_check "$mode: encoded space" "$(curl -s "$U/with%20space.txt")" "spaced"
    curl -s -o "$CT_TMP/blob" "$U/sub/deeper/blob.bin"
    if cmp -s "$CT_TMP/blob" "$ROOT/sub/deeper/blob.bin"; then ct_pass "$mode: big file intact"; else ct_failed "$mode: big file intact"; fi
    curl -s -H 'Range: bytes=1000-1999' -o "$CT_TMP/part" "$U/sub/deeper/blob.bin"
    if cmp -s "$CT_TMP/part" <(tail -c +1001 "$ROOT/sub/deeper/blob.bin" | head -c 1000); then
        ct_pass "$mode: file range bytes"; else ct_failed "$mode: file range bytes"; fi
    ct_check "$mode: file HEAD length" "$(curl -s -I "$U/sub/deeper/blob.bin" | hdr Content-Length)" 300000
    ct_check "$mode: symlink inside allowed" "$(curl -s "$U/link-in.json")" '{"a":1}'
    # Traversal: always 403.
    ct_check "$mode: raw .. 403" "$(code "$U/../outside/secret.txt")" 403
    ct_check "$mode: nested .. 403" "$(code "$U/sub/../../outside/secret.txt")" 403
    ct_check "$mode: %2e%2e 403" "$(code "$U/%2e%2e/outside/secret.txt")" 403
    ct_check "$mode: .%2E 403" "$(code "$U/sub/.%2E/data.json")" 403
    ct_check "$mode: encoded slash 403" "$(code "$U/..%2foutside%2fsecret.txt")" 403
    ct_check "$mode: encoded backslash 403" "$(code "$U/sub%5c..%5cdata.json")" 403
    ct_check "$mode: symlink to a file outside 403" "$(code "$U/link-out.txt")" 403
    ct_check "$mode: symlink to a dir outside 403" "$(code "$U/dir-out/secret.txt")" 403
    ct_check "$mode: NUL 400" "$(code "$U/data.json%00.txt")" 400
    ct_check "$mode: generated endpoints still there" "$(curl -s "$U/plaintext")" "Hello, World!"
    ct_check "$mode: no built-ins with --root" "$(code "$U/1k")" 404
}

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 2 --root "$ROOT"
PORT=$(ct_wait_listen origin) || { ct_failed "origin starts"; ct_done; exit 1; }
run_suite openat2 "http://127.0.0.1:$PORT"
ct_stop origin TERM
ct_check "clean exit" "$?" 0

CT_ORIGIN_NO_OPENAT2=1 ct_start origin2 "$CT_BIN/cachet-origin" --port 0 --workers 1 --root "$ROOT"
PORT=$(ct_wait_listen origin2) || { ct_failed "origin (realpath mode) starts"; ct_done; exit 1; }
run_suite realpath "http://127.0.0.1:$PORT"
ct_stop origin2 TERM
ct_check "clean exit (realpath)" "$?" 0
ct_done
