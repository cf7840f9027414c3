/* test_fit.c — resource requests against offers: the pure functions of
 * common/resources.h, and the master's core (server/core/fit.c) on a real
 * SQLite file: a volunteer gets only tasks that fit what it has free, in the
 * policy's order among those; a task that fits no offer is counted "unfit"
 * with the largest offer, parked, and given back when a larger offer comes;
 * offers and requests survive a restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/resources.h"
#include "server/core/fit.h"
#include "tests/support/core_fixture.h"

static void test_pure(void **state) {
  (void)state;
  cairn__resources four = {4, 8192, 100}, one = CAIRN_RESOURCES_DEFAULT;
  assert_true(cairn__resources_fit(&one, &four));
  assert_true(cairn__resources_fit(&four, &four));
  assert_false(cairn__resources_fit(&four, &one));
  assert_false(cairn__resources_fit(&(cairn__resources){1, 8193, 0}, &four));
  assert_false(cairn__resources_fit(&(cairn__resources){1, 0, 101}, &four));
  cairn__resources acc = four;
  cairn__resources_add(&acc, &one, 0);
  assert_true(cairn__resources_equal(&acc, &(cairn__resources){3, 8192, 100}));
  cairn__resources_add(&acc, &(cairn__resources){9, 9000, 0}, 0); /* never below 0 */
  assert_true(cairn__resources_equal(&acc, &(cairn__resources){0, 0, 100}));
  cairn__resources_add(&acc, &four, 1);
  assert_true(cairn__resources_equal(&acc, &(cairn__resources){4, 8192, 200}));
  cairn__resources m = {2, 0, 500};
  cairn__resources_max(&m, &four);
  assert_true(cairn__resources_equal(&m, &(cairn__resources){4, 8192, 500}));

  cairn__resources classes[] = {{1, 0, 0}, {8, 0, 0}, {1, 9000, 0}, {4, 8192, 100}};
  uint32_t counts[] = {10, 2, 3, 1};
  assert_int_equal(cairn__resources_unfit(classes, counts, 4, &four), 5);
  assert_int_equal(cairn__resources_unfit(classes, counts, 4, &(cairn__resources){8, 9000, 100}), 0);
  assert_int_equal(cairn__resources_unfit(classes, counts, 1, &one), 0);

  json_t *j = cairn__resources_json(&four);
  cairn__resources back;
  cairn_error err = {0};
  assert_int_equal(cairn__resources_parse(j, &one, &back, "x", &err), CAIRN_OK);
  assert_true(cairn__resources_equal(&back, &four));
  json_decref(j);
}

/* ---- the core ---- */

static int64_t reg(cairn__core *c, const char *name, const cairn__resources *offer) {
  char token[65], *apps[] = {"sleep"};
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, "rack", apps, 1, 1, NULL, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  if (offer && cairn__core_set_offer(c, id, offer, &err) != CAIRN_OK)
    fail_msg("offer %s: %s", name, err.text);
  return id;
}

/* v asks for work: the task id it got ("" when none) and its index. */
static const char *ask(cairn__core *c, int64_t v, int64_t *idx) {
  static char got[64];
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err) != CAIRN_OK)
    fail_msg("work: %s", err.text);
  got[0] = '\0';
  if (w) {
    json_t *t = json_object_get(w, "task");
    snprintf(got, sizeof got, "%s", json_string_value(json_object_get(t, "id")));
    *idx = (int64_t)json_integer_value(json_object_get(w, "index"));
    /* the work answer carries the request */
    assert_non_null(json_object_get(t, CAIRN_RESOURCES_KEY));
    json_decref(w);
  }
  return got;
}

static void done(cairn__core *c, int64_t v, int64_t idx) {
  cairn_error err = {0};
  if (cairn__core_result(c, v, idx, 0, NULL, "ok", 2, NULL, NULL, &err) != CAIRN_OK)
    fail_msg("result: %s", err.text);
}

static void expect_unfit(cairn__core *c, int64_t job, long long unfit, long long cores,
                         long long mem) {
  json_t *o = cairn__core_job_json(c, job, 1);
  json_t *lo = json_object_get(o, "largest_offer");
  char *text = json_dumps(o, JSON_COMPACT);
  if (json_integer_value(json_object_get(o, "unfit")) != unfit ||
      json_integer_value(json_object_get(lo, "cores")) != cores ||
      json_integer_value(json_object_get(lo, "memory_mib")) != mem)
    fail_msg("wanted unfit %lld, largest offer %lld cores %lld MiB: %s", unfit, cores, mem, text);
  free(text);
  json_decref(o);
}

static void test_core_fit(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  static const char job[] =
    "{\"app\": \"sleep\", \"policy\": \"fifo\", \"tasks\": ["
    "{\"id\": \"big\", \"resources\": {\"cores\": 4}},"
    "{\"id\": \"mem\", \"resources\": {\"memory_mib\": 2048}},"
    "{\"id\": \"s1\"}, {\"id\": \"s2\"}, {\"id\": \"s3\"}, {\"id\": \"s4\"}]}";
  cairn_error err = {0};
  cairn__jobspec *spec = cairn__jobspec_parse(job, strlen(job), CAIRN_JOBSPEC_SERVER, &err);
  assert_non_null(spec);
  int64_t jid = 0, ia[4], ib[4];
  assert_int_equal(cairn__core_submit(c, spec, &jid, &err), CAIRN_OK);
  /* no offer yet: nothing is unfit, no largest offer */
  json_t *o = cairn__core_job_json(c, jid, 1);
  assert_int_equal(json_integer_value(json_object_get(o, "unfit")), 0);
  assert_true(json_is_null(json_object_get(o, "largest_offer")));
  json_decref(o);

  int64_t a = reg(c, "a", &(cairn__resources){4, 1024, 0});
  int64_t b = reg(c, "b", &(cairn__resources){2, 0, 0});
  expect_unfit(c, jid, 1, 4, 1024); /* "mem" wants 2048 MiB */

  assert_string_equal(ask(c, a, &ia[0]), "big");
  assert_string_equal(ask(c, a, &ia[1]), ""); /* its 4 cores are taken */
  /* "big" fits b never, "mem" nobody (parked): the next fitting picks */
  assert_string_equal(ask(c, b, &ib[0]), "s1");
  assert_string_equal(ask(c, b, &ib[1]), "s2");
  assert_string_equal(ask(c, b, &ib[2]), "");
  done(c, a, ia[0]);
  assert_string_equal(ask(c, a, &ia[1]), "s3");
  assert_string_equal(ask(c, a, &ia[2]), "s4");
  assert_string_equal(ask(c, a, &ia[3]), ""); /* only "mem" is left: unfit */
  expect_unfit(c, jid, 1, 4, 1024);
  /* GET /v1/volunteers shows each offer and what its leases hold */
  json_t *root = cairn__core_volunteers_json(c);
  json_t *vols = json_object_get(root, "volunteers");
  json_t *va = json_array_get(vols, (size_t)a - 1);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(va, "resources"), "cores")),
                   4);
  assert_int_equal(
    json_integer_value(json_object_get(json_object_get(va, "resources_held"), "cores")), 2);
  json_decref(root);

  /* offers and requests outlive a restart */
  core_fixture_reopen(f);
  c = f->c;
  expect_unfit(c, jid, 1, 4, 1024);
  assert_string_equal(ask(c, b, &ib[2]), ""); /* b's two leases still hold its cores */

  /* b grows: "mem" fits it now and comes back from the parked tasks */
  cairn__report r;
  memset(&r, 0, sizeof r);
  r.fields = CAIRN_FEAT_RESOURCES;
  r.resources = (cairn__resources){3, 4096, 0};
  json_t *w = NULL;
  assert_int_equal(cairn__core_work(c, b, &r, NULL, 0, &w, &(int){0}, &err), CAIRN_OK);
  assert_non_null(w);
  assert_string_equal(json_string_value(json_object_get(json_object_get(w, "task"), "id")),
                      "mem");
  json_decref(w);
  expect_unfit(c, jid, 0, 4, 4096);

  /* a volunteer that states no offer (an older worker) is not limited:
   * it takes a task that is unfit for every offer stated */
  static const char wide[] = "{\"app\": \"sleep\", \"tasks\": ["
                             "{\"id\": \"wide\", \"resources\": {\"cores\": 64}}]}";
  spec = cairn__jobspec_parse(wide, strlen(wide), CAIRN_JOBSPEC_SERVER, &err);
  assert_non_null(spec);
  int64_t jw = 0, iw = 0;
  assert_int_equal(cairn__core_submit(c, spec, &jw, &err), CAIRN_OK);
  expect_unfit(c, jw, 1, 4, 4096);
  assert_string_equal(ask(c, a, &ia[0]), "");
  int64_t old = reg(c, "old", NULL);
  assert_string_equal(ask(c, old, &iw), "wide");
  done(c, old, iw);
  expect_unfit(c, jw, 0, 4, 4096); /* done: nothing unfit left */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_pure),
    cmocka_unit_test_setup_teardown(test_core_fit, core_fixture_setup, core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
