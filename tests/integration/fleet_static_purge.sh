#!/usr/bin/env bash
# Issue 17, purges in a fleet without Redis (static members): a client's
# PURGE, and the admin's purges and bans, are applied on the node that got
# them and sent over HTTP to the other members' admin listeners (the path
# used while Redis is down), with the hop header, so the nodes that receive
# them do not send them on. Three cachet nodes and one cachet-origin on
# loopback; no redis-server.
# needs: cachet cachet-origin
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ct_start_origin --workers 2
read -r PA PB PC AA AB AC < <(ct_free_ports 6)
declare -A PORT=([a]=$PA [b]=$PB [c]=$PC) ADMIN=([a]=$AA [b]=$AB [c]=$AC)
# mirror_ttl 1h: the edges keep their copies, so each node's own copy shows
# whether the purge reached it. A route of its own keys a GET of /gen
# without the utm_* parameters; a PURGE of /gen is keyed as that GET.
sites() { # the parameters the route (a GET's, so not a PURGE's) leaves out of the key
    echo "sites = ( { name = \"s\"; hosts = [ \"fleet.test\" ];
  routes = ( { name = \"gen\"; match = { path = \"/gen\"; methods = [ \"GET\", \"HEAD\" ]; };
               cache = { key_drop_params = [ $1 ]; }; } ); } );"
}
ct_fleet_start 'mirror_ttl = "1h";' "$(sites '"utm_*"')"

ct_fleet_probes
get() { curl -s -o /dev/null -H "$H" "http://127.0.0.1:${PORT[$1]}$2"; }
cpurge() { curl -s -o /dev/null -w '%{http_code}' -X PURGE -H "$H" "${@:3}" "http://127.0.0.1:${PORT[$1]}$2"; }
on_all() { local n; for n in a b c; do get "$n" "$1"; done; }
# NODE K: how many purges of k=K NODE's admin applied, and whether one removed
# its copy (a request would not tell: a miss on an edge refills the owner)
applied() { grep -c "admin: purge.*k=$2" "$CT_TMP/node$1.err"; }
removed() { grep -q "admin: purge.*k=$2: 1 objects" "$CT_TMP/node$1.err"; }
fanouts() { local n; for n in a b c; do metric "$n" fleet_http_fanout; done | xargs; }

# ---- a client's PURGE on a: applied there, on b and c over HTTP, once.
U="/gen?size=100&$MA&k=sp1"
on_all "$U"
for n in a b c; do ct_check_match "node $n: a hit before the PURGE" "$(cs "$n" "$U")" '; hit'; done
ct_check "PURGE on a: 200" "$(cpurge a "$U")" 200
ct_wait_until 30 metric_is a fleet_http_fanout 2
ct_check "a handed it to the fan-out and sent it to both admins" \
    "$(metric a fleet_client_purges) $(metric a fleet_http_fanout)" "1 2"
ct_wait_until 30 removed b sp1 && ct_pass "... b removed its copy" || ct_failed "... b removed it"
ct_wait_until 30 removed c sp1 && ct_pass "... c removed its copy" || ct_failed "... c removed it"
ct_check "b and c applied it once each and sent it on to no one" \
    "$(applied b sp1) $(applied c sp1) $(fanouts)" "1 1 2 0 0"
ct_check "nothing counted as unsent" "$(metric a fleet_fanout_unsent)" 0

# ---- a soft PURGE on c: stale on a and b, not gone.
U2="/gen?size=100&$MA&k=sp2"
on_all "$U2"
ct_check "soft PURGE on c: 200" "$(cpurge c "$U2" -H 'Soft-Purge: 1')" 200
ct_wait_until 30 metric_is c fleet_http_fanout 2
soft_on() { grep -q "admin: purge (soft) url .*k=sp2: 1 objects" "$CT_TMP/node$1.err"; }
ct_wait_until 30 soft_on a && ct_pass "a applied it as a soft purge" || ct_failed "a: soft purge"
ct_wait_until 30 soft_on b && ct_pass "b applied it as a soft purge" || ct_failed "b: soft purge"

# ---- the admin's purge on b, without Redis, reaches a and c too.
U3="/gen?size=100&$MA&k=sp3"
on_all "$U3"
EU=$(/usr/bin/python3 -c \
    'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "http://fleet.test$U3")
ct_check_match "admin purge on b" \
    "$(curl -s -X POST "http://127.0.0.1:$AB/purge?url=$EU")" '"purged":1'
ct_wait_until 30 removed a sp3 && ct_pass "... a removed its copy" || ct_failed "... a removed it"
ct_wait_until 30 removed c sp3 && ct_pass "... c removed its copy" || ct_failed "... c removed it"
ct_check "sent by b only" "$(fanouts)" "2 2 2"

# ---- the admin's ban on c, without Redis, is added on a and b too.
ct_check_match "a ban on c" \
    "$(curl -s -X POST --data-binary 'obj.url ^= "/gen?k=banme"' "http://127.0.0.1:$AC/ban")" '"id":1,'
banned() { grep -q 'admin: ban 1 added: obj.url ^= "/gen?k=banme"' "$CT_TMP/node$1.err"; }
ct_wait_until 30 banned a && ct_pass "... a added it" || ct_failed "... a added it"
ct_wait_until 30 banned b && ct_pass "... b added it" || ct_failed "... b added it"
ct_check "sent by c only" "$(fanouts)" "2 2 4"

# ---- a route's own key rule: the nodes a PURGE reaches build the key a
# request for its URL has (utm_source left out), not cache.key_*'s.
U4="/gen?size=100&utm_source=mail&$MA&k=sp4"
on_all "$U4"
ct_check_match "keyed without utm_source" "$(cs a "/gen?size=100&utm_source=web&$MA&k=sp4")" '; hit'
ct_check "PURGE on a, keyed as a GET by the route's key rule: 200" "$(cpurge a "$U4")" 200
ct_wait_until 30 removed b sp4 && ct_pass "... b removed its copy" || ct_failed "... b removed it"
ct_wait_until 30 removed c sp4 && ct_pass "... c removed its copy" || ct_failed "... c removed it"

# ---- b reloaded with a rule that also leaves ref out: the purges b gets
# are keyed by the new rule (its purges' route table follows the reload).
ct_fleet_conf b 'mirror_ttl = "1h";' "$(sites '"utm_*", "ref"')"
kill -HUP "$(ct_pid nodeb)"
in_use() { grep -q 'in use by every worker' "$CT_TMP/nodeb.err"; }
ct_wait_until 30 in_use || ct_failed "b reloads"
U5="/gen?size=100&ref=x&$MA&k=sp5"
get b "$U5"
ct_check_match "b keys without ref now" "$(cs b "/gen?size=100&ref=y&$MA&k=sp5")" '; hit'
cpurge a "$U5" >/dev/null
ct_wait_until 30 removed b sp5 && ct_pass "... a PURGE from a removes b's copy (the new rule)" ||
    ct_failed "... a PURGE from a removes b's copy (the new rule)"

# ---- a hop-marked PURGE (as a peer sends) stays where it lands.
k0=$(metric a fleet_client_purges)
cpurge a "/gen?k=hop" -H 'Cachet-Fleet-Hop: 1' >/dev/null
ct_check "a hop-marked PURGE is this node's only" \
    "$(($(metric a fleet_client_purges) - k0)) $(fanouts)" "0 6 2 4"
ct_done
