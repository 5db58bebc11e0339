/* tests/unit/test_net_io.c: the plain read path (proxy/net/io.c) on a
 * socketpair: what one big read leaves in the input buffer. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/net/net.h"
#include "tests/unit/ct_test.h"

#define SENT (120 * 1024) /* past the 16 KiB the buffer reserves: the spill */

struct reader {
    struct ct_io io;
    struct event_base *base;
    size_t got;
};

static void on_read(struct bufferevent *bev, void *arg)
{
    struct reader *rd = arg;
    rd->got = evbuffer_get_length(bufferevent_get_input(bev));
    event_base_loopbreak(rd->base);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    (void)arg;
    CU_FAIL("no event expected");
}

/* One readv of more than the reserved room lands whole, in order, and in
 * chains of at most 16 KiB: one chain for the rest made a 128 KiB malloc
 * per big read, the blocks that spread glibc's arenas (docs/memory.md). */
static void test_big_read_chains(void)
{
    int sv[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int sndbuf = 4 * SENT;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    static char out[SENT];
    for (size_t i = 0; i < SENT; i++)
        out[i] = (char)(i * 7 + i / 251);
    CU_ASSERT_EQUAL_FATAL(write(sv[0], out, SENT), SENT);

    struct reader rd = {.base = event_base_new()};
    struct bufferevent *bev = bufferevent_socket_new(rd.base, sv[1], 0);
    ct_io_attach(&rd.io, rd.base, bev, true, on_read, on_event, &rd);
    ct_io_read(&rd.io, true);
    event_base_dispatch(rd.base);

    struct evbuffer *in = bufferevent_get_input(bev);
    CU_ASSERT(rd.got > 16 * 1024); /* one read went past the room */
    struct evbuffer_iovec v[64];
    int n = evbuffer_peek(in, -1, NULL, v, 64);
    CU_ASSERT_FATAL(n > 0 && n <= 64);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        CU_ASSERT(v[i].iov_len <= 16 * 1024);
        CU_ASSERT(memcmp(v[i].iov_base, out + at, v[i].iov_len) == 0);
        at += v[i].iov_len;
    }
    CU_ASSERT_EQUAL(at, rd.got);

    ct_io_detach(&rd.io);
    bufferevent_free(bev);
    event_base_free(rd.base);
    close(sv[0]);
    close(sv[1]);
}

void ct_test_register(void)
{
    CT_SUITE("net io", {"a big read: whole, in order, in 16 KiB chains", test_big_read_chains});
}
