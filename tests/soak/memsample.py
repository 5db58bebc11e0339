#!/usr/bin/env python3
"""tests/soak/memsample.py PID ADMIN_URL: one CSV line of where cachet's
resident memory is (issue 19: which part moves when the soak's RSS does).
From /proc/PID/smaps, KiB resident by kind of mapping:
  anon     anonymous private memory (malloc's heaps and arenas, the slabs,
           thread stacks)
  shmem    the memfd mappings of large cache bodies ("/memfd:cachet-body")
  file     the binary and the libraries
  heap     the main arena ("[heap]": the main thread's malloc)
  arenas   the other threads' malloc arenas: an anonymous read-write mapping
           at a 64 MiB boundary followed by its reserved (---p) rest
and from /metrics, KiB: the cache's counted bytes, malloc's allocated and
resident figures, and the slabs' used and resident bytes; then counts: the
cache's objects, and its expired and evicted totals (what took a full
cache's bytes away between two samples), and the allocator's releases
(malloc_trim calls: how often free pages went back).
Columns: anon,shmem,file,heap,arenas,cache,m_alloc,m_resident,slab_used,slab_resident,
objects,expired,evicted,releases

  memsample.py --summary SOAK_CSV CAP PCT: the report's lines (below)."""
import csv, sys, urllib.request

if sys.argv[1] == "--summary":
    # memsample.py --summary SOAK_CSV CAP PCT: over the samples from minute 2
    # at a full cache (>= PCT % of CAP: what the flatness check judges),
    # each column's low, median and high in MiB, and its spread (high - low);
    # then, over every sample from minute 2, RSS and RSS minus the cache's
    # counted bytes (the process's own memory beside the cache's), so the
    # samples the check leaves out are shown too.
    cap, pct = float(sys.argv[3]), float(sys.argv[4])
    late = [r for r in csv.DictReader(open(sys.argv[2])) if int(r["t"]) >= 120 and r["cache_bytes"]]
    rows = [r for r in late if float(r["cache_bytes"]) >= cap * pct / 100]
    def lmh(v):
        v = sorted(v)
        return "%.1f/%.1f/%.1f (%.1f)" % (v[0] / 1024, v[(len(v) - 1) // 2] / 1024, v[-1] / 1024,
                                          (v[-1] - v[0]) / 1024)
    if rows:
        out = []
        for col in ["rss_kb"] + list(rows[0].keys())[5:15]:
            v = [int(r[col]) for r in rows if r.get(col)]
            if v:
                out.append("%s %s" % (col, lmh(v)))
        out.append("rss-cache %s" % lmh([int(r["rss_kb"]) - int(float(r["cache_bytes"])) // 1024
                                          for r in rows]))
        print("memory at a full cache (>= %g %%), MiB low/median/high (spread), %d samples: %s"
              % (pct, len(rows), "; ".join(out)))
    rel = [(int(r["t"]), int(r["releases"])) for r in late if r.get("releases")]
    if len(rel) > 1 and rel[-1][1] > rel[0][1]:
        n, secs = rel[-1][1] - rel[0][1], rel[-1][0] - rel[0][0]
        print("allocator releases (malloc_trim) from minute 2: %d in %d s, one every %.1f s"
              % (n, secs, secs / n))
    if late:
        fill = [float(r["cache_bytes"]) / cap * 100 for r in late]
        print("every sample from minute 2 (%d, the cache %.0f-%.0f %% full), MiB: rss %s; rss-cache %s"
              % (len(late), min(fill), max(fill), lmh([int(r["rss_kb"]) for r in late]),
                 lmh([int(r["rss_kb"]) - int(float(r["cache_bytes"])) // 1024 for r in late])))
    sys.exit(0)

pid, admin = sys.argv[1], sys.argv[2]
ARENA = 64 << 20
kinds = dict(anon=0, shmem=0, file=0, heap=0, arenas=0)
maps = []  # (start, end, perms, name, rss_kb)
cur = None
with open(f"/proc/{pid}/smaps") as f:
    for line in f:
        parts = line.split()
        if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            cur = [lo, hi, parts[1], " ".join(parts[5:]), 0]
            maps.append(cur)
        elif parts[0] == "Rss:" and cur is not None:
            cur[4] = int(parts[1])
for i, (lo, hi, perms, name, rss) in enumerate(maps):
    if "memfd:" in name:
        kinds["shmem"] += rss
    elif name.startswith("/"):
        kinds["file"] += rss
    else:
        kinds["anon"] += rss
        if name == "[heap]":
            kinds["heap"] += rss
        elif (name == "" and perms.startswith("rw") and lo % ARENA == 0 and i + 1 < len(maps)
              and maps[i + 1][2].startswith("---") and maps[i + 1][0] == hi
              and maps[i + 1][1] - lo == ARENA):
            kinds["arenas"] += rss
m = {}
try:
    with urllib.request.urlopen(admin + "/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.partition(" ")
                m[k] = v
except OSError:
    pass
def count(name):
    try:
        return str(int(float(m[name])))
    except (KeyError, ValueError):
        return ""
def kib(name):
    try:
        return str(int(float(m[name])) // 1024)
    except (KeyError, ValueError):
        return ""
print(",".join([str(kinds[k]) for k in ("anon", "shmem", "file", "heap", "arenas")] +
               [kib(n) for n in ("cachet_cache_bytes", "cachet_memory_allocated_bytes",
                                 "cachet_memory_resident_bytes", "cachet_memory_slab_used_bytes",
                                 "cachet_memory_slab_resident_bytes")] +
               [count(n) for n in ("cachet_cache_objects", "cachet_cache_expired_total",
                                   "cachet_cache_evictions_total",
                                   "cachet_memory_releases_total")]))
