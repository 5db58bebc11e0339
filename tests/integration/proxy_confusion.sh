#!/usr/bin/env bash
# Requests the proxy and the origin could read differently, with the
# embedded default configuration (only listener and backend overrides):
# - Connection naming a framing field (Content-Length, Transfer-Encoding)
#   or Host: the request reaches the origin framed and addressed as cachet
#   parsed it, so a body is never read by the origin as a second request;
#   any other field it names is dropped for the cache too (Vary poisoning);
# - absolute-form targets: the target's authority wins over Host (RFC 9112
#   §3.2.2) for the forwarded Host, X-Forwarded-Host and the cache key;
# - Upgrade: h2c is never tunnelled: Upgrade and HTTP2-Settings are dropped
#   and the request answered normally, its connection still parsed by cachet.
# The witness is cachet-origin's /echo (the request as it arrived) and its
# per-path counters (a smuggled GET /json would show up there).
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 1
OPORT=$(ct_wait_listen origin) || exit 1
ct_start proxy "$CT_BIN/cachet" --http 127.0.0.1:0 --https off --admin off \
    --backend "127.0.0.1:$OPORT"
PPORT=$(ct_wait_listen proxy http) || exit 1

# raw.py PORT N BYTES...: send each BYTES (printf %b escapes) on one
# connection, read responses (Content-Length framed) until N came, the proxy
# closes, or 20 s pass with nothing more; print them as a JSON list of
# {status, headers (names lower-cased), body}.
cat >"$CT_TMP/raw.py" <<'EOF'
import json, socket, sys

port, want = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(20)  # generous: a loaded, sanitized machine is slow
for req in sys.argv[3:]:
    s.sendall(req.encode("latin-1").decode("unicode_escape").encode("latin-1"))
buf = b""
out = []
try:
    while len(out) < want:
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                raise EOFError
            buf += d
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        hdrs = {}
        for l in lines[1:]:
            k, v = l.split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0"))
        while len(buf) < n:
            d = s.recv(65536)
            if not d:
                raise EOFError
            buf += d
        out.append({"status": lines[0], "headers": hdrs, "body": buf[:n].decode("latin-1")})
        buf = buf[n:]
except (EOFError, socket.timeout, ConnectionResetError):
    pass
print(json.dumps(out))
EOF
raw() { timeout 120 python3 "$CT_TMP/raw.py" "$PPORT" 1 "$@"; }
raw_n() { timeout 120 python3 "$CT_TMP/raw.py" "$PPORT" "$@"; }
# jq-less field access: py EXPR on the JSON in $R (r = the list of responses)
py() { python3 -c "import json,sys; r=json.loads(sys.argv[1]); print($1)" "$R" 2>/dev/null; }
# an origin path counter from /_origin/stats
opath() { curl -s "http://127.0.0.1:$OPORT/_origin/stats" |
    python3 -c "import json,sys; print(json.load(sys.stdin)['paths'].get('$1', 0))"; }
H='Host: a\r\n'

# ---- Connection naming a framing field -------------------------------------
SMUGGLED='GET /json HTTP/1.1\r\nHost: a\r\n\r\n'
ct_origin_reset "$OPORT"
R=$(raw_n 2 "POST /echo HTTP/1.1\r\n${H}Connection: keep-alive, Content-Length\r\nContent-Length: 31\r\n\r\n${SMUGGLED}")
ct_check "Connection: Content-Length: one response" "$(py 'len(r)')" 1
ct_check "... the origin got the Content-Length" \
    "$(py '[v for k, v in json.loads(r[0]["body"])["headers"] if k.lower() == "content-length"]')" "['31']"
ct_check "... and the body as a body" "$(py 'json.loads(r[0]["body"])["body"]')" \
    "$(printf '%b' "$SMUGGLED")"
ct_check "... nothing smuggled to the origin" "$(opath /json)" 0
ct_check "... one request at the origin" "$(ct_origin_total "$OPORT")" 1

ct_origin_reset "$OPORT"
R=$(raw "POST /echo HTTP/1.1\r\n${H}Connection: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n\r\n1f\r\n${SMUGGLED}\r\n0\r\n\r\n")
ct_check "Connection: Transfer-Encoding: the body reaches the origin as a body" \
    "$(py 'json.loads(r[0]["body"])["body"]')" "$(printf '%b' "$SMUGGLED")"
ct_check "... nothing smuggled to the origin" "$(opath /json)" 0

R=$(raw "GET /echo HTTP/1.1\r\nHost: site.test\r\nConnection: keep-alive, Host\r\n\r\n")
ct_check "Connection: Host: the origin still gets Host" \
    "$(py '[v for k, v in json.loads(r[0]["body"])["headers"] if k.lower() == "host"]')" "['site.test']"

# A field that Connection names is not sent to the origin, so the cache must
# not act on it either: the origin's answer to a request without
# Accept-Language is not the "fr" variant.
T='/echo?vary=Accept-Language&cache-control=max-age%3D60&k=conn'
R=$(raw "GET $T HTTP/1.1\r\n${H}Accept-Language: fr\r\nConnection: Accept-Language\r\n\r\n")
ct_check "Connection: Accept-Language: not sent to the origin" \
    "$(py '[v for k, v in json.loads(r[0]["body"])["headers"] if k.lower() == "accept-language"]')" "[]"
R=$(raw "GET $T HTTP/1.1\r\n${H}Accept-Language: fr\r\n\r\n")
ct_check "... and its answer is not served as the fr variant" \
    "$(py '[v for k, v in json.loads(r[0]["body"])["headers"] if k.lower() == "accept-language"]')" "['fr']"

# ---- absolute-form targets -----------------------------------------------------
R=$(raw "GET http://other.test/echo?x=1 HTTP/1.1\r\nHost: hostile.test\r\n\r\n")
ECHO=$(py 'r[0]["body"]')
echo_hdr() { python3 -c "import json,sys; print([v for k, v in json.loads(sys.argv[1])['headers'] if k.lower() == '$1'])" "$ECHO"; }
ct_check "absolute-form: answered" "$(py 'r[0]["status"]')" "HTTP/1.1 200 OK"
ct_check "... Host is the target's authority" "$(echo_hdr host)" "['other.test']"
ct_check "... X-Forwarded-Host too" "$(echo_hdr x-forwarded-host)" "['other.test']"
ct_check "... the origin gets origin-form" \
    "$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['target'])" "$ECHO")" "/echo?x=1"
R=$(raw "GET http://other.test HTTP/1.0\r\n\r\n")
ct_check "absolute-form with no path, HTTP/1.0 without Host: answered (/ at the origin)" \
    "$(py 'r[0]["status"]')" "HTTP/1.1 404 Not Found"
R=$(raw "GET http://user@other.test/echo HTTP/1.1\r\nHost: other.test\r\n\r\n")
ct_check "absolute-form with userinfo: 400" "$(py 'r[0]["status"]')" "HTTP/1.1 400 Bad Request"

# The cache key follows the authority too.
ct_origin_reset "$OPORT"
T='/gen?size=3&cache-control=max-age%3D60&k=abs'
R=$(raw "GET http://other.test$T HTTP/1.1\r\nHost: hostile.test\r\n\r\n")
ct_check "absolute-form: stored" "$(py 'r[0]["status"]')" "HTTP/1.1 200 OK"
R=$(raw "GET $T HTTP/1.1\r\nHost: other.test\r\n\r\n")
ct_check_match "... a hit for Host: other.test" "$(py 'r[0]["headers"]["cache-status"]')" "; hit"
R=$(raw "GET $T HTTP/1.1\r\nHost: hostile.test\r\n\r\n")
ct_check_match "... a miss for Host: hostile.test" "$(py 'r[0]["headers"]["cache-status"]')" "fwd=(uri-)?miss"
ct_check "... two fetches at the origin" "$(opath /gen)" 2

# ---- Upgrade: h2c --------------------------------------------------------------
ct_origin_reset "$OPORT"
R=$(raw_n 2 "GET /echo HTTP/1.1\r\n${H}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n" \
    "GET /echo?second HTTP/1.1\r\n${H}\r\n")
ct_check "Upgrade: h2c: answered normally" "$(py 'r[0]["status"]')" "HTTP/1.1 200 OK"
ECHO=$(py 'r[0]["body"]')
ct_check "... no Upgrade, HTTP2-Settings or Connection at the origin" \
    "$(echo_hdr upgrade)$(echo_hdr http2-settings)$(echo_hdr connection)" "[][][]"
ct_check "... the next request on the connection is cachet's to parse" \
    "$(py 'len(r), json.loads(r[1]["body"])["target"]')" "2 /echo?second"
ct_check "... both reached the origin as requests" "$(opath /echo)" 2

ct_done
