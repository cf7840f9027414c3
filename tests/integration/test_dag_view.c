/* test_dag_view.c — GET /v1/jobs/{id}/dag on a real cairn-server: a job's
 * dag (keys, depths, parents in job-file order) and E(t) of its policy and
 * of fifo, equal to the IC Pebble Game played here on the same dag; the
 * admin token, unknown jobs, bad ids and the size bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dag.h"
#include "common/ic_game.h"
#include "common/policy.h"
#include "tests/support/harness.h"

/* A wavefront of side k: task (i,j) after (i-1,j) and (i,j-1). */
static json_t *wavefront(int k, const char *policy) {
  json_t *tasks = json_array();
  for (int i = 0; i < k; i++)
    for (int j = 0; j < k; j++) {
      char id[32], a[32], b[32];
      snprintf(id, sizeof id, "%d,%d", i, j);
      json_t *t = json_pack("{ss}", "id", id), *after = json_array();
      if (i) {
        snprintf(a, sizeof a, "%d,%d", i - 1, j);
        json_array_append_new(after, json_string(a));
      }
      if (j) {
        snprintf(b, sizeof b, "%d,%d", i, j - 1);
        json_array_append_new(after, json_string(b));
      }
      json_object_set_new(t, "after", after);
      json_array_append_new(tasks, t);
    }
  return json_pack("{ss ss ss so}", "name", "wave", "app", "x", "policy", policy, "tasks", tasks);
}

static long long submit(const char *url, json_t *job) {
  json_t *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/jobs", HARNESS_ADMIN_TOKEN, job, &r), 201);
  long long id = json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  json_decref(job);
  return id;
}

/* The answer's profile under name equals cairn_ic_play of ops on its dag. */
static void check_profile(json_t *o, const char *name, const cairn_policy_ops *ops) {
  json_t *par = json_object_get(o, "parents");
  uint32_t n = (uint32_t)json_array_size(par);
  cairn_edge *e = calloc(2 * (size_t)n + 1, sizeof *e);
  uint64_t m = 0;
  for (uint32_t c = 0; c < n; c++) {
    size_t k;
    json_t *p;
    json_array_foreach(json_array_get(par, c), k, p) e[m++] = (cairn_edge){(uint32_t)json_integer_value(p), c};
  }
  cairn_error err = {0};
  cairn_dag *d = cairn_dag_build(n, e, m, &err);
  assert_non_null(d);
  uint32_t *want = calloc((size_t)n + 1, sizeof *want);
  assert_true(cairn_ic_play(d, ops, 1, want, NULL, &err) >= 0);
  json_t *got = json_object_get(json_object_get(o, "profiles"), name);
  assert_int_equal(json_array_size(got), n + 1);
  for (uint32_t t = 0; t <= n; t++)
    assert_int_equal(json_integer_value(json_array_get(got, t)), want[t]);
  assert_int_equal(want[0], 1);
  assert_int_equal(want[n], 0);
  free(want);
  free(e);
  cairn_dag_free(d);
}

static void test_dag_view(void **state) {
  (void)state;
  char dir[4096], db[4200], path[64];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  harness_server srv;
  assert_int_equal(harness_server_start(&srv, db, NULL), 0);
  long long id = submit(srv.url, wavefront(5, "ic"));
  snprintf(path, sizeof path, "/v1/jobs/%lld/dag", id);

  json_t *o = NULL;
  assert_int_equal(harness_http(srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL), 200);
  assert_int_equal(json_array_size(json_object_get(o, "keys")), 25);
  assert_string_equal(json_string_value(json_object_get(o, "policy")), "ic");
  json_t *depth = json_object_get(o, "depth"), *par = json_object_get(o, "parents");
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) {
      assert_int_equal(json_integer_value(json_array_get(depth, (size_t)(i * 5 + j))), i + j);
      assert_int_equal(json_array_size(json_array_get(par, (size_t)(i * 5 + j))), (i > 0) + (j > 0));
    }
  check_profile(o, "fifo", &cairn_policy_fifo);
  check_profile(o, "ic", &cairn_policy_ic);
  json_decref(o);

  /* A fifo job has one profile; the token, unknown jobs and bad ids. */
  long long fifo = submit(srv.url, wavefront(2, "fifo"));
  snprintf(path, sizeof path, "/v1/jobs/%lld/dag", fifo);
  assert_int_equal(harness_http(srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL), 200);
  assert_int_equal(json_object_size(json_object_get(o, "profiles")), 1);
  json_decref(o);
  assert_int_equal(harness_http(srv.url, "GET", path, NULL, NULL, 0, NULL, NULL, NULL), 401);
  assert_int_equal(harness_http(srv.url, "GET", path, "wrong-token-0123456789", NULL, 0, NULL, NULL, NULL), 403);
  assert_int_equal(harness_http(srv.url, "POST", path, HARNESS_ADMIN_TOKEN, "{}", 2, NULL, NULL, NULL), 405);
  assert_int_equal(harness_http(srv.url, "GET", "/v1/jobs/999/dag", HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(harness_http(srv.url, "GET", "/v1/jobs/x1/dag", HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 400);

  /* Past 20,000 tasks: 413 naming the bound, nothing built. */
  long long big = submit(srv.url, wavefront(142, "fifo")); /* 20,164 tasks */
  snprintf(path, sizeof path, "/v1/jobs/%lld/dag", big);
  assert_int_equal(harness_http(srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL), 413);
  const char *msg = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
  assert_non_null(msg);
  assert_non_null(strstr(msg, "20000 tasks"));
  json_decref(o);
  assert_int_equal(harness_server_stop(&srv, SIGTERM), 0);
  harness_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_dag_view)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
