/* buf.h — a growable byte buffer with a hard cap (every body has a limit). */
#ifndef CAIRN_BUF_H
#define CAIRN_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct cairn__buf {
  char *data;   /* always NUL-terminated when len > 0 or after any append */
  size_t len;
  size_t cap;   /* allocated bytes */
  size_t max;   /* hard cap on len */
} cairn__buf;

void cairn__buf_init(cairn__buf *b, size_t max);
/* Appends n bytes. Returns 0, or -1 if the cap would be exceeded or memory ran
 * out; on failure the buffer is left as it was. */
__attribute__((warn_unused_result))
int cairn__buf_append(cairn__buf *b, const void *p, size_t n);
/* Appends printf-style text (no NUL counted in len). Returns 0, or -1 when
 * the cap would be exceeded or memory ran out (the buffer is unchanged). */
__attribute__((warn_unused_result, format(printf, 2, 0)))
int cairn__buf_vprintf(cairn__buf *b, const char *fmt, va_list ap);
__attribute__((warn_unused_result, format(printf, 2, 3)))
int cairn__buf_printf(cairn__buf *b, const char *fmt, ...);
/* Frees the data; the buffer may be reused after cairn__buf_init. */
void cairn__buf_free(cairn__buf *b);
/* Hands the data to the caller (who frees it) and resets the buffer. */
char *cairn__buf_take(cairn__buf *b, size_t *len);

#endif
