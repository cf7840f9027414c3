/* error.h — setting a caller-owned error, and what each status means on the
 * wire. The status enum and the error struct are public (cairn/cairn.h). */
#ifndef CAIRN_ERROR_H
#define CAIRN_ERROR_H

#include <stddef.h>

#include "cairn/cairn.h" /* cairn_status, cairn_error, cairn_strerror */

/* Sets err (if not NULL) and returns s. printf-style message. */
cairn_status cairn__error_set(cairn_error *err, cairn_status s, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* HTTP status code that fits s. */
int cairn__status_http(cairn_status s);
/* Short machine-readable code for s ("bad_request", "conflict", ...). */
const char *cairn__status_code(cairn_status s);

#endif
