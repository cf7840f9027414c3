/* runner.h — runs one task's program: vfork/exec (never a shell) in the task
 * directory, standard input from a file or /dev/null, standard output
 * captured up to a cap, standard error to DIR/stderr, the environment the
 * caller gives (and nothing of the worker's), held to its limits
 * (common/taskrun.h).
 *
 * With a sandbox (spec.sandbox), bwrap runs the program: the runner execs
 * bwrap in its place, in the group it makes, which then holds bwrap and
 * everything in the sandbox; CPU time still counts the program's (bwrap
 * waits for the sandbox's reaper, which waits for the program: sandbox.h).
 * A program killed by signal N comes back from bwrap as exit 128+N and is
 * reported as signal N.
 *
 * The program runs in its own process group; the whole group is killed
 * (SIGKILL) when the output exceeds the cap, when a limit is reached, when
 * the task is cancelled, and once the program has exited (so nothing it
 * started lingers). Limits: wall clock by the watch loop's clock; CPU by
 * RLIMIT_CPU (SIGXCPU, then SIGKILL a second later); memory by a cgroup v2
 * memory.max when the worker can create one, else RLIMIT_AS; disk by
 * summing the task directory every CAIRN__DISK_CHECK_MS. What the program
 * used (its usage: peak memory, peak disk, wall time) is measured on the
 * way. Private to worker/.
 */
#ifndef CAIRN_RUNNER_H
#define CAIRN_RUNNER_H

#include <stddef.h>

#include "common/autosize.h"
#include "common/buf.h"
#include "common/error.h"
#include "common/taskrun.h"
#include "worker/sandbox.h"
#include "worker/stopper.h"

typedef enum cairn__run_outcome {
  CAIRN__RUN_EXITED,    /* the program ended by itself (exit or signal) */
  CAIRN__RUN_OVERFLOW,  /* it wrote more than max_output bytes and was killed */
  CAIRN__RUN_NOEXEC,    /* it could not be started (missing, not executable, ...) */
  CAIRN__RUN_CANCELLED, /* the task was cancelled and the program killed */
  CAIRN__RUN_LIMIT      /* a limit stopped it (reason says which) */
} cairn__run_outcome;

/* How often the task directory is summed against disk_mib, and the most
 * entries one sum visits. */
#define CAIRN__DISK_CHECK_MS     500
#define CAIRN__DISK_SCAN_ENTRIES 100000u
/* How often the resident memory of the program's processes is sampled. */
#define CAIRN__MEM_SAMPLE_MS     100
/* Under RLIMIT_AS a program that fails after its address space reached
 * this share of memory_mib (numerator over 4) is counted as stopped by the
 * memory limit (it cannot tell otherwise: malloc just fails). */
#define CAIRN__AS_FAIL_SHARE 3

typedef struct cairn__run_spec {
  const char *path;               /* program to execv */
  const char *const *args;        /* nargs arguments after argv[0] = path */
  size_t nargs;
  const char *dir;                /* working directory; DIR/stderr is created there */
  const char *const *env;         /* the program's whole environment: "NAME=VALUE"
                                     strings, NULL-terminated; NULL: empty. Nothing
                                     of the worker's own environment is added */
  size_t max_output;              /* stdout cap in bytes */
  const cairn__cancel *cancel;    /* may be NULL */
  const char *stdin_path;         /* standard input; NULL: /dev/null */
  const int64_t *limits;          /* CAIRN_LIMIT_COUNT limits (0: none; output_mib is
                                     max_output's business), or NULL for none */
  const char *cgroup_name;        /* name of the run's memory cgroup (unique per slot) */
  struct cairn__throttle *throttle; /* stops and continues the program's group (throttle.h);
                                     its stopped time does not count against the wall
                                     limit; NULL: none */
  size_t slot;                    /* the throttle's slot for this run */
  const cairn__sandbox *sandbox;  /* run the program in this sandbox (sandbox.h);
                                     NULL: none, the program runs directly */
  int network;                    /* the task asked for the network (kept only when
                                     the sandbox allows it) */
  const char *const *ro_binds;    /* nro_binds paths the sandbox shows read-only besides
                                     the program (the app's directory), at most
                                     CAIRN__SANDBOX_MAX_RO */
  size_t nro_binds;
} cairn__run_spec;

typedef struct cairn__run_result {
  cairn__run_outcome outcome;
  int exit_status;                /* exit code, or 128+signal; 127 for NOEXEC, 137 for OVERFLOW */
  cairn__buf output;               /* up to max_output bytes of stdout; caller frees */
  char note[512];                 /* one line explaining OVERFLOW / NOEXEC / CANCELLED / LIMIT */
  char reason[CAIRN_REASON_MAX];  /* why it failed ("wall", "signal 9", "exit 3", ...);
                                     "" when it exited 0 */
  const char *memory_by;          /* "cgroup" or "RLIMIT_AS" with a memory limit, else NULL */
  char memory_why[160];           /* why not a cgroup, when RLIMIT_AS */
  double seconds, cpu_seconds;    /* wall clock and CPU time of the program (user +
                                     system, with the descendants it waited for: wait4) */
  cairn__usage usage;             /* what it used (docs/worker.md, "Measurements"): its
                                     peak resident memory (the memory cgroup's
                                     memory.peak; else the largest of its processes'
                                     VmHWM summed, sampled every CAIRN__MEM_SAMPLE_MS, and
                                     wait4's ru_maxrss when above the worker's own), the
                                     peak bytes of its directory (its samples against
                                     disk_mib and its size once it exited), its wall
                                     time; all -1 when it did not run */
} cairn__run_result;

/* Runs spec and fills *res (whatever the program does). Returns CAIRN_OK, or
 * CAIRN_EIO / CAIRN_ENOMEM with err set when the worker itself could not run
 * it (no pipe, no fork, cannot create DIR/stderr); res->output is then empty. */
cairn_status cairn__run(const cairn__run_spec *spec, cairn__run_result *res, cairn_error *err);

#endif
