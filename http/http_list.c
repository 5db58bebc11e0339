/*
 * http/http_list.c: comma-separated lists and tokens (RFC 9110 §5.6.1-5.6.4).
 *
 * A list field is `#element`: elements separated by commas with optional
 * whitespace around them; empty elements ("a, , b", ",a") are allowed on
 * input and skipped (§5.6.1.2). An element may contain quoted strings
 * (§5.6.4), inside which a comma does not separate and a backslash escapes
 * the next octet, so `no-cache="a, b", max-age=1` is two elements.
 *
 * Pure functions over views: nothing is copied or allocated.
 */
#include "http/http.h"

/* tchar (RFC 9110 §5.6.2): "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
 * "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA */
static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~': return true;
    default: return false;
    }
}

bool ct_http_is_token(struct ct_str s)
{
    if (s.len == 0)
        return false;
    for (size_t i = 0; i < s.len; i++)
        if (!is_tchar((unsigned char)s.p[i]))
            return false;
    return true;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Length of the element starting at P (up to the first comma outside a
 * quoted string, or END). An unterminated quoted string runs to the end: the
 * element is then malformed, but kept whole rather than split at a comma that
 * the sender meant to be quoted. */
static size_t element_len(const char *p, const char *end)
{
    const char *q = p;
    bool quoted = false;
    while (q < end) {
        if (quoted) {
            if (*q == '\\' && q + 1 < end)
                q++; /* quoted-pair: the escaped octet cannot end the string */
            else if (*q == '"')
                quoted = false;
        } else if (*q == '"') {
            quoted = true;
        } else if (*q == ',') {
            break;
        }
        q++;
    }
    return (size_t)(q - p);
}

bool ct_http_list_next(struct ct_str *rest, struct ct_str *elem)
{
    const char *p = rest->p;
    const char *end = p ? p + rest->len : p;
    while (p < end) {
        /* skip separators and the OWS around them: empty elements vanish */
        while (p < end && (is_ows(*p) || *p == ','))
            p++;
        if (p == end)
            break;
        size_t n = element_len(p, end);
        struct ct_str e = ct_str_trim_ows(ct_str_make(p, n));
        p += n;
        if (e.len > 0) {
            *elem = e;
            rest->p = p;
            rest->len = (size_t)(end - p);
            return true;
        }
    }
    rest->p = end;
    rest->len = 0;
    return false;
}

bool ct_http_pair_next(struct ct_str *rest, char sep, struct ct_str *name, struct ct_str *value)
{
    const char *p = rest->p, *end = p ? p + rest->len : p;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p >= end) {
        *rest = ct_str_make(end, 0);
        return false;
    }
    const char *e = memchr(p, sep, (size_t)(end - p));
    if (!e)
        e = end;
    const char *eq = memchr(p, '=', (size_t)(e - p));
    *name = ct_str_make(p, (size_t)((eq ? eq : e) - p));
    *value = eq ? ct_str_make(eq + 1, (size_t)(e - eq - 1)) : ct_str_make(e, 0);
    p = e < end ? e + 1 : end;
    *rest = ct_str_make(p, (size_t)(end - p));
    return true;
}

/* The leading token of a list element: what comes before ';' or '=' (a
 * parameter or an argument), OWS-trimmed ("gzip;q=0.5" -> "gzip"). */
static struct ct_str element_head(struct ct_str e)
{
    size_t i = 0;
    while (i < e.len && e.p[i] != ';' && e.p[i] != '=')
        i++;
    return ct_str_trim_ows(ct_str_make(e.p, i));
}

bool ct_http_list_has(struct ct_str value, struct ct_str token)
{
    struct ct_str e;
    while (ct_http_list_next(&value, &e))
        if (ct_str_eq_ci(element_head(e), token))
            return true;
    return false;
}
