/* ic_study.c — policies against the exact IC Pebble Game optimum ([Ros]
 * §4.3.1) on random small dags; see ic_study.h. O(count · 2^n · n). */
#include "plan/ic_study.h"

#include <stdlib.h>
#include <string.h>

#include "plan/dag_gen.h"
#include "plan/ic_exact.h"
#include "plan/ic_game.h"

static cairn__dag *random_small(uint32_t n, uint32_t permille, uint64_t *st) {
  uint32_t rank[24];
  cairn__edge e[24 * 23 / 2];
  uint64_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    rank[i] = i;
  for (uint32_t i = n; i > 1; i--) {
    uint32_t j = (uint32_t)(cairn__rand64(st) % i), x = rank[i - 1];
    rank[i - 1] = rank[j];
    rank[j] = x;
  }
  for (uint32_t a = 0; a < n; a++)
    for (uint32_t b = a + 1; b < n; b++)
      if (cairn__rand64(st) % 1000 < permille)
        e[m++] = rank[a] < rank[b] ? (cairn__edge){a, b} : (cairn__edge){b, a};
  return cairn__dag_build(n, e, m, NULL);
}

int cairn__ic_study_random(uint32_t count, uint32_t n, uint64_t seed,
                          const cairn__policy_ops *const *policies, uint32_t npolicies,
                          cairn__ic_study *out) {
  static const uint32_t permille[] = {150, 200, 250, 300, 400};
  uint32_t best[25], opt[25], prof[25], prof2[25], perm[24];
  uint64_t st = seed;
  if (n > 24 || npolicies > 8)
    return -1;
  memset(out, 0, sizeof *out);
  out->count = count;
  out->n = n;
  out->nrows = npolicies;
  for (uint32_t k = 0; k < npolicies; k++) {
    out->rows[k].policy = policies[k]->name;
    out->rows[k].ratio_min = 1.0;
  }
  for (uint32_t i = 0; i < count; i++) {
    cairn__dag *d = random_small(n, permille[i % 5], &st), *r = NULL;
    if (!d)
      return -1;
    for (uint32_t v = 0; v < n; v++)
      perm[v] = v;
    for (uint32_t v = n; v > 1; v--) {
      uint32_t j = (uint32_t)(cairn__rand64(&st) % v), x = perm[v - 1];
      perm[v - 1] = perm[j];
      perm[j] = x;
    }
    r = cairn__dag_relabel(d, perm, NULL);
    int64_t max = cairn__ic_max_area(d, best, opt), sum = 0;
    if (!r || max <= 0) {
      cairn__dag_free(d);
      cairn__dag_free(r);
      return -1;
    }
    for (uint32_t t = 0; t <= n; t++)
      sum += best[t];
    out->ic_optimal_exists += sum == max;
    for (uint32_t k = 0; k < npolicies; k++) {
      cairn__ic_study_row *row = &out->rows[k];
      int64_t a = cairn__ic_play(d, policies[k], i, prof, NULL, NULL);
      int64_t a2 = cairn__ic_play(r, policies[k], i, prof2, NULL, NULL);
      if (a < 0 || a2 < 0) {
        cairn__dag_free(d);
        cairn__dag_free(r);
        return -1;
      }
      double ratio = (double)a / (double)max;
      row->ratio_mean += ratio / count;
      if (ratio < row->ratio_min)
        row->ratio_min = ratio;
      row->area_optimal += a == max;
      row->ic_optimal += memcmp(prof, best, (n + 1) * sizeof *prof) == 0;
      row->relabel_same += memcmp(prof, prof2, (n + 1) * sizeof *prof) == 0;
    }
    cairn__dag_free(d);
    cairn__dag_free(r);
  }
  return 0;
}
