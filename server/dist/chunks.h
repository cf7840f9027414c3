/* chunks.h — each stored file's chunk digests (docs/protocol.md, "Cut-through
 * relays"): the SHA-256 of every CAIRN_CHUNK_SIZE bytes of DB.files/<sha256>,
 * kept beside it as DB.files/.chunks/<sha256> (32 bytes a chunk, at most
 * CAIRN_MAX_CHUNKS of them: 128 KiB). A worker checks each chunk it receives
 * against them before it relays the chunk to a peer.
 *
 * An output kept on a worker (the master has none of its bytes) has the
 * list its producer reported in its result (feature "kept_chunks"): each
 * reporting volunteer's list is written first as
 * DB.files/.chunks/<sha256>.<volunteer id> (fsync'd before the result is
 * taken), and the accepted result's becomes DB.files/.chunks/<sha256> (one
 * rename); the other results' are removed when the task is accepted.
 *
 * Owns: the folder DB.files/.chunks. Written when a file is stored
 * (cairn__files_commit), read (and written first when missing, for a file
 * stored before) by GET /v1/files/{sha256}/chunks; never under c->lock
 * except cairn__chunks_remove and cairn__chunks_settle (one unlink or
 * rename each). Private to server/.
 */
#ifndef CAIRN_CHUNKS_H
#define CAIRN_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Hashes the stored file dir/sha256 (size bytes) chunk by chunk and writes
 * dir/.chunks/sha256 (written to a temporary file, renamed into place).
 * Returns 0, or -1 when the file cannot be read or the list written. Reads
 * the whole file once: O(size). */
int cairn__chunks_write(const char *dir, const char *sha256, int64_t size);

/* The answer of GET /v1/files/{sha256}/chunks for the stored file dir/sha256
 * of size bytes: {"sha256", "size", "chunk_size", "chunks": [hex, …]} in
 * *body (caller frees), *len its length. Reads dir/.chunks/sha256, or writes
 * it first when it is missing or of the wrong length. CAIRN_EIO when the
 * file cannot be read, CAIRN_ENOMEM. O(size / CAIRN_CHUNK_SIZE), O(size)
 * the first time. kept: a file kept on workers, whose list is only read
 * (CAIRN_ENOTFOUND when its producer reported none). */
cairn_status cairn__chunks_json(const char *dir, const char *sha256, int64_t size, int kept,
                                char **body, size_t *len, cairn_error *err);

/* Writes volunteer vol's list d (n digests) of kept output sha256 to
 * dir/.chunks/sha256.vol, fsync'd. 0, or -1 when it cannot be written.
 * O(n). */
int cairn__chunks_put_kept(const char *dir, const char *sha256, int64_t vol,
                           const unsigned char *d, size_t n);
/* The result of volunteer vol naming kept output sha256 was accepted: its
 * list becomes the one served (returns 1), or, when it reported none, no
 * list is served any more; else (accepted 0) its list is removed. One
 * rename or two unlinks. */
int cairn__chunks_settle(const char *dir, const char *sha256, int64_t vol, int accepted);

/* Removes dir/.chunks/sha256 (its file was removed). */
void cairn__chunks_remove(const char *dir, const char *sha256);

#endif
