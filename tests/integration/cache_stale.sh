#!/usr/bin/env bash
# Stale objects (RFC 9111 4.3, RFC 5861, issue 6): revalidation answered 304
# (headers updated, body kept) and 200 (object replaced); grace and
# stale-while-revalidate (stale answers at once, exactly one background
# fetch); an expired object without grace (many clients, one refresh);
# stale-if-error with a 500, a timeout and the origin stopped; must-revalidate
# never served stale. Time itself is under test here: objects live 1 s.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin --workers 2
# A: operator grace 10 s, 5 s response header timeout. B: no grace; the query
# is dropped from the key, so
# one stored object can be asked for with different origin behaviours
# (?status=500, ?delay=..., a longer max-age for the refresh), keep 60 s
# (stale objects with validators stay for revalidation), and a 4 s response
# header timeout. The origin's delays are long beside the "answered at once"
# bounds, which are generous: under ASan on a loaded machine twenty curl
# processes alone can take a second.
conf() { # NAME GRACE KEYQUERY KEEP HEADER_TIMEOUT
    cat >"$CT_TMP/$1.conf" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; response_header_timeout = "$5"; max_fails = 0; } );
cache = { grace = "$2"; key_query = "$3"; keep = "$4"; hit_for_miss = "0s"; };
admin = { listen = "off"; };
EOF
}
conf a 10s keep 0s 5s
conf b 0s drop 60s 4s
conf c 10s drop 0s 5s
ct_start pa "$CT_BIN/cachet" -c "$CT_TMP/a.conf"
APORT=$(ct_wait_listen pa http) || exit 1
ct_start pc "$CT_BIN/cachet" -c "$CT_TMP/c.conf"
CPORT=$(ct_wait_listen pc http) || exit 1
ct_start pb "$CT_BIN/cachet" -c "$CT_TMP/b.conf"
BPORT=$(ct_wait_listen pb http) || exit 1
A="http://127.0.0.1:$APORT"
C="http://127.0.0.1:$CPORT"
B="http://127.0.0.1:$BPORT"
origin_count() { ct_origin_total "$OPORT"; }
hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
status() { head -1 <<<"$1" | tr -d '\r'; }
get() { local u=$1; shift; : >"$CT_TMP/body"; curl -s -D - -o "$CT_TMP/body" "$@" "$u"; }
# Wait until the wall clock is ${2:-2} s past $1 (objects with max-age=1 are stale then).
wait_stale() { local t=$(($1 + ${2:-2})) i; for ((i = 0; i < 600; i++)); do [ "$(date +%s)" -ge "$t" ] && return; sleep 0.01; done; }
wait_count() { ct_wait_until 20 ct_origin_total_ge "$OPORT" "$1"; }

# ---- revalidation answered 304: stored headers updated, body kept.
ct_origin_reset "$OPORT"
U="$B/bytes/1001?cache-control=max-age%3D1&etag=%22e1%22"
t0=$(date +%s)
h=$(get "$U")
seq1=$(hdr X-Origin-Seq "$h")
want=$(md5sum <"$CT_TMP/body")
wait_stale "$t0"
# The revalidation's 304 says max-age=60 (same key: B drops the query), so the
# refreshed object stays fresh for the checks below however slow the machine:
# with max-age=1 and Date's one-second resolution it could be stale at once.
U="$B/bytes/1001?cache-control=max-age%3D60&etag=%22e1%22"
h=$(get "$U")
ct_check "stale + 304: Cache-Status" "$(hdr Cache-Status "$h")" "cachet; fwd=stale; fwd-status=304"
ct_check "stale + 304: 200 to the client" "$(status "$h")" "HTTP/1.1 200 OK"
ct_check "stale + 304: the stored body" "$(md5sum <"$CT_TMP/body")" "$want"
ct_check "stale + 304: Age restarts" "$(hdr Age "$h")" 0
ct_check "stale + 304: X-Origin-Seq updated from the 304" "$(hdr X-Origin-Seq "$h")" $((seq1 + 1))
h=$(get "$U")
ct_check_match "after the 304: a fresh hit" "$(hdr Cache-Status "$h")" '^cachet; hit; ttl='
ct_check "revalidation: two origin requests" "$(origin_count)" 2

# ---- revalidation answered 200 (the ETag changed): replaced.
ct_origin_reset "$OPORT"
t0=$(date +%s)
get "$B/bytes/1002?cache-control=max-age%3D1&etag=%22old%22" >/dev/null
wait_stale "$t0"
h=$(get "$B/bytes/1002?cache-control=max-age%3D60&etag=%22new%22")
ct_check "stale + 200: Cache-Status" "$(hdr Cache-Status "$h")" "cachet; fwd=stale; fwd-status=200; stored"
h=$(get "$B/bytes/1002")
ct_check "stale + 200: the new object is served" "$(hdr ETag "$h")" '"new"'
ct_check "stale + 200: two origin requests" "$(origin_count)" 2

# ---- expired, no grace: 50 clients, one refresh, 50 correct bodies.
ct_origin_reset "$OPORT"
t0=$(date +%s)
get "$B/delay/400?size=5000&cache-control=max-age%3D1&x=1" >/dev/null
want=$(md5sum <"$CT_TMP/body" | cut -c1-32)
wait_stale "$t0"
U="$B/delay/400?size=5000&cache-control=max-age%3D60" # same key: the query is dropped
out=$(seq 50 | xargs -P 50 -I{} sh -c 'r=$(curl -s -o "$0.{}" -w "%{http_code}" "$1"); echo "$r $(md5sum <"$0.{}" | cut -c1-32)"; rm -f "$0.{}"' "$CT_TMP/b" "$U" | sort | uniq -c | sed 's/^ *//')
ct_check "expired, no grace: 50 correct answers" "$out" "50 200 $want"
ct_check "expired, no grace: one refresh" "$(origin_count)" 2

# ---- grace (operator, 10 s): stale at once, exactly one background fetch.
# Instance C: grace 10 s and the query dropped from the key, so the object is
# stored with max-age=1 and refreshed (4 s to fetch) with max-age=60: the
# refreshed object stays fresh for the checks however slow the machine.
ct_origin_reset "$OPORT"
t0=$(date +%s)
get "$C/delay/4000?size=3000&cache-control=max-age%3D1&g=1" >/dev/null
wait_stale "$t0" 3
U="$C/delay/4000?size=3000&cache-control=max-age%3D60&g=1"
# The client that finds it stale is answered at once, and its connection is
# free at once: the refresh runs on an internal connection.
pair=$(curl -s -o /dev/null -o /dev/null -w '%{time_total} %{num_connects}\n' "$U" "$U")
read -r t1 n1 t2 n2 <<<"$(tr '\n' ' ' <<<"$pair")"
if awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(a < 2.5 && b < 2.5) }'; then
    ct_pass "grace: stale answer and the next request on that connection at once ($t1 s, $t2 s)"
else
    ct_failed "grace: the connection waited for the refresh ($t1 s, $t2 s)"
fi
ct_check "grace: one connection for both" "$n1 $n2" "1 0"
out=$(seq 20 | xargs -P 20 -I{} curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "$U")
slow=$(awk '$2 > 2.5' <<<"$out" | wc -l)
ct_check "grace: 20 answers, none waited for the 4 s origin" "$(grep -c '^200 ' <<<"$out") $slow" "20 0"
h=$(get "$U")
ct_check_match "grace: Cache-Status says stale-while-revalidate" "$(hdr Cache-Status "$h")" \
    '^cachet; (hit|fwd=miss; collapsed)'
wait_count 2
fresh_again() {
    h=$(get "$U")
    [[ "$(hdr Cache-Status "$h")" =~ ^cachet\;\ hit\;\ ttl=[1-9][0-9]*$ ]]
}
ct_wait_until 60 fresh_again
ct_check_match "grace: refreshed object served fresh" "$(hdr Cache-Status "$h")" '^cachet; hit; ttl=[1-9][0-9]*$'
ct_check "grace: exactly one background fetch" "$(origin_count)" 2

# ---- stale-while-revalidate from the response (instance B has no grace).
ct_origin_reset "$OPORT"
t0=$(date +%s)
get "$B/delay/3000?size=3000&cache-control=max-age%3D1%2C%20stale-while-revalidate%3D30&w=1" >/dev/null
wait_stale "$t0"
U="$B/delay/3000?size=3000&cache-control=max-age%3D60" # same key (query dropped)
out=$(seq 20 | xargs -P 20 -I{} curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "$U")
slow=$(awk '$2 > 2.0' <<<"$out" | wc -l)
ct_check "stale-while-revalidate: 20 immediate answers" "$(grep -c '^200 ' <<<"$out") $slow" "20 0"
wait_count 2
ct_check "stale-while-revalidate: exactly one background fetch" "$(origin_count)" 2

# ---- stale-if-error (response's window, 60 s): 500, timeout, origin down.
ct_origin_reset "$OPORT"
t0=$(date +%s)
get "$B/bytes/1003?cache-control=max-age%3D1%2C%20stale-if-error%3D60" >/dev/null
want=$(md5sum <"$CT_TMP/body")
get "$B/bytes/1004?cache-control=max-age%3D1%2C%20must-revalidate%2C%20stale-if-error%3D60" >/dev/null
wait_stale "$t0"
h=$(get "$B/bytes/1003?status=500")
ct_check "stale-if-error, 500: the stale object" "$(status "$h") $(md5sum <"$CT_TMP/body")" "HTTP/1.1 200 OK $want"
ct_check "stale-if-error, 500: Cache-Status" "$(hdr Cache-Status "$h")" "cachet; hit; detail=stale-if-error"
h=$(get "$B/bytes/1003?delay=8000")
ct_check "stale-if-error, timeout: the stale object" "$(status "$h") $(md5sum <"$CT_TMP/body")" "HTTP/1.1 200 OK $want"
ct_check "stale-if-error, timeout: Cache-Status" "$(hdr Cache-Status "$h")" "cachet; hit; detail=stale-if-error"
h=$(get "$B/bytes/1004?status=500")
ct_check "must-revalidate: the 500, never stale" "$(status "$h")" "HTTP/1.1 500 Internal Server Error"
ct_stop origin
h=$(get "$B/bytes/1003")
ct_check "stale-if-error, origin down: the stale object" "$(status "$h") $(md5sum <"$CT_TMP/body")" "HTTP/1.1 200 OK $want"
ct_check "stale-if-error, origin down: Cache-Status" "$(hdr Cache-Status "$h")" "cachet; hit; detail=stale-if-error"
ct_check_match "origin down, nothing stored: an error" "$(status "$(get "$B/bytes/1005")")" 'HTTP/1.1 50[234]'

ct_stop pa
ct_check "cachet A exits 0" "$?" 0
ct_stop pb
ct_check "cachet B exits 0" "$?" 0
ct_done
