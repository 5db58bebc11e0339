#!/usr/bin/env bash
# The benchmark report (bench/render.sh, which run.sh calls at the end of a
# run), rendered from a recorded run committed in tests/integration/bench_report/:
# every picture and the HTML page exist, are real pictures, name every system
# in full (no short codes), draw cachet in the same colour everywhere; the
# markdown table keeps its columns and adds "cachet ÷ this system"; the HTML
# is self-contained; the HTTP/2 section appears only when the CSV has h2 cells.
# The recorded run is the quick run of 2026-12-01 22:15 UTC, its CSVs and
# meta file as run.sh wrote them. Last, the README's short "Latest
# benchmark" summary: it links the newest run kept under bench/results/
# (YYYY-MM-DD/README.md, beside that run's report) and quotes cachet's CPU
# per 1 KiB hit from that run's CSV. Needs no server: it runs in well under
# a minute, and fails (not skips) without gnuplot.
source "$(dirname "$0")/lib.sh"

FIX=$CT_SRC/tests/integration/bench_report
RENDER=$CT_SRC/bench/render.sh

if ! command -v gnuplot >/dev/null; then
    ct_failed "gnuplot is installed (make deps-test)"
    ct_done
    exit $?
fi

# The systems in the recorded run, by their names in the report.
ALL=("cachet-origin" "lighttpd" "nginx proxy_cache" "Varnish" "HAProxy cache"
    "nginx → Varnish → lighttpd" "cachet" "cachet ×2 workers")
TLS=("nginx proxy_cache" "HAProxy cache" "nginx → Varnish → lighttpd" "cachet" "cachet ×2 workers")
HITS=("nginx proxy_cache" "Varnish" "HAProxy cache" "nginx → Varnish → lighttpd" "cachet" "cachet ×2 workers")
CACHE=("${HITS[@]}" "(cachet-origin)" "(lighttpd)")
CODES=(co lt nginx varnish haproxy stack cachet-w2)

# png_size FILE: "WIDTHxHEIGHT" from the PNG header, or nothing if not a PNG.
png_size() {
    [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || return 0
    od -An -tu1 -j16 -N8 "$1" | awk '{ printf "%dx%d", $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }'
}

# check_picture DIR NAME SYSTEMS...: the PNG and its SVG twin are real
# pictures of some size, and the SVG's text names each system in full.
check_picture() {
    local dir=$1 name=$2 s missing="" codes="" c size
    shift 2
    size=$(png_size "$dir/latest-$name.png")
    ct_check_match "$name: PNG of at least 900x250 px" "$size" '^(9[0-9][0-9]|[1-9][0-9]{3,})x([3-9][0-9]{2}|2[5-9][0-9]|[1-9][0-9]{3,})$'
    ct_check_match "$name: PNG is not near-empty" "$(stat -c %s "$dir/latest-$name.png" 2>/dev/null)" '^[1-9][0-9]{4,}$'
    ct_check_match "$name: SVG draws bars" \
        "$(grep -c '<polygon' "$dir/latest-$name.svg" 2>/dev/null | awk '{ print ($1 >= 3) ? "yes" : $1 }')" '^yes$'
    # A row's name is a text of its own; "(NAME)" is a name inside a label.
    for s in "$@"; do
        if [ "${s:0:1}" = "(" ]; then
            grep -qF -- "$s</text>" "$dir/latest-$name.svg" 2>/dev/null || missing+=" [$s]"
        else
            grep -qF -- "<text>$s</text>" "$dir/latest-$name.svg" 2>/dev/null || missing+=" [$s]"
        fi
    done
    ct_check "$name: names every system in full" "${missing:-none missing}" "none missing"
    for c in "${CODES[@]}"; do
        grep -qF "<text>$c</text>" "$dir/latest-$name.svg" 2>/dev/null && codes+=" $c"
    done
    ct_check "$name: no system named by its short code" "${codes:-none}" none
    ct_check "$name: cachet in its colour (213,94,0)" \
        "$(tr -d ' ' <"$dir/latest-$name.svg" | grep -c "fill='rgb(213,94,0)'" | awk '{ print ($1 > 0) }')" 1
}

# 1. The recorded run, no HTTP/2 cells.
r1=$CT_TMP/r1
mkdir -p "$r1" && cp "$FIX"/* "$r1"/
# A picture left by an earlier run must not survive into this report.
echo stale >"$r1/latest-h2.png"
"$RENDER" "$r1" >"$CT_TMP/r1.out" 2>&1
ct_check "render.sh exits 0" "$?" 0

check_picture "$r1" rps "${ALL[@]}"
check_picture "$r1" cpu "${ALL[@]}"
check_picture "$r1" tls "${TLS[@]}"
check_picture "$r1" cache "${CACHE[@]}"
check_picture "$r1" latency "${HITS[@]}"
ct_check_match "cpu: user/kernel split drawn where measured" "$(grep -c ' % kernel)</text>' "$r1/latest-cpu.svg")" '^[1-9][0-9]*$'
ct_check_match "tls: full and resumed handshake CPU" "$(grep -cE '>(full handshake|resumed) [0-9]+ µs</text>' "$r1/latest-tls.svg")" '^([8-9]|[1-9][0-9]+)$'
# cachet's req/s over HAProxy's on the 1 KiB HTTP hit, from the recorded CSV.
rps_of() { awk -F, -v k="$1,$2" '$1 "," $2 == k { print $3 }' "$FIX/latest.csv"; }
c_rps=$(rps_of hit-1k/http cachet) h_rps=$(rps_of hit-1k/http haproxy)
ratio=$(awk -v c="$c_rps" -v h="$h_rps" 'BEGIN { printf "%.2f", c / h }')
label=$(awk -v h="$h_rps" 'BEGIN { if (h >= 10000) printf "%.1fk", h / 1000; else printf "%d", h }')
ct_check_match "recorded run has the 1 KiB HTTP hit of cachet and HAProxy" "$c_rps $h_rps" '^[0-9]+ [0-9]+$'
ct_check "rps: HAProxy's bar says its req/s and cachet's ratio ($ratio)" \
    "$(grep -cF ">$label   (cachet $ratio×)</text>" "$r1/latest-rps.svg")" 1

# "origin alone, 1 KiB" is one figure in every picture (issue 40): the
# origin-1k cell, which the req/s chart's origin-1k panel shows. The cache
# chart drew the origin's pass-1k cell (another URL, another moment) under
# that name, so the two pictures disagreed.
kfmt() { awk -v v="$1" 'BEGIN { if (v >= 10000) printf "%.1fk", v / 1000; else printf "%d", v }'; }
o1k=$(kfmt "$(rps_of origin-1k/http co)") opass=$(kfmt "$(rps_of pass-1k/http co)")
ct_check_match "recorded run has two different origin figures ($o1k, $opass)" \
    "$([ "$o1k" != "$opass" ] && echo "$o1k $opass")" '^[0-9.k]+ [0-9.k]+$'
ct_check "rps: the origin-1k panel shows cachet-origin at $o1k" \
    "$(grep -cF "<text>$o1k</text>" "$r1/latest-rps.svg")" 1
n_co=$(grep -cF '<text>origin alone, 1 KiB (cachet-origin)</text>' "$r1/latest-cache.svg")
ct_check "cache: every 'origin alone' bar of cachet-origin says $o1k ($n_co panels)" \
    "$(grep -cF "<text>$o1k</text>" "$r1/latest-cache.svg")" "$n_co"
ct_check "cache: the origin's pass-1k figure is no 'origin alone' bar" \
    "$(grep -cF "<text>$opass</text>" "$r1/latest-cache.svg")" 0
ct_check "cache: a pass is compared with the same URL from the origin directly" \
    "$(grep -cF "× direct: $opass)</text>" "$r1/latest-cache.svg" |
        awk '{ print ($1 > 0) ? "yes" : "no" }')" yes
ct_check "no HTTP/2 picture without h2 cells" "$(ls "$r1"/latest-h2.* 2>/dev/null | wc -l)" 0

# The markdown table: same columns plus the ratio; systems in full.
md=$r1/latest.md
ct_check_match "table header keeps its columns and adds the ratio" "$(grep -m1 '^| workload | system |' "$md")" \
    '^\| workload \| system \| req/s median \(min–max\) \| p50 ms \| p99 ms \| server CPU s / 100k req \| client CPU s \| max listen Q \| origin reqs \(per round\) \| check \| cachet ÷ this system \(req/s\) \|$'
ct_check_match "HAProxy row: cachet ÷ HAProxy" "$(grep -F '| hit-1k/http | HAProxy cache |' "$md")" "\\| ${ratio/./\\.}× \\|\$"
ct_check_match "cachet's own row has no ratio" "$(grep -F '| hit-1k/http | cachet |' "$md")" '\| ok \| - \|$'
ct_check "every table row names its system in full" \
    "$(awk -F' \\| ' '/^\| [a-z0-9-]+\/[a-z0-9]+ \| / { if ($2 ~ /^(co|lt|nginx|varnish|haproxy|stack|cachet-w2)$/) print $2 }' "$md" | sort -u | tr '\n' ' ')" ""
ct_check "table has a row per CSV row" "$(grep -cE '^\| [a-z0-9-]+/[a-z0-9]+ \| [^|]+ \| [0-9-]' "$md")" \
    "$(($(wc -l <"$r1/latest.csv") - 1))"
ct_check_match "header names the command and the machine" "$(grep -E '^(Command|Machine):' "$md" | tr '\n' ' ')" \
    '^Command: `bench/run.sh .*` .*Machine: [0-9]+ cores'

# The HTML page: self-contained, every picture inline, tables, checks.
html=$r1/latest.html
ct_check_match "HTML is a page of some size" "$(stat -c %s "$html" 2>/dev/null)" '^[1-9][0-9]{5,}$'
ct_check "HTML inlines the five pictures" "$(grep -c '^<svg' "$html")" 5
ct_check "HTML loads nothing from elsewhere" \
    "$(grep -ciE '<(img|script|link|iframe)[ >]|src=|url\(http|href="(http|//)' "$html")" 0
ct_check "SVG ids made unique on the page" \
    "$(grep -o "id='[^']*'" "$html" | sort | uniq -d | wc -l)" 0
missing=""
for s in "${ALL[@]}"; do grep -qF "$s" "$html" || missing+=" [$s]"; done
ct_check "HTML names every system in full" "${missing:-none missing}" "none missing"
ct_check_match "HTML has the command" "$(grep -o '<p>Command: <code>[^<]*</code>' "$html" | head -1)" 'bench/run.sh'
ct_check_match "HTML has the machine" "$(grep -o 'Machine: [^<;]*' "$html" | head -1)" '^Machine: [0-9]+ cores'
ct_check "HTML lists the checks of every cell" \
    "$(sed -n '/id="checks"/,$p' "$html" | grep -c '<td class="ok">ok')" "$(grep -c ',ok' "$r1/latest.csv")"
ct_check "HTML has no HTTP/2 section" "$(grep -c 'id="h2"' "$html")" 0

# 2. The same run with HTTP/2 cells (and a cell that could not run).
r2=$CT_TMP/r2
mkdir -p "$r2" && cp "$FIX"/* "$r2"/
cat >>"$r2/latest.csv" <<'EOF'
hit-1k-m10/h2,nginx,61234,60100,62050,14.100,20.300,1.612,1.97,0,0/0/0,ok
hit-1k-m10/h2,haproxy,70321,69800,71090,12.900,18.700,1.402,1.98,0,0/0/0,ok
hit-1k-m10/h2,cachet,90210,88750,91002,10.200,15.100,1.050,1.99,0,0/0/0,ok
hit-1k-m10/h2,stack,-,-,-,-,-,-,-,-,-,not available (no h2 listener)
EOF
"$RENDER" "$r2" >"$CT_TMP/r2.out" 2>&1
ct_check "render.sh with h2 cells exits 0" "$?" 0
check_picture "$r2" h2 "nginx proxy_cache" "HAProxy cache" "cachet" "nginx → Varnish → lighttpd"
ct_check "h2: a cell that could not run says why" \
    "$(grep -c '>not measured: not available (no h2 listener)</text>' "$r2/latest-h2.svg")" 1
ct_check "h2 cells only in the HTTP/2 picture" "$(grep -c 'hit-1k-m10/h2' "$r2/latest-rps.svg")" 0
ct_check "HTML has the HTTP/2 section" "$(grep -c '<h2 id="h2">HTTP/2</h2>' "$r2/latest.html")" 1
ct_check "HTML inlines six pictures" "$(grep -c '^<svg' "$r2/latest.html")" 6

# Rendered again without them, the HTTP/2 picture goes.
cp "$FIX/latest.csv" "$r2/latest.csv"
"$RENDER" "$r2" >"$CT_TMP/r2b.out" 2>&1
ct_check "h2 picture removed once the run has no h2 cells" "$(ls "$r2"/latest-h2.* 2>/dev/null | wc -l)" 0

# 3. Bad input: a clear message and exit 2, nothing written.
mkdir -p "$CT_TMP/empty"
"$RENDER" "$CT_TMP/empty" >/dev/null 2>"$CT_TMP/e1.err"
ct_check "no latest.csv: exit 2" "$?" 2
ct_check_match "no latest.csv: says so" "$(cat "$CT_TMP/e1.err")" 'no .*/latest.csv'
printf 'not,a,bench\n1,2,3\n' >"$CT_TMP/empty/latest.csv"
"$RENDER" "$CT_TMP/empty" >/dev/null 2>"$CT_TMP/e2.err"
ct_check "not a summary CSV: exit 2" "$?" 2
ct_check "nothing written for bad input" "$(ls "$CT_TMP/empty" | tr '\n' ' ')" "latest.csv "
"$RENDER" --bogus >/dev/null 2>&1
ct_check "unknown flag: exit 2" "$?" 2

# 4. The README's summary of the newest kept run (bench/README.md says how
# a run is kept): a short section that links the dated folder, whose report
# is there, and quotes cachet's CPU per 1 KiB hit from its latest.csv.
results=$CT_SRC/bench/results
newest=$(cd "$results" && ls -d 20[0-9][0-9]-[0-9][0-9]-[0-9][0-9] 2>/dev/null | sort | tail -1)
ct_check_match "a run is kept under bench/results/YYYY-MM-DD/" "$newest" '^20[0-9]{2}-[0-9]{2}-[0-9]{2}$'
missing=""
for f in README.md latest.md latest.csv latest.html; do
    [ -s "$results/$newest/$f" ] || missing+=" $f"
done
ct_check "the kept run has its README and report" "${missing:-none missing}" "none missing"
summary=$(awk '/^## Latest benchmark$/ { on = 1; next } on && /^## / { exit } on && NF' "$CT_SRC/README.md")
ct_check_match "README's Latest benchmark section is 3-6 lines" "$(printf '%s\n' "$summary" | grep -c .)" '^[3-6]$'
ct_check "the summary links the newest kept run" \
    "$(grep -cF "(bench/results/$newest/README.md)" <<<"$summary" | awk '{ print ($1 > 0) }')" 1
flat=$(tr '\n' ' ' <<<"$summary" | tr -s ' ')
for cell in hit-1k/http hit-1k/https; do
    us=$(awk -F, -v k="$cell,cachet" '$1 "," $2 == k { printf "%.1f", $8 * 10 }' "$results/$newest/latest.csv")
    ct_check_match "the kept run has cachet's $cell cell" "$us" '^[0-9]+\.[0-9]$'
    ct_check "the summary quotes cachet's CPU per $cell hit from the kept CSV ($us µs)" \
        "$(grep -cF "$us µs" <<<"$flat")" 1
done

ct_done
