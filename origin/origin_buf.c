/*
 * origin/origin_buf.c: the deterministic byte pattern every generated body is
 * cut from. (Response heads and JSON bodies go into common/buf.h buffers,
 * which a connection keeps between requests.)
 */

#include "origin/origin_int.h"

/* ---- the pattern ----------------------------------------------------- */

static char pattern[CT_OPATTERN_SPAN + CT_OPATTERN_PERIOD];

void ct_opattern_init(void)
{
    static const char line[] = CT_OPATTERN_LINE;
    _Static_assert(sizeof(line) - 1 == CT_OPATTERN_PERIOD, "pattern period");
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = line[i % CT_OPATTERN_PERIOD];
}

const char *ct_opattern_at(uint64_t off)
{
    return pattern + off % CT_OPATTERN_PERIOD;
}
