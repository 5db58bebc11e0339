/*
 * http/http_ae.c: Accept-Encoding to one coding class, Content-Encoding to
 * one coding (the rules are in http_ae.h).
 *
 * Weights are kept in thousandths (qvalue has three decimals at most), and
 * ranked doubled so that an identity nobody named (acceptable by default,
 * RFC 9110 §12.5.3) sits at 1, below q=0.001 (2) and above a refusal (0).
 */
#include "http/http_ae.h"
#include "http/http.h"

static const char *const coding_names[CT_CODING__COUNT] = {
#define CT_CODING_NAME(id, name) name,
    CT_CODING_TABLE(CT_CODING_NAME)
#undef CT_CODING_NAME
};

const char *ct_coding_name(enum ct_coding c)
{
    if ((int)c < 0 || c >= CT_CODING__COUNT)
        return NULL;
    return coding_names[c];
}

enum ct_coding ct_coding_lookup(struct ct_str name)
{
    for (int c = 0; c < CT_CODING__COUNT; c++)
        if (ct_str_eq_ci(name, ct_str_c(coding_names[c])))
            return (enum ct_coding)c;
    if (ct_str_eq_ci(name, CT_STR("x-gzip"))) /* RFC 9110 §8.4.1.3 */
        return CT_CODING_GZIP;
    return CT_CODING_OTHER;
}

void ct_ae_pref_default(struct ct_ae_pref *pref)
{
    static const uint8_t order[] = {CT_CODING_ZSTD, CT_CODING_BR, CT_CODING_GZIP,
                                    CT_CODING_IDENTITY};
    pref->n = (uint8_t)CT_ARRAY_LEN(order);
    memcpy(pref->order, order, sizeof(order));
}

int ct_ae_pref_add(struct ct_ae_pref *pref, enum ct_coding c)
{
    if ((int)c < 0 || c >= CT_CODING__COUNT)
        return CT_ECONF;
    for (unsigned i = 0; i < pref->n; i++)
        if (pref->order[i] == (uint8_t)c)
            return CT_ECONF;
    CT_ASSERT(pref->n < CT_CODING__COUNT);
    pref->order[pref->n++] = (uint8_t)c;
    return CT_OK;
}

void ct_ae_init(struct ct_ae *ae)
{
    ae->present = false;
    for (int c = 0; c < CT_CODING__COUNT; c++)
        ae->q[c] = -1;
    ae->star = -1;
}

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), RFC 9110
 * §12.4.2, into thousandths; -1 if S is not one. */
static int parse_qvalue(struct ct_str s)
{
    if (s.len == 0 || s.len > 5 || (s.p[0] != '0' && s.p[0] != '1'))
        return -1;
    int q = (s.p[0] - '0') * 1000;
    if (s.len == 1)
        return q;
    if (s.p[1] != '.')
        return -1;
    int scale = 100;
    for (size_t i = 2; i < s.len; i++, scale /= 10) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return -1;
        q += (s.p[i] - '0') * scale;
    }
    return q > 1000 ? -1 : q;
}

/* One list element: `coding *( OWS ";" OWS "q=" qvalue )` with exactly zero
 * or one weight. Returns false if malformed; else *NAME and *Q (1000 when
 * no weight). */
static bool parse_element(struct ct_str e, struct ct_str *name, int *q)
{
    size_t i = 0;
    while (i < e.len && e.p[i] != ';')
        i++;
    *name = ct_str_trim_ows(ct_str_make(e.p, i));
    if (!ct_http_is_token(*name))
        return false;
    *q = 1000;
    if (i == e.len)
        return true;
    /* one parameter, and it must be the weight: the grammar has no other
     * (§12.5.3); "gzip;q=0;q=1" and "gzip;level=9" are malformed, not guessed */
    struct ct_str param = ct_str_trim_ows(ct_str_make(e.p + i + 1, e.len - i - 1));
    if (param.len < 2 || (param.p[0] != 'q' && param.p[0] != 'Q') || param.p[1] != '=')
        return false;
    *q = parse_qvalue(ct_str_make(param.p + 2, param.len - 2));
    return *q >= 0;
}

static void keep_lowest(int16_t *slot, int q)
{
    if (*slot < 0 || q < *slot)
        *slot = (int16_t)q;
}

unsigned ct_ae_add(struct ct_ae *ae, struct ct_str value)
{
    unsigned bad = 0;
    struct ct_str e, name;
    int q;
    ae->present = true;
    while (ct_http_list_next(&value, &e)) {
        if (!parse_element(e, &name, &q)) {
            bad++;
            continue;
        }
        if (name.len == 1 && name.p[0] == '*') {
            keep_lowest(&ae->star, q);
            continue;
        }
        enum ct_coding c = ct_coding_lookup(name);
        if (c >= 0)
            keep_lowest(&ae->q[c], q);
        /* codings we do not make (deflate, compress, ...) need no slot:
         * they only matter as "named, so not covered by *", and we never
         * choose them */
    }
    return bad;
}

void ct_ae_from_msg(struct ct_ae *ae, const struct ct_http_msg *msg)
{
    const struct ct_http_field *f = NULL;
    while ((f = ct_http_msg_find(msg, CT_HDR_ACCEPT_ENCODING, f)) != NULL)
        ct_ae_add(ae, f->value);
}

/* Doubled weight of C: 0 refused, 1 identity by default, else 2*q. */
static int rank(const struct ct_ae *ae, enum ct_coding c)
{
    if (!ae->present)
        return c == CT_CODING_IDENTITY ? 1 : 0;
    if (ae->q[c] >= 0)
        return ae->q[c] * 2;
    if (ae->star >= 0)
        return ae->star * 2;
    return c == CT_CODING_IDENTITY ? 1 : 0;
}

bool ct_ae_accepts(const struct ct_ae *ae, enum ct_coding c)
{
    return (int)c >= 0 && c < CT_CODING__COUNT && rank(ae, c) > 0;
}

enum ct_coding ct_ae_choose(const struct ct_ae *ae, const struct ct_ae_pref *pref)
{
    enum ct_coding best = CT_CODING_NONE;
    int best_rank = 0;
    bool identity_listed = false;
    for (unsigned i = 0; i < pref->n; i++) {
        enum ct_coding c = (enum ct_coding)pref->order[i];
        identity_listed |= c == CT_CODING_IDENTITY;
        int r = rank(ae, c);
        if (r > best_rank) { /* strictly: equal weights keep the server's order */
            best = c;
            best_rank = r;
        }
    }
    if (!identity_listed && rank(ae, CT_CODING_IDENTITY) > best_rank)
        best = CT_CODING_IDENTITY;
    return best;
}

enum ct_coding ct_coding_of_msg(const struct ct_http_msg *msg)
{
    enum ct_coding found = CT_CODING_IDENTITY;
    const struct ct_http_field *f = NULL;
    while ((f = ct_http_msg_find(msg, CT_HDR_CONTENT_ENCODING, f)) != NULL) {
        struct ct_str rest = f->value, e;
        while (ct_http_list_next(&rest, &e)) {
            enum ct_coding c = ct_coding_lookup(e);
            if (c == CT_CODING_IDENTITY)
                continue;
            if (c < 0 || found != CT_CODING_IDENTITY)
                return CT_CODING_OTHER; /* unknown, or a second coding stacked */
            found = c;
        }
    }
    return found;
}
