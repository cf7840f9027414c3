/* ic_exact.h — exact optima of the IC Pebble Game ([Ros] §4.3.1) on small
 * dags, to check policies against: the best eligibility at every step, the
 * largest AREA, and the priority relation ▷ between bipartite building blocks
 * of Malewicz–Rosenberg–Yurkewych.
 *
 * A dag admits an IC-optimal schedule iff one order reaches best[t] for every
 * t at once, i.e. iff the largest AREA equals Σ_t best[t].
 */
#ifndef CAIRN_IC_EXACT_H
#define CAIRN_IC_EXACT_H

#include <stdint.h>

#include "plan/dag.h"

/* best[t] (t = 0..n) = the largest E(t) over all plays, i.e. over all sets of
 * t executed tasks closed under parents (ideals), found by enumerating every
 * ideal: O(I·(n + m)) time for I ideals, O(n) memory. Stops with -1 once more
 * than max_ideals ideals were seen; -2 on no memory; else 0, with the count in
 * *ideals (if not NULL). This equals the exhaustive search over all
 * topological orders, since the prefixes of those orders are the ideals. */
int cairn__ic_max_profile(const cairn__dag *d, uint64_t max_ideals, uint32_t *best,
                         uint64_t *ideals);

/* Largest AREA over all plays, by dynamic programming over the ideals seen as
 * subsets (n <= 24): O(2^n · n) time, 4·2^n bytes. Writes best[t] as above
 * and, if opt is not NULL, the profile of one AREA-optimal play to opt[n+1].
 * Returns the AREA, -1 if n > 24 or the dag has a cycle, -2 on no memory. */
int64_t cairn__ic_max_area(const cairn__dag *d, uint32_t *best, uint32_t *opt);

/* The priority relation G1 ▷ G2 of Malewicz–Rosenberg–Yurkewych for two
 * bipartite blocks with s1, s2 sources whose IC-optimal plays make e1[x]
 * (x = 0..s1) and e2[y] (y = 0..s2) sinks eligible: 1 iff executing G1's
 * sources first never loses eligibility,
 *   e1[x] + e2[y] <= e1[min(s1, x+y)] + e2[max(0, x+y-s1)]
 * for all x <= s1, y <= s2; else 0. O(s1·s2). */
int cairn__ic_block_priority(const uint32_t *e1, uint32_t s1, const uint32_t *e2, uint32_t s2);

#endif
