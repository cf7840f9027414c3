/* callback.c — run a C callback app, with its capped output buffer. */
#include "worker/callback.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cairn_task_output {
  cairn__buf buf;
  int overflow;
  const cairn__cancel *cancel;
  cairn__resume *resume;  /* where its progress goes (NULL: nowhere) */
  size_t slot;
};

int cairn_task_output_write(cairn_task_output *out, const void *data, size_t len) {
  if (out->overflow)
    return -1;
  if (cairn__buf_append(&out->buf, data, len) != 0) {
    out->overflow = 1;
    return -1;
  }
  return 0;
}

int cairn_task_output_printf(cairn_task_output *out, const char *fmt, ...) {
  cairn__buf text;
  cairn__buf_init(&text, (size_t)-1);
  va_list ap;
  va_start(ap, fmt);
  int rc = cairn__buf_vprintf(&text, fmt, ap);
  va_end(ap);
  if (rc == 0)
    rc = cairn_task_output_write(out, text.data ? text.data : "", text.len);
  cairn__buf_free(&text);
  return rc;
}

int cairn_task_cancelled(const cairn_task_output *out) {
  return out->cancel && cairn__cancelled(out->cancel);
}

int cairn_task_progress(cairn_task_output *out, double fraction) {
  if (!out || !isfinite(fraction) || fraction < 0 || fraction > 1)
    return -1;
  if (out->resume)
    return cairn__resume_set_progress(out->resume, out->slot, fraction) == CAIRN_OK ? 0 : -1;
  return 0;
}

cairn_status cairn__callback_run(cairn_task_fn fn, void *userdata, const cairn__task *t,
                                 const cairn__taskdir *d, const cairn__cancel *cancel,
                                 size_t max_output, cairn__resume *rs, size_t slot,
                                 cairn__run_result *res, cairn_error *err) {
  cairn_task_file *inputs = calloc(t->ninputs + 1, sizeof *inputs);
  cairn_task_file *parents = calloc(t->nparents + 1, sizeof *parents);
  struct cairn_task_output out = {.cancel = cancel, .resume = rs, .slot = slot};
  memset(res, 0, sizeof *res);
  res->usage = CAIRN_USAGE_NONE; /* a thread of the worker's: not measured apart */
  cairn__buf_init(&res->output, max_output);
  if (!inputs || !parents) {
    free(inputs);
    free(parents);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < t->ninputs; i++)
    inputs[i] = (cairn_task_file){t->inputs[i].name, d->input_paths[i]};
  for (size_t i = 0; i < t->nparents; i++)
    parents[i] = (cairn_task_file){t->parents[i].id, d->parent_paths[i]};
  cairn_task task = {
    .job = t->job, .id = t->id, .index = t->index, .app = t->app,
    .nargs = t->nargs, .args = (const char *const *)t->args,
    .ninputs = t->ninputs, .inputs = inputs,
    .nparents = t->nparents, .parents = parents, .dir = d->dir, .resumed = t->resumed,
  };
  cairn__buf_init(&out.buf, max_output);
  struct timespec t0 = {0, 0}, t1 = {0, 0}; /* the callback's CPU time: this thread's */
  int timed = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0) == 0;
  int status = fn(&task, &out, userdata);
  if (timed && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1) == 0)
    res->cpu_seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  free(inputs);
  free(parents);
  res->output = out.buf;
  res->exit_status = status >= 0 && status <= 255 ? status : 255;
  res->outcome = CAIRN__RUN_EXITED;
  if (out.overflow) {
    res->outcome = CAIRN__RUN_OVERFLOW;
    if (res->exit_status == 0)
      res->exit_status = 1;
    snprintf(res->note, sizeof res->note, "output exceeded %zu bytes", max_output);
  }
  if (cancel && cairn__cancelled(cancel)) {
    res->outcome = CAIRN__RUN_CANCELLED;
    snprintf(res->note, sizeof res->note, "task cancelled");
  }
  return CAIRN_OK;
}
