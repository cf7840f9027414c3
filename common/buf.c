/* buf.c — capped growable buffer. */
#include "common/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cairn__buf_init(cairn__buf *b, size_t max) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->max = max;
}

int cairn__buf_append(cairn__buf *b, const void *p, size_t n) {
  if (n > b->max - b->len)
    return -1;
  if (b->len + n + 1 > b->cap) {
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < b->len + n + 1)
      ncap *= 2;
    char *d = realloc(b->data, ncap);
    if (!d)
      return -1;
    b->data = d;
    b->cap = ncap;
  }
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int cairn__buf_vprintf(cairn__buf *b, const char *fmt, va_list ap) {
  char small[256];
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  int rc = -1;
  if (n >= 0 && (size_t)n < sizeof small)
    rc = cairn__buf_append(b, small, (size_t)n);
  else if (n >= 0) {
    char *big = malloc((size_t)n + 1);
    if (big) {
      vsnprintf(big, (size_t)n + 1, fmt, again);
      rc = cairn__buf_append(b, big, (size_t)n);
      free(big);
    }
  }
  va_end(again);
  return rc;
}

int cairn__buf_printf(cairn__buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = cairn__buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

void cairn__buf_free(cairn__buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

char *cairn__buf_take(cairn__buf *b, size_t *len) {
  char *d = b->data;
  if (len)
    *len = b->len;
  if (!d)
    d = calloc(1, 1);
  b->data = NULL;
  b->len = b->cap = 0;
  return d;
}
