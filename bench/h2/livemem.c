/*
 * bench/h2/livemem.c: an LD_PRELOAD that keeps the live heap of a process
 * by call stack, for "where does an idle connection's memory go"
 * (bench/h2/livemem.sh; docs/h2.md, "Idle connection memory").
 *
 *   MEMTRACE=/tmp/x LD_PRELOAD=livemem.so PROGRAM ...
 *   touch /tmp/x.req      -> /tmp/x.1, x.2, ...: one line per call stack:
 *                            live bytes, usable bytes, blocks, frames (dso+offset)
 *
 * Two dumps around an event (N connections opened and idle) and
 * livemem.py give the bytes per connection by stack. Not part of cachet:
 * built by livemem.sh with gcc; it slows every allocation (a backtrace
 * each), so it measures bytes, never time.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
#define DEPTH 8
#define NP (1u << 22)
#define NS (1u << 16)
struct pe { void *p; size_t sz; unsigned st; };
struct se { uint64_t h; void *f[DEPTH]; int n; long bytes, cnt, ubytes; };
static struct pe *pt; static struct se *stt;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int guard;
static int ready;
static const char *path;
static unsigned stack_id(void) {
    void *f[DEPTH + 2]; int n = backtrace(f, DEPTH + 2);
    uint64_t h = 1469598103934665603ull;
    for (int i = 2; i < n; i++) h = (h ^ (uintptr_t)f[i]) * 1099511628211ull;
    unsigned i = (unsigned)(h % NS);
    while (stt[i].h && stt[i].h != h) i = (i + 1) % NS;
    if (!stt[i].h) { stt[i].h = h; stt[i].n = n - 2 > 0 ? n - 2 : 0; memcpy(stt[i].f, f + 2, sizeof(void *) * (size_t)stt[i].n); }
    return i;
}
static void track(void *p, size_t sz) {
    if (!p || !ready || guard) return;
    guard = 1; pthread_mutex_lock(&mu);
    unsigned s = stack_id();
    unsigned i = (unsigned)(((uintptr_t)p >> 4) * 2654435761u) & (NP - 1);
    while (pt[i].p && pt[i].p != (void *)1) i = (i + 1) & (NP - 1);
    pt[i] = (struct pe){p, sz, s};
    stt[s].bytes += (long)sz; stt[s].cnt++; stt[s].ubytes += (long)malloc_usable_size(p);
    pthread_mutex_unlock(&mu); guard = 0;
}
static void untrack(void *p) {
    if (!p || !ready) return;
    pthread_mutex_lock(&mu);
    unsigned i = (unsigned)(((uintptr_t)p >> 4) * 2654435761u) & (NP - 1);
    while (pt[i].p) { if (pt[i].p == p) { struct se *s = &stt[pt[i].st]; s->bytes -= (long)pt[i].sz; s->cnt--; s->ubytes -= (long)malloc_usable_size(p); pt[i].p = (void *)1; break; } i = (i + 1) & (NP - 1); }
    pthread_mutex_unlock(&mu);
}
void *malloc(size_t n) { void *p = __libc_malloc(n); track(p, n); return p; }
void free(void *p) { untrack(p); __libc_free(p); }
void *calloc(size_t a, size_t b) { void *p = __libc_calloc(a, b); track(p, a * b); return p; }
void *realloc(void *p, size_t n) { untrack(p); void *q = __libc_realloc(p, n); track(q ? q : (n ? p : NULL), q ? n : 0); return q; }
void *memalign(size_t a, size_t n) { void *p = __libc_memalign(a, n); track(p, n); return p; }
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void **r, size_t a, size_t n) { void *p = memalign(a, n); if (!p) return 12; *r = p; return 0; }
static void dump(void) {
    static int seq;
    char tmp[512], out[512]; /* written whole, then renamed: a reader never sees half */
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(out, sizeof out, "%s.%d", path, ++seq);
    guard = 1;
    FILE *fp = fopen(tmp, "w");
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < NS; i++) {
        if (!stt[i].h || !stt[i].cnt) continue;
        fprintf(fp, "%ld %ld %ld", stt[i].bytes, stt[i].ubytes, stt[i].cnt);
        for (int k = 0; k < stt[i].n; k++) { Dl_info d; if (dladdr(stt[i].f[k], &d) && d.dli_fname) fprintf(fp, " %s+%#lx", d.dli_fname, (unsigned long)((char *)stt[i].f[k] - (char *)d.dli_fbase)); else fprintf(fp, " ?%p", stt[i].f[k]); }
        fputc('\n', fp);
    }
    pthread_mutex_unlock(&mu);
    /* The heaps' extent and their free bytes (holes between live blocks). */
    struct mallinfo2 mi = mallinfo2();
    fprintf(fp, "# heap %zu free %zu\n", mi.arena, mi.fordblks);
    fclose(fp);
    rename(tmp, out);
    guard = 0;
}
static void *poller(void *a) {
    (void)a; char req[512]; snprintf(req, sizeof req, "%s.req", path);
    for (;;) { usleep(100000); if (access(req, F_OK) == 0) { unlink(req); dump(); } }
    return NULL;
}
__attribute__((constructor)) static void init(void) {
    path = getenv("MEMTRACE"); if (!path) return;
    guard = 1;
    pt = mmap(NULL, sizeof(struct pe) * NP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    stt = mmap(NULL, sizeof(struct se) * NS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *f[2]; backtrace(f, 2);
    pthread_t t; pthread_create(&t, NULL, poller, NULL);
    guard = 0; ready = 1;
}
