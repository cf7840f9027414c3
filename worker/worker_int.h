/* worker_int.h — the worker object shared by worker.c (public API and
 * run()), slot.c (task threads) and heartbeat.c. Include only from worker/.
 */
#ifndef CAIRN_WORKER_INT_H
#define CAIRN_WORKER_INT_H

#include <pthread.h>

#include "cairn/worker.h"
#include "common/appsig.h"
#include "common/log.h"
#include "worker/appver.h"
#include "worker/auditlog.h"
#include "worker/cache.h"
#include "worker/leases.h"
#include "worker/peer.h"
#include "worker/peerstate.h"
#include "worker/respool.h"
#include "worker/resume.h"
#include "worker/sandbox.h"
#include "worker/session.h"
#include "worker/backoff.h"
#include "worker/stopper.h"
#include "worker/taskdir.h"
#include "worker/diskcap.h"
#include "worker/throttle.h"

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
  char *server, *dir, *name, *cluster, *team;
  char *invitation;         /* sent only with a registration; NULL: none */
  char *account_key;        /* sent only with a registration; NULL: none; never logged */
  unsigned slots;           /* task threads (set by run(): slots_cfg, else the offered cores) */
  unsigned slots_cfg;       /* from the configuration; 0: not given */
  cairn__resources cfg_offer; /* from the configuration; 0 fields: detect */
  cairn__resources offer;    /* what run() offers (respool.h) */
  cairn__respool pool;      /* what the running tasks hold */
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
  char *cred_path, *run_dir, *cache_dir, *lock_path;
  int lock_fd;
  int started;

  cairn__stopper stopper;
  cairn__pace pace;         /* every call to the master waits its turn here (backoff.h) */
  cairn__session session;
  cairn__cache cache;
  cairn__leases leases;
  cairn__peerstate peers;   /* token, peer URL, holdings to report */
  int peers_ok;             /* peers was initialised */
  cairn__peer *peer;        /* the peer file server while run() runs, or NULL */
  cairn__throttle_cfg throttle_cfg; /* from the configuration */
  cairn__throttle throttle; /* idle-only, CPU limit, hours (throttle.h) */
  int throttle_ok;          /* throttle was initialised */
  unsigned long long max_disk_mib; /* from the configuration; 0: no cap */
  cairn__diskcap diskcap;   /* --max-disk (diskcap.h), set up with DIR */
  int diskcap_ok;
  uint8_t project_key[32];  /* from the configuration's project_key */
  int has_project_key;
  char platform[CAIRN_APP_MAX_PLATFORM + 1]; /* this host's, sent when has_project_key */
  cairn__appver appver;     /* DIR/apps: signed versions (appver.h), set up with DIR */
  int appver_ok;
  cairn__resume resume;     /* task records and progress (resume.h), set up by run() */
  int resume_ok;
  cairn__auditlog audit;    /* the master's audit log: key, head, receipts (auditlog.h),
                               set up with DIR */
  int audit_ok;

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

/* The app registered as name, or NULL. */
const cairn__app *cairn__worker_app(const cairn_worker *w, const char *name);

/* keep.c: offers the outputs kept in the cache to the master as the worker
 * leaves (after its task threads ended); the master takes those it needs. */
void cairn__keep_leave(cairn_worker *w);

/* Task thread i (arg: a cairn__slot). */
typedef struct cairn__slot {
  cairn_worker *w;
  size_t i;
  cairn__conn conn;
  cairn__taskdir td;       /* DIR/run/slot-<i>, reused by each task */
  const struct cairn__outputs *extra; /* the running task's stderr tail and output
                                         files, sent with its result; NULL: none */
  double cpu_seconds;      /* the running task's CPU time, sent with its result
                              to a master that lists "cpu"; -1: none */
  struct hand *hand;       /* its tasks and results in hand while it batches (slot.c) */
  pthread_t thread;
} cairn__slot;
void *cairn__slot_main(void *arg);

/* Heartbeat thread (arg: a cairn__heartbeat); quits when quit is set. */
typedef struct cairn__heartbeat {
  cairn_worker *w;
  cairn__conn conn;
  pthread_t thread;
  atomic_int quit;
  cairn__report_progress progress[CAIRN_MAX_PROGRESS]; /* a beat's "progress" */
} cairn__heartbeat;
void *cairn__heartbeat_main(void *arg);
/* At start-up, before the threads: asks the master which of the tasks
 * recorded in DIR/run are still this volunteer's (resume.h) on conn; the
 * others are dropped. */
void cairn__heartbeat_resume(cairn_worker *w, cairn__conn *conn);
/* Parses a heartbeat answer {"extended": [...]} into a new array (caller
 * frees; at most 65536 entries); its length, or -1 if malformed. The peer
 * key and the features go to peers. */
long cairn__heartbeat_parse(const char *body, size_t len, long long **out,
                            cairn__peerstate *peers);

#endif
