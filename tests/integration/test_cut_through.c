/* test_cut_through.c — cut-through relays (docs/protocol.md, "Cut-through
 * relays") with a real cairn-server (--broadcast-plan online) and real
 * cairn-workers on loopback, one per cluster, and a 16 MiB broadcast input.
 *
 * Chain: A's download is capped at 2 MiB/s, so it takes about 8 s; B and C
 * start once the worker before them is receiving. The master names A,
 * still receiving, as B's source and B as C's (cairn_relay_sources_total),
 * and A and B log each transfer they completed while still receiving the
 * file ("relayed … while receiving it"): B started before A had finished.
 * Every task's output is the file's digest.
 * Relay killed: A is killed with SIGKILL while it relays to B: B and C fall
 * back to the master and the job still ends done.
 * Hostile peer: a volunteer whose file server sends a wrong chunk 1 is
 * named as a worker's source; the worker drops the download at that chunk
 * (not at the end), reports "digest" and fetches the file from the master.
 * Old workers: over HTTP, a volunteer whose work body says "chunks": true
 * is named as a source (marked relay=1) while its copy is under way; one
 * whose reports do not say it never is, and store-and-forward names none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/bigjob.h"
#include "tests/support/server_fixture.h"
#include "tests/support/editdist.h"
#include "tests/support/harness.h"

#define BIG (16u * 1024 * 1024)
#define CHUNK (1u << 20)

static unsigned char *data; /* the file's bytes */

static int setup(void **state) {
  (void)state;
  e2e_init();
  signal(SIGPIPE, SIG_IGN);
  data = bigjob_data(BIG, 11);
  return data ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  free(data);
  return 0;
}

/* Starts worker NAME in cluster NAME (its own), its download capped at
 * limit KiB/s when limit is not NULL. */
static pid_t start_worker(const char *url, const char *dir, const char *name, const char *limit) {
  char cluster[16];
  snprintf(cluster, sizeof cluster, "c-%s", name);
  return bigjob_worker(url, dir, name, cluster, "3", limit);
}

static void stop_workers(pid_t *w, int n) {
  for (int i = 0; i < n; i++)
    if (w[i] > 0) {
      kill(w[i], SIGTERM);
      assert_true(harness_wait(w[i], 60) >= 0);
      w[i] = 0;
    }
}

static void start_master(server_fixture *f) {
  const char *extra[] = {"--broadcast-plan", "online", "--log-level", "info", NULL};
  assert_int_equal(server_fixture_open(f, extra, 1), 0);
}

/* The chunk digests the master serves match the file's chunks. */
static void check_chunk_list(const char *url, const char *sha) {
  char path[128];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/files/%s/chunks", sha);
  assert_int_equal(harness_http(url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL, NULL),
                   200);
  assert_int_equal(json_integer_value(json_object_get(r, "chunk_size")), CHUNK);
  assert_int_equal(json_integer_value(json_object_get(r, "size")), BIG);
  json_t *a = json_object_get(r, "chunks");
  assert_int_equal(json_array_size(a), BIG / CHUNK);
  for (size_t i = 0; i < BIG / CHUNK; i++) {
    char hex[65];
    cairn__sha256_hex(data + i * CHUNK, CHUNK, hex);
    assert_string_equal(json_string_value(json_array_get(a, i)), hex);
  }
  json_decref(r);
  /* without credentials: refused; an unknown file: 404 */
  assert_int_equal(harness_http(url, "GET", path, NULL, NULL, 0, NULL, NULL, NULL), 401);
  snprintf(path, sizeof path, "/v1/files/%064d/chunks", 0);
  assert_int_equal(harness_http(url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL),
                   404);
}

static void test_chain(void **state) {
  (void)state;
  char sha[65], line[160];
  server_fixture sf;
  start_master(&sf);
  const char *dir = sf.dir;
  bigjob_write(dir, "cut", data, BIG, 3, sha);
  long long job = e2e_submit(sf.srv.url, dir);
  check_chunk_list(sf.srv.url, sha);
  pid_t w[3] = {0};
  /* A receives from the master at 2 MiB/s; B once A receives, C once B does */
  w[0] = start_worker(sf.srv.url, dir, "A", "2048");
  assert_true(bigjob_await_log(dir, "A", "chunk digests", 60));
  w[1] = start_worker(sf.srv.url, dir, "B", NULL);
  assert_true(bigjob_await_log(dir, "B", "chunk digests", 60));
  w[2] = start_worker(sf.srv.url, dir, "C", NULL);
  const char *names[] = {"A", "B", "C"};
  for (int i = 0; i < 3; i++)
    assert_true(bigjob_await_cached(dir, names[i], sha, 120));
  /* A and B each sent the file on while they were still receiving it */
  snprintf(line, sizeof line, "peer: relayed %s (%u bytes) while receiving it", sha, BIG);
  assert_true(bigjob_await_log(dir, "A", line, 20));
  assert_true(bigjob_await_log(dir, "B", line, 20));
  assert_true(harness_metric(sf.srv.url, "cairn_relay_sources_total ") >= 2);
  bigjob_release(dir);
  assert_string_equal(e2e_wait(sf.srv.url, job, 120), "done");
  bigjob_check_outputs(sf.srv.url, job, 3, sha);
  /* the master sent one copy: the rest came through the relays */
  assert_int_equal(harness_metric(sf.srv.url, "cairn_peer_failures_total{"), 0);
  stop_workers(w, 3);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static void test_relay_killed(void **state) {
  (void)state;
  char sha[65], line[160];
  server_fixture sf;
  start_master(&sf);
  const char *dir = sf.dir;
  bigjob_write(dir, "cut", data, BIG, 3, sha);
  long long job = e2e_submit(sf.srv.url, dir);
  pid_t w[3] = {0};
  w[0] = start_worker(sf.srv.url, dir, "A", "2048");
  assert_true(bigjob_await_log(dir, "A", "chunk digests", 60));
  w[1] = start_worker(sf.srv.url, dir, "B", NULL);
  snprintf(line, sizeof line, "peer: sending %s (%u bytes) while receiving it", sha, BIG);
  assert_true(bigjob_await_log(dir, "A", line, 60));
  w[2] = start_worker(sf.srv.url, dir, "C", NULL);
  assert_true(bigjob_await_log(dir, "C", "chunk digests", 60));
  /* A dies mid-stream: B (and C behind it) fall back */
  bigjob_kill9(w[0]);
  w[0] = 0;
  assert_true(bigjob_await_cached(dir, "B", sha, 120));
  assert_true(bigjob_await_cached(dir, "C", sha, 120));
  assert_true(bigjob_log_line(dir, "B", "skipped", NULL, 0));
  bigjob_release(dir);
  assert_string_equal(e2e_wait(sf.srv.url, job, 180), "done"); /* A's task runs again elsewhere */
  bigjob_check_outputs(sf.srv.url, job, 3, sha);
  stop_workers(w, 3);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* ---- a hostile peer: its file server sends chunk 1 wrong ---- */

typedef struct hostile {
  int fd;
  unsigned port;
  pthread_t thread;
  size_t sent; /* bytes of the body written before the client hung up */
} hostile;

static void *hostile_main(void *ud) {
  hostile *h = ud;
  int c = accept(h->fd, NULL, NULL);
  if (c < 0)
    return NULL;
  char req[4096];
  bigjob_read_head(c, req, sizeof req);
  char head[200];
  int hl = snprintf(head, sizeof head,
                    "HTTP/1.1 200 OK\r\nContent-Length: %u\r\nConnection: close\r\n\r\n", BIG);
  send(c, head, (size_t)hl, MSG_NOSIGNAL);
  unsigned char *bad = malloc(BIG);
  memcpy(bad, data, BIG);
  bad[CHUNK + 100] ^= 0x5a; /* chunk 1 */
  for (size_t off = 0; off < BIG;) {
    ssize_t k = send(c, bad + off, BIG - off < 65536 ? BIG - off : 65536, MSG_NOSIGNAL);
    if (k <= 0)
      break;
    off += (size_t)k;
    h->sent = off;
    usleep(2000); /* about 32 MiB/s: the client has time to hang up */
  }
  free(bad);
  close(c);
  return NULL;
}

static void hostile_start(hostile *h) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  h->fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(h->fd >= 0);
  assert_int_equal(bind(h->fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(h->fd, 4), 0);
  assert_int_equal(getsockname(h->fd, (struct sockaddr *)&a, &len), 0);
  h->port = ntohs(a.sin_port);
  h->sent = 0;
  assert_int_equal(pthread_create(&h->thread, NULL, hostile_main, h), 0);
}

static void test_bad_chunk(void **state) {
  (void)state;
  char sha[65], peer[64], tok[65], body[200];
  hostile h;
  server_fixture sf;
  start_master(&sf);
  const char *dir = sf.dir;
  bigjob_write(dir, "cut", data, BIG, 1, sha);
  hostile_start(&h);
  /* the hostile volunteer, in W's cluster, says it holds the file */
  snprintf(peer, sizeof peer, "http://127.0.0.1:%u", h.port);
  json_t *b = json_pack("{s:s, s:s, s:[s], s:s}", "name", "evil", "cluster", "c-W", "apps", "sum",
                        "peer_url", peer), *r = NULL;
  assert_int_equal(harness_http_json(sf.srv.url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(b);
  json_decref(r);
  long long job = e2e_submit(sf.srv.url, dir);
  snprintf(body, sizeof body, "{\"have\": [\"%s\"]}", sha);
  assert_int_equal(harness_http(sf.srv.url, "POST", "/v1/heartbeat", tok, body, strlen(body), NULL,
                                NULL, NULL),
                   200);
  pid_t w[1] = {start_worker(sf.srv.url, dir, "W", NULL)};
  assert_true(bigjob_await_cached(dir, "W", sha, 120));
  pthread_join(h.thread, NULL);
  close(h.fd);
  /* the bad chunk ended the download there, the master was the fallback */
  assert_true(bigjob_log_line(dir, "W", "chunk 1 of 16 does not match its digest", NULL, 0));
  assert_true(bigjob_log_line(dir, "W", "a chunk did not match its digest", NULL, 0));
  fprintf(stderr, "the hostile peer sent %zu of %u bytes\n", h.sent, BIG);
  assert_true(harness_wait_metric(sf.srv.url, "cairn_peer_failures_total{reason=\"digest\"}", 1,
                                  30) == 0);
  bigjob_release(dir);
  assert_string_equal(e2e_wait(sf.srv.url, job, 120), "done");
  bigjob_check_outputs(sf.srv.url, job, 1, sha);
  stop_workers(w, 1);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* ---- who is named while receiving (HTTP only) ---- */

static void reg(const char *url, const char *name, int port, char tok[65]) {
  char cluster[16], peer[64];
  snprintf(cluster, sizeof cluster, "c-%s", name);
  snprintf(peer, sizeof peer, "http://127.0.0.1:%d", port);
  json_t *b = json_pack("{s:s, s:s, s:[s], s:s}", "name", name, "cluster", cluster, "apps", "sum",
                        "peer_url", peer), *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  snprintf(tok, 65, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(b);
  json_decref(r);
}

/* POST /v1/work with body; the first source of the input in src (or ""
 * on 204). */
static long work(const char *url, const char *tok, const char *body, char *src, size_t len) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/work", tok, body, body ? strlen(body) : 0, &r, NULL,
                         NULL);
  json_t *in = json_array_get(json_object_get(json_object_get(r, "task"), "inputs"), 0);
  snprintf(src, len, "%s", st == 200 ? json_string_value(json_object_get(in, "url")) : "");
  json_decref(r);
  return st;
}

static void named_while_receiving(int store_and_forward) {
  char sha[65], x[65], y[65], z[65], src[600];
  const char *extra[] = {"--broadcast-plan", "online",
                         store_and_forward ? "--store-and-forward" : NULL, NULL};
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, extra, 1), 0);
  const char *dir = sf.dir;
  bigjob_write(dir, "cut", data, BIG, 4, sha);
  (void)e2e_submit(sf.srv.url, dir);
  reg(sf.srv.url, "X", 1, x);
  reg(sf.srv.url, "Y", 2, y);
  reg(sf.srv.url, "Z", 3, z);
  /* X (it relays) gets the master's copy */
  assert_int_equal(work(sf.srv.url, x, "{\"chunks\": true}", src, sizeof src), 200);
  assert_string_equal(src + strlen(src) - 64, sha);
  /* Y (an older worker: no "chunks") is sent to X while X receives */
  long st = work(sf.srv.url, y, NULL, src, sizeof src);
  if (store_and_forward) {
    assert_int_equal(st, 204); /* the master is busy and nobody holds it */
  } else {
    assert_int_equal(st, 200);
    assert_true(strncmp(src, "http://127.0.0.1:1/v1/files/", 28) == 0);
    assert_non_null(strstr(src, "&relay=1"));
    assert_int_equal(harness_metric(sf.srv.url, "cairn_relay_sources_total "), 1);
  }
  /* Z: X sends one copy at a time, and Y, receiving, is no relay */
  assert_int_equal(work(sf.srv.url, z, NULL, src, sizeof src), 204);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static void test_named_while_receiving(void **state) {
  (void)state;
  named_while_receiving(0);
  named_while_receiving(1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_chain),
    cmocka_unit_test(test_relay_killed),
    cmocka_unit_test(test_bad_chunk),
    cmocka_unit_test(test_named_while_receiving),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
