#!/usr/bin/env python3
"""tests/soak/check.py: the soak's checker (issue 19). Until STOPFILE exists,
asks cachet (HTTP and HTTPS, keep-alive, reconnecting after errors) for the
soak's kinds of answers and verifies each byte for byte against the origin's
pattern. Prints one JSON line at the end: counts of ok, allowed failures
(502/503/504 while the origin is down, the cut-off kind's short body), cut
(another kind's connection ended early: the origin was killed mid-body),
wrong (a body or status that must not happen) and hung (no answer in 20 s).

  check.py HTTP_PORT HTTPS_PORT STOPFILE"""
import http.client, json, os, random, ssl, sys, time

PAT = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n"
def body(n): return (PAT * (n // len(PAT) + 1))[:n]

KINDS = [  # (path, expected status, expected body length or None, may be cut)
    ("/gen?hot=%d&size=700&cache-control=max-age%%3D20", 200, 700, False),
    ("/gen?cmiss=%d&size=2000&cache-control=max-age%%3D5", 200, 2000, False),
    ("/gen?size=1500&cache-control=no-store&n=%d", 200, 1500, False),
    ("/gen?big=%d&size=102400&cache-control=max-age%%3D30", 200, 102400, False),
    ("/gen?status=404&cache-control=max-age%%3D10&k=%d", 404, None, False),
    ("/gen?chunked=1&size=30000&cache-control=max-age%%3D15&k=%d", 200, 30000, False),
    ("/gen?trickle=20&trickle-size=512&size=4096&cache-control=no-store&k=%d", 200, 4096, False),
    ("/gen?close=mid&size=20000&cache-control=max-age%%3D30&k=%d", 200, 20000, True),
]

def main():
    hport, sport, stop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    counts = {"ok": 0, "allowed": 0, "cut": 0, "wrong": 0, "hung": 0}
    wrong = []
    conns = {}
    def conn(tls):
        if tls not in conns:
            conns[tls] = (http.client.HTTPSConnection("127.0.0.1", sport, timeout=20, context=ctx)
                          if tls else http.client.HTTPConnection("127.0.0.1", hport, timeout=20))
        return conns[tls]
    i = 0
    while not os.path.exists(stop):
        i += 1
        path, status, blen, cut = random.choice(KINDS)
        path = path % random.randint(0, 99) if "cmiss" not in path else path % i
        tls = i % 3 == 0
        c = conn(tls)
        t0 = time.monotonic()
        try:
            c.request("GET", path)
            r = c.getresponse()
            data = r.read()
            if r.getheader("Connection", "").lower() == "close":
                c.close(); conns.pop(tls, None)
        except (TimeoutError, ssl.SSLError, OSError, http.client.HTTPException) as e:
            c.close(); conns.pop(tls, None)
            if time.monotonic() - t0 >= 19:
                counts["hung"] += 1; wrong.append(("hung", path, str(e)))
            elif cut:
                counts["allowed"] += 1  # the cut-off kind: a short body, then close
            else:
                counts["cut"] += 1  # the origin was killed mid-body (or a bug: see the count)
            continue
        if r.status in (502, 503, 504) and not (blen is None and r.status == status):
            counts["allowed"] += 1
        elif r.status != status:
            counts["wrong"] += 1; wrong.append(("status", path, r.status))
        elif blen is not None and data != body(blen):
            if cut and len(data) < blen and data == body(len(data)):
                counts["allowed"] += 1
            else:
                counts["wrong"] += 1; wrong.append(("body", path, len(data)))
        else:
            counts["ok"] += 1
    counts["examples"] = wrong[:5]
    print(json.dumps(counts))

main()
