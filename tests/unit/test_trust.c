/* test_trust.c — adaptive replication in-process over a real SQLite file:
 * valid replicated results earn trust; a trusted volunteer's task of an
 * adaptive job runs once and is accepted on its one result; a spot check
 * catches a liar, resets its trust and re-queues its unreplicated results
 * with what consumed them; a re-queued task is replicated even for a
 * trusted volunteer; a lone copy that expires, or whose volunteer lost its
 * trust before its result, leaves a replicated round; a job with quorum 1
 * earns no trust; a round's copies go out together; a ban forgets trust; trust and the ring of unreplicated
 * results survive a restart; the job file's "adaptive" is checked. */
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
  if (cairn__core_register(c, name, "rack", apps, 1, 4, NULL, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

static const char one_task[] = "{\"app\": \"sum\", \"replication\": 2, \"quorum\": 2, "
                               "\"adaptive\": true, \"tasks\": [{\"id\": \"x\"}]}";
/* p, and q that reads p's output */
static const char chain[] = "{\"app\": \"sum\", \"replication\": 2, \"quorum\": 2, "
                            "\"adaptive\": true, \"tasks\": [{\"id\": \"p\"}, "
                            "{\"id\": \"q\", \"after\": [\"p\"]}]}";

/* Volunteer v asks for work: its index, or 0 when none. */
static int64_t ask(cairn__core *c, int64_t v) {
  json_t *w = NULL;
  int retry_ms = 0;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, &retry_ms, &err) != CAIRN_OK)
    fail_msg("work for %lld: %s", (long long)v, err.text);
  int64_t idx = w ? (int64_t)json_integer_value(json_object_get(w, "index")) : 0;
  json_decref(w);
  return idx;
}

static int64_t take(cairn__core *c, int64_t v) {
  int64_t idx = ask(c, v);
  if (!idx)
    fail_msg("volunteer %lld got no work", (long long)v);
  return idx;
}

/* Lease idx, out now. */
static cairn__lease_info lease(cairn__core *c, int64_t idx) {
  cairn__lease_info l;
  cairn_error err = {0};
  if (cairn__core_lease_info(c, idx, &l, &err) != CAIRN_OK)
    fail_msg("lease %lld: %s", (long long)idx, err.text);
  return l;
}

/* 1 when the round that lease idx holds a copy of runs once. */
static int solo_of_lease(cairn__core *c, int64_t idx) {
  cairn__lease_info l = lease(c, idx);
  return core_fixture_task(c, l.job, l.task).solo;
}

static void result(cairn__core *c, int64_t v, int64_t idx, const char *out) {
  cairn_error err = {0};
  if (cairn__core_result(c, v, idx, 0, NULL, out, strlen(out), NULL, NULL, &err) != CAIRN_OK)
    fail_msg("result for %lld: %s", (long long)idx, err.text);
}

static cairn__task_info task(cairn__core *c, int64_t job, uint32_t k) {
  return core_fixture_task(c, job, k);
}

static int64_t trust_of(cairn__core *c, int64_t v) { return core_fixture_vol(c, v).trust; }

/* Adaptive replication's counter k (cairn__trust_counts: 0 unreplicated
 * results, 1 spot checks, 2 trust resets, 3 re-checked results). */
enum { UNREPLICATED, SPOT_CHECKS, RESETS, RECHECKS };
static uint64_t trust_count(cairn__core *c, int k) {
  uint64_t n[4];
  pthread_mutex_lock(&c->lock);
  cairn__trust_counts(c, n);
  cairn__core_unlock(c);
  return n[k];
}

/* A one-task job both a and b compute, agreeing: each earns one. */
static void agree(cairn__core *c, int64_t a, int64_t b) {
  int64_t job = core_fixture_submit(c, one_task);
  int64_t ia = take(c, a), ib = take(c, b);
  assert_int_equal(solo_of_lease(c, ia), 0);
  result(c, a, ia, "1\n");
  result(c, b, ib, "1\n");
  assert_int_equal(task(c, job, 0).state, TS_DONE);
}

static void test_trust_solo_spot_check_reset(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn__trust_set_threshold(c, 3);
  cairn__trust_set_spot_check(c, 0); /* no spot checks until the test asks for one */
  int64_t a = reg(c, "a"), b = reg(c, "b"), l = reg(c, "liar");
  /* warm-up: replicated rounds earn trust, one a valid result */
  for (int k = 0; k < 3; k++)
    agree(c, l, a);
  agree(c, b, a);
  /* a job with quorum 1 earns nothing: nobody agreed */
  int64_t j1 = core_fixture_submit(c, "{\"app\": \"sum\", \"tasks\": [{\"id\": \"x\"}]}");
  int64_t i1 = take(c, b);
  result(c, b, i1, "1\n");
  assert_int_equal(task(c, j1, 0).state, TS_DONE);
  assert_int_equal(trust_of(c, l), 3);
  assert_int_equal(trust_of(c, a), 4);
  assert_int_equal(trust_of(c, b), 1);
  /* trusted: the liar's task runs once and is accepted on its result */
  int64_t job = core_fixture_submit(c, chain);
  int64_t ip = take(c, l);
  assert_int_equal(solo_of_lease(c, ip), 1);
  assert_int_equal(ask(c, a), 0); /* p wants no second copy; q waits for p */
  result(c, l, ip, "wrong\n");
  assert_int_equal(task(c, job, 0).state, TS_DONE);
  assert_int_equal(task(c, job, 0).accepted, ip);
  assert_int_equal(trust_count(c, UNREPLICATED), 1);
  assert_int_equal(trust_of(c, l), 3); /* a result that ran once adds nothing */
  int64_t iq = take(c, a); /* q consumed the liar's output, solo on a */
  assert_int_equal(solo_of_lease(c, iq), 1);
  result(c, a, iq, "built on wrong\n");
  assert_int_equal(task(c, job, 1).state, TS_DONE);
  assert_int_equal(cairn__core_job_state(c, job), JS_DONE);
  /* an untrusted volunteer's task is replicated */
  int64_t jb = core_fixture_submit(c, one_task);
  int64_t ib = take(c, b);
  assert_int_equal(solo_of_lease(c, ib), 0);
  int64_t ia = take(c, a);
  result(c, b, ib, "1\n");
  result(c, a, ia, "1\n");
  assert_int_equal(task(c, jb, 0).state, TS_DONE);
  /* a spot check: the liar's next task is replicated and it loses the vote */
  cairn__trust_set_spot_check(c, 1);
  int64_t js = core_fixture_submit(c, one_task);
  int64_t il = take(c, l);
  assert_int_equal(solo_of_lease(c, il), 0);
  assert_int_equal(trust_count(c, SPOT_CHECKS), 1);
  ia = take(c, a);
  result(c, l, il, "2\n");
  result(c, a, ia, "1\n"); /* no quorum yet: one more copy */
  ib = take(c, b);
  result(c, b, ib, "1\n");
  assert_int_equal(task(c, js, 0).state, TS_DONE);
  assert_int_equal(trust_of(c, l), 0);
  assert_int_equal(trust_count(c, RESETS), 1);
  /* its unreplicated result is re-queued, q (which consumed it) with it */
  assert_int_equal(trust_count(c, RECHECKS), 1);
  assert_int_equal(cairn__core_job_state(c, job), JS_RUNNING);
  assert_int_equal(task(c, job, 0).state, TS_ELIGIBLE);
  assert_int_equal(task(c, job, 0).round, 1);
  assert_int_equal(task(c, job, 1).state, TS_WAITING);
  assert_int_equal(task(c, job, 1).round, 1);
  /* a re-queued task is replicated, even on a trusted volunteer */
  cairn__trust_set_spot_check(c, 0);
  assert_true(core_fixture_vol(c, a).trusted); /* trust >= the threshold */
  ia = take(c, a);
  assert_int_equal(solo_of_lease(c, ia), 0);
  ib = take(c, b);
  result(c, a, ia, "right\n");
  result(c, b, ib, "right\n");
  ia = take(c, a), ib = take(c, b);
  result(c, a, ia, "built on right\n");
  result(c, b, ib, "built on right\n");
  assert_int_equal(cairn__core_job_state(c, job), JS_DONE);
  /* a second invalid result finds an empty ring: nothing more re-queued */
  cairn__trust_set_spot_check(c, 1);
  agree(c, a, b);
  assert_int_equal(trust_count(c, RECHECKS), 1);
}

/* Trust and the ring outlive a restart: a reset after it re-queues the
 * unreplicated result accepted before it. */
static void test_trust_survives_restart(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn__trust_set_threshold(c, 2);
  cairn__trust_set_spot_check(c, 0);
  int64_t a = reg(c, "a2"), b = reg(c, "b2"), d = reg(c, "d2");
  agree(c, a, b);
  agree(c, a, b);
  int64_t ta = trust_of(c, a), tb = trust_of(c, b);
  assert_true(ta >= 2);
  int64_t job = core_fixture_submit(c, one_task);
  int64_t ia = take(c, a);
  assert_int_equal(solo_of_lease(c, ia), 1);
  result(c, a, ia, "solo\n");
  assert_int_equal(task(c, job, 0).state, TS_DONE);
  core_fixture_reopen(f);
  c = f->c;
  assert_int_equal(trust_of(c, a), ta);
  assert_int_equal(trust_of(c, b), tb);
  json_t *jj = cairn__core_job_json(c, job, 1);
  assert_true(json_is_true(json_object_get(jj, "adaptive")));
  json_decref(jj);
  json_t *vs = cairn__core_volunteers_json(c);
  json_t *va = json_array_get(json_object_get(vs, "volunteers"), (size_t)(a - 1));
  assert_int_equal(json_integer_value(json_object_get(va, "trust")), ta);
  assert_false(json_is_true(json_object_get(va, "trusted"))); /* the default threshold is 10 */
  json_decref(vs);
  cairn__trust_set_threshold(c, 2);
  cairn__trust_set_spot_check(c, 1);
  int64_t js = core_fixture_submit(c, one_task);
  ia = take(c, a);
  int64_t ib = take(c, b);
  result(c, a, ia, "2\n");
  result(c, b, ib, "1\n");
  int64_t id = take(c, d);
  result(c, d, id, "1\n");
  assert_int_equal(task(c, js, 0).state, TS_DONE);
  assert_int_equal(trust_of(c, a), 0);
  assert_int_equal(trust_count(c, RECHECKS), 1);
  assert_int_equal(task(c, job, 0).state, TS_ELIGIBLE);
  assert_int_equal(task(c, job, 0).round, 1);
  /* and that reset is durable too */
  core_fixture_reopen(f);
  c = f->c;
  assert_int_equal(trust_of(c, a), 0);
  assert_int_equal(task(c, job, 0).state, TS_ELIGIBLE);
}

/* A banned volunteer's trust and ring go with it; the ban re-queues its
 * unreplicated result itself. */
static void test_ban_forgets_trust(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn__trust_set_threshold(c, 1);
  cairn__trust_set_spot_check(c, 0);
  int64_t a = reg(c, "a3"), b = reg(c, "b3");
  agree(c, a, b);
  int64_t job = core_fixture_submit(c, one_task);
  int64_t ia = take(c, a);
  assert_int_equal(solo_of_lease(c, ia), 1);
  result(c, a, ia, "solo\n");
  uint64_t resets = trust_count(c, RESETS);
  json_t *report = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_ban(c, a, "test", &report, &err), CAIRN_OK);
  /* the warm-up task (no quorum without a) and the unreplicated one */
  assert_int_equal(json_integer_value(json_object_get(report, "tasks_requeued")), 2);
  json_decref(report);
  assert_int_equal(trust_of(c, a), 0);
  assert_int_equal(trust_count(c, RESETS), resets); /* a ban is not a reset */
  assert_int_equal(task(c, job, 0).state, TS_ELIGIBLE);
}

/* A solo copy whose volunteer lost its trust before its result arrived
 * needs the quorum after all. */
static void test_solo_after_reset_is_replicated(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn__trust_set_threshold(c, 1);
  cairn__trust_set_spot_check(c, 0);
  int64_t a = reg(c, "a4"), b = reg(c, "b4"), d = reg(c, "d4");
  agree(c, a, b);
  int64_t jx = core_fixture_submit(c, one_task);
  int64_t ix = take(c, a);
  assert_int_equal(solo_of_lease(c, ix), 1);
  cairn__trust_set_spot_check(c, 1); /* a's next task is checked, and a loses the vote */
  int64_t jy = core_fixture_submit(c, one_task);
  int64_t iy = take(c, a), iby = take(c, b);
  result(c, a, iy, "2\n");
  result(c, b, iby, "1\n");
  int64_t idy = take(c, d);
  result(c, d, idy, "1\n");
  assert_int_equal(task(c, jy, 0).state, TS_DONE);
  assert_int_equal(trust_of(c, a), 0);
  result(c, a, ix, "x\n"); /* no longer trusted: not accepted alone */
  assert_int_equal(task(c, jx, 0).state, TS_ELIGIBLE);
  assert_int_equal(task(c, jx, 0).solo, 0);
  int64_t ibx = take(c, b);
  result(c, b, ibx, "x\n");
  assert_int_equal(task(c, jx, 0).state, TS_DONE);
}

/* A solo copy whose lease expires leaves a replicated round: the next
 * volunteer's copy is not accepted alone. */
static void test_solo_expired_is_replicated(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn__trust_set_threshold(c, 1);
  cairn__trust_set_spot_check(c, 0);
  int64_t a = reg(c, "a5"), b = reg(c, "b5"), d = reg(c, "d5");
  agree(c, a, b);
  int64_t jx = core_fixture_submit(c, one_task);
  int64_t ix = take(c, a);
  assert_int_equal(solo_of_lease(c, ix), 1);
  assert_int_equal(cairn__core_expire(c, cairn__now() + 100000), 1);
  assert_int_equal(task(c, jx, 0).state, TS_ELIGIBLE);
  assert_int_equal(task(c, jx, 0).solo, 0);
  int64_t ib = take(c, b); /* b is trusted too, but the round is replicated now */
  assert_int_equal(solo_of_lease(c, ib), 0);
  result(c, b, ib, "x\n");
  assert_int_equal(task(c, jx, 0).state, TS_ELIGIBLE);
  int64_t id = take(c, d);
  result(c, d, id, "x\n");
  assert_int_equal(task(c, jx, 0).state, TS_DONE);
}

static uint32_t task_pos(cairn__core *c, int64_t idx) { return lease(c, idx).task; }

/* In an adaptive job a round's further copies go out before new tasks:
 * the second volunteer gets the first task's second copy, not the next
 * task (a job that does not opt in keeps its policy's order). */
static void test_round_copies_go_out_together(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t a = reg(c, "a6"), b = reg(c, "b6");
  static const char three[] = "{\"app\": \"sum\", \"replication\": 2, \"quorum\": 2, "
                              "\"policy\": \"fifo\", \"adaptive\": %s, \"tasks\": "
                              "[{\"id\": \"x\"}, {\"id\": \"y\"}, {\"id\": \"z\"}]}";
  char text[512];
  snprintf(text, sizeof text, three, "false");
  int64_t plain = core_fixture_submit(c, text);
  int64_t i1 = take(c, a), i2 = take(c, b);
  assert_int_equal(task_pos(c, i1), 0);
  assert_int_equal(task_pos(c, i2), 1); /* fifo: the next task */
  cairn_error err = {0};
  json_t *out = NULL;
  assert_int_equal(cairn__core_cancel(c, plain, &out, &err), CAIRN_OK);
  json_decref(out);
  snprintf(text, sizeof text, three, "true");
  int64_t adaptive = core_fixture_submit(c, text);
  i1 = take(c, a), i2 = take(c, b);
  assert_int_equal(task_pos(c, i1), 0);
  assert_int_equal(task_pos(c, i2), 0); /* the same round's second copy */
  result(c, a, i1, "1\n");
  result(c, b, i2, "1\n");
  assert_int_equal(task(c, adaptive, 0).state, TS_DONE);
  int64_t i3 = take(c, b);
  assert_int_equal(task_pos(c, i3), 1);
}

static void test_jobspec_adaptive(void **state) {
  (void)state;
  static const char *const bad[] = {
    "{\"app\": \"sum\", \"adaptive\": true, \"tasks\": [{\"id\": \"x\"}]}",
    "{\"app\": \"sum\", \"replication\": 2, \"quorum\": 2, \"adaptive\": 1, "
    "\"tasks\": [{\"id\": \"x\"}]}"};
  static const char *const why[] = {"quorum of at least 2", "must be true or false"};
  for (size_t i = 0; i < 2; i++) {
    cairn_error err = {0};
    cairn__jobspec *s = cairn__jobspec_parse(bad[i], strlen(bad[i]), CAIRN_JOBSPEC_SERVER, &err);
    assert_null(s);
    assert_int_equal(err.status, CAIRN_EINVAL);
    assert_non_null(strstr(err.text, why[i]));
  }
  cairn_error err = {0};
  cairn__jobspec *s = cairn__jobspec_parse(one_task, strlen(one_task), CAIRN_JOBSPEC_SERVER, &err);
  assert_non_null(s);
  assert_int_equal(s->adaptive, 1);
  cairn__jobspec_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_trust_solo_spot_check_reset, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_trust_survives_restart, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_ban_forgets_trust, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_solo_after_reset_is_replicated, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_solo_expired_is_replicated, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_round_copies_go_out_together, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test(test_jobspec_adaptive),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
