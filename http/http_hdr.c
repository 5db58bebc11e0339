/*
 * http/http_hdr.c: the method table, the header table and the helpers that
 * look fields up in a parsed message.
 *
 * Both tables are generated from X-macros (CT_METHOD_TABLE in http.h,
 * CT_HDR_TABLE in http_hdr_tbl.h), so ids, names and flags cannot drift.
 *
 * Header name lookup runs once per received field, so it is a hash lookup,
 * not a scan: an open-addressing table of the ids, keyed by a
 * case-insensitive hash of the name, built once before main (a constructor) and
 * read-only afterwards, so any thread may call it.
 */
#include "http/http.h"

#include <pthread.h>

/* ---- methods --------------------------------------------------------- */

static const struct {
    struct ct_str name;
    unsigned flags;
} method_tbl[CT_METHOD__COUNT] = {[CT_METHOD_OTHER] = {{"OTHER", 5}, 0},
#define CT_METHOD_ROW(id, name, flags) [CT_METHOD_##id] = {{name, sizeof(name) - 1}, flags},
                                  CT_METHOD_TABLE(CT_METHOD_ROW)
#undef CT_METHOD_ROW
};

enum ct_http_method ct_http_method_lookup(struct ct_str name)
{
    /* Method names are case-sensitive (RFC 9110 §9.1): "get" is not GET. */
    for (int m = CT_METHOD_OTHER + 1; m < CT_METHOD__COUNT; m++)
        if (ct_str_eq(method_tbl[m].name, name))
            return (enum ct_http_method)m;
    return CT_METHOD_OTHER;
}

const char *ct_http_method_name(enum ct_http_method m)
{
    if ((unsigned)m >= CT_METHOD__COUNT)
        return "OTHER";
    return method_tbl[m].name.p;
}

unsigned ct_http_method_flags(enum ct_http_method m)
{
    if ((unsigned)m >= CT_METHOD__COUNT)
        return 0;
    return method_tbl[m].flags;
}

/* ---- the header table ------------------------------------------------ */

static const struct {
    struct ct_str name;
    unsigned flags;
} hdr_tbl[CT_HDR__COUNT] = {[CT_HDR_UNKNOWN] = {{NULL, 0}, 0},
#define CT_HDR_ROW(id, name, flags) [CT_HDR_##id] = {{name, sizeof(name) - 1}, flags},
                            CT_HDR_TABLE(CT_HDR_ROW)
#undef CT_HDR_ROW
};

/* Power of two, at least 2x the number of rows so probe chains stay short. */
#define HDR_SLOTS 256
_Static_assert(CT_HDR__COUNT * 2 <= HDR_SLOTS, "grow HDR_SLOTS with the header table");

static uint8_t hdr_slot[HDR_SLOTS]; /* an enum ct_hdr_id; 0 (UNKNOWN) = empty */

static uint32_t row_hash[CT_HDR__COUNT]; /* hash_ci() of each canonical name */

/* Each canonical name lower-cased, for HTTP/2 and HTTP/3 (RFC 9113 §8.2.1:
 * field names are sent in lower case). Built with the hash from the one
 * table, so there is no second list of names to keep in step. */
#define HDR_LNAME_MAX 32
#define CT_HDR_LEN_CHECK(id, name, flags)                                      \
    _Static_assert(sizeof(name) <= HDR_LNAME_MAX, "header name too long: " name);
CT_HDR_TABLE(CT_HDR_LEN_CHECK)
#undef CT_HDR_LEN_CHECK
static char hdr_lname[CT_HDR__COUNT][HDR_LNAME_MAX];

/* Eight bytes at a time. OR-ing 0x20 into every byte folds the case of
 * letters, so names equal but for case hash alike; the few collisions it
 * makes among other bytes are settled by the comparison. */
static uint32_t hash_ci(struct ct_str s)
{
    const uint64_t fold = 0x2020202020202020ull;
    uint64_t h = 0xcbf29ce484222325ull ^ s.len;
    size_t i = 0;
    for (; s.len - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, s.p + i, 8);
        h = (h ^ (w | fold)) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    if (i < s.len) {
        uint64_t w = ct_load_tail(s.p + i, s.len - i);
        h = (h ^ (w | (fold >> (8 * (8 - (s.len - i)))))) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return (uint32_t)(h ^ (h >> 32));
}

/* Before main (a constructor), so the lookups, which run for every field
 * of every message, do not each pay pthread_once's call and check. */
__attribute__((constructor)) static void hdr_build(void)
{
    for (int id = 1; id < CT_HDR__COUNT; id++) {
        row_hash[id] = hash_ci(hdr_tbl[id].name);
        for (size_t k = 0; k < hdr_tbl[id].name.len; k++)
            hdr_lname[id][k] = ct_ascii_lower(hdr_tbl[id].name.p[k]);
        uint32_t i = row_hash[id] & (HDR_SLOTS - 1);
        while (hdr_slot[i] != CT_HDR_UNKNOWN)
            i = (i + 1) & (HDR_SLOTS - 1);
        hdr_slot[i] = (uint8_t)id;
    }
}

enum ct_hdr_id ct_hdr_lookup(struct ct_str name)
{
    if (name.len == 0)
        return CT_HDR_UNKNOWN;
    uint32_t h = hash_ci(name), i = h & (HDR_SLOTS - 1);
    for (unsigned probes = 0; probes < HDR_SLOTS; probes++) {
        unsigned id = hdr_slot[i];
        if (id == CT_HDR_UNKNOWN)
            return CT_HDR_UNKNOWN;
        if (row_hash[id] == h && ct_str_eq_ci(hdr_tbl[id].name, name))
            return (enum ct_hdr_id)id;
        i = (i + 1) & (HDR_SLOTS - 1);
    }
    return CT_HDR_UNKNOWN;
}

const char *ct_hdr_name(enum ct_hdr_id id)
{
    if ((unsigned)id >= CT_HDR__COUNT)
        return NULL;
    return hdr_tbl[id].name.p;
}

struct ct_str ct_hdr_lname(enum ct_hdr_id id)
{
    if (id == CT_HDR_UNKNOWN || (unsigned)id >= CT_HDR__COUNT)
        return CT_STR_NULL;
    return ct_str_make(hdr_lname[id], hdr_tbl[id].name.len);
}

unsigned ct_hdr_flags(enum ct_hdr_id id)
{
    if ((unsigned)id >= CT_HDR__COUNT)
        return 0;
    return hdr_tbl[id].flags;
}

/* ---- looking fields up in a message ---------------------------------- */

/* Index of the field after AFTER (0 when AFTER is NULL). AFTER must be one of
 * MSG's own fields: anything else is a caller bug. */
static size_t next_index(const struct ct_http_msg *msg, const struct ct_http_field *after)
{
    if (after == NULL)
        return 0;
    CT_ASSERT(after >= msg->fields && after < msg->fields + msg->nfields);
    return (size_t)(after - msg->fields) + 1;
}

_Static_assert(CT_HDR__COUNT <= 64, "struct ct_http_msg's ids_seen holds one bit per id");

void ct_http_msg_set_fields(struct ct_http_msg *msg, const struct ct_http_field *f, size_t n)
{
    uint64_t seen = 1; /* bit 0: the set is filled in */
    for (size_t i = 0; i < n; i++)
        seen |= 1ull << f[i].id;
    msg->fields = f;
    msg->nfields = n;
    msg->ids_seen = seen;
}

const struct ct_http_field *ct_http_msg_find(const struct ct_http_msg *msg, enum ct_hdr_id id,
                                             const struct ct_http_field *after)
{
    if ((msg->ids_seen & 1) && !(msg->ids_seen & (1ull << id)))
        return NULL;
    for (size_t i = next_index(msg, after); i < msg->nfields; i++)
        if (msg->fields[i].id == id)
            return &msg->fields[i];
    return NULL;
}

const struct ct_http_field *ct_http_msg_find_name(const struct ct_http_msg *msg, struct ct_str name,
                                                  const struct ct_http_field *after)
{
    for (size_t i = next_index(msg, after); i < msg->nfields; i++)
        if (ct_str_eq_ci(msg->fields[i].name, name))
            return &msg->fields[i];
    return NULL;
}

bool ct_http_msg_has_token(const struct ct_http_msg *msg, enum ct_hdr_id id, struct ct_str token)
{
    for (const struct ct_http_field *f = ct_http_msg_find(msg, id, NULL); f;
         f = ct_http_msg_find(msg, id, f))
        if (ct_http_list_has(f->value, token))
            return true;
    return false;
}

bool ct_http_field_is_proxy(const struct ct_http_field *f)
{
    static const struct ct_str proxy = {"proxy", 5};
    /* First letter first: nearly no field starts with a p. */
    if (f->name.len < proxy.len || ct_ascii_lower(f->name.p[0]) != 'p')
        return false;
    if (!ct_str_eq_ci(ct_str_make(f->name.p, proxy.len), proxy))
        return false;
    return f->name.len == proxy.len || f->name.p[proxy.len] == '-';
}

bool ct_http_msg_field_is_hop(const struct ct_http_msg *msg, const struct ct_http_field *f)
{
    unsigned flags = ct_hdr_flags(f->id);
    if (flags & CT_HDRF_HOP)
        return true;
    /* The framing and the authority were decided from these fields; a
     * token naming them does not undo that. The request (or response) goes
     * on framed and addressed as it was parsed, as nginx and HAProxy forward
     * it: they ignore such tokens (a 400 would refuse what they accept). */
    if (flags & CT_HDRF_PINNED)
        return false;
    /* RFC 9110 §7.6.1: every other field named in Connection is hop-by-hop
     * too ("Connection: X-Trace" makes X-Trace hop-by-hop), whatever its name. */
    for (const struct ct_http_field *c = ct_http_msg_find(msg, CT_HDR_CONNECTION, NULL); c;
         c = ct_http_msg_find(msg, CT_HDR_CONNECTION, c)) {
        struct ct_str rest = c->value, tok;
        while (ct_http_list_next(&rest, &tok))
            if (ct_str_eq_ci(tok, f->name))
                return true;
    }
    return false;
}
