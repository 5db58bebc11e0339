#!/usr/bin/python3
"""An HTTP/1.1 origin that records what it received (h2_body.sh), one line
per request in LOG, written when the request's body is complete or when the
connection ends before it:

    PATH head                its head came (first)
    PATH complete N          the whole body (Content-Length or chunked) came
    PATH incomplete N of CL  the connection ended after N of CL body bytes
                             (CL "chunked": no last chunk)

Every complete request is answered 200 "ok", keep-alive. Prints
"listening on 127.0.0.1:PORT" once it listens.

    body_origin.py LOG
"""
import socket
import sys
import threading

LOG = open(sys.argv[1], "a", buffering=1)
LOCK = threading.Lock()


def log(line):
    with LOCK:
        LOG.write(line + "\n")


class Conn:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d


def serve(s):
    c = Conn(s)
    try:
        while True:
            head = c.line()
            if not head:
                continue
            path = head.split(b" ")[1].decode()
            hdrs = {}
            while True:
                ln = c.line()
                if not ln:
                    break
                k, _, v = ln.partition(b":")
                hdrs[k.strip().lower()] = v.strip()
            log("%s head" % path)
            got = 0
            if b"content-length" in hdrs:
                cl = int(hdrs[b"content-length"])
                try:
                    while got < cl:
                        if not c.buf:
                            c.fill()
                        n = min(cl - got, len(c.buf))
                        c.buf = c.buf[n:]
                        got += n
                except EOFError:
                    log("%s incomplete %d of %d" % (path, got, cl))
                    raise
            elif hdrs.get(b"transfer-encoding", b"").lower() == b"chunked":
                try:
                    while True:
                        size = int(c.line().split(b";")[0], 16)
                        if size == 0:
                            while c.line():
                                pass
                            break
                        c.take(size)
                        got += size
                        c.take(2)
                except EOFError:
                    log("%s incomplete %d of chunked" % (path, got))
                    raise
            log("%s complete %d" % (path, got))
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    except (EOFError, OSError):
        pass
    finally:
        s.close()


def main():
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    print("listening on 127.0.0.1:%d" % ls.getsockname()[1], flush=True)
    while True:
        s, _ = ls.accept()
        threading.Thread(target=serve, args=(s,), daemon=True).start()


main()
