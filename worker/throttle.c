/* throttle.c — idle-only, CPU limit and hours of the worker (throttle.h).
 *
 * The thread's loop, one period (CAIRN__DUTY_PERIOD_MS) at a time:
 *   sample   (--idle-only) /proc/stat, /proc/self/stat and the /proc/PID/stat
 *            of the processes in the attached groups (one walk of /proc,
 *            at most CAIRN__PROC_SCAN_MAX entries): others' share of a core;
 *   decide   paused = outside the hours, or suspended for idle;
 *   signal   paused: every attached group stopped for the whole period;
 *            --cpu-limit: continued for the on part, stopped for the rest;
 *            else: continued.
 * Signals are sent under mu, only to attached groups; task threads detach
 * before reaping, so a group id is never signalled once it may be reused.
 */
#include "worker/throttle.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker/leases.h"

int cairn__hours_parse(const char *s, cairn__hours *h) {
  memset(h, 0, sizeof *h);
  if (!s || !*s)
    return -1;
  const char *p = s;
  for (;;) {
    int v[2];
    for (int k = 0; k < 2; k++) {
      if (!isdigit((unsigned char)*p))
        return -1;
      int hh = 0, mm = 0, nd = 0;
      while (isdigit((unsigned char)*p) && nd < 3)
        hh = hh * 10 + (*p++ - '0'), nd++;
      if (nd > 2 || hh > 24)
        return -1;
      if (*p == ':') {
        p++;
        if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]))
          return -1;
        mm = (p[0] - '0') * 10 + (p[1] - '0');
        p += 2;
        if (mm > 59 || (hh == 24 && mm))
          return -1;
      }
      v[k] = (hh * 60 + mm) % 1440;
      if (k == 0 && *p++ != '-')
        return -1;
    }
    if (v[0] == v[1] || h->n == CAIRN__HOURS_MAX)
      return -1;
    h->start[h->n] = v[0];
    h->end[h->n] = v[1];
    h->n++;
    if (*p == '\0')
      return 0;
    if (*p++ != ',')
      return -1;
  }
}

int cairn__hours_contains(const cairn__hours *h, int minute) {
  for (int i = 0; i < h->n; i++) {
    int a = h->start[i], b = h->end[i];
    if (a < b ? minute >= a && minute < b : minute >= a || minute < b)
      return 1;
  }
  return 0;
}

int cairn__procstat_parse(const char *text, unsigned long long *busy, unsigned long long *total,
                          int *ncpu) {
  unsigned long long f[8] = {0};
  if (strncmp(text, "cpu ", 4) != 0)
    return -1;
  int n = sscanf(text + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3],
                 &f[4], &f[5], &f[6], &f[7]);
  if (n < 4)
    return -1;
  /* user nice system idle iowait irq softirq steal */
  *busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
  *total = *busy + f[3] + f[4];
  *ncpu = 0;
  for (const char *p = strchr(text, '\n'); p; p = strchr(p + 1, '\n'))
    if (strncmp(p + 1, "cpu", 3) == 0 && isdigit((unsigned char)p[4]))
      (*ncpu)++;
  if (*ncpu == 0)
    *ncpu = 1;
  return 0;
}

int cairn__pidstat_parse(const char *text, long *pgrp, char *state, unsigned long long *cpu,
                         unsigned long long *child_cpu) {
  const char *p = strrchr(text, ')'); /* the command name may hold ')' */
  if (!p)
    return -1;
  char st;
  long ppid, pg;
  unsigned long long ut, stm, cut, cst;
  /* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
   * utime stime cutime cstime */
  if (sscanf(p + 1, " %c %ld %ld %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &st, &ppid,
             &pg, &ut, &stm, &cut, &cst) != 7)
    return -1;
  *pgrp = pg;
  *state = st;
  *cpu = ut + stm;
  *child_cpu = cut + cst;
  return 0;
}

double cairn__other_percent(unsigned long long other_ticks, unsigned long long total_delta,
                            int ncpu) {
  if (total_delta == 0 || ncpu <= 0)
    return 0;
  return 100.0 * (double)other_ticks * (double)ncpu / (double)total_delta;
}

long cairn__duty_on_ms(unsigned percent, long period_ms) {
  if (percent >= 100)
    return period_ms;
  long on = (long)((long long)period_ms * (long long)percent / 100);
  return on < 1 ? 1 : on;
}

int cairn__throttle_cfg_active(const cairn__throttle_cfg *cfg) {
  return cfg->idle_only || (cfg->cpu_limit && cfg->cpu_limit < 100) || cfg->has_hours;
}

int cairn__throttle_init(cairn__throttle *t, const cairn__throttle_cfg *cfg, size_t nslots,
                         const cairn__logger *log) {
  memset(t, 0, sizeof *t);
  t->cfg = *cfg;
  if (!t->cfg.idle_threshold)
    t->cfg.idle_threshold = CAIRN__IDLE_THRESHOLD;
  if (!t->cfg.idle_settle)
    t->cfg.idle_settle = CAIRN__IDLE_SETTLE_S;
  t->log = log;
  t->nslots = nslots;
  t->active = cairn__throttle_cfg_active(&t->cfg);
  atomic_init(&t->paused, 0);
  atomic_init(&t->quit, 0);
  pthread_mutex_init(&t->mu, NULL);
  t->slot = calloc(nslots ? nslots : 1, sizeof *t->slot);
  return t->slot ? 0 : -1;
}

void cairn__throttle_destroy(cairn__throttle *t) {
  free(t->slot);
  t->slot = NULL;
  pthread_mutex_destroy(&t->mu);
}

/* Stops (stop = 1) or continues every attached group; under mu. */
static void signal_all(cairn__throttle *t, int stop) {
  long long now = cairn__now_ms();
  for (size_t i = 0; i < t->nslots; i++) {
    cairn__tslot *s = &t->slot[i];
    if (!s->pgid || s->stopped == stop)
      continue;
    kill(-s->pgid, stop ? SIGSTOP : SIGCONT);
    s->stopped = stop;
    if (stop)
      s->stopped_at = now;
    else
      s->stopped_ms += now - s->stopped_at;
  }
}

void cairn__throttle_attach(cairn__throttle *t, size_t i, pid_t pgid) {
  if (!t || i >= t->nslots)
    return;
  pthread_mutex_lock(&t->mu);
  t->slot[i] = (cairn__tslot){.pgid = pgid};
  pthread_mutex_unlock(&t->mu);
}

void cairn__throttle_detach(cairn__throttle *t, size_t i) {
  if (!t || i >= t->nslots)
    return;
  pthread_mutex_lock(&t->mu);
  if (t->slot[i].pgid && t->slot[i].stopped)
    kill(-t->slot[i].pgid, SIGCONT);
  t->slot[i] = (cairn__tslot){0};
  pthread_mutex_unlock(&t->mu);
}

int cairn__throttle_attached(cairn__throttle *t, size_t i) {
  if (!t || i >= t->nslots || !t->slot)
    return 0;
  pthread_mutex_lock(&t->mu);
  int on = t->slot[i].pgid != 0;
  pthread_mutex_unlock(&t->mu);
  return on;
}

double cairn__throttle_stopped_s(cairn__throttle *t, size_t i) {
  if (!t || i >= t->nslots)
    return 0;
  pthread_mutex_lock(&t->mu);
  long long ms = t->slot[i].stopped_ms;
  if (t->slot[i].stopped)
    ms += cairn__now_ms() - t->slot[i].stopped_at;
  pthread_mutex_unlock(&t->mu);
  return (double)ms / 1000.0;
}

int cairn__throttle_paused(cairn__throttle *t) {
  return t && atomic_load(&t->paused);
}

/* Reads up to cap - 1 bytes of path; 0 or -1. */
static int read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  return 0;
}

/* What one idle sample remembers between periods. */
typedef struct sampler {
  int valid;
  unsigned long long busy, total, self;
  int busy_run;           /* busy samples in a row */
  long long idle_since;   /* monotonic ms the machine went idle; 0: busy */
  int suspended;
} sampler;

/* CPU ticks used now by each attached group (cur[i]; 0 when none) and by
 * the worker itself. Bounded: one walk of /proc, CAIRN__PROC_SCAN_MAX entries. */
static void group_ticks(cairn__throttle *t, const pid_t *pg, unsigned long long *cur,
                        unsigned long long *self) {
  char path[64], buf[1024];
  long pgrp;
  char st;
  unsigned long long cpu, ccpu;
  *self = 0;
  if (read_small("/proc/self/stat", buf, sizeof buf) == 0 &&
      cairn__pidstat_parse(buf, &pgrp, &st, &cpu, &ccpu) == 0)
    *self = cpu;
  for (size_t i = 0; i < t->nslots; i++)
    cur[i] = 0;
  DIR *d = opendir("/proc");
  if (!d)
    return;
  struct dirent *e;
  unsigned seen = 0;
  while ((e = readdir(d)) != NULL && seen++ < CAIRN__PROC_SCAN_MAX) {
    if (!isdigit((unsigned char)e->d_name[0]))
      continue;
    snprintf(path, sizeof path, "/proc/%.20s/stat", e->d_name);
    if (read_small(path, buf, sizeof buf) != 0 ||
        cairn__pidstat_parse(buf, &pgrp, &st, &cpu, &ccpu) != 0)
      continue;
    long pid = atol(e->d_name);
    for (size_t i = 0; i < t->nslots; i++)
      if (pg[i] && pgrp == (long)pg[i])
        cur[i] += cpu + (pid == (long)pg[i] ? ccpu : 0);
  }
  closedir(d);
}

/* Takes one sample; returns others' share of a core in percent, or -1 when
 * there is no previous sample to compare with. */
static double sample_other(cairn__throttle *t, sampler *sm, pid_t *pg, unsigned long long *cur) {
  char buf[8192];
  unsigned long long busy, total, self, tasks = 0;
  int ncpu;
  if (read_small("/proc/stat", buf, sizeof buf) != 0 ||
      cairn__procstat_parse(buf, &busy, &total, &ncpu) != 0)
    return -1;
  pthread_mutex_lock(&t->mu);
  for (size_t i = 0; i < t->nslots; i++)
    pg[i] = t->slot[i].pgid;
  pthread_mutex_unlock(&t->mu);
  group_ticks(t, pg, cur, &self);
  pthread_mutex_lock(&t->mu);
  for (size_t i = 0; i < t->nslots; i++) {
    cairn__tslot *s = &t->slot[i];
    if (s->pgid && s->pgid == pg[i]) { /* a group gone meanwhile counts as others' */
      if (cur[i] > s->cpu)
        tasks += cur[i] - s->cpu;
      s->cpu = cur[i];
    }
  }
  pthread_mutex_unlock(&t->mu);
  double pct = -1;
  if (sm->valid && total > sm->total) {
    unsigned long long used = busy - sm->busy, mine = tasks + (self - sm->self);
    pct = cairn__other_percent(used > mine ? used - mine : 0, total - sm->total, ncpu);
  }
  sm->valid = 1;
  sm->busy = busy;
  sm->total = total;
  sm->self = self;
  return pct;
}

/* Updates the idle state from a sample and logs its changes. */
static void decide_idle(cairn__throttle *t, sampler *sm, double pct) {
  long long now = cairn__now_ms();
  if (pct < 0)
    return;
  if (pct > (double)t->cfg.idle_threshold) {
    sm->busy_run++;
    sm->idle_since = 0;
    if (!sm->suspended && sm->busy_run >= CAIRN__IDLE_BUSY_SAMPLES) {
      sm->suspended = 1;
      CAIRN_INFO(t->log, "computer in use (other processes use %.0f%% of a core, over %u%%): "
                 "tasks suspended, no new work", pct, t->cfg.idle_threshold);
    }
    return;
  }
  sm->busy_run = 0;
  if (!sm->idle_since)
    sm->idle_since = now;
  if (sm->suspended && now - sm->idle_since >= (long long)t->cfg.idle_settle * 1000) {
    sm->suspended = 0;
    CAIRN_INFO(t->log, "computer idle for %u s (other processes use %.0f%% of a core): tasks "
               "resumed", t->cfg.idle_settle, pct);
  }
}

static int in_hours(const cairn__throttle *t) {
  time_t now = time(NULL);
  struct tm tm;
  if (!localtime_r(&now, &tm))
    return 1;
  return cairn__hours_contains(&t->cfg.hours, tm.tm_hour * 60 + tm.tm_min);
}

/* Sleeps ms unless quitting; 1 when quitting. */
static int nap(cairn__throttle *t, long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  if (atomic_load(&t->quit))
    return 1;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
  return atomic_load(&t->quit);
}

static void *throttle_main(void *arg) {
  cairn__throttle *t = arg;
  sampler sm = {0};
  pid_t *pg = calloc(t->nslots, sizeof *pg);
  unsigned long long *cur = calloc(t->nslots, sizeof *cur);
  int was_out = atomic_load(&t->paused), was_paused = was_out;
  long on = t->cfg.cpu_limit ? cairn__duty_on_ms(t->cfg.cpu_limit, CAIRN__DUTY_PERIOD_MS)
                             : CAIRN__DUTY_PERIOD_MS;
  while (!atomic_load(&t->quit)) {
    if (t->cfg.idle_only && pg && cur)
      decide_idle(t, &sm, sample_other(t, &sm, pg, cur));
    int out = t->cfg.has_hours && !in_hours(t);
    if (out != was_out)
      CAIRN_INFO(t->log, out ? "outside --hours: tasks suspended, no new work"
                             : "within --hours: tasks resumed, work requested");
    was_out = out;
    int paused = out || sm.suspended;
    if (paused != was_paused)
      CAIRN_INFO(t->log, paused ? "worker paused" : "worker active");
    was_paused = paused;
    atomic_store(&t->paused, paused);
    pthread_mutex_lock(&t->mu);
    signal_all(t, paused);
    pthread_mutex_unlock(&t->mu);
    if (paused || on >= CAIRN__DUTY_PERIOD_MS) {
      nap(t, CAIRN__DUTY_PERIOD_MS);
      continue;
    }
    if (nap(t, on))
      break;
    pthread_mutex_lock(&t->mu);
    signal_all(t, 1);
    pthread_mutex_unlock(&t->mu);
    nap(t, CAIRN__DUTY_PERIOD_MS - on);
  }
  pthread_mutex_lock(&t->mu);
  signal_all(t, 0);
  pthread_mutex_unlock(&t->mu);
  atomic_store(&t->paused, 0);
  free(pg);
  free(cur);
  return NULL;
}

int cairn__throttle_start(cairn__throttle *t) {
  if (!t->active)
    return 0;
  if (t->cfg.has_hours && !in_hours(t)) { /* no poll before the thread's first look */
    atomic_store(&t->paused, 1);
    CAIRN_INFO(t->log, "outside --hours: no new work");
  }
  if (pthread_create(&t->thread, NULL, throttle_main, t) != 0)
    return -1;
  t->started = 1;
  return 0;
}

void cairn__throttle_stop(cairn__throttle *t) {
  if (!t->started)
    return;
  atomic_store(&t->quit, 1);
  pthread_join(t->thread, NULL);
  t->started = 0;
}
