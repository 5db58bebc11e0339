#!/usr/bin/env bash
# cachet backends and client limits: (weighted) round robin over several backends,
# a refused connect retried on the next backend, passive health (a dead
# backend is skipped after max_fails failures),
# keep-alive idle timeout, and max_connections_per_worker (beyond it cachet
# stops accepting, and starts again when a connection closes).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start oa "$CT_BIN/cachet-origin" --port 0 --workers 1
APORT=$(ct_wait_listen oa) || exit 1
ct_start ob "$CT_BIN/cachet-origin" --port 0 --workers 1
BPORT=$(ct_wait_listen ob) || exit 1
# A port nothing listens on: bind-and-close would race, so take the
# proxy-less origin's port after stopping a third origin.
ct_start oc "$CT_BIN/cachet-origin" --port 0 --workers 1
DPORT=$(ct_wait_listen oc) || exit 1
ct_stop oc KILL

# Round robin: 10 uncacheable requests, 5 to each origin.
ct_start p1 "$CT_BIN/cachet" --http 127.0.0.1:0 --https off --admin off --workers 1 \
    --backend "127.0.0.1:$APORT" --backend "127.0.0.1:$BPORT"
P1=$(ct_wait_listen p1 http) || exit 1
ct_origin_reset "$APORT"
ct_origin_reset "$BPORT"
codes=""
for i in $(seq 1 10); do
    codes+=$(curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$P1/gen?status=200&cache-control=no-store&i=$i")
done
ct_check "round robin: all answered" "$codes" "$(printf '200 %.0s' $(seq 1 10))"
ct_check "round robin: origin A got half" "$(ct_origin_total "$APORT")" 5
ct_check "round robin: origin B got half" "$(ct_origin_total "$BPORT")" 5
ct_stop p1

# Weights 3:1: 8 requests go 6 to A and 2 to B.
cat >"$CT_TMP/weights.conf" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$APORT"; weight = 3; }, { address = "127.0.0.1:$BPORT"; weight = 1; } );
admin = { listen = "off"; };
CONF
ct_start pw "$CT_BIN/cachet" -c "$CT_TMP/weights.conf"
PW=$(ct_wait_listen pw http) || exit 1
ct_origin_reset "$APORT"
ct_origin_reset "$BPORT"
for i in $(seq 1 8); do
    curl -s -o /dev/null "http://127.0.0.1:$PW/gen?status=200&cache-control=no-store&i=$i"
done
ct_check "weighted round robin: A (weight 3) got 6 of 8" "$(ct_origin_total "$APORT")" 6
ct_check "weighted round robin: B (weight 1) got 2 of 8" "$(ct_origin_total "$BPORT")" 2
ct_stop pw

# Passive health: a dead backend first in the list. A refused connect goes
# to the next backend (nothing was sent), and after max_fails=1 the dead one
# is skipped for fail_timeout.
cat >"$CT_TMP/health.conf" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$DPORT"; max_fails = 1; fail_timeout = "30s"; },
             { address = "127.0.0.1:$APORT"; max_fails = 1; fail_timeout = "30s"; } );
limits = { keepalive_timeout = "300ms"; max_connections_per_worker = 2; };
admin = { listen = "off"; };
CONF
ct_start p2 "$CT_BIN/cachet" -c "$CT_TMP/health.conf"
P2=$(ct_wait_listen p2 http) || exit 1
codes=""
for i in $(seq 1 8); do
    codes+=$(curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$P2/gen?status=200&cache-control=no-store&i=$i")
done
n502=$(grep -o 502 <<<"$codes" | wc -l)
n200=$(grep -o 200 <<<"$codes" | wc -l)
ct_check "dead backend: the refused request goes to the next backend (no 502)" "$n502" 0
ct_check "dead backend skipped afterwards: the rest answered 200" "$((n200 + n502))" 8
ct_check_match "the skip is logged" "$(cat "$CT_TMP/p2.err")" 'consecutive failures, skipped'

# Keep-alive idle timeout: an idle connection is closed after ~300 ms.
exec 3<>"/dev/tcp/127.0.0.1/$P2"
printf 'GET /gen?status=204 HTTP/1.1\r\nHost: a\r\n\r\n' >&3
IFS= read -r -t 30 status <&3
start=$(date +%s%N)
timeout 5 cat <&3 >/dev/null
ms=$((($(date +%s%N) - start) / 1000000))
exec 3<&-
ct_check "keep-alive connection served" "${status%$'\r'}" "HTTP/1.1 204 No Content"
ct_check_match "idle keep-alive closed after ~300 ms (was $ms ms)" "$ms" '^([2-9][0-9][0-9]|1[0-9][0-9][0-9])$'

# max_connections_per_worker = 2: a third connection waits in the kernel's
# queue until one of the two closes.
exec 4<>"/dev/tcp/127.0.0.1/$P2"
exec 5<>"/dev/tcp/127.0.0.1/$P2"
printf 'GET /gen?status=204 HTTP/1.1\r\nHost: a\r\n\r\n' >&4
IFS= read -r -t 30 s4 <&4
ct_check "first connection served" "${s4%$'\r'}" "HTTP/1.1 204 No Content"
curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$P2/gen?status=200&cache-control=no-store" >"$CT_TMP/third" &
third=$!
sleep 0.2
if kill -0 "$third" 2>/dev/null; then ct_pass "third connection not served at the limit"; else ct_failed "third connection not served at the limit" "$(cat "$CT_TMP/third")"; fi
exec 5<&-
exec 4<&-
wait "$third"
ct_check "third connection served once one closed" "$(cat "$CT_TMP/third")" 200
ct_check_match "the limit is logged" "$(cat "$CT_TMP/p2.err")" 'per-worker limit'

ct_stop p2
ct_check "cachet exits 0" "$?" 0

# Out of file descriptors (EMFILE): cachet stops accepting for a moment
# instead of spinning on the pending connection, and serves again once
# descriptors are free.
ct_start p3 bash -c "ulimit -n 40 && exec '$CT_BIN/cachet' --http 127.0.0.1:0 --https off --admin off --workers 1 --backend 127.0.0.1:$APORT"
P3=$(ct_wait_listen p3 http) || exit 1
fds=()
for i in $(seq 1 45); do exec {fd}<>"/dev/tcp/127.0.0.1/$P3" && fds+=("$fd"); done
ct_wait_until 60 grep -q 'not accepting for 100 ms' "$CT_TMP/p3.err"
ct_check_match "EMFILE: accepting paused, logged" "$(cat "$CT_TMP/p3.err")" 'Too many open files; not accepting'
PID3=$(ct_pid p3)
t0=$(awk '{print $14+$15}' "/proc/$PID3/stat")
sleep 0.5
t1=$(awk '{print $14+$15}' "/proc/$PID3/stat")
ct_check "EMFILE: no busy loop (CPU ticks in 0.5 s: $((t1 - t0)))" "$((t1 - t0 < 20))" 1
for fd in "${fds[@]}"; do exec {fd}<&-; done
ct_check "EMFILE: served again once descriptors are free" \
    "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$P3/gen?status=200&cache-control=no-store")" 200
ct_stop p3
ct_check "cachet exits 0" "$?" 0
ct_done
