#!/usr/bin/env bash
# The admin dashboard: GET / (one self-contained page), GET /events (a
# Server-Sent Events stream of /stats, one snapshot a second: many clients,
# clients that leave, a client that does not read), the page loaded in
# headless Chromium (charts drawn, the hit counter moves with traffic, no
# JavaScript error, a narrow window does not overflow; screenshots saved under
# the build folder), and `cachet ctl top --once`.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHROMIUM=${CT_CHROMIUM:-/usr/bin/chromium}
SHOTS="$CT_BIN/../dashboard-shots"
mkdir -p "$SHOTS"

ct_start_pair --https 127.0.0.1:0 --admin 127.0.0.1:0 --workers 2
SPORT=$(ct_wait_listen proxy https) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
S="https://127.0.0.1:$SPORT"
A="http://127.0.0.1:$APORT"

jget() {
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$2" <<<"$1"
}
# stat_poll EXPR WANT: poll /stats until python EXPR on it prints WANT (for up
# to 45 s); prints the last value.
stat_poll() {
    local v end=$((SECONDS + 45))
    while :; do
        v=$(jget "$(curl -s "$A/stats")" "$1")
        [ "$v" = "$2" ] || ((SECONDS > end)) && break
        sleep 0.1
    done
    echo "$v"
}

# ---- GET /: the page -------------------------------------------------------------
hdrs=$(curl -s -D - -o "$CT_TMP/page.html" "$A/" | tr -d '\r')
ct_check_match "GET /: 200 text/html" "$hdrs" $'^HTTP/1.1 200 OK\n.*Content-Type: text/html; charset=utf-8'
ct_check_match "GET /: a CSP that forbids loading anything from elsewhere" "$hdrs" \
    $'\n''Content-Security-Policy: default-src '\''none'\''; .*connect-src '\''self'\'''
ct_check "GET /: served as built (proxy/ops/dashboard.html)" \
    "$(cmp -s "$CT_TMP/page.html" "$CT_SRC/proxy/ops/dashboard.html" && echo same)" same
ct_check "the page references no other host" \
    "$(grep -Eio '(src|href|url)[=(]["'\'']?(https?:)?//[^"'\'' )]*' "$CT_TMP/page.html" | head -3)" ""
ct_check "HEAD /: no body" "$(curl -s -I -o /dev/null -w '%{size_download}' "$A/")" 0
ct_check "POST /: 405" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$A/")" 405
ct_check "POST /events: 405" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$A/events")" 405

# ---- GET /events ---------------------------------------------------------------------
curl -s -N -D "$CT_TMP/ev.hdr" --max-time 3.5 "$A/events" >"$CT_TMP/ev.out"
ct_check_match "events: text/event-stream" "$(tr -d '\r' <"$CT_TMP/ev.hdr")" \
    $'\n''Content-Type: text/event-stream'
n=$(grep -c '^data: ' "$CT_TMP/ev.out")
# one at once, then one a second: 4 in 3.5 s (3 to 5 on a loaded machine)
ct_check_match "events: one snapshot a second (3.5 s: $n)" "$n" '^[345]$'
ok=$(python3 -c 'import json,sys
ups=[json.loads(l[6:])["uptime_s"] for l in open(sys.argv[1]) if l.startswith("data: ")]
gaps=[b-a for a,b in zip(ups,ups[1:])]
print("ok" if all(0.5 < g < 2.5 for g in gaps[1:]) and "requests" in json.loads(open(sys.argv[1]).read().split("data: ")[1].split("\n")[0]) else gaps)' "$CT_TMP/ev.out")
ct_check "events: each is the /stats JSON, about 1 s apart" "$ok" ok

# many streams, all leaving at once
pids=()
for i in $(seq 20); do
    curl -s -N -o /dev/null --max-time 120 "$A/events" &
    pids+=($!)
done
ct_check "20 streams open" "$(stat_poll 'd["admin_event_streams"]' 20)" 20
kill "${pids[@]}" 2>/dev/null
wait "${pids[@]}" 2>/dev/null
ct_check "every stream gone once its client left" "$(stat_poll 'd["admin_event_streams"]' 0)" 0

# a client that never reads is dropped (its socket buffers are small, so
# cachet's output for it grows within seconds)
python3 - "$APORT" <<'EOF' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(150)
EOF
slow=$!
ct_check "a client that does not read is dropped" \
    "$(stat_poll 'd["admin_event_streams_dropped"] >= 1 and d["admin_event_streams"] == 0' True)" True
kill "$slow" 2>/dev/null
wait "$slow" 2>/dev/null
ct_check_match "dropped one logged" "$(cat "$CT_TMP/proxy.err")" 'event stream closed: the client left [0-9]+ bytes unread'

# ---- cache statuses: a colour each, miss and hit-for-miss far apart ----------------
# (they were amber and orange: told apart only side by side)
colours=$(python3 - "$CT_SRC/proxy/ops/dashboard.html" <<'PY'
import itertools, re, sys
cs = dict(re.findall(r'\["([a-z_]+)", "#([0-9a-f]{6})"\]',
                     re.search(r"var CS = \[(.*?)\];", open(sys.argv[1]).read(), re.S).group(1)))
rgb = lambda h: [int(h[i:i + 2], 16) for i in (0, 2, 4)]
d = lambda a, b: sum((x - y) ** 2 for x, y in zip(rgb(cs[a]), rgb(cs[b]))) ** 0.5
close = [a + "/" + b for a, b in itertools.combinations(cs, 2) if d(a, b) < 60]
print(len(cs), round(d("miss", "hit_for_miss")), " ".join(close) or "none")
PY
)
ct_check_match "seven cache statuses, miss and hit-for-miss at least 120 apart in RGB" \
    "$colours" '^7 (1[2-9][0-9]|[2-9][0-9][0-9]) none$'

# ---- the page in Chromium --------------------------------------------------------------
traffic() { # misses, then hits, over HTTP and HTTPS
    local i
    for i in $(seq "$1"); do
        curl -s -o /dev/null "$P/gen?size=1024&cache-control=max-age%3D600&k=$((i % 5))"
        curl -sk -o /dev/null "$S/gen?size=4096&cache-control=max-age%3D600&k=$((i % 3))"
    done
}
traffic 20
# one HTTPS connection of each protocol: the listener row names what was used
curl -sk --http1.1 -o /dev/null "$S/gen?size=10&cache-control=max-age%3D600&k=p1"
curl -sk --http2 -o /dev/null "$S/gen?size=10&cache-control=max-age%3D600&k=p2"

# ---- GET /history: the snapshots cachet keeps (15 minutes at 1 s) -----------------------
# hist_info: "N increasing HITS" (N snapshots, their uptimes increasing, the
# newest's hits) or the error
hist_info() { curl -s "$A/history" | python3 -c '
import json, sys
h = json.load(sys.stdin)
up = [s["uptime_s"] for s in h]
print(len(h), "increasing" if all(b > a for a, b in zip(up, up[1:])) else "not-increasing",
      h[-1]["cache_requests"]["hit"] if h else -1)' 2>&1; }
hist_ge() { local n; n=$(hist_info | cut -d" " -f1); [ "${n:-0}" -ge "$1" ] 2>/dev/null; }
ct_wait_until 30 hist_ge 3
h=$(hist_info)
ct_check_match "/history: snapshots, a second apart, oldest first ($h)" "$h" '^([3-9]|[1-9][0-9]+) increasing [1-9]'
ct_check "/history: at most one snapshot a second since the start" \
    "$(python3 -c 'import sys; n, up = int(sys.argv[1]), float(sys.argv[2]); print("ok" if n <= up + 2 else "%d > %.0f" % (n, up))' \
        "${h%% *}" "$(jget "$(curl -s "$A/stats")" 'd["uptime_s"]')")" ok
ct_check "/history: POST refused" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$A/history")" 405
if [ ! -x "$CHROMIUM" ]; then
    ct_failed "chromium" "$CHROMIUM is missing (make deps-test installs it)"
else
    # the traffic the page must see while open (run by the driver, between two
    # readings), spread over a few of its one-second snapshots: on an idle
    # machine 30 curls fit in one, and a chart of rates then has one point
    # and no line (a pace, not a wait for a condition)
    more="for i in \$(seq 30); do curl -s -o /dev/null '$P/gen?size=1024&cache-control=max-age%3D600&k=1'; sleep 0.1; done"
    # then the backend is drained (cachet ctl backend): the page must say so
    more+="; '$CT_BIN/cachet' ctl backend 127.0.0.1:$OPORT drain --admin 127.0.0.1:$APORT >/dev/null"
    rm -f "$SHOTS/dashboard.png" "$SHOTS/dashboard-narrow.png"
    python3 "$CT_SRC/tests/integration/dashboard_cdp.py" "$A/" "$SHOTS" "$more" 30 "$P/gen?size=1024&cache-control=max-age%3D600&k=1" >"$CT_TMP/cdp.out" \
        2>"$CT_TMP/cdp.err"
    r() { sed -n "s/^$1=//p" "$CT_TMP/cdp.out"; }
    "$CT_BIN/cachet" ctl backend "127.0.0.1:$OPORT" enable --admin "127.0.0.1:$APORT" >/dev/null
    [ -s "$CT_TMP/cdp.out" ] || ct_failed "drive chromium" "$(tail -5 "$CT_TMP/cdp.err")"
    ct_check_match "the page shows snapshots from /events" "$(r updates)" '^([3-9]|[1-9][0-9]+)$'
    ct_check_match "the page drew cachet's history first ($(r history) snapshots)" "$(r history)" \
        '^([2-9]|[1-9][0-9]+)$'
    ct_check_match "... its requests chart had data from the history alone" \
        "$(r history_requests_colored)" '^[1-9][0-9]*$'
    ct_check "the page says live" "$(r state)" live
    b=$(r hits_before)
    a=$(r hits_after)
    ct_check_match "hit counter on the page before more traffic ($b)" "$b" '^[1-9][0-9]*$'
    ct_check "hit counter on the page moved with the traffic ($b -> $a)" \
        "$([[ "$a" =~ ^[0-9]+$ && "$b" =~ ^[0-9]+$ ]] && ((a >= b + 30)) && echo moved)" moved
    # each of those hits credits the object's fetch (sub-millisecond, not 0)
    ct_check_match "origin time saved in the last minute, beside the hit ratio ($(r saved))" \
        "$(r saved)" '^([1-9][0-9]* µs|[0-9]+\.[0-9]+ m?s)$'
    ct_check "nine charts, each drawn on a sized canvas" "$(r charts) $(r charts_sized)" "9 9"
    ct_check_match "requests chart has its data drawn" "$(r requests_chart_colored)" '^[1-9][0-9]+$'
    ct_check_match "most charts have data drawn" "$(r charts_with_data)" '^[6-9]$'
    ct_check "backends table: one row" "$(r backend_rows)" 1
    ct_check "backends table: the drained backend says drain" "$(r backend_health)" drain
    ct_check "listeners table: http, https, admin" "$(r listener_rows)" 3
    ct_check "listeners table: the protocols really used" "$(r listener_protos)" \
        "HTTP (HTTP/1.1) | HTTPS (TLS: HTTP/1.1, HTTP/2) | admin"
    ct_check "purge shown (the admin listener has a cache to purge)" "$(r purge_shown)" True
    ct_check "narrow window: nothing wider than 400 px" "$(r narrow_overflow)" 0
    ct_check "purge from the page: confirmed, then done" "$(r purge)" \
        "Purge $P/gen?size=1024&cache-control=max-age%3D600&k=1 from the cache? -> purged 1 object(s)"
    ct_check_match "... the object is gone (a miss)" \
        "$(curl -s -D - -o /dev/null "$P/gen?size=1024&cache-control=max-age%3D600&k=1" | tr -d '\r' | sed -n 's/^Cache-Status: //p')" \
        'fwd=uri-miss'
    ct_check "no JavaScript error" "$(r js_errors)" 0
    grep -E '^(js_error|chart):' "$CT_TMP/cdp.out"
    ct_check_match "screenshot saved" "$(file -b "$SHOTS/dashboard.png" 2>/dev/null ||
        head -c 8 "$SHOTS/dashboard.png" | od -An -c | tr -d ' ')" 'PNG'
fi

# ---- cachet ctl top --------------------------------------------------------------------
# no traffic now: the table must show exactly what /stats says
st=$(curl -s "$A/stats")
top=$("$CT_BIN/cachet" ctl top --once -i 0.5 --admin "127.0.0.1:$APORT")
ct_check "ctl top: exit 0" "$?" 0
col() { awk -v k="$1" '{ line = $0; sub(/^ +/, "", line) } index(line, k " ") == 1 { print $(NF-1) }' <<<"$top"; }
ct_check "ctl top: cache hit as in /stats" "$(col 'cache hit')" "$(jget "$st" 'd["cache_requests"]["hit"]')"
ct_check "ctl top: cache miss as in /stats" "$(col 'cache miss')" "$(jget "$st" 'd["cache_requests"]["miss"]')"
ct_check "ctl top: no requests in the interval" "$(awk '$1 == "requests" { print $3 }' <<<"$top")" 0
ct_check_match "ctl top: the backend row" "$top" $'\n'"127\\.0\\.0\\.1:$OPORT +not checked +[0-9]+ +0 +0 +0 +0"
ct_check_match "ctl top: latency percentiles row" "$top" $'\n''latency p50 / p90 / p99 '
ct_check "ctl top --once: no terminal control codes" "$(grep -c $'\033' <<<"$top")" 0
"$CT_BIN/cachet" ctl top --once --admin 127.0.0.1:1 >/dev/null 2>"$CT_TMP/top.err"
ct_check "ctl top: nobody listening: exit 1" "$?" 1
ct_check_match "ctl top: ... says so" "$(cat "$CT_TMP/top.err")" 'cannot connect to the admin listener 127.0.0.1:1'
"$CT_BIN/cachet" ctl top --bogus >/dev/null 2>&1
ct_check "ctl top: unknown option: exit 2" "$?" 2
cat >"$CT_TMP/off.conf" <<EOF
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
admin = { listen = "off"; };
EOF
"$CT_BIN/cachet" ctl top --once -c "$CT_TMP/off.conf" >/dev/null 2>"$CT_TMP/top.err"
ct_check_match "ctl top -c: admin listener off: said, exit 1" "$? $(cat "$CT_TMP/top.err")" \
    '^1 .*the admin listener is off'

# ---- exit with streams open --------------------------------------------------------------
curl -s -N -o /dev/null --max-time 120 "$A/events" &
sp=$!
ct_check "a stream open" "$(stat_poll 'd["admin_event_streams"]' 1)" 1
ct_stop proxy
ct_check "SIGTERM with a stream open: exit 0 (under ASan: nothing leaked)" "$?" 0
wait "$sp" 2>/dev/null

ct_done
