/* test_long_poll.c — work requests held for a task ("wait", docs/protocol.md)
 * against a real cairn-server, with a real cairn-worker and raw sockets:
 * a worker held in a long poll gets a task submitted later without asking
 * again, and stops promptly while held, and keeps --exit-when-idle; a woken request that cannot take the task passes the wake on; a held request ends 204 at its wait; past --max-held-work a
 * request is answered at once; a client that hangs up while held is
 * forgotten (cairn_work_held back to 0); the master stops promptly with
 * requests held, answering them 204; "wait" out of range is 400. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

static int setup_cap1(void **state) {
  static const char *const extra[] = {"--max-held-work", "1", NULL};
  return server_fixture_start(state, extra);
}

/* The sum of the /metrics lines that start with prefix (tests/support). */
static long long metric(const char *url, const char *prefix) {
  long long v = harness_metric(url, prefix);
  assert_true(v >= 0);
  return v;
}

static long long held(const char *url) { return metric(url, "cairn_work_held "); }

/* Polls until cairn_work_held is want; 0, or -1 after timeout seconds. */
static int wait_held(const char *url, long long want, double timeout) {
  return harness_wait_metric(url, "cairn_work_held ", want, timeout);
}

static long work(const char *url, const char *token, const char *body, json_t **resp) {
  return harness_http(url, "POST", "/v1/work", token, body, strlen(body), resp, NULL, NULL);
}

/* A worker idle in a long poll gets a task submitted later at once, from the
 * request it had open: the master answered no other work request. */
static void test_held_worker_gets_later_task(void **state) {
  fixture *f = *state;
  pid_t w = server_fixture_worker(f, "w", (const char *const[]){"--app", "noop=/bin/true",
                                                                "--slots", "1", NULL});
  assert_true(w > 0);
  assert_int_equal(wait_held(f->srv.url, 1, 30), 0);
  sleep(1); /* a polling worker would have asked a few times by now */
  long long answered = metric(f->srv.url, "cairn_http_requests_total{route=\"/v1/work\"");
  assert_int_equal(held(f->srv.url), 1);

  const char *job = "{\"app\": \"noop\", \"tasks\": [{\"id\": \"t\"}]}";
  json_t *r = NULL;
  double t0 = harness_now();
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r,
                                NULL, NULL), 201);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)json_integer_value(json_object_get(r, "id")));
  json_decref(r);
  const char *state_now = "running";
  while (strcmp(state_now, "running") == 0 && harness_now() - t0 < 30) {
    usleep(5000);
    json_t *j = NULL;
    assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &j, NULL, NULL), 200);
    state_now = strcmp(json_string_value(json_object_get(j, "state")), "done") == 0 ? "done"
                                                                                    : "running";
    json_decref(j);
  }
  double took = harness_now() - t0;
  assert_string_equal(state_now, "done");
  if (took >= 1.0)
    fail_msg("the held worker took %.3f s to finish a task submitted while it waited", took);
  /* one more work answer: the held request's 200 (the next one is held) */
  assert_int_equal(metric(f->srv.url, "cairn_http_requests_total{route=\"/v1/work\""),
                   answered + 1);
  assert_int_equal(metric(f->srv.url,
                          "cairn_http_requests_total{route=\"/v1/work\",status=\"200\""), 1);
  assert_int_equal(wait_held(f->srv.url, 1, 30), 0);
  /* a stop while held is prompt: the worker aborts its held request */
  double s0 = harness_now();
  kill(w, SIGTERM);
  int st = harness_wait(w, 20);
  server_fixture_reaped(f, w);
  assert_true(st != -1 && WIFEXITED(st));
  if (harness_now() - s0 > 5)
    fail_msg("the held worker took %.3f s to stop", harness_now() - s0);
  assert_int_equal(wait_held(f->srv.url, 0, 5), 0);
}

/* --exit-when-idle is kept while the master holds the worker's request. */
static void test_exit_when_idle_while_held(void **state) {
  fixture *f = *state;
  double t0 = harness_now();
  pid_t w = server_fixture_worker(f, "w", (const char *const[]){"--app", "noop=/bin/true",
                                                                "--exit-when-idle", "1", NULL});
  assert_true(w > 0);
  int st = harness_wait(w, 20);
  server_fixture_reaped(f, w);
  assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  if (harness_now() - t0 > 6)
    fail_msg("--exit-when-idle 1 took %.3f s", harness_now() - t0);
  assert_true(metric(f->srv.url, "cairn_work_held_total") >= 1); /* it did wait held */
  assert_int_equal(wait_held(f->srv.url, 0, 5), 0);
}

/* A held request with nothing to do ends 204 at its wait; "wait": 0 is
 * answered at once; out of range is 400 naming "wait", and holds nothing. */
static void test_wait_bounds(void **state) {
  fixture *f = *state;
  char token[65];
  assert_true(harness_register(f->srv.url, "v", "noop", token) > 0);
  double t0 = harness_now();
  assert_int_equal(work(f->srv.url, token, "{\"wait\": 400}", NULL), 204);
  double took = harness_now() - t0;
  if (took < 0.39 || took > 5)
    fail_msg("a wait of 400 ms ended after %.3f s", took);
  assert_int_equal(work(f->srv.url, token, "{\"wait\": 0}", NULL), 204);
  assert_int_equal(metric(f->srv.url, "cairn_work_held_total"), 1);
  static const char *const bad[] = {"{\"wait\": 60001}", "{\"wait\": -1}", "{\"wait\": \"5\"}",
                                    "{\"wait\": 1.5}", "{\"wait\": null}"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_t *r = NULL;
    assert_int_equal(work(f->srv.url, token, bad[i], &r), 400);
    const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    if (!msg || !strstr(msg, "\"wait\""))
      fail_msg("%s: the 400 does not name \"wait\": %s", bad[i], msg ? msg : "(none)");
    json_decref(r);
  }
  assert_int_equal(metric(f->srv.url, "cairn_work_held_total"), 1);
  /* a held request is answered with the task of a job submitted meanwhile */
  int fd = harness_send_work(f->srv.url, token, "{\"wait\": 30000}");
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  const char *job = "{\"app\": \"noop\", \"tasks\": [{\"id\": \"t\"}]}";
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), NULL,
                                NULL, NULL), 201);
  assert_int_equal(harness_read_status(fd, 10), 200);
  close(fd);
  assert_int_equal(held(f->srv.url), 0);
}

/* A woken request that cannot take the task (it does not fit its offer)
 * is held again and passes the wake on to the next held request. */
static void test_wake_passed_on(void **state) {
  fixture *f = *state;
  char small[65], big[65];
  assert_true(harness_register(f->srv.url, "small", "noop", small) > 0);
  assert_true(harness_register(f->srv.url, "big", "noop", big) > 0);
  int a = harness_send_work(f->srv.url, small, "{\"wait\": 30000, \"resources\": {\"cores\": 1}}");
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  int b = harness_send_work(f->srv.url, big, "{\"wait\": 30000, \"resources\": {\"cores\": 4}}");
  assert_int_equal(wait_held(f->srv.url, 2, 10), 0);
  const char *job = "{\"app\": \"noop\", \"resources\": {\"cores\": 4}, "
                    "\"tasks\": [{\"id\": \"t\"}]}";
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), NULL,
                                NULL, NULL), 201);
  assert_int_equal(harness_read_status(b, 10), 200); /* long before its 30 s wait */
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0); /* the small one is held again */
  close(a);
  close(b);
  assert_int_equal(wait_held(f->srv.url, 0, 5), 0);
}

/* With --max-held-work 1 a second request is answered 204 at once; a
 * client that closes its held connection is forgotten. */
static void test_cap_and_hang_up(void **state) {
  fixture *f = *state;
  char a[65], b[65];
  assert_true(harness_register(f->srv.url, "a", "noop", a) > 0);
  assert_true(harness_register(f->srv.url, "b", "noop", b) > 0);
  int fd = harness_send_work(f->srv.url, a, "{\"wait\": 60000}");
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  double t0 = harness_now();
  assert_int_equal(work(f->srv.url, b, "{\"wait\": 60000}", NULL), 204);
  if (harness_now() - t0 > 5)
    fail_msg("past the cap a work request waited %.3f s", harness_now() - t0);
  close(fd); /* the client leaves while held */
  assert_int_equal(wait_held(f->srv.url, 0, 5), 0);
  /* its place is free again, once the server has taken back the hung-up
   * request's slot (the gauge counts held requests, which drops first) */
  fd = -1;
  for (double until = harness_now() + 10; fd < 0 && harness_now() < until;) {
    fd = harness_send_work(f->srv.url, b, "{\"wait\": 60000}");
    if (harness_read_status(fd, 0.2) == 204) { /* answered at once: the slot was still in use */
      close(fd);
      fd = -1;
    }
  }
  assert_true(fd >= 0);
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  close(fd);
  assert_int_equal(wait_held(f->srv.url, 0, 5), 0);
}

/* Stopping the master with requests held is prompt, and they get 204. */
static void test_stop_with_held(void **state) {
  fixture *f = *state;
  char token[3][65];
  int fds[3];
  for (int i = 0; i < 3; i++) { /* one held request a slot: a volunteer each */
    char name[8];
    snprintf(name, sizeof name, "v%d", i);
    assert_true(harness_register(f->srv.url, name, "noop", token[i]) > 0);
    fds[i] = harness_send_work(f->srv.url, token[i], "{\"wait\": 60000}");
  }
  assert_int_equal(wait_held(f->srv.url, 3, 10), 0);
  double t0 = harness_now();
  kill(f->srv.pid, SIGTERM);
  int st = harness_wait(f->srv.pid, 20);
  double took = harness_now() - t0;
  f->srv.pid = 0;
  assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  if (took > 5)
    fail_msg("the master took %.3f s to stop with 3 requests held", took);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(harness_read_status(fds[i], 1), 204);
    close(fds[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_held_worker_gets_later_task, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_exit_when_idle_while_held, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_wait_bounds, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_wake_passed_on, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_cap_and_hang_up, setup_cap1, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_stop_with_held, server_fixture_setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
