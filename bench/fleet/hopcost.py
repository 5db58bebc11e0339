#!/usr/bin/env python3
"""bench/fleet/hopcost.py: what a hit costs on the key's owner and on a node
that is not its owner (issue 17), counted (callgrind) and timed.

    /usr/bin/python3 bench/fleet/hopcost.py BINDIR [N]

Two cachet nodes (one worker each, access log off) and cachet-origin on
loopback, a 1 KiB object owned by node a, one keep-alive client making N
(default 2000) requests after a warm-up of 50. Cells:

  owner-hit   the client asks a (the owner): a plain hit
  edge-copy   the client asks b, which keeps a copy (fleet.mirror_ttl 1h):
              a hit on b, a not involved
  edge-hop    the client asks b with fleet.mirror_ttl 0 (no copy): each
              request is one hop b -> a (a's hit), over b's keep-alive pool

Instructions per request: the measured node runs under valgrind
--tool=callgrind, counters zeroed after the warm-up and dumped after the N
(callgrind_control), so start-up is not counted; user-space instructions
repeat for the same binary whatever the machine does. For edge-hop both
nodes are counted (two runs). Latency: the same cells without valgrind,
median and p99 of the N client round trips (wall clock: depends on the
machine's load, which is printed).
"""
import glob, http.client, os, shutil, socket, statistics, subprocess, sys, tempfile, time

bindir = os.path.abspath(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
tmp = tempfile.mkdtemp(prefix="ct-hopcost.")
procs = []
H = {"Host": "fleet.test"}


def ports(k):
    s = [socket.socket() for _ in range(k)]
    for x in s:
        x.bind(("127.0.0.1", 0))
    p = [x.getsockname()[1] for x in s]
    for x in s:
        x.close()
    return p


def start(name, argv, cwd=None):
    out = open(os.path.join(tmp, name + ".err"), "w")
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=out, cwd=cwd)
    procs.append(p)
    return p


def wait(cond, secs=60):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def up(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def metric(port, name):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/metrics")
        for line in c.getresponse().read().decode().splitlines():
            f = line.split()
            if len(f) == 2 and f[0] in ("cachet_" + name, "cachet_" + name + "_total"):
                return int(float(f[1]))
    except OSError:
        pass
    return 0


def stop(p):
    p.terminate()
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


op = ports(1)[0]
start("origin", [os.path.join(bindir, "cachet-origin"), "--port", str(op), "--workers", "1"])
wait(lambda: up(op))


def run(mirror_b, grind, client_node):
    """Start a and b (GRIND: the node under callgrind, or None), find a
    key owned by a, and make N requests on CLIENT_NODE. Returns (Ir per
    request of GRIND or None, sorted latencies in µs)."""
    pa, pb, aa, ab = ports(4)
    port = {"a": pa, "b": pb}
    admin = {"a": aa, "b": ab}
    nodes = {}
    d = tempfile.mkdtemp(dir=tmp)
    for m in "ab":
        conf = os.path.join(d, m + ".conf")
        with open(conf, "w") as f:
            f.write(f"""workers = 1;
listen = ( {{ kind = "http"; address = "127.0.0.1:{port[m]}"; }} );
backends = ( {{ address = "127.0.0.1:{op}"; }} );
cache = {{ size = "16M"; }};
admin = {{ listen = "127.0.0.1:{admin[m]}"; }};
logs = {{ access_log = "off"; }};
fleet = {{ self = "{m}"; mirror_ttl = "{mirror_b if m == 'b' else '1h'}";
  members = ( {{ name = "a"; address = "127.0.0.1:{pa}"; }},
              {{ name = "b"; address = "127.0.0.1:{pb}"; }} ); }};
""")
        argv = [os.path.join(bindir, "cachet"), "-c", conf]
        if grind == m:
            argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg.%p"] + argv
        nodes[m] = start(f"node{m}-{os.path.basename(d)}", argv, cwd=d)
    for m in "ab":
        if not wait(lambda: up(admin[m]) and up(port[m]), 120):
            sys.exit(f"node {m} did not start")
    # a key whose owner is a: b forwards it (a counts a hop request)
    path = None
    for i in range(64):
        p = f"/1k?cache-control=max-age%3D3600&k={i}"
        h0 = metric(aa, "fleet_hop_requests")
        c = http.client.HTTPConnection("127.0.0.1", pb, timeout=60)
        c.request("GET", p, headers=H)
        c.getresponse().read()
        if metric(aa, "fleet_hop_requests") > h0:
            path = p
            break
    if path is None:
        sys.exit("no key of 64 is a's")
    c = http.client.HTTPConnection("127.0.0.1", port[client_node], timeout=600)

    def get():
        c.request("GET", path, headers=H)
        r = c.getresponse()
        body = r.read()
        assert r.status == 200 and len(body) == 1024, (r.status, len(body))

    for _ in range(50):
        get()
    if grind:
        subprocess.run(["callgrind_control", "-z", str(nodes[grind].pid)], check=True,
                       capture_output=True, cwd=d)
    lat = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        get()
        lat.append((time.perf_counter_ns() - t0) / 1000)
    ir = None
    if grind:
        subprocess.run(["callgrind_control", "-d", str(nodes[grind].pid)], check=True,
                       capture_output=True, cwd=d)
        total = 0
        for f in glob.glob(f"{d}/cg.*.[0-9]*"):
            for line in open(f):
                if line.startswith("summary:"):
                    total += int(line.split()[1])
        ir = total / n
    for m in "ab":
        stop(nodes[m])
    lat.sort()
    return ir, lat


try:
    load = open("/proc/loadavg").read().split()[:3]
    print(f"hopcost: N={n}, 1 KiB hit, load average {' '.join(load)}, {os.cpu_count()} CPUs")
    cells = [("owner-hit", "1h", "a"), ("edge-copy", "1h", "b"), ("edge-hop", "0s", "b")]
    for name, mirror, cn in cells:
        _, lat = run(mirror, None, cn)
        q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
        irs = []
        for g in ("a", "b") if name == "edge-hop" else (cn,):
            ir, _ = run(mirror, g, cn)
            irs.append(f"Ir_per_req_{g}={ir:.0f}")
        print(f"cell={name} {' '.join(irs)} median_us={statistics.median(lat):.0f} "
              f"p99_us={q(0.99):.0f}")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
