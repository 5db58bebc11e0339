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
    cat "$D/proxy.err" >>"$D/all.err" 2>/dev/null # every run's log, for the totals
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
ct_check_match "/stats carries the names under \"acme\" (the dashboard's table)" \
    "$(curl -s "http://127.0.0.1:$AP/stats" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["acme"]))')" '^2$'
ct_check_match "the dashboard page has the certificates table" \
    "$(curl -s "http://127.0.0.1:$AP/" | grep -c 'id="acme-card"')" '^1$'
ct_check_match "/metrics has each name's expiry" \
    "$(curl -s "http://127.0.0.1:$AP/metrics" | grep -c '^cachet_acme_cert_expiry_seconds{name="[ab].test"} [1-9]')" '^2$'
ct_check_match "cachet ctl certs lists them" \
    "$("$CT_BIN/cachet" ctl certs --admin "127.0.0.1:$AP" | grep -c '^[ab].test *valid *issued')" '^2$'
sa=$(serial a.test)

# ---- restart: the stored certificates, no new order (b.test's is corrupt) --------
stop proxy
printf -- '-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n' \
    >"$D/store1/b.test/cert.pem"
start_cachet alpn
ct_wait_until 20 grep -q 'acme a.test: using the stored certificate' "$D/proxy.err"
ct_check "restart: a.test served from storage at once (same serial)" "$(serial a.test)" "$sa"
ct_check "restart: no new order for a.test" \
    "$(grep -c 'acme a.test: .*ordering a certificate' "$D/proxy.err")" 0
verifies a.test && ct_pass "restart: curl verifies a.test" || ct_failed "restart: curl verifies a.test"
ct_check_match "restart: b.test's corrupt stored certificate is logged and ordered again" \
    "$(grep -c 'acme b.test: stored certificate .* is unreadable; ordering a new one' "$D/proxy.err")" '^1$'
ct_wait_until 60 eval '[ "$(issued b.test)" = 1 ]'
verifies b.test && ct_pass "restart: b.test served again" || ct_failed "restart: b.test served again"
stop proxy

# ---- a directory that does not answer, one whose TLS does not verify ---------------
read -r CLOSED < <(ct_free_ports 1)
sed -e "s|https://127.0.0.1:$PDIR/dir|https://127.0.0.1:$CLOSED/dir|" -e 's/store1/store0/' \
    "$D/alpn.conf" >"$D/down.conf"
start_cachet down
ct_wait_until 30 grep -q 'order failed' "$D/proxy.err"
ct_check_match "an unreachable directory: logged, backed off, the placeholder kept" \
    "$(grep -m1 'acme a.test: order failed' "$D/proxy.err")" \
    "while reading the directory: no answer from the CA: cannot connect to 127.0.0.1:$CLOSED; attempt 1 failed, next in 60s\$"
stop proxy
sed -e "s|$D/ca.crt|$D/root.pem|" -e 's/store1/store0/' "$D/alpn.conf" >"$D/untrusted.conf"
start_cachet untrusted
ct_wait_until 30 grep -q 'order failed' "$D/proxy.err"
ct_check_match "a directory whose certificate does not verify is refused" \
    "$(grep -m1 'acme a.test: order failed' "$D/proxy.err")" \
    "no answer from the CA: TLS: the CA's certificate does not verify: unable to get local issuer certificate"
stop proxy

# ---- HTTP-01 for two names; a 40 s certificate renewed live ----------------------
stop pebble
start_pebble 40
conf http '["http-01"]' store2
start_cachet http
ct_wait_until 60 eval '[ "$(issued a.test)" -ge 1 ] && [ "$(issued b.test)" -ge 1 ]'
ct_check "a.test and b.test issued by HTTP-01" "$(issued a.test)$(issued b.test)" 11
ct_check_match "HTTP-01 challenges were answered on the http listener" \
    "$(grep -c 'ACME HTTP-01 challenge answered' "$D/proxy.err")" '^[1-9]'
verifies a.test && ct_pass "curl verifies a.test (HTTP-01) with pebble's root" ||
    ct_failed "curl verifies a.test (HTTP-01) with pebble's root"
verifies b.test && ct_pass "curl verifies b.test (HTTP-01) with pebble's root" ||
    ct_failed "curl verifies b.test (HTTP-01) with pebble's root"
ct_check "an unknown token is not answered by ACME (routed as any request)" \
    "$(curl -s -o /dev/null -w '%{http_code}' \
        "http://127.0.0.1:$HP/.well-known/acme-challenge/AAAAAAAAAAAAAAAAAAAAAAAAAAAA")" 404
# a client keeps a connection open across the renewal (a third of 40 s left)
s1=$(serial a.test)
python3 - "$SP" "$D/root.pem" "$D/held" >"$D/held.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
port, ca, flag = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="a.test")
print("serial", "%X" % int(s.getpeercert()["serialNumber"], 16), flush=True)
buf = b""
def get():  # one keep-alive request on the held connection: its status line
    global buf
    s.sendall(b"GET /1k HTTP/1.1\r\nHost: a.test\r\n\r\n")
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536) or b"EOF\r\n\r\n"
    head, buf = buf.split(b"\r\n\r\n", 1)
    n = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    while n and len(buf) < n[0]:
        buf += s.recv(65536)
    buf = buf[n[0]:] if n else b""
    return head.split(b"\r\n")[0].decode()
print("before", get(), flush=True)
open(flag, "w").close()
while os.path.exists(flag):  # requests keep it from idling out meanwhile
    get()
    time.sleep(0.5)
print("after", get(), flush=True)
PY
held=$!
ct_wait_until 20 test -e "$D/held"
ct_wait_until 60 eval '[ "$(issued a.test)" -ge 2 ]'
ct_check_match "a.test renewed before expiry (second certificate)" "$(issued a.test)" '^[2-9]'
ct_check_match "the renewal is logged as one, with the current certificate's time left" \
    "$(grep -m1 'acme a.test: renewing' "$D/proxy.err")" 'the current one expires in [0-9]+ s\)$'
s2=$(serial a.test)
[ -n "$s2" ] && [ "$s2" != "$s1" ] && ct_pass "new handshakes get the renewed certificate" ||
    ct_failed "new handshakes get the renewed certificate" "before $s1 after $s2"
rm -f "$D/held"
wait "$held"
held_serial=$(sed -n 's/^serial //p' "$D/held.out")
s1_hex=${s1#serial=}
ct_check "the connection open across the renewal kept its certificate" \
    "$held_serial" "$(echo "$s1_hex" | sed 's/^0*//')"
ct_check "... and is still served" "$(sed -n 's/^after //p' "$D/held.out")" "HTTP/1.1 200 OK"
ct_check_match "the renewal is logged with its next one" \
    "$(grep 'acme a.test: certificate issued' "$D/proxy.err" | tail -1)" 'renewal in [0-9]+s$'
stop proxy

# ---- a name that cannot validate: backoff, the other name unaffected -------------
curl -s -X POST -d '{"host":"bad.test","addresses":["127.0.0.2"]}' \
    "http://127.0.0.1:$PDNSM/add-a" >/dev/null
sed -e 's/"b.test"/"bad.test"/' "$D/http.conf" >"$D/bad.conf"
sed -i -e 's/store2/store3/' -e 's/\["http-01"\]/["tls-alpn-01"]/' "$D/bad.conf"
start_cachet bad
ct_wait_until 60 grep -q 'acme bad.test: order failed' "$D/proxy.err"
ct_check_match "bad.test's failure is logged with pebble's problem and the backoff" \
    "$(grep 'acme bad.test: order failed' "$D/proxy.err" | head -1)" \
    'problem urn:ietf:params:acme:error:[a-zA-Z]+: .*; attempt 1 failed, next in 60s$'
ct_wait_until 60 eval '[ "$(issued a.test)" -ge 1 ]'
verifies a.test && ct_pass "a.test issued and served meanwhile" ||
    ct_failed "a.test issued and served meanwhile"
certs=$(curl -s "http://127.0.0.1:$AP/certs")
ct_check_match "/certs: bad.test failed, waiting, next attempt planned" \
    "$(echo "$certs" | python3 -c 'import json,sys,time
for c in json.load(sys.stdin):
    if c["name"] == "bad.test":
        print(c["outcome"], c["state"], c["failures"], c["next"] > time.time() + 30, bool(c["detail"]))')" \
    '^failed waiting 1 True True$'
cat "$D/proxy.err" >>"$D/all.err"
ct_check_match "badNonce (pebble rejecting 30 % of good nonces) retried, every order done" \
    "$(grep -c 'refused the nonce (badNonce)' "$D/all.err")" '^[1-9]'

# ---- reload: bad.test replaced by c.test; a.test untouched ---------------------------
sed -i 's/"bad.test"/"c.test"/' "$D/bad.conf"
ct_reload "$(ct_pid proxy)" 1 || ct_failed "reload" "$(tail -3 "$D/proxy.err")"
ct_wait_until 60 eval '[ "$(issued c.test)" -ge 1 ]'
verifies c.test && ct_pass "reload: c.test added, ordered and served" ||
    ct_failed "reload: c.test added, ordered and served" "$(grep 'c.test' "$D/proxy.err" | tail -3)"
ct_check_match "reload: bad.test's retries stop" \
    "$(grep -c 'acme bad.test: no longer configured' "$D/proxy.err")" '^1$'
ct_check "reload: a.test keeps its job (not started again)" \
    "$(grep -c 'acme a.test: certificates from' "$D/proxy.err")" 1
stop proxy

cat "$D/proxy.err" >>"$D/all.err"
# under ASan/UBSan (build-san) every run's exit report lands in its log
ct_check "no sanitizer report in any run's log" "$(grep -c 'Sanitizer' "$D/all.err")" 0

ct_done
