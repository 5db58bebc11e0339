#!/usr/bin/env bash
# HTTP/2 to the letter of RFC 9113 (issue 41), each case from a scripted
# client that writes raw frames (h2_peer.py rfc KIND): frames on streams the
# client reset (§5.1 closed: stream error STREAM_CLOSED) or ended (§5.1:
# connection error STREAM_CLOSED), a new stream below one already opened
# (§5.1.1: PROTOCOL_ERROR), PRIORITY on itself (§5.3.1) and on stream 0
# (§6.3), and the close that follows the GOAWAY of a connection error
# (§5.4.1). docs/h2.md's RFC table says what cachet does for each.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PY=/usr/bin/python3 # Debian's, with python3-h2
PEER="$CT_SRC/tests/integration/h2_peer.py"

ct_start_origin
cat >"$CT_TMP/cachet.conf" <<CONF
workers = 1;
listen = ( { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; },
           { kind = "http"; address = "127.0.0.1:0"; h2c = true; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
CONF
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/cachet.conf" --admin 127.0.0.1:0
APORT=$(ct_wait_listen proxy admin) || exit 1
H2=$(ct_wait_listen proxy https) || exit 1
H2C=$(ct_wait_listen proxy http) || exit 1
rfc() { $PY "$PEER" "$H2" rfc "$@"; }

# 1, 2: after the client's RST_STREAM (codes: STREAM_CLOSED 5, PROTOCOL_ERROR 1)
ct_check "DATA after the client's RST_STREAM: RST_STREAM STREAM_CLOSED, the connection serves on" \
    "$(rfc data_after_rst)" $'rst 1 5\nend 3'
ct_check "HEADERS after the client's RST_STREAM: RST_STREAM STREAM_CLOSED, the connection serves on" \
    "$(rfc headers_after_rst)" $'rst 1 5\nend 3'
# 3, 4: after END_STREAM both ways
ct_check "DATA on a closed stream: GOAWAY STREAM_CLOSED, then close" \
    "$(rfc data_closed)" $'end 1\ngoaway 5\nclosed'
ct_check "HEADERS on a closed stream: GOAWAY STREAM_CLOSED, then close" \
    "$(rfc headers_closed)" $'end 1\ngoaway 5\nclosed'
# 5
ct_check "a new stream below one already opened: GOAWAY PROTOCOL_ERROR" \
    "$(rfc lower_id)" "goaway 1"
# 6, 7
ct_check "PRIORITY depending on itself, open stream: RST_STREAM PROTOCOL_ERROR, the connection serves on" \
    "$(rfc priority_self_open)" $'rst 1 1\nend 3'
ct_check "PRIORITY depending on itself, idle stream: GOAWAY PROTOCOL_ERROR" \
    "$(rfc priority_self_idle)" "goaway 1"
ct_check "PRIORITY on stream 0: GOAWAY PROTOCOL_ERROR" "$(rfc priority_zero)" "goaway 1"
# 8
ct_check "PING on stream 3: GOAWAY PROTOCOL_ERROR, then close" "$(rfc ping_stream)" $'goaway 1\nclosed'
ct_check "PING of 6 bytes: GOAWAY FRAME_SIZE_ERROR, then close" "$(rfc ping_length)" $'goaway 6\nclosed'
ct_check "h2c: DATA on a closed stream: GOAWAY STREAM_CLOSED, then close" \
    "$($PY "$PEER" "$H2C" rfc data_closed h2c)" $'end 1\ngoaway 5\nclosed'
ct_check "h2c: PING on stream 3: GOAWAY PROTOCOL_ERROR, then close" \
    "$($PY "$PEER" "$H2C" rfc ping_stream h2c)" $'goaway 1\nclosed'

ct_done
