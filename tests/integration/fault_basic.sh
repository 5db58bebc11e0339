#!/usr/bin/env bash
# Faults beyond the origin (issue 19): the access log on a full disk
# (/dev/full) and a reload whose certificate file is gone. Each is logged
# clearly, no request fails, serving continues. (EMFILE at accept:
# proxy_backends.sh; a backend that resolves to nothing on reload:
# ops_reload.sh and ops_reload_backends.sh.)
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin

# wait_log NAME REGEX: up to 20 s for REGEX in NAME's error log
wait_log() { ct_wait_until 60 grep -q -E "$2" "$CT_TMP/$1.err"; }

# ---- the access log on a full disk -------------------------------------------------------
ct_start full "$CT_BIN/cachet" --http 127.0.0.1:0 --admin off --workers 2 \
    --backend "127.0.0.1:$OPORT" --access-log /dev/full
FPORT=$(ct_wait_listen full http) || exit 1
for i in $(seq 1 50); do echo "url = \"http://127.0.0.1:$FPORT/gen?size=100&i=$i\""; echo 'output = "/dev/null"'; done >"$CT_TMP/urls"
codes=$(curl -s -K "$CT_TMP/urls" -w '%{http_code}\n' | sort | uniq -c | awk '{print $2 ":" $1}')
ct_check "disk full: every request answered 200" "$codes" "200:50"
wait_log full 'access log /dev/full: cannot write \(No space left on device\): [0-9]+ lines dropped'
ct_check_match "disk full: logged with the file, the reason and the count" "$(cat "$CT_TMP/full.err")" \
    'ERR access log /dev/full: cannot write \(No space left on device\): [1-9][0-9]* lines dropped so far; requests are served'
curl -s -K "$CT_TMP/urls" -o /dev/null
ct_check "disk full: one report, not one per request or flush" \
    "$(grep -c 'access log /dev/full: cannot write' "$CT_TMP/full.err")" 1
ct_check "disk full: still serving" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FPORT/json")" 200
ct_stop full
ct_check "disk full: clean exit" "$?" 0

# ---- a reload whose certificate file is gone ---------------------------------------------
if command -v openssl >/dev/null; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=gone.test" -keyout "$CT_TMP/live.key" -out "$CT_TMP/live.pem" 2>/dev/null
    CONF="$CT_TMP/certs.conf"
    cat >"$CONF" <<EOF2
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "https"; address = "127.0.0.1:0";
             tls = { certificates = ( { cert = "$CT_TMP/live.pem"; key = "$CT_TMP/live.key";
                                        default = true; } ); }; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
EOF2
    ct_start p "$CT_BIN/cachet" -c "$CONF" --admin off
    PPORT=$(ct_wait_listen p http) || exit 1
    SPORT=$(ct_wait_listen p https) || exit 1
    subject() {
        timeout 10 openssl s_client -connect "127.0.0.1:$SPORT" </dev/null 2>/dev/null |
            openssl x509 -noout -subject 2>/dev/null
    }
    ct_check_match "serves the certificate" "$(subject)" 'CN ?= ?gone\.test'
    rm "$CT_TMP/live.pem"
    kill -HUP "$(ct_pid p)"
    wait_log p 'configuration refused'
    ct_check_match "missing certificate: refused, with the file's location and the reason" \
        "$(grep 'SIGHUP: ' "$CT_TMP/p.err")" "certs\.conf:[0-9]+: .*live\.pem.*No such file or directory"
    ct_check_match "missing certificate: the running configuration stays" "$(cat "$CT_TMP/p.err")" \
        'SIGHUP: configuration refused; the running one stays'
    ct_check_match "HTTPS still serves the loaded certificate" "$(subject)" 'CN ?= ?gone\.test'
    ct_check "HTTPS still answers" \
        "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$SPORT/json")" 200
    ct_check "HTTP still answers" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PPORT/json")" 200
    ct_stop p
    ct_check "clean exit after the refused reload" "$?" 0
fi
ct_done
