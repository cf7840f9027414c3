/* log.h — leveled logging through a handle's logger, one line per event.
 *
 * A cairn__logger belongs to one handle (a master, a worker); its modules keep
 * a pointer to it and log through the macros below. A NULL logger writes to
 * standard error at warn level (tools without a handle). A logger is set up
 * before the handle's threads start and never changes afterwards, so reading
 * it needs no lock.
 */
#ifndef CAIRN_LOG_H
#define CAIRN_LOG_H

#include "cairn/cairn.h" /* cairn_log_level, cairn_log_fn */

typedef struct cairn__logger {
  cairn_log_level level; /* lines above it are dropped; never CAIRN_LOG_DEFAULT */
  cairn_log_fn fn;       /* NULL: standard error */
  void *userdata;
  const char *label;     /* borrowed; set: each line says "[label] " after its level
                            (a worker's project, docs/worker.md); NULL: none */
} cairn__logger;

/* A logger at level (CAIRN_LOG_DEFAULT: warn) writing through fn (NULL:
 * standard error), without a label. */
void cairn__logger_init(cairn__logger *lg, cairn_log_level level, cairn_log_fn fn, void *userdata);
/* Non-zero when a line of level l would be written. */
int cairn__log_enabled(const cairn__logger *lg, cairn_log_level l);
void cairn__log(const cairn__logger *lg, cairn_log_level l, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* "error", "warn", "info" or "debug". */
const char *cairn__log_level_name(cairn_log_level l);

#define CAIRN_ERR(lg, ...) cairn__log(lg, CAIRN_LOG_ERROR, __VA_ARGS__)
#define CAIRN_WARN(lg, ...) cairn__log(lg, CAIRN_LOG_WARN, __VA_ARGS__)
#define CAIRN_INFO(lg, ...) cairn__log(lg, CAIRN_LOG_INFO, __VA_ARGS__)
#define CAIRN_DEBUG(lg, ...) cairn__log(lg, CAIRN_LOG_DEBUG, __VA_ARGS__)

#endif
