#!/usr/bin/env bash
# Issue 17, the HTTP fan-out's catch-up: a purge sent over HTTP to a member
# that cannot take it (refused, 5xx) waits in that member's queue and is
# sent again with a backoff until it is acknowledged; past
# fleet.fanout_queue the oldest are dropped (counted, logged once); a 4xx
# other than 401/403/404/429 is dropped at once; a member that leaves has
# its queue dropped. Two cachet nodes without Redis and one cachet-origin;
# a's address for b's admin listener is a relay (python3 below), killed and
# restarted to cut b off: a SIGSTOPped b would still accept connections in
# the kernel, and its purges would land when it resumes without any retry.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cat >"$CT_TMP/relay.py" <<'EOF'
# relay.py PORT relay TARGET_PORT | PORT answer STATUS: pass the bytes on to
# TARGET_PORT, or answer every request with STATUS itself (one line each on stdout)
import socket, socketserver, sys, threading
port, mode, arg = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def pump(src, dst):
    try:
        while True:
            d = src.recv(65536)
            if not d:
                break
            dst.sendall(d)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass

class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        if mode == "relay":
            up = socket.create_connection(("127.0.0.1", int(arg)))
            t = threading.Thread(target=pump, args=(up, self.request), daemon=True)
            t.start()
            pump(self.request, up)
            t.join()
            up.close()
            return
        f = self.request.makefile("rb")
        while True:
            line = f.readline()
            if not line:
                return
            n = 0
            while True:
                h = f.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.partition(b":")
                if k.strip().lower() == b"content-length":
                    n = int(v)
            f.read(n)
            print("request", line.decode().strip(), flush=True)
            self.request.sendall(b"HTTP/1.1 %s X\r\nContent-Length: 0\r\n\r\n" % arg.encode())

class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

s = Server(("127.0.0.1", port), Handler)
print("listening on 127.0.0.1:%d" % port, flush=True)
s.serve_forever()
EOF

ct_start_origin --workers 2
read -r PA PB AA AB R PC AC < <(ct_free_ports 7)
declare -A PORT=([a]=$PA [b]=$PB) ADMIN=([a]=$AA [b]=$AB)
# a's file: b's admin is the relay; b's file: the real one
conf_a() { ADMIN[b]=$R; ct_fleet_conf a "mirror_ttl = \"1h\"; $1"; ADMIN[b]=$AB; }
conf_a ""
ct_fleet_conf b 'mirror_ttl = "1h";'
for n in a b; do ct_start "node$n" "$CT_BIN/cachet" -c "$CT_TMP/$n.conf"; done
for n in a b; do ct_wait_listen "node$n" admin >/dev/null || { ct_failed "node $n starts"; exit 1; }; done
relay() { # relay MODE ARG: (re)start the relay on R
    ct_start relay /usr/bin/python3 "$CT_TMP/relay.py" "$R" "$@"
    ct_wait_listen relay >/dev/null || { ct_failed "the relay starts"; exit 1; }
}
relay relay "$AB"

ct_fleet_probes
get() { curl -s -o /dev/null -H "$H" "http://127.0.0.1:${PORT[$1]}$2"; }
apurge() { # the admin's purge of PATH on a
    local u
    u=$(/usr/bin/python3 -c \
        'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' \
        "http://fleet.test$1")
    curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$AA/purge?url=$u"
}
# a holds none of them: 404 there, fanned out all the same
sent() { ct_check_match "$1" "$2" '^(200|404)$'; }
applied() { grep -c "admin: purge.*k=$1\b" "$CT_TMP/nodeb.err"; }
removed() { grep -q "admin: purge.*k=$1: 1 objects" "$CT_TMP/nodeb.err"; }
dropped() { metric a "fleet_fanout_dropped_total{reason=\"$1\"}"; }
requests_seen() { grep -c '^request ' "$CT_TMP/relay.out"; }
requests_ge() { [ "$(requests_seen)" -ge "$1" ]; }
metric_ge() { [ "$(metric "$1" "$2")" -ge "$3" ]; }
reloads() { [ "$(grep -c 'in use by every worker' "$CT_TMP/nodea.err")" -ge "$1" ]; }

# ---- through the relay, a purge on a reaches b at once.
U1="/gen?size=100&$MA&k=c1"
get b "$U1"
sent "purge c1 on a" "$(apurge "$U1")"
ct_wait_until 30 removed c1 && ct_pass "... b applied it through the relay" || ct_failed "... b c1"
ct_wait_until 30 metric_is a fleet_fanout_waiting 0 || ct_failed "nothing waits after c1"
ct_check "no retry, nothing dropped" "$(metric a fleet_fanout_retries) $(dropped full)" "0 0"

# ---- b cut off (the relay down: refused): b keeps its copy; back: applied.
ct_stop relay KILL
U2="/gen?size=100&$MA&k=c2"
get b "$U2"
sent "purge c2 on a, b cut off" "$(apurge "$U2")"
ct_wait_until 30 metric_ge a fleet_fanout_retries 1 && ct_pass "a sends it again (refused)" ||
    ct_failed "a retries c2"
ct_check "one waits" "$(metric a fleet_fanout_waiting)" 1
ct_check_match "b still serves its copy" "$(cs b "$U2")" '; hit'
ct_check "... not applied there" "$(applied c2)" 0
grep -q "HTTP fan-out to b (127.0.0.1:$R): no answer; 1 waiting" "$CT_TMP/nodea.err" &&
    ct_pass "a says the sends to b fail" || ct_failed "a logs the failing sends"
relay relay "$AB"
ct_wait_until 60 removed c2 && ct_pass "b back: it applies the purge it missed" ||
    ct_failed "b applies c2 after the relay is back"
ct_wait_until 30 metric_is a fleet_fanout_waiting 0 && ct_pass "... nothing waits any more" ||
    ct_failed "waiting back to 0 after c2"
ct_check "... applied once" "$(applied c2)" 1
ct_check_match "... b misses now" "$(cs b "$U2")" 'fwd='
grep -q "HTTP fan-out to b (127.0.0.1:$R) answers again" "$CT_TMP/nodea.err" &&
    ct_pass "a says b answers again" || ct_failed "a logs the recovery"

# ---- b answering 503: sent again until it is acknowledged.
ct_stop relay KILL
relay answer 503
U3="/gen?size=100&$MA&k=c3"
get b "$U3"
r0=$(metric a fleet_fanout_retries)
sent "purge c3 on a, b answering 503" "$(apurge "$U3")"
ct_wait_until 60 requests_ge 2 && ct_pass "a sends it again after a 503" || ct_failed "c3 retried"
ct_check "... it waits" "$(metric a fleet_fanout_waiting)" 1
ct_stop relay KILL
relay relay "$AB"
ct_wait_until 60 removed c3 && ct_pass "... b applies it once it answers" || ct_failed "b c3"
ct_wait_until 30 metric_is a fleet_fanout_waiting 0 || ct_failed "waiting back to 0 after c3"
ct_check "retries counted" "$(($(metric a fleet_fanout_retries) > r0))" 1

# ---- a 400: it will never succeed; dropped at once, not sent again.
ct_stop relay KILL
relay answer 400
U4="/gen?size=100&$MA&k=c4"
get b "$U4"
sent "purge c4 on a, b answering 400" "$(apurge "$U4")"
ct_wait_until 30 metric_is a 'fleet_fanout_dropped_total{reason="rejected"}' 1 &&
    ct_pass "a drops it as rejected" || ct_failed "c4 dropped as rejected"
ct_check "... nothing waits (no retry pending), one request seen" \
    "$(metric a fleet_fanout_waiting) $(requests_seen)" "0 1"
grep -q "HTTP fan-out to b (127.0.0.1:$R): purge url=.*k%3Dc4 answered 400: dropped" \
    "$CT_TMP/nodea.err" && ct_pass "... and says so" || ct_failed "a logs the rejected purge"
ct_stop relay KILL

# ---- fanout_queue = 2 (a reload), b cut off, five purges: the oldest three
# dropped (counted, one log line), the newest two applied when b is back.
conf_a "fanout_queue = 2;"
kill -HUP "$(ct_pid nodea)"
ct_wait_until 30 reloads 1 || ct_failed "a reloads with fanout_queue = 2"
for k in q1 q2 q3 q4 q5; do get b "/gen?size=100&$MA&k=$k"; done
for k in q1 q2 q3 q4 q5; do apurge "/gen?size=100&$MA&k=$k" >/dev/null; done
ct_check "three dropped as the queue was full, two wait" \
    "$(dropped full) $(metric a fleet_fanout_waiting)" "3 2"
ct_check "one log line for the burst" \
    "$(grep -c 'the oldest dropped: that member missed purges; purge what matters again' \
        "$CT_TMP/nodea.err")" 1
relay relay "$AB"
ct_wait_until 60 removed q5 && ct_pass "b back: the newest purge applied" || ct_failed "b q5"
ct_wait_until 30 metric_is a fleet_fanout_waiting 0 || ct_failed "waiting back to 0 after q5"
ct_check "q4 and q5 applied, q1-q3 not" \
    "$(applied q1) $(applied q2) $(applied q3) $(applied q4) $(applied q5)" "0 0 0 1 1"
ct_check_match "b still serves q1's copy" "$(cs b "/gen?size=100&$MA&k=q1")" '; hit'
grep -q "HTTP fan-out to b (127.0.0.1:$R) caught up (3 purges or bans dropped before)" \
    "$CT_TMP/nodea.err" && ct_pass "a says when b caught up" || ct_failed "a logs the catch-up"

# ---- a member that leaves (a reload drops c, whose admin never answers)
# has its queue dropped, counted as left.
PORT[c]=$PC ADMIN[c]=$AC
conf_a ""
kill -HUP "$(ct_pid nodea)"
ct_wait_until 30 reloads 2 || ct_failed "a reloads with c"
sent "purge c5 on a, c unreachable" "$(apurge "/gen?size=100&$MA&k=c5")"
ct_wait_until 30 metric_is a fleet_fanout_waiting 1 && ct_pass "c's one waits" ||
    ct_failed "c5 waits for c"
unset 'PORT[c]' 'ADMIN[c]'
conf_a ""
kill -HUP "$(ct_pid nodea)"
ct_wait_until 30 reloads 3 || ct_failed "a reloads without c"
apurge "/gen?size=100&$MA&k=c6" >/dev/null
ct_wait_until 30 metric_is a 'fleet_fanout_dropped_total{reason="left"}' 1 &&
    ct_pass "c left: its queue dropped, counted" || ct_failed "c's queue dropped as left"
ct_wait_until 30 metric_is a fleet_fanout_waiting 0 || ct_failed "waiting 0 once c left"

# ---- fanout_queue = 0 (a reload): sent once, as before the catch-up; one
# that fails is dropped (counted as full, logged), never sent again.
conf_a "fanout_queue = 0;"
kill -HUP "$(ct_pid nodea)"
ct_wait_until 30 reloads 4 || ct_failed "a reloads with fanout_queue = 0"
ct_stop relay KILL
U8="/gen?size=100&$MA&k=c8"
get b "$U8"
f0=$(dropped full) r0=$(metric a fleet_fanout_retries)
sent "purge c8 on a, fanout_queue = 0, b cut off" "$(apurge "$U8")"
ct_wait_until 30 metric_is a 'fleet_fanout_dropped_total{reason="full"}' $((f0 + 1)) &&
    ct_pass "... the failed send is dropped, counted as full" || ct_failed "c8 dropped"
ct_check "... not kept, not sent again" \
    "$(metric a fleet_fanout_waiting) $(metric a fleet_fanout_retries)" "0 $r0"
grep -q "HTTP fan-out to b (127.0.0.1:$R) failed (0), not sent again (fleet.fanout_queue = 0)" \
    "$CT_TMP/nodea.err" && ct_pass "... and says so" || ct_failed "a logs the lost c8"
relay relay "$AB"
U9="/gen?size=100&$MA&k=c9"
get b "$U9"
sent "purge c9 on a, b back" "$(apurge "$U9")"
ct_wait_until 30 removed c9 && ct_pass "... the next one is sent" || ct_failed "b c9"
ct_check "... c8 never reached b" "$(applied c8)" 0
conf_a ""
kill -HUP "$(ct_pid nodea)"
ct_wait_until 30 reloads 5 || ct_failed "a reloads with the default queue"

# ---- a stops with a purge waiting for b (cut off again): its queue, timer
# and connection are freed (an ASan build's exit status says so).
ct_stop relay KILL
apurge "/gen?size=100&$MA&k=c7" >/dev/null
ct_wait_until 30 metric_ge a fleet_fanout_retries "$(($(metric a fleet_fanout_retries) + 1))" ||
    ct_failed "c7 retried before the stop"
ct_check "one waits at the stop" "$(metric a fleet_fanout_waiting)" 1
for n in a b; do
    ct_stop "node$n" && ct_pass "node $n exits 0" || ct_failed "node $n exits 0"
done
ct_done
