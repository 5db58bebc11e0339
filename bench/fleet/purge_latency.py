#!/usr/bin/env python3
"""bench/fleet/purge_latency.py: how long a purge issued on one node of a
fleet takes to be applied on the others through Redis (issue 17).

    /usr/bin/python3 bench/fleet/purge_latency.py BINDIR [N]

Starts a standalone redis-server, cachet-origin and three cachet nodes on
loopback (free ports), sends N (default 1000) admin purges to node a, one
after the other over one keep-alive connection, waits until nodes b and c
applied all N, and reads the latency of each from the nodes' own log lines
(millisecond timestamps on one clock: a's "admin: purge" line to b's and c's
"fleet: purge from another node" line). Prints the median, p99 and max.
"""
import http.client, os, re, shutil, socket, subprocess, sys, tempfile, time, urllib.parse

bindir = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
tmp = tempfile.mkdtemp(prefix="ct-fleet-bench.")
procs = []


def ports(k):
    s = [socket.socket() for _ in range(k)]
    for x in s:
        x.bind(("127.0.0.1", 0))
    p = [x.getsockname()[1] for x in s]
    for x in s:
        x.close()
    return p


def start(name, argv):
    out = open(os.path.join(tmp, name + ".err"), "w")
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=out)
    procs.append(p)
    return p


def wait(cond, secs=30):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def metric(port, name):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/metrics")
        for line in c.getresponse().read().decode().splitlines():
            f = line.split()
            if len(f) == 2 and f[0] in ("cachet_" + name, "cachet_" + name + "_total"):
                return int(float(f[1]))
    except OSError:
        pass
    return 0


try:
    rp, op, pa, pb, pc, aa, ab, ac = ports(8)
    start("redis", ["redis-server", "--port", str(rp), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no"])
    start("origin", [os.path.join(bindir, "cachet-origin"), "--port", str(op), "--workers", "1"])
    port = {"a": pa, "b": pb, "c": pc}
    admin = {"a": aa, "b": ab, "c": ac}
    for m in "abc":
        conf = os.path.join(tmp, m + ".conf")
        with open(conf, "w") as f:
            f.write(f"""workers = 1;
listen = ( {{ kind = "http"; address = "127.0.0.1:{port[m]}"; }} );
backends = ( {{ address = "127.0.0.1:{op}"; }} );
cache = {{ size = "16M"; }};
admin = {{ listen = "127.0.0.1:{admin[m]}"; }};
fleet = {{ self = "{m}"; redis = "127.0.0.1:{rp}";
  members = ( {{ name = "a"; address = "127.0.0.1:{pa}"; }},
              {{ name = "b"; address = "127.0.0.1:{pb}"; }},
              {{ name = "c"; address = "127.0.0.1:{pc}"; }} ); }};
""")
        start("node" + m, [os.path.join(bindir, "cachet"), "-c", conf])
    for m in "abc":
        if not wait(lambda: metric(admin[m], "fleet_redis_up") == 1):
            sys.exit(f"node {m}: no Redis link")
    c = http.client.HTTPConnection("127.0.0.1", aa, timeout=10)
    for i in range(n):
        u = urllib.parse.quote(f"http://fleet.test/gen?bench={i}", safe="")
        c.request("POST", f"/purge?url={u}")
        c.getresponse().read()
    for m in "bc":
        if not wait(lambda: metric(admin[m], "fleet_purges_applied") >= n, 120):
            sys.exit(f"node {m}: applied {metric(admin[m], 'fleet_purges_applied')} of {n}")
    ts = re.compile(r"^(\S+)Z .*bench(?:=|%3D)(\d+)")

    def stamps(name, what):
        out = {}
        for line in open(os.path.join(tmp, name + ".err")):
            if what in line:
                mm = ts.match(line)
                if mm:
                    t = time.strptime(mm.group(1)[:19], "%Y-%m-%dT%H:%M:%S")
                    ms = time.mktime(t) * 1000 + int(mm.group(1)[20:23])
                    out[int(mm.group(2))] = ms
        return out

    sent = stamps("nodea", "admin: purge")
    lat = []
    for m in "bc":
        got = stamps("node" + m, "fleet: purge from another node")
        lat += [got[i] - sent[i] for i in sent if i in got]
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
    print(f"{n} purges on a, applied on b and c ({len(lat)} samples, 1 ms log resolution): "
          f"median {q(0.5):.0f} ms, p99 {q(0.99):.0f} ms, max {lat[-1]:.0f} ms")
finally:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
