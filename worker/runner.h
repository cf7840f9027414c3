/* runner.h — runs one task's program: vfork/exec (never a shell) in the task
 * directory, standard input from /dev/null, standard output captured up to a
 * cap, standard error to DIR/stderr, extra environment variables added.
 *
 * The program runs in its own process group; the whole group is killed
 * (SIGKILL) when the output exceeds the cap, when the task is cancelled, and
 * once the program has exited (so nothing it started lingers). Private to
 * worker/.
 */
#ifndef CAIRN_RUNNER_H
#define CAIRN_RUNNER_H

#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"
#include "worker/stopper.h"

typedef enum cairn__run_outcome {
  CAIRN__RUN_EXITED,    /* the program ended by itself (exit or signal) */
  CAIRN__RUN_OVERFLOW,  /* it wrote more than max_output bytes and was killed */
  CAIRN__RUN_NOEXEC,    /* it could not be started (missing, not executable, ...) */
  CAIRN__RUN_CANCELLED  /* the task was cancelled and the program killed */
} cairn__run_outcome;

typedef struct cairn__run_spec {
  const char *path;               /* program to execv */
  const char *const *args;        /* nargs arguments after argv[0] = path */
  size_t nargs;
  const char *dir;                /* working directory; DIR/stderr is created there */
  const char *const *env;         /* extra "NAME=VALUE" strings, NULL-terminated; may be NULL */
  size_t max_output;              /* stdout cap in bytes */
  const cairn__cancel *cancel;    /* may be NULL */
} cairn__run_spec;

typedef struct cairn__run_result {
  cairn__run_outcome outcome;
  int exit_status;                /* exit code, or 128+signal; 127 for NOEXEC, 137 for OVERFLOW */
  cairn_buf output;               /* up to max_output bytes of stdout; caller frees */
  char note[512];                 /* one line explaining OVERFLOW / NOEXEC / CANCELLED */
} cairn__run_result;

/* Runs spec and fills *res (whatever the program does). Returns CAIRN_OK, or
 * CAIRN_EIO / CAIRN_ENOMEM with err set when the worker itself could not run
 * it (no pipe, no fork, cannot create DIR/stderr); res->output is then empty. */
cairn_status cairn__run(const cairn__run_spec *spec, cairn__run_result *res, cairn_error *err);

#endif
