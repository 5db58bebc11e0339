#!/usr/bin/python3
"""A scripted HTTP/2 client for the h2_* integration tests (Debian's
python3-h2): the protocol cases curl and nghttp will not produce.

    h2_peer.py PORT CASE [ARGS...]

prints one line per observation ("status 200", "reset 1", "goaway 0 last=1")
and exits 0 unless the connection could not be made. Every read has a
generous deadline (DEADLINE seconds) so a hang shows as "timeout", never as a
stuck test.
"""
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events

DEADLINE = 20.0


def connect(port, alpn=("h2",)):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(list(alpn))
    raw = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    s = ctx.wrap_socket(raw, server_hostname="localhost")
    return s


def conn_of(s, validate=True):
    cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                    validate_outbound_headers=validate,
                                    normalize_outbound_headers=validate)
    c = h2.connection.H2Connection(config=cfg)
    c.initiate_connection()
    s.sendall(c.data_to_send())
    return c


def req_headers(port, path, method="GET", extra=()):
    return [(":method", method), (":path", path), (":scheme", "https"),
            (":authority", "127.0.0.1:%d" % port)] + list(extra)


def send(s, c):
    """What the client owes (ACKs, WINDOW_UPDATEs); the server may be gone."""
    out = c.data_to_send()
    try:
        if out:
            s.sendall(out)
    except (ssl.SSLError, OSError):
        pass


def pump(s, c, until, deadline=DEADLINE):
    """Read events until UNTIL(event) is true for one; returns the events
    seen, or prints "timeout"/"closed" and returns what was seen."""
    seen = []
    end = time.time() + deadline
    while time.time() < end:
        s.settimeout(max(0.05, end - time.time()))
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        except (ssl.SSLError, ConnectionError, OSError):
            data = b""
        if not data:
            print("closed")
            return seen
        for ev in c.receive_data(data):
            seen.append(ev)
            if isinstance(ev, h2.events.DataReceived):
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if until(ev):
                send(s, c)
                return seen
        send(s, c)
    print("timeout")
    return seen


def report(seen):
    for ev in seen:
        if isinstance(ev, h2.events.ResponseReceived):
            st = dict(ev.headers).get(":status")
            print("status %s stream=%d" % (st, ev.stream_id))
        elif isinstance(ev, h2.events.StreamReset):
            print("reset %d stream=%d" % (ev.error_code, ev.stream_id))
        elif isinstance(ev, h2.events.ConnectionTerminated):
            print("goaway %d last=%d" % (ev.error_code, ev.last_stream_id))
        elif isinstance(ev, h2.events.StreamEnded):
            print("ended stream=%d" % ev.stream_id)


def is_goaway(ev):
    return isinstance(ev, h2.events.ConnectionTerminated)


def case_preface(port):
    """TLS with ALPN h2, then HTTP/1.1 bytes instead of the preface."""
    s = connect(port)
    s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    s.settimeout(DEADLINE)
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except (socket.timeout, ssl.SSLError, OSError):
        pass
    # Frames: 9-byte header (len 3, type 1, flags 1, stream 4), payload.
    i = 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        typ = data[i + 3]
        if typ == 7 and i + 9 + 8 <= len(data):
            code = int.from_bytes(data[i + 13:i + 17], "big")
            print("goaway %d" % code)
        i += 9 + n
    print("closed")


def case_get(port, path="/json", n="1"):
    """N GETs on one connection, one after the other."""
    s = connect(port)
    c = conn_of(s)
    for _ in range(int(n)):
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, req_headers(port, path), end_stream=True)
        s.sendall(c.data_to_send())
        report(pump(s, c, lambda ev, sid=sid: isinstance(ev, h2.events.StreamEnded)
                    and ev.stream_id == sid or isinstance(ev, h2.events.StreamReset)))


def case_hold(port, path="/json"):
    """One GET, then keep the connection open, reading, until GOAWAY or
    close (a drain or the idle timeout); a second request after GOAWAY is
    not answered."""
    s = connect(port)
    c = conn_of(s)
    c.send_headers(1, req_headers(port, path), end_stream=True)
    s.sendall(c.data_to_send())
    report(pump(s, c, lambda ev: isinstance(ev, h2.events.StreamEnded)))
    print("ready")
    sys.stdout.flush()
    report(pump(s, c, is_goaway, deadline=60))
    seen = pump(s, c, lambda ev: False, deadline=2)
    report(seen)


def case_malformed(port, kind):
    """One malformed request, then a good one on the same connection."""
    s = connect(port)
    c = conn_of(s, validate=False)
    extra = {
        "upper": [("X-Upper", "1")],
        "connection": [("connection", "keep-alive")],
        "te": [("te", "gzip")],
    }[kind]
    c.send_headers(1, req_headers(port, "/json") + extra, end_stream=True)
    s.sendall(c.data_to_send())
    report(pump(s, c, lambda ev: isinstance(ev, (h2.events.StreamReset, h2.events.StreamEnded))))
    c.send_headers(3, req_headers(port, "/json"), end_stream=True)
    s.sendall(c.data_to_send())
    report(pump(s, c, lambda ev: isinstance(ev, h2.events.StreamEnded) and ev.stream_id == 3))


def case_rapid_reset(port, n="1000"):
    """Open and cancel N streams as fast as possible."""
    s = connect(port)
    c = conn_of(s)
    for i in range(int(n)):
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, req_headers(port, "/json?rr=%d" % i), end_stream=True)
        c.reset_stream(sid)
        if i % 50 == 49:
            try:
                s.sendall(c.data_to_send())
            except OSError:
                break
    try:
        s.sendall(c.data_to_send())
    except OSError:
        pass
    report([ev for ev in pump(s, c, is_goaway) if is_goaway(ev)])


CASES = {"preface": case_preface, "get": case_get, "hold": case_hold,
         "malformed": case_malformed, "rapid_reset": case_rapid_reset}

if __name__ == "__main__":
    port = int(sys.argv[1])
    CASES[sys.argv[2]](port, *sys.argv[3:])
    sys.stdout.flush()
