/*
 * origin/origin_route.c: from a request target to a route, and from a path
 * to a file name under --root that cannot escape it.
 *
 * Path policy (tested in tests/unit/test_origin.c and origin_static.sh):
 * - any ".." segment, raw or %-encoded, and any %2F or %5C inside a segment
 *   is a traversal attempt: 403, before the file system is touched;
 * - NUL (%00) or a broken %-escape is a malformed request: 400;
 * - "//" and "/./" collapse; the result is relative to the root.
 * Symlinks that leave the root are refused later, by the kernel
 * (openat2 RESOLVE_BENEATH) or a realpath() check (origin_static.c).
 */
#include "origin/origin_int.h"

static const struct {
    struct ct_str path;
    bool prefix;
    enum ct_oroute id;
} routes[] = {
#define CT_OROUTE_ROW(id, path, prefix) {CT_STR(path), prefix, CT_OROUTE_##id},
    CT_OROUTE_TABLE(CT_OROUTE_ROW)
#undef CT_OROUTE_ROW
};

int ct_otarget_split(struct ct_str target, struct ct_str *path, struct ct_str *query)
{
    const char *p = target.p, *end = target.p + target.len;
    if (target.len == 0)
        return CT_EPROTO;
    if (p[0] != '/') {
        /* absolute-form (RFC 9112 §3.2.2): skip scheme and authority. */
        struct ct_str s = ct_str_make(p, CT_MIN(target.len, 8));
        size_t skip;
        if (s.len >= 7 && ct_str_eq_ci(ct_str_make(p, 7), CT_STR("http://")))
            skip = 7;
        else if (s.len >= 8 && ct_str_eq_ci(s, CT_STR("https://")))
            skip = 8;
        else
            return CT_EPROTO;
        p += skip;
        while (p < end && *p != '/' && *p != '?')
            p++;
        if (p == end || *p == '?') {
            *path = CT_STR("/");
            *query = p < end ? ct_str_make(p + 1, (size_t)(end - p - 1)) : CT_STR("");
            return CT_OK;
        }
    }
    const char *q = memchr(p, '?', (size_t)(end - p));
    *path = ct_str_make(p, (size_t)((q ? q : end) - p));
    *query = q ? ct_str_make(q + 1, (size_t)(end - q - 1)) : CT_STR("");
    return CT_OK;
}

enum ct_oroute ct_oroute_match(struct ct_str path, struct ct_str *rest)
{
    for (size_t i = 0; i < CT_ARRAY_LEN(routes); i++) {
        struct ct_str r = routes[i].path;
        if (routes[i].prefix) {
            if (path.len > r.len && memcmp(path.p, r.p, r.len) == 0) {
                *rest = ct_str_make(path.p + r.len, path.len - r.len);
                return routes[i].id;
            }
        } else if (ct_str_eq(path, r)) {
            *rest = CT_STR("");
            return routes[i].id;
        }
    }
    *rest = path;
    return CT_OROUTE_STATIC;
}

bool ct_oroute_is_internal(struct ct_str path)
{
    static const struct ct_str pre = CT_STR("/_origin/");
    return path.len >= pre.len && memcmp(path.p, pre.p, pre.len) == 0;
}

/* Decode one segment into OUT; classify it. */
static int segment(struct ct_str raw, char *out, size_t *olen)
{
    long n = ct_ourl_decode(raw, out, false);
    if (n < 0)
        return CT_EAGAIN;
    for (long i = 0; i < n; i++) {
        if (out[i] == '\0')
            return CT_EAGAIN;
        if (out[i] == '/' || out[i] == '\\')
            return CT_EPROTO;
    }
    if (n == 2 && out[0] == '.' && out[1] == '.')
        return CT_EPROTO;
    *olen = (size_t)n;
    return CT_OK;
}

int ct_opath_normalize(struct ct_str path, char *out, size_t outlen)
{
    size_t o = 0, i = 0;
    char seg[256];
    while (i < path.len) {
        while (i < path.len && path.p[i] == '/')
            i++;
        size_t j = i;
        while (j < path.len && path.p[j] != '/')
            j++;
        if (j == i)
            break;
        if (j - i > sizeof(seg))
            return CT_ELIMIT;
        size_t n;
        int rc = segment(ct_str_make(path.p + i, j - i), seg, &n);
        i = j;
        if (rc != CT_OK)
            return rc;
        if (n == 0 || (n == 1 && seg[0] == '.'))
            continue;
        if (o + n + 2 > outlen)
            return CT_ELIMIT;
        if (o)
            out[o++] = '/';
        memcpy(out + o, seg, n);
        o += n;
    }
    if (outlen == 0)
        return CT_ELIMIT;
    out[o] = '\0';
    return CT_OK;
}

static const struct {
    struct ct_str ext;
    const char *type;
} mime[] = {
    {CT_STR("html"), "text/html; charset=utf-8"},
    {CT_STR("htm"), "text/html; charset=utf-8"},
    {CT_STR("css"), "text/css; charset=utf-8"},
    {CT_STR("js"), "text/javascript; charset=utf-8"},
    {CT_STR("json"), "application/json"},
    {CT_STR("txt"), "text/plain; charset=utf-8"},
    {CT_STR("xml"), "application/xml"},
    {CT_STR("svg"), "image/svg+xml"},
    {CT_STR("png"), "image/png"},
    {CT_STR("jpg"), "image/jpeg"},
    {CT_STR("jpeg"), "image/jpeg"},
    {CT_STR("gif"), "image/gif"},
    {CT_STR("webp"), "image/webp"},
    {CT_STR("ico"), "image/x-icon"},
    {CT_STR("pdf"), "application/pdf"},
    {CT_STR("wasm"), "application/wasm"},
    {CT_STR("woff2"), "font/woff2"},
    {CT_STR("mp4"), "video/mp4"},
};

const char *ct_omime_type(struct ct_str name)
{
    size_t i = name.len;
    while (i > 0 && name.p[i - 1] != '.' && name.p[i - 1] != '/')
        i--;
    if (i > 0 && name.p[i - 1] == '.') {
        struct ct_str ext = ct_str_make(name.p + i, name.len - i);
        for (size_t k = 0; k < CT_ARRAY_LEN(mime); k++)
            if (ct_str_eq_ci(ext, mime[k].ext))
                return mime[k].type;
    }
    return "application/octet-stream";
}
