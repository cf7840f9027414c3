/* error.c — status strings and the caller-owned error struct. */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>

const char *cairn_version(void) { return CAIRN_VERSION_STRING; }

const char *cairn_strerror(cairn_status s) {
  switch (s) {
  case CAIRN_OK: return "ok";
  case CAIRN_EINVAL: return "invalid input";
  case CAIRN_EAUTH: return "authentication required";
  case CAIRN_EFORBIDDEN: return "forbidden";
  case CAIRN_ENOTFOUND: return "not found";
  case CAIRN_ECONFLICT: return "conflict";
  case CAIRN_ETOOBIG: return "too large";
  case CAIRN_EOVERFLOW: return "integer overflow";
  case CAIRN_ENOMEM: return "out of memory";
  case CAIRN_EIO: return "I/O error";
  case CAIRN_EINTERNAL: return "internal error";
  case CAIRN_ETIMEOUT: return "timed out";
  case CAIRN_EFAILED: return "the master has failed";
  case CAIRN_ERATE: return "too many requests";
  }
  return "unknown error";
}

cairn_status cairn__error_set(cairn_error *err, cairn_status s, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->status = s;
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
  }
  return s;
}

int cairn__status_http(cairn_status s) {
  switch (s) {
  case CAIRN_OK: return 200;
  case CAIRN_EINVAL: return 400;
  case CAIRN_EOVERFLOW: return 400;
  case CAIRN_EAUTH: return 401;
  case CAIRN_EFORBIDDEN: return 403;
  case CAIRN_ENOTFOUND: return 404;
  case CAIRN_ECONFLICT: return 409;
  case CAIRN_ETOOBIG: return 413;
  case CAIRN_ENOMEM: return 503;
  case CAIRN_EIO: return 503;
  case CAIRN_EINTERNAL: return 500;
  case CAIRN_ETIMEOUT: return 503;
  case CAIRN_EFAILED: return 503;
  case CAIRN_ERATE: return 429;
  }
  return 500;
}

const char *cairn__status_code(cairn_status s) {
  switch (s) {
  case CAIRN_OK: return "ok";
  case CAIRN_EINVAL: return "bad_request";
  case CAIRN_EOVERFLOW: return "overflow";
  case CAIRN_EAUTH: return "unauthorized";
  case CAIRN_EFORBIDDEN: return "forbidden";
  case CAIRN_ENOTFOUND: return "not_found";
  case CAIRN_ECONFLICT: return "conflict";
  case CAIRN_ETOOBIG: return "too_large";
  case CAIRN_ENOMEM: return "overloaded";
  case CAIRN_EIO: return "unavailable";
  case CAIRN_EINTERNAL: return "internal";
  case CAIRN_ETIMEOUT: return "timeout";
  case CAIRN_EFAILED: return "failed";
  case CAIRN_ERATE: return "rate_limited";
  }
  return "internal";
}
