/* test_read_access.c — a registered volunteer reads only what its own
 * leases need: the input files of the tasks it holds and the outputs of
 * their parents. Any other file or output is 403 for it (200 for the
 * admin). Real cairn-server on loopback; volunteers speak HTTP as a
 * modified worker would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static void upload(const char *url, const char *text, char sha[65]) {
  char path[128];
  cairn__sha256_hex(text, strlen(text), sha);
  snprintf(path, sizeof path, "/v1/files/%s", sha);
  assert_int_equal(harness_http(url, "PUT", path, ADMIN, text, strlen(text), NULL, NULL, NULL),
                   201);
}

static long get(const char *url, const char *path, const char *token) {
  return harness_http(url, "GET", path, token, NULL, 0, NULL, NULL, NULL);
}

/* POST /v1/work for token: the offer (caller decrefs), or NULL on 204. */
static json_t *work(const char *url, const char *token) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/work", token, "{}", 2, &r, NULL, NULL);
  assert_true(st == 200 || st == 204);
  return r;
}

static void test_volunteer_reads_only_its_leases(void **state) {
  server_fixture *f = *state;
  const char *url = f->srv.url;
  char a[65], b[65], pa[128], pb[128], v1[65], v2[65], job[1024];
  upload(url, "input of the first task\n", a);
  upload(url, "a file no task of theirs reads\n", b);
  snprintf(pa, sizeof pa, "/v1/files/%s", a);
  snprintf(pb, sizeof pb, "/v1/files/%s", b);
  snprintf(job, sizeof job,
           "{\"app\": \"sum\", \"policy\": \"fifo\", \"files\": [{\"name\": \"a\", \"sha256\": "
           "\"%s\"}, {\"name\": \"b\", \"sha256\": \"%s\"}], \"tasks\": [{\"id\": \"t1\", "
           "\"inputs\": [\"a\"]}, {\"id\": \"t2\", \"after\": [\"t1\"]}]}", a, b);
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL),
                   201);
  json_decref(r);
  assert_true(harness_register(url, "one", "sum", v1) > 0);
  assert_true(harness_register(url, "two", "sum", v2) > 0);

  /* before any lease: nothing */
  assert_int_equal(get(url, pa, v1), 403);
  json_t *w = work(url, v1); /* t1, reading a */
  assert_non_null(w);
  long long idx = (long long)json_integer_value(json_object_get(w, "index"));
  json_decref(w);
  assert_int_equal(get(url, pa, v1), 200); /* its task's input */
  assert_int_equal(get(url, pb, v1), 403); /* a file of the job no task of its reads */
  assert_int_equal(get(url, pa, v2), 403); /* another volunteer's input */
  assert_int_equal(get(url, pb, ADMIN), 200);

  char path[64];
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  const char *res = "{\"exit_status\": 0, \"output\": \"42\\n\"}";
  assert_int_equal(harness_http(url, "PUT", path, v1, res, strlen(res), NULL, NULL, NULL), 200);
  assert_int_equal(get(url, pa, v1), 403); /* its lease is returned */

  w = work(url, v2); /* t2, whose parent is t1 */
  assert_non_null(w);
  const char *out = json_string_value(json_object_get(
    json_array_get(json_object_get(json_object_get(w, "task"), "parents"), 0), "url"));
  assert_non_null(out);
  char parent[64];
  snprintf(parent, sizeof parent, "%s", out);
  json_decref(w);
  assert_int_equal(get(url, parent, v2), 200); /* its parent's output */
  assert_int_equal(get(url, parent, v1), 403); /* no lease reads it now */
  assert_int_equal(get(url, parent, ADMIN), 200);
  assert_int_equal(get(url, "/v1/tasks/999/output", v2), 403);
  fprintf(stderr, "read access: own input 200, other files and outputs 403\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_volunteer_reads_only_its_leases),
  };
  return cmocka_run_group_tests(tests, server_fixture_setup, server_fixture_teardown);
}
