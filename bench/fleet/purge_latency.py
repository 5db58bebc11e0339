#!/usr/bin/env python3
"""bench/fleet/purge_latency.py: how long a purge issued on one node of a
fleet takes to be applied on the others through Redis (issue 17).

    /usr/bin/python3 bench/fleet/purge_latency.py BINDIR [N] [--cluster] [--kind url|tag|mixed]

Starts Redis, cachet-origin and three cachet nodes on loopback, sends N
(default 1000) admin purges to node a, one after the other over one
keep-alive connection, waits until nodes b and c applied all N, and reads
the latency of each from the nodes' own log lines (millisecond timestamps on
one clock: a's "admin: purge" line to b's and c's "fleet: purge from another
node" line). Prints the median, p99 and max on each receiving node and on
both together.

Redis is a standalone redis-server, or with --cluster a Redis Cluster of
three masters (no replicas) made with `redis-cli --cluster create`, each
cachet node given a different cluster node as fleet.redis (as
tests/integration/fleet_cluster.sh does), so two of them are redirected
(MOVED) to the master of the fleet's slot.

--kind url (the default): POST /purge?url=http://fleet.test/gen?bench=I;
tag: POST /purge?tag=bench-I; mixed: the two alternated (even I by URL, odd
I by tag). a's line for a purge by tag does not name the tag, so a's lines
are matched to the purges by their order (the purges are sent one after the
other, each answered before the next); a's lines for purges by URL are
checked against their bench=I.

Ports are chosen at random below the kernel's ephemeral range and reserved
in $TMPDIR/ct-ports as tests/integration/lib.sh's ct_free_ports does (a test
suite running beside will not choose them). Every process started is killed
at exit, also on an error or SIGTERM.
"""
import argparse, calendar, http.client, os, random, re, shutil, signal, socket, subprocess
import sys, tempfile, time, urllib.parse

ap = argparse.ArgumentParser(description="purge fan-out latency of a 3-node fleet")
ap.add_argument("bindir")
ap.add_argument("n", nargs="?", type=int, default=1000)
ap.add_argument("--cluster", action="store_true", help="a 3-master Redis Cluster")
ap.add_argument("--kind", choices=("url", "tag", "mixed"), default="url")
args = ap.parse_args()
bindir, n = args.bindir, args.n
tmp = tempfile.mkdtemp(prefix="ct-fleet-bench.")
procs = []
resdir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "ct-ports")
reserved = []


def reserve(p):
    # ct_free_ports's protocol: a file named by the port holding the owner's
    # PID, made by link(2); one whose owner is gone is taken over
    path, mine = os.path.join(resdir, str(p)), os.path.join(resdir, "new.%d" % os.getpid())
    with open(mine, "w") as f:
        f.write(str(os.getpid()))
    try:
        for _ in range(2):
            try:
                os.link(mine, path)
                reserved.append(path)
                return True
            except FileExistsError:
                pass
            try:
                os.kill(int(open(path).read()), 0)
                return False
            except PermissionError:
                return False
            except (ProcessLookupError, ValueError, FileNotFoundError):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        return False
    finally:
        os.unlink(mine)


def ports(k):
    # not bind(0): a port the kernel hands out for that it may also give to
    # an outgoing connection before our server binds it
    os.makedirs(resdir, exist_ok=True)
    lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    got = []
    while len(got) < k:
        p = random.randint(10000, lo - 1)
        if p in got:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                continue
        if reserve(p):
            got.append(p)
    return got


def start(name, argv, cwd=None):
    out = open(os.path.join(tmp, name + ".err"), "w")
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=out, cwd=cwd)
    out.close()
    procs.append(p)
    return p


def wait(cond, secs=30, step=0.01):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(step)
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


def redis_cli(port, *cmd):
    r = subprocess.run(["redis-cli", "-p", str(port)] + list(cmd), capture_output=True,
                       text=True, timeout=30)
    return r.stdout


def start_cluster(rports, bus):
    for p, b in zip(rports, bus):
        d = os.path.join(tmp, "r%d" % p)
        os.mkdir(d)
        # the bus port given: the default (port + 10000) may be taken or past 65535
        start("redis%d" % p, ["redis-server", "--port", str(p), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--cluster-enabled", "yes",
                              "--cluster-port", str(b), "--cluster-config-file", "nodes.conf",
                              "--cluster-node-timeout", "5000"], cwd=d)
    for p in rports:
        if not wait(lambda: "PONG" in redis_cli(p, "ping")):
            sys.exit(f"redis {p}: no PONG")
    r = subprocess.run(["redis-cli", "--cluster", "create"] + ["127.0.0.1:%d" % p for p in rports]
                       + ["--cluster-replicas", "0", "--cluster-yes"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        sys.exit("cluster create failed:\n" + r.stdout + r.stderr)
    if not wait(lambda: all("cluster_state:ok" in redis_cli(p, "cluster", "info")
                            for p in rports), 60):
        sys.exit("cluster state not ok")


def on_signal(sig, frame):
    sys.exit(f"signal {sig}")


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGHUP, on_signal)

try:
    load0 = open("/proc/loadavg").read().split()[:3]
    op, pa, pb, pc, aa, ab, ac = ports(7)
    if args.cluster:
        r1, r2, r3, b1, b2, b3 = ports(6)
        start_cluster((r1, r2, r3), (b1, b2, b3))
        seed = {"a": r1, "b": r2, "c": r3}
    else:
        (rp,) = ports(1)
        start("redis", ["redis-server", "--port", str(rp), "--bind", "127.0.0.1", "--save", "",
                        "--appendonly", "no"], cwd=tmp)
        seed = {"a": rp, "b": rp, "c": rp}
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
fleet = {{ self = "{m}"; redis = "127.0.0.1:{seed[m]}";
  members = ( {{ name = "a"; address = "127.0.0.1:{pa}"; }},
              {{ name = "b"; address = "127.0.0.1:{pb}"; }},
              {{ name = "c"; address = "127.0.0.1:{pc}"; }} ); }};
""")
        start("node" + m, [os.path.join(bindir, "cachet"), "-c", conf])
    for m in "abc":
        if not wait(lambda: metric(admin[m], "fleet_redis_up") == 1):
            sys.exit(f"node {m}: no Redis link")
    c = http.client.HTTPConnection("127.0.0.1", aa, timeout=10)

    def purge(query):
        c.request("POST", "/purge?" + query)
        r = c.getresponse()
        r.read()
        if r.status not in (200, 404):
            sys.exit(f"POST /purge?{query}: {r.status}")

    # one purge first, not counted: every link on the slot's master (the
    # MOVEDs followed) and the readers blocked on the stream
    # (sent again each second until both applied one: a publish that met a
    # MOVED goes over HTTP, which these members, with no admin address, miss)
    end = time.time() + 60
    while not all(metric(admin[m], "fleet_purges_applied") >= 1 for m in "bc"):
        if time.time() > end:
            sys.exit("nodes b and c: the first purges not applied")
        purge("url=" + urllib.parse.quote("http://fleet.test/gen?warm=1", safe=""))
        wait(lambda: all(metric(admin[m], "fleet_purges_applied") >= 1 for m in "bc"), 1)
    time.sleep(0.5)
    bytag = [args.kind == "tag" or (args.kind == "mixed" and i % 2 == 1) for i in range(n)]
    for i in range(n):
        if bytag[i]:
            purge(f"tag=bench-{i}")
        else:
            purge("url=" + urllib.parse.quote(f"http://fleet.test/gen?bench={i}", safe=""))
    ts = re.compile(r"^(\S+)Z ")
    idx = re.compile(r"bench(?:=|%3D|-)(\d+)")

    def stamp(line):
        mm = ts.match(line)
        if not mm:
            return None
        t = calendar.timegm(time.strptime(mm.group(1)[:19], "%Y-%m-%dT%H:%M:%S"))
        return t * 1000 + int(mm.group(1)[20:23])

    def applied(m):
        # bench purge -> the time node m logged applying it
        got = {}
        for line in open(os.path.join(tmp, "node" + m + ".err")):
            if "fleet: purge from another node" in line:
                mi, t = idx.search(line), stamp(line)
                if mi and t is not None:
                    got[int(mi.group(1))] = t
        return got

    for m in "bc":
        # (polled slowly: reading the logs takes CPU from nodes still applying)
        if not wait(lambda: len(applied(m)) >= n, 120, 0.25):
            sys.exit(f"node {m}: applied {len(applied(m))} of {n}")

    # a's lines in order, past the first purge's
    sent, order = {}, 0
    for line in open(os.path.join(tmp, "nodea.err")):
        if "admin: purge" not in line or "warm" in line or stamp(line) is None:
            continue
        mi = idx.search(line)
        if order >= n or not mi or int(mi.group(1)) != order:
            sys.exit(f"node a: line {order} out of order: {line.strip()}")
        sent[order] = stamp(line)
        order += 1
    if order != n:
        sys.exit(f"node a: {order} purge lines for {n} purges")
    lat = {}
    for m in "bc":
        got = applied(m)
        lat[m] = sorted(got[i] - sent[i] for i in sent if i in got)
        if len(lat[m]) != n:
            sys.exit(f"node {m}: {len(lat[m])} of {n} purges in its log")
    lat["b+c"] = sorted(lat["b"] + lat["c"])

    def q(v, p):
        return v[min(len(v) - 1, int(p * len(v)))]

    load1 = open("/proc/loadavg").read().split()[:3]
    redirects = [metric(admin[m], "fleet_redis_redirects") for m in "abc"]
    print(f"{n} purges ({args.kind}) on a, Redis "
          f"{'Cluster of 3 masters' if args.cluster else 'standalone'}, 1 ms log resolution, "
          f"load average {' '.join(load0)} -> {' '.join(load1)}, "
          f"MOVED followed a/b/c {redirects[0]}/{redirects[1]}/{redirects[2]}")
    for m in ("b", "c", "b+c"):
        v = lat[m]
        print(f"  applied on {m:3}: median {q(v, 0.5):.0f} ms, p99 {q(v, 0.99):.0f} ms, "
              f"max {v[-1]:.0f} ms ({len(v)} samples)")
finally:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()
    for path in reserved:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    shutil.rmtree(tmp, ignore_errors=True)
