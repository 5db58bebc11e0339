/*
 * tests/unit/test_conf_route.c: backend groups, sites and routes in the
 * configuration (issue 15): what loads, what `-T` prints back, and one test
 * per error message, each with its FILE:LINE.
 */
#include "tests/unit/test_conf_helpers.h"

#define GROUPS                                                                 \
    "backend_groups = ( { name = \"static\"; balance = \"hash\"; hash_on = \"header:X-User\";\n" \
    "  slow_start = \"30s\"; backends = ( { address = \"127.0.0.1:9001\"; },\n"                 \
    "                                     { address = \"127.0.0.1:9002\"; } ); } );\n"

static const char good[] =
    BASE GROUPS
    "sites = ( { name = \"www\"; hosts = [\"www.example.com\", \"*.Example.org\"];\n"
    "  backend_group = \"static\";\n"
    "  routes = ( { name = \"img\"; match = { path_prefix = \"/img/\"; methods = [\"GET\"]; };\n"
    "               cache = { ttl = \"1h\"; key_drop_params = [\"utm_*\", \"gclid\"]; };\n"
    "               strip_cookie = true; response_headers = [\"set X-Site: $site\"]; },\n"
    "             { match = { path_regex = \"^/api/v[0-9]+/\"; headers = [\"X-Debug: 1\"]; };\n"
    "               backend_group = \"default\"; cache = { pass = true; }; },\n"
    "             { match = { path = \"/old\"; };\n"
    "               redirect = { status = 301; location = \"https://$host/new$query\"; }; },\n"
    "             { match = { client = [\"10.0.0.0/8\"]; }; deny = [\"10.1.0.0/16\"]; } ); },\n"
    "  { name = \"other\"; default = true; } );\n";

static void test_good_loads(void)
{
    struct ct_conf *cf;
    EXPECT_OK(good, &cf);
    CU_ASSERT_EQUAL_FATAL(cf->ngroups, 1);
    CU_ASSERT_EQUAL(ct_conf_ngroups(cf), 2);
    CU_ASSERT_STRING_EQUAL(ct_conf_group_at(cf, 0)->name, "default");
    CU_ASSERT_EQUAL(ct_conf_group_at(cf, 0)->nbackends, 1);
    const struct ct_conf_group *g = ct_conf_group_at(cf, 1);
    CU_ASSERT_EQUAL(g->balance, CT_CONF_BALANCE_HASH);
    CU_ASSERT_EQUAL(g->hash_on, CT_CONF_HASH_HEADER);
    CU_ASSERT_STRING_EQUAL(g->hash_name, "X-User");
    CU_ASSERT_EQUAL(g->slow_start_ms, 30000);
    CU_ASSERT_STRING_EQUAL(g->backends[1].name, "static/127.0.0.1:9002");
    /* the flat list the proxy's backends parallel: default's first */
    CU_ASSERT_EQUAL_FATAL(cf->nflat, 3);
    CU_ASSERT_STRING_EQUAL(cf->flat_backends[0].name, "127.0.0.1:8081");
    CU_ASSERT_EQUAL(cf->flat_group[0], 0);
    CU_ASSERT_STRING_EQUAL(cf->flat_backends[2].name, "static/127.0.0.1:9002");
    CU_ASSERT_EQUAL(cf->flat_group[2], 1);
    CU_ASSERT_EQUAL_FATAL(cf->nsites, 2);
    const struct ct_conf_site *s = &cf->sites[0];
    CU_ASSERT_STRING_EQUAL(s->hosts[1], "*.example.org"); /* lower-cased */
    CU_ASSERT_EQUAL(s->group, 1);
    CU_ASSERT_EQUAL_FATAL(s->nroutes, 4);
    CU_ASSERT_EQUAL(s->routes[0].group, 1); /* the site's */
    CU_ASSERT_EQUAL(s->routes[1].group, 0);
    CU_ASSERT_EQUAL(s->routes[0].cache.ttl_ms, 3600000);
    CU_ASSERT_EQUAL(s->routes[0].cache.grace_ms, CT_CONF_INHERIT);
    CU_ASSERT_EQUAL(s->routes[0].cache.key_query, CT_CONF_QUERY_INHERIT);
    CU_ASSERT_EQUAL(s->routes[0].cache.honour_client_cc, CT_CONF_TRI_INHERIT);
    CU_ASSERT_EQUAL(s->routes[0].cache.nttl_statuses, 8);
    CU_ASSERT_TRUE(s->routes[1].cache.pass);
    CU_ASSERT_EQUAL(s->routes[2].redirect.status, 301);
    CU_ASSERT_TRUE(cf->sites[1].is_default);
    /* -T prints the sites and routes, and what it prints loads back the same */
    char *d1 = NULL, *d2 = NULL;
    size_t n;
    FILE *fp = open_memstream(&d1, &n);
    ct_conf_dump(cf, fp);
    fclose(fp);
    CU_ASSERT_PTR_NOT_NULL(strstr(d1, "path_prefix = \"/img/\";"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d1, "grace = \"inherit\";"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d1, "key_drop_params = [ \"utm_*\", \"gclid\" ];"));
    struct ct_conf *again = load(d1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(again);
    fp = open_memstream(&d2, &n);
    ct_conf_dump(again, fp);
    fclose(fp);
    CU_ASSERT_STRING_EQUAL(strchr(d1, '\n'), strchr(d2, '\n'));
    free(d1);
    free(d2);
    ct_conf_free(&again);
    ct_conf_free(&cf);
}

static void test_no_sites_is_today(void)
{
    struct ct_conf *cf;
    EXPECT_OK(BASE, &cf);
    CU_ASSERT_EQUAL(cf->nsites, 0);
    CU_ASSERT_EQUAL(ct_conf_ngroups(cf), 1);
    CU_ASSERT_EQUAL(ct_conf_group_at(cf, 0)->backends, cf->backends);
    ct_conf_free(&cf);
}

#define SITE(routes) "sites = ( { name = \"s\"; hosts = [\"a.example\"]; routes = ( " routes " ); } );\n"

static void test_group_errors(void)
{
    EXPECT_ERR(BASE "backend_groups = ( { name = \"default\"; backends = ( { address = \"h:1\"; } ); } );\n",
               "t.conf:3: backend_groups[0].name: \"default\" is the top-level backends (expected "
               "another name)");
    EXPECT_ERR(BASE "backend_groups = ( { name = \"g\"; backends = ( ); } );\n",
               "t.conf:3: backend_groups[0].backends: no backend (expected at least one { "
               "address = \"HOST:PORT\"; })");
    EXPECT_ERR(BASE "backend_groups = ( { name = \"g\"; balance = \"hash\"; hash_on = \"body\";\n"
                    "  backends = ( { address = \"h:1\"; } ); } );\n",
               "t.conf:3: backend_groups[0].hash_on: invalid value \"body\" (expected \"key\", "
               "\"client\", \"header:NAME\" or \"cookie:NAME\")");
    EXPECT_ERR(BASE "backend_groups = ( { name = \"g\"; backends = ( { address = \"h:1\"; } ); },\n"
                    "  { name = \"g\"; backends = ( { address = \"h:2\"; } ); } );\n",
               "t.conf:4: backend_groups[1].name: \"g\" is already the name of backend_groups[0] "
               "at t.conf:3 (expected a distinct name)");
    EXPECT_ERR(BASE "backend_groups = ( { name = \"g\"; balance = \"random\";\n"
                    "  backends = ( { address = \"h:1\"; } ); } );\n",
               "t.conf:3: backend_groups[0].balance: invalid value \"random\" (expected one of "
               "\"round_robin\", \"least_conn\" or \"hash\")");
    EXPECT_ERR(BASE "backend_groups = ( { name = \"g\"; backends = ( { address = \"h:1\";\n"
                    "  passive_fail_on = [\"nope\"]; } ); } );\n",
               "t.conf:4: backend_groups[0].backends[0].passive_fail_on: unknown failure \"nope\" "
               "(expected \"connect\", \"timeout\", \"reset\", \"invalid\" or \"5xx\")");
}

static void test_site_errors(void)
{
    EXPECT_ERR(BASE "sites = ( { name = \"a\"; hosts = [\"x.example\"]; },\n"
                    "  { name = \"a\"; hosts = [\"y.example\"]; } );\n",
               "t.conf:4: sites[1].name: duplicate site name \"a\", already at t.conf:3 "
               "(expected a distinct name)");
    EXPECT_ERR(BASE "sites = ( { name = \"a\"; hosts = [\"x.example\"]; },\n"
                    "  { name = \"b\"; hosts = [\"X.example\"]; } );\n",
               "t.conf:4: sites[1].hosts[0]: host \"x.example\" is already served by site \"a\" "
               "(expected each host in one site)");
    EXPECT_ERR(BASE "sites = ( { name = \"a\"; default = true; },\n"
                    "  { name = \"b\"; default = true; } );\n",
               "t.conf:4: sites[1].default: a second default site (expected at most one)");
    EXPECT_ERR(BASE "sites = ( { name = \"a\"; } );\n",
               "t.conf:3: sites[0].hosts: the site serves no host (expected hosts = "
               "[\"example.com\"], or default = true)");
    EXPECT_ERR(BASE "sites = ( { name = \"a\"; hosts = [\"x.example\"]; backend_group = \"nope\"; } );\n",
               "t.conf:3: sites[0].backend_group: unknown backend group \"nope\" (expected one "
               "of \"default\")");
    EXPECT_ERR(BASE "sites = ( { name = \"a\"; hosts = [\"bad host\"]; } );\n",
               "t.conf:3: sites[0].hosts[0]: invalid value \"bad host\" (expected server names "
               "such as [\"example.com\", \"*.example.com\"])");
}

static void test_route_errors(void)
{
    EXPECT_ERR(BASE SITE("{ match = { path_regex = \"^/a(b\"; }; }"),
               "t.conf:3: sites[0].routes[0].match.path_regex: invalid regular expression "
               "\"^/a(b\": missing closing parenthesis at offset 5 (expected a PCRE2 pattern)");
    EXPECT_ERR(BASE SITE("{ backend_group = \"api\"; }"),
               "t.conf:3: sites[0].routes[0].backend_group: unknown backend group \"api\" "
               "(expected one of \"default\")");
    EXPECT_ERR(BASE SITE("{ match = { client = [\"10.0.0.1/8\"]; }; }"),
               "t.conf:3: sites[0].routes[0].match.client[0]: invalid value \"10.0.0.1/8\" "
               "(expected address prefixes such as [\"127.0.0.0/8\", \"::1/128\"])");
    EXPECT_ERR(BASE SITE("{ match = { path = \"x\"; }; }"),
               "t.conf:3: sites[0].routes[0].match.path: invalid path \"x\" (expected a path "
               "starting with /)");
    EXPECT_ERR(BASE SITE("{ match = { headers = [\"Bad Name: 1\"]; }; }"),
               "t.conf:3: sites[0].routes[0].match.headers[0]: invalid condition \"Bad Name: "
               "1\" (expected \"Name\" or \"Name: value\")");
    EXPECT_ERR(BASE SITE("{ request_headers = [\"put X: 1\"]; }"),
               "t.conf:3: sites[0].routes[0].request_headers[0]: invalid rule \"put X: 1\" "
               "(expected \"set Name: value\", \"append Name: value\" or \"remove Name\")");
    EXPECT_ERR(BASE SITE("{ response_headers = [\"set X: $nope\"]; }"),
               "t.conf:3: sites[0].routes[0].response_headers[0]: unknown variable at \"$nope\" "
               "(expected $scheme, $host, $path, $query, $uri, $client, $request_id, $site, "
               "$route or $$)");
    EXPECT_ERR(BASE SITE("{ request_headers = [\"set Content-Length: 3\"]; }"),
               "t.conf:3: sites[0].routes[0].request_headers[0]: \"Content-Length\" is a framing "
               "or hop-by-hop field, which cachet manages (expected an end-to-end field)");
    EXPECT_ERR(BASE SITE("{ redirect = { status = 300; location = \"/x\"; }; }"),
               "t.conf:3: sites[0].routes[0].redirect.status: invalid redirect status 300 "
               "(expected 301, 302, 303, 307 or 308)");
    EXPECT_ERR(BASE SITE("{ redirect = { status = 301; }; }"),
               "t.conf:3: sites[0].routes[0].redirect.location: a redirect without a location "
               "(expected a URL such as \"https://$host$uri\")");
    EXPECT_ERR(BASE SITE("{ redirect = { status = 301; location = \"/\"; };\n"
                         "  respond = { status = 200; }; }"),
               "t.conf:4: sites[0].routes[0].respond: set together with redirect (expected one "
               "answer)");
    EXPECT_ERR(BASE SITE("{ require_headers = [\"X-Token\"]; }"),
               "t.conf:3: sites[0].routes[0].require_headers[0]: invalid condition \"X-Token\" "
               "(expected \"Name: value\")");
    EXPECT_ERR(BASE SITE("{ cache = { ttl_statuses = [\"2xx\"]; }; }"),
               "t.conf:3: sites[0].routes[0].cache.ttl_statuses[0]: invalid status \"2xx\" "
               "(expected a number from 100 to 599)");
    EXPECT_ERR(BASE SITE("{ cache = { min_ttl = \"1h\"; max_ttl = \"1m\"; }; }"),
               "t.conf:3: sites[0].routes[0].cache.min_ttl: larger than max_ttl (expected "
               "min_ttl <= max_ttl)");
    EXPECT_ERR(BASE SITE("{ cache = { key_drop_params = [\"*\"]; }; }"),
               "t.conf:3: sites[0].routes[0].cache.key_drop_params[0]: invalid parameter \"*\" "
               "(expected a name, or a prefix and *, such as \"utm_*\")");
    EXPECT_ERR(BASE SITE("{ cache = { grace = \"forever\"; }; }"),
               "t.conf:3: sites[0].routes[0].cache.grace: invalid value \"forever\" (expected a "
               "duration such as 500ms, 10s, 5m or 1h, from 0s to 365d, or \"inherit\")");
    EXPECT_ERR(BASE SITE("{ matches = { }; }"),
               "t.conf:3: sites[0].routes[0].matches: unknown setting (did you mean \"match\"?)");
}

static void test_realip_errors(void)
{
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:0\"; proxy_protocol = true; } );\n"
               "backends = ( { address = \"127.0.0.1:8081\"; } );\n",
               "t.conf:1: listen[0].proxy_protocol_from: empty while proxy_protocol is on "
               "(expected the load balancers' prefixes, such as [\"10.0.0.0/8\"])");
    EXPECT_ERR(BASE "real_ip_header = \"X-Real-IP\";\n",
               "t.conf:3: real_ip_header: invalid value \"X-Real-IP\" (expected one of "
               "\"X-Forwarded-For\" or \"Forwarded\")");
    EXPECT_ERR(BASE SITE("{ limit = { rate = -1; }; }"),
               "t.conf:3: sites[0].routes[0].limit.rate: invalid value -1 (expected an integer "
               "from 0 to 1000000)");
    EXPECT_ERR("listen = ( { kind = \"http\"; address = \"127.0.0.1:0\"; default_site = \"x\"; } );\n"
               "backends = ( { address = \"127.0.0.1:8081\"; } );\n",
               "t.conf:1: listen[0].default_site: unknown site \"x\" (expected the name of one of "
               "sites)");
    struct ct_conf *cf;
    EXPECT_OK(BASE "trusted_proxies = [\"10.0.0.0/8\"]; real_ip_header = \"Forwarded\";\n", &cf);
    CU_ASSERT_EQUAL(cf->ntrusted_proxies, 1);
    CU_ASSERT_EQUAL(cf->real_ip_header, CT_CONF_REAL_IP_FORWARDED);
    ct_conf_free(&cf);
}

/* A route an earlier one covers is reported; a narrower earlier one is fine. */
static void test_shadowed(void)
{
    EXPECT_ERR(BASE SITE("{ match = { path_prefix = \"/a/\"; }; },\n"
                         "  { match = { path_prefix = \"/a/b/\"; methods = [\"GET\"]; }; }"),
               "t.conf:4: sites[0].routes[1]: can never match: sites[0].routes[0] at t.conf:3 "
               "matches every request this route matches (expected it before that route, or a "
               "narrower earlier one)");
    EXPECT_ERR(BASE SITE("{ },\n  { match = { path = \"/x\"; }; }"),
               "t.conf:4: sites[0].routes[1]: can never match: sites[0].routes[0] at t.conf:3 "
               "matches every request this route matches (expected it before that route, or a "
               "narrower earlier one)");
    EXPECT_ERR(BASE SITE("{ match = { client = [\"10.0.0.0/8\"]; headers = [\"X-A\"]; }; },\n"
                         "  { match = { client = [\"10.2.0.0/16\"]; headers = [\"x-a: 1\"]; }; }"),
               "t.conf:4: sites[0].routes[1]: can never match: sites[0].routes[0] at t.conf:3 "
               "matches every request this route matches (expected it before that route, or a "
               "narrower earlier one)");
    struct ct_conf *cf;
    EXPECT_OK(BASE SITE("{ match = { path_prefix = \"/a/b/\"; }; },\n"
                        "  { match = { path_prefix = \"/a/\"; }; },\n"
                        "  { match = { path_regex = \"^/a\"; }; },\n"
                        "  { match = { path_prefix = \"/b/\"; methods = [\"GET\"]; query = [\"x\"]; }; },\n"
                        "  { match = { client = [\"10.0.0.0/8\"]; }; },\n"
                        "  { match = { client = [\"::/0\"]; }; }"),
              &cf);
    ct_conf_free(&cf);
}

void ct_test_register(void)
{
    CT_SUITE("conf routes", {"a config with groups, sites and routes loads", test_good_loads},
             {"no sites: one default group, as before", test_no_sites_is_today},
             {"backend group errors", test_group_errors}, {"site errors", test_site_errors},
             {"route errors", test_route_errors}, {"shadowed routes", test_shadowed},
             {"real address and limit errors", test_realip_errors});
}
