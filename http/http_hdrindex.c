/*
 * http/http_hdrindex.c: build and read the field index of a stored head (see
 * http_hdrindex.h for the layout and why).
 *
 * The build makes two passes over the block: memchr() counts the lines, so
 * the entries can be written in place and the copied names right after them,
 * then one pass splits each line and looks its name up in the header table
 * (the one hash lookup per field that the index exists to save later). When
 * OUT is too small the second pass still runs to the end, writing nothing,
 * so the caller learns the length it needs in one call.
 */
#include "http/http_hdrindex.h"

#define HX_MAGIC 0x31786863u /* "chx1" */

enum where { W_TABLE, W_BLOCK, W_NAMES };

struct head {
    uint32_t magic;
    uint16_t n;
    uint16_t status;
    uint32_t block_len;
    uint32_t ix_len;
};

struct ent {
    uint32_t value_off, value_len; /* in the block */
    uint32_t name_off;             /* W_BLOCK: in the block; W_NAMES: in the index */
    uint16_t name_len;
    uint8_t id;                    /* enum ct_hdr_id */
    uint8_t where;                 /* enum where */
};

_Static_assert(sizeof(struct head) == CT_HDRINDEX_HEAD_SIZE, "index header layout");
_Static_assert(sizeof(struct ent) == CT_HDRINDEX_ENTRY_SIZE, "index entry layout");
_Static_assert(CT_HDR__COUNT <= 256, "ids are stored in one byte");

/* "HTTP/1.1 200 OK": three digits after the first space, then a space or
 * the end (the reason phrase may be empty, RFC 9112 §4). */
static int parse_status(struct ct_str line, unsigned *status)
{
    const char *sp = memchr(line.p, ' ', line.len);
    if (line.len < 5 || memcmp(line.p, "HTTP/", 5) != 0 || sp == NULL)
        return CT_EPROTO;
    size_t i = (size_t)(sp - line.p) + 1;
    if (line.len - i < 3 || (line.len - i > 3 && line.p[i + 3] != ' '))
        return CT_EPROTO;
    unsigned v = 0;
    for (size_t k = i; k < i + 3; k++) {
        if (line.p[k] < '0' || line.p[k] > '9')
            return CT_EPROTO;
        v = v * 10 + (unsigned)(line.p[k] - '0');
    }
    *status = v;
    return CT_OK;
}

/* Split LINE (no CRLF) at its colon into a name and an OWS-trimmed value;
 * *UPPER: the name has an upper-case letter. One pass over the name. */
static int split_field(struct ct_str line, struct ct_str *name, struct ct_str *value, bool *upper)
{
    const char *colon = memchr(line.p, ':', line.len);
    if (colon == NULL || colon == line.p)
        return CT_EPROTO;
    *name = ct_str_make(line.p, (size_t)(colon - line.p));
    /* One table load per byte: bit 1 upper case, bit 2 refused (RFC 9112
     * §5.1: no whitespace before the colon, and no line ends). */
    static const unsigned char cls[256] = {
        ['A' ... 'Z'] = 1, [' '] = 2, ['\t'] = 2, ['\r'] = 2, ['\n'] = 2};
    unsigned acc = 0;
    for (size_t i = 0; i < name->len; i++)
        acc |= cls[(unsigned char)name->p[i]];
    if (acc & 2)
        return CT_EPROTO;
    *upper = acc & 1;
    const char *v = colon + 1, *end = line.p + line.len;
    *value = ct_str_trim_ows(ct_str_make(v, (size_t)(end - v)));
    return CT_OK;
}

/* The next line of BLOCK at *POS, without its CRLF; false at the end. A line
 * that does not end in CRLF (bare LF, or the block's last bytes) is an error
 * reported through *ERR. */
static bool next_line(struct ct_str block, size_t *pos, struct ct_str *line, int *err)
{
    if (*pos >= block.len)
        return false;
    const char *p = block.p + *pos;
    const char *lf = memchr(p, '\n', block.len - *pos);
    if (lf == NULL || lf == p || lf[-1] != '\r') {
        *err = CT_EPROTO;
        return false;
    }
    *line = ct_str_make(p, (size_t)(lf - 1 - p));
    *pos = (size_t)(lf + 1 - block.p);
    return true;
}

int ct_hdrindex_build(struct ct_str block, void *out, size_t cap, size_t *len)
{
    *len = 0;
    if (block.len > UINT32_MAX)
        return CT_ELIMIT;
    /* Pass 1: the number of lines, for where the names go. */
    size_t lines = 0;
    for (const char *p = block.p, *end = block.p + block.len;
         p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        lines++;
    if (lines == 0)
        return CT_EPROTO;
    if (lines - 1 > UINT16_MAX)
        return CT_ELIMIT;
    size_t n = lines - 1;
    unsigned char *o = out;
    size_t need = CT_HDRINDEX_HEAD_SIZE + n * CT_HDRINDEX_ENTRY_SIZE;

    /* Pass 2: the status line, then one entry per field. */
    size_t pos = 0;
    int err = CT_OK;
    struct ct_str line;
    unsigned status = 0;
    if (!next_line(block, &pos, &line, &err) || parse_status(line, &status) != CT_OK)
        return CT_EPROTO;
    for (size_t i = 0; i < n; i++) {
        struct ct_str name, value;
        bool upper;
        if (!next_line(block, &pos, &line, &err) ||
            split_field(line, &name, &value, &upper) != CT_OK)
            return CT_EPROTO;
        if (name.len > UINT16_MAX)
            return CT_ELIMIT;
        enum ct_hdr_id id = ct_hdr_lookup(name);
        struct ent e = {
            .value_off = (uint32_t)(value.p - block.p),
            .value_len = (uint32_t)value.len,
            .name_off = (uint32_t)(name.p - block.p),
            .name_len = (uint16_t)name.len,
            .id = (uint8_t)id,
            .where = id != CT_HDR_UNKNOWN ? W_TABLE : upper ? W_NAMES : W_BLOCK,
        };
        if (e.where == W_NAMES) {
            if (need + name.len > UINT32_MAX)
                return CT_ELIMIT;
            e.name_off = (uint32_t)need;
            if (need + name.len <= cap)
                for (size_t k = 0; k < name.len; k++)
                    o[need + k] = (unsigned char)ct_ascii_lower(name.p[k]);
            need += name.len;
        }
        size_t at = CT_HDRINDEX_HEAD_SIZE + i * CT_HDRINDEX_ENTRY_SIZE;
        if (at + sizeof(e) <= cap)
            memcpy(o + at, &e, sizeof(e));
    }
    if (err != CT_OK || pos != block.len)
        return CT_EPROTO;
    *len = need;
    if (need > cap)
        return CT_ELIMIT;
    struct head h = {HX_MAGIC, (uint16_t)n, (uint16_t)status, (uint32_t)block.len,
                     (uint32_t)need};
    memcpy(o, &h, sizeof(h));
    return CT_OK;
}

int ct_hdrindex_open(struct ct_hdrindex *hx, const void *ix, size_t ix_len, struct ct_str block)
{
    struct head h;
    if (ix == NULL || ix_len < sizeof(h))
        return CT_EPROTO;
    memcpy(&h, ix, sizeof(h));
    if (h.magic != HX_MAGIC || h.ix_len != ix_len || h.block_len != block.len ||
        ix_len < CT_HDRINDEX_HEAD_SIZE + (size_t)h.n * CT_HDRINDEX_ENTRY_SIZE)
        return CT_EPROTO;
    *hx = (struct ct_hdrindex){ix, block.p, h.block_len, h.n, h.status};
    return CT_OK;
}

static struct ent entry(const struct ct_hdrindex *hx, unsigned i)
{
    CT_ASSERT(i < hx->_n);
    struct ent e;
    memcpy(&e, hx->_ix + CT_HDRINDEX_HEAD_SIZE + (size_t)i * CT_HDRINDEX_ENTRY_SIZE, sizeof(e));
    return e;
}

struct ct_hdrindex_field ct_hdrindex_field(const struct ct_hdrindex *hx, unsigned i)
{
    struct ent e = entry(hx, i);
    /* Our own bytes: a bad offset is a bug in build or in the caller's
     * pairing of block and index, not input to handle. */
    CT_ASSERT((uint64_t)e.value_off + e.value_len <= hx->_block_len);
    struct ct_hdrindex_field f = {.value = ct_str_make(hx->_block + e.value_off, e.value_len),
                                  .id = (enum ct_hdr_id)e.id};
    switch (e.where) {
    case W_TABLE: f.name = ct_hdr_lname(f.id); break;
    case W_BLOCK:
        CT_ASSERT((uint64_t)e.name_off + e.name_len <= hx->_block_len);
        f.name = ct_str_make(hx->_block + e.name_off, e.name_len);
        break;
    case W_NAMES: f.name = ct_str_make((const char *)hx->_ix + e.name_off, e.name_len); break;
    default: CT_WRONG("index entry with an unknown name place");
    }
    return f;
}

struct ct_str ct_hdrindex_wire_name(const struct ct_hdrindex *hx, unsigned i)
{
    struct ent e = entry(hx, i);
    if (e.where != W_NAMES) { /* name_off is the block's */
        CT_ASSERT((uint64_t)e.name_off + e.name_len <= hx->_block_len);
        return ct_str_make(hx->_block + e.name_off, e.name_len);
    }
    /* a copy in "names": the block's spelling starts its line, "Name:",
     * the line the value is on (values hold no LF: build checked) */
    CT_ASSERT((uint64_t)e.value_off <= hx->_block_len && e.name_len < e.value_off);
    const char *v = hx->_block + e.value_off, *line = v;
    while (line > hx->_block && line[-1] != '\n')
        line--;
    CT_ASSERT(line + e.name_len < v && line[e.name_len] == ':');
    return ct_str_make(line, e.name_len);
}

int ct_hdrindex_find(const struct ct_hdrindex *hx, enum ct_hdr_id id, unsigned from)
{
    for (unsigned i = from; i < hx->_n; i++) {
        const unsigned char *p = hx->_ix + CT_HDRINDEX_HEAD_SIZE + (size_t)i * CT_HDRINDEX_ENTRY_SIZE;
        if (p[offsetof(struct ent, id)] == (unsigned char)id)
            return (int)i;
    }
    return -1;
}
