/* launch_condor.h — the parts of the `condor` backend (cli/launch_condor.c)
 * that do not run HTCondor: the submit description it writes and the
 * command output it reads. Declared here so that tests/unit/test_launch_condor.c
 * checks them without an HTCondor pool. */
#ifndef CAIRN_CLI_LAUNCH_CONDOR_H
#define CAIRN_CLI_LAUNCH_CONDOR_H

#include <stddef.h>

#include "cli/launch.h"

/* What one submission needs besides the spec. Strings are the caller's. */
typedef struct cairn__condor_submit {
  const char *executable; /* absolute path of cairn-worker on the execution nodes */
  const char *dir;        /* WORKDIR/condor: the job's output, error and event log */
  const char *tag;        /* this factory's CairnFactory value ([A-Za-z0-9._:-] only) */
  int count;              /* queue count, >= 1 */
} cairn__condor_submit;

/* Writes the argument list argv (NULL-terminated) in the submit language's
 * new syntax into out: the whole list in double quotes, each argument in
 * single quotes, a ' inside doubled to '', a " doubled to "". Returns 0, or
 * -1 when it does not fit or an argument holds a newline, a carriage return
 * or a '$' (which condor_submit would read as a macro). */
int cairn__condor_quote_args(const char *const *argv, char *out, size_t size);

/* Checks --batch-options text: lines separated by newlines or ';', each
 * empty, a # comment, or "KEY = VALUE" with KEY a submit command or a
 * +Attribute; the commands this backend writes itself are refused. 0, or -1
 * with the reason in err. */
int cairn__condor_check_batch_options(const char *text, char *err, size_t errlen);

/* The submit description for sub.count workers of spec into out (size
 * bytes). Returns 0, or -1 with the reason in err. */
int cairn__condor_submit_text(const cairn__launch_spec *spec, const cairn__condor_submit *sub,
                             char *out, size_t size, char *err, size_t errlen);

/* Parses `condor_submit -terse` output ("CLUSTER.FIRST - CLUSTER.LAST").
 * 0 with the three numbers, or -1. */
int cairn__condor_parse_terse(const char *out, long *cluster, long *first, long *last);

/* Parses one line of `-af ClusterId ProcId JobStatus ExitCode` output
 * ("123 4 2 undefined"). *exit_code is -1 when undefined. 0, or -1. */
int cairn__condor_parse_af(const char *line, long *cluster, long *proc, int *status,
                          int *exit_code);

/* The CAIRN_LAUNCH_* state of a job with HTCondor JobStatus status (1 idle,
 * 2 running, 3 removed, 4 completed, 5 held, 6 transferring output,
 * 7 suspended) and exit_code (-1: undefined). */
int cairn__condor_state(int status, int exit_code);

#endif
