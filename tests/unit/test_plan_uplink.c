/* test_plan_uplink.c — the HNOW planners with shared uplinks (plan_hnow.c,
 * an extension of [WYL]'s model, docs/planning.md): a file crosses to
 * another cluster once and is relayed inside it, no uplink carries two
 * crossings at once, plans stay above the lower bound (which counts the
 * uplinks' load), and without clusters the paper's model is unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/plan.h"

enum { N = 12 };

/* n nodes in clusters of `per`; S0 = R0 = 0.01, 0.1 per unit inside a
 * cluster, 1.0 per unit (S1 + X) between clusters: the runtime's costs
 * at 1000 and 100 Mbit/s, roughly. */
typedef struct net {
  double S0[N], S1[N], R0[N], R1[N], X[N * N];
  size_t cl[N];
} net;

static void net_init(net *t, size_t n, size_t per) {
  for (size_t i = 0; i < n; i++) {
    t->S0[i] = t->R0[i] = 0.01;
    t->S1[i] = 0.1;
    t->R1[i] = 0;
    t->cl[i] = i / per;
    for (size_t j = 0; j < n; j++)
      t->X[i * n + j] = i / per == j / per ? 0 : 0.9;
  }
}

static cairn__plan_instance inst_of(net *t, size_t n, size_t nc, cairn__plan_hmsg *msg, size_t M) {
  cairn__plan_instance in = {.model = CAIRN_PLAN_HNOW,
                            .hnow = {.n = n, .S0 = t->S0, .S1 = t->S1, .R0 = t->R0, .R1 = t->R1, .X = t->X,
                                     .nmsg = M, .msg = msg, .cluster = nc ? t->cl : NULL, .nclusters = nc}};
  return in;
}

/* Runs algo on in, checks the plan in [WYL]'s model (the extension only
 * delays), that each uplink direction carries one crossing at a time and
 * that the plan is above the lower bound; returns its crossings. */
static size_t run_uplinks(const cairn__plan_instance *in, const char *algo, double *mk, double *lb) {
  const cairn__plan_hnow *h = &in->hnow;
  cairn__plan_schedule s;
  cairn_error err = {0};
  if (cairn__plan_run(in, algo, &s, &err) != CAIRN_OK)
    fail_msg("%s: %s", algo, err.text);
  if (cairn__plan_check(in, &s, mk, &err) != CAIRN_OK)
    fail_msg("%s: %s", algo, err.text);
  *lb = cairn__plan_lower_bound(in);
  assert_true(*mk >= *lb - 1e-9);
  size_t crossings = 0;
  for (size_t a = 0; a < s.n; a++) {
    size_t i = (size_t)s.t[a].from.id, j = (size_t)s.to[s.t[a].to_off].id;
    if (!h->cluster || h->cluster[i] == h->cluster[j])
      continue;
    crossings++;
    double l = h->msg[s.t[a].message].length;
    double e = s.t[a].start + h->S0[i] + h->S1[i] * l + h->X[i * h->n + j] * l; /* crossed */
    for (size_t b = 0; b < a; b++) {
      size_t i2 = (size_t)s.t[b].from.id, j2 = (size_t)s.to[s.t[b].to_off].id;
      if (h->cluster[i2] == h->cluster[j2])
        continue;
      double l2 = h->msg[s.t[b].message].length;
      double e2 = s.t[b].start + h->S0[i2] + h->S1[i2] * l2 + h->X[i2 * h->n + j2] * l2;
      int shared = h->cluster[i] == h->cluster[i2] || h->cluster[j] == h->cluster[j2];
      if (shared && s.t[a].start < e2 - 1e-9 && s.t[b].start < e - 1e-9)
        fail_msg("%s: crossings %zu and %zu share an uplink at once", algo, a, b);
    }
  }
  cairn__plan_schedule_free(&s);
  return crossings;
}

/* 2 clusters × 2 nodes, one file of 8 units from node 0 to the three
 * others: with uplinks it crosses once (8.01 + R) and is relayed inside
 * the other cluster (0.81 + R); [WYL]'s model has the source send all
 * three, two across. */
static void test_two_by_two(void **state) {
  (void)state;
  net t;
  net_init(&t, 4, 2);
  size_t d[3] = {1, 2, 3};
  cairn__plan_hmsg msg = {.source = 0, .length = 8, .dests = d, .ndests = 3};
  const char *algos[] = {"FEF", "ECF", "WR", "WRP"};
  for (int a = 0; a < 4; a++) {
    cairn__plan_instance in = inst_of(&t, 4, 2, &msg, 1);
    double mk = 0, lb = 0;
    assert_int_equal(run_uplinks(&in, algos[a], &mk, &lb), 1);
    assert_true(lb >= 8.01 - 1e-9); /* the uplink's load: one crossing */
    print_message("%s: makespan %.2f, lower bound %.2f\n", algos[a], mk, lb);
    assert_true(mk <= 0.82 + 8.02 + 0.82 + 1e-9); /* at worst: inside, across, relay */
  }
  cairn__plan_instance paper = inst_of(&t, 4, 0, &msg, 1); /* [WYL]'s model: no clusters */
  cairn__plan_schedule s;
  cairn_error err = {0};
  assert_int_equal(cairn__plan_run(&paper, "WR", &s, &err), CAIRN_OK);
  size_t across = 0;
  for (size_t a = 0; a < s.n; a++)
    across += t.cl[s.t[a].from.id] != t.cl[s.to[s.t[a].to_off].id];
  double mk = s.makespan;
  cairn__plan_schedule_free(&s);
  print_message("[WYL]'s model: WR makespan %.2f, %zu copies across\n", mk, across);
  assert_int_equal(across, 2); /* the uplink is free for each copy: the source sends both */
}

/* The shuffle of bench/dataflow.sh in small: 2 clusters × 4 nodes, every
 * node's file needed by every other node. Each file crosses once, each
 * uplink carries its 4 files one at a time. */
static void test_shuffle(void **state) {
  (void)state;
  net t;
  net_init(&t, 8, 4);
  size_t d[8][7];
  cairn__plan_hmsg msg[8];
  for (size_t k = 0; k < 8; k++) {
    msg[k] = (cairn__plan_hmsg){.source = k, .length = 8, .dests = d[k], .ndests = 0};
    for (size_t j = 0; j < 8; j++)
      if (j != k)
        d[k][msg[k].ndests++] = j;
  }
  const char *algos[] = {"WR", "WRP"};
  for (int a = 0; a < 2; a++) {
    cairn__plan_instance in = inst_of(&t, 8, 2, msg, 8);
    double mk = 0, lb = 0;
    size_t crossings = run_uplinks(&in, algos[a], &mk, &lb);
    assert_true(lb >= 4 * 8.01 - 1e-9);
    print_message("%s: %zu crossings, makespan %.2f, lower bound %.2f\n", algos[a], crossings, mk, lb);
    assert_int_equal(crossings, 8);
  }
}

/* Random instances, 12 nodes in 3 clusters: every planner's plan is
 * feasible, keeps each uplink to one crossing at a time and is above the
 * lower bound. */
static void test_random(void **state) {
  (void)state;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  const char *algos[] = {"FEF", "ECF", "WR", "WRP"};
  for (int it = 0; it < 30; it++) {
    net t;
    size_t n = 12, M = 1, d[6][12];
    cairn__plan_hmsg msg[6];
    net_init(&t, n, 4);
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    M = 1 + x % 6;
    for (size_t k = 0; k < M; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      msg[k] = (cairn__plan_hmsg){.source = x % n, .length = 1 + (double)(x % 8), .dests = d[k], .ndests = 0};
      for (size_t j = 0; j < n; j++)
        if (j != msg[k].source && ((x >> (j + 8)) & 1 || msg[k].ndests == 0))
          d[k][msg[k].ndests++] = j;
    }
    for (int a = 0; a < 4; a++) {
      cairn__plan_instance in = inst_of(&t, n, 3, msg, M);
      double mk = 0, lb = 0;
      (void)run_uplinks(&in, algos[a], &mk, &lb);
    }
  }
}

/* An instance naming a cluster beyond nclusters is refused. */
static void test_bad_cluster(void **state) {
  (void)state;
  net t;
  net_init(&t, 2, 1);
  size_t d[1] = {1};
  cairn__plan_hmsg msg = {.source = 0, .length = 1, .dests = d, .ndests = 1};
  cairn__plan_instance in = inst_of(&t, 2, 1, &msg, 1); /* node 1 is in cluster 1 */
  cairn__plan_schedule s;
  cairn_error err = {0};
  assert_int_equal(cairn__plan_run(&in, "WR", &s, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "nodes[1].cluster"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_two_by_two),
    cmocka_unit_test(test_shuffle),
    cmocka_unit_test(test_random),
    cmocka_unit_test(test_bad_cluster),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
