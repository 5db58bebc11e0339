# bench/lib/render.sh: the report of a run, from the files run.sh leaves in
# its results folder. Sourced after report.sh (r_markdown, R_AWK_NAMES).
#
#   r_render DIR   DIR/latest.md, the pictures DIR/latest-NAME.{png,svg} and
#                  DIR/latest.html, from DIR/latest.csv and, when present,
#                  latest-cpu-split.csv (user/kernel), latest-meta.txt (date,
#                  command, machine) and latest-micro.txt
#
# Pictures (R_CHARTS), one per question; a picture without data is not drawn:
#   rps      requests/s per workload          cpu      server CPU per request
#   tls      what TLS costs                   cache    what the cache buys
#   latency  p50/p99 of the hit cells         h2       the HTTP/2 cells, if any
# gnuplot draws each twice from one script: the PNG for the README and docs,
# and an SVG inlined in the HTML, whose text (the systems' names) stays text.

R_CHARTS="rps cpu tls cache latency h2"
R_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# r_meta DIR KEY: one value of DIR/latest-meta.txt (KEY=value lines).
r_meta() { sed -n "s/^$2=//p" "$1/latest-meta.txt" 2>/dev/null | head -1; }

r_split() { if [ -s "$1/latest-cpu-split.csv" ]; then echo "$1/latest-cpu-split.csv"; else echo /dev/null; fi; }

# r_md DIR: the markdown report (header, tables, micro-benchmarks).
r_md() {
    local dir=$1 elapsed
    elapsed=$(r_meta "$dir" elapsed)
    echo "## cachet bench, $(r_meta "$dir" started)"
    echo
    if [ ! -s "$dir/latest-meta.txt" ]; then
        echo "(No latest-meta.txt beside the CSVs: the date, command and machine of this run are unknown.)"
        echo
    fi
    echo "Command: \`$(r_meta "$dir" command)\` ($(r_meta "$dir" mode), $(r_meta "$dir" rounds) alternating rounds, $((${elapsed:-0} / 60)) min $((${elapsed:-0} % 60)) s)."
    echo "Machine: $(r_meta "$dir" machine); loadavg $(r_meta "$dir" load_before) before, $(r_meta "$dir" load_after) after."
    [ -z "$(r_meta "$dir" build)" ] || echo "Build: $(r_meta "$dir" build)."
    echo "Servers pinned to CPU 1 (cachet ×2 workers: CPUs 0-1, sharing CPU 0 with wrk), wrk -t1 / openssl s_time on CPU 0."
    echo "Server CPU is utime+stime over all the system's processes (origin excluded for proxies);"
    echo "client CPU is the load generator's for the cell: near the cell's length, the client was the limit."
    echo "TLS handshake cells use openssl s_time (4 parallel, no latency figures); the client side costs"
    echo "about as much CPU as the server's, so their req/s is client-bound: compare CPU per request."
    echo "HTTPS p99 at c=1000 includes the 1000 initial handshakes."
    echo
    [ "$(wc -l <"$dir/latest.csv")" -le 1 ] || r_markdown "$dir/latest.csv" "$(r_split "$dir")"
    if [ -s "$dir/latest-micro.txt" ]; then
        echo
        echo "Micro-benchmarks (one thread on CPU 1 unless they say otherwise):"
        echo
        echo '```'
        cat "$dir/latest-micro.txt"
        echo '```'
    fi
}

# r_charts DIR: draw every picture that has data; remove the ones that have
# none, so no picture of an earlier run is left beside this run's report.
r_charts() {
    local dir=$1 c rec fmt
    # (latest.png: the single chart of earlier versions)
    rm -f "$dir/latest.png"
    for c in $R_CHARTS; do rm -f "$dir/latest-$c.png" "$dir/latest-$c.svg"; done
    command -v gnuplot >/dev/null || { echo "render: gnuplot not installed: no pictures" >&2; return 0; }
    rec=$(mktemp "${TMPDIR:-/tmp}/cachet-render.XXXXXX") || return 1
    for c in $R_CHARTS; do
        awk -F, -v chart="$c" "$R_AWK_NAMES$(cat "$R_LIB/charts.awk")" "$dir/latest.csv" "$(r_split "$dir")" >"$rec"
        for fmt in png svg; do
            awk -F'\t' -v term=$fmt -v out="$dir/latest-$c.$fmt" -f "$R_LIB/panels.awk" "$rec" >"$rec.gp"
            [ -s "$rec.gp" ] || continue
            gnuplot "$rec.gp" 2>"$rec.err" || { echo "render: gnuplot failed on $c.$fmt:" >&2; head -5 "$rec.err" >&2; }
        done
        # Browsers know "sans-serif" and want bold as a weight, not a font name.
        [ -s "$dir/latest-$c.svg" ] &&
            sed -i -e 's/font-family="sans:Bold"/font-family="sans-serif" font-weight="bold"/g' \
                -e 's/font-family="sans"/font-family="sans-serif"/g' "$dir/latest-$c.svg"
    done
    rm -f "$rec" "$rec.gp" "$rec.err"
    return 0
}

# r_md2html: the subset of markdown r_md writes (headings, paragraphs,
# tables, code blocks, `code`, **bold**) as HTML.
r_md2html() {
    awk '
        function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); return s }
        function inline(s) {
            s = esc(s)
            while (match(s, /`[^`]*`/)) s = substr(s, 1, RSTART - 1) "<code>" substr(s, RSTART + 1, RLENGTH - 2) "</code>" substr(s, RSTART + RLENGTH)
            while (match(s, /\*\*[^*]*\*\*/)) s = substr(s, 1, RSTART - 1) "<b>" substr(s, RSTART + 2, RLENGTH - 4) "</b>" substr(s, RSTART + RLENGTH)
            return s
        }
        function cells(line, a,   n) {
            sub(/^\| ?/, "", line); sub(/ ?\|$/, "", line)
            return split(line, a, / \| /)
        }
        function close_all() {
            if (para) { print "</p>"; para = 0 }
            if (table) { print "</tbody></table>"; table = 0 }
        }
        pre { if ($0 ~ /^```/) { print "</pre>"; pre = 0 } else print esc($0); next }
        /^```/ { close_all(); printf "<pre>"; pre = 1; next }
        /^#+ / { close_all(); n = index($0, " "); printf "<h%d>%s</h%d>\n", n + 1, inline(substr($0, n + 1)), n + 1; next }
        /^\|/ {
            if (para) { print "</p>"; para = 0 }
            if (!table) { table = 1; hdr = $0; nh = 0; next }
            if (nh == 0 && $0 ~ /^\| *:?-/) {
                n = cells($0, a)
                for (i = 1; i <= n; i++) al[i] = (a[i] ~ /:$/) ? " class=\"num\"" : ""
                n = cells(hdr, a)
                printf "<table><thead><tr>"
                for (i = 1; i <= n; i++) printf "<th%s>%s</th>", al[i], inline(a[i])
                print "</tr></thead><tbody>"
                nh = 1; next
            }
            n = cells($0, a)
            # cachet'"'"'s own rows stand out, as its bars do in the pictures.
            printf "<tr%s>", (a[2] == "cachet") ? " class=\"cachet\"" : ""
            for (i = 1; i <= n; i++) printf "<td%s>%s</td>", al[i], inline(a[i])
            print "</tr>"
            next
        }
        /^$/ { close_all(); next }
        { if (table) close_all(); if (!para) { printf "<p>"; para = 1 } else printf "<br>\n"; printf "%s", inline($0) }
        END { close_all(); if (pre) print "</pre>" }'
}

# r_checks CSV: what each cell checked (the rules of cell.sh's c_check) and
# what it found, as an HTML table.
r_checks() {
    awk -F, "$R_AWK_NAMES"'
        function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); return s }
        function rule(w, s,   n) {
            n = w; sub(/\/.*/, "", n)
            if (n ~ /^tls-full/) return "0 sessions resumed (openssl s_time -new)"
            if (n ~ /^tls-resumed/) return "at least 95 % of the handshakes resumed"
            if (n ~ /^slow/) return "origin fetches counted (coalescing)"
            if (n ~ /^(origin|pass)/) return (s == "lt") ? "(lighttpd answering alone is not counted)" : "the origin saw every request"
            if (s == "co" || s == "lt") return "answered by the origin itself"
            return "the origin saw 0 requests"
        }
        BEGIN {
            print "<table><thead><tr><th>workload</th><th>system</th><th>checked: no socket errors or non-2xx, whole bodies, and</th><th class=\"num\">origin requests per round</th><th>result</th></tr></thead><tbody>"
        }
        FNR == 1 { next }
        {
            res = ($3 == "-") ? "not measured: " $12 : $12
            cls = (res ~ /^ok/) ? "ok" : "bad"
            printf "<tr><td>%s</td><td>%s</td><td>%s</td><td class=\"num\">%s</td><td class=\"%s\">%s</td></tr>\n",
                esc($1), esc(fullname($2)), ($3 == "-") ? "" : rule($1, $2), ($3 == "-") ? "" : esc($11), cls, esc(res)
        }
        END { print "</tbody></table>" }' "$1"
}

# r_svg FILE ID: the SVG for inlining: no XML prologue, and its internal ids
# prefixed, since every gnuplot SVG defines the same ones.
r_svg() {
    sed -e '/^<?xml/d' -e '/^<!DOCTYPE/,/>$/d' \
        -e "s/id='\\([^']*\\)'/id='$2-\\1'/g" -e "s/id=\"\\([^\"]*\\)\"/id=\"$2-\\1\"/g" \
        -e "s/href='#/href='#$2-/g" -e "s/href=\"#/href=\"#$2-/g" -e "s/url(#/url(#$2-/g" "$1"
}

# r_html DIR: the self-contained page: every picture inline, the tables,
# the machine, the command and the checks.
r_html() {
    local dir=$1 c started
    started=$(r_meta "$dir" started)
    cat <<EOF
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>cachet bench, ${started:-undated}</title>
<style>
body { font-family: sans-serif; max-width: 1540px; margin: 1em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ccc; }
figure { margin: 0.5em 0; } figure svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } .num { text-align: right; } td:first-child { white-space: nowrap; }
tr.cachet td { background: #fdebdc; font-weight: bold; }
td.ok { color: #26734d; } td.bad { color: #b00020; font-weight: bold; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.8em; }
.meta { background: #f6f6f6; padding: 0.6em; }
nav a { margin-right: 1em; }
</style>
</head>
<body>
<h1>cachet bench, ${started:-undated}</h1>
<div class="meta">
<p>Command: <code>$(r_meta "$dir" command | sed 's/&/\&amp;/g; s/</\&lt;/g')</code>
($(r_meta "$dir" mode), $(r_meta "$dir" rounds) alternating rounds).<br>
Machine: $(r_meta "$dir" machine | sed 's/&/\&amp;/g; s/</\&lt;/g'); loadavg $(r_meta "$dir" load_before) before, $(r_meta "$dir" load_after) after.<br>
$([ -z "$(r_meta "$dir" build)" ] || echo "Build: $(r_meta "$dir" build | sed 's/&/\&amp;/g; s/</\&lt;/g').<br>")
Each server runs one worker pinned to CPU 1; the load generator (wrk -t1, or openssl s_time for
handshakes) runs on CPU 0; systems alternate A B C A B C. Only ratios within one run mean much:
two identical runs an hour apart differ by ~16 % cell by cell.</p>
</div>
<nav>
EOF
    for c in $R_CHARTS; do
        [ -s "$dir/latest-$c.svg" ] && echo "<a href=\"#$c\">$(r_chart_title $c)</a>"
    done
    echo '<a href="#tables">Tables</a> <a href="#checks">Checks</a>'
    echo "</nav>"
    for c in $R_CHARTS; do
        [ -s "$dir/latest-$c.svg" ] || continue
        echo "<h2 id=\"$c\">$(r_chart_title $c)</h2>"
        echo "<p>$(r_chart_note $c)</p>"
        echo "<figure>"
        r_svg "$dir/latest-$c.svg" "$c"
        echo "</figure>"
    done
    echo '<h2 id="tables">Tables</h2>'
    r_md "$dir" | sed '1,/^$/d' | r_md2html
    echo '<h2 id="checks">What each cell checked</h2>'
    echo "<p>A cell that did not measure what it claims says so here and in the table's check column.</p>"
    r_checks "$dir/latest.csv"
    echo "</body>"
    echo "</html>"
}

r_chart_title() {
    case $1 in
        rps) echo "Requests per second" ;;
        cpu) echo "Server CPU per request" ;;
        tls) echo "What TLS costs" ;;
        cache) echo "What the cache buys" ;;
        latency) echo "Latency" ;;
        h2) echo "HTTP/2" ;;
    esac
}

r_chart_note() {
    case $1 in
        rps) echo "One panel per workload, each on its own linear scale; bars are medians of the rounds, whiskers the slowest and fastest round. In brackets, cachet's req/s divided by that system's: above 1, cachet answered more." ;;
        cpu) echo "The server's CPU time (user + kernel, every process of the system, its origin left out) per request. Steadier than req/s on a shared machine: it shows who is really cheaper even where the load generator is the limit." ;;
        tls) echo "Top: the keep-alive 1 KiB hit over HTTPS as a fraction of the same over HTTP. Middle: server CPU per keep-alive hit, both ways. Bottom: server CPU per new connection: a plain TCP connection, a full TLS 1.3 handshake (listeners that refuse resumption), a resumed one." ;;
        cache) echo "For each caching system: the origin answering on its own, a cache hit, a pass-through request the cache may not store, and a cacheable object behind a 100 ms origin (100 clients, cold at the start of each round; the origin fetches show whether the cache coalesced them)." ;;
        latency) echo "Median over rounds of each cell's p50 and p99 as wrk reports them, for the cache-hit cells." ;;
        h2) echo "The HTTP/2 cells (h2load), requests per second with the server's CPU per request." ;;
    esac
}

r_render() {
    local dir=$1
    r_md "$dir" >"$dir/latest.md"
    r_charts "$dir"
    r_html "$dir" >"$dir/latest.html"
}
