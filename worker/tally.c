/* tally.c — the worker's task counters (under w->mu: --max-tasks and
 * --exit-when-idle) and each project's (its ledger), the project a free
 * slot asks, and the end of a result its project's outbox delivered
 * (outbox.h). */
#include "common/log.h"
#include "worker/worker_int.h"

int cairn__tally_claim(cairn_worker *w) {
  int ok = 1;
  pthread_mutex_lock(&w->mu);
  if (w->max_tasks && w->claimed >= w->max_tasks)
    ok = 0;
  else
    w->claimed++;
  pthread_mutex_unlock(&w->mu);
  return ok;
}

void cairn__tally_unclaim(cairn_worker *w) {
  pthread_mutex_lock(&w->mu);
  w->claimed--;
  pthread_mutex_unlock(&w->mu);
}

void cairn__tally_started(cairn_worker *w) {
  pthread_mutex_lock(&w->mu);
  w->running++;
  w->last_work_ms = cairn__now_ms();
  pthread_mutex_unlock(&w->mu);
}

void cairn__tally_ended(cairn_worker *w, size_t k, int how) {
  int all_done;
  pthread_mutex_lock(&w->mu);
  w->running--;
  w->finished++;
  w->last_work_ms = cairn__now_ms();
  if (how == 0)
    w->stats.tasks_done++;
  else if (how == 1)
    w->stats.tasks_failed++;
  else
    w->stats.tasks_dropped++;
  all_done = w->max_tasks && w->finished >= w->max_tasks;
  pthread_mutex_unlock(&w->mu);
  if (w->ledger_ok)
    cairn__ledger_count(&w->ledger, k, how);
  if (all_done) {
    CAIRN_INFO(&w->log, "finished %lu tasks (--max-tasks): exiting", w->max_tasks);
    cairn__stopper_drain(&w->stopper);
  }
}

long long cairn__tally_idle_left(cairn_worker *w) {
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

void cairn__tally_outbox_done(void *ud, long long index, int exit_status, cairn__delivery how,
                              const char *why) {
  cairn__project *p = ud;
  cairn_worker *w = p->owner;
  int end = 2;
  if (how == CAIRN__DELIVERED) {
    CAIRN_INFO(&p->log, "result %lld delivered (exit status %d) after its master came back",
               index, exit_status);
    end = exit_status == 0 ? 0 : 1;
  } else if (how == CAIRN__FATAL)
    cairn__worker_fatal(w, CAIRN_EFORBIDDEN, "%s", why);
  else
    CAIRN_INFO(&p->log, "result %lld dropped: %s", index, why);
  cairn__tally_ended(w, p->k, end);
}

long cairn__tally_pick(cairn_worker *w, long long *hold_ms) {
  for (size_t tries = 0; tries <= w->nprojects; tries++) { /* each deferral is final */
    long long now = cairn__now_ms();
    long k = cairn__ledger_pick(&w->ledger, now, hold_ms);
    if (k < 0 || w->nprojects == 1)
      return k;
    long paced = cairn__pace_pending(&w->projects[k].pace, now);
    if (paced <= 0)
      return k;
    cairn__ledger_defer(&w->ledger, (size_t)k, paced, now);
  }
  return cairn__ledger_pick(&w->ledger, cairn__now_ms(), hold_ms);
}
