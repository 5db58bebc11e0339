#!/usr/bin/env bash
# A client's no-cache / max-age=0 / Pragma: no-cache (without Cache-Control)
# on a fresh stored object (RFC 9111 §5.2.1.4, §4.3.1): the cache validates
# with the origin (conditional when the object has a validator), a 304
# refreshes and serves the object, a 200 replaces it, concurrent such
# requests coalesce to one origin fetch, and a listener that ignores the
# client's Cache-Control serves the fresh hit. Misses say what the key held
# (RFC 9211 §2.2): uri-miss, vary-miss.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<EOF2
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "http"; address = "127.0.0.1:0"; honour_client_cache_control = false; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "16M"; grace = "0s"; hit_for_miss = "0s"; };
admin = { listen = "off"; };
EOF2
ct_start_proxy -c "$CT_TMP/cachet.conf"
IPORT=$(grep -E '^listening on http ' "$CT_TMP/proxy.out" | sed -n '2s/.*://p')
MA='cache-control=max-age%3D60'

hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
fetch() { local u=$1; shift; : >"$CT_TMP/body"; curl -s -D - -o "$CT_TMP/body" "$@" "$u"; }
blen() { wc -c <"$CT_TMP/body" | tr -d ' '; }
total() { ct_origin_total "$OPORT"; }

# ---- with a validator: each directive sends a conditional, the 304 serves.
U="$P/gen?size=100&$MA&etag=%22v1%22"
h=$(fetch "$U")
ct_check "cold miss: uri-miss, stored" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
seq0=$(hdr X-Origin-Seq "$h")
n=0
for hd in 'Cache-Control: no-cache' 'Cache-Control: max-age=0' 'Pragma: no-cache'; do
    ct_origin_reset "$OPORT"
    h=$(fetch "$U" -H "$hd")
    ct_check "$hd: validated, 304 serves the object" "$(hdr Cache-Status "$h")" \
        "cachet; fwd=request; fwd-status=304"
    ct_check "$hd: whole body" "$(blen)" 100
    ct_check "$hd: one origin request" "$(total)" 1
    h=$(fetch "$U")
    ct_check_match "$hd: then a plain hit" "$(hdr Cache-Status "$h")" '^cachet; hit; ttl='
    ct_check "$hd: the hit needs no origin" "$(total)" 1
    n=$((n + 1))
done
# Pragma is only the HTTP/1.0 spelling: with a Cache-Control it is not read.
ct_origin_reset "$OPORT"
h=$(fetch "$U" -H 'Pragma: no-cache' -H 'Cache-Control: max-stale=5')
ct_check_match "Pragma with Cache-Control: a hit" "$(hdr Cache-Status "$h")" '^cachet; hit; ttl='
ct_check "Pragma with Cache-Control: no origin" "$(total)" 0
# The client's own conditional is still answered from the (validated) object.
h=$(fetch "$U" -H 'Cache-Control: no-cache' -H 'If-None-Match: "v1"')
ct_check "no-cache + If-None-Match: 304 to the client" \
    "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 304 Not Modified"

# ---- without a validator: a 200 replaces the stored object.
V="$P/gen?size=50&$MA"
h=$(fetch "$V")
seq1=$(hdr X-Origin-Seq "$h")
h=$(fetch "$V" -H 'Cache-Control: no-cache')
ct_check "no validator: 200 replaces, stored" "$(hdr Cache-Status "$h")" \
    "cachet; fwd=request; fwd-status=200; stored"
seq2=$(hdr X-Origin-Seq "$h")
ct_check_match "no validator: a new origin answer" "$seq2" "^[0-9]+$"
[ "$seq2" != "$seq1" ] && ct_pass "no validator: answer differs from the stored one" ||
    ct_failed "no validator: answer differs from the stored one" "$seq1 $seq2"
h=$(fetch "$V")
ct_check "no validator: the next hit is the new object" "$(hdr X-Origin-Seq "$h")" "$seq2"

# ---- a listener that ignores the client's Cache-Control serves the hit
# (its Host names another port: another key, stored first).
I="http://127.0.0.1:$IPORT/gen?size=100&$MA&etag=%22v1%22"
fetch "$I" >/dev/null
ct_origin_reset "$OPORT"
h=$(fetch "$I" -H 'Cache-Control: no-cache')
ct_check_match "ignoring listener: fresh hit" "$(hdr Cache-Status "$h")" '^cachet; hit; ttl='
ct_check "ignoring listener: no origin" "$(total)" 0

# ---- concurrent no-cache requests coalesce to one origin fetch.
D="$P/delay/400?size=300&$MA"
fetch "$D" >/dev/null
ct_origin_reset "$OPORT"
pids=()
for i in 1 2 3 4 5 6; do
    curl -s -m 10 -o "$CT_TMP/c$i" -D "$CT_TMP/ch$i" -H 'Cache-Control: no-cache' "$D" &
    pids+=($!)
done
wait "${pids[@]}" # not the servers
ok=0
for i in 1 2 3 4 5 6; do [ "$(wc -c <"$CT_TMP/c$i")" = 300 ] && ok=$((ok + 1)); done
ct_check "coalesced no-cache: 6 whole bodies" "$ok" 6
ct_check "coalesced no-cache: one origin fetch" "$(total)" 1
ct_check "coalesced no-cache: 5 collapsed" \
    "$(cat "$CT_TMP"/ch* | grep -ci '^cache-status: cachet; fwd=miss; collapsed')" 5

# ---- RFC 9211 miss kinds: another variant of a stored URI is a vary-miss.
W="$P/gen?size=10&$MA&vary=Accept-Language"
h=$(fetch "$W" -H 'Accept-Language: en')
ct_check "Vary: first variant is a uri-miss" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
h=$(fetch "$W" -H 'Accept-Language: fr')
ct_check "Vary: second variant is a vary-miss" "$(hdr Cache-Status "$h")" \
    "cachet; fwd=vary-miss; stored"
h=$(fetch "$W" -H 'Accept-Language: fr')
ct_check_match "Vary: then a hit" "$(hdr Cache-Status "$h")" '^cachet; hit; ttl='
curl -s -o /dev/null -X PURGE "$W"
h=$(fetch "$W" -H 'Accept-Language: en')
ct_check "after PURGE: uri-miss again" "$(hdr Cache-Status "$h")" "cachet; fwd=uri-miss; stored"
ct_done
