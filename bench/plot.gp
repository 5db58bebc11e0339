# bench/plot.gp: req/s, p99 and server CPU per 100k requests for each cell,
# from the rows bench/lib/report.sh writes ("label" rps p99_ms cpu_s).
# Called with -e "datafile=...; outfile=...; rows=N".
width = rows * 24 > 1400 ? rows * 24 : 1400
set terminal pngcairo size width, 1300 font "sans,9" noenhanced
set output outfile
set multiplot layout 3, 1 title "cachet bench: medians of alternating rounds (log scales)"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set grid ytics
set key off
set xtics rotate by -45 scale 0
set bmargin 9
set rmargin 18
set logscale y
set ylabel "requests/s"
plot datafile using 2:xtic(1) lc rgb "#3070b0"
set ylabel "p99 latency, ms"
plot datafile using 3:xtic(1) lc rgb "#c05030"
set ylabel "server CPU s / 100k requests"
plot datafile using 4:xtic(1) lc rgb "#409040"
unset multiplot
