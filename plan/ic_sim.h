/* ic_sim.h — a stochastic master–worker run of the IC Pebble Game ([Ros]
 * §4.2 "temporal unpredictability", §4.3.1): W volunteers poll the master,
 * task times are heavy-tailed, some volunteers take a task and never return,
 * leases expire and the task is reissued. Measures the gridlock the "ic"
 * policy is meant to avoid: "no work" answers while the job is unfinished,
 * worker idle time, and makespan.
 *
 * Model (time in units of the mean task time):
 *   - a volunteer asks for work; if the policy has a ready task it gets it
 *     with a lease of `lease`; else it is told "no work" and asks again after
 *     `poll`;
 *   - with probability `dropout` the volunteer vanishes with the task (a new
 *     volunteer takes its place at once, so W stays fixed); the task returns
 *     to the policy when its lease expires;
 *   - otherwise it returns the result after a Pareto(alpha) time of mean 1;
 *     a result after the lease expired is refused (HTTP 409) and the volunteer
 *     asks again;
 *   - task times and dropouts depend only on (seed, task, attempt), so two
 *     policies run with the same seed meet the same volunteers.
 * Cost: O((n + reissues + polls) log(n + W)) time plus the policy's own
 * cost; 21 bytes per task plus 24 per pending event.
 */
#ifndef CAIRN_IC_SIM_H
#define CAIRN_IC_SIM_H

#include <stdint.h>

#include "common/error.h"
#include "plan/dag.h"
#include "plan/policy.h"

typedef struct cairn__sim_params {
  uint32_t workers;   /* W >= 1 */
  double dropout;     /* 0 <= rate < 1: share of allocations never returned */
  double lease;       /* > 0 */
  double poll;        /* > 0: delay before asking again after "no work" */
  double alpha;       /* Pareto shape > 1 (1.5: infinite variance) */
  uint64_t seed;
} cairn__sim_params;

/* W = 32, dropout 0.05, lease 10, poll 0.25, alpha 1.5, seed 1. */
cairn__sim_params cairn__sim_defaults(void);

typedef struct cairn__sim_result {
  double makespan;        /* time the last task was executed */
  double idle_fraction;   /* idle worker time / (W · makespan) */
  uint64_t no_work;       /* "no work" answers before the job finished */
  uint64_t allocations;   /* tasks handed out, reissues included */
  uint64_t expired;       /* leases that expired (task reissued) */
  uint64_t dropped;       /* volunteers that vanished with a task */
  uint64_t refused;       /* late results refused */
} cairn__sim_result;

/* Runs the job d (acyclic) under ops. CAIRN_OK, or CAIRN_EINVAL for bad
 * parameters / a cycle, CAIRN_ENOMEM. */
cairn_status cairn__sim_run(const cairn__dag *d, const cairn__policy_ops *ops,
                           const cairn__sim_params *p, cairn__sim_result *r, cairn_error *err);

#endif
