/*
 * http/http_cc.c: Cache-Control directives (RFC 9111 §5.2), also used for
 * the targeted fields of RFC 9213 (CDN-Cache-Control, ...).
 *
 *   cache-directive = token [ "=" ( token / quoted-string ) ]
 *
 * Names are case-insensitive. Unknown directives (extensions, §5.2.3) are
 * ignored. Known directives are described by one table below: which flag or
 * value they set, and what to do with a bad or conflicting argument.
 *
 * Invalid and conflicting values. RFC 9111 §4.2.1: "If directives conflict
 * (e.g., both max-age and no-cache are present), the most restrictive
 * directive should be honored. Caches are encouraged to consider responses
 * that have invalid freshness information (e.g., a max-age directive with
 * non-integer content) to be stale." We take the most restrictive reading
 * throughout and mark CT_CC_INVALID so callers can report it:
 *
 *  - delta-seconds (§1.2.2) is 1*DIGIT. A quoted value (max-age="5"), a
 *    fraction (max-age=1.5), a sign or an empty value is invalid. RFC 9111 §5.2
 *    also says recipients "ought to accept both forms" (token and quoted) of
 *    an argument; we deliberately do not for delta-seconds, as the project
 *    asks: such a directive most often comes from a broken generator, and
 *    treating it as stale costs a revalidation, never a wrong hit.
 *  - An invalid max-age, s-maxage, max-stale, stale-while-revalidate or
 *    stale-if-error counts as 0 (the response is stale; no stale serving).
 *    An invalid min-fresh is ignored: it has no finite most-restrictive value.
 *  - The same directive twice with different values keeps the smallest value
 *    (the largest for min-fresh, where larger is stricter).
 *  - Values clamp to 2^31 on overflow (§1.2.2).
 *  - Restrictive flags (no-store, must-revalidate, ...) given an argument
 *    still count; permissive ones (public, immutable) do not.
 *  - no-cache and private with an argument (the field-name list; quoted form
 *    per §5.2.2.4/§5.2.2.7, token form tolerated) set the *_FIELDS flags, not
 *    the unqualified ones; a malformed argument falls back to the unqualified
 *    (stricter) meaning.
 *  - Whitespace around "=" is not in the grammar: the directive is still
 *    recognised, but its value is invalid.
 */
#include "http/http.h"

#define CT_CC_DELTA_MAX ((int64_t)1 << 31)

enum cc_kind {
    CC_FLAG_STRICT, /* restrictive flag; no argument expected */
    CC_FLAG_LAX,    /* permissive flag; an argument voids it */
    CC_FIELDS,      /* flag, or *_FIELDS flag with a field-name list */
    CC_DELTA,       /* delta-seconds, required; smaller is stricter */
    CC_DELTA_OPT,   /* max-stale: delta-seconds optional */
    CC_DELTA_MIN,   /* min-fresh: larger is stricter */
};

#define CC_OFF(m) offsetof(struct ct_cc, m)

/* CC_DIR(name, kind, flag, qualified flag, value offset) */
#define CC_DIR_TABLE(X)                                                                            \
    X("no-store", CC_FLAG_STRICT, CT_CC_NO_STORE, 0, 0)                                            \
    X("no-cache", CC_FIELDS, CT_CC_NO_CACHE, CT_CC_NO_CACHE_FIELDS, 0)                             \
    X("private", CC_FIELDS, CT_CC_PRIVATE, CT_CC_PRIVATE_FIELDS, 0)                                \
    X("public", CC_FLAG_LAX, CT_CC_PUBLIC, 0, 0)                                                   \
    X("must-revalidate", CC_FLAG_STRICT, CT_CC_MUST_REVALIDATE, 0, 0)                              \
    X("proxy-revalidate", CC_FLAG_STRICT, CT_CC_PROXY_REVALIDATE, 0, 0)                            \
    X("no-transform", CC_FLAG_STRICT, CT_CC_NO_TRANSFORM, 0, 0)                                    \
    X("only-if-cached", CC_FLAG_STRICT, CT_CC_ONLY_IF_CACHED, 0, 0)                                \
    X("must-understand", CC_FLAG_STRICT, CT_CC_MUST_UNDERSTAND, 0, 0)                              \
    X("immutable", CC_FLAG_LAX, CT_CC_IMMUTABLE, 0, 0)                                             \
    X("max-age", CC_DELTA, 0, 0, CC_OFF(max_age))                                                  \
    X("s-maxage", CC_DELTA, 0, 0, CC_OFF(s_maxage))                                                \
    X("max-stale", CC_DELTA_OPT, CT_CC_MAX_STALE_ANY, 0, CC_OFF(max_stale))                        \
    X("min-fresh", CC_DELTA_MIN, 0, 0, CC_OFF(min_fresh))                                          \
    X("stale-while-revalidate", CC_DELTA, 0, 0, CC_OFF(stale_while_revalidate))                    \
    X("stale-if-error", CC_DELTA, 0, 0, CC_OFF(stale_if_error))

struct cc_dir {
    struct ct_str name;
    enum cc_kind kind;
    unsigned flag, qflag;
    size_t off;
};

static const struct cc_dir cc_dirs[] = {
#define CC_DIR_ROW(n, k, f, q, o) {{n, sizeof(n) - 1}, k, f, q, o},
    CC_DIR_TABLE(CC_DIR_ROW)
#undef CC_DIR_ROW
};

void ct_cc_init(struct ct_cc *cc)
{
    cc->flags = 0;
    cc->max_age = CT_CC_UNSET;
    cc->s_maxage = CT_CC_UNSET;
    cc->max_stale = CT_CC_UNSET;
    cc->min_fresh = CT_CC_UNSET;
    cc->stale_while_revalidate = CT_CC_UNSET;
    cc->stale_if_error = CT_CC_UNSET;
}

/* quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE, the whole of S. */
static bool is_quoted_string(struct ct_str s)
{
    if (s.len < 2 || s.p[0] != '"' || s.p[s.len - 1] != '"')
        return false;
    for (size_t i = 1; i < s.len - 1; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (c == '\\') {
            if (++i >= s.len - 1)
                return false; /* the escape swallowed the closing quote */
            c = (unsigned char)s.p[i];
            if (!(c == '\t' || (c >= 0x20 && c != 0x7f)))
                return false;
        } else if (c == '"') {
            return false;
        } else if (!(c == '\t' || (c >= 0x20 && c != 0x7f))) {
            return false; /* qdtext: HTAB / SP / VCHAR / obs-text */
        }
    }
    return true;
}

/* delta-seconds: 1*DIGIT, clamped to 2^31. -1 if S is not that. */
static int64_t parse_delta(struct ct_str s)
{
    int64_t v = 0;
    if (s.len == 0)
        return -1;
    for (size_t i = 0; i < s.len; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return -1;
        if (v < CT_CC_DELTA_MAX)
            v = v * 10 + (s.p[i] - '0');
    }
    return v < CT_CC_DELTA_MAX ? v : CT_CC_DELTA_MAX;
}

static void set_value(struct ct_cc *cc, int64_t *slot, int64_t v, bool larger_is_stricter)
{
    if (*slot == CT_CC_UNSET) {
        *slot = v;
    } else if (*slot != v) {
        cc->flags |= CT_CC_INVALID; /* conflicting duplicate: keep the stricter */
        *slot = larger_is_stricter ? CT_MAX(*slot, v) : CT_MIN(*slot, v);
    }
}

/* Apply directive D with argument ARG (has_arg: "=" was present; arg_ok: the
 * argument is a token or a quoted-string with no stray whitespace). Returns
 * false if the directive's argument was unusable. */
static bool apply(struct ct_cc *cc, const struct cc_dir *d, bool has_arg, bool arg_ok,
                  struct ct_str arg)
{
    int64_t *slot = d->off ? (int64_t *)((char *)cc + d->off) : NULL;
    int64_t v;
    switch (d->kind) {
    case CC_FLAG_STRICT: cc->flags |= d->flag; return !has_arg;
    case CC_FLAG_LAX:
        if (!has_arg)
            cc->flags |= d->flag;
        return !has_arg;
    case CC_FIELDS: cc->flags |= has_arg && arg_ok ? d->qflag : d->flag; return !has_arg || arg_ok;
    case CC_DELTA_OPT:
        if (!has_arg) {
            cc->flags |= d->flag;
            return true;
        }
        /* fall through */
    case CC_DELTA:
        v = has_arg && arg_ok ? parse_delta(arg) : -1;
        set_value(cc, slot, v < 0 ? 0 : v, false);
        return v >= 0;
    case CC_DELTA_MIN:
        v = has_arg && arg_ok ? parse_delta(arg) : -1;
        if (v >= 0)
            set_value(cc, slot, v, true);
        return v >= 0;
    }
    return false;
}

/* One list element: name [ "=" arg ]. Returns false if malformed. */
static bool parse_directive(struct ct_cc *cc, struct ct_str e)
{
    struct ct_str name = e, arg = CT_STR_NULL;
    bool has_arg = false, arg_ok = true;
    const char *eq = memchr(e.p, '=', e.len);
    if (eq) {
        has_arg = true;
        name = ct_str_make(e.p, (size_t)(eq - e.p));
        arg = ct_str_make(eq + 1, e.len - name.len - 1);
        struct ct_str tn = ct_str_trim_ows(name), ta = ct_str_trim_ows(arg);
        arg_ok = tn.len == name.len && ta.len == arg.len; /* no BWS in the grammar */
        name = tn;
        arg = ta;
        arg_ok = arg_ok && (ct_http_is_token(arg) || is_quoted_string(arg));
    }
    if (!ct_http_is_token(name))
        return false;
    for (size_t i = 0; i < CT_ARRAY_LEN(cc_dirs); i++) {
        if (ct_str_eq_ci(name, cc_dirs[i].name)) {
            if (apply(cc, &cc_dirs[i], has_arg, arg_ok, arg))
                return true;
            cc->flags |= CT_CC_INVALID;
            return false;
        }
    }
    return !has_arg || arg_ok; /* an extension: ignored, but it must parse */
}

int ct_cc_parse(struct ct_cc *cc, struct ct_str value)
{
    struct ct_str e;
    int rc = CT_OK;
    while (ct_http_list_next(&value, &e))
        if (!parse_directive(cc, e))
            rc = CT_EPROTO;
    return rc;
}

void ct_cc_from_msg(struct ct_cc *cc, const struct ct_http_msg *msg, enum ct_hdr_id id)
{
    /* Starts from ct_cc_init(): the directives of every line of ID, in order
     * (several lines are one list, RFC 9110 §5.3). */
    ct_cc_init(cc);
    /* ct_http_msg_find, not a scan: its set of present ids answers at once
     * for a message without the field, as most requests are. */
    for (const struct ct_http_field *f = NULL; (f = ct_http_msg_find(msg, id, f)) != NULL;)
        (void)ct_cc_parse(cc, f->value);
}
