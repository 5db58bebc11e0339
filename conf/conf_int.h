/*
 * conf/conf_int.h: shared inside conf/ only, never included from outside.
 *
 * The schema: every setting is one row (name, type, limits, default in file
 * syntax, field offset, help). Loading, defaults, freeing, copying, dumping
 * and the docs/config.md reference are all generic walks over these rows, so a new
 * setting is one row plus one struct field, and defaults live only here.
 *
 * Locations: every setting read from a file records "FILE:LINE" under its
 * path ("listen[1].tls.certificates[0].cert") in a side table owned by the
 * struct ct_conf, so cross-checks run after the file is closed (and after the
 * command-line overrides) still point at the right line.
 */
#ifndef CT_CONF_INT_H
#define CT_CONF_INT_H

#include <stdarg.h>

#include "common/common.h"
#include "conf/conf.h"

struct config_setting_t;

enum ct_row_type {
    CT_ROW_BOOL,     /* bool */
    CT_ROW_UINT,     /* unsigned integer of the field's width; min..max */
    CT_ROW_SIZE,     /* uint64_t bytes: "512K", "256M", "1G", or an integer */
    CT_ROW_DUR,      /* uint64_t ms: "500ms", "10s", "5m", "1h", "1d" */
    CT_ROW_FRAC,     /* double in [0, 1] */
    CT_ROW_STR,      /* char *, never NULL */
    CT_ROW_OPTSTR,   /* char *, NULL when "off" */
    CT_ROW_ENUM,     /* int-sized enum, names in .enums */
    CT_ROW_ADDR,     /* struct ct_conf_addr, numeric "IP:PORT" */
    CT_ROW_HOSTPORT, /* char *host at .off, uint16_t port at .off2 */
    CT_ROW_STRLIST,  /* char ** at .off, size_t count at .off2 */
    CT_ROW_CIDRLIST, /* struct ct_conf_cidr * at .off, size_t count at .off2 */
    CT_ROW_GROUP,    /* embedded struct described by .sub */
    CT_ROW_LIST,     /* array of .sub structs at .off, size_t count at .off2 */
};

#define CT_ROW_REQUIRED 0x1u /* no default: must be set */
#define CT_ROW_AUTO 0x2u     /* UINT: "auto" means 0 */
#define CT_ROW_OFF 0x4u      /* DUR/ADDR: "off" means 0 / no address */
#define CT_ROW_FIELDS 0x8u   /* STRLIST: header field names (tokens), not server names */
#define CT_ROW_WORDS 0x10u   /* STRLIST: words named in the help (checked by conf_check.c) */
#define CT_ROW_SECRET 0x20u  /* OPTSTR: a secret; `cachet -T` says it is set, never what it is */
#define CT_ROW_TYPES 0x40u   /* STRLIST: media types, type/subtype or type and a star */
#define CT_ROW_INHERIT 0x80u /* DUR: "inherit" means CT_CONF_INHERIT (route overrides) */
#define CT_ROW_TEXT 0x100u   /* STRLIST: any non-empty strings, judged by conf_route.c */
#define CT_ROW_PATH 0x200u   /* STR/OPTSTR: a file; relative = to the file that names it */
/* GROUP: optional, on when written: its struct starts with `bool on`, set
 * when the file has the group; `cachet -T` leaves it out while off */
#define CT_ROW_PRESENCE 0x400u

struct ct_conf_enum {
    const char *name;
    int value;
};

struct ct_conf_section;

struct ct_conf_row {
    const char *name;
    enum ct_row_type type;
    unsigned flags;
    uint64_t min, max;
    const char *def; /* default, in file syntax; NULL for REQUIRED/GROUP/LIST */
    size_t off, off2, size, elem_size;
    const struct ct_conf_enum *enums; /* NULL-name terminated */
    const struct ct_conf_section *sub;
    const char *help;
    /* NULL, or the rule a value other than the default departs from, e.g.
     * "RFC 9111 §4.2.4: ...". The defaults follow the RFCs (docs/internals.md); such
     * a row is an opt-in, and the reference and `cachet -T` say so. */
    const char *departs;
};

struct ct_conf_section {
    const char *name;
    const struct ct_conf_row *rows;
    size_t nrows;
    size_t size; /* sizeof the struct the rows describe */
    /* NULL, or returns why ROW does not apply to this element (so it is
     * neither allowed in the file nor dumped), e.g. `tls` on an HTTP
     * listener; NULL when it applies. */
    const char *(*why_not)(const char *row, const void *base);
    /* NULL, or a comment `cachet -T` prints above ROW of BASE (written into
     * BUF[LEN] or static), or NULL for none: what the dump cannot show. */
    const char *(*note)(const char *row, const void *base, char *buf, size_t len);
    /* NULL, or true for an element of a list of this section that is not
     * the configuration's own and is left out of the dump (a fleet member
     * learned from Redis) */
    bool (*hidden)(const void *elem);
};

extern const struct ct_conf_section ct_conf_root_section;
extern const struct ct_conf_section ct_conf_listener_section;
extern const struct ct_conf_section ct_conf_backend_section;

/* ---- locations and errors ------------------------------------------------ */

struct ct_conf_loc {
    char *path;
    char *where; /* "file.conf:12" or "command line (--http)" */
};

struct ct_conf_locs {
    struct ct_conf_loc *v;
    size_t n, cap;
};

void ct_conf_locs_set(struct ct_conf_locs *locs, const char *path, const char *where);
/* The location recorded for PATH or its nearest ancestor, else FALLBACK. */
const char *ct_conf_locs_find(const struct ct_conf_locs *locs, const char *path,
                              const char *fallback);
/* The location recorded for exactly PATH, or NULL. */
const char *ct_conf_locs_exact(const struct ct_conf_locs *locs, const char *path);
void ct_conf_locs_free(struct ct_conf_locs *locs);
/* Copy every entry under OLD_PREFIX into DST, renamed under NEW_PREFIX. */
void ct_conf_locs_copy_prefix(struct ct_conf_locs *dst, const struct ct_conf_locs *src,
                              const char *old_prefix, const char *new_prefix);
bool ct_conf_path_under(const char *path, const char *prefix);

/* Append "WHERE: PATH: message" to ERRS (PATH may be NULL). */
void ct_conf_err(struct ct_conf_errors *errs, const char *where, const char *path,
                 const char *fmt, ...) CT_PRINTF(4, 5);

/* ---- values ------------------------------------------------------------ */

/* Each returns CT_OK or CT_ECONF; none allocates except where noted. */
int ct_conf_parse_size(const char *s, uint64_t *out);
int ct_conf_parse_dur(const char *s, uint64_t *out_ms);
/* ct_conf_parse_addr: conf.h (the fleet bus parses registrations with it) */
/* "HOST:PORT" with a DNS name or IP; *host is allocated. */
int ct_conf_parse_hostport(const char *s, char **host, uint16_t *port);
int ct_conf_parse_cidr(const char *s, struct ct_conf_cidr *c);
/* Lower-cased copy of a media type or range, "text/html" or "text" and a star
 * (RFC 9110 §8.3.1: type "/" subtype, tokens; no parameters). */
int ct_conf_parse_media_type(const char *s, char **out);
/* Lower-cased copy of a server name ("example.com", "*.example.com"). */
int ct_conf_parse_server_name(const char *s, char **out);

void ct_conf_fmt_size(uint64_t v, char *buf, size_t len);
void ct_conf_fmt_dur(uint64_t ms, char *buf, size_t len);
void ct_conf_fmt_addr(const struct ct_conf_addr *a, char *buf, size_t len);
void ct_conf_fmt_cidr(const struct ct_conf_cidr *c, char *buf, size_t len);
bool ct_conf_addr_eq(const struct ct_conf_addr *a, const struct ct_conf_addr *b);
void ct_conf_addr_free(struct ct_conf_addr *a);

/* Levenshtein distance, capped (for "did you mean"). */
unsigned ct_conf_edit_distance(const char *a, const char *b);

/* ---- generic walks over the schema ---------------------------------------- */

/* Set every row of SEC in BASE (zeroed) to its default; lists start empty. */
void ct_conf_section_defaults(const struct ct_conf_section *sec, void *base);
void ct_conf_section_free(const struct ct_conf_section *sec, void *base);
/* Deep copy SRC into DST (uninitialised). */
void ct_conf_section_copy(const struct ct_conf_section *sec, void *dst, const void *src);
/* Parse one row's value from a libconfig setting into BASE. Returns CT_OK or
 * CT_ECONF after adding an error located at the setting. */
struct ct_conf_loadctx {
    struct ct_conf_errors *errs;
    struct ct_conf_locs *locs;
    const char *name; /* file name for errors */
    bool no_line;     /* values from the command line: NAME alone locates them */
    const char *incdir; /* where @include'd files are looked up, or NULL */
};
int ct_conf_row_parse(struct ct_conf_loadctx *lc, const struct ct_conf_row *r,
                      const struct config_setting_t *s, void *base, const char *path);
/* Fill a sub-struct from a libconfig group: unknown keys, required keys and
 * row values are all checked; errors are collected, never fatal. */
void ct_conf_section_load(struct ct_conf_loadctx *lc, const struct ct_conf_section *sec,
                          const struct config_setting_t *grp, void *base, const char *path);
/* "(expected ...)" text for a row. */
void ct_conf_row_expect(const struct ct_conf_row *r, char *buf, size_t len);
/* The reference's type column ("duration or \"off\""); static storage. */
const char *ct_conf_row_type_name(const struct ct_conf_row *r);
/* Whether the reference adds the row's "Expected: ..." (where it says more
 * than the type). */
bool ct_conf_row_says_expected(const struct ct_conf_row *r);

/* Call CB on every row of the schema in reference order (docs/config.md's
 * table, cachet.conf(5)), with its reference key and its nesting depth. */
typedef void ct_conf_ref_cb(const char *key, const struct ct_conf_row *r, unsigned depth,
                            void *arg);
void ct_conf_reference_walk(ct_conf_ref_cb *cb, void *arg);
const char *ct_conf_enum_name(const struct ct_conf_enum *e, int value);

/* Where a loaded setting is: "FILE:LINE". */
void ct_conf_setting_where(const struct ct_conf_loadctx *lc, const struct config_setting_t *s,
                           char *buf, size_t len);

/* ---- assembling ------------------------------------------------------------ */

struct ct_conf *ct_conf_new_empty(const char *source);
/* ct_conf_load_file/_string with the cross-checks (ct_conf_finish) optional,
 * so that overrides can be applied before them. */
int ct_conf_read_file(const char *path, struct ct_conf **out, struct ct_conf_errors *errs,
                      bool finish);
int ct_conf_read_string(const char *text, const char *name, struct ct_conf **out,
                        struct ct_conf_errors *errs, bool finish);
extern const char ct_conf_embedded_default[];
const struct ct_conf_row *ct_conf_find_row(const struct ct_conf_section *sec, const char *name);
/* Derived fields (admin.enabled, backend names, default certificates) and the
 * cross-checks over the whole configuration; errors use cf's locations.
 * Returns CT_OK or CT_ECONF. */
int ct_conf_finish(struct ct_conf *cf, struct ct_conf_errors *errs);
/* Backend names derived, duplicates, passive_fail_on, health paths, for the
 * list V[0..N) whose settings are at PREFIX ("backends",
 * "backend_groups[1].backends"). */
void ct_conf_check_backend_list(struct ct_conf *cf, struct ct_conf_errors *errs,
                                const char *prefix, struct ct_conf_backend *v, size_t n);
/* Backend groups, sites and routes (conf_route.c). */
void ct_conf_check_routes(struct ct_conf *cf, struct ct_conf_errors *errs);
/* conf_fleet.c: the fleet's checks and its derived peer groups (before
 * ct_conf_check_routes, whose flat backend list takes them in); the free of
 * what it derived (ct_conf_free). */
void ct_conf_check_fleet(struct ct_conf *cf, struct ct_conf_errors *errs);
void ct_conf_fleet_free_derived(struct ct_conf_fleet *fl);
/* Append the learnable ones of LEARNED[0..N) to cf's members (copies, marked
 * learned); see ct_conf_build_learned. */
void ct_conf_fleet_add_learned(struct ct_conf *cf, const struct ct_conf_fleet_member *learned,
                               size_t n);
/* conf_check.c: a secret for an HTTP field: visible ASCII, 16 to 256 bytes. */
bool ct_conf_token_ok(const char *t, size_t len);
/* The OpenSSL part of the cross-checks: files readable, certificate matches
 * key, CA file holds certificates. */
void ct_conf_check_tls_files(const struct ct_conf *cf, struct ct_conf_errors *errs);
/* listen[].tls.acme (conf_acme.c): URL, names (derived from the sites when
 * none), challenges, storage, directory_ca. */
void ct_conf_check_acme(struct ct_conf *cf, struct ct_conf_errors *errs);
/* The same for backend I of the list at PREFIX when it speaks TLS: CA,
 * client certificate and key (both or neither, matching), server_name,
 * cipher lists and ALPN names. */
void ct_conf_check_backend_tls(const struct ct_conf *cf, struct ct_conf_errors *errs,
                               const char *prefix, size_t i, const struct ct_conf_backend *b);

#endif /* CT_CONF_INT_H */
