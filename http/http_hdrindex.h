/*
 * http/http_hdrindex.h: the field index of a stored response head (issue 13,
 * docs/request-core.md).
 *
 * A cached object keeps its head as an HTTP/1 block, which is what the H1 hit
 * path writes as is:
 *
 *     "HTTP/1.1 200 OK\r\n" ("Name: value\r\n")*      (no blank line)
 *
 * HTTP/2 needs (name, value) pairs with lower-case names instead (RFC 9113
 * §8.2.1). Parsing the block on every h2 hit would undo the point of a
 * cache, so the store path builds this index ONCE, appends it to the object
 * next to the block, and every later reader opens it in O(1) and reads
 * field i as two views, with no allocation and no parsing: nghttp2_nv can
 * point at them with NGHTTP2_NV_FLAG_NO_COPY_NAME | _VALUE.
 *
 * Layout (native byte order, in-memory only; nothing here is ever read from
 * a peer or a file, so the reader trusts it and asserts its invariants):
 *
 *     header  16 bytes   magic, field count, status, block length, index length
 *     entries 16 bytes   per field: value offset+length in the block, name
 *                        offset+length, header-table id, where the name is
 *     names   n bytes    lower-cased copies of the names that are neither in
 *                        the header table nor lower case in the block
 *
 * Where a field's lower-case name lives: a table name (id != UNKNOWN) is
 * ct_hdr_lname(id), static memory; an unknown name already in lower case is
 * its bytes in the block; any other unknown name is its copy in "names".
 * Every view is valid as long as the block and the index are (the object's
 * memory), or forever for table names.
 *
 * Pure: no allocation, no locks, any thread.
 */
#ifndef CT_HTTP_HDRINDEX_H
#define CT_HTTP_HDRINDEX_H

#include "common/common.h"
#include "http/http.h"

/* Bytes of the fixed part, and per field (before the copied names). */
#define CT_HDRINDEX_HEAD_SIZE 16
#define CT_HDRINDEX_ENTRY_SIZE 16

/* Build the index of BLOCK into OUT (CAP bytes; any alignment). Returns
 *   CT_OK      written; *LEN = its length
 *   CT_ELIMIT  *LEN > CAP: OUT is too small, call again with *LEN bytes; or
 *              *LEN == 0: BLOCK exceeds the format (4 GiB, 65535 fields,
 *              names of 65535 bytes) and cannot be indexed
 *   CT_EPROTO  BLOCK is not a status line and "Name: value" CRLF lines (an
 *              empty name, a line without ':' or without CRLF, a status that
 *              is not three digits); *LEN = 0
 * Values are OWS-trimmed as the parser trims them (RFC 9110 §5.5). */
int ct_hdrindex_build(struct ct_str block, void *out, size_t cap, size_t *len);

/* A reader's view: plain values on the reader's stack, pointing into the
 * index and the block. Fields are private. */
struct ct_hdrindex {
    const unsigned char *_ix;
    const char *_block;
    uint32_t _block_len;
    unsigned _n;
    unsigned _status;
};

/* Open the index IX (IX_LEN bytes, as ct_hdrindex_build wrote it) of BLOCK.
 * O(1): checks the header (magic, lengths) only. CT_EPROTO if IX is not an
 * index of a block of BLOCK's length. */
int ct_hdrindex_open(struct ct_hdrindex *hx, const void *ix, size_t ix_len, struct ct_str block);

static inline unsigned ct_hdrindex_count(const struct ct_hdrindex *hx)
{
    return hx->_n;
}
/* The status code of the block's status line (h2 ":status"). */
static inline unsigned ct_hdrindex_status(const struct ct_hdrindex *hx)
{
    return hx->_status;
}

struct ct_hdrindex_field {
    struct ct_str name;  /* lower case (see above for where it lives) */
    struct ct_str value; /* in the block, OWS trimmed, may be empty */
    enum ct_hdr_id id;   /* CT_HDR_UNKNOWN if not in the header table */
};

/* Field I (0 <= I < count), in block order. */
struct ct_hdrindex_field ct_hdrindex_field(const struct ct_hdrindex *hx, unsigned i);

/* Field I's name as the block spells it (HTTP/1.1 keeps the origin's case;
 * ct_hdrindex_field gives HTTP/2's lower case): a view into the block. */
struct ct_str ct_hdrindex_wire_name(const struct ct_hdrindex *hx, unsigned i);

/* The position of the first field with ID at or after FROM, or -1. Walk all
 * of them with: for (int i = find(hx, id, 0); i >= 0; i = find(hx, id, i + 1)). */
int ct_hdrindex_find(const struct ct_hdrindex *hx, enum ct_hdr_id id, unsigned from);

#endif /* CT_HTTP_HDRINDEX_H */
