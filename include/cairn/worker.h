/* cairn/worker.h — the Cairn worker library: poll a Cairn master for tasks,
 * run them with registered apps (programs or C callbacks), return results.
 *
 * A typical embedding:
 *
 *   cairn_worker_config cfg;
 *   cairn_worker_config_init(&cfg);
 *   cfg.server_url = "http://127.0.0.1:8080";
 *   cairn_error err;
 *   cairn_worker *w = cairn_worker_create(&cfg, &err);
 *   cairn_worker_add_callback_app(w, "sum", my_sum, NULL, &err);
 *   cairn_status st = cairn_worker_run(w, &err);   blocks; cairn_worker_stop() ends it
 *   cairn_worker_delete(w);
 *
 * Functions that can fail return a cairn_status and fill the caller's
 * cairn_error (when not NULL); see cairn/cairn.h.
 *
 * Threads: cairn_worker_run() starts cfg.slots task threads (by default one
 * per offered core), for each project a heartbeat thread, a thread that
 * delivers results its master could not take at once and (unless
 * cfg.peer_listen is "off") the peer file server's thread, and a throttle
 * thread when idle_only, cpu_limit or hours is set, and ends them all
 * before it returns. Callbacks run on the
 * task threads, at most cfg.slots at a time, so they must be thread-safe
 * when slots > 1. cairn_worker_stop() and cairn_worker_get_stats() may be
 * called from any thread; cairn_worker_stop() also from a signal handler.
 * Every other call belongs to the thread that created the worker. The log
 * callback may be called from any of the worker's threads at once.
 *
 * The library never exits the host process; this header needs only the C
 * library.
 */
#ifndef CAIRN_WORKER_H
#define CAIRN_WORKER_H

#include <stddef.h>

#include "cairn/cairn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cairn_worker cairn_worker;

/* One project of a worker that computes for several (cfg.projects;
 * docs/worker.md, "Several projects"). A zeroed struct plus server_url is a
 * valid project. The strings are copied. */
typedef struct cairn_worker_project {
  const char *server_url;      /* required: its master, "http://host:port" */
  unsigned share;              /* its resource share, 1 to 1000000: the slots' time goes
                                  to the projects in proportion to their shares, over
                                  time; 0: 100 */
  int backup;                  /* non-zero: asked for work only while no other project
                                  has work (share ignored; BOINC's share 0) */
  const char *project_key;     /* its signed apps' key, as cfg.project_key; NULL: none */
  const char *account_key;     /* your account's key on its master, as cfg.account_key;
                                  NULL: none */
  const char *invitation;      /* its invitation code, as cfg.invitation; NULL: none */
} cairn_worker_project;

/* Settings for cairn_worker_create(). A zeroed struct plus server_url (or
 * projects) is a valid configuration: every zero or NULL field means "the
 * default". The strings are copied; the caller keeps ownership of the
 * struct. */
typedef struct cairn_worker_config {
  const char *server_url;      /* the master, "http://host:port"; required unless
                                  projects is set (then NULL) */
  const char *dir;             /* state directory; NULL: "./cairn-worker" */
  const char *name;            /* volunteer name; NULL: the host name */
  const char *cluster;         /* cluster label; NULL: none */
  unsigned slots;              /* task threads: tasks run at once at most; 0: one per
                                  offered core (see cores) */
  unsigned exit_when_idle;     /* seconds without work before run() returns 0; 0: never */
  unsigned long max_tasks;     /* run() returns 0 after this many tasks; 0: unlimited */
  cairn_log_level log_level;   /* this worker's; CAIRN_LOG_DEFAULT: warn */
  cairn_log_fn log_fn;         /* this worker's log lines; NULL: standard error */
  void *log_userdata;          /* passed to log_fn */

  /* Data distribution (docs/worker.md, "Peer file server"): run() serves the
   * verified input cache to other workers named by the master, and fetches
   * inputs from the peers the master names before falling back to it. */
  const char *peer_listen;     /* peer server address "HOST:PORT", HOST a numeric IPv4
                                  address or [IPv6]; NULL: "0.0.0.0:0" (every interface,
                                  a free port); "off": no peer server */
  const char *peer_address;    /* host put in the peer URL given to the master; NULL: this
                                  host's address on its connection to the master */
  unsigned peer_max;           /* files sent to peers at once (503 beyond); 0: 4 */
  unsigned stall_ms;           /* a download that receives nothing for this long is
                                  abandoned for the next source; 0: 10000 */
  unsigned download_kib;       /* each download at most this many KiB a second (0,
                                  default: no cap) */

  /* What this worker offers its tasks (docs/worker.md, "Resources"): the
   * master hands it only tasks whose requests fit what is free, and it runs
   * as many at once as fit (at most slots). */
  unsigned cores;              /* 0: the online CPUs, or slots when that is more */
  unsigned long long memory_mib; /* 0: the available memory (MemAvailable) */
  unsigned long long disk_mib; /* 0: the free space of the file system holding dir */
  const char *invitation;      /* invitation code sent when registering, for a master
                                  whose registration is by invitation; NULL: none */

  /* Volunteers in control (docs/worker.md): when this worker takes work and
   * how much CPU its program apps get. Zero: no such policy. */
  int idle_only;               /* non-zero: run only while other processes leave the
                                  machine idle; suspend tasks (SIGSTOP) when they do not */
  unsigned idle_threshold;     /* with idle_only: other processes' use, in percent of one
                                  core, above which the machine is in use; 0: 25 */
  unsigned idle_settle;        /* with idle_only: seconds idle before tasks resume; 0: 10 */
  unsigned cpu_limit;          /* 1-100: each program app runs this percent of every
                                  second and is stopped the rest; 0: no limit */
  const char *hours;           /* "A-B[,A-B...]" local time windows (H or H:MM, "22-07"
                                  wraps midnight): outside them no work is requested
                                  and tasks are suspended; NULL: always */
  unsigned long long max_disk_mib; /* DIR/cache and DIR/run stay under this many MiB:
                                  cached files are removed, else a task is refused
                                  (docs/worker.md); 0: no cap */
  const char *team;            /* the team this volunteer's credit counts for (docs/worker.md,
                                  "Credit"): 1 to 64 printable ASCII characters, no quotes
                                  or backslashes; NULL: none */

  /* Batches (docs/worker.md "Batches"): tasks each slot takes ahead of its
   * free slot, 0 to 16, from a master that lists "batch"; their results go
   * back together. 0: one task at a time. */
  unsigned prefetch;

  /* Signed apps (docs/apps.md): the project's Ed25519 public key, its base64
   * text (as `cairn app keygen` prints) or the path of a file holding it. Set,
   * the worker tells the master its platform and runs the project's apps:
   * it fetches each version a task needs, verifies its signature and every
   * file's SHA-256 before running anything and keeps it under DIR/apps; no
   * app need be added. A version that does not verify fails its task with
   * reason "app_signature". NULL: only the apps added. */
  const char *project_key;
  /* Sandbox (docs/worker.md, "Sandbox"; docs/security.md): on Linux each
   * task of a program app runs in a bubblewrap sandbox that shows it the
   * system's programs and libraries, its task directory and the binds
   * below, in its own PID and network namespaces, without privileges.
   * run() checks once that the sandbox works and refuses to start (saying
   * why and how to fix it) when it does not. Callback apps run inside the
   * worker's own process and cannot be sandboxed. Zero: sandbox on, no
   * network for tasks. */
  int no_sandbox;              /* non-zero: run programs directly, unsandboxed */
  int allow_network;           /* non-zero: a task whose job asks "network": true keeps
                                  the host's network (else it has only loopback) */
  const char *const *sandbox_binds; /* nsandbox_binds absolute paths shown inside the
                                  sandbox at the same path, read-only, or read-write
                                  as "PATH:rw"; the strings are copied */
  size_t nsandbox_binds;       /* at most 16 */

  /* Account (docs/worker.md, "Accounts"): the account key of the person's
   * account on the master (POST /v1/accounts), sent only in this worker's
   * registration, so that its host is attached to the account and its
   * credit counts for it too; never logged. A worker that already has its
   * credentials keeps its identity (and its attachment, or none). NULL: no
   * account. The string is copied. */
  const char *account_key;     /* 64 hexadecimal characters */

  /* Several projects (docs/worker.md, "Several projects"): instead of
   * server_url (and of project_key, account_key and invitation, which each
   * project has its own), nprojects projects (1 to 16, distinct URLs). Each
   * has its own identity, signed apps, cache and task directories under
   * DIR/projects/<id> (id: 16 hex digits of the SHA-256 of its URL); a free
   * slot asks the one whose recent CPU time (decayed with a half-life of
   * share_half_life seconds) over its share is lowest among those that
   * have work and answer, so that over time each gets the slots in
   * proportion to its share; a running task is never stopped for another.
   * The array and its strings are copied. */
  const cairn_worker_project *projects;
  size_t nprojects;
  unsigned share_half_life;    /* seconds, 1 to 31536000; 0: 600 */
} cairn_worker_config;

/* Sets every field of cfg to its default (as cairn_master_config_init does
 * for a master): then set server_url and what differs. */
void cairn_worker_config_init(cairn_worker_config *cfg);

/* One named file of a task: an input (name = the job's file name) or a
 * parent's output (name = the parent task id). path is absolute. */
typedef struct cairn_task_file {
  const char *name;
  const char *path;
} cairn_task_file;

/* The task handed to a callback. Everything it points to is owned by the
 * worker and valid only during the callback. */
typedef struct cairn_task {
  long long job;                   /* the master's job id */
  const char *id;                  /* the task id from the job file */
  long long index;                 /* the accountable allocation index */
  const char *app;                 /* the app name */
  size_t nargs;
  const char *const *args;         /* nargs strings */
  size_t ninputs;
  const cairn_task_file *inputs;   /* DIR/run/slot-N/inputs/NAME */
  size_t nparents;
  const cairn_task_file *parents;  /* DIR/run/slot-N/parents/ENCODED-ID, job-file order */
  const char *dir;                 /* the task directory, DIR/run/slot-N: holds only
                                      inputs/ and parents/ (and, when resumed, what the
                                      task left there); emptied after the task */
  int resumed;                     /* non-zero: the task runs again in the directory it
                                      left when the worker stopped or died (below,
                                      "Checkpoints and progress") */
} cairn_task;

/* Where a callback writes its result (standard output for a program). */
typedef struct cairn_task_output cairn_task_output;

/* Appends len bytes to the task's output. Returns 0, or -1 when the output
 * would exceed its cap (1 MiB); the task is then reported as an application
 * failure whatever the callback returns, and further writes are ignored. */
int cairn_task_output_write(cairn_task_output *out, const void *data, size_t len);

/* printf into the task's output, with the cap of cairn_task_output_write(). */
int cairn_task_output_printf(cairn_task_output *out, const char *fmt, ...) CAIRN_PRINTF(2, 3);

/* Non-zero once the task's result is no longer wanted: its lease was lost or
 * the worker is stopping. A long callback should poll it and return early. */
int cairn_task_cancelled(const cairn_task_output *out);

/* A C computation. Returns the exit status: 0 for success, 1..255 for an
 * application failure; other values are reported as 255. */
typedef int (*cairn_task_fn)(const cairn_task *task, cairn_task_output *out, void *userdata);

/* Creates a worker. Nothing touches the network or the state directory until
 * cairn_worker_run(). Returns NULL with err filled (CAIRN_EINVAL naming the
 * setting, or CAIRN_ENOMEM). Free with cairn_worker_delete(). */
cairn_worker *cairn_worker_create(const cairn_worker_config *cfg, cairn_error *err);

/* Registers app name, run as the program at path (made absolute; must be
 * executable). CAIRN_EINVAL for a bad or duplicate name or a path that is
 * not executable; CAIRN_ECONFLICT after run() started. */
cairn_status cairn_worker_add_exec_app(cairn_worker *w, const char *name, const char *path,
                                       cairn_error *err);

/* Registers app name, run as fn(task, out, userdata) on a task thread.
 * userdata stays the caller's. Same errors as cairn_worker_add_exec_app(). */
cairn_status cairn_worker_add_callback_app(cairn_worker *w, const char *name, cairn_task_fn fn,
                                           void *userdata, cairn_error *err);

/* Registers (or reuses DIR/credentials.json; with projects, each project's
 * DIR/projects/<id>/credentials.json), then polls for work and runs
 * tasks until cairn_worker_stop(), exit_when_idle or max_tasks. CAIRN_OK on
 * such a normal end; on a fatal error its status with err filled:
 * CAIRN_EFORBIDDEN (banned, or registration refused), CAIRN_EIO (unusable
 * state directory, master unreachable for good), CAIRN_EINVAL (no apps),
 * CAIRN_ECONFLICT (called twice). Callable once per worker. */
cairn_status cairn_worker_run(cairn_worker *w, cairn_error *err);

/* Asks run() to return soon: no new work is fetched and running tasks are
 * abandoned (their apps are killed, results not sent; the master reissues
 * them when their leases expire). Async-signal-safe and thread-safe. */
void cairn_worker_stop(cairn_worker *w);

typedef struct cairn_worker_stats {
  unsigned long long tasks_done;    /* results accepted by the master, exit status 0 */
  unsigned long long tasks_failed;  /* results accepted by the master, non-zero exit status */
  unsigned long long tasks_dropped; /* results not delivered: lease lost, refused, abandoned */
} cairn_worker_stats;

/* Copies the counters into *out. Thread-safe. */
void cairn_worker_get_stats(const cairn_worker *w, cairn_worker_stats *out);

/* One project's figures (a worker of server_url has one project). */
typedef struct cairn_worker_project_stats {
  const char *server_url;           /* its master (the worker's copy, valid until delete) */
  unsigned share;                   /* its resource share; 0: a backup project */
  unsigned long long tasks_done;    /* as cairn_worker_stats, for this project's tasks */
  unsigned long long tasks_failed;
  unsigned long long tasks_dropped;
  double cpu_seconds;               /* CPU time its tasks used since run() began */
  double usage;                     /* that time decayed with share_half_life: what the
                                       division of the slots counts */
  unsigned running;                 /* its tasks running now */
  int backed_off;                   /* non-zero: not asked now (it had no work, or its
                                       master did not answer) */
} cairn_worker_project_stats;

/* The number of projects (1 for a worker of server_url). */
size_t cairn_worker_project_count(const cairn_worker *w);

/* Copies project i's figures (i: its place in cfg.projects) into *out.
 * CAIRN_EINVAL when there is no project i. Thread-safe. */
cairn_status cairn_worker_get_project_stats(const cairn_worker *w, size_t i,
                                            cairn_worker_project_stats *out);

/* Frees the worker. Must not be called while run() is executing. Accepts NULL. */
void cairn_worker_delete(cairn_worker *w);

/* ---- Checkpoints and progress (docs/worker.md, "Checkpoints and progress") ----
 * A task's directory (task->dir) survives the worker's death and its stop
 * while the task's lease is valid: a worker started again on the same
 * state directory (same volunteer) asks the master whether the lease is
 * still its own and, if so, calls the callback again for the same task in
 * the same directory with task->resumed set, under the same lease and
 * index. A callback that saves its state in task->dir (write a temporary
 * file, fsync, rename) and reads it back when task->resumed is set goes on
 * where it stopped; a task whose lease ran out meanwhile is dropped
 * without running. */

/* Reports the fraction of the task done, from 0 to 1: the worker sends the
 * last value with its heartbeats and the master shows it with the task.
 * Thread-safe (any thread of the callback, while it runs). Returns 0, or
 * -1 when fraction is not a number from 0 to 1 (nothing changes). */
int cairn_task_progress(cairn_task_output *out, double fraction);

#ifdef __cplusplus
}
#endif

#endif
