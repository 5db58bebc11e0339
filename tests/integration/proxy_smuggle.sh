#!/usr/bin/env bash
# Request smuggling and malformed framing: every case is answered with its
# 4xx/5xx, the connection is closed, and nothing reaches the origin
# (cachet-origin's /_origin/stats total stays 0).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_pair --workers 1

# case DESC EXPECTED-STATUS BYTES: send BYTES, expect that status and a close,
# and no request at the origin.
case_() {
    local desc=$1 want=$2 bytes=$3 resp status
    ct_origin_reset "$OPORT"
    resp=$(exec 3<>"/dev/tcp/127.0.0.1/$PPORT"; printf '%b' "$bytes" >&3; timeout 5 cat <&3)
    status=$(head -n1 <<<"$resp" | tr -d '\r')
    ct_check "$desc: answered $want" "$status" "HTTP/1.1 $want $(status_reason "$want")"
    ct_check "$desc: not forwarded" "$(ct_origin_total "$OPORT")" 0
}
status_reason() {
    case $1 in
    400) echo "Bad Request" ;; 413) echo "Content Too Large" ;; 414) echo "URI Too Long" ;;
    405) echo "Method Not Allowed" ;; 417) echo "Expectation Failed" ;; 431) echo "Request Header Fields Too Large" ;;
    501) echo "Not Implemented" ;; 505) echo "HTTP Version Not Supported" ;;
    esac
}

H='Host: a\r\n'
case_ "CL and TE together" 400 "POST /echo HTTP/1.1\r\n${H}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
case_ "two different Content-Length" 400 "POST /echo HTTP/1.1\r\n${H}Content-Length: 4\r\nContent-Length: 5\r\n\r\nabcde"
case_ "duplicate Content-Length" 400 "POST /echo HTTP/1.1\r\n${H}Content-Length: 4\r\nContent-Length: 4\r\n\r\nabcd"
case_ "Content-Length list" 400 "POST /echo HTTP/1.1\r\n${H}Content-Length: 4, 4\r\n\r\nabcd"
case_ "TE not ending in chunked" 400 "POST /echo HTTP/1.1\r\n${H}Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n"
case_ "TE identity (unknown coding)" 501 "POST /echo HTTP/1.1\r\n${H}Transfer-Encoding: identity\r\n\r\n"
case_ "chunk size overflow" 400 "POST /echo HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\nx\r\n0\r\n\r\n"
case_ "chunk size not hex" 400 "POST /echo HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nzz\r\nx\r\n0\r\n\r\n"
case_ "obs-fold" 400 "GET /json HTTP/1.1\r\n${H}X-A: 1\r\n  folded\r\n\r\n"
case_ "bare CR in a value" 400 "GET /json HTTP/1.1\r\n${H}X-A: 1\rX-B: 2\r\n\r\n"
case_ "NUL in a value" 400 "GET /json HTTP/1.1\r\n${H}X-A: a\x00b\r\n\r\n"
case_ "space before colon" 400 "GET /json HTTP/1.1\r\n${H}Content-Length : 0\r\n\r\n"
case_ "invalid method token" 400 "G(T /json HTTP/1.1\r\n${H}\r\n"
case_ "HTTP/2.0 version" 505 "GET /json HTTP/2.0\r\n${H}\r\n"
case_ "HTTP/1.1 without Host" 400 "GET /json HTTP/1.1\r\n\r\n"
case_ "two Host fields" 400 "GET /json HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"
case_ "unknown Expect" 417 "POST /echo HTTP/1.1\r\n${H}Expect: teapot\r\nContent-Length: 1\r\n\r\nx"
long=$(head -c 9000 /dev/zero | tr '\0' 'a')
case_ "request line too long" 414 "GET /$long HTTP/1.1\r\n${H}\r\n"
big=$(for i in $(seq 1 120); do printf 'X-H%d: v\\r\\n' "$i"; done)
case_ "too many fields" 431 "GET /json HTTP/1.1\r\n${H}${big}\r\n"

case_ "CONNECT (no tunnels through a reverse proxy)" 405 "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"

# A smuggled second request behind a bad one is never forwarded either.
case_ "CL.TE smuggle attempt" 400 "POST /echo HTTP/1.1\r\n${H}Content-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /json HTTP/1.1\r\nHost: a\r\n\r\n"

# A good request still works afterwards.
ct_origin_reset "$OPORT"
ct_check "a good request still passes" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PPORT/json")" 200
ct_check "and is forwarded once" "$(ct_origin_total "$OPORT")" 1

ct_done
