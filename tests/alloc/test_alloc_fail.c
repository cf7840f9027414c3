/* test_alloc_fail.c — each public path in-process (job parse, register,
 * submit, allocation, result, a result that reaches quorum, ban, plan) with
 * its k-th allocation failing, for k = 1, 2, ... until the path completes
 * without reaching a k-th allocation. At each k: no crash, a clear error when the path fails
 * (err.text set), and no leak (LeakSanitizer at exit). Built and run only
 * with -DCAIRN_ALLOC_FAIL=ON (`make alloc-fail`; tests/alloc/alloc_fail.h). */
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
#include "plan/plan.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "tests/alloc/alloc_fail.h"
#include "tests/support/core_fixture.h"

#define MAX_K 100000

static const char job_text[] =
  "{\"app\": \"a\", \"replication\": 2, \"quorum\": 2, \"tasks\": ["
  "{\"id\": \"x\", \"args\": [\"1\"]}, {\"id\": \"y\", \"after\": [\"x\"]},"
  "{\"id\": \"z\", \"after\": [\"x\"]}, {\"id\": \"w\", \"after\": [\"y\", \"z\"]}]}";

typedef struct run {
  core_fixture *f; /* NULL for the paths without a core */
  int64_t vol[2];
  char tok[2][65];
  int64_t idx[2];
} run;

typedef void (*prep_fn)(run *r);
typedef cairn_status (*path_fn)(run *r, cairn_error *err);

/* Runs path with its k-th allocation failing, for k = 1, 2, ...: see the
 * file's comment. prep runs first, with nothing failing. */
static void drive(const char *name, int core, prep_fn prep, path_fn path) {
  long k;
  for (k = 1; k <= MAX_K; k++) {
    run r = {0};
    void *state = NULL;
    if (core) {
      assert_int_equal(core_fixture_setup(&state), 0);
      r.f = state;
    }
    if (prep)
      prep(&r);
    cairn_error err = {0};
    alloc_fail_arm(k);
    cairn_status st = path(&r, &err);
    int hit = alloc_fail_disarm();
    if (hit && st != CAIRN_OK && !err.text[0])
      fail_msg("%s: allocation %ld failed: status %d without a message", name, k, (int)st);
    if (core)
      core_fixture_teardown(&state);
    if (!hit) {
      if (st != CAIRN_OK)
        fail_msg("%s: failed with no allocation failing: %s", name, err.text);
      break;
    }
  }
  assert_true(k <= MAX_K);
  fprintf(stderr, "%s: each of its %ld allocations failed once, survived\n", name, k - 1);
}

static int64_t reg(cairn__core *c, const char *name, char token[65]) {
  char *apps[] = {"a"};
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, "rack", apps, 1, 1, NULL, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

static cairn_status work(run *r, int v, cairn_error *err) {
  char *apps[] = {"a"};
  json_t *w = NULL;
  cairn_status st = cairn__core_work(r->f->c, r->vol[v], NULL, apps, 1, &w, &(int){0}, err);
  r->idx[v] = w ? (int64_t)json_integer_value(json_object_get(w, "index")) : 0;
  json_decref(w);
  return st;
}

static cairn_status result(run *r, int v, cairn_error *err) {
  json_t *next = NULL;
  cairn_status st =
    cairn__core_result(r->f->c, r->vol[v], r->idx[v], 0, NULL, "out\n", 4, NULL, &next, err);
  json_decref(next);
  return st;
}

/* ---- preparations (nothing fails) ---- */

static void prep_vols(run *r) {
  r->vol[0] = reg(r->f->c, "v0", r->tok[0]);
  r->vol[1] = reg(r->f->c, "v1", r->tok[1]);
}

static void prep_job(run *r) {
  prep_vols(r);
  core_fixture_submit(r->f->c, job_text);
}

static void prep_leased(run *r) {
  prep_job(r);
  cairn_error err = {0};
  if (work(r, 0, &err) != CAIRN_OK || r->idx[0] == 0)
    fail_msg("work: %s", err.text);
}

static void prep_half(run *r) {
  prep_leased(r);
  cairn_error err = {0};
  if (work(r, 1, &err) != CAIRN_OK || result(r, 0, &err) != CAIRN_OK)
    fail_msg("prepare: %s", err.text);
}

static void prep_done(run *r) {
  prep_leased(r);
  cairn_error err = {0};
  if (work(r, 1, &err) != CAIRN_OK || result(r, 0, &err) != CAIRN_OK ||
      result(r, 1, &err) != CAIRN_OK)
    fail_msg("prepare: %s", err.text);
}

/* ---- the paths ---- */

static cairn_status path_parse(run *r, cairn_error *err) {
  (void)r;
  cairn__jobspec *s = cairn__jobspec_parse(job_text, strlen(job_text), CAIRN_JOBSPEC_SERVER, err);
  cairn__jobspec_free(s);
  return s ? CAIRN_OK : CAIRN_ENOMEM;
}

static cairn_status path_register(run *r, cairn_error *err) {
  char *apps[] = {"a", "b"};
  int64_t id = 0;
  char token[65];
  return cairn__core_register(r->f->c, "vol", "rack", apps, 2, 2, NULL, &id, token, err);
}

static cairn_status path_submit(run *r, cairn_error *err) {
  cairn_error perr = {0};
  cairn__jobspec *s = cairn__jobspec_parse(job_text, strlen(job_text), CAIRN_JOBSPEC_SERVER, &perr);
  if (!s) /* a failure of the parse is path_parse's */
    return CAIRN_OK;
  int64_t id = 0;
  return cairn__core_submit(r->f->c, s, &id, err);
}

static cairn_status path_work(run *r, cairn_error *err) { return work(r, 0, err); }

static cairn_status path_result(run *r, cairn_error *err) { return result(r, 0, err); }

static cairn_status path_quorum(run *r, cairn_error *err) { return result(r, 1, err); }

static cairn_status path_ban(run *r, cairn_error *err) {
  json_t *report = NULL;
  cairn_status st = cairn__core_ban(r->f->c, r->vol[0], "test", &report, err);
  json_decref(report);
  return st;
}

static cairn_status plan(const char *instance, const char *algo, cairn_error *err) {
  cairn__plan_instance in;
  cairn_status st = cairn__plan_instance_parse(instance, strlen(instance), &in, err);
  if (st != CAIRN_OK)
    return st;
  cairn__plan_schedule s;
  st = cairn__plan_run(&in, algo, &s, err);
  if (st == CAIRN_OK) {
    char *json = cairn__plan_schedule_to_json(&s, &in);
    if (!json) {
      cairn__error_set(err, CAIRN_ENOMEM, "plan: out of memory");
      st = CAIRN_ENOMEM;
    }
    free(json);
  }
  cairn__plan_schedule_free(&s);
  cairn__plan_instance_free(&in);
  return st;
}

static cairn_status path_plan_lcf(run *r, cairn_error *err) {
  (void)r;
  return plan("{\"model\":\"1/C\",\"C\":2,\"clusters\":[{\"size\":5},{\"size\":4},{\"size\":3}]}",
              "lcf", err);
}

static cairn_status path_plan_ecef(run *r, cairn_error *err) {
  (void)r;
  return plan("{\"model\":\"grid\",\"root\":1,\"T\":[5,7.5,0],\"L\":[[null,1,2],[1,null,3],"
              "[2,3,null]],\"g\":[[0,10,10],[10,0,10.25],[10,10,0]]}",
              "ECEF-LAT", err);
}

static void test_parse(void **s) { (void)s; drive("job parse", 0, NULL, path_parse); }
static void test_register(void **s) { (void)s; drive("register", 1, NULL, path_register); }
static void test_submit(void **s) { (void)s; drive("submit", 1, prep_vols, path_submit); }
static void test_work(void **s) { (void)s; drive("allocation", 1, prep_job, path_work); }
static void test_result(void **s) { (void)s; drive("result", 1, prep_leased, path_result); }
static void test_quorum(void **s) { (void)s; drive("result reaching quorum", 1, prep_half, path_quorum); }
static void test_ban(void **s) { (void)s; drive("ban", 1, prep_done, path_ban); }
static void test_plan(void **s) {
  (void)s;
  drive("plan lcf", 0, NULL, path_plan_lcf);
  drive("plan ECEF-LAT", 0, NULL, path_plan_ecef);
}

int main(void) {
  alloc_fail_init();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_parse),  cmocka_unit_test(test_register), cmocka_unit_test(test_submit),
    cmocka_unit_test(test_work),   cmocka_unit_test(test_result),   cmocka_unit_test(test_quorum),
    cmocka_unit_test(test_ban),
    cmocka_unit_test(test_plan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
