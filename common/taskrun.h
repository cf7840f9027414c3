/* taskrun.h — what a task runs under (docs/jobs.md, "Limits, environment
 * and stdin"): its limits, environment variables and standard input; the
 * reasons a run fails; their JSON form in a job file and in a work offer.
 *
 * Pure functions over plain structs: shared by the job file parser, the
 * master (ceilings, work offers, results) and the worker (enforcement). */
#ifndef CAIRN_TASKRUN_H
#define CAIRN_TASKRUN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* The limits, by index into cairn__task_run.limits; CAIRN_LIMIT_NAMES are
 * the keys of "limits" (job file and work offer), CAIRN_LIMIT_REASONS the
 * reasons of a run stopped by each. */
enum {
  CAIRN_LIMIT_WALL,   /* wall_seconds: wall-clock seconds of the run */
  CAIRN_LIMIT_CPU,    /* cpu_seconds: CPU seconds (user + system) */
  CAIRN_LIMIT_MEMORY, /* memory_mib: memory (cgroup memory.max, else RLIMIT_AS) */
  CAIRN_LIMIT_DISK,   /* disk_mib: bytes under the task directory */
  CAIRN_LIMIT_OUTPUT, /* output_mib: captured output (cairn__task_output_budget) */
  CAIRN_LIMIT_COUNT
};
#define CAIRN_LIMIT_NAMES {"wall_seconds", "cpu_seconds", "memory_mib", "disk_mib", "output_mib"}
#define CAIRN_LIMIT_REASONS {"wall", "cpu", "memory", "disk", "output"}
/* Each limit is an integer from 1 to CAIRN_LIMIT_MAX (2^31 - 1: 68 years,
 * 2 PiB); 0 in a struct means "not set". */
#define CAIRN_LIMIT_MAX 2147483647LL

/* Environment variables a task may set: names [A-Za-z_][A-Za-z0-9_]*, not
 * starting with CAIRN_ (the worker's own) nor denied (cairn__env_name_denied),
 * at most CAIRN_MAX_ENV of them and CAIRN_MAX_ENV_BYTES of "NAME=VALUE\0"
 * in all. */
#define CAIRN_MAX_ENV        64u
#define CAIRN_MAX_ENV_BYTES  (32u * 1024u)
#define CAIRN_ENV_RESERVED   "CAIRN_"

/* The longest reason ("signal 64", "exit 255", "memory", ...) with its NUL. */
#define CAIRN_REASON_MAX 16u

typedef struct cairn__task_run {
  int64_t limits[CAIRN_LIMIT_COUNT]; /* 0: not set */
  char **env_names, **env_values;    /* nenv each, owned */
  uint32_t nenv;
  char *stdin_name;                  /* an input's name, or NULL (owned) */
  int network;                       /* "network": 1 true (the task asks for the host's
                                        network in the worker's sandbox), -1 false,
                                        0 not set (no network) */
} cairn__task_run;

void cairn__task_run_free(cairn__task_run *r); /* frees the members, not r */
/* 1 when r sets nothing (no limit, no variable, no stdin, no network). */
int cairn__task_run_empty(const cairn__task_run *r);

/* Reads a job file's "limits", "env", "stdin" and "network" (true or
 * false) members of obj (each may be absent) into *r, which must be zeroed. where names obj in messages
 * ("job", "task \"x\""). CAIRN_EINVAL naming the key on any problem. */
cairn_status cairn__task_run_parse(json_t *obj, const char *where, cairn__task_run *r,
                                  cairn_error *err);
/* *out = def with task's settings on top: each limit task sets, each
 * variable (task's value wins), stdin, network. *out must be zeroed. */
cairn_status cairn__task_run_merge(const cairn__task_run *def, const cairn__task_run *task,
                                  cairn__task_run *out, cairn_error *err);

/* Checks a variable's name (see above). */
int cairn__env_name_ok(const char *name);

/* 1 when a job may not set variable name: it makes the dynamic loader, the
 * C library, a shell or an interpreter load code or configuration from a
 * path the job chooses (LD_PRELOAD, BASH_ENV, PYTHONPATH, ...; the list
 * starts from glibc's "unsecure" variables, docs/references.md [unsecvars],
 * and is explained in docs/security.md, "Workers"), or it is one the
 * worker sets itself for every app (PATH, HOME, TMPDIR). A deny list, not
 * an allow list: jobs pass parameters under names of their own choosing.
 * Pure; used by the master when a job is submitted and by the worker when
 * it reads a work offer (cairn__task_run_parse calls it). */
int cairn__env_name_denied(const char *name);

/* The server's ceiling (0: none for that limit). A limit above its
 * ceiling is refused: CAIRN_EINVAL naming where, the limit, its value, the
 * ceiling and flag[i] (the server's flag for it, may be NULL). A limit
 * left unset gets the ceiling. */
cairn_status cairn__task_run_ceiling(cairn__task_run *r, const int64_t ceiling[CAIRN_LIMIT_COUNT],
                                    const char *where, const char *const *flag, cairn_error *err);

/* r as the JSON of a work offer: a new object with "limits" (the limits
 * set), "env" and "stdin" when set, "network": true when asked; NULL when
 * out of memory. */
json_t *cairn__task_run_json(const cairn__task_run *r);

/* Bytes of captured output a task may keep: output_mib when set, at most
 * cap (the route's own limit); cap when it is not set. The one place the
 * per-task output budget is computed; every output counts against it. */
uint64_t cairn__task_output_budget(const cairn__task_run *r, uint64_t cap);

/* 1 when s is a reason: a limit's ("wall", ...), "signal N" (N from 1 to
 * 64) or "exit N" (N from 1 to 255), without leading zeros, or
 * "app_signature" (the worker refused a signed app version: a signature, a
 * manifest or a file that does not verify; docs/apps.md). */
int cairn__reason_valid(const char *s);
/* The reason of an exit status when nothing else is known: "exit N" for
 * N != 0, "" for 0. buf holds CAIRN_REASON_MAX bytes. */
void cairn__reason_of_exit(int exit_status, char buf[CAIRN_REASON_MAX]);
/* Index of reason s among CAIRN_LIMIT_REASONS, CAIRN_LIMIT_COUNT for
 * "signal N", CAIRN_LIMIT_COUNT + 1 for "exit N", CAIRN_LIMIT_COUNT + 2 for
 * "app_signature", -1 for anything else: the label of
 * cairn_task_failures_total. */
int cairn__reason_kind(const char *s);
#define CAIRN_REASON_APP_SIGNATURE "app_signature"
#define CAIRN_REASON_KINDS (CAIRN_LIMIT_COUNT + 3)
#define CAIRN_REASON_KIND_NAMES \
  {"wall", "cpu", "memory", "disk", "output", "signal", "exit", "app_signature"}

#endif
