# bench/lib/report.sh: turn the per-round CSV into the summary CSV and the
# markdown table (with derived figures). The pictures and the HTML report
# are bench/lib/render.sh's.

# The systems' full names, for every table and picture (the CSVs keep the
# short codes run.sh takes in --only). Shared by the awk programs here and
# in render.sh; a code it does not know is shown as it is.
R_AWK_NAMES='
function fullname(s) {
    if (s == "co") return "cachet-origin"
    if (s == "lt") return "lighttpd"
    if (s == "nginx") return "nginx proxy_cache"
    if (s == "varnish") return "Varnish"
    if (s == "haproxy") return "HAProxy cache"
    if (s == "stack") return "nginx → Varnish → lighttpd"
    if (s == "cachet-w2") return "cachet ×2 workers"
    return s
}
'

SUMMARY_HEADER="workload,system,rps_median,rps_min,rps_max,p50_ms,p99_ms,cpu_s_per_100k,client_cpu_s,max_listen_q,origin_reqs,check"

# r_summarize RUNS_CSV > SUMMARY_CSV: medians over rounds, cells in the
# order they were first measured. A row with round "na" marks a cell that
# could not run; its fourth field says why.
r_summarize() {
    echo "$SUMMARY_HEADER"
    awk -F, '
        function med(s,   a, n, t, i, j) {
            n = split(s, a, " ")
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
            if (n == 0) return "-"
            if (a[1] == "-") return "-"
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        function fmt(f, v) { return v == "-" ? v : sprintf(f, v) }
        function lo(s,   a, n, i, m) { n = split(s, a, " "); m = a[1]; for (i = 2; i <= n; i++) if (a[i] + 0 < m + 0) m = a[i]; return m }
        function hi(s,   a, n, i, m) { n = split(s, a, " "); m = a[1]; for (i = 2; i <= n; i++) if (a[i] + 0 > m + 0) m = a[i]; return m }
        FNR == 1 { next }
        $3 == "na" { key = $1 "," $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key }; na[key] = $4; next }
        {
            key = $1 "," $2
            if (!(key in seen)) { seen[key] = 1; order[++n] = key }
            rps[key] = rps[key] " " $4; p50[key] = p50[key] " " $5; p99[key] = p99[key] " " $6
            cpu[key] = cpu[key] " " $11; ccpu[key] = ccpu[key] " " $12
            if (!(key in q) || $13 + 0 > q[key] + 0) q[key] = $13 + 0
            org[key] = org[key] (org[key] == "" ? "" : "/") ($14 == "" ? "-" : $14)
            chk = $15; for (i = 16; i <= NF; i++) chk = chk ";" $i
            if (chk !~ /^ok/) bad[key] = bad[key] (bad[key] == "" ? "" : "; ") "r" $3 ": " chk
            else if (!(key in good) || chk != "ok") good[key] = chk
        }
        END {
            for (i = 1; i <= n; i++) {
                k = order[i]
                if (k in na) { printf "%s,-,-,-,-,-,-,-,-,-,%s\n", k, na[k]; continue }
                o = org[k]; if (o ~ /^[-\/]*$/) o = "-"
                printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", k, fmt("%.0f", med(rps[k])), lo(rps[k]), hi(rps[k]),
                    fmt("%.3f", med(p50[k])), fmt("%.3f", med(p99[k])), fmt("%.3f", med(cpu[k])),
                    fmt("%.2f", med(ccpu[k])), q[k], o, (k in bad) ? bad[k] : good[k]
            }
        }' "$1"
}

# r_markdown SUMMARY_CSV [SPLIT_CSV]: the table, then the derived figures
# (SPLIT_CSV: user and kernel ticks per round, for the kernel's share).
# Systems by their full names; the last column is cachet's req/s over the
# row's in the same workload (1.27× means cachet answered 27 % more).
r_markdown() {
    awk -F, "$R_AWK_NAMES"'
        FNR == 1 { next }
        FILENAME != ARGV[1] { ut[$1 "," $2] += $4; kt[$1 "," $2] += $5; next }
        {
            w = $1; s = $2; key = w "," s
            row[++nr] = $0
            if ($3 == "-") next
            rps[key] = $3; cpu[key] = $8; org[key] = $11
            if (!(w in wseen)) { wseen[w] = 1; word[++nw] = w }
            sys[w] = sys[w] " " s
        }
        function ratio(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", a / b) : "-" }
        function kshare(k) { return (ut[k] + kt[k] > 0) ? sprintf("%.0f %%", 100 * kt[k] / (ut[k] + kt[k])) : "-" }
        function vs_cachet(w, s,   c) {
            c = rps[w ",cachet"]
            if (s == "cachet" || c == "" || rps[w "," s] == "") return "-"
            return ratio(c, rps[w "," s]) "×"
        }
        END {
            print "| workload | system | req/s median (min–max) | p50 ms | p99 ms | server CPU s / 100k req | client CPU s | max listen Q | origin reqs (per round) | check | cachet ÷ this system (req/s) |"
            print "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"
            for (i = 1; i <= nr; i++) {
                split(row[i], f, ",")
                if (f[3] == "-") {
                    printf "| %s | %s | %s | | | | | | | | |\n", f[1], fullname(f[2]), f[12]
                    continue
                }
                rng = (f[4] == f[5]) ? "" : sprintf(" (%s–%s)", f[4], f[5])
                printf "| %s | %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[1], fullname(f[2]), f[3], rng,
                    f[6], f[7], f[8], f[9], f[10], f[11], f[12], vs_cachet(f[1], f[2])
            }
            print ""
            print "Derived figures (medians; ratios computed within this run):"
            print ""
            print "| figure | system | value |"
            print "| --- | --- | ---: |"
            n = split("nginx haproxy stack cachet cachet-w2", S, " ")
            for (i = 1; i <= n; i++) {
                s = S[i]
                h = rps["hit-1k/http," s]; t = rps["hit-1k/https," s]
                if (h != "" && t != "") printf "| TLS overhead, keep-alive hit (HTTPS/HTTP req/s) | %s | %s |\n", fullname(s), ratio(t, h)
                h = cpu["newconn/http," s]; t = cpu["tls-full/https," s]
                if (h != "" && t != "") printf "| full TLS handshake vs plain connection (CPU per request, x) | %s | %s |\n", fullname(s), ratio(t, h)
                h = cpu["tls-resumed/https," s]
                if (h != "" && t != "") printf "| full vs resumed handshake (CPU per request, x) | %s | %s |\n", fullname(s), ratio(t, h)
            }
            n = split("nginx varnish haproxy stack cachet", S, " ")
            for (i = 1; i <= n; i++) {
                s = S[i]; o = (s == "stack") ? "lt" : "co"
                if (cpu["pass-1k/http," s] != "" && rps["pass-1k/http," o] != "")
                    printf "| proxy-hop price: pass req/s vs %s direct (x); proxy CPU µs/req (kernel share) | %s | %s; %.1f (%s) |\n",
                        fullname(o), fullname(s), ratio(rps["pass-1k/http," s], rps["pass-1k/http," o]), cpu["pass-1k/http," s] * 10,
                        kshare("pass-1k/http," s)
                if (rps["slow-100ms/http," s] != "" && rps["slow-100ms/http,co"] != "")
                    printf "| cache gain, 100 ms origin (req/s vs origin direct, x); origin fetches | %s | %s; %s |\n", fullname(s),
                        ratio(rps["slow-100ms/http," s], rps["slow-100ms/http,co"]), org["slow-100ms/http," s]
            }
            n = split("co lt nginx varnish haproxy cachet", S, " ")
            for (i = 1; i <= n; i++) {
                k = "hit-1k/http," S[i]
                if (S[i] == "co" || S[i] == "lt") k = "origin-1k/http," S[i]
                if (cpu[k] != "" && kshare(k) != "-")
                    printf "| kernel share of server CPU, 1 KiB %s over HTTP | %s | %s |\n",
                        (S[i] == "co" || S[i] == "lt") ? "origin answer" : "hit", fullname(S[i]), kshare(k)
            }
            if (rps["hit-1k/http,cachet-w2"] != "" && rps["hit-1k/http,cachet"] != "")
                printf "| scaling: --workers 2 vs 1, hit-1k HTTP (x) | cachet | %s |\n",
                    ratio(rps["hit-1k/http,cachet-w2"], rps["hit-1k/http,cachet"])
            # Where cachet (one worker) stands against each peer, cell by cell.
            hdr = 0
            for (i = 1; i <= nw; i++) {
                w = word[i]; c = w ",cachet"
                if (rps[c] == "") continue
                line = ""
                m = split(sys[w], P, " ")
                for (j = 1; j <= m; j++) {
                    p = P[j]
                    if (p ~ /^cachet/ || p == "co" || p == "lt" || rps[w "," p] == "") continue
                    line = line sprintf("%s%s %s / %s", line == "" ? "" : "; ", fullname(p),
                        ratio(rps[c], rps[w "," p]), ratio(cpu[c], cpu[w "," p]))
                }
                if (line == "") continue
                if (!hdr) {
                    print ""
                    print "cachet against each peer (req/s ratio / CPU-per-request ratio; req/s > 1 and CPU < 1 mean cachet is ahead):"
                    print ""
                    print "| workload | peer req/s ratio / CPU ratio |"
                    print "| --- | --- |"
                    hdr = 1
                }
                printf "| %s | %s |\n", w, line
            }
        }' "$1" "${2:-/dev/null}"
}
