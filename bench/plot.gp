# bench/plot.gp: req/s and p99 per cell, from the rows bench/lib/report.sh
# writes ("label" rps p99_ms). Called with -e "datafile=...; outfile=...; rows=N".
set terminal pngcairo size 1400, 900 font "sans,9" noenhanced
set output outfile
set multiplot layout 2, 1 title "cachet bench: median of alternating rounds"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set grid ytics
set key off
set xtics rotate by -45 scale 0
set bmargin 10
set ylabel "requests/s"
set logscale y
plot datafile using 2:xtic(1) lc rgb "#3070b0"
set ylabel "p99 latency, ms"
plot datafile using 3:xtic(1) lc rgb "#c05030"
unset multiplot
