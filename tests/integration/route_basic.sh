#!/usr/bin/env bash
# Sites and routes on real requests (issue 15): a route's redirect (Location
# from its template), fixed answer, 403 by address (127.0.0.2 is another
# loopback source) and by a required header, pass vs cached, and the key
# without utm_* parameters (a hit). Over HTTP, HTTPS and HTTP/2; a host no
# site claims behaves as before sites.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start o "$CT_BIN/cachet-origin" --port 0 --workers 1
OP=$(ct_wait_listen o) || exit 1

cat >"$CT_TMP/sites.conf" <<CONF
workers = 1;
listen = ( { kind = "http"; address = "127.0.0.1:0"; },
           { kind = "https"; address = "127.0.0.1:0"; tls = { self_signed = true; }; } );
backends = ( { address = "127.0.0.1:$OP"; } );
admin = { listen = "off"; };
logs = { access_log = "$CT_TMP/access.log"; };
sites = ( {
  name = "www"; hosts = [ "www.example.test", "*.example.test" ];
  routes = (
    { name = "moved"; match = { path = "/old"; };
      redirect = { status = 308; location = "\$scheme://\$host/new\$query"; }; },
    { name = "health"; match = { path = "/healthz"; methods = [ "GET", "HEAD" ]; };
      respond = { status = 200; body = "ok \$site/\$route\n"; content_type = "text/x-ok"; }; },
    { name = "admin"; match = { path = "/json"; }; deny = [ "127.0.0.2/32" ];
      cache = { pass = true; }; },
    { name = "keyed"; match = { path = "/plaintext"; }; require_headers = [ "X-Key: s3cret" ];
      cache = { pass = true; }; },
    { name = "nocache"; match = { path_regex = "^/del[a-z]+/[0-9]+$"; }; cache = { pass = true; }; },
    { name = "echo"; match = { path = "/echo"; };
      request_headers = [ "set X-Site: \$site/\$route", "append X-Tag: two", "remove X-Drop",
                          "set X-Client: \$client", "set X-Gone: 1", "remove X-Gone" ];
      strip_cookie = true; },
    { name = "forced"; match = { path_prefix = "/bytes/"; }; cache = { ttl = "1h"; }; },
    { name = "static"; match = { path = "/gen"; };
      cache = { key_drop_params = [ "utm_*", "gclid" ]; }; },
    { name = "edited"; match = { path = "/1k"; query = [ "edit" ]; };
      response_headers = [ "set Server: cachet-site \$site", "append X-Route: \$route",
                           "remove X-Origin-Seq", "set X-Gone: 1", "remove X-Gone" ];
      strip_set_cookie = true; }
  ); } );
CONF
ct_start p "$CT_BIN/cachet" -c "$CT_TMP/sites.conf"
HP=$(ct_wait_listen p http) || exit 1
SP=$(ct_wait_listen p https) || exit 1

H="Host: www.example.test"
for scheme in http https h2; do
    case $scheme in
        http) base="http://127.0.0.1:$HP"; opt=(--http1.1) ;;
        https) base="https://127.0.0.1:$SP"; opt=(-k --http1.1) ;;
        h2) base="https://127.0.0.1:$SP"; opt=(-k --http2) ;;
    esac
    out=$(curl -s "${opt[@]}" -D - -o /dev/null -H "$H" "$base/old?a=1")
    ct_check_match "$scheme: redirect status" "$out" '^HTTP/[0-9.]+ 308'
    want=$([ $scheme = http ] && echo http || echo https)
    ct_check_match "$scheme: Location from the template" "$out" \
        "[Ll]ocation: $want://www\\.example\\.test/new\\?a=1"$'\r'
    ct_check "$scheme: fixed answer" "$(curl -s "${opt[@]}" -H "$H" "$base/healthz")" "ok www/health"
    ct_check_match "$scheme: its content type" \
        "$(curl -s "${opt[@]}" -D - -o /dev/null -H "$H" "$base/healthz")" '[Cc]ontent-[Tt]ype: text/x-ok'
    ct_check "$scheme: a wildcard host is the site" \
        "$(curl -s "${opt[@]}" -H "Host: a.b.Example.TEST:8080" "$base/healthz")" "ok www/health"
    ct_check "$scheme: require_headers without it: 403" \
        "$(curl -s "${opt[@]}" -o /dev/null -w '%{http_code}' -H "$H" "$base/plaintext")" 403
    ct_check "$scheme: require_headers with it: the origin" \
        "$(curl -s "${opt[@]}" -o /dev/null -w '%{http_code}' -H "$H" -H 'X-Key: s3cret' "$base/plaintext")" 200
done

# Deny by address: 127.0.0.2 is refused, 127.0.0.1 served.
ct_check "deny: from 127.0.0.1 served" \
    "$(curl -s -o /dev/null -w '%{http_code}' -H "$H" "http://127.0.0.1:$HP/json")" 200
ct_check "deny: from 127.0.0.2 refused" \
    "$(curl -s --interface 127.0.0.2 -o /dev/null -w '%{http_code}' -H "$H" "http://127.0.0.1:$HP/json")" 403
ct_check_match "deny: says why in Cache-Status" \
    "$(curl -s --interface 127.0.0.2 -D - -o /dev/null -H "$H" "http://127.0.0.1:$HP/json")" \
    'Cache-Status: cachet; detail=route-deny'
# A POST with a body to a refused route: 403, and the connection closes (its
# body is no next request).
out=$(curl -s --interface 127.0.0.2 -D - -o /dev/null -H "$H" --data-binary @/etc/services \
    "http://127.0.0.1:$HP/json")
ct_check_match "deny with a body: 403" "$out" '^HTTP/1.1 403'

# pass vs cache: a cacheable answer on a pass route reaches the origin each time.
ct_origin_reset "$OP"
for i in 1 2 3; do
    curl -s -o /dev/null -H "$H" "http://127.0.0.1:$HP/delay/1?cache-control=max-age=60"
done
ct_check "pass route: every request to the origin" "$(ct_origin_total "$OP")" 3
ct_check_match "pass route: Cache-Status says route" \
    "$(curl -s -D - -o /dev/null -H "$H" "http://127.0.0.1:$HP/delay/1?cache-control=max-age=60")" \
    'fwd=bypass; detail=route'
ct_origin_reset "$OP"
for i in 1 2 3; do
    curl -s -o /dev/null -H "$H" "http://127.0.0.1:$HP/gen?cache-control=max-age=60"
done
ct_check "cached route: one request to the origin" "$(ct_origin_total "$OP")" 1

# Header rules on the response to the client, on a miss and on hits (the
# stored head is edited on the way out), over HTTP/1.1 and h2; strip_set_cookie.
ct_origin_reset "$OP"
Q="edit&cache-control=max-age%3D60"
for proto in h1 h1 h2 h2; do
    if [ $proto = h1 ]; then
        out=$(curl -s -D - -o /dev/null -H "$H" "http://127.0.0.1:$HP/1k?$Q")
    else
        out=$(curl -s -k --http2 -D - -o /dev/null -H "$H" "https://127.0.0.1:$SP/1k?$Q")
    fi
    ct_check_match "$proto: response_headers set replaces the origin's" "$out" '[Ss]erver: cachet-site www'$'\r'
    ct_check "$proto: set replaces (once)" "$(grep -ci '^server:' <<<"$out")" 1
    ct_check_match "$proto: append" "$out" '[Xx]-[Rr]oute: edited'
    ct_check "$proto: remove, and set then remove" "$(grep -ci '^x-origin-seq:\|^x-gone:' <<<"$out")" 0
done
ct_check "response rules on hits too (one origin fetch for the four)" "$(ct_origin_total "$OP")" 1
ct_origin_reset "$OP"
SC="edit&set-cookie=s%3D1&cache-control=max-age%3D60"
out=$(curl -s -D - -o /dev/null -H "$H" "http://127.0.0.1:$HP/1k?$SC")
ct_check "strip_set_cookie: no Set-Cookie to the client" "$(grep -ci '^set-cookie:' <<<"$out")" 0
out=$(curl -s -D - -o /dev/null -H "$H" "http://127.0.0.1:$HP/1k?$SC")
ct_check_match "strip_set_cookie: stored without it, so the next is a hit" "$out" 'Cache-Status: cachet; hit'
ct_check "strip_set_cookie: the hit has no Set-Cookie either" "$(grep -ci '^set-cookie:' <<<"$out")" 0
ct_check "strip_set_cookie: one origin fetch" "$(ct_origin_total "$OP")" 1
out=$(curl -s -D - -o /dev/null -H 'Host: other.test' "http://127.0.0.1:$HP/1k?$SC")
ct_check_match "without the route Set-Cookie reaches the client" "$out" '[Ss]et-[Cc]ookie: s=1'

# A TTL the route forces: /bytes/N says nothing about freshness (so it is
# never fresh by itself), the route makes it fresh for an hour.
ct_origin_reset "$OP"
for i in 1 2 3; do curl -s -o /dev/null -H "$H" "http://127.0.0.1:$HP/bytes/100"; done
ct_check "forced ttl: one origin fetch for three requests" "$(ct_origin_total "$OP")" 1
ct_check_match "forced ttl: a hit" "$(curl -s -D - -o /dev/null -H "$H" "http://127.0.0.1:$HP/bytes/100")" \
    'Cache-Status: cachet; hit'
ct_origin_reset "$OP"
for i in 1 2; do curl -s -o /dev/null -H 'Host: other.test' "http://127.0.0.1:$HP/bytes/100"; done
ct_check "without the route: every request to the origin" "$(ct_origin_total "$OP")" 2

# Key options: utm_* and gclid are not in the key (a hit), other parameters are.
ct_origin_reset "$OP"
curl -s -o /dev/null -H "$H" "http://127.0.0.1:$HP/gen?cache-control=max-age=60&v=1&utm_source=a"
out=$(curl -s -D - -o /dev/null -H "$H" "http://127.0.0.1:$HP/gen?cache-control=max-age=60&utm_medium=b&v=1&gclid=z")
ct_check_match "key_drop_params: a hit" "$out" 'Cache-Status: cachet; hit'
ct_check "key_drop_params: one origin fetch" "$(ct_origin_total "$OP")" 1
out=$(curl -s -D - -o /dev/null -H "$H" "http://127.0.0.1:$HP/gen?cache-control=max-age=60&v=2")
ct_check_match "key_drop_params: other parameters still key" "$out" 'fwd=uri-miss'

# Header rules on the request to the origin (/echo shows what it got).
out=$(curl -s -H "$H" -H 'X-Site: spoofed' -H 'X-Tag: one' -H 'X-Drop: x' -H 'Cookie: a=1' \
    "http://127.0.0.1:$HP/echo")
ct_check_match "request_headers: set replaces" "$out" '\["X-Site", "www/echo"\]'
ct_check "request_headers: set replaces (once)" "$(grep -o 'X-Site' <<<"$out" | wc -l)" 1
ct_check_match "request_headers: append keeps the client's" "$out" '\["X-Tag", "one"\].*\["X-Tag", "two"\]'
ct_check_match "request_headers: a variable" "$out" '\["X-Client", "127\.0\.0\.1"\]'
ct_check "request_headers: remove, and set then remove" "$(grep -c 'X-Drop\|X-Gone' <<<"$out")" 0
ct_check "strip_cookie: no Cookie to the origin" "$(grep -c '"Cookie"' <<<"$out")" 0
out=$(curl -s -k --http2 -H "$H" -H 'X-Tag: one' "https://127.0.0.1:$SP/echo")
ct_check_match "request_headers over h2" "$out" '\["X-Site", "www/echo"\]'

# The access log names site and route.
ct_wait_until 60 grep -qs 'route=echo' "$CT_TMP/access.log"
ct_check_match "access log: site and route" "$(cat "$CT_TMP/access.log")" '"GET /echo HTTP/1.1" 200 [0-9]+ .* site=www route=echo'

# A host no site claims, no default site: as before sites (the origin answers).
ct_check "unknown host: the default group" \
    "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: other.test' "http://127.0.0.1:$HP/1k")" 200

# One connection that changes its Host between requests: each request gets
# its own host's site (a connection keeps the site of its last Host, and
# must never answer another host from it), over HTTP/1.1 and HTTP/2.
for scheme in http h2; do
    case $scheme in
        http) base="http://127.0.0.1:$HP"; opt=(--http1.1) ;;
        h2) base="https://127.0.0.1:$SP"; opt=(-k --http2) ;;
    esac
    w='%{http_code}:%{num_connects} '
    out=$(curl -s "${opt[@]}" -o /dev/null -w "$w" -H "$H" "$base/healthz" \
        --next -s "${opt[@]}" -o /dev/null -w "$w" -H 'Host: other.test' "$base/healthz" \
        --next -s "${opt[@]}" -o /dev/null -w "$w" -H 'Host: a.example.test' "$base/healthz" \
        --next -s "${opt[@]}" -o /dev/null -w "$w" -H 'Host: other.test' "$base/old" \
        --next -s "${opt[@]}" -o /dev/null -w "$w" -H "$H" "$base/old")
    ct_check "$scheme: one connection, the site follows the Host" "$out" "200:1 404:0 200:0 404:0 308:0 "
done

ct_done
