/*
 * origin/origin_query.c: the query string of a request, as the knobs of a
 * generated response (status=, cache-control=, size=, delay=, ...).
 *
 * Values are URL-decoded ('+' is a space, form encoding) into a scratch
 * buffer the caller owns (the connection's, reused per request), so parsing
 * allocates nothing. A value that would put CR, LF or NUL in a response
 * header is refused: the origin can send broken responses on purpose
 * (/bad/KIND), never by accident.
 */
#include <stdio.h>

#include "origin/origin_int.h"

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = ct_ascii_lower(ch);
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

long ct_ourl_decode(struct ct_str in, char *out, bool plus_space)
{
    size_t o = 0;
    for (size_t i = 0; i < in.len; i++) {
        char ch = in.p[i];
        if (ch == '%') {
            if (i + 2 >= in.len)
                return -1;
            int hi = hexval(in.p[i + 1]), lo = hexval(in.p[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else if (ch == '+' && plus_space) {
            out[o++] = ' ';
        } else {
            out[o++] = ch;
        }
    }
    return (long)o;
}

size_t ct_oparams_scratch_len(size_t query_len)
{
    /* Decoded values never grow; two relative dates may be formatted. */
    return query_len + 2 * (CT_HTTP_DATE_LEN + 1) + 1;
}

static bool header_safe(struct ct_str v)
{
    for (size_t i = 0; i < v.len; i++)
        if (v.p[i] == '\r' || v.p[i] == '\n' || v.p[i] == '\0')
            return false;
    return true;
}

static int bad(char *err, size_t errlen, struct ct_str key, struct ct_str val, const char *why)
{
    int kl = (int)CT_MIN(key.len, 40), vl = (int)CT_MIN(val.len, 60);
    snprintf(err, errlen, "bad query value %.*s=%.*s: %s", kl, key.p, vl, val.p, why);
    for (char *p = err; *p; p++) /* the reason is one line, whatever was decoded */
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return CT_EPROTO;
}

static int parse_uint(struct ct_str v, uint64_t min, uint64_t max, uint64_t *out)
{
    if (ct_str_to_u64(v, max, out) != CT_OK || *out < min)
        return CT_EPROTO;
    return CT_OK;
}

/* expires= / last-modified=: "+N" or "-N" seconds from NOW, "@T" Unix time,
 * or any other text sent as is (an invalid Expires is a legitimate test). */
static struct ct_str date_value(struct ct_str v, time_t now, char *dst)
{
    uint64_t n;
    time_t t;
    if (v.len < 2 || (v.p[0] != '+' && v.p[0] != '-' && v.p[0] != '@'))
        return v;
    if (ct_str_to_u64(ct_str_make(v.p + 1, v.len - 1), INT32_MAX, &n) != CT_OK)
        return v;
    t = v.p[0] == '@' ? (time_t)n : v.p[0] == '+' ? now + (time_t)n : now - (time_t)n;
    ct_http_date_format(t, dst);
    return ct_str_make(dst, CT_HTTP_DATE_LEN);
}

#define KEY_IS(lit) ct_str_eq(key, CT_STR(lit))

/* Fields the origin writes itself (or that frame the message): a second
 * copy from hdr= would make a broken or ambiguous response by accident. */
static bool origin_owns(struct ct_str name)
{
    static const char *const own[] = {
        "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade",
        "Trailer", "TE", "Date", "Server", "Content-Type", "Content-Range", "Accept-Ranges",
        "X-Origin-Seq",
    };
    for (size_t i = 0; i < CT_ARRAY_LEN(own); i++)
        if (ct_str_eq_ci(name, ct_str_c(own[i])))
            return true;
    return false;
}

/* hdr=Name:Value (the ':' and spaces URL-encoded): one more response field. */
static int set_hdr(struct ct_oparams *prm, struct ct_str key, struct ct_str v, char *err,
                   size_t errlen)
{
    const char *colon = memchr(v.p, ':', v.len);
    if (colon == NULL)
        return bad(err, errlen, key, v, "expected Name:Value");
    struct ct_str name = ct_str_make(v.p, (size_t)(colon - v.p));
    struct ct_str value = ct_str_trim_ows(ct_str_make(colon + 1, v.len - name.len - 1));
    if (!ct_http_is_token(name))
        return bad(err, errlen, key, v, "the field name is not a token");
    if (!header_safe(value))
        return bad(err, errlen, key, v, "CR, LF or NUL in a header value");
    if (origin_owns(name))
        return bad(err, errlen, key, v, "a field the origin sets itself");
    if (prm->n_hdrs == CT_OPARAM_MAX_HDRS)
        return bad(err, errlen, key, v, "too many hdr (16 at most)");
    prm->hdr_name[prm->n_hdrs] = name;
    prm->hdr_value[prm->n_hdrs++] = value;
    return CT_OK;
}

static int set_param(struct ct_oparams *prm, struct ct_str key, struct ct_str v, time_t now,
                     char *dates, char *err, size_t errlen)
{
    uint64_t n;
    if (KEY_IS("status")) {
        if (parse_uint(v, 200, 599, &n))
            return bad(err, errlen, key, v, "expected a status 200-599");
        prm->status = (unsigned)n;
    } else if (KEY_IS("size")) {
        if (parse_uint(v, 0, CT_OPARAM_MAX_SIZE, &prm->size))
            return bad(err, errlen, key, v, "expected a byte count up to 2^40");
        prm->has_size = true;
    } else if (KEY_IS("chunked")) {
        if (!ct_str_eq(v, CT_STR("1")) && !ct_str_eq(v, CT_STR("0")))
            return bad(err, errlen, key, v, "expected 0 or 1");
        prm->chunked = v.p[0] == '1';
    } else if (KEY_IS("delay")) {
        if (parse_uint(v, 0, CT_OPARAM_MAX_DELAY_MS, &n))
            return bad(err, errlen, key, v, "expected milliseconds up to 600000");
        prm->has_delay = true;
        prm->delay_ms = (unsigned)n;
    } else if (KEY_IS("close")) {
        if (!ct_str_eq(v, CT_STR("mid")))
            return bad(err, errlen, key, v, "expected 'mid'");
        prm->close_mid = true;
    } else if (KEY_IS("trickle")) {
        if (parse_uint(v, 1, 60000, &n))
            return bad(err, errlen, key, v, "expected milliseconds 1-60000");
        prm->trickle_ms = (unsigned)n;
    } else if (KEY_IS("hdr")) {
        return set_hdr(prm, key, v, err, errlen);
    } else if (KEY_IS("type")) {
        /* type "/" subtype, then parameters as given (RFC 9110 §8.3.1) */
        const char *slash = memchr(v.p, '/', v.len);
        size_t end = 0;
        while (end < v.len && v.p[end] != ';' && v.p[end] != ' ')
            end++;
        if (!slash || !ct_http_is_token(ct_str_make(v.p, (size_t)(slash - v.p))) ||
            !ct_http_is_token(ct_str_make(slash + 1, end - (size_t)(slash + 1 - v.p))) ||
            !header_safe(v))
            return bad(err, errlen, key, v, "expected a media type such as text/html");
        prm->type = v;
    } else if (KEY_IS("trickle-size")) {
        if (parse_uint(v, 1, CT_OPATTERN_SPAN, &prm->trickle_size))
            return bad(err, errlen, key, v, "expected bytes 1-1048576");
    } else {
        struct ct_str *hdr = NULL;
        if (KEY_IS("cache-control"))
            hdr = &prm->cache_control;
        else if (KEY_IS("expires"))
            hdr = &prm->expires;
        else if (KEY_IS("etag"))
            hdr = &prm->etag;
        else if (KEY_IS("last-modified"))
            hdr = &prm->last_modified;
        else if (KEY_IS("vary"))
            hdr = &prm->vary;
        else if (KEY_IS("set-cookie")) {
            if (prm->n_cookies == CT_OPARAM_MAX_COOKIES)
                return bad(err, errlen, key, v, "too many set-cookie (16 at most)");
            hdr = &prm->set_cookie[prm->n_cookies++];
        } else {
            return CT_OK; /* unknown keys are cache busters */
        }
        if (!header_safe(v))
            return bad(err, errlen, key, v, "CR, LF or NUL in a header value");
        /* One fixed slot each, so repeating the key cannot overflow. */
        if (hdr == &prm->expires)
            v = date_value(v, now, dates);
        else if (hdr == &prm->last_modified)
            v = date_value(v, now, dates + CT_HTTP_DATE_LEN + 1);
        *hdr = v;
    }
    return CT_OK;
}

int ct_oparams_parse(struct ct_str query, char *scratch, time_t now, struct ct_oparams *prm,
                     char *err, size_t errlen)
{
    memset(prm, 0, sizeof(*prm));
    prm->trickle_size = 1024;
    char *dst = scratch;
    /* Formatted dates go after the decoded values. */
    char *dates = scratch + query.len + 1;
    size_t i = 0;
    while (i < query.len) {
        size_t j = i;
        while (j < query.len && query.p[j] != '&')
            j++;
        struct ct_str pair = ct_str_make(query.p + i, j - i);
        i = j + 1;
        if (pair.len == 0)
            continue;
        const char *eq = memchr(pair.p, '=', pair.len);
        struct ct_str rk = ct_str_make(pair.p, eq ? (size_t)(eq - pair.p) : pair.len);
        struct ct_str rv = eq ? ct_str_make(eq + 1, pair.len - rk.len - 1) : CT_STR("");
        long kl = ct_ourl_decode(rk, dst, true);
        if (kl < 0)
            return bad(err, errlen, rk, rv, "bad %-escape in the name");
        struct ct_str key = ct_str_make(dst, (size_t)kl);
        dst += kl;
        long vl = ct_ourl_decode(rv, dst, true);
        if (vl < 0)
            return bad(err, errlen, key, rv, "bad %-escape in the value");
        struct ct_str v = ct_str_make(dst, (size_t)vl);
        dst += vl;
        int rc = set_param(prm, key, v, now, dates, err, errlen);
        if (rc != CT_OK)
            return rc;
    }
    return CT_OK;
}
