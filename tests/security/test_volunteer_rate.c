/* test_volunteer_rate.c — a registered volunteer may make at most
 * --volunteer-rate requests a minute (after a burst of ten seconds' worth)
 * on the volunteer routes; past it 429 "rate_limited" with Retry-After and
 * Cairn-Retry-After-Ms, admin requests untouched. A real cairn-worker with
 * 8 slots and instant tasks, far above the limit, honours the waits: over
 * the window after its first 429 its requests stay within rate × window +
 * burst, its tasks complete, and /metrics shows the 429s. Prints the rate
 * the master saw. Real cairn-server and cairn-worker on loopback. */
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

#include "tests/security/rawconn.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define PER_MINUTE 240 /* 4 a second */
#define BURST (PER_MINUTE / 6)
#define TASKS 90

typedef server_fixture fixture;

static int setup(void **state) {
  char rate[16];
  snprintf(rate, sizeof rate, "%d", PER_MINUTE);
  const char *extra[] = {"--volunteer-rate", rate, NULL};
  return server_fixture_start(state, extra);
}

/* Requests to the volunteer routes so far by the metrics: all, and 429s. */
static void volunteer_requests(const char *url, long long *all, long long *limited) {
  static const char *const routes[] = {"/v1/work", "/v1/results", "/v1/heartbeat", "/v1/files",
                                       "/v1/tasks/output", NULL};
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len), 200);
  *all = *limited = 0;
  for (char *line = strtok(raw, "\n"); line; line = strtok(NULL, "\n")) {
    if (strncmp(line, "cairn_http_requests_total{route=\"", 33) != 0)
      continue;
    const char *r = line + 33;
    for (int i = 0; routes[i]; i++) {
      size_t n = strlen(routes[i]);
      if (strncmp(r, routes[i], n) == 0 && r[n] == '"') {
        long long v = atoll(strrchr(line, ' ') + 1);
        *all += v;
        if (strstr(line, "status=\"429\""))
          *limited += v;
      }
    }
  }
  free(raw);
}

/* A raw request with volunteer token tok: its status; the Retry-After
 * headers in *retry (s) and *retry_ms, -1 when absent; body in out. */
static int raw_request(const fixture *f, const char *tok, const char *line, int *retry,
                       int *retry_ms, char *out, size_t cap) {
  char req[1024];
  int port = atoi(strrchr(f->srv.url, ':') + 1);
  snprintf(req, sizeof req, "%sHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
           "Content-Length: 2\r\nConnection: close\r\n\r\n{}", line, tok);
  int fd = raw_connect("127.0.0.1", port, 0);
  assert_true(fd >= 0);
  assert_int_equal(raw_send(fd, req, strlen(req), 5), strlen(req));
  ssize_t n = raw_recv(fd, out, cap - 1, 5);
  close(fd);
  assert_true(n > 0);
  out[n] = '\0';
  const char *ra = strcasestr(out, "\r\nRetry-After: ");
  const char *ms = strcasestr(out, "\r\nCairn-Retry-After-Ms: ");
  *retry = ra ? atoi(ra + 15) : -1;
  *retry_ms = ms ? atoi(ms + 24) : -1;
  return raw_status(out);
}

static void test_over_the_rate_is_429_rate_limited(void **state) {
  fixture *f = *state;
  char tok[65], resp[8192];
  assert_true(harness_register(f->srv.url, "greedy", "sh", tok) > 0);
  int retry = -1, retry_ms = -1, st = 0, n = 0;
  double t0 = harness_now();
  while ((st = raw_request(f, tok, "POST /v1/heartbeat HTTP/1.1\r\n", &retry, &retry_ms, resp,
                           sizeof resp)) == 200 && n < 1000)
    n++;
  double spent = harness_now() - t0;
  fprintf(stderr, "volunteer: %d heartbeats in %.2f s, then %d (Retry-After %d, "
          "Cairn-Retry-After-Ms %d)\n", n, spent, st, retry, retry_ms);
  assert_int_equal(st, 429);
  /* the burst, and the tokens that came back meanwhile */
  assert_true(n >= BURST && n <= BURST + 1 + (int)(spent * PER_MINUTE / 60.0));
  assert_non_null(strstr(resp, "\"code\":\"rate_limited\""));
  assert_true(retry >= 1 && retry_ms >= 1 && retry_ms <= 1000 * 60 / PER_MINUTE);
  /* every volunteer route counts: a download is refused the same way */
  assert_int_equal(raw_request(f, tok, "GET /v1/tasks/1/output HTTP/1.1\r\n", &retry, &retry_ms,
                               resp, sizeof resp), 429);
  /* the admin is not limited, nor is another volunteer */
  for (int i = 0; i < 3 * BURST; i++)
    assert_int_equal(harness_http(f->srv.url, "GET", "/v1/files/"
                                  "0000000000000000000000000000000000000000000000000000000000000000",
                                  ADMIN, NULL, 0, NULL, NULL, NULL), 404);
  char other[65];
  assert_true(harness_register(f->srv.url, "calm", "sh", other) > 0);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/heartbeat", other, "{}", 2, NULL, NULL,
                                NULL), 200);
  /* the limited volunteer gets a token back after the named wait */
  usleep((useconds_t)retry_ms * 1000 + 50000);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/heartbeat", tok, "{}", 2, NULL, NULL,
                                NULL), 200);
}

static void test_worker_honours_the_limit(void **state) {
  fixture *f = *state;
  /* TASKS instant tasks: unlimited, one worker would send hundreds a second */
  char job[TASKS * 64 + 256];
  size_t k = (size_t)snprintf(job, sizeof job, "{\"name\": \"many\", \"app\": \"sh\", \"tasks\": [");
  for (int i = 0; i < TASKS; i++)
    k += (size_t)snprintf(job + k, sizeof job - k, "%s{\"id\": \"t%d\", \"args\": [\"-c\", \":\"]}",
                          i ? ", " : "", i);
  snprintf(job + k, sizeof job - k, "]}");
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL,
                                NULL), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);

  char log[4300];
  snprintf(log, sizeof log, "%s/w.log", f->dir);
  const char *args[] = {"--app", "sh=/bin/sh", "--slots", "8", "--peer-listen", "off",
                        "--exit-when-idle", "3", "--log-level", "info", NULL};
  double t0 = harness_now();
  pid_t w = harness_worker(f->srv.url, f->dir, "w", args);
  assert_true(w > 0);

  /* sample the master's counters until the job is done */
  long long all = 0, limited = 0, all_a = -1, all_b = 0, burst_all = 0;
  double ta = 0, tb = 0, t_burst = 0;
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  int done = 0;
  while (!done && harness_now() - t0 < 120) {
    usleep(100000);
    volunteer_requests(f->srv.url, &all, &limited);
    if (limited > 0 && all_a < 0) { /* the burst is spent: the window begins */
      all_a = all;
      ta = harness_now();
      burst_all = all;
      t_burst = ta - t0;
    }
    json_t *j = NULL;
    assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &j, NULL, NULL), 200);
    done = strcmp(json_string_value(json_object_get(j, "state")), "done") == 0;
    json_decref(j);
  }
  volunteer_requests(f->srv.url, &all_b, &limited);
  tb = harness_now();
  int wst = harness_wait(w, 30);
  if (wst == -1) {
    kill(w, SIGKILL);
    waitpid(w, NULL, 0);
  }
  if (!done || wst == -1 || !WIFEXITED(wst) || WEXITSTATUS(wst) != 0) {
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "tail -n 30 '%s' >&2", log);
    if (system(cmd) != 0)
      fprintf(stderr, "(no worker log)\n");
    fail_msg("job done: %d; worker wait status %d", done, wst);
  }
  assert_true(all_a >= 0); /* the worker did go over the limit */
  double window = tb - ta, allowed = PER_MINUTE / 60.0 * window + BURST;
  long long sent = all_b - all_a;
  fprintf(stderr, "worker: burst of %lld requests in %.2f s (%.0f/s); then %lld requests in "
          "%.2f s = %.2f/s against a limit of %.2f/s (allowed %.1f with the burst of %d); "
          "429s in all: %lld; %d tasks done\n",
          burst_all, t_burst, t_burst > 0 ? burst_all / t_burst : 0.0, sent, window,
          window > 0 ? sent / window : 0.0, PER_MINUTE / 60.0, allowed, BURST, limited, TASKS);
  assert_true(limited > 0);
  assert_true((double)sent <= allowed);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_over_the_rate_is_429_rate_limited, setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_worker_honours_the_limit, setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
