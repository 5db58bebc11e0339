/*
 * common/common.h: what every module shares, libc only.
 *
 * - CT_ASSERT: our own invariants; stays on in release builds (peer input
 *   never reaches an assert, it takes an error path instead).
 * - Magic numbers on structs that travel through `void *` callback
 *   arguments: CT_CHECK_OBJ() fails on the first line of a callback handed
 *   the wrong context.
 * - ct_xmalloc() and friends abort with file:line on exhaustion; limits come
 *   from our own accounting, not from malloc failing.
 * - struct ct_str: a (pointer, length) view; network bytes are never treated
 *   as C strings.
 * - enum ct_err: the small shared set of error codes (0 = ok, negative = error).
 * - ct_time_t: seconds as a double, passed into pure modules so tests move
 *   time instead of sleeping.
 */
#ifndef CT_COMMON_H
#define CT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* The TYPE whose MEMBER P points at (an embedded struct's owner). */
#define CT_CONTAINER_OF(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))
#define CT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CT_MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define CT_LIKELY(x) __builtin_expect(!!(x), 1)
#define CT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define CT_NORETURN __attribute__((noreturn))
/* For a function whose racy reads are hints by design (prefetch targets read
 * without the lock that guards them): ThreadSanitizer does not watch it. */
#define CT_NO_TSAN __attribute__((no_sanitize("thread")))
#else
#define CT_LIKELY(x) (x)
#define CT_UNLIKELY(x) (x)
#define CT_PRINTF(f, a)
#define CT_NORETURN
#define CT_NO_TSAN
#endif

/* ---- asserts --------------------------------------------------------- */

CT_NORETURN void ct_panic(const char *file, int line, const char *fmt, ...) CT_PRINTF(3, 4);

#define CT_ASSERT(cond)                                                        \
    do {                                                                       \
        if (CT_UNLIKELY(!(cond)))                                              \
            ct_panic(__FILE__, __LINE__, "assertion failed: %s", #cond);       \
    } while (0)

#define CT_WRONG(why) ct_panic(__FILE__, __LINE__, "wrong: %s", why)

/* A struct that is handed through `void *` starts with `unsigned magic;`. */
#define CT_CHECK_OBJ(ptr, expected_magic)                                      \
    do {                                                                       \
        if (CT_UNLIKELY((ptr) == NULL || (ptr)->magic != (expected_magic)))    \
            ct_panic(__FILE__, __LINE__, "bad object %s (magic %s)", #ptr,     \
                     #expected_magic);                                         \
    } while (0)

/* ---- allocation ------------------------------------------------------ */

void *ct_xmalloc_at(size_t n, const char *file, int line);
void *ct_xcalloc_at(size_t nmemb, size_t size, const char *file, int line);
void *ct_xrealloc_at(void *p, size_t n, const char *file, int line);
char *ct_xstrndup_at(const char *s, size_t n, const char *file, int line);

#define ct_xmalloc(n) ct_xmalloc_at((n), __FILE__, __LINE__)
#define ct_xcalloc(m, n) ct_xcalloc_at((m), (n), __FILE__, __LINE__)
#define ct_xrealloc(p, n) ct_xrealloc_at((p), (n), __FILE__, __LINE__)
#define ct_xstrndup(s, n) ct_xstrndup_at((s), (n), __FILE__, __LINE__)
#define ct_xstrdup(s) ct_xstrndup_at((s), strlen(s), __FILE__, __LINE__)
/* The directory part of PATH, newly allocated (the caller frees it): "." when
 * PATH has no slash, "/" for a file in the root. */
char *ct_path_dir(const char *path);

/* Free *pp and set it to NULL, so a stale pointer fails fast. */
#define CT_FREE(pp)                                                            \
    do {                                                                       \
        free(*(pp));                                                           \
        *(pp) = NULL;                                                          \
    } while (0)

/* ---- errors ---------------------------------------------------------- */

enum ct_err {
    CT_OK = 0,
    CT_EAGAIN = -1,    /* need more input */
    CT_EPROTO = -2,    /* peer sent something that is not valid HTTP */
    CT_ELIMIT = -3,    /* a configured or hard limit was exceeded */
    CT_EIO = -4,       /* system call failed; errno says why */
    CT_ETIMEDOUT = -5, /* a deadline passed */
    CT_ETLS = -6,      /* TLS failure; OpenSSL's queue says why */
    CT_ECONF = -7,     /* invalid configuration */
    CT_ENOENT = -8,    /* no such thing (key, file, object) */
};

const char *ct_strerror(int err);

/* ---- string views ---------------------------------------------------- */

struct ct_str {
    const char *p;
    size_t len;
};

#define CT_STR(lit) ((struct ct_str){(lit), sizeof(lit) - 1})
#define CT_STR_NULL ((struct ct_str){NULL, 0})

static inline struct ct_str ct_str_make(const char *p, size_t len)
{
    return (struct ct_str){p, len};
}

static inline struct ct_str ct_str_c(const char *s)
{
    return (struct ct_str){s, s ? strlen(s) : 0};
}

static inline bool ct_str_eq(struct ct_str a, struct ct_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* ASCII case-insensitive comparison (HTTP tokens are ASCII). */
bool ct_str_eq_ci(struct ct_str a, struct ct_str b);

/* Byte lanes of a word, eight bytes at a time: each test sets the high bit
 * of every lane that passes it and of none before the first one that does
 * (a difference borrows only upward, out of a lane that already passed), so
 * the lowest flag is exact. Lanes of X below N (N <= 0x80): */
#define CT_LANES_ONES 0x0101010101010101ull
#define CT_LANES_HIGHS 0x8080808080808080ull
static inline uint64_t ct_lanes_below(uint64_t x, unsigned n)
{
    return (x - CT_LANES_ONES * n) & ~x & CT_LANES_HIGHS;
}

/* Lanes of LOW7 (every high bit clear) within [LO, HI]: no sum carries. */
static inline uint64_t ct_lanes_within(uint64_t low7, unsigned lo, unsigned hi)
{
    return (low7 + CT_LANES_ONES * (0x80 - lo)) & ~(low7 + CT_LANES_ONES * (0x7f - hi)) &
           CT_LANES_HIGHS;
}

/* The N bytes (1 to 7) at P as a word, byte k at bits 8k, zero above: the
 * tail of a loop that reads names eight bytes at a time. memcpy of a
 * variable length is a call into libc costing more than the rest of a
 * short name's hash or comparison; these are two overlapping loads. */
static inline uint64_t ct_load_tail(const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    if (n >= 4) {
        const unsigned char *v = u + n - 4;
        uint64_t lo = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
                      (uint32_t)u[3] << 24;
        uint64_t hi = (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 |
                      (uint32_t)v[3] << 24;
        return lo | hi << (8 * (n - 4));
    }
    return (uint64_t)u[0] | (uint64_t)u[n / 2] << (8 * (n / 2)) |
           (uint64_t)u[n - 1] << (8 * (n - 1));
}
static inline char ct_ascii_lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
}

/* Trim optional whitespace (SP / HTAB) from both ends. */
struct ct_str ct_str_trim_ows(struct ct_str s);

/* Parse a non-negative decimal integer made only of digits, the whole view.
 * Returns CT_OK, CT_EPROTO (empty or non-digit) or CT_ELIMIT (overflow past
 * max). */
int ct_str_to_u64(struct ct_str s, uint64_t max, uint64_t *out);

/* ---- time ------------------------------------------------------------ */

/* Seconds since the epoch (wall clock) or an arbitrary origin (monotonic). */
typedef double ct_time_t;

ct_time_t ct_time_real(void);
ct_time_t ct_time_mono(void);

#endif /* CT_COMMON_H */
