/* test_batch.c — batches (feature "batch") against a real cairn-server on
 * loopback: one POST /v1/work with "max" takes several tasks, each with its
 * own index and lease; one POST /v1/results reports several, answering each
 * entry (a stale one gets 409, the others are accepted, and they survive a
 * kill -9 of the master); a malformed entry refuses the whole request and
 * changes nothing; the caps are enforced; heartbeats extend the leases of
 * tasks taken ahead; real cairn-workers finish a job with and without
 * --prefetch, and one keeps the leases of the tasks it holds ahead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

static long long submit(const char *url, const char *app, int ntasks) {
  json_t *job = json_pack("{s:s, s:s, s:[]}", "app", app, "policy", "fifo", "tasks");
  for (int i = 0; i < ntasks; i++) {
    char id[16];
    snprintf(id, sizeof id, "t%d", i);
    json_array_append_new(json_object_get(job, "tasks"), json_pack("{s:s}", "id", id));
  }
  json_t *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/jobs", ADMIN, job, &r), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(job);
  json_decref(r);
  return id;
}

/* POST /v1/work {"max": max}; the status, and *tasks the "tasks" array
 * (a new reference, or NULL). */
static long take(const char *url, const char *token, const char *body, json_t **tasks) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/work", token, body, strlen(body), &r, NULL, NULL);
  *tasks = json_incref(json_object_get(r, "tasks"));
  json_decref(r);
  return st;
}

static long long index_of(json_t *tasks, size_t i) {
  return (long long)json_integer_value(json_object_get(json_array_get(tasks, i), "index"));
}

/* POST /v1/results with body; *resp the answer. */
static long post_results(const char *url, const char *token, const char *body, json_t **resp) {
  return harness_http(url, "POST", "/v1/results", token, body, strlen(body), resp, NULL, NULL);
}

static long entry_status(json_t *resp, size_t i) {
  json_t *e = json_array_get(json_object_get(resp, "results"), i);
  return (long)json_integer_value(json_object_get(e, "status"));
}

static json_t *job_json(const char *url, long long job) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  return r;
}

static long long done_count(const char *url, long long job) {
  json_t *r = job_json(url, job);
  long long n = (long long)json_integer_value(json_object_get(json_object_get(r, "counts"), "done"));
  json_decref(r);
  return n;
}

static void test_take_several(void **state) {
  fixture *f = *state;
  char tok[65];
  harness_register(f->srv.url, "taker", "many", tok);
  submit(f->srv.url, "many", 6);
  json_t *tasks = NULL;
  assert_int_equal(take(f->srv.url, tok, "{\"max\": 0}", &tasks), 400);
  assert_int_equal(take(f->srv.url, tok, "{\"max\": 65}", &tasks), 400);
  assert_int_equal(take(f->srv.url, tok, "{\"max\": \"4\"}", &tasks), 400);
  assert_int_equal(take(f->srv.url, tok, "{\"max\": 4}", &tasks), 200);
  assert_int_equal(json_array_size(tasks), 4);
  for (size_t i = 0; i < 4; i++) {
    json_t *w = json_array_get(tasks, i);
    assert_true(index_of(tasks, i) > 0);
    assert_true(json_integer_value(json_object_get(w, "lease_expires")) > 0);
    assert_non_null(json_object_get(w, "task"));
    for (size_t k = 0; k < i; k++)
      assert_true(index_of(tasks, k) != index_of(tasks, i));
  }
  json_decref(tasks);
  /* the two left, then none: 204 */
  assert_int_equal(take(f->srv.url, tok, "{\"max\": 4, \"apps\": [\"many\"]}", &tasks), 200);
  assert_int_equal(json_array_size(tasks), 2);
  json_decref(tasks);
  assert_int_equal(take(f->srv.url, tok, "{\"max\": 4}", &tasks), 204);
  assert_null(tasks);
}

static void test_heartbeat_extends_taken_leases(void **state) {
  fixture *f = *state;
  char tok[65];
  harness_register(f->srv.url, "beater", "beat", tok);
  submit(f->srv.url, "beat", 3);
  json_t *tasks = NULL;
  assert_int_equal(take(f->srv.url, tok, "{\"max\": 3}", &tasks), 200);
  assert_int_equal(json_array_size(tasks), 3);
  json_t *hb = json_pack("{s:[I, I, I]}", "running", (json_int_t)index_of(tasks, 0),
                         (json_int_t)index_of(tasks, 1), (json_int_t)index_of(tasks, 2));
  json_t *r = NULL;
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/heartbeat", tok, hb, &r), 200);
  json_t *ext = json_object_get(r, "extended");
  assert_int_equal(json_array_size(ext), 3);
  for (size_t i = 0; i < 3; i++) {
    int found = 0;
    for (size_t k = 0; k < 3; k++)
      found |= json_integer_value(json_array_get(ext, k)) == index_of(tasks, i);
    assert_true(found);
  }
  json_decref(r);
  json_decref(hb);
  json_decref(tasks);
}

static void test_results_stale_entry_and_kill9(void **state) {
  fixture *f = *state;
  char tok[65], body[1024];
  harness_register(f->srv.url, "batcher", "res", tok);
  long long job = submit(f->srv.url, "res", 3);
  json_t *tasks = NULL, *r = NULL;
  assert_int_equal(take(f->srv.url, tok, "{\"max\": 3}", &tasks), 200);
  assert_int_equal(json_array_size(tasks), 3);
  long long a = index_of(tasks, 0), b = index_of(tasks, 1), c = index_of(tasks, 2);
  json_decref(tasks);
  snprintf(body, sizeof body,
           "{\"results\": [{\"index\": %lld, \"exit_status\": 0, \"output\": \"a\"}]}", a);
  assert_int_equal(post_results(f->srv.url, tok, body, &r), 200);
  assert_int_equal(entry_status(r, 0), 200);
  json_decref(r);
  /* a again (its lease was returned: 409), b and c accepted */
  snprintf(body, sizeof body,
           "{\"results\": [{\"index\": %lld, \"exit_status\": 0, \"output\": \"a2\"}, "
           "{\"index\": %lld, \"exit_status\": 0, \"output\": \"b\"}, "
           "{\"index\": %lld, \"exit_status\": 0, \"output\": \"c\"}], "
           "\"next\": 2}", a, b, c);
  assert_int_equal(post_results(f->srv.url, tok, body, &r), 200);
  assert_int_equal(entry_status(r, 0), 409);
  assert_int_equal(entry_status(r, 1), 200);
  assert_int_equal(entry_status(r, 2), 200);
  const char *msg = json_string_value(json_object_get(
      json_object_get(json_array_get(json_object_get(r, "results"), 0), "error"), "message"));
  assert_non_null(msg);
  assert_non_null(strstr(msg, "no longer held"));
  assert_int_equal(json_array_size(json_object_get(r, "tasks")), 0); /* none left */
  json_decref(r);
  assert_int_equal(done_count(f->srv.url, job), 3);
  /* acknowledged means durable: kill -9 and restart */
  server_fixture_stop(f, SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  r = job_json(f->srv.url, job);
  assert_string_equal(json_string_value(json_object_get(r, "state")), "done");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "counts"), "done")), 3);
  json_decref(r);
}

static void test_malformed_and_caps_change_nothing(void **state) {
  fixture *f = *state;
  char tok[65], body[1024];
  harness_register(f->srv.url, "careful", "bad", tok);
  long long job = submit(f->srv.url, "bad", 2);
  json_t *tasks = NULL, *r = NULL;
  assert_int_equal(take(f->srv.url, tok, "{\"max\": 2}", &tasks), 200);
  long long a = index_of(tasks, 0), b = index_of(tasks, 1);
  json_decref(tasks);
  static const char *const bad[] = {
    "{\"index\": %lld, \"exit_status\": \"zero\", \"output\": \"\"}",
    "{\"index\": %lld, \"exit_status\": 0}",
    "{\"index\": %lld, \"exit_status\": 0, \"output\": \"\", \"colour\": 1}",
    "{\"index\": %lld, \"exit_status\": 0, \"output\": \"\", \"next\": true}",
    "{\"index\": -%lld, \"exit_status\": 0, \"output\": \"\"}",
  };
  static const char *const why[] = {"exit_status", "output", "unknown field \"colour\"",
                                    "unknown field \"next\"", "\"index\""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char entry[256];
    snprintf(entry, sizeof entry, bad[i], b);
    snprintf(body, sizeof body,
             "{\"results\": [{\"index\": %lld, \"exit_status\": 0, \"output\": \"a\"}, %s]}", a,
             entry);
    assert_int_equal(post_results(f->srv.url, tok, body, &r), 400);
    const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "results[1]"));
    assert_non_null(strstr(msg, why[i]));
    json_decref(r);
    r = NULL;
  }
  /* the same index twice, "next" out of range, an empty list */
  snprintf(body, sizeof body,
           "{\"results\": [{\"index\": %lld, \"exit_status\": 0, \"output\": \"a\"}, "
           "{\"index\": %lld, \"exit_status\": 0, \"output\": \"a\"}]}", a, a);
  assert_int_equal(post_results(f->srv.url, tok, body, NULL), 400);
  snprintf(body, sizeof body,
           "{\"results\": [{\"index\": %lld, \"exit_status\": 0, \"output\": \"a\"}], "
           "\"next\": 65}", a);
  assert_int_equal(post_results(f->srv.url, tok, body, NULL), 400);
  assert_int_equal(post_results(f->srv.url, tok, "{\"results\": []}", NULL), 400);
  /* 65 entries: over the cap */
  size_t cap = 65 * 64 + 64, n = 0;
  char *big = malloc(cap);
  n += (size_t)snprintf(big + n, cap - n, "{\"results\": [");
  for (int i = 0; i < 65; i++)
    n += (size_t)snprintf(big + n, cap - n, "%s{\"index\": %d, \"exit_status\": 0, \"output\": \"\"}",
                          i ? ", " : "", i + 1);
  n += (size_t)snprintf(big + n, cap - n, "]}");
  assert_int_equal(post_results(f->srv.url, tok, big, NULL), 413);
  free(big);
  assert_int_equal(done_count(f->srv.url, job), 0); /* nothing was applied */
  snprintf(body, sizeof body,
           "{\"results\": [{\"index\": %lld, \"exit_status\": 0, \"output\": \"a\"}, "
           "{\"index\": %lld, \"exit_status\": 0, \"output\": \"b\"}]}", a, b);
  assert_int_equal(post_results(f->srv.url, tok, body, &r), 200);
  assert_int_equal(entry_status(r, 0), 200);
  assert_int_equal(entry_status(r, 1), 200);
  json_decref(r);
  assert_int_equal(done_count(f->srv.url, job), 2);
}

/* Batches answered 200 so far, by the metrics. */
static long long batches_answered(const char *url) {
  static const char line[] = "cairn_http_requests_total{route=\"/v1/results (batch)\",status=\"200\"} ";
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len), 200);
  const char *at = strstr(raw, line);
  long long n = at ? atoll(at + strlen(line)) : 0;
  free(raw);
  return n;
}

/* Real workers: one that batches (--prefetch 3) and one that does not
 * (as a worker of a master without "batch" would) finish one job. */
static void test_real_workers(void **state) {
  fixture *f = *state;
  long long job = submit(f->srv.url, "noop", 40), before = batches_answered(f->srv.url);
  pid_t pids[2];
  for (int i = 0; i < 2; i++) {
    const char *av[] = {"--app", "noop=/bin/true", "--prefetch", i ? "0" : "3",
                        "--exit-when-idle", "2", NULL};
    pids[i] = harness_worker(f->srv.url, f->dir, i ? "w1" : "w0", av);
  }
  double until = harness_now() + 120;
  while (done_count(f->srv.url, job) < 40 && harness_now() < until)
    usleep(100000);
  assert_int_equal(done_count(f->srv.url, job), 40);
  for (int i = 0; i < 2; i++)
    assert_int_equal(harness_wait(pids[i], 30), 0);
  json_t *r = job_json(f->srv.url, job);
  assert_string_equal(json_string_value(json_object_get(r, "state")), "done");
  json_decref(r);
  assert_true(batches_answered(f->srv.url) > before); /* the worker with --prefetch batched */
}

/* A real worker with --prefetch 2 holds three tasks of 1.5 s with leases
 * of 2 s: the last starts about 3 s after it was taken, so its lease lives
 * only because the heartbeats list it. Every task is done at its first
 * allocation. */
static void test_real_worker_keeps_prefetched_leases(void **state) {
  fixture *f = *state;
  json_t *job = json_pack("{s:s, s:s, s:i, s:[{s:s, s:[s]}, {s:s, s:[s]}, {s:s, s:[s]}]}", "app",
                          "nap", "policy", "fifo", "lease_seconds", 2, "tasks", "id", "a", "args",
                          "1.5", "id", "b", "args", "1.5", "id", "c", "args", "1.5");
  json_t *r = NULL;
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/jobs", ADMIN, job, &r), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(job);
  json_decref(r);
  const char *av[] = {"--app", "nap=/bin/sleep", "--slots", "1", "--prefetch", "2",
                      "--exit-when-idle", "2", NULL};
  pid_t pid = harness_worker(f->srv.url, f->dir, "nap", av);
  double until = harness_now() + 60;
  while (done_count(f->srv.url, id) < 3 && harness_now() < until)
    usleep(100000);
  assert_int_equal(done_count(f->srv.url, id), 3);
  assert_int_equal(harness_wait(pid, 30), 0);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", id);
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  json_t *tasks = json_object_get(r, "tasks");
  assert_int_equal(json_array_size(tasks), 3);
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(json_integer_value(json_object_get(json_array_get(tasks, i), "attempts")), 1);
  json_decref(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_take_several),
    cmocka_unit_test(test_heartbeat_extends_taken_leases),
    cmocka_unit_test(test_results_stale_entry_and_kill9),
    cmocka_unit_test(test_malformed_and_caps_change_nothing),
    cmocka_unit_test(test_real_workers),
    cmocka_unit_test(test_real_worker_keeps_prefetched_leases),
  };
  return cmocka_run_group_tests(tests, server_fixture_setup, server_fixture_teardown);
}
