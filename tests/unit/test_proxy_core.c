/*
 * tests/unit/test_proxy_core.c: the request core (fetch.c and the cache
 * glue) driven through a capture protocol, against a real cachet-origin.
 *
 * Each test builds a worker (no listeners) on a configuration whose backend
 * is a cachet-origin started for the test, makes requests as struct ct_req
 * carried by the capture protocol below (what a protocol is asked to send is
 * recorded: the plan's status, the head's fields from the stored field index
 * or the origin's message, body bytes, done/fail), and runs the worker's
 * loop on this thread until the requests are done. The origin's own counters
 * (GET /_origin/stats) say how many fetches reached it.
 *
 * That is what only shell tests covered before: coalescing, stale-while-
 * revalidate with its background refresh (the null protocol), stale-if-
 * error, the 304 merge, Range on a miss, a purge during a fill, a client
 * that goes away mid-fill, a request body that arrives in pieces, back-
 * pressure from a client that does not read, and the waiter timeout's two
 * actions. Each case also asserts the steps the request went through
 * (r->trail, proxy/core/req_step.h). The capture protocol is also the proof
 * that the core needs nothing of HTTP/1 from its carrier.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct_test.h"
#include "http/http_hdrindex.h"
#include "proxy/core/core.h"
#include "proxy/core/stored.h"
#include "proxy/core/proto.h"
#include "proxy/core/req.h"
#include "proxy/ctx.h"
#include "proxy/h1/h1.h"
#include "proxy/ops/ops_int.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/wire.h"

#ifndef CT_ORIGIN_BIN
#error "CT_ORIGIN_BIN names the cachet-origin binary (tests/CMakeLists.txt)"
#endif

/* ---- the scripted origin ------------------------------------------------------ */

static pid_t origin_pid;
static unsigned origin_port;

static void origin_start(void)
{
    int fds[2];
    CT_ASSERT(pipe(fds) == 0);
    origin_pid = fork();
    CT_ASSERT(origin_pid >= 0);
    if (origin_pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(CT_ORIGIN_BIN, CT_ORIGIN_BIN, "--port", "0", "--bind", "127.0.0.1", "--workers",
              "1", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[256];
    origin_port = 0;
    /* "listening on 127.0.0.1:PORT" comes first; a slow start only delays it. */
    while (origin_port == 0 && fgets(line, sizeof(line), f)) {
        const char *p = strstr(line, "127.0.0.1:");
        if (p)
            origin_port = (unsigned)atoi(p + strlen("127.0.0.1:"));
    }
    fclose(f);
    CT_ASSERT(origin_port != 0);
}

static void origin_stop(void)
{
    if (origin_pid > 0) {
        kill(origin_pid, SIGKILL);
        waitpid(origin_pid, NULL, 0);
    }
    origin_pid = 0;
}

/* One blocking HTTP/1.0 exchange with the origin itself (not through the
 * worker): its counters. Returns the body's "total" (-1 on failure). */
static long origin_call(const char *method, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)origin_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    char req[256], buf[8192];
    int n = snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nContent-Length: 0\r\n\r\n", method, path);
    CT_ASSERT(write(fd, req, (size_t)n) == n);
    size_t got = 0;
    ssize_t k;
    while (got < sizeof(buf) - 1 && (k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)k;
    close(fd);
    buf[got] = '\0';
    const char *t = strstr(buf, "\"total\":");
    return t ? strtol(t + 8, NULL, 10) : 0;
}

static long origin_total(void) { return origin_call("GET", "/_origin/stats"); }
static void origin_reset(void) { origin_call("POST", "/_origin/stats/reset"); }

/* ---- a worker with no listeners ------------------------------------------------- */

static struct ct_conf *cf;
static struct ct_proxy px;
static struct ct_worker *w;
static struct ct_listener_conf lc = {.kind = CT_LISTEN_HTTP, .name = "capture"};

static void worker_start(const char *cache)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "listen = ( { kind = \"http\"; address = \"127.0.0.1:0\"; } );\n"
             "backends = ( { address = \"127.0.0.1:%u\"; max_fails = 0; } );\n"
             "cache = { size = \"16M\"; hit_for_miss = \"0s\"; %s };\n"
             "admin = { listen = \"off\"; };\n",
             origin_port, cache);
    struct ct_conf_errors errs;
    ct_conf_errors_init(&errs);
    if (ct_conf_load_string(text, "test", &cf, &errs) != CT_OK) {
        ct_conf_errors_print(&errs, stderr);
        CT_ASSERT(!"the test's configuration is valid");
    }
    px = (struct ct_proxy){.magic = CT_PROXY_MAGIC, .cf = cf};
    px.nbackends = cf->nbackends;
    px.backends = ct_xcalloc(cf->nbackends, sizeof(*px.backends));
    for (size_t i = 0; i < cf->nbackends; i++)
        CT_ASSERT(ct_ops_backend_resolve(&cf->backends[i], &px.backends[i], ""));
    px.cache = ct_wcache_store_new(cf);
    w = ct_worker_new(&px, 0);
    CT_ASSERT(w != NULL);
}

static void worker_stop(void)
{
    ct_worker_cut(w);
    ct_worker_join_free(&w);
    ct_cache_free(&px.cache);
    free(px.backends);
    ct_conf_free(&cf);
}

/* ---- the capture protocol ----------------------------------------------------- */

struct cap {
    struct ct_req r;
    struct ct_http_parser *rp;
    char text[1024];           /* the request as written; the parser's views point here */
    unsigned status;           /* of the head it was asked to send (0: none yet) */
    char cache_status[256];
    char etag[64];
    bool from_object;          /* the head came from a stored object (deliver_head) */
    struct evbuffer *body;     /* every body byte it was asked to send */
    bool ended, done, failed;
    bool full;                 /* its output is full: the core must wait (ct_req_drained) */
    enum ct_close why;
    /* the request body the client has sent so far, and whether that is all */
    struct evbuffer *req_body;
    bool req_body_end;
    bool body_wanted;          /* body_read said NEED: ct_req_body_readable when more came */
};

static struct cap *cap_of(struct ct_req *r) { return CT_CONTAINER_OF(r, struct cap, r); }

static void copy_str(char *dst, size_t cap, struct ct_str s)
{
    snprintf(dst, cap, "%.*s", (int)s.len, s.p);
}

static void cap_deliver_head(struct ct_req *r, struct ct_obj *obj, const struct ct_resp_plan *plan)
{
    struct cap *c = cap_of(r);
    c->status = plan->status;
    c->from_object = true;
    copy_str(c->cache_status, sizeof(c->cache_status), plan->cache_status);
    /* What HTTP/2 will do: the stored fields from the index, no parsing. */
    struct ct_stored_blk blk;
    struct ct_str wire;
    struct ct_hdrindex hx;
    CT_ASSERT(ct_stored_blk_get(obj, &blk, &wire));
    CT_ASSERT(ct_stored_index(&blk, wire, &hx));
    int i = ct_hdrindex_find(&hx, CT_HDR_ETAG, 0);
    if (i >= 0)
        copy_str(c->etag, sizeof(c->etag), ct_hdrindex_field(&hx, (unsigned)i).value);
    /* Nothing of the body now: the core sends it all through send_obj_piece. */
}

static void cap_send_obj_piece(struct ct_req *r, struct ct_obj *obj, struct ct_str piece)
{
    (void)obj;
    evbuffer_add(cap_of(r)->body, piece.p, piece.len);
}

static void cap_ended(struct ct_req *r) { cap_of(r)->ended = true; }

static void cap_send_synth(struct ct_req *r, unsigned status, struct ct_str body,
                           struct ct_str cache_status)
{
    struct cap *c = cap_of(r);
    c->status = status;
    copy_str(c->cache_status, sizeof(c->cache_status), cache_status);
    evbuffer_add(c->body, body.p, body.len);
}

static bool cap_output_full(struct ct_req *r) { return cap_of(r)->full; }
static void cap_flush(struct ct_req *r) { (void)r; }

static bool cap_body_finish(struct ct_req *r)
{
    size_t used;
    return ct_http_parser_feed(cap_of(r)->rp, NULL, 0, &used, NULL) == CT_HTTP_EV_END;
}

static bool cap_frame_response(struct ct_req *r, const struct ct_http_msg *resp)
{
    (void)r, (void)resp;
    return false;
}

static void cap_send_head(struct ct_req *r, const struct ct_http_msg *resp,
                          const struct ct_fwd_resp_extra *extra, bool body_direct)
{
    (void)body_direct;
    struct cap *c = cap_of(r);
    c->status = resp->status;
    copy_str(c->cache_status, sizeof(c->cache_status), extra->cache_status);
}

static void cap_send_interim(struct ct_req *r, const struct ct_http_msg *resp)
{
    (void)r, (void)resp;
}

static struct evbuffer *cap_body_out(struct ct_req *r, bool *chunked)
{
    *chunked = false;
    return cap_of(r)->body;
}

static void cap_send_body(struct ct_req *r, struct evbuffer *src, size_t n)
{
    evbuffer_remove_buffer(src, cap_of(r)->body, n);
}

static bool cap_tunnel(struct ct_req *r, const struct ct_http_msg *resp)
{
    (void)r, (void)resp;
    return false;
}

static enum ct_body_ev cap_body_read(struct ct_req *r, struct evbuffer *dst, bool chunked,
                                     size_t *n)
{
    struct cap *c = cap_of(r);
    CT_ASSERT(!chunked); /* the tests' bodies have a Content-Length */
    *n = evbuffer_get_length(c->req_body);
    if (*n) {
        evbuffer_remove_buffer(c->req_body, dst, *n);
        return CT_BODY_DATA;
    }
    if (c->req_body_end)
        return CT_BODY_END;
    c->body_wanted = true;
    return CT_BODY_NEED;
}

static void cap_body_hold(struct ct_req *r, bool hold) { (void)r, (void)hold; }
static void cap_nothing(struct ct_req *r) { (void)r; }
static void cap_done(struct ct_req *r) { cap_of(r)->done = true; }

static void cap_fail(struct ct_req *r, enum ct_close why)
{
    struct cap *c = cap_of(r);
    c->failed = true;
    c->why = why;
}

static const struct ct_proto cap_proto = {
    .name = "capture",
    .deliver_head = cap_deliver_head,
    .send_obj_piece = cap_send_obj_piece,
    .send_obj_end = cap_ended,
    .send_synth = cap_send_synth,
    .output_full = cap_output_full,
    .flush = cap_flush,
    .body_finish = cap_body_finish,
    .frame_response = cap_frame_response,
    .send_head = cap_send_head,
    .send_interim = cap_send_interim,
    .send_continue = cap_nothing,
    .body_out = cap_body_out,
    .send_body = cap_send_body,
    .send_end = cap_ended,
    .tunnel = cap_tunnel,
    .body_read = cap_body_read,
    .body_hold = cap_body_hold,
    .respond = cap_nothing,
    .answered = cap_nothing,
    .done = cap_done,
    .fail = cap_fail,
};

static uint64_t next_id;

/* A request for TARGET with EXTRA header lines ("Name: value\r\n"...), started. */
static struct cap *request(const char *method, const char *target, const char *extra)
{
    struct cap *c = ct_xcalloc(1, sizeof(*c));
    c->body = evbuffer_new();
    c->req_body = evbuffer_new();
    c->req_body_end = true;
    c->rp = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    ct_http_parser_set_gateway(c->rp, true);
    int n = snprintf(c->text, sizeof(c->text), "%s %s HTTP/1.1\r\nHost: core.test\r\n%s\r\n",
                     method, target, extra ? extra : "");
    size_t used;
    CT_ASSERT(ct_http_parser_feed(c->rp, c->text, (size_t)n, &used, NULL) == CT_HTTP_EV_HEAD);
    c->r = (struct ct_req){.magic = CT_REQ_MAGIC, .proto = &cap_proto, .w = w, .lc = &lc,
                           .peer = "127.0.0.1:1", .peer_ip_len = 9, .conn_id = ++next_id,
                           .msg = ct_http_parser_msg(c->rp)};
    ct_req_start(&c->r);
    return c;
}

static void cap_free(struct cap *c)
{
    ct_req_free(&c->r);
    ct_http_parser_free(&c->rp);
    evbuffer_free(c->body);
    evbuffer_free(c->req_body);
    free(c);
}

static size_t body_len(const struct cap *c) { return evbuffer_get_length(c->body); }

static bool cache_status_has(const struct cap *c, const char *s)
{
    return strstr(c->cache_status, s) != NULL;
}

/* Did C's request go through exactly these steps (req_step.h)? */
static bool trail_is(const struct cap *c, const char *want)
{
    char buf[256];
    ct_req_trail(&c->r, buf, sizeof(buf));
    if (strcmp(buf, want) == 0)
        return true;
    fprintf(stderr, "steps: got \"%s\", want \"%s\"\n", buf, want);
    return false;
}

/* Run the worker's loop until every request in CAPS is done or failed
 * (bounded: 60 s, generous under sanitizers). */
static bool run_until_done(struct cap **caps, size_t n)
{
    ct_time_t end = ct_time_mono() + 60;
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++)
            left += !caps[i]->done && !caps[i]->failed;
        if (left == 0)
            return true;
        if (ct_time_mono() > end)
            return false;
        event_base_loop(w->base, EVLOOP_ONCE);
    }
}

static bool run_one(struct cap *c) { return run_until_done(&c, 1); }

/* Run the loop for MS milliseconds (background work, expiry). */
static void run_for(unsigned ms)
{
    ct_time_t end = ct_time_mono() + ms / 1000.0;
    while (ct_time_mono() < end) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(w->base, &tv);
        event_base_dispatch(w->base);
    }
}

/* Run the loop until C was asked to send a head (bounded: 60 s). */
static bool head_sent(struct cap *c)
{
    ct_time_t end = ct_time_mono() + 60;
    while (c->status == 0) {
        if (ct_time_mono() > end)
            return false;
        event_base_loop(w->base, EVLOOP_ONCE);
    }
    return true;
}

/* Wait (running the loop) until the origin has counted N requests. */
static bool origin_reaches(long n)
{
    ct_time_t end = ct_time_mono() + 60;
    while (origin_total() < n) {
        if (ct_time_mono() > end)
            return false;
        run_for(20);
    }
    return true;
}

static void setup(const char *cache)
{
    origin_start();
    worker_start(cache);
    origin_reset();
}

static void teardown(void)
{
    worker_stop();
    origin_stop();
}

/* ---- the tests ---------------------------------------------------------------- */

#define MAXAGE "cache-control=max-age%3D60"

static void test_miss_then_hit(void)
{
    setup("");
    struct cap *a = request("GET", "/bytes/1000?" MAXAGE "&etag=%22v1%22", NULL);
    CU_ASSERT_TRUE(run_one(a));
    CU_ASSERT_EQUAL(a->status, 200);
    CU_ASSERT_EQUAL(body_len(a), 1000);
    CU_ASSERT_TRUE(cache_status_has(a, "stored"));
    CU_ASSERT_TRUE(a->ended);
    /* the fetching client reads its own fill, like any reader */
    CU_ASSERT_TRUE(trail_is(a, "recv route cache lookup fill stream done"));
    struct cap *b = request("GET", "/bytes/1000?" MAXAGE "&etag=%22v1%22", NULL);
    CU_ASSERT_TRUE(run_one(b));
    CU_ASSERT_EQUAL(b->status, 200);
    CU_ASSERT_TRUE(b->from_object);
    CU_ASSERT_TRUE(cache_status_has(b, "hit"));
    CU_ASSERT_STRING_EQUAL(b->etag, "\"v1\""); /* read from the stored field index */
    CU_ASSERT_EQUAL(body_len(b), 1000);
    CU_ASSERT_TRUE(trail_is(b, "recv route cache lookup deliver stream done"));
    CU_ASSERT_EQUAL(origin_total(), 1);
    cap_free(a);
    cap_free(b);
    teardown();
}

static void test_coalescing(void)
{
    setup("");
    enum { N = 8 };
    struct cap *c[N];
    for (int i = 0; i < N; i++)
        c[i] = request("GET", "/bytes/5000?" MAXAGE "&delay=300", NULL);
    CU_ASSERT_TRUE(run_until_done(c, N));
    for (int i = 0; i < N; i++) {
        CU_ASSERT_EQUAL(c[i]->status, 200);
        CU_ASSERT_EQUAL(body_len(c[i]), 5000);
        if (i > 0) /* behind c[0]'s fill */
            CU_ASSERT_TRUE(trail_is(c[i], "recv route cache lookup wait deliver stream done"));
        cap_free(c[i]);
    }
    CU_ASSERT_EQUAL(origin_total(), 1); /* one fetch for all eight */
    teardown();
}

static void test_stale_while_revalidate(void)
{
    setup("");
    /* max-age=2: the refreshed copy must stay fresh while the loop below
     * polls for it, even when a loaded machine stalls it for a second (with
     * max-age=1 it went stale again and a second refresh was counted). */
    const char *t = "/bytes/100?cache-control=max-age%3D2%2C%20stale-while-revalidate%3D60";
    struct cap *a = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(a));
    CU_ASSERT_EQUAL(origin_total(), 1);
    run_for(3100); /* stale now, within its stale-while-revalidate */
    struct cap *b = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(b));
    CU_ASSERT_EQUAL(b->status, 200);
    CU_ASSERT_TRUE(b->from_object);
    CU_ASSERT_TRUE(cache_status_has(b, "stale-while-revalidate"));
    CU_ASSERT_EQUAL(body_len(b), 100);
    /* The refresh is a request of its own, with no client (the null protocol). */
    CU_ASSERT_TRUE(origin_reaches(2));
    /* Until the refresh is stored, requests still get the stale copy (it is
     * BUSY): poll for the fresh hit, bounded. */
    struct cap *c = NULL;
    for (ct_time_t end = ct_time_mono() + 60; ct_time_mono() < end; run_for(50)) {
        if (c)
            cap_free(c);
        c = request("GET", t, NULL);
        CU_ASSERT_TRUE(run_one(c));
        if (!cache_status_has(c, "stale"))
            break;
    }
    CU_ASSERT_TRUE(cache_status_has(c, "hit"));
    CU_ASSERT_FALSE(cache_status_has(c, "stale"));
    CU_ASSERT_EQUAL(origin_total(), 2); /* exactly one refresh */
    cap_free(a);
    cap_free(b);
    cap_free(c);
    teardown();
}

static void test_stale_if_error(void)
{
    setup("");
    const char *t = "/bytes/100?cache-control=max-age%3D1%2C%20stale-if-error%3D60";
    struct cap *a = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(a));
    run_for(2100);
    origin_stop(); /* refused from now on */
    struct cap *b = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(b));
    CU_ASSERT_FALSE(b->failed);
    CU_ASSERT_EQUAL(b->status, 200);
    CU_ASSERT_TRUE(cache_status_has(b, "stale-if-error"));
    CU_ASSERT_EQUAL(body_len(b), 100);
    /* Without stale-if-error, the same failure is the request's. */
    struct cap *c = request("GET", "/bytes/100?" MAXAGE, NULL);
    CU_ASSERT_TRUE(run_one(c));
    CU_ASSERT_TRUE(c->failed);
    CU_ASSERT_EQUAL(c->why, CT_CLOSE_ORIGIN_CONNECT);
    cap_free(a);
    cap_free(b);
    cap_free(c);
    teardown();
}

static void test_304_merge(void)
{
    setup("keep = \"1h\";");
    /* 3 s, not 1: the 304 makes it fresh for max-age from then, and under
     * TSan on a loaded machine b and c were more than a second apart */
    const char *t = "/bytes/100?cache-control=max-age%3D3&etag=%22e1%22";
    struct cap *a = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(a));
    run_for(3100);
    /* Expired with a validator: revalidated; cachet-origin answers 304 to
     * the If-None-Match cachet adds, and the stored object is served. */
    struct cap *b = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(b));
    CU_ASSERT_EQUAL(b->status, 200);
    CU_ASSERT_TRUE(b->from_object);
    CU_ASSERT_EQUAL(body_len(b), 100);
    CU_ASSERT_STRING_EQUAL(b->etag, "\"e1\"");
    CU_ASSERT_EQUAL(origin_total(), 2);
    /* The 304 refreshed it: fresh again. */
    struct cap *c = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(c));
    CU_ASSERT_TRUE(cache_status_has(c, "hit"));
    CU_ASSERT_EQUAL(origin_total(), 2);
    cap_free(a);
    cap_free(b);
    cap_free(c);
    teardown();
}

static void test_range_on_miss(void)
{
    setup("");
    const char *t = "/bytes/1000?" MAXAGE;
    struct cap *a = request("GET", t, "Range: bytes=10-19\r\n");
    CU_ASSERT_TRUE(run_one(a));
    CU_ASSERT_EQUAL(a->status, 206);
    CU_ASSERT_EQUAL(body_len(a), 10);
    /* The whole object was fetched and stored. */
    struct cap *b = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(b));
    CU_ASSERT_TRUE(cache_status_has(b, "hit"));
    CU_ASSERT_EQUAL(body_len(b), 1000);
    CU_ASSERT_EQUAL(origin_total(), 1);
    cap_free(a);
    cap_free(b);
    teardown();
}

static void test_purge_during_fill(void)
{
    setup("");
    const char *t = "/bytes/4000?" MAXAGE "&trickle=100&trickle-size=1000";
    struct cap *a = request("GET", t, NULL);
    CU_ASSERT_TRUE(head_sent(a)); /* the head is in, the body trickles */
    struct cap *p = request("PURGE", t, NULL);
    CU_ASSERT_TRUE(run_one(p));
    CU_ASSERT_EQUAL(p->status, 200);
    CU_ASSERT_TRUE(trail_is(p, "recv route cache purge synth done"));
    CU_ASSERT_TRUE(run_one(a));
    CU_ASSERT_EQUAL(body_len(a), 4000); /* the fetching client is not cut */
    /* The purged fill is not served afterwards. */
    struct cap *b = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(b));
    CU_ASSERT_FALSE(cache_status_has(b, "hit"));
    CU_ASSERT_EQUAL(body_len(b), 4000);
    CU_ASSERT_EQUAL(origin_total(), 2);
    cap_free(a);
    cap_free(p);
    cap_free(b);
    teardown();
}

/* The fetching client reads the object like any reader: once the head is
 * stored, the fill is a request of its own, and a fetcher that does not
 * read holds back nobody. */
static void test_fetcher_reads_object(void)
{
    setup("");
    const char *t = "/bytes/4000?" MAXAGE "&trickle=50&trickle-size=1000";
    struct cap *a = request("GET", t, NULL);
    a->full = true; /* a does not read */
    struct cap *waiter = request("GET", t, NULL);
    CU_ASSERT_TRUE(head_sent(a));
    CU_ASSERT_TRUE(a->from_object); /* its head is the stored one */
    CU_ASSERT_TRUE(cache_status_has(a, "stored"));
    CU_ASSERT_PTR_NULL(a->r.u); /* the fill's upstream is not a's */
    CU_ASSERT_TRUE(run_one(waiter));
    CU_ASSERT_EQUAL(body_len(waiter), 4000);
    CU_ASSERT_FALSE(a->done);
    CU_ASSERT_TRUE(body_len(a) < 4000);
    a->full = false;
    ct_req_drained(&a->r);
    CU_ASSERT_TRUE(run_one(a));
    CU_ASSERT_EQUAL(body_len(a), 4000);
    CU_ASSERT_EQUAL(origin_total(), 1);
    cap_free(a);
    cap_free(waiter);
    teardown();
}

/* A's carrier goes (what a protocol does when its connection closes or its
 * stream is reset) while A's fetch fills an object: the fill goes on for
 * the waiter and the store, on its own copy of the request. */
static void client_gone(bool before_head, bool chunked)
{
    setup("");
    /* Chunked: a fill of unknown length feeds its client itself (it may
     * outgrow max_object_size); it is adopted all the same. */
    const char *t = before_head ? "/bytes/4000?" MAXAGE "&delay=300"
                    : chunked   ? "/bytes/4000?" MAXAGE "&chunked=1&trickle=100&trickle-size=1000"
                                : "/bytes/4000?" MAXAGE "&trickle=100&trickle-size=1000";
    struct cap *a = request("GET", t, NULL);
    struct cap *waiter = request("GET", t, NULL); /* coalesced behind a's fill */
    if (before_head) {
        CU_ASSERT_TRUE(origin_reaches(1));
    } else {
        CU_ASSERT_TRUE(head_sent(a));
    }
    CU_ASSERT_EQUAL(a->status != 0, !before_head);
    cap_free(a); /* ct_req_free, and a's request head is gone with its parser */
    CU_ASSERT_TRUE(run_one(waiter));
    CU_ASSERT_EQUAL(waiter->status, 200);
    CU_ASSERT_EQUAL(body_len(waiter), 4000);
    CU_ASSERT_FALSE(waiter->failed);
    struct cap *b = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(b));
    CU_ASSERT_TRUE(cache_status_has(b, "hit"));
    CU_ASSERT_EQUAL(body_len(b), 4000);
    CU_ASSERT_EQUAL(origin_total(), 1);
    cap_free(waiter);
    cap_free(b);
    teardown();
}

/* ---- one fetch, its readers (issue 38: what struct ct_fetch must keep) ------- */

/* Run the loop until C was sent at least N body bytes, or ended (bounded:
 * 60 s). */
static bool body_reaches(struct cap *c, size_t n)
{
    ct_time_t end = ct_time_mono() + 60;
    while (body_len(c) < n && !c->done && !c->failed) {
        if (ct_time_mono() > end)
            return false;
        event_base_loop(w->base, EVLOOP_ONCE);
    }
    return body_len(c) >= n;
}

/* Do A and B hold the same body bytes? */
static bool same_body(struct cap *a, struct cap *b)
{
    size_t n = body_len(a);
    return n == body_len(b) &&
           memcmp(evbuffer_pullup(a->body, -1), evbuffer_pullup(b->body, -1), n) == 0;
}

/* Did C fetch from the origin itself (a FILL or PASS step in its trail)? */
static bool fetched(const struct cap *c)
{
    char buf[256];
    ct_req_trail(&c->r, buf, sizeof(buf));
    return strstr(buf, "fill") != NULL || strstr(buf, "pass") != NULL;
}

#define TRICKLED "/bytes/6000?" MAXAGE "&trickle=50&trickle-size=1000"

/* One fill, three readers: the fetching client, one that joins once 1000
 * bytes are in and one once 4000 are: one origin fetch, every reader gets
 * every byte, in order, whatever point it joined at. */
static void test_fetch_readers_join(void)
{
    setup("");
    struct cap *c[3];
    c[0] = request("GET", TRICKLED, NULL);
    CU_ASSERT_TRUE(body_reaches(c[0], 1000));
    c[1] = request("GET", TRICKLED, NULL);
    CU_ASSERT_TRUE(body_reaches(c[0], 4000));
    c[2] = request("GET", TRICKLED, NULL);
    CU_ASSERT_TRUE(run_until_done(c, 3));
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(c[i]->status, 200);
        CU_ASSERT_EQUAL(body_len(c[i]), 6000);
        CU_ASSERT_FALSE(c[i]->failed);
        CU_ASSERT_TRUE(same_body(c[0], c[i]));
        CU_ASSERT_EQUAL(fetched(c[i]), i == 0);
    }
    CU_ASSERT_EQUAL(origin_total(), 1);
    for (int i = 0; i < 3; i++)
        cap_free(c[i]);
    teardown();
}

/* One of three readers goes mid-body (its carrier closed): the others get
 * the whole body from the one fetch, and the object is stored. */
static void test_fetch_reader_leaves(void)
{
    setup("");
    struct cap *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = request("GET", TRICKLED, NULL);
    CU_ASSERT_TRUE(body_reaches(c[1], 2000));
    cap_free(c[1]);
    struct cap *left[2] = {c[0], c[2]};
    CU_ASSERT_TRUE(run_until_done(left, 2));
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(body_len(left[i]), 6000);
        CU_ASSERT_FALSE(left[i]->failed);
    }
    struct cap *d = request("GET", TRICKLED, NULL);
    CU_ASSERT_TRUE(run_one(d));
    CU_ASSERT_TRUE(cache_status_has(d, "hit"));
    CU_ASSERT_EQUAL(body_len(d), 6000);
    CU_ASSERT_EQUAL(origin_total(), 1);
    cap_free(c[0]);
    cap_free(c[2]);
    cap_free(d);
    teardown();
}

/* Every reader goes mid-body, the fetching client first: the object is
 * cacheable, so the policy is to finish the fill (as nginx does for a
 * cacheable response, and Varnish for a non-pass fetch) and store it; the
 * next request is served from it, and the origin was asked once. CHUNKED: a body of
 * unknown length, whose fetch its client keeps until the end (it may
 * outgrow max_object_size), is taken over all the same, and its waiters
 * leave while they are held for its end. */
static void all_readers_leave(bool chunked)
{
    setup("");
    const char *t = chunked ? TRICKLED "&chunked=1" : TRICKLED;
    struct cap *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = request("GET", t, NULL);
    /* A waiter on a body of unknown length is held until its end (it is
     * sent nothing it could not finish), so it leaves while it waits. */
    for (int i = 0; i < (chunked ? 1 : 3); i++)
        CU_ASSERT_TRUE(body_reaches(c[i], 1000));
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_FALSE(c[i]->done); /* they left mid-body */
        if (chunked && i > 0)
            CU_ASSERT_EQUAL(body_len(c[i]), 0);
        cap_free(c[i]);
    }
    /* The next request is served by that fill: a hit once it is stored,
     * or a reader of it while it still fills; never a fetch of its own. */
    struct cap *d = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(d));
    CU_ASSERT_FALSE(fetched(d));
    CU_ASSERT_EQUAL(body_len(d), 6000);
    CU_ASSERT_EQUAL(origin_total(), 1);
    cap_free(d);
    teardown();
}

static void test_fetch_all_readers_leave(void) { all_readers_leave(false); }
static void test_fetch_all_readers_leave_chunked(void) { all_readers_leave(true); }

/* The origin closes half-way through a body whose length it announced: the
 * fetching client and a reader that joined are both cut (their responses
 * end failed, never as complete), and nothing is stored: the next request
 * goes to the origin again. */
static void test_fetch_origin_fails_mid_body(void)
{
    setup("");
    const char *t = TRICKLED "&close=mid";
    struct cap *c[2];
    c[0] = request("GET", t, NULL);
    CU_ASSERT_TRUE(body_reaches(c[0], 1000));
    c[1] = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_until_done(c, 2));
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_TRUE(c[i]->failed);
        CU_ASSERT_FALSE(c[i]->done);
        CU_ASSERT_TRUE(body_len(c[i]) < 6000);
    }
    CU_ASSERT_EQUAL(origin_total(), 1);
    struct cap *d = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(d));
    CU_ASSERT_TRUE(fetched(d));
    CU_ASSERT_EQUAL(origin_total(), 2);
    for (int i = 0; i < 2; i++)
        cap_free(c[i]);
    cap_free(d);
    teardown();
}

/* A request body that comes in two pieces, the second after the core asked
 * for more (a slow client): forwarded whole, with the request, to the
 * origin (which echoes it); never stored. */
static void test_request_body_pass(void)
{
    setup("");
    struct cap *a = ct_xcalloc(1, sizeof(*a));
    a->body = evbuffer_new();
    a->req_body = evbuffer_new();
    evbuffer_add(a->req_body, "hello ", 6);
    a->rp = ct_http_parser_new(CT_HTTP_REQUEST, NULL);
    ct_http_parser_set_gateway(a->rp, true);
    int n = snprintf(a->text, sizeof(a->text),
                     "POST /echo HTTP/1.1\r\nHost: core.test\r\nContent-Length: 11\r\n\r\n");
    size_t used;
    CT_ASSERT(ct_http_parser_feed(a->rp, a->text, (size_t)n, &used, NULL) == CT_HTTP_EV_HEAD);
    a->r = (struct ct_req){.magic = CT_REQ_MAGIC, .proto = &cap_proto, .w = w, .lc = &lc,
                           .peer = "127.0.0.1:1", .peer_ip_len = 9, .conn_id = ++next_id,
                           .msg = ct_http_parser_msg(a->rp)};
    ct_req_start(&a->r);
    CU_ASSERT_TRUE(trail_is(a, "recv route cache pass"));
    /* the core took "hello " and waits for the rest */
    ct_time_t end = ct_time_mono() + 60;
    while (!a->body_wanted && ct_time_mono() < end)
        event_base_loop(w->base, EVLOOP_ONCE);
    CU_ASSERT_TRUE(a->body_wanted);
    CU_ASSERT_FALSE(a->done);
    evbuffer_add(a->req_body, "world", 5);
    a->req_body_end = true;
    ct_req_body_readable(&a->r);
    CU_ASSERT_TRUE(run_one(a));
    CU_ASSERT_EQUAL(a->status, 200);
    char buf[4096];
    size_t k = evbuffer_copyout(a->body, buf, sizeof(buf) - 1);
    buf[k] = '\0';
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"body\": \"hello world\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"POST\""));
    CU_ASSERT_TRUE(cache_status_has(a, "fwd=bypass; detail=method"));
    cap_free(a);
    teardown();
}

/* A forwarded response whose client does not read: the core stops reading the origin
 * while the client's output is full (its memory stays bounded), and goes
 * on when the protocol says it drained. */
static void test_pass_backpressure(void)
{
    setup("");
    const char *t = "/bytes/2000000?cache-control=no-store";
    struct cap *a = request("GET", t, NULL);
    CU_ASSERT_TRUE(head_sent(a));
    a->full = true;
    /* the next body bytes meet the full output: reads stop (bounded: 60 s) */
    ct_time_t end = ct_time_mono() + 60;
    while (!a->r.up_paused && !a->done && ct_time_mono() < end)
        event_base_loop(w->base, EVLOOP_ONCE);
    CU_ASSERT_FALSE(a->done);
    CU_ASSERT_TRUE(a->r.up_paused);
    size_t held = body_len(a);
    CU_ASSERT_TRUE(held < 2000000);
    run_for(100); /* an absence: nothing more arrives in a while */
    CU_ASSERT_EQUAL(body_len(a), held); /* nothing more while it is full */
    a->full = false;
    ct_req_drained(&a->r);
    CU_ASSERT_TRUE(run_one(a));
    CU_ASSERT_EQUAL(body_len(a), 2000000);
    /* a miss fills until the response says no-store; then it is forwarded */
    CU_ASSERT_TRUE(trail_is(a, "recv route cache lookup fill"));
    CU_ASSERT_FALSE(cache_status_has(a, "stored"));
    cap_free(a);
    teardown();
}

/* A waiter whose fetch takes longer than cache.waiter_timeout: 504 by
 * default, or a fetch of its own with waiter_timeout_action = "fetch". */
static void wait_timeout(bool fetch)
{
    setup(fetch ? "waiter_timeout = \"200ms\"; waiter_timeout_action = \"fetch\";"
                : "waiter_timeout = \"200ms\";");
    const char *t = "/bytes/100?" MAXAGE "&delay=1500";
    struct cap *a = request("GET", t, NULL);
    struct cap *b = request("GET", t, NULL);
    CU_ASSERT_TRUE(run_one(b));
    if (fetch) {
        CU_ASSERT_EQUAL(b->status, 200);
        CU_ASSERT_EQUAL(body_len(b), 100);
        CU_ASSERT_TRUE(cache_status_has(b, "detail=wait-timeout"));
        CU_ASSERT_TRUE(trail_is(b, "recv route cache lookup wait pass"));
    } else {
        CU_ASSERT_EQUAL(b->status, 504);
        CU_ASSERT_TRUE(trail_is(b, "recv route cache lookup wait synth done"));
    }
    CU_ASSERT_TRUE(run_one(a));
    CU_ASSERT_EQUAL(a->status, 200);
    CU_ASSERT_EQUAL(origin_total(), fetch ? 2 : 1);
    cap_free(a);
    cap_free(b);
    teardown();
}

static void test_wait_timeout_504(void) { wait_timeout(false); }
static void test_wait_timeout_fetch(void) { wait_timeout(true); }

static void test_client_gone_mid_fill(void) { client_gone(false, false); }
static void test_client_gone_mid_chunked_fill(void) { client_gone(false, true); }
static void test_client_gone_before_head(void) { client_gone(true, false); }

void ct_test_register(void)
{
    signal(SIGPIPE, SIG_IGN);
    CT_SUITE("proxy core (capture protocol)", {"miss, then hit from the field index", test_miss_then_hit},
             {"coalescing: one fetch for eight", test_coalescing},
             {"stale-while-revalidate: one background refresh", test_stale_while_revalidate},
             {"stale-if-error with the origin down", test_stale_if_error},
             {"304 merge", test_304_merge},
             {"Range on a miss stores the whole object", test_range_on_miss},
             {"purge during a fill", test_purge_during_fill},
             {"the fetching client reads the object", test_fetcher_reads_object},
             {"client gone mid-fill", test_client_gone_mid_fill},
             {"client gone mid-fill, chunked", test_client_gone_mid_chunked_fill},
             {"client gone before the head", test_client_gone_before_head},
             {"one fetch, readers joining at 0, 1000 and 4000 bytes", test_fetch_readers_join},
             {"one fetch, one of three readers leaves mid-body", test_fetch_reader_leaves},
             {"one fetch, every reader leaves: the fill finishes", test_fetch_all_readers_leave},
             {"one fetch, every reader leaves, chunked", test_fetch_all_readers_leave_chunked},
             {"the origin fails mid-body: readers cut, nothing stored",
              test_fetch_origin_fails_mid_body},
             {"a request body in two pieces, passed", test_request_body_pass},
             {"back-pressure on a forwarded response", test_pass_backpressure},
             {"waiter timeout: 504", test_wait_timeout_504},
             {"waiter timeout: fetch", test_wait_timeout_fetch});
}
