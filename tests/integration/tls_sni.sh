#!/usr/bin/env bash
# HTTPS with configured certificates: SNI picks the certificate (exact name,
# one-label wildcard, unknown -> default, no SNI -> default), an ECDSA and an
# RSA certificate for the same name (each client gets the one it supports),
# and client certificates (mTLS) accepted and refused. Certificates are made
# here with the openssl tool: a tiny CA, leaves signed by it.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

D=$CT_TMP
ossl() { openssl "$@" 2>>"$D/openssl.log"; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$D/ca.key" -out "$D/ca.crt" -subj "/CN=cachet test CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
# leaf NAME CN SAN KEYTYPE: NAME.crt / NAME.key signed by the CA.
leaf() {
    local newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
    [ "$4" = rsa ] && newkey=(-newkey rsa:2048)
    ossl req "${newkey[@]}" -nodes -keyout "$D/$1.key" -out "$D/$1.csr" -subj "/CN=$2"
    printf 'subjectAltName=%s\n' "$3" >"$D/$1.ext"
    ossl x509 -req -in "$D/$1.csr" -CA "$D/ca.crt" -CAkey "$D/ca.key" -CAcreateserial \
        -days 2 -extfile "$D/$1.ext" -out "$D/$1.crt"
}
leaf def "default.test" "DNS:default.test" ec
leaf a "a.test" "DNS:a.test,DNS:www.a.test" ec
leaf a_rsa "a.test rsa" "DNS:a.test,DNS:www.a.test" rsa
leaf wild "wild.test wildcard" "DNS:*.wild.test" ec
leaf alice "alice" "DNS:alice.client" ec
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$D/mallory.key" -out "$D/mallory.crt" -subj "/CN=mallory"
cat "$D/a.crt" "$D/ca.crt" >"$D/a_chain.crt" # leaf + chain in one file

ct_start_origin
cert() { # FILE KEY [extra]
    printf '{ cert = "%s"; key = "%s"; %s }' "$D/$1.crt" "$D/$2.key" "${3:-}"
}
cat >"$D/sni.conf" <<EOF
workers = 2;
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { certificates = (
    $(cert a_chain a), $(cert a_rsa a_rsa), $(cert wild wild),
    $(cert def def 'default = true;') ); }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
ct_start sni "$CT_BIN/cachet" -c "$D/sni.conf" --admin off
SPORT=$(ct_wait_listen sni https) || exit 1

# subject_of ARGS...: the CN of the certificate the server presents.
subject_of() {
    timeout 10 openssl s_client -connect "127.0.0.1:$SPORT" "$@" </dev/null 2>/dev/null |
        openssl x509 -noout -subject -nameopt multiline 2>/dev/null |
        sed -n 's/^ *commonName *= *//p'
}
ct_check "SNI a.test: exact name" "$(subject_of -servername a.test)" "a.test"
ct_check "SNI www.a.test: second SAN name" "$(subject_of -servername www.a.test)" "a.test"
ct_check "SNI A.TEST: names are case-insensitive" "$(subject_of -servername A.TEST)" "a.test"
ct_check "SNI x.wild.test: wildcard" "$(subject_of -servername x.wild.test)" "wild.test wildcard"
ct_check "SNI a.b.wild.test: wildcard covers one label only" \
    "$(subject_of -servername a.b.wild.test)" "default.test"
ct_check "SNI wild.test: wildcard does not cover the bare domain" \
    "$(subject_of -servername wild.test)" "default.test"
ct_check "SNI unknown.test: default certificate" "$(subject_of -servername unknown.test)" \
    "default.test"
ct_check "no SNI: default certificate" "$(subject_of -noservername)" "default.test"
ct_check "TLS 1.2 SNI wildcard" "$(subject_of -tls1_2 -servername q.wild.test)" "wild.test wildcard"

# ECDSA and RSA for a.test: by signature algorithms (1.3) or suites (1.2).
ct_check "TLS 1.3 ECDSA-capable client gets ECDSA" "$(subject_of -tls1_3 -servername a.test)" "a.test"
ct_check "TLS 1.3 RSA-PSS-only client gets RSA" \
    "$(subject_of -tls1_3 -servername a.test -sigalgs rsa_pss_rsae_sha256:rsa_pss_rsae_sha384)" \
    "a.test rsa"
ct_check "TLS 1.2 ECDHE-RSA-only client gets RSA" \
    "$(subject_of -tls1_2 -servername a.test -cipher ECDHE-RSA-AES128-GCM-SHA256)" "a.test rsa"
ct_check "TLS 1.2 ECDHE-ECDSA-only client gets ECDSA" \
    "$(subject_of -tls1_2 -servername a.test -cipher ECDHE-ECDSA-AES128-GCM-SHA256)" "a.test"
chain=$(timeout 10 openssl s_client -connect "127.0.0.1:$SPORT" -servername a.test -showcerts \
    </dev/null 2>/dev/null | grep -c 'BEGIN CERTIFICATE')
ct_check "the chain from the cert file is sent (leaf + CA)" "$chain" 2

# curl verifying against our CA, by name, through --resolve.
ct_check "curl verifies a.test against the CA" \
    "$(curl -s --cacert "$D/ca.crt" --resolve "a.test:$SPORT:127.0.0.1" \
        -o /dev/null -w '%{http_code} %{ssl_verify_result}' "https://a.test:$SPORT/1k")" "200 0"
ct_check "curl verifies x.wild.test" \
    "$(curl -s --cacert "$D/ca.crt" --resolve "x.wild.test:$SPORT:127.0.0.1" \
        -o /dev/null -w '%{http_code}' "https://x.wild.test:$SPORT/1k")" 200
ct_stop sni

# ---- mTLS: required ---------------------------------------------------------------
cat >"$D/mtls.conf" <<EOF
workers = 1;
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = {
    certificates = ( $(cert def def) );
    client_ca = "$D/ca.crt"; client_verify = "required";
    client_subject_header = "X-Client-Subject"; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
ct_start mtls "$CT_BIN/cachet" -c "$D/mtls.conf" --admin off
MPORT=$(ct_wait_listen mtls https) || exit 1
M="https://127.0.0.1:$MPORT"
ct_check "mTLS required: CA-signed client certificate accepted" \
    "$(curl -sk --cert "$D/alice.crt" --key "$D/alice.key" -o /dev/null -w '%{http_code}' "$M/1k")" 200
curl -sk -o /dev/null "$M/1k"
# (TLS 1.3 refuses the certificate after the client's Finished: curl sees
# the alert as a TLS error, 35/56, or over HTTP/2 as a framing error, 16.)
ct_check_match "mTLS required: no client certificate refused" "$?" '^(16|35|55|56)$'
curl -sk --cert "$D/mallory.crt" --key "$D/mallory.key" -o /dev/null "$M/1k"
ct_check_match "mTLS required: certificate from another CA refused" "$?" '^(16|35|55|56)$'
out=$(timeout 10 openssl s_client -connect "127.0.0.1:$MPORT" </dev/null 2>&1)
ct_check_match "CertificateRequest names our CA" "$out" 'Acceptable client certificate CA names
CN ?= ?cachet test CA'
# The verified subject goes to the origin in the configured header; a
# client-sent one never does.
out=$(curl -sk --cert "$D/alice.crt" --key "$D/alice.key" -H 'X-Client-Subject: forged' "$M/echo")
ct_check_match "origin gets the verified subject in X-Client-Subject" "$out" \
    '\["X-Client-Subject", *"CN=alice"\]'
ct_check "a client-sent X-Client-Subject does not reach the origin" "$(grep -c forged <<<"$out")" 0
ct_check "still serving after refusals" \
    "$(curl -sk --cert "$D/alice.crt" --key "$D/alice.key" -o /dev/null -w '%{http_code}' "$M/1k")" 200
ct_stop mtls

# ---- mTLS: optional ----------------------------------------------------------------
sed 's/"required"/"optional"/' "$D/mtls.conf" >"$D/mtls_opt.conf"
ct_start mtls_opt "$CT_BIN/cachet" -c "$D/mtls_opt.conf" --admin off
MPORT=$(ct_wait_listen mtls_opt https) || exit 1
M="https://127.0.0.1:$MPORT"
ct_check "mTLS optional: no client certificate accepted" \
    "$(curl -sk -o /dev/null -w '%{http_code}' "$M/1k")" 200
out=$(curl -sk -H 'X-Client-Subject: forged' "$M/echo")
ct_check "mTLS optional, no certificate: no X-Client-Subject reaches the origin" \
    "$(grep -c 'X-Client-Subject' <<<"$out")" 0
ct_check "mTLS optional: CA-signed client certificate accepted" \
    "$(curl -sk --cert "$D/alice.crt" --key "$D/alice.key" -o /dev/null -w '%{http_code}' "$M/1k")" 200
curl -sk --cert "$D/mallory.crt" --key "$D/mallory.key" -o /dev/null "$M/1k"
ct_check_match "mTLS optional: a certificate that does not verify is refused" "$?" '^(16|35|55|56)$'
ct_stop mtls_opt
ct_check "no sanitizer report from any instance" \
    "$(cat "$D"/sni.err "$D"/mtls.err "$D"/mtls_opt.err | grep -cE 'ERROR: (Address|Leak)Sanitizer|runtime error')" 0
ct_done
