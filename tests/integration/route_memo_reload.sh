#!/usr/bin/env bash
# A connection remembers which site its Host names (the site memo,
# route_step.c), so a keep-alive client that sends the same Host pays one
# compare. Across a reload the same Host can name another site at another
# index: the memo must not outlive the route table it was taken from. One
# HTTP/1.1 connection and one h2c connection each send a request before a
# reload that swaps the sites' order and moves the host to another group,
# and one after it, on the same connection.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

for o in a b; do
    ct_start "o$o" "$CT_BIN/cachet-origin" --port 0 --workers 1
done
A=$(ct_wait_listen oa) || exit 1
B=$(ct_wait_listen ob) || exit 1
CONF="$CT_TMP/cachet.conf"
ELOG="$CT_TMP/error.log"
write_conf() { # write_conf 1|2: one.test is site 0 on group aa, then site 1 on bee
    local one two
    if [ "$1" = 1 ]; then
        one='{ name = "one"; hosts = [ "one.test" ]; backend_group = "aa"; }'
        two='{ name = "two"; hosts = [ "two.test" ]; backend_group = "bee"; }'
        sites="$one, $two"
    else
        one='{ name = "one"; hosts = [ "one.test" ]; backend_group = "bee"; }'
        two='{ name = "two"; hosts = [ "two.test" ]; backend_group = "aa"; }'
        sites="$two, $one"
    fi
    cat >"$CONF" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; h2c = true; } );
admin = { listen = "off"; };
logs = { level = "info"; error_log = "$ELOG"; };
backends = ( { address = "127.0.0.1:$A"; } );
backend_groups = ( { name = "aa"; backends = ( { address = "127.0.0.1:$A"; } ); },
                   { name = "bee"; backends = ( { address = "127.0.0.1:$B"; } ); } );
sites = ( $sites );
CONF
}
write_conf 1
ct_start_proxy -c "$CONF"

# The client: one request, "first STATUS", then waits for the file GO, then a
# second request on the same connection, "second STATUS". Over h2c the second
# goes out when the reload's GOAWAY notice (last stream 2^31-1) arrives: the
# server still takes new streams then (RFC 9113 §6.8).
cat >"$CT_TMP/client.py" <<'PYEOF'
import os, socket, sys, time
import h2.config, h2.connection, h2.events
port, proto, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=60)
def wait_go():
    end = time.time() + 120
    while not os.path.exists(go) and time.time() < end:
        time.sleep(0.01)
if proto == "h1":
    f = s.makefile("rb")
    def get(path):
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: one.test\r\n\r\n")
        status = f.readline().split()[1].decode()
        n = 0
        while True:
            line = f.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        f.read(n)
        return status
    print("first", get(b"/gen?size=10&cache-control=no-store&n=1"), flush=True)
    wait_go()
    print("second", get(b"/gen?size=10&cache-control=no-store&n=2"), flush=True)
    sys.exit(0)
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection()
s.sendall(c.data_to_send())
def req(path):
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, [(":method", "GET"), (":scheme", "http"),
                         (":authority", "one.test"), (":path", path)], end_stream=True)
    s.sendall(c.data_to_send())
    return sid
def pump(until):
    while True:
        data = s.recv(65536)
        if not data:
            return None
        for e in c.receive_data(data):
            r = until(e)
            if r is not None:
                s.sendall(c.data_to_send())
                return r
        s.sendall(c.data_to_send())
status = {}
def ended(sid):
    def f(e):
        if isinstance(e, h2.events.ResponseReceived):
            status[e.stream_id] = dict(e.headers)[b":status"].decode()
        if isinstance(e, h2.events.StreamEnded) and e.stream_id == sid:
            return status.get(sid, "none")
        if isinstance(e, h2.events.StreamReset) and e.stream_id == sid:
            return "reset"
    return f
sid = req("/gen?size=10&cache-control=no-store&n=3")
print("first", pump(ended(sid)), flush=True)
wait_go()
notice = pump(lambda e: e.last_stream_id if isinstance(e, h2.events.ConnectionTerminated) else None)
print("goaway", notice, flush=True)
# python-h2 treats any GOAWAY as the end; a notice is not (RFC 9113 §6.8)
c.state_machine.state = h2.connection.ConnectionState.CLIENT_OPEN
sid = req("/gen?size=10&cache-control=no-store&n=4")
print("second", pump(ended(sid)), flush=True)
PYEOF

hups=0
for proto in h1 h2c; do
    write_conf 1
    kill -HUP "$(ct_pid proxy)"
    hups=$((hups + 1))
    reloaded() { [ "$(grep -c 'in use by every worker' "$ELOG")" -ge "$hups" ]; }
    ct_wait_until 90 reloaded
    ct_origin_reset "$A"
    ct_origin_reset "$B"
    rm -f "$CT_TMP/go"
    /usr/bin/python3 "$CT_TMP/client.py" "$PPORT" "$proto" "$CT_TMP/go" >"$CT_TMP/$proto.out" 2>&1 &
    cl=$!
    first_done() { grep -q '^first' "$CT_TMP/$proto.out"; }
    ct_wait_until 60 first_done
    ct_check "$proto: before the reload, one.test is answered" "$(sed -n 's/^first //p' "$CT_TMP/$proto.out")" 200
    ct_check "$proto: before the reload, by aa's backend" "$(ct_origin_total "$A")/$(ct_origin_total "$B")" 1/0
    write_conf 2
    kill -HUP "$(ct_pid proxy)"
    hups=$((hups + 1))
    ct_wait_until 90 reloaded
    touch "$CT_TMP/go"
    wait $cl
    ct_check "$proto: after the reload, the same connection is answered" \
        "$(sed -n 's/^second //p' "$CT_TMP/$proto.out")" 200
    ct_check "$proto: after the reload, by bee's backend: the memo did not outlive its table" \
        "$(ct_origin_total "$A")/$(ct_origin_total "$B")" 1/1
done
ct_done
