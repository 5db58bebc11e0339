#!/usr/bin/env bash
# `make run`: cachet-origin on 127.0.0.1:8081 behind cachet on its embedded
# default (HTTP 8080, HTTPS 8443 with a self-signed certificate, admin 8082),
# until Ctrl-C. Both processes are stopped by PID on exit.
set -euo pipefail
bin=${1:-build/bin}
pids=()
stop() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait; }
trap stop EXIT INT TERM

"$bin/cachet-origin" --port 8081 &
pids+=($!)
if [ -x "$bin/cachet" ]; then
    # as conf/cachet.service.in runs it: malloc may use transparent huge pages
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$bin/cachet" &
    pids+=($!)
    cat <<EOT

cachet is running (Ctrl-C stops it):
  curl -i http://127.0.0.1:8080/json             no freshness: fetched each time (Cache-Status says why)
  curl -ik https://127.0.0.1:8443/1k             HTTPS (self-signed); has a validator: stored, revalidated (304)
  curl -i 'http://127.0.0.1:8080/gen?size=1024&cache-control=max-age%3D60'
                                                 fresh for 60 s: the second one is a hit
  curl -s http://127.0.0.1:8082/stats            cachet's counters (admin)
  curl -s http://127.0.0.1:8081/_origin/stats    what reached the origin
EOT
else
    cat <<EOT

cachet-origin is running on http://127.0.0.1:8081 (the proxy is not built yet):
  curl -i http://127.0.0.1:8081/json
  curl -i http://127.0.0.1:8081/1k
  curl -s http://127.0.0.1:8081/_origin/stats
EOT
fi
wait -n
