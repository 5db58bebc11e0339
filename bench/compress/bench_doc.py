#!/usr/bin/env python3
"""bench/compress/bench_doc.py OUT: the benches' 100 KiB JSON document.

JSON records (ids, names, prices, tags, short texts), seeded so every run and
every bench (gzip_vs_nginx.sh, recode_cost.sh, bench/micro/compcost.sh) has
the same bytes: gzip 6 leaves about 15 %, as for typical API answers."""
import json
import random
import sys

random.seed(1)
words = ["fast", "cache", "proxy", "origin", "object", "store", "json", "value", "the", "a", "of"]
recs = [{"id": i, "name": "item-%d" % i, "price": round(random.random() * 100, 2),
         "tags": random.sample(["red", "green", "blue", "small", "large", "sale", "new"], 3),
         "description": " ".join(random.choice(words) for _ in range(12))} for i in range(700)]
s = json.dumps(recs)
open(sys.argv[1], "w").write(s[:102399] + "]" if len(s) > 102400 else s)
