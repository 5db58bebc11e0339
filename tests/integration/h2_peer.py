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
import h2.exceptions
import h2.settings

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


def pump(s, c, until, deadline=DEADLINE, ack=True):
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
            if ack and isinstance(ev, h2.events.DataReceived):
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if until(ev):
                send(s, c)
                return seen
        send(s, c)
    print("timeout")
    return seen


def report(seen):
    for ev in seen:
        if isinstance(ev, h2.events.InformationalResponseReceived):
            hd = dict(ev.headers)
            print("interim %s stream=%d link=%s" % (hd.get(":status"), ev.stream_id,
                                                    hd.get("link", "-")))
        elif isinstance(ev, h2.events.ResponseReceived):
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
    data, _ = read_to_close(s)
    print_goaways(data)
    print("closed")


def read_to_close(s):
    """The raw bytes until the server closes; and whether it did (not the deadline)."""
    s.settimeout(DEADLINE)
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return data, True
            data += d
    except socket.timeout:
        return data, False
    except (ssl.SSLError, OSError):
        return data, True


def print_goaways(data):
    # Frames: 9-byte header (len 3, type 1, flags 1, stream 4), payload.
    i = 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        typ = data[i + 3]
        if typ == 7 and i + 9 + 8 <= len(data):
            code = int.from_bytes(data[i + 13:i + 17], "big")
            print("goaway %d" % code)
        i += 9 + n


def case_silent(port, wait_s):
    """TLS with ALPN h2, then nothing: closed (no GOAWAY) once WAIT_S seconds passed."""
    s = connect(port)
    t0 = time.time()
    data, closed = read_to_close(s)
    print_goaways(data)
    if not closed:
        print("timeout")
    else:
        print("closed" if time.time() - t0 >= float(wait_s) * 0.9 else "closed early")


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


def case_cl_mismatch(port, kind):
    """POST with content-length 10 and a body that says otherwise (KIND
    long: 20 bytes; short: 5 bytes then END_STREAM); then a good GET."""
    s = connect(port)
    c = conn_of(s, validate=False)
    c.send_headers(1, req_headers(port, "/echo", "POST", [("content-length", "10")]))
    c.send_data(1, b"x" * (20 if kind == "long" else 5), end_stream=True)
    s.sendall(c.data_to_send())
    report(pump(s, c, lambda ev: isinstance(ev, (h2.events.StreamReset, h2.events.StreamEnded))))
    c.send_headers(3, req_headers(port, "/json"), end_stream=True)
    s.sendall(c.data_to_send())
    report(pump(s, c, lambda ev: isinstance(ev, h2.events.StreamEnded) and ev.stream_id == 3))


def case_noread(port, big, small):
    """Stream 1 asks for BIG and is never read past the initial window (the
    client sends no WINDOW_UPDATE for it); stream 3 asks for SMALL and must
    complete. The connection window is opened wide so only stream 1's own
    window holds it."""
    s = connect(port)
    cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
    c = h2.connection.H2Connection(config=cfg)
    c.local_settings = h2.settings.Settings(client=True, initial_values={
        h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16384})
    c.initiate_connection()
    c.increment_flow_control_window(1 << 24)
    c.send_headers(1, req_headers(port, big), end_stream=True)
    s.sendall(c.data_to_send())
    got = {1: 0, 3: 0}
    ended = set()
    sent3 = False
    end = time.time() + DEADLINE
    while time.time() < end and 3 not in ended:
        if not sent3 and got[1] >= 16384:
            c.send_headers(3, req_headers(port, small), end_stream=True)
            sent3 = True
            send(s, c)
        s.settimeout(max(0.05, end - time.time()))
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        if not data:
            print("closed")
            break
        for ev in c.receive_data(data):
            if isinstance(ev, h2.events.DataReceived):
                got[ev.stream_id] = got.get(ev.stream_id, 0) + len(ev.data)
                if ev.stream_id == 3:  # stream 1 is never acknowledged
                    c.acknowledge_received_data(ev.flow_controlled_length, 3)
            elif isinstance(ev, h2.events.StreamEnded):
                ended.add(ev.stream_id)
        send(s, c)
    print("stream1 %d ended=%s" % (got[1], 1 in ended))
    print("stream3 %d ended=%s" % (got[3], 3 in ended))


def case_many(port, path, n):
    """N concurrent GETs on one connection; prints how many got each status."""
    s = connect(port)
    c = conn_of(s)
    n = int(n)
    sids = []
    for _ in range(n):
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, req_headers(port, path), end_stream=True)
        sids.append(sid)
    s.sendall(c.data_to_send())
    statuses = {}
    left = set(sids)
    body = {}
    def until(ev):
        if isinstance(ev, h2.events.ResponseReceived):
            st = dict(ev.headers).get(":status")
            statuses[st] = statuses.get(st, 0) + 1
        elif isinstance(ev, h2.events.DataReceived):
            body[ev.stream_id] = body.get(ev.stream_id, 0) + len(ev.data)
        elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
            left.discard(ev.stream_id)
        return not left
    pump(s, c, until)
    for st in sorted(statuses):
        print("status %s x%d" % (st, statuses[st]))
    print("bytes %d" % sum(body.values()))


def case_stall(port, path):
    """Ask for PATH and never open the stream's window past 16 KiB: the
    server's send timeout must reset the stream."""
    s = connect(port)
    cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
    c = h2.connection.H2Connection(config=cfg)
    c.local_settings = h2.settings.Settings(client=True, initial_values={
        h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16384})
    c.initiate_connection()
    c.send_headers(1, req_headers(port, path), end_stream=True)
    s.sendall(c.data_to_send())
    t0 = time.time()
    seen = pump(s, c, lambda ev: isinstance(ev, (h2.events.StreamReset, h2.events.StreamEnded)),
                deadline=30, ack=False)
    report([ev for ev in seen if isinstance(ev, (h2.events.StreamReset, h2.events.StreamEnded))])
    print("after %.0f s" % (time.time() - t0))


def raw_frame(ftype, flags, sid, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + sid.to_bytes(4, "big") + payload


def case_flood(port, kind):
    """A flood the server must end with GOAWAY ENHANCE_YOUR_CALM:
    empty: one POST stream, then DATA frames with no payload and no
    END_STREAM (CVE-2019-9518); continuation: a HEADERS frame without
    END_HEADERS, then empty CONTINUATION frames (the 2024 CONTINUATION
    flood); ping: PINGs while never reading the ACKs."""
    s = connect(port)
    c = conn_of(s)
    s.sendall(c.data_to_send())
    if kind == "empty":
        c.send_headers(1, req_headers(port, "/echo", "POST"), end_stream=False)
        s.sendall(c.data_to_send())
        frames = raw_frame(0x0, 0x0, 1) * 1000
    elif kind == "continuation":
        block = c.encoder.encode(req_headers(port, "/json"))
        frames = raw_frame(0x1, 0x0, 1, block) + raw_frame(0x9, 0x0, 1) * 10000
    else:
        frames = raw_frame(0x6, 0x0, 0, b"12345678") * 200000
    try:
        s.sendall(frames)
    except OSError:
        pass
    report([ev for ev in pump(s, c, is_goaway) if is_goaway(ev)])


def case_trim(port, *paths):
    """The idle trim in the middle of a connection: a GET of the first PATH,
    then "ready", then wait for a line on stdin (the test polls /metrics
    until the connection was trimmed); then every PATH at once, then every
    PATH again, on the same connection. Per response: "PATH STATUS LEN MD5"."""
    import hashlib
    s = connect(port)
    c = conn_of(s)

    def get_all(ps):
        sids = {}
        for p in ps:
            sid = c.get_next_available_stream_id()
            c.send_headers(sid, req_headers(port, p), end_stream=True)
            sids[sid] = p
        s.sendall(c.data_to_send())
        status, bodies, left = {}, {sid: b"" for sid in sids}, set(sids)

        def until(ev):
            if isinstance(ev, h2.events.ResponseReceived):
                status[ev.stream_id] = dict(ev.headers).get(":status")
            elif isinstance(ev, h2.events.DataReceived):
                bodies[ev.stream_id] += ev.data
            elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                left.discard(ev.stream_id)
            elif is_goaway(ev):
                return True
            return not left

        report([ev for ev in pump(s, c, until)
                if isinstance(ev, h2.events.StreamReset) or is_goaway(ev)])
        for sid in sorted(sids):
            print("%s %s %d %s" % (sids[sid], status.get(sid), len(bodies[sid]),
                                   hashlib.md5(bodies[sid]).hexdigest()))

    get_all(paths[:1])
    print("ready")
    sys.stdout.flush()
    sys.stdin.readline()
    get_all(paths)
    get_all(paths)


# ---- RFC 9113 cases in raw frames (h2_rfc.sh): python-h2's state machine
# will not send a frame on a stream it knows is closed, so these write the
# frames themselves and read the server's frames without interpreting them.

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x2, 0x3, 0x4, 0x6, 0x7
END_STREAM, END_HEADERS = 0x1, 0x4


class Raw:
    """One connection: the preface and an empty SETTINGS sent; frames read
    whole; our SETTINGS ACKed. ev(kind, sid, code) notes what came."""

    def __init__(self, port, plain=False):
        import hpack
        self.port = port
        if plain:
            self.s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
        else:
            self.s = connect(port)
        self.enc = hpack.Encoder()
        self.buf = b""
        self.closed = False
        self.s.sendall(PREFACE + raw_frame(SETTINGS, 0, 0))

    def send(self, *frames):
        try:
            self.s.sendall(b"".join(frames))
        except OSError:
            pass

    def headers(self, sid, path="/json", end=True, method="GET", extra=()):
        block = self.enc.encode(req_headers(self.port, path, method, extra))
        return raw_frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), sid, block)

    def frames(self, deadline):
        """Yield (type, flags, sid, payload) until the server closes (then
        self.closed) or DEADLINE seconds pass."""
        end = time.time() + deadline
        while True:
            while len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + n:
                    break
                typ, flags = self.buf[3], self.buf[4]
                sid = int.from_bytes(self.buf[5:9], "big") & 0x7fffffff
                payload = self.buf[9:9 + n]
                self.buf = self.buf[9 + n:]
                if typ == SETTINGS and not flags & 1:
                    self.send(raw_frame(SETTINGS, 1, 0))
                yield typ, flags, sid, payload
            if time.time() >= end:
                return
            self.s.settimeout(max(0.05, end - time.time()))
            try:
                d = self.s.recv(65536)
            except socket.timeout:
                return
            except (ssl.SSLError, OSError):
                d = b""
            if not d:
                self.closed = True
                return
            self.buf += d

    def until(self, want, deadline=10.0):
        """Read until WANT(type, flags, sid) holds; print what ended the wait:
        "rst SID CODE", "goaway CODE", "end SID", or "timeout"/"closed"."""
        for typ, flags, sid, pl in self.frames(deadline):
            if typ == RST_STREAM:
                line = "rst %d %d" % (sid, int.from_bytes(pl[:4], "big"))
            elif typ == GOAWAY:
                line = "goaway %d" % int.from_bytes(pl[4:8], "big")
            elif typ in (HEADERS, DATA) and flags & END_STREAM:
                line = "end %d" % sid
            else:
                continue
            if want(typ, flags, sid):
                print(line)
                return True
        print("closed" if self.closed else "timeout")
        return False

    def close_after_goaway(self, deadline=10.0):
        """After a GOAWAY: "closed" if the server's FIN (EOF) follows at
        once: it leaves with the GOAWAY, so a second is a wide margin; a
        server that lingers with the connection open (cachet's is 2 s)
        shows as "closed after N s"."""
        t0 = time.time()
        for _ in self.frames(deadline):
            pass
        dt = time.time() - t0
        if not self.closed:
            print("still open after %.1f s" % dt)
        else:
            print("closed" if dt < 1.0 else "closed after %.1f s" % dt)


def err_frame(typ, flags, sid):
    return typ in (RST_STREAM, GOAWAY)


def case_rfc(port, kind, plain="tls"):
    """One RFC 9113 case (docs/h2.md's table); prints what the server said."""
    r = Raw(int(port), plain == "h2c")
    if kind in ("data_after_rst", "headers_after_rst"):
        # §5.1 closed: a frame other than PRIORITY after the client's
        # RST_STREAM is a stream error STREAM_CLOSED.
        first = r.headers(1, "/echo", end=False, method="POST")  # HPACK: in wire order
        late = (raw_frame(DATA, END_STREAM, 1, b"test") if kind == "data_after_rst"
                else r.headers(1))
        r.send(first, raw_frame(RST_STREAM, 0, 1, (8).to_bytes(4, "big")), late)
        if r.until(err_frame):
            r.send(r.headers(3))  # the connection serves on (a stream error)
            r.until(lambda t, f, sid: sid == 3 and t in (HEADERS, DATA) and f & END_STREAM
                    or t == GOAWAY)
    elif kind in ("data_closed", "headers_closed"):
        # §5.1 closed: after END_STREAM both ways, a connection error STREAM_CLOSED.
        r.send(r.headers(1))
        r.until(lambda t, f, sid: sid == 1 and f & END_STREAM)
        late = (raw_frame(DATA, END_STREAM, 1, b"test") if kind == "data_closed"
                else r.headers(1))
        r.send(late)
        if r.until(err_frame):
            r.close_after_goaway()
    elif kind == "lower_id":
        # §5.1.1: a new stream's id must be greater than every one opened.
        r.send(r.headers(5), r.headers(3))
        r.until(lambda t, f, sid: t == GOAWAY or t == RST_STREAM and sid == 3)
    elif kind == "priority_self_idle":
        # §5.3.1: a stream cannot depend on itself (on an idle stream, no
        # RST_STREAM may be sent: the connection error).
        r.send(raw_frame(PRIORITY, 0, 1, (1).to_bytes(4, "big") + b"\xff"))
        r.until(err_frame)
    elif kind == "priority_self_open":
        r.send(r.headers(1, "/echo", end=False, method="POST"),
               raw_frame(PRIORITY, 0, 1, (1).to_bytes(4, "big") + b"\xff"))
        if r.until(err_frame):
            r.send(r.headers(3))
            r.until(lambda t, f, sid: sid == 3 and t in (HEADERS, DATA) and f & END_STREAM
                    or t == GOAWAY)
    elif kind == "priority_zero":
        # §6.3: PRIORITY on stream 0 is a connection error PROTOCOL_ERROR.
        r.send(raw_frame(PRIORITY, 0, 0, (1).to_bytes(4, "big") + b"\x10"))
        r.until(err_frame)
    elif kind in ("ping_stream", "ping_length"):
        # §5.4.1: after the GOAWAY of a connection error, close the connection.
        bad = (raw_frame(PING, 0, 3, b"\0" * 8) if kind == "ping_stream"
               else raw_frame(PING, 0, 0, b"\0" * 6))
        r.send(bad)
        if r.until(lambda t, f, sid: t == GOAWAY):
            r.close_after_goaway()


def case_upload(port, path, cl, n, extra="0", plain="tls"):
    """A POST of N bytes with content-length CL ("-": none), sent as the
    windows allow; then, if EXTRA > 0, EXTRA bytes more in a DATA frame of
    their own (past a length already complete); END_STREAM on the last
    frame. Prints "status S" or "reset CODE" (h2_body.sh)."""
    if plain == "h2c":
        s = socket.create_connection(("127.0.0.1", int(port)), timeout=DEADLINE)
    else:
        s = connect(int(port))
    c = conn_of(s, validate=False)
    extra_h = [] if cl == "-" else [("content-length", cl)]
    c.send_headers(1, req_headers(int(port), path, "POST", extra_h))
    s.sendall(c.data_to_send())
    chunks = [int(n)] + ([int(extra)] if int(extra) > 0 else [])
    outcome = []

    def note(ev):
        if isinstance(ev, h2.events.ResponseReceived):
            outcome.append("status %s" % dict(ev.headers).get(":status"))
        elif isinstance(ev, h2.events.StreamReset):
            outcome.append("reset %d" % ev.error_code)
        elif is_goaway(ev):
            outcome.append("goaway %d" % ev.error_code)
        return bool(outcome)

    ended = False
    try:
        for i, left in enumerate(chunks):
            last = i == len(chunks) - 1
            while left > 0 and not outcome:
                room = min(c.local_flow_control_window(1), c.max_outbound_frame_size, left)
                if room <= 0:
                    pump(s, c, lambda ev: isinstance(ev, h2.events.WindowUpdated) or note(ev),
                         deadline=10)
                    continue
                left -= room
                ended = last and left == 0
                c.send_data(1, b"u" * room, end_stream=ended)
                s.sendall(c.data_to_send())
            if outcome:
                break
        if not ended and not outcome:
            c.end_stream(1)
            s.sendall(c.data_to_send())
    except (h2.exceptions.StreamClosedError, OSError, ssl.SSLError):
        pass
    if not outcome:
        pump(s, c, note)
    print(outcome[0] if outcome else "nothing")


CASES = {"preface": case_preface, "flood": case_flood, "get": case_get, "hold": case_hold,
         "malformed": case_malformed, "rapid_reset": case_rapid_reset,
         "cl_mismatch": case_cl_mismatch, "noread": case_noread, "many": case_many,
         "stall": case_stall, "trim": case_trim, "silent": case_silent,
         "rfc": case_rfc, "upload": case_upload}

if __name__ == "__main__":
    port = int(sys.argv[1])
    CASES[sys.argv[2]](port, *sys.argv[3:])
    sys.stdout.flush()
