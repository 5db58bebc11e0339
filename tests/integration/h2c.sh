#!/usr/bin/env bash
# HTTP/2 over cleartext with prior knowledge (listen[].h2c, RFC 9113 §3.3;
# issue 14): on a listener that enables it, a client that opens with the
# connection preface speaks HTTP/2 (curl --http2-prior-knowledge, nghttp,
# h2load) and everything else HTTP/1.1 on the same port; a listener without
# it (the default) answers the preface as the HTTP/1.1 request it is not.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; h2c = true; },
           { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "16M"; };
limits = { http2 = { max_concurrent_streams = 7; stream_window = "32K"; }; };
CONF
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/cachet.conf" --admin 127.0.0.1:0
APORT=$(ct_wait_listen proxy admin) || exit 1
two_http() { [ "$(grep -c '^listening on http ' "$CT_TMP/proxy.out")" -eq 2 ]; }
ct_wait_until 30 two_http
H2C=$(grep '^listening on http ' "$CT_TMP/proxy.out" | sed -n 1p | sed 's/.*://')
PLAIN=$(grep '^listening on http ' "$CT_TMP/proxy.out" | sed -n 2p | sed 's/.*://')
MA='cache-control=max-age%3D60'
hdr() { tr -d '\r' <<<"$2" | sed -n "s/^$1: //Ip" | head -1; }
prom() { curl -s "http://127.0.0.1:$APORT/metrics" | awk -v k="$1" '$1 == k {print $2}'; }

ct_check "cachet -t accepts h2c on an http listener" \
    "$("$CT_BIN/cachet" -t -c "$CT_TMP/cachet.conf" >/dev/null 2>&1; echo $?)" 0
printf 'listen = ( { kind = "https"; address = "127.0.0.1:0";\n  h2c = true; tls = { self_signed = true; }; } );\n' \
    >"$CT_TMP/bad.conf"
ct_check_match "h2c on an https listener: FILE:LINE and why" \
    "$("$CT_BIN/cachet" -t -c "$CT_TMP/bad.conf" 2>&1)" 'bad\.conf:2: .*https listeners offer h2 by ALPN'

# ---- prior knowledge: HTTP/2, through the cache like any request.
h1=$(curl -s --http2-prior-knowledge -D - -o "$CT_TMP/b1" "http://127.0.0.1:$H2C/bytes/5000?$MA")
h2=$(curl -s --http2-prior-knowledge -D - -o "$CT_TMP/b2" "http://127.0.0.1:$H2C/bytes/5000?$MA")
ct_check "prior knowledge: HTTP/2 200" "$(head -1 <<<"$h1" | tr -d '\r' | sed 's/ *$//')" "HTTP/2 200"
ct_check "prior knowledge: a miss stored" "$(hdr Cache-Status "$h1")" "cachet; fwd=uri-miss; stored"
ct_check_match "prior knowledge: then a hit" "$(hdr Cache-Status "$h2")" '^cachet; hit'
ct_check "the origin saw one request" "$(ct_origin_total "$OPORT")" 1
ct_check "prior knowledge: the origin's bytes" "$(md5sum <"$CT_TMP/b2")" \
    "$(curl -s "$O/bytes/5000" | md5sum)"
out=$(nghttp -nv "http://127.0.0.1:$H2C/bytes/100?$MA" 2>&1)
ct_check_match "nghttp: our SETTINGS" "$out" 'recv SETTINGS frame'
ct_check_match "nghttp: :status 200" "$out" ':status: 200'
ct_check_match "limits.http2.max_concurrent_streams announced" "$out" \
    'SETTINGS_MAX_CONCURRENT_STREAMS\(0x03\):7'
ct_check_match "limits.http2.stream_window announced" "$out" 'SETTINGS_INITIAL_WINDOW_SIZE\(0x04\):32768'
# A reload's limits hold for the connections that come after it.
sed -i 's/max_concurrent_streams = 7/max_concurrent_streams = 9/' "$CT_TMP/cachet.conf"
kill -HUP "$(ct_pid proxy)"
ct_wait_until 30 grep -q 'SIGHUP: configuration' "$CT_TMP/proxy.err"
settings_now() { nghttp -nv "http://127.0.0.1:$H2C/bytes/10" 2>&1 | grep -q 'SETTINGS_MAX_CONCURRENT_STREAMS(0x03):9'; }
ct_check "after SIGHUP: the new max_concurrent_streams" "$(ct_wait_until 30 settings_now && echo 9)" 9
out=$(h2load -n 200 -c 4 -m 5 "http://127.0.0.1:$H2C/bytes/100?$MA" 2>&1)
ct_check_match "h2load over h2c: 200 requests, 200 succeeded" "$out" \
    'requests: 200 total, 200 started, 200 done, 200 succeeded'
ct_check_match "h2load: the protocol was h2c" "$out" 'Application protocol: h2c'

# ---- the same port speaks HTTP/1.1 to everyone else.
h=$(curl -s --http1.1 -D - -o /dev/null "http://127.0.0.1:$H2C/bytes/5000?$MA")
ct_check "HTTP/1.1 on the h2c port" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 200 OK"
ct_check_match "HTTP/1.1 on the h2c port: the same object" "$(hdr Cache-Status "$h")" '^cachet; hit'
# A request that starts like the preface and then differs is HTTP/1.1's to judge.
exec 3<>"/dev/tcp/127.0.0.1/$H2C"
printf 'PRI * HTTP/1.1\r\nHost: a\r\n\r\n' >&3
resp=$(timeout 20 head -1 <&3 | tr -d '\r')
exec 3>&-
ct_check_match "PRI * HTTP/1.1: an HTTP/1.1 answer" "$resp" '^HTTP/1\.1 4[0-9][0-9] '
ct_check "an h2c connection is counted as h2c while open" "$(
    exec 4<>"/dev/tcp/127.0.0.1/$H2C"
    printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0' >&4
    one_h2() { [ "$(prom 'cachet_connections_open_by_proto{proto="h2c"}')" = 1 ]; }
    ct_wait_until 30 one_h2 && echo 1
    exec 4>&-)" 1

# ---- without h2c (the default), the preface is not HTTP/2.
curl -s --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$PLAIN/bytes/10" 2>/dev/null
ct_check "no h2c: prior knowledge fails" "$([ $? -ne 0 ] && echo failed)" failed
exec 3<>"/dev/tcp/127.0.0.1/$PLAIN"
printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' >&3
resp=$(timeout 20 head -1 <&3 | tr -d '\r')
exec 3>&-
ct_check_match "no h2c: the preface gets an HTTP/1.1 error" "$resp" '^HTTP/1\.1 [45][0-9][0-9] '
h=$(curl -s --http1.1 -D - -o /dev/null "http://127.0.0.1:$PLAIN/bytes/5000?$MA")
ct_check "no h2c: HTTP/1.1 as ever" "$(head -1 <<<"$h" | tr -d '\r')" "HTTP/1.1 200 OK"
# SIGHUP turns h2c on for the second listener: same port, prior knowledge now.
sed -i 's/{ kind = "http"; address = "127.0.0.1:0"; } );/{ kind = "http"; address = "127.0.0.1:0"; h2c = true; } );/' \
    "$CT_TMP/cachet.conf"
kill -HUP "$(ct_pid proxy)"
h2c_now() { curl -s --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$PLAIN/bytes/10" 2>/dev/null; }
ct_check "SIGHUP with h2c = true: prior knowledge on the same port" \
    "$(ct_wait_until 30 h2c_now && echo h2)" h2
ct_stop proxy
ct_check "cachet exits 0 after draining" "$?" 0
ct_done
