/* test_ic_fanin.c — the cost bound of policy.h for the "ic" policy on wide
 * fan-in dags: R roots and K children, each child listing every root as a
 * parent (R·K edges). Every event (ready, pick, executed, a lost lease) is
 * measured by the policy's own step counter, cairn_policy_ic_work, against
 * (deg+(v) + 1) · (2·CAIRN_IC_NARROW + 1) · (2·log2 n + 3): no event may do
 * work that grows with the other parents of its children. The full size of
 * the issue (R = 4,096, K = 1,000: 4.1 M edges, ~100 MB under ASan) runs
 * here; bench/ic_fanin.c submits it to a real master. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "common/dag.h"
#include "common/policy.h"

/* R roots 0..R-1, then K children R..R+K-1 (each after every root), then
 * K grandchildren, the j-th after child j and after the next child (so the
 * children's own out-degrees are small and the grandchildren are narrow). */
static cairn_dag *fanin(uint32_t R, uint32_t K) {
  uint64_t m = (uint64_t)R * K + 2ull * K, e = 0;
  cairn_edge *edges = malloc(m * sizeof *edges);
  assert_non_null(edges);
  for (uint32_t c = 0; c < K; c++)
    for (uint32_t r = 0; r < R; r++)
      edges[e++] = (cairn_edge){r, R + c};
  for (uint32_t j = 0; j < K; j++) {
    edges[e++] = (cairn_edge){R + j, R + K + j};
    edges[e++] = (cairn_edge){R + (j + 1) % K, R + K + j};
  }
  cairn_error err = {0};
  cairn_dag *d = cairn_dag_build(R + 2 * K, edges, e, &err);
  free(edges);
  assert_non_null(d);
  return d;
}

static uint64_t log2u(uint32_t n) {
  uint64_t l = 0;
  while ((1ull << l) < n)
    l++;
  return l;
}

typedef struct run {
  const cairn_dag *d;
  void *st;
  uint64_t bound_unit, worst_ratio_num, worst_ratio_den, events;
} run;

/* Calls one event and checks its step count against the bound for deg+(v). */
static void check(run *r, uint32_t v, uint64_t before) {
  uint64_t w = cairn_policy_ic_work(r->st) - before;
  uint64_t bound = ((uint64_t)cairn_dag_nchildren(r->d, v) + 1) * r->bound_unit;
  if (w > bound)
    fprintf(stderr, "task %u (out-degree %u): %llu steps > bound %llu\n", v,
            cairn_dag_nchildren(r->d, v), (unsigned long long)w, (unsigned long long)bound);
  assert_true(w <= bound);
  if (w * r->worst_ratio_den > r->worst_ratio_num * ((uint64_t)cairn_dag_nchildren(r->d, v) + 1)) {
    r->worst_ratio_num = w;
    r->worst_ratio_den = (uint64_t)cairn_dag_nchildren(r->d, v) + 1;
  }
  r->events++;
}

/* Plays the whole dag: picks one task at a time; every 7th pick's lease is
 * lost (ready again) once, every 11th pick is executed only after the next
 * pick (results out of order). */
static void play(const cairn_dag *d) {
  const cairn_policy_ops *ops = &cairn_policy_ic;
  run r = {d, ops->create(d, 1), 0, 0, 1, 0};
  assert_non_null(r.st);
  uint64_t lg = log2u(d->n);
  r.bound_unit = (2ull * CAIRN_IC_NARROW + 1) * (2 * lg + 3);
  uint32_t *npend = malloc((size_t)d->n * sizeof *npend);
  uint8_t *lost = calloc(d->n, 1), *done = calloc(d->n, 1);
  assert_non_null(npend);
  assert_non_null(lost);
  assert_non_null(done);
  uint64_t w0;
  for (uint32_t v = 0; v < d->n; v++) {
    npend[v] = cairn_dag_nparents(d, v);
    if (!npend[v]) {
      w0 = cairn_policy_ic_work(r.st);
      ops->ready(r.st, v);
      check(&r, v, w0);
    }
  }
  uint32_t executed = 0, picks = 0, held = UINT32_MAX, v;
  while (executed < d->n) {
    w0 = cairn_policy_ic_work(r.st);
    int got = ops->pick(r.st, &v);
    if (got != 0) { /* nothing ready: only the held-back result is missing */
      assert_int_not_equal(held, UINT32_MAX);
      v = held;
      held = UINT32_MAX;
    } else {
      check(&r, v, w0);
      picks++;
      if (picks % 7 == 0 && !lost[v]) {
        lost[v] = 1;
        w0 = cairn_policy_ic_work(r.st);
        ops->ready(r.st, v);
        check(&r, v, w0);
        continue;
      }
      if (picks % 11 == 0 && held == UINT32_MAX) {
        held = v;
        continue;
      }
    }
    uint32_t batch[2] = {v, UINT32_MAX};
    if (got == 0 && held != UINT32_MAX && picks % 11 != 0) {
      batch[1] = held; /* the held-back result arrives after a later one */
      held = UINT32_MAX;
    }
    for (int b = 0; b < 2 && batch[b] != UINT32_MAX; b++) {
      uint32_t x = batch[b];
      assert_false(done[x]);
      done[x] = 1;
      executed++;
      w0 = cairn_policy_ic_work(r.st);
      ops->executed(r.st, x);
      check(&r, x, w0);
      for (uint32_t i = d->ch_off[x]; i < d->ch_off[x + 1]; i++)
        if (--npend[d->ch[i]] == 0) {
          w0 = cairn_policy_ic_work(r.st);
          ops->ready(r.st, d->ch[i]);
          check(&r, d->ch[i], w0);
        }
    }
  }
  assert_int_equal(ops->pick(r.st, &v), -1);
  fprintf(stderr, "ic fan-in n=%u m=%llu: %llu events, %llu steps in all, worst %.1f steps per "
                  "(out-degree+1) (bound %llu)\n",
          d->n, (unsigned long long)d->m, (unsigned long long)r.events,
          (unsigned long long)cairn_policy_ic_work(r.st),
          (double)r.worst_ratio_num / (double)r.worst_ratio_den, (unsigned long long)r.bound_unit);
  ops->destroy(r.st);
  free(npend);
  free(lost);
  free(done);
}

/* The instance: R = 4,096 roots, K = 1,000 children (wide). */
static void test_fanin_full(void **state) {
  (void)state;
  cairn_dag *d = fanin(4096, 1000);
  play(d);
  cairn_dag_free(d);
}

/* Narrow fan-in (R = CAIRN_IC_NARROW): every child passes each change to all
 * its ready parents, still within the bound. */
static void test_fanin_narrow(void **state) {
  (void)state;
  cairn_dag *d = fanin(CAIRN_IC_NARROW, 5000);
  play(d);
  cairn_dag_free(d);
}

/* Just past the narrow limit, with many roots per child. */
static void test_fanin_wide_small(void **state) {
  (void)state;
  cairn_dag *d = fanin(CAIRN_IC_NARROW + 1, 3000);
  play(d);
  cairn_dag_free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fanin_narrow),
    cmocka_unit_test(test_fanin_wide_small),
    cmocka_unit_test(test_fanin_full),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
