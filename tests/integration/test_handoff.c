/* test_handoff.c — a new job's task handed straight to a held work request
 * in the submission's own commit (server/core/handoff.c, docs/protocol.md
 * "Waiting for work"), against a real cairn-server over loopback:
 *   - a held one-task request gets the task (cairn_handoffs_total counts
 *     it); the master is then killed with SIGKILL and started again on the
 *     same database: the handed lease is still there (its result is
 *     accepted, the audit names its volunteer) and the volunteer's next
 *     allocation takes the next t, so what the offer acknowledged was
 *     durable before it left;
 *   - a held request that names its apps is woken as before and asks the
 *     core itself (no handoff), and still gets the task. */
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
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

/* Reads the answer on fd (within 10 s, until its body is complete) and
 * returns its status; *body gets its JSON body (or NULL). */
static int read_answer(int fd, json_t **body) {
  char buf[65536];
  size_t len = 0;
  *body = NULL;
  while (len < sizeof buf - 1) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10000) <= 0)
      break;
    ssize_t k = read(fd, buf + len, sizeof buf - 1 - len);
    if (k <= 0)
      break;
    len += (size_t)k;
    buf[len] = '\0';
    const char *end = strstr(buf, "\r\n\r\n"), *cl = strstr(buf, "Content-Length: ");
    if (end && (!cl || cl > end || strlen(end + 4) >= (size_t)atol(cl + 16)))
      break;
  }
  buf[len] = '\0';
  const char *end = strstr(buf, "\r\n\r\n");
  if (end && end[4])
    *body = json_loads(end + 4, 0, NULL);
  return len >= 12 ? atoi(buf + 9) : 0; /* "HTTP/1.1 200" */
}

static long long submit_one(const char *url, const char *app) {
  char job[128];
  snprintf(job, sizeof job, "{\"app\": \"%s\", \"tasks\": [{\"id\": \"t\"}]}", app);
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL,
                                NULL), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

static const char *job_state(const char *url, long long job) {
  static char state[32];
  char path[64];
  json_t *j = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &j, NULL, NULL), 200);
  snprintf(state, sizeof state, "%s", json_string_value(json_object_get(j, "state")));
  json_decref(j);
  return state;
}

static long put_result(const char *url, const char *token, long long idx) {
  char path[64];
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  json_t *b = json_pack("{s:i, s:s}", "exit_status", 0, "output", "ok\n");
  long st = harness_http_json(url, "PUT", path, token, b, NULL);
  json_decref(b);
  return st;
}

/* The audit's t of index idx, after checking it names volunteer vol. */
static long long audit_t(const char *url, long long idx, long long vol) {
  char path[64];
  json_t *who = NULL;
  snprintf(path, sizeof path, "/v1/audit/index/%lld", idx);
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &who, NULL, NULL), 200);
  assert_true(json_is_true(json_object_get(who, "allocated")));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(who, "volunteer"), "id")),
                   vol);
  long long t = (long long)json_integer_value(json_object_get(who, "t"));
  json_decref(who);
  return t;
}

/* A held request gets the task by handoff; a kill -9 after its answer
 * loses nothing the answer acknowledged. */
static void test_handoff_survives_kill(void **state) {
  fixture *f = *state;
  char token[65];
  long long vol = harness_register(f->srv.url, "v", "noop", token);
  assert_true(vol > 0);
  int fd = harness_send_work(f->srv.url, token, "{\"wait\": 20000}");
  assert_int_equal(harness_wait_metric(f->srv.url, "cairn_work_held ", 1, 10), 0);
  long long job = submit_one(f->srv.url, "noop");
  json_t *offer = NULL;
  assert_int_equal(read_answer(fd, &offer), 200);
  close(fd);
  long long idx = (long long)json_integer_value(json_object_get(offer, "index"));
  json_decref(offer);
  assert_true(idx > 0);
  assert_int_equal(harness_metric(f->srv.url, "cairn_handoffs_total "), 1);
  assert_int_equal(harness_metric(f->srv.url, "cairn_allocations_total "), 1);

  server_fixture_stop(f, SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  assert_string_equal(job_state(f->srv.url, job), "running");
  assert_int_equal(audit_t(f->srv.url, idx, vol), 1);
  assert_int_equal(put_result(f->srv.url, token, idx), 200); /* its lease survived */
  assert_string_equal(job_state(f->srv.url, job), "done");

  /* the next allocation is t = 2: t = 1 was durable, never handed again */
  long long job2 = submit_one(f->srv.url, "noop");
  json_t *w = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", token, "{}", 2, &w, NULL, NULL),
                   200);
  long long idx2 = (long long)json_integer_value(json_object_get(w, "index"));
  json_decref(w);
  assert_int_equal(audit_t(f->srv.url, idx2, vol), 2);
  assert_int_equal(put_result(f->srv.url, token, idx2), 200);
  assert_string_equal(job_state(f->srv.url, job2), "done");
}

/* A held request that names its apps is woken and asks the core itself. */
static void test_named_apps_woken_not_handed(void **state) {
  fixture *f = *state;
  char token[65];
  assert_true(harness_register(f->srv.url, "v", "noop", token) > 0);
  int fd = harness_send_work(f->srv.url, token, "{\"wait\": 20000, \"apps\": [\"noop\"]}");
  assert_int_equal(harness_wait_metric(f->srv.url, "cairn_work_held ", 1, 10), 0);
  submit_one(f->srv.url, "noop");
  json_t *offer = NULL;
  assert_int_equal(read_answer(fd, &offer), 200);
  close(fd);
  assert_true(json_integer_value(json_object_get(offer, "index")) > 0);
  json_decref(offer);
  assert_int_equal(harness_metric(f->srv.url, "cairn_handoffs_total "), 0);
  assert_int_equal(harness_metric(f->srv.url, "cairn_allocations_total "), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_handoff_survives_kill, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_named_apps_woken_not_handed, server_fixture_setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
