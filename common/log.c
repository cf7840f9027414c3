/* log.c — leveled logging to stderr. */
#include "common/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Process-wide, and set by whoever creates a master or a worker while the
 * threads of others may be logging: an atomic (relaxed: it orders nothing). */
static atomic_int g_level = CAIRN_LOG_WARN;

void cairn_log_set_level(cairn_log_level l) {
  atomic_store_explicit(&g_level, (int)l, memory_order_relaxed);
}

int cairn_log_parse_level(const char *s, cairn_log_level *out) {
  static const char *names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (cairn_log_level)i;
      return 0;
    }
  return -1;
}

void cairn_log(cairn_log_level l, const char *fmt, ...) {
  static const char *tags[] = {"error", "warn", "info", "debug"};
  if ((int)l > atomic_load_explicit(&g_level, memory_order_relaxed))
    return;
  char line[1024];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02dZ %s: ",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                   tm.tm_min, tm.tm_sec, tags[l]);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line)
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", line);
}
