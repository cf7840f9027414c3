/* test_job_wait.c — job waits (GET /v1/jobs/{id}?wait=, docs/protocol.md)
 * against a real cairn-server, with real cairn-worker processes, raw
 * sockets and `cairn wait`: a held wait is answered as soon as its job
 * finishes (by a worker's result, or a cancel) with no other GET of the
 * job in between; a wait that passes answers the running job; a finished
 * or missing job is answered at once; past --max-job-waits a wait is
 * answered at once; a client that hangs up while held is forgotten; the
 * master stops promptly with waits held, answering them; "wait" out of
 * range is 400 naming it; `cairn wait` asks once per wait. */
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
#define JOB_ROUTE "cairn_http_requests_total{route=\"/v1/jobs/{id}\""

typedef server_fixture fixture;

static int setup_cap1(void **state) {
  static const char *const extra[] = {"--max-job-waits", "1", NULL};
  return server_fixture_start(state, extra);
}

/* The sum of the /metrics lines that start with prefix (tests/support). */
static long long metric(const char *url, const char *prefix) {
  long long v = harness_metric(url, prefix);
  assert_true(v >= 0);
  return v;
}

static long long held(const char *url) { return metric(url, "cairn_job_waits_held "); }

/* Polls until cairn_job_waits_held is want; 0, or -1 after timeout seconds. */
static int wait_held(const char *url, long long want, double timeout) {
  return harness_wait_metric(url, "cairn_job_waits_held ", want, timeout);
}

static long long submit(const char *url, const char *app) {
  char job[256];
  snprintf(job, sizeof job, "{\"app\": \"%s\", \"tasks\": [{\"id\": \"t\"}]}", app);
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL),
                   201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  assert_true(id > 0);
  return id;
}

/* Sends GET /v1/jobs/{id}?wait=ms on a raw connection and does not read. */
static int send_wait(const char *url, long long id, const char *ms) {
  const char *colon = strrchr(url, ':');
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  char req[512];
  int n = snprintf(req, sizeof req,
                   "GET /v1/jobs/%lld?wait=%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Authorization: Bearer %s\r\n\r\n",
                   id, ms, ADMIN);
  assert_int_equal(write(fd, req, (size_t)n), n);
  return fd;
}

/* The answer on fd within timeout seconds: its status (0: none), and the
 * job's "state" from its body into state (at most 16 bytes). */
static int read_answer(int fd, double timeout, char state[16]) {
  char buf[8192];
  size_t len = 0;
  state[0] = '\0';
  for (double until = harness_now() + timeout; len < sizeof buf - 1;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int left = (int)((until - harness_now()) * 1000);
    if (left <= 0 || poll(&p, 1, left) <= 0)
      break;
    ssize_t k = read(fd, buf + len, sizeof buf - 1 - len);
    if (k <= 0)
      break;
    len += (size_t)k;
    buf[len] = '\0';
    const char *s = strstr(buf, "\"state\":\"");
    if (s && strchr(s + 9, '"')) {
      snprintf(state, 16, "%.*s", (int)(strchr(s + 9, '"') - (s + 9)), s + 9);
      break;
    }
  }
  buf[len] = '\0';
  return len >= 12 ? atoi(buf + 9) : 0; /* "HTTP/1.1 200" */
}

/* GET /v1/jobs/{id}?wait=ms through the harness: the status, the state. */
static long get_wait(const char *url, long long id, const char *ms, char state[16],
                     json_t **body) {
  char path[96];
  snprintf(path, sizeof path, "/v1/jobs/%lld?wait=%s", id, ms);
  json_t *r = NULL;
  long st = harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL);
  snprintf(state, 16, "%s", r && json_string_value(json_object_get(r, "state"))
                              ? json_string_value(json_object_get(r, "state")) : "");
  if (body)
    *body = r;
  else
    json_decref(r);
  return st;
}

static void spawn_worker(fixture *f, const char *app) {
  server_fixture_worker(f, "w", (const char *const[]){"--app", app, NULL});
}

/* A wait held while a real worker runs the job is answered "done" by the
 * master once the result is in, and it is the only GET of the job. */
static void test_wait_answered_when_done(void **state) {
  fixture *f = *state;
  long long id = submit(f->srv.url, "nap");
  int fd = send_wait(f->srv.url, id, "30000");
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  long long gets = metric(f->srv.url, JOB_ROUTE);
  assert_int_equal(gets, 0); /* the held one is not answered yet */
  spawn_worker(f, "nap=/bin/true");
  char st[16];
  assert_int_equal(read_answer(fd, 30, st), 200);
  close(fd);
  assert_string_equal(st, "done");
  assert_int_equal(metric(f->srv.url, JOB_ROUTE), 1);
  assert_int_equal(metric(f->srv.url, JOB_ROUTE ",status=\"200\""), 1);
  assert_int_equal(held(f->srv.url), 0);
  assert_int_equal(metric(f->srv.url, "cairn_job_waits_held_total"), 1);
  /* what it answered is what GET /v1/jobs/{id} answers: done, durable */
  json_t *j = NULL;
  assert_int_equal(get_wait(f->srv.url, id, "0", st, &j), 200);
  assert_string_equal(st, "done");
  assert_true(json_integer_value(json_object_get(j, "finished")) > 0);
  json_decref(j);
}

/* The answer follows the result within well under a second: a volunteer
 * driven by hand takes the task, the wait is held, then the result. */
static void test_wait_follows_result(void **state) {
  fixture *f = *state;
  char token[65];
  assert_true(harness_register(f->srv.url, "v", "nap", token) > 0);
  long long id = submit(f->srv.url, "nap");
  json_t *w = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", token, "{}", 2, &w, NULL, NULL),
                   200);
  long long idx = (long long)json_integer_value(json_object_get(w, "index"));
  json_decref(w);
  int fd = send_wait(f->srv.url, id, "60000");
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  char path[64], st[16];
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  const char *res = "{\"exit_status\": 0, \"output\": \"\"}";
  assert_int_equal(harness_http(f->srv.url, "PUT", path, token, res, strlen(res), NULL, NULL,
                                NULL), 200);
  double t0 = harness_now();
  assert_int_equal(read_answer(fd, 10, st), 200);
  double took = harness_now() - t0;
  close(fd);
  assert_string_equal(st, "done");
  if (took > 0.5)
    fail_msg("the held wait was answered %.3f s after the job finished", took);
  assert_int_equal(metric(f->srv.url, JOB_ROUTE), 1);
}

/* A cancel answers the held wait "cancelled"; a wait on a finished job,
 * or with wait=0, is answered at once; a missing job is 404. */
static void test_cancel_and_at_once(void **state) {
  fixture *f = *state;
  long long id = submit(f->srv.url, "nap");
  int fd = send_wait(f->srv.url, id, "60000");
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  char path[64], st[16];
  snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", id);
  assert_int_equal(harness_http(f->srv.url, "POST", path, ADMIN, NULL, 0, NULL, NULL, NULL), 200);
  assert_int_equal(read_answer(fd, 5, st), 200);
  close(fd);
  assert_string_equal(st, "cancelled");
  double t0 = harness_now();
  assert_int_equal(get_wait(f->srv.url, id, "60000", st, NULL), 200);
  assert_string_equal(st, "cancelled");
  long long other = submit(f->srv.url, "nap");
  assert_int_equal(get_wait(f->srv.url, other, "0", st, NULL), 200);
  assert_string_equal(st, "running");
  assert_int_equal(get_wait(f->srv.url, 999, "60000", st, NULL), 404);
  if (harness_now() - t0 > 5)
    fail_msg("waits that need no hold took %.3f s", harness_now() - t0);
  assert_int_equal(metric(f->srv.url, "cairn_job_waits_held_total"), 1);
}

/* A wait that passes answers the running job; out of range is 400
 * naming "wait" and holds nothing. */
static void test_wait_timeout_and_bounds(void **state) {
  fixture *f = *state;
  long long id = submit(f->srv.url, "nap");
  char st[16];
  double t0 = harness_now();
  assert_int_equal(get_wait(f->srv.url, id, "400", st, NULL), 200);
  double took = harness_now() - t0;
  assert_string_equal(st, "running");
  if (took < 0.39 || took > 5)
    fail_msg("a wait of 400 ms ended after %.3f s", took);
  static const char *const bad[] = {"60001", "-1", "abc", "1.5", "", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_t *r = NULL;
    assert_int_equal(get_wait(f->srv.url, id, bad[i], st, &r), 400);
    const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    if (!msg || !strstr(msg, "\"wait\""))
      fail_msg("wait=%s: the 400 does not name \"wait\": %s", bad[i], msg ? msg : "(none)");
    json_decref(r);
  }
  assert_int_equal(metric(f->srv.url, "cairn_job_waits_held_total"), 1);
  assert_int_equal(held(f->srv.url), 0);
}

/* With --max-job-waits 1 a second wait is answered at once (the running
 * job); a client that closes its held connection is forgotten. */
static void test_cap_and_hang_up(void **state) {
  fixture *f = *state;
  long long id = submit(f->srv.url, "nap");
  int fd = send_wait(f->srv.url, id, "60000");
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  char st[16];
  double t0 = harness_now();
  assert_int_equal(get_wait(f->srv.url, id, "60000", st, NULL), 200);
  assert_string_equal(st, "running");
  if (harness_now() - t0 > 5)
    fail_msg("past the cap a job wait waited %.3f s", harness_now() - t0);
  close(fd); /* the client leaves while held */
  assert_int_equal(wait_held(f->srv.url, 0, 5), 0);
  fd = send_wait(f->srv.url, id, "60000"); /* its place is free again */
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  close(fd);
  assert_int_equal(wait_held(f->srv.url, 0, 5), 0);
}

/* Stopping the master with waits held is prompt; each gets the job. */
static void test_stop_with_waits(void **state) {
  fixture *f = *state;
  long long id = submit(f->srv.url, "nap");
  int fds[3];
  for (int i = 0; i < 3; i++)
    fds[i] = send_wait(f->srv.url, id, "60000");
  assert_int_equal(wait_held(f->srv.url, 3, 10), 0);
  double t0 = harness_now();
  kill(f->srv.pid, SIGTERM);
  int status = harness_wait(f->srv.pid, 20);
  double took = harness_now() - t0;
  f->srv.pid = 0;
  assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (took > 5)
    fail_msg("the master took %.3f s to stop with 3 job waits held", took);
  for (int i = 0; i < 3; i++) {
    char st[16];
    assert_int_equal(read_answer(fds[i], 1, st), 200);
    assert_string_equal(st, "running");
    close(fds[i]);
  }
}

/* `cairn wait` holds one request per wait: it exits 0 once a worker
 * started later has done the job, having asked the job's state once. */
static void test_cli_wait(void **state) {
  fixture *f = *state;
  long long id = submit(f->srv.url, "nap");
  char bin[4096], jid[32];
  harness_bin(bin, sizeof bin, "cairn");
  snprintf(jid, sizeof jid, "%lld", id);
  const char *av[] = {bin, "wait", jid, "--server", f->srv.url, "--token", ADMIN, NULL};
  pid_t cli = harness_spawn(av, NULL);
  assert_int_equal(wait_held(f->srv.url, 1, 10), 0);
  sleep(1); /* a polling client would have asked several times by now */
  assert_int_equal(metric(f->srv.url, JOB_ROUTE), 0);
  spawn_worker(f, "nap=/bin/true");
  int st = harness_wait(cli, 30);
  assert_true(st != -1 && WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(metric(f->srv.url, JOB_ROUTE), 1);
  /* --timeout ends it with 2 while the job runs */
  long long other = submit(f->srv.url, "none");
  snprintf(jid, sizeof jid, "%lld", other);
  const char *av2[] = {bin, "wait", jid, "--timeout", "1", "--server", f->srv.url,
                       "--token", ADMIN, NULL};
  double t0 = harness_now();
  cli = harness_spawn(av2, NULL);
  st = harness_wait(cli, 30);
  assert_true(st != -1 && WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 2);
  double took = harness_now() - t0;
  if (took < 0.9 || took > 5)
    fail_msg("cairn wait --timeout 1 took %.3f s", took);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_wait_answered_when_done, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_wait_follows_result, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_cancel_and_at_once, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_wait_timeout_and_bounds, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_cap_and_hang_up, setup_cap1, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_stop_with_waits, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_cli_wait, server_fixture_setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
