/*
 * origin/origin_gen.c: generated endpoints. Every one of them honours the
 * query's controls (status=, cache-control=, etag=, chunked=, delay=, ...;
 * see origin_query.c): they only describe the body here.
 *
 *   /json        TechEmpower's JSON test body
 *   /plaintext   Hello, World!
 *   /gen         size= bytes of the pattern (default 0)
 *   /bytes/N     N bytes of the pattern, streamed (N up to 2^40)
 *   /delay/MS    like /gen, answered after MS milliseconds
 *   /bad/KIND    a deliberately broken reply, then close (proxy tests)
 */
#include "origin/origin_int.h"

static const char json_body[] = "{\"message\":\"Hello, World!\"}";
static const char text_body[] = "Hello, World!";

static void mem_body(struct ct_oconn *c, const char *type, const char *p, size_t n)
{
    struct ct_oresp *r = &c->resp;
    r->ctype = type;
    r->kind = CT_OBODY_MEM;
    r->mem = p;
    r->len = n;
    r->controls = true;
}

void ct_ohandle_json(struct ct_oconn *c)
{
    mem_body(c, "application/json", json_body, sizeof(json_body) - 1);
}

void ct_ohandle_plaintext(struct ct_oconn *c)
{
    mem_body(c, "text/plain", text_body, sizeof(text_body) - 1);
}

static void pattern_body(struct ct_oconn *c, uint64_t len)
{
    struct ct_oresp *r = &c->resp;
    r->ctype = "application/octet-stream";
    r->kind = CT_OBODY_PATTERN;
    r->pat_off = 0;
    r->len = len;
    r->controls = true;
    r->rangeable = true;
}

void ct_ohandle_gen(struct ct_oconn *c)
{
    pattern_body(c, c->prm.has_size ? c->prm.size : 0);
}

void ct_ohandle_bytes(struct ct_oconn *c)
{
    uint64_t n;
    if (ct_str_to_u64(c->rest, CT_OPARAM_MAX_SIZE, &n) != CT_OK) {
        ct_oresp_error(c, 400, "/bytes/N: N must be a byte count up to 2^40");
        return;
    }
    pattern_body(c, n);
}

void ct_ohandle_delay(struct ct_oconn *c)
{
    uint64_t ms;
    if (ct_str_to_u64(c->rest, CT_OPARAM_MAX_DELAY_MS, &ms) != CT_OK) {
        ct_oresp_error(c, 400, "/delay/MS: MS must be milliseconds up to 600000");
        return;
    }
    c->prm.has_delay = true;
    c->prm.delay_ms = (unsigned)ms;
    pattern_body(c, c->prm.has_size ? c->prm.size : 0);
}

/* CT_OBAD(name, reply): what a broken origin sends, then it closes. */
#define CT_OBAD_TABLE(X)                                                       \
    X("status", "HTTP/1.1 abc Broken\r\nContent-Length: 0\r\n\r\n")            \
    X("no-status", "HTTP/1.1\r\nContent-Length: 0\r\n\r\n")                    \
    X("header", "HTTP/1.1 200 OK\r\nThis is not a header\r\nContent-Length: 2\r\n\r\nok") \
    X("space", "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok")              \
    X("cl-te", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" \
               "5\r\nhello\r\n0\r\n\r\n")                                      \
    X("two-cl", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc") \
    X("bad-cl", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nabc")            \
    X("chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n") \
    X("short", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly 22 bytes of body")     \
    X("lf", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok")                        \
    X("garbage", "\x01\x02 this is not HTTP at all\r\n\r\n")                   \
    X("empty", "")                                                             \
    X("reset", "") /* and an RST instead of a FIN (origin_conn.c linger) */

static const struct {
    struct ct_str name;
    struct ct_str reply;
} bad_replies[] = {
#define CT_OBAD_ROW(name, reply) {CT_STR(name), CT_STR(reply)},
    CT_OBAD_TABLE(CT_OBAD_ROW)
#undef CT_OBAD_ROW
};

void ct_ohandle_bad(struct ct_oconn *c)
{
    for (size_t i = 0; i < CT_ARRAY_LEN(bad_replies); i++) {
        if (ct_str_eq(c->rest, bad_replies[i].name)) {
            struct ct_oresp *r = &c->resp;
            r->raw = true;
            r->kind = CT_OBODY_MEM;
            r->mem = bad_replies[i].reply.p;
            r->len = bad_replies[i].reply.len;
            c->rst = ct_str_eq(c->rest, CT_STR("reset"));
            return;
        }
    }
    ct_oresp_error(c, 404, "/bad/KIND: unknown kind");
}
