/* size.h — tasks that size themselves, in the master (docs/jobs.md,
 * "Automatic sizes"; the policy is common/autosize.h's): each job's
 * categories and their largest measurements (mjob.cats), each task's sizing
 * (mtask.sz), the request and the memory and disk limits of an allocation,
 * and what a result changes: its measurements raise its category's peaks,
 * and a kill for memory (disk) of a task that sizes itself or retries
 * larger doubles what its next attempts get, without counting the attempt.
 * Part of the scheduling core: every function runs under c->lock and
 * costs O(1), or O(the job's categories <= CAIRN_MAX_CATEGORIES) where it
 * says so, but those marked "before the job is shared", "outside the lock"
 * or "at start-up". */
#ifndef CAIRN_SIZE_H
#define CAIRN_SIZE_H

#include "server/core/core.h"

/* What one allocation of a task asks for and runs under. */
typedef struct cairn__tsize {
  cairn__resources req;      /* its request: held on its worker (fit.h) */
  int32_t mem_mib, disk_mib; /* the memory_mib and disk_mib limits it runs under (0: none) */
  int sized;                 /* the master set them: the offer's "limits" say so */
  int whole;                 /* req is the asking volunteer's whole offer (its category
                                not measured yet): not to be taken ahead of a free slot */
} cairn__tsize;

/* What a result changed, for its journal records (cairn__size_journal). */
typedef struct cairn__size_note {
  const mjob *job;
  uint32_t task;
  cairn__usage usage;          /* its measurements (fields < 0: none) */
  int64_t sized_mem, sized_disk; /* the limits the master sized it to (< 0: none) */
  int64_t retry_mib;           /* what its failure made the task ask (< 0: none) */
  int peak, grew;              /* its category's peaks rose; its task grew */
} cairn__size_note;

/* Before the job is shared: j's categories (spec's labels) and the sizing
 * of each of its tasks that sizes itself, retries larger or has a category
 * of its own (its own memory and disk limits from spec). O(tasks). 0, or
 * -1 out of memory. */
int cairn__size_job_init(mjob *j, const cairn__jobspec *spec);
/* Before the job is shared: the task_sizing rows of j's sized tasks as a
 * record whose keys cairn__jrec_sizing_keys sets under the lock; NULL with
 * *none = 1 when it has none, NULL with *none = 0 out of memory. O(tasks). */
cairn__jrec *cairn__size_job_record(const mjob *j, int *none);
/* Frees j's categories and its tasks' sizing (cairn__job_free). */
void cairn__size_job_free(mjob *j);

/* Task v of j allocated to vol: its request and limits now. O(1). */
void cairn__size_of(const cairn__core *c, const mjob *j, uint32_t v, const mvol *vol,
                    cairn__tsize *out);
/* Sets a work offer's "limits" memory_mib and disk_mib to the sizes lease
 * l runs under, when the master sized them. O(1). */
void cairn__size_offer(const mlease *l, json_t *task);

/* The result of lease l (before it is dropped): ok, or the failure's
 * reason. Notes its measurements in its category's peaks (a successful
 * run); grows its task after a kill for memory or disk (size.c says
 * when). *n: what to journal. Returns 1 when the task grew: the attempt is
 * not to count (the caller takes it off the task's attempts). O(1). */
int cairn__size_result(cairn__core *c, const mlease *l, int ok, const char *reason,
                       const cairn__result_extra *x, cairn__size_note *n);
/* Lease l returns a result and frees what it requested on its volunteer:
 * when that is more than one core (a task sized to a whole offer, or any
 * request of several cores), wakes as many more held work requests for
 * its job's app as the cores beyond the one its result's chained task
 * takes, at most the job's eligible tasks (a held request is woken by
 * tasks that become eligible, not by room that frees up; wake.c). O(1). */
void cairn__size_freed(cairn__core *c, const mlease *l);
/* Puts n's records (after the result's record of index idx). O(1). */
void cairn__size_journal(cairn__core *c, int64_t idx, const cairn__size_note *n);

/* GET /v1/jobs/{id}: adds "categories" to o. O(categories). */
void cairn__size_job_json(const cairn__core *c, const mjob *j, json_t *o);
/* GET /v1/jobs/{id}/tasks/{key}: adds the task's "resources" ("auto"),
 * "category", "retry_larger" and "grown" to o. O(1). */
void cairn__size_task_json(const mjob *j, uint32_t v, json_t *o);
/* Outside the lock: adds each measured or sized attempt's "usage",
 * "sized" and "retry" to history (a task view's attempts, by "index"),
 * from the store. O(its attempts + its results). */
cairn_status cairn__size_history(cairn__core *c, int64_t key, json_t *history, cairn_error *err);
/* Outside the lock: adds "usage" and "cpu_seconds" of the result each
 * task of tasks shows (a page of GET /v1/jobs/{id}/tasks: tasks[i] is the
 * job's task at position start + i), from the store. O(the page). */
cairn_status cairn__size_page(cairn__core *c, int64_t job, uint32_t start, json_t *tasks,
                              cairn_error *err);

/* At start-up, after the tasks (by_key: a task's key to (job index + 1)
 * << 32 | its position) and before their allocations: every job's
 * categories, its tasks' sizing and the peaks. */
cairn_status cairn__size_load(cairn__core *c, const cairn__hmap *by_key, cairn_error *err);

#endif
