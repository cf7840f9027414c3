/* jobspec.h — the job file (docs/jobs.md): parse and validate.
 *
 * Pure: takes JSON text, returns a validated job or a message that names the
 * problem (unknown field, duplicate id, unknown parent, cycle, ...).
 */
#ifndef CAIRN_JOBSPEC_H
#define CAIRN_JOBSPEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/resources.h"
#include "plan/dag.h"

/* Distinct resource requests one job may make (docs/jobs.md): the master
 * keeps one entry per request, so that a job's "unfit" count is O(this). */
#define CAIRN_MAX_RESOURCE_CLASSES 64
#include "common/autosize.h"
#include "common/taskrun.h"
#include "common/outputs.h"
#include "plan/validator.h"

typedef struct cairn__jobspec_file {
  char *name;
  char *path;     /* client side: where to read it; NULL on the server */
  char *sha256;   /* 64 hex digits; NULL before upload (client side) */
  int64_t size;   /* -1 if not given */
  int broadcast;
} cairn__jobspec_file;

/* An input that is a parent's output file ("inputs": ["PARENT_ID/NAME"]). */
typedef struct cairn__jobspec_pin {
  uint32_t parent;   /* index of the parent task (one of "after") */
  char *file;        /* NAME: matches one of the parent's output patterns */
} cairn__jobspec_pin;

typedef struct cairn__jobspec_task {
  char *id;
  char **args;
  uint32_t nargs;
  uint32_t *inputs;  /* indices into files */
  uint32_t ninputs;
  uint8_t rclass;    /* its request: the job's rclasses[rclass] */
  uint8_t sizing;    /* CAIRN_SIZE_AUTO ("resources": "auto"), CAIRN_SIZE_RETRY_LARGER */
  uint8_t category;  /* its category: the job's categories[category] */
  cairn__task_run run;  /* the job's "limits", "env", "stdin" with the task's on top */
  cairn__jobspec_pin *pins; /* parents' output files it reads, in "inputs" order */
  uint32_t npins;
  cairn__output_patterns outputs; /* its own "outputs", else the job's */
} cairn__jobspec_task;

typedef struct cairn__jobspec {
  char *name;
  char *app;
  char *app_version;   /* "app_version": the signed version every task runs
                        * (docs/apps.md); NULL: the newest for each platform */
  char *policy;        /* "ic" unless given; the server checks it exists */
  int replication, quorum, lease_seconds, max_attempts;
  int priority;        /* higher is served first among jobs; 0 unless given */
  int adaptive;        /* "adaptive": a trusted volunteer's tasks may run once
                        * (docs/accountability.md, "Adaptive replication") */
  int keep_master;     /* "keep": "master": the master keeps a copy of every
                        * output file (docs/jobs.md, "Where outputs stay") */
  cairn__validator validator; /* how replicas are compared; exact unless given */
  cairn__jobspec_file *files;
  uint32_t nfiles;
  cairn__jobspec_task *tasks;
  uint32_t ntasks;
  cairn__dag *dag;      /* task i is node i; edges parent -> child from "after" */
  cairn__resources resources;  /* the job's default request (one core unless given) */
  cairn__resources rclasses[CAIRN_MAX_RESOURCE_CLASSES]; /* the distinct requests, in order of */
  uint32_t nrclasses;         /* first use by a task (at least one) */
  cairn__task_run defaults; /* the job-wide "limits", "env", "stdin" */
  /* tasks that size themselves (common/autosize.h): the distinct category
   * labels in order of first use, [0] being "" (the job itself: tasks
   * that neither they nor the job give a "category"); owned */
  char *categories[CAIRN_MAX_CATEGORIES];
  uint32_t ncategories;
  uint8_t def_sizing, def_category; /* the job-wide "resources": "auto",
                                     * "retry_larger" and "category" */
} cairn__jobspec;

typedef enum {
  CAIRN_JOBSPEC_CLIENT, /* files need "path" (sha256 optional) */
  CAIRN_JOBSPEC_SERVER  /* files need "sha256" (path ignored) */
} cairn__jobspec_mode;

/* Parses and validates a job. Returns NULL and fills err on any problem. */
cairn__jobspec *cairn__jobspec_parse(const char *text, size_t len, cairn__jobspec_mode mode,
                                   cairn_error *err);
void cairn__jobspec_free(cairn__jobspec *j);

/* Applies the server's ceiling (cairn__task_run_ceiling) to every task:
 * refused naming the first task (or the job-wide default) above it; the
 * limits left unset get the ceiling. flag[i] names the server's flag. */
cairn_status cairn__jobspec_ceiling(cairn__jobspec *j, const int64_t ceiling[CAIRN_LIMIT_COUNT],
                                   const char *const *flag, cairn_error *err);

/* Index of the file called name, or -1. */
int cairn__jobspec_file_index(const cairn__jobspec *j, const char *name);

#endif
