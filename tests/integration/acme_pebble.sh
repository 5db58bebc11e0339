#!/usr/bin/env bash
# ACME (issue 45) against pebble, Let's Encrypt's test CA, all on loopback:
# pebble's own HTTPS certificate is made here (Debian's package ships none),
# pebble-challtestsrv answers every name with 127.0.0.1, pebble's VA dials
# cachet's listeners (httpPort/tlsPort). Two names are obtained by
# TLS-ALPN-01, then (fresh storage) two by HTTP-01; curl verifies each
# against pebble's issuing root (management /roots/0); a restart reuses the
# stored certificates without a new order; a short-lived certificate is
# renewed and swapped while a connection stays open; a name that cannot
# validate is logged with pebble's problem and retried with backoff while
# the other one works. PEBBLE_WFE_NONCEREJECT makes pebble reject many good
# nonces throughout (badNonce retried).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v pebble >/dev/null && command -v pebble-challtestsrv >/dev/null || {
    echo "skip: pebble not installed"
    exit 77
}
D=$CT_TMP
ossl() { openssl "$@" 2>>"$D/openssl.log"; }
# pebble's HTTPS: a CA and a leaf for localhost/127.0.0.1
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$D/ca.key" -out "$D/ca.crt" -subj "/CN=pebble test CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$D/pebble.key" \
    -out "$D/pebble.csr" -subj "/CN=localhost"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$D/pebble.ext"
ossl x509 -req -in "$D/pebble.csr" -CA "$D/ca.crt" -CAkey "$D/ca.key" -CAcreateserial \
    -days 2 -extfile "$D/pebble.ext" -out "$D/pebble.crt"

read -r PDIR PMGMT PDNS PDNSM HP SP < <(ct_free_ports 6)
ct_start challtestsrv pebble-challtestsrv -defaultIPv4 127.0.0.1 -defaultIPv6 "" \
    -dns01 "127.0.0.1:$PDNS" -http01 "" -https01 "" -tlsalpn01 "" -management "127.0.0.1:$PDNSM"

# start_pebble VALIDITY_S [ENV...]: pebble on PDIR/PMGMT, validating on HP/SP
start_pebble() {
    local validity=$1
    shift
    cat >"$D/pebble.json" <<EOF
{ "pebble": { "listenAddress": "127.0.0.1:$PDIR", "managementListenAddress": "127.0.0.1:$PMGMT",
  "certificate": "$D/pebble.crt", "privateKey": "$D/pebble.key", "httpPort": $HP, "tlsPort": $SP,
  "ocspResponderURL": "", "externalAccountBindingRequired": false,
  "certificateValidityPeriod": $validity } }
EOF
    : >"$D/pebble.log"
    ct_start pebble env PEBBLE_VA_NOSLEEP=1 PEBBLE_AUTHZREUSE=0 PEBBLE_WFE_NONCEREJECT=30 "$@" \
        pebble -config "$D/pebble.json" -dnsserver "127.0.0.1:$PDNS"
    ct_wait_until 30 curl -sf --cacert "$D/ca.crt" "https://127.0.0.1:$PDIR/dir" -o /dev/null ||
        { ct_failed "pebble starts" "$(cat "$D/pebble.err")"; exit 1; }
    curl -sf --cacert "$D/ca.crt" "https://127.0.0.1:$PMGMT/roots/0" -o "$D/root.pem"
}
stop() { kill "$(ct_pid "$1")" 2>/dev/null; wait "$(ct_pid "$1")" 2>/dev/null; }

ct_start_origin
# conf NAME CHALLENGES STORAGE [extra acme settings]
conf() {
    cat >"$D/$1.conf" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:$HP"; },
           { kind = "https"; address = "127.0.0.1:$SP";
             tls = { acme = { directory = "https://127.0.0.1:$PDIR/dir"; directory_ca = "$D/ca.crt";
                              email = "ops@a.test"; names = ["a.test", "b.test"];
                              challenges = $2; storage = "$D/$3"; ${4:-} }; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
admin = { listen = "127.0.0.1:0"; };
EOF
}
# start_cachet CONF: runs as "proxy"; AP = its admin port
start_cachet() {
    ct_start proxy "$CT_BIN/cachet" -c "$D/$1.conf"
    ct_wait_listen proxy https >/dev/null || { ct_failed "cachet starts"; exit 1; }
    AP=$(ct_wait_listen proxy admin)
}
# serial NAME: the serial of the certificate served for NAME
serial() {
    timeout 10 openssl s_client -connect "127.0.0.1:$SP" -servername "$1" </dev/null 2>/dev/null |
        openssl x509 -noout -serial 2>/dev/null
}
verifies() { # NAME: curl trusts cachet's certificate for NAME with pebble's root
    curl -sf --cacert "$D/root.pem" --resolve "$1:$SP:127.0.0.1" "https://$1:$SP/1k" \
        -o /dev/null
}
issued() { grep -c "acme $1: certificate issued and installed" "$D/proxy.err"; }

# ---- TLS-ALPN-01 for two names ------------------------------------------------
start_pebble 3600
conf alpn '["tls-alpn-01"]' store1
start_cachet alpn
ct_check_match "before the first certificate: the self-signed placeholder is logged once" \
    "$(grep -c 'ACME: until the CA issues them' "$D/proxy.err")" '^1$'
ct_wait_until 60 eval '[ "$(issued a.test)" = 1 ] && [ "$(issued b.test)" = 1 ]'
ct_check "a.test and b.test issued by TLS-ALPN-01" "$(issued a.test)$(issued b.test)" 11
ct_check_match "TLS-ALPN-01 validation handshakes were answered" \
    "$(grep -c 'ACME TLS-ALPN-01 validation handshake answered' "$D/proxy.err")" '^[1-9]'
verifies a.test && ct_pass "curl verifies a.test with pebble's root" ||
    ct_failed "curl verifies a.test with pebble's root" "$(tail -5 "$D/proxy.err")"
verifies b.test && ct_pass "curl verifies b.test with pebble's root" ||
    ct_failed "curl verifies b.test with pebble's root"
ct_check_match "a normal client of a.test is undisturbed (h2 by ALPN)" \
    "$(curl -s --http2 --cacert "$D/root.pem" --resolve "a.test:$SP:127.0.0.1" \
        -o /dev/null -w '%{http_version} %{http_code}' "https://a.test:$SP/1k")" '^2 200$'
ct_check "storage: the account key is 0600" "$(stat -c %a "$D/store1/account.key")" 600
ct_check "storage: a.test's key is 0600" "$(stat -c %a "$D/store1/a.test/key.pem")" 600
certs=$(curl -s "http://127.0.0.1:$AP/certs")
ct_check_match "/certs shows both names issued by tls-alpn-01" \
    "$(echo "$certs" | python3 -c 'import json,sys; print(" ".join(c["name"]+":"+c["outcome"]+":"+c["challenge"] for c in json.load(sys.stdin)))')" \
    '^a.test:issued:tls-alpn-01 b.test:issued:tls-alpn-01$'
ct_check_match "/metrics has each name's expiry" \
    "$(curl -s "http://127.0.0.1:$AP/metrics" | grep -c '^cachet_acme_cert_expiry_seconds{name="[ab].test"} [1-9]')" '^2$'
ct_check_match "cachet ctl certs lists them" \
    "$("$CT_BIN/cachet" ctl certs --admin "127.0.0.1:$AP" | grep -c '^[ab].test *valid *issued')" '^2$'
sa=$(serial a.test)

# ---- restart: the stored certificates, no new order ------------------------------
stop proxy
orders_before=$(grep -c 'ordering a certificate' "$D/proxy.err")
start_cachet alpn
ct_wait_until 20 grep -q 'acme b.test: using the stored certificate' "$D/proxy.err"
ct_check "restart: a.test served from storage at once (same serial)" "$(serial a.test)" "$sa"
ct_check "restart: no new order" "$(grep -c 'ordering a certificate' "$D/proxy.err")" 0
verifies a.test && ct_pass "restart: curl verifies a.test" || ct_failed "restart: curl verifies a.test"
stop proxy

ct_done
