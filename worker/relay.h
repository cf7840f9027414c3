/* relay.h — files being received that the peer server may already relay
 * (docs/protocol.md, "Cut-through relays").
 *
 * A download that knows the file's chunk digests (GET
 * /v1/files/{sha256}/chunks from the master) registers here with its
 * temporary file; as its bytes are written it checks each chunk
 * (CAIRN_CHUNK_SIZE bytes, the last one shorter) against its digest and
 * moves the file's verified length to the end of that chunk. The peer
 * server reads a registered file only below its verified length, and waits
 * for more; so a peer gets nothing that was not checked, and the cache
 * gets the file only when its whole SHA-256 matched (cache.h). A chunk
 * that does not match ends the download at once (the source is to blame:
 * "digest"); a download that fails for any reason ends every relay of it
 * with an error, and the peers fall back to their other sources.
 *
 * At most one download of a file is registered at once (another one of
 * the same file is checked the same way, unregistered). Thread-safe (one mutex and condition
 * variable, held only for bookkeeping, never during I/O); registrations
 * are a list, at most one per download in progress (the worker's slots).
 * Private to worker/.
 */
#ifndef CAIRN_RELAY_H
#define CAIRN_RELAY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/log.h"

/* A file's chunk digests, as the master lists them. */
typedef struct cairn__chunklist {
  long long size;           /* the file's bytes */
  size_t n;                 /* its chunks: ceil(size / CAIRN_CHUNK_SIZE) */
  unsigned char (*digest)[32];
} cairn__chunklist;

/* Reads an answer of GET /v1/files/{sha256}/chunks for file sha256 of size
 * bytes (size < 0: any) into *out (caller frees with
 * cairn__chunklist_free). CAIRN_EINVAL (err says why) when it is malformed,
 * names another file or size, or has the wrong number of chunks. */
cairn_status cairn__chunklist_parse(const char *body, size_t len, const char *sha256,
                                    long long size, cairn__chunklist *out, cairn_error *err);
void cairn__chunklist_free(cairn__chunklist *l);

typedef struct cairn__relay cairn__relay;       /* the registry */
typedef struct cairn__relay_in cairn__relay_in; /* one download */
typedef struct cairn__relay_rd cairn__relay_rd; /* one relay to a peer */

/* *log is the logger (read at each use; *log NULL: stderr). */
cairn__relay *cairn__relay_new(const cairn__logger *const *log);
/* Frees the registry; nothing may be registered or open any more. Accepts
 * NULL. */
void cairn__relay_free(cairn__relay *r);

/* A download of file sha256 into path (its temporary file), checked
 * against chunks (copied); NULL out of memory. It is registered (the peer
 * server may relay it) at its first checked chunk, so that a source that
 * fails before it sends a right chunk (no answer, 503, a wrong first
 * chunk) ends no relay; not at all while another download of the same file
 * is registered. */
cairn__relay_in *cairn__relay_begin(cairn__relay *r, const char *sha256, const char *path,
                                    const cairn__chunklist *chunks);
/* n more bytes of the download, already written to its file (and flushed):
 * checks each chunk they complete. Returns 0, or -1 when a chunk does not
 * match its digest or bytes pass the size (logged at warn). */
int cairn__relay_data(cairn__relay_in *in, const void *p, size_t n);
/* The download broke off and goes on at another source: forgets the bytes
 * of a chunk not yet checked and returns the verified length (a multiple
 * of CAIRN_CHUNK_SIZE), where it goes on; relays opened meanwhile wait for
 * more as usual. Downloading thread only. */
unsigned long long cairn__relay_rewind(cairn__relay_in *in);
/* The download ended: ok when the whole file arrived, matched its SHA-256
 * and is in the cache (open relays send the rest), else it failed (open
 * relays end with an error). Unregisters and releases in. */
void cairn__relay_end(cairn__relay_in *in, int ok);

/* The registry's generation: it moves at every registration and end. */
unsigned cairn__relay_gen(cairn__relay *r);
/* Waits up to ms milliseconds while the generation is still gen. */
void cairn__relay_wait(cairn__relay *r, unsigned gen, long ms);

/* Opens the registered download of sha256 for a relay to a peer; *size
 * its length. NULL when none is registered (or out of memory). */
cairn__relay_rd *cairn__relay_open(cairn__relay *r, const char *sha256, long long *size);
/* Up to max verified bytes from offset pos into buf, waiting up to
 * stall_ms for them to be verified. Returns the bytes copied (> 0), 0 at
 * the end of the file, or -1 when the download failed, stalled or the file
 * cannot be read. */
ssize_t cairn__relay_read(cairn__relay_rd *rd, uint64_t pos, void *buf, size_t max,
                          long stall_ms);
/* 1 when the download was still running when rd was opened. */
int cairn__relay_was_partial(const cairn__relay_rd *rd);
void cairn__relay_close(cairn__relay_rd *rd);

#endif
