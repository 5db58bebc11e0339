# bench/lib/charts.awk: the data of one picture of the report, as the panel
# records bench/lib/panels.awk draws. Run by render.sh as
#   awk -F, -v chart=NAME -f charts.awk SUMMARY_CSV SPLIT_CSV
# with R_AWK_NAMES (fullname()) prepended. NAME is rps, cpu, tls, cache,
# latency or h2; a picture with no data prints no panel (and is not drawn).
#
# Records, tab-separated:
#   T title subtitle columns
#   P panel-title bold xformat(si|num) xlabel
#   B y end1 lo hi colour1 bold end2 colour2 labelx "text"
#     (a bar from 0 to end1, optionally continued to end2 in colour2 — the
#     kernel's share, or p99 past p50; lo/hi are the whiskers; "-" if none)
#   L y text bold        the row's name on the left
#   R x text             a dashed reference line

# One colour per system in every picture (Okabe-Ito, safe for colour
# blindness); cachet's is the strongest and is drawn with a bold outline.
function colour(s) {
    if (s == "cachet") return rgb(213, 94, 0)
    if (s == "cachet-w2") return rgb(230, 159, 0)
    if (s == "nginx") return rgb(0, 158, 115)
    if (s == "varnish") return rgb(0, 114, 178)
    if (s == "haproxy") return rgb(204, 121, 167)
    if (s == "stack") return rgb(86, 180, 233)
    if (s == "lt") return rgb(160, 140, 100)
    if (s == "co") return rgb(140, 140, 140)
    if (s == "h2o") return rgb(140, 156, 60)
    return rgb(85, 85, 85)
}
function rgb(r, g, b) { return r * 65536 + g * 256 + b }
# The colour mixed with white: f = 0 keeps it, 1 is white.
function light(c, f,   r, g, b) {
    r = int(c / 65536); g = int(c / 256) % 256; b = c % 256
    return rgb(int(r + (255 - r) * f), int(g + (255 - g) * f), int(b + (255 - b) * f))
}
# Systems in the same order in every panel: cachet first (at the top).
function rank(s) {
    if (s == "cachet") return 1
    if (s == "cachet-w2") return 2
    if (s == "haproxy") return 3
    if (s == "nginx") return 4
    if (s == "varnish") return 5
    if (s == "stack") return 6
    if (s == "lt") return 7
    if (s == "co") return 8
    return 9
}
function is_cachet(s) { return s == "cachet" || s == "cachet-w2" }
function is_h2(w) { return w ~ /(^|[-\/])h2([-\/]|$)/ }
# What a workload measures, for the panel's title.
function desc(w,   n, p) {
    n = w; sub(/\/.*/, "", n); p = w; sub(/^[^\/]*\//, "", p); p = toupper(p)
    if (p == "H2") p = "HTTP/2"
    if (n == "origin-1k") return "1 KiB from the origin server alone, " p
    if (n == "origin-json") return "small JSON from the origin server alone, " p
    if (n == "hit-1k") return "1 KiB cache hit, " p ", 100 connections"
    if (n == "hit-1k-c1000") return "1 KiB cache hit, " p ", 1000 connections"
    if (n == "hit-100k") return "100 KiB cache hit, " p ", 100 connections"
    if (n ~ /^hit-1k-m[0-9]+$/) return "1 KiB cache hit, " p ", 100 connections × " substr(n, 9) (substr(n, 9) == 1 ? " stream" : " streams")
    if (n == "newconn") return "a new " p " connection per request (1 KiB hit)"
    if (n == "tls-full") return "a full TLS handshake per request (client-bound)"
    if (n == "tls-resumed") return "a resumed TLS handshake per request (client-bound)"
    if (n == "pass-1k") return "pass-through (no-store), 1 KiB, " p
    if (n == "slow-100ms") return "cacheable, behind a 100 ms origin, cold each round"
    return w
}
function kfmt(v) {
    if (v >= 10000) return sprintf("%.1fk", v / 1000)
    return sprintf("%d", v)
}
function ufmt(v) { return v < 100 ? sprintf("%.1f", v) : sprintf("%.0f", v) }
function max(a, b) { return a > b ? a : b }
# A cell whose checks failed says so on its bar; if it has no figure at all,
# the reason stands in for it.
function flagged(k, t,   r) {
    if (!(k in bad)) return t
    r = why(bad[k])
    if (rps[k] + 0 == 0) return "no result: " substr(r, 1, 40)
    return t "   ✗ " substr(r, 1, 36)
}
# "r1: X; r2: X; r3: X" (the summary's failed rounds) as "X, 3 rounds".
function why(s,   n, a, i, f, same) {
    n = split(s, a, "; ")
    same = 1
    for (i = 1; i <= n; i++) { sub(/^r[0-9]+: /, "", a[i]); if (a[i] != a[1]) same = 0 }
    if (same) return a[1] (n > 1 ? ", " n " rounds" : ", 1 round")
    return s
}
function ratio(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", a / b) : "" }

function panel(title, bold, xfmt, xlabel) {
    printf "P\t%s\t%d\t%s\t%s\n", title, bold, xfmt, xlabel
}
function bar(y, e1, lo, hi, c1, bold, e2, c2, text) {
    gsub(/"/, "'", text)
    printf "B\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\t\"%s\"\n", y, e1, lo, hi, c1, bold, e2, c2,
        max(e1, max(hi == "-" ? 0 : hi, e2 == "-" ? 0 : e2)), text
}
function row_label(y, text, bold) { printf "L\t%s\t%s\t%d\n", y, text, bold }

# The systems of workload w in rank order, into the global array O[1..n].
function ordered(w,   n, i, j, t, m) {
    m = split(sys[w], O, " ")
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
        if (rank(O[j]) < rank(O[i]) || (rank(O[j]) == rank(O[i]) && O[j] < O[i])) { t = O[i]; O[i] = O[j]; O[j] = t }
    return m
}
function kshare(k) { return (ut[k] + kt[k] > 0) ? kt[k] / (ut[k] + kt[k]) : -1 }

# req/s per system, one panel per workload; wanted(w) picks the workloads.
function rps_panels(h2,   i, n, j, w, s, k, y, t, c) {
    for (i = 1; i <= nw; i++) {
        w = word[i]
        if (is_h2(w) != h2) continue
        panel(w ": " desc(w), 0, "si", "")
        n = ordered(w)
        for (j = 1; j <= n; j++) {
            s = O[j]; k = w "," s; y = j
            row_label(y, fullname(s), s == "cachet")
            if (k in na) { bar(y, 0, "-", "-", colour(s), 0, "-", 0, "not measured: " substr(na[k], 1, 60)); continue }
            t = kfmt(rps[k])
            if (h2 && cpu[k] != "-") t = t " · " ufmt(cpu[k] * 10) " µs CPU/req"
            c = ratio(rps[w ",cachet"], rps[k])
            if (!is_cachet(s) && c != "" && !(k in bad) && !((w ",cachet") in bad)) t = t "   (cachet " c "×)"
            bar(y, rps[k], lo[k], hi[k], colour(s), s == "cachet", "-", 0, flagged(k, t))
        }
    }
}

FILENAME == ARGV[2] {
    if (FNR > 1) { ut[$1 "," $2] += $4; kt[$1 "," $2] += $5 }
    next
}
FNR == 1 { next }
{
    w = $1; s = $2; k = w "," s
    if (!(w in wseen)) { wseen[w] = 1; word[++nw] = w }
    if (!((k) in kseen)) { kseen[k] = 1; sys[w] = sys[w] " " s }
    if ($3 == "-") { na[k] = $12; next }
    rps[k] = $3; lo[k] = $4; hi[k] = $5; p50[k] = $6; p99[k] = $7; cpu[k] = $8; org[k] = $11
    if ($12 !~ /^ok/) bad[k] = $12
    if (!(s in sseen)) { sseen[s] = 1; every[++ns] = s }
}
END {
    if (chart == "rps") {
        printf "T\tRequests per second, by workload (higher is better)\tmedian of the alternating rounds, whiskers min–max; linear scale in each panel; in brackets: cachet's req/s over that system's\t2\n"
        rps_panels(0)
    } else if (chart == "h2") {
        printf "T\tHTTP/2: requests per second (higher is better)\tmedian of the rounds, whiskers min–max, and the server's CPU per request\t1\n"
        rps_panels(1)
    } else if (chart == "cpu") {
        printf "T\tServer CPU per request, µs (lower is better)\tmedian of the rounds, all the system's processes, origin excluded; dark: user space, light: kernel\t2\n"
        for (i = 1; i <= nw; i++) {
            w = word[i]
            if (is_h2(w)) continue
            panel(w ": " desc(w), 0, "num", "")
            n = ordered(w)
            for (j = 1; j <= n; j++) {
                s = O[j]; k = w "," s
                row_label(j, fullname(s), s == "cachet")
                if ((k in na) || cpu[k] == "-") { bar(j, 0, "-", "-", colour(s), 0, "-", 0, "not measured"); continue }
                if ((k in bad) && rps[k] + 0 == 0) { bar(j, 0, "-", "-", colour(s), 0, "-", 0, flagged(k, "")); continue }
                v = cpu[k] * 10; f = kshare(k)
                if (f < 0) bar(j, v, "-", "-", colour(s), s == "cachet", "-", 0, ufmt(v) " µs")
                else bar(j, v * (1 - f), "-", "-", colour(s), s == "cachet", v, light(colour(s), 0.55),
                    sprintf("%s µs (%.0f %% kernel)", ufmt(v), 100 * f))
            }
        }
    } else if (chart == "tls") {
        printf "T\tWhat TLS costs\tkeep-alive: the 1 KiB hit, HTTPS against HTTP; new connections: server CPU of a handshake (TLS 1.3, P-256) and one hit\t1\n"
        # HTTPS ÷ HTTP req/s, keep-alive 1 KiB hit.
        y = 0; m = 0
        for (i = 1; i <= ns; i++) O2[i] = every[i]
        for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (rank(O2[j]) < rank(O2[i])) { t = O2[i]; O2[i] = O2[j]; O2[j] = t }
        for (i = 1; i <= ns; i++) {
            s = O2[i]; h = "hit-1k/http," s; t = "hit-1k/https," s
            if (!(h in rps) || !(t in rps)) continue
            if (!m++) panel("keep-alive 1 KiB hit: HTTPS req/s ÷ HTTP req/s (1 = TLS costs nothing)", 0, "num", "")
            y++
            row_label(y, fullname(s), s == "cachet")
            bar(y, rps[t] / rps[h], "-", "-", colour(s), s == "cachet", "-", 0,
                sprintf("%.2f   (%s → %s req/s)", rps[t] / rps[h], kfmt(rps[h]), kfmt(rps[t])))
        }
        # µs per keep-alive hit, HTTP and HTTPS.
        y = 0; m = 0
        for (i = 1; i <= ns; i++) {
            s = O2[i]; h = "hit-1k/http," s; t = "hit-1k/https," s
            if (!(t in cpu) || cpu[t] == "-") continue
            if (!m++) panel("server CPU per keep-alive 1 KiB hit, µs: HTTP and HTTPS", 0, "num", "")
            row_label(y + 1.5, fullname(s), s == "cachet")
            if ((h in cpu) && cpu[h] != "-") bar(y + 1, cpu[h] * 10, "-", "-", light(colour(s), 0.5), 0, "-", 0, "HTTP " ufmt(cpu[h] * 10) " µs")
            else bar(y + 1, 0, "-", "-", 0, 0, "-", 0, "HTTP not measured")
            d = ((h in cpu) && cpu[h] > 0) ? sprintf(" (%+.0f %%)", 100 * (cpu[t] / cpu[h] - 1)) : ""
            bar(y + 2, cpu[t] * 10, "-", "-", colour(s), s == "cachet", "-", 0, "HTTPS " ufmt(cpu[t] * 10) " µs" d)
            y += 2.6
        }
        # µs per new connection: plain TCP, full handshake, resumed handshake.
        y = 0; m = 0
        for (i = 1; i <= ns; i++) {
            s = O2[i]; a = "newconn/http," s; f = "tls-full/https," s; r = "tls-resumed/https," s
            if (!(f in cpu) && !(r in cpu)) continue
            if (!m++) panel("server CPU per new connection, µs: plain TCP, full TLS 1.3 handshake, resumed handshake", 0, "num", "")
            row_label(y + 2, fullname(s), s == "cachet")
            if ((a in cpu) && cpu[a] != "-") bar(y + 1, cpu[a] * 10, "-", "-", light(colour(s), 0.65), 0, "-", 0, "plain TCP " ufmt(cpu[a] * 10) " µs")
            else bar(y + 1, 0, "-", "-", 0, 0, "-", 0, "plain TCP not measured")
            if ((f in cpu) && cpu[f] != "-") bar(y + 2, cpu[f] * 10, "-", "-", colour(s), s == "cachet", "-", 0, "full handshake " ufmt(cpu[f] * 10) " µs")
            else bar(y + 2, 0, "-", "-", 0, 0, "-", 0, "full handshake not measured")
            if ((r in cpu) && cpu[r] != "-") bar(y + 3, cpu[r] * 10, "-", "-", light(colour(s), 0.35), 0, "-", 0, "resumed " ufmt(cpu[r] * 10) " µs")
            else bar(y + 3, 0, "-", "-", 0, 0, "-", 0, "resumed not measured")
            y += 3.6
        }
    } else if (chart == "cache") {
        printf "T\tWhat the cache buys, per system (req/s, higher is better)\tgrey: the origin on its own; ×: against the origin alone (a pass: against its no-store URL fetched from the origin directly); origin fetched: requests that reached the 100 ms origin, per round\t2\n"
        for (i = 1; i <= ns; i++) O2[i] = every[i]
        for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (rank(O2[j]) < rank(O2[i])) { t = O2[i]; O2[i] = O2[j]; O2[j] = t }
        for (i = 1; i <= ns; i++) {
            s = O2[i]
            if (s == "co" || s == "lt") continue
            hk = "hit-1k/http," s; pk = "pass-1k/http," s; sk = "slow-100ms/http," s
            o = (s == "stack") ? "lt" : "co"
            # "origin alone, 1 KiB" is the origin-1k cell, the one the req/s
            # chart's origin-1k panel and the report's table show: one name,
            # one figure. (It was the origin's pass-1k cell when there was
            # one: cachet-origin's /gen no-store URL, not /1k, measured at
            # another moment of the run; the 2026-12-01 run has them at 60.2k
            # and 34.7k, so the same label said two things.) The pass bar is
            # compared with that same no-store URL fetched straight from the
            # origin, which is what a pass adds a hop to.
            ok = "origin-1k/http," o
            dp = "pass-1k/http," o
            dk = "slow-100ms/http,co"
            # A panel compares: it needs two of its five bars.
            if ((hk in rps) + (pk in rps) + (sk in rps) + (ok in rps) + (dk in rps) < 2 || (hk in rps) + (pk in rps) + (sk in rps) == 0) continue
            panel(fullname(s), s == "cachet", "si", "")
            grey = colour("co")
            row_label(1, "origin alone, 1 KiB (" fullname(o) ")", 0)
            if (ok in rps) bar(1, rps[ok], lo[ok], hi[ok], light(grey, 0.3), 0, "-", 0, kfmt(rps[ok]))
            else bar(1, 0, "-", "-", 0, 0, "-", 0, "not measured")
            row_label(2, "cache hit, 1 KiB", s == "cachet")
            if (hk in rps) bar(2, rps[hk], lo[hk], hi[hk], colour(s), s == "cachet", "-", 0,
                kfmt(rps[hk]) ((ok in rps) ? sprintf("   (%.2f× the origin alone)", rps[hk] / rps[ok]) : ""))
            else bar(2, 0, "-", "-", 0, 0, "-", 0, "not measured")
            row_label(3, "pass (no-store), 1 KiB", 0)
            if (pk in rps) bar(3, rps[pk], lo[pk], hi[pk], light(colour(s), 0.45), 0, "-", 0,
                kfmt(rps[pk]) ((dp in rps) ? sprintf("   (%.2f× direct: %s)", rps[pk] / rps[dp], kfmt(rps[dp])) : ""))
            else bar(3, 0, "-", "-", 0, 0, "-", 0, "not measured")
            row_label(4, "100 ms origin alone", 0)
            if (dk in rps) bar(4, rps[dk], lo[dk], hi[dk], light(grey, 0.3), 0, "-", 0, kfmt(rps[dk]))
            else bar(4, 0, "-", "-", 0, 0, "-", 0, "not measured")
            row_label(5, "100 ms origin, cached", s == "cachet")
            # (in tests first: reading rps[sk] would create it)
            if (sk in rps) {
                t = "origin fetched " org[sk]
                if (dk in rps) t = sprintf("%.0f×; %s", rps[sk] / rps[dk], t)
                bar(5, rps[sk], lo[sk], hi[sk], colour(s), s == "cachet", "-", 0, kfmt(rps[sk]) "   (" t ")")
            }
            else bar(5, 0, "-", "-", 0, 0, "-", 0, "not measured")
        }
    } else if (chart == "latency") {
        printf "T\tLatency of cache hits, ms (lower is better)\tmedian over rounds of wrk's p50 (dark) and p99 (light); no CDF: the harness records p50 and p99 only\t2\n"
        for (i = 1; i <= nw; i++) {
            w = word[i]
            if (is_h2(w) || w !~ /^hit-/) continue
            t = desc(w)
            if (w ~ /c1000\/https/) t = "1 KiB hit, HTTPS, c=1000 (p99 has the handshakes)"
            panel(w ": " t, 0, "num", "")
            n = ordered(w)
            for (j = 1; j <= n; j++) {
                s = O[j]; k = w "," s
                row_label(j, fullname(s), s == "cachet")
                if (!(k in p50) || p50[k] == "-") { bar(j, 0, "-", "-", 0, 0, "-", 0, "not measured"); continue }
                if ((k in bad) && rps[k] + 0 == 0) { bar(j, 0, "-", "-", 0, 0, "-", 0, flagged(k, "")); continue }
                bar(j, p50[k], "-", "-", colour(s), s == "cachet", p99[k], light(colour(s), 0.6),
                    sprintf("p50 %.2f · p99 %.2f ms", p50[k], p99[k]))
            }
        }
    }
}
