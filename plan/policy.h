/* policy.h — the pluggable allocation policy: which ELIGIBLE-BUT-UNALLOCATED
 * task to hand out next ([Ros] §4.3.1, the IC Pebble Game).
 *
 * A policy sees a job's dag and four events: a task became eligible and
 * unallocated ("ready", again after a lost lease), a task is picked
 * (allocated), a task was executed, and a task goes back to waiting
 * ("reset": a done task whose output must be made again, or a task that
 * must wait for such a parent again). It does no I/O and holds no globals.
 * Callers guarantee: a task is ready at most once at a time, pick only
 * returns ready tasks, executed is called once per task between resets.
 * A caller may hand a picked task back with ready(): the master does so for
 * a pick that does not fit the asking worker's free resources or whose
 * replica that worker already holds, examining at most 32 picks per job per
 * request (server/core/core.c, allocate_locked). The policy then orders it as
 * any ready task (ic: by its keys again; fifo: at the back; random: drawn
 * again), so no operation beyond these is needed.
 *
 * Re-opening: reset(v) makes v waiting again whatever it was (ready,
 * picked, executed, waiting); the caller then calls ready(v) if v is
 * eligible. Re-opening done task v and its descendants D is one reset per
 * task of {v} ∪ D and one ready per task of them that is eligible, so it
 * costs O(Σ (deg+(u) + 1) · log n) over u in {v} ∪ D, never a rebuild
 * (the master's re-queue and recompute, server/core/core.c). Afterwards the
 * ready set is the one a fresh create() would have after executed() of
 * every done task and ready() of every eligible one; ic's picks come in
 * the same order as that rebuild's too (its order is a function of the
 * tasks' states), fifo keeps the ready tasks it had in their order and
 * puts the re-opened ones behind them, random draws among the same set
 * (tests/unit/test_policy_reset.c checks all three against a rebuild).
 *
 * Bound (every policy): ready(v), pick() returning v, executed(v) and
 * reset(v) each cost O((deg+(v) + 1) · log n) for a dag of n tasks,
 * whatever the degrees of other tasks (fifo and random: O(1)); create() is
 * O((n + m) log n) or better (all three: O(n + m)). The master calls them
 * under its core lock, so no event may do work that grows with the job.
 * Tests measure ic's steps with cairn__policy_ic_work
 * (tests/unit/test_ic_fanin.c).
 */
#ifndef CAIRN_POLICY_H
#define CAIRN_POLICY_H

#include <stdint.h>

#include "plan/dag.h"

typedef struct cairn__policy_ops {
  const char *name;
  /* Returns the policy state for dag d (borrowed; outlives the state), or NULL. */
  void *(*create)(const cairn__dag *d, uint64_t seed);
  void (*destroy)(void *self);
  void (*ready)(void *self, uint32_t v);
  /* Removes the best ready task into *v and returns 0; -1 when none is ready. */
  int (*pick)(void *self, uint32_t *v);
  void (*executed)(void *self, uint32_t v);
  /* v is waiting again: out of the ready set, neither picked nor executed. */
  void (*reset)(void *self, uint32_t v);
} cairn__policy_ops;

/* The policy called name ("fifo", ...), or NULL. */
const cairn__policy_ops *cairn__policy_find(const char *name);
/* Names of all policies, NULL-terminated. */
const char *const *cairn__policy_names(void);

/* Earliest eligible first (policy.c): a list threaded through the tasks,
 * so executed() and reset() take a ready task out in O(1). */
extern const cairn__policy_ops cairn__policy_fifo;
/* IC-optimal on the dag families of [Ros] §4.3.1, a lookahead heuristic elsewhere
 * (policy_ic.c). */
extern const cairn__policy_ops cairn__policy_ic;
/* ic's lookahead keys (y2, closest child) count only children with at most
 * this many parents; see policy_ic.c. */
#define CAIRN_IC_NARROW 8
/* Steps (key updates + heap comparisons) done by ic state self so far; each
 * event (reset included) adds at most (deg+(v) + 1) · (2·CAIRN_IC_NARROW + 1) · (2·log2 n + 3). */
uint64_t cairn__policy_ic_work(const void *self);
/* Uniformly random among the ready tasks, deterministic in the seed
 * (policy_random.c). */
extern const cairn__policy_ops cairn__policy_random;

#endif
