#!/usr/bin/env bash
# cachet streams bodies with bounded memory: a 1 GiB response passes with the
# proxy's RSS growing by at most 16 MiB, a slow reader does not make cachet
# buffer the body (back-pressure stops reading the origin), and a 256 MiB
# upload streams to the origin the same way.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
# Under ASan, freed memory sits in a quarantine (256 MiB by default) and
# would read as growth; keep it small so the figure means the same thing.
if ldd "$CT_BIN/cachet" 2>/dev/null | grep -q libasan; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
fi
ct_start_proxy --http 127.0.0.1:0 --https off --admin off --workers 1 \
    --backend "127.0.0.1:$OPORT"
PID=$(ct_pid proxy)

curl -s -o /dev/null "$P/bytes/1000000" # warm the pools and buffers
base=$(ct_rss_kb "$PID")
peak=$(ct_peak_rss_during "$PID" "$CT_TMP/cmd.out" curl -s --max-time 120 -o /dev/null -w '%{size_download}' "$P/bytes/1073741824")
ct_check "1 GiB response delivered whole" "$(cat "$CT_TMP/cmd.out")" 1073741824
growth=$(((peak - base) / 1024))
echo "# 1 GiB: RSS before ${base} KiB, peak ${peak} KiB, growth ${growth} MiB"
ct_check_match "1 GiB: RSS growth <= 16 MiB (was ${growth} MiB)" "$growth" '^([0-9]|1[0-6])$'

# A slow reader: cachet must stop reading the origin, not buffer 64 MiB.
base=$(ct_rss_kb "$PID")
peak=$(ct_peak_rss_during "$PID" "$CT_TMP/cmd.out" curl -s -o /dev/null --limit-rate 32M "$P/bytes/67108864")
growth=$(((peak - base) / 1024))
echo "# slow reader: growth ${growth} MiB"
ct_check_match "slow reader: RSS growth <= 16 MiB (was ${growth} MiB)" "$growth" '^([0-9]|1[0-6])$'

# A 256 MiB upload streams through (chunked from stdin, re-chunked to the
# origin, which reads and drops it).
base=$(ct_rss_kb "$PID")
peak=$(ct_peak_rss_during "$PID" "$CT_TMP/cmd.out" bash -c "head -c 268435456 /dev/zero | curl -s -X POST -H 'Transfer-Encoding: chunked' --data-binary @- -o /dev/null -w '%{http_code}' '$P/json'")
growth=$(((peak - base) / 1024))
echo "# 256 MiB upload: growth ${growth} MiB"
ct_check "256 MiB chunked upload answered 200" "$(cat "$CT_TMP/cmd.out")" 200
ct_check_match "upload: RSS growth <= 16 MiB (was ${growth} MiB)" "$growth" '^([0-9]|1[0-6])$'

ct_stop proxy
ct_check "cachet exits 0" "$?" 0
ct_done
