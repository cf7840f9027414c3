/* termsafe.h — text from a master (or any peer) made safe for an
 * operator's terminal: no control character reaches it. Every byte that is
 * a control character (0x00-0x1f, 0x7f), a C1 control (U+0080-U+009F), or
 * not part of valid UTF-8 is written as \xNN (lower-case hex), and a
 * backslash as \\, so that the text shown is unambiguous. Valid UTF-8
 * above U+009F is kept as it is. Used by the cairn command (cli/). */
#ifndef CAIRN_TERMSAFE_H
#define CAIRN_TERMSAFE_H

#include <stddef.h>
#include <stdio.h>

/* Room for a NAME-sized string escaped (each byte at most 4 characters). */
#define CAIRN_TERMSAFE_NAME (4u * 256u + 4u)

/* Writes the first n bytes of s to f, escaped. */
void cairn_termsafe_write(FILE *f, const char *s, size_t n);

/* s (NULL: "") escaped into out (cap bytes, cap >= 4); a longer result is
 * cut after a whole character and ends with "...". Returns out. */
const char *cairn_termsafe(const char *s, char *out, size_t cap);

#endif
