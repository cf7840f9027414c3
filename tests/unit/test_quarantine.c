/* test_quarantine.c — quarantine in-process over a real SQLite file: a
 * volunteer whose results disagree with the quorum crosses the threshold
 * and gets no more work, while the lease it holds still completes and
 * counts; nothing is recomputed (the other tasks keep their outcomes);
 * release gives it work again; the rule's arithmetic at its boundary. */
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

static int64_t reg(cairn__core *c, const char *name, int slots) {
  char *apps[] = {"sum"}, token[65];
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, "rack", apps, 1, slots, NULL, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

/* One task, three replicas, quorum 2, exact. */
static int64_t submit(cairn__core *c) {
  static const char text[] = "{\"app\": \"sum\", \"replication\": 3, \"quorum\": 2, "
                             "\"tasks\": [{\"id\": \"x\"}]}";
  cairn_error err = {0};
  cairn__jobspec *spec = cairn__jobspec_parse(text, strlen(text), CAIRN_JOBSPEC_SERVER, &err);
  if (!spec)
    fail_msg("job rejected: %s", err.text);
  int64_t id = 0;
  if (cairn__core_submit(c, spec, &id, &err) != CAIRN_OK)
    fail_msg("submit: %s", err.text);
  return id;
}

/* v asks for work: its index, or 0 with *retry_ms set when it gets none. */
static int64_t ask(cairn__core *c, int64_t v, int *retry_ms) {
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, retry_ms, &err) != CAIRN_OK)
    fail_msg("work for %lld: %s", (long long)v, err.text);
  int64_t idx = w ? (int64_t)json_integer_value(json_object_get(w, "index")) : 0;
  json_decref(w);
  return idx;
}

static int64_t take(cairn__core *c, int64_t v) {
  int64_t idx = ask(c, v, &(int){0});
  if (!idx)
    fail_msg("volunteer %lld got no work", (long long)v);
  return idx;
}

static void result(cairn__core *c, int64_t v, int64_t idx, const char *out) {
  cairn_error err = {0};
  if (cairn__core_result(c, v, idx, 0, NULL, out, strlen(out), NULL, NULL, &err) != CAIRN_OK)
    fail_msg("result for %lld: %s", (long long)idx, err.text);
}

static cairn__task_info task0(cairn__core *c, int64_t job) {
  return core_fixture_task(c, job, 0);
}

#define vol core_fixture_vol

/* Quarantine's gauge and counter (cairn__quar_counts). */
static uint64_t quar_now(cairn__core *c) {
  uint64_t now = 0, total = 0;
  pthread_mutex_lock(&c->lock);
  cairn__quar_counts(c, &now, &total);
  cairn__core_unlock(c);
  return now;
}

static uint64_t quar_total(cairn__core *c) {
  uint64_t now = 0, total = 0;
  pthread_mutex_lock(&c->lock);
  cairn__quar_counts(c, &now, &total);
  cairn__core_unlock(c);
  return total;
}

static void test_liar_quarantined_then_released(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn__quar_configure(c, 0.5, 0.8);
  int64_t a = reg(c, "a", 1), b = reg(c, "b", 1), d = reg(c, "d", 2);
  int64_t jobs[CAIRN__QUAR_MIN + 2], accepted[CAIRN__QUAR_MIN + 2];
  for (int k = 0; k < CAIRN__QUAR_MIN - 1; k++) { /* 9 invalid: not yet judged */
    jobs[k] = submit(c);
    int64_t ia = take(c, a), ib = take(c, b), id = take(c, d);
    result(c, d, id, "2\n");
    result(c, a, ia, "1\n");
    result(c, b, ib, "1\n");
    assert_int_equal(task0(c, jobs[k]).state, TS_DONE);
    accepted[k] = task0(c, jobs[k]).accepted;
    assert_false(vol(c, d).quarantined);
  }
  /* the 10th and 11th: d holds a lease on both when the 10th tips it over */
  int k = CAIRN__QUAR_MIN - 1;
  jobs[k] = submit(c);
  jobs[k + 1] = submit(c);
  int64_t id10 = take(c, d), id11 = take(c, d);
  int64_t ia = take(c, a), ib = take(c, b);
  result(c, a, ia, "1\n");
  result(c, b, ib, "1\n");
  result(c, d, id10, "2\n");
  cairn__vol_info dv = vol(c, d);
  assert_true(dv.quarantined);
  assert_int_equal(dv.invalid, CAIRN__QUAR_MIN);
  assert_int_equal(quar_total(c), 1);
  assert_int_equal(quar_now(c), 1);
  fprintf(stderr, "quarantined after %lld invalid of %lld results\n", (long long)dv.invalid,
          (long long)(dv.valid + dv.invalid + dv.errors));
  /* its pending lease completes and counts */
  ia = take(c, a), ib = take(c, b);
  result(c, d, id11, "2\n");
  result(c, a, ia, "1\n");
  result(c, b, ib, "1\n");
  assert_int_equal(task0(c, jobs[k + 1]).state, TS_DONE);
  assert_int_equal(vol(c, d).invalid, CAIRN__QUAR_MIN + 1);
  /* no work for it now, with a long Retry-After, though a task waits */
  int retry_ms = 0;
  jobs[k + 2] = submit(c);
  assert_int_equal(ask(c, d, &retry_ms), 0);
  assert_int_equal(retry_ms, CAIRN__QUAR_RETRY_MS);
  /* nothing recomputed: every earlier task kept its accepted result */
  for (int i = 0; i < k; i++) {
    assert_int_equal(task0(c, jobs[i]).state, TS_DONE);
    assert_int_equal(task0(c, jobs[i]).accepted, accepted[i]);
  }
  assert_int_equal(vol(c, a).valid, CAIRN__QUAR_MIN + 1);
  assert_int_equal(vol(c, b).valid, CAIRN__QUAR_MIN + 1);
  assert_false(vol(c, d).banned);
  /* it survives a restart */
  core_fixture_reopen(f);
  c = f->c;
  assert_true(vol(c, d).quarantined);
  assert_false(vol(c, a).quarantined);
  assert_int_equal(quar_now(c), 1);
  cairn__vol_info info;
  cairn_error err = {0};
  assert_int_equal(cairn__core_volunteer(c, d, &info, &err), CAIRN_OK);
  assert_true(info.quarantined);
  /* release: work again, window emptied */
  assert_int_equal(cairn__core_release(c, d, &err), CAIRN_OK);
  assert_false(vol(c, d).quarantined);
  assert_int_equal(vol(c, d).q_seen, 0);
  assert_int_equal(quar_now(c), 0);
  assert_true(take(c, d) > 0);
  assert_int_equal(cairn__core_release(c, d, &err), CAIRN_ECONFLICT);
  assert_int_equal(cairn__core_release(c, 999, &err), CAIRN_ENOTFOUND);
  assert_int_equal(cairn__core_release(c, a, &err), CAIRN_ECONFLICT);
  /* a ban supersedes a quarantine: the gauge forgets it */
  cairn__quar_configure(c, 0.5, 0); /* the master sets it (master.c); the reopened core has none */
  mvol *dm = core_fixture_mvol(c, d);
  pthread_mutex_lock(&c->lock);
  for (int i = 0; i < CAIRN__QUAR_MIN; i++)
    cairn__quar_note(c, dm, OUT_INVALID);
  cairn__core_unlock(c);
  assert_true(vol(c, d).quarantined);
  assert_int_equal(quar_now(c), 1);
  json_t *report = NULL;
  assert_int_equal(cairn__core_ban(c, d, "test", &report, &err), CAIRN_OK);
  json_decref(report);
  assert_false(vol(c, d).quarantined);
  assert_int_equal(quar_now(c), 0);
}

/* The rule at its boundary: more than T × seen, and at least M seen. */
static void test_rule_boundary(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn__quar_configure(c, 0.5, 0.8);
  assert_false(cairn__quar_crossed(CAIRN__QUAR_MIN - 1, CAIRN__QUAR_MIN - 1, 0.5));
  assert_false(cairn__quar_crossed(10, 5, 0.5)); /* exactly half: not over */
  assert_true(cairn__quar_crossed(10, 6, 0.5));
  assert_false(cairn__quar_crossed(20, 16, 0.8));
  assert_true(cairn__quar_crossed(20, 17, 0.8));
  assert_false(cairn__quar_crossed(20, 20, 0)); /* 0: off */
  mvol v = {.id = 7};
  /* alternate valid, invalid: 5 of 10 is not over half */
  for (int i = 0; i < 10; i++)
    cairn__quar_note(c, &v, i % 2 ? OUT_INVALID : OUT_VALID);
  assert_false(v.quarantined);
  cairn__quar_note(c, &v, OUT_INVALID); /* 6 of 11 */
  assert_true(v.quarantined);
  /* the window slides: only the last 20 count */
  mvol w = {.id = 8};
  for (int i = 0; i < 10; i++)
    cairn__quar_note(c, &w, OUT_INVALID);
  assert_true(w.quarantined);
  mvol e = {.id = 9}; /* 20 valid, then invalid ones push them out */
  for (int i = 0; i < 30; i++)
    cairn__quar_note(c, &e, i < 20 ? OUT_VALID : OUT_INVALID);
  assert_false(e.quarantined); /* 10 of 20 */
  cairn__quar_note(c, &e, OUT_INVALID);
  assert_true(e.quarantined); /* 11 of 20 */
  mvol g = {.id = 10};
  cairn__quar_configure(c, 0, 0.8); /* off (errors as above) */
  for (int i = 0; i < 30; i++)
    cairn__quar_note(c, &g, OUT_INVALID);
  assert_false(g.quarantined);
  assert_int_equal(g.q_seen, CAIRN__QUAR_WINDOW);
  mvol h = {.id = 11}; /* errors: 16 of 20 is not over 0.8, 17 is */
  for (int i = 0; i < 20; i++)
    cairn__quar_note(c, &h, i < 4 ? OUT_VALID : OUT_ERROR);
  assert_false(h.quarantined);
  cairn__quar_note(c, &h, OUT_ERROR); /* the oldest valid slides out: 17 of 20 */
  assert_true(h.quarantined);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_liar_quarantined_then_released, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_rule_boundary, core_fixture_setup,
                                    core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
