#!/usr/bin/env bash
# One origin fetch per object, whatever codings clients ask for (issue 46):
# with the defaults, br, zstd, gzip and identity clients of one 100 KiB JSON
# object, in several orders (the first client's class is the one fetched),
# over HTTP/1.1 and HTTP/2, cause exactly one fetch at the origin (its own
# count) and one miss in /stats; every body is decoded (Python's zlib and
# brotli, the zstd CLI) and compared byte for byte with the origin's; the
# second round of the same clients are plain hits of their own variants.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/coding.inc"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
admin = { listen = "127.0.0.1:0"; };
EOF
ct_start_proxy -c "$CT_TMP/cachet.conf"
SPORT=$(ct_wait_listen proxy https) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
S="https://127.0.0.1:$SPORT"
A="http://127.0.0.1:$APORT"

misses() {
    python3 -c 'import json,sys; print(json.load(sys.stdin)["cache_requests"]["miss"])' \
        < <(curl -s "$A/stats")
}
finished() {
    [ "$(python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["requests"].values()))' \
        < <(curl -s "$A/stats"))" -ge "$1" ]
}

GEN="/gen?size=102400&type=application/json&cache-control=max-age%3D600"
REF=$(curl -s "$O$GEN" | md5sum)
n=0
for order in "br zstd gzip identity" "identity gzip br zstd" "zstd identity br gzip" \
    "gzip br identity zstd"; do
    for proto in h1 h2; do
        v=${order// /-}-$proto
        if [ $proto = h1 ]; then U="$P$GEN&v=$v"; X=(); else U="$S$GEN&v=$v"; X=(--http2); fi
        ct_origin_reset "$OPORT"
        m0=$(misses)
        for round in 1 2; do
            for c in $order; do
                h=$(fetch "$U" "$c" "${X[@]}")
                n=$((n + 1))
                ce=$(hdr Content-Encoding "$h")
                ct_check "$proto [$order] round $round, $c: Content-Encoding" "${ce:-identity}" "$c"
                ct_check "$proto [$order] round $round, $c: decoded = the origin's body" \
                    "$(decode "$c" "$CT_TMP/body")" "$REF"
                [ $round = 2 ] && [ $c != identity ] &&
                    ct_check_match "$proto [$order] round 2, $c: its own variant's hit" \
                        "$(hdr Cache-Status "$h")" '^cachet; hit; ttl=[0-9]+$'
            done
        done
        ct_check "$proto [$order]: one origin fetch" "$(ct_origin_total "$OPORT")" 1
        ct_wait_until 30 finished $n
        ct_check "$proto [$order]: one miss in /stats" "$(($(misses) - m0))" 1
    done
done

ct_done
