/* error.h — one status enum for every call that can fail, plus a line of text. */
#ifndef CAIRN_ERROR_H
#define CAIRN_ERROR_H

#include <stddef.h>

typedef enum cairn_status {
  CAIRN_OK = 0,
  CAIRN_EINVAL,     /* bad input: malformed, unknown field, cycle, ... (HTTP 400) */
  CAIRN_EAUTH,      /* missing or wrong credentials (401) */
  CAIRN_EFORBIDDEN, /* authenticated but not allowed (403) */
  CAIRN_ENOTFOUND,  /* no such object (404) */
  CAIRN_ECONFLICT,  /* state conflict, e.g. a lease that is no longer yours (409) */
  CAIRN_ETOOBIG,    /* over a size cap (413) */
  CAIRN_EOVERFLOW,  /* integer overflow of an index type */
  CAIRN_ENOMEM,
  CAIRN_EIO,        /* store, file or network failure (500/503) */
  CAIRN_EINTERNAL
} cairn_status;

/* A caller-owned error: the status and one line naming what, where and why. */
typedef struct cairn_error {
  cairn_status status;
  char text[512];
} cairn_error;

const char *cairn_strerror(cairn_status s);

/* Sets err (if not NULL) and returns s. printf-style message. */
cairn_status cairn_error_set(cairn_error *err, cairn_status s, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* HTTP status code that fits s. */
int cairn_status_http(cairn_status s);
/* Short machine-readable code for s ("bad_request", "conflict", ...). */
const char *cairn_status_code(cairn_status s);

#endif
