/* test_rate_limits.c — one client address may make at most
 * anonymous_per_minute (default 60) registrations and failed
 * authentications at once, then that many a minute: past it, 429 with
 * Retry-After. Other addresses are not affected; authenticated volunteers
 * are not counted. cairn-server --address-rate and --address-connections
 * set the per-address limits (-1 lifts them: a project whose volunteers
 * share one address). Real cairn-server; clients bound to addresses of
 * 127.0.0.0/8, the harness on 127.0.0.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/limits.h"
#include "tests/security/rawconn.h"
#include "tests/support/server_fixture.h"

/* One request from address from; its status, and Retry-After in *retry. */
static int request(const server_fixture *f, const char *from, const char *head,
                   const char *body, int *retry) {
  char req[1024], resp[8192];
  snprintf(req, sizeof req, "%sHost: 127.0.0.1\r\nContent-Length: %zu\r\n"
           "Connection: close\r\n\r\n%s", head, strlen(body), body);
  int fd = raw_connect(from, f->port, 0);
  assert_true(fd >= 0);
  assert_int_equal(raw_send(fd, req, strlen(req), 5), strlen(req));
  assert_true(raw_recv(fd, resp, sizeof resp, 5) > 0);
  close(fd);
  const char *ra = strcasestr(resp, "\r\nRetry-After: ");
  *retry = ra ? atoi(ra + 15) : -1;
  return raw_status(resp);
}

static int registration(const server_fixture *f, const char *from, int *retry) {
  return request(f, from, "POST /v1/volunteers HTTP/1.1\r\nContent-Type: application/json\r\n",
                 "{\"name\": \"r\", \"apps\": [\"sum\"]}", retry);
}

static void test_registrations_limited_per_address(void **state) {
  server_fixture *f = *state;
  int retry = 0, n = 0, st;
  while ((st = registration(f, "127.0.0.6", &retry)) == 201 && n < 1000)
    n++;
  fprintf(stderr, "127.0.0.6: %d registrations, then %d (Retry-After %d)\n", n, st, retry);
  assert_int_equal(n, CAIRN_DEFAULT_ANON_PER_MINUTE);
  assert_int_equal(st, 429);
  assert_true(retry >= 1 && retry <= 2);
  int wait = retry;
  /* another address registers as usual; a registered volunteer works on */
  assert_int_equal(registration(f, "127.0.0.7", &retry), 201);
  char tok[65];
  assert_true(harness_register(f->srv.url, "ok", "sum", tok) > 0);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/heartbeat", tok, "{}", 2, NULL, NULL,
                                NULL), 200);
  /* the limited address gets a token back after about a second */
  sleep((unsigned)wait);
  assert_int_equal(registration(f, "127.0.0.6", &retry), 201);
}

static void test_failed_authentications_limited(void **state) {
  server_fixture *f = *state;
  const char *head = "POST /v1/heartbeat HTTP/1.1\r\nAuthorization: Bearer "
                     "0000000000000000000000000000000000000000000000000000000000000000\r\n";
  int retry = 0, n = 0, st;
  while ((st = request(f, "127.0.0.8", head, "{}", &retry)) == 401 && n < 1000)
    n++;
  fprintf(stderr, "127.0.0.8: %d wrong tokens answered 401, then %d\n", n, st);
  assert_int_equal(n, CAIRN_DEFAULT_ANON_PER_MINUTE);
  assert_int_equal(st, 429);
  assert_true(retry >= 1);
}

/* server_fixture's master with the per-address flags tight or lifted. */
static int setup_tight(void **state) {
  const char *extra[] = {"--address-rate", "3", "--address-connections", "2", NULL};
  return server_fixture_start(state, extra);
}

static int setup_lifted(void **state) {
  const char *extra[] = {"--address-rate", "-1", "--address-connections", "-1", NULL};
  return server_fixture_start(state, extra);
}

/* An idle connection from address from that the server keeps open. */
static int idle_connection(const server_fixture *f, const char *from) {
  int fd = raw_connect(from, f->port, 0);
  assert_true(fd >= 0);
  return fd;
}

static void test_address_flags_tighten(void **state) {
  server_fixture *f = *state;
  int retry = 0;
  for (int i = 0; i < 3; i++)
    assert_int_equal(registration(f, "127.0.0.10", &retry), 201);
  assert_int_equal(registration(f, "127.0.0.10", &retry), 429);
  assert_true(retry >= 1);
  /* two connections held open from one address: a third is closed unanswered */
  int a = idle_connection(f, "127.0.0.11"), b = idle_connection(f, "127.0.0.11");
  usleep(200 * 1000);
  int c = idle_connection(f, "127.0.0.11");
  assert_true(raw_closed(c, 5));
  close(c);
  close(a);
  close(b);
  assert_int_equal(registration(f, "127.0.0.12", &retry), 201); /* others are not limited */
}

static void test_address_flags_lift(void **state) {
  server_fixture *f = *state;
  int retry = 0, n = 0;
  while (n < 2 * CAIRN_DEFAULT_ANON_PER_MINUTE && registration(f, "127.0.0.13", &retry) == 201)
    n++;
  assert_int_equal(n, 2 * CAIRN_DEFAULT_ANON_PER_MINUTE);
  /* more connections from one address than the default allows, each answered */
  enum { CONNS = CAIRN_DEFAULT_PER_IP_CONNS + 16 };
  int fds[CONNS];
  for (int i = 0; i < CONNS; i++)
    fds[i] = idle_connection(f, "127.0.0.14");
  const char *req = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  for (int i = 0; i < CONNS; i++) {
    char resp[4096];
    assert_int_equal(raw_send(fds[i], req, strlen(req), 5), strlen(req));
    assert_true(raw_recv(fds[i], resp, sizeof resp, 5) > 0);
    assert_int_equal(raw_status(resp), 200);
  }
  for (int i = 0; i < CONNS; i++)
    close(fds[i]);
}

/* A flag value out of range: exit status 2 and a line naming the flag. */
static void test_address_flags_checked(void **state) {
  (void)state;
  char bin[4096];
  harness_bin(bin, sizeof bin, "cairn-server");
  const char *bad[][2] = {{"--address-rate", "0"}, {"--address-rate", "-2"},
                          {"--address-connections", "0"}, {"--address-connections", "x"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "'%s' %s %s 2>&1 | grep -q -- '%s'", bin, bad[i][0], bad[i][1],
             bad[i][0]);
    assert_int_equal(system(cmd), 0);
    const char *argv[] = {bin, bad[i][0], bad[i][1], NULL};
    int st = harness_run(argv, NULL);
    assert_int_equal(st, 2);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_registrations_limited_per_address, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_failed_authentications_limited, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_address_flags_tighten, setup_tight,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_address_flags_lift, setup_lifted,
                                    server_fixture_teardown),
    cmocka_unit_test(test_address_flags_checked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
