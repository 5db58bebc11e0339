/*
 * origin/origin_static.c: files. Without --root, the built-in docroot: /1k,
 * /10k, /100k and /1m, cut from the byte pattern and sent by reference from
 * memory (strong ETag from a hash of the content, Last-Modified = start).
 * With --root, files under DIR, sent with sendfile (evbuffer file segments),
 * ETag from inode, size and mtime (ns), Last-Modified from mtime.
 *
 * Containment: the path is normalised first (origin_route.c refuses "..",
 * encoded or not, with 403), then the file is opened with openat2(2)
 * RESOLVE_BENEATH relative to the root's fd, so the kernel refuses any
 * symlink or ".." that leads out (403). Where openat2 is missing (ENOSYS,
 * or a seccomp filter's EPERM) the fallback resolves with realpath() and
 * checks the result is under the root's realpath. CT_ORIGIN_NO_OPENAT2=1
 * forces the fallback, so tests cover both. Directories serve their
 * index.html, or 404.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "origin/origin_int.h"

struct builtin {
    struct ct_str path;
    uint64_t len;
    char etag[24];
};

static struct builtin builtins[] = {
    {CT_STR("/1k"), 1024, ""},
    {CT_STR("/10k"), 10 * 1024, ""},
    {CT_STR("/100k"), 100 * 1024, ""},
    {CT_STR("/1m"), 1024 * 1024, ""},
};
static char builtin_lm[CT_HTTP_DATE_LEN + 1];
static time_t builtin_mtime;

void ct_obuiltin_init(time_t start)
{
    for (size_t i = 0; i < CT_ARRAY_LEN(builtins); i++) {
        const unsigned char *p = (const unsigned char *)ct_opattern_at(0);
        uint64_t h = 1469598103934665603ull;
        for (uint64_t k = 0; k < builtins[i].len; k++)
            h = (h ^ p[k]) * 1099511628211ull;
        snprintf(builtins[i].etag, sizeof(builtins[i].etag), "\"%016llx\"",
                 (unsigned long long)h);
    }
    builtin_mtime = start;
    ct_http_date_format(start, builtin_lm);
}

static void serve_builtin(struct ct_oconn *c)
{
    struct ct_oresp *r = &c->resp;
    for (size_t i = 0; i < CT_ARRAY_LEN(builtins); i++) {
        if (!ct_str_eq(c->path, builtins[i].path))
            continue;
        r->ctype = "application/octet-stream";
        r->kind = CT_OBODY_MEM;
        r->mem = ct_opattern_at(0);
        r->len = builtins[i].len;
        r->val.etag = ct_str_c(builtins[i].etag);
        r->val.has_mtime = true;
        r->val.mtime = builtin_mtime;
        r->lm_text = ct_str_make(builtin_lm, CT_HTTP_DATE_LEN);
        r->rangeable = true;
        r->controls = true;
        return;
    }
    ct_oresp_error(c, 404, "no such file");
}

static int open_realpath(struct ct_origin *o, const char *rel)
{
    char full[PATH_MAX + 8];
    if ((size_t)snprintf(full, sizeof(full), "%s/%s", o->root_real, rel) >= sizeof(full))
        return -ENAMETOOLONG;
    char *real = realpath(full, NULL);
    if (!real)
        return -errno;
    size_t rl = strlen(o->root_real);
    bool inside = strncmp(real, o->root_real, rl) == 0 && (real[rl] == '/' || real[rl] == '\0');
    int fd = inside ? open(real, O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
    int e = inside ? errno : EXDEV;
    free(real);
    return fd >= 0 ? fd : -e;
}

/* Open REL under the root; an fd, or -errno (EXDEV: it leads out). */
static int open_beneath(struct ct_origin *o, const char *rel)
{
    if (!o->no_openat2) {
        struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
        long fd = syscall(SYS_openat2, o->root_fd, rel[0] ? rel : ".", &how, sizeof(how));
        if (fd >= 0)
            return (int)fd;
        if (errno != ENOSYS && errno != EPERM)
            return -errno;
        o->no_openat2 = true; /* benign race: every thread reaches the same answer */
    }
    return open_realpath(o, rel[0] ? rel : ".");
}

static void refuse_errno(struct ct_oconn *c, int e)
{
    switch (e) {
    case EXDEV:
    case ELOOP:
        ct_oresp_error(c, 403, "path leads out of the root");
        break;
    case EACCES:
        ct_oresp_error(c, 403, "permission denied");
        break;
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
        ct_oresp_error(c, 404, "no such file");
        break;
    default:
        ct_oresp_error(c, 500, "cannot open the file");
        break;
    }
}

/* Open the file for REL (a directory's index.html); fills *ST. */
static int open_file(struct ct_oconn *c, char *rel, size_t cap, struct stat *st)
{
    int fd = open_beneath(c->w->o, rel);
    if (fd < 0)
        return fd;
    if (fstat(fd, st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (S_ISDIR(st->st_mode)) {
        close(fd);
        size_t n = strlen(rel);
        const char *idx = n ? "/index.html" : "index.html";
        if (n + strlen(idx) + 1 > cap)
            return -ENAMETOOLONG;
        memcpy(rel + n, idx, strlen(idx) + 1);
        fd = open_beneath(c->w->o, rel);
        if (fd < 0)
            return fd;
        if (fstat(fd, st) < 0 || S_ISDIR(st->st_mode)) {
            close(fd);
            return -ENOENT;
        }
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return -ENOENT;
    }
    return fd;
}

static void serve_file(struct ct_oconn *c)
{
    struct ct_oresp *r = &c->resp;
    char rel[PATH_MAX];
    struct stat st;
    switch (ct_opath_normalize(c->path, rel, sizeof(rel) - 16)) {
    case CT_OK:
        break;
    case CT_EPROTO:
        ct_oresp_error(c, 403, "path escapes the root");
        return;
    case CT_ELIMIT:
        ct_oresp_error(c, 414, "path too long");
        return;
    default:
        ct_oresp_error(c, 400, "bad path encoding");
        return;
    }
    int fd = open_file(c, rel, sizeof(rel), &st);
    if (fd < 0) {
        refuse_errno(c, -fd);
        return;
    }
    r->ctype = ct_omime_type(ct_str_c(rel));
    r->kind = CT_OBODY_FILE;
    r->fd = fd;
    r->len = (uint64_t)st.st_size;
    /* Nanoseconds too: two writes of the same size within a second must
     * not share a strong validator. */
    snprintf(r->etag_buf, sizeof(r->etag_buf), "\"%llx-%llx-%llx.%lx\"",
             (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtim.tv_sec, (unsigned long)st.st_mtim.tv_nsec);
    r->val.etag = ct_str_c(r->etag_buf);
    r->val.has_mtime = true;
    r->val.mtime = st.st_mtime;
    ct_http_date_format(st.st_mtime, r->lm_buf);
    r->lm_text = ct_str_make(r->lm_buf, CT_HTTP_DATE_LEN);
    r->rangeable = true;
    r->controls = true;
}

void ct_ohandle_static(struct ct_oconn *c)
{
    if (c->msg->method != CT_METHOD_GET && c->msg->method != CT_METHOD_HEAD) {
        ct_oresp_error(c, 405, "files answer GET and HEAD only");
        c->resp.allow = "GET, HEAD";
        return;
    }
    if (c->w->o->root_fd < 0)
        serve_builtin(c);
    else
        serve_file(c);
}
