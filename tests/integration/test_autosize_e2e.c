/* test_autosize_e2e.c — tasks that size themselves (docs/jobs.md, "Automatic
 * sizes"), with a real cairn-server (SQLite) and two real cairn-worker
 * processes offering 8 cores and 2 GiB each (--cores 8 --memory 2048) that
 * run cairn-app-memhog (apps/memhog.c: allocates and touches N MiB):
 *
 *  - a category of 40 automatic tasks whose real peak is about 200 MiB,
 *    each holding it 1.5 s: the first task a worker runs asks for its whole
 *    offer; once results arrive the rest ask for the measured peak plus the
 *    margin (about 270 MiB), and each worker runs 4 or more of them at once
 *    (read from the workers' own start/end log lines; the peak of each is
 *    printed). The category's measured peak is the real resident one (200
 *    to 240 MiB, not the 2 GiB limit the first tasks ran under), and each
 *    task's result carries its measurements (GET /v1/jobs/{id}/tasks);
 *  - tasks under a 128 MiB memory limit with max_attempts 1: with
 *    "retry_larger", one needing 200 MiB finishes after one larger retry
 *    (256 MiB) and one needing 300 MiB after two (256, then 512: the amount
 *    doubles); without it one fails at the first kill. Their attempts, by
 *    GET /v1/jobs/{id}/tasks/{key} and `cairn status JOB TASK`, show each
 *    memory kill and the retry it made;
 *  - a result's "usage" is checked before anything is applied (400 naming
 *    the field, alone or in a batch), and a good one is stored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define NWORKERS 2
#define CATEGORY_TASKS 40
#define MAX_EVENTS 512

typedef server_fixture fixture;

static void start_workers(fixture *f) {
  char app[4200], bin[4096];
  harness_bin(bin, sizeof bin, "cairn-app-memhog");
  snprintf(app, sizeof app, "memhog=%s", bin);
  for (int i = 0; i < NWORKERS; i++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", i + 1);
    const char *args[] = {"--app", app, "--cores", "8", "--memory", "2048", "--disk", "4096",
                          "--log-level", "info", "--peer-listen", "off", NULL};
    assert_true(server_fixture_worker(f, name, args) > 0);
  }
}

static void stop_workers(fixture *f) {
  for (int i = 0; i < f->nworkers; i++)
    if (f->workers[i] > 0) {
      kill(f->workers[i], SIGTERM);
      assert_true(harness_wait(f->workers[i], 30) >= 0);
      server_fixture_reaped(f, f->workers[i]);
    }
}

/* Polls job id until each of its tasks is done or failed (at most timeout
 * s). */
static json_t *wait_job(fixture *f, long long id, double timeout) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  double end = harness_now() + timeout;
  for (;;) {
    json_t *r = server_fixture_get(f, path), *c = json_object_get(r, "counts");
    if (json_integer_value(json_object_get(c, "done")) +
            json_integer_value(json_object_get(c, "failed")) ==
          json_integer_value(json_object_get(r, "tasks")) ||
        harness_now() > end)
      return r;
    json_decref(r);
    nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
  }
}

typedef struct event {
  long long ms;
  int start;
} event;

static int cmp_event(const void *a, const void *b) {
  const event *x = a, *y = b;
  if (x->ms != y->ms)
    return x->ms < y->ms ? -1 : 1;
  return x->start - y->start; /* an end before a start at the same ms */
}

/* Worker i's "task N start/end: job J cores C memory_mib M ..." lines of
 * job: the most tasks asking less than the whole offer that ran at once,
 * and how many tasks asked for the whole offer (*whole) and for less
 * (*sized). */
static int peak_sized(const fixture *f, int i, long long job, int *whole, int *sized) {
  char path[4300], line[1024];
  event ev[MAX_EVENTS];
  int n = 0;
  snprintf(path, sizeof path, "%s/w%d.log", f->dir, i + 1);
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  *whole = *sized = 0;
  while (fgets(line, sizeof line, fp)) {
    const char *p = strstr(line, "task ");
    long long idx, j, cores, mem, disk, mono, real;
    char what[8];
    if (!p || sscanf(p, "task %lld %5[a-z]: job %lld cores %lld memory_mib %lld disk_mib %lld "
                     "mono_ms %lld real_ms %lld", &idx, what, &j, &cores, &mem, &disk, &mono,
                     &real) != 8 || j != job)
      continue;
    int start = strcmp(what, "start") == 0;
    if (mem == 2048) { /* the whole offer: before any result of the category */
      *whole += start;
      continue;
    }
    assert_true(n < MAX_EVENTS);
    ev[n++] = (event){mono, start};
    *sized += start;
  }
  fclose(fp);
  qsort(ev, (size_t)n, sizeof ev[0], cmp_event);
  int held = 0, peak = 0;
  for (int k = 0; k < n; k++) {
    held += ev[k].start ? 1 : -1;
    if (held > peak)
      peak = held;
  }
  assert_int_equal(held, 0); /* every start has its end */
  return peak;
}

static void test_category_packs_workers(void **state) {
  fixture *f = *state;
  char job[16384];
  size_t n = (size_t)snprintf(job, sizeof job, "{\"name\": \"auto\", \"app\": \"memhog\", "
                              "\"resources\": \"auto\", \"category\": \"hog200\", \"tasks\": [");
  for (int i = 0; i < CATEGORY_TASKS; i++)
    n += (size_t)snprintf(job + n, sizeof job - n, "%s{\"id\": \"t%d\", \"args\": [\"200\", "
                          "\"1.5\"]}", i ? ", " : "", i);
  snprintf(job + n, sizeof job - n, "]}");
  start_workers(f);
  long long id = server_fixture_submit(f, job);
  double t0 = harness_now();
  json_t *r = wait_job(f, id, 180);
  const char *js = json_string_value(json_object_get(r, "state"));
  if (strcmp(js, "done") != 0)
    fail_msg("job %lld is %s after 180 s", id, js);
  fprintf(stderr, "40 tasks of 200 MiB done in %.1f s\n", harness_now() - t0);
  json_t *k = json_array_get(json_object_get(r, "categories"), 0);
  assert_string_equal(json_string_value(json_object_get(k, "category")), "hog200");
  long long peak = (long long)json_integer_value(json_object_get(k, "memory_mib"));
  json_t *size = json_object_get(k, "size");
  fprintf(stderr, "category hog200: peak %lld MiB, tasks now ask %lld cores, %lld MiB memory, "
          "%lld MiB disk\n", peak, (long long)json_integer_value(json_object_get(size, "cores")),
          (long long)json_integer_value(json_object_get(size, "memory_mib")),
          (long long)json_integer_value(json_object_get(size, "disk_mib")));
  assert_true(peak >= 200 && peak <= 240); /* the resident peak, not the 2 GiB limit */
  assert_int_equal(json_integer_value(json_object_get(size, "cores")), 1);
  assert_int_equal(json_integer_value(json_object_get(size, "memory_mib")), peak + 64);
  json_decref(r);

  /* each result carries its measurements */
  char path[96];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", id);
  json_t *list = server_fixture_get(f, path), *t;
  size_t i;
  json_array_foreach(json_object_get(list, "tasks"), i, t) {
    json_t *u = json_object_get(t, "usage");
    long long mem = (long long)json_integer_value(json_object_get(u, "memory_bytes"));
    if (mem < (200ll << 20) || mem > (240ll << 20) ||
        json_number_value(json_object_get(u, "wall_seconds")) < 1.4 ||
        !json_is_integer(json_object_get(u, "disk_bytes")) ||
        !json_is_number(json_object_get(t, "cpu_seconds")))
      fail_msg("task %s: usage %s", json_string_value(json_object_get(t, "id")),
               json_dumps(t, JSON_COMPACT));
  }
  json_decref(list);

  stop_workers(f);
  int total = 0;
  for (int w = 0; w < NWORKERS; w++) {
    int whole, sized;
    int most = peak_sized(f, w, id, &whole, &sized);
    fprintf(stderr, "worker w%d: %d tasks with its whole offer, then %d sized ones, at most %d "
            "at once\n", w + 1, whole, sized, most);
    assert_true(whole >= 0 && whole <= 2);
    assert_true(most >= 4);
    total += whole + sized;
  }
  assert_int_equal(total, CATEGORY_TASKS);
}

/* Attempt a of a task's history: its reason ("" for none), its sized
 * memory limit and the memory its failure made the task ask (-1: none). */
static void attempt(json_t *h, size_t a, const char **reason, long long *sized, long long *retry) {
  json_t *e = json_array_get(h, a);
  json_t *s = json_object_get(json_object_get(e, "sized"), "memory_mib");
  json_t *r = json_object_get(json_object_get(e, "retry"), "memory_mib");
  *reason = json_string_value(json_object_get(e, "reason"));
  *reason = *reason ? *reason : "";
  *sized = json_is_integer(s) ? (long long)json_integer_value(s) : -1;
  *retry = json_is_integer(r) ? (long long)json_integer_value(r) : -1;
}

static void test_retry_larger(void **state) {
  fixture *f = *state;
  start_workers(f);
  long long id = server_fixture_submit(
    f, "{\"name\": \"grow\", \"app\": \"memhog\", \"max_attempts\": 1, "
       "\"limits\": {\"memory_mib\": 128}, \"tasks\": ["
       "{\"id\": \"need200\", \"args\": [\"200\"], \"retry_larger\": true},"
       "{\"id\": \"need300\", \"args\": [\"300\"], \"retry_larger\": true},"
       "{\"id\": \"fixed\", \"args\": [\"300\"]}]}");
  json_t *r = wait_job(f, id, 120);
  assert_string_equal(json_string_value(json_object_get(r, "state")), "failed");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "counts"), "done")), 2);
  int64_t first = 0;
  char path[96];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", id);
  json_t *list = server_fixture_get(f, path);
  first = json_integer_value(json_object_get(json_array_get(json_object_get(list, "tasks"), 0),
                                             "key"));
  json_decref(list);
  json_decref(r);

  /* need200: killed at 128 MiB, one retry at 256 MiB, done; need300:
   * killed at 128 and at 256, done at 512; fixed: killed once, failed.
   * Attempts of one second are listed by index, not by time: each is
   * matched by the size it ran under (-1: the task's own 128 MiB). */
  static const struct {
    const char *id, *state;
    int attempts;
    long long done_at; /* the size of the attempt that succeeded (0: none) */
  } want[] = {{"need200", "done", 2, 256}, {"need300", "done", 3, 512}, {"fixed", "failed", 1, 0}};
  for (int k = 0; k < 3; k++) {
    snprintf(path, sizeof path, "/v1/jobs/%lld/tasks/%lld", id, (long long)first + k);
    json_t *d = server_fixture_get(f, path), *h = json_object_get(d, "history");
    assert_string_equal(json_string_value(json_object_get(d, "id")), want[k].id);
    assert_string_equal(json_string_value(json_object_get(d, "state")), want[k].state);
    assert_int_equal(json_array_size(h), want[k].attempts);
    int kills = 0, done = 0;
    for (int a = 0; a < want[k].attempts; a++) {
      const char *reason;
      long long sized, retry;
      attempt(h, (size_t)a, &reason, &sized, &retry);
      fprintf(stderr, "%s attempt %d: reason \"%s\", sized %lld MiB, retry %lld MiB\n",
              want[k].id, a + 1, reason, sized, retry);
      long long ran = sized < 0 ? 128 : sized;
      if (*reason) { /* a kill: the task asks twice as much next, unless fixed */
        assert_string_equal(reason, "memory");
        assert_int_equal(retry, want[k].done_at ? 2 * ran : -1);
        kills++;
      } else {
        assert_int_equal(ran, want[k].done_at);
        assert_int_equal(retry, -1);
        done++;
      }
    }
    assert_int_equal(kills, want[k].attempts - (want[k].done_at ? 1 : 0));
    assert_int_equal(done, want[k].done_at ? 1 : 0);
    json_decref(d);
  }

  /* cairn status JOB TASK says the same */
  char cairn[4096], jobarg[32], *out = NULL;
  harness_bin(cairn, sizeof cairn, "cairn");
  snprintf(jobarg, sizeof jobarg, "%lld", id);
  setenv("CAIRN_SERVER", f->srv.url, 1);
  setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
  const char *argv[] = {cairn, "status", jobarg, "need300", NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  fprintf(stderr, "cairn status %s need300:\n%s", jobarg, out);
  assert_non_null(strstr(out, "retry_larger; grown to 512 MiB memory"));
  assert_non_null(strstr(out, " memory, retried with 256 MiB memory (not counted)\n"));
  assert_non_null(strstr(out, " memory, retried with 512 MiB memory (not counted)\n"));
  free(out);
  stop_workers(f);
}

/* A result's "usage" is checked before anything is applied: a bad one is
 * 400 naming the field (alone or in a batch) and the lease stays held; a
 * good one is stored with the result and shown by the task's view. */
static void test_usage_checked(void **state) {
  fixture *f = *state;
  char token[65];
  assert_true(harness_register(f->srv.url, "probe", "memhog", token) > 0);
  long long id = server_fixture_submit(f, "{\"app\": \"memhog\", \"tasks\": [{\"id\": \"x\"}]}");
  json_t *w = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", token, "{}", 2, &w, NULL, NULL),
                   200);
  long long idx = (long long)json_integer_value(json_object_get(w, "index"));
  json_decref(w);
  static const struct {
    const char *usage, *field;
  } bad[] = {
    {"[]", "\"usage\" must be an object"},
    {"{\"memory_bytes\": -5}", "usage.memory_bytes"},
    {"{\"disk_bytes\": \"1\"}", "usage.disk_bytes"},
    {"{\"wall_seconds\": 1e300}", "usage.wall_seconds"},
    {"{\"peak\": 1}", "usage: unknown field \"peak\""},
  };
  char path[64], body[512];
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    for (int batch = 0; batch < 2; batch++) {
      json_t *r = NULL;
      if (batch)
        snprintf(body, sizeof body, "{\"results\": [{\"index\": %lld, \"exit_status\": 0, "
                 "\"output\": \"x\", \"usage\": %s}]}", idx, bad[i].usage);
      else
        snprintf(body, sizeof body, "{\"exit_status\": 0, \"output\": \"x\", \"usage\": %s}",
                 bad[i].usage);
      long st = harness_http(f->srv.url, batch ? "POST" : "PUT", batch ? "/v1/results" : path,
                             token, body, strlen(body), &r, NULL, NULL);
      const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
      if (st != 400 || !msg || !strstr(msg, bad[i].field) || (batch && !strstr(msg, "results[0]")))
        fail_msg("%s: HTTP %ld, %s (wanted 400 naming %s)", body, st, msg ? msg : "-",
                 bad[i].field);
      json_decref(r);
    }
  }
  snprintf(body, sizeof body, "{\"exit_status\": 0, \"output\": \"x\", \"cpu_seconds\": 0.5, "
           "\"usage\": {\"memory_bytes\": 1048576, \"disk_bytes\": 4096, \"wall_seconds\": 2}}");
  assert_int_equal(harness_http(f->srv.url, "PUT", path, token, body, strlen(body), NULL, NULL,
                                NULL), 200);
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", id);
  json_t *list = server_fixture_get(f, path);
  long long key = json_integer_value(json_object_get(json_array_get(json_object_get(list, "tasks"),
                                                                    0), "key"));
  json_decref(list);
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks/%lld", id, key);
  json_t *d = server_fixture_get(f, path);
  json_t *u = json_object_get(json_array_get(json_object_get(d, "history"), 0), "usage");
  assert_int_equal(json_integer_value(json_object_get(u, "memory_bytes")), 1048576);
  assert_int_equal(json_integer_value(json_object_get(u, "disk_bytes")), 4096);
  assert_true(json_number_value(json_object_get(u, "wall_seconds")) == 2);
  json_decref(d);
  /* the job's own category was measured: 1 MiB, CPU over wall 0.25 */
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  json_t *j = server_fixture_get(f, path);
  json_t *k = json_array_get(json_object_get(j, "categories"), 0);
  assert_string_equal(json_string_value(json_object_get(k, "category")), "");
  assert_int_equal(json_integer_value(json_object_get(k, "memory_mib")), 1);
  assert_true(json_number_value(json_object_get(k, "cpu_ratio")) == 0.25);
  json_decref(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_category_packs_workers, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_retry_larger, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_usage_checked, server_fixture_setup,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
