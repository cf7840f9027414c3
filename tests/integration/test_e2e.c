/* test_e2e.c — real cairn-server and real cairn-worker processes on loopback:
 * a 200-task edit-distance DAG with 3 workers, every block checked against a
 * direct computation; a worker killed with SIGKILL mid-task (its lease
 * expires, another worker finishes the task); the server killed with SIGKILL
 * mid-job and restarted on the same database (the job completes, and every
 * result a worker was told was accepted is there exactly once). */
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

#include "tests/support/harness.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static char bin_app[4096], bin_worker[4096], bin_cli[4096];

static int setup(void **state) {
  (void)state;
  harness_bin(bin_app, sizeof bin_app, "cairn-app-editdist");
  harness_bin(bin_worker, sizeof bin_worker, "cairn-worker");
  harness_bin(bin_cli, sizeof bin_cli, "cairn");
  setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
  return 0;
}

/* Writes strings.txt and job.json (rows x cols blocks of bs) into dir. */
static void make_job(const char *dir, int n, int m, int bs) {
  char path[4200], ns[16], ms[16], bss[16];
  snprintf(ns, sizeof ns, "%d", n);
  snprintf(ms, sizeof ms, "%d", m);
  snprintf(bss, sizeof bss, "%d", bs);
  char *out = NULL;
  const char *mk[] = {bin_app, "--make-strings", ns, ms, "99", NULL};
  assert_int_equal(harness_run(mk, &out), 0);
  snprintf(path, sizeof path, "%s/strings.txt", dir);
  harness_write_file(path, out);
  free(out);
  const char *mj[] = {bin_app, "--make-job", path, bss, NULL};
  assert_int_equal(harness_run(mj, &out), 0);
  snprintf(path, sizeof path, "%s/job.json", dir);
  harness_write_file(path, out);
  free(out);
}

static long long submit_file(const char *url, const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/job.json", dir);
  const char *argv[] = {bin_cli, "submit", path, "--server", url, NULL};
  char *out = NULL;
  assert_int_equal(harness_run(argv, &out), 0);
  long long id = atoll(out);
  free(out);
  assert_true(id > 0);
  return id;
}

static pid_t start_worker(const char *url, const char *dir, int i, const char *app,
                          const char *idle) {
  char wdir[4200], log[4200], appspec[4200], name[32];
  snprintf(wdir, sizeof wdir, "%s/worker-%d", dir, i);
  snprintf(log, sizeof log, "%s/worker-%d.log", dir, i);
  snprintf(appspec, sizeof appspec, "%s", app);
  snprintf(name, sizeof name, "w%d", i);
  const char *argv[] = {bin_worker, "--server", url, "--app", appspec, "--dir", wdir,
                        "--name", name, "--exit-when-idle", idle, NULL};
  pid_t p = harness_spawn(argv, log);
  assert_true(p > 0);
  return p;
}

static json_t *job_status(const char *url, long long job) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  json_t *r = NULL;
  if (harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL) != 200) {
    json_decref(r);
    return NULL;
  }
  return r;
}

static long count_of(json_t *job, const char *state) {
  return (long)json_integer_value(json_object_get(json_object_get(job, "counts"), state));
}

static const char *wait_job(const char *url, long long job, double timeout) {
  static char state[16];
  double until = harness_now() + timeout;
  snprintf(state, sizeof state, "timeout");
  while (harness_now() < until) {
    json_t *j = job_status(url, job);
    const char *s = j ? json_string_value(json_object_get(j, "state")) : NULL;
    if (s && strcmp(s, "running") != 0) {
      snprintf(state, sizeof state, "%s", s);
      json_decref(j);
      break;
    }
    json_decref(j);
    usleep(100000);
  }
  return state;
}

/* Checks every block's output against the full table computed here. */
static void check_results(const char *url, long long job, const char *dir, int bs, int ntasks) {
  char path[4200];
  snprintf(path, sizeof path, "%s/strings.txt", dir);
  FILE *f = fopen(path, "r");
  char *a = NULL, *b = NULL;
  size_t ca = 0, cb = 0;
  long na = (long)getline(&a, &ca, f) - 1, nb = (long)getline(&b, &cb, f) - 1;
  fclose(f);
  long *d = malloc((size_t)(na + 1) * (size_t)(nb + 1) * sizeof *d);
#define D(r, c) d[(r) * (nb + 1) + (c)]
  for (long r = 0; r <= na; r++)
    for (long c = 0; c <= nb; c++) {
      if (!r || !c)
        D(r, c) = r + c;
      else {
        long v = D(r - 1, c - 1) + (a[r - 1] != b[c - 1]);
        if (D(r - 1, c) + 1 < v)
          v = D(r - 1, c) + 1;
        if (D(r, c - 1) + 1 < v)
          v = D(r, c - 1) + 1;
        D(r, c) = v;
      }
    }
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  json_t *resp = NULL;
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &resp, NULL, NULL), 200);
  json_t *tasks = json_object_get(resp, "tasks");
  assert_int_equal(json_array_size(tasks), ntasks);
  size_t k;
  json_t *t;
  json_array_foreach(tasks, k, t) {
    int i = 0, j = 0;
    assert_int_equal(sscanf(json_string_value(json_object_get(t, "id")), "%d,%d", &i, &j), 2);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
    const char *out = json_string_value(json_object_get(t, "output"));
    assert_non_null(out);
    long r1 = (i + 1) * bs < na ? (i + 1) * bs : na, c0 = (long)j * bs;
    long c1 = (j + 1) * bs < nb ? (j + 1) * bs : nb;
    const char *p = strstr(out, "bottom ");
    assert_non_null(p);
    p += 7;
    for (long c = c0; c <= c1; c++) {
      char *end;
      long v = strtol(p, &end, 10);
      if (v != D(r1, c))
        fail_msg("task %d,%d: D[%ld][%ld] = %ld, expected %ld", i, j, r1, c, v, D(r1, c));
      p = end;
    }
  }
#undef D
  json_decref(resp);
  free(d);
  free(a);
  free(b);
}

static void test_dag_200_tasks_three_workers(void **state) {
  (void)state;
  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  harness_server srv;
  assert_int_equal(harness_server_start(&srv, db, NULL), 0);
  make_job(dir, 200, 100, 10); /* 20 x 10 blocks */
  long long job = submit_file(srv.url, dir);
  char app[4200];
  snprintf(app, sizeof app, "editdist=%s", bin_app);
  pid_t w[3];
  for (int i = 0; i < 3; i++)
    w[i] = start_worker(srv.url, dir, i, app, "3");
  assert_string_equal(wait_job(srv.url, job, 180), "done");
  check_results(srv.url, job, dir, 10, 200);
  for (int i = 0; i < 3; i++) {
    int st = harness_wait(w[i], 30);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  assert_int_equal(harness_server_stop(&srv, SIGTERM), 0);
}

static void test_killed_worker_lease_expires(void **state) {
  (void)state;
  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  harness_server srv;
  assert_int_equal(harness_server_start(&srv, db, NULL), 0);
  const char *job = "{\"app\": \"sleep\", \"lease_seconds\": 3, \"max_attempts\": 5, "
                    "\"tasks\": [{\"id\": \"nap\", \"args\": [\"1\"]}]}";
  json_t *r = NULL;
  assert_int_equal(harness_http(srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  pid_t a = start_worker(srv.url, dir, 1, "sleep=/bin/sleep", "60");
  /* wait until a holds the task, then kill it without warning */
  double until = harness_now() + 30;
  long running = 0;
  while (!running && harness_now() < until) {
    json_t *j = job_status(srv.url, id);
    running = count_of(j, "running");
    json_decref(j);
    usleep(50000);
  }
  assert_int_equal(running, 1);
  kill(a, SIGKILL);
  waitpid(a, NULL, 0);
  pid_t b = start_worker(srv.url, dir, 2, "sleep=/bin/sleep", "8");
  assert_string_equal(wait_job(srv.url, id, 60), "done");
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", id);
  assert_int_equal(harness_http(srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  json_t *t = json_array_get(json_object_get(r, "tasks"), 0);
  /* the killed volunteer's lease expired and the task was reissued to b */
  assert_int_equal(json_integer_value(json_object_get(t, "volunteer")), 2);
  assert_true(json_integer_value(json_object_get(t, "attempts")) >= 2);
  json_decref(r);
  harness_wait(b, 30);
  assert_int_equal(harness_server_stop(&srv, SIGTERM), 0);
}

/* Reads "N done" from a worker's last summary line. */
static long worker_done(const char *dir, int i) {
  char path[4200];
  snprintf(path, sizeof path, "%s/worker-%d.log", dir, i);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char line[1024];
  long done = -1;
  while (fgets(line, sizeof line, f)) {
    const char *p = strstr(line, "cairn-worker: ");
    long n;
    if (p && sscanf(p, "cairn-worker: %ld done", &n) == 1)
      done = n;
  }
  fclose(f);
  return done;
}

static void test_server_killed_and_restarted(void **state) {
  (void)state;
  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  harness_server srv;
  assert_int_equal(harness_server_start(&srv, db, NULL), 0);
  make_job(dir, 200, 100, 10);
  long long job = submit_file(srv.url, dir);
  char app[4200];
  snprintf(app, sizeof app, "editdist=%s", bin_app);
  pid_t w[3];
  for (int i = 0; i < 3; i++)
    w[i] = start_worker(srv.url, dir, i, app, "6");
  /* let about a third of the job finish, then kill -9 the server */
  double until = harness_now() + 120;
  long done = 0;
  while (done < 60 && harness_now() < until) {
    json_t *j = job_status(srv.url, job);
    done = count_of(j, "done");
    json_decref(j);
    usleep(20000);
  }
  assert_true(done >= 60);
  int st = harness_server_stop(&srv, SIGKILL);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  /* restart on the same database and port */
  char listen[64];
  const char *port = strrchr(srv.url, ':') + 1;
  snprintf(listen, sizeof listen, "127.0.0.1:%s", port);
  const char *extra[] = {"--listen", listen, NULL};
  assert_int_equal(harness_server_start(&srv, db, extra), 0);
  json_t *j = job_status(srv.url, job);
  assert_true(count_of(j, "done") >= done); /* nothing acknowledged was lost */
  json_decref(j);
  assert_string_equal(wait_job(srv.url, job, 180), "done");
  check_results(srv.url, job, dir, 10, 200);
  long acked = 0;
  for (int i = 0; i < 3; i++) {
    int ws = harness_wait(w[i], 60);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    long n = worker_done(dir, i);
    assert_true(n >= 0);
    acked += n;
  }
  /* every accepted result was acknowledged once and kept once */
  json_t *vols = NULL;
  assert_int_equal(harness_http(srv.url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &vols, NULL, NULL), 200);
  long valid = 0;
  size_t k;
  json_t *v;
  json_array_foreach(json_object_get(vols, "volunteers"), k, v)
    valid += (long)json_integer_value(json_object_get(v, "valid"));
  json_decref(vols);
  assert_int_equal(valid, 200);
  assert_int_equal(acked, 200);
  assert_int_equal(harness_server_stop(&srv, SIGTERM), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dag_200_tasks_three_workers),
    cmocka_unit_test(test_killed_worker_lease_expires),
    cmocka_unit_test(test_server_killed_and_restarted),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
