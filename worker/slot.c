/* slot.c — one task thread: poll for work, prepare, run, deliver, repeat.
 *
 * A slot's life:
 *   claim    reserve one of max_tasks (or stop when all are taken);
 *   poll     POST /v1/work: 200 → a task; 204 → back off (50 ms doubling to
 *            5 s, with jitter) and check exit_when_idle; no answer or 5xx →
 *            back off the same way; 403 → banned, fatal;
 *   task     hold the lease (heartbeat renews it), build DIR/run/<index>,
 *            run the app, deliver the result, remove the directory.
 * Blame: a task the worker cannot prepare (bad input, missing app, ...) is
 * reported with exit status 125 and a "cairn-worker: ..." output; an app
 * that cannot be executed gets 127; everything else is the app's status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "common/log.h"
#include "worker/backoff.h"
#include "worker/callback.h"
#include "worker/result.h"
#include "worker/runner.h"
#include "worker/task.h"
#include "worker/taskdir.h"
#include "worker/worker_int.h"

#define WORK_OFFER_MAX (16u * 1024u * 1024u)
#define POLL_MIN_MS 50
#define POLL_MAX_MS 5000
#define EXIT_SETUP_FAILED 125

typedef enum { TASK_DONE, TASK_FAILED, TASK_DROPPED } task_end;

static int claim(cairn_worker *w) {
  int ok = 1;
  pthread_mutex_lock(&w->mu);
  if (w->max_tasks && w->claimed >= w->max_tasks)
    ok = 0;
  else
    w->claimed++;
  pthread_mutex_unlock(&w->mu);
  return ok;
}

static void unclaim(cairn_worker *w) {
  pthread_mutex_lock(&w->mu);
  w->claimed--;
  pthread_mutex_unlock(&w->mu);
}

static void task_started(cairn_worker *w) {
  pthread_mutex_lock(&w->mu);
  w->running++;
  w->last_work_ms = cairn__now_ms();
  pthread_mutex_unlock(&w->mu);
}

static void task_ended(cairn_worker *w, task_end end) {
  int all_done;
  pthread_mutex_lock(&w->mu);
  w->running--;
  w->finished++;
  w->last_work_ms = cairn__now_ms();
  if (end == TASK_DONE)
    w->stats.tasks_done++;
  else if (end == TASK_FAILED)
    w->stats.tasks_failed++;
  else
    w->stats.tasks_dropped++;
  all_done = w->max_tasks && w->finished >= w->max_tasks;
  pthread_mutex_unlock(&w->mu);
  if (all_done) {
    CAIRN_INFO("finished %lu tasks (--max-tasks): exiting", w->max_tasks);
    cairn__stopper_drain(&w->stopper);
  }
}

/* Milliseconds left before exit_when_idle fires (0: fire now; -1: never). */
static long long idle_left(cairn_worker *w) {
  long long left = -1;
  if (!w->exit_when_idle)
    return -1;
  pthread_mutex_lock(&w->mu);
  if (w->running == 0) {
    left = w->last_work_ms + (long long)w->exit_when_idle * 1000 - cairn__now_ms();
    if (left < 0)
      left = 0;
  }
  pthread_mutex_unlock(&w->mu);
  return left;
}

static int stop_cb(void *ud) { return cairn__stopper_stopping(ud); }
static int cancel_cb(void *ud) { return cairn__cancelled(ud); }

/* Delivers a result and says how the task ended. */
static task_end deliver(cairn__slot *sl, long long index, int exit_status, const void *out,
                        size_t len) {
  cairn_worker *w = sl->w;
  cairn_error err = {0};
  char *body = cairn__result_json(exit_status, out, len);
  if (!body) {
    CAIRN_ERR("result %lld: out of memory", index);
    return TASK_DROPPED;
  }
  cairn__delivery d = cairn__result_deliver(&w->session, &sl->conn, index, body, &err);
  free(body);
  switch (d) {
  case CAIRN__DELIVERED:
    CAIRN_INFO("result %lld delivered (exit status %d, %zu bytes)", index, exit_status, len);
    return exit_status == 0 ? TASK_DONE : TASK_FAILED;
  case CAIRN__DROPPED:
    CAIRN_INFO("result %lld dropped: %s", index, err.text);
    return TASK_DROPPED;
  case CAIRN__FATAL:
    cairn__worker_fatal(w, "%s", err.text);
    return TASK_DROPPED;
  case CAIRN__ABANDONED:
    break;
  }
  CAIRN_INFO("result %lld abandoned: the worker is stopping", index);
  return TASK_DROPPED;
}

/* Reports a failure found by the worker itself: "cairn-worker: NOTE". */
static task_end deliver_note(cairn__slot *sl, long long index, int exit_status,
                             const char *note) {
  char text[700];
  snprintf(text, sizeof text, "cairn-worker: %s\n", note);
  CAIRN_WARN("task %lld: %s", index, note);
  return deliver(sl, index, exit_status, text, strlen(text));
}

static cairn_status run_app(cairn__slot *sl, const cairn__app *app, const cairn__task *t,
                            const cairn__taskdir *d, const cairn__cancel *cancel,
                            cairn__run_result *res, cairn_error *err) {
  char job[48], idx[48], *id = NULL;
  if (app->fn)
    return cairn__callback_run(app->fn, app->userdata, t, d, cancel, CAIRN_MAX_OUTPUT, res, err);
  if (asprintf(&id, "CAIRN_TASK_ID=%s", t->id) < 0)
    return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  snprintf(job, sizeof job, "CAIRN_JOB=%lld", t->job);
  snprintf(idx, sizeof idx, "CAIRN_INDEX=%lld", t->index);
  const char *env[] = {job, id, idx, NULL};
  cairn__run_spec spec = {
    .path = app->path, .args = (const char *const *)t->args, .nargs = t->nargs,
    .dir = d->dir, .env = env, .max_output = CAIRN_MAX_OUTPUT, .cancel = cancel,
  };
  cairn_status rc = cairn__run(&spec, res, err);
  free(id);
  return rc;
}

/* Prepares, runs and reports task t, whose lease this slot holds. */
static task_end run_task(cairn__slot *sl, const cairn__task *t, const cairn__cancel *cancel) {
  cairn_worker *w = sl->w;
  cairn__taskdir d = {0};
  cairn__run_result res = {0};
  cairn_error err = {0};
  task_end end;
  const cairn__app *app = cairn__worker_app(w, t->app);
  CAIRN_INFO("task %lld: job %lld task \"%s\" app %s", t->index, t->job, t->id, t->app);
  if (!app) {
    snprintf(err.text, sizeof err.text, "no app \"%.100s\" on this worker", t->app);
    return deliver_note(sl, t->index, EXIT_SETUP_FAILED, err.text);
  }
  cairn_status rc = cairn__taskdir_create(w->run_dir, t, &d, &err);
  if (rc == CAIRN_OK) {
    cairn__session_prepare(&w->session, &sl->conn);
    cairn_http_set_cancel(sl->conn.http, cancel_cb, (void *)cancel);
    rc = cairn__taskdir_fill(&d, t, &w->cache, sl->conn.http, &w->peers, cancel, &err);
    cairn_http_set_cancel(sl->conn.http, stop_cb, &w->stopper);
  }
  if (rc == CAIRN_OK && !cairn__cancelled(cancel))
    rc = run_app(sl, app, t, &d, cancel, &res, &err);
  if (cairn__cancelled(cancel) || res.outcome == CAIRN__RUN_CANCELLED) {
    CAIRN_INFO("task %lld: %s: result dropped", t->index,
               cairn__stopper_stopping(&w->stopper) ? "worker stopping" : "lease lost");
    end = TASK_DROPPED;
  } else if (rc != CAIRN_OK) {
    char note[600];
    snprintf(note, sizeof note, "could not prepare the task: %s", err.text);
    end = deliver_note(sl, t->index, EXIT_SETUP_FAILED, note);
  } else if (res.outcome == CAIRN__RUN_NOEXEC || res.outcome == CAIRN__RUN_OVERFLOW)
    end = deliver_note(sl, t->index, res.exit_status, res.note);
  else {
    if (res.exit_status != 0)
      CAIRN_INFO("task %lld: app %s exited with status %d", t->index, t->app, res.exit_status);
    end = deliver(sl, t->index, res.exit_status, res.output.data, res.output.len);
  }
  cairn_buf_free(&res.output);
  cairn__taskdir_remove(&d);
  cairn__taskdir_free(&d);
  return end;
}

/* Handles a 200 answer of POST /v1/work. */
static void handle_offer(cairn__slot *sl, const cairn_buf *body) {
  cairn_worker *w = sl->w;
  cairn_error err = {0};
  long long index = -1;
  cairn__task *t = cairn__task_parse(body->data, body->len, &index, &err);
  cairn__cancel cancel = {&w->stopper, cairn__leases_lost_flag(&w->leases, sl->i)};
  task_started(w);
  cairn__leases_hold(&w->leases, sl->i, index, t ? t->lease_seconds : CAIRN_DEFAULT_LEASE_SECONDS);
  task_end end;
  if (t)
    end = run_task(sl, t, &cancel);
  else if (index >= 0)
    end = deliver_note(sl, index, EXIT_SETUP_FAILED, err.text);
  else {
    CAIRN_ERR("unusable work offer: %s", err.text);
    end = TASK_DROPPED;
  }
  cairn__leases_release(&w->leases, sl->i);
  cairn__task_free(t);
  task_ended(w, end);
}

/* Polls once. Returns 1 when a task was handled, 0 when there was none or
 * the master could not be reached. */
static int poll_once(cairn__slot *sl, int *warned) {
  cairn_worker *w = sl->w;
  cairn_http_response resp = {0};
  cairn_error err = {0};
  char msg[300];
  int got = 0;
  cairn_status rc = cairn__session_report(&w->session, &sl->conn, "/v1/work", 0, WORK_OFFER_MAX,
                                          &resp, &err);
  long status = resp.status;
  if (rc == CAIRN_EFORBIDDEN || rc == CAIRN_EINVAL)
    cairn__worker_fatal(w, "%s", err.text);
  else if (rc != CAIRN_OK || cairn__transient(rc, status)) {
    if (rc == CAIRN_OK)
      cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    if (!*warned && !cairn__stopper_stopping(&w->stopper))
      CAIRN_WARN("cannot get work: %s (retrying)", rc != CAIRN_OK ? err.text : msg);
    *warned = 1;
  } else if (status == 200) {
    *warned = 0;
    got = 1;
    handle_offer(sl, &resp.body);
  } else if (status == 204)
    *warned = 0;
  else {
    cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    if (status == 403)
      cairn__worker_fatal(w, "the master refuses this volunteer (banned?): %s", msg);
    else
      cairn__worker_fatal(w, "POST /v1/work: HTTP %ld: %s", status, msg);
  }
  cairn_buf_free(&resp.body);
  return got;
}

void *cairn__slot_main(void *arg) {
  cairn__slot *sl = arg;
  cairn_worker *w = sl->w;
  cairn__backoff b;
  int warned = 0;
  cairn__backoff_init(&b, POLL_MIN_MS, POLL_MAX_MS);
  cairn_http_set_cancel(sl->conn.http, stop_cb, &w->stopper);
  while (!cairn__stopper_draining(&w->stopper)) {
    if (!claim(w))
      break;
    if (poll_once(sl, &warned)) {
      cairn__backoff_reset(&b);
      continue;
    }
    unclaim(w);
    long long left = idle_left(w);
    if (left == 0) {
      CAIRN_INFO("no work for %u seconds (--exit-when-idle): exiting", w->exit_when_idle);
      cairn__stopper_drain(&w->stopper);
      break;
    }
    long delay = cairn__backoff_next(&b);
    if (left > 0 && left < delay)
      delay = (long)left;
    cairn__stopper_sleep(&w->stopper, delay);
  }
  cairn_http_set_cancel(sl->conn.http, NULL, NULL);
  return NULL;
}
