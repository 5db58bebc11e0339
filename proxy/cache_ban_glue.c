/*
 * proxy/cache_ban_glue.c: the field getter bans use (proxy/cache_ban_glue.h).
 *
 * The stored block is what cache_fill.c rendered from a parsed response:
 * each field on its own "Name: value\r\n" line, no obs-fold, no bare CR, so a
 * line scan is exact. XXX: switch to the stored-head field index when it
 * lands, so a ban test costs one probe instead of a scan of the head.
 */
#include <string.h>

#include "proxy/cache_ban_glue.h"
#include "proxy/cache_int.h"

bool ct_cache_ban_field(const struct ct_obj *obj, struct ct_str name, struct ct_str *value)
{
    struct ct_cache_blk blk;
    struct ct_str wire;
    if (!ct_cache_blk_get(obj, &blk, &wire) || blk.status_len > wire.len)
        return false;
    const char *p = wire.p + blk.status_len, *end = wire.p + wire.len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol ? eol : end;
        if (line_end > p && line_end[-1] == '\r')
            line_end--;
        const char *colon = memchr(p, ':', (size_t)(line_end - p));
        if (colon && ct_str_eq_ci(ct_str_make(p, (size_t)(colon - p)), name)) {
            *value = ct_str_trim_ows(ct_str_make(colon + 1, (size_t)(line_end - colon - 1)));
            return true;
        }
        if (eol == NULL)
            break;
        p = eol + 1;
    }
    return false;
}
