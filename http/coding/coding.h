/*
 * http/coding/coding.h: streaming encoders and decoders for the content
 * codings cachet makes (gzip: zlib, br: Brotli, zstd: Zstandard), behind one
 * interface. Its own library (ct_coding), so that ct_http's users (the
 * origin, the cache, conf) do not link three compression libraries.
 *
 * A codec is fed input in pieces of any size and writes into output space of
 * any size; it keeps what it could not write and gives it out on the next
 * call, so the caller bounds both sides (back-pressure: stop feeding while
 * the output is not taken). Memory per codec is bounded by its window and
 * tables, set here, never by the input's size. Measured (glibc mallinfo2,
 * 16 KiB pieces of JSON-like text; 1 MiB of unknown size / 100 KiB known):
 *
 *   gzip  encoder 262 KiB at every level (15-bit window, memLevel 8);
 *         decoder 32 KiB window + 7 KiB
 *   br    encoder (lgwin 18, 256 KiB window) level 1: 0.1 MiB, 5: 3.9 / 2.3 MiB,
 *         6: 5.0 / 3.4 MiB,
 *         9: 37 / 34 MiB, 11: 6.9 / 3.1 MiB; decoder: the stream's window,
 *         16 MiB at most (large windows stay off)
 *   zstd  encoder (windowLog 19 at most, tables capped to it from level 7)
 *         level 1: 1.3 / 0.7 MiB, 3: 2.0 / 1.1, 9: 4.3 / 2.2, 19: 6.1 / 3.5;
 *         decoder windowLog 23 (8 MiB, RFC 9659 §3) at most: a frame asking
 *         for more is refused
 *
 * Decoders reject corrupt or truncated input with CT_CODEC_ERROR and a
 * reason; they never read past their input or write past their output.
 * gzip and zstd decoders accept concatenated members/frames (RFC 1952 §2.2,
 * RFC 8878 §3); bytes after the end of a br stream are an error.
 *
 * One codec is used by one thread at a time; codecs share nothing.
 */
#ifndef CT_CODING_H
#define CT_CODING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http_ae.h"

struct ct_codec; /* opaque; owned by its creator */

enum ct_codec_dir { CT_CODEC_ENCODE, CT_CODEC_DECODE };

#define CT_CODEC_LEVEL_DEFAULT (-1)

/* Level range per coding (for conf/): gzip 1..9, br 0..11, zstd 1..19. */
void ct_codec_level_range(enum ct_coding c, int *min, int *max, int *def);

/* A new encoder or decoder for C (GZIP, BR or ZSTD) at LEVEL (encoders only;
 * CT_CODEC_LEVEL_DEFAULT, or within ct_codec_level_range). SIZE_HINT, if not 0,
 * is the input's exact size (a Content-Length): an encoder sizes its window
 * and tables to it, so a small object costs less memory; a zstd encoder
 * pledges it, and input of another length then ends in CT_CODEC_ERROR. Returns NULL if C is not one of the
 * three or LEVEL is out of range; aborts on out of memory like ct_xmalloc. */
struct ct_codec *ct_codec_new(enum ct_coding c, enum ct_codec_dir dir, int level,
                              uint64_t size_hint);
void ct_codec_free(struct ct_codec **cdp); /* NULL-safe; sets *cdp = NULL */

enum ct_codec_rc {
    CT_CODEC_AGAIN = 0, /* output space ran out: call again with more space */
    CT_CODEC_NEED_INPUT, /* all input taken and all output given out; feed more */
    CT_CODEC_DONE,       /* the stream ended: encoder flushed after LAST, decoder
                            saw its end; further calls return DONE and take nothing */
    CT_CODEC_ERROR,      /* corrupt or truncated input (decoder), or the library
                            failed: ct_codec_error() says why; the codec stays in error */
};

/* Run the codec over IN[0..*in_len) into OUT[0..out_cap). On return *in_len
 * holds the input bytes taken and *out_len the bytes written. LAST says IN
 * ends the input: an encoder then finishes its stream, a decoder whose
 * stream has not ended by then reports a truncation (CT_CODEC_ERROR). Call
 * until DONE (with LAST) or NEED_INPUT, giving again the input not taken. */
enum ct_codec_rc ct_codec_run(struct ct_codec *cd, const void *in, size_t *in_len, void *out,
                              size_t out_cap, size_t *out_len, bool last);

/* Why the codec is in error (static text or the library's); "" if it is not. */
const char *ct_codec_error(const struct ct_codec *cd);

/* Input and output bytes so far (for the per-coding counters). */
uint64_t ct_codec_bytes_in(const struct ct_codec *cd);
uint64_t ct_codec_bytes_out(const struct ct_codec *cd);

#endif /* CT_CODING_H */
