/* launch.h — the worker factory's backend interface (`cairn launch BACKEND`).
 *
 * The factory (cli/launch.c) keeps a pool of cairn-worker processes for one
 * master: it reads the master's demand (GET /v1/demand), decides how many
 * workers to add, and asks a backend to start, watch and stop them. A backend
 * knows one way of running a process somewhere: `local` (fork/exec on this
 * machine, cli/launch_local.c), `ssh` (on other hosts over ssh,
 * cli/launch_ssh.c), batch systems (`slurm`, `condor`: cli/launch_slurm.c,
 * cli/launch_condor.c). It knows nothing of the master, demand or policy.
 *
 * Who calls what (all calls from the factory's single thread, in this order):
 *   init    once, after the factory parsed its own options and the
 *           backend's ones (see `options` below), before anything else;
 *   refresh (optional) once at the start of every factory round, before that
 *           round's polls: a batch backend refreshes its view of every job it
 *           submitted with one query (squeue/condor_q) here, so `poll` reads a
 *           cache instead of running a command per worker;
 *   submit  start n more workers; called at most once per round, n <= the
 *           factory's --max minus the workers it already holds;
 *   poll    the state of one worker the backend returned from submit; called
 *           every round for every worker the factory still holds, until it
 *           answers DONE or FAILED, after which the factory forgets the id and
 *           never passes it again;
 *   remove  stop one worker (the factory's shutdown, or a worker it gave up
 *           on); afterwards the factory never polls that id again;
 *   fini    once, last, only when init returned 0 (a failed init frees
 *           what it made itself). Before returning it makes sure every
 *           worker passed to `remove` is gone (e.g. local: SIGKILL after the
 *           grace period to the ones still alive), so that when `cairn launch`
 *           exits no worker it removed is left running.
 *
 * No call may block for long: the factory also has to read demand and answer
 * signals. A command a backend runs (ssh, sbatch, squeue, condor_submit) should
 * be bounded by a timeout of a few seconds to a minute.
 *
 * Ownership: the factory owns every spec and everything it points to; they
 * stay valid until fini, so a backend may keep pointers. The
 * spec passed to submit is the one for those workers and may differ from
 * init's: the --min workers run with idle_exit 0, and invitation_file is set
 * once the factory has made an invitation (the file's code may change
 * between two submissions: read it when submitting). The backend owns its
 * state (`*st` from init) and frees it in fini. Ids are written by the
 * backend into the caller's array; they are opaque to the factory, which
 * only copies, compares and prints them (a pid, "host:pid", a Slurm job id
 * "1234_5", an HTCondor "cluster.proc").
 *
 * Adding a backend: write cli/launch_NAME.c defining
 *   const cairn__launch_backend cairn_launch_NAME = { .name = "NAME", ... };
 * declare it below next to the others, and add one line `&cairn_launch_NAME,`
 * to the table in cli/launch_table.c. The CMake glob picks the file up. */
#ifndef CAIRN_CLI_LAUNCH_H
#define CAIRN_CLI_LAUNCH_H

#include <stddef.h>

/* Size of one worker id, NUL included. */
#define CAIRN_LAUNCH_ID_MAX 64
/* At most this many backend-specific options (see cairn__launch_backend.options). */
#define CAIRN_LAUNCH_OPT_MAX 16

/* What the factory asks every backend to start: one cairn-worker with these
 * settings. Strings are NUL-terminated; NULL / 0 mean "not given". */
typedef struct cairn__launch_spec {
  const char *server;          /* master URL, the worker's --server (always set) */
  const char *worker_path;     /* cairn-worker to run, as the execution host sees it:
                                  local: a path on this machine (default: the cairn-worker
                                  next to the cairn binary, else on PATH); ssh: --remote-worker
                                  (default "cairn-worker" on the host's PATH); batch: a
                                  path valid on the compute nodes (shared file system) */
  const char *const *worker_args; /* extra worker flags (--worker-options split on blanks),
                                     NULL-terminated, never NULL (may be empty) */
  const char *cluster;         /* the worker's --cluster; NULL: the backend picks its
                                  default (ssh: the host's domain part, else the host
                                  name; local: none; batch: the backend's choice) */
  int cores;                   /* worker --cores and the batch request's CPUs; 0: unset */
  long long memory_mib;        /* worker --memory and the batch request's memory; 0: unset */
  int slots;                   /* worker --slots (tasks at once); the factory's
                                  slots-per-worker when sizing the pool; >= 1 */
  double idle_exit;            /* worker --exit-when-idle seconds; 0: never */
  const char *invitation_file; /* local file (mode 0600) holding an invitation code, or
                                  NULL when the master registers openly. Never put its
                                  content on a command line: local passes the path; ssh
                                  copies it to the host through the ssh session's stdin
                                  (mode 0600 there); batch backends pass the path (shared
                                  file system) or ship it as an input file of the job */
  const char *batch_options;   /* --batch-options, raw text for batch backends to pass to
                                  their submit command/file; others ignore it */
  const char *work_dir;        /* the factory's work dir (exists, mode 0700): a backend
                                  keeps its scripts, submit files and worker logs here,
                                  under a subfolder named after itself */
  const char *shipped_worker;  /* --ship-worker: a local worker tarball
                                  (cairn-worker-VERSION-linux-x86_64.tar.gz, one top
                                  folder holding bin/cairn-worker and lib/), or NULL.
                                  When set, the backend unpacks it where its workers
                                  run and starts that bin/cairn-worker instead of
                                  worker_path: local and batch backends into their
                                  subfolder of work_dir (cairn__launch_unpack_worker;
                                  batch: work_dir must be on the shared file system);
                                  ssh once per host, sent through the ssh session's
                                  stdin into a folder of its own there */
} cairn__launch_spec;

/* One backend-specific option as parsed by the factory: "--NAME VALUE". */
typedef struct cairn__launch_opt {
  const char *name;            /* without the leading "--", one of backend->options */
  const char *value;           /* argv string (owned by the factory) */
} cairn__launch_opt;

/* poll's answers. */
enum {
  CAIRN_LAUNCH_PENDING = 0,    /* submitted, not running yet (queued in a batch system) */
  CAIRN_LAUNCH_RUNNING = 1,    /* the worker process runs */
  CAIRN_LAUNCH_DONE = 2,       /* it exited with status 0 (e.g. idle exit) */
  CAIRN_LAUNCH_FAILED = 3,     /* it exited otherwise, was killed, or is lost */
};

typedef struct cairn__launch_backend {
  const char *name;            /* what `cairn launch NAME` selects */
  const char *summary;         /* one line for `cairn launch --help` */
  /* Options this backend takes, each "--NAME VALUE" (all take one value),
   * NULL-terminated; the factory rejects any option neither it nor the backend
   * knows. `help` is printed under the backend in `cairn launch --help`. */
  const char *const *options;
  const char *help;
  /* Checks opts (n of them, in argv order, repeated names possible) and spec,
   * and sets *st. Returns 0, or -1 with a one-line reason in err. */
  int (*init)(void **st, const cairn__launch_opt *opts, int n, const cairn__launch_spec *spec,
              char *err, size_t errlen);
  /* Optional (NULL: none): once per round before that round's polls. */
  void (*refresh)(void *st);
  /* Starts up to n workers and writes their ids into ids[0..k). Returns k
   * (0 <= k <= n; k < n only with a reason in err, e.g. a host refused), or -1
   * with a reason in err when none could be started. */
  int (*submit)(void *st, const cairn__launch_spec *spec, int n, char ids[][CAIRN_LAUNCH_ID_MAX],
                char *err, size_t errlen);
  /* CAIRN_LAUNCH_PENDING/RUNNING/DONE/FAILED for one id submit returned. A
   * transient failure to find out (ssh timeout) answers the last known state. */
  int (*poll)(void *st, const char *id);
  /* Asks the worker to stop (SIGTERM, scancel, condor_rm) and forgets it.
   * Returns 0, or -1 when the request could not be made (the factory reports
   * it; fini still tries). */
  int (*remove)(void *st, const char *id);
  /* Makes sure removed workers are gone, then frees st. */
  void (*fini)(void *st);
} cairn__launch_backend;

/* Registered backends (cli/launch_table.c). */
extern const cairn__launch_backend cairn__launch_local;
extern const cairn__launch_backend cairn__launch_ssh;
extern const cairn__launch_backend cairn__launch_slurm;
extern const cairn__launch_backend cairn__launch_condor;
/* NULL-terminated; one line per backend in cli/launch_table.c. */
extern const cairn__launch_backend *const cairn__launch_backends[];

/* Helpers every backend shares (cli/launch_util.c). */

/* The worker's argv for spec: worker_path, --server, --cluster (cluster, or
 * spec->cluster when cluster is NULL; omitted when both are), --cores,
 * --memory, --slots, --exit-when-idle, --dir (dir: the worker's own state
 * folder as the execution host sees it, or NULL to leave it out: every
 * worker on one host needs its own), --invitation-file (invitation: the path
 * as the execution host sees it, or NULL for none), then spec->worker_args.
 * Writes at most cap-1 pointers plus a NULL into argv; the strings point into
 * spec, the arguments, or buf (bufsize bytes, caller's). Returns the count,
 * or -1 when argv or buf is too small. */
int cairn__launch_worker_argv(const cairn__launch_spec *spec, const char *cluster,
                             const char *dir, const char *invitation, const char **argv, int cap,
                             char *buf, size_t bufsize);
/* Appends s to out (outsize bytes, NUL-terminated, already holding a string)
 * quoted for a POSIX shell ('...' with ' as '\''). Returns 0, or -1 when it
 * does not fit (out unchanged). */
int cairn__launch_shell_quote(char *out, size_t outsize, const char *s);
/* Runs argv (argv[0] looked up on PATH) with stdin fed from in (inlen bytes,
 * may be NULL), captures up to outsize-1 bytes of stdout into out
 * (NUL-terminated; may be NULL), stderr to the caller's stderr, and kills it
 * after timeout_s seconds. Its environment is this process's without
 * CAIRN_ADMIN_TOKEN. Returns the exit status (0..255), or -1 when it could
 * not run or timed out. */
int cairn__launch_run(const char *const *argv, const char *in, size_t inlen, char *out,
                     size_t outsize, double timeout_s);
/* Unpacks the worker tarball (spec->shipped_worker) into dir (created mode
 * 0700; its top folder stripped) with `tar`, bounded by a timeout, and
 * writes the absolute path of dir/bin/cairn-worker into worker (size
 * bytes). Returns 0, or -1 with the reason in err. */
int cairn__launch_unpack_worker(const char *tarball, const char *dir, char *worker, size_t size,
                               char *err, size_t errlen);

#endif
