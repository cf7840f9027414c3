/* test_delete_dags.c — deleting and purging DAG jobs of any shape and size
 * against a real master: a fan-in whose 5 children come after all of its
 * 2,000 roots, a fan-out of one root to 2,100 children, a chain of 2,200
 * tasks and a random DAG of 2,600 tasks, each across the deletion's steps
 * of 1,024 task keys, with and without results; a deletion killed with
 * SIGKILL midway is finished by the next start. After each, the master
 * still answers, the job is gone, and the store passes SQLite's
 * foreign_key_check with no row of the job left but the kept allocations'
 * tasks. Before the fix, the fan-in's first step failed its commit
 * ("FOREIGN KEY constraint failed") and the master stopped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

static int setup(void **state) {
  if (server_fixture_setup(state))
    return -1;
  server_fixture *f = *state;
  harness_register(f->srv.url, "w1", "x", f->vol);
  return 0;
}

/* ---- DAG shapes: task i is "t<i>", listed in key order ---- */

static json_t *task(int i, json_t *after) {
  char id[32];
  snprintf(id, sizeof id, "t%d", i);
  json_t *t = json_pack("{s:s, s:[s]}", "id", id, "args", "a");
  if (after)
    json_object_set_new(t, "after", after);
  return t;
}

static json_t *ids(const int *v, int n) {
  json_t *a = json_array();
  for (int k = 0; k < n; k++) {
    char id[32];
    snprintf(id, sizeof id, "t%d", v[k]);
    json_array_append_new(a, json_string(id));
  }
  return a;
}

/* 2,000 roots, then 5 children each after every root. */
static json_t *fan_in(void) {
  json_t *tasks = json_array();
  int *roots = malloc(2000 * sizeof *roots);
  for (int i = 0; i < 2000; i++) {
    roots[i] = i;
    json_array_append_new(tasks, task(i, NULL));
  }
  for (int i = 2000; i < 2005; i++)
    json_array_append_new(tasks, task(i, ids(roots, 2000)));
  free(roots);
  return tasks;
}

/* One root, 2,100 children after it. */
static json_t *fan_out(void) {
  json_t *tasks = json_array();
  json_array_append_new(tasks, task(0, NULL));
  int root = 0;
  for (int i = 1; i <= 2100; i++)
    json_array_append_new(tasks, task(i, ids(&root, 1)));
  return tasks;
}

/* n tasks, each after the one before. */
static json_t *chain(int n) {
  json_t *tasks = json_array();
  for (int i = 0; i < n; i++) {
    int p = i - 1;
    json_array_append_new(tasks, task(i, i ? ids(&p, 1) : NULL));
  }
  return tasks;
}

/* n tasks, each after up to 3 earlier tasks drawn from all of them (seeded:
 * edges from every step into every earlier one). */
static json_t *random_dag(int n, unsigned seed) {
  json_t *tasks = json_array();
  srand(seed);
  for (int i = 0; i < n; i++) {
    int p[3], np = i ? rand() % 4 : 0;
    for (int k = 0; k < np; k++) {
      p[k] = rand() % i;
      for (int j = 0; j < k; j++)
        if (p[j] == p[k])
          p[k--] = -1, np--;
    }
    json_array_append_new(tasks, task(i, np > 0 ? ids(p, np) : NULL));
  }
  return tasks;
}

/* ---- the master ---- */

static long long submit(fixture *f, json_t *tasks) {
  json_t *job = json_pack("{s:s, s:s, s:i, s:o}", "app", "x", "policy", "fifo", "lease_seconds",
                          600, "tasks", tasks);
  json_t *r = NULL;
  long st = harness_http_json(f->srv.url, "POST", "/v1/jobs", ADMIN, job, &r);
  json_decref(job);
  assert_int_equal(st, 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* Runs up to n of the job's eligible tasks to completion (64 a request);
 * returns how many results were accepted. */
static int run_some(fixture *f, int n) {
  int done = 0;
  while (done < n) {
    json_t *r = NULL;
    char body[64];
    snprintf(body, sizeof body, "{\"max\": %d}", n - done < 16 ? n - done : 16);
    long st = harness_http(f->srv.url, "POST", "/v1/work", f->vol, body, strlen(body), &r, NULL,
                           NULL);
    json_t *tasks = json_object_get(r, "tasks");
    size_t k = st == 200 ? (tasks ? json_array_size(tasks) : 1) : 0;
    for (size_t i = 0; i < k; i++) {
      json_t *w = tasks ? json_array_get(tasks, i) : r;
      char path[64];
      snprintf(path, sizeof path, "/v1/results/%lld",
               (long long)json_integer_value(json_object_get(w, "index")));
      const char *res = "{\"exit_status\": 0, \"output\": \"ok\"}";
      assert_int_equal(harness_http(f->srv.url, "PUT", path, f->vol, res, strlen(res), NULL,
                                    NULL, NULL), 200);
      done++;
    }
    json_decref(r);
    if (k == 0)
      break;
  }
  return done;
}

static long del(fixture *f, long long id, int purge) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld%s", id, purge ? "?purge=1" : "");
  json_t *r = NULL;
  long st = harness_http(f->srv.url, "DELETE", path, ADMIN, NULL, 0, &r, NULL, NULL);
  if (st != 200)
    fprintf(stderr, "DELETE %s: %ld %s\n", path, st,
            json_string_value(json_object_get(json_object_get(r, "error"), "message")));
  json_decref(r);
  return st;
}

static long job_status(fixture *f, long long id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  return harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, NULL, NULL, NULL);
}

/* ---- the store, read after the master stopped ---- */

static long long one(sqlite3 *h, const char *sql, long long job) {
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &q, NULL), SQLITE_OK);
  if (sqlite3_bind_parameter_count(q))
    sqlite3_bind_int64(q, 1, job);
  long long v = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
  sqlite3_finalize(q);
  return v;
}

/* Stops the master, checks the store (no dangling reference; of job, only
 * tasks that keep an allocation, none with purge), starts it again. */
static void check_store(fixture *f, long long job, int purge) {
  server_fixture_stop(f, SIGTERM);
  sqlite3 *h = NULL;
  assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA foreign_key_check", -1, &q, NULL), SQLITE_OK);
  int dangling = 0;
  while (sqlite3_step(q) == SQLITE_ROW)
    dangling++;
  sqlite3_finalize(q);
  assert_int_equal(dangling, 0);
  assert_int_equal(one(h, "SELECT COUNT(*) FROM task_parents p JOIN tasks t ON t.id = p.task_id "
                          "WHERE t.job_id = ?1", job), 0);
  long long left = one(h, "SELECT COUNT(*) FROM tasks t WHERE job_id = ?1 AND NOT EXISTS "
                          "(SELECT 1 FROM allocations a WHERE a.task_id = t.id)", job);
  assert_int_equal(left, 0);
  if (purge)
    assert_int_equal(one(h, "SELECT COUNT(*) FROM tasks WHERE job_id = ?1", job), 0);
  assert_string_equal(one(h, "SELECT ended = 'deleted' FROM jobs WHERE id = ?1", job) ? "deleted"
                                                                                     : "not",
                      "deleted");
  sqlite3_close(h);
  if (server_fixture_restart(f, NULL))
    fail_msg("the master did not start again");
}

/* Submits tasks, runs `results` of them, deletes (purge or not): the master
 * answers 200, stays up, the job is gone, the store is whole. */
static void delete_shape(fixture *f, json_t *tasks, int results, int purge) {
  long long id = submit(f, tasks);
  if (results)
    assert_int_equal(run_some(f, results), results);
  assert_int_equal(del(f, id, purge), 200);
  assert_int_equal(job_status(f, id), 404);
  assert_int_equal(harness_http(f->srv.url, "GET", "/healthz", NULL, NULL, 0, NULL, NULL, NULL),
                   200);
  check_store(f, id, purge);
  assert_int_equal(job_status(f, id), 404);
}

static void test_fan_in(void **state) {
  delete_shape(*state, fan_in(), 0, 0);
  delete_shape(*state, fan_in(), 1200, 0); /* results across the first step */
  delete_shape(*state, fan_in(), 300, 1);
}

static void test_fan_out(void **state) {
  delete_shape(*state, fan_out(), 0, 1);
  delete_shape(*state, fan_out(), 40, 0);
}

static void test_chain(void **state) {
  delete_shape(*state, chain(2200), 0, 0);
  delete_shape(*state, chain(2200), 5, 1);
}

static void test_random(void **state) {
  delete_shape(*state, random_dag(2600, 7), 0, 0);
  delete_shape(*state, random_dag(2600, 11), 100, 1);
  delete_shape(*state, random_dag(2600, 13), 100, 0);
}

/* --keep-finished runs the same deletion on its own: a finished fan-in is
 * removed by the retention pass, and the master stays up. */
static void test_retention_fan_in(void **state) {
  fixture *f = *state;
  json_t *tasks = fan_in();
  long long id = submit(f, tasks);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", id);
  assert_int_equal(harness_http(f->srv.url, "POST", path, ADMIN, NULL, 0, NULL, NULL, NULL), 200);
  server_fixture_stop(f, SIGTERM);
  /* about a second: the job is due at a retention pass soon after */
  const char *extra[] = {"--keep-finished", "0.00001", NULL};
  if (server_fixture_restart(f, extra))
    fail_msg("the master did not start with --keep-finished 0");
  double until = harness_now() + 90;
  while (job_status(f, id) != 404 && harness_now() < until)
    usleep(100 * 1000);
  assert_int_equal(job_status(f, id), 404);
  check_store(f, id, 0);
}

/* A deletion killed midway (SIGKILL while its steps run) is finished by the
 * next start; the kill lands at 0, 5, 20, 60 and 200 ms into the DELETE. */
static void test_kill_midway(void **state) {
  fixture *f = *state;
  static const int after_ms[] = {0, 5, 20, 60, 200};
  int midway = 0;
  for (size_t k = 0; k < sizeof after_ms / sizeof *after_ms; k++) {
    json_t *tasks = random_dag(9000, 100 + (unsigned)k);
    long long id = submit(f, tasks);
    run_some(f, 50);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
      _exit(del(f, id, (int)(k & 1)) == 200 ? 0 : 1);
    usleep((useconds_t)after_ms[k] * 1000);
    server_fixture_stop(f, SIGKILL);
    harness_wait(pid, 30);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long long ended = one(h, "SELECT ended IN ('deleting', 'purging') FROM jobs WHERE id = ?1", id);
    sqlite3_close(h);
    midway += ended == 1;
    if (server_fixture_restart(f, NULL))
      fail_msg("the master did not start after kill -9");
    if (ended == 1 || job_status(f, id) == 404) {
      check_store(f, id, (int)(k & 1));
    } else { /* killed before the deletion began: delete again */
      assert_int_equal(del(f, id, (int)(k & 1)), 200);
      check_store(f, id, (int)(k & 1));
    }
    assert_int_equal(job_status(f, id), 404);
  }
  fprintf(stderr, "kill -9 landed midway through %d of 5 deletions\n", midway);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fan_in, setup, server_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_fan_out, setup, server_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_chain, setup, server_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_random, setup, server_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_retention_fan_in, setup, server_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_kill_midway, setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
