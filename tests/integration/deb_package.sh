#!/usr/bin/env bash
# needs: cachet cachet-origin
# tests/integration/deb_package.sh: the Debian package (debian/, built by
# dpkg-buildpackage with debhelper as `make deb` does) from a copy of the
# tree, packaging this test's build (CT_DEB_PREBUILT) so that no second
# compile runs in make test: about 25 s, lintian 20 s more. Checks the
# contents (dpkg-deb -c), the control fields and conffiles (dpkg-deb -I),
# Depends computed from the shared libraries, the maintainer scripts (user
# created by systemd-sysusers, service enabled and restarted on upgrade, the
# user kept on purge), the packaged configuration passing -t with the
# packaged binary (dpkg-deb -x into a scratch root), and lintian: no error.
source "$(dirname "$0")/lib.sh"

BUILD=$(cd "$CT_BIN/.." && pwd)
VERSION=$(dpkg-parsechangelog -l "$CT_SRC/debian/changelog" -S Version)
ct_check "debian/changelog's version is cachet --version's" \
    "cachet $VERSION" "$("$CT_BIN/cachet" --version)"

# A copy of the tree: dpkg-buildpackage writes into debian/ and the parent
# folder, and the source tree is shared with the other tests.
src=$CT_TMP/cachet-$VERSION
mkdir -p "$src"
tar -C "$CT_SRC" --exclude='./build*' --exclude=./.git --exclude='./obj-*' \
    --exclude=./debian/cachet --exclude=./debian/.debhelper -cf - . | tar -C "$src" -xf -
(cd "$src" && CT_DEB_PREBUILT=$BUILD dpkg-buildpackage -b -uc -us >"$CT_TMP/build.log" 2>&1)
rc=$?
ct_check "dpkg-buildpackage succeeds" "$rc" 0
[ "$rc" -eq 0 ] || tail -30 "$CT_TMP/build.log"
deb=$(ls "$CT_TMP"/cachet_"$VERSION"_*.deb 2>/dev/null | head -1)
ct_check "the .deb is there" "$([ -s "$deb" ] && echo yes)" yes
[ -s "$deb" ] || ct_done

contents=$(dpkg-deb -c "$deb" | awk '{print $2, $6}')
for f in ./usr/sbin/cachet ./usr/bin/cachet-origin ./etc/cachet/cachet.conf \
         ./lib/systemd/system/cachet.service ./etc/logrotate.d/cachet \
         ./usr/lib/sysusers.d/cachet.conf ./usr/share/man/man8/cachet.8.gz \
         ./usr/share/man/man5/cachet.conf.5.gz ./usr/share/man/man1/cachet-origin.1.gz \
         ./usr/share/doc/cachet/copyright ./usr/share/doc/cachet/changelog.gz \
         ./usr/share/doc/cachet/examples/cachet.conf; do
    ct_check_match "the package has $f, owned by root" "$contents" "root/root ${f//./\\.}"$'(\n|$)'
done
ct_check "nothing under /usr/local" "$(grep -c ' \./usr/local/' <<<"$contents")" 0

info=$(dpkg-deb -I "$deb")
ct_check "conffiles: the configuration and the logrotate file" \
    "$(dpkg-deb -I "$deb" conffiles)" $'/etc/cachet/cachet.conf\n/etc/logrotate.d/cachet'
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libssl3 libevent-2.1-7 libevent-openssl-2.1-7 libnghttp2-14 libpcre2-8-0 \
           libconfig9 libhttp-parser2.9 libhiredis0.14 zlib1g libzstd1 libbrotli1; do
    ct_check_match "Depends has $lib (from the shared libraries)" "$depends" "(^|, )$lib( |,|$)"
done
ct_check_match "Depends has the sysusers tool" "$depends" "systemd \\| systemd-standalone-sysusers"
ct_check_match "control file writes no library by hand" \
    "$(sed -n 's/^Depends: //p' "$CT_SRC/debian/control")" '^\$\{shlibs:Depends\}, \$\{misc:Depends\}$'

dpkg-deb -e "$deb" "$CT_TMP/control"
postinst=$(cat "$CT_TMP/control/postinst")
ct_check_match "postinst creates the cachet user (systemd-sysusers)" "$postinst" \
    'systemd-sysusers [^\n]*cachet\.conf'
ct_check_match "postinst enables the service" "$postinst" "deb-systemd-helper enable 'cachet.service'"
ct_check_match "postinst restarts it on upgrade" "$postinst" '_dh_action=restart'
ct_check "no maintainer script removes the user" \
    "$(cat "$CT_TMP"/control/{postinst,postrm,prerm} 2>/dev/null | grep -cE 'deluser|userdel')" 0

root=$CT_TMP/root
dpkg-deb -x "$deb" "$root"
out=$("$root/usr/sbin/cachet" -t -c "$root/etc/cachet/cachet.conf" 2>&1)
ct_check "the packaged configuration passes -t with the packaged binary" "$out" "configuration ok"
unit=$root/lib/systemd/system/cachet.service
ct_check "the unit runs /usr/sbin/cachet on /etc/cachet/cachet.conf" \
    "$(grep '^ExecStart=' "$unit")" "ExecStart=/usr/sbin/cachet -c /etc/cachet/cachet.conf"
for d in User=cachet NoNewPrivileges=yes ProtectSystem=strict \
         AmbientCapabilities=CAP_NET_BIND_SERVICE; do
    ct_check "the unit has $d" "$(grep -cx "$d" "$unit")" 1
done
ct_check_match "the sysusers file declares the cachet user" \
    "$(cat "$root/usr/lib/sysusers.d/cachet.conf")" $'\nu cachet - '
ct_check_match "logrotate reopens through the service's main process" \
    "$(cat "$root/etc/logrotate.d/cachet")" 'systemctl kill --kill-who=main --signal=USR1 cachet\.service'

lint=$(lintian --fail-on error "$deb" 2>&1)
rc=$?
ct_check "lintian finds no error" "$rc" 0
grep -E '^[EW]: ' <<<"$lint"
ct_done
