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
#include "worker/appenv.h"
#include "worker/backoff.h"
#include "worker/callback.h"
#include "worker/fsutil.h"
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

/* POLL_FAILED: no answer (or 429, 5xx): as POLL_NONE, and the project is
 * taken to be away (ledger.h). */
enum { POLL_NONE, POLL_WORK, POLL_WORK_THEN_NONE, POLL_FAILED };

/* TASK_PENDING: the result waits in the slot's hand for its batch;
 * TASK_HANDED: in its project's outbox (outbox.h), which ends the task.
 * DONE, FAILED and DROPPED are tally.c's 0, 1 and 2. */
typedef enum { TASK_DONE, TASK_FAILED, TASK_DROPPED, TASK_PENDING, TASK_HANDED } task_end;

static int collect(cairn__slot *sl, long long index, int exit_status, const char *reason,
                   const void *out, size_t len);

/* A task of the slot's project ends (tally.c). */
static void task_ended(cairn__slot *sl, task_end end) {
  cairn__tally_ended(sl->w, sl->p->k, (int)end);
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
 * yet), when the worker winds down, when a free slot would now ask
 * another project (ledger.h), or when --max-tasks leaves no task to claim.
 * Claims one on yes. */
static int want_next(cairn__slot *sl) {
  cairn_worker *w = sl->w;
  int features = cairn__peerstate_features(&sl->p->peers);
  if (features < 0 || !(features & CAIRN_FEAT_NEXT) || cairn__stopper_draining(&w->stopper) ||
      cairn__throttle_paused(&w->throttle) ||
      !cairn__ledger_prefers(&w->ledger, sl->p->k, cairn__now_ms()))
    return 0;
  return cairn__tally_claim(w);
}

/* The body of a result (caller frees; NULL when out of memory): reason only
 * to a master that lists the feature "reason", and so on. */
static char *result_body(cairn__slot *sl, int exit_status, const char *reason, const void *out,
                         size_t len, int next) {
  int features = cairn__peerstate_features(&sl->p->peers);
  if (features < 0 || !(features & CAIRN_FEAT_REASON))
    reason = NULL;
  return cairn__result_json(exit_status, reason, out, len, next,
                            features >= 0 && (features & CAIRN_FEAT_OUTPUTS) ? sl->extra : NULL,
                            features >= 0 && (features & CAIRN_FEAT_CPU) ? sl->cpu_seconds : -1,
                            features >= 0 && (features & CAIRN_FEAT_USAGE) ? &sl->usage : NULL);
}

/* Sends a result; *nx (when not NULL) receives the chained offer. With
 * several projects a master that does not answer gets the result through
 * its project's outbox (outbox.h) while the slot goes on with another
 * project (*handed set; the body is the outbox's), unless it is full. */
static cairn__delivery send_result(cairn__slot *sl, long long index, int exit_status,
                                   const char *reason, const void *out, size_t len,
                                   next_offer *nx, long *status, int *handed, cairn_error *err) {
  cairn__project *p = sl->p;
  cairn__buf answer = {0};
  char *body = result_body(sl, exit_status, reason, out, len, nx != NULL);
  size_t cap = nx ? WORK_OFFER_MAX : RESULT_ANSWER_MAX;
  *status = 0;
  if (!body) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return CAIRN__DROPPED;
  }
  cairn__delivery d = sl->w->nprojects > 1
    ? cairn__result_try(&p->session, sl->conn, index, body, cap, &answer, status, err)
    : cairn__result_deliver(&p->session, sl->conn, index, body, cap, &answer,
                            status, err);
  if (d == CAIRN__UNREACHABLE) {
    cairn__ledger_asked(&sl->w->ledger, p->k, CAIRN__ASKED_DOWN, -1, cairn__now_ms());
    char *later = nx ? result_body(sl, exit_status, reason, out, len, 0) : body; /* no "next" */
    if (later && cairn__outbox_put(&p->outbox, index, exit_status, later, sl->i) == 0) {
      if (later != body)
        free(body);
      CAIRN_INFO(&p->log, "result %lld waits for its master, which does not answer (%s); the "
                 "slot goes on", index, err->text);
      *handed = 1;
      return d;
    }
    if (later != body)
      free(later);
    d = cairn__result_deliver(&p->session, sl->conn, index, body, cap, &answer,
                              status, err); /* the outbox is full: wait here */
  }
  free(body);
  if (d == CAIRN__DELIVERED) /* audit log: the answer's receipt (auditlog.h) */
    cairn__auditlog_answer(&p->audit, index, answer.data, answer.len);
  if (d == CAIRN__DELIVERED && nx)
    nx->task = cairn__task_parse_next(answer.data, answer.len, &nx->present, &nx->index,
                                      &nx->err);
  cairn__buf_free(&answer);
  return d;
}

/* Delivers a result and says how the task ended. With nx, asks for the
 * next task too when want_next() agrees (nx->asked). */
static task_end deliver(cairn__slot *sl, long long index, int exit_status, const char *reason,
                        const void *out, size_t len, next_offer *nx) {
  cairn_worker *w = sl->w;
  cairn_error err = {0};
  long status = 0;
  int handed = 0;
  if (sl->hand && collect(sl, index, exit_status, reason, out, len) == 0)
    return TASK_PENDING; /* goes back with the others (slot.c, batches) */
  if (nx)
    nx->asked = want_next(sl);
  if (nx && !nx->asked)
    nx = NULL;
  cairn__delivery d = send_result(sl, index, exit_status, reason, out, len, nx, &status,
                                  &handed, &err);
  if (handed)
    return TASK_HANDED;
  switch (d) {
  case CAIRN__DELIVERED:
    CAIRN_INFO(&sl->p->log, "result %lld delivered (exit status %d%s%s, %zu bytes)", index,
               exit_status, reason && *reason ? ", reason " : "", reason ? reason : "", len);
    return exit_status == 0 ? TASK_DONE : TASK_FAILED;
  case CAIRN__DROPPED:
  case CAIRN__UNREACHABLE:
    CAIRN_INFO(&sl->p->log, "result %lld dropped: %s", index, err.text);
    return TASK_DROPPED;
  case CAIRN__FATAL:
    cairn__worker_fatal(w, err.status, "%s", err.text);
    return TASK_DROPPED;
  case CAIRN__ABANDONED:
    break;
  }
  CAIRN_INFO(&sl->p->log, "result %lld abandoned: the worker is stopping", index);
  return TASK_DROPPED;
}

/* Reports a failure found by the worker itself: "cairn-worker: NOTE";
 * reason NULL: "exit STATUS". */
static task_end deliver_note(cairn__slot *sl, long long index, int exit_status,
                             const char *reason, const char *note, next_offer *nx) {
  char text[700], why[CAIRN_REASON_MAX];
  snprintf(text, sizeof text, "cairn-worker: %s\n", note);
  CAIRN_WARN(&sl->p->log, "task %lld: %s", index, note);
  if (!reason) {
    cairn__reason_of_exit(exit_status, why);
    reason = why;
  }
  return deliver(sl, index, exit_status, reason, text, strlen(text), nx);
}

static cairn_status run_app(cairn__slot *sl, const cairn__app *app, const cairn__task *t,
                            const cairn__cancel *cancel, cairn__run_result *res,
                            cairn_error *err) {
  size_t budget = (size_t)cairn__task_output_budget(&t->run, CAIRN_MAX_OUTPUT);
  if (app->fn)
    return cairn__callback_run(app->fn, app->userdata, t, sl->td, cancel, budget,
                               &sl->p->resume, sl->i, res, err);
  char **env = cairn__app_env(t, sl->td->dir), cgroup[64];
  if (!env)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  const char *in = NULL;
  for (size_t k = 0; t->run.stdin_name && k < t->ninputs; k++)
    if (strcmp(t->inputs[k].name, t->run.stdin_name) == 0)
      in = sl->td->input_paths[k];
  snprintf(cgroup, sizeof cgroup, "cairn-%ld-slot-%zu", (long)getpid(), (size_t)sl->i);
  cairn__run_spec spec = {
    .path = app->path, .args = (const char *const *)t->args, .nargs = t->nargs,
    .dir = sl->td->dir, .env = (const char *const *)env, .max_output = budget, .cancel = cancel,
    .stdin_path = in, .limits = t->run.limits, .cgroup_name = cgroup,
    .throttle = sl->w->throttle_ok ? &sl->w->throttle : NULL, .slot = sl->i,
    .sandbox = sl->w->sandboxed ? &sl->w->sandbox : NULL, .network = t->run.network > 0,
    .ro_binds = app->dir ? &app->dir : NULL, .nro_binds = app->dir != NULL,
  };
  if (spec.sandbox && spec.network && !sl->w->sandbox.allow_network)
    CAIRN_INFO(&sl->p->log, "task %lld asks for the network: it runs without (no "
               "--allow-network)", t->index);
  cairn_status rc = cairn__run(&spec, res, err);
  if (rc == CAIRN_OK && res->memory_by)
    CAIRN_INFO(&sl->p->log, "task %lld: memory limit of %lld MiB held by %s%s%s", t->index,
               (long long)t->run.limits[CAIRN_LIMIT_MEMORY],
               strcmp(res->memory_by, "cgroup") == 0 ? "a cgroup v2 (memory.max)" : "RLIMIT_AS",
               res->memory_why[0] ? " (no cgroup: " : "", res->memory_why[0] ? res->memory_why : "");
  cairn__app_env_free(env, t);
  return rc;
}

/* The signed version a task of the project's app runs (docs/apps.md):
 * fetched or found in DIR/apps and verified (appver.h) into *app (its
 * path: *exe, caller frees; *vdir the version's directory). -1 with the
 * task's failure reported (reason "app_signature" when it does not verify)
 * and *end set. */
static int signed_app(cairn__slot *sl, const cairn__task *t, cairn__app *app, char **exe,
                      char **vdir, next_offer *nx, task_end *end) {
  cairn_worker *w = sl->w;
  cairn_error err = {0};
  char note[600];
  cairn_status rc = CAIRN_EINVAL;
  if (!sl->p->appver_ok)
    snprintf(err.text, sizeof err.text, "this worker has no project key");
  else if (strcmp(t->app_platform, w->platform) != 0)
    snprintf(err.text, sizeof err.text, "the version is for %s, this worker is %s",
             t->app_platform, w->platform);
  else {
    cairn__session_prepare(&sl->p->session, sl->conn);
    rc = cairn__appver_get(&sl->p->appver, sl->conn->http, t->app, t->app_version, t->app_platform,
                           exe, vdir, &err);
  }
  if (rc == CAIRN_OK) {
    *app = (cairn__app){.name = t->app, .path = *exe, .dir = *vdir};
    return 0;
  }
  snprintf(note, sizeof note, "app %.64s %.32s for %.32s: %.400s", t->app, t->app_version,
           t->app_platform, err.text);
  *end = deliver_note(sl, t->index, EXIT_SETUP_FAILED,
                      rc == CAIRN_EFORBIDDEN ? CAIRN_REASON_APP_SIGNATURE : NULL, note, nx);
  return -1;
}

/* Prepares, runs and reports task t, whose lease this slot holds, with app
 * (NULL: none on this worker). */
static task_end run_with(cairn__slot *sl, const cairn__task *t, const cairn__app *app,
                         const cairn__cancel *cancel, next_offer *nx) {
  cairn_worker *w = sl->w;
  cairn__run_result res = {0};
  cairn__outputs ox = {0};
  cairn_error err = {0};
  task_end end;
  if (!app) {
    snprintf(err.text, sizeof err.text, "no app \"%.100s\" on this worker", t->app);
    return deliver_note(sl, t->index, EXIT_SETUP_FAILED, NULL, err.text, nx);
  }
  uint64_t disk_need = 0;
  if (cairn__diskcap_admit(&sl->p->diskcap, t, &disk_need, &err) != 0)
    return deliver_note(sl, t->index, EXIT_SETUP_FAILED, NULL, err.text, nx);
  cairn_status rc = cairn__taskdir_prepare(sl->td, t, app->path != NULL, &err);
  if (rc == CAIRN_OK && (t->ninputs || t->nparents)) {
    cairn__session_prepare(&sl->p->session, sl->conn);
    cairn__http_set_cancel(sl->conn->http, cancel_cb, (void *)cancel);
    rc = cairn__taskdir_fill(sl->td, t, &sl->p->cache, sl->conn->http, &sl->p->peers, cancel, &err);
    cairn__http_set_cancel(sl->conn->http, stop_cb, &w->stopper);
  }
  cairn__diskcap_prepared(&sl->p->diskcap, disk_need);
  if (rc == CAIRN_OK && !cairn__cancelled(cancel)) {
    cairn__resume_record(&sl->p->resume, sl->i, t, sl->td->dir, app->path != NULL);
    rc = run_app(sl, app, t, cancel, &res, &err);
  }
  sl->cpu_seconds = rc == CAIRN_OK && res.outcome != CAIRN__RUN_NOEXEC ? res.cpu_seconds : -1;
  sl->cpu_used = sl->cpu_seconds;
  sl->usage = rc == CAIRN_OK && res.outcome != CAIRN__RUN_NOEXEC ? res.usage : CAIRN_USAGE_NONE;
  if (rc == CAIRN_OK && res.outcome == CAIRN__RUN_EXITED) { /* stderr tail, output files */
    cairn__http_set_cancel(sl->conn->http, cancel_cb, (void *)cancel);
    int exited = res.exit_status;
    if (cairn__outputs_gather(&ox, &sl->p->session, sl->conn, &sl->p->cache, sl->td->dir, t,
                              &res.exit_status, cancel) != CAIRN_OK)
      res.outcome = CAIRN__RUN_CANCELLED;
    if (exited == 0 && res.exit_status != 0) /* an output missing, too large or refused */
      snprintf(res.reason, sizeof res.reason, "output");
    cairn__http_set_cancel(sl->conn->http, stop_cb, &w->stopper);
    sl->extra = &ox;
  }
  /* a worker that stops while the app runs keeps its directory (resume.h) */
  int lost = cancel->lost && atomic_load(cancel->lost);
  int kept = cairn__stopper_stopping(&w->stopper) && !lost &&
             (cairn__cancelled(cancel) || res.outcome == CAIRN__RUN_CANCELLED) &&
             cairn__resume_recorded(&sl->p->resume, sl->i);
  if (kept)
    cairn__resume_keep(&sl->p->resume, sl->i);
  else {
    cairn__resume_forget(&sl->p->resume, sl->i);
    cairn__taskdir_clear(sl->td);
  }
  if (cairn__cancelled(cancel) || res.outcome == CAIRN__RUN_CANCELLED) {
    CAIRN_INFO(&sl->p->log, "task %lld: %s: result dropped%s", t->index,
               cairn__stopper_stopping(&w->stopper) ? "worker stopping" : "lease lost",
               kept ? " (its directory is kept for the next start)" : "");
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
      CAIRN_INFO(&sl->p->log, "task %lld: app %s exited with status %d (%s)", t->index, t->app,
                 res.exit_status, res.reason);
    end = deliver(sl, t->index, res.exit_status, res.reason, res.output.data, res.output.len, nx);
  }
  sl->extra = NULL;
  sl->cpu_seconds = -1;
  sl->usage = CAIRN_USAGE_NONE;
  cairn__outputs_free(&ox);
  cairn__buf_free(&res.output);
  return end;
}

/* Prepares, runs and reports task t, whose lease this slot holds: with the
 * worker's own app of its name, or the signed version the offer names. */
static task_end run_task(cairn__slot *sl, const cairn__task *t, const cairn__cancel *cancel,
                         next_offer *nx) {
  cairn__app sapp = {0};
  char *exe = NULL, *vdir = NULL;
  task_end end;
  sl->cpu_seconds = -1; /* until the app has run */
  sl->usage = CAIRN_USAGE_NONE;
  CAIRN_INFO(&sl->p->log, "task %lld: job %lld task \"%s\" app %s%s%s", t->index, t->job, t->id,
             t->app, t->app_version ? " " : "", t->app_version ? t->app_version : "");
  if (!t->app_version)
    return run_with(sl, t, cairn__worker_app(sl->w, t->app), cancel, nx);
  if (signed_app(sl, t, &sapp, &exe, &vdir, nx, &end))
    return end;
  end = run_with(sl, t, &sapp, cancel, nx);
  free(exe);
  free(vdir);
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
  const cairn__resources *rq = &t->resources;
  int rc = cairn__respool_try(&w->pool, rq);
  if (rc == CAIRN__POOL_BUSY) {
    CAIRN_INFO(&sl->p->log, "task %lld waits for resources: cores %lld memory_mib %lld disk_mib %lld",
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
    CAIRN_INFO(&sl->p->log, "task %lld: cancelled while waiting for resources: result dropped",
               t->index);
    return TASK_DROPPED;
  }
  long long t0 = cairn__now_ms();
  double cores = rq->cores > 0 ? (double)rq->cores : 1;
  CAIRN_INFO(&sl->p->log, "task %lld start: job %lld cores %lld memory_mib %lld disk_mib %lld "
             "mono_ms %lld real_ms %lld", t->index, t->job, (long long)rq->cores,
             (long long)rq->memory_mib, (long long)rq->disk_mib, t0, real_ms());
  cairn__ledger_started(&w->ledger, sl->p->k, cores, t0); /* its project's usage (ledger.h) */
  sl->cpu_used = -1;
  task_end end = run_task(sl, t, cancel, nx);
  cairn__ledger_ended(&w->ledger, sl->p->k, cores, t0, sl->cpu_used, cairn__now_ms());
  CAIRN_INFO(&sl->p->log, "task %lld end: job %lld cores %lld memory_mib %lld disk_mib %lld "
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
    cairn__cancel cancel = {&w->stopper, cairn__leases_lost_flag(&sl->p->leases, sl->i), NULL};
    next_offer nx = {0};
    task_end end;
    cairn__tally_started(w);
    cairn__leases_hold(&sl->p->leases, sl->i, index,
                       t ? t->lease_seconds : CAIRN_DEFAULT_LEASE_SECONDS);
    if (t)
      end = run_held(sl, t, &cancel, &nx);
    else if (index >= 0)
      end = deliver_note(sl, index, EXIT_SETUP_FAILED, NULL, err.text, &nx);
    else {
      CAIRN_ERR(&sl->p->log, "unusable work offer: %s", err.text);
      end = TASK_DROPPED;
    }
    cairn__leases_release(&sl->p->leases, sl->i); /* (moved already when handed) */
    cairn__task_free(t);
    if (end != TASK_HANDED) /* else its project's outbox ends it */
      task_ended(sl, end);
    if (!nx.present) {
      if (nx.asked)
        cairn__tally_unclaim(w);
      return nx.asked && end != TASK_DROPPED && end != TASK_HANDED; /* a master that chains
                                                                      had none */
    }
    t = nx.task;
    index = nx.index;
    err = nx.err;
  }
}

static int drain_cb(void *ud) { return cairn__stopper_draining(ud); }

static int master_waits(cairn__slot *sl) {
  int features = cairn__peerstate_features(&sl->p->peers);
  return features >= 0 && (features & CAIRN_FEAT_WAIT);
}

/* Sets the "wait" of the next work request on sl's connection: when the
 * master lists the feature, WORK_WAIT_MS, at most --exit-when-idle, the
 * time left before it fires (left, -1: never) and hold (the ledger's:
 * another project's turn; -1: none), with libcurl's timeout above it and
 * a drain (not only a stop) aborting it. Returns the wait (0: none).
 * wait_end() puts the connection back as soon as the answer is in, before
 * any task it brings runs. */
static long wait_begin(cairn__slot *sl, long long left, long long hold) {
  cairn_worker *w = sl->w;
  long wait = master_waits(sl) ? WORK_WAIT_MS : 0;
  if (hold >= 0 && hold < wait)
    wait = (long)hold;
  if (wait && w->exit_when_idle && (long)w->exit_when_idle * 1000 < wait)
    wait = (long)w->exit_when_idle * 1000; /* other slots' tasks may end meanwhile */
  if (wait && left >= 0 && left < wait)
    wait = (long)left;
  sl->conn->wait_ms = wait;
  if (wait) {
    cairn__http_set_timeout(sl->conn->http, wait / 1000 + WORK_WAIT_SLACK_S);
    cairn__http_set_cancel(sl->conn->http, drain_cb, &w->stopper);
  }
  return wait;
}

static void wait_end(cairn__slot *sl) {
  if (sl->conn->wait_ms) {
    cairn__http_set_timeout(sl->conn->http, HTTP_TIMEOUT_S);
    cairn__http_set_cancel(sl->conn->http, stop_cb, &sl->w->stopper);
  }
  sl->conn->wait_ms = 0;
}

/* Polls once. Returns POLL_NONE when there was no task, POLL_FAILED when
 * the master could not be reached, POLL_WORK when tasks were handled and
 * more may be waiting, POLL_WORK_THEN_NONE when the master said after them
 * that it has none now. */
static int poll_once(cairn__slot *sl, int *warned, long *retry_ms) {
  cairn_worker *w = sl->w;
  cairn__http_response resp = {0};
  cairn_error err = {0};
  char msg[300];
  int got = POLL_NONE;
  cairn_status rc = cairn__session_report(&sl->p->session, sl->conn, "/v1/work", CAIRN_WORK_FIELDS,
                                          NULL, 0, NULL, 0, WORK_OFFER_MAX, &resp, &err);
  wait_end(sl); /* a task in the answer runs with the slot's usual timeout and cancel */
  long status = resp.status;
  if (rc == CAIRN_EFORBIDDEN || rc == CAIRN_EINVAL)
    cairn__worker_fatal(w, err.status, "%s", err.text);
  else if (rc != CAIRN_OK || cairn__transient(rc, status)) {
    if (rc == CAIRN_OK)
      cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    if (!*warned && !cairn__stopper_stopping(&w->stopper))
      CAIRN_WARN(&sl->p->log, "cannot get work: %s (retrying)", rc != CAIRN_OK ? err.text : msg);
    *warned = 1;
    got = POLL_FAILED;
  } else if (status == 200) {
    long long index = -1;
    *warned = 0;
    cairn__ledger_asked(&w->ledger, sl->p->k, CAIRN__ASKED_WORK, -1, cairn__now_ms());
    cairn__task *t = cairn__task_parse(resp.body.data, resp.body.len, &index, &err);
    cairn__buf_free(&resp.body);
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
  cairn__buf_free(&resp.body);
  return got;
}

/* ---- batches (feature "batch"; docs/worker.md "Batches") ----
 * With --prefetch P and a master that lists "batch", a slot takes up to
 * 1 + P tasks in one POST /v1/work ("max"), holds their leases (listed in
 * every heartbeat's "running") and runs them one after the other; their
 * results wait in its hand and go back together in one POST /v1/results,
 * with "next" asking for the following tasks, once the hand is empty or
 * the oldest waited BATCH_HOLD_MS. A result with output files or over
 * BATCH_ENTRY_MAX goes alone by PUT, as today. When the worker stops, the
 * tasks it holds but has not started are dropped: their leases are no
 * longer listed and expire at the master. */
#define BATCH_HOLD_MS 1000
#define BATCH_ENTRY_MAX (64u * 1024u)
#define HAND_MAX (CAIRN_MAX_PREFETCH + 1)

typedef struct hand {
  cairn__task *t[HAND_MAX];  /* offers not started, in order (t NULL: unreadable) */
  long long index[HAND_MAX];
  cairn_error err[HAND_MAX];
  size_t entry[HAND_MAX];     /* their lease entries */
  size_t n;
  json_t *results;            /* results waiting, entries of a batch */
  long long rindex[HAND_MAX];
  int rexit[HAND_MAX];
  size_t rentry[HAND_MAX];
  size_t nres;
  long long first_ms;         /* when the oldest waiting result was put */
  unsigned char used[HAND_MAX]; /* the slot's extra lease entries in use */
} hand;

static int batching(cairn__slot *sl) {
  int f = cairn__peerstate_features(&sl->p->peers);
  return sl->w->prefetch > 0 && f >= 0 && (f & CAIRN_FEAT_BATCH);
}

/* One of the slot's extra lease entries, marked used; -1 when none is free. */
static long entry_take(cairn__slot *sl, hand *h) {
  for (size_t k = 0; k < 1 + sl->w->prefetch && k < HAND_MAX; k++)
    if (!h->used[k]) {
      h->used[k] = 1;
      return (long)cairn__leases_extra(&sl->p->leases, sl->i, k);
    }
  return -1;
}

static void entry_give(cairn__slot *sl, hand *h, size_t e) {
  cairn__leases_release(&sl->p->leases, e);
  h->used[e - cairn__leases_extra(&sl->p->leases, sl->i, 0)] = 0;
}

/* Puts a finished task's result in the hand (its lease moves from the
 * slot's entry to an extra one, still listed in heartbeats). 0, or -1 when
 * it must go alone (output files, too large, no entry, out of memory). */
static int collect(cairn__slot *sl, long long index, int exit_status, const char *reason,
                   const void *out, size_t len) {
  hand *h = sl->hand;
  int features = cairn__peerstate_features(&sl->p->peers);
  if (h->nres >= HAND_MAX || len > BATCH_ENTRY_MAX ||
      (sl->extra && (sl->extra->nfiles || sl->extra->err_tail.len > BATCH_ENTRY_MAX)))
    return -1;
  if (features < 0 || !(features & CAIRN_FEAT_REASON))
    reason = NULL;
  json_t *o = cairn__result_obj(exit_status, reason, out, len, 0,
                                features >= 0 && (features & CAIRN_FEAT_OUTPUTS) ? sl->extra
                                                                                 : NULL,
                                features >= 0 && (features & CAIRN_FEAT_CPU) ? sl->cpu_seconds
                                                                             : -1,
                                features >= 0 && (features & CAIRN_FEAT_USAGE) ? &sl->usage
                                                                               : NULL);
  long e = o && json_object_set_new(o, "index", json_integer(index)) == 0 ? entry_take(sl, h)
                                                                          : -1;
  if (e < 0)
    json_decref(o);
  if (e < 0 || json_array_append_new(h->results, o)) { /* (which takes o even when it fails) */
    if (e >= 0)
      h->used[(size_t)e - cairn__leases_extra(&sl->p->leases, sl->i, 0)] = 0;
    return -1;
  }
  cairn__leases_move(&sl->p->leases, sl->i, (size_t)e);
  if (h->nres == 0)
    h->first_ms = cairn__now_ms();
  h->rindex[h->nres] = index;
  h->rexit[h->nres] = exit_status;
  h->rentry[h->nres++] = (size_t)e;
  return 0;
}

/* Adds the offers of a batch answer's "tasks" to the hand, holding their
 * leases. Returns how many. */
static size_t hand_take(cairn__slot *sl, hand *h, json_t *tasks) {
  size_t added = 0;
  for (size_t i = 0; i < json_array_size(tasks) && h->n < HAND_MAX; i++) {
    size_t k = h->n;
    h->err[k] = (cairn_error){0};
    h->t[k] = cairn__task_from_json(json_array_get(tasks, i), &h->index[k], &h->err[k]);
    long e = entry_take(sl, h);
    if (e < 0) { /* more than asked for: left to expire */
      cairn__task_free(h->t[k]);
      continue;
    }
    h->entry[k] = (size_t)e;
    if (h->index[k] >= 0)
      cairn__leases_hold(&sl->p->leases, (size_t)e, h->index[k],
                         h->t[k] ? h->t[k]->lease_seconds : CAIRN_DEFAULT_LEASE_SECONDS);
    h->n++;
    added++;
  }
  return added;
}

/* Claims up to max more tasks (as want_next claims one); returns how many. */
static unsigned claim_more(cairn_worker *w, unsigned max) {
  unsigned n = 0;
  while (n < max && cairn__tally_claim(w))
    n++;
  return n;
}

/* Sends the results in the hand, asking for want tasks ("next"); reads
 * each entry's status, ends those tasks and takes the offers of the answer.
 * Returns how many offers it took. */
static size_t flush(cairn__slot *sl, hand *h, unsigned want) {
  cairn_worker *w = sl->w;
  cairn__buf answer = {0};
  cairn_error err = {0};
  long status = 0;
  json_t *o = json_pack("{s:O}", "results", h->results), *root = NULL;
  if (o && want)
    json_object_set_new(o, "next", json_integer(want));
  char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  cairn__delivery d = body ? cairn__results_deliver(&sl->p->session, sl->conn, h->nres, body,
                                                    WORK_OFFER_MAX, &answer, &status, &err)
                           : CAIRN__DROPPED;
  free(body);
  if (d == CAIRN__DELIVERED)
    root = json_loadb(answer.data ? answer.data : "", answer.len, 0, NULL);
  else if (d == CAIRN__FATAL)
    cairn__worker_fatal(w, err.status, "%s", err.text);
  else
    CAIRN_INFO(&sl->p->log, "%zu results dropped: %s", h->nres,
               d == CAIRN__ABANDONED ? "the worker is stopping" : err.text);
  json_t *list = json_object_get(root, "results");
  for (size_t i = 0; i < h->nres; i++) {
    json_t *e = json_array_get(list, i);
    long st = (long)json_integer_value(json_object_get(e, "status"));
    task_end end = st != 200 ? TASK_DROPPED : h->rexit[i] == 0 ? TASK_DONE : TASK_FAILED;
    if (root && st != 200)
      CAIRN_INFO(&sl->p->log, "result %lld dropped: HTTP %ld: %s", h->rindex[i], st,
                 json_string_value(json_object_get(json_object_get(e, "error"), "message")));
    else if (root) {
      CAIRN_INFO(&sl->p->log, "result %lld delivered in a batch (exit status %d)", h->rindex[i],
                 h->rexit[i]);
      cairn__auditlog_receipt(&sl->p->audit, h->rindex[i], json_object_get(e, "receipt")); /* audit log */
    }
    entry_give(sl, h, h->rentry[i]);
    task_ended(sl, end);
  }
  json_array_clear(h->results);
  h->nres = 0;
  size_t took = hand_take(sl, h, json_object_get(root, "tasks"));
  json_decref(root);
  cairn__buf_free(&answer);
  return took;
}

/* Runs the hand's offers and sends their results, asking for more each
 * time the hand empties, until the master has none or the worker winds
 * down. Returns POLL_WORK_THEN_NONE when the master said it had none,
 * POLL_WORK otherwise. The hand's offers are claimed already. */
static int batch_run(cairn__slot *sl, hand *h) {
  cairn_worker *w = sl->w;
  for (;;) {
    while (h->n > 0 && !cairn__stopper_stopping(&w->stopper)) {
      if (h->nres && cairn__now_ms() - h->first_ms >= BATCH_HOLD_MS)
        flush(sl, h, 0);
      cairn__task *t = h->t[0];
      long long index = h->index[0];
      cairn_error perr = h->err[0];
      cairn__leases_move(&sl->p->leases, h->entry[0], sl->i);
      h->used[h->entry[0] - cairn__leases_extra(&sl->p->leases, sl->i, 0)] = 0;
      memmove(&h->t[0], &h->t[1], (h->n - 1) * sizeof h->t[0]);
      memmove(&h->index[0], &h->index[1], (h->n - 1) * sizeof h->index[0]);
      memmove(&h->err[0], &h->err[1], (h->n - 1) * sizeof h->err[0]);
      memmove(&h->entry[0], &h->entry[1], (h->n - 1) * sizeof h->entry[0]);
      h->n--;
      cairn__cancel cancel = {&w->stopper, cairn__leases_lost_flag(&sl->p->leases, sl->i), NULL};
      task_end end;
      cairn__tally_started(w);
      if (t)
        end = run_held(sl, t, &cancel, NULL);
      else if (index >= 0)
        end = deliver_note(sl, index, EXIT_SETUP_FAILED, NULL, perr.text, NULL);
      else {
        CAIRN_ERR(&sl->p->log, "unusable work offer: %s", perr.text);
        end = TASK_DROPPED;
      }
      cairn__task_free(t);
      if (end != TASK_PENDING && end != TASK_HANDED) { /* else the hand or the outbox ends it */
        cairn__leases_release(&sl->p->leases, sl->i);
        task_ended(sl, end);
      }
    }
    for (; h->n > 0; h->n--) { /* stopping: not started, left to expire */
      entry_give(sl, h, h->entry[h->n - 1]);
      cairn__task_free(h->t[h->n - 1]);
      cairn__tally_started(w);
      task_ended(sl, TASK_DROPPED);
    }
    if (h->nres == 0)
      return POLL_WORK;
    int features = cairn__peerstate_features(&sl->p->peers);
    unsigned want = features >= 0 && (features & CAIRN_FEAT_NEXT) &&
                    !cairn__stopper_draining(&w->stopper) && !cairn__throttle_paused(&w->throttle) &&
                    cairn__ledger_prefers(&w->ledger, sl->p->k, cairn__now_ms())
                        ? claim_more(w, 1 + w->prefetch) : 0;
    size_t took = flush(sl, h, want);
    for (size_t i = took; i < want; i++)
      cairn__tally_unclaim(w);
    if (took == 0)
      return want ? POLL_WORK_THEN_NONE : POLL_WORK;
  }
}

/* poll_once for a slot that batches: asks for up to 1 + prefetch tasks
 * (the caller's claim and those it can add) and runs them (batch_run). */
static int batch_poll(cairn__slot *sl, int *warned, long *retry_ms) {
  cairn_worker *w = sl->w;
  cairn__http_response resp = {0};
  cairn_error err = {0};
  char msg[300];
  int got = POLL_NONE;
  unsigned k = 1 + claim_more(w, w->prefetch);
  cairn_status rc = cairn__session_work_many(&sl->p->session, sl->conn, k, WORK_OFFER_MAX, &resp,
                                             &err);
  wait_end(sl); /* the tasks in the answer run with the slot's usual timeout and cancel */
  long status = resp.status;
  size_t took = 0;
  if (rc == CAIRN_EFORBIDDEN || rc == CAIRN_EINVAL)
    cairn__worker_fatal(w, err.status, "%s", err.text);
  else if (rc != CAIRN_OK || cairn__transient(rc, status)) {
    if (rc == CAIRN_OK)
      cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    if (!*warned && !cairn__stopper_stopping(&w->stopper))
      CAIRN_WARN(&sl->p->log, "cannot get work: %s (retrying)", rc != CAIRN_OK ? err.text : msg);
    *warned = 1;
    got = POLL_FAILED;
  } else if (status == 200) {
    *warned = 0;
    cairn__ledger_asked(&w->ledger, sl->p->k, CAIRN__ASKED_WORK, -1, cairn__now_ms());
    hand h = {.results = json_array()};
    json_t *root = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, NULL);
    took = h.results ? hand_take(sl, &h, json_object_get(root, "tasks")) : 0;
    json_decref(root);
    for (size_t i = took ? took : 1; i < k; i++)
      cairn__tally_unclaim(w);
    if (took) {
      sl->hand = &h;
      got = batch_run(sl, &h);
      sl->hand = NULL;
    }
    json_decref(h.results);
  } else if (status == 204) {
    *warned = 0;
    *retry_ms = resp.retry_after_ms >= 0 ? resp.retry_after_ms
                : resp.retry_after >= 0 ? resp.retry_after * 1000 : -1;
  } else {
    cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    if (status == 403)
      cairn__worker_fatal(w, CAIRN_EFORBIDDEN, "the master refuses this volunteer (banned?): %s", msg);
    else
      cairn__worker_fatal(w, CAIRN_EIO, "POST /v1/work: HTTP %ld: %s", status, msg);
  }
  if ((got == POLL_NONE || got == POLL_FAILED) && took == 0 && status != 200)
    for (unsigned i = 1; i < k; i++)
      cairn__tally_unclaim(w);
  cairn__buf_free(&resp.body);
  return got;
}

/* Points sl at project k: its connection and task directory. */
static void use_project(cairn__slot *sl, size_t k) {
  sl->p = &sl->w->projects[k];
  sl->conn = &sl->conns[k];
  sl->td = &sl->tds[k];
}

/* Sets up the slot's directory of each project's tasks, and first runs a
 * task recorded there that may run again (resume.h). */
static void slot_begin(cairn__slot *sl) {
  cairn_worker *w = sl->w;
  for (size_t k = 0; k < w->nprojects; k++) {
    cairn_error err = {0};
    use_project(sl, k);
    cairn__http_set_cancel(sl->conn->http, stop_cb, &w->stopper);
    cairn__task *again = cairn__resume_take(&sl->p->resume, sl->i); /* resume.h */
    if (again ? cairn__taskdir_resume(sl->td, sl->p->run_dir, sl->i, &err) != CAIRN_OK
              : cairn__taskdir_init(sl->td, sl->p->run_dir, sl->i, &err) != CAIRN_OK)
      CAIRN_WARN(&sl->p->log, "%s (tried again before the next task)", err.text);
    sl->td->log = &sl->p->log;
    if (again && cairn__tally_claim(w)) /* its lease and index are the same: as if just offered */
      (void)handle_offers(sl, again, again->index, &err);
    else
      cairn__task_free(again);
  }
}

static void slot_end(cairn__slot *sl) {
  for (size_t k = 0; k < sl->w->nprojects; k++) {
    use_project(sl, k);
    if (cairn__resume_recorded(&sl->p->resume, sl->i))
      cairn__taskdir_leave(sl->td); /* its task runs again at the next start */
    else
      cairn__taskdir_destroy(sl->td);
    cairn__http_set_cancel(sl->conn->http, NULL, NULL);
  }
}

/* Several projects: tells the ledger that the poll of sl's project found
 * no work or no answer (ledger.h: it backs the project off; work was told
 * as it arrived). */
static void tell_ledger(cairn__slot *sl, int got, long wait, long long asked, long retry_ms) {
  long long now = cairn__now_ms();
  cairn__asked what = got == POLL_FAILED ? CAIRN__ASKED_DOWN
                      : wait && retry_ms < 0 && now - asked >= POLL_MIN_MS ? CAIRN__ASKED_HELD
                                                                          : CAIRN__ASKED_NONE;
  if (got == POLL_NONE || got == POLL_FAILED)
    cairn__ledger_asked(&sl->w->ledger, sl->p->k, what, retry_ms, now);
}

/* 1 when --exit-when-idle fires now (the worker drains). */
static int idle_exit(cairn_worker *w, long long left) {
  if (left != 0)
    return 0;
  CAIRN_INFO(&w->log, "no work for %u seconds (--exit-when-idle): exiting", w->exit_when_idle);
  cairn__stopper_drain(&w->stopper);
  return 1;
}

void *cairn__slot_main(void *arg) {
  cairn__slot *sl = arg;
  cairn_worker *w = sl->w;
  cairn__backoff b;
  cairn__backoff_init(&b, POLL_MIN_MS, POLL_MAX_MS);
  sl->usage = CAIRN_USAGE_NONE; /* nothing measured until an app runs */
  slot_begin(sl);
  while (!cairn__stopper_draining(&w->stopper)) {
    if (cairn__throttle_paused(&w->throttle)) { /* no new work (throttle.h) */
      long long left = cairn__tally_idle_left(w);
      if (idle_exit(w, left))
        break;
      cairn__stopper_sleep(&w->stopper, left > 0 && left < PAUSED_CHECK_MS ? (long)left
                                                                           : PAUSED_CHECK_MS);
      continue;
    }
    if (!cairn__tally_claim(w))
      break;
    long long hold = -1;
    long k = cairn__tally_pick(w, &hold); /* ledger.h */
    if (k < 0) { /* every project backed off: until the first is not */
      cairn__tally_unclaim(w);
      long long left = cairn__tally_idle_left(w);
      if (idle_exit(w, left))
        break;
      long delay = hold >= 0 && hold < POLL_MAX_MS ? (long)hold : POLL_MAX_MS;
      cairn__stopper_sleep(&w->stopper, left > 0 && left < delay ? (long)left : delay);
      continue;
    }
    use_project(sl, (size_t)k);
    int *warned = &sl->warned[k];
    long retry_ms = -1;
    long wait = wait_begin(sl, cairn__tally_idle_left(w), hold);
    long long asked = cairn__now_ms();
    int got = batching(sl) ? batch_poll(sl, warned, &retry_ms) : poll_once(sl, warned, &retry_ms);
    if (w->nprojects > 1) { /* the ledger backs off the project, not the slot */
      tell_ledger(sl, got, wait, asked, retry_ms);
      if (got == POLL_NONE || got == POLL_FAILED)
        cairn__tally_unclaim(w);
      if (idle_exit(w, cairn__tally_idle_left(w)))
        break;
      continue;
    }
    if (got == POLL_NONE && wait && retry_ms < 0 && !*warned &&
        cairn__now_ms() - asked >= POLL_MIN_MS) {
      cairn__backoff_reset(&b); /* the master held it: ask again at once */
      cairn__tally_unclaim(w);
      continue;
    }
    if (got == POLL_WORK || (got == POLL_WORK_THEN_NONE && master_waits(sl))) {
      cairn__backoff_reset(&b); /* more may wait; a master that holds requests holds the next */
      continue;
    }
    if (got == POLL_WORK_THEN_NONE)
      cairn__backoff_reset(&b);  /* the poll's claim went to a task */
    else
      cairn__tally_unclaim(w);
    long long left = cairn__tally_idle_left(w);
    if (idle_exit(w, left))
      break;
    long delay = cairn__backoff_next(&b);
    if (retry_ms >= 0 && retry_ms < delay)
      delay = retry_ms;
    if (left > 0 && left < delay)
      delay = (long)left;
    cairn__stopper_sleep(&w->stopper, delay);
  }
  slot_end(sl);
  return NULL;
}
