/* test_plan_lcf.c — [KKW] planners against the exhaustive optimum, the
 * paper's bounds and its §3.2 bad example; every plan goes through the
 * independent checker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/plan.h"

static int64_t clog2(int64_t x) {
  int64_t r = 0;
  while ((INT64_C(1) << r) < x)
    r++;
  return r;
}

/* Runs algo on a hand-built cluster instance, checks the plan, returns the
 * makespan (and the lower bound through *lb). */
static int64_t plan_checked(cairn__plan_model model, const cairn__plan_clusters *cl, const char *algo, int64_t *lb) {
  cairn__plan_instance in = {0};
  in.model = model;
  in.cl = *cl;
  cairn__plan_schedule s;
  cairn_error err = {0};
  cairn_status st = cairn__plan_run(&in, algo, &s, &err);
  if (st != CAIRN_OK)
    fail_msg("%s: %s", algo, err.text);
  double mk = -1;
  st = cairn__plan_check(&in, &s, &mk, &err);
  if (st != CAIRN_OK)
    fail_msg("%s plan infeasible: %s", algo, err.text);
  assert_true(mk == s.makespan);
  if (lb)
    *lb = (int64_t)s.lower_bound;
  cairn__plan_schedule_free(&s);
  return (int64_t)mk;
}

typedef struct sweep_stats {
  int instances;
  double worst_ratio;
  int64_t worst_gap; /* max of alg - OPT */
  int64_t worst_lb_gap;
} sweep_stats;

/* Every partition of n into cluster sizes, every source, C in 1..cmax. */
static void each_instance(int64_t n, int64_t cmax, void (*fn)(cairn__plan_clusters *, void *), void *arg) {
  int64_t parts[8];
  int np = 0;
  /* iterative generation of non-increasing partitions */
  int64_t a[9];
  int k = 0;
  a[0] = n;
  k = 1;
  for (;;) {
    np = k;
    memcpy(parts, a, (size_t)k * sizeof *a);
    for (int src = 0; src < np; src++) {
      if (src > 0 && parts[src] == parts[src - 1])
        continue;
      for (int64_t C = 1; C <= cmax; C++) {
        cairn__plan_clusters cl = {0};
        cl.C = C;
        cl.k = (size_t)np;
        cl.size = parts;
        cl.source = (size_t)src;
        fn(&cl, arg);
      }
    }
    /* next partition in reverse lexicographic order */
    int rem = 0;
    while (k > 0 && a[k - 1] == 1) {
      rem++;
      k--;
    }
    if (k == 0)
      break;
    a[k - 1]--;
    rem++;
    int64_t v = a[k - 1];
    while (rem > v) {
      a[k++] = v;
      rem -= (int)v;
    }
    a[k++] = rem;
  }
}

static void one_broadcast(cairn__plan_clusters *cl, void *arg) {
  sweep_stats *st = arg;
  int64_t opt = cairn__bcast_optimum(cl);
  assert_true(opt >= 0);
  int64_t lb = 0, lcf = plan_checked(CAIRN_PLAN_1C, cl, "lcf", &lb);
  assert_true(lb <= opt);          /* Theorem 3.2 is a lower bound */
  assert_true(opt <= lcf);         /* nothing beats the optimum */
  assert_true(lcf <= 2 * opt + 7); /* Theorem 3.3 */
  st->instances++;
  if (opt > 0 && (double)lcf / (double)opt > st->worst_ratio)
    st->worst_ratio = (double)lcf / (double)opt;
  if (lcf - opt > st->worst_gap)
    st->worst_gap = lcf - opt;
  if (opt - lb > st->worst_lb_gap)
    st->worst_lb_gap = opt - lb;
}

static void test_lcf_vs_exhaustive_optimum(void **state) {
  (void)state;
  sweep_stats st = {0};
  for (int64_t n = 1; n <= 8; n++)
    each_instance(n, 5, one_broadcast, &st);
  print_message("LCF broadcast: %d instances (N <= 8, C <= 5): worst LCF/OPT %.3f, worst LCF-OPT %lld, "
                "worst OPT-LB %lld\n",
                st.instances, st.worst_ratio, (long long)st.worst_gap, (long long)st.worst_lb_gap);
  assert_true(st.instances >= 500);
}

/* Multicast (§4) and the degree (§5.1–5.2) and matching (§5.3–5.4) models on
 * every tiny instance with a few receiver / bound patterns. */
static void one_variants(cairn__plan_clusters *base, void *arg) {
  sweep_stats *st = arg;
  int64_t n = 0;
  for (size_t i = 0; i < base->k; i++)
    n += base->size[i];
  if (n > 6 || base->C > 3)
    return;
  int64_t mem[8], deg[8];
  for (int pattern = 0; pattern < 3; pattern++) {
    cairn__plan_clusters cl = *base;
    for (size_t i = 0; i < cl.k; i++)
      mem[i] = pattern == 0 ? (i % 2 ? cl.size[i] : 0) : pattern == 1 ? (i == cl.source ? 0 : 1) : cl.size[i] / 2;
    cl.members = mem;
    int64_t opt = cairn__bcast_optimum(&cl), lb = 0;
    int64_t a = plan_checked(CAIRN_PLAN_1C, &cl, "lcf", &lb);
    assert_true(lb <= opt && opt <= a && a <= 2 * opt + 10); /* Theorems 4.2, 4.3 */
    st->instances++;
    for (int64_t d = 1; d <= 2; d++) {
      cairn__plan_clusters cd = *base;
      for (size_t i = 0; i < cd.k; i++)
        deg[i] = d;
      cd.degree = deg;
      cd.members = pattern == 2 ? mem : NULL;
      opt = cairn__bcast_optimum(&cd);
      a = plan_checked(CAIRN_PLAN_1C, &cd, "bounded-degree", &lb);
      assert_true(lb <= opt && opt <= a && a <= 3 * opt + 10); /* Theorems 5.1, 5.2 */
      st->instances++;
      cairn__plan_clusters cb = *base;
      cb.B = d;
      cb.members = pattern == 2 ? mem : NULL;
      opt = cairn__bcast_optimum(&cb);
      a = plan_checked(CAIRN_PLAN_1C, &cb, "bounded-matching", &lb);
      assert_true(lb <= opt && opt <= a && a <= 2 * opt + 10); /* Theorems 5.4–5.6 */
      st->instances++;
      if ((double)a / (double)(opt ? opt : 1) > st->worst_ratio)
        st->worst_ratio = (double)a / (double)(opt ? opt : 1);
    }
  }
}

static void test_variants_vs_exhaustive_optimum(void **state) {
  (void)state;
  sweep_stats st = {0};
  for (int64_t n = 1; n <= 6; n++)
    each_instance(n, 3, one_variants, &st);
  print_message("multicast / bounded-degree / bounded-matching: %d instances checked against OPT\n", st.instances);
  assert_true(st.instances > 500);
}

/* §3.2: K0 of n0, K1 of n1 >= n0 and n0 - 1 singletons. */
static void test_bad_example(void **state) {
  (void)state;
  const int64_t cases[][3] = {{8, 8, 2}, {16, 16, 3}, {5, 9, 4}, {32, 40, 2}, {64, 64, 5}, {100, 128, 3}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    int64_t n0 = cases[c][0], n1 = cases[c][1], C = cases[c][2];
    size_t k = (size_t)n0 + 1;
    int64_t *size = calloc(k, sizeof *size);
    size[0] = n0;
    size[1] = n1;
    for (size_t i = 2; i < k; i++)
      size[i] = 1;
    cairn__plan_clusters cl = {.C = C, .k = k, .size = size, .source = 0};
    int64_t lb = 0, lcf = plan_checked(CAIRN_PLAN_1C, &cl, "lcf", &lb);
    assert_int_equal(lcf, clog2(n0) + C + clog2(n1));

    /* the faster schedule of §3.2: (i) one local copy, (ii) one node sends to
     * K1 while the other broadcasts locally, (iii) K0 then serves the n0 - 1
     * singletons, (iv) K1 broadcasts on arrival */
    cairn__plan_instance in = {.model = CAIRN_PLAN_1C, .cl = cl};
    cairn__plan_schedule s;
    cairn__plan_schedule_init(&s, CAIRN_PLAN_1C, "section-3.2");
    cairn__plan_node to;
    to = (cairn__plan_node){0, 1};
    assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 0}, &to, 1, 0, 1), 0);
    to = (cairn__plan_node){1, 0};
    assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 0}, &to, 1, 1, (double)(1 + C)), 0);
    /* local broadcast among members 1..n0-1 of K0 from t = 1 */
    int64_t have = 1, t = 1; /* members 1..have hold it, member 0 is away */
    while (have < n0 - 1) {
      int64_t add = have < n0 - 1 - have ? have : n0 - 1 - have;
      for (int64_t j = 0; j < add; j++) {
        to = (cairn__plan_node){0, 1 + have + j};
        assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 1 + j}, &to, 1, (double)t,
                                                 (double)t + 1), 0);
      }
      have += add;
      t++;
    }
    assert_int_equal(t - 1, clog2(n0 - 1));
    for (int64_t j = 0; j < n0 - 1; j++) {
      to = (cairn__plan_node){2 + j, 0};
      assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 1 + j}, &to, 1, (double)t,
                                               (double)(t + C)), 0);
    }
    /* K1 doubles from 1 + C */
    int64_t h1 = 1, t1 = 1 + C;
    while (h1 < n1) {
      int64_t add = h1 < n1 - h1 ? h1 : n1 - h1;
      for (int64_t j = 0; j < add; j++) {
        to = (cairn__plan_node){1, h1 + j};
        assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){1, j}, &to, 1, (double)t1,
                                                 (double)t1 + 1), 0);
      }
      h1 += add;
      t1++;
    }
    cairn_error err = {0};
    double mk = 0;
    if (cairn__plan_check(&in, &s, &mk, &err) != CAIRN_OK)
      fail_msg("§3.2 schedule rejected: %s", err.text);
    int64_t want = 1 + (C + clog2(n1) > clog2(n0 - 1) + C ? C + clog2(n1) : clog2(n0 - 1) + C);
    assert_int_equal((int64_t)mk, want);
    assert_true(lb <= want);
    print_message("§3.2 n0=%lld n1=%lld C=%lld: LCF %lld = ceil(log n0)+C+ceil(log n1), faster schedule %lld, "
                  "lower bound %lld\n",
                  (long long)n0, (long long)n1, (long long)C, (long long)lcf, (long long)want, (long long)lb);
    cairn__plan_schedule_free(&s);
    free(size);
  }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Random mid-size instances: every planner's plan is feasible and at least
 * the lower bound; postal LCF and Interleaved LCF too. */
static void test_random_feasible(void **state) {
  (void)state;
  for (int it = 0; it < 60; it++) {
    size_t k = 1 + rnd() % 40;
    int64_t size[40], deg[40], mem[40];
    for (size_t i = 0; i < k; i++) {
      size[i] = 1 + (int64_t)(rnd() % (it % 3 == 0 ? 200 : 12));
      deg[i] = 1 + (int64_t)(rnd() % 4);
      mem[i] = (int64_t)(rnd() % (uint64_t)(size[i] + 1));
    }
    cairn__plan_clusters cl = {.C = 1 + (int64_t)(rnd() % 8), .k = k, .size = size, .source = rnd() % k};
    int64_t lb, a;
    a = plan_checked(CAIRN_PLAN_1C, &cl, "lcf", &lb);
    assert_true(lb <= a);
    a = plan_checked(CAIRN_PLAN_POSTAL, &cl, "lcf", &lb);
    assert_true(lb <= a);
    a = plan_checked(CAIRN_PLAN_POSTAL, &cl, "interleaved-lcf", &lb);
    assert_true(lb <= a);
    cairn__plan_clusters cm = cl;
    cm.members = mem;
    a = plan_checked(CAIRN_PLAN_1C, &cm, "lcf", &lb);
    assert_true(lb <= a);
    cairn__plan_clusters cd = cl;
    cd.degree = deg;
    a = plan_checked(CAIRN_PLAN_1C, &cd, "bounded-degree", &lb);
    assert_true(lb <= a);
    cd.members = mem;
    a = plan_checked(CAIRN_PLAN_1C, &cd, "bounded-degree", &lb);
    assert_true(lb <= a);
    cairn__plan_clusters cb = cl;
    cb.B = 1 + (int64_t)(rnd() % 6);
    a = plan_checked(CAIRN_PLAN_1C, &cb, "bounded-matching", &lb);
    assert_true(lb <= a);
    cb.members = mem;
    a = plan_checked(CAIRN_PLAN_1C, &cb, "bounded-matching", &lb);
    assert_true(lb <= a);
  }
}

/* The checker rejects what the model forbids. */
static void test_checker_rejects(void **state) {
  (void)state;
  int64_t size[] = {2, 2};
  int64_t deg[] = {1, 1};
  cairn__plan_instance in = {.model = CAIRN_PLAN_1C, .cl = {.C = 3, .k = 2, .size = size}};
  cairn_error err = {0};
  cairn__plan_schedule s;
  cairn__plan_node a = {0, 1}, b = {1, 0}, c = {1, 1};
  /* sender without the message */
  cairn__plan_schedule_init(&s, CAIRN_PLAN_1C, "x");
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 1}, &b, 1, 0, 3), 0);
  assert_int_equal(cairn__plan_check(&in, &s, NULL, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "never holds"));
  cairn__plan_schedule_free(&s);
  /* wrong duration */
  cairn__plan_schedule_init(&s, CAIRN_PLAN_1C, "x");
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 0}, &b, 1, 0, 2), 0);
  assert_int_equal(cairn__plan_check(&in, &s, NULL, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "lasts"));
  cairn__plan_schedule_free(&s);
  /* one port: the source sends twice at once */
  cairn__plan_schedule_init(&s, CAIRN_PLAN_1C, "x");
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 0}, &b, 1, 0, 3), 0);
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 0}, &a, 1, 1, 2), 0);
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){1, 0}, &c, 1, 3, 4), 0);
  assert_int_equal(cairn__plan_check(&in, &s, NULL, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "overlap"));
  cairn__plan_schedule_free(&s);
  /* feasible, then the degree bound of 1 is broken by two parallel transfers */
  cairn__plan_schedule_init(&s, CAIRN_PLAN_1C, "x");
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 0}, &a, 1, 0, 1), 0);
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 0}, &b, 1, 1, 4), 0);
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, 1}, &c, 1, 1, 4), 0);
  double mk = 0;
  assert_int_equal(cairn__plan_check(&in, &s, &mk, &err), CAIRN_OK);
  assert_true(mk == 4);
  in.cl.degree = deg;
  assert_int_equal(cairn__plan_check(&in, &s, NULL, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "degree"));
  in.cl.degree = NULL;
  in.cl.B = 1;
  assert_int_equal(cairn__plan_check(&in, &s, NULL, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "exceed B"));
  in.cl.B = 0;
  /* missing receiver */
  s.n = 2;
  assert_int_equal(cairn__plan_check(&in, &s, NULL, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "never receives"));
  cairn__plan_schedule_free(&s);
}

/* Compact LCF on a big instance; expansion and check on a mid-size one. */
static void test_big(void **state) {
  (void)state;
  size_t k = 20000;
  int64_t *size = malloc(k * sizeof *size);
  for (size_t i = 0; i < k; i++)
    size[i] = 1 + (int64_t)(rnd() % 100);
  cairn__plan_clusters cl = {.C = 7, .k = k, .size = size, .source = 3};
  cairn__bcast_compact c;
  cairn_error err = {0};
  assert_int_equal(cairn__bcast_lcf(&cl, &c, &err), CAIRN_OK);
  int64_t lb = cairn__bcast_lower_bound(&cl, 0);
  assert_true(c.makespan >= lb);
  assert_int_equal(c.ndest, k - 1);
  cairn__plan_schedule s;
  cairn__plan_schedule_init(&s, CAIRN_PLAN_1C, "lcf");
  assert_int_equal(cairn__bcast_expand(&c, &s, &err), CAIRN_OK);
  cairn__plan_schedule_finish(&s);
  cairn__plan_instance in = {.model = CAIRN_PLAN_1C, .cl = cl};
  double mk = 0;
  if (cairn__plan_check(&in, &s, &mk, &err) != CAIRN_OK)
    fail_msg("%s", err.text);
  assert_true(mk == (double)c.makespan);
  print_message("LCF on %zu clusters / %zu transfers: makespan %lld, lower bound %lld, p = %lld\n", k, s.n,
                (long long)c.makespan, (long long)lb, (long long)cairn__bcast_global_steps(&cl));
  cairn__plan_schedule_free(&s);
  cairn__bcast_compact_free(&c);
  free(size);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_lcf_vs_exhaustive_optimum),
    cmocka_unit_test(test_variants_vs_exhaustive_optimum),
    cmocka_unit_test(test_bad_example),
    cmocka_unit_test(test_random_feasible),
    cmocka_unit_test(test_checker_rejects),
    cmocka_unit_test(test_big),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
