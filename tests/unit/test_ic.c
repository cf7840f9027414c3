/* test_ic.c — IC-scheduling ([Ros] §4.3.1): the dag generators, the
 * pebble game, and the "ic" policy's profile against the optimum on the
 * paper's four families — by exhaustive search over all plays (every ideal)
 * on small sizes and by its counting bounds on larger ones — with the
 * node numbering shuffled; plus the online contract (lost leases, results in
 * any order) for every registered policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/dag_gen.h"
#include "plan/ic_exact.h"
#include "plan/ic_game.h"
#include "plan/policy.h"

static uint64_t tri(uint64_t k) { return k * (k + 1) / 2; }

/* The optimum E(t) per family, from the counting arguments of [Ros] §4.3.1:
 * mesh: e eligible nodes lie in distinct rows and columns and need C(e,2)
 *   executed ancestors, and E(t) <= n - t;
 * rmesh: within level l (width w) an interval of j executed nodes frees j-1
 *   nodes of level l+1, so E = w - 1 once level l has started;
 * tree / fft: E(t) = sources - t + (children freed), and a child is freed
 *   only by completing a sibling pair, at most one per two steps (two
 *   children per pair in the FFT, none from the output level). */
static uint32_t optimum(cairn__gen_family f, uint32_t N, uint32_t n, uint32_t t) {
  switch (f) {
  case CAIRN_GEN_MESH: {
    uint32_t d = 0;
    while (tri(d + 1) <= t)
      d++;
    return d + 1 < n - t ? d + 1 : n - t;
  }
  case CAIRN_GEN_RMESH: {
    if (t == 0)
      return N;
    uint32_t l = 0, done = 0; /* level of the t-th execution */
    while (done + (N - l) < t) {
      done += N - l;
      l++;
    }
    return N - l - 1;
  }
  case CAIRN_GEN_TREE:
    return (1u << N) - (t + 1) / 2;
  case CAIRN_GEN_FFT: {
    uint32_t pairs = t / 2, cap = N << (N - 1);
    return (1u << N) - t + 2 * (pairs < cap ? pairs : cap);
  }
  }
  return 0;
}

static uint32_t *random_perm(uint32_t n, uint64_t *st) {
  uint32_t *p = malloc(((size_t)n + 1) * sizeof *p);
  assert_non_null(p);
  for (uint32_t i = 0; i < n; i++)
    p[i] = i;
  for (uint32_t i = n; i > 1; i--) {
    uint32_t j = (uint32_t)(cairn__rand64(st) % i), x = p[i - 1];
    p[i - 1] = p[j];
    p[j] = x;
  }
  return p;
}

static void test_generators(void **state) {
  (void)state;
  cairn_error err;
  uint32_t n, a, b;
  cairn__dag *d = cairn__gen_dag(CAIRN_GEN_MESH, 4, &err);
  assert_non_null(d);
  assert_int_equal(d->n, 10);
  assert_int_equal(d->m, 12);
  for (uint32_t v = 0; v < d->n; v++) { /* parents of <i,j> are <i-1,j>, <i,j-1> */
    cairn__gen_coords(CAIRN_GEN_MESH, 4, v, &a, &b);
    assert_int_equal(cairn__dag_nparents(d, v), (a > 0) + (b > 0));
    for (uint32_t k = d->par_off[v]; k < d->par_off[v + 1]; k++) {
      uint32_t pa, pb;
      cairn__gen_coords(CAIRN_GEN_MESH, 4, d->par[k], &pa, &pb);
      assert_true((pa + 1 == a && pb == b) || (pa == a && pb + 1 == b));
    }
  }
  cairn__dag_free(d);
  d = cairn__gen_dag(CAIRN_GEN_RMESH, 5, &err);
  assert_int_equal(d->n, 15);
  uint32_t sources = 0;
  for (uint32_t v = 0; v < d->n; v++) {
    cairn__gen_coords(CAIRN_GEN_RMESH, 5, v, &a, &b);
    assert_true(a + b < 5);
    if (cairn__dag_nparents(d, v) == 0) {
      sources++;
      assert_int_equal(a + b, 4);
    } else {
      assert_int_equal(cairn__dag_nparents(d, v), 2);
    }
    if (cairn__dag_nchildren(d, v) == 0)
      assert_true(a == 0 && b == 0);
  }
  assert_int_equal(sources, 5);
  cairn__dag_free(d);
  d = cairn__gen_dag(CAIRN_GEN_TREE, 3, &err);
  assert_int_equal(d->n, 15);
  assert_int_equal(d->m, 14);
  cairn__gen_coords(CAIRN_GEN_TREE, 3, 14, &a, &b);
  assert_true(a == 3 && b == 0);
  cairn__dag_free(d);
  d = cairn__gen_dag(CAIRN_GEN_FFT, 3, &err);
  assert_int_equal(d->n, 32);
  assert_int_equal(d->m, 48);
  for (uint32_t v = 8; v < 32; v++) { /* butterfly partners share both children */
    cairn__gen_coords(CAIRN_GEN_FFT, 3, v, &a, &b);
    assert_int_equal(d->par[d->par_off[v]] ^ d->par[d->par_off[v] + 1], 1u << (a - 1));
  }
  cairn__dag_free(d);
  assert_int_equal(cairn__gen_size(CAIRN_GEN_FFT, 0, &n, &err), CAIRN_EINVAL);
  assert_int_equal(cairn__gen_size(CAIRN_GEN_TREE, 30, &n, &err), CAIRN_EINVAL);
  assert_null(cairn__gen_dag(CAIRN_GEN_MESH, 99999, &err));
  cairn__gen_family f;
  assert_int_equal(cairn__gen_family_parse("fft", &f), 0);
  assert_int_equal(f, CAIRN_GEN_FFT);
  assert_int_equal(cairn__gen_family_parse("grid", &f), -1);
}

static void test_game_moves(void **state) {
  (void)state;
  cairn__dag *d = cairn__gen_dag(CAIRN_GEN_TREE, 1, NULL); /* 0,1 -> 2 */
  cairn__ic_game g;
  uint32_t out[2];
  assert_int_equal(cairn__ic_game_init(&g, d), 0);
  assert_int_equal(cairn__ic_game_eligible(&g), 2);
  assert_int_equal(cairn__ic_game_allocate(&g, 2), -1); /* not eligible */
  assert_int_equal(cairn__ic_game_allocate(&g, 0), 0);
  assert_int_equal(cairn__ic_game_allocate(&g, 0), -1);
  assert_int_equal(cairn__ic_game_expire(&g, 0), 0); /* lease lost */
  assert_int_equal(g.state[0], CAIRN_PEBBLE_EBU);
  assert_int_equal(cairn__ic_game_execute(&g, 0, out), -1); /* not allocated */
  assert_int_equal(cairn__ic_game_allocate(&g, 0), 0);
  assert_int_equal(cairn__ic_game_allocate(&g, 1), 0);
  assert_int_equal(cairn__ic_game_execute(&g, 1, out), 0);
  assert_int_equal(cairn__ic_game_eligible(&g), 1);
  assert_int_equal(cairn__ic_game_execute(&g, 0, out), 1);
  assert_int_equal(out[0], 2);
  assert_int_equal(g.state[2], CAIRN_PEBBLE_EBU);
  cairn__ic_game_free(&g);
  uint32_t order[3] = {0, 1, 2}, prof[4];
  assert_int_equal(cairn__ic_profile_of_order(d, order, prof), 2 + 1 + 1 + 0);
  uint32_t bad[3] = {2, 0, 1};
  assert_int_equal(cairn__ic_profile_of_order(d, bad, prof), -1);
  cairn__dag_free(d);
}

/* ic's profile on family f, N, with `shuffles` relabellings, equals want[]. */
static void check_ic(cairn__gen_family f, uint32_t N, const uint32_t *want, int shuffles,
                     uint64_t *st) {
  cairn_error err;
  cairn__dag *d = cairn__gen_dag(f, N, &err);
  assert_non_null(d);
  uint32_t n = d->n, *prof = malloc(((size_t)n + 1) * sizeof *prof);
  for (int s = 0; s <= shuffles; s++) {
    cairn__dag *x = d;
    if (s > 0) {
      uint32_t *perm = random_perm(n, st);
      x = cairn__dag_relabel(d, perm, &err);
      free(perm);
      assert_non_null(x);
    }
    assert_true(cairn__ic_play(x, &cairn__policy_ic, 0, prof, NULL, &err) >= 0);
    for (uint32_t t = 0; t <= n; t++)
      if (prof[t] != want[t])
        fail_msg("%s %u shuffle %d: E(%u) = %u, optimum %u", cairn__gen_family_name(f), N, s, t,
                 prof[t], want[t]);
    if (x != d)
      cairn__dag_free(x);
  }
  free(prof);
  cairn__dag_free(d);
}

/* Small sizes: the optimum by exhaustive search over every play; it also
 * confirms the closed forms above. */
static void test_ic_exhaustive(void **state) {
  (void)state;
  static const struct { cairn__gen_family f; uint32_t lo, hi; } cases[] = {
    {CAIRN_GEN_MESH, 1, 9}, {CAIRN_GEN_RMESH, 1, 9},
    {CAIRN_GEN_TREE, 1, 4}, {CAIRN_GEN_FFT, 1, 3},
  };
  uint64_t st = 12345;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (uint32_t N = cases[c].lo; N <= cases[c].hi; N++) {
      cairn__dag *d = cairn__gen_dag(cases[c].f, N, NULL);
      uint32_t n = d->n, *best = malloc(((size_t)n + 1) * sizeof *best);
      uint64_t ideals = 0;
      assert_int_equal(cairn__ic_max_profile(d, 5000000, best, &ideals), 0);
      for (uint32_t t = 0; t <= n; t++)
        assert_int_equal(best[t], optimum(cases[c].f, N, n, t));
      check_ic(cases[c].f, N, best, 20, &st);
      free(best);
      cairn__dag_free(d);
    }
}

/* Larger sizes: against the bounds of [Ros] §4.3.1, which the IC-optimal plays meet. */
static void test_ic_large(void **state) {
  (void)state;
  static const struct { cairn__gen_family f; uint32_t N[3]; } cases[] = {
    {CAIRN_GEN_MESH, {12, 25, 60}}, {CAIRN_GEN_RMESH, {12, 25, 60}},
    {CAIRN_GEN_TREE, {6, 8, 11}}, {CAIRN_GEN_FFT, {5, 7, 9}},
  };
  uint64_t st = 777;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int k = 0; k < 3; k++) {
      uint32_t N = cases[c].N[k], n;
      assert_int_equal(cairn__gen_size(cases[c].f, N, &n, NULL), CAIRN_OK);
      uint32_t *want = malloc(((size_t)n + 1) * sizeof *want);
      for (uint32_t t = 0; t <= n; t++)
        want[t] = optimum(cases[c].f, N, n, t);
      check_ic(cases[c].f, N, want, 4, &st);
      free(want);
    }
}

/* FIFO on a shuffled reduction tree falls below the optimum: the comparison
 * the ic tests make is not vacuous. */
static void test_fifo_not_optimal(void **state) {
  (void)state;
  uint64_t st = 99;
  cairn__dag *d = cairn__gen_dag(CAIRN_GEN_TREE, 4, NULL);
  uint32_t *perm = random_perm(d->n, &st), prof[32], best[32];
  cairn__dag *x = cairn__dag_relabel(d, perm, NULL);
  assert_int_equal(cairn__ic_max_profile(x, 1000000, best, NULL), 0);
  int64_t fifo = cairn__ic_play(x, &cairn__policy_fifo, 0, prof, NULL, NULL);
  int64_t ic = cairn__ic_play(x, &cairn__policy_ic, 0, prof, NULL, NULL);
  int64_t opt = 0;
  for (uint32_t t = 0; t <= d->n; t++)
    opt += best[t];
  assert_int_equal(ic, opt);
  assert_true(fifo < opt);
  free(perm);
  cairn__dag_free(x);
  cairn__dag_free(d);
}

/* Reduction tree with 4 leaves (0,1 -> 4; 2,3 -> 5; 4,5 -> 6): after a
 * sibling pair, ic must not allocate the parent that just became eligible. */
static void test_ic_tree_parent_waits(void **state) {
  (void)state;
  cairn__dag *d = cairn__gen_dag(CAIRN_GEN_TREE, 2, NULL);
  uint32_t order[7], prof[8];
  assert_int_equal(cairn__ic_play(d, &cairn__policy_ic, 0, prof, order, NULL), 4 + 3 + 3 + 2 + 2 + 1 + 1 + 0);
  assert_true(order[2] < 4 && order[3] < 4); /* leaves 3rd and 4th, not the parent */
  assert_int_equal(order[4] + order[5], 4 + 5);
  cairn__dag_free(d);
}

/* Online use: leases lost, results out of order, for every policy. */
static void test_policy_contract(void **state) {
  (void)state;
  uint64_t st = 4242;
  for (const char *const *name = cairn__policy_names(); *name; name++) {
    const cairn__policy_ops *ops = cairn__policy_find(*name);
    assert_non_null(ops);
    for (int round = 0; round < 30; round++) {
      cairn__dag *d = cairn__gen_random(200, 3, 20, round, NULL);
      cairn__ic_game g;
      assert_int_equal(cairn__ic_game_init(&g, d), 0);
      void *pol = ops->create(d, round);
      assert_non_null(pol);
      uint32_t *held = malloc(d->n * sizeof *held), nheld = 0, out[256];
      for (uint32_t v = 0; v < d->n; v++)
        if (g.state[v] == CAIRN_PEBBLE_EBU)
          ops->ready(pol, v);
      uint64_t steps = 0;
      while (g.xeq < d->n) {
        assert_true(++steps < 100000);
        uint64_t r = cairn__rand64(&st) % 10;
        uint32_t v;
        if ((r < 5 || nheld == 0) && ops->pick(pol, &v) == 0) {
          assert_int_equal(cairn__ic_game_allocate(&g, v), 0); /* only ready tasks */
          held[nheld++] = v;
        } else if (nheld == 0) {
          fail_msg("%s: no pick with %u of %u executed, %u eligible", *name, g.xeq, d->n,
                   cairn__ic_game_eligible(&g));
        } else {
          uint32_t i = (uint32_t)(cairn__rand64(&st) % nheld);
          v = held[i];
          held[i] = held[--nheld];
          if (r == 9) { /* lease lost: ready again */
            assert_int_equal(cairn__ic_game_expire(&g, v), 0);
            ops->ready(pol, v);
          } else {
            int k = cairn__ic_game_execute(&g, v, out);
            assert_true(k >= 0);
            ops->executed(pol, v);
            for (int q = 0; q < k; q++)
              ops->ready(pol, out[q]);
          }
        }
      }
      uint32_t v;
      assert_int_equal(ops->pick(pol, &v), -1);
      ops->destroy(pol);
      free(held);
      cairn__ic_game_free(&g);
      cairn__dag_free(d);
    }
  }
}

/* Late result: executed() for a task that was made ready again. */
static void test_ic_late_result(void **state) {
  (void)state;
  cairn__dag *d = cairn__gen_dag(CAIRN_GEN_TREE, 1, NULL);
  void *p = cairn__policy_ic.create(d, 0);
  uint32_t v, w;
  cairn__policy_ic.ready(p, 0);
  cairn__policy_ic.ready(p, 1);
  assert_int_equal(cairn__policy_ic.pick(p, &v), 0);
  cairn__policy_ic.ready(p, v); /* lease lost */
  cairn__policy_ic.executed(p, v); /* yet the first result arrives and is kept */
  assert_int_equal(cairn__policy_ic.pick(p, &w), 0);
  assert_int_not_equal(v, w);
  assert_int_equal(cairn__policy_ic.pick(p, &w), -1);
  cairn__policy_ic.destroy(p);
  cairn__dag_free(d);
}

/* MRY's ▷ on bipartite blocks: a one-source chain ▷ a two-to-one join, not
 * the reverse; a butterfly ▷ a butterfly. */
static void test_block_priority(void **state) {
  (void)state;
  const uint32_t chain[] = {0, 1}, join[] = {0, 0, 1}, bfly[] = {0, 0, 2};
  assert_int_equal(cairn__ic_block_priority(chain, 1, join, 2), 1);
  assert_int_equal(cairn__ic_block_priority(join, 2, chain, 1), 0);
  assert_int_equal(cairn__ic_block_priority(bfly, 2, bfly, 2), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_generators),
    cmocka_unit_test(test_game_moves),
    cmocka_unit_test(test_ic_exhaustive),
    cmocka_unit_test(test_ic_large),
    cmocka_unit_test(test_fifo_not_optimal),
    cmocka_unit_test(test_ic_tree_parent_waits),
    cmocka_unit_test(test_policy_contract),
    cmocka_unit_test(test_ic_late_result),
    cmocka_unit_test(test_block_priority),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
