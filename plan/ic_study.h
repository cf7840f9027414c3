/* ic_study.h — how close a policy comes to the exact optimum of the IC Pebble
 * Game ([Ros] §4.3.1) on random small dags: the evidence behind the "ic"
 * policy's general-dag heuristic (tests/unit/test_ic_random.c, bench-ic).
 *
 * Dag i (i = 0..count-1) has n <= 24 nodes; each pair of nodes is joined with
 * probability p_i, cycling through 0.15, 0.2, 0.25, 0.3, 0.4, and oriented by
 * a random order; everything is deterministic in seed. For each dag the exact
 * largest AREA and best E(t) per step come from cairn__ic_max_area. Cost:
 * O(count · 2^n · n).
 */
#ifndef CAIRN_IC_STUDY_H
#define CAIRN_IC_STUDY_H

#include <stdint.h>

#include "plan/policy.h"

typedef struct cairn__ic_study_row {
  const char *policy;
  double ratio_mean;        /* mean of AREA / largest AREA */
  double ratio_min;
  uint32_t area_optimal;    /* dags where AREA = largest AREA */
  uint32_t ic_optimal;      /* dags where E(t) = best E(t) at every t */
  uint32_t relabel_same;    /* dags where a renumbered copy gives the same profile */
} cairn__ic_study_row;

typedef struct cairn__ic_study {
  uint32_t count, n;
  uint32_t ic_optimal_exists; /* dags that admit an IC-optimal play */
  cairn__ic_study_row rows[8];
  uint32_t nrows;
} cairn__ic_study;

/* Runs the study for up to 8 policies. 0, or -1 on no memory / n > 24. */
int cairn__ic_study_random(uint32_t count, uint32_t n, uint64_t seed,
                          const cairn__policy_ops *const *policies, uint32_t npolicies,
                          cairn__ic_study *out);

#endif
