/*
 * conf/conf_dump.c: `cachet -T`: the effective configuration, every setting
 * with its value (defaults filled in, overrides applied), in the file syntax.
 * A generic walk over the schema table, so it can't forget a setting, and
 * its output loads back to an identical configuration (unit-tested).
 */
#include <stdlib.h>

#include "conf/conf_int.h"

/* A libconfig string literal: escape what its scanner would interpret. */
static void put_str(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", fp);
        else if (c == '\t')
            fputs("\\t", fp);
        else if (c == '\r')
            fputs("\\r", fp);
        else if (c == '\f')
            fputs("\\f", fp);
        else if (c < 0x20 || c == 0x7f)
            fprintf(fp, "\\x%02x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

static uint64_t load_uint(const void *f, size_t size)
{
    switch (size) {
    case 1: return *(const uint8_t *)f;
    case 2: return *(const uint16_t *)f;
    case 4: return *(const uint32_t *)f;
    case 8: return *(const uint64_t *)f;
    default: CT_WRONG("field width");
    }
}

/* The shortest "%g" that reads back to the same double, always with a '.'
 * or an exponent so libconfig sees a float. */
static void put_frac(FILE *fp, double d)
{
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    fprintf(fp, "%s%s", buf, strpbrk(buf, ".e") ? "" : ".0");
}

static void put_lists(const struct ct_conf_row *r, const void *base, FILE *fp)
{
    const void *v = *(void *const *)((const char *)base + r->off);
    size_t n = *(const size_t *)((const char *)base + r->off2);
    fputc('[', fp);
    for (size_t i = 0; i < n; i++) {
        char buf[80];
        fputs(i ? ", " : " ", fp);
        if (r->type == CT_ROW_CIDRLIST) {
            ct_conf_fmt_cidr((const struct ct_conf_cidr *)v + i, buf, sizeof(buf));
            put_str(fp, buf);
        } else {
            put_str(fp, ((char *const *)v)[i]);
        }
    }
    fputs(n ? " ]" : "]", fp);
}

static void dump_section(const struct ct_conf_section *sec, const void *base, int indent,
                         FILE *fp);

static void put_value(const struct ct_conf_row *r, const void *base, int indent, FILE *fp)
{
    const void *f = (const char *)base + r->off;
    char buf[128];
    switch (r->type) {
    case CT_ROW_BOOL: fputs(*(const bool *)f ? "true" : "false", fp); break;
    case CT_ROW_UINT: {
        uint64_t v = load_uint(f, r->size);
        if (v == 0 && (r->flags & CT_ROW_AUTO))
            put_str(fp, "auto");
        else
            fprintf(fp, "%llu", (unsigned long long)v);
        break;
    }
    case CT_ROW_SIZE:
        ct_conf_fmt_size(load_uint(f, r->size), buf, sizeof(buf));
        put_str(fp, buf);
        break;
    case CT_ROW_DUR: {
        uint64_t v = load_uint(f, r->size);
        if (v == 0 && (r->flags & CT_ROW_OFF))
            snprintf(buf, sizeof(buf), "off");
        else if (v == 0 && (r->flags & CT_ROW_AUTO))
            snprintf(buf, sizeof(buf), "auto");
        else if (v == CT_CONF_INHERIT && (r->flags & CT_ROW_INHERIT))
            snprintf(buf, sizeof(buf), "inherit");
        else
            ct_conf_fmt_dur(v, buf, sizeof(buf));
        put_str(fp, buf);
        break;
    }
    case CT_ROW_FRAC: put_frac(fp, *(const double *)f); break;
    case CT_ROW_STR:
    case CT_ROW_OPTSTR:
        put_str(fp, *(char *const *)f ? *(char *const *)f : "off");
        break;
    case CT_ROW_ENUM: put_str(fp, ct_conf_enum_name(r->enums, *(const int *)f)); break;
    case CT_ROW_ADDR:
        ct_conf_fmt_addr(f, buf, sizeof(buf));
        put_str(fp, buf);
        break;
    case CT_ROW_HOSTPORT: {
        const char *h = *(char *const *)f;
        bool v6 = strchr(h, ':') != NULL;
        fprintf(fp, "\"%s%s%s:%u\"", v6 ? "[" : "", h, v6 ? "]" : "",
                (unsigned)*(const uint16_t *)((const char *)base + r->off2));
        break;
    }
    case CT_ROW_STRLIST:
    case CT_ROW_CIDRLIST: put_lists(r, base, fp); break;
    case CT_ROW_GROUP:
        fputs("{\n", fp);
        dump_section(r->sub, f, indent + 2, fp);
        fprintf(fp, "%*s}", indent, "");
        break;
    case CT_ROW_LIST: {
        size_t all = *(const size_t *)((const char *)base + r->off2), n = 0, done = 0;
        const char *elems = *(char *const *)f;
        for (size_t i = 0; i < all; i++)
            n += !(r->sub->hidden && r->sub->hidden(elems + i * r->elem_size));
        fputs(n ? "(\n" : "( ", fp);
        for (size_t i = 0; i < all; i++) {
            const char *e = elems + i * r->elem_size;
            if (r->sub->hidden && r->sub->hidden(e))
                continue;
            fprintf(fp, "%*s{\n", indent + 2, "");
            dump_section(r->sub, e, indent + 4, fp);
            fprintf(fp, "%*s}%s\n", indent + 2, "", ++done < n ? "," : "");
        }
        fprintf(fp, "%*s)", n ? indent : 0, "");
        break;
    }
    }
}

/* Does ROW hold its default? Rendered and compared with the default as the
 * schema writes it, which is also how the file would say it. */
static bool is_default(const struct ct_conf_row *r, const void *base)
{
    char *v = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&v, &n);
    CT_ASSERT(mem != NULL);
    put_value(r, base, 0, mem);
    fclose(mem);
    bool same = r->def && strcmp(v, r->def) == 0;
    free(v);
    return same;
}

static void dump_section(const struct ct_conf_section *sec, const void *base, int indent, FILE *fp)
{
    for (size_t i = 0; i < sec->nrows; i++) {
        const struct ct_conf_row *r = &sec->rows[i];
        if (sec->why_not && sec->why_not(r->name, base))
            continue;
        if ((r->flags & CT_ROW_PRESENCE) && !*(const bool *)((const char *)base + r->off))
            continue; /* not written: off (e.g. a cleartext backend's tls) */
        if ((r->flags & CT_ROW_SECRET) && *(char *const *)((const char *)base + r->off)) {
            /* the output is shown and pasted around: a comment, so that a
             * file made from it fails loudly (no token) rather than carry it */
            fprintf(fp, "%*s# %s = (set; not shown);\n", indent, "", r->name);
            continue;
        }
        char nb[320];
        const char *note = sec->note ? sec->note(r->name, base, nb, sizeof(nb)) : NULL;
        if (note)
            fprintf(fp, "%*s# %s\n", indent, "", note);
        if (r->departs && !is_default(r, base))
            fprintf(fp, "%*s# departs from %s\n", indent, "", r->departs);
        fprintf(fp, "%*s%s = ", indent, "", r->name);
        put_value(r, base, indent, fp);
        fputs(";\n", fp);
    }
}

void ct_conf_dump(const struct ct_conf *cf, FILE *fp)
{
    CT_CHECK_OBJ(cf, CT_CONF_MAGIC);
    fprintf(fp, "# cachet: effective configuration of ");
    /* the source name goes into a comment: keep it on one line */
    for (const char *s = cf->source; *s; s++)
        fputc(*s == '\n' ? ' ' : *s, fp);
    fputs("\n# The defaults follow RFC 9110/9111; a setting marked \"departs from\" is an\n"
          "# opt-in that does not (see the configuration reference).\n",
          fp);
    dump_section(&ct_conf_root_section, cf, 0, fp);
}
