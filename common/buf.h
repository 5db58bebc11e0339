/*
 * common/buf.h: one growable byte buffer, and the JSON string escaper that
 * writes into it.
 *
 * A struct ct_buf is a plain value the caller owns and may embed: zero it to
 * start, ct_buf_free() at the end. Setting len = 0 (ct_buf_reset) keeps the
 * memory, so a connection that reuses its buffers stops allocating after the
 * first requests. Whenever p is not NULL, p[len] is a NUL byte, so the text
 * renderings (/stats, log lines) can be handed to C string functions; the
 * byte count is still len, and the contents may hold NUL bytes of their own.
 *
 * Not thread-safe: one buffer belongs to one thread at a time. Allocation
 * failure aborts (ct_xrealloc), so no function here fails.
 */
#ifndef CT_BUF_H
#define CT_BUF_H

#include "common/common.h"

struct ct_buf {
    char *p;    /* NULL until the first write */
    size_t len; /* bytes written */
    size_t cap; /* bytes allocated (one is kept for the NUL) */
};

/* Make room for EXTRA more bytes (plus the trailing NUL). */
void ct_buf_reserve(struct ct_buf *b, size_t extra);
/* Free the memory; b is all zero afterwards and may be reused. */
void ct_buf_free(struct ct_buf *b);
static inline void ct_buf_reset(struct ct_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

void ct_buf_put(struct ct_buf *b, const void *p, size_t n);
static inline void ct_buf_put_str(struct ct_buf *b, struct ct_str s)
{
    ct_buf_put(b, s.p, s.len);
}
void ct_buf_put_byte(struct ct_buf *b, char ch);
/* V in decimal, no padding. */
void ct_buf_put_u64(struct ct_buf *b, uint64_t v);
/* printf-style; one formatting pass when it fits. */
void ct_buf_printf(struct ct_buf *b, const char *fmt, ...) CT_PRINTF(2, 3);
#define CT_BUF_LIT(b, lit) ct_buf_put((b), "" lit, sizeof(lit) - 1) /* literals only */

/* ---- JSON strings (RFC 8259 §7) ----------------------------------------- */

/* How bytes >= 0x80 are written. Either way the output is valid JSON,
 * whatever S holds.
 *   CT_JSON_UTF8:  valid UTF-8 sequences are copied; a byte that is not part
 *                  of one becomes \u00XX (its Latin-1 code point). For text
 *                  meant to be read: /stats, the JSON access log.
 *   CT_JSON_BYTES: every byte >= 0x80 becomes \u00XX, so a reader that maps
 *                  code points back to bytes (Latin-1) recovers S exactly.
 *                  For cachet-origin's /echo, which tests compare byte for
 *                  byte. */
enum ct_json_mode { CT_JSON_UTF8, CT_JSON_BYTES };

/* The contents of a JSON string for S, without the quotes: '"' and '\\'
 * backslashed, \n \r \t short, other bytes below 0x20 and DEL as \u00XX. */
void ct_buf_json_escape(struct ct_buf *b, struct ct_str s, enum ct_json_mode mode);
/* The same between double quotes. */
void ct_buf_json_str(struct ct_buf *b, struct ct_str s, enum ct_json_mode mode);

#endif /* CT_BUF_H */
