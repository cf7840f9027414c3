/* slot.c — one task thread: poll for work, prepare, run, deliver, repeat.
 *
 * A slot's life:
 *   claim    reserve one of max_tasks (or stop when all are taken);
 *   poll     POST /v1/work: 200 → a task; 204 → back off (50 ms doubling to
 *            5 s, with jitter) and check exit_when_idle; no answer or 5xx →
 *            back off the same way; 403 → banned, fatal. To a master that
 *            lists "wait" the body asks to be held up to WORK_WAIT_MS (at
 *            most --exit-when-idle, and the time left before it fires): a
 *            204 after the master held it is followed by the next poll at
 *            once (so is a chained answer without a task), a quick one by
 *            the backoff. A drain or stop aborts the held request
 *            (libcurl's progress callback, about once a second); a task
 *            the master handed out in that instant comes back when its
 *            lease expires;
 *   task     hold the lease (heartbeat renews it), take the task's request
 *            from the worker's pool (respool.h; wait while it does not fit),
 *            prepare the slot's directory DIR/run/slot-<i>, run the app,
 *            empty the directory, deliver the result, give the request back;
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
#include <time.h>
#include <unistd.h>

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
#define PAUSED_CHECK_MS 250   /* how often a paused slot looks again */
#define WORK_WAIT_MS 20000    /* "wait" of a work request (CAIRN_MAX_WAIT_MS at most) */
#define WORK_WAIT_SLACK_S 30  /* libcurl's timeout of a held request: its wait + this */
#define HTTP_TIMEOUT_S 30     /* the slot's timeout of every other request */

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
  if (features < 0 || !(features & CAIRN_FEAT_NEXT) || cairn__stopper_draining(&w->stopper) ||
      cairn__throttle_paused(&w->throttle))
    return 0;
  return claim(w);
}

/* Sends one result body; *nx (when not NULL) receives the chained offer.
 * reason goes only to a master that lists the feature "reason". */
static cairn__delivery send_result(cairn__slot *sl, long long index, int exit_status,
                                   const char *reason, const void *out, size_t len,
                                   next_offer *nx, long *status, cairn_error *err) {
  cairn_worker *w = sl->w;
  cairn_buf answer = {0};
  int features = cairn__peerstate_features(&w->peers);
  if (features < 0 || !(features & CAIRN_FEAT_REASON))
    reason = NULL;
  char *body = cairn__result_json(exit_status, reason, out, len, nx != NULL,
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
static task_end deliver(cairn__slot *sl, long long index, int exit_status, const char *reason,
                        const void *out, size_t len, next_offer *nx) {
  cairn_worker *w = sl->w;
  cairn_error err = {0};
  long status = 0;
  if (nx)
    nx->asked = want_next(w);
  if (nx && !nx->asked)
    nx = NULL;
  cairn__delivery d = send_result(sl, index, exit_status, reason, out, len, nx, &status, &err);
  switch (d) {
  case CAIRN__DELIVERED:
    CAIRN_INFO(&w->log, "result %lld delivered (exit status %d%s%s, %zu bytes)", index, exit_status,
               reason && *reason ? ", reason " : "", reason ? reason : "", len);
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

/* Reports a failure found by the worker itself: "cairn-worker: NOTE";
 * reason NULL: "exit STATUS". */
static task_end deliver_note(cairn__slot *sl, long long index, int exit_status,
                             const char *reason, const char *note, next_offer *nx) {
  char text[700], why[CAIRN_REASON_MAX];
  snprintf(text, sizeof text, "cairn-worker: %s\n", note);
  CAIRN_WARN(&sl->w->log, "task %lld: %s", index, note);
  if (!reason) {
    cairn_reason_of_exit(exit_status, why);
    reason = why;
  }
  return deliver(sl, index, exit_status, reason, text, strlen(text), nx);
}

/* The program's environment: the CAIRN_* variables, then the task's. NULL
 * when out of memory; free with free_env. */
static char *env_entry(const char *name, const char *value) {
  size_t n = strlen(name) + strlen(value) + 2;
  char *e = malloc(n);
  if (e)
    snprintf(e, n, "%s=%s", name, value);
  return e;
}

static void free_env(char **env, size_t n) {
  for (size_t i = 0; env && i < n; i++)
    free(env[i]);
  free(env);
}

static char **make_env(const cairn__task *t) {
  char job[32], idx[32];
  size_t n = t->run.nenv + 3;
  char **env = calloc(n + 1, sizeof *env);
  if (!env)
    return NULL;
  snprintf(job, sizeof job, "%lld", t->job);
  snprintf(idx, sizeof idx, "%lld", t->index);
  env[0] = env_entry("CAIRN_JOB", job);
  env[1] = env_entry("CAIRN_TASK_ID", t->id);
  env[2] = env_entry("CAIRN_INDEX", idx);
  int bad = !env[0] || !env[1] || !env[2];
  for (uint32_t i = 0; i < t->run.nenv; i++)
    bad |= !(env[3 + i] = env_entry(t->run.env_names[i], t->run.env_values[i]));
  if (bad) {
    free_env(env, n);
    return NULL;
  }
  return env;
}

static cairn_status run_app(cairn__slot *sl, const cairn__app *app, const cairn__task *t,
                            const cairn__cancel *cancel, cairn__run_result *res,
                            cairn_error *err) {
  size_t budget = (size_t)cairn_task_output_budget(&t->run, CAIRN_MAX_OUTPUT);
  if (app->fn)
    return cairn__callback_run(app->fn, app->userdata, t, &sl->td, cancel, budget, res, err);
  char **env = make_env(t), cgroup[64];
  if (!env)
    return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  const char *in = NULL;
  for (size_t k = 0; t->run.stdin_name && k < t->ninputs; k++)
    if (strcmp(t->inputs[k].name, t->run.stdin_name) == 0)
      in = sl->td.input_paths[k];
  snprintf(cgroup, sizeof cgroup, "cairn-%ld-slot-%zu", (long)getpid(), (size_t)sl->i);
  cairn__run_spec spec = {
    .path = app->path, .args = (const char *const *)t->args, .nargs = t->nargs,
    .dir = sl->td.dir, .env = (const char *const *)env, .max_output = budget, .cancel = cancel,
    .stdin_path = in, .limits = t->run.limits, .cgroup_name = cgroup,
    .throttle = sl->w->throttle_ok ? &sl->w->throttle : NULL, .slot = sl->i,
  };
  cairn_status rc = cairn__run(&spec, res, err);
  if (rc == CAIRN_OK && res->memory_by)
    CAIRN_INFO(&sl->w->log, "task %lld: memory limit of %lld MiB held by %s%s%s", t->index,
               (long long)t->run.limits[CAIRN_LIMIT_MEMORY],
               strcmp(res->memory_by, "cgroup") == 0 ? "a cgroup v2 (memory.max)" : "RLIMIT_AS",
               res->memory_why[0] ? " (no cgroup: " : "", res->memory_why[0] ? res->memory_why : "");
  free_env(env, t->run.nenv + 3);
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
    return deliver_note(sl, t->index, EXIT_SETUP_FAILED, NULL, err.text, nx);
  }
  uint64_t disk_need = 0;
  if (cairn__diskcap_admit(&w->diskcap, t, &disk_need, &err) != 0)
    return deliver_note(sl, t->index, EXIT_SETUP_FAILED, NULL, err.text, nx);
  cairn_status rc = cairn__taskdir_prepare(&sl->td, t, app->path != NULL, &err);
  if (rc == CAIRN_OK && (t->ninputs || t->nparents)) {
    cairn__session_prepare(&w->session, &sl->conn);
    cairn_http_set_cancel(sl->conn.http, cancel_cb, (void *)cancel);
    rc = cairn__taskdir_fill(&sl->td, t, &w->cache, sl->conn.http, &w->peers, cancel, &err);
    cairn_http_set_cancel(sl->conn.http, stop_cb, &w->stopper);
  }
  cairn__diskcap_prepared(&w->diskcap, disk_need);
  if (rc == CAIRN_OK && !cairn__cancelled(cancel))
    rc = run_app(sl, app, t, cancel, &res, &err);
  if (rc == CAIRN_OK && res.outcome == CAIRN__RUN_EXITED) { /* stderr tail, output files */
    cairn_http_set_cancel(sl->conn.http, cancel_cb, (void *)cancel);
    int exited = res.exit_status;
    if (cairn__outputs_gather(&ox, &w->session, &sl->conn, sl->td.dir, t, &res.exit_status,
                              cancel) != CAIRN_OK)
      res.outcome = CAIRN__RUN_CANCELLED;
    if (exited == 0 && res.exit_status != 0) /* an output missing, too large or refused */
      snprintf(res.reason, sizeof res.reason, "output");
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
    end = deliver_note(sl, t->index, EXIT_SETUP_FAILED, NULL, note, nx);
  } else if (res.outcome == CAIRN__RUN_NOEXEC || res.outcome == CAIRN__RUN_OVERFLOW ||
             res.outcome == CAIRN__RUN_LIMIT)
    end = deliver_note(sl, t->index, res.exit_status, res.reason[0] ? res.reason : NULL, res.note,
                       nx);
  else {
    if (res.exit_status != 0)
      CAIRN_INFO(&w->log, "task %lld: app %s exited with status %d (%s)", t->index, t->app,
                 res.exit_status, res.reason);
    end = deliver(sl, t->index, res.exit_status, res.reason, res.output.data, res.output.len, nx);
  }
  sl->extra = NULL;
  cairn__outputs_free(&ox);
  cairn_buf_free(&res.output);
  return end;
}

static long long real_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs task t holding its request in the worker's pool (respool.h): waits
 * while it does not fit what the running tasks leave free; a request over
 * the whole offer is reported as a setup failure (125). The log gets a
 * "start" line once the request is held and an "end" line before it is
 * given back, with the request and monotonic and real times in ms. */
static task_end run_held(cairn__slot *sl, const cairn__task *t, const cairn__cancel *cancel,
                         next_offer *nx) {
  cairn_worker *w = sl->w;
  const cairn_resources *rq = &t->resources;
  int rc = cairn__respool_try(&w->pool, rq);
  if (rc == CAIRN__POOL_BUSY) {
    CAIRN_INFO(&w->log, "task %lld waits for resources: cores %lld memory_mib %lld disk_mib %lld",
               t->index, (long long)rq->cores, (long long)rq->memory_mib,
               (long long)rq->disk_mib);
    rc = cairn__respool_acquire(&w->pool, rq, cancel);
  }
  if (rc == CAIRN__POOL_NEVER) {
    char note[300];
    snprintf(note, sizeof note, "the task requests %lld cores, %lld MiB memory and %lld MiB "
             "disk; this worker offers %lld cores, %lld MiB memory and %lld MiB disk",
             (long long)rq->cores, (long long)rq->memory_mib, (long long)rq->disk_mib,
             (long long)w->offer.cores, (long long)w->offer.memory_mib,
             (long long)w->offer.disk_mib);
    return deliver_note(sl, t->index, EXIT_SETUP_FAILED, NULL, note, nx);
  }
  if (rc != CAIRN__POOL_TAKEN) {
    CAIRN_INFO(&w->log, "task %lld: cancelled while waiting for resources: result dropped",
               t->index);
    return TASK_DROPPED;
  }
  CAIRN_INFO(&w->log, "task %lld start: job %lld cores %lld memory_mib %lld disk_mib %lld "
             "mono_ms %lld real_ms %lld", t->index, t->job, (long long)rq->cores,
             (long long)rq->memory_mib, (long long)rq->disk_mib, cairn__now_ms(), real_ms());
  task_end end = run_task(sl, t, cancel, nx);
  CAIRN_INFO(&w->log, "task %lld end: job %lld cores %lld memory_mib %lld disk_mib %lld "
             "mono_ms %lld real_ms %lld", t->index, t->job, (long long)rq->cores,
             (long long)rq->memory_mib, (long long)rq->disk_mib, cairn__now_ms(), real_ms());
  cairn__respool_release(&w->pool, rq);
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
      end = run_held(sl, t, &cancel, &nx);
    else if (index >= 0)
      end = deliver_note(sl, index, EXIT_SETUP_FAILED, NULL, err.text, &nx);
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

static int drain_cb(void *ud) { return cairn__stopper_draining(ud); }

static int master_waits(cairn_worker *w) {
  int features = cairn__peerstate_features(&w->peers);
  return features >= 0 && (features & CAIRN_FEAT_WAIT);
}

/* Sets the "wait" of the next work request on sl's connection: when the
 * master lists the feature, WORK_WAIT_MS, at most --exit-when-idle and the
 * time left before it fires (left, -1: never), with libcurl's timeout
 * above it and a drain (not only a stop) aborting it. Returns the wait (0:
 * none). wait_end() puts the connection back as soon as the answer is in,
 * before any task it brings runs. */
static long wait_begin(cairn__slot *sl, long long left) {
  cairn_worker *w = sl->w;
  long wait = master_waits(w) ? WORK_WAIT_MS : 0;
  if (wait && w->exit_when_idle && (long)w->exit_when_idle * 1000 < wait)
    wait = (long)w->exit_when_idle * 1000; /* other slots' tasks may end meanwhile */
  if (wait && left >= 0 && left < wait)
    wait = (long)left;
  sl->conn.wait_ms = wait;
  if (wait) {
    cairn_http_set_timeout(sl->conn.http, wait / 1000 + WORK_WAIT_SLACK_S);
    cairn_http_set_cancel(sl->conn.http, drain_cb, &w->stopper);
  }
  return wait;
}

static void wait_end(cairn__slot *sl) {
  if (sl->conn.wait_ms) {
    cairn_http_set_timeout(sl->conn.http, HTTP_TIMEOUT_S);
    cairn_http_set_cancel(sl->conn.http, stop_cb, &sl->w->stopper);
  }
  sl->conn.wait_ms = 0;
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
                                          NULL, 0, NULL, 0, WORK_OFFER_MAX, &resp, &err);
  wait_end(sl); /* a task in the answer runs with the slot's usual timeout and cancel */
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
    if (cairn__throttle_paused(&w->throttle)) { /* no new work (throttle.h) */
      long long left = idle_left(w);
      if (left == 0) {
        CAIRN_INFO(&w->log, "no work for %u seconds (--exit-when-idle): exiting",
                   w->exit_when_idle);
        cairn__stopper_drain(&w->stopper);
        break;
      }
      cairn__stopper_sleep(&w->stopper, left > 0 && left < PAUSED_CHECK_MS ? (long)left
                                                                           : PAUSED_CHECK_MS);
      continue;
    }
    if (!claim(w))
      break;
    long retry_ms = -1;
    long wait = wait_begin(sl, idle_left(w));
    long long asked = cairn__now_ms();
    int got = poll_once(sl, &warned, &retry_ms);
    if (got == POLL_NONE && wait && retry_ms < 0 && !warned &&
        cairn__now_ms() - asked >= POLL_MIN_MS) {
      cairn__backoff_reset(&b); /* the master held it: ask again at once */
      unclaim(w);
      continue;
    }
    if (got == POLL_WORK || (got == POLL_WORK_THEN_NONE && master_waits(w))) {
      cairn__backoff_reset(&b); /* more may wait; a master that holds requests holds the next */
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
