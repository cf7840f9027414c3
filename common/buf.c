/* buf.c — capped growable buffer. */
#include "common/buf.h"

#include <stdlib.h>
#include <string.h>

void cairn_buf_init(cairn_buf *b, size_t max) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->max = max;
}

int cairn_buf_append(cairn_buf *b, const void *p, size_t n) {
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

void cairn_buf_free(cairn_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

char *cairn_buf_take(cairn_buf *b, size_t *len) {
  char *d = b->data;
  if (len)
    *len = b->len;
  if (!d)
    d = calloc(1, 1);
  b->data = NULL;
  b->len = b->cap = 0;
  return d;
}
