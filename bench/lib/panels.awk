# bench/lib/panels.awk: turn the panel records of charts.awk into one
# gnuplot script drawing small panels of horizontal bars, each with its own
# linear scale. Run as
#   awk -F'\t' -v term=png|svg -v out=FILE -f panels.awk RECORDS > SCRIPT
# Horizontal bars because the systems' full names ("nginx → Varnish →
# lighttpd") read on the left of a bar, not under it; the value and the
# comparison are printed at the end of each bar, so a panel needs no key.
# Prints nothing when the records hold no bar: no picture is drawn.

function nice(x,   e, m) {
    if (x <= 0) return 1
    e = 10 ^ int(log(x) / log(10) - (x < 1 ? 1 : 0))
    m = x / e
    # (no 2.5: "%.0s%c" would print 2500 as "2k")
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * e
}
# Roughly how wide a label is in pixels (bytes overcount the few UTF-8 signs).
# For a gnuplot string in double quotes.
function q(t) { gsub(/\\/, "\\\\", t); gsub(/"/, "\\\"", t); return t }
# Bold text is wider.
function textpx(t, bold) { return (bold ? 0.71 : 0.63) * PT * length(t) + 14 }

# Font size in points: big enough to read when the README shrinks a
# two-column picture to its page width.
BEGIN { PT = 12 }
$1 == "T" { title = q($2); subtitle = q($3); cols = $4 + 0; next }
$1 == "P" { np++; ptitle[np] = q($2); pbold[np] = $3; pfmt[np] = $4; nb[np] = 0; ymax[np] = 0; nl[np] = 0; nr[np] = 0; next }
$1 == "B" {
    i = ++nb[np]; bars++
    # Columns: y end1 lo hi colour1 bold end2 colour2 labelx "text" end
    B[np, i] = $2 " " $3 " " $4 " " $5 " " $6 " " $7 " " $8 " " $9 " " $10 " " $11 " " ($8 == "-" ? $3 : $8)
    if ($2 + 0 > ymax[np]) ymax[np] = $2 + 0
    lx[np, i] = $10 + 0; tx[np, i] = $11; tb[np, i] = $7 == 1
    next
}
$1 == "L" {
    i = ++nl[np]; ly[np, i] = $2; lt[np, i] = q($3); lb[np, i] = $4
    if ($2 + 0 > ymax[np]) ymax[np] = $2 + 0
    if (textpx($3, $4 == 1) > widest) widest = textpx($3, $4 == 1)
    next
}
$1 == "R" { i = ++nr[np]; rx[np, i] = $2; next }
END {
    if (!bars) exit
    if (cols > np) cols = np
    if (cols < 1) cols = 1
    W = cols == 2 ? 1500 : 1050
    pw = W / cols
    # The left margin fits the longest row name.
    LEFT = widest + 14 > 150 ? widest + 14 : 150
    RIGHT = 16; PTOP = 3.4 * PT; PBOT = 3 * PT; ROW = 2.4 * PT + 2; TOP = 7.4 * PT
    # Rows of panels: each as tall as its tallest panel.
    H = TOP
    for (p = 1; p <= np; p++) {
        r = int((p - 1) / cols); c = (p - 1) % cols
        h = PTOP + ROW * (int(ymax[p] + 0.999) + 0.4) + PBOT
        if (h > rowh[r]) rowh[r] = h
    }
    nrows = int((np + cols - 1) / cols)
    for (r = 0; r < nrows; r++) { rowtop[r] = H; H += rowh[r] }
    H = int(H + 10)
    if (term == "svg") printf "set terminal svg size %d,%d dynamic font \"sans,%d\" noenhanced background rgb \"white\"\n", W, H, PT
    else printf "set terminal pngcairo size %d,%d font \"sans,%d\" noenhanced background rgb \"white\"\n", W, H, PT
    printf "set output \"%s\"\n", out
    print "set datafile missing \"-\""
    print "set style fill solid 1.0 border lc rgb \"#444444\""
    print "unset key; unset ytics; set border 3 lw 0.8 lc rgb \"#555555\""
    print "set xtics nomirror out scale 0.5; set grid xtics lc rgb \"#dddddd\" lw 1"
    print "set multiplot"
    for (p = 1; p <= np; p++) {
        r = int((p - 1) / cols); c = (p - 1) % cols
        x0 = c * pw; y0 = rowtop[r]
        rows = int(ymax[p] + 0.999)
        top = y0 + PTOP; bot = top + ROW * (rows + 0.4)
        plotw = pw - LEFT - RIGHT
        # The x range leaves room for every bar's label after its end.
        xmax = 0
        for (i = 1; i <= nb[p]; i++) if (lx[p, i] > xmax) xmax = lx[p, i]
        allzero = xmax <= 0
        if (allzero) xmax = 1
        X = xmax * 1.05
        for (i = 1; i <= nb[p]; i++) {
            room = plotw - textpx(tx[p, i], tb[p, i])
            if (room < plotw * 0.25) room = plotw * 0.25
            if (lx[p, i] * plotw / room > X) X = lx[p, i] * plotw / room
        }
        step = nice(xmax / 4)
        print "unset label; unset arrow"
        if (p == 1) {
            printf "set label 9001 \"%s\" at screen %.5f, screen %.5f left font \"sans:Bold,%d\"\n", title, 14 / W, 1 - 2.6 * PT / H, PT + 5
            printf "set label 9002 \"%s\" at screen %.5f, screen %.5f left font \"sans,%d\" tc rgb \"#444444\"\n", subtitle, 14 / W, 1 - 5 * PT / H, PT
        }
        printf "set lmargin at screen %.5f; set rmargin at screen %.5f\n", (x0 + LEFT) / W, (x0 + pw - RIGHT) / W
        printf "set tmargin at screen %.5f; set bmargin at screen %.5f\n", 1 - top / H, 1 - bot / H
        printf "set xrange [0:%g]; set yrange [%g:0.4]\n", X, rows + 0.6
        # A panel of cells that all failed has no scale to show.
        if (allzero) print "unset xtics"
        else printf "set xtics 0, %g, %g\n", step, xmax
        printf "set format x \"%s\"\n", pfmt[p] == "si" ? "%.0s%c" : "%g"
        printf "set label 1 \"%s\" at screen %.5f, screen %.5f left font \"sans:Bold,%d\"%s\n", ptitle[p],
            (x0 + 14) / W, 1 - (y0 + 2 * PT) / H, PT + 1, pbold[p] ? " tc rgb \"#a04000\"" : ""
        for (i = 1; i <= nl[p]; i++)
            printf "set label %d \"%s\" at graph 0, first %s right offset -0.8,0 font \"%s\"\n", 10 + i, lt[p, i], ly[p, i],
                (lb[p, i] ? "sans:Bold," : "sans,") PT
        for (i = 1; i <= nr[p]; i++)
            printf "set arrow from first %s, graph 0 to first %s, graph 1 nohead dt 2 lw 1.2 lc rgb \"#555555\"\n", rx[p, i], rx[p, i]
        printf "$b%d << EOD\n", p
        for (i = 1; i <= nb[p]; i++) print B[p, i]
        print "EOD"
        d = "$b" p
        # Only the layers this panel has: gnuplot warns about an empty one.
        has2 = hasw = hasb = 0
        for (i = 1; i <= nb[p]; i++) {
            split(B[p, i], f, " ")
            if (f[7] != "-") has2 = 1
            if (f[3] != "-") hasw = 1
            if (f[6] == 1) hasb = 1
        }
        printf "plot %s using ($2/2):1:(0):2:($1-0.34):($1+0.34):5 with boxxyerror lc rgb variable", d
        if (has2) printf ", \\\n  %s using (($2+$7)/2):1:2:7:($1-0.34):($1+0.34):8 with boxxyerror lc rgb variable", d
        if (hasb) printf ", \\\n  %s using ($11/2):($6 > 0 ? $1 : NaN):(0):11:($1-0.34):($1+0.34) with boxxyerror fs empty lw 2.2 lc rgb \"black\"", d
        if (hasw) printf ", \\\n  %s using 2:1:3:4 with xerrorbars pt 7 ps 0 lw 1.4 lc rgb \"#222222\"", d
        printf ", \\\n  %s using 9:($6 > 0 ? NaN : $1):10 with labels left offset 0.6,0 font \"sans,%d\" tc rgb \"#222222\"", d, PT
        if (hasb) printf ", \\\n  %s using 9:($6 > 0 ? $1 : NaN):10 with labels left offset 0.6,0 font \"sans:Bold,%d\" tc rgb \"#000000\"", d, PT
        printf "\n"
    }
    print "unset multiplot"
}
