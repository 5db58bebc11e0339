/*
 * http/http_lex.c: byte-exact validation beside http-parser.
 *
 * The Debian libhttp-parser is built without HTTP_PARSER_STRICT, so it takes
 * obs-fold, bare LF, "Host : x", any version digits, junk after a chunk
 * size and chunk data not followed by CRLF. These two scanners hold every
 * byte to RFC 9112 instead:
 *
 *   the head lexer    request/status line and field lines (also the chunked
 *                     trailer section), with the line, head and field-count
 *                     limits; it reports the exact byte of the first offence;
 *   the chunk shadow  the chunked framing bytes http-parser consumed (sizes,
 *                     extensions, the CRLF after data, last chunk, trailers).
 *
 * Both are resumable byte state machines: any split of the input gives the
 * same verdict at the same byte. Pure; no allocation.
 */
#include "http/http_int.h"

#include <pthread.h>

uint8_t ct_http_cls[256];
static pthread_once_t cls_once = PTHREAD_ONCE_INIT;

static void cls_build(void)
{
    static const char tchar_punct[] = "!#$%&'*+-.^_`|~";
    for (int c = 0; c < 256; c++) {
        uint8_t k = 0;
        if (c >= 0x21 && c <= 0x7e)
            k |= CT_CH_VCHAR;
        if (c >= 0x80)
            k |= CT_CH_OBS;
        if (c == ' ' || c == '\t')
            k |= CT_CH_WS;
        if (c >= '0' && c <= '9')
            k |= CT_CH_DIGIT | CT_CH_HEX | CT_CH_TCHAR;
        if ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
            k |= CT_CH_HEX;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            k |= CT_CH_TCHAR;
        if (c != 0 && memchr(tchar_punct, c, sizeof(tchar_punct) - 1))
            k |= CT_CH_TCHAR;
        /* RFC 3986 uri-host [":" port]: unreserved, sub-delims, pct-encoded, IP-literal */
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c != 0 && memchr("-._~!$&'()*+,;=%:[]", c, 19)))
            k |= CT_CH_HOST;
        ct_http_cls[c] = k;
    }
}

void ct_http_cls_init(void)
{
    pthread_once(&cls_once, cls_build);
}

static void lex_fail(struct ct_http_lex *L, unsigned status, const char *reason)
{
    if (L->err_status == 0) {
        L->err_status = status;
        L->err_reason = reason;
    }
}

/* HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3), byte C of it.
 * Only 1.0 and 1.1 are served: anything else well-formed is a 505. */
static bool lex_version(struct ct_http_lex *L, unsigned char c)
{
    static const char pattern[] = "HTTP/D.D"; /* D: a digit */
    char want = pattern[L->ver_idx];
    if (want == 'D' ? !(ct_http_cls[c] & CT_CH_DIGIT) : c != (unsigned char)want) {
        lex_fail(L, 400, "malformed HTTP version");
        return false;
    }
    if (L->ver_idx == 5)
        L->major = (uint8_t)(c - '0');
    if (L->ver_idx == 7)
        L->minor = (uint8_t)(c - '0');
    if (++L->ver_idx < sizeof(pattern) - 1)
        return true;
    if (L->major != 1 || L->minor > 1) {
        lex_fail(L, 505, "HTTP version not supported");
        return false;
    }
    L->st = L->request ? CT_LX_LINE_CR : CT_LX_STATUS_SP;
    return true;
}

/* Request or status line byte C. Returns false on error (L->err set). */
static bool lex_start_line(struct ct_http_lex *L, unsigned char c)
{
    switch (L->st) {
    case CT_LX_METHOD:
        if (ct_http_cls[c] & CT_CH_TCHAR)
            return true;
        if (c == ' ' && L->total > L->line_start) {
            L->method_done = true;
            L->method_len = L->total - L->line_start;
            L->st = CT_LX_TARGET_START;
            return true;
        }
        lex_fail(L, 400, "invalid method token");
        return false;
    case CT_LX_TARGET_START:
    case CT_LX_TARGET:
        if (ct_http_cls[c] & CT_CH_VCHAR) {
            L->st = CT_LX_TARGET;
            return true;
        }
        if (c == ' ' && L->st == CT_LX_TARGET) {
            L->st = CT_LX_VERSION;
            return true;
        }
        lex_fail(L, 400, "invalid request target");
        return false;
    case CT_LX_VERSION: return lex_version(L, c);
    case CT_LX_STATUS_SP:
        L->st = CT_LX_STATUS;
        if (c == ' ')
            return true;
        lex_fail(L, 400, "malformed status line");
        return false;
    case CT_LX_STATUS:
        if (L->status_digits < 3 && (ct_http_cls[c] & CT_CH_DIGIT)) {
            L->status_digits++;
            return true;
        }
        if (L->status_digits == 3 && (c == ' ' || c == '\r')) {
            L->st = c == ' ' ? CT_LX_REASON : CT_LX_LINE_LF;
            L->line_end = L->total;
            return true;
        }
        lex_fail(L, 400, "malformed status code");
        return false;
    case CT_LX_REASON:
        if (ct_http_cls[c] & CT_CH_FV)
            return true;
        if (c == '\r') {
            L->st = CT_LX_LINE_LF;
            L->line_end = L->total;
            return true;
        }
        lex_fail(L, 400, "invalid character in reason phrase");
        return false;
    case CT_LX_LINE_CR:
        if (c == '\r') {
            L->st = CT_LX_LINE_LF;
            L->line_end = L->total;
            return true;
        }
        lex_fail(L, 400, "malformed request line");
        return false;
    default: CT_WRONG("lexer state");
    }
}

/* The field line being lexed: its mark, or NULL when none is kept. */
static struct ct_http_lex_mark *field_mark(struct ct_http_lex *L)
{
    return L->marks && L->nfields <= CT_HTTP_LEX_MARKS ? &L->marks[L->nfields - 1] : NULL;
}

/* Field-line byte C (also used for the chunked trailer section). */
static bool lex_field(struct ct_http_lex *L, const struct ct_http_limits *lim, unsigned char c)
{
    switch (L->st) {
    case CT_LX_LINE_LF:
    case CT_LX_VALUE_LF:
        if (c != '\n') {
            lex_fail(L, 400, "bare CR");
            return false;
        }
        L->st = CT_LX_FIELD_START;
        return true;
    case CT_LX_FIELD_START:
        if (c == '\r') {
            L->st = CT_LX_END_LF;
            return true;
        }
        if (ct_http_cls[c] & CT_CH_TCHAR) {
            if (++L->nfields > lim->max_fields) {
                lex_fail(L, 431, "too many header fields");
                return false;
            }
            L->st = CT_LX_NAME;
            return true;
        }
        /* RFC 9112 §5.2: obs-fold is refused, never unfolded; a line
         * starting with whitespace is one whatever precedes it. */
        lex_fail(L, 400,
                 (ct_http_cls[c] & CT_CH_WS) ? "obsolete line folding"
                 : c == '\n'                 ? "bare LF"
                                             : "invalid header field name");
        return false;
    case CT_LX_NAME:
        if (ct_http_cls[c] & CT_CH_TCHAR)
            return true;
        if (c == ':') {
            struct ct_http_lex_mark *mk = field_mark(L);
            if (mk)
                mk->colon = (uint32_t)L->total;
            L->st = CT_LX_VALUE;
            return true;
        }
        lex_fail(L, 400,
                 (ct_http_cls[c] & CT_CH_WS) ? "whitespace between header name and colon"
                                             : "invalid header field name");
        return false;
    case CT_LX_VALUE:
        if (ct_http_cls[c] & CT_CH_FV)
            return true;
        if (c == '\r') {
            struct ct_http_lex_mark *mk = field_mark(L);
            if (mk)
                mk->cr = (uint32_t)L->total;
            L->st = CT_LX_VALUE_LF;
            return true;
        }
        lex_fail(L, 400, c == '\n' ? "bare LF" : "control character in header value");
        return false;
    case CT_LX_END_LF:
        if (c != '\n') {
            lex_fail(L, 400, "bare CR");
            return false;
        }
        L->st = CT_LX_DONE;
        return true;
    default: CT_WRONG("lexer state");
    }
}

/* ---- eight bytes at a time ---------------------------------------------------
 *
 * Each class has one word test (common.h's lanes), exact at the first
 * offending byte, so the byte machine is never asked to agree with an
 * approximation. */

/* Lanes that are not field-value octets taken in words: below 0x20 (HTAB,
 * CR and the controls) or DEL. obs-text passes. */
static inline uint64_t lanes_not_fv(uint64_t x)
{
    uint64_t del = x ^ (CT_LANES_ONES * 0x7f);
    return ct_lanes_below(x, 0x20) | ct_lanes_below(del, 1);
}

/* Lanes that are not VCHAR (0x21-0x7e). */
static inline uint64_t lanes_not_vchar(uint64_t x)
{
    return ct_lanes_below(x, 0x21) |
           ((x | ((x & ~CT_LANES_HIGHS) + CT_LANES_ONES)) & CT_LANES_HIGHS);
}

/* Lanes that are not letters, digits or '-': what field names are made of,
 * but for the rarer tchar punctuation, which the byte loop takes. Folding
 * 0x20 in makes upper case lower; the controls it would fold onto digits
 * and '-' are flagged first. */
static inline uint64_t lanes_not_name(uint64_t x)
{
    uint64_t low7 = (x | CT_LANES_ONES * 0x20) & ~CT_LANES_HIGHS;
    uint64_t ok = ct_lanes_within(low7, 'a', 'z') | ct_lanes_within(low7, '0', '9') |
                  ct_lanes_within(low7, '-', '-');
    return (~ok & CT_LANES_HIGHS) | (x & CT_LANES_HIGHS) | ct_lanes_below(x, 0x20);
}

/* I advanced over the whole words of BUF[I..STOP) that pass, and on to the
 * first byte that does not where a word has one (little-endian: the lowest
 * lane is the first byte). Inlined with its constant test. */
static inline size_t skip_words(const char *buf, size_t i, size_t stop,
                                uint64_t (*lanes_bad)(uint64_t))
{
    while (stop - i >= 8) {
        uint64_t w, bad;
        memcpy(&w, buf + i, 8);
        bad = lanes_bad(w);
        if (bad != 0) {
            if (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
                i += (size_t)__builtin_ctzll(bad) / 8;
            break;
        }
        i += 8;
    }
    return i;
}

/* Field-value octets from I, in words; HTAB, obs-text past a word's first
 * offender and the line's end are the byte loop's to take. */
static size_t skip_value_words(const char *buf, size_t i, size_t stop)
{
    return skip_words(buf, i, stop, lanes_not_fv);
}

/* ---- whole lines -------------------------------------------------------------
 *
 * Most heads arrive whole, and most lines in them are valid. These take one
 * complete line at a time in tight loops, and accept only lines the byte
 * machine below would accept, leaving the lexer in the state it would have
 * reached; on anything else (an offence, a limit, a line not yet complete)
 * they take nothing and the byte machine reads the line and names the exact
 * byte. So what is reported never depends on which path read a line. */

/* Bytes from I of BUF[..STOP) in the class WANT. */
static size_t run_of(const char *buf, size_t i, size_t stop, uint8_t want)
{
    while (i < stop && (ct_http_cls[(unsigned char)buf[i]] & want))
        i++;
    return i;
}

/* The same for the two long runs of a head, words first. */
static size_t run_of_name(const char *buf, size_t i, size_t stop)
{
    return run_of(buf, skip_words(buf, i, stop, lanes_not_name), stop, CT_CH_TCHAR);
}

static size_t run_of_vchar(const char *buf, size_t i, size_t stop)
{
    return run_of(buf, skip_words(buf, i, stop, lanes_not_vchar), stop, CT_CH_VCHAR);
}

static bool is_crlf_at(const char *buf, size_t i, size_t stop)
{
    return i + 1 < stop && buf[i] == '\r' && buf[i + 1] == '\n';
}

/* Field lines "name:value CRLF" from FIELD_START; returns bytes taken. */
static size_t fast_field_lines(struct ct_http_lex *L, const struct ct_http_limits *lim,
                               const char *buf, size_t len)
{
    size_t i = 0;
    while (L->nfields < lim->max_fields && L->total < lim->max_head) {
        /* every byte of the line must lie below max_head */
        size_t stop = i + CT_MIN(len - i, lim->max_head - L->total);
        size_t colon = run_of_name(buf, i, stop);
        if (colon == i || colon >= stop || buf[colon] != ':')
            break;
        size_t eol = run_of(buf, skip_value_words(buf, colon + 1, stop), stop, CT_CH_FV);
        if (!is_crlf_at(buf, eol, stop))
            break;
        L->nfields++;
        struct ct_http_lex_mark *mk = field_mark(L);
        if (mk)
            *mk = (struct ct_http_lex_mark){(uint32_t)(L->total + (colon - i)),
                                            (uint32_t)(L->total + (eol - i))};
        L->total += eol + 2 - i;
        i = eol + 2;
    }
    return i;
}

/* "HTTP/1.0" or "HTTP/1.1" at BUF[I..STOP): *MINOR gets the minor digit. */
static bool fast_version(const char *buf, size_t i, size_t stop, uint8_t *minor)
{
    if (stop - i < 8 || memcmp(buf + i, "HTTP/1.", 7) != 0 ||
        (buf[i + 7] != '0' && buf[i + 7] != '1'))
        return false;
    *minor = (uint8_t)(buf[i + 7] - '0');
    return true;
}

static bool is_digit3(const char *p)
{
    return (ct_http_cls[(unsigned char)p[0]] & ct_http_cls[(unsigned char)p[1]] &
            ct_http_cls[(unsigned char)p[2]] & CT_CH_DIGIT) != 0;
}

/* A whole request or status line at START (not an empty line); returns
 * bytes taken (0: leave it to the byte machine, L untouched). */
static size_t fast_start_line(struct ct_http_lex *L, const struct ct_http_limits *lim,
                              const char *buf, size_t len)
{
    /* every byte below max_head; the line without its CRLF within max_line */
    size_t stop = CT_MIN(len, lim->max_head - L->total);
    size_t content_stop = CT_MIN(stop, lim->max_line);
    size_t eol, method_len = 0;
    uint8_t minor;
    if (L->request) {
        size_t sp = run_of(buf, 0, content_stop, CT_CH_TCHAR);
        if (sp == 0 || sp >= content_stop || buf[sp] != ' ')
            return 0;
        size_t t_end = run_of_vchar(buf, sp + 1, content_stop);
        if (t_end == sp + 1 || t_end >= content_stop || buf[t_end] != ' ' ||
            !fast_version(buf, t_end + 1, content_stop, &minor))
            return 0;
        method_len = sp;
        eol = t_end + 9;
    } else {
        if (content_stop < 12 || !fast_version(buf, 0, content_stop, &minor) || buf[8] != ' ' ||
            !is_digit3(buf + 9))
            return 0;
        eol = 12;
        if (eol < content_stop && buf[eol] == ' ')
            eol = run_of(buf, eol + 1, content_stop, CT_CH_FV);
    }
    if (!is_crlf_at(buf, eol, stop))
        return 0;
    L->line_start = L->total;
    L->line_end = L->total + eol;
    L->major = 1;
    L->minor = minor;
    L->ver_idx = 8;
    if (L->request) {
        L->method_done = true;
        L->method_len = method_len;
    } else {
        L->status_digits = 3;
    }
    L->st = CT_LX_FIELD_START;
    L->total += eol + 2;
    return eol + 2;
}

size_t ct_http_lex_scan(struct ct_http_lex *L, const struct ct_http_limits *lim, const char *buf,
                        size_t len)
{
    size_t i = 0;
    for (; i < len && L->st != CT_LX_DONE; i++) {
        if (L->st == CT_LX_START && buf[i] != '\r' && L->total < lim->max_head)
            i += fast_start_line(L, lim, buf + i, len - i);
        if (L->st == CT_LX_FIELD_START)
            i += fast_field_lines(L, lim, buf + i, len - i);
        if (i == len)
            break;
        unsigned char c = (unsigned char)buf[i];
        if (L->total >= lim->max_head) {
            lex_fail(L, 431, L->trailer ? "trailer section too large" : "header section too large");
            return i;
        }
        /* Field values, names and targets are most of a head: take them in a
         * tight loop, stopping where a limit would be crossed. */
        if (L->st == CT_LX_VALUE || L->st == CT_LX_NAME || L->st == CT_LX_TARGET) {
            uint8_t want = L->st == CT_LX_VALUE  ? CT_CH_FV
                           : L->st == CT_LX_NAME ? CT_CH_TCHAR
                                                 : CT_CH_VCHAR;
            size_t stop = i + CT_MIN(len - i, lim->max_head - L->total);
            if (L->st == CT_LX_TARGET) {
                size_t line = L->total - L->line_start;
                stop = line < lim->max_line ? CT_MIN(stop, i + (lim->max_line - line)) : i;
            }
            size_t j = L->st == CT_LX_VALUE ? skip_value_words(buf, i, stop) : i;
            while (j < stop && (ct_http_cls[(unsigned char)buf[j]] & want))
                j++;
            L->total += j - i;
            i = j;
            if (i == len)
                break;
            if (L->total >= lim->max_head) {
                lex_fail(L, 431,
                         L->trailer ? "trailer section too large" : "header section too large");
                return i;
            }
            c = (unsigned char)buf[i];
        }
        bool ok;
        switch (L->st) {
        case CT_LX_START:
            if (c == '\r') {
                L->st = CT_LX_START_LF;
                ok = true;
                break;
            }
            L->line_start = L->total;
            L->st = L->request ? CT_LX_METHOD : CT_LX_VERSION;
            ok = lex_start_line(L, c);
            break;
        case CT_LX_START_LF:
            L->st = CT_LX_START;
            ok = c == '\n';
            if (!ok)
                lex_fail(L, 400, "bare CR");
            break;
        case CT_LX_METHOD:
        case CT_LX_TARGET_START:
        case CT_LX_TARGET:
        case CT_LX_VERSION:
        case CT_LX_STATUS_SP:
        case CT_LX_STATUS:
        case CT_LX_REASON:
        case CT_LX_LINE_CR:
            /* max_line counts the line without its CRLF */
            if (c != '\r' && L->total - L->line_start >= lim->max_line) {
                lex_fail(L, 414, L->request ? "request line too long" : "status line too long");
                return i;
            }
            ok = lex_start_line(L, c);
            break;
        default: ok = lex_field(L, lim, c); break;
        }
        if (!ok)
            return i;
        L->total++;
    }
    return i;
}

#define CHUNK_LINE_MAX 4096 /* size and extensions; nginx allows less */

/* One framing byte C; returns the next state, or -1 if C is not allowed. */
static int chunk_step(struct ct_http_chunk *cs, unsigned char c)
{
    uint8_t k = ct_http_cls[c];
    switch (cs->st) {
    case CT_CK_SIZE_START:
    case CT_CK_SIZE:
        if (k & CT_CH_HEX) {
            if (cs->size > (UINT64_MAX >> 4))
                return -1;
            cs->size =
                cs->size * 16 + (uint64_t)(k & CT_CH_DIGIT ? c - '0' : (c | 0x20) - 'a' + 10);
            return CT_CK_SIZE;
        }
        if (cs->st == CT_CK_SIZE_START)
            return -1;
        __attribute__((fallthrough)); /* what may follow the digits */
    case CT_CK_SIZE_WS:
        return (k & CT_CH_WS)                      ? CT_CK_SIZE_WS
               : c == ';'                          ? CT_CK_EXT_NAME_START
               : c == '\r' && cs->st == CT_CK_SIZE ? CT_CK_SIZE_LF
                                                   : -1;
    case CT_CK_EXT_NAME_START:
        return (k & CT_CH_WS) ? CT_CK_EXT_NAME_START : (k & CT_CH_TCHAR) ? CT_CK_EXT_NAME : -1;
    case CT_CK_EXT_NAME:
    case CT_CK_EXT_VAL_TOKEN:
        if (k & CT_CH_TCHAR)
            return cs->st;
        __attribute__((fallthrough));
    case CT_CK_EXT_AFTER_NAME:
    case CT_CK_EXT_AFTER_VAL:
        if (k & CT_CH_WS)
            return cs->st == CT_CK_EXT_NAME || cs->st == CT_CK_EXT_AFTER_NAME ? CT_CK_EXT_AFTER_NAME
                                                                              : CT_CK_EXT_AFTER_VAL;
        if (c == '=' && (cs->st == CT_CK_EXT_NAME || cs->st == CT_CK_EXT_AFTER_NAME))
            return CT_CK_EXT_VAL_START;
        return c == ';' ? CT_CK_EXT_NAME_START : c == '\r' ? CT_CK_SIZE_LF : -1;
    case CT_CK_EXT_VAL_START:
        return (k & CT_CH_WS)      ? CT_CK_EXT_VAL_START
               : c == '"'          ? CT_CK_EXT_VAL_QUOTED
               : (k & CT_CH_TCHAR) ? CT_CK_EXT_VAL_TOKEN
                                   : -1;
    case CT_CK_EXT_VAL_QUOTED:
        return c == '"'         ? CT_CK_EXT_AFTER_VAL
               : c == '\\'      ? CT_CK_EXT_VAL_QESC
               : (k & CT_CH_FV) ? CT_CK_EXT_VAL_QUOTED
                                : -1;
    case CT_CK_EXT_VAL_QESC: return (k & CT_CH_FV) ? CT_CK_EXT_VAL_QUOTED : -1;
    case CT_CK_SIZE_LF:
        if (c != '\n')
            return -1;
        if (cs->size == 0) {
            cs->trailer = (struct ct_http_lex){.st = CT_LX_FIELD_START, .trailer = true};
            return CT_CK_TRAILER;
        }
        cs->remaining = cs->size;
        return CT_CK_DATA;
    case CT_CK_DATA: /* a framing byte after data: the data must be complete */
        return cs->remaining == 0 && c == '\r' ? CT_CK_DATA_LF : -1;
    case CT_CK_DATA_LF:
        if (c != '\n')
            return -1;
        cs->size = 0;
        cs->line_len = 0;
        return CT_CK_SIZE_START;
    default: return -1;
    }
}

static bool chunk_fail(struct ct_http_chunk *cs, unsigned status, const char *reason)
{
    if (cs->err_status == 0) {
        cs->err_status = status;
        cs->err_reason = reason;
    }
    return false;
}

bool ct_http_chunk_scan(struct ct_http_chunk *cs, const struct ct_http_limits *lim, const char *buf,
                        size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (cs->st == CT_CK_TRAILER) {
            struct ct_http_lex *T = &cs->trailer;
            i += ct_http_lex_scan(T, lim, buf + i, len - i);
            if (T->err_status)
                return chunk_fail(cs, T->err_status, T->err_reason);
            if (T->st != CT_LX_DONE)
                return true;
            cs->st = CT_CK_DONE;
            i--; /* the loop's i++ moves past the trailer section */
            continue;
        }
        int next = chunk_step(cs, (unsigned char)buf[i]);
        if (next < 0)
            return chunk_fail(cs, 400,
                              cs->st == CT_CK_DATA || cs->st == CT_CK_DATA_LF
                                  ? "chunk data not followed by CRLF"
                                  : "malformed chunk size line");
        if (next < CT_CK_SIZE_LF && ++cs->line_len > CHUNK_LINE_MAX)
            return chunk_fail(cs, 400, "chunk size line too long");
        cs->st = (uint8_t)next;
    }
    return true;
}
