#!/usr/bin/env bash
# Issue 17, the master a Sentinel names is checked with ROLE (the Sentinel
# client spec): a fake Sentinel (a small RESP server below) names a
# replica, writable (replica-read-only no) so that only the check keeps the
# fleet's writes off it. Node a refuses it, logs it, counts it
# (fleet_redis_role_mismatch), registers nothing there and asks again after
# a backoff; once the fake names the master, a uses it and registers.
# Then that master is stopped (SIGSTOP): the stalled links are dropped, and
# so is the next one, whose ROLE waits unanswered (fleet_redis_stalls).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v redis-server >/dev/null || { echo "redis-server missing (make test installs it)"; exit 1; }
ct_start_origin --workers 1
read -r RM RR FS PA AA < <(ct_free_ports 5)
ct_start_replicated "$RM" "$RR"
redis-cli -p "$RR" config set replica-read-only no >/dev/null
# The fake Sentinel: SENTINEL get-master-addr-by-name answers 127.0.0.1 and
# the port in $CT_TMP/named (read at each question, each logged in
# $CT_TMP/asked, its time); SUBSCRIBE is confirmed and then silent; the rest +OK.
cat >"$CT_TMP/fake_sentinel.py" <<'PY'
import socketserver, sys, time
port, named, asked = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def bulk(s):
    return b"$%d\r\n%s\r\n" % (len(s), s)

class Conn(socketserver.StreamRequestHandler):
    def command(self):
        head = self.rfile.readline()
        if not head.startswith(b"*"):
            return None
        args = []
        for _ in range(int(head[1:])):
            n = int(self.rfile.readline()[1:])
            args.append(self.rfile.read(n + 2)[:-2])
        return args

    def handle(self):
        while True:
            args = self.command()
            if not args:
                return
            verb = args[0].upper()
            if verb == b"SENTINEL":
                with open(asked, "a") as f:
                    f.write("%.3f\n" % time.monotonic())
                with open(named) as f:
                    p = f.read().strip().encode()
                self.wfile.write(b"*2\r\n" + bulk(b"127.0.0.1") + bulk(p))
            elif verb == b"SUBSCRIBE":
                self.wfile.write(b"*3\r\n" + bulk(b"subscribe") + bulk(args[1]) + b":1\r\n")
            else:
                self.wfile.write(b"+OK\r\n")

socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer.daemon_threads = True
socketserver.ThreadingTCPServer(("127.0.0.1", port), Conn).serve_forever()
PY
echo "$RR" >"$CT_TMP/named"
: >"$CT_TMP/asked"
ct_start fakesen /usr/bin/python3 "$CT_TMP/fake_sentinel.py" "$FS" "$CT_TMP/named" "$CT_TMP/asked"
ct_wait_until 30 sh -c "redis-cli -p $FS ping 2>/dev/null | grep -q OK" ||
    { ct_failed "the fake Sentinel starts"; exit 1; }

declare -A PORT=([a]=$PA) ADMIN=([a]=$AA)
# register_ttl 4 s: the stall bound (4 s at least) is reached soon
ct_fleet_start "redis = \"127.0.0.1:$FS\"; redis_sentinel = \"fl\"; register_ttl = \"4s\";"
ct_fleet_probes
metric_ge() { [ "$(metric "$1" "$2")" -ge "$3" ]; }
ct_wait_until 60 metric_ge a fleet_redis_role_mismatch 3 &&
    ct_pass "a refuses the replica it was named, three times (asked again)" ||
    ct_failed "a refuses the replica it was named, three times (asked again)"
said=$(grep -o 'Redis 127.0.0.1:[0-9]*, named .* says it is a [a-z]*' "$CT_TMP/nodea.err" | head -1)
ct_check_match "... and says why" "$said" \
    "^Redis 127.0.0.1:$RR, named the master of \"fl\" by a Sentinel, says it is a slave$"
ct_check "... registers nothing on it" "$(redis-cli -p "$RR" zcard '{cachet}:members')" 0
ct_check "... and does not count Redis up" "$(metric a fleet_redis_up)" 0
# the backoff: 1 s after the first refusal, 2 s after the second, ... (a
# question every 2 s without it: the links are made a tick after the answer,
# the next question a tick after the refusal)
gap=$(sed -n '2p;3p' "$CT_TMP/asked" | awk 'NR == 1 { t = $1 } NR == 2 { print $1 - t }')
awk -v g="$gap" 'BEGIN { exit !(g >= 2.5) }' &&
    ct_pass "the third question waited for the backoff ($gap s after the second)" ||
    ct_failed "the third question waited for the backoff (3 s at least)" "$gap s"

echo "$RM" >"$CT_TMP/named"
ct_wait_until 60 metric_is a fleet_redis_up 1 && ct_pass "a uses the master once it is named" ||
    ct_failed "a uses the master once it is named"
registered() { redis-cli -p "$RM" zrange '{cachet}:members' 0 -1 | grep -q '^a '; }
ct_wait_until 30 registered && ct_pass "... and registers there" ||
    ct_failed "... and registers there"

kill -STOP "$(ct_pid rmaster)"
ct_wait_until 60 metric_ge a fleet_redis_stalls 2 &&
    ct_pass "the stalled master's links dropped, then the next link's, its ROLE unanswered" ||
    ct_failed "the stalled master's links dropped, then the next link's" \
        "$(metric a fleet_redis_stalls)"
kill -CONT "$(ct_pid rmaster)"
ct_wait_until 60 metric_is a fleet_redis_up 1 && ct_pass "a uses the master once it answers" ||
    ct_failed "a uses the master once it answers"
ct_stop nodea
ct_check "a exits 0" "$?" 0
ct_done
