/* cairn/cairn.h — what the master and worker APIs share: status codes, a
 * caller-owned error, and logging through a per-handle callback.
 *
 * Every call that can fail returns a cairn_status (or NULL for a
 * constructor) and, when given a cairn_error, fills it with the same status
 * and one line of text naming what failed and why:
 *
 *   cairn_error err;
 *   if (cairn_master_start(m, &err) != CAIRN_OK)
 *     fprintf(stderr, "%s (%s)\n", err.text, cairn_strerror(err.status));
 *
 * Logging: each handle (a master, a worker) logs through the callback and at
 * the level of its own configuration; two handles in one process never share
 * a level or a callback. With no callback, lines go to standard error.
 *
 * The library never exits the host process: a failure it cannot recover
 * from is returned as a status.
 *
 * This header needs only the C library.
 */
#ifndef CAIRN_CAIRN_H
#define CAIRN_CAIRN_H

#ifdef __cplusplus
extern "C" {
#endif

/* The version of these headers (semantic versioning: a MAJOR change breaks
 * programs written against an earlier one; CMakeLists.txt reads it here).
 * cairn_version() is the version of the library a program runs with. */
#define CAIRN_VERSION_MAJOR 0
#define CAIRN_VERSION_MINOR 1
#define CAIRN_VERSION_PATCH 0
#define CAIRN_VERSION_STRING "0.1.0"
/* CAIRN_VERSION_MAJOR * 10000 + MINOR * 100 + PATCH, for #if */
#define CAIRN_VERSION_NUMBER \
  (CAIRN_VERSION_MAJOR * 10000 + CAIRN_VERSION_MINOR * 100 + CAIRN_VERSION_PATCH)

/* "MAJOR.MINOR.PATCH" of the library linked (static storage). */
const char *cairn_version(void);

/* Compiler attributes of the public declarations, one macro each; empty
 * for a compiler that is neither GCC nor Clang (nor claims to be).
 * CAIRN_PRINTF(f, a): parameter f is a printf format whose arguments
 * start at parameter a (1-based), checked by -Wformat. */
#if defined(__GNUC__) || defined(__clang__)
#define CAIRN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CAIRN_PRINTF(f, a)
#endif

typedef enum cairn_status {
  CAIRN_OK = 0,
  CAIRN_EINVAL,      /* bad input: malformed, unknown field, cycle, ... (HTTP 400) */
  CAIRN_EAUTH,       /* missing or wrong credentials (401) */
  CAIRN_EFORBIDDEN,  /* authenticated but not allowed (403) */
  CAIRN_ENOTFOUND,   /* no such object (404) */
  CAIRN_ECONFLICT,   /* state conflict, e.g. a lease that is no longer yours (409) */
  CAIRN_ETOOBIG,     /* over a size cap (413) */
  CAIRN_EOVERFLOW,   /* integer overflow of an index type (400) */
  CAIRN_ENOMEM,      /* out of memory (503) */
  CAIRN_EIO,         /* store, file or network failure (503) */
  CAIRN_EINTERNAL,   /* a bug: an invariant does not hold (500) */
  CAIRN_ETIMEOUT,    /* a wait ran out of time */
  CAIRN_EFAILED,     /* the master has failed (its store refused a write): it
                        acknowledges nothing more; restart it to recover (503) */
  CAIRN_ERATE        /* too many requests from one client: retry later (429) */
} cairn_status;

/* A caller-owned error: the status and one line naming what, where and why. */
typedef struct cairn_error {
  cairn_status status;
  char text[512];
} cairn_error;

/* A short description of s ("invalid input", "not found", ...). Static. */
const char *cairn_strerror(cairn_status s);

typedef enum cairn_log_level {
  CAIRN_LOG_DEFAULT = 0, /* in a configuration: warn */
  CAIRN_LOG_ERROR,
  CAIRN_LOG_WARN,
  CAIRN_LOG_INFO,
  CAIRN_LOG_DEBUG
} cairn_log_level;

/* Receives one log line (no trailing newline) of level. Called from any of
 * the handle's threads, possibly from several at once: it must be
 * thread-safe. line is valid only during the call. */
typedef void (*cairn_log_fn)(cairn_log_level level, const char *line, void *userdata);

/* Parses "error", "warn", "info" or "debug". CAIRN_EINVAL for anything else. */
cairn_status cairn_log_level_parse(const char *name, cairn_log_level *out);

#ifdef __cplusplus
}
#endif
#endif
