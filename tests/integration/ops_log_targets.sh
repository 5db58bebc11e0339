#!/usr/bin/env bash
# needs: cachet cachet-origin
# tests/integration/ops_log_targets.sh: logs.target. "syslog": the error log
# as RFC 3164 datagrams (glibc's syslog(3) form, "<PRI>Mmm dd hh:mm:ss
# TAG[PID]: msg") on a unix datagram socket this test binds in place of
# /dev/log (logs.syslog_socket), facility and tag as configured, the level as
# the severity (INFO 6, WARN 4); a reload from the file to syslog and back;
# SIGUSR1 reconnecting to a restarted syslog daemon's new socket.
# "json": one JSON object a line on stdout (time, level, msg), beside the
# "listening on" lines. A socket nobody listens on is reported on stderr and
# the log stays there.
# needs python3 for the syslog daemon's stand-in.
source "$(dirname "$0")/lib.sh"

ct_start_origin
SOCK=$CT_TMP/log.sock
SLOG=$CT_TMP/syslog.txt

# a syslog daemon's stand-in: every datagram on SOCK as one line of SLOG
start_syslogd() {
    rm -f "$SOCK"
    ct_start syslogd python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
out = open(sys.argv[2], "ab", buffering=0)
while True:
    out.write(s.recv(65536) + b"\n")' "$SOCK" "$SLOG"
    ct_wait_until 30 test -S "$SOCK"
}

conf() { # conf TARGET [WORKERS]: the file, with the syslog settings
    cat >"$CT_TMP/t.conf" <<EOF2
workers = ${2:-1};
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
admin = { listen = "off"; };
backends = ( { address = "127.0.0.1:$OPORT"; } );
logs = { target = "$1"; syslog_socket = "$SOCK"; syslog_facility = "local3";
         syslog_tag = "edge1"; };
EOF2
}

# ---- syslog from the start ----------------------------------------------------
start_syslogd
conf syslog
ct_start_proxy -c "$CT_TMP/t.conf"
PID=$(ct_pid proxy)
ct_wait_until 30 grep -qs 'workers, 1 listeners' "$SLOG"
line=$(grep -m1 'workers, 1 listeners' "$SLOG")
# local3 = 19, info = 6: 19 * 8 + 6 = 158
ct_check_match "the start line is an RFC 3164 datagram: local3.info, tag edge1, cachet's pid" \
    "$line" "^<158>[A-Z][a-z]{2} [ 1-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-5][0-9] edge1\\[$PID\\]: cachet [0-9.]+: 1 workers"
ct_check "nothing of it on stderr" "$(grep -c 'workers, 1 listeners' "$CT_TMP/proxy.err")" 0

# A WARN line: workers changed needs a restart (19 * 8 + 4 = 156).
conf syslog 2
kill -HUP "$PID"
ct_wait_until 30 grep -qs 'configuration 1 from' "$SLOG"
ct_check_match "a warning is severity 4" "$(grep 'workers' "$SLOG" | grep -v 'listeners')" \
    "^<156>.* edge1\\[$PID\\]: .*workers"

# The daemon restarts (a new socket under the same name): SIGUSR1 reconnects.
ct_stop syslogd
start_syslogd
kill -USR1 "$PID"
ct_wait_until 30 grep -qs 'SIGUSR1: log files reopened' "$SLOG"
ct_check_match "after SIGUSR1 the lines reach the new socket" \
    "$(grep 'SIGUSR1' "$SLOG")" "^<158>.*edge1\\[$PID\\]: SIGUSR1: log files reopened"

# Back to the file (stderr) on a reload.
conf file
kill -HUP "$PID"
ct_wait_until 30 grep -qs 'configuration 2 from' "$CT_TMP/proxy.err"
ct_check_match "a reload moves the log back to stderr" "$(cat "$CT_TMP/proxy.err")" \
    'INFO SIGHUP: configuration 2 from'
ct_check "and no longer to syslog" "$(grep -c 'configuration 2' "$SLOG")" 0
ct_stop proxy

# ---- nobody on the socket --------------------------------------------------------
ct_stop syslogd
rm -f "$SOCK"
conf syslog
ct_start_proxy -c "$CT_TMP/t.conf"
ct_wait_until 30 grep -qs 'workers, 1 listeners' "$CT_TMP/proxy.err"
ct_check_match "an unreachable socket is reported, the log stays on stderr" \
    "$(cat "$CT_TMP/proxy.err")" \
    "ERR logs.target = \"syslog\": cannot reach the syslog socket $SOCK: No such file or directory; the error log stays where it was"
ct_stop proxy

# ---- JSON lines on stdout ---------------------------------------------------------
conf json
ct_start_proxy -c "$CT_TMP/t.conf"
ct_wait_until 30 grep -qs 'workers, 1 listeners' "$CT_TMP/proxy.out"
curl -s -o /dev/null "$P/1k"
ct_stop proxy
ct_check_match "stdout keeps the listening line" "$(head -1 "$CT_TMP/proxy.out")" '^listening on http '
out=$(python3 - "$CT_TMP/proxy.out" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    if line.startswith("listening on "):
        continue
    o = json.loads(line)
    assert set(o) == {"time", "level", "msg"}, o
    assert o["level"] in ("debug", "info", "warn", "error"), o
    assert o["time"].endswith("Z") and "T" in o["time"], o
    n += 1
print("ok", n)
PY
)
ct_check_match "every other stdout line is a JSON object (time, level, msg)" "$out" '^ok [1-9]'
ct_check_match "the start line as JSON" "$(grep 'workers, 1 listeners' "$CT_TMP/proxy.out")" \
    '^\{"time":"[0-9T:.-]+Z","level":"info","msg":"cachet [0-9.]+: 1 workers, 1 listeners'
ct_check_match "the exit line as JSON" "$(tail -1 "$CT_TMP/proxy.out")" \
    '^\{"time":"[^"]+","level":"info","msg":"exit: '
ct_check "stderr is empty" "$(cat "$CT_TMP/proxy.err")" ""
ct_done
