/*
 * proxy/route/route_tpl.c: texts with variables ("https://$host$uri",
 * "set X-Client: $client"): compiled at load into pieces, expanded per
 * request into the caller's buffer, never allocating.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/route/route_int.h"

struct piece {
    int var; /* enum ct_conf_var, or -1 for the literal */
    struct ct_str lit;
};

struct ct_route_tpl {
    size_t n;
    struct piece p[];
};

struct ct_route_tpl *ct_route_tpl_compile(const char *text)
{
    size_t max = 1;
    for (const char *s = text; *s; s++)
        max += *s == '$' ? 2 : 0;
    struct ct_route_tpl *t = ct_xcalloc(1, sizeof(*t) + max * sizeof(struct piece));
    const char *lit = text;
    for (const char *s = text;;) {
        const char *d = strchr(s, '$');
        size_t len = 0;
        int var = d ? ct_conf_var_parse(d, &len) : -1;
        if (d && var < 0) { /* not a variable (conf/ refuses those): literal */
            s = d + 1;
            continue;
        }
        const char *end = d ? d : s + strlen(s);
        if (end > lit)
            t->p[t->n++] = (struct piece){-1, ct_str_make(lit, (size_t)(end - lit))};
        if (!d)
            break;
        if (var == CT_CONF_VAR_DOLLAR)
            t->p[t->n++] = (struct piece){-1, CT_STR("$")};
        else
            t->p[t->n++] = (struct piece){var, CT_STR_NULL};
        s = lit = d + len;
    }
    return t;
}

void ct_route_tpl_free(struct ct_route_tpl *t)
{
    free(t);
}

size_t ct_route_expand(const struct ct_route_tpl *t, const struct ct_route_vars *vars, char *out,
                       size_t cap)
{
    size_t len = 0;
    for (size_t i = 0; i < t->n; i++) {
        struct ct_str s = t->p[i].var < 0 ? t->p[i].lit : vars->v[t->p[i].var];
        if (len < cap && s.len)
            memcpy(out + len, s.p, CT_MIN(s.len, cap - len));
        len += s.len;
    }
    return len;
}
