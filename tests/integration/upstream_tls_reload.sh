#!/usr/bin/env bash
# TLS to origins (issue 39) across reloads, and openssl s_server as an
# origin choosing its certificate by SNI:
# - s_server -WWW (HTTP/1.0, close-delimited): the name that selects its
#   second certificate gets 200, another name its default certificate and
#   a 502 "hostname mismatch";
# - a reload rebuilds the origins' TLS contexts: the idle pooled connection
#   made under the old ones is closed, the next request connects anew;
# - a reload with a CA file that is missing is refused (FILE:LINE from
#   cachet -t), and the running configuration keeps serving;
# - the origin rotates to a certificate of another CA: 502 "unable to get
#   local issuer certificate" until the CA file is replaced and cachet
#   reloaded, then 200; meanwhile an object allowing stale-if-error is
#   served stale.
# needs: cachet cachet-origin
# (and nginx, openssl: the Makefile's TEST_PKGS)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tls_ca.inc"

command -v nginx >/dev/null || { ct_failed "nginx installed"; ct_done; exit; }
D=$CT_TMP
ct_ca_init "$D/ca1" || { ct_done; exit; }
ct_ca_cert "$D/ca1" origin "DNS:origin.test" || exit 1
ct_ca_cert "$D/ca1" s "DNS:s.test" || exit 1
ct_ca_cert "$D/ca1" other "DNS:other.test" || exit 1
ct_ca_init "$D/ca2" || exit 1
ct_ca_cert "$D/ca2" origin "DNS:origin.test" || exit 1
cp "$D/ca1/ca.pem" "$D/ca.pem"

ct_start_origin
read -r A S < <(ct_free_ports 2)
mkdir -p "$D/ng" "$D/www"
ngconf() { # ngconf CADIR: nginx serving origin.test with CADIR's certificate
    cat >"$D/ng/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $D/ng/nginx.pid;
error_log $D/ng/error.log info;
events { worker_connections 256; }
http {
    access_log $D/ng/access.log;
    client_body_temp_path $D/ng/body;
    proxy_temp_path $D/ng/proxy;
    fastcgi_temp_path $D/ng/fastcgi;
    uwsgi_temp_path $D/ng/uwsgi;
    scgi_temp_path $D/ng/scgi;
    ssl_protocols TLSv1.2 TLSv1.3;
    upstream co { server 127.0.0.1:$OPORT; keepalive 8; }
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    server { listen 127.0.0.1:$A ssl default_server; server_name origin.test;
             ssl_certificate $1/origin.pem; ssl_certificate_key $1/origin.key;
             location / { proxy_pass http://co; } }
}
EOF
}
ngconf "$D/ca1"
ct_start nginx nginx -p "$D/ng" -e "$D/ng/error.log" -c "$D/ng/nginx.conf"
echo "hello from s_server" >"$D/www/hello.txt"
(cd "$D/www" && exec openssl s_server -quiet -WWW -accept "127.0.0.1:$S" \
    -cert "$D/ca1/other.pem" -key "$D/ca1/other.key" \
    -servername s.test -cert2 "$D/ca1/s.pem" -key2 "$D/ca1/s.key") \
    >"$D/s_server.out" 2>&1 &
CT_PIDS[s_server]=$!
up() { # up CA PORT NAME: does the origin answer over TLS, verified by CA?
    curl -s -o /dev/null --cacert "$1" --resolve "$3:$2:127.0.0.1" "https://$3:$2/${4:-json}"
}
ct_wait_until 30 up "$D/ca1/ca.pem" "$A" origin.test || { ct_failed "nginx serves TLS"; ct_done; exit; }
ct_wait_until 30 up "$D/ca1/ca.pem" "$S" s.test hello.txt || { ct_failed "s_server serves TLS"; ct_done; exit; }

conf() { # conf CA-FILE
    cat <<EOF
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "127.0.0.1:0"; };
workers = 1;
backends = ( { address = "127.0.0.1:$A"; tls = { ca = "$1"; server_name = "origin.test"; }; } );
backend_groups = (
  { name = "s"; backends = ( { address = "127.0.0.1:$S"; tls = { ca = "$D/ca1/ca.pem"; server_name = "s.test"; }; } ); },
  { name = "s2"; backends = ( { address = "127.0.0.1:$S"; tls = { ca = "$D/ca1/ca.pem"; server_name = "s2.test"; }; } ); }
);
sites = (
  { name = "s"; hosts = [ "s.test" ]; backend_group = "s"; },
  { name = "s2"; hosts = [ "s2.test" ]; backend_group = "s2"; }
);
EOF
}
conf "$D/ca.pem" >"$D/c.conf"
ct_start proxy "$CT_BIN/cachet" -c "$D/c.conf"
PPORT=$(ct_wait_listen proxy http) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
P="http://127.0.0.1:$PPORT"
code() { curl -s -m 30 -o /dev/null -w '%{http_code}' -H "Host: ${2:-origin.test}" "$P${1:-/json}"; }
metric() { ct_metric "$APORT" "cachet_$1"; }
conns() { metric "upstream_connections_total{backend=\"127.0.0.1:$A\"}"; }

# ---- openssl s_server, certificate by SNI --------------------------------------
ct_check "s_server: SNI s.test selects its certificate" "$(curl -s -m 30 -H 'Host: s.test' "$P/hello.txt")" \
    "hello from s_server"
ct_check "s_server: another name gets its default certificate: 502" "$(code /hello.txt s2.test)" 502
ct_check_match "... hostname mismatch" "$(grep 'backend s2/' "$CT_TMP/proxy.err" | tail -1)" \
    'hostname mismatch'

# ---- a reload closes the idle pooled connections ---------------------------------
ct_check "TLS origin answers" "$(code)" 200
code >/dev/null
ct_check "... over one pooled connection" "$(conns)" 1
ka() { grep -c 'closed keepalive connection' "$D/ng/error.log"; }
k0=$(ka)
ct_reload "$(ct_pid proxy)" 1 || ct_failed "reload 1 applied"
closed() { [ "$(ka)" -gt "$k0" ]; }
if ct_wait_until 20 closed; then ct_pass "a reload closes the idle pooled TLS connection (nginx saw it go)"
else ct_failed "a reload closes the idle pooled TLS connection"; fi
ct_check "after a reload: 200" "$(code)" 200
ct_check "... on a new connection (the idle one of the old settings closed)" "$(conns)" 2

# ---- a bad CA file is refused, the running configuration stays ---------------------
conf "$D/missing-ca.pem" >"$D/bad.conf"
out=$("$CT_BIN/cachet" -t -c "$D/bad.conf" 2>&1)
rc=$?
ct_check_match "cachet -t: FILE:LINE: the missing CA" "$out" \
    "^$D/bad.conf:4: backends\\[0\\]\\.tls\\.ca: cannot read \"$D/missing-ca.pem\": No such file"
ct_check "... exit status non-zero" "$((rc != 0))" 1
cp "$D/bad.conf" "$D/c.conf"
kill -HUP "$(ct_pid proxy)"
refused() { grep -q 'SIGHUP: configuration refused' "$CT_TMP/proxy.err"; }
if ct_wait_until 30 refused; then ct_pass "reload with a missing CA refused"; else
    ct_failed "reload with a missing CA refused"; fi
ct_check "... the running configuration serves on" "$(code)" 200
conf "$D/ca.pem" >"$D/c.conf"

# ---- the origin rotates to another CA ------------------------------------------------
sie='/gen?size=10&cache-control=max-age%3D1%2C%20stale-if-error%3D600&t=sie'
ct_check "an object allowing stale-if-error stored over TLS" "$(code "$sie")" 200
ngconf "$D/ca2"
kill -HUP "$(ct_pid nginx)"
ct_wait_until 30 up "$D/ca2/ca.pem" "$A" origin.test || ct_failed "nginx rotated"
fails() { [ "$(code)" = 502 ]; }
if ct_wait_until 30 fails; then ct_pass "the origin's new CA is not trusted yet: 502"; else
    ct_failed "the origin's new CA is not trusted yet: 502" "$(code)"; fi
ct_check_match "... unable to get local issuer certificate" \
    "$(grep 'TLS handshake failed' "$CT_TMP/proxy.err" | tail -1)" 'unable to get local issuer certificate'
stale() { [[ "$(curl -s -m 30 -D - -o /dev/null -H 'Host: origin.test' "$P$sie" | tr -d '\r')" == *"detail=stale-if-error"* ]]; }
if ct_wait_until 20 stale; then ct_pass "... served stale (stale-if-error) while the origin's TLS fails"
else ct_failed "... served stale (stale-if-error) while the origin's TLS fails"; fi
cp "$D/ca2/ca.pem" "$D/ca.pem" # the CA file rotated in place, same name
ct_reload "$(ct_pid proxy)" 2 || ct_failed "reload 2 applied"
ct_check "after the reload with the rotated CA file: 200" "$(code)" 200

ct_stop nginx # TERM: its master stops its worker (lib.sh's KILL at exit would orphan it)
ct_done
