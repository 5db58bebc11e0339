#!/usr/bin/env bash
# needs: cachet
# tests/integration/build_info.sh: `cachet -V` (nginx -V, haproxy -vv): the
# version of --version, the tree's git revision, the compiler, and per
# library the version built with, equal to what pkg-config (or the -dev
# package) says of the headers on this machine, and the one running, equal
# to the upstream part of the runtime package's version (dpkg), two sources
# the binary does not read. No configuration is read: -V works with a file
# that does not exist.
source "$(dirname "$0")/lib.sh"

CACHET=$CT_BIN/cachet
out=$("$CACHET" -V 2>&1)
ct_check "-V exits 0" "$?" 0
ct_check "-V's first line is --version's" "$(head -1 <<<"$out")" "$("$CACHET" --version)"
out2=$("$CACHET" -V -c "$CT_TMP/does-not-exist.conf" 2>&1)
ct_check "-V reads no configuration" "$out2" "$out"

rev=$(sed -n 's/^git revision: //p' <<<"$out")
if git -C "$CT_SRC" rev-parse --git-dir >/dev/null 2>&1; then
    # HEAD when built; a commit made since (without a rebuild) moves HEAD on,
    # so: a commit of this tree's history, HEAD or before it
    r=${rev%-dirty}
    ct_check "the git revision is a commit of the tree, HEAD or an ancestor" \
        "$(git -C "$CT_SRC" merge-base --is-ancestor "$r" HEAD 2>/dev/null && echo yes)" yes
    ct_check_match "the revision is abbreviated to 12 digits" "$r" '^[0-9a-f]{12}$'
else
    ct_check "outside git the revision is unknown" "$rev" unknown
fi
ct_check_match "the compiler is named with its version" "$(sed -n 's/^compiler: //p' <<<"$out")" \
    '^(gcc|clang) [0-9]+\.[0-9]+'
ct_check_match "the build type is named" "$(sed -n 's/^build: //p' <<<"$out")" \
    '^(Release|Debug|RelWithDebInfo|MinSizeRel|None)'

# built NAME: the "built with" column of NAME's line; running NAME likewise.
built() { awk -v n="$1" '$1 == n && $2 == "built" { print $4 }' <<<"$out"; }
running() { awk -v n="$1" '$1 == n && $5 == "running" { print $7 }' <<<"$out"; }
# upstream PKG: the runtime package's version without epoch and Debian part
upstream() { dpkg-query -W -f '${Version}' "$1" | sed 's/^[0-9]*://'; }

for row in "OpenSSL openssl libssl3" "libevent libevent libevent-2.1-7" \
           "nghttp2 libnghttp2 libnghttp2-14" "PCRE2 libpcre2-8 libpcre2-8-0" \
           "zlib zlib zlib1g" "zstd libzstd libzstd1" "brotli libbrotlienc libbrotli1" \
           "hiredis hiredis -" "libconfig libconfig -"; do
    read -r name pc pkg <<<"$row"
    b=$(built "$name")
    want=$(pkg-config --modversion "$pc")
    ct_check_match "$name: built with the headers' version ($want)" "$b" "^${want//./\\.}"
    [ "$pkg" = - ] && continue
    r=$(running "$name")
    up=$(upstream "$pkg")
    ct_check "$name: running with the installed $pkg ($up)" \
        "$([ -n "$r" ] && [ "${up#"$r"}" != "$up" ] && echo yes)" yes
done
hp=$(dpkg-query -W -f '${Version}' libhttp-parser-dev)
ct_check_match "http-parser: built with libhttp-parser-dev's version" "$(built http-parser)" \
    "^${hp%%-*}$"
ct_check_match "http-parser: running with libhttp-parser2.9's" "$(running http-parser)" \
    "^$(upstream libhttp-parser2.9 | sed 's/-.*//')$"
ct_check "glibc: running with libc6's" "$(running glibc)" "$(upstream libc6 | sed 's/-.*//')"
ct_check_match "hiredis says it cannot tell its run-time version" "$out" \
    'hiredis +built with [0-9.]+ +running with \? \(the library has no version call\)'
ct_check_match "-V is in --help" "$("$CACHET" --help)" $'\n  -V '
ct_done
