/*
 * bench/micro/bench_trim.c: does giving freed cache memory back to the kernel
 * stall a worker's allocations? (issue 19)
 *
 *   build/bin/bench_trim [MiB]      (default 512)
 *
 * A "worker" thread fills MiB of 1-32 KiB blocks (the cache's heap-sized
 * bodies: they land in that thread's malloc arena), then the main thread
 * frees them all (a purge) and gives the memory back, while the worker
 * allocates and frees 4 KiB blocks in a loop (above glibc's per-thread
 * cache, so each goes to its arena) and times each. Two rounds:
 *   glibc: blocks from malloc, given back with malloc_trim(0), which walks
 *          the worker's arena with its lock held;
 *   slab:  blocks from ct_slab_alloc (common/slab.h), given back with
 *          ct_slab_release() (taken off their lists under a class lock,
 *          madvised without it), then malloc_trim(0) as common/mem.c does.
 *   idle:  as slab, then the worker timed as long again with nothing
 *          happening: the noise floor (preemption on a loaded machine).
 * Prints, for each, how long the giving back took and the worker's slowest
 * allocation and its allocations slower than 1 ms during it. A worker on the
 * same core as the main thread would also wait for CPU: pin them apart
 * (taskset -c 0,1) to see only the locks.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/common.h"
#include "common/slab.h"

static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
static double now_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

struct round {
    bool slab;
    size_t nblocks;
    void **blocks;
    _Atomic int phase; /* 0 fill, 1 filled, 2 measuring, 3 stop */
    double max_ms;
    long slow, ops;
};

static void *blk_alloc(bool slab, size_t n)
{
    return slab ? ct_slab_alloc(n) : ct_xmalloc(n);
}

static void *worker(void *arg)
{
    struct round *r = arg;
    for (size_t i = 0; i < r->nblocks; i++) {
        size_t n = 1024 + (i * 2654435761u) % (31 * 1024);
        r->blocks[i] = blk_alloc(r->slab, n);
        ((char *)r->blocks[i])[0] = 1; /* touched, as a body is */
        for (size_t j = 4096; j < n; j += 4096)
            ((char *)r->blocks[i])[j] = 1;
    }
    atomic_store(&r->phase, 1);
    while (atomic_load(&r->phase) < 2)
        ;
    while (atomic_load(&r->phase) == 2) {
        double t0 = now_ms();
        void *p = malloc(4096), *q = r->slab ? ct_slab_alloc(4096) : NULL;
        ((volatile char *)p)[0] = 1;
        free(p);
        ct_slab_free(q);
        double d = now_ms() - t0;
        if (d > r->max_ms)
            r->max_ms = d;
        r->slow += d > 1.0;
        r->ops++;
    }
    return NULL;
}

static void run(bool slab, bool idle, size_t mib)
{
    struct round r = {.slab = slab, .nblocks = mib * 1024 / 16};
    r.blocks = ct_xcalloc(r.nblocks, sizeof(void *));
    pthread_t th;
    pthread_create(&th, NULL, worker, &r);
    while (atomic_load(&r.phase) < 1)
        ;
    for (size_t i = 0; i < r.nblocks; i++) /* the purge: the main thread frees */
        slab ? ct_slab_free(r.blocks[i]) : free(r.blocks[i]);
    atomic_store(&r.phase, 2);
    double t0 = now_ms(), t_slab = 0, c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    if (slab) {
        ct_slab_period(); /* the period after the one they became empty in */
        ct_slab_period();
        while (ct_slab_release(8) > 0)
            ;
        t_slab = now_ms() - t0;
    }
    double t1 = now_ms();
    malloc_trim(0);
    double t_trim = now_ms() - t1;
    if (idle) { /* the noise floor: as long again with nothing to do */
        struct timespec ts = {0, (long)((now_ms() - t0) * 1e6)};
        t0 = now_ms();
        r.max_ms = 0, r.slow = 0, r.ops = 0;
        nanosleep(&ts, NULL);
    }
    double cpu = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0, wall = now_ms() - t0;
    atomic_store(&r.phase, 3);
    pthread_join(th, NULL);
    printf("%-5s %zu MiB in %zu blocks: given back in %.1f ms, %.1f ms of CPU (slab release "
           "%.1f ms, malloc_trim %.1f ms); worker: %ld allocations, slowest %.3f ms, %ld over 1 ms\n",
           idle ? "idle" : slab ? "slab" : "glibc", mib, r.nblocks, wall, cpu, t_slab, t_trim, r.ops, r.max_ms,
           r.slow);
    free(r.blocks);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 512;
    run(false, false, mib);
    run(true, false, mib);
    run(true, true, mib);
    return 0;
}
