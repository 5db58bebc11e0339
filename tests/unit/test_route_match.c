/*
 * tests/unit/test_route_match.c: the route table (proxy/route/): hosts
 * (exact, wildcards, port, case, trailing dot, default site), route order,
 * every kind of condition, regex anchoring, CIDR v4/v6, access control,
 * templates and the key's query.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/conf.h"
#include "proxy/route/route.h"
#include "tests/unit/ct_test.h"

#define BASE                                                                   \
    "listen = ( { kind = \"http\"; address = \"127.0.0.1:0\"; } );\n"        \
    "backends = ( { address = \"127.0.0.1:8081\"; } );\n"                       \
    "backend_groups = ( { name = \"api\"; backends = ( { address = \"127.0.0.1:9\"; } ); } );\n"

static struct ct_conf *cf;
static struct ct_route_table *tab;
static struct ct_route_scratch *scr;

static void setup(const char *text)
{
    struct ct_conf_errors errs;
    ct_conf_errors_init(&errs);
    if (ct_conf_load_string(text, "t.conf", &cf, &errs) != CT_OK)
        ct_conf_errors_print(&errs, stderr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    char err[200];
    CU_ASSERT_EQUAL_FATAL(ct_route_table_build(cf, &tab, err, sizeof(err)), CT_OK);
    if (!scr)
        scr = ct_route_scratch_new();
}

static void teardown(void)
{
    ct_route_table_free(&tab);
    ct_conf_free(&cf);
}

/* A request: "METHOD TARGET", host, client address, up to 4 fields. */
struct treq {
    struct ct_route_req r;
    uint8_t addr[16];
    const char *fields[4][2];
};

static bool field(void *arg, struct ct_str name, size_t nth, struct ct_str *value)
{
    struct treq *t = arg;
    for (size_t i = 0; i < 4 && t->fields[i][0]; i++) {
        if (strlen(t->fields[i][0]) == name.len &&
            strncasecmp(t->fields[i][0], name.p, name.len) == 0 && nth-- == 0) {
            *value = ct_str_c(t->fields[i][1]);
            return true;
        }
    }
    return false;
}

static struct treq mk(const char *method, const char *host, const char *target, const char *ip)
{
    struct treq t = {0};
    t.r.method = ct_str_c(method);
    t.r.host = ct_str_c(host);
    t.r.target = ct_str_c(target);
    t.r.field = field;
    if (ip && inet_pton(AF_INET, ip, t.addr) == 1)
        t.r.family = AF_INET;
    else if (ip && inet_pton(AF_INET6, ip, t.addr) == 1)
        t.r.family = AF_INET6;
    return t;
}

/* "site/route" of the route chosen for T. */
static const char *pick(struct treq *t)
{
    static char buf[128];
    t->r.addr = t->addr;
    t->r.arg = t;
    const struct ct_route *r = ct_route_choose(tab, &t->r, scr);
    snprintf(buf, sizeof(buf), "%s/%s", r->site_name, r->route_name);
    return buf;
}

static const char *route_of(const char *host, const char *target)
{
    struct treq t = mk("GET", host, target, "192.0.2.1");
    return pick(&t);
}

static void test_hosts(void)
{
    setup(BASE "sites = ( { name = \"www\"; hosts = [\"www.example.com\", \"example.com\"]; },\n"
               "  { name = \"wild\"; hosts = [\"*.example.com\"]; },\n"
               "  { name = \"deep\"; hosts = [\"*.b.example.com\"]; } );\n");
    CU_ASSERT_STRING_EQUAL(route_of("www.example.com", "/"), "www/-");
    CU_ASSERT_STRING_EQUAL(route_of("WWW.Example.COM", "/"), "www/-");
    CU_ASSERT_STRING_EQUAL(route_of("www.example.com:8080", "/"), "www/-");
    CU_ASSERT_STRING_EQUAL(route_of("www.example.com.", "/"), "www/-");
    CU_ASSERT_STRING_EQUAL(route_of("example.com", "/"), "www/-");
    CU_ASSERT_STRING_EQUAL(route_of("a.example.com", "/"), "wild/-");
    CU_ASSERT_STRING_EQUAL(route_of("x.a.example.com", "/"), "wild/-"); /* any depth */
    CU_ASSERT_STRING_EQUAL(route_of("x.b.example.com", "/"), "deep/-"); /* longest wins */
    CU_ASSERT_STRING_EQUAL(route_of("b.example.com", "/"), "wild/-");
    CU_ASSERT_STRING_EQUAL(route_of("example.org", "/"), "-/-"); /* no default site */
    CU_ASSERT_STRING_EQUAL(route_of("", "/"), "-/-");
    CU_ASSERT_STRING_EQUAL(route_of("xexample.com", "/"), "-/-");
    teardown();
}

static void test_default_site(void)
{
    setup(BASE "sites = ( { name = \"a\"; hosts = [\"a.example\"]; },\n"
               "  { name = \"fallback\"; default = true; backend_group = \"api\"; } );\n");
    CU_ASSERT_STRING_EQUAL(route_of("a.example", "/"), "a/-");
    CU_ASSERT_STRING_EQUAL(route_of("b.example", "/"), "fallback/-");
    struct treq t = mk("GET", "zzz", "/", NULL);
    t.r.arg = &t;
    t.r.addr = t.addr;
    CU_ASSERT_EQUAL(ct_route_choose(tab, &t.r, scr)->group, 1);
    CU_ASSERT_EQUAL(ct_route_count(tab), 3); /* table fallback, a/-, fallback/- */
    t.r.default_site = 1; /* a listener whose default is sites[0] */
    CU_ASSERT_STRING_EQUAL(pick(&t), "a/-");
    t.r.host = CT_STR("a.example"); /* a name still wins over the default */
    t.r.default_site = 2;
    CU_ASSERT_STRING_EQUAL(pick(&t), "a/-");
    teardown();
}

#define SITE(routes) "sites = ( { name = \"s\"; hosts = [\"s.example\"]; routes = ( " routes " ); } );\n"

static void test_order_and_paths(void)
{
    setup(BASE SITE("{ name = \"exact\"; match = { path = \"/a\"; }; },\n"
                    "{ name = \"deep\"; match = { path_prefix = \"/a/b/\"; }; },\n"
                    "{ name = \"pre\"; match = { path_prefix = \"/a\"; }; },\n"
                    "{ name = \"re\"; match = { path_regex = \"\\\\.(png|jpg)$\"; }; },\n"
                    "{ name = \"unanch\"; match = { path_regex = \"x[0-9]\"; }; }"));
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/a"), "s/exact");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/a?x=1"), "s/exact"); /* query is not path */
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/a/b/c"), "s/deep");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/a/c"), "s/pre");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/ab"), "s/pre");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/A"), "s/-"); /* paths are case-sensitive */
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/i/p.png"), "s/re");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/i/p.png.html"), "s/-"); /* $ anchors */
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/i/p.txt?.jpg"), "s/-"); /* not the query */
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/zz/x1/"), "s/unanch"); /* unanchored */
    teardown();
}

/* The literal start of "^/..." regexes is checked before PCRE2 runs: it must
 * never refuse what the regex accepts. */
static void test_regex_literal(void)
{
    setup(BASE SITE("{ name = \"alt\"; match = { path_regex = \"^/x/|/y/\"; }; },\n"
                    "{ name = \"star\"; match = { path_regex = \"^/ab*c\"; }; },\n"
                    "{ name = \"grp\"; match = { path_regex = \"^/long-literal-(one|two)$\"; }; },\n"
                    "{ name = \"exact\"; match = { path = \"/exactly-long-path\"; }; },\n"
                    "{ name = \"q\"; match = { path_regex = \"^/q?r\"; }; }"));
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/x/1"), "s/alt");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/zz/y/1"), "s/alt"); /* '^' binds one side */
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/ac"), "s/star");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/abbbc"), "s/star");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/long-literal-two"), "s/grp");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/long-literal-three"), "s/-");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/long-literaL-one"), "s/-");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/exactly-long-path"), "s/exact");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/exactly-long-patH"), "s/-");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/exactly-long-path/"), "s/-");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/r"), "s/q");
    CU_ASSERT_STRING_EQUAL(route_of("s.example", "/qr"), "s/q");
    teardown();
}

static void test_conditions(void)
{
    setup(BASE SITE("{ name = \"post\"; match = { methods = [\"POST\", \"PUT\"]; }; },\n"
                    "{ name = \"hdr\"; match = { headers = [\"X-Debug: 1\"]; }; },\n"
                    "{ name = \"hdrany\"; match = { headers = [\"X-Any\"]; }; },\n"
                    "{ name = \"ck\"; match = { cookies = [\"beta=yes\"]; }; },\n"
                    "{ name = \"q\"; match = { query = [\"v=2\", \"debug\"]; }; },\n"
                    "{ name = \"v4\"; match = { client = [\"10.0.0.0/8\"]; }; },\n"
                    "{ name = \"v6\"; match = { client = [\"2001:db8::/32\"]; }; }"));
    struct treq t = mk("PUT", "s.example", "/", "192.0.2.1");
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/post");
    t = mk("GET", "s.example", "/", "192.0.2.1");
    t.fields[0][0] = "x-debug", t.fields[0][1] = "1";
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/hdr");
    t.fields[0][1] = "10"; /* values are exact */
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/-");
    t.fields[1][0] = "X-Debug", t.fields[1][1] = "1"; /* a second field of that name */
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/hdr");
    t = mk("GET", "s.example", "/", "192.0.2.1");
    t.fields[0][0] = "X-Any", t.fields[0][1] = "";
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/hdrany");
    t = mk("GET", "s.example", "/", "192.0.2.1");
    t.fields[0][0] = "Cookie", t.fields[0][1] = "a=1; beta=yess";
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/-");
    t.fields[1][0] = "Cookie", t.fields[1][1] = "beta=yes"; /* h2 splits cookies */
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/ck");
    t = mk("GET", "s.example", "/?v=2&debug", "192.0.2.1");
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/q");
    t = mk("GET", "s.example", "/?v=2&debug=", "192.0.2.1"); /* present, empty */
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/q");
    t = mk("GET", "s.example", "/?v=22&debug", "192.0.2.1");
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/-");
    t = mk("GET", "s.example", "/", "10.200.3.4");
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/v4");
    t = mk("GET", "s.example", "/", "11.0.0.1");
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/-");
    t = mk("GET", "s.example", "/", "2001:db8:ffff::1");
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/v6");
    t = mk("GET", "s.example", "/", "2001:db9::1");
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/-");
    t = mk("GET", "s.example", "/", NULL); /* unknown address matches no prefix */
    CU_ASSERT_STRING_EQUAL(pick(&t), "s/-");
    teardown();
}

static void test_access(void)
{
    setup(BASE SITE("{ match = { path_prefix = \"/adm\"; }; allow = [\"127.0.0.0/8\", \"::1/128\"];\n"
                    "  deny = [\"127.0.0.2/32\"]; },\n"
                    "{ match = { path_prefix = \"/k\"; }; require_headers = [\"X-Key: s3cret\"]; }"));
    struct treq t = mk("GET", "s.example", "/adm", "127.0.0.1");
    t.r.addr = t.addr;
    const struct ct_route *r = ct_route_choose(tab, &t.r, scr);
    CU_ASSERT_EQUAL(ct_route_check_access(r, &t.r), CT_ROUTE_ALLOW);
    t = mk("GET", "s.example", "/adm", "127.0.0.2");
    t.r.addr = t.addr;
    CU_ASSERT_EQUAL(ct_route_check_access(r, &t.r), CT_ROUTE_DENY_ADDR);
    t = mk("GET", "s.example", "/adm", "::1");
    t.r.addr = t.addr;
    CU_ASSERT_EQUAL(ct_route_check_access(r, &t.r), CT_ROUTE_ALLOW);
    t = mk("GET", "s.example", "/adm", "192.0.2.1");
    t.r.addr = t.addr;
    CU_ASSERT_EQUAL(ct_route_check_access(r, &t.r), CT_ROUTE_DENY_ADDR);
    t = mk("GET", "s.example", "/k", "192.0.2.1");
    t.r.addr = t.addr;
    t.r.arg = &t;
    r = ct_route_choose(tab, &t.r, scr);
    CU_ASSERT_EQUAL(ct_route_check_access(r, &t.r), CT_ROUTE_DENY_HEADER);
    t.fields[0][0] = "x-key", t.fields[0][1] = "s3cret";
    CU_ASSERT_EQUAL(ct_route_check_access(r, &t.r), CT_ROUTE_ALLOW);
    teardown();
}

static void test_templates_and_query(void)
{
    setup(BASE SITE("{ match = { path = \"/old\"; };\n"
                    "  redirect = { status = 308; location = \"https://${host}:8443/new$query $$5\"; };\n"
                    "  response_headers = [\"set X-Who: $client via $site/$route\", \"remove Server\"];\n"
                    "  cache = { key_drop_params = [\"utm_*\", \"gclid\"]; }; name = \"old\"; }"));
    struct treq t = mk("GET", "s.example", "/old?a=1", "192.0.2.1");
    t.r.addr = t.addr;
    const struct ct_route *r = ct_route_choose(tab, &t.r, scr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->location);
    struct ct_route_vars v = {0};
    v.v[CT_CONF_VAR_HOST] = CT_STR("s.example");
    v.v[CT_CONF_VAR_QUERY] = CT_STR("?a=1");
    v.v[CT_CONF_VAR_CLIENT] = CT_STR("192.0.2.1");
    v.v[CT_CONF_VAR_SITE] = CT_STR("s");
    v.v[CT_CONF_VAR_ROUTE] = CT_STR("old");
    char out[128];
    size_t n = ct_route_expand(r->location, &v, out, sizeof(out));
    CU_ASSERT_EQUAL(n, strlen("https://s.example:8443/new?a=1 $5"));
    CU_ASSERT_NSTRING_EQUAL(out, "https://s.example:8443/new?a=1 $5", n);
    CU_ASSERT_EQUAL(ct_route_expand(r->location, &v, out, 5), n); /* cut, full length told */
    CU_ASSERT_NSTRING_EQUAL(out, "https", 5);
    CU_ASSERT_EQUAL_FATAL(r->nresp_rules, 2);
    CU_ASSERT_EQUAL(r->resp_rules[0].op, CT_ROUTE_HDR_SET);
    CU_ASSERT_TRUE(ct_str_eq(r->resp_rules[0].name, CT_STR("X-Who")));
    n = ct_route_expand(r->resp_rules[0].value, &v, out, sizeof(out));
    CU_ASSERT_NSTRING_EQUAL(out, "192.0.2.1 via s/old", n);
    CU_ASSERT_EQUAL(r->resp_rules[1].op, CT_ROUTE_HDR_REMOVE);
    CU_ASSERT_PTR_NULL(r->resp_rules[1].value);
    n = ct_route_key_query(r, CT_STR("utm_source=x&a=1&gclid=9&utm=2&b"), out, sizeof(out));
    CU_ASSERT_NSTRING_EQUAL(out, "a=1&utm=2&b", n);
    CU_ASSERT_EQUAL(n, strlen("a=1&utm=2&b"));
    n = ct_route_key_query(r, CT_STR("utm_a=1&utm_b=2"), out, sizeof(out));
    CU_ASSERT_EQUAL(n, 0);
    teardown();
}

static void test_no_sites(void)
{
    setup(BASE);
    CU_ASSERT_STRING_EQUAL(route_of("anything", "/"), "-/-");
    CU_ASSERT_EQUAL(ct_route_count(tab), 1);
    teardown();
    ct_route_scratch_free(&scr);
}

void ct_test_register(void)
{
    CT_SUITE("route table", {"hosts: exact, wildcard, port, case, dot", test_hosts},
             {"the default site", test_default_site},
             {"route order and paths, regex anchoring", test_order_and_paths},
             {"regex literal prefilter", test_regex_literal},
             {"methods, headers, cookies, query, CIDR v4/v6", test_conditions},
             {"allow, deny, required headers", test_access},
             {"templates, header rules, the key's query", test_templates_and_query},
             {"no sites: one fallback", test_no_sites});
}
