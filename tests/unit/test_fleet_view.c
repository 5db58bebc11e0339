/*
 * tests/unit/test_fleet_view.c: the fleet section's checks (conf/conf_fleet.c)
 * and the view (proxy/fleet/): owners agree between nodes, a member marked
 * down gives up only its own keys, the hop header is trusted from members
 * or with the token only, `cachet -T` shows the file's members only (and
 * says so), the clients' PURGE queue refuses past its bound
 * and reports each burst of refusals once.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <unistd.h>

#include "proxy/balance/balance.h"
#include "proxy/fleet/fleet.h"
#include "tests/unit/test_conf_helpers.h"

#define MEMBERS                                                                \
    "  members = ( { name = \"a\"; address = \"10.0.0.1:80\"; },\n"             \
    "              { name = \"b\"; address = \"10.0.0.2:80\"; },\n"             \
    "              { name = \"c\"; address = \"10.0.0.3:80\"; } );\n"

static struct ct_conf *node(const char *self, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof(text), BASE "fleet = {\n  self = \"%s\";\n" MEMBERS "%s};\n", self,
             extra);
    struct ct_conf *cf = load(text);
    if (!cf)
        ct_conf_errors_print(&errs, stderr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    return cf;
}

/* The owner's group of KEY on node CF at NOW, no load bound. */
static size_t owner_of(const struct ct_fleet *f, const struct ct_conf *cf, uint64_t key,
                       ct_time_t now)
{
    return ct_fleet_owner_group(f, cf, key, now, NULL, NULL);
}

static void test_checks(void)
{
    EXPECT_ERR(BASE "fleet = {\n  self = \"d\";\n" MEMBERS "};\n",
               "t.conf:4: fleet.self: \"d\" is not a member's name (expected one of "
               "fleet.members)");
    EXPECT_ERR(BASE "fleet = {\n" MEMBERS "};\n",
               "t.conf:4: fleet.members: set without fleet.self (expected this node's member "
               "name in fleet.self, or no members)");
    EXPECT_ERR(BASE "fleet = { self = \"a\"; };\n",
               "t.conf:3: fleet.self: set without fleet.members (expected every node of the "
               "fleet, this one included)");
    EXPECT_ERR(BASE "fleet = { self = \"a\";\n  members = ( { name = \"a\"; address = "
                    "\"10.0.0.1:80\"; },\n  { name = \"a\"; address = \"10.0.0.2:80\"; } ); };\n",
               "t.conf:5: fleet.members[1].name: \"a\" is already member 0's name (expected "
               "distinct names)");
    EXPECT_ERR(BASE "fleet = { self = \"a\";\n  members = ( { name = \"a\"; address = "
                    "\"10.0.0.1:80\"; },\n  { name = \"b\"; address = \"10.0.0.1:80\"; } ); };\n",
               "t.conf:5: fleet.members[1].address: 10.0.0.1:80 is already member \"a\"'s "
               "address (expected one address per member)");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS "  hop_header = \"a b\"; };\n",
               "t.conf:8: fleet.hop_header: invalid header name \"a b\" (expected a token such "
               "as X-Name)");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS "  load_factor = 99; };\n",
               "t.conf:8: fleet.load_factor: 99 is below the mean (expected 0, off, or 100 to "
               "1000)");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS "  token = \"short\"; };\n",
               "t.conf:8: fleet.token: not a token (expected 16 to 256 visible ASCII "
               "characters, no spaces)");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS "  owner_down = \"maybe\"; };\n",
               "t.conf:8: fleet.owner_down: invalid value \"maybe\" (expected one of \"origin\" or "
               "\"error\")");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS "  fanout_queue = 65537; };\n",
               "t.conf:8: fleet.fanout_queue: out of range: 65537 (expected an integer from 0 "
               "to 65536)");
    struct ct_conf *dflt = node("a", "");
    CU_ASSERT_EQUAL(dflt->fleet.fanout_queue, 4096); /* the catch-up is on by default */
    ct_conf_free(&dflt);
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS "  mirror_ttl = \"1500ms\"; };\n",
               "t.conf:8: fleet.mirror_ttl: 1500 ms is not a whole number of seconds (expected "
               "0s, 1s, 2s, ...)");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS "  redis_sentinels = [ \"x\" ]; };\n",
               "t.conf:8: fleet.redis_sentinels: set without fleet.redis_sentinel (expected the "
               "master's name, which these Sentinels watch)");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS
                    "  redis = \"10.0.0.9:26379\"; redis_sentinel = \"m\";\n"
                    "  redis_sentinels = [ \"10.0.0.8\" ]; };\n",
               "t.conf:9: fleet.redis_sentinels[0]: \"10.0.0.8\" is not IP:PORT (expected e.g. "
               "10.0.0.21:26379)");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS "  redis_username = \"u\"; };\n",
               "t.conf:8: fleet.redis_username: set without fleet.redis_password (expected the "
               "user's password too)");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS
                    "  redis_sentinel_password = \"p\"; };\n",
               "t.conf:8: fleet.redis_sentinel_password: set without fleet.redis_sentinel "
               "(expected the master's name, asked of the Sentinels)");
    EXPECT_ERR(BASE "fleet = {\n  self = \"a\";\n" MEMBERS "  learn_members = true; };\n",
               "t.conf:8: fleet.learn_members: true without fleet.redis (expected fleet.redis, "
               "through which members register, or learn_members = false)");
}

/* Members learned through Redis (ct_conf_build_learned): appended after the
 * file's, marked, with peer groups and hop trust like theirs; never one the
 * file names or whose address it gives another; none with learn_members
 * false or without Redis. */
static struct ct_conf *build_learned(const char *extra, const struct ct_conf_fleet_member *l,
                                     size_t n)
{
    char path[] = "/tmp/ct-fleet-learn-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp, BASE "fleet = {\n  self = \"a\";\n"
                "  members = ( { name = \"a\"; address = \"10.0.0.1:80\"; },\n"
                "              { name = \"b\"; address = \"10.0.0.2:80\"; } );\n%s};\n",
            extra);
    fclose(fp);
    struct ct_cli cli = {.conf_file = path};
    struct ct_conf *cf = NULL;
    ct_conf_errors_init(&errs);
    if (ct_conf_build_learned(&cli, l, n, &cf, &errs) != CT_OK)
        ct_conf_errors_print(&errs, stderr);
    unlink(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    return cf;
}

static void test_learned(void)
{
    struct ct_conf_fleet_member l[3] = {{.name = "c"}, {.name = "d"}, {.name = "b"}};
    CU_ASSERT_EQUAL(ct_conf_parse_addr("10.0.0.3:80", &l[0].addr), CT_OK);
    CU_ASSERT_EQUAL(ct_conf_parse_addr("10.0.0.1:80", &l[1].addr), CT_OK); /* a's */
    CU_ASSERT_EQUAL(ct_conf_parse_addr("10.0.0.9:80", &l[2].addr), CT_OK); /* b is the file's */
    CU_ASSERT_EQUAL(ct_conf_parse_addr("10.0.0.3:8082", &l[0].admin), CT_OK);
    struct ct_conf *cf = build_learned("  redis = \"127.0.0.1:6379\";\n", l, 3);
    const struct ct_conf_fleet *fl = &cf->fleet;
    CU_ASSERT_EQUAL(fl->nmembers, 3);
    CU_ASSERT_STRING_EQUAL(fl->members[2].name, "c");
    CU_ASSERT_TRUE(fl->members[2].learned);
    CU_ASSERT_FALSE(fl->members[1].learned);
    CU_ASSERT_STRING_EQUAL(fl->members[1].addr.host, "10.0.0.2"); /* the file's word */
    CU_ASSERT_EQUAL(fl->members[2].admin.port, 8082);
    CU_ASSERT_EQUAL(fl->npeer_groups, 2);
    CU_ASSERT_STRING_EQUAL(ct_conf_group_at(cf, fl->peer_group[2])->name, "fleet:c");
    struct sockaddr_in sin = {.sin_family = AF_INET};
    inet_pton(AF_INET, "10.0.0.3", &sin.sin_addr);
    CU_ASSERT_TRUE(ct_fleet_hop_trusted(fl, (struct sockaddr *)&sin, CT_STR("1")));
    /* -T shows the file's members, and says the learned one is not */
    char *d = dump_text(cf);
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "# static members (this file's); 1 learned from Redis at "
                                     "run time, not shown: c\n"));
    CU_ASSERT_PTR_NULL(strstr(d, "name = \"c\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "name = \"b\""));
    struct ct_conf *back = load(d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(back->fleet.nmembers, 2);
    ct_conf_free(&back);
    free(d);
    ct_conf_free(&cf);
    cf = build_learned("  redis = \"127.0.0.1:6379\";\n", l, 0);
    d = dump_text(cf);
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "# static members (this file's); members learned from Redis "
                                     "at run time (learn_members) join them and are not shown\n"));
    free(d);
    ct_conf_free(&cf);
    cf = build_learned("", l, 0); /* no Redis: nothing to learn, nothing to say */
    d = dump_text(cf);
    CU_ASSERT_PTR_NULL(strstr(d, "static members"));
    free(d);
    ct_conf_free(&cf);
    cf = build_learned("  redis = \"127.0.0.1:6379\"; learn_members = false;\n", l, 3);
    CU_ASSERT_EQUAL(cf->fleet.nmembers, 2);
    ct_conf_free(&cf);
    cf = build_learned("", l, 3);
    CU_ASSERT_EQUAL(cf->fleet.nmembers, 2);
    ct_conf_free(&cf);
    for (size_t i = 0; i < 3; i++) {
        free(l[i].addr.host);
        free(l[i].admin.host);
    }
}

/* One peer group per other member, after the configured groups, with the
 * fleet's timeouts and no passive health; none without a fleet. */
static void test_peer_groups(void)
{
    struct ct_conf *cf = node("b", "  connect_timeout = \"200ms\";\n");
    CU_ASSERT_EQUAL(cf->fleet.self_index, 1);
    CU_ASSERT_EQUAL(cf->fleet.npeer_groups, 2);
    CU_ASSERT_EQUAL(ct_conf_ngroups(cf), 3);
    CU_ASSERT_EQUAL(cf->fleet.peer_group[1], SIZE_MAX);
    const struct ct_conf_group *ga = ct_conf_group_at(cf, cf->fleet.peer_group[0]);
    CU_ASSERT_STRING_EQUAL(ga->name, "fleet:a");
    CU_ASSERT_STRING_EQUAL(ga->backends[0].host, "10.0.0.1");
    CU_ASSERT_EQUAL(ga->backends[0].connect_timeout_ms, 200);
    CU_ASSERT_EQUAL(ga->backends[0].max_fails, 0);
    CU_ASSERT_TRUE(ct_fleet_is_peer_group(cf, cf->fleet.peer_group[2]));
    CU_ASSERT_FALSE(ct_fleet_is_peer_group(cf, 0));
    /* the flat list: the origin, then the two peers (counters per peer) */
    CU_ASSERT_EQUAL(cf->nflat, 3);
    CU_ASSERT_STRING_EQUAL(cf->flat_backends[2].name, "fleet:c");
    ct_conf_free(&cf);
    struct ct_conf *one;
    EXPECT_OK(BASE, &one);
    CU_ASSERT_EQUAL(ct_conf_ngroups(one), 1);
    struct ct_fleet *f = ct_fleet_new();
    CU_ASSERT_EQUAL(owner_of(f, one, 42, 0), SIZE_MAX);
    ct_fleet_free(&f);
    ct_conf_free(&one);
}

/* The member name a group index stands for on node CF (self: its own). */
static const char *owner_name(const struct ct_conf *cf, size_t g)
{
    if (g == SIZE_MAX)
        return cf->fleet.self;
    return ct_conf_group_at(cf, g)->name + 6; /* "fleet:" */
}

static void test_owners(void)
{
    struct ct_conf *cf[3] = {node("a", ""), node("b", ""), node("c", "")};
    struct ct_fleet *f[3] = {ct_fleet_new(), ct_fleet_new(), ct_fleet_new()};
    unsigned per[3] = {0};
    for (uint64_t k = 0; k < 3000; k++) {
        uint64_t key = ct_balance_hash(&k, sizeof(k));
        const char *o = owner_name(cf[0], owner_of(f[0], cf[0], key, 100));
        /* every node names the same owner */
        CU_ASSERT_STRING_EQUAL(owner_name(cf[1], owner_of(f[1], cf[1], key, 100)), o);
        CU_ASSERT_STRING_EQUAL(owner_name(cf[2], owner_of(f[2], cf[2], key, 100)), o);
        per[o[0] - 'a']++;
    }
    for (int i = 0; i < 3; i++) /* about a third each */
        CU_ASSERT_TRUE(per[i] > 800 && per[i] < 1200);
    /* a marks c down: only c's keys move (to a or b), the rest stay */
    size_t gc = cf[0]->fleet.peer_group[2];
    CU_ASSERT_EQUAL(ct_fleet_members_down(f[0], cf[0], 100), 0);
    ct_fleet_peer_failed(f[0], cf[0], gc, 100);
    /* the fleet_members_down gauge: c alone, on a's view only */
    CU_ASSERT_EQUAL(ct_fleet_members_down(f[0], cf[0], 101), 1);
    CU_ASSERT_EQUAL(ct_fleet_members_down(f[1], cf[1], 101), 0);
    unsigned moved = 0, wrong = 0;
    for (uint64_t k = 0; k < 3000; k++) {
        uint64_t key = ct_balance_hash(&k, sizeof(k));
        const char *before = owner_name(cf[1], owner_of(f[1], cf[1], key, 100));
        const char *now = owner_name(cf[0], owner_of(f[0], cf[0], key, 101));
        if (strcmp(before, now) != 0) {
            moved++;
            wrong += strcmp(before, "c") != 0 || strcmp(now, "c") == 0;
        }
    }
    CU_ASSERT_EQUAL(moved, per[2]);
    CU_ASSERT_EQUAL(wrong, 0);
    /* down_time (5 s by default) later, c has its keys back */
    unsigned back = 0;
    for (uint64_t k = 0; k < 3000; k++) {
        uint64_t key = ct_balance_hash(&k, sizeof(k));
        back += owner_of(f[0], cf[0], key, 105.5) == gc;
    }
    CU_ASSERT_EQUAL(back, per[2]);
    CU_ASSERT_EQUAL(ct_fleet_members_down(f[0], cf[0], 105.5), 0);
    for (int i = 0; i < 3; i++) {
        ct_fleet_free(&f[i]);
        ct_conf_free(&cf[i]);
    }
}

/* Bounded load (fleet.load_factor): an owner is passed over only past the
 * bound and the floor, for the key's next choice down the ranking; this
 * node ranked next means the origin from here; the other nodes, with no
 * load, still name the owner. */
static void test_bounded_load(void)
{
    struct ct_conf *a = node("a", "  load_factor = 150; load_floor = 2;\n");
    struct ct_conf *b = node("b", "");
    struct ct_fleet *fa = ct_fleet_new(), *fb = ct_fleet_new();
    size_t gb = a->fleet.peer_group[1], gc = a->fleet.peer_group[2];
    /* a key b owns whose next choice is c, and one whose next is a */
    uint64_t to_c = 0, to_a = 0;
    bool got_c = false, got_a = false;
    for (uint64_t k = 0; k < 1000 && !(got_c && got_a); k++) {
        uint64_t key = ct_balance_hash(&k, sizeof(k));
        if (owner_of(fa, a, key, 1) != gb)
            continue;
        unsigned full[3] = {0, 100, 0};
        bool spilled = false;
        size_t next = ct_fleet_owner_group(fa, a, key, 1, full, &spilled);
        CU_ASSERT_TRUE(spilled);
        if (next == gc && !got_c) {
            to_c = key;
            got_c = true;
        } else if (next == SIZE_MAX && !got_a) {
            to_a = key;
            got_a = true;
        }
    }
    CU_ASSERT_TRUE_FATAL(got_c && got_a);
    bool spilled = true;
    /* at the floor: 1 in flight to b, +1 is 2, within load_floor = 2 */
    unsigned load[3] = {0, 1, 0};
    CU_ASSERT_EQUAL(ct_fleet_owner_group(fa, a, to_c, 1, load, &spilled), gb);
    CU_ASSERT_FALSE(spilled);
    /* past the floor, within 150 % of the mean: b 4, c 4 -> cap ceil(1.5 * 9 / 2) = 7 */
    unsigned even[3] = {0, 4, 4};
    CU_ASSERT_EQUAL(ct_fleet_owner_group(fa, a, to_c, 1, even, &spilled), gb);
    CU_ASSERT_FALSE(spilled);
    /* b 6, c 1: cap ceil(1.5 * 8 / 2) = 6, and 6 + 1 > 6: the next choice */
    unsigned hot[3] = {0, 6, 1};
    CU_ASSERT_EQUAL(ct_fleet_owner_group(fa, a, to_c, 1, hot, &spilled), gc);
    CU_ASSERT_TRUE(spilled);
    spilled = false;
    CU_ASSERT_EQUAL(ct_fleet_owner_group(fa, a, to_a, 1, hot, &spilled), SIZE_MAX);
    CU_ASSERT_TRUE(spilled);
    /* the bound is relative: b and c equally loaded, far past the floor, keep it */
    unsigned both[3] = {0, 50, 50};
    CU_ASSERT_EQUAL(ct_fleet_owner_group(fa, a, to_c, 1, both, &spilled), gb);
    CU_ASSERT_FALSE(spilled);
    /* b's own view, and a's without the counts, are unchanged */
    CU_ASSERT_EQUAL(owner_of(fa, a, to_c, 1), gb);
    CU_ASSERT_EQUAL(owner_of(fb, b, to_c, 1), SIZE_MAX);
    /* load_factor = 0 (b's configuration): counts are ignored */
    spilled = false;
    CU_ASSERT_EQUAL(ct_fleet_owner_group(fb, b, to_c, 1, hot, &spilled), SIZE_MAX);
    CU_ASSERT_FALSE(spilled);
    ct_fleet_free(&fa);
    ct_fleet_free(&fb);
    ct_conf_free(&a);
    ct_conf_free(&b);
}

static struct sockaddr_in v4(const char *ip)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, ip, &sa.sin_addr);
    return sa;
}

static void test_hop_trust(void)
{
    struct ct_conf *cf = node("a", "");
    struct sockaddr_in m = v4("10.0.0.2"), o = v4("192.0.2.9");
    CU_ASSERT_TRUE(ct_fleet_hop_trusted(&cf->fleet, (struct sockaddr *)&m, CT_STR("1")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted(&cf->fleet, (struct sockaddr *)&o, CT_STR("1")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted(&cf->fleet, NULL, CT_STR("1")));
    CU_ASSERT_EQUAL(ct_fleet_hop_value(&cf->fleet).len, 1);
    /* the peer as a connection names it */
    CU_ASSERT_TRUE(ct_fleet_hop_trusted_ip(&cf->fleet, CT_STR("10.0.0.2"), CT_STR("1")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted_ip(&cf->fleet, CT_STR("192.0.2.9"), CT_STR("1")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted_ip(&cf->fleet, CT_STR("10.0.0.2x"), CT_STR("1")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted_ip(&cf->fleet, CT_STR("10.0.0"), CT_STR("1")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted_ip(&cf->fleet, (struct ct_str){0}, CT_STR("1")));
    ct_conf_free(&cf);
    /* a member written otherwise than inet_ntop writes its address */
    cf = load(BASE "fleet = { self = \"a\";\n  members = ( { name = \"a\"; address = "
                   "\"[0:0::1]:80\"; },\n  { name = \"b\"; address = \"10.0.0.2:80\"; } ); };\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    CU_ASSERT_TRUE(ct_fleet_hop_trusted_ip(&cf->fleet, CT_STR("::1"), CT_STR("1")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted_ip(&cf->fleet, CT_STR("::2"), CT_STR("1")));
    ct_conf_free(&cf);
    /* with a token: the token, from anywhere; a member without it is not trusted */
    cf = node("a", "  token = \"0123456789abcdef-fleet\";\n");
    CU_ASSERT_TRUE(ct_fleet_hop_trusted(&cf->fleet, (struct sockaddr *)&o,
                                        CT_STR("0123456789abcdef-fleet")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted(&cf->fleet, (struct sockaddr *)&m, CT_STR("1")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted(&cf->fleet, (struct sockaddr *)&m,
                                         CT_STR("0123456789abcdef-fleeT")));
    CU_ASSERT_TRUE(ct_fleet_hop_trusted_ip(&cf->fleet, CT_STR("192.0.2.9"),
                                           CT_STR("0123456789abcdef-fleet")));
    CU_ASSERT_FALSE(ct_fleet_hop_trusted_ip(&cf->fleet, CT_STR("10.0.0.2"), CT_STR("1")));
    CU_ASSERT_EQUAL(ct_fleet_hop_value(&cf->fleet).len, 22);
    ct_conf_free(&cf);
}

static void count_wake(void *arg) { ++*(int *)arg; }

static void test_outbox(void)
{
    struct ct_fleet *f = ct_fleet_new();
    size_t burst = 9;
    CU_ASSERT_EQUAL(ct_fleet_outbox_push(f, CT_STR("url=x"), 2, &burst), CT_FLEET_PUSH_CLOSED);
    CU_ASSERT_EQUAL(burst, 0);
    int woken = 0;
    ct_fleet_outbox_open(f, count_wake, &woken);
    CU_ASSERT_EQUAL(ct_fleet_outbox_push(f, CT_STR("url=a"), 2, &burst), CT_FLEET_PUSH_QUEUED);
    CU_ASSERT_EQUAL(ct_fleet_outbox_push(f, CT_STR("url=b"), 2, &burst), CT_FLEET_PUSH_QUEUED);
    CU_ASSERT_EQUAL(burst, 0);
    /* full: the first refusal of the burst says 1, the next ones count on */
    CU_ASSERT_EQUAL(ct_fleet_outbox_push(f, CT_STR("url=c"), 2, &burst), CT_FLEET_PUSH_FULL);
    CU_ASSERT_EQUAL(burst, 1);
    CU_ASSERT_EQUAL(ct_fleet_outbox_push(f, CT_STR("url=d"), 2, &burst), CT_FLEET_PUSH_FULL);
    CU_ASSERT_EQUAL(burst, 2);
    CU_ASSERT_EQUAL(woken, 2);
    char *q = ct_fleet_outbox_pop(f);
    CU_ASSERT_STRING_EQUAL(q, "url=a");
    free(q);
    /* room again: the push taken reports the burst that ended, once */
    CU_ASSERT_EQUAL(ct_fleet_outbox_push(f, CT_STR("url=e"), 2, &burst), CT_FLEET_PUSH_QUEUED);
    CU_ASSERT_EQUAL(burst, 2);
    CU_ASSERT_EQUAL(ct_fleet_outbox_push(f, CT_STR("url=f"), 3, &burst), CT_FLEET_PUSH_QUEUED);
    CU_ASSERT_EQUAL(burst, 0);
    /* a bound of 0 queues nothing */
    CU_ASSERT_EQUAL(ct_fleet_outbox_push(f, CT_STR("url=g"), 0, &burst), CT_FLEET_PUSH_FULL);
    q = ct_fleet_outbox_pop(f);
    CU_ASSERT_STRING_EQUAL(q, "url=b");
    free(q);
    ct_fleet_free(&f);
}

void ct_test_register(void)
{
    CT_SUITE("fleet", {"fleet section checks", test_checks},
             {"peer groups derived", test_peer_groups},
             {"members learned through Redis", test_learned},
             {"owners agree, a down member moves only its keys", test_owners},
             {"bounded load: past the bound and the floor, the next choice", test_bounded_load},
             {"hop header trust", test_hop_trust},
             {"PURGE queue bound and bursts", test_outbox});
}
