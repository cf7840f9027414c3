/* core.h — the master's scheduling core: volunteers, jobs, tasks, leases
 * and their transitions (private to server/; server/README.md maps the
 * modules). This is the one home of the task and lease state machines.
 *
 * Task states ([Ros] §4.3.1 pebble states), with replication R and quorum
 * Q (a task is executed once Q results of distinct volunteers agree byte
 * for byte). Each transition, and the function (core.c) that makes it:
 *
 *   WAITING  -> ELIGIBLE  its last parent is DONE (release_children, from
 *                         accept); in the policy's ready set (enqueue)
 *   ELIGIBLE -> ELIGIBLE  allocated while it wants more copies
 *               / RUNNING otherwise (allocate_locked, then replan)
 *   RUNNING/ELIGIBLE
 *            -> DONE      Q agreeing results exist, 1 when the round runs once
 *                         (trust.c) (cairn__core_result, accept); its
 *                         children lose a pending parent
 *            -> ELIGIBLE  it wants copies again: disagreement, exit != 0,
 *                         a lease expired or revoked (replan, from
 *                         cairn__core_result, cairn__core_expire, ban)
 *            -> FAILED    max_attempts allocations in its round and none
 *                         out (replan); its job is FAILED (job_finish_check)
 *   any      -> WAITING / ELIGIBLE in a new round (results discarded): the
 *                         ban of a volunteer it relied on, or of an
 *                         ancestor's (cairn__core_ban, new_round); the
 *                         re-check of its (or an ancestor's) unreplicated
 *                         result when that volunteer's trust resets
 *                         (trust.c, cairn__core_requeue)
 *
 * Copies wanted (replan): R before the first result of a round (1 when the
 * round runs once on a trusted volunteer: mrep.solo, trust.c), afterwards
 * Q - (largest number of agreeing results), less the leases out.
 *
 * Lease states (journal names "leased", "returned", "expired"):
 *   leased -> returned    its result arrived (cairn__core_result, drop_lease)
 *   leased -> expired     its deadline passed (cairn__core_expire) or its
 *                         volunteer was banned (cairn__core_ban)
 *   leased -> leased      a heartbeat naming it moves the deadline
 *                         (cairn__core_heartbeat)
 * A result for a lease that is not leased any more gets CAIRN_ECONFLICT and
 * changes nothing (no_lease).
 *
 * Job states: RUNNING -> DONE (every task DONE) or FAILED (a task FAILED),
 * and back to RUNNING when a ban re-queues its tasks (job_finish_check).
 *   RUNNING -> CANCELLED  an operator cancelled it (cairn__core_cancel,
 *                         life.c): no allocation any more; its task states
 *                         stay as they were; each lease out ends (expired)
 *                         when its volunteer next sends a heartbeat (its
 *                         index is left out of "extended", so the worker
 *                         kills the app) or a result (discarded, 409), or
 *                         at its deadline. Final: nothing brings it back.
 *   DONE/FAILED/CANCELLED -> deleted  (cairn__core_delete, life.c; a
 *                         job that runs or has leases out is cancelled
 *                         first, whatever its state): the job leaves
 *                         the core (jobs[id-1] = NULL) once no lease of it
 *                         is out; its store rows go in the commit thread.
 *                         The id is never reused.
 * Cancelling a cancelled job changes nothing; cancelling a DONE or FAILED
 * one is CAIRN_ECONFLICT.
 *
 * Priority: among jobs not cancelled with ELIGIBLE tasks (c->runq, life.c),
 * allocation serves the highest priority first, ties by id (submission
 * order); within a job its policy decides.
 *
 * Locking: every transition happens under c->lock and puts journal records
 * (journal.h); a caller that acknowledges something waits for their batch
 * after releasing the lock (group commit). Memory runs ahead of the store
 * only by batches nobody has been told about yet. The distribution module
 * (dist.h) is called under the same lock.
 */
#ifndef CAIRN_CORE_H
#define CAIRN_CORE_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "common/error.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/outputs.h"
#include "common/protocol.h"
#include "common/taskrun.h"
#include "plan/ataf.h"
#include "plan/dag.h"
#include "plan/jobspec.h"
#include "plan/policy.h"
#include "server/hmap.h"
#include "server/journal.h"
#include "server/store.h"

typedef enum { TS_WAITING, TS_ELIGIBLE, TS_RUNNING, TS_DONE, TS_FAILED, TS_COUNT } cairn__tstate;
typedef enum { JS_RUNNING, JS_DONE, JS_FAILED, JS_CANCELLED, JS_COUNT } cairn__jstate;
extern const char *const cairn__tstate_name[TS_COUNT];
extern const char *const cairn__jstate_name[JS_COUNT];

/* A job's input file. For a broadcast file: when it was first assigned to a
 * worker, which of the job's workers were given tasks needing it, and how
 * many copies of it that travelled were recorded (distribution.c). */
typedef struct mfile {
  char *name;
  char sha256[65];
  int64_t size;
  int broadcast;
  int64_t first_assign;
  int64_t *assigned;
  uint32_t nassigned, capassigned;
  uint32_t logged;   /* copies of it recorded for this job (at most CAIRN__XFER_LOG_MAX a run) */
} mfile;

enum { OUT_VALID, OUT_INVALID, OUT_PENDING, OUT_ERROR, OUT_TAINTED, OUT_COUNT };
extern const char *const cairn__outcome_name[OUT_COUNT];

typedef struct mres {
  int64_t idx, vol;
  char digest[65];
  uint8_t ok;        /* exit status 0 */
  uint8_t outcome;
  uint8_t solo;      /* accepted on no other result's agreement: the lone copy
                      * of a round that runs once, or a job's with quorum 1;
                      * it earns no trust (trust.c) */
  /* non-exact validators only (validate.c): its stdout (malloc'd, freed once
   * the task needs it no more), its output files' key, and bit k set when
   * it agrees with res[k] (k < CAIRN__VALID_MAX_COMPARED); known: bit k set once that is decided
   * (at once, but for the command validator); files: its output files
   * (command only, freed with out) */
  char *out;
  uint32_t len;
  char fkey[65];
  uint64_t agree, known;
  cairn__output_file *files;
  uint32_t nfiles;
  /* credit (credit.c): the CPU seconds it claims (-1: none), and the
   * credit it is granted while valid (its task's agreed claim) */
  double claim, credit;
  struct mteam *team; /* the team ledger's entry its credit counts for while
                       * valid (team.c; NULL: none) */
} mres;

/* A task's replicas in its current round. */
typedef struct mrep {
  int64_t *vols;     /* volunteers allocated (distinct when replication > 1) */
  uint32_t nvols, capvols;
  mres *res;
  uint32_t nres, capres;
  uint32_t active;   /* leases out */
  uint32_t checking; /* pairs queued for the command validator (validate.h) */
  uint8_t solo;      /* this round runs once, on a trusted volunteer (trust.c);
                      * cleared when that copy fails or its lease ends unreturned */
} mrep;

typedef struct mtask {
  int64_t key;
  char *name;
  char *args_json;   /* compact JSON array of strings */
  uint32_t *inputs;  /* indices into the job's files */
  uint32_t ninputs;
  uint32_t npending; /* parents not yet done */
  uint8_t state;
  uint8_t queued;    /* 1: in the policy's ready set, 2: in its job's urgent ring (trust.c) */
  uint8_t rclass;    /* its resource request: the job's rclasses[rclass] (fit.h) */
  uint8_t parked;    /* set aside: its request exceeds every offer seen (fit.h) */
  uint16_t attempts; /* allocations in this round */
  int64_t accepted;  /* index of the accepted (or last failed) result, 0 if none */
  int64_t round;
  mrep *rep;         /* NULL until first allocated */
  char *run_json;    /* its limits, env, stdin (a work offer's form), or NULL */
  int32_t wall;      /* its wall_seconds (0: none): the lease's hard deadline */
  int32_t out_mib;   /* its output_mib (0: none): also its leases' upload budget */
  int64_t failed_vol, failed_at; /* who failed it last and when (limits.c) */
  struct cairn__tio *io; /* declared outputs, parents' files read, accepted
                          * files (server/outputs.h); NULL: none */
} mtask;

typedef struct mjob {
  int64_t id;
  char *name, *app, *policy_name;
  int replication, quorum, lease_seconds, max_attempts;
  int adaptive;      /* "adaptive": trusted volunteers' tasks may run once (trust.c) */
  int keep_workers;  /* "keep": "workers": outputs stay where they were made (keep.c) */
  cairn__validator validator; /* how its replicas are compared (validate.c) */
  int state;
  int64_t created, finished;
  int64_t priority;  /* higher first (life.c) */
  uint32_t nleases;  /* leases out */
  uint8_t inq;       /* in c->runq */
  mfile *files;
  uint32_t nfiles;
  mtask *tasks;
  uint32_t ntasks;
  cairn__dag *dag;
  const cairn__policy_ops *pol;
  void *pstate;
  uint32_t counts[TS_COUNT];
  /* resources (fit.h): the distinct requests and how many tasks make each */
  cairn__resources *rclasses;
  uint32_t *rclass_tasks;
  uint32_t *rclass_eligible; /* ELIGIBLE tasks making each (demand.h) */
  uint32_t nrclasses;
  uint32_t *parked;        /* ring of parked tasks (capacity ntasks, made on first use) */
  uint32_t park_head, nparked, sweep_left;
  uint64_t parked_gen;     /* c->offer_gen when the last sweep of parked tasks began */
  /* adaptive jobs (trust.c): ring of tasks whose round has a copy out or a
   * result and wants more, served before the policy's picks (capacity
   * ntasks, made on first use; emptied when the policy is rebuilt at start-up) */
  uint32_t *urgent;
  uint32_t urgent_head, nurgent;
} mjob;

typedef struct mvol {
  int64_t id;              /* also the ATAF row */
  char *name, *cluster;
  char **apps;
  int napps, slots, banned;
  char token_hash[65];
  char *peer_url;          /* its file server for peers, or NULL */
  struct mvol *peer_twin;  /* the volunteer that said the same peer URL before it (a
                              worker registered anew), or NULL (cairn__dist_peer_url) */
  int relays;              /* its reports say "chunks": true (its file server relays a
                              file while receiving it); not stored, every work body says it */
  unsigned peer_max;       /* files its file server sends at once, as its reports say
                              ("peer_max"); 0: not said (CAIRN_DEFAULT_PEER_MAX); not
                              stored, every report says it */
  uint64_t key_gen;        /* generation of the peer key it was last given (grants use it) */
  int64_t allocations;     /* t of the latest allocation */
  int64_t valid, invalid, pending, errors;
  int64_t *active;         /* indices of leases held */
  size_t nactive, capactive;
  int64_t created, last_seen;
  cairn__resources offer;   /* what it offers (fit.h); has_offer 0: {slots, 0, 0} */
  cairn__resources used;    /* what the tasks of its leases request */
  int has_offer;
  /* quarantine (quarantine.c): the last q_seen (<= CAIRN__QUAR_WINDOW)
   * final outcomes, newest in bit 0: invalid ones, errors */
  uint32_t q_invalid, q_errors;
  uint8_t q_seen;
  int quarantined;         /* gets no new task until released */
  int64_t up_bytes;        /* output bytes its live leases' uploads announced (the sum
                              of their out_bytes; uploads.c), at most the master's
                              --max-pending-upload-mib; not stored */
  int64_t lapsed_at;       /* when a lapse of its leases last counted against it
                              (cairn__vol_lapsed; 0: never; not stored) */
  /* credit (credit.c): its team (NULL: none), and the sums over its valid
   * results of their credit and claims, and their number; kept in the
   * store (volunteers row) with every change, outliving deleted jobs */
  char *team;
  double credit, cpu_seconds;
  int64_t credited;
  /* adaptive replication (trust.c): its valid replicated results in a row,
   * its last unreplicated accepted results (NULL until it has one), and
   * whether a re-check of them is due at the end of this request */
  int64_t trust;
  struct cairn__tring *ring;
  int trust_due;
  int64_t seen_sec;        /* the second its latest request is counted in (demand.c; 0: none) */
  uint8_t seen_idle;       /* it held no lease then */
  /* the census of the clusters present (census.c): its place in the queue
   * of volunteers counted, least recently seen first, and when it was seen */
  struct mvol *cprev, *cnext;
  int64_t cseen;
  uint8_t counted;
  /* the ban (ban.c): where it has a result, one entry per result received
   * (and per current-round result loaded at start-up), in arrival order;
   * 8 bytes each, 16 at most with the array's doubling; freed when its ban
   * is finished. Entries of rounds since re-opened stay and are skipped;
   * those of deleted jobs go when the array is full. ban_left: banned, its ban not finished
   * (the store's ban_pending); ban_next: the next entry a slice reads.
   * forget_at, forget_cap: the next bucket of the file table whose holdings
   * of it a slice forgets, and the table's size when that began (0: none
   * left; cairn__dist_forget_step). */
  struct { uint32_t job, task; } *did; /* job: its id - 1 (c->jobs), task: its seq */
  uint32_t ndid, capdid, ban_next;
  uint8_t ban_left;
  size_t forget_at, forget_cap;
} mvol;
/* Quarantine's window and the results it needs before judging
 * (docs/accountability.md). */
#define CAIRN__QUAR_WINDOW 20
#define CAIRN__QUAR_MIN 10
/* A quarantined volunteer's work answer asks it to come back this late. */
#define CAIRN__QUAR_RETRY_MS 300000

typedef struct mlease {
  int64_t idx, t, issued, expires;
  int64_t hard;            /* issued + wall + grace: expires never passes it (0: none) */
  int64_t out_bytes;       /* output bytes announced by its uploads (outputs.c) */
  uint32_t out_files;
  /* the files stored under it that no result claimed yet (uploads.c): their
   * sha256, at most out_files <= CAIRN_MAX_OUTPUT_FILES; owned, freed when
   * it ends (cairn__uploads_lease_end) */
  char (*up)[65];
  uint32_t nup;
  mvol *vol;
  mjob *job;
  uint32_t task;
} mlease;

typedef struct lease_heap_item {
  int64_t expires, idx;
} lease_heap_item;

typedef struct cairn__dist cairn__dist; /* dist.h */

/* Tasks of one app (by cairn__hash_app) made eligible under one hold of
 * the lock (wake.c); at most CAIRN__WAKE_APPS apps are told apart. */
#define CAIRN__WAKE_APPS 8
/* Jobs whose state changed under one hold of the lock told apart; more:
 * every held job wait is woken (wake.c). */
#define CAIRN__WAKE_JOBS 8
/* Held work requests a submission hands a task to at most, in the
 * submission's own journal group (handoff.c). */
#define CAIRN__HANDOFF_MAX 8
typedef struct cairn__handed {
  int64_t claim;  /* the held request (cairn__waiters_claim) */
  json_t *offer;  /* its task, NULL: none found (it asks again) */
} cairn__handed;
typedef struct cairn__wake_entry {
  uint64_t app;
  uint32_t n;
} cairn__wake_entry;
/* Seconds a volunteer counts as present after its latest request (demand.h). */
#define CAIRN__DEMAND_WINDOW 20
/* The presence ring (demand.c): per second of the last window, the volunteers
 * whose latest request fell in it, and of those the ones holding no lease. */
typedef struct cairn__presence {
  int64_t sec[CAIRN__DEMAND_WINDOW];
  uint32_t present[CAIRN__DEMAND_WINDOW], idle[CAIRN__DEMAND_WINDOW];
} cairn__presence;

/* Parents a hold of the lock may find lost (keep.c). */
#define CAIRN__LOST_MAX 16

typedef struct cairn__core {
  pthread_mutex_t lock;
  cairn__logger log;        /* the master's (a copy; NULL at open: stderr, warn) */
  cairn__store *store;
  cairn__ataf_family family;
  char files_dir[4096];

  mvol **vols;             /* vols[id-1] */
  size_t nvols, capvols;
  cairn__hmap vol_by_token; /* first 8 bytes of token hash -> mvol */
  mjob **jobs;             /* jobs[id-1] */
  size_t njobs, capjobs;
  cairn__hmap leases;       /* idx -> mlease */
  lease_heap_item *heap;
  size_t nheap, capheap;
  char peer_secret[65];    /* derives every holder's peer key (common/grant.h); never stored */
  uint64_t peer_gen;       /* the peer keys' generation: volunteers banned so far */
  cairn__dist *dist;       /* files, holders, transfers, rates, plans (dist.h) */
  int64_t next_task_key;

  mjob **runq;             /* jobs not cancelled with ELIGIBLE tasks, by priority, id (life.c) */
  size_t nrunq, caprunq;   /* caprunq >= jobs alive: an insertion never allocates */
  size_t retain_cursor;    /* where the retention scan goes on (life.c) */
  struct { int64_t id; int purge; } *resume; /* deletions a stop interrupted (load.c) */
  size_t nresume;

  cairn__journal *journal; /* its own module and lock (journal.h) */
  pthread_cond_t job_cv;   /* a job's state changed (cairn__job_changed) */

  cairn__resources largest; /* field-wise largest offer seen (fit.h) */
  int any_offer;            /* an offer was seen */
  uint64_t offer_gen;       /* bumped when largest grows */
  cairn__presence presence; /* volunteers present and idle (demand.c) */

  /* counters for /metrics */
  uint64_t allocations_total, results_total[OUT_COUNT], expired_total, bans_total;
  /* the ban's slices (ban.c): results a slice reads (set before serving;
   * 0: CAIRN__BAN_SLICE), slices done since start, and the longest hold of
   * the lock by a ban's step since start, in nanoseconds */
  uint32_t ban_slice;
  uint64_t ban_slices_total, ban_hold_max_ns;
  int ban_stop; /* set (atomically) when the master stops: a ban ends after
                 * its slice, pending, finished at the next start */
  uint64_t handoffs_total;  /* allocations handed in their submission's group (handoff.c) */
  uint64_t failures_total[CAIRN_REASON_KINDS]; /* failed attempts by reason (limits.c) */
  uint64_t quarantines_total, quarantined_now;
  /* adaptive replication (trust.c): the rule's parameters (set before
   * serving), its random state, its counters, and the volunteers whose
   * re-check is due when the current request ends (each once, trust_due) */
  int64_t trust_threshold;
  double spot_check;
  uint64_t trust_rng;
  uint64_t unreplicated_total, spot_checks_total, trust_resets_total, rechecks_total;
  mvol **trust_due;
  size_t ntrust_due, captrust_due;
  /* outputs kept on workers (keep.c): parents whose kept output has no
   * holder left, found under the current hold of the lock, recomputed when
   * it is released (cairn__lost_flush; at most CAIRN__LOST_MAX a hold, more
   * are found again by the next request), and the count of recomputations */
  struct { int64_t job; uint32_t task; } lost[CAIRN__LOST_MAX];
  uint32_t nlost;
  uint64_t recomputed_total;
  /* output files stored under live leases that no result claimed yet
   * (uploads.c): sha256 key (cairn__hash_key) -> cairn__upl, each counted
   * once per lease holding it; their bytes; and the files and bytes
   * reclaimed (their leases ended unclaimed, or found at start-up) */
  cairn__hmap uploads;
  int64_t upload_bytes;
  uint64_t uploads_reclaimed, upload_bytes_reclaimed;
  int64_t orphans_until;   /* the start-up orphans leave then (uploads.h; 0: none) */
  int64_t loaded_at;       /* when the store was loaded: holders are waited for
                              a while after a restart, before any is lost */
  /* quarantine thresholds (quarantine.c): fractions of the window invalid,
   * errors; 0: that test is off. Set before serving. */
  double quar_invalid, quar_errors;

  /* limits (limits.c): the ceiling of every task's limits (0: none), the
   * seconds a lease outlives its task's wall limit; set before serving */
  int64_t ceiling[CAIRN_LIMIT_COUNT];
  int64_t wall_grace;
  cairn__hmap app_runners;  /* hash of an app name -> volunteers registered with it */
  cairn__hmap teams;        /* hash of a team name -> its mteam list (team.c) */
  struct cairn__vcmd *vcmd; /* the command validator's queue and thread (validate.h) */
  /* wake.c: tasks made eligible under the current hold of the lock, told
   * to waker (the held work requests, waiters.h) after the unlock; waker
   * NULL: nothing is noted. Set before serving. */
  cairn__wake_entry wake[CAIRN__WAKE_APPS];
  uint32_t nwake, wake_any;
  void (*waker)(void *ud, uint64_t app, unsigned n);
  void *waker_ud;
  /* wake.c: jobs whose state changed under the current hold of the lock,
   * told to job_waker (the held job waits) after the unlock; more than
   * CAIRN__WAKE_JOBS: wake_all_jobs (told as job 0) */
  int64_t wake_jobs[CAIRN__WAKE_JOBS];
  uint32_t nwake_jobs, wake_all_jobs;
  void (*job_waker)(void *ud, int64_t job);
  /* handoff.c: held work requests a submission claimed (claimer, under the
   * lock) and allocated a task to under the same hold, given their offers
   * by hander after the unlock with the group's last journal record; both
   * NULL: no handoff. Set before serving. */
  cairn__handed handed[CAIRN__HANDOFF_MAX];
  uint32_t nhanded;
  int64_t (*claimer)(void *ud, uint64_t app, int64_t *vol);
  void (*hander)(void *ud, int64_t claim, json_t *offer, uint64_t seq);
} cairn__core;

/* wake.c: releases c->lock, then gives c->hander the offers handed under
 * it (at most CAIRN__HANDOFF_MAX calls), tells c->waker the tasks noted
 * eligible under it (at most CAIRN__WAKE_APPS + 1 calls) and c->job_waker
 * the jobs whose state changed (at most CAIRN__WAKE_JOBS calls). */
void cairn__core_unlock_wake(cairn__core *c);

/* Releases c->lock, first sealing the journal records put under it (one
 * request's changes commit together: journal.h), and after it wakes the
 * held work requests for the tasks that became eligible under it (wake.c).
 * Every holder of c->lock releases it so, never with pthread_mutex_unlock. */
void cairn__lost_flush(cairn__core *c);
static inline void cairn__core_unlock(cairn__core *c) {
  if (c->nlost)
    cairn__lost_flush(c); /* outputs kept on workers that were lost (keep.c) */
  cairn__journal_seal(c->journal);
  if (c->nwake || c->wake_any || c->nwake_jobs || c->wake_all_jobs || c->nhanded)
    cairn__core_unlock_wake(c);
  else
    pthread_mutex_unlock(&c->lock);
}

/* ---- wake.c: eligible tasks told to the held work requests ---- */
/* The hash an app name is matched by (FNV-1a; never 0). */
uint64_t cairn__hash_app(const char *name);
/* Under the lock: n tasks of app became eligible. O(CAIRN__WAKE_APPS). */
void cairn__wake_note(cairn__core *c, const char *app, uint32_t n);
/* Under the lock: job's state changed (it finished, was cancelled, ran
 * again, or was deleted): wakes cairn__core_wait_job's waiters and notes
 * it for the job waker. O(CAIRN__WAKE_JOBS). */
void cairn__job_changed(cairn__core *c, int64_t job);
/* Sets the wakers (before serving), called after the unlock: waker with
 * an app's hash (0: any app) and how many of its tasks became eligible;
 * job_waker with a job whose state changed (0: any job). */
void cairn__core_set_waker(cairn__core *c, void (*waker)(void *ud, uint64_t app, unsigned n),
                           void (*job_waker)(void *ud, int64_t job), void *ud);
/* ---- handoff.c: a new job's tasks straight to held work requests ---- */
/* Under the lock, after job j's record is put: claims up to
 * CAIRN__HANDOFF_MAX held work requests that run j's app (c->claimer) and
 * allocates each one task (cairn__allocate_locked for its volunteer), in
 * this hold's journal group; the offers go out after the unlock
 * (cairn__core_unlock_wake). O(CAIRN__HANDOFF_MAX · (CAIRN__WAITERS_PASS +
 * one allocation)). Returns how many got a task. */
uint32_t cairn__handoff_locked(cairn__core *c, const mjob *j);
/* Sets the handoff's two ends (before serving; NULL: none). */
void cairn__core_set_handoff(cairn__core *c, int64_t (*claimer)(void *ud, uint64_t app,
                                                                int64_t *vol),
                             void (*hander)(void *ud, int64_t claim, json_t *offer,
                                            uint64_t seq));
/* Waits until journal record seq is durable (a handed offer's answer). */
cairn_status cairn__core_durable(cairn__core *c, uint64_t seq, cairn_error *err);
/* The hashes of the apps volunteer vol declared, at most max into out;
 * returns how many it declared (0 when unknown or banned). Takes the lock;
 * O(apps). */
int cairn__core_app_hashes(cairn__core *c, int64_t vol, uint64_t *out, int max);

/* fail_fd (or -1): written to when the master fails (journal.h). */
/* Opens the store at db_path (files next to it in DB.files/), rebuilds the
 * in-memory state from it and starts the commit thread. family: the ATAF
 * family of a new database ("phisharp" when NULL); an existing database keeps
 * the family it was created with, and naming another one is an error. */
cairn__core *cairn__core_open(const char *db_path, int durable, const char *family,
                             const cairn__logger *log, int fail_fd, cairn_error *err);
/* Chooses the broadcast planner (cairn__bplan_algorithms()); CAIRN_EINVAL
 * naming the choices when unknown. */
cairn_status cairn__core_set_bplan(cairn__core *c, const char *algo, cairn_error *err);
/* on 1 (default): a worker still receiving a broadcast file, whose reports
 * say it relays ("chunks"), may be named as a source of it (cut-through);
 * 0: sources are whole copies only (store-and-forward). relay.c. */
void cairn__core_set_cut_through(cairn__core *c, int on);
/* Chooses the planner of kept outputs' copies (mcast.c): WR, WRP, CDMD or
 * online (default); CAIRN_EINVAL naming the choices when unknown. */
cairn_status cairn__core_set_mcast(cairn__core *c, const char *algo, cairn_error *err);
/* CAIRN_OK while the master works; CAIRN_EFAILED (reason in err) once its
 * journal has failed (journal.h): nothing is acknowledged after that. */
cairn_status cairn__core_health(cairn__core *c, cairn_error *err);
/* The master is stopping: a ban running now ends after its current slice
 * (CAIRN_EIO; it stays pending in the store and cairn__core_ban_resume
 * finishes it at the next start). Any thread; O(1). */
void cairn__core_stop_bans(cairn__core *c);
/* Stops the commit thread after the last batch and closes the store. */
void cairn__core_close(cairn__core *c);

/* ---- operations (each takes the lock itself) ---- */
cairn_status cairn__core_register(cairn__core *c, const char *name, const char *cluster,
                                  char **apps, int napps, int slots, const char *peer_url,
                                  int64_t *id, char token[65], cairn_error *err);
/* The same, with team (checked by cairn__team_valid; NULL: none). */
cairn_status cairn__core_register_team(cairn__core *c, const char *name, const char *cluster,
                                       char **apps, int napps, int slots, const char *peer_url,
                                       const char *team, int64_t *id, char token[65],
                                       cairn_error *err);
/* Volunteer id's team becomes team (checked by cairn__team_valid; NULL:
 * none). Its credit stays with the teams it was earned in (team.c); what it
 * earns next counts for team. CAIRN_ENOTFOUND, CAIRN_ECONFLICT for a
 * banned volunteer; no change journals nothing. Takes the lock; O(1). */
cairn_status cairn__core_set_team(cairn__core *c, int64_t id, const char *team, cairn_error *err);
/* Counts bytes of file sha256 the master sent. */
void cairn__core_served_by_master(cairn__core *c, const char *sha256, uint64_t bytes);
/* The id of the volunteer holding token (*vol); CAIRN_EAUTH for an
 * unknown token, CAIRN_EFORBIDDEN for a banned volunteer. O(1). */
cairn_status cairn__core_auth(cairn__core *c, const char *token, int64_t *vol, cairn_error *err);

/* Each call below takes a volunteer id from cairn__core_auth and checks it
 * again under the lock (CAIRN_EFORBIDDEN once banned). A worker's report r
 * (a work or heartbeat body, checked by cairn__report_parse; NULL: none) is
 * applied in the same lock acquisition as the rest of the call: failed
 * sources, holdings, bytes served, its peer URL, measured downloads. */

/* Applies r, then allocates the best eligible task of an app the volunteer
 * runs (restricted to apps[] when napps > 0). *resp is the /v1/work body,
 * or NULL when none; then *retry_ms > 0 when a task waits for a copy of its
 * broadcast input landing in the volunteer's cluster (ask again that soon),
 * or CAIRN__QUAR_RETRY_MS for a volunteer in quarantine (no task at all).
 * Only tasks whose request fits what the volunteer's offer leaves free are
 * handed out (fit.h). Cost: the report's, plus, for each of the E jobs with
 * eligible tasks (c->runq, walked in priority order; jobs without work are
 * not visited) whose app it runs, at most 32 policy picks (put back when
 * they do not fit), 32 parked tasks given back and O(its distinct requests
 * <= 64). */
cairn_status cairn__core_work(cairn__core *c, int64_t vol, const cairn__report *r, char **apps,
                              int napps, json_t **resp, int *retry_ms, cairn_error *err);
/* What a volunteer may read (GET /v1/files, GET /v1/tasks/{key}/output):
 * CAIRN_OK when file sha256 is an input of a task it holds a lease on, or
 * task key is a parent of one; else CAIRN_EFORBIDDEN. O(leases the
 * volunteer holds × inputs or parents of their tasks). */
cairn_status cairn__core_may_read_file(cairn__core *c, int64_t vol, const char *sha256,
                                       cairn_error *err);
cairn_status cairn__core_may_read_output(cairn__core *c, int64_t vol, int64_t key,
                                         cairn_error *err);
/* What a result carries besides its output: the tail of standard error and
 * the output files it names (uploaded before; sorted by name here). */
typedef struct cairn__result_extra {
  const void *err_tail;
  size_t err_len;
  cairn__output_file *files;
  size_t nfiles;
  double cpu_seconds; /* its claim (cairn__result_cpu_parse), when has_cpu */
  int has_cpu;
} cairn__result_extra;
/* Records a result; reason: why it failed (cairn__reason_valid), or NULL to
 * derive "exit N" from a non-zero exit_status; x may be NULL (no stderr, no
 * files). Cost under the lock: O(children of the task) (plus the
 * validator's, validate.h), and when the result resets a volunteer's trust,
 * the re-check of its ring (trust.c). Its digest is cairn__digest_result_files() of the output and the files.
 * With next != NULL, also allocates the volunteer's next task in the same
 * batch (*next = the /v1/work body, or NULL when none). */
cairn_status cairn__core_result(cairn__core *c, int64_t vol, int64_t idx, int exit_status,
                                const char *reason, const void *output, size_t len,
                                cairn__result_extra *x, json_t **next, cairn_error *err);
/* The pieces of cairn__core_result and cairn__core_work that batches
 * (batch.c) run several times under one hold of the lock. The digest of a
 * result (cairn__digest_result_files of output and files), outside the lock:
 * O(len + files log files). */
void cairn__result_digest(const void *output, size_t len, const cairn__result_extra *x,
                          char digest[65]);
/* Under the lock, v in good standing: records the result of lease idx as
 * cairn__core_result does (same errors, same journal records; nothing is
 * changed when it fails but a cancelled job's lease, which ends). O(today's
 * result: the validator's comparison, the task's replicas, its children). */
cairn_status cairn__result_locked(cairn__core *c, mvol *v, int64_t idx, int exit_status,
                                  const char *reason, const void *output, size_t len,
                                  cairn__result_extra *x, const char *digest, cairn_error *err);
/* Under the lock: allocates one task for v as cairn__core_work does (the
 * /v1/work body, or NULL with *st CAIRN_OK when none; *waiting as its
 * retry). ahead: the task is taken ahead of a free slot, and must fit v's
 * whole offer instead of what its leases leave free. */
json_t *cairn__allocate_locked(cairn__core *c, mvol *v, char **apps, int napps, int ahead,
                               int *waiting, cairn_status *st, cairn_error *err);

/* How soon a worker waiting for a copy of a broadcast input should ask
 * again, in ms (under the lock). O(1). */
int cairn__copy_retry_ms_locked(const cairn__core *c);

/* ---- batch.c: several tasks or results in one request (feature "batch") ---- */
/* One result of a batch: in, the checked body (borrowed); out, st and err. */
typedef struct cairn__batch_result {
  int64_t idx;
  int exit_status;
  const char *reason;          /* NULL: "exit N" from exit_status */
  const void *output;
  size_t len;
  cairn__result_extra x;
  char digest[65];             /* filled by cairn__core_results, outside the lock */
  cairn_status st;             /* CAIRN_OK: accepted */
  cairn_error err;
} cairn__batch_result;
/* Takes up to max (1 to CAIRN_MAX_BATCH) tasks for volunteer vol, as
 * cairn__core_work takes one, in one hold of the lock (one journal group):
 * while its leases fit its offer, as today; beyond that (tasks run after
 * its free slots: a worker's prefetch) each must fit the whole offer, and
 * the volunteer holds at most its slots + CAIRN_MAX_PREFETCH leases.
 * *tasks: a new array of /v1/work bodies (maybe empty). Cost under the
 * lock: max × cairn__core_work's. */
cairn_status cairn__core_work_many(cairn__core *c, int64_t vol, const cairn__report *r,
                                   char **apps, int napps, unsigned max, json_t **tasks,
                                   int *retry_ms, cairn_error *err);
/* Applies the n (<= CAIRN_MAX_BATCH) results of res[] for volunteer vol in
 * one hold of the lock (one journal group, one fsync), each as
 * cairn__core_result would (res[i].st, res[i].err: one refused entry does
 * not stop the others), then takes up to next (0 to CAIRN_MAX_BATCH) tasks
 * as cairn__core_work_many (*tasks; NULL when next is 0), and waits for the
 * batch. CAIRN_OK unless the volunteer is refused or the journal failed
 * (then nothing was acknowledged). Cost under the lock: O(n × one result +
 * next × one allocation); the digests are computed before taking it. */
cairn_status cairn__core_results(cairn__core *c, int64_t vol, cairn__batch_result *res, size_t n,
                                 unsigned next, json_t **tasks, cairn_error *err);
/* Applies r, then extends the volunteer's leases: those r lists in
 * "running" when it has the field (a worker names the tasks it runs, so a
 * lease whose work answer never reached it is left to expire), else all of
 * them. O(report + leases held × running listed). */
cairn_status cairn__core_heartbeat(cairn__core *c, int64_t vol, const cairn__report *r,
                                   json_t **resp, cairn_error *err);
/* ban.c (docs/accountability.md, "Banning a volunteer"). cairn__core_ban
 * bans volunteer id: refuses its token, marks its results invalid,
 * re-queues every task whose accepted result relied on it and every
 * descendant that consumed a re-queued output; *report gets the totals.
 * It runs in steps, each under its own hold of the lock and in its own
 * journal group, each waiting until its group is durable before the next:
 *  1. the mark (cairn__ban_mark): banned, J_BAN (the ban pending in the
 *     store, its holdings deleted there), its leases revoked, out of the
 *     census: O(its leases);
 *  2. slices of at most c->ban_slice (CAIRN__BAN_SLICE, 256) entries of its
 *     index mvol.did (cairn__ban_tasks): O(K × results of a round) to
 *     invalidate and re-name, plus the re-queue of what they re-open
 *     (cairn__core_requeue: O(Σ (deg + 1) · log n) over the re-opened tasks
 *     and their descendants, never a job's other tasks); and the next
 *     CAIRN__BAN_FILES buckets of the file table, whose holdings of it
 *     and copies on their way to it are forgotten in memory
 *     (cairn__dist_forget_step: O(CAIRN__BAN_FILES + those files' copies
 *     under way)). Until then no source decision names it (a banned
 *     holder is never usable);
 *  3. the end: J_BAN_DONE, the index freed: O(1).
 * Nothing scans a job or the volunteers. Re-doing a slice changes nothing
 * (its results are invalid already), so cairn__core_ban_resume (master.c
 * calls it once the core is open and the audit chain started, before
 * serving) finishes the bans the store says are pending from their first
 * entry (O(volunteers) to find them). */
#define CAIRN__BAN_SLICE 256u
#define CAIRN__BAN_FILES 4096u
/* Under the lock: ban counters added to (invalidated, tasks and
 * descendants re-queued; ids gets {job, task} per re-queued task). */
typedef struct cairn__ban_tally {
  int64_t invalidated, requeued, tainted;
  json_t *ids;
} cairn__ban_tally;
void cairn__ban_mark(cairn__core *c, mvol *bad, const char *reason);
/* Under the lock: vol's results in tasks[0..n) of job j (a task may come
 * twice) become invalid; those tasks re-name an honest accepted result or
 * are re-queued. */
cairn_status cairn__ban_tasks(cairn__core *c, mjob *j, int64_t vol, const uint32_t *tasks,
                              uint32_t n, cairn__ban_tally *t, cairn_error *err);
/* Under the lock: v has a result for task of job j (its index entry);
 * -1 out of memory. O(1) amortized: when its array is full, the entries
 * of deleted jobs are dropped first (O(its entries), once per doubling). */
int cairn__ban_note(const cairn__core *c, mvol *v, const mjob *j, uint32_t task);
cairn_status cairn__core_ban_resume(cairn__core *c, cairn_error *err);
cairn_status cairn__core_ban(cairn__core *c, int64_t id, const char *reason, json_t **report,
                             cairn_error *err);
/* quarantine.c: a volunteer whose share of invalid results (or errors)
 * over its last CAIRN__QUAR_WINDOW results, once it has at least
 * CAIRN__QUAR_MIN, exceeds c->quar_invalid (c->quar_errors) gets no new
 * task until released; nothing is recomputed. cairn__quar_note records v's
 * final outcome (under the lock, O(1)); cairn__quar_crossed is the test
 * (bad > threshold × seen, seen >= CAIRN__QUAR_MIN, threshold > 0).
 * cairn__core_release ends a quarantine and empties the window (takes the
 * lock; CAIRN_ENOTFOUND, CAIRN_ECONFLICT when it is not quarantined). */
void cairn__quar_note(cairn__core *c, mvol *v, int outcome);
/* credit.c (docs/accountability.md, "Credit"), each under the lock:
 * cairn__credit_grant: the task's quorum was reached with canonical result
 * cn; sets the credit of each of r's results to the agreed claim (the
 * lowest claim among the results that agree with cn; 0 when none claims).
 * O(results of the round). cairn__credit_late: m arrived for task t
 * already DONE: it gets the accepted result's credit. O(results of the
 * round). cairn__credit_count: m's outcome OUT_VALID was added (delta +1)
 * or removed (-1): v's totals move by m's credit and claim, journaled with
 * the result. O(1). */
void cairn__credit_grant(const mjob *j, mrep *r, const mres *cn);
void cairn__credit_late(const mtask *t, mres *m);
void cairn__credit_count(cairn__core *c, mvol *v, mres *m, int delta);
/* The one rule for a total of valid results (a volunteer's, a team's):
 * *n, *credit and *cpu move by delta times one result, m's credit and its
 * claim; none left means no rounding residue, and sums never go below 0. */
void cairn__credit_tally(int64_t *n, double *credit, double *cpu, const mres *m, int delta);
/* team.c, the team ledger (docs/accountability.md, "Teams"): a team's sums
 * of the credit, claims and number of the valid results granted while
 * their volunteer was in it; entries live as long as the core (one per team
 * that ever earned credit, found by a hash of its name). Under the lock:
 * cairn__team_count: m's credit counts for team (delta +1; NULL: none) or
 * stops counting for the team it counted for (-1), journaled. O(1)
 * (a hash look-up). cairn__team_load: a ledger row at start-up (-1: out of
 * memory); cairn__teams_free at close. */
typedef struct mteam {
  struct mteam *next; /* another name of the same hash */
  char *name;
  double credit, cpu_seconds;
  int64_t results;
} mteam;
void cairn__team_count(cairn__core *c, mres *m, const char *team, int delta);
int cairn__team_load(void *ud, const cairn__store_team_row *r);
mteam *cairn__team_find(cairn__core *c, const char *name);
void cairn__teams_free(cairn__core *c);
int cairn__quar_crossed(unsigned seen, unsigned bad, double threshold);
cairn_status cairn__core_release(cairn__core *c, int64_t id, cairn_error *err);

/* ---- trust.c: adaptive replication (docs/accountability.md, "Adaptive
 * replication"); all under c->lock ---- */
/* The defaults of the rule's parameters. */
#define CAIRN_DEFAULT_TRUST_THRESHOLD 10
#define CAIRN_DEFAULT_SPOT_CHECK 0.1
/* The unreplicated accepted results a volunteer keeps for a re-check. */
#define CAIRN__TRUST_RING 32
/* Called when task t's round gets its first copy, on v (after it is
 * recorded): 1 when that copy runs alone (j adaptive, t never re-queued,
 * v trusted, and no spot check drawn). O(1). */
int cairn__trust_solo(cairn__core *c, const mjob *j, const mtask *t, const mvol *v);
/* Whether r's round still runs once when v's result arrives (ok: its exit
 * status was 0): not when it failed, nor when v lost its trust meanwhile;
 * the round is then replicated to the quorum. O(1). */
int cairn__trust_solo_stands(const cairn__core *c, const mrep *r, const mvol *v, int ok);
/* v's result m got final outcome (valid or invalid): a valid replicated
 * one adds to its trust, an invalid one resets it and makes a re-check due
 * (cairn__trust_flush). O(1). */
void cairn__trust_note(cairn__core *c, mvol *v, const mres *m, int outcome);
/* A lease of v lapsed unreturned: its trust goes back to 0 (journaled when
 * it had any), so its next results are replicated again; its accepted
 * results are not re-checked (a lapse is no evidence against them). O(1). */
void cairn__trust_lapsed(cairn__core *c, mvol *v);
/* Task task of j was accepted on its solo result cn: it joins its
 * volunteer's ring (the oldest entry leaves a full ring). O(1). */
void cairn__trust_accepted(cairn__core *c, mjob *j, uint32_t task, const mres *cn);
/* Re-checks the rings of the volunteers whose trust reset in this request:
 * each entry still accepted is re-queued with what consumed it
 * (cairn__core_requeue), and the ring empties. Called by the request once
 * its own result is applied. O(ring + the re-queue's cost) a volunteer. */
void cairn__trust_flush(cairn__core *c);
/* An eligible task t (position v) of an adaptive job whose round already
 * has a copy out or a result goes to j's urgent ring instead of the
 * policy's ready set, so that a round's copies go out together and its
 * verdict (a spot check's, or the one that earns trust) comes soon: 1 when
 * it did (t->queued set), 0 to leave it to the policy. O(1). */
int cairn__trust_enqueue(mjob *j, mtask *t, uint32_t v);
/* Takes the oldest task of j's urgent ring into *v while *budget lasts
 * (one a take): 1, or 0 when none (the policy picks then). Entries made
 * stale by a re-queue (cairn__core_requeue) or an acceptance are skipped:
 * O(1) amortized, each entry skipped once. */
int cairn__trust_pick(mjob *j, uint32_t *v, unsigned *budget);
/* Adds a ring entry read from the store (load.c). 0, or -1 out of memory. */
int cairn__trust_load(cairn__core *c, const cairn__store_trust_row *r);
/* Frees v's ring. */
void cairn__trust_free(mvol *v);
/* The copies a round needs to agree: 1 when it runs once, else j's quorum. */
static inline int cairn__quorum_of(const mjob *j, const mrep *r) {
  return r && r->solo ? 1 : j->quorum;
}
/* Re-queues tasks seeds[0..n) of job j (done ones whose accepted result is
 * discredited) in new rounds, and every descendant that consumed a
 * re-queued output (the ban's path, core.c): O(Σ (deg(v) + 1) · log n)
 * over those tasks v (marks in a map, the walk, the policy's reset and
 * ready, policy.h), never the job's other tasks. *requeued, *tainted (may be
 * NULL) grow by the tasks and the descendants; ids (may be NULL) gets
 * {"job", "task"} for each seed. CAIRN_ENOMEM with err. */
cairn_status cairn__core_requeue(cairn__core *c, mjob *j, const uint32_t *seeds, uint32_t n,
                                 int64_t *requeued, int64_t *tainted, json_t *ids,
                                 cairn_error *err);
/* ---- outputs kept on workers (keep.c, part of the core for this; the
 * sources and holdings are distribution's, dist.h) ---- */
/* Under the lock: task parent of j is DONE but an output a child reads is
 * held by no worker the master can offer and not by the master: noted for
 * cairn__lost_flush (each once; ignored past CAIRN__LOST_MAX). O(nlost). */
void cairn__lost_note(cairn__core *c, const mjob *j, uint32_t parent);
/* Recomputes the noted parents (cairn__core_recompute) and empties the
 * list; called by cairn__core_unlock under the lock before the seal. */
void cairn__lost_flush(cairn__core *c);
/* Makes DONE task parent of j eligible again in a new round (its results
 * keep their outcomes: they were right, only their files are gone), and
 * its children that are not DONE wait for it again (their leases end,
 * their results are tainted). The audit shows the new allocation. Cost:
 * O((children of parent + 1) · (their degrees + 1) · log n): the policy
 * re-opens parent and resets those children in place (policy.h), nothing
 * else of the job is looked at. */
cairn_status cairn__core_recompute(cairn__core *c, mjob *j, uint32_t parent, cairn_error *err);

/* Volunteer vol may upload file sha256 (PUT /v1/files, as it leaves): the
 * master has no bytes of it (an output kept on workers), vol holds it, and
 * no other holder can be offered. CAIRN_ECONFLICT otherwise (not needed),
 * CAIRN_EFORBIDDEN when vol does not hold it. Takes the lock;
 * O(CAIRN__KEEP_SCAN). */
cairn_status cairn__core_kept_upload(cairn__core *c, int64_t vol, const char *sha256,
                                     cairn_error *err);

/* 1 with *size when sha256 is an output kept on workers (the master has no
 * bytes of it), else 0. Takes the lock; O(1). */
int cairn__core_kept_file(cairn__core *c, const char *sha256, int64_t *size);
/* The master served kept file sha256's chunk digests (GET
 * /v1/files/{sha256}/chunks): its receivers may be named as relays of it
 * (keep.c). Takes the lock; O(1). */
void cairn__core_kept_chunked(cairn__core *c, const char *sha256);

/* Takes ownership of spec. Under the lock: O(tasks + edges) for the tasks'
 * states and the job's place in the queue, plus the handoff (at most
 * CAIRN__HANDOFF_MAX allocations, handoff.c) in the same journal group. */
cairn_status cairn__core_submit(cairn__core *c, cairn__jobspec *spec, int64_t *job_id,
                                cairn_error *err);
/* Records a file already moved to files_dir/sha256. */
cairn_status cairn__core_add_file(cairn__core *c, const char *sha256, int64_t size, int *existed,
                                  cairn_error *err);
int cairn__core_has_file(cairn__core *c, const char *sha256, int64_t *size);
/* Expires every lease whose deadline is <= now. Returns how many. */
int cairn__core_expire(cairn__core *c, int64_t now);
/* Waits until job is done, failed or cancelled, or timeout_ms passes (<0:
 * forever). CAIRN_OK with *state JS_DONE, JS_FAILED or JS_CANCELLED (durable); CAIRN_ETIMEOUT
 * (*state JS_RUNNING); CAIRN_ENOTFOUND; CAIRN_EFAILED (the master failed). */
cairn_status cairn__core_wait_job(cairn__core *c, int64_t job, long timeout_ms, int *state,
                                  cairn_error *err);
/* ---- a job's life (life.c); each takes the lock, journals, and waits for
 * the batch after releasing it ---- */
/* Cancels job id (see the job states above). *out: {"job", "state",
 * "leases_out", "already"}. CAIRN_ENOTFOUND, CAIRN_ECONFLICT (finished).
 * O(E) under the lock, E = c->nrunq (it leaves the queue: a memmove). */
cairn_status cairn__core_cancel(cairn__core *c, int64_t id, json_t **out, cairn_error *err);
/* Sets job id's priority. O(E) under the lock, E = c->nrunq (a memmove). */
cairn_status cairn__core_priority(cairn__core *c, int64_t id, int64_t priority, json_t **out,
                                  cairn_error *err);
/* Deletes job id (cancelling it first when it runs or has leases out,
 * whatever its state); purge: its allocations
 * too. CAIRN_ECONFLICT while leases of it are out (the cancel is durable
 * then; they end within one heartbeat period). *out says what went:
 * {"job", "purged", "tasks", "tasks_kept", "results", "result_bytes",
 * "allocations", "files", "file_bytes"}. Under the lock: O(1) to detach (O(E)
 * if it was queued), O(1) per journal step, then O(files removed) to forget
 * them; the job's memory is freed after the lock; the store's work is the
 * commit thread's, in transactions of at most 1,024 tasks' rows each (their
 * results, dependencies, allocations when purged), then one for the job's
 * file list and files. */
cairn_status cairn__core_delete(cairn__core *c, int64_t id, int purge, json_t **out,
                                cairn_error *err);
/* Finishes the deletions a stop interrupted (jobs the store marks deleting
 * or purging), before the master serves. */
cairn_status cairn__core_resume_deletes(cairn__core *c, cairn_error *err);
/* Deletes finished (done, failed, cancelled) jobs that finished at least
 * keep_seconds before now, with no lease out; looks at at most 1,024 jobs
 * per call under the lock (a cursor goes round). Returns how many. */
int cairn__core_retain(cairn__core *c, int64_t now, int64_t keep_seconds);
/* life.c: keeps j's place in c->runq true after its state, eligible count
 * or priority changed (under the lock). O(log E) to find, O(E) memmove. */
void cairn__jobq_update(cairn__core *c, mjob *j);
/* Makes room in c->runq for one more live job. 0, or -1 out of memory. */
int cairn__jobq_reserve(cairn__core *c);

/* Writes a trivial record through the commit path and waits for it. */
cairn_status cairn__core_probe_write(cairn__core *c, cairn_error *err);

/* ---- read-only views: copies made under the lock, for the HTTP layer and
 * the audit read model, which never take the lock themselves ---- */

/* What the audit shows of a volunteer (a copy). */
typedef struct cairn__vol_info {
  int64_t id, allocations, valid, invalid, pending, errors, last_seen;
  int banned, slots, quarantined;
  int64_t trust;                 /* its valid replicated results in a row (trust.c) */
  int trusted;                   /* not banned and trust >= the threshold */
  char name[CAIRN_MAX_NAME + 1], cluster[CAIRN_MAX_NAME + 1];
} cairn__vol_info;
/* Fills *out with volunteer id; CAIRN_ENOTFOUND when there is none. O(1). */
cairn_status cairn__core_volunteer(cairn__core *c, int64_t id, cairn__vol_info *out,
                                   cairn_error *err);
/* The ATAF family of the database (fixed for its life). */
cairn__ataf_family cairn__core_family(const cairn__core *c);
/* The store's audit rows (cairn__store_audit): by index n, volunteer or task
 * (by: CAIRN_AUDIT_BY_*). */
cairn_status cairn__core_audit(cairn__core *c, int by, int64_t key,
                               int (*cb)(void *, const cairn__store_audit_row *), void *ud,
                               cairn_error *err);
/* The credit standings from the store's reader (cairn__store_stats; never
 * takes c->lock). */
cairn_status cairn__core_stats(cairn__core *c, int limit,
                               int (*cb)(void *, const cairn__store_stats_row *), void *ud,
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
 * {"tasks": [...], "next": the last one's key when more follow, else null}.
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

int64_t cairn__now(void);

/* load.c: rebuild state from the store (before the commit thread starts). */
cairn_status cairn__core_load(cairn__core *c, cairn_error *err);
/* Shared helpers. */
void cairn__job_free(mjob *j);
void cairn__vol_free(mvol *v);
int cairn__job_start_policy(mjob *j, cairn_error *err);
/* (Re)creates the job's policy state from the task states: executed for DONE
 * tasks in topological order, ready for ELIGIBLE ones. O(n + m): at
 * start-up only (load.c); a re-queue takes tasks back in place (reset). */
int cairn__job_rebuild_policy(mjob *j, cairn_error *err);
/* Adds a result to a task's replica record (allocating it). 0 or -1 (OOM). */
int cairn__rep_add_result(mtask *t, int64_t idx, int64_t vol, const char *digest, int ok,
                          int outcome);
int cairn__rep_add_vol(mtask *t, int64_t vol);
/* volunteers.c, under the lock: volunteer id in good standing, or NULL with
 * *st and err set (unknown, or banned since its request was authenticated).
 * O(1). */
mvol *cairn__vol_locked(cairn__core *c, int64_t id, cairn_status *st, cairn_error *err);
/* volunteers.c, under the lock: applies v's report r (NULL: none). */
void cairn__vol_report(cairn__core *c, mvol *v, const cairn__report *r);
/* Records that v holds lease idx. 0, or -1 out of memory. */
int cairn__vol_add_active(mvol *v, int64_t idx);
/* The leases v may hold at once (volunteers.c, docs/security.md "Leases"):
 * what it can run, min(its slots, the cores it offers when it stated an
 * offer, CAIRN__LEASE_START + its results not found invalid), plus
 * CAIRN_MAX_PREFETCH ahead. Whatever a volunteer declares or omits, a new
 * one holds at most CAIRN__LEASE_START + CAIRN_MAX_PREFETCH leases, and
 * one more for each result it returns. O(1). */
#define CAIRN__LEASE_START 4
/* A work request refused at the bound asks its volunteer to come back this
 * late (a result of its may free a lease sooner). */
#define CAIRN__LEASE_FULL_RETRY_MS 1000
size_t cairn__vol_lease_bound(const mvol *v);
/* Takes the lock: the work requests volunteer vol may have held at once
 * (waiters.h, "Fairness"): its slots, or fewer, what its lease bound
 * leaves it to take; at least 1 (1 for an unknown volunteer). O(1). */
unsigned cairn__core_hold_cap(cairn__core *c, int64_t vol);
/* Under the lock: the error of a work request from v, at its lease bound
 * (CAIRN_ERATE, naming the bound and its terms). */
cairn_status cairn__vol_lease_full(const mvol *v, cairn_error *err);
/* Under the lock: lease l of v ended unreturned (expired). Costs v its
 * trust (its next results are replicated again) and, once per lease period
 * of l's job, one error in its quarantine window (quarantine.c): a
 * volunteer that takes leases and lets them lapse period after period is
 * quarantined like one whose runs fail. O(1). */
void cairn__vol_lapsed(cairn__core *c, mvol *v, int lease_seconds, int64_t now);
void cairn__rep_free(mrep *r);

int cairn__lease_push(cairn__core *c, int64_t expires, int64_t idx);

/* ---- limits.c: what tasks run under, hard deadlines, failure reasons ---- */
/* The seconds a lease outlives its task's wall limit unless set. */
#define CAIRN_DEFAULT_WALL_GRACE_SECONDS 30
/* Seconds a task that failed on a volunteer is kept from that volunteer,
 * so that another one gets it first: longer than a worker's longest poll
 * back-off (5 s). */
#define CAIRN_RETRY_HOLD_SECONDS 6
/* Sets the ceiling (0: none for a limit) and the wall grace (0: the
 * default) before serving; recomputes the hard deadlines of the leases
 * loaded from the store (O(leases)). CAIRN_EINVAL naming a bad value. */
cairn_status cairn__core_set_limits(cairn__core *c, const int64_t ceiling[CAIRN_LIMIT_COUNT],
                                    int wall_grace, cairn_error *err);
/* Checks spec's limits against c's ceiling (refused naming the limit and
 * the flag) and gives unset limits the ceiling. O(tasks), no lock. */
cairn_status cairn__core_check_limits(const cairn__core *c, cairn__jobspec *spec, cairn_error *err);
/* The lease's hard deadline for task t issued at issued (0: none). O(1). */
int64_t cairn__lease_hard(const cairn__core *c, const mtask *t, int64_t issued);
/* expires, capped at l's hard deadline. O(1). */
int64_t cairn__lease_cap(const mlease *l, int64_t expires);
/* Sets t->run_json (owned copy; NULL for an empty run) and t->wall. 0, or -1
 * out of memory. */
int cairn__task_set_run(mtask *t, const char *run_json);
/* Adds t's "limits", "env", "stdin" to task (a work offer's "task"). */
void cairn__task_offer_run(const mtask *t, json_t *task);
/* Counts a failed attempt of t on volunteer vol by reason (under the lock):
 * cairn_task_failures_total, and vol is passed over for t a while. O(1). */
void cairn__task_failed(cairn__core *c, mtask *t, int64_t vol, const char *reason);
/* Counts v among the volunteers of each app it declared (under the lock at
 * registration, or at load). O(apps of v). 0, or -1 out of memory. */
int cairn__app_runners_add(cairn__core *c, const mvol *v);
/* 1 when task t of job j should go to another volunteer than vol first:
 * vol failed it last, less than CAIRN_RETRY_HOLD_SECONDS ago, and another
 * registered volunteer declared j's app. O(1). */
int cairn__task_pass_over(const cairn__core *c, const mjob *j, const mtask *t, int64_t vol,
                          int64_t now);
/* GET /v1/jobs/{id}/tasks/{key}: the task with its run and every attempt
 * (index, volunteer, lease state, exit status, reason). Under the lock
 * O(1) (the key is found by its offset in the job); the attempts are read
 * from the store after. NULL with err (CAIRN_ENOTFOUND, ...). */
json_t *cairn__core_task_json(cairn__core *c, int64_t job, int64_t key, cairn_error *err);
uint64_t cairn__hash_key(const char *hex);
char *cairn__strdup(const char *s);

#endif
