/* worker_int.h — the worker object shared by worker.c (public API and
 * run()), slot.c (task threads), tally.c (its counters), heartbeat.c and
 * keep.c. Include only from worker/.
 */
#ifndef CAIRN_WORKER_INT_H
#define CAIRN_WORKER_INT_H

#include <pthread.h>

#include "cairn/worker.h"
#include "common/appsig.h"
#include "common/log.h"
#include "worker/cpid.h"
#include "worker/ledger.h"
#include "worker/project.h"
#include "worker/respool.h"
#include "worker/sandbox.h"
#include "worker/stopper.h"
#include "worker/taskdir.h"
#include "worker/throttle.h"

_Static_assert(CAIRN__LEDGER_MAX >= CAIRN__MAX_PROJECTS, "a ledger entry per project");
_Static_assert(CAIRN__CPID_MAX >= CAIRN__MAX_PROJECTS, "a cross-project id per project");

typedef struct cairn__app {
  char *name;
  char *path;          /* program (absolute), or NULL for a callback */
  cairn_task_fn fn;
  void *userdata;
  const char *dir;     /* a signed version's directory (appver.h), shown read-only in
                          the sandbox; NULL: none */
} cairn__app;

struct cairn_worker {
  cairn__logger log;         /* from the configuration; its modules borrow it */
  char *dir, *name, *cluster, *team;
  unsigned slots;           /* task threads (set by run(): slots_cfg, else the offered cores) */
  unsigned slots_cfg;       /* from the configuration; 0: not given */
  cairn__resources cfg_offer; /* from the configuration; 0 fields: detect */
  cairn__resources offer;    /* what run() offers (respool.h) */
  cairn__respool pool;      /* what the running tasks hold, whatever their project */
  int pool_ok;
  unsigned exit_when_idle;
  unsigned prefetch;        /* tasks a slot takes ahead (0 to CAIRN_MAX_PREFETCH; slot.c) */
  unsigned long max_tasks;
  char *peer_listen;        /* NULL: no peer server */
  char *peer_address;       /* NULL: learned */
  unsigned peer_max;
  unsigned stall_ms;
  unsigned download_kib;   /* per download, 0: no cap */
  cairn__app *apps;
  const char **app_names;   /* napps names, for registration */
  size_t napps;
  char *lock_path;
  int lock_fd;
  int started;

  cairn__project *projects; /* nprojects (project.h): the master of server_url, or each
                               of cfg.projects */
  size_t nprojects;
  int several;              /* cfg.projects: each in DIR/projects/<id>, its log lines
                               labelled with its URL */
  double half_life_s;       /* of the usage the shares are measured by (share.h) */
  cairn__ledger ledger;     /* which project a free slot asks; each one's figures */
  int ledger_ok;             /* (and cpids) */
  cairn__cpids cpids;       /* the projects' cross-project ids (cpid.h; with the ledger) */

  cairn__stopper stopper;
  cairn__throttle_cfg throttle_cfg; /* from the configuration */
  cairn__throttle throttle; /* idle-only, CPU limit, hours (throttle.h) */
  int throttle_ok;          /* throttle was initialised */
  unsigned long long max_disk_mib; /* from the configuration; 0: no cap (divided among the
                                      projects in proportion to their shares) */
  char platform[CAIRN_APP_MAX_PLATFORM + 1]; /* this host's, sent with a project key */

  int no_sandbox;           /* --no-sandbox: programs run directly */
  int sandboxed;            /* run() found the sandbox working: programs run in it */
  cairn__sandbox sandbox;   /* the sandbox of program apps (sandbox.h); binds point
                               into sandbox_binds */
  cairn__sandbox_bind sandbox_binds[CAIRN__SANDBOX_MAX_BINDS];
  char *sandbox_paths[CAIRN__SANDBOX_MAX_BINDS]; /* owned: the binds' paths */

  pthread_mutex_t mu;       /* guards everything below */
  unsigned long claimed;    /* polls in flight + tasks running + tasks finished */
  unsigned long finished;
  unsigned running;
  long long last_work_ms;   /* last offer or task end (monotonic) */
  cairn_worker_stats stats;
  cairn_error error;        /* the first fatal error; status CAIRN_OK while none */
};

/* Records a fatal error of status st (the first one wins) and stops the
 * worker: cairn_worker_run() returns it. */
void cairn__worker_fatal(cairn_worker *w, cairn_status st, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* Project p's master kept an inconsistent audit log (auditlog.h; why
 * logged already): with one project the worker stops (a fatal error of
 * CAIRN_EFORBIDDEN); with several, p is asked for no more work (ledger.h)
 * and the others go on, unless none is left. */
void cairn__worker_distrust(cairn_worker *w, cairn__project *p, const char *why);

/* The app registered as name, or NULL. */
const cairn__app *cairn__worker_app(const cairn_worker *w, const char *name);

/* keep.c: offers the outputs project p kept in its cache to its master as
 * the worker leaves (after its task threads ended); the master takes those
 * it needs. */
void cairn__keep_leave(cairn_worker *w, cairn__project *p);

/* tally.c: the worker's task counters (w->mu) and each project's (the
 * ledger). claim() reserves one of --max-tasks (0 when none is left);
 * unclaim() gives it back. */
int cairn__tally_claim(cairn_worker *w);
void cairn__tally_unclaim(cairn_worker *w);
/* A task of project k starts; it ends (how: 0 done, 1 failed, 2 dropped),
 * which drains the worker when --max-tasks is reached. */
void cairn__tally_started(cairn_worker *w);
void cairn__tally_ended(cairn_worker *w, size_t k, int how);
/* Milliseconds left before --exit-when-idle fires (0: fire now; -1: never). */
long long cairn__tally_idle_left(cairn_worker *w);
/* The project a free slot asks (the ledger's pick), skipping with several
 * projects those whose master asked to wait (their pace, backoff.h): its
 * index, or -1 with *hold_ms until the first may be asked (ledger.h). */
long cairn__tally_pick(cairn_worker *w, long long *hold_ms);
/* The outbox's done (outbox.h) for project p (ud): logs and ends the task. */
void cairn__tally_outbox_done(void *ud, long long index, int exit_status, cairn__delivery how,
                              const char *why);

/* Task thread i (arg: a cairn__slot). */
typedef struct cairn__slot {
  cairn_worker *w;
  size_t i;
  cairn__project *p;       /* the project it asks for work or whose task it runs */
  cairn__conn *conn;       /* its connection to p's master: &conns[p->k] */
  cairn__taskdir *td;      /* its directory of p's tasks: &tds[p->k] */
  cairn__conn conns[CAIRN__MAX_PROJECTS];   /* one per project */
  cairn__taskdir tds[CAIRN__MAX_PROJECTS];  /* P'/run/slot-<i>, reused by each task */
  int warned[CAIRN__MAX_PROJECTS]; /* said that the project's master did not answer */
  const struct cairn__outputs *extra; /* the running task's stderr tail and output
                                         files, sent with its result; NULL: none */
  double cpu_seconds;      /* the running task's CPU time, sent with its result
                              to a master that lists "cpu"; -1: none */
  double cpu_used;         /* the last task's CPU time (-1: unknown), for the ledger */
  cairn__usage usage;      /* what the running task used, sent with its result to a
                              master that lists "usage"; CAIRN_USAGE_NONE: nothing */
  struct hand *hand;       /* its tasks and results in hand while it batches (slot.c) */
  pthread_t thread;
} cairn__slot;
void *cairn__slot_main(void *arg);

/* Heartbeat thread of project p (arg: a cairn__heartbeat); quits when
 * quit is set. */
typedef struct cairn__heartbeat {
  cairn_worker *w;
  cairn__project *p;
  cairn__conn conn;
  pthread_t thread;
  atomic_int quit;
  cairn__report_progress progress[CAIRN_MAX_PROGRESS]; /* a beat's "progress" */
} cairn__heartbeat;
void *cairn__heartbeat_main(void *arg);
/* At start-up, before the threads: asks p's master which of the tasks
 * recorded in its run directory are still this volunteer's (resume.h) on
 * conn; the others are dropped. */
void cairn__heartbeat_resume(cairn_worker *w, cairn__project *p, cairn__conn *conn);
/* Parses a heartbeat answer {"extended": [...]} into a new array (caller
 * frees; at most 65536 entries); its length, or -1 if malformed. The peer
 * key and the features go to peers. */
long cairn__heartbeat_parse(const char *body, size_t len, long long **out,
                            cairn__peerstate *peers);

#endif
