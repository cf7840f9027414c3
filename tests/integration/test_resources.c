/* test_resources.c — resource requests with a real cairn-server (SQLite)
 * and two real cairn-worker processes offering 4 cores each (--cores 4): a
 * job with one 4-core task and sixteen 1-core tasks (each sleeps 0.3 to
 * 0.5 s) completes, and neither worker ever has more than 4 cores in use,
 * checked from the workers' own start/end log lines (the peak per worker is
 * printed, with how many tasks waited in the worker's own pool: the master
 * handed them out before the worker had given the cores back); then a job whose tasks ask for more cores or memory than any
 * worker offers is reported unfit, by GET /v1/jobs/{id} and `cairn status`. */
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
#include <time.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define NWORKERS 2
#define SMALL_TASKS 16
#define MAX_EVENTS 256

/* The master; the workers wI+1 in workers[I] (started in order). */
typedef server_fixture fixture;

static void worker_log(const fixture *f, int i, char *out, size_t len) {
  snprintf(out, len, "%s/w%d.log", f->dir, i + 1);
}

/* Starts worker wI+1 (its log: worker_log), which must be f->workers[i]. */
static void start_worker(fixture *f, int i) {
  char name[16], sleep_app[64];
  snprintf(name, sizeof name, "w%d", i + 1);
  snprintf(sleep_app, sizeof sleep_app, "sleep=%s",
           access("/bin/sleep", X_OK) == 0 ? "/bin/sleep" : "/usr/bin/sleep");
  const char *args[] = {"--app", sleep_app, "--cores", "4", "--log-level", "info",
                        "--peer-listen", "off", NULL};
  assert_int_equal(f->nworkers, i);
  assert_true(server_fixture_worker(f, name, args) > 0);
}

static long long submit(const char *url, const char *job) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL);
  if (st != 201)
    fail_msg("submit: HTTP %ld", st);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

static json_t *job_status(const char *url, long long id) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  return r;
}

/* Polls the job until it is no longer running (at most timeout s). */
static json_t *wait_job(const char *url, long long id, double timeout) {
  double end = harness_now() + timeout;
  for (;;) {
    json_t *r = job_status(url, id);
    const char *state = json_string_value(json_object_get(r, "state"));
    if (strcmp(state, "running") != 0 || harness_now() > end)
      return r;
    json_decref(r);
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
  }
}

typedef struct event {
  long long ms, cores;
  int start;
} event;

static int cmp_event(const void *a, const void *b) {
  const event *x = a, *y = b;
  if (x->ms != y->ms)
    return x->ms < y->ms ? -1 : 1;
  return x->start - y->start; /* an end before a start at the same ms */
}

/* Reads worker i's "task N start/end: job J cores C ... mono_ms M" lines:
 * its peak of cores held at once; *starts and *ends count the lines, *big
 * the 4-core tasks started. */
static long long peak_cores(const fixture *f, int i, int *starts, int *ends, int *big,
                            int *waits) {
  char path[4300], line[1024];
  event ev[MAX_EVENTS];
  int n = 0;
  worker_log(f, i, path, sizeof path);
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  *starts = *ends = *big = *waits = 0;
  while (fgets(line, sizeof line, fp)) {
    char *p = strstr(line, "task ");
    *waits += p && strstr(p, " waits for resources") != NULL;
    long long idx, job, cores, mem, disk, mono, real;
    char what[8];
    if (!p || sscanf(p, "task %lld %5[a-z]: job %lld cores %lld memory_mib %lld disk_mib %lld "
                     "mono_ms %lld real_ms %lld", &idx, what, &job, &cores, &mem, &disk, &mono,
                     &real) != 8)
      continue;
    int start = strcmp(what, "start") == 0;
    if (!start && strcmp(what, "end") != 0)
      continue;
    assert_true(n < MAX_EVENTS);
    ev[n++] = (event){mono, cores, start};
    *starts += start;
    *ends += !start;
    *big += start && cores == 4;
  }
  fclose(fp);
  qsort(ev, (size_t)n, sizeof ev[0], cmp_event);
  long long held = 0, peak = 0;
  for (int k = 0; k < n; k++) {
    held += ev[k].start ? ev[k].cores : -ev[k].cores;
    if (held > peak)
      peak = held;
  }
  assert_int_equal(held, 0); /* every start has its end */
  return peak;
}

static void test_cores_never_exceeded(void **state) {
  fixture *f = *state;
  char job[8192];
  size_t n = (size_t)snprintf(job, sizeof job,
                              "{\"name\": \"cores\", \"app\": \"sleep\", \"tasks\": ["
                              "{\"id\": \"big\", \"args\": [\"0.5\"], \"resources\": {\"cores\": 4}}");
  for (int i = 0; i < SMALL_TASKS; i++)
    n += (size_t)snprintf(job + n, sizeof job - n, ", {\"id\": \"s%d\", \"args\": [\"0.%d\"]}", i,
                          3 + i % 3);
  snprintf(job + n, sizeof job - n, "]}");
  long long id = submit(f->srv.url, job);
  for (int i = 0; i < NWORKERS; i++)
    start_worker(f, i);

  json_t *r = wait_job(f->srv.url, id, 120);
  const char *js = json_string_value(json_object_get(r, "state"));
  if (strcmp(js, "done") != 0)
    fail_msg("job %lld is %s after 120 s", id, js);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "counts"), "done")),
                   SMALL_TASKS + 1);
  assert_int_equal(json_integer_value(json_object_get(r, "unfit")), 0);
  json_decref(r);

  for (int i = 0; i < NWORKERS; i++) {
    kill(f->workers[i], SIGTERM);
    assert_true(harness_wait(f->workers[i], 30) >= 0);
    f->workers[i] = 0; /* reaped */
  }
  int total_ends = 0, bigs = 0;
  for (int i = 0; i < NWORKERS; i++) {
    int starts, ends, big, waits;
    long long peak = peak_cores(f, i, &starts, &ends, &big, &waits);
    fprintf(stderr, "worker w%d: %d tasks, peak %lld cores in use at once (offer 4), %d tasks "
            "waited in its pool (handed out before cores came back)\n", i + 1, ends, peak, waits);
    assert_true(peak <= 4);
    assert_int_equal(starts, ends);
    total_ends += ends;
    bigs += big;
  }
  assert_int_equal(bigs, 1);
  assert_true(total_ends >= SMALL_TASKS + 1); /* every task ran to its end on a worker */
}

static void test_unfit_reported(void **state) {
  fixture *f = *state;
  for (int i = 0; i < NWORKERS; i++)
    start_worker(f, i);
  /* both workers have stated their offers once they ask for work */
  long long id = submit(f->srv.url,
                        "{\"name\": \"too-big\", \"app\": \"sleep\", \"tasks\": ["
                        "{\"id\": \"eight\", \"args\": [\"0.1\"], \"resources\": {\"cores\": 8}},"
                        "{\"id\": \"huge\", \"args\": [\"0.1\"], \"resources\": "
                        "{\"memory_mib\": 1073741824}},"
                        "{\"id\": \"fits\", \"args\": [\"0.1\"]}]}");
  double end = harness_now() + 60;
  json_t *r = NULL;
  for (;;) { /* until the task that fits is done */
    r = job_status(f->srv.url, id);
    if (json_integer_value(json_object_get(json_object_get(r, "counts"), "done")) == 1 ||
        harness_now() > end)
      break;
    json_decref(r);
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
  }
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "counts"), "done")), 1);
  assert_string_equal(json_string_value(json_object_get(r, "state")), "running");
  assert_int_equal(json_integer_value(json_object_get(r, "unfit")), 2);
  json_t *lo = json_object_get(r, "largest_offer");
  assert_int_equal(json_integer_value(json_object_get(lo, "cores")), 4);
  fprintf(stderr, "job %lld: unfit %lld, largest offer %lld cores %lld MiB memory\n", id,
          (long long)json_integer_value(json_object_get(r, "unfit")),
          (long long)json_integer_value(json_object_get(lo, "cores")),
          (long long)json_integer_value(json_object_get(lo, "memory_mib")));
  json_decref(r);

  char bin[4096], jid[32], *out = NULL;
  harness_bin(bin, sizeof bin, "cairn");
  snprintf(jid, sizeof jid, "%lld", id);
  setenv("CAIRN_SERVER", f->srv.url, 1);
  setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
  const char *argv[] = {bin, "status", jid, NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  assert_non_null(out);
  if (!strstr(out, "unfit: 2 tasks request more than any worker offers (largest offer: 4 cores"))
    fail_msg("cairn status lacks the unfit line:\n%s", out);
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_cores_never_exceeded, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_unfit_reported, server_fixture_setup,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
