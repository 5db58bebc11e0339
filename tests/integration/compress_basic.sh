#!/usr/bin/env bash
# Compression (issue 18): every answer decoded (Python's zlib and brotli,
# the zstd CLI) and compared byte for byte with the origin's body, for each
# class (zstd, br, gzip, identity), over HTTP/1.1 and HTTP/2; one Vary
# variant per class whatever the spelling (origin fetches counted, store
# objects in /stats); Range on the representation the client receives;
# what is never compressed (a type not listed, no-transform, small, already
# encoded by the origin, HEAD); every Accept-Encoding line read; counters.
# It runs with compression.store_transcoded = false, the opt-in that fetches
# each coding class from the origin: so each class is compressed by its own
# fill. The default (one fetch, other classes recoded from the stored copy)
# is compress_derive.sh's and compress_one_fetch.sh's.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/coding.inc"

# A JSON document under --root, and the same one gzipped by the tool: the
# origin-compressed case.
mkdir -p "$CT_TMP/root"
"$PY" - "$CT_TMP/root/doc.json" <<'EOF'
import json, random, sys
random.seed(7)
recs = [{"id": i, "name": "item-%d" % i, "price": round(random.random() * 100, 2),
         "tags": random.sample(["red", "green", "blue", "small", "large", "sale"], 3)}
        for i in range(1500)]
open(sys.argv[1], "w").write(json.dumps(recs))
EOF
gzip -9 -n -c "$CT_TMP/root/doc.json" >"$CT_TMP/root/doc.json.gz"
# text that gzip leaves at about three quarters: 240 KB -> ~180 KB stored
head -c 180000 /dev/urandom | base64 -w 76 >"$CT_TMP/root/big.txt"
ct_start_origin --root "$CT_TMP/root"
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; grace = "0s"; hit_for_miss = "0s"; };
compression = { store_transcoded = false; };
admin = { listen = "127.0.0.1:0"; };
EOF
ct_start_proxy -c "$CT_TMP/cachet.conf"
SPORT=$(ct_wait_listen proxy https) || exit 1
S="https://127.0.0.1:$SPORT"
APORT=$(ct_wait_listen proxy admin) || exit 1
MA='cache-control=max-age%3D600'

origin_count() { ct_origin_total "$OPORT"; }
objects() { curl -s "http://127.0.0.1:$APORT/stats" | sed -n 's/.*"objects":\([0-9]*\).*/\1/p'; }
store_stat() { # store_stat NAME: a store counter from /stats (cache.NAME)
    curl -s "http://127.0.0.1:$APORT/stats" |
        "$PY" -c 'import json, sys; print(json.load(sys.stdin)["cache"][sys.argv[1]])' "$1"
}
stat_of() { # stat_of NAME CODING: a compression counter from /stats
    curl -s "http://127.0.0.1:$APORT/stats" |
        "$PY" -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]][sys.argv[2]])' "$1" "$2"
}

GEN="/gen?size=100000&type=application/json&$MA"
REF=$(curl -s "$O$GEN" | md5sum)

# ---- one class each: miss then hit, decoded = the origin's bytes --------
ct_origin_reset "$OPORT"
o0=$(objects)
for c in zstd br gzip identity; do
    h=$(fetch "$P$GEN" "$c")
    ce=$(hdr Content-Encoding "$h")
    # identity is derived from the stored zstd copy, decoded (compress_derive.sh)
    [ $c = identity ] && ct_check_match "identity: decoded from zstd" "$(hdr Cache-Status "$h")" \
        '^cachet; hit; ttl=[0-9]+; detail=decoded-zstd$'
    [ $c != identity ] && ct_check "$c miss: Cache-Status" "$(hdr Cache-Status "$h")" \
        "cachet; fwd=$([ $c = zstd ] && echo uri-miss || echo vary-miss); stored"
    ct_check "$c miss: Content-Encoding" "${ce:-identity}" "$c"
    ct_check "$c miss: decoded = the origin's body" "$(decode "$c" "$CT_TMP/body")" "$REF"
    h=$(fetch "$P$GEN" "$c")
    ct_check_match "$c hit" "$(hdr Cache-Status "$h")" '^cachet; hit'
    ct_check "$c hit: decoded = the origin's body" "$(decode "$c" "$CT_TMP/body")" "$REF"
    ct_check_match "$c hit: Vary names Accept-Encoding" "$(hdr Vary "$h")" 'Accept-Encoding'
    [ $c != identity ] && ct_check "$c hit: Content-Length is the stored length" \
        "$(hdr Content-Length "$h")" "$(stat -c %s "$CT_TMP/body")"
    [ "$c" != identity ] && size_of_c=$(stat -c %s "$CT_TMP/body") &&
        ct_check_match "$c: smaller than a fifth" "$size_of_c" '^[0-9]{1,5}$'
done
ct_check "one origin fetch per coding, none for identity" "$(origin_count)" 3
ct_check "three objects stored" "$(($(objects) - o0))" 3

# ---- other spellings land on their class's variant: no fetch --------------
ct_origin_reset "$OPORT"
for ae in "gzip, deflate" "deflate, gzip" "GZIP;q=1, identity;q=0.5" "x-gzip" \
    "gzip, deflate, br" "br;q=1.0, gzip;q=0.8, *;q=0.1" "zstd, br, gzip" "*" "" "deflate" \
    "br, gzip, gzip" "gzip;q=0.8, br"; do
    h=$(fetch "$P$GEN" "$ae")
    ct_check_match "'$ae': a hit" "$(hdr Cache-Status "$h")" '^cachet; hit'
    ce=$(hdr Content-Encoding "$h")
    ct_check "'$ae': decoded = the origin's body" "$(decode "${ce:-identity}" "$CT_TMP/body")" "$REF"
done
ct_check "'gzip, deflate' is gzip" "$(hdr Content-Encoding "$(fetch "$P$GEN" "gzip, deflate")")" gzip
ct_check "'gzip;q=0.8, br' is br" "$(hdr Content-Encoding "$(fetch "$P$GEN" "gzip;q=0.8, br")")" br
ct_check "'*' is zstd" "$(hdr Content-Encoding "$(fetch "$P$GEN" "*")")" zstd
ct_check "spellings: no origin fetch" "$(origin_count)" 0
# HAProxy #987: the second line refuses br, so a gzip answer
h=$(curl -s -D - -o "$CT_TMP/body" -H 'Accept-Encoding: br, gzip' -H 'Accept-Encoding: br;q=0' "$P$GEN")
ct_check "a second Accept-Encoding line is read" "$(hdr Content-Encoding "$h")" gzip
ct_check "... and decoded right" "$(decode gzip "$CT_TMP/body")" "$REF"

# ---- ETag made weak, conditionals on it --------------------------------------
U="$P/gen?size=50000&type=text/plain&$MA&etag=%22v1%22"
h=$(fetch "$U" br)
ct_check "br: a strong ETag becomes weak" "$(hdr ETag "$h")" 'W/"v1"'
h=$(fetch "$U" identity)
ct_check_match "identity, decoded from br" "$(hdr Cache-Status "$h")" 'detail=decoded-br$'
ct_check "identity, decoded from br: the origin's strong ETag back" "$(hdr ETag "$h")" '"v1"'
ct_check "... and the origin's bytes" "$(md5sum <"$CT_TMP/body")" "$(curl -s "$O/gen?size=50000" | md5sum)"
st=$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept-Encoding: br' -H 'If-None-Match: W/"v1"' "$U")
ct_check "br: If-None-Match with the weak ETag is a 304" "$st" 304

# A stale br object refreshed by a 304 carrying the origin's strong "v7": it
# selects the stored W/"v7" (cachet weakened it), which stays weak.
U3="$P/gen?size=50000&type=text/plain&cache-control=max-age%3D1&etag=%22v7%22"
fetch "$U3" br >/dev/null
stale_seen() { cs=$(hdr Cache-Status "$(fetch "$U3" br)"); [[ $cs == *fwd=stale* ]]; }
ct_wait_until 30 stale_seen
ct_check_match "br, stale: revalidated with a 304" "$cs" 'fwd=stale; fwd-status=304$'
ct_check "br, stale: decoded = the origin's body" "$(decode br "$CT_TMP/body")" \
    "$(curl -s "$O/gen?size=50000" | md5sum)"
ct_check "br, after the 304: the ETag still weak" "$(hdr ETag "$(fetch "$U3" br)")" 'W/"v7"'
h=$(fetch "$U3" identity)
ct_check_match "identity from the revalidated br object: decoded" "$(hdr Cache-Status "$h")" 'detail=decoded-br$'
ct_check "... the strong ETag back (the 304 kept who weakened it)" "$(hdr ETag "$h")" '"v7"'

# ---- HTTP/2 (HTTPS keys its own objects): miss then hit per class, decoded ------
ct_origin_reset "$OPORT"
for c in zstd br gzip identity; do
    for t in miss hit; do
        h=$(fetch "$S$GEN" "$c" --http2)
        ct_check_match "h2 $c $t: HTTP/2" "$(head -1 <<<"$h")" '^HTTP/2 200'
        [ $t = hit ] && ct_check_match "h2 $c: a hit" "$(hdr Cache-Status "$h")" '^cachet; hit'
        ce=$(hdr Content-Encoding "$h")
        ct_check "h2 $c $t: Content-Encoding" "${ce:-identity}" "$c"
        ct_check "h2 $c $t: decoded = the origin's body" "$(decode "$c" "$CT_TMP/body")" "$REF"
    done
done
ct_check "h2: one origin fetch per coding, none for identity" "$(origin_count)" 3

# ---- Range works on the representation the client receives ---------------------
fetch "$P$GEN" br >/dev/null
cp "$CT_TMP/body" "$CT_TMP/full.br"
h=$(fetch "$P$GEN" br -H 'Range: bytes=10-29')
ct_check_match "br Range: 206" "$(head -1 <<<"$h")" ' 206 '
ct_check "br Range: Content-Range over the br bytes" "$(hdr Content-Range "$h")" \
    "bytes 10-29/$(stat -c %s "$CT_TMP/full.br")"
ct_check "br Range: those bytes" "$(md5sum <"$CT_TMP/body")" \
    "$(tail -c +11 "$CT_TMP/full.br" | head -c 20 | md5sum)"
h=$(fetch "$P$GEN" identity -H 'Range: bytes=10-29')
ct_check "identity Range: the origin's bytes" "$(md5sum <"$CT_TMP/body")" \
    "$(curl -s "$O$GEN" | tail -c +11 | head -c 20 | md5sum)"
ct_check "identity Range: Content-Range" "$(hdr Content-Range "$h")" "bytes 10-29/100000"
# A Range on the miss that compresses: the object's length is known only
# once it is complete, so the answer waits for that and is the range of the
# coded representation (206 with its whole length), over HTTP/1.1 and
# HTTP/2; a suffix range too (it needs the end). The next client gets the
# whole object, which decodes to the origin's body, and the range's bytes
# are its bytes.
for v in h1 h2; do
    [ $v = h1 ] && B=$P opt=() || B=$S opt=(--http2)
    U="$B$GEN&v=range-$v"
    h=$(fetch "$U" gzip -H 'Range: bytes=0-99' "${opt[@]}")
    ct_check_match "$v gzip Range on a miss: 206" "$(head -1 <<<"$h")" ' 206'
    ct_check "$v gzip Range on a miss: stored" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
    ct_check "$v gzip Range on a miss: gzip" "$(hdr Content-Encoding "$h")" gzip
    cr=$(hdr Content-Range "$h")
    cp "$CT_TMP/body" "$CT_TMP/part"
    h=$(fetch "$U" gzip "${opt[@]}")
    ct_check_match "$v gzip after the Range miss: a hit" "$(hdr Cache-Status "$h")" '^cachet; hit'
    ct_check "$v gzip after the Range miss: decoded = the origin's body" \
        "$(decode gzip "$CT_TMP/body")" "$REF"
    L=$(stat -c %s "$CT_TMP/body")
    ct_check "$v gzip Range on a miss: Content-Range over the gzip bytes" "$cr" "bytes 0-99/$L"
    ct_check "$v gzip Range on a miss: those bytes" "$(md5sum <"$CT_TMP/part")" \
        "$(head -c 100 "$CT_TMP/body" | md5sum)"
    U="$B$GEN&v=suffix-$v"
    h=$(fetch "$U" br -H 'Range: bytes=-50' "${opt[@]}")
    ct_check_match "$v br suffix Range on a miss: 206" "$(head -1 <<<"$h")" ' 206'
    cr=$(hdr Content-Range "$h")
    cp "$CT_TMP/body" "$CT_TMP/part"
    fetch "$U" br "${opt[@]}" >/dev/null
    ct_check "$v br whole after the suffix miss: decoded = the origin's body" \
        "$(decode br "$CT_TMP/body")" "$REF"
    L=$(stat -c %s "$CT_TMP/body")
    ct_check "$v br suffix Range on a miss: Content-Range" "$cr" "bytes $((L - 50))-$((L - 1))/$L"
    ct_check "$v br suffix Range on a miss: the last 50 bytes" "$(md5sum <"$CT_TMP/part")" \
        "$(tail -c 50 "$CT_TMP/body" | md5sum)"
done
# A Range from a client that waits on someone else's compressing fill
# (coalesced) waits for its end too.
TR="/gen?size=300000&type=application/json&$MA&trickle=40&trickle-size=16384&v=coalesced"
ct_origin_reset "$OPORT"
curl -s -o "$CT_TMP/first" -H 'Accept-Encoding: gzip' "$P$TR" &
first=$!
in_origin() { [ "$(origin_count)" -ge 1 ]; }
ct_wait_until 30 in_origin
h=$(fetch "$P$TR" gzip -H 'Range: bytes=100-199')
wait $first
ct_check "coalesced gzip Range: 206 of the whole" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 206 Partial Content"
ct_check "coalesced gzip Range: collapsed" "$(hdr Cache-Status "$h")" "cachet; fwd=miss; collapsed"
ct_check "coalesced gzip Range: Content-Range" "$(hdr Content-Range "$h")" \
    "bytes 100-199/$(stat -c %s "$CT_TMP/first")"
ct_check "coalesced gzip Range: those bytes" "$(md5sum <"$CT_TMP/body")" \
    "$(tail -c +101 "$CT_TMP/first" | head -c 100 | md5sum)"
ct_check "coalesced: one origin fetch" "$(origin_count)" 1
ct_check "coalesced: the first client's answer decodes" "$(decode gzip "$CT_TMP/first")" \
    "$(curl -s "$O/gen?size=300000" | md5sum)"

# The origin dies mid-body while a Range waits for the whole object: no byte
# has gone to the client, so it gets a 502 (ORIGIN_CUT), not an empty reply;
# over HTTP/1.1 and HTTP/2, the fetching client and one coalesced on it.
for v in h1 h2; do
    [ $v = h1 ] && B=$P opt=() || B=$S opt=(--http2)
    CUT="/gen?size=300000&type=application/json&$MA&close=mid&trickle=40&trickle-size=16384&v=cut-$v"
    ct_origin_reset "$OPORT"
    curl -sk -o /dev/null -w '%{http_code}' -H 'Accept-Encoding: gzip' -H 'Range: bytes=0-99' \
        "${opt[@]}" "$B$CUT" >"$CT_TMP/cut1" &
    first=$!
    ct_wait_until 30 in_origin
    code=$(curl -sk -o /dev/null -w '%{http_code}' -H 'Accept-Encoding: gzip' \
        -H 'Range: bytes=0-99' "${opt[@]}" "$B$CUT")
    wait $first
    ct_check "$v origin cut during a held Range: the fetching client gets 502" "$(cat "$CT_TMP/cut1")" 502
    ct_check "$v origin cut during a held Range: the coalesced client gets 502" "$code" 502
done
ct_check_match "the cut is logged as ORIGIN_CUT" "$(cat "$CT_TMP/proxy.err" "$CT_TMP/proxy.out" 2>/dev/null)" \
    'close=ORIGIN_CUT'

# ---- a client gone mid-fill: the encoded fill goes on for the others -------------
T="/gen?size=300000&type=application/json&$MA&trickle=20&trickle-size=16384"
curl -s -o /dev/null -m 0.15 -H 'Accept-Encoding: br' "$P$T"
is_hit() { [[ $(hdr Cache-Status "$(fetch "$P$T" br)") == "cachet; hit"* ]]; }
ct_wait_until 30 is_hit
ct_check_match "client gone: the br object was stored" "$(hdr Cache-Status "$(fetch "$P$T" br)")" '^cachet; hit'
ct_check "client gone: decoded = the origin's body" "$(decode br "$CT_TMP/body")" \
    "$(curl -s "$O/gen?size=300000" | md5sum)"

# ---- never compressed ------------------------------------------------------------
h=$(fetch "$P/gen?size=5000&type=image/png&$MA" br)
ct_check "image/png: not compressed" "$(hdr Content-Encoding "$h")" ""
ct_check "image/png: no Vary" "$(hdr Vary "$h")" ""
h=$(fetch "$P/gen?size=5000&type=text/html&cache-control=max-age%3D600%2C+no-transform" br)
ct_check "no-transform: not compressed" "$(hdr Content-Encoding "$h")" ""
h=$(fetch "$P/gen?size=100&type=text/html&$MA" br)
ct_check "below min_size: not compressed" "$(hdr Content-Encoding "$h")" ""
h=$(curl -s -I -H 'Accept-Encoding: br' "$P$GEN")
ct_check "HEAD of a stored br object: its Content-Encoding" "$(hdr Content-Encoding "$h")" br
# the origin compressed it: stored as it came, never twice
GZ="/doc.json.gz?type=application/json&hdr=Content-Encoding%3A%20gzip&$MA"
h=$(fetch "$P$GZ" gzip)
ct_check "origin gzip: passed on as gzip" "$(hdr Content-Encoding "$h")" gzip
ct_check "origin gzip: the origin's bytes" "$(md5sum <"$CT_TMP/body")" \
    "$(md5sum <"$CT_TMP/root/doc.json.gz")"
ct_check "origin gzip: decodes to the document" "$(decode gzip "$CT_TMP/body")" \
    "$(md5sum <"$CT_TMP/root/doc.json")"

# ---- a compressed body past 64 KiB goes out with sendfile(2), like any large body -----
# (its fill is reserved as one memfd run for the origin's length, and what the
# encoded body left of it is given back when it completes)
BIGT="/big.txt?type=text/plain&$MA"
bytes0=$(store_stat bytes)
h=$(fetch "$P$BIGT" gzip)
ct_check "big gzip miss: decoded = the origin's bytes" "$(decode gzip "$CT_TMP/body")" "$(md5sum <"$CT_TMP/root/big.txt")"
zlen=$(stat -c %s "$CT_TMP/body")
ct_check_match "big gzip: stored smaller than the origin's, past 64 KiB" "$zlen" '^1[0-9]{5}$'
grown=$(($(store_stat bytes) - bytes0))
ct_check "big gzip: the cache counts about the stored bytes, not the origin's" \
    "$((grown < zlen + 32768))" 1
h=$(fetch "$P$BIGT" gzip)
ct_check_match "big gzip hit" "$(hdr Cache-Status "$h")" '^cachet; hit'
ct_check "big gzip hit: decoded = the origin's bytes" "$(decode gzip "$CT_TMP/body")" "$(md5sum <"$CT_TMP/root/big.txt")"
ct_check "big gzip hit: its Content-Length" "$(hdr Content-Length "$h")" "$zlen"
if command -v strace >/dev/null; then
    PID=$(ct_pid proxy)
    rm -f "$CT_TMP/strace.err" "$CT_TMP/strace.out"
    strace -f -e trace=sendfile -o "$CT_TMP/strace.out" -p "$PID" 2>"$CT_TMP/strace.err" &
    st=$!
    attached() { grep -q 'attached' "$CT_TMP/strace.err" 2>/dev/null; }
    ct_wait_until 10 attached
    for i in 1 2 3; do curl -s -o "$CT_TMP/body" -H 'Accept-Encoding: gzip' "$P$BIGT"; done
    kill -INT "$st"
    wait "$st" 2>/dev/null
    ct_check_match "3 big gzip hits use sendfile" "$(grep -c 'sendfile(' "$CT_TMP/strace.out")" '^([3-9]|[1-9][0-9]+)$'
    ct_check "... and the last one decodes" "$(decode gzip "$CT_TMP/body")" "$(md5sum <"$CT_TMP/root/big.txt")"
else
    echo "# strace not installed: the sendfile calls not checked"
fi

# ---- counters ------------------------------------------------------------------------
# a derived answer is one lookup in the store's statistics, a hit: not a
# miss (its own class's variant is not there) and a probe's hit
DV="$P$GEN&v=derived-count"
fetch "$DV" gzip >/dev/null
l0=$(store_stat lookups) h0=$(store_stat hits) m0=$(store_stat misses) f0=$(store_stat failed)
h=$(fetch "$DV" identity)
ct_check_match "derived identity answer" "$(hdr Cache-Status "$h")" 'detail=decoded-gzip$'
ct_check "... decoded = the origin's body" "$(md5sum <"$CT_TMP/body")" "$REF"
h=$(fetch "$DV" "gzip, br")
ct_check_match "derived stored-gzip answer" "$(hdr Cache-Status "$h")" 'detail=stored-gzip$'
ct_check "... decoded = the origin's body" "$(decode gzip "$CT_TMP/body")" "$REF"
ct_check "derived answers: two lookups, two hits, no miss, no failed fetch" \
    "$(($(store_stat lookups) - l0)) $(($(store_stat hits) - h0)) $(($(store_stat misses) - m0)) $(($(store_stat failed) - f0))" \
    "2 2 0 0"
ct_check_match "compress_objects{br}" "$(stat_of compress_objects br)" '^[1-9]'
ct_check_match "compress_bytes_in{gzip}" "$(stat_of compress_bytes_in gzip)" '^[1-9][0-9]{5,}$'
ct_check_match "compress_cpu_us{zstd}" "$(stat_of compress_cpu_us zstd)" '^[0-9]+$'
in=$(stat_of compress_bytes_in br) out=$(stat_of compress_bytes_out br)
ct_check "br: out below in" "$((out < in))" 1
# decoded deliveries have their own counters: one identity answer from the
# stored zstd copy adds its stored bytes in, the origin's length out
zin=$(stat_of decode_bytes_in zstd) zout=$(stat_of decode_bytes_out zstd) zcpu=$(stat_of decode_cpu_us zstd)
fetch "$P$GEN" zstd >/dev/null
zsize=$(stat -c %s "$CT_TMP/body")
h=$(fetch "$P$GEN" identity)
ct_check_match "decoded from zstd" "$(hdr Cache-Status "$h")" 'detail=decoded-zstd$'
ct_check "... decoded = the origin's body" "$(decode identity "$CT_TMP/body")" "$REF"
ct_check "decode_bytes_in{zstd}: the stored bytes" "$(($(stat_of decode_bytes_in zstd) - zin))" "$zsize"
ct_check "decode_bytes_out{zstd}: the bytes sent" "$(($(stat_of decode_bytes_out zstd) - zout))" 100000
ct_check "decode_cpu_us{zstd}: counted" "$(($(stat_of decode_cpu_us zstd) >= zcpu))" 1
ct_check_match "/metrics: decode counters by coding" \
    "$(curl -s "http://127.0.0.1:$APORT/metrics" | grep -c '^cachet_decode_\(bytes_in\|bytes_out\|cpu_us\)_total{coding=')" '^12$'
ct_check_match "/metrics: by coding" \
    "$(curl -s "http://127.0.0.1:$APORT/metrics" | grep -c '^cachet_compress_bytes_out_total{coding=')" '^4$'

# ---- compression.on_the_fly: responses not stored, encoded per request ------------
cat >"$CT_TMP/otf.conf" <<EOF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
compression = { on_the_fly = true; };
admin = { listen = "off"; };
EOF
ct_start otf "$CT_BIN/cachet" -c "$CT_TMP/otf.conf"
OTF="http://127.0.0.1:$(ct_wait_listen otf http)" || exit 1
NS="/gen?size=100000&type=application/json&cache-control=no-store"
ct_origin_reset "$OPORT"
for c in br gzip zstd; do
    h=$(fetch "$OTF$NS" $c)
    ct_check "on the fly $c: Content-Encoding" "$(hdr Content-Encoding "$h")" $c
    ct_check_match "on the fly $c: not stored" "$(hdr Cache-Status "$h")" 'detail=(no-store|hit-for-miss)'
    ct_check "on the fly $c: decoded = the origin's body" "$(decode $c "$CT_TMP/body")" "$REF"
done
h=$(fetch "$OTF$NS" identity)
ct_check "on the fly identity: as it came" "$(hdr Content-Length "$h")" 100000
h=$(fetch "$P$NS" br)
ct_check "on_the_fly off (the default): no-store passes as it came" "$(hdr Content-Encoding "$h")" ""
# keep-alive holds: two answers on one connection, each whole
curl -s -o "$CT_TMP/k1" -o "$CT_TMP/k2" -H 'Accept-Encoding: gzip' "$OTF$NS&k=1" "$OTF$NS&k=2"
ct_check "on the fly, keep-alive: both decoded" "$(decode gzip "$CT_TMP/k1") $(decode gzip "$CT_TMP/k2")" "$REF $REF"
ct_check "on the fly: every request reached the origin" "$(origin_count)" 7

ct_done
