/* base64.c — strict RFC 4648 base64 encoder and decoder. */
#include "common/base64.h"

#include <stdint.h>

static const char alphabet[] =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t cairn__base64_encoded_len(size_t n) {
  size_t groups = n / 3 + (n % 3 != 0);
  if (groups > SIZE_MAX / 4)
    return SIZE_MAX;
  return groups * 4;
}

size_t cairn__base64_encode(const void *src, size_t n, char *dst) {
  const unsigned char *s = src;
  size_t o = 0, i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
    dst[o++] = alphabet[v >> 18];
    dst[o++] = alphabet[(v >> 12) & 63];
    dst[o++] = alphabet[(v >> 6) & 63];
    dst[o++] = alphabet[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)s[i] << 16;
    dst[o++] = alphabet[v >> 18];
    dst[o++] = alphabet[(v >> 12) & 63];
    dst[o++] = '=';
    dst[o++] = '=';
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
    dst[o++] = alphabet[v >> 18];
    dst[o++] = alphabet[(v >> 12) & 63];
    dst[o++] = alphabet[(v >> 6) & 63];
    dst[o++] = '=';
  }
  dst[o] = '\0';
  return o;
}

size_t cairn__base64_decoded_max(size_t n) { return n / 4 * 3; }

/* Value of one alphabet character, or -1. */
static int value(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

int cairn__base64_decode(const char *src, size_t n, void *dst, size_t dstcap, size_t *outlen) {
  unsigned char *d = dst;
  size_t o = 0;
  if (n % 4 != 0)
    return -1;
  for (size_t i = 0; i < n; i += 4) {
    int last = i + 4 == n;
    int pad = 0;
    if (last && src[i + 3] == '=')
      pad = src[i + 2] == '=' ? 2 : 1;
    int v[4];
    for (int k = 0; k < 4 - pad; k++) {
      v[k] = value((unsigned char)src[i + k]);
      if (v[k] < 0)
        return -1;
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12;
    if (pad < 2)
      w |= (uint32_t)v[2] << 6;
    if (pad < 1)
      w |= (uint32_t)v[3];
    size_t k = 3 - (size_t)pad;
    if (o + k > dstcap)
      return -1;
    /* canonical form: the bits below the last encoded byte are zero */
    if ((pad == 2 && (w & 0xFFFF)) || (pad == 1 && (w & 0xFF)))
      return -1;
    d[o++] = (unsigned char)(w >> 16);
    if (k > 1)
      d[o++] = (unsigned char)(w >> 8);
    if (k > 2)
      d[o++] = (unsigned char)w;
  }
  *outlen = o;
  return 0;
}
