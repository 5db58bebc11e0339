/*
 * conf/conf_man.c: the configuration reference as roff, for cachet.conf(5)
 * (docs/man/cachet.conf.5 holds it between its BEGIN/END REFERENCE lines; the
 * conf_dump unit test checks it as it checks docs/config.md's table, and
 * scripts/sync-conf-reference.py pastes both). The same walk, rows and
 * reasons as the Markdown table (conf_schema.c), so the page cannot say
 * something the schema does not.
 *
 * The help texts are Markdown-light: `code` spans are the only markup, so
 * they become bold; everything else is escaped for roff (a backslash, a
 * leading dot or quote, hyphens inside code as minus signs, a break point
 * after ':' and ',' inside code) and non-ASCII
 * characters become \[uXXXX], so groff renders the page the same in any
 * locale and without warnings (lintian runs it with -ww).
 */
#include <stdio.h>
#include <string.h>

#include "conf/conf_int.h"

/* The UTF-8 sequence at S as a code point; *LEN its bytes (1 for a stray
 * byte, printed as U+FFFD). */
static unsigned utf8_decode(const unsigned char *s, size_t *len)
{
    unsigned c = s[0];
    size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    if (n == 1) {
        *len = 1;
        return c < 0x80 ? c : 0xfffd;
    }
    unsigned cp = c & (0x3f >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            *len = 1;
            return 0xfffd;
        }
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    *len = n;
    return cp;
}

/* TEXT as roff text on the current line: `code` in bold, escapes as above. */
static void roff_text(FILE *fp, const char *text)
{
    bool code = false;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        size_t n = 1;
        if (*p == '`') {
            fputs(code ? "\\fR" : "\\fB", fp);
            code = !code;
        } else if (*p == '\\') {
            fputs("\\e", fp);
        } else if (*p == '-' && code) {
            fputs("\\-", fp);
        } else if (*p == '\n') {
            fputc(' ', fp);
        } else if (code && (*p == ':' || *p == ',')) {
            /* a break point: cipher lists are one 200-column word */
            fputc(*p, fp);
            fputs("\\:", fp);
        } else if (*p >= 0x80) {
            fprintf(fp, "\\[u%04X]", utf8_decode(p, &n));
        } else {
            fputc(*p, fp);
        }
        p += n;
    }
    if (code)
        fputs("\\fR", fp);
}

/* A text line: "\&" first, so a leading '.' or '\'' is never a request. */
static void roff_line(FILE *fp, const char *text)
{
    fputs("\\&", fp);
    roff_text(fp, text);
    fputc('\n', fp);
}

static void man_row(const char *key, const struct ct_conf_row *r, unsigned depth, void *arg)
{
    FILE *fp = arg;
    char expect[400], line[1200];
    if (depth == 0) {
        fputs(".SS ", fp);
        roff_text(fp, key);
        fputs("\n.PP\n", fp);
    } else {
        fputs(".TP\n.B ", fp);
        roff_text(fp, key);
        fputc('\n', fp);
    }
    /* type and default, then the help */
    snprintf(line, sizeof(line), "%s%s%s%s%s", ct_conf_row_type_name(r),
             r->def ? "; default `" : (r->flags & CT_ROW_REQUIRED) ? "; required" : "",
             r->def ? r->def : "", r->def ? "`" : "", ".");
    roff_line(fp, line);
    fputs(".br\n", fp);
    ct_conf_row_expect(r, expect, sizeof(expect));
    bool say = ct_conf_row_says_expected(r);
    snprintf(line, sizeof(line), "%s%s%s%s", r->help, say ? " Expected: " : "",
             say ? expect : "", say ? "." : "");
    roff_line(fp, line);
    const char *why = ct_conf_default_reason(key);
    if (why) {
        fprintf(fp, "%s\n\\fIWhy this default:\\fR\n", depth ? ".IP" : ".PP");
        roff_line(fp, why);
    }
    if (r->departs) {
        fprintf(fp, "%s\n\\fBAny other value is an opt-in that departs from\n", depth ? ".IP" : ".PP");
        snprintf(line, sizeof(line), "%s.", r->departs);
        fputs("\\&\\fB", fp);
        roff_text(fp, line);
        fputs("\\fR\n", fp);
    }
}

void ct_conf_print_reference_man(FILE *fp)
{
    ct_conf_reference_walk(man_row, fp);
}
