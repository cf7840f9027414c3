/* termsafe.h — text from a master (or any peer) made safe for an
 * operator's terminal: no control character reaches it. Every byte that is
 * a control character (0x00-0x1f, 0x7f), a C1 control (U+0080-U+009F), part
 * of a Unicode bidirectional control (U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069), or not part of valid UTF-8 is written as
 * \xNN (lower-case hex), and a backslash as \\, so that the text shown is
 * unambiguous. Other valid UTF-8 above U+009F is kept as it is. Used by the
 * cairn command (cli/); the master refuses names that are not
 * cairn__text_valid() (server/api/admission.c), by the same definition. */
#ifndef CAIRN_TERMSAFE_H
#define CAIRN_TERMSAFE_H

#include <stddef.h>
#include <stdio.h>

/* Room for a NAME-sized string escaped (each byte at most 4 characters). */
#define CAIRN_TERMSAFE_NAME (4u * 256u + 4u)

/* Length (1 to 4) of the character at s (n bytes left) when it is valid
 * UTF-8 (shortest form, no surrogate, at most U+10FFFF) and neither a C0
 * control, DEL, a C1 control nor a bidirectional control (above); 0
 * otherwise (and when n is 0). Pure, O(1). */
size_t cairn__text_char(const char *s, size_t n);
/* 1 when the n bytes of s are all such characters (n = 0: 1). Pure, O(n). */
int cairn__text_valid(const char *s, size_t n);

/* Writes the first n bytes of s to f, escaped. */
void cairn__termsafe_write(FILE *f, const char *s, size_t n);

/* s (NULL: "") escaped into out (cap bytes, cap >= 4); a longer result is
 * cut after a whole character and ends with "...". Returns out. */
const char *cairn__termsafe(const char *s, char *out, size_t cap);

#endif
