/* buf.h — a growable byte buffer with a hard cap (every body has a limit). */
#ifndef CAIRN_BUF_H
#define CAIRN_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct cairn_buf {
  char *data;   /* always NUL-terminated when len > 0 or after any append */
  size_t len;
  size_t cap;   /* allocated bytes */
  size_t max;   /* hard cap on len */
} cairn_buf;

void cairn_buf_init(cairn_buf *b, size_t max);
/* Appends n bytes. Returns 0, or -1 if the cap would be exceeded or memory ran
 * out; on failure the buffer is left as it was. */
__attribute__((warn_unused_result))
int cairn_buf_append(cairn_buf *b, const void *p, size_t n);
/* Appends printf-style text (no NUL counted in len). Returns 0, or -1 when
 * the cap would be exceeded or memory ran out (the buffer is unchanged). */
__attribute__((warn_unused_result, format(printf, 2, 0)))
int cairn_buf_vprintf(cairn_buf *b, const char *fmt, va_list ap);
__attribute__((warn_unused_result, format(printf, 2, 3)))
int cairn_buf_printf(cairn_buf *b, const char *fmt, ...);
/* Frees the data; the buffer may be reused after cairn_buf_init. */
void cairn_buf_free(cairn_buf *b);
/* Hands the data to the caller (who frees it) and resets the buffer. */
char *cairn_buf_take(cairn_buf *b, size_t *len);

#endif
