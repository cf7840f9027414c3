/* test_worker_peer_flood.c — slow clients cannot shut a cluster out of a
 * worker's peer server (the worker library's real server, on loopback).
 *
 * An attacker bound to 127.0.0.2 opens 260 connections that send half a
 * request header and then nothing (more than the server's 256 connections);
 * a peer on 127.0.0.1 must still download a file at once. The server must
 * also close a connection that trickles its header (from 127.0.0.3) by
 * its header deadline. The download
 * time under attack is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/grant.h"
#include "common/sha256.h"
#include "tests/support/harness.h"
#include "worker/fsutil.h"
#include "worker/peer.h"
#include "worker/peerstate.h"

#define KEY "4444444444444444444444444444444444444444444444444444444444444444"
#define ATTACKERS 260
#define FILE_SIZE (1024u * 1024u)

/* A connection from src (a 127.0.0.0/8 address) to 127.0.0.1:port, or -1. */
static int connect_from(const char *src, unsigned port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in from = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
  inet_pton(AF_INET, src, &from.sin_addr);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons((unsigned short)port);
  if (fd < 0 || bind(fd, (struct sockaddr *)&from, sizeof from) != 0 ||
      connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

/* Seconds until the server closes fd (reads EOF or an error), at most max. */
static double closed_after(int fd, double max) {
  double t0 = harness_now();
  char buf[256];
  while (harness_now() - t0 < max) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) > 0 && read(fd, buf, sizeof buf) <= 0)
      return harness_now() - t0;
  }
  return -1;
}

static void test_half_sent_connections(void **state) {
  (void)state;
  char root[4096], cache[4200], sha[65], url[64], path[512], *raw = NULL;
  cairn_error err = {0};
  cairn__peerstate ps;
  harness_tmpdir(root, sizeof root);
  snprintf(cache, sizeof cache, "%s/cache", root);
  assert_int_equal(cairn__mkdirs(cache, 0755, &err), CAIRN_OK);
  char *data = calloc(1, FILE_SIZE);
  assert_non_null(data);
  cairn__sha256_hex(data, FILE_SIZE, sha);
  char *file = cairn__path_join(cache, sha);
  assert_int_equal(cairn__write_file_atomic(file, data, FILE_SIZE, 0444, &err), CAIRN_OK);
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peerstate_set_key(&ps, KEY);
  cairn__peer *p = cairn__peer_start("127.0.0.1:0", cache, 4, &ps, NULL, &err);
  assert_non_null(p);
  unsigned port = cairn__peer_port(p);
  snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
  char grant[CAIRN_GRANT_MAX + 1];
  assert_int_equal(cairn__grant_make(KEY, sha, 9, (long long)time(NULL) + CAIRN_GRANT_SECONDS, grant),
                   0);
  snprintf(path, sizeof path, "/v1/files/%s?" CAIRN_GRANT_PARAM "=%s", sha, grant);

  int fds[ATTACKERS], opened = 0;
  for (int i = 0; i < ATTACKERS; i++) {
    fds[i] = connect_from("127.0.0.2", port);
    if (fds[i] >= 0) {
      opened++;
      ssize_t k = send(fds[i], "GET /v1/files/", 14, MSG_NOSIGNAL);
      (void)k;
    }
  }
  assert_true(opened > 0);
  usleep(300 * 1000);
  size_t len = 0;
  double t0 = harness_now();
  long st = harness_http(url, "GET", path, NULL, NULL, 0, NULL, &raw, &len);
  double took = harness_now() - t0;
  printf("%d half-sent connections from 127.0.0.2; download from 127.0.0.1: HTTP %ld, %zu bytes "
         "in %.3f s\n", opened, st, len, took);
  assert_int_equal(st, 200);
  assert_int_equal(len, FILE_SIZE);
  assert_memory_equal(raw, data, FILE_SIZE);
  assert_true(took < 5.0);
  free(raw);
  for (int i = 0; i < ATTACKERS; i++)
    if (fds[i] >= 0)
      close(fds[i]);

  /* A slow client (127.0.0.3): closed by the header deadline, whatever it trickles. */
  int fd = connect_from("127.0.0.3", port);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "GET /v1/", 8), 8);
  double closed = -1, t1 = harness_now();
  for (int i = 0; i < 30 && closed < 0; i++) {
    ssize_t k = send(fd, "x", 1, MSG_NOSIGNAL);  /* a byte every half second */
    (void)k;
    closed = closed_after(fd, 0.5);
  }
  closed = closed < 0 ? -1 : harness_now() - t1;
  printf("a client trickling its header was closed after %.1f s\n", closed);
  assert_true(closed > 0 && closed < 10.0);
  close(fd);

  cairn__peer_stop(p);
  cairn__peerstate_destroy(&ps);
  assert_int_equal(cairn__remove_tree(root, &err), CAIRN_OK);
  free(file);
  free(data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_half_sent_connections),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
