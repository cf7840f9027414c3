/* views.h — the core's read-only views for the API (jobs.c, volunteers.c,
 * outputs.c) and for the tests that drive the core (views.c): copies made
 * under the lock, or reads of the store, for the HTTP layer and the audit
 * read model, which never take the lock themselves. Private to server/. */
#ifndef CAIRN_SERVER_VIEWS_H
#define CAIRN_SERVER_VIEWS_H

#include <jansson.h>

#include "server/model/state.h"

/* ---- read-only views: copies made under the lock, for the HTTP layer and
 * the audit read model, which never take the lock themselves ---- */

/* What the audit shows of a volunteer, and what the tests read of it (a
 * copy). */
typedef struct cairn__vol_info {
  int64_t id, allocations, valid, invalid, pending, errors, last_seen;
  int banned, slots, quarantined, napps;
  int64_t trust;                 /* its valid replicated results in a row (trust.c) */
  int trusted;                   /* not banned and trust >= the threshold */
  unsigned q_seen;               /* outcomes in its quarantine window (quarantine.c) */
  unsigned peer_max;             /* copies its file server sends at once, as its reports
                                    say (0: not said) */
  double credit, cpu_seconds;    /* its credit and claimed CPU seconds (credit.c) */
  int64_t credited;              /* the valid results they sum */
  char name[CAIRN_MAX_NAME + 1], cluster[CAIRN_MAX_NAME + 1];
  char team[CAIRN_MAX_TEAM + 1]; /* "" when none */
} cairn__vol_info;
/* Fills *out with volunteer id; CAIRN_ENOTFOUND when there is none. Takes
 * the lock; O(1). */
cairn_status cairn__core_volunteer(cairn__core *c, int64_t id, cairn__vol_info *out,
                                   cairn_error *err);
/* What the tests read of a task of a job (a copy, views.c). */
typedef struct cairn__task_info {
  int64_t key;
  int64_t accepted;   /* index of the accepted (or last failed) result, 0 if none */
  int64_t round;
  int state;          /* cairn__tstate */
  int attempts;       /* allocations in this round */
  int solo;           /* this round runs once, on a trusted volunteer (trust.c) */
  uint32_t nres;      /* results of this round */
} cairn__task_info;
/* One result of a task's round (a copy). */
typedef struct cairn__res_info {
  int64_t idx, vol;
  int outcome;        /* OUT_* */
  int kept_out;       /* its stdout is kept for a comparison (validate.c) */
  double credit;      /* its granted credit while valid (credit.c) */
} cairn__res_info;
/* Fills *out with the task at position pos (job-file order) of job id, and
 * res[0 .. min(its nres, max)) with the results of its round in arrival
 * order (res may be NULL when max is 0). CAIRN_ENOTFOUND when there is no
 * such job or task. Takes the lock; O(1 + max). */
cairn_status cairn__core_task_info(cairn__core *c, int64_t id, uint32_t pos,
                                   cairn__task_info *out, cairn__res_info *res, uint32_t max,
                                   cairn_error *err);
/* What the tests read of a lease out (a copy, views.c). */
typedef struct cairn__lease_info {
  int64_t job, vol;
  uint32_t task;      /* its task's position in the job */
  int64_t issued, expires;
  int64_t hard;       /* the deadline heartbeats do not move (0: none) */
} cairn__lease_info;
/* Fills *out with lease idx while it is out; CAIRN_ENOTFOUND when it is
 * not (returned, expired, or never issued). Takes the lock; O(1). */
cairn_status cairn__core_lease_info(cairn__core *c, int64_t idx, cairn__lease_info *out,
                                    cairn_error *err);
/* The ATAF family of the database (fixed for its life). */
cairn__ataf_family cairn__core_family(const cairn__core *c);
/* The store's audit rows (cairn__store_audit): by index n, volunteer or task
 * (by: CAIRN_AUDIT_BY_*). */
cairn_status cairn__core_audit(cairn__core *c, int by, int64_t key,
                               int (*cb)(void *, const cairn__store_audit_row *), void *ud,
                               cairn_error *err);
/* A task's accepted output from the store (caller frees *out). */
cairn_status cairn__core_task_output(cairn__core *c, int64_t key, char **out, size_t *len,
                                     cairn_error *err);
/* Derives the peer secret from seed (the master's admin token), so that
 * peer keys and grants outlive a restart without being stored. Until it is
 * called the secret is random, this process's own. Call before serving. */
void cairn__core_set_peer_seed(cairn__core *c, const char *seed);
/* Volunteer id's peer key of the current generation (common/grant.h), for
 * an answer to it: from then on the grants for its copies are made with
 * this key. A ban moves the generation; each holder keeps its old key (and
 * the grants made with it keep working) until its next heartbeat answer
 * gives it the new one. Takes the lock; O(1). */
void cairn__core_peer_key(cairn__core *c, int64_t id, char key[65]);
/* Where uploaded files live (fixed; owned by c). */
const char *cairn__core_files_dir(const cairn__core *c);

/* GET /v1/demand: cairn__core_demand_json (demand.h), O(E × K) under the
 * lock — E jobs with eligible work, K <= 64 requests each, each found among
 * the <= 64 distinct ones kept by a hash — plus the 20-slot presence ring;
 * never O(tasks) or O(volunteers). */
json_t *cairn__core_job_json(cairn__core *c, int64_t id, int detail);
/* Job id's state (cairn__jstate) as memory has it, not waiting for the
 * store; -1 when there is no such job. O(1) under the lock. */
int cairn__core_job_state(cairn__core *c, int64_t id);
json_t *cairn__core_jobs_json(cairn__core *c);
/* A page of GET /v1/jobs/{id}/tasks: the tasks of job id after the one
 * whose key is `after` (0: from the first), at most limit (1 to
 * CAIRN_TASKS_PAGE_MAX), in job-file order, with their results and files:
 * {"tasks": [...], "next": the last one's key when more follow, else null};
 * a task with a lease out whose worker reported its progress has
 * "progress" (0 to 1, the last report of any of its leases).
 * The tasks are copied CAIRN__TASKS_CHUNK per hold of the lock (each hold
 * O(chunk), never O(job)); their results and files are read from the store
 * outside it, O(limit). NULL with err: CAIRN_ENOTFOUND (no such job, or
 * deleted meanwhile), CAIRN_EINVAL (after names no task of the job). */
#define CAIRN__TASKS_CHUNK 1024
json_t *cairn__core_tasks_json(cairn__core *c, int64_t id, int64_t after, size_t limit,
                               cairn_error *err);
/* GET /v1/volunteers: {"volunteers": [...]} as text (malloc'd, length in
 * *len), NULL when out of memory. Takes c->lock once per VOL_LIST_CHUNK
 * volunteers (each hold O(chunk)) and renders outside it, so a listing of
 * the whole population neither stalls requests nor holds a JSON tree of
 * it: memory O(chunk) besides the text. */
char *cairn__core_volunteers_text(cairn__core *c, size_t *len);
/* The same, parsed (for tests and small listings). */
json_t *cairn__core_volunteers_json(cairn__core *c);
/* Appends Prometheus lines for tasks, allocations and results. */
void cairn__core_metrics(cairn__core *c, char **buf, size_t *len, size_t *cap);

#endif
