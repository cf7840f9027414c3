/* cache.h — the content-addressed input cache DIR/cache/<sha256>.
 *
 * A file enters the cache only after its SHA-256 (and size, when known) was
 * checked: it is downloaded to DIR/cache/.tmp-*, verified while it arrives,
 * made read-only and renamed into place. A present file is reused without
 * download only when it still holds the bytes of its digest (verify.h:
 * hashed again unless unchanged since its last check); one that does not is
 * removed (logged at warn) and downloaded again. Tasks get copies, never
 * the cached file itself (taskdir.h). Safe for concurrent use by several threads
 * and processes sharing DIR (rename is atomic). Private to worker/.
 */
#ifndef CAIRN_CACHE_H
#define CAIRN_CACHE_H

#include <stdatomic.h>

#include "common/error.h"
#include "common/log.h"
#include "worker/relay.h"
#include "worker/transport.h"
#include "worker/verify.h"

typedef struct cairn__cache {
  char *dir;
  atomic_ulong counter;  /* temp file names */
  cairn__verify *verified;  /* owned: files checked since their last change */
  const cairn__logger *log;      /* borrowed: the worker's (NULL: stderr); set after init */
  cairn__relay *relay;      /* owned: downloads the peer server may relay (relay.h) */
} cairn__cache;

/* Creates dir if needed and removes temp files left by a crash. */
cairn_status cairn__cache_init(cairn__cache *c, const char *dir, cairn_error *err);
void cairn__cache_destroy(cairn__cache *c);

/* Path of the cached file for sha256 (caller frees), or NULL on OOM. */
char *cairn__cache_path(const cairn__cache *c, const char *sha256);

/* Calls fn(ud, sha256) for every file in the cache that holds the bytes of
 * its digest: each is hashed now unless unchanged since its last check
 * (verify.h), so that a worker hashes the files it finds at start once,
 * before it announces or serves them; one that does not match is removed
 * (logged at warn). Returns CAIRN_OK, or CAIRN_EIO when the directory
 * cannot be read. */
cairn_status cairn__cache_each(const cairn__cache *c, void (*fn)(void *ud, const char *sha256),
                               void *ud, cairn_error *err);

/* Makes sure DIR/cache/<sha256> holds the verified file, downloading it
 * from url through h when missing or no longer matching its digest (size
 * < 0: unknown, capped at CAIRN_MAX_FILE; a larger answer is refused and
 * nothing is stored). On success *path is
 * the cached file (caller frees). Returns:
 *   CAIRN_OK;
 *   CAIRN_EIO        no answer, 429 or 5xx: may work later;
 *   CAIRN_EINVAL     content did not match sha256/size (nothing was kept);
 *   CAIRN_ENOTFOUND  404; CAIRN_EFORBIDDEN 401/403; CAIRN_ETOOBIG over size.
 * *status is the HTTP status (0 when none: with CAIRN_OK, a cache hit;
 * 200 with CAIRN_OK: downloaded now). *reason (may be NULL) says whether
 * url is to blame for a failure: a CAIRN_FAIL_* reason of common/protocol.h
 * (see cairn__http_download_fault(); a copy whose length is not size is
 * CAIRN_FAIL_SIZE, even when its digest is wrong too), or -1 on success and
 * on a local failure (memory, the cache directory, cancelled). */
cairn_status cairn__cache_fetch(cairn__cache *c, cairn__http *h, const char *sha256,
                                long long size, const char *url, char **path, long *status,
                                int *reason, cairn_error *err);

/* Moves the file at path, whose bytes the caller has just hashed to
 * sha256, into the cache as DIR/cache/<sha256> (read-only; renamed, so
 * path must be on the cache's file system): a task's output file kept on
 * this worker (docs/worker.md, "Outputs kept on workers"). Its stamp is
 * recorded as verified (verify.h), as for a download: a change after it
 * makes the peer server hash it again. When the cache already holds
 * sha256, path is removed instead. CAIRN_OK, or CAIRN_EIO (path is left). */
cairn_status cairn__cache_adopt(cairn__cache *c, const char *path, const char *sha256,
                                cairn_error *err);
/* A download broken off after checked chunks, kept so that the next source
 * goes on from its last checked chunk instead of byte 0: its temporary file
 * and its registration in the relay registry (which knows how far it was
 * checked, and keeps relaying it meanwhile). Owned by the caller of
 * cairn__cache_fetch_chunked(): zeroed before the first call, ended with
 * cairn__cache_partial_end() once no source is left (a call that succeeds,
 * or finds the file cached, ends it itself). */
typedef struct cairn__partial {
  char *tmp;
  cairn__relay_in *in;
} cairn__partial;

/* Ends part: its relays end with an error, its file is removed. */
void cairn__cache_partial_end(cairn__partial *part);
/* The byte the next source of part is asked from (0: none kept, or NULL).
 * The downloading thread only. */
unsigned long long cairn__cache_partial_at(cairn__partial *part);

/* cairn__cache_fetch(), checking each chunk of the download against chunks
 * (the master's digests of the file, of size bytes) as it arrives and
 * registering it in c->relay meanwhile, so that the peer server may relay
 * the checked chunks (relay.h). A chunk that does not match ends the
 * download at once: CAIRN_EINVAL, *reason CAIRN_FAIL_DIGEST. chunks NULL:
 * cairn__cache_fetch() itself.
 * part (may be NULL): a download that fails after a checked chunk (broken,
 * stalled, a later chunk wrong; not a whole answer with wrong bytes) is
 * kept in it, and a call with a kept one asks url for the rest only
 * (cairn__http_download_at(): a source that ignores Range is read from byte
 * 0), the whole file still checked against sha256 at the end. */
cairn_status cairn__cache_fetch_chunked(cairn__cache *c, cairn__http *h, const char *sha256,
                                        long long size, const char *url,
                                        const cairn__chunklist *chunks, cairn__partial *part,
                                        char **path, long *status, int *reason,
                                        cairn_error *err);

#endif
