/* test_slow_lane.c — a large submission runs on the master's slow lane
 * (server/conn/slow.h), not on an HTTP thread: a real cairn-server on loopback
 * with one HTTP thread is sent a job of 100,000 tasks (about 1.9 MiB, past
 * CAIRN__SLOW_BODY); while the master builds it, that one thread still
 * answers GET /metrics, which shows the request on the lane
 * (cairn_slow_requests 1). The job is then whole: 201, and 100,000 tasks
 * eligible. Its deletion with its rows runs on the lane too. A small
 * submission is answered as before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

enum { NTASKS = 100000 };

typedef struct submit_call {
  const char *url;
  const char *method, *path;
  char *body;
  long status;
  json_t *resp;
  int done; /* set (atomically) once the answer came */
} submit_call;

static void *submit_thread(void *p) {
  submit_call *s = p;
  s->status = harness_http(s->url, s->method, s->path, ADMIN, s->body,
                           s->body ? strlen(s->body) : 0, &s->resp, NULL, NULL);
  __atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

/* {"app": "noop", "policy": "fifo", "tasks": [{"id": "t0"}, ...]}, n tasks. */
static char *job_text(int n) {
  size_t cap = 64 + (size_t)n * 24, len = 0;
  char *b = malloc(cap);
  assert_non_null(b);
  len += (size_t)snprintf(b, cap, "{\"app\": \"noop\", \"policy\": \"fifo\", \"tasks\": [");
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(b + len, cap - len, "%s{\"id\": \"task-%d\"}", i ? ", " : "", i);
  snprintf(b + len, cap - len, "]}");
  return b;
}

/* Runs call s in a thread while polling GET /metrics (which the one HTTP
 * thread must answer meanwhile); 1 when the lane was seen running it
 * before its answer came. Joins the thread. */
static int on_lane_meanwhile(submit_call *s, int *polls) {
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, submit_thread, s), 0);
  int seen = 0;
  while (!__atomic_load_n(&s->done, __ATOMIC_SEQ_CST) && !seen) {
    long long busy = harness_metric(s->url, "cairn_slow_requests ");
    assert_true(busy >= 0); /* answered by the one HTTP thread */
    ++*polls;
    seen = busy == 1 && !__atomic_load_n(&s->done, __ATOMIC_SEQ_CST);
  }
  pthread_join(th, NULL);
  return seen;
}

static void test_large_submission_leaves_http_thread_free(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  static const char *const extra[] = {"--threads", "1", NULL};
  assert_int_equal(server_fixture_restart(&sf, extra), 0);

  submit_call s = {sf.srv.url, "POST", "/v1/jobs", job_text(NTASKS), 0, NULL, 0};
  assert_true(strlen(s.body) > 256u * 1024u);
  int polls = 0, seen = on_lane_meanwhile(&s, &polls);
  fprintf(stderr, "%d tasks (%zu bytes): /metrics answered %d times, the lane seen busy: %d\n",
          NTASKS, strlen(s.body), polls, seen);
  assert_true(seen);
  assert_int_equal(s.status, 201);
  long long id = (long long)json_integer_value(json_object_get(s.resp, "id"));
  json_decref(s.resp);
  free(s.body);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  json_t *j = NULL;
  assert_int_equal(harness_http(sf.srv.url, "GET", path, ADMIN, NULL, 0, &j, NULL, NULL), 200);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "counts"), "eligible")),
                   NTASKS);
  json_decref(j);
  assert_int_equal(harness_metric(sf.srv.url, "cairn_slow_requests "), 0);

  /* its deletion (with its rows) runs on the lane too */
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", id);
  assert_int_equal(harness_http(sf.srv.url, "POST", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  json_decref(r);
  char del[80];
  snprintf(del, sizeof del, "/v1/jobs/%lld?purge=1", id);
  submit_call d = {sf.srv.url, "DELETE", del, NULL, 0, NULL, 0};
  polls = 0;
  seen = on_lane_meanwhile(&d, &polls);
  fprintf(stderr, "its deletion: /metrics answered %d times, the lane seen busy: %d\n", polls,
          seen);
  assert_true(seen);
  assert_int_equal(d.status, 200);
  assert_int_equal(json_integer_value(json_object_get(d.resp, "tasks")), NTASKS);
  json_decref(d.resp);

  /* a small one: answered on the HTTP thread, as before */
  char *small = job_text(10);
  assert_int_equal(harness_http(sf.srv.url, "POST", "/v1/jobs", ADMIN, small, strlen(small), &r,
                                NULL, NULL), 201);
  json_decref(r);
  free(small);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_large_submission_leaves_http_thread_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
