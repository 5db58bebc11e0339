#!/usr/bin/env bash
# needs: cachet cachet-origin
# tests/integration/install_tree.sh: `make install` (cmake --install) into a
# scratch DESTDIR, for the /usr/local prefix and for /usr (the package's):
# every file where docs/operations.md "Installing" says, nothing outside the
# prefix (but /etc for /usr), no test binary, the unit's paths are the
# installed ones, the installed binary checks the installed configuration,
# and a second install keeps an operator's edited configuration.
source "$(dirname "$0")/lib.sh"

BUILD=$(cd "$CT_BIN/.." && pwd)

# install PREFIX ROOT: cmake --install of this build, as `make install` runs it
install_into() {
    DESTDIR="$2" cmake --install "$BUILD" --prefix "$1" >"$CT_TMP/install.log" 2>&1
}

root=$CT_TMP/root
install_into /usr/local "$root"
ct_check "cmake --install --prefix /usr/local succeeds" "$?" 0
p=$root/usr/local
for f in sbin/cachet bin/cachet-origin; do
    ct_check "$f is installed executable" "$([ -x "$p/$f" ] && echo yes)" yes
done
for f in share/man/man8/cachet.8 share/man/man5/cachet.conf.5 share/man/man1/cachet-origin.1 \
         etc/cachet/cachet.conf lib/systemd/system/cachet.service lib/sysusers.d/cachet.conf \
         share/doc/cachet/README.md share/doc/cachet/operations.md share/doc/cachet/config.md \
         share/doc/cachet/examples/cachet.conf share/doc/cachet/examples/cachet.logrotate; do
    ct_check "$f is installed" "$([ -s "$p/$f" ] && echo yes)" yes
done
ct_check "nothing outside the prefix" "$(cd "$root" && find . -type f ! -path './usr/local/*')" ""
ct_check "no test binary installed" \
    "$(find "$root" -type f \( -name 'test_*' -o -name 'bench_*' \) | head -3)" ""
ct_check "the installed page is the tree's" "$(cmp "$p/share/man/man5/cachet.conf.5" \
    "$CT_SRC/docs/man/cachet.conf.5" && echo same)" same

unit=$p/lib/systemd/system/cachet.service
ct_check "the unit starts the installed binary on the installed file" \
    "$(grep '^ExecStart=' "$unit")" "ExecStart=/usr/local/sbin/cachet -c /usr/local/etc/cachet/cachet.conf"
ct_check "the unit checks the file before a start" \
    "$(grep '^ExecStartPre=' "$unit")" \
    "ExecStartPre=/usr/local/sbin/cachet -t -c /usr/local/etc/cachet/cachet.conf"
ct_check "no placeholder is left in the unit" "$(grep -c '@[A-Z]*@' "$unit")" 0
for d in User=cachet NoNewPrivileges=yes ProtectSystem=strict \
         AmbientCapabilities=CAP_NET_BIND_SERVICE CapabilityBoundingSet=CAP_NET_BIND_SERVICE \
         LogsDirectory=cachet StateDirectory=cachet; do
    ct_check "the unit has $d" "$(grep -cx "$d" "$unit")" 1
done
ct_check_match "the sysusers file declares the cachet user" "$(cat "$p/lib/sysusers.d/cachet.conf")" \
    $'\nu cachet - '

out=$("$p/sbin/cachet" -t -c "$p/etc/cachet/cachet.conf" 2>&1)
ct_check "the installed binary passes -t on the installed configuration" "$out" "configuration ok"
ct_check_match "the installed cachet-origin runs" "$("$p/bin/cachet-origin" --help 2>&1)" \
    "usage: cachet-origin"

# An operator's edit survives a reinstall; the example is refreshed.
echo "# edited by the operator" >>"$p/etc/cachet/cachet.conf"
echo "# stale" >>"$p/share/doc/cachet/examples/cachet.conf"
install_into /usr/local "$root"
ct_check "a reinstall succeeds" "$?" 0
ct_check "a reinstall keeps the edited configuration" \
    "$(tail -1 "$p/etc/cachet/cachet.conf")" "# edited by the operator"
ct_check "a reinstall refreshes the example" \
    "$(cmp "$p/share/doc/cachet/examples/cachet.conf" "$CT_SRC/conf/cachet.conf" && echo same)" same

# The /usr prefix (the Debian package's): the configuration under /etc.
root2=$CT_TMP/root2
install_into /usr "$root2"
ct_check "cmake --install --prefix /usr succeeds" "$?" 0
ct_check "/usr puts the configuration in /etc" \
    "$([ -s "$root2/etc/cachet/cachet.conf" ] && echo yes)" yes
ct_check "/usr: the unit names /usr/sbin and /etc" "$(grep '^ExecStart=' \
    "$root2/usr/lib/systemd/system/cachet.service")" "ExecStart=/usr/sbin/cachet -c /etc/cachet/cachet.conf"
ct_check "/usr: nothing outside /usr and /etc" \
    "$(cd "$root2" && find . -type f ! -path './usr/*' ! -path './etc/*')" ""
ct_done
