/* test_held_work.c — one volunteer cannot hold every held-work slot, nor
 * take every task a wake or a handoff gives out: against a real master
 * with --max-held-work 32, a volunteer of 4 slots that parks 40 waiting
 * work requests has 4 held and the rest answered 204 at once; an honest
 * volunteer's wait is then held, not answered 204; and of a job's 2 tasks
 * and the next job's 2 tasks (each handed off at its submission), the honest volunteer
 * gets one each time. Before, the one token held all 32 slots, the honest
 * wait was answered 204 at once, and the attacker got every task. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

static int setup(void **state) {
  const char *extra[] = {"--max-held-work", "32", NULL};
  return server_fixture_start(state, extra);
}

static void submit(fixture *f, int n) {
  json_t *tasks = json_array();
  for (int i = 0; i < n; i++) {
    char id[16];
    snprintf(id, sizeof id, "t%d", i);
    json_array_append_new(tasks, json_pack("{s:s}", "id", id));
  }
  json_t *job = json_pack("{s:s, s:o}", "app", "noop", "tasks", tasks);
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/jobs", ADMIN, job, NULL), 201);
  json_decref(job);
}

static int held(fixture *f) {
  return (int)harness_metric(f->srv.url, "cairn_work_held ");
}

/* Of the n connections in fds, how many were answered 200 within timeout. */
static int got_task(int *fds, int n, double timeout) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0 && harness_read_status(fds[i], i ? 0.05 : timeout) == 200) {
      close(fds[i]);
      fds[i] = -1;
      k++;
    }
  return k;
}

static void test_held_fairly(void **state) {
  fixture *f = *state;
  char bad[65], honest[65];
  json_t *r = NULL;
  const char *reg = "{\"name\": \"parker\", \"apps\": [\"noop\"], \"slots\": 4}";
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/volunteers", NULL, reg, strlen(reg), &r,
                                NULL, NULL), 201);
  snprintf(bad, sizeof bad, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(r);
  harness_register(f->srv.url, "honest", "noop", honest);
  /* 40 waits of one token: its 4 slots' worth held, the rest answered at once */
  int fds[40], at_once = 0;
  for (int i = 0; i < 40; i++)
    assert_true((fds[i] = harness_send_work(f->srv.url, bad, "{\"wait\": 60000}")) >= 0);
  for (int i = 0; i < 40; i++)
    if (harness_read_status(fds[i], 0.3) == 204) {
      close(fds[i]);
      fds[i] = -1;
      at_once++;
    }
  fprintf(stderr, "40 waits of a 4-slot volunteer: %d held, %d answered 204 at once\n", held(f),
          at_once);
  assert_int_equal(held(f), 4);
  assert_int_equal(at_once, 36);
  /* the honest wait is held, not answered at once */
  int h = harness_send_work(f->srv.url, honest, "{\"wait\": 60000}");
  assert_true(h >= 0);
  assert_int_equal(harness_read_status(h, 0.5), 0);
  assert_int_equal(harness_wait_metric(f->srv.url, "cairn_work_held ", 5, 5), 0);
  /* a job of 2 tasks (handed off at its submission): one goes to the honest one */
  submit(f, 2);
  assert_int_equal(harness_read_status(h, 5), 200);
  close(h);
  int parker = got_task(fds, 40, 5);
  assert_int_equal(parker, 1);
  /* again, its new wait behind the parker's 3 left: still one each */
  h = harness_send_work(f->srv.url, honest, "{\"wait\": 60000}");
  assert_int_equal(harness_wait_metric(f->srv.url, "cairn_work_held ", 4, 5), 0);
  submit(f, 2);
  assert_int_equal(harness_read_status(h, 5), 200);
  close(h);
  assert_int_equal(got_task(fds, 40, 5), 1);
  for (int i = 0; i < 40; i++)
    if (fds[i] >= 0)
      close(fds[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_held_fairly, setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
