/* test_validators.c — validators with a real cairn-server and real
 * cairn-workers: three workers print the same numbers with tiny float
 * differences (and one of them a wrong number); under replication 3 /
 * quorum 2 the job fails with "exact" and is done with "numeric", the wrong
 * result is invalid and counted against its volunteer; a command validator
 * (tests/support/first_line_validator.sh) accepts the results whose first
 * lines match; and a master restarted between the replicas still compares
 * the stored ones under both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define NTASKS 4

/* What worker k's copy of the app prints: the same figures, differing in
 * their last digits; worker 2's energy is wrong. */
static const char *const printed[3] = {
  "energy 1.000000000001 steps 100 norm 3.14159265358979e-02\n",
  "energy 1.000000000002 steps 100 norm 3.14159265358981E-02\n",
  "energy 1.5 steps 100 norm 3.14159265358979e-02\n",
};

/* The same for app "cmd": worker 2's first line differs. */
static const char *const printed_cmd[3] = {
  "answer 42\nnoise 0.8127\n",
  "answer 42\nnoise 0.1131\n",
  "answer 41\nnoise 0.8127\n",
};

typedef server_fixture fixture;

/* The master, and in its folder num<k>.sh and cmd<k>.sh, each printing its
 * value of printed[] and printed_cmd[]. */
static int setup(void **state) {
  if (server_fixture_setup_stopped(state))
    return -1;
  server_fixture *f = *state;
  for (int k = 0; k < 3; k++) {
    char path[4300], text[512];
    snprintf(path, sizeof path, "%s/num%d.sh", f->dir, k);
    snprintf(text, sizeof text, "#!/bin/sh\nprintf '%%s' '%s'\n", printed[k]);
    harness_write_file(path, text);
    chmod(path, 0755);
    snprintf(path, sizeof path, "%s/cmd%d.sh", f->dir, k);
    snprintf(text, sizeof text, "#!/bin/sh\nprintf '%%s' '%s'\n", printed_cmd[k]);
    harness_write_file(path, text);
    chmod(path, 0755);
  }
  return server_fixture_restart(f, NULL);
}

/* Starts worker k (app as its own APP<k>.sh); max_tasks NULL: no end. */
static pid_t start_worker_app(fixture *f, const char *app, int k, const char *max_tasks) {
  char appflag[4400], name[16];
  snprintf(name, sizeof name, "w%d", k);
  snprintf(appflag, sizeof appflag, "%s=%s/%s%d.sh", app, f->dir, app, k);
  const char *args[] = {"--app", appflag, "--log-level", "info",
                        max_tasks ? "--max-tasks" : NULL, max_tasks, NULL};
  pid_t pid = server_fixture_worker(f, name, args);
  assert_true(pid > 0);
  return pid;
}

static pid_t start_worker(fixture *f, int k, const char *max_tasks) {
  return start_worker_app(f, "num", k, max_tasks);
}

/* A job of NTASKS tasks of app, replication 3, quorum 2, validator v. */
static long long submit_app(fixture *f, const char *app, const char *validator) {
  char job[8192];
  int n = snprintf(job, sizeof job, "{\"app\": \"%s\", \"replication\": 3, \"quorum\": 2, "
                   "\"max_attempts\": 3, \"lease_seconds\": 30, \"validator\": %s, \"tasks\": [",
                   app, validator);
  for (int i = 0; i < NTASKS; i++)
    n += snprintf(job + n, sizeof job - (size_t)n, "%s{\"id\": \"t%d\"}", i ? ", " : "", i);
  snprintf(job + n, sizeof job - (size_t)n, "]}");
  json_t *r = NULL;
  long st = harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL);
  if (st != 201)
    fail_msg("submit: HTTP %ld: %s", st, r ? json_dumps(r, 0) : "");
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

static long long submit(fixture *f, const char *validator) {
  return submit_app(f, "num", validator);
}

static json_t *job_view(fixture *f, long long job) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  return r;
}

static const char *wait_job(fixture *f, long long job, double timeout) {
  static char state[32];
  double end = harness_now() + timeout;
  while (harness_now() < end) {
    json_t *r = job_view(f, job);
    snprintf(state, sizeof state, "%s", json_string_value(json_object_get(r, "state")));
    json_decref(r);
    if (strcmp(state, "running") != 0)
      return state;
    usleep(200 * 1000);
  }
  fail_msg("job %lld not finished after %.0f s", job, timeout);
  return NULL;
}

/* Volunteer named name's counter key ("valid", "invalid", ...). */
static long long vol_count(fixture *f, const char *name, const char *key) {
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL,
                                NULL), 200);
  size_t i;
  json_t *v;
  long long n = -1;
  json_array_foreach(json_object_get(r, "volunteers"), i, v)
    if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
      n = (long long)json_integer_value(json_object_get(v, key));
  json_decref(r);
  if (n < 0)
    fail_msg("no volunteer %s", name);
  return n;
}

/* Every task's accepted output is worker 0's or worker 1's, never worker 2's. */
static void check_outputs(fixture *f, long long job) {
  char path[96];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  size_t i;
  json_t *t;
  assert_int_equal(json_array_size(json_object_get(r, "tasks")), NTASKS);
  json_array_foreach(json_object_get(r, "tasks"), i, t) {
    const char *out = json_string_value(json_object_get(t, "output"));
    assert_non_null(out);
    if (strcmp(out, printed[0]) != 0 && strcmp(out, printed[1]) != 0)
      fail_msg("task %zu accepted \"%s\"", i, out);
  }
  json_decref(r);
}

static void test_exact_fails_numeric_agrees(void **state) {
  fixture *f = *state;
  long long exact = submit(f, "\"exact\"");
  for (int k = 0; k < 3; k++)
    start_worker(f, k, NULL);
  const char *es = wait_job(f, exact, 120); /* failed at its first failed task */
  json_t *ev = NULL;
  long long efailed = 0;
  for (double end = harness_now() + 120; efailed < NTASKS && harness_now() < end;) {
    json_decref(ev);
    ev = job_view(f, exact);
    efailed = (long long)json_integer_value(
      json_object_get(json_object_get(ev, "counts"), "failed"));
    if (efailed < NTASKS)
      usleep(100 * 1000);
  }
  fprintf(stderr, "exact:   job %s, %lld of %d tasks failed (no two outputs byte-identical)\n",
          es, efailed, NTASKS);
  assert_string_equal(es, "failed");
  assert_int_equal(efailed, NTASKS);
  assert_string_equal(json_string_value(json_object_get(ev, "validator")), "exact");
  json_decref(ev);
  long long inv0 = vol_count(f, "w2", "invalid");

  long long num = submit(f, "{\"numeric\": {\"rel\": 1e-9, \"abs\": 1e-12}}");
  const char *ns = wait_job(f, num, 120);
  json_t *nv = job_view(f, num);
  long long ndone = (long long)json_integer_value(
    json_object_get(json_object_get(nv, "counts"), "done"));
  json_t *val = json_object_get(nv, "validator");
  double rel = json_real_value(json_object_get(json_object_get(val, "numeric"), "rel"));
  json_decref(nv);
  long long v0 = vol_count(f, "w0", "valid"), v1 = vol_count(f, "w1", "valid");
  long long inv2 = vol_count(f, "w2", "invalid") - inv0;
  fprintf(stderr, "numeric: job %s, %lld of %d tasks done; valid w0=%lld w1=%lld; "
          "w2's wrong results invalid: %lld\n", ns, ndone, NTASKS, v0, v1, inv2);
  assert_string_equal(ns, "done");
  assert_int_equal(ndone, NTASKS);
  assert_true(rel == 1e-9);
  assert_int_equal(v0 + v1, 2 * NTASKS); /* w0 and w1 agree on every task */
  assert_int_equal(vol_count(f, "w2", "valid"), 0);
  /* w2's results arrive before or after the quorum: invalid either way */
  assert_true(inv2 >= 0 && inv2 <= NTASKS);
  check_outputs(f, num);
}

/* Waits until volunteer name's counter key reaches want (verdicts may come
 * after the job is done); returns the last value seen. */
static long long wait_count(fixture *f, const char *name, const char *key, long long want) {
  long long n = -1;
  for (double end = harness_now() + 60; harness_now() < end; usleep(100 * 1000))
    if ((n = vol_count(f, name, key)) >= want)
      break;
  return n;
}

/* w0 and w2 disagree: no quorum, their results wait in the store (and under
 * command, maybe their pair in the runner's queue); the master is killed
 * and restarted; w1 agrees with w0's stored result. */
static long long restart_between_replicas(fixture *f, const char *app, const char *validator) {
  long long job = submit_app(f, app, validator);
  char ntasks[8];
  snprintf(ntasks, sizeof ntasks, "%d", NTASKS);
  pid_t a = start_worker_app(f, app, 0, ntasks), b = start_worker_app(f, app, 2, ntasks);
  assert_true(harness_wait(a, 60) >= 0);
  assert_true(harness_wait(b, 60) >= 0);
  json_t *v = job_view(f, job);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "counts"), "done")), 0);
  json_decref(v);
  assert_int_equal(server_fixture_stop(f, SIGKILL) & 0x7f, SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  start_worker_app(f, app, 1, NULL);
  const char *st = wait_job(f, job, 120);
  long long v0 = wait_count(f, "w0", "valid", NTASKS), i2 = wait_count(f, "w2", "invalid", NTASKS);
  fprintf(stderr, "restart (%s): job %s after the master was killed between replicas; "
          "w0 valid=%lld w2 invalid=%lld\n", app, st, v0, i2);
  assert_string_equal(st, "done");
  assert_int_equal(v0, NTASKS);
  assert_int_equal(i2, NTASKS);
  return job;
}

static void test_numeric_survives_restart(void **state) {
  fixture *f = *state;
  check_outputs(f, restart_between_replicas(f, "num", "{\"numeric\": {\"rel\": 1e-9}}"));
}

static void test_command_survives_restart(void **state) {
  fixture *f = *state;
  char validator[4400];
  snprintf(validator, sizeof validator,
           "{\"command\": [\"%s/tests/support/first_line_validator.sh\"]}",
           getenv("CAIRN_SOURCE_DIR"));
  restart_between_replicas(f, "cmd", validator);
}

static void test_command_validator(void **state) {
  fixture *f = *state;
  char validator[4400];
  const char *src = getenv("CAIRN_SOURCE_DIR");
  assert_non_null(src);
  snprintf(validator, sizeof validator, "{\"command\": [\"%s/tests/support/first_line_validator.sh\"]}",
           src);
  long long job = submit_app(f, "cmd", validator);
  char ntasks[8];
  snprintf(ntasks, sizeof ntasks, "%d", NTASKS);
  /* w0 and w2 first (each of them returns every task), then w1 */
  pid_t a = start_worker_app(f, "cmd", 0, ntasks), b = start_worker_app(f, "cmd", 2, ntasks);
  assert_true(harness_wait(a, 60) >= 0);
  assert_true(harness_wait(b, 60) >= 0);
  start_worker_app(f, "cmd", 1, NULL);
  const char *st = wait_job(f, job, 120);
  long long v0 = wait_count(f, "w0", "valid", NTASKS), v1 = wait_count(f, "w1", "valid", NTASKS);
  long long inv2 = wait_count(f, "w2", "invalid", NTASKS);
  fprintf(stderr, "command: job %s; first lines equal: valid w0=%lld w1=%lld; "
          "first line differs: w2 invalid=%lld valid=%lld\n", st, v0, v1, inv2,
          vol_count(f, "w2", "valid"));
  assert_string_equal(st, "done");
  assert_int_equal(v0, NTASKS);
  assert_int_equal(v1, NTASKS);
  assert_int_equal(inv2, NTASKS);
  assert_int_equal(vol_count(f, "w2", "valid"), 0);
  assert_int_equal(vol_count(f, "w0", "pending") + vol_count(f, "w1", "pending") +
                   vol_count(f, "w2", "pending"), 0);
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  size_t i;
  json_t *t;
  json_array_foreach(json_object_get(r, "tasks"), i, t)
    assert_int_equal(strncmp(json_string_value(json_object_get(t, "output")), "answer 42\n", 10), 0);
  json_decref(r);
}

/* A program that never ends holds no lock: the master answers at once while
 * it runs, the tasks wait for their verdicts (no new copy), and a stop
 * kills it. */
static void test_command_outside_lock(void **state) {
  fixture *f = *state;
  long long slow = submit_app(f, "cmd", "{\"command\": [\"/bin/sh\", \"-c\", \"sleep 3600\"]}");
  char n[8];
  snprintf(n, sizeof n, "%d", NTASKS);
  pid_t a = start_worker_app(f, "cmd", 0, n), b = start_worker_app(f, "cmd", 1, n);
  assert_true(harness_wait(a, 60) >= 0);
  assert_true(harness_wait(b, 60) >= 0);
  double worst = 0;
  for (int i = 0; i < 20; i++) {
    double t0 = harness_now();
    json_t *v = job_view(f, slow);
    double dt = harness_now() - t0;
    worst = dt > worst ? dt : worst;
    assert_string_equal(json_string_value(json_object_get(v, "state")), "running");
    /* every task has its two results and waits for verdicts: none eligible */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "counts"),
                                                         "eligible")), 0);
    json_decref(v);
    usleep(50 * 1000);
  }
  fprintf(stderr, "command: while the validator program runs, the slowest of 20 job reads "
          "took %.1f ms\n", worst * 1000);
  assert_true(worst < 1.0);
  double t0 = harness_now();
  int st = server_fixture_stop(f, SIGTERM);
  double stop = harness_now() - t0;
  fprintf(stderr, "command: a stop with the program running took %.2f s\n", stop);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  assert_true(stop < 10);
  assert_int_equal(server_fixture_restart(f, NULL), 0); /* for teardown */
}

/* A program that cannot run, or exits with another status than 0 or 1,
 * counts as "do not agree": no task reaches its quorum. */
static void test_command_failures_disagree(void **state) {
  fixture *f = *state;
  long long gone = submit_app(f, "cmd", "{\"command\": [\"/nonexistent/validator\"]}");
  long long two = submit_app(f, "cmd", "{\"command\": [\"/bin/sh\", \"-c\", \"exit 2\"]}");
  for (int k = 0; k < 3; k++)
    start_worker_app(f, "cmd", k, NULL);
  const char *s1 = wait_job(f, gone, 120);
  assert_string_equal(s1, "failed");
  const char *s2 = wait_job(f, two, 120);
  fprintf(stderr, "command: a missing program: job failed; exit status 2: job %s\n", s2);
  assert_string_equal(s2, "failed");
  long long valid = 0;
  for (int k = 0; k < 3; k++) {
    char name[8];
    snprintf(name, sizeof name, "w%d", k);
    valid += vol_count(f, name, "valid");
  }
  assert_int_equal(valid, 0);
}

/* A job naming a bad validator gets a 400 naming it, and nothing is stored. */
static void test_bad_validator_refused(void **state) {
  fixture *f = *state;
  static const char *const bad[][2] = {
    {"{\"numeric\": {\"rel\": -1}}", "job: validator: numeric \"rel\" must be between 0"},
    {"{\"command\": [\"relative/prog\"]}", "command[0] must be an absolute path"},
    {"\"fuzzy\"", "job: validator: must be \"exact\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char job[512];
    snprintf(job, sizeof job, "{\"app\": \"num\", \"validator\": %s, \"tasks\": [{\"id\": \"t\"}]}",
             bad[i][0]);
    json_t *r = NULL;
    long st = harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL);
    const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    fprintf(stderr, "refused: HTTP %ld %s\n", st, msg ? msg : "(no message)");
    assert_int_equal(st, 400);
    assert_non_null(msg);
    assert_non_null(strstr(msg, bad[i][1]));
    json_decref(r);
  }
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/jobs", ADMIN, NULL, 0, &r, NULL, NULL), 200);
  assert_int_equal(json_array_size(json_object_get(r, "jobs")), 0);
  json_decref(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_bad_validator_refused, setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_exact_fails_numeric_agrees, setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_numeric_survives_restart, setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_command_validator, setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_command_survives_restart, setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_command_outside_lock, setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_command_failures_disagree, setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
