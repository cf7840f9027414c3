/* core.h — the master's in-memory state and its transitions (private to server/).
 *
 * Task life-cycle (seed 004 §4.3.1 pebble states):
 *
 *   WAITING --last parent done--> ELIGIBLE (eligible-but-unallocated)
 *   ELIGIBLE --allocate--> RUNNING (eligible-and-allocated; one lease)
 *   RUNNING --result, exit 0--> DONE (executed; children lose a pending parent)
 *   RUNNING --result exit != 0, or lease expired--> ELIGIBLE, or FAILED once
 *                                the task has had max_attempts allocations
 *
 * Lease life-cycle: leased --result--> returned; leased --deadline--> expired.
 * Heartbeats move the deadline. A result for a lease that is not leased any
 * more gets CAIRN_ECONFLICT and changes nothing.
 *
 * Every transition happens under core->lock and appends journal records; the
 * commit thread writes each batch of records in one SQLite transaction, and a
 * caller that must acknowledge something waits until its batch is committed
 * (group commit). Memory runs ahead of the store only by batches nobody has
 * been told about yet.
 */
#ifndef CAIRN_CORE_H
#define CAIRN_CORE_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "common/ataf.h"
#include "common/dag.h"
#include "common/error.h"
#include "common/jobspec.h"
#include "common/policy.h"
#include "server/hmap.h"
#include "server/store.h"

typedef enum { TS_WAITING, TS_ELIGIBLE, TS_RUNNING, TS_DONE, TS_FAILED, TS_COUNT } cairn__tstate;
typedef enum { JS_RUNNING, JS_DONE, JS_FAILED } cairn__jstate;
extern const char *const cairn__tstate_name[TS_COUNT];
extern const char *const cairn__jstate_name[3];

typedef struct mfile {
  char *name;
  char sha256[65];
  int64_t size;
  int broadcast;
} mfile;

typedef struct mtask {
  int64_t key;
  char *name;
  char *args_json;   /* compact JSON array of strings */
  uint32_t *inputs;  /* indices into the job's files */
  uint32_t ninputs;
  uint32_t npending; /* parents not yet done */
  uint8_t state;
  uint16_t attempts;
  int64_t accepted;  /* index of the accepted (or last failed) result, 0 if none */
} mtask;

typedef struct mjob {
  int64_t id;
  char *name, *app, *policy_name;
  int replication, quorum, lease_seconds, max_attempts;
  int state;
  int64_t created, finished;
  mfile *files;
  uint32_t nfiles;
  mtask *tasks;
  uint32_t ntasks;
  cairn_dag *dag;
  const cairn_policy_ops *pol;
  void *pstate;
  uint32_t counts[TS_COUNT];
} mjob;

typedef struct mvol {
  int64_t id;              /* also the ATAF row */
  char *name, *cluster;
  char **apps;
  int napps, slots, banned;
  char token_hash[65];
  int64_t allocations;     /* t of the latest allocation */
  int64_t valid, invalid, pending, errors;
  int64_t *active;         /* indices of leases held */
  size_t nactive, capactive;
  int64_t created, last_seen;
} mvol;

typedef struct mlease {
  int64_t idx, t, issued, expires;
  mvol *vol;
  mjob *job;
  uint32_t task;
} mlease;

typedef struct lease_heap_item {
  int64_t expires, idx;
} lease_heap_item;

typedef struct cairn__journal_rec cairn__journal_rec;

typedef struct cairn_core {
  pthread_mutex_t lock;
  cairn_store *store;
  cairn_ataf_family family;
  char files_dir[4096];

  mvol **vols;             /* vols[id-1] */
  size_t nvols, capvols;
  cairn_hmap vol_by_token; /* first 8 bytes of token hash -> mvol */
  mjob **jobs;             /* jobs[id-1] */
  size_t njobs, capjobs;
  cairn_hmap leases;       /* idx -> mlease */
  lease_heap_item *heap;
  size_t nheap, capheap;
  cairn_hmap files;        /* first 8 bytes of sha256 -> mfile (name unused) */
  int64_t next_task_key;

  /* journal (group commit) */
  cairn__journal_rec *head, *tail;
  uint64_t taken, committed;
  pthread_cond_t work_cv, done_cv, job_cv;
  pthread_t committer;
  int committer_running, stopping;

  /* counters for /metrics */
  uint64_t allocations_total, results_total[4], expired_total;
} cairn_core;

/* Opens the store at db_path (files next to it in DB.files/), rebuilds the
 * in-memory state from it and starts the commit thread. */
cairn_core *cairn__core_open(const char *db_path, int durable, cairn_error *err);
/* Stops the commit thread after the last batch and closes the store. */
void cairn__core_close(cairn_core *c);

/* ---- operations (each takes the lock itself) ---- */
cairn_status cairn__core_register(cairn_core *c, const char *name, const char *cluster,
                                  char **apps, int napps, int slots, int64_t *id,
                                  char token[65], cairn_error *err);
/* The volunteer holding token, or NULL (CAIRN_EAUTH) / banned (CAIRN_EFORBIDDEN). */
cairn_status cairn__core_auth(cairn_core *c, const char *token, mvol **out, cairn_error *err);
/* Allocates the best eligible task of an app the volunteer runs (restricted to
 * apps[] when napps > 0). *resp is the /v1/work body, or NULL when none. */
cairn_status cairn__core_work(cairn_core *c, mvol *v, char **apps, int napps, json_t **resp,
                              cairn_error *err);
/* Records a result. With next != NULL, also allocates the volunteer's next
 * task in the same batch (*next = the /v1/work body, or NULL when none). */
cairn_status cairn__core_result(cairn_core *c, mvol *v, int64_t idx, int exit_status,
                                const void *output, size_t len, json_t **next, cairn_error *err);
cairn_status cairn__core_heartbeat(cairn_core *c, mvol *v, json_t **resp, cairn_error *err);
/* Takes ownership of spec. */
cairn_status cairn__core_submit(cairn_core *c, cairn_jobspec *spec, int64_t *job_id,
                                cairn_error *err);
/* Records a file already moved to files_dir/sha256. */
cairn_status cairn__core_add_file(cairn_core *c, const char *sha256, int64_t size, int *existed,
                                  cairn_error *err);
int cairn__core_has_file(cairn_core *c, const char *sha256, int64_t *size);
/* Expires every lease whose deadline is <= now. Returns how many. */
int cairn__core_expire(cairn_core *c, int64_t now);
/* Waits until job is done or failed, or timeout_ms passes (<0: forever).
 * Returns the job state, or -1 for an unknown job, -2 on timeout. */
int cairn__core_wait_job(cairn_core *c, int64_t job, long timeout_ms);
/* Writes a trivial record through the commit path; 0 if it committed. */
int cairn__core_probe_write(cairn_core *c);

/* ---- read-only views (JSON, under the lock) ---- */
json_t *cairn__core_job_json(cairn_core *c, int64_t id, int detail);
json_t *cairn__core_jobs_json(cairn_core *c);
json_t *cairn__core_tasks_json(cairn_core *c, int64_t id, cairn_error *err);
json_t *cairn__core_volunteers_json(cairn_core *c);
/* Appends Prometheus lines for tasks, allocations and results. */
void cairn__core_metrics(cairn_core *c, char **buf, size_t *len, size_t *cap);

int64_t cairn__now(void);

/* ---- internal to core.c / journal.c / load.c ---- */
typedef enum {
  J_META, J_VOL, J_BAN, J_FILE, J_JOB, J_TASK, J_JOBSTATE, J_ALLOC, J_LEASE, J_RESULT
} cairn__jtype;

struct cairn__journal_rec {
  cairn__jtype type;
  int64_t a, b, c, d, e, f;
  char *s1, *s2;
  void *blob;
  size_t bloblen;
  const void *ref;
  cairn__journal_rec *next;
};

/* Appends a record (under the lock). Returns 0, -1 when out of memory. */
int cairn__journal_add(cairn_core *c, cairn__journal_rec *r);
/* Batch number that will hold records appended now (under the lock). */
uint64_t cairn__journal_pending(cairn_core *c);
/* Waits (under the lock, releasing it meanwhile) until batch seq is durable. */
cairn_status cairn__journal_wait(cairn_core *c, uint64_t seq, cairn_error *err);
int cairn__journal_start(cairn_core *c, cairn_error *err);
void cairn__journal_stop(cairn_core *c);

/* load.c: rebuild state from the store (before the commit thread starts). */
cairn_status cairn__core_load(cairn_core *c, cairn_error *err);
/* Shared helpers. */
void cairn__job_free(mjob *j);
void cairn__vol_free(mvol *v);
int cairn__job_start_policy(mjob *j, cairn_error *err);
int cairn__lease_push(cairn_core *c, int64_t expires, int64_t idx);
uint64_t cairn__hash_key(const char *hex);
char *cairn__strdup(const char *s);

#endif
