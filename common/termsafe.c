/* termsafe.c — escape control bytes for a terminal. */
#include "common/termsafe.h"

#include <string.h>

/* 1 for the Unicode bidirectional controls: U+061C (ALM), U+200E, U+200F
 * (LRM, RLM), U+202A-U+202E (embeddings and overrides), U+2066-U+2069
 * (isolates). They reorder what a terminal or a page shows around them. */
static int bidi_control(unsigned cp) {
  return cp == 0x61c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

size_t cairn__text_char(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  if (n == 0)
    return 0;
  unsigned c = s[0];
  if (c >= 0x20 && c < 0x7f)
    return 1;
  size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!len || len > n)
    return 0;
  unsigned cp = c & (0x7fu >> len);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = cp << 6 | (s[i] & 0x3fu);
  }
  static const unsigned min[5] = {0, 0, 0xa0, 0x800, 0x10000};  /* no C1, no overlong */
  if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || bidi_control(cp))
    return 0;
  return len;
}

int cairn__text_valid(const char *s, size_t n) {
  for (size_t i = 0, k; i < n; i += k)
    if (!(k = cairn__text_char(s + i, n - i)))
      return 0;
  return 1;
}

/* Length of the character at s (n bytes left) that is safe to show as is
 * (cairn__text_char, but a backslash, the escape's own mark, is not), or 0
 * when s[0] must be escaped. */
static size_t safe_char(const unsigned char *s, size_t n) {
  return s[0] == '\\' ? 0 : cairn__text_char((const char *)s, n);
}

/* Writes the escaped form of the character at s into e (at most 5 bytes
 * with NUL); returns how many bytes of s it stands for. */
static size_t escape_one(const unsigned char *s, size_t n, char e[5], size_t *elen) {
  static const char hex[] = "0123456789abcdef";
  size_t k = safe_char(s, n);
  if (k) {
    memcpy(e, s, k);
    *elen = k;
    return k;
  }
  if (s[0] == '\\') {
    memcpy(e, "\\\\", 2);
    *elen = 2;
    return 1;
  }
  e[0] = '\\';
  e[1] = 'x';
  e[2] = hex[s[0] >> 4];
  e[3] = hex[s[0] & 15];
  *elen = 4;
  return 1;
}

void cairn__termsafe_write(FILE *f, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  char e[5];
  size_t elen;
  for (size_t i = 0; i < n;) {
    i += escape_one(p + i, n - i, e, &elen);
    fwrite(e, 1, elen, f);
  }
}

const char *cairn__termsafe(const char *s, char *out, size_t cap) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t n = strlen((const char *)p), w = 0;
  char e[5];
  size_t elen;
  for (size_t i = 0; i < n;) {
    size_t used = escape_one(p + i, n - i, e, &elen);
    if (w + elen + 4 > cap && (i + used < n || w + elen + 1 > cap)) {
      memcpy(out + w, "...", 3);
      w += 3;
      break;
    }
    memcpy(out + w, e, elen);
    w += elen;
    i += used;
  }
  out[w] = '\0';
  return out;
}
