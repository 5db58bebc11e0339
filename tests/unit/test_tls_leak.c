/* tests/unit/test_tls_leak.c: no memory kept per connection. Runs 10 000
 * in-memory handshakes (full, then resumed by ticket) and checks that the
 * heap in use (mallinfo2) is flat after a warm-up. Under ASan the heap
 * numbers are ASan's, so there the count is smaller and LeakSanitizer's
 * report at exit is the check. */
#include <malloc.h>

#include "tests/unit/test_tls_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define LOOPS 1000
#else
#define LOOPS 10000
#endif
#define WARMUP 200
/* Allocator noise (free lists, OpenSSL's lazily built tables) but far below
 * one leaked SSL (~5 KiB) per handshake: 10 000 of them would be ~50 MiB. */
#define SLACK (256 * 1024)

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void loop(SSL_CTX *cctx, struct ct_tls_ctx *lc, SSL_SESSION *sess, int n)
{
    for (int i = 0; i < n; i++) {
        bool reused = false;
        int ok = tt_handshake(cctx, lc, "localhost", sess, NULL, &reused, NULL, 0);
        if (!ok || reused != (sess != NULL)) {
            CU_FAIL("handshake failed or resumption state wrong");
            return;
        }
    }
}

static void run(bool resume)
{
    struct ct_tls_shared *sh = ct_tls_shared_new(0, 0, NULL, 0);
    struct ct_tls_listener_conf cf = {.disable_session_cache = true};
    cf.disable_tickets = !resume;
    char err[256];
    struct ct_tls_ctx *lc = ct_tls_ctx_new(&cf, sh, err, sizeof(err));
    CU_ASSERT_FATAL(lc != NULL);
    SSL_CTX *cctx = tt_client_ctx(0, 0);
    SSL_SESSION *sess = NULL;
    if (resume)
        CU_ASSERT_FATAL(tt_handshake(cctx, lc, "localhost", NULL, &sess, NULL, NULL, 0) == 1);
    loop(cctx, lc, sess, WARMUP);
    size_t before = heap_in_use();
    loop(cctx, lc, sess, LOOPS);
    size_t after = heap_in_use();
    fprintf(stderr, "\n  %d %s handshakes: heap %zu -> %zu bytes\n", LOOPS,
            resume ? "resumed" : "full", before, after);
#if !defined(__SANITIZE_ADDRESS__)
    CU_ASSERT(after <= before + SLACK);
#endif
    struct ct_tls_stats st;
    ct_tls_ctx_stats(lc, &st);
    CU_ASSERT_EQUAL(resume ? st.handshakes_resumed : st.handshakes_full,
                    (uint64_t)(LOOPS + WARMUP));
    SSL_SESSION_free(sess);
    SSL_CTX_free(cctx);
    ct_tls_ctx_free(&lc);
    ct_tls_shared_release(&sh);
}

static void test_full(void)
{
    run(false);
}

static void test_resumed(void)
{
    run(true);
}

void ct_test_register(void)
{
    CT_SUITE("tls leak", {"full handshakes keep the heap flat", test_full},
             {"resumed handshakes keep the heap flat", test_resumed});
}
