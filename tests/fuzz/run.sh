#!/usr/bin/env bash
# tests/fuzz/run.sh BIN_DIR SECONDS: run every libFuzzer target found in
# BIN_DIR (fuzz_*) for SECONDS each (make fuzz: 60; make test: 15), each starting
# from its seed corpus tests/fuzz/corpus/<target without fuzz_>/, with the
# dictionary tests/fuzz/<target without fuzz_>.dict if there is one. The
# seed corpus is copied to a scratch dir, so the repository is never written.
# Exits non-zero if any target crashes, leaks, times out or breaks one of
# its checks; the reproducer is kept in $FUZZ_ARTIFACTS (default: a
# fuzz-artifacts folder beside BIN_DIR) and its path printed. Leaks that
# are not ours (libconfig's) are suppressed by lsan.supp beside this script.
set -u
BIN_DIR=${1:?usage: run.sh BIN_DIR SECONDS}
PER_TARGET=${2:?usage: run.sh BIN_DIR SECONDS}
HERE=$(cd "$(dirname "$0")" && pwd)
ARTIFACTS=${FUZZ_ARTIFACTS:-$(cd "$BIN_DIR/.." && pwd)/fuzz-artifacts}
mkdir -p "$ARTIFACTS"
ARTIFACTS=$(cd "$ARTIFACTS" && pwd) # targets may change directory while running
LSAN_SUPP="suppressions=$HERE/lsan.supp:print_suppressions=0"

targets=()
for t in "$BIN_DIR"/fuzz_*; do
    [ -x "$t" ] && targets+=("$t")
done
if [ ${#targets[@]} -eq 0 ]; then
    echo "run.sh: no fuzz_* targets in $BIN_DIR (build with CC=clang -DCT_FUZZ=ON)" >&2
    exit 2
fi
per=$PER_TARGET
[ "$per" -lt 1 ] && per=1

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ct-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
failed=0
for t in "${targets[@]}"; do
    name=$(basename "$t")
    corpus="$scratch/$name"
    mkdir -p "$corpus"
    seeds="$HERE/corpus/${name#fuzz_}"
    [ -d "$seeds" ] && cp "$seeds"/* "$corpus"/ 2>/dev/null
    dict=()
    [ -f "$HERE/${name#fuzz_}.dict" ] && dict=(-dict="$HERE/${name#fuzz_}.dict")
    echo "== $name: ${per}s, $(ls "$corpus" | wc -l) seeds${dict:+, ${name#fuzz_}.dict}"
    # -timeout: one input may not take a second; -rss_limit_mb bounds memory.
    # TMPDIR: a target's own scratch files go with ours (libFuzzer ends a
    # timed run with _Exit, so a target's atexit cleanup never runs).
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}$LSAN_SUPP" \
    TMPDIR="$scratch" \
    "$t" "$corpus" -max_total_time="$per" -timeout=5 -rss_limit_mb=1024 \
        -max_len=8192 -print_final_stats=1 "${dict[@]}" \
        -artifact_prefix="$ARTIFACTS/$name-" >"$scratch/$name.log" 2>&1
    rc=$?
    grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' \
        "$scratch/$name.log" | sed "s/^/   /"
    if [ $rc -ne 0 ]; then
        failed=1
        echo "!! $name FAILED (exit $rc); last lines:"
        tail -n 30 "$scratch/$name.log" | sed "s/^/   /"
        ls -1 "$ARTIFACTS"/"$name"-* 2>/dev/null | sed "s/^/   reproducer: /"
    else
        echo "   $name: clean"
    fi
done
exit $failed
