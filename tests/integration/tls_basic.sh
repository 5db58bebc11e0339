#!/usr/bin/env bash
# HTTPS on the embedded default (self-signed EC P-256 for localhost): TLS 1.3
# and 1.2 requests with curl, 1.0/1.1 refused, ALPN, resumption by ticket and
# by session id across two workers, X-Forwarded-Proto, and bad input on the
# TLS port (garbage, truncated ClientHello, a silent client) while other
# clients are served.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<EOF
workers = 2;
listen = ( { kind = "https"; address = "127.0.0.1:0";
             tls = { self_signed = true; handshake_timeout = "1s"; }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
logs = { level = "info"; };
EOF
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/cachet.conf" --admin 127.0.0.1:0
SPORT=$(ct_wait_listen proxy https) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
# tls_stat full|resumed: the handshake counter from /stats.
tls_stat() {
    curl -s "http://127.0.0.1:$APORT/stats" | sed -n "s/.*\"handshakes_$1\": *\([0-9]*\).*/\1/p"
}
S="https://127.0.0.1:$SPORT"
CONNECT="127.0.0.1:$SPORT"

# s_client ARGS...: one HTTP/1.1 request with Connection: close, all output.
s_client() {
    printf 'GET /1k HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' |
        timeout 10 openssl s_client -connect "$CONNECT" -ign_eof "$@" 2>&1
}

# ---- the self-signed certificate ----------------------------------------
ct_check_match "startup log says a self-signed certificate was generated" \
    "$(cat "$CT_TMP/proxy.err")" 'generated a self-signed EC P-256 certificate .*SHA-256 [0-9A-F:]{95}'
cert=$(s_client -servername localhost | openssl x509 -noout -subject -ext subjectAltName 2>&1)
ct_check_match "certificate subject is CN=localhost" "$cert" 'subject=CN ?= ?localhost'
ct_check_match "certificate SAN has DNS:localhost and IP 127.0.0.1" "$cert" \
    'DNS:localhost, IP Address:127\.0\.0\.1'
ct_check_match "certificate key is EC P-256" "$(s_client)" 'Server public key is 256 bit'

# ---- versions ----------------------------------------------------------------
ct_check "TLS 1.3 request (curl)" \
    "$(curl -sk --tlsv1.3 -o /dev/null -w '%{http_code} %{size_download}' "$S/1k")" "200 1024"
ct_check "TLS 1.2 request (curl)" \
    "$(curl -sk --tlsv1.2 --tls-max 1.2 -o /dev/null -w '%{http_code} %{size_download}' "$S/1k")" \
    "200 1024"
ct_check_match "s_client TLS 1.3: protocol and AEAD suite" "$(s_client -tls1_3)" \
    'New, TLSv1.3, Cipher is TLS_(AES_(128|256)_GCM_SHA(256|384)|CHACHA20_POLY1305_SHA256)'
ct_check_match "s_client TLS 1.2: ECDHE-ECDSA AEAD suite" "$(s_client -tls1_2)" \
    'New, TLSv1.2, Cipher is ECDHE-ECDSA-(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305)'
out=$(s_client -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0')
ct_check_match "TLS 1.1 refused (protocol_version alert)" "$out" 'alert protocol version|no protocols available'
out=$(s_client -tls1 -cipher 'DEFAULT:@SECLEVEL=0')
ct_check_match "TLS 1.0 refused" "$out" 'alert protocol version|no protocols available'
ct_check_match "ECDHE group is X25519 by default" "$(s_client -tls1_3)" 'Server Temp Key: X25519'
ct_check_match "P-256 accepted" "$(s_client -tls1_3 -groups P-256)" 'Server Temp Key: ECDH, prime256v1'
ct_check_match "P-384-only client refused" "$(s_client -tls1_3 -groups P-384)" \
    'handshake failure|no suitable key share|alert'
ct_check_match "no compression" "$(s_client -tls1_2)" 'Compression: NONE'
ct_check_match "secure renegotiation only (TLS 1.2)" "$(s_client -tls1_2)" \
    'Secure Renegotiation IS supported'

# ---- ALPN ----------------------------------------------------------------------
# HTTP/2 is on by default (listen[].tls.http2; h2_conn.sh has the rest).
ct_check_match "ALPN h2,http/1.1 -> h2" "$(s_client -alpn h2,http/1.1)" 'ALPN protocol: h2'
ct_check_match "ALPN http/1.1 -> http/1.1" "$(s_client -alpn http/1.1)" 'ALPN protocol: http/1.1'
ct_check_match "ALPN h3 only -> no ALPN, handshake still completes" "$(s_client -alpn h3)" \
    'No ALPN negotiated'
ct_check_match "curl negotiates h2" \
    "$(curl -skv -o /dev/null "$S/1k" 2>&1)" 'ALPN: server accepted h2|ALPN, server accepted to use h2'
ct_check_match "curl --http1.1 negotiates http/1.1" \
    "$(curl -skv --http1.1 -o /dev/null "$S/1k" 2>&1)" 'ALPN: server accepted http/1.1|ALPN, server accepted to use http/1.1'

# ---- X-Forwarded-Proto ------------------------------------------------------------
ct_check_match "origin sees X-Forwarded-Proto: https" "$(curl -sk "$S/echo")" \
    '\["X-Forwarded-Proto", *"https"\]'

# ---- resumption (tickets: TLS 1.3 and 1.2; session id: TLS 1.2 without ticket) -------
# Two workers share one SSL_CTX and one ticket-key store: the 8 reconnections
# land on either worker (SO_REUSEPORT hashes the client port), all resume.
resume_all() { # DESC ARGS...
    local desc=$1 i reused=0
    shift
    s_client "$@" -sess_out "$CT_TMP/sess" >/dev/null
    for i in 1 2 3 4 5 6 7 8; do
        if s_client "$@" -sess_in "$CT_TMP/sess" | grep -q '^Reused,'; then
            reused=$((reused + 1))
        fi
    done
    ct_check "$desc: 8 of 8 reconnections resumed" "$reused" 8
}
r0=$(tls_stat resumed)
f0=$(tls_stat full)
resume_all "TLS 1.3 ticket" -tls1_3
resume_all "TLS 1.2 ticket" -tls1_2
ct_check "/stats counts the 16 resumed handshakes" "$(($(tls_stat resumed) - r0))" 16
ct_check "/stats counts the 2 full handshakes that made the tickets" "$(($(tls_stat full) - f0))" 2
# Session ids survive only because the proxy ends connections with
# ct_tls_close_notify(): OpenSSL drops a session closed without one.
resume_all "TLS 1.2 session id (no ticket)" -tls1_2 -no_ticket
# A client that completes the handshake and sends nothing (a browser's
# unused preconnect) still gets its TLS 1.3 ticket (issue 40, bug 11): read
# for up to 5 s without writing, then resume with that session.
tick=$(python3 -c 'import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.minimum_version = ssl.TLSVersion.TLSv1_3
got = 0
for i in range(3):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
    s.settimeout(0.1)
    for _ in range(50):  # the ticket is read by a read call, whatever it returns
        try:
            s.recv(1)
        except (socket.timeout, ssl.SSLError, OSError):
            pass
        if s.session is not None and s.session.has_ticket:
            break
    sess = s.session
    s.close()
    if sess is None or not sess.has_ticket:
        continue
    r = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), session=sess)
    got += r.session_reused
    r.close()
print(got)' "$SPORT" 2>&1)
ct_check "no request sent: a ticket all the same, and it resumes (3 of 3)" "$tick" 3
ct_check_match "a fresh connection is a full handshake" "$(s_client -tls1_3)" '^New, TLSv1.3|
New, TLSv1.3'

# ---- bad input on the TLS port ---------------------------------------------------------
# elapsed_close BYTES: send BYTES, then wait for the server to close; prints ms.
elapsed_close() {
    local start ms
    trap '' PIPE # the server may close while we still write: EPIPE, not death
    exec 3<>"/dev/tcp/127.0.0.1/$SPORT"
    start=$(date +%s%N)
    printf '%b' "$1" >&3 2>/dev/null
    timeout 5 cat <&3 >/dev/null 2>&1
    ms=$((($(date +%s%N) - start) / 1000000))
    exec 3<&-
    echo "$ms"
}
ms=$(elapsed_close '\x47\x00\xff\x13\x37garbage-bytes-that-are-no-tls-record\x00\x01\x02')
ct_check_match "garbage: closed at once (${ms} ms)" "$ms" '^[0-9]{1,3}$'
# Plain HTTP on the TLS port: closed at once (OpenSSL: "http request").
req='GET /1k HTTP/1.1\r\nHost: localhost\r\n\r\n'
ms=$(elapsed_close "$req")
ct_check_match "plain HTTP: closed at once (${ms} ms)" "$ms" '^[0-9]{1,3}$'
# ... answered like nginx's 497: a clear-text 400 saying to use https.
resp=$(trap '' PIPE; exec 3<>"/dev/tcp/127.0.0.1/$SPORT"; printf '%b' "$req" >&3; timeout 5 cat <&3)
ct_check_match "plain HTTP answered 400 telling to use https" "$resp" '^HTTP/1\.[01] 400 .*https'
# A TLS record header announcing a 512-byte ClientHello, then 6 bytes of it.
exec 4<>"/dev/tcp/127.0.0.1/$SPORT"
printf '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03' >&4
exec 5<>"/dev/tcp/127.0.0.1/$SPORT" # and one that never sends a byte
start=$(date +%s%N)
ct_check "served while a truncated and a silent handshake wait" \
    "$(curl -sk -o /dev/null -w '%{http_code}' "$S/1k")" 200
timeout 5 cat <&4 >/dev/null
timeout 5 cat <&5 >/dev/null
ms=$((($(date +%s%N) - start) / 1000000))
exec 4<&- 5<&-
ct_check_match "truncated/silent handshakes closed by the 1 s handshake timeout (${ms} ms)" \
    "$ms" '^(9[0-9][0-9]|1[0-9][0-9][0-9]|2[0-4][0-9][0-9])$'
ct_check "still serving after bad input" "$(curl -sk -o /dev/null -w '%{http_code}' "$S/1k")" 200

# Why each handshake failed, in words (issue 40, bug 4): never OpenSSL's
# "error:00000001:lib(0)::reason(1)" (the SSL_get_error value libevent
# queues first); at INFO (the client's fault) and rate-limited.
hs=$(grep 'TLS handshake failed' "$CT_TMP/proxy.err")
ct_check "no handshake failure logged as lib(0)" "$(grep -c 'lib(0)' <<<"$hs")" 0
ct_check_match "TLS 1.1 client: the reason in words" "$hs" 'TLS handshake failed: SSL routines: unsupported protocol'
ct_check_match "plain HTTP on the TLS port: the reason in words" "$hs" \
    'TLS handshake failed: SSL routines: http request \(plain HTTP on the TLS port'
# a client that does not trust our certificate says so with an alert
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=other \
    -keyout "$CT_TMP/other.key" -out "$CT_TMP/other.pem" 2>/dev/null
s_client -CAfile "$CT_TMP/other.pem" -verify_return_error >/dev/null
ct_wait_until 30 grep -q 'TLS handshake failed: .*alert' "$CT_TMP/proxy.err"
ct_check_match "a client that rejects our certificate: its alert" \
    "$(grep 'TLS handshake failed' "$CT_TMP/proxy.err")" 'TLS handshake failed: SSL routines: tlsv1 alert unknown ca'
ct_check "handshake failures at INFO, not ERR" \
    "$(grep 'TLS handshake failed' "$CT_TMP/proxy.err" | grep -vc ' INFO ')" 0
# 300 failed handshakes at once: the log keeps a few lines a second and says
# how many it left out
python3 -c 'import socket, sys
for i in range(300):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"\x47\x00\xff\x13\x37garbage")
    s.close()' "$SPORT"
# the count of the lines left out comes with the next one that is logged
garbage() { python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"\x47garbage")
s.recv(1)' "$SPORT" 2>/dev/null; grep -q 'client faults not logged' "$CT_TMP/proxy.err"; }
ct_wait_until 30 garbage
ct_check_match "a flood of failed handshakes is rate-limited" \
    "$(grep -c 'TLS handshake failed' "$CT_TMP/proxy.err")" '^([0-9]|[0-9][0-9]|1[0-9][0-9])$'
ct_check_match "... saying how many lines were left out" "$(cat "$CT_TMP/proxy.err")" \
    '\([0-9]+ more client faults not logged\)'
ct_check "still serving after the flood" "$(curl -sk -o /dev/null -w '%{http_code}' "$S/1k")" 200

ct_stop proxy
ct_check "no sanitizer report" "$(grep -cE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$CT_TMP/proxy.err")" 0
ct_done
