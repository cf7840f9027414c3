/* ledger.h — the worker's account of how its projects use its slots
 * (docs/worker.md, "Several projects"): each project's share and decayed
 * usage (share.h), its running tasks, its backoff after a request that
 * found no work or no master, its counters; which project a free slot
 * asks; the periodic report of each project's figures. Private to worker/.
 *
 * Backoff (as BOINC's work fetch backs off a project that sent no work):
 * a request that found no work, or no master, makes the project's next
 * request wait BACKOFF_MIN_MS doubling to BACKOFF_MAX_MS (each drawn in
 * [d/2, d]), or the wait the master named; a request that found work, or
 * that the master held (it waits for work on the slot's behalf), ends it.
 * With one project nothing is backed off: its slots keep their own
 * backoff (slot.c), as a worker of one master always did.
 *
 * A running task counts the seconds it has held its cores times its
 * project's recent CPU efficiency (the CPU time of its ended tasks over
 * the time they held their cores, decayed as usage is; 1 before any
 * ended), so that what it is expected to be charged is what it counts.
 *
 * Thread-safe: every call takes mu, a leaf lock, for O(projects) at most
 * (16); report() logs outside it.
 */
#ifndef CAIRN_LEDGER_H
#define CAIRN_LEDGER_H

#include <pthread.h>

#include "cairn/worker.h"
#include "common/log.h"
#include "worker/backoff.h"
#include "worker/share.h"

#define CAIRN__LEDGER_MAX 16
#define CAIRN__LEDGER_BACKOFF_MIN_MS 1000
#define CAIRN__LEDGER_BACKOFF_MAX_MS 10000
#define CAIRN__LEDGER_REPORT_MS 30000 /* each project's figures logged this often (info) */
#define CAIRN__DEFAULT_HALF_LIFE_S 600

/* What a request for work found. */
typedef enum cairn__asked {
  CAIRN__ASKED_WORK,  /* a task */
  CAIRN__ASKED_HELD,  /* no task, after the master held the request for one */
  CAIRN__ASKED_NONE,  /* no task, at once */
  CAIRN__ASKED_DOWN   /* no answer (or 429, 5xx) */
} cairn__asked;

typedef struct cairn__ledger_project {
  cairn__share s;
  unsigned running;          /* tasks running */
  double running_cores;      /* their cores */
  double started_sum;        /* sum of cores * start ms of the running tasks */
  double eff_cpu, eff_held;  /* decayed CPU seconds and seconds of cores held of its ended
                                tasks: its running tasks count held * eff_cpu / eff_held */
  long long eff_ms;          /* when they were last decayed */
  cairn__backoff backoff;
  int down;                  /* the last request found no master */
  cairn_worker_stats stats;
  double cpu;                /* CPU seconds of its tasks since init */
  const cairn__logger *log;  /* borrowed: the project's */
  int retired;               /* never asked again (cairn__ledger_retire) */
} cairn__ledger_project;

typedef struct cairn__ledger {
  pthread_mutex_t mu;
  size_t n;
  double half_life_s;
  cairn__ledger_project p[CAIRN__LEDGER_MAX];
  long long reported_ms;
} cairn__ledger;

/* n projects (1 to CAIRN__LEDGER_MAX) of shares[k] (0: a backup project),
 * logging through logs[k]; half_life_s > 0. */
void cairn__ledger_init(cairn__ledger *l, size_t n, const unsigned *shares, double half_life_s,
                        const cairn__logger *const *logs, long long now_ms);
void cairn__ledger_destroy(cairn__ledger *l);

/* The project a free slot asks now (share.h): its index, *hold_ms how long
 * its request may be held at the master (-1: no bound); or -1 when every
 * project is backed off, *hold_ms the ms until the first is not. */
long cairn__ledger_pick(cairn__ledger *l, long long now_ms, long long *hold_ms);
/* 1 when a free slot would ask project k now (so that a slot may chain
 * its next task from k's result answer). */
int cairn__ledger_prefers(cairn__ledger *l, size_t k, long long now_ms);
/* Project k is asked for no more work (its master's audit log was found
 * inconsistent: auditlog.h): no free slot asks it again, its running tasks
 * end as they would. 1 when this call retired it (0: it already was);
 * *left (may be NULL): the projects still asked. */
int cairn__ledger_retire(cairn__ledger *l, size_t k, size_t *left);

/* A request to project k found what; retry_ms >= 0: the wait the master
 * named for its next (a 204 with Retry-After). */
void cairn__ledger_asked(cairn__ledger *l, size_t k, cairn__asked what, long retry_ms,
                         long long now_ms);

/* Project k is not asked for ms from now_ms (its master asked to wait:
 * its pace, backoff.h); its backoff is left as it is. */
void cairn__ledger_defer(cairn__ledger *l, size_t k, long ms, long long now_ms);

/* A task of project k holding cores starts at now_ms. */
void cairn__ledger_started(cairn__ledger *l, size_t k, double cores, long long now_ms);
/* That task ends at now_ms: its project is charged cpu_seconds, its CPU
 * time (< 0: unknown, then its run time times its cores). */
void cairn__ledger_ended(cairn__ledger *l, size_t k, double cores, long long started_ms,
                         double cpu_seconds, long long now_ms);
/* A task of project k ended done (0), failed (1) or dropped (2). */
void cairn__ledger_count(cairn__ledger *l, size_t k, int how);

/* Project k's figures (server_url and share left to the caller). */
void cairn__ledger_stats(cairn__ledger *l, size_t k, long long now_ms,
                         cairn_worker_project_stats *out);
/* Logs each project's figures at info when CAIRN__LEDGER_REPORT_MS passed
 * since the last report (always when force). */
void cairn__ledger_report(cairn__ledger *l, long long now_ms, int force);

#endif
