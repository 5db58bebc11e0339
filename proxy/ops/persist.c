/*
 * proxy/ops/persist.c: the snapshot file of cache.persist (issue 44).
 *
 * Writing (a graceful stop, the workers joined, nothing else touches the
 * store): PATH.tmp.PID is created beside PATH (same directory, so the rename
 * is atomic), mode 0600 (the cache holds what clients were answered), filled
 * through a 1 MiB buffer, fsync'd, renamed over PATH, and the directory
 * fsync'd so the rename itself survives a power cut. A crash or kill -9
 * before the rename leaves PATH as it was and a PATH.tmp.* file, which the
 * next start removes; a write error (disk full) removes it at once.
 *
 * Reading (start, before the workers exist): the file is mapped read-only
 * and handed to ct_cache_persist_load, which trusts none of it. The file is
 * removed once loaded: the store it made is the live one from then on, and a
 * later crash must not bring back what was purged meanwhile.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache.h"
#include "common/log.h"
#include "proxy/ops/persist.h"

#define OUT_BUF (1u << 20)

/* ---- writing ------------------------------------------------------------------ */

struct out {
    int fd;
    unsigned char *buf;
    size_t len;
    int err; /* errno of the first failure */
};

static int write_all(struct out *o, const void *p, size_t n)
{
    while (n) {
        ssize_t w = write(o->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            o->err = w < 0 ? errno : ENOSPC;
            return CT_EIO;
        }
        p = (const char *)p + w;
        n -= (size_t)w;
    }
    return CT_OK;
}

static int out_flush(struct out *o)
{
    int rc = write_all(o, o->buf, o->len);
    o->len = 0;
    return rc;
}

static int out_write(void *arg, const void *p, size_t n)
{
    struct out *o = arg;
    if (o->len + n > OUT_BUF && out_flush(o) != CT_OK)
        return CT_EIO;
    if (n >= OUT_BUF) /* a large body: straight from the object */
        return write_all(o, p, n);
    memcpy(o->buf + o->len, p, n);
    o->len += n;
    return CT_OK;
}

static int fsync_dir(const char *path)
{
    char *dir = ct_path_dir(path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int ct_persist_save(struct ct_cache *cache, const char *path, const char *build)
{
    ct_time_t t0 = ct_time_mono();
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp)) {
        CT_ERR("cache.persist: %s: path too long; the cache is not saved", path);
        return CT_EIO;
    }
    /* NOFOLLOW: a symbolic link planted under that name must not redirect the cache */
    struct out o = {.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (o.fd < 0) {
        CT_ERR("cache.persist: cannot create %s: %s; the cache is not saved", tmp, strerror(errno));
        return CT_EIO;
    }
    o.buf = ct_xmalloc(OUT_BUF);
    struct ct_cache_persist_counts n;
    const char *step = "writing";
    int rc = ct_cache_persist_save(cache, ct_time_real(), build, out_write, &o, &n);
    if (rc == CT_OK)
        rc = out_flush(&o);
    if (rc == CT_OK && fsync(o.fd) != 0) {
        o.err = errno, rc = CT_EIO, step = "syncing";
    }
    if (close(o.fd) != 0 && rc == CT_OK) {
        o.err = errno, rc = CT_EIO, step = "closing";
    }
    free(o.buf);
    if (rc == CT_OK && rename(tmp, path) != 0) {
        o.err = errno, rc = CT_EIO, step = "renaming";
    }
    if (rc != CT_OK) {
        CT_ERR("cache.persist: %s %s failed after %llu objects: %s; temporary file removed, "
               "the previous snapshot (if any) left as it was",
               step, tmp, (unsigned long long)n.objects, strerror(o.err));
        unlink(tmp);
        return CT_EIO;
    }
    if (fsync_dir(path) != 0)
        CT_WARN("cache.persist: syncing the directory of %s: %s (the rename may not survive a "
                "power cut)",
                path, strerror(errno));
    CT_INFO("cache.persist: wrote %llu objects (%llu body bytes, %llu bytes in all) to %s in "
            "%.0f ms",
            (unsigned long long)n.objects, (unsigned long long)n.body_bytes,
            (unsigned long long)n.file_bytes, path, (ct_time_mono() - t0) * 1e3);
    return CT_OK;
}

/* ---- reading ------------------------------------------------------------------ */

/* Remove PATH.tmp.* beside PATH: what a stop killed while writing left. */
static void remove_leftovers(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char prefix[512], file[4096];
    if ((size_t)snprintf(prefix, sizeof(prefix), "%s.tmp.", base) >= sizeof(prefix))
        return;
    char *dir = ct_path_dir(path);
    DIR *d = opendir(dir);
    if (d == NULL) {
        free(dir);
        return;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        snprintf(file, sizeof(file), "%s/%s", dir, e->d_name);
        if (unlink(file) == 0)
            CT_WARN("cache.persist: removed %s, left by a stop that did not finish writing", file);
    }
    closedir(d);
    free(dir);
}

static void log_report(const char *path, const struct ct_cache_persist_report *r, double ms,
                       ct_time_t now)
{
    const uint64_t *f = r->fates;
    CT_INFO("cache.persist: loaded %llu objects (%llu body bytes) of %llu records from %s "
            "(written %.0f s ago by %s) in %.0f ms; dropped %llu expired, %llu duplicates, "
            "%llu that did not fit",
            (unsigned long long)f[CT_CACHE_PERSIST_LOADED], (unsigned long long)r->body_bytes,
            (unsigned long long)r->records, path, now - r->hdr.written, r->hdr.build, ms,
            (unsigned long long)f[CT_CACHE_PERSIST_EXPIRED],
            (unsigned long long)f[CT_CACHE_PERSIST_DUPLICATE],
            (unsigned long long)f[CT_CACHE_PERSIST_NOROOM]);
    if (r->refused)
        CT_WARN("cache.persist: %s: refused %llu records (first: %s); they are not served", path,
                (unsigned long long)r->refused, r->why);
}

void ct_persist_load(struct ct_cache *cache, const char *path)
{
    remove_leftovers(path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            CT_INFO("cache.persist: no snapshot at %s: starting with an empty cache", path);
        else
            CT_ERR("cache.persist: cannot open %s: %s; starting with an empty cache", path,
                   strerror(errno));
        return;
    }
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0)
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    ct_time_t t0 = ct_time_mono(), now = ct_time_real();
    struct ct_cache_persist_report rep;
    if (map == MAP_FAILED)
        ct_cache_persist_load(cache, "", 0, now, &rep); /* empty or unreadable: refused */
    else
        ct_cache_persist_load(cache, map, (size_t)st.st_size, now, &rep);
    if (map != MAP_FAILED)
        munmap(map, (size_t)st.st_size);
    if (rep.header_refused) { /* left for the operator to look at; the next stop replaces it */
        CT_ERR("cache.persist: %s refused: %s; starting with an empty cache", path, rep.why);
        return;
    }
    log_report(path, &rep, (ct_time_mono() - t0) * 1e3, now);
    if (unlink(path) != 0)
        CT_WARN("cache.persist: cannot remove %s after loading it: %s", path, strerror(errno));
}
