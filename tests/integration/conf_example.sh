#!/usr/bin/env bash
# needs: cachet
# tests/integration/conf_example.sh: the configuration through the real
# binary: `-t` on the example and on a broken file (exit code, FILE:LINE
# messages), `-T` output that `-t` accepts and that dumps identically, the
# command-line overrides in `-T`, and the example actually running (on
# ephemeral ports, moved there by overrides).
source "$(dirname "$0")/lib.sh"

CACHET="$CT_BIN/cachet"
EXAMPLE="$CT_SRC/conf/cachet.conf"

out=$("$CACHET" -t -c "$EXAMPLE" 2>&1)
ct_check "-t on conf/cachet.conf exits 0" "$?" 0
ct_check "-t on conf/cachet.conf says ok" "$out" "configuration ok"

cat >"$CT_TMP/bad.conf" <<'EOF'
listen = (
  { kind = "http"; address = "127.0.0.1:8080"; },
  { kind = "https"; address = "127.0.0.1:8080"; }
);
backends = ( { address = "127.0.0.1:8081"; } );
cache = { sise = "1G"; };
EOF
"$CACHET" -t -c "$CT_TMP/bad.conf" >"$CT_TMP/bad.out" 2>"$CT_TMP/bad.err"
ct_check "-t on a bad file exits 1" "$?" 1
ct_check "-t on a bad file prints nothing on stdout" "$(cat "$CT_TMP/bad.out")" ""
ct_check "unknown key located" "$(sed -n 1p "$CT_TMP/bad.err")" \
    "$CT_TMP/bad.conf:6: cache.sise: unknown setting (did you mean \"size\"?)"

# Cross-checks run once the file is structurally valid.
sed -i 's/sise/size/' "$CT_TMP/bad.conf"
"$CACHET" -t -c "$CT_TMP/bad.conf" >/dev/null 2>"$CT_TMP/bad.err"
ct_check "-t on a file failing cross-checks exits 1" "$?" 1
ct_check_match "duplicate address located" "$(cat "$CT_TMP/bad.err")" \
    "bad\\.conf:3: listen\\[1\\]\\.address: address 127\\.0\\.0\\.1:8080 is already used by listen\\[0\\]\\.address at [^ ]*bad\\.conf:2"
ct_check_match "https without certificate located" "$(cat "$CT_TMP/bad.err")" \
    "bad\\.conf:3: listen\\[1\\]\\.tls\\.certificates: https listener without a certificate"

"$CACHET" -t -c "$CT_TMP/missing.conf" >/dev/null 2>"$CT_TMP/missing.err"
ct_check "-t on a missing file exits 1" "$?" 1
ct_check "missing file named" "$(cat "$CT_TMP/missing.err")" \
    "$CT_TMP/missing.conf: cannot open: No such file or directory"

# -T prints everything; its output is a valid file that dumps the same.
"$CACHET" -T -c "$EXAMPLE" >"$CT_TMP/dump1.conf"
ct_check "-T exits 0" "$?" 0
out=$("$CACHET" -t -c "$CT_TMP/dump1.conf" 2>&1)
ct_check "-t accepts -T output" "$out" "configuration ok"
"$CACHET" -T -c "$CT_TMP/dump1.conf" >"$CT_TMP/dump2.conf"
ct_check "-T output round-trips" "$(tail -n +2 "$CT_TMP/dump1.conf")" "$(tail -n +2 "$CT_TMP/dump2.conf")"
ct_check_match "-T fills defaults the example leaves out" "$(cat "$CT_TMP/dump1.conf")" \
    'ciphersuites = "TLS_AES_128_GCM_SHA256'

# Overrides win over the file.
"$CACHET" -T -c "$EXAMPLE" --cache-size 1G --workers 3 --backend 127.0.0.1:9001 \
    --admin off >"$CT_TMP/dump3.conf"
dump3=$(cat "$CT_TMP/dump3.conf")
ct_check_match "--cache-size wins" "$dump3" $'cache = \\{\n  size = "1G";'
ct_check_match "--workers wins" "$dump3" $'\nworkers = 3;'
ct_check_match "--backend replaces the backends" "$dump3" 'address = "127\.0\.0\.1:9001";'
ct_check_match "--admin off" "$dump3" $'admin = \\{\n  listen = "off";'
"$CACHET" -t --cache-size 2T >/dev/null 2>"$CT_TMP/over.err"
ct_check "out-of-range override exits 1" "$?" 1
ct_check_match "out-of-range override located on the command line" "$(cat "$CT_TMP/over.err")" \
    '^command line \(--cache-size\): cache\.size: out of range: "2T"'
out=$("$CACHET" -t --cache-size 1M 2>&1)
ct_check "--cache-size 1M alone: ok (max_object_size follows the cache)" "$out" "configuration ok"
ct_check_match "... at 1/16 of it" "$("$CACHET" -T --cache-size 1M)" 'max_object_size = "64K";'
"$CACHET" --cache-sise 1G >/dev/null 2>"$CT_TMP/opt.err"
ct_check "unknown option exits 2" "$?" 2
ct_check "unknown option suggests" "$(sed -n 1p "$CT_TMP/opt.err")" \
    'command line (--cache-sise): unknown option (did you mean --cache-size?)'
# every bad option reported, located; not the whole usage (issue 40, bug 8)
"$CACHET" --cache-size 12X --workers many --http nowhere >/dev/null 2>"$CT_TMP/opt.err"
ct_check "bad option values exit 2" "$?" 2
ct_check "each bad option on its own line" "$(head -3 "$CT_TMP/opt.err")" \
    'command line (--cache-size): invalid value "12X" (expected a size such as 256M or 1G)
command line (--workers): invalid value "many" (expected 1 to 1024, or auto)
command line (--http): invalid value "nowhere" (expected IP:PORT such as 127.0.0.1:8080 or [::1]:8080, or off)'
ct_check "no usage text" "$(grep -c 'usage:' "$CT_TMP/opt.err")" 0

# -t predicts start (issue 40, bug 3): a backend whose name does not resolve
# fails both, located, naming the backend and why.
cat >"$CT_TMP/unres.conf" <<'EOF'
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "off"; };
backends = (
  { name = "good"; address = "127.0.0.1:8081"; },
  { name = "lost"; address = "no-such-host.invalid:80"; }
);
EOF
"$CACHET" -t -c "$CT_TMP/unres.conf" >"$CT_TMP/unres.out" 2>"$CT_TMP/unres.err"
ct_check "-t with an unresolvable backend exits 1" "$?" 1
ct_check "... says nothing is ok" "$(cat "$CT_TMP/unres.out")" ""
ct_check_match "... names the backend, where, and why" "$(cat "$CT_TMP/unres.err")" \
    'unres\.conf:5: backends\[1\]\.address: backend lost: cannot resolve no-such-host\.invalid: '
timeout 30 "$CACHET" -c "$CT_TMP/unres.conf" >"$CT_TMP/unres.out" 2>"$CT_TMP/unres.err"
rc=$?
ct_check "start with an unresolvable backend fails" "$(((rc != 0 && rc != 124)))" 1
ct_check_match "... naming the backend and why" "$(cat "$CT_TMP/unres.err")" \
    'backend lost: cannot resolve no-such-host\.invalid: '
ct_check "... not 'nothing to do'" "$(grep -c 'nothing to do' "$CT_TMP/unres.err")" 0

# Relative paths in a file are relative to that file, whatever the working
# directory (issue 40, bug 6): under systemd it is "/".
mkdir -p "$CT_TMP/etc/certs" "$CT_TMP/etc/conf.d"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=rel \
    -keyout "$CT_TMP/etc/certs/rel.key" -out "$CT_TMP/etc/certs/rel.pem" 2>/dev/null
cat >"$CT_TMP/etc/conf.d/tls.conf" <<'EOF'
certificates = ( { cert = "../certs/rel.pem"; key = "../certs/rel.key"; } );
EOF
cat >"$CT_TMP/etc/rel.conf" <<'EOF'
listen = ( { kind = "https"; address = "127.0.0.1:0";
             tls = {
@include "conf.d/tls.conf"
             }; } );
admin = { listen = "off"; };
backends = ( { address = "127.0.0.1:8081"; } );
logs = { error_log = "log/error.log"; };
pid_file = "cachet.pid";
EOF
mkdir -p "$CT_TMP/etc/log"
out=$(cd / && "$CACHET" -t -c "$CT_TMP/etc/rel.conf" 2>&1)
ct_check "-t from / with relative paths (one in an @include'd file)" "$out" "configuration ok"
dump=$(cd / && "$CACHET" -T -c "$CT_TMP/etc/rel.conf" 2>&1)
ct_check_match "... the certificate relative to the included file" "$dump" \
    "cert = \"$(cd "$CT_TMP/etc" && pwd -P)/conf\.d/\.\./certs/rel\.pem\";"
ct_check_match "... the logs and pid file relative to the main file" "$dump" \
    "error_log = \"$(cd "$CT_TMP/etc" && pwd -P)/log/error\.log\";"
ct_start rel sh -c "cd / && exec '$CACHET' -c '$CT_TMP/etc/rel.conf'"
ct_wait_until 30 grep -qs 'listening on https' "$CT_TMP/rel.out" ||
    ct_failed "started from / with relative paths" "$(cat "$CT_TMP/rel.err")"
ct_check "... its pid file next to the configuration" "$(cat "$CT_TMP/etc/cachet.pid" 2>/dev/null)" \
    "$(ct_pid rel)"
ct_check "... its error log next to it" "$(grep -c 'cachet ' "$CT_TMP/etc/log/error.log" 2>/dev/null)" 1
ct_stop rel

# conf/sites.conf (two sites, backend groups, routes) checks, and -T shows
# its routes in a file that dumps the same.
SITES="$CT_SRC/conf/sites.conf"
out=$("$CACHET" -t -c "$SITES" 2>&1)
ct_check "-t on conf/sites.conf says ok" "$out" "configuration ok"
"$CACHET" -T -c "$SITES" >"$CT_TMP/sites1.conf"
"$CACHET" -T -c "$CT_TMP/sites1.conf" >"$CT_TMP/sites2.conf"
ct_check "-T of sites.conf round-trips" "$(tail -n +2 "$CT_TMP/sites1.conf")" \
    "$(tail -n +2 "$CT_TMP/sites2.conf")"
ct_check_match "-T prints the routes" "$(cat "$CT_TMP/sites1.conf")" \
    'name = "static";[[:space:]]+match = \{[[:space:]]+path = "off";[[:space:]]+path_prefix = "/static/";'
# A broken route: the binary reports it where it is.
sed -e 's|path_regex = "^/api/v\[0-9\]+/"|path_regex = "^/api/(v[0-9]+/"|' \
    -e 's|backend_group = "static";|backend_group = "statics";|' "$SITES" >"$CT_TMP/badsites.conf"
"$CACHET" -t -c "$CT_TMP/badsites.conf" >/dev/null 2>"$CT_TMP/badsites.err"
ct_check "-t on a broken route exits 1" "$?" 1
ct_check_match "bad regex located, with PCRE2's offset" "$(cat "$CT_TMP/badsites.err")" \
    'badsites\.conf:[0-9]+: sites\[0\]\.routes\[1\]\.match\.path_regex: invalid regular expression "\^/api/\(v\[0-9\]\+/": missing closing parenthesis at offset 15'
ct_check_match "unknown group located" "$(cat "$CT_TMP/badsites.err")" \
    'badsites\.conf:[0-9]+: sites\[0\]\.routes\[0\]\.backend_group: unknown backend group "statics"'

# A fleet without Redis: -T prints what runs (nothing is learned without
# Redis, so learn_members = false), and -t accepts it: the dump printed
# `learn_members = true`, which -t refuses without fleet.redis.
cat >"$CT_TMP/fleet.conf" <<'EOF'
listen = ( { kind = "http"; address = "127.0.0.1:9001"; } );
backends = ( { address = "127.0.0.1:8081"; } );
fleet = { self = "a";
  members = ( { name = "a"; address = "127.0.0.1:9001"; }, { name = "b"; address = "127.0.0.2:9002"; } ); };
EOF
"$CACHET" -T -c "$CT_TMP/fleet.conf" >"$CT_TMP/fleet1.conf"
ct_check "-T of a fleet without Redis exits 0" "$?" 0
ct_check_match "... and says nothing is learned" "$(cat "$CT_TMP/fleet1.conf")" 'learn_members = false;'
out=$("$CACHET" -t -c "$CT_TMP/fleet1.conf" 2>&1)
ct_check "-t accepts it" "$out" "configuration ok"
"$CACHET" -T -c "$CT_TMP/fleet1.conf" >"$CT_TMP/fleet2.conf"
ct_check "... and it round-trips" "$(tail -n +2 "$CT_TMP/fleet1.conf")" "$(tail -n +2 "$CT_TMP/fleet2.conf")"
# A member's address is IP:PORT (nothing to resolve): a host name is a
# located error under -t, as a backend's unresolvable host is.
sed 's/127.0.0.2:9002/nowhere.invalid:9002/' "$CT_TMP/fleet.conf" >"$CT_TMP/fleetname.conf"
"$CACHET" -t -c "$CT_TMP/fleetname.conf" >/dev/null 2>"$CT_TMP/fleetname.err"
ct_check "-t on a member named by host exits 1" "$?" 1
ct_check_match "... located" "$(cat "$CT_TMP/fleetname.err")" \
    'fleetname\.conf:4: fleet\.members\[1\]\.address: invalid value "nowhere\.invalid:9002"'

# The example runs: moved to ephemeral ports, its listeners come up.
ct_start ex "$CACHET" -c "$EXAMPLE" --http 127.0.0.1:0 --https 127.0.0.1:0 --admin 127.0.0.1:0 \
    --workers 1
https_port=$(ct_wait_listen ex https)
ct_check_match "example's https listener is up" "$https_port" '^[0-9]+$'
http_port=$(ct_wait_listen ex http)
ct_check_match "example's http listener is up" "$http_port" '^[0-9]+$'
ct_stop ex
ct_check "example stops cleanly on SIGTERM" "$?" 0

ct_done
