/* state.h — the core's struct (cairn__core): the entities of model.h
 * under c->lock, the tables that find them, and c->calls, through which the
 * layers below the core (server/trust/, server/dist/) call it back; the
 * lock's release (cairn__core_unlock). Private to server/. */
#ifndef CAIRN_SERVER_STATE_H
#define CAIRN_SERVER_STATE_H

#include <jansson.h>
#include <pthread.h>

#include "server/model/model.h"

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

typedef struct cairn__core cairn__core;
/* What the layers below the core (server/trust/, server/dist/) and this
 * header ask of the core: set by cairn__core_open before anything runs
 * (core.c), read under c->lock. Each is the core's function of the same
 * name (server/core/core.h), which those layers may not include. */
struct cairn__vpair;
typedef struct cairn__core_calls {
  /* cairn__core_unlock_wake (wake.c): unlocks and tells the wakers */
  void (*unlock_wake)(cairn__core *c);
  /* cairn__lost_flush (server/dist/keep.c): recomputes lost kept outputs
   * found under this hold of the lock (returns at once when there are none) */
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
  uint64_t allocations_total, results_total[OUT_COUNT], expired_total;
  /* the modules' own state, each behind its own header, made at open and
   * freed at close: the ban's (server/core/ban.h), quarantine's and adaptive
   * replication's (server/trust/trust.h) */
  struct cairn__ban *ban;
  struct cairn__quar *quar;
  struct cairn__trust *trust;
  struct cairn__teams *teams; /* the team ledger (server/trust/trust.h, team.c) */
  struct cairn__apps *apps;   /* signed app versions (server/core/apps.h) */
  struct cairn__accounts *accounts; /* accounts and their hosts (server/core/accounts.h) */
  struct cairn__acteams *acteams;   /* teams of accounts (server/core/teams.h) */
  struct cairn__sessions *sessions; /* the pages' log-in sessions (server/core/sessions.h) */
  uint64_t handoffs_total;  /* allocations handed in their submission's group (handoff.c) */
  uint64_t failures_total[CAIRN_REASON_KINDS]; /* failed attempts by reason (limits.c) */
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

  /* limits (limits.c): the ceiling of every task's limits (0: none), the
   * seconds a lease outlives its task's wall limit; set before serving */
  int64_t ceiling[CAIRN_LIMIT_COUNT];
  int64_t wall_grace;
  cairn__hmap app_runners;  /* hash of an app name -> volunteers registered with it */
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

/* Under the lock: volunteer id, banned or not, or NULL when there is none.
 * O(1). For a caller that hands it to a function taking a volunteer. */
static inline mvol *cairn__vol_find_locked(cairn__core *c, int64_t id) {
  return id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
}

/* Under the lock: job id, or NULL when there is none (or it was deleted).
 * O(1). For a caller that hands it to a function taking a job. */
static inline mjob *cairn__job_find_locked(cairn__core *c, int64_t id) {
  return id >= 1 && (size_t)id <= c->njobs ? c->jobs[id - 1] : NULL;
}

/* Releases c->lock, first sealing the journal records put under it (one
 * request's changes commit together: journal.h), and after it wakes the
 * held work requests for the tasks that became eligible under it (wake.c).
 * Every holder of c->lock releases it so, never with pthread_mutex_unlock. */
static inline void cairn__core_unlock(cairn__core *c) {
  c->calls.lost_flush(c); /* outputs kept on workers that were lost (keep.c): O(1) if none */
  cairn__journal_seal(c->journal);
  if (c->nwake || c->wake_any || c->nwake_jobs || c->wake_all_jobs || c->nhanded)
    c->calls.unlock_wake(c);
  else
    pthread_mutex_unlock(&c->lock);
}

#endif
