/* test_credit_core.c — credit in-process over a real SQLite file: a task's
 * granted credit is the lowest claim among the results agreeing with the
 * canonical one, given to every valid result (a late valid replica too);
 * an invalid result gets none; a result without a claim is left out of the
 * minimum; a volunteer's totals follow, survive a reopen of the store, and
 * lose what a ban takes away (its own results and those re-queued with
 * them). The team ledger: credit counts for the team its volunteer was in
 * when it was granted, stays there when the volunteer changes team, and a
 * ban takes it from that team, not from the volunteer's team of now. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "tests/support/core_fixture.h"

/* Result idx of task 0 of job, as the core holds it. */
static cairn__res_info res_of(cairn__core *c, int64_t job, int64_t idx) {
  cairn__task_info t;
  cairn__res_info r[8];
  cairn_error err = {0};
  if (cairn__core_task_info(c, job, 0, &t, r, 8, &err) != CAIRN_OK)
    fail_msg("task 0 of job %lld: %s", (long long)job, err.text);
  for (uint32_t i = 0; i < t.nres && i < 8; i++)
    if (r[i].idx == idx)
      return r[i];
  fail_msg("no result %lld", (long long)idx);
  return r[0];
}

static int near(double a, double b) { return fabs(a - b) < 1e-9; }

static void expect(cairn__core *c, int64_t v, double credit, double cpu, int64_t n) {
  cairn__vol_info m = core_fixture_vol(c, v);
  if (!near(m.credit, credit) || !near(m.cpu_seconds, cpu) || m.credited != n)
    fail_msg("volunteer %lld: credit %g, cpu %g, results %lld; wanted %g, %g, %lld",
             (long long)v, m.credit, m.cpu_seconds, (long long)m.credited, credit, cpu,
             (long long)n);
}

static void test_credit_rules(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t a = core_fixture_register(c, "a", "red", 4), b = core_fixture_register(c, "b", "red", 4),
          d = core_fixture_register(c, "d", NULL, 4), e = core_fixture_register(c, "e", "blue", 4);
  static const char three[] = "{\"app\": \"sum\", \"replication\": 3, \"quorum\": 2, "
                              "\"tasks\": [{\"id\": \"x\"}]}";
  static const char two[] = "{\"app\": \"sum\", \"replication\": 2, \"quorum\": 2, "
                            "\"tasks\": [{\"id\": \"x\"}]}";

  /* job 1: a claims 2, b claims 1: both get 1; d, late and valid, gets 1 too */
  int64_t j1 = core_fixture_submit(c, three);
  int64_t ia = core_fixture_take(c, a), ib = core_fixture_take(c, b), id = core_fixture_take(c, d);
  core_fixture_result(c, a, ia, "ok\n", 2.0);
  expect(c, a, 0, 0, 0); /* pending: nothing granted yet */
  core_fixture_result(c, b, ib, "ok\n", 1.0);
  assert_int_equal(core_fixture_task(c, j1, 0).state, TS_DONE);
  expect(c, a, 1.0, 2.0, 1);
  expect(c, b, 1.0, 1.0, 1);
  core_fixture_result(c, d, id, "ok\n", 0.5);
  expect(c, d, 1.0, 0.5, 1);
  assert_true(near(res_of(c, j1, id).credit, 1.0));

  /* job 2: the liar e (claims 0.1, wrong output) gets nothing and its claim
   * does not lower the others' */
  int64_t j2 = core_fixture_submit(c, three);
  ia = core_fixture_take(c, a);
  int64_t ie = core_fixture_take(c, e);
  ib = core_fixture_take(c, b);
  core_fixture_result(c, e, ie, "forged\n", 0.1);
  core_fixture_result(c, a, ia, "ok\n", 5.0);
  core_fixture_result(c, b, ib, "ok\n", 3.0);
  assert_int_equal(core_fixture_task(c, j2, 0).state, TS_DONE);
  assert_int_equal(res_of(c, j2, ie).outcome, OUT_INVALID);
  expect(c, e, 0, 0, 0);
  expect(c, a, 4.0, 7.0, 2);
  expect(c, b, 4.0, 4.0, 2);

  /* job 3: a result without a claim is left out of the minimum */
  core_fixture_submit(c, two);
  ia = core_fixture_take(c, a);
  id = core_fixture_take(c, d);
  core_fixture_result(c, a, ia, "ok\n", -1);
  core_fixture_result(c, d, id, "ok\n", 2.5);
  expect(c, a, 6.5, 7.0, 3);
  expect(c, d, 3.5, 3.0, 2);

  /* the totals and each result's credit survive a reopen */
  core_fixture_reopen(f);
  c = f->c;
  expect(c, a, 6.5, 7.0, 3);
  expect(c, b, 4.0, 4.0, 2);
  expect(c, d, 3.5, 3.0, 2);
  expect(c, e, 0, 0, 0);
  assert_string_equal(core_fixture_vol(c, a).team, "red");
  assert_string_equal(core_fixture_vol(c, d).team, ""); /* none */

  /* a ban takes b's credit, and a's for job 2 (re-queued: its quorum
   * relied on b); job 1 still has a quorum without b (a and d) */
  json_t *report = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_ban(c, b, "test", &report, &err), CAIRN_OK);
  json_decref(report);
  expect(c, b, 0, 0, 0);
  expect(c, a, 3.5, 2.0, 2); /* job 1 (1.0, claimed 2) and job 3 (2.5, no claim) */
  expect(c, d, 3.5, 3.0, 2);
  core_fixture_reopen(f);
  c = f->c;
  expect(c, a, 3.5, 2.0, 2);
  expect(c, b, 0, 0, 0);
}

/* Team name's ledger totals: credit, CPU seconds, results. */
static void expect_team(cairn__core *c, const char *name, double credit, double cpu, int64_t n) {
  const mteam *t = cairn__team_find(c, name);
  if (!t || !near(t->credit, credit) || !near(t->cpu_seconds, cpu) || t->results != n)
    fail_msg("team %s: credit %g, cpu %g, results %lld; wanted %g, %g, %lld", name,
             t ? t->credit : -1, t ? t->cpu_seconds : -1, t ? (long long)t->results : -1, credit,
             cpu, (long long)n);
}

static void test_team_ledger(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t a = core_fixture_register(c, "la", "lred", 4),
          b = core_fixture_register(c, "lb", "lred", 4),
          e = core_fixture_register(c, "le", "lblue", 4);
  static const char two[] = "{\"app\": \"sum\", \"replication\": 2, \"quorum\": 2, "
                            "\"tasks\": [{\"id\": \"x\"}]}";
  /* job 1 in lred: a claims 2, b claims 1, both get 1 */
  core_fixture_submit(c, two);
  int64_t ia = core_fixture_take(c, a), ib = core_fixture_take(c, b);
  core_fixture_result(c, a, ia, "ok\n", 2.0);
  core_fixture_result(c, b, ib, "ok\n", 1.0);
  expect_team(c, "lred", 2.0, 3.0, 2);
  /* a moves to lblue: lred keeps it all; what a earns now counts for lblue */
  cairn_error err = {0};
  assert_int_equal(cairn__core_set_team(c, a, "lblue", &err), CAIRN_OK);
  expect_team(c, "lred", 2.0, 3.0, 2);
  core_fixture_submit(c, two);
  ia = core_fixture_take(c, a);
  int64_t ie = core_fixture_take(c, e);
  core_fixture_result(c, a, ia, "ok\n", 3.0);
  core_fixture_result(c, e, ie, "ok\n", 4.0);
  expect_team(c, "lblue", 6.0, 7.0, 2);
  expect_team(c, "lred", 2.0, 3.0, 2);
  core_fixture_reopen(f); /* restored from the store */
  c = f->c;
  expect_team(c, "lred", 2.0, 3.0, 2);
  expect_team(c, "lblue", 6.0, 7.0, 2);
  /* banning b re-queues job 1: a's credit there leaves lred (where it was
   * earned), not lblue (where a is now) */
  json_t *report = NULL;
  assert_int_equal(cairn__core_ban(c, b, "test", &report, &err), CAIRN_OK);
  json_decref(report);
  expect_team(c, "lred", 0, 0, 0);
  expect_team(c, "lblue", 6.0, 7.0, 2);
  expect(c, a, 3.0, 3.0, 1);
  core_fixture_reopen(f);
  c = f->c;
  expect_team(c, "lred", 0, 0, 0);
  expect_team(c, "lblue", 6.0, 7.0, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_credit_rules),
    cmocka_unit_test(test_team_ledger),
  };
  return cmocka_run_group_tests(tests, core_fixture_setup, core_fixture_teardown);
}
