/* model.h — the master's entities in memory: jobs, their files and tasks,
 * a task's round and its results, volunteers, leases (private to server/).
 * The core's struct that holds them under c->lock is in state.h. The
 * scheduling core (server/core/) makes every transition (its state
 * machines: server/core/core.h); the layers below it, trust (server/trust/)
 * and distribution (server/dist/), read and change the parts this file says
 * are theirs, under the same lock. */
#ifndef CAIRN_SERVER_MODEL_H
#define CAIRN_SERVER_MODEL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "plan/ataf.h"
#include "plan/dag.h"
#include "common/autosize.h"
#include "common/error.h"
#include "plan/jobspec.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/outputs.h"
#include "plan/policy.h"
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
  uint16_t progress; /* the last fraction done a worker reported for one of its
                      * leases out, as CAIRN__PROGRESS_ENC (0: none); cleared
                      * when its last lease out ends (core.c, drop_lease) */
  int64_t accepted;  /* index of the accepted (or last failed) result, 0 if none */
  int64_t round;
  mrep *rep;         /* NULL until first allocated */
  char *run_json;    /* its limits, env, stdin (a work offer's form), or NULL */
  int32_t wall;      /* its wall_seconds (0: none): the lease's hard deadline */
  int32_t out_mib;   /* its output_mib (0: none): also its leases' upload budget */
  int64_t failed_vol, failed_at; /* who failed it last and when (limits.c) */
  struct cairn__tio *io; /* declared outputs, parents' files read, accepted
                          * files (server/core/outputs.h); NULL: none */
  struct cairn__tsz *sz; /* how it sizes itself (server/core/size.h); NULL: its
                          * request as the job file says, in the job's own
                          * category, never retried larger */
} mtask;

/* A task's sizing (mtask.sz; server/core/size.c owns it). */
typedef struct cairn__tsz {
  uint8_t flags;             /* CAIRN_SIZE_AUTO, CAIRN_SIZE_RETRY_LARGER */
  uint8_t cat;               /* its category: the job's cats[cat] */
  int32_t lim_mem, lim_disk; /* its own memory_mib and disk_mib limits (0: none) */
  int32_t grow_mem, grow_disk; /* what kills for memory, disk made it ask (MiB; 0: none) */
} cairn__tsz;

/* One of a job's categories (mjob.cats; server/core/size.c owns them): its
 * label ("" for the job's own), the largest measurements of its tasks'
 * successful runs, how many tasks it has and how many of them size
 * themselves ("resources": "auto"). */
typedef struct cairn__jcat {
  char *label;
  cairn__peak peak;
  uint32_t tasks, autos;
} cairn__jcat;

typedef struct mjob {
  int64_t id;
  char *name, *app, *policy_name;
  char *app_version; /* the signed version its tasks run (core/apps.h); NULL: the newest */
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
  /* categories (size.c): [0] is the job's own (""), at most
   * CAIRN_MAX_CATEGORIES */
  cairn__jcat *cats;
  uint32_t ncats, capcats;
} mjob;

struct mvol;

/* An account (a person; core/accounts.c makes, finds and frees them, and
 * keeps its hosts' list; credit.c moves its totals, under c->lock). */
typedef struct macct {
  int64_t id, created;
  char *name, *email;      /* email: shown to the admin and the account only */
  char key_hash[65];       /* the SHA-256 of its account key (hex) */
  char *pw_hash;           /* crypto_pwhash_str's Argon2id string */
  /* credit (credit.c): the sums over its hosts' valid results granted while
   * they were attached, and their exponentially averaged credit */
  double credit, cpu_seconds, expavg, expavg_time;
  int64_t results;
  struct mvol **hosts;     /* the volunteers attached to it, in attach order */
  uint32_t nhosts, caphosts;
  struct macct *email_next; /* another account of the same e-mail hash */
  /* teams of accounts (core/teams.c): the team it is in (NULL: none) and
   * the country its person chose (NULL: none) */
  struct macteam *team;
  char *country;
  /* its log-in sessions for the pages (core/sessions.c), oldest first, at
   * most CAIRN__SESSIONS_PER_ACCOUNT */
  struct msess *sessions;
  uint32_t nsessions;
  /* its cross-project id (32 hex digits, never shown but to its hosts) and
   * when it was made: its own creation, or an older account's whose id it
   * adopted (core/accounts.c, cairn__accounts_cpid) */
  char cpid[33];
  int64_t cpid_time;
} macct;

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
  char sandbox[8];         /* how its worker runs programs: "bwrap", "none", "" not said
                              (registration; not stored) */
  double credit, cpu_seconds;
  int64_t credited;
  double expavg, expavg_time; /* its exponentially averaged credit (credit.c) */
  macct *account;          /* the account it is attached to (accounts.c), or NULL */
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
   * (the store's ban_pending); ban_next: the next entry a slice reads. */
  struct { uint32_t job, task; } *did; /* job: its id - 1 (c->jobs), task: its seq */
  uint32_t ndid, capdid, ban_next;
  uint8_t ban_left;
  /* distribution's cursor through its file table while a ban's slices
   * forget v's holdings (distribution.c, cairn__dist_forget_step): the next
   * bucket, and the table's size when that began (0: none left) */
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
  uint16_t progress;       /* the fraction done its worker last reported, as
                              CAIRN__PROGRESS_ENC (0: none); memory only */
  uint8_t sized;           /* the master set its memory and disk limits (size.h) */
  int32_t mem_mib, disk_mib; /* the memory_mib and disk_mib limits it runs under (0: none) */
  cairn__resources req;    /* what it requests: held in its volunteer's used (fit.h) */
} mlease;

/* A fraction done (0 to 1) kept in 16 bits: 1 + 10,000 times it, rounded;
 * 0 is "none reported" (what calloc leaves). */
#define CAIRN__PROGRESS_ENC(f) ((uint16_t)(1 + (int)((f) * 10000.0 + 0.5)))
#define CAIRN__PROGRESS_DEC(p) (((double)(p) - 1) / 10000.0)

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

#endif
