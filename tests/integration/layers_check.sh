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

# Inside proxy/core the calls run one way (--core-calls, on the built
# library): a leaf (req.c) calling a step file (fetch.c) fails, naming both;
# calls down pass, and so does the step loop's table (ct_step_*).
cc=${CC:-cc}
mkdir -p "$tmp/lib"
printf 'void ct_fetch_x(void) {}\nint ct_step_fill(void) { return 0; }\n' >"$tmp/lib/fetch.c"
printf 'void ct_req_y(void) {}\n' >"$tmp/lib/req.c"
printf 'int ct_step_fill(void);\nvoid ct_req_run_x(void) { ct_step_fill(); }\n' >"$tmp/lib/req_fsm.c"
printf 'void ct_fetch_x(void);\nvoid ct_req_y(void);\nvoid ct_req_z(void) { ct_req_y(); ct_fetch_x(); }\n' \
    >"$tmp/lib/req_log.c"
for f in fetch req req_fsm req_log; do "$cc" -c -o "$tmp/lib/$f.c.o" "$tmp/lib/$f.c"; done
(cd "$tmp/lib" && ar rc down.a fetch.c.o req.c.o req_fsm.c.o)
out=$(bash "$src/scripts/check_layers.sh" --core-calls "$tmp/lib/down.a" 2>&1); rc=$?
ct_check "calls down and through the step table pass" "$rc" 0
[ "$rc" -eq 0 ] || echo "$out"
(cd "$tmp/lib" && ar rc up.a fetch.c.o req.c.o req_log.c.o)
out=$(bash "$src/scripts/check_layers.sh" --core-calls "$tmp/lib/up.a" 2>&1); rc=$?
ct_check "a call up inside proxy/core fails the check" "$([ "$rc" -ne 0 ] && echo failed)" failed
ct_check_match "the failure names both files and the function" "$out" \
    "proxy/core/req_log.c calls ct_fetch_x of proxy/core/fetch.c"
printf 'void ct_new_z(void) { }\n' >"$tmp/lib/newfile.c"
"$cc" -c -o "$tmp/lib/newfile.c.o" "$tmp/lib/newfile.c"
printf 'void ct_new_z(void);\nvoid ct_req_y(void) { ct_new_z(); }\n' >"$tmp/lib/req.c"
"$cc" -c -o "$tmp/lib/req.c.o" "$tmp/lib/req.c"
(cd "$tmp/lib" && ar rc new.a req.c.o newfile.c.o)
out=$(bash "$src/scripts/check_layers.sh" --core-calls "$tmp/lib/new.a" 2>&1); rc=$?
ct_check_match "a file with no rank fails the check" "$out" "proxy/core/newfile.c has no rank"
ct_done
