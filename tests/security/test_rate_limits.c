/* test_rate_limits.c — one client address may make at most
 * anonymous_per_minute (default 60) registrations and failed
 * authentications at once, then that many a minute: past it, 429 with
 * Retry-After. Other addresses are not affected; authenticated volunteers
 * are not counted. Real cairn-server; clients bound to 127.0.0.6 and
 * 127.0.0.7 (loopback), the harness on 127.0.0.1. */
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

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_registrations_limited_per_address, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_failed_authentications_limited, server_fixture_setup,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
