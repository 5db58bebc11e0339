#!/usr/bin/env bash
# cachet-origin's hdr=Name%3A%20Value knob: any response field, repeatable, in
# order; names must be tokens, values free of CR/LF/NUL, and fields the origin
# writes itself are refused with a 400 and a one-line reason.
# needs: cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin
hdrs() { curl -s -D - -o "$CT_TMP/body" "$1" | tr -d '\r'; }

h=$(hdrs "$O/gen?size=5&hdr=CDN-Cache-Control%3A%20max-age%3D60&hdr=X-Two:+a&hdr=X-Two:b")
ct_check "hdr: 200" "$(head -1 <<<"$h")" "HTTP/1.1 200 OK"
ct_check "hdr: the field is sent" "$(grep -i '^CDN-Cache-Control:' <<<"$h")" \
    "CDN-Cache-Control: max-age=60"
ct_check "hdr: repeated, in order" "$(grep -i '^X-Two:' <<<"$h" | tr '\n' '|')" "X-Two: a|X-Two: b|"
ct_check "hdr: body unchanged" "$(cat "$CT_TMP/body")" "01234"
h=$(hdrs "$O/bytes/3?hdr=Cachet-Cache-Control:%20max-age=5")
ct_check "hdr on /bytes" "$(grep -i '^Cachet-Cache-Control:' <<<"$h")" "Cachet-Cache-Control: max-age=5"

for q in 'hdr=Content-Length:%200' 'hdr=transfer-encoding:chunked' 'hdr=Connection:close' \
    'hdr=X-Evil:%20a%0d%0aX-Injected:%201' 'hdr=Bad%20Name:1' 'hdr=NoColon'; do
    out=$(curl -s -w '\n%{http_code}' "$O/gen?size=5&$q")
    ct_check "refused: $q" "$(tail -1 <<<"$out")" 400
    ct_check_match "one-line reason: $q" "$(head -n -1 <<<"$out" | tr '\n' '|')" '^bad query value hdr=[^|]*\|\|$' # the line, then -w's newline
done
ct_done
