#!/usr/bin/env bash
# The request's steps (proxy/core/req_step.h) at log level debug: each
# request's line names the path it took through the machine, over HTTP/1.1
# and HTTP/2, for a miss, a hit, a coalesced wait, a pass, a PURGE and a
# hit decoded for a client that cannot take the stored coding.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
ELOG="$CT_TMP/error.log"
cat >"$CT_TMP/s.conf" <<EOF2
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; h2c = true; } );
admin = { listen = "off"; };
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { purge_allow = [ "127.0.0.1/32" ]; };
logs = { error_log = "$ELOG"; level = "debug"; };
EOF2
ct_start_proxy -c "$CT_TMP/s.conf"

# steps_of "METHOD TARGET": the steps logged for its last request
lines_of() { grep -F ": $1: " "$ELOG" | grep -F "; steps: "; }
steps_of() { lines_of "$1" | tail -1 | sed 's/.*; steps: //'; }
logged() { [ "$(lines_of "$1" | wc -l)" -ge "${2:-1}" ]; }

T="/bytes/300?cache-control=max-age%3D60"
curl -s -o /dev/null "$P$T"
ct_wait_until 30 logged "GET $T"
ct_check "miss: the fetching client reads its fill" "$(steps_of "GET $T")" \
    "recv route cache lookup fill stream done"
curl -s -o /dev/null "$P$T"
ct_wait_until 30 logged "GET $T" 2
ct_check "hit" "$(steps_of "GET $T")" "recv route cache lookup deliver stream done"

# Two at once on a slow object: the second waits on the first's fill. The
# second starts once the first reached the origin (its fetch is in flight
# for 3 s), however slowly curl starts on a loaded machine.
S="/bytes/200?cache-control=max-age%3D60&delay=3000"
n0=$(ct_origin_total "$OPORT")
curl -s -o /dev/null "$P$S" &
c1=$!
ct_wait_until 30 ct_origin_total_ge "$OPORT" $((n0 + 1))
curl -s -o /dev/null "$P$S" &
c2=$!
wait $c1 $c2
ct_wait_until 30 logged "GET $S" 2
ct_check_match "coalesced: one waited" "$(lines_of "GET $S")" \
    "steps: recv route cache lookup wait deliver stream done"

curl -s -o /dev/null -X POST --data-binary x "$P/echo"
ct_wait_until 30 logged "POST /echo"
ct_check "pass (request body)" "$(steps_of "POST /echo")" "recv route cache pass"

curl -s -o /dev/null -X PURGE "$P$T"
ct_wait_until 30 logged "PURGE $T"
ct_check "PURGE" "$(steps_of "PURGE $T")" "recv route cache purge synth done"

# A variant stored gzip, asked for by a client that takes identity only:
# decoded on its way (cache_derive.c), not fetched again.
Z="/gen?size=20000&type=application/json&cache-control=max-age%3D60"
curl -s -o /dev/null -H 'Accept-Encoding: gzip' "$P$Z"
ct_wait_until 30 logged "GET $Z"
curl -s -o /dev/null -H 'Accept-Encoding: identity' "$P$Z"
ct_wait_until 30 logged "GET $Z" 2
ct_check "identity from a stored gzip variant: decoded" "$(steps_of "GET $Z")" \
    "recv route cache lookup decode done"

# The same machine carries an HTTP/2 stream (h2c, prior knowledge).
curl -s -o /dev/null --http2-prior-knowledge "$P$T&h2=1"
ct_wait_until 30 logged "GET $T&h2=1"
ct_check "HTTP/2 miss" "$(steps_of "GET $T&h2=1")" "recv route cache lookup fill stream done"

ct_done
