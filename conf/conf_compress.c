/*
 * conf/conf_compress.c: the compression settings' one run-time question,
 * asked by the fill for every cacheable response: is its media type one to
 * compress? compression.types holds lower-case media types and ranges (a
 * type, a slash and a star), checked by conf_units.c; a few entries, so a
 * linear scan.
 */
#include <string.h>

#include "conf/conf.h"
#include "common/common.h"

bool ct_conf_compress_type(const struct ct_conf_compression *cz, const char *content_type,
                           size_t len)
{
    /* media-type = type "/" subtype parameters (RFC 9110 §8.3.1): the
     * parameters start at ';', and OWS may precede them */
    struct ct_str ct = ct_str_make(content_type, len);
    const char *semi = memchr(ct.p, ';', ct.len);
    if (semi)
        ct.len = (size_t)(semi - ct.p);
    ct = ct_str_trim_ows(ct);
    const char *slash = ct.len ? memchr(ct.p, '/', ct.len) : NULL;
    if (!slash)
        return false;
    size_t tlen = (size_t)(slash - ct.p);
    for (size_t i = 0; i < cz->ntypes; i++) {
        struct ct_str t = ct_str_c(cz->types[i]);
        if (t.len == tlen + 2 && t.p[tlen] == '/' && t.p[tlen + 1] == '*') {
            if (ct_str_eq_ci(ct_str_make(ct.p, tlen), ct_str_make(t.p, tlen)))
                return true;
        } else if (ct_str_eq_ci(ct, t)) {
            return true;
        }
    }
    return false;
}
