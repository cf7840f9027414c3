/* uploads.h — output files uploaded under a lease that no result claimed
 * yet (docs/protocol.md, "Output files"; docs/security.md, "Unclaimed
 * uploads"). Part of the scheduling core (c->lock as core.c). Private to
 * server/.
 *
 * An upload (PUT /v1/results/{n}/files/{sha256}) is hashed, fsync'd and
 * renamed into DB.files/<sha256> as before, but it is not recorded in the
 * store (no `files` row, no J_FILE) until a result of its lease names it:
 * cairn__outputs_check records it then, journaled before the result that
 * names it. Until then it is held in memory only: in its lease's list
 * (mlease.up) and, once per lease holding it, in c->uploads. When a lease
 * ends (returned, expired, revoked by a cancel, a ban or a new round: every
 * path goes through drop_lease), each of its files that no other live lease
 * holds and that the master does not record (with bytes: a `files` row not
 * marked kept-on-workers) leaves DB.files/ with its chunk digests. Nothing
 * recorded is removed here: a file a job, a result or a kept output names
 * has its row (store.c's S_FILE_REFERENCED decides those, through job
 * deletion only).
 *
 * Crash safety needs no new record: after a stop (kill -9 included), a
 * stored file without a `files` row is an upload no result claimed (or a
 * file whose row a job's deletion removed before its bytes went), so the
 * start-up sweep (cairn__uploads_sweep, before serving) removes it, and
 * the temporary files of interrupted uploads. While leases loaded at
 * start-up are still live, such a file is kept instead, as an orphan (no
 * lease holds it; which lease stored it is not known): a result of any
 * lease may name it (its name is its SHA-256, checked when it was stored),
 * and it is recorded then; the orphans no result claimed leave when the
 * last of those leases would have expired (cairn__uploads_orphans_end), so
 * a kill -9 loses no acknowledged upload and leaks none.
 */
#ifndef CAIRN_SERVER_UPLOADS_H
#define CAIRN_SERVER_UPLOADS_H

#include <stdint.h>

#include "server/core/core.h"

/* One file held by live leases: its digest, size, and the leases holding it. */
typedef struct cairn__upl {
  char sha256[65];
  int64_t size;
  uint32_t refs;
  uint8_t orphan;  /* found at start-up, held by no lease until one's result names it */
} cairn__upl;

/* The upload of sha256 (size bytes) under lease idx of volunteer vol was
 * renamed into DB.files/: it is held for the lease. CAIRN_ECONFLICT (409)
 * when the lease ended meanwhile (the file is removed unless something
 * else holds or records it) or the file is gone (a job's deletion removed
 * it as it arrived); *existed when the master had it already. Takes the
 * lock: O(files of the lease) <= CAIRN_MAX_OUTPUT_FILES, one stat and at
 * most one unlink. */
cairn_status cairn__core_upload_stored(cairn__core *c, int64_t vol, int64_t idx,
                                       const char *sha256, int64_t size, int *existed,
                                       cairn_error *err);
/* Under c->lock: lease l ends (drop_lease). Its volunteer's bytes in flight
 * lose l's; each of its files no other lease holds and the master does not
 * record leaves DB.files/ (one unlink of the file and one of its chunk
 * digests each). O(files of l) <= CAIRN_MAX_OUTPUT_FILES = 256 lookups and
 * unlinks; l->up is freed. */
void cairn__uploads_lease_end(cairn__core *c, mlease *l);
/* Under c->lock: the size of sha256 as uploaded under l, or -1 when l holds
 * no such upload. O(files of l). */
int64_t cairn__uploads_of(cairn__core *c, const mlease *l, const char *sha256);
/* Under c->lock: 1 when a live lease holds sha256 unclaimed. O(1). */
int cairn__uploads_held(cairn__core *c, const char *sha256);
/* Start-up, before serving: removes from DB.files/ each file the master
 * does not record with bytes, the temporary files of interrupted uploads
 * and imports, and from DB.files/.chunks/ the digests of files it does not
 * record. One pass over each folder, O(its entries), the lock taken for
 * each entry's O(1) lookup. CAIRN_EIO when DB.files/ cannot be read. */
cairn_status cairn__uploads_sweep(cairn__core *c, cairn_error *err);
/* Under c->lock, from the lease checker: once now passes the last expiry
 * of the leases loaded at start-up, the orphans no result claimed leave
 * DB.files/. O(1) before then; once, O(the map's capacity) then. */
void cairn__uploads_orphans_end(cairn__core *c, int64_t now);
/* Frees c->uploads (at close; the leases free their lists). */
void cairn__uploads_free(cairn__core *c);

#endif
