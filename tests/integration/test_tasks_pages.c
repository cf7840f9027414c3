/* test_tasks_pages.c — GET /v1/jobs/{id}/tasks in pages, on a real
 * cairn-server over loopback: a job of 2,500 tasks comes 1,000 a page by
 * default, each page "after" the last one's "next", keys consecutive and
 * none twice, "next" null on the last page; a page of one task carries
 * that task's own result; a bad "limit" or "after" is a 400 naming it; and
 * `cairn results` prints every task of the job across pages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
enum { NTASKS = 2500 };

static long long submit(const char *url, int ntasks) {
  size_t cap = 64 + (size_t)ntasks * 24;
  char *job = malloc(cap);
  size_t n = (size_t)snprintf(job, cap, "{\"app\": \"pg\", \"policy\": \"fifo\", \"tasks\": [");
  for (int i = 0; i < ntasks; i++)
    n += (size_t)snprintf(job + n, cap - n, "%s{\"id\": \"t%d\"}", i ? ", " : "", i);
  n += (size_t)snprintf(job + n, cap - n, "]}");
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "POST", "/v1/jobs", ADMIN, job, n, &r, NULL, NULL), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  free(job);
  return id;
}

static json_t *page(const char *url, long long job, const char *query) {
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks%s", job, query);
  json_t *r = NULL;
  long st = harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL);
  if (st != 200)
    fail_msg("GET %s: %ld", path, st);
  return r;
}

static void expect_400(const char *url, long long job, const char *query, const char *needle) {
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks%s", job, query);
  json_t *r = NULL;
  long st = harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL);
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  if (st != 400 || !msg || !strstr(msg, needle))
    fail_msg("GET %s: status %ld message \"%s\" (wanted 400 naming \"%s\")", path, st,
             msg ? msg : "", needle);
  json_decref(r);
}

/* Runs the next task (fifo: task id want) for volunteer tok, with output out. */
static void run_one(const char *url, const char *tok, const char *want, const char *out) {
  json_t *w = NULL;
  assert_int_equal(harness_http(url, "POST", "/v1/work", tok, NULL, 0, &w, NULL, NULL), 200);
  long long idx = (long long)json_integer_value(json_object_get(w, "index"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(w, "task"), "id")), want);
  json_decref(w);
  char path[64], body[128];
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  int n = snprintf(body, sizeof body, "{\"exit_status\": 0, \"output\": \"%s\"}", out);
  assert_int_equal(harness_http(url, "PUT", path, tok, body, (size_t)n, NULL, NULL, NULL), 200);
}

static void test_pages_cover_the_job(void **state) {
  server_fixture *f = *state;
  const char *url = f->srv.url;
  long long job = submit(url, NTASKS), other = submit(url, 3);
  char tok[65];
  harness_register(url, "w", "pg", tok);
  run_one(url, tok, "t0", "r0");
  run_one(url, tok, "t1", "r1");
  json_t *first = page(url, job, "?limit=2");
  long long k0 = (long long)json_integer_value(
    json_object_get(json_array_get(json_object_get(first, "tasks"), 0), "key"));
  long long k1 = k0 + 1;
  assert_string_equal(json_string_value(json_object_get(
                        json_array_get(json_object_get(first, "tasks"), 0), "output")), "r0");
  json_decref(first);

  /* the default page, then the rest */
  long long key = 0, total = 0;
  char q[96] = "";
  for (int pages = 0;; pages++) {
    assert_true(pages < 3);
    json_t *p = page(url, job, q), *t;
    size_t i;
    json_array_foreach(json_object_get(p, "tasks"), i, t) {
      long long k = (long long)json_integer_value(json_object_get(t, "key"));
      assert_true(key == 0 || k == key + 1);
      key = k;
      total++;
    }
    json_t *next = json_object_get(p, "next");
    if (pages == 0) {
      assert_int_equal(json_array_size(json_object_get(p, "tasks")), 1000);
      assert_int_equal(json_integer_value(next), key);
    }
    if (json_is_null(next)) {
      json_decref(p);
      break;
    }
    snprintf(q, sizeof q, "?after=%lld&limit=10000", (long long)json_integer_value(next));
    json_decref(p);
  }
  assert_int_equal(total, NTASKS);
  assert_int_equal(key, k0 + NTASKS - 1);

  /* a page of one task: its own result */
  snprintf(q, sizeof q, "?after=%lld&limit=1", k0);
  json_t *p = page(url, job, q);
  json_t *t = json_array_get(json_object_get(p, "tasks"), 0);
  assert_int_equal(json_array_size(json_object_get(p, "tasks")), 1);
  assert_int_equal(json_integer_value(json_object_get(t, "key")), k1);
  assert_string_equal(json_string_value(json_object_get(t, "output")), "r1");
  assert_int_equal(json_integer_value(json_object_get(p, "next")), k1);
  json_decref(p);
  /* the last task: the last page */
  snprintf(q, sizeof q, "?after=%lld", key - 1);
  p = page(url, job, q);
  assert_int_equal(json_array_size(json_object_get(p, "tasks")), 1);
  assert_true(json_is_null(json_object_get(p, "next")));
  json_decref(p);

  /* bad arguments */
  expect_400(url, job, "?limit=0", "\"limit\"");
  expect_400(url, job, "?limit=10001", "\"limit\"");
  expect_400(url, job, "?limit=ten", "\"limit\"");
  expect_400(url, job, "?limit=-5", "\"limit\"");
  expect_400(url, job, "?after=0", "\"after\"");
  expect_400(url, job, "?after=1x", "\"after\"");
  snprintf(q, sizeof q, "?after=%lld", key + 1); /* the other job's first task */
  expect_400(url, job, q, "names no task of job");
  snprintf(q, sizeof q, "?after=%lld", k0);
  expect_400(url, other, q, "names no task of job");
  assert_int_equal(harness_http(url, "GET", "/v1/jobs/99/tasks", ADMIN, NULL, 0, NULL, NULL, NULL),
                   404);

  /* the CLI reads every page */
  char bin[4096], id[32], *out = NULL;
  harness_bin(bin, sizeof bin, "cairn");
  snprintf(id, sizeof id, "%lld", job);
  const char *argv[] = {bin, "results", id, "--server", url, "--token", ADMIN, NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  long lines = 0;
  for (const char *s = out; s && *s; s++)
    lines += *s == '\n';
  assert_int_equal(lines, NTASKS);
  assert_non_null(strstr(out, "t1\tdone\t"));
  assert_non_null(strstr(out, "t2499\teligible\t"));
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_pages_cover_the_job),
  };
  return cmocka_run_group_tests(tests, server_fixture_setup, server_fixture_teardown);
}
