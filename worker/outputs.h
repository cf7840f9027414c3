/* outputs.h — a task's output files and stderr tail on the worker
 * (docs/worker.md, "Output files"). After the app exits, before the task
 * directory is emptied: the last CAIRN_STDERR_TAIL bytes of DIR/stderr are
 * kept (not read when it is not a regular file with one link on the
 * directory's device: a note says so); on exit status 0 the files matching
 * the task's "outputs" patterns are collected (glob(3) on the escaped
 * directory prefix; regular files only, no symlink, resolved path inside
 * the directory; opened without following a link and checked on the open
 * descriptor: one link, the directory's device, so that a hard link to a
 * file elsewhere is refused; the worker's own stderr, inputs/ and parents/
 * are never outputs), hashed from that descriptor, and uploaded
 * streamed with PUT /v1/results/{index}/files/{sha256}, transient failures
 * retried. A required output (a pattern without wildcard) missing, a file
 * over its pattern's cap, or an upload refused for good turn the attempt
 * into a failure (exit status 125) whose stderr tail ends with a
 * "cairn-worker: ..." line naming the file. Private to worker/.
 */
#ifndef CAIRN_WORKER_OUTPUTS_H
#define CAIRN_WORKER_OUTPUTS_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/outputs.h"
#include "worker/cache.h"
#include "worker/session.h"
#include "worker/stopper.h"
#include "worker/task.h"

/* What a result carries besides its output (owned; cairn__outputs_free). */
typedef struct cairn__outputs {
  cairn__buf err_tail;          /* the stderr tail, capped at CAIRN_STDERR_TAIL */
  cairn__output_file *files;    /* uploaded, in name order */
  size_t nfiles;
  /* chunks[i]: the chunk digests of files[i] when it is kept and the
   * master lists "kept_chunks" (a JSON array, owned), else NULL; nchunks
   * entries (the files collected, kept when nfiles drops to 0) */
  json_t **chunks;
  size_t nchunks;
} cairn__outputs;

/* Reads dir/stderr's tail into o (when dir has one). Then, when
 * *exit_status is 0 and t declares outputs: collects, hashes and uploads
 * them for t->index through c; or, when the offer said "keep": "workers",
 * the master lists the feature "keep" and cache is not NULL, moves each
 * into cache (cairn__cache_adopt) and tells s's peer state it holds it,
 * uploading only a file that could not be kept. Returns CAIRN_OK (with *exit_status set to
 * 125 and the reason appended to the tail when an output is missing, too
 * large, unsafe or refused), or CAIRN_EIO when cancel stopped an upload
 * (the result is to be dropped). */
cairn_status cairn__outputs_gather(cairn__outputs *o, cairn__session *s, cairn__conn *c,
                                   cairn__cache *cache, const char *dir, const cairn__task *t,
                                   int *exit_status, const cairn__cancel *cancel);
void cairn__outputs_free(cairn__outputs *o);

/* Collects the files under dir that match p (see above) into *files, *n
 * (caller frees), hashed. CAIRN_OK; CAIRN_EINVAL with err naming a missing
 * required output, a file over its cap or an unsafe match; CAIRN_EIO when
 * a file cannot be read. */
cairn_status cairn__outputs_collect(const char *dir, const cairn__output_patterns *p,
                                    cairn__output_file **files, size_t *n, cairn_error *err);

#endif
