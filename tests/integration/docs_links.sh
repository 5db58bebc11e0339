#!/usr/bin/env bash
# needs: cachet cachet-origin
# tests/integration/docs_links.sh: the docs stay true to the tree. Every
# relative link in README.md, docs/*.md, bench/README.md and
# bench/results/*/README.md names a file that exists (and a heading that
# exists, for #anchors); nothing in the repository points outside it (the
# design and benchmark notes that once lived beside it); the README stays a
# short page that maps docs/; and
# every option the binaries' --help lists is documented in docs/usage.md /
# docs/origin.md. Reads files and runs --help only: no server is started.
source "$(dirname "$0")/lib.sh"

cd "$CT_SRC" || exit 1
DOCS=(README.md docs/*.md bench/README.md bench/results/README.md bench/results/*/README.md)

# check_links DOC...: one line per relative link in DOC that names no file,
# or a heading the file does not have (GitHub's anchors: lower-cased,
# punctuation but '-' and '_' dropped, spaces to '-'). URLs are skipped.
check_links() {
    python3 - "$@" <<'PY'
import os, re, sys
def slugs(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#{1,6} (.*)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out
for doc in sys.argv[1:]:
    text = re.sub(r"```.*?```", "", open(doc, encoding="utf-8").read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(full):
            print(f"{doc}: {target} (no {full})")
        elif anchor and full.endswith(".md") and anchor not in slugs(full):
            print(f"{doc}: {target} (no heading #{anchor} in {full})")
PY
}

bad=$(check_links "${DOCS[@]}" | tr '\n' ';')
ct_check "every relative link in the docs resolves" "${bad:-none broken}" "none broken"

# The checker itself: a missing file and a missing heading are both seen,
# a good anchor and a URL are not.
mkdir -p "$CT_TMP/d"
printf '# Top\n[a](missing.md) [b](x.md#nope) [c](x.md#top) [d](https://example.com/)\n' >"$CT_TMP/d/x.md"
ct_check "the link checker sees a missing file and a missing heading" \
    "$(check_links "$CT_TMP/d/x.md" | wc -l)" 2

# Nothing points outside the repository: the notes that lived in a folder
# beside it (DESIGN, BENCH-NOTES, ...) are in docs/ and bench/ now, so
# neither their path nor their bare names may be cited. The folder's name is
# spelled in two pieces so that this file does not match its own pattern.
beside="shar""ed"
names='(DESIGN|BENCH-NOTES|FIELD-NOTES|STYLE|REQUEST-CORE|ANCHORS-STYLE)'
pattern="\\.\\./$beside/|$beside/[A-Z]|\\b$names(\\.md\\b| §)|\\(BENCH-NOTES\\)"
files() { git ls-files 2>/dev/null || find . -type f -not -path './build*' -not -path './.git/*'; }
outside=$(files | grep -vE '\.(csv|html|png|svg)$' | xargs grep -lE "$pattern" 2>/dev/null |
    grep -v '^tests/integration/docs_links.sh$' | tr '\n' ' ')
ct_check "no file points outside the repository" "${outside:-none}" none

# The README is the two-minute page; the rest lives in docs/.
lines=$(wc -l <README.md)
ct_check_match "README.md is at most 120 lines ($lines)" "$lines" '^([1-9][0-9]?|1[01][0-9]|120)$'
for page in usage config caching operations origin internals; do
    ct_check_match "README maps docs/$page.md" "$(grep -cF "](docs/$page.md)" README.md)" '^[1-9]' 
done

# Every option of `cachet --help` and `cachet-origin --help` is documented.
missing=""
for opt in $("$CT_BIN/cachet" --help 2>&1 | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
    grep -qF -- "$opt" docs/usage.md || missing+=" cachet $opt"
done
for opt in $("$CT_BIN/cachet-origin" --help 2>&1 | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
    grep -qF -- "$opt" docs/origin.md || missing+=" cachet-origin $opt"
done
ct_check "every --help option is in docs/usage.md or docs/origin.md" "${missing:-none missing}" "none missing"
# ... and every command of `cachet ctl --help` is named by `cachet --help`'s
# pointer to it and documented.
ct_check_match "cachet --help points at cachet ctl" "$("$CT_BIN/cachet" --help 2>&1)" ' ctl COMMAND .*cachet ctl --help'
for cmd in $("$CT_BIN/cachet" ctl --help 2>&1 | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p'); do
    grep -qF -- "cachet ctl $cmd" docs/usage.md || missing+=" ctl $cmd"
done
ct_check "every cachet ctl command is in docs/usage.md" "${missing:-none missing}" "none missing"

ct_done
