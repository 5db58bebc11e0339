#!/usr/bin/env bash
# needs: cachet-origin
# The benchmark harness itself (bench/run.sh): a 2-second cell against
# cachet-origin must come out of wrk, through the parser, into the CSVs and
# the markdown table, with the origin's own request count agreeing, and
# every process it started gone afterwards. Not a timed assertion: the
# figures only have to be present and consistent.
source "$(dirname "$0")/lib.sh"

# The harness needs its load generator and two cores; say so rather than fail
# on a machine without them.
if ! command -v wrk >/dev/null || [ "$(nproc --all)" -lt 2 ]; then
    echo "skipping: needs wrk and 2 cores (make deps-bench)"
    ct_pass "skipped: no wrk or fewer than 2 cores"
    ct_done
    exit $?
fi

source "$CT_SRC/bench/lib/bench.sh"

# 1. The wrk parser on canned output: units us/ms/s, errors, non-2xx.
cat >"$CT_TMP/wrk.txt" <<'EOF'
Running 2s test @ http://127.0.0.1:1/1k
  1 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   812.00us  100.00us   1.20s    90.00%
  Latency Distribution
     50%  812.00us
     75%    1.05ms
     90%    1.50ms
     99%    1.20s
  123456 requests in 2.00s, 130.00MB read
  Socket errors: connect 1, read 2, write 3, timeout 4
  Non-2xx or 3xx responses: 7
Requests/sec:  61728.00
Transfer/sec:     65.00MB
EOF
ct_check "wrk output parsed (rps p50 p99 reqs errors non2xx bytes-per-answer)" \
    "$(b_parse_wrk "$CT_TMP/wrk.txt")" "61728 0.812 1200.000 123456 10 7 1104"
echo "unable to connect to 127.0.0.1:1 Connection refused" >"$CT_TMP/wrk-fail.txt"
b_parse_wrk "$CT_TMP/wrk-fail.txt" >/dev/null
ct_check "failed wrk run is reported as a failure" "$?" 1

# The s_time parser: two clients, rates summed, resumed connections counted
# ('r'), and the smallest bytes-per-connection kept (a short answer is an error).
printf '%s\n' 'Collecting connection statistics for 2 seconds' 'rrrr*rr' '' \
    '7 connections in 0.01s; 700.00 connections/user sec, bytes read 9000' \
    '8 connections in 2 real seconds, 1290 bytes read per connection' >"$CT_TMP/st.0"
printf '%s\n' 'rrr' '3 connections in 1 real seconds, 199 bytes read per connection' >"$CT_TMP/st.1"
ct_check "s_time output parsed (rps conns reused min-bytes)" \
    "$(b_parse_stime "$CT_TMP/st.0" "$CT_TMP/st.1")" "7 11 9 199"

# Each cell checks it measured what it claims:
# c_check KIND ERRORS NON2XX REQS ORIGIN CONNS REUSED SELF BYTES_PER_ANSWER MIN
source "$CT_SRC/bench/lib/cell.sh"
ct_check "hit that stayed in the cache" "$(c_check hit1k 0 0 1000 0 100 0 0 1300 1024)" ok
ct_check "100 KiB answers a little under size (wrk's rounding)" "$(c_check hit100k 0 0 1000 0 100 0 0 102237 102400)" ok
ct_check "hit that reached the origin" "$(c_check hit1k 0 0 1000 3 100 0 0 1300 1024)" \
    "hit reached origin 3 times"
ct_check "empty bodies are caught" "$(c_check hit1k 0 0 1000 0 100 0 0 300 1024)" \
    "short answers: 300 bytes each for a 1024-byte object"
ct_check "errors are caught" "$(c_check hit1k 2 5 1000 0 100 0 0 1300 1024)" "errors=2 non2xx=5"
ct_check "pass that reached the origin every time" "$(c_check pass1k 0 0 1000 1040 100 0 0 1300 1024)" ok
ct_check "pass that was served from a cache" "$(c_check pass1k 0 0 1000 10 100 0 0 1300 1024)" \
    "origin saw 10 of 1000"
ct_check "full handshakes that resumed" "$(c_check tls-new 0 0 1000 0 4 7 0 1300 1024)" "7 handshakes resumed"
ct_check "resumed handshakes that did not resume" "$(c_check tls-reuse 0 0 1000 0 4 10 0 1300 1024)" \
    "only 10 of 1000 resumed"

# 2. A real 2-second cell, cachet-origin only.
out=$CT_TMP/results
BENCH_KEEP=1 TMPDIR=$CT_TMP "$CT_SRC/bench/run.sh" --only origin-1k:co --rounds 1 --duration 2 \
    --bin "$CT_BIN" --out "$out" >"$CT_TMP/run.out" 2>"$CT_TMP/run.err"
ct_check "run.sh exits 0" "$?" 0

run=$(grep '^origin-1k/http,co,1,' "$out/latest-runs.csv")
IFS=, read -r _ _ _ rps p50 p99 reqs errs non2xx cpu cpu100k ccpu q origin check <<<"$run"
ct_check_match "round row: req/s from wrk" "$rps" '^[1-9][0-9]*$'
ct_check_match "round row: p50 and p99 in ms" "$p50 $p99" '^[0-9]+\.[0-9]{3} [0-9]+\.[0-9]{3}$'
ct_check_match "round row: requests counted" "$reqs" '^[1-9][0-9]*$'
ct_check "round row: no socket errors, no non-2xx" "$errs $non2xx" "0 0"
ct_check_match "round row: server CPU per 100k requests" "$cpu100k" '^[0-9]+\.[0-9]{3}$'
ct_check_match "round row: client CPU and listen queue sampled" "$ccpu $q" '^[0-9]+\.[0-9]{2} [0-9]+$'
# rps x duration is requests (wrk's own arithmetic, within rounding)
ct_check_match "req/s agrees with requests over 2 s" \
    "$(awk -v r="$rps" -v n="$reqs" 'BEGIN { d = n / r; print (d > 1.8 && d < 2.3) ? "yes" : d }')" '^yes$'
# The origin counted every request wrk counted, plus at most one in flight per connection.
ct_check_match "origin's count matches wrk's" \
    "$(awk -v o="$origin" -v n="$reqs" 'BEGIN { print (o >= n && o <= n + 100) ? "yes" : o " vs " n }')" '^yes$'
ct_check "the cell checked itself" "$check" ok

sum=$(grep '^origin-1k/http,co,' "$out/latest.csv")
ct_check_match "summary row has the median" "$sum" "^origin-1k/http,co,$rps,$rps,$rps,"
ct_check_match "markdown table row" "$(grep '| origin-1k/http | cachet-origin |' "$out/latest.md")" \
    "^\| origin-1k/http \| cachet-origin \| $rps \| "
ct_check_match "table header names the command" "$(grep '^Command:' "$out/latest.md")" 'run.sh --only origin-1k:co --rounds 1 --duration 2'
ct_check_match "meta file has the command for render.sh" "$(grep '^command=' "$out/latest-meta.txt")" \
    'run.sh --only origin-1k:co --rounds 1 --duration 2'
# The report itself is tests/integration/bench_report.sh's; here only that
# run.sh wrote it.
ct_check_match "HTML report written" "$(grep -c 'cachet-origin' "$out/latest.html" 2>/dev/null)" '^[1-9]'
if command -v gnuplot >/dev/null; then
    ct_check_match "chart is a PNG" "$(head -c 4 "$out/latest-rps.png" | tail -c 3)" '^PNG$'
fi

# 3. Every process it started is gone: nothing listens on the origin's port.
port=$(grep -h -m1 -o 'listening on [0-9.]*:[0-9]*' "$CT_TMP"/cachet-bench.*/co.out | sed 's/.*://')
ct_check_match "origin port was recorded" "$port" '^[0-9]+$'
ct_check "origin stopped by the harness" "$(ss -Hltn "sport = :${port:-1}" | wc -l)" 0

# 4. Bad arguments: usage and exit 2, nothing started.
"$CT_SRC/bench/run.sh" --bogus >/dev/null 2>&1
ct_check "unknown flag exits 2" "$?" 2
"$CT_SRC/bench/run.sh" --only no-such-cell --bin "$CT_BIN" >/dev/null 2>&1
ct_check "--only selecting nothing exits 2" "$?" 2

ct_done
