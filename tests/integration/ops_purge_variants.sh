#!/usr/bin/env bash
# A purge by URL reaches every variant of that URL: with cache.key_header the
# key carries the header's value, which the admin purge (POST /purge?url=)
# does not know, so it takes every value's key (and the key without one);
# other URLs are left alone. PURGE from a client purges its own variant. A
# route's key_cookie: the named cookie's value keys (wherever it sits in the
# Cookie field; other cookies do not), and the admin purge takes every
# value's key too.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start origin "$CT_BIN/cachet-origin" --port 0 --workers 1
OPORT=$(ct_wait_listen origin) || exit 1
cat >"$CT_TMP/cachet.conf" <<EOF2
workers = 2;
listen = ( { kind = "http"; address = "127.0.0.1:0"; } );
backends = ( { address = "127.0.0.1:$OPORT"; } );
cache = { size = "16M"; key_header = "X-Device"; purge_allow = [ "127.0.0.1/32" ]; };
admin = { listen = "127.0.0.1:0"; };
sites = ( { name = "c"; hosts = [ "cookie.test" ];
            routes = ( { name = "bylang"; match = { path = "/gen"; };
                         cache = { key_cookie = "lang"; }; } ); } );
EOF2
ct_start proxy "$CT_BIN/cachet" -c "$CT_TMP/cachet.conf"
PPORT=$(ct_wait_listen proxy http) || exit 1
APORT=$(ct_wait_listen proxy admin) || exit 1
P="http://127.0.0.1:$PPORT"
A="http://127.0.0.1:$APORT"
U="/gen?size=10&cache-control=max-age%3D600"
O="/gen?size=11&cache-control=max-age%3D600"
EU="http%3A%2F%2F127.0.0.1%3A$PPORT%2Fgen%3Fsize%3D10%26cache-control%3Dmax-age%253D600"
cs() { curl -s -D - -o /dev/null "${@:2}" "$P$1" | tr -d '\r' | sed -n 's/^Cache-Status: //p'; }

for dev in mobile desktop; do
    ct_check_match "$dev: stored" "$(cs "$U" -H "X-Device: $dev")" 'stored'
    ct_check_match "$dev: then a hit" "$(cs "$U" -H "X-Device: $dev")" '; hit'
done
ct_check_match "no X-Device: its own variant, stored" "$(cs "$U")" 'stored'
ct_check_match "another URL: stored" "$(cs "$O" -H "X-Device: mobile")" 'stored'

out=$(curl -s -w ' %{http_code}' -X POST "$A/purge?url=$EU")
ct_check "admin purge by URL takes all three variants" "$out" '{"purged":3}
 200'
for dev in mobile desktop; do
    ct_check_match "$dev: a miss after the purge" "$(cs "$U" -H "X-Device: $dev")" 'fwd=uri-miss'
done
ct_check_match "no X-Device: a miss after the purge" "$(cs "$U")" 'fwd=uri-miss'
ct_check_match "the other URL: still a hit" "$(cs "$O" -H "X-Device: mobile")" '; hit'

# The PURGE method purges the variant the purging request names.
code=$(curl -s -o /dev/null -w '%{http_code}' -X PURGE -H "X-Device: mobile" "$P$U")
ct_check "PURGE with X-Device: mobile: 200" "$code" 200
ct_check_match "mobile: a miss" "$(cs "$U" -H "X-Device: mobile")" 'fwd=uri-miss'
ct_check_match "desktop: still a hit" "$(cs "$U" -H "X-Device: desktop")" '; hit'

C=(-H "Host: cookie.test")
EC="http%3A%2F%2Fcookie.test%2Fgen%3Fsize%3D10%26cache-control%3Dmax-age%253D600"
ct_check_match "key_cookie, lang=en: stored" "$(cs "$U" "${C[@]}" -H 'Cookie: lang=en')" 'stored'
ct_check_match "lang=en among other cookies: a hit" \
    "$(cs "$U" "${C[@]}" -H 'Cookie: a=1; lang=en; b=2')" '; hit'
ct_check_match "lang=fr: its own variant, stored" "$(cs "$U" "${C[@]}" -H 'Cookie: lang=fr')" 'stored'
ct_check_match "no lang: its own, stored" "$(cs "$U" "${C[@]}" -H 'Cookie: a=1')" 'stored'
ct_check_match "no Cookie at all: the same as no lang, a hit" "$(cs "$U" "${C[@]}")" '; hit'
ct_check_match "lang= (empty) is not no lang: stored" "$(cs "$U" "${C[@]}" -H 'Cookie: lang=')" \
    'stored'
out=$(curl -s -w ' %{http_code}' -X POST "$A/purge?url=$EC")
ct_check "admin purge by URL takes the four cookie variants" "$out" '{"purged":4}
 200'
ct_check_match "lang=en: a miss after the purge" "$(cs "$U" "${C[@]}" -H 'Cookie: lang=en')" \
    'fwd=uri-miss'
ct_done
