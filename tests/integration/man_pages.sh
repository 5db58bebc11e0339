#!/usr/bin/env bash
# needs: cachet
# tests/integration/man_pages.sh: the man pages in docs/man render without a
# warning (groff -ww, and man --warnings as lintian runs it), their NAME line
# has the form lintian and whatis(1) parse ("name \- what"), and cachet(8)
# names every option of `cachet --help` and every command of `cachet ctl
# --help`, so the hand-written page cannot fall behind the binary.
# cachet.conf(5)'s reference is checked against the schema by the unit test
# test_conf_dump.
source "$(dirname "$0")/lib.sh"

MAN=$CT_SRC/docs/man
for page in cachet.8 cachet.conf.5 cachet-origin.1; do
    f=$MAN/$page
    ct_check "$page exists" "$([ -s "$f" ] && echo yes)" yes
    out=$(groff -ww -man -Tutf8 -z "$f" 2>&1)
    ct_check "$page: groff -ww says nothing" "$out" ""
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$f" 2>&1 >/dev/null)
    ct_check "$page: man --warnings says nothing" "$out" ""
    name=${page%.*}
    ct_check_match "$page: NAME line" "$(sed -n '/^\.SH NAME/{n;p;q}' "$f")" \
        "^${name//./\\.} \\\\- [A-Za-z]"
    rendered=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$f" 2>/dev/null)
    ct_check_match "$page renders its title" "$rendered" "^${name^^}\\(${page##*.}\\)"
done

page=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$MAN/cachet.8" 2>/dev/null)
opts=$("$CT_BIN/cachet" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u)
ct_check_match "cachet --help lists options" "$opts" "--cache-size"
for o in $opts; do
    grep -qE -- "$o([^a-z-]|$)" <<<"$page" || ct_failed "cachet(8) lacks the option $o"
done
cmds=$("$CT_BIN/cachet" ctl --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' | sort -u)
ct_check_match "cachet ctl --help lists commands" "$cmds" "purge"
for c in $cmds; do
    grep -qE -- "^ +$c( |$)" <<<"$page" || ct_failed "cachet(8) lacks the ctl command $c"
done
ct_pass "cachet(8) names every option and ctl command"
ct_done
