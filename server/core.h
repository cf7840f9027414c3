/* core.h — the master's in-memory state and its transitions (private to server/).
 *
 * Task life-cycle ([Ros] §4.3.1 pebble states), with replication R and
 * quorum Q (a task is executed once Q results of distinct volunteers agree
 * byte for byte):
 *
 *   WAITING --last parent done--> ELIGIBLE (wants more copies: in the policy's queue)
 *   ELIGIBLE --allocate--> ELIGIBLE while it wants more copies, else RUNNING
 *   RUNNING/ELIGIBLE --result-->  DONE once Q agreeing results exist (children
 *                                 lose a pending parent); else back to ELIGIBLE
 *                                 when it wants copies (disagreement, exit != 0,
 *                                 lease expired), or FAILED once it has had
 *                                 max_attempts allocations and none is out
 *   any --ban of a volunteer it relied on, or of an ancestor's--> WAITING or
 *                                 ELIGIBLE in a new round (results discarded)
 *
 * Copies wanted (replan): R before the first result of a round, afterwards
 * Q - (largest number of agreeing results), less the leases out.
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
#include "common/limits.h"
#include "common/log.h"
#include "common/policy.h"
#include "server/hmap.h"
#include "server/journal.h"
#include "server/store.h"

typedef enum { TS_WAITING, TS_ELIGIBLE, TS_RUNNING, TS_DONE, TS_FAILED, TS_COUNT } cairn__tstate;
typedef enum { JS_RUNNING, JS_DONE, JS_FAILED } cairn__jstate;
extern const char *const cairn__tstate_name[TS_COUNT];
extern const char *const cairn__jstate_name[3];

/* A job's input file. For a broadcast file: when it was first assigned to a
 * worker and which of the job's workers were given tasks needing it. */
typedef struct mfile {
  char *name;
  char sha256[65];
  int64_t size;
  int broadcast;
  int64_t first_assign;
  int64_t *assigned;
  uint32_t nassigned, capassigned;
} mfile;

/* An uploaded file (c->files): who holds a verified copy, copies on their way
 * (to a worker, from a holder or from the master = 0, until a deadline), and
 * bytes served. */
typedef struct mholder {
  int64_t vol, since;
} mholder;
typedef struct mxfer {
  int64_t to, from, deadline;
} mxfer;
/* A broadcast plan (bplan.c): cluster 0 is the master, 1..k-1 the clusters
 * present when it was built, sorted by label. */
typedef struct mplan {
  char algorithm[32];
  size_t k;
  char **label;
  int64_t *parent;   /* the cluster its first copy comes from (0: the master) */
  double *at;        /* planned start of that copy, seconds from the start */
  int *rank;         /* order among the parent's receivers */
  int *conc;         /* copies the plan has it send to other clusters at once */
  int64_t *want;     /* last time one of its workers waited for the file */
  double predicted, lower_bound, unit;
  int64_t C;
  uint64_t sig;      /* the clusters and sizes it was built for */
  double built;      /* seconds from the start of the broadcast to when it was built */
  uint64_t epoch;    /* c->rates_epoch it was costed with */
  int informed;      /* clusters that held the file (or had a copy landing) then */
} mplan;

typedef struct mrate mrate;

typedef struct mfilerec {
  char sha256[65];
  int64_t size;
  mholder *holders;
  uint32_t nholders, capholders;
  mxfer *xfers;
  uint32_t nxfers, capxfers;
  uint64_t bytes_master, bytes_peer;
  mplan *plan;       /* broadcast plan, NULL until it is first broadcast */
  int64_t started;   /* when it was first handed out as a broadcast input */
  int64_t checked;   /* when the clusters present were last compared with the plan */
  uint32_t plans;    /* plans built for it */
} mfilerec;

enum { OUT_VALID, OUT_INVALID, OUT_PENDING, OUT_ERROR, OUT_TAINTED, OUT_COUNT };
extern const char *const cairn__outcome_name[OUT_COUNT];

typedef struct mres {
  int64_t idx, vol;
  char digest[65];
  uint8_t ok;        /* exit status 0 */
  uint8_t outcome;
} mres;

/* A task's replicas in its current round. */
typedef struct mrep {
  int64_t *vols;     /* volunteers allocated (distinct when replication > 1) */
  uint32_t nvols, capvols;
  mres *res;
  uint32_t nres, capres;
  uint32_t active;   /* leases out */
} mrep;

typedef struct mtask {
  int64_t key;
  char *name;
  char *args_json;   /* compact JSON array of strings */
  uint32_t *inputs;  /* indices into the job's files */
  uint32_t ninputs;
  uint32_t npending; /* parents not yet done */
  uint8_t state;
  uint8_t queued;    /* in the policy's ready set */
  uint16_t attempts; /* allocations in this round */
  int64_t accepted;  /* index of the accepted (or last failed) result, 0 if none */
  int64_t round;
  mrep *rep;         /* NULL until first allocated */
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
  char *peer_url;          /* its file server for peers, or NULL */
  uint8_t waiting_copy;    /* its last work request found a task whose broadcast
                              input is on its way into its cluster (retry soon) */
  int64_t peer_failed_until; /* a peer reported its file server failing: not
                                offered as a source before then */
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

typedef struct cairn_core {
  pthread_mutex_t lock;
  cairn_logger log;        /* the master's (a copy; NULL at open: stderr, warn) */
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
  cairn_hmap files;        /* first 8 bytes of sha256 -> mfilerec */
  char peer_token[65];     /* workers serve peers that present it */
  char bplan_algo[32];     /* broadcast planner (bplan.c), "online" for none */
  cairn_hmap rates;        /* (source cluster, cluster) -> mrate */
  double rate_sum[3];      /* per rate class (bplan.c) */
  uint64_t rate_n[3];
  uint64_t rates_epoch;    /* bumped when a pair is first measured or moves by > 25% */
  int64_t next_task_key;

  cairn__journal *journal; /* its own module and lock (journal.h) */
  pthread_cond_t job_cv;   /* a job's state changed */

  /* counters for /metrics */
  uint64_t allocations_total, results_total[OUT_COUNT], expired_total, bans_total;
  uint64_t bytes_master, bytes_peer;
  uint64_t fetch_reports_total; /* "fetched" entries workers reported */
  uint64_t peer_failures_total[CAIRN_FAIL_REASONS]; /* "failed" entries, by reason */
} cairn_core;

/* fail_fd (or -1): written to when the master fails (journal.h). */
/* Opens the store at db_path (files next to it in DB.files/), rebuilds the
 * in-memory state from it and starts the commit thread. family: the ATAF
 * family of a new database ("phisharp" when NULL); an existing database keeps
 * the family it was created with, and naming another one is an error. */
cairn_core *cairn__core_open(const char *db_path, int durable, const char *family,
                             const cairn_logger *log, int fail_fd, cairn_error *err);
/* Over this many clusters a grid planner is replaced by lcf (bplan.c). */
#define CAIRN__BPLAN_GRID_MAX 512
/* The broadcast planner of a new core (bplan.c). */
#define CAIRN__BPLAN_DEFAULT "ECEF-LA"
/* Chooses the broadcast planner (cairn__bplan_algorithms()); CAIRN_EINVAL
 * naming the choices when unknown. */
cairn_status cairn__core_set_bplan(cairn_core *c, const char *algo, cairn_error *err);
/* How soon a worker waiting for a copy should ask again, in ms: 250 to
 * 1,000, so that all the volunteers polling at once make at most about
 * 2,000 requests a second. */
int cairn__core_copy_retry_ms(cairn_core *c);
/* CAIRN_OK while the master works; CAIRN_EFAILED (reason in err) once its
 * journal has failed (journal.h): nothing is acknowledged after that. */
cairn_status cairn__core_health(cairn_core *c, cairn_error *err);
/* Stops the commit thread after the last batch and closes the store. */
void cairn__core_close(cairn_core *c);

/* ---- operations (each takes the lock itself) ---- */
cairn_status cairn__core_register(cairn_core *c, const char *name, const char *cluster,
                                  char **apps, int napps, int slots, const char *peer_url,
                                  int64_t *id, char token[65], cairn_error *err);
/* A worker's report (work or heartbeat body): files it holds, bytes it
 * served to peers (sha256[i] -> bytes[i]), its peer URL when given. */
void cairn__core_report(cairn_core *c, mvol *v, const char *const *have, int nhave,
                        const char *const *served_sha, const uint64_t *served, int nserved,
                        const char *peer_url);
/* A worker's measured download: file sha256 from source (as given in its
 * sources), bytes in ms milliseconds. */
typedef struct cairn__fetch_report {
  const char *sha256, *source;
  int64_t bytes, ms;
} cairn__fetch_report;
/* The n downloads v measured (work or heartbeat body, checked): counted
 * (fetch_reports_total) and taken as rate samples (cairn__dist_fetched). */
void cairn__core_fetched(cairn_core *c, mvol *v, const cairn__fetch_report *f, int n);
/* A peer source that failed a worker's download: file sha256 from source
 * (a peer's URL as given in its sources), for reason (CAIRN_FAIL_*). */
typedef struct cairn__fail_report {
  const char *sha256, *source;
  int reason;
} cairn__fail_report;
/* The n failed sources v reported (work or heartbeat body, checked):
 * counted by reason (peer_failures_total) and acted on
 * (cairn__dist_failed). */
void cairn__core_failed(cairn_core *c, mvol *v, const cairn__fail_report *f, int n);
/* Counts bytes of file sha256 the master sent. */
void cairn__core_served_by_master(cairn_core *c, const char *sha256, uint64_t bytes);
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
/* Extends v's leases: those listed in running[0..nrunning) when running is
 * not NULL (a worker names the tasks it runs, so a lease whose work answer
 * never reached it is left to expire), else all of them. */
cairn_status cairn__core_heartbeat(cairn_core *c, mvol *v, const int64_t *running, size_t nrunning,
                                   json_t **resp, cairn_error *err);
/* Bans volunteer id: refuses its token, marks its results invalid, re-queues
 * every task whose accepted result relied on it and every descendant that
 * consumed a re-queued output, in one transaction. *report gets counts. */
cairn_status cairn__core_ban(cairn_core *c, int64_t id, const char *reason, json_t **report,
                             cairn_error *err);
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
 * CAIRN_OK with *state JS_DONE or JS_FAILED (durable); CAIRN_ETIMEOUT
 * (*state JS_RUNNING); CAIRN_ENOTFOUND; CAIRN_EFAILED (the master failed). */
cairn_status cairn__core_wait_job(cairn_core *c, int64_t job, long timeout_ms, int *state,
                                  cairn_error *err);
/* Writes a trivial record through the commit path and waits for it. */
cairn_status cairn__core_probe_write(cairn_core *c, cairn_error *err);

/* ---- read-only views: copies made under the lock, for the HTTP layer and
 * the audit read model, which never take the lock themselves ---- */

/* What the audit shows of a volunteer (a copy). */
typedef struct cairn__vol_info {
  int64_t id, allocations, valid, invalid, pending, errors, last_seen;
  int banned, slots;
  char name[CAIRN_MAX_NAME + 1], cluster[CAIRN_MAX_NAME + 1];
} cairn__vol_info;
/* Fills *out with volunteer id; CAIRN_ENOTFOUND when there is none. O(1). */
cairn_status cairn__core_volunteer(cairn_core *c, int64_t id, cairn__vol_info *out,
                                   cairn_error *err);
/* The ATAF family of the database (fixed for its life). */
cairn_ataf_family cairn__core_family(const cairn_core *c);
/* The store's audit rows (cairn_store_audit): by index n, or by volunteer. */
cairn_status cairn__core_audit(cairn_core *c, int by_volunteer, int64_t key,
                               int (*cb)(void *, const cairn_store_audit_row *), void *ud,
                               cairn_error *err);
/* A task's accepted output from the store (caller frees *out). */
cairn_status cairn__core_task_output(cairn_core *c, int64_t key, char **out, size_t *len,
                                     cairn_error *err);
/* The peer token workers present to each other (fixed for the database's
 * life; owned by c). */
const char *cairn__core_peer_token(const cairn_core *c);
/* Where uploaded files live (fixed; owned by c). */
const char *cairn__core_files_dir(const cairn_core *c);

json_t *cairn__core_job_json(cairn_core *c, int64_t id, int detail);
json_t *cairn__core_jobs_json(cairn_core *c);
json_t *cairn__core_tasks_json(cairn_core *c, int64_t id, cairn_error *err);
json_t *cairn__core_volunteers_json(cairn_core *c);
/* Appends Prometheus lines for tasks, allocations and results. */
void cairn__core_metrics(cairn_core *c, char **buf, size_t *len, size_t *cap);

int64_t cairn__now(void);

/* load.c: rebuild state from the store (before the commit thread starts). */
cairn_status cairn__core_load(cairn_core *c, cairn_error *err);
/* Shared helpers. */
void cairn__job_free(mjob *j);
void cairn__vol_free(mvol *v);
int cairn__job_start_policy(mjob *j, cairn_error *err);
/* (Re)creates the job's policy state from the task states: executed for DONE
 * tasks in topological order, ready for ELIGIBLE ones. O(n + m). */
int cairn__job_rebuild_policy(mjob *j, cairn_error *err);
/* Adds a result to a task's replica record (allocating it). 0 or -1 (OOM). */
int cairn__rep_add_result(mtask *t, int64_t idx, int64_t vol, const char *digest, int ok,
                          int outcome);
int cairn__rep_add_vol(mtask *t, int64_t vol);
/* Records that v holds lease idx. 0, or -1 out of memory. */
int cairn__vol_add_active(mvol *v, int64_t idx);
void cairn__rep_free(mrep *r);

/* distribution.c (under the lock) */
/* Builds the inputs[] of a work answer for task v of job j given to vol:
 * each input with its sources (peers first for broadcast files). Returns 0,
 * 1 when a broadcast input cannot be served to vol yet (a copy is on its way
 * into vol's cluster), -1 out of memory. Records the transfers it starts. */
int cairn__dist_inputs(cairn_core *c, mvol *vol, mjob *j, uint32_t v, json_t **inputs);
/* vol holds file sha256 (verified) from now. A new holding is journaled
 * (J_HOLD); one already known, or of a banned volunteer, changes nothing. */
void cairn__dist_have(cairn_core *c, mvol *vol, const char *sha256);
/* At start-up (not journaled): vol has held file sha256 since then, as the
 * store says, which lists each holding once. An unknown file or a banned
 * volunteer is skipped. 0, or -1 out of memory. */
int cairn__dist_restore_holder(cairn_core *c, mvol *vol, const char *sha256, int64_t since);
/* vol was banned: it holds no file any more, and no copy is on its way to
 * it. O(files + their holders and transfers). The store side is J_BAN's. */
void cairn__dist_forget(cairn_core *c, const mvol *vol);
/* "bytes_served" and per-file distribution figures of a job. */
json_t *cairn__dist_job_json(cairn_core *c, const mjob *j);
void cairn__dist_free(mfilerec *f);
/* vol downloaded bytes of file sha in ms from source (a URL of its sources):
 * a rate sample from the source's cluster into vol's. */
void cairn__dist_fetched(cairn_core *c, const mvol *vol, const char *sha, const char *source,
                         int64_t bytes, int64_t ms);
/* reporter's download of file sha from source (a URL of its sources) failed
 * for reason (CAIRN_FAIL_*). The holders of sha whose peer URL source names
 * no longer send a copy to reporter; after "size" or "digest" their copy is
 * bad: they hold sha no more (journaled, J_UNHOLD) until they report it
 * again; after "unreachable", "stalled" or "status" their file server is
 * not offered for PEER_FAILED_SECONDS (30 s). A source that names no holder, or a
 * banned reporter, changes nothing. O(holders + transfers of sha). */
void cairn__dist_failed(cairn_core *c, const mvol *reporter, const char *sha, const char *source,
                        int reason);

/* bplan.c (under the lock) */
/* The canonical name of a broadcast planner, or NULL when unknown. */
const char *cairn__bplan_algorithm(const char *name);
/* "online, lcf, …" for messages. */
const char *cairn__bplan_algorithms(void);
/* A download of bytes in ms from cluster src ("" = the master) into dst. */
void cairn__rate_sample(cairn_core *c, const char *src, const char *dst, int64_t bytes,
                        int64_t ms);
/* Estimated rate src -> dst in bytes per second (measured, else estimated). */
double cairn__rate_get(const cairn_core *c, const char *src, const char *dst);
json_t *cairn__rates_json(const cairn_core *c);
/* A rate read back from the store at start-up. 0, or -1 out of memory. */
int cairn__rate_restore(cairn_core *c, const char *src, const char *dst, double bps,
                        int64_t samples);
void cairn__rates_free(cairn_core *c);
/* Plans a broadcast of size bytes with algo over the m clusters labels[]
 * (sorted, distinct) of counts[] workers; informed[i] (or NULL) marks a
 * cluster that holds the file already or has a copy landing. NULL with err
 * on failure. */
mplan *cairn__bplan_build(const cairn_core *c, const char *algo, int64_t size,
                          char *const *labels, const int64_t *counts,
                          const uint8_t *informed, size_t m, cairn_error *err);
void cairn__bplan_free(mplan *p);
/* Index of cluster label in p ("" = 0, the master), or -1. */
int cairn__bplan_find(const mplan *p, const char *label);
json_t *cairn__bplan_json(const mplan *p, size_t max_clusters);
int cairn__lease_push(cairn_core *c, int64_t expires, int64_t idx);
uint64_t cairn__hash_key(const char *hex);
char *cairn__strdup(const char *s);

#endif
