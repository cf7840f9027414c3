/* test_core_validators.c — quorum under the numeric validator in-process
 * over a real SQLite file: agreement is not transitive, so the canonical
 * result is the first that agrees with quorum − 1 others; late results are
 * judged against it; a ban that removes an agreeing result re-queues the
 * task; a failed task keeps no output; exact keeps comparing digests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/jobspec.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "tests/support/core_fixture.h"

static int64_t reg(cairn__core *c, const char *name) {
  char *apps[] = {"sum"}, token[65];
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, "rack", apps, 1, 1, NULL, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

#define submit core_fixture_submit

/* v asks for work and must get some; returns its index. */
static int64_t take(cairn__core *c, int64_t v) {
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err) != CAIRN_OK || !w)
    fail_msg("volunteer %lld got no work: %s", (long long)v, err.text);
  int64_t idx = (int64_t)json_integer_value(json_object_get(w, "index"));
  json_decref(w);
  return idx;
}

static void result_ok(cairn__core *c, int64_t v, int64_t idx, const char *out) {
  cairn_error err = {0};
  if (cairn__core_result(c, v, idx, 0, NULL, out, strlen(out), NULL, NULL, &err) != CAIRN_OK)
    fail_msg("result for %lld: %s", (long long)idx, err.text);
}

static cairn__task_info task0(cairn__core *c, int64_t job) { return core_fixture_task(c, job, 0); }

/* 1 when result i of task 0's round keeps its output (for comparisons to
 * come), 0 when it was freed or never kept. */
static int kept_out(cairn__core *c, int64_t job, uint32_t i) {
  cairn__task_info t;
  cairn__res_info r[4];
  cairn_error err = {0};
  if (cairn__core_task_info(c, job, 0, &t, r, 4, &err) != CAIRN_OK)
    fail_msg("task 0 of job %lld: %s", (long long)job, err.text);
  if (i >= t.nres)
    fail_msg("task 0 of job %lld has no result %u", (long long)job, (unsigned)i);
  return r[i].kept_out;
}

#define vol core_fixture_vol

#define JOB(q, validator)                                                                     \
  "{\"app\": \"sum\", \"replication\": 3, \"quorum\": " #q ", \"validator\": " validator       \
  ", \"tasks\": [{\"id\": \"x\"}]}"
#define REL10 "{\"numeric\": {\"rel\": 0.1}}"

/* 1.0 ≈ 1.1 ≈ 1.2 but not 1.0 ≈ 1.2: with quorum 3 only 1.1 agrees with
 * two others, so it is canonical and every result is valid. */
static void test_middle_result_is_canonical(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t a = reg(c, "a"), b = reg(c, "b"), d = reg(c, "d");
  int64_t job = submit(c, JOB(3, REL10));
  int64_t ia = take(c, a), ib = take(c, b), id = take(c, d);
  result_ok(c, a, ia, "x 1.0\n");
  result_ok(c, d, id, "x 1.2\n");
  assert_int_equal(task0(c, job).state, TS_ELIGIBLE); /* 1.0 and 1.2 disagree: one more copy */
  result_ok(c, b, ib, "x 1.1\n");
  assert_int_equal(task0(c, job).state, TS_DONE);
  assert_int_equal(task0(c, job).accepted, ib);
  assert_int_equal(vol(c, a).valid + vol(c, b).valid + vol(c, d).valid, 3);
  assert_int_equal(vol(c, a).invalid + vol(c, b).invalid + vol(c, d).invalid, 0);
}

/* With quorum 2 the first pair that agrees decides: 1.0 and 1.1, canonical
 * 1.0; 1.2, arriving later, disagrees with 1.0 and is invalid although it
 * agrees with 1.1. */
static void test_late_result_judged_against_canonical(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t a = reg(c, "a"), b = reg(c, "b"), d = reg(c, "d");
  int64_t job = submit(c, JOB(2, REL10));
  int64_t ia = take(c, a), ib = take(c, b), id = take(c, d);
  result_ok(c, a, ia, "x 1.0\n");
  result_ok(c, b, ib, "x 1.1\n");
  assert_int_equal(task0(c, job).state, TS_DONE);
  assert_int_equal(task0(c, job).accepted, ia);
  assert_true(kept_out(c, job, 0)); /* kept: a copy is still out */
  assert_false(kept_out(c, job, 1));
  result_ok(c, d, id, "x 1.2\n");
  assert_int_equal(vol(c, d).invalid, 1);
  assert_int_equal(vol(c, a).valid + vol(c, b).valid, 2);
  assert_false(kept_out(c, job, 0)); /* nothing out any more: freed */
}

/* A ban that takes away one of the two agreeing results re-queues the task. */
static void test_ban_requeues(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t a = reg(c, "a"), b = reg(c, "b"), d = reg(c, "d");
  int64_t job = submit(c, JOB(2, REL10));
  int64_t ia = take(c, a), ib = take(c, b), id = take(c, d);
  result_ok(c, a, ia, "x 1.0\n");
  result_ok(c, b, ib, "x 1.05\n");
  result_ok(c, d, id, "x 9\n");
  assert_int_equal(task0(c, job).state, TS_DONE);
  json_t *report = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_ban(c, b, "test", &report, &err), CAIRN_OK);
  json_decref(report);
  assert_int_equal(task0(c, job).state, TS_ELIGIBLE); /* 1.0 alone, 9 disagrees */

}

/* Under exact, "1.0" and "1.00" never agree; "1.0" twice does. */
static void test_exact_compares_bytes(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t a = reg(c, "a"), b = reg(c, "b"), d = reg(c, "d");
  int64_t job = submit(c, JOB(2, "\"exact\""));
  int64_t ia = take(c, a), ib = take(c, b), id = take(c, d);
  result_ok(c, a, ia, "x 1.0\n");
  result_ok(c, b, ib, "x 1.00\n");
  assert_int_equal(task0(c, job).state, TS_RUNNING);
  assert_false(kept_out(c, job, 0)); /* exact keeps no output */
  result_ok(c, d, id, "x 1.0\n");
  assert_int_equal(task0(c, job).state, TS_DONE);
  assert_int_equal(task0(c, job).accepted, ia);
  assert_int_equal(vol(c, b).invalid, 1);
  assert_int_equal(vol(c, a).valid + vol(c, d).valid, 2);
}

/* A task that fails (max_attempts results, no two agreeing) keeps no output. */
static void test_failed_task_frees_outputs(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t a = reg(c, "a"), b = reg(c, "b");
  int64_t job = submit(c, "{\"app\": \"sum\", \"replication\": 2, \"quorum\": 2, "
                          "\"max_attempts\": 2, \"validator\": " REL10 ", "
                          "\"tasks\": [{\"id\": \"x\"}]}");
  int64_t ia = take(c, a), ib = take(c, b);
  result_ok(c, a, ia, "x 1\n");
  assert_true(kept_out(c, job, 0)); /* kept while the task runs */
  result_ok(c, b, ib, "x 2\n");
  assert_int_equal(task0(c, job).state, TS_FAILED);
  assert_false(kept_out(c, job, 0));
  assert_false(kept_out(c, job, 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_middle_result_is_canonical, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_late_result_judged_against_canonical,
                                    core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_ban_requeues, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_exact_compares_bytes, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_failed_task_frees_outputs, core_fixture_setup,
                                    core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
