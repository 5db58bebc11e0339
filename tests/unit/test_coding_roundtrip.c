/* tests/unit/test_coding_roundtrip.c: the gzip, br and zstd codecs
 * (http/coding/coding.h): round trips of random and text data through every
 * coding with input and output in odd piece sizes, streams made by the
 * command-line tools, concatenated members, and corrupt, truncated or
 * over-large input refused cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "http/coding/coding.h"
#include "tests/unit/ct_test.h"

static const enum ct_coding codings[] = {CT_CODING_GZIP, CT_CODING_BR, CT_CODING_ZSTD};

struct bytes {
    uint8_t *p;
    size_t len, cap;
};

static void bytes_put(struct bytes *b, const uint8_t *p, size_t n)
{
    if (n == 0)
        return;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* Run CD over IN, PIECE_IN bytes at a time, into output pieces of PIECE_OUT
 * bytes, collecting into OUT. Returns the last rc (DONE or ERROR). */
static enum ct_codec_rc run_all(struct ct_codec *cd, const uint8_t *in, size_t len,
                                size_t piece_in, size_t piece_out, struct bytes *out)
{
    uint8_t *buf = malloc(piece_out);
    size_t at = 0;
    enum ct_codec_rc rc;
    unsigned idle = 0;
    for (;;) {
        size_t n = CT_MIN(piece_in, len - at);
        bool last = at + n == len;
        size_t wrote;
        rc = ct_codec_run(cd, in + at, &n, buf, piece_out, &wrote, last);
        at += n;
        bytes_put(out, buf, wrote);
        if (rc == CT_CODEC_DONE || rc == CT_CODEC_ERROR)
            break;
        /* a codec that takes nothing and gives nothing with room on both
         * sides would loop forever: a bug */
        idle = (n == 0 && wrote == 0) ? idle + 1 : 0;
        if (idle > 3) {
            CU_FAIL("codec made no progress");
            rc = CT_CODEC_ERROR;
            break;
        }
    }
    free(buf);
    return rc;
}

static void make_random(uint8_t *p, size_t n, unsigned seed)
{
    srand(seed);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(rand() >> 7);
}

/* JSON-like text: compressible, with some variety */
static void make_text(uint8_t *p, size_t n, unsigned seed)
{
    static const char *words[] = {"\"id\":", "\"name\":\"cachet\",", "\"price\":12.50,",
                                  "{", "},", "\"tags\":[\"a\",\"b\"],", " ", "\n"};
    srand(seed);
    size_t i = 0;
    while (i < n) {
        const char *w = words[rand() % CT_ARRAY_LEN(words)];
        for (; *w && i < n; w++)
            p[i++] = (uint8_t)*w;
        if (i < n && rand() % 4 == 0)
            p[i++] = (uint8_t)('0' + rand() % 10);
    }
}

static void roundtrip(enum ct_coding c, const uint8_t *data, size_t len, size_t ein, size_t eout,
                      size_t din, size_t dout)
{
    struct bytes enc = {0}, dec = {0};
    struct ct_codec *e = ct_codec_new(c, CT_CODEC_ENCODE, CT_CODEC_LEVEL_DEFAULT, len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_EQUAL(run_all(e, data, len, ein, eout, &enc), CT_CODEC_DONE);
    CU_ASSERT_EQUAL(ct_codec_bytes_in(e), len);
    CU_ASSERT_EQUAL(ct_codec_bytes_out(e), enc.len);
    ct_codec_free(&e);
    CU_ASSERT_PTR_NULL(e);
    struct ct_codec *d = ct_codec_new(c, CT_CODEC_DECODE, CT_CODEC_LEVEL_DEFAULT, 0);
    CU_ASSERT_EQUAL(run_all(d, enc.p, enc.len, din, dout, &dec), CT_CODEC_DONE);
    if (dec.len != len || (len > 0 && memcmp(dec.p, data, len) != 0)) {
        fprintf(stderr, "\n%s: %zu bytes, pieces %zu/%zu %zu/%zu: %zu back (%s)\n",
                ct_coding_name(c), len, ein, eout, din, dout, dec.len, ct_codec_error(d));
        CU_FAIL("round trip changed the data");
    }
    ct_codec_free(&d);
    free(enc.p);
    free(dec.p);
}

static void test_roundtrip_text(void)
{
    size_t len = 300 * 1024 + 17;
    uint8_t *data = malloc(len);
    make_text(data, len, 1);
    static const size_t in_pieces[] = {13, 4093, 65537, 1 << 20};
    static const size_t out_pieces[] = {17, 1000, 16384, 1 << 20};
    for (size_t k = 0; k < CT_ARRAY_LEN(codings); k++)
        for (size_t i = 0; i < CT_ARRAY_LEN(in_pieces); i++)
            roundtrip(codings[k], data, len, in_pieces[i], out_pieces[(i + 1) % 4],
                      out_pieces[i], in_pieces[(i + 2) % 4]);
    free(data);
}

static void test_roundtrip_random(void)
{
    size_t len = 200 * 1024 + 3;
    uint8_t *data = malloc(len);
    make_random(data, len, 2);
    for (size_t k = 0; k < CT_ARRAY_LEN(codings); k++) {
        roundtrip(codings[k], data, len, 7, 4096, 4096, 9);
        roundtrip(codings[k], data, len, 1 << 20, 1 << 20, 1 << 20, 1 << 20);
    }
    free(data);
}

static void test_roundtrip_one_byte_pieces(void)
{
    size_t len = 20 * 1024;
    uint8_t *data = malloc(len);
    make_text(data, len, 3);
    for (size_t k = 0; k < CT_ARRAY_LEN(codings); k++)
        roundtrip(codings[k], data, len, 1, 1, 1, 1);
    free(data);
}

static void test_roundtrip_small(void)
{
    static const uint8_t one[] = {'x'};
    for (size_t k = 0; k < CT_ARRAY_LEN(codings); k++) {
        roundtrip(codings[k], one, 0, 1, 64, 1, 64); /* an empty body has a stream too */
        roundtrip(codings[k], one, 1, 1, 1, 1, 1);
        roundtrip(codings[k], one, 1, 64, 64, 64, 64);
    }
}

static void test_levels(void)
{
    int min, max, def;
    size_t len = 64 * 1024;
    uint8_t *data = malloc(len);
    make_text(data, len, 4);
    for (size_t k = 0; k < CT_ARRAY_LEN(codings); k++) {
        enum ct_coding c = codings[k];
        ct_codec_level_range(c, &min, &max, &def);
        CU_ASSERT(min <= def && def <= max);
        CU_ASSERT_PTR_NULL(ct_codec_new(c, CT_CODEC_ENCODE, max + 1, 0));
        CU_ASSERT_PTR_NULL(ct_codec_new(c, CT_CODEC_ENCODE, min - 1 == -1 ? -2 : min - 1, 0));
        size_t sizes[2];
        int lv[2] = {min, max};
        for (int j = 0; j < 2; j++) {
            struct bytes enc = {0};
            struct ct_codec *e = ct_codec_new(c, CT_CODEC_ENCODE, lv[j], 0);
            CU_ASSERT_EQUAL(run_all(e, data, len, 5000, 3000, &enc), CT_CODEC_DONE);
            sizes[j] = enc.len;
            ct_codec_free(&e);
            free(enc.p);
        }
        CU_ASSERT(sizes[1] < sizes[0]); /* the top level compresses better */
        CU_ASSERT(sizes[1] < len / 3);
    }
    CU_ASSERT_PTR_NULL(ct_codec_new(CT_CODING_IDENTITY, CT_CODEC_ENCODE, -1, 0));
    CU_ASSERT_PTR_NULL(ct_codec_new(CT_CODING_OTHER, CT_CODEC_DECODE, -1, 0));
    free(data);
}

/* "hello\n" through `gzip -n` and `zstd` (the tools' streams, not ours) */
static const uint8_t gz_hello[] = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                   0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xe7, 0x02, 0x00,
                                   0x20, 0x30, 0x3a, 0x36, 0x06, 0x00, 0x00, 0x00};
static const uint8_t zstd_hello[] = {0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x31, 0x00, 0x00,
                                     0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x0a, 0x53, 0x88, 0xbd,
                                     0x91}; /* with its checksum (zstd's default) */

static enum ct_codec_rc decode(enum ct_coding c, const uint8_t *p, size_t n, size_t piece,
                               struct bytes *out)
{
    struct ct_codec *d = ct_codec_new(c, CT_CODEC_DECODE, -1, 0);
    enum ct_codec_rc rc = run_all(d, p, n, piece, piece, out);
    if (rc == CT_CODEC_ERROR)
        CU_ASSERT(ct_codec_error(d)[0] != '\0');
    ct_codec_free(&d);
    return rc;
}

static void test_tools_streams(void)
{
    struct bytes out = {0};
    CU_ASSERT_EQUAL(decode(CT_CODING_GZIP, gz_hello, sizeof gz_hello, 3, &out), CT_CODEC_DONE);
    CU_ASSERT(out.len == 6 && memcmp(out.p, "hello\n", 6) == 0);
    out.len = 0;
    CU_ASSERT_EQUAL(decode(CT_CODING_ZSTD, zstd_hello, sizeof zstd_hello, 2, &out),
                    CT_CODEC_DONE);
    CU_ASSERT(out.len == 6 && memcmp(out.p, "hello\n", 6) == 0);

    /* two members, two frames: one body (RFC 1952 §2.2, RFC 8878 §3) */
    uint8_t two[2 * sizeof gz_hello];
    memcpy(two, gz_hello, sizeof gz_hello);
    memcpy(two + sizeof gz_hello, gz_hello, sizeof gz_hello);
    for (size_t piece = 1; piece <= sizeof two; piece += 5) {
        out.len = 0;
        CU_ASSERT_EQUAL(decode(CT_CODING_GZIP, two, sizeof two, piece, &out), CT_CODEC_DONE);
        CU_ASSERT(out.len == 12 && memcmp(out.p, "hello\nhello\n", 12) == 0);
    }
    uint8_t ztwo[2 * sizeof zstd_hello];
    memcpy(ztwo, zstd_hello, sizeof zstd_hello);
    memcpy(ztwo + sizeof zstd_hello, zstd_hello, sizeof zstd_hello);
    out.len = 0;
    CU_ASSERT_EQUAL(decode(CT_CODING_ZSTD, ztwo, sizeof ztwo, 4, &out), CT_CODEC_DONE);
    CU_ASSERT(out.len == 12 && memcmp(out.p, "hello\nhello\n", 12) == 0);
    free(out.p);
}

/* Encode DATA with C in one go (for the corruption cases). */
static struct bytes encode(enum ct_coding c, const uint8_t *data, size_t len)
{
    struct bytes enc = {0};
    struct ct_codec *e = ct_codec_new(c, CT_CODEC_ENCODE, -1, 0);
    CU_ASSERT_EQUAL(run_all(e, data, len, len, 1 << 16, &enc), CT_CODEC_DONE);
    ct_codec_free(&e);
    return enc;
}

static void test_corrupt_refused(void)
{
    size_t len = 50 * 1024;
    uint8_t *data = malloc(len);
    make_text(data, len, 5);
    static const uint8_t junk[] = "this is not a compressed stream at all, not even close";
    for (size_t k = 0; k < CT_ARRAY_LEN(codings); k++) {
        enum ct_coding c = codings[k];
        struct bytes enc = encode(c, data, len), out = {0};
        /* truncated anywhere: an error at the end, never DONE */
        size_t cuts[] = {0, 1, 5, enc.len / 2, enc.len - 1};
        for (size_t i = 0; i < CT_ARRAY_LEN(cuts); i++) {
            out.len = 0;
            CU_ASSERT_EQUAL(decode(c, enc.p, cuts[i], 1000, &out), CT_CODEC_ERROR);
        }
        /* not a stream of this coding */
        out.len = 0;
        CU_ASSERT_EQUAL(decode(c, junk, sizeof junk, 7, &out), CT_CODEC_ERROR);
        /* bytes after the end */
        uint8_t *tail = malloc(enc.len + 4);
        memcpy(tail, enc.p, enc.len);
        memcpy(tail + enc.len, "junk", 4);
        out.len = 0;
        CU_ASSERT_EQUAL(decode(c, tail, enc.len + 4, 333, &out), CT_CODEC_ERROR);
        /* a flipped byte: gzip's CRC catches it; br and zstd (no checksum in
         * our frames) may decode to other bytes, but never overrun or hang */
        for (size_t at = 10; at < enc.len; at += enc.len / 7) {
            memcpy(tail, enc.p, enc.len);
            tail[at] ^= 0x40;
            out.len = 0;
            enum ct_codec_rc rc = decode(c, tail, enc.len, 512, &out);
            if (c == CT_CODING_GZIP)
                CU_ASSERT_EQUAL(rc, CT_CODEC_ERROR);
            CU_ASSERT(rc == CT_CODEC_ERROR || out.len != len || memcmp(out.p, data, len) != 0 ||
                      c != CT_CODING_GZIP);
        }
        free(tail);
        free(enc.p);
        free(out.p);
    }
    free(data);
}

/* A zstd frame asking for a 16 MiB window is refused (8 MiB at most, RFC
 * 9659 §3), before anything that large is allocated. */
static void test_zstd_window_bound(void)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(z, ZSTD_c_windowLog, 24);
    uint8_t src[1024], dst[4096];
    make_text(src, sizeof src, 6);
    ZSTD_outBuffer ob = {dst, sizeof dst, 0};
    ZSTD_inBuffer ib = {src, sizeof src, 0};
    /* continue first: the size is then unknown and the header states the window */
    ZSTD_compressStream2(z, &ob, &ib, ZSTD_e_continue);
    ZSTD_inBuffer none = {NULL, 0, 0};
    CU_ASSERT_EQUAL(ZSTD_compressStream2(z, &ob, &none, ZSTD_e_end), 0);
    ZSTD_freeCCtx(z);
    struct bytes out = {0};
    CU_ASSERT_EQUAL(decode(CT_CODING_ZSTD, dst, ob.pos, ob.pos, &out), CT_CODEC_ERROR);
    CU_ASSERT_EQUAL(out.len, 0);
    free(out.p);
}

static void test_after_end(void)
{
    /* a finished codec takes nothing more and keeps saying so */
    struct ct_codec *e = ct_codec_new(CT_CODING_GZIP, CT_CODEC_ENCODE, 1, 0);
    uint8_t buf[256];
    size_t n = 3, w;
    CU_ASSERT_EQUAL(ct_codec_run(e, "abc", &n, buf, sizeof buf, &w, true), CT_CODEC_DONE);
    CU_ASSERT_EQUAL(n, 3);
    n = 3;
    CU_ASSERT_EQUAL(ct_codec_run(e, "abc", &n, buf, sizeof buf, &w, true), CT_CODEC_DONE);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(w, 0);
    /* no output space: AGAIN, nothing taken */
    ct_codec_free(&e);
    e = ct_codec_new(CT_CODING_BR, CT_CODEC_ENCODE, 1, 0);
    n = 3;
    CU_ASSERT_EQUAL(ct_codec_run(e, "abc", &n, buf, 0, &w, true), CT_CODEC_AGAIN);
    CU_ASSERT_EQUAL(n, 0);
    ct_codec_free(&e);
    ct_codec_free(&e); /* NULL-safe */
    /* a zstd encoder told the size takes no other (in one piece zstd sees
     * the whole input at once and trusts it over the pledge) */
    e = ct_codec_new(CT_CODING_ZSTD, CT_CODEC_ENCODE, 3, 4);
    n = 2;
    CU_ASSERT_EQUAL(ct_codec_run(e, "ab", &n, buf, sizeof buf, &w, false), CT_CODEC_NEED_INPUT);
    n = 1;
    CU_ASSERT_EQUAL(ct_codec_run(e, "c", &n, buf, sizeof buf, &w, true), CT_CODEC_ERROR);
    CU_ASSERT(ct_codec_error(e)[0] != '\0');
    ct_codec_free(&e);
}

void ct_test_register(void)
{
    CT_SUITE("codecs", {"text round trips, odd pieces", test_roundtrip_text},
             {"random round trips", test_roundtrip_random},
             {"one-byte pieces", test_roundtrip_one_byte_pieces},
             {"empty and one-byte bodies", test_roundtrip_small}, {"levels", test_levels},
             {"the tools' streams, concatenated", test_tools_streams},
             {"corrupt input refused", test_corrupt_refused},
             {"zstd window bound", test_zstd_window_bound},
             {"after the end", test_after_end});
}
