/* test_env_injection.c — a job's "env" cannot make a volunteer's app run
 * code the job chose, and an app sees nothing of its worker's environment.
 *
 * 1. Jobs setting LD_PRELOAD (the attack: a shared object shipped as an
 *    input, preloaded into the allow-listed app), BASH_ENV, PYTHONPATH and
 *    other loader, shell and interpreter variables, job-wide or per task,
 *    are refused by a real master with 400 naming the variable (and the
 *    task); no job exists afterwards.
 * 2. A real cairn-worker started with CAIRN_INVITATION and other variables
 *    of its own runs a task whose app is /usr/bin/env: the app's whole
 *    environment is PATH, HOME and TMPDIR (the task directory), LANG, the
 *    CAIRN_* task variables, the job's own, and PWD (the task directory,
 *    set by the task sandbox); none of the worker's.
 * What each side saw is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define WAIT_S 60.0
#define SECRET "invitation-code-that-must-not-leak"

typedef struct fixture {
  server_fixture s;
  char wdir[4200]; /* worker w's folder */
  pid_t worker;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f || server_fixture_open(&f->s, NULL, 1)) {
    free(f);
    return -1;
  }
  snprintf(f->wdir, sizeof f->wdir, "%s/w", f->s.dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  int rc = server_fixture_close(&f->s);
  free(f);
  return rc;
}

static const char *message(json_t *r) {
  const char *m = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  return m ? m : "";
}

static size_t job_count(const fixture *f) {
  json_t *r = NULL;
  assert_int_equal(harness_http(f->s.srv.url, "GET", "/v1/jobs", ADMIN, NULL, 0, &r, NULL, NULL),
                   200);
  size_t n = json_array_size(json_object_get(r, "jobs"));
  json_decref(r);
  return n;
}

static void test_denied_names_refused(void **state) {
  fixture *f = *state;
  static const struct {
    const char *job, *name, *where;
  } cases[] = {
    {"{\"app\": \"env\", \"env\": {\"LD_PRELOAD\": \"inputs/lib.so\"}, "
     "\"tasks\": [{\"id\": \"t\"}]}", "LD_PRELOAD", "job"},
    {"{\"app\": \"env\", \"tasks\": [{\"id\": \"t\", \"env\": {\"SEED\": \"1\", "
     "\"LD_PRELOAD\": \"inputs/lib.so\"}}]}", "LD_PRELOAD", "task \"t\""},
    {"{\"app\": \"env\", \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\", "
     "\"env\": {\"BASH_ENV\": \"inputs/rc\"}}]}", "BASH_ENV", "task \"b\""},
    {"{\"app\": \"env\", \"env\": {\"PYTHONPATH\": \"inputs\"}, \"tasks\": [{\"id\": \"t\"}]}",
     "PYTHONPATH", "job"},
    {"{\"app\": \"env\", \"tasks\": [{\"id\": \"t\", \"env\": {\"LD_LIBRARY_PATH\": "
     "\"inputs\"}}]}", "LD_LIBRARY_PATH", "task \"t\""},
    {"{\"app\": \"env\", \"tasks\": [{\"id\": \"t\", \"env\": {\"PERL5OPT\": \"-Minputs\"}}]}",
     "PERL5OPT", "task \"t\""},
    {"{\"app\": \"env\", \"tasks\": [{\"id\": \"t\", \"env\": {\"NODE_OPTIONS\": "
     "\"--require ./inputs/x.js\"}}]}", "NODE_OPTIONS", "task \"t\""},
    {"{\"app\": \"env\", \"tasks\": [{\"id\": \"t\", \"env\": {\"PATH\": \"inputs\"}}]}", "PATH",
     "task \"t\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    json_t *r = NULL;
    long st = harness_http(f->s.srv.url, "POST", "/v1/jobs", ADMIN, cases[i].job,
                           strlen(cases[i].job), &r, NULL, NULL);
    printf("env %s (%s): HTTP %ld %s\n", cases[i].name, cases[i].where, st, message(r));
    assert_int_equal(st, 400);
    char want[128];
    snprintf(want, sizeof want, "%s: env: %s may not be set", cases[i].where, cases[i].name);
    if (!strstr(message(r), want))
      fail_msg("message \"%s\" lacks \"%s\"", message(r), want);
    json_decref(r);
  }
  assert_int_equal(job_count(f), 0); /* nothing stored */
  /* a job's own parameters still pass */
  const char *ok = "{\"app\": \"env\", \"env\": {\"MODE\": \"fast\", \"LANG\": \"C\"}, "
                   "\"tasks\": [{\"id\": \"t\", \"env\": {\"OMP_NUM_THREADS\": \"2\"}}]}";
  assert_int_equal(harness_http(f->s.srv.url, "POST", "/v1/jobs", ADMIN, ok, strlen(ok), NULL,
                                NULL, NULL), 201);
  assert_int_equal(job_count(f), 1);
}

/* Waits until task id of job has ended; returns it (caller decrefs). */
static json_t *task_of(const fixture *f, long long job, const char *id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  for (double t0 = harness_now(); harness_now() - t0 < WAIT_S; usleep(100 * 1000)) {
    json_t *r = NULL, *t;
    size_t i;
    assert_int_equal(harness_http(f->s.srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
    json_array_foreach(json_object_get(r, "tasks"), i, t) {
      const char *state = json_string_value(json_object_get(t, "state"));
      if (strcmp(json_string_value(json_object_get(t, "id")), id) != 0 ||
          (strcmp(state, "done") != 0 && strcmp(state, "failed") != 0))
        continue;
      json_incref(t);
      json_decref(r);
      return t;
    }
    json_decref(r);
  }
  fail_msg("task %s of job %lld not finished within %.0f s", id, job, WAIT_S);
  return NULL;
}

/* The value of NAME in env's output (lines NAME=VALUE), or NULL; one per
 * call (a static buffer). */
static const char *env_value(const char *out, const char *name) {
  static char v[4096];
  size_t n = strlen(name);
  for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, name, n) == 0 && p[n] == '=') {
      size_t len = strcspn(p + n + 1, "\n");
      snprintf(v, sizeof v, "%.*s", (int)len, p + n + 1);
      return v;
    }
  return NULL;
}

static void test_app_environment_is_clean(void **state) {
  fixture *f = *state;
  const char *args[] = {"--app", "env=/usr/bin/env", "--slots", "1", "--peer-listen", "off",
                        "--log-level", "info", NULL};
  /* the worker's own environment: an invitation code, a token of the
   * volunteer's, an interpreter path */
  setenv("CAIRN_INVITATION", SECRET, 1);
  setenv("VOLUNTEER_API_TOKEN", "volunteer-token-that-must-not-leak", 1);
  setenv("PYTHONPATH", "/volunteer/own/python", 1);
  f->worker = server_fixture_worker(&f->s, "w", args);
  unsetenv("CAIRN_INVITATION");
  unsetenv("VOLUNTEER_API_TOKEN");
  unsetenv("PYTHONPATH");
  assert_true(f->worker > 0);

  const char *job = "{\"app\": \"env\", \"max_attempts\": 1, \"env\": {\"MODE\": \"fast\"}, "
                    "\"tasks\": [{\"id\": \"show\", \"env\": {\"SEED\": \"7\"}}]}";
  json_t *r = NULL;
  assert_int_equal(harness_http(f->s.srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r,
                                NULL, NULL), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  json_t *t = task_of(f, id, "show");
  const char *out = json_string_value(json_object_get(t, "output"));
  assert_non_null(out);
  printf("the app's environment:\n%s", out);
  assert_string_equal(json_string_value(json_object_get(t, "state")), "done");

  /* nothing of the worker's */
  assert_null(strstr(out, SECRET));
  assert_null(strstr(out, "must-not-leak"));
  assert_null(env_value(out, "CAIRN_INVITATION"));
  assert_null(env_value(out, "VOLUNTEER_API_TOKEN"));
  assert_null(env_value(out, "PYTHONPATH"));
  /* exactly the documented variables */
  char wreal[PATH_MAX], home[PATH_MAX + 32], progress[PATH_MAX + 64], jobid[32];
  assert_non_null(realpath(f->wdir, wreal));
  snprintf(home, sizeof home, "%s/run/slot-0", wreal);
  snprintf(progress, sizeof progress, "%s/.cairn-progress", home);
  snprintf(jobid, sizeof jobid, "%lld", id);
  /* PWD: the task sandbox (bwrap) sets it to the directory it starts in */
  static const char *const names[] = {"PATH", "HOME", "TMPDIR", "LANG", "CAIRN_JOB",
                                      "CAIRN_TASK_ID", "CAIRN_INDEX", "CAIRN_PROGRESS_FILE",
                                      "MODE", "SEED", "PWD"};
  const char *values[] = {"/usr/local/bin:/usr/bin:/bin", home, home, "C.UTF-8", jobid, "show",
                          NULL, progress, "fast", "7", home};
  size_t lines = 0;
  for (const char *p = out; (p = strchr(p, '\n')) != NULL; p++)
    lines++;
  assert_int_equal(lines, sizeof names / sizeof *names);
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *v = env_value(out, names[i]);
    if (!v)
      fail_msg("%s is missing", names[i]);
    if (values[i] && strcmp(v, values[i]) != 0)
      fail_msg("%s=%s, wanted %s", names[i], v, values[i]);
  }
  assert_true(atoll(env_value(out, "CAIRN_INDEX")) > 0);
  json_decref(t);

  kill(f->worker, SIGTERM);
  int ws = harness_wait(f->worker, 20);
  server_fixture_reaped(&f->s, f->worker);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_denied_names_refused, setup, teardown),
    cmocka_unit_test_setup_teardown(test_app_environment_is_clean, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
