#!/usr/bin/python3
"""bench/h2/idle_conns.py PORT N PATH [REQUESTS]: open N HTTP/2 connections
over TLS to 127.0.0.1:PORT, make one GET of PATH on each (read whole; with
REQUESTS 0 none: only the SETTINGS exchange), then hold them idle; prints
"ready N" and waits for stdin to close. For the idle connection memory
figure (bench/h2/run.sh --idle, bench/h2/livemem.sh)."""
import socket
import ssl
import sys

import h2.config
import h2.connection
import h2.events

port, n, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
req = int(sys.argv[4]) if len(sys.argv) > 4 else 1
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["h2"])
held = []
for _ in range(n):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                        server_hostname="localhost")
    c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    if req:
        c.send_headers(1, [(":method", "GET"), (":path", path), (":scheme", "https"),
                           (":authority", "127.0.0.1")], end_stream=True)
    s.sendall(c.data_to_send())
    done = False
    while not done:
        data = s.recv(65536)
        if not data:
            break
        for ev in c.receive_data(data):
            if isinstance(ev, h2.events.DataReceived):
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if req and isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                done = True
            if not req and isinstance(ev, h2.events.SettingsAcknowledged):
                done = True
        s.sendall(c.data_to_send())
    held.append((s, c))
print("ready %d" % len(held), flush=True)
sys.stdin.read()
