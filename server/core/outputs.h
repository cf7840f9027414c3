/* outputs.h — the core's output files (part of the scheduling core, under
 * c->lock like core.c; docs/jobs.md "Outputs", docs/protocol.md "Output
 * files"): what each task declares, which parents' files it reads, the
 * files of its accepted result, uploads under a lease, and the checks on a
 * result that names files. Private to server/. */
#ifndef CAIRN_SERVER_OUTPUTS_H
#define CAIRN_SERVER_OUTPUTS_H

#include <jansson.h>
#include <stdint.h>

#include "plan/jobspec.h"
#include "common/outputs.h"
#include "server/core/core.h"


/* Moves st's outputs and pins into t->io (left NULL when it has neither).
 * 0, or -1 out of memory. */
int cairn__tio_from_spec(mtask *t, cairn__jobspec_task *st);
void cairn__tio_free(cairn__tio *io);
/* Adds task i's task_io row to job record r (returns r; NULL-safe). */
cairn__jrec *cairn__tio_record(cairn__jrec *r, uint32_t i, const cairn__tio *io);
/* Start-up: reads task_io rows and the accepted results' files. by_key maps
 * a task key to ((job id) << 32 | seq) as load.c builds it. */
cairn_status cairn__outputs_load(cairn__core *c, cairn__hmap *by_key, cairn_error *err);

/* Under c->lock. Adds to the work offer of lease l: "outputs" (the task's
 * patterns) and "keep": "workers" when its files stay on l's volunteer
 * (keep.c) to task_obj, and one input per parent's file read, {"name":
 * "PARENT/FILE", "parent", "file", "sha256", "size", "url"}, with
 * "sources" for a job that keeps outputs on workers, to inputs. O(pins ×
 * (their parents' files + CAIRN__KEEP_SCAN)). */
void cairn__outputs_offer(cairn__core *c, const mlease *l, json_t *task_obj, json_t *inputs);
/* Under c->lock: 1 when task v of j reads sha256 as a parent's output file.
 * O(pins × files of each parent). */
int cairn__outputs_reads(const mjob *j, uint32_t v, const char *sha256);
/* Under c->lock: checks the files a result names for lease l (exit status
 * es): each matches one of the task's patterns and fits its cap per file
 * (CAIRN_ETOOBIG otherwise), was uploaded (under l with that size, or is
 * recorded in the file store with that size) or, when l's task keeps its
 * outputs on the worker (keep.c), is kept there (recorded then, with the
 * volunteer as its holder), and, when es == 0, every pattern without a
 * wildcard was named. CAIRN_EINVAL naming the file. A named file uploaded
 * under l is then recorded (J_FILE, uploads.h), and one that a job's
 * deletion is removing is recorded again, so it stays.
 * O(files × (patterns + uploads of l)), the uploads at most 256. */
cairn_status cairn__outputs_check(cairn__core *c, const mlease *l, int es,
                                  const cairn__output_file *files, size_t n, cairn_error *err);
/* Under c->lock: task t's accepted result cn named these files. 0, -1 OOM.
 * The chunk digests cn's volunteer reported of each kept file become the
 * ones served, those of t's other results are removed (chunks.h): one
 * rename or unlink a file and result, O(files × results of t). */
int cairn__outputs_accepted(cairn__core *c, mtask *t, const mres *cn,
                            const cairn__output_file *files, size_t n);
/* Under c->lock: volunteer vol's result naming files came after t's
 * accepted one: its chunk digests of kept files are removed. O(files). */
void cairn__outputs_late(cairn__core *c, int64_t vol, const cairn__output_file *files, size_t n);

/* An upload of `declared` bytes for allocation idx by volunteer vol begins
 * (PUT /v1/results/{idx}/files/{sha256}): CAIRN_OK when vol holds the lease,
 * the task declares outputs, the file fits the task's largest cap per file
 * and server_cap (bytes; 413 otherwise), the lease's budget
 * (CAIRN_OUTPUT_LEASE_FACTOR × the cap per file, CAIRN_MAX_OUTPUT_FILES
 * uploads; 413) and vol_cap, the bytes all of vol's live leases may have
 * announced (mvol.up_bytes; CAIRN_ERATE, 429 otherwise: the room comes
 * back as its leases end, uploads.h), which it then counts. Takes the
 * lock; O(1) + O(patterns). */
cairn_status cairn__core_output_upload(cairn__core *c, int64_t vol, int64_t idx,
                                       uint64_t declared, int64_t server_cap, int64_t vol_cap,
                                       cairn_error *err);
/* The stored file (sha256, size) named `name` by the accepted result of
 * task `task` of job `job` (from the store, not under the lock).
 * CAIRN_ENOTFOUND when there is none. */
cairn_status cairn__core_output_file(cairn__core *c, int64_t job, const char *task,
                                     const char *name, char sha256[65], int64_t *size,
                                     cairn_error *err);

#endif
