/* taskdir.h — the directory a task runs in (docs/protocol.md, "Worker task
 * directory"): one per slot, DIR/run/slot-<n>/, reused task after task and
 * emptied in between, with inputs/NAME the task's own copy of a verified
 * cache file and
 * parents/ID holding each parent's output, ID encoded so that any task id is
 * one safe file name. Private to worker/.
 *
 * Life of a slot's directory:
 *   init     remove leftovers, create dir/, dir/inputs/, dir/parents/;
 *   prepare  name the task's files; rebuild the directory if it is not
 *            known clean; drop a stale stderr before a callback;
 *   fill     copy inputs from the cache, download parent outputs;
 *   clear    after the task: remove what it left, keep the skeleton;
 *   destroy  remove the directory when the slot ends;
 *   resume   (instead of init) take the directory over as a task left it,
 *            to run that task again (resume.h); leave (instead of destroy)
 *            keeps it for the next start.
 */
#ifndef CAIRN_TASKDIR_H
#define CAIRN_TASKDIR_H

#include <stddef.h>

#include "common/error.h"
#include "common/log.h"
#include "worker/cache.h"
#include "worker/peerstate.h"
#include "worker/stopper.h"
#include "worker/task.h"
#include "worker/transport.h"

typedef struct cairn__taskdir {
  char *dir;             /* DIR/run/slot-<n>, reused by every task of the slot */
  char **input_paths;    /* ninputs: dir/inputs/NAME (the current task's) */
  char **parent_paths;   /* nparents: dir/parents/ENCODED-ID */
  size_t ninputs, nparents;
  int clean;             /* dir holds exactly inputs/ and parents/, both empty,
                            and possibly a regular file stderr (see has_stderr) */
  int has_stderr;        /* dir/stderr is a regular file with one link, kept for
                            the next program to truncate */
  const cairn__logger *log;      /* borrowed: the worker's (NULL: stderr); set after init */
} cairn__taskdir;

/* Encodes a task id as a file name: bytes outside [A-Za-z0-9._,=+-] become
 * %XX (upper-case hex), "." is "%2E" and ".." is "%2E%2E". *out is the new
 * string (caller frees). CAIRN_EINVAL for the empty id, which has no name. */
cairn_status cairn__encode_id(const char *id, char **out, cairn_error *err);

/* 1 if name can be used as is for inputs/NAME: non-empty, no '/', not "."
 * or "..". */
int cairn__input_name_ok(const char *name);

/* Sets up the slot's directory run_root/slot-<slot>: removes whatever is
 * there and creates it with empty inputs/ and parents/. On failure d->dir
 * is still set and d is marked unclean, so that the next prepare() tries
 * again. */
cairn_status cairn__taskdir_init(cairn__taskdir *d, const char *run_root, size_t slot,
                                 cairn_error *err);

/* Takes over run_root/slot-<slot> as it is, for a task run again in it
 * (resume.h): what the task left stays; inputs/ and parents/ are created
 * when missing. CAIRN_EIO when it is not a directory one can use (d is
 * then unclean: the next prepare() rebuilds it). */
cairn_status cairn__taskdir_resume(cairn__taskdir *d, const char *run_root, size_t slot,
                                   cairn_error *err);

/* Frees d and leaves its directory as it is (a task kept for the next
 * start, resume.h). Accepts a zeroed struct. */
void cairn__taskdir_leave(cairn__taskdir *d);

/* Gets the directory ready for task t: computes the paths of its inputs and
 * parents (CAIRN_EINVAL for an input name or parent id that cannot be a
 * file name) and makes sure the directory holds exactly empty inputs/ and
 * parents/, rebuilding it when the last clear() could not. For a program
 * (program != 0) a leftover stderr file is kept: the runner truncates it;
 * for a callback it is removed. No file-system call is made when the
 * directory is known clean and holds no stderr. */
cairn_status cairn__taskdir_prepare(cairn__taskdir *d, const cairn__task *t, int program,
                                    cairn_error *err);
/* The inputs of one task fetched at once, at most. One fetch at a time
 * leaves the worker's link idle while a source is slow to start or sends
 * slowly (a relay still receiving the file, a distant peer), and the
 * master counts a copy as under way for every input from the hand-out; a
 * few at a time keep several sources busy, while each extra fetch costs a
 * thread, a connection, a curl handle and a temporary file only, so a
 * task's memory and fds stay small. Measured (docs/dataflow.md, "With a
 * task's inputs fetched at once"), a 16-input shuffle over 100 Mbit/s
 * uplinks: 2 at a time took 13% less than one after the other, 4 at a
 * time 1.3-1.7 times more (each file crossing into a cluster shares its
 * uplink with more copies, and the relays other workers wait on slow). */
#define CAIRN__FETCH_PARALLEL 2

/* Fetches every input (through the cache, from its sources: peers first,
 * the master's /v1/files/<sha256> last, see fetch.h; peers, which may be
 * NULL, hears of new holdings) and every parent
 * output (capped at the output limit) into the directory. A task with
 * more than one input has them fetched by up to CAIRN__FETCH_PARALLEL
 * threads, each on its own clone of h (cairn__http_clone()), joined before
 * return; the first input that fails stops the others (their transfers
 * abort) and its error is the one returned ("input NAME: ..."). Parents'
 * outputs come one after the other, on h, after the inputs. Transient
 * failures are retried with backoff until cancel says stop (the caller
 * makes h's transfers abort on cancel too, see cairn__http_set_cancel()).
 * A parent url that cairn__url_allowed() refuses fails the task before
 * anything is fetched. Returns CAIRN_OK; CAIRN_EIO when cancelled; any
 * other status is a permanent failure explained in err. */
cairn_status cairn__taskdir_fill(cairn__taskdir *d, const cairn__task *t, cairn__cache *cache,
                                 cairn__http *h, cairn__peerstate *peers,
                                 const cairn__cancel *cancel, cairn_error *err);

/* Empties the directory after a task: removes what the task left in it
 * (input copies, parent outputs, anything the app wrote) but keeps the
 * directory, inputs/, parents/ and a plain stderr file. What cannot be
 * emptied that way is removed and rebuilt; when even that fails the
 * directory is marked unclean (logged) for the next prepare(). */
void cairn__taskdir_clear(cairn__taskdir *d);

/* Removes the directory tree and frees everything (logs a warning when the
 * tree cannot be removed). Accepts a zeroed struct. */
void cairn__taskdir_destroy(cairn__taskdir *d);

#endif
