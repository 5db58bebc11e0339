/*
 * tests/fuzz/fuzz_cache_persist.c: libFuzzer target for the snapshot loader
 * (ct_cache_persist_load, cache/cache_persist.c), which reads whatever the
 * disk holds at start: a file cut by a crash, flipped by the disk, written
 * by another build, or not ours at all.
 *
 * Input: byte 0 = flags (bit 0: recompute every record's checksum before
 * loading, so mutations reach the record decoder instead of stopping at the
 * checksum; bit 1: put a valid header first, so they are not spent on it;
 * bit 2: a store of 64 KiB, where a load evicts, instead of 8 MiB), the rest
 * = the snapshot's bytes.
 *
 * Checks (a failure aborts):
 *   - every record met is counted once: loaded, expired, duplicate, no room
 *     or refused; a refused one has a reason; the store's restored and
 *     restore_refused counters say the same; its bytes stay within the cap;
 *   - what loaded saves again and loads again whole into a fresh store: no
 *     record refused, as many loaded as were saved (the writer and the
 *     reader agree on every object the reader accepts);
 *   - freed, every object and reference goes (ASan, LSan).
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cache/cache.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_NOW 1717243200.0

struct mem {
    unsigned char *p;
    size_t len, cap;
};

static int mem_write(void *arg, const void *p, size_t n)
{
    struct mem *m = arg;
    if (m->len + n > m->cap) {
        m->cap = (m->len + n) * 2;
        m->p = realloc(m->p, m->cap);
        FUZZ_CHECK(m->p != NULL);
    }
    memcpy(m->p + m->len, p, n);
    m->len += n;
    return CT_OK;
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Each record's crc32 over its length field and payload, as the writer
 * computes it (cache_persist.c), up to the first length past the end. */
static void fix_checksums(unsigned char *p, size_t len)
{
    size_t off = CT_CACHE_PERSIST_HDR_LEN;
    while (len >= 8 && off <= len - 8) {
        uint32_t n = rd32(p + off);
        if (n > len - off - 8)
            break;
        uint32_t c = (uint32_t)crc32(crc32(0, p + off, 4), p + off + 8, n);
        for (int i = 0; i < 4; i++)
            p[off + 4 + i] = (unsigned char)(c >> (8 * i));
        off += 8 + (size_t)n;
    }
}

static struct ct_cache *store(size_t max_bytes)
{
    struct ct_cache_config cfg = {
        .max_bytes = max_bytes, .max_object_size = CT_MIN(max_bytes, (size_t)1 << 16), .shards = 4};
    struct ct_cache *c = ct_cache_new(&cfg);
    FUZZ_CHECK(c != NULL);
    return c;
}

static void check_report(struct ct_cache *c, const struct ct_cache_persist_report *rep)
{
    uint64_t sum = rep->refused;
    for (int i = 0; i < CT_CACHE_PERSIST__FATES; i++)
        sum += rep->fates[i];
    FUZZ_CHECK(sum == rep->records);
    FUZZ_CHECK(rep->refused == 0 || rep->why[0] != '\0');
    FUZZ_CHECK(!rep->header_refused || (rep->records == 0 && rep->why[0] != '\0'));
    FUZZ_CHECK(memchr(rep->why, '\0', sizeof(rep->why)) != NULL);
    struct ct_cache_stats st;
    ct_cache_stats(c, &st);
    FUZZ_CHECK(st.restored == rep->fates[CT_CACHE_PERSIST_LOADED]);
    FUZZ_CHECK(st.restore_refused == rep->refused);
    FUZZ_CHECK(st.bytes <= st.max_bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    size_t max_bytes = (flags & 4) ? 64u << 10 : 8u << 20;
    size_t hdr = (flags & 2) ? CT_CACHE_PERSIST_HDR_LEN : 0;
    size_t len = hdr + size - 1;
    unsigned char *buf = malloc(len ? len : 1); /* exactly LEN: ASan sees a read past it */
    FUZZ_CHECK(buf != NULL);
    if (hdr)
        ct_cache_persist_header(buf, FZ_NOW - 60, "fuzz");
    memcpy(buf + hdr, data + 1, size - 1);
    if (flags & 1)
        fix_checksums(buf, len);

    struct ct_cache *c = store(max_bytes);
    struct ct_cache_persist_report rep;
    ct_cache_persist_load(c, buf, len, FZ_NOW, &rep);
    check_report(c, &rep);

    /* what was accepted round-trips */
    struct mem m = {0};
    struct ct_cache_persist_counts n;
    FUZZ_CHECK(ct_cache_persist_save(c, FZ_NOW, "fuzz", mem_write, &m, &n) == CT_OK);
    FUZZ_CHECK(n.file_bytes == m.len);
    struct ct_cache *d = store(8u << 20);
    struct ct_cache_persist_report again;
    ct_cache_persist_load(d, m.p, m.len, FZ_NOW, &again);
    check_report(d, &again);
    if (again.header_refused || again.refused)
        fprintf(stderr, "the round trip refused: %s\n", again.why);
    FUZZ_CHECK(!again.header_refused && again.refused == 0);
    FUZZ_CHECK(again.records == n.objects);
    FUZZ_CHECK(again.fates[CT_CACHE_PERSIST_LOADED] == n.objects);

    ct_cache_free(&c);
    ct_cache_free(&d);
    free(m.p);
    free(buf);
    return 0;
}
