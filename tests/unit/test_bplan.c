/* test_bplan.c — the master's broadcast plans (server/dist/bplan.c) on a real core:
 * measured rates and their estimates, and plans built by LCF, bounded-degree
 * LCF and the ECEF family reduced to what the master executes (parent
 * cluster, rank, planned start, sends at once), checked against the
 * planners of plan/plan.h run on the same instance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist_int.h"
#include "tests/support/harness.h"

#define MIB (1024 * 1024)

static cairn__core *open_core(char *dir, size_t len) {
  char db[4200];
  harness_tmpdir(dir, len);
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  cairn_error err = {0};
  cairn__core *c = cairn__core_open(db, 0, NULL, NULL, -1, &err);
  if (!c)
    fail_msg("cannot open a core: %s", err.text);
  /* Rates and plans are read and changed under the core's lock, as in the
   * master: the commit thread takes the journaled rates meanwhile. */
  pthread_mutex_lock(&c->lock);
  return c;
}

static void close_core(cairn__core *c) {
  pthread_mutex_unlock(&c->lock);
  cairn__core_close(c);
}

static void test_rates_measured_and_estimated(void **state) {
  (void)state;
  char dir[4096];
  cairn__core *c = open_core(dir, sizeof dir);
  /* defaults: 1 Gbit/s inside a cluster, 100 Mbit/s otherwise */
  assert_true(fabs(cairn__rate_get(c->dist, "a", "a") - 125e6) < 1);
  assert_true(fabs(cairn__rate_get(c->dist, "", "a") - 12.5e6) < 1);
  assert_true(fabs(cairn__rate_get(c->dist, "a", "b") - 12.5e6) < 1);
  /* a sample sets the pair; the next one moves it half way; plans are
   * re-costed (rates_epoch) when a pair appears or moves by over a quarter */
  uint64_t e = c->dist->rates_epoch;
  cairn__rate_sample(c, "", "a", 8 * MIB, 1000);
  assert_true(fabs(cairn__rate_get(c->dist, "", "a") - 8.0 * MIB) < 1);
  assert_int_equal(c->dist->rates_epoch, e + 1);
  cairn__rate_sample(c, "", "a", 7 * MIB, 1000); /* 7.5: within a quarter */
  assert_int_equal(c->dist->rates_epoch, e + 1);
  cairn__rate_sample(c, "", "a", 4.5 * MIB, 1000); /* 6: a quarter below 8 */
  assert_true(fabs(cairn__rate_get(c->dist, "", "a") - 6.0 * MIB) < 1);
  assert_int_equal(c->dist->rates_epoch, e + 1);
  cairn__rate_sample(c, "", "a", 6 * MIB, 1000);
  cairn__rate_sample(c, "", "a", 2 * MIB, 1000); /* 4: a half below 8 */
  assert_int_equal(c->dist->rates_epoch, e + 2);
  cairn__rate_sample(c, "", "a", 8 * MIB, 1000); /* back to 6 */
  assert_true(fabs(cairn__rate_get(c->dist, "", "a") - 6.0 * MIB) < 1);
  /* unmeasured pairs take their class's mean; inter-cluster pairs borrow
   * the master's while none of theirs is measured */
  assert_true(fabs(cairn__rate_get(c->dist, "", "b") - 6.0 * MIB) < 1);
  assert_true(fabs(cairn__rate_get(c->dist, "a", "b") - 6.0 * MIB) < 1);
  cairn__rate_sample(c, "a", "b", 2 * MIB, 1000);
  assert_true(fabs(cairn__rate_get(c->dist, "c", "d") - 2.0 * MIB) < 1);
  assert_true(fabs(cairn__rate_get(c->dist, "b", "b") - 125e6) < 1);
  cairn__rate_sample(c, "b", "b", 100 * MIB, 1000);
  assert_true(fabs(cairn__rate_get(c->dist, "a", "a") - 100.0 * MIB) < 1);
  /* small downloads and empty measurements are ignored */
  cairn__rate_sample(c, "x", "y", 1000, 1);
  cairn__rate_sample(c, "x", "y", 8 * MIB, 0);
  assert_true(fabs(cairn__rate_get(c->dist, "x", "y") - 2.0 * MIB) < 1);
  json_t *r = cairn__rates_json(c->dist);
  assert_int_equal(json_array_size(r), 3);
  json_decref(r);
  double before = cairn__rate_get(c->dist, "", "a");
  close_core(c);
  /* the rates are journaled: a reopened master has them (to the byte/s) */
  char db[4200];
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  cairn_error err = {0};
  c = cairn__core_open(db, 0, NULL, NULL, -1, &err);
  assert_non_null(c);
  pthread_mutex_lock(&c->lock);
  assert_true(fabs(cairn__rate_get(c->dist, "", "a") - before) < 1);
  assert_true(fabs(cairn__rate_get(c->dist, "a", "b") - 2.0 * MIB) < 1);
  assert_true(fabs(cairn__rate_get(c->dist, "b", "b") - 100.0 * MIB) < 1);
  r = cairn__rates_json(c->dist);
  assert_int_equal(json_array_size(r), 3);
  json_decref(r);
  close_core(c);
}

/* Every cluster is reached from the master through parents planned to
 * start no earlier than their own parent's copy. */
static void check_tree(const mplan *p) {
  assert_int_equal(p->parent[0], -1);
  for (size_t i = 1; i < p->k; i++) {
    size_t x = i, steps = 0;
    while (x != 0 && steps++ <= p->k) {
      assert_true(p->parent[x] >= 0 && (size_t)p->parent[x] < p->k);
      if (p->parent[x] != 0)
        assert_true(p->at[x] >= p->at[p->parent[x]]);
      x = (size_t)p->parent[x];
    }
    assert_int_equal(x, 0);
    assert_true(p->conc[p->parent[i]] >= 1);
  }
  assert_true(p->predicted >= p->lower_bound - 1e-9);
}

static void test_lcf_plan_matches_the_planner(void **state) {
  (void)state;
  char dir[4096];
  cairn__core *c = open_core(dir, sizeof dir);
  char *labels[] = {"c1", "c2", "c3", "c4"};
  int64_t counts[] = {4, 4, 4, 4};
  cairn_error err = {0};
  /* 64 MiB, default rates: one local copy = 0.537 s, C = 10 (the 4 x 4
   * instance of docs/distribution.md) */
  mplan *p = cairn__bplan_build(c->dist, "lcf", 64 * MIB, labels, counts, NULL, 4, &err);
  assert_non_null(p);
  assert_int_equal(p->k, 5);
  assert_int_equal(p->C, 10);
  assert_true(fabs(p->unit - 64.0 * MIB / 125e6) < 1e-9);
  int64_t sizes[] = {1, 4, 4, 4, 4};
  cairn__plan_instance in = {.model = CAIRN_PLAN_1C,
                            .cl = {.C = 10, .k = 5, .size = sizes, .source = 0}};
  cairn__plan_schedule s;
  assert_int_equal(cairn__plan_run(&in, "lcf", &s, &err), CAIRN_OK);
  assert_true(fabs(p->predicted - s.makespan * p->unit) < 1e-9);
  assert_true(fabs(p->lower_bound - s.lower_bound * p->unit) < 1e-9);
  cairn__plan_schedule_free(&s);
  check_tree(p);
  /* the master is a cluster of one: it sends one copy at a time, first to
   * a cluster at time 0 */
  assert_int_equal(p->conc[0], 1);
  int first = 0;
  for (size_t i = 1; i < p->k; i++)
    if (p->parent[i] == 0 && p->rank[i] == 0) {
      first++;
      assert_true(p->at[i] == 0);
    }
  assert_int_equal(first, 1);
  assert_int_equal(cairn__bplan_find(p, "c3"), 3);
  assert_int_equal(cairn__bplan_find(p, ""), 0);
  assert_int_equal(cairn__bplan_find(p, "zz"), -1);
  cairn__bplan_free(p);

  /* degree 1: no cluster sends two inter-cluster copies at once */
  p = cairn__bplan_build(c->dist, "bounded-degree", 64 * MIB, labels, counts, NULL, 4, &err);
  assert_non_null(p);
  check_tree(p);
  for (size_t i = 0; i < p->k; i++)
    assert_int_equal(p->conc[i], 1);
  int64_t deg[] = {1, 1, 1, 1, 1};
  in.cl.degree = deg;
  assert_int_equal(cairn__plan_run(&in, "bounded-degree", &s, &err), CAIRN_OK);
  assert_true(fabs(p->predicted - s.makespan * p->unit) < 1e-9);
  /* docs/distribution.md: 32 units, lower bound 30 */
  assert_true(fabs(s.makespan - 32) < 1e-9);
  assert_true(fabs(s.lower_bound - 30) < 1e-9);
  cairn__plan_schedule_free(&s);
  cairn__bplan_free(p);
  close_core(c);
}

static void test_ecef_plans_use_measured_rates(void **state) {
  (void)state;
  char dir[4096];
  cairn__core *c = open_core(dir, sizeof dir);
  char *labels[] = {"a", "b", "c"};
  int64_t counts[] = {3, 1, 1};
  cairn_error err = {0};
  /* default rates, 1 MiB: the master sends to a, then b; a forwards to c
   * (ties go to the lowest index) */
  mplan *p = cairn__bplan_build(c->dist, "ECEF-LA", MIB, labels, counts, NULL, 3, &err);
  assert_non_null(p);
  check_tree(p);
  assert_int_equal(p->parent[1], 0);
  assert_int_equal(p->parent[2], 0);
  assert_int_equal(p->parent[3], 1);
  assert_int_equal(p->rank[1], 0);
  assert_int_equal(p->rank[2], 1);
  assert_int_equal(p->conc[0], 1);
  double g = MIB / 12.5e6;
  assert_true(fabs(p->at[2] - g) < 1e-9 && fabs(p->at[3] - g) < 1e-9);
  /* a's internal broadcast (2 doublings) starts after its send to c */
  assert_true(fabs(p->predicted - (2 * g + 2 * MIB / 125e6)) < 1e-9);
  json_t *j = cairn__bplan_json(p, 64);
  assert_string_equal(json_string_value(json_object_get(j, "algorithm")), "ECEF-LA");
  assert_int_equal(json_array_size(json_object_get(j, "clusters_order")), 3);
  json_decref(j);
  cairn__bplan_free(p);
  /* b already holds the file when the plan is rebuilt: it costs nothing to
   * reach and serves c from the start, while the master sends to a */
  const uint8_t informed[] = {0, 1, 0};
  p = cairn__bplan_build(c->dist, "ECEF-LA", MIB, labels, counts, informed, 3, &err);
  if (!p)
    fail_msg("%s", err.text);
  check_tree(p);
  assert_int_equal(p->parent[1], 0);
  assert_int_equal(p->parent[3], 2);
  assert_true(p->at[3] < 1e-6);
  cairn__bplan_free(p);
  /* a measured slow link from the master to a and fast links from the
   * master to b: ECEF sends to b first, and b forwards */
  for (int i = 0; i < 3; i++) {
    cairn__rate_sample(c, "", "a", MIB, 2000);
    cairn__rate_sample(c, "", "b", 100 * MIB, 1000);
    cairn__rate_sample(c, "", "c", MIB, 2000);
    cairn__rate_sample(c, "b", "a", 100 * MIB, 1000);
    cairn__rate_sample(c, "b", "c", 100 * MIB, 1000);
    cairn__rate_sample(c, "a", "c", MIB, 2000);
  }
  p = cairn__bplan_build(c->dist, "ECEF", MIB, labels, counts, NULL, 3, &err);
  assert_non_null(p);
  check_tree(p);
  assert_int_equal(p->parent[2], 0);
  assert_int_equal(p->rank[2], 0);
  assert_int_equal(p->parent[1], 2);
  assert_int_equal(p->parent[3], 2);
  cairn__bplan_free(p);
  /* every ECEF variant and the other grid heuristics build a plan */
  const char *algos[] = {"flat", "FEF", "ECEF-LAt", "ECEF-LAT", "BottomUp"};
  for (size_t i = 0; i < 5; i++) {
    p = cairn__bplan_build(c->dist, algos[i], MIB, labels, counts, NULL, 3, &err);
    assert_non_null(p);
    check_tree(p);
    cairn__bplan_free(p);
  }
  /* too many clusters for the grid heuristics: lcf plans instead */
  size_t many = CAIRN__BPLAN_GRID_MAX + 1;
  char **ml = calloc(many, sizeof *ml);
  int64_t *mc = calloc(many, sizeof *mc);
  for (size_t i = 0; i < many; i++) {
    ml[i] = malloc(16);
    snprintf(ml[i], 16, "n%06zu", i);
    mc[i] = 1 + (int64_t)(i % 3);
  }
  p = cairn__bplan_build(c->dist, "ECEF-LA", 64 * MIB, ml, mc, NULL, many, &err);
  assert_non_null(p);
  assert_string_equal(p->algorithm, "lcf");
  assert_int_equal(p->k, many + 1);
  check_tree(p);
  cairn__bplan_free(p);
  for (size_t i = 0; i < many; i++)
    free(ml[i]);
  free(ml);
  free(mc);
  assert_null(cairn__bplan_algorithm("ecef"));
  assert_string_equal(cairn__bplan_algorithm("online"), "online");
  pthread_mutex_unlock(&c->lock); /* set_bplan takes it itself */
  assert_int_equal(cairn__core_set_bplan(c, "nope", &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "ECEF-LA"));
  cairn__core_close(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rates_measured_and_estimated),
    cmocka_unit_test(test_lcf_plan_matches_the_planner),
    cmocka_unit_test(test_ecef_plans_use_measured_rates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
