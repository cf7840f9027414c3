/* rawhttp.c — one HTTP/1.1 request on a plain socket (rawhttp.h). */
#include "tests/support/rawhttp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

long raw_http(int port, const char *method, const char *path, const char *headers,
              const char *body, raw_answer *a) {
  memset(a, 0, sizeof *a);
  size_t blen = body ? strlen(body) : 0;
  size_t cap = strlen(path) + (headers ? strlen(headers) : 0) + blen + 256;
  char *req = malloc(cap);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (!req || fd < 0) {
    free(req);
    if (fd >= 0)
      close(fd);
    return 0;
  }
  int n = snprintf(req, cap,
                   "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s"
                   "Content-Length: %zu\r\n\r\n%s",
                   method, path, headers ? headers : "", blen, body ? body : "");
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct timeval tv = {.tv_sec = 60};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  size_t got = 0, room = 65536;
  char *buf = malloc(room + 1);
  if (buf && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
      write(fd, req, (size_t)n) == n) {
    ssize_t r;
    while ((r = read(fd, buf + got, room - got)) > 0)
      if ((got += (size_t)r) == room) {
        char *nb = realloc(buf, 2 * room + 1);
        if (!nb)
          break;
        buf = nb;
        room *= 2;
      }
  }
  close(fd);
  free(req);
  if (!buf)
    return 0;
  buf[got] = '\0';
  char *end = strstr(buf, "\r\n\r\n");
  if (strncmp(buf, "HTTP/1.1 ", 9) != 0 || !end) {
    free(buf);
    return 0;
  }
  *end = '\0';
  a->status = strtol(buf + 9, NULL, 10);
  a->head = buf;
  a->len = got - (size_t)(end + 4 - buf);
  a->body = malloc(a->len + 1);
  if (a->body) {
    memcpy(a->body, end + 4, a->len);
    a->body[a->len] = '\0';
  }
  return a->status;
}

const char *raw_header(const raw_answer *a, const char *name, char *out, size_t cap) {
  size_t n = strlen(name);
  for (const char *p = a->head ? strstr(a->head, "\r\n") : NULL; p; p = strstr(p + 2, "\r\n")) {
    const char *h = p + 2;
    if (strncasecmp(h, name, n) == 0 && h[n] == ':') {
      h += n + 1;
      while (*h == ' ')
        h++;
      size_t len = strcspn(h, "\r");
      snprintf(out, cap, "%.*s", (int)len, h);
      return out;
    }
  }
  return NULL;
}

json_t *raw_json(const raw_answer *a) {
  return a->body ? json_loadb(a->body, a->len, 0, NULL) : NULL;
}

void raw_free(raw_answer *a) {
  free(a->head);
  free(a->body);
  memset(a, 0, sizeof *a);
}
