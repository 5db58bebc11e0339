/*
 * proxy/ops/persist.h: the cache's snapshot file (cache.persist, issue 44):
 * loaded once at start, before the listeners accept, and written at a
 * graceful stop, after the workers have drained. The bytes are
 * cache/cache.h's (ct_cache_persist_*); this is the file around them: the
 * atomic replace, the fsyncs, the error log. Main thread only.
 */
#ifndef CT_OPS_PERSIST_H
#define CT_OPS_PERSIST_H

struct ct_cache;

/* Load the snapshot at PATH into CACHE, then remove it (a snapshot is loaded
 * once: were it kept, a crash later would bring back objects purged since).
 * A missing file is a cold start; a refused one too (both logged, with the
 * reason); leftover temporary files of a stop that did not finish writing are
 * removed. Never fails the start. */
void ct_persist_load(struct ct_cache *cache, const char *path);

/* Write CACHE to PATH: a temporary file in PATH's directory (mode 0600),
 * fsync, rename over PATH, fsync of the directory, so PATH is the old
 * snapshot or the new one, never a part. BUILD names the writer in the
 * header. On an error (disk full...) it is logged, the temporary file
 * removed, PATH left as it was; returns CT_OK or CT_EIO. */
int ct_persist_save(struct ct_cache *cache, const char *path, const char *build);

#endif /* CT_OPS_PERSIST_H */
