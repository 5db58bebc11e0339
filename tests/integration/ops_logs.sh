#!/usr/bin/env bash
# SIGUSR1 (logrotate): move the access and error logs away, signal, and the
# next lines go to new files under the old names; nothing is lost, nothing is
# split. The access log is off unless configured.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin

ALOG="$CT_TMP/access.log"
ELOG="$CT_TMP/error.log"
cat >"$CT_TMP/l.conf" <<EOF
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "127.0.0.1:0"; };
backends = ( { address = "127.0.0.1:$OPORT"; } );
logs = { error_log = "$ELOG"; level = "info"; access_log = "$ALOG"; };
pid_file = "$CT_TMP/cachet.pid";
EOF
ct_start_proxy -c "$CT_TMP/l.conf"
PID=$(ct_pid proxy)
# pid_file (issue 40, bug 7): written at start, so rotation signals cachet by
# its file, not by a process name that `cachet ctl top` shares
ct_check "pid_file holds the server's PID" "$(cat "$CT_TMP/cachet.pid" 2>/dev/null)" "$PID"
APORT=$(ct_wait_listen proxy admin) || exit 1
ct_start top "$CT_BIN/cachet" ctl top --admin "127.0.0.1:$APORT" -i 1
ct_wait_until 30 sh -c "[ -s '$CT_TMP/top.out' ]" || ct_failed "ctl top runs"

# wait_lines FILE N: until FILE has N lines (the log is flushed every second)
has_lines() { [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ]; }
wait_lines() { ct_wait_until 60 has_lines "$1" "$2"; }

for i in 1 2 3; do curl -s -o /dev/null "$P/json?before=$i"; done
wait_lines "$ALOG" 3
ct_check "access lines before rotation" "$(wc -l <"$ALOG")" 3

mv "$ALOG" "$ALOG.1"
mv "$ELOG" "$ELOG.1"
# Logged after the move but before the signal: belongs to the old file.
curl -s -o /dev/null "$P/json?moved=1"
kill -USR1 "$(cat "$CT_TMP/cachet.pid")"
# `kill -USR1 $(pidof cachet)` reaches ctl top too: it must ignore it
kill -USR1 "$(ct_pid top)"
kill -HUP "$(ct_pid top)"
ct_wait_until 60 grep -qs 'SIGUSR1: log files reopened' "$ELOG"
ct_check_match "error log reopened (new file)" "$(cat "$ELOG" 2>/dev/null)" 'SIGUSR1: log files reopened'
for i in 1 2; do curl -s -o /dev/null "$P/json?after=$i"; done
wait_lines "$ALOG" 2
ct_check "new access log has the later lines" "$(grep -c 'after=' "$ALOG")" 2
ct_check "old access log kept its lines" "$(grep -c 'before=\|moved=' "$ALOG.1")" 4
ct_check "no later line in the old file" "$(grep -c 'after=' "$ALOG.1")" 0
ct_check "the proxy still serves" "$(curl -s -o /dev/null -w '%{http_code}' "$P/json")" 200

# Client faults are the client's doing, not the operator's: INFO, never ERR
# (issue 40, bug 5); ERR means "the operator must act".
send_raw() { # send_raw BYTES: to the HTTP port, then read until the server closes
    (
        trap '' PIPE
        exec 3<>"/dev/tcp/127.0.0.1/$PPORT"
        printf '%b' "$1" >&3 2>/dev/null
        timeout 10 cat <&3 >/dev/null 2>&1
    )
}
send_raw 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
send_raw 'G@T / HTTP/1.1\r\nHost: x\r\n\r\n'
echo | timeout 10 openssl s_client -connect "127.0.0.1:$PPORT" >/dev/null 2>&1 # TLS to the HTTP port
ct_wait_until 30 sh -c "[ \$(grep -c 'close=RX_BAD' '$ELOG') -ge 3 ]" ||
    ct_failed "three client faults logged" "$(cat "$ELOG")"
ct_check "client faults logged at INFO" "$(grep 'close=RX_BAD' "$ELOG" | grep -c ' INFO ')" 3
ct_check "client faults not at ERR" "$(grep -c ' ERR ' "$ELOG")" 0

# A burst across several rotations: every request logged exactly once.
for r in 1 2 3; do
    pids=()
    for i in $(seq 1 20); do
        curl -s -o /dev/null "$P/json?burst=$r-$i" &
        pids+=($!)
    done
    wait "${pids[@]}"
    mv "$ALOG" "$ALOG.r$r"
    kill -USR1 "$PID"
    curl -s -o /dev/null "http://127.0.0.1:$PPORT/json?sync=$r" # after the reopen
done
ct_check "ctl top survives the server's signals (USR1, HUP)" \
    "$(kill -0 "$(ct_pid top)" 2>/dev/null && echo alive)" alive
ct_stop top
ct_stop proxy
ct_check "pid_file removed at exit" "$([ -e "$CT_TMP/cachet.pid" ] && echo there || echo gone)" gone
total=$(cat "$CT_TMP"/access.log* | grep -c 'burst=')
ct_check "60 burst requests logged exactly once" "$total" 60
ct_check "every line complete" \
    "$(cat "$CT_TMP"/access.log* | grep -cvE '^127\.0\.0\.1 - - \[.*\] ".*" [0-9]{3} [0-9]+ ".*" ".*" rt=[0-9.]+ ut=[0-9.-]+ us=([0-9]{3}|-) cs=\S+ tls=\S+$')" 0

# Off by default: no access log, nothing on stdout but the announce lines.
ct_start quiet "$CT_BIN/cachet" --http 127.0.0.1:0 --https off --admin off --workers 1 \
    --backend "127.0.0.1:$OPORT"
QPORT=$(ct_wait_listen quiet http) || exit 1
curl -s -o /dev/null "http://127.0.0.1:$QPORT/json"
ct_stop quiet
ct_check "access log off by default" "$(grep -vc '^listening on' "$CT_TMP/quiet.out")" 0

ct_done
