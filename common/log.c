/* log.c — leveled logging through a handle's logger (default: stderr). */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const names[] = {"warn", "error", "warn", "info", "debug"};

void cairn__logger_init(cairn__logger *lg, cairn_log_level level, cairn_log_fn fn, void *userdata) {
  lg->level = level == CAIRN_LOG_DEFAULT ? CAIRN_LOG_WARN : level;
  lg->fn = fn;
  lg->userdata = userdata;
  lg->label = NULL;
}

const char *cairn__log_level_name(cairn_log_level l) {
  return l >= CAIRN_LOG_DEFAULT && l <= CAIRN_LOG_DEBUG ? names[l] : "?";
}

cairn_status cairn_log_level_parse(const char *name, cairn_log_level *out) {
  for (int i = CAIRN_LOG_ERROR; name && i <= CAIRN_LOG_DEBUG; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = (cairn_log_level)i;
      return CAIRN_OK;
    }
  return CAIRN_EINVAL;
}

int cairn__log_enabled(const cairn__logger *lg, cairn_log_level l) {
  return l <= (lg ? lg->level : CAIRN_LOG_WARN);
}

void cairn__log(const cairn__logger *lg, cairn_log_level l, const char *fmt, ...) {
  if (!cairn__log_enabled(lg, l))
    return;
  char line[1024];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02dZ %s: ",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                   tm.tm_min, tm.tm_sec, cairn__log_level_name(l));
  if (lg && lg->label && n > 0 && (size_t)n < sizeof line)
    n += snprintf(line + n, sizeof line - (size_t)n, "[%.200s] ", lg->label);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line)
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (lg && lg->fn)
    lg->fn(l, line, lg->userdata);
  else
    fprintf(stderr, "%s\n", line);
}
