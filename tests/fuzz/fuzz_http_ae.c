/* tests/fuzz/fuzz_http_ae.c: libFuzzer target for Accept-Encoding
 * negotiation (http/http_ae.h).
 *
 * Input: the first byte picks the server's order (a permutation of the four
 * codings, some left out); the rest is field lines split at '\n'. Checks:
 * - the class is offered, or NONE only when identity is refused;
 * - the class is acceptable to the client, and no offered coding weighs more
 *   (ct_ae_accepts agrees with ct_ae_choose);
 * - the lines in reverse order, and all of them joined into one line with
 *   commas, give the same class (RFC 9110 §5.3: lines combine into one list;
 *   a coding named twice keeps its lowest weight, whatever the order).
 */
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "http/http_ae.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINES 64

static void make_pref(uint8_t b, struct ct_ae_pref *pref)
{
    static const uint8_t perms[][4] = {
        {CT_CODING_ZSTD, CT_CODING_BR, CT_CODING_GZIP, CT_CODING_IDENTITY},
        {CT_CODING_GZIP, CT_CODING_BR, CT_CODING_ZSTD, CT_CODING_IDENTITY},
        {CT_CODING_IDENTITY, CT_CODING_GZIP, CT_CODING_BR, CT_CODING_ZSTD},
        {CT_CODING_BR, CT_CODING_IDENTITY, CT_CODING_ZSTD, CT_CODING_GZIP},
    };
    const uint8_t *p = perms[b & 3];
    unsigned n = 1 + ((b >> 2) & 3); /* 1..4 of them */
    pref->n = 0;
    for (unsigned i = 0; i < n; i++)
        FUZZ_CHECK(ct_ae_pref_add(pref, (enum ct_coding)p[i]) == CT_OK);
}

static bool offered(const struct ct_ae_pref *pref, enum ct_coding c)
{
    if (c == CT_CODING_IDENTITY)
        return true;
    for (unsigned i = 0; i < pref->n; i++)
        if (pref->order[i] == (uint8_t)c)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct ct_ae_pref pref;
    make_pref(data[0], &pref);
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    struct ct_str lines[MAX_LINES];
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= len && n < MAX_LINES; i++)
        if (i == len || text[i] == '\n') {
            lines[n++] = ct_str_make(text + start, i - start);
            start = i + 1;
        }

    struct ct_ae fwd, rev, joined;
    ct_ae_init(&fwd);
    ct_ae_init(&rev);
    ct_ae_init(&joined);
    char *one = malloc(len + n + 1);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        ct_ae_add(&fwd, lines[i]);
        ct_ae_add(&rev, lines[n - 1 - i]);
        memcpy(one + at, lines[i].p, lines[i].len);
        at += lines[i].len;
        one[at++] = ',';
    }
    ct_ae_add(&joined, ct_str_make(one, at));

    enum ct_coding c = ct_ae_choose(&fwd, &pref);
    if (c == CT_CODING_NONE) {
        FUZZ_CHECK(!ct_ae_accepts(&fwd, CT_CODING_IDENTITY));
        for (int k = 0; k < CT_CODING__COUNT; k++)
            FUZZ_CHECK(!offered(&pref, (enum ct_coding)k) ||
                       !ct_ae_accepts(&fwd, (enum ct_coding)k));
    } else {
        FUZZ_CHECK(c >= 0 && c < CT_CODING__COUNT);
        FUZZ_CHECK(offered(&pref, c));
        FUZZ_CHECK(ct_ae_accepts(&fwd, c));
    }
    FUZZ_CHECK(ct_ae_choose(&rev, &pref) == c);
    /* a line may end inside a quoted string, which would swallow the commas
     * joining it to the next: only compare when no line has a quote */
    if (memchr(text, '"', len) == NULL)
        FUZZ_CHECK(ct_ae_choose(&joined, &pref) == c);
    free(one);
    return 0;
}
