/*
 * bench/micro/bench_persist.c: how long a cache.persist snapshot takes to
 * write at a stop and to load at a start (issue 44), through cache/cache.h
 * only: N objects of SIZE body bytes are stored, written to FILE through a
 * 1 MiB buffer (as proxy/ops/persist.c does) and fsync'd, the store freed,
 * and FILE mapped and loaded into a fresh store.
 *
 * Usage: bench_persist N SIZE FILE (FILE is left behind: remove it).
 * Prints one line: seconds to write (fsync included) and to load. The
 * figures in docs/operations.md ("Persistence") are from this.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"

static unsigned char obuf[1 << 20];
static size_t olen;

static int write_all(int fd, const void *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return CT_EIO;
        p = (const char *)p + w;
        n -= (size_t)w;
    }
    return CT_OK;
}

static int out(void *arg, const void *p, size_t n)
{
    int fd = *(int *)arg;
    if (olen + n > sizeof(obuf)) {
        if (write_all(fd, obuf, olen) != CT_OK)
            return CT_EIO;
        olen = 0;
    }
    if (n >= sizeof(obuf))
        return write_all(fd, p, n);
    memcpy(obuf + olen, p, n);
    olen += n;
    return CT_OK;
}

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fill(struct ct_cache *c, size_t n, size_t size, ct_time_t t)
{
    char *body = malloc(size ? size : 1);
    memset(body, 'x', size);
    for (size_t i = 0; i < n; i++) {
        char target[64], kb[256];
        snprintf(target, sizeof(target), "/obj/%zu", i);
        struct ct_cache_key_opts o = {0};
        struct ct_cache_key_in in = {CT_CACHE_MCLASS_GET, CT_STR("example.com"), 80,
                                     ct_str_c(target), CT_STR_NULL, CT_STR_NULL};
        struct ct_cache_key k;
        ct_cache_key_build(&o, &in, kb, sizeof(kb), &k);
        struct ct_cache_lookup_req req = {.key = &k};
        struct ct_cache_lookup_res res;
        ct_cache_lookup(c, &req, t, &res);
        struct ct_obj_meta m = {
            .status = 200,
            .head = CT_STR("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nVia: 1.1 cachet\r\n"),
            .etag = CT_STR("\"abc\""),
            .response_time = t,
            .ttl = 3600,
            .body_hint = size,
        };
        if (res.fetch && ct_obj_set_head(res.fetch, &m) == CT_OK &&
            ct_obj_append(res.fetch, body, size) == CT_OK)
            ct_obj_complete(res.fetch, t);
        else if (res.fetch)
            ct_obj_abandon(res.fetch, t, 0);
        ct_cache_lookup_res_release(&res);
    }
    free(body);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_persist N SIZE FILE\n");
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 10), size = strtoul(argv[2], NULL, 10);
    struct ct_cache_config cfg = {.max_bytes = (size_t)16 << 30,
                                  .max_object_size = (size_t)64 << 20};
    ct_time_t t = 1.8e9;
    struct ct_cache *c = ct_cache_new(&cfg);
    fill(c, n, size, t);

    int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(argv[3]);
        return 1;
    }
    struct ct_cache_persist_counts cn;
    double t0 = mono();
    int rc = ct_cache_persist_save(c, t + 1, "bench", out, &fd, &cn);
    if (rc == CT_OK)
        rc = write_all(fd, obuf, olen);
    if (rc != CT_OK || fsync(fd) != 0 || close(fd) != 0) {
        perror("writing");
        return 1;
    }
    double t1 = mono();
    ct_cache_free(&c);

    struct ct_cache *d = ct_cache_new(&cfg);
    fd = open(argv[3], O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[3]);
        return 1;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    double t2 = mono();
    struct ct_cache_persist_report rep;
    ct_cache_persist_load(d, map, (size_t)st.st_size, t + 2, &rep);
    double t3 = mono();
    printf("%zu objects of %zu B: wrote %llu (%.0f MB) in %.2f s, loaded %llu in %.2f s "
           "(%llu refused)\n",
           n, size, (unsigned long long)cn.objects, (double)cn.file_bytes / 1e6, t1 - t0,
           (unsigned long long)rep.fates[CT_CACHE_PERSIST_LOADED], t3 - t2,
           (unsigned long long)rep.refused);
    munmap(map, (size_t)st.st_size);
    ct_cache_free(&d);
    return 0;
}
