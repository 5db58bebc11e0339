#!/usr/bin/python3
"""bench/h2/livemem.py BEFORE AFTER N: the live heap that grew between two
livemem.c dumps, per call stack and divided by N (connections), the
allocator wrappers skipped in the names (addr2line resolves the frames;
stripped libraries name the nearest exported symbol, so read them as "in
libssl", not as the function). Ends with the total and a split by library."""
import sys, subprocess, collections
a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(f):
    d = {}
    for line in open(f):
        p = line.split()
        if p[0] == '#':
            heap[f] = (int(p[2]), int(p[4]))
            continue
        d[tuple(p[3:])] = (int(p[0]), int(p[1]), int(p[2]))
    return d
heap = {}
A, B = load(a), load(b)
keys = set(A) | set(B)
cache = {}
def sym(fr):
    if fr in cache: return cache[fr]
    if '+' not in fr: cache[fr] = fr; return fr
    dso, off = fr.rsplit('+', 1)
    try:
        out = subprocess.run(['addr2line', '-f', '-C', '-e', dso, hex(int(off, 16) - 1)], capture_output=True, text=True).stdout.split('\n')
        s = out[0] + '@' + dso.split('/')[-1]
    except Exception: s = fr
    cache[fr] = s; return s
skip = ('malloc', 'calloc', 'realloc', 'memalign', 'aligned_alloc', 'posix_memalign', 'CRYPTO_', 'ct_xmalloc', 'ct_xcalloc', 'ct_xrealloc', 'mem_malloc', 'mem_calloc', 'mem_realloc', 'big_alloc', 'nghttp2_mem_', 'event_mm_', 'mm_malloc')
rows = []
tot = [0, 0]
for k in keys:
    x = A.get(k, (0, 0, 0)); y = B.get(k, (0, 0, 0))
    db, du, dc = y[0] - x[0], y[1] - x[1], y[2] - x[2]
    if abs(dc) < n * 0.5 and abs(db) < n * 16: continue
    rows.append((db, du, dc, k))
for db, du, dc, k in sorted(rows, reverse=True):
    syms = [sym(f) for f in k]
    rest = [s for s in syms if not s.split('@')[0].startswith(skip)]
    tot[0] += db; tot[1] += du
    print("%8.1f B %8.1f usable %6.2f allocs  %s" % (db / n, du / n, dc / n, ' < '.join(rest[:5])))
print("total per connection: %.1f B requested, %.1f usable" % (tot[0] / n, tot[1] / n))
lib = {}
for db, du, dc, k in rows:
    s = ' '.join(k)
    part = ('nghttp2' if 'libnghttp2' in s else 'openssl' if ('libssl' in s or 'libcrypto' in s)
            else 'the server and libevent')
    lib[part] = lib.get(part, 0) + db / n
if a in heap and b in heap:
    d = [(heap[b][i] - heap[a][i]) / n for i in range(2)]
    print("malloc's heaps (mallinfo2 arena, fordblks), growth per connection: extent %.0f B, "
          "free %.0f B" % (d[0], d[1]))
print("by library: " + ", ".join("%s %.0f B" % kv for kv in sorted(lib.items())))
