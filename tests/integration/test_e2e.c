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

#include "tests/support/editdist.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static int setup(void **state) {
  (void)state;
  e2e_init();
  return 0;
}

static void test_dag_200_tasks_three_workers(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  e2e_make_job(dir, 200, 100, 10); /* 20 x 10 blocks */
  long long job = e2e_submit(sf.srv.url, dir);
  char app[4200];
  snprintf(app, sizeof app, "editdist=%s", e2e_bin_app);
  pid_t w[3];
  for (int i = 0; i < 3; i++)
    w[i] = e2e_worker(sf.srv.url, dir, i, app, "3");
  assert_string_equal(e2e_wait(sf.srv.url, job, 180), "done");
  e2e_check_results(sf.srv.url, job, dir, 10, 200, 1);
  for (int i = 0; i < 3; i++) {
    int st = harness_wait(w[i], 30);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static void test_killed_worker_lease_expires(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  const char *job = "{\"app\": \"sleep\", \"lease_seconds\": 3, \"max_attempts\": 5, "
                    "\"tasks\": [{\"id\": \"nap\", \"args\": [\"1\"]}]}";
  json_t *r = NULL;
  assert_int_equal(harness_http(sf.srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  pid_t a = e2e_worker(sf.srv.url, dir, 1, "sleep=/bin/sleep", "60");
  /* wait until a holds the task, then kill it without warning */
  double until = harness_now() + 30;
  long running = 0;
  while (!running && harness_now() < until) {
    json_t *j = e2e_job(sf.srv.url, id);
    running = e2e_count(j, "running");
    json_decref(j);
    usleep(50000);
  }
  assert_int_equal(running, 1);
  kill(a, SIGKILL);
  waitpid(a, NULL, 0);
  pid_t b = e2e_worker(sf.srv.url, dir, 2, "sleep=/bin/sleep", "8");
  assert_string_equal(e2e_wait(sf.srv.url, id, 60), "done");
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", id);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  json_t *t = json_array_get(json_object_get(r, "tasks"), 0);
  /* the killed volunteer's lease expired and the task was reissued to b */
  assert_int_equal(json_integer_value(json_object_get(t, "volunteer")), 2);
  assert_true(json_integer_value(json_object_get(t, "attempts")) >= 2);
  json_decref(r);
  harness_wait(b, 30);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* Reads "N done" from a worker's last summary line. */
static long worker_done(const char *dir, int i) {
  char path[4200];
  snprintf(path, sizeof path, "%s/w%d.log", dir, i);
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
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  e2e_make_job(dir, 200, 100, 10);
  long long job = e2e_submit(sf.srv.url, dir);
  char app[4200];
  snprintf(app, sizeof app, "editdist=%s", e2e_bin_app);
  pid_t w[3];
  for (int i = 0; i < 3; i++)
    w[i] = e2e_worker(sf.srv.url, dir, i, app, "60");
  /* let about a third of the job finish, then kill -9 the server */
  double until = harness_now() + 120;
  long done = 0;
  while (done < 60 && harness_now() < until) {
    json_t *j = e2e_job(sf.srv.url, job);
    done = e2e_count(j, "done");
    json_decref(j);
    usleep(20000);
  }
  assert_true(done >= 60);
  int st = server_fixture_stop(&sf, SIGKILL);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  /* restart on the same database and port */
  char listen[64];
  const char *port = strrchr(sf.srv.url, ':') + 1;
  snprintf(listen, sizeof listen, "127.0.0.1:%s", port);
  const char *extra[] = {"--listen", listen, NULL};
  assert_int_equal(server_fixture_restart(&sf, extra), 0);
  json_t *j = e2e_job(sf.srv.url, job);
  assert_true(e2e_count(j, "done") >= done); /* nothing acknowledged was lost */
  json_decref(j);
  assert_string_equal(e2e_wait(sf.srv.url, job, 180), "done");
  e2e_check_results(sf.srv.url, job, dir, 10, 200, 1);
  long acked[3];
  for (int i = 0; i < 3; i++) {
    kill(w[i], SIGTERM); /* the job is done: stop them (they print their counters) */
    int ws = harness_wait(w[i], 60);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    acked[i] = worker_done(dir, i);
    assert_true(acked[i] >= 0);
  }
  /* Each task has exactly one valid result, and every result a worker was
   * answered 200 for is among its volunteer's valid results. (A result whose
   * answer was cut off by the kill is durable but unacknowledged: the worker
   * resends it and gets 409, so acknowledgements may be fewer than 200.) */
  json_t *vols = NULL;
  assert_int_equal(harness_http(sf.srv.url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &vols, NULL, NULL), 200);
  long valid = 0, total_acked = 0;
  size_t k;
  json_t *v;
  json_array_foreach(json_object_get(vols, "volunteers"), k, v) {
    int i = -1;
    sscanf(json_string_value(json_object_get(v, "name")), "w%d", &i);
    assert_true(i >= 0 && i < 3);
    long vv = (long)json_integer_value(json_object_get(v, "valid"));
    assert_true(vv >= acked[i]);
    valid += vv;
    total_acked += acked[i];
  }
  json_decref(vols);
  assert_int_equal(valid, 200);
  assert_true(total_acked <= 200 && total_acked >= 190);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static void test_embedded_master_example(void **state) {
  (void)state;
  char bin[4096], *out = NULL;
  harness_bin(bin, sizeof bin, "example-embed_master");
  const char *argv[] = {bin, "--leaves", "32", NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  assert_non_null(strstr(out, "sum 1..32 = 528 (expected 528)"));
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_embedded_master_example),
    cmocka_unit_test(test_dag_200_tasks_three_workers),
    cmocka_unit_test(test_killed_worker_lease_expires),
    cmocka_unit_test(test_server_killed_and_restarted),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
