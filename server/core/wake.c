/* wake.c — part of the core: the tasks that became eligible, and the jobs
 * whose state changed, under one hold of c->lock, told to the held work
 * requests and job waits (waiters.h) once the lock is released
 * (cairn__core_unlock). Bounds: a note is O(CAIRN__WAKE_APPS) or
 * O(CAIRN__WAKE_JOBS) under the lock; the flush copies at most
 * CAIRN__WAKE_APPS + CAIRN__WAKE_JOBS entries under it and calls the
 * wakers after it. */
#include <string.h>

#include "server/core/apps.h"
#include "server/core/core.h"

void cairn__wake_note(cairn__core *c, const char *app, uint32_t n) {
  if (!c->waker || n == 0)
    return;
  uint64_t h = cairn__hash_app(app);
  for (uint32_t i = 0; i < c->nwake; i++)
    if (c->wake[i].app == h) {
      c->wake[i].n += n;
      return;
    }
  if (c->nwake < CAIRN__WAKE_APPS)
    c->wake[c->nwake++] = (cairn__wake_entry){h, n};
  else
    c->wake_any += n; /* more apps than entries: wake any held request */
}

void cairn__job_changed(cairn__core *c, int64_t job) {
  pthread_cond_broadcast(&c->job_cv);
  if (!c->job_waker || c->wake_all_jobs)
    return;
  for (uint32_t i = 0; i < c->nwake_jobs; i++)
    if (c->wake_jobs[i] == job)
      return;
  if (c->nwake_jobs < CAIRN__WAKE_JOBS)
    c->wake_jobs[c->nwake_jobs++] = job;
  else
    c->wake_all_jobs = 1; /* more jobs than entries: wake every job wait */
}

/* cairn__core_unlock's second half, after the seal: the one place besides
 * it that releases the mutex itself. */
void cairn__core_unlock_wake(cairn__core *c) {
  cairn__wake_entry e[CAIRN__WAKE_APPS];
  int64_t jobs[CAIRN__WAKE_JOBS];
  cairn__handed h[CAIRN__HANDOFF_MAX];
  uint32_t n = c->nwake, any = c->wake_any, nj = c->nwake_jobs, nh = c->nhanded;
  uint64_t seq = nh ? cairn__journal_last(c->journal) : 0; /* the sealed group's last */
  memcpy(h, c->handed, nh * sizeof *h);
  c->nhanded = 0;
  memcpy(e, c->wake, n * sizeof *e);
  memcpy(jobs, c->wake_jobs, nj * sizeof *jobs);
  if (c->wake_all_jobs) {
    jobs[0] = 0;
    nj = 1;
  }
  c->nwake = 0;
  c->wake_any = 0;
  c->nwake_jobs = 0;
  c->wake_all_jobs = 0;
  pthread_mutex_unlock(&c->lock);
  for (uint32_t i = 0; i < nh; i++)
    c->hander(c->waker_ud, h[i].claim, h[i].offer, seq);
  for (uint32_t i = 0; i < n; i++)
    c->waker(c->waker_ud, e[i].app, e[i].n);
  if (any)
    c->waker(c->waker_ud, 0, any);
  for (uint32_t i = 0; i < nj; i++)
    c->job_waker(c->waker_ud, jobs[i]);
}

void cairn__core_set_waker(cairn__core *c, void (*waker)(void *ud, uint64_t app, unsigned n),
                           void (*job_waker)(void *ud, int64_t job), void *ud) {
  pthread_mutex_lock(&c->lock);
  c->waker = waker;
  c->job_waker = job_waker;
  c->waker_ud = ud;
  c->nwake = 0;
  c->wake_any = 0;
  c->nwake_jobs = 0;
  c->wake_all_jobs = 0;
  cairn__core_unlock(c);
}

int cairn__core_app_hashes(cairn__core *c, int64_t vol, uint64_t *out, int max) {
  cairn_status st;
  int n = 0;
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__vol_locked(c, vol, &st, NULL);
  if (v && cairn__vol_platform(v))
    n = 0; /* it runs the signed apps of its platform: woken for any (apps.h) */
  else if (v) {
    n = v->napps;
    for (int i = 0; i < v->napps && i < max; i++)
      out[i] = cairn__hash_app(v->apps[i]);
  }
  cairn__core_unlock(c);
  return n;
}
