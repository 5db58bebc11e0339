#!/usr/bin/env bash
# bench/render.sh: render the report of a run again from its CSVs (the
# markdown, the pictures and the HTML), e.g. after changing how it looks.
# run.sh does the same at the end of every run.
set -u

usage() {
    cat <<'USAGE'
usage: bench/render.sh [DIR]

  Reads DIR/latest.csv (required), latest-cpu-split.csv, latest-meta.txt and
  latest-micro.txt (optional) and writes DIR/latest.md, latest.html and the
  pictures latest-{rps,cpu,tls,cache,latency,h2}.{png,svg} (h2 only when the
  CSV has HTTP/2 cells). DIR defaults to bench/results; a kept run is
  re-rendered in its dated folder (bench/render.sh bench/results/YYYY-MM-DD),
  whose README.md and the top-level README's summary are written by hand
  (bench/README.md).
USAGE
}

HERE=$(cd "$(dirname "$0")" && pwd)
case ${1:-} in -h | --help) usage; exit 0 ;; -*) usage >&2; exit 2 ;; esac
[ $# -le 1 ] || { usage >&2; exit 2; }
DIR=${1:-$HERE/results}
[ -s "$DIR/latest.csv" ] || { echo "render.sh: no $DIR/latest.csv" >&2; exit 2; }
head -1 "$DIR/latest.csv" | grep -q '^workload,system,rps_median,' ||
    { echo "render.sh: $DIR/latest.csv is not a bench summary (header: $(head -c 80 "$DIR/latest.csv" | head -1))" >&2; exit 2; }

source "$HERE/lib/report.sh"
source "$HERE/lib/render.sh"
r_render "$DIR"
echo "render.sh: wrote $DIR/latest.md latest.html and $(cd "$DIR" && ls latest-*.png 2>/dev/null | tr '\n' ' ')" >&2
