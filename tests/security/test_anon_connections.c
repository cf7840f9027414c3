/* test_anon_connections.c — many addresses trickling headers against a real
 * cairn-server with its default limits: 70 addresses of 127.0.1.0/24 open
 * 60 connections each (4,200, more than the 4,096 in all, each under the
 * per-address cap of 64), send a partial request header and then one more
 * byte a second, and open again each connection the master closes. Meanwhile
 * a registered volunteer's heartbeat, an admin request (GET /v1/jobs) and
 * GET /healthz from 127.0.0.1 must each be answered within 2 s: connections
 * without a token are capped in all (cfg.anonymous_connections, 3,072), the
 * oldest closed to make room (docs/security.md, Limits; server/conn/conns.h).
 * Without that cap the trickling connections hold all 4,096 and the three
 * requests wait in the listen queue until their 5 s timeout.
 * Bounded: the attack runs for at most ATTACK_SECONDS, then stops and
 * closes its sockets; every request has a 5 s timeout. Loopback only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>

#include "common/limits.h"
#include "tests/support/server_fixture.h"
#include "tests/security/rawconn.h"
#include "worker/transport.h"

#define ADDRS 70
#define PER_ADDR 60
#define ATTACK (ADDRS * PER_ADDR)
#define ROUNDS 5
#define TIMEOUT_SECONDS 5
#define ATTACK_SECONDS 40.0

typedef server_fixture fixture;

/* The attacker: its sockets and what each has sent. */
typedef struct attack {
  int port;
  int fd[ATTACK];
  int state[ATTACK];   /* 0: connecting; 1: header begun, trickling */
  atomic_int stop;
  atomic_int filled;   /* the first pass opened all ATTACK */
  atomic_long closed;  /* closed by the master and opened again */
} attack;

static const char HEAD[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Trickle: ";

static void open_one(attack *a, int i) {
  char from[32];
  snprintf(from, sizeof from, "127.0.1.%d", 1 + i / PER_ADDR);
  a->fd[i] = raw_connect(from, a->port, 1);
  a->state[i] = 0;
}

/* One pass over connection i: finish its connect and send the header's
 * start, or check it is still open and send one byte; one the master
 * closed is opened again. */
static void tend(attack *a, int i) {
  if (a->fd[i] < 0) {
    open_one(a, i);
    return;
  }
  int fd = a->fd[i];
  if (a->state[i] == 0) {
    struct pollfd pf = {.fd = fd, .events = POLLOUT};
    if (poll(&pf, 1, 0) <= 0)
      return;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (!soerr && send(fd, HEAD, strlen(HEAD), MSG_NOSIGNAL | MSG_DONTWAIT) ==
                    (ssize_t)strlen(HEAD)) {
      a->state[i] = 1;
      return;
    }
  } else {
    char b[256];
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR) &&
        send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
      return;
  }
  close(fd);
  a->closed++;
  open_one(a, i);
}

static void *attacker(void *p) {
  attack *a = p;
  for (int i = 0; i < ATTACK; i++)
    open_one(a, i);
  double t0 = harness_now();
  for (int pass = 0; !atomic_load(&a->stop) && harness_now() - t0 < ATTACK_SECONDS; pass++) {
    double start = harness_now();
    for (int i = 0; i < ATTACK; i++)
      tend(a, i);
    if (pass == 1)
      atomic_store(&a->filled, 1);
    while (!atomic_load(&a->stop) && harness_now() - start < 1.0) /* a byte a second */
      usleep(20000);
  }
  for (int i = 0; i < ATTACK; i++)
    if (a->fd[i] >= 0)
      close(a->fd[i]);
  return NULL;
}

/* One request from 127.0.0.1 with a TIMEOUT_SECONDS timeout (the client of
 * harness_http); its status (0: no answer) and its time in *secs. */
static long timed(const char *url, const char *method, const char *path, const char *token,
                  const char *body, double *secs) {
  cairn__http *h = cairn__http_create(url);
  if (token)
    cairn__http_set_token(h, token);
  cairn__http_set_timeout(h, TIMEOUT_SECONDS);
  cairn__http_response r;
  cairn_error err = {0};
  double t0 = harness_now();
  long st = 0;
  if (cairn__http_request(h, method, path, body ? "application/json" : NULL, body,
                         body ? strlen(body) : 0, 1u << 20, &r, &err) == CAIRN_OK)
    st = r.status;
  *secs = harness_now() - t0;
  cairn__buf_free(&r.body);
  cairn__http_delete(h);
  return st;
}

static void test_trickling_addresses(void **state) {
  fixture *f = *state;
  static attack a; /* 33 KiB of sockets and states */
  memset(&a, 0, sizeof a);
  a.port = f->port;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, attacker, &a), 0);
  while (!atomic_load(&a.filled))
    usleep(50000);
  sleep(3); /* the trickle goes on; the master has accepted what it will */
  double worst[3] = {0, 0, 0}, sum[3] = {0, 0, 0};
  long bad[3] = {0, 0, 0};
  for (int r = 0; r < ROUNDS; r++) {
    double s;
    long st = timed(f->srv.url, "GET", "/healthz", NULL, NULL, &s);
    bad[0] += st != 200;
    worst[0] = s > worst[0] ? s : worst[0];
    sum[0] += s;
    st = timed(f->srv.url, "POST", "/v1/heartbeat", f->vol, "{}", &s);
    bad[1] += st != 200;
    worst[1] = s > worst[1] ? s : worst[1];
    sum[1] += s;
    st = timed(f->srv.url, "GET", "/v1/jobs", HARNESS_ADMIN_TOKEN, NULL, &s);
    bad[2] += st != 200;
    worst[2] = s > worst[2] ? s : worst[2];
    sum[2] += s;
    usleep(500000);
  }
  const char *names[3] = {"GET /healthz", "POST /v1/heartbeat (volunteer)",
                          "GET /v1/jobs (admin)"};
  printf("anon connections: %d connections from %d addresses trickling headers, "
         "%ld closed by the master so far and opened again\n", ATTACK, ADDRS, (long)a.closed);
  for (int k = 0; k < 3; k++)
    printf("anon connections: %s: mean %.1f ms, worst %.1f ms, %ld of %d not 200 within %d s\n",
           names[k], sum[k] / ROUNDS * 1e3, worst[k] * 1e3, bad[k], ROUNDS, TIMEOUT_SECONDS);
  int ok = 1;
  for (int k = 0; k < 3; k++)
    ok &= bad[k] == 0 && worst[k] < 2.0;
  long long anon = -1, evicted = -1;
  if (ok) { /* the master kept the anonymous connections within their cap,
             * closing the oldest to make room (read while the attack goes on) */
    anon = harness_metric(f->srv.url, "cairn_anonymous_connections ");
    evicted = harness_metric(f->srv.url, "cairn_anonymous_evicted_total ");
    printf("anon connections: the master: %lld anonymous connections open (cap %u), %lld "
           "closed to make room\n", anon, CAIRN_DEFAULT_ANON_CONNS, evicted);
  }
  atomic_store(&a.stop, 1);
  pthread_join(th, NULL);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(bad[k], 0);
    assert_true(worst[k] < 2.0);
  }
  assert_true(evicted > 0);
  assert_true(anon >= 0 && anon <= (long long)CAIRN_DEFAULT_ANON_CONNS);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  /* the attack's sockets here, and the master's (it inherits the limit) */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < ATTACK + 512) {
    printf("anon connections: skipped, the fd limit (%llu) is below %d\n",
           (unsigned long long)rl.rlim_cur, ATTACK + 512);
    return 77;
  }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_trickling_addresses, server_fixture_setup_with_volunteer,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
