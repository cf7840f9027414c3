/* ledger.c — how the worker's projects use its slots (ledger.h). */
#include "worker/ledger.h"

#include <stdio.h>
#include <string.h>

void cairn__ledger_init(cairn__ledger *l, size_t n, const unsigned *shares, double half_life_s,
                        const cairn__logger *const *logs, long long now_ms) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
  l->n = n > CAIRN__LEDGER_MAX ? CAIRN__LEDGER_MAX : n;
  l->half_life_s = half_life_s > 0 ? half_life_s : CAIRN__DEFAULT_HALF_LIFE_S;
  l->reported_ms = now_ms;
  for (size_t k = 0; k < l->n; k++) {
    l->p[k].s = (cairn__share){.share = shares[k], .usage_ms = now_ms};
    l->p[k].log = logs[k];
    cairn__backoff_init(&l->p[k].backoff, CAIRN__LEDGER_BACKOFF_MIN_MS,
                        CAIRN__LEDGER_BACKOFF_MAX_MS);
  }
}

void cairn__ledger_destroy(cairn__ledger *l) { pthread_mutex_destroy(&l->mu); }

/* Brings each project's running seconds to now_ms (mu held); the view
 * share.h picks from. */
static void running_now(cairn__ledger *l, long long now_ms, cairn__share *out) {
  for (size_t k = 0; k < l->n; k++) {
    cairn__ledger_project *p = &l->p[k];
    double r = (p->running_cores * (double)now_ms - p->started_sum) / 1000.0;
    double eff = p->eff_held > 0 ? p->eff_cpu / p->eff_held : 1;
    out[k] = p->s;
    out[k].running_s = r > 0 ? r * (eff < 1 ? eff : 1) : 0;
  }
}

static long pick_locked(cairn__ledger *l, long long now_ms, long long *hold_ms) {
  cairn__share view[CAIRN__LEDGER_MAX];
  if (l->n == 1) { /* one project: always asked, its slots back off themselves */
    if (hold_ms)
      *hold_ms = -1;
    return 0;
  }
  running_now(l, now_ms, view);
  return cairn__share_pick(view, l->n, now_ms, l->half_life_s, hold_ms);
}

long cairn__ledger_pick(cairn__ledger *l, long long now_ms, long long *hold_ms) {
  pthread_mutex_lock(&l->mu);
  long k = pick_locked(l, now_ms, hold_ms);
  pthread_mutex_unlock(&l->mu);
  return k;
}

int cairn__ledger_prefers(cairn__ledger *l, size_t k, long long now_ms) {
  pthread_mutex_lock(&l->mu);
  int yes = pick_locked(l, now_ms, NULL) == (long)k;
  pthread_mutex_unlock(&l->mu);
  return yes;
}

void cairn__ledger_asked(cairn__ledger *l, size_t k, cairn__asked what, long retry_ms,
                         long long now_ms) {
  if (k >= l->n)
    return;
  cairn__ledger_project *p = &l->p[k];
  int came_back = 0, went_down = 0;
  long delay = 0;
  pthread_mutex_lock(&l->mu);
  if (p->retired) {
    pthread_mutex_unlock(&l->mu);
    return;
  }
  if (what == CAIRN__ASKED_WORK || what == CAIRN__ASKED_HELD) {
    cairn__backoff_reset(&p->backoff);
    p->s.ready_ms = 0;
    came_back = p->down;
    p->down = 0;
  } else {
    delay = cairn__backoff_next(&p->backoff);
    if (what == CAIRN__ASKED_NONE && retry_ms >= 0)
      delay = retry_ms; /* the master said when work is likely */
    p->s.ready_ms = now_ms + delay;
    if (what == CAIRN__ASKED_DOWN) {
      went_down = !p->down;
      p->down = 1;
    } else {
      came_back = p->down;
      p->down = 0;
    }
  }
  size_t n = l->n;
  pthread_mutex_unlock(&l->mu);
  if (n == 1)
    return;
  static const char *const names[] = {"work", "held, no work", "no work", "no answer"};
  CAIRN_DEBUG(p->log, "asked for work: %s; next asked in %ld ms", names[what], delay);
  if (went_down)
    CAIRN_WARN(p->log, "no answer from this project's master: the other projects take its "
               "slots; asked again in %.1f s, then less and less often", (double)delay / 1000);
  else if (came_back)
    CAIRN_WARN(p->log, "this project's master answers again");
}

int cairn__ledger_retire(cairn__ledger *l, size_t k, size_t *left) {
  pthread_mutex_lock(&l->mu);
  int now = k < l->n && !l->p[k].retired;
  if (now) {
    l->p[k].retired = 1;
    l->p[k].s.ready_ms = CAIRN__SHARE_NEVER;
  }
  size_t n = 0;
  for (size_t j = 0; j < l->n; j++)
    n += !l->p[j].retired;
  pthread_mutex_unlock(&l->mu);
  if (left)
    *left = n;
  return now;
}

void cairn__ledger_defer(cairn__ledger *l, size_t k, long ms, long long now_ms) {
  if (k >= l->n)
    return;
  pthread_mutex_lock(&l->mu);
  if (!l->p[k].retired && l->p[k].s.ready_ms < now_ms + ms)
    l->p[k].s.ready_ms = now_ms + ms;
  pthread_mutex_unlock(&l->mu);
}

void cairn__ledger_started(cairn__ledger *l, size_t k, double cores, long long now_ms) {
  if (k >= l->n)
    return;
  pthread_mutex_lock(&l->mu);
  l->p[k].running++;
  l->p[k].running_cores += cores;
  l->p[k].started_sum += cores * (double)now_ms;
  pthread_mutex_unlock(&l->mu);
}

void cairn__ledger_ended(cairn__ledger *l, size_t k, double cores, long long started_ms,
                         double cpu_seconds, long long now_ms) {
  if (k >= l->n)
    return;
  cairn__ledger_project *p = &l->p[k];
  double held = cores * (double)(now_ms - started_ms) / 1000;
  double charge = cpu_seconds >= 0 ? cpu_seconds : held;
  pthread_mutex_lock(&l->mu);
  if (p->running > 0)
    p->running--;
  p->running_cores -= cores;
  p->started_sum -= cores * (double)started_ms;
  if (p->running == 0) { /* no rounding left over */
    p->running_cores = 0;
    p->started_sum = 0;
  }
  cairn__share_charge(&p->s, charge, now_ms, l->half_life_s);
  p->cpu += cpu_seconds > 0 ? cpu_seconds : 0;
  p->eff_cpu = cairn__share_decay(p->eff_cpu, now_ms - p->eff_ms, l->half_life_s) + charge;
  p->eff_held = cairn__share_decay(p->eff_held, now_ms - p->eff_ms, l->half_life_s) + held;
  p->eff_ms = now_ms;
  pthread_mutex_unlock(&l->mu);
}

void cairn__ledger_count(cairn__ledger *l, size_t k, int how) {
  if (k >= l->n)
    return;
  pthread_mutex_lock(&l->mu);
  if (how == 0)
    l->p[k].stats.tasks_done++;
  else if (how == 1)
    l->p[k].stats.tasks_failed++;
  else
    l->p[k].stats.tasks_dropped++;
  pthread_mutex_unlock(&l->mu);
}

static void stats_locked(cairn__ledger *l, size_t k, long long now_ms,
                         cairn_worker_project_stats *out) {
  cairn__ledger_project *p = &l->p[k];
  out->share = p->s.share;
  out->tasks_done = p->stats.tasks_done;
  out->tasks_failed = p->stats.tasks_failed;
  out->tasks_dropped = p->stats.tasks_dropped;
  out->cpu_seconds = p->cpu;
  out->usage = cairn__share_usage(&p->s, now_ms, l->half_life_s);
  out->running = p->running;
  out->backed_off = l->n > 1 && p->s.ready_ms > now_ms;
}

void cairn__ledger_stats(cairn__ledger *l, size_t k, long long now_ms,
                         cairn_worker_project_stats *out) {
  if (k >= l->n)
    return;
  pthread_mutex_lock(&l->mu);
  stats_locked(l, k, now_ms, out);
  pthread_mutex_unlock(&l->mu);
}

void cairn__ledger_report(cairn__ledger *l, long long now_ms, int force) {
  cairn_worker_project_stats st[CAIRN__LEDGER_MAX];
  long long ready[CAIRN__LEDGER_MAX];
  double shares = 0, usage = 0;
  pthread_mutex_lock(&l->mu);
  int due = force || now_ms - l->reported_ms >= CAIRN__LEDGER_REPORT_MS;
  if (due)
    l->reported_ms = now_ms;
  size_t n = due ? l->n : 0;
  for (size_t k = 0; k < n; k++) {
    stats_locked(l, k, now_ms, &st[k]);
    ready[k] = l->p[k].retired ? -1 : l->p[k].s.ready_ms;
    shares += st[k].share;
    usage += st[k].usage;
  }
  pthread_mutex_unlock(&l->mu);
  for (size_t k = 0; k < n; k++) {
    char off[80] = "";
    if (ready[k] < 0)
      snprintf(off, sizeof off, ", retired (its audit log was found inconsistent)");
    else if (st[k].backed_off)
      snprintf(off, sizeof off, ", backed off %.1f s", (double)(ready[k] - now_ms) / 1000);
    CAIRN_INFO(l->p[k].log, "project share %u (%.0f%%): usage %.1f s (%.0f%%), CPU %.1f s, "
               "%u running, %llu done, %llu failed, %llu dropped%s", st[k].share,
               shares > 0 ? 100.0 * st[k].share / shares : 0, st[k].usage,
               usage > 0 ? 100.0 * st[k].usage / usage : 0, st[k].cpu_seconds, st[k].running,
               st[k].tasks_done, st[k].tasks_failed, st[k].tasks_dropped, off);
  }
}
