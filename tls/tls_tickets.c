/*
 * tls/tls_tickets.c: session-ticket keys shared by every worker and every
 * listener context (RFC 5077 tickets in TLS 1.2, stateless PSK tickets in
 * TLS 1.3; OpenSSL encrypts the session with AES-256-CBC + HMAC-SHA256 under
 * the key our callback selects).
 *
 * Two keys live at a time: `cur` encrypts new tickets; `prev` only decrypts
 * (and asks OpenSSL to issue a fresh ticket under `cur`). A rotation shifts
 * cur -> prev, wipes the old prev and draws a new cur from the CSPRNG, so a
 * ticket stays usable for at least one and at most two rotation intervals,
 * and a stolen key stops decrypting traffic after two rotations.
 *
 * Locking: the keys are guarded by a rwlock; handshakes (all workers) take it
 * shared just long enough to copy the 80 key bytes they need, rotation takes
 * it exclusive. The refcount and rotation counter are atomics.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "tls/tls_int.h"

#define CT_TLS_SHARED_MAGIC 0x7c1a5e11u
#define TICKET_NAME_LEN 16

struct ticket_key {
    unsigned char name[TICKET_NAME_LEN]; /* random: identifies the key in a ticket */
    unsigned char aes[32];
    unsigned char hmac[32];
};

struct ct_tls_shared {
    unsigned magic;
    atomic_uint refs;
    atomic_uint_fast64_t rotations;
    uint64_t rotate_ms;
    EVP_CIPHER *cipher; /* fetched once: implicit fetches per handshake cost locks */
    pthread_rwlock_t lock;
    /* guarded by lock */
    struct ticket_key cur, prev;
    bool have_prev;
    ct_time_t last_rotate;
};

static int key_fill(struct ticket_key *k)
{
    if (RAND_bytes(k->name, sizeof(k->name)) != 1 || RAND_priv_bytes(k->aes, sizeof(k->aes)) != 1 ||
        RAND_priv_bytes(k->hmac, sizeof(k->hmac)) != 1)
        return CT_ETLS;
    return CT_OK;
}

struct ct_tls_shared *ct_tls_shared_new(uint64_t rotate_ms, ct_time_t now, char *err, size_t errlen)
{
    struct ct_tls_shared *sh = ct_xcalloc(1, sizeof(*sh));
    sh->magic = CT_TLS_SHARED_MAGIC;
    atomic_init(&sh->refs, 1);
    atomic_init(&sh->rotations, 0);
    sh->rotate_ms = rotate_ms ? rotate_ms : CT_TLS_DEFAULT_ROTATE_MS;
    sh->last_rotate = now;
    sh->cipher = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
    if (sh->cipher == NULL || key_fill(&sh->cur) != CT_OK) {
        snprintf(err, errlen, "cannot create session ticket keys: %s",
                 sh->cipher ? "random generator failed" : "AES-256-CBC unavailable");
        EVP_CIPHER_free(sh->cipher);
        OPENSSL_cleanse(sh, sizeof(*sh));
        free(sh);
        return NULL;
    }
    CT_ASSERT(pthread_rwlock_init(&sh->lock, NULL) == 0);
    return sh;
}

struct ct_tls_shared *ct_tls_shared_ref(struct ct_tls_shared *sh)
{
    CT_CHECK_OBJ(sh, CT_TLS_SHARED_MAGIC);
    unsigned before = atomic_fetch_add(&sh->refs, 1);
    CT_ASSERT(before > 0);
    return sh;
}

void ct_tls_shared_release(struct ct_tls_shared **shp)
{
    struct ct_tls_shared *sh = *shp;
    *shp = NULL;
    if (sh == NULL)
        return;
    CT_CHECK_OBJ(sh, CT_TLS_SHARED_MAGIC);
    if (atomic_fetch_sub(&sh->refs, 1) != 1)
        return;
    pthread_rwlock_destroy(&sh->lock);
    EVP_CIPHER_free(sh->cipher);
    OPENSSL_cleanse(sh, sizeof(*sh)); /* keys must not linger in freed memory */
    free(sh);
}

int ct_tls_shared_rotate(struct ct_tls_shared *sh)
{
    CT_CHECK_OBJ(sh, CT_TLS_SHARED_MAGIC);
    struct ticket_key fresh;
    if (key_fill(&fresh) != CT_OK)
        return CT_ETLS;
    CT_ASSERT(pthread_rwlock_wrlock(&sh->lock) == 0);
    sh->prev = sh->cur;
    sh->have_prev = true;
    sh->cur = fresh;
    CT_ASSERT(pthread_rwlock_unlock(&sh->lock) == 0);
    OPENSSL_cleanse(&fresh, sizeof(fresh));
    atomic_fetch_add(&sh->rotations, 1);
    return CT_OK;
}

int ct_tls_shared_tick(struct ct_tls_shared *sh, ct_time_t now)
{
    CT_CHECK_OBJ(sh, CT_TLS_SHARED_MAGIC);
    CT_ASSERT(pthread_rwlock_rdlock(&sh->lock) == 0);
    bool due = (now - sh->last_rotate) * 1000.0 >= (ct_time_t)sh->rotate_ms;
    CT_ASSERT(pthread_rwlock_unlock(&sh->lock) == 0);
    if (!due)
        return 0;
    int rc = ct_tls_shared_rotate(sh);
    if (rc != CT_OK)
        return rc;
    CT_ASSERT(pthread_rwlock_wrlock(&sh->lock) == 0);
    sh->last_rotate = now;
    CT_ASSERT(pthread_rwlock_unlock(&sh->lock) == 0);
    return 1;
}

uint64_t ct_tls_shared_rotations(const struct ct_tls_shared *sh)
{
    CT_CHECK_OBJ(sh, CT_TLS_SHARED_MAGIC);
    return atomic_load(&((struct ct_tls_shared *)sh)->rotations);
}

/* Copy the key to use: for encryption the current one; for decryption the
 * one named NAME. Returns 0 when none matches, 1 for cur, 2 for prev (which
 * is OpenSSL's "decrypted, but issue a new ticket" answer). */
static int key_pick(struct ct_tls_shared *sh, const unsigned char *name, struct ticket_key *out)
{
    int which = 0;
    CT_ASSERT(pthread_rwlock_rdlock(&sh->lock) == 0);
    if (name == NULL || memcmp(name, sh->cur.name, TICKET_NAME_LEN) == 0) {
        *out = sh->cur;
        which = 1;
    } else if (sh->have_prev && memcmp(name, sh->prev.name, TICKET_NAME_LEN) == 0) {
        *out = sh->prev;
        which = 2;
    }
    CT_ASSERT(pthread_rwlock_unlock(&sh->lock) == 0);
    return which;
}

static int mac_init(EVP_MAC_CTX *hctx, unsigned char *key)
{
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key, 32),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    return EVP_MAC_CTX_set_params(hctx, params);
}

/* OpenSSL's ticket callback (SSL_CTX_set_tlsext_ticket_key_evp_cb). Return
 * values per its manual: enc: 1 ok, -1 error; dec: 0 unknown key (full
 * handshake), 1 ok, 2 ok and renew, -1 error. */
static int ticket_cb(SSL *ssl, unsigned char name[TICKET_NAME_LEN], unsigned char *iv,
                     EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
    struct ct_tls_shared *sh = ct_tls_ctx_shared_of(SSL_get_SSL_CTX(ssl));
    if (sh == NULL)
        return enc ? -1 : 0;
    struct ticket_key k;
    int which, rc = -1;
    if (enc) {
        which = key_pick(sh, NULL, &k);
        memcpy(name, k.name, TICKET_NAME_LEN);
        if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(sh->cipher)) == 1 &&
            EVP_EncryptInit_ex(cctx, sh->cipher, NULL, k.aes, iv) == 1 &&
            mac_init(hctx, k.hmac) == 1)
            rc = 1;
    } else {
        which = key_pick(sh, name, &k);
        if (which == 0)
            rc = 0;
        else if (EVP_DecryptInit_ex(cctx, sh->cipher, NULL, k.aes, iv) == 1 &&
                 mac_init(hctx, k.hmac) == 1)
            rc = which;
    }
    OPENSSL_cleanse(&k, sizeof(k));
    return rc;
}

void ct_tls_tickets_install(SSL_CTX *sctx)
{
    SSL_CTX_set_tlsext_ticket_key_evp_cb(sctx, ticket_cb);
}
