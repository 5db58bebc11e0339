# needs: cachet-origin
# cachet-origin on the wire, with raw bytes through bash's /dev/tcp:
# pipelining order, keep-alive, HTTP/1.0, malformed requests (400 and close,
# 414, 431), chunked responses, close=mid, trickle=, /bad/KIND, 100-continue.
. "$(dirname "$0")/lib.sh"

hdr() { grep -i "^$1:" | head -1 | cut -d' ' -f2- | tr -d '\r'; }

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 2
PORT=$(ct_wait_listen origin) || { ct_failed "origin starts"; ct_done; exit 1; }
U=http://127.0.0.1:$PORT

# raw BYTES: send them, print what comes back until the server closes (5 s bound).
raw() {
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return 1
    printf '%b' "$1" >&3
    timeout 5 cat <&3
    exec 3<&-
}
now_ms() { date +%s%3N; }

# ---- pipelining -------------------------------------------------------------
T0=$(now_ms)
raw 'GET /gen?size=3&status=201 HTTP/1.1\r\nHost: x\r\n\r\nGET /delay/200?size=2 HTTP/1.1\r\nHost: x\r\n\r\nGET /json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >"$CT_TMP/pipe"
T1=$(now_ms)
ct_check "pipelined responses in order" "$(grep -ao 'HTTP/1.1 [0-9]*' "$CT_TMP/pipe" | cut -d' ' -f2 | tr '\n' ' ')" "201 200 200 "
ct_check "pipelined bodies in order" "$(tr -d '\r' <"$CT_TMP/pipe" | grep -av '^[A-Za-z-]*: ' | tr -d '\n')" 'HTTP/1.1 201 Created012HTTP/1.1 200 OK01HTTP/1.1 200 OK{"message":"Hello, World!"}'
SEQS=$(grep -ai '^X-Origin-Seq' "$CT_TMP/pipe" | cut -d' ' -f2 | tr -d '\r' | tr '\n' ' ')
read -r S1 S2 S3 <<<"$SEQS"
ct_check "pipelined seqs increase" "$((S1 < S2 && S2 < S3))" 1
ct_check "last response says close" "$(grep -aci '^Connection: close' "$CT_TMP/pipe")" 1
ct_check "server closed after Connection: close (waited for the delay only)" "$(((T1 - T0) < 3000))" 1

# ---- keep-alive and HTTP/1.0 ------------------------------------------------
ct_check "keep-alive reuses the connection" "$(curl -s -o /dev/null -o /dev/null -w '%{num_connects} ' "$U/json" "$U/1k")" "1 0 "
OUT=$(raw 'GET /json HTTP/1.0\r\n\r\n')
ct_check_match "HTTP/1.0 answered and closed" "$OUT" 'Hello, World!"\}$'
ct_check "HTTP/1.0 without keep-alive: Connection: close" "$(hdr Connection <<<"$OUT")" "close"
OUT=$(raw 'GET /plaintext HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /json HTTP/1.0\r\n\r\n')
ct_check "HTTP/1.0 keep-alive honoured" "$(grep -ao 'HTTP/1.1 200' <<<"$OUT" | wc -l)" 2
ct_check "HTTP/1.0 keep-alive announced" "$(hdr Connection <<<"$OUT")" "keep-alive"
OUT=$(raw 'GET /gen?size=5&chunked=1 HTTP/1.0\r\n\r\n')
ct_check "HTTP/1.0 never gets chunked" "$(hdr Content-Length <<<"$OUT")" 5

# ---- chunked responses ------------------------------------------------------
OUT=$(raw 'GET /gen?size=5&chunked=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | tr -d '\r')
ct_check "chunked header" "$(hdr Transfer-Encoding <<<"$OUT")" "chunked"
ct_check "chunked framing" "$(sed -n '/^$/,$p' <<<"$OUT" | tr '\n' '|')" "|5|01234|0|"
OUT=$(raw 'HEAD /gen?size=5&chunked=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | tr -d '\r')
ct_check "HEAD chunked: header, no body" "$(sed -n '/^$/,$p' <<<"$OUT" | wc -c)" 0

# ---- malformed requests -----------------------------------------------------
OUT=$(raw 'GARBAGE\r\n\r\nGET /json HTTP/1.1\r\nHost: x\r\n\r\n')
ct_check "garbage: 400" "$(head -1 <<<"$OUT" | cut -d' ' -f2)" 400
ct_check "garbage: one answer, then close" "$(grep -ac '^HTTP/' <<<"$OUT")" 1
ct_check "garbage: Connection: close" "$(hdr Connection <<<"$OUT")" "close"
OUT=$(raw 'GET /json HTTP/1.1\r\n\r\n')
ct_check "missing Host: 400" "$(head -1 <<<"$OUT" | cut -d' ' -f2)" 400
OUT=$(raw 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n')
ct_check "CL with TE: 400" "$(head -1 <<<"$OUT" | cut -d' ' -f2)" 400
LONG=$(head -c 10000 /dev/zero | tr '\0' 'a')
OUT=$(raw "GET /$LONG HTTP/1.1\r\nHost: x\r\n\r\n")
ct_check "long request line: 414" "$(head -1 <<<"$OUT" | cut -d' ' -f2)" 414
MANY=$(for i in $(seq 1 150); do printf 'X-H%d: v\\r\\n' "$i"; done)
OUT=$(raw "GET /json HTTP/1.1\r\nHost: x\r\n${MANY}\r\n")
ct_check "too many headers: 431" "$(head -1 <<<"$OUT" | cut -d' ' -f2)" 431
OUT=$(raw 'GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
ct_check "asterisk target: 400" "$(head -1 <<<"$OUT" | cut -d' ' -f2)" 400
ct_check "absolute-form target" "$(raw 'GET http://h/plaintext HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n' | tail -c 13)" "Hello, World!"

# ---- deliberate failures ----------------------------------------------------
curl -s -o "$CT_TMP/mid" "$U/gen?size=1000&close=mid"
ct_check "close=mid: curl sees a short body" "$?" 18
ct_check "close=mid: half the body" "$(wc -c <"$CT_TMP/mid")" 500
curl -s -o "$CT_TMP/mid" "$U/bytes/3000000?close=mid"
ct_check "close=mid on a streamed body" "$(wc -c <"$CT_TMP/mid")" 1500000
OUT=$(raw 'GET /gen?size=4&chunked=1&close=mid HTTP/1.1\r\nHost: x\r\n\r\n' | tr -d '\r')
ct_check "close=mid chunked: no last chunk" "$(sed -n '/^$/,$p' <<<"$OUT" | tr '\n' '|')" "|2|01|"
ct_check "/bad/status sent raw" "$(raw 'GET /bad/status HTTP/1.1\r\nHost: x\r\n\r\n' | head -1 | tr -d '\r')" "HTTP/1.1 abc Broken"
ct_check "/bad/cl-te sent raw" "$(raw 'GET /bad/cl-te HTTP/1.1\r\nHost: x\r\n\r\n' | grep -ac 'Transfer-Encoding: chunked')" 1
ct_check "/bad/empty closes silently" "$(raw 'GET /bad/empty HTTP/1.1\r\nHost: x\r\n\r\n' | wc -c)" 0
ct_check "/bad/reset resets the connection (RST, no FIN, no byte)" "$(python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
s.sendall(b"GET /bad/reset HTTP/1.1\r\nHost: x\r\n\r\n")
try:
    print("EOF" if s.recv(100) == b"" else "data")
except ConnectionResetError:
    print("reset")
except socket.timeout:
    print("timeout")
' "$PORT")" reset
ct_check "/bad/short is short" "$(raw 'GET /bad/short HTTP/1.1\r\nHost: x\r\n\r\n' | tail -c 21)" "only 22 bytes of body"
ct_check "/bad/unknown 404" "$(curl -s -o /dev/null -w '%{http_code}' "$U/bad/unknown")" 404
T0=$(now_ms)
curl -s -o "$CT_TMP/tr" "$U/gen?size=3000&trickle=150&trickle-size=1000"
T1=$(now_ms)
ct_check "trickle: body intact" "$(wc -c <"$CT_TMP/tr")" 3000
ct_check "trickle: paced (>= 300 ms)" "$(((T1 - T0) >= 300))" 1

OUT=$(raw 'GET /gen?size=5&chunked=1&trickle=10&trickle-size=2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | tr -d '\r')
ct_check "trickle + chunked: one chunk per piece" "$(sed -n '/^$/,$p' <<<"$OUT" | tr '\n' '|')" "|2|01|2|23|1|4|0|"
ct_check "streamed body then Connection: close" \
    "$(raw 'GET /bytes/3000000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | wc -c)" \
    "$((3000000 + $(raw 'HEAD /bytes/3000000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | wc -c)))"
# 200 pipelined requests in one write, 20 MB of answers: in order, none lost.
REQS=$(for i in $(seq 1 199); do printf 'GET /100k?i=%d HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' "$i"; done)
raw "${REQS}GET /json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >"$CT_TMP/many"
ct_check "200 pipelined answers" "$(grep -ao 'HTTP/1.1 200 OK' "$CT_TMP/many" | wc -l)" 200
ct_check "200 pipelined: last one last" "$(tail -c 27 "$CT_TMP/many")" '{"message":"Hello, World!"}'
ct_check "200 pipelined: seqs in order" "$(grep -a '^X-Origin-Seq' "$CT_TMP/many" | tr -d '\r' | cut -d' ' -f2 | sort -n -c && echo sorted)" "sorted"

# ---- request bodies ---------------------------------------------------------
OUT=$(curl -s -H 'Expect: 100-continue' --data-binary 'abc' "$U/echo")
ct_check_match "100-continue then body" "$OUT" '"body": "abc"\}$'
head -c 200000 /dev/zero | tr '\0' 'z' >"$CT_TMP/big"
ct_check "body of a non-echo endpoint is read and dropped" \
    "$(curl -s -o /dev/null -o /dev/null -w '%{http_code} ' --data-binary @"$CT_TMP/big" "$U/json" "$U/json")" "200 200 "
head -c 5000000 /dev/zero >"$CT_TMP/huge"
ct_check "echo body over 4 MiB: 413" "$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$CT_TMP/huge" "$U/echo")" 413
# Random bytes, and random bytes after a valid request line: never a crash.
for i in $(seq 1 20); do
    exec 3<>"/dev/tcp/127.0.0.1/$PORT"
    if ((i % 2)); then printf 'GET /echo HTTP/1.1\r\nHost: x\r\n' >&3; fi
    head -c $((RANDOM % 4096 + 1)) /dev/urandom >&3 2>/dev/null
    timeout 3 cat <&3 >/dev/null
    exec 3<&-
done
ct_check "still serving" "$(curl -s "$U/plaintext")" "Hello, World!"
ct_stop origin TERM
ct_check "clean exit" "$?" 0
ct_done
