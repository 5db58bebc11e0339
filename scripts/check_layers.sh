#!/usr/bin/env bash
# scripts/check_layers.sh [SRC_DIR]: fail on an #include that points the
# wrong way between layers (docs/internals.md draws them). Every build runs
# it (the `layers` target in CMakeLists.txt), so a wrong-way include breaks
# the build, not only CI.
#
# A folder may include its own headers and those of the folders listed for
# it. "proxy" is proxy/'s own files: ctx.h (the context every proxy layer
# reads), worker.c and main.c (the wiring: everything).
set -euo pipefail

# scripts/check_layers.sh --core-calls LIBCT_CORE.a: the file-level rule inside
# proxy/core, on the built library (a call, unlike an include, shows only
# there): each file calls only files of a lower rank, so its calls run one
# way, from the steps down to the leaves:
#   steps (and the fetch they start) -> background fetches, derived answers
#   -> the fill -> delivery from objects, the log -> route and fleet hooks
#   -> req.c (every request's start and end) -> the worker's cache side
#   -> the ban glue -> the leaves (the stored head, the step loop).
# The step loop (req_fsm.c) calls the steps through its table (ct_step_*),
# the one way up, as Varnish's CNT_Request does. A file with no rank fails.
if [ "${1:-}" = "--core-calls" ]; then
  lib=${2:?usage: check_layers.sh --core-calls LIBCT_CORE.a}
  nm -A "$lib" | awk '
    BEGIN {
      n = split("fetch:8 cache_req:8 cache_bg:7 cache_derive:7 cache_fill:6 cache_deliver:5 " \
                "req_log:5 route_step:4 fleet_step:4 req:3 wcache:2 cache_ban_glue:1 stored:0 req_fsm:0", r, " ")
      for (i = 1; i <= n; i++) { split(r[i], kv, ":"); rank[kv[1]] = kv[2] }
    }
    {
      f = $1; sub(/^[^:]*:/, "", f); sub(/\.c\.o:.*/, "", f)
      if ($2 == "U") { use[f, $3] = 1; users[f] = 1 }
      else if ($2 ~ /^[TDBR]$/) def[$3] = f
    }
    END {
      for (k in use) {
        split(k, fs, SUBSEP); from = fs[1]; sym = fs[2]
        if (!(sym in def)) continue
        to = def[sym]
        if (to == from || sym ~ /^ct_step_/) continue
        if (!(from in rank) || !(to in rank)) {
          x = (from in rank) ? to : from
          if (!(x in told)) print "proxy/core/" x ".c has no rank in scripts/check_layers.sh (--core-calls)" > "/dev/stderr"
          told[x] = 1; bad = 1; continue
        }
        if (rank[to] >= rank[from]) {
          print "proxy/core/" from ".c calls " sym " of proxy/core/" to ".c: a call up or sideways (rank " rank[from] " -> " rank[to] ", scripts/check_layers.sh)" > "/dev/stderr"
          bad = 1
        }
      }
      exit bad
    }'
  exit
fi

cd "${1:-$(dirname "$0")/..}"

declare -A allow=(
  [common]=""
  [http]="common"
  # the codecs: a library of their own so ct_http's users do not link zlib,
  # Brotli and zstd; only the request core and the protocols use them
  [http/coding]="common http"
  [cache]="common http"
  [conf]="common http"
  [tls]="common conf"
  [origin]="common http"
  # pure libraries of issue 15 (route table, balancing, real address, limits)
  [proxy/route]="common http conf"
  [proxy/balance]="common conf"
  [proxy/realip]="common conf"
  [proxy/limit]="common"
  # the fleet's view (issue 17): pure, over balance's rendezvous hashing
  [proxy/fleet]="common conf proxy/balance"
  [proxy/stats]="common cache"
  [proxy/net]="common conf tls proxy/ctx proxy/stats proxy/realip"
  # TLS to origins (issue 39): client contexts and sessions from tls/
  [proxy/upstream]="common http conf tls proxy/ctx proxy/net proxy/stats proxy/balance"
  [proxy/core]="common http http/coding conf cache tls proxy/ctx proxy/net proxy/stats proxy/upstream proxy/route proxy/balance proxy/realip proxy/limit proxy/fleet"
  # h1 relays bodies through the upstream's pump and hands an upgraded
  # upstream connection to its tunnel, so it may use proxy/upstream.
  [proxy/h1]="common http http/coding conf cache tls proxy/ctx proxy/net proxy/stats proxy/upstream proxy/core proxy/route proxy/balance proxy/realip proxy/limit proxy/fleet"
  [proxy/h2]="common http http/coding conf cache tls proxy/ctx proxy/net proxy/stats proxy/core proxy/route proxy/balance proxy/realip proxy/limit proxy/fleet"
  # the ACME client (issue 45): below ops, which runs it on the main thread
  # and installs what it gets; it reaches the listeners only through tls/
  [proxy/acme]="common conf tls"
  [proxy/ops]="common http http/coding conf cache tls proxy/acme proxy/ctx proxy/net proxy/stats proxy/upstream proxy/core proxy/route proxy/balance proxy/realip proxy/limit proxy/fleet"
  [proxy]="common http http/coding conf cache tls proxy/acme proxy/ctx proxy/net proxy/stats proxy/upstream proxy/core proxy/h1 proxy/h2 proxy/ops proxy/route proxy/balance proxy/realip proxy/limit proxy/fleet"
)
# ctx.h is read by every proxy layer, so it may only include what all of them may.
ctx_allow="common http conf proxy/stats"

rows=""
for d in "${!allow[@]}"; do rows+="$d=${allow[$d]};"; done
files=$(find common http cache conf tls origin proxy -name '*.[ch]' | sort)
# One grep over every file, one awk over its lines: cheap enough for every build.
grep -Hn '^#include "' $files /dev/null | awk -v rows="$rows" -v ctx="$ctx_allow" '
  BEGIN {
    n = split(rows, r, ";")
    for (i = 1; i <= n; i++) if (r[i] != "") { split(r[i], kv, "="); ok[kv[1]] = " " kv[2] " " }
    ok["proxy/ctx"] = " " ctx " "
  }
  function dirof(p) { sub(/\/[^\/]*$/, "", p); return p }
  {
    file = $0; sub(/:.*/, "", file)
    rest = substr($0, length(file) + 2); line = rest; sub(/:.*/, "", line)
    inc = rest; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    if (inc !~ /\//) next
    from = (file == "proxy/ctx.h") ? "proxy/ctx" : dirof(file)
    to = (inc == "proxy/ctx.h") ? "proxy/ctx" : dirof(inc)
    if (!(from in ok)) { if (!(from in told)) print file ": folder " from " has no row in scripts/check_layers.sh" > "/dev/stderr"; told[from] = 1; bad = 1; next }
    # the request core keeps its private header (cache_int.h: what its files
    # share) to itself; the rest of proxy/ uses core.h, req.h, proto.h, stored.h
    if (inc ~ /^proxy\/core\/.*_int\.h$/ && from != "proxy/core") {
      print file ":" line ": includes " inc ": the private header of proxy/core (scripts/check_layers.sh)" > "/dev/stderr"
      bad = 1; next
    }
    if (from == to || index(ok[from], " " to " ")) next
    print file ":" line ": includes " inc ": " from " may not depend on " to " (scripts/check_layers.sh)" > "/dev/stderr"
    bad = 1
  }
  END { exit bad }'
