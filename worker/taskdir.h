/* taskdir.h — the directory a task runs in (docs/protocol.md, "Worker task
 * directory"): DIR/run/<index>/ with inputs/NAME linked from the verified
 * cache and parents/ID holding each parent's output, ID encoded so that any
 * task id is one safe file name. Private to worker/.
 */
#ifndef CAIRN_TASKDIR_H
#define CAIRN_TASKDIR_H

#include <stddef.h>

#include "common/error.h"
#include "worker/cache.h"
#include "worker/peerstate.h"
#include "worker/stopper.h"
#include "worker/task.h"
#include "worker/transport.h"

typedef struct cairn__taskdir {
  char *dir;             /* DIR/run/<index> */
  char **input_paths;    /* ninputs: dir/inputs/NAME */
  char **parent_paths;   /* nparents: dir/parents/ENCODED-ID */
  size_t ninputs, nparents;
} cairn__taskdir;

/* Encodes a task id as a file name: bytes outside [A-Za-z0-9._,=+-] become
 * %XX (upper-case hex), "." is "%2E" and ".." is "%2E%2E". *out is the new
 * string (caller frees). CAIRN_EINVAL for the empty id, which has no name. */
cairn_status cairn__encode_id(const char *id, char **out, cairn_error *err);

/* 1 if name can be used as is for inputs/NAME: non-empty, no '/', not "."
 * or "..". */
int cairn__input_name_ok(const char *name);

/* Creates a fresh run_root/<index> (removing any leftover) with empty
 * inputs/ and parents/, and computes the paths of *d. CAIRN_EINVAL for an
 * input name or parent id that cannot be a file name. */
cairn_status cairn__taskdir_create(const char *run_root, const cairn__task *t,
                                   cairn__taskdir *d, cairn_error *err);

/* Fetches every input (through the cache, from its sources: peers first,
 * the master's /v1/files/<sha256> last, see fetch.h; peers, which may be
 * NULL, gives the peer token and hears of new holdings) and every parent
 * output (capped at the output limit) into the directory. Transient
 * failures are retried with backoff until cancel says stop (the caller
 * makes h's transfers abort on cancel too, see cairn_http_set_cancel()).
 * Returns CAIRN_OK; CAIRN_EIO when cancelled; any other status is a
 * permanent failure explained in err. */
cairn_status cairn__taskdir_fill(cairn__taskdir *d, const cairn__task *t, cairn__cache *cache,
                                 cairn_http *h, cairn__peerstate *peers,
                                 const cairn__cancel *cancel, cairn_error *err);

/* Removes the directory tree (logs a warning when it cannot). */
void cairn__taskdir_remove(cairn__taskdir *d);

/* Frees the paths (does not touch the disk). Accepts a zeroed struct. */
void cairn__taskdir_free(cairn__taskdir *d);

#endif
