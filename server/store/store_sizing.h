/* store_sizing.h — the store's side of tasks that size themselves
 * (0029_autosize.sql; docs/jobs.md, "Automatic sizes"): a result's
 * measurements and sizes (results' columns), each task's sizing
 * (task_sizing) and each category's largest measurements
 * (category_peaks): their journal records, their loads at start-up, their
 * part of a job's deletion and the two reads of the task views
 * (store_sizing.c). Private to server/.
 *
 * Records copy what they are given (journal.h's rule) and are written by
 * the commit thread in the group of the change they come with; a result's
 * measurements after its result's own record (they update its row). Loads
 * run on the writer connection before serving; reads on the reader
 * connection under its lock. */
#ifndef CAIRN_STORE_SIZING_H
#define CAIRN_STORE_SIZING_H

#include <stdint.h>

#include "common/autosize.h"
#include "server/store/journal.h"
#include "server/store/store.h"

/* ---- journal records (NULL only when out of memory) ---- */
/* The sizing rows of a job's tasks: n tasks, the i-th at position seq[i]
 * with flags[i] (CAIRN_SIZE_*) and the category labels[cat[i]] (nlabels
 * of them); its task keys are set under the lock by
 * cairn__jrec_sizing_keys (task seq's key: first_key + seq). */
cairn__jrec *cairn__jrec_sizing_tasks(uint32_t n, const uint32_t *seq, const uint8_t *flags,
                                      const uint8_t *cat, const char *const *labels,
                                      uint32_t nlabels);
void cairn__jrec_sizing_keys(cairn__jrec *r, int64_t first_key);
/* Task key now asks for grow_mem, grow_disk MiB after kills (0: none). */
cairn__jrec *cairn__jrec_sizing_grow(int64_t key, int64_t grow_mem, int64_t grow_disk);
/* Category label of job job measured p (upsert). */
cairn__jrec *cairn__jrec_sizing_peak(int64_t job, const char *label, const cairn__peak *p);
/* Result idx's measurements u, the memory and disk limits the master
 * sized it to (< 0: none) and the MiB its failure made its task ask for
 * (< 0: none). Put after the result's record. */
cairn__jrec *cairn__jrec_sizing_usage(int64_t idx, const cairn__usage *u, int64_t sized_mem,
                                      int64_t sized_disk, int64_t retry_mib);

/* What jrec.c needs of these records: the kind J_SIZING carries one. */
struct cairn__zrec;
cairn_status cairn__zrec_apply(cairn__store *s, const struct cairn__zrec *p, cairn_error *err);
void cairn__zrec_free(struct cairn__zrec *p);
void cairn__zrec_keys(struct cairn__zrec *p, int64_t first_key);

/* ---- a job's deletion (store_life.c, in its steps' transactions) ---- */
/* The task_sizing rows of task keys [lo, hi). */
cairn_status cairn__store_sizing_delete_range(cairn__store *s, int64_t lo, int64_t hi,
                                             cairn_error *err);
/* The category_peaks rows of job. */
cairn_status cairn__store_sizing_delete_job(cairn__store *s, int64_t job, cairn_error *err);

/* ---- start-up (writer connection, before serving); cb returns non-zero
 * to stop with CAIRN_ENOMEM ---- */
typedef struct cairn__store_tsize_row {
  int64_t task, grow_mem, grow_disk;
  int flags;
  const char *category;
} cairn__store_tsize_row;
typedef struct cairn__store_peak_row {
  int64_t job;
  const char *category;
  cairn__peak peak;
} cairn__store_peak_row;
/* Every task_sizing row of a live (or cancelled) job, by task key. */
cairn_status cairn__store_load_task_sizing(cairn__store *s,
                                          int (*cb)(void *, const cairn__store_tsize_row *),
                                          void *ud, cairn_error *err);
/* Every category_peaks row of a live (or cancelled) job. */
cairn_status cairn__store_load_peaks(cairn__store *s,
                                    int (*cb)(void *, const cairn__store_peak_row *), void *ud,
                                    cairn_error *err);

/* ---- reads (reader connection, under its lock; never c->lock) ---- */
/* A result's measurements and sizes: key is its index (task reads) or its
 * task's position in its job (job reads); a field < 0: NULL. */
typedef struct cairn__store_usage_row {
  int64_t key;
  cairn__usage usage;
  double cpu_seconds;
  int64_t sized_mem, sized_disk, retry_mib;
} cairn__store_usage_row;
/* Every result of task key that has one of them (index results_task:
 * O(its results)). */
cairn_status cairn__store_task_usage(cairn__store *s, int64_t key,
                                    int (*cb)(void *, const cairn__store_usage_row *), void *ud,
                                    cairn_error *err);
/* The accepted (or last failed) result of each task of job with position
 * in [from, to), in position order (as cairn__store_job_results: O(to -
 * from)). */
cairn_status cairn__store_job_usage(cairn__store *s, int64_t job, int64_t from, int64_t to,
                                   int (*cb)(void *, const cairn__store_usage_row *), void *ud,
                                   cairn_error *err);

#endif
