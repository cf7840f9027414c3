/* throttle.h — volunteers in control (docs/worker.md, "Volunteers in
 * control"): when the worker may take work and how much CPU its running
 * programs get.
 *
 *   --idle-only   the machine's CPU use by other processes (all busy time of
 *                 /proc/stat minus the worker's own threads and its tasks'
 *                 process groups) is sampled every second; above the
 *                 threshold for CAIRN__IDLE_BUSY_SAMPLES samples in a row,
 *                 every running task's process group is stopped (SIGSTOP)
 *                 and no work is requested; below it for the settle time,
 *                 they continue (SIGCONT).
 *   --cpu-limit P each task's process group runs P% of every
 *                 CAIRN__DUTY_PERIOD_MS and is stopped the rest.
 *   --hours A-B   outside the windows (local time) no work is requested and
 *                 running tasks are stopped.
 *
 * Only program apps are stopped: a callback app runs on a worker thread and
 * cannot be (it still gets no new work while the worker is paused).
 *
 * The pure parts (window parsing, /proc parsing, duty-cycle arithmetic) are
 * exported for tests. The throttle thread owns the signalling; task threads
 * attach their program's process group and detach it before reaping it
 * (so a recycled process group is never signalled). Private to worker/.
 */
#ifndef CAIRN_THROTTLE_H
#define CAIRN_THROTTLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/log.h"

#define CAIRN__HOURS_MAX 8             /* windows in one --hours */
#define CAIRN__DUTY_PERIOD_MS 1000     /* --cpu-limit's period */
#define CAIRN__IDLE_SAMPLE_MS 1000     /* --idle-only's sampling period */
#define CAIRN__IDLE_BUSY_SAMPLES 2     /* busy samples in a row before suspending */
#define CAIRN__IDLE_THRESHOLD 25       /* default: % of one core used by others */
#define CAIRN__IDLE_SETTLE_S 10        /* default: idle seconds before resuming */
#define CAIRN__PROC_SCAN_MAX 65536u    /* /proc entries one sample visits at most */

/* Time windows of the day, in minutes since local midnight: [start, end),
 * wrapping midnight when end <= start. */
typedef struct cairn__hours {
  int n;
  int start[CAIRN__HOURS_MAX], end[CAIRN__HOURS_MAX];
} cairn__hours;

/* Parses "A-B[,A-B...]" where A and B are H or H:MM (0-24, 00-59); "22-07"
 * is 22:00 to 07:00 the next morning. Returns 0, or -1 when malformed,
 * empty, a window is empty (A == B) or there are more than
 * CAIRN__HOURS_MAX. */
int cairn__hours_parse(const char *s, cairn__hours *h);
/* 1 when minute (0..1439) falls in one of the windows. */
int cairn__hours_contains(const cairn__hours *h, int minute);

/* Parses /proc/stat's first line: busy = user+nice+system+irq+softirq+steal,
 * total = busy + idle + iowait (clock ticks, all CPUs); ncpu = the cpuN
 * lines. Returns 0, or -1 when malformed. */
int cairn__procstat_parse(const char *text, unsigned long long *busy, unsigned long long *total,
                          int *ncpu);
/* Parses /proc/PID/stat: the process group, the state letter, utime+stime
 * and cutime+cstime (ticks). The command name may hold spaces and ')'.
 * Returns 0, or -1 when malformed. */
int cairn__pidstat_parse(const char *text, long *pgrp, char *state, unsigned long long *cpu,
                         unsigned long long *child_cpu);
/* The share of one core (percent) used by others: other busy ticks over the
 * elapsed ticks of one CPU (total_delta / ncpu). 0 when nothing elapsed. */
double cairn__other_percent(unsigned long long other_ticks, unsigned long long total_delta,
                            int ncpu);
/* The running part of a duty-cycle period of period_ms for percent (1-100);
 * at least 1 ms. */
long cairn__duty_on_ms(unsigned percent, long period_ms);

typedef struct cairn__throttle_cfg {
  int idle_only;
  unsigned idle_threshold;  /* percent of one core; 0: CAIRN__IDLE_THRESHOLD */
  unsigned idle_settle;     /* seconds; 0: CAIRN__IDLE_SETTLE_S */
  unsigned cpu_limit;       /* 1-100; 0 or 100: none */
  int has_hours;
  cairn__hours hours;
} cairn__throttle_cfg;

typedef struct cairn__tslot {
  pid_t pgid;               /* 0: no program attached */
  int stopped;              /* the throttle stopped it */
  long long stopped_at;     /* monotonic ms of the stop */
  long long stopped_ms;     /* ms stopped by the throttle so far (finished stops) */
  unsigned long long cpu;   /* its group's CPU ticks at the last sample */
} cairn__tslot;

typedef struct cairn__throttle {
  cairn__throttle_cfg cfg;
  const cairn__logger *log;  /* borrowed */
  size_t nslots;
  cairn__tslot *slot;       /* nslots, guarded by mu */
  pthread_mutex_t mu;
  atomic_int paused;        /* no new work: outside the hours or suspended for idle */
  atomic_int quit;
  int active;               /* any of the policies is on */
  pthread_t thread;
  int started;
} cairn__throttle;

/* 1 when cfg asks for any throttling. */
int cairn__throttle_cfg_active(const cairn__throttle_cfg *cfg);

/* Prepares t for nslots task threads. Returns 0, or -1 when out of memory. */
int cairn__throttle_init(cairn__throttle *t, const cairn__throttle_cfg *cfg, size_t nslots,
                         const cairn__logger *log);
/* Starts the throttle thread when a policy is on (else nothing). 0 or -1. */
int cairn__throttle_start(cairn__throttle *t);
/* Stops the thread, continuing every stopped group. Safe when not started. */
void cairn__throttle_stop(cairn__throttle *t);
void cairn__throttle_destroy(cairn__throttle *t);

/* Slot i's program runs in process group pgid / has exited and is about to
 * be reaped (continues it first when it was stopped). t may be NULL. */
void cairn__throttle_attach(cairn__throttle *t, size_t i, pid_t pgid);
void cairn__throttle_detach(cairn__throttle *t, size_t i);
/* 1 when slot i runs a program (attached). */
int cairn__throttle_attached(cairn__throttle *t, size_t i);
/* Seconds slot i's current program has been stopped by the throttle. */
double cairn__throttle_stopped_s(cairn__throttle *t, size_t i);
/* 1 while no new work should be requested. t may be NULL. */
int cairn__throttle_paused(cairn__throttle *t);

#endif
