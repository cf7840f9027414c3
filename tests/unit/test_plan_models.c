/* test_plan_models.c — [BSM] grid heuristics, [Gon] CDMD and [WYL]
 * HNOW planners against hand-computed schedules, the papers' examples and
 * bounds; every plan goes through the independent checker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/plan.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static double uni(double a, double b) { return a + (b - a) * (double)(rnd() >> 11) / 9007199254740992.0; }

static double run_checked(const cairn__plan_instance *in, const char *algo, double *lb) {
  cairn__plan_schedule s;
  cairn_error err = {0};
  if (cairn__plan_run(in, algo, &s, &err) != CAIRN_OK)
    fail_msg("%s: %s", algo, err.text);
  double mk = -1;
  if (cairn__plan_check(in, &s, &mk, &err) != CAIRN_OK)
    fail_msg("%s plan infeasible: %s", algo, err.text);
  assert_true(mk == s.makespan);
  if (lb)
    *lb = s.lower_bound;
  assert_true(s.lower_bound <= mk + 1e-9);
  cairn__plan_schedule_free(&s);
  return mk;
}

static const char *const grid_algos[] = {"flat", "FEF", "ECEF", "ECEF-LA", "ECEF-LAt", "ECEF-LAT", "BottomUp"};

/* Three clusters worked out by hand from the formulas of [BSM] §4–5. */
static void test_grid_hand(void **state) {
  (void)state;
  double L[9] = {0, 1, 5, 1, 0, 1, 5, 1, 0};
  double g[9] = {0, 10, 10, 10, 0, 10, 10, 10, 0};
  double T[3] = {0, 0, 100};
  cairn__plan_instance in = {.model = CAIRN_PLAN_GRID, .grid = {.k = 3, .root = 0, .L = L, .g = g, .T = T}};
  double lb;
  assert_true(run_checked(&in, "flat", &lb) == 125);    /* 0→1 at 0, 0→2 at 10, arrives 25 */
  assert_true(run_checked(&in, "ECEF", &lb) == 122);    /* 0→1 (11), then 1→2 at 11, arrives 22 */
  assert_true(run_checked(&in, "ECEF-LAt", &lb) == 115); /* lookahead sees T_2: 0→2 first */
  assert_true(run_checked(&in, "BottomUp", &lb) == 115); /* slowest cluster first */
  assert_true(lb == 115);                               /* shortest path 15 + T_2 */
}

/* [BSM] Table 3 (latencies in ms) with the g and T of docs/planning.md. */
static void grid_table3(cairn__plan_instance *in, double *L, double *g, double *T) {
  static const double lat_us[6][6] = {
    {47.56, 62.10, 12181.52, 12187.24, 12197.49, 5210.99}, {62.10, 47.92, 12181.52, 12198.03, 12195.22, 5211.47},
    {12181.52, 12181.52, 35.52, 60.08, 60.08, 5388.49},    {12187.24, 12198.03, 60.08, 0, 242.47, 5393.98},
    {12197.49, 12195.22, 60.08, 242.47, 0, 5394.10},       {5210.99, 5211.47, 5388.49, 5393.98, 5394.10, 27.53}};
  static const int size[6] = {31, 29, 6, 1, 1, 20};
  for (int i = 0; i < 6; i++) {
    int lg = 0;
    while ((1 << lg) < size[i])
      lg++;
    T[i] = lg * (lat_us[i][i] / 1000.0 + 35.0);
    for (int j = 0; j < 6; j++) {
      L[i * 6 + j] = lat_us[i][j] / 1000.0;
      g[i * 6 + j] = i == j ? 0 : 350.0;
    }
  }
  *in = (cairn__plan_instance){.model = CAIRN_PLAN_GRID, .grid = {.k = 6, .root = 0, .L = L, .g = g, .T = T}};
}

static void test_grid_table3(void **state) {
  (void)state;
  double L[36], g[36], T[6], lb = 0;
  cairn__plan_instance in;
  grid_table3(&in, L, g, T);
  double flat = run_checked(&in, "flat", &lb);
  for (size_t a = 0; a < 7; a++) {
    double m = run_checked(&in, grid_algos[a], &lb);
    print_message("Table 3 grid, %-9s makespan %8.3f ms (lower bound %.3f)\n", grid_algos[a], m, lb);
    assert_true(m <= flat + 1e-9); /* [BSM] §7: every heuristic beats the flat tree here */
  }
}

static void test_grid_random(void **state) {
  (void)state;
  for (int it = 0; it < 200; it++) {
    size_t k = 2 + rnd() % 49;
    double *L = malloc(k * k * sizeof *L), *g = malloc(k * k * sizeof *g), *T = malloc(k * sizeof *T);
    for (size_t i = 0; i < k; i++) {
      T[i] = uni(20, 3000);
      for (size_t j = 0; j < k; j++) {
        L[i * k + j] = uni(1, 15);
        g[i * k + j] = uni(100, 600);
      }
    }
    cairn__plan_instance in = {.model = CAIRN_PLAN_GRID, .grid = {.k = k, .root = rnd() % k, .L = L, .g = g, .T = T}};
    for (size_t a = 0; a < 7; a++)
      run_checked(&in, grid_algos[a], NULL);
    free(L);
    free(g);
    free(T);
  }
}

/* [Gon] Example 1.1 in the reading consistent with its Tables 2–4
 * (docs/references.md). */
static void test_cdmd_example(void **state) {
  (void)state;
  static const int len[19] = {35, 2, 23, 13, 31, 2, 14, 31, 3, 3, 3, 3, 5, 12, 15, 6, 3, 20, 31};
  static const int holder[19] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 6, 6};
  /* needs: P1 {E,O,G} P2 {M,R,A} P3 {P,S,C} P4 {N,R,Q,C,B} P5 {R,J,A,F}
   * P6 {C,K,S,I} P7 {D,H,L,Q} */
  static const char *const needs[7] = {"EOG", "MRA", "PSC", "NRQCB", "RJAF", "CKSI", "DHLQ"};
  cairn__plan_cmsg msg[19];
  size_t need[19][7];
  char names[19][2];
  memset(msg, 0, sizeof msg);
  for (int m = 0; m < 19; m++) {
    names[m][0] = (char)('A' + m);
    names[m][1] = '\0';
    msg[m] = (cairn__plan_cmsg){.name = names[m], .length = len[m], .holder = (size_t)holder[m], .needed_by = need[m]};
  }
  size_t q = 0;
  for (int p = 0; p < 7; p++)
    for (const char *c = needs[p]; *c; c++) {
      int m = *c - 'A';
      need[m][msg[m].nneed++] = (size_t)p;
      q++;
    }
  assert_int_equal(q, 26);
  cairn__plan_instance in = {.model = CAIRN_PLAN_CDMD, .cdmd = {.n = 7, .nmsg = 19, .msg = msg}};
  assert_int_equal(cairn__plan_cdmd_degree(&in.cdmd), 60); /* d = s = r = 60 */
  double lb = 0, tct = run_checked(&in, "LH-LS", &lb);
  assert_true(lb == 60);
  assert_true(tct <= 3.5 * 60); /* Theorem 3.1 */
  print_message("CDMD Example 1.1: d = %.0f, TCT = %.0f (bound 3.5d = 210)\n", lb, tct);
}

static void test_cdmd_random(void **state) {
  (void)state;
  double worst = 0;
  for (int it = 0; it < 300; it++) {
    size_t n = 2 + rnd() % 12, nm = 1 + rnd() % 30;
    cairn__plan_cmsg *msg = calloc(nm, sizeof *msg);
    size_t *need = calloc(nm * n, sizeof *need);
    for (size_t m = 0; m < nm; m++) {
      msg[m].length = 1 + (int64_t)(rnd() % (it % 2 ? 40 : 5));
      msg[m].holder = rnd() % n;
      msg[m].needed_by = need + m * n;
      for (size_t p = 0; p < n; p++)
        if (p != msg[m].holder && (rnd() % 3 == 0 || msg[m].nneed == 0))
          need[m * n + msg[m].nneed++] = p;
    }
    cairn__plan_instance in = {.model = CAIRN_PLAN_CDMD, .cdmd = {.n = n, .nmsg = nm, .msg = msg}};
    double lb = 0, tct = run_checked(&in, "LH-LS", &lb);
    assert_true(tct <= 3.5 * lb + 1e-9);
    if (tct / lb > worst)
      worst = tct / lb;
    free(msg);
    free(need);
  }
  print_message("CDMD random: worst TCT/d = %.3f over 300 instances\n", worst);
}

/* One message, two nodes: S + X·m + R. */
static void test_hnow_hand(void **state) {
  (void)state;
  double S0[2] = {1, 1}, S1[2] = {0, 0}, R0[2] = {3, 3}, R1[2] = {0, 0}, X[4] = {0, 0.5, 0.5, 0};
  size_t d[1] = {1};
  cairn__plan_hmsg msg = {.source = 0, .length = 2, .dests = d, .ndests = 1};
  cairn__plan_instance in = {.model = CAIRN_PLAN_HNOW,
                            .hnow = {.n = 2, .S0 = S0, .S1 = S1, .R0 = R0, .R1 = R1, .X = X, .nmsg = 1, .msg = &msg}};
  const char *algos[] = {"FEF", "ECF", "WR", "WRP"};
  for (int a = 0; a < 4; a++) {
    double lb = 0;
    assert_true(run_checked(&in, algos[a], &lb) == 5);
    assert_true(lb == 5);
  }
}

/* Random multiple multicasts with [WYL] §5 parameter ranges: every plan
 * is feasible and above the [WYL] §3.1 lower bound. */
static void test_hnow_random(void **state) {
  (void)state;
  const char *algos[] = {"FEF", "ECF", "WR", "WRP"};
  double sum[4] = {0}, sumlb = 0;
  for (int it = 0; it < 40; it++) {
    size_t n = 16, M = 1 + rnd() % 8;
    double S0[16], S1[16], R0[16], R1[16], X[256];
    for (size_t i = 0; i < n; i++) {
      S0[i] = uni(80, 400);
      R0[i] = uni(80, 400);
      S1[i] = uni(0.0001, 0.01);
      R1[i] = uni(0.0001, 0.01);
      for (size_t j = 0; j < n; j++)
        X[i * n + j] = it % 2 ? 0.008 : 0.0516;
    }
    cairn__plan_hmsg msg[8];
    size_t dest[8][16];
    for (size_t m = 0; m < M; m++) {
      msg[m] = (cairn__plan_hmsg){.source = rnd() % n, .length = it % 3 ? 1e6 : 1000, .dests = dest[m]};
      for (size_t j = 0; j < n; j++)
        if (j != msg[m].source && (rnd() % 2 || msg[m].ndests == 0))
          dest[m][msg[m].ndests++] = j;
    }
    cairn__plan_instance in = {.model = CAIRN_PLAN_HNOW,
                              .hnow = {.n = n, .S0 = S0, .S1 = S1, .R0 = R0, .R1 = R1, .X = X, .nmsg = M, .msg = msg}};
    double lb = 0;
    for (int a = 0; a < 4; a++)
      sum[a] += run_checked(&in, algos[a], &lb);
    sumlb += lb;
  }
  print_message("HNOW 16 nodes, 40 draws: mean/LB FEF %.2f ECF %.2f WR %.2f WRP %.2f\n", sum[0] / sumlb,
                sum[1] / sumlb, sum[2] / sumlb, sum[3] / sumlb);
}

static void test_hnow_checker(void **state) {
  (void)state;
  double S0[3] = {1, 1, 1}, S1[3] = {0}, R0[3] = {3, 3, 3}, R1[3] = {0}, X[9] = {0};
  size_t d[1] = {1};
  cairn__plan_hmsg msg = {.source = 0, .length = 2, .dests = d, .ndests = 1};
  cairn__plan_instance in = {.model = CAIRN_PLAN_HNOW,
                            .hnow = {.n = 3, .S0 = S0, .S1 = S1, .R0 = R0, .R1 = R1, .X = X, .nmsg = 1, .msg = &msg}};
  cairn__plan_schedule s;
  cairn_error err = {0};
  cairn__plan_node to = {1, -1};
  cairn__plan_schedule_init(&s, CAIRN_PLAN_HNOW, "x");
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, -1}, &to, 1, 0, 3.5), 0);
  assert_int_equal(cairn__plan_check(&in, &s, NULL, &err), CAIRN_EINVAL); /* receive ends before S + R */
  assert_non_null(strstr(err.text, "before arrival"));
  s.t[0].end = 4;
  assert_int_equal(cairn__plan_check(&in, &s, NULL, &err), CAIRN_OK);
  to = (cairn__plan_node){2, -1};
  assert_int_equal(cairn__plan_schedule_add(&s, 0, (cairn__plan_node){0, -1}, &to, 1, 1, 5), 0);
  assert_int_equal(cairn__plan_check(&in, &s, NULL, &err), CAIRN_EINVAL); /* 2 is not a destination */
  assert_non_null(strstr(err.text, "not a destination"));
  cairn__plan_schedule_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_grid_hand),     cmocka_unit_test(test_grid_table3),  cmocka_unit_test(test_grid_random),
    cmocka_unit_test(test_cdmd_example),  cmocka_unit_test(test_cdmd_random),  cmocka_unit_test(test_hnow_hand),
    cmocka_unit_test(test_hnow_random),   cmocka_unit_test(test_hnow_checker),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
