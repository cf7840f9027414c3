/* test_limits.c — limits that hold, with a real cairn-server (a ceiling on
 * the wall limit, a wall grace of 2 s) and real cairn-worker processes
 * running cairn-app-limits: a hung app killed at its wall limit by the
 * worker, again and again until max_attempts (reason "wall"); a worker
 * SIGSTOPped while its app hangs loses the lease at the hard deadline
 * (start + wall + grace, long before lease_seconds) and the task moves to
 * the other volunteer; a memory hog, a CPU spinner and a disk filler each
 * stopped with their reason, and an output flood; the environment and
 * stdin reaching the app;
 * a job above the ceiling refused. Prints the figures: each limit against
 * what was observed, and the memory mechanism the worker used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

static int setup(void **state) {
  static const char *const extra[] = {"--wall-grace-seconds", "2", "--max-wall-seconds", "60",
                                      NULL};
  return server_fixture_start(state, extra);
}

static pid_t start_worker(fixture *f, const char *name, const char *slots) {
  char app[4200], appbin[4096];
  harness_bin(appbin, sizeof appbin, "cairn-app-limits");
  snprintf(app, sizeof app, "limits=%s", appbin);
  const char *args[] = {"--app", app, "--slots", slots, "--log-level", "info", NULL};
  pid_t pid = harness_worker(f->srv.url, f->dir, name, args);
  assert_true(pid > 0);
  return pid;
}

static void stop_worker(pid_t pid) {
  kill(pid, SIGCONT);
  kill(pid, SIGTERM);
  if (harness_wait(pid, 20) == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
}

/* Waits (at most timeout s) until no task of job is waiting, eligible or
 * running (a failed task fails its job at once, the others carry on);
 * returns the job's state. */
static const char *wait_job(fixture *f, long long job, double timeout) {
  static char state[32];
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  double until = harness_now() + timeout;
  for (;;) {
    json_t *r = server_fixture_get(f, path), *k = json_object_get(r, "counts");
    snprintf(state, sizeof state, "%s", json_string_value(json_object_get(r, "state")));
    json_int_t open = json_integer_value(json_object_get(k, "waiting")) +
                      json_integer_value(json_object_get(k, "eligible")) +
                      json_integer_value(json_object_get(k, "running"));
    json_decref(r);
    if (!open || harness_now() > until)
      return state;
    usleep(100 * 1000);
  }
}

/* Task id of job: its entry of GET /v1/jobs/{job}/tasks (caller decrefs). */
static json_t *task_entry(fixture *f, long long job, const char *id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  json_t *r = server_fixture_get(f, path), *t;
  size_t i;
  json_array_foreach(json_object_get(r, "tasks"), i, t) {
    if (strcmp(json_string_value(json_object_get(t, "id")), id) == 0) {
      json_incref(t);
      json_decref(r);
      return t;
    }
  }
  json_decref(r);
  fail_msg("no task %s", id);
  return NULL;
}

/* GET /v1/jobs/{job}/tasks/{key} of task id (caller decrefs). */
static json_t *task_detail(fixture *f, long long job, const char *id) {
  json_t *t = task_entry(f, job, id);
  char path[96];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks/%lld", job,
           (long long)json_integer_value(json_object_get(t, "key")));
  json_decref(t);
  return server_fixture_get(f, path);
}

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "(none)";
}

/* Checks task id's state and reason; prints its output (the worker's note). */
static void expect_reason(fixture *f, long long job, const char *id, const char *state,
                          const char *reason) {
  json_t *t = task_entry(f, job, id);
  fprintf(stderr, "  task %-6s %-7s reason %-8s output: %s", id, str(t, "state"),
          str(t, "reason"), str(t, "output"));
  if (strcmp(str(t, "state"), state) != 0 || strcmp(str(t, "reason"), reason) != 0)
    fail_msg("task %s: state %s reason %s, wanted %s %s", id, str(t, "state"), str(t, "reason"),
             state, reason);
  json_decref(t);
}

static long long metric(fixture *f, const char *line) {
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(f->srv.url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len),
                   200);
  const char *p = strstr(raw, line);
  long long v = p ? atoll(p + strlen(line)) : -1;
  free(raw);
  return v;
}

/* A hung app, again and again: the worker kills it at its wall limit each
 * time; after max_attempts the task fails with reason "wall". */
static void test_wall_limit_by_worker(void **state) {
  fixture *f = *state;
  pid_t w = start_worker(f, "w-wall", "1");
  long long job = server_fixture_submit(f, "{\"app\": \"limits\", \"max_attempts\": 2, "
                            "\"limits\": {\"wall_seconds\": 1}, "
                            "\"tasks\": [{\"id\": \"hang\", \"args\": [\"hang\"]}]}");
  assert_string_equal(wait_job(f, job, 60), "failed");
  fprintf(stderr, "wall limit 1 s, worker kills:\n");
  expect_reason(f, job, "hang", "failed", "wall");
  json_t *d = task_detail(f, job, "hang");
  json_t *h = json_object_get(d, "history"), *a;
  size_t i;
  assert_int_equal(json_array_size(h), 2);
  json_array_foreach(h, i, a) {
    fprintf(stderr, "  attempt %zu: index %lld volunteer %lld reason %s exit status %lld\n", i + 1,
            (long long)json_integer_value(json_object_get(a, "index")),
            (long long)json_integer_value(json_object_get(a, "volunteer")), str(a, "reason"),
            (long long)json_integer_value(json_object_get(a, "exit_status")));
    assert_string_equal(str(a, "reason"), "wall");
  }
  assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "limits"),
                                                      "wall_seconds")), 1);
  json_decref(d);
  assert_true(metric(f, "cairn_task_failures_total{reason=\"wall\"} ") >= 2);
  /* cairn status JOB TASK shows the same attempts */
  char cairn[4096], jobarg[32], *out = NULL;
  harness_bin(cairn, sizeof cairn, "cairn");
  snprintf(jobarg, sizeof jobarg, "%lld", job);
  setenv("CAIRN_SERVER", f->srv.url, 1);
  setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
  const char *argv[] = {cairn, "status", jobarg, "hang", NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  fprintf(stderr, "cairn status %s hang:\n%s", jobarg, out);
  assert_non_null(strstr(out, "limits: wall_seconds 1"));
  const char *p = strstr(out, "REASON\n");
  assert_non_null(p);
  int walls = 0;
  for (p = strstr(p, " wall\n"); p; p = strstr(p + 1, " wall\n"))
    walls++;
  assert_int_equal(walls, 2);
  free(out);
  stop_worker(w);
}

/* A worker stopped while its app hangs cannot kill it nor send anything:
 * the master ends its lease at the hard deadline and the other volunteer
 * gets the task. */
static void test_hard_deadline_moves_task(void **state) {
  fixture *f = *state;
  pid_t a = start_worker(f, "w-stopped", "1");
  long long job = server_fixture_submit(f, "{\"app\": \"limits\", \"max_attempts\": 2, \"lease_seconds\": 300, "
                            "\"limits\": {\"wall_seconds\": 2}, "
                            "\"tasks\": [{\"id\": \"hang\", \"args\": [\"hang\"]}]}");
  /* stop the worker as soon as its lease is out (its app has 2 s to live) */
  double until = harness_now() + 30, leased_at = 0;
  long long first_vol = 0;
  while (!leased_at && harness_now() < until) {
    json_t *d = task_detail(f, job, "hang");
    json_t *h0 = json_array_get(json_object_get(d, "history"), 0);
    if (h0 && strcmp(str(h0, "lease"), "leased") == 0) {
      kill(a, SIGSTOP);
      leased_at = harness_now();
      first_vol = (long long)json_integer_value(json_object_get(h0, "volunteer"));
    }
    json_decref(d);
    if (!leased_at)
      usleep(20 * 1000);
  }
  assert_true(leased_at > 0);
  pid_t b = start_worker(f, "w-other", "1");
  /* the stopped worker's lease ends at the hard deadline, not after 300 s */
  double expired_at = 0;
  json_t *d = NULL;
  while (!expired_at && harness_now() < leased_at + 30) {
    d = task_detail(f, job, "hang");
    json_t *h0 = json_array_get(json_object_get(d, "history"), 0);
    if (strcmp(str(h0, "lease"), "expired") == 0)
      expired_at = harness_now();
    else {
      json_decref(d);
      d = NULL;
      usleep(50 * 1000);
    }
  }
  assert_non_null(d);
  json_t *h0 = json_array_get(json_object_get(d, "history"), 0);
  long long issued = (long long)json_integer_value(json_object_get(h0, "issued"));
  long long expires = (long long)json_integer_value(json_object_get(h0, "lease_expires"));
  fprintf(stderr, "hard deadline: wall 2 s + grace 2 s, lease_seconds 300; the stopped "
          "worker's lease was issued at %lld and ended at %lld (%lld s; seen %.1f s after the "
          "worker was stopped)\n", issued, expires, expires - issued, expired_at - leased_at);
  assert_int_equal(expires - issued, 4);
  assert_string_equal(str(h0, "reason"), "wall");
  assert_true(expired_at - leased_at < 10);
  json_decref(d);
  assert_string_equal(wait_job(f, job, 60), "failed");
  d = task_detail(f, job, "hang");
  json_t *h1 = json_array_get(json_object_get(d, "history"), 1);
  assert_non_null(h1);
  fprintf(stderr, "  then volunteer %lld (was %lld): reason %s\n",
          (long long)json_integer_value(json_object_get(h1, "volunteer")), first_vol,
          str(h1, "reason"));
  assert_true(json_integer_value(json_object_get(h1, "volunteer")) != first_vol);
  assert_string_equal(str(h1, "reason"), "wall");
  json_decref(d);
  stop_worker(a);
  stop_worker(b);
}

/* Memory, CPU and disk limits each stop their task with their reason; the
 * environment and stdin reach the app. */
static void test_limits_env_stdin(void **state) {
  fixture *f = *state;
  const char *data = "hello from stdin\n";
  char sha[65], path[128], job[2048];
  cairn__sha256_hex(data, strlen(data), sha);
  snprintf(path, sizeof path, "/v1/files/%s", sha);
  long st = harness_http(f->srv.url, "PUT", path, ADMIN, data, strlen(data), NULL, NULL, NULL);
  assert_true(st == 200 || st == 201);
  snprintf(job, sizeof job,
           "{\"app\": \"limits\", \"max_attempts\": 1, \"env\": {\"GREETING\": \"hi there\"}, "
           "\"limits\": {\"wall_seconds\": 30}, "
           "\"files\": [{\"name\": \"in.txt\", \"sha256\": \"%s\"}], \"tasks\": ["
           "{\"id\": \"mem\", \"args\": [\"mem\", \"1024\"], \"limits\": {\"memory_mib\": 64}},"
           "{\"id\": \"cpu\", \"args\": [\"cpu\"], \"limits\": {\"cpu_seconds\": 1}},"
           "{\"id\": \"disk\", \"args\": [\"disk\", \"64\"], \"limits\": {\"disk_mib\": 8}},"
           "{\"id\": \"output\", \"args\": [\"spew\", \"4\"], \"limits\": {\"output_mib\": 1}},"
           "{\"id\": \"env\", \"args\": [\"env\", \"GREETING\", \"LEVEL\"], "
           "\"env\": {\"LEVEL\": \"2\"}},"
           "{\"id\": \"stdin\", \"args\": [\"cat\"], \"inputs\": [\"in.txt\"], "
           "\"stdin\": \"in.txt\"}]}",
           sha);
  pid_t w = start_worker(f, "w-mix", "2");
  long long id = server_fixture_submit(f, job);
  assert_string_equal(wait_job(f, id, 90), "failed");
  fprintf(stderr, "memory 64 MiB, cpu 1 s, disk 8 MiB, output 1 MiB:\n");
  expect_reason(f, id, "mem", "failed", "memory");
  expect_reason(f, id, "cpu", "failed", "cpu");
  expect_reason(f, id, "disk", "failed", "disk");
  expect_reason(f, id, "output", "failed", "output");
  json_t *t = task_entry(f, id, "mem");
  const char *note = str(t, "output");
  fprintf(stderr, "memory mechanism: %s\n",
          strstr(note, "by cgroup") ? "cgroup v2 memory.max" : strstr(note, "RLIMIT_AS") ? "RLIMIT_AS" : "?");
  assert_true(strstr(note, "by cgroup") || strstr(note, "RLIMIT_AS"));
  json_decref(t);
  t = task_entry(f, id, "env");
  fprintf(stderr, "env task: %s", str(t, "output"));
  assert_string_equal(str(t, "state"), "done");
  assert_string_equal(str(t, "output"), "GREETING=hi there\nLEVEL=2\n");
  json_decref(t);
  t = task_entry(f, id, "stdin");
  fprintf(stderr, "stdin task: %s", str(t, "output"));
  assert_string_equal(str(t, "output"), data);
  json_decref(t);
  assert_true(metric(f, "cairn_task_failures_total{reason=\"memory\"} ") >= 1);
  assert_true(metric(f, "cairn_task_failures_total{reason=\"cpu\"} ") >= 1);
  assert_true(metric(f, "cairn_task_failures_total{reason=\"disk\"} ") >= 1);
  assert_true(metric(f, "cairn_task_failures_total{reason=\"output\"} ") >= 1);
  /* a task without a wall limit of its own runs under the server's ceiling
   * (60): here the job's 30 */
  json_t *d = task_detail(f, id, "cpu");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "limits"),
                                                      "wall_seconds")), 30);
  json_decref(d);
  stop_worker(w);
}

/* Above the ceiling: refused naming the limit and the flag; nothing stored. */
static void test_ceiling_refuses(void **state) {
  fixture *f = *state;
  const char *job = "{\"app\": \"limits\", \"tasks\": [{\"id\": \"a\", "
                    "\"limits\": {\"wall_seconds\": 61}}]}";
  json_t *before = server_fixture_get(f, "/v1/jobs"), *r = NULL;
  long st = harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL);
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  fprintf(stderr, "above the ceiling: HTTP %ld: %s\n", st, msg ? msg : "(none)");
  assert_int_equal(st, 400);
  assert_non_null(strstr(msg, "task \"a\": limits.wall_seconds 61 exceeds the server's ceiling "
                              "of 60 (--max-wall-seconds)"));
  json_decref(r);
  json_t *after = server_fixture_get(f, "/v1/jobs");
  assert_int_equal(json_array_size(json_object_get(before, "jobs")),
                   json_array_size(json_object_get(after, "jobs")));
  json_decref(before);
  json_decref(after);
  /* a bad reason in a result body is refused by name */
  char tok[65];
  harness_register(f->srv.url, "raw", "limits", tok);
  /* the task route is the admin's: no token 401, a volunteer's 403 */
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/jobs/1/tasks/1", NULL, NULL, 0, NULL,
                                NULL, NULL), 401);
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/jobs/1/tasks/1", tok, NULL, 0, NULL,
                                NULL, NULL), 403);
  const char *bad = "{\"exit_status\": 1, \"output\": \"\", \"reason\": \"tired\"}";
  r = NULL;
  st = harness_http(f->srv.url, "PUT", "/v1/results/1", tok, bad, strlen(bad), &r, NULL, NULL);
  assert_int_equal(st, 400);
  assert_non_null(strstr(json_string_value(json_object_get(json_object_get(r, "error"),
                                                           "message")), "\"reason\" must be"));
  json_decref(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ceiling_refuses),
    cmocka_unit_test(test_wall_limit_by_worker),
    cmocka_unit_test(test_limits_env_stdin),
    cmocka_unit_test(test_hard_deadline_moves_task),
  };
  return cmocka_run_group_tests(tests, setup, server_fixture_teardown);
}
