/*
 * proxy/core/cache_ban_glue.c: the field getter bans use (proxy/core/cache_ban_glue.h).
 *
 * It reads the object's stored field index (written once at store time,
 * cache_fill.c add_index): a field in the header table is one probe of the
 * index, any other name a walk over the index's entries; nothing parses
 * the stored block.
 */
#include "http/http_hdrindex.h"
#include "proxy/core/cache_ban_glue.h"
#include "proxy/core/cache_int.h"

bool ct_cache_ban_field(const struct ct_obj *obj, struct ct_str name, struct ct_str *value)
{
    struct ct_stored_blk blk;
    struct ct_str wire;
    struct ct_hdrindex hx;
    if (!ct_stored_blk_get(obj, &blk, &wire) || !ct_stored_index(&blk, wire, &hx))
        return false;
    enum ct_hdr_id id = ct_hdr_lookup(name);
    if (id != CT_HDR_UNKNOWN) {
        int i = ct_hdrindex_find(&hx, id, 0);
        if (i < 0)
            return false;
        *value = ct_hdrindex_field(&hx, (unsigned)i).value;
        return true;
    }
    for (unsigned i = 0; i < ct_hdrindex_count(&hx); i++) {
        struct ct_hdrindex_field f = ct_hdrindex_field(&hx, i);
        if (f.id == CT_HDR_UNKNOWN && ct_str_eq_ci(f.name, name)) {
            *value = f.value;
            return true;
        }
    }
    return false;
}
