#!/usr/bin/env bash
# cache.eviction = "cost" on real fetches (issue 46): two cachets with a
# 1 MiB store in front of one cachet-origin, one with the default (sieve),
# one with cost. The same trace through each: a slow object (/delay/300)
# fetched and hit twice, then 500 fast 4 KB objects (each fetched and hit
# once: about four stores' worth). Under sieve the slow object is evicted
# like any other; under cost its fetch time (from the fill, as
# cachet_origin_seconds_saved_total measures it) keeps it: it is still a hit.
# The unit tests (tests/unit/test_cache_evict.c) check the policy itself.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start o "$CT_BIN/cachet-origin" --port 0 --workers 1
OP=$(ct_wait_listen o) || exit 1

start() { # start NAME POLICY: a cachet with a 1 MiB store; prints its http port
    cat >"$CT_TMP/$1.conf" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OP"; } );
admin = { listen = "127.0.0.1:0"; };
cache = { size = "1M"; eviction = "$2"; };
CONF
    ct_start "$1" "$CT_BIN/cachet" -c "$CT_TMP/$1.conf"
    ct_wait_listen "$1" http
}
SP=$(start sieve sieve) || exit 1
SA=$(ct_wait_listen sieve admin) || exit 1
CP=$(start cost cost) || exit 1
CA=$(ct_wait_listen cost admin) || exit 1

# trace PORT: the trace on one keep-alive connection; prints the slow
# object's last Cache-Status and how many of the fast ones' second requests hit
trace() {
    python3 - "$1" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
def get(path):
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    assert r.status == 200, (path, r.status)
    return r.getheader("Cache-Status", "")
MA = "cache-control=max-age%3D600&type=application/octet-stream&size=4000"
slow = "/delay/300?" + MA
get(slow)
get(slow)
get(slow)
hits = 0
for i in range(500):
    get("/gen?%s&i=%d" % (MA, i))
    hits += "hit" in get("/gen?%s&i=%d" % (MA, i))
print(get(slow).split(";")[1].strip(), hits)
PY
}
read -r s_slow s_hits <<<"$(trace "$SP")"
read -r c_slow c_hits <<<"$(trace "$CP")"
ct_check "sieve: the fast objects' second requests hit" "$s_hits" 500
ct_check "cost: the fast objects' second requests hit" "$c_hits" 500
evictions() { curl -s "http://127.0.0.1:$1/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache"]["evictions"])'; }
ct_check_match "sieve: the store was full (evictions)" "$(evictions "$SA")" '^[1-9][0-9]{2,}$'
ct_check_match "cost: the store was full (evictions)" "$(evictions "$CA")" '^[1-9][0-9]{2,}$'
ct_check "sieve: the slow object was evicted like the others" "$s_slow" fwd=uri-miss
ct_check "cost: the slow object is still there" "$c_slow" hit

ct_done
