/* tests/unit/test_tls_threads.c: one listener context and one ticket-key
 * store used by several workers at once while the keys rotate: every
 * handshake completes, resumption keeps working across rotations, and the
 * counters add up. Meant for the ThreadSanitizer build (CT_TSAN) as well. */
#include <pthread.h>
#include <stdatomic.h>

#include "tests/unit/test_tls_util.h"

#define WORKERS 3
#define HANDSHAKES 150

static struct ct_tls_ctx *lc;
static struct ct_tls_shared *sh;
static atomic_bool stop;
static atomic_int failures, resumed_seen;

static void *worker(void *arg)
{
    SSL_CTX *cctx = tt_client_ctx((intptr_t)arg ? TLS1_2_VERSION : 0, 0);
    SSL_SESSION *sess = NULL;
    for (int i = 0; i < HANDSHAKES; i++) {
        struct tt_conn t = {SSL_new(cctx), ct_tls_new_ssl(lc)};
        BIO *cb = NULL, *sb = NULL;
        BIO_new_bio_pair(&cb, 0, &sb, 0);
        SSL_set_bio(t.c, cb, cb);
        SSL_set_bio(t.s, sb, sb);
        SSL_set_connect_state(t.c);
        SSL_set_accept_state(t.s);
        if (sess)
            SSL_set_session(t.c, sess);
        if (!tt_drive(&t)) {
            atomic_fetch_add(&failures, 1);
        } else {
            atomic_fetch_add(&resumed_seen, SSL_session_reused(t.s) ? 1 : 0);
            char ch = 'x';
            if (SSL_write(t.s, &ch, 1) == 1 && SSL_read(t.c, &ch, 1) == 1) {
                SSL_SESSION_free(sess); /* keep the newest ticket */
                sess = SSL_get1_session(t.c);
            }
            SSL_shutdown(t.c);
            SSL_shutdown(t.s);
        }
        SSL_free(t.c);
        SSL_free(t.s);
        ERR_clear_error();
    }
    SSL_SESSION_free(sess);
    SSL_CTX_free(cctx);
    return NULL;
}

static void *rotator(void *arg)
{
    while (!atomic_load(&stop)) {
        if (ct_tls_shared_rotate(sh) != CT_OK)
            atomic_fetch_add(&failures, 1);
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void test_workers_and_rotation(void)
{
    sh = ct_tls_shared_new(0, 0, NULL, 0);
    struct ct_tls_listener_conf cf = {0};
    char err[256];
    lc = ct_tls_ctx_new(&cf, sh, err, sizeof(err));
    CU_ASSERT_FATAL(lc != NULL);
    pthread_t th[WORKERS], rot;
    CU_ASSERT_FATAL(pthread_create(&rot, NULL, rotator, NULL) == 0);
    for (intptr_t i = 0; i < WORKERS; i++)
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, worker, (void *)(i % 2)) == 0);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&stop, true);
    pthread_join(rot, NULL);
    CU_ASSERT_EQUAL(atomic_load(&failures), 0);
    struct ct_tls_stats st;
    ct_tls_ctx_stats(lc, &st);
    CU_ASSERT_EQUAL(st.handshakes_full + st.handshakes_resumed, (uint64_t)WORKERS * HANDSHAKES);
    CU_ASSERT_EQUAL(st.handshakes_resumed, (uint64_t)atomic_load(&resumed_seen));
    /* Each worker resumes with the ticket it got last; a ticket dies only
     * after two rotations (>= 10 ms), so resumptions keep succeeding while
     * the keys change under them (how many depends on the machine's load). */
    CU_ASSERT(st.handshakes_resumed > 0);
    CU_ASSERT(ct_tls_shared_rotations(sh) >= 2);
    fprintf(stderr, "\n  %llu full, %llu resumed, %llu rotations\n",
            (unsigned long long)st.handshakes_full, (unsigned long long)st.handshakes_resumed,
            (unsigned long long)ct_tls_shared_rotations(sh));
    ct_tls_ctx_free(&lc);
    ct_tls_shared_release(&sh);
}

void ct_test_register(void)
{
    CT_SUITE("tls threads",
             {"workers share a context while keys rotate", test_workers_and_rotation});
}
