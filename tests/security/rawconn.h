/* rawconn.h — raw TCP to a master on loopback for the security tests: an
 * attacker writes what it likes (half-sent headers, bodies without
 * Expect: 100-continue), from a chosen address of 127.0.0.0/8. Static
 * functions, included by the tests/security programs that need them. */
#ifndef CAIRN_TEST_RAWCONN_H
#define CAIRN_TEST_RAWCONN_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/harness.h"

/* A socket bound to local address from (127.x.y.z), connecting to
 * 127.0.0.1:port; nonblock: connect without waiting. -1 on failure. */
static __attribute__((unused)) int raw_connect(const char *from, int port, int nonblock) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in me = {.sin_family = AF_INET}, to = {.sin_family = AF_INET,
                                                         .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, from, &me.sin_addr);
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (bind(fd, (struct sockaddr *)&me, sizeof me) ||
      (connect(fd, (struct sockaddr *)&to, sizeof to) && errno != EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Sends len bytes within timeout seconds; returns the bytes sent (fewer
 * when the peer closed or stopped reading). */
static __attribute__((unused)) size_t raw_send(int fd, const void *p, size_t len, double timeout) {
  size_t sent = 0;
  double end = harness_now() + timeout;
  while (sent < len && harness_now() < end) {
    struct pollfd pf = {.fd = fd, .events = POLLOUT};
    if (poll(&pf, 1, 100) <= 0)
      continue;
    if (pf.revents & (POLLERR | POLLHUP))
      break;
    ssize_t w = send(fd, (const char *)p + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (w <= 0)
      break;
    sent += (size_t)w;
  }
  return sent;
}

/* Reads what arrives within timeout seconds (until the peer closes or a
 * whole response with its Content-Length is in) into buf (NUL-terminated);
 * returns the bytes read, or -1 when the peer reset the connection before
 * sending anything. */
static __attribute__((unused)) ssize_t raw_recv(int fd, char *buf, size_t cap, double timeout) {
  size_t got = 0;
  double end = harness_now() + timeout;
  while (got + 1 < cap && harness_now() < end) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 100) <= 0)
      continue;
    ssize_t r = recv(fd, buf + got, cap - 1 - got, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (r <= 0) {
      if (r < 0 && got == 0)
        return -1;
      break;
    }
    got += (size_t)r;
    buf[got] = '\0';
    const char *hdr_end = strstr(buf, "\r\n\r\n"), *cl = strcasestr(buf, "content-length:");
    if (hdr_end && cl && cl < hdr_end &&
        got >= (size_t)(hdr_end + 4 - buf) + strtoul(cl + 15, NULL, 10))
      break;
  }
  buf[got] = '\0';
  return (ssize_t)got;
}

/* The status of an HTTP response in buf; 0 when there is none. */
static __attribute__((unused)) int raw_status(const char *buf) {
  int st = 0;
  return sscanf(buf, "HTTP/1.%*d %d", &st) == 1 ? st : 0;
}

/* 1 when the peer has closed fd (or reset it), within timeout seconds. */
static __attribute__((unused)) int raw_closed(int fd, double timeout) {
  char b[4096];
  double end = harness_now() + timeout;
  while (harness_now() < end) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 200) <= 0)
      continue;
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
      return 1;
  }
  return 0;
}

/* A process's peak resident set (VmHWM) in KiB; -1 when unknown. */
static __attribute__((unused)) long raw_peak_rss_kib(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
      break;
  if (f)
    fclose(f);
  return kib;
}

#endif
