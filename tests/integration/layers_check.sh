#!/usr/bin/env bash
# scripts/check_layers.sh passes on the tree and fails, naming the file, the
# line and the layers, on a copy with one include pointing the wrong way.
source "$(dirname "$0")/lib.sh"
src=${CT_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

out=$(bash "$src/scripts/check_layers.sh" "$src" 2>&1); rc=$?
ct_check "the tree passes the layer check" "$rc" 0
[ "$rc" -eq 0 ] || echo "$out"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r "$src/common" "$src/http" "$src/cache" "$src/conf" "$src/tls" "$src/origin" "$src/proxy" "$src/scripts" "$tmp/"
for planted in "proxy/core/fetch.c:proxy/h1/h1.h" "proxy/net/io.c:proxy/core/core.h" \
               "cache/store.c:proxy/ctx.h" "proxy/ctx.h:proxy/net/net.h" \
               "proxy/h2/h2_resp.c:proxy/core/cache_int.h"; do
  f=${planted%%:*}; inc=${planted#*:}
  [ -f "$tmp/$f" ] || f=$(cd "$tmp" && ls ${f%/*}/*.c | head -1)
  cp "$tmp/$f" "$tmp/$f.orig"
  printf '#include "%s"\n' "$inc" >> "$tmp/$f"
  out=$(bash "$tmp/scripts/check_layers.sh" "$tmp" 2>&1); rc=$?
  ct_check "a wrong-way include in $f fails the check" "$([ "$rc" -ne 0 ] && echo failed)" failed
  ct_check_match "the failure names $f and $inc" "$out" "$f:[0-9]*: includes $inc"
  mv "$tmp/$f.orig" "$tmp/$f"
done
ct_done
