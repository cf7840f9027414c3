/* util.c — the server's small helpers (util.h). */
#include "server/base/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t cairn__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec;
}

char *cairn__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

uint64_t cairn__hash_key(const char *hex) {
  uint64_t k = 0;
  for (int i = 0; i < 16 && hex[i]; i++) {
    char ch = hex[i];
    k = (k << 4) | (uint64_t)(ch <= '9' ? ch - '0' : ch - 'a' + 10);
  }
  return k ? k : 1;
}

uint64_t cairn__hash_app(const char *name) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)name; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  return h ? h : 1;
}
