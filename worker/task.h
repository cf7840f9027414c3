/* task.h — a task offered by POST /v1/work or chained in the answer of
 * PUT /v1/results/{index} (docs/protocol.md), parsed and
 * checked before anything is downloaded or run. Private to worker/.
 */
#ifndef CAIRN_TASK_H
#define CAIRN_TASK_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"
#include "common/resources.h"
#include "common/taskrun.h"
#include "common/outputs.h"

typedef struct cairn__input {
  char *name;
  char sha256[65];
  long long size;   /* -1 when the master did not say */
  char *url;        /* where to fetch it: the first source */
  char **sources;   /* nsources URLs in order of preference (peers, then the
                       master), or NULL when the master named only url */
  size_t nsources;
  char *parent, *file; /* a parent's output file (both set): placed at
                          inputs/ENC(parent)/ENC(file), see taskdir.h */
} cairn__input;

typedef struct cairn__parent {
  char *id;
  char *url;
} cairn__parent;

typedef struct cairn__task {
  long long index;
  long long lease_seconds;
  long long job;
  char *id;
  char *app;
  char **args;
  size_t nargs;
  cairn__input *inputs;
  size_t ninputs;
  cairn__parent *parents;
  size_t nparents;
  cairn__resources resources; /* what it requests (one core when the master said nothing) */
  cairn__task_run run;  /* "limits", "env", "stdin" (stdin names one of inputs) */
  cairn__output_patterns outputs; /* the files to upload after exit 0 */
  int keep;            /* "keep": "workers": keep them in the cache instead
                          (docs/worker.md, "Outputs kept on workers") */
  char *app_version, *app_platform; /* "app_version": the signed version of app to
                          run (docs/apps.md, appver.h); NULL: this worker's own app */
  json_t *offer;       /* the work offer as received (a reference), recorded
                          before the app starts (resume.h) */
  int resumed;         /* run again after the worker restarted (resume.h) */
} cairn__task;

/* Parses a 200 answer of POST /v1/work. Returns NULL with err set when the
 * body is malformed; when at least the index could be read, *index is set
 * (else -1) so that the worker can still report the failure for it. */
cairn__task *cairn__task_parse(const char *body, size_t len, long long *index, cairn_error *err);

/* Reads the answer of PUT /v1/results/{index} sent with "next": true.
 * *present is set when it carries a "next" member (a work offer, parsed as
 * cairn__task_parse() does, with the same rules for NULL, *index and err);
 * when "next" is absent (no task for this volunteer now, or a master that
 * does not know the field) the result is NULL with *present 0. */
cairn__task *cairn__task_parse_next(const char *body, size_t len, int *present, long long *index,
                                    cairn_error *err);

/* Reads one work offer of a batch answer's "tasks" (rules of
 * cairn__task_parse). */
cairn__task *cairn__task_from_json(json_t *offer, long long *index, cairn_error *err);

/* Frees t. Accepts NULL. */
void cairn__task_free(cairn__task *t);

#endif
