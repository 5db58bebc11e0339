# needs: cachet-origin
# cachet-origin streaming and timing: /bytes/N bodies (plain and chunked)
# checked byte for byte, a 256 MiB transfer with bounded memory, 100
# concurrent /delay/500 finishing together, --delay, and clients that vanish
# mid-response (their connections and timers must be freed: fd count).
. "$(dirname "$0")/lib.sh"

pattern() { yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ | head -c "$1"; }
now_ms() { date +%s%3N; }
kib() { awk -v k="$2" '$1 == k ":" { print $2 }' "/proc/$1/status"; }
nfds() { ls "/proc/$1/fd" | wc -l; }
# wait_fds PID N: until PID is back to N open fds (60 s at most).
fds_le() { [ "$(nfds "$1")" -le "$2" ]; }
wait_fds() { ct_wait_until 60 fds_le "$1" "$2"; }

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 2
PORT=$(ct_wait_listen origin) || { ct_failed "origin starts"; ct_done; exit 1; }
PID=$(ct_pid origin)
U=http://127.0.0.1:$PORT

# ---- /bytes/N -----------------------------------------------------------------
for n in 0 1 62 63 64 65535 1048576 3000001; do
    if cmp -s <(curl -s "$U/bytes/$n") <(pattern "$n"); then ct_pass "/bytes/$n"; else ct_failed "/bytes/$n"; fi
done
for n in 1 100000 3000001; do
    if cmp -s <(curl -s "$U/bytes/$n?chunked=1") <(pattern "$n"); then ct_pass "/bytes/$n chunked"; else ct_failed "/bytes/$n chunked"; fi
done
ct_check "chunked has no Content-Length" "$(curl -s -D - -o /dev/null "$U/bytes/10?chunked=1" | grep -ci '^Content-Length')" 0
ct_check "/gen?size= is the pattern" "$(curl -s "$U/gen?size=70" | tail -c 7)" "0123456"

# ---- 256 MiB with bounded memory ----------------------------------------------
BEFORE=$(kib "$PID" VmRSS)
N=$((256 * 1024 * 1024))
if cmp -s <(curl -s "$U/bytes/$N") <(pattern "$N"); then ct_pass "256 MiB body intact"; else ct_failed "256 MiB body intact"; fi
# A slow reader of a 1 GiB body: the origin must not queue it.
curl -s --limit-rate 20M --max-time 1.5 -o /dev/null "$U/bytes/1073741824"
AFTER=$(kib "$PID" VmRSS)
PEAK=$(kib "$PID" VmHWM)
ct_check "RSS bounded after 256 MiB + a slow 1 GiB reader (+$((AFTER - BEFORE)) KiB)" "$((AFTER - BEFORE < 32768))" 1
ct_check "peak RSS bounded (peak $PEAK KiB, start $BEFORE KiB)" "$((PEAK - BEFORE < 32768))" 1

# ---- delays ---------------------------------------------------------------------
ct_origin_reset "$PORT"
ARGS=()
for i in $(seq 1 100); do ARGS+=(-o /dev/null "$U/delay/500?i=$i"); done
T0=$(now_ms)
# --parallel-immediate: one connection each, not reuse after the first answers.
curl -s --no-progress-meter -Z --parallel-immediate --parallel-max 100 \
    -w '%{http_code} %{time_total}\n' "${ARGS[@]}" >"$CT_TMP/delays"
T1=$(now_ms)
ct_check "100 delayed answers, all 200" "$(grep -c '^200 ' "$CT_TMP/delays")" 100
ct_check "each waited >= 0.5 s" "$(awk '$2 < 0.5' "$CT_TMP/delays" | wc -l)" 0
# Bounds sit halfway to what a serialising origin would take (100 x 0.5 s
# over its workers), so a loaded or sanitized run still passes.
ct_check "none waited for another (all < 8 s; slowest $(sort -k2 -n "$CT_TMP/delays" | tail -1 | cut -d' ' -f2) s)" \
    "$(awk '$2 >= 8.0' "$CT_TMP/delays" | wc -l)" 0
ct_check "100 x /delay/500 together in < 10 s (took $((T1 - T0)) ms)" "$(((T1 - T0) < 10000))" 1
ct_check "stats counted 100" "$(ct_origin_total "$PORT")" 100
T0=$(now_ms)
curl -s -o /dev/null "$U/json?delay=300"
T1=$(now_ms)
ct_check "delay= on any endpoint (took $((T1 - T0)) ms)" "$(((T1 - T0) >= 300))" 1

# ---- clients that vanish ------------------------------------------------------
BASE=$(nfds "$PID")
ARGS=()
for i in $(seq 1 20); do ARGS+=(-o /dev/null "$U/delay/60000?i=$i"); done
curl -s --no-progress-meter -Z --parallel-immediate --parallel-max 20 --max-time 0.3 "${ARGS[@]}" 2>/dev/null
if wait_fds "$PID" "$BASE"; then ct_pass "disconnect during a delay frees the connection"; else ct_failed "disconnect during a delay frees the connection" "$(nfds "$PID") fds, base $BASE"; fi
curl -s --max-time 0.3 -o /dev/null "$U/bytes/1073741824"
curl -s --max-time 0.3 -o /dev/null "$U/bytes/1073741824?chunked=1&trickle=10&trickle-size=100"
if wait_fds "$PID" "$BASE"; then ct_pass "disconnect mid-stream frees the connection"; else ct_failed "disconnect mid-stream frees the connection" "$(nfds "$PID") fds, base $BASE"; fi
ct_check "still serving" "$(curl -s "$U/plaintext")" "Hello, World!"

# SIGTERM with a delayed and a streaming response in flight: prompt, clean.
curl -s -o /dev/null "$U/delay/20000" &
C1=$!
curl -s --limit-rate 1M -o /dev/null "$U/bytes/1073741824" &
C2=$!
fds_ge() { [ "$(nfds "$1")" -ge "$2" ]; }
ct_wait_until 60 fds_ge "$PID" $((BASE + 2))
T0=$(now_ms)
ct_stop origin TERM
ct_check "SIGTERM with responses in flight exits 0" "$?" 0
T1=$(now_ms)
ct_check "and promptly, not after the 20 s delay (took $((T1 - T0)) ms)" "$(((T1 - T0) < 10000))" 1
wait "$C1" "$C2" 2>/dev/null

# ---- --delay ------------------------------------------------------------------
ct_start slow "$CT_BIN/cachet-origin" --port 0 --workers 1 --delay 3000
PORT=$(ct_wait_listen slow) || { ct_failed "slow origin starts"; ct_done; exit 1; }
T0=$(now_ms)
curl -s -o /dev/null "http://127.0.0.1:$PORT/json"
T1=$(now_ms)
ct_check "--delay applies (took $((T1 - T0)) ms)" "$(((T1 - T0) >= 3000))" 1
T0=$(now_ms)
curl -s -o /dev/null "http://127.0.0.1:$PORT/_origin/stats"
T1=$(now_ms)
ct_check "--delay spares /_origin/ (took $((T1 - T0)) ms)" "$(((T1 - T0) < 2000))" 1
T0=$(now_ms)
curl -s -o /dev/null "http://127.0.0.1:$PORT/json?delay=0"
T1=$(now_ms)
ct_check "delay=0 overrides --delay (took $((T1 - T0)) ms)" "$(((T1 - T0) < 2000))" 1
ct_stop slow TERM
ct_check "clean exit (--delay)" "$?" 0
ct_done
