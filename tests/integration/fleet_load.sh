#!/usr/bin/env bash
# Issue 17, failures under load: three cachet nodes, a standalone
# redis-server and one cachet-origin on loopback, client loops (keep-alive,
# random keys over 300) running on nodes a and b throughout:
#   - node c killed (SIGKILL): no failed request on a or b (c's keys go to
#     the origin, then to their next owner);
#   - Redis killed, then restarted: no failed request; membership and the
#     purge fan-out resume.
# Each loop counts what was not a 200 (statuses, resets, timeouts).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 2
read -r RP PA PB PC AA AB AC < <(ct_free_ports 7)
start_redis() { ct_start_redis "$RP"; }
start_redis
declare -A PORT=([a]=$PA [b]=$PB [c]=$PC) ADMIN=([a]=$AA [b]=$AB [c]=$AC)
for n in a b c; do
    cat >"$CT_TMP/$n.conf" <<EOF2
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:${PORT[$n]}"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "64M"; };
admin = { listen = "127.0.0.1:${ADMIN[$n]}"; };
fleet = {
  self = "$n";
  members = ( { name = "a"; address = "127.0.0.1:$PA"; admin = "127.0.0.1:$AA"; },
              { name = "b"; address = "127.0.0.1:$PB"; admin = "127.0.0.1:$AB"; },
              { name = "c"; address = "127.0.0.1:$PC"; admin = "127.0.0.1:$AC"; } );
  redis = "127.0.0.1:$RP";
  register_ttl = "2s";
};
EOF2
    ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"
done
for n in a b c; do ct_wait_listen "node$n" admin >/dev/null || { ct_failed "node $n starts"; exit 1; }; done
metric() { ct_metric "${ADMIN[$1]}" "cachet_$2"; }
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
for n in a b c; do ct_wait_until 30 metric_is "$n" fleet_redis_up 1 || ct_failed "node $n: Redis up"; done

# loop NODE TAG: two keep-alive clients on NODE until $CT_TMP/stop exists;
# writes "OK BAD" (requests answered 200, and not) to $CT_TMP/loop.TAG, and
# their count so far to loop.TAG.n after each 50.
loop() {
    /usr/bin/python3 - "$1" "$CT_TMP/loop.$2" "$CT_TMP/stop" <<'PY' &
import http.client, os, random, sys, threading
port, out, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ok, bad, lock = [0], [0], threading.Lock()
def run():
    c = None
    while not os.path.exists(stop):
        try:
            if c is None:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/gen?size=512&cache-control=max-age%%3D3600&k=%d" % random.randint(1, 300),
                      headers={"Host": "fleet.test"})
            r = c.getresponse(); r.read()
            good = r.status == 200
            if r.getheader("Connection", "").lower() == "close":
                c.close(); c = None
        except Exception:
            good = False
            c = None
        with lock:
            ok[0] += good; bad[0] += not good
            if (ok[0] + bad[0]) % 50 == 0:
                open(out + ".n", "w").write("%d\n" % (ok[0] + bad[0]))
ts = [threading.Thread(target=run) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
open(out, "w").write("%d %d\n" % (ok[0], bad[0]))
PY
}
done_n() { local v; v=$(cat "$CT_TMP/loop.$1.n" 2>/dev/null); [ "${v:-0}" -ge "$2" ]; }
# run_until TAG... : wait until each loop made 300 more requests
more() { local t; for t in "$@"; do local v; v=$(cat "$CT_TMP/loop.$t.n" 2>/dev/null); ct_wait_until 120 done_n "$t" $((${v:-0} + 300)); done; }
wait_loops() { local t; for t in "$@"; do ct_wait_until 60 test -s "$CT_TMP/loop.$t"; done; }

# ---- c killed under load
loop "$PA" a1
loop "$PB" b1
more a1 b1
ct_stop nodec KILL
more a1 b1
ct_wait_until 30 metric_is a fleet_members_live 2 || ct_failed "a sees c gone"
more a1 b1
touch "$CT_TMP/stop"; wait_loops a1 b1; rm -f "$CT_TMP/stop"
read -r oka bada <"$CT_TMP/loop.a1"
read -r okb badb <"$CT_TMP/loop.b1"
ct_check "c killed under load: no failed request on a ($oka served) or b ($okb served)" "$bada $badb" "0 0"
ct_check_match "... c's keys: a or b found it down at most once per worker, or never (expired first)" \
    "$(($(metric a fleet_owner_down) + $(metric b fleet_owner_down)))" '^[0-4]$'

# ---- Redis killed, then restarted, under load
loop "$PA" a2
loop "$PB" b2
more a2 b2
ct_stop redis KILL
ct_wait_until 30 metric_is a fleet_redis_up 0
more a2 b2
start_redis
ct_wait_until 30 metric_is a fleet_redis_up 1 || ct_failed "a reconnected"
ct_wait_until 30 metric_is b fleet_redis_up 1 || ct_failed "b reconnected"
more a2 b2
touch "$CT_TMP/stop"; wait_loops a2 b2; rm -f "$CT_TMP/stop"
read -r oka bada <"$CT_TMP/loop.a2"
read -r okb badb <"$CT_TMP/loop.b2"
ct_check "Redis killed and restarted under load: no failed request on a ($oka) or b ($okb)" "$bada $badb" "0 0"
members_now() { redis-cli -p "$RP" ZRANGEBYSCORE "{cachet}:members" "$((${EPOCHREALTIME/./} / 1000))" +inf | cut -d" " -f1 | sort | tr '\n' ' '; }
registered() { [ "$(members_now)" = "a b " ]; }
ct_wait_until 30 registered
ct_check "... Redis has a and b registered again" "$(members_now)" "a b "
p0=$(metric b fleet_purges_applied)
curl -s -X POST "http://127.0.0.1:$AA/purge?url=http%3A%2F%2Ffleet.test%2Fgen%3Fk%3D1" >/dev/null
ct_wait_until 30 metric_is b fleet_purges_applied $((p0 + 1))
ct_check "... and a purge on a reaches b through the stream" "$(($(metric b fleet_purges_applied) - p0))" 1
ct_done
