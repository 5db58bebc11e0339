#!/usr/bin/env bash
# tests/soak/soak.sh BINDIR: `make soak` (issue 19; not part of `make test`).
# Loopback only, bounded by SOAK_SECONDS (default 600).
#
# cachet (cache.size 64M, 2 workers, HTTP + HTTPS + admin) in front of
# cachet-origin, under wrk at c=1000 over HTTP and c=100 over HTTPS with the
# mix of soak.lua (hits, misses, no-store, 100 KiB objects, 404/500, chunked,
# trickled and cut-off bodies), while: the origin is SIGKILLed every 10 s and
# restarted 2 s later on its port; cachet gets SIGHUP every 30 s; everything
# is purged every 60 s; check.py verifies answers byte for byte; a sampler
# records RSS, fds and threads every 5 s (soak.csv). Then the load stops, the
# idle timeouts (5 s) pass, and the checks below run. The last line is
# "N passed, M failed".
set -u
export CT_BIN=$(cd "${1:?usage: soak.sh BINDIR}" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DUR=${SOAK_SECONDS:-600}
CACHE_MB=64
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
command -v wrk >/dev/null || { echo "soak: needs wrk (make deps-bench)"; exit 2; }

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 1 --idle-timeout 5
OPORT=$(ct_wait_listen origin) || exit 1
CONF="$CT_TMP/soak.conf"
cat >"$CONF" <<EOF2
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
admin = { listen = "127.0.0.1:0"; };
backends = ( { name = "origin"; address = "127.0.0.1:$OPORT"; pool_idle_timeout = "5s";
               connect_timeout = "1s"; } );
cache = { size = "${CACHE_MB}M"; };
limits = { keepalive_timeout = "5s"; };
logs = { level = "warn"; };
EOF2
ct_start proxy "$CT_BIN/cachet" -c "$CONF"
PPORT=$(ct_wait_listen proxy http) || exit 1
SPORT=$(ct_wait_listen proxy https) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
PID=$(ct_pid proxy)
A="http://127.0.0.1:$APORT"
curl -s -o /dev/null "http://127.0.0.1:$PPORT/gen?size=100"
curl -sk -o /dev/null "https://127.0.0.1:$SPORT/gen?size=100"
empty_rss=$(ct_rss_kb "$PID")
fds0=$(ls "/proc/$PID/fd" | wc -l)
echo "soak: ${DUR}s, cachet pid $PID, empty RSS ${empty_rss} KiB, ${fds0} fds; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

STOP="$CT_TMP/stop"
wrk -t1 -c1000 -d"${DUR}s" --timeout 20s -s "$HERE/soak.lua" "http://127.0.0.1:$PPORT" \
    >"$CT_TMP/wrk.http" 2>&1 &
W1=$!
wrk -t1 -c100 -d"${DUR}s" --timeout 20s -s "$HERE/soak.lua" "https://127.0.0.1:$SPORT" \
    >"$CT_TMP/wrk.https" 2>&1 &
W2=$!
python3 "$HERE/check.py" "$PPORT" "$SPORT" "$STOP" >"$CT_TMP/check.out" 2>"$CT_TMP/check.err" &
CHK=$!

# after the first five columns, where the resident memory is (memsample.py)
echo "t,rss_kb,fds,threads,cache_bytes,anon,shmem,file,heap,arenas,cache,m_alloc,m_resident,slab_used,slab_resident" >"$CT_TMP/soak.csv"
start=$(date +%s)
t=0 kills=0 hups=0 purges=0 origin_down_at=-1
while ((t < DUR)); do
    sleep 1
    t=$(($(date +%s) - start))
    if ((origin_down_at >= 0 && t >= origin_down_at + 2)); then
        ct_start origin "$CT_BIN/cachet-origin" --port "$OPORT" --workers 1 --idle-timeout 5
        origin_down_at=-1
    elif ((origin_down_at < 0 && t % 10 == 0 && t < DUR - 5)); then
        opid=$(ct_pid origin)
        kill -KILL "$opid" 2>/dev/null && kills=$((kills + 1))
        wait "$opid" 2>/dev/null # reap it quietly
        origin_down_at=$t
    fi
    if ((t % 30 == 0 && t > hups * 30)); then kill -HUP "$PID" && hups=$((hups + 1)); fi
    if ((t % 60 == 0 && t > purges * 60)); then
        curl -s -o /dev/null -m 10 -X POST "$A/purge?prefix=http://127.0.0.1:$PPORT/"
        curl -s -o /dev/null -m 10 -X POST "$A/purge?prefix=https://127.0.0.1:$SPORT/"
        purges=$((purges + 1))
    fi
    if ((t % 5 == 0)) && kill -0 "$PID" 2>/dev/null; then
        cb=$(curl -s -m 5 "$A/metrics" | awk '$1 == "cachet_cache_bytes" { print $2 }')
        echo "$t,$(ct_rss_kb "$PID"),$(ls "/proc/$PID/fd" | wc -l),$(awk '/^Threads:/ {print $2}' "/proc/$PID/status"),$cb,$(python3 "$HERE/memsample.py" "$PID" "$A")" >>"$CT_TMP/soak.csv"
    fi
    kill -0 "$PID" 2>/dev/null || break
done
touch "$STOP"
wait "$W1" "$W2" "$CHK"
((origin_down_at >= 0)) && ct_start origin "$CT_BIN/cachet-origin" --port "$OPORT" --workers 1
cp "$CT_TMP/soak.csv" "${SOAK_OUT:-/tmp}/soak.csv" 2>/dev/null

# ---- the report -------------------------------------------------------------------------
echo "soak: ran ${t}s: origin killed $kills times, $hups reloads, $purges purges"
for f in http https; do
    echo "wrk $f: $(grep -E 'requests in|Requests/sec|Non-2xx|Socket errors' "$CT_TMP/wrk.$f" | tr -s ' ' | tr '\n' ';')"
done
echo "checker: $(cat "$CT_TMP/check.out")"
ct_check "no crash: cachet alive" "$(kill -0 "$PID" 2>/dev/null && echo yes)" yes
read -r peak end_rss <<<"$(awk -F, 'NR > 1 { if ($2 > p) p = $2; e = $2 } END { print p + 0, e + 0 }' "$CT_TMP/soak.csv")"
bound=$((CACHE_MB * 1024 * 115 / 100 + 48 * 1024))
first=$(awk -F, 'NR > 1 && $1 >= 120 { print $2; exit }' "$CT_TMP/soak.csv")
echo "RSS KiB: empty $empty_rss, at 2 min ${first:-n/a}, end $end_rss, peak $peak, bound $bound"
ct_check "RSS peak ${peak} KiB <= 1.15 x cache.size + 48 MiB (${bound} KiB)" "$((peak <= bound))" 1
# flat: RSS follows what the cache holds, which purges empty every minute,
# so flatness is judged where the cache is full (>= 90 % of cache.size):
# from minute 2 on, every such sample within 5 % of their median; and no
# growth: the mean of the last third of them no more than 5 % above the
# first third's.
cap=$((CACHE_MB * 1048576))
awk -F, -v cap="$cap" 'NR > 1 && $1 >= 120 && $5 >= cap * 0.9 { print $2 }' "$CT_TMP/soak.csv" >"$CT_TMP/full"
if [ "$(wc -l <"$CT_TMP/full")" -ge 6 ]; then
    read -r med lo hi <<<"$(sort -n "$CT_TMP/full" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }')"
    ok=$(awk -v m="$med" -v l="$lo" -v h="$hi" 'BEGIN { print (h <= m * 1.05 && l >= m * 0.95) ? 1 : 0 }')
    ct_check "RSS flat from minute 2 at a full cache: median $med KiB, $lo..$hi within +-5 %" "$ok" 1
    read -r early late <<<"$(awk '{ v[NR] = $1 } END { n = int(NR / 3); a = 0; b = 0
        for (i = 1; i <= n; i++) { a += v[i]; b += v[NR - n + i] } print int(a / n), int(b / n) }' "$CT_TMP/full")"
    ct_check "no growth at a full cache: first third $early KiB, last third $late KiB (<= +5 %)" \
        "$((late * 100 <= early * 105))" 1
else
    ct_check "enough samples at a full cache to judge flatness" "$(wc -l <"$CT_TMP/full")" ">= 6"
fi
# where the memory was in those samples: each part's low / median / high
# (memsample.py says what each column is), to tell which part moves
python3 "$HERE/memsample.py" --summary "$CT_TMP/soak.csv" "$cap"
echo "threads: $(awk -F, 'NR > 1 { print $4 }' "$CT_TMP/soak.csv" | sort -n | uniq -c | tr -s ' ' | tr '\n' ';')"
wrong=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wrong"])' "$CT_TMP/check.out" 2>/dev/null)
hung=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hung"])' "$CT_TMP/check.out" 2>/dev/null)
okn=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ok"])' "$CT_TMP/check.out" 2>/dev/null)
ct_check "checker: 0 wrong answers" "${wrong:-missing}" 0
ct_check "checker: 0 hung answers" "${hung:-missing}" 0
ct_check_match "checker: answers verified" "${okn:-0}" '^[1-9][0-9]*$'
# fds: after the idle timeouts (5 s client and pool) and a purge (mapped
# bodies hold one each), back to the start's count (+ a few: admin, pool)
curl -s -o /dev/null -X POST "$A/purge?prefix=http://127.0.0.1:$PPORT/"
curl -s -o /dev/null -X POST "$A/purge?prefix=https://127.0.0.1:$SPORT/"
for ((i = 0; i < 300; i++)); do
    fds=$(ls "/proc/$PID/fd" | wc -l)
    ((fds <= fds0 + 4)) && break
    sleep 0.1
done
ct_check "no fd leak after the idle timeouts: $fds fds (start $fds0)" "$((fds <= fds0 + 4))" 1
ct_check "still serving HTTP" "$(curl -s -o /dev/null -w '%{http_code}' -m 10 "http://127.0.0.1:$PPORT/gen?size=10&after=1")" 200
ct_check "still serving HTTPS" "$(curl -sk -o /dev/null -w '%{http_code}' -m 10 "https://127.0.0.1:$SPORT/gen?size=10&after=1")" 200
ct_done
