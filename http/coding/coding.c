/*
 * http/coding/coding.c: gzip, br and zstd behind one streaming interface
 * (coding.h has the contract and the memory bounds).
 *
 * Each coding is three functions (init, run, end) over the library's own
 * stream state, kept in a union in the codec. ct_codec_run() owns the rules
 * common to all: a codec in error or done stays so, byte counters, and "no
 * output space" (AGAIN without calling the library, which would report a
 * buffer error indistinguishable from a stall).
 *
 * The libraries' conventions differ in how a stall is told: zlib returns
 * Z_BUF_ERROR when no progress was possible, Brotli has NEEDS_MORE_INPUT /
 * NEEDS_MORE_OUTPUT, zstd returns a hint and leaves us to compare positions.
 * Each run() turns its library's answer into the four ct_codec_rc values.
 */
#include "http/coding/coding.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define CT_CODEC_MAGIC 0xc0de5eedu

/* Window bounds (coding.h's table). */
#define BR_LGWIN_MAX 18     /* encoder: 256 KiB */
#define BR_LGWIN_MIN 10     /* Brotli's own minimum */
#define ZSTD_WLOG_ENC_MAX 19 /* encoder: 512 KiB */
#define ZSTD_WLOG_DEC_MAX 23 /* decoder: 8 MiB, RFC 9659 §3's limit for HTTP */

struct ct_codec {
    unsigned magic;
    enum ct_coding coding;
    enum ct_codec_dir dir;
    enum ct_codec_rc state; /* AGAIN while running; DONE or ERROR at the end */
    bool member_end;        /* gzip decoder: a member ended at the input's end */
    bool frame_end;         /* zstd decoder: the last frame is complete */
    const char *err;
    uint64_t bytes_in, bytes_out;
    union {
        z_stream z;
        BrotliEncoderState *bre;
        BrotliDecoderState *brd;
        ZSTD_CCtx *zc;
        ZSTD_DCtx *zd;
    } u;
};

void ct_codec_level_range(enum ct_coding c, int *min, int *max, int *def)
{
    switch (c) {
    case CT_CODING_GZIP: *min = 1, *max = 9, *def = 6; break;
    case CT_CODING_BR: *min = 0, *max = 11, *def = 6; break;
    case CT_CODING_ZSTD: *min = 1, *max = 19, *def = 3; break;
    default: *min = *max = *def = 0; break;
    }
}

/* Smallest window (log2) holding SIZE bytes, clamped to [LO, HI]; HI when
 * the size is not known. */
static int window_for(uint64_t size, int lo, int hi)
{
    if (size == 0)
        return hi;
    int w = lo;
    while (w < hi && ((uint64_t)1 << w) < size)
        w++;
    return w;
}

/* ---- gzip (zlib) -------------------------------------------------------- */

static bool gzip_init(struct ct_codec *cd, int level)
{
    memset(&cd->u.z, 0, sizeof(cd->u.z));
    /* 15 + 16: a 32 KiB window with the gzip wrapper, not zlib's (RFC 9110
     * §8.4.1.3 gzip is RFC 1952) */
    if (cd->dir == CT_CODEC_ENCODE)
        return deflateInit2(&cd->u.z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    return inflateInit2(&cd->u.z, 15 + 16) == Z_OK;
}

static void gzip_end(struct ct_codec *cd)
{
    if (cd->dir == CT_CODEC_ENCODE)
        deflateEnd(&cd->u.z);
    else
        inflateEnd(&cd->u.z);
}

static enum ct_codec_rc gzip_run(struct ct_codec *cd, const uint8_t *in, size_t *in_len,
                                 uint8_t *out, size_t cap, size_t *out_len, bool last)
{
    z_stream *z = &cd->u.z;
    /* zlib counts in uInt: feed at most 1 GiB a call; the caller calls again */
    size_t in_n = CT_MIN(*in_len, (size_t)1 << 30), out_n = CT_MIN(cap, (size_t)1 << 30);
    z->next_in = (Bytef *)(uintptr_t)in;
    z->avail_in = (uInt)in_n;
    z->next_out = out;
    z->avail_out = (uInt)out_n;
    enum ct_codec_rc rc;
    for (;;) {
        if (cd->dir == CT_CODEC_ENCODE) {
            int zr = deflate(z, last ? Z_FINISH : Z_NO_FLUSH);
            if (zr == Z_STREAM_END)
                rc = CT_CODEC_DONE;
            else if (zr != Z_OK && zr != Z_BUF_ERROR)
                rc = CT_CODEC_ERROR, cd->err = z->msg ? z->msg : "deflate failed";
            else if (z->avail_out == 0)
                rc = CT_CODEC_AGAIN;
            else
                rc = last ? CT_CODEC_AGAIN : CT_CODEC_NEED_INPUT;
            break;
        }
        if (cd->member_end) {
            if (z->avail_in == 0) {
                rc = last ? CT_CODEC_DONE : CT_CODEC_NEED_INPUT;
                break;
            }
            /* another member follows (RFC 1952 §2.2: a gzip file is a series
             * of members): start over on it */
            inflateReset(z);
            cd->member_end = false;
        }
        int zr = inflate(z, Z_NO_FLUSH);
        if (zr == Z_STREAM_END) {
            cd->member_end = true;
            continue;
        }
        if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT || zr == Z_MEM_ERROR || zr == Z_STREAM_ERROR) {
            rc = CT_CODEC_ERROR;
            cd->err = zr == Z_NEED_DICT ? "gzip stream needs a dictionary"
                                        : (z->msg ? z->msg : "corrupt gzip stream");
        } else if (z->avail_out == 0) {
            rc = CT_CODEC_AGAIN;
        } else if (last) {
            rc = CT_CODEC_ERROR, cd->err = "truncated gzip stream";
        } else {
            rc = CT_CODEC_NEED_INPUT;
        }
        break;
    }
    *in_len = in_n - z->avail_in;
    *out_len = out_n - z->avail_out;
    /* a call cut at 1 GiB has input left even when zlib wanted more */
    if (rc == CT_CODEC_NEED_INPUT && *in_len < in_n)
        rc = CT_CODEC_AGAIN;
    return rc;
}

/* ---- br (Brotli) -------------------------------------------------------- */

static bool br_init(struct ct_codec *cd, int level, uint64_t size_hint)
{
    if (cd->dir == CT_CODEC_DECODE) {
        cd->u.brd = BrotliDecoderCreateInstance(NULL, NULL, NULL);
        return cd->u.brd != NULL; /* large windows stay off: 16 MiB at most */
    }
    cd->u.bre = BrotliEncoderCreateInstance(NULL, NULL, NULL);
    if (cd->u.bre == NULL)
        return false;
    BrotliEncoderSetParameter(cd->u.bre, BROTLI_PARAM_QUALITY, (uint32_t)level);
    BrotliEncoderSetParameter(cd->u.bre, BROTLI_PARAM_LGWIN,
                              (uint32_t)window_for(size_hint, BR_LGWIN_MIN, BR_LGWIN_MAX));
    if (size_hint > 0 && size_hint < (1u << 30))
        BrotliEncoderSetParameter(cd->u.bre, BROTLI_PARAM_SIZE_HINT, (uint32_t)size_hint);
    return true;
}

static void br_end(struct ct_codec *cd)
{
    if (cd->dir == CT_CODEC_ENCODE)
        BrotliEncoderDestroyInstance(cd->u.bre);
    else
        BrotliDecoderDestroyInstance(cd->u.brd);
}

static enum ct_codec_rc br_run(struct ct_codec *cd, const uint8_t *in, size_t *in_len,
                               uint8_t *out, size_t cap, size_t *out_len, bool last)
{
    const uint8_t *next_in = in;
    size_t avail_in = *in_len, avail_out = cap;
    uint8_t *next_out = out;
    enum ct_codec_rc rc;
    if (cd->dir == CT_CODEC_ENCODE) {
        BrotliEncoderOperation op = last ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS;
        /* the encoder may stop short of filling the output while it has more
         * to say; call it until it finishes, fills the output or stalls */
        for (;;) {
            size_t before = avail_out + avail_in;
            if (!BrotliEncoderCompressStream(cd->u.bre, op, &avail_in, &next_in, &avail_out,
                                             &next_out, NULL)) {
                rc = CT_CODEC_ERROR, cd->err = "brotli encoder failed";
                break;
            }
            if (BrotliEncoderIsFinished(cd->u.bre)) {
                rc = CT_CODEC_DONE;
                break;
            }
            if (avail_out == 0) {
                rc = CT_CODEC_AGAIN;
                break;
            }
            if (!last && avail_in == 0 && !BrotliEncoderHasMoreOutput(cd->u.bre)) {
                rc = CT_CODEC_NEED_INPUT;
                break;
            }
            if (avail_out + avail_in == before) { /* no progress: should not happen */
                rc = CT_CODEC_ERROR, cd->err = "brotli encoder stalled";
                break;
            }
        }
    } else {
        BrotliDecoderResult r = BrotliDecoderDecompressStream(cd->u.brd, &avail_in, &next_in,
                                                              &avail_out, &next_out, NULL);
        switch (r) {
        case BROTLI_DECODER_RESULT_SUCCESS:
            if (avail_in > 0)
                rc = CT_CODEC_ERROR, cd->err = "data after the end of the br stream";
            else
                rc = CT_CODEC_DONE;
            break;
        case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: rc = CT_CODEC_AGAIN; break;
        case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
            if (last)
                rc = CT_CODEC_ERROR, cd->err = "truncated br stream";
            else
                rc = CT_CODEC_NEED_INPUT;
            break;
        default:
            rc = CT_CODEC_ERROR;
            cd->err = BrotliDecoderErrorString(BrotliDecoderGetErrorCode(cd->u.brd));
            break;
        }
    }
    *in_len -= avail_in;
    *out_len = cap - avail_out;
    return rc;
}

/* ---- zstd ----------------------------------------------------------------- */

static bool zstd_init(struct ct_codec *cd, int level, uint64_t size_hint)
{
    if (cd->dir == CT_CODEC_DECODE) {
        cd->u.zd = ZSTD_createDCtx();
        return cd->u.zd != NULL &&
               !ZSTD_isError(ZSTD_DCtx_setParameter(cd->u.zd, ZSTD_d_windowLogMax,
                                                    ZSTD_WLOG_DEC_MAX));
    }
    cd->u.zc = ZSTD_createCCtx();
    if (cd->u.zc == NULL)
        return false;
    /* every level's window for a large input is 2^19 or more: cap it there,
     * and fit it to a known size (2^10 is zstd's smallest). The higher
     * levels' hash and chain tables are sized for 8-128 MiB windows (84 MiB
     * of state at 19): from level 7 on (where zstd's own exceed it) cap them
     * to the window too; below, zstd's are smaller than the cap. A known size is pledged,
     * which lets zstd shrink the rest for small objects; a body that then
     * ends short or runs long is an error, as it is for the fill. */
    int wlog = window_for(size_hint, 10, ZSTD_WLOG_ENC_MAX);
    bool ok = !ZSTD_isError(ZSTD_CCtx_setParameter(cd->u.zc, ZSTD_c_compressionLevel, level)) &&
              !ZSTD_isError(ZSTD_CCtx_setParameter(cd->u.zc, ZSTD_c_windowLog, wlog));
    if (ok && level >= 7)
        ok = !ZSTD_isError(ZSTD_CCtx_setParameter(cd->u.zc, ZSTD_c_hashLog,
                                                   CT_MIN(wlog + 1, ZSTD_WLOG_ENC_MAX))) &&
              !ZSTD_isError(ZSTD_CCtx_setParameter(cd->u.zc, ZSTD_c_chainLog,
                                                   CT_MIN(wlog + 1, ZSTD_WLOG_ENC_MAX)));
    if (ok && size_hint > 0)
        ok = !ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cd->u.zc, size_hint));
    return ok;
}

static void zstd_end(struct ct_codec *cd)
{
    if (cd->dir == CT_CODEC_ENCODE)
        ZSTD_freeCCtx(cd->u.zc);
    else
        ZSTD_freeDCtx(cd->u.zd);
}

static enum ct_codec_rc zstd_run(struct ct_codec *cd, const uint8_t *in, size_t *in_len,
                                 uint8_t *out, size_t cap, size_t *out_len, bool last)
{
    ZSTD_inBuffer ib = {in, *in_len, 0};
    ZSTD_outBuffer ob = {out, cap, 0};
    enum ct_codec_rc rc;
    if (cd->dir == CT_CODEC_ENCODE) {
        size_t r = ZSTD_compressStream2(cd->u.zc, &ob, &ib, last ? ZSTD_e_end : ZSTD_e_continue);
        if (ZSTD_isError(r))
            rc = CT_CODEC_ERROR, cd->err = ZSTD_getErrorName(r);
        else if (last && r == 0)
            rc = CT_CODEC_DONE;
        else if (ob.pos == ob.size || ib.pos < ib.size || last)
            rc = CT_CODEC_AGAIN;
        else
            rc = CT_CODEC_NEED_INPUT;
    } else {
        /* one call decodes as much as fits; several frames in a row are one
         * stream (RFC 8878 §3) */
        size_t r = ZSTD_decompressStream(cd->u.zd, &ob, &ib);
        if (ZSTD_isError(r)) {
            rc = CT_CODEC_ERROR, cd->err = ZSTD_getErrorName(r);
        } else {
            if (ib.pos > 0 || r == 0)
                cd->frame_end = r == 0;
            if (ib.pos < ib.size || (ob.pos == ob.size && r != 0))
                rc = CT_CODEC_AGAIN;
            else if (!last)
                rc = CT_CODEC_NEED_INPUT;
            else if (cd->frame_end)
                rc = CT_CODEC_DONE;
            else
                rc = CT_CODEC_ERROR, cd->err = "truncated zstd stream";
        }
    }
    *in_len = ib.pos;
    *out_len = ob.pos;
    return rc;
}

/* ---- the interface ---------------------------------------------------------- */

struct ct_codec *ct_codec_new(enum ct_coding c, enum ct_codec_dir dir, int level,
                              uint64_t size_hint)
{
    int min, max, def;
    ct_codec_level_range(c, &min, &max, &def);
    if (max == 0)
        return NULL; /* identity, NONE, OTHER */
    if (level == CT_CODEC_LEVEL_DEFAULT)
        level = def;
    if (level < min || level > max)
        return NULL;
    struct ct_codec *cd = ct_xcalloc(1, sizeof(*cd));
    cd->magic = CT_CODEC_MAGIC;
    cd->coding = c;
    cd->dir = dir;
    cd->state = CT_CODEC_AGAIN;
    cd->err = "";
    bool ok = c == CT_CODING_GZIP ? gzip_init(cd, level)
              : c == CT_CODING_BR ? br_init(cd, level, size_hint)
                                  : zstd_init(cd, level, size_hint);
    /* the libraries fail to initialise only when out of memory */
    if (!ok)
        ct_panic(__FILE__, __LINE__, "out of memory starting a %s codec", ct_coding_name(c));
    return cd;
}

void ct_codec_free(struct ct_codec **cdp)
{
    struct ct_codec *cd = *cdp;
    if (cd == NULL)
        return;
    CT_CHECK_OBJ(cd, CT_CODEC_MAGIC);
    switch (cd->coding) {
    case CT_CODING_GZIP: gzip_end(cd); break;
    case CT_CODING_BR: br_end(cd); break;
    default: zstd_end(cd); break;
    }
    cd->magic = 0;
    CT_FREE(cdp);
}

enum ct_codec_rc ct_codec_run(struct ct_codec *cd, const void *in, size_t *in_len, void *out,
                              size_t out_cap, size_t *out_len, bool last)
{
    CT_CHECK_OBJ(cd, CT_CODEC_MAGIC);
    *out_len = 0;
    if (cd->state == CT_CODEC_DONE && cd->dir == CT_CODEC_DECODE && *in_len > 0) {
        cd->state = CT_CODEC_ERROR;
        cd->err = "data after the end of the stream";
    }
    if (cd->state != CT_CODEC_AGAIN) {
        *in_len = 0;
        return cd->state;
    }
    if (out_cap == 0) {
        *in_len = 0;
        return CT_CODEC_AGAIN;
    }
    enum ct_codec_rc rc;
    switch (cd->coding) {
    case CT_CODING_GZIP: rc = gzip_run(cd, in, in_len, out, out_cap, out_len, last); break;
    case CT_CODING_BR: rc = br_run(cd, in, in_len, out, out_cap, out_len, last); break;
    default: rc = zstd_run(cd, in, in_len, out, out_cap, out_len, last); break;
    }
    cd->bytes_in += *in_len;
    cd->bytes_out += *out_len;
    if (rc == CT_CODEC_DONE || rc == CT_CODEC_ERROR)
        cd->state = rc;
    return rc;
}

const char *ct_codec_error(const struct ct_codec *cd)
{
    return cd->state == CT_CODEC_ERROR ? cd->err : "";
}

uint64_t ct_codec_bytes_in(const struct ct_codec *cd)
{
    return cd->bytes_in;
}

uint64_t ct_codec_bytes_out(const struct ct_codec *cd)
{
    return cd->bytes_out;
}
