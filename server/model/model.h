/* model.h — the master's state in memory: jobs, tasks and their rounds,
 * results, volunteers, leases, and the core's struct that holds them under
 * c->lock (private to server/). The scheduling core (server/core/) makes
 * every transition (its state machines: server/core/core.h); the layers
 * below it, trust (server/trust/) and distribution (server/dist/), read and
 * change the parts this file says are theirs, under the same lock, and call
 * the core back only through c->calls. */
#ifndef CAIRN_SERVER_MODEL_H
#define CAIRN_SERVER_MODEL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "common/ataf.h"
#include "common/dag.h"
#include "common/error.h"
#include "common/jobspec.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/outputs.h"
#include "common/policy.h"
#include "common/protocol.h"
#include "common/taskrun.h"
#include "server/base/hmap.h"
#include "server/base/util.h"
#include "server/store/journal.h"
#include "server/store/store.h"

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
                          * files (server/core/outputs.h); NULL: none */
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

typedef struct cairn__core cairn__core;
/* What the layers below the core (server/trust/, server/dist/) and this
 * header ask of the core: set by cairn__core_open before anything runs
 * (core.c), read under c->lock. Each is the core's function of the same
 * name (server/core/core.h), which those layers may not include. */
struct cairn__vpair;
typedef struct cairn__core_calls {
  /* cairn__core_unlock_wake (wake.c): unlocks and tells the wakers */
  void (*unlock_wake)(cairn__core *c);
  /* cairn__lost_flush (server/dist/keep.c): recomputes lost kept outputs */
  void (*lost_flush)(cairn__core *c);
  /* cairn__core_requeue (core.c): a trust re-check's re-queue (trust.c) */
  cairn_status (*requeue)(cairn__core *c, mjob *j, const uint32_t *seeds, uint32_t n,
                          int64_t *requeued, int64_t *tainted, json_t *ids, cairn_error *err);
  /* cairn__core_verdict (core.c): the command validator's verdict (vcmd.c) */
  void (*verdict)(cairn__core *c, const struct cairn__vpair *p, int agree);
  /* cairn__core_recompute (core.c): a lost kept output made again (keep.c) */
  cairn_status (*recompute)(cairn__core *c, mjob *j, uint32_t parent, cairn_error *err);
} cairn__core_calls;

struct cairn__core {
  pthread_mutex_t lock;
  cairn__core_calls calls;  /* set at open (above) */
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
};

/* A parent's output file that a task reads ("inputs": ["PARENT/NAME"]). */
typedef struct cairn__pin {
  uint32_t parent; /* task index in the job */
  char *file;
} cairn__pin;

/* A task's outputs (mtask.io; NULL for a task that declares none and reads
 * no parent's file). */
typedef struct cairn__tio {
  cairn__output_patterns outputs;
  cairn__pin *pins;
  uint32_t npins;
  cairn__output_file *files; /* the accepted result's files (none until done) */
  uint32_t nfiles;
} cairn__tio;

/* The file called name among t's accepted files, or NULL. O(its files). */
static inline const cairn__output_file *cairn__outputs_file(const mtask *t, const char *name) {
  for (uint32_t i = 0; t->io && i < t->io->nfiles; i++)
    if (strcmp(t->io->files[i].name, name) == 0)
      return &t->io->files[i];
  return NULL;
}

/* The copies a round needs to agree: 1 when it runs once, else j's quorum. */
static inline int cairn__quorum_of(const mjob *j, const mrep *r) {
  return r && r->solo ? 1 : j->quorum;
}

/* Under the lock: volunteer id in good standing, or NULL with *st and err
 * set (unknown, or banned since its request was authenticated). O(1). */
static inline mvol *cairn__vol_locked(cairn__core *c, int64_t id, cairn_status *st,
                                      cairn_error *err) {
  mvol *v = id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
  if (!v)
    *st = cairn__error_set(err, CAIRN_EAUTH, "no volunteer %lld", (long long)id);
  else if (v->banned)
    *st = cairn__error_set(err, CAIRN_EFORBIDDEN, "volunteer %lld is banned", (long long)id);
  return v && !v->banned ? v : NULL;
}

/* Releases c->lock, first sealing the journal records put under it (one
 * request's changes commit together: journal.h), and after it wakes the
 * held work requests for the tasks that became eligible under it (wake.c).
 * Every holder of c->lock releases it so, never with pthread_mutex_unlock. */
static inline void cairn__core_unlock(cairn__core *c) {
  if (c->nlost)
    c->calls.lost_flush(c); /* outputs kept on workers that were lost (keep.c) */
  cairn__journal_seal(c->journal);
  if (c->nwake || c->wake_any || c->nwake_jobs || c->wake_all_jobs || c->nhanded)
    c->calls.unlock_wake(c);
  else
    pthread_mutex_unlock(&c->lock);
}

#endif
