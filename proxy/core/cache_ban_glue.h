/*
 * proxy/core/cache_ban_glue.h: how bans read the proxy's stored heads (issue 16).
 * The store (cache/) keeps the head block opaque; the proxy's layout is a
 * struct ct_stored_blk prefix, the status line, then "Name: value" CRLF lines
 * (proxy/core/cache_int.h). This is the ct_cache_config.field getter for it.
 */
#ifndef CT_PROXY_CACHE_BAN_GLUE_H
#define CT_PROXY_CACHE_BAN_GLUE_H

#include "cache/cache.h"

/* ct_cache_field_fn: the first stored field NAME of OBJ (case-insensitive),
 * its value without surrounding whitespace. Any thread, no lock taken. */
bool ct_cache_ban_field(const struct ct_obj *obj, struct ct_str name, struct ct_str *value);

#endif /* CT_PROXY_CACHE_BAN_GLUE_H */
