#!/usr/bin/env bash
# SIGHUP reload: a client loop running across 5 reloads (HTTP and HTTPS,
# keep-alive and new connections) sees no failed request; a broken file is
# refused with FILE:LINE errors and the old configuration keeps serving; a
# listener added by a reload answers, a removed one stops, the admin listener
# moves; limits and the access log follow the new file; the cache survives.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin

CONF="$CT_TMP/cachet.conf"
write_conf() { # write_conf EXTRA_LISTENERS LOGS
    cat >"$CONF" <<EOF
workers = 2;
listen = (
    { kind = "http"; address = "127.0.0.1:0"; },
    { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; }$1
);
admin = { listen = "127.0.0.1:0"; };
backends = ( { name = "origin"; address = "127.0.0.1:$OPORT"; } );
logs = { level = "info"; $2 };
EOF
}
write_conf "" ""
ct_start_proxy -c "$CONF"
SPORT=$(ct_wait_listen proxy https) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
PID=$(ct_pid proxy)
P="http://127.0.0.1:$PPORT"

# reload N: send SIGHUP and wait until generation N is in use by every worker.
reload() { ct_reload "$PID" "$1"; }

# A cached object: it must survive the reloads.
CU="$P/gen?size=10&cache-control=max-age%3D300&k=reload"
curl -s -o /dev/null "$CU"
ct_origin_reset "$OPORT"

# ---- no failed request across 5 reloads ------------------------------------------------
STOP="$CT_TMP/stop"
loop() { # loop OUT ARGS...: one client, requests until $STOP exists
    local out=$1
    shift
    for ((i = 0; i < 100000; i++)); do
        [ -e "$STOP" ] && break
        curl -s -o /dev/null -w '%{http_code}\n' "$@" >>"$out"
    done
}
loop "$CT_TMP/codes.http" "$P/json" &
L1=$!
loop "$CT_TMP/codes.https" -k "https://127.0.0.1:$SPORT/json" &
L2=$!
# keep-alive: many requests per connection (curl reuses it within one command)
loop "$CT_TMP/codes.ka" -o /dev/null -o /dev/null -o /dev/null "$P/json" "$P/json" "$P/json" "$P/json" &
L3=$!
# Each reload waits until every client has made two more requests since the
# last one, so requests surely overlap every reload however slow the machine
# (a fixed pause made 6 requests in all on a loaded machine).
lines() { local f n=0; for f in http https ka; do n=$(wc -l <"$CT_TMP/codes.$f" 2>/dev/null || echo 0); [ "$n" -ge "$1" ] || return 1; done; }
ok=1
for n in 1 2 3 4 5; do
    ct_wait_until 120 lines $((2 * n)) || ok=0
    reload $n || ok=0
done
ct_wait_until 120 lines 12 || ok=0
touch "$STOP"
wait $L1 $L2 $L3
ct_check "5 reloads completed" "$ok" 1
for f in http https ka; do
    total=$(wc -l <"$CT_TMP/codes.$f")
    good=$(grep -c '^200$' "$CT_TMP/codes.$f")
    ct_check_match "$f: requests were made during the reloads" "$total" '^[1-9][0-9]+$'
    ct_check "$f: no failed request across 5 reloads ($total made)" "$good" "$total"
done
ct_check "HTTPS port kept across reloads" \
    "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$SPORT/json")" 200
ct_check_match "the cache survived (hit, no origin fetch)" \
    "$(curl -s -D - -o /dev/null "$CU" | tr -d '\r' | grep '^Cache-Status')" '; hit'
ct_check "generations logged" "$(grep -c 'in use by every worker' "$CT_TMP/proxy.err")" 5

# ---- a broken file is refused, the old configuration serves --------------------------------
cp "$CONF" "$CONF.good"
printf 'workers = 2;\nlisten = ( { kind = "http"; address = "127.0.0.1:0"; } );\nbogus_key = 1;\ncache = { size = "lots"; };\n' >"$CONF"
kill -HUP "$PID"
ct_wait_until 60 grep -q 'configuration refused' "$CT_TMP/proxy.err"
errs=$(grep 'SIGHUP: .*cachet.conf:[0-9]' "$CT_TMP/proxy.err")
ct_check_match "error with FILE:LINE (unknown key)" "$errs" 'cachet\.conf:3: bogus_key'
ct_check_match "error with FILE:LINE (bad size)" "$errs" 'cachet\.conf:4: cache\.size'
ct_check_match "refusal logged" "$(cat "$CT_TMP/proxy.err")" 'SIGHUP: configuration refused; the running one stays'
ct_check "old configuration still serves HTTP" "$(curl -s -o /dev/null -w '%{http_code}' "$P/json")" 200
ct_check "old configuration still serves HTTPS" \
    "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$SPORT/json")" 200
# a backend address that does not resolve: refused too (ops_reload_backends.sh
# covers backends that do change)
sed "s/127.0.0.1:$OPORT/no-such-host.invalid:80/" "$CONF.good" >"$CONF"
kill -HUP "$PID"
ct_wait_until 60 grep -q 'cannot resolve no-such-host.invalid' "$CT_TMP/proxy.err"
ct_check_match "unresolvable backend refused" "$(cat "$CT_TMP/proxy.err")" 'SIGHUP: backend origin: cannot resolve no-such-host.invalid'
ct_check "still serving" "$(curl -s -o /dev/null -w '%{http_code}' "$P/json")" 200
# a listener on a port someone holds (the admin listener's): refused before any change
write_conf ',
    { kind = "http"; address = "127.0.0.1:'"$APORT"'"; }' ""
kill -HUP "$PID"
ct_wait_until 60 grep -q "cannot listen on 127.0.0.1:$APORT" "$CT_TMP/proxy.err"
ct_check_match "busy port refused" "$(cat "$CT_TMP/proxy.err")" "SIGHUP: cannot listen on 127.0.0.1:$APORT: address in use"
ct_check "admin still answers" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$APORT/stats")" 200
ct_check "generation count unchanged" "$(grep -c 'in use by every worker' "$CT_TMP/proxy.err")" 5
ct_check "/stats: reloads by result, the last one refused" \
    "$(curl -s "http://127.0.0.1:$APORT/stats" | grep -o '"reload":{[^}]*}' | sed 's/"last_time":[0-9.]*/T/')" \
    '"reload":{"generation":5,"ok":5,"failed":3,T,"last_ok":false}'
ct_check_match "/metrics: reloads by result" "$(curl -s "http://127.0.0.1:$APORT/metrics")" \
    'cachet_reload_generation 5.*cachet_reloads_total\{result="ok"\} 5.cachet_reloads_total\{result="failed"\} 3'

# ---- a listener added by reload answers; access log turned on ----------------------------
ALOG="$CT_TMP/access.log"
write_conf ',
    { kind = "http"; address = "127.0.0.1:0"; honour_client_cache_control = false; }' \
    "access_log = \"$ALOG\"; access_format = \"json\";"
reload 6 || ct_failed "reload 6"
NPORT=$(grep '^listening on http ' "$CT_TMP/proxy.out" | tail -1 | sed 's/.*://')
ct_check_match "added listener announced" "$NPORT" '^[0-9]+$'
[ "$NPORT" != "$PPORT" ] || ct_failed "added listener has its own port"
ct_check "added listener answers" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NPORT/json")" 200
# its own settings: client no-cache ignored there, obeyed on the first listener
ccs() { curl -s -D - -o /dev/null -H 'Cache-Control: no-cache' "$1" | tr -d '\r' | sed -n 's/^Cache-Status: //p'; }
curl -s -o /dev/null "http://127.0.0.1:$NPORT/gen?size=10&cache-control=max-age%3D300&k=reload"
ct_check_match "added listener ignores client no-cache (its setting)" \
    "$(ccs "http://127.0.0.1:$NPORT/gen?size=10&cache-control=max-age%3D300&k=reload")" '; hit'
ct_check_match "first listener obeys client no-cache" \
    "$(ccs "$P/gen?size=10&cache-control=max-age%3D300&k=reload")" 'fwd=' 
curl -s -o /dev/null "$P/json?logged=1"
ct_wait_until 60 grep -qs 'logged=1' "$ALOG"
ct_check_match "access log opened by the reload (JSON)" "$(grep 'logged=1' "$ALOG" 2>/dev/null)" \
    '^\{"time":.*"uri":"/json\?logged=1","status":200'

# ---- a listener removed by reload stops answering -----------------------------------------------
write_conf "" ""
reload 7 || ct_failed "reload 7"
ct_check "removed listener refuses connections" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NPORT/json")" 000
ct_check "kept listener answers" "$(curl -s -o /dev/null -w '%{http_code}' "$P/json")" 200
# ---- the admin listener moves ------------------------------------------------------------------
sed -i 's|admin = { listen = "127.0.0.1:0"; };|admin = { listen = "127.0.0.2:0"; };|' "$CONF"
reload 8 || ct_failed "reload 8"
NA=$(grep '^listening on admin ' "$CT_TMP/proxy.out" | tail -1 | sed 's/^listening on admin //')
ct_check_match "new admin address announced" "$NA" '^127\.0\.0\.2:[0-9]+$'
ct_check "new admin address answers" "$(curl -s -o /dev/null -w '%{http_code}' "http://$NA/stats")" 200
ct_check "old admin address closed" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$APORT/stats")" 000
curl -s -o /dev/null "$P/json?after_off=1"
ct_stop proxy
ct_check "cachet exits 0 after reloads" "$?" 0
ct_check "access log turned off by the reload" "$(grep -c after_off "$ALOG")" 0

# ---- certificates are re-read by a reload ---------------------------------------------------
if command -v openssl >/dev/null; then
    mkcert() { # mkcert NAME: self-signed EC P-256 for NAME in $CT_TMP/NAME.{pem,key}
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
            -subj "/CN=$1" -keyout "$CT_TMP/$1.key" -out "$CT_TMP/$1.pem" 2>/dev/null
    }
    mkcert first.test && mkcert second.test
    cp "$CT_TMP/first.test.pem" "$CT_TMP/live.pem"
    cp "$CT_TMP/first.test.key" "$CT_TMP/live.key"
    C3="$CT_TMP/certs.conf"
    cat >"$C3" <<EOF
workers = 2;
listen = ( { kind = "https"; address = "127.0.0.1:0";
             tls = { certificates = ( { cert = "$CT_TMP/live.pem"; key = "$CT_TMP/live.key";
                                        default = true; } ); }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
    ct_start p3 "$CT_BIN/cachet" -c "$C3" --admin off
    CP=$(ct_wait_listen p3 https) || exit 1
    subject() {
        timeout 10 openssl s_client -connect "127.0.0.1:$CP" </dev/null 2>/dev/null |
            openssl x509 -noout -subject 2>/dev/null
    }
    ct_check_match "serves the first certificate" "$(subject)" 'CN ?= ?first\.test'
    # renewed in place (certbot style), then SIGHUP
    cp "$CT_TMP/second.test.pem" "$CT_TMP/live.pem"
    cp "$CT_TMP/second.test.key" "$CT_TMP/live.key"
    kill -HUP "$(ct_pid p3)"
    ct_wait_until 60 grep -q 'SIGHUP: configuration 1 from' "$CT_TMP/p3.err"
    ct_check_match "serves the renewed certificate after SIGHUP, same port" "$(subject)" \
        'CN ?= ?second\.test'
    # a key that does not match its certificate: refused, the renewed one stays
    cp "$CT_TMP/first.test.key" "$CT_TMP/live.key"
    kill -HUP "$(ct_pid p3)"
    ct_wait_until 60 grep -q 'configuration refused' "$CT_TMP/p3.err"
    ct_check_match "mismatched key refused with its location" "$(grep 'SIGHUP: ' "$CT_TMP/p3.err")" \
        'certs\.conf:[0-9]+: .*(match|key)'
    ct_check_match "still the renewed certificate" "$(subject)" 'CN ?= ?second\.test'
    ct_stop p3
fi

# ---- HTTPS added by a reload to a process that started without any ------------------------
C2="$CT_TMP/plain.conf"
cat >"$C2" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
ct_start p2 "$CT_BIN/cachet" -c "$C2" --admin off
ct_wait_listen p2 http >/dev/null || exit 1
sed -i 's|listen = ( { kind = "http"; address = "127.0.0.1:0"; } );|listen = ( { kind = "http"; address = "127.0.0.1:0"; }, { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );|' "$C2"
kill -HUP "$(ct_pid p2)"
ct_wait_until 60 grep -q '^listening on https ' "$CT_TMP/p2.out"
HS=$(grep '^listening on https ' "$CT_TMP/p2.out" | sed 's/.*://')
ct_check "HTTPS listener added by a reload answers" \
    "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$HS/json")" 200
ct_stop p2
ct_check "exits 0 (the reload's TLS objects freed)" "$?" 0

# ---- no silent port sharing (issue 40, bug 2) ------------------------------------------------
# Only cachet's own workers share a listener (SO_REUSEPORT): a port another
# process holds, even one that set SO_REUSEPORT too, is refused at start and
# by a reload, as nginx's "bind() failed (98: Address already in use)".
read -r XP <<<"$(ct_free_ports 1)"
ct_start holder python3 -c 'import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("held", flush=True)
time.sleep(600)' "$XP"
ct_wait_until 30 grep -qs held "$CT_TMP/holder.out" || ct_failed "the other program holds its port"
timeout 20 "$CT_BIN/cachet" --http "127.0.0.1:$XP" --https off --admin off \
    --backend "127.0.0.1:$OPORT" >"$CT_TMP/x.out" 2>"$CT_TMP/x.err"
rc=$?
ct_check "start on another program's (SO_REUSEPORT) port fails" "$(((rc != 0 && rc != 124)))" 1
ct_check_match "... with address in use" "$(cat "$CT_TMP/x.err")" \
    "cannot listen on http 127\.0\.0\.1:$XP: address in use"
ct_check "... and announces nothing" "$(grep -c '^listening on' "$CT_TMP/x.out")" 0
C4="$CT_TMP/own.conf"
cat >"$C4" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF
ct_start p4 "$CT_BIN/cachet" -c "$C4" --admin off
P4=$(ct_wait_listen p4 http) || exit 1
timeout 20 "$CT_BIN/cachet" --http "127.0.0.1:$P4" --https off --admin off \
    --backend "127.0.0.1:$OPORT" >"$CT_TMP/x.out" 2>"$CT_TMP/x.err"
rc=$?
ct_check "a second cachet on the first one's port fails" "$(((rc != 0 && rc != 124)))" 1
ct_check_match "... with address in use" "$(cat "$CT_TMP/x.err")" "127\.0\.0\.1:$P4: address in use"
# a reload onto the other program's port: refused, nothing changes
sed -i "s|127.0.0.1:0|127.0.0.1:$XP|" "$C4"
kill -HUP "$(ct_pid p4)"
ct_wait_until 60 grep -q 'configuration refused' "$CT_TMP/p4.err"
ct_check_match "reload onto another program's port refused" "$(cat "$CT_TMP/p4.err")" \
    "SIGHUP: cannot listen on 127\.0\.0\.1:$XP: address in use"
ct_check "the old listener still serves" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P4/json")" 200
# a reload onto cachet's own port (the :0 listener's, now named): applied,
# the port keeps answering
sed -i "s|127.0.0.1:$XP|127.0.0.1:$P4|" "$C4"
ct_reload "$(ct_pid p4)" 1 "$CT_TMP/p4.err" || ct_failed "reload onto cachet's own port applied"
ct_check "its own port still answers after that reload" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P4/json")" 200
ct_stop p4
ct_stop holder

ct_done
