/* slot.c — one task thread: poll for work, prepare, run, deliver, repeat.
 *
 * A slot's life:
 *   claim    reserve one of max_tasks (or stop when all are taken);
 *   poll     POST /v1/work: 200 → a task; 204 → back off (50 ms doubling to
 *            5 s, with jitter) and check exit_when_idle; no answer or 5xx →
 *            back off the same way; 403 → banned, fatal;
 *   task     hold the lease (heartbeat renews it), prepare the slot's
 *            directory DIR/run/slot-<i>, run the app, empty the directory,
 *            deliver the result;
 *   chain    when the master lists "next" in its features, and unless the
 *            worker winds down or --max-tasks is reached, the result asks
 *            for the next task ("next": true) after claiming it: a task in
 *            the answer runs at once (task again, no poll); an answer
 *            without one counts as a 204.
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
#include "worker/outputs.h"
#include "worker/result.h"
#include "worker/runner.h"
#include "worker/task.h"
#include "worker/worker_int.h"

#define WORK_OFFER_MAX (16u * 1024u * 1024u)
#define POLL_MIN_MS 50
#define POLL_MAX_MS 5000
#define RESULT_ANSWER_MAX (64u * 1024u)
#define EXIT_SETUP_FAILED 125

enum { POLL_NONE, POLL_WORK, POLL_WORK_THEN_NONE };

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
    CAIRN_INFO(&w->log, "finished %lu tasks (--max-tasks): exiting", w->max_tasks);
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

/* The next task chained into a result's answer, when one was asked for. */
typedef struct next_offer {
  int asked;           /* the result asked for it (a task was claimed) */
  int present;         /* the answer carried "next" */
  cairn__task *task;   /* parsed offer, or NULL when malformed */
  long long index;     /* its index (-1 when unreadable) */
  cairn_error err;     /* why it is malformed */
} next_offer;

/* Decides whether the result about to be sent asks for the next task: not
 * when the master does not list "next" in its features (or has not said
 * yet), when the worker winds down, or when --max-tasks leaves no task to
 * claim. Claims one on yes. */
static int want_next(cairn_worker *w) {
  int features = cairn__peerstate_features(&w->peers);
  if (features < 0 || !(features & CAIRN_FEAT_NEXT) || cairn__stopper_draining(&w->stopper))
    return 0;
  return claim(w);
}

/* Sends one result body; *nx (when not NULL) receives the chained offer. */
static cairn__delivery send_result(cairn__slot *sl, long long index, int exit_status,
                                   const void *out, size_t len, next_offer *nx, long *status,
                                   cairn_error *err) {
  cairn_worker *w = sl->w;
  cairn_buf answer = {0};
  int features = cairn__peerstate_features(&w->peers);
  char *body = cairn__result_json(exit_status, out, len, nx != NULL,
                                  features >= 0 && (features & CAIRN_FEAT_OUTPUTS) ? sl->extra
                                                                                   : NULL);
  if (!body) {
    cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    *status = 0;
    return CAIRN__DROPPED;
  }
  cairn__delivery d = cairn__result_deliver(&w->session, &sl->conn, index, body,
                                            nx ? WORK_OFFER_MAX : RESULT_ANSWER_MAX,
                                            nx ? &answer : NULL, status, err);
  free(body);
  if (d == CAIRN__DELIVERED && nx)
    nx->task = cairn__task_parse_next(answer.data, answer.len, &nx->present, &nx->index,
                                      &nx->err);
  cairn_buf_free(&answer);
  return d;
}

/* Delivers a result and says how the task ended. With nx, asks for the
 * next task too when want_next() agrees (nx->asked). */
static task_end deliver(cairn__slot *sl, long long index, int exit_status, const void *out,
                        size_t len, next_offer *nx) {
  cairn_worker *w = sl->w;
  cairn_error err = {0};
  long status = 0;
  if (nx)
    nx->asked = want_next(w);
  if (nx && !nx->asked)
    nx = NULL;
  cairn__delivery d = send_result(sl, index, exit_status, out, len, nx, &status, &err);
  switch (d) {
  case CAIRN__DELIVERED:
    CAIRN_INFO(&w->log, "result %lld delivered (exit status %d, %zu bytes)", index, exit_status, len);
    return exit_status == 0 ? TASK_DONE : TASK_FAILED;
  case CAIRN__DROPPED:
    CAIRN_INFO(&w->log, "result %lld dropped: %s", index, err.text);
    return TASK_DROPPED;
  case CAIRN__FATAL:
    cairn__worker_fatal(w, err.status, "%s", err.text);
    return TASK_DROPPED;
  case CAIRN__ABANDONED:
    break;
  }
  CAIRN_INFO(&w->log, "result %lld abandoned: the worker is stopping", index);
  return TASK_DROPPED;
}

/* Reports a failure found by the worker itself: "cairn-worker: NOTE". */
static task_end deliver_note(cairn__slot *sl, long long index, int exit_status,
                             const char *note, next_offer *nx) {
  char text[700];
  snprintf(text, sizeof text, "cairn-worker: %s\n", note);
  CAIRN_WARN(&sl->w->log, "task %lld: %s", index, note);
  return deliver(sl, index, exit_status, text, strlen(text), nx);
}

static cairn_status run_app(cairn__slot *sl, const cairn__app *app, const cairn__task *t,
                            const cairn__cancel *cancel, cairn__run_result *res,
                            cairn_error *err) {
  char job[48], idx[48], *id = NULL;
  if (app->fn)
    return cairn__callback_run(app->fn, app->userdata, t, &sl->td, cancel, CAIRN_MAX_OUTPUT, res,
                               err);
  if (asprintf(&id, "CAIRN_TASK_ID=%s", t->id) < 0)
    return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  snprintf(job, sizeof job, "CAIRN_JOB=%lld", t->job);
  snprintf(idx, sizeof idx, "CAIRN_INDEX=%lld", t->index);
  const char *env[] = {job, id, idx, NULL};
  cairn__run_spec spec = {
    .path = app->path, .args = (const char *const *)t->args, .nargs = t->nargs,
    .dir = sl->td.dir, .env = env, .max_output = CAIRN_MAX_OUTPUT, .cancel = cancel,
  };
  cairn_status rc = cairn__run(&spec, res, err);
  free(id);
  return rc;
}

/* Prepares, runs and reports task t, whose lease this slot holds. */
static task_end run_task(cairn__slot *sl, const cairn__task *t, const cairn__cancel *cancel,
                         next_offer *nx) {
  cairn_worker *w = sl->w;
  cairn__run_result res = {0};
  cairn__outputs ox = {0};
  cairn_error err = {0};
  task_end end;
  const cairn__app *app = cairn__worker_app(w, t->app);
  CAIRN_INFO(&w->log, "task %lld: job %lld task \"%s\" app %s", t->index, t->job, t->id, t->app);
  if (!app) {
    snprintf(err.text, sizeof err.text, "no app \"%.100s\" on this worker", t->app);
    return deliver_note(sl, t->index, EXIT_SETUP_FAILED, err.text, nx);
  }
  cairn_status rc = cairn__taskdir_prepare(&sl->td, t, app->path != NULL, &err);
  if (rc == CAIRN_OK && (t->ninputs || t->nparents)) {
    cairn__session_prepare(&w->session, &sl->conn);
    cairn_http_set_cancel(sl->conn.http, cancel_cb, (void *)cancel);
    rc = cairn__taskdir_fill(&sl->td, t, &w->cache, sl->conn.http, &w->peers, cancel, &err);
    cairn_http_set_cancel(sl->conn.http, stop_cb, &w->stopper);
  }
  if (rc == CAIRN_OK && !cairn__cancelled(cancel))
    rc = run_app(sl, app, t, cancel, &res, &err);
  if (rc == CAIRN_OK && res.outcome == CAIRN__RUN_EXITED) { /* stderr tail, output files */
    cairn_http_set_cancel(sl->conn.http, cancel_cb, (void *)cancel);
    if (cairn__outputs_gather(&ox, &w->session, &sl->conn, sl->td.dir, t, &res.exit_status,
                              cancel) != CAIRN_OK)
      res.outcome = CAIRN__RUN_CANCELLED;
    cairn_http_set_cancel(sl->conn.http, stop_cb, &w->stopper);
    sl->extra = &ox;
  }
  cairn__taskdir_clear(&sl->td);
  if (cairn__cancelled(cancel) || res.outcome == CAIRN__RUN_CANCELLED) {
    CAIRN_INFO(&w->log, "task %lld: %s: result dropped", t->index,
               cairn__stopper_stopping(&w->stopper) ? "worker stopping" : "lease lost");
    end = TASK_DROPPED;
  } else if (rc != CAIRN_OK) {
    char note[600];
    snprintf(note, sizeof note, "could not prepare the task: %s", err.text);
    end = deliver_note(sl, t->index, EXIT_SETUP_FAILED, note, nx);
  } else if (res.outcome == CAIRN__RUN_NOEXEC || res.outcome == CAIRN__RUN_OVERFLOW)
    end = deliver_note(sl, t->index, res.exit_status, res.note, nx);
  else {
    if (res.exit_status != 0)
      CAIRN_INFO(&w->log, "task %lld: app %s exited with status %d", t->index, t->app, res.exit_status);
    end = deliver(sl, t->index, res.exit_status, res.output.data, res.output.len, nx);
  }
  sl->extra = NULL;
  cairn__outputs_free(&ox);
  cairn_buf_free(&res.output);
  return end;
}

/* Runs the offer t (or, when it could not be parsed, reports index with
 * perr), then every task the master chains into the result answers.
 * Returns 1 when the last answer said "no task now" (the master, which
 * lists "next" in its features, left it out), 0 otherwise. The caller's claim covers t; each
 * chained task is claimed by want_next(). */
static int handle_offers(cairn__slot *sl, cairn__task *t, long long index,
                         const cairn_error *perr) {
  cairn_worker *w = sl->w;
  cairn_error err = *perr;
  for (;;) {
    cairn__cancel cancel = {&w->stopper, cairn__leases_lost_flag(&w->leases, sl->i)};
    next_offer nx = {0};
    task_end end;
    task_started(w);
    cairn__leases_hold(&w->leases, sl->i, index,
                       t ? t->lease_seconds : CAIRN_DEFAULT_LEASE_SECONDS);
    if (t)
      end = run_task(sl, t, &cancel, &nx);
    else if (index >= 0)
      end = deliver_note(sl, index, EXIT_SETUP_FAILED, err.text, &nx);
    else {
      CAIRN_ERR(&w->log, "unusable work offer: %s", err.text);
      end = TASK_DROPPED;
    }
    cairn__leases_release(&w->leases, sl->i);
    cairn__task_free(t);
    task_ended(w, end);
    if (!nx.present) {
      if (nx.asked)
        unclaim(w);
      return nx.asked && end != TASK_DROPPED; /* a master that chains had none */
    }
    t = nx.task;
    index = nx.index;
    err = nx.err;
  }
}

/* Polls once. Returns POLL_NONE when there was no task or the master could
 * not be reached, POLL_WORK when tasks were handled and more may be
 * waiting, POLL_WORK_THEN_NONE when the master said after them that it has
 * none now. */
static int poll_once(cairn__slot *sl, int *warned, long *retry_ms) {
  cairn_worker *w = sl->w;
  cairn_http_response resp = {0};
  cairn_error err = {0};
  char msg[300];
  int got = POLL_NONE;
  cairn_status rc = cairn__session_report(&w->session, &sl->conn, "/v1/work", CAIRN_WORK_FIELDS,
                                          NULL, 0, WORK_OFFER_MAX, &resp, &err);
  long status = resp.status;
  if (rc == CAIRN_EFORBIDDEN || rc == CAIRN_EINVAL)
    cairn__worker_fatal(w, err.status, "%s", err.text);
  else if (rc != CAIRN_OK || cairn__transient(rc, status)) {
    if (rc == CAIRN_OK)
      cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    if (!*warned && !cairn__stopper_stopping(&w->stopper))
      CAIRN_WARN(&w->log, "cannot get work: %s (retrying)", rc != CAIRN_OK ? err.text : msg);
    *warned = 1;
  } else if (status == 200) {
    long long index = -1;
    *warned = 0;
    cairn__task *t = cairn__task_parse(resp.body.data, resp.body.len, &index, &err);
    cairn_buf_free(&resp.body);
    got = handle_offers(sl, t, index, &err) ? POLL_WORK_THEN_NONE : POLL_WORK;
  } else if (status == 204) {
    *warned = 0;
    /* the master may say when work is likely (a copy of an input is landing) */
    *retry_ms = resp.retry_after_ms >= 0 ? resp.retry_after_ms
                : resp.retry_after >= 0 ? resp.retry_after * 1000 : -1;
  }
  else {
    cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    if (status == 403)
      cairn__worker_fatal(w, CAIRN_EFORBIDDEN, "the master refuses this volunteer (banned?): %s", msg);
    else
      cairn__worker_fatal(w, CAIRN_EIO, "POST /v1/work: HTTP %ld: %s", status, msg);
  }
  cairn_buf_free(&resp.body);
  return got;
}

void *cairn__slot_main(void *arg) {
  cairn__slot *sl = arg;
  cairn_worker *w = sl->w;
  cairn__backoff b;
  cairn_error err = {0};
  int warned = 0;
  cairn__backoff_init(&b, POLL_MIN_MS, POLL_MAX_MS);
  cairn_http_set_cancel(sl->conn.http, stop_cb, &w->stopper);
  if (cairn__taskdir_init(&sl->td, w->run_dir, sl->i, &err) != CAIRN_OK)
    CAIRN_WARN(&w->log, "%s (tried again before the next task)", err.text);
  sl->td.log = &w->log;
  while (!cairn__stopper_draining(&w->stopper)) {
    if (!claim(w))
      break;
    long retry_ms = -1;
    int got = poll_once(sl, &warned, &retry_ms);
    if (got == POLL_WORK) {
      cairn__backoff_reset(&b);
      continue;
    }
    if (got == POLL_WORK_THEN_NONE)
      cairn__backoff_reset(&b);  /* the poll's claim went to a task */
    else
      unclaim(w);
    long long left = idle_left(w);
    if (left == 0) {
      CAIRN_INFO(&w->log, "no work for %u seconds (--exit-when-idle): exiting", w->exit_when_idle);
      cairn__stopper_drain(&w->stopper);
      break;
    }
    long delay = cairn__backoff_next(&b);
    if (retry_ms >= 0 && retry_ms < delay)
      delay = retry_ms;
    if (left > 0 && left < delay)
      delay = (long)left;
    cairn__stopper_sleep(&w->stopper, delay);
  }
  cairn__taskdir_destroy(&sl->td);
  cairn_http_set_cancel(sl->conn.http, NULL, NULL);
  return NULL;
}
