/* share.h — which of a worker's projects a free slot asks for work, so
 * that over time each project gets the slots' time in proportion to its
 * resource share (docs/worker.md, "Several projects"; the resource share
 * and recent-usage priority of BOINC's client, docs/references.md
 * [BOINC]). Pure functions over plain structs; private to worker/.
 *
 * A project's usage is the CPU time of its tasks (a task whose CPU time is
 * unknown: its run time times its cores), decayed with a half-life H: a
 * second used t seconds ago counts 2^(-t/H). A free slot asks, among the
 * projects that are ready (not backed off after a request that found no
 * work or no master), the one whose
 *
 *     (usage + running) / share
 *
 * is lowest, where running estimates what its running tasks have used so
 * far (ledger.h; a task is charged its CPU time when it ends). Ties go to the
 * larger share, then to the first listed. A project of share 0 is asked
 * only when no project with a share is ready (a backup project, as in
 * BOINC). Nothing running is ever pre-empted: the division acts only on
 * which project a free slot asks.
 */
#ifndef CAIRN_SHARE_H
#define CAIRN_SHARE_H

#include <limits.h>
#include <stddef.h>

#define CAIRN__SHARE_NEVER LLONG_MAX /* a ready_ms: never asked again (a retired project) */

typedef struct cairn__share {
  unsigned share;      /* resource share; 0: only when no project with a share is ready */
  double usage;        /* decayed CPU seconds as of usage_ms */
  long long usage_ms;  /* monotonic ms of usage */
  double running_s;    /* what its running tasks have used so far, in CPU seconds */
  long long ready_ms;  /* not asked before this monotonic ms (a backoff); 0: ready */
} cairn__share;

/* usage decayed over elapsed_ms with a half-life of half_life_s seconds
 * (> 0): usage * 2^(-elapsed/half_life); usage itself when elapsed_ms <= 0. */
double cairn__share_decay(double usage, long long elapsed_ms, double half_life_s);

/* s->usage decayed to now_ms, without changing s. */
double cairn__share_usage(const cairn__share *s, long long now_ms, double half_life_s);

/* Decays s->usage to now_ms and adds seconds (a task's CPU time). */
void cairn__share_charge(cairn__share *s, double seconds, long long now_ms, double half_life_s);

/* The project a free slot asks at now_ms, among s[0..n) (O(n)): its index,
 * or -1 when none is ready. *hold_ms (may be NULL) is how long that request
 * may wait at its master for work to come: 0 when another project is
 * ready too (it should not hold the slot), the ms until the first other
 * one is ready when all others are backed off, -1 when there is no other
 * project (no bound). With no pick, *hold_ms is the ms until the first
 * project is ready (-1 when n is 0). */
long cairn__share_pick(const cairn__share *s, size_t n, long long now_ms, double half_life_s,
                       long long *hold_ms);

#endif
