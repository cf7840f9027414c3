/* bench/ic.c — evidence for IC-scheduling ([Ros] §4.2, §4.3.1):
 *   1. a 10^6-task mesh built and fully scheduled by ic: time and bytes/task;
 *   2. AREA of ic, fifo and random on the four families, ids shuffled, beside
 *      the optimum from the counting bounds of [Ros] §4.3.1;
 *   3. ic against the exact AREA optimum on 300 random 14-node dags;
 *   4. stochastic volunteer runs (Pareto task times, dropouts, leases) on
 *      mesh, FFT and random dags of about 10^4 tasks: medians over seeds of
 *      makespan, idle fraction and "no work" answers, and ic/fifo ratios.
 * usage: bench-ic [SEEDS]   (default 7) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "plan/dag_gen.h"
#include "plan/ic_game.h"
#include "plan/ic_sim.h"
#include "plan/ic_study.h"
#include "plan/policy.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static long maxrss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int k) {
  qsort(v, (size_t)k, sizeof *v, cmp_double);
  return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static uint64_t tri(uint64_t k) { return k * (k + 1) / 2; }

/* Optimum AREA from the bounds of [Ros] §4.3.1 (the closed forms of tests/unit/test_ic.c). */
static int64_t optimum_area(cairn__gen_family f, uint32_t N, uint32_t n) {
  int64_t area = 0;
  for (uint32_t t = 0; t <= n; t++) {
    uint32_t e = 0;
    if (f == CAIRN_GEN_MESH) {
      uint32_t d = 0;
      while (tri(d + 1) <= t)
        d++;
      e = d + 1 < n - t ? d + 1 : n - t;
    } else if (f == CAIRN_GEN_RMESH) {
      uint32_t l = 0, done = 0;
      while (t > 0 && done + (N - l) < t) {
        done += N - l;
        l++;
      }
      e = t == 0 ? N : N - l - 1;
    } else if (f == CAIRN_GEN_TREE) {
      e = (1u << N) - (t + 1) / 2;
    } else {
      uint32_t pairs = t / 2, cap = N << (N - 1);
      e = (1u << N) - t + 2 * (pairs < cap ? pairs : cap);
    }
    area += e;
  }
  return area;
}

static cairn__dag *shuffled(cairn__dag *d, uint64_t seed) {
  uint32_t *perm = malloc(((size_t)d->n + 1) * sizeof *perm);
  for (uint32_t i = 0; i < d->n; i++)
    perm[i] = i;
  for (uint32_t i = d->n; i > 1; i--) {
    uint32_t j = (uint32_t)(cairn__rand64(&seed) % i), x = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = x;
  }
  cairn__dag *r = cairn__dag_relabel(d, perm, NULL);
  free(perm);
  cairn__dag_free(d);
  return r;
}

static void families(void) {
  static const struct { cairn__gen_family f; uint32_t N; } cases[] = {
    {CAIRN_GEN_MESH, 141}, {CAIRN_GEN_RMESH, 141}, {CAIRN_GEN_TREE, 13}, {CAIRN_GEN_FFT, 10},
  };
  const cairn__policy_ops *pols[] = {&cairn__policy_ic, &cairn__policy_fifo, &cairn__policy_random};
  printf("\n## 2. AREA on the [Ros] §4.3.1 families (ids shuffled) vs the optimum\n");
  printf("%-6s %4s %7s %12s %12s %12s %12s\n", "family", "N", "tasks", "optimum", "ic", "fifo",
         "random");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    cairn__dag *d = shuffled(cairn__gen_dag(cases[c].f, cases[c].N, NULL), 5);
    uint32_t *prof = malloc(((size_t)d->n + 1) * sizeof *prof);
    printf("%-6s %4u %7u %12lld", cairn__gen_family_name(cases[c].f), cases[c].N, d->n,
           (long long)optimum_area(cases[c].f, cases[c].N, d->n));
    for (int k = 0; k < 3; k++)
      printf(" %12lld", (long long)cairn__ic_play(d, pols[k], 1, prof, NULL, NULL));
    printf("\n");
    free(prof);
    cairn__dag_free(d);
  }
}

static void random_study(void) {
  const cairn__policy_ops *pols[] = {&cairn__policy_ic, &cairn__policy_fifo, &cairn__policy_random};
  cairn__ic_study s;
  printf("\n## 3. 300 random 14-node dags, exact AREA optimum by DP over subsets\n");
  if (cairn__ic_study_random(300, 14, 2024, pols, 3, &s) != 0) {
    printf("study failed (out of memory)\n");
    return;
  }
  printf("%u of 300 dags admit an IC-optimal play\n", s.ic_optimal_exists);
  printf("%-7s %10s %10s %13s %11s %18s\n", "policy", "AREA/max", "worst", "AREA-optimal",
         "IC-optimal", "same renumbered");
  for (uint32_t k = 0; k < s.nrows; k++)
    printf("%-7s %10.4f %10.4f %9u/300 %7u/300 %14u/300\n", s.rows[k].policy,
           s.rows[k].ratio_mean, s.rows[k].ratio_min, s.rows[k].area_optimal, s.rows[k].ic_optimal,
           s.rows[k].relabel_same);
}

static void stochastic(int seeds) {
  static const uint32_t workers[] = {16, 64, 256};
  const cairn__policy_ops *pols[] = {&cairn__policy_ic, &cairn__policy_fifo, &cairn__policy_random};
  cairn__dag *dags[3] = {
    shuffled(cairn__gen_dag(CAIRN_GEN_MESH, 141, NULL), 11),
    shuffled(cairn__gen_dag(CAIRN_GEN_FFT, 10, NULL), 12),
    cairn__gen_random(10000, 3, 100, 13, NULL),
  };
  const char *names[3] = {"mesh 141", "fft 10", "random"};
  cairn__sim_params p = cairn__sim_defaults();
  printf("\n## 4. Volunteer runs: Pareto(%.1f) task times of mean 1, dropout %.2f, lease %g, "
         "poll %g; medians over %d seeds\n",
         p.alpha, p.dropout, p.lease, p.poll, seeds);
  printf("%-9s %6s %4s %-7s %10s %8s %10s %11s %11s\n", "dag", "tasks", "W", "policy", "makespan",
         "idle", "no_work", "ms ic/this", "nw ic/this");
  for (int g = 0; g < 3; g++)
    for (size_t w = 0; w < sizeof workers / sizeof workers[0]; w++) {
      double ms[3][64], idle[3][64], nw[3][64], med[3][3];
      for (int k = 0; k < 3; k++) {
        for (int s = 0; s < seeds; s++) {
          cairn__sim_result r;
          p.workers = workers[w];
          p.seed = 1000 + (uint64_t)s;
          if (cairn__sim_run(dags[g], pols[k], &p, &r, NULL) != CAIRN_OK) {
            printf("simulation failed\n");
            return;
          }
          ms[k][s] = r.makespan;
          idle[k][s] = r.idle_fraction;
          nw[k][s] = (double)r.no_work;
        }
        med[k][0] = median(ms[k], seeds);
        med[k][1] = median(idle[k], seeds);
        med[k][2] = median(nw[k], seeds);
      }
      for (int k = 0; k < 3; k++)
        printf("%-9s %6u %4u %-7s %10.1f %8.4f %10.0f %11.3f %11.3f\n", names[g], dags[g]->n,
               workers[w], pols[k]->name, med[k][0], med[k][1], med[k][2], med[0][0] / med[k][0],
               med[k][2] > 0 ? med[0][2] / med[k][2] : 1.0);
    }
  for (int g = 0; g < 3; g++)
    cairn__dag_free(dags[g]);
}

static void million(void) {
  printf("## 1. A 10^6-task mesh (N = 1414): build and schedule with ic\n");
  long rss0 = maxrss_kb();
  double t0 = now_s();
  cairn__dag *d = cairn__gen_dag(CAIRN_GEN_MESH, 1414, NULL);
  double t1 = now_s();
  uint32_t *prof = malloc(((size_t)d->n + 1) * sizeof *prof);
  int64_t area = cairn__ic_play(d, &cairn__policy_ic, 1, prof, NULL, NULL);
  double t2 = now_s();
  long rss1 = maxrss_kb();
  printf("tasks %u, edges %llu: build %.2f s, ic game (every pick, every event) %.2f s; "
         "AREA %lld (optimum %lld)\n",
         d->n, (unsigned long long)d->m, t1 - t0, t2 - t1, (long long)area,
         (long long)optimum_area(CAIRN_GEN_MESH, 1414, d->n));
  printf("peak memory growth %.0f bytes/task (dag %.0f + ic policy 73 + game 5 + profile 4 "
         "bytes/task)\n",
         (double)(rss1 - rss0) * 1024.0 / d->n,
         (8.0 * 2 * (d->n + 1) + 8.0 * d->m) / d->n);
  free(prof);
  cairn__dag_free(d);
}

int main(int argc, char **argv) {
  int seeds = argc > 1 ? atoi(argv[1]) : 7;
  if (seeds < 1 || seeds > 64) {
    fprintf(stderr, "usage: bench-ic [SEEDS 1..64]\n");
    return 1;
  }
  million();
  families();
  random_study();
  stochastic(seeds);
  return 0;
}
