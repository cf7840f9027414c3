/* test_slow_clients.c — slow clients against a real cairn-server: thousands
 * of half-sent requests from 127.0.0.2 do not keep /healthz from answering
 * 127.0.0.1 (the per-address connection cap), and a client trickling a
 * body one byte a second loses its connection at the request deadline.
 * Bounded: the attack is scaled to the fd limit and closed at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/resource.h>

#include "common/limits.h"
#include "tests/support/server_fixture.h"
#include "tests/security/rawconn.h"

#define WANT_CONNS 4200
#define SAMPLES 20

typedef server_fixture fixture;

/* Raises the fd limit to the hard limit; returns how many connections the
 * attack may open (WANT_CONNS at most, 256 fds kept for the rest). */
static int attack_size(void) {
  struct rlimit rl;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  getrlimit(RLIMIT_NOFILE, &rl);
  long n = (long)rl.rlim_cur - 256;
  return n > WANT_CONNS ? WANT_CONNS : n < 0 ? 0 : (int)n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void test_half_sent_requests(void **state) {
  fixture *f = *state;
  int n = attack_size();
  assert_true(n >= 256);
  int *fds = calloc((size_t)n, sizeof *fds);
  assert_non_null(fds);
  const char *half = "POST /v1/volunteers HTTP/1.1\r\nHost: x\r\nContent-Le";
  double lat[SAMPLES];
  int opened = 0;
  for (int s = 0; s < SAMPLES; s++) {
    /* open the next share of the attack, then time one /healthz */
    for (int target = n * (s + 1) / SAMPLES; opened < target; opened++) {
      fds[opened] = raw_connect("127.0.0.2", f->port, 1);
      assert_true(fds[opened] >= 0);
      ssize_t w = send(fds[opened], half, strlen(half), MSG_NOSIGNAL | MSG_DONTWAIT);
      (void)w; /* a connect still in progress sends nothing: half-sent all the same */
    }
    double t0 = harness_now();
    long st = harness_http(f->srv.url, "GET", "/healthz", NULL, NULL, 0, NULL, NULL, NULL);
    lat[s] = harness_now() - t0;
    assert_int_equal(st, 200);
  }
  qsort(lat, SAMPLES, sizeof lat[0], cmp_double);
  printf("slow clients: %d half-sent connections from 127.0.0.2; /healthz from 127.0.0.1: "
         "median %.1f ms, worst %.1f ms\n", opened, lat[SAMPLES / 2] * 1e3,
         lat[SAMPLES - 1] * 1e3);
  for (int i = 0; i < opened; i++)
    close(fds[i]);
  free(fds);
  assert_true(lat[SAMPLES - 1] < 1.0);
}

/* A body sent one byte a second: the connection is closed at the request
 * deadline, though it is never idle for the idle timeout. */
static void test_trickled_body_hits_deadline(void **state) {
  fixture *f = *state;
  int fd = raw_connect("127.0.0.3", f->port, 0);
  assert_true(fd >= 0);
  const char *head = "POST /v1/volunteers HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
  assert_int_equal(raw_send(fd, head, strlen(head), 5), strlen(head));
  double t0 = harness_now(), limit = CAIRN_DEFAULT_REQUEST_SECONDS + 10;
  int closed = 0;
  while (!closed && harness_now() - t0 < limit) {
    if (raw_send(fd, " ", 1, 1) != 1)
      closed = 1;
    else
      closed = raw_closed(fd, 1.0);
  }
  double held = harness_now() - t0;
  close(fd);
  printf("slow clients: a body trickled at 1 byte/s was cut after %.1f s (deadline %u s)\n",
         held, CAIRN_DEFAULT_REQUEST_SECONDS);
  assert_true(closed);
  assert_true(held >= CAIRN_DEFAULT_REQUEST_SECONDS - 1);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_half_sent_requests, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_trickled_body_hits_deadline, server_fixture_setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
