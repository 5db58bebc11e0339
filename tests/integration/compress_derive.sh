#!/usr/bin/env bash
# Compression, other codings derived from one stored copy (issue 18,
# proxy/core/cache_derive.h): an identity client is answered from a stored
# zstd / br / gzip variant, decoded on its way (no origin fetch), over HTTP/1.1
# and HTTP/2, large bodies under back-pressure; a client that accepts the
# stored coding gets it as it is; Range, HEAD and conditionals on the decoded
# representation; an origin-compressed object without Vary decoded for a
# client that refuses it; no-transform honoured; 406 when nothing acceptable;
# compression.store_transcoded (the default) recodes the stored copy once for
# another class.
# Every body is decoded and compared byte for byte; origin fetches counted.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/coding.inc"

mkdir -p "$CT_TMP/root"
"$PY" - "$CT_TMP/root/doc.json" <<'EOF'
import json, random, sys
random.seed(11)
recs = [{"id": i, "name": "item-%d" % i, "price": round(random.random() * 100, 2)}
        for i in range(3000)]
open(sys.argv[1], "w").write(json.dumps(recs))
EOF
gzip -9 -n -c "$CT_TMP/root/doc.json" >"$CT_TMP/root/doc.json.gz"
ct_start_origin --root "$CT_TMP/root"
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; max_object_size = "16M"; grace = "0s"; hit_for_miss = "0s"; };
admin = { listen = "127.0.0.1:0"; };
EOF
ct_start_proxy -c "$CT_TMP/cachet.conf"
SPORT=$(ct_wait_listen proxy https) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
S="https://127.0.0.1:$SPORT"
MA='cache-control=max-age%3D600'

origin_count() { ct_origin_total "$OPORT"; }

GEN="/gen?size=100000&type=application/json&$MA"
REF=$(curl -s "$O$GEN" | md5sum)

# ---- identity from each stored coding, HTTP/1.1 and HTTP/2 -------------------
for c in zstd br gzip; do
    for proto in h1 h2; do
        if [ $proto = h1 ]; then U="$P$GEN&v=$c"; X=(); else U="$S$GEN&v=$c-h2"; X=(--http2); fi
        ct_origin_reset "$OPORT"
        h=$(fetch "$U" "$c" "${X[@]}")
        ct_check "$proto $c: stored" "$(hdr Content-Encoding "$h")" "$c"
        for ae in identity "" "deflate" "identity, deflate;q=0.5"; do
            h=$(fetch "$U" "$ae" "${X[@]}")
            ct_check "$proto $c -> '$ae': a hit decoded" "$(hdr Cache-Status "$h")" \
                "cachet; hit; ttl=$(hdr Cache-Status "$h" | sed -n 's/.*ttl=\([0-9]*\).*/\1/p'); detail=decoded-$c"
            ct_check "$proto $c -> '$ae': no Content-Encoding" "$(hdr Content-Encoding "$h")" ""
            ct_check "$proto $c -> '$ae': the origin's bytes" "$(md5sum <"$CT_TMP/body")" "$REF"
        done
        ct_check_match "$proto $c: Vary names Accept-Encoding" "$(hdr Vary "$h")" 'Accept-Encoding'
        ct_check "$proto $c: no Content-Length (streamed)" "$(hdr Content-Length "$h")" ""
        [ $proto = h1 ] && ct_check "$proto $c: chunked" "$(hdr Transfer-Encoding "$h")" chunked
        ct_check_match "$proto $c: Age" "$(hdr Age "$h")" '^[0-9]+$'
        # ours, once, over both protocols (RFC 9110 §7.6.3)
        ct_check "$proto $c: one Via of ours" "$(hdr Via "$h")" "1.1 cachet"
        if [ $proto = h1 ]; then # (issue 40, bug 10)
            ct_check "$proto $c: field names as the origin wrote them" \
                "$(tr -d '\r' <<<"$h" | grep -cE '^(Content-Type|X-Origin-Seq|Cache-Control): ')" 3
        fi
        # a Range of a decoded body costs a whole decoding pass: not advertised
        ct_check "$proto $c: no Accept-Ranges" "$(hdr Accept-Ranges "$h")" ""
        ct_check "$proto $c: one origin fetch" "$(origin_count)" 1
    done
done

# ---- a client that accepts the stored coding gets it as it is -----------------
ct_origin_reset "$OPORT"
fetch "$P$GEN&v=as-is" gzip >/dev/null
h=$(fetch "$P$GEN&v=as-is" "gzip, br")
ct_check_match "'gzip, br' on a gzip copy: as stored" "$(hdr Cache-Status "$h")" 'detail=stored-gzip$'
ct_check "... Content-Encoding gzip" "$(hdr Content-Encoding "$h")" gzip
ct_check "... decoded = the origin's body" "$(decode gzip "$CT_TMP/body")" "$REF"
: >"$CT_TMP/body"
curl -s --compressed -o "$CT_TMP/body" "$P$GEN&v=as-is"
ct_check "curl --compressed: the origin's body" "$(md5sum <"$CT_TMP/body")" "$REF"
# a br-only client does not take gzip: by default (store_transcoded) the gzip
# copy is recoded into its class, then a hit; the origin is asked once (the
# opt-in, per-class fetching, is compress_basic.sh's)
h=$(fetch "$P$GEN&v=as-is" br)
ct_check "br only on a gzip copy: recoded, not fetched" "$(hdr Cache-Status "$h")" \
    'cachet; hit; detail=transcoded-gzip'
ct_check "... decoded = the origin's body" "$(decode br "$CT_TMP/body")" "$REF"
h=$(fetch "$P$GEN&v=as-is" br)
ct_check_match "... then its own hit" "$(hdr Cache-Status "$h")" '^cachet; hit; ttl=[0-9]+$'
ct_check "... decoded = the origin's body" "$(decode br "$CT_TMP/body")" "$REF"
ct_check "as-is: one origin fetch (gzip)" "$(origin_count)" 1

# ---- Range, HEAD and conditionals on the decoded representation ---------------
U="$P/gen?size=100000&type=text/plain&$MA&etag=%22v1%22"
ORIG=$(curl -s "$O/gen?size=100000&type=text/plain")
fetch "$U" br >/dev/null
for proto in h1 h2; do
    [ $proto = h1 ] && { V=$U; X=(); } || { V=${U/$P/$S}; X=(--http2); fetch "$V" br "${X[@]}" >/dev/null; }
    h=$(fetch "$V" identity "${X[@]}" -H 'Range: bytes=10-29')
    ct_check_match "$proto decoded Range: 206" "$(head -1 <<<"$h")" ' 206'
    ct_check "$proto decoded Range: Content-Range" "$(hdr Content-Range "$h")" "bytes 10-29/100000"
    ct_check "$proto decoded Range: Content-Length" "$(hdr Content-Length "$h")" 20
    ct_check "$proto decoded Range: the origin's bytes" "$(md5sum <"$CT_TMP/body")" \
        "$(printf %s "$ORIG" | tail -c +11 | head -c 20 | md5sum)"
    h=$(fetch "$V" identity "${X[@]}" -H 'Range: bytes=-5')
    ct_check "$proto decoded suffix Range: the last bytes" "$(cat "$CT_TMP/body")" "${ORIG: -5}"
    h=$(fetch "$V" identity "${X[@]}" -H 'Range: bytes=200000-')
    ct_check_match "$proto decoded Range past the end: 416" "$(head -1 <<<"$h")" ' 416'
    ct_check "$proto 416: Content-Range" "$(hdr Content-Range "$h")" "bytes */100000"
    h=$(fetch "$V" identity "${X[@]}")
    # cachet weakened it when it compressed: the decoded bytes are the
    # origin's, and so is the strong ETag
    ct_check "$proto decoded: the origin's strong ETag" "$(hdr ETag "$h")" '"v1"'
    st=$(curl -sk "${X[@]}" -o /dev/null -w '%{http_code}' -H 'If-None-Match: W/"v1"' "$V")
    ct_check "$proto decoded: If-None-Match is a 304" "$st" 304
    st=$(curl -sk "${X[@]}" -o /dev/null -w '%{http_code}' -H 'If-None-Match: "v1"' "$V")
    ct_check "$proto decoded: If-None-Match with the strong one too" "$st" 304
    h=$(fetch "$V" identity "${X[@]}" -H 'Range: bytes=10-29' -H 'If-Range: "v1"')
    ct_check_match "$proto decoded: If-Range with the strong ETag: 206" "$(head -1 <<<"$h")" ' 206'
    ct_check "$proto decoded: ... the origin's bytes" "$(md5sum <"$CT_TMP/body")" \
        "$(printf %s "$ORIG" | tail -c +11 | head -c 20 | md5sum)"
    h=$(fetch "$V" identity "${X[@]}" -H 'Range: bytes=10-29' -H 'If-Range: W/"v1"')
    ct_check_match "$proto decoded: If-Range with a weak ETag: 200" "$(head -1 <<<"$h")" ' 200'
    h=$(curl -sk "${X[@]}" -I "$V")
    ct_check_match "$proto decoded HEAD: 200" "$(head -1 <<<"$h")" ' 200'
    ct_check "$proto decoded HEAD: no Content-Encoding" "$(hdr Content-Encoding "$h")" ""
    ct_check_match "$proto decoded HEAD: decoded" "$(hdr Cache-Status "$h")" 'detail=decoded-br$'
done

# ---- large bodies under back-pressure (a slow reader) -----------------------------
BIG="/gen?size=6000000&type=application/json&$MA"
BREF=$(curl -s "$O$BIG" | md5sum)
fetch "$P$BIG" zstd >/dev/null
fetch "$S$BIG" zstd --http2 >/dev/null
ct_origin_reset "$OPORT"
h=$(fetch "$P$BIG" identity --limit-rate 3M)
ct_check "h1 6 MB decoded at 3 MB/s: the origin's bytes" "$(md5sum <"$CT_TMP/body")" "$BREF"
h=$(fetch "$S$BIG" identity --http2 --limit-rate 3M)
ct_check "h2 6 MB decoded at 3 MB/s: the origin's bytes" "$(md5sum <"$CT_TMP/body")" "$BREF"
# two on one connection: keep-alive holds after a decoded body
curl -s -o "$CT_TMP/k1" -o "$CT_TMP/k2" "$P$BIG" "$P$GEN&v=zstd"
ct_check "keep-alive: both decoded" "$(md5sum <"$CT_TMP/k1") $(md5sum <"$CT_TMP/k2")" "$BREF $REF"
# pipelined: the second decoded answer waits for the first, each whole
pipe=$("$PY" - "$PPORT" "$GEN&v=gzip" <<'EOF'
import hashlib, http.client, socket, sys
port, path = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
req = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (path, port)).encode()
s.sendall(req * 2)
f = s.makefile("rb")
out = []
for _ in range(2):
    r = http.client.HTTPResponse(s); r.fp = f; r.begin()
    r._close_conn = lambda: None  # the next response is on the same stream
    out.append("%s %s" % (r.getheader("Cache-Status").split("detail=")[-1], hashlib.md5(r.read()).hexdigest()))
print(" ".join(out))
EOF
)
ct_check "pipelined: two decoded answers, whole" "$pipe" \
    "decoded-gzip ${REF%% *} decoded-gzip ${REF%% *}"
ct_check "large: no origin fetch" "$(origin_count)" 0

# ---- origin-compressed, without Vary: decoded for a client refusing gzip ---------
GZ="/doc.json.gz?type=application/json&hdr=Content-Encoding%3A%20gzip&$MA"
DOC=$(md5sum <"$CT_TMP/root/doc.json")
ct_origin_reset "$OPORT"
h=$(fetch "$P$GZ" gzip)
ct_check "origin gzip: passed on as it came" "$(md5sum <"$CT_TMP/body")" "$(md5sum <"$CT_TMP/root/doc.json.gz")"
for proto in h1 h2; do
    [ $proto = h1 ] && { V="$P$GZ"; X=(); } || { V="$S$GZ"; X=(--http2); fetch "$V" gzip "${X[@]}" >/dev/null; }
    h=$(fetch "$V" identity "${X[@]}")
    ct_check_match "$proto origin gzip -> identity: decoded hit" "$(hdr Cache-Status "$h")" 'hit; .*detail=decoded-gzip$'
    ct_check "$proto origin gzip -> identity: the document" "$(md5sum <"$CT_TMP/body")" "$DOC"
    h=$(fetch "$V" "gzip;q=0, br")
    ct_check "$proto origin gzip -> 'gzip;q=0, br': decoded" "$(md5sum <"$CT_TMP/body")" "$DOC"
    h=$(fetch "$V" gzip "${X[@]}")
    ct_check "$proto origin gzip -> gzip: as it came" "$(md5sum <"$CT_TMP/body")" "$(md5sum <"$CT_TMP/root/doc.json.gz")"
done
# the origin's own coding with its strong ETag: the decoded bytes are not
# what that ETag names, so it is weak there
GZE="$GZ&etag=%22g1%22"
fetch "$P$GZE" gzip >/dev/null
h=$(fetch "$P$GZE" identity)
ct_check_match "origin gzip, strong ETag -> identity: decoded" "$(hdr Cache-Status "$h")" 'detail=decoded-gzip$'
ct_check "... its ETag made weak" "$(hdr ETag "$h")" 'W/"g1"'
ct_check "... the document" "$(md5sum <"$CT_TMP/body")" "$DOC"
ct_check "origin gzip: one fetch per scheme, one with the ETag" "$(origin_count)" 3
# no-transform on the stored response: never decoded, 406 for who cannot take it
NT="/doc.json.gz?type=application/json&hdr=Content-Encoding%3A%20gzip&cache-control=max-age%3D600%2C+no-transform"
fetch "$P$NT" gzip >/dev/null
h=$(fetch "$P$NT" identity)
ct_check_match "stored no-transform -> identity: 406" "$(head -1 <<<"$h")" ' 406'

# ---- the request's no-transform, and 406 -------------------------------------------
ct_origin_reset "$OPORT"
fetch "$P$GEN&v=nt" br >/dev/null
h=$(fetch "$P$GEN&v=nt" identity -H 'Cache-Control: no-transform')
ct_check_match "request no-transform: not derived, fetched" "$(hdr Cache-Status "$h")" 'fwd=vary-miss; stored'
ct_check "request no-transform: the origin's bytes" "$(md5sum <"$CT_TMP/body")" "$REF"
# A 406 made from a stored variant is a hit everywhere, as its
# Cache-Status says: the request's count and the store's (its lookup's miss
# turned into the hit it is), once each
hits() {
    echo "$(ct_metric "$APORT" 'cachet_cache_requests_total{cache_status="hit"}')" \
        "$(ct_metric "$APORT" cachet_cache_hits) $(ct_metric "$APORT" cachet_cache_misses)"
}
read -r rh0 sh0 sm0 <<<"$(hits)"
h=$(fetch "$P$GEN&v=nt" 'identity;q=0, deflate')
ct_check_match "identity refused, nothing acceptable: 406" "$(head -1 <<<"$h")" ' 406'
ct_check_match "... Cache-Status hit" "$(hdr Cache-Status "$h")" '^cachet; hit; detail=not-acceptable'
read -r rh1 sh1 sm1 <<<"$(hits)"
ct_check "... counted a hit (request, store), not a miss" \
    "$((rh1 - rh0)) $((sh1 - sh0)) $((sm1 - sm0))" "1 1 0"
h=$(fetch "$S$GEN&v=zstd-h2" 'identity;q=0, compress' --http2)
ct_check_match "h2: 406" "$(head -1 <<<"$h")" ' 406'
ct_check "406: no origin fetch" "$(origin_count)" 2
# 406 only when the stored variants differ on Accept-Encoding alone: a
# variant of another Accept-Language is a Vary miss like any, fetched
ct_origin_reset "$OPORT"
AL="$P$GEN&vary=Accept-Language&v=al"
fetch "$AL" br -H 'Accept-Language: en' >/dev/null
h=$(fetch "$AL" 'identity;q=0, compress' -H 'Accept-Language: de')
ct_check_match "other language, nothing acceptable: fetched, not 406" "$(head -1 <<<"$h")" ' 200'
ct_check_match "... a Vary miss" "$(hdr Cache-Status "$h")" '^cachet; fwd=vary-miss'
ct_check "... the origin's bytes" "$(md5sum <"$CT_TMP/body")" "$REF"
ct_check "... one fetch each" "$(origin_count)" 2
h=$(fetch "$AL" 'identity;q=0, compress' -H 'Accept-Language: en')
ct_check_match "same language, nothing acceptable: 406" "$(head -1 <<<"$h")" ' 406'
h=$(fetch "${AL/$P/$S}" br --http2 -H 'Accept-Language: en')
h=$(fetch "${AL/$P/$S}" 'identity;q=0, compress' --http2 -H 'Accept-Language: fr')
ct_check_match "h2 other language, nothing acceptable: fetched" "$(head -1 <<<"$h")" ' 200'
ct_check "h2 ... the origin's bytes" "$(md5sum <"$CT_TMP/body")" "$REF"
ct_check "... no fetch for the 406" "$(origin_count)" 4

# ---- compression.store_transcoded (the default, issue 46): recoded once, stored as
# the class's variant (this instance says so explicitly: it must not change)
cat >"$CT_TMP/tc.conf" <<EOF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; max_object_size = "16M"; grace = "0s"; hit_for_miss = "0s"; };
compression = { store_transcoded = true; };
admin = { listen = "off"; };
EOF
ct_start tc "$CT_BIN/cachet" -c "$CT_TMP/tc.conf"
TP="http://127.0.0.1:$(ct_wait_listen tc http)" || exit 1
TS="https://127.0.0.1:$(ct_wait_listen tc https)" || exit 1
for proto in h1 h2; do
    [ $proto = h1 ] && { V="$TP$GEN"; X=(); } || { V="$TS$GEN"; X=(--http2); }
    ct_origin_reset "$OPORT"
    fetch "$V" br "${X[@]}" >/dev/null
    for c in gzip zstd; do
        h=$(fetch "$V" $c "${X[@]}")
        ct_check "$proto transcoded br -> $c: Cache-Status" "$(hdr Cache-Status "$h")" \
            "cachet; hit; detail=transcoded-br"
        ct_check "$proto transcoded br -> $c: Content-Encoding" "$(hdr Content-Encoding "$h")" $c
        ct_check "$proto transcoded br -> $c: decoded = the origin's body" "$(decode $c "$CT_TMP/body")" "$REF"
        h=$(fetch "$V" $c "${X[@]}")
        ct_check_match "$proto $c after: its own stored hit" "$(hdr Cache-Status "$h")" '^cachet; hit; ttl=[0-9]+$'
        ct_check "$proto $c after: its Content-Length" "$(hdr Content-Length "$h")" "$(stat -c %s "$CT_TMP/body")"
        ct_check "$proto $c after: decoded = the origin's body" "$(decode $c "$CT_TMP/body")" "$REF"
    done
    ct_check "$proto transcoded: one origin fetch (the br one)" "$(origin_count)" 1
done

ct_done
